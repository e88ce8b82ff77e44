//! Keys: the part of update that answers the person.
//!
//! The order is fixed: Ctrl-C first (it must always work), then the cancel question, then a
//! waiting approval, then the view on top, then the screen. Every key is looked up in the
//! key table ([`super::keys`]) and handled by what it means there, so the help screen, drawn
//! from the same table, always tells the truth.

use crossterm::event::{KeyEvent, KeyEventKind};

use super::keys::{self, Action};
use super::kit::scroll::moved;
use super::model::{
    ChangeRow, CommitState, DiffSource, Effect, Loadable, Pane, Phase, FORCE_QUIT_AFTER,
};
use super::review::ReviewScreen;
use super::state::State;
use super::transcript::LineKind;
use super::views::approval::ApprovalQuestion;
use super::views::card::CardDetail;
use super::views::diff::DiffView;
use super::views::overlay::Overlay;
use super::views::report_detail::ReportDetail;
use super::views::view::{Outcome, View};
use crate::error::ExitCode;
use crate::tools::approval::ApprovalDecision;

/// What Enter and `[` `]` say before the first tool call is whole.
const NO_CARD_YET: &str = "no tool call yet: a call becomes a card (Enter opens it, [ ] select) \
                           once the model has written it whole";

impl State {
    pub(super) fn on_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        if key.kind == KeyEventKind::Release {
            return Vec::new();
        }
        self.notice = None;
        match self.phase {
            Phase::Editing => self.editing_key(key),
            Phase::Running => self.running_key(key),
            Phase::Finished => self.review_key(key),
        }
    }

    fn editing_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        let action = keys::editor_action(&[&keys::EDITOR, &keys::EVERYWHERE], &key);
        if action == Some(Action::Interrupt) {
            return vec![Effect::Quit(ExitCode::Cancelled)];
        }
        if !self.overlays.is_empty() {
            return self.overlay_key(&key);
        }
        // Any key but a second Esc takes back a first one.
        let armed = std::mem::take(&mut self.editor.quit_armed);
        let typed = self
            .editor
            .text
            .lines()
            .iter()
            .any(|l| !l.trim().is_empty());
        match action {
            Some(Action::Back) if typed && !armed => {
                self.editor.quit_armed = true;
                self.editor.error = Some("Esc again quits and loses the text".into());
            }
            Some(Action::Back) => return vec![Effect::Quit(ExitCode::Cancelled)],
            Some(Action::Help) => self.open(Overlay::help()),
            Some(Action::Submit) => {
                let text = self.editor.text.lines().join("\n");
                match crate::intake::normalize_objective(&text) {
                    Ok(objective) => {
                        self.objective = objective.clone();
                        self.phase = Phase::Running;
                        self.editor.error = None;
                        return vec![Effect::StartRun(objective)];
                    }
                    Err(e) => self.editor.error = Some(e.to_string()),
                }
            }
            _ => {
                self.editor.error = None;
                self.editor.text.input(key);
            }
        }
        Vec::new()
    }

    /// Cancels the run (once) and remembers when, for the status line.
    pub(super) fn confirm_cancel(&mut self) -> Vec<Effect> {
        if self.phase != Phase::Running {
            return Vec::new();
        }
        self.close_cancel_question();
        if self.cancel_requested.is_none() {
            self.cancel_requested = Some(self.now);
            self.transcript.push_line(
                LineKind::Notice,
                "! cancel requested: generation stops at the next token, running commands are killed",
            );
        }
        vec![Effect::CancelRun]
    }

    fn running_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        if keys::action(&[&keys::EVERYWHERE], &key) == Some(Action::Interrupt) {
            return self.interrupt_run();
        }
        if self.confirming_cancel() || self.approvals.is_empty() {
            if !self.overlays.is_empty() {
                return self.overlay_key(&key);
            }
        } else {
            return self.approval_key(&key);
        }
        match keys::action(&[&keys::RUN, &keys::EVERYWHERE], &key) {
            Some(Action::Back) => self.ask_cancel(),
            Some(Action::Help) => self.open(Overlay::help()),
            Some(Action::RunLog) => self.open(Overlay::RunLog),
            Some(Action::Follow) => self.transcript.follow(),
            Some(Action::FocusNext) => self.cursors.focus = self.cursors.focus.next(),
            Some(Action::FocusPrevious) => self.cursors.focus = self.cursors.focus.previous(),
            Some(Action::Open) => return self.open_selected(),
            Some(Action::RawOutput) => {
                let on = !self.transcript.raw();
                self.transcript.set_raw(on);
            }
            Some(Action::Unfold) => {
                let on = !self.transcript.unfolded();
                self.transcript.set_unfolded(on);
                let folds = self
                    .transcript
                    .lines()
                    .any(|(kind, _)| matches!(kind, LineKind::Reasoning | LineKind::Detail));
                if on && !folds {
                    self.notice = Some("nothing is folded yet".into());
                }
            }
            Some(Action::PreviousCard | Action::NextCard) if self.cards.is_empty() => {
                self.notice = Some(NO_CARD_YET.into());
            }
            Some(Action::PreviousCard) => self.move_card_selection(false),
            Some(Action::NextCard) => self.move_card_selection(true),
            Some(action) => self.move_in_pane(action),
            None => {}
        }
        Vec::new()
    }

    /// Ctrl-C while running: confirms an open cancel question, else asks it; once the cancel
    /// is under way, a late second one quits without waiting.
    fn interrupt_run(&mut self) -> Vec<Effect> {
        if matches!(self.overlay(), Some(Overlay::ConfirmCancel)) {
            return self.confirm_cancel();
        }
        if let Some(at) = self.cancel_requested {
            if self.now.saturating_sub(at) >= FORCE_QUIT_AFTER {
                return vec![Effect::Quit(ExitCode::Cancelled)];
            }
            self.notice = Some(format!(
                "cancelling… Ctrl-C again after {} s quits without waiting",
                FORCE_QUIT_AFTER.as_secs()
            ));
            return Vec::new();
        }
        self.open(Overlay::ConfirmCancel);
        Vec::new()
    }

    fn approval_key(&mut self, key: &KeyEvent) -> Vec<Effect> {
        let Some(request) = self.approvals.front() else {
            return Vec::new();
        };
        let id = request.id;
        let mut question = ApprovalQuestion {
            request,
            waiting: 0,
        };
        let decision = match question.handle_key(key, &self.view_ctx()) {
            Outcome::Answer(decision) => decision,
            Outcome::AskCancel => {
                self.ask_cancel();
                return Vec::new();
            }
            _ => return Vec::new(),
        };
        self.approvals.pop_front();
        let word = match decision {
            ApprovalDecision::Approve => "approved",
            ApprovalDecision::Deny => "refused",
            ApprovalDecision::AlwaysThisRun => "approved for the rest of the run",
        };
        self.transcript
            .push_line(LineKind::Notice, &format!("? {word} by you"));
        vec![Effect::Answer(id, decision)]
    }

    fn ask_cancel(&mut self) {
        if self.cancel_requested.is_none() && !self.confirming_cancel() {
            self.open(Overlay::ConfirmCancel);
        }
    }

    /// Hands a key to the view on top and carries out what it answers.
    fn overlay_key(&mut self, key: &KeyEvent) -> Vec<Effect> {
        let (overlays, ctx) = self.overlays_and_ctx();
        let Some(top) = overlays.last_mut() else {
            return Vec::new();
        };
        match top.handle_key(key, &ctx) {
            Outcome::Stay => {}
            Outcome::Close => self.close(),
            Outcome::OpenHelp => self.open(Overlay::help()),
            Outcome::ConfirmCancel => return self.confirm_cancel(),
            Outcome::Notice(text) => self.notice = Some(text),
            Outcome::AskCancel => self.ask_cancel(),
            Outcome::Answer(_) => {}
            Outcome::Commit(message) => {
                self.close();
                if let Some(review) = &mut self.review {
                    review.commit = CommitState::Committing;
                }
                return vec![Effect::Commit(message)];
            }
            Outcome::RevertRound(round) => return vec![Effect::RevertRound(round)],
            Outcome::Discard => {
                self.close();
                self.notice = Some("discarding the run's changes…".into());
                return vec![Effect::Discard];
            }
        }
        Vec::new()
    }

    fn move_in_pane(&mut self, action: Action) {
        let (delta, jump): (isize, Option<bool>) = match action {
            Action::Up => (-1, None),
            Action::Down => (1, None),
            Action::PageUp => (-(self.page_of(self.cursors.focus) as isize), None),
            Action::PageDown => (self.page_of(self.cursors.focus) as isize, None),
            Action::Top => (0, Some(false)),
            Action::Bottom => (0, Some(true)),
            _ => return,
        };
        match self.cursors.focus {
            Pane::Stream => match jump {
                Some(false) => self.transcript.scroll_to_top(),
                Some(true) => self.transcript.follow(),
                None if delta < 0 => self.transcript.scroll_up(delta.unsigned_abs()),
                None => self.transcript.scroll_down(delta.unsigned_abs()),
            },
            Pane::Reports => {
                let len = self.reports.len();
                self.cursors.report_sel = moved(self.cursors.report_sel, delta, jump, len);
            }
            Pane::Changes => {
                let len = self.change_rows().len();
                self.cursors.change_sel = moved(self.cursors.change_sel, delta, jump, len);
            }
            Pane::Objective => {
                self.cursors.objective_scroll = match jump {
                    Some(false) => 0,
                    Some(true) => usize::MAX / 2,
                    None => self.cursors.objective_scroll.saturating_add_signed(delta),
                }
            }
        }
    }

    fn page_of(&self, pane: Pane) -> usize {
        let area = match pane {
            Pane::Stream => return self.transcript.page(),
            Pane::Reports => self.run_areas.reports,
            Pane::Changes => self.run_areas.changes,
            Pane::Objective => self.run_areas.objective,
        };
        usize::from(area.height.saturating_sub(3)).max(1)
    }

    fn open_selected(&mut self) -> Vec<Effect> {
        match self.cursors.focus {
            Pane::Stream => {
                match self.selected_card().cloned() {
                    Some(card) => self.open(Overlay::Card(Box::new(CardDetail::new(card)))),
                    None => self.notice = Some(NO_CARD_YET.into()),
                }
                Vec::new()
            }
            Pane::Reports if !self.reports.is_empty() => {
                self.open(Overlay::ReportDetail(ReportDetail::new(
                    self.cursors.report_sel,
                )));
                Vec::new()
            }
            Pane::Changes => {
                let rows = self.change_rows();
                let Some(row) = rows.get(self.cursors.change_sel) else {
                    return Vec::new();
                };
                let (index, file) = match *row {
                    ChangeRow::Round(i) => (i, None),
                    ChangeRow::File(i, f) => (i, Some(f)),
                };
                let Some(changes) = self.changes.get(index) else {
                    return Vec::new();
                };
                let (source, only) = if changes.live {
                    let paths = changes.files.iter().map(|f| f.path.clone()).collect();
                    (DiffSource::Live(changes.round), paths)
                } else {
                    (DiffSource::Round(changes.round), Vec::new())
                };
                self.open(Overlay::Diff(DiffView {
                    source,
                    diff: Loadable::Loading,
                    file: file.unwrap_or(0),
                    scroll: 0,
                    only,
                }));
                vec![Effect::LoadDiff(source)]
            }
            _ => Vec::new(),
        }
    }

    /// The review: a view open above it takes the key (Ctrl-C closes any but the commit
    /// editor, whose text it would lose); else the review screen does.
    fn review_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        if let Some(top) = self.overlay() {
            let interrupt = keys::action(&[&keys::EVERYWHERE], &key) == Some(Action::Interrupt);
            if interrupt && !matches!(top, Overlay::Commit(_)) {
                self.close();
                return Vec::new();
            }
            return self.overlay_key(&key);
        }
        ReviewScreen.handle_key(self, &key)
    }
}
