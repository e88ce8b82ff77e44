//! Diffs: one file at a time, `+`/`-` lines coloured, hunk headers marked; as a full-screen
//! view over the run screen and as the review screen's diff pane.
//!
//! Lines are cut at the pane's width rather than wrapped, like a pager would, so a file's row
//! count is its line count and scrolling is exact.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::layout::popup;
use super::state::{DiffSource, DiffView, Loadable, State};
use super::theme::Theme;
use super::{changes, draw_lines, modal, put_line, wrap};
use crate::workspace::{DiffModel, FileDiff, LineKind};

/// How many rows a file's diff takes.
pub fn file_rows(file: Option<&FileDiff>, _width: u16) -> usize {
    match file {
        None => 0,
        Some(file) if file.hunks.is_empty() => 2,
        Some(file) => 1 + file.hunks.iter().map(|h| 1 + h.lines.len()).sum::<usize>(),
    }
}

/// The rows of one file's diff.
pub fn file_lines(theme: Theme, file: &FileDiff) -> Vec<Line<'static>> {
    let mut head = vec![Span::styled(
        format!("{} {}", file.status.letter(), file.path),
        theme.file_header(),
    )];
    if let Some(old) = &file.old_path {
        head.push(Span::styled(format!(" (from {old})"), theme.dim()));
    }
    head.extend(changes::counts(
        theme,
        file.insertions,
        file.deletions,
        file.binary,
    ));
    let mut lines = vec![Line::from(head)];
    if file.hunks.is_empty() {
        let why = if file.binary {
            "binary file: no text diff"
        } else {
            "no content change (mode or rename only)"
        };
        lines.push(Line::styled(why, theme.dim()));
        return lines;
    }
    for hunk in &file.hunks {
        lines.push(Line::styled(wrap::sanitize(&hunk.header), theme.hunk()));
        for line in &hunk.lines {
            let (sign, style) = match line.kind {
                LineKind::Added => ('+', theme.added()),
                LineKind::Removed => ('-', theme.removed()),
                LineKind::Context => (' ', theme.text()),
            };
            lines.push(Line::styled(
                format!("{sign}{}", wrap::sanitize(&line.text)),
                style,
            ));
        }
    }
    lines
}

/// Draws file `index` of `diff` into `area`, from row `scroll`.
pub fn render_file(
    theme: Theme,
    diff: &DiffModel,
    index: usize,
    scroll: usize,
    area: Rect,
    buf: &mut Buffer,
) {
    let Some(file) = diff.files.get(index) else {
        let line = if diff.unseen.is_empty() {
            Line::styled("no changes", theme.dim())
        } else {
            Line::styled(
                "some directories could not be looked into; no change seen elsewhere",
                theme.warning(),
            )
        };
        put_line(buf, area, 0, &line);
        return;
    };
    let lines = file_lines(theme, file);
    let visible: Vec<Line> = lines.into_iter().skip(scroll).collect();
    draw_lines(&visible, area, buf);
}

/// Draws a not-yet-loaded or failed diff.
pub fn render_pending<T>(theme: Theme, loadable: &Loadable<T>, area: Rect, buf: &mut Buffer) {
    let line = match loadable {
        Loadable::Loading => Line::styled("loading the diff…", theme.dim()),
        Loadable::Failed(e) => Line::styled(format!("cannot show the diff: {e}"), theme.error()),
        Loadable::Ready(_) => return,
    };
    put_line(buf, area, 0, &line);
}

/// The full-screen view's rectangle.
fn view_area(area: Rect) -> Rect {
    popup(area, 96, 92, 40, 10)
}

/// The rows the diff body takes inside the view (below the file line).
pub fn view_body(area: Rect) -> Rect {
    let inner = super::layout::inner(view_area(area));
    Rect {
        y: inner.y + 1,
        height: inner.height.saturating_sub(1),
        ..inner
    }
}

pub fn render_view(state: &State, view: &DiffView, area: Rect, buf: &mut Buffer) {
    let theme = state.theme;
    let what = match view.source {
        DiffSource::Round(r) => format!("round {r}"),
        DiffSource::Live(r) => {
            format!("round {r} (live: since the run started, files this round touched)")
        }
        DiffSource::Review => "the whole run".to_string(),
    };
    let title = match &view.diff {
        Loadable::Ready(diff) if !diff.files.is_empty() => format!(
            " Diff · {what} · file {}/{} ",
            view.file.min(diff.files.len() - 1) + 1,
            diff.files.len()
        ),
        _ => format!(" Diff · {what} "),
    };
    let hint = Some(" ← → file · ↑↓ PgUp PgDn scroll · Esc close ".to_string());
    let inner = modal(theme, title, hint, view_area(area), buf);
    let body = view_body(area);
    let Loadable::Ready(diff) = &view.diff else {
        render_pending(theme, &view.diff, inner, buf);
        return;
    };
    let files: Vec<String> = diff
        .files
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let mark = if i == view.file { "▸" } else { " " };
            format!("{mark}{}", f.path)
        })
        .collect();
    let list = wrap::truncate(&files.join("  "), usize::from(inner.width));
    put_line(buf, inner, 0, &Line::styled(list, theme.dim()));
    render_file(theme, diff, view.file, view.scroll, body, buf);
}
