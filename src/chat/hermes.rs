//! Hermes / Qwen tool calls: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`.
//!
//! The most common open-model syntax. Several calls may follow each other in one turn; a call
//! whose closing tag never came (the turn hit its token cap) is still tried as JSON.

use serde_json::Value;

use super::{tools_json, CallGrammar, ChatFormat, ParsedCall, ParsedTurn};
use crate::tools::ToolSpec;

const OPEN: &str = "<tool_call>";
const CLOSE: &str = "</tool_call>";

#[derive(Debug, Clone, Copy, Default)]
pub struct Hermes;

/// Reads `{"name": .., "arguments": ..}` (arguments may also arrive as a JSON string).
pub fn call_from_json(raw: &str) -> ParsedCall {
    let malformed = |reason: String| ParsedCall::Malformed {
        raw: raw.to_string(),
        reason,
    };
    let value: Value = match serde_json::from_str(raw.trim()) {
        Ok(v) => v,
        Err(e) => return malformed(format!("the tool call is not valid JSON: {e}")),
    };
    let Some(name) = value.get("name").and_then(Value::as_str) else {
        return malformed("the tool call has no string \"name\"".into());
    };
    let arguments = match value.get("arguments").or_else(|| value.get("parameters")) {
        None | Some(Value::Null) => Value::Object(Default::default()),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(v) => v,
            Err(e) => return malformed(format!("\"arguments\" is a string but not JSON: {e}")),
        },
        Some(v) => v.clone(),
    };
    ParsedCall::Call {
        name: name.to_string(),
        arguments,
    }
}

impl ChatFormat for Hermes {
    fn name(&self) -> &'static str {
        "hermes"
    }

    fn tool_instructions(&self, tools: &[ToolSpec]) -> String {
        format!(
            "# Tools\n\nYou may call one or more tools. Their signatures, one JSON object per line:\n<tools>\n{}\n</tools>\n\nTo call a tool, write a JSON object with its name and arguments inside <tool_call></tool_call> tags, like this:\n<tool_call>\n{{\"name\": \"read_file\", \"arguments\": {{\"path\": \"README.md\"}}}}\n</tool_call>\nThe results come back in the next message.",
            tools_json(tools)
        )
    }

    fn parse(&self, text: &str) -> ParsedTurn {
        let mut content = String::new();
        let mut calls = Vec::new();
        let mut rest = text;
        while let Some(start) = rest.find(OPEN) {
            content.push_str(&rest[..start]);
            let after = &rest[start + OPEN.len()..];
            match after.find(CLOSE) {
                Some(end) => {
                    calls.push(call_from_json(&after[..end]));
                    rest = &after[end + CLOSE.len()..];
                }
                None => {
                    calls.push(match call_from_json(after) {
                        ParsedCall::Call { .. } if after.trim().is_empty() => {
                            ParsedCall::Malformed {
                                raw: after.to_string(),
                                reason: "an empty <tool_call> with no closing tag".into(),
                            }
                        }
                        ParsedCall::Malformed { raw, reason } => ParsedCall::Malformed {
                            raw,
                            reason: format!("{reason} (and </tool_call> is missing)"),
                        },
                        call => call,
                    });
                    rest = "";
                }
            }
        }
        content.push_str(rest);
        ParsedTurn {
            content: content.trim().to_string(),
            calls,
        }
    }

    fn render_call(&self, name: &str, arguments: &Value) -> String {
        format!(
            "{OPEN}\n{}\n{CLOSE}",
            serde_json::json!({"name": name, "arguments": arguments})
        )
    }

    fn grammar(&self, _tools: &[ToolSpec]) -> Option<CallGrammar> {
        Some(CallGrammar {
            grammar: format!(
                "root ::= \"{OPEN}\" ws object ws \"{CLOSE}\"\n{}",
                super_json_gbnf()
            ),
            trigger_words: vec![OPEN.to_string()],
        })
    }
}

/// A generic JSON-object GBNF (rule `object`, `ws`).
pub fn super_json_gbnf() -> &'static str {
    r#"object ::= "{" ws ( string ws ":" ws value ( ws "," ws string ws ":" ws value )* )? ws "}"
array ::= "[" ws ( value ( ws "," ws value )* )? ws "]"
value ::= object | array | string | number | "true" | "false" | "null"
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
number ::= "-"? ( [0-9] | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws ::= [ \t\n]{0,8}
"#
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_several_calls_and_keeps_the_text() {
        let t = Hermes.parse("Looking.\n<tool_call>{\"name\": \"list_dir\", \"arguments\": {\"path\": \".\"}}</tool_call>\n<tool_call>\n{\"name\":\"read_file\",\"arguments\":\"{\\\"path\\\":\\\"a\\\"}\"}\n</tool_call>");
        assert_eq!(t.content, "Looking.");
        assert_eq!(
            t.calls,
            vec![
                ParsedCall::Call {
                    name: "list_dir".into(),
                    arguments: json!({"path": "."})
                },
                ParsedCall::Call {
                    name: "read_file".into(),
                    arguments: json!({"path": "a"})
                },
            ]
        );
    }

    #[test]
    fn malformed_and_unclosed_calls_are_reported() {
        let t = Hermes.parse("<tool_call>{\"name\": </tool_call>");
        assert!(
            matches!(&t.calls[0], ParsedCall::Malformed { reason, .. } if reason.contains("not valid JSON"))
        );
        let t = Hermes.parse("<tool_call>{\"name\": \"a\", \"arguments\": {}}");
        assert!(matches!(&t.calls[0], ParsedCall::Call { name, .. } if name == "a"));
        let t = Hermes.parse("<tool_call>{\"name\": \"a\", \"argu");
        assert!(
            matches!(&t.calls[0], ParsedCall::Malformed { reason, .. } if reason.contains("missing"))
        );
    }

    #[test]
    fn render_then_parse_round_trips() {
        let args = json!({"path": "src/main.rs", "offset": 3});
        let text = Hermes.render_call("read_file", &args);
        assert_eq!(
            Hermes.parse(&text).calls,
            vec![ParsedCall::Call {
                name: "read_file".into(),
                arguments: args
            }]
        );
    }
}
