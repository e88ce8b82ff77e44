//! The TUI's state and the one way it changes: [`State::update`] with a [`Msg`].
//!
//! Engine events, keys, mouse, ticks and the results of side effects all arrive as `Msg`s;
//! update returns the side effects it wants as [`Effect`] values, which the event loop
//! performs. Rendering only reads `&State`; whatever it needs (wrapped row counts, scroll
//! clamps, pane sizes) is computed here, in [`State::sync`], right before each frame.

use std::collections::VecDeque;
use std::time::Duration;

use ratatui::layout::Rect;
use tui_textarea::TextArea;

use super::layout::{self, ReviewAreas, RunAreas};
use super::theme::Theme;
use super::transcript::{LineKind, Transcript};
use super::wrap;
use crate::engine::event::{ChangedFile, Event, RunStatus, Verification};
use crate::engine::report::Report;
use crate::error::ExitCode;
use crate::tools::approval::ApprovalDecision;
use crate::workspace::DiffModel;

/// What the person sees before and around a run: fixed by the settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Setup {
    pub repo: String,
    pub workspace: String,
    pub model: String,
    pub device: String,
    pub max_rounds: u32,
    pub sandbox: String,
    pub approval: String,
    pub verify: Option<String>,
    pub run_dir: String,
    pub ctx_size: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Asking for the objective.
    Editing,
    Running,
    /// Reviewing the finished run.
    Finished,
}

/// The run screen's panes that take the keyboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    Stream,
    Reports,
    Changes,
    Objective,
}

impl Pane {
    pub fn next(self) -> Self {
        match self {
            Self::Stream => Self::Reports,
            Self::Reports => Self::Changes,
            Self::Changes => Self::Objective,
            Self::Objective => Self::Stream,
        }
    }

    pub fn previous(self) -> Self {
        match self {
            Self::Stream => Self::Objective,
            Self::Reports => Self::Stream,
            Self::Changes => Self::Reports,
            Self::Objective => Self::Changes,
        }
    }
}

/// A command waiting for the person's decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    pub id: u64,
    pub round: u32,
    pub command: String,
    pub cwd: String,
}

/// One row of the reports list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReportEntry {
    Accepted { round: u32, report: Report },
    Rejected { round: u32, reason: String },
    Failed { round: u32, error: String },
}

impl ReportEntry {
    pub fn round(&self) -> u32 {
        match self {
            Self::Accepted { round, .. }
            | Self::Rejected { round, .. }
            | Self::Failed { round, .. } => *round,
        }
    }
}

/// The files one round changed; `live` while the round runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoundChanges {
    pub round: u32,
    pub files: Vec<ChangedFile>,
    pub live: bool,
}

/// One row of the changes list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeRow {
    Round(usize),
    File(usize, usize),
}

/// Something loaded off the UI thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Loadable<T> {
    Loading,
    Ready(T),
    Failed(String),
}

/// Which diff a diff view shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffSource {
    /// A finished round, from its `diff.patch` in the run log.
    Round(u32),
    /// The current round while it runs: changes since the run started, in the files it touched.
    Live(u32),
    /// Everything the run changed, since the baseline taken right before it started.
    Review,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffView {
    pub source: DiffSource,
    pub diff: Loadable<DiffModel>,
    pub file: usize,
    pub scroll: usize,
    /// Paths to keep (the live view), empty for all.
    pub only: Vec<String>,
}

/// Full-screen or modal views above the current screen.
#[derive(Debug, Clone)]
pub enum Overlay {
    Help { scroll: usize },
    ConfirmCancel,
    ReportDetail { index: usize, scroll: usize },
    Diff(DiffView),
    Commit(Box<TextArea<'static>>),
    RunLog,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommitState {
    NotYet,
    Committing,
    Done(String),
    Failed(String),
}

/// The finished run, as the review screen shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Review {
    pub status: RunStatus,
    pub rounds_started: u32,
    pub report: Option<Report>,
    pub last_valid: Option<Report>,
    pub error: Option<String>,
    pub verification: Option<Verification>,
    pub diff: Loadable<DiffModel>,
    pub file: usize,
    pub diff_scroll: usize,
    pub commit: CommitState,
    /// The run's warnings (e.g. git hooks or config changed during a round).
    pub warnings: Vec<String>,
}

/// Everything that changes the state.
#[derive(Debug, Clone)]
#[allow(
    clippy::large_enum_variant,
    reason = "engine events are most of the traffic; boxing them would allocate per token"
)]
pub enum Msg {
    Engine(Event),
    /// The approval broker asks (may also arrive as `Event::ApprovalRequested`).
    ApprovalAsked(Approval),
    /// The live watcher's list of files changed so far in a round that is still running.
    LiveChanges(u32, Vec<ChangedFile>),
    Key(crossterm::event::KeyEvent),
    Mouse(crossterm::event::MouseEvent),
    Paste(String),
    /// Time since the UI started.
    Tick(Duration),
    DiffLoaded(DiffSource, Result<DiffModel, String>),
    Committed(Result<String, String>),
    /// The process was asked to stop (SIGTERM, SIGHUP): cancel and quit when the run ends.
    Terminate,
}

/// Side effects update asks the event loop for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    StartRun(String),
    CancelRun,
    Answer(u64, ApprovalDecision),
    LoadDiff(DiffSource),
    Commit(String),
    Quit(ExitCode),
}

#[derive(Debug, Clone)]
pub struct State {
    pub theme: Theme,
    pub setup: Setup,
    pub phase: Phase,
    pub objective: String,
    pub editor: TextArea<'static>,
    pub editor_error: Option<String>,
    pub run_id: String,
    pub round: u32,
    pub now: Duration,
    pub run_started: Option<Duration>,
    pub run_ended: Option<Duration>,
    pub tokens_total: u64,
    pub tokens_per_s: f64,
    rate_samples: VecDeque<(Duration, u64)>,
    pub prompt_tokens: u32,
    pub round_tokens: u64,
    pub round_tool_bytes: u64,
    pub transcript: Transcript,
    pub reports: Vec<ReportEntry>,
    pub report_sel: usize,
    pub report_offset: usize,
    pub changes: Vec<RoundChanges>,
    pub change_sel: usize,
    pub change_offset: usize,
    pub focus: Pane,
    pub objective_scroll: usize,
    pub overlay: Option<Overlay>,
    pub approvals: VecDeque<Approval>,
    /// Every warning of the run, for the review.
    pub warnings: Vec<String>,
    /// Every approval id seen, so one announced twice (notifier and event) is asked once.
    asked: std::collections::BTreeSet<u64>,
    pub cancel_requested: Option<Duration>,
    pub quit_when_finished: bool,
    pub review: Option<Review>,
    pub review_offset: usize,
    pub notice: Option<String>,
    /// A commit message confirmed in the editor, turned into an effect by the key handler.
    pub(super) pending_commit: Option<String>,
    /// Where the panes were at the last sync (for the mouse).
    pub run_areas: RunAreas,
    pub review_areas: ReviewAreas,
    pub screen: Rect,
}

/// After a Ctrl-C that confirmed the cancel, another one this long after quits at once.
pub const FORCE_QUIT_AFTER: Duration = Duration::from_secs(3);

impl State {
    /// A state for a run with `objective`, or for the objective editor when there is none.
    pub fn new(setup: Setup, objective: Option<String>, theme: Theme) -> Self {
        let mut editor = TextArea::default();
        editor.set_placeholder_text("Describe what the worker should achieve in this repository…");
        editor.set_cursor_line_style(ratatui::style::Style::default());
        let phase = if objective.is_some() {
            Phase::Running
        } else {
            Phase::Editing
        };
        Self {
            theme,
            setup,
            phase,
            objective: objective.unwrap_or_default(),
            editor,
            editor_error: None,
            run_id: String::new(),
            round: 0,
            now: Duration::ZERO,
            run_started: None,
            run_ended: None,
            tokens_total: 0,
            tokens_per_s: 0.0,
            rate_samples: VecDeque::new(),
            prompt_tokens: 0,
            round_tokens: 0,
            round_tool_bytes: 0,
            transcript: Transcript::default(),
            reports: Vec::new(),
            report_sel: 0,
            report_offset: 0,
            changes: Vec::new(),
            change_sel: 0,
            change_offset: 0,
            focus: Pane::Stream,
            objective_scroll: 0,
            overlay: None,
            approvals: VecDeque::new(),
            warnings: Vec::new(),
            asked: std::collections::BTreeSet::new(),
            cancel_requested: None,
            quit_when_finished: false,
            review: None,
            review_offset: 0,
            notice: None,
            pending_commit: None,
            run_areas: RunAreas::default(),
            review_areas: ReviewAreas::default(),
            screen: Rect::default(),
        }
    }

    /// Applies one message; returns the side effects to perform.
    pub fn update(&mut self, msg: Msg) -> Vec<Effect> {
        match msg {
            Msg::Engine(event) => self.on_event(event),
            Msg::ApprovalAsked(approval) => {
                self.ask(approval);
                Vec::new()
            }
            Msg::LiveChanges(round, files) => {
                // A report that comes after its round ended would undo the round's final list.
                if self.changes.iter().any(|c| c.round == round && c.live) {
                    self.set_round_files(round, files);
                }
                Vec::new()
            }
            Msg::Key(key) => self.on_key(key),
            Msg::Mouse(mouse) => {
                self.on_mouse(mouse);
                Vec::new()
            }
            Msg::Paste(text) => {
                self.on_paste(&text);
                Vec::new()
            }
            Msg::Tick(now) => {
                self.tick(now);
                Vec::new()
            }
            Msg::DiffLoaded(source, result) => {
                self.diff_loaded(source, result);
                Vec::new()
            }
            Msg::Committed(result) => {
                if let Some(review) = &mut self.review {
                    review.commit = match result {
                        Ok(id) => {
                            self.notice = Some(format!("committed {id}"));
                            CommitState::Done(id)
                        }
                        Err(e) => {
                            self.notice = Some(format!("commit failed: {e}"));
                            CommitState::Failed(e)
                        }
                    };
                }
                Vec::new()
            }
            Msg::Terminate => match self.phase {
                Phase::Editing => vec![Effect::Quit(ExitCode::Cancelled)],
                Phase::Finished => vec![Effect::Quit(self.exit_code())],
                Phase::Running => {
                    self.quit_when_finished = true;
                    self.confirm_cancel()
                }
            },
        }
    }

    /// The exit code if the program ended now.
    pub fn exit_code(&self) -> ExitCode {
        match &self.review {
            Some(review) => review.status.exit_code(),
            None => ExitCode::Cancelled,
        }
    }

    pub fn elapsed(&self) -> Duration {
        match self.run_started {
            Some(start) => self.run_ended.unwrap_or(self.now).saturating_sub(start),
            None => Duration::ZERO,
        }
    }

    /// An estimate of the context the current child has used, in tokens.
    pub fn context_used(&self) -> u64 {
        u64::from(self.prompt_tokens) + self.round_tokens + self.round_tool_bytes / 4
    }

    pub fn cancelling(&self) -> bool {
        self.cancel_requested.is_some() && self.phase == Phase::Running
    }

    fn tick(&mut self, now: Duration) {
        self.now = now;
        self.rate_samples.push_back((now, self.tokens_total));
        while self
            .rate_samples
            .front()
            .is_some_and(|(t, _)| now.saturating_sub(*t) > Duration::from_secs(3))
        {
            self.rate_samples.pop_front();
        }
        if let (Some((t0, n0)), Some((t1, n1))) =
            (self.rate_samples.front(), self.rate_samples.back())
        {
            let span = t1.saturating_sub(*t0).as_secs_f64();
            if span >= 0.5 {
                self.tokens_per_s = (n1.saturating_sub(*n0)) as f64 / span;
            }
        }
    }

    pub(super) fn ask(&mut self, approval: Approval) {
        if self.phase == Phase::Running && self.asked.insert(approval.id) {
            self.transcript.push_line(
                LineKind::Notice,
                &format!("? approval asked: {}", approval.command),
            );
            self.approvals.push_back(approval);
        }
    }

    fn diff_loaded(&mut self, source: DiffSource, result: Result<DiffModel, String>) {
        let loaded = match result {
            Ok(diff) => Loadable::Ready(diff),
            Err(e) => Loadable::Failed(e),
        };
        if source == DiffSource::Review {
            if let Some(review) = &mut self.review {
                review.diff = loaded.clone();
            }
        }
        if let Some(Overlay::Diff(view)) = &mut self.overlay {
            if view.source == source {
                view.diff = match loaded {
                    Loadable::Ready(mut diff) if !view.only.is_empty() => {
                        diff.files.retain(|f| view.only.contains(&f.path));
                        Loadable::Ready(diff)
                    }
                    other => other,
                };
            }
        }
    }

    /// Sizes every scrollable view for a frame of `area`; call before each draw.
    pub fn sync(&mut self, area: Rect) {
        self.screen = area;
        match self.phase {
            Phase::Editing => {}
            Phase::Running => self.sync_run(area),
            Phase::Finished => {
                self.sync_run(area);
                self.sync_review(area);
            }
        }
        self.sync_overlay(area);
    }

    fn sync_run(&mut self, area: Rect) {
        let objective_width = layout::inner(layout::run_areas(area, 1).objective).width;
        let objective_lines = wrap::rows_multiline(&self.objective, objective_width.into()).len();
        let areas = layout::run_areas(area, objective_lines);
        self.run_areas = areas;
        let stream = layout::inner(areas.stream);
        self.transcript
            .sync(stream.width.into(), stream.height.into());
        let objective_height = usize::from(layout::inner(areas.objective).height);
        self.objective_scroll = self
            .objective_scroll
            .min(objective_lines.saturating_sub(objective_height));
        let reports_height = usize::from(layout::inner(areas.reports).height).max(1);
        self.report_sel = self.report_sel.min(self.reports.len().saturating_sub(1));
        self.report_offset = keep_visible(self.report_offset, self.report_sel, reports_height);
        let rows = self.change_rows().len();
        let changes_height = usize::from(layout::inner(areas.changes).height).max(1);
        self.change_sel = self.change_sel.min(rows.saturating_sub(1));
        self.change_offset = keep_visible(self.change_offset, self.change_sel, changes_height);
    }

    fn sync_review(&mut self, area: Rect) {
        let areas = layout::review_areas(area);
        self.review_areas = areas;
        let files_height = usize::from(layout::inner(areas.files).height).max(1);
        let diff_inner = layout::inner(areas.diff);
        let Some(review) = &mut self.review else {
            return;
        };
        if let Loadable::Ready(diff) = &review.diff {
            review.file = review.file.min(diff.files.len().saturating_sub(1));
            let rows = super::diff::file_rows(diff.files.get(review.file), diff_inner.width);
            review.diff_scroll = review
                .diff_scroll
                .min(rows.saturating_sub(usize::from(diff_inner.height)));
            self.review_offset = keep_visible(self.review_offset, review.file, files_height);
        }
    }

    fn sync_overlay(&mut self, area: Rect) {
        match &mut self.overlay {
            Some(Overlay::Diff(view)) => {
                let inner = super::diff::view_body(area);
                if let Loadable::Ready(diff) = &view.diff {
                    view.file = view.file.min(diff.files.len().saturating_sub(1));
                    let rows = super::diff::file_rows(diff.files.get(view.file), inner.width);
                    view.scroll = view
                        .scroll
                        .min(rows.saturating_sub(usize::from(inner.height)));
                }
            }
            Some(Overlay::ReportDetail { index, scroll }) => {
                *index = (*index).min(self.reports.len().saturating_sub(1));
                let inner = super::report_detail::body(area);
                let rows = self
                    .reports
                    .get(*index)
                    .map(|entry| super::report_detail::lines(entry, inner.width).len())
                    .unwrap_or(0);
                *scroll = (*scroll).min(rows.saturating_sub(usize::from(inner.height)));
            }
            Some(Overlay::Help { scroll }) => {
                let inner = super::help::body(area);
                let rows = super::help::line_count();
                *scroll = (*scroll).min(rows.saturating_sub(usize::from(inner.height)));
            }
            _ => {}
        }
    }
}

/// The first visible row of a list of `height` rows so that `selected` shows.
pub fn keep_visible(offset: usize, selected: usize, height: usize) -> usize {
    if selected < offset {
        selected
    } else if selected >= offset + height {
        selected + 1 - height
    } else {
        offset
    }
}
