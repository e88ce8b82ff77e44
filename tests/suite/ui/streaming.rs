//! Streaming invariants: any split of the same text renders the same, resizing neither
//! duplicates nor loses text, memory stays bounded, nothing reaches the terminal raw.

use crossterm::event::KeyCode;
use proptest::prelude::*;
use ralph_tui::protocol::event::{Event, RunStatus};
use ralph_tui::screens::{State, Theme};
use ratatui::layout::Rect;

use super::fixtures::*;
use crate::suite::common::split_at_points;

fn render_tokens(pieces: &[String], width: u16, height: u16) -> String {
    let mut state = new_state(Theme::default());
    start_round(&mut state, 1);
    for piece in pieces {
        send(
            &mut state,
            Event::Token {
                round: 1,
                text: piece.clone(),
            },
        );
    }
    // The token count (and so the context meter) depends on how many pieces came; the
    // invariant is about the text, so compare everything above the status line.
    let text = screen(&mut state, width, height);
    let lines: Vec<&str> = text.lines().collect();
    lines[..lines.len() - 1].join("\n")
}

const STREAM_TEXT: &str = "Let me read slug.py.\n<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"slug.py\"}}</tool_call>\n\nThe function raises NotImplementedError; a supercalifragilisticexpialidocious-long-word follows, then tabs\tand ünïcödé 日本語 text.\r\nDone.";

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn any_split_of_the_stream_renders_the_same(cuts in proptest::collection::vec(0usize..400, 0..40)) {
        let whole = render_tokens(&[STREAM_TEXT.to_string()], 80, 24);
        let split = render_tokens(&split_at_points(STREAM_TEXT, &cuts), 80, 24);
        prop_assert_eq!(whole, split);
    }
}

#[test]
fn every_char_as_its_own_token_renders_the_same() {
    let pieces: Vec<String> = STREAM_TEXT.chars().map(String::from).collect();
    assert_eq!(
        render_tokens(&[STREAM_TEXT.to_string()], 120, 40),
        render_tokens(&pieces, 120, 40)
    );
}

#[test]
fn resizing_neither_duplicates_nor_loses_stream_text() {
    let mut state = new_state(Theme::default());
    start_round(&mut state, 1);
    let words: Vec<String> = (0..400).map(|i| format!("w{i:03}")).collect();
    let text = words.join(" ");
    tokens(&mut state, 1, &text);
    for (width, height) in [(80, 24), (50, 20), (120, 40), (80, 24), (200, 60)] {
        let _ = draw(&mut state, width, height);
        // Read the whole stream at this size: from the top, a page at a time.
        state.transcript.scroll_to_top();
        // Each row with whether it starts a line, so wrapped rows join back without a gap.
        let mut seen: Vec<(bool, String)> = Vec::new();
        loop {
            state.sync(Rect::new(0, 0, width, height));
            let rows: Vec<(bool, String)> = state
                .transcript
                .visible()
                .iter()
                .map(|r| (!r.continued, r.text.to_string()))
                .collect();
            if seen.is_empty() {
                seen.extend(rows);
            } else if let Some(last) = rows.last() {
                // Paging by one row: only the new bottom row is new.
                seen.push(last.clone());
            }
            if state.transcript.following() {
                break;
            }
            state.transcript.scroll_down(1);
        }
        let joined: String = seen
            .iter()
            .map(|(starts, text)| {
                if *starts {
                    format!("\n{text}")
                } else {
                    text.clone()
                }
            })
            .collect();
        let found: Vec<&str> = joined
            .split_whitespace()
            .filter(|w| w.starts_with('w'))
            .collect();
        assert_eq!(found, words, "at {width}x{height}");
        // Following shows the end of the text at the bottom of the pane, once.
        let screen_text = screen(&mut state, width, height);
        assert_eq!(screen_text.matches("w399").count(), 1, "{screen_text}");
    }
}

#[test]
fn stream_memory_stays_bounded() {
    let mut state = new_state(Theme::default());
    start_round(&mut state, 1);
    let piece = "token ".repeat(10);
    for i in 0..60_000 {
        send(
            &mut state,
            Event::Token {
                round: 1,
                text: piece.clone(),
            },
        );
        if i % 50 == 0 {
            send(
                &mut state,
                Event::Token {
                    round: 1,
                    text: "\n".into(),
                },
            );
        }
    }
    assert!(state.transcript.bytes() <= ralph_tui::screens::transcript::MAX_BYTES);
    assert!(state.transcript.len() <= ralph_tui::screens::transcript::MAX_LINES);
    assert!(state.transcript.dropped() > 0);
    let text = screen(&mut state, 80, 24);
    assert!(text.contains("dropped"), "{text}");
}

#[test]
fn terminal_control_characters_never_reach_the_screen() {
    let mut state = new_state(Theme::default());
    start_round(&mut state, 1);
    tokens(&mut state, 1, "evil \x1b[2J\x1b]0;title\x07 text\n");
    let buf = draw(&mut state, 80, 24);
    for cell in buf.content() {
        assert!(
            !cell.symbol().chars().any(|c| c.is_control()),
            "{:?}",
            cell.symbol()
        );
    }
}

#[test]
fn tiny_and_odd_sizes_do_not_panic() {
    for (w, h) in [(1, 1), (10, 5), (40, 12), (79, 23), (300, 100)] {
        let mut state = mid_run(Theme::default());
        let _ = draw(&mut state, w, h);
        press(&mut state, KeyCode::Char('?'));
        let _ = draw(&mut state, w, h);
        let mut review = finished(RunStatus::Complete, Some(verification(true)));
        let _ = draw(&mut review, w, h);
        press(&mut review, KeyCode::Enter);
        let _ = draw(&mut review, w, h);
        let mut editor = State::new(setup(), None, Theme::default());
        let _ = draw(&mut editor, w, h);
    }
}
