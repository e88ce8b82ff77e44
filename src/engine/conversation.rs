//! One round's conversation with its child: the messages so far, the recorder that writes
//! them to the transcript and the event stream, and the context window they must fit in.
//!
//! Both the turn loop (`turn`) and the wrap-up (`wrapup`) work on it; it knows neither, so
//! the turn loop depends on the wrap-up and never the other way round.

use crate::chat::ChatFormat;
use crate::llm::{Child, Request};
use crate::protocol::event::Event;
use crate::protocol::message::Message;
use crate::protocol::tool::ToolSpec;
use crate::tools::ToolResult;

use super::record::Recorder;

/// The round's messages and what counts and records them.
pub(super) struct Conversation<'t, 'a> {
    pub(super) format: &'a dyn ChatFormat,
    pub(super) rec: &'t mut Recorder,
    pub(super) round: u32,
    pub(super) tools: &'t [ToolSpec],
    pub(super) ctx_size: u32,
    pub(super) messages: Vec<Message>,
}

impl Conversation<'_, '_> {
    /// Adds a message to the conversation and the transcript.
    pub(super) fn push(&mut self, message: Message) {
        self.rec.transcript(&message);
        self.messages.push(message);
    }

    /// The prompt's tokens as the next turn would see them (`None`: the backend cannot say).
    pub(super) fn prompt_tokens(&self, child: &mut dyn Child) -> Option<u32> {
        child
            .count_prompt_tokens(Request::new(&self.messages, self.tools))
            .ok()
    }

    /// The prompt's tokens if `output` were the next tool result.
    pub(super) fn tokens_with(
        &mut self,
        child: &mut dyn Child,
        name: &str,
        output: &str,
    ) -> Option<u32> {
        self.messages.push(self.format.tool_result(name, output));
        let tokens = self.prompt_tokens(child);
        self.messages.pop();
        tokens
    }

    pub(super) fn emit_tool_result(&mut self, name: &str, outcome: &ToolResult) {
        self.rec.emit(Event::ToolResult {
            round: self.round,
            name: name.to_string(),
            ok: outcome.ok,
            output: outcome.output.clone(),
        });
    }

    /// Emits `tool_result` for `outcome` and renders it as the message the child reads next.
    pub(super) fn tool_message(&mut self, name: &str, outcome: ToolResult) -> Message {
        self.emit_tool_result(name, &outcome);
        self.format.tool_result(name, &outcome.output)
    }

    /// Emits `tool_result` for `outcome` and adds the message the child reads next.
    pub(super) fn push_tool_result(&mut self, name: &str, outcome: ToolResult) {
        let message = self.tool_message(name, outcome);
        self.push(message);
    }
}
