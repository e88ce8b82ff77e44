//! Isolated runs (`--worktree`): the run works in a linked git worktree on its own branch,
//! and the person decides at the end what reaches their own checkout.
//!
//! `create` writes the user's work tree as it is (tracked, untracked, not ignored; through
//! the private index of `snapshot`) into a commit whose parent is HEAD, points the new branch
//! `ralph/<run id>` at it and adds a worktree for that branch under
//! `<data dir>/worktrees/<run id>`. The user's checkout, index, stash and other refs are not
//! touched: the branch is the only new ref. `commit_round` commits the worktree's state on the
//! branch at the end of each round, so the branch holds the run's work round by round.
//!
//! At review: `apply_shown` merges the run's changes as the review shows them (snapshot →
//! the worktree as it is now, after any revert or discard there, limited to the chosen
//! files; never the branch's commits, which still hold what the review undid) into the
//! user's work tree as it is now, three-way, refusing with the conflicting files before
//! writing anything; only those paths are written and the user's index is never touched.
//! `commit_shown` applies and then commits the chosen paths on the current branch;
//! `discard` removes the worktree and the branch. `abandoned` lists the worktrees and
//! branches of runs that are not running (by git alone; `ralph-tui runs` lists them from the
//! runs' `run.json`), and `remove` takes one away by run id.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use git2::{BranchType, Index, Oid, Repository, WorktreeAddOptions, WorktreePruneOptions};
use serde::{Deserialize, Serialize};

use super::{
    commit, index_entry, path_from_bytes, snapshot, write, CommitOutcome, Snapshot, Workspace,
    WorkspaceError,
};

/// Branches of worktree runs are `ralph/<run id>`.
pub const BRANCH_PREFIX: &str = "ralph/";

/// Where a worktree run works, as `run.json` records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorktreeInfo {
    /// The worktree's top directory (`<data dir>/worktrees/<run id>`).
    pub path: PathBuf,
    /// The run's branch, `ralph/<run id>`.
    pub branch: String,
    /// The commit holding the user's work tree when the run started.
    pub snapshot: String,
    /// The top of the user's own work tree.
    pub user_repo: PathBuf,
    /// The workspace inside the work tree (`""` at the top), the same in both.
    #[serde(default)]
    pub prefix: String,
}

/// Why a worktree action did not happen.
#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    #[error("the run's changes conflict with yours in {}: nothing was applied", .0.join(", "))]
    Conflicts(Vec<String>),
    #[error("run {0} is still running: cancel it first")]
    Running(String),
    #[error("{0}")]
    Workspace(#[from] WorkspaceError),
    #[error("git: {}", .0.message())]
    Git(#[from] git2::Error),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl From<WorktreeError> for WorkspaceError {
    fn from(e: WorktreeError) -> Self {
        match e {
            WorktreeError::Workspace(e) => e,
            WorktreeError::Git(e) => WorkspaceError::Git(e),
            WorktreeError::Io { path, source } => WorkspaceError::Io { path, source },
            other @ (WorktreeError::Conflicts(_) | WorktreeError::Running(_)) => {
                WorkspaceError::GitStateChanged(other.to_string())
            }
        }
    }
}

/// What the review's commit of a worktree run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    pub outcome: CommitOutcome,
    /// The user's work tree before the run's changes were applied to it.
    pub before: Snapshot,
    /// The user's work tree after applying (and committing the chosen files).
    pub after: Snapshot,
}

/// What `apply` wrote into the user's work tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The paths written or removed, relative to the work tree's top.
    pub paths: Vec<String>,
    /// The same paths as git has them (bytes).
    raw: Vec<Vec<u8>>,
}

/// The worktree of a run, by run id.
pub fn worktree_path(data_dir: &Path, run_id: &str) -> PathBuf {
    data_dir.join("worktrees").join(run_id)
}

/// The signature for the branch's commits: the person's, or a plain stand-in when git has
/// none (these commits are on the run's own branch, not the person's).
fn signature(repo: &Repository) -> Result<git2::Signature<'static>, git2::Error> {
    match commit::identity(repo) {
        Ok((author, _)) => Ok(author),
        Err(_) => git2::Signature::now("ralph-tui", "ralph-tui@localhost"),
    }
}

/// Makes the run's worktree: the snapshot commit, the branch `ralph/<run id>` and the
/// worktree under `<data dir>/worktrees/<run id>`, from the work tree containing `workspace`.
pub fn create(
    workspace: &Path,
    data_dir: &Path,
    run_id: &str,
) -> Result<WorktreeInfo, WorktreeError> {
    let user = Workspace::open(workspace)?;
    let repo = user.repo();
    let snap = user.snapshot()?;
    let tree = repo.find_tree(snap.tree)?;
    let parent = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
    let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
    let sig = signature(repo)?;
    let message = format!("ralph-tui run {run_id}: the work tree when the run started\n");
    // No ref moves: the commit is written as an object only, then the branch points at it.
    let snapshot = repo.commit(None, &sig, &sig, &message, &tree, &parents)?;
    let branch_name = format!("{BRANCH_PREFIX}{run_id}");
    let branch = repo.branch(&branch_name, &repo.find_commit(snapshot)?, false)?;
    let path = worktree_path(data_dir, run_id);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|source| WorktreeError::Io {
            path: parent.to_path_buf(),
            source,
        })?;
    }
    let mut opts = WorktreeAddOptions::new();
    opts.reference(Some(branch.get()));
    if let Err(e) = repo.worktree(run_id, &path, Some(&opts)) {
        // Leave nothing behind: the branch was the only new ref.
        let _ = repo
            .find_branch(&branch_name, BranchType::Local)
            .and_then(|mut b| b.delete());
        return Err(e.into());
    }
    let path = path.canonicalize().unwrap_or(path);
    Ok(WorktreeInfo {
        path,
        branch: branch_name,
        snapshot: snapshot.to_string(),
        user_repo: user.top().to_path_buf(),
        prefix: user.prefix().to_string(),
    })
}

impl WorktreeInfo {
    /// The directory the worker works in: the workspace inside the worktree.
    pub fn workspace(&self) -> PathBuf {
        if self.prefix.is_empty() {
            self.path.clone()
        } else {
            self.path.join(&self.prefix)
        }
    }

    /// How to get a kept branch's work later, for the line after the run: what its first
    /// commit is, how to continue it (when the run can go on), how to bring its changes into
    /// the work tree and how to remove it.
    pub fn kept_line(&self, resumable: bool) -> String {
        let snap = self.snapshot.get(..10).unwrap_or(&self.snapshot);
        let branch = &self.branch;
        let resume = if resumable {
            format!("continue it with `ralph-tui --resume {}`; ", self.run_id())
        } else {
            String::new()
        };
        format!(
            "the run's work is kept on branch {branch}, whose first commit ({snap}) is a \
             snapshot of your uncommitted files when the run started: {resume}bring its \
             changes into your work tree with `git diff {snap} {branch} | git apply --3way`; \
             remove it with `ralph-tui runs --prune {}`",
            self.run_id()
        )
    }

    /// The run id, from the branch name.
    pub fn run_id(&self) -> &str {
        self.branch
            .strip_prefix(BRANCH_PREFIX)
            .unwrap_or(&self.branch)
    }

    fn refname(&self) -> String {
        format!("refs/heads/{}", self.branch)
    }

    /// Commits the worktree as it is on the run's branch (one commit per call, even when
    /// nothing changed) and makes the worktree's own index agree with it.
    pub fn commit_round(&self, message: &str) -> Result<Oid, WorktreeError> {
        let repo = Repository::open(&self.path)?;
        let (snap, _unseen) = snapshot::take(&self.path)?;
        let tree = repo.find_tree(snap.tree)?;
        let parent = repo.find_reference(&self.refname())?.peel_to_commit()?;
        let sig = signature(&repo)?;
        let message = git2::message_prettify(message, None)?;
        let message = if message.trim().is_empty() {
            "round without a summary\n".to_string()
        } else {
            message
        };
        let oid = repo.commit(
            Some(&self.refname()),
            &sig,
            &sig,
            &message,
            &tree,
            &[&parent],
        )?;
        // The worktree's index (never the user's) follows its branch, so `git status` in the
        // worktree shows only what changed since the last round.
        let mut index = repo.index()?;
        index.read_tree(&tree)?;
        index.write()?;
        Ok(oid)
    }

    /// The branch's tip.
    pub fn tip(&self) -> Result<Oid, WorktreeError> {
        let repo = Repository::open(&self.user_repo)?;
        let tip = repo.find_reference(&self.refname())?.peel_to_commit()?.id();
        Ok(tip)
    }

    /// The run's work as the review shows it: the worktree as it is now (after any revert or
    /// discard in the review), or the branch's tip when the worktree's directory is gone.
    pub fn shown(&self) -> Result<Oid, WorktreeError> {
        if self.path.is_dir() {
            Ok(snapshot::take(&self.path)?.0.tree)
        } else {
            let repo = Repository::open(&self.user_repo)?;
            let tree = repo.find_reference(&self.refname())?.peel_to_tree()?.id();
            Ok(tree)
        }
    }

    /// Merges the run's changes as the worktree has them now into the user's work tree (see
    /// [`WorktreeInfo::apply_shown`]).
    pub fn apply(&self) -> Result<Applied, WorktreeError> {
        self.apply_shown(self.shown()?, None)
    }

    /// Merges the run's changes (snapshot → `shown`, the tree the review showed; only the
    /// paths in `only` when given, relative to the work tree's top) into the user's work tree
    /// as it is now. Never the branch's commits: a round reverted or a discard in the review
    /// is not brought back. Refuses, writing nothing, when any file conflicts; writes only
    /// the paths it applies and never touches the index, HEAD or refs.
    pub fn apply_shown(
        &self,
        shown: Oid,
        only: Option<&BTreeSet<String>>,
    ) -> Result<Applied, WorktreeError> {
        super::refuse_while_running(&self.workspace(), "nothing was applied")?;
        let repo = Repository::open(&self.user_repo)?;
        let base = repo.find_commit(Oid::from_str(&self.snapshot)?)?.tree()?;
        let mut run_paths = commit::changes(&repo, base.id(), shown, "")?;
        if let Some(only) = only {
            run_paths.retain(|path, _| only.contains(String::from_utf8_lossy(path).as_ref()));
        }
        // Theirs: the snapshot with exactly the applied paths as the review showed them.
        let theirs = {
            let mut index = Index::new()?;
            index.read_tree(&base)?;
            for (path, change) in &run_paths {
                match change {
                    Some((id, mode)) => index.add(&index_entry(path.clone(), *id, *mode))?,
                    None => index.remove_path(&path_from_bytes(path))?,
                }
            }
            repo.find_tree(index.write_tree_to(&repo)?)?
        };
        let ours = repo.find_tree(snapshot::take(&self.user_repo)?.0.tree)?;
        let merged = repo.merge_trees(&base, &ours, &theirs, None)?;
        let mut files = through_symlinks(&self.user_repo, &ours, run_paths.keys());
        // What the user's work tree gets: each run path as the merge has it, or removed.
        let mut writes = commit::Changes::new();
        for path in run_paths.keys() {
            let entry = merged.get_path(&path_from_bytes(path), 0);
            writes.insert(path.clone(), entry.map(|e| (e.id, e.mode)));
        }
        // Nothing git does not track in the user's checkout is removed (an ignored
        // `conf/local.secret` under a directory the run replaced with a file).
        files.extend(write::in_the_way(&self.user_repo, &ours, &writes)?);
        if merged.has_conflicts() || !files.is_empty() {
            for conflict in merged.conflicts()? {
                let conflict = conflict?;
                if let Some(entry) = conflict.our.or(conflict.their).or(conflict.ancestor) {
                    files.push(String::from_utf8_lossy(&entry.path).into_owned());
                }
            }
            files.sort();
            files.dedup();
            return Err(WorktreeError::Conflicts(files));
        }
        write::write_changes(&repo, &self.user_repo, &writes, None)?;
        let paths = run_paths
            .keys()
            .map(|path| path_from_bytes(path).to_string_lossy().into_owned())
            .collect();
        Ok(Applied {
            paths,
            raw: run_paths.into_keys().collect(),
        })
    }

    /// Applies the run's changes as the worktree has them, commits exactly those paths on the
    /// user's current branch (as they are in the work tree after applying, so also after an
    /// earlier `apply`), then removes the worktree and the branch.
    pub fn commit_on_current(&self, message: &str) -> Result<CommitOutcome, WorktreeError> {
        self.commit_chosen_on_current(message, None)
    }

    /// `commit_on_current` limited to `only` (paths relative to the work tree's top).
    pub fn commit_chosen_on_current(
        &self,
        message: &str,
        only: Option<&BTreeSet<String>>,
    ) -> Result<CommitOutcome, WorktreeError> {
        Ok(self.commit_shown(message, self.shown()?, only)?.outcome)
    }

    /// The review's commit: the run's changes as the review showed them (`shown`) are applied
    /// to the user's work tree, the chosen ones (`only`) are committed on the current branch,
    /// the others stay in the work tree uncommitted (as for a run without a worktree), and
    /// the worktree and branch go, since nothing is left only there. Returns the user's work
    /// tree before and after applying, so the review can go on there (discard what was left
    /// out of the commit).
    pub fn commit_shown(
        &self,
        message: &str,
        shown: Oid,
        only: Option<&BTreeSet<String>>,
    ) -> Result<Committed, WorktreeError> {
        let user = Workspace::open(&self.user_repo.join(&self.prefix))?;
        // What would refuse the commit is checked before anything is applied, so a refusal
        // leaves the person's work tree as it was.
        if git2::message_prettify(message, None)?.trim().is_empty() {
            return Err(WorkspaceError::EmptyMessage.into());
        }
        if only.is_some_and(BTreeSet::is_empty) {
            return Err(WorkspaceError::NothingChosen.into());
        }
        commit::identity(user.repo())?;
        let mut before = user.baseline()?;
        let untouched = before.snapshot;
        let applied = self.apply_shown(shown, None)?;
        let after = user.snapshot()?;
        // What the commit starts from: the work tree with the run's paths as HEAD has them,
        // so the commit holds exactly those paths and nothing else of the work tree.
        before.snapshot = Snapshot {
            tree: super::review::with_head_entries(user.repo(), after.tree, &applied.raw)?,
        };
        let outcome = match only {
            Some(only) => user.commit_run_only(&before, &after, message, only)?,
            None => user.commit_run(&before, &after, message)?,
        };
        self.discard()?;
        Ok(Committed {
            outcome,
            before: untouched,
            after,
        })
    }

    /// Whether the worktree or the branch is still there (neither discarded nor committed).
    pub fn is_left(&self) -> bool {
        let branch = Repository::open(&self.user_repo)
            .map(|repo| repo.find_branch(&self.branch, BranchType::Local).is_ok())
            .unwrap_or(false);
        branch || self.path.exists()
    }

    /// Removes the worktree (its directory and git's record of it) and the branch.
    pub fn discard(&self) -> Result<(), WorktreeError> {
        remove_in(&self.user_repo, &self.path, self.run_id())
    }
}

/// The run's paths that writing or removing in the user's work tree would do through a
/// symlink: a parent that is a symlink (an ignored `vendor -> /elsewhere`), or the path itself
/// a symlink the snapshot does not hold as one. Each is a conflict, named with the reason.
fn through_symlinks<'a>(
    top: &Path,
    ours: &git2::Tree<'_>,
    paths: impl Iterator<Item = &'a Vec<u8>>,
) -> Vec<String> {
    const SYMLINK: i32 = 0o120000;
    let mut out = Vec::new();
    for path in paths {
        let rel = path_from_bytes(path);
        let shown = String::from_utf8_lossy(path);
        if let Some(link) = super::unsafe_parent(top, &rel) {
            out.push(format!(
                "{shown} ({} is a symlink or not a directory in your work tree)",
                link.display()
            ));
            continue;
        }
        let is_link = std::fs::symlink_metadata(top.join(&rel))
            .is_ok_and(|meta| meta.file_type().is_symlink());
        let known_link = ours
            .get_path(&rel)
            .is_ok_and(|entry| entry.filemode() == SYMLINK);
        if is_link && !known_link {
            out.push(format!("{shown} (a symlink in your work tree)"));
        }
    }
    out
}

/// Removes run `run_id`'s worktree at `path` and its branch from the repository at `repo_dir`.
fn remove_in(repo_dir: &Path, path: &Path, run_id: &str) -> Result<(), WorktreeError> {
    let repo = Repository::open(repo_dir)?;
    if let Ok(worktree) = repo.find_worktree(run_id) {
        let mut opts = WorktreePruneOptions::new();
        opts.valid(true).locked(true).working_tree(true);
        worktree.prune(Some(&mut opts))?;
    }
    if path.exists() {
        std::fs::remove_dir_all(path).map_err(|source| WorktreeError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    }
    let branch = format!("{BRANCH_PREFIX}{run_id}");
    if let Ok(mut b) = repo.find_branch(&branch, BranchType::Local) {
        b.delete()?;
    }
    Ok(())
}

/// A worktree run that is not running: its branch and worktree are still there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Abandoned {
    pub run_id: String,
    /// `ralph/<run id>`, when the branch exists.
    pub branch: Option<String>,
    /// The worktree's directory, when it exists.
    pub path: Option<PathBuf>,
}

/// Whether a run holds the lock of the worktree (a running run does, see `runlock`).
fn is_running(repo: &Repository, run_id: &str) -> bool {
    use nix::fcntl::{Flock, FlockArg};
    let Ok(worktree) = repo.find_worktree(run_id) else {
        return false;
    };
    let Ok(wt_repo) = Repository::open_from_worktree(&worktree) else {
        return false;
    };
    let Ok(dir) = std::fs::File::open(wt_repo.path()) else {
        return false;
    };
    // The lock is released again when `_probe` drops.
    match Flock::lock(dir, FlockArg::LockExclusiveNonblock) {
        Ok(_probe) => false,
        Err((_, errno)) => errno == nix::errno::Errno::EWOULDBLOCK,
    }
}

/// The worktree runs of the repository containing `dir` that are not running: `ralph/*`
/// branches and worktrees under `<data dir>/worktrees`.
pub fn abandoned(dir: &Path, data_dir: &Path) -> Result<Vec<Abandoned>, WorktreeError> {
    let repo = Repository::discover(dir)?;
    let mut found: BTreeMap<String, Abandoned> = BTreeMap::new();
    for branch in repo.branches(Some(BranchType::Local))? {
        let (branch, _) = branch?;
        let Some(name) = branch.name()?.map(str::to_string) else {
            continue;
        };
        if let Some(id) = name.strip_prefix(BRANCH_PREFIX) {
            found
                .entry(id.to_string())
                .or_insert_with(|| Abandoned {
                    run_id: id.to_string(),
                    branch: None,
                    path: None,
                })
                .branch = Some(name.clone());
        }
    }
    let under = data_dir.join("worktrees");
    let under = under.canonicalize().unwrap_or(under);
    for name in repo.worktrees()?.iter().flatten() {
        let Ok(worktree) = repo.find_worktree(name) else {
            continue;
        };
        let path = worktree.path();
        let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        if path.starts_with(&under) {
            found
                .entry(name.to_string())
                .or_insert_with(|| Abandoned {
                    run_id: name.to_string(),
                    branch: None,
                    path: None,
                })
                .path = Some(path);
        }
    }
    Ok(found
        .into_values()
        .filter(|a| !is_running(&repo, &a.run_id))
        .collect())
}

/// Removes an abandoned run's worktree and branch (refuses a running one).
pub fn remove(dir: &Path, data_dir: &Path, run_id: &str) -> Result<(), WorktreeError> {
    let repo = Repository::discover(dir)?;
    if is_running(&repo, run_id) {
        return Err(WorktreeError::Running(run_id.to_string()));
    }
    let top = repo
        .workdir()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| dir.to_path_buf());
    remove_in(&top, &worktree_path(data_dir, run_id), run_id)
}
