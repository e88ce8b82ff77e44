//! `run.json`'s facts beyond the engine's own: the backend, the model file, the settings the
//! run was started with, the repository it ran in and, for a resumed run, where it came from.
//! Typed both ways, so a field cannot go missing or change shape silently and a later run can
//! read an earlier one's back; the engine writes these fields beside its own (run id, status,
//! times, HEAD). The settings say where each inference value came from (`sources`). Sampling
//! settings are written as the numbers the user gave: an `f32` goes out as its shortest
//! decimal form (`0.05`), not as the `f64` it widens to (`0.05000000074505806`).

use serde::{Deserialize, Serialize, Serializer};

use crate::config::{InferenceSettings, Sources};
use crate::protocol::policy::{ApprovalPolicy, SandboxMode};
use crate::protocol::report::Report;
use crate::workspace::WorktreeInfo;

/// What the wiring knows about a run when it starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// What this kernel's sandbox offers, in a sentence.
    pub sandbox_support: String,
    /// `llama`, `openai:URL` or `script:FILE`.
    pub backend: String,
    /// The model file (or script, or a server's model name) the run used.
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
    /// Whether rounds restore the fixed prompt prefix (`--no-prefix-cache` turns it off); a
    /// run recorded before the cache existed reads as the default, on.
    #[serde(default = "prefix_cache_default")]
    pub prefix_cache: bool,
    /// With `openai:URL`: the variable holding the API key (never the key itself); a run
    /// recorded before it existed reads as the default.
    #[serde(default = "api_key_env_default")]
    pub api_key_env: String,
    /// With `openai:URL`: how long a request may wait for the server, in seconds.
    #[serde(default = "request_timeout_default")]
    pub request_timeout_s: u64,
    #[serde(serialize_with = "inference_as_given")]
    pub inference: InferenceSettings,
    /// Where each inference value came from (command line, config file, resumed run, model,
    /// memory cap, built-in default), by option name; empty in runs recorded before it was.
    #[serde(default)]
    pub sources: Sources,
}

fn prefix_cache_default() -> bool {
    true
}

fn api_key_env_default() -> String {
    String::from("OPENAI_API_KEY")
}

fn request_timeout_default() -> u64 {
    120
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

/// The `f32` fields of the inference settings.
const F32_FIELDS: [&str; 4] = ["temperature", "top_p", "min_p", "repeat_penalty"];

/// An `f32` as the number its shortest decimal form reads as.
fn as_given(value: f32) -> serde_json::Value {
    value
        .to_string()
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(serde_json::Value::Null, serde_json::Value::Number)
}

fn inference_as_given<S: Serializer>(
    settings: &InferenceSettings,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let mut value = serde_json::to_value(settings).map_err(serde::ser::Error::custom)?;
    if let serde_json::Value::Object(map) = &mut value {
        let given = [
            settings.temperature,
            settings.top_p,
            settings.min_p,
            settings.repeat_penalty,
        ];
        for (key, number) in F32_FIELDS.into_iter().zip(given) {
            map.insert(key.to_string(), as_given(number));
        }
    }
    value.serialize(serializer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampling_settings_are_written_as_given() {
        let settings = InferenceSettings {
            ctx_size: 4096,
            threads: 2,
            gpu_layers: None,
            batch_size: 512,
            max_tokens: 1024,
            temperature: 0.7,
            top_k: 40,
            top_p: 0.95,
            min_p: 0.05,
            repeat_penalty: 1.1,
            seed: 1234,
        };
        let mut out = Vec::new();
        inference_as_given(&settings, &mut serde_json::Serializer::new(&mut out)).unwrap();
        let text = String::from_utf8(out).unwrap();
        for given in [
            "\"min_p\":0.05",
            "\"top_p\":0.95",
            "\"temperature\":0.7",
            "\"repeat_penalty\":1.1",
            "\"seed\":1234",
        ] {
            assert!(text.contains(given), "{given} not in {text}");
        }
        assert!(!text.contains("0.0500000"), "{text}");
    }

    #[test]
    fn a_run_recorded_before_sources_reads_with_none_and_they_round_trip() {
        let old = serde_json::json!({
            "max_turns": 8, "token_budget": null, "sandbox": "off", "approval": "auto",
            "network": false, "command_timeout_s": 120, "verify": null,
            "inference": {
                "ctx_size": 4096, "threads": 2, "gpu_layers": null, "batch_size": 512,
                "max_tokens": 1024, "temperature": 0.7, "top_k": 40, "top_p": 0.95,
                "min_p": 0.05, "repeat_penalty": 1.1, "seed": 1234
            }
        });
        let mut read: RunSettings = serde_json::from_value(old).unwrap();
        assert!(read.sources.is_empty());
        read.sources
            .insert("ctx_size".into(), crate::config::Source::MemoryCap);
        let json = serde_json::to_value(&read).unwrap();
        assert_eq!(json["sources"]["ctx_size"], "memory_cap");
        assert_eq!(serde_json::from_value::<RunSettings>(json).unwrap(), read);
    }
}
