//! Workspace memory: snapshots that leave the user's git state byte-identical (here, also
//! through a whole headless run), per-round and cumulative diffs (`diffs`), repositories as
//! people have them (`repos`), commit on review and discard (`commit`), and the live watcher
//! (`watch`).

mod attribution;
mod commit;
mod deep;
mod diffs;
mod large;
mod race;
mod repos;
mod shown;
mod watch;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use ralph_tui::protocol::event::FileStatus;
use ralph_tui::workspace::{DiffModel, Workspace};
use serde_json::json;

use super::common::*;

/// Every file under `.git` except the object store, by path: index, HEAD, refs, logs, stash,
/// config. Snapshots may add objects; nothing else may change.
pub(super) fn git_state(repo: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(dir: &Path, base: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(base).unwrap().to_path_buf();
            if rel.starts_with("objects") {
                continue;
            }
            if path.is_dir() {
                walk(&path, base, out);
            } else {
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    let git = repo.join(".git");
    let mut out = BTreeMap::new();
    walk(&git, &git, &mut out);
    out
}

/// Runs git with no user or system config in the way.
pub(super) fn git(dir: &Path, args: &[&str]) -> std::process::Output {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

pub(super) fn files_of(diff: &DiffModel) -> Vec<(String, FileStatus)> {
    diff.files
        .iter()
        .map(|f| (f.path.clone(), f.status))
        .collect()
}

/// Applies `patch` with `git apply` to a fresh clone of `origin` and checks the clone's work
/// tree then snapshots to the same tree as `expected`.
pub(super) fn assert_patch_reproduces(origin: &Path, patch: &str, expected: git2::Oid) {
    let tmp = tempfile::tempdir().unwrap();
    let clone = tmp.path().join("clone");
    git(
        tmp.path(),
        &[
            "clone",
            "-q",
            origin.to_str().unwrap(),
            clone.to_str().unwrap(),
        ],
    );
    let patch_file = tmp.path().join("diff.patch");
    std::fs::write(&patch_file, patch).unwrap();
    git(&clone, &["apply", patch_file.to_str().unwrap()]);
    let snap = Workspace::open(&clone).unwrap().snapshot().unwrap();
    assert_eq!(
        snap.tree, expected,
        "the patch did not reproduce the work tree:\n{patch}"
    );
}

#[test]
fn snapshots_diffs_and_plans_leave_index_head_refs_and_stash_byte_identical() {
    let repo = TempRepo::new();
    repo.write("src/lib.rs", "pub fn one() {}\n");
    repo.commit_all("lib");
    // A stash, a staged change and an untracked file: the state people actually have.
    repo.write("README.md", "# stashed edit\n");
    {
        let mut r = git2::Repository::open(repo.path()).unwrap();
        let sig = git2::Signature::now("Test User", "test@example.com").unwrap();
        r.stash_save(&sig, "wip", None).unwrap();
    }
    repo.write("src/lib.rs", "pub fn one() {}\npub fn two() {}\n");
    git(repo.path(), &["add", "src/lib.rs"]);
    repo.write("notes.txt", "untracked\n");
    let before = git_state(repo.path());
    let index_mtime = std::fs::metadata(repo.path().join(".git/index"))
        .unwrap()
        .modified()
        .unwrap();

    let ws = Workspace::open(repo.path()).unwrap();
    let baseline = ws.baseline().unwrap();
    repo.write("src/lib.rs", "pub fn three() {}\n");
    repo.write("new.txt", "new\n");
    std::fs::remove_file(repo.path().join("notes.txt")).unwrap();
    let snap = ws.snapshot().unwrap();
    let diff = ws.diff(&baseline.snapshot, &snap).unwrap();
    assert_eq!(diff.files_changed(), 3, "{:?}", files_of(&diff));
    let plan = ws.discard_plan(&baseline).unwrap();
    assert_eq!(plan.lost.files_changed(), 3);
    assert_eq!(ws.git_state_changes(&baseline).unwrap(), None);

    assert_eq!(git_state(repo.path()), before);
    let after_mtime = std::fs::metadata(repo.path().join(".git/index"))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(after_mtime, index_mtime, "the index file was rewritten");
}

#[test]
fn a_headless_run_leaves_the_users_git_state_byte_identical() {
    let repo = TempRepo::new();
    repo.write("a.txt", "one\n");
    repo.commit_all("a");
    repo.write("a.txt", "one, edited before the run\n");
    git(repo.path(), &["add", "a.txt"]);
    repo.write("scratch.txt", "untracked before the run\n");
    let before = git_state(repo.path());

    let tmp = tempfile::tempdir().unwrap();
    let script = script(
        tmp.path(),
        vec![turns(&[
            call(
                "write_file",
                json!({"path": "made/by the child.txt", "content": "hello\nworld\n"}),
            ),
            complete_report("wrote the file"),
        ])],
    );
    let run_dir = tmp.path().join("run");
    let backend = format!("script:{}", script.display());
    let out = headless(
        repo.path(),
        &run_dir,
        &["--backend", &backend, "write a file"],
    )
    .output()
    .unwrap();
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let events = events(&out.stdout);
    let finished = of_type(&events, "round_finished");
    assert_eq!(finished.len(), 1);
    assert_eq!(finished[0]["files_changed"], 1, "{}", finished[0]);
    assert_eq!(finished[0]["insertions"], 2);
    let patch = std::fs::read_to_string(run_dir.join("rounds/01/diff.patch")).unwrap();
    assert!(
        patch.starts_with("diff --git \"a/made/by the child.txt\" \"b/made/by the child.txt\"")
            || patch.starts_with("diff --git a/made/by the child.txt b/made/by the child.txt"),
        "{patch}"
    );
    assert!(patch.contains("+hello\n+world\n"), "{patch}");
    assert_eq!(repo.read("made/by the child.txt"), "hello\nworld\n");
    assert_eq!(git_state(repo.path()), before);
}

#[test]
fn a_run_that_edits_adds_deletes_and_renames_logs_each_round_and_commits_exactly_that() {
    let repo = TempRepo::new();
    let long: String = (1..=30).map(|i| format!("moving line {i}\n")).collect();
    repo.write("a.txt", "alpha\nbeta\n");
    repo.write("old.txt", &long);
    repo.write("gone.txt", "to delete\n");
    let start = repo.commit_all("start");
    let ws = Workspace::open(repo.path()).unwrap();
    let baseline = ws.baseline().unwrap();
    let before = git_state(repo.path());

    let tmp = tempfile::tempdir().unwrap();
    let script = script(
        tmp.path(),
        vec![
            turns(&[
                call(
                    "write_file",
                    json!({"path": "src/new.rs", "content": "fn f() {}\n"}),
                ),
                call(
                    "edit_file",
                    json!({"path": "a.txt", "old": "beta\n", "new": "BETA\ngamma\n"}),
                ),
                continue_report("added and edited"),
            ]),
            turns(&[
                call(
                    "run_command",
                    json!({"command": "mv old.txt renamed.txt && rm gone.txt"}),
                ),
                complete_report("renamed and deleted"),
            ]),
        ],
    );
    let run_dir = tmp.path().join("run");
    let backend = format!("script:{}", script.display());
    let mut args = vec!["--backend", backend.as_str()];
    let sandbox = ralph_tui::tools::sandbox::probe_with(Path::new(BIN));
    if sandbox
        .check(
            ralph_tui::protocol::policy::SandboxMode::WorkspaceWrite,
            false,
        )
        .is_err()
    {
        args.extend(["--sandbox", "off"]);
    }
    args.push("reshape the files");
    let out = headless(repo.path(), &run_dir, &args).output().unwrap();
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(git_state(repo.path()), before, "the run left git alone");

    let events = events(&out.stdout);
    let rounds = of_type(&events, "round_finished");
    let counts: Vec<(u64, u64, u64)> = rounds
        .iter()
        .map(|r| {
            (
                r["files_changed"].as_u64().unwrap(),
                r["insertions"].as_u64().unwrap(),
                r["deletions"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(counts, vec![(2, 3, 1), (2, 0, 1)]);
    let first = std::fs::read_to_string(run_dir.join("rounds/01/diff.patch")).unwrap();
    assert!(first.contains("diff --git a/src/new.rs b/src/new.rs\nnew file mode 100644\n"));
    assert!(first.contains("-beta\n+BETA\n+gamma\n"), "{first}");
    let second = std::fs::read_to_string(run_dir.join("rounds/02/diff.patch")).unwrap();
    assert!(
        second.contains("rename from old.txt\nrename to renamed.txt\n"),
        "{second}"
    );
    assert!(second.contains("deleted file mode 100644"), "{second}");

    let last = ws.snapshot().unwrap();
    let cumulative = ws.diff(&baseline.snapshot, &last).unwrap();
    assert_eq!(
        files_of(&cumulative),
        vec![
            ("a.txt".into(), FileStatus::Modified),
            ("gone.txt".into(), FileStatus::Deleted),
            ("renamed.txt".into(), FileStatus::Renamed),
            ("src/new.rs".into(), FileStatus::Added)
        ]
    );
    let done = ws.commit_run(&baseline, &last, "The run's work").unwrap();
    let r = git2::Repository::open(repo.path()).unwrap();
    let committed = ralph_tui::workspace::diff::between(
        &r,
        r.find_commit(start).unwrap().tree_id(),
        r.find_commit(done.commit).unwrap().tree_id(),
        "",
    )
    .unwrap();
    assert_eq!(committed, cumulative);
    let status = git(repo.path(), &["status", "--porcelain"]);
    assert_eq!(String::from_utf8_lossy(&status.stdout), "");
}
