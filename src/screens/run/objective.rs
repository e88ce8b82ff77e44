//! The objective, verbatim and always visible: wrapped, scrollable when long.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Widget;

use crate::screens::kit::draw::{draw_lines, pane_block};
use crate::screens::kit::wrap;
use crate::screens::model::Pane;
use crate::screens::state::State;

pub fn render(state: &State, area: Rect, buf: &mut Buffer) {
    let width = usize::from(area.width.saturating_sub(2));
    let rows = wrap::rows_multiline(&state.objective, width);
    let height = usize::from(area.height.saturating_sub(2));
    let title = if rows.len() > height {
        let last = (state.cursors.objective_scroll + height).min(rows.len());
        format!(
            " Objective · lines {}–{} of {} ",
            state.cursors.objective_scroll + 1,
            last,
            rows.len()
        )
    } else {
        " Objective ".to_string()
    };
    let block = pane_block(state.theme, title, state.cursors.focus == Pane::Objective);
    let inner = block.inner(area);
    block.render(area, buf);
    let lines: Vec<Line> = rows
        .iter()
        .skip(state.cursors.objective_scroll)
        .map(|r| Line::styled(*r, state.theme.text()))
        .collect();
    draw_lines(&lines, inner, buf);
}
