//! The one `tokio::select!` loop: terminal input, engine events, finished side effects,
//! the clock and signals in; frames out, when requested and no faster than the scheduler
//! allows.
//!
//! The loop is `biased` in this order: terminal input, a due frame, results of side effects,
//! engine events (drained in bounded batches), the clock. So a key press is handled before
//! the next batch of tokens, and a token flood still yields a frame every ~16 ms. The engine
//! talks to the loop through one bounded channel; when the UI falls behind, the engine
//! thread waits at its sink instead of memory growing.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use ratatui::backend::Backend;
use ratatui::layout::Rect;
use ratatui::Terminal;
use tokio::sync::mpsc;

use super::frames::FrameScheduler;
use crate::app::{self, Prepared, RunHandle, StartError};
use crate::engine::RunSummary;
use crate::error::ExitCode;
use crate::protocol::event::{ChangedFile, Event, Stamped};
use crate::tools::approval::ApprovalBroker;
use crate::ui::patch;
use crate::ui::state::{Approval, CommitState, DiffSource, Effect, Msg, Phase, State};
use crate::workspace::{Baseline, DiffModel, DisplayLimits, OnChange, Snapshot, Workspace};

/// Most engine messages handled between two looks at the terminal.
const BATCH: usize = 512;
/// Engine messages that may wait in the channel before the engine thread waits.
const CHANNEL: usize = 4096;

/// What the engine side sends the loop.
#[derive(Debug)]
enum Inbound {
    Event(Event),
    Approval(Approval),
    /// The live watcher's files for a running round.
    Live(u32, Vec<ChangedFile>),
    /// The engine thread ended.
    Joined(Result<RunSummary, StartError>),
}

/// Results of side effects performed off the loop.
#[derive(Debug)]
enum Done {
    Msg(Msg),
    /// The review diff, with the snapshot it was computed against (what a commit commits).
    Reviewed(Snapshot, Result<DiffModel, String>),
}

/// How the loop ended.
#[derive(Debug)]
pub struct Ended {
    pub code: ExitCode,
    /// A line for the person once the terminal is theirs again.
    pub message: Option<String>,
}

/// The run this loop drives, once started.
struct Run {
    handle_cancel: tokio_util::sync::CancellationToken,
    broker: Arc<ApprovalBroker>,
    baseline: Baseline,
    run_dir: PathBuf,
}

struct Driver {
    prepared: Prepared,
    run: Option<Run>,
    /// The snapshot the review diff shows; a commit commits exactly this.
    reviewed: Option<Snapshot>,
    inbound_tx: mpsc::Sender<Inbound>,
    done_tx: mpsc::UnboundedSender<Done>,
}

fn diff_limits() -> DisplayLimits {
    DisplayLimits::default()
}

fn sink(tx: mpsc::Sender<Inbound>) -> crate::engine::EventSink {
    Box::new(move |stamped: &Stamped| {
        // The receiver is gone only when the UI has quit; then nobody needs the event.
        let _ = tx.blocking_send(Inbound::Event(stamped.event.clone()));
    })
}

impl Driver {
    fn start(&mut self, objective: String) -> Result<(), Ended> {
        let internal = |message: String| Ended {
            code: ExitCode::Internal,
            message: Some(message),
        };
        let workspace = Workspace::open(&self.prepared.settings.workspace)
            .map_err(|e| internal(e.to_string()))?;
        let baseline = workspace
            .baseline()
            .map_err(|e| internal(format!("cannot record the workspace before the run: {e}")))?;
        let approvals = self.inbound_tx.clone();
        let broker = Arc::new(ApprovalBroker::new(move |request, id| {
            let _ = approvals.blocking_send(Inbound::Approval(Approval {
                id,
                round: request.round,
                command: request.command,
                cwd: request.cwd,
            }));
        }));
        let live_tx = self.inbound_tx.clone();
        let live: OnChange = Box::new(move |round, files| {
            // Live changes are a view; when the UI lags, dropping one is harmless.
            let _ = live_tx.try_send(Inbound::Live(round, files));
        });
        let handle: RunHandle = app::start_with_live(
            self.prepared.clone(),
            objective,
            broker.clone(),
            sink(self.inbound_tx.clone()),
            Some(live),
        )
        .map_err(|e| internal(e.to_string()))?;
        let run_dir = handle.run_dir.clone();
        let cancel = handle.cancel.clone();
        let joined = self.inbound_tx.clone();
        std::thread::Builder::new()
            .name("ralph-join".into())
            .spawn(move || {
                let result = handle.join();
                let _ = joined.blocking_send(Inbound::Joined(result));
            })
            .map_err(|e| internal(format!("cannot start a thread: {e}")))?;
        self.run = Some(Run {
            handle_cancel: cancel,
            broker,
            baseline,
            run_dir,
        });
        Ok(())
    }

    /// Performs one effect; `Some` ends the loop. `state` is the UI's state after the update
    /// that asked for the effect (for the farewell line on quitting).
    fn perform(&mut self, effect: Effect, state: &State) -> Option<Ended> {
        match effect {
            Effect::StartRun(objective) => {
                if let Err(ended) = self.start(objective) {
                    return Some(ended);
                }
            }
            Effect::CancelRun => {
                if let Some(run) = &self.run {
                    run.handle_cancel.cancel();
                }
            }
            Effect::Answer(id, decision) => {
                if let Some(run) = &self.run {
                    run.broker.answer(id, decision);
                }
            }
            Effect::LoadDiff(source) => self.load_diff(source),
            Effect::Commit(message) => self.commit(message),
            Effect::Quit(code) => {
                if let Some(run) = &self.run {
                    run.handle_cancel.cancel();
                }
                return Some(Ended {
                    code,
                    message: Some(farewell(state)),
                });
            }
        }
        None
    }

    fn load_diff(&self, source: DiffSource) {
        let Some(run) = &self.run else {
            return;
        };
        let done = self.done_tx.clone();
        let root = self.prepared.settings.workspace.clone();
        let base = run.baseline.snapshot;
        let run_dir = run.run_dir.clone();
        tokio::task::spawn_blocking(move || match source {
            DiffSource::Round(round) => {
                let path = run_dir
                    .join("rounds")
                    .join(format!("{round:02}"))
                    .join("diff.patch");
                let result = std::fs::read_to_string(&path)
                    .map(|text| patch::parse(&text).for_display(&diff_limits()))
                    .map_err(|e| format!("{}: {e}", path.display()));
                let _ = done.send(Done::Msg(Msg::DiffLoaded(source, result)));
            }
            DiffSource::Live(_) | DiffSource::Review => {
                let result = Workspace::open(&root)
                    .and_then(|ws| {
                        let now = ws.snapshot()?;
                        Ok((now, ws.diff(&base, &now)?))
                    })
                    .map_err(|e| e.to_string());
                let _ = match (source, result) {
                    (DiffSource::Review, Ok((now, diff))) => {
                        done.send(Done::Reviewed(now, Ok(diff.for_display(&diff_limits()))))
                    }
                    (_, result) => done.send(Done::Msg(Msg::DiffLoaded(
                        source,
                        result.map(|(_, diff)| diff.for_display(&diff_limits())),
                    ))),
                };
            }
        });
    }

    fn commit(&self, message: String) {
        let (Some(run), Some(last)) = (&self.run, self.reviewed) else {
            let _ = self.done_tx.send(Done::Msg(Msg::Committed(Err(
                "the run's changes are not known yet".into(),
            ))));
            return;
        };
        let done = self.done_tx.clone();
        let root = self.prepared.settings.workspace.clone();
        let baseline = run.baseline.clone();
        tokio::task::spawn_blocking(move || {
            let result = Workspace::open(&root)
                .and_then(|ws| ws.commit_run(&baseline, &last, &message))
                .map(|outcome| {
                    let id = outcome.commit.to_string();
                    let short = id.get(..10).unwrap_or(&id).to_string();
                    match outcome.branch {
                        Some(branch) => format!(
                            "{short} on {branch} ({} file(s) +{} −{})",
                            outcome.files_changed, outcome.insertions, outcome.deletions
                        ),
                        None => format!("{short} (detached HEAD)"),
                    }
                })
                .map_err(|e| e.to_string());
            let _ = done.send(Done::Msg(Msg::Committed(result)));
        });
    }
}

fn usage_or_internal(error: StartError) -> Ended {
    match error {
        StartError::Usage(e) => Ended {
            code: ExitCode::Usage,
            message: Some(e.to_string()),
        },
        StartError::Internal(e) => Ended {
            code: ExitCode::Internal,
            message: Some(e),
        },
    }
}

/// The event that ends a run, rebuilt from the engine's summary when the event itself never
/// arrived.
fn finished_from(summary: RunSummary) -> Event {
    let worker_reported = summary.status.is_worker_report();
    Event::RunFinished {
        status: summary.status,
        rounds_started: summary.rounds_started,
        report: summary.report,
        last_valid_report: summary.last_valid_report,
        error: summary.error,
        worker_reported,
        verification: summary.verification,
    }
}

async fn next_signal(signal: &mut Option<tokio::signal::unix::Signal>) {
    match signal.as_mut() {
        Some(s) => {
            if s.recv().await.is_none() {
                std::future::pending::<()>().await;
            }
        }
        None => std::future::pending::<()>().await,
    }
}

async fn frame_due(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await,
        None => std::future::pending::<()>().await,
    }
}

/// The line the person reads after the UI is gone.
pub fn farewell(state: &State) -> String {
    match (&state.review, state.phase) {
        (Some(review), _) => {
            let mut line = format!(
                "{} after {} round(s): {}; run log: {}",
                review.status.as_str(),
                review.rounds_started,
                review.status.describe(),
                state.setup.run_dir
            );
            if let CommitState::Done(id) = &review.commit {
                line.push_str(&format!("; committed {id}"));
            }
            line
        }
        (None, Phase::Editing) => "no run was started".to_string(),
        (None, _) => format!(
            "quit before the run had finished stopping; run log: {}",
            state.setup.run_dir
        ),
    }
}

/// Runs the UI until the person quits. `input` is the terminal's event stream; `on_frame`
/// sees the state after each drawn frame (the benchmark measures with it).
pub async fn drive<B, S>(
    terminal: &mut Terminal<B>,
    mut input: S,
    mut state: State,
    prepared: Prepared,
    on_frame: &mut dyn FnMut(&State),
) -> Ended
where
    B: Backend,
    S: Stream<Item = std::io::Result<crossterm::event::Event>> + Unpin,
{
    use tokio::signal::unix::{signal, SignalKind};
    let (inbound_tx, mut inbound_rx) = mpsc::channel(CHANNEL);
    let (done_tx, mut done_rx) = mpsc::unbounded_channel();
    let mut driver = Driver {
        prepared,
        run: None,
        reviewed: None,
        inbound_tx,
        done_tx,
    };
    let started = Instant::now();
    let mut frames = FrameScheduler::default();
    frames.request();
    let mut clock = tokio::time::interval(Duration::from_secs(1));
    clock.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut sigterm = signal(SignalKind::terminate()).ok();
    let mut sighup = signal(SignalKind::hangup()).ok();
    let mut last_clock = Instant::now();
    // Once the terminal's input ends (or fails), it is not polled again.
    let mut input_open = true;

    if state.phase == Phase::Running {
        let objective = state.objective.clone();
        if let Some(ended) = driver.perform(Effect::StartRun(objective), &state) {
            return ended;
        }
    }

    loop {
        let mut effects = Vec::new();
        tokio::select! {
            biased;
            input_event = input.next(), if input_open => match input_event {
                Some(Ok(event)) => {
                    use crossterm::event::Event as Term;
                    let msg = match event {
                        Term::Key(key) => Some(Msg::Key(key)),
                        Term::Mouse(mouse) => Some(Msg::Mouse(mouse)),
                        Term::Paste(text) => Some(Msg::Paste(text)),
                        Term::Resize(..) | Term::FocusGained | Term::FocusLost => None,
                    };
                    if let Some(msg) = msg {
                        effects = state.update(msg);
                    }
                    frames.request();
                }
                Some(Err(e)) => {
                    tracing::error!("terminal input: {e}; cancelling the run");
                    input_open = false;
                    effects = state.update(Msg::Terminate);
                }
                None => {
                    input_open = false;
                    effects = state.update(Msg::Terminate);
                }
            },
            () = frame_due(frames.deadline()) => {
                let area = match terminal.size() {
                    Ok(size) => Rect::new(0, 0, size.width, size.height),
                    Err(e) => {
                        tracing::error!("terminal size: {e}");
                        state.screen
                    }
                };
                state.sync(area);
                if let Err(e) = terminal.draw(|frame| frame.render_widget(&state, frame.area())) {
                    tracing::error!("draw: {e}");
                }
                frames.drawn(Instant::now());
                on_frame(&state);
            }
            Some(done) = done_rx.recv() => {
                let msg = match done {
                    Done::Msg(msg) => msg,
                    Done::Reviewed(snapshot, result) => {
                        driver.reviewed = Some(snapshot);
                        Msg::DiffLoaded(DiffSource::Review, result)
                    }
                };
                effects = state.update(msg);
                frames.request();
            }
            Some(first) = inbound_rx.recv() => {
                if last_clock.elapsed() >= Duration::from_millis(100) {
                    last_clock = Instant::now();
                    state.update(Msg::Tick(started.elapsed()));
                }
                let mut next = Some(first);
                let mut handled = 0;
                while let Some(inbound) = next.take() {
                    match inbound {
                        Inbound::Event(event) => effects.extend(state.update(Msg::Engine(event))),
                        Inbound::Approval(approval) => {
                            effects.extend(state.update(Msg::ApprovalAsked(approval)));
                        }
                        Inbound::Live(round, files) => {
                            effects.extend(state.update(Msg::LiveChanges(round, files)));
                        }
                        Inbound::Joined(Ok(summary)) => {
                            if state.phase != Phase::Finished {
                                effects.extend(state.update(Msg::Engine(finished_from(summary))));
                            }
                        }
                        Inbound::Joined(Err(e)) => {
                            if state.phase != Phase::Finished {
                                return usage_or_internal(e);
                            }
                        }
                    }
                    handled += 1;
                    if handled < BATCH {
                        next = inbound_rx.try_recv().ok();
                    }
                }
                frames.request();
            }
            _ = clock.tick() => {
                last_clock = Instant::now();
                state.update(Msg::Tick(started.elapsed()));
                if state.phase == Phase::Running {
                    frames.request();
                }
            }
            () = next_signal(&mut sigterm) => effects = state.update(Msg::Terminate),
            () = next_signal(&mut sighup) => effects = state.update(Msg::Terminate),
        }
        for effect in effects {
            if let Some(ended) = driver.perform(effect, &state) {
                return ended;
            }
        }
    }
}
