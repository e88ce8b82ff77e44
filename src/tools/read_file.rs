//! `read_file`: a text file of the workspace, one page of lines at a time.
//!
//! A page is `limit` lines from `offset` (1-based) but never more than fits in the output
//! budget; when more remains the output ends with the exact call that continues. Binary files
//! and files too large to page through are named as such instead of dumped. The file is opened
//! through `confined` (beneath the root, no symlinks, regular files only, size checked first).

use serde_json::{json, Value};

use super::args;
use super::confined::Refusal;
use super::path::{open_root, Access};
use super::{Tool, ToolContext, ToolError, ToolSpec};
use crate::protocol::tool::READ_FILE;

/// Lines shown when no `limit` is given.
pub const DEFAULT_LIMIT: usize = 250;
/// Files larger than this are not read (search or a command can still look inside).
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;
/// Longest single line shown; the rest of it is elided.
const MAX_LINE_CHARS: usize = 2000;
/// Bytes of the output kept for the header and the continuation hint.
const HINT_ROOM: usize = 256;

#[derive(Debug, Clone, Copy, Default)]
pub struct ReadFile;

impl Tool for ReadFile {
    fn writes(&self, _arguments: &Value, _root: &std::path::Path) -> super::Writes {
        super::Writes::Nothing
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: READ_FILE.into(),
            description: format!(
                "Read a text file of the workspace. Returns up to `limit` lines (default {DEFAULT_LIMIT}) starting at line `offset` (1-based, default 1); when more remains, the output says which offset to read next."
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "file path relative to the workspace root"},
                    "offset": {"type": "integer", "minimum": 1, "description": "first line to show, 1-based"},
                    "limit": {"type": "integer", "minimum": 1, "description": "how many lines to show"}
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        }
    }

    fn run(&self, arguments: &Value, ctx: &ToolContext<'_>) -> Result<String, ToolError> {
        let offset = args::positive(arguments, "offset", 1)?;
        let limit = args::positive(arguments, "limit", DEFAULT_LIMIT)?;
        let target = args::path(arguments, ctx.root, Access::Read)?;
        let bytes = open_root(ctx.root)?
            .read(&target.path, MAX_FILE_BYTES)
            .map_err(|e| refused(&target.rel, &e))?;
        let budget = ctx.policy.output_cap.saturating_sub(HINT_ROOM).max(512);
        page(&target.rel, &bytes, offset, limit, budget)
    }
}

/// The child's sentence for a file that `read_file` (or `edit_file`) cannot read.
pub(crate) fn refused(rel: &str, refusal: &Refusal) -> ToolError {
    match refusal {
        Refusal::NotFound => ToolError::new(format!(
            "cannot read '{rel}': it does not exist; use list_dir to see what exists"
        )),
        Refusal::Directory => ToolError::new(format!(
            "'{rel}' is a directory; use list_dir to see its contents"
        )),
        Refusal::TooLarge { size, limit } => ToolError::new(format!(
            "'{rel}' is too large to read ({size} bytes, the limit is {limit}); use search, or run_command with head/tail/grep"
        )),
        other => other.about(rel),
    }
}

/// Whether `bytes` look like binary data rather than text.
pub fn is_binary(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(8192)];
    head.contains(&0) || std::str::from_utf8(bytes).is_err()
}

/// One page of `bytes` as text, with a header and a continuation hint.
fn page(
    rel: &str,
    bytes: &[u8],
    offset: usize,
    limit: usize,
    budget: usize,
) -> Result<String, ToolError> {
    if bytes.is_empty() {
        return Ok(format!("{rel}: empty file (0 bytes)"));
    }
    if is_binary(bytes) {
        return Err(ToolError::new(format!(
            "'{rel}' is a binary file ({} bytes); it cannot be shown as text",
            bytes.len()
        )));
    }
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().collect();
    let total = lines.len();
    if offset > total {
        return Err(ToolError::new(format!(
            "offset {offset} is past the end of '{rel}', which has {total} line(s)"
        )));
    }
    let mut body = String::new();
    let mut last = offset - 1;
    for line in lines.iter().skip(offset - 1).take(limit) {
        let shown = shorten(line);
        if !body.is_empty() && body.len() + shown.len() + 1 > budget {
            break;
        }
        body.push_str(&shown);
        body.push('\n');
        last += 1;
    }
    let mut out = format!("{rel} (lines {offset}-{last} of {total}):\n{body}");
    if last < total {
        out.push_str(&format!(
            "[{} more line(s); continue with read_file path=\"{rel}\" offset={}]",
            total - last,
            last + 1
        ));
    }
    Ok(out)
}

fn shorten(line: &str) -> String {
    match line.char_indices().nth(MAX_LINE_CHARS) {
        Some((cut, _)) => format!(
            "{}[… line cut, {} more chars]",
            &line[..cut],
            line[cut..].chars().count()
        ),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(n: usize) -> Vec<u8> {
        (1..=n)
            .map(|i| format!("line {i}\n"))
            .collect::<String>()
            .into_bytes()
    }

    #[test]
    fn pages_with_a_continuation_hint() {
        let out = page("a.txt", &numbered(10), 3, 4, 10_000).unwrap();
        assert!(
            out.starts_with("a.txt (lines 3-6 of 10):\nline 3\n"),
            "{out}"
        );
        assert!(out.contains("line 6\n") && !out.contains("line 7"));
        assert!(
            out.contains("continue with read_file path=\"a.txt\" offset=7"),
            "{out}"
        );
        let end = page("a.txt", &numbered(10), 7, 100, 10_000).unwrap();
        assert!(
            end.contains("line 10") && !end.contains("continue"),
            "{end}"
        );
    }

    #[test]
    fn byte_budget_shortens_the_page() {
        let out = page("a.txt", &numbered(1000), 1, 1000, 100).unwrap();
        assert!(out.contains("continue with read_file"), "{out}");
        assert!(out.len() < 400);
    }

    #[test]
    fn binary_empty_and_past_the_end() {
        let err = page("b.bin", b"\x7fELF\0\0\x01", 1, 10, 1000).unwrap_err();
        assert!(err.0.contains("binary"), "{err}");
        assert!(page("e", b"", 1, 10, 1000).unwrap().contains("empty file"));
        let err = page("a.txt", &numbered(3), 9, 10, 1000).unwrap_err();
        assert!(err.0.contains("has 3 line(s)"), "{err}");
    }

    #[test]
    fn very_long_lines_are_cut() {
        let long = "x".repeat(MAX_LINE_CHARS + 50);
        let out = page("l", long.as_bytes(), 1, 10, 100_000).unwrap();
        assert!(out.contains("line cut, 50 more chars"), "{out}");
    }
}
