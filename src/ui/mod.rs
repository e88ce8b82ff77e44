//! Widgets: one file per pane or modal, each a pure render from `&State`.
//!
//! [`State`] holds everything the screens show and changes only through
//! [`State::update`]; `impl Widget for &State` draws the current screen and whatever is
//! open above it. Call [`State::sync`] with the frame's area before drawing, so that scroll
//! clamps and wrapped row counts are up to date; rendering never mutates.

pub mod approval;
pub mod cancel;
pub mod changes;
pub mod commit;
pub mod diff;
pub mod editor;
pub mod events;
pub mod header;
pub mod help;
pub mod keys;
pub mod layout;
pub mod mouse;
pub mod objective;
pub mod patch;
pub mod report_detail;
pub mod reports;
pub mod review;
pub mod runlog;
pub mod state;
pub mod status;
pub mod stream;
pub mod theme;
pub mod transcript;
pub mod wrap;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;

pub use state::{Effect, Msg, Phase, Setup, State};
pub use theme::Theme;

/// The smallest screen the panes are drawn on; below it a single line says so.
pub const MIN_WIDTH: u16 = 40;
pub const MIN_HEIGHT: u16 = 12;

impl Widget for &State {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
            let text = format!("ralph-tui needs at least {MIN_WIDTH}×{MIN_HEIGHT}; Ctrl-C cancels");
            put_line(buf, area, 0, &ratatui::text::Line::raw(text));
            return;
        }
        match self.phase {
            Phase::Editing => editor::render(self, area, buf),
            Phase::Running => {
                let areas = self.run_areas;
                header::render(self, areas.header, buf);
                objective::render(self, areas.objective, buf);
                stream::render(self, areas.stream, buf);
                reports::render(self, areas.reports, buf);
                changes::render(self, areas.changes, buf);
                status::render(self, areas.status, buf);
            }
            Phase::Finished => review::render(self, area, buf),
        }
        match &self.overlay {
            Some(state::Overlay::Help { scroll }) => help::render(self, *scroll, area, buf),
            Some(state::Overlay::ReportDetail { index, scroll }) => {
                report_detail::render(self, *index, *scroll, area, buf);
            }
            Some(state::Overlay::Diff(view)) => diff::render_view(self, view, area, buf),
            Some(state::Overlay::Commit(editor)) => commit::render(self, editor, area, buf),
            Some(state::Overlay::RunLog) => runlog::render(self, area, buf),
            Some(state::Overlay::ConfirmCancel) | None => {}
        }
        if self.phase == Phase::Running {
            if let Some(request) = self.approvals.front() {
                approval::render(self, request, area, buf);
            }
            if let Some(state::Overlay::ConfirmCancel) = self.overlay {
                cancel::render(self, area, buf);
            }
        }
    }
}

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
