//! Where the run log is, and what is in it; any key closes it.

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::view::{Ctx, Outcome, View};
use crate::screens::kit::draw::{draw_lines, modal};
use crate::screens::kit::layout::popup;
use crate::screens::kit::wrap;

/// The run log note.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunLog;

impl View for RunLog {
    fn handle_key(&mut self, _key: &KeyEvent, _ctx: &Ctx) -> Outcome {
        Outcome::Close
    }

    fn render(&self, ctx: &Ctx, area: Rect, buf: &mut Buffer) {
        render(ctx, area, buf);
    }
}

fn render(ctx: &Ctx, area: Rect, buf: &mut Buffer) {
    let theme = ctx.theme;
    let rect = popup(area, 80, 0, 50, 12);
    let inner = modal(
        theme,
        " Run log ".to_string(),
        Some(" any key closes ".into()),
        rect,
        buf,
    );
    let width = usize::from(inner.width);
    let mut lines = vec![Line::styled("This run's log is in", theme.text())];
    for row in wrap::rows(ctx.run_dir, width.saturating_sub(2)) {
        lines.push(Line::styled(format!("  {row}"), theme.bold()));
    }
    lines.push(Line::raw(""));
    for (name, what) in [
        ("run.json", "settings, model, start and end, status"),
        ("events.jsonl", "every event of the run"),
        (
            "rounds/NN/",
            "each round's prompt, transcript, report, diff",
        ),
        ("ralph-tui.log", "the application's and llama.cpp's log"),
    ] {
        lines.push(Line::from(vec![
            Span::styled(format!("  {name:<14}"), theme.key()),
            Span::raw(wrap::truncate(what, width.saturating_sub(16))),
        ]));
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled(
        "The path is printed again when ralph-tui exits.",
        theme.dim(),
    ));
    draw_lines(&lines, inner, buf);
}
