//! `run.json`'s facts beyond the engine's own: the backend, the model file, the settings the
//! run was started with, the repository it ran in and, for a resumed run, where it came from.
//! Typed both ways, so a field cannot go missing or change shape silently and a later run can
//! read an earlier one's back; the engine writes these fields beside its own (run id, status,
//! times, HEAD).
//!
//! The settings are the run's resolved options themselves ([`SettingsRecord`]), each under
//! its config key, with where each came from (`sources`); `--resume` reads them back as
//! options. Three things keep the layout runs have always had, so every run.json reads the
//! same: the model's numbers sit in `settings.inference`, two timeouts carry an `_s`, and the
//! prefix cache is written as on (`prefix_cache`), not as its `no_` option. Sampling numbers
//! are written as the user gave them: an `f32` goes out as its shortest decimal form (`0.05`),
//! not as the `f64` it widens to (`0.05000000074505806`).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::config::Sources;
use crate::options::{OptionTable, Options};
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
    pub settings: SettingsRecord,
    /// The repository's identity: its first commit (following first parents from HEAD);
    /// `None` in a repository without commits. Absent in runs from before it was recorded.
    #[serde(default)]
    pub repo_root: Option<String>,
    /// The run this run's first part went on from, by id, when `--resume` gave it a run
    /// directory of its own (as it did before a resumed run went on in the same directory):
    /// kept through later parts so the review still reaches the first start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed_from: Option<String>,
    /// The report a resumed run's first round was given (the old run's last valid one).
    #[serde(default)]
    pub resumed_report: Option<Report>,
    /// Where a worktree run (`--worktree`) works: worktree, branch, snapshot, user's repo.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<WorktreeInfo>,
    /// The earlier parts of a resumed run, oldest first: each the `run.json` that part ended
    /// with (less its own `parts`). `run.json` itself is the latest part's: its start, its
    /// end, its settings.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<Value>,
}

/// The settings a run was started with: its resolved options and where each came from.
/// Written and read for any option table (`O`, the program's own unless a test declares
/// another), so an option added to the table is recorded and read back with nothing else
/// to change.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SettingsRecord<O = Options> {
    /// Every option the run had a value for (a run recorded before one existed lacks it).
    pub options: O,
    /// Where each value came from (command line, config file, resumed run, model, memory
    /// cap, built-in default), by option name; empty in runs recorded before it was.
    pub sources: Sources,
}

/// Options `run.json` names otherwise: (option, name in `settings`).
const RENAMED: [(&str, &str); 2] = [
    ("command_timeout", "command_timeout_s"),
    ("request_timeout", "request_timeout_s"),
];

/// Yes-or-no options `run.json` writes as their opposite: (option, name in `settings`).
const NEGATED: [(&str, &str); 1] = [("no_prefix_cache", "prefix_cache")];

impl<O: OptionTable> SettingsRecord<O> {
    /// The record in `run.json`'s layout.
    fn to_layout(&self) -> Result<Map<String, Value>, serde_json::Error> {
        // Through text, so each `f32` keeps its shortest decimal form.
        let mut settings: Map<String, Value> =
            serde_json::from_str(&serde_json::to_string(&self.options)?)?;
        // The options the table marks `@inference`: how the model was run.
        let inference: Map<String, Value> = O::INFERENCE
            .iter()
            .filter_map(|key| Some((key.to_string(), settings.remove(*key)?)))
            .collect();
        for (option, name) in RENAMED {
            move_key(&mut settings, option, name, |v| v);
        }
        for (option, name) in NEGATED {
            move_key(&mut settings, option, name, negate);
        }
        settings.insert("inference".into(), Value::Object(inference));
        settings.insert("sources".into(), serde_json::to_value(&self.sources)?);
        Ok(settings)
    }

    /// A record from `run.json`'s layout; keys no option has are passed over.
    fn from_layout(mut settings: Map<String, Value>) -> Result<Self, serde_json::Error> {
        let sources = match settings.remove("sources") {
            Some(sources) => serde_json::from_value(sources)?,
            None => Sources::default(),
        };
        if let Some(Value::Object(inference)) = settings.remove("inference") {
            settings.extend(inference);
        }
        for (option, name) in RENAMED {
            move_key(&mut settings, name, option, |v| v);
        }
        for (option, name) in NEGATED {
            move_key(&mut settings, name, option, negate);
        }
        settings.retain(|key, _| O::KEYS.contains(&key.as_str()));
        Ok(Self {
            options: serde_json::from_value(Value::Object(settings))?,
            sources,
        })
    }
}

/// Moves the value under `from` to `to`, changed by `change`.
fn move_key(map: &mut Map<String, Value>, from: &str, to: &str, change: fn(Value) -> Value) {
    if let Some(value) = map.remove(from) {
        map.insert(to.to_string(), change(value));
    }
}

fn negate(value: Value) -> Value {
    match value {
        Value::Bool(b) => Value::Bool(!b),
        other => other,
    }
}

impl<O: OptionTable> Serialize for SettingsRecord<O> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_layout()
            .map_err(serde::ser::Error::custom)?
            .serialize(serializer)
    }
}

impl<'de, O: OptionTable> Deserialize<'de> for SettingsRecord<O> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let settings = Map::deserialize(deserializer)?;
        Self::from_layout(settings).map_err(serde::de::Error::custom)
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Source;
    use crate::protocol::policy::{ApprovalPolicy, SandboxMode};

    fn record() -> SettingsRecord {
        let options = Options {
            max_turns: Some(8),
            sandbox: Some(SandboxMode::Off),
            approval: Some(ApprovalPolicy::Auto),
            command_timeout: Some(120),
            no_prefix_cache: Some(false),
            ctx_size: Some(4096),
            temperature: Some(0.7),
            top_p: Some(0.95),
            min_p: Some(0.05),
            repeat_penalty: Some(1.1),
            seed: Some(1234),
            ..Options::default()
        };
        SettingsRecord {
            options,
            sources: [("ctx_size".to_string(), Source::MemoryCap)].into(),
        }
    }

    #[test]
    fn settings_keep_run_jsons_layout_and_sampling_as_given() {
        let text = serde_json::to_string(&record()).unwrap();
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
        let json: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(json["inference"]["ctx_size"], 4096);
        assert_eq!(json["command_timeout_s"], 120);
        assert_eq!(json["prefix_cache"], true);
        assert_eq!(json["sandbox"], "off");
        assert_eq!(json["sources"]["ctx_size"], "memory_cap");
        assert_eq!(json.get("ctx_size"), None);
        assert_eq!(json.get("no_prefix_cache"), None);
        assert_eq!(
            serde_json::from_str::<SettingsRecord>(&text).unwrap(),
            record()
        );
    }

    #[test]
    fn a_run_recorded_before_sources_and_the_openai_settings_reads_as_options() {
        let old = serde_json::json!({
            "max_turns": 8, "token_budget": null, "sandbox": "off", "approval": "auto",
            "network": false, "command_timeout_s": 120, "verify": null,
            "inference": {
                "ctx_size": 4096, "threads": 2, "gpu_layers": null, "batch_size": 512,
                "max_tokens": 1024, "temperature": 0.7, "top_k": 40, "top_p": 0.95,
                "min_p": 0.05, "repeat_penalty": 1.1, "seed": 1234
            }
        });
        let read: SettingsRecord = serde_json::from_value(old).unwrap();
        assert!(read.sources.is_empty());
        assert_eq!(read.options.command_timeout, Some(120));
        assert_eq!(read.options.min_p, Some(0.05));
        assert_eq!(read.options.sandbox, Some(SandboxMode::Off));
        // Not recorded then: left to the options under the record.
        assert_eq!(read.options.api_key_env, None);
        assert_eq!(read.options.request_timeout, None);
        assert_eq!(read.options.no_prefix_cache, None);
    }

    /// A table with one option no run has had, declared here alone: it needs no line
    /// anywhere else to be written into `run.json` and read back by a resumed run.
    mod with_a_new_option {
        crate::options::options! {
            /// Most generations in one round.
            #[arg(long, value_name = "N")]
            max_turns: u32 = 24;
            /// A knob added after every run so far was recorded.
            #[arg(long, value_name = "N")]
            knob: u32 = 7;
        }
    }

    #[test]
    fn a_new_option_goes_into_run_json_and_comes_back_on_resume() {
        use clap::Parser;
        use with_a_new_option::Options as Table;
        #[derive(Parser)]
        struct Command {
            #[command(flatten)]
            options: Table,
        }
        let given = |args: &[&str]| {
            let all = std::iter::once("ralph-tui").chain(args.iter().copied());
            Command::try_parse_from(all).unwrap().options
        };
        // A run given --knob 3 records it under its key, sources and all.
        let first = given(&["--knob", "3"]);
        let sources = crate::config::sources(&[(&first, Source::CommandLine)]);
        let record = SettingsRecord {
            options: first.resolve().to_options(),
            sources,
        };
        let run_json = serde_json::to_string(&record).unwrap();
        assert!(run_json.contains("\"knob\":3"), "{run_json}");
        assert!(run_json.contains("\"knob\":\"command_line\""), "{run_json}");
        // A resumed run reads it back under its own command line, as `--resume` lays them.
        let read: SettingsRecord<Table> = serde_json::from_str(&run_json).unwrap();
        assert_eq!(read, record);
        let resumed = given(&[]).over(read.options.clone()).resolve();
        assert_eq!((resumed.knob, resumed.max_turns), (3, 24));
        let changed = given(&["--knob", "5"]).over(read.options).resolve();
        assert_eq!(changed.knob, 5);
    }
}
