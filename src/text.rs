//! Small text and hash helpers every layer uses: SHA-256 as lower-case hex, cutting a
//! string at a byte bound without splitting a character, a count with its noun, JSON spaced the way Python's
//! `json.dumps` writes it (chat templates and the models trained on them), and the one
//! sanitizer for text that came from the worker or the repository on its way to a terminal.
//!
//! A leaf: std, `sha2` and `serde_json` only, so any module may import it.

use std::io::{self, Read, Write};

use serde::Serialize;
use sha2::{Digest, Sha256};

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lower-case hex SHA-256 of everything `reader` yields, read in 1 MiB pieces.
pub fn sha256_hex_reader(mut reader: impl Read) -> io::Result<String> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The longest prefix of `text` of at most `max_bytes` bytes that ends on a char boundary.
pub fn cut_at_char_boundary(text: &str, max_bytes: usize) -> &str {
    if text.len() <= max_bytes {
        return text;
    }
    let mut cut = max_bytes;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    &text[..cut]
}

/// At most `max` characters of `text`, marked with `…` when cut.
pub fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// `n` and the noun that agrees with it: "1 file", "3 files", "0 files".
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The longest suffix of `text` of at most `max_bytes` bytes that starts on a char boundary.
pub fn tail_at_char_boundary(text: &str, max_bytes: usize) -> &str {
    if text.len() <= max_bytes {
        return text;
    }
    let mut cut = text.len() - max_bytes;
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    &text[cut..]
}

/// `value` as Python's `json.dumps` writes it: `", "` and `": "` separators, no newlines,
/// keys in the value's own order, non-ASCII kept as it is.
pub fn python_json<T: Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    let mut out = Vec::new();
    value.serialize(&mut serde_json::Serializer::with_formatter(
        &mut out, PythonJson,
    ))?;
    // serde_json writes only valid UTF-8.
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Python's `json.dumps` separators, for [`python_json`].
struct PythonJson;

impl serde_json::ser::Formatter for PythonJson {
    fn begin_array_value<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.begin_array_value(writer, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        writer.write_all(b": ")
    }
}

/// Makes text from the worker or the repository (file names, reports, command output, error
/// messages) safe to put on a terminal: every C0 and C1 control (ESC, CSI, BEL, DEL, ...),
/// the bidirectional overrides and isolates that reorder what is shown, and the Unicode line
/// and paragraph separators become U+FFFD; `\n` stays, a tab becomes four spaces, `\r`
/// disappears. Every terminal sink (the TUI, `show`, `runs`, stderr) goes through it or
/// [`sanitize_line`].
pub fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        push_sanitized(&mut out, c);
    }
    out
}

/// [`sanitize`] for text that must stay on one line (a file name, a stderr line): a newline
/// becomes `↵`, a tab one space.
pub fn sanitize_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push('↵'),
            '\t' => out.push(' '),
            c => push_sanitized(&mut out, c),
        }
    }
    out
}

/// Appends one character the way [`sanitize`] would.
pub fn push_sanitized(out: &mut String, c: char) {
    match c {
        '\n' => out.push('\n'),
        '\t' => out.push_str("    "),
        '\r' => {}
        c if is_unsafe_on_a_terminal(c) => out.push('\u{fffd}'),
        c => out.push(c),
    }
}

/// Controls (C0, DEL, C1), bidi marks, embeddings, overrides and isolates, and the line and
/// paragraph separators.
pub fn is_unsafe_on_a_terminal(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                | '\u{2028}'
                | '\u{2029}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_known_inputs() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            sha256_hex_reader(&b"abc"[..]).ok().as_deref(),
            Some(sha256_hex(b"abc").as_str())
        );
    }

    #[test]
    fn python_json_spacing() {
        let value = serde_json::json!({"a": [1, "x"], "b": {"c": null}, "d": "ü"});
        assert_eq!(
            python_json(&value).ok().as_deref(),
            Some(r#"{"a": [1, "x"], "b": {"c": null}, "d": "ü"}"#)
        );
    }

    #[test]
    fn sanitize_leaves_no_control_bidi_or_separator() {
        let mut hostile: String = (0u32..0x20)
            .chain(0x7f..0xa0)
            .filter_map(char::from_u32)
            .collect();
        hostile.push_str("\u{1b}]52;c;aGk=\u{7}\u{1b}[2J\u{9b}31m\u{202e}\u{2066}\u{200f}\u{2028}\u{2029}\u{061c}ok");
        for clean in [sanitize(&hostile), sanitize_line(&hostile)] {
            assert!(clean.ends_with("ok"), "{clean:?}");
            for c in clean.chars() {
                assert!(
                    c == '\n' || c == ' ' || !is_unsafe_on_a_terminal(c),
                    "{c:?} in {clean:?}"
                );
            }
        }
        assert!(!sanitize_line(&hostile).contains('\n'));
        assert_eq!(sanitize("a\x1b[2Jb\r\n\tc"), "a\u{fffd}[2Jb\n    c");
        assert_eq!(sanitize_line("a\nb\tc"), "a↵b c");
    }

    #[test]
    fn cuts_never_split_a_character() {
        assert_eq!(cut_at_char_boundary("aü", 2), "a");
        assert_eq!(cut_at_char_boundary("aü", 3), "aü");
        assert_eq!(cut_at_char_boundary("abc", 0), "");
        assert_eq!(tail_at_char_boundary("üa", 2), "a");
        assert_eq!(tail_at_char_boundary("üa", 3), "üa");
        assert_eq!(tail_at_char_boundary("abc", 1), "c");
    }
}
