//! The engine's thread: everything between a prepared run and its summary. It loads the
//! backend, refuses a prompt that cannot fit before anything is written, opens the run log,
//! sets the tools' policy, records the run's settings and facts for `run.json`, attaches the
//! hooks (and a worktree run's per-round commits) and runs the engine. Glue between layers
//! that must not know each other (the workspace's live watcher and the engine's round hook)
//! lives here too.

use std::path::Path;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::backend::{load_backend, model_source, turn_format};
use super::{open_workspace, unwrite_run_dir, BackendPlan, Prepared, StartError};
use crate::chat;
use crate::config::Settings;
use crate::engine::run_info::{RunInfo, SettingsRecord};
use crate::engine::runlog::RunLog;
use crate::engine::{Engine, EventSink, RoundWatch, RunConfig, RunSummary, StartAt, Toolbox};
use crate::error::UsageError;
use crate::llm::Backend;
use crate::options::{BackendKind as Kind, ChatFormatName};
use crate::protocol::event::{Event, Stamped};
use crate::runs::resume::Resume;
use crate::tools::approval::Approver;
use crate::tools::{sandbox, Registry, ToolPolicy};
use crate::workspace::watch::{LiveWatch, OnChange};
use crate::workspace::{Snapshot, Workspace, WorktreeInfo};

/// The live watcher hears where each round starts: the glue between the workspace's watcher
/// and the engine's round hook lives here, so neither layer knows the other.
impl RoundWatch for LiveWatch {
    fn round_started(&self, round: u32, base: Snapshot) {
        LiveWatch::round_started(self, round, base);
    }

    fn round_ended(&self) {
        LiveWatch::round_ended(self);
    }
}

/// Commits the worktree on the run's branch at the end of every round (message: the round's
/// accepted report's summary), then passes each event on to `sink`.
fn committing_sink(info: WorktreeInfo, mut sink: EventSink) -> EventSink {
    let mut summary: Option<(u32, String)> = None;
    Box::new(move |stamped: &Stamped| {
        match &stamped.event {
            Event::ReportAccepted { round, report } => {
                summary = Some((*round, report.summary.clone()));
            }
            Event::RoundFinished { round, .. } => {
                let message = match summary.take() {
                    Some((r, text)) if r == *round && !text.trim().is_empty() => text,
                    _ => format!("round {round}: no report"),
                };
                if let Err(e) = info.commit_round(&message) {
                    tracing::warn!("cannot commit round {round} on {}: {e}", info.branch);
                }
            }
            _ => {}
        }
        sink(stamped);
    })
}

/// A new run's worktree while the run has not started: dropped before [`started`], as when
/// the run is refused (backend, workspace, a prompt that cannot fit), it is discarded, branch
/// and all, so a refused run leaves nothing behind. A resumed run's worktree is never held.
///
/// [`started`]: UnstartedWorktree::started
struct UnstartedWorktree<'a>(Option<&'a WorktreeInfo>);

impl UnstartedWorktree<'_> {
    /// The run has its log: its worktree is the run's from here on.
    fn started(mut self) {
        self.0 = None;
    }
}

impl Drop for UnstartedWorktree<'_> {
    fn drop(&mut self) {
        if let Some(info) = self.0.take() {
            if let Err(e) = info.discard() {
                tracing::warn!("cannot remove the refused run's worktree: {e}");
            }
        }
    }
}

/// The settings `run.json` records: the run's options as resolved, with what the run found
/// where they left a choice open: the model file (or server model) it loaded, the script's
/// absolute path and the chat format the backend chose.
fn recorded_settings(
    settings: &Settings,
    plan: &BackendPlan,
    info: &crate::llm::BackendInfo,
    source: &Path,
) -> SettingsRecord {
    let mut options = settings.options.to_options();
    match plan {
        BackendPlan::Script(..) => options.backend = Some(Kind::Script(source.to_path_buf())),
        BackendPlan::Llama(_) | BackendPlan::OpenAi { .. } => {
            options.model = Some(source.to_path_buf());
            options.chat_format = ChatFormatName::parse(&info.chat_format).ok();
        }
    }
    SettingsRecord {
        options,
        sources: settings.sources.clone(),
    }
}

/// The live watch of the workspace's changes when there is a listener; one that cannot start
/// is a warning.
fn live_watch(
    live: Option<OnChange>,
    root: &Path,
    warnings: &mut Vec<String>,
) -> Option<Box<dyn RoundWatch>> {
    match live {
        Some(on_change) => match LiveWatch::start(root, on_change) {
            Ok(watch) => Some(Box::new(watch)),
            Err(e) => {
                warnings.push(format!("live changes are off: {e}"));
                None
            }
        },
        None => None,
    }
}

/// The round prompt must leave room for the report: refused here, before anything is
/// written.
fn refuse_unfit_prompt(
    max_rounds: u32,
    backend: &mut dyn Backend,
    format: &dyn chat::ChatFormat,
    registry: &Registry,
    objective: &str,
    root: &Path,
) -> Result<(), StartError> {
    if let Some(fit) = crate::engine::wrapup::check_prompt_fits(
        backend,
        format,
        &registry.specs(),
        objective,
        max_rounds,
        root,
    )
    .filter(|fit| !fit.fits())
    {
        return Err(StartError::Usage(UsageError::Invalid(fit.refusal())));
    }
    Ok(())
}

/// The run's sink with the hooks attached (and, in a worktree, each round committed before
/// the hooks hear of its end), and the hooks' runner.
fn hooked_sink(
    settings: &Settings,
    run_dir: &Path,
    worktree: Option<&WorktreeInfo>,
    policy: &ToolPolicy,
    sink: EventSink,
) -> (EventSink, Option<crate::hooks::HookRunner>) {
    let place = crate::hooks::Place {
        cwd: settings.workspace.clone(),
        run_dir: run_dir.to_path_buf(),
        policy: policy.clone(),
    };
    let (sink, hooks) = crate::hooks::attach(settings.options.hooks.clone(), place, sink);
    // The round's commit comes before the hooks hear of the round's end.
    let sink = match worktree {
        Some(info) => committing_sink(info.clone(), sink),
        None => sink,
    };
    (sink, hooks)
}

/// The policy the run's commands get: sandbox, approval, network, timeout, and the API key's
/// variable kept out of their environment.
fn tool_policy(settings: &Settings) -> ToolPolicy {
    let options = &settings.options;
    let mut policy = ToolPolicy::new(options.sandbox, options.approval, options.network);
    policy.command_timeout = std::time::Duration::from_secs(options.command_timeout);
    policy.secrets.add(&options.api_key_env);
    policy
}

/// Where the run starts (a resumed run: the round after the old run's last, with its
/// report) and the warnings it starts with (a resumed run's).
fn start_point(resume: Option<&Resume>) -> (StartAt, Vec<String>) {
    match resume {
        Some(resume) => (resume.start.clone(), resume.warnings.clone()),
        None => (StartAt::fresh(), Vec::new()),
    }
}

/// What a run starts from, found before its engine exists.
struct Opening {
    start: StartAt,
    /// The run's opening warnings: a resumed run's, the person's uncommitted changes, the
    /// sandbox the kernel lacks, a live watch that cannot start.
    warnings: Vec<String>,
    /// What the kernel's sandbox offers, in a sentence.
    sandbox_note: String,
    watch: Option<Box<dyn RoundWatch>>,
}

/// Where the run starts and the warnings it starts with, the sandbox probed and the live
/// watch of `root` started when there is a listener.
fn opening(
    prepared: &Prepared,
    policy: &ToolPolicy,
    root: &Path,
    live: Option<OnChange>,
) -> Opening {
    let (worktree, resume) = (prepared.worktree.as_ref(), prepared.resume.as_ref());
    let (start, mut warnings) = start_point(resume);
    warnings.extend(uncommitted_at_start(
        worktree,
        resume,
        &prepared.settings.workspace,
    ));
    let sandbox_note = probe_sandbox(policy, &prepared.settings, &mut warnings);
    let watch = live_watch(live, root, &mut warnings);
    Opening {
        start,
        warnings,
        sandbox_note,
        watch,
    }
}

/// The warning naming the person's uncommitted changes the run starts from (those a commit
/// of a file the run changes would carry too); `None` when there are none. For a worktree
/// run, they are those its snapshot took from the person's work tree; for a resumed run,
/// those before its first start (`workspace`: the run's own).
fn uncommitted_at_start(
    worktree: Option<&WorktreeInfo>,
    resume: Option<&Resume>,
    workspace: &Path,
) -> Option<String> {
    let (ws, snapshot) = match (worktree, resume) {
        (Some(info), _) => {
            let ws = Workspace::open(&info.user_repo.join(&info.prefix)).ok()?;
            let snapshot = ws.commit_tree(&info.snapshot)?;
            (ws, snapshot)
        }
        (None, resume) => {
            let ws = Workspace::open(workspace).ok()?;
            let snapshot = match resume.and_then(|r| r.earlier.base) {
                Some(tree) => Snapshot { tree },
                None => ws.snapshot().ok()?,
            };
            (ws, snapshot)
        }
    };
    let files = ws.uncommitted(&snapshot).ok()?;
    crate::workspace::uncommitted_warning(&files)
}

/// What this kernel's sandbox offers, in a sentence (logged); a sandbox or network cut-off
/// the run asks for and the kernel lacks is a warning.
fn probe_sandbox(policy: &ToolPolicy, settings: &Settings, warnings: &mut Vec<String>) -> String {
    let support = sandbox::probe_with(&policy.sandbox_exe);
    crate::tools::run_command::clean_stale_round_dirs();
    let note = sandbox::describe(&support);
    tracing::info!("{note}");
    if let Err(problem) = support.check(settings.options.sandbox, settings.options.network) {
        tracing::warn!("{problem}");
        warnings.push(problem);
    }
    note
}

/// The engine's part of the settings, with `run.json`'s facts about the run.
fn run_config(
    prepared: &Prepared,
    objective: String,
    info: crate::llm::BackendInfo,
    workspace: &Workspace,
    start: &StartAt,
    mut warnings: Vec<String>,
    sandbox_support: String,
) -> RunConfig {
    let options = &prepared.settings.options;
    // A resumed run's recorded `auto` was the default as often as not: only the person's own
    // word for it this time (command line or config file) makes its pick a warning.
    let asked = matches!(
        prepared.settings.sources.get("check"),
        Some(crate::config::Source::CommandLine | crate::config::Source::ConfigFile)
    );
    let check = resolve_check(&options.check, asked, workspace.root(), &mut warnings);
    let (source, source_sha) = model_source(&prepared.backend, &prepared.settings.dirs.cache);
    let settings = recorded_settings(&prepared.settings, &prepared.backend, &info, &source);
    RunConfig {
        run_id: prepared.run_id.clone(),
        objective,
        max_rounds: options.max_rounds.get(),
        max_turns: options.max_turns,
        token_budget: options.token_budget,
        verify: options.verify.clone(),
        check,
        check_on_change: options.check_on_change,
        observe: options.observe == crate::options::ObserveMode::On,
        stall_rounds: options.stall_rounds,
        round_timeout: options.round_timeout.map(std::time::Duration::from_secs),
        warnings,
        run_info: RunInfo {
            sandbox_support,
            backend: info.name,
            model_file: source.display().to_string(),
            model_sha256: source_sha,
            device: info.device,
            chat_format: info.chat_format,
            settings,
            repo_root: crate::engine::run_info::root_commit(workspace.repo()),
            resumed_from: prepared.resume.as_ref().and_then(|r| r.linked_from.clone()),
            resumed_report: start.previous.clone(),
            worktree: prepared.worktree.clone(),
            parts: prepared
                .resume
                .as_ref()
                .map(|r| r.parts.clone())
                .unwrap_or_default(),
        },
    }
}

/// The check command `--check` names: `auto` is looked for in the repository at `root`.
/// What it picked, or that it found none, is a warning when the person asked for `auto`; as
/// the default it is only logged (the observation names the check every round).
fn resolve_check(
    setting: &crate::options::CheckSetting,
    asked: bool,
    root: &std::path::Path,
    warnings: &mut Vec<String>,
) -> Option<String> {
    use crate::options::CheckSetting;
    let (check, said) = match setting {
        CheckSetting::Off => return None,
        CheckSetting::Command(command) => return Some(command.clone()),
        CheckSetting::Auto => match crate::engine::check::auto(root) {
            Some(picked) => (
                Some(picked.command.clone()),
                format!(
                    "check: `{}` (picked by --check auto: {})",
                    picked.command, picked.because
                ),
            ),
            None => (
                None,
                "check: --check auto found no test or build command in the repository; the rounds run without a check (give one with --check CMD)".to_string(),
            ),
        },
    };
    tracing::info!("{said}");
    if asked {
        warnings.push(said);
    }
    check
}

/// A backend loaded for the run, with its facts, the chat format its turns are parsed with
/// and the workspace.
struct Loaded {
    backend: Box<dyn Backend>,
    info: crate::llm::BackendInfo,
    format: Box<dyn chat::ChatFormat>,
    workspace: Workspace,
}

/// Loads the backend and opens the workspace; a round prompt that cannot fit is refused here,
/// before anything is written (the run folder made for it goes).
fn load_checked(
    prepared: &Prepared,
    registry: &Registry,
    objective: &str,
) -> Result<Loaded, StartError> {
    let settings = &prepared.settings;
    let mut backend = load_backend(&prepared.backend, settings, prepared.on_load.as_ref())?;
    let info = backend.info();
    let format = turn_format(&info)?;
    let workspace = open_workspace(&settings.workspace)?;
    refuse_unfit_prompt(
        settings.options.max_rounds.get(),
        backend.as_mut(),
        format.as_ref(),
        registry,
        objective,
        workspace.root(),
    )
    .inspect_err(|_| unwrite_run_dir(prepared))?;
    Ok(Loaded {
        backend,
        info,
        format,
        workspace,
    })
}

/// What the engine's thread is handed beside the run: where its events go, who hears its
/// live changes, its cancellation token, and where the person's notes wait.
pub(super) struct Ends {
    pub(super) sink: EventSink,
    pub(super) live: Option<OnChange>,
    pub(super) cancel: CancellationToken,
    pub(super) notes: crate::engine::notes::NoteInbox,
}

pub(super) fn run_on_this_thread(
    prepared: Prepared,
    objective: String,
    approver: Arc<dyn Approver>,
    ends: Ends,
) -> Result<RunSummary, StartError> {
    let Ends {
        sink,
        live,
        cancel,
        notes,
    } = ends;
    let unstarted = UnstartedWorktree(
        prepared
            .worktree
            .as_ref()
            .filter(|_| prepared.resume.is_none()),
    );
    let registry = Registry::standard();
    let Loaded {
        mut backend,
        info,
        format,
        workspace,
    } = load_checked(&prepared, &registry, &objective)?;
    let log = match &prepared.resume {
        Some(_) => RunLog::reopen(&prepared.run_dir),
        None => RunLog::create(&prepared.run_dir),
    };
    let mut log = log.map_err(|e| StartError::Internal(format!("cannot open the run log: {e}")))?;
    unstarted.started();
    log.stop_run_on_failure(cancel.clone());
    let log_failure = log.failure();
    let policy = tool_policy(&prepared.settings);
    let Opening {
        start,
        warnings,
        sandbox_note,
        watch,
    } = opening(&prepared, &policy, workspace.root(), live);
    let config = run_config(
        &prepared,
        objective,
        info,
        &workspace,
        &start,
        warnings,
        sandbox_note,
    );
    let (sink, hooks) = hooked_sink(
        &prepared.settings,
        &prepared.run_dir,
        prepared.worktree.as_ref(),
        &policy,
        sink,
    );
    let tools = Toolbox {
        registry: &registry,
        policy,
        approver,
    };
    let mut engine = Engine::new(
        config,
        backend.as_mut(),
        format.as_ref(),
        tools,
        workspace,
        log,
        sink,
    )
    .with_cancel(cancel)
    .with_notes(notes);
    if let Some(watch) = watch {
        engine = engine.with_watch(watch);
    }
    finish(engine.run_from(start), hooks, &log_failure)
}

/// The run's outcome once its engine ended: after its hooks (which never change it; the run
/// only waits for them, each one bounded), or an error when the run log could not be written.
fn finish(
    mut summary: RunSummary,
    hooks: Option<crate::hooks::HookRunner>,
    log_failure: &crate::engine::runlog::Failure,
) -> Result<RunSummary, StartError> {
    if let Some(hooks) = hooks {
        summary.hook_warnings = hooks.finish();
    }
    match log_failure.get() {
        Some(e) => Err(StartError::Internal(format!(
            "the run log cannot be written ({e}); the run was stopped"
        ))),
        None => Ok(summary),
    }
}
