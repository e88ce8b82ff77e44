//! Diffs: statuses, counts, hunks and patches `git apply` takes; per-round diffs adding up to
//! the cumulative one; display truncation; a logged patch read back as the live diff.

use std::collections::BTreeMap;

use ralph_tui::protocol::event::{ChangedFile, FileStatus};
use ralph_tui::workspace::{DiffModel, DisplayLimits, LineKind, Workspace};

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
    // The replay's review reads the rounds' logged patches one after another: each file once
    // per round that changed it, in order; an unchanged round's empty patch is no change.
    let whole = format!("{}{}", r1.patch, r2.patch);
    let read = DiffModel::from_patch(&whole).unwrap();
    let files: Vec<_> = r1.files.iter().chain(&r2.files).cloned().collect();
    assert_eq!(read.files, files);
    assert_eq!((read.insertions, read.deletions), (all.insertions, 0));
    assert_eq!(DiffModel::from_patch("").unwrap(), DiffModel::default());
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

/// Every kind of change the run log's patches hold: a modification with two hunks of context,
/// lines that look like patch headers, a pure rename and a rename with an edit, new, deleted and
/// new empty files, a newline lost and one gained, a mode change, CRLF lines, binary and non-UTF-8
/// files, a file that becomes a symlink, and names git quotes or that hold ` b/`.
fn write_every_kind_of_change(repo: &TempRepo, ws: &Workspace) -> DiffModel {
    let numbered: String = (1..=30).map(|i| format!("line {i:02}\n")).collect();
    let long: String = (1..=40).map(|i| format!("moved line {i:02}\n")).collect();
    repo.write("ctx.txt", &numbered);
    repo.write("headers.txt", "-- looks like a header\nkeep\n");
    repo.write("pure.txt", &long);
    repo.write("edited.txt", &long.replace("moved", "edited"));
    repo.write("gone.txt", "bye\n");
    repo.write("loses-newline.txt", "end\n");
    repo.write("gains-newline.txt", "end");
    repo.write("script.sh", "echo hi\n");
    repo.write("crlf.txt", "a\r\nb\r\n");
    repo.write("becomes-link.txt", "a file\n");
    repo.write("with space b/in name.txt", "spaces\n");
    repo.write("ta\tb ünï.txt", "quoted\n");
    std::fs::write(repo.path().join("blob.bin"), [0u8, 1, 2, 255]).unwrap();
    std::fs::write(repo.path().join("latin1.txt"), b"caf\xe9\n").unwrap();
    repo.commit_all("start");
    let s0 = ws.snapshot().unwrap();

    repo.write(
        "ctx.txt",
        &numbered
            .replace("line 03\n", "LINE 03\n")
            .replace("line 27\n", ""),
    );
    repo.write("headers.txt", "keep\n++ looks like a header too\n");
    std::fs::rename(repo.path().join("pure.txt"), repo.path().join("pure2.txt")).unwrap();
    std::fs::remove_file(repo.path().join("edited.txt")).unwrap();
    repo.write(
        "edited2.txt",
        &long
            .replace("moved", "edited")
            .replace("line 09\n", "line IX\n"),
    );
    std::fs::remove_file(repo.path().join("gone.txt")).unwrap();
    repo.write("fresh.txt", "brand new\n");
    repo.write("fresh-empty.txt", "");
    repo.write("loses-newline.txt", "end");
    repo.write("gains-newline.txt", "end\n");
    let script = repo.path().join("script.sh");
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    repo.write("crlf.txt", "a\r\nB\r\n");
    std::fs::remove_file(repo.path().join("becomes-link.txt")).unwrap();
    std::os::unix::fs::symlink("ctx.txt", repo.path().join("becomes-link.txt")).unwrap();
    repo.write("with space b/in name.txt", "spaces 2\n");
    repo.write("ta\tb ünï.txt", "quoted 2\n");
    std::fs::write(repo.path().join("blob.bin"), [0u8, 9, 2, 255, 7]).unwrap();
    std::fs::write(repo.path().join("new.bin"), [0u8, 1]).unwrap();
    std::fs::write(repo.path().join("latin1.txt"), b"caf\xe9 au lait\n").unwrap();
    let s1 = ws.snapshot().unwrap();
    ws.diff(&s0, &s1).unwrap()
}

#[test]
fn a_logged_patch_reads_back_as_the_live_diff_for_every_kind_of_change() {
    let repo = TempRepo::new();
    let ws = Workspace::open(repo.path()).unwrap();
    let live = write_every_kind_of_change(&repo, &ws);
    let read = DiffModel::from_patch(&live.patch).unwrap();
    assert_eq!(read, live, "{}", live.patch);

    let by_path: BTreeMap<&str, _> = read.files.iter().map(|f| (f.path.as_str(), f)).collect();
    let ctx = by_path["ctx.txt"];
    assert_eq!((ctx.hunks.len(), ctx.insertions, ctx.deletions), (2, 1, 2));
    assert_eq!(
        ctx.hunks[0].lines.len(),
        7,
        "three lines of context around each change"
    );
    let headers: Vec<(LineKind, &str)> = by_path["headers.txt"].hunks[0]
        .lines
        .iter()
        .map(|l| (l.kind, l.text.as_str()))
        .collect();
    assert_eq!(
        headers,
        vec![
            (LineKind::Removed, "-- looks like a header"),
            (LineKind::Context, "keep"),
            (LineKind::Added, "++ looks like a header too"),
        ]
    );
    assert_eq!(by_path["pure2.txt"].status, FileStatus::Renamed);
    assert_eq!(by_path["pure2.txt"].old_path.as_deref(), Some("pure.txt"));
    assert!(by_path["pure2.txt"].hunks.is_empty());
    assert_eq!(by_path["edited2.txt"].status, FileStatus::Renamed);
    assert_eq!(by_path["edited2.txt"].insertions, 1);
    assert_eq!(by_path["gone.txt"].status, FileStatus::Deleted);
    assert_eq!(by_path["fresh-empty.txt"].status, FileStatus::Added);
    let lost = &by_path["loses-newline.txt"].hunks[0].lines;
    assert_eq!(
        lost.len(),
        2,
        "the no-newline marker is not a line: {lost:?}"
    );
    assert_eq!(by_path["script.sh"].status, FileStatus::Modified);
    assert!(by_path["script.sh"].hunks.is_empty());
    assert_eq!(by_path["crlf.txt"].hunks[0].lines[1].text, "b");
    assert!(by_path["blob.bin"].binary && by_path["new.bin"].binary);
    assert!(
        by_path["latin1.txt"].binary,
        "non-UTF-8 text is logged as binary"
    );
    assert!(by_path.contains_key("with space b/in name.txt"));
    assert!(
        by_path.contains_key("ta\tb ünï.txt"),
        "quoted names are unquoted"
    );
}

#[test]
fn a_subdirectory_workspace_reads_back_with_paths_from_the_top() {
    let repo = TempRepo::new();
    repo.write("app/keep.txt", "a\n");
    repo.write("app/empty.txt", "");
    repo.commit_all("start");
    let ws = Workspace::open(&repo.path().join("app")).unwrap();
    let s0 = ws.snapshot().unwrap();
    repo.write("app/keep.txt", "a\nb\n");
    repo.write("app/sub dir/new.txt", "new\n");
    std::fs::remove_file(repo.path().join("app/empty.txt")).unwrap();
    let live = ws.diff(&s0, &ws.snapshot().unwrap()).unwrap();
    let read = DiffModel::from_patch(&live.patch).unwrap();
    assert_eq!(read, live);
    assert_eq!(
        files_of(&read),
        vec![
            ("app/empty.txt".into(), FileStatus::Deleted),
            ("app/keep.txt".into(), FileStatus::Modified),
            ("app/sub dir/new.txt".into(), FileStatus::Added)
        ]
    );
}

/// Where libgit2's reader differs from a line-by-line guess: a hunk whose header promises more
/// lines than follow is refused, not shown short (the UI's sample patch was miscounted so).
#[test]
fn a_patch_whose_hunk_counts_do_not_add_up_is_refused() {
    let patch = "diff --git a/a.txt b/a.txt
index 1111111..2222222 100644
--- a/a.txt
+++ b/a.txt
@@ -1,2 +1,4 @@ fn main
 keep
-old
+new
";
    let err = DiffModel::from_patch(patch).unwrap_err().to_string();
    assert!(err.contains("patch"), "{err}");
    let fixed = patch.replace("+1,4", "+1,2");
    let read = DiffModel::from_patch(&fixed).unwrap();
    assert_eq!((read.insertions, read.deletions), (1, 1));
    assert_eq!(read.files[0].hunks[0].header, "@@ -1,2 +1,2 @@ fn main");
}
