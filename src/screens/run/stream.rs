//! The live stream of the current child: its text, tool calls as cards (header, result line,
//! the rest folded) and the engine's own (the observation, the check's runs), reasoning
//! folded to a line, round markers. The selected card, if the person picked one with `[` `]`,
//! is highlighted; Enter opens it.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use crate::screens::kit::draw::{compact, pane_block, put_line};
use crate::screens::kit::theme::Theme;
use crate::screens::model::{Pane, Phase};
use crate::screens::state::State;
use crate::screens::transcript::{LineKind, REASONING_HEAD};

pub fn style_of(theme: Theme, kind: LineKind) -> Style {
    match kind {
        LineKind::Text => theme.text(),
        LineKind::Round => theme.round_marker(),
        LineKind::ToolCall | LineKind::CallPending => theme.tool_call(),
        LineKind::ToolOk => theme.tool_ok(),
        LineKind::ToolFailed => theme.tool_failed(),
        LineKind::Notice => theme.warning(),
        LineKind::Raw | LineKind::ReasoningHead | LineKind::Reasoning | LineKind::Detail => {
            theme.dim()
        }
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
    if transcript.raw() {
        title.push_str("· raw output ");
    }
    if let Some(card) = state.cursors.card_sel.and_then(|_| state.selected_card()) {
        title.push_str(&format!("· card {} selected ", card.id));
    }
    if transcript.dropped() > 0 {
        title.push_str(&format!("· {} dropped ", compact(transcript.dropped())));
    }
    let block = pane_block(theme, title, state.cursors.focus == Pane::Stream);
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
    let selected = state.selected_card().map_or(0, |c| c.id);
    for (i, row) in transcript
        .visible()
        .iter()
        .take(usize::from(inner.height))
        .enumerate()
    {
        let text = if row.kind == LineKind::ReasoningHead && !row.continued {
            if transcript.unfolded() {
                "▾ thinking"
            } else {
                REASONING_HEAD
            }
        } else {
            row.text
        };
        let mut style = style_of(theme, row.kind);
        if row.card != 0 && row.card == selected && state.cursors.card_sel.is_some() {
            style = style.patch(theme.selected());
        }
        put_line(buf, inner, i, &Line::styled(text, style));
    }
}
