//! The workspace: the git work tree that is a Ralph run's long-term memory.
//!
//! Snapshots are git tree objects written through a private copy of the index, so the user's
//! index, HEAD, branches, stash and config are never touched (`snapshot`). Diffs between
//! snapshots feed the run log (`rounds/NN/diff.patch`), the `round_finished` counts and the
//! TUI (`diff`). A watcher reports live changes during a round (`watch`), and the review at
//! the end commits exactly the run's changes (all or the chosen files) or puts the baseline
//! back (`commit`), and can undo one round by applying its patch in reverse (`revert`). Which
//! changes are the run's, and which someone else made meanwhile, is `attribution`.
//!
//! The workspace may be a subdirectory of the work tree: snapshots always cover the whole
//! work tree (that is what a commit needs), diffs and commits are limited to the workspace.
//! A bare repository, or a directory inside a git directory, is never a workspace.

pub mod attribution;
mod baseline;
mod bigfile;
pub mod commit;
pub mod diff;
pub mod gitguard;
pub mod hidden;
pub mod revert;
mod review;
mod snapshot;
pub mod watch;
pub mod worktree;
mod write;

use std::path::{Path, PathBuf};

use git2::{Oid, Repository};

pub use attribution::Attribution;
pub use baseline::Baseline;
pub use commit::{CommitOutcome, DiscardPlan};
pub use diff::{DiffLine, DiffModel, DisplayLimits, FileDiff, Hunk, LineKind};
pub use hidden::{Hidden, HiddenChange, HiddenWhy, Listing};
pub use review::uncommitted_warning;
pub use watch::{LiveWatch, OnChange, WatchStats};
pub use worktree::{WorktreeError, WorktreeInfo};

/// Files larger than this are never read into a diff: the diff lists them as binary and too
/// large to show (`diff.patch` gets git's `Binary files ... differ`, without the content), and
/// a commit still carries them as they are.
pub const DIFF_MAX_BYTES: u64 = 4 * 1024 * 1024;

/// Files larger than this (in the work tree) are never read at all: snapshots keep what the
/// index has for them, so they are in no diff and no commit, and the review names them among
/// the changes it does not show, as too large. Hashing and compressing a new one this large
/// takes well under a second, so a snapshot (one before and after every tool call) never
/// holds up a cancel for long, and a sparse file of many GiB costs nothing.
pub const TRACK_MAX_BYTES: u64 = 16 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("{0} is not inside a git work tree: run `git init` there first")]
    NotGitRepo(PathBuf),
    #[error("{0} is a bare repository, which has no work tree to change: pass a clone's work tree with -C")]
    Bare(PathBuf),
    #[error("{dir} is inside the git directory {git_dir}, not in a work tree: pass the work tree's directory with -C")]
    InsideGitDir { dir: PathBuf, git_dir: PathBuf },
    #[error("no git identity to commit with: set one with `git config --global user.name \"Your Name\"` and `git config --global user.email you@example.com` ({0})")]
    NoIdentity(String),
    #[error("refusing to commit: {0}. Nothing was committed; the run's changes are still in the work tree")]
    GitStateChanged(String),
    #[error("nothing to commit: the run changed nothing that HEAD does not already have")]
    NothingToCommit,
    #[error("no file is chosen to commit: choose at least one (space toggles)")]
    NothingChosen,
    #[error("round {round} cannot be reverted: {}. Nothing was changed", .conflicts.join("; "))]
    RevertConflicts { round: u32, conflicts: Vec<String> },
    #[error("round {0} changed no files: there is nothing to revert")]
    NothingToRevert(u32),
    #[error("the commit message is empty")]
    EmptyMessage,
    #[error("committed {commit} but could not update the index ({reason}); `git status` may list the committed files until you `git add` them")]
    IndexNotUpdated { commit: String, reason: String },
    #[error("the work tree changed since the list of what would be lost was made; look at the new list before discarding")]
    WorkTreeChanged,
    #[error("{path} is not discarded: {link} is a symlink or not a directory now, and removing or restoring through it could reach outside the work tree. Nothing was changed")]
    ThroughSymlink { path: String, link: PathBuf },
    #[error("{}: git does not track this in the work tree (is it ignored?), and discarding would remove it. Nothing was changed: move it away first, then try again", .0.join("; "))]
    Untracked(Vec<String>),
    #[error("the review stopped at {path}: {reason}. What it wrote before that path stays written; look with `git status`")]
    Stopped { path: String, reason: String },
    #[error("{0}")]
    RunProcesses(String),
    #[error("file watcher: {0}")]
    Watch(String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// git's own message, without libgit2's class and code numbers.
    #[error("git: {}", .0.message())]
    Git(#[from] git2::Error),
}

/// A snapshot of the work tree: tracked plus untracked, non-ignored files, as a tree object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Snapshot {
    pub tree: Oid,
}

/// An open workspace.
pub struct Workspace {
    repo: Repository,
    /// The directory ralph-tui works in (may be a subdirectory of the work tree).
    root: PathBuf,
    /// The top of the work tree.
    top: PathBuf,
    /// `root` relative to the work tree's top, `""` at the top.
    prefix: String,
}

impl std::fmt::Debug for Workspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workspace")
            .field("root", &self.root)
            .field("prefix", &self.prefix)
            .finish()
    }
}

impl Workspace {
    /// Opens the git work tree that contains `dir`.
    pub fn open(dir: &Path) -> Result<Self, WorkspaceError> {
        let root = dir
            .canonicalize()
            .map_err(|_| WorkspaceError::NotGitRepo(dir.to_path_buf()))?;
        let repo =
            Repository::discover(&root).map_err(|_| WorkspaceError::NotGitRepo(root.clone()))?;
        let Some(top) = repo
            .workdir()
            .map(Path::to_path_buf)
            .filter(|_| !repo.is_bare())
        else {
            return Err(WorkspaceError::Bare(root));
        };
        // `-C repo/.git` opens the repository too (with the work tree above it); the file
        // tools would then write hooks and config directly. A workspace is never inside a
        // git directory, the repository's own or the common one of a linked work tree.
        for git_dir in [repo.path(), repo.commondir()] {
            let git_dir = git_dir
                .canonicalize()
                .unwrap_or_else(|_| git_dir.to_path_buf());
            if root.starts_with(&git_dir) {
                return Err(WorkspaceError::InsideGitDir { dir: root, git_dir });
            }
        }
        let top = top.canonicalize().unwrap_or(top);
        let prefix = root
            .strip_prefix(&top)
            .map(|p| p.to_string_lossy().replace('\\', "/"))
            .unwrap_or_default();
        Ok(Self {
            repo,
            root,
            top,
            prefix,
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The top of the git work tree (the same as `root` unless the workspace is a subdirectory).
    pub fn top(&self) -> &Path {
        &self.top
    }

    pub fn repo(&self) -> &Repository {
        &self.repo
    }

    /// The workspace's path inside the work tree (`""` at the top).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Writes the whole work tree (tracked plus untracked, non-ignored files) as a tree object.
    ///
    /// It goes through a private in-memory copy of the index; the only thing written to the
    /// repository is objects (blobs and trees), never the index, HEAD, a ref or the config.
    /// Directories nested too deep for git's scan are left as the index has them; see
    /// `snapshot_seen` for their names.
    pub fn snapshot(&self) -> Result<Snapshot, WorkspaceError> {
        Ok(snapshot::take(&self.top)?.0)
    }

    /// `snapshot`, plus the directories (relative to the work tree's top) it could not look
    /// into because they are nested deeper than git's scan goes: say so to the person.
    pub fn snapshot_seen(&self) -> Result<(Snapshot, Vec<String>), WorkspaceError> {
        snapshot::take(&self.top)
    }

    /// The diff between two snapshots, limited to the workspace directory; paths are relative
    /// to the work tree's top, as in `git diff`.
    pub fn diff(&self, from: &Snapshot, to: &Snapshot) -> Result<DiffModel, WorkspaceError> {
        diff::between(&self.repo, from.tree, to.tree, &self.prefix)
    }
}

/// A git path (bytes, `/`-separated) as a `Path`; exact on Unix, lossy elsewhere.
#[cfg(unix)]
pub(crate) fn path_from_bytes(bytes: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    Path::new(std::ffi::OsStr::from_bytes(bytes)).to_path_buf()
}

/// A git path (bytes, `/`-separated) as a `Path`; exact on Unix, lossy elsewhere.
#[cfg(not(unix))]
pub(crate) fn path_from_bytes(bytes: &[u8]) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(bytes).into_owned())
}

/// A `Path` as git path bytes; exact on Unix, lossy elsewhere.
#[cfg(unix)]
pub(crate) fn path_to_bytes(path: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    path.as_os_str().as_bytes().to_vec()
}

/// A `Path` as git path bytes; exact on Unix, lossy elsewhere.
#[cfg(not(unix))]
pub(crate) fn path_to_bytes(path: &Path) -> Vec<u8> {
    path.to_string_lossy().replace('\\', "/").into_bytes()
}

/// The first directory on the way to `rel` (relative to the work tree's top) that is a
/// symlink, or anything else but a directory, in the work tree as it is now: writing or
/// removing `rel` would then go through it, possibly outside the work tree. `None` when every
/// parent is a real directory or missing (missing ones are made as directories).
pub(crate) fn unsafe_parent(top: &Path, rel: &Path) -> Option<PathBuf> {
    let mut at = PathBuf::new();
    let parent = rel.parent()?;
    for part in parent.components() {
        at.push(part);
        match std::fs::symlink_metadata(top.join(&at)) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Some(at),
            Err(_) => return None,
        }
    }
    None
}

/// Refuses, saying so, while a process of a run whose commands worked in `dir` is still
/// running: it could swap what the review is about to write (see `tools::survivors`).
pub(crate) fn refuse_while_running(dir: &Path, nothing: &str) -> Result<(), WorkspaceError> {
    use crate::tools::survivors;
    match survivors::refusal(&survivors::left_running(dir), nothing) {
        Some(sentence) => Err(WorkspaceError::RunProcesses(sentence)),
        None => Ok(()),
    }
}

/// An index entry with blank stat data (git looks at the file when it next compares).
pub(crate) fn index_entry(path: Vec<u8>, id: Oid, mode: u32) -> git2::IndexEntry {
    let zero = git2::IndexTime::new(0, 0);
    git2::IndexEntry {
        ctime: zero,
        mtime: zero,
        dev: 0,
        ino: 0,
        mode,
        uid: 0,
        gid: 0,
        file_size: 0,
        id,
        flags: 0,
        flags_extended: 0,
        path,
    }
}
