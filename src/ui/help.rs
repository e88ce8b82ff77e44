//! Help: every key, by screen, drawn from the key table the handlers dispatch on, so what
//! help says and what the keys do cannot drift apart.

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::draw::{draw_lines, modal};
use super::keys::{self, SECTIONS};
use super::layout::{inner, popup};
use super::scroll;
use super::theme::Theme;
use super::view::{Ctx, Outcome, View};
use super::wrap::str_width;

/// The help view; it owns its scroll.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Help {
    pub scroll: usize,
}

fn area_of(area: Rect) -> Rect {
    popup(area, 96, 92, 60, 16)
}

/// The inside of the help view.
pub fn body(area: Rect) -> Rect {
    inner(area_of(area))
}

/// Every row of help: a title per section, then its bindings.
pub fn all_lines(theme: Theme) -> Vec<Line<'static>> {
    let key_width = SECTIONS
        .iter()
        .flat_map(|section| section.bindings.iter())
        .map(|binding| str_width(binding.keys))
        .max()
        .unwrap_or(10);
    let mut out = Vec::new();
    for (i, section) in SECTIONS.iter().enumerate() {
        if i > 0 {
            out.push(Line::raw(""));
        }
        out.push(Line::styled(section.title.to_string(), theme.bold()));
        for binding in section.bindings {
            let pad = key_width - str_width(binding.keys);
            out.push(Line::from(vec![
                Span::raw("  "),
                Span::styled(binding.keys.to_string(), theme.key()),
                Span::raw(" ".repeat(pad + 2)),
                Span::raw(binding.what.to_string()),
            ]));
        }
    }
    out
}

impl View for Help {
    /// Scrolling keys scroll; any other key closes.
    fn handle_key(&mut self, key: &KeyEvent, ctx: &Ctx) -> Outcome {
        let moved = keys::action(&[&keys::VIEWS], key)
            .and_then(|action| scroll::scrolled(self.scroll, action, ctx.page()));
        match moved {
            Some(scroll) => {
                self.scroll = scroll;
                Outcome::Stay
            }
            None => Outcome::Close,
        }
    }

    fn sync(&mut self, area: Rect, _ctx: &Ctx) {
        let rows = all_lines(Theme::plain()).len();
        self.scroll = scroll::clamp(self.scroll, rows, body(area).height);
    }

    fn render(&self, ctx: &Ctx, area: Rect, buf: &mut Buffer) {
        let hint = Some(" ↑↓ scroll · any other key closes ".to_string());
        let inner = modal(ctx.theme, " Keys ".to_string(), hint, area_of(area), buf);
        let lines: Vec<Line> = all_lines(ctx.theme).into_iter().skip(self.scroll).collect();
        draw_lines(&lines, inner, buf);
    }
}
