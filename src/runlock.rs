//! One run per workspace: an exclusive `flock` on a file in the repository's git dir, held
//! for the whole process.
//!
//! Two runs in one work tree would each see the other's edits in their diffs (and a commit at
//! review would take the other run's work), so a second run is refused. The kernel drops the
//! lock when the holder exits, however it exits, so a lock left by a dead process is never in
//! the way. The file says who holds it (pid, run id, start time) for the refusal message; it
//! is written by ralph-tui itself, never by a sandboxed command.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

use crate::error::UsageError;

/// The lock file's name inside the git dir.
pub const LOCK_FILE: &str = "ralph-tui.lock";

/// A held workspace lock; released when dropped or when the process ends.
#[derive(Debug)]
pub struct RunLock {
    _file: Flock<File>,
    path: PathBuf,
}

impl RunLock {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Where the lock for the work tree containing `workspace` lives.
pub fn lock_path(workspace: &Path) -> Result<PathBuf, UsageError> {
    let repo = git2::Repository::discover(workspace)
        .map_err(|_| UsageError::NotGitRepo(workspace.to_path_buf()))?;
    Ok(repo.path().join(LOCK_FILE))
}

/// Takes the workspace's lock for run `run_id`, or says which run holds it.
pub fn acquire(workspace: &Path, run_id: &str) -> Result<RunLock, UsageError> {
    let path = lock_path(workspace)?;
    let cannot = |e: &dyn std::fmt::Display| {
        UsageError::Invalid(format!(
            "cannot take the workspace lock {}: {e}",
            path.display()
        ))
    };
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| cannot(&e))?;
    let mut file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(locked) => locked,
        Err((mut file, Errno::EWOULDBLOCK)) => {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = holder.trim();
            let holder = if holder.is_empty() {
                "a run that is starting".to_string()
            } else {
                holder.to_string()
            };
            return Err(UsageError::Invalid(format!(
                "another run is active in this workspace ({holder}): wait for it to end or cancel it, then try again"
            )));
        }
        Err((_, errno)) => return Err(cannot(&errno)),
    };
    let holder = format!(
        "run {run_id}, pid {}, started {}",
        std::process::id(),
        chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ")
    );
    let written = file
        .set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| file.write_all(format!("{holder}\n").as_bytes()));
    if let Err(e) = written {
        tracing::warn!("workspace lock {}: {e}", path.display());
    }
    Ok(RunLock { _file: file, path })
}
