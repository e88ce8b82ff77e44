//! DeepSeek DSML tool calls (the V3.2 / V4 family): XML-like markup with `｜DSML｜` tags.
//!
//! ```text
//! <｜DSML｜function_calls>
//! <｜DSML｜invoke name="read_file">
//! <｜DSML｜parameter name="path" string="true">src/main.rs</｜DSML｜parameter>
//! <｜DSML｜parameter name="offset" string="false">40</｜DSML｜parameter>
//! </｜DSML｜invoke>
//! </｜DSML｜function_calls>
//! ```
//! A `string="true"` value is the raw text between the tags, exactly; a `string="false"`
//! value is JSON (numbers, booleans, arrays, objects). Tags also match with ASCII `|`. An
//! invoke cut off before `</｜DSML｜invoke>` is malformed (more parameters may have been
//! coming); one left open before the next invoke is read as it stands.

use serde_json::{Map, Value};

use super::grammar::{
    self, json_prop_value, lit, raw_until, repeat_sep, report_raw_value, report_shapes, tool_props,
    Gbnf, Prop, MAX_CALLS,
};
use super::scan::{self, malformed, skip_think, TurnBuilder};
use super::{example_call, tools_json, CallGrammar, ChatFormat, ParsedCall, ParsedTurn};
use crate::protocol::tool::{ToolSpec, REPORT_TOOL};

const CALLS_OPEN: &str = "<｜DSML｜function_calls>";
const CALLS_CLOSE: &str = "</｜DSML｜function_calls>";
const INVOKE_CLOSE: &str = "</｜DSML｜invoke>";
const PARAM_CLOSE: &str = "</｜DSML｜parameter>";
const HINT: &str = "each call is <｜DSML｜invoke name=\"TOOL\"> with <｜DSML｜parameter name=\"KEY\" string=\"true|false\">VALUE</｜DSML｜parameter> children and </｜DSML｜invoke>";

#[derive(Debug, Clone, Copy, Default)]
pub struct Dsml;

/// One DSML tag found in the text.
#[derive(Debug, Clone, Copy)]
struct Tag<'t> {
    closing: bool,
    kind: &'t str,
    attrs: &'t str,
    start: usize,
    end: usize,
}

/// The DSML tag starting exactly at `text[at]`, if one does.
fn tag_at(text: &str, at: usize) -> Option<Tag<'_>> {
    let mut rest = text.get(at..)?.strip_prefix('<')?;
    let closing = rest.starts_with('/');
    if closing {
        rest = &rest[1..];
    }
    rest = rest.strip_prefix(['｜', '|'])?;
    rest = rest.strip_prefix("DSML")?;
    rest = rest.strip_prefix(['｜', '|'])?;
    let kind_len = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    let kind = &rest[..kind_len];
    let after_kind = &rest[kind_len..];
    let close = after_kind.find(['>', '<'])?;
    if after_kind.as_bytes().get(close) != Some(&b'>') || kind.is_empty() {
        return None;
    }
    let end = text.len() - after_kind.len() + close + 1;
    Some(Tag {
        closing,
        kind,
        attrs: &after_kind[..close],
        start: at,
        end,
    })
}

/// The next DSML tag at or after `from`.
fn next_tag(text: &str, from: usize) -> Option<Tag<'_>> {
    let mut at = from;
    loop {
        let i = at + text.get(at..)?.find('<')?;
        if let Some(tag) = tag_at(text, i) {
            return Some(tag);
        }
        at = i + 1;
    }
}

/// Where the first call markup (`function_calls` or `invoke` opening) starts.
fn first_call_tag(text: &str) -> Option<usize> {
    let mut at = 0;
    while let Some(tag) = next_tag(text, at) {
        if !tag.closing && (tag.kind == "function_calls" || tag.kind == "invoke") {
            return Some(tag.start);
        }
        at = tag.end;
    }
    None
}

/// An attribute's value: `key="value"` (or single quotes).
fn attr<'t>(attrs: &'t str, key: &str) -> Option<&'t str> {
    let mut rest = attrs;
    while let Some(i) = rest.find(key) {
        let before_ok = i == 0 || rest[..i].ends_with(char::is_whitespace);
        let after = rest[i + key.len()..].trim_start();
        if let (true, Some(value)) = (before_ok, after.strip_prefix('=')) {
            let value = value.trim_start();
            let quote = value.chars().next()?;
            if quote == '"' || quote == '\'' {
                let inner = &value[1..];
                return inner.find(quote).map(|end| &inner[..end]);
            }
        }
        rest = &rest[i + key.len()..];
    }
    None
}

/// Reads one invoke from its opening tag: the call, whether it is final, and where it ends.
fn invoke(text: &str, open: Tag<'_>) -> (ParsedCall, bool, usize) {
    let mut errors: Vec<String> = Vec::new();
    let name = match attr(open.attrs, "name").map(scan::check_name) {
        Some(Ok(name)) => name,
        Some(Err(reason)) => {
            errors.push(reason);
            String::new()
        }
        None => {
            errors.push("the invoke tag has no name=\"TOOL\" attribute".into());
            String::new()
        }
    };
    let mut args = Map::new();
    let mut at = open.end;
    let (end, final_) = loop {
        let Some(tag) = next_tag(text, at) else {
            let shown = if name.is_empty() { "a tool" } else { &name };
            errors.push(format!(
                "the call to {shown} was cut off before {INVOKE_CLOSE}"
            ));
            break (text.len(), false);
        };
        match (tag.kind, tag.closing) {
            ("invoke", true) => break (tag.end, true),
            ("invoke", false) | ("function_calls", _) => break (tag.start, true),
            ("parameter", false) => {
                let value_end = next_tag(text, tag.end);
                match value_end {
                    Some(close) if close.kind == "parameter" && close.closing => {
                        let raw = &text[tag.end..close.start];
                        parameter(tag.attrs, raw, &mut args, &mut errors);
                        at = close.end;
                    }
                    Some(other) => {
                        let key = attr(tag.attrs, "name").unwrap_or("?");
                        errors.push(format!("parameter '{key}' has no {PARAM_CLOSE}"));
                        at = other.start;
                    }
                    None => {
                        let key = attr(tag.attrs, "name").unwrap_or("?");
                        errors.push(format!("the call was cut off inside parameter '{key}'"));
                        break (text.len(), false);
                    }
                }
            }
            _ => at = tag.end,
        }
    };
    let raw = &text[open.start..end];
    let call = match errors.first() {
        Some(reason) => malformed(raw, format!("{reason}; {HINT}")),
        None => ParsedCall::Call {
            name,
            arguments: Value::Object(args),
        },
    };
    (call, final_, end)
}

/// Adds one parameter to `args`, or a reason to `errors`.
fn parameter(attrs: &str, raw: &str, args: &mut Map<String, Value>, errors: &mut Vec<String>) {
    let Some(key) = attr(attrs, "name").map(str::trim).filter(|k| !k.is_empty()) else {
        errors.push("a parameter tag has no name=\"KEY\" attribute".into());
        return;
    };
    let value = match attr(attrs, "string").map(str::trim) {
        Some("true") => Value::String(raw.to_string()),
        Some("false") => match serde_json::from_str::<Value>(raw) {
            Ok(v) => v,
            Err(e) => {
                errors.push(format!(
                    "parameter '{key}' has string=\"false\" but its value is not JSON ({e}); use string=\"true\" for text"
                ));
                return;
            }
        },
        _ => scan::json_or_string(raw),
    };
    if args.insert(key.to_string(), value).is_some() {
        errors.push(format!("parameter '{key}' is given twice"));
    }
}

impl Dsml {
    fn scan(text: &str) -> (ParsedTurn, usize) {
        let mut turn = TurnBuilder::default();
        let first = first_call_tag(text);
        let body = skip_think(text, first, &mut turn);
        let mut at = 0;
        let mut prose_from = 0;
        while let Some(tag) = next_tag(body, at) {
            match (tag.kind, tag.closing) {
                ("function_calls", _) => {
                    turn.text(&body[prose_from..tag.start]);
                    at = tag.end;
                    prose_from = at;
                }
                ("invoke", false) => {
                    turn.text(&body[prose_from..tag.start]);
                    let (call, final_, end) = invoke(body, tag);
                    turn.call(call, final_);
                    at = end;
                    prose_from = end;
                }
                _ => at = tag.end,
            }
        }
        turn.text(&body[prose_from..]);
        turn.finish()
    }
}

/// A value as a `string="..."` attribute and the text between the parameter tags.
fn render_value(value: &Value) -> (&'static str, String) {
    match value {
        Value::String(s) if !s.contains("DSML") => ("true", s.clone()),
        Value::String(s) => (
            "false",
            Value::String(s.clone())
                .to_string()
                .replace('｜', "\\uff5c")
                .replace('|', "\\u007c"),
        ),
        other => ("false", scan::spaced_json(other)),
    }
}

impl ChatFormat for Dsml {
    fn name(&self) -> &'static str {
        "dsml"
    }

    fn tool_instructions(&self, tools: &[ToolSpec]) -> String {
        let (name, args) = example_call(tools);
        format!(
            "## Tools\n\nYou have these tools, each described by one JSON object with its parameter schema:\n{}\n\nTo call tools, write a {CALLS_OPEN} block: one <｜DSML｜invoke name=\"TOOL\"> element per call, holding one <｜DSML｜parameter name=\"KEY\" string=\"true|false\">VALUE{PARAM_CLOSE} element per argument. Set string=\"true\" for text, and write the text as it is, without quotes or escaping; set string=\"false\" for numbers, booleans, arrays and objects, and write them as JSON. For example:\n{}\nThe results come back in the next message.",
            tools_json(tools),
            self.render_call(&name, &args)
        )
    }

    fn parse_partial(&self, text: &str) -> (ParsedTurn, usize) {
        Self::scan(text)
    }

    fn render_call(&self, name: &str, arguments: &Value) -> String {
        let mut out = format!("{CALLS_OPEN}\n<｜DSML｜invoke name=\"{name}\">\n");
        for (key, value) in scan::ordered_args(name, arguments) {
            {
                let (string, text) = render_value(value);
                out.push_str(&format!(
                    "<｜DSML｜parameter name=\"{key}\" string=\"{string}\">{text}{PARAM_CLOSE}\n"
                ));
            }
        }
        out.push_str(INVOKE_CLOSE);
        out.push('\n');
        out.push_str(CALLS_CLOSE);
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
                let params = params_rule(&mut g, i, spec);
                format!("{} {params}", lit(&format!("{}\">\n", spec.name)))
            })
            .collect();
        let named = g.rule("named-invoke", alternatives.join(" | "));
        let invoke = g.rule(
            "dsml-invoke",
            format!(
                "{} {named} {}",
                lit("<｜DSML｜invoke name=\""),
                lit(&format!("{INVOKE_CLOSE}\n"))
            ),
        );
        let root = format!(
            "{} {} {}",
            lit(&format!("{CALLS_OPEN}\n")),
            repeat_sep(&invoke, "", MAX_CALLS),
            lit(CALLS_CLOSE)
        );
        Some(g.finish(&root, &[CALLS_OPEN]))
    }
}

/// One parameter element in the grammar: `string` is "true" or "false".
fn param(key: &str, string: &str, value: &str) -> String {
    format!(
        "{} {value} {}",
        lit(&format!(
            "<｜DSML｜parameter name=\"{key}\" string=\"{string}\">"
        )),
        lit(&format!("{PARAM_CLOSE}\n"))
    )
}

/// The parameters of tool `index`: the report's shapes, or schema-typed parameters.
fn params_rule(g: &mut Gbnf, index: usize, spec: &ToolSpec) -> String {
    let raw = raw_until(g, "dsml", PARAM_CLOSE);
    if spec.name == REPORT_TOOL {
        let shapes: Vec<String> = report_shapes()
            .iter()
            .map(|shape| {
                shape
                    .iter()
                    .map(|(key, value)| {
                        let string = if value.is_text() { "true" } else { "false" };
                        param(key, string, &report_raw_value(g, *value))
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        return g.rule("dsml-report", shapes.join(" | "));
    }
    let Some(props) = tool_props(spec) else {
        grammar::json(g);
        let any = format!(
            "{} [a-zA-Z0-9_]{{1,64}} ( {} {raw} | {} json-value ) {}",
            lit("<｜DSML｜parameter name=\""),
            lit("\" string=\"true\">"),
            lit("\" string=\"false\">"),
            lit(&format!("{PARAM_CLOSE}\n"))
        );
        let member = g.rule("dsml-any-param", any);
        return format!("( {member} ){{0,16}}");
    };
    let members: Vec<String> = props
        .iter()
        .map(|(key, prop)| match prop {
            Prop::Str => param(key, "true", &raw),
            Prop::Enum(values) => {
                let alts: Vec<String> = values.iter().map(|v| lit(v)).collect();
                param(key, "true", &format!("( {} )", alts.join(" | ")))
            }
            Prop::Any => format!(
                "{} | {}",
                param(key, "true", &raw),
                param(key, "false", &json_prop_value(g, prop))
            ),
            other => param(key, "false", &json_prop_value(g, other)),
        })
        .collect();
    let member = g.rule(&format!("t{index}-param"), members.join(" | "));
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
    fn reads_typed_parameters() {
        let text = "Reading it.\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"read_file\">\n<｜DSML｜parameter name=\"path\" string=\"true\">src/main.rs</｜DSML｜parameter>\n<｜DSML｜parameter name=\"offset\" string=\"false\">40</｜DSML｜parameter>\n</｜DSML｜invoke>\n<｜DSML｜invoke name=\"list_dir\">\n<｜DSML｜parameter name=\"path\" string=\"true\">.</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>";
        let t = Dsml.parse(text);
        assert_eq!(t.content, "Reading it.");
        assert_eq!(
            t.calls,
            vec![
                call("read_file", json!({"path": "src/main.rs", "offset": 40})),
                call("list_dir", json!({"path": "."})),
            ]
        );
    }

    #[test]
    fn string_values_stay_exact_and_json_values_must_parse() {
        let t = Dsml.parse("<|DSML|function_calls><|DSML|invoke name=\"x\"><|DSML|parameter name=\"a\" string=\"true\">  42 \"q\"\n</|DSML|parameter></|DSML|invoke></|DSML|function_calls>");
        assert_eq!(t.calls, vec![call("x", json!({"a": "  42 \"q\"\n"}))]);
        let t = Dsml.parse("<｜DSML｜function_calls><｜DSML｜invoke name=\"x\"><｜DSML｜parameter name=\"a\" string=\"false\">[1, 2</｜DSML｜parameter></｜DSML｜invoke></｜DSML｜function_calls>");
        assert!(
            matches!(&t.calls[0], ParsedCall::Malformed { reason, .. } if reason.contains("not JSON"))
        );
    }

    #[test]
    fn cut_off_invokes_are_malformed_and_unsettled() {
        let (t, settled) = Dsml.parse_partial("<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"read_file\">\n<｜DSML｜parameter name=\"path\" string=\"true\">src/main.rs</｜DSML｜parameter>\n");
        assert!(
            matches!(&t.calls[0], ParsedCall::Malformed { reason, .. } if reason.contains("cut off"))
        );
        assert_eq!(settled, 0);
        let t = Dsml.parse("<｜DSML｜function_calls><｜DSML｜invoke name=\"a\"><｜DSML｜parameter name=\"p\" string=\"true\">x<｜DSML｜invoke name=\"b\"></｜DSML｜invoke>");
        assert!(
            matches!(&t.calls[0], ParsedCall::Malformed { reason, .. } if reason.contains("no </｜DSML｜parameter>"))
        );
        assert_eq!(t.calls[1], call("b", json!({})));
    }

    #[test]
    fn render_then_parse_round_trips() {
        let args = json!({"path": "a.md", "new": "line \"1\"\nzwei ü", "count": 2, "tags": ["x"], "odd": "<｜DSML｜x>"});
        let text = Dsml.render_call("edit_file", &args);
        assert!(text
            .contains("<｜DSML｜parameter name=\"count\" string=\"false\">2</｜DSML｜parameter>"));
        assert_eq!(Dsml.parse(&text).calls, vec![call("edit_file", args)]);
    }
}
