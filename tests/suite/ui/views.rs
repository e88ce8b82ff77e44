//! Views as components and the key table behind them: help shows every binding the handlers
//! dispatch on, no chord is bound twice in one place, views stack, and the ui modules import
//! each other without a cycle.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ralph_tui::protocol::event::RunStatus;
use ralph_tui::screens::keys::{self, SECTIONS};
use ralph_tui::screens::state::{Effect, Overlay, ReviewEffect};
use ralph_tui::screens::Theme;

use super::fixtures::*;
use crate::suite::imports::{self, find_cycle};

#[test]
fn help_shows_every_binding_of_the_key_table() {
    let mut state = mid_run(Theme::default());
    press(&mut state, KeyCode::Char('?'));
    assert!(matches!(state.overlay(), Some(Overlay::Help(_))));
    // Tall enough that help needs no scrolling.
    let text = screen(&mut state, 120, 100);
    let lines: Vec<&str> = text.lines().collect();
    for section in SECTIONS {
        assert!(
            text.contains(section.title),
            "{} missing:\n{text}",
            section.title
        );
        for binding in section.bindings {
            assert!(
                lines
                    .iter()
                    .any(|l| l.contains(binding.keys) && l.contains(binding.what)),
                "help lacks `{}  {}` of {}:\n{text}",
                binding.keys,
                binding.what,
                section.title
            );
        }
    }
}

#[test]
fn every_chord_of_a_section_means_what_its_row_says() {
    for section in SECTIONS {
        for binding in section.bindings {
            for (chord, action) in binding.chords {
                let modifiers = if chord.ctrl {
                    KeyModifiers::CONTROL
                } else {
                    KeyModifiers::NONE
                };
                let key = KeyEvent::new(chord.code, modifiers);
                assert_eq!(
                    keys::action(&[section], &key),
                    Some(*action),
                    "{:?} in {} is shadowed by another row",
                    chord.code,
                    section.title
                );
            }
        }
    }
}

#[test]
fn help_opens_above_the_commit_editor_and_closing_it_returns_to_the_message() {
    let mut state = finished(RunStatus::Complete, Some(verification(true)));
    press(&mut state, KeyCode::Char('c'));
    press(&mut state, KeyCode::Char('X'));
    press(&mut state, KeyCode::F(1));
    assert!(matches!(state.overlay(), Some(Overlay::Help(_))));
    assert_eq!(state.overlays.len(), 2, "help is above the editor");
    let text = screen(&mut state, 80, 24);
    assert!(text.contains(" Keys "), "{text}");
    press(&mut state, KeyCode::Esc);
    let Some(Overlay::Commit(editor)) = state.overlay() else {
        panic!("the editor is back");
    };
    // The cursor starts at the message's end, so the typed text is there.
    assert!(
        editor.lines().join("\n").ends_with('X'),
        "the typed text stays"
    );
    let effects = ctrl(&mut state, 's');
    assert!(matches!(&effects[..], [Effect::Review(ReviewEffect::Commit(m))] if m.ends_with('X')));
    assert!(state.overlay().is_none());
}

#[test]
fn the_cancel_question_opens_above_a_view_and_no_returns_to_it() {
    let mut state = mid_run(Theme::default());
    press(&mut state, KeyCode::Char('l'));
    ctrl(&mut state, 'c');
    assert!(matches!(state.overlay(), Some(Overlay::ConfirmCancel)));
    press(&mut state, KeyCode::Char('n'));
    assert!(matches!(state.overlay(), Some(Overlay::RunLog)));
    assert!(state.cancel_requested.is_none());
}

#[test]
fn the_help_scroll_is_clamped_in_sync_not_in_render() {
    let mut state = mid_run(Theme::default());
    press(&mut state, KeyCode::Char('?'));
    press(&mut state, KeyCode::End);
    screen(&mut state, 80, 24);
    let Some(Overlay::Help(help)) = state.overlay() else {
        panic!("help is open");
    };
    let rows = ralph_tui::screens::views::help::all_lines(Theme::plain()).len();
    let body = ralph_tui::screens::views::help::body(ratatui::layout::Rect::new(0, 0, 80, 24));
    assert_eq!(help.scroll, rows - usize::from(body.height));
}

#[test]
fn the_screens_modules_import_each_other_without_a_cycle() {
    let graph = imports::scan().file_graph(&["screens".to_string()]);
    assert!(
        graph["state"].contains("overlay") && graph["help"].contains("keys"),
        "the import scan sees nothing: {graph:?}"
    );
    assert_eq!(find_cycle(&graph), None, "{graph:#?}");
    for view in [
        "help",
        "report_detail",
        "diff",
        "commit",
        "cancel",
        "runlog",
        "keys",
    ] {
        assert!(
            !graph[view].contains("state"),
            "{view} reads the state: views are given what they show"
        );
    }
    // The check itself finds a cycle when there is one.
    let mut looped = graph.clone();
    looped.get_mut("keys").unwrap().insert("state".into());
    assert!(find_cycle(&looped).is_some());
}
