//! The status line: the current turn's generation and prompt rates, the round's elapsed time,
//! the context meter (the backend's count, with the report reserve marked when there is one),
//! the last check's verdict when the run has a check (at full width), key hints or a notice.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::protocol::event::CheckVerdict;
use crate::screens::hints::{self, Hint};
use crate::screens::keys::{self, Action};
use crate::screens::kit::draw::{bar, compact, put_line};
use crate::screens::kit::wrap;
use crate::screens::model::{Pane, PromptGauge};
use crate::screens::state::State;
use crate::screens::views::card::CardBody;

/// Below this width the status line uses its short form, so the key hints still fit.
const FULL_WIDTH: u16 = 110;

pub fn render(state: &State, area: Rect, buf: &mut Buffer) {
    let theme = state.theme;
    let short = area.width < FULL_WIDTH;
    let size = u64::from(state.setup.ctx_size.max(1));
    let (used, exact) = state.context_used();
    let mut spans = rates(state, short);
    spans.extend(round_time(state, short));
    spans.push(Span::styled(" │ ctx ", theme.dim()));
    spans.extend(meter(state, used, size, if short { 4 } else { 8 }));
    let estimate = if exact { "" } else { "~" };
    spans.push(Span::raw(format!(
        " {estimate}{}/{} ",
        compact(used),
        compact(size)
    )));
    spans.push(Span::styled("│ ", theme.dim()));
    let used_width: usize = spans.iter().map(Span::width).sum();
    let mut room = usize::from(area.width).saturating_sub(used_width);
    let (text, style) = said(state, room, short);
    // The last check's verdict, where it leaves the hints or the notice their whole width.
    if let Some(verdict) = last_check(state) {
        let said = format!("check {}", verdict.as_str());
        let width = wrap::str_width(&said) + 3;
        if room >= width + wrap::str_width(&text) {
            let look = if verdict.is_pass() {
                theme.tool_ok()
            } else {
                theme.tool_failed()
            };
            spans.push(Span::styled(said, look));
            spans.push(Span::styled(" │ ", theme.dim()));
            room -= width;
        }
    }
    spans.push(Span::styled(wrap::truncate(&text, room), style));
    put_line(buf, area, 0, &Line::from(spans));
}

/// The generation and prompt rates: the streaming turn's live rate, else the last turn's;
/// while a prompt is read, its rate so far. A short line drops the first `tok/s` and the
/// decimals of a rate over 100.
fn rates(state: &State, short: bool) -> Vec<Span<'static>> {
    let theme = state.theme;
    let gen = if state.meters.turn_streaming {
        Some(state.meters.tokens_per_s)
    } else {
        state.meters.gen_per_s
    };
    let prompt_rate = state
        .meters
        .prompt_gauge
        .as_ref()
        .and_then(PromptGauge::rate)
        .or(state.meters.prompt_per_s);
    let rate = |r: Option<f64>| match r {
        None => "–".to_string(),
        Some(r) if short && r >= 100.0 => format!("{r:.0}"),
        Some(r) => format!("{r:.1}"),
    };
    let unit = if short { "" } else { " tok/s" };
    vec![
        Span::styled(format!(" gen {}{unit}", rate(gen)), theme.bold()),
        Span::styled(
            format!(" · prompt {} tok/s", rate(prompt_rate)),
            theme.text(),
        ),
    ]
}

/// What the rest of the line says, in `room` columns: a notice, that the machine is busy,
/// that the run is cancelling, else the keys (a replay's own).
fn said(state: &State, room: usize, short: bool) -> (String, Style) {
    let theme = state.theme;
    if let Some(notice) = &state.notice {
        (notice.clone(), theme.warning())
    } else if let Some(busy) = busy_line(state) {
        (busy, theme.warning())
    } else if state.cancelling() {
        (
            "cancelling… the run stops at the next token".to_string(),
            theme.warning(),
        )
    } else if state.replay.is_some() {
        // A replay cannot cancel anything: its own keys instead.
        (hints::fit(&hints::replay_hints(), room), theme.key())
    } else {
        (
            hints::fit(&run_hints(state.cursors.focus, short), room),
            theme.key(),
        )
    }
}

/// How long a turn streams before its live rate is compared with the run's best.
const BUSY_AFTER: std::time::Duration = std::time::Duration::from_secs(3);
/// A live rate below the best divided by this says the machine is busy.
const BUSY_FACTOR: f64 = 5.0;

/// What the line says when generation has fallen far below what this model did earlier in
/// the run: llama.cpp's threads wait for each other, so another busy program on the machine
/// slows it many times over, and the person should know that it is the machine.
pub fn busy_line(state: &State) -> Option<String> {
    let meters = &state.meters;
    let best = meters.best_gen_per_s?;
    let since = meters.streaming_since?;
    if !meters.turn_streaming || state.now.saturating_sub(since) < BUSY_AFTER {
        return None;
    }
    let now = meters.tokens_per_s;
    (now * BUSY_FACTOR < best).then(|| {
        format!(
            "the machine is busy: generation at {now:.1} tok/s, {best:.0} earlier in this run \
             (another program is using the cores)"
        )
    })
}

/// The round's time so far, against its wall-clock limit when the run has one (in the
/// warning colour once four fifths of it are gone).
fn round_time(state: &State, short: bool) -> Option<Span<'static>> {
    let theme = state.theme;
    let secs = state.round_elapsed()?.as_secs();
    let label = if short { "" } else { "round " };
    let (limit, style) = match state.setup.round_timeout {
        Some(limit) => {
            let late = secs * 5 >= limit * 4;
            let style = if late { theme.warning() } else { theme.text() };
            (format!("/{}:{:02}", limit / 60, limit % 60), style)
        }
        None => (String::new(), theme.text()),
    };
    Some(Span::styled(
        format!(" │ {label}{}:{:02}{limit}", secs / 60, secs % 60),
        style,
    ))
}

/// The verdict of the newest run of the check among the cards kept.
fn last_check(state: &State) -> Option<CheckVerdict> {
    state.cards.iter().rev().find_map(|card| match &card.body {
        CardBody::Check(check) => Some(check.run.verdict),
        _ => None,
    })
}

/// The run screen's keys on its status line: help, moving focus and what Enter opens in the
/// focused pane, cancel, a note to the next round; only help and cancel when the line is
/// `short`.
fn run_hints(focus: Pane, short: bool) -> Vec<Hint> {
    let at = [&keys::RUN, &keys::EVERYWHERE];
    if short {
        return hints::of(
            &at,
            &[(&[Action::Help], "help"), (&[Action::Back], "cancel")],
            false,
        );
    }
    let enter = match focus {
        Pane::Reports => "report",
        Pane::Changes => "diff",
        Pane::Stream => "call",
        Pane::Objective => "",
    };
    let mut spec: Vec<(&'static [Action], &'static str)> =
        vec![(&[Action::Help], "help"), (&[Action::FocusNext], "")];
    if !enter.is_empty() {
        spec.push((&[Action::Open], enter));
    }
    spec.push((&[Action::Back], "cancel"));
    // Last, so a narrow line leaves it out before the others (help lists it).
    spec.push((&[Action::Note], "note"));
    hints::of(&at, &spec, false)
}

/// The context meter: the used fraction, and a `┊` in the cell where the report reserve
/// starts (a filled `█` in the warning colour once the context has reached that cell).
fn meter(state: &State, used: u64, size: u64, width: usize) -> Vec<Span<'static>> {
    let spans = bar(state.theme, used as f64 / size as f64, width);
    let Some(reserve) = state.meters.report_reserve else {
        return spans;
    };
    let at = ((u64::from(reserve) as f64 / size as f64) * width as f64).floor() as usize;
    let at = at.min(width - 1);
    let cells: Vec<(char, ratatui::style::Style)> = spans
        .iter()
        .flat_map(|s| s.content.chars().map(move |c| (c, s.style)))
        .collect();
    cells
        .into_iter()
        .enumerate()
        .map(|(i, (c, style))| match (i == at, c == '█') {
            (true, true) => Span::styled("█", state.theme.warning()),
            (true, false) => Span::styled("┊", state.theme.warning()),
            (false, _) => Span::styled(c.to_string(), style),
        })
        .collect()
}
