//! The reports list: one row per report the worker filed, rejected ones and failed rounds
//! included; a round that needed a wrap-up turn says so, and why, on its closing row.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use crate::screens::kit::draw::{pane_block, put_line};
use crate::screens::kit::wrap;
use crate::screens::model::{Pane, ReportEntry};
use crate::screens::state::State;
use crate::screens::views::report_detail::label;

fn summary(entry: &ReportEntry) -> &str {
    match entry {
        ReportEntry::Accepted { report, .. } => &report.summary,
        ReportEntry::Rejected { reason, .. } => reason,
        ReportEntry::Failed { error, .. } => error,
    }
}

pub fn render(state: &State, area: Rect, buf: &mut Buffer) {
    let theme = state.theme;
    let focused = state.cursors.focus == Pane::Reports;
    let block = pane_block(
        theme,
        format!(" Reports ({}) ", state.reports.len()),
        focused,
    );
    let inner = block.inner(area);
    block.render(area, buf);
    if state.reports.is_empty() {
        let line = Line::from(Span::styled("no report yet", theme.dim()));
        put_line(buf, inner, 0, &line);
        return;
    }
    let width = usize::from(inner.width);
    for (row, (i, entry)) in state
        .reports
        .iter()
        .enumerate()
        .skip(state.cursors.report_offset)
        .take(usize::from(inner.height))
        .enumerate()
    {
        let (word, style) = label(theme, entry);
        let head = format!("R{:<2} {word:<9}", entry.round());
        let rest = width.saturating_sub(wrap::str_width(&head));
        let mut flat = summary(entry).replace('\n', " ");
        // The round's closing row says when the round had to be wrapped up.
        let closes_round = !matches!(entry, ReportEntry::Rejected { .. });
        if let Some(reason) = state.wrap_up_of(entry.round()).filter(|_| closes_round) {
            flat = format!("[wrap-up: {}] {flat}", reason.as_str());
        }
        let mut line = Line::from(vec![
            Span::styled(head, style),
            Span::raw(wrap::truncate(&flat, rest)),
        ]);
        if i == state.cursors.report_sel && focused {
            line = line.patch_style(theme.selected());
        }
        put_line(buf, inner, row, &line);
    }
}
