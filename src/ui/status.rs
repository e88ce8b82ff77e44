//! The status line: tokens per second, the context meter (with the report's reserve marked),
//! key hints or a notice.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::draw::{compact, put_line};
use super::model::Pane;
use super::state::State;
use super::wrap;
use crate::protocol::report::REPORT_RESERVE_TOKENS;

/// Cells of the context meter.
const METER_CELLS: usize = 8;

/// The context meter: a gauge whose cell where the report's reserve begins is drawn as a
/// marker (`┃` while free, highlighted when the context has reached it).
fn meter(state: &State, fraction: f64, size: u64) -> Vec<Span<'static>> {
    let theme = state.theme;
    let filled =
        ((fraction.clamp(0.0, 1.0) * METER_CELLS as f64).round() as usize).min(METER_CELLS);
    let reserve = u64::from(REPORT_RESERVE_TOKENS).min(size);
    let start = (size - reserve) as f64 / size as f64;
    let mark = ((start * METER_CELLS as f64).floor() as usize).min(METER_CELLS - 1);
    (0..METER_CELLS)
        .map(|cell| match (cell == mark, cell < filled) {
            (true, true) => Span::styled("█", theme.warning()),
            (true, false) => Span::styled("┃", theme.warning()),
            (false, true) => Span::styled("█", theme.gauge_filled()),
            (false, false) => Span::styled("░", theme.gauge_empty()),
        })
        .collect()
}

pub fn render(state: &State, area: Rect, buf: &mut Buffer) {
    let theme = state.theme;
    let size = u64::from(state.setup.ctx_size.max(1));
    let used = state.context_used();
    let mut spans = vec![
        Span::styled(format!(" {:.1} tok/s", state.tokens_per_s), theme.bold()),
        Span::styled(" │ ctx ", theme.dim()),
    ];
    spans.extend(meter(state, used as f64 / size as f64, size));
    spans.push(Span::raw(format!(" ~{}/{} ", compact(used), compact(size))));
    spans.push(Span::styled("│ ", theme.dim()));
    let used_width: usize = spans.iter().map(Span::width).sum();
    let room = usize::from(area.width).saturating_sub(used_width);
    let (text, style) = if let Some(notice) = &state.notice {
        (notice.clone(), theme.warning())
    } else if state.cancelling() {
        (
            "cancelling… the run stops at the next token".to_string(),
            theme.warning(),
        )
    } else {
        let enter = match state.focus {
            Pane::Reports => " · Enter report",
            Pane::Changes => " · Enter diff",
            _ => "",
        };
        (format!("? help · Tab{enter} · Esc cancel"), theme.key())
    };
    spans.push(Span::styled(wrap::truncate(&text, room), style));
    put_line(buf, area, 0, &Line::from(spans));
}
