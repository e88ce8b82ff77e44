//! What a test runner's output says about how many tests it ran.
//!
//! A runner that finds no test usually exits 0: `python3 -m unittest` prints `Ran 0 tests`
//! when the files are named `<module>_test.py`, `go test` says `[no test files]`, `cargo test`
//! runs `0 tests` in every binary. Such a run proves nothing, so neither the check nor the
//! claims check may count it as a pass. The rules read the closing lines of the common
//! runners; output that has none of them says nothing either way.

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
}
