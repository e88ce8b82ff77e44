//! DeepSeek V3 / R1 tool calls, built from fullwidth special tokens:
//! `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME` + a ```json fenced
//! object + `<｜tool▁call▁end｜>`, more calls, then `<｜tool▁calls▁end｜>`. V3.1 dropped the
//! `function` type and the fence: `<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜>`.
//!
//! Both shapes parse under either format; the format decides what the prompt teaches, what
//! `render_call` writes and what the grammar allows. Tokens also match with ASCII `|` and
//! `_` (R1 distills sometimes write them so), a call left open before the next one is still
//! read, and R1's `<think>` block is reasoning whose draft calls do not run.

use serde_json::Value;

use super::family::{scan_blocks, Blocks, Ending, Family, Marker, Teaching, WITH_SCHEMAS};
use super::grammar::{json_args, lit, one_per_tool, repeat_sep, Gbnf, MAX_CALLS};
use super::scan::{self, find_special, malformed, TurnBuilder};
use super::ParsedCall;
use crate::protocol::tool::ToolSpec;

const CALLS_BEGIN: &str = "<｜tool▁calls▁begin｜>";
const CALLS_END: &str = "<｜tool▁calls▁end｜>";
const CALL_BEGIN: &str = "<｜tool▁call▁begin｜>";
const CALL_END: &str = "<｜tool▁call▁end｜>";
const SEP: &str = "<｜tool▁sep｜>";

const W_CALLS_BEGIN: [&str; 3] = ["tool", "calls", "begin"];
const W_CALLS_END: [&str; 3] = ["tool", "calls", "end"];
const W_CALL_BEGIN: [&str; 3] = ["tool", "call", "begin"];
const W_CALL_END: [&str; 3] = ["tool", "call", "end"];
const W_SEP: [&str; 2] = ["tool", "sep"];

/// A DeepSeek format; `FENCED` (V3, R1) and `PLAIN` (V3.1) are the two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeepSeek {
    /// `function<｜tool▁sep｜>NAME\n```json\n{...}\n```` rather than `NAME<｜tool▁sep｜>{...}`.
    fenced: bool,
}

/// The earliest of several special tokens at or after `from`: (which, start, end).
fn first_token(text: &str, from: usize, tokens: &[&[&str]]) -> Option<(usize, usize, usize)> {
    tokens
        .iter()
        .enumerate()
        .filter_map(|(i, words)| find_special(text, from, words).map(|(s, e)| (i, s, e)))
        .min_by_key(|&(_, s, _)| s)
}

/// The name and arguments between `<｜tool▁call▁begin｜>` and `<｜tool▁call▁end｜>`.
fn call_body(body: &str) -> ParsedCall {
    let Some((sep_start, sep_end)) = find_special(body, 0, &W_SEP) else {
        return malformed(
            body,
            "expected <｜tool▁sep｜> between the call type and the tool name",
        );
    };
    let head = body[..sep_start].trim();
    let tail = &body[sep_end..];
    let (name, args) =
        if (head == "function" || head.is_empty()) && !tail.trim_start().starts_with(['{', '`']) {
            // V3: `function<｜tool▁sep｜>NAME\n```json\n{...}\n````.
            let end = tail.find(['\n', '`', '{']).unwrap_or(tail.len());
            (tail[..end].trim(), &tail[end..])
        } else {
            // V3.1: `NAME<｜tool▁sep｜>{...}`.
            (head, tail)
        };
    let name = match scan::check_name(name) {
        Ok(n) => n,
        Err(reason) => return malformed(body, reason),
    };
    let json = scan::strip_fence(args);
    if json.is_empty() {
        return ParsedCall::call(name, Value::Object(Default::default()));
    }
    match serde_json::from_str::<Value>(json) {
        Ok(value) => match scan::arguments_object(Some(&value)) {
            Ok(arguments) => ParsedCall::call(name, arguments),
            Err(reason) => malformed(body, format!("{reason} (tool {name})")),
        },
        Err(e) => malformed(
            body,
            format!("the arguments of {name} are not valid JSON: {e}"),
        ),
    }
}

impl DeepSeek {
    pub const FENCED: Self = Self { fenced: true };
    pub const PLAIN: Self = Self { fenced: false };

    fn hint(self) -> &'static str {
        if self.fenced {
            "write <｜tool▁call▁begin｜>function<｜tool▁sep｜>TOOL, then the arguments as JSON in a ```json block, then <｜tool▁call▁end｜>"
        } else {
            "write <｜tool▁call▁begin｜>TOOL<｜tool▁sep｜>{JSON arguments}<｜tool▁call▁end｜>"
        }
    }
}

/// Calls between `<｜tool▁call▁begin｜>` and `<｜tool▁call▁end｜>`; the outer
/// `<｜tool▁calls▁begin｜>`/`<｜tool▁calls▁end｜>` wrapper (and a stray end token) is
/// markup, not prose.
impl Blocks for DeepSeek {
    fn next_open(&self, text: &str, from: usize) -> Option<(Marker, bool)> {
        let tokens: [&[&str]; 4] = [&W_CALL_BEGIN, &W_CALLS_BEGIN, &W_CALLS_END, &W_CALL_END];
        let (which, start, end) = first_token(text, from, &tokens)?;
        Some((Marker { start, end }, which == 0))
    }

    fn next_end(&self, text: &str, from: usize) -> Option<(Marker, bool)> {
        let tokens: [&[&str]; 3] = [&W_CALL_END, &W_CALL_BEGIN, &W_CALLS_END];
        let (which, start, end) = first_token(text, from, &tokens)?;
        Some((Marker { start, end }, which == 0))
    }

    fn read(&self, body: &str, ending: Ending) -> ParsedCall {
        match ending {
            Ending::Closed => scan::with_hint(call_body(body), self.hint()),
            Ending::Interrupted | Ending::CutOff => unclosed(body, self.hint()),
        }
    }
}

fn unclosed(body: &str, hint: &str) -> ParsedCall {
    match call_body(body) {
        ParsedCall::Malformed { raw, reason } => ParsedCall::Malformed {
            raw,
            reason: format!("{reason} (and <｜tool▁call▁end｜> is missing); {hint}"),
        },
        call => call,
    }
}

impl Family for DeepSeek {
    fn format_name(&self) -> &'static str {
        if self.fenced {
            "deepseek"
        } else {
            "deepseek-v3.1"
        }
    }

    fn first_marker(&self, text: &str) -> Option<usize> {
        first_token(text, 0, &[&W_CALLS_BEGIN, &W_CALL_BEGIN]).map(|(_, s, _)| s)
    }

    fn scan_answer(&self, body: &str, turn: &mut TurnBuilder) {
        scan_blocks(body, turn, self, |prose, turn| turn.text(prose));
    }

    fn write_call(&self, name: &str, arguments: &Value) -> String {
        let args = scan::args_json(name, arguments);
        if self.fenced {
            format!("{CALLS_BEGIN}{CALL_BEGIN}function{SEP}{name}\n```json\n{args}\n```{CALL_END}{CALLS_END}")
        } else {
            format!("{CALLS_BEGIN}{CALL_BEGIN}{name}{SEP}{args}{CALL_END}{CALLS_END}")
        }
    }

    fn instructions(&self, tools: &[ToolSpec]) -> String {
        let shape = if self.fenced {
            "Each call is <｜tool▁call▁begin｜>function<｜tool▁sep｜>, the tool name on its own line, the arguments as one JSON object inside a ```json code block, then <｜tool▁call▁end｜>."
        } else {
            "Each call is <｜tool▁call▁begin｜>, the exact tool name, <｜tool▁sep｜>, the arguments as one JSON object following the tool's parameter schema, then <｜tool▁call▁end｜>."
        };
        let how = format!("To call tools, write <｜tool▁calls▁begin｜>, then one or more calls, then <｜tool▁calls▁end｜>. {shape} For example:");
        Teaching::new(WITH_SCHEMAS, how).lay_out(self, tools)
    }

    fn grammar_root(&self, g: &mut Gbnf, tools: &[ToolSpec]) -> String {
        let named = one_per_tool(g, "named-call", tools, |g, i, spec| {
            let args = json_args(g, i, spec);
            if self.fenced {
                format!(
                    "{} {args} {}",
                    lit(&format!("{}\n```json\n", spec.name)),
                    lit("\n```")
                )
            } else {
                format!("{} {args}", lit(&format!("{}{SEP}", spec.name)))
            }
        });
        let opening = if self.fenced {
            lit(&format!("{CALL_BEGIN}function{SEP}"))
        } else {
            lit(CALL_BEGIN)
        };
        let call = g.rule("ds-call", format!("{opening} {named} {}", lit(CALL_END)));
        format!(
            "( {} )? {} {}",
            lit(CALLS_BEGIN),
            repeat_sep(&call, "\"\\n\"?", MAX_CALLS),
            lit(CALLS_END)
        )
    }

    fn trigger_words(&self) -> &'static [&'static str] {
        &[CALLS_BEGIN, CALL_BEGIN]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::{assert_malformed, list_then_read, ChatFormat, ParsedCall};
    use serde_json::json;

    #[test]
    fn reads_v3_calls_as_the_template_writes_them() {
        let text = "I'll check.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>list_dir\n```json\n{\"path\": \".\"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>read_file\n```json\n{\"path\": \"a\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
        let t = DeepSeek::FENCED.parse(text);
        assert_eq!(t.content, "I'll check.");
        assert_eq!(t.calls, list_then_read());
    }

    #[test]
    fn reads_v31_calls_and_ascii_lookalikes() {
        let t = DeepSeek::PLAIN.parse("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>read_file<｜tool▁sep｜>{\"path\": \"a\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>");
        assert_eq!(
            t.calls,
            vec![ParsedCall::call("read_file", json!({"path": "a"}))]
        );
        let t = DeepSeek::FENCED.parse("<|tool_calls_begin|><|tool_call_begin|>function<|tool_sep|>read_file\n```json\n{\"path\": \"a\"}\n```<|tool_call_end|><|tool_calls_end|>");
        assert_eq!(
            t.calls,
            vec![ParsedCall::call("read_file", json!({"path": "a"}))]
        );
    }

    #[test]
    fn unclosed_and_broken_calls() {
        let (t, settled) = DeepSeek::FENCED.parse_partial("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>read_file\n```json\n{\"path\": \"a\"}\n```");
        assert_eq!(
            (t.calls.clone(), settled),
            (vec![ParsedCall::call("read_file", json!({"path": "a"}))], 0)
        );
        let t = DeepSeek::FENCED.parse("<｜tool▁call▁begin｜>function<｜tool▁sep｜>read_file\n```json\n{\"path\": \n```<｜tool▁call▁end｜>");
        assert_malformed(&t.calls[0], "not valid JSON");
        let t = DeepSeek::FENCED
            .parse("<｜tool▁call▁begin｜>read_file {\"path\": \"a\"}<｜tool▁call▁end｜>");
        assert_malformed(&t.calls[0], "tool▁sep");
        let t = DeepSeek::FENCED.parse("<｜tool▁call▁begin｜>function<｜tool▁sep｜>a\n{\"x\": [1,<｜tool▁call▁begin｜>function<｜tool▁sep｜>b\n{}<｜tool▁call▁end｜>");
        assert_malformed(&t.calls[0], "missing");
        assert_eq!(t.calls[1], ParsedCall::call("b", json!({})));
    }

    #[test]
    fn r1_reasoning_is_skipped() {
        let t = DeepSeek::FENCED.parse("<think>\nI might use <｜tool▁call▁begin｜>function<｜tool▁sep｜>x\n{}<｜tool▁call▁end｜>\n</think>\n\nDone.");
        assert!(t.calls.is_empty());
        assert!(t.content.ends_with("Done."));
    }

    #[test]
    fn render_then_parse_round_trips() {
        let args = json!({"path": "ü \"q\"\nx"});
        for format in [DeepSeek::FENCED, DeepSeek::PLAIN] {
            let text = format.render_call("read_file", &args);
            assert_eq!(
                DeepSeek::FENCED.parse(&text).calls,
                vec![ParsedCall::call("read_file", args.clone())]
            );
        }
    }
}
