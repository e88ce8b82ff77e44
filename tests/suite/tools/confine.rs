//! Confinement of the file tools against a worker that fights back: a directory swapped for a
//! symlink while the tools run, FIFOs, huge sparse files, a symlinked `AGENTS.md`, and a
//! workspace that is a git directory or a bare repository.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use ralph_tui::protocol::policy::SandboxMode;
use ralph_tui::tools::sandbox;
use ralph_tui::tools::ToolResult;
use rustix::fs::{renameat_with, RenameFlags, CWD};
use serde_json::{json, Value};

use super::super::common::*;
use super::Bench;

/// Attempts per tool in the race test.
const RACE_ATTEMPTS: usize = 1000;
/// A bound on how long a tool call may take before it counts as hung (liveness, not timing).
const HUNG: Duration = Duration::from_secs(20);

/// Swaps two names with `renameat2(RENAME_EXCHANGE)` in a loop until stopped.
struct Swapper {
    stop: Arc<AtomicBool>,
    swaps: Arc<AtomicUsize>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Swapper {
    fn start(a: &Path, b: &Path) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let swaps = Arc::new(AtomicUsize::new(0));
        let (a, b) = (a.to_path_buf(), b.to_path_buf());
        let thread = {
            let (stop, swaps) = (stop.clone(), swaps.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if renameat_with(CWD, &a, CWD, &b, RenameFlags::EXCHANGE).is_ok() {
                        swaps.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        };
        Self {
            stop,
            swaps,
            thread: Some(thread),
        }
    }

    /// Stops swapping; returns how many swaps happened.
    fn stop(mut self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
        self.swaps.load(Ordering::Relaxed)
    }
}

#[test]
fn a_racing_symlink_swap_never_lets_a_tool_escape() {
    let bench = Bench::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("f.txt"), "OUTSIDE-SECRET\n").unwrap();
    std::fs::write(outside.path().join("only-outside.txt"), "OUTSIDE-SECRET\n").unwrap();
    let root = bench.root();
    std::fs::create_dir(root.join("d")).unwrap();
    std::fs::write(root.join("d/f.txt"), "inside\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("l")).unwrap();
    let outside_names = || {
        let mut names: Vec<String> = std::fs::read_dir(outside.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let before = outside_names();

    let swapper = Swapper::start(&root.join("d"), &root.join("l"));
    let mut read_escapes = 0;
    let mut reads_ok = 0;
    let mut list_escapes = 0;
    let mut search_escapes = 0;
    for i in 0..RACE_ATTEMPTS {
        let read = bench.call("read_file", json!({"path": "d/f.txt"}));
        read_escapes += usize::from(read.output.contains("OUTSIDE-SECRET"));
        reads_ok += usize::from(read.ok);
        bench.call(
            "write_file",
            json!({"path": format!("d/w{i}.txt"), "content": "written\n"}),
        );
        // `old` only occurs in the outside file: any success is an escape.
        bench.call(
            "edit_file",
            json!({"path": "d/f.txt", "old": "OUTSIDE-SECRET", "new": "EDITED"}),
        );
        let listed = bench.call("list_dir", json!({"path": "d"}));
        list_escapes += usize::from(listed.output.contains("only-outside"));
        let found = bench.call("search", json!({"pattern": "OUTSIDE", "path": "d"}));
        search_escapes += usize::from(found.ok && found.output.contains("OUTSIDE-SECRET"));
    }
    let swaps = swapper.stop();
    let written_outside = outside_names()
        .into_iter()
        .filter(|n| !before.contains(n))
        .count();
    eprintln!(
        "{RACE_ATTEMPTS} attempts per tool, {swaps} swaps, {reads_ok} reads succeeded; escapes: read {read_escapes}, write {written_outside}, list {list_escapes}, search {search_escapes}"
    );
    assert!(swaps > 0, "the swapper never ran");
    assert_eq!(read_escapes, 0, "read_file returned an outside file");
    assert_eq!(written_outside, 0, "write_file wrote outside the workspace");
    assert_eq!(
        std::fs::read_to_string(outside.path().join("f.txt")).unwrap(),
        "OUTSIDE-SECRET\n",
        "edit_file changed an outside file"
    );
    assert_eq!(list_escapes, 0, "list_dir listed an outside directory");
    assert_eq!(search_escapes, 0, "search read an outside file");
}

/// Runs one tool call on a thread and gives up waiting after [`HUNG`].
fn call_or_hang(bench: &Arc<Bench>, name: &'static str, arguments: Value) -> ToolResult {
    let (tx, rx) = mpsc::channel();
    let bench = bench.clone();
    std::thread::spawn(move || {
        let _ = tx.send(bench.call(name, arguments));
    });
    rx.recv_timeout(HUNG)
        .unwrap_or_else(|_| panic!("{name} blocked on a FIFO"))
}

#[test]
fn fifos_and_other_special_files_are_refused_without_blocking() {
    let bench = Arc::new(Bench::new());
    let root = bench.root();
    nix::unistd::mkfifo(&root.join("pipe"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    std::os::unix::fs::symlink("/dev/zero", root.join("zero")).unwrap();
    for (name, arguments) in [
        ("read_file", json!({"path": "pipe"})),
        ("write_file", json!({"path": "pipe", "content": "x"})),
        ("edit_file", json!({"path": "pipe", "old": "a", "new": "b"})),
        ("search", json!({"pattern": "x", "path": "pipe"})),
    ] {
        let result = call_or_hang(&bench, name, arguments);
        assert!(!result.ok, "{name}: {}", result.output);
        assert!(result.output.contains("FIFO"), "{name}: {}", result.output);
    }
    // A search over the directory names the FIFO it did not open.
    let result = call_or_hang(&bench, "search", json!({"pattern": "x"}));
    assert!(result.ok, "{}", result.output);
    assert!(
        result.output.contains("not searched") && result.output.contains("pipe (a FIFO"),
        "{}",
        result.output
    );
    // Ignore files are read confined too: a FIFO or a link to /dev/zero as `.gitignore`
    // neither hangs nor fills memory.
    nix::unistd::mkfifo(&root.join(".gitignore"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    std::fs::create_dir(root.join("sub")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", root.join("sub/.gitignore")).unwrap();
    std::fs::write(root.join("sub/found.txt"), "needle\n").unwrap();
    let result = call_or_hang(&bench, "list_dir", json!({"path": "."}));
    assert!(
        result.ok && result.output.contains("sub/found.txt"),
        "{}",
        result.output
    );
    let result = call_or_hang(&bench, "search", json!({"pattern": "needle"}));
    assert!(
        result.output.contains("sub/found.txt:1: needle"),
        "{}",
        result.output
    );
    // A symlink to a device is refused as a symlink, never read.
    let out = bench.err("read_file", json!({"path": "zero"}));
    assert!(
        out.contains("outside the workspace") || out.contains("symlink"),
        "{out}"
    );
}

#[test]
fn edit_file_checks_the_size_before_reading() {
    let bench = Bench::new();
    let big = std::fs::File::create(bench.root().join("big.txt")).unwrap();
    big.set_len(20 * 1024 * 1024).unwrap();
    let out = bench.err(
        "edit_file",
        json!({"path": "big.txt", "old": "a", "new": "b"}),
    );
    assert!(out.contains("too large"), "{out}");
    assert!(out.contains("20971520 bytes"), "{out}");
}

#[test]
fn search_names_the_files_it_skipped() {
    let bench = Bench::new();
    let mut text = "filler line\n".repeat(450_000);
    text.push_str("needle\n");
    bench.repo.write("huge.log.txt", &text);
    bench.repo.write("small.txt", "no hit here\n");
    let out = bench.ok(
        "search",
        json!({"pattern": "needle", "path": "huge.log.txt"}),
    );
    assert!(out.starts_with("no matches"), "{out}");
    assert!(
        out.contains("not searched, 1 file(s): huge.log.txt (5400007 bytes, over the"),
        "{out}"
    );
    let out = bench.ok("search", json!({"pattern": "needle"}));
    assert!(out.contains("huge.log.txt (5400007 bytes"), "{out}");
    bench.repo.write("small.txt", "needle\n");
    let out = bench.ok("search", json!({"pattern": "needle"}));
    assert!(out.starts_with("small.txt:1: needle"), "{out}");
    assert!(
        out.contains("not searched, 1 file(s): huge.log.txt"),
        "{out}"
    );
}

// ---------------------------------------------------------------- through the binary

/// A headless run of one round from `items`; returns (exit code, events, run dir, tmp).
fn run(
    repo: &TempRepo,
    items: &[String],
) -> (i32, Vec<Value>, std::path::PathBuf, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let script = script(tmp.path(), vec![turns(items)]);
    let run_dir = tmp.path().join("run");
    let backend = format!("script:{}", script.display());
    let out = headless(repo.path(), &run_dir, &["--backend", &backend, "objective"])
        .output()
        .unwrap();
    (code(&out), events(&out.stdout), run_dir, tmp)
}

#[test]
fn agents_md_is_read_confined_regular_and_bounded() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "OUTSIDE-SECRET").unwrap();
    let targets = [
        outside.path().join("secret"),
        std::path::PathBuf::from("/proc/self/environ"),
        std::path::PathBuf::from("/dev/zero"),
    ];
    for target in &targets {
        let repo = TempRepo::new();
        std::os::unix::fs::symlink(target, repo.path().join("AGENTS.md")).unwrap();
        let (code, events, run_dir, _tmp) = run(&repo, &[complete_report("done")]);
        assert_eq!(code, 0, "{target:?}: {events:?}");
        let prompt = std::fs::read_to_string(run_dir.join("rounds/01/prompt.json")).unwrap();
        assert!(!prompt.contains("AGENTS.md):"), "{target:?}: {prompt}");
        assert!(!prompt.contains("OUTSIDE-SECRET") && !prompt.contains("HOME="));
        assert!(
            prompt.len() < 64 * 1024,
            "{target:?}: {} bytes",
            prompt.len()
        );
        let warnings = of_type(&events, "warning");
        assert!(
            warnings
                .iter()
                .any(|w| w["message"].as_str().unwrap().contains("AGENTS.md")),
            "{target:?}: {warnings:?}"
        );
    }

    // A FIFO does not hang the run.
    let repo = TempRepo::new();
    nix::unistd::mkfifo(
        &repo.path().join("AGENTS.md"),
        nix::sys::stat::Mode::S_IRWXU,
    )
    .unwrap();
    let (code, events, _run_dir, _tmp) = run(&repo, &[complete_report("done")]);
    assert_eq!(code, 0, "{events:?}");
    assert!(of_type(&events, "warning")
        .iter()
        .any(|w| w["message"].as_str().unwrap().contains("FIFO")));

    // A large regular file is cut at the bound.
    let repo = TempRepo::new();
    repo.write("AGENTS.md", &"rule\n".repeat(100_000));
    let (code, _events, run_dir, _tmp) = run(&repo, &[complete_report("done")]);
    assert_eq!(code, 0);
    let prompt = std::fs::read_to_string(run_dir.join("rounds/01/prompt.json")).unwrap();
    assert!(prompt.contains("AGENTS.md continues"));
    assert!(prompt.len() < 64 * 1024, "{} bytes", prompt.len());
}

#[test]
fn a_fifo_made_by_the_worker_fails_the_call_and_cancel_still_works() {
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let long_turn = format!("{} {}", "word ".repeat(5000), complete_report("never"));
    let s = script_with_delay(
        tmp.path(),
        vec![turns(&[
            call("run_command", json!({"command": "mkfifo p"})),
            call("read_file", json!({"path": "p"})),
            call("write_file", json!({"path": "p", "content": "x"})),
            call("edit_file", json!({"path": "p", "old": "a", "new": "b"})),
            long_turn,
        ])],
        5,
    );
    let backend = format!("script:{}", s.display());
    let mut args = vec!["--backend", backend.as_str()];
    if sandbox::probe_with(Path::new(BIN))
        .check(SandboxMode::WorkspaceWrite, false)
        .is_err()
    {
        args.extend(["--sandbox", "off"]);
    }
    args.push("obj");
    let mut child = headless(repo.path(), &tmp.path().join("run"), &args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut seen: Vec<Value> = Vec::new();
    let mut tokens_after_tools = 0;
    while tokens_after_tools < 20 {
        let mut line = String::new();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "stream ended early: {seen:?}"
        );
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["type"] == "token" && of_type(&seen, "tool_result").len() == 4 {
            tokens_after_tools += 1;
        }
        seen.push(v);
    }
    let results = of_type(&seen, "tool_result");
    assert_eq!(results[0]["ok"], true, "mkfifo: {}", results[0]);
    for result in &results[1..] {
        assert_eq!(result["ok"], false, "{result}");
        assert!(
            result["output"].as_str().unwrap().contains("FIFO"),
            "{result}"
        );
    }
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut reader, &mut rest).unwrap();
    let status = child.wait().unwrap();
    seen.extend(events(rest.as_bytes()));
    assert_eq!(status.code(), Some(130));
    assert_eq!(seen.last().unwrap()["status"], "cancelled");
}

/// The run must stop with exit 2 and one line containing `needle`, writing nothing.
fn assert_refused_workspace(dir: &Path, needle: &str, not: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let good = script(tmp.path(), vec![turns(&[complete_report("x")])]);
    let backend = format!("script:{}", good.display());
    let out = headless(
        dir,
        &tmp.path().join("run"),
        &["--backend", &backend, "obj"],
    )
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(code(&out), 2, "{dir:?}: {err}");
    assert!(err.contains(needle), "{dir:?}: {err}");
    assert!(!err.contains(not), "{dir:?}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "one clear line: {err}");
    assert!(out.stdout.is_empty());
    assert!(!tmp.path().join("run").exists(), "nothing written");
}

#[test]
fn a_git_directory_or_a_bare_repository_is_not_a_workspace() {
    let repo = TempRepo::new();
    let git_dir = repo.path().join(".git");
    let hooks_before = std::fs::read_dir(git_dir.join("hooks"))
        .map(|d| d.count())
        .ok();
    let config_before = std::fs::read(git_dir.join("config")).unwrap();
    assert_refused_workspace(&git_dir, "inside the git directory", "git init");
    std::fs::create_dir_all(git_dir.join("hooks")).unwrap();
    assert_refused_workspace(
        &git_dir.join("hooks"),
        "inside the git directory",
        "git init",
    );
    assert_eq!(
        std::fs::read(git_dir.join("config")).unwrap(),
        config_before
    );
    let hooks_after = std::fs::read_dir(git_dir.join("hooks"))
        .map(|d| d.count())
        .ok();
    assert_eq!(hooks_after.unwrap_or(0), hooks_before.unwrap_or(0));

    let bare = tempfile::tempdir().unwrap();
    git2::Repository::init_bare(bare.path()).unwrap();
    assert_refused_workspace(bare.path(), "bare repository", "git init");
    assert_refused_workspace(&bare.path().join("objects"), "bare repository", "git init");
}
