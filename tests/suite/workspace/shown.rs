//! What the review shows is what a commit records: each file's diff from the commit it goes
//! on to the content it takes, the person's uncommitted edits before the run included and
//! marked, in place and in a worktree, and for random sequences of run edits, person's edits,
//! reverts, discards, resumes and choices (a property test).

use std::collections::BTreeSet;

use proptest::prelude::*;
use ralph_tui::workspace::{worktree, DiffModel, FileDiff, Snapshot, Workspace};

use super::super::common::*;

/// The per-file view of a diff that must agree: path, status, counts and hunks.
fn files(model: &DiffModel) -> Vec<(String, String)> {
    model
        .files
        .iter()
        .map(|f| (f.path.clone(), shape(f)))
        .collect()
}

fn shape(f: &FileDiff) -> String {
    format!(
        "{:?} +{} -{} {:?}",
        f.status, f.insertions, f.deletions, f.hunks
    )
}

/// The diff HEAD's commit made, from its parent (or from nothing).
fn head_commit_diff(ws: &Workspace, repo: &std::path::Path) -> DiffModel {
    let git = git2::Repository::open(repo).unwrap();
    let head = git.head().unwrap().peel_to_commit().unwrap();
    let parent = match head.parent(0) {
        Ok(p) => p.tree_id(),
        Err(_) => git.treebuilder(None).unwrap().write().unwrap(),
    };
    ws.diff(
        &Snapshot { tree: parent },
        &Snapshot {
            tree: head.tree_id(),
        },
    )
    .unwrap()
}

const CALC: &str = "def add(a, b):\n    return a - b\n";
const CALC_FIXED: &str = "def add(a, b):\n    \"\"\"Adds.\"\"\"\n    return a + b\n";

#[test]
fn your_uncommitted_edit_in_a_file_the_run_changes_is_shown_marked_and_committed_as_shown() {
    let repo = TempRepo::new();
    repo.write("calc.py", CALC);
    repo.write("other.py", "x = 1\n");
    repo.commit_all("calc");
    // The person's own edits, not committed: one in a file the run changes, one not.
    repo.write("calc.py", &format!("# local edit\n{CALC}"));
    repo.write("other.py", "x = 2\n");
    let ws = Workspace::open(repo.path()).unwrap();
    let baseline = ws.baseline().unwrap();
    let named = ws.uncommitted(&baseline.snapshot).unwrap();
    assert_eq!(named, ["calc.py", "other.py"]);
    let warning = ralph_tui::workspace::uncommitted_warning(&named).unwrap();
    assert!(warning.contains("calc.py, other.py"), "{warning}");

    repo.write("calc.py", &format!("# local edit\n{CALC_FIXED}"));
    let now = ws.snapshot().unwrap();
    let review = ws
        .review_diff(&baseline.snapshot, &now, ws.head_tree())
        .unwrap();
    assert_eq!(
        review.files.len(),
        1,
        "other.py is not the run's: {review:?}"
    );
    let calc = &review.files[0];
    assert_eq!(calc.path, "calc.py");
    assert!(calc.yours_before, "marked as holding the person's edit");
    // Run: +2 −1; the person's line: +1.
    assert_eq!((calc.insertions, calc.deletions), (3, 1));
    assert!(review.patch.contains("+# local edit"), "{}", review.patch);

    let only: BTreeSet<String> = ["calc.py".to_string()].into();
    let done = ws
        .commit_run_only(&baseline, &now, "fix add", &only)
        .unwrap();
    assert_eq!(
        (done.files_changed, done.insertions, done.deletions),
        (1, 3, 1)
    );
    assert_eq!(files(&head_commit_diff(&ws, repo.path())), files(&review));
    assert_eq!(repo.read("other.py"), "x = 2\n", "left alone, uncommitted");
}

#[test]
fn a_file_you_had_not_changed_is_shown_from_the_baseline_and_not_marked() {
    let repo = TempRepo::new();
    repo.write("calc.py", CALC);
    repo.commit_all("calc");
    repo.write("mine.txt", "my own untracked notes\n");
    let ws = Workspace::open(repo.path()).unwrap();
    let baseline = ws.baseline().unwrap();
    repo.write("calc.py", CALC_FIXED);
    let now = ws.snapshot().unwrap();
    let review = ws
        .review_diff(&baseline.snapshot, &now, ws.head_tree())
        .unwrap();
    let plain = ws.diff(&baseline.snapshot, &now).unwrap();
    assert_eq!(files(&review), files(&plain));
    assert!(!review.files[0].yours_before);
}

#[test]
fn in_a_worktree_your_uncommitted_edit_is_shown_marked_and_committed_as_shown() {
    let repo = TempRepo::new();
    repo.write("calc.py", CALC);
    repo.commit_all("calc");
    repo.write("calc.py", &format!("# local edit\n{CALC}"));
    let data = tempfile::tempdir().unwrap();
    let info = worktree::create(repo.path(), data.path(), "yours").unwrap();
    let ws = Workspace::open(&info.path).unwrap();
    let base = ws.commit_tree(&info.snapshot).unwrap();
    std::fs::write(
        info.path.join("calc.py"),
        format!("# local edit\n{CALC_FIXED}"),
    )
    .unwrap();
    let now = ws.snapshot().unwrap();
    let review = ws
        .review_diff(&base, &now, ws.parent_tree(&info.snapshot))
        .unwrap();
    assert_eq!(review.files.len(), 1);
    assert!(review.files[0].yours_before);
    assert_eq!(
        (review.files[0].insertions, review.files[0].deletions),
        (3, 1)
    );
    let only: BTreeSet<String> = ["calc.py".to_string()].into();
    info.commit_shown("fix add", now.tree, Some(&only)).unwrap();
    let user = Workspace::open(repo.path()).unwrap();
    assert_eq!(files(&head_commit_diff(&user, repo.path())), files(&review));
}

/// One step of a run and the person around it.
#[derive(Debug, Clone)]
enum Step {
    /// The run writes file `n` (of [`NAMES`]) with variant `v`.
    RunWrite(usize, u8),
    RunDelete(usize),
    /// The review's `u` on the last round.
    Revert,
    Discard,
    /// The run stops here and is resumed: a new start whose review still begins at the first.
    Resume,
}

const NAMES: [&str; 4] = ["a.txt", "b.txt", "dir/c.txt", "new.txt"];

fn content(n: usize, v: u8) -> String {
    let mut text = String::new();
    for line in 0..6 {
        if line == usize::from(v % 6) {
            text.push_str(&format!("changed {n} {v}\n"));
        } else {
            text.push_str(&format!("line {line} of {n}\n"));
        }
    }
    text
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (0..NAMES.len(), any::<u8>()).prop_map(|(n, v)| Step::RunWrite(n, v)),
        2 => (0..NAMES.len()).prop_map(Step::RunDelete),
        1 => Just(Step::Revert),
        1 => Just(Step::Discard),
        1 => Just(Step::Resume),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// For random person's edits before the run, then run writes and deletes, reverts of the
    /// last round, discards and resumes, and a random choice of files: the commit's diff is
    /// exactly the chosen files' diffs the review showed.
    #[test]
    fn the_commit_equals_the_diff_the_review_showed(
        yours in prop::collection::vec((0..NAMES.len(), any::<u8>()), 0..3),
        steps in prop::collection::vec(step(), 1..10),
        choose in any::<u8>(),
    ) {
        let repo = TempRepo::new();
        for (n, name) in NAMES.iter().enumerate().take(3) {
            repo.write(name, &content(n, 0));
        }
        repo.commit_all("start");
        for (n, v) in &yours {
            repo.write(NAMES[*n], &content(*n, v.wrapping_add(1)));
        }
        let ws = Workspace::open(repo.path()).unwrap();
        let first = ws.baseline().unwrap();
        let mut baseline = first.clone();
        let mut round_start = ws.snapshot().unwrap();
        for step in &steps {
            match step {
                Step::RunWrite(n, v) => repo.write(NAMES[*n], &content(*n, *v)),
                Step::RunDelete(n) => {
                    let _ = std::fs::remove_file(repo.path().join(NAMES[*n]));
                }
                Step::Revert => {
                    let now = ws.snapshot().unwrap();
                    let patch = ws.diff(&round_start, &now).unwrap().patch;
                    if !patch.trim().is_empty() {
                        ws.revert_round(1, &patch).unwrap();
                    }
                }
                Step::Discard => {
                    let plan = ws.discard_plan(&baseline).unwrap();
                    ws.discard(&baseline, &plan).unwrap();
                }
                Step::Resume => {
                    // What the TUI does for a resumed run: a new baseline (HEAD, index,
                    // listing now) whose snapshot is the first start's.
                    baseline = ws.baseline().unwrap();
                    baseline.snapshot = first.snapshot;
                }
            }
            round_start = ws.snapshot().unwrap();
        }
        let now = ws.snapshot().unwrap();
        let review = ws.review_diff(&baseline.snapshot, &now, ws.head_tree()).unwrap();
        let chosen: BTreeSet<String> = review
            .files
            .iter()
            .enumerate()
            .filter(|(i, _)| choose & (1 << (i % 8)) != 0)
            .flat_map(|(_, f)| std::iter::once(f.path.clone()).chain(f.old_path.clone()))
            .collect();
        if chosen.is_empty() {
            return Ok(());
        }
        ws.commit_run_only(&baseline, &now, "run", &chosen).unwrap();
        let shown: Vec<(String, String)> = files(&review)
            .into_iter()
            .filter(|(path, _)| chosen.contains(path))
            .collect();
        prop_assert_eq!(files(&head_commit_diff(&ws, repo.path())), shown);
    }
}
