//! `ralph-tui runs`, `show` and `replay`: past runs listed newest first (a killed one too),
//! summarised, pruned only as told, and replayed into the same review the live run ended on.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use ralph_tui::screens::{State, Theme};
use ralph_tui::terminal::replay::{in_review, Player, Recording};
use ralph_tui::terminal::{event_loop, setup_of};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use serde_json::Value;

use super::common::*;
use super::ui::fixtures::{buffer_text, filtered};

fn ralph(home: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(BIN);
    isolate(&mut cmd, home);
    cmd.args(args).stdin(Stdio::null()).output().unwrap()
}

fn runs_dir(home: &Path) -> PathBuf {
    home.join("data").join("ralph-tui").join("runs")
}

/// A headless run into the isolated data dir; returns its id.
fn finished_run(home: &Path, repo: &Path, objective: &str, rounds: Vec<Value>) -> String {
    let script = script(home, rounds);
    let backend = format!("script:{}", script.display());
    let out = ralph(
        home,
        &[
            "--headless",
            "-C",
            repo.to_str().unwrap(),
            "--backend",
            &backend,
            objective,
        ],
    );
    let events = events(&out.stdout);
    of_type(&events, "run_started")[0]["run_id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Makes a finished run look killed: no end in run.json, no `run_finished`.
fn kill_afterwards(dir: &Path) {
    let mut info: Value =
        serde_json::from_slice(&std::fs::read(dir.join("run.json")).unwrap()).unwrap();
    info["status"] = Value::Null;
    info["finished_at"] = Value::Null;
    std::fs::write(dir.join("run.json"), info.to_string()).unwrap();
    let log = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    let cut: Vec<&str> = log
        .lines()
        .filter(|l| !l.contains(r#""type":"run_finished""#))
        .collect();
    std::fs::write(dir.join("events.jsonl"), cut.join("\n") + "\n").unwrap();
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Three runs: complete (two rounds, a file written), blocked, and one killed mid-run.
fn three_runs(home: &Path, repo: &Path) -> [String; 3] {
    let write = call(
        "write_file",
        serde_json::json!({"path": "notes.txt", "content": "one\ntwo\n"}),
    );
    let complete = finished_run(
        home,
        repo,
        "write the notes\nwith two lines",
        vec![
            turns(&[write, continue_report("wrote the notes")]),
            turns(&[complete_report("notes are there")]),
        ],
    );
    let blocked = finished_run(
        home,
        repo,
        "fix the network",
        vec![turns(&[report(
            "blocked",
            "stuck",
            &[],
            &[],
            "no network here",
        )])],
    );
    let killed = finished_run(
        home,
        repo,
        "a run that gets killed",
        vec![
            turns(&[continue_report("first round")]),
            turns(&[continue_report("second")]),
        ],
    );
    kill_afterwards(&runs_dir(home).join(&killed));
    [complete, blocked, killed]
}

#[test]
fn runs_lists_newest_first_with_a_killed_one_and_show_summarises_each() {
    let repo = TempRepo::new();
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let [complete, blocked, killed] = three_runs(home, repo.path());

    let out = ralph(home, &["runs", "--json"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let listed: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<&str> = listed.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [&killed, &blocked, &complete]);
    let outcomes: Vec<&str> = listed
        .iter()
        .map(|r| r["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["killed", "blocked", "complete"]);
    let rounds: Vec<u64> = listed
        .iter()
        .map(|r| r["rounds"].as_u64().unwrap())
        .collect();
    // The killed run's script ran out in round 3.
    assert_eq!(rounds, [3, 1, 2]);
    assert_eq!(listed[2]["objective"], "write the notes");
    let workspace = repo.path().canonicalize().unwrap();
    assert_eq!(listed[0]["repository"], workspace.display().to_string());

    let table = stdout(&ralph(home, &["runs"]));
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 4, "{table}");
    assert!(lines[0].starts_with("ID"), "{table}");
    assert!(
        lines[1].starts_with(&killed) && lines[1].contains("killed"),
        "{table}"
    );
    assert!(lines[3].contains("write the notes") && !table.contains("with two lines"));

    let shown = ralph(home, &["show", &complete[..complete.len() - 1]]);
    assert_eq!(code(&shown), 0);
    let shown = stdout(&shown);
    for needle in [
        format!("run {complete}"),
        "outcome: complete after 2 rounds".to_string(),
        "round 1: reported".to_string(),
        "report: continue — wrote the notes".to_string(),
        "A notes.txt +2 −0".to_string(),
        "round 2: reported".to_string(),
        "report: complete — notes are there".to_string(),
        "verification: none".to_string(),
    ] {
        assert!(shown.contains(&needle), "{needle:?} in\n{shown}");
    }
    let last = stdout(&ralph(home, &["show", "last"]));
    assert!(last.contains(&format!("run {killed}")), "{last}");
    assert!(
        last.contains("outcome: killed after 3 rounds — no end was recorded"),
        "{last}"
    );
    let blocked_text = stdout(&ralph(home, &["show", &blocked]));
    assert!(
        blocked_text.contains("blocker: no network here"),
        "{blocked_text}"
    );

    // Replay needs a terminal; without one it says so.
    let replay = ralph(home, &["replay", "last"]);
    assert_eq!(code(&replay), 2);
    assert!(String::from_utf8_lossy(&replay.stderr).contains("replay needs a terminal"));

    let missing = ralph(home, &["show", "2999"]);
    assert_eq!(code(&missing), 2);
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no run '2999'"));
}

#[test]
fn prune_without_a_terminal_removes_only_what_it_is_told() {
    let repo = TempRepo::new();
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let [complete, blocked, killed] = three_runs(home, repo.path());

    // No terminal to ask and nothing chosen: a usage error, nothing removed.
    let asked = ralph(home, &["runs", "--prune"]);
    assert_eq!(code(&asked), 2);
    assert!(String::from_utf8_lossy(&asked.stderr).contains("--all-finished"));
    assert_eq!(std::fs::read_dir(runs_dir(home)).unwrap().count(), 3);
    // Selectors need --prune.
    assert_eq!(code(&ralph(home, &["runs", "--all-finished"])), 2);

    let one = ralph(home, &["runs", "--prune", &blocked]);
    assert_eq!(code(&one), 0);
    assert_eq!(stdout(&one), format!("removed {blocked}\n"));
    assert!(!runs_dir(home).join(&blocked).exists());

    // Nothing is older than a day; every finished run goes, the killed one stays.
    let old = ralph(home, &["runs", "--prune", "--older-than", "1d"]);
    assert_eq!(stdout(&old), "");
    let finished = ralph(home, &["runs", "--prune", "--all-finished"]);
    assert_eq!(stdout(&finished), format!("removed {complete}\n"));
    let left = stdout(&ralph(home, &["runs"]));
    assert_eq!(left.lines().count(), 2, "{left}");
    assert!(left.contains(&killed));
}

/// Writes one stored prefix state (header and state file) of `bytes` bytes, used `age_s`
/// seconds ago, into `home`'s prefix cache.
fn stored_prefix(home: &Path, name: &str, bytes: usize, age_s: u64) -> PathBuf {
    use ralph_tui::llm::prefix_store::{PrefixKey, PrefixStore, DEFAULT_LIMIT_BYTES};
    let store = PrefixStore::in_cache(&home.join("cache").join("ralph-tui"), DEFAULT_LIMIT_BYTES);
    let key = PrefixKey {
        model_sha256: name.repeat(64),
        prefix_sha256: "p".repeat(64),
        prefix_tokens: 10,
        llama_cpp_2: "0.1.160".into(),
        n_ctx: 512,
        n_batch: 64,
        n_ubatch: 64,
        kv_type: "F16/F16".into(),
        device: "CPU".into(),
    };
    store
        .save(&key, |path| {
            std::fs::write(path, vec![1u8; bytes]).map_err(|e| e.to_string())
        })
        .unwrap();
    let header = store.header_path(&key);
    let file = std::fs::File::options().append(true).open(&header).unwrap();
    file.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(age_s))
        .unwrap();
    store.state_path(&key)
}

#[test]
fn prune_also_bounds_the_prefix_cache_to_the_configured_size() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let old = stored_prefix(home, "a", 700 << 10, 600);
    let new = stored_prefix(home, "b", 700 << 10, 60);
    std::fs::create_dir_all(home.join("config").join("ralph-tui")).unwrap();
    std::fs::write(
        home.join("config").join("ralph-tui").join("config.toml"),
        "prefix_cache_max_mib = 1\n",
    )
    .unwrap();
    // Nothing to remove among the runs; the prefix cache is still bounded.
    let pruned = ralph(home, &["runs", "--prune", "--all-finished"]);
    assert_eq!(code(&pruned), 0);
    assert!(!old.exists(), "the least recently used state stays");
    assert!(new.exists(), "the most recently used state went");
    assert!(
        stdout(&pruned).contains("prefix cache: removed 2 file(s)"),
        "{}",
        stdout(&pruned)
    );
    // Within the bound: nothing removed, nothing said.
    let again = ralph(home, &["runs", "--prune", "--all-finished"]);
    assert_eq!(stdout(&again), "");
    assert!(new.exists());
}

#[test]
fn the_word_runs_is_still_an_objective_after_a_double_dash() {
    let repo = TempRepo::new();
    let home = tempfile::tempdir().unwrap();
    let script = script(home.path(), vec![turns(&[complete_report("ran")])]);
    let backend = format!("script:{}", script.display());
    let out = ralph(
        home.path(),
        &[
            "--headless",
            "-C",
            repo.path().to_str().unwrap(),
            "--backend",
            &backend,
            "--",
            "runs",
        ],
    );
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let events = events(&out.stdout);
    assert_eq!(of_type(&events, "run_started")[0]["objective"], "runs");
}

const W: u16 = 100;
const H: u16 = 30;

fn render(state: &mut State) -> String {
    let mut terminal = Terminal::new(TestBackend::new(W, H)).unwrap();
    state.sync(ratatui::layout::Rect::new(0, 0, W, H));
    terminal
        .draw(|frame| frame.render_widget(&*state, frame.area()))
        .unwrap();
    buffer_text(terminal.backend().buffer())
}

/// The live TUI on a scripted run, to its review; returns the review screen and the run dir.
fn live_review(repo: &Path, tmp: &Path) -> (String, PathBuf) {
    let write = call(
        "write_file",
        serde_json::json!({"path": "notes.txt", "content": "one\ntwo\n"}),
    );
    let edit = call(
        "write_file",
        serde_json::json!({"path": "README.md", "content": "# notes\n"}),
    );
    let script = script(
        tmp,
        vec![
            turns(&[write, continue_report("wrote the notes")]),
            turns(&[edit, complete_report("notes are there")]),
        ],
    );
    let settings = script_settings(repo, tmp, &script, &[], "write the notes");
    let prepared = ralph_tui::app::prepare(&settings).unwrap();
    let run_dir = prepared.run_dir.clone();
    let state = State::new(
        setup_of(&prepared),
        settings.objective.clone(),
        Theme::plain(),
    );
    let (keys, input) = futures::channel::mpsc::unbounded();
    let mut terminal = Terminal::new(TestBackend::new(W, H)).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut review = None;
    let mut quit_sent = false;
    runtime.block_on(event_loop::drive(
        &mut terminal,
        input,
        state,
        prepared,
        &mut |state| {
            let loaded =
                state.review.shown.as_ref().is_some_and(|r| {
                    matches!(r.diff, ralph_tui::screens::state::Loadable::Ready(_))
                });
            if loaded && !quit_sent {
                let mut shown = state.clone();
                review = Some(render(&mut shown));
                quit_sent = true;
                keys.unbounded_send(Ok(crossterm::event::Event::Key(
                    crossterm::event::KeyEvent::new(
                        crossterm::event::KeyCode::Char('q'),
                        crossterm::event::KeyModifiers::NONE,
                    ),
                )))
                .unwrap();
            }
        },
    ));
    (review.expect("the live run reached its review"), run_dir)
}

/// The script's file name, however much of it the header has room for.
fn script_name(screen: &str) -> String {
    let name = regex::Regex::new(r"script-[0-9A-Za-z\[\]]+…").unwrap();
    name.replace_all(screen, "script-[NAME]…").into_owned()
}

/// A screen without its first and last lines.
fn between(screen: &str) -> Vec<&str> {
    let lines: Vec<&str> = screen.lines().collect();
    lines[1..lines.len() - 1].to_vec()
}

#[test]
fn a_replay_ends_on_the_same_review_as_the_live_run() {
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let (live, run_dir) = live_review(repo.path(), tmp.path());

    let recording = Recording::load(&run_dir).unwrap();
    let mut player = Player::new(recording, 1.0, Theme::plain());
    assert_eq!(player.play_to_end(), None);
    assert!(in_review(&player.state));
    let replayed = render(&mut player.state);
    // The same review, but for the header and the status line, which say it is a replay.
    assert_eq!(between(&filtered(&replayed)), between(&filtered(&live)));
    let total = player.recording.events.len();
    let header = replayed.lines().next().unwrap();
    assert!(
        header.starts_with(&format!(" REPLAY ×1 · {total}/{total} ")),
        "{header}"
    );
    let status = replayed.lines().last().unwrap();
    assert!(
        status.contains("read-only") && status.contains("q leave"),
        "{status}"
    );
    assert!(!status.contains("c commit"), "{status}");
    let repo_name = regex::Regex::new(r"\.tmp[A-Za-z0-9]+").unwrap();
    insta::assert_snapshot!(
        "replay_review_100x30",
        script_name(&repo_name.replace_all(&filtered(&replayed), "[REPO]"))
    );

    // Commit is refused; the review stays, saying why.
    let commit = crossterm::event::KeyEvent::new(
        crossterm::event::KeyCode::Char('c'),
        crossterm::event::KeyModifiers::NONE,
    );
    assert_eq!(player.key(commit), None);
    assert!(player.state.overlay().is_none());
    let shown = render(&mut player.state);
    assert!(
        shown.contains("replay: read-only, commit is disabled"),
        "{shown}"
    );
    // `q` leaves, as at a live review.
    let quit = crossterm::event::KeyEvent::new(
        crossterm::event::KeyCode::Char('q'),
        crossterm::event::KeyModifiers::NONE,
    );
    assert_eq!(player.key(quit), Some(ralph_tui::error::ExitCode::Complete));
    assert_eq!(repo.read("notes.txt"), "one\ntwo\n");
    assert!(git2::Repository::open(repo.path())
        .unwrap()
        .statuses(None)
        .unwrap()
        .iter()
        .any(|s| s.path() == Some("notes.txt")));
}

#[test]
fn seeking_by_round_lands_where_a_straight_play_does() {
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let (_, run_dir) = live_review(repo.path(), tmp.path());
    let recording = Recording::load(&run_dir).unwrap();
    let starts = recording.round_starts();
    assert_eq!(starts.len(), 2);

    let mut seeking = Player::new(recording.clone(), 1.0, Theme::plain());
    seeking.seek_round(true);
    seeking.seek_round(true);
    assert_eq!(seeking.next, starts[1] + 1);
    let mut straight = Player::new(recording.clone(), 1.0, Theme::plain());
    while straight.next <= starts[1] {
        straight.step();
    }
    assert_eq!(render(&mut seeking.state), render(&mut straight.state));
    assert_eq!(seeking.state.round, 2);

    // Back: to this round's start, then the one before.
    seeking.step();
    seeking.seek_round(false);
    assert_eq!(seeking.next, starts[1] + 1);
    seeking.seek_round(false);
    assert_eq!(seeking.next, starts[0] + 1);
    assert_eq!(seeking.state.round, 1);

    // Played on from a seek, it ends on the review all the same.
    seeking.play_to_end();
    let mut whole = Player::new(recording, 4.0, Theme::plain());
    whole.play_to_end();
    // The same but for the speed in the header.
    assert_eq!(
        render(&mut seeking.state).replacen("REPLAY ×1 ", "REPLAY ×4 ", 1),
        render(&mut whole.state)
    );
    assert!(whole.delay().is_none());
}

#[test]
fn a_replay_says_it_is_one_and_answers_at_once_what_it_cannot_do() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use ralph_tui::terminal::replay::{NOTHING_TO_CANCEL, READ_ONLY};
    let key = |c: KeyCode| KeyEvent::new(c, KeyModifiers::NONE);
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let (_, run_dir) = live_review(repo.path(), tmp.path());
    let recording = Recording::load(&run_dir).unwrap();
    let total = recording.events.len();
    let mut player = Player::new(recording, 2.0, Theme::plain());
    player.seek_round(true);
    let at = player.next;
    assert_eq!(player.key(key(KeyCode::Char('p'))), None);
    let screen = render(&mut player.state);
    let header = screen.lines().next().unwrap();
    assert!(
        header.starts_with(&format!(" REPLAY ×2 · {at}/{total} · paused ")),
        "{header}"
    );
    let status = screen.lines().last().unwrap();
    assert!(
        status.contains("p pause") && !status.contains("Esc cancel"),
        "{status}"
    );
    // Too narrow for all its keys, the line leaves the last out whole.
    assert!(!status.contains('…'), "{status}");
    let mid = regex::Regex::new(r"\.tmp[A-Za-z0-9]+").unwrap();
    insta::assert_snapshot!(
        "replay_paused_in_round_1_100x30",
        script_name(&mid.replace_all(&filtered(&screen), "[REPO]"))
    );
    // Esc does not walk into the cancel question: there is nothing to cancel.
    assert_eq!(player.key(key(KeyCode::Esc)), None);
    assert!(player.state.overlay().is_none());
    assert_eq!(player.state.notice.as_deref(), Some(NOTHING_TO_CANCEL));
    // Help offers only what a replay acts on.
    assert_eq!(player.key(key(KeyCode::Char('?'))), None);
    assert!(matches!(
        player.state.overlay(),
        Some(ralph_tui::screens::state::Overlay::Help(h)) if h.replay
    ));
    assert_eq!(player.key(key(KeyCode::Esc)), None);
    assert!(player.state.overlay().is_none());
    let text = |replay: bool| -> String {
        ralph_tui::screens::views::help::lines(Theme::plain(), replay)
            .iter()
            .map(|l| l.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let (replayed, live) = (text(true), text(false));
    for offered in [
        "pause / resume",
        "one event forward",
        "this help",
        "scroll a page",
    ] {
        assert!(replayed.contains(offered), "{offered}:\n{replayed}");
    }
    for gone in [
        "commit the chosen files",
        "revert one round",
        "ask to cancel",
        "Objective editor",
        "Cancel question",
        "Review of a worktree run",
    ] {
        assert!(!replayed.contains(gone), "{gone}:\n{replayed}");
        assert!(
            live.contains(gone),
            "{gone} is no longer a key of the live run"
        );
    }
    // At the review, every key that would change something answers read-only at once.
    player.play_to_end();
    for c in ['c', 'u', 'd', ' ', 'A', 'X'] {
        assert_eq!(player.key(key(KeyCode::Char(c))), None);
        assert!(player.state.overlay().is_none(), "{c}: a question opened");
        assert_eq!(player.state.notice.as_deref(), Some(READ_ONLY), "{c}");
    }
}

#[test]
fn the_runs_table_keeps_the_objectives_in_line_beside_a_worktree_run() {
    use ralph_tui::runs::history::{table, Entry};
    let entry = |id: &str, branch: Option<&str>, objective: &str| Entry {
        id: id.into(),
        started_at: "2026-01-01T09:00:00+00:00".into(),
        repository: "/src/demo".into(),
        branch: branch.map(String::from),
        objective: objective.into(),
        outcome: "complete".into(),
        rounds: 2,
        dir: std::path::PathBuf::from("/runs/x"),
    };
    let text = table(&[
        entry(
            "20260101-090000-abcd",
            Some("ralph/20260101-090000-abcd"),
            "fix the parser",
        ),
        entry("20260101-080000-ef01", None, "add a test"),
    ]);
    let columns: Vec<usize> = text
        .lines()
        .zip(["OBJECTIVE", "fix the parser", "add a test"])
        // The objective ends each line: where it starts is the line's length less its own.
        .map(|(line, word)| line.chars().count() - word.chars().count())
        .collect();
    assert!(columns.windows(2).all(|w| w[0] == w[1]), "{text}");
    assert!(
        text.contains("demo ⎇ ralph/20260101-090000-abcd fix the parser"),
        "{text}"
    );
}
