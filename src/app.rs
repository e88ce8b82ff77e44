//! Wiring: from resolved settings to a running engine thread.
//!
//! `prepare` does every check that can fail on bad input (workspace, script, model file, a
//! model server's reachability, key and model name, run directory; see `intake`) before
//! anything is written; `start` loads the backend (its turns bounded, see `llm::bounded`) on a
//! dedicated thread, opens the run log and runs the engine there. A run log that cannot be
//! written stops the run and makes it end in an internal error. The TUI and the headless mode
//! both start runs this way. Glue between layers that must not know each other (the
//! workspace's live watcher and the engine's round hook) lives here too.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;

use tokio_util::sync::CancellationToken;

use crate::chat;
use crate::config::{BackendKind, Settings};
use crate::engine::run_info::{RunInfo, SettingsRecord};
use crate::engine::runlog::RunLog;
use crate::engine::{Engine, EventSink, RoundWatch, RunConfig, RunSummary, StartAt, Toolbox};
use crate::error::{say, ExitCode, UsageError};
use crate::intake;
use crate::llm::bounded::{Bounded, MAX_TURN_BYTES};
use crate::llm::script::ScriptBackend;
use crate::llm::settings::InferenceSettings;
use crate::llm::Backend;
use crate::options::{BackendKind as Kind, ChatFormatName, Resolved};
use crate::protocol::event::{Event, Stamped};
use crate::runs::resume::Resume;
use crate::tools::approval::Approver;
use crate::tools::{sandbox, Registry, ToolPolicy};
use crate::workspace::watch::{LiveWatch, OnChange};
use crate::workspace::worktree;
use crate::workspace::{Snapshot, Workspace, WorkspaceError, WorktreeInfo};

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

/// The tokio runtime a front end drives, from `builder` with every driver enabled; one that
/// cannot be built is said on stderr and ends the program with [`ExitCode::Internal`].
pub fn runtime(builder: &mut tokio::runtime::Builder) -> Result<tokio::runtime::Runtime, ExitCode> {
    builder.enable_all().build().map_err(|e| {
        say(&format!("cannot start the runtime: {e}"));
        ExitCode::Internal
    })
}

/// The backend a run will use, checked but not yet loaded.
#[derive(Debug, Clone)]
pub enum BackendPlan {
    Script(ScriptBackend, PathBuf),
    Llama(PathBuf),
    /// An OpenAI-compatible server, reached once here: its base URL, the model name it
    /// serves and its context size.
    OpenAi {
        url: String,
        model: String,
        ctx_size: u32,
    },
}

/// A run that passed every input check.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub settings: Settings,
    pub backend: BackendPlan,
    pub run_id: String,
    pub run_dir: PathBuf,
    /// The run directory did not exist before this run: a run refused before it starts
    /// removes it again (with the log file the program opened in it).
    pub fresh_run_dir: bool,
    /// Set when this run continues an earlier one (`--resume`).
    pub resume: Option<Resume>,
    /// Set when the run works in its own git worktree (`--worktree`); `settings.workspace`
    /// is then the workspace inside that worktree. Made by [`isolate`].
    pub worktree: Option<WorktreeInfo>,
    /// Hears how far the model's load is (0..=1), before the run starts (the TUI's header).
    pub on_load: Option<LoadProgress>,
}

/// A listener for the model load's progress, from 0 to 1.
#[derive(Clone)]
pub struct LoadProgress(pub Arc<dyn Fn(f32) + Send + Sync>);

impl std::fmt::Debug for LoadProgress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LoadProgress")
    }
}

impl Prepared {
    /// The same run, continuing `resume` when there is one.
    pub fn resuming(self, resume: Option<Resume>) -> Self {
        Self { resume, ..self }
    }
}

/// A started run.
#[derive(Debug)]
pub struct RunHandle {
    pub cancel: CancellationToken,
    pub run_dir: PathBuf,
    thread: JoinHandle<Result<RunSummary, StartError>>,
}

/// Why a run could not start or finish normally.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Usage(#[from] UsageError),
    #[error("{0}")]
    Internal(String),
}

impl RunHandle {
    /// Waits for the engine thread.
    pub fn join(self) -> Result<RunSummary, StartError> {
        self.thread
            .join()
            .map_err(|_| StartError::Internal("the engine thread panicked".into()))?
    }
}

/// A new run id: UTC time plus a few random-ish hex digits.
pub fn new_run_id() -> String {
    let now = chrono::Utc::now();
    let noise = now.timestamp_subsec_nanos() ^ std::process::id().rotate_left(16);
    format!("{}-{:04x}", now.format("%Y%m%d-%H%M%S"), noise & 0xffff)
}

/// Opens the workspace; a directory that is no work tree is a usage error that names why.
fn open_workspace(dir: &Path) -> Result<Workspace, UsageError> {
    Workspace::open(dir).map_err(|e| match e {
        WorkspaceError::NotGitRepo(_) => UsageError::NotGitRepo(dir.to_path_buf()),
        other => UsageError::Invalid(other.to_string()),
    })
}

/// Checks everything that depends on input before a run starts.
pub fn prepare(settings: &Settings) -> Result<Prepared, UsageError> {
    open_workspace(&settings.workspace)?;
    let mut settings = settings.clone();
    let backend = match settings.options.backend.clone() {
        BackendKind::Script(path) => BackendPlan::Script(
            ScriptBackend::load(&path)?.with_chat_format(chat_format(&settings.options))?,
            path,
        ),
        BackendKind::Llama => {
            let path = settings.model_path();
            if settings.options.model.is_none() && !path.exists() {
                return Err(UsageError::NoModel);
            }
            crate::model_file::check(&path)?;
            take_model_defaults(&mut settings, &path);
            BackendPlan::Llama(path)
        }
        BackendKind::OpenAi(url) => {
            let backend =
                crate::llm::openai::OpenAiBackend::connect(openai_config(&url, &settings))?;
            let info = backend.info();
            BackendPlan::OpenAi {
                url,
                model: backend.model().to_string(),
                ctx_size: info.ctx_size,
            }
        }
    };
    let run_id = new_run_id();
    let run_dir = settings
        .options
        .run_dir
        .clone()
        .unwrap_or_else(|| settings.dirs.data.join("runs").join(&run_id));
    let fresh_run_dir = !run_dir.exists();
    intake::check_run_dir(&run_dir)?;
    intake::check_run_dir_outside(&run_dir, open_workspace(&settings.workspace)?.top())?;
    Ok(Prepared {
        settings,
        backend,
        run_id,
        run_dir,
        fresh_run_dir,
        resume: None,
        worktree: None,
        on_load: None,
    })
}

/// Fills the settings nobody set from the model file's metadata (see `model_defaults`). A
/// header this program cannot read leaves the built-in defaults: loading the model judges
/// the file.
fn take_model_defaults(settings: &mut Settings, model: &Path) {
    let Ok(meta) = crate::model_file::ModelMeta::read(model) else {
        return;
    };
    let bytes = std::fs::metadata(model).map_or(0, |m| m.len());
    settings.take_model_defaults(&meta, bytes, crate::model_defaults::mem_available());
}

/// Moves a `--worktree` run into its own worktree: a new one (snapshot commit, branch
/// `ralph/<run id>`, worktree under the data dir) for a new run, the old run's for a resumed
/// one. The run's workspace becomes the workspace inside the worktree. Call it after the
/// workspace's run lock is held and before the run starts; without `--worktree` (and for a
/// resumed run that had none) it changes nothing.
pub fn isolate(prepared: Prepared) -> Result<Prepared, UsageError> {
    let info = match &prepared.resume {
        Some(resume) => resume.worktree.clone(),
        None if prepared.settings.options.worktree => Some(
            worktree::create(
                &prepared.settings.workspace,
                &prepared.settings.dirs.data,
                &prepared.run_id,
            )
            .map_err(|e| UsageError::Invalid(format!("cannot make the run's worktree: {e}")))?,
        ),
        None => None,
    };
    let Some(info) = info else {
        return Ok(prepared);
    };
    let workspace = info.workspace();
    if !workspace.is_dir() {
        return Err(UsageError::Invalid(format!(
            "the run's worktree {} is gone",
            workspace.display()
        )));
    }
    let mut settings = prepared.settings;
    settings.workspace = workspace;
    Ok(Prepared {
        settings,
        worktree: Some(info),
        ..prepared
    })
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

/// Loads the backend, its turns bounded to [`MAX_TURN_BYTES`].
pub fn load_backend(prepared: &Prepared) -> Result<Box<dyn Backend>, StartError> {
    let backend = load_unbounded(prepared)?;
    Ok(Box::new(Bounded::new(backend, MAX_TURN_BYTES)))
}

fn load_unbounded(prepared: &Prepared) -> Result<Box<dyn Backend>, StartError> {
    match &prepared.backend {
        BackendPlan::Script(script, _) => Ok(Box::new(script.clone())),
        BackendPlan::OpenAi { url, model, .. } => {
            let mut config = openai_config(url, &prepared.settings);
            config.model = Some(model.clone());
            Ok(Box::new(crate::llm::openai::OpenAiBackend::connect(
                config,
            )?))
        }
        #[cfg(feature = "llama")]
        BackendPlan::Llama(path) => {
            let settings = &prepared.settings;
            let options = &settings.options;
            let backend = crate::llm::llama::LlamaBackend::load_reporting(
                path,
                &inference(options),
                chat_format(options),
                prepared.on_load.as_ref().map(|l| l.0.clone()),
            )?
            .with_prefix_cache(!options.no_prefix_cache)
            .with_disk_prefix_cache(crate::llm::prefix_store::PrefixStore::in_cache(
                &settings.dirs.cache,
                options.prefix_cache_max_mib.saturating_mul(1 << 20),
            ));
            Ok(Box::new(backend))
        }
        #[cfg(not(feature = "llama"))]
        BackendPlan::Llama(_) => Err(StartError::Usage(UsageError::Invalid(
            "this build has no llama backend (built without the `llama` feature): use --backend script:FILE".into(),
        ))),
    }
}

/// What a backend is given to load and sample from the run's options.
pub fn inference(options: &Resolved) -> InferenceSettings {
    InferenceSettings {
        ctx_size: options.ctx_size,
        threads: options.threads,
        gpu_layers: options.gpu_layers,
        batch_size: options.batch_size,
        max_tokens: options.max_tokens,
        temperature: options.temperature,
        top_k: options.top_k,
        top_p: options.top_p,
        min_p: options.min_p,
        repeat_penalty: options.repeat_penalty,
        seed: options.seed,
    }
}

/// The chat format the options ask for (`None`: auto).
fn chat_format(options: &Resolved) -> Option<&str> {
    options.chat_format.as_ref().map(ChatFormatName::as_str)
}

/// What the openai backend takes from the settings.
pub fn openai_config(url: &str, settings: &Settings) -> crate::llm::openai::OpenAiConfig {
    let options = &settings.options;
    crate::llm::openai::OpenAiConfig {
        url: url.to_string(),
        model: options
            .model
            .as_ref()
            .map(|m| m.to_string_lossy().into_owned()),
        api_key_env: options.api_key_env.clone(),
        request_timeout: std::time::Duration::from_secs(options.request_timeout),
        // Only a context size the person gave: a default is no knowledge of the server's.
        ctx_fallback: (settings.sources.get("ctx_size") != Some(&crate::config::Source::Default))
            .then_some(options.ctx_size),
        chat_format: chat_format(options).map(String::from),
        sampling: crate::llm::openai::wire::Sampling {
            max_tokens: options.max_tokens,
            temperature: options.temperature,
            top_p: options.top_p,
            seed: options.seed,
        },
    }
}

/// Starts the run on its own thread. `sink` receives every event after the run log has it.
pub fn start(
    prepared: Prepared,
    objective: String,
    approver: Arc<dyn Approver>,
    sink: EventSink,
) -> Result<RunHandle, StartError> {
    start_with_live(prepared, objective, approver, sink, None)
}

/// Like `start`, and also watches the workspace while each round runs: `live` hears the
/// current round's changed files as they happen (from the watcher's thread).
pub fn start_with_live(
    prepared: Prepared,
    objective: String,
    approver: Arc<dyn Approver>,
    sink: EventSink,
    live: Option<OnChange>,
) -> Result<RunHandle, StartError> {
    let cancel = CancellationToken::new();
    let run_dir = prepared.run_dir.clone();
    let thread_cancel = cancel.clone();
    let thread = std::thread::Builder::new()
        .name("ralph-engine".into())
        .spawn(move || run_on_this_thread(prepared, objective, approver, sink, live, thread_cancel))
        .map_err(|e| StartError::Internal(format!("cannot start the engine thread: {e}")))?;
    Ok(RunHandle {
        cancel,
        run_dir,
        thread,
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

/// Takes back what a run that never started left (the person quit the objective editor):
/// the run directory with its log file, and a new run's worktree and branch (a resumed run's
/// are its own and stay). `ralph-tui runs` then has nothing to list that never ran.
pub fn abandon(prepared: &Prepared) {
    unwrite_run_dir(prepared);
    if prepared.resume.is_none() {
        if let Some(info) = &prepared.worktree {
            if let Err(e) = info.discard() {
                tracing::warn!("cannot remove the unstarted run's worktree: {e}");
            }
        }
    }
}

/// Takes back what was written for a run refused before it started: the log file this
/// program opened in the run directory, and the directory itself when this run created it.
fn unwrite_run_dir(prepared: &Prepared) {
    if prepared.settings.log_file.is_none() {
        let _ = std::fs::remove_file(prepared.run_dir.join("ralph-tui.log"));
    }
    if prepared.fresh_run_dir {
        let _ = std::fs::remove_dir(&prepared.run_dir);
    }
}

/// The chat format the run's turns are parsed with: the backend's, else hermes; wrapped for
/// a backend that takes tools natively.
fn turn_format(info: &crate::llm::BackendInfo) -> Result<Box<dyn chat::ChatFormat>, StartError> {
    let format = chat::by_name(&info.chat_format)
        .or_else(|| chat::by_name("hermes"))
        .ok_or_else(|| StartError::Internal("no chat format".into()))?;
    Ok(if info.native_tools {
        Box::new(chat::native::NativeTools(format))
    } else {
        format
    })
}

/// The model's source for `run.json` and its sha256. A file is made absolute, so `--resume`
/// finds it from any directory; a server's model name is kept as it is.
fn model_source(prepared: &Prepared) -> (PathBuf, Option<String>) {
    let settings = &prepared.settings;
    let absolute = |path: &PathBuf| path.canonicalize().unwrap_or_else(|_| path.clone());
    match &prepared.backend {
        BackendPlan::Script(_, path) => (
            absolute(path),
            crate::llm::prefix_store::file_sha256(path).ok(),
        ),
        // Read from the record the prefix cache keeps (hashed once per file identity).
        BackendPlan::Llama(path) => (
            absolute(path),
            crate::llm::prefix_store::model_sha256(
                &crate::llm::prefix_store::dir_in(&settings.dirs.cache),
                path,
            ),
        ),
        BackendPlan::OpenAi { model, .. } => (PathBuf::from(model), None),
    }
}

/// The settings `run.json` records: the run's options as resolved, with what the run found
/// where they left a choice open: the model file (or server model) it loaded, the script's
/// absolute path and the chat format the backend chose.
fn recorded_settings(
    prepared: &Prepared,
    info: &crate::llm::BackendInfo,
    source: &Path,
) -> SettingsRecord {
    let mut options = prepared.settings.options.to_options();
    match &prepared.backend {
        BackendPlan::Script(..) => options.backend = Some(Kind::Script(source.to_path_buf())),
        BackendPlan::Llama(_) | BackendPlan::OpenAi { .. } => {
            options.model = Some(source.to_path_buf());
            options.chat_format = ChatFormatName::parse(&info.chat_format).ok();
        }
    }
    SettingsRecord {
        options,
        sources: prepared.settings.sources.clone(),
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
/// written (the run folder made for it goes).
fn refuse_unfit_prompt(
    prepared: &Prepared,
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
        prepared.settings.options.max_rounds.get(),
        root,
    )
    .filter(|fit| !fit.fits())
    {
        unwrite_run_dir(prepared);
        return Err(StartError::Usage(UsageError::Invalid(fit.refusal())));
    }
    Ok(())
}

/// The run's sink with the hooks attached (and, in a worktree, each round committed before
/// the hooks hear of its end), and the hooks' runner.
fn hooked_sink(
    prepared: &Prepared,
    policy: &ToolPolicy,
    sink: EventSink,
) -> (EventSink, Option<crate::hooks::HookRunner>) {
    let settings = &prepared.settings;
    let place = crate::hooks::Place {
        cwd: settings.workspace.clone(),
        run_dir: prepared.run_dir.clone(),
        policy: policy.clone(),
    };
    let (sink, hooks) = crate::hooks::attach(settings.options.hooks.clone(), place, sink);
    // The round's commit comes before the hooks hear of the round's end.
    let sink = match &prepared.worktree {
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
fn start_point(prepared: &Prepared) -> (StartAt, Vec<String>) {
    match &prepared.resume {
        Some(resume) => (resume.start.clone(), resume.warnings.clone()),
        None => (StartAt::fresh(), Vec::new()),
    }
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
    warnings: Vec<String>,
    sandbox_support: String,
) -> RunConfig {
    let options = &prepared.settings.options;
    let (source, source_sha) = model_source(prepared);
    let settings = recorded_settings(prepared, &info, &source);
    RunConfig {
        run_id: prepared.run_id.clone(),
        objective,
        max_rounds: options.max_rounds.get(),
        max_turns: options.max_turns,
        token_budget: options.token_budget,
        verify: options.verify.clone(),
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
            resumed_from: prepared.resume.as_ref().map(|r| r.from.clone()),
            resumed_report: start.previous.clone(),
            worktree: prepared.worktree.clone(),
        },
    }
}

fn run_on_this_thread(
    prepared: Prepared,
    objective: String,
    approver: Arc<dyn Approver>,
    sink: EventSink,
    live: Option<OnChange>,
    cancel: CancellationToken,
) -> Result<RunSummary, StartError> {
    let unstarted = UnstartedWorktree(
        prepared
            .worktree
            .as_ref()
            .filter(|_| prepared.resume.is_none()),
    );
    let mut backend = load_backend(&prepared)?;
    let info = backend.info();
    let format = turn_format(&info)?;
    let workspace = open_workspace(&prepared.settings.workspace)?;
    let registry = Registry::standard();
    refuse_unfit_prompt(
        &prepared,
        backend.as_mut(),
        format.as_ref(),
        &registry,
        &objective,
        workspace.root(),
    )?;
    let mut log = RunLog::create(&prepared.run_dir)
        .map_err(|e| StartError::Internal(format!("cannot create the run log: {e}")))?;
    unstarted.started();
    log.stop_run_on_failure(cancel.clone());
    let log_failure = log.failure();
    let policy = tool_policy(&prepared.settings);
    let (start, mut warnings) = start_point(&prepared);
    let sandbox_note = probe_sandbox(&policy, &prepared.settings, &mut warnings);
    let watch = live_watch(live, workspace.root(), &mut warnings);
    let config = run_config(
        &prepared,
        objective,
        info,
        &workspace,
        &start,
        warnings,
        sandbox_note,
    );
    let (sink, hooks) = hooked_sink(&prepared, &policy, sink);
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
    .with_cancel(cancel);
    if let Some(watch) = watch {
        engine = engine.with_watch(watch);
    }
    let mut summary = engine.run_from(start);
    // Hooks never change the outcome; the run only waits for them (each one bounded).
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
