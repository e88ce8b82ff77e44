//! Pieces every family parser shares: the turn builder, reasoning blocks, JSON extents and
//! call objects, tolerant special-token matching, and JSON rendered the way models write it.
//!
//! Parsers here never fail: whatever they cannot read becomes prose or a
//! `ParsedCall::Malformed` whose reason tells the model what to fix. Each parser also says
//! which of its calls are final (closed by their own markup), so a consumer of a streaming
//! turn can take calls before the turn ends without ever having to take one back.

use serde_json::{Map, Value};

use super::{ParsedCall, ParsedTurn};
use crate::protocol::report::REPORT_FIELDS;
use crate::protocol::tool::REPORT_TOOL;

/// Collects one turn's prose and calls, in order, and which calls are final.
/// The prose between calls is kept as segments; the turn's content is the non-blank ones,
/// trimmed, one per line, so markup around calls leaves no runs of blank lines behind.
#[derive(Debug, Default)]
pub(crate) struct TurnBuilder {
    segments: Vec<String>,
    current: String,
    calls: Vec<ParsedCall>,
    last_open: bool,
    /// Calls from this index on are not final yet (all of them in an unclosed reasoning
    /// block; those after a fence that may still close).
    held_from: Option<usize>,
}

impl TurnBuilder {
    pub(crate) fn text(&mut self, text: &str) {
        self.current.push_str(text);
    }

    /// Adds a call; `closed` says whether its closing markup was seen.
    pub(crate) fn call(&mut self, call: ParsedCall, closed: bool) {
        self.segments.push(std::mem::take(&mut self.current));
        self.calls.push(call);
        self.last_open = !closed;
    }

    /// Marks the whole turn as not final yet (an unclosed reasoning block).
    pub(crate) fn hold_all(&mut self) {
        self.held_from = Some(0);
    }

    /// Marks every call added from now on as not final yet: it follows a code fence that the
    /// rest of the turn may still close, which would make it part of a code block.
    pub(crate) fn hold_from_here(&mut self) {
        self.held_from.get_or_insert(self.calls.len());
    }

    /// The parsed turn and how many of its calls no continuation of the text can change.
    pub(crate) fn finish(mut self) -> (ParsedTurn, usize) {
        let closed = self.calls.len() - usize::from(self.last_open);
        let settled = self.held_from.map_or(closed, |held| closed.min(held));
        self.segments.push(self.current);
        let content = self
            .segments
            .iter()
            .map(|s| s.trim())
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("\n");
        (
            ParsedTurn {
                content,
                calls: self.calls,
            },
            settled,
        )
    }
}

/// Where a turn's answer starts, past a reasoning block whose draft calls must not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reasoning {
    /// Byte offset where call parsing starts.
    pub body: usize,
    /// A reasoning block opened and not yet closed: calls inside it are parsed (to salvage a
    /// turn cut off at the token cap) but none is final.
    pub open: bool,
}

/// Finds a leading reasoning block. `<think>…</think>` at the start of the turn is reasoning;
/// so is everything before a lone `</think>` (templates that open the block themselves), as
/// long as it comes before the first call marker (`first_marker`, a byte offset).
pub(crate) fn reasoning(
    text: &str,
    open_tag: &str,
    close_tag: &str,
    first_marker: Option<usize>,
) -> Reasoning {
    let lead = text.len() - text.trim_start().len();
    if text[lead..].starts_with(open_tag) {
        let from = lead + open_tag.len();
        return match text[from..].find(close_tag) {
            Some(end) => Reasoning {
                body: from + end + close_tag.len(),
                open: false,
            },
            None => Reasoning {
                body: 0,
                open: true,
            },
        };
    }
    if let Some(end) = text.find(close_tag) {
        let before_calls = first_marker.is_none_or(|m| end < m);
        if before_calls && !text[..end].contains(open_tag) {
            return Reasoning {
                body: end + close_tag.len(),
                open: false,
            };
        }
    }
    Reasoning {
        body: 0,
        open: false,
    }
}

/// Applies [`reasoning`] with `<think>` tags: the reasoning goes into the builder as prose and
/// the rest of the text is returned for call parsing.
pub(crate) fn skip_think<'t>(
    text: &'t str,
    first_marker: Option<usize>,
    turn: &mut TurnBuilder,
) -> &'t str {
    let r = reasoning(text, "<think>", "</think>", first_marker);
    if r.open {
        turn.hold_all();
    }
    turn.text(&text[..r.body]);
    &text[r.body..]
}

/// Byte length of the JSON object or array that starts at `text[0]`, or `None` when it does
/// not close within `text`. Strings and escapes are respected; validity is serde's business.
pub(crate) fn json_extent(text: &str) -> Option<usize> {
    extent(text, b"").ok()
}

/// [`json_extent`], ended early by `stop` outside a string: `Err(Some(i))` when `stop` starts
/// at byte `i` before the JSON closes, `Err(None)` when the text ends first. (A Markdown fence
/// closes its block there, whatever JSON it cut; inside a string it is text.)
pub(crate) fn json_extent_until(text: &str, stop: &str) -> Result<usize, Option<usize>> {
    extent(text, stop.as_bytes())
}

/// The scan behind both: an empty `stop` never stops it.
fn extent(text: &str, stop: &[u8]) -> Result<usize, Option<usize>> {
    if !text.starts_with(['{', '[']) {
        return Err(None);
    }
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, &b) in bytes.iter().enumerate() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        if !stop.is_empty() && bytes[i..].starts_with(stop) {
            return Err(Some(i));
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Ok(i + 1);
                }
            }
            _ if depth == 0 => return Err(None),
            _ => {}
        }
    }
    Err(None)
}

/// The arguments of a call as a JSON object: objects as they are, `null` or absent as `{}`,
/// and a string holding JSON (some models double-encode) decoded.
pub(crate) fn arguments_object(value: Option<&Value>) -> Result<Value, String> {
    match value {
        None | Some(Value::Null) => Ok(Value::Object(Map::new())),
        Some(v @ Value::Object(_)) => Ok(v.clone()),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(Value::Object(Map::new())),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(v @ Value::Object(_)) => Ok(v),
            Ok(other) => Err(format!(
                "the arguments must be a JSON object, not {}",
                kind(&other)
            )),
            Err(e) => Err(format!("the arguments are a string but not JSON: {e}")),
        },
        Some(other) => Err(format!(
            "the arguments must be a JSON object, not {}",
            kind(other)
        )),
    }
}

/// A JSON type's name, for reasons.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A tool name the engine can look up: non-empty, no whitespace or markup inside.
pub(crate) fn check_name(name: &str) -> Result<String, String> {
    let name = name.trim();
    if name.is_empty() {
        return Err("the tool name is empty".into());
    }
    if name
        .chars()
        .any(|c| c.is_whitespace() || "<>{}[]\"'`|｜".contains(c))
    {
        return Err(format!(
            "'{}' is not a tool name; write only the name, such as read_file",
            clip(name, 60)
        ));
    }
    Ok(name.to_string())
}

/// Reads a parsed `{"name": .., "arguments": ..}` object (also `parameters`, and the
/// `{"type": "function", "function": {...}}` wrapping some models copy from APIs).
pub(crate) fn call_from_value(value: &Value, raw: &str) -> ParsedCall {
    let malformed = |reason: String| ParsedCall::Malformed {
        raw: raw.to_string(),
        reason,
    };
    let Value::Object(map) = value else {
        return malformed(format!(
            "a tool call must be a JSON object, not {}",
            kind(value)
        ));
    };
    if let (None, Some(inner @ Value::Object(_))) = (map.get("name"), map.get("function")) {
        return call_from_value(inner, raw);
    }
    let Some(name) = map.get("name").and_then(Value::as_str) else {
        return malformed("the tool call has no string \"name\"".into());
    };
    let name = match check_name(name) {
        Ok(n) => n,
        Err(reason) => return malformed(reason),
    };
    match arguments_object(map.get("arguments").or_else(|| map.get("parameters"))) {
        Ok(arguments) => ParsedCall::call(name, arguments),
        Err(reason) => malformed(format!("{reason} (tool {name})")),
    }
}

/// Parses JSON text as one call object.
pub(crate) fn call_from_json(raw: &str) -> ParsedCall {
    match serde_json::from_str::<Value>(raw.trim()) {
        Ok(value) => call_from_value(&value, raw),
        Err(e) => ParsedCall::Malformed {
            raw: raw.to_string(),
            reason: format!("the tool call is not valid JSON: {e}"),
        },
    }
}

/// Appends a hint to a malformed call's reason (what the right syntax looks like).
pub(crate) fn with_hint(call: ParsedCall, hint: &str) -> ParsedCall {
    match call {
        ParsedCall::Malformed { raw, reason } => ParsedCall::Malformed {
            raw,
            reason: format!("{reason}; {hint}"),
        },
        call => call,
    }
}

/// A malformed call.
pub(crate) fn malformed(raw: &str, reason: impl Into<String>) -> ParsedCall {
    ParsedCall::Malformed {
        raw: raw.to_string(),
        reason: reason.into(),
    }
}

/// A value written as text between tags: JSON when it parses as JSON, else the text itself.
pub(crate) fn json_or_string(text: &str) -> Value {
    match serde_json::from_str::<Value>(text) {
        Ok(v) => v,
        Err(_) => Value::String(text.to_string()),
    }
}

/// Text with a surrounding Markdown code fence (```json ... ```) removed, trimmed.
pub(crate) fn strip_fence(text: &str) -> &str {
    let t = text.trim();
    let Some(inner) = t.strip_prefix("```") else {
        return t;
    };
    let inner = inner.trim_start_matches(|c: char| c.is_ascii_alphanumeric());
    inner.strip_suffix("```").unwrap_or(inner).trim()
}

pub(crate) use crate::text::clip;

/// Separators between fullwidth-token words: DeepSeek's `▁`, and what sloppy copies use.
const WORD_GAPS: [char; 3] = ['▁', '_', ' '];
/// The bars of DeepSeek's special tokens: fullwidth `｜` and plain `|`.
const BARS: [char; 2] = ['｜', '|'];

/// Matches a DeepSeek-style special token such as `<｜tool▁calls▁begin｜>` at the start of
/// `text`, accepting plain `|` and `_` or spaces for `▁`. Returns its byte length.
pub(crate) fn special_token_at(text: &str, words: &[&str]) -> Option<usize> {
    let mut rest = text.strip_prefix('<')?;
    rest = rest.strip_prefix(BARS)?;
    for (i, word) in words.iter().enumerate() {
        if i > 0 {
            rest = rest.strip_prefix(WORD_GAPS)?;
        }
        rest = rest.strip_prefix(word)?;
    }
    rest = rest.strip_prefix(BARS)?;
    rest = rest.strip_prefix('>')?;
    Some(text.len() - rest.len())
}

/// The first special token `words` in `text` at or after `from`: (start, end).
pub(crate) fn find_special(text: &str, from: usize, words: &[&str]) -> Option<(usize, usize)> {
    let mut at = from;
    while let Some(i) = text.get(at..)?.find('<') {
        let start = at + i;
        if let Some(len) = special_token_at(&text[start..], words) {
            return Some((start, start + len));
        }
        at = start + 1;
    }
    None
}

/// JSON as Python's `json.dumps` writes it (`", "` and `": "`), the spacing chat templates
/// produce and models imitate. Keys keep the map's order.
pub(crate) fn spaced_json(value: &Value) -> String {
    crate::text::python_json(value).unwrap_or_else(|_| value.to_string())
}

/// A call's arguments in the order the model writes them under the grammar: the report's
/// fields in schema order; for other tools the required arguments first in
/// [`LEADING_ARGUMENTS`] order (the order the tools' schemas list them as `required`, which
/// the grammar enforces), then the rest in the map's order.
pub(crate) fn ordered_args<'a>(name: &str, arguments: &'a Value) -> Vec<(&'a str, &'a Value)> {
    let Value::Object(map) = arguments else {
        return Vec::new();
    };
    let mut entries: Vec<(&str, &Value)> = map.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let order: &[&str] = if name == REPORT_TOOL {
        &REPORT_FIELDS
    } else {
        &LEADING_ARGUMENTS
    };
    entries.sort_by_key(|(k, _)| order.iter().position(|f| f == k).unwrap_or(usize::MAX));
    entries
}

/// The tools' required arguments in the order their schemas list them: the grammar makes the
/// model write them first and in this order (what a call is about before its payload, so a
/// small model never writes `write_file`'s content and forgets its path).
pub(crate) const LEADING_ARGUMENTS: [&str; 6] =
    ["path", "pattern", "command", "old", "new", "content"];

/// A call's arguments as spaced JSON, in [`ordered_args`] order.
pub(crate) fn args_json(name: &str, arguments: &Value) -> String {
    if !arguments.is_object() {
        return spaced_json(arguments);
    }
    let members: Vec<String> = ordered_args(name, arguments)
        .into_iter()
        .map(|(k, v)| format!("{}: {}", Value::String(k.to_string()), spaced_json(v)))
        .collect();
    format!("{{{}}}", members.join(", "))
}

/// `{"name": NAME, "<args_key>": ARGS}` with the name first, as models write it.
pub(crate) fn call_object_json(name: &str, args_key: &str, arguments: &Value) -> String {
    format!(
        "{{\"name\": {}, \"{args_key}\": {}}}",
        Value::String(name.to_string()),
        args_json(name, arguments)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_extent_respects_strings_and_reports_open_objects() {
        assert_eq!(json_extent(r#"{"a": "}{"} tail"#), Some(11));
        assert_eq!(json_extent(r#"[{"a": "\"]"}], x"#), Some(14));
        assert_eq!(json_extent(r#"{"a": [1, 2"#), None);
        assert_eq!(json_extent("x{}"), None);
        assert_eq!(json_extent("}"), None);
    }

    #[test]
    fn special_tokens_match_loosely() {
        let words = ["tool", "calls", "begin"];
        assert_eq!(
            special_token_at("<｜tool▁calls▁begin｜>x", &words),
            Some(28)
        );
        assert_eq!(special_token_at("<|tool_calls_begin|>", &words), Some(20));
        assert_eq!(special_token_at("<|tool calls begin|>", &words), Some(20));
        assert_eq!(special_token_at("<｜tool▁call▁begin｜>", &words), None);
        assert_eq!(
            find_special("ab <x <|tool_calls_begin|>", 0, &words),
            Some((6, 26))
        );
    }

    #[test]
    fn reasoning_blocks_hide_draft_calls() {
        let t = "<think>maybe <tool_call></think>answer";
        assert_eq!(
            reasoning(t, "<think>", "</think>", Some(13)),
            Reasoning {
                body: 32,
                open: false
            }
        );
        let t = "planning</think>answer <tool_call>";
        assert_eq!(reasoning(t, "<think>", "</think>", Some(23)).body, 16);
        let t = "<tool_call>x</tool_call> says </think>";
        assert_eq!(reasoning(t, "<think>", "</think>", Some(0)).body, 0);
        let t = "  <think>still going <tool_call>";
        assert!(reasoning(t, "<think>", "</think>", Some(20)).open);
    }

    #[test]
    fn fences_and_loose_values() {
        assert_eq!(strip_fence("```json\n{\"a\": 1}\n```"), "{\"a\": 1}");
        assert_eq!(strip_fence(" {} "), "{}");
        assert_eq!(strip_fence("```\n[1]"), "[1]");
        assert_eq!(json_or_string("[1, 2]"), json!([1, 2]));
        assert_eq!(json_or_string("42"), json!(42));
        assert_eq!(json_or_string("src/main.rs"), json!("src/main.rs"));
        assert_eq!(json_or_string(""), json!(""));
    }

    #[test]
    fn spaced_json_looks_like_python() {
        assert_eq!(
            spaced_json(&json!({"a": [1, "x"], "b": {"c": null}})),
            r#"{"a": [1, "x"], "b": {"c": null}}"#
        );
        assert_eq!(
            call_object_json("read_file", "arguments", &json!({"path": "a"})),
            r#"{"name": "read_file", "arguments": {"path": "a"}}"#
        );
        let report = json!({"blocker": "", "evidence": [], "next_steps": ["x"], "status": "continue", "summary": "s"});
        assert_eq!(
            args_json("ralph_report", &report),
            r#"{"status": "continue", "summary": "s", "evidence": [], "next_steps": ["x"], "blocker": ""}"#
        );
    }

    #[test]
    fn call_objects_are_checked() {
        let ok = call_from_json(
            r#"{"type": "function", "function": {"name": "a", "arguments": "{\"x\": 1}"}}"#,
        );
        assert_eq!(ok, ParsedCall::call("a", json!({"x": 1})));
        for (raw, needle) in [
            (
                r#"{"name": "a", "arguments": [1]}"#,
                "JSON object, not an array",
            ),
            (r#"{"name": "", "arguments": {}}"#, "empty"),
            (r#"{"name": "<x>", "arguments": {}}"#, "not a tool name"),
            (r#"{"arguments": {}}"#, "no string \"name\""),
            (r#"[1]"#, "must be a JSON object"),
        ] {
            match call_from_json(raw) {
                ParsedCall::Malformed { reason, .. } => {
                    assert!(reason.contains(needle), "{reason}")
                }
                call => panic!("{raw} parsed as {call:?}"),
            }
        }
    }
}

#[cfg(test)]
mod argument_order_tests {
    use super::LEADING_ARGUMENTS;
    use serde_json::Value;

    /// The grammar writes each tool's `required` arguments in the schema's order, and the
    /// rendered calls (the instructions' examples) in `LEADING_ARGUMENTS` order: they agree.
    #[test]
    fn every_tools_required_arguments_follow_the_leading_order() {
        for spec in crate::tools::Registry::standard().specs() {
            let required: Vec<&str> = spec.parameters["required"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if spec.name == crate::protocol::tool::REPORT_TOOL {
                continue;
            }
            let positions: Vec<usize> = required
                .iter()
                .map(|k| {
                    LEADING_ARGUMENTS
                        .iter()
                        .position(|l| l == k)
                        .unwrap_or_else(|| {
                            panic!("{}: `{k}` is not in LEADING_ARGUMENTS", spec.name)
                        })
                })
                .collect();
            assert!(
                positions.windows(2).all(|w| w[0] < w[1]),
                "{}: {required:?}",
                spec.name
            );
        }
    }
}
