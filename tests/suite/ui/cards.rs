//! Tool calls as cards in the stream: every kind folded and unfolded, raw model output off and
//! on, at 80×24 and 120×40; Enter opens a card whole; the report call is the report card,
//! once; any split of a turn renders the same cards; the meters read the backend's counts.

use crossterm::event::KeyCode;
use proptest::prelude::*;
use ralph_tui::protocol::event::Event;
use ralph_tui::protocol::report::ReportStatus;
use ralph_tui::screens::state::Overlay;
use ralph_tui::screens::{Msg, State, Theme};
use serde_json::{json, Value};
use std::time::Duration;

use super::fixtures::*;
use crate::suite::common::split_at_points;

/// One kind of card: what the model says, its call, and the tool's answer.
struct Kind {
    name: &'static str,
    say: &'static str,
    tool: &'static str,
    arguments: Value,
    ok: bool,
    output: &'static str,
}

fn kinds() -> Vec<Kind> {
    let kind = |name, say, tool, arguments, ok, output| Kind {
        name,
        say,
        tool,
        arguments,
        ok,
        output,
    };
    vec![
        kind(
            "read",
            "Reading the stub.",
            "read_file",
            json!({"path": "slug.py"}),
            true,
            "1: \"\"\"Turn titles into URL slugs.\"\"\"\n2:\n3:\n4: def slugify(text):\n5:     raise NotImplementedError",
        ),
        kind(
            "list",
            "Looking around.",
            "list_dir",
            json!({"path": "."}),
            true,
            "AGENTS.md\nslug.py\ntest_slug.py",
        ),
        kind(
            "search",
            "Where is it defined?",
            "search",
            json!({"pattern": "def slugify", "glob": "*.py"}),
            true,
            "slug.py:4: def slugify(text):",
        ),
        kind(
            "write",
            "Writing a test.",
            "write_file",
            json!({"path": "test_slug.py", "content": "import unittest\nfrom slug import slugify\n\n\nclass SlugTest(unittest.TestCase):\n    def test_words(self):\n        self.assertEqual(slugify(\"A b\"), \"a-b\")\n"}),
            true,
            "wrote 7 lines (152 bytes) to test_slug.py",
        ),
        kind(
            "edit",
            "Implementing it.",
            "edit_file",
            json!({"path": "slug.py", "old": "    raise NotImplementedError", "new": "    return \"-\".join(text.lower().split())"}),
            true,
            "replaced 1 occurrence in slug.py",
        ),
        kind(
            "run_ok",
            "Running the tests.",
            "run_command",
            json!({"command": "python3 -m unittest -q"}),
            true,
            "exit code 0\n----------------------------------------------------------------------\nRan 1 test in 0.000s\n\nOK",
        ),
        kind(
            "run_failed",
            "Running the tests.",
            "run_command",
            json!({"command": "python3 -m unittest -q"}),
            false,
            "exit code 1\nF\n======================================================================\nFAIL: test_words (test_slug.SlugTest.test_words)\n----------------------------------------------------------------------\nAssertionError: 'A-b' != 'a-b'\n\nRan 1 test in 0.001s\n\nFAILED (failures=1)",
        ),
        kind(
            "unknown",
            "Trying something.",
            "frobnicate",
            json!({"level": 3}),
            false,
            "unknown tool `frobnicate`; the tools are read_file, list_dir, search, write_file, edit_file, run_command, ralph_report",
        ),
        kind(
            "rejected",
            "Writing the file.",
            "write_file",
            json!({"path": 5}),
            false,
            "invalid arguments for write_file: /path: 5 is not of type \"string\"",
        ),
    ]
}

fn call_markup(tool: &str, arguments: &Value) -> String {
    format!(
        "<tool_call>{}</tool_call>",
        json!({"name": tool, "arguments": arguments})
    )
}

fn with_card(kind: &Kind) -> State {
    let mut state = new_state(Theme::default());
    start_round(&mut state, 1);
    tokens(
        &mut state,
        1,
        &format!("{}\n{}", kind.say, call_markup(kind.tool, &kind.arguments)),
    );
    send(
        &mut state,
        Event::ToolCall {
            round: 1,
            name: kind.tool.into(),
            arguments: kind.arguments.clone(),
        },
    );
    send(
        &mut state,
        Event::ToolResult {
            round: 1,
            name: kind.tool.into(),
            ok: kind.ok,
            output: kind.output.into(),
        },
    );
    state
}

/// The screen folded, unfolded (`e`), with raw output on (`m`), and the card opened (Enter).
fn views(state: &mut State, width: u16, height: u16) -> String {
    let mut out = String::new();
    let mut shot = |title: &str, state: &mut State| {
        out.push_str(&format!(
            "── {title} ──\n{}\n",
            screen(state, width, height)
        ));
    };
    shot("folded, raw off", state);
    press(state, KeyCode::Char('e'));
    shot("unfolded, raw off", state);
    press(state, KeyCode::Char('e'));
    press(state, KeyCode::Char('m'));
    shot("folded, raw on", state);
    press(state, KeyCode::Char('e'));
    shot("unfolded, raw on", state);
    press(state, KeyCode::Char('e'));
    press(state, KeyCode::Char('m'));
    press(state, KeyCode::Enter);
    assert!(matches!(state.overlay(), Some(Overlay::Card(_))));
    shot("opened", state);
    press(state, KeyCode::Esc);
    assert!(state.overlay().is_none());
    out
}

#[test]
fn snapshot_every_card_kind() {
    for kind in kinds() {
        for (width, height) in [(80, 24), (120, 40)] {
            let mut state = with_card(&kind);
            let text = views(&mut state, width, height);
            insta::assert_snapshot!(format!("card_{}_{width}x{height}", kind.name), text);
        }
    }
}

#[test]
fn the_raw_markup_is_hidden_until_asked_for() {
    let kind = &kinds()[3];
    let mut state = with_card(kind);
    let folded = screen(&mut state, 120, 40);
    assert!(
        folded.contains("Writing a test."),
        "free text stays: {folded}"
    );
    assert!(!folded.contains("<tool_call>"), "{folded}");
    assert!(
        folded.contains("→ write_file test_slug.py · 7 lines, 152 bytes"),
        "{folded}"
    );
    assert!(
        !folded.contains("import unittest"),
        "file contents are folded"
    );
    press(&mut state, KeyCode::Char('m'));
    let raw = screen(&mut state, 120, 40);
    assert!(raw.contains("<tool_call>"), "{raw}");
    assert!(
        raw.contains("raw output"),
        "the title says raw output is on"
    );
    press(&mut state, KeyCode::Char('e'));
    let unfolded = screen(&mut state, 120, 40);
    assert!(unfolded.contains("  import unittest"), "{unfolded}");
}

#[test]
fn snapshot_the_report_call_is_the_report_card_once() {
    let mut state = new_state(Theme::default());
    start_round(&mut state, 1);
    let arguments = json!({"status": "continue", "summary": "Read the stub.", "evidence": [],
                           "next_steps": ["implement slugify"], "blocker": ""});
    tokens(
        &mut state,
        1,
        &format!("Reporting.\n{}", call_markup("ralph_report", &arguments)),
    );
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
        Event::ToolResult {
            round: 1,
            name: "ralph_report".into(),
            ok: true,
            output: "report accepted; the round ends here".into(),
        },
    );
    send(
        &mut state,
        Event::ReportAccepted {
            round: 1,
            report: report(ReportStatus::Continue, "Read the stub."),
        },
    );
    for (width, height) in [(80, 24), (120, 40)] {
        let text = screen(&mut state, width, height);
        assert_eq!(text.matches("report accepted").count(), 1, "{text}");
        assert!(!text.contains("ralph_report"), "{text}");
        insta::assert_snapshot!(format!("card_report_{width}x{height}"), text);
    }
}

#[test]
fn reasoning_folds_to_one_line_per_block() {
    let mut state = new_state(Theme::default());
    start_round(&mut state, 1);
    tokens(
        &mut state,
        1,
        "<think>The test wants lower case.\nAnd dashes.</think>\nI will edit slug.py.\n<think>Check the tests after.</think>",
    );
    let text = screen(&mut state, 120, 40);
    assert_eq!(text.matches("▸ thinking").count(), 2, "{text}");
    assert!(!text.contains("lower case"), "{text}");
    assert!(text.contains("I will edit slug.py."), "{text}");
    press(&mut state, KeyCode::Char('e'));
    let text = screen(&mut state, 120, 40);
    assert!(text.contains("The test wants lower case."), "{text}");
    assert!(text.contains("▾ thinking"), "{text}");
    insta::assert_snapshot!("reasoning_unfolded_80x24", screen(&mut state, 80, 24));
}

#[test]
fn brackets_choose_the_card_enter_opens() {
    let mut state = new_state(Theme::default());
    start_round(&mut state, 1);
    for kind in kinds().iter().take(3) {
        send(
            &mut state,
            Event::ToolCall {
                round: 1,
                name: kind.tool.into(),
                arguments: kind.arguments.clone(),
            },
        );
    }
    press(&mut state, KeyCode::Char('['));
    press(&mut state, KeyCode::Enter);
    match state.overlay() {
        Some(Overlay::Card(view)) => {
            assert_eq!(view.card.call().map(|c| c.name.as_str()), Some("list_dir"))
        }
        other => panic!("{other:?}"),
    }
    press(&mut state, KeyCode::Esc);
    press(&mut state, KeyCode::Char(']'));
    press(&mut state, KeyCode::Char(']'));
    assert_eq!(
        state.cursors.card_sel, None,
        "past the newest it follows the newest"
    );
}

/// A turn with reasoning, free text and two calls, rendered after `pieces` and its events.
fn render_turn(pieces: &[String], unfold: bool, raw: bool) -> String {
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
    for kind in kinds().iter().skip(3).take(2) {
        send(
            &mut state,
            Event::ToolCall {
                round: 1,
                name: kind.tool.into(),
                arguments: kind.arguments.clone(),
            },
        );
        send(
            &mut state,
            Event::ToolResult {
                round: 1,
                name: kind.tool.into(),
                ok: kind.ok,
                output: kind.output.into(),
            },
        );
    }
    if unfold {
        press(&mut state, KeyCode::Char('e'));
    }
    if raw {
        press(&mut state, KeyCode::Char('m'));
    }
    let text = screen(&mut state, 120, 40);
    let lines: Vec<&str> = text.lines().collect();
    lines[..lines.len() - 1].join("\n")
}

fn turn_text() -> String {
    let kinds = kinds();
    format!(
        "<think>Plan: write [the] test <then> edit.</think>\nWriting the test, then the fix.\n{}\n{}\nDone <b>for now</b>.",
        call_markup(kinds[3].tool, &kinds[3].arguments),
        call_markup(kinds[4].tool, &kinds[4].arguments)
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn any_split_of_a_turn_renders_the_same_cards(
        cuts in proptest::collection::vec(0usize..600, 0..60),
        unfold: bool,
        raw: bool,
    ) {
        let text = turn_text();
        let whole = render_turn(std::slice::from_ref(&text), unfold, raw);
        let split = render_turn(&split_at_points(&text, &cuts), unfold, raw);
        prop_assert_eq!(whole, split);
    }
}

/// The stream while a turn is still being written, cut at `end` characters, after `pieces`.
fn render_partial(pieces: &[String]) -> String {
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
    let text = screen(&mut state, 120, 40);
    let lines: Vec<&str> = text.lines().collect();
    lines[..lines.len() - 1].join("\n")
}

#[test]
fn a_call_shows_by_name_while_it_streams_whatever_the_split() {
    let text = format!(
        "<think>Plan [it].</think>\nWriting the test.\n<tool_call>{{\"name\": \"write_file\", \"arguments\": {{\"path\": \"t.py\", \"content\": \"{}",
        "import unittest\\n".repeat(40)
    );
    let whole = render_partial(std::slice::from_ref(&text));
    assert!(
        whole.contains("→ write_file … 512+ bytes so far"),
        "{whole}"
    );
    assert!(!whole.contains("<tool_call>"), "{whole}");
    let chars: Vec<String> = text.chars().map(String::from).collect();
    assert_eq!(whole, render_partial(&chars));
    let halves = [
        text.chars().take(100).collect::<String>(),
        text.chars().skip(100).collect(),
    ];
    assert_eq!(whole, render_partial(&halves));
}

#[test]
fn every_char_of_a_turn_as_its_own_token_renders_the_same_cards() {
    let text = turn_text();
    let chars: Vec<String> = text.chars().map(String::from).collect();
    for (unfold, raw) in [(false, false), (true, false), (false, true), (true, true)] {
        assert_eq!(
            render_turn(std::slice::from_ref(&text), unfold, raw),
            render_turn(&chars, unfold, raw)
        );
    }
}

#[test]
fn the_status_line_shows_exact_counts_and_rates_per_turn() {
    let mut state = new_state(Theme::default());
    start_round(&mut state, 1);
    send(
        &mut state,
        Event::ContextCounted {
            round: 1,
            tokens: 1200,
        },
    );
    send(
        &mut state,
        Event::TurnFinished {
            round: 1,
            prompt_tokens: 1200,
            generated_tokens: 100,
            prompt_ms: 600,
            gen_ms: 2000,
            context_tokens: 1300,
        },
    );
    // A run that keeps no reserve (its context too small for one) draws no marker.
    state.meters.report_reserve = None;
    let text = screen(&mut state, 120, 40);
    let status = text.lines().last().unwrap();
    assert!(status.contains("gen 50.0 tok/s"), "{status}");
    assert!(status.contains("prompt 2000.0 tok/s"), "{status}");
    assert!(status.contains(" 1.3k/4.1k"), "exact, no ~: {status}");
    assert!(status.contains("round 0:00"), "{status}");
    assert!(!status.contains('┊'), "no reserve marker without a reserve");
    state.meters.report_reserve = Some(3072);
    let text = screen(&mut state, 120, 40);
    let status = text.lines().last().unwrap();
    assert!(status.contains('┊'), "the reserve is marked: {status}");
}

#[test]
fn the_outcome_sentence_tells_claim_and_verify() {
    use ralph_tui::headless::summary_line;
    use ralph_tui::protocol::event::RunStatus;
    let cases = [
        (
            Some(verification(true)),
            "complete after 3 rounds: the worker reports the objective complete — the worker's claim; verify passed (exit 0)",
            false,
        ),
        (
            Some(verification(false)),
            "complete after 3 rounds: the worker reports the objective complete — the worker's claim; verify FAILED (exit 1)",
            true,
        ),
        (
            None,
            "complete after 3 rounds: the worker reports the objective complete — not independently verified",
            false,
        ),
    ];
    let error = Theme::default().error().fg;
    for (verify, sentence, contradicted) in cases {
        let mut state = finished(RunStatus::Complete, verify.clone());
        let review = state.review.shown.clone().unwrap();
        assert_eq!(ralph_tui::screens::review::outcome_text(&review), sentence);
        let buf = draw(&mut state, 120, 40);
        let fg = buf[(1, 2)].fg;
        assert_eq!(
            Some(fg) == error,
            contradicted,
            "the error colour only for a contradicted claim ({sentence})"
        );
        let line = summary_line(RunStatus::Complete, 3, verify.as_ref(), None, "RUN");
        assert_eq!(
            line.contains("the claimed completion did not pass verification"),
            contradicted,
            "{line}"
        );
        assert!(
            line.contains(sentence.split(": ").nth(1).unwrap()),
            "{line}"
        );
    }
    // Another status keeps its own words beside the verify result.
    let line = summary_line(
        RunStatus::Blocked,
        2,
        Some(&verification(false)),
        None,
        "RUN",
    );
    assert!(
        line.contains("blocked — its own account; verify FAILED (exit 1)"),
        "{line}"
    );
    assert!(!line.contains("claimed completion"), "{line}");
}

/// The shapes a call comes in: each family's tags, and the fenced and bare objects small
/// coder models write whatever their template says.
fn call_shapes() -> Vec<(&'static str, String)> {
    let call = r#"{"name": "list_dir", "arguments": {"path": "."}}"#;
    vec![
        ("tags", format!("<tool_call>\n{call}\n</tool_call>")),
        ("json_fence", format!("```json\n{call}\n```")),
        ("bare_fence", format!("```\n{call}\n```")),
        ("array_fence", format!("```json\n[\n  {call}\n]\n```")),
        ("bare_object", call.to_string()),
        ("bare_in_prose", format!("I call {call} now.")),
    ]
}

#[test]
fn snapshot_every_call_shape_renders_as_its_card_only() {
    for (name, markup) in call_shapes() {
        let mut state = new_state(Theme::default());
        start_round(&mut state, 1);
        let text = format!("Listing the files.\n{markup}\nDone.");
        // Streamed a character at a time: the shape is known whatever the split.
        for c in text.chars() {
            send(
                &mut state,
                Event::Token {
                    round: 1,
                    text: c.to_string(),
                },
            );
        }
        let streaming = screen(&mut state, 80, 24);
        assert!(streaming.contains("→ list_dir"), "{name}: {streaming}");
        send(
            &mut state,
            Event::ToolCall {
                round: 1,
                name: "list_dir".into(),
                arguments: json!({"path": "."}),
            },
        );
        send(
            &mut state,
            Event::ToolResult {
                round: 1,
                name: "list_dir".into(),
                ok: true,
                output: "README.md\nslug.py\n".into(),
            },
        );
        let folded = screen(&mut state, 80, 24);
        for raw in ["\"name\"", "```", "<tool_call>", "\"arguments\""] {
            assert!(!folded.contains(raw), "{name}: {raw} shows in {folded}");
        }
        assert!(folded.contains("Listing the files."), "{name}: {folded}");
        assert!(folded.contains("Done."), "{name}: {folded}");
        insta::assert_snapshot!(format!("call_shape_{name}_80x24"), folded);
        // The markup is one key away, and the run log keeps it all.
        press(&mut state, KeyCode::Char('m'));
        let raw = screen(&mut state, 80, 24);
        assert!(raw.contains("\"name\""), "{name}: {raw}");
    }
}

#[test]
fn a_command_card_says_what_the_tests_said_and_counts_folded_lines_only_while_folded() {
    let kind = kinds()
        .into_iter()
        .find(|k| k.name == "run_failed")
        .expect("a failing command kind");
    let mut state = with_card(&kind);
    let folded = screen(&mut state, 120, 40);
    assert!(
        folded.contains("Ran 1 test in 0.001s · FAILED (failures=1)"),
        "{folded}"
    );
    assert!(folded.contains("lines)"), "{folded}");
    press(&mut state, KeyCode::Char('e'));
    let unfolded = screen(&mut state, 120, 40);
    assert!(!unfolded.contains("lines)"), "{unfolded}");
    assert!(unfolded.contains("  FAIL: test_words"), "{unfolded}");
    press(&mut state, KeyCode::Char('e'));
    assert_eq!(screen(&mut state, 120, 40), folded);
}

#[test]
fn the_status_line_says_the_machine_is_busy_when_generation_falls_far_below_its_best() {
    let mut state = new_state(Theme::default());
    start_round(&mut state, 1);
    // A first turn at 50 tok/s: the run's best.
    tokens(&mut state, 1, &"word ".repeat(100));
    send(
        &mut state,
        Event::TurnFinished {
            round: 1,
            prompt_tokens: 900,
            generated_tokens: 100,
            prompt_ms: 600,
            gen_ms: 2000,
            context_tokens: 1000,
        },
    );
    // The next turn streams one token a second for 5 s.
    let mut at = Duration::from_secs(10);
    for _ in 0..6 {
        state.update(Msg::Tick(at));
        tokens(&mut state, 1, "x ");
        at += Duration::from_secs(1);
    }
    state.update(Msg::Tick(at));
    let text = screen(&mut state, 160, 40);
    let status = text.lines().last().unwrap();
    assert!(status.contains("the machine is busy"), "{status}");
    assert!(status.contains("50 earlier in this run"), "{status}");
    // At its usual rate it says nothing of the kind.
    let mut state = new_state(Theme::default());
    start_round(&mut state, 1);
    tokens(&mut state, 1, &"word ".repeat(100));
    send(
        &mut state,
        Event::TurnFinished {
            round: 1,
            prompt_tokens: 900,
            generated_tokens: 100,
            prompt_ms: 600,
            gen_ms: 2000,
            context_tokens: 1000,
        },
    );
    let mut at = Duration::from_secs(10);
    for _ in 0..6 {
        state.update(Msg::Tick(at));
        tokens(&mut state, 1, &"y ".repeat(40));
        at += Duration::from_secs(1);
    }
    state.update(Msg::Tick(at));
    let text = screen(&mut state, 160, 40);
    assert!(!text.contains("machine is busy"), "{text}");
}
