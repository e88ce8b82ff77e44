//! The format for models whose chat template knows nothing of tools (SmolLM2, Gemma, base
//! chat templates): everything is explained in the system prompt.
//!
//! The syntax is the most widely trained one, `<tool_call>{"name": ..., "arguments": {...}}
//! </tool_call>`, on one line, taught with numbered rules, a signature list instead of JSON
//! schemas, and worked examples. A rule has a file of up to about 150 lines changed by
//! writing it whole, which small models do reliably where their `edit_file` calls fail. The
//! parser forgives what small models get wrong: a bare call object without the tags is read
//! too. Those templates have no tool role, so results go back as a user message that starts
//! with `Tool result (NAME):`.

use serde_json::Value;

use super::family::Family;
use super::grammar::{json_call, repeat_sep, Gbnf, MAX_CALLS};
use super::hermes::{first_tagged_or_loose, scan_tagged_or_loose, tagged_call, CLOSE, OPEN};
use super::scan::{self, TurnBuilder};
use super::{example_call, example_report, tool_signatures};
use crate::protocol::message::{Message, Role};
use crate::protocol::tool::{ToolSpec, EDIT_FILE, REPORT_TOOL, WRITE_FILE};

const HINT: &str = "write <tool_call>{\"name\": \"TOOL\", \"arguments\": {...}}</tool_call> with double quotes everywhere";

/// The rule on changing files: small models' `edit_file` calls fail (an `old` not in the
/// file, or equal to `new`), and they write whole files reliably.
const WHOLE_FILES: &str = "\n5. To change a file of up to about 150 lines, write it whole (every line, with your change) with write_file. Use edit_file only in longer files.";

#[derive(Debug, Clone, Copy, Default)]
pub struct Generic;

impl Family for Generic {
    fn format_name(&self) -> &'static str {
        "generic"
    }

    fn first_marker(&self, text: &str) -> Option<usize> {
        first_tagged_or_loose(text)
    }

    fn scan_answer(&self, body: &str, turn: &mut TurnBuilder) {
        scan_tagged_or_loose(body, turn, HINT);
    }

    fn write_call(&self, name: &str, arguments: &Value) -> String {
        format!(
            "{OPEN}{}{CLOSE}",
            scan::call_object_json(name, "arguments", arguments)
        )
    }

    fn instructions(&self, tools: &[ToolSpec]) -> String {
        let offered = |name: &str| tools.iter().any(|t| t.name == name);
        let (name, args) = example_call(tools);
        let mut out = format!(
            "# Tools\n\nYou work by calling tools. To call a tool, write one line like this:\n{OPEN}{{\"name\": \"TOOL_NAME\", \"arguments\": {{\"ARGUMENT\": \"VALUE\"}}}}{CLOSE}\n\nRules:\n1. Between {OPEN} and {CLOSE} goes one JSON object with two keys: \"name\" (the tool) and \"arguments\" (an object with the tool's arguments).\n2. Put double quotes around every key and every text value. Inside a text value, write a line break as \\n and a double quote as \\\".\n3. You may write several tool calls, one per line. Then stop: do not write the results yourself.\n4. Each result comes back in the next message, which starts with \"Tool result (TOOL_NAME):\".{}\n\nThe tools, as name(arguments): what it does. An argument marked ? may be left out.\n{}\n\nExample: to call {name}, write\n{}\nand the next message will start with\nTool result ({name}):",
            if offered(WRITE_FILE) && offered(EDIT_FILE) {
                WHOLE_FILES
            } else {
                ""
            },
            tool_signatures(tools),
            self.write_call(&name, &args),
        );
        if tools.iter().any(|t| t.name == REPORT_TOOL) {
            out.push_str(&format!(
                "\n\nWhen your work for this round is done, call {REPORT_TOOL} last, for example:\n{}",
                self.write_call(REPORT_TOOL, &example_report())
            ));
        }
        out
    }

    fn result_message(&self, name: &str, output: &str) -> Message {
        let plain = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        let head = if plain {
            format!("Tool result ({name}):")
        } else {
            "Tool result:".to_string()
        };
        Message::new(Role::User, format!("{head}\n{output}"))
    }

    fn grammar_root(&self, g: &mut Gbnf, tools: &[ToolSpec]) -> String {
        let tagged = tagged_call(g, tools);
        let call = json_call(g, tools, "arguments");
        format!("{} | {call}", repeat_sep(&tagged, "ws", MAX_CALLS))
    }

    fn trigger_words(&self) -> &'static [&'static str] {
        &[OPEN, "{\"name\""]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::{list_then_read, ChatFormat};

    #[test]
    fn reads_tagged_and_bare_calls() {
        let t = Generic.parse("I will list.\n<tool_call>{\"name\": \"list_dir\", \"arguments\": {\"path\": \".\"}}</tool_call>\nAlso {\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}");
        assert_eq!(t.calls, list_then_read());
        assert_eq!(t.content, "I will list.\nAlso");
    }

    #[test]
    fn results_go_back_as_user_messages() {
        let m = Generic.tool_result("read_file", "# demo");
        assert_eq!(
            (m.role, m.content.as_str()),
            (Role::User, "Tool result (read_file):\n# demo")
        );
        assert_eq!(
            Generic.tool_result("(malformed)", "x").content,
            "Tool result:\nx"
        );
    }

    #[test]
    fn instructions_show_the_example_and_the_report() {
        let tools = vec![crate::tools::report_spec()];
        let text = Generic.tool_instructions(&tools);
        assert!(text.contains(
            "<tool_call>{\"name\": \"ralph_report\", \"arguments\": {\"status\": \"continue\""
        ));
        assert!(text.contains("- ralph_report(status: \"continue\" | \"complete\" | \"blocked\""));
        assert!(
            !text.contains("write_file"),
            "the file rule needs the file tools"
        );
        let text = Generic.tool_instructions(&crate::tools::Registry::standard().specs());
        assert!(
            text.contains("\n5. To change a file of up to about 150 lines, write it whole"),
            "{text}"
        );
    }
}
