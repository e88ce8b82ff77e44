//! Diffs: one file at a time, `+`/`-` lines coloured, hunk headers marked; as a full-screen
//! view over the run screen and as the review screen's diff pane.
//!
//! Lines are cut at the pane's width rather than wrapped, like a pager would, so a file's row
//! count is its line count and scrolling is exact.

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::view::{Ctx, Outcome, View};
use crate::screens::hints::{self, HintSpec};
use crate::screens::keys::{self, Action};
use crate::screens::kit::draw::{draw_lines, modal, put_line};
use crate::screens::kit::layout::popup;
use crate::screens::kit::scroll;
use crate::screens::kit::theme::Theme;
use crate::screens::kit::wrap;
use crate::screens::model::{DiffSource, Loadable};
use crate::workspace::{DiffModel, FileDiff, LineKind};

/// The full-screen diff view: which diff, which file, and its own scroll.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffView {
    pub source: DiffSource,
    pub diff: Loadable<DiffModel>,
    pub file: usize,
    pub scroll: usize,
    /// Paths to keep (the live view), empty for all.
    pub only: Vec<String>,
}

impl DiffView {
    /// Takes a loaded (or failed) diff when it is the one this view waits for.
    pub fn loaded(&mut self, source: DiffSource, loaded: &Loadable<DiffModel>) {
        if self.source != source {
            return;
        }
        self.diff = match loaded.clone() {
            Loadable::Ready(mut diff) if !self.only.is_empty() => {
                diff.files.retain(|f| self.only.contains(&f.path));
                Loadable::Ready(diff)
            }
            other => other,
        };
    }

    /// The mouse wheel: `step` rows up or down.
    pub fn wheel(&mut self, up: bool, step: usize) {
        self.scroll = if up {
            self.scroll.saturating_sub(step)
        } else {
            self.scroll + step
        };
    }
}

/// `+3 −1`, or `binary`.
pub fn counts(
    theme: Theme,
    insertions: usize,
    deletions: usize,
    binary: bool,
) -> Vec<Span<'static>> {
    if binary {
        return vec![Span::styled(" binary", theme.dim())];
    }
    vec![
        Span::styled(format!(" +{insertions}"), theme.added()),
        Span::styled(format!(" −{deletions}"), theme.removed()),
    ]
}

/// The mark a file changed outside the run carries.
pub const OUTSIDE_MARK: &str = " outside the run";

/// `+3 −1`, `binary`, then the outside-the-run mark when it applies.
pub fn file_tail(
    theme: Theme,
    insertions: usize,
    deletions: usize,
    binary: bool,
    outside_run: bool,
) -> Vec<Span<'static>> {
    let mut tail = counts(theme, insertions, deletions, binary);
    if outside_run {
        tail.push(Span::styled(OUTSIDE_MARK, theme.warning()));
    }
    tail
}

/// One file's row in a list of files: `head` (a mark and the status letter) in bold, the path
/// (sanitized, cut to the room left) and `tail` (the counts, and any outside-the-run mark).
pub fn file_row(
    theme: Theme,
    head: String,
    path: &str,
    tail: Vec<Span<'static>>,
    width: usize,
) -> Line<'static> {
    let tail_width: usize = tail.iter().map(Span::width).sum();
    let room = width.saturating_sub(head.len() + tail_width);
    let mut spans = vec![
        Span::styled(head, theme.bold()),
        Span::raw(crate::screens::kit::wrap::truncate(
            &crate::text::sanitize_line(path),
            room,
        )),
    ];
    spans.extend(tail);
    Line::from(spans)
}

/// The words beneath a gitlink's row in a list of files, as rows `width` columns wide: they
/// say plainly what it is, and what git does with it.
pub fn gitlink_note(width: usize) -> Vec<String> {
    const INDENT: &str = "    ";
    let text = "a separate git repository: its own config and hooks, which git will run \
                (`git status` here too, once it is committed)";
    wrap::rows(text, width.saturating_sub(INDENT.len()).max(1))
        .into_iter()
        .map(|row| format!("{INDENT}{row}"))
        .collect()
}

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
        format!(
            "{} {}",
            file.status.letter(),
            crate::text::sanitize_line(&file.path)
        ),
        theme.file_header(),
    )];
    if let Some(old) = &file.old_path {
        head.push(Span::styled(
            format!(" (from {})", crate::text::sanitize_line(old)),
            theme.dim(),
        ));
    }
    head.extend(counts(theme, file.insertions, file.deletions, file.binary));
    let mut lines = vec![Line::from(head)];
    if file.hunks.is_empty() {
        let why = if file.too_large {
            "too large to show: its content is not read, no text diff"
        } else if file.binary {
            "binary file: no text diff"
        } else if file.insertions + file.deletions > 0 {
            "lines not shown: the screen's line limit was reached; the run log has the patch"
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
    let inner = crate::screens::kit::layout::inner(view_area(area));
    Rect {
        y: inner.y + 1,
        height: inner.height.saturating_sub(1),
        ..inner
    }
}

/// The diff view's keys on its frame.
const DIFF_KEYS: &HintSpec = &[
    (&[Action::Previous, Action::Next], "file"),
    (
        &[Action::Up, Action::Down, Action::PageUp, Action::PageDown],
        "scroll",
    ),
    (&[Action::Close], "close"),
];

impl View for DiffView {
    /// Scrolls, moves to the previous or next file, or closes.
    fn handle_key(&mut self, key: &KeyEvent, ctx: &Ctx) -> Outcome {
        let Some(action) = keys::action(&[&keys::VIEWS], key) else {
            return Outcome::Stay;
        };
        match action {
            Action::Previous => {
                self.file = self.file.saturating_sub(1);
                self.scroll = 0;
            }
            Action::Next => {
                self.file += 1;
                self.scroll = 0;
            }
            Action::Close => return Outcome::Close,
            other => {
                if let Some(scroll) = scroll::scrolled(self.scroll, other, ctx.page()) {
                    self.scroll = scroll;
                }
            }
        }
        Outcome::Stay
    }

    fn sync(&mut self, area: Rect, _ctx: &Ctx) {
        let inner = view_body(area);
        if let Loadable::Ready(diff) = &self.diff {
            self.file = self.file.min(diff.files.len().saturating_sub(1));
            let rows = file_rows(diff.files.get(self.file), inner.width);
            self.scroll = scroll::clamp(self.scroll, rows, inner.height);
        }
    }

    fn render(&self, ctx: &Ctx, area: Rect, buf: &mut Buffer) {
        let view = self;
        let theme = ctx.theme;
        let what = match view.source {
            DiffSource::Round(r) => format!("round {r}"),
            DiffSource::Live(r) => {
                format!("round {r} (live: since the round started)")
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
        let hint = Some(format!(" {} ", hints::said(&[&keys::VIEWS], DIFF_KEYS)));
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
                format!("{mark}{}", crate::text::sanitize_line(&f.path))
            })
            .collect();
        let list = wrap::truncate(&files.join("  "), usize::from(inner.width));
        put_line(buf, inner, 0, &Line::styled(list, theme.dim()));
        render_file(theme, diff, view.file, view.scroll, body, buf);
    }
}
