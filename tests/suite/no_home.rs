//! Config and data never fall back into the workspace: without a home directory a run is
//! refused (exit 2, one line) unless `--run-dir` and `--config` name both places, and a run
//! directory inside the work tree (where the worker could rewrite its `run.json` and
//! `events.jsonl`) is refused at the start and never resumed.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::json;

use super::common::*;

/// The binary in `repo` (also its working directory) with no usable home: `HOME` relative
/// (it would put `.config/` and `.local/` beside the current directory) and no XDG dirs.
fn homeless(repo: &Path, script: &Path, extra: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(repo)
        .env("HOME", ".")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("RALPH_LOG")
        .args(["--headless", "--backend"])
        .arg(format!("script:{}", script.display()))
        .args(extra)
        .arg("no home");
    cmd
}

fn one_round(dir: &Path) -> std::path::PathBuf {
    script(
        dir,
        vec![turns(&[
            call("write_file", json!({"path": "made.txt", "content": "x\n"})),
            complete_report("made.txt written"),
        ])],
    )
}

/// The names at the top of the work tree (without `.git`).
fn top_names(repo: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(repo)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != ".git")
        .collect();
    names.sort();
    names
}

fn assert_no_home_refusal(out: &Output) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(out), 2, "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("no home directory"), "{stderr}");
    assert!(
        stderr.contains("--run-dir") && stderr.contains("--config"),
        "{stderr}"
    );
}

#[test]
fn without_a_home_a_run_is_refused_unless_the_command_line_names_both_places() {
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let script = one_round(tmp.path());

    let out = homeless(repo.path(), &script, &[]).output().unwrap();
    assert_no_home_refusal(&out);
    let run_dir = tmp.path().join("run");
    let out = homeless(
        repo.path(),
        &script,
        &["--run-dir", run_dir.to_str().unwrap()],
    )
    .output()
    .unwrap();
    assert_no_home_refusal(&out);
    assert_eq!(top_names(repo.path()), ["README.md"], "nothing was written");
    // `runs` and `show` have no data directory to read either.
    let out = Command::new(BIN)
        .current_dir(repo.path())
        .env("HOME", ".")
        .arg("runs")
        .output()
        .unwrap();
    assert_no_home_refusal(&out);

    // Both named: the run goes on, its log where --run-dir says, its config from --config.
    let config = tmp.path().join("conf").join("ralph.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, "max_rounds = 3\n").unwrap();
    let out = homeless(
        repo.path(),
        &script,
        &[
            "--run-dir",
            run_dir.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
        ],
    )
    .output()
    .unwrap();
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let events = events(&out.stdout);
    assert_eq!(of_type(&events, "run_started")[0]["max_rounds"], 3);
    assert!(run_dir.join("events.jsonl").is_file());
    assert_eq!(top_names(repo.path()), ["README.md", "made.txt"]);
}

/// With a home directory, a run given `--run-dir` and `--config` writes nothing under it:
/// its lock's holder file goes beside the run directory (no runtime directory here), and is
/// gone at the end.
#[test]
fn with_run_dir_and_config_nothing_is_written_under_home() {
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let config = tmp.path().join("ralph.toml");
    std::fs::write(&config, "max_rounds = 2\n").unwrap();
    let run_dir = tmp.path().join("runs").join("one");
    let script = one_round(tmp.path());
    let out = Command::new(BIN)
        .current_dir(repo.path())
        .env("HOME", &home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("RALPH_LOG")
        .args(["--headless", "--backend"])
        .arg(format!("script:{}", script.display()))
        .arg("--run-dir")
        .arg(&run_dir)
        .arg("--config")
        .arg(&config)
        .arg("no home writes")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(run_dir.join("events.jsonl").is_file());
    let written: Vec<_> = std::fs::read_dir(&home).unwrap().collect();
    assert!(written.is_empty(), "written under HOME: {written:?}");
    let holders = tmp.path().join("runs").join("locks");
    let left: Vec<_> = std::fs::read_dir(&holders).unwrap().collect();
    assert!(
        left.is_empty(),
        "the holder file is removed at the end: {left:?}"
    );
}

/// A uid with no passwd entry and no HOME at all (root only: the test switches to it).
#[test]
fn a_user_without_a_passwd_entry_is_refused_too() {
    if !nix::unistd::Uid::effective().is_root() {
        eprintln!("skipped: switching to a uid without a passwd entry needs root");
        return;
    }
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let script = one_round(tmp.path());
    let mut cmd = homeless(repo.path(), &script, &[]);
    cmd.env_remove("HOME");
    cmd.current_dir("/");
    cmd.uid(54_321).gid(54_321);
    let out = cmd.output().unwrap();
    assert_no_home_refusal(&out);
    assert!(!Path::new("/.ralph-tui").exists());
}

/// A run directory inside the work tree is refused at the start; one moved there later (or
/// written there by the worker, who could then have set `"sandbox": "off"` in its run.json
/// and forged events) is never resumed.
#[test]
fn a_run_dir_inside_the_workspace_is_refused_and_never_resumed() {
    let repo = TempRepo::new();
    let home = tempfile::tempdir().unwrap();
    let script = script(home.path(), vec![json!({"fail": "simulated failure"})]);
    let run = |run_dir: &Path| {
        let mut cmd = Command::new(BIN);
        isolate(&mut cmd, home.path());
        cmd.args(["--headless", "-C"])
            .arg(repo.path())
            .arg("--run-dir")
            .arg(run_dir)
            .arg("--backend")
            .arg(format!("script:{}", script.display()))
            .arg("fails once")
            .output()
            .unwrap()
    };
    let inside = repo.path().join("logs").join("run");
    let out = run(&inside);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 2, "{stderr}");
    assert!(stderr.contains("inside the work tree"), "{stderr}");
    assert!(!repo.path().join("logs").exists(), "nothing written");

    let outside = home.path().join("run");
    let out = run(&outside);
    assert_eq!(code(&out), 5, "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::create_dir_all(inside.parent().unwrap()).unwrap();
    std::fs::rename(&outside, &inside).unwrap();

    let mut cmd = Command::new(BIN);
    isolate(&mut cmd, home.path());
    let out = cmd
        .args(["--headless", "--resume"])
        .arg(&inside)
        .arg("--run-dir")
        .arg(home.path().join("resumed"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 2, "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("inside the work tree"), "{stderr}");
    assert!(!home.path().join("resumed").exists());
}
