//! The review's two ways out besides leaving the changes where they are (which needs nothing):
//! commit exactly the run's changes, or put the baseline back.
//!
//! The commit is HEAD's tree with the run's cumulative changes (baseline → final snapshot,
//! inside the workspace) applied: edits the person had made before the run and the run did
//! not touch are not swept in. It goes on top of HEAD with the person's git identity, moves
//! the branch HEAD names (or HEAD itself when detached, or makes the first commit), and then
//! the committed paths in the index are set to what was committed, so `git status` is clean
//! for them. If HEAD or the index changed during the run, it refuses and says what changed.
//! `commit_run_only` limits the commit to given paths: the review passes the worker's, so a
//! file changed outside the run (`attribution`) stays uncommitted in the work tree.
//!
//! The review's choice of files goes through the same limit: only the chosen paths' changes
//! go into the commit (and into the index afterwards); the rest stay in the work tree.
//! A gitlink (a repository nested in the work tree, or a submodule moved to another commit)
//! goes in only when `only` names it: once committed, git runs that repository's own config
//! (`core.fsmonitor`) and hooks on a plain `git status` at the top, so `commit_run` leaves
//! gitlinks out and the review never chooses one by default.
//!
//! Discarding is two steps so a person confirms a concrete list: `discard_plan` says what
//! would be lost, `discard` refuses if the work tree moved on since, then restores the
//! baseline's files (without touching the index) and removes the files the run added.

use std::collections::BTreeSet;
use std::path::Path;

use git2::{Config, Index, Oid, Repository, Signature};

use super::baseline::{head_state, Baseline};
use super::diff::subtree;
use super::{index_entry, path_from_bytes, DiffModel, Snapshot, Workspace, WorkspaceError};

const GITLINK: u32 = 0o160000;

/// What a commit made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitOutcome {
    pub commit: Oid,
    /// The branch that moved (`main`), `None` when HEAD was detached.
    pub branch: Option<String>,
    pub files_changed: usize,
    pub insertions: usize,
    pub deletions: usize,
}

/// What discarding would lose, to show before asking.
#[derive(Debug, Clone)]
pub struct DiscardPlan {
    /// The work tree when the plan was made.
    pub current: Snapshot,
    /// The run's changes that would be undone (baseline → current).
    pub lost: DiffModel,
}

pub(super) use super::write::Changes;

/// The file-level changes from `from` to `to` inside `prefix`.
pub(super) fn changes(
    repo: &Repository,
    from: Oid,
    to: Oid,
    prefix: &str,
) -> Result<Changes, WorkspaceError> {
    let old = subtree(repo, from, prefix)?;
    let new = subtree(repo, to, prefix)?;
    let diff = repo.diff_tree_to_tree(old.as_ref(), new.as_ref(), None)?;
    let dir = prefix.trim_end_matches('/');
    let full = |path: &[u8]| {
        if dir.is_empty() {
            path.to_vec()
        } else {
            [dir.as_bytes(), b"/", path].concat()
        }
    };
    let mut out = Changes::new();
    // A type change comes as a deletion plus an addition of the same path: the addition wins.
    for delta in diff.deltas() {
        if let Some(path) = delta.old_file().path_bytes() {
            out.entry(full(path)).or_insert(None);
        }
        let new_file = delta.new_file();
        if new_file.exists() {
            if let Some(path) = new_file.path_bytes() {
                out.insert(
                    full(path),
                    Some((new_file.id(), u32::from(new_file.mode()))),
                );
            }
        }
    }
    Ok(out)
}

/// Author and committer: `GIT_AUTHOR_*` / `GIT_COMMITTER_*` from the environment, else
/// `user.name` and `user.email` from the git config. Empty values count as unset.
pub fn identity(
    repo: &Repository,
) -> Result<(Signature<'static>, Signature<'static>), WorkspaceError> {
    let config = repo.config()?.snapshot()?;
    resolve_identity(&config, &|key| std::env::var(key).ok())
}

fn resolve_identity(
    config: &Config,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(Signature<'static>, Signature<'static>), WorkspaceError> {
    let value = |env_key: &str, config_key: &str| {
        env(env_key)
            .or_else(|| config.get_string(config_key).ok())
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let sign = |who: &str| -> Result<Signature<'static>, WorkspaceError> {
        let upper = who.to_uppercase();
        let name = value(&format!("GIT_{upper}_NAME"), "user.name")
            .ok_or_else(|| WorkspaceError::NoIdentity("user.name is not set".into()))?;
        let email = value(&format!("GIT_{upper}_EMAIL"), "user.email")
            .ok_or_else(|| WorkspaceError::NoIdentity("user.email is not set".into()))?;
        Signature::now(&name, &email)
            .map_err(|e| WorkspaceError::NoIdentity(e.message().to_string()))
    };
    Ok((sign("author")?, sign("committer")?))
}

impl Workspace {
    /// Commits the run's cumulative changes (baseline → `last`, inside the workspace) on top
    /// of HEAD, then makes the index agree with the commit for those paths. A gitlink added
    /// or moved is left out (only `commit_run_only` naming it commits one).
    pub fn commit_run(
        &self,
        baseline: &Baseline,
        last: &Snapshot,
        message: &str,
    ) -> Result<CommitOutcome, WorkspaceError> {
        self.commit_changes(baseline, last, message, None)
    }

    /// `commit_run` limited to `only` (paths relative to the work tree's top): the changes to
    /// every other path stay in the work tree, uncommitted.
    pub fn commit_run_only(
        &self,
        baseline: &Baseline,
        last: &Snapshot,
        message: &str,
        only: &BTreeSet<String>,
    ) -> Result<CommitOutcome, WorkspaceError> {
        self.commit_changes(baseline, last, message, Some(only))
    }

    fn commit_changes(
        &self,
        baseline: &Baseline,
        last: &Snapshot,
        message: &str,
        only: Option<&BTreeSet<String>>,
    ) -> Result<CommitOutcome, WorkspaceError> {
        super::refuse_while_running(&self.root, "nothing was committed")?;
        if let Some(what) = self.git_state_changes(baseline)? {
            return Err(WorkspaceError::GitStateChanged(what));
        }
        let message = git2::message_prettify(message, None)?;
        if message.trim().is_empty() {
            return Err(WorkspaceError::EmptyMessage);
        }
        let mut changes = changes(&self.repo, baseline.snapshot.tree, last.tree, &self.prefix)?;
        if let Some(only) = only {
            if only.is_empty() {
                return Err(WorkspaceError::NothingChosen);
            }
            changes.retain(|path, _| only.contains(String::from_utf8_lossy(path).as_ref()));
        } else {
            changes.retain(|_, change| !matches!(change, Some((_, GITLINK))));
        }
        if changes.is_empty() {
            return Err(WorkspaceError::NothingToCommit);
        }
        let (author, committer) = identity(&self.repo)?;

        let head = head_state(&self.repo)?;
        let parent = head.oid.map(|oid| self.repo.find_commit(oid)).transpose()?;
        let mut index = Index::new()?;
        if let Some(parent) = &parent {
            index.read_tree(&parent.tree()?)?;
        }
        for (path, change) in &changes {
            if change.is_none() {
                index.remove_path(&path_from_bytes(path))?;
            }
        }
        for (path, change) in &changes {
            if let Some((id, mode)) = change {
                index.add(&index_entry(path.clone(), *id, *mode))?;
            }
        }
        let tree = self.repo.find_tree(index.write_tree_to(&self.repo)?)?;
        let old_tree = match &parent {
            Some(p) => p.tree()?.id(),
            None => self.repo.treebuilder(None)?.write()?,
        };
        // The run can change files back to what HEAD has (say, undo an edit made before it).
        if tree.id() == old_tree {
            return Err(WorkspaceError::NothingToCommit);
        }
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        let commit =
            self.repo
                .commit(Some("HEAD"), &author, &committer, &message, &tree, &parents)?;

        let stats = super::diff::between(&self.repo, old_tree, tree.id(), "")?;
        self.sync_index(&changes)
            .map_err(|e| WorkspaceError::IndexNotUpdated {
                commit: commit.to_string(),
                reason: e.message().to_string(),
            })?;
        Ok(CommitOutcome {
            commit,
            branch: head
                .branch
                .map(|b| b.strip_prefix("refs/heads/").unwrap_or(&b).to_string()),
            files_changed: stats.files_changed(),
            insertions: stats.insertions,
            deletions: stats.deletions,
        })
    }

    /// Sets the committed paths in the user's index to the committed entries. A work-tree
    /// file that still has the committed content gets its stat data recorded (so `git status`
    /// need not read it again); one that changed since gets blank stat data, so git looks.
    fn sync_index(&self, changes: &Changes) -> Result<(), git2::Error> {
        let mut index = self.repo.index()?;
        index.read(true)?;
        for (path, change) in changes {
            let p = path_from_bytes(path);
            match change {
                None => index.remove_path(&p)?,
                Some((id, mode)) if *mode == GITLINK => {
                    index.add(&index_entry(path.clone(), *id, *mode))?
                }
                Some((id, mode)) => {
                    let fresh = index.add_path(&p).is_ok()
                        && index
                            .get_path(&p, 0)
                            .is_some_and(|e| e.id == *id && e.mode == *mode);
                    if !fresh {
                        index.add(&index_entry(path.clone(), *id, *mode))?;
                    }
                }
            }
        }
        index.write()
    }

    /// What discarding the run's changes would lose: the diff from the baseline to the work
    /// tree as it is now. Show it, ask, then pass the plan to `discard`.
    pub fn discard_plan(&self, baseline: &Baseline) -> Result<DiscardPlan, WorkspaceError> {
        let current = self.snapshot()?;
        let lost = self.diff(&baseline.snapshot, &current)?;
        Ok(DiscardPlan { current, lost })
    }

    /// Puts the workspace back to the baseline: files the run changed or deleted are restored,
    /// files it added are removed. Refuses when the work tree changed since `plan` was made.
    /// The index, HEAD and refs are not touched; submodules are left where they are. Returns
    /// the paths it restored or removed, relative to the work tree's top.
    pub fn discard(
        &self,
        baseline: &Baseline,
        plan: &DiscardPlan,
    ) -> Result<Vec<String>, WorkspaceError> {
        self.discard_to(&baseline.snapshot, plan, None)
    }

    /// `discard` back to `to` (the work tree before the run's changes reached it), limited to
    /// `only` when given (paths relative to the work tree's top): after a commit, the files
    /// left out of it can still go, the committed ones stay as they are.
    pub fn discard_to(
        &self,
        to: &Snapshot,
        plan: &DiscardPlan,
        only: Option<&BTreeSet<String>>,
    ) -> Result<Vec<String>, WorkspaceError> {
        super::refuse_while_running(&self.root, "nothing was discarded")?;
        if self.snapshot()? != plan.current {
            return Err(WorkspaceError::WorkTreeChanged);
        }
        let mut changes = changes(&self.repo, plan.current.tree, to.tree, &self.prefix)?;
        if let Some(only) = only {
            changes.retain(|path, _| only.contains(String::from_utf8_lossy(path).as_ref()));
        }
        // Nothing is removed or restored through a directory swapped for a symlink.
        for path in changes.keys() {
            if let Some(link) = super::unsafe_parent(&self.top, &path_from_bytes(path)) {
                return Err(WorkspaceError::ThroughSymlink {
                    path: String::from_utf8_lossy(path).into_owned(),
                    link,
                });
            }
        }
        // Nothing git does not know is removed (a file ignored under a directory the run
        // made where the baseline has a file).
        let known = self.repo.find_tree(plan.current.tree)?;
        let in_the_way = super::write::in_the_way(&self.top, &known, &changes)?;
        if !in_the_way.is_empty() {
            return Err(WorkspaceError::Untracked(in_the_way));
        }
        changes.retain(|_, change| !matches!(change, Some((_, GITLINK))));
        let floor = Path::new(self.prefix.trim_end_matches('/'));
        super::write::write_changes(&self.repo, &self.top, &changes, Some(floor))?;
        Ok(changes
            .keys()
            .map(|path| path_from_bytes(path).to_string_lossy().into_owned())
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> (tempfile::TempDir, Config) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        std::fs::write(&path, text).unwrap();
        let config = Config::open(&path).unwrap();
        (dir, config)
    }

    #[test]
    fn identity_comes_from_config_or_environment() {
        let (_d, with) = config("[user]\n\tname = Ann\n\temail = ann@example.com\n");
        let (author, committer) = resolve_identity(&with, &|_| None).unwrap();
        assert_eq!(author.name(), Some("Ann"));
        assert_eq!(committer.email(), Some("ann@example.com"));

        let env = |k: &str| (k == "GIT_AUTHOR_NAME").then(|| "Bob".to_string());
        let (author, committer) = resolve_identity(&with, &env).unwrap();
        assert_eq!(author.name(), Some("Bob"));
        assert_eq!(committer.name(), Some("Ann"));
    }

    #[test]
    fn missing_identity_is_a_clear_error() {
        let (_d, without) = config("[core]\n\tbare = false\n");
        let Err(err) = resolve_identity(&without, &|_| None) else {
            panic!("an identity from nowhere");
        };
        assert!(matches!(err, WorkspaceError::NoIdentity(_)));
        let text = err.to_string();
        assert!(text.contains("git config --global user.name"), "{text}");
        let (_d, empty) = config("[user]\n\tname = \n\temail = x@example.com\n");
        assert!(matches!(
            resolve_identity(&empty, &|_| None),
            Err(WorkspaceError::NoIdentity(_))
        ));
    }
}
