//! The approval modal: a command waits for the person's yes or no. The waiting requests
//! are data in the state (a queue); this module answers keys for the first and draws it.

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::draw::{draw_lines, modal};
use super::keys::{self, Action};
use super::layout::popup;
use super::model::Approval;
use super::theme::Theme;
use super::wrap;
use crate::tools::approval::ApprovalDecision;

/// What a key does to the waiting request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    Decide(ApprovalDecision),
    /// Esc: ask whether to cancel the run (the request keeps waiting).
    AskCancel,
    Ignore,
}

/// The reply `key` gives to the request on screen.
pub fn reply(key: &KeyEvent) -> Reply {
    match keys::action(&[&keys::APPROVAL, &keys::EVERYWHERE], key) {
        Some(Action::Approve) => Reply::Decide(ApprovalDecision::Approve),
        Some(Action::Deny) => Reply::Decide(ApprovalDecision::Deny),
        Some(Action::ApproveAll) => Reply::Decide(ApprovalDecision::AlwaysThisRun),
        Some(Action::Back) => Reply::AskCancel,
        _ => Reply::Ignore,
    }
}

/// Draws `request`, with a note when `waiting` more are queued behind it.
pub fn render(theme: Theme, request: &Approval, waiting: usize, area: Rect, buf: &mut Buffer) {
    let width = (area.width * 70 / 100).max(50).min(area.width);
    let text_width = usize::from(width.saturating_sub(4));
    let clean = wrap::sanitize(&request.command);
    let command = wrap::rows_multiline(&clean, text_width);
    let shown = command.len().min(6);
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
