//! What the review lets the person choose, and what a commit then takes, through the real
//! event loop and engine (script backend): a repository the run nested in the work tree is a
//! separate repository, never chosen by default and committed (as a gitlink) only when the
//! person chooses it; a run that changed more files than the screen's old limit lists them
//! all, and the commit takes exactly the chosen ones.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::common::*;
use super::review_flows::{ch, commit, files_listed, head_files, ready, session_of, status, Step};

/// One round: a.txt, and a command that makes `lib/vendored` a repository of its own with a
/// commit and a `core.fsmonitor` that leaves `marker` behind whenever git runs it.
fn nested_repo_script(marker: &Path) -> impl Fn(&Path) -> PathBuf + '_ {
    move |dir| {
        let command = format!(
            "git init -q lib/vendored && cd lib/vendored && echo v > v.txt && git add v.txt \
             && git -c user.name=T -c user.email=t@example.com commit -qm v \
             && git config core.fsmonitor 'touch {}; false'",
            marker.display()
        );
        script(
            dir,
            vec![turns(&[
                write_file_call("a.txt", "plain\n"),
                call("run_command", json!({ "command": command })),
                complete_only("a.txt and a vendored library"),
            ])],
        )
    }
}

/// The review has read the run's changes: a.txt and `lib/vendored`.
fn both_listed() -> Step {
    Step {
        keys: Vec::new(),
        until: Box::new(|s| ready(s) && files_listed(s) == ["a.txt", "lib/vendored"]),
    }
}

/// The mode of `path` in HEAD's tree, `None` when it is not there.
fn head_mode(repo: &TempRepo, path: &str) -> Option<i32> {
    let r = git2::Repository::open(repo.path()).unwrap();
    let tree = r.head().unwrap().peel_to_tree().unwrap();
    tree.get_path(Path::new(path)).ok().map(|e| e.filemode())
}

#[test]
fn a_nested_repository_the_run_made_is_not_chosen_and_the_commit_leaves_it_out() {
    let repo = TempRepo::new();
    let marks = tempfile::tempdir().unwrap();
    let marker = marks.path().join("fsmonitor-ran");
    let s = session_of(
        &repo,
        "",
        &nested_repo_script(&marker),
        &["--sandbox", "off"],
        vec![both_listed(), commit()],
    );
    assert!(
        s.notices.iter().all(|n| !n.starts_with("commit failed")),
        "{:?}",
        s.notices
    );
    let committed = head_files(&repo);
    assert!(committed.contains(&"a.txt".to_string()), "{committed:?}");
    assert!(
        committed.iter().all(|p| !p.starts_with("lib")),
        "the nested repository was committed without being chosen: {committed:?}"
    );
    // Nothing of it is in the index either, so git at the top never runs its config.
    let index = git2::Repository::open(repo.path())
        .unwrap()
        .index()
        .unwrap();
    assert!(index.get_path(Path::new("lib/vendored"), 0).is_none());
    assert!(
        status(&repo).contains("?? lib/vendored/"),
        "{}",
        status(&repo)
    );
    assert!(
        !marker.exists(),
        "git status at the top ran the nested repository's core.fsmonitor"
    );
}

#[test]
fn a_nested_repository_chosen_explicitly_is_committed_as_a_gitlink() {
    let repo = TempRepo::new();
    let marks = tempfile::tempdir().unwrap();
    let marker = marks.path().join("fsmonitor-ran");
    // Space on it, then the commit: keys are taken in the order they come.
    let choose = Step {
        keys: vec![ch('j'), ch(' ')],
        until: Box::new(|s| s.review.shown.as_ref().is_some_and(|r| r.file == 1)),
    };
    session_of(
        &repo,
        "",
        &nested_repo_script(&marker),
        &["--sandbox", "off"],
        vec![both_listed(), choose, commit()],
    );
    assert_eq!(head_mode(&repo, "lib/vendored"), Some(0o160000));
    assert_eq!(head_mode(&repo, "a.txt"), Some(0o100644));
}

/// One round whose command writes 600 files under `d/` and then `zz/evil.sh`, the last in
/// path order.
fn many_files(dir: &Path) -> PathBuf {
    let command = "mkdir d zz && for i in $(seq 1 600); do echo $i > d/f$i.txt; done \
                   && printf '#!/bin/sh\\necho evil\\n' > zz/evil.sh";
    script(
        dir,
        vec![turns(&[
            call("run_command", json!({ "command": command })),
            complete_only("601 files"),
        ])],
    )
}

#[test]
fn every_changed_file_is_listed_and_the_commit_takes_only_the_chosen() {
    let repo = TempRepo::new();
    // Every file is listed, and the cursor reaches the last one: zz/evil.sh, left out.
    let mut keys: Vec<_> = std::iter::repeat_n(ch('j'), 600).collect();
    keys.push(ch(' '));
    let listed = Step {
        keys: Vec::new(),
        until: Box::new(|s| ready(s) && !files_listed(s).is_empty()),
    };
    let leave_out_the_last = Step {
        keys,
        until: Box::new(|s| {
            s.review
                .shown
                .as_ref()
                .is_some_and(|r| !r.left_out.is_empty())
        }),
    };
    let s = session_of(
        &repo,
        "",
        &many_files,
        &["--sandbox", "off"],
        vec![listed, leave_out_the_last, commit()],
    );
    assert!(
        s.notices.iter().all(|n| !n.starts_with("commit failed")),
        "{:?}",
        s.notices
    );
    let committed = head_files(&repo);
    let files: Vec<&String> = committed
        .iter()
        .filter(|p| p.starts_with("d/") || p.starts_with("zz/"))
        .collect();
    assert!(
        !committed.contains(&"zz/evil.sh".to_string()),
        "the file left out was committed"
    );
    assert_eq!(files.len(), 600, "{files:?}");
    assert!(committed.contains(&"d/f600.txt".to_string()));
    assert_eq!(status(&repo), "?? zz/evil.sh\n");
}
