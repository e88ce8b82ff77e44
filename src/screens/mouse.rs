//! Mouse and paste: the wheel scrolls the pane under the pointer, a click focuses a pane,
//! pasted text goes to the open editor.

use crossterm::event::{MouseEvent, MouseEventKind};
use ratatui::layout::{Position, Rect};

use super::kit::scroll::moved;
use super::model::{Pane, Phase};
use super::state::State;
use super::views::overlay::Overlay;

impl State {
    pub(super) fn on_mouse(&mut self, mouse: MouseEvent) {
        let up = match mouse.kind {
            MouseEventKind::ScrollUp => true,
            MouseEventKind::ScrollDown => false,
            MouseEventKind::Down(_) => {
                self.click(mouse.column, mouse.row);
                return;
            }
            _ => return,
        };
        const STEP: usize = 3;
        let at = Position::new(mouse.column, mouse.row);
        if let Some(Overlay::Diff(view)) = self.overlays.last_mut() {
            view.wheel(up, STEP);
            return;
        }
        if !self.overlays.is_empty() {
            return;
        }
        let areas = self.areas.run;
        let delta = if up { -1 } else { 1 };
        match self.phase {
            Phase::Running if areas.stream.contains(at) => {
                if up {
                    self.transcript.scroll_up(STEP);
                } else {
                    self.transcript.scroll_down(STEP);
                }
            }
            Phase::Running if areas.reports.contains(at) => {
                self.cursors.report_sel =
                    moved(self.cursors.report_sel, delta, None, self.reports.len());
            }
            Phase::Running if areas.changes.contains(at) => {
                let len = self.change_rows().len();
                self.cursors.change_sel = moved(self.cursors.change_sel, delta, None, len);
            }
            Phase::Running if areas.objective.contains(at) => {
                self.cursors.objective_scroll =
                    self.cursors.objective_scroll.saturating_add_signed(delta);
            }
            Phase::Finished => {
                let diff_area = self.review.areas.diff;
                if let Some(review) = &mut self.review.shown {
                    if diff_area.contains(at) {
                        review.diff_scroll = if up {
                            review.diff_scroll.saturating_sub(STEP)
                        } else {
                            review.diff_scroll + STEP
                        };
                    } else if self.review.areas.files.contains(at) {
                        review.file = if up {
                            review.file.saturating_sub(1)
                        } else {
                            review.file + 1
                        };
                        review.diff_scroll = 0;
                    }
                }
            }
            _ => {}
        }
    }

    fn click(&mut self, column: u16, row: u16) {
        if self.phase != Phase::Running || !self.overlays.is_empty() {
            return;
        }
        let at = Position::new(column, row);
        let areas = self.areas.run;
        let panes: [(Rect, Pane); 4] = [
            (areas.stream, Pane::Stream),
            (areas.reports, Pane::Reports),
            (areas.changes, Pane::Changes),
            (areas.objective, Pane::Objective),
        ];
        if let Some((_, pane)) = panes.iter().find(|(r, _)| r.contains(at)) {
            self.cursors.focus = *pane;
        }
    }

    pub(super) fn on_paste(&mut self, text: &str) {
        match (self.overlays.last_mut(), self.phase) {
            (Some(Overlay::Commit(editor)), _) => {
                editor.paste(text);
            }
            (Some(Overlay::Note(editor)), _) => {
                editor.paste(text);
            }
            (None, Phase::Editing) => {
                self.editor.text.insert_str(text);
            }
            _ => {}
        }
    }
}
