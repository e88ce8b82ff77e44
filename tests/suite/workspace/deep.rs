//! Trees nested deeper than git's work-tree scan goes (libgit2 stops at 100 directories): the
//! snapshot still sees everything else, names what it could not look into, and the run and the
//! review say so instead of claiming nothing changed.

use std::path::Path;

use ralph_tui::protocol::event::FileStatus;
use ralph_tui::workspace::{DiffModel, Workspace};
use serde_json::json;

use super::super::common::*;
use super::files_of;

/// `name/name/…` with `levels` components.
fn nested(name: &str, levels: usize) -> String {
    vec![name; levels].join("/")
}

#[test]
fn a_directory_nested_too_deep_is_named_and_everything_else_still_diffs() {
    let repo = TempRepo::new();
    repo.write("d/mid.txt", "tracked beside the deep chain\n");
    repo.write("tracked/a.txt", "a\n");
    repo.commit_all("start");
    let ws = Workspace::open(repo.path()).unwrap();
    let (base, unseen) = ws.snapshot_seen().unwrap();
    assert!(unseen.is_empty(), "{unseen:?}");

    repo.write(&format!("{}/deep.txt", nested("d", 120)), "deep\n");
    // 99 levels are as deep as the scan goes: that file is seen.
    repo.write(&format!("{}/fine.txt", nested("e", 99)), "fine\n");
    repo.write("d/d/side.txt", "a sibling along the deep chain\n");
    repo.write("normal.txt", "normal\n");
    repo.write("tracked/a.txt", "a, edited\n");
    std::fs::remove_file(repo.path().join("d/mid.txt")).unwrap();
    std::fs::remove_file(repo.path().join("README.md")).unwrap();

    let (now, unseen) = ws.snapshot_seen().unwrap();
    assert_eq!(unseen, vec![nested("d", 100)]);
    assert_eq!(ws.snapshot().unwrap(), now);
    let diff = ws.diff(&base, &now).unwrap();
    assert_eq!(
        files_of(&diff),
        vec![
            ("README.md".into(), FileStatus::Deleted),
            ("d/d/side.txt".into(), FileStatus::Added),
            ("d/mid.txt".into(), FileStatus::Deleted),
            (format!("{}/fine.txt", nested("e", 99)), FileStatus::Added),
            ("normal.txt".into(), FileStatus::Added),
            ("tracked/a.txt".into(), FileStatus::Modified),
        ]
    );
}

fn sandbox_args() -> Vec<&'static str> {
    let sandbox = ralph_tui::tools::sandbox::probe_with(Path::new(BIN));
    let mode = ralph_tui::protocol::policy::SandboxMode::WorkspaceWrite;
    if sandbox.check(mode, false).is_err() {
        vec!["--sandbox", "off"]
    } else {
        Vec::new()
    }
}

#[test]
fn a_run_that_makes_a_too_deep_tree_still_reports_its_other_changes_and_warns() {
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let deep = nested("d", 120);
    let script = script(
        tmp.path(),
        vec![turns(&[
            call(
                "run_command",
                json!({"command": format!("mkdir -p {deep} && echo deep > {deep}/deep.txt")}),
            ),
            call(
                "write_file",
                json!({"path": "normal.txt", "content": "normal\n"}),
            ),
            complete_report("made a deep tree and a normal file"),
        ])],
    );
    let run_dir = tmp.path().join("run");
    let backend = format!("script:{}", script.display());
    let mut args = vec!["--backend", backend.as_str()];
    args.extend(sandbox_args());
    args.push("nest deeply");
    let out = headless(repo.path(), &run_dir, &args).output().unwrap();
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let events = events(&out.stdout);

    let finished = of_type(&events, "round_finished");
    assert_eq!(finished[0]["files_changed"], 1, "{}", finished[0]);
    assert!(
        finished[0].get("changes_unknown").is_none(),
        "{}",
        finished[0]
    );
    let patch = std::fs::read_to_string(run_dir.join("rounds/01/diff.patch")).unwrap();
    assert!(
        patch.contains("diff --git a/normal.txt b/normal.txt"),
        "{patch}"
    );
    let changed = of_type(&events, "workspace_changed");
    assert_eq!(changed[0]["files"][0]["path"], "normal.txt");
    let warnings: Vec<&str> = of_type(&events, "warning")
        .iter()
        .filter_map(|w| w["message"].as_str())
        .collect();
    let named = nested("d", 100);
    assert_eq!(
        warnings.iter().filter(|w| w.contains(&named)).count(),
        1,
        "the deep directory is named once: {warnings:?}"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&named),
        "the person sees the warning"
    );
}

#[test]
fn the_review_names_what_it_could_not_see_and_never_claims_no_changes() {
    use crossterm::event::KeyCode;
    use ralph_tui::protocol::event::RunStatus;
    use ralph_tui::screens::state::{DiffSource, Msg};

    use super::super::ui::fixtures::{finished, press, screen};

    let mut state = finished(RunStatus::Complete, None);
    let unseen = DiffModel {
        unseen: vec![nested("d", 100)],
        ..DiffModel::default()
    };
    state.update(Msg::DiffLoaded(DiffSource::Review, Ok(unseen)));
    let text = screen(&mut state, 120, 40);
    assert!(text.contains("could not look into"), "{text}");
    assert!(
        text.contains("d/d/d/d/d (nested too deep for git)"),
        "{text}"
    );
    assert!(!text.contains("changed no files"), "{text}");
    assert!(!text.contains("no changes"), "{text}");
    press(&mut state, KeyCode::Char('c'));
    let notice = state.notice.clone().unwrap_or_default();
    assert!(notice.contains("could not be looked into"), "{notice}");
    assert!(!notice.contains("the run changed no files"), "{notice}");

    state.update(Msg::DiffLoaded(
        DiffSource::Review,
        Err("git: directory nesting too deep".into()),
    ));
    press(&mut state, KeyCode::Char('c'));
    let notice = state.notice.clone().unwrap_or_default();
    assert!(notice.contains("could not be read"), "{notice}");
}

#[test]
fn a_snapshot_that_fails_is_a_warning_and_the_round_is_not_reported_as_unchanged() {
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    // The object store goes away mid-round: no snapshot can be written after that.
    let script = script(
        tmp.path(),
        vec![turns(&[
            call(
                "write_file",
                json!({"path": "normal.txt", "content": "normal\n"}),
            ),
            call(
                "run_command",
                json!({"command": "mv .git/objects .git/objects.away && touch .git/objects"}),
            ),
            complete_report("broke the object store"),
        ])],
    );
    let run_dir = tmp.path().join("run");
    let backend = format!("script:{}", script.display());
    let args = ["--backend", &backend, "--sandbox", "off", "break things"];
    let out = headless(repo.path(), &run_dir, &args).output().unwrap();
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let events = events(&out.stdout);
    let warnings: Vec<&str> = of_type(&events, "warning")
        .iter()
        .filter_map(|w| w["message"].as_str())
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("could not snapshot the workspace at the round's end")),
        "{warnings:?}"
    );
    let finished = of_type(&events, "round_finished");
    assert_eq!(finished[0]["changes_unknown"], true, "{}", finished[0]);
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("round 1: its changes are not known")
                && w.contains("not because nothing changed")),
        "{warnings:?}"
    );
}

#[test]
fn a_round_whose_changes_are_unknown_never_reads_as_no_changes() {
    use ralph_tui::protocol::event::{Event, RoundOutcome};
    use ralph_tui::screens::Theme;

    use super::super::ui::fixtures::{mid_run, screen, send};

    let mut state = mid_run(Theme::default());
    send(
        &mut state,
        Event::RoundFinished {
            round: 3,
            outcome: RoundOutcome::Reported,
            prompt_tokens: 900,
            generated_tokens: 120,
            wall_ms: 4200,
            files_changed: 0,
            insertions: 0,
            deletions: 0,
            error: None,
            changes_unknown: true,
        },
    );
    let text = screen(&mut state, 140, 40);
    let row: Vec<&str> = text.lines().filter(|l| l.contains("Round 3")).collect();
    assert!(row.iter().any(|l| l.contains("changes unknown")), "{text}");
    assert!(row.iter().all(|l| !l.contains("no changes")), "{text}");
    assert!(
        text.contains("round 3 reported · 120 tokens · 4.2 s · changes unknown"),
        "{text}"
    );
}
