//! The run screen's keys, once no view, approval or question is above it: move the focus,
//! scroll or select in the focused pane, open what is selected (a tool call, a report, a
//! round's diff), follow the stream, show raw output or unfold it, and ask to cancel. Each
//! key is looked up in the run screen's section of the key table.

use crossterm::event::KeyEvent;

use crate::screens::keys::{self, Action};
use crate::screens::kit::scroll::moved;
use crate::screens::model::{ChangeRow, DiffSource, Effect, Loadable, Pane};
use crate::screens::state::State;
use crate::screens::transcript::LineKind;
use crate::screens::views::card::CardDetail;
use crate::screens::views::diff::DiffView;
use crate::screens::views::overlay::Overlay;
use crate::screens::views::report_detail::ReportDetail;

/// What Enter and `[` `]` say before the first tool call is whole.
const NO_CARD_YET: &str = "no tool call yet: a call becomes a card (Enter opens it, [ ] select) \
                           once the model has written it whole";

/// The run screen's keys.
pub fn on_key(state: &mut State, key: &KeyEvent) -> Vec<Effect> {
    match keys::action(&[&keys::RUN, &keys::EVERYWHERE], key) {
        Some(Action::Back) => state.ask_cancel(),
        Some(Action::Help) => state.open(Overlay::help()),
        Some(Action::RunLog) => state.open(Overlay::RunLog),
        Some(Action::Note) => state.open_note(),
        Some(Action::Follow) => state.transcript.follow(),
        Some(Action::FocusNext) => state.cursors.focus = state.cursors.focus.next(),
        Some(Action::FocusPrevious) => state.cursors.focus = state.cursors.focus.previous(),
        Some(Action::Open) => return open_selected(state),
        Some(Action::RawOutput) => {
            let on = !state.transcript.raw();
            state.transcript.set_raw(on);
        }
        Some(Action::Unfold) => {
            let on = !state.transcript.unfolded();
            state.transcript.set_unfolded(on);
            let folds = state
                .transcript
                .lines()
                .any(|(kind, _)| matches!(kind, LineKind::Reasoning | LineKind::Detail));
            if on && !folds {
                state.notice = Some("nothing is folded yet".into());
            }
        }
        Some(Action::PreviousCard | Action::NextCard) if state.cards.is_empty() => {
            state.notice = Some(NO_CARD_YET.into());
        }
        Some(Action::PreviousCard) => state.move_card_selection(false),
        Some(Action::NextCard) => state.move_card_selection(true),
        Some(action) => move_in_pane(state, action),
        None => {}
    }
    Vec::new()
}

fn move_in_pane(state: &mut State, action: Action) {
    let (delta, jump): (isize, Option<bool>) = match action {
        Action::Up => (-1, None),
        Action::Down => (1, None),
        Action::PageUp => (-(page_of(state, state.cursors.focus) as isize), None),
        Action::PageDown => (page_of(state, state.cursors.focus) as isize, None),
        Action::Top => (0, Some(false)),
        Action::Bottom => (0, Some(true)),
        _ => return,
    };
    match state.cursors.focus {
        Pane::Stream => match jump {
            Some(false) => state.transcript.scroll_to_top(),
            Some(true) => state.transcript.follow(),
            None if delta < 0 => state.transcript.scroll_up(delta.unsigned_abs()),
            None => state.transcript.scroll_down(delta.unsigned_abs()),
        },
        Pane::Reports => {
            let len = state.reports.len();
            state.cursors.report_sel = moved(state.cursors.report_sel, delta, jump, len);
        }
        Pane::Changes => {
            let len = state.change_rows().len();
            state.cursors.change_sel = moved(state.cursors.change_sel, delta, jump, len);
        }
        Pane::Objective => {
            state.cursors.objective_scroll = match jump {
                Some(false) => 0,
                Some(true) => usize::MAX / 2,
                None => state.cursors.objective_scroll.saturating_add_signed(delta),
            }
        }
    }
}

fn page_of(state: &State, pane: Pane) -> usize {
    let area = match pane {
        Pane::Stream => return state.transcript.page(),
        Pane::Reports => state.areas.run.reports,
        Pane::Changes => state.areas.run.changes,
        Pane::Objective => state.areas.run.objective,
    };
    usize::from(area.height.saturating_sub(3)).max(1)
}

fn open_selected(state: &mut State) -> Vec<Effect> {
    match state.cursors.focus {
        Pane::Stream => {
            match state.selected_card().cloned() {
                Some(card) => state.open(Overlay::Card(Box::new(CardDetail::new(card)))),
                None => state.notice = Some(NO_CARD_YET.into()),
            }
            Vec::new()
        }
        Pane::Reports if !state.reports.is_empty() => {
            state.open(Overlay::ReportDetail(ReportDetail::new(
                state.cursors.report_sel,
            )));
            Vec::new()
        }
        Pane::Changes => {
            let rows = state.change_rows();
            let Some(row) = rows.get(state.cursors.change_sel) else {
                return Vec::new();
            };
            let (index, file) = match *row {
                ChangeRow::Round(i) => (i, None),
                ChangeRow::File(i, f) => (i, Some(f)),
            };
            let Some(changes) = state.changes.get(index) else {
                return Vec::new();
            };
            let (source, only) = if changes.live {
                let paths = changes.files.iter().map(|f| f.path.clone()).collect();
                (DiffSource::Live(changes.round), paths)
            } else {
                (DiffSource::Round(changes.round), Vec::new())
            };
            state.open(Overlay::Diff(DiffView {
                source,
                diff: Loadable::Loading,
                file: file.unwrap_or(0),
                scroll: 0,
                only,
            }));
            vec![Effect::LoadDiff(source)]
        }
        _ => Vec::new(),
    }
}
