//! Wiring: from resolved settings to a running engine thread.
//!
//! `prepare` does every check that can fail on bad input (workspace, script, model file, a
//! model server's reachability, key and model name, run directory; see `intake`) before
//! anything is written; `start` loads the backend (its turns bounded, see `llm::bounded`) on a
//! dedicated thread, opens the run log and runs the engine there. A run log that cannot be
//! written stops the run and makes it end in an internal error. The TUI and the headless mode
//! both start runs this way. The backend's plan and loading live in `backend`, the engine's
//! thread (and the glue between layers that must not know each other there) in
//! `engine_thread`.

mod backend;
mod engine_thread;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;

use tokio_util::sync::CancellationToken;

use crate::config::{BackendKind, Settings};
use crate::engine::{EventSink, RunSummary};
use crate::error::{say, ExitCode, UsageError};
use crate::intake;
use crate::llm::script::ScriptBackend;
use crate::llm::Backend;
use crate::runs::resume::Resume;
use crate::tools::approval::Approver;
use crate::workspace::watch::OnChange;
use crate::workspace::worktree;
use crate::workspace::{Workspace, WorkspaceError, WorktreeInfo};

use crate::engine::notes::NoteInbox;
use backend::{chat_format, take_model_defaults};
pub use backend::{inference, load_backend, openai_config, BackendPlan};
use engine_thread::{run_on_this_thread, Ends};

/// The tokio runtime a front end drives, from `builder` with every driver enabled; one that
/// cannot be built is said on stderr and ends the program with [`ExitCode::Internal`].
pub fn runtime(builder: &mut tokio::runtime::Builder) -> Result<tokio::runtime::Runtime, ExitCode> {
    builder.enable_all().build().map_err(|e| {
        say(&format!("cannot start the runtime: {e}"));
        ExitCode::Internal
    })
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
    /// The notes file the run reads (`--notes FILE`), checked: a regular file outside the
    /// work tree.
    pub notes_file: Option<PathBuf>,
}

/// A listener for the model load's progress, from 0 to 1.
#[derive(Clone)]
pub struct LoadProgress(pub Arc<dyn Fn(f32) + Send + Sync>);

impl std::fmt::Debug for LoadProgress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LoadProgress")
    }
}

/// A started run.
#[derive(Debug)]
pub struct RunHandle {
    pub cancel: CancellationToken,
    pub run_dir: PathBuf,
    /// Where the person's notes wait for the next round.
    pub notes: NoteInbox,
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

/// Refuses a workspace the worker could not write (a read-only mount, a directory without
/// write permission), unless the run only reads (`--sandbox read-only`) or works in a
/// worktree of its own (`--worktree`): every write would fail, round after round.
fn check_writable(settings: &Settings) -> Result<(), UsageError> {
    use crate::protocol::policy::SandboxMode;
    if settings.options.sandbox == SandboxMode::ReadOnly || settings.options.worktree {
        return Ok(());
    }
    rustix::fs::access(&settings.workspace, rustix::fs::Access::WRITE_OK).map_err(|e| {
        UsageError::Invalid(format!(
            "the workspace {} is not writable ({e}): the worker could change nothing; make it writable, or pass --sandbox read-only for a run that only reads",
            settings.workspace.display()
        ))
    })
}

/// Checks everything that depends on input before a run starts.
pub fn prepare(settings: &Settings) -> Result<Prepared, UsageError> {
    prepare_run(settings, None)
}

/// [`prepare`] for a run that goes on (`--resume`): under its own id, in its own directory.
pub fn prepare_resumed(settings: &Settings, resume: Resume) -> Result<Prepared, UsageError> {
    prepare_run(settings, Some(resume))
}

fn prepare_run(settings: &Settings, resume: Option<Resume>) -> Result<Prepared, UsageError> {
    open_workspace(&settings.workspace)?;
    check_writable(settings)?;
    let mut settings = settings.clone();
    let backend = match settings.options.backend.clone() {
        BackendKind::Script(path) => BackendPlan::Script(
            ScriptBackend::load(&path)?.with_chat_format(chat_format(&settings.options))?,
            path,
        ),
        BackendKind::Llama => {
            let path = settings.model_path();
            if settings.options.model.is_none() && !path.exists() {
                return Err(UsageError::NoModel(path));
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
    let top = open_workspace(&settings.workspace)?.top().to_path_buf();
    // A resumed run's directory was checked when it was resumed (`runs::resume`).
    let (run_id, run_dir, fresh_run_dir) = match &resume {
        Some(resume) => (resume.from.clone(), resume.dir.clone(), false),
        None => {
            let run_id = new_run_id();
            let run_dir = settings
                .options
                .run_dir
                .clone()
                .unwrap_or_else(|| settings.dirs.data.join("runs").join(&run_id));
            let fresh_run_dir = !run_dir.exists();
            intake::check_run_dir(&run_dir)?;
            intake::check_run_dir_outside(&run_dir, &top)?;
            (run_id, run_dir, fresh_run_dir)
        }
    };
    let notes_file = match &settings.notes {
        Some(path) => {
            Some(crate::engine::notes::check_file(path, &top).map_err(UsageError::Invalid)?)
        }
        None => None,
    };
    Ok(Prepared {
        settings,
        backend,
        run_id,
        run_dir,
        fresh_run_dir,
        resume,
        worktree: None,
        on_load: None,
        notes_file,
    })
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
    let notes = match &prepared.notes_file {
        Some(path) => NoteInbox::watching(path.clone()),
        None => NoteInbox::default(),
    }
    .journaled(run_dir.join(crate::engine::notes::JOURNAL_FILE));
    if let Some(resume) = &prepared.resume {
        // The waiting notes are written down in the run's journal already.
        for note in &resume.waiting {
            notes.push_written(note.clone());
        }
        if let Some(note) = &resume.note {
            notes.push(note.clone());
        }
    }
    let thread_cancel = cancel.clone();
    let thread_notes = notes.clone();
    let thread = std::thread::Builder::new()
        .name("ralph-engine".into())
        .spawn(move || {
            let ends = Ends {
                sink,
                live,
                cancel: thread_cancel,
                notes: thread_notes,
            };
            run_on_this_thread(prepared, objective, approver, ends)
        })
        .map_err(|e| StartError::Internal(format!("cannot start the engine thread: {e}")))?;
    Ok(RunHandle {
        cancel,
        run_dir,
        notes,
        thread,
    })
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
    // A resumed run's log file is the run's since its first start.
    if prepared.settings.log_file.is_none() && prepared.resume.is_none() {
        let _ = std::fs::remove_file(prepared.run_dir.join("ralph-tui.log"));
    }
    if prepared.fresh_run_dir {
        let _ = std::fs::remove_dir(&prepared.run_dir);
    }
}
