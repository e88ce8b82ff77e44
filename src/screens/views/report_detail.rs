//! One report in full: status, summary, evidence, next steps, blocker; or why it was
//! rejected, or why the round failed. Always labelled as the worker's own account.

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::view::{Ctx, Outcome, View};
use crate::protocol::report::{Report, ReportStatus};
use crate::screens::hints::{self, HintSpec};
use crate::screens::keys::{self, Action};
use crate::screens::kit::draw::{draw_lines, modal};
use crate::screens::kit::layout::popup;
use crate::screens::kit::scroll;
use crate::screens::kit::theme::Theme;
use crate::screens::kit::wrap;
use crate::screens::model::ReportEntry;

/// The detail view of report `index` of the reports list; it owns its scroll.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportDetail {
    pub index: usize,
    pub scroll: usize,
}

impl ReportDetail {
    pub fn new(index: usize) -> Self {
        Self { index, scroll: 0 }
    }
}

/// The status word and its style for a report row.
pub fn label(theme: Theme, entry: &ReportEntry) -> (&'static str, Style) {
    match entry {
        ReportEntry::Accepted { report, .. } => {
            let style = match report.status {
                ReportStatus::Continue => theme.text(),
                ReportStatus::Complete => theme.good(),
                ReportStatus::Blocked => theme.warning(),
            };
            (report.status.as_str(), style)
        }
        ReportEntry::Rejected { .. } => ("rejected", theme.error()),
        ReportEntry::Failed { .. } => ("failed", theme.error()),
    }
}

fn area_of(area: Rect) -> Rect {
    popup(area, 80, 80, 50, 12)
}

/// The inside of the detail view.
pub fn body(area: Rect) -> Rect {
    crate::screens::kit::layout::inner(area_of(area))
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
                Span::styled(report.status.as_str().to_string(), label(theme, entry).1),
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

/// The report view's keys on its frame.
const REPORT_KEYS: &HintSpec = &[
    (&[Action::Previous, Action::Next], "report"),
    (&[Action::Up, Action::Down], "scroll"),
    (&[Action::Close], "close"),
];

impl View for ReportDetail {
    /// Scrolls, moves to the previous or next report, or closes (Enter too, as it opened).
    fn handle_key(&mut self, key: &KeyEvent, ctx: &Ctx) -> Outcome {
        let Some(action) = keys::action(&[&keys::VIEWS, &keys::RUN], key) else {
            return Outcome::Stay;
        };
        match action {
            Action::Previous => {
                self.index = self.index.saturating_sub(1);
                self.scroll = 0;
            }
            Action::Next => {
                self.index += 1;
                self.scroll = 0;
            }
            Action::Close | Action::Open => return Outcome::Close,
            other => {
                if let Some(scroll) = scroll::scrolled(self.scroll, other, ctx.page()) {
                    self.scroll = scroll;
                }
            }
        }
        Outcome::Stay
    }

    fn sync(&mut self, area: Rect, ctx: &Ctx) {
        self.index = self.index.min(ctx.reports.len().saturating_sub(1));
        let inner = body(area);
        let rows = ctx
            .reports
            .get(self.index)
            .map(|entry| lines(entry, inner.width).len())
            .unwrap_or(0);
        self.scroll = scroll::clamp(self.scroll, rows, inner.height);
    }

    fn render(&self, ctx: &Ctx, area: Rect, buf: &mut Buffer) {
        let theme = ctx.theme;
        let Some(entry) = ctx.reports.get(self.index) else {
            return;
        };
        let (word, _) = label(theme, entry);
        let title = format!(
            " Report · round {} · {word} · {}/{} ",
            entry.round(),
            self.index + 1,
            ctx.reports.len()
        );
        let hint = Some(format!(" {} ", hints::said(&[&keys::VIEWS], REPORT_KEYS)));
        let inner = modal(theme, title, hint, area_of(area), buf);
        let lines: Vec<Line> = lines_styled(theme, entry, inner.width)
            .into_iter()
            .skip(self.scroll)
            .collect();
        draw_lines(&lines, inner, buf);
    }
}
