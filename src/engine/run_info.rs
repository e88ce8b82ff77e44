//! `run.json`'s facts beyond the engine's own: the backend, the model file and the settings
//! the run was started with. Typed, so a field cannot go missing or change shape silently;
//! the engine writes these fields beside its own (run id, status, times).

use serde::Serialize;

use crate::config::InferenceSettings;
use crate::protocol::policy::{ApprovalPolicy, SandboxMode};

/// What the wiring knows about a run when it starts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunInfo {
    /// What this kernel's sandbox offers, in a sentence.
    pub sandbox_support: String,
    /// `llama` or `script:FILE`.
    pub backend: String,
    /// The model file (or script) the run used.
    pub model_file: String,
    /// Its sha256, when it could be read.
    pub model_sha256: Option<String>,
    pub device: String,
    pub chat_format: String,
    pub settings: RunSettings,
}

/// The settings that shape a run's behaviour.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSettings {
    pub max_turns: u32,
    pub token_budget: Option<u64>,
    pub sandbox: SandboxMode,
    pub approval: ApprovalPolicy,
    pub network: bool,
    pub command_timeout_s: u64,
    pub verify: Option<String>,
    pub inference: InferenceSettings,
}
