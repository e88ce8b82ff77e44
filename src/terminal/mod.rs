//! The terminal UI's outer shell: terminal setup and restore, the event loop, frame
//! scheduling.
//!
//! [`run`] takes the terminal (restoring it on every way out, panics included), points fd 2 at
//! the log file while it owns the screen, and drives [`event_loop::drive`] until the person
//! quits. The exit code is the run's status (see the CLI contract); quitting from the
//! objective editor before any run started exits 130, like a cancelled run, since nothing was
//! done.

pub mod clean;
pub mod event_loop;
pub mod failure;
pub mod frames;
pub mod notify;
pub mod replay;
pub mod setup;

use std::io::IsTerminal;
use std::path::Path;

use crate::app::{self, BackendPlan, Prepared};
use crate::error::{say, ExitCode};
use crate::llm::Backend;
use crate::screens::{Setup, State, Theme};

fn label<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// What the screens show about the run before the engine says more.
pub fn setup_of(prepared: &Prepared) -> Setup {
    let settings = &prepared.settings;
    let (model, ctx_size) = match &prepared.backend {
        BackendPlan::Script(script, path) => (
            format!("script {}", file_name(path)),
            script.info().ctx_size,
        ),
        BackendPlan::Llama(path) => (file_name(path), settings.options.ctx_size),
        BackendPlan::OpenAi {
            model, ctx_size, ..
        } => (model.clone(), *ctx_size),
    };
    let repo = match &prepared.worktree {
        Some(info) => file_name(&info.user_repo),
        None => file_name(&settings.workspace),
    };
    Setup {
        repo,
        workspace: settings.workspace.display().to_string(),
        model,
        device: String::new(),
        max_rounds: settings.options.max_rounds.get(),
        sandbox: label(&settings.options.sandbox),
        approval: label(&settings.options.approval),
        verify: settings.options.verify.clone(),
        run_dir: prepared.run_dir.display().to_string(),
        ctx_size,
        worktree: prepared.worktree.as_ref().map(|w| w.branch.clone()),
        round_timeout: settings.options.round_timeout,
    }
}

/// Why a TUI run is refused where stdin or stdout is not a terminal.
pub const NO_TERMINAL: &str = "the TUI needs a terminal: run ralph-tui in one, or pass --headless";

/// Whether the TUI can run here: stdin and stdout are a terminal. Checked before a run
/// directory is made, so a run that cannot start leaves none.
pub fn has_terminal() -> bool {
    std::io::stdout().is_terminal() && std::io::stdin().is_terminal()
}

/// Runs the TUI to the end and returns the exit code. `objective`: `None` opens the editor.
/// `log_file` receives everything written to fd 2 while the UI owns the terminal.
pub fn run(prepared: Prepared, objective: Option<String>, log_file: &Path) -> ExitCode {
    if !has_terminal() {
        say(NO_TERMINAL);
        return ExitCode::Usage;
    }
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    let runtime = match app::runtime(builder.worker_threads(2)) {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let mut state = State::new(setup_of(&prepared), objective, Theme::from_env());
    if let Some(resume) = &prepared.resume {
        state = state.resuming_at(resume.start.round);
    }

    let stderr = match setup::StderrToFile::new(log_file) {
        Ok(redirect) => Some(redirect),
        Err(e) => {
            say(&format!(
                "cannot send stderr to {}: {e}; stray output may disturb the screen",
                log_file.display()
            ));
            None
        }
    };
    let guard = match setup::TerminalGuard::enter() {
        Ok(guard) => guard,
        Err(e) => {
            drop(stderr);
            say(&format!("cannot set up the terminal: {e}"));
            return ExitCode::Internal;
        }
    };
    let backend =
        clean::CleanBackend::new(ratatui::backend::CrosstermBackend::new(std::io::stdout()));
    let ended = match ratatui::Terminal::new(backend) {
        Ok(mut terminal) => {
            let _ = terminal.clear();
            let input = crossterm::event::EventStream::new();
            let mut notifier = notify::Notifier::new(
                prepared.settings.options.notify,
                notify::Osc::from_env(),
                Box::new(std::io::stdout()),
            );
            let ended = runtime.block_on(event_loop::drive_notifying(
                &mut terminal,
                input,
                state,
                prepared,
                &mut |_| {},
                &mut notifier,
            ));
            let _ = terminal.show_cursor();
            ended
        }
        Err(e) => event_loop::Ended {
            code: ExitCode::Internal,
            message: Some(format!("cannot set up the terminal: {e}")),
        },
    };
    drop(guard);
    drop(stderr);
    // The engine thread may still be winding down after a forced quit; do not wait for it.
    runtime.shutdown_background();
    if let Some(message) = &ended.message {
        say(message);
    }
    ended.code
}
