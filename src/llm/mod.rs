//! Model backends: what generates a child's text.
//!
//! A `Backend` lives for the whole run (for llama: the model, loaded once). Each round asks it
//! for a brand-new `Child` (for llama: a fresh context with an empty KV cache), which is
//! dropped when the round ends. Nothing else crosses rounds: the engine hands each child its
//! whole message list every turn. Messages and tool specs come from `protocol`; the model
//! file check lives in the top-level `model_file` (re-exported here), below the app wiring and
//! the settings that also use it.

#[cfg(feature = "llama")]
pub mod bounded;
pub mod llama;
pub use crate::model_file;
pub mod openai;
pub mod prefix_store;
pub mod progress;
pub mod script;
pub mod settings;
pub mod template;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::protocol::message::Message;
use crate::protocol::tool::ToolSpec;

/// What one generation is given.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub messages: &'a [Message],
    pub tools: &'a [ToolSpec],
    /// A wrap-up turn: the only output allowed is one `ralph_report` call. The llama backend
    /// samples it under the report's grammar alone; a server backend sends no tools and asks
    /// for the report's JSON Schema as its `response_format`; the script backend plays its next
    /// turn.
    pub report_only: bool,
    /// Most tokens this turn may generate, when the round needs more than the backend's
    /// `--max-tokens` (an observation that shows a file larger than that, which the turn must
    /// be able to write back whole). `None`: `--max-tokens`.
    pub max_tokens: Option<u32>,
}

impl<'a> Request<'a> {
    /// An ordinary turn: any offered tool may be called.
    pub fn new(messages: &'a [Message], tools: &'a [ToolSpec]) -> Self {
        Self {
            messages,
            tools,
            report_only: false,
            max_tokens: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model ended its turn (end-of-generation token, or the script's turn ended).
    EndOfTurn,
    /// The per-turn token cap.
    MaxTokens,
    /// The context window is full.
    ContextFull,
    Cancelled,
}

/// The outcome of one generation (one turn).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generation {
    pub text: String,
    pub prompt_tokens: u32,
    pub generated_tokens: u32,
    pub stop: StopReason,
}

#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The child failed (a script's `fail`, a decode error): the round fails, the run stops.
    #[error("child failed: {0}")]
    ChildFailed(String),
    /// The script has no more rounds or turns for this point of the run.
    #[error("{0}")]
    Exhausted(String),
    #[error("model: {0}")]
    Model(String),
    /// A model server failed the request (one line, from `openai::ServerError`).
    #[error("{0}")]
    Server(String),
}

/// Static facts about a backend, for `run_started` and the header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendInfo {
    /// `llama`, `openai:URL` or `script:FILE`.
    pub name: String,
    /// Model file, when there is one.
    pub model: Option<String>,
    /// The device actually used: `CPU`, `GPU (Vulkan0, 31/31 layers)`, `script`.
    pub device: String,
    /// Context size in tokens, for the context meter.
    pub ctx_size: u32,
    /// Most tokens one ordinary turn may generate (`--max-tokens`; for a script, its longest
    /// turn).
    pub max_tokens: u32,
    /// The tool-call format this backend's model speaks (`hermes`, `generic`, ...).
    pub chat_format: String,
    /// The tools reach the model through the server's own chat template (the request's
    /// native `tools`), so the system prompt names them instead of spelling out their
    /// schemas and call syntax a second time.
    pub native_tools: bool,
}

/// What a child streams while it works on a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output<'a> {
    /// A piece of generated text.
    Text(&'a str),
    /// The prompt is being read: `done` of its `total` tokens are in the context (see
    /// `progress` for when this is said).
    PromptProgress(progress::PromptProgress),
}

/// An `on_output` for `generate_streaming` that passes the text to `on_text` and drops the
/// rest: how a child whose real work is in `generate_streaming` implements `generate`.
pub fn text_only<'f>(on_text: &'f mut dyn FnMut(&str)) -> impl FnMut(Output<'_>) + 'f {
    move |out| {
        if let Output::Text(piece) = out {
            on_text(piece)
        }
    }
}

/// A model for the whole run.
pub trait Backend {
    fn info(&self) -> BackendInfo;

    /// A fresh child for `round` (1-based): no state from any earlier child.
    fn new_child(&mut self, round: u32) -> Result<Box<dyn Child + '_>, BackendError>;
}

/// One round's child. Dropped at the round's end.
pub trait Child {
    /// Tokens the request's prompt takes (for `round_started`); an estimate where the backend
    /// has no tokenizer.
    fn count_prompt_tokens(&mut self, request: Request<'_>) -> Result<u32, BackendError>;

    /// Readies the child for the round's first prompt, before `round_started`: returns how
    /// many of its tokens are already in the child's fresh context (the run's fixed prefix,
    /// restored rather than evaluated again). 0 where the backend keeps nothing.
    fn prepare(&mut self, request: Request<'_>) -> Result<u32, BackendError> {
        let _ = request;
        Ok(0)
    }

    /// Generates one turn, streaming its text pieces (and, where the backend reads prompts
    /// slowly enough to say it, the prompt's progress: the llama backend, the script backend
    /// with a prompt delay) to `on_output` as they are produced, checking `cancel` between
    /// them.
    fn generate_streaming(
        &mut self,
        request: Request<'_>,
        on_output: &mut dyn FnMut(Output<'_>),
        cancel: &CancellationToken,
    ) -> Result<Generation, BackendError>;

    /// [`Child::generate_streaming`] for a caller that wants only the text.
    fn generate(
        &mut self,
        request: Request<'_>,
        on_text: &mut dyn FnMut(&str),
        cancel: &CancellationToken,
    ) -> Result<Generation, BackendError> {
        self.generate_streaming(request, &mut text_only(on_text), cancel)
    }
}
