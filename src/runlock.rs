//! One run per workspace: an exclusive `flock` on the repository's git dir, held for the whole
//! process.
//!
//! Two runs in one work tree would each see the other's edits in their diffs (and a commit at
//! review would take the other run's work), so a second run is refused. The lock is taken on
//! the git dir itself (opened read-only, nothing written there), so every run of this work
//! tree meets it whatever its data directory; the kernel drops it when the holder exits,
//! however it exits, so a lock left by a dead process is never in the way. Who holds it (run
//! id, pid, start time) is written beside the runs, in the data directory, for the refusal
//! message, and removed at the run's end (a process killed outright leaves it behind, for the
//! next holder to overwrite).

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

/// Where the holder of `git_dir`'s lock is named: `<data>/locks/<sha256 of the path>`.
fn holder_file(data: &Path, git_dir: &Path) -> PathBuf {
    // The first 16 bytes of the digest, as hex.
    let mut name = crate::text::sha256_hex(git_dir.as_os_str().as_encoded_bytes());
    name.truncate(32);
    data.join("locks").join(name)
}

/// Takes the lock of the work tree containing `workspace` for run `run_id`, or says which
/// run holds it. `data` is the data directory, where the holder is named.
pub fn acquire(workspace: &Path, data: &Path, run_id: &str) -> Result<RunLock, UsageError> {
    let git_dir = git_dir(workspace)?;
    let holder = holder_file(data, &git_dir);
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
    })
}
