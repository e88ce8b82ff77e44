//! The review's actions in sequence, through the real event loop and the real engine (script
//! backend): what apply and commit take is exactly what the review shows — the work after any
//! revert or discard, limited to the chosen files — never the branch's commits, which still
//! hold what the review undid. Each sequence runs in a worktree run and in place; then the
//! actions on a run whose worktree is gone, and the files left out of a commit.

use std::path::Path;
use std::time::Duration;

use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use ralph_tui::screens::model::{CommitState, Loadable};
use ralph_tui::screens::state::Overlay;
use ralph_tui::screens::{Phase, State, Theme};
use ralph_tui::terminal::event_loop::{self, Ended};
use ralph_tui::terminal::setup_of;
use ralph_tui::workspace::WorktreeInfo;
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use super::common::*;

/// One step: the keys, then what the state shows once they took effect.
pub(super) struct Step {
    pub(super) keys: Vec<KeyEvent>,
    pub(super) until: Box<dyn Fn(&State) -> bool>,
}

pub(super) fn ch(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
}

fn esc() -> KeyEvent {
    KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE)
}

fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

pub(super) fn ready(state: &State) -> bool {
    state
        .review
        .shown
        .as_ref()
        .is_some_and(|r| matches!(r.diff, Loadable::Ready(_)))
}

fn notice_starts(state: &State, start: &str) -> bool {
    state
        .notice
        .as_deref()
        .is_some_and(|n| n.starts_with(start))
}

pub(super) fn files_listed(state: &State) -> Vec<String> {
    match state.review.shown.as_ref().map(|r| &r.diff) {
        Some(Loadable::Ready(diff)) => diff.files.iter().map(|f| f.path.clone()).collect(),
        _ => Vec::new(),
    }
}

/// `u`, the round (the last one is selected; `up` moves to earlier ones), `y`; then Esc once
/// the result is in and the review's diff was read again.
fn revert(up: usize) -> Step {
    let mut keys = vec![ch('u')];
    keys.extend(std::iter::repeat_n(ch('k'), up));
    keys.push(ch('y'));
    Step {
        keys,
        until: Box::new(|s| {
            let done = s.overlays.iter().any(|o| {
                matches!(o, Overlay::Revert(q)
                    if matches!(q.step, ralph_tui::screens::views::revert::RevertStep::Done(_, Ok(_))))
            });
            done && ready(s)
        }),
    }
}

fn close() -> Step {
    Step {
        keys: vec![esc()],
        until: Box::new(|s| s.overlays.is_empty()),
    }
}

fn discard() -> Step {
    Step {
        keys: vec![ch('d'), ch('y')],
        until: Box::new(|s| notice_starts(s, "discarded") && ready(s)),
    }
}

fn apply() -> Step {
    Step {
        keys: vec![ch('A')],
        until: Box::new(|s| {
            ["applied", "nothing to apply", "not done"]
                .iter()
                .any(|start| notice_starts(s, start))
        }),
    }
}

pub(super) fn commit() -> Step {
    Step {
        keys: vec![ch('c'), ctrl('s')],
        until: Box::new(|s| {
            s.review
                .shown
                .as_ref()
                .is_some_and(|r| matches!(r.commit, CommitState::Done(_) | CommitState::Failed(_)))
        }),
    }
}

/// A key whose answer is a notice starting with `start`.
fn answered(key: KeyEvent, start: &'static str) -> Step {
    Step {
        keys: vec![key],
        until: Box::new(move |s| notice_starts(s, start)),
    }
}

/// Two rounds, four files: round 1 adds a.txt; round 2 edits README.md and adds notes.txt
/// and CHANGELOG.md.
fn two_rounds(dir: &Path) -> std::path::PathBuf {
    script(
        dir,
        vec![
            turns(&[
                write_file_call("a.txt", "round one\n"),
                continue_report("round one: a.txt"),
            ]),
            turns(&[
                write_file_call("README.md", "# demo\nround two\n"),
                write_file_call("notes.txt", "notes\n"),
                write_file_call("CHANGELOG.md", "changes\n"),
                complete_report("round two: three files"),
            ]),
        ],
    )
}

/// What a review session left: how it ended, every notice it showed, the worktree record.
pub(super) struct Session {
    ended: Ended,
    pub(super) notices: Vec<String>,
    worktree: Option<WorktreeInfo>,
    /// The review's warnings at the last frame.
    warnings: Vec<String>,
    /// Holds the run directory (`run`), config, data and cache.
    tmp: tempfile::TempDir,
}

impl Session {
    /// One of the notices the session showed starts with `start`.
    fn assert_noticed(&self, start: &str) {
        assert!(
            self.notices.iter().any(|n| n.starts_with(start)),
            "{:?}",
            self.notices
        );
    }
}

/// Runs the two-round script (in a worktree when `worktree`), waits for the review, performs
/// `steps` one after the other, then quits.
fn session(repo: &TempRepo, worktree: bool, steps: Vec<Step>) -> Session {
    session_with(repo, worktree, "", steps)
}

/// [`session`] with `config` as the run's config.toml.
fn session_with(repo: &TempRepo, worktree: bool, config: &str, steps: Vec<Step>) -> Session {
    let extra: &[&str] = if worktree { &["--worktree"] } else { &[] };
    session_of(repo, config, &two_rounds, extra, steps)
}

/// A review session of the script `script` writes into its directory, run with the options
/// `extra` (`--worktree` makes it a worktree run) and `config` as its config.toml.
pub(super) fn session_of(
    repo: &TempRepo,
    config: &str,
    script: &dyn Fn(&Path) -> std::path::PathBuf,
    extra: &[&str],
    steps: Vec<Step>,
) -> Session {
    let worktree = extra.contains(&"--worktree");
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("config")).unwrap();
    std::fs::write(tmp.path().join("config").join("config.toml"), config).unwrap();
    let script = script(tmp.path());
    let settings = script_settings(repo.path(), tmp.path(), &script, extra, "four files");
    let prepared = ralph_tui::app::isolate(ralph_tui::app::prepare(&settings).unwrap()).unwrap();
    let info = prepared.worktree.clone();
    assert_eq!(info.is_some(), worktree);
    let state = State::new(
        setup_of(&prepared),
        settings.objective.clone(),
        Theme::default(),
    );
    let (keys, input) = futures::channel::mpsc::unbounded::<std::io::Result<TermEvent>>();
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut notices = Vec::new();
    let mut warnings = Vec::new();
    let mut at = 0;
    let mut sent = false;
    let mut quit = false;
    let total = steps.len();
    let on_frame = &mut |state: &State| {
        if let Some(n) = &state.notice {
            if notices.last() != Some(n) {
                notices.push(n.clone());
            }
        }
        if let Some(review) = &state.review.shown {
            warnings.clone_from(&review.warnings);
        }
        if state.phase != Phase::Finished || (at == 0 && !sent && !ready(state)) {
            return;
        }
        while at < total {
            if !sent {
                for key in &steps[at].keys {
                    keys.unbounded_send(Ok(TermEvent::Key(*key))).unwrap();
                }
                sent = true;
                // Keys bring a frame of their own; a step without keys looks now.
                if !steps[at].keys.is_empty() {
                    return;
                }
            }
            if !(steps[at].until)(state) {
                return;
            }
            at += 1;
            sent = false;
        }
        if !quit {
            quit = true;
            keys.unbounded_send(Ok(TermEvent::Key(ch('q')))).unwrap();
        }
    };
    let ended = runtime.block_on(async {
        tokio::time::timeout(
            Duration::from_secs(120),
            event_loop::drive(&mut terminal, input, state, prepared, on_frame),
        )
        .await
    });
    let ended =
        ended.unwrap_or_else(|_| panic!("stuck at step {at} of {total}; notices {notices:?}"));
    runtime.shutdown_background();
    Session {
        ended,
        notices,
        worktree: info,
        warnings,
        tmp,
    }
}

fn exists(repo: &TempRepo, path: &str) -> bool {
    repo.path().join(path).exists()
}

pub(super) fn head_files(repo: &TempRepo) -> Vec<String> {
    let r = git2::Repository::open(repo.path()).unwrap();
    let tree = r.head().unwrap().peel_to_tree().unwrap();
    let mut out = Vec::new();
    tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
        out.push(format!("{dir}{}", entry.name().unwrap()));
        git2::TreeWalkResult::Ok
    })
    .unwrap();
    out.sort();
    out
}

fn head_message(repo: &TempRepo) -> String {
    let r = git2::Repository::open(repo.path()).unwrap();
    let head = r.head().unwrap().peel_to_commit().unwrap();
    head.message().unwrap().to_string()
}

pub(super) fn status(repo: &TempRepo) -> String {
    let out = std::process::Command::new("git")
        .args(["status", "--porcelain", "-uall"])
        .current_dir(repo.path())
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap()
}

/// Round 2 undone: only round 1's a.txt is left of the run.
fn assert_round_two_absent(repo: &TempRepo) {
    assert_eq!(repo.read("README.md"), "# demo\n");
    assert!(
        !exists(repo, "notes.txt"),
        "the reverted round's notes.txt came back"
    );
    assert!(
        !exists(repo, "CHANGELOG.md"),
        "the reverted round's CHANGELOG.md came back"
    );
}

fn assert_untouched(repo: &TempRepo) {
    assert_round_two_absent(repo);
    assert!(!exists(repo, "a.txt"));
    assert_eq!(status(repo), "");
}

#[test]
fn worktree_revert_then_apply_applies_only_what_is_left() {
    let repo = TempRepo::new();
    let s = session(&repo, true, vec![revert(0), close(), apply()]);
    s.assert_noticed("applied 1 file to");
    assert_eq!(repo.read("a.txt"), "round one\n");
    assert_round_two_absent(&repo);
    // The branch is kept, as apply says.
    let info = s.worktree.unwrap();
    assert!(info.is_left());
    // The exit line says the changes are applied and how to remove the kept branch, and
    // never suggests applying them a second time.
    let message = s.ended.message.unwrap();
    assert!(message.contains("applied to your work tree"), "{message}");
    assert!(
        message.contains(&format!("the branch {} is kept", info.branch)),
        "{message}"
    );
    assert!(message.contains("ralph-tui runs --prune"), "{message}");
    assert!(!message.contains("git apply"), "{message}");
}

#[test]
fn worktree_discard_then_apply_applies_nothing() {
    let repo = TempRepo::new();
    let s = session(&repo, true, vec![discard(), apply()]);
    s.assert_noticed("nothing to apply");
    assert_untouched(&repo);
    // Nothing was applied: the exit line says how to get the kept branch's work later.
    let info = s.worktree.unwrap();
    let message = s.ended.message.unwrap();
    assert!(message.contains("kept on branch ralph/"), "{message}");
    assert!(
        message.contains("snapshot of your uncommitted files"),
        "{message}"
    );
    let snap = &info.snapshot[..10];
    assert!(
        message.contains(&format!(
            "git diff {snap} {} | git apply --3way",
            info.branch
        )),
        "{message}"
    );
}

#[test]
fn worktree_revert_then_commit_commits_and_leaves_nothing_of_the_reverted_round() {
    let repo = TempRepo::new();
    let s = session(&repo, true, vec![revert(0), close(), commit()]);
    assert_eq!(head_files(&repo), vec!["README.md", "a.txt"]);
    assert_round_two_absent(&repo);
    assert_eq!(status(&repo), "", "left uncommitted in the checkout");
    let info = s.worktree.unwrap();
    assert!(
        !info.is_left(),
        "the worktree and branch stay after the commit"
    );
    let message = s.ended.message.unwrap();
    assert!(
        message.contains("removed the worktree and the branch"),
        "{message}"
    );
}

#[test]
fn worktree_revert_revert_then_apply_applies_nothing() {
    let repo = TempRepo::new();
    let s = session(
        &repo,
        true,
        vec![revert(0), close(), revert(1), close(), apply()],
    );
    s.assert_noticed("nothing to apply");
    assert_untouched(&repo);
}

#[test]
fn worktree_discard_then_commit_commits_nothing() {
    let repo = TempRepo::new();
    let head = head_message(&repo);
    let s = session(
        &repo,
        true,
        vec![discard(), answered(ch('c'), "nothing to commit")],
    );
    assert_eq!(head_message(&repo), head);
    assert_untouched(&repo);
    assert!(s.worktree.unwrap().is_left());
}

#[test]
fn in_place_revert_then_leave_keeps_only_what_is_left() {
    let repo = TempRepo::new();
    session(&repo, false, vec![revert(0), close()]);
    assert_eq!(repo.read("a.txt"), "round one\n");
    assert_round_two_absent(&repo);
}

#[test]
fn in_place_discard_leaves_the_work_tree_as_the_run_found_it() {
    let repo = TempRepo::new();
    session(&repo, false, vec![discard()]);
    assert_untouched(&repo);
}

#[test]
fn in_place_revert_then_commit_commits_only_what_is_left() {
    let repo = TempRepo::new();
    session(&repo, false, vec![revert(0), close(), commit()]);
    assert_eq!(head_files(&repo), vec!["README.md", "a.txt"]);
    assert_round_two_absent(&repo);
    assert_eq!(status(&repo), "");
}

#[test]
fn in_place_revert_revert_leaves_nothing() {
    let repo = TempRepo::new();
    session(&repo, false, vec![revert(0), close(), revert(1), close()]);
    assert_untouched(&repo);
}

#[test]
fn in_place_discard_then_commit_commits_nothing() {
    let repo = TempRepo::new();
    let head = head_message(&repo);
    session(
        &repo,
        false,
        vec![discard(), answered(ch('c'), "nothing to commit")],
    );
    assert_eq!(head_message(&repo), head);
    assert_untouched(&repo);
}

/// Every notice is one line of words, never git's raw error.
fn assert_no_raw_git(notices: &[String]) {
    for n in notices {
        assert!(!n.contains("class="), "{n}");
        assert!(!n.contains("code="), "{n}");
        assert!(!n.contains('\n'), "{n}");
    }
}

#[test]
fn after_the_worktree_is_removed_only_quit_acts_and_the_review_says_what_went() {
    let repo = TempRepo::new();
    let gone = "the worktree and the branch ralph/";
    let s = session(
        &repo,
        true,
        vec![
            answered(ch('X'), "X again removes"),
            answered(ch('X'), "removed the worktree and the branch"),
            answered(ch('A'), gone),
            answered(ch('c'), gone),
            answered(ch('u'), gone),
            answered(ch('d'), gone),
            answered(ch(' '), gone),
        ],
    );
    assert_no_raw_git(&s.notices);
    assert_untouched(&repo);
    assert!(!s.worktree.as_ref().unwrap().is_left());
    // Nothing of the run is kept: show says no "kept" line.
    let text = shown(&s);
    assert!(!text.contains("review: kept"), "{text}");
    let message = s.ended.message.unwrap();
    assert!(
        message.contains("the worktree and the branch ralph/"),
        "{message}"
    );
    assert!(message.contains("were removed"), "{message}");
    assert!(!message.contains("worked on branch"), "{message}");
}

/// Moves down `index` files from the first and toggles that one.
fn toggle(index: usize) -> Step {
    let mut keys: Vec<KeyEvent> = std::iter::repeat_n(ch('j'), index).collect();
    keys.push(ch(' '));
    Step {
        keys,
        until: Box::new(|s| {
            s.review.shown.as_ref().is_some_and(|r| {
                r.left_out.len() == 1 && files_listed(s).contains(&"notes.txt".to_string())
            })
        }),
    }
}

fn discard_left_out() -> Step {
    Step {
        keys: vec![ch('d'), ch('y')],
        until: Box::new(|s| notice_starts(s, "discarded") && ready(s)),
    }
}

fn left_out_then_discarded(worktree: bool) {
    let repo = TempRepo::new();
    let s = session(
        &repo,
        worktree,
        vec![toggle(index_of_notes()), commit(), discard_left_out()],
    );
    assert_no_raw_git(&s.notices);
    let committed = head_files(&repo);
    assert!(
        committed.contains(&"CHANGELOG.md".to_string()),
        "{committed:?}"
    );
    assert!(
        !committed.contains(&"notes.txt".to_string()),
        "{committed:?}"
    );
    assert!(
        !exists(&repo, "notes.txt"),
        "the file left out was not discarded"
    );
    assert_eq!(repo.read("CHANGELOG.md"), "changes\n");
    assert_eq!(status(&repo), "");
}

/// The review lists the run's files in path order: CHANGELOG.md, README.md, a.txt, notes.txt.
fn index_of_notes() -> usize {
    3
}

#[test]
fn after_an_in_place_commit_the_files_left_out_can_be_discarded() {
    left_out_then_discarded(false);
}

#[test]
fn after_a_worktree_commit_the_files_left_out_can_be_discarded() {
    left_out_then_discarded(true);
}

#[test]
fn after_a_worktree_commit_the_files_left_out_can_be_kept() {
    let repo = TempRepo::new();
    let s = session(&repo, true, vec![toggle(index_of_notes()), commit()]);
    assert_no_raw_git(&s.notices);
    assert_eq!(repo.read("notes.txt"), "notes\n");
    assert_eq!(status(&repo), "?? notes.txt\n");
}

#[test]
fn a_failing_on_finish_hook_is_shown_in_the_review() {
    let repo = TempRepo::new();
    let config = "[hooks]\non_finish = { command = \"exit 5\", sandbox = \"off\" }\n";
    let s = session_with(
        &repo,
        false,
        config,
        vec![Step {
            keys: Vec::new(),
            until: Box::new(|s| {
                s.review
                    .shown
                    .as_ref()
                    .is_some_and(|r| r.warnings.iter().any(|w| w.contains("on_finish")))
            }),
        }],
    );
    let warning = s.warnings.iter().find(|w| w.starts_with("hook on_finish"));
    assert!(
        warning.is_some_and(|w| w.contains("failed with exit code 5")),
        "{:?}",
        s.warnings
    );
    s.assert_noticed("warning: hook on_finish");
}

/// `ralph-tui show` for a reviewed run.
fn shown(s: &Session) -> String {
    let dirs = ralph_tui::config::Dirs {
        config: s.tmp.path().join("config"),
        data: s.tmp.path().join("data"),
        cache: s.tmp.path().join("cache"),
    };
    ralph_tui::runs::history::show(&s.tmp.path().join("run"), &dirs).unwrap()
}

#[test]
fn show_says_what_happened_at_the_review_of_a_worktree_run() {
    let repo = TempRepo::new();
    let s = session(&repo, true, vec![revert(0), close(), apply()]);
    let text = shown(&s);
    let info = s.worktree.as_ref().unwrap();
    let top = repo.path().canonicalize().unwrap();
    let review: Vec<&str> = text.lines().filter(|l| l.starts_with("review: ")).collect();
    assert_eq!(review.len(), 3, "{text}");
    assert!(
        review[0].starts_with("review: reverted round 2: "),
        "{text}"
    );
    assert!(review[1].starts_with("review: applied 1 file to"), "{text}");
    assert!(
        review[2].starts_with(&format!("review: kept the branch {}", info.branch)),
        "{text}"
    );
    super::worktree::assert_show_names_the_kept_worktree(&text, &top, &info.branch);
    // Applied: the quit line does not suggest applying the branch a second time.
    let message = s.ended.message.as_deref().unwrap();
    assert!(!message.contains("git apply"), "{message}");
    assert!(message.contains("applied to your work tree"), "{message}");
}

#[test]
fn show_says_what_happened_at_the_review_in_place() {
    let repo = TempRepo::new();
    let s = session(&repo, false, vec![discard()]);
    let text = shown(&s);
    let review: Vec<&str> = text.lines().filter(|l| l.starts_with("review: ")).collect();
    assert_eq!(review.len(), 1, "{text}");
    assert!(review[0].starts_with("review: discarded 4 files"), "{text}");
    let repo = TempRepo::new();
    let s = session(&repo, false, vec![toggle(index_of_notes()), commit()]);
    let text = shown(&s);
    let review: Vec<&str> = text.lines().filter(|l| l.starts_with("review: ")).collect();
    assert_eq!(review.len(), 2, "{text}");
    assert!(review[0].starts_with("review: committed "), "{text}");
    assert_eq!(
        review[1],
        "review: kept 1 file uncommitted in the work tree"
    );
}

mod screens {
    use crossterm::event::KeyCode;
    use ralph_tui::protocol::event::RunStatus;
    use ralph_tui::screens::model::{ReviewResult, WorktreeAction};
    use ralph_tui::screens::Msg;

    use crate::suite::ui::fixtures::*;

    #[test]
    fn snapshot_review_after_the_worktree_was_removed() {
        let mut state = finished(RunStatus::Complete, Some(verification(true)));
        state.setup.worktree = Some("ralph/20260101-090000-1a2b".into());
        state.update(Msg::Review(ReviewResult::WorktreeDone(
            WorktreeAction::Discard,
            Ok("removed the worktree and the branch ralph/20260101-090000-1a2b".into()),
        )));
        // A key that only looks clears the notice: the status line says what was removed.
        press(&mut state, KeyCode::Down);
        let text = screen(&mut state, 100, 30);
        assert!(text.contains("removed · q quit"), "{text}");
        insta::assert_snapshot!("review_worktree_removed_100x30", text);
    }

    #[test]
    fn after_x_x_nothing_is_listed_chosen_or_said_to_be_kept() {
        let mut state = finished(RunStatus::Complete, Some(verification(true)));
        state.setup.worktree = Some("ralph/20260101-090000-1a2b".into());
        state.update(Msg::Review(ReviewResult::WorktreeDone(
            WorktreeAction::Discard,
            Ok("removed the worktree and the branch ralph/20260101-090000-1a2b".into()),
        )));
        let text = screen(&mut state, 120, 40);
        assert!(!text.contains("[x]"), "{text}");
        assert!(text.contains("Changes (0) · 0 chosen"), "{text}");
        assert!(!text.contains("the run changed no files"), "{text}");
        assert!(text.contains("nothing of the run is left"), "{text}");
        let review = state.review.shown.as_ref().unwrap();
        assert_eq!(review.listed_left_out(), 0);
    }

    #[test]
    fn after_a_discard_the_pane_says_what_was_discarded() {
        let mut state = finished(RunStatus::Complete, Some(verification(true)));
        let effects = state.update(Msg::Review(ReviewResult::Discarded(Ok(vec![
            "slug.py".into()
        ]))));
        assert_eq!(
            effects,
            vec![ralph_tui::screens::model::Effect::LoadDiff(
                ralph_tui::screens::model::DiffSource::Review
            )]
        );
        state.update(Msg::DiffLoaded(
            ralph_tui::screens::model::DiffSource::Review,
            Ok(ralph_tui::workspace::DiffModel::default()),
        ));
        let text = screen(&mut state, 120, 40);
        assert!(!text.contains("the run changed no files"), "{text}");
        assert!(
            text.contains("you discarded the run's changes to 1"),
            "{text}"
        );
        assert!(text.contains("file: slug.py"), "{text}");
    }

    #[test]
    fn after_reverting_the_last_round_the_commit_message_describes_what_is_left() {
        let mut state = finished(RunStatus::Complete, Some(verification(true)));
        let before = state.review.commit_message(&state.review_shared());
        assert!(before.starts_with("slugify is implemented"), "{before}");
        state.update(Msg::Review(ReviewResult::Reverted(
            3,
            Ok(vec!["slug.py".into()]),
        )));
        let after = state.review.commit_message(&state.review_shared());
        assert!(!after.contains("slugify is implemented"), "{after}");
        // The newest report of a round still in the work tree: round 2's.
        let round_two = match state.reports.iter().rev().find(|e| e.round() == 2) {
            Some(ralph_tui::screens::model::ReportEntry::Accepted { report, .. }) => {
                report.summary.clone()
            }
            other => panic!("round 2 has no accepted report: {other:?}"),
        };
        assert!(after.starts_with(&round_two), "{after}");
        assert!(
            after.contains("Reverted in the review: round 3."),
            "{after}"
        );
        // A revert that failed reverts nothing.
        let mut state = finished(RunStatus::Complete, Some(verification(true)));
        state.update(Msg::Review(ReviewResult::Reverted(
            3,
            Err("conflict".into()),
        )));
        assert_eq!(state.review.commit_message(&state.review_shared()), before);
    }

    #[test]
    fn a_cancelled_runs_exit_line_has_the_resume_command_the_review_showed() {
        let state = finished(RunStatus::Cancelled, None);
        let review = state.review.shown.as_ref().unwrap();
        let command =
            ralph_tui::screens::review::resume_command(&state.review_shared(), review).unwrap();
        let line = ralph_tui::terminal::event_loop::farewell(&state, None);
        assert!(
            line.contains(&format!("continue it with `{command}`")),
            "{line}"
        );
        let state = finished(RunStatus::Complete, None);
        let line = ralph_tui::terminal::event_loop::farewell(&state, None);
        assert!(!line.contains("--resume"), "{line}");
    }

    #[test]
    fn snapshot_review_after_a_commit_that_left_a_file_out() {
        let mut state = finished(RunStatus::Complete, Some(verification(true)));
        let review = state.review.shown.as_mut().unwrap();
        let first = match &review.diff {
            ralph_tui::screens::model::Loadable::Ready(d) => d.files[0].path.clone(),
            _ => panic!("no diff"),
        };
        review.left_out.insert(first);
        state.update(Msg::Review(ReviewResult::Committed(Ok(
            "0123456789 on main (1 file +3 −2)".into(),
        ))));
        press(&mut state, KeyCode::Down);
        let text = screen(&mut state, 100, 30);
        assert!(text.contains("left out: d discard them"), "{text}");
        insta::assert_snapshot!("review_committed_left_out_100x30", text);
    }

    #[test]
    fn the_commit_editor_opens_with_the_cursor_at_the_end() {
        let mut state = finished(RunStatus::Complete, None);
        press(&mut state, KeyCode::Char('c'));
        let Some(ralph_tui::screens::state::Overlay::Commit(editor)) = state.overlay() else {
            panic!("no commit editor");
        };
        let lines = editor.lines();
        let last = lines.len() - 1;
        assert!(!lines[last].is_empty() || last > 0, "{lines:?}");
        assert_eq!(
            editor.editor.cursor(),
            (last, lines[last].chars().count()),
            "{lines:?}"
        );
    }

    #[test]
    fn the_exit_line_uses_the_reviews_words_when_verify_passed() {
        let mut state = finished(RunStatus::Complete, Some(verification(true)));
        let line = ralph_tui::terminal::event_loop::farewell(&state, None);
        assert!(line.contains("verify passed (exit 0)"), "{line}");
        assert!(!line.contains("not independently verified"), "{line}");
        let review = ralph_tui::screens::review::outcome_text(state.review.shown.as_ref().unwrap());
        let claim = review.split_once(": ").unwrap().1;
        assert!(line.contains(claim), "{line} / {review}");
        // Without --verify the claim still says it is not verified.
        state.review.shown.as_mut().unwrap().verification = None;
        let line = ralph_tui::terminal::event_loop::farewell(&state, None);
        assert!(line.contains("not independently verified"), "{line}");
    }
}
