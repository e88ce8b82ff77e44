//! The real binary in a real terminal: tmux on a private socket, the script backend, keys
//! sent with `send-keys`, the screen read with `capture-pane`. Every wait polls the screen
//! (or a file) against a generous deadline; nothing asserts on a sleep.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

use super::common::*;

const DEADLINE: Duration = Duration::from_secs(90);

/// A tmux server of our own, killed when dropped.
struct Tmux {
    socket: String,
}

impl Tmux {
    /// Starts `script` (a shell script file) in a new 100×30 session.
    fn start(script: &Path) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let me = Self {
            socket: format!("ralph-e2e-{}-{nanos}", std::process::id()),
        };
        let status = me
            .cmd()
            .args([
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-s",
                "e2e",
                "-x",
                "100",
                "-y",
                "30",
            ])
            .arg(format!("sh {}", script.display()))
            .status()
            .unwrap();
        assert!(status.success(), "tmux new-session failed");
        me
    }

    fn cmd(&self) -> Command {
        let mut cmd = Command::new("tmux");
        cmd.args(["-L", &self.socket]);
        cmd
    }

    fn screen(&self) -> String {
        let out = self
            .cmd()
            .args(["capture-pane", "-p", "-t", "e2e"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn format(&self, format: &str) -> String {
        let out = self
            .cmd()
            .args(["display-message", "-p", "-t", "e2e", format])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    fn keys(&self, keys: &[&str]) {
        let status = self
            .cmd()
            .args(["send-keys", "-t", "e2e"])
            .args(keys)
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Polls the screen until `pred` holds; panics with the last screen at the deadline.
    fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if pred(&screen) {
                return screen;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "timed out waiting for {what}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").status();
    }
}

/// Polls for a file's content; panics at the deadline.
fn wait_for_file(path: &Path, tmux: &Tmux) -> String {
    let start = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            if text.ends_with('\n') {
                return text;
            }
        }
        assert!(
            start.elapsed() < DEADLINE,
            "timed out waiting for {}; the screen:\n{}",
            path.display(),
            tmux.screen()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn quoted(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', "'\\''"))
}

/// A shell script that runs ralph-tui isolated, records its exit code and the terminal
/// mode afterwards, prints a marker and waits.
struct Launch {
    tmp: tempfile::TempDir,
    run_dir: PathBuf,
}

impl Launch {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let run_dir = tmp.path().join("run");
        Self { tmp, run_dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }

    fn script(&self, repo: &Path, script: &Path, args: &[&str]) -> PathBuf {
        let home = self.tmp.path();
        // `--resume` takes the workspace and the run directory from the run it resumes.
        let (workspace, run) = if args.contains(&"--resume") {
            (String::new(), String::new())
        } else {
            (
                format!("-C {}", quoted(repo)),
                format!("--run-dir {}", quoted(&self.run_dir)),
            )
        };
        let args: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
        let text = format!(
            "export HOME={home} XDG_CONFIG_HOME={home}/config XDG_DATA_HOME={home}/data XDG_CACHE_HOME={home}/cache\n\
             unset RALPH_LOG NO_COLOR\n\
             {bin} {workspace} {run} --backend script:{script} {args}\n\
             echo EXIT=$? > {exit}.tmp && mv {exit}.tmp {exit}\n\
             stty -a > {stty}.tmp 2>&1; mv {stty}.tmp {stty}\n\
             echo AFTER-THE-TUI\n\
             sleep 600\n",
            home = quoted(home),
            bin = quoted(Path::new(BIN)),
            script = quoted(script),
            args = args.join(" "),
            exit = quoted(&self.path("exit")),
            stty = quoted(&self.path("stty")),
        );
        let path = self.path("launch.sh");
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Writes the worker's script (`delay_ms` between tokens) and the launch script for
    /// `args`, and starts it in a fresh tmux.
    fn start(
        &self,
        repo: &Path,
        rounds: Vec<serde_json::Value>,
        delay_ms: u64,
        args: &[&str],
    ) -> Tmux {
        let script = script_with_delay(self.tmp.path(), rounds, delay_ms);
        Tmux::start(&self.script(repo, &script, args))
    }

    /// The exit code and the terminal is restored: alternate screen left, cursor shown,
    /// mouse reporting off, canonical mode and echo back on, the shell's output visible.
    fn assert_restored(&self, tmux: &Tmux, code: i32) {
        let exit = wait_for_file(&self.path("exit"), tmux);
        assert_eq!(exit.trim(), format!("EXIT={code}"), "{}", tmux.screen());
        let screen = tmux.wait_for("the shell after the TUI", |s| s.contains("AFTER-THE-TUI"));
        assert!(
            !screen.contains("Round "),
            "TUI leftovers on the screen:\n{screen}"
        );
        assert_eq!(
            tmux.format("#{alternate_on}"),
            "0",
            "still on the alternate screen"
        );
        assert_eq!(tmux.format("#{cursor_flag}"), "1", "cursor hidden");
        assert_eq!(
            tmux.format("#{mouse_any_flag}"),
            "0",
            "mouse reporting left on"
        );
        let stty = wait_for_file(&self.path("stty"), tmux);
        let flags: Vec<&str> = stty.split_whitespace().collect();
        assert!(flags.contains(&"icanon"), "raw mode left on: {stty}");
        assert!(flags.contains(&"echo"), "echo left off: {stty}");
    }
}

/// Rounds that stream slowly: each a long turn, then a `continue` report.
fn slow_rounds(n: usize) -> Vec<serde_json::Value> {
    let words = "thinking about the objective step by step ".repeat(40);
    (1..=n)
        .map(|i| {
            turns(&[format!(
                "{words}\n{}",
                continue_report(&format!("round {i} looked around"))
            )])
        })
        .collect()
}

#[test]
fn rounds_advance_esc_cancels_exit_130_and_the_terminal_is_restored() {
    let repo = TempRepo::new();
    let launch = Launch::new();
    // Slow enough that, on a loaded machine, the rounds do not all end before the steps
    // below (a resize and its redraw) are through and Esc is sent.
    let tmux = launch.start(
        repo.path(),
        slow_rounds(8),
        30,
        &["-n", "8", "watch the rounds go by"],
    );

    let screen = tmux.wait_for("round 2", |s| s.contains("Round 2/8"));
    assert!(
        screen.contains("watch the rounds go by"),
        "objective shown:\n{screen}"
    );
    assert_eq!(
        tmux.format("#{alternate_on}"),
        "1",
        "the TUI uses the alternate screen"
    );

    // A resize mid-stream redraws at the new size.
    let status = tmux
        .cmd()
        .args(["resize-window", "-t", "e2e", "-x", "80", "-y", "24"])
        .status()
        .unwrap();
    assert!(status.success());
    let small = tmux.wait_for("the redraw at 80x24", |s| {
        s.lines().count() <= 24
            && s.lines()
                .any(|l| l.starts_with('┗') && l.chars().count() <= 80)
    });
    assert!(small.contains("Esc cancel"), "{small}");

    tmux.keys(&["Escape"]);
    tmux.wait_for("the cancel question", |s| s.contains("Cancel this run?"));
    tmux.keys(&["y"]);
    let review = tmux.wait_for("the review", |s| s.contains("cancelled after"));
    assert!(review.contains("the run was cancelled"), "{review}");
    tmux.keys(&["q"]);
    launch.assert_restored(&tmux, 130);

    let events = std::fs::read_to_string(launch.run_dir.join("events.jsonl")).unwrap();
    let last: serde_json::Value = serde_json::from_str(events.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "run_finished");
    assert_eq!(last["status"], "cancelled");
}

#[test]
fn editor_starts_a_run_and_a_double_ctrl_c_cancels_at_once() {
    let repo = TempRepo::new();
    let launch = Launch::new();
    let tmux = launch.start(repo.path(), slow_rounds(8), 8, &[]);

    tmux.wait_for("the objective editor", |s| s.contains("new run in"));
    tmux.keys(&["-l", "typed in the editor"]);
    tmux.wait_for("the typed objective", |s| s.contains("typed in the editor"));
    tmux.keys(&["C-s"]);
    tmux.wait_for("round 1", |s| s.contains("Round 1/8"));
    tmux.keys(&["C-c"]);
    tmux.wait_for("the cancel question", |s| s.contains("Cancel this run?"));
    tmux.keys(&["C-c"]);
    tmux.wait_for("the review", |s| s.contains("cancelled after"));
    tmux.keys(&["q"]);
    launch.assert_restored(&tmux, 130);
}

#[test]
fn quitting_the_objective_editor_exits_130() {
    let repo = TempRepo::new();
    let launch = Launch::new();
    let tmux = launch.start(repo.path(), slow_rounds(1), 0, &[]);
    tmux.wait_for("the objective editor", |s| s.contains("new run in"));
    tmux.keys(&["Escape"]);
    launch.assert_restored(&tmux, 130);
    assert!(
        !launch.run_dir.exists(),
        "no run was started, yet its directory is left"
    );
}

#[test]
fn esc_over_a_typed_objective_asks_first_and_a_worktree_run_never_started_leaves_nothing() {
    let repo = TempRepo::new();
    let launch = Launch::new();
    let tmux = launch.start(repo.path(), slow_rounds(1), 0, &["--worktree"]);
    tmux.wait_for("the objective editor", |s| s.contains("new run in"));
    tmux.keys(&["-l", "half an objective"]);
    tmux.wait_for("the typed objective", |s| s.contains("half an objective"));
    tmux.keys(&["Escape"]);
    let asked = tmux.wait_for("the question", |s| s.contains("Esc again quits"));
    assert!(
        asked.contains("half an objective"),
        "the text stays:\n{asked}"
    );
    // Any other key takes the first Esc back.
    tmux.keys(&["-l", "!"]);
    tmux.wait_for("the question gone", |s| {
        s.contains("half an objective!") && !s.contains("Esc again quits")
    });
    tmux.keys(&["Escape"]);
    tmux.wait_for("the question again", |s| s.contains("Esc again quits"));
    tmux.keys(&["Escape"]);
    launch.assert_restored(&tmux, 130);
    assert!(!launch.run_dir.exists(), "no run was started");
    let r = git2::Repository::open(repo.path()).unwrap();
    let branches: Vec<String> = r
        .branches(None)
        .unwrap()
        .map(|b| b.unwrap().0.name().unwrap().unwrap().to_string())
        .collect();
    assert!(
        !branches.iter().any(|b| b.starts_with("ralph/")),
        "{branches:?}"
    );
    assert!(r.worktrees().unwrap().is_empty());
}

#[test]
fn a_worktree_runs_reverted_round_stays_out_of_apply_and_x_x_leaves_only_quit() {
    let repo = TempRepo::new();
    let launch = Launch::new();
    let rounds = vec![
        turns(&[
            write_file_call("one.txt", "round one\n"),
            continue_report("round one: one.txt"),
        ]),
        turns(&[
            write_file_call("two.txt", "round two\n"),
            write_file_call("notes.txt", "notes\n"),
            complete_report("round two: two files"),
        ]),
    ];
    let tmux = launch.start(repo.path(), rounds, 0, &["--worktree", "three files"]);
    tmux.wait_for("the review", |s| {
        s.contains("complete after") && s.contains("Changes (3)")
    });
    tmux.keys(&["u"]);
    tmux.wait_for("the revert question", |s| s.contains("Revert a round"));
    tmux.keys(&["y"]);
    tmux.wait_for("round 2 reverted", |s| s.contains("Round 2 reverted"));
    tmux.keys(&["Escape"]);
    tmux.wait_for("the review after the revert", |s| s.contains("Changes (1)"));
    tmux.keys(&["A"]);
    tmux.wait_for("the apply", |s| s.contains("applied 1 file "));
    assert_eq!(repo.read("one.txt"), "round one\n");
    assert!(
        !repo.path().join("two.txt").exists(),
        "the reverted round came back"
    );
    assert!(
        !repo.path().join("notes.txt").exists(),
        "the reverted round came back"
    );
    // X X removes the worktree and branch; then only quitting is offered.
    tmux.keys(&["X"]);
    tmux.wait_for("the first X", |s| s.contains("X again removes"));
    tmux.keys(&["X"]);
    tmux.wait_for("the removal", |s| {
        s.contains("removed the worktree and the branch")
    });
    tmux.keys(&["c"]);
    let screen = tmux.wait_for("c refused", |s| s.contains("nothing of the run is left"));
    assert!(!screen.contains("class="), "{screen}");
    tmux.keys(&["j"]);
    tmux.wait_for("the hint", |s| {
        s.contains("worktree and branch removed · q quit")
    });
    tmux.keys(&["q"]);
    launch.assert_restored(&tmux, 0);
}

#[test]
fn review_of_a_worktree_run_applies_its_changes_to_the_persons_work_tree() {
    let repo = TempRepo::new();
    repo.write("untouched.txt", "the person's own edit\n");
    let launch = Launch::new();
    let rounds = vec![turns(&[
        write_file_call("hello.txt", "hello from the run\n"),
        complete_report("wrote hello.txt"),
    ])];
    let tmux = launch.start(repo.path(), rounds, 0, &["--worktree", "write hello.txt"]);

    let review = tmux.wait_for("the review of a worktree run", |s| {
        s.contains("complete after") && s.contains("hello.txt") && s.contains("A apply")
    });
    assert!(
        review.contains("ralph/"),
        "the header names the branch:\n{review}"
    );
    assert!(
        !repo.path().join("hello.txt").exists(),
        "the run wrote the checkout"
    );
    tmux.keys(&["A"]);
    tmux.wait_for("the apply", |s| s.contains("applied 1 file "));
    assert_eq!(repo.read("hello.txt"), "hello from the run\n");
    assert_eq!(repo.read("untouched.txt"), "the person's own edit\n");
    tmux.keys(&["q"]);
    launch.assert_restored(&tmux, 0);
    // Applied, not committed: HEAD is where it was and the branch is kept.
    let git = git2::Repository::open(repo.path()).unwrap();
    let head = git.head().unwrap().peel_to_commit().unwrap();
    assert_eq!(head.message(), Some("initial"));
    let branches: Vec<String> = git
        .branches(Some(git2::BranchType::Local))
        .unwrap()
        .map(|b| b.unwrap().0.name().unwrap().unwrap().to_string())
        .collect();
    assert!(
        branches.iter().any(|b| b.starts_with("ralph/")),
        "{branches:?}"
    );
}

#[test]
fn review_of_a_worktree_run_commits_on_the_persons_branch_and_removes_the_worktree() {
    let repo = TempRepo::new();
    repo.write("untouched.txt", "the person's own edit\n");
    let launch = Launch::new();
    let rounds = vec![turns(&[
        write_file_call("hello.txt", "hello from the run\n"),
        complete_report("wrote hello.txt"),
    ])];
    let tmux = launch.start(repo.path(), rounds, 0, &["--worktree", "write hello.txt"]);

    tmux.wait_for("the review of a worktree run", |s| {
        s.contains("complete after") && s.contains("A apply")
    });
    tmux.keys(&["c"]);
    tmux.wait_for("the commit editor", |s| {
        s.contains("Commit the run's changes")
    });
    tmux.keys(&["C-s"]);
    tmux.wait_for("the commit", |s| s.contains(" committed "));
    tmux.keys(&["q"]);
    launch.assert_restored(&tmux, 0);

    let git = git2::Repository::open(repo.path()).unwrap();
    let head = git.head().unwrap().peel_to_commit().unwrap();
    assert!(head.message().unwrap().starts_with("wrote hello.txt"));
    let tree = head.tree().unwrap();
    assert!(tree.get_name("hello.txt").is_some());
    assert!(tree.get_name("untouched.txt").is_none(), "swept in");
    assert_eq!(repo.read("hello.txt"), "hello from the run\n");
    let branches = git.branches(Some(git2::BranchType::Local)).unwrap().count();
    assert_eq!(branches, 1, "the run's branch is left");
    assert_eq!(git.worktrees().unwrap().len(), 0);
}

#[test]
fn review_commits_exactly_the_runs_changes() {
    let repo = TempRepo::new();
    repo.write("untouched.txt", "the person's own edit\n");
    let launch = Launch::new();
    let rounds = vec![turns(&[
        write_file_call("hello.txt", "hello from the run\n"),
        complete_report("wrote hello.txt"),
    ])];
    let tmux = launch.start(repo.path(), rounds, 0, &["write hello.txt"]);

    let review = tmux.wait_for("the review with its diff", |s| {
        s.contains("complete after") && s.contains("hello.txt")
    });
    assert!(review.contains("not independently verified"), "{review}");
    tmux.keys(&["c"]);
    tmux.wait_for("the commit editor", |s| {
        s.contains("Commit the run's changes")
    });
    tmux.keys(&["C-s"]);
    // " committed " with its leading space, and the hint gone: "leave uncommitted · " is on
    // screen from the start and must not count as the commit having happened.
    tmux.wait_for("the commit", |s| {
        s.contains(" committed ") && !s.contains("leave uncommitted")
    });
    tmux.keys(&["q"]);
    launch.assert_restored(&tmux, 0);

    let git = git2::Repository::open(repo.path()).unwrap();
    let head = git.head().unwrap().peel_to_commit().unwrap();
    assert!(
        head.message().unwrap().starts_with("wrote hello.txt"),
        "{:?}",
        head.message()
    );
    let tree = head.tree().unwrap();
    assert!(
        tree.get_name("hello.txt").is_some(),
        "the run's file is committed"
    );
    assert!(
        tree.get_name("untouched.txt").is_none(),
        "the person's own edit is not swept in"
    );
}

#[test]
fn review_reverts_a_round_then_commits_only_the_chosen_files() {
    let repo = TempRepo::new();
    let launch = Launch::new();
    let rounds = vec![
        turns(&[
            write_file_call("keep.txt", "kept, not committed\n"),
            write_file_call("one.txt", "round one\n"),
            continue_report("wrote keep.txt and one.txt"),
        ]),
        turns(&[
            write_file_call("two.txt", "round two\n"),
            complete_report("wrote two.txt"),
        ]),
    ];
    let tmux = launch.start(repo.path(), rounds, 0, &["write three files"]);

    tmux.wait_for("the review with its diff", |s| {
        s.contains("complete after")
            && s.contains("two.txt")
            && s.contains("Changes (3) · 3 chosen")
    });
    tmux.keys(&["u"]);
    tmux.wait_for("the revert question", |s| s.contains("› round 2: two.txt"));
    tmux.keys(&["Enter"]);
    tmux.wait_for("the revert", |s| s.contains("Round 2 reverted"));
    assert!(!repo.path().join("two.txt").exists(), "round 2 is undone");
    tmux.keys(&["Escape"]);
    tmux.wait_for("the diff read again", |s| {
        s.contains("Changes (2) · 2 chosen")
    });
    // keep.txt is listed first: leave it out.
    tmux.keys(&["Space"]);
    tmux.wait_for("the choice", |s| s.contains("[ ] A keep.txt"));
    tmux.keys(&["c"]);
    tmux.wait_for("the commit editor", |s| s.contains("only the 1 chosen"));
    tmux.keys(&["C-s"]);
    tmux.wait_for("the commit", |s| s.contains(" committed "));
    tmux.keys(&["q"]);
    launch.assert_restored(&tmux, 0);

    let git = git2::Repository::open(repo.path()).unwrap();
    let tree = git.head().unwrap().peel_to_tree().unwrap();
    assert!(
        tree.get_name("one.txt").is_some(),
        "the chosen file is committed"
    );
    assert!(
        tree.get_name("keep.txt").is_none(),
        "the file left out is not"
    );
    assert!(
        tree.get_name("two.txt").is_none(),
        "the reverted round is not"
    );
    assert_eq!(repo.read("keep.txt"), "kept, not committed\n");
}

#[test]
fn review_discards_the_runs_changes_after_listing_them() {
    let repo = TempRepo::new();
    repo.write("tracked.txt", "before the run\n");
    repo.commit_all("tracked");
    let launch = Launch::new();
    let rounds = vec![turns(&[
        write_file_call("tracked.txt", "changed by the run\n"),
        write_file_call("added.txt", "added by the run\n"),
        complete_report("changed and added"),
    ])];
    let tmux = launch.start(repo.path(), rounds, 0, &["change things"]);

    tmux.wait_for("the review with its diff", |s| {
        s.contains("complete after") && s.contains("added.txt")
    });
    tmux.keys(&["d"]);
    tmux.wait_for("the list of what is lost", |s| {
        s.contains("Discard the run's changes? (2 files)")
            && s.contains("A added.txt")
            && s.contains("M tracked.txt")
    });
    tmux.keys(&["y"]);
    tmux.wait_for("the discard", |s| s.contains("discarded the run's changes"));
    tmux.keys(&["q"]);
    launch.assert_restored(&tmux, 0);
    assert_eq!(repo.read("tracked.txt"), "before the run\n");
    assert!(!repo.path().join("added.txt").exists());
}

#[test]
fn approval_ask_shows_the_command_and_runs_it_once_approved() {
    let repo = TempRepo::new();
    let launch = Launch::new();
    let rounds = vec![turns(&[
        call(
            "run_command",
            json!({"command": "echo approved-and-ran > ran.txt"}),
        ),
        complete_report("ran the command"),
    ])];
    let tmux = launch.start(
        repo.path(),
        rounds,
        0,
        &["--approval", "ask", "run one command"],
    );

    let modal = tmux.wait_for("the approval question", |s| s.contains("Approval needed"));
    assert!(modal.contains("echo approved-and-ran"), "{modal}");
    assert!(
        !repo.path().join("ran.txt").exists(),
        "nothing runs before the answer"
    );
    tmux.keys(&["y"]);
    tmux.wait_for("the review", |s| s.contains("complete after"));
    assert_eq!(repo.read("ran.txt").trim(), "approved-and-ran");
    tmux.keys(&["q"]);
    launch.assert_restored(&tmux, 0);
}

#[test]
fn files_changed_show_live_while_the_round_runs() {
    let repo = TempRepo::new();
    let launch = Launch::new();
    let slow = "still working on it ".repeat(150);
    let rounds = vec![turns(&[
        write_file_call("live.txt", "written early\n"),
        format!("{slow}\n{}", complete_report("wrote live.txt")),
    ])];
    let tmux = launch.start(repo.path(), rounds, 10, &["write live.txt"]);

    // Before the round ends (its report is seconds of tokens away), the watcher's list shows.
    let screen = tmux.wait_for("the live change", |s| {
        s.contains("Round 1 · live · 1 file") && s.contains("A live.txt")
    });
    assert!(!screen.contains("complete after"), "{screen}");
    tmux.keys(&["Escape"]);
    tmux.wait_for("the cancel question", |s| s.contains("Cancel this run?"));
    tmux.keys(&["y"]);
    tmux.wait_for("the review", |s| s.contains("cancelled after"));
    tmux.keys(&["q"]);
    launch.assert_restored(&tmux, 130);
}

/// Under the TUI, a command inherits no descriptor of ralph-tui's: not the terminal (which
/// it could write escape sequences to, read keys from, or push keys into), only 0, 1 and 2.
#[test]
fn a_command_under_the_tui_holds_no_terminal_descriptor() {
    let repo = TempRepo::new();
    let launch = Launch::new();
    let rounds = vec![turns(&[
        call("run_command", json!({ "command": LIST_FDS })),
        complete_report("listed the descriptors"),
    ])];
    let mut args = vec!["list descriptors"];
    let support = ralph_tui::tools::sandbox::probe_with(Path::new(BIN));
    if support
        .check(
            ralph_tui::protocol::policy::SandboxMode::WorkspaceWrite,
            false,
        )
        .is_err()
    {
        args.splice(0..0, ["--sandbox", "off"]);
    }
    let tmux = launch.start(repo.path(), rounds, 0, &args);
    tmux.wait_for("the review", |s| s.contains("complete after"));
    tmux.keys(&["q"]);
    launch.assert_restored(&tmux, 0);
    let log = std::fs::read_to_string(launch.run_dir.join("events.jsonl")).unwrap();
    let output = log
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["type"] == "tool_result")
        .and_then(|e| e["output"].as_str().map(str::to_string))
        .unwrap();
    assert_only_stdio(&output);
}

/// The review lists what the run wrote where git does not look (an ignored `build/`), under
/// its own heading and marked, as the real loader computes it against the run's baseline.
#[test]
fn the_review_lists_a_file_written_into_an_ignored_directory() {
    let repo = TempRepo::new();
    repo.write(".gitignore", "build/\n");
    repo.commit_all("ignore build");
    let launch = Launch::new();
    let rounds = vec![turns(&[
        write_file_call("build/tool.sh", "#!/bin/sh\necho planted\n"),
        write_file_call("seen.txt", "shown\n"),
        complete_report("wrote them"),
    ])];
    let tmux = launch.start(repo.path(), rounds, 0, &["write into build"]);

    let review = tmux.wait_for("the review with the hidden group", |s| {
        s.contains("complete after") && s.contains("not shown by git")
    });
    assert!(review.contains("seen.txt"), "{review}");
    assert!(review.contains("build/tool.sh  ignored"), "{review}");
    tmux.keys(&["q"]);
    launch.assert_restored(&tmux, 0);
}

/// A file name, a report and a command's output that set the terminal's title (OSC 2) and
/// write its clipboard (OSC 52) reach the real terminal as text: the title stays.
#[test]
fn escape_sequences_from_the_worker_never_reach_the_terminal() {
    let repo = TempRepo::new();
    let launch = Launch::new();
    let evil = "\u{1b}]2;PWNED-TITLE\u{7}\u{1b}]52;c;aHVudGVyMg==\u{7}";
    let rounds = vec![turns(&[
        write_file_call(&format!("a{evil}.txt"), &format!("x{evil}\n")),
        call(
            "run_command",
            json!({"command": "printf 'out\\033]2;PWNED-TITLE\\007\\n'"}),
        ),
        complete_report(&format!("wrote a{evil}.txt")),
    ])];
    let tmux = launch.start(repo.path(), rounds, 0, &["--sandbox", "off", "hostile"]);
    let before = tmux.format("#{pane_title}");

    tmux.wait_for("the review", |s| s.contains("complete after"));
    assert_ne!(tmux.format("#{pane_title}"), "PWNED-TITLE");
    assert_eq!(tmux.format("#{pane_title}"), before);
    tmux.keys(&["q"]);
    launch.assert_restored(&tmux, 0);
}

/// `git show --numstat` of HEAD: `(insertions, deletions)` per path.
fn head_numstat(repo: &Path) -> std::collections::BTreeMap<String, (usize, usize)> {
    let out = Command::new("git")
        .args([
            "-C",
            &repo.display().to_string(),
            "show",
            "--numstat",
            "--format=",
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let mut parts = line.split('\t');
            let ins = parts.next()?.parse().ok()?;
            let del = parts.next()?.parse().ok()?;
            Some((parts.next()?.to_string(), (ins, del)))
        })
        .collect()
}

const CALC: &str = "def add(a, b):\n    return a - b\n";

#[test]
fn your_uncommitted_edit_is_named_at_start_marked_in_the_review_and_committed_as_shown() {
    let repo = TempRepo::new();
    repo.write("calc.py", CALC);
    repo.commit_all("calc");
    repo.write("calc.py", &format!("# local edit\n{CALC}"));
    let launch = Launch::new();
    let fixed = "# local edit\ndef add(a, b):\n    \"\"\"Adds.\"\"\"\n    return a + b\n";
    let rounds = vec![turns(&[
        write_file_call("calc.py", fixed),
        write_file_call("hello.txt", "hello\n"),
        complete_report("fixed add"),
    ])];
    let tmux = launch.start(repo.path(), rounds, 0, &["fix add"]);
    // The person's line and the run's: +3 −1 from HEAD, not chosen by default, marked.
    let review = tmux.wait_for("the review", |s| {
        s.contains("complete after") && s.contains("Changes (2) · 1 chosen")
    });
    assert!(review.contains("[ ] M calc.py +3 −1 yours too"), "{review}");
    tmux.keys(&["Space"]);
    tmux.wait_for("the choice", |s| s.contains("[x] M calc.py"));
    tmux.keys(&["c"]);
    tmux.wait_for("the commit editor", |s| {
        s.contains("Commit the run's changes")
    });
    tmux.keys(&["C-s"]);
    let done = tmux.wait_for("the commit", |s| s.contains(" committed "));
    assert!(done.contains("2 files +4 −1"), "{done}");
    tmux.keys(&["q"]);
    launch.assert_restored(&tmux, 0);

    let numstat = head_numstat(repo.path());
    assert_eq!(numstat.get("calc.py"), Some(&(3, 1)), "{numstat:?}");
    assert_eq!(numstat.get("hello.txt"), Some(&(1, 0)), "{numstat:?}");
    let events = std::fs::read_to_string(launch.run_dir.join("events.jsonl")).unwrap();
    assert!(
        events.contains("you have uncommitted changes in calc.py"),
        "named at the start"
    );
}

#[test]
fn a_resumed_run_reviews_and_commits_everything_the_run_did_across_its_starts() {
    let repo = TempRepo::new();
    repo.write("calc.py", CALC);
    repo.commit_all("calc");
    let first = Launch::new();
    let fixed = "def add(a, b):\n    return a + b\n";
    let rounds = vec![turns(&[
        write_file_call("calc.py", fixed),
        write_file_call("NOTES.md", "notes\n"),
        continue_report("fixed add"),
    ])];
    let tmux = first.start(repo.path(), rounds, 0, &["-n", "1", "fix add"]);
    tmux.wait_for("the first review", |s| s.contains("Changes (2)"));
    tmux.keys(&["q"]);
    first.assert_restored(&tmux, 4);
    drop(tmux);

    let second = Launch::new();
    let documented = "def add(a, b):\n    \"\"\"Adds.\"\"\"\n    return a + b\n";
    // The script's rounds count from the run's first: round 1 ran in the first start.
    let rounds = vec![
        turns(&[continue_report("never asked")]),
        turns(&[
            write_file_call("calc.py", documented),
            complete_report("documented add"),
        ]),
    ];
    let run_dir = first.run_dir.display().to_string();
    let tmux = second.start(repo.path(), rounds, 0, &["-n", "2", "--resume", &run_dir]);
    let review = tmux.wait_for("the review of the whole run", |s| {
        s.contains("complete after") && s.contains("Changes (2) · 2 chosen")
    });
    assert!(review.contains("complete after 2 rounds"), "{review}");
    assert!(review.contains("A NOTES.md +1 −0"), "{review}");
    assert!(review.contains("M calc.py +2 −1"), "{review}");
    tmux.keys(&["c"]);
    tmux.wait_for("the commit editor", |s| {
        s.contains("Commit the run's changes")
    });
    tmux.keys(&["C-s"]);
    let done = tmux.wait_for("the commit", |s| s.contains(" committed "));
    assert!(done.contains("2 files +3 −1"), "{done}");
    tmux.keys(&["q"]);
    second.assert_restored(&tmux, 0);
    let numstat = head_numstat(repo.path());
    assert_eq!(numstat.get("calc.py"), Some(&(2, 1)), "{numstat:?}");
    assert_eq!(numstat.get("NOTES.md"), Some(&(1, 0)), "{numstat:?}");
}

/// Round 1 runs a command that waits for the file `go`, so what the person does meanwhile
/// happens while round 1 is still going.
fn waiting_round(go: &Path) -> serde_json::Value {
    let wait = format!("until [ -f {} ]; do sleep 0.05; done", quoted(go));
    turns(&[
        call("run_command", json!({"command": wait, "timeout_s": 120})),
        continue_report("waited for the person"),
    ])
}

fn prompt_text(run_dir: &Path, round: u32) -> String {
    std::fs::read_to_string(run_dir.join(format!("rounds/{round:02}/prompt.json"))).unwrap()
}

#[test]
fn a_note_typed_mid_run_is_given_to_the_next_rounds_prompt() {
    let repo = TempRepo::new();
    let launch = Launch::new();
    let go = launch.path("go");
    // Round 2 streams a while, so its note card is on the screen before the review.
    let reading = format!(
        "{}\n{}",
        "reading the note ".repeat(60),
        continue_report("read it")
    );
    let rounds = vec![waiting_round(&go), turns(&[reading])];
    let args = ["-n", "2", "--sandbox", "off", "steer me"];
    let tmux = launch.start(repo.path(), rounds, 10, &args);
    tmux.wait_for("round 1's command", |s| {
        s.contains("Round 1/2") && s.contains("run_command")
    });
    tmux.keys(&["n"]);
    let editor = tmux.wait_for("the note editor", |s| {
        s.contains("A note to the next round")
    });
    assert!(editor.contains("Given to round 2"), "{editor}");
    tmux.keys(&["C-s"]);
    tmux.wait_for("an empty note refused", |s| s.contains("the note is empty"));
    tmux.keys(&["-l", "look at b.py first"]);
    tmux.wait_for("the typed note", |s| s.contains("look at b.py first"));
    tmux.keys(&["C-s"]);
    tmux.wait_for("the note saved", |s| s.contains("note saved; round 2"));
    std::fs::write(&go, "").unwrap();
    let screen = tmux.wait_for("round 2's note card", |s| s.contains("your note → round 2"));
    assert!(screen.contains("look at b.py first"), "{screen}");
    tmux.wait_for("the review", |s| {
        s.contains("budget-limited after 2 rounds")
    });
    tmux.keys(&["q"]);
    launch.assert_restored(&tmux, 4);
    let second = prompt_text(&launch.run_dir, 2);
    assert!(
        second.contains("A note from the person supervising this run"),
        "{second}"
    );
    assert!(second.contains("look at b.py first"), "{second}");
    assert!(!prompt_text(&launch.run_dir, 1).contains("look at b.py first"));
    let events = std::fs::read_to_string(launch.run_dir.join("events.jsonl")).unwrap();
    let note: serde_json::Value = events
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["type"] == "note")
        .expect("a note event");
    assert_eq!(note["round"], 2);
    assert_eq!(note["source"], "tui");
    assert_eq!(note["text"], "look at b.py first");
}

#[test]
fn a_run_sent_back_from_the_review_runs_a_round_with_the_note_and_is_reviewed_again() {
    let repo = TempRepo::new();
    let launch = Launch::new();
    let rounds = vec![
        turns(&[
            write_file_call("a.txt", "one\n"),
            complete_report("wrote a.txt"),
        ]),
        turns(&[
            write_file_call("b.txt", "two\n"),
            complete_report("wrote b.txt as the note asked"),
        ]),
    ];
    let tmux = launch.start(repo.path(), rounds, 0, &["-n", "1", "write the files"]);
    tmux.wait_for("the review", |s| s.contains("complete after 1 round:"));
    tmux.keys(&["b"]);
    let editor = tmux.wait_for("the send-back editor", |s| {
        s.contains("Send the run back to work")
    });
    assert!(editor.contains("Rounds added: 3 (cap 1 → 4"), "{editor}");
    tmux.keys(&["PageUp"]);
    tmux.wait_for("one more round", |s| {
        s.contains("Rounds added: 4 (cap 1 → 5")
    });
    tmux.keys(&["-l", "b.txt is missing: write it"]);
    tmux.wait_for("the typed note", |s| s.contains("b.txt is missing"));
    tmux.keys(&["C-s"]);
    let review = tmux.wait_for("the review again", |s| {
        s.contains("complete after 2 rounds") && s.contains("Changes (2)")
    });
    assert!(review.contains("wrote b.txt as the note asked"), "{review}");
    tmux.keys(&["q"]);
    launch.assert_restored(&tmux, 0);

    // The run went on in its own directory: round 2 beside round 1, the first part's
    // run.json kept in `parts`.
    let second = prompt_text(&launch.run_dir, 2);
    assert!(second.contains("b.txt is missing: write it"), "{second}");
    assert!(launch.run_dir.join("rounds/01/report.json").is_file());
    let info: serde_json::Value =
        serde_json::from_slice(&std::fs::read(launch.run_dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(info["max_rounds"], 5);
    assert_eq!(info["parts"][0]["max_rounds"], 1);
    assert_eq!(info["parts"][0]["status"], "complete");
    assert_eq!(info["parts"][0]["run_id"], info["run_id"]);
    let reviewed = std::fs::read_to_string(launch.run_dir.join("review.jsonl")).unwrap();
    assert!(reviewed.contains(r#""action":"sent back""#), "{reviewed}");
    assert!(reviewed.contains("complete"), "{reviewed}");
    let mut show = Command::new(BIN);
    isolate(&mut show, launch.tmp.path());
    let shown = show.arg("show").arg(&launch.run_dir).output().unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains("review: sent back the worker's claim (complete"),
        "{shown}"
    );
}

#[test]
fn a_run_stalls_after_three_rounds_without_change_and_goes_on_with_a_note() {
    let repo = TempRepo::new();
    let launch = Launch::new();
    let still = turns(&[report(
        "continue",
        "looked at the parser",
        &[],
        &["Fix the parser."],
        "",
    )]);
    let mut rounds = vec![still; 3];
    rounds.push(turns(&[
        write_file_call("parser.py", "fixed\n"),
        complete_report("wrote parser.py as the note said"),
    ]));
    let tmux = launch.start(repo.path(), rounds, 0, &["-n", "8", "fix the parser"]);
    let review = tmux.wait_for("the stall", |s| s.contains("stalled after 3 rounds"));
    assert!(review.contains("changed no file"), "{review}");
    assert!(
        review.contains("--note"),
        "the resume command asks a note: {review}"
    );
    tmux.keys(&["b"]);
    tmux.wait_for("the send-back editor", |s| {
        s.contains("Send the run back to work")
    });
    tmux.keys(&["-l", "the parser is parser.py: write it"]);
    tmux.wait_for("the typed note", |s| s.contains("parser.py: write it"));
    tmux.keys(&["C-s"]);
    tmux.wait_for("the review after the note", |s| {
        s.contains("complete after 4 rounds")
    });
    tmux.keys(&["q"]);
    launch.assert_restored(&tmux, 0);
    let fourth = prompt_text(&launch.run_dir, 4);
    assert!(
        fourth.contains("the parser is parser.py: write it"),
        "{fourth}"
    );
    // One log: the stalled part's end, then the note's part and its end.
    let events = std::fs::read_to_string(launch.run_dir.join("events.jsonl")).unwrap();
    let ends: Vec<serde_json::Value> = events
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|event| event["type"] == "run_finished")
        .collect();
    let statuses: Vec<&str> = ends.iter().map(|e| e["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["stalled", "complete"]);
}
