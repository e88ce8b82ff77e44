//! Which grammar a turn samples under, built from the chat format's call grammar.
//!
//! The chat format owns the call syntax and its grammar (tool names, argument schemas, the
//! bounded report). This module only decides how a turn uses it:
//! - *lazy*: free text until one of the format's trigger words, then the call grammar;
//! - *required*: a short preamble that cannot start a call, then a call is mandatory. Used
//!   for models whose template knows nothing of tools (the `generic` format), which rarely
//!   open a call on their own, and after a turn of the round that called nothing;
//! - *report only*: a wrap-up turn, the report call and nothing else from its first token.

use super::sampling::TurnGrammar;
use crate::chat::{call_required, gbnf_not_class, report_grammar_within, CallGrammar, ChatFormat};
use crate::protocol::message::Message;
use crate::protocol::tool::{ToolSpec, REPORT_TOOL};

/// Longest free text allowed before a call in required mode, in characters.
pub const PREAMBLE_MAX_CHARS: usize = 400;

/// The grammar for one ordinary turn, or `None` when the format has none for these tools.
pub fn for_turn(
    format: &dyn ChatFormat,
    tools: &[ToolSpec],
    messages: &[Message],
) -> Option<TurnGrammar> {
    let call = format.grammar(tools)?;
    if call.trigger_words.is_empty() {
        return Some(TurnGrammar::Required { gbnf: call.grammar });
    }
    if call_required(format, messages) {
        Some(TurnGrammar::Required {
            gbnf: required(&call),
        })
    } else {
        Some(TurnGrammar::Lazy {
            gbnf: call.grammar,
            triggers: call.trigger_words,
        })
    }
}

/// The grammar of a wrap-up turn: the format's call grammar for `ralph_report` alone, from
/// the first token (no preamble, no other tool), so the turn can only be a report call whose
/// arguments are a report that passes validation. Its strings and lists are bounded so that
/// the longest call it allows takes at most `room` bytes, and so at most `room` tokens (each
/// sampled token writes one byte at least): the context left can always hold the report.
/// `None` when the request offers no report tool or the format has no grammar.
pub fn for_report(format: &dyn ChatFormat, tools: &[ToolSpec], room: u32) -> Option<TurnGrammar> {
    let report: Vec<ToolSpec> = tools
        .iter()
        .filter(|t| t.name == REPORT_TOOL)
        .cloned()
        .collect();
    if report.is_empty() {
        return None;
    }
    let room = usize::try_from(room).unwrap_or(usize::MAX);
    let (call, bounds, longest) = report_grammar_within(format, &report, room)?;
    if longest.is_none_or(|n| n > room) {
        tracing::warn!(
            room,
            ?longest,
            ?bounds,
            "the report grammar may not fit the context left"
        );
    }
    Some(TurnGrammar::Required { gbnf: call.grammar })
}

/// `root ::= preamble <the call grammar's root>`: the preamble excludes the first character
/// of every trigger word, so the call grammar is entered exactly where a call starts.
pub fn required(call: &CallGrammar) -> String {
    let mut firsts: Vec<char> = call
        .trigger_words
        .iter()
        .filter_map(|t| t.chars().next())
        .collect();
    firsts.sort_unstable();
    firsts.dedup();
    // NUL never starts free text either.
    firsts.push('\0');
    format!(
        "root ::= preamble call-root\npreamble ::= {}{{0,{PREAMBLE_MAX_CHARS}}}\n{}",
        gbnf_not_class(&firsts),
        rename_rule(&call.grammar, "root", "call-root")
    )
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-'
}

/// Renames rule `from` to `to` in a GBNF text, its definition and every reference, leaving
/// string literals, character classes and comments alone.
pub fn rename_rule(gbnf: &str, from: &str, to: &str) -> String {
    let mut out = String::with_capacity(gbnf.len() + 16);
    let mut chars = gbnf.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' | '[' => {
                let close = if c == '"' { '"' } else { ']' };
                out.push(c);
                while let Some((_, d)) = chars.next() {
                    out.push(d);
                    if d == '\\' {
                        if let Some((_, e)) = chars.next() {
                            out.push(e);
                        }
                    } else if d == close {
                        break;
                    }
                }
            }
            '#' => {
                out.push(c);
                for (_, d) in chars.by_ref() {
                    out.push(d);
                    if d == '\n' {
                        break;
                    }
                }
            }
            c if is_word_char(c) => {
                let mut end = i + c.len_utf8();
                while let Some(&(j, d)) = chars.peek() {
                    if !is_word_char(d) {
                        break;
                    }
                    end = j + d.len_utf8();
                    chars.next();
                }
                let word = &gbnf[i..end];
                out.push_str(if word == from { to } else { word });
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::message::Role;

    #[test]
    fn renaming_leaves_literals_classes_and_longer_names_alone() {
        let g = "root ::= \"root\" [root\\]] root-x | root\nroot-x ::= \"x\" # root\n";
        assert_eq!(
            rename_rule(g, "root", "call-root"),
            "call-root ::= \"root\" [root\\]] root-x | call-root\nroot-x ::= \"x\" # root\n"
        );
    }

    #[test]
    fn the_required_preamble_cannot_open_a_call() {
        let call = CallGrammar {
            grammar: "root ::= \"<tool_call>\" [a-z]+ \"</tool_call>\" | obj\nobj ::= \"{\\\"name\\\"\"\n"
                .into(),
            trigger_words: vec!["<tool_call>".into(), "{\"name\"".into()],
        };
        let g = required(&call);
        assert!(g.starts_with(
            "root ::= preamble call-root\npreamble ::= [^<{\\x00]{0,400}\ncall-root ::= "
        ));
        assert!(g.contains("| obj\n"));
    }

    #[test]
    fn a_turn_after_two_without_a_call_requires_a_call() {
        let format = crate::chat::by_name("qwen-coder").unwrap();
        let tools = vec![crate::tools::report_spec()];
        let lazy = |messages: &[Message]| {
            matches!(
                for_turn(format.as_ref(), &tools, messages),
                Some(TurnGrammar::Lazy { .. })
            )
        };
        let mut messages = vec![Message::new(Role::User, "go")];
        assert!(lazy(&messages));
        // One turn without a call gets the nudge, and the next turn is still free.
        messages.push(Message::new(Role::Assistant, "I will think about it."));
        messages.push(Message::new(Role::User, "You did not call a tool."));
        assert!(lazy(&messages));
        // A second one: the next turn must be a call.
        messages.push(Message::new(Role::Assistant, "Still thinking."));
        assert!(matches!(
            for_turn(format.as_ref(), &tools, &messages),
            Some(TurnGrammar::Required { .. })
        ));
        // A fenced call counts as a call, though no tag opened it.
        messages.push(Message::new(
            Role::Assistant,
            "```json\n{\"name\": \"ralph_report\", \"arguments\": {}}\n```",
        ));
        assert!(lazy(&messages));
        let generic = crate::chat::by_name("generic").unwrap();
        assert!(matches!(
            for_turn(generic.as_ref(), &tools, &messages[..1]),
            Some(TurnGrammar::Required { .. })
        ));
        assert!(for_turn(format.as_ref(), &[], &messages).is_none());
    }

    #[test]
    fn the_wrap_up_grammar_is_the_report_call_alone_from_the_first_token() {
        let tools = crate::tools::Registry::standard().specs();
        for name in crate::chat::FORMAT_NAMES {
            let format = crate::chat::by_name(name).unwrap();
            let Some(TurnGrammar::Required { gbnf }) =
                for_report(format.as_ref(), &tools, u32::MAX)
            else {
                assert!(format.grammar(&tools).is_none(), "{name}");
                continue;
            };
            assert!(gbnf.contains("ralph_report"), "{name}");
            for other in tools.iter().filter(|t| t.name != REPORT_TOOL) {
                assert!(
                    !gbnf.contains(&other.name),
                    "{name}: {} is allowed",
                    other.name
                );
            }
            assert!(!gbnf.contains("preamble"), "{name}");
        }
        assert!(for_report(
            crate::chat::by_name("hermes").unwrap().as_ref(),
            &tools[..1],
            u32::MAX
        )
        .is_none());
    }
}
