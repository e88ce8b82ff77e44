//! What sandboxed commands cannot reach: the repository's `.git`, ralph-tui's processes (by
//! signal or by their limits), the terminal; and what cannot outlive them: processes that left the process group
//! (`setsid`, double forks), also when ralph-tui is killed with SIGKILL, and the round's
//! scratch directory of a killed run. Also: a round that does change `.git` is warned about,
//! and ralph-tui started with lowered limits raises them, or fails a write with a line.
//!
//! Where this kernel cannot give the sandbox, each test checks that commands are refused with
//! the way out instead of run unconfined.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ralph_tui::protocol::policy::{ApprovalPolicy, SandboxMode};
use ralph_tui::tools::process::run_captured;
use ralph_tui::tools::sandbox;
use ralph_tui::tools::supervisor::PARENT_ENV;
use ralph_tui::tools::ToolPolicy;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::super::common::*;
use super::Bench;

/// A bench whose sandbox works here, or `None` after checking that commands are refused.
pub(super) fn sandboxed() -> Option<Bench> {
    let bench = Bench::new();
    if let Err(why) = bench.sandbox_available() {
        let out = bench.err("run_command", json!({"command": "true"}));
        assert!(out.contains("--sandbox off"), "{why}: {out}");
        return None;
    }
    Some(bench)
}

/// A marker no command line contains literally (commands build it from two halves).
pub(super) fn marker() -> (String, String) {
    let nonce = format!(
        "{}x{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos()
    );
    (
        format!("m=rtmark; : \"${{m}}-{nonce}\""),
        format!("rtmark-{nonce}"),
    )
}

/// Live processes whose command line contains `needle`.
pub(super) fn with_marker(needle: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let zombie = stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if !zombie && String::from_utf8_lossy(&cmdline).contains(needle) {
            found.push(pid);
        }
    }
    found
}

/// Waits (bounded) until `done` holds; returns whether it did.
pub(super) fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    done()
}

#[test]
fn git_dir_is_read_only_to_commands() {
    let Some(bench) = sandboxed() else { return };
    let config = bench.repo.read(".git/config");
    let head = bench.repo.read(".git/HEAD");
    let out = bench.ok(
        "run_command",
        json!({"command": "echo 'curl evil' > .git/hooks/post-commit; echo hook=$?; \
            printf '[core]\\n\\thooksPath = elsewhere\\n' >> .git/config; echo config=$?; \
            echo 0000 > .git/refs/heads/planted; echo ref=$?; \
            mv .git gone; echo mv=$?; echo fine > fine.txt"}),
    );
    for step in ["hook", "config", "ref", "mv"] {
        assert!(
            !out.contains(&format!("{step}=0")),
            "{step} got through: {out}"
        );
    }
    assert!(out.contains("Read-only file system"), "{out}");
    let git = bench.root().join(".git");
    assert!(!git.join("hooks/post-commit").exists());
    assert!(!git.join("refs/heads/planted").exists());
    assert_eq!(bench.repo.read(".git/config"), config);
    assert_eq!(bench.repo.read(".git/HEAD"), head);
    assert_eq!(
        bench.repo.read("fine.txt"),
        "fine\n",
        "the rest stays writable"
    );
}

#[test]
fn a_linked_worktrees_git_dirs_are_read_only_too() {
    let Some(bench) = sandboxed() else { return };
    let repo = git2::Repository::open(bench.root()).unwrap();
    let outer = tempfile::tempdir().unwrap();
    let wt_path = outer.path().join("wt");
    repo.worktree("wt", &wt_path, None).unwrap();
    let wt = wt_path.canonicalize().unwrap();
    let dirs = sandbox::git_dirs(&wt);
    let common = bench.root().join(".git");
    assert!(dirs.contains(&common), "{dirs:?}");
    assert!(dirs.contains(&common.join("worktrees/wt")), "{dirs:?}");
    // The worktree's git dirs lie outside it here; put the main repo inside the writable set
    // too, as if the worktree were nested, and check the mounts still hold.
    let mut policy = ToolPolicy::new(SandboxMode::WorkspaceWrite, ApprovalPolicy::Auto, false);
    policy.sandbox_exe = Path::new(BIN).to_path_buf();
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = sandbox::command(
        &policy,
        &wt,
        tmp.path(),
        "echo x > \"$1/hooks/post-checkout\"; echo common=$?; echo x > \"$1/worktrees/wt/HEAD\"; echo own=$?; echo x > .git; echo file=$?",
    );
    // `sh -c CMD` takes the next argument as $0, then $1.
    let extra = ["sh", common.to_str().unwrap()];
    cmd.args(extra);
    let args: Vec<String> = cmd
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let at = args.iter().position(|a| a == "--").unwrap();
    let mut widened = Command::new(BIN);
    widened
        .args(&args[..at])
        .args(["--write", bench.root().to_str().unwrap()])
        .args(&args[at..])
        .current_dir(&wt)
        .env(PARENT_ENV, std::process::id().to_string());
    let cancel = CancellationToken::new();
    let out = run_captured(widened, Duration::from_secs(30), &cancel, 4096, None).unwrap();
    for step in ["common", "own", "file"] {
        assert!(
            out.output.contains(&format!("{step}=")) && !out.output.contains(&format!("{step}=0")),
            "{step}: {}",
            out.output
        );
    }
    assert!(!common.join("hooks/post-checkout").exists());
    assert!(std::fs::read_to_string(wt.join(".git"))
        .unwrap()
        .starts_with("gitdir:"));
}

#[test]
fn commands_cannot_signal_processes_outside_the_sandbox() {
    let Some(bench) = sandboxed() else { return };
    let support = sandbox::probe_with(Path::new(BIN));
    let me = std::process::id();
    let out = bench.ok(
        "run_command",
        json!({"command": format!("kill -0 {me}; echo self=$?; kill -0 $PPID; echo parent=$?; kill -STOP $PPID; echo stop=$?")}),
    );
    if !support.signals_scoped {
        // Landlock before ABI 6 cannot scope signals; the sentence says so.
        assert!(sandbox::describe(&support).contains("cannot stop commands signalling"));
        return;
    }
    assert!(
        out.contains("self=1") && out.contains("parent=1") && out.contains("stop=1"),
        "{out}"
    );
    assert!(sandbox::describe(&support).contains("commands cannot signal"));
    // Inside the sandbox, signals still work.
    let out = bench.ok(
        "run_command",
        json!({"command": "sleep 30 & kill $!; wait $!; echo status=$?"}),
    );
    assert!(out.contains("status=143"), "{out}");
}

#[test]
fn processes_that_leave_the_group_die_with_the_round() {
    let Some(bench) = sandboxed() else { return };
    assert_escapees_die_with_the_round(&bench);
}

/// A command leaves two processes behind, one after `setsid`, one after a double fork: both
/// run until the round ends, and none is left after.
fn assert_escapees_die_with_the_round(bench: &Bench) {
    let (build, needle) = marker();
    let out = bench.ok(
        "run_command",
        json!({"command": format!(
            "{build}; setsid sh -c \"sleep 300; : ${{m}}-{rest}\" >/dev/null 2>&1 & \
             (sh -c \"sleep 300; : ${{m}}-{rest}\" >/dev/null 2>&1 &); echo started",
            rest = needle.trim_start_matches("rtmark-")
        )}),
    );
    assert!(out.contains("started"), "{out}");
    assert!(
        wait_until(Duration::from_secs(10), || with_marker(&needle).len() == 2),
        "both escapees should run until the round ends: {:?}",
        with_marker(&needle)
    );
    bench.processes.kill_all();
    assert!(
        wait_until(Duration::from_secs(10), || with_marker(&needle).is_empty()),
        "survived the round: {:?}",
        with_marker(&needle)
    );
}

#[test]
fn commands_have_no_controlling_terminal() {
    let Some(bench) = sandboxed() else { return };
    assert_no_terminal(&bench);
}

/// A command runs in a session of its own, with no controlling terminal: `/dev/tty` cannot
/// be written nor its settings read.
fn assert_no_terminal(bench: &Bench) {
    let out = bench.ok(
        "run_command",
        json!({"command": "cat /proc/self/stat; echo; echo hi > /dev/tty; echo tty=$?; stty -a < /dev/tty; echo stty=$?", "timeout_s": 30}),
    );
    let stat = out.lines().find(|l| l.contains(") ")).unwrap();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    // state ppid pgrp session tty_nr
    let session: i32 = fields[3].parse().unwrap();
    let ours = nix::unistd::getsid(None).unwrap().as_raw();
    assert_ne!(session, ours, "the command shares ralph-tui's session");
    assert_eq!(fields[4], "0", "the command has a controlling terminal");
    assert!(!out.contains("tty=0") && !out.contains("stty=0"), "{out}");
}

/// With `--sandbox off` nothing is confined, but commands still get their own session (no
/// terminal to write over the screen) and nothing they start outlives the round.
#[test]
fn unconfined_commands_still_have_no_terminal_and_die_with_the_round() {
    let bench = Bench::with(SandboxMode::Off, ApprovalPolicy::Auto, true);
    assert_no_terminal(&bench);
    // Unconfined: it may write outside the workspace (its own scratch file here).
    let outside = bench.scratch.path().join("outside.txt");
    bench.ok(
        "run_command",
        json!({"command": format!("echo free > {}", outside.display())}),
    );
    assert!(outside.is_file());
    assert_escapees_die_with_the_round(&bench);
}

fn sandbox_args() -> Option<Vec<&'static str>> {
    let support = sandbox::probe_with(Path::new(BIN));
    support.check(SandboxMode::WorkspaceWrite, false).ok()?;
    Some(Vec::new())
}

#[test]
fn killing_ralph_tui_leaves_no_command_and_no_round_dir_behind() {
    let Some(mut args) = sandbox_args() else {
        return;
    };
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let scratch = tmp.path().join("tmp");
    std::fs::create_dir(&scratch).unwrap();
    let (build, needle) = marker();
    let rest = needle.trim_start_matches("rtmark-");
    let command = format!(
        "{build}; setsid sh -c \"sleep 300; : ${{m}}-{rest}\" >/dev/null 2>&1 & sh -c \"sleep 300; : ${{m}}-{rest}\""
    );
    let hang = script(
        tmp.path(),
        vec![turns(&[
            call(
                "run_command",
                json!({ "command": command, "timeout_s": 600 }),
            ),
            complete_report("never reached"),
        ])],
    );
    let backend = format!("script:{}", hang.display());
    args.extend(["--backend", backend.as_str(), "hang in a command"]);
    let mut child = headless(repo.path(), &tmp.path().join("run1"), &args)
        .env("TMPDIR", &scratch)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = wait_until(Duration::from_secs(60), || with_marker(&needle).len() == 2);
    let round_dirs = |dir: &Path| -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("ralph-tui-pid"))
            .collect()
    };
    let left = round_dirs(&scratch);
    child.kill().unwrap();
    let _ = child.wait();
    assert!(started, "the command never started");
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(
        wait_until(Duration::from_secs(10), || with_marker(&needle).is_empty()),
        "orphans after kill -9: {:?}",
        with_marker(&needle)
    );
    assert_eq!(round_dirs(&scratch), left, "the killed run's dir stays");

    // The next start removes it.
    let quiet = script(tmp.path(), vec![turns(&[complete_report("nothing to do")])]);
    let backend = format!("script:{}", quiet.display());
    let out = headless(
        repo.path(),
        &tmp.path().join("run2"),
        &["--backend", backend.as_str(), "nothing"],
    )
    .env("TMPDIR", &scratch)
    .output()
    .unwrap();
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(round_dirs(&scratch), Vec::<String>::new());
}

#[test]
fn a_round_that_changes_git_hooks_is_warned_about() {
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let script = script(
        tmp.path(),
        vec![turns(&[
            call(
                "run_command",
                json!({"command": "printf '#!/bin/sh\\n' > .git/hooks/post-commit"}),
            ),
            complete_report("planted"),
        ])],
    );
    let backend = format!("script:{}", script.display());
    let out = headless(
        repo.path(),
        &tmp.path().join("run"),
        &[
            "--backend",
            backend.as_str(),
            "--sandbox",
            "off",
            "plant a hook",
        ],
    )
    .output()
    .unwrap();
    let events = events(&out.stdout);
    let warnings: Vec<String> = of_type(&events, "warning")
        .into_iter()
        .map(|e| e["message"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("round 1") && w.contains("hooks/post-commit (added)")),
        "{warnings:?}"
    );
}

#[test]
fn a_command_cannot_kill_ralph_tui() {
    let support = sandbox::probe_with(Path::new(BIN));
    if support.check(SandboxMode::WorkspaceWrite, false).is_err() || !support.signals_scoped {
        return;
    }
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    // $PPID is the supervisor; its parent is ralph-tui.
    let command =
        "kill -STOP $PPID; kill -9 $PPID; kill -9 $(cut -d' ' -f4 /proc/$PPID/stat); echo survived";
    let script = script(
        tmp.path(),
        vec![turns(&[
            call("run_command", json!({ "command": command })),
            complete_report("tried to kill ralph-tui"),
        ])],
    );
    let backend = format!("script:{}", script.display());
    let out = headless(
        repo.path(),
        &tmp.path().join("run"),
        &["--backend", backend.as_str(), "try to kill ralph-tui"],
    )
    .output()
    .unwrap();
    let events = events(&out.stdout);
    assert_eq!(last(&events)["type"], "run_finished", "{events:?}");
    let result = of_type(&events, "tool_result")[0]["output"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(result.contains("survived"), "{result}");
    assert!(result.contains("Operation not permitted"), "{result}");
}

#[test]
fn a_command_cannot_lower_the_limits_of_ralph_tui_or_its_supervisor() {
    let support = sandbox::probe_with(Path::new(BIN));
    if support.check(SandboxMode::WorkspaceWrite, false).is_err() {
        return;
    }
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    // $PPID is the supervisor; its parent is ralph-tui.
    let command = "rt=$(cut -d' ' -f4 /proc/$PPID/stat); \
        prlimit --pid $rt --fsize=0:0 --nofile=0:0; echo ralph=$?; \
        prlimit --pid $PPID --nofile=0:0; echo supervisor=$?; echo survived";
    let script = script(
        tmp.path(),
        vec![turns(&[
            call("run_command", json!({ "command": command })),
            complete_report("tried to lower ralph-tui's limits"),
        ])],
    );
    let backend = format!("script:{}", script.display());
    let run_dir = tmp.path().join("run");
    let out = headless(
        repo.path(),
        &run_dir,
        &["--backend", backend.as_str(), "lower ralph-tui's limits"],
    )
    .output()
    .unwrap();
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let events = events(&out.stdout);
    assert_eq!(last(&events)["type"], "run_finished", "{events:?}");
    let result = of_type(&events, "tool_result")[0]["output"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        result.contains("ralph=1") && result.contains("supervisor=1"),
        "{result}"
    );
    assert!(result.contains("survived"), "{result}");
    let logged = std::fs::read_to_string(run_dir.join("events.jsonl")).unwrap();
    assert!(logged.contains("\"run_finished\""), "{logged}");
}

/// ralph-tui run headless with `limits` (a shell's `ulimit` commands) set before it starts,
/// on a turn long enough that the log outgrows a small file size limit.
fn headless_under_limits(limits: &str) -> (std::process::Output, tempfile::TempDir) {
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let turn = format!("{} {}", "word ".repeat(40_000), complete_report("done"));
    let s = script(tmp.path(), vec![turns(&[turn])]);
    let inner = headless(
        repo.path(),
        &tmp.path().join("run"),
        &["--backend", &format!("script:{}", s.display()), "obj"],
    );
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("{limits}; exec \"$@\""))
        .arg("sh")
        .arg(inner.get_program())
        .args(inner.get_args());
    for (key, value) in inner.get_envs() {
        match value {
            Some(v) => cmd.env(key, v),
            None => cmd.env_remove(key),
        };
    }
    (cmd.output().unwrap(), tmp)
}

#[test]
fn lowered_soft_limits_are_raised_at_start() {
    let (out, tmp) = headless_under_limits("ulimit -S -f 16 && ulimit -S -n 24");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 0, "stderr: {err}");
    assert_eq!(last(&events(&out.stdout))["type"], "run_finished");
    let size = std::fs::metadata(tmp.path().join("run/events.jsonl"))
        .unwrap()
        .len();
    assert!(size > 64 * 1024, "{size}");
}

/// No `trap '' XFSZ` here: a write past a hard file size limit fails the run with one line
/// and exit 1, never a death by SIGXFSZ.
#[test]
fn a_write_past_the_file_size_limit_fails_the_run_instead_of_killing_it() {
    let (out, _tmp) = headless_under_limits("ulimit -f 128");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.signal(), None, "stderr: {err}");
    assert_eq!(code(&out), 1, "stderr: {err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains("run log cannot be written"), "{err}");
}
