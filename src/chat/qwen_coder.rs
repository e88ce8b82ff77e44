//! Qwen2.5-Coder: calls in a ```` ```json ```` fence, the shape the model writes.
//!
//! Its chat template teaches Hermes `<tool_call>` tags, but the Coder models answer with a
//! Markdown fence holding `{"name": ..., "arguments": {...}}`, or the bare object, whatever
//! the template says (a habit reported across servers and agents, and measured here). So this
//! format teaches the fence it follows anyway, with short worked examples, and reads all
//! three shapes: a fence, a bare object, and the template's own tags. Its lazy grammar
//! triggers on each opening, so a call once started is well-formed. The model tends to go on
//! writing after a call (imagined results, the same call again): a turn ends at its first
//! complete call ([`ChatFormat::one_call_per_turn`](super::ChatFormat::one_call_per_turn)).
//!
//! Tools are listed as signatures with the first sentence of each description, not as JSON
//! schemas, which keeps the system prompt within what a small model reads well.
//!
//! The examples teach what the 1.5B default model does reliably. A file of up to about 150
//! lines is changed by writing it whole, as a listing: its path on a line, then the file in a
//! fence, the shape the round observation shows files in, with no JSON string to escape code
//! into ([`super::listing`]). Its failed edits were an `old` not in the file, or equal to
//! `new`, so `edit_file` is taught only for longer files. The tests are run with a command
//! that cannot silently test nothing (a bare `python3 -m unittest` runs 0 tests, exit code 0,
//! where the files are named `<module>_test.py`).

use serde_json::{json, Value};

use super::family::Family;
use super::fence::{FENCE, JSON_FENCE};
use super::grammar::{json_call, lit, repeat_sep, Gbnf, MAX_CALLS};
use super::hermes::{first_tagged_or_loose, scan_tagged_or_loose, tagged_call, OPEN};
use super::listing::listing;
use super::scan::{self, TurnBuilder};
use super::tool_signatures_brief;
use crate::protocol::tool::{ToolSpec, EDIT_FILE, READ_FILE, REPORT_TOOL, RUN_COMMAND, WRITE_FILE};

const HINT: &str = "write the call as a ```json block holding {\"name\": \"TOOL\", \"arguments\": {...}} with valid JSON";

/// The test command the examples run: it finds `test_*.py` and `*_test.py` alike, where a
/// bare `python3 -m unittest` runs 0 tests, exit code 0, in a repository of `*_test.py`.
const TEST_COMMAND: &str = "python3 -m unittest discover -p '*test*.py'";

#[derive(Debug, Clone, Copy, Default)]
pub struct QwenCoder;

/// One worked example: what it is for, then a call, or a file written whole as a listing.
enum Example {
    Call(&'static str, &'static str, Value),
    Listing(&'static str, &'static str, &'static str),
}

/// The worked examples the instructions show, for the tools that are offered.
fn examples(tools: &[ToolSpec]) -> Vec<Example> {
    let offered = |name: &str| tools.iter().any(|t| t.name == name);
    let mut out = Vec::new();
    if offered(READ_FILE) {
        out.push(Example::Call(
            "Read a file:",
            READ_FILE,
            json!({"path": "app.py"}),
        ));
    }
    if offered(WRITE_FILE) {
        out.push(Example::Listing(
            "Change a file of up to about 150 lines: write its path alone on a line, then the whole new file in a ``` block, every line, with your change made (this writes the file):",
            "app.py",
            "def add(a, b):\n    return a + b\n",
        ));
    }
    if offered(EDIT_FILE) {
        out.push(Example::Call(
            "Only in a longer file, replace exact text copied from it:",
            EDIT_FILE,
            json!({"path": "app.py", "old": "return a - b", "new": "return a + b"}),
        ));
    }
    if offered(RUN_COMMAND) {
        out.push(Example::Call(
            "Run the repository's tests, where it has some (the check command, when the observation names one):",
            RUN_COMMAND,
            json!({"command": TEST_COMMAND}),
        ));
    }
    if offered(REPORT_TOOL) {
        out.push(Example::Call(
            "When the objective is met and checked, report (evidence: how you checked it: the tests you ran and their result, or the file you read back):",
            REPORT_TOOL,
            json!({
                "status": "complete",
                "summary": "Fixed add() in app.py.",
                "evidence": ["read_file app.py: add() now returns a + b"],
                "next_steps": [],
                "blocker": ""
            }),
        ));
    }
    out
}

impl Family for QwenCoder {
    fn format_name(&self) -> &'static str {
        "qwen-coder"
    }

    fn first_marker(&self, text: &str) -> Option<usize> {
        first_tagged_or_loose(text)
    }

    fn scan_answer(&self, body: &str, turn: &mut TurnBuilder) {
        scan_tagged_or_loose(body, turn, HINT);
    }

    fn write_call(&self, name: &str, arguments: &Value) -> String {
        format!(
            "{JSON_FENCE}\n{}\n{FENCE}",
            scan::call_object_json(name, "arguments", arguments)
        )
    }

    fn instructions(&self, tools: &[ToolSpec]) -> String {
        let mut out = format!(
            "# Tools\n\nYou work only by calling tools. To call one, write a {JSON_FENCE} block with the tool's \"name\" and its \"arguments\", then stop: the result comes back in the next message. One call per message. Never write a result yourself, and never repeat a call that already gave its result.\n\nThe tools, as name(arguments): what it does (an argument marked ? may be left out):\n{}",
            tool_signatures_brief(tools)
        );
        let examples = examples(tools);
        if !examples.is_empty() {
            out.push_str("\n\nExamples:");
            for example in examples {
                let (what, shown) = match example {
                    Example::Call(what, name, args) => (what, self.write_call(name, &args)),
                    Example::Listing(what, path, text) => {
                        (what, listing(path, text, FENCE).trim_end().to_string())
                    }
                };
                out.push_str(&format!("\n{what}\n{shown}"));
            }
        }
        if tools.iter().any(|t| t.name == REPORT_TOOL) {
            out.push_str(&format!(
                "\nA failing test is work to do, never a blocker: fix it and run it again, and if the round must end first, report status \"continue\" with next_steps. \"blocked\" is only for a problem no change in the repository can fix. {REPORT_TOOL} is always your last call."
            ));
        }
        out
    }

    fn grammar_root(&self, g: &mut Gbnf, tools: &[ToolSpec]) -> String {
        let tagged = tagged_call(g, tools);
        let bare = json_call(g, tools, "arguments");
        let fenced = g.rule(
            "fenced-call",
            format!("{} ws {bare} ws {}", lit(JSON_FENCE), lit(FENCE)),
        );
        let call = g.rule("any-call", format!("{fenced} | {tagged} | {bare}"));
        repeat_sep(&call, "ws", MAX_CALLS)
    }

    fn trigger_words(&self) -> &'static [&'static str] {
        &[JSON_FENCE, OPEN, "{\"name\""]
    }

    fn one_call_per_turn(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::{assert_malformed, list_then_read, round_trip, ChatFormat, ParsedCall};

    #[test]
    fn fenced_bare_and_tagged_calls_are_all_read() {
        let t = QwenCoder.parse("Let me look.\n```json\n{\"name\": \"list_dir\", \"arguments\": {\"path\": \".\"}}\n```\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n</tool_call>");
        assert_eq!(t.calls, list_then_read());
        assert_eq!(t.content, "Let me look.");
        let t = QwenCoder.parse("{\"name\": \"list_dir\", \"arguments\": {\"path\": \".\"}}");
        assert_eq!(
            t.calls,
            vec![ParsedCall::call("list_dir", json!({"path": "."}))]
        );
    }

    #[test]
    fn a_fence_with_invalid_json_goes_back_with_the_hint() {
        let t = QwenCoder
            .parse("```json\n{\"name\": \"read_file\", \"arguments\": {path: \"a\"}}\n```");
        assert_malformed(&t.calls[0], "not valid JSON");
        assert_malformed(&t.calls[0], "```json block");
    }

    #[test]
    fn render_then_parse_round_trips() {
        let text = round_trip(&QwenCoder, "run_command", json!({"command": "make test"}));
        assert_eq!(
            text,
            "```json\n{\"name\": \"run_command\", \"arguments\": {\"command\": \"make test\"}}\n```"
        );
    }

    #[test]
    fn the_instructions_show_only_offered_tools_in_examples() {
        let tools = vec![crate::tools::report_spec()];
        let text = QwenCoder.tool_instructions(&tools);
        assert!(text.contains("```json\n{\"name\": \"ralph_report\""));
        assert!(!text.contains("run_command"));
        assert!(text.contains("- ralph_report(status: \"continue\" | \"complete\" | \"blocked\""));
    }

    #[test]
    fn the_taught_listing_reads_back_as_a_write_file_call() {
        let tools = crate::tools::Registry::standard().specs();
        let text = QwenCoder.tool_instructions(&tools);
        // Every example reads back as the call it teaches, the listing as a write_file.
        let names: Vec<_> = QwenCoder
            .parse(&text)
            .calls
            .into_iter()
            .map(|c| match c {
                ParsedCall::Call { name, arguments } => (name, arguments),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            names[1],
            (
                "write_file".to_string(),
                json!({"path": "app.py", "content": "def add(a, b):\n    return a + b\n"})
            )
        );
        assert_eq!(names.len(), 5, "{names:?}");
    }

    #[test]
    fn the_whole_file_the_1_5b_writes_after_a_sentence_is_written() {
        // A turn of the 1.5B on the demo, observation on: the right slug.py, then a call to
        // run the check. The file was prose before, so the check failed again.
        let text = "To implement the `slugify` function in `slug.py` so that the `python3 -m unittest` check passes, we need to replace the `NotImplementedError` with a proper implementation. Here's the updated `slug.py` file:\n\n```python\n\"\"\"Turn titles into URL slugs.\"\"\"\n\nimport re\n\ndef slugify(text):\n    cleaned_text = re.sub(r'[^\\w\\s]', '', text).lower()\n    return cleaned_text.replace(' ', '-')\n```\n\nNow, let's verify the implementation:\n\n```json\n{\"name\": \"run_command\", \"arguments\": {\"command\": \"python3 -m unittest\"}}\n``";
        let (turn, settled) = QwenCoder.parse_partial(text);
        let ParsedCall::Call { name, arguments } = &turn.calls[0] else {
            panic!("{:?}", turn.calls);
        };
        assert_eq!(name, "write_file");
        assert_eq!(arguments["path"], "slug.py");
        assert!(arguments["content"]
            .as_str()
            .unwrap()
            .contains("def slugify(text):\n"));
        assert_eq!(turn.calls.len(), 2);
        assert_eq!(settled, 2);
        // A turn that takes one call ends as soon as the listing closes.
        let end = text.find("```\n\nNow").unwrap() + 3;
        assert_eq!(QwenCoder.parse_partial(&text[..end]).1, 1);
        assert_eq!(QwenCoder.parse_partial(&text[..end - 3]).1, 0);
    }

    #[test]
    fn small_files_are_changed_whole_and_the_tests_run_by_a_finding_command() {
        let tools = crate::tools::Registry::standard().specs();
        let text = QwenCoder.tool_instructions(&tools);
        let write = text.find("app.py\n```\ndef add(a, b):\n").unwrap();
        let edit = text.find("{\"name\": \"edit_file\"").unwrap();
        assert!(write < edit, "write_file is taught first: {text}");
        assert!(
            text.contains("up to about 150 lines: write its path alone on a line"),
            "{text}"
        );
        assert!(text.contains("Only in a longer file"), "{text}");
        // The example command finds test_*.py and *_test.py alike; the report's evidence is
        // not a test command (the 1.5B copied it into repositories without tests).
        assert!(!text.contains("\"python3 -m unittest\""), "{text}");
        let command = "python3 -m unittest discover -p '*test*.py'";
        assert!(
            text.contains(&format!("{{\"command\": \"{command}\"}}")),
            "{text}"
        );
        assert!(!text.contains(&format!("{command}: exit code")), "{text}");
        assert!(text.contains("\"evidence\": [\"read_file app.py"), "{text}");
    }
}
