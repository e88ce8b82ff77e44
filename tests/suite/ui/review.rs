//! The review's decisions: files chosen one by one for the commit (space), the files changed
//! outside the run apart and not chosen, revert of one round (question, conflict, result),
//! and discard with the list of what is lost; each as the person sees it (80×24, 120×40).

use std::time::Duration;

use crossterm::event::KeyCode;
use ralph_tui::protocol::event::{Event, RoundOutcome, RunStatus};
use ralph_tui::screens::state::{
    DiffSource, Effect, Loadable, Overlay, ReviewEffect, ReviewResult,
};
use ralph_tui::screens::{Msg, Theme};
use ralph_tui::workspace::DiffModel;

use super::fixtures::*;

#[test]
fn space_leaves_a_file_out_and_the_commit_takes_only_the_chosen() {
    let mut state = finished(RunStatus::Complete, Some(verification(true)));
    let review = state.review.shown.as_ref().unwrap();
    assert_eq!(
        review.chosen(),
        vec![("slug.py", None), ("NOTES.md", None)],
        "every file of the run is chosen at first"
    );
    assert!(review.all_chosen());

    press(&mut state, KeyCode::Down);
    assert!(press(&mut state, KeyCode::Char(' ')).is_empty());
    let review = state.review.shown.as_ref().unwrap();
    assert_eq!(review.chosen(), vec![("slug.py", None)]);
    assert!(!review.all_chosen());
    let small = screen(&mut state, 80, 24);
    assert!(small.contains("[x] M slug.py"), "{small}");
    assert!(small.contains("[ ] A NOTES.md"), "{small}");
    assert!(small.contains("Changes (2) · 1 chosen"), "{small}");
    insta::assert_snapshot!("review_selection_toggled_80x24", small);
    insta::assert_snapshot!(
        "review_selection_toggled_120x40",
        screen(&mut state, 120, 40)
    );

    // The commit editor says what the commit takes; Ctrl-S asks for the commit.
    press(&mut state, KeyCode::Char('c'));
    let Some(Overlay::Commit(editor)) = state.overlay() else {
        panic!("no commit editor");
    };
    assert!(
        editor
            .note
            .as_deref()
            .is_some_and(|n| n.contains("only the 1 chosen of the 2 files")),
        "{:?}",
        editor.note
    );
    let effects = ctrl(&mut state, 's');
    assert!(
        matches!(&effects[..], [Effect::Review(ReviewEffect::Commit(_))]),
        "{effects:?}"
    );

    // Nothing chosen: nothing to commit, said so.
    let mut state = finished(RunStatus::Complete, None);
    press(&mut state, KeyCode::Char(' '));
    press(&mut state, KeyCode::Down);
    press(&mut state, KeyCode::Char(' '));
    assert!(press(&mut state, KeyCode::Char('c')).is_empty());
    assert!(state.overlay().is_none());
    assert!(state
        .notice
        .as_deref()
        .unwrap()
        .contains("no file is chosen"));
}

#[test]
fn files_changed_outside_the_run_are_listed_apart_and_never_chosen_by_default() {
    let mut state = mid_run(Theme::default());
    let mut outside = changed("slug.py", "modified", 3, 2);
    outside.outside_run = true;
    finish_round(&mut state, 3, RoundOutcome::Reported, vec![outside]);
    state.update(Msg::Tick(Duration::from_secs(3725)));
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
    state.update(Msg::DiffLoaded(
        DiffSource::Review,
        Ok(DiffModel::from_patch(PATCH).unwrap()),
    ));
    let review = state.review.shown.as_ref().unwrap();
    let Loadable::Ready(diff) = &review.diff else {
        panic!("no diff");
    };
    let order: Vec<&str> = diff.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        order,
        vec!["NOTES.md", "slug.py"],
        "the outside file comes last"
    );
    assert_eq!(review.chosen(), vec![("NOTES.md", None)]);
    assert_eq!(review.outside_start(), Some(1));
    let text = screen(&mut state, 80, 24);
    assert!(text.contains("── outside the run ──"), "{text}");
    assert!(text.contains("[ ] M slug.py"), "{text}");
    insta::assert_snapshot!("review_outside_run_80x24", text);

    // Choosing it is the person's call; a reload (after a revert) keeps the choices.
    press(&mut state, KeyCode::Down);
    press(&mut state, KeyCode::Char(' '));
    assert_eq!(
        state.review.shown.as_ref().unwrap().chosen(),
        vec![("NOTES.md", None), ("slug.py", None)]
    );
    state.update(Msg::DiffLoaded(
        DiffSource::Review,
        Ok(DiffModel::from_patch(PATCH).unwrap()),
    ));
    assert!(state.review.shown.as_ref().unwrap().all_chosen());
}

#[test]
fn revert_asks_which_round_then_shows_the_conflict_or_the_result() {
    let mut state = finished(RunStatus::Complete, Some(verification(true)));
    assert!(press(&mut state, KeyCode::Char('u')).is_empty());
    let Some(Overlay::Revert(question)) = state.overlay() else {
        panic!("no revert question");
    };
    let rounds: Vec<u32> = question.rounds.iter().map(|(r, _)| *r).collect();
    assert_eq!(rounds, vec![2, 3], "the rounds that changed files");
    press(&mut state, KeyCode::Up);
    let small = screen(&mut state, 80, 24);
    assert!(small.contains("› round 2: slug.py"), "{small}");
    insta::assert_snapshot!("revert_question_80x24", small);
    insta::assert_snapshot!("revert_question_120x40", screen(&mut state, 120, 40));

    assert_eq!(
        press(&mut state, KeyCode::Enter),
        vec![Effect::Review(ReviewEffect::RevertRound(2))]
    );
    let refused = "round 2 cannot be reverted: slug.py hunk 1 at line 5. Nothing was changed";
    let effects = state.update(Msg::Review(ReviewResult::Reverted(2, Err(refused.into()))));
    assert!(effects.is_empty(), "nothing changed, nothing to read again");
    let text = screen(&mut state, 80, 24);
    assert!(text.contains("slug.py hunk 1 at line 5"), "{text}");
    insta::assert_snapshot!("revert_conflict_80x24", text);
    press(&mut state, KeyCode::Esc);
    assert!(state.overlay().is_none());

    press(&mut state, KeyCode::Char('u'));
    assert_eq!(
        press(&mut state, KeyCode::Char('y')),
        vec![Effect::Review(ReviewEffect::RevertRound(3))]
    );
    let effects = state.update(Msg::Review(ReviewResult::Reverted(
        3,
        Ok(vec!["slug.py".into()]),
    )));
    assert_eq!(effects, vec![Effect::LoadDiff(DiffSource::Review)]);
    assert_eq!(state.review.shown.as_ref().unwrap().diff, Loadable::Loading);
    let text = screen(&mut state, 80, 24);
    assert!(text.contains("Round 3 reverted"), "{text}");
    insta::assert_snapshot!("revert_done_80x24", text);
    // Until the new diff is read, nothing can be committed from the old one.
    press(&mut state, KeyCode::Esc);
    assert!(press(&mut state, KeyCode::Char('c')).is_empty());
    assert!(state.overlay().is_none());
}

#[test]
fn discard_lists_what_is_lost_and_asks_before_doing_it() {
    let mut state = finished(RunStatus::Complete, Some(verification(true)));
    assert!(press(&mut state, KeyCode::Char('d')).is_empty());
    let small = screen(&mut state, 80, 24);
    assert!(
        small.contains("M slug.py") && small.contains("A NOTES.md"),
        "{small}"
    );
    insta::assert_snapshot!("discard_question_80x24", small);
    insta::assert_snapshot!("discard_question_120x40", screen(&mut state, 120, 40));
    assert!(press(&mut state, KeyCode::Char('n')).is_empty());
    assert!(state.overlay().is_none(), "no keeps the changes");

    press(&mut state, KeyCode::Char('d'));
    assert_eq!(
        press(&mut state, KeyCode::Char('y')),
        vec![Effect::Review(ReviewEffect::Discard)]
    );
    assert!(state.overlay().is_none());
    let effects = state.update(Msg::Review(ReviewResult::Discarded(Ok(vec![
        "NOTES.md".into(),
        "slug.py".into(),
    ]))));
    assert_eq!(effects, vec![Effect::LoadDiff(DiffSource::Review)]);
    assert!(
        state.notice.as_deref().unwrap().contains("2 files"),
        "{:?}",
        state.notice
    );
}

#[test]
fn after_a_commit_discard_offers_only_the_files_left_out() {
    let mut state = finished(RunStatus::Complete, None);
    press(&mut state, KeyCode::Char('c'));
    ctrl(&mut state, 's');
    state.update(Msg::Review(ReviewResult::Committed(Ok(
        "abc1234567 on main".into(),
    ))));
    assert!(press(&mut state, KeyCode::Char('d')).is_empty());
    assert!(state.overlay().is_none());
    let notice = state.notice.clone().unwrap();
    assert!(notice.contains("every file was committed"), "{notice}");

    // One file left out of the commit: discard lists it alone.
    let mut state = finished(RunStatus::Complete, None);
    press(&mut state, KeyCode::Char(' '));
    press(&mut state, KeyCode::Char('c'));
    ctrl(&mut state, 's');
    state.update(Msg::Review(ReviewResult::Committed(Ok(
        "abc1234567 on main".into(),
    ))));
    press(&mut state, KeyCode::Char('d'));
    match state.overlay() {
        Some(Overlay::Discard(question)) => assert_eq!(question.files.len(), 1),
        other => panic!("no discard question: {other:?}"),
    }
}

#[test]
fn the_selected_round_stays_in_view_however_many_rounds_there_are() {
    use ralph_tui::screens::state::RoundChanges;
    let mut state = finished(RunStatus::BudgetLimited, None);
    state.changes = (1..=20)
        .map(|round| RoundChanges {
            round,
            files: vec![changed(&format!("f{round}.txt"), "added", 1, 0)],
            live: false,
            unknown: false,
        })
        .collect();
    press(&mut state, KeyCode::Char('u'));
    let text = screen(&mut state, 80, 24);
    assert!(text.contains("› round 20: f20.txt"), "{text}");
    for _ in 0..19 {
        press(&mut state, KeyCode::Up);
    }
    let text = screen(&mut state, 80, 24);
    assert!(text.contains("› round 1: f1.txt"), "{text}");
    assert!(
        text.contains("y/Enter revert it"),
        "the keys stay in view: {text}"
    );
}

/// A repository the run nested in the work tree (a gitlink in the diff): not chosen, and its
/// row says what it is in words; it is not named again under the heading of what is never
/// committed, where only its files are.
#[test]
fn snapshot_review_with_a_nested_repository_the_run_made() {
    use ralph_tui::protocol::event::FileStatus;
    use ralph_tui::workspace::{DiffLine, FileDiff, HiddenChange, HiddenWhy, Hunk, LineKind};
    let mut state = finished(RunStatus::Complete, None);
    let model = DiffModel {
        files: vec![
            FileDiff {
                insertions: 1,
                hunks: vec![Hunk {
                    header: "@@ -1 +1,2 @@".into(),
                    lines: vec![
                        DiffLine {
                            kind: LineKind::Context,
                            text: "import re".into(),
                        },
                        DiffLine {
                            kind: LineKind::Added,
                            text: "def slugify(text): ...".into(),
                        },
                    ],
                }],
                ..FileDiff::modified("slug.py".into())
            },
            FileDiff {
                status: FileStatus::Added,
                insertions: 1,
                gitlink: true,
                ..FileDiff::modified("lib/vendored".into())
            },
        ],
        hidden: vec![HiddenChange {
            path: "lib/vendored/v.txt".into(),
            status: FileStatus::Added,
            why: HiddenWhy::NestedRepo("lib/vendored".into()),
        }],
        new_repos: vec!["lib/vendored".into()],
        ..DiffModel::default()
    };
    state.update(Msg::DiffLoaded(DiffSource::Review, Ok(model)));
    let review = state.review.shown.as_ref().unwrap();
    assert_eq!(review.chosen(), vec![("slug.py", None)]);
    let text = screen(&mut state, 120, 40);
    assert!(text.contains("Changes (2) · 1 chosen"), "{text}");
    assert!(text.contains("[ ] A lib/vendored"), "{text}");
    assert!(
        text.contains("a separate git repository: its own"),
        "{text}"
    );
    assert!(text.contains("config and hooks, which git will"), "{text}");
    // Under the heading of what is never committed: its files, not the repository itself.
    assert!(
        text.contains("── not shown by git, not committed ──"),
        "{text}"
    );
    assert!(!text.contains("! new git repository"), "{text}");
    insta::assert_snapshot!("review_nested_repository_120x40", text);

    // Space on it chooses it; only then does the commit take it.
    press(&mut state, KeyCode::Down);
    press(&mut state, KeyCode::Char(' '));
    let review = state.review.shown.as_ref().unwrap();
    assert_eq!(
        review.chosen(),
        vec![("slug.py", None), ("lib/vendored", None)]
    );
    // A reload (after a revert, say) keeps the person's choice.
    let reloaded = match &review.diff {
        Loadable::Ready(d) => d.clone(),
        _ => panic!("no diff"),
    };
    state.update(Msg::DiffLoaded(DiffSource::Review, Ok(reloaded)));
    assert!(state
        .review
        .shown
        .as_ref()
        .unwrap()
        .is_chosen("lib/vendored"));
}

/// 601 files: the count says so, the last is reached by moving down and shown selected, and
/// leaving it out takes it out of the commit.
#[test]
fn every_file_of_a_long_list_is_reached_and_chosen_one_by_one() {
    use ralph_tui::workspace::FileDiff;
    let mut state = finished(RunStatus::Complete, None);
    let mut files: Vec<FileDiff> = (1..=600)
        .map(|i| FileDiff {
            insertions: 1,
            ..FileDiff::modified(format!("d/f{i:03}.txt"))
        })
        .collect();
    files.push(FileDiff {
        insertions: 2,
        ..FileDiff::modified("zz/evil.sh".into())
    });
    let model = DiffModel {
        files,
        ..DiffModel::default()
    };
    state.update(Msg::DiffLoaded(DiffSource::Review, Ok(model)));
    let text = screen(&mut state, 120, 40);
    assert!(text.contains("Changes (601) · 601 chosen"), "{text}");
    for _ in 0..600 {
        press(&mut state, KeyCode::Down);
    }
    press(&mut state, KeyCode::Char(' '));
    let text = screen(&mut state, 120, 40);
    assert!(text.contains("[ ] M zz/evil.sh"), "{text}");
    assert!(text.contains("Changes (601) · 600 chosen"), "{text}");
    assert!(
        text.contains("Diff since the run started · zz/evil.sh"),
        "{text}"
    );
    let review = state.review.shown.as_ref().unwrap();
    let chosen = review.chosen();
    assert_eq!(chosen.len(), 600);
    assert!(chosen.iter().all(|(path, _)| *path != "zz/evil.sh"));
}
