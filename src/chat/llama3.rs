//! Llama 3.x tool calls: a bare JSON object `{"name": ..., "parameters": {...}}`, sometimes
//! after the `<|python_tag|>` token, several in a turn separated by `;` or newlines.
//!
//! With no tags around calls, a call is recognised by its shape: an object that starts with
//! `"name"` (or `"type": "function"`) and holds nothing but a name and its parameters. Other
//! JSON in the prose stays prose. After `<|python_tag|>` every object is a call. Results go
//! back in the tool role, which Llama 3.1+ templates render as the `ipython` header.

use serde_json::Value;

use super::family::{Family, Teaching};
use super::grammar::{json_call, lit, repeat_sep, Gbnf, MAX_CALLS};
use super::scan::{self, malformed, with_hint, TurnBuilder};
use crate::protocol::tool::ToolSpec;

const PYTHON_TAG: &str = "<|python_tag|>";
const HINT: &str = "write {\"name\": \"TOOL\", \"parameters\": {...}} as valid JSON";
/// Keys a bare call object may hold.
const CALL_KEYS: [&str; 5] = ["name", "parameters", "arguments", "type", "id"];
/// Characters that separate calls (`;`, a JSON array around them) and are not prose.
const SEPARATORS: [char; 4] = [';', ',', '[', ']'];

#[derive(Debug, Clone, Copy, Default)]
pub struct Llama3;

/// Whether the object at `text[0]` looks like the start of a call.
pub(crate) fn looks_like_call(text: &str) -> bool {
    let Some(rest) = text.strip_prefix('{') else {
        return false;
    };
    let rest = rest.trim_start();
    rest.starts_with("\"name\"") || rest.starts_with("\"type\"")
}

/// Whether a complete JSON value is a call rather than data in the prose.
pub(crate) fn is_call_object(value: &Value) -> bool {
    value.as_object().is_some_and(|map| {
        map.get("name").is_some_and(Value::is_string)
            && map.keys().all(|k| CALL_KEYS.contains(&k.as_str()))
    })
}

/// [`is_call_object`] with its arguments present (`arguments` or `parameters`): the shape a
/// call must have to be read outside a family's own markup.
pub(crate) fn is_full_call_object(value: &Value) -> bool {
    is_call_object(value)
        && value
            .as_object()
            .is_some_and(|map| map.contains_key("arguments") || map.contains_key("parameters"))
}

/// The first place in `text` where a bare call (or `<|python_tag|>`) may start.
pub(crate) fn first_candidate(text: &str) -> Option<usize> {
    next_candidate(text, 0)
}

/// The next place in `text` at or after `from` where a call may start.
fn next_candidate(text: &str, from: usize) -> Option<usize> {
    let mut at = from;
    loop {
        let i = at + text.get(at..)?.find(['{', '<'])?;
        if text[i..].starts_with(PYTHON_TAG) || looks_like_call(&text[i..]) {
            return Some(i);
        }
        at = i + 1;
    }
}

/// Scans bare JSON calls (and `<|python_tag|>`) in `text`, adding prose and calls to `turn`.
/// `strict`: an object needs its arguments to be a call ([`is_full_call_object`]); Llama 3's
/// own calls may leave them out.
pub(crate) fn scan_bare(text: &str, turn: &mut TurnBuilder, args_key_hint: &str, strict: bool) {
    let mut bare = BareScan {
        text,
        args_key_hint,
        is_call: if strict {
            is_full_call_object
        } else {
            is_call_object
        },
        prose_from: 0,
        at: 0,
        tagged: false,
        after_call: false,
    };
    while let Some(start) = bare.next_start() {
        let rest = &text[start..];
        if rest.starts_with(PYTHON_TAG) {
            bare.python_tag(turn, start);
            continue;
        }
        let Some(len) = scan::json_extent(rest) else {
            bare.prose_until(turn, start, true);
            let reason = match serde_json::from_str::<Value>(rest) {
                Err(e) => format!("the call's JSON is cut off: {e}"),
                Ok(_) => "the call's JSON is cut off".into(),
            };
            turn.call(malformed(rest, format!("{reason}; {args_key_hint}")), false);
            return;
        };
        bare.object(turn, start, len);
    }
    bare.prose_until(turn, text.len(), false);
}

/// Where a scan of bare calls is in its text.
struct BareScan<'t> {
    text: &'t str,
    args_key_hint: &'t str,
    /// Whether a JSON object is a call.
    is_call: fn(&Value) -> bool,
    /// Where the prose not yet added starts.
    prose_from: usize,
    /// Where to look for the next call.
    at: usize,
    /// Right after `<|python_tag|>`.
    tagged: bool,
    /// The prose not yet added follows a call.
    after_call: bool,
}

impl BareScan<'_> {
    /// Where the next call may start: right after the tag any object is a call, whatever
    /// its first key.
    fn next_start(&self) -> Option<usize> {
        let tagged_start = self
            .tagged
            .then(|| {
                let rest = self.text.get(self.at..)?;
                let gap = rest.len() - rest.trim_start().len();
                rest[gap..].starts_with('{').then_some(self.at + gap)
            })
            .flatten();
        tagged_start.or_else(|| next_candidate(self.text, self.at))
    }

    /// Adds the prose up to `end` to `turn`, without the separators next to calls.
    fn prose_until(&self, turn: &mut TurnBuilder, end: usize, before_call: bool) {
        let mut piece = &self.text[self.prose_from..end];
        if self.after_call {
            piece =
                piece.trim_start_matches(|c: char| c.is_whitespace() || SEPARATORS.contains(&c));
        }
        if before_call {
            piece = piece.trim_end_matches(|c: char| c.is_whitespace() || SEPARATORS.contains(&c));
        }
        turn.text(piece);
    }

    /// `<|python_tag|>` at `start`: a JSON call may follow; anything else up to the line's
    /// end (built-in tool syntax, code) is a malformed call.
    fn python_tag(&mut self, turn: &mut TurnBuilder, start: usize) {
        let text = self.text;
        self.prose_until(turn, start, true);
        self.at = start + PYTHON_TAG.len();
        self.prose_from = self.at;
        self.tagged = true;
        let next = text[self.at..].trim_start();
        if !next.is_empty() && !next.starts_with('{') {
            // Built-in tool syntax (`brave_search.call(...)`) or code: not offered here.
            let line_end = next.find('\n');
            let raw = &next[..line_end.unwrap_or(next.len())];
            turn.call(
                malformed(
                    raw,
                    format!(
                        "after <|python_tag|> only a JSON call is understood; {}",
                        self.args_key_hint
                    ),
                ),
                line_end.is_some(),
            );
            self.at = text.len() - next.len() + raw.len();
            self.prose_from = self.at;
            self.after_call = true;
            self.tagged = false;
        }
    }

    /// The whole JSON value of `len` bytes at `start`: a call (or a malformed one) ends the
    /// prose before it; JSON that is not a call stays in the prose.
    fn object(&mut self, turn: &mut TurnBuilder, start: usize, len: usize) {
        let raw = &self.text[start..start + len];
        let call = match serde_json::from_str::<Value>(raw) {
            Ok(value) if self.tagged || (self.is_call)(&value) => {
                scan::call_from_value(&value, raw)
            }
            Ok(_) => {
                self.at = start + len;
                return;
            }
            Err(e) => malformed(raw, format!("the tool call is not valid JSON: {e}")),
        };
        self.prose_until(turn, start, true);
        turn.call(with_hint(call, self.args_key_hint), true);
        self.after_call = true;
        self.tagged = false;
        self.at = start + len;
        self.prose_from = self.at;
    }
}

impl Family for Llama3 {
    fn format_name(&self) -> &'static str {
        "llama3"
    }

    fn first_marker(&self, text: &str) -> Option<usize> {
        super::fence::first_loose_call(text)
    }

    /// Bare calls, and calls in ```json fences.
    fn scan_answer(&self, body: &str, turn: &mut TurnBuilder) {
        super::fence::scan_loose_with(body, turn, HINT, false);
    }

    fn write_call(&self, name: &str, arguments: &Value) -> String {
        scan::call_object_json(name, "parameters", arguments)
    }

    fn instructions(&self, tools: &[ToolSpec]) -> String {
        let how = "To call a function, answer with a JSON object of the form {\"name\": function name, \"parameters\": object of argument names to values}, for example:";
        Teaching::new("# Tools\n\nYou can call these functions. Each is described by one JSON object per line:", how)
            .then("Use real values, never variables. For several calls, write one JSON object per line. The results come back in the next message.")
            .lay_out(self, tools)
    }

    fn grammar_root(&self, g: &mut Gbnf, tools: &[ToolSpec]) -> String {
        let call = json_call(g, tools, "parameters");
        let calls = repeat_sep(&call, "ws ( \";\" ws )?", MAX_CALLS);
        format!("( {} ws )? {calls}", lit(PYTHON_TAG))
    }

    fn trigger_words(&self) -> &'static [&'static str] {
        &[PYTHON_TAG, "{\"name\"", "{ \"name\""]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::{assert_malformed, round_trip, ChatFormat, ParsedCall};
    use serde_json::json;

    #[test]
    fn reads_tagged_and_bare_calls_with_separators() {
        let t = Llama3.parse("<|python_tag|>{\"name\": \"list_dir\", \"parameters\": {\"path\": \".\"}}; {\"name\": \"read_file\", \"parameters\": {\"path\": \"a\"}}\n{\"type\": \"function\", \"name\": \"search\", \"parameters\": {\"pattern\": \"x\"}}");
        assert_eq!(
            t.calls,
            vec![
                ParsedCall::call("list_dir", json!({"path": "."})),
                ParsedCall::call("read_file", json!({"path": "a"})),
                ParsedCall::call("search", json!({"pattern": "x"})),
            ]
        );
        assert_eq!(t.content, "");
    }

    #[test]
    fn json_in_prose_is_not_a_call() {
        let t = Llama3.parse("The config is {\"name\": \"demo\", \"version\": 2}. Next:\n{\"name\": \"read_file\", \"parameters\": {\"path\": \"Cargo.toml\"}}");
        assert_eq!(
            t.calls,
            vec![ParsedCall::call("read_file", json!({"path": "Cargo.toml"}))]
        );
        assert_eq!(
            t.content,
            "The config is {\"name\": \"demo\", \"version\": 2}. Next:"
        );
    }

    #[test]
    fn malformed_cut_off_and_builtin_calls_are_reported() {
        let t = Llama3.parse("{\"name\": \"a\", \"parameters\": {\"x\": 1,}}");
        assert_malformed(&t.calls[0], "not valid JSON");
        let (t, settled) =
            Llama3.parse_partial("ok {\"name\": \"a\", \"parameters\": {\"x\": \"abc");
        assert_malformed(&t.calls[0], "cut off");
        assert_eq!((t.content.as_str(), settled), ("ok", 0));
        let t = Llama3.parse("<|python_tag|>brave_search.call(query=\"x\")\nthen");
        assert_malformed(&t.calls[0], "python_tag");
        assert_eq!(t.content, "then");
    }

    #[test]
    fn render_then_parse_round_trips() {
        let args = json!({"command": "cargo test", "timeout_s": 60});
        let text = round_trip(&Llama3, "run_command", args);
        assert_eq!(
            text,
            "{\"name\": \"run_command\", \"parameters\": {\"command\": \"cargo test\", \"timeout_s\": 60}}"
        );
    }
}
