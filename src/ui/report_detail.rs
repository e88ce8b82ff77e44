//! One report in full: status, summary, evidence, next steps, blocker; or why it was
//! rejected, or why the round failed. Always labelled as the worker's own account.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::layout::popup;
use super::state::{ReportEntry, State};
use super::theme::Theme;
use super::{draw_lines, modal, reports, wrap};
use crate::protocol::report::Report;

fn area_of(area: Rect) -> Rect {
    popup(area, 80, 80, 50, 12)
}

/// The inside of the detail view.
pub fn body(area: Rect) -> Rect {
    super::layout::inner(area_of(area))
}

fn section(
    out: &mut Vec<Line<'static>>,
    theme: Theme,
    title: &str,
    items: &[String],
    width: u16,
    empty: &str,
) {
    out.push(Line::styled(title.to_string(), theme.bold()));
    if items.is_empty() {
        out.push(Line::styled(format!("  {empty}"), theme.dim()));
    }
    for item in items {
        let rows = wrap::rows_multiline(item, usize::from(width.saturating_sub(4)));
        for (i, row) in rows.into_iter().enumerate() {
            let lead = if i == 0 { "  • " } else { "    " };
            out.push(Line::raw(format!("{lead}{row}")));
        }
    }
    out.push(Line::raw(""));
}

fn text_block(out: &mut Vec<Line<'static>>, theme: Theme, title: &str, text: &str, width: u16) {
    out.push(Line::styled(title.to_string(), theme.bold()));
    for row in wrap::rows_multiline(text, usize::from(width.saturating_sub(2))) {
        out.push(Line::raw(format!("  {row}")));
    }
    out.push(Line::raw(""));
}

/// The lines of a report's fields.
pub fn report_lines(theme: Theme, report: &Report, width: u16) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    text_block(&mut out, theme, "Summary", &report.summary, width);
    section(
        &mut out,
        theme,
        "Evidence",
        &report.evidence,
        width,
        "(none)",
    );
    section(
        &mut out,
        theme,
        "Next steps",
        &report.next_steps,
        width,
        "(none)",
    );
    let blocker = if report.blocker.is_empty() {
        vec![]
    } else {
        vec![report.blocker.clone()]
    };
    section(&mut out, theme, "Blocker", &blocker, width, "(none)");
    out
}

/// Every line of the detail view of `entry` at `width` columns.
pub fn lines(entry: &ReportEntry, width: u16) -> Vec<Line<'static>> {
    lines_styled(Theme::plain(), entry, width)
}

fn lines_styled(theme: Theme, entry: &ReportEntry, width: u16) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    match entry {
        ReportEntry::Accepted { report, .. } => {
            out.push(Line::from(vec![
                Span::styled("Status: ", theme.bold()),
                Span::styled(
                    report.status.as_str().to_string(),
                    reports::label(theme, entry).1,
                ),
                Span::styled("  (the worker's own report, not verified)", theme.dim()),
            ]));
            out.push(Line::raw(""));
            out.extend(report_lines(theme, report, width));
        }
        ReportEntry::Rejected { reason, .. } => {
            let intro = "This report was rejected and not carried over; the child was told why.";
            for row in wrap::rows(intro, usize::from(width)) {
                out.push(Line::styled(row.to_string(), theme.error()));
            }
            out.push(Line::raw(""));
            text_block(&mut out, theme, "Reason", reason, width);
        }
        ReportEntry::Failed { error, .. } => {
            let intro = "The round ended without a valid report.";
            for row in wrap::rows(intro, usize::from(width)) {
                out.push(Line::styled(row.to_string(), theme.error()));
            }
            out.push(Line::raw(""));
            text_block(&mut out, theme, "Error", error, width);
        }
    }
    out
}

pub fn render(state: &State, index: usize, scroll: usize, area: Rect, buf: &mut Buffer) {
    let theme = state.theme;
    let Some(entry) = state.reports.get(index) else {
        return;
    };
    let (word, _) = reports::label(theme, entry);
    let title = format!(
        " Report · round {} · {word} · {}/{} ",
        entry.round(),
        index + 1,
        state.reports.len()
    );
    let hint = Some(" ← → report · ↑↓ scroll · Esc close ".to_string());
    let inner = modal(theme, title, hint, area_of(area), buf);
    let lines: Vec<Line> = lines_styled(theme, entry, inner.width)
        .into_iter()
        .skip(scroll)
        .collect();
    draw_lines(&lines, inner, buf);
}
