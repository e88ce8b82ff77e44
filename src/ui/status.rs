//! The status line: tokens per second, the context meter, key hints or a notice.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::draw::{bar, compact, put_line};
use super::model::Pane;
use super::state::State;
use super::wrap;

pub fn render(state: &State, area: Rect, buf: &mut Buffer) {
    let theme = state.theme;
    let size = u64::from(state.setup.ctx_size.max(1));
    let used = state.context_used();
    let mut spans = vec![
        Span::styled(format!(" {:.1} tok/s", state.tokens_per_s), theme.bold()),
        Span::styled(" │ ctx ", theme.dim()),
    ];
    spans.extend(bar(theme, used as f64 / size as f64, 8));
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
