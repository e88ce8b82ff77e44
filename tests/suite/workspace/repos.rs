//! Repositories as people have them: not a repository, ignored outputs, odd names, CRLF and
//! symlinks, a subdirectory workspace, submodules and nested repositories, racy rewrites and
//! merge conflicts.

use std::path::Path;
use std::process::Command;

use ralph_tui::protocol::event::FileStatus;
use ralph_tui::workspace::{LiveWatch, Workspace, WorkspaceError};

use super::super::common::*;
use super::{assert_patch_reproduces, files_of, git, git_state};

#[test]
fn not_a_git_repo_is_a_clear_error_with_the_fix() {
    let dir = TempRepo::plain_dir();
    let err = Workspace::open(dir.path()).unwrap_err();
    assert!(matches!(err, WorkspaceError::NotGitRepo(_)), "{err:?}");
    assert!(err.to_string().contains("git init"), "{err}");
    assert!(LiveWatch::start(dir.path(), Box::new(|_, _| {})).is_err());
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
