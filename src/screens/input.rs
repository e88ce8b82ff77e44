//! Keys: the part of update that answers the person.
//!
//! The order is fixed: Ctrl-C first (it must always work), then the cancel question, then a
//! waiting approval, then the view on top, then the screen, which owns its keys
//! ([`super::run::RunScreen`], [`super::review::ReviewScreen`]). Every key is looked up in the
//! key table ([`super::keys`]) and handled by what it means there, so the help screen, drawn
//! from the same table, always tells the truth.

use crossterm::event::{KeyEvent, KeyEventKind};

use super::keys::{self, Action};
use super::model::{Effect, Phase, FORCE_QUIT_AFTER};
use super::run::RunScreen;
use super::state::State;
use super::transcript::LineKind;
use super::views::approval::ApprovalQuestion;
use super::views::overlay::Overlay;
use super::views::view::{Outcome, View};
use crate::error::ExitCode;
use crate::tools::approval::ApprovalDecision;

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
        RunScreen.handle_key(self, &key)
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

    pub(in crate::screens) fn ask_cancel(&mut self) {
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
            Outcome::Review(effect) => {
                let (screen, lent) = self.review_and_lent();
                return screen.asked(effect, lent);
            }
            Outcome::Note(text) => {
                self.close();
                return self.note_sent(text);
            }
            Outcome::SendBack(note, rounds) => {
                self.close();
                return self.send_back(note, rounds);
            }
        }
        Vec::new()
    }

    /// The review: a view open above it takes the key (Ctrl-C closes any but the commit
    /// editor, whose text it would lose); else the review screen does.
    fn review_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        if let Some(top) = self.overlay() {
            let interrupt = keys::action(&[&keys::EVERYWHERE], &key) == Some(Action::Interrupt);
            if interrupt && !matches!(top, Overlay::Commit(_) | Overlay::Note(_)) {
                self.close();
                return Vec::new();
            }
            return self.overlay_key(&key);
        }
        let (screen, lent) = self.review_and_lent();
        screen.handle_key(&key, lent)
    }
}
