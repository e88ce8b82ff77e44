//! The live watcher: a write is reported against the round's start, `.git/` and ignored paths
//! are dropped, bursts are coalesced.

use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use ralph_tui::protocol::event::{ChangedFile, FileStatus};
use ralph_tui::workspace::{LiveWatch, Workspace};

use super::super::common::*;

fn live_watch(root: &Path) -> (LiveWatch, mpsc::Receiver<(u32, Vec<ChangedFile>)>) {
    let (tx, rx) = mpsc::channel();
    let watch = LiveWatch::start(
        root,
        Box::new(move |round, files| {
            let _ = tx.send((round, files));
        }),
    )
    .unwrap();
    (watch, rx)
}

const GENEROUS: Duration = Duration::from_secs(30);

/// Waits for a report whose files satisfy `done`, returning it.
fn wait_for(
    rx: &mpsc::Receiver<(u32, Vec<ChangedFile>)>,
    done: impl Fn(&[ChangedFile]) -> bool,
) -> (u32, Vec<ChangedFile>) {
    let deadline = Instant::now() + GENEROUS;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let (round, files) = rx
            .recv_timeout(left)
            .expect("no matching report from the watcher");
        if done(&files) {
            return (round, files);
        }
    }
}

#[test]
fn the_live_watcher_reports_a_write_and_drops_git_and_ignored_paths() {
    let repo = TempRepo::new();
    repo.write(".gitignore", "target/\n*.log\n");
    repo.commit_all("ignores");
    let ws = Workspace::open(repo.path()).unwrap();
    let base = ws.snapshot().unwrap();
    let (watch, rx) = live_watch(repo.path());
    assert!(watch.stats().watched_dirs >= 1);
    watch.round_started(3, base);

    repo.write("target/debug/app", "build output\n");
    repo.write("debug.log", "noise\n");
    std::fs::write(repo.path().join(".git/scratch"), "git's own\n").unwrap();
    // Wait until the watcher has seen (and dropped) the ignored writes.
    let deadline = Instant::now() + GENEROUS;
    while watch.stats().ignored_events < 2 {
        assert!(Instant::now() < deadline, "ignored writes never seen");
        std::thread::sleep(Duration::from_millis(10));
    }
    let stats = watch.stats();
    assert_eq!(stats.relevant_events, 0, "{stats:?}");
    assert_eq!(stats.refreshes, 0, "{stats:?}");

    repo.write("src/main.rs", "fn main() {}\n");
    let (round, files) = wait_for(&rx, |f| !f.is_empty());
    assert_eq!(round, 3);
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(files[0].path, "src/main.rs");
    assert_eq!(files[0].status, FileStatus::Added);
    assert_eq!(files[0].insertions, 1);

    // Inside the new directory, too; and a burst is coalesced.
    for i in 0..40 {
        repo.write(&format!("src/gen/{i:02}.rs"), "// generated\n");
    }
    let (_, files) = wait_for(&rx, |f| f.len() == 41);
    assert!(files.iter().all(|f| f.status == FileStatus::Added));
    assert!(watch.stats().refreshes <= 8, "{:?}", watch.stats());
    watch.round_ended();
    drop(watch);
}

#[test]
fn the_live_watcher_reports_per_round_against_the_rounds_start() {
    let repo = TempRepo::new();
    let ws = Workspace::open(repo.path()).unwrap();
    let (watch, rx) = live_watch(repo.path());
    watch.round_started(1, ws.snapshot().unwrap());
    repo.write("one.txt", "1\n");
    let (round, files) = wait_for(&rx, |f| f.len() == 1);
    assert_eq!((round, files[0].path.as_str()), (1, "one.txt"));
    watch.round_ended();

    watch.round_started(2, ws.snapshot().unwrap());
    repo.write("README.md", "# demo\nchanged in round two\n");
    let (round, files) = wait_for(&rx, |f| !f.is_empty());
    assert_eq!(round, 2);
    assert_eq!(files.len(), 1, "one.txt belongs to round one: {files:?}");
    assert_eq!(files[0].path, "README.md");
    assert_eq!(files[0].status, FileStatus::Modified);
}
