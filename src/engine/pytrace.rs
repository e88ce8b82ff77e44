//! Which of the workspace's own functions each failing test ran: the check's trace.
//!
//! The check says *that* a test fails, and its traceback names the test's own line
//! (`self.assertEqual(self.store.quantity("pen"), 5)`), never the library code that went
//! wrong. On a task with four bugs in three files the 1.5B fixed the file it had already
//! touched, round after round, and once added the failing test's *name* as a method of the
//! wrong class (`Item.cents_are_two_digits`). Fault localisation is what program-repair
//! tools give a model for this: which code the failing tests ran.
//!
//! For the check's run at a round's start the engine puts [`HOOK`] first on `PYTHONPATH` as
//! `sitecustomize`. It records, for every call of a function defined in a workspace file that
//! is not a test file, the `test*` function of a test file on the stack, and writes the pairs
//! as JSON at exit into the run's scratch directory (writable in the sandbox, removed after
//! the run). The engine reads that back, bounded, matches the tests to the failures the
//! runner printed (unittest and pytest), and the observation says, per failing test, the
//! functions and their lines. A command that is not Python, or sets its own `PYTHONPATH`,
//! simply leaves no trace. The check's code can write the file itself: it is only ever text
//! for the worker, bounded, with each name reduced to a plain identifier-like word.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;

/// The hook, written as `sitecustomize.py` for the traced run.
pub const HOOK: &str = include_str!("pytrace.py");

/// The hook's directory inside the run's scratch directory.
const DIR: &str = "ralph-pytrace";
/// Most bytes of trace read back.
const MAX_TRACE_BYTES: u64 = 512 * 1024;
/// Most failing tests named in the observation.
const MAX_TESTS: usize = 6;
/// Most functions named for one test.
const MAX_RAN: usize = 8;
/// Most bytes of the observation's section.
pub const SECTION_BYTES: usize = 1200;

/// One function of the workspace a test ran: its file, name and lines.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Ran(pub String, pub String, pub u32, pub u32);

/// One test and the workspace's functions it ran, in the order it first called them.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct TestRan {
    pub file: String,
    /// Its qualified name: `StoreTest.test_add`, or `test_add`.
    pub test: String,
    pub ran: Vec<Ran>,
}

#[derive(Deserialize)]
struct TraceFile {
    tests: Vec<TestRan>,
}

/// Sets `cmd` up to be traced: the hook written into `scratch`, first on `PYTHONPATH`, told
/// where the workspace is and where to write. Where it will write.
pub fn arm(cmd: &mut Command, scratch: &Path, workspace: &Path) -> std::io::Result<PathBuf> {
    let dir = scratch.join(DIR);
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("sitecustomize.py"), HOOK)?;
    let mut path = dir.clone().into_os_string();
    // The PYTHONPATH the command would run with: its own, else the one it inherits.
    let before = cmd
        .get_envs()
        .find(|(name, _)| *name == "PYTHONPATH")
        .map_or_else(
            || std::env::var_os("PYTHONPATH"),
            |(_, v)| v.map(ToOwned::to_owned),
        );
    if let Some(before) = before.filter(|p| !p.is_empty()) {
        path.push(":");
        path.push(before);
    }
    let out = dir.join("trace.json");
    cmd.env("PYTHONPATH", path)
        .env("RALPH_PYTRACE_OUT", &out)
        .env("RALPH_PYTRACE_ROOT", workspace);
    Ok(out)
}

/// The trace the hook wrote at `out`, when it wrote one that parses (bounded).
pub fn collect(out: &Path) -> Vec<TestRan> {
    let Ok(file) = std::fs::File::open(out) else {
        return Vec::new();
    };
    let len = file.metadata().map_or(0, |m| m.len());
    crate::tools::confined::read_bounded(file, len, MAX_TRACE_BYTES)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<TraceFile>(&bytes).ok())
        .map_or_else(Vec::new, |t| t.tests)
}

/// A test the runner's output says failed: its name, and where it is as the runner wrote it
/// (unittest's dotted `module.Class.test`, pytest's `tests/x.py::Class::test`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Failed<'o> {
    name: &'o str,
    place: &'o str,
}

/// The failing tests named in `output`, each once, in order.
fn failed(output: &str) -> Vec<Failed<'_>> {
    let mut found: Vec<Failed<'_>> = Vec::new();
    for line in output.lines() {
        let one = unittest_failure(line).or_else(|| pytest_failure(line));
        if let Some(f) = one.filter(|f| !found.contains(f)) {
            found.push(f);
        }
    }
    found
}

/// `FAIL: test_x (module.Class.test_x)`, unittest's heading of a failure or an error.
fn unittest_failure(line: &str) -> Option<Failed<'_>> {
    let rest = line
        .strip_prefix("FAIL: ")
        .or_else(|| line.strip_prefix("ERROR: "))?;
    let (name, place) = rest.split_once(" (")?;
    Some(Failed {
        name: name.trim(),
        place: place.strip_suffix(')')?,
    })
}

/// `FAILED tests/x.py::Class::test_x - AssertionError`, pytest's summary line.
fn pytest_failure(line: &str) -> Option<Failed<'_>> {
    let rest = line
        .strip_prefix("FAILED ")
        .or_else(|| line.strip_prefix("ERROR "))?;
    let id = rest.split(" - ").next()?.trim();
    let (_, name) = id.rsplit_once("::")?;
    let name = name.split('[').next()?;
    Some(Failed { name, place: id })
}

impl Failed<'_> {
    /// Whether the traced `test` is this failure.
    fn is(&self, test: &TestRan) -> bool {
        let name = test.test.rsplit('.').next().unwrap_or(&test.test);
        if name != self.name {
            return false;
        }
        if self.place.contains("::") {
            let file = self.place.split("::").next().unwrap_or_default();
            let class = test.test.rsplit_once('.').map(|(class, _)| class);
            return (test.file.ends_with(file) || file.ends_with(&test.file))
                && class.is_none_or(|c| self.place.contains(&format!("::{c}::")));
        }
        let stem = Path::new(&test.file)
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        self.place.split('.').any(|part| part == stem)
    }
}

/// A name or path from the trace, as the worker is shown it: the characters a Python
/// identifier, a qualified name or a relative path use, or `None`.
fn plain(word: &str) -> Option<&str> {
    let ok = !word.is_empty()
        && word.len() <= 200
        && word
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '/' | '-' | '<' | '>'));
    ok.then_some(word)
}

/// The observation's section: for each failing test `output` names (at most
/// [`MAX_TESTS`]), the workspace functions the trace says it ran, grouped by file, within
/// [`SECTION_BYTES`]. Empty when no failing test was traced.
pub fn describe(traced: &[TestRan], output: &str) -> String {
    let mut lines = Vec::new();
    for failure in failed(output) {
        if lines.len() >= MAX_TESTS {
            break;
        }
        let Some(test) = traced.iter().find(|t| failure.is(t)) else {
            continue;
        };
        let (Some(name), Some(file)) = (plain(failure.name), plain(&test.file)) else {
            continue;
        };
        let ran = functions(&test.ran);
        if ran.is_empty() {
            continue;
        }
        lines.push(format!("- {name} ({file}): {ran}"));
    }
    if lines.is_empty() {
        return String::new();
    }
    let mut text = String::from(
        "The code of the workspace each failing test ran (traced by ralph-tui during the check; test files left out). What makes the test fail is in these lines:\n",
    );
    for line in lines {
        if text.len() + line.len() + 1 > SECTION_BYTES {
            text.push_str("- … (more failing tests: see the check's output)\n");
            break;
        }
        text.push_str(&line);
        text.push('\n');
    }
    text
}

/// `inventory/store.py Store.add (lines 9-14), Store.quantity (lines 24-26); inventory/…`:
/// the functions grouped by file in the order first run.
fn functions(ran: &[Ran]) -> String {
    let mut files: Vec<(&str, Vec<String>)> = Vec::new();
    for Ran(file, name, first, last) in ran.iter().take(MAX_RAN) {
        let (Some(file), Some(name)) = (plain(file), plain(name)) else {
            continue;
        };
        let lines = if last > first {
            format!("lines {first}-{last}")
        } else {
            format!("line {first}")
        };
        let entry = format!("{name} ({lines})");
        match files.iter_mut().find(|(f, _)| *f == file) {
            Some((_, names)) => names.push(entry),
            None => files.push((file, vec![entry])),
        }
    }
    let mut text = files
        .iter()
        .map(|(file, names)| format!("{file} {}", names.join(", ")))
        .collect::<Vec<_>>()
        .join("; ");
    if ran.len() > MAX_RAN && !text.is_empty() {
        text.push_str(&format!("; and {} more", ran.len() - MAX_RAN));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ran(file: &str, name: &str, first: u32, last: u32) -> Ran {
        Ran(file.into(), name.into(), first, last)
    }

    use crate::engine::testing::repo as workspace;

    fn inventory() -> Vec<TestRan> {
        vec![
            TestRan {
                file: "tests/test_items.py".into(),
                test: "ItemTest.test_total".into(),
                ran: vec![ran("inventory/items.py", "Item.total_cents", 11, 13)],
            },
            TestRan {
                file: "tests/test_store.py".into(),
                test: "StoreTest.test_adding_twice_adds_up".into(),
                ran: vec![
                    ran("inventory/store.py", "Store.__init__", 5, 7),
                    ran("inventory/store.py", "Store.add", 9, 14),
                    ran("inventory/store.py", "Store.quantity", 24, 26),
                ],
            },
            TestRan {
                file: "tests/test_store.py".into(),
                test: "StoreTest.test_remove".into(),
                ran: vec![ran("inventory/store.py", "Store.remove", 16, 22)],
            },
        ]
    }

    #[test]
    fn unittest_failures_are_named_with_what_they_ran() {
        let output = "F.F\n======\nFAIL: test_total (test_items.ItemTest.test_total)\n------\nAssertionError: 154 != 600\n======\nFAIL: test_adding_twice_adds_up (test_store.StoreTest.test_adding_twice_adds_up)\n------\nRan 3 tests in 0.001s\n\nFAILED (failures=2)\n";
        let text = describe(&inventory(), output);
        assert!(
            text.contains("- test_total (tests/test_items.py): inventory/items.py Item.total_cents (lines 11-13)\n"),
            "{text}"
        );
        assert!(text.contains("- test_adding_twice_adds_up (tests/test_store.py): inventory/store.py Store.__init__ (lines 5-7), Store.add (lines 9-14), Store.quantity (lines 24-26)\n"), "{text}");
        // The passing test is not named.
        assert!(!text.contains("test_remove"), "{text}");
    }

    #[test]
    fn older_unittest_headings_and_pytest_summaries_are_read() {
        // Python before 3.11 writes `test_x (module.Class)`.
        let old = "FAIL: test_total (test_items.ItemTest)\n";
        assert!(describe(&inventory(), old).contains("Item.total_cents"));
        let pytest = "=== short test summary info ===\nFAILED tests/test_store.py::StoreTest::test_remove - AssertionError: 1 != 0\n";
        let text = describe(&inventory(), pytest);
        assert!(text.contains("- test_remove (tests/test_store.py): inventory/store.py Store.remove (lines 16-22)"), "{text}");
        // A pytest id of another file or class is not this test.
        let other = "FAILED tests/test_other.py::test_remove\nFAILED tests/test_store.py::OtherTest::test_remove\n";
        assert_eq!(describe(&inventory(), other), "");
    }

    #[test]
    fn nothing_is_said_without_a_traced_failure() {
        assert_eq!(describe(&inventory(), "Ran 3 tests\n\nOK\n"), "");
        assert_eq!(
            describe(&[], "FAIL: test_total (test_items.ItemTest.test_total)\n"),
            ""
        );
        // An import error is not a test the trace knows.
        let import = "ERROR: test_items (unittest.loader._FailedTest.test_items)\n";
        assert_eq!(describe(&inventory(), import), "");
    }

    #[test]
    fn the_section_stays_bounded_and_names_stay_plain() {
        let many: Vec<TestRan> = (0..40)
            .map(|i| TestRan {
                file: "tests/test_big.py".into(),
                test: format!("BigTest.test_{i}"),
                ran: (0..30)
                    .map(|j| ran("lib/big_module_name.py", &format!("function_{j}"), j, j + 9))
                    .collect(),
            })
            .collect();
        let output: String = (0..40)
            .map(|i| format!("FAIL: test_{i} (test_big.BigTest.test_{i})\n"))
            .collect();
        let text = describe(&many, &output);
        assert!(text.len() <= SECTION_BYTES + 64, "{}", text.len());
        assert!(text.contains("and 22 more"), "{text}");
        assert!(text.lines().count() <= MAX_TESTS + 2, "{text}");
        // A name written by the check's own code with a terminal escape is left out.
        let forged = vec![TestRan {
            file: "tests/test_items.py".into(),
            test: "ItemTest.test_total".into(),
            ran: vec![
                ran("inventory/items.py", "evil\u{1b}[2J", 1, 2),
                ran("inventory/items.py", "Item.total_cents", 11, 13),
            ],
        }];
        let text = describe(
            &forged,
            "FAIL: test_total (test_items.ItemTest.test_total)\n",
        );
        assert!(!text.contains('\u{1b}'), "{text}");
        assert!(text.contains("Item.total_cents"), "{text}");
    }

    #[test]
    fn a_trace_file_is_read_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("trace.json");
        assert!(collect(&out).is_empty());
        std::fs::write(&out, "{\"tests\": [{\"file\": \"tests/test_a.py\", \"test\": \"test_a\", \"ran\": [[\"a.py\", \"f\", 1, 3]]}]}").unwrap();
        assert_eq!(collect(&out)[0].ran, vec![ran("a.py", "f", 1, 3)]);
        std::fs::write(&out, "not json").unwrap();
        assert!(collect(&out).is_empty());
        let huge = format!("{{\"tests\": [], \"pad\": \"{}\"}}", "x".repeat(600 * 1024));
        std::fs::write(&out, huge).unwrap();
        assert!(collect(&out).is_empty());
    }

    /// The hook itself, in a real Python: a test's calls into the workspace's code are
    /// traced (the tests' own helpers left out), nothing is printed, and a `sitecustomize`
    /// it shadows still runs.
    #[test]
    fn the_hook_traces_what_each_test_calls_and_keeps_the_shadowed_sitecustomize() {
        let work = workspace(&[
            ("lib/__init__.py", ""),
            (
                "lib/calc.py",
                "def add(a, b):\n    return minus(a, -b)\n\n\ndef minus(a, b):\n    return a - b\n",
            ),
            (
                "tests/test_calc.py",
                "import unittest\nfrom lib.calc import add\n\n\ndef helper():\n    return 5\n\n\nclass CalcTest(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), helper())\n",
            ),
        ]);
        let root = work.path();
        let scratch = tempfile::tempdir().unwrap();
        let theirs = tempfile::tempdir().unwrap();
        let marker = theirs.path().join("ran");
        std::fs::write(
            theirs.path().join("sitecustomize.py"),
            format!("open({:?}, 'w').write('yes')\n", marker.to_str().unwrap()),
        )
        .unwrap();
        let mut cmd = Command::new("python3");
        cmd.args(["-m", "unittest", "discover", "-s", "tests"])
            .current_dir(root)
            .env("PYTHONPATH", theirs.path());
        let out = arm(&mut cmd, scratch.path(), root).unwrap();
        let done = cmd.output().unwrap();
        assert!(
            done.status.success(),
            "{}",
            String::from_utf8_lossy(&done.stderr)
        );
        assert!(done.stdout.is_empty());
        let stderr = String::from_utf8_lossy(&done.stderr);
        assert!(
            stderr.contains("Ran 1 test") && stderr.ends_with("OK\n"),
            "{stderr}"
        );
        assert_eq!(std::fs::read_to_string(&marker).unwrap(), "yes");
        let traced = collect(&out);
        assert_eq!(
            traced,
            vec![TestRan {
                file: "tests/test_calc.py".into(),
                test: "CalcTest.test_add".into(),
                ran: vec![
                    ran("lib/calc.py", "add", 1, 2),
                    ran("lib/calc.py", "minus", 5, 6)
                ],
            }]
        );
    }

    /// Past its bound of profile events the hook takes itself off: a test run after that is
    /// not traced (the bound is lowered here; the check runs with three million).
    #[test]
    fn the_hook_stops_past_its_bound() {
        let work = workspace(&[
            (
                "lib.py",
                "def first():\n    return 1\n\n\ndef second():\n    return 2\n",
            ),
            (
                "tests/test_lib.py",
                "import unittest\nfrom lib import first, second\n\n\nclass LibTest(unittest.TestCase):\n    def test_a(self):\n        self.assertEqual(first(), 1)\n        for _ in range(200000):\n            len([])\n\n    def test_b(self):\n        self.assertEqual(second(), 2)\n",
            ),
        ]);
        let root = work.path();
        let scratch = tempfile::tempdir().unwrap();
        let traced = |bound: &str| {
            let mut cmd = Command::new("python3");
            cmd.args(["-m", "unittest", "discover", "-s", "tests"])
                .current_dir(root)
                .env("RALPH_PYTRACE_MAX_EVENTS", bound);
            let out = arm(&mut cmd, scratch.path(), root).unwrap();
            assert!(cmd.output().unwrap().status.success());
            collect(&out)
                .into_iter()
                .map(|t| t.test)
                .collect::<Vec<_>>()
        };
        assert_eq!(traced("3000000"), ["LibTest.test_a", "LibTest.test_b"]);
        assert_eq!(traced("200000"), ["LibTest.test_a"]);
    }
}
