//! The child's workspace tools through the registry, with the shared fixture: file tools in
//! `tools/files.rs`, commands, the sandbox and approval in `tools/commands.rs`, and here one
//! headless run through the binary that uses every kind of tool.

mod commands;
mod confine;
mod files;
mod isolation;
mod metadata;
mod reach;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ralph_tui::protocol::policy::{ApprovalPolicy, SandboxMode};
use ralph_tui::tools::approval::{ApprovalDecision, ApprovalRequest, Approver, DenyAll};
use ralph_tui::tools::process::ProcessTracker;
use ralph_tui::tools::sandbox;
use ralph_tui::tools::{AskedRenames, Registry, ToolContext, ToolPolicy, ToolResult};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::common::*;

/// An approver for tests: answers from a fixed decision and remembers every question.
struct Scripted {
    answer: ApprovalDecision,
    asked: Mutex<Vec<ApprovalRequest>>,
}

impl Scripted {
    fn new(answer: ApprovalDecision) -> Self {
        Self {
            answer,
            asked: Mutex::new(Vec::new()),
        }
    }

    fn questions(&self) -> Vec<String> {
        self.asked
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.command.clone())
            .collect()
    }
}

impl Approver for Scripted {
    fn decide(&self, request: &ApprovalRequest, _cancel: &CancellationToken) -> ApprovalDecision {
        self.asked.lock().unwrap().push(request.clone());
        self.answer
    }
}

/// A workspace, a round scratch dir, and the parts of a `ToolContext`.
struct Bench {
    repo: TempRepo,
    scratch: tempfile::TempDir,
    policy: ToolPolicy,
    cancel: CancellationToken,
    processes: ProcessTracker,
    registry: Registry,
    /// The renames the tools see as the objective's (none).
    renames: AskedRenames,
}

impl Bench {
    fn new() -> Self {
        Self::with(SandboxMode::WorkspaceWrite, ApprovalPolicy::Auto, false)
    }

    fn with(sandbox: SandboxMode, approval: ApprovalPolicy, network: bool) -> Self {
        let mut policy = ToolPolicy::new(sandbox, approval, network);
        policy.sandbox_exe = PathBuf::from(BIN);
        Self {
            repo: TempRepo::new(),
            scratch: tempfile::tempdir().unwrap(),
            policy,
            cancel: CancellationToken::new(),
            processes: ProcessTracker::new(),
            registry: Registry::standard(),
            renames: AskedRenames::default(),
        }
    }

    fn root(&self) -> PathBuf {
        self.repo.path().canonicalize().unwrap()
    }

    fn round_tmp(&self) -> PathBuf {
        self.scratch.path().join("round-01")
    }

    fn call_with(&self, approver: &dyn Approver, name: &str, arguments: Value) -> ToolResult {
        let root = self.root();
        let round_tmp = self.round_tmp();
        let ctx = ToolContext {
            root: &root,
            renames: &self.renames,
            round: 1,
            round_tmp: &round_tmp,
            cancel: &self.cancel,
            policy: &self.policy,
            processes: &self.processes,
            approver,
        };
        self.registry.call(name, &arguments, &ctx)
    }

    fn call(&self, name: &str, arguments: Value) -> ToolResult {
        self.call_with(&DenyAll, name, arguments)
    }

    fn ok(&self, name: &str, arguments: Value) -> String {
        let result = self.call(name, arguments.clone());
        assert!(result.ok, "{name} {arguments} failed: {}", result.output);
        result.output
    }

    fn err(&self, name: &str, arguments: Value) -> String {
        let result = self.call(name, arguments.clone());
        assert!(
            !result.ok,
            "{name} {arguments} should fail: {}",
            result.output
        );
        result.output
    }

    /// `Err(sentence)` when this kernel cannot give `mode` (the tools must then refuse).
    fn sandbox_available(&self) -> Result<(), String> {
        sandbox::probe_with(Path::new(BIN)).check(self.policy.sandbox, self.policy.network)
    }
}

#[test]
fn headless_run_uses_the_tools_end_to_end() {
    let repo = TempRepo::new();
    repo.write("src/lib.rs", "pub fn answer() -> u32 {\n    41\n}\n");
    repo.commit_all("add lib");
    let tmp = tempfile::tempdir().unwrap();
    let script = script(
        tmp.path(),
        vec![turns(&[
            format!("Looking first.\n{}", call("list_dir", json!({"path": "."}))),
            call("read_file", json!({"path": "src/lib.rs"})),
            call(
                "edit_file",
                json!({"path": "src/lib.rs", "old": "    41\n", "new": "    42\n"}),
            ),
            call("run_command", json!({"command": "grep -n 42 src/lib.rs"})),
            complete_only("answer() now returns 42"),
        ])],
    );
    let run_dir = tmp.path().join("run");
    let backend = format!("script:{}", script.display());
    let mut args = vec!["--backend", backend.as_str()];
    let support = sandbox::probe_with(Path::new(BIN));
    if support.check(SandboxMode::WorkspaceWrite, false).is_err() {
        args.extend(["--sandbox", "off"]);
    }
    args.push("make answer() return 42");
    let out = headless(repo.path(), &run_dir, &args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 0, "{stderr}");
    let events = events(&out.stdout);
    let results: Vec<(String, bool, String)> = of_type(&events, "tool_result")
        .into_iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_string(),
                e["ok"].as_bool().unwrap(),
                e["output"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let names: Vec<&str> = results.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(
        names,
        [
            "list_dir",
            "read_file",
            "edit_file",
            "run_command",
            "ralph_report"
        ],
        "{results:?}"
    );
    assert!(
        results.iter().all(|r| r.1),
        "every call succeeded: {results:?}"
    );
    assert!(
        results[0].2.lines().any(|l| l == "src/lib.rs"),
        "{}",
        results[0].2
    );
    assert!(results[1].2.contains("    41"), "{}", results[1].2);
    assert!(results[3].2.starts_with("exit code 0") && results[3].2.contains("2:    42"));
    let calls = of_type(&events, "tool_call");
    assert_eq!(calls[2]["arguments"]["new"], "    42\n");
    assert_eq!(
        repo.read("src/lib.rs"),
        "pub fn answer() -> u32 {\n    42\n}\n"
    );
    let end = last(&events);
    assert_eq!(end["type"], "run_finished");
    assert_eq!(end["status"], "complete");
    let finished = of_type(&events, "round_finished");
    assert_eq!(finished[0]["files_changed"], 1, "{}", finished[0]);
}
