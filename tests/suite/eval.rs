//! The eval harness through the real binaries, with scripted workers whose outcomes are known:
//! a true completion, a false completion, a blocked run, a budget-limited run, repeated
//! discovery, the single arm's budget, the arms' round context (a task's check, the
//! observation), the results files and the shipped tasks' scripts.

use std::path::{Path, PathBuf};
use std::process::Command;

use ralph_tui::eval::results::{CheckChoice, EvalResults, RunRecord};
use ralph_tui::eval::{self, Arm, BackendChoice, EvalOptions};
use ralph_tui::options::ObserveMode;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::common::*;

const EVAL_BIN: &str = env!("CARGO_BIN_EXE_ralph-eval");

/// Writes one task folder: objective, a one-file repo, a verify script and a script.
pub(super) fn task(root: &Path, name: &str, verify: &str, rounds: Vec<Value>) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(dir.join("repo")).unwrap();
    std::fs::write(dir.join("objective.txt"), format!("objective of {name}\n")).unwrap();
    std::fs::write(dir.join("repo/README.md"), "# task\n").unwrap();
    std::fs::write(dir.join("verify"), verify).unwrap();
    std::fs::write(
        dir.join("script.json"),
        serde_json::to_vec(&json!({"token_delay_ms": 0, "rounds": rounds})).unwrap(),
    )
    .unwrap();
    dir
}

/// Done when done.txt exists.
pub(super) const VERIFY_DONE_FILE: &str =
    "#!/bin/sh\n[ -f done.txt ] || { echo 'done.txt is missing'; exit 1; }\n";
/// Fails, naming where it ran (the harness must scrub those paths from the results).
const VERIFY_ALWAYS_FAILS: &str = "#!/bin/sh\necho \"not done in $PWD for $TASK_DIR\"\nexit 1\n";

fn options(tasks: &Path, rounds: u32, arms: &[Arm]) -> EvalOptions {
    let mut o = EvalOptions::new(tasks.to_path_buf(), PathBuf::from(BIN));
    o.backend = BackendChoice::Script;
    o.rounds = rounds;
    o.arms = arms.to_vec();
    o
}

fn run(options: &EvalOptions) -> EvalResults {
    eval::run(options, &CancellationToken::new(), &mut |_| {}).unwrap()
}

fn only<'a>(results: &'a EvalResults, task: &str, arm: Arm) -> &'a RunRecord {
    let found: Vec<&RunRecord> = results
        .runs
        .iter()
        .filter(|r| r.task == task && r.arm == arm)
        .collect();
    assert_eq!(found.len(), 1, "{task}/{arm:?}: {:?}", results.runs);
    found[0]
}

/// A worker that creates done.txt: with a write_file call, or (when `shell`) a command.
fn create_done(shell: bool) -> String {
    if shell {
        call("run_command", json!({"command": "echo ok > done.txt"}))
    } else {
        call("write_file", json!({"path": "done.txt", "content": "ok\n"}))
    }
}

#[test]
fn known_outcomes_are_recorded_as_such() {
    let tmp = tempfile::tempdir().unwrap();
    let tasks = tmp.path().join("tasks");
    task(
        &tasks,
        "a-true",
        VERIFY_DONE_FILE,
        vec![turns(&[
            create_done(false),
            complete_report("created done.txt"),
        ])],
    );
    task(
        &tasks,
        "b-false",
        VERIFY_ALWAYS_FAILS,
        vec![turns(&[complete_report("all done, trust me")])],
    );
    task(
        &tasks,
        "c-blocked",
        VERIFY_DONE_FILE,
        vec![turns(&[report(
            "blocked",
            "cannot",
            &[],
            &[],
            "the database is missing",
        )])],
    );
    task(
        &tasks,
        "d-budget",
        VERIFY_DONE_FILE,
        vec![
            turns(&[continue_report("one")]),
            turns(&[continue_report("two")]),
            turns(&[continue_report("three")]),
        ],
    );
    let results = run(&options(&tasks, 2, &[Arm::Ralph]));
    assert!(!results.interrupted);
    assert_eq!(
        results.tasks,
        ["a-true", "b-false", "c-blocked", "d-budget"]
    );

    let t = only(&results, "a-true", Arm::Ralph);
    assert!(t.completed, "{t:?}");
    assert_eq!(t.status, "complete");
    assert!(t.claimed_complete && !t.false_completion);
    assert_eq!(t.rounds_used, 1);
    assert!(t.generated_tokens > 0 && t.prompt_tokens > 0);

    let f = only(&results, "b-false", Arm::Ralph);
    assert!(!f.completed);
    assert_eq!(f.status, "complete");
    assert!(f.claimed_complete && f.false_completion);
    assert_eq!(f.verify.output_tail, "not done in <workspace> for <task>");

    let b = only(&results, "c-blocked", Arm::Ralph);
    assert!(!b.completed && !b.claimed_complete && !b.false_completion);
    assert_eq!(b.status, "blocked");
    assert_eq!(b.report_status.as_deref(), Some("blocked"));
    assert_eq!(b.exit_code, Some(3));

    let l = only(&results, "d-budget", Arm::Ralph);
    assert!(!l.completed && !l.false_completion);
    assert_eq!(l.status, "budget-limited");
    assert_eq!(l.report_status.as_deref(), Some("continue"));
    assert_eq!((l.rounds_used, l.max_rounds), (2, 2));

    let s = &results.summary[0];
    assert_eq!(
        (s.runs, s.completed, s.claims, s.false_completions),
        (4, 1, 2, 1)
    );
    assert_eq!(s.false_completion_rate, Some(0.5));
    assert_eq!(s.completion_rate, Some(0.25));
}

#[test]
fn repeated_discovery_counts_only_what_an_earlier_round_did() {
    let tmp = tempfile::tempdir().unwrap();
    let tasks = tmp.path().join("tasks");
    task(
        &tasks,
        "repeat",
        VERIFY_DONE_FILE,
        vec![
            turns(&[
                call("list_dir", json!({"path": "."})),
                call("read_file", json!({"path": "README.md"})),
                // The same call twice in one round is not a repeat of an earlier round.
                call("read_file", json!({"path": "README.md"})),
                continue_report("looked around"),
            ]),
            turns(&[
                call("list_dir", json!({"path": "."})),
                call("search", json!({"pattern": "task"})),
                create_done(false),
                // The report alone: this round has already called tools.
                report("complete", "done", &["checked the files"], &[], ""),
            ]),
        ],
    );
    let results = run(&options(&tasks, 3, &[Arm::Ralph]));
    let r = only(&results, "repeat", Arm::Ralph);
    assert!(r.completed);
    assert_eq!((r.discovery.repeated, r.discovery.calls), (1, 5), "{r:?}");
    assert_eq!(r.tool_calls, 8, "four calls a round, reports included");
    assert_eq!(r.rounds_used, 2);
    assert_eq!(results.summary[0].repeated_discovery_share, Some(0.2));
}

#[test]
fn the_single_arm_gets_the_ralph_arms_generated_tokens_as_its_budget() {
    let tmp = tempfile::tempdir().unwrap();
    let tasks = tmp.path().join("tasks");
    task(
        &tasks,
        "two-rounds",
        VERIFY_DONE_FILE,
        vec![
            turns(&[continue_report("first half")]),
            turns(&[create_done(true), complete_report("second half")]),
        ],
    );
    let mut o = options(&tasks, 3, &[Arm::Single, Arm::Ralph]);
    o.seeds = vec![7, 8];
    let results = run(&o);
    assert_eq!(results.runs.len(), 4);
    // Ralph first, then single, per seed, whatever order the arms were given in.
    let order: Vec<(Arm, u32)> = results.runs.iter().map(|r| (r.arm, r.seed)).collect();
    assert_eq!(
        order,
        [
            (Arm::Ralph, 7),
            (Arm::Single, 7),
            (Arm::Ralph, 8),
            (Arm::Single, 8)
        ]
    );
    let ralph = &results.runs[0];
    let single = &results.runs[1];
    assert!(ralph.completed && ralph.rounds_used == 2);
    assert_eq!(ralph.token_budget, None);
    assert_eq!(single.token_budget, Some(ralph.generated_tokens));
    assert_eq!((single.max_rounds, single.max_turns), (1, Some(200)));
    // One round of a two-round script: the worker asks for more and the session is over.
    assert_eq!(single.status, "budget-limited");
    assert!(!single.completed);
    assert_eq!(results.seeds, [7, 8]);
}

/// The Ralph arm is the product's loop with its round context: `--observe on` and the task's
/// `check` file as `--check`, so a claim the check fails is refused and the worker goes on;
/// ralph-plain is the same loop with neither, and takes the first claim; the single arm gets
/// the Ralph arm's round context.
#[test]
fn the_ralph_arm_runs_the_tasks_check_and_ralph_plain_runs_none() {
    let tmp = tempfile::tempdir().unwrap();
    let tasks = tmp.path().join("tasks");
    let dir = task(
        &tasks,
        "checked",
        VERIFY_DONE_FILE,
        vec![turns(&[
            complete_report("done already"),
            create_done(false),
            complete_only("done now"),
        ])],
    );
    std::fs::write(dir.join("check"), "test -f done.txt\n").unwrap();
    let mut o = options(&tasks, 2, &[Arm::Single, Arm::RalphPlain, Arm::Ralph]);
    o.single_budget = Some(100_000);
    let results = run(&o);
    let order: Vec<Arm> = results.runs.iter().map(|r| r.arm).collect();
    assert_eq!(order, [Arm::Ralph, Arm::RalphPlain, Arm::Single]);
    assert_eq!(results.task_checks.len(), 1);
    assert_eq!(
        results.task_checks[0].check.as_deref(),
        Some("test -f done.txt")
    );

    for arm in [Arm::Ralph, Arm::Single] {
        let r = only(&results, "checked", arm);
        assert!(r.completed && r.status == "complete", "{r:?}");
        assert_eq!(r.observe, Some(ObserveMode::On));
        assert_eq!(r.check.as_deref(), Some("test -f done.txt"));
        let c = &r.round_context;
        assert_eq!(
            c.check_command.as_deref(),
            Some("test -f done.txt"),
            "{r:?}"
        );
        assert_eq!(c.observed_rounds, 1);
        assert_eq!(c.claims_refused, 1, "{r:?}");
        // At the round's start, after the write, on the refused claim, on the accepted one.
        assert_eq!(c.check_runs, 4, "{r:?}");
        assert_eq!(
            (c.first_verdict.as_deref(), c.last_verdict.as_deref()),
            (Some("failed"), Some("passed"))
        );
    }
    let plain = only(&results, "checked", Arm::RalphPlain);
    assert!(plain.false_completion, "{plain:?}");
    assert_eq!(plain.observe, Some(ObserveMode::Off));
    assert_eq!(plain.check.as_deref(), Some("off"));
    assert_eq!(plain.round_context, Default::default());
    assert_eq!(plain.max_turns, Some(24));
    assert_eq!(plain.max_tokens, Some(1024));
    let summary: Vec<(Arm, u32, u32)> = results
        .summary
        .iter()
        .map(|s| (s.arm, s.claims_refused, s.observed_rounds))
        .collect();
    assert_eq!(
        summary,
        [
            (Arm::Ralph, 1, 1),
            (Arm::RalphPlain, 0, 0),
            (Arm::Single, 1, 1)
        ]
    );
    let md = results.markdown();
    assert!(
        md.contains("| checked | ralph | 1 | pass | complete | no |")
            && md.contains("| failed → passed, 1 refused |"),
        "{md}"
    );
}

/// A task without a `check` file gets `--check auto` in the Ralph arm (which finds no check in
/// a repository without tests); `--max-turns` and `--max-tokens` given to the eval reach every
/// agent arm and are recorded.
#[test]
fn without_a_check_file_the_ralph_arm_passes_auto_and_overrides_are_recorded() {
    let tmp = tempfile::tempdir().unwrap();
    let tasks = tmp.path().join("tasks");
    task(
        &tasks,
        "unchecked",
        VERIFY_DONE_FILE,
        vec![turns(&[create_done(false), complete_report("done")])],
    );
    let mut o = options(&tasks, 1, &[Arm::Ralph, Arm::RalphPlain]);
    o.max_turns = Some(5);
    o.max_tokens = Some(300);
    let results = run(&o);
    let r = only(&results, "unchecked", Arm::Ralph);
    assert!(r.completed, "{r:?}");
    assert_eq!(r.check.as_deref(), Some("auto"));
    assert_eq!(r.round_context.check_command, None);
    assert_eq!(r.round_context.observed_rounds, 1);
    assert_eq!((r.max_turns, r.max_tokens), (Some(5), Some(300)));
    let plain = only(&results, "unchecked", Arm::RalphPlain);
    assert_eq!((plain.max_turns, plain.max_tokens), (Some(5), Some(300)));
    let limits: Vec<(u32, u32)> = results
        .arm_settings
        .iter()
        .map(|a| (a.max_turns, a.max_tokens))
        .collect();
    assert_eq!(limits, [(5, 300), (5, 300)]);
    assert_eq!(
        (results.max_turns, results.max_tokens),
        (Some(5), Some(300))
    );
}

/// A `check` file holds one command line; blank lines around it do not count.
#[test]
fn a_check_file_names_one_command() {
    let tmp = tempfile::tempdir().unwrap();
    let tasks = tmp.path().join("tasks");
    let dir = task(
        &tasks,
        "checked",
        VERIFY_DONE_FILE,
        vec![turns(&[complete_report("x")])],
    );
    std::fs::write(dir.join("check"), "\n  cargo test  \n\n").unwrap();
    let loaded = eval::task::Task::load(&dir).unwrap();
    assert_eq!(loaded.check.as_deref(), Some("cargo test"));
    std::fs::remove_file(dir.join("check")).unwrap();
    assert_eq!(eval::task::Task::load(&dir).unwrap().check, None);
    for (text, why) in [
        ("make\nmake test\n", "more than one line"),
        ("\n \n", "empty"),
        ("auto\n", "name a command"),
    ] {
        std::fs::write(dir.join("check"), text).unwrap();
        let e = eval::run(
            &options(&tasks, 1, &[Arm::Ralph]),
            &CancellationToken::new(),
            &mut |_| {},
        )
        .unwrap_err();
        assert!(e.is_usage() && e.to_string().contains(why), "{text:?}: {e}");
    }
}

#[test]
fn a_spent_token_budget_ends_the_single_arm_budget_limited() {
    let tmp = tempfile::tempdir().unwrap();
    let tasks = tmp.path().join("tasks");
    task(
        &tasks,
        "chatty",
        VERIFY_DONE_FILE,
        vec![turns(&[
            "Thinking out loud for a while before doing anything at all.".into(),
            "Still thinking.".into(),
            create_done(false),
            complete_report("done"),
        ])],
    );
    let mut o = options(&tasks, 1, &[Arm::Single]);
    o.single_budget = Some(5);
    let results = run(&o);
    let r = only(&results, "chatty", Arm::Single);
    assert_eq!(r.status, "budget-limited");
    assert_eq!(r.token_budget, Some(5));
    assert!(!r.completed && !r.claimed_complete);
    assert!(r.error.as_deref().unwrap_or("").contains("budget"), "{r:?}");
}

#[test]
fn the_binary_writes_json_and_markdown_and_prints_a_line_per_arm() {
    let tmp = tempfile::tempdir().unwrap();
    let tasks = tmp.path().join("tasks");
    let easy = task(
        &tasks,
        "easy",
        VERIFY_DONE_FILE,
        vec![turns(&[create_done(false), complete_report("done")])],
    );
    oneshot_answer(&easy, "done.txt\n```\nok\n```\n");
    let liar = task(
        &tasks,
        "liar",
        VERIFY_ALWAYS_FAILS,
        vec![turns(&[complete_report("done")])],
    );
    oneshot_answer(&liar, "Nothing to change.\n");
    let out_dir = tmp.path().join("out");
    let out = Command::new(EVAL_BIN)
        // A budget of its own, so the single session is not wrapped up at its first turn
        // (the scripts' Ralph runs generate fewer tokens than one turn's --max-tokens).
        .args(["--backend", "script", "--rounds", "2", "--seeds", "3"])
        .args(["--single-budget", "100000"])
        .arg("--tasks-dir")
        .arg(&tasks)
        .arg("--out")
        .arg(&out_dir)
        .arg("--ralph-bin")
        .arg(BIN)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 0, "{stdout}\n{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    for arm in ["ralph ", "ralph-plain ", "oneshot "] {
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with(arm) && l.contains("completed 1/2")),
            "{arm}: {stdout}"
        );
    }
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("single") && l.contains("false completions 1/2")),
        "{stdout}"
    );
    assert!(stderr.contains("FALSE COMPLETION"), "{stderr}");
    assert!(
        stderr
            .contains("easy · oneshot · seed 3: verify pass · answer answered · 1 file(s) written"),
        "{stderr}"
    );

    let mut written: Vec<String> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    let json_path = out_dir.join(&written[0]);
    let results: EvalResults = serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
    let stem = format!("{}-script", results.date);
    assert_eq!(written, [format!("{stem}.json"), format!("{stem}.md")]);
    assert_eq!(results.backend, "script");
    assert_eq!(results.model, None);
    assert_eq!(results.seeds, [3]);
    assert_eq!(results.runs.len(), 8);
    assert_eq!(
        results.arms,
        [Arm::Ralph, Arm::RalphPlain, Arm::Single, Arm::Oneshot]
    );
    // The settings each arm ran with: ralph-tui's own turn limits, since none were given.
    type ArmRow = (Arm, u32, u32, u32, Option<ObserveMode>, Option<CheckChoice>);
    let settings: Vec<ArmRow> = results
        .arm_settings
        .iter()
        .map(|a| {
            (
                a.arm,
                a.rounds,
                a.max_turns,
                a.max_tokens,
                a.observe,
                a.check,
            )
        })
        .collect();
    let on = Some(ObserveMode::On);
    let task_check = Some(CheckChoice::TaskElseAuto);
    assert_eq!(
        settings,
        [
            (Arm::Ralph, 2, 24, 1024, on, task_check),
            (
                Arm::RalphPlain,
                2,
                24,
                1024,
                Some(ObserveMode::Off),
                Some(CheckChoice::Off)
            ),
            (Arm::Single, 1, 200, 1024, on, task_check),
            (Arm::Oneshot, 0, 1, 1024, None, None),
        ]
    );
    assert_eq!(results.arm_settings[2].budget, "100000");
    assert!(results.ralph_version.starts_with("ralph-tui "));
    let md = std::fs::read_to_string(out_dir.join(&written[1])).unwrap();
    assert!(
        md.contains("| liar | ralph | 3 | fail | complete | **yes** |"),
        "{md}"
    );
    assert!(
        md.contains("| easy | single | 3 | pass | complete | no |"),
        "{md}"
    );
    assert!(
        md.contains("| easy | ralph-plain | 3 | pass | complete | no |"),
        "{md}"
    );
    // What each arm ran with, and the arms side by side: one column each.
    assert!(
        md.contains("| ralph | 2 | 24 | 1024 | on | the task's, else `auto` | none |\n| ralph-plain | 2 | 24 | 1024 | off | off | none |\n| single | 1 | 200 | 1024 | on | the task's, else `auto` | 100000 |\n"),
        "{md}"
    );
    assert!(
        md.contains("Task checks: easy none (`auto`) · liar none (`auto`)."),
        "{md}"
    );
    assert!(
        md.contains("| arm | rounds observed | check runs | claims the check refused |"),
        "{md}"
    );
    assert!(
        md.contains("| task | seed | ralph | ralph-plain | single | oneshot |\n|---|---:|---|---|---|---|\n"),
        "{md}"
    );
    assert!(
        md.contains(
            "| easy | 3 | pass · complete | pass · complete | pass · complete | pass · 1 written |"
        ),
        "{md}"
    );
    assert!(
        md.contains("| liar | 3 | fail · complete (**false**) | fail · complete (**false**) | fail · complete (**false**) | fail · 0 written |"),
        "{md}"
    );
    let text = std::fs::read_to_string(&json_path).unwrap();
    assert!(
        !text.contains(&*tmp.path().to_string_lossy()),
        "results must hold no absolute paths"
    );
}

#[test]
fn the_worker_never_sees_the_verify_script_and_workspaces_start_committed() {
    let tmp = tempfile::tempdir().unwrap();
    let tasks = tmp.path().join("tasks");
    task(
        &tasks,
        "peek",
        VERIFY_DONE_FILE,
        vec![turns(&[
            // Passes only when the tree is exactly repo/ and HEAD is the fixed starting commit.
            call(
                "run_command",
                json!({"command": "test ! -e verify && test ! -e objective.txt && test -z \"$(git status --porcelain)\" && git log --format='%an %ae %at' > done.txt"}),
            ),
            complete_report("done"),
        ])],
    );
    let keep = tmp.path().join("kept");
    let mut o = options(&tasks, 1, &[Arm::Ralph]);
    o.keep_in = Some(keep.clone());
    let results = run(&o);
    assert!(only(&results, "peek", Arm::Ralph).completed, "{results:?}");
    let scratch = kept_scratch(&keep);
    let log = std::fs::read_to_string(scratch.join("peek-ralph-s1/workspace/done.txt")).unwrap();
    assert_eq!(log.trim(), "Ralph Eval eval@ralph-tui.invalid 1704067200");
}

#[test]
fn bad_requests_are_usage_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let tasks = tmp.path().join("tasks");
    task(
        &tasks,
        "only",
        VERIFY_DONE_FILE,
        vec![turns(&[complete_report("x")])],
    );
    let mut o = options(&tasks, 1, &[Arm::Ralph]);
    o.filters = vec!["nothing-matches".into()];
    let e = eval::run(&o, &CancellationToken::new(), &mut |_| {}).unwrap_err();
    assert!(e.is_usage() && e.to_string().contains("no task"), "{e}");

    let o = options(&tasks, 1, &[Arm::Single]);
    let e = eval::run(&o, &CancellationToken::new(), &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("--single-budget"), "{e}");

    let o = options(&tasks, 65, &[Arm::Ralph]);
    assert!(eval::run(&o, &CancellationToken::new(), &mut |_| {}).is_err());

    let out = Command::new(EVAL_BIN)
        .args(["--backend", "script", "--arms", "nope"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 2);
}

/// The one scratch folder an eval kept in `keep`.
fn kept_scratch(keep: &Path) -> PathBuf {
    std::fs::read_dir(keep)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
}

/// Options for the shipped tasks but the Rust one (it would run cargo inside the test run),
/// three rounds, one arm.
fn shipped_tasks_but_rust(arm: Arm) -> EvalOptions {
    let tasks = Path::new(env!("CARGO_MANIFEST_DIR")).join("evals/tasks");
    let mut o = options(&tasks, 3, &[arm]);
    o.filters = [
        "create-file",
        "fix-typo",
        "config-port",
        "shell-greet",
        "py-slugify",
        "py-median",
        "py-inventory",
        "rename-api",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    o
}

/// The shipped tasks: every folder is well formed, and each scripted worker ends as its
/// script says (this exercises the real tools on the real task repositories). The Rust task
/// is left out: it would run cargo inside the test run.
#[test]
fn the_shipped_tasks_play_their_scripts_as_documented() {
    let o = shipped_tasks_but_rust(Arm::Ralph);
    let results = run(&o);
    let outcome = |name: &str| {
        let r = results
            .runs
            .iter()
            .find(|r| r.task.contains(name))
            .unwrap_or_else(|| panic!("no run of {name}"));
        (r.status.as_str(), r.completed, r.false_completion)
    };
    assert_eq!(
        outcome("create-file"),
        ("complete", true, false),
        "{results:?}"
    );
    // The script fixes one misspelling of four and claims the guide fixed. It was the
    // documented false completion until the claims check refused it (the renamed word still
    // stood); now the objective names the misspelling, so its one edit fixes all four.
    assert_eq!(outcome("fix-typo"), ("complete", true, false));
    assert_eq!(outcome("config-port"), ("complete", true, false));
    assert_eq!(outcome("shell-greet"), ("complete", true, false));
    assert_eq!(outcome("py-slugify"), ("blocked", false, false));
    assert_eq!(outcome("py-median"), ("complete", false, true));
    assert_eq!(
        outcome("py-inventory"),
        ("complete", true, false),
        "{results:?}"
    );
    assert_eq!(outcome("rename-api"), ("budget-limited", false, false));
    // The shipped checks, and what the engine ran for each (`auto` finds none in 01-04).
    let checks: Vec<(&str, Option<&str>)> = results
        .task_checks
        .iter()
        .map(|t| (t.task.as_str(), t.check.as_deref()))
        .collect();
    let unittest = Some("python3 -m unittest discover -s tests");
    assert_eq!(
        checks,
        [
            ("01-create-file", None),
            ("02-fix-typo", None),
            ("03-config-port", None),
            ("04-shell-greet", None),
            ("05-py-slugify", Some("python3 -m doctest -v textutil.py")),
            ("06-py-median", Some("python3 -m unittest")),
            ("08-py-inventory", unittest),
            ("09-rename-api", unittest),
        ]
    );
    for (task, check) in checks {
        let r = results.runs.iter().find(|r| r.task == task).unwrap();
        assert_eq!(r.round_context.check_command.as_deref(), check, "{r:?}");
        assert_eq!(r.check.as_deref(), Some(check.unwrap_or("auto")));
    }
    let verdicts = |name: &str| {
        let r = results.runs.iter().find(|r| r.task.contains(name)).unwrap();
        let c = &r.round_context;
        (
            c.first_verdict.clone(),
            c.last_verdict.clone(),
            c.claims_refused,
        )
    };
    let v = |s: &str| Some(s.to_string());
    // The median worker "fixes" the test, so the check passes and the claim stands.
    assert_eq!(verdicts("py-median"), (v("failed"), v("passed"), 0));
    assert_eq!(verdicts("py-inventory"), (v("failed"), v("passed"), 0));
    assert_eq!(verdicts("py-slugify"), (v("failed"), v("failed"), 0));
    let repeated = results
        .runs
        .iter()
        .find(|r| r.task.contains("config-port"))
        .map(|r| (r.discovery.repeated, r.discovery.calls));
    assert_eq!(repeated, Some((1, 3)));
}

/// Gives a task folder the oneshot arm's canned answer.
fn oneshot_answer(task_dir: &Path, answer: &str) {
    std::fs::write(task_dir.join("oneshot.txt"), answer).unwrap();
}

/// The shipped tasks' canned oneshot answers solve them: each answer is parsed, its files are
/// written into the workspace and the task's own verify script passes (the Rust task is left
/// out: it would run cargo inside the test run).
#[test]
fn the_shipped_oneshot_answers_are_written_and_pass_verify() {
    let o = shipped_tasks_but_rust(Arm::Oneshot);
    let results = run(&o);
    assert_eq!(results.runs.len(), 8);
    for r in &results.runs {
        let oneshot = r.oneshot.as_ref().unwrap();
        assert!(r.completed, "{r:?}");
        assert_eq!(r.status, "answered");
        assert!(
            oneshot.refused.is_empty() && oneshot.problems.is_empty(),
            "{r:?}"
        );
        assert!(oneshot.files_shown > 0 && oneshot.files_not_shown.is_empty());
        assert!(r.prompt_tokens > 0 && r.generated_tokens > 0);
        assert!(!r.claimed_complete && !r.false_completion && r.tool_calls == 0);
    }
    let written = |name: &str| {
        let r = results.runs.iter().find(|r| r.task.contains(name)).unwrap();
        r.oneshot.as_ref().unwrap().written.clone()
    };
    assert_eq!(written("create-file"), ["hello.txt"]);
    // `**config/app.ini**` and a language tag are read as the plain listing.
    assert_eq!(written("config-port"), ["config/app.ini"]);
    assert_eq!(
        written("rename-api"),
        [
            "shop/users.py",
            "shop/orders.py",
            "shop/billing.py",
            "shop/cli.py"
        ]
    );
    let s = &results.summary[0];
    assert_eq!(
        (s.arm, s.runs, s.completed, s.claims),
        (Arm::Oneshot, 8, 8, 0)
    );
}

/// A hostile or broken answer: paths that leave the workspace, go into .git or are absolute
/// are refused and named; a block without a path and a block cut off are not written; the
/// one good file is written and verify judges the tree.
#[test]
fn a_hostile_oneshot_answer_writes_only_inside_the_workspace() {
    let tmp = tempfile::tempdir().unwrap();
    let tasks = tmp.path().join("tasks");
    let dir = task(&tasks, "hostile", VERIFY_DONE_FILE, vec![]);
    let outside = tmp.path().join("outside.txt");
    let answer = format!(
        "Here goes.\n\n../../../../outside.txt\n```\nescaped\n```\n\n{abs}\n```\nabsolute\n```\n\n\
.git/hooks/post-commit\n```sh\n#!/bin/sh\necho owned\n```\n\nsub/../../x.txt\n```\nx\n```\n\n\
Then run:\n```sh\nrm -rf /\n```\n\ndone.txt\n```\nok\n```\n\nREADME.md\n```\ncut off mid-way",
        abs = outside.display()
    );
    oneshot_answer(&dir, &answer);
    let keep = tmp.path().join("kept");
    let mut o = options(&tasks, 1, &[Arm::Oneshot]);
    o.keep_in = Some(keep.clone());
    let results = run(&o);
    let r = only(&results, "hostile", Arm::Oneshot);
    let oneshot = r.oneshot.as_ref().unwrap();
    assert!(r.completed, "{r:?}");
    assert_eq!(oneshot.written, ["done.txt"]);
    assert_eq!(oneshot.refused.len(), 4, "{oneshot:?}");
    assert!(
        oneshot.refused[0].contains("'..' leads outside"),
        "{oneshot:?}"
    );
    assert!(
        oneshot.refused[1].contains("an absolute path"),
        "{oneshot:?}"
    );
    assert!(oneshot.refused[2].contains("inside .git"), "{oneshot:?}");
    assert!(
        oneshot.refused[3].contains("'..' leads outside"),
        "{oneshot:?}"
    );
    assert_eq!(oneshot.problems.len(), 2, "{oneshot:?}");
    assert!(oneshot.problems[0].contains("has no path line"));
    assert!(oneshot.problems[1].starts_with("'README.md': its block"));
    assert!(!outside.exists());
    let scratch = kept_scratch(&keep);
    let workspace = scratch.join("hostile-oneshot-s1/workspace");
    assert!(!workspace.join(".git/hooks/post-commit").exists());
    assert!(!tmp.path().join("x.txt").exists() && !scratch.join("x.txt").exists());
    assert_eq!(
        std::fs::read_to_string(workspace.join("README.md")).unwrap(),
        "# task\n",
        "a block cut off leaves the file as it was"
    );
    // What the model saw and said is kept beside the workspace.
    let prompt = std::fs::read_to_string(scratch.join("hostile-oneshot-s1/prompt.txt")).unwrap();
    assert!(
        prompt.contains("objective of hostile") && prompt.contains("README.md\n```\n# task\n```")
    );
    // The answer's own absolute path is the model's text; the harness's paths are scrubbed.
    let json = serde_json::to_string(&results).unwrap();
    assert!(!json.contains(&*keep.to_string_lossy()), "{json}");
    assert!(!json.contains(&*tasks.to_string_lossy()), "{json}");
}

/// Without a Ralph arm to take it from, the answer's cap is room for the repository's text
/// plus --max-tokens; --oneshot-max-tokens overrides it. A task without oneshot.txt cannot run
/// the arm on the script backend.
#[test]
fn the_oneshot_cap_and_a_missing_answer() {
    let tmp = tempfile::tempdir().unwrap();
    let tasks = tmp.path().join("tasks");
    let dir = task(&tasks, "cap", VERIFY_DONE_FILE, vec![]);
    oneshot_answer(&dir, "done.txt\n```\nok\n```\n");
    let mut o = options(&tasks, 1, &[Arm::Oneshot]);
    let r = run(&o).runs.remove(0);
    // README.md is 7 bytes: ralph-tui's --max-tokens (1024) + ceil(7 / 3).
    assert_eq!(r.token_budget, Some(1027));
    assert_eq!(r.max_tokens, Some(1024));
    assert!(r.completed);
    o.oneshot_max_tokens = Some(1000);
    assert_eq!(run(&o).runs[0].token_budget, Some(1000));

    std::fs::remove_file(dir.join("oneshot.txt")).unwrap();
    let e = eval::run(&o, &CancellationToken::new(), &mut |_| {}).unwrap_err();
    assert!(e.is_usage() && e.to_string().contains("oneshot.txt"), "{e}");
}

#[test]
fn ralph_eval_help_explains_the_oneshot_arm() {
    let out = Command::new(EVAL_BIN).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert_eq!(code(&out), 0);
    assert!(
        help.contains("[default: ralph,ralph-plain,single,oneshot]"),
        "{help}"
    );
    assert!(
        help.contains("whole files") && help.contains("--oneshot-max-tokens"),
        "{help}"
    );
}

/// Through a model server named after `--`, the oneshot arm sends one plain request (no
/// tools, the files in the prompt, the answer's cap as max_tokens) and writes what comes back.
#[test]
fn the_oneshot_arm_runs_on_a_model_server_too() {
    use super::openai_server::{FakeServer, Reply};
    let tmp = tempfile::tempdir().unwrap();
    let tasks = tmp.path().join("tasks");
    task(&tasks, "served", VERIFY_DONE_FILE, vec![]);
    let server = FakeServer::start(&["served-model"]).with_props_ctx(16_384);
    server.push(Reply::sse(&super::openai::sse_turn(
        "done.txt\n```\nok\n```\n",
    )));
    let mut o = EvalOptions::new(tasks, PathBuf::from(BIN));
    o.arms = vec![Arm::Oneshot];
    let backend = format!("openai:{}", server.url);
    o.extra_args = vec![
        "--backend".into(),
        backend,
        "-m".into(),
        "served-model".into(),
    ];
    let results = run(&o);
    let r = only(&results, "served", Arm::Oneshot);
    assert!(r.completed, "{r:?}");
    assert_eq!(r.oneshot.as_ref().unwrap().written, ["done.txt"]);
    let chats: Vec<_> = server
        .seen()
        .into_iter()
        .filter(|s| s.path.ends_with("/chat/completions"))
        .collect();
    assert_eq!(chats.len(), 1);
    let body = &chats[0].body;
    assert!(body.get("tools").is_none(), "{body}");
    assert_eq!(body["max_tokens"], json!(1027), "{body}");
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert!(messages[1]["content"]
        .as_str()
        .unwrap()
        .contains("README.md\n```\n# task\n```"));
}
