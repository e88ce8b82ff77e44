//! Diffs: statuses, counts, hunks and patches `git apply` takes; per-round diffs adding up to
//! the cumulative one; display truncation.

use std::collections::BTreeMap;

use ralph_tui::protocol::event::{ChangedFile, FileStatus};
use ralph_tui::workspace::{DisplayLimits, LineKind, Workspace};

use super::super::common::*;
use super::{assert_patch_reproduces, files_of};

#[test]
fn diffs_name_added_modified_deleted_renamed_and_binary_files_with_counts() {
    let repo = TempRepo::new();
    let long: String = (1..=40)
        .map(|i| format!("line {i} of a file to move\n"))
        .collect();
    repo.write("keep.txt", "a\nb\nc\n");
    repo.write("gone.txt", "bye\n");
    repo.write("old name.txt", &long);
    std::fs::write(repo.path().join("blob.bin"), [0u8, 1, 2, 3, 255, 0, 7]).unwrap();
    repo.commit_all("start");
    let ws = Workspace::open(repo.path()).unwrap();
    let s0 = ws.snapshot().unwrap();

    repo.write("keep.txt", "a\nB\nc\nd\n");
    std::fs::remove_file(repo.path().join("gone.txt")).unwrap();
    std::fs::rename(
        repo.path().join("old name.txt"),
        repo.path().join("new name.txt"),
    )
    .unwrap();
    std::fs::write(repo.path().join("blob.bin"), [0u8, 9, 9, 9, 255, 0, 7, 8]).unwrap();
    repo.write("fresh.txt", "brand new\n");
    let s1 = ws.snapshot().unwrap();
    let diff = ws.diff(&s0, &s1).unwrap();

    let by_path: BTreeMap<&str, _> = diff.files.iter().map(|f| (f.path.as_str(), f)).collect();
    assert_eq!(by_path.len(), 5, "{:?}", files_of(&diff));
    assert_eq!(by_path["keep.txt"].status, FileStatus::Modified);
    assert_eq!(by_path["keep.txt"].insertions, 2);
    assert_eq!(by_path["keep.txt"].deletions, 1);
    let hunk = &by_path["keep.txt"].hunks[0];
    assert!(hunk.header.starts_with("@@ "), "{}", hunk.header);
    assert!(hunk
        .lines
        .iter()
        .any(|l| l.kind == LineKind::Added && l.text == "B"));
    assert_eq!(by_path["gone.txt"].status, FileStatus::Deleted);
    assert_eq!(by_path["gone.txt"].deletions, 1);
    assert_eq!(by_path["new name.txt"].status, FileStatus::Renamed);
    assert_eq!(
        by_path["new name.txt"].old_path.as_deref(),
        Some("old name.txt")
    );
    assert_eq!(by_path["fresh.txt"].status, FileStatus::Added);
    assert!(by_path["blob.bin"].binary);
    assert!(by_path["blob.bin"].hunks.is_empty());
    assert_eq!(diff.insertions, 3);
    assert_eq!(diff.deletions, 2);

    assert!(diff.patch.contains("diff --git a/keep.txt b/keep.txt\n"));
    assert!(diff.patch.contains("rename from old name.txt\n"));
    assert!(diff.patch.contains("GIT binary patch"));
    assert_patch_reproduces(repo.path(), &diff.patch, s1.tree);
    let changed: Vec<ChangedFile> = diff.changed_files();
    assert_eq!(changed.len(), 5);
    assert!(changed
        .iter()
        .any(|c| c.path == "fresh.txt" && c.status == FileStatus::Added));
}

#[test]
fn per_round_diffs_add_up_to_the_cumulative_diff() {
    let repo = TempRepo::new();
    let ws = Workspace::open(repo.path()).unwrap();
    let s0 = ws.snapshot().unwrap();
    repo.write("a.txt", "1\n");
    let s1 = ws.snapshot().unwrap();
    repo.write("a.txt", "1\n2\n");
    repo.write("b.txt", "b\n");
    let s2 = ws.snapshot().unwrap();
    let r1 = ws.diff(&s0, &s1).unwrap();
    let r2 = ws.diff(&s1, &s2).unwrap();
    let all = ws.diff(&s0, &s2).unwrap();
    assert_eq!(files_of(&r1), vec![("a.txt".into(), FileStatus::Added)]);
    assert_eq!(
        files_of(&r2),
        vec![
            ("a.txt".into(), FileStatus::Modified),
            ("b.txt".into(), FileStatus::Added)
        ]
    );
    assert_eq!(
        files_of(&all),
        vec![
            ("a.txt".into(), FileStatus::Added),
            ("b.txt".into(), FileStatus::Added)
        ]
    );
    assert_eq!(all.insertions, 3);
    assert_eq!(ws.diff(&s2, &s2).unwrap(), Default::default());
    // The same tree twice: identical snapshots, so unchanged rounds cost an empty diff.
    assert_eq!(ws.snapshot().unwrap(), s2);
}

#[test]
fn very_large_diffs_are_shortened_for_display_only() {
    let repo = TempRepo::new();
    let ws = Workspace::open(repo.path()).unwrap();
    let s0 = ws.snapshot().unwrap();
    for f in 0..20 {
        let text: String = (0..500).map(|i| format!("file {f} line {i}\n")).collect();
        repo.write(&format!("big/{f:02}.txt"), &text);
    }
    repo.write("wide.txt", &format!("{}\n", "x".repeat(5000)));
    let full = ws.diff(&s0, &ws.snapshot().unwrap()).unwrap();
    assert_eq!(full.insertions, 10_001);
    assert_eq!(full.note, None);
    let limits = DisplayLimits {
        max_files: 10,
        max_lines: 1_000,
        max_line_chars: 100,
        max_patch_bytes: 16 * 1024,
    };
    let shown = full.for_display(&limits);
    assert_eq!(shown.files.len(), 10);
    let lines: usize = shown
        .files
        .iter()
        .flat_map(|f| &f.hunks)
        .map(|h| h.lines.len())
        .sum();
    assert_eq!(lines, 1_000);
    assert!(shown.patch.len() <= 16 * 1024 && shown.patch.ends_with('\n'));
    assert_eq!(shown.insertions, full.insertions, "totals stay whole");
    let note = shown.note.as_deref().unwrap();
    assert!(note.contains("10 of 21 files"), "{note}");
    assert!(note.contains("1000 of 10001 lines"), "{note}");
    assert!(note.contains("run log"), "{note}");
    // A small diff is left alone.
    let small = ws.diff(&s0, &s0).unwrap().for_display(&limits);
    assert_eq!(small.note, None);
}
