//! The review racing a process left behind: while discard, revert or apply writes and removes
//! thousands of files, a thread swaps the directory they are in for a symlink to a directory
//! outside, as soon as the first file was done. Whatever the review then says, nothing
//! outside is removed or written: the outside files are checked after, not the timing.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ralph_tui::workspace::{worktree, Workspace};

use super::super::common::*;

/// Enough files that the review is still writing when the swap comes.
const FILES: usize = 3000;

fn name(i: usize) -> String {
    format!("f{i:05}.txt")
}

/// A directory outside the work tree holding a file of every name the review writes.
fn outside() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..FILES {
        std::fs::write(dir.path().join(name(i)), format!("victim {i}\n")).unwrap();
    }
    dir
}

fn assert_untouched(outside: &Path) {
    let mut changed = Vec::new();
    for i in 0..FILES {
        match std::fs::read_to_string(outside.join(name(i))) {
            Ok(text) if text == format!("victim {i}\n") => {}
            Ok(text) => changed.push(format!("{} now holds {text:?}", name(i))),
            Err(e) => changed.push(format!("{}: {e}", name(i))),
        }
    }
    let count = std::fs::read_dir(outside).unwrap().count();
    assert!(
        changed.is_empty() && count == FILES,
        "{count} files outside; changed: {:?}",
        &changed[..changed.len().min(5)]
    );
}

/// The racing process: once `started` says the review has done its first file, `dir` moves
/// aside and a symlink to `outside` takes its place. Gives up when `done` is set.
struct Swapper {
    done: Arc<AtomicBool>,
    thread: JoinHandle<bool>,
}

impl Swapper {
    fn start(dir: PathBuf, outside: PathBuf, started: impl Fn() -> bool + Send + 'static) -> Self {
        let done = Arc::new(AtomicBool::new(false));
        let stop = done.clone();
        let thread = std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(60);
            while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                if started() {
                    std::fs::rename(&dir, dir.with_extension("aside")).unwrap();
                    // The review may make `dir` again between the two steps (it writes a
                    // file there): then it won the race, and nothing is swapped.
                    return match std::os::unix::fs::symlink(&outside, &dir) {
                        Ok(()) => true,
                        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => false,
                        Err(e) => panic!("cannot swap in the symlink: {e}"),
                    };
                }
                std::hint::spin_loop();
            }
            false
        });
        Self { done, thread }
    }

    /// Whether it swapped (for the message only: a review done before it could is fine).
    fn finish(self) -> bool {
        self.done.store(true, Ordering::Relaxed);
        self.thread.join().unwrap()
    }
}

/// A repository whose last commit has `d/<name>` with `base <i>` for every name.
fn repo_with_files() -> TempRepo {
    let repo = TempRepo::new();
    for i in 0..FILES {
        repo.write(&format!("d/{}", name(i)), &format!("base {i}\n"));
    }
    repo.commit_all("files");
    repo
}

fn write_all(top: &Path, text: &str) {
    for i in 0..FILES {
        std::fs::write(top.join("d").join(name(i)), format!("{text} {i}\n")).unwrap();
    }
}

fn reads(path: &Path, text: &str) -> bool {
    std::fs::read_to_string(path).is_ok_and(|t| t == text)
}

#[test]
fn a_discard_raced_by_a_symlink_swap_removes_nothing_outside() {
    let repo = TempRepo::new();
    let ws = Workspace::open(repo.path()).unwrap();
    let baseline = ws.baseline().unwrap();
    for i in 0..FILES {
        repo.write(&format!("d/{}", name(i)), &format!("run {i}\n"));
    }
    let plan = ws.discard_plan(&baseline).unwrap();
    let outside = outside();
    let first = repo.path().join("d").join(name(0));
    let swapper = Swapper::start(repo.path().join("d"), outside.path().to_path_buf(), {
        move || first.symlink_metadata().is_err()
    });
    let result = ws.discard(&baseline, &plan);
    let swapped = swapper.finish();
    eprintln!("swapped: {swapped}; discard: {result:?}");
    assert_untouched(outside.path());
}

#[test]
fn a_discard_restoring_files_raced_by_a_symlink_swap_writes_nothing_outside() {
    let repo = repo_with_files();
    let ws = Workspace::open(repo.path()).unwrap();
    let baseline = ws.baseline().unwrap();
    write_all(repo.path(), "run");
    let plan = ws.discard_plan(&baseline).unwrap();
    let outside = outside();
    let first = repo.path().join("d").join(name(0));
    let swapper = Swapper::start(repo.path().join("d"), outside.path().to_path_buf(), {
        move || reads(&first, "base 0\n")
    });
    let result = ws.discard(&baseline, &plan);
    let swapped = swapper.finish();
    eprintln!("swapped: {swapped}; discard: {result:?}");
    assert_untouched(outside.path());
}

/// The patch `git diff` prints between two trees.
fn patch(repo: &Path, from: git2::Oid, to: git2::Oid) -> String {
    let repo = git2::Repository::open(repo).unwrap();
    let old = repo.find_tree(from).unwrap();
    let new = repo.find_tree(to).unwrap();
    let diff = repo
        .diff_tree_to_tree(Some(&old), Some(&new), None)
        .unwrap();
    let mut text = String::new();
    diff.print(git2::DiffFormat::Patch, |_, _, line| {
        if matches!(line.origin(), '+' | '-' | ' ') {
            text.push(line.origin());
        }
        text.push_str(std::str::from_utf8(line.content()).unwrap());
        true
    })
    .unwrap();
    text
}

#[test]
fn a_revert_raced_by_a_symlink_swap_writes_nothing_outside() {
    let repo = repo_with_files();
    let ws = Workspace::open(repo.path()).unwrap();
    let before = ws.snapshot().unwrap();
    write_all(repo.path(), "run");
    let after = ws.snapshot().unwrap();
    let patch = patch(repo.path(), before.tree, after.tree);
    let outside = outside();
    let first = repo.path().join("d").join(name(0));
    let swapper = Swapper::start(repo.path().join("d"), outside.path().to_path_buf(), {
        move || reads(&first, "base 0\n")
    });
    let result = ws.revert_round(1, &patch);
    let swapped = swapper.finish();
    eprintln!("swapped: {swapped}; revert: {:?}", result.map(|p| p.len()));
    assert_untouched(outside.path());
}

#[test]
fn an_apply_raced_by_a_symlink_swap_writes_nothing_outside() {
    let repo = repo_with_files();
    let data = tempfile::tempdir().unwrap();
    let info = worktree::create(repo.path(), data.path(), "race").unwrap();
    write_all(&info.path, "run");
    let outside = outside();
    let first = repo.path().join("d").join(name(0));
    let swapper = Swapper::start(repo.path().join("d"), outside.path().to_path_buf(), {
        move || reads(&first, "run 0\n")
    });
    let result = info.apply();
    let swapped = swapper.finish();
    eprintln!(
        "swapped: {swapped}; apply: {:?}",
        result.map(|a| a.paths.len())
    );
    assert_untouched(outside.path());
}

/// Runs one command of a round in `root` (unconfined, so it can kill its own supervisor):
/// it writes `added.txt`, starts `sleep` in the background and kills its supervisor, so the
/// round's end cannot take the `sleep` with it. Returns the `sleep`'s pid.
fn leave_a_process_behind(root: &Path) -> i32 {
    use ralph_tui::protocol::policy::{ApprovalPolicy, SandboxMode};
    use ralph_tui::tools::approval::DenyAll;
    use ralph_tui::tools::process::ProcessTracker;
    use ralph_tui::tools::{Registry, ToolContext, ToolPolicy};

    let scratch = tempfile::tempdir().unwrap();
    let mut policy = ToolPolicy::new(SandboxMode::Off, ApprovalPolicy::Auto, true);
    policy.sandbox_exe = PathBuf::from(BIN);
    let processes = ProcessTracker::new();
    let cancel = tokio_util::sync::CancellationToken::new();
    let round_tmp = scratch.path().join("round-01");
    let pid_file = scratch.path().join("pid");
    let ctx = ToolContext {
        root,
        renames: &ralph_tui::tools::AskedRenames::default(),
        round: 1,
        round_tmp: &round_tmp,
        cancel: &cancel,
        policy: &policy,
        processes: &processes,
        approver: &DenyAll,
    };
    let command = format!(
        "echo run > added.txt; sleep 300 >/dev/null 2>&1 & echo $! > {}; kill -9 $PPID",
        pid_file.display()
    );
    let result = Registry::standard().call(
        "run_command",
        &serde_json::json!({ "command": command }),
        &ctx,
    );
    // The round ends: everything it still knows of is killed.
    processes.kill_all();
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap_or_else(|e| panic!("{e}: {}", result.output))
        .trim()
        .parse()
        .unwrap();
    assert!(
        Path::new(&format!("/proc/{pid}")).exists(),
        "the sleep should outlive the round"
    );
    pid
}

/// Kills `pid` and waits until it no longer runs (a zombie does not).
fn end(pid: i32) {
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat)
                if !stat
                    .rsplit_once(')')
                    .unwrap()
                    .1
                    .trim_start()
                    .starts_with('Z') => {}
            _ => return,
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn assert_refused(err: &ralph_tui::workspace::WorkspaceError, pid: i32) {
    let text = err.to_string();
    assert!(
        matches!(err, ralph_tui::workspace::WorkspaceError::RunProcesses(_))
            && text.contains(&format!("{pid} (sleep)"))
            && text.contains(&format!("kill {pid}")),
        "{err:?}"
    );
}

/// A process of the run outlived its round: discard, revert and commit refuse, naming it,
/// and change nothing; once it is gone they act.
#[test]
fn the_review_refuses_to_act_while_a_process_of_the_run_runs() {
    let repo = TempRepo::new();
    let root = repo.path().canonicalize().unwrap();
    let ws = Workspace::open(&root).unwrap();
    let baseline = ws.baseline().unwrap();
    let pid = leave_a_process_behind(&root);
    let last = ws.snapshot().unwrap();
    let plan = ws.discard_plan(&baseline).unwrap();

    assert_refused(&ws.discard(&baseline, &plan).unwrap_err(), pid);
    let patch = patch(&root, baseline.snapshot.tree, last.tree);
    assert_refused(&ws.revert_round(1, &patch).unwrap_err(), pid);
    assert_refused(&ws.commit_run(&baseline, &last, "run").unwrap_err(), pid);
    assert_eq!(repo.read("added.txt"), "run\n", "nothing changed");

    end(pid);
    assert_eq!(ws.discard(&baseline, &plan).unwrap(), ["added.txt"]);
    assert!(!root.join("added.txt").exists());
}

/// The same for a worktree run's apply: refused while the process runs in the worktree.
#[test]
fn apply_refuses_while_a_process_of_the_run_runs() {
    let repo = TempRepo::new();
    let data = tempfile::tempdir().unwrap();
    let info = worktree::create(repo.path(), data.path(), "alive").unwrap();
    let pid = leave_a_process_behind(&info.workspace());
    let err = info.apply().unwrap_err();
    let ralph_tui::workspace::WorktreeError::Workspace(err) = err else {
        panic!("{err:?}");
    };
    assert_refused(&err, pid);
    assert!(!repo.path().join("added.txt").exists(), "nothing applied");
    end(pid);
    info.apply().unwrap();
    assert_eq!(repo.read("added.txt"), "run\n");
}
