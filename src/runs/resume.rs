//! `--resume`: continue a run that stopped before its end (cancelled, round-failed,
//! budget-limited, stalled with a note, or killed; complete or blocked when sent back with
//! a note) in its own run directory.
//!
//! The objective and the workspace are the old run's and cannot change. Every other option
//! comes from the old run's `run.json` unless the command line gives it, so a resumed run goes
//! on as it was started (a token budget counts this part's tokens). Of `config.toml` only the
//! person's own settings are read, notifications and `[hooks]`: they are not the run's.
//! The next round follows the old run's last started round and is given its last valid
//! report, exactly as an uninterrupted run's next round would have been; `max_rounds` counts
//! those absolute round numbers, so `-n` raises the cap (never past 64).
//!
//! The run goes on in the same directory, under the same id: `events.jsonl` gets the new
//! part's events after the old ones (a second `run_started`), the rounds' directories go on
//! numbering, and `run.json` becomes the new part's, with each earlier part's `run.json` kept
//! in its `parts`. Runs resumed before this kept a directory per part, linked by
//! `resumed_from`; they are still followed.

use std::path::{Path, PathBuf};

use super::{find, runs_dir, PastRun};
use crate::config::{sources, Dirs, Launch, Settings, Source};
use crate::engine::notes::Note;
use crate::engine::run_info;
use crate::engine::StartAt;
use crate::error::UsageError;
use crate::options::{BackendKind, ChatFormatName, Options, RoundCount};
use crate::protocol::event::RunStatus;
use crate::protocol::report::ReportStatus;
use crate::workspace::{Workspace, WorktreeInfo};

/// What the command line asks of `--resume`: which run, the options it gives, and the mode.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// A run id, an id prefix, `last` or a run directory.
    pub run: String,
    /// The options the command line gives, over the old run's.
    pub options: Options,
    pub headless: bool,
    pub log_file: Option<PathBuf>,
    /// The person's note to the first round (`--note`, or the review's send-back): a stalled
    /// run needs one, and with one a run that ended complete or blocked goes on too.
    pub note: Option<Note>,
    /// The notes file the resumed run reads (`--notes FILE`).
    pub notes: Option<PathBuf>,
}

/// A run to continue, checked: where it starts and what the person should know.
#[derive(Debug, Clone, PartialEq)]
pub struct Resume {
    /// The run's id, which the resumed part keeps.
    pub from: String,
    /// The run's directory, where the resumed part goes on.
    pub dir: PathBuf,
    /// The run's parts so far, oldest first, each as the `run.json` it ended with: the
    /// resumed part's `run.json` keeps them in `parts`.
    pub parts: Vec<serde_json::Value>,
    /// The run an earlier part went on from in a directory of its own (`resumed_from`), kept.
    pub linked_from: Option<String>,
    /// The next round and the old run's last valid report.
    pub start: StartAt,
    /// Things worth a `warning` event that do not stop the run (HEAD moved).
    pub warnings: Vec<String>,
    /// The old run's worktree (`--worktree`), where this run goes on.
    pub worktree: Option<WorktreeInfo>,
    /// What the earlier parts of the run did, for a review of the whole run.
    pub earlier: Earlier,
    /// The notes the person sent the old run that none of its rounds was given (it stopped
    /// first), from its run directory's journal: its first round is given them, oldest first.
    pub waiting: Vec<Note>,
    /// The note its first round is given, after `waiting`.
    pub note: Option<Note>,
}

/// The earlier parts of a resumed run (the first start and every resume before this one):
/// the tree its first round started from, and the files their worker changed. The review of
/// a resumed run shows everything from that tree on, and counts those files as the worker's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Earlier {
    /// `None` when it cannot be known (an earlier part's log is gone).
    pub base: Option<git2::Oid>,
    pub worker: std::collections::BTreeSet<String>,
}

/// How many earlier parts [`earlier_parts`] follows at most (a run has at most 64 rounds).
const MAX_PARTS: usize = 64;

/// [`Earlier`] for a resume of `past`, following `resumed_from` back through the runs in
/// `runs_dir` to the first start.
pub fn earlier_parts(past: &PastRun, runs_dir: &Path) -> Earlier {
    let mut earlier = Earlier::default();
    let mut dir = past.dir.clone();
    let mut from = past.record.info.resumed_from.clone();
    for _ in 0..MAX_PARTS {
        earlier
            .worker
            .extend(worker_files(&dir.join("events.jsonl")));
        let Some(id) = from.take() else {
            earlier.base = crate::engine::runlog::first_round_base(&dir);
            break;
        };
        let Ok(next) = find(runs_dir, &id) else {
            break;
        };
        let Ok(part) = PastRun::load(&next) else {
            break;
        };
        from = part.record.info.resumed_from.clone();
        dir = next;
    }
    earlier
}

/// The files the worker changed, from a run log's end-of-round `workspace_changed` events.
fn worker_files(events: &Path) -> Vec<String> {
    use crate::protocol::event::{Event, Stamped};
    use std::io::BufRead;
    let Ok(file) = std::fs::File::open(events) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for line in std::io::BufReader::new(file).lines() {
        let Ok(line) = line else { break };
        if !line.contains(r#""type":"workspace_changed""#) {
            continue;
        }
        if let Ok(Stamped {
            event: Event::WorkspaceChanged { files, .. },
            ..
        }) = serde_json::from_str::<Stamped>(&line)
        {
            out.extend(files.into_iter().filter(|f| !f.outside_run).map(|f| f.path));
        }
    }
    out
}

fn refuse(message: String) -> UsageError {
    UsageError::Invalid(message)
}

/// The settings to continue the run `request` names, the old run's under the command line's.
pub fn resolve(request: Request, dirs: Dirs) -> Result<(Settings, Resume), UsageError> {
    let dir = find(&runs_dir(&dirs), &request.run).map_err(|e| match e {
        // Words with spaces are an objective, not a run id.
        crate::runs::FindError::NotFound { wanted, .. } if wanted.trim().contains(' ') => refuse(format!(
            "'{}' is not a run: --resume continues a past run (a run id, an id prefix, `last` or a run directory; `ralph-tui runs` lists them); to start a new run with this objective, leave --resume out",
            crate::text::sanitize_line(&wanted)
        )),
        other => other.into(),
    })?;
    let past = PastRun::load(&dir)?;
    if request.run == crate::runs::LAST && !past.can_go_on() && request.note.is_none() {
        return Err(refuse(last_is_over(&past, &dirs)));
    }
    plan(request, dirs, &past)
}

/// Why `--resume last` has nothing to continue, and which run can go on instead, in a line.
fn last_is_over(past: &PastRun, dirs: &Dirs) -> String {
    let instead = match crate::runs::newest_resumable(&runs_dir(dirs)) {
        Some(other) => format!(
            "the most recent run that can go on is {id} ({}, {}): \
             ralph-tui --resume {id}",
            other.ending(),
            crate::text::count(other.last_round as usize, "round", "rounds"),
            id = other.id()
        ),
        None => "no other run can go on either: start a new run".to_string(),
    };
    format!(
        "the last run, {}, is over ({}): there is nothing to continue; {instead}",
        past.id(),
        past.ending()
    )
}

/// Checks that `past` can go on and builds the settings and the start of the new run.
pub fn plan(
    request: Request,
    dirs: Dirs,
    past: &PastRun,
) -> Result<(Settings, Resume), UsageError> {
    let id = past.id();
    refuse_ended(past, request.note.is_some())?;
    if let Some(later) = crate::runs::continuations(&runs_dir(&dirs)).get(id) {
        return Err(refuse(format!(
            "run {id} already went on as run {later}: resume that one instead (ralph-tui --resume {later})"
        )));
    }
    let workspace = check_workspace(past)?;
    refuse_log_in_reach(past, &workspace)?;
    let earlier = earlier_parts(past, &runs_dir(&dirs));
    let next = next_round(past, &request.options)?;
    let note = request.note.clone();
    if let Some(run_dir) = &request.options.run_dir {
        return Err(refuse(format!(
            "--run-dir {}: a resumed run goes on in its own directory, {}; leave --run-dir out",
            run_dir.display(),
            past.dir.display()
        )));
    }
    let parts = parts_of(past)?;
    let settings = resumed_settings(request, dirs, past, &workspace)?;
    // A worktree run's HEAD is its own branch, which moves with every round by design.
    let worktree = past.record.info.worktree.clone();
    if settings.options.worktree && worktree.is_none() {
        return Err(refuse(format!(
            "run {id} did not run in a worktree: --worktree cannot move it into one"
        )));
    }
    let warnings = match worktree {
        None => head_moved(past, &workspace).into_iter().collect(),
        Some(_) => Vec::new(),
    };
    let start = StartAt {
        round: next,
        previous: past.last_valid.clone(),
    };
    let mut warnings = warnings;
    if earlier.base.is_none() && worktree.is_none() {
        warnings.push(format!(
            "the log of an earlier part of run {id} is gone: the review shows only what \
             changed since this resume started"
        ));
    }
    let resume = Resume {
        from: id.to_string(),
        dir: past.dir.clone(),
        parts,
        linked_from: past.record.info.resumed_from.clone(),
        start,
        warnings,
        worktree,
        earlier,
        waiting: crate::engine::notes::not_given(&past.dir, past.notes_given),
        note,
    };
    Ok((settings, resume))
}

/// The run's parts so far: the earlier parts its `run.json` keeps, then that `run.json`
/// itself (the part that just stopped), less its `parts`. A killed part's `run.json` was
/// written at its start: its `rounds_started` is set to the rounds its log shows.
fn parts_of(past: &PastRun) -> Result<Vec<serde_json::Value>, UsageError> {
    let path = past.dir.join("run.json");
    let unreadable = |e: String| refuse(format!("cannot read {}: {e}", path.display()));
    let text = std::fs::read(&path).map_err(|e| unreadable(e.to_string()))?;
    let mut last: serde_json::Value =
        serde_json::from_slice(&text).map_err(|e| unreadable(e.to_string()))?;
    let Some(map) = last.as_object_mut() else {
        return Err(unreadable("not a JSON object".into()));
    };
    let mut parts = match map.remove("parts") {
        Some(serde_json::Value::Array(parts)) => parts,
        _ => Vec::new(),
    };
    if past.status.is_none() {
        map.insert("rounds_started".into(), past.last_round.into());
    }
    parts.push(last);
    Ok(parts)
}

/// Refuses a run that has nothing left: it ended complete or blocked, or was stopped after a
/// report that said so, unless the person sends it back to work with a note; and a stalled
/// run without a note (there is no point going on without new direction).
fn refuse_ended(past: &PastRun, noted: bool) -> Result<(), UsageError> {
    let id = past.id();
    if past.status == Some(RunStatus::Stalled) && !noted {
        return Err(refuse(format!(
            "run {id} stalled: resuming it needs a note with new direction (ralph-tui --resume {id} --note \"…\")"
        )));
    }
    if noted {
        return Ok(());
    }
    if let Some(status @ (RunStatus::Complete | RunStatus::Blocked)) = past.status {
        return Err(refuse(format!(
            "run {id} ended {}: there is nothing to continue (send it back to work with --note \"…\")",
            status.as_str()
        )));
    }
    if let (None, Some(report)) = (past.status, &past.last_valid) {
        if report.status != ReportStatus::Continue {
            return Err(refuse(format!(
                "run {id} was stopped after its last report said {}: there is nothing to continue",
                report.status.as_str()
            )));
        }
    }
    Ok(())
}

/// The round after the old run's last started one, within the cap (`-n` raises it, never
/// past 64).
fn next_round(past: &PastRun, given: &Options) -> Result<u32, UsageError> {
    let id = past.id();
    if past.last_round >= RoundCount::CEILING {
        return Err(refuse(format!(
            "run {id} already started {} rounds, the most a run may have: start a new run",
            past.last_round
        )));
    }
    let next = past.last_round + 1;
    let cap = given
        .max_rounds
        .or(old_options(past).max_rounds)
        .map_or(past.record.max_rounds, RoundCount::get);
    if next > cap {
        return Err(refuse(format!(
            "run {id} used its {cap} round(s): raise the cap with -n (at most {})",
            RoundCount::CEILING
        )));
    }
    Ok(next)
}

/// The command line's options over the old run's over the person's own (notifications and
/// hooks, from `config.toml`), for the old run's objective in its workspace.
fn resumed_settings(
    request: Request,
    dirs: Dirs,
    past: &PastRun,
    workspace: &Workspace,
) -> Result<Settings, UsageError> {
    let config = crate::config::load_config(&dirs.config.join("config.toml"), false)?;
    let personal = Options {
        notify: config.notify,
        hooks: config.hooks,
        ..Options::default()
    };
    let old = old_options(past);
    let sources = sources(&[
        (&request.options, Source::CommandLine),
        (&old, Source::ResumedRun),
        (&personal, Source::ConfigFile),
    ]);
    let options = request.options.over(old).over(personal);
    let launch = Launch {
        objective: Some(past.record.objective.clone()),
        objective_file: None,
        workspace: Some(workspace.root().to_path_buf()),
        headless: request.headless,
        log_file: request.log_file,
        notes: request.notes,
    };
    Settings::layered(launch, options, sources, dirs)
}

/// A warning when HEAD moved since the old run ended (its last report may not know).
fn head_moved(past: &PastRun, workspace: &Workspace) -> Option<String> {
    let head_then = past.record.head.as_ref()?;
    let head_now = run_info::head_commit(workspace.repo());
    (head_now.as_deref() != Some(head_then.as_str())).then(|| {
        format!(
            "HEAD moved since run {} ended (it was {}, it is {}): the last report may not know about those commits",
            past.id(),
            short(Some(head_then)),
            short(head_now.as_deref())
        )
    })
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

/// The old run's options as its `run.json` records them, less what is not the run's to
/// pass on: its run directory, its worktree (a resumed run goes on in the old one, never in
/// a new one) and the person's notifications and hooks. A run recorded before the options
/// were kept whole gets its backend, model, chat format and round cap from the facts the
/// run wrote beside them.
fn old_options(past: &PastRun) -> Options {
    let record = &past.record;
    let info = &record.info;
    let model_file = PathBuf::from(&info.model_file);
    let facts = match BackendKind::parse(&info.backend) {
        Ok(BackendKind::Script(_)) => Options {
            backend: Some(BackendKind::Script(model_file)),
            ..Options::default()
        },
        backend => Options {
            backend: backend.ok(),
            model: Some(model_file),
            chat_format: ChatFormatName::parse(&info.chat_format).ok(),
            ..Options::default()
        },
    };
    let facts = Options {
        max_rounds: RoundCount::try_from(record.max_rounds).ok(),
        ..facts
    };
    Options {
        run_dir: None,
        worktree: None,
        notify: None,
        hooks: None,
        ..info.settings.options.clone().over(facts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::run_info::{RunInfo, SettingsRecord};
    use crate::runs::RunRecord;

    fn past(backend: &str, model_file: &str, options: Options) -> PastRun {
        let info = RunInfo {
            sandbox_support: "off".into(),
            backend: backend.into(),
            model_file: model_file.into(),
            model_sha256: None,
            device: "server 127.0.0.1".into(),
            chat_format: "hermes".into(),
            settings: SettingsRecord {
                options,
                sources: Default::default(),
            },
            repo_root: None,
            resumed_from: None,
            resumed_report: None,
            worktree: None,
            parts: Vec::new(),
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
            notes_given: 0,
        }
    }

    /// A run recorded before its options were kept whole: the settings it had then.
    fn recorded_then() -> Options {
        Options {
            max_turns: Some(8),
            api_key_env: Some("SERVER_KEY".into()),
            request_timeout: Some(45),
            ..Options::default()
        }
    }

    #[test]
    fn an_openai_run_resumes_on_the_same_server_model_key_and_timeout() {
        let options = old_options(&past(
            "openai:http://127.0.0.1:8080/v1",
            "qwen",
            recorded_then(),
        ));
        assert_eq!(
            options.backend,
            Some(BackendKind::OpenAi("http://127.0.0.1:8080/v1".into()))
        );
        assert_eq!(options.model, Some(PathBuf::from("qwen")));
        assert_eq!(options.api_key_env.as_deref(), Some("SERVER_KEY"));
        assert_eq!(options.request_timeout, Some(45));
        assert_eq!(options.max_rounds.map(RoundCount::get), Some(4));
    }

    #[test]
    fn llama_and_script_runs_keep_their_backends() {
        let llama = old_options(&past("llama", "/m/model.gguf", recorded_then()));
        assert_eq!(llama.backend, Some(BackendKind::Llama));
        let script = old_options(&past(
            "script:/s/turns.json",
            "/s/turns.json",
            recorded_then(),
        ));
        assert_eq!(
            script.backend,
            Some(BackendKind::Script(PathBuf::from("/s/turns.json")))
        );
        assert_eq!(script.model, None);
    }

    #[test]
    fn the_record_wins_over_the_facts_and_the_persons_own_options_stay_behind() {
        let recorded = Options {
            backend: Some(BackendKind::Script(PathBuf::from("/s/turns.json"))),
            max_rounds: RoundCount::try_from(6).ok(),
            run_dir: Some(PathBuf::from("/old/run")),
            worktree: Some(true),
            notify: Some(crate::options::NotifyMode::Off),
            ..recorded_then()
        };
        let options = old_options(&past("script:/s/turns.json", "/s/turns.json", recorded));
        assert_eq!(options.max_rounds.map(RoundCount::get), Some(6));
        assert_eq!(
            (options.run_dir, options.worktree, options.notify),
            (None, None, None)
        );
    }
}
