//! `run.json`'s facts beyond the engine's own: the backend, the model file, the settings the
//! run was started with, the repository it ran in and, for a resumed run, where it came from.
//! Typed both ways, so a field cannot go missing or change shape silently and a later run can
//! read an earlier one's back; the engine writes these fields beside its own (run id, status,
//! times, HEAD).

use serde::{Deserialize, Serialize};

use crate::config::InferenceSettings;
use crate::protocol::policy::{ApprovalPolicy, SandboxMode};
use crate::protocol::report::Report;
use crate::workspace::WorktreeInfo;

/// What the wiring knows about a run when it starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// The repository's identity: its first commit (following first parents from HEAD);
    /// `None` in a repository without commits. Absent in runs from before it was recorded.
    #[serde(default)]
    pub repo_root: Option<String>,
    /// The run this one resumes (`--resume`), by id.
    #[serde(default)]
    pub resumed_from: Option<String>,
    /// The report a resumed run's first round was given (the old run's last valid one).
    #[serde(default)]
    pub resumed_report: Option<Report>,
    /// Where a worktree run (`--worktree`) works: worktree, branch, snapshot, user's repo.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<WorktreeInfo>,
}

/// The settings that shape a run's behaviour.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

/// The commit HEAD points at, as hex; `None` before the first commit.
pub fn head_commit(repo: &git2::Repository) -> Option<String> {
    let head = repo.head().ok()?.peel_to_commit().ok()?;
    Some(head.id().to_string())
}

/// The repository's first commit, reached from HEAD through first parents; `None` before the
/// first commit. Two clones share it; an unrelated repository at the same path does not.
pub fn root_commit(repo: &git2::Repository) -> Option<String> {
    let mut commit = repo.head().ok()?.peel_to_commit().ok()?;
    while let Ok(parent) = commit.parent(0) {
        commit = parent;
    }
    Some(commit.id().to_string())
}
