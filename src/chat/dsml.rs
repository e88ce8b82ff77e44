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

use super::family::{Family, Teaching, WITH_SCHEMAS};
use super::grammar::{lit, one_per_tool, repeat_sep, tagged_args, Gbnf, TaggedArgs, MAX_CALLS};
use super::scan::{self, malformed, TurnBuilder};
use super::ParsedCall;
use crate::protocol::tool::ToolSpec;

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
        None => ParsedCall::call(name, Value::Object(args)),
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

impl Family for Dsml {
    fn format_name(&self) -> &'static str {
        "dsml"
    }

    fn first_marker(&self, text: &str) -> Option<usize> {
        first_call_tag(text)
    }

    fn scan_answer(&self, body: &str, turn: &mut TurnBuilder) {
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
    }

    fn write_call(&self, name: &str, arguments: &Value) -> String {
        let mut out = format!("{CALLS_OPEN}\n<｜DSML｜invoke name=\"{name}\">\n");
        for (key, value) in scan::ordered_args(name, arguments) {
            let (string, text) = render_value(value);
            out.push_str(&format!(
                "<｜DSML｜parameter name=\"{key}\" string=\"{string}\">{text}{PARAM_CLOSE}\n"
            ));
        }
        out.push_str(INVOKE_CLOSE);
        out.push('\n');
        out.push_str(CALLS_CLOSE);
        out
    }

    fn instructions(&self, tools: &[ToolSpec]) -> String {
        let how = format!("To call tools, write a {CALLS_OPEN} block: one <｜DSML｜invoke name=\"TOOL\"> element per call, holding one <｜DSML｜parameter name=\"KEY\" string=\"true|false\">VALUE{PARAM_CLOSE} element per argument. Set string=\"true\" for text, and write the text as it is, without quotes or escaping; set string=\"false\" for numbers, booleans, arrays and objects, and write them as JSON. For example:");
        Teaching::new(WITH_SCHEMAS, how).lay_out(self, tools)
    }

    fn grammar_root(&self, g: &mut Gbnf, tools: &[ToolSpec]) -> String {
        let named = one_per_tool(g, "named-invoke", tools, |g, i, spec| {
            let params = tagged_args::<Dsml>(g, i, spec);
            format!("{} {params}", lit(&format!("{}\">\n", spec.name)))
        });
        let invoke = g.rule(
            "dsml-invoke",
            format!(
                "{} {named} {}",
                lit("<｜DSML｜invoke name=\""),
                lit(&format!("{INVOKE_CLOSE}\n"))
            ),
        );
        format!(
            "{} {} {}",
            lit(&format!("{CALLS_OPEN}\n")),
            repeat_sep(&invoke, "", MAX_CALLS),
            lit(CALLS_CLOSE)
        )
    }

    fn trigger_words(&self) -> &'static [&'static str] {
        &[CALLS_OPEN]
    }
}

impl TaggedArgs for Dsml {
    const PREFIX: &'static str = "dsml";
    const ELEMENT: &'static str = "param";
    const VALUE_CLOSE: &'static str = PARAM_CLOSE;
    const ANY_AS_JSON: bool = true;

    fn element(key: &str, text: bool, value: &str) -> String {
        format!(
            "{} {value} {}",
            lit(&format!(
                "<｜DSML｜parameter name=\"{key}\" string=\"{text}\">"
            )),
            lit(&format!("{PARAM_CLOSE}\n"))
        )
    }

    fn any_element(raw: &str) -> String {
        format!(
            "{} [a-zA-Z0-9_]{{1,64}} ( {} {raw} | {} json-value ) {}",
            lit("<｜DSML｜parameter name=\""),
            lit("\" string=\"true\">"),
            lit("\" string=\"false\">"),
            lit(&format!("{PARAM_CLOSE}\n"))
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::{assert_malformed, round_trip, ChatFormat, ParsedCall};
    use serde_json::json;

    #[test]
    fn reads_typed_parameters() {
        let text = "Reading it.\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"read_file\">\n<｜DSML｜parameter name=\"path\" string=\"true\">src/main.rs</｜DSML｜parameter>\n<｜DSML｜parameter name=\"offset\" string=\"false\">40</｜DSML｜parameter>\n</｜DSML｜invoke>\n<｜DSML｜invoke name=\"list_dir\">\n<｜DSML｜parameter name=\"path\" string=\"true\">.</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>";
        let t = Dsml.parse(text);
        assert_eq!(t.content, "Reading it.");
        assert_eq!(
            t.calls,
            vec![
                ParsedCall::call("read_file", json!({"path": "src/main.rs", "offset": 40})),
                ParsedCall::call("list_dir", json!({"path": "."})),
            ]
        );
    }

    #[test]
    fn string_values_stay_exact_and_json_values_must_parse() {
        let t = Dsml.parse("<|DSML|function_calls><|DSML|invoke name=\"x\"><|DSML|parameter name=\"a\" string=\"true\">  42 \"q\"\n</|DSML|parameter></|DSML|invoke></|DSML|function_calls>");
        assert_eq!(
            t.calls,
            vec![ParsedCall::call("x", json!({"a": "  42 \"q\"\n"}))]
        );
        let t = Dsml.parse("<｜DSML｜function_calls><｜DSML｜invoke name=\"x\"><｜DSML｜parameter name=\"a\" string=\"false\">[1, 2</｜DSML｜parameter></｜DSML｜invoke></｜DSML｜function_calls>");
        assert_malformed(&t.calls[0], "not JSON");
    }

    #[test]
    fn cut_off_invokes_are_malformed_and_unsettled() {
        let (t, settled) = Dsml.parse_partial("<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"read_file\">\n<｜DSML｜parameter name=\"path\" string=\"true\">src/main.rs</｜DSML｜parameter>\n");
        assert_malformed(&t.calls[0], "cut off");
        assert_eq!(settled, 0);
        let t = Dsml.parse("<｜DSML｜function_calls><｜DSML｜invoke name=\"a\"><｜DSML｜parameter name=\"p\" string=\"true\">x<｜DSML｜invoke name=\"b\"></｜DSML｜invoke>");
        assert_malformed(&t.calls[0], "no </｜DSML｜parameter>");
        assert_eq!(t.calls[1], ParsedCall::call("b", json!({})));
    }

    #[test]
    fn render_then_parse_round_trips() {
        let args = json!({"path": "a.md", "new": "line \"1\"\nzwei ü", "count": 2, "tags": ["x"], "odd": "<｜DSML｜x>"});
        let text = round_trip(&Dsml, "edit_file", args);
        assert!(text
            .contains("<｜DSML｜parameter name=\"count\" string=\"false\">2</｜DSML｜parameter>"));
    }
}
