//! Word wrapping by display width, shared by every pane that wraps text.
//!
//! Wrapping is ours rather than `Paragraph`'s so that update can count rows (for scroll
//! clamps) with exactly the algorithm render uses. A row never drops text: a space that does
//! not fit hangs at the end of its row (clipped when drawn), a word longer than the width is
//! cut, and the rows of a line always concatenate back to the line.

use std::ops::Range;

use ratatui::text::Span;

/// The display width of one character (0 for combining marks, 2 for wide ones).
pub fn char_width(c: char) -> usize {
    let mut buf = [0u8; 4];
    Span::raw(&*c.encode_utf8(&mut buf)).width()
}

/// The display width of a string.
pub fn str_width(s: &str) -> usize {
    Span::raw(s).width()
}

/// Calls `row` with the byte range of each wrapped row of `text` at `width` columns.
/// Empty text is one empty row.
pub fn for_each_row(text: &str, width: usize, mut row: impl FnMut(Range<usize>)) {
    let width = width.max(1);
    let mut start = 0;
    let mut col = 0;
    // Byte index just after the last space of the current row, and the column there.
    let mut last_break: Option<(usize, usize)> = None;
    for (i, c) in text.char_indices() {
        let w = char_width(c);
        if col + w > width && col > 0 {
            if c == ' ' {
                // Hang the space at the end of this row.
                let end = i + c.len_utf8();
                row(start..end);
                start = end;
                col = 0;
                last_break = None;
                continue;
            }
            match last_break {
                Some((at, at_col)) if at > start => {
                    row(start..at);
                    start = at;
                    col -= at_col;
                    last_break = None;
                    if col + w > width && col > 0 {
                        row(start..i);
                        start = i;
                        col = 0;
                    }
                }
                _ => {
                    row(start..i);
                    start = i;
                    col = 0;
                }
            }
        }
        col += w;
        if c == ' ' {
            last_break = Some((i + c.len_utf8(), col));
        }
    }
    if start < text.len() || start == 0 {
        row(start..text.len());
    }
}

/// The wrapped rows of `text`.
pub fn rows(text: &str, width: usize) -> Vec<&str> {
    let mut out = Vec::new();
    for_each_row(text, width, |r| out.push(&text[r]));
    out
}

/// How many rows `text` wraps to.
pub fn row_count(text: &str, width: usize) -> usize {
    let mut n = 0;
    for_each_row(text, width, |_| n += 1);
    n
}

/// Wraps multi-line text (split on `\n`) into rows.
pub fn rows_multiline(text: &str, width: usize) -> Vec<&str> {
    text.split('\n')
        .flat_map(|line| rows(line, width))
        .collect()
}

/// `text` cut to at most `width` columns, with `…` when something was cut.
pub fn truncate(text: &str, width: usize) -> String {
    if str_width(text) <= width {
        return text.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut col = 0;
    for c in text.chars() {
        let w = char_width(c);
        if col + w > width - 1 {
            break;
        }
        out.push(c);
        col += w;
    }
    out.push('…');
    out
}

pub use crate::text::{push_sanitized, sanitize};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_concatenate_back_to_the_text() {
        let text = "the quick brown fox jumps over the lazy dog, then supercalifragilistic words";
        for width in 1..40 {
            let rows = rows(text, width);
            assert_eq!(rows.concat(), text, "width {width}");
            for r in &rows {
                assert!(
                    str_width(r.trim_end_matches(' ')) <= width,
                    "{r:?} at {width}"
                );
            }
            assert_eq!(rows.len(), row_count(text, width));
        }
    }

    #[test]
    fn wraps_at_spaces() {
        assert_eq!(rows("hello big world", 10), vec!["hello big ", "world"]);
        assert_eq!(rows("hello big world", 8), vec!["hello ", "big ", "world"]);
        assert_eq!(rows("abcdefghij", 4), vec!["abcd", "efgh", "ij"]);
        assert_eq!(rows("", 4), vec![""]);
        assert_eq!(rows("ab  ", 2), vec!["ab ", " "]);
    }

    #[test]
    fn wide_characters_count_twice() {
        assert_eq!(
            rows("日本語テキスト", 4),
            vec!["日本", "語テ", "キス", "ト"]
        );
    }

    #[test]
    fn sanitize_removes_terminal_controls() {
        assert_eq!(sanitize("a\x1b[2Jb\r\n\tc"), "a\u{fffd}[2Jb\n    c");
    }

    #[test]
    fn truncate_marks_the_cut() {
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abc", 4), "abc");
    }
}
