//! Mistral tool calls, in both of the family's shapes after the `[TOOL_CALLS]` token:
//! a JSON array of `{"name", "arguments"}` objects (tokenizers v3–v7: Mistral 7B v0.3, Nemo,
//! Small 3, Large 2), and `NAME[ARGS]{...}` repeated per call (tokenizer v11 and later:
//! Magistral, Devstral, Small 3.2), optionally with `[CALL_ID]ID` before `[ARGS]`.
//!
//! The parser reads both shapes whichever format was chosen; the format only decides what
//! the prompt teaches, what `render_call` writes and what the grammar allows. Magistral's
//! `[THINK]…[/THINK]` and `<think>` reasoning blocks are skipped for calls.

use serde_json::Value;

use super::family::{Family, Teaching};
use super::grammar::{json_args, json_call, lit, one_per_tool, repeat_sep, Gbnf, MAX_CALLS};
use super::scan::{self, malformed, reasoning, skip_think, TurnBuilder};
use super::ParsedCall;
use crate::protocol::tool::ToolSpec;

const TOOL_CALLS: &str = "[TOOL_CALLS]";
const ARGS: &str = "[ARGS]";
const CALL_ID: &str = "[CALL_ID]";

/// A Mistral format; `ARRAY` and `ARGS` are the two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mistral {
    /// `[TOOL_CALLS]NAME[ARGS]{...}` rather than `[TOOL_CALLS][{...}]`.
    args_style: bool,
}

impl Mistral {
    pub const ARRAY: Self = Self { args_style: false };
    pub const ARGS: Self = Self { args_style: true };

    fn hint(self) -> &'static str {
        if self.args_style {
            "write [TOOL_CALLS]TOOL[ARGS]{...} with a valid JSON object"
        } else {
            "write [TOOL_CALLS][{\"name\": \"TOOL\", \"arguments\": {...}}] as valid JSON"
        }
    }
}

/// A JSON array of calls; returns the bytes used, `None` when it ran to the end of the text.
fn array(text: &str, turn: &mut TurnBuilder, hint: &str) -> Option<usize> {
    let mut at = 1;
    loop {
        let rest = &text[at..];
        let gap = rest.len() - rest.trim_start().len();
        at += gap;
        match text[at..].chars().next() {
            None => return None,
            Some(']') => return Some(at + 1),
            Some(',') => at += 1,
            Some('{') => at += object(&text[at..], turn, hint)?,
            Some(_) => {
                let stop = text[at..].find(TOOL_CALLS);
                let raw = &text[at..at + stop.unwrap_or(text.len() - at)];
                turn.call(
                    malformed(
                        raw,
                        format!(
                            "expected a call object, ',' or ']' in the [TOOL_CALLS] array; {hint}"
                        ),
                    ),
                    stop.is_some(),
                );
                return stop.map(|s| at + s);
            }
        }
    }
}

/// One JSON call object; returns the bytes used, `None` when it is cut off.
fn object(text: &str, turn: &mut TurnBuilder, hint: &str) -> Option<usize> {
    let Some(len) = scan::json_extent(text) else {
        turn.call(
            malformed(text, format!("the call's JSON is cut off; {hint}")),
            false,
        );
        return None;
    };
    let raw = &text[..len];
    turn.call(scan::with_hint(scan::call_from_json(raw), hint), true);
    Some(len)
}

/// `NAME[CALL_ID]ID[ARGS]{...}`; returns the bytes used, `None` when it is cut off.
fn named(text: &str, turn: &mut TurnBuilder, hint: &str) -> Option<usize> {
    let cut_off = |turn: &mut TurnBuilder| {
        turn.call(
            malformed(text, format!("the call is cut off; {hint}")),
            false,
        );
        None
    };
    let lead = text.len() - text.trim_start().len();
    let name_len = text[lead..]
        .find(|c: char| c == '[' || c == '{' || c.is_whitespace())
        .unwrap_or(text.len() - lead);
    let name = &text[lead..lead + name_len];
    let mut at = lead + name_len;
    let skip_ws = |at: usize| text.len() - text[at..].trim_start().len();
    at = skip_ws(at);
    if text[at..].starts_with(CALL_ID) {
        at += CALL_ID.len();
        at += text[at..].find(['[', '{']).unwrap_or(text.len() - at);
        at = skip_ws(at);
    }
    if text[at..].starts_with(ARGS) {
        at = skip_ws(at + ARGS.len());
    }
    let rest = &text[at..];
    if rest.is_empty() || ARGS.starts_with(rest) || CALL_ID.starts_with(rest) {
        return cut_off(turn);
    }
    if !rest.starts_with('{') {
        let line = rest.find('\n');
        let end = at + line.unwrap_or(rest.len());
        turn.call(
            malformed(
                &text[..end],
                format!("expected [ARGS] and a JSON object after the tool name; {hint}"),
            ),
            line.is_some(),
        );
        return line.map(|_| end);
    }
    let Some(len) = scan::json_extent(rest) else {
        return cut_off(turn);
    };
    let raw = &text[..at + len];
    let call = match scan::check_name(name) {
        Err(reason) => malformed(raw, format!("{reason}; {hint}")),
        Ok(name) => match serde_json::from_str::<Value>(&rest[..len]) {
            Err(e) => malformed(
                raw,
                format!("the arguments are not valid JSON: {e}; {hint}"),
            ),
            Ok(value) => match scan::arguments_object(Some(&value)) {
                Ok(arguments) => ParsedCall::call(name, arguments),
                Err(reason) => malformed(raw, format!("{reason}; {hint}")),
            },
        },
    };
    turn.call(call, true);
    Some(at + len)
}

impl Family for Mistral {
    fn format_name(&self) -> &'static str {
        if self.args_style {
            "mistral-v11"
        } else {
            "mistral"
        }
    }

    fn first_marker(&self, text: &str) -> Option<usize> {
        [text.find(TOOL_CALLS), super::fence::first_loose_call(text)]
            .into_iter()
            .flatten()
            .min()
    }

    /// Magistral's `[THINK]` block, else a `<think>` block. Of two lone closing tags the
    /// first one ends the reasoning (a later one cannot take back what the first let through).
    fn skip_reasoning<'t>(&self, text: &'t str, turn: &mut TurnBuilder) -> &'t str {
        let first = self.first_marker(text);
        let r = reasoning(text, "[THINK]", "[/THINK]", first);
        let opened = text.trim_start().starts_with("[THINK]");
        let think_closes_first = !opened && text.find("</think>").is_some_and(|t| t < r.body);
        if (r.body == 0 && !r.open) || think_closes_first {
            return skip_think(text, first, turn);
        }
        if r.open {
            turn.hold_all();
        }
        turn.text(&text[..r.body]);
        &text[r.body..]
    }

    fn scan_answer(&self, body: &str, turn: &mut TurnBuilder) {
        let hint = self.hint();
        let mut rest = body;
        while let Some(start) = rest.find(TOOL_CALLS) {
            super::fence::scan_loose(&rest[..start], turn, hint);
            let after = &rest[start + TOOL_CALLS.len()..];
            let gap = after.len() - after.trim_start().len();
            let call_text = &after[gap..];
            let used = match call_text.chars().next() {
                Some('[') => array(call_text, turn, hint),
                Some('{') => object(call_text, turn, hint),
                _ => named(call_text, turn, hint),
            };
            rest = match used {
                Some(n) => &after[(gap + n).min(after.len())..],
                None => "",
            };
        }
        super::fence::scan_loose(rest, turn, hint);
    }

    fn write_call(&self, name: &str, arguments: &Value) -> String {
        if self.args_style {
            format!(
                "{TOOL_CALLS}{name}{ARGS}{}",
                scan::args_json(name, arguments)
            )
        } else {
            format!(
                "{TOOL_CALLS}[{}]",
                scan::call_object_json(name, "arguments", arguments)
            )
        }
    }

    fn instructions(&self, tools: &[ToolSpec]) -> String {
        let shape = if self.args_style {
            "write [TOOL_CALLS], the tool name, [ARGS] and the arguments as a JSON object; repeat all of it for each further call"
        } else {
            "write [TOOL_CALLS] followed by a JSON array with one {\"name\": ..., \"arguments\": {...}} object per call"
        };
        Teaching::new(
            "# Tools\n\nYou can use these tools, one JSON object per line:",
            format!("To call tools, {shape}. For example:"),
        )
        .lay_out(self, tools)
    }

    fn grammar_root(&self, g: &mut Gbnf, tools: &[ToolSpec]) -> String {
        if self.args_style {
            let named = one_per_tool(g, "named-call", tools, |g, i, spec| {
                let args = json_args(g, i, spec);
                format!("{} {args}", lit(&format!("{}{ARGS}", spec.name)))
            });
            let call = g.rule("args-call", format!("{} {named}", lit(TOOL_CALLS)));
            repeat_sep(&call, "", MAX_CALLS)
        } else {
            let call = json_call(g, tools, "arguments");
            format!(
                "{} ws \"[\" ws {} ws \"]\"",
                lit(TOOL_CALLS),
                repeat_sep(&call, "ws \",\" ws", MAX_CALLS)
            )
        }
    }

    fn trigger_words(&self) -> &'static [&'static str] {
        &[TOOL_CALLS]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::{assert_malformed, list_then_read, round_trip, ChatFormat, ParsedCall};
    use serde_json::json;

    #[test]
    fn reads_the_array_shape() {
        let t = Mistral::ARRAY.parse("Let me look. [TOOL_CALLS] [{\"name\": \"list_dir\", \"arguments\": {\"path\": \".\"}, \"id\": \"a1b2c3d4e\"}, {\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}]");
        assert_eq!(t.content, "Let me look.");
        assert_eq!(t.calls, list_then_read());
    }

    #[test]
    fn reads_the_args_shape_with_call_ids() {
        let t = Mistral::ARGS.parse("[TOOL_CALLS]list_dir[ARGS]{\"path\": \".\"}[TOOL_CALLS]read_file[CALL_ID]abc123XYZ[ARGS]{\"path\": \"a\"}");
        assert_eq!(t.calls, list_then_read());
    }

    #[test]
    fn cut_off_and_broken_calls_are_malformed() {
        for text in [
            "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {",
            "[TOOL_CALLS]read_file[AR",
            "[TOOL_CALLS]read_file[ARGS]{\"path\": ",
        ] {
            let (t, settled) = Mistral::ARGS.parse_partial(text);
            assert!(
                matches!(&t.calls[..], [ParsedCall::Malformed { reason, .. }] if reason.contains("cut off")),
                "{text}: {t:?}"
            );
            assert_eq!(settled, 0);
        }
        let t = Mistral::ARRAY
            .parse("[TOOL_CALLS][{\"name\": \"a\"} {\"name\": \"b\"}; {\"name\": \"c\"}]");
        assert_eq!(
            t.calls[..2],
            [
                ParsedCall::call("a", json!({})),
                ParsedCall::call("b", json!({}))
            ]
        );
        assert_malformed(&t.calls[2], "',' or ']'");
        let t = Mistral::ARGS.parse("[TOOL_CALLS]read_file please\nthanks");
        assert_malformed(&t.calls[0], "[ARGS]");
        assert_eq!(t.content, "thanks");
    }

    #[test]
    fn reasoning_is_skipped() {
        let t = Mistral::ARGS
            .parse("[THINK]maybe [TOOL_CALLS]x[ARGS]{}[/THINK]\n[TOOL_CALLS]y[ARGS]{}");
        assert_eq!(t.calls, vec![ParsedCall::call("y", json!({}))]);
    }

    #[test]
    fn the_first_lone_closing_tag_ends_the_reasoning() {
        let answer = "plan</think>[TOOL_CALLS]y[ARGS]{}";
        let (t, settled) = Mistral::ARGS.parse_partial(answer);
        assert_eq!(
            (t.calls.clone(), settled),
            (vec![ParsedCall::call("y", json!({}))], 1)
        );
        // A later `[/THINK]` does not turn the settled call into reasoning.
        let t = Mistral::ARGS.parse(&format!("{answer} done[/THINK]"));
        assert_eq!(t.calls, vec![ParsedCall::call("y", json!({}))]);
    }

    #[test]
    fn render_then_parse_round_trips() {
        let args = json!({"path": "a b", "depth": 2});
        for format in [Mistral::ARRAY, Mistral::ARGS] {
            round_trip(&format, "list_dir", args.clone());
        }
        assert_eq!(
            Mistral::ARGS.render_call("list_dir", &args),
            "[TOOL_CALLS]list_dir[ARGS]{\"path\": \"a b\", \"depth\": 2}"
        );
    }
}
