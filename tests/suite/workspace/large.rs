//! Large files: one over `TRACK_MAX_BYTES` (a sparse GiB) is never read, so it costs no
//! memory, and is named as too large among the changes no diff shows; one over
//! `DIFF_MAX_BYTES` is in the diff as binary and too large, without its content, and is
//! committed as it is.

use std::collections::BTreeSet;
use std::process::Command;

use ralph_tui::engine::observe::{observe, Inputs};
use ralph_tui::protocol::event::FileStatus;
use ralph_tui::workspace::{DiffModel, HiddenWhy, Workspace, DIFF_MAX_BYTES, TRACK_MAX_BYTES};

use super::super::common::*;

const GIB: u64 = 1024 * 1024 * 1024;

/// A text file's worth of lines, just over `DIFF_MAX_BYTES`.
fn over_the_diff_cap() -> String {
    let line = "a line of a generated file that is far too long to review\n";
    let lines = usize::try_from(DIFF_MAX_BYTES).unwrap() / line.len() + 10;
    line.repeat(lines)
}

#[test]
fn a_sparse_gib_is_never_read_and_is_named_too_large() {
    let repo = TempRepo::new();
    repo.write("a.txt", "one\n");
    repo.commit_all("start");
    let ws = Workspace::open(repo.path()).unwrap();
    let baseline = ws.baseline().unwrap();

    let big = std::fs::File::create(repo.path().join("big.bin")).unwrap();
    big.set_len(GIB).unwrap();
    repo.write("a.txt", "one\ntwo\n");
    let last = ws.snapshot().unwrap();
    let diff = ws.diff(&baseline.snapshot, &last).unwrap();
    let paths: Vec<&str> = diff.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["a.txt"], "only what snapshots read is in the diff");
    assert!(!diff.patch.contains("big.bin"), "{}", diff.patch);
    let tree = ws.repo().find_tree(last.tree).unwrap();
    assert!(
        tree.get_name("big.bin").is_none(),
        "so no commit carries it"
    );

    let hidden = ws.compare(&baseline.listing, &ws.listing(), &diff.paths());
    assert_eq!(hidden.changes.len(), 1, "{hidden:?}");
    let change = &hidden.changes[0];
    assert_eq!(change.path, "big.bin");
    assert_eq!(change.status, FileStatus::Added);
    assert_eq!(change.why, HiddenWhy::TooLarge(GIB));
    let said = change.describe();
    assert!(said.contains("1.0 GiB") || said.contains("1 GiB"), "{said}");
    assert!(said.contains("16 MiB"), "{said}");

    // The commit holds what the review lists, nothing more.
    ws.commit_run(&baseline, &last, "run")
        .unwrap_or_else(|e| panic!("{e}"));
    let head = ws.repo().head().unwrap().peel_to_tree().unwrap();
    assert!(head.get_name("big.bin").is_none());
    assert!(head.get_name("a.txt").is_some());
}

#[test]
fn a_file_over_the_diff_cap_is_binary_too_large_and_committed() {
    let repo = TempRepo::new();
    repo.write("a.txt", "one\n");
    repo.commit_all("start");
    let ws = Workspace::open(repo.path()).unwrap();
    let baseline = ws.baseline().unwrap();

    let text = over_the_diff_cap();
    assert!(text.len() as u64 > DIFF_MAX_BYTES && (text.len() as u64) < TRACK_MAX_BYTES);
    repo.write("gen.txt", &text);
    let last = ws.snapshot().unwrap();
    let diff = ws.diff(&baseline.snapshot, &last).unwrap();
    assert_eq!(diff.files.len(), 1, "{:?}", diff.files);
    let file = &diff.files[0];
    assert_eq!(file.path, "gen.txt");
    assert!(file.binary && file.too_large, "{file:?}");
    assert!(file.hunks.is_empty());
    assert!(
        diff.patch
            .contains("Binary files /dev/null and b/gen.txt differ"),
        "{}",
        diff.patch
    );
    assert!(diff.patch.len() < 1024, "no content in the patch");
    // The logged patch reads back as the live diff did.
    let back = DiffModel::from_patch(&diff.patch).unwrap();
    assert!(back.files[0].binary && back.files[0].too_large);

    // A small binary file still carries its content.
    std::fs::write(repo.path().join("small.bin"), [0u8, 1, 2, 255]).unwrap();
    let again = ws.snapshot().unwrap();
    let diff = ws.diff(&baseline.snapshot, &again).unwrap();
    let small = diff.files.iter().find(|f| f.path == "small.bin").unwrap();
    assert!(small.binary && !small.too_large);
    assert!(diff.patch.contains("GIT binary patch"), "{}", diff.patch);
    let back = DiffModel::from_patch(&diff.patch).unwrap();
    assert!(back
        .files
        .iter()
        .all(|f| f.too_large == (f.path == "gen.txt")));

    // Committed exactly as it is in the work tree.
    ws.commit_run(&baseline, &last, "run")
        .unwrap_or_else(|e| panic!("{e}"));
    let head = ws.repo().head().unwrap().peel_to_tree().unwrap();
    let entry = head.get_name("gen.txt").unwrap();
    let blob = ws.repo().find_blob(entry.id()).unwrap();
    assert_eq!(blob.content(), text.as_bytes());
}

/// The part of a run that looks at the workspace (baseline, snapshots, diff, listing,
/// observation) with a sparse 3 GiB file in it, in a process of its own: its peak resident
/// memory stays far below the file's size.
#[test]
fn a_sparse_file_costs_no_memory_in_snapshots_diffs_and_the_observation() {
    let repo = TempRepo::new();
    repo.write("a.txt", "one\n");
    repo.commit_all("start");
    let out = tempfile::tempdir().unwrap();
    let report = out.path().join("peak");
    let child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "suite::workspace::large::look_at_a_sparse_file",
            "--ignored",
            "--test-threads=1",
        ])
        .env("RALPH_TEST_SPARSE_REPO", repo.path())
        .env("RALPH_TEST_SPARSE_PEAK", &report)
        .output()
        .unwrap();
    let peak = std::fs::read_to_string(&report).unwrap_or_else(|e| panic!("{e}: {child:?}"));
    let kib: u64 = peak.trim().parse().unwrap();
    assert!(kib < 200 * 1024, "peak resident memory {kib} KiB");
    assert!(child.status.success(), "{child:?}");
}

/// Run by the test above, in its own process; reports its peak resident memory (VmHWM).
#[test]
#[ignore = "run in a process of its own by a_sparse_file_costs_no_memory_..."]
fn look_at_a_sparse_file() {
    let (Some(repo), Some(report)) = (
        std::env::var_os("RALPH_TEST_SPARSE_REPO"),
        std::env::var_os("RALPH_TEST_SPARSE_PEAK"),
    ) else {
        return;
    };
    let root = std::path::PathBuf::from(repo);
    let ws = Workspace::open(&root).unwrap();
    let baseline = ws.baseline().unwrap();
    let big = std::fs::File::create(root.join("huge.bin")).unwrap();
    big.set_len(3 * GIB).unwrap();
    std::fs::write(root.join("a.txt"), "one\ntwo\n").unwrap();
    let mut found = Vec::new();
    for _ in 0..2 {
        let last = ws.snapshot().unwrap();
        let diff = ws.diff(&baseline.snapshot, &last).unwrap();
        let hidden = ws.compare(&baseline.listing, &ws.listing(), &diff.paths());
        found.push((diff.files.len(), hidden.changes.len()));
    }
    let changed = BTreeSet::from(["huge.bin".to_string()]);
    let seen = observe(&Inputs {
        root: &root,
        objective: "look at huge.bin",
        previous: None,
        check: None,
        check_ran: "",
        ran: &[],
        changed: &changed,
        run_patch: None,
        text_budget: 16 * 1024,
    });
    assert!(seen.text.contains("huge.bin"), "{}", seen.text);
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let hwm = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .unwrap()
        .trim()
        .trim_end_matches("kB")
        .trim()
        .to_string();
    std::fs::write(report, hwm).unwrap();
    assert_eq!(
        found,
        [(1, 1), (1, 1)],
        "a.txt in the diff, huge.bin hidden"
    );
}
