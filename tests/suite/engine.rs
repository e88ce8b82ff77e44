//! The run engine through the real binary: every terminal path, isolation between rounds,
//! report validation, cancellation, bad input and log integrity. Script backend only.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use serde_json::{json, Value};

use super::common::*;

fn finished(run: &Run) -> &Value {
    let last = last(&run.events);
    assert_eq!(last["type"], "run_finished", "last event: {last}");
    // Only a worker's report (complete or blocked) ends a run as reported.
    let reported = matches!(last["status"].as_str(), Some("complete" | "blocked"));
    assert_eq!(last["worker_reported"], reported, "last event: {last}");
    last
}

#[test]
fn complete_run_exits_zero_with_the_report() {
    let repo = TempRepo::new();
    let run = run_script(
        &repo,
        vec![
            turns(&[continue_report("looked around")]),
            turns(&[complete_report("all done")]),
        ],
        &["the objective"],
    );
    assert_eq!(
        code(&run.out),
        0,
        "{}",
        String::from_utf8_lossy(&run.out.stderr)
    );
    let end = finished(&run);
    assert_eq!(end["status"], "complete");
    assert_eq!(end["rounds_started"], 2);
    assert_eq!(end["report"]["summary"], "all done");
    assert_eq!(end["last_valid_report"]["summary"], "all done");
    assert_eq!(end["error"], Value::Null);
    assert_eq!(end["verification"], Value::Null);
    let first = &run.events[0];
    assert_eq!(first["type"], "run_started");
    assert_eq!(first["objective"], "the objective");
    assert_eq!(first["max_rounds"], 8);
    assert!(run.events.iter().all(|e| e["ts"].is_string()));
    assert_eq!(of_type(&run.events, "round_started").len(), 2);
    assert_eq!(of_type(&run.events, "round_finished").len(), 2);
    let stderr = String::from_utf8_lossy(&run.out.stderr);
    assert!(stderr.contains("not independently verified"), "{stderr}");
}

#[test]
fn blocked_run_exits_three() {
    let repo = TempRepo::new();
    let run = run_script(
        &repo,
        vec![turns(&[report(
            "blocked",
            "cannot",
            &[],
            &[],
            "the tests need a database",
        )])],
        &["objective"],
    );
    assert_eq!(code(&run.out), 3);
    let end = finished(&run);
    assert_eq!(end["status"], "blocked");
    assert_eq!(end["report"]["blocker"], "the tests need a database");
}

#[test]
fn budget_limited_after_the_last_round_exits_four() {
    let repo = TempRepo::new();
    let run = run_script(
        &repo,
        vec![
            turns(&[continue_report("one")]),
            turns(&[continue_report("two")]),
            turns(&[continue_report("three")]),
        ],
        &["-n", "2", "objective"],
    );
    assert_eq!(code(&run.out), 4);
    let end = finished(&run);
    assert_eq!(end["status"], "budget-limited");
    assert_eq!(end["rounds_started"], 2);
    assert_eq!(end["last_valid_report"]["summary"], "two");
    assert_eq!(of_type(&run.events, "round_started").len(), 2);
}

#[test]
fn child_failure_preserves_the_previous_report() {
    let repo = TempRepo::new();
    let run = run_script(
        &repo,
        vec![
            turns(&[continue_report("first round")]),
            json!({"fail": "simulated child failure"}),
        ],
        &["objective"],
    );
    assert_eq!(code(&run.out), 5);
    let end = finished(&run);
    assert_eq!(end["status"], "round-failed");
    assert_eq!(end["report"], Value::Null);
    assert_eq!(end["last_valid_report"]["summary"], "first round");
    assert!(end["error"]
        .as_str()
        .unwrap()
        .contains("simulated child failure"));
    assert_eq!(end["rounds_started"], 2);
    let run_json: Value =
        serde_json::from_str(&std::fs::read_to_string(run.run_dir.join("run.json")).unwrap())
            .unwrap();
    assert_eq!(run_json["status"], "round-failed");
    assert_eq!(run_json["worker_reported"], false, "{run_json}");
}

#[test]
fn run_json_writes_the_settings_as_given_and_worker_reported_for_a_report() {
    let repo = TempRepo::new();
    let run = run_script(
        &repo,
        vec![turns(&[complete_report("done")])],
        &["--min-p", "0.05", "--top-p", "0.9", "objective"],
    );
    assert_eq!(code(&run.out), 0);
    let text = std::fs::read_to_string(run.run_dir.join("run.json")).unwrap();
    let run_json: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(run_json["worker_reported"], true);
    let inference = &run_json["settings"]["inference"];
    assert_eq!(inference["min_p"], json!(0.05), "{inference}");
    assert_eq!(inference["top_p"], json!(0.9), "{inference}");
    // Not given and not in the (script) model: the coding-agent defaults.
    assert_eq!(inference["temperature"], json!(0.2), "{inference}");
    assert_eq!(inference["repeat_penalty"], json!(1.0), "{inference}");
    assert!(!text.contains("0.0500000"), "{text}");
    assert_eq!(run_json["settings"]["prefix_cache"], true);
}

#[test]
fn a_round_without_a_report_fails_the_run() {
    let repo = TempRepo::new();
    let run = run_script(
        &repo,
        vec![turns(&["I am thinking but never report.".into()])],
        &["objective"],
    );
    assert_eq!(code(&run.out), 5);
    let end = finished(&run);
    assert_eq!(end["status"], "round-failed");
    assert_eq!(end["last_valid_report"], Value::Null);
    assert!(end["error"]
        .as_str()
        .unwrap()
        .contains("without a valid report"));
}

#[test]
fn a_script_shorter_than_the_run_fails_the_run() {
    let repo = TempRepo::new();
    let run = run_script(
        &repo,
        vec![turns(&[continue_report("only round")])],
        &["objective"],
    );
    assert_eq!(code(&run.out), 5);
    let end = finished(&run);
    assert_eq!(end["last_valid_report"]["summary"], "only round");
    assert!(end["error"].as_str().unwrap().contains("round 2"));
}

#[test]
fn isolation_only_the_report_crosses_rounds() {
    let repo = TempRepo::new();
    let marker = "MARKER-7f3a-only-in-round-one-free-text";
    let run = run_script(
        &repo,
        vec![
            turns(&[format!(
                "Thinking about {marker} now.\n{}",
                continue_report("handoff summary r1")
            )]),
            turns(&[complete_report("done")]),
        ],
        &["objective"],
    );
    assert_eq!(code(&run.out), 0);
    let p1 = std::fs::read_to_string(run.run_dir.join("rounds/01/prompt.json")).unwrap();
    let p2 = std::fs::read_to_string(run.run_dir.join("rounds/02/prompt.json")).unwrap();
    assert!(!p1.contains(marker));
    assert!(
        !p2.contains(marker),
        "round 1's free text leaked into round 2"
    );
    assert!(
        p2.contains("handoff summary r1"),
        "round 1's report must reach round 2"
    );
    assert!(p1.contains("first round"));
    assert!(p2.contains("round 2 of 8"));
    // The marker was really produced (it is in round 1's transcript).
    let t1 = std::fs::read_to_string(run.run_dir.join("rounds/01/transcript.jsonl")).unwrap();
    assert!(t1.contains(marker));
    // round_started's hash is the hash of prompt.json.
    use sha2::Digest;
    let started = of_type(&run.events, "round_started");
    let digest: String = sha2::Sha256::digest(p2.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(started[1]["prompt_sha256"], digest);
    // The second prompt holds only the system and user messages.
    let p2: Value = serde_json::from_str(&p2).unwrap();
    assert_eq!(p2["messages"].as_array().unwrap().len(), 2);
}

#[test]
fn agents_md_reaches_every_round() {
    let repo = TempRepo::new();
    repo.write("AGENTS.md", "Always run `make check` before reporting.\n");
    let run = run_script(
        &repo,
        vec![turns(&[complete_report("done")])],
        &["objective"],
    );
    let p1 = std::fs::read_to_string(run.run_dir.join("rounds/01/prompt.json")).unwrap();
    assert!(p1.contains("make check"));
}

#[test]
fn malformed_invalid_and_oversized_reports_are_rejected_then_corrected() {
    let repo = TempRepo::new();
    let huge = "x".repeat(17_000);
    let run = run_script(
        &repo,
        vec![turns(&[
            "<tool_call>{\"name\": \"ralph_report\", \"arguments\": {\"status\": </tool_call>"
                .into(),
            report("complete", "done", &[], &[], ""),
            report("continue", &huge, &[], &["more"], ""),
            complete_report("done properly"),
        ])],
        &["objective"],
    );
    // Three rejections is the limit: malformed JSON counts as a tool error, not a report attempt.
    assert_eq!(
        code(&run.out),
        0,
        "{}",
        String::from_utf8_lossy(&run.out.stderr)
    );
    let rejected = of_type(&run.events, "report_rejected");
    assert_eq!(rejected.len(), 2);
    assert!(rejected[0]["reason"].as_str().unwrap().contains("evidence"));
    assert!(rejected[1]["reason"].as_str().unwrap().contains("16384"));
    let results = of_type(&run.events, "tool_result");
    assert!(results[0]["output"].as_str().unwrap().contains("malformed"));
    assert_eq!(finished(&run)["report"]["summary"], "done properly");
    // The oversized report was rejected, not truncated: nothing of it was accepted.
    assert!(of_type(&run.events, "report_accepted")
        .iter()
        .all(|e| e["report"]["summary"] != huge.as_str()));
}

#[test]
fn reports_never_corrected_fail_the_round() {
    let repo = TempRepo::new();
    let bad = report("blocked", "stuck", &[], &[], "");
    let run = run_script(
        &repo,
        vec![
            turns(&[continue_report("r1")]),
            turns(&[
                bad.clone(),
                bad.clone(),
                bad.clone(),
                complete_report("too late"),
            ]),
        ],
        &["objective"],
    );
    assert_eq!(code(&run.out), 5);
    let end = finished(&run);
    assert_eq!(end["status"], "round-failed");
    assert_eq!(end["last_valid_report"]["summary"], "r1");
    assert!(end["error"].as_str().unwrap().contains("rejected 3 times"));
}

#[test]
fn recursion_is_denied_as_a_tool_error() {
    let repo = TempRepo::new();
    let run = run_script(
        &repo,
        vec![turns(&[
            call("ralph", json!({"objective": "do it again"})),
            complete_report("done without recursion"),
        ])],
        &["objective"],
    );
    assert_eq!(code(&run.out), 0);
    let denied = of_type(&run.events, "tool_result")
        .into_iter()
        .find(|e| e["name"] == "ralph")
        .unwrap()
        .clone();
    assert_eq!(denied["ok"], false);
    assert!(denied["output"].as_str().unwrap().contains("denied"));
    // ralph is never offered.
    let p1 = std::fs::read_to_string(run.run_dir.join("rounds/01/prompt.json")).unwrap();
    let p1: Value = serde_json::from_str(&p1).unwrap();
    let names: Vec<&str> = p1["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(!names.contains(&"ralph"));
    assert!(names.contains(&"ralph_report"));
}

#[test]
fn unknown_tools_get_a_tool_error() {
    let repo = TempRepo::new();
    let run = run_script(
        &repo,
        vec![turns(&[
            call("teleport", json!({})),
            complete_report("done"),
        ])],
        &["objective"],
    );
    assert_eq!(code(&run.out), 0);
    let r = of_type(&run.events, "tool_result")[0].clone();
    assert_eq!(r["ok"], false);
    assert!(r["output"].as_str().unwrap().contains("unknown tool"));
}

#[test]
fn verification_sits_beside_the_claim_and_never_changes_it() {
    let repo = TempRepo::new();
    let run = run_script(
        &repo,
        vec![turns(&[complete_report("done")])],
        &["--verify", "echo checking; exit 1", "objective"],
    );
    assert_eq!(
        code(&run.out),
        6,
        "a failed verification exits 6, and does not change the worker's status"
    );
    let end = finished(&run);
    assert_eq!(end["status"], "complete");
    assert_eq!(end["verification"]["passed"], false);
    assert_eq!(end["verification"]["exit_code"], 1);
    assert!(end["verification"]["output_tail"]
        .as_str()
        .unwrap()
        .contains("checking"));
    let run = run_script(
        &repo,
        vec![turns(&[complete_report("done")])],
        &["--verify", "true", "objective"],
    );
    assert_eq!(finished(&run)["verification"]["passed"], true);
}

#[test]
fn run_log_has_every_file() {
    let repo = TempRepo::new();
    let run = run_script(
        &repo,
        vec![
            turns(&[continue_report("r1")]),
            turns(&[complete_report("r2")]),
        ],
        &["objective"],
    );
    let dir = &run.run_dir;
    let run_json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(run_json["status"], "complete");
    assert!(run_json["model_sha256"].as_str().unwrap().len() == 64);
    assert!(run_json["finished_at"].is_string());
    let logged = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    assert_eq!(
        events(logged.as_bytes()),
        run.events,
        "events.jsonl equals stdout"
    );
    for round in ["01", "02"] {
        for file in [
            "prompt.json",
            "transcript.jsonl",
            "report.json",
            "diff.patch",
        ] {
            assert!(
                dir.join("rounds").join(round).join(file).is_file(),
                "{round}/{file}"
            );
        }
    }
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("rounds/02/report.json")).unwrap())
            .unwrap();
    assert_eq!(report["summary"], "r2");
}

#[test]
fn max_rounds_from_the_config_file_and_cli_wins() {
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let cfg_dir = tmp.path().join("config/ralph-tui");
    std::fs::create_dir_all(&cfg_dir).unwrap();
    std::fs::write(cfg_dir.join("config.toml"), "max_rounds = 1\n").unwrap();
    let s = script(
        tmp.path(),
        vec![
            turns(&[continue_report("a")]),
            turns(&[continue_report("b")]),
        ],
    );
    let backend = format!("script:{}", s.display());
    let out = headless(
        repo.path(),
        &tmp.path().join("run"),
        &["--backend", &backend, "obj"],
    )
    .output()
    .unwrap();
    assert_eq!(code(&out), 4);
    assert_eq!(last(&events(&out.stdout))["rounds_started"], 1);
    let out = headless(
        repo.path(),
        &tmp.path().join("run2"),
        &["--backend", &backend, "-n", "2", "obj"],
    )
    .output()
    .unwrap();
    assert_eq!(last(&events(&out.stdout))["rounds_started"], 2);
    std::fs::write(cfg_dir.join("config.toml"), "max_rounds = 1\nbogus = [\n").unwrap();
    let out = headless(
        repo.path(),
        &tmp.path().join("run3"),
        &["--backend", &backend, "obj"],
    )
    .output()
    .unwrap();
    assert_eq!(code(&out), 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("config.toml") && err.contains("line 2"),
        "{err}"
    );
}

fn assert_usage_error(args: &[&str], repo: &std::path::Path, needle: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let out = headless(repo, &tmp.path().join("run"), args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(code(&out), 2, "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "one clear line: {err}");
    assert!(out.stdout.is_empty());
    assert!(
        !tmp.path().join("run").exists(),
        "nothing written for bad input"
    );
}

#[test]
fn bad_input_is_one_clear_line_and_exit_two() {
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let good = script(tmp.path(), vec![turns(&[complete_report("x")])]);
    let backend = format!("script:{}", good.display());
    let b = backend.as_str();
    assert_usage_error(&["--backend", b, "   "], repo.path(), "objective is empty");
    assert_usage_error(
        &["--backend", b],
        repo.path(),
        "--headless needs the objective",
    );
    for n in ["0", "65", "abc", "-1", "2.5"] {
        assert_usage_error(
            &["--backend", b, "-n", n, "obj"],
            repo.path(),
            "--max-rounds",
        );
    }
    let plain = TempRepo::plain_dir();
    assert_usage_error(&["--backend", b, "obj"], plain.path(), "git init");
    let missing_dir = tmp.path().join("nope");
    assert_usage_error(&["--backend", b, "obj"], &missing_dir, "not a directory");
    assert_usage_error(
        &["--backend", "script:/definitely/missing.json", "obj"],
        repo.path(),
        "cannot read",
    );
    let broken = tmp.path().join("broken.json");
    std::fs::write(&broken, "{\"rounds\": [").unwrap();
    assert_usage_error(
        &["--backend", &format!("script:{}", broken.display()), "obj"],
        repo.path(),
        "not a valid script",
    );
    assert_usage_error(
        &["--backend", b, "--frobnicate", "obj"],
        repo.path(),
        "--frobnicate",
    );
    assert_usage_error(&["--backend", "gpt", "obj"], repo.path(), "unknown backend");
    assert_usage_error(
        &["--backend", b, "--approval", "ask", "obj"],
        repo.path(),
        "needs the TUI",
    );
    assert_usage_error(
        &["--model", broken.to_str().unwrap(), "obj"],
        repo.path(),
        "not a GGUF",
    );
    // The workspace was not touched.
    let status = std::process::Command::new("git")
        .arg("-C")
        .arg(repo.path())
        .args(["status", "--porcelain"])
        .output()
        .unwrap();
    assert!(
        status.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&status.stdout)
    );
}

#[test]
fn objective_file_is_read_and_trimmed() {
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("objective.txt");
    std::fs::write(&f, "\n  Make the tests pass.  \n").unwrap();
    let s = script(tmp.path(), vec![turns(&[complete_report("x")])]);
    let out = headless(
        repo.path(),
        &tmp.path().join("run"),
        &[
            "--backend",
            &format!("script:{}", s.display()),
            "-f",
            f.to_str().unwrap(),
        ],
    )
    .output()
    .unwrap();
    assert_eq!(events(&out.stdout)[0]["objective"], "Make the tests pass.");
}

/// Starts a streaming run and returns the child once the given number of token events arrived.
fn start_streaming(
    repo: &TempRepo,
    tmp: &std::path::Path,
    tokens_before: usize,
) -> (
    std::process::Child,
    BufReader<std::process::ChildStdout>,
    Vec<Value>,
) {
    let long_turn = format!(
        "{} {}",
        "word ".repeat(5000),
        complete_report("never reached")
    );
    let s = script_with_delay(
        tmp,
        vec![turns(&[continue_report("round one")]), turns(&[long_turn])],
        5,
    );
    let mut child = headless(
        repo.path(),
        &tmp.join("run"),
        &["--backend", &format!("script:{}", s.display()), "obj"],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut seen = Vec::new();
    let mut round2_tokens = 0;
    while round2_tokens < tokens_before {
        let mut line = String::new();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "stream ended early"
        );
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["type"] == "token" && v["round"] == 2 {
            round2_tokens += 1;
        }
        seen.push(v);
    }
    (child, reader, seen)
}

#[test]
fn sigint_cancels_mid_stream_with_the_last_report() {
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let (mut child, mut reader, mut seen) = start_streaming(&repo, tmp.path(), 20);
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let signalled = std::time::Instant::now();
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut reader, &mut rest).unwrap();
    let status = child.wait().unwrap();
    eprintln!("cancel took {:?}", signalled.elapsed());
    seen.extend(events(rest.as_bytes()));
    assert_eq!(status.code(), Some(130));
    let end = seen.last().unwrap();
    assert_eq!(end["type"], "run_finished");
    assert_eq!(end["status"], "cancelled");
    assert_eq!(end["last_valid_report"]["summary"], "round one");
    let rf = of_type(&seen, "round_finished");
    assert_eq!(rf.last().unwrap()["outcome"], "cancelled");
    // Far fewer than the 5000 words of the turn were streamed: generation stopped.
    assert!(of_type(&seen, "token").len() < 3000);
    // The log is complete too.
    let logged = std::fs::read_to_string(tmp.path().join("run/events.jsonl")).unwrap();
    assert_eq!(
        events(logged.as_bytes()).last().unwrap()["type"],
        "run_finished"
    );
}

#[test]
fn sigterm_cancels_too() {
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let (mut child, mut reader, _) = start_streaming(&repo, tmp.path(), 5);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut reader, &mut rest).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(130));
    assert_eq!(last(&events(rest.as_bytes()))["status"], "cancelled");
}

#[test]
fn kill_9_leaves_every_written_line_parseable() {
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let (mut child, _reader, _) = start_streaming(&repo, tmp.path(), 50);
    child.kill().unwrap();
    child.wait().unwrap();
    let run = tmp.path().join("run");
    for file in [
        "events.jsonl",
        "rounds/01/transcript.jsonl",
        "rounds/02/transcript.jsonl",
    ] {
        let text = std::fs::read_to_string(run.join(file)).unwrap();
        assert!(text.ends_with('\n'), "{file} ends mid-line");
        let parsed = events(text.as_bytes());
        assert!(!parsed.is_empty(), "{file}");
    }
    let run_json: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    assert_eq!(run_json["status"], Value::Null, "the run never finished");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("rounds/01/report.json")).unwrap())
            .unwrap();
    assert_eq!(report["summary"], "round one");
}

#[test]
fn token_budget_ends_the_run_budget_limited_between_turns() {
    let repo = TempRepo::new();
    let run = run_script(
        &repo,
        vec![turns(&[
            "a b c d e f g h i j".into(),
            "k l m n o p".into(),
            complete_report("would be done"),
        ])],
        &["--token-budget", "12", "objective"],
    );
    assert_eq!(code(&run.out), 4);
    let end = finished(&run);
    assert_eq!(end["status"], "budget-limited");
    assert!(end["error"].as_str().unwrap().contains("token budget"));
    assert!(of_type(&run.events, "report_accepted").is_empty());
}

/// A turn that would fill the context window is stopped where the report's reserve is
/// still free, and the round wraps up and hands off instead of failing.
#[test]
fn a_turn_that_would_fill_the_context_is_stopped_and_the_round_still_hands_off() {
    let repo = TempRepo::new();
    // The script backend estimates 4 bytes a token in a 131,072-token window: this turn
    // would take some 144,000.
    let flood = "lorem ipsum ".repeat(48_000);
    let run = run_script(
        &repo,
        vec![
            turns(&[continue_report("r1")]),
            turns(&[flood.clone(), continue_report("handed off")]),
        ],
        &["-n", "2", "objective"],
    );
    assert_eq!(code(&run.out), 4, "{:?}", finished(&run));
    let end = finished(&run);
    assert_eq!(end["status"], "budget-limited");
    assert_eq!(end["last_valid_report"]["summary"], "handed off");
    let wrap_up = of_type(&run.events, "wrap_up");
    assert_eq!(
        (wrap_up[0]["round"].as_u64(), wrap_up[0]["reason"].as_str()),
        (Some(2), Some("context"))
    );
    let flood_turn = of_type(&run.events, "turn_finished")
        .into_iter()
        .find(|t| t["round"] == 2)
        .unwrap();
    let pieces = u64::try_from(ralph_tui::llm::script::pieces(&flood).len()).unwrap();
    assert!(flood_turn["generated_tokens"].as_u64().unwrap() < pieces);
    assert!(
        flood_turn["context_tokens"].as_u64().unwrap()
            <= u64::from(131_072 - ralph_tui::protocol::report::REPORT_RESERVE_TOKENS)
    );
}

#[test]
fn huge_arguments_are_refused_without_running_the_tool() {
    let repo = TempRepo::new();
    let huge = "y".repeat(300 * 1024);
    let run = run_script(
        &repo,
        vec![turns(&[
            call("write_file", json!({"path": "big.txt", "content": huge})),
            complete_report("done"),
        ])],
        &["objective"],
    );
    assert_eq!(code(&run.out), 0);
    let r = of_type(&run.events, "tool_result")[0].clone();
    assert_eq!(r["ok"], false);
    assert!(r["output"].as_str().unwrap().contains("the limit is"));
    assert!(!repo.path().join("big.txt").exists());
}

#[test]
fn a_slow_prompt_says_its_progress_a_few_times_a_second_before_its_first_token() {
    let repo = TempRepo::new();
    // Each turn's prompt takes 1.2 s to read.
    let run = run_script_with(
        &repo,
        vec![turns(&[complete_report("done")])],
        json!({"prompt_delay_ms": 1200}),
        &["objective"],
    );
    assert_eq!(
        code(&run.out),
        0,
        "{}",
        String::from_utf8_lossy(&run.out.stderr)
    );
    // The events of each turn: its progress, then its tokens, then turn_finished.
    let mut progress: Vec<&Value> = Vec::new();
    let mut tokens_seen = false;
    let mut turns_seen = 0;
    for event in &run.events {
        match event["type"].as_str().unwrap() {
            "prompt_progress" => {
                assert!(
                    !tokens_seen,
                    "progress after the turn's first token: {event}"
                );
                assert_eq!(event["round"], 1);
                progress.push(event);
            }
            "token" => tokens_seen = true,
            "turn_finished" => {
                turns_seen += 1;
                let done: Vec<u64> = progress
                    .iter()
                    .map(|e| e["done"].as_u64().unwrap())
                    .collect();
                let total = progress[0]["total"].as_u64().unwrap();
                assert!(total > 0);
                assert!(progress.iter().all(|e| e["total"] == total));
                assert_eq!(done[0], 0, "said before the first step: {done:?}");
                assert_eq!(
                    *done.last().unwrap(),
                    total,
                    "the last says it all: {done:?}"
                );
                assert!(done.windows(2).all(|w| w[0] < w[1]), "{done:?}");
                // 1.2 s at most four a second, the first and the last included.
                assert!((3..=7).contains(&done.len()), "{done:?}");
                progress.clear();
                tokens_seen = false;
            }
            _ => {}
        }
    }
    assert!(turns_seen >= 1);
}

#[test]
fn a_quick_prompt_says_no_progress() {
    let repo = TempRepo::new();
    let run = run_script(
        &repo,
        vec![turns(&[complete_report("done")])],
        &["objective"],
    );
    assert_eq!(code(&run.out), 0);
    assert!(of_type(&run.events, "prompt_progress").is_empty());
}
