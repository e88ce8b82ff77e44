//! Keys and what they do: starting from the editor, the cancel question, signals, follow
//! mode, the review's keys, selections that stay put.

use crossterm::event::KeyCode;
use ralph_tui::error::ExitCode;
use ralph_tui::protocol::event::{Event, RoundOutcome, RunStatus, WrapUpReason};
use ralph_tui::protocol::report::ReportStatus;
use ralph_tui::screens::state::{Effect, Overlay};
use ralph_tui::screens::{Msg, Phase, State, Theme};

use super::fixtures::*;

#[test]
fn editor_starts_a_run_or_quits() {
    let mut state = State::new(setup(), None, Theme::default());
    assert_eq!(state.phase, Phase::Editing);
    assert!(
        ctrl(&mut state, 's').is_empty(),
        "an empty objective does not start"
    );
    assert!(state
        .editor
        .error
        .as_deref()
        .unwrap_or("")
        .contains("empty"));
    let text = screen(&mut state, 80, 24);
    assert!(text.contains("the objective is empty"), "{text}");
    for c in "  fix the bug  ".chars() {
        press(&mut state, KeyCode::Char(c));
    }
    assert_eq!(
        ctrl(&mut state, 's'),
        vec![Effect::StartRun("fix the bug".into())]
    );
    assert_eq!(state.phase, Phase::Running);

    let mut state = State::new(setup(), None, Theme::default());
    assert_eq!(
        press(&mut state, KeyCode::Esc),
        vec![Effect::Quit(ExitCode::Cancelled)]
    );
}

#[test]
fn cancel_asks_first_and_a_second_ctrl_c_cancels_at_once() {
    let mut state = mid_run(Theme::default());
    press(&mut state, KeyCode::Esc);
    assert!(press(&mut state, KeyCode::Char('n')).is_empty());
    assert!(state.overlay().is_none(), "n keeps running");
    press(&mut state, KeyCode::Esc);
    assert_eq!(
        press(&mut state, KeyCode::Char('y')),
        vec![Effect::CancelRun]
    );
    assert!(state.cancelling());
    let text = screen(&mut state, 80, 24);
    assert!(text.contains("cancelling"), "{text}");

    let mut state = mid_run(Theme::default());
    assert!(ctrl(&mut state, 'c').is_empty());
    assert!(matches!(state.overlay(), Some(Overlay::ConfirmCancel)));
    assert_eq!(ctrl(&mut state, 'c'), vec![Effect::CancelRun]);
    assert!(state.overlay().is_none());

    // The run then ends cancelled and the review follows; q exits 130.
    finish_round(&mut state, 3, RoundOutcome::Cancelled, vec![]);
    send(
        &mut state,
        Event::RunFinished {
            status: RunStatus::Cancelled,
            rounds_started: 3,
            report: None,
            last_valid_report: None,
            error: None,
            worker_reported: true,
            verification: None,
        },
    );
    assert_eq!(state.phase, Phase::Finished);
    assert_eq!(
        press(&mut state, KeyCode::Char('q')),
        vec![Effect::Quit(ExitCode::Cancelled)]
    );
}

#[test]
fn terminate_cancels_and_quits_when_the_run_ends() {
    let mut state = mid_run(Theme::default());
    assert_eq!(state.update(Msg::Terminate), vec![Effect::CancelRun]);
    let effects = send(
        &mut state,
        Event::RunFinished {
            status: RunStatus::Cancelled,
            rounds_started: 3,
            report: None,
            last_valid_report: None,
            error: None,
            worker_reported: true,
            verification: None,
        },
    );
    assert_eq!(effects, vec![Effect::Quit(ExitCode::Cancelled)]);
}

#[test]
fn follow_mode_scrolls_back_and_returns() {
    let mut state = mid_run(Theme::default());
    for i in 0..100 {
        tokens(&mut state, 3, &format!("line {i}\n"));
    }
    let bottom = screen(&mut state, 80, 24);
    assert!(
        bottom.contains("line 99") && bottom.contains("following"),
        "{bottom}"
    );
    press(&mut state, KeyCode::PageUp);
    let scrolled = screen(&mut state, 80, 24);
    assert!(!scrolled.contains("line 99"), "{scrolled}");
    assert!(scrolled.contains("below, End follows"), "{scrolled}");
    tokens(&mut state, 3, "line 100\n");
    let still = screen(&mut state, 80, 24);
    assert_eq!(
        stream_rows(&scrolled),
        stream_rows(&still),
        "new text does not move a scrolled view"
    );
    press(&mut state, KeyCode::End);
    let back = screen(&mut state, 80, 24);
    assert!(
        back.contains("line 100") && back.contains("following"),
        "{back}"
    );
}

#[test]
fn the_end_of_a_run_never_turns_a_key_into_quit() {
    let mut state = mid_run(Theme::default());
    state.cursors.focus = ralph_tui::screens::state::Pane::Changes;
    state.cursors.change_sel = 3;
    press(&mut state, KeyCode::Enter);
    assert!(matches!(state.overlay(), Some(Overlay::Diff(_))));
    send(
        &mut state,
        Event::RunFinished {
            status: RunStatus::BudgetLimited,
            rounds_started: 3,
            report: None,
            last_valid_report: None,
            error: None,
            worker_reported: true,
            verification: None,
        },
    );
    assert!(
        matches!(state.overlay(), Some(Overlay::Diff(_))),
        "the view being read stays open over the review"
    );
    // Esc meant for the view closes it; a second Esc does not quit either.
    assert!(press(&mut state, KeyCode::Esc).is_empty());
    assert!(state.overlay().is_none());
    assert!(press(&mut state, KeyCode::Esc).is_empty());
    assert_eq!(state.phase, Phase::Finished);
    let text = screen(&mut state, 80, 24);
    assert!(text.contains("q quits"), "{text}");
    assert_eq!(
        press(&mut state, KeyCode::Char('q')),
        vec![Effect::Quit(ExitCode::BudgetLimited)]
    );
}

#[test]
fn the_selected_change_stays_selected_as_rounds_arrive() {
    let mut state = mid_run(Theme::default());
    state.cursors.focus = ralph_tui::screens::state::Pane::Changes;
    // Rows: round 3 (live), its file, round 2, its file, round 1: select round 2's file.
    state.cursors.change_sel = 3;
    finish_round(
        &mut state,
        3,
        RoundOutcome::Reported,
        vec![changed("slug.py", "modified", 3, 2)],
    );
    start_round(&mut state, 4);
    send(
        &mut state,
        Event::WorkspaceChanged {
            round: 4,
            files: vec![
                changed("a.txt", "added", 1, 0),
                changed("b.txt", "added", 1, 0),
            ],
        },
    );
    let effects = press(&mut state, KeyCode::Enter);
    assert_eq!(
        effects,
        vec![Effect::LoadDiff(
            ralph_tui::screens::state::DiffSource::Round(2)
        )],
        "still round 2's file"
    );
}

#[test]
fn approvals_wait_for_y_n_or_a_and_a_cancel_clears_them() {
    let mut state = mid_run(Theme::default());
    for id in [1, 2] {
        send(
            &mut state,
            Event::ApprovalRequested {
                id,
                round: 3,
                command: format!("make step{id}"),
                cwd: ".".into(),
            },
        );
    }
    let text = screen(&mut state, 80, 24);
    assert!(
        text.contains("make step1") && text.contains("1 more waiting"),
        "{text}"
    );
    assert_eq!(
        press(&mut state, KeyCode::Char('n')),
        vec![Effect::Answer(
            1,
            ralph_tui::tools::approval::ApprovalDecision::Deny
        )]
    );
    assert!(screen(&mut state, 80, 24).contains("make step2"));
    // Esc asks to cancel even with a question open; confirming cancels the run.
    press(&mut state, KeyCode::Esc);
    assert_eq!(
        press(&mut state, KeyCode::Char('y')),
        vec![Effect::CancelRun]
    );
    finish_round(&mut state, 3, RoundOutcome::Cancelled, vec![]);
    assert!(
        state.approvals.is_empty(),
        "the round's questions end with it"
    );
}

#[test]
fn live_changes_update_the_running_round_only() {
    let mut state = mid_run(Theme::default());
    state.update(Msg::LiveChanges(
        3,
        vec![
            changed("slug.py", "modified", 4, 2),
            changed("NOTES.md", "added", 2, 0),
        ],
    ));
    let text = screen(&mut state, 80, 24);
    assert!(
        text.contains("Round 3 · live · 2 files") && text.contains("A NOTES.md"),
        "{text}"
    );
    // Round 2 has ended: a late live report for it changes nothing.
    state.update(Msg::LiveChanges(2, vec![]));
    let text = screen(&mut state, 80, 24);
    assert!(text.contains("Round 2 · 1 file +6 −1"), "{text}");
}

#[test]
fn a_wrap_up_shows_in_the_stream_and_on_its_rounds_row_and_the_meter_marks_the_reserve() {
    let mut state = new_state(Theme::default());
    start_round(&mut state, 1);
    tokens(&mut state, 1, "Looking at the files. ");
    send(
        &mut state,
        Event::WrapUp {
            round: 1,
            reason: WrapUpReason::Context,
        },
    );
    send(
        &mut state,
        Event::ReportAccepted {
            round: 1,
            report: report(ReportStatus::Continue, "handed over"),
        },
    );
    let text = screen(&mut state, 160, 30);
    assert!(
        text.contains("◆ wrap-up (context): the context window is nearly"),
        "{text}"
    );
    assert!(text.contains("[wrap-up: context] handed over"), "{text}");
    // 4096 tokens, the reserve's 625 from 3471 on: the marker sits in the seventh cell.
    assert!(text.contains("ctx ██░░░░┊░"), "{text}");
}

#[test]
fn the_review_shows_the_runs_warnings() {
    let mut state = mid_run(Theme::default());
    send(
        &mut state,
        Event::Warning {
            message: "round 2 changed git hooks: hooks/post-commit (added)".into(),
        },
    );
    send(
        &mut state,
        Event::RunFinished {
            status: RunStatus::Complete,
            rounds_started: 2,
            report: None,
            last_valid_report: None,
            error: None,
            worker_reported: false,
            verification: None,
        },
    );
    let review = state.review.shown.as_ref().unwrap();
    assert_eq!(review.warnings.len(), 1);
    let text = screen(&mut state, 120, 40);
    let in_report_pane = text
        .lines()
        .skip_while(|l| !l.contains("No valid report was filed"))
        .any(|l| l.contains("! round 2 changed git hooks"));
    assert!(in_report_pane, "{text}");
}

#[test]
fn a_claimed_completion_that_verify_contradicts_quits_with_exit_6() {
    let contradicted = finished(RunStatus::Complete, Some(verification(false)));
    assert_eq!(contradicted.exit_code(), ExitCode::VerifyFailed);
    assert_eq!(ExitCode::VerifyFailed.code(), 6);
    let passed = finished(RunStatus::Complete, Some(verification(true)));
    assert_eq!(passed.exit_code(), ExitCode::Complete);
    let unverified = finished(RunStatus::Complete, None);
    assert_eq!(unverified.exit_code(), ExitCode::Complete);
    // A failed verification never turns another ending into 6.
    let blocked = finished(RunStatus::Blocked, Some(verification(false)));
    assert_eq!(blocked.exit_code(), ExitCode::Blocked);
}

#[test]
fn a_resumed_run_counts_its_rounds_from_its_first_start_before_the_next_round() {
    let mut state = State::new(setup(), Some(OBJECTIVE.into()), Theme::default()).resuming_at(4);
    let header = |state: &mut State| {
        let text = screen(state, 120, 40);
        text.lines().next().unwrap_or_default().to_string()
    };
    assert!(
        header(&mut state).contains("Round 3/8"),
        "{}",
        header(&mut state)
    );
    start_round(&mut state, 4);
    assert!(
        header(&mut state).contains("Round 4/8"),
        "{}",
        header(&mut state)
    );
}
