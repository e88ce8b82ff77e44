//! Footers and status lines come from the key table: a question's footer shows exactly the
//! rows of its section (so the revert question names `q`, which the table binds), and every
//! key a status line names is bound to something in that place.

use crossterm::event::KeyCode;
use ralph_tui::protocol::event::{Event, RunStatus};
use ralph_tui::screens::hints;
use ralph_tui::screens::keys::{self, Section};
use ralph_tui::screens::{State, Theme};

use super::fixtures::*;

/// The items of the footer on `screen` that starts with the section's first row, read from
/// the screen: inside the modal's frame (`║`), split where the footer puts three spaces,
/// from the line of the first row on, until a line holds no row of the section.
fn footer_on_screen(screen: &str, section: &Section) -> Vec<String> {
    let expected = rows(section);
    let inside = |line: &str| -> Vec<String> {
        let parts: Vec<&str> = line.split('║').collect();
        let frame = if parts.len() == 3 { parts[1] } else { "" };
        frame
            .trim()
            .split("   ")
            .map(str::trim)
            .filter(|item| !item.is_empty())
            .map(str::to_string)
            .collect()
    };
    let mut items = Vec::new();
    let lines = screen
        .lines()
        .map(inside)
        .skip_while(|found| !found.contains(&expected[0]));
    for found in lines {
        if !found.iter().any(|i| expected.contains(i)) {
            break;
        }
        items.extend(found);
    }
    items
}

/// A section's rows as its view's footer writes them.
fn rows(section: &Section) -> Vec<String> {
    section
        .bindings
        .iter()
        .map(|b| format!("{} {}", b.footer_keys(), b.hint))
        .collect()
}

fn assert_footer_is_the_section(state: &mut State, section: &Section) {
    for binding in section.bindings {
        assert!(
            !binding.hint.is_empty(),
            "{} of {} has no footer hint",
            binding.keys,
            section.title
        );
    }
    let text = screen(state, 80, 24);
    assert_eq!(
        footer_on_screen(&text, section),
        rows(section),
        "the footer of {} is not its table:\n{text}",
        section.title
    );
}

#[test]
fn the_cancel_and_approval_footers_are_their_sections() {
    let mut state = mid_run(Theme::default());
    send(
        &mut state,
        Event::ApprovalRequested {
            id: 1,
            round: 3,
            command: "make check".into(),
            cwd: ".".into(),
        },
    );
    assert_footer_is_the_section(&mut state, &keys::APPROVAL);
    let mut state = mid_run(Theme::default());
    press(&mut state, KeyCode::Esc);
    assert_footer_is_the_section(&mut state, &keys::CANCEL);
}

#[test]
fn the_revert_and_discard_footers_are_their_sections() {
    let mut state = finished(RunStatus::Complete, Some(verification(true)));
    press(&mut state, KeyCode::Char('u'));
    assert_footer_is_the_section(&mut state, &keys::REVERT);
    let text = screen(&mut state, 80, 24);
    assert!(
        text.contains("n/Esc/q back"),
        "q closes it, so it says so:\n{text}"
    );
    press(&mut state, KeyCode::Char('q'));
    press(&mut state, KeyCode::Char('d'));
    assert_footer_is_the_section(&mut state, &keys::DISCARD);
}

/// The `key what` items of a status line (` · ` between them) whose first word is a key.
fn named_keys(line: &str) -> Vec<String> {
    line.split(" · ")
        .filter_map(|item| item.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// Whether `name` is a chord bound in `sections`, as help and footers name chords.
fn bound(sections: &[&Section], name: &str) -> bool {
    sections
        .iter()
        .flat_map(|s| s.bindings.iter())
        .flat_map(|b| b.chords.iter())
        .any(|(chord, _)| chord.name() == name)
}

#[test]
fn every_key_a_status_line_names_is_bound_there() {
    let mut state = finished(RunStatus::Complete, Some(verification(true)));
    let text = screen(&mut state, 120, 40);
    let status = text.lines().last().unwrap().to_string();
    let names = named_keys(&status);
    assert_eq!(names, ["space", "c", "u", "d", "b", "q", "?"], "{status}");
    for name in &names {
        assert!(bound(&hints::AT_REVIEW, name), "{name} in `{status}`");
    }
    state.setup.worktree = Some("ralph/20260101-090000-1a2b".into());
    let text = screen(&mut state, 120, 40);
    let status = text.lines().last().unwrap().to_string();
    let names = named_keys(&status);
    assert_eq!(names, ["A", "c", "q", "X"], "{status}");
    for name in &names {
        assert!(bound(&hints::AT_REVIEW, name), "{name} in `{status}`");
    }

    let mut state = mid_run(Theme::default());
    let text = screen(&mut state, 120, 40);
    let status = text.lines().last().unwrap();
    let run = [&keys::RUN, &keys::EVERYWHERE];
    for name in named_keys(status.rsplit('│').next().unwrap()) {
        assert!(bound(&run, &name), "{name} in `{status}`");
    }

    let mut editor = State::new(setup(), None, Theme::default());
    let text = screen(&mut editor, 80, 24);
    let footer = text.lines().last().unwrap();
    let names = named_keys(footer.trim());
    assert_eq!(names, ["Ctrl-S", "Esc", "F1"], "{footer}");
    for name in &names {
        assert!(bound(&[&keys::EDITOR, &keys::EVERYWHERE], name), "{name}");
    }
}
