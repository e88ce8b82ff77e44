//! The cancel question: yes cancels the run, no keeps it running.

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;

use super::view::{Ctx, Outcome, View};
use crate::screens::hints;
use crate::screens::keys::{self, Action};
use crate::screens::kit::draw::{draw_lines, footer_lines, modal};
use crate::screens::kit::layout::popup;
use crate::screens::kit::wrap;

/// The cancel question; it takes every key while open.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CancelQuestion;

impl View for CancelQuestion {
    fn handle_key(&mut self, key: &KeyEvent, _ctx: &Ctx) -> Outcome {
        match keys::action(&[&keys::CANCEL], key) {
            Some(Action::Yes) => Outcome::ConfirmCancel,
            Some(Action::No) => Outcome::Close,
            _ => Outcome::Stay,
        }
    }

    fn render(&self, ctx: &Ctx, area: Rect, buf: &mut Buffer) {
        let theme = ctx.theme;
        let explain = "Generation stops at the next token and any running command is killed. \
                       The run ends `cancelled` and the review shows what changed.";
        let width = (area.width * 60 / 100).max(50).min(area.width);
        let text_width = usize::from(width.saturating_sub(2));
        let rows = wrap::rows(explain, text_width).len() as u16;
        let footer = footer_lines(theme, &hints::footer(&keys::CANCEL), text_width);
        let rect = popup(area, 60, 0, 50, rows + footer.len() as u16 + 3);
        let inner = modal(theme, " Cancel this run? ".to_string(), None, rect, buf);
        let mut lines: Vec<Line> = wrap::rows(explain, usize::from(inner.width))
            .into_iter()
            .map(|r| Line::raw(r.to_string()))
            .collect();
        lines.push(Line::raw(""));
        lines.extend(footer);
        draw_lines(&lines, inner, buf);
    }
}
