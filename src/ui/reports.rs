//! The reports list: one row per report the worker filed, rejected ones and failed rounds
//! included.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use super::draw::{pane_block, put_line};
use super::model::{Pane, ReportEntry};
use super::report_detail::label;
use super::state::State;
use super::wrap;

fn summary(entry: &ReportEntry) -> &str {
    match entry {
        ReportEntry::Accepted { report, .. } => &report.summary,
        ReportEntry::Rejected { reason, .. } => reason,
        ReportEntry::Failed { error, .. } => error,
    }
}

pub fn render(state: &State, area: Rect, buf: &mut Buffer) {
    let theme = state.theme;
    let focused = state.focus == Pane::Reports;
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
        .skip(state.report_offset)
        .take(usize::from(inner.height))
        .enumerate()
    {
        let (word, style) = label(theme, entry);
        let head = format!("R{:<2} {word:<9}", entry.round());
        let rest = width.saturating_sub(wrap::str_width(&head));
        let flat = summary(entry).replace('\n', " ");
        let mut line = Line::from(vec![
            Span::styled(head, style),
            Span::raw(wrap::truncate(&flat, rest)),
        ]);
        if i == state.report_sel && focused {
            line = line.patch_style(theme.selected());
        }
        put_line(buf, inner, row, &line);
    }
}
