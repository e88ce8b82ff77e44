//! The check: the repository's own test or build command, run by the engine every round.
//!
//! A Ralph loop works because something outside the model says what is still wrong. The
//! check is that: `--check CMD` (or `auto`, found here from the repository's files) runs at
//! each round's start, for the observation, and again when the worker reports `complete`,
//! where a failing check refuses the claim. It runs exactly as the worker's own commands do:
//! through the sandbox under the run's policy, with `run_command`'s time and output limits,
//! and everything it starts is killed when it ends. A run that exits 0 but ran no test
//! (`Ran 0 tests`) is not a pass. `--verify` is a different thing: the person's own final
//! command, never shown to the worker; it shares the sandboxed run below.

use std::path::Path;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::pytrace::{self, TestRan};
use super::testrun::ran_no_test as ran_no_test_in;
use crate::chat::listing::fence_for;
use crate::protocol::event::{CheckRun, CheckVerdict};
use crate::tools::confined::Root;
use crate::tools::process::{run_captured, Captured};
use crate::tools::run_command::scratch_dir;
use crate::tools::{sandbox, ToolPolicy};

/// Most bytes of the check's output kept for the observation and the refusal.
pub const OUTPUT_BYTES: usize = 3 * 1024;

/// Runs `command` in `workspace` through the sandbox under `policy`, in a scratch directory of
/// its own named by `run_id` and `what`, bounded by `timeout` and `output_cap`; whatever it
/// leaves running is killed before this returns. Also how long it took.
pub fn run_confined(
    command: &str,
    workspace: &Path,
    policy: &ToolPolicy,
    (run_id, what): (&str, &str),
    (timeout, output_cap): (Duration, usize),
    cancel: &CancellationToken,
) -> (std::io::Result<Captured>, Duration) {
    let (result, took, _) = confined(
        command,
        workspace,
        policy,
        (run_id, what),
        (timeout, output_cap),
        (cancel, false),
    );
    (result, took)
}

/// [`run_confined`], and with `trace`, what the Python tests it ran called of the
/// workspace's code (`pytrace`; nothing when it ran none).
fn confined(
    command: &str,
    workspace: &Path,
    policy: &ToolPolicy,
    (run_id, what): (&str, &str),
    (timeout, output_cap): (Duration, usize),
    (cancel, trace): (&CancellationToken, bool),
) -> (std::io::Result<Captured>, Duration, Vec<TestRan>) {
    let started = Instant::now();
    let tmp = scratch_dir(run_id, what);
    let mut traced = Vec::new();
    let result = std::fs::create_dir_all(&tmp).and_then(|()| {
        let mut cmd = sandbox::command(policy, workspace, &tmp, command);
        let out = trace
            .then(|| pytrace::arm(&mut cmd, &tmp, workspace).ok())
            .flatten();
        let captured = run_captured(cmd, timeout, cancel, output_cap, None);
        if let Some(out) = out {
            traced = pytrace::collect(&out);
        }
        captured
    });
    let _ = std::fs::remove_dir_all(&tmp);
    (result, started.elapsed(), traced)
}

/// Runs the check `command` once, as round `round`'s check, and says what it found.
pub fn run(
    command: &str,
    workspace: &Path,
    policy: &ToolPolicy,
    run_id: &str,
    round: u32,
    cancel: &CancellationToken,
) -> CheckRun {
    run_observed(command, workspace, policy, run_id, round, (cancel, false)).0
}

/// [`run`], and with `trace` (the observation at a round's start), also what each failing
/// test ran of the workspace's own code, as the observation says it (`pytrace::describe`;
/// empty untraced, or when the trace knows none of the failures).
pub fn run_observed(
    command: &str,
    workspace: &Path,
    policy: &ToolPolicy,
    run_id: &str,
    round: u32,
    (cancel, trace): (&CancellationToken, bool),
) -> (CheckRun, String) {
    let timeout = policy.command_timeout;
    let (result, took, traced) = confined(
        command,
        workspace,
        policy,
        (run_id, &format!("check-{round:02}")),
        (timeout, policy.output_cap.max(OUTPUT_BYTES * 2)),
        (cancel, trace),
    );
    let wall_ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
    let captured = match result {
        Ok(captured) => captured,
        Err(e) => {
            let run = CheckRun {
                command: command.to_string(),
                exit_code: None,
                verdict: CheckVerdict::NotRun,
                note: format!("could not start the check: {e}"),
                wall_ms,
                output: String::new(),
            };
            return (run, String::new());
        }
    };
    let output = policy
        .secrets
        .mask(&crate::tools::run_command::workspace_relative(
            &captured.output,
            workspace,
        ));
    let (verdict, note) = judge(&captured, &output, timeout);
    let ran = if verdict.is_pass() {
        String::new()
    } else {
        pytrace::describe(&traced, &output)
    };
    let run = CheckRun {
        command: command.to_string(),
        exit_code: captured.exit_code,
        verdict,
        note,
        wall_ms,
        output: failures_first(&output, OUTPUT_BYTES),
    };
    (run, ran)
}

/// Whether the run ran at least one test (so that a later run of none lost them).
pub fn ran_tests(run: &CheckRun) -> bool {
    !ran_no_test(run) && super::testrun::ran_some_test(&run.output)
}

/// Whether the run ran no test, whatever its exit code: the verdict says so for a run that
/// exited 0, the runner's words for one that did not (Python 3.12's unittest exits 5 when it
/// ran no test).
pub fn ran_no_test(run: &CheckRun) -> bool {
    run.verdict == CheckVerdict::NoTests || ran_no_test_in(&run.output).is_some()
}

/// What the check's latest run showed, to tell a change that made it worse.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Standing {
    /// It ran at least one test.
    pub ran_tests: bool,
    /// How many tests passed (`None`: its output does not say).
    pub passed: Option<u64>,
}

/// How a run after a change is worse than the one before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Worse {
    /// It ran no test, where the run before ran some.
    NoTest,
    /// Fewer tests passed than before.
    Fewer { before: u64, after: u64 },
}

impl Standing {
    /// What `run` showed.
    pub fn of(run: &CheckRun) -> Self {
        Self {
            ran_tests: ran_tests(run),
            passed: passed(run),
        }
    }

    /// Whether a later run can be worse than this one: it ran a test, or some passed.
    pub fn can_lose(&self) -> bool {
        self.ran_tests || self.passed.is_some_and(|n| n > 0)
    }

    /// How `after`, a run after a change, is worse than this one, when it is.
    pub fn worse(&self, after: &CheckRun) -> Option<Worse> {
        if self.ran_tests && ran_no_test(after) {
            return Some(Worse::NoTest);
        }
        let before = self.passed.filter(|&n| n > 0)?;
        let now = passed(after)?;
        (now < before).then_some(Worse::Fewer { before, after: now })
    }
}

/// How many tests the run passed: the runner's own count, or none when it failed or timed
/// out before it printed one (a syntax error on import, a build that broke, a hang).
fn passed(run: &CheckRun) -> Option<u64> {
    super::testrun::passed(&run.output).or_else(|| {
        matches!(run.verdict, CheckVerdict::Failed | CheckVerdict::TimedOut).then_some(0)
    })
}

/// The check's command, verdict and exit code (`when` says when ralph-tui ran it), then its
/// output within `max_bytes`, failures first, and when it does not pass, that the objective
/// is not met while it fails. This is the worker's text, so it leaves out the check's time
/// (the person sees it on the card and in the log): a time in the prompt made two runs of
/// the same seed and build differ from their first token on (`0.1 s` against `0.2 s`).
pub fn describe(check: &CheckRun, when: &str, max_bytes: usize) -> String {
    let exit = exit_words(check);
    let mut text = format!(
        "The check `{}` (run by ralph-tui {when}): {} ({exit})",
        crate::text::sanitize_line(&check.command),
        check.verdict.as_str().to_uppercase(),
    );
    if !check.note.is_empty() {
        text.push_str(&format!(": {}", check.note));
    }
    text.push('\n');
    let output = shown(&check.output, max_bytes);
    if output.trim().is_empty() {
        text.push_str("(no output)\n");
    } else {
        let fence = fence_for([output.as_str()]);
        text.push_str(&format!("{fence}\n{}\n{fence}\n", output.trim_end()));
    }
    if !check.verdict.is_pass() {
        text.push_str(
            "The objective is not met while this check fails: fix what it reports, then run it again.\n",
        );
    }
    text
}

/// How the run ended, in the worker's words: `exit code 1`, or `no exit code`.
fn exit_words(run: &CheckRun) -> String {
    run.exit_code.map_or_else(
        || "no exit code".to_string(),
        |code| format!("exit code {code}"),
    )
}

/// Why a `complete` claim is refused when the check does not pass, quoting its output.
pub fn refusal(run: &CheckRun) -> String {
    let exit = exit_words(run);
    let note = if run.note.is_empty() {
        String::new()
    } else {
        format!("; {}", run.note)
    };
    let output = shown(&run.output, 900);
    format!(
        "the repository's check `{}` does not pass ({}, {exit}{note}), so the objective is not met. Its output:\n{}\nFix what it reports and run it again, or report status \"continue\" with next_steps",
        run.command,
        run.verdict.as_str(),
        if output.trim().is_empty() { "(no output)" } else { output.trim_end() },
    )
}

/// The verdict on a finished run, and the note that says why when the exit code does not.
fn judge(captured: &Captured, output: &str, timeout: Duration) -> (CheckVerdict, String) {
    if captured.timed_out {
        return (
            CheckVerdict::TimedOut,
            format!(
                "stopped after {} s, the commands' time limit",
                timeout.as_secs()
            ),
        );
    }
    if captured.cancelled {
        return (CheckVerdict::NotRun, "cancelled".into());
    }
    match captured.exit_code {
        Some(code)
            if code == sandbox::SETUP_FAILED && output.starts_with(sandbox::FAILURE_PREFIX) =>
        {
            (
                CheckVerdict::NotRun,
                crate::chat::scan::clip(output.trim(), 200),
            )
        }
        Some(0) => match ran_no_test_in(output) {
            Some(why) => (
                CheckVerdict::NoTests,
                format!("{why}: a run that tests nothing is not a pass"),
            ),
            None => (CheckVerdict::Passed, String::new()),
        },
        Some(_) => (CheckVerdict::Failed, String::new()),
        None => (CheckVerdict::Failed, "killed by a signal".into()),
    }
}

/// The check's `output` as the worker is shown it: the runners' timings left out
/// (`testrun::timeless`), within `max_bytes`, failures first.
pub fn shown(output: &str, max_bytes: usize) -> String {
    failures_first(&super::testrun::timeless(output), max_bytes)
}

/// `output` within `max_bytes`, the lines that report failures first (each with a few lines
/// after it), then the end of the output, where runners put their summary. Output that fits
/// is given as it is.
pub fn failures_first(output: &str, max_bytes: usize) -> String {
    let output = output.trim_end();
    if output.len() <= max_bytes {
        return output.to_string();
    }
    const AFTER: usize = 3;
    let lines: Vec<&str> = output.lines().collect();
    let mut keep = vec![false; lines.len()];
    for (i, line) in lines.iter().enumerate() {
        if is_failure_line(line) {
            for k in keep.iter_mut().skip(i).take(AFTER + 1) {
                *k = true;
            }
        }
    }
    let mut failures = String::new();
    let half = max_bytes / 2;
    for (line, _) in lines.iter().zip(&keep).filter(|(_, k)| **k) {
        if failures.len() + line.len() + 1 > half {
            break;
        }
        failures.push_str(line);
        failures.push('\n');
    }
    let mut out = String::new();
    if !failures.is_empty() {
        out.push_str("[failures]\n");
        out.push_str(&failures);
        out.push_str("[end of the output]\n");
    }
    let room = max_bytes.saturating_sub(out.len());
    let tail = crate::text::tail_at_char_boundary(output, room);
    // Start the tail at a line.
    let tail = tail.find('\n').map_or(tail, |at| &tail[at + 1..]);
    out.push_str(tail);
    out
}

/// Whether a line reports a failure in the words of the common runners.
fn is_failure_line(line: &str) -> bool {
    const MARKS: [&str; 10] = [
        "FAIL",
        "ERROR",
        "Error",
        "error[",
        "error:",
        "panicked",
        "Traceback",
        "AssertionError",
        "assert",
        "Exception",
    ];
    MARKS.iter().any(|m| line.contains(m))
}

/// What `--check auto` picked: the command and why, or `None` when the repository has no
/// recognisable test or build command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Picked {
    pub command: String,
    pub because: String,
}

/// Most files looked at when searching for Python test files.
const MAX_SCAN: usize = 20_000;

/// Picks the check for the repository at `root` from its files: a Makefile's `test` target,
/// `cargo test`, `go test ./...`, `npm test` (a real `test` script), pytest where it is
/// configured, else `python3 -m unittest discover` with a pattern that finds the
/// repository's own test files (`test_*.py`, `*_test.py`). Files are read confined.
pub fn auto(root: &Path) -> Option<Picked> {
    let confined = Root::open(root).ok()?;
    let read = |name: &str| {
        confined
            .read(Path::new(name), 256 * 1024)
            .ok()
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
    };
    let picked = |command: &str, because: &str| {
        Some(Picked {
            command: command.to_string(),
            because: because.to_string(),
        })
    };
    for makefile in ["GNUmakefile", "Makefile", "makefile"] {
        if read(makefile).is_some_and(|text| has_make_target(&text, "test")) {
            return picked("make test", &format!("{makefile} has a `test` target"));
        }
    }
    if read("Cargo.toml").is_some() {
        return picked("cargo test", "Cargo.toml");
    }
    if read("go.mod").is_some() {
        return picked("go test ./...", "go.mod");
    }
    if let Some(package) = read("package.json") {
        if npm_test_script(&package) {
            return picked("npm test", "package.json has a `test` script");
        }
    }
    let pytest_config = read("pytest.ini").is_some()
        || read("conftest.py").is_some()
        || read("pyproject.toml").is_some_and(|t| t.contains("[tool.pytest"))
        || read("setup.cfg").is_some_and(|t| t.contains("[tool:pytest]"))
        || read("tox.ini").is_some_and(|t| t.contains("[pytest]"));
    let tests = python_test_files(root);
    if pytest_config && !tests.is_empty() {
        return picked("python3 -m pytest -q", "pytest is configured");
    }
    python_unittest(&tests)
}

/// Whether a Makefile defines `target` (a rule line `target:` or `target :`, not `:=`).
fn has_make_target(makefile: &str, target: &str) -> bool {
    makefile.lines().any(|line| {
        let Some(rest) = line.strip_prefix(target) else {
            return false;
        };
        let rest = rest.trim_start();
        rest.starts_with(':') && !rest.starts_with(":=")
    })
}

/// Whether `package.json` has a `test` script other than npm's placeholder.
fn npm_test_script(package: &str) -> bool {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(package) else {
        return false;
    };
    value
        .pointer("/scripts/test")
        .and_then(serde_json::Value::as_str)
        .is_some_and(|script| !script.contains("no test specified"))
}

/// The repository's Python test files (relative paths), by the two naming habits.
fn python_test_files(root: &Path) -> Vec<String> {
    let Ok(rules) = crate::tools::walk::Rules::new(root) else {
        return Vec::new();
    };
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    crate::tools::walk::walk(&root, &rules, None)
        .take(MAX_SCAN)
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .filter_map(|e| {
            let rel = e.path().strip_prefix(&root).ok()?.to_str()?.to_string();
            let name = e.file_name().to_str()?;
            let is_test =
                name.ends_with(".py") && (name.starts_with("test_") || name.ends_with("_test.py"));
            is_test.then_some(rel)
        })
        .collect()
}

/// `python3 -m unittest discover` for `tests`: started in their common top directory when
/// they share one, with the pattern that matches every one of them.
fn python_unittest(tests: &[String]) -> Option<Picked> {
    if tests.is_empty() {
        return None;
    }
    let name = |path: &String| path.rsplit('/').next().unwrap_or(path).to_string();
    let prefixed = tests.iter().any(|p| name(p).starts_with("test_"));
    let suffixed = tests.iter().any(|p| name(p).ends_with("_test.py"));
    let pattern = match (prefixed, suffixed) {
        (true, false) => "test_*.py",
        (false, true) => "*_test.py",
        _ => "*test*.py",
    };
    let top = |path: &String| path.split_once('/').map(|(dir, _)| dir.to_string());
    let start = match top(&tests[0]) {
        Some(dir)
            if tests
                .iter()
                .all(|p| top(p).as_deref() == Some(dir.as_str())) =>
        {
            dir
        }
        _ => ".".to_string(),
    };
    let command = format!("python3 -m unittest discover -s {start} -p '{pattern}'");
    Some(Picked {
        command,
        because: format!("{} Python test file(s) named {pattern}", tests.len()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::engine::testing::repo;

    fn finished(verdict: CheckVerdict, exit_code: i32, output: &str) -> CheckRun {
        CheckRun {
            command: "python3 -m unittest".into(),
            exit_code: Some(exit_code),
            verdict,
            note: String::new(),
            wall_ms: 100,
            output: output.into(),
        }
    }

    #[test]
    fn a_run_of_no_test_is_told_whatever_its_exit_code() {
        let none = "\n----------------------------------------------------------------------\nRan 0 tests in 0.000s\n\nNO TESTS RAN\n";
        // Python 3.11 exits 0 (the verdict says so), 3.12 exits 5 (only its words do).
        assert!(ran_no_test(&finished(CheckVerdict::NoTests, 0, none)));
        assert!(ran_no_test(&finished(CheckVerdict::Failed, 5, none)));
        assert!(!ran_tests(&finished(CheckVerdict::Failed, 5, none)));
        let some = "..F\n----------------------------------------------------------------------\nRan 3 tests in 0.001s\n\nFAILED (failures=1)\n";
        assert!(!ran_no_test(&finished(CheckVerdict::Failed, 1, some)));
        assert!(ran_tests(&finished(CheckVerdict::Failed, 1, some)));
        // A build that failed before any test ran neither ran tests nor reported none.
        let broken = "error[E0425]: cannot find value `x` in this scope\n";
        assert!(!ran_no_test(&finished(CheckVerdict::Failed, 101, broken)));
        assert!(!ran_tests(&finished(CheckVerdict::Failed, 101, broken)));
    }

    #[test]
    fn a_run_is_worse_when_it_runs_no_test_or_passes_fewer() {
        let two_of_seven = "FFFF..F\n----------------------------------------------------------------------\nRan 7 tests in 0.002s\n\nFAILED (failures=5)\n";
        let before = Standing::of(&finished(CheckVerdict::Failed, 1, two_of_seven));
        assert_eq!(before.passed, Some(2));
        assert!(before.can_lose());
        // Seed 3, 08: a whole-file write that dropped `class Item`, so no test module loaded.
        let broken = "EEE\n----------------------------------------------------------------------\nRan 3 tests in 0.001s\n\nFAILED (errors=3)\n";
        assert_eq!(
            before.worse(&finished(CheckVerdict::Failed, 1, broken)),
            Some(Worse::Fewer {
                before: 2,
                after: 0
            })
        );
        // A crash before the runner counted anything, and a hang, pass none.
        let crashed = "Traceback (most recent call last):\nSyntaxError: invalid syntax\n";
        assert!(before
            .worse(&finished(CheckVerdict::Failed, 1, crashed))
            .is_some());
        assert!(before
            .worse(&finished(CheckVerdict::TimedOut, 137, ""))
            .is_some());
        let none = "Ran 0 tests in 0.000s\n\nOK\n";
        assert_eq!(
            before.worse(&finished(CheckVerdict::NoTests, 0, none)),
            Some(Worse::NoTest)
        );
        // As many or more passing is not worse, whatever else failed.
        let three = "Ran 7 tests in 0.002s\n\nFAILED (failures=4)\n";
        let other_two = "Ran 7 tests in 0.002s\n\nFAILED (errors=1, failures=4)\n";
        assert_eq!(
            before.worse(&finished(CheckVerdict::Failed, 1, three)),
            None
        );
        assert_eq!(
            before.worse(&finished(CheckVerdict::Failed, 1, other_two)),
            None
        );
        // A check that could not start says nothing about the change.
        assert_eq!(before.worse(&finished(CheckVerdict::NotRun, 1, "")), None);
        // Before any test passed, nothing can be lost but the tests themselves.
        let all_failing = Standing::of(&finished(
            CheckVerdict::Failed,
            1,
            "Ran 2 tests in 0.001s\n\nFAILED (failures=2)\n",
        ));
        assert_eq!(
            all_failing.worse(&finished(CheckVerdict::Failed, 1, crashed)),
            None
        );
        // A build check that prints no count has nothing to lose.
        let build = Standing::of(&finished(CheckVerdict::Passed, 0, "built\n"));
        assert!(!build.can_lose());
        assert_eq!(
            build.worse(&finished(CheckVerdict::Failed, 2, "error\n")),
            None
        );
    }

    fn picked(files: &[(&str, &str)]) -> Option<String> {
        auto(repo(files).path()).map(|p| p.command)
    }

    #[test]
    fn auto_picks_each_ecosystems_command() {
        type Case<'a> = (&'a [(&'a str, &'a str)], Option<&'a str>);
        let cases: [Case<'_>; 10] = [
            (
                &[("Makefile", "all:\n\tcc x.c\ntest: all\n\t./t\n")],
                Some("make test"),
            ),
            (&[("Makefile", "test := 1\nall:\n")], None),
            (
                &[("Cargo.toml", "[package]\nname='x'\n")],
                Some("cargo test"),
            ),
            (&[("go.mod", "module x\n")], Some("go test ./...")),
            (
                &[("package.json", r#"{"scripts":{"test":"jest"}}"#)],
                Some("npm test"),
            ),
            (
                &[(
                    "package.json",
                    r#"{"scripts":{"test":"echo \"Error: no test specified\" && exit 1"}}"#,
                )],
                None,
            ),
            (
                &[("pytest.ini", "[pytest]\n"), ("tests/test_a.py", "")],
                Some("python3 -m pytest -q"),
            ),
            (
                &[("stats.py", ""), ("test_stats.py", "")],
                Some("python3 -m unittest discover -s . -p 'test_*.py'"),
            ),
            (
                &[("greet.py", ""), ("greet_test.py", "")],
                Some("python3 -m unittest discover -s . -p '*_test.py'"),
            ),
            (&[("README.md", "hello\n")], None),
        ];
        for (files, want) in cases {
            assert_eq!(picked(files).as_deref(), want, "{files:?}");
        }
    }

    #[test]
    fn auto_starts_unittest_where_the_tests_are_and_matches_both_habits() {
        let files = [
            ("inventory/stock.py", ""),
            ("tests/test_stock.py", ""),
            ("tests/order_test.py", ""),
        ];
        assert_eq!(
            picked(&files).as_deref(),
            Some("python3 -m unittest discover -s tests -p '*test*.py'")
        );
    }

    #[test]
    fn ignored_files_do_not_make_a_check() {
        let files = [(".gitignore", "build/\n"), ("build/test_gen.py", "")];
        assert_eq!(picked(&files), None);
    }

    #[test]
    fn failures_come_first_and_the_summary_stays() {
        let mut output = String::from("test_a ... FAIL\nAssertionError: 1 != 2\n");
        for i in 0..500 {
            output.push_str(&format!("noise line {i}\n"));
        }
        output.push_str("Ran 3 tests in 0.01s\nFAILED (failures=1)\n");
        let cut = failures_first(&output, 1024);
        assert!(cut.len() <= 1024, "{}", cut.len());
        assert!(
            cut.starts_with("[failures]\ntest_a ... FAIL\nAssertionError: 1 != 2\n"),
            "{cut}"
        );
        assert!(cut.ends_with("FAILED (failures=1)"), "{cut}");
        assert_eq!(failures_first("short\n", 1024), "short");
    }
}
