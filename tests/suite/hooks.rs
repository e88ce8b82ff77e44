//! `[hooks]` in config.toml: each hook gets its event's JSON line on stdin, runs in the
//! workspace under the run's sandbox unless it opts out, and a failing or hanging one only
//! warns; the run's outcome and exit code stay what they were.

use std::path::Path;

use serde_json::Value;

use super::common::*;

fn hooked_run(home: &Path, repo: &Path, hooks: &str) -> (std::process::Output, Vec<Value>) {
    hooked_run_with(home, repo, hooks, &[])
}

/// [`hooked_run`] with extra variables in ralph-tui's environment.
fn hooked_run_with(
    home: &Path,
    repo: &Path,
    hooks: &str,
    env: &[(&str, &str)],
) -> (std::process::Output, Vec<Value>) {
    let config = home.join("config").join("ralph-tui");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.toml"), format!("[hooks]\n{hooks}")).unwrap();
    let script = script(
        home,
        vec![
            turns(&[continue_report("first round")]),
            turns(&[complete_report("all done")]),
        ],
    );
    let run_dir = home.join("run");
    let out = headless(
        repo,
        &run_dir,
        &[
            "--backend",
            &format!("script:{}", script.display()),
            "hook me",
        ],
    )
    .envs(env.iter().copied())
    .output()
    .unwrap();
    let events = events(&out.stdout);
    (out, events)
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn hooks_receive_their_events_json_on_stdin() {
    let repo = TempRepo::new();
    let home = tempfile::tempdir().unwrap();
    let seen = home.path().join("seen");
    let hooks = format!(
        "on_round_end = {{ command = \"cat >> {0}/rounds.jsonl\", sandbox = \"off\" }}\non_finish = {{ command = \"cat > {0}/finish.json; echo $RALPH_TUI_HOOK >> {0}/names\", sandbox = \"off\" }}\n",
        seen.display()
    );
    std::fs::create_dir_all(&seen).unwrap();
    let (out, events) = hooked_run(home.path(), repo.path(), &hooks);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));

    let rounds = lines(&seen.join("rounds.jsonl"));
    let logged = of_type(&events, "round_finished");
    assert_eq!(rounds.len(), 2);
    assert_eq!(rounds.iter().collect::<Vec<_>>(), logged);
    let finish = lines(&seen.join("finish.json"));
    assert_eq!(&finish[0], last(&events));
    assert_eq!(finish[0]["type"], "run_finished");
    assert_eq!(finish[0]["status"], "complete");
    assert_eq!(
        std::fs::read_to_string(seen.join("names")).unwrap(),
        "on_finish\n"
    );
    assert!(of_type(&events, "warning").is_empty());
}

#[test]
fn a_failing_or_hanging_hook_only_warns() {
    let repo = TempRepo::new();
    let home = tempfile::tempdir().unwrap();
    let hooks =
        "on_round_end = \"echo nope >&2; exit 3\"\non_finish = \"sleep 600\"\ntimeout_s = 1\n";
    let (out, events) = hooked_run(home.path(), repo.path(), hooks);
    assert_eq!(code(&out), 0, "the outcome is the run's own");
    assert_eq!(last(&events)["type"], "run_finished");
    assert_eq!(last(&events)["status"], "complete");
    // A warning before the run's end is also an event; one after it is on stderr only, so
    // `run_finished` stays the last event. Every one is on stderr.
    for warning in of_type(&events, "warning") {
        let message = warning["message"].as_str().unwrap();
        assert!(message.starts_with("hook on_round_end"), "{message}");
        assert!(message.contains("exit code 3"), "{message}");
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let failed = stderr
        .lines()
        .filter(|l| l.starts_with("ralph-tui: warning: hook on_round_end (echo nope >&2; exit 3) failed with exit code 3"))
        .count();
    assert_eq!(failed, 2, "{stderr}");
    assert!(
        stderr.contains("warning: hook on_finish (sleep 600) ran past 1 s and was stopped"),
        "{stderr}"
    );
    let log = std::fs::read_to_string(home.path().join("run").join("hooks.log")).unwrap();
    assert_eq!(log, "nope\nnope\n");
}

#[test]
fn an_unknown_hook_is_a_config_error() {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join("config.toml");
    std::fs::write(&path, "seed = 1\n[hooks]\non_start = \"x\"\n").unwrap();
    let err = ralph_tui::config::load_config(&path, true)
        .unwrap_err()
        .to_string();
    assert!(err.contains("line 3") && err.contains("on_start"), "{err}");
}

#[test]
fn hooks_run_in_the_sandbox_unless_they_opt_out() {
    let support = ralph_tui::tools::sandbox::probe_with(Path::new(BIN));
    if support
        .check(
            ralph_tui::protocol::policy::SandboxMode::WorkspaceWrite,
            false,
        )
        .is_err()
    {
        return;
    }
    let repo = TempRepo::new();
    let home = tempfile::tempdir().unwrap();
    let outside = home.path().join("outside.txt");
    let opted_out = home.path().join("opted-out.txt");
    let nonce = format!("{}-{}", std::process::id(), line!());
    // What the worker wrote and the person's `cargo test`-like hook runs.
    repo.write(
        "check.sh",
        &format!(
            "echo x > {outside}; echo outside=$?\n\
             echo planted > .git/hooks/pre-commit; echo hook=$?\n\
             m=hookmark; setsid sh -c \"sleep 300; : $m-{nonce}\" >/dev/null 2>&1 &\n",
            outside = outside.display()
        ),
    );
    let hooks = format!(
        "on_round_end = \"sh check.sh\"\non_finish = {{ command = \"echo off token=$CHAT_TOKEN key=$OPENAI_API_KEY > {}\", sandbox = \"off\" }}\n",
        opted_out.display()
    );
    let env = [
        ("CHAT_TOKEN", "chat-token-value"),
        ("OPENAI_API_KEY", "sk-hook-test-key"),
    ];
    let (out, _events) = hooked_run_with(home.path(), repo.path(), &hooks, &env);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let log = std::fs::read_to_string(home.path().join("run").join("hooks.log")).unwrap();
    assert!(
        log.contains("outside=") && !log.contains("outside=0"),
        "{log}"
    );
    assert!(log.contains("hook=") && !log.contains("hook=0"), "{log}");
    assert!(!outside.exists());
    assert!(!repo.path().join(".git/hooks/pre-commit").exists());
    // Unconfined, the person's own hook keeps its token but never gets the model's key.
    assert_eq!(
        std::fs::read_to_string(&opted_out).unwrap(),
        "off token=chat-token-value key=\n"
    );
    // Whatever a hook leaves running is killed when it ends.
    let needle = format!("hookmark-{nonce}");
    let alive: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).into_owned())
        .filter(|c| c.contains(&needle))
        .collect();
    assert!(alive.is_empty(), "{alive:?}");
}
