//! The directory walk of `list_dir` and `search`, with ignore rules read confined.
//!
//! The `ignore` crate's own rule loading opens `.gitignore`, `.ignore` and `.git/info/exclude`
//! by name and reads them to the end: a worker that makes its `.gitignore` a FIFO hangs the
//! walk, and one that links it to `/dev/zero` fills memory. So the walk here turns all of that
//! off and loads the rules itself through `confined` (beneath the top of the work tree, no
//! symlinks, regular files only, bounded), once per directory. Symlinks are never followed
//! and `.git/` is never entered. Both tools start a walk the same way: [`open_start`] checks
//! that the path they were given exists beneath the root, [`walk_from`] walks it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::Match;

use super::confined::{Opened, Refusal, Root};
use super::path::{open_root, Resolved};
use super::ToolError;

/// Ignore files larger than this are not used.
const MAX_IGNORE_BYTES: u64 = 1024 * 1024;
/// Per-directory ignore files, highest precedence first (as the `ignore` crate orders them).
const IGNORE_FILES: [&str; 2] = [".ignore", ".gitignore"];

/// The ignore rules of one work tree, loaded lazily and confined.
#[derive(Debug)]
pub struct Rules {
    /// The top of the work tree (the nearest ancestor of the workspace with `.git`), or the
    /// workspace root when there is none.
    top: PathBuf,
    confined: Root,
    exclude: Gitignore,
    per_dir: Mutex<HashMap<PathBuf, Arc<Vec<Gitignore>>>>,
}

impl Rules {
    /// The rules for walking inside `root` (canonical).
    pub fn new(root: &Path) -> Result<Arc<Self>, ToolError> {
        let top = root
            .ancestors()
            .find(|dir| dir.join(".git").symlink_metadata().is_ok())
            .unwrap_or(root)
            .to_path_buf();
        let confined = Root::open(&top).map_err(|e| {
            ToolError::new(format!(
                "the workspace root {} is not accessible: {e}",
                root.display()
            ))
        })?;
        let exclude = load(&confined, &top, &top, &[".git/info/exclude"]);
        Ok(Arc::new(Self {
            top,
            confined,
            exclude,
            per_dir: Mutex::new(HashMap::new()),
        }))
    }

    /// Whether `path` (absolute, under the top) is ignored; `is_dir` says what it is.
    pub fn ignored(&self, path: &Path, is_dir: bool) -> bool {
        for dir in path.ancestors().skip(1) {
            if !dir.starts_with(&self.top) {
                break;
            }
            for rules in self.dir_rules(dir).iter() {
                match rules.matched(path, is_dir) {
                    Match::Ignore(_) => return true,
                    Match::Whitelist(_) => return false,
                    Match::None => {}
                }
            }
        }
        self.exclude.matched(path, is_dir).is_ignore()
    }

    fn dir_rules(&self, dir: &Path) -> Arc<Vec<Gitignore>> {
        let mut cache = self.per_dir.lock().unwrap_or_else(PoisonError::into_inner);
        cache
            .entry(dir.to_path_buf())
            .or_insert_with(|| {
                Arc::new(
                    IGNORE_FILES
                        .iter()
                        .map(|name| load(&self.confined, &self.top, dir, &[name]))
                        .collect(),
                )
            })
            .clone()
    }
}

/// One matcher rooted at `dir` from the files `names` (relative to `dir`); a file that is
/// missing, refused (not regular, a symlink, too large) or unreadable adds no rule.
fn load(confined: &Root, top: &Path, dir: &Path, names: &[&str]) -> Gitignore {
    let mut builder = GitignoreBuilder::new(dir);
    let base = dir.strip_prefix(top).unwrap_or(Path::new(""));
    for name in names {
        if let Ok(bytes) = confined.read(&base.join(name), MAX_IGNORE_BYTES) {
            for line in String::from_utf8_lossy(&bytes).lines() {
                // A malformed line is skipped, as git does.
                let _ = builder.add_line(None, line);
            }
        }
    }
    builder.build().unwrap_or_else(|_| Gitignore::empty())
}

/// Opens `target` beneath the workspace `root`, for a walk that starts there; one that does
/// not exist is "no `what` '…' in the workspace".
pub fn open_start(root: &Path, target: &Resolved, what: &str) -> Result<(Root, Opened), ToolError> {
    let confined = open_root(root)?;
    match confined.open_read(&target.path) {
        Ok(opened) => Ok((confined, opened)),
        Err(Refusal::NotFound) => Err(ToolError::new(format!(
            "no {what} '{}' in the workspace",
            target.rel
        ))),
        Err(e) => Err(e.about(&target.rel)),
    }
}

/// The walk of `target` with the work tree's rules, and the canonical workspace root (from
/// `root`) that its entries are relative to.
pub fn walk_from(
    root: &Path,
    target: &Resolved,
    max_depth: Option<usize>,
) -> Result<(PathBuf, ignore::Walk), ToolError> {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let walker = walk(&target.abs, &Rules::new(&root)?, max_depth);
    Ok((root, walker))
}

/// A sorted walk of `start` that honours `rules`, never follows symlinks, never enters `.git`.
pub fn walk(start: &Path, rules: &Arc<Rules>, max_depth: Option<usize>) -> ignore::Walk {
    let rules = rules.clone();
    ignore::WalkBuilder::new(start)
        .max_depth(max_depth)
        .hidden(false)
        .follow_links(false)
        .parents(false)
        .ignore(false)
        .git_ignore(false)
        .git_global(false)
        .git_exclude(false)
        .require_git(false)
        .filter_entry(move |entry| {
            entry.file_name() != ".git"
                && (entry.depth() == 0
                    || !rules.ignored(entry.path(), entry.file_type().is_some_and(|t| t.is_dir())))
        })
        .sort_by_file_name(|a, b| a.cmp(b))
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(root: &Path) -> Vec<String> {
        let rules = Rules::new(root).unwrap();
        walk(root, &rules, None)
            .filter_map(Result::ok)
            .filter(|e| e.depth() > 0)
            .map(|e| {
                e.path()
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect()
    }

    #[test]
    fn ignore_files_are_honoured_nested_and_negated() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".git/info")).unwrap();
        std::fs::write(root.join(".git/info/exclude"), "secret.txt\n").unwrap();
        std::fs::write(root.join(".gitignore"), "*.log\nbuild/\n").unwrap();
        std::fs::create_dir_all(root.join("src/build")).unwrap();
        std::fs::write(root.join("src/.gitignore"), "!keep.log\n").unwrap();
        for file in [
            "a.log",
            "secret.txt",
            "src/keep.log",
            "src/x.log",
            "src/build/o",
            "src/m.rs",
        ] {
            std::fs::write(root.join(file), "x").unwrap();
        }
        assert_eq!(
            names(&root),
            [
                ".gitignore",
                "src",
                "src/.gitignore",
                "src/keep.log",
                "src/m.rs"
            ]
        );
    }

    #[test]
    fn a_fifo_or_a_symlinked_ignore_file_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        nix::unistd::mkfifo(&root.join(".gitignore"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", root.join("sub/.gitignore")).unwrap();
        std::fs::write(root.join("sub/file"), "x").unwrap();
        assert_eq!(
            names(&root),
            [".gitignore", "sub", "sub/.gitignore", "sub/file"]
        );
    }
}
