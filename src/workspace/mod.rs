//! The workspace: the git work tree that is a Ralph run's long-term memory.
//!
//! Snapshots are git tree objects written through a temporary index, so the user's index,
//! HEAD, branches, stash and config are never touched. Diffs between snapshots feed the run
//! log (`rounds/NN/diff.patch`), the `round_finished` counts and the TUI.

pub mod diff;

use std::path::{Path, PathBuf};

use git2::{IndexAddOption, Oid, Repository};

pub use diff::{DiffLine, DiffModel, FileDiff, FileStatus, Hunk, LineKind};

#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("{0} is not inside a git work tree: run `git init` there first")]
    NotGitRepo(PathBuf),
    #[error("{0} is a bare repository: ralph-tui needs a work tree")]
    Bare(PathBuf),
    #[error("git: {0}")]
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
    /// `root` relative to the work tree's top, `""` at the top.
    prefix: String,
}

impl std::fmt::Debug for Workspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workspace")
            .field("root", &self.root)
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
        let Some(top) = repo.workdir().map(Path::to_path_buf) else {
            return Err(WorkspaceError::Bare(root));
        };
        let top = top.canonicalize().unwrap_or(top);
        let prefix = root
            .strip_prefix(&top)
            .map(|p| p.to_string_lossy().replace('\\', "/"))
            .unwrap_or_default();
        Ok(Self { repo, root, prefix })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn repo(&self) -> &Repository {
        &self.repo
    }

    /// The workspace's path inside the work tree (`""` at the top).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Writes the work tree as a tree object through a private in-memory index; the user's
    /// index file is never read for writing nor written.
    pub fn snapshot(&self) -> Result<Snapshot, WorkspaceError> {
        // A second handle, so the in-memory index never replaces the one of `self.repo`.
        let repo = Repository::open(self.repo.path())?;
        let mut index = git2::Index::new()?;
        repo.set_index(&mut index)?;
        let mut index = repo.index()?;
        // Start from HEAD so tracked files that match .gitignore stay in the snapshot.
        if let Ok(head) = repo.head().and_then(|h| h.peel_to_tree()) {
            index.read_tree(&head)?;
        }
        index.add_all(["*"].iter(), IndexAddOption::DEFAULT, None)?;
        index.update_all(["*"].iter(), None)?;
        let tree = index.write_tree_to(&repo)?;
        Ok(Snapshot { tree })
    }

    /// The diff between two snapshots, limited to the workspace directory.
    pub fn diff(&self, from: &Snapshot, to: &Snapshot) -> Result<DiffModel, WorkspaceError> {
        diff::between(&self.repo, from.tree, to.tree, &self.prefix)
    }
}
