//! The engine's own cards in the stream: a round's observation (one line saying what the
//! child was given, unfolding to exactly that text) and the check's runs (command, verdict,
//! exit code and time, unfolding to the output; a claim the check refused says so), folded,
//! unfolded and opened, at 80×24 and 120×40. A replay shows them the same way.

use crossterm::event::KeyCode;
use ralph_tui::protocol::event::{CheckPoint, CheckRun, CheckVerdict, Event, ObservedFile, Shown};
use ralph_tui::screens::state::Overlay;
use ralph_tui::screens::views::card::CardBody;
use ralph_tui::screens::{State, Theme};
use serde_json::json;

use super::fixtures::*;

const CHECK_OUTPUT: &str = "F
======================================================================
FAIL: test_words (test_slug.SlugTest.test_words)
----------------------------------------------------------------------
AssertionError: 'A b' != 'a-b'

Ran 1 test in 0.001s

FAILED (failures=1)
";

/// What the child was given after the fixed prompt, as the engine writes it; an escape
/// sequence in a file's text must not reach the terminal.
const OBSERVED: &str = "Observation of the workspace now, gathered by ralph-tui before this round (the files as they are, not a report):

Files:
AGENTS.md (40 lines)
slug.py (2 lines)
test_slug.py (7 lines)

The check `python3 -m unittest` (run by ralph-tui at this round's start): FAILED (exit code 1)
```
FAIL: test_words (test_slug.SlugTest.test_words)
AssertionError: 'A b' != 'a-b'
```
The objective is not met while this check fails: fix what it reports, then run it again.

File texts (current):

slug.py
```
def slugify(text):
\treturn text \x1b[31m# red
```
";

fn check_run(verdict: CheckVerdict, exit_code: Option<i32>, output: &str) -> CheckRun {
    CheckRun {
        command: "python3 -m unittest".into(),
        exit_code,
        verdict,
        note: String::new(),
        wall_ms: 3_240,
        output: output.into(),
    }
}

/// The events a round with `--check` and `--observe on` opens with.
fn opening(round: u32) -> Vec<Event> {
    let file = |path: &str, bytes, lines, shown| ObservedFile {
        path: path.into(),
        bytes,
        lines,
        shown,
    };
    vec![
        Event::CheckFinished {
            round,
            at: CheckPoint::RoundStart,
            check: check_run(CheckVerdict::Failed, Some(1), CHECK_OUTPUT),
        },
        Event::RoundObserved {
            round,
            files_listed: 3,
            files_unlisted: 0,
            shown: vec![
                file("slug.py", 42, 2, Shown::Whole),
                file("test_slug.py", 180, 7, Shown::Whole),
                file("AGENTS.md", 1900, 40, Shown::Head),
            ],
            check: Some(CheckVerdict::Failed),
            text: OBSERVED.into(),
        },
    ]
}

fn observed_round() -> State {
    let mut state = new_state(Theme::default());
    start_round(&mut state, 1);
    for event in opening(1) {
        send(&mut state, event);
    }
    state
}

/// A round whose `complete` claim the check refused.
fn refused_claim() -> State {
    let mut state = new_state(Theme::default());
    start_round(&mut state, 1);
    tokens(&mut state, 1, "The tests pass now.\n");
    let arguments = json!({"status": "complete", "summary": "slugify works.",
                           "evidence": ["python3 -m unittest: OK"], "next_steps": [], "blocker": ""});
    send(
        &mut state,
        Event::ToolCall {
            round: 1,
            name: "ralph_report".into(),
            arguments,
        },
    );
    send(
        &mut state,
        Event::CheckFinished {
            round: 1,
            at: CheckPoint::Claim,
            check: check_run(CheckVerdict::Failed, Some(1), CHECK_OUTPUT),
        },
    );
    send(
        &mut state,
        Event::ReportRejected {
            round: 1,
            reason: format!(
                "the repository's check `python3 -m unittest` does not pass (failed, exit code 1), so the objective is not met. Its output:\n{}\nFix what it reports and run it again, or report status \"continue\" with next_steps",
                CHECK_OUTPUT.trim_end()
            ),
        },
    );
    state
}

/// Every line the stream keeps, folded or not.
fn stream_lines(state: &State) -> Vec<String> {
    state
        .transcript
        .lines()
        .map(|(_, text)| text.to_string())
        .collect()
}

fn has_line(state: &State, line: &str) -> bool {
    let lines = stream_lines(state);
    assert!(lines.iter().any(|l| l == line), "{line:?} in {lines:#?}");
    true
}

/// The screen folded, unfolded (`e`), and the card opened (Enter).
fn views(state: &mut State, width: u16, height: u16) -> String {
    let mut out = String::new();
    let mut shot = |title: &str, state: &mut State| {
        let text = screen(state, width, height);
        assert!(
            !text.contains('\u{1b}'),
            "no escape reaches the screen: {text}"
        );
        out.push_str(&format!("── {title} ──\n{text}\n"));
    };
    shot("folded", state);
    press(state, KeyCode::Char('e'));
    shot("unfolded", state);
    press(state, KeyCode::Char('e'));
    press(state, KeyCode::Enter);
    assert!(matches!(state.overlay(), Some(Overlay::Card(_))));
    shot("opened", state);
    press(state, KeyCode::Esc);
    assert!(state.overlay().is_none());
    out
}

#[test]
fn snapshot_the_observation_card() {
    for (width, height) in [(80, 24), (120, 40)] {
        let mut state = observed_round();
        has_line(
            &state,
            "◇ observed: 3 files listed, 3 shown (2 whole, 1 head) · check failed (+21 lines)",
        );
        insta::assert_snapshot!(
            format!("observation_{width}x{height}"),
            views(&mut state, width, height)
        );
    }
}

#[test]
fn the_observation_unfolds_to_exactly_the_text_given() {
    let mut state = observed_round();
    let lines = stream_lines(&state);
    let head = lines
        .iter()
        .position(|l| l.starts_with("◇ observed"))
        .unwrap();
    let given: Vec<String> = ralph_tui::text::sanitize(OBSERVED.trim_end())
        .split('\n')
        .map(|l| format!("  {l}"))
        .collect();
    assert_eq!(
        lines[head + 1..],
        given[..],
        "the folded part is the text given"
    );
    press(&mut state, KeyCode::Enter);
    let Some(Overlay::Card(view)) = state.overlay() else {
        panic!("no card view");
    };
    match &view.card.body {
        CardBody::Observed(seen) => assert_eq!(seen.text, OBSERVED),
        other => panic!("{other:?}"),
    }
}

#[test]
fn snapshot_the_check_at_the_rounds_start() {
    for (width, height) in [(80, 24), (120, 40)] {
        let mut state = observed_round();
        // The check's card is the one before the observation.
        press(&mut state, KeyCode::Char('['));
        has_line(
            &state,
            "✗ check `python3 -m unittest` failed (exit 1, 3.2 s) (+9 lines)",
        );
        insta::assert_snapshot!(
            format!("check_round_start_{width}x{height}"),
            views(&mut state, width, height)
        );
    }
}

#[test]
fn snapshot_a_claim_the_check_refused() {
    for (width, height) in [(80, 24), (120, 40)] {
        let mut state = refused_claim();
        has_line(
            &state,
            "✗ claim refused by the check: `python3 -m unittest` failed (exit 1, 3.2 s) (+9 lines)",
        );
        assert!(
            !stream_lines(&state).concat().contains("ralph_report"),
            "the report call is the report's line, not a card"
        );
        has_line(
            &state,
            "✗ report rejected: the check refused the claim (its card above has the output)",
        );
        let lines = stream_lines(&state);
        assert_eq!(
            lines
                .iter()
                .filter(|l| l.contains("FAILED (failures=1)"))
                .count(),
            1,
            "the output once, in the check's card: {lines:#?}"
        );
        insta::assert_snapshot!(
            format!("check_claim_refused_{width}x{height}"),
            views(&mut state, width, height)
        );
    }
}

#[test]
fn every_verdict_reads_in_words() {
    let cases = [
        (
            CheckVerdict::Passed,
            Some(0),
            "✓ check `python3 -m unittest` passed (exit 0, 3.2 s)",
        ),
        (
            CheckVerdict::NoTests,
            Some(0),
            "✗ check `python3 -m unittest` ran no test (exit 0, 3.2 s) — unittest ran 0 tests",
        ),
        (
            CheckVerdict::TimedOut,
            None,
            "✗ check `python3 -m unittest` timed out (no exit code, 3.2 s) — unittest ran 0 tests",
        ),
        (
            CheckVerdict::NotRun,
            None,
            "✗ check `python3 -m unittest` not run (no exit code, 3.2 s) — unittest ran 0 tests",
        ),
    ];
    for (verdict, exit_code, line) in cases {
        let mut state = new_state(Theme::default());
        start_round(&mut state, 1);
        let mut check = check_run(verdict, exit_code, "");
        if !verdict.is_pass() {
            check.note = "unittest ran 0 tests".into();
        }
        send(
            &mut state,
            Event::CheckFinished {
                round: 1,
                at: CheckPoint::RoundStart,
                check,
            },
        );
        has_line(&state, line);
    }
}

#[test]
fn a_check_after_a_change_is_a_card_that_says_when_it_ran() {
    let mut state = new_state(Theme::default());
    start_round(&mut state, 1);
    send(
        &mut state,
        Event::CheckFinished {
            round: 1,
            at: CheckPoint::Change,
            check: check_run(CheckVerdict::Failed, Some(1), CHECK_OUTPUT),
        },
    );
    let lines = stream_lines(&state);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("✗ check after the change: `python3 -m unittest` failed")),
        "{lines:#?}"
    );
    press(&mut state, KeyCode::Enter);
    assert!(matches!(state.overlay(), Some(Overlay::Card(_))));
    let text = screen(&mut state, 120, 40);
    assert!(text.contains("Check · round 1 · after a change"), "{text}");
    assert!(
        text.contains("after the worker's call changed files"),
        "{text}"
    );
}

#[test]
fn headless_says_each_check_on_one_sanitized_line() {
    use ralph_tui::headless::check_line;
    let mut check = check_run(CheckVerdict::Failed, Some(1), CHECK_OUTPUT);
    check.command = "pytest".into();
    assert_eq!(
        check_line(2, CheckPoint::RoundStart, &check),
        "round 2: check `pytest` failed (exit 1, 3.2 s)"
    );
    assert_eq!(
        check_line(2, CheckPoint::Claim, &check),
        "round 2: claim refused by the check: `pytest` failed (exit 1, 3.2 s)"
    );
    assert_eq!(
        check_line(2, CheckPoint::Change, &check),
        "round 2: check after the change: `pytest` failed (exit 1, 3.2 s)"
    );
    check.command = "pytest\n\x1b[2J-q".into();
    let line = check_line(2, CheckPoint::RoundStart, &check);
    assert!(!line.chars().any(char::is_control), "{line:?}");
}

#[test]
fn a_replay_shows_the_engines_cards_as_the_live_run_did() {
    use ralph_tui::terminal::replay::{Player, Recording};
    use std::time::Duration;
    let mut live = observed_round();
    let mut events = vec![Event::RunStarted {
        run_id: "20260101-090000-1a2b".into(),
        objective: OBJECTIVE.into(),
        max_rounds: 8,
        workspace: "~/src/demo-repo".into(),
        backend: "llama".into(),
        model: Some("SmolLM2-135M-Instruct.Q4_1.gguf".into()),
        device: "CPU".into(),
        sandbox: "workspace-write".into(),
        run_dir: "~/.local/share/ralph-tui/runs/20260101-090000-1a2b".into(),
    }];
    events.push(Event::RoundStarted {
        round: 1,
        max_rounds: 8,
        prompt_sha256: "ab".repeat(32),
        prompt_tokens: 900,
        prefix_tokens_reused: 0,
    });
    events.extend(opening(1));
    // Through the run log's own lines, as a replay reads them.
    let events = events
        .into_iter()
        .map(|event| {
            let line = serde_json::to_string(&event).unwrap();
            (Duration::ZERO, serde_json::from_str(&line).unwrap())
        })
        .collect();
    let recording = Recording {
        run_dir: "runs/20260101-090000-1a2b".into(),
        setup: setup(),
        objective: OBJECTIVE.into(),
        events,
    };
    let mut player = Player::new(recording, 1.0, Theme::default());
    player.play_to_end();
    for unfold in [false, true] {
        if unfold {
            press(&mut live, KeyCode::Char('e'));
            press(&mut player.state, KeyCode::Char('e'));
        }
        assert_eq!(
            stream_rows(&screen(&mut player.state, 80, 24)),
            stream_rows(&screen(&mut live, 80, 24))
        );
    }
}

#[test]
fn a_wide_status_line_shows_the_last_checks_verdict_and_never_crowds_the_keys() {
    let mut state = observed_round();
    let status = |state: &mut State, width| {
        let text = screen(state, width, 40);
        text.lines().last().unwrap_or_default().to_string()
    };
    let wide = status(&mut state, 160);
    assert!(wide.contains("check failed │ ? help"), "{wide}");
    let full = status(&mut state, 120);
    assert!(
        !full.contains("check failed"),
        "the keys come first: {full}"
    );
    assert!(full.ends_with("Esc cancel · n note"), "{full}");
    send(
        &mut state,
        Event::CheckFinished {
            round: 1,
            at: CheckPoint::Claim,
            check: check_run(CheckVerdict::Passed, Some(0), "OK\n"),
        },
    );
    assert!(status(&mut state, 160).contains("check passed"));
    let unchecked = status(&mut new_state(Theme::default()), 160);
    assert!(
        !unchecked.contains("check"),
        "no check, no verdict: {unchecked}"
    );
}
