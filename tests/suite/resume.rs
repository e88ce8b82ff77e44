//! `--resume`: a run that stopped early goes on in its own run directory, from the round after
//! its last started one, with its last valid report, and every case it cannot go on is one
//! line and exit 2. Runs go to the isolated data dir (no `--run-dir`), as a person's would.

use std::collections::BTreeMap;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use ralph_tui::engine::prompt::{agents_file, RoundPrompt};
use ralph_tui::protocol::report::Report;
use ralph_tui::tools::Registry;
use serde_json::Value;

use super::common::*;

/// A headless run with HOME and the XDG dirs under `home`, so runs land in its data dir.
fn ralph(home: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    isolate(&mut cmd, home);
    cmd.arg("--headless").args(args);
    cmd
}

fn run(home: &Path, args: &[&str]) -> (Output, Vec<Value>) {
    let out = ralph(home, args).output().unwrap();
    let events = events(&out.stdout);
    (out, events)
}

fn backend(script: &Path) -> String {
    format!("script:{}", script.display())
}

fn runs_dir(home: &Path) -> PathBuf {
    home.join("data").join("ralph-tui").join("runs")
}

fn run_ids(home: &Path) -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(runs_dir(home))
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    ids.sort();
    ids
}

fn started(events: &[Value]) -> (String, PathBuf) {
    let start = of_type(events, "run_started")[0];
    (
        start["run_id"].as_str().unwrap().to_string(),
        PathBuf::from(start["run_dir"].as_str().unwrap()),
    )
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Every file of a directory with its bytes, to show a run directory was not touched.
fn contents(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(dir: &Path, base: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, base, out);
            } else {
                let rel = path.strip_prefix(base).unwrap().to_path_buf();
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// The messages a fresh round would be given, built by the same code the engine uses.
fn expected_messages(
    repo: &Path,
    objective: &str,
    round: u32,
    max: u32,
    previous: &Report,
    observation: Option<&str>,
) -> Value {
    let format = ralph_tui::chat::by_name("hermes").unwrap();
    let tools = Registry::standard().specs();
    let instructions = format.tool_instructions(&tools);
    let agents = agents_file(repo).unwrap();
    let messages = RoundPrompt {
        objective,
        round,
        max_rounds: max,
        previous: Some(previous),
        agents: agents.as_deref(),
        tool_instructions: &instructions,
        observation,
        notes: &[],
    }
    .messages();
    serde_json::to_value(messages).unwrap()
}

fn report_of(run_dir: &Path, round: u32) -> Report {
    let path = run_dir.join(format!("rounds/{round:02}/report.json"));
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// A resumed run that went on from `round` and completed: the same id and run directory,
/// the old part's `run.json` kept in `parts`, the numbering, the carried report in the
/// prompt, and everything the old part wrote still there as it was.
fn assert_resumed(
    repo: &Path,
    old: (&str, &Path),
    before: &BTreeMap<PathBuf, Vec<u8>>,
    resumed: &(Output, Vec<Value>),
    round: u32,
) {
    let (out, events) = resumed;
    assert_eq!(code(out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let (id, dir) = started(events);
    assert_eq!(id, old.0);
    assert_eq!(dir, old.1);
    let info = read_json(&dir.join("run.json"));
    let mut old_info: Value = serde_json::from_slice(&before[Path::new("run.json")]).unwrap();
    if old_info["status"].is_null() {
        // Killed: its run.json was written at its start; the part is kept with the rounds
        // its log shows.
        old_info["rounds_started"] = (round - 1).into();
    }
    assert_eq!(info["parts"], Value::Array(vec![old_info]));
    assert_eq!(info.get("resumed_from"), None);
    assert_eq!(info["status"], "complete");
    assert_eq!(info["rounds_started"], round);
    let rounds: Vec<u64> = of_type(events, "round_started")
        .iter()
        .map(|e| e["round"].as_u64().unwrap())
        .collect();
    assert_eq!(rounds, [u64::from(round)]);
    let prompt = read_json(&dir.join(format!("rounds/{round:02}/prompt.json")));
    assert_eq!(prompt["round"], round);
    let previous = report_of(old.1, 1);
    // The observation (on by default) is the workspace as the round found it: exactly what
    // `round_observed` says the child was given.
    let observed = of_type(events, "round_observed");
    let observation = observed.first().map(|o| o["text"].as_str().unwrap());
    assert_eq!(
        prompt["messages"],
        expected_messages(repo, "obj", round, 8, &previous, observation)
    );
    assert_eq!(last(events)["last_valid_report"]["summary"], "all done");
    assert_kept(before, &contents(old.1));
}

/// What a run's earlier part wrote is still there after a resume: every file as it was, but
/// `run.json` (now the new part's) and the logs the new part appended to.
fn assert_kept(before: &BTreeMap<PathBuf, Vec<u8>>, after: &BTreeMap<PathBuf, Vec<u8>>) {
    for (path, bytes) in before {
        let now = after
            .get(path)
            .unwrap_or_else(|| panic!("{} is gone", path.display()));
        match path.to_str().unwrap() {
            "run.json" => {}
            "events.jsonl" | "ralph-tui.log" => {
                assert!(now.starts_with(bytes), "{} was rewritten", path.display());
                assert!(now.len() > bytes.len(), "{} got nothing", path.display());
            }
            _ => assert_eq!(now, bytes, "{} changed", path.display()),
        }
    }
}

/// Starts a run whose round 2 streams slowly, and returns once round 2 is streaming.
fn start_slow_round_two(
    home: &Path,
    repo: &Path,
    script: &Path,
) -> (
    std::process::Child,
    BufReader<std::process::ChildStdout>,
    String,
    PathBuf,
) {
    let mut child = ralph(
        home,
        &[
            "-C",
            repo.to_str().unwrap(),
            "--backend",
            &backend(script),
            "obj",
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let seen = events_until(&mut reader, |v| v["type"] == "token" && v["round"] == 2);
    let (id, dir) = started(&seen);
    (child, reader, id, dir)
}

/// Round 1 continues, round 2 is a long slow turn, round 3 completes.
fn slow_script(dir: &Path) -> PathBuf {
    let long_turn = format!("{} {}", "word ".repeat(5000), complete_report("never"));
    script_with_delay(
        dir,
        vec![
            turns(&[continue_report("round one")]),
            turns(&[long_turn]),
            turns(&[complete_report("all done")]),
        ],
        5,
    )
}

/// Starts a run whose round 2 streams slowly, cancels it there (SIGINT) and checks it exited
/// 130; returns its id and run directory.
fn cancel_in_round_two(home: &Path, repo: &Path, script: &Path) -> (String, PathBuf) {
    let (mut child, mut reader, id, dir) = start_slow_round_two(home, repo, script);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut reader, &mut rest).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(130));
    (id, dir)
}

#[test]
fn resume_after_cancel_goes_on_from_the_next_round() {
    let repo = TempRepo::new();
    let home = tempfile::tempdir().unwrap();
    let script = slow_script(home.path());
    let (id, dir) = cancel_in_round_two(home.path(), repo.path(), &script);
    assert_eq!(read_json(&dir.join("run.json"))["status"], "cancelled");
    let before = contents(&dir);

    // The run's own script and settings come from run.json; a sampling option may change.
    let resumed = run(home.path(), &["--resume", &id, "--temperature", "0.2"]);
    assert_resumed(repo.path(), (&id, &dir), &before, &resumed, 3);
    let run_json = read_json(&dir.join("run.json"));
    let old_settings = run_json["parts"][0]["settings"].clone();
    let mut new_settings = run_json["settings"].clone();
    // Written as the number given (run.json keeps sampling settings as typed).
    assert_eq!(new_settings["inference"]["temperature"].as_f64(), Some(0.2));
    new_settings["inference"]["temperature"] = old_settings["inference"]["temperature"].clone();
    // Each value says where it came from: the command line, else the run resumed.
    let sources = new_settings["sources"].take();
    assert_eq!(sources["temperature"], "command_line", "{sources}");
    assert_eq!(sources["top_k"], "resumed_run", "{sources}");
    assert_eq!(old_settings["sources"]["top_k"], "default");
    new_settings["sources"] = old_settings["sources"].clone();
    assert_eq!(new_settings, old_settings);

    // The run went on to its end: resuming it again is refused as complete, and `last`
    // never offers it.
    let (again, _) = run(home.path(), &["--resume", &id]);
    let err = String::from_utf8_lossy(&again.stderr);
    assert_eq!(code(&again), 2, "{err}");
    assert!(
        err.contains(&format!(
            "run {id} ended complete: there is nothing to continue"
        )),
        "{err}"
    );
    let (last, _) = run(home.path(), &["--resume"]);
    let err = String::from_utf8_lossy(&last.stderr);
    assert_eq!(code(&last), 2, "{err}");
    assert!(!err.contains(&format!("--resume {id}")), "{err}");
}

/// The settings `run.json` held before a run's options were recorded whole.
const SETTINGS_RECORDED_BEFORE: [&str; 12] = [
    "max_turns",
    "token_budget",
    "sandbox",
    "approval",
    "network",
    "command_timeout_s",
    "verify",
    "prefix_cache",
    "api_key_env",
    "request_timeout_s",
    "inference",
    "sources",
];

#[test]
fn a_run_recorded_before_the_options_were_kept_whole_resumes_as_it_was_started() {
    let repo = TempRepo::new();
    let home = tempfile::tempdir().unwrap();
    let script = slow_script(home.path());
    let (id, dir) = cancel_in_round_two(home.path(), repo.path(), &script);
    // The run as an older ralph-tui wrote it: no backend, model or round cap in `settings`.
    let mut info = read_json(&dir.join("run.json"));
    let settings = info["settings"].as_object_mut().unwrap();
    settings.retain(|key, _| SETTINGS_RECORDED_BEFORE.contains(&key.as_str()));
    let old_settings = Value::Object(settings.clone());
    std::fs::write(dir.join("run.json"), info.to_string()).unwrap();
    let before = contents(&dir);

    // Its script (from the run's facts) plays on; its settings stay as they were.
    let resumed = run(home.path(), &["--resume", &id]);
    assert_resumed(repo.path(), (&id, &dir), &before, &resumed, 3);
    let new_settings = read_json(&dir.join("run.json"))["settings"].clone();
    for key in SETTINGS_RECORDED_BEFORE {
        if key != "sources" {
            assert_eq!(new_settings[key], old_settings[key], "{key}");
        }
    }
    assert_eq!(new_settings["max_rounds"], 8);
    assert_eq!(new_settings["sources"]["top_k"], "resumed_run");
}

#[test]
fn resume_after_kill_9_mid_round_reads_the_event_log() {
    let repo = TempRepo::new();
    let home = tempfile::tempdir().unwrap();
    let script = slow_script(home.path());
    let (mut child, _reader, id, dir) = start_slow_round_two(home.path(), repo.path(), &script);
    child.kill().unwrap();
    child.wait().unwrap();
    // Killed: run.json has no end, so the round and the report come from events.jsonl.
    assert_eq!(read_json(&dir.join("run.json"))["status"], Value::Null);
    let before = contents(&dir);

    let resumed = run(home.path(), &["--resume", &id[..id.len() - 2]]);
    assert_resumed(repo.path(), (&id, &dir), &before, &resumed, 3);
}

#[test]
fn a_resumed_part_killed_mid_round_is_killed_not_the_end_of_the_part_before() {
    let repo = TempRepo::new();
    let home = tempfile::tempdir().unwrap();
    let script = slow_script(home.path());
    let repo_arg = repo.path().to_str().unwrap();
    let (out, first) = run(
        home.path(),
        &[
            "-C",
            repo_arg,
            "--backend",
            &backend(&script),
            "-n",
            "1",
            "obj",
        ],
    );
    assert_eq!(code(&out), 4, "budget-limited");
    let (id, dir) = started(&first);

    // The second part streams round 2 slowly and is killed there.
    let mut child = ralph(home.path(), &["--resume", &id, "-n", "3"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    events_until(&mut reader, |v| v["type"] == "token" && v["round"] == 2);
    child.kill().unwrap();
    child.wait().unwrap();
    let past = ralph_tui::runs::PastRun::load(&dir).unwrap();
    assert_eq!(
        past.status, None,
        "killed, not the first part's budget-limited"
    );
    assert_eq!(past.last_round, 2);
    assert_eq!(past.ending(), "killed");
    let before = contents(&dir);

    // The third part goes on at round 3; run.json keeps both earlier parts.
    let (out, third) = run(home.path(), &["--resume", &id]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(started(&third), (id.clone(), dir.clone()));
    let info = read_json(&dir.join("run.json"));
    let parts = info["parts"].as_array().unwrap();
    assert_eq!(parts.len(), 2, "{info}");
    assert_eq!(parts[0]["status"], "budget-limited");
    assert_eq!(
        parts[1]["status"],
        Value::Null,
        "the killed part never wrote an end"
    );
    assert_eq!(info["status"], "complete");
    assert_eq!(info["max_rounds"], 3);
    assert_kept(&before, &contents(&dir));
    assert_eq!(
        std::fs::read_to_string(dir.join("events.jsonl"))
            .unwrap()
            .matches(r#""type":"run_started""#)
            .count(),
        3
    );
    // `show` gives the first start and each resume.
    let mut show = Command::new(BIN);
    isolate(&mut show, home.path());
    let shown = show.args(["show", &id]).output().unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    let started_first = parts[0]["started_at"].as_str().unwrap();
    assert!(
        shown.contains(&format!("started: {started_first}")),
        "{shown}"
    );
    assert!(
        shown.contains("after the part before ended budget-limited at round 1"),
        "{shown}"
    );
    assert!(
        shown.contains("after the part before ended killed at round 2"),
        "{shown}"
    );
    assert!(
        shown.contains("outcome: complete after 3 rounds"),
        "{shown}"
    );
}

/// A three-round script run whose round 2 ends without a report (exit 5); its events.
fn round_failed_run(home: &Path, repo: &TempRepo) -> Vec<Value> {
    let script = script(
        home,
        vec![
            turns(&[continue_report("round one")]),
            turns(&["no tool call, and then the script ends".to_string()]),
            turns(&[complete_report("all done")]),
        ],
    );
    let (out, events) = run(
        home,
        &[
            "-C",
            repo.path().to_str().unwrap(),
            "--backend",
            &backend(&script),
            "obj",
        ],
    );
    assert_eq!(code(&out), 5);
    events
}

#[test]
fn resume_after_round_failed_goes_on_from_the_next_round() {
    let repo = TempRepo::new();
    let home = tempfile::tempdir().unwrap();
    let events = round_failed_run(home.path(), &repo);
    let (id, dir) = started(&events);
    // What a later resume checks is recorded: the repository, HEAD, the script's own path.
    let info = read_json(&dir.join("run.json"));
    let head = git2::Repository::open(repo.path())
        .unwrap()
        .head()
        .unwrap()
        .target()
        .unwrap()
        .to_string();
    assert_eq!(info["head"], head.as_str());
    assert_eq!(
        info["repo_root"],
        head.as_str(),
        "one commit: HEAD is the first"
    );
    assert_eq!(info["resumed_from"], Value::Null);
    assert!(Path::new(info["model_file"].as_str().unwrap()).is_absolute());
    let before = contents(&dir);

    let resumed = run(home.path(), &["--resume", "last"]);
    assert_resumed(repo.path(), (&id, &dir), &before, &resumed, 3);
}

#[test]
fn a_resumed_run_runs_the_hooks_of_config_toml() {
    let repo = TempRepo::new();
    let home = tempfile::tempdir().unwrap();
    round_failed_run(home.path(), &repo);
    // Hooks set up after the run stopped still hear the resumed run: they are the person's.
    let seen = home.path().join("seen");
    std::fs::create_dir_all(&seen).unwrap();
    let config = home.path().join("config").join("ralph-tui");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        format!(
            "[hooks]\non_finish = {{ command = \"cat > {}/finish.json\", sandbox = \"off\" }}\n",
            seen.display()
        ),
    )
    .unwrap();
    let (out, events) = run(home.path(), &["--resume", "last"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let finish = read_json(&seen.join("finish.json"));
    assert_eq!(finish["type"], "run_finished");
    assert_eq!(finish["status"], "complete");
    let finished = of_type(&events, "run_finished");
    assert_eq!(
        finish, *finished[0],
        "the hook got the resumed run's own event"
    );
}

#[test]
fn resumed_round_prompt_equals_an_uninterrupted_runs_next_round() {
    let repo = TempRepo::new();
    let home = tempfile::tempdir().unwrap();
    let script = script(
        home.path(),
        vec![
            turns(&[continue_report("round one")]),
            turns(&[complete_report("all done")]),
        ],
    );
    let args = |n: &'static str| {
        vec![
            "-C".to_string(),
            repo.path().display().to_string(),
            "--backend".to_string(),
            backend(&script),
            "-n".to_string(),
            n.to_string(),
            "obj".to_string(),
        ]
    };
    // Uninterrupted: two rounds.
    let (out, whole) = run(home.path(), &strs(&args("2")));
    assert_eq!(code(&out), 0);
    let (_, whole_dir) = started(&whole);
    // Interrupted after round 1 (its cap was 1), then resumed with the cap raised to 2.
    let (out, first) = run(home.path(), &strs(&args("1")));
    assert_eq!(code(&out), 4, "budget-limited");
    let (first_id, first_dir) = started(&first);
    let before = contents(&first_dir);
    let (out, resumed) = run(home.path(), &["--resume", "-n", "2"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(started(&resumed), (first_id, first_dir.clone()));
    let uninterrupted = std::fs::read(whole_dir.join("rounds/02/prompt.json")).unwrap();
    let continued = std::fs::read(first_dir.join("rounds/02/prompt.json")).unwrap();
    assert_eq!(
        String::from_utf8(continued).unwrap(),
        String::from_utf8(uninterrupted).unwrap()
    );
    assert_kept(&before, &contents(&first_dir));
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// A refusal: exit 2, one line on stderr that contains `needle`, nothing on stdout, no new run.
fn assert_refused(home: &Path, args: &[&str], needle: &str) {
    let runs_before = run_ids(home);
    let out = ralph(home, args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 2, "{args:?}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains(needle), "{args:?}: {needle:?} not in {err}");
    assert!(out.stdout.is_empty());
    assert_eq!(run_ids(home), runs_before, "a refused resume wrote a run");
}

fn finished_run(home: &Path, repo: &Path, rounds: Vec<Value>, extra: &[&str]) -> (i32, String) {
    let script = script(home, rounds);
    let mut args = vec!["-C", repo.to_str().unwrap()];
    let backend = backend(&script);
    args.extend(["--backend", backend.as_str()]);
    args.extend(extra);
    args.push("obj");
    let (out, events) = run(home, &args);
    (code(&out), started(&events).0)
}

#[test]
fn resume_refuses_what_it_cannot_continue() {
    let repo = TempRepo::new();
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    assert_refused(home, &["--resume"], "no runs");
    let (status, complete) = finished_run(
        home,
        repo.path(),
        vec![turns(&[complete_report("done")])],
        &[],
    );
    assert_eq!(status, 0);
    assert_refused(home, &["--resume", &complete], "ended complete");
    // The same run as if killed between its complete report and its end.
    let dir = runs_dir(home).join(&complete);
    let mut info = read_json(&dir.join("run.json"));
    info["status"] = Value::Null;
    info["finished_at"] = Value::Null;
    std::fs::write(dir.join("run.json"), info.to_string()).unwrap();
    let log = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    let cut: Vec<&str> = log
        .lines()
        .filter(|l| !l.contains(r#""type":"run_finished""#))
        .collect();
    std::fs::write(dir.join("events.jsonl"), cut.join("\n") + "\n").unwrap();
    assert_refused(home, &["--resume", &complete], "last report said complete");
    let blocked_report = report("blocked", "stuck", &[], &[], "the tests need a network");
    let (status, blocked) = finished_run(home, repo.path(), vec![turns(&[blocked_report])], &[]);
    assert_eq!(status, 3);
    assert_refused(home, &["--resume", &blocked], "ended blocked");
    assert_refused(
        home,
        &["--resume", "19990101-000000-0000"],
        "no run '19990101-000000-0000'",
    );
    // Every run id here starts with the year: a prefix that matches two names both.
    let err = {
        let out = ralph(home, &["--resume", "2"]).output().unwrap();
        assert_eq!(code(&out), 2);
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert!(err.contains(&complete) && err.contains(&blocked), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    // The objective cannot change, nor do settings come from a config file.
    assert_refused(
        home,
        &["--resume", &complete, "another objective"],
        "cannot be used with",
    );
    assert_refused(
        home,
        &["--resume", &complete, "--config", "x.toml"],
        "cannot be used with",
    );

    // A run at its cap needs -n, and never past 64.
    let (status, capped) = finished_run(
        home,
        repo.path(),
        vec![turns(&[continue_report("one")])],
        &["-n", "1"],
    );
    assert_eq!(status, 4);
    assert_refused(home, &["--resume", &capped], "raise the cap with -n");
    assert_refused(home, &["--resume", &capped, "-n", "65"], "1 to 64");
    let own = runs_dir(home).join(&capped);
    let own = own.to_str().unwrap();
    for run_dir in [own, "elsewhere"] {
        assert_refused(
            home,
            &["--resume", own, "-n", "2", "--run-dir", run_dir],
            "a resumed run goes on in its own directory",
        );
    }
    let many: Vec<Value> = (0..64)
        .map(|i| turns(&[continue_report(&format!("round {i}"))]))
        .collect();
    let (status, full) = finished_run(home, repo.path(), many, &["-n", "64"]);
    assert_eq!(status, 4);
    assert_refused(
        home,
        &["--resume", &full, "-n", "64"],
        "already started 64 rounds",
    );
}

#[test]
fn resume_refuses_a_workspace_that_is_gone_or_another_repository() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let failing = || {
        vec![
            turns(&[continue_report("one")]),
            turns(&["no call".to_string()]),
        ]
    };

    let gone = TempRepo::new();
    let (status, id) = finished_run(home, gone.path(), failing(), &[]);
    assert_eq!(status, 5);
    let path = gone.path().to_path_buf();
    drop(gone);
    assert!(!path.exists());
    assert_refused(home, &["--resume", &id], "is gone");

    let replaced = TempRepo::new();
    let (status, id) = finished_run(home, replaced.path(), failing(), &[]);
    assert_eq!(status, 5);
    // The same path, now an unrelated repository (its own first commit).
    std::fs::remove_dir_all(replaced.path().join(".git")).unwrap();
    let repo = git2::Repository::init(replaced.path()).unwrap();
    let sig = git2::Signature::now("Someone Else", "else@example.com").unwrap();
    let tree = repo
        .find_tree(repo.index().unwrap().write_tree().unwrap())
        .unwrap();
    repo.commit(Some("HEAD"), &sig, &sig, "unrelated", &tree, &[])
        .unwrap();
    assert_refused(home, &["--resume", &id], "another repository");

    let unversioned = TempRepo::new();
    let (status, id) = finished_run(home, unversioned.path(), failing(), &[]);
    assert_eq!(status, 5);
    std::fs::remove_dir_all(unversioned.path().join(".git")).unwrap();
    assert_refused(home, &["--resume", &id], "another repository");
}

#[test]
fn resume_warns_when_head_moved_and_goes_on() {
    let repo = TempRepo::new();
    let home = tempfile::tempdir().unwrap();
    let rounds = vec![
        turns(&[continue_report("round one")]),
        turns(&["no call".to_string()]),
        turns(&[complete_report("all done")]),
    ];
    let (status, id) = finished_run(home.path(), repo.path(), rounds, &[]);
    assert_eq!(status, 5);
    repo.write("NEW.md", "a commit made after the run\n");
    repo.commit_all("after the run");
    let (out, events) = run(home.path(), &["--resume", &id]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let warnings = of_type(&events, "warning");
    assert!(
        warnings
            .iter()
            .any(|w| w["message"].as_str().unwrap().contains("HEAD moved")),
        "{warnings:?}"
    );
    assert_eq!(of_type(&events, "round_started")[0]["round"], 3);
}

#[test]
fn resume_last_after_a_finished_run_names_the_newest_run_that_can_go_on() {
    let repo = TempRepo::new();
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let (status, limited) = finished_run(
        home,
        repo.path(),
        vec![turns(&[continue_report("half way")])],
        &["-n", "1"],
    );
    assert_eq!(status, 4);
    let (status, complete) = finished_run(
        home,
        repo.path(),
        vec![turns(&[complete_report("done")])],
        &[],
    );
    assert_eq!(status, 0);
    let line = format!(
        "the last run, {complete}, is over (complete): there is nothing to continue; the most \
         recent run that can go on is {limited} (budget-limited, 1 round): ralph-tui --resume \
         {limited}"
    );
    assert_refused(home, &["--resume", "last"], &line);
    assert_refused(home, &["--resume"], &line);
}
