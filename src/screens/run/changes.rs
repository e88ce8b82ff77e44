//! The changes list: files changed in the current round (live) and in each finished round.
//! A file changed outside the run (by someone other than the worker) carries a mark of its
//! own, so it is never read as the worker's.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use crate::protocol::event::ChangedFile;
use crate::screens::kit::draw::{pane_block, put_line};
use crate::screens::kit::theme::Theme;
use crate::screens::model::{ChangeRow, Pane};
use crate::screens::state::State;
use crate::screens::views::diff::{counts, file_row, file_tail};

fn file_line(theme: Theme, file: &ChangedFile, width: usize) -> Line<'static> {
    let tail = file_tail(
        theme,
        file.insertions,
        file.deletions,
        file.binary,
        file.outside_run,
    );
    file_row(
        theme,
        format!("  {} ", file.status.letter()),
        &file.path,
        tail,
        width,
    )
}

pub fn render(state: &State, area: Rect, buf: &mut Buffer) {
    let theme = state.theme;
    let focused = state.cursors.focus == Pane::Changes;
    let block = pane_block(theme, " Changes ".to_string(), focused);
    let inner = block.inner(area);
    block.render(area, buf);
    let rows = state.change_rows();
    if rows.is_empty() {
        let line = Line::from(Span::styled("no round has started", theme.dim()));
        put_line(buf, inner, 0, &line);
        return;
    }
    let width = usize::from(inner.width);
    for (n, (i, row)) in rows
        .iter()
        .enumerate()
        .skip(state.cursors.change_offset)
        .take(usize::from(inner.height))
        .enumerate()
    {
        let mut line = match *row {
            ChangeRow::Round(r) => {
                let Some(changes) = state.changes.get(r) else {
                    continue;
                };
                let n = changes.files.len();
                let mut spans = vec![Span::styled(
                    format!("Round {}", changes.round),
                    theme.round_marker(),
                )];
                if changes.live {
                    spans.push(Span::styled(" · live", theme.warning()));
                }
                if changes.unknown {
                    spans.push(Span::styled(" · changes unknown", theme.warning()));
                } else if n == 0 && !changes.live {
                    spans.push(Span::styled(" · no changes", theme.dim()));
                } else {
                    spans.push(Span::styled(
                        format!(" · {n} file{}", if n == 1 { "" } else { "s" }),
                        theme.dim(),
                    ));
                }
                if !changes.live && !changes.unknown && n > 0 {
                    let ins = changes.files.iter().map(|f| f.insertions).sum();
                    let del = changes.files.iter().map(|f| f.deletions).sum();
                    spans.extend(counts(theme, ins, del, false));
                }
                Line::from(spans)
            }
            ChangeRow::File(r, f) => {
                let Some(file) = state.changes.get(r).and_then(|c| c.files.get(f)) else {
                    continue;
                };
                file_line(theme, file, width)
            }
        };
        if i == state.cursors.change_sel && focused {
            line = line.patch_style(theme.selected());
        }
        put_line(buf, inner, n, &line);
    }
}
