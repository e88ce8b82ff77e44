//! One streamed turn put together from its chunks, independent of the transport.
//!
//! Text deltas are the turn's text. Reasoning (`reasoning_content` or vLLM's `reasoning`) is
//! shown to the person as a `<think>` block but kept out of the turn's text, so it is never
//! parsed for calls. Native tool calls are keyed by their `index` (streamed fragments from
//! llama-server, vLLM, SGLang) or, without one, by their position (Ollama's whole-call
//! chunks); at the end each is rendered in the chat format's own syntax and appended to the
//! text, so the engine finds it with the same parser that is the fallback for calls a server
//! returns as plain text.

use std::collections::BTreeMap;

use serde_json::Value;

use super::wire::{call_of, Chunk, TurnShape, Usage};
use crate::chat::ChatFormat;
use crate::protocol::tool::REPORT_TOOL;

/// A native call being assembled.
#[derive(Debug, Default)]
struct PendingCall {
    name: String,
    arguments: String,
    /// Set when a server sends the arguments as an object rather than text.
    object: Option<Value>,
}

/// The turn so far.
#[derive(Debug, Default)]
pub struct Assembly {
    text: String,
    calls: BTreeMap<usize, PendingCall>,
    thinking: bool,
    pub usage: Option<Usage>,
    pub finish_reason: Option<String>,
    /// Whether any chunk had a choice.
    pub saw_choice: bool,
    /// Content and reasoning pieces received (the generated-token estimate without usage).
    pub pieces: u32,
}

impl Assembly {
    /// Takes one chunk; `emit` gets what the person sees, in order.
    pub fn feed(&mut self, chunk: Chunk, emit: &mut dyn FnMut(&str)) {
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage);
        }
        for choice in chunk.choices.into_iter().flatten() {
            self.saw_choice = true;
            for delta in [choice.delta, choice.message].into_iter().flatten() {
                for reasoning in [delta.reasoning_content, delta.reasoning]
                    .into_iter()
                    .flatten()
                {
                    if reasoning.is_empty() {
                        continue;
                    }
                    if !self.thinking {
                        self.thinking = true;
                        emit("<think>");
                    }
                    self.pieces += 1;
                    emit(&reasoning);
                }
                if let Some(content) = delta.content.filter(|c| !c.is_empty()) {
                    self.close_thinking(emit);
                    self.pieces += 1;
                    self.text.push_str(&content);
                    emit(&content);
                }
                for call in delta.tool_calls.into_iter().flatten() {
                    self.close_thinking(emit);
                    // Without an index a call comes whole: it is the next one.
                    let next = self.calls.keys().next_back().map_or(0, |last| last + 1);
                    let index = call.index.unwrap_or(next);
                    let pending = self.calls.entry(index).or_default();
                    if let Some(function) = call.function {
                        if let Some(name) = function.name {
                            pending.name.push_str(&name);
                        }
                        match function.arguments {
                            Some(Value::String(fragment)) => pending.arguments.push_str(&fragment),
                            Some(Value::Null) | None => {}
                            Some(object) => pending.object = Some(object),
                        }
                    }
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason);
            }
        }
    }

    fn close_thinking(&mut self, emit: &mut dyn FnMut(&str)) {
        if self.thinking {
            self.thinking = false;
            emit("</think>\n");
        }
    }

    /// Whether the stream said how the turn ended.
    pub fn finished(&self) -> bool {
        self.finish_reason.is_some()
    }

    /// The turn's text: its content, then each native call in the chat format's syntax
    /// (shown to the person as it is appended). In a report-only turn the content is the
    /// report's JSON, which becomes the `ralph_report` call; in a call-only turn it is one
    /// `{tool: arguments}` object, which becomes that call. Content that does not parse
    /// (a turn cut by the token cap) stays text, and the engine sees no call.
    pub fn finish(
        mut self,
        format: &dyn ChatFormat,
        shape: TurnShape,
        emit: &mut dyn FnMut(&str),
    ) -> String {
        self.close_thinking(emit);
        if shape != TurnShape::Open && self.calls.is_empty() {
            let call = serde_json::from_str::<Value>(self.text.trim())
                .ok()
                .and_then(|value| match shape {
                    TurnShape::ReportOnly => Some(format.render_call(REPORT_TOOL, &value)),
                    _ => {
                        let (name, arguments) = call_of(&value)?;
                        Some(format.render_call(name, arguments))
                    }
                });
            if let Some(call) = call {
                emit("\n");
                emit(&call);
                return call;
            }
        }
        for call in std::mem::take(&mut self.calls).into_values() {
            let arguments = match call.object {
                Some(object) => object,
                None if call.arguments.trim().is_empty() => Value::Object(Default::default()),
                None => serde_json::from_str(&call.arguments)
                    .unwrap_or_else(|_| Value::String(call.arguments.clone())),
            };
            let rendered = format.render_call(call.name.trim(), &arguments);
            let joint = if self.text.is_empty() || self.text.ends_with('\n') {
                ""
            } else {
                "\n"
            };
            let piece = format!("{joint}{rendered}");
            emit(&piece);
            self.text.push_str(&piece);
        }
        self.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::hermes::Hermes;
    use crate::chat::ParsedCall;

    fn chunk(json: &str) -> Chunk {
        serde_json::from_str(json).unwrap_or_default()
    }

    #[test]
    fn index_keyed_fragments_become_whole_calls_in_order() {
        let mut a = Assembly::default();
        let mut shown = String::new();
        let mut emit = |s: &str| shown.push_str(s);
        for c in [
            r#"{"choices":[{"delta":{"reasoning_content":"hmm <tool_call>"}}]}"#,
            r#"{"choices":[{"delta":{"content":"Looking."}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"list_dir","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"read_file","arguments":"{\"pa"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\": \"x\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5}}"#,
        ] {
            a.feed(chunk(c), &mut emit);
        }
        assert!(a.finished());
        assert_eq!(
            a.usage,
            Some(Usage {
                prompt_tokens: 10,
                completion_tokens: 5
            })
        );
        let text = a.finish(&Hermes, TurnShape::Open, &mut emit);
        assert!(
            !text.contains("hmm"),
            "reasoning stays out of the text: {text}"
        );
        assert!(
            shown.starts_with("<think>hmm <tool_call></think>\nLooking."),
            "{shown}"
        );
        let parsed = Hermes.parse(&text);
        assert_eq!(parsed.content, "Looking.");
        assert_eq!(
            parsed.calls,
            vec![
                ParsedCall::Call {
                    name: "read_file".into(),
                    arguments: serde_json::json!({"path": "x"})
                },
                ParsedCall::Call {
                    name: "list_dir".into(),
                    arguments: serde_json::json!({})
                },
            ]
        );
    }

    #[test]
    fn whole_call_chunks_without_index_are_kept_apart() {
        let mut a = Assembly::default();
        let mut emit = |_: &str| {};
        a.feed(chunk(r#"{"choices":[{"delta":{"tool_calls":[{"id":"1","function":{"name":"a","arguments":"{\"x\":1}"}},{"id":"2","function":{"name":"b","arguments":{"y":2}}}]}}]}"#), &mut emit);
        a.feed(chunk(r#"{"choices":[{"delta":{"tool_calls":[{"id":"3","function":{"name":"c","arguments":"{}"}}]}}]}"#), &mut emit);
        let calls = Hermes
            .parse(&a.finish(&Hermes, TurnShape::Open, &mut emit))
            .calls;
        let names: Vec<_> = calls
            .iter()
            .filter_map(|c| match c {
                ParsedCall::Call { name, .. } => Some(name.as_str()),
                ParsedCall::Malformed { .. } => None,
            })
            .collect();
        assert_eq!(names, ["a", "b", "c"]);
    }

    #[test]
    fn a_report_only_turn_becomes_the_report_call() {
        let mut a = Assembly::default();
        let mut emit = |_: &str| {};
        a.feed(
            chunk(r#"{"choices":[{"delta":{"content":"{\"status\": \"continue\"}"}}]}"#),
            &mut emit,
        );
        let calls = Hermes
            .parse(&a.finish(&Hermes, TurnShape::ReportOnly, &mut emit))
            .calls;
        assert_eq!(
            calls,
            vec![ParsedCall::Call {
                name: REPORT_TOOL.into(),
                arguments: serde_json::json!({"status": "continue"})
            }]
        );
    }

    #[test]
    fn a_call_only_turn_becomes_its_call_and_a_cut_one_stays_text() {
        let content = r#"{"list_dir": {"path": "."}}"#;
        let mut a = Assembly::default();
        let mut shown = String::new();
        let mut emit = |s: &str| shown.push_str(s);
        let piece = serde_json::json!({"choices": [{"delta": {"content": content}}]});
        a.feed(chunk(&piece.to_string()), &mut emit);
        let text = a.finish(&Hermes, TurnShape::CallOnly, &mut emit);
        assert_eq!(
            Hermes.parse(&text).calls,
            vec![ParsedCall::Call {
                name: "list_dir".into(),
                arguments: serde_json::json!({"path": "."})
            }]
        );
        assert!(shown.starts_with(content), "the JSON streamed as it came");
        // Cut by the token cap: no call, the text as it came.
        let mut a = Assembly::default();
        let mut emit = |_: &str| {};
        let cut = serde_json::json!({"choices": [{"delta": {"content": &content[..15]}}]});
        a.feed(chunk(&cut.to_string()), &mut emit);
        let text = a.finish(&Hermes, TurnShape::CallOnly, &mut emit);
        assert_eq!(text, &content[..15]);
        assert!(Hermes.parse(&text).calls.is_empty());
    }
}
