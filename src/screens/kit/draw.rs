//! Drawing helpers every pane and modal shares: bordered blocks, modals, clipped lines,
//! compact counts and gauges, and footers of key hints. It knows the theme, the key table's
//! hints and ratatui, nothing of the state.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use super::theme::Theme;
use crate::screens::hints::Hint;

/// A bordered block with a title, highlighted when it has the focus.
pub(crate) fn pane_block(
    theme: Theme,
    title: String,
    focused: bool,
) -> ratatui::widgets::Block<'static> {
    use ratatui::text::Span;
    use ratatui::widgets::{Block, BorderType, Borders};
    let (border, border_type) = if focused {
        (theme.border_focused(), BorderType::Thick)
    } else {
        (theme.border(), BorderType::Plain)
    };
    Block::default()
        .borders(Borders::ALL)
        .border_type(border_type)
        .border_style(border)
        .title(Span::styled(title, theme.title()))
}

/// Clears `area` and draws a modal block there; returns its inside.
pub(crate) fn modal(
    theme: Theme,
    title: String,
    hint: Option<String>,
    area: Rect,
    buf: &mut Buffer,
) -> Rect {
    use ratatui::text::{Line, Span};
    use ratatui::widgets::{Block, BorderType, Borders, Clear};
    Clear.render(area, buf);
    let mut block = Block::default()
        .borders(Borders::ALL)
        .border_type(BorderType::Double)
        .border_style(theme.border_focused())
        .title(Span::styled(title, theme.title()));
    if let Some(hint) = hint {
        block = block.title_bottom(Line::from(Span::styled(hint, theme.dim())).right_aligned());
    }
    let inner = block.inner(area);
    block.render(area, buf);
    inner
}

/// Draws `line` on row `row` of `area`; nothing when the row is outside it.
pub(crate) fn put_line(buf: &mut Buffer, area: Rect, row: usize, line: &ratatui::text::Line<'_>) {
    let inside = area.intersection(buf.area);
    if row < usize::from(area.height) && area.width > 0 && !inside.is_empty() {
        let y = area.y + row as u16;
        if y < inside.bottom() {
            buf.set_line(area.x, y, line, area.width.min(inside.right() - area.x));
        }
    }
}

/// Draws `lines` into `area` from its top, one per row, clipped to the width.
pub(crate) fn draw_lines(lines: &[ratatui::text::Line<'_>], area: Rect, buf: &mut Buffer) {
    for (i, line) in lines.iter().take(usize::from(area.height)).enumerate() {
        put_line(buf, area, i, line);
    }
}

/// `1234` as `1.2k`, for compact counts.
pub fn compact(n: u64) -> String {
    if n < 1000 {
        n.to_string()
    } else if n < 1_000_000 {
        format!("{:.1}k", n as f64 / 1000.0)
    } else {
        format!("{:.1}M", n as f64 / 1_000_000.0)
    }
}

/// A text bar of `width` cells, `fraction` filled.
pub fn bar(theme: Theme, fraction: f64, width: usize) -> Vec<ratatui::text::Span<'static>> {
    use ratatui::text::Span;
    let fraction = fraction.clamp(0.0, 1.0);
    let filled = ((fraction * width as f64).round() as usize).min(width);
    vec![
        Span::styled("█".repeat(filled), theme.gauge_filled()),
        Span::styled("░".repeat(width - filled), theme.gauge_empty()),
    ]
}

/// The spans of one footer item: its keys in the key colour (a `/` between them plain), then
/// what they do.
fn hint_spans(theme: Theme, hint: &Hint) -> Vec<Span<'static>> {
    let mut spans = Vec::new();
    for (i, keys) in hint.keys.split('/').enumerate() {
        if i > 0 {
            spans.push(Span::raw("/"));
        }
        spans.push(Span::styled(keys.to_string(), theme.key()));
    }
    if !hint.what.is_empty() {
        spans.push(Span::raw(format!(" {}", hint.what)));
    }
    spans
}

/// Footer items on one line, `separator` between them.
pub fn hint_line(theme: Theme, hints: &[Hint], separator: &str) -> Vec<Span<'static>> {
    let mut spans = Vec::new();
    for (i, hint) in hints.iter().enumerate() {
        if i > 0 {
            spans.push(Span::raw(separator.to_string()));
        }
        spans.extend(hint_spans(theme, hint));
    }
    spans
}

/// A view's footer: its items three spaces apart, as many on a line as fit in `width`
/// (an item is never split).
pub fn footer_lines(theme: Theme, hints: &[Hint], width: usize) -> Vec<Line<'static>> {
    const GAP: &str = "   ";
    let mut lines: Vec<Vec<Span<'static>>> = Vec::new();
    let mut used = 0;
    for hint in hints {
        let spans = hint_spans(theme, hint);
        let item: usize = spans.iter().map(Span::width).sum();
        match lines.last_mut() {
            Some(line) if used + GAP.len() + item <= width => {
                line.push(Span::raw(GAP));
                line.extend(spans);
                used += GAP.len() + item;
            }
            _ => {
                lines.push(spans);
                used = item;
            }
        }
    }
    lines.into_iter().map(Line::from).collect()
}
