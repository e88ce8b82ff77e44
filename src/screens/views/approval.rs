//! The approval modal: a command waits for the person's yes or no. The waiting requests
//! are data in the state (a queue); the first is shown as a view that answers keys and
//! draws itself like the others, above every view but the cancel question.

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;

use crate::screens::hints;
use crate::screens::keys::{self, Action};
use crate::screens::kit::draw::{draw_lines, footer_lines, modal};
use crate::screens::kit::layout::popup;
use crate::screens::kit::wrap;
use crate::screens::model::Approval;
use crate::screens::views::view::{Ctx, Outcome, View};
use crate::tools::approval::ApprovalDecision;

/// The first waiting request, with how many more wait behind it. The queue itself is data
/// in the state; this view is made over its front for each key and each frame.
#[derive(Debug, Clone, Copy)]
pub struct ApprovalQuestion<'a> {
    pub request: &'a Approval,
    pub waiting: usize,
}

impl View for ApprovalQuestion<'_> {
    /// Yes, no or always answer the request; Esc asks whether to cancel the run (the request
    /// keeps waiting); other keys wait.
    fn handle_key(&mut self, key: &KeyEvent, _ctx: &Ctx) -> Outcome {
        match keys::action(&[&keys::APPROVAL, &keys::EVERYWHERE], key) {
            Some(Action::Approve) => Outcome::Answer(ApprovalDecision::Approve),
            Some(Action::Deny) => Outcome::Answer(ApprovalDecision::Deny),
            Some(Action::ApproveAll) => Outcome::Answer(ApprovalDecision::AlwaysThisRun),
            Some(Action::Back) => Outcome::AskCancel,
            _ => Outcome::Stay,
        }
    }

    fn render(&self, ctx: &Ctx, area: Rect, buf: &mut Buffer) {
        let (theme, request, waiting) = (ctx.theme, self.request, self.waiting);
        let width = (area.width * 70 / 100).max(50).min(area.width);
        let text_width = usize::from(width.saturating_sub(4));
        let clean = wrap::sanitize(&request.command);
        let command = wrap::rows_multiline(&clean, text_width);
        let shown = command.len().min(6);
        let more = usize::from(command.len() > shown) + usize::from(waiting > 0);
        let footer = footer_lines(theme, &hints::footer(&keys::APPROVAL), text_width + 2);
        let height = ((shown + more + footer.len()) as u16 + 5).min(area.height);
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
        lines.extend(footer);
        if waiting > 0 {
            lines.push(Line::styled(
                format!("({waiting} more waiting)"),
                theme.dim(),
            ));
        }
        draw_lines(&lines, inner, buf);
    }
}
