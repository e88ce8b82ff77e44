//! The run engine in-process: an `Engine` built with the script backend on a temporary git
//! repository, its events collected from the sink and its summary read directly, no binary.
//! The binary tests in `engine.rs` cover the same paths end to end; these pin the engine's own
//! contract (terminal statuses, report validation at its boundary, cancel via the token,
//! event order) without a process in between.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use ralph_tui::chat;
use ralph_tui::engine::prompt;
use ralph_tui::engine::run_info::{RunInfo, SettingsRecord};
use ralph_tui::engine::runlog::RunLog;
use ralph_tui::engine::{Engine, RunConfig, RunSummary, Toolbox};
use ralph_tui::llm::script::ScriptBackend;
use ralph_tui::protocol::event::RunStatus;
use ralph_tui::protocol::policy::{ApprovalPolicy, SandboxMode};
use ralph_tui::tools::approval::DenyAll;
use ralph_tui::tools::{Registry, ToolPolicy};
use ralph_tui::workspace::Workspace;

use super::common::*;

struct InProc {
    summary: RunSummary,
    events: Vec<Value>,
    _tmp: tempfile::TempDir,
}

pub(super) fn config(max_rounds: u32) -> RunConfig {
    RunConfig {
        run_id: "inproc".into(),
        objective: "the objective".into(),
        max_rounds,
        max_turns: 8,
        token_budget: None,
        verify: None,
        check: None,
        check_on_change: true,
        observe: false,
        stall_rounds: 3,
        round_timeout: None,
        warnings: Vec::new(),
        run_info: RunInfo {
            sandbox_support: "off".into(),
            backend: "script".into(),
            model_file: "script.json".into(),
            model_sha256: None,
            device: "script".into(),
            chat_format: "hermes".into(),
            settings: SettingsRecord::default(),
            repo_root: None,
            resumed_from: None,
            resumed_report: None,
            worktree: None,
            parts: Vec::new(),
        },
    }
}

/// Runs `config` over the script `rounds`; `on_event` sees each event (as its JSON line) with
/// the run's cancellation token as it is emitted.
fn run_with(
    repo: &TempRepo,
    rounds: Vec<Value>,
    config: RunConfig,
    cancel: CancellationToken,
    mut on_event: impl FnMut(&Value, &CancellationToken) + Send + 'static,
) -> InProc {
    let tmp = tempfile::tempdir().unwrap();
    let script_text = json!({"token_delay_ms": 0, "rounds": rounds}).to_string();
    let mut backend = ScriptBackend::parse(&tmp.path().join("script.json"), &script_text).unwrap();
    let format = chat::by_name("hermes").unwrap();
    let registry = Registry::standard();
    let tools = Toolbox {
        registry: &registry,
        policy: ToolPolicy::new(SandboxMode::Off, ApprovalPolicy::Auto, false),
        approver: Arc::new(DenyAll),
    };
    let workspace = Workspace::open(repo.path()).unwrap();
    let log = RunLog::create(&tmp.path().join("run")).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink_seen = Arc::clone(&seen);
    let sink_cancel = cancel.clone();
    let summary = Engine::new(
        config,
        &mut backend,
        format.as_ref(),
        tools,
        workspace,
        log,
        Box::new(move |stamped| {
            let value: Value = serde_json::from_str(&stamped.to_line()).unwrap();
            on_event(&value, &sink_cancel);
            sink_seen.lock().unwrap().push(value);
        }),
    )
    .with_cancel(cancel)
    .run();
    let events = seen.lock().unwrap().clone();
    InProc {
        summary,
        events,
        _tmp: tmp,
    }
}

fn run(repo: &TempRepo, rounds: Vec<Value>, config: RunConfig) -> InProc {
    run_with(repo, rounds, config, CancellationToken::new(), |_, _| {})
}

/// The index of the first event of type `ty`; panics when there is none.
fn position(events: &[Value], ty: &str) -> usize {
    events
        .iter()
        .position(|e| e["type"] == ty)
        .unwrap_or_else(|| panic!("no {ty} event"))
}

/// `run_started` first, `run_finished` last, and the finished event matches the summary.
fn assert_bracketed(run: &InProc) {
    assert_eq!(run.events[0]["type"], "run_started");
    let end = last(&run.events);
    assert_eq!(end["type"], "run_finished");
    assert_eq!(end["status"], run.summary.status.as_str());
    assert_eq!(end["rounds_started"], run.summary.rounds_started);
    // Only a worker's report (complete or blocked) ends a run as reported.
    assert_eq!(
        end["worker_reported"],
        run.summary.status.is_worker_report()
    );
    assert_eq!(of_type(&run.events, "run_started").len(), 1);
    assert_eq!(of_type(&run.events, "run_finished").len(), 1);
}

#[test]
fn complete_ends_the_run_with_the_report() {
    let repo = TempRepo::new();
    let run = run(
        &repo,
        vec![
            turns(&[continue_report("looked around")]),
            turns(&[complete_report("all done")]),
        ],
        config(8),
    );
    assert_bracketed(&run);
    assert_eq!(run.summary.status, RunStatus::Complete);
    assert_eq!(run.summary.rounds_started, 2);
    assert_eq!(run.summary.report.as_ref().unwrap().summary, "all done");
    assert_eq!(
        run.summary.last_valid_report.as_ref().unwrap().summary,
        "all done"
    );
    assert_eq!(run.summary.error, None);
    assert_eq!(run.summary.verification, None);
    assert_eq!(of_type(&run.events, "round_started").len(), 2);
    assert_eq!(of_type(&run.events, "round_finished").len(), 2);
    let run_json: Value = serde_json::from_str(
        &std::fs::read_to_string(run.summary.run_dir.join("run.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(run_json["status"], "complete");
    assert_eq!(run_json["rounds_started"], 2);
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(run.summary.run_dir.join("rounds/02/report.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(report["summary"], "all done");
}

#[test]
fn blocked_ends_the_run_with_the_blocker() {
    let repo = TempRepo::new();
    let run = run(
        &repo,
        vec![
            turns(&[report(
                "blocked",
                "cannot",
                &[],
                &[],
                "the tests need a database",
            )]),
            turns(&[complete_report("never reached")]),
        ],
        config(8),
    );
    assert_bracketed(&run);
    assert_eq!(run.summary.status, RunStatus::Blocked);
    assert_eq!(run.summary.rounds_started, 1);
    assert_eq!(
        run.summary.report.as_ref().unwrap().blocker,
        "the tests need a database"
    );
}

#[test]
fn the_round_cap_ends_the_run_budget_limited() {
    let repo = TempRepo::new();
    let run = run(
        &repo,
        vec![
            turns(&[continue_report("one")]),
            turns(&[continue_report("two")]),
            turns(&[continue_report("three")]),
        ],
        config(2),
    );
    assert_bracketed(&run);
    assert_eq!(run.summary.status, RunStatus::BudgetLimited);
    assert_eq!(run.summary.rounds_started, 2);
    assert_eq!(run.summary.error, None);
    // The last round's `continue` report is the run's report.
    assert_eq!(run.summary.report.as_ref().unwrap().summary, "two");
    assert_eq!(
        run.summary.last_valid_report.as_ref().unwrap().summary,
        "two"
    );
}

#[test]
fn the_token_budget_ends_the_run_between_turns() {
    let repo = TempRepo::new();
    let mut cfg = config(8);
    cfg.token_budget = Some(12);
    let run = run(
        &repo,
        vec![turns(&[
            "a b c d e f g h i j".into(),
            "k l m n o p".into(),
            complete_report("would be done"),
        ])],
        cfg,
    );
    assert_bracketed(&run);
    assert_eq!(run.summary.status, RunStatus::BudgetLimited);
    assert!(run
        .summary
        .error
        .as_deref()
        .unwrap()
        .contains("token budget"));
    assert!(of_type(&run.events, "report_accepted").is_empty());
}

#[test]
fn a_round_without_a_report_fails_and_keeps_the_previous_report() {
    let repo = TempRepo::new();
    let run = run(
        &repo,
        vec![
            turns(&[continue_report("first round")]),
            turns(&["I am thinking but never report.".into()]),
        ],
        config(8),
    );
    assert_bracketed(&run);
    assert_eq!(run.summary.status, RunStatus::RoundFailed);
    assert_eq!(run.summary.report, None);
    assert_eq!(
        run.summary.last_valid_report.as_ref().unwrap().summary,
        "first round"
    );
    let error = run.summary.error.as_deref().unwrap();
    assert!(error.starts_with("round 2: "), "{error}");
    assert!(error.contains("without a valid report"), "{error}");
    // A turn without a call got the reminder before the script ran out of turns.
    let transcript =
        std::fs::read_to_string(run.summary.run_dir.join("rounds/02/transcript.jsonl")).unwrap();
    let last_line: Value = serde_json::from_str(transcript.lines().last().unwrap()).unwrap();
    assert_eq!(last_line["role"], "user");
    assert_eq!(last_line["content"], prompt::NO_CALL_REMINDER);
    let finished = of_type(&run.events, "round_finished");
    assert_eq!(finished[1]["outcome"], "failed");
    assert!(!run.summary.run_dir.join("rounds/02/report.json").exists());
}

#[test]
fn the_engine_rejects_invalid_reports_and_the_child_corrects_within_the_round() {
    let repo = TempRepo::new();
    let run = run(
        &repo,
        vec![turns(&[
            "<tool_call>{\"name\": \"ralph_report\", \"arguments\": {\"status\": </tool_call>"
                .into(),
            // Well-formed calls that break a rule: only the engine's validation can refuse them.
            report("complete", "done", &[], &[], ""),
            report("continue", " padded", &[], &["more"], ""),
            complete_report("done properly"),
        ])],
        config(8),
    );
    assert_bracketed(&run);
    assert_eq!(run.summary.status, RunStatus::Complete);
    assert_eq!(
        run.summary.report.as_ref().unwrap().summary,
        "done properly"
    );
    let rejected = of_type(&run.events, "report_rejected");
    assert_eq!(rejected.len(), 2);
    assert!(rejected[0]["reason"].as_str().unwrap().contains("evidence"));
    assert!(rejected[1]["reason"]
        .as_str()
        .unwrap()
        .contains("whitespace"));
    // The last turn checks the files before it reports: a complete report needs a call.
    let results = of_type(&run.events, "tool_result");
    assert_eq!(results.len(), 5);
    assert_eq!(results[0]["name"], "(malformed)");
    assert!(results[0]["output"].as_str().unwrap().contains("malformed"));
    assert_eq!(results[1]["ok"], false);
    assert!(results[1]["output"]
        .as_str()
        .unwrap()
        .contains("2 attempt(s) left"));
    assert!(results[2]["output"]
        .as_str()
        .unwrap()
        .contains("1 attempt(s) left"));
    assert_eq!(results[3]["name"], "list_dir");
    assert_eq!(results[4]["ok"], true);
    // Each rejection's tool result comes right before its report_rejected.
    let types: Vec<&str> = run
        .events
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .filter(|t| t.starts_with("tool_") || t.starts_with("report_"))
        .collect();
    assert_eq!(
        types,
        [
            "tool_call",
            "tool_result",
            "tool_call",
            "tool_result",
            "report_rejected",
            "tool_call",
            "tool_result",
            "report_rejected",
            "tool_call",
            "tool_result",
            "tool_call",
            "tool_result",
            "report_accepted",
        ]
    );
    assert_eq!(of_type(&run.events, "report_accepted").len(), 1);
}

#[test]
fn three_rejected_reports_fail_the_round() {
    let repo = TempRepo::new();
    let bad = report("blocked", "stuck", &[], &[], "");
    let run = run(
        &repo,
        vec![turns(&[
            bad.clone(),
            bad.clone(),
            bad,
            complete_report("too late"),
        ])],
        config(8),
    );
    assert_bracketed(&run);
    assert_eq!(run.summary.status, RunStatus::RoundFailed);
    assert_eq!(run.summary.last_valid_report, None);
    assert!(run
        .summary
        .error
        .as_deref()
        .unwrap()
        .contains("rejected 3 times"));
    assert_eq!(of_type(&run.events, "report_rejected").len(), 3);
    assert!(of_type(&run.events, "report_accepted").is_empty());
}

#[test]
fn tool_calls_run_and_their_results_reach_the_events() {
    let repo = TempRepo::new();
    let huge = "y".repeat(300 * 1024);
    let run = run(
        &repo,
        vec![turns(&[
            call(
                "write_file",
                json!({"path": "notes.txt", "content": "hello\n"}),
            ),
            call("write_file", json!({"path": "big.txt", "content": huge})),
            call("no_such_tool", json!({})),
            complete_report("done"),
        ])],
        config(8),
    );
    assert_bracketed(&run);
    assert_eq!(run.summary.status, RunStatus::Complete);
    assert_eq!(repo.read("notes.txt"), "hello\n");
    assert!(!repo.path().join("big.txt").exists());
    let results = of_type(&run.events, "tool_result");
    assert_eq!(results[0]["name"], "write_file");
    assert_eq!(results[0]["ok"], true);
    assert_eq!(results[1]["ok"], false);
    assert!(results[1]["output"]
        .as_str()
        .unwrap()
        .contains("the limit is"));
    assert_eq!(results[2]["ok"], false);
    assert!(results[2]["output"]
        .as_str()
        .unwrap()
        .contains("unknown tool"));
    let changed = of_type(&run.events, "workspace_changed");
    assert_eq!(changed.len(), 1);
    assert!(changed[0].to_string().contains("notes.txt"));
}

#[test]
fn cancelling_the_token_mid_stream_ends_the_run_cancelled() {
    let repo = TempRepo::new();
    let run = run_with(
        &repo,
        vec![
            turns(&[continue_report("round one")]),
            turns(&[format!(
                "{} {}",
                "word ".repeat(200),
                complete_report("never reached")
            )]),
        ],
        config(8),
        CancellationToken::new(),
        |event, cancel| {
            if event["type"] == "token" && event["round"] == 2 {
                cancel.cancel();
            }
        },
    );
    assert_bracketed(&run);
    assert_eq!(run.summary.status, RunStatus::Cancelled);
    assert_eq!(run.summary.rounds_started, 2);
    assert_eq!(run.summary.report, None);
    assert_eq!(
        run.summary.last_valid_report.as_ref().unwrap().summary,
        "round one"
    );
    // Generation stopped at the next piece: one token of round 2 was streamed.
    let round2_tokens = run
        .events
        .iter()
        .filter(|e| e["type"] == "token" && e["round"] == 2)
        .count();
    assert_eq!(round2_tokens, 1);
    let finished = of_type(&run.events, "round_finished");
    assert_eq!(finished.last().unwrap()["outcome"], "cancelled");
    let run_json: Value = serde_json::from_str(
        &std::fs::read_to_string(run.summary.run_dir.join("run.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(run_json["status"], "cancelled");
}

#[test]
fn a_token_cancelled_before_the_run_starts_no_round() {
    let repo = TempRepo::new();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let run = run_with(
        &repo,
        vec![turns(&[complete_report("never reached")])],
        config(8),
        cancel,
        |_, _| {},
    );
    assert_bracketed(&run);
    assert_eq!(run.summary.status, RunStatus::Cancelled);
    assert_eq!(run.summary.rounds_started, 0);
    assert!(of_type(&run.events, "round_started").is_empty());
}

#[test]
fn events_come_in_order_run_started_first_run_finished_last() {
    let repo = TempRepo::new();
    let mut cfg = config(8);
    cfg.warnings = vec!["first note".into(), "second note".into()];
    let run = run(
        &repo,
        vec![turns(&[
            "Let me look.".into(),
            format!(
                "{}\n{}",
                call("list_dir", json!({"path": "."})),
                complete_report("done")
            ),
        ])],
        cfg,
    );
    assert_bracketed(&run);
    let types: Vec<&str> = run
        .events
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    // Warnings come right after run_started, in the order given.
    assert_eq!(types[..3], ["run_started", "warning", "warning"]);
    assert_eq!(run.events[1]["message"], "first note");
    assert_eq!(run.events[2]["message"], "second note");
    assert_eq!(types[3], "round_started");
    // Within the round: tokens, then the tool's call and result, then the report, then the
    // round's end; run_finished closes the run.
    let first_token = position(&run.events, "token");
    let tool_call = position(&run.events, "tool_call");
    let tool_result = position(&run.events, "tool_result");
    let accepted = position(&run.events, "report_accepted");
    let round_finished = position(&run.events, "round_finished");
    assert!(3 < first_token);
    assert!(first_token < tool_call);
    assert!(tool_call < tool_result);
    assert!(tool_result < accepted);
    assert!(accepted < round_finished);
    assert_eq!(round_finished, types.len() - 2);
    assert_eq!(run.events[tool_call]["name"], "list_dir");
    assert_eq!(run.events[tool_result]["ok"], true);
    // Every token sits between round_started and round_finished.
    assert!(types[round_finished..]
        .iter()
        .chain(types[..3].iter())
        .all(|t| *t != "token"));
}
