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

use super::notify::Notifier;
use crate::app::{self, Prepared, RunHandle, StartError};
use crate::engine::RunSummary;
use crate::error::ExitCode;
use crate::protocol::event::{ChangedFile, Event, Stamped};
use crate::screens::state::{Approval, DiffSource, Effect, Msg, Phase, State};
use crate::tools::approval::ApprovalBroker;
use crate::workspace::{
    Attribution, Baseline, DiffModel, DisplayLimits, OnChange, Snapshot, Workspace,
};

mod reviewing;
mod sending_back;
mod session;

pub use reviewing::farewell;
use reviewing::kept;
use session::Session;

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
    /// How far the model's load is, 0 to 1.
    Loading(f32),
    /// The engine thread ended.
    Joined(Result<RunSummary, StartError>),
}

/// Results of side effects performed off the loop.
#[derive(Debug)]
enum Done {
    Msg(Msg),
    /// The review diff, with the snapshot it was computed against (what a commit commits,
    /// limited to the files the person chose in it).
    Reviewed(Snapshot, Result<DiffModel, String>),
    /// A worktree run's commit reached the person's work tree and removed the worktree: the
    /// review goes on there (its workspace, the tree before applying, the tree after).
    Moved(PathBuf, Snapshot, Snapshot),
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
    /// Where the person's notes wait for the run's next round.
    notes: crate::engine::notes::NoteInbox,
}

struct Driver {
    prepared: Prepared,
    run: Option<Run>,
    /// The snapshot the review diff shows; a commit commits the chosen files of it.
    reviewed: Option<Snapshot>,
    /// The worker's files, from the engine's end-of-round `workspace_changed` events.
    worker: Attribution,
    /// Where the review's changes are, once a worktree run's commit moved them into the
    /// person's work tree: that workspace and its tree before they came.
    moved: Option<(PathBuf, Snapshot)>,
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
        let mut baseline = workspace
            .baseline()
            .map_err(|e| internal(format!("cannot record the workspace before the run: {e}")))?;
        // The review shows the whole run: a worktree run's from its snapshot, a resumed run's
        // from its first start, with the files its earlier parts changed as the worker's.
        if let Some(start) = whole_run_start(&self.prepared, &workspace) {
            baseline.snapshot = start;
        }
        if let Some(resume) = &self.prepared.resume {
            self.worker.add(resume.earlier.worker.iter().cloned());
        }
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
        let loading_tx = self.inbound_tx.clone();
        let mut prepared = self.prepared.clone();
        // The header's load gauge; a lagging UI may drop a step.
        prepared.on_load = Some(app::LoadProgress(Arc::new(move |progress| {
            let _ = loading_tx.try_send(Inbound::Loading(progress));
        })));
        let handle: RunHandle = app::start_with_live(
            prepared,
            objective,
            broker.clone(),
            sink(self.inbound_tx.clone()),
            Some(live),
        )
        .map_err(|e| internal(e.to_string()))?;
        let run_dir = handle.run_dir.clone();
        let cancel = handle.cancel.clone();
        let notes = handle.notes.clone();
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
            notes,
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
            Effect::Review(effect) => self.review_effect(effect, state),
            Effect::Note(text) => self.note(text),
            Effect::SendBack { note, rounds } => return self.send_back(note, rounds),
            Effect::Quit(code) => {
                match &self.run {
                    Some(run) => {
                        run.handle_cancel.cancel();
                        if let Some(kept) = kept(state, self.prepared.worktree.as_ref()) {
                            crate::runs::review::record(&run.run_dir, "kept", &kept);
                        }
                    }
                    None => app::abandon(&self.prepared),
                }
                return Some(Ended {
                    code,
                    message: Some(farewell(state, self.prepared.worktree.as_ref())),
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
        let (root, base) = self.review_place(run);
        let run_dir = run.run_dir.clone();
        let worker = self.worker.clone();
        // The files listed before the run, for what the diff cannot show (`hidden`).
        let listing = (source == DiffSource::Review && self.moved.is_none())
            .then(|| run.baseline.listing.clone());
        // What a commit goes on: a worktree run's snapshot commit's parent until its commit
        // moved the review to the person's work tree; HEAD there and in place.
        let snapshot_commit = match &self.moved {
            None => self.prepared.worktree.as_ref().map(|w| w.snapshot.clone()),
            Some(_) => None,
        };
        tokio::task::spawn_blocking(move || match source {
            DiffSource::Round(round) => {
                let path = run_dir
                    .join("rounds")
                    .join(format!("{round:02}"))
                    .join("diff.patch");
                let result = std::fs::read_to_string(&path)
                    .map_err(|e| e.to_string())
                    .and_then(|text| DiffModel::from_patch(&text).map_err(|e| e.to_string()))
                    .map(|model| model.for_display(&diff_limits()))
                    .map_err(|e| format!("{}: {e}", path.display()));
                let _ = done.send(Done::Msg(Msg::DiffLoaded(source, result)));
            }
            DiffSource::Live(_) | DiffSource::Review => {
                let base = match source {
                    DiffSource::Live(round) => round_base(&run_dir, round).unwrap_or(base),
                    _ => base,
                };
                let result = Workspace::open(&root)
                    .and_then(|ws| {
                        let (now, unseen) = ws.snapshot_seen()?;
                        let mut diff = if source == DiffSource::Review {
                            let on = match &snapshot_commit {
                                Some(commit) => ws.parent_tree(commit),
                                None => ws.head_tree(),
                            };
                            let mut diff = ws.review_diff(&base, &now, on)?;
                            // A running round's files are not attributed until it ends.
                            worker.mark(&mut diff);
                            diff
                        } else {
                            ws.diff(&base, &now)?
                        };
                        diff.unseen = unseen;
                        if let Some(listing) = &listing {
                            let hidden = ws.compare(listing, &ws.listing(), &diff.paths());
                            diff.hidden = hidden.changes;
                            diff.new_repos = hidden.new_repos;
                        }
                        Ok((now, diff))
                    })
                    .map_err(|e| e.to_string());
                let _ = match (source, result) {
                    (DiffSource::Review, Ok((now, diff))) => done.send(Done::Reviewed(
                        now,
                        Ok(diff.for_display(&DisplayLimits::review())),
                    )),
                    (_, result) => done.send(Done::Msg(Msg::DiffLoaded(
                        source,
                        result.map(|(_, diff)| diff.for_display(&diff_limits())),
                    ))),
                };
            }
        });
    }
}

/// Where the whole run started, when it is not the work tree as this start found it: a
/// worktree run's snapshot commit, a resumed run's first start (its tree still there).
fn whole_run_start(prepared: &Prepared, workspace: &Workspace) -> Option<Snapshot> {
    if let Some(info) = &prepared.worktree {
        return workspace.commit_tree(&info.snapshot);
    }
    let tree = prepared.resume.as_ref()?.earlier.base?;
    workspace.has_tree(tree).then_some(Snapshot { tree })
}

/// The tree round `round` started from, as the engine wrote it into the round's directory.
pub fn round_base(run_dir: &std::path::Path, round: u32) -> Option<Snapshot> {
    crate::engine::runlog::round_base(run_dir, round).map(|tree| Snapshot { tree })
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

/// Runs the UI until the person quits. `input` is the terminal's event stream; `on_frame`
/// sees the state after each drawn frame (the benchmark measures with it).
pub async fn drive<B, S>(
    terminal: &mut Terminal<B>,
    input: S,
    state: State,
    prepared: Prepared,
    on_frame: &mut dyn FnMut(&State),
) -> Ended
where
    B: Backend,
    S: Stream<Item = std::io::Result<crossterm::event::Event>> + Unpin,
{
    let mut quiet = Notifier::off();
    drive_notifying(terminal, input, state, prepared, on_frame, &mut quiet).await
}

/// The message a terminal event makes, if any; focus changes go to the notifier.
fn terminal_msg(event: crossterm::event::Event, notifier: &mut Notifier) -> Option<Msg> {
    use crossterm::event::Event as Term;
    match event {
        Term::Key(key) => Some(Msg::Key(key)),
        Term::Mouse(mouse) => Some(Msg::Mouse(mouse)),
        Term::Paste(text) => Some(Msg::Paste(text)),
        Term::FocusGained => {
            notifier.focus(true);
            None
        }
        Term::FocusLost => {
            notifier.focus(false);
            None
        }
        Term::Resize(..) => None,
    }
}

/// One frame, at the terminal's size (the last known one when it cannot be read).
fn draw<B: Backend>(terminal: &mut Terminal<B>, state: &mut State) {
    let area = match terminal.size() {
        Ok(size) => Rect::new(0, 0, size.width, size.height),
        Err(e) => {
            tracing::error!("terminal size: {e}");
            state.areas.screen
        }
    };
    state.sync(area);
    if let Err(e) = terminal.draw(|frame| frame.render_widget(&*state, frame.area())) {
        tracing::error!("draw: {e}");
    }
}

impl Driver {
    /// A driver for `prepared`, before its run starts.
    fn new(
        prepared: Prepared,
        inbound_tx: mpsc::Sender<Inbound>,
        done_tx: mpsc::UnboundedSender<Done>,
    ) -> Self {
        Self {
            prepared,
            run: None,
            reviewed: None,
            worker: Attribution::new(),
            moved: None,
            inbound_tx,
            done_tx,
        }
    }

    /// A background task's result: the message for the state, or none where it only moved
    /// the review (a worktree run's commit reached the person's work tree).
    fn finished(&mut self, done: Done) -> Option<Msg> {
        match done {
            Done::Msg(msg) => Some(msg),
            Done::Reviewed(snapshot, result) => {
                self.reviewed = Some(snapshot);
                Some(Msg::DiffLoaded(DiffSource::Review, result))
            }
            Done::Moved(root, before, after) => {
                self.moved = Some((root, before));
                if let Some(shown) = &mut self.reviewed {
                    *shown = after;
                }
                None
            }
        }
    }

    /// `first` and up to [`BATCH`] messages in all that wait behind it: the effects the
    /// state asks for, or how the session ends.
    fn batch(
        &mut self,
        first: Inbound,
        inbound_rx: &mut mpsc::Receiver<Inbound>,
        state: &mut State,
        notifier: &mut Notifier,
    ) -> Result<Vec<Effect>, Ended> {
        let mut effects = Vec::new();
        let mut next = Some(first);
        let mut handled = 0;
        while let Some(inbound) = next.take() {
            effects.extend(self.inbound(inbound, state, notifier)?);
            handled += 1;
            if handled < BATCH {
                next = inbound_rx.try_recv().ok();
            }
        }
        Ok(effects)
    }

    /// One message from the engine's side: the effects the state asks for, or how the
    /// session ends.
    fn inbound(
        &mut self,
        inbound: Inbound,
        state: &mut State,
        notifier: &mut Notifier,
    ) -> Result<Vec<Effect>, Ended> {
        Ok(match inbound {
            Inbound::Event(event) => {
                notifier.observe(&event);
                if let Event::WorkspaceChanged { files, .. } = &event {
                    let worker = files.iter().filter(|f| !f.outside_run);
                    self.worker.add(worker.map(|f| f.path.clone()));
                }
                state.update(Msg::Engine(event))
            }
            Inbound::Approval(approval) => {
                notifier.approval(&approval.command);
                state.update(Msg::ApprovalAsked(approval))
            }
            Inbound::Live(round, files) => state.update(Msg::LiveChanges(round, files)),
            Inbound::Loading(progress) => state.update(Msg::ModelLoading(progress)),
            Inbound::Joined(Ok(summary)) => {
                let mut effects = Vec::new();
                let late = summary.hook_warnings.clone();
                if state.phase != Phase::Finished {
                    effects.extend(state.update(Msg::Engine(finished_from(summary))));
                }
                // Hooks that failed after the run's end (`on_finish`).
                for message in late {
                    let warning = Event::Warning { message };
                    effects.extend(state.update(Msg::Engine(warning)));
                }
                effects
            }
            // Also after `run_finished`: a run whose log could not be written ends in this
            // error, not in its review.
            Inbound::Joined(Err(e)) => return Err(usage_or_internal(e)),
        })
    }
}

/// Like [`drive`], with `notifier` told of focus changes, failed rounds, approvals and the
/// run's end.
pub async fn drive_notifying<B, S>(
    terminal: &mut Terminal<B>,
    mut input: S,
    state: State,
    prepared: Prepared,
    on_frame: &mut dyn FnMut(&State),
    notifier: &mut Notifier,
) -> Ended
where
    B: Backend,
    S: Stream<Item = std::io::Result<crossterm::event::Event>> + Unpin,
{
    use tokio::signal::unix::{signal, SignalKind};
    let (inbound_tx, mut inbound_rx) = mpsc::channel(CHANNEL);
    let (done_tx, mut done_rx) = mpsc::unbounded_channel();
    let driver = Driver::new(prepared, inbound_tx, done_tx);
    let mut session = Session::new(terminal, state, driver, notifier, on_frame);
    let mut clock = tokio::time::interval(Duration::from_secs(1));
    clock.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut sigterm = signal(SignalKind::terminate()).ok();
    let mut sighup = signal(SignalKind::hangup()).ok();
    let mut sigint = signal(SignalKind::interrupt()).ok();
    // A signal caught before these listeners existed (see `signals`) ends the session too.
    let mut early_signal = crate::signals::requested();
    if let Some(ended) = session.start() {
        return ended;
    }
    loop {
        let effects = tokio::select! {
            biased;
            event = input.next(), if session.input_open => session.input(event),
            () = frame_due(session.frames.deadline()) => session.redraw(),
            Some(done) = done_rx.recv() => session.done(done),
            Some(first) = inbound_rx.recv() => match session.inbound(first, &mut inbound_rx) {
                Ok(effects) => effects,
                Err(ended) => return ended,
            },
            _ = clock.tick() => session.tick(),
            () = next_signal(&mut sigterm) => session.terminate(),
            () = next_signal(&mut sighup) => session.terminate(),
            () = next_signal(&mut sigint) => session.terminate(),
            () = std::future::ready(()), if early_signal => {
                early_signal = false;
                session.terminate()
            }
        };
        if let Some(ended) = session.perform(effects) {
            return ended;
        }
    }
}
