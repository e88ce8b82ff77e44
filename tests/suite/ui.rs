//! The TUI's screens as insta snapshots on ratatui's `TestBackend` at fixed sizes, plus the
//! behaviour behind them: keys, cancel, approvals, review actions, streaming invariants.
//!
//! Every state is built by feeding the same `Msg`s the event loop feeds (engine events, keys,
//! ticks), so the snapshots show what a person would see after those events.

mod behaviour;
mod cards;
mod event_loop;
pub(super) mod fixtures;
mod footers;
mod observation;
mod review;
mod sizes;
mod streaming;
mod supervision;
mod views;

use crossterm::event::KeyCode;
use ralph_tui::protocol::event::{Event, RunStatus};
use ralph_tui::screens::state::{
    Approval, DiffSource, Effect, Overlay, Pane, ReviewEffect, ReviewResult,
};
use ralph_tui::screens::views::report_detail::ReportDetail;
use ralph_tui::screens::{Msg, State, Theme};
use ralph_tui::tools::approval::ApprovalDecision;
use ralph_tui::workspace::DiffModel;
use ratatui::style::Color;

use fixtures::*;

#[test]
fn snapshot_objective_editor() {
    let mut state = State::new(setup(), None, Theme::default());
    insta::assert_snapshot!("objective_editor_empty_80x24", screen(&mut state, 80, 24));
    state.update(Msg::Paste(
        "Make the slug tests pass.\nKeep the tests unchanged.".into(),
    ));
    insta::assert_snapshot!("objective_editor_typed_120x40", screen(&mut state, 120, 40));
}

#[test]
fn snapshot_run_screen_mid_stream() {
    let mut state = mid_run(Theme::default());
    insta::assert_snapshot!("run_mid_stream_80x24", screen(&mut state, 80, 24));
    insta::assert_snapshot!("run_mid_stream_120x40", screen(&mut state, 120, 40));
}

#[test]
fn snapshot_report_detail_and_rejected_report() {
    let mut state = mid_run(Theme::default());
    state.cursors.focus = Pane::Reports;
    state.cursors.report_sel = 0;
    press(&mut state, KeyCode::Enter);
    assert!(matches!(
        state.overlay(),
        Some(Overlay::ReportDetail(ReportDetail { index: 0, .. }))
    ));
    insta::assert_snapshot!("report_detail_80x24", screen(&mut state, 80, 24));
    press(&mut state, KeyCode::Right);
    let text = screen(&mut state, 80, 24);
    assert!(text.contains("rejected and not carried over"), "{text}");
    insta::assert_snapshot!("report_rejected_80x24", text);
    press(&mut state, KeyCode::Esc);
    assert!(
        state.overlay().is_none(),
        "Esc closes the view, it does not ask to cancel"
    );
}

#[test]
fn snapshot_diff_view() {
    let mut state = mid_run(Theme::default());
    state.cursors.focus = Pane::Changes;
    // Rows: round 3 (live), its file, round 2, its file, round 1.
    state.cursors.change_sel = 3;
    let effects = press(&mut state, KeyCode::Enter);
    assert_eq!(effects, vec![Effect::LoadDiff(DiffSource::Round(2))]);
    insta::assert_snapshot!("diff_view_loading_80x24", screen(&mut state, 80, 24));
    state.update(Msg::DiffLoaded(
        DiffSource::Round(2),
        Ok(DiffModel::from_patch(PATCH).unwrap()),
    ));
    let buf = draw(&mut state, 80, 24);
    insta::assert_snapshot!("diff_view_80x24", filtered(&buffer_text(&buf)));
    // `+` lines are green, `-` lines red, hunk headers cyan.
    let colour_of = |needle: &str| {
        let text = buffer_text(&buf);
        let y = text.lines().position(|l| l.contains(needle)).unwrap() as u16;
        let x = text
            .lines()
            .nth(y as usize)
            .unwrap()
            .chars()
            .position(|c| c == needle.chars().next().unwrap())
            .unwrap() as u16;
        buf[(x, y)].fg
    };
    assert_eq!(colour_of("+import re"), Color::Green);
    assert_eq!(colour_of("-    raise"), Color::Red);
    assert_eq!(colour_of("@@ -1,5"), Color::Cyan);
    press(&mut state, KeyCode::Right);
    let text = screen(&mut state, 80, 24);
    assert!(text.contains("+# Notes"), "{text}");
    assert!(text.contains("file 2/2"), "{text}");
}

#[test]
fn snapshot_approval_modal() {
    let mut state = mid_run(Theme::default());
    send(
        &mut state,
        Event::ApprovalRequested {
            id: 7,
            round: 3,
            command: "python3 -m unittest -v".into(),
            cwd: "~/src/demo-repo".into(),
        },
    );
    // The broker's notifier may announce the same request: shown once.
    state.update(Msg::ApprovalAsked(Approval {
        id: 7,
        round: 3,
        command: "python3 -m unittest -v".into(),
        cwd: "~/src/demo-repo".into(),
    }));
    assert_eq!(state.approvals.len(), 1);
    let text = screen(&mut state, 80, 24);
    // The header says whose turn it is: the command has not started.
    let header = text.lines().next().unwrap_or_default();
    assert!(header.contains("waiting for you"), "{header}");
    insta::assert_snapshot!("approval_modal_80x24", text);
    assert!(
        press(&mut state, KeyCode::Char('x')).is_empty(),
        "other keys wait"
    );
    assert_eq!(
        press(&mut state, KeyCode::Char('a')),
        vec![Effect::Answer(7, ApprovalDecision::AlwaysThisRun)]
    );
    assert!(state.approvals.is_empty());
    // A late duplicate of an answered question does not ask again.
    state.update(Msg::ApprovalAsked(Approval {
        id: 7,
        round: 3,
        command: "python3 -m unittest -v".into(),
        cwd: "~/src/demo-repo".into(),
    }));
    assert!(state.approvals.is_empty());
}

#[test]
fn snapshot_cancel_confirmation() {
    let mut state = mid_run(Theme::default());
    assert!(press(&mut state, KeyCode::Esc).is_empty());
    assert!(matches!(state.overlay(), Some(Overlay::ConfirmCancel)));
    insta::assert_snapshot!("cancel_confirm_80x24", screen(&mut state, 80, 24));
}

#[test]
fn snapshot_review_outcomes() {
    let cases = [
        (
            "review_complete_verified_80x24",
            RunStatus::Complete,
            Some(verification(true)),
        ),
        (
            "review_complete_verify_failed_80x24",
            RunStatus::Complete,
            Some(verification(false)),
        ),
        ("review_blocked_80x24", RunStatus::Blocked, None),
        (
            "review_budget_limited_80x24",
            RunStatus::BudgetLimited,
            None,
        ),
        ("review_cancelled_80x24", RunStatus::Cancelled, None),
        ("review_round_failed_80x24", RunStatus::RoundFailed, None),
    ];
    for (name, status, verification) in cases {
        // A claimed completion that --verify contradicts exits 6.
        let exit = ralph_tui::error::ExitCode::of_run(status, verification.as_ref());
        let mut state = finished(status, verification);
        let text = screen(&mut state, 80, 24);
        let words: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let described: String = status
            .describe()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            words.contains(&described) || text.contains(status.as_str()),
            "{name}: {text}"
        );
        assert!(!text.to_lowercase().contains("success"), "{name}");
        insta::assert_snapshot!(name, text);
        assert_eq!(
            press(&mut state, KeyCode::Char('q')),
            vec![Effect::Quit(exit)]
        );
    }
    let mut state = finished(RunStatus::Complete, Some(verification(true)));
    insta::assert_snapshot!(
        "review_complete_verified_120x40",
        screen(&mut state, 120, 40)
    );
}

#[test]
fn snapshot_review_of_a_worktree_run() {
    let mut state = finished(RunStatus::Complete, Some(verification(true)));
    state.setup.worktree = Some("ralph/20260101-090000-1a2b".into());
    insta::assert_snapshot!("review_worktree_80x24", screen(&mut state, 80, 24));
}

#[test]
fn review_names_the_exact_command_that_resumes_the_run() {
    use ralph_tui::screens::review::resume_command;
    let command = |state: &State| {
        resume_command(&state.review_shared(), state.review.shown.as_ref().unwrap())
    };
    for status in [
        RunStatus::Cancelled,
        RunStatus::RoundFailed,
        RunStatus::BudgetLimited,
    ] {
        let state = finished(status, None);
        assert_eq!(
            command(&state).as_deref(),
            Some("ralph-tui --resume 20260101-090000-1a2b"),
            "{status:?}"
        );
    }
    for status in [RunStatus::Complete, RunStatus::Blocked] {
        assert_eq!(command(&finished(status, None)), None, "{status:?}");
    }
    // At its cap the run needs a higher one; a run outside the data dir goes by directory.
    let mut state = finished(RunStatus::BudgetLimited, None);
    state.review.shown.as_mut().unwrap().rounds_started = 8;
    assert_eq!(
        command(&state).as_deref(),
        Some("ralph-tui --resume 20260101-090000-1a2b -n 16")
    );
    state.setup.run_dir = "logs/my run".into();
    assert_eq!(
        command(&state).as_deref(),
        Some("ralph-tui --resume 'logs/my run' -n 16")
    );
    state.review.shown.as_mut().unwrap().rounds_started = 64;
    assert_eq!(command(&state), None, "64 rounds is the ceiling");
}

#[test]
fn snapshot_commit_editor_prefilled_from_the_report() {
    let mut state = finished(RunStatus::Complete, Some(verification(true)));
    press(&mut state, KeyCode::Char('c'));
    let Some(Overlay::Commit(editor)) = state.overlay() else {
        panic!("no commit editor");
    };
    let text = editor.lines().join("\n");
    assert!(
        text.starts_with("slugify is implemented and both tests pass."),
        "{text}"
    );
    assert!(
        text.contains("- python3 -m unittest: Ran 2 tests, OK"),
        "{text}"
    );
    insta::assert_snapshot!("commit_editor_80x24", screen(&mut state, 80, 24));
    let effects = ctrl(&mut state, 's');
    assert_eq!(effects.len(), 1);
    assert!(
        matches!(&effects[0], Effect::Review(ReviewEffect::Commit(m)) if m.starts_with("slugify is implemented"))
    );
    state.update(Msg::Review(ReviewResult::Committed(Ok(
        "0123abcd on main (2 files +5 −1)".into(),
    ))));
    let text = screen(&mut state, 80, 24);
    assert!(text.contains("committed 0123abcd on main"), "{text}");
    press(&mut state, KeyCode::Char('c'));
    assert!(state.overlay().is_none(), "a run is committed once");
}

#[test]
fn snapshot_help_and_run_log() {
    let mut state = mid_run(Theme::default());
    press(&mut state, KeyCode::Char('?'));
    insta::assert_snapshot!("help_80x24", screen(&mut state, 80, 24));
    insta::assert_snapshot!("help_120x40", screen(&mut state, 120, 40));
    press(&mut state, KeyCode::Esc);
    press(&mut state, KeyCode::Char('l'));
    insta::assert_snapshot!("run_log_80x24", screen(&mut state, 80, 24));
}

#[test]
fn help_lists_every_key_the_screens_mention() {
    let mut state = mid_run(Theme::default());
    press(&mut state, KeyCode::Char('?'));
    let text = screen(&mut state, 120, 60);
    for key in [
        "Ctrl-C", "Esc", "Ctrl-S", "Tab", "PgUp", "Enter", "End", "y", "n", "a", "c", "q", "l",
        "r", "f",
    ] {
        assert!(
            text.contains(&format!(" {key} ")) || text.contains(&format!(" {key}")),
            "{key}"
        );
    }
}

#[test]
fn snapshot_no_color() {
    let mut state = mid_run(Theme::plain());
    let buf = draw(&mut state, 80, 24);
    for cell in buf.content() {
        assert_eq!(cell.fg, Color::Reset, "NO_COLOR: no foreground colour");
        assert_eq!(cell.bg, Color::Reset, "NO_COLOR: no background colour");
    }
    insta::assert_snapshot!("run_no_color_80x24", filtered(&buffer_text(&buf)));
    let mut review = finished(RunStatus::Complete, Some(verification(true)));
    review.theme = Theme::plain();
    let buf = draw(&mut review, 120, 40);
    assert!(buf
        .content()
        .iter()
        .all(|c| c.fg == Color::Reset && c.bg == Color::Reset));
    // The +/- prefixes still tell added from removed without colour.
    let text = buffer_text(&buf);
    assert!(
        text.contains("+import re") && text.contains("-    raise"),
        "{text}"
    );
}

/// The header says what the run is doing: loading the model (before `run_started`; how far
/// once llama.cpp says), reading
/// the prompt (its tokens done of total once `prompt_progress` says them, and the time left
/// from the second one on), generating, running a command, then reading the next prompt.
#[test]
fn snapshot_the_header_says_the_runs_phase() {
    use std::time::Duration;
    let header = |state: &mut State| {
        let text = screen(state, 100, 24);
        text.lines().next().unwrap_or_default().to_string()
    };
    let at = |state: &mut State, secs: u64| {
        state.update(Msg::Tick(Duration::from_secs(secs)));
    };
    let progress = |state: &mut State, done: u32| {
        send(
            state,
            Event::PromptProgress {
                round: 1,
                done,
                total: 1712,
            },
        );
    };
    let mut lines = Vec::new();
    let mut state = State::new(setup(), Some(OBJECTIVE.to_string()), Theme::default());
    at(&mut state, 0);
    lines.push(header(&mut state));
    state.update(Msg::ModelLoading(0.4));
    lines.push(header(&mut state));
    let mut state = new_state(Theme::default());
    start_round(&mut state, 1);
    lines.push(header(&mut state));
    progress(&mut state, 0);
    lines.push(header(&mut state));
    at(&mut state, 11);
    progress(&mut state, 512);
    lines.push(header(&mut state));
    // Between batches the estimate counts down, and the footer has the rate so far.
    assert!(
        header(&mut state).contains("prompt 512/1712 ~25 s"),
        "{}",
        header(&mut state)
    );
    at(&mut state, 15);
    assert!(
        header(&mut state).contains("prompt 512/1712 ~21 s"),
        "{}",
        header(&mut state)
    );
    let footer = screen(&mut state, 100, 24);
    let footer = footer.lines().last().unwrap_or_default().to_string();
    assert!(footer.contains("prompt 46.5 tok/s"), "{footer}");
    at(&mut state, 11);
    tokens(&mut state, 1, "Reading the files. ");
    lines.push(header(&mut state));
    send(
        &mut state,
        Event::TurnFinished {
            round: 1,
            prompt_tokens: 1712,
            generated_tokens: 4,
            prompt_ms: 37_000,
            gen_ms: 400,
            context_tokens: 1716,
        },
    );
    send(
        &mut state,
        Event::ToolCall {
            round: 1,
            name: "run_command".into(),
            arguments: serde_json::json!({"command": "ls"}),
        },
    );
    lines.push(header(&mut state));
    send(
        &mut state,
        Event::ToolResult {
            round: 1,
            name: "run_command".into(),
            ok: true,
            output: "README.md".into(),
        },
    );
    lines.push(header(&mut state));
    // The last progress event of a prompt closes its gauge.
    progress(&mut state, 1712);
    lines.push(header(&mut state));
    insta::assert_snapshot!("header_phases_100", lines.join("\n"));
}
