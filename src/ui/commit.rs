//! The commit message editor, pre-filled from the worker's report.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::Widget;
use tui_textarea::TextArea;

use super::layout::popup;
use super::state::{Loadable, Review, State};
use super::{modal, put_line, wrap};

fn review_has_outside(review: &Review) -> bool {
    matches!(&review.diff, Loadable::Ready(d) if !d.outside_run().is_empty())
}

pub fn render(state: &State, editor: &TextArea<'static>, area: Rect, buf: &mut Buffer) {
    let theme = state.theme;
    let rect = popup(area, 85, 75, 50, 12);
    let hint = Some(" Ctrl-S commit · Esc back ".to_string());
    let inner = modal(
        theme,
        " Commit the run's changes ".to_string(),
        hint,
        rect,
        buf,
    );
    let [note, body] = Layout::vertical([Constraint::Length(2), Constraint::Min(1)]).areas(inner);
    let text = match &state.review {
        Some(review) if review_has_outside(review) => {
            "Commits exactly the run's own changes; files changed outside it stay out. Edit the message:"
        }
        _ => "Commits exactly what this run changed since it started. Edit the message:",
    };
    for (i, row) in wrap::rows(text, usize::from(note.width))
        .iter()
        .take(2)
        .enumerate()
    {
        put_line(buf, note, i, &Line::styled(*row, theme.dim()));
    }
    Widget::render(editor, body, buf);
}
