//! What the review shows: for each file the run changed, the change a commit records, from
//! the commit it goes on (HEAD) to the content it takes (the work tree's).
//!
//! A commit holds whole files. Where the person had changed a file before the run (an
//! uncommitted `# local edit`) and the run changed it too, the commit carries both, so the
//! review shows both: the file's diff starts from HEAD's version, not from the baseline, and
//! the file is marked as holding the person's changes ([`FileDiff::yours_before`]). A file the
//! run did not change is not shown and not committed, however the person changed it.
//!
//! [`Workspace::uncommitted`] names those files at the start, so the person knows before the
//! first round which of their changes a commit of the run could carry.
//!
//! [`FileDiff::yours_before`]: super::diff::FileDiff::yours_before

use git2::{Index, Oid, Repository};

use super::diff::{self, DiffModel};
use super::{commit, index_entry, path_from_bytes, Snapshot, Workspace, WorkspaceError};

/// How many files [`uncommitted_warning`] names before it says how many more.
const NAMED: usize = 8;

impl Workspace {
    /// The review's diff of the run's changes from `base` to `now`, each file from what the
    /// tree `on` has (the tree of the commit a commit goes on, [`Workspace::head_tree`] for
    /// a run in place; `None` before the first commit) to what `now` has, so it is exactly
    /// what a commit of the file records. Files whose `base` differs from `on` (the person's
    /// uncommitted changes before the run) are marked.
    pub fn review_diff(
        &self,
        base: &Snapshot,
        now: &Snapshot,
        on: Option<Oid>,
    ) -> Result<DiffModel, WorkspaceError> {
        let changed: Vec<Vec<u8>> = commit::changes(&self.repo, base.tree, now.tree, &self.prefix)?
            .into_keys()
            .collect();
        let from = with_entries_of(&self.repo, base.tree, on, &changed)?;
        let mut model = diff::between(&self.repo, from, now.tree, &self.prefix)?;
        if from != base.tree {
            let before = commit::changes(&self.repo, from, base.tree, &self.prefix)?;
            for file in &mut model.files {
                let full = self.full_path(&file.path);
                let old = file.old_path.as_deref().map(|p| self.full_path(p));
                file.yours_before = before.contains_key(full.as_bytes())
                    || old.is_some_and(|o| before.contains_key(o.as_bytes()));
            }
        }
        Ok(model)
    }

    /// The files inside the workspace whose work-tree content differs from HEAD's (changed,
    /// added or removed, and not committed), relative to the workspace.
    pub fn uncommitted(&self, snapshot: &Snapshot) -> Result<Vec<String>, WorkspaceError> {
        let Some(head) = head_tree(&self.repo) else {
            return Ok(Vec::new());
        };
        let changes = commit::changes(&self.repo, head, snapshot.tree, &self.prefix)?;
        let dir = self.prefix.trim_end_matches('/');
        Ok(changes
            .keys()
            .map(|path| {
                let path = path_from_bytes(path).to_string_lossy().into_owned();
                match path.strip_prefix(dir) {
                    Some(rest) if !dir.is_empty() => rest.trim_start_matches('/').to_string(),
                    _ => path,
                }
            })
            .collect())
    }

    /// The tree of HEAD's commit; `None` before the first commit.
    pub fn head_tree(&self) -> Option<Oid> {
        head_tree(&self.repo)
    }

    /// Whether the object database holds the tree `id` (a snapshot taken earlier).
    pub fn has_tree(&self, id: Oid) -> bool {
        self.repo.find_tree(id).is_ok()
    }

    /// The tree of the first parent of the commit `id` (hex): what a worktree run's snapshot
    /// commit went on. `None` when it has no parent (or there is no such commit).
    pub fn parent_tree(&self, id: &str) -> Option<Oid> {
        let oid = Oid::from_str(id).ok()?;
        let parent = self.repo.find_commit(oid).ok()?.parent(0).ok()?;
        Some(parent.tree_id())
    }

    /// The tree of the commit `id` (hex), as a snapshot; `None` when there is no such commit.
    pub fn commit_tree(&self, id: &str) -> Option<Snapshot> {
        let oid = Oid::from_str(id).ok()?;
        let tree = self.repo.find_commit(oid).ok()?.tree_id();
        Some(Snapshot { tree })
    }

    /// `path` (relative to the workspace, as a diff names it) relative to the work tree's top.
    fn full_path(&self, path: &str) -> String {
        let dir = self.prefix.trim_end_matches('/');
        if dir.is_empty() {
            path.to_string()
        } else {
            format!("{dir}/{path}")
        }
    }
}

/// The warning for the start of a run when the person has uncommitted changes in `files`
/// (from [`Workspace::uncommitted`]); `None` when there are none.
pub fn uncommitted_warning(files: &[String]) -> Option<String> {
    if files.is_empty() {
        return None;
    }
    let mut named: Vec<String> = files
        .iter()
        .take(NAMED)
        .map(|f| crate::text::sanitize_line(f))
        .collect();
    if files.len() > NAMED {
        named.push(format!("{} more", files.len() - NAMED));
    }
    Some(format!(
        "you have uncommitted changes in {}: where the run changes one of these files, the \
         review shows your changes with the run's, marks the file \"yours too\" and leaves it \
         unchosen; a commit takes whole files",
        named.join(", ")
    ))
}

fn head_tree(repo: &Repository) -> Option<Oid> {
    repo.head()
        .ok()
        .and_then(|h| h.peel_to_tree().ok())
        .map(|t| t.id())
}

/// `tree` with each of `paths` (relative to the work tree's top) as the tree `from` has it:
/// its entry, or none where `from` has none (or is `None`: no commit yet).
pub(super) fn with_entries_of(
    repo: &Repository,
    tree: Oid,
    from: Option<Oid>,
    paths: &[Vec<u8>],
) -> Result<Oid, git2::Error> {
    let from = from.map(|id| repo.find_tree(id)).transpose()?;
    let mut index = Index::new()?;
    index.read_tree(&repo.find_tree(tree)?)?;
    for path in paths {
        let rel = path_from_bytes(path);
        match from.as_ref().and_then(|t| t.get_path(&rel).ok()) {
            Some(entry) if entry.kind() != Some(git2::ObjectType::Tree) => {
                index.add(&index_entry(
                    path.clone(),
                    entry.id(),
                    entry.filemode() as u32,
                ))?;
            }
            _ => {
                let _ = index.remove_path(&rel);
            }
        }
    }
    index.write_tree_to(repo)
}

/// `tree` with `paths` as HEAD has them (see [`with_entries_of`]).
pub(super) fn with_head_entries(
    repo: &Repository,
    tree: Oid,
    paths: &[Vec<u8>],
) -> Result<Oid, git2::Error> {
    with_entries_of(repo, tree, head_tree(repo), paths)
}
