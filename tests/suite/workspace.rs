//! Workspace memory: snapshots that leave the user's git state byte-identical, per-round and
//! cumulative diffs (statuses, counts, patches that `git apply` takes), the live watcher,
//! commit on review with its refusals, discard to baseline, and repositories as people have
//! them (no commits, detached HEAD, submodules, ignored outputs, odd names, CRLF, symlinks,
//! a workspace in a subdirectory).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use ralph_tui::engine::event::ChangedFile;
use ralph_tui::engine::RoundWatch;
use ralph_tui::workspace::{
    DisplayLimits, FileStatus, LineKind, LiveWatch, Workspace, WorkspaceError,
};
use serde_json::json;

use super::common::*;

/// Every file under `.git` except the object store, by path: index, HEAD, refs, logs, stash,
/// config. Snapshots may add objects; nothing else may change.
fn git_state(repo: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
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
fn git(dir: &Path, args: &[&str]) -> std::process::Output {
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

fn files_of(diff: &ralph_tui::workspace::DiffModel) -> Vec<(String, FileStatus)> {
    diff.files
        .iter()
        .map(|f| (f.path.clone(), f.status))
        .collect()
}

/// Applies `patch` with `git apply` to a fresh clone of `origin` and checks the clone's work
/// tree then snapshots to the same tree as `expected`.
fn assert_patch_reproduces(origin: &Path, patch: &str, expected: git2::Oid) {
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
fn not_a_git_repo_is_a_clear_error_with_the_fix() {
    let dir = TempRepo::plain_dir();
    let err = Workspace::open(dir.path()).unwrap_err();
    assert!(matches!(err, WorkspaceError::NotGitRepo(_)), "{err:?}");
    assert!(err.to_string().contains("git init"), "{err}");
    assert!(LiveWatch::start(dir.path(), Box::new(|_, _| {})).is_err());
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
        .check(ralph_tui::config::SandboxMode::WorkspaceWrite, false)
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

#[test]
fn diffs_name_added_modified_deleted_renamed_and_binary_files_with_counts() {
    let repo = TempRepo::new();
    let long: String = (1..=40)
        .map(|i| format!("line {i} of a file to move\n"))
        .collect();
    repo.write("keep.txt", "a\nb\nc\n");
    repo.write("gone.txt", "bye\n");
    repo.write("old name.txt", &long);
    std::fs::write(repo.path().join("blob.bin"), [0u8, 1, 2, 3, 255, 0, 7]).unwrap();
    repo.commit_all("start");
    let ws = Workspace::open(repo.path()).unwrap();
    let s0 = ws.snapshot().unwrap();

    repo.write("keep.txt", "a\nB\nc\nd\n");
    std::fs::remove_file(repo.path().join("gone.txt")).unwrap();
    std::fs::rename(
        repo.path().join("old name.txt"),
        repo.path().join("new name.txt"),
    )
    .unwrap();
    std::fs::write(repo.path().join("blob.bin"), [0u8, 9, 9, 9, 255, 0, 7, 8]).unwrap();
    repo.write("fresh.txt", "brand new\n");
    let s1 = ws.snapshot().unwrap();
    let diff = ws.diff(&s0, &s1).unwrap();

    let by_path: BTreeMap<&str, _> = diff.files.iter().map(|f| (f.path.as_str(), f)).collect();
    assert_eq!(by_path.len(), 5, "{:?}", files_of(&diff));
    assert_eq!(by_path["keep.txt"].status, FileStatus::Modified);
    assert_eq!(by_path["keep.txt"].insertions, 2);
    assert_eq!(by_path["keep.txt"].deletions, 1);
    let hunk = &by_path["keep.txt"].hunks[0];
    assert!(hunk.header.starts_with("@@ "), "{}", hunk.header);
    assert!(hunk
        .lines
        .iter()
        .any(|l| l.kind == LineKind::Added && l.text == "B"));
    assert_eq!(by_path["gone.txt"].status, FileStatus::Deleted);
    assert_eq!(by_path["gone.txt"].deletions, 1);
    assert_eq!(by_path["new name.txt"].status, FileStatus::Renamed);
    assert_eq!(
        by_path["new name.txt"].old_path.as_deref(),
        Some("old name.txt")
    );
    assert_eq!(by_path["fresh.txt"].status, FileStatus::Added);
    assert!(by_path["blob.bin"].binary);
    assert!(by_path["blob.bin"].hunks.is_empty());
    assert_eq!(diff.insertions, 3);
    assert_eq!(diff.deletions, 2);

    assert!(diff.patch.contains("diff --git a/keep.txt b/keep.txt\n"));
    assert!(diff.patch.contains("rename from old name.txt\n"));
    assert!(diff.patch.contains("GIT binary patch"));
    assert_patch_reproduces(repo.path(), &diff.patch, s1.tree);
    let changed: Vec<ChangedFile> = diff.changed_files();
    assert_eq!(changed.len(), 5);
    assert!(changed
        .iter()
        .any(|c| c.path == "fresh.txt" && c.status == "added"));
}

#[test]
fn per_round_diffs_add_up_to_the_cumulative_diff() {
    let repo = TempRepo::new();
    let ws = Workspace::open(repo.path()).unwrap();
    let s0 = ws.snapshot().unwrap();
    repo.write("a.txt", "1\n");
    let s1 = ws.snapshot().unwrap();
    repo.write("a.txt", "1\n2\n");
    repo.write("b.txt", "b\n");
    let s2 = ws.snapshot().unwrap();
    let r1 = ws.diff(&s0, &s1).unwrap();
    let r2 = ws.diff(&s1, &s2).unwrap();
    let all = ws.diff(&s0, &s2).unwrap();
    assert_eq!(files_of(&r1), vec![("a.txt".into(), FileStatus::Added)]);
    assert_eq!(
        files_of(&r2),
        vec![
            ("a.txt".into(), FileStatus::Modified),
            ("b.txt".into(), FileStatus::Added)
        ]
    );
    assert_eq!(
        files_of(&all),
        vec![
            ("a.txt".into(), FileStatus::Added),
            ("b.txt".into(), FileStatus::Added)
        ]
    );
    assert_eq!(all.insertions, 3);
    assert_eq!(ws.diff(&s2, &s2).unwrap(), Default::default());
    // The same tree twice: identical snapshots, so unchanged rounds cost an empty diff.
    assert_eq!(ws.snapshot().unwrap(), s2);
}

#[test]
fn very_large_diffs_are_shortened_for_display_only() {
    let repo = TempRepo::new();
    let ws = Workspace::open(repo.path()).unwrap();
    let s0 = ws.snapshot().unwrap();
    for f in 0..20 {
        let text: String = (0..500).map(|i| format!("file {f} line {i}\n")).collect();
        repo.write(&format!("big/{f:02}.txt"), &text);
    }
    repo.write("wide.txt", &format!("{}\n", "x".repeat(5000)));
    let full = ws.diff(&s0, &ws.snapshot().unwrap()).unwrap();
    assert_eq!(full.insertions, 10_001);
    assert_eq!(full.note, None);
    let limits = DisplayLimits {
        max_files: 10,
        max_lines: 1_000,
        max_line_chars: 100,
        max_patch_bytes: 16 * 1024,
    };
    let shown = full.for_display(&limits);
    assert_eq!(shown.files.len(), 10);
    let lines: usize = shown
        .files
        .iter()
        .flat_map(|f| &f.hunks)
        .map(|h| h.lines.len())
        .sum();
    assert_eq!(lines, 1_000);
    assert!(shown.patch.len() <= 16 * 1024 && shown.patch.ends_with('\n'));
    assert_eq!(shown.insertions, full.insertions, "totals stay whole");
    let note = shown.note.as_deref().unwrap();
    assert!(note.contains("10 of 21 files"), "{note}");
    assert!(note.contains("1000 of 10001 lines"), "{note}");
    assert!(note.contains("run log"), "{note}");
    // A small diff is left alone.
    let small = ws.diff(&s0, &s0).unwrap().for_display(&limits);
    assert_eq!(small.note, None);
}

#[test]
fn ignored_outputs_odd_names_crlf_and_symlinks() {
    let repo = TempRepo::new();
    repo.write(".gitignore", "target/\n*.log\n");
    repo.write(".gitattributes", "*.md text\n");
    repo.write("crlf.txt", "one\r\ntwo\r\n");
    repo.write("run.sh", "echo hi\n");
    repo.commit_all("ignore rules");
    let ws = Workspace::open(repo.path()).unwrap();
    let s0 = ws.snapshot().unwrap();

    repo.write("target/debug/app", "build output\n");
    repo.write("run.log", "log\n");
    repo.write("dir with space/file name.txt", "spaces\n");
    repo.write("crlf.txt", "one\r\nTWO\r\nthree\r\n");
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let name = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
        std::fs::write(repo.path().join(name), "latin-1 name\n").unwrap();
        std::fs::write(repo.path().join("latin1.txt"), b"caf\xe9\n").unwrap();
        std::os::unix::fs::symlink("crlf.txt", repo.path().join("link")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let script = repo.path().join("run.sh");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    // `text` normalizes line ends on the way in, as `git add` does.
    repo.write("notes.md", "dos\r\nlines\r\n");
    let s1 = ws.snapshot().unwrap();
    let diff = ws.diff(&s0, &s1).unwrap();
    let paths: Vec<&str> = diff.files.iter().map(|f| f.path.as_str()).collect();
    assert!(!paths
        .iter()
        .any(|p| p.starts_with("target") || p.ends_with(".log")));
    assert!(paths.contains(&"dir with space/file name.txt"), "{paths:?}");
    let crlf = diff.files.iter().find(|f| f.path == "crlf.txt").unwrap();
    assert_eq!((crlf.insertions, crlf.deletions), (2, 1));
    assert!(diff.patch.contains("+TWO\r\n"));
    assert!(diff.patch.contains("+dos\n+lines\n"), "{}", diff.patch);
    #[cfg(unix)]
    {
        assert_eq!(diff.files.len(), 7, "{paths:?}");
        assert!(diff.patch.contains("old mode 100644\nnew mode 100755\n"));
        assert!(paths.contains(&"caf\u{fffd}.txt"), "{paths:?}");
        let latin1 = diff.files.iter().find(|f| f.path == "latin1.txt").unwrap();
        assert!(
            latin1.binary,
            "non-UTF-8 text goes into the patch as binary"
        );
        assert!(paths.contains(&"link"));
        assert!(diff.patch.contains("new file mode 120000"));
    }
    assert_patch_reproduces(repo.path(), &diff.patch, s1.tree);
}

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
fn a_subdirectory_workspace_sees_and_commits_only_its_own_files() {
    let repo = TempRepo::new();
    repo.write("sub/in.txt", "in\n");
    repo.write("sub2/near.txt", "near\n");
    repo.write("out.txt", "out\n");
    repo.commit_all("layout");
    let ws = Workspace::open(&repo.path().join("sub")).unwrap();
    assert_eq!(ws.prefix(), "sub");
    let baseline = ws.baseline().unwrap();
    repo.write("sub/in.txt", "in, changed\n");
    repo.write("sub/deeper/new.txt", "new\n");
    repo.write("sub2/near.txt", "changed outside\n");
    repo.write("out.txt", "changed outside\n");
    let last = ws.snapshot().unwrap();
    let diff = ws.diff(&baseline.snapshot, &last).unwrap();
    assert_eq!(
        files_of(&diff),
        vec![
            ("sub/deeper/new.txt".into(), FileStatus::Added),
            ("sub/in.txt".into(), FileStatus::Modified)
        ]
    );
    assert!(diff
        .patch
        .contains("diff --git a/sub/in.txt b/sub/in.txt\n"));
    assert!(diff.patch.contains("+++ b/sub/deeper/new.txt\n"));
    assert_patch_reproduces_subset(
        repo.path(),
        &diff.patch,
        &["sub/in.txt", "sub/deeper/new.txt"],
    );

    ws.commit_run(&baseline, &last, "sub only").unwrap();
    let status = git(repo.path(), &["status", "--porcelain"]);
    assert_eq!(
        String::from_utf8_lossy(&status.stdout),
        " M out.txt\n M sub2/near.txt\n"
    );
}

/// `git apply` of a subdirectory's patch in a clone gives those files the work tree's content.
fn assert_patch_reproduces_subset(origin: &Path, patch: &str, paths: &[&str]) {
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
    for path in paths {
        assert_eq!(
            std::fs::read(clone.join(path)).unwrap(),
            std::fs::read(origin.join(path)).unwrap(),
            "{path}"
        );
    }
}

#[test]
fn submodules_are_one_entry_never_descended_into() {
    let repo = TempRepo::new();
    let inner_dir = repo.path().join("vendor/lib");
    let inner = git2::Repository::init(&inner_dir).unwrap();
    let sig = git2::Signature::now("Test User", "test@example.com").unwrap();
    let commit_inner = |message: &str| {
        let mut index = inner.index().unwrap();
        index
            .add_all(["*"].iter(), git2::IndexAddOption::DEFAULT, None)
            .unwrap();
        index.write().unwrap();
        let tree = inner.find_tree(index.write_tree().unwrap()).unwrap();
        let parents: Vec<git2::Commit> = inner
            .head()
            .ok()
            .and_then(|h| h.peel_to_commit().ok())
            .into_iter()
            .collect();
        let parents: Vec<&git2::Commit> = parents.iter().collect();
        inner
            .commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)
            .unwrap()
    };
    std::fs::write(inner_dir.join("lib.c"), "int x;\n").unwrap();
    let first = commit_inner("inner one");
    repo.write(
        ".gitmodules",
        "[submodule \"vendor/lib\"]\n\tpath = vendor/lib\n\turl = ./lib\n",
    );
    {
        let outer = git2::Repository::open(repo.path()).unwrap();
        let mut index = outer.index().unwrap();
        index
            .add(&git2::IndexEntry {
                ctime: git2::IndexTime::new(0, 0),
                mtime: git2::IndexTime::new(0, 0),
                dev: 0,
                ino: 0,
                mode: 0o160000,
                uid: 0,
                gid: 0,
                file_size: 0,
                id: first,
                flags: 0,
                flags_extended: 0,
                path: b"vendor/lib".to_vec(),
            })
            .unwrap();
        index.add_path(Path::new(".gitmodules")).unwrap();
        index.write().unwrap();
        let tree = outer.find_tree(index.write_tree().unwrap()).unwrap();
        let head = outer.head().unwrap().peel_to_commit().unwrap();
        outer
            .commit(Some("HEAD"), &sig, &sig, "submodule", &tree, &[&head])
            .unwrap();
    }
    let ws = Workspace::open(repo.path()).unwrap();
    let baseline = ws.baseline().unwrap();
    std::fs::write(inner_dir.join("lib.c"), "int x = 2;\n").unwrap();
    std::fs::write(inner_dir.join("extra.c"), "int y;\n").unwrap();
    let untouched = ws.snapshot().unwrap();
    assert_eq!(untouched, baseline.snapshot, "inner files are not ours");
    commit_inner("inner two");
    let last = ws.snapshot().unwrap();
    let diff = ws.diff(&baseline.snapshot, &last).unwrap();
    assert_eq!(
        files_of(&diff),
        vec![("vendor/lib".into(), FileStatus::Modified)]
    );
    assert!(diff.patch.contains("Subproject commit"), "{}", diff.patch);
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

fn live_watch(root: &Path) -> (LiveWatch, mpsc::Receiver<(u32, Vec<ChangedFile>)>) {
    let (tx, rx) = mpsc::channel();
    let watch = LiveWatch::start(
        root,
        Box::new(move |round, files| {
            let _ = tx.send((round, files));
        }),
    )
    .unwrap();
    (watch, rx)
}

const GENEROUS: Duration = Duration::from_secs(30);

/// Waits for a report whose files satisfy `done`, returning it.
fn wait_for(
    rx: &mpsc::Receiver<(u32, Vec<ChangedFile>)>,
    done: impl Fn(&[ChangedFile]) -> bool,
) -> (u32, Vec<ChangedFile>) {
    let deadline = Instant::now() + GENEROUS;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let (round, files) = rx
            .recv_timeout(left)
            .expect("no matching report from the watcher");
        if done(&files) {
            return (round, files);
        }
    }
}

#[test]
fn the_live_watcher_reports_a_write_and_drops_git_and_ignored_paths() {
    let repo = TempRepo::new();
    repo.write(".gitignore", "target/\n*.log\n");
    repo.commit_all("ignores");
    let ws = Workspace::open(repo.path()).unwrap();
    let base = ws.snapshot().unwrap();
    let (watch, rx) = live_watch(repo.path());
    assert!(watch.stats().watched_dirs >= 1);
    watch.round_started(3, base);

    repo.write("target/debug/app", "build output\n");
    repo.write("debug.log", "noise\n");
    std::fs::write(repo.path().join(".git/scratch"), "git's own\n").unwrap();
    // Wait until the watcher has seen (and dropped) the ignored writes.
    let deadline = Instant::now() + GENEROUS;
    while watch.stats().ignored_events < 2 {
        assert!(Instant::now() < deadline, "ignored writes never seen");
        std::thread::sleep(Duration::from_millis(10));
    }
    let stats = watch.stats();
    assert_eq!(stats.relevant_events, 0, "{stats:?}");
    assert_eq!(stats.refreshes, 0, "{stats:?}");

    repo.write("src/main.rs", "fn main() {}\n");
    let (round, files) = wait_for(&rx, |f| !f.is_empty());
    assert_eq!(round, 3);
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(files[0].path, "src/main.rs");
    assert_eq!(files[0].status, "added");
    assert_eq!(files[0].insertions, 1);

    // Inside the new directory, too; and a burst is coalesced.
    for i in 0..40 {
        repo.write(&format!("src/gen/{i:02}.rs"), "// generated\n");
    }
    let (_, files) = wait_for(&rx, |f| f.len() == 41);
    assert!(files.iter().all(|f| f.status == "added"));
    assert!(watch.stats().refreshes <= 8, "{:?}", watch.stats());
    watch.round_ended();
    drop(watch);
}

#[test]
fn the_live_watcher_reports_per_round_against_the_rounds_start() {
    let repo = TempRepo::new();
    let ws = Workspace::open(repo.path()).unwrap();
    let (watch, rx) = live_watch(repo.path());
    watch.round_started(1, ws.snapshot().unwrap());
    repo.write("one.txt", "1\n");
    let (round, files) = wait_for(&rx, |f| f.len() == 1);
    assert_eq!((round, files[0].path.as_str()), (1, "one.txt"));
    watch.round_ended();

    watch.round_started(2, ws.snapshot().unwrap());
    repo.write("README.md", "# demo\nchanged in round two\n");
    let (round, files) = wait_for(&rx, |f| !f.is_empty());
    assert_eq!(round, 2);
    assert_eq!(files.len(), 1, "one.txt belongs to round one: {files:?}");
    assert_eq!(files[0].path, "README.md");
    assert_eq!(files[0].status, "modified");
}

#[test]
fn a_same_size_rewrite_right_after_staging_is_still_seen() {
    let repo = TempRepo::new();
    let ws = Workspace::open(repo.path()).unwrap();
    repo.write("racy.txt", "aaaa\n");
    git(repo.path(), &["add", "racy.txt"]);
    let s1 = ws.snapshot().unwrap();
    // Same size, same second (often the same clock tick) as the index entry.
    repo.write("racy.txt", "bbbb\n");
    let s2 = ws.snapshot().unwrap();
    let diff = ws.diff(&s1, &s2).unwrap();
    assert_eq!(
        files_of(&diff),
        vec![("racy.txt".into(), FileStatus::Modified)]
    );
}

#[test]
fn a_merge_conflict_in_the_index_does_not_stop_snapshots() {
    let repo = TempRepo::new();
    repo.write("c.txt", "base\n");
    repo.commit_all("base");
    let main = git2::Repository::open(repo.path())
        .unwrap()
        .head()
        .unwrap()
        .shorthand()
        .unwrap()
        .to_string();
    let id = ["-c", "user.name=T", "-c", "user.email=t@example.com"];
    git(repo.path(), &["checkout", "-q", "-b", "other"]);
    repo.write("c.txt", "theirs\n");
    git(
        repo.path(),
        &[&id[..], &["commit", "-qam", "theirs"]].concat(),
    );
    git(repo.path(), &["checkout", "-q", &main]);
    repo.write("c.txt", "ours\n");
    git(
        repo.path(),
        &[&id[..], &["commit", "-qam", "ours"]].concat(),
    );
    let merge = Command::new("git")
        .current_dir(repo.path())
        .args(["-c", "user.name=T", "-c", "user.email=t@example.com"])
        .args(["merge", "-q", "other"])
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(!merge.status.success(), "the merge should conflict");
    let before = git_state(repo.path());
    let ws = Workspace::open(repo.path()).unwrap();
    let baseline = ws.baseline().unwrap();
    repo.write("c.txt", "resolved\n");
    let diff = ws
        .diff(&baseline.snapshot, &ws.snapshot().unwrap())
        .unwrap();
    assert_eq!(
        files_of(&diff),
        vec![("c.txt".into(), FileStatus::Modified)]
    );
    assert!(diff.patch.contains("+resolved\n"), "{}", diff.patch);
    assert_eq!(git_state(repo.path()), before);
}

#[test]
fn nested_repositories_are_entries_and_one_without_commits_is_skipped() {
    let repo = TempRepo::new();
    let ws = Workspace::open(repo.path()).unwrap();
    let s0 = ws.snapshot().unwrap();
    git2::Repository::init(repo.path().join("empty-nested")).unwrap();
    repo.write(
        "empty-nested/file.txt",
        "inside a repository without commits\n",
    );
    let nested = repo.path().join("nested");
    git2::Repository::init(&nested).unwrap();
    repo.write("nested/n.txt", "n\n");
    git(
        &nested,
        &[
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@example.com",
            "add",
            "-A",
        ],
    );
    git(
        &nested,
        &[
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@example.com",
            "commit",
            "-qm",
            "n",
        ],
    );
    repo.write("plain.txt", "plain\n");
    let diff = ws.diff(&s0, &ws.snapshot().unwrap()).unwrap();
    assert_eq!(
        files_of(&diff),
        vec![
            ("nested".into(), FileStatus::Added),
            ("plain.txt".into(), FileStatus::Added)
        ]
    );
}
