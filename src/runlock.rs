//! One run per workspace: an exclusive `flock` on the repository's git dir, held for the whole
//! process.
//!
//! Two runs in one work tree would each see the other's edits in their diffs (and a commit at
//! review would take the other run's work), so a second run is refused. The lock is taken on
//! the git dir itself (opened read-only, nothing written there), so every run of this work
//! tree meets it whatever its data directory; the kernel drops it when the holder exits,
//! however it exits, so a lock left by a dead process is never in the way. Who holds it (run
//! id, pid, start time) is written to a holder file, for the refusal message and for `runs`,
//! and removed at the run's end. A process killed outright leaves its holder file behind: the
//! next run to take the lock takes the file over too, and says so.
//!
//! Holder files live in the runtime directory (`$XDG_RUNTIME_DIR/ralph-tui/locks`: the
//! user's own, emptied at logout and reboot, where a pid means this boot) when there is one;
//! else beside the run directory (`<its parent>/locks`) when `--run-dir` names it; else in
//! the data directory (`<data>/locks`). So a run given `--run-dir` and `--config` writes
//! nothing under the home directory.

use std::fs::File;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

use crate::error::UsageError;

/// A held workspace lock; released when dropped or when the process ends.
#[derive(Debug)]
pub struct RunLock {
    _git_dir: Flock<File>,
    holder: PathBuf,
    /// A holder file left by a run that ended without removing it, which this lock took over:
    /// a line for the person.
    pub took_over: Option<String>,
}

impl RunLock {
    /// The file that names the holder.
    pub fn holder_file(&self) -> &Path {
        &self.holder
    }

    /// Removes the holder's name at the end, keeping the lock itself until the process exits
    /// (a successor can only write its name after that, so this never removes a successor's).
    pub fn forget_holder(&self) {
        let _ = std::fs::remove_file(&self.holder);
    }
}

/// The git dir of the work tree containing `workspace` (for a linked worktree, its own).
fn git_dir(workspace: &Path) -> Result<PathBuf, UsageError> {
    let repo = git2::Repository::discover(workspace)
        .map_err(|_| UsageError::NotGitRepo(workspace.to_path_buf()))?;
    let path = repo.path();
    Ok(path.canonicalize().unwrap_or_else(|_| path.to_path_buf()))
}

/// The runtime directory's holder files, when `XDG_RUNTIME_DIR` names a directory.
fn runtime_holders() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("XDG_RUNTIME_DIR")?);
    (dir.is_absolute() && dir.is_dir()).then(|| dir.join("ralph-tui").join("locks"))
}

/// The directory of holder files for a run (see the module's notes): the runtime
/// directory's, else `<parent of run_dir>/locks` when the command line names the run
/// directory, else `<data>/locks`.
pub fn holders_dir(data: &Path, run_dir: Option<&Path>) -> PathBuf {
    if let Some(dir) = runtime_holders() {
        return dir;
    }
    match run_dir {
        Some(run_dir) => std::path::absolute(run_dir)
            .unwrap_or_else(|_| run_dir.to_path_buf())
            .parent()
            .map_or_else(|| PathBuf::from("/"), Path::to_path_buf)
            .join("locks"),
        None => data.join("locks"),
    }
}

/// Every directory holder files of runs listed in `data` can be in: the runtime directory's
/// and `<data>/locks`.
pub fn all_holder_dirs(data: &Path) -> Vec<PathBuf> {
    runtime_holders()
        .into_iter()
        .chain([data.join("locks")])
        .collect()
}

/// Where the holder of the lock of the work tree containing `workspace` is named, in
/// `holders` (see [`holders_dir`]): `<holders>/<sha256 of its git dir's path>`.
pub fn holder_path(holders: &Path, workspace: &Path) -> Result<PathBuf, UsageError> {
    Ok(holder_file(holders, &git_dir(workspace)?))
}

fn holder_file(holders: &Path, git_dir: &Path) -> PathBuf {
    // The first 16 bytes of the digest, as hex.
    let mut name = crate::text::sha256_hex(git_dir.as_os_str().as_encoded_bytes());
    name.truncate(32);
    holders.join(name)
}

/// The pid a holder file names (`run ID, pid PID, started ...`).
pub fn holder_pid(text: &str) -> Option<i32> {
    let (_, rest) = text.trim().strip_prefix("run ")?.split_once(", pid ")?;
    rest.split(',').next()?.trim().parse().ok()
}

/// Takes the lock of the work tree containing `workspace` for run `run_id`, or says which
/// run holds it. `holders` is the directory of holder files ([`holders_dir`]).
pub fn acquire(workspace: &Path, holders: &Path, run_id: &str) -> Result<RunLock, UsageError> {
    let git_dir = git_dir(workspace)?;
    let holder = holder_file(holders, &git_dir);
    let cannot = |e: &dyn std::fmt::Display| {
        UsageError::Invalid(format!(
            "cannot lock the workspace ({}): {e}",
            git_dir.display()
        ))
    };
    let dir = File::open(&git_dir).map_err(|e| cannot(&e))?;
    let locked = match Flock::lock(dir, FlockArg::LockExclusiveNonblock) {
        Ok(locked) => locked,
        Err((_, Errno::EWOULDBLOCK)) => {
            let named = std::fs::read_to_string(&holder).unwrap_or_default();
            let named = named.trim();
            let who = if named.is_empty() {
                String::new()
            } else {
                format!(" ({named})")
            };
            return Err(UsageError::Invalid(format!(
                "another run is active in this workspace{who}: wait for it to end or cancel it, then try again"
            )));
        }
        Err((_, errno)) => return Err(cannot(&errno)),
    };
    // Holding the lock, any name already there is a run that ended without removing it.
    let took_over = std::fs::read_to_string(&holder)
        .ok()
        .map(|text| crate::text::sanitize_line(text.trim()))
        .filter(|text| !text.is_empty())
        .map(|left| {
            let gone = holder_pid(&left).is_none_or(|pid| {
                nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_err()
            });
            let why = if gone {
                "its process is gone"
            } else {
                "that process no longer holds it"
            };
            format!(
                "taking over a stale workspace lock ({left}): {why}, so the run ended without releasing it"
            )
        });
    if let Some(line) = &took_over {
        tracing::warn!("{line}");
    }
    let named = format!(
        "run {run_id}, pid {}, started {}\n",
        std::process::id(),
        chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ")
    );
    let written = holder
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&holder, named));
    if let Err(e) = written {
        // The lock holds without it; only a refused run's message is poorer.
        tracing::warn!("workspace lock holder {}: {e}", holder.display());
    }
    Ok(RunLock {
        _git_dir: locked,
        holder,
        took_over,
    })
}
