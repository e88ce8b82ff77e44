//! Help: every key, by screen, from the same table the key handler is written beside.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::keys::KEYS;
use super::layout::popup;
use super::state::State;
use super::theme::Theme;
use super::{draw_lines, modal};

fn area_of(area: Rect) -> Rect {
    popup(area, 96, 92, 60, 16)
}

/// The inside of the help view.
pub fn body(area: Rect) -> Rect {
    super::layout::inner(area_of(area))
}

fn all_lines(theme: Theme) -> Vec<Line<'static>> {
    let key_width = KEYS
        .iter()
        .flat_map(|(_, keys)| keys.iter())
        .map(|(k, _)| super::wrap::str_width(k))
        .max()
        .unwrap_or(10);
    let mut out = Vec::new();
    for (i, (title, keys)) in KEYS.iter().enumerate() {
        if i > 0 {
            out.push(Line::raw(""));
        }
        out.push(Line::styled(title.to_string(), theme.bold()));
        for (key, what) in keys.iter() {
            let pad = key_width - super::wrap::str_width(key);
            out.push(Line::from(vec![
                Span::raw("  "),
                Span::styled(key.to_string(), theme.key()),
                Span::raw(" ".repeat(pad + 2)),
                Span::raw(what.to_string()),
            ]));
        }
    }
    out
}

pub fn line_count() -> usize {
    all_lines(Theme::plain()).len()
}

pub fn render(state: &State, scroll: usize, area: Rect, buf: &mut Buffer) {
    let theme = state.theme;
    let hint = Some(" ↑↓ scroll · any other key closes ".to_string());
    let inner = modal(theme, " Keys ".to_string(), hint, area_of(area), buf);
    let lines: Vec<Line> = all_lines(theme).into_iter().skip(scroll).collect();
    draw_lines(&lines, inner, buf);
}
