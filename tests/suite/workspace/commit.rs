//! Commit on review (exactly the cumulative diff, the index cleaned for it, refusals, identity,
//! first commit, detached HEAD) and discard to baseline.

use ralph_tui::protocol::event::FileStatus;
use ralph_tui::workspace::{Workspace, WorkspaceError};

use super::super::common::*;
use super::{files_of, git, git_state};

#[test]
fn a_repo_without_commits_snapshots_and_gets_its_first_commit() {
    let dir = tempfile::tempdir().unwrap();
    let r = git2::Repository::init(dir.path()).unwrap();
    let mut cfg = r.config().unwrap();
    cfg.set_str("user.name", "Test User").unwrap();
    cfg.set_str("user.email", "test@example.com").unwrap();
    let ws = Workspace::open(dir.path()).unwrap();
    let baseline = ws.baseline().unwrap();
    std::fs::write(dir.path().join("first.txt"), "first\n").unwrap();
    let last = ws.snapshot().unwrap();
    let diff = ws.diff(&baseline.snapshot, &last).unwrap();
    assert_eq!(
        files_of(&diff),
        vec![("first.txt".into(), FileStatus::Added)]
    );
    let done = ws.commit_run(&baseline, &last, "First commit").unwrap();
    let head = r.head().unwrap();
    assert!(head.is_branch());
    assert_eq!(head.target(), Some(done.commit));
    let commit = r.find_commit(done.commit).unwrap();
    assert_eq!(commit.parent_count(), 0);
    assert_eq!(commit.author().name(), Some("Test User"));
    let status = git(dir.path(), &["status", "--porcelain"]);
    assert_eq!(String::from_utf8_lossy(&status.stdout), "");
}

#[test]
fn commit_contains_exactly_the_cumulative_diff_and_cleans_status_for_it() {
    let repo = TempRepo::new();
    repo.write("a.txt", "a\n");
    repo.write("b.txt", "b\n");
    let start = repo.commit_all("start");
    // Dirty before the run: not the run's, so not committed.
    repo.write("mine.txt", "the person's own edit\n");
    let branch = git2::Repository::open(repo.path())
        .unwrap()
        .head()
        .unwrap()
        .shorthand()
        .map(String::from);
    let ws = Workspace::open(repo.path()).unwrap();
    let baseline = ws.baseline().unwrap();

    repo.write("a.txt", "a\nmore\n");
    std::fs::remove_file(repo.path().join("b.txt")).unwrap();
    repo.write("c/d.txt", "d\n");
    let last = ws.snapshot().unwrap();
    let cumulative = ws.diff(&baseline.snapshot, &last).unwrap();
    // `git status` rewrites the index's stat cache: not a change of what is staged.
    git(repo.path(), &["status", "--porcelain"]);

    let done = ws
        .commit_run(&baseline, &last, "Apply the run's changes\n\nBody.")
        .unwrap();
    let r = git2::Repository::open(repo.path()).unwrap();
    let commit = r.find_commit(done.commit).unwrap();
    assert_eq!(commit.parent_id(0).unwrap(), start);
    assert_eq!(commit.message(), Some("Apply the run's changes\n\nBody.\n"));
    assert_eq!(done.branch, branch);
    let committed = ralph_tui::workspace::diff::between(
        &r,
        r.find_commit(start).unwrap().tree_id(),
        commit.tree_id(),
        "",
    )
    .unwrap();
    assert_eq!(committed.files, cumulative.files);
    assert_eq!(committed.patch, cumulative.patch);
    assert_eq!(
        (done.files_changed, done.insertions, done.deletions),
        (3, 2, 1)
    );
    let status = git(repo.path(), &["status", "--porcelain"]);
    assert_eq!(String::from_utf8_lossy(&status.stdout), "?? mine.txt\n");
}

#[test]
fn commit_refuses_when_head_moved_or_the_index_changed() {
    let repo = TempRepo::new();
    let ws = Workspace::open(repo.path()).unwrap();
    let baseline = ws.baseline().unwrap();
    repo.write("run.txt", "the run's work\n");
    let last = ws.snapshot().unwrap();

    // Someone stages a file during the run.
    repo.write("staged.txt", "staged\n");
    git(repo.path(), &["add", "staged.txt"]);
    let err = ws.commit_run(&baseline, &last, "msg").unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, WorkspaceError::GitStateChanged(_)), "{err:?}");
    assert!(
        text.contains("index") && text.contains("staged.txt"),
        "{text}"
    );

    // ... and commits it: HEAD moved.
    let before = git_state(repo.path());
    repo.commit_all("moved");
    let moved = git_state(repo.path());
    assert_ne!(before, moved);
    let err = ws.commit_run(&baseline, &last, "msg").unwrap_err();
    let text = err.to_string();
    assert!(text.contains("moved from"), "{text}");
    assert!(text.contains("Nothing was committed"), "{text}");
    assert_eq!(git_state(repo.path()), moved, "a refusal writes nothing");
}

#[test]
fn commit_needs_an_identity_and_a_message_and_something_to_commit() {
    let repo = TempRepo::new();
    let ws = Workspace::open(repo.path()).unwrap();
    let baseline = ws.baseline().unwrap();
    let same = ws.snapshot().unwrap();
    assert!(matches!(
        ws.commit_run(&baseline, &same, "msg"),
        Err(WorkspaceError::NothingToCommit)
    ));
    repo.write("x.txt", "x\n");
    let last = ws.snapshot().unwrap();
    assert!(matches!(
        ws.commit_run(&baseline, &last, "  \n"),
        Err(WorkspaceError::EmptyMessage)
    ));
    // An edit made before the run that the run undoes leaves nothing new for HEAD.
    repo.write("README.md", "# edited before the run\n");
    let dirty = ws.baseline().unwrap();
    repo.write("README.md", "# demo\n");
    std::fs::remove_file(repo.path().join("x.txt")).unwrap();
    let undone = ws.snapshot().unwrap();
    assert!(matches!(
        ws.commit_run(&dirty, &undone, "msg"),
        Err(WorkspaceError::NothingToCommit)
    ));
    repo.write("x.txt", "x\n");
    if std::env::var_os("GIT_AUTHOR_NAME").is_none() {
        let r = git2::Repository::open(repo.path()).unwrap();
        r.config().unwrap().set_str("user.name", "").unwrap();
        let err = ws.commit_run(&baseline, &last, "msg").unwrap_err();
        assert!(matches!(err, WorkspaceError::NoIdentity(_)), "{err:?}");
        assert!(err.to_string().contains("user.name"), "{err}");
    }
}

#[test]
fn detached_head_commits_move_head_and_leave_branches_alone() {
    let repo = TempRepo::new();
    let r = git2::Repository::open(repo.path()).unwrap();
    let tip = r.head().unwrap().target().unwrap();
    let branch = r.head().unwrap().name().unwrap().to_string();
    r.set_head_detached(tip).unwrap();
    let ws = Workspace::open(repo.path()).unwrap();
    let baseline = ws.baseline().unwrap();
    repo.write("d.txt", "detached work\n");
    let last = ws.snapshot().unwrap();
    let done = ws
        .commit_run(&baseline, &last, "on a detached HEAD")
        .unwrap();
    assert_eq!(done.branch, None);
    assert!(r.head_detached().unwrap());
    assert_eq!(r.head().unwrap().target(), Some(done.commit));
    assert_eq!(r.refname_to_id(&branch).unwrap(), tip);
}

#[test]
fn discard_says_what_is_lost_refuses_stale_plans_and_restores_the_baseline() {
    let repo = TempRepo::new();
    repo.write("keep.txt", "original\n");
    repo.write("doomed.txt", "will be deleted by the run\n");
    repo.commit_all("start");
    let ws = Workspace::open(repo.path()).unwrap();
    let baseline = ws.baseline().unwrap();
    let state = git_state(repo.path());

    repo.write("keep.txt", "changed by the run\n");
    std::fs::remove_file(repo.path().join("doomed.txt")).unwrap();
    repo.write("new/dir/file.txt", "added by the run\n");
    let plan = ws.discard_plan(&baseline).unwrap();
    assert_eq!(
        files_of(&plan.lost),
        vec![
            ("doomed.txt".into(), FileStatus::Deleted),
            ("keep.txt".into(), FileStatus::Modified),
            ("new/dir/file.txt".into(), FileStatus::Added)
        ]
    );
    repo.write("later.txt", "written after the plan\n");
    assert!(matches!(
        ws.discard(&baseline, &plan),
        Err(WorkspaceError::WorkTreeChanged)
    ));
    std::fs::remove_file(repo.path().join("later.txt")).unwrap();

    let done = ws.discard(&baseline, &plan).unwrap();
    assert_eq!(done.len(), 3, "{done:?}");
    assert_eq!(repo.read("keep.txt"), "original\n");
    assert_eq!(repo.read("doomed.txt"), "will be deleted by the run\n");
    assert!(!repo.path().join("new").exists());
    assert_eq!(ws.snapshot().unwrap(), baseline.snapshot);
    assert_eq!(git_state(repo.path()), state);
}

#[test]
fn commit_of_chosen_files_contains_exactly_them_and_leaves_the_index_and_the_rest() {
    let repo = TempRepo::new();
    repo.write("a.txt", "a\n");
    repo.write("b.txt", "b\n");
    repo.write("c.txt", "c\n");
    let start = repo.commit_all("start");
    // Staged by the person before the run: never part of the run's commit.
    repo.write("staged.txt", "staged before the run\n");
    git(repo.path(), &["add", "staged.txt"]);
    let ws = Workspace::open(repo.path()).unwrap();
    let baseline = ws.baseline().unwrap();

    repo.write("a.txt", "a\nchanged by the run\n");
    repo.write("new/b2.txt", "added by the run\n");
    repo.write("c.txt", "c\nchanged too, not chosen\n");
    let last = ws.snapshot().unwrap();
    let index_before = git(repo.path(), &["ls-files", "--stage"]).stdout;

    // Choosing nothing is refused, not an empty commit.
    let none = std::collections::BTreeSet::new();
    let err = ws
        .commit_run_only(&baseline, &last, "none", &none)
        .unwrap_err();
    assert!(matches!(err, WorkspaceError::NothingChosen), "{err:?}");

    let chosen: std::collections::BTreeSet<String> = ["a.txt", "new/b2.txt"]
        .iter()
        .map(|p| p.to_string())
        .collect();
    let done = ws
        .commit_run_only(&baseline, &last, "Two of three", &chosen)
        .unwrap();
    assert_eq!(
        (done.files_changed, done.insertions, done.deletions),
        (2, 2, 0)
    );
    let r = git2::Repository::open(repo.path()).unwrap();
    let commit = r.find_commit(done.commit).unwrap();
    assert_eq!(commit.parent_id(0).unwrap(), start);
    let committed = ralph_tui::workspace::diff::between(
        &r,
        r.find_commit(start).unwrap().tree_id(),
        commit.tree_id(),
        "",
    )
    .unwrap();
    assert_eq!(
        files_of(&committed),
        vec![
            ("a.txt".into(), FileStatus::Modified),
            ("new/b2.txt".into(), FileStatus::Added)
        ]
    );
    // The third file is still changed in the work tree and its index entry is HEAD's; the
    // person's staged file is still staged and not committed.
    assert_eq!(repo.read("c.txt"), "c\nchanged too, not chosen\n");
    let index_after = String::from_utf8(git(repo.path(), &["ls-files", "--stage"]).stdout).unwrap();
    let index_before = String::from_utf8(index_before).unwrap();
    let unchosen = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| !l.ends_with("\ta.txt") && !l.ends_with("\tnew/b2.txt"))
            .map(String::from)
            .collect()
    };
    assert_eq!(unchosen(&index_after), unchosen(&index_before));
    assert!(index_after.contains("\tstaged.txt"), "{index_after}");
    let status = git(repo.path(), &["status", "--porcelain"]);
    assert_eq!(
        String::from_utf8_lossy(&status.stdout),
        " M c.txt\nA  staged.txt\n"
    );
}

/// A three-round scripted run editing distinct parts of `a.txt` and a file of its own each
/// round; returns the run directory.
fn three_round_run(repo: &TempRepo, tmp: &std::path::Path) -> std::path::PathBuf {
    use serde_json::json;
    let script = script(
        tmp,
        vec![
            turns(&[
                call(
                    "edit_file",
                    json!({"path": "a.txt", "old": "l1\n", "new": "L1 round one\n"}),
                ),
                call(
                    "write_file",
                    json!({"path": "r1.txt", "content": "round one\n"}),
                ),
                continue_report("round one"),
            ]),
            turns(&[
                call(
                    "edit_file",
                    json!({"path": "a.txt", "old": "l10\n", "new": "L10 round two\n"}),
                ),
                call(
                    "write_file",
                    json!({"path": "r2/new.txt", "content": "round two\n"}),
                ),
                continue_report("round two"),
            ]),
            turns(&[
                call(
                    "edit_file",
                    json!({"path": "a.txt", "old": "l20\n", "new": "L20 round three\n"}),
                ),
                call(
                    "write_file",
                    json!({"path": "r3.txt", "content": "round three\n"}),
                ),
                complete_report("round three"),
            ]),
        ],
    );
    let run_dir = tmp.join("run");
    let backend = format!("script:{}", script.display());
    let out = headless(
        repo.path(),
        &run_dir,
        &["--backend", &backend, "three rounds"],
    )
    .output()
    .unwrap();
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    run_dir
}

fn numbered_lines() -> String {
    (1..=30).map(|i| format!("l{i}\n")).collect()
}

#[test]
fn reverting_round_two_keeps_rounds_one_and_three() {
    let repo = TempRepo::new();
    repo.write("a.txt", &numbered_lines());
    repo.commit_all("start");
    let tmp = tempfile::tempdir().unwrap();
    let run_dir = three_round_run(&repo, tmp.path());
    let before = git_state(repo.path());
    let patch = std::fs::read_to_string(run_dir.join("rounds/02/diff.patch")).unwrap();

    let ws = Workspace::open(repo.path()).unwrap();
    let changed = ws.revert_round(2, &patch).unwrap();
    assert_eq!(changed, vec!["a.txt".to_string(), "r2/new.txt".to_string()]);

    let expected: String = numbered_lines()
        .replace("l1\n", "L1 round one\n")
        .replace("l20\n", "L20 round three\n");
    assert_eq!(
        repo.read("a.txt"),
        expected,
        "round 2's line is back, 1 and 3 stay"
    );
    assert!(
        !repo.path().join("r2/new.txt").exists(),
        "round 2's file is gone"
    );
    assert_eq!(repo.read("r1.txt"), "round one\n");
    assert_eq!(repo.read("r3.txt"), "round three\n");
    assert_eq!(
        git_state(repo.path()),
        before,
        "index, HEAD and refs untouched"
    );
}

#[test]
fn a_round_whose_hunks_conflict_with_a_later_edit_is_refused_naming_them() {
    let repo = TempRepo::new();
    repo.write("a.txt", &numbered_lines());
    repo.commit_all("start");
    let tmp = tempfile::tempdir().unwrap();
    let run_dir = three_round_run(&repo, tmp.path());
    // Edited after the run, over round 2's line.
    let edited = repo
        .read("a.txt")
        .replace("L10 round two\n", "L10 edited later\n");
    repo.write("a.txt", &edited);
    let ws = Workspace::open(repo.path()).unwrap();
    let snapshot = ws.snapshot().unwrap();
    let patch = std::fs::read_to_string(run_dir.join("rounds/02/diff.patch")).unwrap();

    let err = ws.revert_round(2, &patch).unwrap_err();
    let WorkspaceError::RevertConflicts { round, conflicts } = &err else {
        panic!("not refused: {err:?}");
    };
    assert_eq!(*round, 2);
    assert_eq!(conflicts, &vec!["a.txt hunk 1 at line 7".to_string()]);
    let text = err.to_string();
    assert!(
        text.contains("a.txt") && text.contains("Nothing was changed"),
        "{text}"
    );
    assert_eq!(ws.snapshot().unwrap(), snapshot, "nothing changed");
    assert_eq!(repo.read("r2/new.txt"), "round two\n");

    // Round 3 does not touch that line: it still reverts.
    let patch = std::fs::read_to_string(run_dir.join("rounds/03/diff.patch")).unwrap();
    ws.revert_round(3, &patch).unwrap();
    assert!(repo.read("a.txt").contains("l20\n"));
    assert!(repo.read("a.txt").contains("L10 edited later\n"));
    assert!(!repo.path().join("r3.txt").exists());
}

#[test]
fn a_revert_undoes_binary_mode_rename_and_deletion_changes_exactly() {
    use std::os::unix::fs::PermissionsExt;
    let repo = TempRepo::new();
    repo.write("run.sh", "echo hi\n");
    repo.write("old name.txt", &numbered_lines());
    repo.write("gone.txt", "deleted by the round\n");
    std::fs::write(repo.path().join("bin.dat"), [0u8, 1, 2, 255, 0, 9]).unwrap();
    repo.commit_all("start");
    let ws = Workspace::open(repo.path()).unwrap();
    let before = ws.snapshot().unwrap();
    let state = git_state(repo.path());

    std::fs::write(repo.path().join("bin.dat"), [0u8, 7, 7, 255, 0, 9, 1]).unwrap();
    let script = repo.path().join("run.sh");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::rename(
        repo.path().join("old name.txt"),
        repo.path().join("new name.txt"),
    )
    .unwrap();
    std::fs::remove_file(repo.path().join("gone.txt")).unwrap();
    repo.write("added.txt", "added\n");
    let after = ws.snapshot().unwrap();
    let patch = ws.diff(&before, &after).unwrap().patch;
    assert!(patch.contains("GIT binary patch"), "{patch}");
    assert!(patch.contains("rename from old name.txt"), "{patch}");

    ws.revert_round(1, &patch).unwrap();
    assert_eq!(
        ws.snapshot().unwrap(),
        before,
        "the work tree is as before the round"
    );
    assert_eq!(git_state(repo.path()), state);
}

/// Round 2 added `r2/new.txt`; later `r2` became a symlink to a directory outside holding a
/// `new.txt` with the same content. Reverting round 2 would delete that outside file through
/// the link: it is refused, naming the link, and nothing changes.
#[test]
fn a_revert_never_goes_through_a_symlinked_directory() {
    let repo = TempRepo::new();
    repo.write("a.txt", &numbered_lines());
    repo.commit_all("start");
    let tmp = tempfile::tempdir().unwrap();
    let run_dir = three_round_run(&repo, tmp.path());
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("new.txt"), "round two\n").unwrap();
    std::fs::remove_dir_all(repo.path().join("r2")).unwrap();
    std::os::unix::fs::symlink(outside.path(), repo.path().join("r2")).unwrap();
    let a_before = repo.read("a.txt");
    let patch = std::fs::read_to_string(run_dir.join("rounds/02/diff.patch")).unwrap();

    let ws = Workspace::open(repo.path()).unwrap();
    let err = ws.revert_round(2, &patch).unwrap_err();
    let WorkspaceError::RevertConflicts { conflicts, .. } = &err else {
        panic!("not refused: {err:?}");
    };
    assert_eq!(
        conflicts,
        &vec!["r2/new.txt: r2 is now a symlink or not a directory".to_string()]
    );
    assert_eq!(
        std::fs::read_to_string(outside.path().join("new.txt")).unwrap(),
        "round two\n"
    );
    assert_eq!(repo.read("a.txt"), a_before, "nothing changed");
}

/// `d/x.txt` is tracked and `d` ignored; the run swapped `d` for a symlink to a directory
/// outside. Discarding would restore `d/x.txt` through the link, writing outside the work
/// tree: refused, naming the link, and nothing changes.
#[test]
fn a_discard_never_goes_through_a_symlinked_directory() {
    let repo = TempRepo::new();
    repo.write("d/x.txt", "tracked\n");
    repo.commit_all("tracked d/x.txt");
    repo.write(".gitignore", "d\n");
    repo.commit_all("ignore d");
    let ws = Workspace::open(repo.path()).unwrap();
    let baseline = ws.baseline().unwrap();
    repo.write("added.txt", "added by the run\n");
    let outside = tempfile::tempdir().unwrap();
    std::fs::remove_dir_all(repo.path().join("d")).unwrap();
    std::os::unix::fs::symlink(outside.path(), repo.path().join("d")).unwrap();
    let plan = ws.discard_plan(&baseline).unwrap();

    let err = ws.discard(&baseline, &plan).unwrap_err();
    assert!(
        matches!(&err, WorkspaceError::ThroughSymlink { path, .. } if path == "d/x.txt"),
        "{err:?}"
    );
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    assert_eq!(
        repo.read("added.txt"),
        "added by the run\n",
        "nothing changed"
    );
}

/// A work tree where, after the baseline, a.txt was written and `lib/vendored` became a
/// repository of its own with a commit; its workspace, baseline and last snapshot.
fn with_nested_repository() -> (
    TempRepo,
    Workspace,
    ralph_tui::workspace::Baseline,
    ralph_tui::workspace::Snapshot,
) {
    let repo = TempRepo::new();
    let ws = Workspace::open(repo.path()).unwrap();
    let baseline = ws.baseline().unwrap();
    let nested = repo.path().join("lib/vendored");
    git2::Repository::init(&nested).unwrap();
    std::fs::write(nested.join("v.txt"), "v\n").unwrap();
    let identity = ["-c", "user.name=T", "-c", "user.email=t@example.com"];
    git(&nested, &[&identity[..], &["add", "-A"]].concat());
    git(&nested, &[&identity[..], &["commit", "-qm", "v"]].concat());
    repo.write("a.txt", "a\n");
    let last = ws.snapshot().unwrap();
    (repo, ws, baseline, last)
}

/// The mode of `path` in HEAD's tree of `repo`, `None` when it is not there.
fn head_mode(repo: &TempRepo, path: &str) -> Option<i32> {
    let r = git2::Repository::open(repo.path()).unwrap();
    let tree = r.head().unwrap().peel_to_tree().unwrap();
    tree.get_path(std::path::Path::new(path))
        .ok()
        .map(|e| e.filemode())
}

/// A repository nested in the work tree is a gitlink in the diff (marked so); `commit_run`
/// leaves it out, and `commit_run_only` takes it only when it is named.
#[test]
fn a_nested_repository_is_committed_only_when_named() {
    let (repo, ws, baseline, last) = with_nested_repository();
    let diff = ws.diff(&baseline.snapshot, &last).unwrap();
    let marked: Vec<(&str, bool)> = diff
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.gitlink))
        .collect();
    assert_eq!(marked, [("a.txt", false), ("lib/vendored", true)]);
    ws.commit_run(&baseline, &last, "everything but the gitlink")
        .unwrap();
    assert_eq!(head_mode(&repo, "a.txt"), Some(0o100644));
    assert_eq!(head_mode(&repo, "lib/vendored"), None);
    let index = git2::Repository::open(repo.path())
        .unwrap()
        .index()
        .unwrap();
    assert!(index
        .get_path(std::path::Path::new("lib/vendored"), 0)
        .is_none());

    let (repo, ws, baseline, last) = with_nested_repository();
    let only = ["a.txt".to_string()].into_iter().collect();
    ws.commit_run_only(&baseline, &last, "a.txt alone", &only)
        .unwrap();
    assert_eq!(head_mode(&repo, "lib/vendored"), None);

    let (repo, ws, baseline, last) = with_nested_repository();
    let only = ["lib/vendored".to_string()].into_iter().collect();
    ws.commit_run_only(&baseline, &last, "the gitlink, named", &only)
        .unwrap();
    assert_eq!(head_mode(&repo, "lib/vendored"), Some(0o160000));
    assert_eq!(head_mode(&repo, "a.txt"), None);
}
