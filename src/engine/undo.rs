//! What a file tool's call is about to replace, kept so the engine can put it back.
//!
//! A change after which the check runs no test, where before it ran some, removed the tests
//! or what runs them: the 1.5B wrote `src/lib.rs` whole without its `#[cfg(test)]` module
//! (seed 1, 07: `cargo test` then ran 0 tests, and the worker took that for done), and
//! `textutil.py` without the docstring that held its doctests (05). The engine puts the files
//! back as they were before the call and says why (`turn.rs`). Only the files a file tool
//! names are kept (read through the confined root, bounded); a command's changes are never
//! undone.

use std::path::{Path, PathBuf};

use crate::tools::confined::{Refusal, Root};

/// The largest file kept; a call that changes a larger one cannot be undone.
const MAX_KEPT_BYTES: u64 = 8 * 1024 * 1024;

/// The files a call names, each with its bytes before the call (`None`: it did not exist).
#[derive(Debug)]
pub(super) struct Saved {
    files: Vec<(PathBuf, Option<Vec<u8>>)>,
}

impl Saved {
    /// The files `files` (absolute paths beneath `root`) as they are now; `None` when one of
    /// them cannot be kept (outside the root, too large, not a regular file).
    pub(super) fn take(root: &Path, files: &[PathBuf]) -> Option<Self> {
        let confined = Root::open(root).ok()?;
        let mut kept = Vec::new();
        for file in files {
            let rel = file.strip_prefix(root).ok()?.to_path_buf();
            let bytes = match confined.read(&rel, MAX_KEPT_BYTES) {
                Ok(bytes) => Some(bytes),
                Err(Refusal::NotFound) => None,
                Err(_) => return None,
            };
            kept.push((rel, bytes));
        }
        (!kept.is_empty()).then_some(Self { files: kept })
    }

    /// Puts every file back as it was (removing one that did not exist).
    pub(super) fn restore(&self, root: &Path) -> Result<(), Refusal> {
        let confined = Root::open(root)?;
        for (rel, bytes) in &self.files {
            match bytes {
                Some(bytes) => {
                    confined.write(rel, bytes)?;
                }
                None => {
                    confined.remove_file(rel)?;
                }
            }
        }
        Ok(())
    }

    /// The files' absolute paths beneath `root`.
    pub(super) fn paths(&self, root: &Path) -> Vec<PathBuf> {
        self.files.iter().map(|(rel, _)| root.join(rel)).collect()
    }

    /// The files, as the worker names them: `'a.py'`, `'b.py'`.
    pub(super) fn names(&self) -> String {
        self.files
            .iter()
            .map(|(rel, _)| crate::chat::listing::shown(&rel.to_string_lossy()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_put_back_as_they_were_and_new_ones_removed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(root.join("src/lib.rs"), "fn a() {}\n").unwrap();
        let files = [root.join("src/lib.rs"), root.join("new.txt")];
        let saved = Saved::take(&root, &files).unwrap();
        assert_eq!(saved.names(), "'src/lib.rs', 'new.txt'");
        std::fs::write(root.join("src/lib.rs"), "gone\n").unwrap();
        std::fs::write(root.join("new.txt"), "x").unwrap();
        saved.restore(&root).unwrap();
        assert_eq!(
            std::fs::read_to_string(root.join("src/lib.rs")).unwrap(),
            "fn a() {}\n"
        );
        assert!(!root.join("new.txt").exists());
        // A path outside the root cannot be kept.
        assert!(Saved::take(&root, &[PathBuf::from("/etc/hostname")]).is_none());
    }
}
