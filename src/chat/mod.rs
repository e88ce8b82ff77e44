//! Tool-call formats, one file per model family.
//!
//! Each format knows three things about its family: how to explain the tools in the system
//! prompt, how to find tool calls in generated text (tolerating partial and malformed calls),
//! and how tool results go back. The engine is format-agnostic: it only sees `ParsedTurn`s.

pub mod hermes;

use serde_json::Value;

use crate::llm::Message;
use crate::tools::ToolSpec;

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

/// A turn split into its free text and its calls, in order of appearance.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ParsedTurn {
    /// The text outside any call markup, trimmed.
    pub content: String,
    pub calls: Vec<ParsedCall>,
}

/// A lazily triggered sampling grammar: sampling is free until a trigger appears, then
/// constrained by the GBNF `grammar` (root rule `root`).
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
    fn parse(&self, text: &str) -> ParsedTurn;

    /// Renders one call in this family's syntax, exactly as the model would emit it.
    fn render_call(&self, name: &str, arguments: &Value) -> String;

    /// The message that carries a tool's result back to the model.
    fn tool_result(&self, name: &str, output: &str) -> Message {
        Message::tool(name, output)
    }

    /// The grammar that constrains sampling to this syntax, where the family has one.
    fn grammar(&self, _tools: &[ToolSpec]) -> Option<CallGrammar> {
        None
    }
}

/// The formats `--chat-format` accepts.
pub const FORMAT_NAMES: &[&str] = &["hermes"];

/// Looks a format up by its `--chat-format` name.
pub fn by_name(name: &str) -> Option<Box<dyn ChatFormat>> {
    match name {
        "hermes" | "qwen" => Some(Box::new(hermes::Hermes)),
        _ => None,
    }
}

/// Picks a format from a GGUF's chat template and architecture metadata.
pub fn detect(template: Option<&str>, _architecture: Option<&str>) -> &'static str {
    match template {
        Some(t) if t.contains("<tool_call>") => "hermes",
        _ => "hermes",
    }
}

/// Compact JSON for tool specs in prompts.
pub fn tools_json(tools: &[ToolSpec]) -> String {
    tools
        .iter()
        .map(|t| {
            serde_json::json!({"name": t.name, "description": t.description, "parameters": t.parameters})
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}
