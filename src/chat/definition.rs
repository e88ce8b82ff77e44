//! A definition written out in prose: a sentence that announces one function (`Here's the
//! corrected `median` function:`), then a code block holding that one definition whole. The
//! 1.5B answers this way when it knows the fix but not the file's other lines: in seed 1's
//! 06 it wrote the fixed `median` so eight times in three rounds, then called something else,
//! and the fix was never made. It is read as a call of the internal
//! [`REPLACE_DEFINITION`](crate::protocol::tool::REPLACE_DEFINITION) tool, which finds the one
//! file that defines that name and puts the block in place of the definition there.
//!
//! Reading is strict: the sentence ends in a colon and does not say the block is what the
//! code holds now; the block closes and holds exactly one definition (its first line a
//! `def`, `class`, `fn` or `function` line, every other line inside it), whose name the
//! sentence gives in backticks or which it calls a function, method or class. Pure
//! functions, no I/O.

use super::listing::{closes, NOT_A_WRITE};
use crate::tools::blocks::{defined_name, indent};

/// A definition found in a turn's prose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Definition {
    /// The name it defines (`median`).
    pub(crate) name: String,
    /// The block's text (with a final newline).
    pub(crate) content: String,
    /// Where the block starts (its opening fence) and ends (past its closing fence).
    pub(crate) from: usize,
    pub(crate) end: usize,
}

/// Words that say a block shows the code as it is, beyond the ones a listing's sentence has
/// ([`NOT_A_WRITE`]).
const NOT_A_CHANGE: [&str; 1] = ["looks like"];
/// Words by which a sentence calls what follows a definition.
const DEFINITION_WORDS: [&str; 4] = ["function", "method", "class", "definition"];

/// The definition whose opening fence starts at byte `fence` of `text`, when the sentence
/// before it announces one and the block holds it.
pub(crate) fn definition_at(text: &str, fence: usize) -> Option<Definition> {
    let line_start = text[..fence].rfind('\n').map_or(0, |i| i + 1);
    if !text[line_start..fence].trim().is_empty() {
        return None;
    }
    let fence_end = text[fence..].find('\n').map_or(text.len(), |i| fence + i);
    let opening = text[fence..fence_end].trim();
    let ticks = opening.chars().take_while(|&c| c == '`').count();
    let info = &opening[ticks..];
    // A JSON fence holds calls or data, never code to put in place.
    let json = info.to_ascii_lowercase().starts_with("json");
    if ticks < 3 || json || !info.chars().all(|c| c.is_ascii_alphanumeric() || c == '+') {
        return None;
    }
    let before = text[..line_start].trim_end();
    let sentence_line = &before[before.rfind('\n').map_or(0, |i| i + 1)..];
    let (close_at, end) = closing(text, fence_end, ticks)?;
    let body = &text[(fence_end + 1).min(close_at)..close_at];
    let name = single_definition(body)?;
    announces(sentence_line, name).then(|| Definition {
        name: name.to_string(),
        content: body.to_string(),
        from: fence,
        end,
    })
}

/// Where the block whose opening fence line ends at `fence_end` closes: the start of its
/// closing fence line and the end of that line.
fn closing(text: &str, fence_end: usize, ticks: usize) -> Option<(usize, usize)> {
    let mut at = fence_end;
    while at < text.len() {
        let start = at + 1;
        let stop = text[start..].find('\n').map_or(text.len(), |i| start + i);
        if closes(&text[start..stop], ticks) {
            return Some((start, stop));
        }
        at = stop;
    }
    None
}

/// Whether the last sentence of `line` announces the definition of `name` as a change.
fn announces(line: &str, name: &str) -> bool {
    let line = line.trim().trim_end_matches(['*', ' ']);
    let Some(line) = line.strip_suffix(':') else {
        return false;
    };
    // The last sentence: "…has an indentation error. The `median` function should be…".
    let sentence = line.rsplit(". ").next().unwrap_or(line);
    let said: String = sentence.split('`').step_by(2).collect::<Vec<_>>().join(" ");
    let said = said.to_lowercase();
    if NOT_A_WRITE
        .iter()
        .chain(&NOT_A_CHANGE)
        .any(|w| said.contains(w))
    {
        return false;
    }
    let ticked = sentence
        .split('`')
        .skip(1)
        .step_by(2)
        .any(|t| t.trim_end_matches("()") == name);
    ticked || DEFINITION_WORDS.iter().any(|w| said.contains(w))
}

/// The name `body` defines when it holds exactly one definition: its first non-blank line
/// a definition line, every later non-blank line indented deeper, but for a closing brace
/// level with it.
fn single_definition(body: &str) -> Option<&str> {
    let mut lines = body.lines().filter(|l| !l.trim().is_empty());
    let first = lines.next()?;
    let name = defined_name(first)?;
    let depth = indent(first);
    let mut inner = 0;
    let mut closed = false;
    for line in lines {
        if closed {
            return None;
        }
        if indent(line) > depth {
            inner += 1;
        } else if line.trim_start().starts_with('}') {
            closed = true;
        } else {
            return None;
        }
    }
    (inner > 0).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MEDIAN: &str = "def median(values):\n    ordered = sorted(values)\n    middle = len(ordered) // 2\n    return (ordered[middle - 1] + ordered[middle]) / 2\n";

    fn found(text: &str) -> Option<Definition> {
        definition_at(text, text.find("```")?)
    }

    #[test]
    fn an_announced_definition_is_read_with_its_name_and_text() {
        // Seed 1, 06 at b315e69, rounds 2 and 3, as the 1.5B wrote them.
        for sentence in [
            "Here's the corrected `median` function:",
            "The error message indicates that the `median` function in `stats.py` has an indentation error. The `median` function should be defined as follows:",
            "The current implementation calculates the median of a list of numbers. Here's the updated `median` function:",
            "**Here is the fixed method:**",
        ] {
            let text = format!("{sentence}\n\n```python\n{MEDIAN}```\n\nThen run the tests.");
            let got = found(&text).unwrap_or_else(|| panic!("{sentence}"));
            assert_eq!(got.name, "median", "{sentence}");
            assert_eq!(got.content, MEDIAN, "{sentence}");
            assert_eq!(&text[got.from..got.end], format!("```python\n{MEDIAN}```"));
        }
        let rust = "Here is the new `leap` function:\n```rust\npub fn leap(year: u32) -> bool {\n    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)\n}\n```";
        assert_eq!(found(rust).unwrap().name, "leap");
    }

    #[test]
    fn blocks_that_show_code_as_it_is_or_hold_more_than_one_definition_are_not_changes() {
        let two = format!("{MEDIAN}\n\ndef mean(values):\n    return 0\n");
        for text in [
            format!("Here's the current `median` function:\n```python\n{MEDIAN}```"),
            format!("The original code looks like this:\n```python\n{MEDIAN}```"),
            format!("Here are the fixed functions:\n```python\n{two}```"),
            format!("Here's the corrected `median` function:\n```python\n{MEDIAN}"),
            format!("Here's the corrected `median` function\n```python\n{MEDIAN}```"),
            format!("Run this:\n```python\n{MEDIAN}```"),
            "Here's the fix:\n```python\nx = median([1])\n```".to_string(),
            "Here's the corrected `median` function:\n```python\ndef median(values):\n```"
                .to_string(),
            format!("Here's the corrected `median` function:\n```json\n{MEDIAN}```"),
        ] {
            assert_eq!(found(&text), None, "{text}");
        }
    }
}
