//! Llama 3.x tool calls: a bare JSON object `{"name": ..., "parameters": {...}}`, sometimes
//! after the `<|python_tag|>` token, several in a turn separated by `;` or newlines.
//!
//! The calls are read by `bare` (by their shape; after `<|python_tag|>` every object is a
//! call), through `fence` as every JSON family's are; this file teaches the format and its
//! grammar. Results go back in the tool role, which Llama 3.1+ templates render as the
//! `ipython` header.

use serde_json::Value;

use super::bare::PYTHON_TAG;
use super::family::{Family, Teaching};
use super::grammar::{json_call, lit, repeat_sep, Gbnf, MAX_CALLS};
use super::scan::{self, TurnBuilder};
use crate::protocol::tool::ToolSpec;

const HINT: &str = "write {\"name\": \"TOOL\", \"parameters\": {...}} as valid JSON";

#[derive(Debug, Clone, Copy, Default)]
pub struct Llama3;

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
