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

use super::grammar::{
    self, json_prop_value, lit, raw_until, repeat_sep, report_raw_value, report_shapes, tool_props,
    Gbnf, Prop, MAX_CALLS,
};
use super::hermes::{self, CLOSE, OPEN};
use super::scan::{self, malformed, skip_think, TurnBuilder};
use super::{tools_json, CallGrammar, ChatFormat, ParsedCall, ParsedTurn};
use crate::protocol::tool::{ToolSpec, REPORT_TOOL};

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
            return ParsedCall::Call {
                name,
                arguments: Value::Object(Map::new()),
            };
        }
        if rest.starts_with('{') {
            return match serde_json::from_str::<Value>(rest)
                .map_err(|e| format!("the arguments are not valid JSON: {e}"))
                .and_then(|v| scan::arguments_object(Some(&v)))
            {
                Ok(arguments) => ParsedCall::Call { name, arguments },
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
    ParsedCall::Call {
        name,
        arguments: Value::Object(args),
    }
}

impl Glm {
    fn scan(text: &str) -> (ParsedTurn, usize) {
        let mut turn = TurnBuilder::default();
        let body = skip_think(text, text.find(OPEN), &mut turn);
        let mut rest = body;
        while let Some(start) = rest.find(OPEN) {
            turn.text(&rest[..start]);
            let after = &rest[start + OPEN.len()..];
            let close = after.find(CLOSE);
            let next = after.find(OPEN);
            match (close, next) {
                (Some(end), next) if next.is_none_or(|n| end < n) => {
                    turn.call(scan::with_hint(call_body(&after[..end]), HINT), true);
                    rest = &after[end + CLOSE.len()..];
                }
                (_, Some(next)) => {
                    let call = match call_body(&after[..next]) {
                        ParsedCall::Malformed { raw, reason } => {
                            malformed(&raw, format!("{reason} (and {CLOSE} is missing); {HINT}"))
                        }
                        call => call,
                    };
                    turn.call(call, true);
                    rest = &after[next..];
                }
                (_, None) => {
                    let reason = match call_body(after) {
                        ParsedCall::Call { name, .. } => {
                            format!("the call to {name} was cut off before {CLOSE}")
                        }
                        ParsedCall::Malformed { reason, .. } => {
                            format!("{reason} (the call was cut off before {CLOSE})")
                        }
                    };
                    turn.call(malformed(after, format!("{reason}; {HINT}")), false);
                    rest = "";
                }
            }
        }
        turn.text(rest);
        turn.finish()
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

impl ChatFormat for Glm {
    fn name(&self) -> &'static str {
        "glm"
    }

    fn tool_instructions(&self, tools: &[ToolSpec]) -> String {
        let (name, args) = super::example_call(tools);
        format!(
            "# Tools\n\nYou may call one or more tools. Their signatures, one JSON object per line:\n<tools>\n{}\n</tools>\n\nFor each call, write the tool name and its arguments in this XML form:\n<tool_call>TOOL_NAME\n<arg_key>ARGUMENT_1</arg_key>\n<arg_value>VALUE_1</arg_value>\n<arg_key>ARGUMENT_2</arg_key>\n<arg_value>VALUE_2</arg_value>\n...\n</tool_call>\nWrite text values as they are, without quotes; write numbers, booleans, arrays and objects as JSON. For example:\n{}\nThe results come back in the next message.",
            tools_json(tools),
            self.render_call(&name, &args)
        )
    }

    fn parse_partial(&self, text: &str) -> (ParsedTurn, usize) {
        Self::scan(text)
    }

    fn render_call(&self, name: &str, arguments: &Value) -> String {
        let mut out = format!("{OPEN}{name}\n");
        for (key, value) in scan::ordered_args(name, arguments) {
            {
                out.push_str(&format!(
                    "{KEY_OPEN}{key}{KEY_CLOSE}\n{VALUE_OPEN}{}{VALUE_CLOSE}\n",
                    render_value(value)
                ));
            }
        }
        out.push_str(CLOSE);
        out
    }

    fn grammar(&self, tools: &[ToolSpec]) -> Option<CallGrammar> {
        if tools.is_empty() {
            return None;
        }
        let mut g = Gbnf::default();
        let alternatives: Vec<String> = tools
            .iter()
            .enumerate()
            .map(|(i, spec)| {
                let args = args_rule(&mut g, i, spec);
                format!("{} {args}", lit(&format!("{}\n", spec.name)))
            })
            .collect();
        let named = g.rule("named-call", alternatives.join(" | "));
        let call = g.rule("glm-call", format!("{} {named} {}", lit(OPEN), lit(CLOSE)));
        let root = repeat_sep(&call, "\"\\n\"{0,2}", MAX_CALLS);
        Some(g.finish(&root, &[OPEN]))
    }
}

/// One argument in the grammar.
fn arg(key: &str, value: &str) -> String {
    format!(
        "{} {value} {}",
        lit(&format!("{KEY_OPEN}{key}{KEY_CLOSE}\n{VALUE_OPEN}")),
        lit(&format!("{VALUE_CLOSE}\n"))
    )
}

/// The arguments of tool `index`: the report's shapes, or schema-typed arguments.
fn args_rule(g: &mut Gbnf, index: usize, spec: &ToolSpec) -> String {
    let raw = raw_until(g, "glm", VALUE_CLOSE);
    if spec.name == REPORT_TOOL {
        let shapes: Vec<String> = report_shapes()
            .iter()
            .map(|shape| {
                shape
                    .iter()
                    .map(|(key, value)| arg(key, &report_raw_value(g, *value)))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        return g.rule("glm-report", shapes.join(" | "));
    }
    let Some(props) = tool_props(spec) else {
        grammar::json(g);
        let any = format!(
            "{} [a-zA-Z0-9_]{{1,64}} {} {raw} {}",
            lit(KEY_OPEN),
            lit(&format!("{KEY_CLOSE}\n{VALUE_OPEN}")),
            lit(&format!("{VALUE_CLOSE}\n"))
        );
        let member = g.rule("glm-any-arg", any);
        return format!("( {member} ){{0,16}}");
    };
    let members: Vec<String> = props
        .iter()
        .map(|(key, prop)| match prop {
            Prop::Str | Prop::Any => arg(key, &raw),
            Prop::Enum(values) => {
                let alts: Vec<String> = values.iter().map(|v| lit(v)).collect();
                arg(key, &format!("( {} )", alts.join(" | ")))
            }
            other => arg(key, &json_prop_value(g, other)),
        })
        .collect();
    let member = g.rule(&format!("t{index}-arg"), members.join(" | "));
    format!("( {member} ){{0,{}}}", props.len().clamp(1, 16))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str, arguments: Value) -> ParsedCall {
        ParsedCall::Call {
            name: name.into(),
            arguments,
        }
    }

    #[test]
    fn reads_calls_as_glm_writes_them() {
        let text = "<think>Need the file.</think>\nLet me read it.\n<tool_call>read_file\n<arg_key>path</arg_key>\n<arg_value>src/main.rs</arg_value>\n<arg_key>offset</arg_key>\n<arg_value>40</arg_value>\n</tool_call>\n<tool_call>list_dir<arg_key>path</arg_key><arg_value>.</arg_value></tool_call>";
        let t = Glm.parse(text);
        assert_eq!(
            t.calls,
            vec![
                call("read_file", json!({"path": "src/main.rs", "offset": 40})),
                call("list_dir", json!({"path": "."})),
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
                call("x", json!({"list": ["a", "b"], "text": "not [json"})),
                call("y", json!({"a": 1})),
                call("z", json!({})),
            ]
        );
    }

    #[test]
    fn broken_and_cut_off_calls_are_malformed() {
        let t = Glm.parse("<tool_call>x\n<arg_key>a</arg_key>\nno value\n</tool_call>");
        assert!(
            matches!(&t.calls[0], ParsedCall::Malformed { reason, .. } if reason.contains("no <arg_value>"))
        );
        let (t, settled) =
            Glm.parse_partial("<tool_call>x\n<arg_key>a</arg_key>\n<arg_value>1</arg_value>\n");
        assert!(
            matches!(&t.calls[0], ParsedCall::Malformed { reason, .. } if reason.contains("cut off"))
        );
        assert_eq!(settled, 0);
    }

    #[test]
    fn render_then_parse_round_trips_text_that_looks_like_json() {
        let args = json!({"a": "42", "b": "[x", "c": "</arg_value>", "d": 7, "e": ["p", "q"], "f": "", "g": " spaced "});
        let text = Glm.render_call("t", &args);
        assert!(
            text.starts_with("<tool_call>t\n<arg_key>a</arg_key>\n<arg_value>\"42\"</arg_value>\n")
        );
        assert_eq!(Glm.parse(&text).calls, vec![call("t", args)]);
    }
}
