//! Change detection for the parts of `.git` that decide what git runs or points at: hooks,
//! config, `info/` (attributes, excludes), refs, `packed-refs` and `HEAD`.
//!
//! Commands cannot write `.git` under the sandbox (it is mounted read-only), but with
//! `--sandbox off`, or through a hole nobody knows of yet, a planted hook would run on the
//! person's next commit, outside any sandbox, and show in no diff. The engine takes a
//! [`GitFingerprint`] before each round and names what differs after it in a warning.
//!
//! A repository embedded in the work tree and tracked as a gitlink keeps its own `.git`
//! inside the workspace, where commands may write; git at the top runs that repository's
//! `core.fsmonitor` on a plain `git status`, so its git dir is watched too.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Bytes of each file that are hashed (length and mode always count).
const HASHED_BYTES: u64 = 1 << 20;
/// Files looked at per git dir, so a huge refs tree cannot stall a round.
const MAX_FILES: usize = 20_000;
/// The watched entries of a git dir; directories are walked.
const WATCHED: &[&str] = &[
    "hooks",
    "config",
    "config.worktree",
    "info",
    "refs",
    "packed-refs",
    "HEAD",
];

/// What the watched parts of a repository's git dirs looked like at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitFingerprint {
    files: BTreeMap<PathBuf, u64>,
}

impl GitFingerprint {
    /// Fingerprints the git dir (and common dir) of the repository containing `workspace`;
    /// empty when there is none.
    pub fn take(workspace: &Path) -> Self {
        let mut files = BTreeMap::new();
        let Ok(repo) = git2::Repository::discover(workspace) else {
            return Self { files };
        };
        let mut dirs = vec![repo.path().to_path_buf()];
        if repo.commondir() != repo.path() {
            dirs.push(repo.commondir().to_path_buf());
        }
        dirs.extend(gitlink_git_dirs(&repo));
        for dir in dirs {
            let mut budget = MAX_FILES;
            for entry in WATCHED {
                walk(&dir.join(entry), &mut files, &mut budget);
            }
        }
        Self { files }
    }

    /// The watched paths that were added, removed or changed since `self`, one phrase each.
    pub fn changes(&self, after: &Self) -> Vec<String> {
        let mut changes = Vec::new();
        for (path, hash) in &after.files {
            match self.files.get(path) {
                None => changes.push(format!("{} (added)", path.display())),
                Some(old) if old != hash => changes.push(format!("{} (changed)", path.display())),
                Some(_) => {}
            }
        }
        for path in self.files.keys() {
            if !after.files.contains_key(path) {
                changes.push(format!("{} (removed)", path.display()));
            }
        }
        changes
    }

    /// The warning for what changed during `round`, if anything did.
    pub fn warning(&self, after: &Self, round: u32) -> Option<String> {
        let changes = self.changes(after);
        if changes.is_empty() {
            return None;
        }
        Some(format!(
            "round {round} changed git hooks, config or refs (check them before you commit: a hook runs outside the sandbox): {}",
            changes.join(", ")
        ))
    }
}

/// The `.git` directories of the repositories the index tracks as gitlinks and whose git dir
/// lies in the work tree (an embedded repository, not a submodule whose git dir is under
/// `.git/modules`, which is watched with the rest of `.git`).
fn gitlink_git_dirs(repo: &git2::Repository) -> Vec<PathBuf> {
    let (Some(top), Ok(index)) = (repo.workdir(), repo.index()) else {
        return Vec::new();
    };
    index
        .iter()
        .filter(|entry| entry.mode == 0o160000)
        .map(|entry| top.join(super::path_from_bytes(&entry.path)).join(".git"))
        .filter(|dot_git| std::fs::symlink_metadata(dot_git).is_ok_and(|m| m.is_dir()))
        .take(MAX_FILES)
        .collect()
}

fn walk(path: &Path, files: &mut BTreeMap<PathBuf, u64>, budget: &mut usize) {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    if *budget == 0 {
        return;
    }
    *budget -= 1;
    if meta.is_dir() {
        let Ok(entries) = std::fs::read_dir(path) else {
            return;
        };
        let mut children: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        children.sort();
        for child in children {
            walk(&child, files, budget);
        }
        return;
    }
    let mut hasher = DefaultHasher::new();
    meta.len().hash(&mut hasher);
    meta.permissions().mode().hash(&mut hasher);
    if meta.file_type().is_symlink() {
        std::fs::read_link(path).ok().hash(&mut hasher);
    } else if meta.is_file() {
        let mut bytes = Vec::new();
        if let Ok(file) = std::fs::File::open(path) {
            let _ = file.take(HASHED_BYTES).read_to_end(&mut bytes);
        }
        bytes.hash(&mut hasher);
    }
    files.insert(path.to_path_buf(), hasher.finish());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_added_changed_and_removed_entries() {
        let dir = tempfile::tempdir().unwrap();
        git2::Repository::init(dir.path()).unwrap();
        let git = dir.path().join(".git");
        std::fs::write(git.join("hooks/pre-push"), "#!/bin/sh\n").unwrap();
        let before = GitFingerprint::take(dir.path());
        assert_eq!(before, GitFingerprint::take(dir.path()));
        std::fs::write(git.join("hooks/post-commit"), "#!/bin/sh\ncurl x\n").unwrap();
        let mut config = std::fs::read_to_string(git.join("config")).unwrap();
        config.push_str("[core]\n\thooksPath = elsewhere\n");
        std::fs::write(git.join("config"), config).unwrap();
        std::fs::remove_file(git.join("hooks/pre-push")).unwrap();
        std::fs::write(git.join("objects/ignored"), "x").unwrap();
        let after = GitFingerprint::take(dir.path());
        let changes = before.changes(&after);
        assert_eq!(changes.len(), 3, "{changes:?}");
        assert!(changes
            .iter()
            .any(|c| c.ends_with("hooks/post-commit (added)")));
        assert!(changes.iter().any(|c| c.ends_with("config (changed)")));
        assert!(changes
            .iter()
            .any(|c| c.ends_with("hooks/pre-push (removed)")));
        let warning = before.warning(&after, 2).unwrap();
        assert!(
            warning.starts_with("round 2 changed git hooks"),
            "{warning}"
        );
        assert!(after.warning(&after, 3).is_none());
    }

    #[test]
    fn an_embedded_repository_tracked_as_a_gitlink_is_watched() {
        let dir = tempfile::tempdir().unwrap();
        let top = git2::Repository::init(dir.path()).unwrap();
        let inner = git2::Repository::init(dir.path().join("vendor/lib")).unwrap();
        std::fs::write(dir.path().join("vendor/lib/lib.c"), "int x;\n").unwrap();
        let sig = git2::Signature::now("T", "t@example.com").unwrap();
        let mut inner_index = inner.index().unwrap();
        inner_index.add_path(Path::new("lib.c")).unwrap();
        let tree = inner.find_tree(inner_index.write_tree().unwrap()).unwrap();
        let head = inner
            .commit(Some("HEAD"), &sig, &sig, "v", &tree, &[])
            .unwrap();
        let mut index = top.index().unwrap();
        index
            .add(&crate::workspace::index_entry(
                b"vendor/lib".to_vec(),
                head,
                0o160000,
            ))
            .unwrap();
        index.write().unwrap();
        // An untracked nested repository is not git's business at the top: not watched.
        git2::Repository::init(dir.path().join("scratch")).unwrap();

        let before = GitFingerprint::take(dir.path());
        let config = dir.path().join("vendor/lib/.git/config");
        let mut text = std::fs::read_to_string(&config).unwrap();
        text.push_str("[core]\n\tfsmonitor = echo ran\n");
        std::fs::write(&config, text).unwrap();
        std::fs::write(dir.path().join("scratch/.git/config"), "[core]\n").unwrap();
        let after = GitFingerprint::take(dir.path());
        let changes = before.changes(&after);
        assert_eq!(changes.len(), 1, "{changes:?}");
        assert!(
            changes[0].ends_with("vendor/lib/.git/config (changed)"),
            "{changes:?}"
        );
    }
}
