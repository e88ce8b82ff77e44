//! GLM 4.5+ tool calls: the tool name after `<tool_call>`, then `<arg_key>`/`<arg_value>`
//! pairs, then `</tool_call>`:
//!
//! ```text
//! <tool_call>read_file
//! <arg_key>path</arg_key>
//! <arg_value>src/main.rs</arg_value>
//! </tool_call>
//! ```
//! A value that parses as JSON is JSON (numbers, arrays, objects); anything else is the
//! string between the tags, exactly. GLM 4.7 drops the newlines, and older GLM 4 writes a
//! JSON object after the name; both are read. A call cut off before `</tool_call>` is
//! malformed (more arguments may have been coming); one left open before the next
//! `<tool_call>` is read as it stands.

use serde_json::{Map, Value};

use super::family::{scan_blocks, Ending, Family, Tagged, Teaching, ONE_OBJECT_PER_LINE};
use super::grammar::{lit, one_per_tool, repeat_sep, tagged_args, Gbnf, TaggedArgs, MAX_CALLS};
use super::hermes::{self, CLOSE, OPEN};
use super::scan::{self, malformed, TurnBuilder};
use super::ParsedCall;
use crate::protocol::tool::ToolSpec;

const KEY_OPEN: &str = "<arg_key>";
const KEY_CLOSE: &str = "</arg_key>";
const VALUE_OPEN: &str = "<arg_value>";
const VALUE_CLOSE: &str = "</arg_value>";
const HINT: &str = "write <tool_call>TOOL, then <arg_key>KEY</arg_key><arg_value>VALUE</arg_value> for each argument, then </tool_call>";

#[derive(Debug, Clone, Copy, Default)]
pub struct Glm;

/// Reads what stands between `<tool_call>` and `</tool_call>`.
fn call_body(body: &str) -> ParsedCall {
    let trimmed = body.trim_start();
    if trimmed.starts_with('{') {
        // A Hermes-style JSON call inside the same tags.
        return hermes::call_body(body);
    }
    let name_end = [
        trimmed.find('\n'),
        trimmed.find(KEY_OPEN),
        trimmed.find('{'),
    ]
    .into_iter()
    .flatten()
    .min()
    .unwrap_or(trimmed.len());
    let name = match scan::check_name(&trimmed[..name_end]) {
        Ok(n) => n,
        Err(reason) => return malformed(body, reason),
    };
    let rest = &trimmed[name_end..];
    if !rest.contains(KEY_OPEN) {
        let rest = rest.trim();
        if rest.is_empty() {
            return ParsedCall::call(name, Value::Object(Map::new()));
        }
        if rest.starts_with('{') {
            return match serde_json::from_str::<Value>(rest)
                .map_err(|e| format!("the arguments are not valid JSON: {e}"))
                .and_then(|v| scan::arguments_object(Some(&v)))
            {
                Ok(arguments) => ParsedCall::call(name, arguments),
                Err(reason) => malformed(body, reason),
            };
        }
        return malformed(
            body,
            format!("expected {KEY_OPEN} after the tool name {name}"),
        );
    }
    let mut args = Map::new();
    let mut rest = rest;
    while let Some(k) = rest.find(KEY_OPEN) {
        let after_key = &rest[k + KEY_OPEN.len()..];
        let Some(key_end) = after_key.find(KEY_CLOSE) else {
            return malformed(body, format!("an {KEY_OPEN} has no {KEY_CLOSE}"));
        };
        let key = after_key[..key_end].trim();
        if key.is_empty() {
            return malformed(body, format!("an empty {KEY_OPEN}"));
        }
        let after = after_key[key_end + KEY_CLOSE.len()..].trim_start();
        let Some(value_from) = after.strip_prefix(VALUE_OPEN) else {
            return malformed(
                body,
                format!("argument '{key}' has no {VALUE_OPEN} right after its {KEY_CLOSE}"),
            );
        };
        let Some(value_end) = value_from.find(VALUE_CLOSE) else {
            return malformed(
                body,
                format!("the value of argument '{key}' has no {VALUE_CLOSE}"),
            );
        };
        let value = scan::json_or_string(&value_from[..value_end]);
        if args.insert(key.to_string(), value).is_some() {
            return malformed(body, format!("argument '{key}' is given twice"));
        }
        rest = &value_from[value_end + VALUE_CLOSE.len()..];
    }
    ParsedCall::call(name, Value::Object(args))
}

/// Reads one block between `<tool_call>` and `</tool_call>`, saying what went missing.
fn read_block(body: &str, ending: Ending) -> ParsedCall {
    match ending {
        Ending::Closed => scan::with_hint(call_body(body), HINT),
        Ending::Interrupted => match call_body(body) {
            ParsedCall::Malformed { raw, reason } => {
                malformed(&raw, format!("{reason} (and {CLOSE} is missing); {HINT}"))
            }
            call => call,
        },
        Ending::CutOff => {
            let reason = match call_body(body) {
                ParsedCall::Call { name, .. } => {
                    format!("the call to {name} was cut off before {CLOSE}")
                }
                ParsedCall::Malformed { reason, .. } => {
                    format!("{reason} (the call was cut off before {CLOSE})")
                }
            };
            malformed(body, format!("{reason}; {HINT}"))
        }
    }
}

/// One argument value as it goes between `<arg_value>` tags. Text goes as it is unless it
/// would read back as JSON (or holds the closing tag): then it goes as a JSON string.
fn render_value(value: &Value) -> String {
    match value {
        Value::String(s) => {
            let reads_as_json = serde_json::from_str::<Value>(s).is_ok();
            if reads_as_json || s.contains(VALUE_CLOSE) {
                value.to_string().replace('<', "\\u003c")
            } else {
                s.clone()
            }
        }
        other => scan::spaced_json(other),
    }
}

impl Family for Glm {
    fn format_name(&self) -> &'static str {
        "glm"
    }

    fn first_marker(&self, text: &str) -> Option<usize> {
        text.find(OPEN)
    }

    fn scan_answer(&self, body: &str, turn: &mut TurnBuilder) {
        let blocks = Tagged {
            open: OPEN,
            close: CLOSE,
            read: &read_block,
        };
        scan_blocks(body, turn, &blocks, |prose, turn| turn.text(prose));
    }

    fn write_call(&self, name: &str, arguments: &Value) -> String {
        let mut out = format!("{OPEN}{name}\n");
        for (key, value) in scan::ordered_args(name, arguments) {
            out.push_str(&format!(
                "{KEY_OPEN}{key}{KEY_CLOSE}\n{VALUE_OPEN}{}{VALUE_CLOSE}\n",
                render_value(value)
            ));
        }
        out.push_str(CLOSE);
        out
    }

    fn instructions(&self, tools: &[ToolSpec]) -> String {
        let how = "For each call, write the tool name and its arguments in this XML form:\n<tool_call>TOOL_NAME\n<arg_key>ARGUMENT_1</arg_key>\n<arg_value>VALUE_1</arg_value>\n<arg_key>ARGUMENT_2</arg_key>\n<arg_value>VALUE_2</arg_value>\n...\n</tool_call>\nWrite text values as they are, without quotes; write numbers, booleans, arrays and objects as JSON. For example:";
        Teaching::new(ONE_OBJECT_PER_LINE, how)
            .tools_tagged()
            .lay_out(self, tools)
    }

    fn grammar_root(&self, g: &mut Gbnf, tools: &[ToolSpec]) -> String {
        let named = one_per_tool(g, "named-call", tools, |g, i, spec| {
            let args = tagged_args::<Glm>(g, i, spec);
            format!("{} {args}", lit(&format!("{}\n", spec.name)))
        });
        let call = g.rule("glm-call", format!("{} {named} {}", lit(OPEN), lit(CLOSE)));
        repeat_sep(&call, "\"\\n\"{0,2}", MAX_CALLS)
    }

    fn trigger_words(&self) -> &'static [&'static str] {
        &[OPEN]
    }
}

impl TaggedArgs for Glm {
    const PREFIX: &'static str = "glm";
    const ELEMENT: &'static str = "arg";
    const VALUE_CLOSE: &'static str = VALUE_CLOSE;
    const ANY_AS_JSON: bool = false;

    fn element(key: &str, _text: bool, value: &str) -> String {
        format!(
            "{} {value} {}",
            lit(&format!("{KEY_OPEN}{key}{KEY_CLOSE}\n{VALUE_OPEN}")),
            lit(&format!("{VALUE_CLOSE}\n"))
        )
    }

    fn any_element(raw: &str) -> String {
        format!(
            "{} [a-zA-Z0-9_]{{1,64}} {} {raw} {}",
            lit(KEY_OPEN),
            lit(&format!("{KEY_CLOSE}\n{VALUE_OPEN}")),
            lit(&format!("{VALUE_CLOSE}\n"))
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::{assert_malformed, ChatFormat, ParsedCall};
    use serde_json::json;

    #[test]
    fn reads_calls_as_glm_writes_them() {
        let text = "<think>Need the file.</think>\nLet me read it.\n<tool_call>read_file\n<arg_key>path</arg_key>\n<arg_value>src/main.rs</arg_value>\n<arg_key>offset</arg_key>\n<arg_value>40</arg_value>\n</tool_call>\n<tool_call>list_dir<arg_key>path</arg_key><arg_value>.</arg_value></tool_call>";
        let t = Glm.parse(text);
        assert_eq!(
            t.calls,
            vec![
                ParsedCall::call("read_file", json!({"path": "src/main.rs", "offset": 40})),
                ParsedCall::call("list_dir", json!({"path": "."})),
            ]
        );
        assert!(t.content.ends_with("Let me read it."));
    }

    #[test]
    fn json_values_and_older_shapes() {
        let t = Glm.parse("<tool_call>x\n<arg_key>list</arg_key>\n<arg_value>[\"a\", \"b\"]</arg_value>\n<arg_key>text</arg_key>\n<arg_value>not [json</arg_value>\n</tool_call><tool_call>y\n{\"a\": 1}</tool_call><tool_call>{\"name\": \"z\", \"arguments\": {}}</tool_call>");
        assert_eq!(
            t.calls,
            vec![
                ParsedCall::call("x", json!({"list": ["a", "b"], "text": "not [json"})),
                ParsedCall::call("y", json!({"a": 1})),
                ParsedCall::call("z", json!({})),
            ]
        );
    }

    #[test]
    fn broken_and_cut_off_calls_are_malformed() {
        let t = Glm.parse("<tool_call>x\n<arg_key>a</arg_key>\nno value\n</tool_call>");
        assert_malformed(&t.calls[0], "no <arg_value>");
        let (t, settled) =
            Glm.parse_partial("<tool_call>x\n<arg_key>a</arg_key>\n<arg_value>1</arg_value>\n");
        assert_malformed(&t.calls[0], "cut off");
        assert_eq!(settled, 0);
    }

    #[test]
    fn render_then_parse_round_trips_text_that_looks_like_json() {
        let args = json!({"a": "42", "b": "[x", "c": "</arg_value>", "d": 7, "e": ["p", "q"], "f": "", "g": " spaced "});
        let text = Glm.render_call("t", &args);
        assert!(
            text.starts_with("<tool_call>t\n<arg_key>a</arg_key>\n<arg_value>\"42\"</arg_value>\n")
        );
        assert_eq!(Glm.parse(&text).calls, vec![ParsedCall::call("t", args)]);
    }
}
