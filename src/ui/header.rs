//! The header row: repository (and, for a worktree run, the branch the worker works on),
//! model, device, the round gauge and the elapsed time.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::draw::{bar, put_line};
use super::model::Phase;
use super::state::State;
use super::wrap;

/// `h:mm:ss` past an hour, else `mm:ss`.
pub fn clock(elapsed: std::time::Duration) -> String {
    let s = elapsed.as_secs();
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
    } else {
        format!("{:02}:{:02}", s / 60, s % 60)
    }
}

pub fn render(state: &State, area: Rect, buf: &mut Buffer) {
    let theme = state.theme;
    let setup = &state.setup;
    let max = setup.max_rounds.max(1);
    let mut right = vec![Span::styled(
        format!("Round {}/{} ", state.round, setup.max_rounds),
        theme.bold(),
    )];
    right.extend(bar(theme, f64::from(state.round) / f64::from(max), 10));
    let phase = match (state.phase, state.cancelling()) {
        (Phase::Finished, _) => " done ",
        (_, true) => " cancelling ",
        _ => " ",
    };
    right.push(Span::styled(phase, theme.dim()));
    right.push(Span::raw(format!("{} ", clock(state.elapsed()))));
    let right_width: usize = right.iter().map(Span::width).sum();
    let device = if setup.device.is_empty() {
        "loading…"
    } else {
        setup.device.as_str()
    };
    let room = usize::from(area.width).saturating_sub(right_width + 1);
    let brand = if area.width >= 100 {
        " ralph-tui │"
    } else {
        ""
    };
    // A worktree run says where the worker works: the run's branch, not the checkout.
    let repo = match &setup.worktree {
        Some(branch) => wrap::truncate(&format!("{} ⎇ {branch}", setup.repo), 48),
        None => wrap::truncate(&setup.repo, 20),
    };
    // The model name gives way first: the device matters more than the file name's tail.
    let fixed = wrap::str_width(brand) + wrap::str_width(&repo) + wrap::str_width(device) + 7;
    let model = wrap::truncate(&setup.model, room.saturating_sub(fixed).max(8));
    let left_text = format!("{brand} {repo} │ {model} │ {device}");
    // A replay says so first, with its speed, position and pause.
    let mark = state
        .replay
        .map(|mark| format!(" {} ", mark.label()))
        .unwrap_or_default();
    let left = wrap::truncate(&left_text, room.saturating_sub(wrap::str_width(&mark)));
    let pad = usize::from(area.width)
        .saturating_sub(wrap::str_width(&mark) + wrap::str_width(&left) + right_width);
    let mut spans = vec![
        Span::styled(mark, theme.warning()),
        Span::styled(left, theme.title()),
        Span::raw(" ".repeat(pad)),
    ];
    spans.extend(right);
    put_line(buf, area, 0, &Line::from(spans));
}
