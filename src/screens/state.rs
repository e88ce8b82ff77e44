//! The TUI's state and the one way it changes: [`State::update`] with a [`Msg`].
//!
//! Engine events, keys, mouse, ticks and the results of side effects all arrive as `Msg`s;
//! update returns the side effects it wants as [`Effect`] values, which the event loop
//! performs. Rendering only reads `&State`; whatever it needs (wrapped row counts, scroll
//! clamps, pane sizes) is computed here, in [`State::sync`], right before each frame.
//!
//! The state holds data (the types are in [`super::model`]) and the stack of open views
//! ([`Overlay`]); it never draws. Views own their scroll and keys and are given what they
//! read of the state as a [`Ctx`], so no view imports this module.

use std::collections::VecDeque;
use std::time::Duration;

use ratatui::layout::Rect;
use tui_textarea::TextArea;

use super::kit::layout::{self, RunAreas};
use super::kit::scroll::keep_visible;
use super::kit::theme::Theme;
use super::kit::wrap;
pub use super::model::{
    Approval, ChangeRow, CommitState, DiffSource, Effect, Loadable, Msg, Pane, Phase, ReplayMark,
    ReportEntry, Review, ReviewEffect, ReviewResult, RoundChanges, SentBack, Setup, WorktreeAction,
    WorktreeGone, FORCE_QUIT_AFTER,
};
use super::review::{Lent, ReviewScreen, Shared};
use super::transcript::{LineKind, Transcript};
use super::views::card::Card;
pub use super::views::overlay::Overlay;
use super::views::view::{Ctx, View};
use crate::error::ExitCode;
use crate::protocol::event::WrapUpReason;
use crate::workspace::DiffModel;

/// The run's meters, as the header and the status line show them: tokens, rates, the
/// context used, and what the worker is doing now.
#[derive(Debug, Clone, Default)]
pub struct Meters {
    pub tokens_total: u64,
    pub tokens_per_s: f64,
    rate_samples: VecDeque<(Duration, u64)>,
    pub prompt_tokens: u32,
    pub round_tokens: u64,
    pub round_tool_bytes: u64,
    /// The context as the backend last counted it (after a turn or before one, so after
    /// every tool result); `None` until the round's first count.
    pub context_counted: Option<u32>,
    /// Tokens streamed since that count.
    pub context_streamed: u64,
    /// Where the report reserve starts on the context meter, when the run keeps one.
    pub report_reserve: Option<u32>,
    /// The current turn's generation rate (live while it streams, exact once it ended).
    pub gen_per_s: Option<f64>,
    /// The current turn's prompt rate (known when the turn ended).
    pub prompt_per_s: Option<f64>,
    /// A turn is streaming now.
    pub turn_streaming: bool,
    /// When the streaming turn's first token came (UI time).
    pub streaming_since: Option<Duration>,
    /// The best generation rate of a finished turn of this run: what the model does here
    /// when the machine is not busy with something else.
    pub best_gen_per_s: Option<f64>,
    /// The turn's prompt being read, while it says its progress (`prompt_progress`).
    pub prompt_gauge: Option<super::model::PromptGauge>,
    /// The tool the worker's call is running now (not the report).
    pub tool_running: Option<String>,
    /// How far the model's load is (0 to 1), once llama.cpp says.
    pub model_loading: Option<f32>,
    /// When the current round started (UI time).
    pub round_started_at: Option<Duration>,
}

/// Where the person is on the run and review screens: the focused pane, each list's
/// selection and the first row it shows, the objective's scroll.
#[derive(Debug, Clone, Default)]
pub struct Cursors {
    pub focus: Pane,
    /// The card Enter opens (`None`: the newest).
    pub card_sel: Option<u32>,
    pub report_sel: usize,
    pub report_offset: usize,
    pub change_sel: usize,
    pub change_offset: usize,
    pub objective_scroll: usize,
}

/// The objective editor: the text, what is wrong with it, and whether Esc was pressed once.
#[derive(Debug, Clone)]
pub struct ObjectiveEditor {
    pub text: TextArea<'static>,
    pub error: Option<String>,
    /// Esc was pressed once over a typed objective; a second Esc quits.
    pub quit_armed: bool,
}

/// Where things were drawn at the last sync: the whole screen and the run screen's panes (the
/// review's are its own).
#[derive(Debug, Clone, Copy, Default)]
pub struct Areas {
    pub screen: Rect,
    pub run: RunAreas,
}

#[derive(Debug, Clone)]
pub struct State {
    pub theme: Theme,
    pub setup: Setup,
    pub phase: Phase,
    pub objective: String,
    /// The objective editor, before a run.
    pub editor: ObjectiveEditor,
    pub run_id: String,
    pub round: u32,
    pub now: Duration,
    pub run_started: Option<Duration>,
    pub run_ended: Option<Duration>,
    /// Tokens, rates, the context meter and what the worker is doing now.
    pub meters: Meters,
    pub transcript: Transcript,
    /// The last tool calls, whole, for the detail view; the newest last.
    pub cards: VecDeque<Card>,
    /// The id the next card gets.
    pub next_card: u32,
    pub reports: Vec<ReportEntry>,
    /// The focused pane, and where each list's selection and scroll are.
    pub cursors: Cursors,
    /// The rounds that needed a wrap-up turn, and why.
    pub wrap_ups: Vec<(u32, WrapUpReason)>,
    pub changes: Vec<RoundChanges>,
    /// Views open above the screen, the top one last; it takes the keys.
    pub overlays: Vec<Overlay>,
    pub approvals: VecDeque<Approval>,
    /// Every warning of the run, for the review.
    pub warnings: Vec<String>,
    /// Every approval id seen, so one announced twice (notifier and event) is asked once.
    asked: std::collections::BTreeSet<u64>,
    pub cancel_requested: Option<Duration>,
    pub quit_when_finished: bool,
    /// The review screen's own state: the review once the run is over, and what it did.
    pub review: ReviewScreen,
    pub notice: Option<String>,
    /// Set when the screens show a replay, not a live run.
    pub replay: Option<ReplayMark>,
    /// Where the screens and panes were at the last sync (for render and the mouse).
    pub areas: Areas,
}

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
            editor: ObjectiveEditor {
                text: editor,
                error: None,
                quit_armed: false,
            },
            run_id: String::new(),
            round: 0,
            now: Duration::ZERO,
            run_started: None,
            run_ended: None,
            meters: Meters::default(),
            transcript: Transcript::default(),
            cards: VecDeque::new(),
            next_card: 1,
            reports: Vec::new(),
            wrap_ups: Vec::new(),
            cursors: Cursors::default(),
            changes: Vec::new(),
            overlays: Vec::new(),
            approvals: VecDeque::new(),
            warnings: Vec::new(),
            asked: std::collections::BTreeSet::new(),
            cancel_requested: None,
            quit_when_finished: false,
            review: ReviewScreen::default(),
            notice: None,
            replay: None,
            areas: Areas::default(),
        }
    }

    /// The state of a run that goes on from an earlier one at round `next`: the header
    /// counts the run's rounds from its first start, as every other line does, before the
    /// first resumed round starts too.
    pub fn resuming_at(mut self, next: u32) -> Self {
        self.round = next.saturating_sub(1);
        self
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
            Msg::ModelLoading(progress) => {
                self.meters.model_loading = Some(progress.clamp(0.0, 1.0));
                Vec::new()
            }
            Msg::DiffLoaded(source, result) => {
                self.diff_loaded(source, result);
                Vec::new()
            }
            Msg::Review(result) => {
                let (screen, lent) = self.review_and_lent();
                screen.result(result, lent)
            }
            Msg::SentBack(result) => {
                self.sent_back(result);
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
        self.review.exit_code()
    }

    pub fn elapsed(&self) -> Duration {
        match self.run_started {
            Some(start) => self.run_ended.unwrap_or(self.now).saturating_sub(start),
            None => Duration::ZERO,
        }
    }

    /// Why round `round` needed a wrap-up turn, if it did.
    pub fn wrap_up_of(&self, round: u32) -> Option<WrapUpReason> {
        self.wrap_ups
            .iter()
            .find(|(r, _)| *r == round)
            .map(|(_, reason)| *reason)
    }

    /// The context the current child has used, in tokens, and whether it is exact: the
    /// backend's last count plus the tokens streamed since, or an estimate before the first
    /// count of the round.
    pub fn context_used(&self) -> (u64, bool) {
        match self.meters.context_counted {
            Some(counted) => (u64::from(counted) + self.meters.context_streamed, true),
            None => (
                u64::from(self.meters.prompt_tokens)
                    + self.meters.round_tokens
                    + self.meters.round_tool_bytes / 4,
                false,
            ),
        }
    }

    /// Time since the current round started.
    pub fn round_elapsed(&self) -> Option<Duration> {
        let start = self.meters.round_started_at?;
        Some(self.run_ended.unwrap_or(self.now).saturating_sub(start))
    }

    /// The card Enter opens: the selected one, else the newest.
    pub fn selected_card(&self) -> Option<&Card> {
        match self.cursors.card_sel {
            Some(id) => self.cards.iter().find(|c| c.id == id),
            None => self.cards.back(),
        }
    }

    /// Moves the card selection by one; past the newest it follows the newest again.
    pub fn move_card_selection(&mut self, forward: bool) {
        let Some(newest) = self.cards.back().map(|c| c.id) else {
            return;
        };
        let oldest = self.cards.front().map_or(newest, |c| c.id);
        let current = self.cursors.card_sel.unwrap_or(newest);
        self.cursors.card_sel = if forward {
            (current < newest).then_some(current + 1)
        } else {
            Some(current.saturating_sub(1).max(oldest))
        };
    }

    pub fn cancelling(&self) -> bool {
        self.cancel_requested.is_some() && self.phase == Phase::Running
    }

    fn tick(&mut self, now: Duration) {
        self.now = now;
        self.meters
            .rate_samples
            .push_back((now, self.meters.tokens_total));
        while self
            .meters
            .rate_samples
            .front()
            .is_some_and(|(t, _)| now.saturating_sub(*t) > Duration::from_secs(3))
        {
            self.meters.rate_samples.pop_front();
        }
        if let (Some((t0, n0)), Some((t1, n1))) = (
            self.meters.rate_samples.front(),
            self.meters.rate_samples.back(),
        ) {
            let span = t1.saturating_sub(*t0).as_secs_f64();
            if span >= 0.5 {
                self.meters.tokens_per_s = (n1.saturating_sub(*n0)) as f64 / span;
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
        let mut loaded = match result {
            Ok(diff) => Loadable::Ready(diff),
            Err(e) => Loadable::Failed(e),
        };
        if source == DiffSource::Review {
            self.review.diff_loaded(&mut loaded);
        }
        for overlay in &mut self.overlays {
            if let Overlay::Diff(view) = overlay {
                view.loaded(source, &loaded);
            }
        }
    }

    /// What the views may read of the state.
    pub fn view_ctx(&self) -> Ctx<'_> {
        Ctx {
            theme: self.theme,
            screen: self.areas.screen,
            reports: &self.reports,
            run_dir: &self.setup.run_dir,
        }
    }

    /// The review screen, with what its handlers may change of the shared state.
    pub(super) fn review_and_lent(&mut self) -> (&mut ReviewScreen, Lent<'_>) {
        let shared = Shared {
            theme: self.theme,
            setup: &self.setup,
            run_id: &self.run_id,
            objective: &self.objective,
            reports: &self.reports,
            changes: &self.changes,
            replay: self.replay.is_some(),
        };
        let lent = Lent {
            notice: &mut self.notice,
            overlays: &mut self.overlays,
            shared,
        };
        (&mut self.review, lent)
    }

    /// What the review reads of the state the screens share.
    pub fn review_shared(&self) -> Shared<'_> {
        Shared {
            theme: self.theme,
            setup: &self.setup,
            run_id: &self.run_id,
            objective: &self.objective,
            reports: &self.reports,
            changes: &self.changes,
            replay: self.replay.is_some(),
        }
    }

    /// The open views, to change, with what they may read of the rest of the state.
    pub(super) fn overlays_and_ctx(&mut self) -> (&mut Vec<Overlay>, Ctx<'_>) {
        let ctx = Ctx {
            theme: self.theme,
            screen: self.areas.screen,
            reports: &self.reports,
            run_dir: &self.setup.run_dir,
        };
        (&mut self.overlays, ctx)
    }

    /// The view on top, which takes the keys.
    pub fn overlay(&self) -> Option<&Overlay> {
        self.overlays.last()
    }

    /// Opens `overlay` above whatever is open.
    pub fn open(&mut self, overlay: Overlay) {
        self.overlays.push(overlay);
    }

    /// Closes the view on top.
    pub fn close(&mut self) {
        self.overlays.pop();
    }

    /// Whether the cancel question is open.
    pub fn confirming_cancel(&self) -> bool {
        self.overlays
            .iter()
            .any(|o| matches!(o, Overlay::ConfirmCancel))
    }

    /// Closes the cancel question, wherever it is in the stack.
    pub fn close_cancel_question(&mut self) {
        self.overlays
            .retain(|o| !matches!(o, Overlay::ConfirmCancel));
    }

    /// Sizes every scrollable view for a frame of `area`; call before each draw.
    pub fn sync(&mut self, area: Rect) {
        self.areas.screen = area;
        match self.phase {
            Phase::Editing => {}
            Phase::Running => self.sync_run(area),
            Phase::Finished => {
                self.sync_run(area);
                self.review.sync(area, self.notice.as_deref());
            }
        }
        self.sync_overlay(area);
    }

    fn sync_run(&mut self, area: Rect) {
        let objective_width = layout::inner(layout::run_areas(area, 1).objective).width;
        let objective_lines = wrap::rows_multiline(&self.objective, objective_width.into()).len();
        let areas = layout::run_areas(area, objective_lines);
        self.areas.run = areas;
        let stream = layout::inner(areas.stream);
        self.transcript
            .sync(stream.width.into(), stream.height.into());
        let objective_height = usize::from(layout::inner(areas.objective).height);
        self.cursors.objective_scroll = self
            .cursors
            .objective_scroll
            .min(objective_lines.saturating_sub(objective_height));
        let reports_height = usize::from(layout::inner(areas.reports).height).max(1);
        self.cursors.report_sel = self
            .cursors
            .report_sel
            .min(self.reports.len().saturating_sub(1));
        self.cursors.report_offset = keep_visible(
            self.cursors.report_offset,
            self.cursors.report_sel,
            reports_height,
        );
        let rows = self.change_rows().len();
        let changes_height = usize::from(layout::inner(areas.changes).height).max(1);
        self.cursors.change_sel = self.cursors.change_sel.min(rows.saturating_sub(1));
        self.cursors.change_offset = keep_visible(
            self.cursors.change_offset,
            self.cursors.change_sel,
            changes_height,
        );
    }

    fn sync_overlay(&mut self, area: Rect) {
        let (overlays, ctx) = self.overlays_and_ctx();
        for overlay in overlays {
            overlay.sync(area, &ctx);
        }
    }
}
