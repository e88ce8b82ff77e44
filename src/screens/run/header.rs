//! The header row: repository (and, for a worktree run, the branch the worker works on),
//! model, device, the round gauge, what the run is doing (loading the model, reading the
//! prompt with its tokens done of total and an estimate of the time left, generating, running
//! a command) and the elapsed time.

use std::time::Duration;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use crate::protocol::tool::RUN_COMMAND;
use crate::screens::kit::draw::{bar, put_line};
use crate::screens::kit::wrap;
use crate::screens::model::Phase;
use crate::screens::state::State;

/// `h:mm:ss` past an hour, else `mm:ss`.
pub fn clock(elapsed: std::time::Duration) -> String {
    let s = elapsed.as_secs();
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
    } else {
        format!("{:02}:{:02}", s / 60, s % 60)
    }
}

/// `12 s`, or `m:ss` from a minute on.
fn short(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 60 {
        format!("{}:{:02}", s / 60, s % 60)
    } else {
        format!("{s} s")
    }
}

/// What the run is doing, for the header: empty when there is nothing to say.
pub fn activity(state: &State) -> String {
    match (state.phase, state.cancelling()) {
        (Phase::Finished, _) => return "done".into(),
        (_, true) => return "cancelling".into(),
        (Phase::Editing, _) => return String::new(),
        (Phase::Running, false) => {}
    }
    if state.run_started.is_none() {
        return match state.meters.model_loading {
            Some(progress) => format!("loading model {:.0}%", progress * 100.0),
            None => "loading model".into(),
        };
    }
    // An approval asked is the person's turn: the command has not started.
    if !state.approvals.is_empty() {
        return "waiting for you".into();
    }
    if let Some(tool) = &state.meters.tool_running {
        return if tool == RUN_COMMAND {
            "running command".into()
        } else {
            "running tool".into()
        };
    }
    if state.meters.turn_streaming {
        return "generating".into();
    }
    if let Some(gauge) = &state.meters.prompt_gauge {
        let left = gauge
            .left_at(state.now)
            .map(|left| format!(" ~{}", short(left)))
            .unwrap_or_default();
        return format!("prompt {}/{}{left}", gauge.done, gauge.total);
    }
    if state.changes.iter().any(|c| c.live) {
        return "reading prompt".into();
    }
    String::new()
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
    let doing = activity(state);
    let phase = if doing.is_empty() {
        " ".to_string()
    } else {
        format!(" {doing} ")
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
