//! `run_command` under the real sandbox helper (the built binary): exit codes, writes outside
//! the workspace, the network, background processes, timeouts, failing closed, and the
//! approval policy.
//!
//! Where this kernel cannot give a mode, the test checks that commands are refused with the
//! way out (`--sandbox off`) instead of run unconfined.

use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use ralph_tui::protocol::policy::{ApprovalPolicy, SandboxMode};
use ralph_tui::tools::approval::{ApprovalBroker, ApprovalDecision};
use ralph_tui::tools::sandbox::{self, NetworkIsolation};
use serde_json::json;

use super::super::common::*;
use super::{Bench, Scripted};

#[test]
fn run_command_reports_exit_codes_and_output() {
    let bench = Bench::new();
    if let Err(why) = bench.sandbox_available() {
        let out = bench.err("run_command", json!({"command": "true"}));
        assert!(out.contains("--sandbox off"), "{why}: {out}");
        return;
    }
    bench.repo.write("marker.txt", "here\n");
    let out = bench.ok(
        "run_command",
        json!({"command": "pwd; cat marker.txt; echo to-stderr >&2"}),
    );
    assert!(out.starts_with("exit code 0\n"), "{out}");
    // The cwd is the workspace, whose path the output gives relative (`.`).
    assert!(
        out.lines().any(|l| l == ".") && out.contains("here"),
        "cwd is the workspace: {out}"
    );
    assert!(!out.contains(bench.root().to_str().unwrap()), "{out}");
    assert!(out.contains("to-stderr"), "{out}");
    let out = bench.err("run_command", json!({"command": "echo oops; exit 3"}));
    assert!(
        out.starts_with("exit code 3\n") && out.contains("oops"),
        "{out}"
    );
    let out = bench.ok(
        "run_command",
        json!({"command": "echo made > made.txt && echo $TMPDIR"}),
    );
    assert!(out.contains(bench.round_tmp().to_str().unwrap()), "{out}");
    assert_eq!(bench.repo.read("made.txt"), "made\n");
}

#[test]
fn sandboxed_commands_cannot_write_outside_the_workspace() {
    let bench = Bench::new();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("escaped.txt");
    let command = format!("echo escaped > '{}'", target.display());
    let out = bench.err("run_command", json!({ "command": command }));
    if let Err(why) = bench.sandbox_available() {
        assert!(out.contains("--sandbox off"), "{why}: {out}");
        return;
    }
    // Landlock refuses it, or first the mount (read-only outside the writable paths).
    let refused =
        |out: &str| out.contains("Permission denied") || out.contains("Read-only file system");
    assert!(refused(&out), "{out}");
    assert!(
        !target.exists(),
        "the sandbox let a write out of the workspace"
    );
    // The scratch dir and /dev/null stay writable.
    let out = bench.ok(
        "run_command",
        json!({"command": "echo s > \"$TMPDIR/s.txt\" && cat \"$TMPDIR/s.txt\" && echo quiet > /dev/null"}),
    );
    assert!(out.contains("\ns"), "{out}");

    // read-only: not even the workspace.
    let ro = Bench::with(SandboxMode::ReadOnly, ApprovalPolicy::Auto, false);
    let out = ro.err("run_command", json!({"command": "echo x > inside.txt"}));
    assert!(refused(&out), "{out}");
    assert!(!ro.repo.path().join("inside.txt").exists());
    ro.ok(
        "run_command",
        json!({"command": "echo t > \"$TMPDIR/t\" && cat README.md"}),
    );

    // off: no confinement at all.
    let off = Bench::with(SandboxMode::Off, ApprovalPolicy::Auto, false);
    off.ok("run_command", json!({ "command": command }));
    assert!(target.exists());
}

#[test]
fn sandboxed_commands_have_no_network() {
    let connect = "bash -c 'exec 3<>/dev/tcp/127.0.0.1/9' 2>&1; echo done";
    let bench = Bench::new();
    let result = bench.call("run_command", json!({ "command": connect }));
    if let Err(why) = bench.sandbox_available() {
        assert!(
            !result.ok && result.output.contains("--sandbox off"),
            "{why}"
        );
        return;
    }
    assert!(result.ok, "{}", result.output);
    // No interface is up in the new namespace, not even loopback.
    assert!(
        result.output.contains("Network is unreachable"),
        "{}",
        result.output
    );
    // With the network allowed, the same connect reaches loopback (and is refused by port 9).
    let open = Bench::with(SandboxMode::WorkspaceWrite, ApprovalPolicy::Auto, true);
    let out = open.ok("run_command", json!({ "command": connect }));
    assert!(!out.contains("Network is unreachable"), "{out}");
}

/// Live (not zombie) processes whose process group is `pgid`.
fn live_in_group(pgid: i32) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // Fields after "(comm)": state ppid pgrp ...
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() > 2 && fields[0] != "Z" && fields[2].parse() == Ok(pgid) {
            found.push(pid);
        }
    }
    found
}

#[test]
fn background_processes_die_with_the_round() {
    let mut bench = Bench::new();
    if bench.sandbox_available().is_err() {
        bench.policy.sandbox = SandboxMode::Off;
    }
    let out = bench.ok(
        "run_command",
        json!({"command": "sleep 300 > /dev/null 2>&1 & echo \"group=$$ sleeper=$!\""}),
    );
    let field = |name: &str| -> i32 {
        out.split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{name}=")))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {out}"))
    };
    let (group, sleeper) = (field("group"), field("sleeper"));
    assert!(
        live_in_group(group).contains(&sleeper),
        "the background sleep should still run in group {group}"
    );
    bench.processes.kill_all();
    // SIGKILL lands asynchronously; wait for it (bounded), then check.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !live_in_group(group).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        live_in_group(group),
        Vec::<i32>::new(),
        "group {group} survived"
    );
}

#[test]
fn commands_time_out_and_are_killed() {
    let mut bench = Bench::new();
    if bench.sandbox_available().is_err() {
        bench.policy.sandbox = SandboxMode::Off;
    }
    let started = Instant::now();
    let out = bench.err(
        "run_command",
        json!({"command": "echo before; sleep 30", "timeout_s": 1}),
    );
    assert!(out.contains("timed out after 1s"), "{out}");
    assert!(out.contains("before"), "{out}");
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "the timeout did not bite"
    );

    // The run's default applies when the call gives none.
    bench.policy.command_timeout = Duration::from_secs(1);
    let out = bench.err("run_command", json!({"command": "sleep 30"}));
    assert!(out.contains("timed out after 1s"), "{out}");

    // A cancelled round kills the command instead of waiting for it.
    bench.policy.command_timeout = Duration::from_secs(60);
    bench.cancel.cancel();
    let out = bench.err("run_command", json!({"command": "sleep 30"}));
    assert!(out.contains("cancelled"), "{out}");
}

#[test]
fn the_sandbox_helper_fails_closed() {
    let out = std::process::Command::new(BIN)
        .args([
            "__sandbox-exec",
            "--mode",
            "workspace-write",
            "--write",
            "/nonexistent/dir",
            "--",
            "sh",
            "-c",
            "echo ran",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(sandbox::SETUP_FAILED));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("ran"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with(sandbox::FAILURE_PREFIX), "{stderr}");
    assert!(stderr.contains("--sandbox off"), "{stderr}");

    let support = sandbox::probe_with(Path::new(BIN));
    let sentence = sandbox::describe(&support);
    assert!(sentence.starts_with("Sandbox: "), "{sentence}");
    if support.landlock_abi.is_some() {
        assert!(sentence.contains("Landlock ABI"), "{sentence}");
    }
    if support.network == NetworkIsolation::Namespace {
        assert!(sentence.contains("network namespace"), "{sentence}");
    }
}

// ---------------------------------------------------------------- approval

#[test]
fn approval_deny_refuses_every_command() {
    let bench = Bench::with(SandboxMode::Off, ApprovalPolicy::Deny, false);
    let asked = Scripted::new(ApprovalDecision::Approve);
    let result = bench.call_with(&asked, "run_command", json!({"command": "touch ran.txt"}));
    assert!(!result.ok);
    assert!(
        result.output.contains("denied by the approval policy"),
        "{}",
        result.output
    );
    assert!(asked.questions().is_empty(), "deny never asks");
    assert!(!bench.repo.path().join("ran.txt").exists());
}

#[test]
fn approval_ask_puts_each_command_to_the_approver() {
    let bench = Bench::with(SandboxMode::Off, ApprovalPolicy::Ask, false);
    let no = Scripted::new(ApprovalDecision::Deny);
    let result = bench.call_with(&no, "run_command", json!({"command": "touch no.txt"}));
    assert!(
        !result.ok && result.output.contains("denied by the person"),
        "{}",
        result.output
    );
    assert_eq!(no.questions(), ["touch no.txt"]);
    assert!(!bench.repo.path().join("no.txt").exists());

    let yes = Scripted::new(ApprovalDecision::Approve);
    let result = bench.call_with(&yes, "run_command", json!({"command": "touch yes.txt"}));
    assert!(result.ok, "{}", result.output);
    assert!(bench.repo.path().join("yes.txt").exists());
    let request = &yes.asked.lock().unwrap()[0];
    assert_eq!(request.round, 1);
    assert_eq!(request.cwd, bench.root().display().to_string());

    // "Always for this run": the broker asks once (answered at once here), every later
    // command runs without a question.
    let questions = Arc::new(Mutex::new(Vec::<String>::new()));
    let slot: Arc<OnceLock<Weak<ApprovalBroker>>> = Arc::default();
    let always = Arc::new(ApprovalBroker::new({
        let questions = Arc::clone(&questions);
        let slot = Arc::clone(&slot);
        move |request, id| {
            questions.lock().unwrap().push(request.command);
            if let Some(broker) = slot.get().and_then(Weak::upgrade) {
                broker.answer(id, ApprovalDecision::AlwaysThisRun);
            }
        }
    }));
    slot.set(Arc::downgrade(&always)).unwrap();
    for name in ["a.txt", "b.txt", "c.txt"] {
        let command = format!("touch {name}");
        let result = bench.call_with(
            always.as_ref(),
            "run_command",
            json!({ "command": command }),
        );
        assert!(result.ok, "{}", result.output);
        assert!(bench.repo.path().join(name).exists());
    }
    assert_eq!(*questions.lock().unwrap(), ["touch a.txt"]);
}
