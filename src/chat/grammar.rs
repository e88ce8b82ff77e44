//! GBNF building blocks for the families' sampling grammars (llama.cpp grammar syntax).
//!
//! Every family grammar limits the tool name to the offered tools, the argument keys and
//! value types to each tool's schema, and `ralph_report`'s arguments to a report that passes
//! validation: one alternative per status, its strings trimmed and bounded so a small model
//! cannot loop inside them. The status shapes and the bounds come from `protocol::report`,
//! where the report's rules are written once. Free-text tool arguments (file contents) stay
//! unbounded: the per-turn token cap bounds them, and a bound would cut real files short.
//!
//! llama.cpp expands `x{m,n}` into n rules and refuses a sequence whose repetitions multiply
//! past 2000 (a single bound above 2000 silently becomes unbounded), so every bound here is
//! far below that. Rule names use letters, digits and dashes only, as llama.cpp requires.

use serde_json::Value;

use super::CallGrammar;
use crate::protocol::report::{Need, ReportBounds, ReportStatus};
use crate::protocol::tool::{ToolSpec, REPORT_TOOL};

/// Most calls one constrained turn may hold.
pub const MAX_CALLS: usize = 8;

/// A grammar under construction: named rules, each added once, and how its report call is
/// written: within which bounds, and whether as a wrap-up's (see [`Gbnf::for_report`]).
#[derive(Debug)]
pub(crate) struct Gbnf {
    rules: Vec<(String, String)>,
    report: ReportBounds,
    wrap_up: bool,
}

impl Default for Gbnf {
    fn default() -> Self {
        Self {
            rules: Vec::new(),
            report: ReportBounds::FULL,
            wrap_up: false,
        }
    }
}

impl Gbnf {
    /// A wrap-up's grammar: one report call within `report` whose every part has a known
    /// longest length in bytes (see `gbnf_len`): report text is printable ASCII without `"`
    /// and `\` (a character is a byte, no escapes), at most one space between the report's
    /// JSON tokens, and little whitespace around the call's (a few bytes, not [`json`]'s
    /// sixteen), so the markup leaves the report most of the room.
    pub(crate) fn for_report(report: ReportBounds) -> Self {
        let mut g = Self {
            rules: Vec::new(),
            report,
            wrap_up: true,
        };
        g.rule("ws", "[ \\t\\n]{0,2}");
        g
    }

    /// Adds `name ::= body` unless a rule of that name exists; returns the name.
    pub(crate) fn rule(&mut self, name: &str, body: impl Into<String>) -> String {
        if !self.rules.iter().any(|(n, _)| n == name) {
            self.rules.push((name.to_string(), body.into()));
        }
        name.to_string()
    }

    /// The finished grammar with `root` first.
    pub(crate) fn finish(self, root: &str, trigger_words: &[&str]) -> CallGrammar {
        let mut grammar = format!("root ::= {root}\n");
        for (name, body) in &self.rules {
            grammar.push_str(name);
            grammar.push_str(" ::= ");
            grammar.push_str(body);
            grammar.push('\n');
        }
        CallGrammar {
            grammar,
            trigger_words: trigger_words.iter().map(|w| (*w).to_string()).collect(),
        }
    }
}

/// A GBNF string literal.
pub(crate) fn lit(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        push_escaped(&mut out, c, &['"', '\\']);
    }
    out.push('"');
    out
}

/// Writes `c` as GBNF reads it in a literal or a class: line breaks and tabs as `\n`, `\r`,
/// `\t`, other control characters as `\xNN`, and `specials` behind a backslash.
fn push_escaped(out: &mut String, c: char, specials: &[char]) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if specials.contains(&c) => {
            out.push('\\');
            out.push(c);
        }
        c if (c as u32) < 0x20 || c as u32 == 0x7F => {
            out.push_str(&format!("\\x{:02X}", c as u32));
        }
        c => out.push(c),
    }
}

/// A GBNF negated character class `[^...]` of `chars`, escaped as llama.cpp reads it.
pub(crate) fn not_class(chars: &[char]) -> String {
    let mut out = String::from("[^");
    let mut dash = false;
    for &c in chars {
        match c {
            '-' => dash = true,
            c => push_escaped(&mut out, c, &['\\', ']', '[', '"']),
        }
    }
    if dash {
        out.push('-');
    }
    out.push(']');
    out
}

/// Rule `name`: one alternative per tool, written by `alternative` from the tool's index
/// and spec. Returns the rule name.
pub(crate) fn one_per_tool(
    g: &mut Gbnf,
    name: &str,
    tools: &[ToolSpec],
    mut alternative: impl FnMut(&mut Gbnf, usize, &ToolSpec) -> String,
) -> String {
    let alternatives: Vec<String> = tools
        .iter()
        .enumerate()
        .map(|(i, spec)| alternative(g, i, spec))
        .collect();
    g.rule(name, alternatives.join(" | "))
}

/// Rule `name`: one alternative per report shape (one per status), each the report's fields
/// in order, written by `field` from the field's key and value. Returns the rule name.
pub(crate) fn report_alternatives(
    g: &mut Gbnf,
    name: &str,
    mut field: impl FnMut(&mut Gbnf, &str, ReportValue) -> String,
) -> String {
    let shapes: Vec<String> = report_shapes()
        .iter()
        .map(|shape| {
            shape
                .iter()
                .map(|(key, value)| field(g, key, *value))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    g.rule(name, shapes.join(" | "))
}

/// A JSON array of at most `max` `item`s.
fn json_list(item: &str, max: usize) -> String {
    format!(
        "\"[\" ws ( {} )? ws \"]\"",
        repeat_sep(item, "ws \",\" ws", max)
    )
}

/// `first (sep first){0,max-1}`, written as one sequence.
pub(crate) fn repeat_sep(item: &str, sep: &str, max: usize) -> String {
    if max <= 1 {
        item.to_string()
    } else {
        format!("{item} ( {sep} {item} ){{0,{}}}", max - 1)
    }
}

/// JSON values, with object and array sizes bounded.
pub(crate) fn json(g: &mut Gbnf) {
    g.rule("ws", "[ \\t\\n]{0,16}");
    g.rule(
        "json-value",
        "json-object | json-array | json-string | json-number | json-bool | \"null\"",
    );
    g.rule(
        "json-object",
        format!(
            "\"{{\" ws ( {} )? ws \"}}\"",
            repeat_sep("json-member", "ws \",\" ws", 32)
        ),
    );
    g.rule("json-member", "json-key ws \":\" ws json-value");
    g.rule("json-key", "\"\\\"\" json-char{0,64} \"\\\"\"");
    g.rule("json-array", json_list("json-value", 256));
    g.rule("json-strings", json_list("json-string", 256));
    g.rule("json-string", "\"\\\"\" json-char* \"\\\"\"");
    g.rule(
        "json-char",
        "[^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4} )",
    );
    g.rule("json-int", "\"-\"? ( \"0\" | [1-9] [0-9]{0,17} )");
    g.rule(
        "json-number",
        "json-int ( \".\" [0-9]{1,17} )? ( [eE] [-+]? [0-9]{1,3} )?",
    );
    g.rule("json-bool", "\"true\" | \"false\"");
}

/// A value of one report field, in the shape the status rules allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReportValue {
    Status(&'static str),
    Summary,
    Blocker,
    NoBlocker,
    /// A list of 0 to the bounds' `items` items.
    List,
    /// A list of 1 to the bounds' `items` items.
    List1,
    NoList,
}

impl ReportValue {
    /// Whether the family writes this value as text rather than JSON, where it has a choice.
    pub(crate) fn is_text(self) -> bool {
        matches!(
            self,
            Self::Status(_) | Self::Summary | Self::Blocker | Self::NoBlocker
        )
    }
}

/// The three report shapes, one per status, fields in schema order, read off the status
/// rules in `protocol::report` (a blocker the rules leave open is asked for, never left out).
pub(crate) fn report_shapes() -> [[(&'static str, ReportValue); 5]; 3] {
    let list = |need| match need {
        Need::Empty => ReportValue::NoList,
        Need::NonEmpty => ReportValue::List1,
        Need::Any => ReportValue::List,
    };
    ReportStatus::ALL.map(|status| {
        let rule = status.rule();
        [
            ("status", ReportValue::Status(status.as_str())),
            ("summary", ReportValue::Summary),
            ("evidence", list(rule.evidence)),
            ("next_steps", list(rule.next_steps)),
            (
                "blocker",
                match rule.blocker {
                    Need::Empty => ReportValue::NoBlocker,
                    Need::NonEmpty | Need::Any => ReportValue::Blocker,
                },
            ),
        ]
    })
}

/// The JSON form of a report value (a GBNF sequence): text trimmed and bounded by the
/// grammar's [`ReportBounds`]; in a wrap-up's grammar printable ASCII with one space at most
/// between JSON tokens ([`Gbnf::for_report`]), elsewhere any JSON string character.
pub(crate) fn report_json_value(g: &mut Gbnf, value: ReportValue) -> String {
    json(g);
    let bounds = g.report;
    if g.wrap_up {
        g.rule("report-ws", "\" \"?");
        g.rule("report-first", REPORT_EDGE_CHAR);
        g.rule("report-char", REPORT_INNER_CHAR);
    } else {
        g.rule("report-ws", "ws");
        g.rule(
            "report-first",
            "[^\"\\\\\\x7F\\x00-\\x20] | \"\\\\\" [\"\\\\/] | \"\\\\u\" [0-9a-fA-F]{4}",
        );
        g.rule("report-char", "json-char");
    }
    let text = |g: &mut Gbnf, name: &str, max: usize| {
        g.rule(
            name,
            format!(
                "\"\\\"\" report-first ( report-char{{0,{}}} report-first )? \"\\\"\"",
                max.saturating_sub(2)
            ),
        )
    };
    let item = text(g, "report-item", bounds.item);
    let items = repeat_sep(&item, "report-ws \",\" report-ws", bounds.items);
    match value {
        ReportValue::Status(s) => lit(&format!("\"{s}\"")),
        ReportValue::Summary => text(g, "report-summary", bounds.summary),
        ReportValue::Blocker => text(g, "report-blocker", bounds.blocker),
        ReportValue::NoBlocker => lit("\"\""),
        ReportValue::List => g.rule(
            "report-list",
            format!("\"[\" report-ws ( {items} )? report-ws \"]\""),
        ),
        ReportValue::List1 => g.rule(
            "report-list1",
            format!("\"[\" report-ws {items} report-ws \"]\""),
        ),
        ReportValue::NoList => g.rule("report-none", "\"[\" report-ws \"]\""),
    }
}

/// The first and last character of a wrap-up's report text: printable ASCII but space,
/// `"` and `\`.
const REPORT_EDGE_CHAR: &str = "[!#-\\[\\]-~]";
/// Any other character of a wrap-up's report text: printable ASCII but `"` and `\`.
const REPORT_INNER_CHAR: &str = "[ !#-\\[\\]-~]";

/// The raw-text form of a report value (XML-like families), lists still JSON: text without
/// `<`, bounded as in JSON; in a wrap-up's grammar printable ASCII (and line breaks inside).
/// The empty blocker is the empty sequence.
pub(crate) fn report_raw_value(g: &mut Gbnf, value: ReportValue) -> String {
    let bounds = g.report;
    if g.wrap_up {
        g.rule("raw-first", "[!-;=-~]");
        g.rule("raw-char", "[\\t\\n -;=-~]");
    } else {
        g.rule("raw-first", "[^< \\t\\n\\r]");
        g.rule("raw-char", "[^<]");
    }
    let text = |g: &mut Gbnf, name: &str, max: usize| {
        g.rule(
            name,
            format!(
                "raw-first ( raw-char{{0,{}}} raw-first )?",
                max.saturating_sub(2)
            ),
        )
    };
    match value {
        ReportValue::Status(s) => lit(s),
        ReportValue::Summary => text(g, "raw-summary", bounds.summary),
        ReportValue::Blocker => text(g, "raw-blocker", bounds.blocker),
        ReportValue::NoBlocker => String::new(),
        other => report_json_value(g, other),
    }
}

/// The rules that mark a report call in a grammar: every report call has a summary.
pub(crate) const REPORT_MARKERS: [&str; 2] = ["report-summary", "raw-summary"];

/// The report as a JSON object: one alternative per status.
pub(crate) fn report_json(g: &mut Gbnf) -> String {
    let mut shapes = Vec::new();
    for shape in report_shapes() {
        let fields: Vec<String> = shape
            .iter()
            .map(|(key, value)| {
                format!(
                    "{} report-ws \":\" report-ws {}",
                    lit(&format!("\"{key}\"")),
                    report_json_value(g, *value)
                )
            })
            .collect();
        shapes.push(format!(
            "\"{{\" report-ws {} report-ws \"}}\"",
            fields.join(" report-ws \",\" report-ws ")
        ));
    }
    g.rule("report-args", shapes.join(" | "))
}

/// The report alone as one JSON object, within `bounds`: a server's wrap-up grammar.
pub(crate) fn report_json_grammar(bounds: ReportBounds) -> String {
    let mut g = Gbnf::for_report(bounds);
    let root = report_json(&mut g);
    g.finish(&root, &[]).grammar
}

/// The type of one tool argument, as far as the grammar cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Prop {
    Str,
    Int,
    Num,
    Bool,
    Strings,
    Enum(Vec<String>),
    Any,
}

/// A tool's arguments from its JSON schema. `None` when the schema names no properties
/// (then any object goes).
pub(crate) fn tool_props(spec: &ToolSpec) -> Option<Vec<(String, Prop)>> {
    let props = spec.parameters.get("properties")?.as_object()?;
    if props.is_empty() {
        return None;
    }
    let mut out = Vec::new();
    for (key, schema) in props {
        let enums: Option<Vec<String>> = schema.get("enum").and_then(Value::as_array).map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        });
        let prop = match (enums, schema.get("type").and_then(Value::as_str)) {
            (Some(e), _) if !e.is_empty() => Prop::Enum(e),
            (_, Some("string")) => Prop::Str,
            (_, Some("integer")) => Prop::Int,
            (_, Some("number")) => Prop::Num,
            (_, Some("boolean")) => Prop::Bool,
            (_, Some("array"))
                if schema.pointer("/items/type").and_then(Value::as_str) == Some("string") =>
            {
                Prop::Strings
            }
            _ => Prop::Any,
        };
        out.push((key.clone(), prop));
    }
    Some(out)
}

/// The JSON value rule for one argument type.
pub(crate) fn json_prop_value(g: &mut Gbnf, prop: &Prop) -> String {
    json(g);
    match prop {
        Prop::Str => "json-string".into(),
        Prop::Int => "json-int".into(),
        Prop::Num => "json-number".into(),
        Prop::Bool => "json-bool".into(),
        Prop::Strings => "json-strings".into(),
        Prop::Any => "json-value".into(),
        Prop::Enum(values) => format!(
            "( {} )",
            values
                .iter()
                .map(|v| lit(&Value::String(v.clone()).to_string()))
                .collect::<Vec<_>>()
                .join(" | ")
        ),
    }
}

/// The JSON arguments object of tool `index`: keys from its schema, typed values.
pub(crate) fn json_args(g: &mut Gbnf, index: usize, spec: &ToolSpec) -> String {
    json(g);
    if spec.name == REPORT_TOOL {
        return report_json(g);
    }
    let Some(props) = tool_props(spec) else {
        return "json-object".into();
    };
    let member_of = |g: &mut Gbnf, key: &str, prop: &Prop| {
        format!(
            "{} ws \":\" ws {}",
            lit(&Value::String(key.to_string()).to_string()),
            json_prop_value(g, prop)
        )
    };
    // The required arguments come first, once each, in the schema's order: a small model
    // that may write them in any order writes `write_file`'s content and forgets its path.
    let required = required_keys(spec, &props);
    let optional: Vec<String> = props
        .iter()
        .filter(|(key, _)| !required.contains(key))
        .map(|(key, prop)| member_of(g, key, prop))
        .collect();
    let optional =
        (!optional.is_empty()).then(|| g.rule(&format!("t{index}-member"), optional.join(" | ")));
    let body = if required.is_empty() {
        let member = optional.unwrap_or_default();
        format!(
            "( {} )?",
            repeat_sep(&member, "ws \",\" ws", props.len().clamp(1, 16))
        )
    } else {
        let head: Vec<String> = required
            .iter()
            .filter_map(|key| props.iter().find(|(k, _)| k == key))
            .map(|(key, prop)| member_of(g, key, prop))
            .collect();
        let tail = optional.map_or(String::new(), |member| {
            format!(
                " ( ws \",\" ws {member} ){{0,{}}}",
                (props.len() - required.len()).clamp(1, 16)
            )
        });
        format!("{}{tail}", head.join(" ws \",\" ws "))
    };
    g.rule(
        &format!("t{index}-args"),
        format!("\"{{\" ws {body} ws \"}}\""),
    )
}

/// The keys of `spec`'s `required` list that are among its properties, in the list's order.
fn required_keys(spec: &ToolSpec, props: &[(String, Prop)]) -> Vec<String> {
    spec.parameters
        .get("required")
        .and_then(Value::as_array)
        .map(|keys| {
            keys.iter()
                .filter_map(Value::as_str)
                .filter(|key| props.iter().any(|(k, _)| k == key))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// `{"name": "<tool>", "<args_key>": <args>}` for any offered tool.
pub(crate) fn json_call(g: &mut Gbnf, tools: &[ToolSpec], args_key: &str) -> String {
    json(g);
    let named = one_per_tool(g, &format!("named-{args_key}"), tools, |g, i, spec| {
        let args = json_args(g, i, spec);
        format!(
            "{} ws \",\" ws {} ws \":\" ws {args}",
            lit(&Value::String(spec.name.clone()).to_string()),
            lit(&format!("\"{args_key}\""))
        )
    });
    g.rule(
        &format!("call-{args_key}"),
        format!("\"{{\" ws \"\\\"name\\\"\" ws \":\" ws {named} ws \"}}\""),
    )
}

/// How a family whose arguments are tagged key/value elements (GLM, DSML) writes them in
/// its grammar; [`tagged_args`] is the rest.
pub(crate) trait TaggedArgs {
    /// Rule-name prefix (`glm`, `dsml`).
    const PREFIX: &'static str;
    /// What one element is called in rule names (`arg`, `param`).
    const ELEMENT: &'static str;
    /// The tag that ends a raw text value.
    const VALUE_CLOSE: &'static str;
    /// Whether a value of any type may also be written as JSON (else it is raw text).
    const ANY_AS_JSON: bool;

    /// One element: `key` and its `value` rule, written as raw text (`text`) or as JSON.
    fn element(key: &str, text: bool, value: &str) -> String;

    /// Any element, for a tool whose schema lists no properties; `raw` is the raw-text rule.
    fn any_element(raw: &str) -> String;
}

/// The arguments of tool `index` as tagged elements: the report's shapes, or typed
/// elements from the tool's schema.
pub(crate) fn tagged_args<T: TaggedArgs>(g: &mut Gbnf, index: usize, spec: &ToolSpec) -> String {
    let raw = raw_until(g, T::PREFIX, T::VALUE_CLOSE);
    if spec.name == REPORT_TOOL {
        return report_alternatives(g, &format!("{}-report", T::PREFIX), |g, key, value| {
            T::element(key, value.is_text(), &report_raw_value(g, value))
        });
    }
    let Some(props) = tool_props(spec) else {
        json(g);
        let name = format!("{}-any-{}", T::PREFIX, T::ELEMENT);
        let member = g.rule(&name, T::any_element(&raw));
        return format!("( {member} ){{0,16}}");
    };
    let members: Vec<String> = props
        .iter()
        .map(|(key, prop)| match prop {
            Prop::Str => T::element(key, true, &raw),
            Prop::Any if !T::ANY_AS_JSON => T::element(key, true, &raw),
            Prop::Enum(values) => {
                let alts: Vec<String> = values.iter().map(|v| lit(v)).collect();
                T::element(key, true, &format!("( {} )", alts.join(" | ")))
            }
            Prop::Any => format!(
                "{} | {}",
                T::element(key, true, &raw),
                T::element(key, false, &json_prop_value(g, prop))
            ),
            other => T::element(key, false, &json_prop_value(g, other)),
        })
        .collect();
    let member = g.rule(&format!("t{index}-{}", T::ELEMENT), members.join(" | "));
    format!("( {member} ){{0,{}}}", props.len().clamp(1, 16))
}

/// Raw text that never contains `close` (which must start with `<`), for values written
/// between XML-like tags. Returns the rule name `<prefix>-raw`.
pub(crate) fn raw_until(g: &mut Gbnf, prefix: &str, close: &str) -> String {
    let rest: Vec<char> = close.chars().skip(1).collect();
    let mut breaks = Vec::new();
    for k in 0..rest.len() {
        let seen: String = rest[..k].iter().collect();
        let class = not_class(&[rest[k], '<']);
        breaks.push(if seen.is_empty() {
            class
        } else {
            format!("{} {class}", lit(&seen))
        });
    }
    let brk = g.rule(&format!("{prefix}-break"), breaks.join(" | "));
    let unit = g.rule(
        &format!("{prefix}-unit"),
        format!("[^<] | \"<\"{{1,8}} {brk}"),
    );
    g.rule(&format!("{prefix}-raw"), format!("{unit}* \"<\"{{0,8}}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_and_classes_escape() {
        assert_eq!(lit("a\"b\\c\nd｜"), "\"a\\\"b\\\\c\\nd｜\"");
        assert_eq!(lit("\u{1}"), "\"\\x01\"");
        assert_eq!(not_class(&['-', '<', ']']), "[^<\\]-]");
    }

    #[test]
    fn raw_text_breaks_every_prefix_of_the_closing_tag() {
        let mut g = Gbnf::default();
        let raw = raw_until(&mut g, "v", "</a>");
        let text = g.finish(&raw, &[]).grammar;
        assert!(text.contains("v-break ::= [^/<] | \"/\" [^a<] | \"/a\" [^><]"));
    }

    #[test]
    fn schema_properties_become_props() {
        let spec = ToolSpec {
            name: "t".into(),
            description: String::new(),
            parameters: serde_json::json!({"type": "object", "properties": {
                "a": {"type": "string"}, "b": {"type": "integer"},
                "c": {"type": "array", "items": {"type": "string"}},
                "d": {"enum": ["x", "y"]}, "e": {"type": "object"}}}),
        };
        assert_eq!(
            tool_props(&spec),
            Some(vec![
                ("a".into(), Prop::Str),
                ("b".into(), Prop::Int),
                ("c".into(), Prop::Strings),
                ("d".into(), Prop::Enum(vec!["x".into(), "y".into()])),
                ("e".into(), Prop::Any),
            ])
        );
    }
}
