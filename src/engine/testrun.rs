//! What a test runner's output says about how many tests it ran.
//!
//! A runner that finds no test usually exits 0: `python3 -m unittest` prints `Ran 0 tests`
//! when the files are named `<module>_test.py`, `go test` says `[no test files]`, `cargo test`
//! runs `0 tests` in every binary. Such a run proves nothing, so neither the check nor the
//! claims check may count it as a pass. The rules read the closing lines of the common
//! runners; output that has none of them says nothing either way.

/// `output` with the runners' timings left out: `Ran 4 tests in 0.004s` is `Ran 4 tests`,
/// `finished in 0.00s`, `--- FAIL: TestX (0.00s)` and go's `ok  pkg  0.003s` lose their
/// times. The worker is shown the check's output; a time in it made the same workspace give a
/// different prompt (seed 1, 09 at `34e1764`: the round-start check said `in 0.004s` where
/// it had said `in 0.000s`, and the run took another path from its second turn on).
pub fn timeless(output: &str) -> std::borrow::Cow<'_, str> {
    static TIMES: std::sync::OnceLock<Vec<regex::Regex>> = std::sync::OnceLock::new();
    let times = TIMES.get_or_init(|| {
        [
            // unittest, pytest, cargo's `finished in` and `target(s) in`.
            r" in \d+(?:\.\d+)?\s?m?s\b",
            // go's and pytest's per-test `(0.00s)`.
            r" \(\d+(?:\.\d+)?\s?m?s\)",
            // go's package lines: `ok  \tpkg\t0.003s`, `FAIL\tpkg\t0.004s`.
            r"(?m)^((?:ok|FAIL)\s+\S+)\s+\d+(?:\.\d+)?s$",
        ]
        .iter()
        .filter_map(|re| regex::Regex::new(re).ok())
        .collect()
    });
    let mut text = std::borrow::Cow::Borrowed(output);
    for (i, re) in times.iter().enumerate() {
        let replacement = if i == 2 { "$1" } else { "" };
        if let std::borrow::Cow::Owned(changed) = re.replace_all(&text, replacement) {
            text = std::borrow::Cow::Owned(changed);
        }
    }
    text
}

/// Why `output` shows a test run that ran no test, when it does (`None`: it ran some, or
/// the output is not a test runner's).
pub fn ran_no_test(output: &str) -> Option<&'static str> {
    let mut cargo_suites = 0u32;
    let mut cargo_tests = 0u64;
    let mut unittest_runs = 0u32;
    let mut unittest_tests = 0u64;
    for line in output.lines() {
        let line = line.trim();
        if let Some(n) = count_between(line, "running ", " test") {
            cargo_suites += 1;
            cargo_tests = cargo_tests.saturating_add(n);
        }
        if let Some(n) = count_between(line, "Ran ", " test") {
            unittest_runs += 1;
            unittest_tests = unittest_tests.saturating_add(n);
        }
        let lower = line.to_ascii_lowercase();
        if lower.starts_with("collected 0 items")
            || (lower.contains("no tests ran") && line.contains("=="))
        {
            return Some("pytest collected no test");
        }
        if lower.ends_with("[no test files]") || lower.contains("no tests to run") {
            return Some("go test found no test");
        }
        if lower.starts_with("no tests found") || lower.contains("error: no test specified") {
            return Some("the test script found no test");
        }
        // `python3 -m doctest -v` closes with `N tests in M items.` (without -v a doctest
        // that finds none prints nothing at all, like one that passes).
        if count_between(line, "", " tests in ").is_some_and(|n| n == 0) && line.ends_with("items.")
        {
            return Some("doctest ran 0 tests");
        }
    }
    if unittest_runs > 0 && unittest_tests == 0 {
        return Some("unittest ran 0 tests");
    }
    if cargo_suites > 0 && cargo_tests == 0 {
        return Some("cargo test ran 0 tests");
    }
    None
}

/// Whether `output` shows a test run that ran at least one test, in the closing or counting
/// lines of the common runners (`Ran 3 tests`, `running 2 tests`, `collected 4 items`,
/// `2 tests in 2 items.`, go's `--- PASS`). Output that has none of them says no.
pub fn ran_some_test(output: &str) -> bool {
    output.lines().map(str::trim).any(|line| {
        let counted =
            |prefix: &str, suffix: &str| count_between(line, prefix, suffix).is_some_and(|n| n > 0);
        counted("Ran ", " test")
            || counted("running ", " test")
            || counted("collected ", " item")
            || (counted("", " tests in ") && line.ends_with("items."))
            || counted("***Test Failed*** ", " failure")
            || line.starts_with("--- PASS")
            || line.starts_with("--- FAIL")
    })
}

/// How many tests `output` shows passing, from the closing lines of the common runners:
/// unittest's `Ran N tests` less the failures, errors and skips of its `FAILED (...)`,
/// pytest's `N passed` in its summary line, cargo's `test result: ... N passed;` summed over
/// its suites, `python3 -m doctest -v`'s `N passed and M failed.`, go's `--- PASS` lines.
/// `None`: the output has none of them (not a test runner's, or one that stopped before its
/// count: a build error, a crash on import).
pub fn passed(output: &str) -> Option<u64> {
    let mut unittest: Option<u64> = None;
    let mut unittest_not_passed = 0u64;
    let mut cargo: Option<u64> = None;
    let mut pytest: Option<u64> = None;
    let mut doctest: Option<u64> = None;
    let mut go: Option<u64> = None;
    for line in output.lines().map(str::trim) {
        if let Some(n) = count_between(line, "Ran ", " test") {
            unittest = Some(unittest.unwrap_or(0).saturating_add(n));
        }
        if let Some(counts) = line
            .strip_prefix("FAILED (")
            .or_else(|| line.strip_prefix("OK ("))
            .and_then(|rest| rest.strip_suffix(')'))
        {
            for (key, n) in counts.split(", ").filter_map(|part| part.split_once('=')) {
                if matches!(
                    key,
                    "failures" | "errors" | "skipped" | "unexpected successes"
                ) {
                    unittest_not_passed =
                        unittest_not_passed.saturating_add(n.parse().unwrap_or(0));
                }
            }
        }
        if let Some(rest) = line.strip_prefix("test result: ") {
            let n = number_before(rest, " passed").unwrap_or(0);
            cargo = Some(cargo.unwrap_or(0).saturating_add(n));
        }
        if is_pytest_summary(line) {
            pytest = Some(number_before(line, " passed").unwrap_or(0));
        }
        if let Some(n) = count_between(line, "", " passed and ") {
            doctest = Some(doctest.unwrap_or(0).saturating_add(n));
        }
        if line.starts_with("--- PASS") || line.starts_with("--- FAIL") {
            let n = u64::from(line.starts_with("--- PASS"));
            go = Some(go.unwrap_or(0).saturating_add(n));
        }
    }
    unittest
        .map(|ran| ran.saturating_sub(unittest_not_passed))
        .or(pytest)
        .or(cargo)
        .or(doctest)
        .or(go)
}

/// Whether `line` is pytest's closing summary: counts of kinds, then the time
/// (`==== 2 failed, 5 passed, 1 warning in 0.12s ====`, or `5 passed in 0.02s` with `-q`).
fn is_pytest_summary(line: &str) -> bool {
    const KINDS: [&str; 11] = [
        "passed",
        "failed",
        "error",
        "errors",
        "skipped",
        "xfailed",
        "xpassed",
        "warning",
        "warnings",
        "deselected",
        "rerun",
    ];
    let line = line.trim_matches(|c| c == '=' || c == ' ');
    let Some((counts, time)) = line.rsplit_once(" in ") else {
        return false;
    };
    let timed = time
        .split_whitespace()
        .next()
        .and_then(|t| t.strip_suffix('s'))
        .is_some_and(|t| t.parse::<f64>().is_ok());
    timed
        && counts.split(", ").all(|part| {
            part.split_once(' ')
                .is_some_and(|(n, kind)| n.parse::<u64>().is_ok() && KINDS.contains(&kind))
        })
}

/// The number written just before `word` in `line` (`3` in `ok. 3 passed; 0 failed`).
fn number_before(line: &str, word: &str) -> Option<u64> {
    let (before, _) = line.split_once(word)?;
    before.split_whitespace().last()?.parse().ok()
}

/// The number in `line` when it is `PREFIX<N><SUFFIX>...` (`Ran 3 tests in 0.01s`).
fn count_between(line: &str, prefix: &str, suffix: &str) -> Option<u64> {
    let rest = line.strip_prefix(prefix)?;
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    if digits == 0 || !rest[digits..].starts_with(suffix) {
        return None;
    }
    rest[..digits].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_runs_of_each_runner_are_named() {
        let cases = [
            ("\n----------------------------------------------------------------------\nRan 0 tests in 0.000s\n\nNO TESTS RAN\n", "unittest"),
            ("Ran 0 tests in 0.000s\n\nOK\n", "unittest"),
            ("dt.f\n0 tests in 2 items.\n0 passed and 0 failed.\nTest passed.\n", "doctest"),
            ("============================= test session starts ==\ncollected 0 items\n\n=== no tests ran in 0.01s ===\n", "pytest"),
            ("?   \texample.com/m\t[no test files]\n", "go test"),
            ("testing: warning: no tests to run\nPASS\n", "go test"),
            ("running 0 tests\n\ntest result: ok. 0 passed; 0 failed\n\n   Doc-tests m\n\nrunning 0 tests\n", "cargo"),
            ("Error: no test specified\n", "test script"),
        ];
        for (output, runner) in cases {
            let why = ran_no_test(output).unwrap_or_else(|| panic!("{runner}: {output}"));
            assert!(why.contains(runner.split(' ').next().unwrap()), "{why}");
        }
    }

    #[test]
    fn runs_that_ran_a_test_are_told_from_runs_that_ran_none() {
        for output in [
            "..F\n----------------------------------------------------------------------\nRan 3 tests in 0.001s\n\nFAILED (failures=1)\n",
            "running 2 tests\ntest a ... FAILED\n",
            "collected 4 items\n\ntest_x.py ..F.\n",
            "Trying:\n    f()\n2 tests in 2 items.\n1 passed and 1 failed.\n",
            "**********\n1 items had failures:\n***Test Failed*** 2 failures.\n",
            "=== RUN   TestA\n--- FAIL: TestA (0.00s)\n",
        ] {
            assert!(ran_some_test(output), "{output}");
        }
        for output in [
            "Ran 0 tests in 0.000s\n\nOK\n",
            "running 0 tests\n\ntest result: ok. 0 passed\n",
            "error[E0425]: cannot find value `x`\n",
            "Hello, world!\n",
            "",
        ] {
            assert!(!ran_some_test(output), "{output}");
        }
    }

    #[test]
    fn runs_that_ran_tests_or_are_not_tests_say_nothing() {
        for output in [
            "...\n----------------------------------------------------------------------\nRan 3 tests in 0.001s\n\nOK\n",
            "running 2 tests\ntest a ... ok\ntest b ... ok\n\n   Doc-tests m\n\nrunning 0 tests\n",
            "collected 4 items\n\ntest_x.py ....\n",
            "2 tests in 2 items.\n2 passed and 0 failed.\nTest passed.\n",
            "ok  \texample.com/m\t0.002s\n",
            "Hello, world!\n",
            "",
        ] {
            assert_eq!(ran_no_test(output), None, "{output}");
        }
    }

    #[test]
    fn passing_tests_are_counted_in_each_runner_s_words() {
        let cases = [
            ("FFFF..F\n----------------------------------------------------------------------\nRan 7 tests in 0.002s\n\nFAILED (failures=5)\n", Some(2)),
            ("EEE\n----------------------------------------------------------------------\nRan 3 tests in 0.001s\n\nFAILED (errors=3)\n", Some(0)),
            ("Ran 4 tests in 0.001s\n\nFAILED (failures=1, errors=1, skipped=1)\n", Some(1)),
            ("Ran 3 tests in 0.001s\n\nOK (skipped=1)\n", Some(2)),
            ("Ran 3 tests in 0.001s\n\nOK\n", Some(3)),
            ("test_x.py ..F.\n=========== 1 failed, 3 passed, 1 warning in 0.12s ===========\n", Some(3)),
            ("=========== 2 errors in 0.05s ===========\n", Some(0)),
            ("5 passed in 0.02s\n", Some(5)),
            ("running 3 tests\ntest result: FAILED. 2 passed; 1 failed; 0 ignored\n\nrunning 1 test\ntest result: ok. 1 passed; 0 failed\n", Some(3)),
            ("2 tests in 2 items.\n1 passed and 1 failed.\n***Test Failed*** 1 failures.\n", Some(1)),
            ("=== RUN   TestA\n--- PASS: TestA (0.00s)\n=== RUN   TestB\n--- FAIL: TestB (0.00s)\n", Some(1)),
            ("error[E0425]: cannot find value `x` in this scope\nerror: could not compile `m`\n", None),
            ("Traceback (most recent call last):\nSyntaxError: invalid syntax\n", None),
            ("Hello, world! passed in 2s\n", None),
            ("", None),
        ];
        for (output, want) in cases {
            assert_eq!(passed(output), want, "{output}");
        }
    }

    #[test]
    fn the_runners_timings_are_left_out_and_nothing_else() {
        let unittest = "F.\n----------------------------------------------------------------------\nRan 2 tests in 0.004s\n\nFAILED (failures=1)\n";
        assert_eq!(
            timeless(unittest),
            "F.\n----------------------------------------------------------------------\nRan 2 tests\n\nFAILED (failures=1)\n"
        );
        assert_eq!(
            timeless("======= 1 failed, 4 passed in 0.12s =======\n"),
            "======= 1 failed, 4 passed =======\n"
        );
        assert_eq!(
            timeless("    Finished `test` profile [unoptimized] target(s) in 0.57s\ntest result: ok. 3 passed; 0 failed; finished in 0.00s\n"),
            "    Finished `test` profile [unoptimized] target(s)\ntest result: ok. 3 passed; 0 failed; finished\n"
        );
        assert_eq!(
            timeless("--- FAIL: TestLeap (0.00s)\nFAIL\texample.com/leap\t0.004s\nok  \texample.com/other\t0.003s\n"),
            "--- FAIL: TestLeap\nFAIL\texample.com/leap\nok  \texample.com/other\n"
        );
        // Output without a runner's time is given as it is, numbers and all.
        let plain = "AssertionError: 154 != 600\nexpected 1.5s timeout in config\n";
        assert!(matches!(timeless(plain), std::borrow::Cow::Borrowed(_)));
        // The counts the check reads stay readable.
        assert_eq!(passed(&timeless(unittest)), passed(unittest));
    }
}
