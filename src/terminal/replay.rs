//! `ralph-tui replay RUN`: a past run's `events.jsonl` played through the same screens and
//! the same `screens::State` as a live run, read-only.
//!
//! A [`Player`] owns the recording and the state it builds: each step hands the next recorded
//! event to `State::update` exactly as the live loop does, after a `Tick` at the event's
//! recorded time, so the screens show what they showed then. Seeking rebuilds the state from
//! the first event, so a seek lands on the same state a straight play would. The side
//! effects a live run performs are answered from the run log instead: a round's diff from
//! its `diff.patch`, the review diff from all of them; a commit is refused. [`run`] drives
//! a player on the terminal, timing from the timestamps scaled by `--speed`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crossterm::event::KeyEvent;
use futures::{Stream, StreamExt};
use ratatui::backend::Backend;
use ratatui::layout::Rect;
use ratatui::Terminal;

use super::frames::FrameScheduler;
use crate::app;
use crate::error::{say, ExitCode};
use crate::protocol::event::Event;
use crate::runs::history::read_events;
use crate::runs::PastRun;
use crate::screens::keys::{self, Action};
use crate::screens::state::{DiffSource, Effect, Msg, Phase, ReplayMark};
use crate::screens::{Setup, State, Theme};
use crate::workspace::{Attribution, DiffModel, DisplayLimits};

/// What the review says when asked to change anything in a replay.
pub const READ_ONLY: &str = "replay: read-only, commit is disabled (and so are revert and discard)";

/// What Esc says during a replay's rounds.
pub const NOTHING_TO_CANCEL: &str =
    "replay: nothing to cancel, it only shows a past run (p pauses, q leaves)";

/// The longest pause between two events, after scaling: idle stretches are shortened.
pub const MAX_GAP: Duration = Duration::from_secs(2);

/// A recorded run: what the screens need before its first event, and its events with their
/// offsets from the first.
#[derive(Debug, Clone)]
pub struct Recording {
    pub run_dir: PathBuf,
    pub setup: Setup,
    pub objective: String,
    pub events: Vec<(Duration, Event)>,
}

fn file_name(path: &str) -> String {
    Path::new(path)
        .file_name()
        .map_or_else(|| path.to_string(), |n| n.to_string_lossy().into_owned())
}

fn label<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}

impl Recording {
    /// Reads a run directory.
    pub fn load(dir: &Path) -> Result<Self, String> {
        let past = PastRun::load(dir).map_err(|e| e.to_string())?;
        let record = &past.record;
        let info = &record.info;
        let scripted = info.backend.starts_with("script");
        let setup = Setup {
            repo: file_name(&record.workspace.display().to_string()),
            workspace: record.workspace.display().to_string(),
            model: if scripted {
                format!("script {}", file_name(&info.model_file))
            } else {
                file_name(&info.model_file)
            },
            device: info.device.clone(),
            max_rounds: record.max_rounds,
            sandbox: label(&info.settings.options.sandbox),
            approval: label(&info.settings.options.approval),
            verify: info.settings.options.verify.clone(),
            run_dir: dir.display().to_string(),
            ctx_size: if scripted {
                crate::llm::script::SCRIPT_CTX_SIZE
            } else {
                info.settings.options.ctx_size.unwrap_or_default()
            },
            worktree: info.worktree.as_ref().map(|w| w.branch.clone()),
            round_timeout: info.settings.options.round_timeout,
        };
        let stamped = read_events(&dir.join("events.jsonl"), true);
        let time = |ts: &str| chrono::DateTime::parse_from_rfc3339(ts).ok();
        let first = stamped.first().and_then(|s| time(&s.ts));
        let events = stamped
            .into_iter()
            .map(|s| {
                let offset = match (first, time(&s.ts)) {
                    (Some(first), Some(at)) => (at - first).to_std().unwrap_or_default(),
                    _ => Duration::ZERO,
                };
                (offset, s.event)
            })
            .collect::<Vec<_>>();
        if events.is_empty() {
            return Err(format!("{} has no events to replay", dir.display()));
        }
        Ok(Self {
            run_dir: dir.to_path_buf(),
            setup,
            objective: record.objective.clone(),
            events,
        })
    }

    /// The indices of the events that start a round.
    pub fn round_starts(&self) -> Vec<usize> {
        self.events
            .iter()
            .enumerate()
            .filter(|(_, (_, e))| matches!(e, Event::RoundStarted { .. }))
            .map(|(i, _)| i)
            .collect()
    }

    fn round_patch(&self, round: u32) -> Result<String, String> {
        let path = self
            .run_dir
            .join("rounds")
            .join(format!("{round:02}"))
            .join("diff.patch");
        std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The worker's files, from the end-of-round `workspace_changed` events, as the live
    /// loop gathers them.
    fn worker(&self) -> Attribution {
        let mut worker = Attribution::new();
        for (_, event) in &self.events {
            if let Event::WorkspaceChanged { files, .. } = event {
                let files = files.iter().filter(|f| !f.outside_run);
                worker.add(files.map(|f| f.path.clone()));
            }
        }
        worker
    }

    /// Every round's patch, in order: what the run changed, as the run log recorded it.
    fn whole_patch(&self) -> String {
        let rounds = self
            .events
            .iter()
            .filter_map(|(_, e)| match e {
                Event::RoundStarted { round, .. } => Some(*round),
                _ => None,
            })
            .collect::<Vec<_>>();
        rounds
            .into_iter()
            .filter_map(|round| self.round_patch(round).ok())
            .collect()
    }
}

/// Plays a recording into a `State`.
#[derive(Debug)]
pub struct Player {
    pub recording: Recording,
    pub state: State,
    /// The next event to play.
    pub next: usize,
    pub paused: bool,
    pub speed: f64,
    theme: Theme,
}

impl Player {
    pub fn new(recording: Recording, speed: f64, theme: Theme) -> Self {
        let state = Self::fresh(&recording, theme);
        let mut player = Self {
            recording,
            state,
            next: 0,
            paused: false,
            speed,
            theme,
        };
        player.mark();
        player
    }

    /// Tells the screens where the replay is (`REPLAY ×speed · position · paused`).
    fn mark(&mut self) {
        self.state.replay = Some(ReplayMark {
            speed: self.speed,
            position: self.next,
            total: self.recording.events.len(),
            paused: self.paused,
        });
    }

    fn fresh(recording: &Recording, theme: Theme) -> State {
        State::new(
            recording.setup.clone(),
            Some(recording.objective.clone()),
            theme,
        )
    }

    /// Whether every event has been played.
    pub fn done(&self) -> bool {
        self.next >= self.recording.events.len()
    }

    /// Plays the next event; `Some` when an effect ends the replay.
    pub fn step(&mut self) -> Option<ExitCode> {
        let (at, event) = self.recording.events.get(self.next)?.clone();
        self.next += 1;
        self.state.update(Msg::Tick(at));
        let effects = self.state.update(Msg::Engine(event));
        let ended = self.perform(effects);
        self.mark();
        ended
    }

    /// Plays every remaining event.
    pub fn play_to_end(&mut self) -> Option<ExitCode> {
        while !self.done() {
            if let Some(code) = self.step() {
                return Some(code);
            }
        }
        None
    }

    /// Rebuilds the state as it was just before event `target`.
    pub fn seek(&mut self, target: usize) {
        self.state = Self::fresh(&self.recording, self.theme);
        self.mark();
        self.next = 0;
        let target = target.min(self.recording.events.len());
        while self.next < target {
            let _ = self.step();
        }
    }

    /// To the start of the next round (`forward`), or of the current round and, pressed at
    /// its start, the one before.
    pub fn seek_round(&mut self, forward: bool) {
        let starts = self.recording.round_starts();
        let target = if forward {
            starts.iter().copied().find(|&i| i >= self.next)
        } else {
            // `next - 1` is the event just played; a round's start is its own event.
            let current = self.next.saturating_sub(1);
            starts.iter().copied().rev().find(|&i| i < current)
        };
        let target = target.unwrap_or(if forward {
            self.recording.events.len()
        } else {
            0
        });
        // Land just after the round's start, so the screen shows that round.
        self.seek(if target < self.recording.events.len() {
            target + 1
        } else {
            target
        });
    }

    /// How long until the next event, scaled by the speed and capped at [`MAX_GAP`].
    pub fn delay(&self) -> Option<Duration> {
        let next = self.recording.events.get(self.next)?.0;
        let now = self
            .next
            .checked_sub(1)
            .and_then(|i| self.recording.events.get(i))
            .map_or(Duration::ZERO, |(at, _)| *at);
        let gap = next.saturating_sub(now).div_f64(self.speed.max(0.001));
        Some(gap.min(MAX_GAP))
    }

    /// A key: the replay's own keys first, the screens' after. `Some` ends the replay.
    pub fn key(&mut self, key: KeyEvent) -> Option<ExitCode> {
        let ended = self.key_unmarked(key);
        self.mark();
        ended
    }

    fn key_unmarked(&mut self, key: KeyEvent) -> Option<ExitCode> {
        let editing = self.state.overlay().is_some();
        // What a replay cannot do is answered at once, without the live run's questions.
        if in_review(&self.state) && !editing {
            let changes = keys::action(&[&keys::WORKTREE, &keys::REVIEW], &key);
            if matches!(
                changes,
                Some(
                    Action::Commit
                        | Action::RevertRound
                        | Action::Discard
                        | Action::Toggle
                        | Action::ApplyWorktree
                        | Action::DiscardWorktree
                )
            ) {
                self.state.notice = Some(READ_ONLY.into());
                return None;
            }
        }
        // Help lists only the keys a replay acts on.
        if !editing && keys::action(&[&keys::EVERYWHERE], &key) == Some(Action::Help) {
            let help = crate::screens::views::help::Help {
                scroll: 0,
                replay: true,
            };
            self.state.open(crate::screens::state::Overlay::Help(help));
            return None;
        }
        if self.state.phase == Phase::Running
            && !editing
            && keys::action(&[&keys::RUN, &keys::EVERYWHERE], &key) == Some(Action::Back)
        {
            self.state.notice = Some(NOTHING_TO_CANCEL.into());
            return None;
        }
        let action = keys::action(&[&keys::REPLAY], &key);
        match action {
            Some(Action::Quit) if !editing || key.code != crossterm::event::KeyCode::Char('q') => {
                return Some(ExitCode::Complete);
            }
            Some(Action::PlayPause) if !editing => self.paused = !self.paused,
            Some(Action::Step) if !editing => {
                self.paused = true;
                return self.step();
            }
            Some(Action::NextRound) if !editing => self.seek_round(true),
            Some(Action::PreviousRound) if !editing => self.seek_round(false),
            _ => {
                let effects = self.state.update(Msg::Key(key));
                return self.perform(effects);
            }
        }
        None
    }

    /// Answers the effects a live run would perform, from the run log.
    fn perform(&mut self, effects: Vec<Effect>) -> Option<ExitCode> {
        for effect in effects {
            let msg = match effect {
                Effect::LoadDiff(source) => {
                    let text = match source {
                        DiffSource::Round(round) | DiffSource::Live(round) => {
                            self.recording.round_patch(round)
                        }
                        DiffSource::Review => Ok(self.recording.whole_patch()),
                    };
                    let review = source == DiffSource::Review;
                    let limits = if review {
                        DisplayLimits::review()
                    } else {
                        DisplayLimits::default()
                    };
                    let model = text.and_then(|text| {
                        let mut model = DiffModel::from_patch(&text).map_err(|e| e.to_string())?;
                        if review {
                            // In path order and attributed, as the live review shows them.
                            model.files.sort_by(|a, b| a.path.cmp(&b.path));
                            self.recording.worker().mark(&mut model);
                        }
                        Ok(model.for_display(&limits))
                    });
                    Msg::DiffLoaded(source, model)
                }
                Effect::Review(effect) => Msg::Review(effect.refused(READ_ONLY)),
                Effect::Quit(_) => return Some(ExitCode::Complete),
                Effect::StartRun(_)
                | Effect::CancelRun
                | Effect::Answer(..)
                | Effect::Note(_)
                | Effect::SendBack { .. } => continue,
            };
            let more = self.state.update(msg);
            if let Some(code) = self.perform(more) {
                return Some(code);
            }
        }
        None
    }
}

async fn due(delay: Option<Duration>) {
    match delay {
        Some(delay) => tokio::time::sleep(delay).await,
        None => std::future::pending::<()>().await,
    }
}

async fn frame_due(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await,
        None => std::future::pending::<()>().await,
    }
}

/// Plays `player` on `terminal` until the person leaves.
pub async fn drive<B, S>(terminal: &mut Terminal<B>, mut input: S, mut player: Player) -> ExitCode
where
    B: Backend,
    S: Stream<Item = std::io::Result<crossterm::event::Event>> + Unpin,
{
    let mut frames = FrameScheduler::default();
    frames.request();
    // The review says once that it is read-only.
    let mut announced = false;
    loop {
        let delay = if player.paused { None } else { player.delay() };
        tokio::select! {
            biased;
            input_event = input.next() => match input_event {
                Some(Ok(crossterm::event::Event::Key(key))) => {
                    if let Some(code) = player.key(key) {
                        return code;
                    }
                    frames.request();
                }
                Some(Ok(crossterm::event::Event::Mouse(mouse))) => {
                    let effects = player.state.update(Msg::Mouse(mouse));
                    if let Some(code) = player.perform(effects) {
                        return code;
                    }
                    frames.request();
                }
                Some(Ok(_)) => frames.request(),
                Some(Err(_)) | None => return ExitCode::Complete,
            },
            () = frame_due(frames.deadline()) => {
                let area = match terminal.size() {
                    Ok(size) => Rect::new(0, 0, size.width, size.height),
                    Err(_) => player.state.areas.screen,
                };
                player.state.sync(area);
                let state = &player.state;
                if let Err(e) = terminal.draw(|frame| frame.render_widget(state, frame.area())) {
                    tracing::error!("draw: {e}");
                }
                frames.drawn(Instant::now());
            }
            () = due(delay) => {
                if let Some(code) = player.step() {
                    return code;
                }
                if player.done() && !announced {
                    announced = true;
                    player.state.notice = Some(if in_review(&player.state) {
                        READ_ONLY.into()
                    } else {
                        "end of the recording: the run wrote no end (it was killed); q leaves"
                            .into()
                    });
                }
                frames.request();
            }
        }
    }
}

/// `ralph-tui replay`: plays the run in `dir` on this terminal.
pub fn run(dir: &Path, speed: f64) -> ExitCode {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        say("replay needs a terminal: use `ralph-tui show RUN` for a text summary");
        return ExitCode::Usage;
    }
    let recording = match Recording::load(dir) {
        Ok(recording) => recording,
        Err(e) => {
            say(&e);
            return ExitCode::Usage;
        }
    };
    let runtime = match app::runtime(&mut tokio::runtime::Builder::new_current_thread()) {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let player = Player::new(recording, speed, Theme::from_env());
    let guard = match super::setup::TerminalGuard::enter() {
        Ok(guard) => guard,
        Err(e) => {
            say(&format!("cannot set up the terminal: {e}"));
            return ExitCode::Internal;
        }
    };
    let backend =
        super::clean::CleanBackend::new(ratatui::backend::CrosstermBackend::new(std::io::stdout()));
    let code = match Terminal::new(backend) {
        Ok(mut terminal) => {
            let _ = terminal.clear();
            let input = crossterm::event::EventStream::new();
            runtime.block_on(drive(&mut terminal, input, player))
        }
        Err(e) => {
            drop(guard);
            say(&format!("cannot set up the terminal: {e}"));
            return ExitCode::Internal;
        }
    };
    drop(guard);
    code
}

/// Whether the state shows the finished run's review.
pub fn in_review(state: &State) -> bool {
    state.phase == Phase::Finished && state.review.shown.is_some()
}
