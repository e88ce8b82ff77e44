//! Run integrity through the real binary: early signals, one run per workspace, the bound on
//! one turn, a run log that cannot be written, and refused run directories and objectives.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use nix::sys::signal::{kill, SigSet, SigmaskHow, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};

use super::common::*;

/// A script whose one turn streams for a long time (5000 words, `delay_ms` each).
fn slow_script(dir: &Path, delay_ms: u64) -> String {
    let long_turn = format!("{} {}", "word ".repeat(5000), complete_report("late"));
    let s = script_with_delay(dir, vec![turns(&[long_turn])], delay_ms);
    format!("script:{}", s.display())
}

fn pid_of(child: &Child) -> Pid {
    Pid::from_raw(i32::try_from(child.id()).unwrap())
}

/// Whether the process has handlers for SIGINT and SIGTERM (`SigCgt` in /proc).
fn catches_both(pid: Pid) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    let want = (1u64 << (Signal::SIGINT as u32 - 1)) | (1u64 << (Signal::SIGTERM as u32 - 1));
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .is_some_and(|mask| mask & want == want)
}

/// Every line of a JSON Lines file parses and the file ends with a newline; returns the lines.
fn whole_lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "{} ends mid-line",
        path.display()
    );
    events(text.as_bytes())
}

/// A signal at any moment from the start of `main` exits 130, never death by signal, and any
/// run log that exists ends in `run_finished`.
#[test]
fn early_signals_exit_130_with_a_complete_log() {
    let repo = TempRepo::new();
    for i in 0..30 {
        let tmp = tempfile::tempdir().unwrap();
        let backend = slow_script(tmp.path(), 5);
        let run_dir = tmp.path().join("run");
        let mut cmd = headless(repo.path(), &run_dir, &["--backend", &backend, "obj"]);
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let point = i % 3;
        if point == 0 {
            // The signal is sent before the program's first instruction: held pending by the
            // mask it was started with until `main` catches (and unblocks) it.
            #[allow(
                unsafe_code,
                reason = "pre_exec: only async-signal-safe calls (sigprocmask) between fork and exec"
            )]
            unsafe {
                cmd.pre_exec(|| {
                    let mut set = SigSet::empty();
                    set.add(Signal::SIGINT);
                    set.add(Signal::SIGTERM);
                    nix::sys::signal::sigprocmask(SigmaskHow::SIG_BLOCK, Some(&set), None)
                        .map_err(std::io::Error::from)
                });
            }
        }
        let mut child = cmd.spawn().unwrap();
        let pid = pid_of(&child);
        let mut reader = BufReader::new(child.stdout.take().unwrap());
        match point {
            0 => {}
            1 => {
                while !catches_both(pid) {
                    std::thread::yield_now();
                }
            }
            _ => {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
            }
        }
        let signal = if i % 2 == 0 {
            Signal::SIGINT
        } else {
            Signal::SIGTERM
        };
        let sent = kill(pid, signal);
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut reader, &mut rest).unwrap();
        let out = child.wait_with_output().unwrap();
        // Everything a failure needs to be understood from a CI log alone.
        let log = run_dir.join("events.jsonl");
        let logged = std::fs::read_to_string(&log).ok();
        let tail = |text: &str| {
            let from = (text.len().saturating_sub(1500)..text.len())
                .find(|&i| text.is_char_boundary(i))
                .unwrap_or(text.len());
            text[from..].to_string()
        };
        let said = format!(
            "try {i} (point {point}, {signal}, kill: {sent:?}): {:?}\nstderr: {}\nstdout ends: {}\nevents.jsonl ends: {:?}",
            out.status,
            String::from_utf8_lossy(&out.stderr),
            tail(&rest),
            logged.as_deref().map(tail)
        );
        assert_eq!(out.status.code(), Some(130), "{said}");
        if logged.is_some() {
            let logged = whole_lines(&log);
            let end = logged.last();
            assert_eq!(
                end.map(|e| &e["type"]),
                Some(&json!("run_finished")),
                "{said}"
            );
            assert_eq!(
                end.map(|e| &e["status"]),
                Some(&json!("cancelled")),
                "{said}"
            );
        }
    }
}

/// A turn past the bound is cut: the round fails with an error naming the bound, and the log
/// holds only the bounded part (a 20 MB turn would otherwise stream ~330 MB of events).
#[test]
fn a_huge_turn_is_cut_and_fails_the_round() {
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let huge = "word ".repeat(4 * 1024 * 1024);
    // A context far past the bound (4 bytes a token), so the turn meets the bound first.
    let s = tmp.path().join("script.json");
    let text = serde_json::json!({"ctx_size": 4 * 1024 * 1024, "rounds": [turns(&[huge])]});
    std::fs::write(&s, text.to_string()).unwrap();
    let run_dir = tmp.path().join("run");
    let out = headless(
        repo.path(),
        &run_dir,
        &["--backend", &format!("script:{}", s.display()), "obj"],
    )
    .output()
    .unwrap();
    assert_eq!(code(&out), 5, "{}", String::from_utf8_lossy(&out.stderr));
    let logged = whole_lines(&run_dir.join("events.jsonl"));
    let end = last(&logged);
    assert_eq!(end["type"], "run_finished");
    assert_eq!(end["status"], "round-failed");
    let error = end["error"].as_str().unwrap();
    assert!(error.contains("1 MiB") && error.contains("cut"), "{error}");
    let streamed: usize = of_type(&logged, "token")
        .iter()
        .map(|t| t["text"].as_str().unwrap().len())
        .sum();
    assert!(streamed <= 1024 * 1024, "{streamed} bytes streamed");
    let size = std::fs::metadata(run_dir.join("events.jsonl"))
        .unwrap()
        .len();
    assert!(size < 32 * 1024 * 1024, "events.jsonl is {size} bytes");
    assert!(out.stdout.len() < 32 * 1024 * 1024);
}

/// With a file size limit under the run directory (SIGXFSZ ignored, so writes fail with
/// EFBIG, as on a full disk), the run stops: exit 1, one line on stderr, whole lines only.
#[test]
fn a_log_that_cannot_be_written_stops_the_run_with_whole_lines() {
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let turn = format!("{} {}", "word ".repeat(40_000), complete_report("done"));
    let s = script(tmp.path(), vec![turns(&[turn])]);
    let run_dir = tmp.path().join("run");
    let inner = headless(
        repo.path(),
        &run_dir,
        &["--backend", &format!("script:{}", s.display()), "obj"],
    );
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("trap '' XFSZ; ulimit -f 128; exec \"$@\"")
        .arg("sh")
        .arg(inner.get_program())
        .args(inner.get_args());
    for (key, value) in inner.get_envs() {
        match value {
            Some(v) => cmd.env(key, v),
            None => cmd.env_remove(key),
        };
    }
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 1, "stderr: {err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains("run log cannot be written"), "{err}");
    let path = run_dir.join("events.jsonl");
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size > 0 && size <= 128 * 1024, "{size}");
    let logged = whole_lines(&path);
    assert_eq!(logged[0]["type"], "run_started");
    // The run was stopped, not carried on to the report.
    let streamed = events(&out.stdout);
    assert_eq!(last(&streamed)["status"], "cancelled");
}

/// A real full disk (a 64 KiB tmpfs) under the run directory: the run stops with exit 1 and
/// one line naming the error, and every file of the log holds whole lines only. Skipped where
/// this process may not mount (the file size limit test above covers the same path).
#[test]
fn a_full_disk_stops_the_run_with_whole_lines() {
    let Some(fs) = TinyFs::mount("64k") else {
        eprintln!("skipped: cannot mount a tmpfs here");
        return;
    };
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let turn = format!("{} {}", "word ".repeat(40_000), complete_report("done"));
    let s = script(tmp.path(), vec![turns(&[turn])]);
    let run_dir = fs.dir.path().join("run");
    let mut cmd = headless(
        repo.path(),
        &run_dir,
        &["--backend", &format!("script:{}", s.display()), "obj"],
    );
    isolate(&mut cmd, tmp.path());
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 1, "stderr: {err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains("run log cannot be written"), "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    let logged = whole_lines(&run_dir.join("events.jsonl"));
    assert_eq!(logged[0]["type"], "run_started");
    let transcript = run_dir.join("rounds/01/transcript.jsonl");
    if transcript.exists() {
        whole_lines(&transcript);
    }
    assert_eq!(last(&events(&out.stdout))["status"], "cancelled");
}

fn run_json_lines(out: &std::process::Output) -> Vec<Value> {
    events(&out.stdout)
}

/// A second run in a work tree that has a run going is refused, naming the running one; a
/// lock left by a process that died is no obstacle.
#[test]
fn one_run_per_workspace() {
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let backend = slow_script(tmp.path(), 20);
    let mut first = headless(
        repo.path(),
        &tmp.path().join("a"),
        &["--backend", &backend, "obj"],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let mut reader = BufReader::new(first.stdout.take().unwrap());
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let started: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(started["type"], "run_started");
    let run_id = started["run_id"].as_str().unwrap();

    let quick = script(tmp.path(), vec![turns(&[complete_report("x")])]);
    let quick = format!("script:{}", quick.display());
    let second_dir = tmp.path().join("b");
    let out = headless(repo.path(), &second_dir, &["--backend", &quick, "obj"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains("another run is active"), "{err}");
    assert!(err.contains(run_id), "names the run: {err}");
    assert!(
        err.contains(&format!("pid {}", first.id())),
        "names the pid: {err}"
    );
    assert!(!second_dir.exists(), "nothing written");

    // The first run dies without any cleanup; its lock goes with it.
    first.kill().unwrap();
    first.wait().unwrap();
    let out = headless(
        repo.path(),
        &tmp.path().join("c"),
        &["--backend", &quick, "obj"],
    )
    .output()
    .unwrap();
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(last(&run_json_lines(&out))["status"], "complete");
    // A run that ended leaves no holder's name behind (beside the run directories).
    let locks = tmp.path().join("locks");
    let left: Vec<_> = std::fs::read_dir(&locks).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A holder file left by a run that was killed (its pid gone) is taken over, with a line on
/// stderr that says so and names it; it lives in the runtime directory when there is one.
#[test]
fn a_stale_lock_is_taken_over_and_said() {
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let runtime = tmp.path().join("runtime");
    std::fs::create_dir(&runtime).unwrap();
    let holders = runtime.join("ralph-tui").join("locks");
    std::fs::create_dir_all(&holders).unwrap();
    let holder = ralph_tui::runlock::holder_path(&holders, repo.path()).unwrap();
    let mut gone = Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    std::fs::write(
        &holder,
        format!("run 20200101-000000-dead, pid {dead}, started 2020-01-01T00:00:00Z\n"),
    )
    .unwrap();

    let quick = script(tmp.path(), vec![turns(&[complete_report("x")])]);
    let out = headless(
        repo.path(),
        &tmp.path().join("run"),
        &["--backend", &format!("script:{}", quick.display()), "obj"],
    )
    .env("XDG_RUNTIME_DIR", &runtime)
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 0, "{err}");
    let said: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("taking over a stale workspace lock"))
        .collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(said[0].contains("run 20200101-000000-dead"), "{err}");
    assert!(said[0].contains(&format!("pid {dead}")), "{err}");
    assert!(!holder.exists(), "removed at the run's end");
    assert!(
        !tmp.path().join("locks").exists(),
        "nothing beside the run directory"
    );
}

fn assert_refused(cmd: &mut Command, needle: &str) -> String {
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(code(&out), 2, "{err}");
    assert!(err.contains(needle), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one clear line: {err}");
    assert!(out.stdout.is_empty());
    err
}

#[test]
fn a_used_run_dir_is_refused() {
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let s = script(tmp.path(), vec![turns(&[complete_report("x")])]);
    let backend = format!("script:{}", s.display());
    let run_dir = tmp.path().join("run");
    let out = headless(repo.path(), &run_dir, &["--backend", &backend, "obj"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0);
    let before = std::fs::read(run_dir.join("events.jsonl")).unwrap();
    let run_json = std::fs::read(run_dir.join("run.json")).unwrap();
    assert_refused(
        &mut headless(repo.path(), &run_dir, &["--backend", &backend, "again"]),
        "not empty",
    );
    assert_eq!(std::fs::read(run_dir.join("events.jsonl")).unwrap(), before);
    assert_eq!(std::fs::read(run_dir.join("run.json")).unwrap(), run_json);
    // An empty directory is fine.
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = headless(repo.path(), &empty, &["--backend", &backend, "obj"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn an_unusable_run_dir_is_exit_two_with_one_line() {
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let s = script(tmp.path(), vec![turns(&[complete_report("x")])]);
    let backend = format!("script:{}", s.display());
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "keep").unwrap();
    assert_refused(
        &mut headless(repo.path(), &file, &["--backend", &backend, "obj"]),
        "not a directory",
    );
    let mut under_file = headless(
        repo.path(),
        &file.join("run"),
        &["--backend", &backend, "obj"],
    );
    isolate(&mut under_file, tmp.path());
    assert_refused(&mut under_file, "not a directory");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep");
}

#[test]
fn objectives_are_bounded_and_free_of_control_characters() {
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let s = script(tmp.path(), vec![turns(&[complete_report("x")])]);
    let backend = format!("script:{}", s.display());
    let run_dir = tmp.path().join("run");
    let big = tmp.path().join("big.txt");
    std::fs::write(&big, "fix it ".repeat(5 * 1024 * 1024 / 7)).unwrap();
    let big = big.to_str().unwrap();
    assert_refused(
        &mut headless(repo.path(), &run_dir, &["--backend", &backend, "-f", big]),
        "64 KiB",
    );
    let nul = tmp.path().join("nul.txt");
    std::fs::write(&nul, "fix\0it").unwrap();
    let nul = nul.to_str().unwrap();
    assert_refused(
        &mut headless(repo.path(), &run_dir, &["--backend", &backend, "-f", nul]),
        "control character",
    );
    assert_refused(
        &mut headless(
            repo.path(),
            &run_dir,
            &["--backend", &backend, "fix\u{1b}[2J it"],
        ),
        "control character",
    );
    assert!(!run_dir.exists(), "nothing written");
    // Newlines and tabs are fine.
    let out = headless(repo.path(), &run_dir, &["--backend", &backend, "fix\n\tit"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
}
