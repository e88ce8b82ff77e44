//! `--resume`: continue a run that stopped before its end (cancelled, round-failed,
//! budget-limited, or killed) in a new run directory.
//!
//! The objective and the workspace are the old run's and cannot change. Every other option
//! comes from the old run's `run.json` unless the command line gives it, so a resumed run goes
//! on as it was started (a token budget counts this run's tokens). Of `config.toml` only the
//! person's own settings are read, notifications and `[hooks]`: they are not the run's.
//! The next round follows the old run's last started round and is given its last valid
//! report, exactly as an uninterrupted run's next round would have been; `max_rounds` counts
//! those absolute round numbers, so `-n` raises the cap (never past 64).

use std::path::{Path, PathBuf};

use super::{find, runs_dir, PastRun};
use crate::cli::Cli;
use crate::config::{Dirs, Settings, Source};
use crate::engine::run_info;
use crate::engine::StartAt;
use crate::error::UsageError;
use crate::options::{
    ApprovalPolicyArg, BackendKind, ChatFormatName, Options, RoundCount, SandboxModeArg,
};
use crate::protocol::event::RunStatus;
use crate::protocol::policy::{ApprovalPolicy, SandboxMode};
use crate::protocol::report::ReportStatus;
use crate::workspace::{Workspace, WorktreeInfo};

/// A run to continue, checked: where it starts and what the person should know.
#[derive(Debug, Clone, PartialEq)]
pub struct Resume {
    /// The old run's id, recorded as `resumed_from`.
    pub from: String,
    /// The next round and the old run's last valid report.
    pub start: StartAt,
    /// Things worth a `warning` event that do not stop the run (HEAD moved).
    pub warnings: Vec<String>,
    /// The old run's worktree (`--worktree`), where this run goes on.
    pub worktree: Option<WorktreeInfo>,
}

fn refuse(message: String) -> UsageError {
    UsageError::Invalid(message)
}

/// The settings for this invocation: with `--resume`, the old run's under the command line's;
/// without it, the usual layering (command line, config file, defaults).
pub fn resolve(cli: Cli, dirs: Dirs) -> Result<(Settings, Option<Resume>), UsageError> {
    let Some(wanted) = cli.resume.clone() else {
        return Ok((Settings::resolve(cli, dirs)?, None));
    };
    let dir = find(&runs_dir(&dirs), &wanted)?;
    let past = PastRun::load(&dir)?;
    if wanted == crate::runs::LAST && !past.can_go_on() {
        // `last` names the newest run; say which one can go on instead, in the same line.
        let instead = match crate::runs::newest_resumable(&runs_dir(&dirs)) {
            Some(other) => format!(
                "the most recent run that can go on is {id} ({}, {} round(s)): \
                 ralph-tui --resume {id}",
                other.ending(),
                other.last_round,
                id = other.id()
            ),
            None => "no other run can go on either: start a new run".to_string(),
        };
        return Err(refuse(format!(
            "the last run, {}, is over ({}): there is nothing to continue; {instead}",
            past.id(),
            past.ending()
        )));
    }
    let (settings, resume) = plan(cli, dirs, &past)?;
    Ok((settings, Some(resume)))
}

/// Checks that `past` can go on and builds the settings and the start of the new run.
pub fn plan(cli: Cli, dirs: Dirs, past: &PastRun) -> Result<(Settings, Resume), UsageError> {
    let id = past.id();
    if let Some(status @ (RunStatus::Complete | RunStatus::Blocked)) = past.status {
        return Err(refuse(format!(
            "run {id} ended {}: there is nothing to continue",
            status.as_str()
        )));
    }
    // A run killed after its last report said complete or blocked has nothing left either.
    if let (None, Some(report)) = (past.status, &past.last_valid) {
        if report.status != ReportStatus::Continue {
            return Err(refuse(format!(
                "run {id} was stopped after its last report said {}: there is nothing to continue",
                report.status.as_str()
            )));
        }
    }
    let workspace = check_workspace(past)?;
    refuse_log_in_reach(past, &workspace)?;
    if past.last_round >= RoundCount::CEILING {
        return Err(refuse(format!(
            "run {id} already started {} rounds, the most a run may have: start a new run",
            past.last_round
        )));
    }
    let next = past.last_round + 1;
    // Notifications and hooks are the person's, not the run's: they come from config.toml,
    // as for any run, beneath the old run's settings.
    let config = crate::config::load_config(&dirs.config.join("config.toml"), false)?;
    let personal = Options {
        notify: config.notify,
        hooks: config.hooks,
        ..Options::default()
    };
    let options = cli.options.clone().over(old_options(past)).over(personal);
    let cap = options
        .max_rounds
        .map_or(past.record.max_rounds, RoundCount::get);
    if next > cap {
        return Err(refuse(format!(
            "run {id} used its {cap} round(s): raise the cap with -n (at most {})",
            RoundCount::CEILING
        )));
    }
    let cli = Cli {
        objective: Some(past.record.objective.clone()),
        workspace: Some(workspace.root().to_path_buf()),
        ..cli
    };
    let mut settings = Settings::layered(cli, options, dirs)?;
    // What the command line does not set comes from the old run, not from a config file.
    for source in settings.sources.values_mut() {
        if *source == Source::ConfigFile {
            *source = Source::ResumedRun;
        }
    }
    if let Some(run_dir) = &settings.run_dir {
        let canonical = |p: &std::path::Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        if canonical(run_dir) == canonical(&past.dir) {
            return Err(refuse(format!(
                "--run-dir {} is run {id}'s own directory: a resumed run writes a new one",
                run_dir.display()
            )));
        }
    }
    let mut warnings = Vec::new();
    let head_now = run_info::head_commit(workspace.repo());
    // A worktree run's HEAD is its own branch, which moves with every round by design.
    let worktree = past.record.info.worktree.clone();
    if settings.worktree && worktree.is_none() {
        return Err(refuse(format!(
            "run {id} did not run in a worktree: --worktree cannot move it into one"
        )));
    }
    if let (Some(head_then), None) = (&past.record.head, &worktree) {
        if head_now.as_deref() != Some(head_then.as_str()) {
            warnings.push(format!(
                "HEAD moved since run {id} ended (it was {}, it is {}): the last report may not know about those commits",
                short(Some(head_then)),
                short(head_now.as_deref())
            ));
        }
    }
    Ok((
        settings,
        Resume {
            from: id.to_string(),
            start: StartAt {
                round: next,
                previous: past.last_valid.clone(),
            },
            warnings,
            worktree,
        },
    ))
}

fn short(commit: Option<&str>) -> &str {
    match commit {
        Some(id) => id.get(..12).unwrap_or(id),
        None => "no commit",
    }
}

/// A run directory inside the work tree (or, for a worktree run, inside the person's
/// checkout or the worktree) was writable by the worker: its `run.json` (settings such as
/// the sandbox) and `events.jsonl` may be forged, so it is never resumed from.
fn refuse_log_in_reach(past: &PastRun, workspace: &Workspace) -> Result<(), UsageError> {
    let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let dir = canonical(&past.dir);
    let mut reach = vec![workspace.top().to_path_buf()];
    if let Some(w) = &past.record.info.worktree {
        reach.extend([w.path.clone(), w.user_repo.clone()]);
    }
    match reach.iter().map(|p| canonical(p)).find(|p| dir.starts_with(p)) {
        Some(tree) => Err(refuse(format!(
            "run {}'s directory {} is inside the work tree {}, where the worker could rewrite its log and settings: it cannot be resumed",
            past.id(),
            past.dir.display(),
            tree.display()
        ))),
        None => Ok(()),
    }
}

/// The old run's workspace, still there and still the same repository.
fn check_workspace(past: &PastRun) -> Result<Workspace, UsageError> {
    let id = past.id();
    let path = &past.record.workspace;
    if !path.is_dir() {
        return Err(refuse(format!(
            "the workspace of run {id}, {}, is gone: it cannot be resumed",
            path.display()
        )));
    }
    let another = |why: &str| {
        refuse(format!(
            "the workspace of run {id}, {}, is another repository now ({why}): it cannot be resumed",
            path.display()
        ))
    };
    let workspace = Workspace::open(path).map_err(|_| another("not a git work tree"))?;
    if let Some(root_then) = &past.record.info.repo_root {
        let root_now = run_info::root_commit(workspace.repo());
        if root_now.as_deref() != Some(root_then.as_str()) {
            return Err(another(&format!(
                "its first commit is {}, the run's was {}",
                short(root_now.as_deref()),
                short(Some(root_then))
            )));
        }
    }
    Ok(workspace)
}

/// The old run's settings as options, so the command line can lie over them.
fn old_options(past: &PastRun) -> Options {
    let info = &past.record.info;
    let settings = &info.settings;
    let inference = &settings.inference;
    let model_file = PathBuf::from(&info.model_file);
    let scripted = info.backend.starts_with("script:");
    Options {
        max_rounds: RoundCount::try_from(past.record.max_rounds).ok(),
        model: (!scripted).then(|| model_file.clone()),
        backend: Some(if scripted {
            BackendKind::Script(model_file)
        } else if let Some(url) = info.backend.strip_prefix("openai:") {
            BackendKind::OpenAi(url.to_string())
        } else {
            BackendKind::Llama
        }),
        run_dir: None,
        verify: settings.verify.clone(),
        sandbox: Some(match settings.sandbox {
            SandboxMode::WorkspaceWrite => SandboxModeArg::WorkspaceWrite,
            SandboxMode::ReadOnly => SandboxModeArg::ReadOnly,
            SandboxMode::Off => SandboxModeArg::Off,
        }),
        approval: Some(match settings.approval {
            ApprovalPolicy::Auto => ApprovalPolicyArg::Auto,
            ApprovalPolicy::Ask => ApprovalPolicyArg::Ask,
            ApprovalPolicy::Deny => ApprovalPolicyArg::Deny,
        }),
        network: Some(settings.network),
        // A resumed worktree run goes on in its worktree (`run.json`), never in a new one.
        worktree: None,
        command_timeout: Some(settings.command_timeout_s),
        max_turns: Some(settings.max_turns),
        token_budget: settings.token_budget,
        chat_format: if scripted {
            None
        } else {
            ChatFormatName::parse(&info.chat_format).ok()
        },
        ctx_size: Some(inference.ctx_size),
        threads: Some(inference.threads),
        gpu_layers: inference.gpu_layers,
        batch_size: Some(inference.batch_size),
        max_tokens: Some(inference.max_tokens),
        temperature: Some(inference.temperature),
        top_k: Some(inference.top_k),
        top_p: Some(inference.top_p),
        min_p: Some(inference.min_p),
        repeat_penalty: Some(inference.repeat_penalty),
        seed: Some(inference.seed),
        no_prefix_cache: Some(!settings.prefix_cache),
        prefix_cache_max_mib: None,
        api_key_env: Some(settings.api_key_env.clone()),
        request_timeout: Some(settings.request_timeout_s),
        notify: None,
        hooks: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::InferenceSettings;
    use crate::engine::run_info::{RunInfo, RunSettings};
    use crate::runs::RunRecord;

    fn past(backend: &str, model_file: &str) -> PastRun {
        let info = RunInfo {
            sandbox_support: "off".into(),
            backend: backend.into(),
            model_file: model_file.into(),
            model_sha256: None,
            device: "server 127.0.0.1".into(),
            chat_format: "hermes".into(),
            settings: RunSettings {
                max_turns: 8,
                token_budget: None,
                sandbox: SandboxMode::Off,
                approval: ApprovalPolicy::Auto,
                network: false,
                command_timeout_s: 120,
                verify: None,
                prefix_cache: true,
                api_key_env: "SERVER_KEY".into(),
                request_timeout_s: 45,
                inference: InferenceSettings {
                    ctx_size: 4096,
                    threads: 1,
                    gpu_layers: None,
                    batch_size: 512,
                    max_tokens: 1024,
                    temperature: 0.0,
                    top_k: 40,
                    top_p: 0.95,
                    min_p: 0.05,
                    repeat_penalty: 1.0,
                    seed: 1,
                },
                sources: Default::default(),
            },
            repo_root: None,
            resumed_from: None,
            resumed_report: None,
            worktree: None,
        };
        let mut json = serde_json::to_value(&info).unwrap();
        let map = json.as_object_mut().unwrap();
        map.insert("run_id".into(), "r1".into());
        map.insert("objective".into(), "o".into());
        map.insert("max_rounds".into(), 4.into());
        map.insert("workspace".into(), "/tmp/w".into());
        map.insert("started_at".into(), "2026-01-01T00:00:00Z".into());
        let record: RunRecord = serde_json::from_value(json).unwrap();
        PastRun {
            dir: PathBuf::from("/tmp/r1"),
            record,
            status: None,
            last_round: 1,
            last_valid: None,
        }
    }

    #[test]
    fn an_openai_run_resumes_on_the_same_server_model_key_and_timeout() {
        let options = old_options(&past("openai:http://127.0.0.1:8080/v1", "qwen"));
        assert_eq!(
            options.backend,
            Some(BackendKind::OpenAi("http://127.0.0.1:8080/v1".into()))
        );
        assert_eq!(options.model, Some(PathBuf::from("qwen")));
        assert_eq!(options.api_key_env.as_deref(), Some("SERVER_KEY"));
        assert_eq!(options.request_timeout, Some(45));
    }

    #[test]
    fn llama_and_script_runs_keep_their_backends() {
        let llama = old_options(&past("llama", "/m/model.gguf"));
        assert_eq!(llama.backend, Some(BackendKind::Llama));
        let script = old_options(&past("script:/s/turns.json", "/s/turns.json"));
        assert_eq!(
            script.backend,
            Some(BackendKind::Script(PathBuf::from("/s/turns.json")))
        );
        assert_eq!(script.model, None);
    }

    #[test]
    fn a_run_from_before_the_openai_settings_reads_their_defaults() {
        let settings = past("llama", "/m/model.gguf").record.info.settings;
        let mut json = serde_json::to_value(&settings).unwrap();
        let map = json.as_object_mut().unwrap();
        map.remove("api_key_env");
        map.remove("request_timeout_s");
        let read: RunSettings = serde_json::from_value(json).unwrap();
        assert_eq!(read.api_key_env, "OPENAI_API_KEY");
        assert_eq!(read.request_timeout_s, 120);
    }
}
