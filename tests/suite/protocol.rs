//! The shared types' contracts seen from a real run: approval questions reach `events.jsonl`
//! with the id the approver answers by, and `run.json` keeps its fields (now typed).

use std::sync::{Arc, Mutex};

use ralph_tui::tools::approval::{ApprovalDecision, ApprovalRequest, Approver, DenyAll};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::common::*;

/// Approves everything and remembers the ids it was asked about.
#[derive(Default)]
struct Yes {
    asked: Mutex<Vec<(u64, String)>>,
}

impl Approver for Yes {
    fn decide(&self, request: &ApprovalRequest, _cancel: &CancellationToken) -> ApprovalDecision {
        self.asked
            .lock()
            .unwrap()
            .push((request.id, request.command.clone()));
        ApprovalDecision::Approve
    }
}

/// Runs one round that calls `run_command` then completes, with `--approval ask`.
fn run_asking(approver: Arc<dyn Approver>) -> (Vec<Value>, Value, tempfile::TempDir) {
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let script = script(
        tmp.path(),
        vec![turns(&[
            call("run_command", json!({"command": "echo asked"})),
            complete_report("ran it"),
        ])],
    );
    let settings = script_settings(
        repo.path(),
        tmp.path(),
        &script,
        &["--approval", "ask", "--sandbox", "off"],
        "run a command",
    );
    let prepared = ralph_tui::app::prepare(&settings).unwrap();
    let handle =
        ralph_tui::app::start(prepared, "run a command".into(), approver, Box::new(|_| {}))
            .unwrap();
    let run_dir = handle.run_dir.clone();
    let summary = handle.join().unwrap();
    assert_eq!(summary.run_dir, run_dir);
    let log = std::fs::read_to_string(run_dir.join("events.jsonl")).unwrap();
    let events = events(log.as_bytes());
    let run_json: Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("run.json")).unwrap()).unwrap();
    drop(repo);
    (events, run_json, tmp)
}

#[test]
fn an_approval_question_is_recorded_in_events_jsonl() {
    let yes = Arc::new(Yes::default());
    let (events, _, _tmp) = run_asking(yes.clone());
    let asked = yes.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    let (id, command) = &asked[0];
    assert_eq!(command, "echo asked");
    let requested = of_type(&events, "approval_requested");
    assert_eq!(requested.len(), 1, "{events:?}");
    let event = requested[0];
    assert_eq!(event["id"], *id);
    assert_eq!(event["round"], 1);
    assert_eq!(event["command"], "echo asked");
    assert!(event["cwd"].is_string());
    assert!(event["ts"].is_string());
    // Asked during the call: after its tool_call, before its tool_result.
    let position = |ty: &str| events.iter().position(|e| e["type"] == ty).unwrap();
    assert!(position("tool_call") < position("approval_requested"));
    assert!(position("approval_requested") < position("tool_result"));
    let result = of_type(&events, "tool_result")[0];
    assert_eq!(result["ok"], true, "{result}");
}

#[test]
fn nothing_is_recorded_when_nobody_is_asked() {
    let (events, _, _tmp) = run_asking(Arc::new(DenyAll));
    assert!(of_type(&events, "approval_requested").is_empty());
    let result = of_type(&events, "tool_result")[0];
    assert_eq!(result["ok"], false, "{result}");
}

#[test]
fn run_json_keeps_its_fields() {
    let (_, run_json, _tmp) = run_asking(Arc::new(DenyAll));
    for field in [
        "run_id",
        "objective",
        "max_rounds",
        "workspace",
        "started_at",
        "finished_at",
        "status",
        "rounds_started",
        "worker_reported",
        "sandbox_support",
        "backend",
        "model_file",
        "model_sha256",
        "device",
        "chat_format",
    ] {
        assert!(
            run_json.get(field).is_some(),
            "run.json lacks {field}: {run_json}"
        );
    }
    let settings = &run_json["settings"];
    assert_eq!(settings["approval"], "ask");
    assert_eq!(settings["sandbox"], "off");
    assert_eq!(settings["network"], false);
    for field in [
        "max_turns",
        "token_budget",
        "command_timeout_s",
        "verify",
        "inference",
    ] {
        assert!(
            settings.get(field).is_some(),
            "settings lack {field}: {settings}"
        );
    }
    assert!(run_json["model_sha256"].as_str().unwrap().len() == 64);
    assert_eq!(run_json["status"], "complete");
}
