//! Changes git does not show are shown anyway: a file `write_file` put into an ignored
//! directory, a `.pyc` a command wrote, and a repository nested in the work tree are named
//! in the round's warnings and listed in the review, grouped and marked; a nested `.git` the
//! run created is a warning of its own.

use std::collections::BTreeSet;
use std::process::Command;

use ralph_tui::protocol::event::{FileStatus, RunStatus};
use ralph_tui::screens::state::DiffSource;
use ralph_tui::screens::Msg;
use ralph_tui::workspace::{DiffModel, HiddenChange, HiddenWhy, Workspace};
use serde_json::json;

use super::common::*;
use super::ui::fixtures::{finished, screen};

/// A repository that ignores `build/`, `__pycache__/` and `*.pyc`, with an ignored file
/// already there before the run.
fn repo_with_ignores() -> TempRepo {
    let repo = TempRepo::new();
    repo.write(".gitignore", "build/\n__pycache__/\n*.pyc\n");
    repo.commit_all("ignores");
    repo.write("build/old.o", "before the run\n");
    repo
}

fn warnings(events: &[serde_json::Value]) -> Vec<String> {
    of_type(events, "warning")
        .iter()
        .map(|w| w["message"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_round_names_what_it_changed_where_git_does_not_look() {
    let repo = repo_with_ignores();
    let tmp = tempfile::tempdir().unwrap();
    let nested = "mkdir sub2 && cd sub2 && git init -q && git config core.fsmonitor 'echo fsmonitor ran' && echo hi > a.txt";
    let script = script(
        tmp.path(),
        vec![turns(&[
            call(
                "write_file",
                json!({"path": "build/tool.sh", "content": "#!/bin/sh\necho planted\n"}),
            ),
            call(
                "run_command",
                json!({"command": format!("echo x > __x.pyc && {nested}")}),
            ),
            call(
                "write_file",
                json!({"path": "seen.txt", "content": "in the diff\n"}),
            ),
            complete_report("wrote them"),
        ])],
    );
    let mut cmd = Command::new(BIN);
    isolate(&mut cmd, tmp.path());
    let out = cmd
        .args(["--headless", "--sandbox", "off", "-C"])
        .arg(repo.path())
        .arg("--backend")
        .arg(format!("script:{}", script.display()))
        .arg("hide things")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let events = events(&out.stdout);
    let warnings = warnings(&events);
    let hidden = warnings
        .iter()
        .find(|w| w.contains("git does not show"))
        .unwrap_or_else(|| panic!("{warnings:?}"));
    for named in [
        "build/tool.sh (added, ignored by git)",
        "__x.pyc (added, ignored by git)",
        "sub2/a.txt (added, in the nested repository sub2)",
    ] {
        assert!(hidden.contains(named), "{named} in {hidden}");
    }
    assert!(!hidden.contains("seen.txt"), "{hidden}");
    assert!(!hidden.contains("build/old.o"), "unchanged: {hidden}");
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("created a git repository at sub2/.git")
                && w.contains("core.fsmonitor")),
        "{warnings:?}"
    );
}

/// What the review computes: the baseline's listing against the work tree at the end,
/// minus the diff's files.
#[test]
fn the_review_finds_ignored_and_nested_changes_against_the_baseline() {
    let repo = repo_with_ignores();
    repo.write("build/gone.o", "removed by the run\n");
    let ws = Workspace::open(repo.path()).unwrap();
    let baseline = ws.baseline().unwrap();
    repo.write("build/tool.sh", "#!/bin/sh\n");
    repo.write("build/old.o", "rebuilt, longer than before\n");
    std::fs::remove_file(repo.path().join("build/gone.o")).unwrap();
    repo.write("__pycache__/m.cpython.pyc", "bytecode");
    git2::Repository::init(repo.path().join("sub2")).unwrap();
    repo.write("sub2/a.txt", "nested\n");
    repo.write("seen.txt", "shown\n");
    let now = ws.snapshot().unwrap();
    let diff = ws.diff(&baseline.snapshot, &now).unwrap();
    assert!(diff.paths().contains("seen.txt"));
    let hidden = ws.compare(&baseline.listing, &ws.listing(), &diff.paths());
    let found: BTreeSet<(String, &str)> = hidden
        .changes
        .iter()
        .map(|c| (c.path.clone(), c.status.as_str()))
        .collect();
    let expected: BTreeSet<(String, &str)> = [
        ("__pycache__/m.cpython.pyc", FileStatus::Added),
        ("build/gone.o", FileStatus::Deleted),
        ("build/old.o", FileStatus::Modified),
        ("build/tool.sh", FileStatus::Added),
        ("sub2/a.txt", FileStatus::Added),
    ]
    .into_iter()
    .map(|(p, s)| (p.to_string(), s.as_str()))
    .collect();
    assert_eq!(found, expected, "{hidden:?}");
    assert_eq!(hidden.new_repos, ["sub2"]);
    let sub2 = hidden
        .changes
        .iter()
        .find(|c| c.path == "sub2/a.txt")
        .unwrap();
    assert_eq!(sub2.why, HiddenWhy::NestedRepo("sub2".into()));
}

#[test]
fn snapshot_review_with_changes_git_does_not_show() {
    let mut state = finished(RunStatus::Complete, None);
    let model = DiffModel {
        files: vec![ralph_tui::workspace::FileDiff::modified("slug.py".into())],
        hidden: vec![
            HiddenChange {
                path: "build/tool.sh".into(),
                status: FileStatus::Added,
                why: HiddenWhy::Ignored,
            },
            HiddenChange {
                path: "__x.pyc".into(),
                status: FileStatus::Added,
                why: HiddenWhy::Ignored,
            },
            HiddenChange {
                path: "sub2/a.txt".into(),
                status: FileStatus::Added,
                why: HiddenWhy::NestedRepo("sub2".into()),
            },
        ],
        new_repos: vec!["sub2".into()],
        ..DiffModel::default()
    };
    state.update(Msg::DiffLoaded(DiffSource::Review, Ok(model)));
    let text = screen(&mut state, 120, 40);
    assert!(
        text.contains("── not shown by git, not committed ──"),
        "{text}"
    );
    assert!(text.contains("⊘  A build/tool.sh  ignored"), "{text}");
    assert!(text.contains("sub2/a.txt  in repo sub2"), "{text}");
    assert!(text.contains("! new git repository sub2/.git"), "{text}");
    insta::assert_snapshot!("review_hidden_changes_120x40", text);
}
