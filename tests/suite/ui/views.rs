//! Views as components and the key table behind them: help shows every binding the handlers
//! dispatch on, no chord is bound twice in one place, views stack, and the ui modules import
//! each other without a cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ralph_tui::protocol::event::RunStatus;
use ralph_tui::ui::keys::{self, SECTIONS};
use ralph_tui::ui::state::{Effect, Overlay};
use ralph_tui::ui::Theme;

use super::fixtures::*;

#[test]
fn help_shows_every_binding_of_the_key_table() {
    let mut state = mid_run(Theme::default());
    press(&mut state, KeyCode::Char('?'));
    assert!(matches!(state.overlay(), Some(Overlay::Help(_))));
    // Tall enough that help needs no scrolling.
    let text = screen(&mut state, 120, 80);
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
    assert!(matches!(&effects[..], [Effect::Commit(m)] if m.ends_with('X')));
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
    let rows = ralph_tui::ui::help::all_lines(Theme::plain()).len();
    let body = ralph_tui::ui::help::body(ratatui::layout::Rect::new(0, 0, 80, 24));
    assert_eq!(help.scroll, rows - usize::from(body.height));
}

/// The modules of `src/ui` a ui file names (`super::x`, `crate::ui::x`, `use super::{x, y}`),
/// leaving out `mod.rs`, which only declares them.
fn ui_imports(dir: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let modules: BTreeSet<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .filter(|m| m != "mod")
        .collect();
    let mut graph = BTreeMap::new();
    for module in &modules {
        let source = std::fs::read_to_string(dir.join(format!("{module}.rs"))).unwrap();
        // Unit tests inside a file (`mod tests { use super::*; }`) are not the module's imports.
        let source = source.split("#[cfg(test)]").next().unwrap();
        let mut named = BTreeSet::new();
        for prefix in ["super::", "crate::ui::"] {
            for (at, _) in source.match_indices(prefix) {
                let rest = &source[at + prefix.len()..];
                let names: Vec<&str> = match rest.strip_prefix('{') {
                    Some(group) => group
                        .split('}')
                        .next()
                        .unwrap()
                        .split(',')
                        .map(|n| n.trim().split("::").next().unwrap().trim())
                        .collect(),
                    None => vec![rest
                        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .next()
                        .unwrap()],
                };
                for name in names {
                    if name != module && modules.contains(name) {
                        named.insert(name.to_string());
                    }
                }
            }
        }
        graph.insert(module.clone(), named);
    }
    graph
}

/// A cycle in `graph`, as the modules along it, if there is one.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        done: &mut BTreeSet<String>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|n| n == node) {
            let mut cycle = path[start..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, done, path) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut done, &mut Vec::new()))
}

#[test]
fn the_ui_modules_import_each_other_without_a_cycle() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/ui");
    let graph = ui_imports(&dir);
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
