//! Calls written the way small coder models write them whatever their template says: a
//! Markdown fence (```` ```json ````, or a bare ```` ``` ````) holding one call object
//! `{"name": ..., "arguments": ...}` (or an array of them), or the same object bare in the
//! prose.
//!
//! Every family whose calls are JSON objects reads its prose through [`scan_loose`], so such
//! a call is never lost to format: it runs, or it goes back to the model as a malformed call
//! with a reason. Anything else stays prose: a fence in another language, a fence or an
//! object whose JSON is data rather than a call, and whatever sits inside a code block (a
//! call-shaped object in a Python example is not a call).

use serde_json::{json, Value};

use super::bare::{first_candidate, is_full_call_object, looks_like_call, scan_bare};
use super::definition::definition_at;
use super::listing::{listing_at, Found};
use super::scan::{self, json_extent_until, malformed, with_hint, TurnBuilder};
use super::ParsedCall;
use crate::protocol::tool::{REPLACE_DEFINITION, WRITE_FILE};

/// What opens and closes a Markdown code block.
pub(crate) const FENCE: &str = "```";
/// The fence a call is taught in.
pub(crate) const JSON_FENCE: &str = "```json";

/// Info strings of a fence that may hold a call (lower case); other languages are prose.
const CALL_LANGUAGES: [&str; 7] = [
    "",
    "json",
    "jsonc",
    "json5",
    "tool_call",
    "tool_code",
    "tool",
];

/// One code block at the start of a text.
#[derive(Debug, PartialEq)]
enum Block {
    /// Not a call: `len` bytes of prose, the fences included.
    Prose { len: usize },
    /// A bare or JSON fence that never closes: `len` bytes, the fence alone. What follows is
    /// read as prose, and no call in it is final while a closing fence may still come.
    Unclosed { len: usize },
    /// Calls (or one malformed call); `closed` is false when the text ended inside it.
    Calls {
        len: usize,
        calls: Vec<ParsedCall>,
        closed: bool,
    },
}

/// Reads the code block that opens at `text[0]` (which starts with [`FENCE`]).
fn read_block(text: &str) -> Block {
    let after = &text[FENCE.len()..];
    let lang_len = after
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .unwrap_or(after.len());
    let lang = after[..lang_len].to_ascii_lowercase();
    let rest = &after[lang_len..];
    let body_at = FENCE.len() + lang_len + (rest.len() - rest.trim_start().len());
    let body = &text[body_at..];
    let to_close = |from: usize| {
        text.get(from..)
            .and_then(|t| t.find(FENCE))
            .map_or(text.len(), |c| from + c + FENCE.len())
    };
    if !CALL_LANGUAGES.contains(&lang.as_str()) || !body.starts_with(['{', '[']) {
        // Another language, or JSON-looking text that is not an object or array: prose up
        // to the closing fence (a `{"name"` inside a code example stays in the example).
        let from = FENCE.len() + lang_len;
        if CALL_LANGUAGES.contains(&lang.as_str()) && !text[from..].contains(FENCE) {
            // A bare or JSON fence that never closes is not a code block the model finished:
            // the fence is prose and what follows is read for calls like any prose (a small
            // model opens one, writes a line or two, then its call, and ends the turn).
            return Block::Unclosed { len: from };
        }
        return Block::Prose {
            len: to_close(from),
        };
    }
    let json_len = match json_extent_until(body, FENCE) {
        Ok(len) => len,
        // The JSON does not close: before a closing fence (outside its strings) it is broken,
        // at the end of the text it may still be coming.
        Err(closing) => return open_json(body, body_at, text.len(), closing),
    };
    let raw = &body[..json_len];
    let tail = &body[json_len..];
    let gap = tail.len() - tail.trim_start().len();
    let len = if tail[gap..].starts_with(FENCE) {
        body_at + json_len + gap + FENCE.len()
    } else {
        body_at + json_len
    };
    // Final once the fence closes or anything else follows; the closing fence may still
    // be coming when the text ends right after the JSON.
    let closed = !tail[gap..].is_empty();
    let calls = match serde_json::from_str::<Value>(raw) {
        Ok(value) if is_full_call_object(&value) => vec![scan::call_from_value(&value, raw)],
        Ok(Value::Array(items)) if !items.is_empty() && items.iter().all(is_full_call_object) => {
            items
                .iter()
                .map(|item| scan::call_from_value(item, raw))
                .collect()
        }
        Ok(_) => return Block::Prose { len },
        Err(e) if looks_like_call(raw) => vec![malformed(
            raw,
            format!("the call in the ``` block is not valid JSON: {e}"),
        )],
        Err(_) => return Block::Prose { len },
    };
    Block::Calls { len, calls, closed }
}

/// A block whose JSON does not close: `closing` is where a fence cuts it (the block ends
/// there), `None` when the text ends inside it and more may come.
fn open_json(body: &str, body_at: usize, text_len: usize, closing: Option<usize>) -> Block {
    match closing {
        Some(c) if looks_like_call(&body[..c]) => Block::Calls {
            len: body_at + c + FENCE.len(),
            calls: vec![malformed(
                &body[..c],
                "the call in the ``` block is not valid JSON: its braces do not close",
            )],
            closed: true,
        },
        Some(c) => Block::Prose {
            len: body_at + c + FENCE.len(),
        },
        None if looks_like_call(body) || could_open_call(body) => Block::Calls {
            len: text_len,
            calls: vec![malformed(body, "the call's JSON is cut off")],
            closed: false,
        },
        None => Block::Prose { len: text_len },
    }
}

/// Whether `text` (an object or array still being written) may yet turn out to be a call:
/// it is a prefix of `{"name"`, or an array whose first item may be.
fn could_open_call(text: &str) -> bool {
    let text = text.strip_prefix('[').map_or(text, str::trim_start);
    let Some(rest) = text.strip_prefix('{') else {
        return false;
    };
    let rest = rest.trim_start();
    looks_like_call(text) || "\"name\"".starts_with(rest) || "\"type\"".starts_with(rest)
}

/// Where the first fenced or bare call in `text` may start (for reasoning detection); a
/// call-shaped object inside a code block of another kind does not count.
pub(crate) fn first_loose_call(text: &str) -> Option<usize> {
    let mut at = 0;
    loop {
        let fence = text.get(at..)?.find(FENCE).map(|i| at + i);
        if let Some(i) = first_candidate(&text[at..fence.unwrap_or(text.len())]) {
            return Some(at + i);
        }
        let start = fence?;
        match read_block(&text[start..]) {
            Block::Calls { .. } => return Some(start),
            Block::Prose { len } | Block::Unclosed { len } => at = start + len.max(FENCE.len()),
        }
    }
}

/// Reads prose for calls in code blocks and bare call objects, adding text and calls to
/// `turn` in order; `hint` is appended to the reason of a malformed call.
pub(crate) fn scan_loose(text: &str, turn: &mut TurnBuilder, hint: &str) {
    scan_loose_with(text, turn, hint, true);
}

/// [`scan_loose`]; `strict: false` also reads a bare object without arguments as a call
/// (for Llama 3, whose own calls are bare objects).
pub(crate) fn scan_loose_with(text: &str, turn: &mut TurnBuilder, hint: &str, strict: bool) {
    let mut at = 0;
    let mut prose_from = 0;
    while let Some(i) = text.get(at..).and_then(|t| t.find(FENCE)) {
        let start = at + i;
        let block = read_block(&text[start..]);
        // One function written out after a sentence announcing it replaces that function,
        // also where the sentence names its file (`the corrected `median` in `stats.py``):
        // written as the whole file, the block would drop the file's other lines.
        let definition = match block {
            Block::Prose { .. } => definition_at(text, start).filter(|d| d.from >= prose_from),
            _ => None,
        };
        if let Some(definition) = definition {
            scan_bare(&text[prose_from..definition.from], turn, hint, strict);
            let arguments = json!({"name": definition.name, "content": definition.content});
            turn.call(ParsedCall::call(REPLACE_DEFINITION, arguments), true);
            at = definition.end;
            prose_from = definition.end;
            continue;
        }
        // A file written whole in prose (its path on the line before the fence) is a
        // write_file call; a call in a fence after a path line stays a call.
        let found = match block {
            Block::Calls { .. } => None,
            _ => listing_at(text, start).filter(|f| f.from() >= prose_from),
        };
        if let Some(found) = found {
            scan_bare(&text[prose_from..found.from()], turn, hint, strict);
            match found {
                Found::Whole {
                    path, content, end, ..
                } => {
                    let arguments = json!({"path": path, "content": content});
                    turn.call(ParsedCall::call(WRITE_FILE, arguments), true);
                    at = end;
                    prose_from = end;
                    continue;
                }
                Found::Open { from } => {
                    // The file is still being written: nothing after its fence is a call yet.
                    turn.text(&text[from..]);
                    turn.hold_from_here();
                    return;
                }
            }
        }
        // Text before the block may hold bare calls; the block itself is read as a whole.
        scan_bare(&text[prose_from..start], turn, hint, strict);
        match block {
            Block::Prose { len } => {
                let len = len.max(FENCE.len());
                turn.text(&text[start..start + len]);
                at = start + len;
            }
            Block::Unclosed { len } => {
                turn.text(&text[start..start + len]);
                turn.hold_from_here();
                at = start + len;
            }
            Block::Calls { len, calls, closed } => {
                for call in calls {
                    turn.call(with_hint(call, hint), closed);
                }
                at = start + len;
            }
        }
        prose_from = at;
    }
    scan_bare(&text[prose_from..], turn, hint, strict);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::{assert_malformed, list_then_read, ParsedTurn};
    use serde_json::json;

    fn loose(text: &str) -> (ParsedTurn, usize) {
        let mut turn = TurnBuilder::default();
        scan_loose(text, &mut turn, "HINT");
        turn.finish()
    }

    #[test]
    fn fenced_calls_are_read_and_their_fences_are_not_prose() {
        let (t, settled) = loose("I will look first.\n```json\n{\"name\": \"list_dir\", \"arguments\": {\"path\": \".\"}}\n```\nThen:\n```\n{\"name\": \"read_file\", \"arguments\": \"{\\\"path\\\": \\\"a\\\"}\"}\n```");
        assert_eq!(t.calls, list_then_read());
        assert_eq!(t.content, "I will look first.\nThen:");
        assert_eq!(settled, 2);
    }

    #[test]
    fn an_array_of_calls_in_one_fence_is_several_calls() {
        let (t, _) = loose("```json\n[{\"name\": \"list_dir\", \"arguments\": {\"path\": \".\"}}, {\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}]\n```");
        assert_eq!(t.calls, list_then_read());
    }

    #[test]
    fn bare_call_objects_are_read() {
        let (t, _) = loose(
            "{\"name\": \"list_dir\", \"arguments\": {\"path\": \".\"}}\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}",
        );
        assert_eq!(t.calls, list_then_read());
        assert_eq!(t.content, "");
    }

    #[test]
    fn a_function_announced_and_written_out_is_a_call_that_replaces_its_definition() {
        let text = "The bug is in the even case. Here's the corrected `median` function:\n\n```python\ndef median(values):\n    return 2\n```\n\nThen:\n```json\n{\"name\": \"run_command\", \"arguments\": {\"command\": \"make test\"}}\n```";
        let (t, settled) = loose(text);
        assert_eq!(
            t.calls,
            [
                ParsedCall::call(
                    REPLACE_DEFINITION,
                    json!({"name": "median", "content": "def median(values):\n    return 2\n"})
                ),
                ParsedCall::call("run_command", json!({"command": "make test"})),
            ]
        );
        assert_eq!(
            t.content,
            "The bug is in the even case. Here's the corrected `median` function:\nThen:"
        );
        assert_eq!(settled, 2);
        // The same block after a sentence that shows the code as it is stays prose.
        let shown = text.replace("Here's the corrected", "Here's the current");
        assert_eq!(loose(&shown).0.calls.len(), 1);
        // Named with its file, it is still the one function, not the whole file.
        let named = text.replace("function:", "function in `stats.py`:");
        let calls = loose(&named).0.calls;
        assert!(
            matches!(&calls[0], ParsedCall::Call { name, .. } if name == REPLACE_DEFINITION),
            "{calls:?}"
        );
        // A file announced as a file is written whole.
        let file = text.replace(
            "the corrected `median` function:",
            "the updated `stats.py` file:",
        );
        let calls = loose(&file).0.calls;
        assert!(
            matches!(&calls[0], ParsedCall::Call { name, .. } if name == WRITE_FILE),
            "{calls:?}"
        );
    }

    #[test]
    fn code_blocks_and_data_that_are_not_calls_stay_prose() {
        for text in [
            "```python\nprint({\"name\": \"read_file\", \"arguments\": {}})\n```",
            "```json\n{\"name\": \"slug\", \"version\": 2}\n```",
            "```json\n[1, 2, 3]\n```",
            "```\nmake test\n```",
            "Use {\"port\": 8080} in the config.",
        ] {
            let (t, _) = loose(text);
            assert!(t.calls.is_empty(), "{text}: {:?}", t.calls);
            assert_eq!(t.content, text.trim());
        }
    }

    #[test]
    fn a_call_after_a_bare_fence_that_never_closes_is_read() {
        let call = "{\n  \"name\":\"read_file\",\n  \"arguments\":{\"path\": \"a\"}\n}";
        let (t, settled) = loose(&format!("Done.\n```\n# Steps\nThe first part,{call}"));
        assert_eq!(
            t.calls,
            vec![ParsedCall::call("read_file", json!({"path": "a"}))]
        );
        assert_eq!(t.content, "Done.\n```\n# Steps\nThe first part");
        // Not final while the turn goes on: a closing fence would put it in a code block.
        assert_eq!(settled, 0);
        // Once the block closes it is a code block again, and its text stays prose.
        let closed = format!("```\n# Steps\n{call}\n```");
        assert!(loose(&closed).0.calls.is_empty());
        // A fence of another language that never closes stays a code example.
        assert!(loose(&format!("```python\nx = {call}")).0.calls.is_empty());
    }

    #[test]
    fn a_fence_with_broken_call_json_is_a_malformed_call() {
        let (t, settled) =
            loose("```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": 'a'}}\n```");
        assert_malformed(&t.calls[0], "not valid JSON");
        assert_malformed(&t.calls[0], "HINT");
        assert_eq!(settled, 1);
        let (t, _) =
            loose("```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}\n```\nok");
        assert_malformed(&t.calls[0], "braces do not close");
        assert_eq!(t.content, "ok");
    }

    #[test]
    fn a_fenced_call_still_being_written_is_not_final() {
        let (t, settled) = loose("Reading.\n```json\n{\"name\": \"read_file\", \"argu");
        assert_eq!(t.calls.len(), 1);
        assert_eq!(settled, 0);
        let (t, settled) = loose("```json\n{\"na");
        assert_eq!((t.calls.len(), settled), (1, 0));
        let (t, _) = loose("```json\n{\"port");
        assert!(t.calls.is_empty());
    }

    #[test]
    fn a_fence_holding_markdown_fences_in_a_string_is_one_call() {
        let content = "# Demo\n\n```sh\nmake\n```\n";
        let text = format!(
            "```json\n{}\n```",
            json!({"name": "write_file", "arguments": {"path": "README.md", "content": content}})
        );
        let (t, _) = loose(&text);
        assert_eq!(
            t.calls,
            vec![ParsedCall::call(
                "write_file",
                json!({"path": "README.md", "content": content})
            )]
        );
        assert_eq!(t.content, "");
    }

    #[test]
    fn a_file_listed_whole_in_prose_is_a_write_file_call() {
        let write = |path: &str, content: &str| {
            ParsedCall::call("write_file", json!({"path": path, "content": content}))
        };
        // The shape the round observation shows files in, and the 1.5B answers in.
        let (t, settled) = loose("I will fix add().\n\napp.py\n```python\ndef add(a, b):\n    return a + b\n```\nThen run the tests.");
        assert_eq!(
            t.calls,
            vec![write("app.py", "def add(a, b):\n    return a + b\n")]
        );
        assert_eq!(t.content, "I will fix add().\nThen run the tests.");
        assert_eq!(settled, 1);
        // A listing, then a call: both, in order.
        let (t, settled) = loose("`a.txt`:\n```\nA\n```\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}\n```");
        assert_eq!(
            t.calls,
            vec![
                write("a.txt", "A\n"),
                ParsedCall::call("read_file", json!({"path": "a.txt"}))
            ]
        );
        assert_eq!(settled, 2);
        // A call fenced after a path line is the call, and a JSON file's data is its content.
        let (t, _) = loose("app.py:\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"app.py\"}}\n```");
        assert_eq!(
            t.calls,
            vec![ParsedCall::call("read_file", json!({"path": "app.py"}))]
        );
        let (t, _) = loose("config.json\n```json\n{\"port\": 8080}\n```");
        assert_eq!(t.calls, vec![write("config.json", "{\"port\": 8080}\n")]);
    }

    #[test]
    fn a_listing_still_being_written_calls_nothing_yet() {
        let (t, settled) = loose("app.py\n```python\ndef add(a, b):\n");
        assert!(t.calls.is_empty(), "{:?}", t.calls);
        assert_eq!(settled, 0);
        // What it holds is the file's text, not a call.
        let (t, _) = loose("a.py\n```python\nx = {\"name\": \"read_file\", \"arguments\": {}}\n");
        assert!(t.calls.is_empty(), "{:?}", t.calls);
        // Without a path line a code block stays an example.
        let (t, _) = loose("Like this:\n```python\nx = 1\n```");
        assert!(t.calls.is_empty());
    }

    #[test]
    fn first_loose_call_skips_code_examples() {
        let text = "```python\nx = {\"name\": 1}\n```\nNow ```json\n{\"name\": \"a\", \"arguments\": {}}\n```";
        assert_eq!(first_loose_call(text), text.find("```json"));
        assert_eq!(first_loose_call("no calls here"), None);
    }
}
