//! Whose changes: paths that change while the worker's tools and commands run are the run's;
//! a file the person edits meanwhile is marked "changed outside the run", named in a warning,
//! and left out of the commit at review.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use ralph_tui::config::Settings;
use ralph_tui::protocol::event::{ChangedFile, Event, RunStatus, Stamped};
use ralph_tui::screens::state::{CommitState, Loadable, Overlay};
use ralph_tui::screens::{Phase, State, Theme};
use ralph_tui::terminal::{event_loop, setup_of};
use ralph_tui::tools::approval::DenyAll;
use ralph_tui::workspace::{Attribution, Workspace};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use serde_json::json;

use super::super::common::*;
use super::git;

fn settings(repo: &Path, tmp: &Path, script: &Path) -> Settings {
    let sandbox = ralph_tui::tools::sandbox::probe_with(Path::new(BIN));
    let mode = ralph_tui::protocol::policy::SandboxMode::WorkspaceWrite;
    let extra: &[&str] = if sandbox.check(mode, false).is_err() {
        &["--sandbox", "off"]
    } else {
        &[]
    };
    script_settings(repo, tmp, script, extra, "write some files")
}

fn marks(files: &[ChangedFile]) -> Vec<(String, bool)> {
    files
        .iter()
        .map(|f| (f.path.clone(), f.outside_run))
        .collect()
}

fn warnings(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Warning { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn edits_between_tool_calls_or_rounds_are_outside_the_run_warned_and_not_committed() {
    let repo = TempRepo::new();
    repo.write("user.txt", "mine\n");
    repo.write("between.txt", "mine too\n");
    repo.commit_all("start");
    let tmp = tempfile::tempdir().unwrap();
    let script = script(
        tmp.path(),
        vec![
            turns(&[
                call(
                    "run_command",
                    json!({"command": "echo by the command > cmd.txt"}),
                ),
                call(
                    "write_file",
                    json!({"path": "w.txt", "content": "by the tool\n"}),
                ),
                continue_report("wrote two files"),
            ]),
            turns(&[
                call(
                    "edit_file",
                    json!({"path": "w.txt", "old": "by the tool", "new": "edited by the tool"}),
                ),
                complete_report("edited one"),
            ]),
        ],
    );
    let settings = settings(repo.path(), tmp.path(), &script);
    let prepared = ralph_tui::app::prepare(&settings).unwrap();
    let ws = Workspace::open(repo.path()).unwrap();
    let baseline = ws.baseline().unwrap();

    // The sink runs on the engine's thread before it goes on, so these edits land exactly
    // between two tool calls of round 1, and between rounds 1 and 2.
    let seen: Arc<Mutex<Vec<Event>>> = Arc::default();
    let sink_seen = Arc::clone(&seen);
    let root: PathBuf = repo.path().to_path_buf();
    let sink = Box::new(move |stamped: &Stamped| {
        match &stamped.event {
            Event::ToolResult { round: 1, name, .. } if name == "run_command" => {
                std::fs::write(root.join("user.txt"), "mine, edited during the run\n").unwrap();
            }
            Event::RoundFinished { round: 1, .. } => {
                std::fs::write(root.join("between.txt"), "edited between rounds\n").unwrap();
            }
            _ => {}
        }
        sink_seen.lock().unwrap().push(stamped.event.clone());
    });
    let handle =
        ralph_tui::app::start(prepared, "write some files".into(), Arc::new(DenyAll), sink)
            .unwrap();
    let summary = handle.join().unwrap();
    assert_eq!(summary.status, RunStatus::Complete, "{:?}", summary.error);
    let events = seen.lock().unwrap().clone();

    let changed: Vec<(u32, Vec<ChangedFile>)> = events
        .iter()
        .filter_map(|e| match e {
            Event::WorkspaceChanged { round, files } => Some((*round, files.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(changed.len(), 2, "{changed:?}");
    assert_eq!(
        marks(&changed[0].1),
        vec![
            ("cmd.txt".into(), false),
            ("user.txt".into(), true),
            ("w.txt".into(), false)
        ],
        "what the command and the tool wrote is the run's; the person's edit is not"
    );
    assert_eq!(marks(&changed[1].1), vec![("w.txt".into(), false)]);
    let warnings = warnings(&events);
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("outside the run during round 1") && w.contains("user.txt")),
        "{warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("between rounds 1 and 2") && w.contains("between.txt")),
        "{warnings:?}"
    );

    // In events.jsonl the mark is a field added only where it is true.
    let log = std::fs::read_to_string(tmp.path().join("run/events.jsonl")).unwrap();
    assert_eq!(log.matches("\"outside_run\":true").count(), 1, "{log}");
    assert!(!log.contains("\"outside_run\":false"));

    // The review, as the TUI makes it: the cumulative diff marked by the rounds' files.
    let mut worker = Attribution::new();
    for (_, files) in &changed {
        worker.add(
            files
                .iter()
                .filter(|f| !f.outside_run)
                .map(|f| f.path.clone()),
        );
    }
    let last = ws.snapshot().unwrap();
    let mut review = ws.diff(&baseline.snapshot, &last).unwrap();
    worker.mark(&mut review);
    assert_eq!(review.outside_run(), vec!["between.txt", "user.txt"]);
    let done = ws
        .commit_run_only(&baseline, &last, "The run's work", &review.worker_paths())
        .unwrap();
    assert_eq!(done.files_changed, 2);
    let status = git(repo.path(), &["status", "--porcelain"]);
    assert_eq!(
        String::from_utf8_lossy(&status.stdout),
        " M between.txt\n M user.txt\n",
        "the person's edits stay in the work tree, uncommitted"
    );
    assert_eq!(repo.read("user.txt"), "mine, edited during the run\n");
}

fn key(code: KeyCode, modifiers: KeyModifiers) -> std::io::Result<TermEvent> {
    Ok(TermEvent::Key(KeyEvent::new(code, modifiers)))
}

#[test]
fn commit_at_review_leaves_a_file_edited_outside_the_run_uncommitted() {
    let repo = TempRepo::new();
    repo.write("user.txt", "mine\n");
    repo.commit_all("start");
    let tmp = tempfile::tempdir().unwrap();
    let first = call(
        "run_command",
        json!({"command": "echo by the command > cmd.txt"}),
    );
    let first_pieces = ralph_tui::llm::script::pieces(&first).len() as u64;
    // The second turn is slow: the person's edit lands while the worker is generating, when
    // no tool of the run is working.
    let second = format!(
        "{}{}",
        "thinking ".repeat(300),
        complete_report("wrote cmd.txt")
    );
    let script = script_with_delay(tmp.path(), vec![turns(&[first, second])], 10);
    let settings = settings(repo.path(), tmp.path(), &script);
    let prepared = ralph_tui::app::prepare(&settings).unwrap();
    let state = State::new(
        setup_of(&prepared),
        settings.objective.clone(),
        Theme::default(),
    );
    let (keys, input) = futures::channel::mpsc::unbounded();
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut edited = false;
    let mut asked = false;
    let mut committed = false;
    let mut review_screen = String::new();
    let root = repo.path().to_path_buf();
    let ended = runtime.block_on(event_loop::drive(
        &mut terminal,
        input,
        state,
        prepared,
        &mut |state: &State| {
            if !edited && state.phase == Phase::Running && state.meters.tokens_total > first_pieces
            {
                edited = true;
                std::fs::write(root.join("user.txt"), "mine, edited during the run\n").unwrap();
            }
            let Some(review) = &state.review.shown else {
                return;
            };
            if !asked && matches!(review.diff, Loadable::Ready(_)) {
                asked = true;
                if let Loadable::Ready(diff) = &review.diff {
                    review_screen = format!("{:?}", diff.outside_run());
                }
                keys.unbounded_send(key(KeyCode::Char('c'), KeyModifiers::NONE))
                    .unwrap();
            }
            if asked && matches!(state.overlay(), Some(Overlay::Commit(_))) && !committed {
                committed = true;
                keys.unbounded_send(key(KeyCode::Char('s'), KeyModifiers::CONTROL))
                    .unwrap();
            }
            if matches!(review.commit, CommitState::Done(_) | CommitState::Failed(_)) {
                keys.unbounded_send(key(KeyCode::Char('q'), KeyModifiers::NONE))
                    .unwrap();
            }
        },
    ));
    assert!(edited, "the edit was made during the run");
    assert!(
        ended
            .message
            .as_deref()
            .unwrap_or_default()
            .contains("committed"),
        "{:?}",
        ended.message
    );
    assert_eq!(review_screen, "[\"user.txt\"]");
    let show = git(repo.path(), &["show", "--stat", "--format=", "HEAD"]);
    let stat = String::from_utf8_lossy(&show.stdout);
    assert!(stat.contains("cmd.txt"), "{stat}");
    assert!(!stat.contains("user.txt"), "{stat}");
    let status = git(repo.path(), &["status", "--porcelain"]);
    assert_eq!(String::from_utf8_lossy(&status.stdout), " M user.txt\n");
}

#[test]
fn file_tools_name_the_file_they_write_readers_write_nothing_and_commands_anything() {
    use ralph_tui::tools::{Registry, Writes};

    let repo = TempRepo::new();
    let root = repo.path().canonicalize().unwrap();
    let registry = Registry::standard();
    let path = json!({"path": "sub/../a.txt", "content": "x", "old": "x", "new": "y"});
    for tool in ["write_file", "edit_file"] {
        assert_eq!(
            registry.writes(tool, &path, &root),
            Writes::Files(vec![root.join("a.txt")]),
            "{tool}"
        );
    }
    for tool in ["read_file", "list_dir", "search", "no_such_tool"] {
        assert_eq!(
            registry.writes(tool, &path, &root),
            Writes::Nothing,
            "{tool}"
        );
    }
    let command = json!({"command": "touch b.txt"});
    assert_eq!(
        registry.writes("run_command", &command, &root),
        Writes::Anything
    );
}

#[test]
fn the_changes_list_the_review_and_the_commit_dialog_set_outside_files_apart() {
    use ralph_tui::protocol::event::RoundOutcome;
    use ralph_tui::screens::state::{DiffSource, Msg};
    use ralph_tui::workspace::{DiffModel, FileDiff};

    use super::super::ui::fixtures::{changed, finish_round, finished, mid_run, press, screen};

    let mut running = mid_run(Theme::default());
    let mut theirs = changed("notes.md", "modified", 1, 0);
    theirs.outside_run = true;
    finish_round(
        &mut running,
        3,
        RoundOutcome::Reported,
        vec![changed("slug.py", "modified", 3, 2), theirs],
    );
    let text = screen(&mut running, 140, 40);
    let marked: Vec<&str> = text.lines().filter(|l| l.contains("notes.md")).collect();
    assert!(
        marked.iter().any(|l| l.contains("outside the run")),
        "{text}"
    );
    assert!(
        text.lines()
            .filter(|l| l.contains("slug.py"))
            .all(|l| !l.contains("outside the run")),
        "{text}"
    );

    let file = |path: &str, outside_run: bool| FileDiff {
        insertions: 1,
        outside_run,
        ..FileDiff::modified(path.into())
    };
    let mut review = finished(RunStatus::Complete, None);
    let model = DiffModel {
        files: vec![file("slug.py", false), file("notes.md", true)],
        ..DiffModel::default()
    };
    review.update(Msg::DiffLoaded(DiffSource::Review, Ok(model)));
    let text = screen(&mut review, 140, 40);
    assert!(text.contains("Changes (2, 1 outside the run)"), "{text}");
    press(&mut review, KeyCode::Char('c'));
    assert!(matches!(review.overlay(), Some(Overlay::Commit(_))));
    let text = screen(&mut review, 140, 40);
    assert!(
        text.contains("files changed outside the run stay out"),
        "{text}"
    );

    let mut only_theirs = finished(RunStatus::Complete, None);
    let model = DiffModel {
        files: vec![file("notes.md", true)],
        ..DiffModel::default()
    };
    only_theirs.update(Msg::DiffLoaded(DiffSource::Review, Ok(model)));
    press(&mut only_theirs, KeyCode::Char('c'));
    assert!(only_theirs.overlay().is_none());
    let notice = only_theirs.notice.clone().unwrap_or_default();
    assert!(
        notice.contains("every change was made outside the run"),
        "{notice}"
    );
}
