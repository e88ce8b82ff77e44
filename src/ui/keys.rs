//! Keys, mouse and paste: the part of update that answers the person.
//!
//! The order is fixed: Ctrl-C first (it must always work), then the cancel question, then a
//! waiting approval, then the open overlay, then the screen. [`KEYS`] lists every binding
//! for the help screen, so help and behaviour are written side by side.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use tui_textarea::TextArea;

use super::state::{
    ChangeRow, CommitState, DiffSource, DiffView, Effect, Loadable, Msg, Overlay, Pane, Phase,
    State, FORCE_QUIT_AFTER,
};
use super::transcript::LineKind;
use crate::error::ExitCode;
use crate::tools::approval::ApprovalDecision;

/// Every key, by screen, for the help overlay.
pub const KEYS: &[(&str, &[(&str, &str)])] = &[
    (
        "Everywhere",
        &[
            ("?", "this help (F1 in editors)"),
            (
                "Ctrl-C",
                "cancel the run (asks; twice cancels at once), or quit",
            ),
            ("Esc", "close the open view; else ask to cancel the run"),
        ],
    ),
    (
        "Objective editor",
        &[
            ("Ctrl-S", "start the run with this objective"),
            ("Esc", "quit without running (exit code 130)"),
            ("Enter", "new line"),
        ],
    ),
    (
        "Run screen",
        &[
            (
                "Tab / Shift-Tab",
                "move focus: stream, reports, changes, objective",
            ),
            ("↑ ↓ / k j", "scroll the focused pane, or move in its list"),
            ("PgUp / PgDn", "scroll a page"),
            (
                "Home / End",
                "top / bottom; End in the stream follows it again",
            ),
            ("f", "follow the stream"),
            (
                "Enter",
                "open the selected report, or the selected change's diff",
            ),
            ("mouse wheel", "scroll the pane under the pointer"),
            (
                "Shift + drag",
                "select text (the UI takes the mouse otherwise)",
            ),
            ("l", "show where the run log is"),
        ],
    ),
    (
        "Cancel question",
        &[
            ("y / Enter", "cancel the run"),
            ("n / Esc", "keep running"),
            ("Ctrl-C", "cancel the run at once"),
        ],
    ),
    (
        "Approval",
        &[
            ("y", "run this command"),
            ("n", "refuse it (the worker is told)"),
            ("a", "run it and every later command of this run"),
        ],
    ),
    (
        "Report and diff views",
        &[
            ("↑ ↓ PgUp PgDn", "scroll"),
            ("← → / [ ]", "previous / next report or file"),
            ("Esc / q", "close"),
        ],
    ),
    (
        "Review",
        &[
            (
                "c",
                "commit the run's changes (edit the message, Ctrl-S commits)",
            ),
            ("q", "quit and leave the changes uncommitted"),
            ("l", "show the run log location"),
            ("r", "the final report in full"),
            ("↑ ↓", "choose a file"),
            ("PgUp / PgDn", "scroll its diff"),
            ("Enter", "open the diff full screen"),
        ],
    ),
];

fn is_ctrl(key: &KeyEvent, c: char) -> bool {
    key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char(c)
}

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
        if is_ctrl(&key, 'c') {
            return vec![Effect::Quit(ExitCode::Cancelled)];
        }
        if let Some(Overlay::Help { .. }) = self.overlay {
            if !self.scroll_overlay(&key) {
                self.overlay = None;
            }
            return Vec::new();
        }
        match key.code {
            KeyCode::Esc => return vec![Effect::Quit(ExitCode::Cancelled)],
            KeyCode::F(1) => self.overlay = Some(Overlay::Help { scroll: 0 }),
            _ if is_ctrl(&key, 's') => {
                let text = self.editor.lines().join("\n");
                match crate::config::normalize_objective(&text) {
                    Ok(objective) => {
                        self.objective = objective.clone();
                        self.phase = Phase::Running;
                        self.editor_error = None;
                        return vec![Effect::StartRun(objective)];
                    }
                    Err(e) => self.editor_error = Some(e.to_string()),
                }
            }
            _ => {
                self.editor_error = None;
                self.editor.input(key);
            }
        }
        Vec::new()
    }

    /// Cancels the run (once) and remembers when, for the status line.
    pub(super) fn confirm_cancel(&mut self) -> Vec<Effect> {
        if self.phase != Phase::Running {
            return Vec::new();
        }
        if let Some(Overlay::ConfirmCancel) = self.overlay {
            self.overlay = None;
        }
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
        let confirming = matches!(self.overlay, Some(Overlay::ConfirmCancel));
        if is_ctrl(&key, 'c') {
            if confirming {
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
            self.overlay = Some(Overlay::ConfirmCancel);
            return Vec::new();
        }
        if confirming {
            match key.code {
                KeyCode::Char('y' | 'Y') | KeyCode::Enter => return self.confirm_cancel(),
                KeyCode::Char('n' | 'N') | KeyCode::Esc => self.overlay = None,
                _ => {}
            }
            return Vec::new();
        }
        if let Some(approval) = self.approvals.front() {
            let id = approval.id;
            let decision = match key.code {
                KeyCode::Char('y' | 'Y') => ApprovalDecision::Approve,
                KeyCode::Char('n' | 'N') => ApprovalDecision::Deny,
                KeyCode::Char('a' | 'A') => ApprovalDecision::AlwaysThisRun,
                KeyCode::Esc => {
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
            return vec![Effect::Answer(id, decision)];
        }
        if self.overlay_key(&key) {
            return Vec::new();
        }
        match key.code {
            KeyCode::Esc => self.ask_cancel(),
            KeyCode::Char('?') => self.overlay = Some(Overlay::Help { scroll: 0 }),
            KeyCode::Char('l') => self.overlay = Some(Overlay::RunLog),
            KeyCode::Char('f') => self.transcript.follow(),
            KeyCode::Tab => self.focus = self.focus.next(),
            KeyCode::BackTab => self.focus = self.focus.previous(),
            KeyCode::Enter => return self.open_selected(),
            _ => self.move_in_pane(&key),
        }
        Vec::new()
    }

    fn ask_cancel(&mut self) {
        if self.cancel_requested.is_none() {
            self.overlay = Some(Overlay::ConfirmCancel);
        }
    }

    /// Keys for an open overlay; false when there is none (or it lets the key through).
    fn overlay_key(&mut self, key: &KeyEvent) -> bool {
        let Some(overlay) = &mut self.overlay else {
            return false;
        };
        let close = matches!(key.code, KeyCode::Esc | KeyCode::Char('q'));
        match overlay {
            Overlay::Help { .. } => {
                if !self.scroll_overlay(key) {
                    self.overlay = None;
                }
            }
            Overlay::RunLog | Overlay::ConfirmCancel => self.overlay = None,
            Overlay::ReportDetail { index, .. } => match key.code {
                KeyCode::Left | KeyCode::Char('[') => {
                    *index = index.saturating_sub(1);
                    self.reset_overlay_scroll();
                }
                KeyCode::Right | KeyCode::Char(']') => {
                    *index += 1;
                    self.reset_overlay_scroll();
                }
                KeyCode::Enter => self.overlay = None,
                _ if close => self.overlay = None,
                _ => {
                    self.scroll_overlay(key);
                }
            },
            Overlay::Diff(view) => match key.code {
                KeyCode::Left | KeyCode::Char('[') => {
                    view.file = view.file.saturating_sub(1);
                    view.scroll = 0;
                }
                KeyCode::Right | KeyCode::Char(']') => {
                    view.file += 1;
                    view.scroll = 0;
                }
                _ if close => self.overlay = None,
                _ => {
                    self.scroll_overlay(key);
                }
            },
            Overlay::Commit(editor) => {
                if is_ctrl(key, 's') {
                    let message = editor.lines().join("\n").trim().to_string();
                    if message.is_empty() {
                        self.notice = Some("the commit message is empty".into());
                        return true;
                    }
                    self.overlay = None;
                    if let Some(review) = &mut self.review {
                        review.commit = CommitState::Committing;
                    }
                    self.pending_commit = Some(message);
                } else if key.code == KeyCode::Esc || is_ctrl(key, 'c') {
                    self.overlay = None;
                } else if key.code == KeyCode::F(1) {
                    self.overlay = Some(Overlay::Help { scroll: 0 });
                } else {
                    editor.input(*key);
                }
            }
        }
        true
    }

    fn reset_overlay_scroll(&mut self) {
        if let Some(Overlay::ReportDetail { scroll, .. }) = &mut self.overlay {
            *scroll = 0;
        }
    }

    /// Scrolls a scrollable overlay; false when the key is not a scrolling key.
    fn scroll_overlay(&mut self, key: &KeyEvent) -> bool {
        let page = usize::from(self.screen.height.saturating_sub(6)).max(1);
        let scroll = match &mut self.overlay {
            Some(Overlay::Help { scroll }) => scroll,
            Some(Overlay::ReportDetail { scroll, .. }) => scroll,
            Some(Overlay::Diff(view)) => &mut view.scroll,
            _ => return false,
        };
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => *scroll = scroll.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => *scroll += 1,
            KeyCode::PageUp => *scroll = scroll.saturating_sub(page),
            KeyCode::PageDown | KeyCode::Char(' ') => *scroll += page,
            KeyCode::Home => *scroll = 0,
            KeyCode::End => *scroll = usize::MAX / 2,
            _ => return false,
        }
        true
    }

    fn move_in_pane(&mut self, key: &KeyEvent) {
        let (delta, jump): (isize, Option<bool>) = match key.code {
            KeyCode::Up | KeyCode::Char('k') => (-1, None),
            KeyCode::Down | KeyCode::Char('j') => (1, None),
            KeyCode::PageUp => (-(self.page_of(self.focus) as isize), None),
            KeyCode::PageDown => (self.page_of(self.focus) as isize, None),
            KeyCode::Home => (0, Some(false)),
            KeyCode::End => (0, Some(true)),
            _ => return,
        };
        match self.focus {
            Pane::Stream => match jump {
                Some(false) => self.transcript.scroll_to_top(),
                Some(true) => self.transcript.follow(),
                None if delta < 0 => self.transcript.scroll_up(delta.unsigned_abs()),
                None => self.transcript.scroll_down(delta.unsigned_abs()),
            },
            Pane::Reports => {
                let len = self.reports.len();
                self.report_sel = moved(self.report_sel, delta, jump, len);
            }
            Pane::Changes => {
                let len = self.change_rows().len();
                self.change_sel = moved(self.change_sel, delta, jump, len);
            }
            Pane::Objective => {
                self.objective_scroll = match jump {
                    Some(false) => 0,
                    Some(true) => usize::MAX / 2,
                    None => self.objective_scroll.saturating_add_signed(delta),
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
        match self.focus {
            Pane::Reports if !self.reports.is_empty() => {
                self.overlay = Some(Overlay::ReportDetail {
                    index: self.report_sel,
                    scroll: 0,
                });
                Vec::new()
            }
            Pane::Changes => {
                let rows = self.change_rows();
                let Some(row) = rows.get(self.change_sel) else {
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
                self.overlay = Some(Overlay::Diff(DiffView {
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

    fn review_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        if self.overlay.is_some() {
            if is_ctrl(&key, 'c') && !matches!(self.overlay, Some(Overlay::Commit(_))) {
                self.overlay = None;
                return Vec::new();
            }
            self.overlay_key(&key);
            return self
                .pending_commit
                .take()
                .map(Effect::Commit)
                .into_iter()
                .collect();
        }
        let Some(review) = &mut self.review else {
            return vec![Effect::Quit(self.exit_code())];
        };
        let page = usize::from(self.review_areas.diff.height.saturating_sub(3)).max(1);
        let files = match &review.diff {
            Loadable::Ready(diff) => diff.files.len() - diff.outside_run().len(),
            _ => 0,
        };
        match key.code {
            KeyCode::Char('q') => return vec![Effect::Quit(self.exit_code())],
            KeyCode::Esc => {
                self.notice =
                    Some("the run is over: q quits (changes stay uncommitted), c commits".into());
            }
            _ if is_ctrl(&key, 'c') => return vec![Effect::Quit(self.exit_code())],
            KeyCode::Char('?') => self.overlay = Some(Overlay::Help { scroll: 0 }),
            KeyCode::Char('l') => self.overlay = Some(Overlay::RunLog),
            KeyCode::Char('r') => {
                let last = self
                    .reports
                    .iter()
                    .rposition(|e| matches!(e, super::state::ReportEntry::Accepted { .. }));
                match last {
                    Some(index) => self.overlay = Some(Overlay::ReportDetail { index, scroll: 0 }),
                    None => self.notice = Some("no report was accepted in this run".into()),
                }
            }
            KeyCode::Char('c') => match &review.commit {
                CommitState::Done(id) => self.notice = Some(format!("already committed as {id}")),
                CommitState::Committing => self.notice = Some("committing…".into()),
                _ if matches!(review.diff, Loadable::Loading) => {
                    self.notice = Some("the run's changes are still being read".into())
                }
                _ if matches!(review.diff, Loadable::Failed(_)) => {
                    self.notice =
                        Some("cannot commit: the run's changes could not be read".into())
                }
                _ if files == 0 => {
                    self.notice = Some(match &review.diff {
                        Loadable::Ready(d) if !d.files.is_empty() => {
                            "nothing to commit: every change was made outside the run".into()
                        }
                        Loadable::Ready(d) if !d.unseen.is_empty() => format!(
                            "nothing to commit among the files that could be read; {} could not be looked into",
                            d.unseen.join(", ")
                        ),
                        _ => "nothing to commit: the run changed no files".into(),
                    })
                }
                _ => {
                    let lines = self.commit_message().lines().map(String::from).collect();
                    let mut editor = TextArea::new(lines);
                    editor.set_cursor_line_style(ratatui::style::Style::default());
                    self.overlay = Some(Overlay::Commit(Box::new(editor)));
                }
            },
            KeyCode::Up | KeyCode::Char('k') => {
                review.file = review.file.saturating_sub(1);
                review.diff_scroll = 0;
            }
            KeyCode::Down | KeyCode::Char('j') => {
                review.file = (review.file + 1).min(files.saturating_sub(1));
                review.diff_scroll = 0;
            }
            KeyCode::PageUp => review.diff_scroll = review.diff_scroll.saturating_sub(page),
            KeyCode::PageDown | KeyCode::Char(' ') => review.diff_scroll += page,
            KeyCode::Enter => {
                if let Loadable::Ready(diff) = &review.diff {
                    self.overlay = Some(Overlay::Diff(DiffView {
                        source: DiffSource::Review,
                        diff: Loadable::Ready(diff.clone()),
                        file: review.file,
                        scroll: 0,
                        only: Vec::new(),
                    }));
                }
            }
            _ => {}
        }
        Vec::new()
    }
}

/// A list selection moved by `delta` or to an end, inside `0..len`.
pub(super) fn moved(current: usize, delta: isize, jump: Option<bool>, len: usize) -> usize {
    let last = len.saturating_sub(1);
    match jump {
        Some(false) => 0,
        Some(true) => last,
        None => current.saturating_add_signed(delta).min(last),
    }
}

/// A key message, for tests and the event loop.
pub fn key(code: KeyCode, modifiers: KeyModifiers) -> Msg {
    Msg::Key(KeyEvent::new(code, modifiers))
}
