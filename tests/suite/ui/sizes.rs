//! Every screen and question at 80×24 and 120×40 says its sentences and keys whole: a status
//! line too narrow for all its keys leaves the last ones out, and a notice too long for one
//! row wraps onto more rather than ending in "…".

use crossterm::event::KeyCode;
use ralph_tui::protocol::event::RunStatus;
use ralph_tui::screens::model::Pane;
use ralph_tui::screens::{State, Theme};

use super::fixtures::*;

const SIZES: [(u16, u16); 2] = [(80, 24), (120, 40)];

/// The screen's last row (the status line, or a wrapped notice's last row).
fn last_row(screen: &str) -> &str {
    screen.lines().last().unwrap_or_default()
}

/// A named way to build a state.
type Make = (&'static str, Box<dyn Fn() -> State>);

/// The states whose status lines are checked, built fresh for each size.
fn states() -> Vec<Make> {
    let mut out: Vec<Make> = Vec::new();
    for (name, pane) in [
        ("run_stream", Pane::Stream),
        ("run_reports", Pane::Reports),
        ("run_changes", Pane::Changes),
        ("run_objective", Pane::Objective),
    ] {
        out.push((
            name,
            Box::new(move || {
                let mut state = mid_run(Theme::default());
                while state.cursors.focus != pane {
                    press(&mut state, KeyCode::Tab);
                }
                state
            }),
        ));
    }
    for (name, status) in [
        ("review_complete", RunStatus::Complete),
        ("review_blocked", RunStatus::Blocked),
        ("review_cancelled", RunStatus::Cancelled),
        ("review_round_failed", RunStatus::RoundFailed),
        ("review_budget_limited", RunStatus::BudgetLimited),
    ] {
        out.push((
            name,
            Box::new(move || finished(status, Some(verification(true)))),
        ));
    }
    out.push((
        "review_worktree",
        Box::new(|| {
            let mut state = finished(RunStatus::Complete, None);
            state.setup.worktree = Some("ralph/20260101-090000-1a2b".into());
            state
        }),
    ));
    out
}

#[test]
fn every_status_line_says_its_keys_whole() {
    for (name, make) in states() {
        for (width, height) in SIZES {
            let mut state = make();
            let text = screen(&mut state, width, height);
            let status = last_row(&text);
            assert!(
                !status.contains('…'),
                "{name} at {width}x{height}: {status}"
            );
            assert!(!status.trim().is_empty(), "{name} at {width}x{height}");
        }
    }
}

#[test]
fn snapshot_the_worktree_discard_question_wraps_instead_of_cutting() {
    for (width, height) in SIZES {
        let mut state = finished(RunStatus::Complete, None);
        state.setup.worktree = Some("ralph/20260101-090000-1a2b".into());
        press(&mut state, KeyCode::Char('X'));
        let text = screen(&mut state, width, height);
        let rows: Vec<&str> = text.lines().rev().take(3).collect();
        let said: String = rows
            .iter()
            .rev()
            .map(|r| r.trim())
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            said.contains("the run's work is lost unless applied or committed"),
            "{width}x{height}: {said}"
        );
        assert!(!said.contains('…'), "{width}x{height}: {said}");
        insta::assert_snapshot!(format!("worktree_discard_asked_{width}x{height}"), text);
        // Any other key takes the question back: one row again.
        press(&mut state, KeyCode::Down);
        let text = screen(&mut state, width, height);
        assert!(!last_row(&text).contains("X again"), "{text}");
    }
}
