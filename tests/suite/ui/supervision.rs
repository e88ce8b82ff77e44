//! Supervision on the screens: the note editor mid-run (`n`), what it refuses, the note's
//! card, the review's send-back editor (`b`) with its rounds, a stalled run's review, and the
//! round's time against its limit (`--round-timeout`).

use std::time::Duration;

use crossterm::event::KeyCode;
use ralph_tui::protocol::event::{Event, NoteSource, RunStatus};
use ralph_tui::screens::model::{SentBack, WorktreeGone};
use ralph_tui::screens::state::{Effect, Overlay, Phase};
use ralph_tui::screens::{Msg, Theme};

use super::fixtures::*;

fn type_text(state: &mut ralph_tui::screens::State, text: &str) {
    for c in text.chars() {
        press(state, KeyCode::Char(c));
    }
}

#[test]
fn snapshot_note_editor_mid_run_and_what_it_refuses() {
    let mut state = mid_run(Theme::default());
    assert!(press(&mut state, KeyCode::Char('n')).is_empty());
    assert!(matches!(state.overlay(), Some(Overlay::Note(_))));
    insta::assert_snapshot!("note_editor_80x24", screen(&mut state, 80, 24));
    // Empty: not sent, the editor stays.
    assert!(ctrl(&mut state, 's').is_empty());
    assert_eq!(
        state.notice.as_deref(),
        Some("the note is empty: nothing was sent")
    );
    assert!(matches!(state.overlay(), Some(Overlay::Note(_))));
    // Over 4 KiB: refused with its size.
    state.update(Msg::Paste("z".repeat(5000)));
    assert!(screen(&mut state, 80, 24).contains("5000 bytes, over the 4096-byte limit"));
    assert!(ctrl(&mut state, 's').is_empty());
    assert!(state.notice.as_deref().unwrap().contains("5000 bytes"));
    press(&mut state, KeyCode::Esc);
    assert!(state.overlay().is_none(), "Esc closes it, sending nothing");

    press(&mut state, KeyCode::Char('n'));
    type_text(&mut state, "look at slug.py first");
    // Typed letters are the note's text, never the run screen's keys.
    assert!(matches!(state.overlay(), Some(Overlay::Note(_))));
    let effects = ctrl(&mut state, 's');
    assert_eq!(effects, vec![Effect::Note("look at slug.py first".into())]);
    assert!(state.overlay().is_none());
    let text = screen(&mut state, 80, 24);
    assert!(text.contains("note saved; round 4"), "{text}");
}

#[test]
fn snapshot_a_notes_card_sanitized_on_screen() {
    let mut state = mid_run(Theme::default());
    send(
        &mut state,
        Event::Note {
            round: 3,
            text: "stop editing the tests\u{1b}]0;owned\u{7}\nslug.py is the file".into(),
            written_at: "2026-01-01T09:03:04Z".into(),
            source: NoteSource::Tui,
        },
    );
    let buf = draw(&mut state, 80, 24);
    let text = buffer_text(&buf);
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}'),
        "{text}"
    );
    assert!(
        text.contains("✎ your note → round 3 (written 09:03:04 UTC"),
        "{text}"
    );
    insta::assert_snapshot!("note_card_80x24", filtered(&text));
    press(&mut state, KeyCode::Enter);
    let Some(Overlay::Card(card)) = state.overlay() else {
        panic!("Enter opens the note's card");
    };
    assert!(card.card.title().contains("Your note · round 3"));
    insta::assert_snapshot!("note_card_detail_80x24", screen(&mut state, 80, 24));
}

#[test]
fn snapshot_send_back_editor_at_the_review() {
    let mut state = finished(RunStatus::Complete, Some(verification(true)));
    press(&mut state, KeyCode::Char('b'));
    let text = screen(&mut state, 80, 24);
    assert!(text.contains("Send the run back to work"), "{text}");
    insta::assert_snapshot!("send_back_editor_80x24", text);
    press(&mut state, KeyCode::PageUp);
    press(&mut state, KeyCode::PageUp);
    press(&mut state, KeyCode::PageDown);
    let text = screen(&mut state, 80, 24);
    assert!(
        text.contains("Rounds added: 4") && text.contains("8 → 12"),
        "{text}"
    );
    assert!(
        ctrl(&mut state, 's').is_empty(),
        "an empty note is not sent"
    );
    type_text(&mut state, "the tests were never run: run them");
    assert_eq!(
        ctrl(&mut state, 's'),
        vec![Effect::SendBack {
            note: "the tests were never run: run them".into(),
            rounds: 4
        }]
    );
    // The run goes on: the screens are the run's again.
    state.update(Msg::SentBack(Ok(SentBack {
        run_dir: "/runs/next".into(),
        round: 4,
        max_rounds: 12,
    })));
    assert_eq!(state.phase, Phase::Running);
    assert!(state.review.shown.is_none());
    assert_eq!(state.setup.max_rounds, 12);
    let text = screen(&mut state, 80, 24);
    assert!(
        text.contains("sent back to work: round 4 goes on"),
        "{text}"
    );
}

#[test]
fn a_run_whose_worktree_is_gone_cannot_be_sent_back() {
    let mut state = finished(RunStatus::Complete, Some(verification(true)));
    state.setup.worktree = Some("ralph/20260101-090000-1a2b".into());
    state.review.worktree.gone = Some(WorktreeGone::Committed);
    assert!(press(&mut state, KeyCode::Char('b')).is_empty());
    assert!(state.overlay().is_none());
    let notice = state.notice.clone().unwrap();
    assert!(notice.contains("worktree was removed"), "{notice}");
    state.review.worktree.gone = Some(WorktreeGone::Removed);
    press(&mut state, KeyCode::Char('b'));
    assert!(state.overlay().is_none());
    assert!(state.notice.as_deref().unwrap().contains("were removed"));
    // A failed send-back leaves the review as it was, saying why.
    let mut state = finished(RunStatus::Complete, None);
    state.update(Msg::SentBack(Err("the run's worktree is gone".into())));
    assert_eq!(state.phase, Phase::Finished);
    assert!(state
        .notice
        .as_deref()
        .unwrap()
        .contains("worktree is gone"));
}

#[test]
fn snapshot_a_stalled_runs_review_says_why_and_exits_7() {
    use ralph_tui::screens::review::resume_command;
    let mut state = finished(RunStatus::Stalled, None);
    let text = screen(&mut state, 80, 24);
    assert!(text.contains("stalled after"), "{text}");
    assert!(text.contains("changed no file"), "{text}");
    insta::assert_snapshot!("review_stalled_80x24", text);
    let command =
        resume_command(&state.review_shared(), state.review.shown.as_ref().unwrap()).unwrap();
    assert!(command.ends_with("--note \"…\""), "{command}");
    assert_eq!(
        press(&mut state, KeyCode::Char('q')),
        vec![Effect::Quit(ralph_tui::error::ExitCode::Stalled)]
    );
    assert_eq!(ralph_tui::error::ExitCode::Stalled.code(), 7);
}

#[test]
fn the_status_line_shows_the_rounds_time_against_its_limit() {
    let mut state = mid_run(Theme::default());
    state.setup.round_timeout = Some(90);
    let started = state.now;
    state.update(Msg::Tick(started + Duration::from_secs(65)));
    let text = screen(&mut state, 100, 24);
    assert!(text.contains("/1:30"), "{text}");
    state.setup.round_timeout = None;
    let text = screen(&mut state, 100, 24);
    assert!(!text.contains("/1:30"), "{text}");
}
