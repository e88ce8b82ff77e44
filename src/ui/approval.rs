//! The approval modal: a command waits for the person's yes or no.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::layout::popup;
use super::state::{Approval, State};
use super::{draw_lines, modal, wrap};

pub fn render(state: &State, request: &Approval, area: Rect, buf: &mut Buffer) {
    let theme = state.theme;
    let width = (area.width * 70 / 100).max(50).min(area.width);
    let text_width = usize::from(width.saturating_sub(4));
    let clean = wrap::sanitize(&request.command);
    let command = wrap::rows_multiline(&clean, text_width);
    let shown = command.len().min(6);
    let waiting = state.approvals.len().saturating_sub(1);
    let more = usize::from(command.len() > shown) + usize::from(waiting > 0);
    let height = ((shown + more) as u16 + 6).min(area.height);
    let rect = popup(area, 70, 0, 50, height);
    let title = format!(" Approval needed · round {} ", request.round);
    let inner = modal(theme, title, None, rect, buf);
    let mut lines = vec![Line::styled("The worker wants to run:", theme.text())];
    for row in command.iter().take(shown) {
        lines.push(Line::styled(format!("  {row}"), theme.warning()));
    }
    if command.len() > shown {
        lines.push(Line::styled(
            format!("  … {} more line(s)", command.len() - shown),
            theme.dim(),
        ));
    }
    lines.push(Line::styled(
        wrap::truncate(&format!("in {}", request.cwd), usize::from(inner.width)),
        theme.dim(),
    ));
    lines.push(Line::raw(""));
    lines.push(Line::from(vec![
        Span::styled("y", theme.key()),
        Span::raw(" run it   "),
        Span::styled("n", theme.key()),
        Span::raw(" refuse   "),
        Span::styled("a", theme.key()),
        Span::raw(" allow every command this run"),
    ]));
    if waiting > 0 {
        lines.push(Line::styled(
            format!("({waiting} more waiting)"),
            theme.dim(),
        ));
    }
    draw_lines(&lines, inner, buf);
}
