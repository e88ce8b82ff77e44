//! Hermes / Qwen tool calls: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`.
//!
//! The most common open-model syntax (Hermes 2/3, Qwen 2.5/3, SmolLM3). Several calls may
//! follow each other in one turn; a call whose closing tag never came (the turn hit its token
//! cap, or the model opened the next call first) is still read when its JSON is complete.
//! Qwen3-Coder writes the same tags around an XML body (`<function=NAME>` with
//! `<parameter=KEY>` children); that body is read too. A leading `<think>` block is
//! reasoning: draft calls inside it do not run.

use serde_json::{Map, Value};

use super::family::{scan_blocks, Ending, Family, Tagged, Teaching, ONE_OBJECT_PER_LINE};
use super::fence::{first_loose_call, scan_loose};
use super::grammar::{json_call, lit, repeat_sep, Gbnf, MAX_CALLS};
use super::scan::{self, malformed, with_hint, TurnBuilder};
use super::ParsedCall;
use crate::protocol::tool::ToolSpec;

pub(crate) const OPEN: &str = "<tool_call>";
pub(crate) const CLOSE: &str = "</tool_call>";
const HINT: &str =
    "write <tool_call>{\"name\": \"TOOL\", \"arguments\": {...}}</tool_call> with valid JSON";

#[derive(Debug, Clone, Copy, Default)]
pub struct Hermes;

/// Reads what stands between `<tool_call>` and `</tool_call>`: JSON, or Qwen3-Coder's XML.
pub(crate) fn call_body(body: &str) -> ParsedCall {
    let inner = scan::strip_fence(body);
    if inner.starts_with("<function=") {
        return xml_call(body, inner);
    }
    if inner.is_empty() {
        return malformed(body, "the <tool_call> is empty");
    }
    scan::call_from_json(inner)
}

/// Qwen3-Coder: `<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n</function>`.
fn xml_call(raw: &str, inner: &str) -> ParsedCall {
    let Some(rest) = inner.strip_prefix("<function=") else {
        return malformed(raw, "expected <function=NAME>");
    };
    let Some(end) = rest.find('>') else {
        return malformed(raw, "the <function=NAME> tag is not closed with >");
    };
    let name = match scan::check_name(&rest[..end]) {
        Ok(n) => n,
        Err(reason) => return malformed(raw, reason),
    };
    let mut args = Map::new();
    let mut rest = &rest[end + 1..];
    while let Some(start) = rest.find("<parameter=") {
        let after = &rest[start + "<parameter=".len()..];
        let Some(key_end) = after.find('>') else {
            return malformed(raw, "a <parameter=KEY> tag is not closed with >");
        };
        let key = after[..key_end].trim().to_string();
        let value_from = &after[key_end + 1..];
        let Some(value_end) = value_from.find("</parameter>") else {
            return malformed(
                raw,
                format!("the value of parameter '{key}' has no </parameter>"),
            );
        };
        let value = &value_from[..value_end];
        let value = value.strip_prefix('\n').unwrap_or(value);
        let value = value.strip_suffix('\n').unwrap_or(value);
        args.insert(key, scan::json_or_string(value));
        rest = &value_from[value_end + "</parameter>".len()..];
    }
    ParsedCall::call(name, Value::Object(args))
}

/// A call whose closing tag did not come.
fn unclosed_call(body: &str) -> ParsedCall {
    if body.trim().is_empty() {
        return malformed(body, "an empty <tool_call> with no closing tag");
    }
    match call_body(body) {
        ParsedCall::Malformed { raw, reason } => ParsedCall::Malformed {
            raw,
            reason: format!("{reason} (and </tool_call> is missing)"),
        },
        call => call,
    }
}

/// Parses `<tool_call>` blocks (`hint` goes into malformed reasons), putting everything else
/// through `prose` (which may find calls of its own in the text between blocks; see
/// `generic`).
pub(crate) fn scan_tagged(
    text: &str,
    turn: &mut TurnBuilder,
    hint: &str,
    prose: impl FnMut(&str, &mut TurnBuilder),
) {
    let read = |body: &str, ending: Ending| {
        let call = match ending {
            Ending::Closed => call_body(body),
            Ending::Interrupted | Ending::CutOff => unclosed_call(body),
        };
        with_hint(call, hint)
    };
    let blocks = Tagged {
        open: OPEN,
        close: CLOSE,
        read: &read,
    };
    scan_blocks(text, turn, &blocks, prose);
}

/// `<tool_call>` JSON calls, one after another.
pub(crate) fn tagged_call(g: &mut Gbnf, tools: &[ToolSpec]) -> String {
    let call = json_call(g, tools, "arguments");
    g.rule(
        "tagged-call",
        format!("{} ws {call} ws {}", lit(OPEN), lit(CLOSE)),
    )
}

/// Where the first call of a turn starts: a `<tool_call>` tag, or a fenced or bare call
/// object (which Qwen models write whatever their template says).
pub(crate) fn first_tagged_or_loose(text: &str) -> Option<usize> {
    [text.find(OPEN), first_loose_call(text)]
        .into_iter()
        .flatten()
        .min()
}

/// Tagged calls, and in the prose between them fenced or bare call objects.
pub(crate) fn scan_tagged_or_loose(body: &str, turn: &mut TurnBuilder, hint: &str) {
    scan_tagged(body, turn, hint, |prose, turn| {
        scan_loose(prose, turn, hint)
    });
}

impl Family for Hermes {
    fn format_name(&self) -> &'static str {
        "hermes"
    }

    fn first_marker(&self, text: &str) -> Option<usize> {
        first_tagged_or_loose(text)
    }

    /// Tagged calls, and in the prose between them fenced or bare call objects (which Qwen
    /// models write whatever their template says).
    fn scan_answer(&self, body: &str, turn: &mut TurnBuilder) {
        scan_tagged_or_loose(body, turn, HINT);
    }

    fn write_call(&self, name: &str, arguments: &Value) -> String {
        format!(
            "{OPEN}\n{}\n{CLOSE}",
            scan::call_object_json(name, "arguments", arguments)
        )
    }

    fn instructions(&self, tools: &[ToolSpec]) -> String {
        let how = "To call a tool, write a JSON object with its name and arguments inside <tool_call></tool_call> tags, like this:";
        Teaching::new(ONE_OBJECT_PER_LINE, how)
            .tools_tagged()
            .then("You may write several calls one after another. The results come back in the next message.")
            .lay_out(self, tools)
    }

    fn grammar_root(&self, g: &mut Gbnf, tools: &[ToolSpec]) -> String {
        repeat_sep(&tagged_call(g, tools), "ws", MAX_CALLS)
    }

    fn trigger_words(&self) -> &'static [&'static str] {
        &[OPEN]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::{assert_malformed, list_then_read, round_trip, ChatFormat, ParsedCall};
    use serde_json::json;

    #[test]
    fn finds_several_calls_and_keeps_the_text() {
        let t = Hermes.parse("Looking.\n<tool_call>{\"name\": \"list_dir\", \"arguments\": {\"path\": \".\"}}</tool_call>\n<tool_call>\n{\"name\":\"read_file\",\"arguments\":\"{\\\"path\\\":\\\"a\\\"}\"}\n</tool_call> Done.");
        assert_eq!(t.content, "Looking.\nDone.");
        assert_eq!(t.calls, list_then_read());
    }

    #[test]
    fn malformed_and_unclosed_calls_are_reported() {
        let t = Hermes.parse("<tool_call>{\"name\": </tool_call>");
        assert!(
            matches!(&t.calls[0], ParsedCall::Malformed { reason, .. } if reason.contains("not valid JSON") && reason.contains("<tool_call>{\"name\""))
        );
        let t = Hermes.parse("<tool_call>{\"name\": \"a\", \"arguments\": {}}");
        assert_eq!(t.calls, vec![ParsedCall::call("a", json!({}))]);
        let t = Hermes.parse("<tool_call>{\"name\": \"a\", \"argu");
        assert_malformed(&t.calls[0], "missing");
        let t = Hermes.parse("text <tool_call>  ");
        assert_malformed(&t.calls[0], "empty");
    }

    #[test]
    fn a_call_left_open_before_the_next_one_is_still_read() {
        let (t, settled) = Hermes.parse_partial(
            "<tool_call>{\"name\": \"a\", \"arguments\": {}}\n<tool_call>{\"name\": \"b\", \"arguments\": {}}</tool_call>",
        );
        assert_eq!(
            t.calls,
            vec![
                ParsedCall::call("a", json!({})),
                ParsedCall::call("b", json!({}))
            ]
        );
        assert_eq!(settled, 2);
    }

    #[test]
    fn qwen3_coder_xml_bodies_are_read() {
        let t = Hermes.parse("<tool_call>\n<function=edit_file>\n<parameter=path>\nsrc/a.rs\n</parameter>\n<parameter=count>\n2\n</parameter>\n<parameter=new>\nline one\nline two\n</parameter>\n</function>\n</tool_call>");
        assert_eq!(
            t.calls,
            vec![ParsedCall::call(
                "edit_file",
                json!({"path": "src/a.rs", "count": 2, "new": "line one\nline two"})
            )]
        );
    }

    #[test]
    fn draft_calls_in_reasoning_do_not_run() {
        let t = Hermes.parse("<think>I could <tool_call>{\"name\": \"x\", \"arguments\": {}}</tool_call></think>\n<tool_call>{\"name\": \"y\", \"arguments\": {}}</tool_call>");
        assert_eq!(t.calls, vec![ParsedCall::call("y", json!({}))]);
        assert!(t.content.starts_with("<think>I could"));
    }

    #[test]
    fn render_then_parse_round_trips() {
        let args = json!({"path": "src/main.rs", "offset": 3});
        let text = round_trip(&Hermes, "read_file", args);
        assert_eq!(
            text,
            "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"src/main.rs\", \"offset\": 3}}\n</tool_call>"
        );
    }
}
