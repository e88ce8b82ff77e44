//! Headless mode: JSON Lines events on stdout, human messages on stderr.
//!
//! SIGINT and SIGTERM cancel the run: generation stops between tokens, a running command is
//! killed, and the run ends `cancelled` with its log complete.

use std::io::Write;
use std::sync::Arc;

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::app::{self, Prepared, StartError};
use crate::engine::RunSummary;
use crate::error::{say, ExitCode};
use crate::protocol::event::{CheckPoint, CheckRun, Event, RunStatus, Stamped, Verification};
use crate::tools::approval::DenyAll;
use crate::workspace::WorktreeInfo;

/// Writes each event as one line on stdout, flushed; a warning and each run of the check
/// also say so on stderr.
fn stdout_sink() -> crate::engine::EventSink {
    Box::new(|event: &Stamped| {
        match &event.event {
            Event::Warning { message } => say(&format!("warning: {message}")),
            Event::CheckFinished { round, at, check } => say(&check_line(*round, *at, check)),
            _ => {}
        }
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", event.to_line());
        let _ = out.flush();
    })
}

/// Runs to the end and returns the exit code.
pub fn run(prepared: Prepared, objective: String) -> ExitCode {
    let runtime = match app::runtime(&mut tokio::runtime::Builder::new_current_thread()) {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let worktree = prepared.worktree.clone();
    let handle = match app::start(prepared, objective, Arc::new(DenyAll), stdout_sink()) {
        Ok(handle) => handle,
        Err(e) => {
            say(&e.to_string());
            return ExitCode::Internal;
        }
    };
    let cancel = handle.cancel.clone();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    let waiter = std::thread::spawn(move || {
        let result = handle.join();
        let _ = done_tx.send(());
        result
    });
    runtime.block_on(cancel_on_signals(cancel, done_rx));
    let result = waiter
        .join()
        .unwrap_or_else(|_| Err(StartError::Internal("the engine thread panicked".into())));
    match result {
        Ok(summary) => finished(&summary, worktree.as_ref()),
        Err(StartError::Usage(e)) => {
            say(&e.to_string());
            ExitCode::Usage
        }
        Err(StartError::Internal(e)) => {
            say(&e);
            ExitCode::Internal
        }
    }
}

/// Cancels the run on SIGINT or SIGTERM (or a signal caught before these listeners existed,
/// see `signals`) until `done` says the run ended.
async fn cancel_on_signals(cancel: CancellationToken, mut done: oneshot::Receiver<()>) {
    use tokio::signal::unix::{signal, SignalKind};
    let mut sigint = signal(SignalKind::interrupt()).ok();
    let mut sigterm = signal(SignalKind::terminate()).ok();
    if crate::signals::requested() {
        say("cancelling (signal)");
        cancel.cancel();
    }
    loop {
        tokio::select! {
            _ = &mut done => break,
            Some(_) = async { match sigint.as_mut() { Some(s) => s.recv().await, None => std::future::pending().await } } => {
                say("cancelling (interrupt)");
                cancel.cancel();
            }
            Some(_) = async { match sigterm.as_mut() { Some(s) => s.recv().await, None => std::future::pending().await } } => {
                say("cancelling (terminate)");
                cancel.cancel();
            }
        }
    }
}

/// Says how the run ended on stderr (the outcome, where a worktree run's work is, the
/// verification) and returns its exit code.
fn finished(summary: &RunSummary, worktree: Option<&WorktreeInfo>) -> ExitCode {
    say(&summary_line(
        summary.status,
        summary.rounds_started,
        summary.verification.as_ref(),
        summary.error.as_deref(),
        &summary.run_dir.display().to_string(),
    ));
    if let Some(w) = worktree {
        say(&format!(
            "the run's work is on branch {} (worktree {}); your checkout is unchanged",
            w.branch,
            w.path.display()
        ));
        // How to get the work later, as the TUI says when its review keeps the branch.
        let resumable = matches!(
            summary.status,
            RunStatus::Cancelled
                | RunStatus::RoundFailed
                | RunStatus::BudgetLimited
                | RunStatus::Stalled
        );
        say(&w.kept_line(resumable));
    }
    if let Some(v) = &summary.verification {
        say(&format!(
            "verification `{}`: {}",
            v.command,
            if v.passed { "passed" } else { "FAILED" }
        ));
    }
    ExitCode::of_run(summary.status, summary.verification.as_ref())
}

/// What one run of the check found, in a few words: `` check `pytest` failed (exit 1,
/// 3.2 s) ``, `` claim refused by the check: `pytest` ... `` for a claim it refused, and the
/// note when there is one (the command and the note sanitized: they may come from the
/// repository).
pub fn check_said(at: CheckPoint, check: &CheckRun) -> String {
    let what = match at {
        CheckPoint::RoundStart => "check",
        CheckPoint::Change => "check after the change:",
        CheckPoint::Claim if check.verdict.is_pass() => "claim checked:",
        CheckPoint::Claim => "claim refused by the check:",
    };
    let exit = match check.exit_code {
        Some(code) => format!("exit {code}"),
        None => "no exit code".to_string(),
    };
    let mut said = format!(
        "{what} `{}` {} ({exit}, {:.1} s)",
        crate::text::sanitize_line(&check.command),
        check.verdict.as_str(),
        check.wall_ms as f64 / 1000.0
    );
    if !check.note.is_empty() {
        said.push_str(&format!(" — {}", crate::text::sanitize_line(&check.note)));
    }
    said
}

/// The stderr line of one run of the check: `` round 2: check `pytest` failed (exit 1,
/// 3.2 s) ``.
pub fn check_line(round: u32, at: CheckPoint, check: &CheckRun) -> String {
    format!("round {round}: {}", check_said(at, check))
}

/// The closing line on stderr: the outcome in one sentence (claim and verify result), a
/// verify failure after a claimed completion said plainly, and the reason a run failed
/// (`run_finished.error`, sanitized: it may quote the server or the worker).
pub fn summary_line(
    status: RunStatus,
    rounds_started: u32,
    verification: Option<&Verification>,
    error: Option<&str>,
    run_dir: &str,
) -> String {
    let warning = if status.contradicted_by(verification) {
        " — the claimed completion did not pass verification"
    } else {
        ""
    };
    let reason = error
        .map(|e| format!(": {}", crate::text::sanitize_line(e)))
        .unwrap_or_default();
    format!(
        "{} after {} — {}{reason}{warning}; run log: {run_dir}",
        status.as_str(),
        crate::text::count(rounds_started as usize, "round", "rounds"),
        status.describe_with(verification),
    )
}
