//! A chat format whose tools reach the model through a server's own chat template.
//!
//! A server that renders the request's native `tools` into its template already shows the
//! model every schema and its own call syntax; spelling them out again in the system prompt
//! would send each tool twice per turn (about 1,700 tokens for ralph-tui's tools). This
//! wrapper keeps everything of the inner format (how calls are parsed, rendered and answered)
//! and replaces only the system prompt's tool section with a short one that names the tools.

use serde_json::Value;

use super::{CallGrammar, ChatFormat, ParsedTurn};
use crate::protocol::message::Message;
use crate::protocol::tool::{ToolSpec, REPORT_TOOL};

/// `inner`, with the tools shown by the server instead of the system prompt.
pub struct NativeTools(pub Box<dyn ChatFormat>);

impl ChatFormat for NativeTools {
    fn name(&self) -> &'static str {
        self.0.name()
    }

    fn tool_instructions(&self, tools: &[ToolSpec]) -> String {
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        format!(
            "# Tools\n\nYour tools come with this conversation, each with its parameters: {}. \
             Call them with tool calls, one or more per turn; the results come back in the \
             next message. End the round with one {REPORT_TOOL} call.",
            names.join(", ")
        )
    }

    fn parse(&self, text: &str) -> ParsedTurn {
        self.0.parse(text)
    }

    fn render_call(&self, name: &str, arguments: &Value) -> String {
        self.0.render_call(name, arguments)
    }

    fn tool_result(&self, name: &str, output: &str) -> Message {
        self.0.tool_result(name, output)
    }

    fn grammar(&self, tools: &[ToolSpec]) -> Option<CallGrammar> {
        self.0.grammar(tools)
    }

    fn report_grammar(
        &self,
        tools: &[ToolSpec],
        bounds: crate::protocol::report::ReportBounds,
    ) -> Option<CallGrammar> {
        self.0.report_grammar(tools, bounds)
    }

    fn call_triggers(&self) -> &'static [&'static str] {
        self.0.call_triggers()
    }

    fn one_call_per_turn(&self) -> bool {
        self.0.one_call_per_turn()
    }

    fn parse_partial(&self, text: &str) -> (ParsedTurn, usize) {
        self.0.parse_partial(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::hermes::Hermes;
    use serde_json::json;

    #[test]
    fn only_the_tool_section_changes() {
        let tools = vec![
            ToolSpec {
                name: "read_file".into(),
                description: "Read a file of the workspace, with a long description.".into(),
                parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            },
            ToolSpec {
                name: REPORT_TOOL.into(),
                description: "r".into(),
                parameters: json!({}),
            },
        ];
        let native = NativeTools(Box::new(Hermes));
        let short = native.tool_instructions(&tools);
        assert!(short.contains("read_file, ralph_report"), "{short}");
        assert!(!short.contains("long description") && !short.contains("<tools>"));
        assert!(short.len() < Hermes.tool_instructions(&tools).len());
        let call = Hermes.render_call("read_file", &json!({"path": "a"}));
        assert_eq!(native.render_call("read_file", &json!({"path": "a"})), call);
        assert_eq!(native.parse(&call), Hermes.parse(&call));
        assert_eq!(native.parse_partial(&call), Hermes.parse_partial(&call));
        assert_eq!(native.name(), "hermes");
        assert_eq!(native.grammar(&tools), Hermes.grammar(&tools));
        assert_eq!(native.call_triggers(), Hermes.call_triggers());
        assert_eq!(native.tool_result("x", "y"), Hermes.tool_result("x", "y"));
    }
}
