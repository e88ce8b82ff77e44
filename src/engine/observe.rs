//! The round observation: what the worker would otherwise spend its first turns finding.
//!
//! Before a round's first turn the engine looks at the workspace *now* and gives the child,
//! after the fixed prompt (so the prefix cache holds), three things: the repository's files
//! with their line counts, the check's result, and the whole text of the files most likely
//! to matter (those named in the objective, the previous report or the check's output, then
//! those this run has changed, then the smallest), within a byte budget that leaves the turns
//! and the report their room. A file that does not fit is shown by its head, with a note to
//! read the rest. It is never an earlier round's conversation: only files and the check.
//!
//! Everything here is read the way the file tools read (beneath the root, no symlink
//! followed, regular files only, bounded), and every limit holds whatever the repository
//! holds: a hundred thousand files, binary or huge files, names that are not UTF-8.

use std::collections::BTreeSet;
use std::path::Path;

use crate::chat::listing::fence_for;
use crate::protocol::event::{CheckRun, ObservedFile, Shown};
use crate::protocol::report::Report;
use crate::tools::confined::{Opened, Root};
use crate::tools::walk::{walk, Rules};

/// Most files walked; past it the listing says it stopped.
const MAX_WALKED: usize = 20_000;
/// Most files named in the listing.
const MAX_LISTED: usize = 200;
/// Files larger than this are listed by size, never read.
const MAX_READ_BYTES: u64 = 256 * 1024;
/// The fewest bytes a file's head is shown with; less room than this skips the file.
const MIN_HEAD_BYTES: usize = 400;
/// Most bytes of the check's output in the observation.
const CHECK_OUTPUT_BYTES: usize = 2048;
/// Most bytes of the run's own diff in the observation (taken from the file texts' budget).
const RUN_PATCH_BYTES: usize = 1536;

/// What the observation is made from.
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    pub root: &'a Path,
    pub objective: &'a str,
    pub previous: Option<&'a Report>,
    pub check: Option<&'a CheckRun>,
    /// What the check's failing tests ran of the workspace's own code (`pytrace`), or empty.
    pub check_ran: &'a str,
    /// What the commands the objective names printed at the round's start.
    pub ran: &'a [super::probe::Ran],
    /// Files this run has changed so far (relative paths).
    pub changed: &'a BTreeSet<String>,
    /// What the run has changed so far, as a patch from its first round's start to now
    /// (`None` in the first round, or when nothing changed).
    pub run_patch: Option<&'a str>,
    /// Most bytes of file text to show.
    pub text_budget: usize,
}

/// The observation: its text and what it holds.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Observation {
    pub text: String,
    pub files_listed: u64,
    pub files_unlisted: u64,
    pub shown: Vec<ObservedFile>,
    /// Bytes of the largest file shown whole (the turn must have room to write it back).
    pub largest_whole: usize,
}

/// A file found by the walk.
#[derive(Debug, Clone)]
struct Found {
    path: String,
    bytes: u64,
    /// Its text, when it was read and is text.
    text: Option<String>,
}

impl Found {
    fn lines(&self) -> Option<u64> {
        self.text
            .as_ref()
            .map(|t| t.lines().count().try_into().unwrap_or(u64::MAX))
    }
}

/// Tokens kept beside the observation for the fixed prompt and the turns' tool results.
const KEPT_TOKENS: u32 = 3200;
/// Most tokens of file text, whatever the context: each costs prompt time every round.
const MAX_TEXT_TOKENS: u32 = 3000;
/// Bytes per token assumed for source text (a low estimate, so the budget holds).
const BYTES_PER_TOKEN: u32 = 3;

/// The bytes of file text an observation may show in a context of `ctx_size` tokens whose
/// turns generate up to `max_tokens`: half of what is left after the fixed prompt, the tool
/// results, a turn that writes a shown file back whole, and the report's reserve, and never
/// more than [`MAX_TEXT_TOKENS`].
pub fn text_budget(ctx_size: u32, max_tokens: u32) -> usize {
    let reserve = crate::protocol::report::REPORT_RESERVE_TOKENS
        + crate::protocol::report::TURN_MARGIN_TOKENS;
    let left = ctx_size
        .saturating_sub(KEPT_TOKENS)
        .saturating_sub(max_tokens.saturating_mul(2))
        .saturating_sub(reserve);
    let tokens = (left / 2).min(MAX_TEXT_TOKENS);
    usize::try_from(tokens.saturating_mul(BYTES_PER_TOKEN)).unwrap_or(usize::MAX)
}

/// Looks at the workspace and writes the observation.
pub fn observe(inputs: &Inputs<'_>) -> Observation {
    let (files, walk_stopped) = walk_files(inputs.root);
    let mut out = Observation::default();
    let mut text = String::from(
        "Observation of the workspace now, gathered by ralph-tui before this round (the files as they are, not a report):\n",
    );
    listing(&files, walk_stopped, &mut text, &mut out);
    if let Some(check) = inputs.check {
        text.push('\n');
        text.push_str(&super::check::describe(
            check,
            "at this round's start",
            CHECK_OUTPUT_BYTES,
        ));
        text.push_str(inputs.check_ran);
    } else if !files.iter().any(|f| looks_like_a_test(&f.path)) {
        text.push_str(
            "\nThis repository has no test files: check your work by reading back what you changed (or by running it), not with a test command.\n",
        );
    }
    text.push_str(&super::probe::describe(inputs.ran));
    let patch_bytes = inputs
        .run_patch
        .map_or(0, |patch| run_patch_section(patch, &mut text));
    texts(
        inputs,
        inputs.text_budget.saturating_sub(patch_bytes),
        &files,
        &mut text,
        &mut out,
    );
    out.text = text;
    out
}

/// The run's own changes so far, as a diff bounded at [`RUN_PATCH_BYTES`] (whole lines, the
/// rest counted): a round that starts after the work is done sees that it was done, not only
/// the files as they are. The bytes it took.
fn run_patch_section(patch: &str, text: &mut String) -> usize {
    if patch.trim().is_empty() {
        return 0;
    }
    let shown = head_lines(patch, RUN_PATCH_BYTES);
    let fence = fence_for([shown.as_str()]);
    let start = text.len();
    text.push_str(&format!(
        "\nWhat this run has changed so far (a diff from where its first round started to now):\n{fence}diff\n{shown}"
    ));
    if shown.len() < patch.len() {
        text.push_str(&format!(
            "… ({} more bytes of diff; the files' current texts are below)\n",
            patch.len() - shown.len()
        ));
    }
    text.push_str(&format!("{fence}\n{RUN_PATCH_CLOSE}\n"));
    text.len() - start
}

/// After the run's own diff: the 1.5B, shown a file an earlier round had already fixed,
/// made the fix again from the objective's words (an `old` text no longer there) and
/// reported `continue`, round after round.
pub const RUN_PATCH_CLOSE: &str = "This diff is work that earlier rounds of this run already did. If it already does what the objective asks, do not make it again: check it (read it back, or run it) and report complete. Otherwise change only what is still missing.";

/// Walks the work tree with its ignore rules (tracked and untracked files that are not
/// ignored), reading the text of each regular file small enough; whether the walk stopped
/// at [`MAX_WALKED`].
fn walk_files(root: &Path) -> (Vec<Found>, bool) {
    let Ok(rules) = Rules::new(root) else {
        return (Vec::new(), false);
    };
    let Ok(confined) = Root::open(root) else {
        return (Vec::new(), false);
    };
    let canonical = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let mut files = Vec::new();
    let mut stopped = false;
    for entry in walk(&canonical, &rules, None).filter_map(Result::ok) {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        if files.len() >= MAX_WALKED {
            stopped = true;
            break;
        }
        let Ok(rel) = entry.path().strip_prefix(&canonical) else {
            continue;
        };
        // A name that is not UTF-8 is listed as the tools would show it.
        let path = rel.to_string_lossy().into_owned();
        let (bytes, text) = match confined.open_read(rel) {
            Ok(Opened::File { file, len }) if len <= MAX_READ_BYTES => {
                let read = crate::tools::confined::read_bounded(file, len, MAX_READ_BYTES);
                let text = read
                    .ok()
                    .filter(|b| !crate::tools::read_file::is_binary(b))
                    .and_then(|b| String::from_utf8(b).ok());
                (len, text)
            }
            Ok(Opened::File { len, .. }) => (len, None),
            _ => continue,
        };
        files.push(Found { path, bytes, text });
    }
    (files, stopped)
}

/// Whether a file's path says it holds tests (`tests/`, `test_x.py`, `x_test.go`, `x.test.js`).
fn looks_like_a_test(path: &str) -> bool {
    path.to_ascii_lowercase()
        .split(['/', '.', '_', '-'])
        .any(|part| matches!(part, "test" | "tests" | "spec" | "specs"))
}

/// The file listing: `path (N lines)`, or `path (N bytes, binary)`, bounded.
fn listing(files: &[Found], walk_stopped: bool, text: &mut String, out: &mut Observation) {
    text.push_str("\nFiles:\n");
    if files.is_empty() {
        text.push_str("(none)\n");
    }
    for file in files.iter().take(MAX_LISTED) {
        let path = crate::text::sanitize_line(&file.path);
        match file.lines() {
            Some(lines) => text.push_str(&format!("{path} ({lines} lines)\n")),
            None => text.push_str(&format!(
                "{path} ({} bytes, not shown as text)\n",
                file.bytes
            )),
        }
    }
    let listed = files.len().min(MAX_LISTED);
    out.files_listed = listed as u64;
    out.files_unlisted = (files.len() - listed) as u64;
    if files.len() > listed || walk_stopped {
        let more = if walk_stopped {
            format!("at least {}", files.len() - listed)
        } else {
            (files.len() - listed).to_string()
        };
        text.push_str(&format!(
            "... and {more} more files (list_dir shows them)\n"
        ));
    }
}

/// The texts of the files that matter most, within the budget.
fn texts(
    inputs: &Inputs<'_>,
    budget: usize,
    files: &[Found],
    text: &mut String,
    out: &mut Observation,
) {
    let mut named_in = String::from(inputs.objective);
    if let Some(report) = inputs.previous {
        named_in.push('\n');
        named_in.push_str(&serde_json::to_string(report).unwrap_or_default());
    }
    if let Some(check) = inputs.check {
        named_in.push('\n');
        named_in.push_str(&check.output);
    }
    let rank = |file: &Found| -> u8 {
        if is_named(&named_in, &file.path) {
            0
        } else if inputs.changed.contains(&file.path) {
            1
        } else {
            2
        }
    };
    let mut order: Vec<&Found> = files.iter().filter(|f| f.text.is_some()).collect();
    order.sort_by_key(|f| (rank(f), f.bytes, f.path.clone()));
    let mut left = budget;
    let mut section = String::new();
    for file in order {
        let Some(body) = file.text.as_deref() else {
            continue;
        };
        let path = crate::text::sanitize_line(&file.path);
        let lines = file.lines().unwrap_or(0);
        let fence = fence_for([body]);
        let overhead = path.len() + 2 * fence.len() + 64;
        if body.len() + overhead <= left {
            section.push_str(&format!("\n{path}\n{fence}\n{}", body));
            if !body.is_empty() && !body.ends_with('\n') {
                section.push('\n');
            }
            section.push_str(&format!("{fence}\n"));
            left -= body.len() + overhead;
            out.largest_whole = out.largest_whole.max(body.len());
            out.shown.push(ObservedFile {
                path: file.path.clone(),
                bytes: file.bytes,
                lines,
                shown: Shown::Whole,
            });
        } else if left >= MIN_HEAD_BYTES + overhead {
            let head = head_lines(body, left - overhead);
            let head_count = head.lines().count();
            section.push_str(&format!(
                "\n{path} (its first {head_count} of {lines} lines; read_file with offset {} for the rest)\n{fence}\n{head}{fence}\n",
                head_count + 1
            ));
            left = 0;
            out.shown.push(ObservedFile {
                path: file.path.clone(),
                bytes: file.bytes,
                lines,
                shown: Shown::Head,
            });
        }
        if left < MIN_HEAD_BYTES {
            break;
        }
    }
    if !section.is_empty() {
        text.push_str("\nFile texts (current):\n");
        text.push_str(&section);
    }
}

/// The first whole lines of `body` within `max` bytes (at least one line, cut if it alone
/// is longer), ending in a newline.
fn head_lines(body: &str, max: usize) -> String {
    let mut head = String::new();
    for line in body.split_inclusive('\n') {
        if head.len() + line.len() > max {
            break;
        }
        head.push_str(line);
    }
    if head.is_empty() {
        head.push_str(crate::text::cut_at_char_boundary(body, max));
    }
    if !head.ends_with('\n') {
        head.push('\n');
    }
    head
}

/// Whether `text` names the file `path`: its whole relative path, or its file name as a
/// word (`stats.py`), or its module path (`inventory.stock` for `inventory/stock.py`).
fn is_named(text: &str, path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let word = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    let as_word = |needle: &str| {
        !needle.is_empty()
            && text.match_indices(needle).any(|(at, _)| {
                let before = text[..at].chars().next_back();
                let after = text[at + needle.len()..].chars().next();
                !before.is_some_and(word) && !after.is_some_and(word)
            })
    };
    if as_word(path) || as_word(name) {
        return true;
    }
    let module = path.strip_suffix(".py").map(|m| m.replace('/', "."));
    module.is_some_and(|m| m.contains('.') && as_word(&m))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::event::CheckVerdict;

    use crate::engine::testing::repo;

    fn inputs<'a>(root: &'a Path, objective: &'a str, changed: &'a BTreeSet<String>) -> Inputs<'a> {
        Inputs {
            root,
            objective,
            previous: None,
            check: None,
            check_ran: "",
            ran: &[],
            changed,
            run_patch: None,
            text_budget: 8 * 1024,
        }
    }

    #[test]
    fn named_files_come_first_then_changed_then_the_smallest() {
        let big = "x = 1\n".repeat(200);
        let dir = repo(&[
            ("a_small.txt", "tiny\n"),
            ("lib/stock.py", &big),
            ("notes.md", "changed by the run\n"),
        ]);
        let changed = BTreeSet::from(["notes.md".to_string()]);
        let mut input = inputs(dir.path(), "Fix the bug in lib/stock.py.", &changed);
        input.text_budget = 1000;
        let seen = observe(&input);
        let paths: Vec<(&str, Shown)> = seen
            .shown
            .iter()
            .map(|f| (f.path.as_str(), f.shown))
            .collect();
        assert_eq!(paths, [("lib/stock.py", Shown::Head)], "{}", seen.text);
        assert!(seen.text.contains("read_file with offset"), "{}", seen.text);
        input.text_budget = 4000;
        let seen = observe(&input);
        let paths: Vec<&str> = seen.shown.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            ["lib/stock.py", "notes.md", "a_small.txt"],
            "{}",
            seen.text
        );
        assert!(seen.text.contains("lib/stock.py (200 lines)"));
        assert_eq!(seen.files_listed, 3);
    }

    #[test]
    fn module_paths_and_file_names_count_as_named() {
        assert!(is_named(
            "FAIL: test_total (tests.test_order)",
            "tests/test_order.py"
        ));
        assert!(is_named("fix stats.py please", "stats.py"));
        assert!(is_named(
            "File \"/w/inventory/stock.py\", line 3",
            "inventory/stock.py"
        ));
        assert!(!is_named("fix mystats.py", "stats.py"));
        assert!(!is_named("nothing here", "stats.py"));
    }

    #[test]
    fn the_check_is_shown_with_its_verdict_and_output() {
        let dir = repo(&[("stats.py", "def median(x):\n    return 0\n")]);
        let changed = BTreeSet::new();
        let check = CheckRun {
            command: "python3 -m unittest".into(),
            exit_code: Some(0),
            verdict: CheckVerdict::NoTests,
            note: "unittest ran 0 tests: a run that tests nothing is not a pass".into(),
            wall_ms: 1234,
            output: "Ran 0 tests in 0.000s\n\nOK".into(),
        };
        let mut input = inputs(dir.path(), "make the tests pass", &changed);
        input.check = Some(&check);
        let seen = observe(&input);
        assert!(seen.text.contains("The check `python3 -m unittest` (run by ralph-tui at this round's start): RAN NO TEST (exit code 0): unittest ran 0 tests"), "{}", seen.text);
        // The runner's own time is left out of what the worker reads.
        assert!(seen.text.contains("Ran 0 tests\n"), "{}", seen.text);
        assert!(!seen.text.contains("0.000s"), "{}", seen.text);
        assert!(seen.text.contains("is not met while this check fails"));
    }

    #[test]
    fn the_runs_own_diff_is_shown_bounded_and_paid_for_from_the_text_budget() {
        let dir = repo(&[("guide.md", "Run it to receive mail.\n")]);
        let changed = BTreeSet::new();
        let patch = "diff --git a/guide.md b/guide.md\n--- a/guide.md\n+++ b/guide.md\n@@ -1 +1 @@\n-Run it to recieve mail.\n+Run it to receive mail.\n";
        let mut input = inputs(dir.path(), "fix the typo in guide.md", &changed);
        let plain = observe(&input);
        assert!(!plain.text.contains("changed so far"), "{}", plain.text);
        input.run_patch = Some(patch);
        let seen = observe(&input);
        let at = seen.text.find("What this run has changed so far").unwrap();
        assert!(
            seen.text[at..].contains(&format!("```diff\n{patch}```\n{RUN_PATCH_CLOSE}\n")),
            "{}",
            seen.text
        );
        assert!(!plain.text.contains(RUN_PATCH_CLOSE), "{}", plain.text);
        // Before the file texts, which still show the file whole.
        assert!(at < seen.text.find("File texts (current)").unwrap());
        assert_eq!(seen.shown.len(), 1);
        // A long diff is cut at a whole line and the rest counted; its bytes come off the
        // file texts' budget, so the file that fitted beside a short one no longer does.
        let long = format!("{patch}{}", "+more\n".repeat(1000));
        input.run_patch = Some(long.as_str());
        input.text_budget = RUN_PATCH_BYTES + 200;
        let seen = observe(&input);
        assert!(seen.text.contains("more bytes of diff"), "{}", seen.text);
        assert!(
            seen.text.len() < RUN_PATCH_BYTES + 1500,
            "{}",
            seen.text.len()
        );
        assert!(seen.shown.is_empty(), "{:?}", seen.shown);
        // An empty patch is no section.
        input.run_patch = Some("\n");
        assert!(!observe(&input).text.contains("changed so far"));
    }

    #[test]
    fn binary_huge_ignored_and_linked_files_are_never_shown() {
        let dir = repo(&[
            (".gitignore", "build/\n"),
            ("build/out.txt", "ignored\n"),
            ("blob.bin", "a\0b"),
            ("ok.txt", "fine\n"),
        ]);
        std::fs::write(dir.path().join("huge.txt"), "y".repeat(300 * 1024)).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("link.txt")).unwrap();
        let changed = BTreeSet::new();
        let seen = observe(&inputs(
            dir.path(),
            "objective naming link.txt and huge.txt",
            &changed,
        ));
        let paths: Vec<&str> = seen.shown.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["ok.txt", ".gitignore"], "{}", seen.text);
        assert!(seen.text.contains("blob.bin (3 bytes, not shown as text)"));
        assert!(seen
            .text
            .contains("huge.txt (307200 bytes, not shown as text)"));
        assert!(!seen.text.contains("build/out.txt"));
        assert!(!seen.text.contains("root:"));
    }

    #[test]
    fn many_files_stay_within_the_listing_bound() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..(MAX_LISTED + 50) {
            std::fs::write(dir.path().join(format!("f{i:04}.txt")), "z\n").unwrap();
        }
        let changed = BTreeSet::new();
        let mut input = inputs(dir.path(), "x", &changed);
        input.text_budget = 1000;
        let seen = observe(&input);
        assert_eq!(seen.files_listed, MAX_LISTED as u64);
        assert_eq!(seen.files_unlisted, 50);
        assert!(seen.text.contains("... and 50 more files"));
        assert!(
            seen.text.len() < MAX_LISTED * 40 + 2000,
            "{}",
            seen.text.len()
        );
    }

    #[test]
    fn a_huge_tree_and_names_that_are_not_utf8_stay_within_bounds() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        for d in 0..((MAX_WALKED + 100) / 1000 + 1) {
            let sub = dir.path().join(format!("d{d:03}"));
            std::fs::create_dir(&sub).unwrap();
            for i in 0..1000 {
                std::fs::write(sub.join(format!("{i}")), "").unwrap();
            }
        }
        let odd = std::ffi::OsStr::from_bytes(b"aaa-\xff\x1b[31m.txt");
        std::fs::write(dir.path().join(odd), "odd\n").unwrap();
        let changed = BTreeSet::new();
        let seen = observe(&inputs(dir.path(), "x", &changed));
        assert_eq!(seen.files_listed, MAX_LISTED as u64);
        assert!(
            seen.text.contains("... and at least 19800 more files"),
            "{}",
            &seen.text[..200]
        );
        assert!(seen.text.len() < 24 * 1024, "{}", seen.text.len());
        assert!(
            !seen.text.contains('\u{1b}'),
            "no escape reaches the child's text"
        );
        let first = seen.text.lines().find(|l| l.starts_with("aaa-")).unwrap();
        assert!(first.contains('\u{fffd}'), "{first}");
    }

    #[test]
    fn a_repository_without_tests_is_said_to_have_none() {
        let changed = BTreeSet::new();
        let bare = repo(&[("README.md", "hello\n")]);
        let seen = observe(&inputs(bare.path(), "x", &changed));
        assert!(seen.text.contains("has no test files"), "{}", seen.text);
        for tests in [
            "tests/test_a.py",
            "calc_test.py",
            "src/app.test.js",
            "test/x.c",
        ] {
            let with = repo(&[("README.md", "hello\n"), (tests, "")]);
            let seen = observe(&inputs(with.path(), "x", &changed));
            assert!(!seen.text.contains("has no test files"), "{tests}");
        }
        assert!(!looks_like_a_test("contest.py"));
    }
}
