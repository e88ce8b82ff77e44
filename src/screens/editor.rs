//! The objective editor: shown when no objective was given, with the settings that will
//! apply, so the person knows what a run will do before starting it.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use super::hints::{self, HintSpec};
use super::keys::{self, Action};
use super::kit::draw::{draw_lines, hint_line, pane_block, put_line};
use super::kit::wrap;
use super::state::State;

/// The editor's keys on its footer (printable keys are text here: help is F1).
const EDITOR_KEYS: &HintSpec = &[
    (&[Action::Submit], "start"),
    (&[Action::Back], "quit"),
    (&[Action::Help], "help"),
];

pub fn render(state: &State, area: Rect, buf: &mut Buffer) {
    let theme = state.theme;
    let setup = &state.setup;
    let [title, settings, editor, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(7),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(area);
    let head = format!(" ralph-tui · new run in {}", setup.repo);
    put_line(
        buf,
        title,
        0,
        &Line::styled(
            wrap::truncate(&head, usize::from(title.width)),
            theme.title(),
        ),
    );

    let block = pane_block(theme, " Settings for this run ".to_string(), false);
    let inner = block.inner(settings);
    block.render(settings, buf);
    let width = usize::from(inner.width).saturating_sub(12);
    let row = |name: &str, value: String| {
        Line::from(vec![
            Span::styled(format!("{name:<12}"), theme.bold()),
            Span::raw(wrap::truncate(&value, width)),
        ])
    };
    let lines = vec![
        row("Repository", setup.workspace.clone()),
        row("Model", setup.model.clone()),
        row(
            "Rounds",
            format!("up to {}, each a fresh child", setup.max_rounds),
        ),
        row(
            "Commands",
            format!("sandbox {} · approval {}", setup.sandbox, setup.approval),
        ),
        row(
            "Verify",
            setup
                .verify
                .clone()
                .unwrap_or_else(|| "none (--verify CMD checks a completion claim)".into()),
        ),
    ];
    draw_lines(&lines, inner, buf);

    let block = pane_block(
        theme,
        " Objective: the worker gets exactly this, for the whole run ".to_string(),
        true,
    );
    let inner = block.inner(editor);
    block.render(editor, buf);
    Widget::render(&state.editor.text, inner, buf);

    let at = [&keys::EDITOR, &keys::EVERYWHERE];
    let mut spans = vec![Span::raw(" ")];
    spans.extend(hint_line(theme, &hints::of(&at, EDITOR_KEYS, true), " · "));
    spans.push(Span::raw(" "));
    if let Some(error) = &state.editor.error {
        let used: usize = spans.iter().map(Span::width).sum();
        let room = usize::from(footer.width).saturating_sub(used + 1);
        spans.push(Span::styled(
            format!(" {}", wrap::truncate(error, room)),
            theme.error(),
        ));
    }
    put_line(buf, footer, 0, &Line::from(spans));
}
