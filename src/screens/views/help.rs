//! Help: every key, by screen, drawn from the key table the handlers dispatch on, so what
//! help says and what the keys do cannot drift apart.

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::view::{Ctx, Outcome, View};
use crate::screens::hints;
use crate::screens::keys::{self, Action, Binding, Section, SECTIONS};
use crate::screens::kit::draw::{draw_lines, modal};
use crate::screens::kit::layout::{inner, popup};
use crate::screens::kit::scroll;
use crate::screens::kit::theme::Theme;
use crate::screens::kit::wrap::str_width;

/// The help view; it owns its scroll.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Help {
    pub scroll: usize,
    /// A replay's help: only the keys a replay acts on.
    pub replay: bool,
}

/// Sections a replay has no use for: nothing is typed, asked, reverted or discarded there.
const NOT_IN_REPLAY: [&Section; 7] = [
    &keys::EDITOR,
    &keys::NOTE,
    &keys::CANCEL,
    &keys::APPROVAL,
    &keys::REVERT,
    &keys::DISCARD,
    &keys::WORKTREE,
];

/// Whether help offers `binding` of `section` (in a replay, only what a replay acts on: not
/// cancelling, changing the work tree or quitting the live way; its own section says how to
/// leave).
fn offered(section: &Section, binding: &Binding, replay: bool) -> bool {
    if !replay || std::ptr::eq(section, &keys::REPLAY) {
        return true;
    }
    if NOT_IN_REPLAY.iter().any(|s| std::ptr::eq(*s, section)) {
        return false;
    }
    // Esc still closes a view in a replay; elsewhere it would ask to cancel.
    let views = std::ptr::eq(section, &keys::VIEWS);
    !binding.chords.iter().any(|(_, action)| match action {
        Action::Back => !views,
        Action::Commit
        | Action::RevertRound
        | Action::Discard
        | Action::Toggle
        | Action::Note
        | Action::SendBack
        | Action::Interrupt
        | Action::Quit => true,
        _ => false,
    })
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
    lines(theme, false)
}

/// The rows of help, a replay's (`replay`) or a run's.
pub fn lines(theme: Theme, replay: bool) -> Vec<Line<'static>> {
    let key_width = SECTIONS
        .iter()
        .flat_map(|section| section.bindings.iter())
        .map(|binding| str_width(binding.keys))
        .max()
        .unwrap_or(10);
    let mut out = Vec::new();
    for section in SECTIONS {
        let rows: Vec<&Binding> = section
            .bindings
            .iter()
            .filter(|b| offered(section, b, replay))
            .collect();
        if rows.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push(Line::raw(""));
        }
        out.push(Line::styled(section.title.to_string(), theme.bold()));
        for binding in rows {
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
        let rows = lines(Theme::plain(), self.replay).len();
        self.scroll = scroll::clamp(self.scroll, rows, body(area).height);
    }

    fn render(&self, ctx: &Ctx, area: Rect, buf: &mut Buffer) {
        let scroll = hints::said(&[&keys::VIEWS], &[(&[Action::Up, Action::Down], "scroll")]);
        let hint = Some(format!(" {scroll} · any other key closes "));
        let inner = modal(ctx.theme, " Keys ".to_string(), hint, area_of(area), buf);
        let lines: Vec<Line> = lines(ctx.theme, self.replay)
            .into_iter()
            .skip(self.scroll)
            .collect();
        draw_lines(&lines, inner, buf);
    }
}
