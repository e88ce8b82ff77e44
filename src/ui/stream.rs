//! The live stream of the current child: tokens, tool calls and results, round markers.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use super::draw::{compact, pane_block, put_line};
use super::model::{Pane, Phase};
use super::state::State;
use super::theme::Theme;
use super::transcript::LineKind;

pub fn style_of(theme: Theme, kind: LineKind) -> Style {
    match kind {
        LineKind::Text => theme.text(),
        LineKind::Round => theme.round_marker(),
        LineKind::ToolCall => theme.tool_call(),
        LineKind::ToolOk => theme.tool_ok(),
        LineKind::ToolFailed => theme.tool_failed(),
        LineKind::Notice => theme.warning(),
    }
}

pub fn render(state: &State, area: Rect, buf: &mut Buffer) {
    let theme = state.theme;
    let transcript = &state.transcript;
    let mut title = format!(" Stream · round {} ", state.round);
    if transcript.following() {
        title.push_str("· following ");
    } else {
        title.push_str(&format!(
            "· {} below, End follows ",
            compact(transcript.rows_below() as u64)
        ));
    }
    if transcript.dropped() > 0 {
        title.push_str(&format!("· {} dropped ", compact(transcript.dropped())));
    }
    let block = pane_block(theme, title, state.focus == Pane::Stream);
    let inner = block.inner(area);
    block.render(area, buf);
    if transcript.is_empty() {
        let waiting = match state.phase {
            Phase::Running => "waiting for the first round…",
            _ => "",
        };
        put_line(
            buf,
            inner,
            0,
            &Line::from(Span::styled(waiting, theme.dim())),
        );
        return;
    }
    for (i, row) in transcript
        .visible()
        .iter()
        .take(usize::from(inner.height))
        .enumerate()
    {
        put_line(
            buf,
            inner,
            i,
            &Line::styled(row.text, style_of(theme, row.kind)),
        );
    }
}
