//! Tool-call formats, one file per model family.
//!
//! Each format knows four things about its family: how to explain the tools in the system
//! prompt, how to find tool calls in generated text (tolerating prose, partial and malformed
//! calls), how tool results go back, and the lazy grammar that keeps sampling inside the call
//! syntax. A family file holds only its syntax; the shared skeleton (`family`) turns it into
//! a [`ChatFormat`]. The engine is format-agnostic: it only sees `ParsedTurn`s. `detect`
//! picks a format from a GGUF's chat template; `by_name` serves `--chat-format`.

mod bare;
pub mod deepseek;
pub(crate) mod definition;
pub mod dsml;
mod family;
mod fence;
mod gbnf_len;
pub mod generic;
pub mod glm;
mod grammar;
pub mod hermes;
pub mod listing;
pub mod llama3;
pub mod mistral;
pub mod native;
pub mod qwen_coder;
pub(crate) mod scan;

use serde_json::{json, Value};

use crate::protocol::message::{Message, Role};
use crate::protocol::report::ReportBounds;
use crate::protocol::tool::{ToolSpec, READ_FILE, REPORT_TOOL};

pub(crate) use grammar::not_class as gbnf_not_class;

/// One tool call found in a turn.
#[derive(Debug, Clone, PartialEq)]
pub enum ParsedCall {
    Call {
        name: String,
        arguments: Value,
    },
    /// Call markup that could not be understood; `reason` goes back to the child.
    Malformed {
        raw: String,
        reason: String,
    },
}

impl ParsedCall {
    /// A well-formed call.
    pub fn call(name: impl Into<String>, arguments: Value) -> Self {
        Self::Call {
            name: name.into(),
            arguments,
        }
    }
}

/// The two calls several family tests read: list `.`, then read `a`.
#[cfg(test)]
pub(crate) fn list_then_read() -> Vec<ParsedCall> {
    vec![
        ParsedCall::call("list_dir", json!({"path": "."})),
        ParsedCall::call("read_file", json!({"path": "a"})),
    ]
}

/// Renders a call in `format`, asserts that it parses back to the same call, and returns
/// the rendered text.
#[cfg(test)]
#[track_caller]
pub(crate) fn round_trip(format: &dyn ChatFormat, name: &str, arguments: Value) -> String {
    let text = format.render_call(name, &arguments);
    assert_eq!(
        format.parse(&text).calls,
        vec![ParsedCall::call(name, arguments)],
        "{}",
        format.name()
    );
    text
}

/// Asserts that `call` is malformed, for a reason that mentions `needle`.
#[cfg(test)]
#[track_caller]
pub(crate) fn assert_malformed(call: &ParsedCall, needle: &str) {
    match call {
        ParsedCall::Malformed { reason, .. } => assert!(reason.contains(needle), "{reason}"),
        call => panic!("{call:?} is not malformed"),
    }
}

/// A turn split into its free text and its calls, in order of appearance.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ParsedTurn {
    /// The text outside any call markup, trimmed.
    pub content: String,
    pub calls: Vec<ParsedCall>,
}

/// A lazily triggered sampling grammar: sampling is free until a trigger appears, then
/// constrained by the GBNF `grammar` (root rule `root`), which matches from the trigger on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallGrammar {
    pub grammar: String,
    pub trigger_words: Vec<String>,
}

pub trait ChatFormat: Send + Sync {
    /// The `--chat-format` name.
    fn name(&self) -> &'static str;

    /// The system-prompt section that lists the tools and shows the call syntax.
    fn tool_instructions(&self, tools: &[ToolSpec]) -> String;

    /// Finds the calls in one complete generated turn.
    fn parse(&self, text: &str) -> ParsedTurn {
        self.parse_partial(text).0
    }

    /// Renders one call in this family's syntax, exactly as the model would emit it.
    fn render_call(&self, name: &str, arguments: &Value) -> String;

    /// The message that carries a tool's result back to the model.
    fn tool_result(&self, name: &str, output: &str) -> Message {
        Message::tool(name, output)
    }

    /// The words that open a call in this syntax (what a lazy grammar triggers on, the same
    /// words [`ChatFormat::grammar`] gives); empty when nothing opens a call.
    fn call_triggers(&self) -> &'static [&'static str] {
        &[]
    }

    /// The grammar that constrains sampling to this syntax, where the family has one.
    fn grammar(&self, _tools: &[ToolSpec]) -> Option<CallGrammar> {
        None
    }

    /// [`ChatFormat::grammar`] with the report call kept within `bounds` (a wrap-up whose
    /// context is short writes a shorter report).
    fn report_grammar(&self, tools: &[ToolSpec], bounds: ReportBounds) -> Option<CallGrammar> {
        let _ = bounds;
        self.grammar(tools)
    }

    /// Whether a turn ends at its first complete call (for models that go on to imagine the
    /// call's result or repeat the call once it is written).
    fn one_call_per_turn(&self) -> bool {
        false
    }

    /// Parses a turn that may still be growing: the parse of `text` so far, and how many of
    /// its calls are final (closed by their own markup, so no continuation can change them).
    /// The family skeleton implements it from each family's syntax; `parse` is its
    /// complete-turn view.
    fn parse_partial(&self, text: &str) -> (ParsedTurn, usize);
}

/// A wrap-up's report call grammar in `format` for the report tool alone (`report_tools`),
/// with the widest [`ReportBounds`] whose longest text, markup included, takes at most
/// `max_bytes` bytes (and so, under the grammar, at most that many tokens: every sampled
/// token writes a byte at least). Returns the grammar, its bounds and its longest text;
/// the longest text is `None` where it has no bound, and the bounds are
/// [`ReportBounds::MIN`] when even they do not fit. `None` when the format has no grammar.
pub fn report_grammar_within(
    format: &dyn ChatFormat,
    report_tools: &[ToolSpec],
    max_bytes: usize,
) -> Option<(CallGrammar, ReportBounds, Option<usize>)> {
    gbnf_len::widest_report_within(
        max_bytes,
        |bounds| format.report_grammar(report_tools, bounds),
        |grammar| &grammar.grammar,
    )
}

/// The report alone as one JSON object (what a server's wrap-up answers with, no call
/// markup), as a GBNF grammar (root `root`) with the widest [`ReportBounds`] whose longest
/// text takes at most `max_bytes` bytes; with those bounds and that longest text, as
/// [`report_grammar_within`] gives them.
pub fn report_json_grammar_within(max_bytes: usize) -> (String, ReportBounds, Option<usize>) {
    gbnf_len::widest_report_within(
        max_bytes,
        |bounds| Some(grammar::report_json_grammar(bounds)),
        String::as_str,
    )
    .unwrap_or_else(|| {
        let bounds = ReportBounds::MIN;
        (grammar::report_json_grammar(bounds), bounds, None)
    })
}

/// Whether the next turn of `messages` must be a call: always for `generic` (the format of
/// small models with no call markup of their own), and when the last two assistant turns
/// both called nothing: the first got a short nudge, and it did not help. The llama backend
/// then samples under a required-call grammar; a server backend sends a call-only turn.
pub fn call_required(format: &dyn ChatFormat, messages: &[Message]) -> bool {
    if format.name() == "generic" {
        return true;
    }
    let called_nothing = |m: &Message| format.parse(&m.content).calls.is_empty();
    let mut recent = messages.iter().rev().filter(|m| m.role == Role::Assistant);
    matches!((recent.next(), recent.next()), (Some(a), Some(b)) if called_nothing(a) && called_nothing(b))
}

/// The formats `--chat-format` accepts.
pub const FORMAT_NAMES: &[&str] = &[
    "hermes",
    "qwen-coder",
    "llama3",
    "mistral",
    "mistral-v11",
    "deepseek",
    "deepseek-v3.1",
    "dsml",
    "glm",
    "generic",
];

/// Looks a format up by its `--chat-format` name or a common alias (case-insensitive).
pub fn by_name(name: &str) -> Option<Box<dyn ChatFormat>> {
    let name = name.trim().to_ascii_lowercase();
    let format: Box<dyn ChatFormat> = match name.as_str() {
        "hermes" | "hermes2" | "hermes3" | "qwen" | "qwen2" | "qwen2.5" | "qwen2-5" | "qwen3"
        | "qwen-2.5" | "qwen-3" => Box::new(hermes::Hermes),
        "qwen-coder" | "qwen2.5-coder" | "qwen-2.5-coder" | "qwen2-coder" | "qwencoder" => {
            Box::new(qwen_coder::QwenCoder)
        }
        n if n.starts_with("llama3") || n.starts_with("llama-3") || n == "llama" => {
            Box::new(llama3::Llama3)
        }
        "mistral" | "mistral-v3" | "mistral-v7" | "mistral-nemo" | "nemo" => {
            Box::new(mistral::Mistral::ARRAY)
        }
        "mistral-v11" | "magistral" | "devstral" => Box::new(mistral::Mistral::ARGS),
        "deepseek" | "deepseek-v3" | "deepseek3" | "deepseek-r1" | "deepseek-r1-distill" => {
            Box::new(deepseek::DeepSeek::FENCED)
        }
        "deepseek-v3.1" | "deepseek-v31" | "deepseek-v3-1" => Box::new(deepseek::DeepSeek::PLAIN),
        "dsml" | "deepseek-dsml" | "deepseek-v4" | "deepseek-v3.2" | "deepseek-v32" => {
            Box::new(dsml::Dsml)
        }
        n if n.starts_with("glm") => Box::new(glm::Glm),
        "generic" | "plain" | "smollm" | "smollm2" | "gemma" | "gemma2" | "gemma3" => {
            Box::new(generic::Generic)
        }
        _ => return None,
    };
    Some(format)
}

/// Picks a format from a GGUF's Jinja chat template (`tokenizer.chat_template`), its
/// `general.architecture` and its name (`general.basename` or `general.name`, where known).
/// The template's own call markup decides; a template that knows tools but no markup we
/// recognise falls back on the architecture; a template with no tool support at all
/// (SmolLM2, Gemma) gets `generic`, which explains itself fully. A Qwen Coder model gets
/// `qwen-coder` whatever its template teaches: it writes fenced calls anyway.
pub fn detect(
    template: Option<&str>,
    architecture: Option<&str>,
    name: Option<&str>,
) -> &'static str {
    let format = detect_markup(template, architecture);
    let coder = name.is_some_and(|n| {
        let n = n.to_ascii_lowercase();
        n.contains("qwen") && n.contains("coder")
    });
    if coder
        && matches!(format, "hermes" | "generic")
        && !template.is_some_and(|t| t.contains("<function="))
    {
        return "qwen-coder";
    }
    format
}

fn detect_markup(template: Option<&str>, architecture: Option<&str>) -> &'static str {
    if let Some(template) = template {
        if let Some(format) = detect_template(template) {
            return format;
        }
        if !template.contains("tool") {
            return "generic";
        }
    }
    architecture
        .and_then(detect_architecture)
        .unwrap_or("generic")
}

/// Tools as `- name(arg: type, opt?: type): first sentence` lines: [`tool_signatures`] with
/// each description cut to its first sentence, for formats that teach by example.
pub fn tool_signatures_brief(tools: &[ToolSpec]) -> String {
    let brief: Vec<ToolSpec> = tools
        .iter()
        .map(|t| ToolSpec {
            description: first_sentence(&t.description).to_string(),
            ..t.clone()
        })
        .collect();
    tool_signatures(&brief)
}

/// The text up to and including the first `. ` (or all of it).
fn first_sentence(text: &str) -> &str {
    text.find(". ").map_or(text, |i| &text[..=i])
}

/// The format whose call markup appears in a chat template.
fn detect_template(t: &str) -> Option<&'static str> {
    let format = if t.contains("DSML") {
        "dsml"
    } else if t.contains("tool▁call") || t.contains("tool_calls_begin") {
        // V3 and R1 write `function<｜tool▁sep｜>NAME` and a ```json fence; V3.1 neither.
        if t.contains("```json") || t.contains("tool['type']") {
            "deepseek"
        } else {
            "deepseek-v3.1"
        }
    } else if t.contains("<arg_key>") {
        "glm"
    } else if t.contains("[TOOL_CALLS]") {
        if t.contains("[ARGS]") {
            "mistral-v11"
        } else {
            "mistral"
        }
    } else if t.contains("<tool_call>") {
        "hermes"
    } else if t.contains("<|python_tag|>") || t.contains("ipython") {
        "llama3"
    } else {
        return None;
    };
    Some(format)
}

/// The likely format of an architecture whose template did not tell.
fn detect_architecture(arch: &str) -> Option<&'static str> {
    let arch = arch.to_ascii_lowercase();
    let format = if arch.starts_with("qwen") {
        "hermes"
    } else if arch.starts_with("deepseek") {
        "deepseek"
    } else if arch.starts_with("glm4") {
        "glm"
    } else if arch.starts_with("mistral") {
        "mistral"
    } else {
        return None;
    };
    Some(format)
}

/// Tool specs for prompts, one JSON object per line, name first, spaced the way chat
/// templates write JSON.
pub fn tools_json(tools: &[ToolSpec]) -> String {
    tools
        .iter()
        .map(|t| {
            format!(
                "{{\"name\": {}, \"description\": {}, \"parameters\": {}}}",
                Value::String(t.name.clone()),
                Value::String(t.description.clone()),
                scan::spaced_json(&t.parameters)
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Tools as `- name(arg: type, opt?: type): description` lines, required arguments first:
/// easier for a small model to read than JSON schemas.
pub fn tool_signatures(tools: &[ToolSpec]) -> String {
    tools
        .iter()
        .map(|t| {
            let required: Vec<&str> = t
                .parameters
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let props = t.parameters.get("properties").and_then(Value::as_object);
            // Required arguments in the schema's order, then the optional ones.
            let mut args: Vec<(usize, String)> = props
                .into_iter()
                .flatten()
                .map(|(key, schema)| {
                    let place = required.iter().position(|r| r == key);
                    let mark = if place.is_some() { "" } else { "?" };
                    (
                        place.unwrap_or(usize::MAX),
                        format!("{key}{mark}: {}", type_label(schema)),
                    )
                })
                .collect();
            args.sort_by_key(|(place, _)| *place);
            let args: Vec<String> = args.into_iter().map(|(_, a)| a).collect();
            format!("- {}({}): {}", t.name, args.join(", "), t.description)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn type_label(schema: &Value) -> String {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return values
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join(" | ");
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("array") => format!(
            "array of {}",
            schema.get("items").map_or("value".into(), type_label)
        ),
        Some(t) => t.to_string(),
        None => "value".into(),
    }
}

/// The call the instructions show as an example: reading README.md when `read_file` is
/// offered, else the first tool with placeholder values for its required arguments.
pub fn example_call(tools: &[ToolSpec]) -> (String, Value) {
    if tools.iter().any(|t| t.name == READ_FILE) {
        return (READ_FILE.into(), json!({"path": "README.md"}));
    }
    let Some(tool) = tools
        .iter()
        .find(|t| t.name != REPORT_TOOL)
        .or_else(|| tools.first())
    else {
        return (READ_FILE.into(), json!({"path": "README.md"}));
    };
    if tool.name == REPORT_TOOL {
        return (tool.name.clone(), example_report());
    }
    let mut args = serde_json::Map::new();
    let required = tool.parameters.get("required").and_then(Value::as_array);
    for key in required.into_iter().flatten().filter_map(Value::as_str) {
        let kind = tool
            .parameters
            .pointer(&format!("/properties/{key}/type"))
            .and_then(Value::as_str);
        let value = match kind {
            Some("integer" | "number") => json!(1),
            Some("boolean") => json!(true),
            Some("array") => json!([]),
            Some("object") => json!({}),
            _ => json!("..."),
        };
        args.insert(key.to_string(), value);
    }
    (tool.name.clone(), Value::Object(args))
}

/// A report that passes validation, for examples.
pub fn example_report() -> Value {
    json!({
        "status": "continue",
        "summary": "Read README.md; the build script is missing.",
        "evidence": ["README.md mentions make build"],
        "next_steps": ["Write the build script"],
        "blocker": ""
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_triggers_are_the_words_each_grammar_triggers_on() {
        let tools = vec![ToolSpec {
            name: "read_file".into(),
            description: "d".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }];
        for name in FORMAT_NAMES {
            let format = by_name(name).unwrap();
            let grammar = format.grammar(&tools).unwrap();
            let triggers: Vec<String> = format
                .call_triggers()
                .iter()
                .map(|t| (*t).to_string())
                .collect();
            assert_eq!(triggers, grammar.trigger_words, "{name}");
            assert!(!triggers.is_empty(), "{name}");
        }
    }

    #[test]
    fn every_format_name_resolves_to_itself() {
        for name in FORMAT_NAMES {
            let format = by_name(name).unwrap_or_else(|| panic!("{name} is not known"));
            assert_eq!(format.name(), *name);
            assert_eq!(by_name(&name.to_uppercase()).map(|f| f.name()), Some(*name));
        }
        for (alias, name) in [
            ("qwen", "hermes"),
            ("llama-3.1", "llama3"),
            ("deepseek-r1", "deepseek"),
            ("deepseek-v4", "dsml"),
            ("glm4", "glm"),
            ("glm-4.5", "glm"),
            ("magistral", "mistral-v11"),
            ("smollm2", "generic"),
        ] {
            assert_eq!(by_name(alias).map(|f| f.name()), Some(name), "{alias}");
        }
        assert!(by_name("chatgpt").is_none());
    }

    #[test]
    fn tools_json_puts_the_name_first() {
        let spec = ToolSpec {
            name: "t".into(),
            description: "Does \"t\".".into(),
            parameters: json!({"type": "object", "properties": {"a": {"type": "string"}}}),
        };
        assert_eq!(
            tools_json(&[spec.clone(), spec]).lines().next(),
            Some(
                r#"{"name": "t", "description": "Does \"t\".", "parameters": {"properties": {"a": {"type": "string"}}, "type": "object"}}"#
            )
        );
    }

    #[test]
    fn signatures_show_required_arguments_first() {
        let spec = ToolSpec {
            name: "read_file".into(),
            description: "Read a file.".into(),
            parameters: json!({"type": "object", "properties": {
                "limit": {"type": "integer"}, "path": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "mode": {"enum": ["a", "b"]}},
                "required": ["path"]}),
        };
        assert_eq!(
            tool_signatures(&[spec]),
            "- read_file(path: string, limit?: integer, mode?: \"a\" | \"b\", tags?: array of string): Read a file."
        );
    }
}
