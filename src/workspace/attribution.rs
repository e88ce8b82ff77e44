//! Whose change is it: the paths the worker's tools and commands could have changed, so that
//! a change nobody in the run made (the person editing a file meanwhile, another program) is
//! shown as "changed outside the run" and is not committed by default.
//!
//! Whoever runs the tools records the files a file tool names, and snapshots the work tree
//! just before and just after each call of a tool that can write anything (a command): every
//! path that differs between the two (`changed_paths`) is the worker's, whatever wrote it. A
//! change someone else makes while a command runs counts as the worker's, which errs on the
//! side of what the worker asked for; a change made at any other moment is outside the run. A file counts as the worker's when its path (or, for a rename, its old
//! path) is recorded.

use std::collections::BTreeSet;

use super::diff::DiffModel;
use super::{Snapshot, Workspace, WorkspaceError};

/// The paths (relative to the work tree's top, `/`-separated) the worker could have changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attribution {
    worker: BTreeSet<String>,
}

impl Attribution {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records paths as the worker's.
    pub fn add(&mut self, paths: impl IntoIterator<Item = String>) {
        self.worker.extend(paths);
    }

    pub fn contains(&self, path: &str) -> bool {
        self.worker.contains(path)
    }

    /// Every path recorded as the worker's.
    pub fn paths(&self) -> &BTreeSet<String> {
        &self.worker
    }

    /// Whether a file at `path` (renamed from `old_path`) is the worker's.
    pub fn is_worker(&self, path: &str, old_path: Option<&str>) -> bool {
        self.contains(path) || old_path.is_some_and(|old| self.contains(old))
    }

    /// Marks each file of `diff` that is not the worker's as changed outside the run.
    pub fn mark(&self, diff: &mut DiffModel) {
        for file in &mut diff.files {
            file.outside_run = !self.is_worker(&file.path, file.old_path.as_deref());
        }
    }
}

impl DiffModel {
    /// The paths of the files changed outside the run.
    pub fn outside_run(&self) -> Vec<&str> {
        self.files
            .iter()
            .filter(|f| f.outside_run)
            .map(|f| f.path.as_str())
            .collect()
    }

    /// The paths (old and new) of the worker's files: what a commit of the run takes.
    pub fn worker_paths(&self) -> BTreeSet<String> {
        self.files
            .iter()
            .filter(|f| !f.outside_run)
            .flat_map(|f| std::iter::once(f.path.clone()).chain(f.old_path.clone()))
            .collect()
    }
}

impl Workspace {
    /// Every path of the whole work tree that differs between two snapshots (no rename
    /// detection: a rename is its old and its new path), relative to the top. Cheap: no
    /// content is compared beyond object ids.
    pub fn changed_paths(
        &self,
        from: &Snapshot,
        to: &Snapshot,
    ) -> Result<BTreeSet<String>, WorkspaceError> {
        if from == to {
            return Ok(BTreeSet::new());
        }
        let old = self.repo.find_tree(from.tree)?;
        let new = self.repo.find_tree(to.tree)?;
        let diff = self.repo.diff_tree_to_tree(Some(&old), Some(&new), None)?;
        let mut out = BTreeSet::new();
        for delta in diff.deltas() {
            for path in [delta.old_file().path_bytes(), delta.new_file().path_bytes()]
                .into_iter()
                .flatten()
            {
                out.insert(String::from_utf8_lossy(path).into_owned());
            }
        }
        Ok(out)
    }

    /// An absolute path inside the work tree as a top-relative path (`None` outside it).
    pub fn top_relative(&self, path: &std::path::Path) -> Option<String> {
        let rel = path.strip_prefix(&self.top).ok()?;
        Some(String::from_utf8_lossy(&super::path_to_bytes(rel)).into_owned())
    }

    /// Whether a top-relative path lies inside the workspace directory.
    pub fn contains_path(&self, path: &str) -> bool {
        let dir = self.prefix.trim_end_matches('/');
        dir.is_empty()
            || path
                .strip_prefix(dir)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::FileDiff;

    fn file(path: &str, old: Option<&str>) -> FileDiff {
        FileDiff {
            old_path: old.map(String::from),
            ..FileDiff::modified(path.into())
        }
    }

    #[test]
    fn files_not_recorded_are_marked_outside_and_renames_count_by_either_path() {
        let mut worker = Attribution::new();
        worker.add(["a.txt".to_string(), "old.txt".to_string()]);
        let mut diff = DiffModel {
            files: vec![
                file("a.txt", None),
                file("b.txt", None),
                file("new.txt", Some("old.txt")),
            ],
            ..DiffModel::default()
        };
        worker.mark(&mut diff);
        assert_eq!(diff.outside_run(), vec!["b.txt"]);
        let expected: BTreeSet<String> = ["a.txt", "new.txt", "old.txt"]
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(diff.worker_paths(), expected);
    }
}
