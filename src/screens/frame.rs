//! The whole frame: the current screen, then the views open above it bottom to top, with a
//! waiting approval above them and the cancel question above everything.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Widget;

use super::editor;
use super::kit::draw::put_line;
use super::model::Phase;
use super::run::header;
use super::run::RunScreen;
use super::state::State;
use super::views::approval::ApprovalQuestion;
use super::views::overlay::Overlay;
use super::views::view::View;

/// The smallest screen the panes are drawn on; below it a single line says so.
pub const MIN_WIDTH: u16 = 40;
pub const MIN_HEIGHT: u16 = 12;

impl Widget for &State {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
            let text = format!("ralph-tui needs at least {MIN_WIDTH}×{MIN_HEIGHT}; Ctrl-C cancels");
            put_line(buf, area, 0, &Line::raw(text));
            return;
        }
        match self.phase {
            Phase::Editing => editor::render(self, area, buf),
            Phase::Running => RunScreen.render(self, area, buf),
            Phase::Finished => {
                if self.review.shown.is_some() {
                    header::render(self, self.review.areas.header, buf);
                }
                let shared = self.review_shared();
                self.review.render(&shared, self.notice.as_deref(), buf);
            }
        }
        let ctx = self.view_ctx();
        let is_question = |o: &&Overlay| matches!(o, Overlay::ConfirmCancel);
        for overlay in self.overlays.iter().filter(|o| !is_question(o)) {
            overlay.render(&ctx, area, buf);
        }
        if self.phase == Phase::Running {
            if let Some(request) = self.approvals.front() {
                let waiting = self.approvals.len().saturating_sub(1);
                ApprovalQuestion { request, waiting }.render(&ctx, area, buf);
            }
            if let Some(question) = self.overlays.iter().find(is_question) {
                question.render(&ctx, area, buf);
            }
        }
    }
}
