//! Workspace confinement: every path a tool touches resolves inside the workspace root.
//!
//! A path is first normalised lexically (`.` dropped, `..` popped, never above the root), then
//! the deepest part of it that exists is canonicalised, so a symlink anywhere along the way
//! that leads out of the workspace is caught, with a message that says so. That check names
//! the path; it does not make the I/O safe (a directory can be swapped for a symlink after
//! it): the tools open `Resolved::path` through `confined::Root`, beneath the root with no
//! symlink followed. Writing through the tools into `.git/` is refused; reading it is fine.

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

use super::confined::Root;
use super::ToolError;

/// What the tool means to do with the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

/// A path inside the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// Absolute, with every existing part canonical.
    pub abs: PathBuf,
    /// Relative to the workspace root, `/`-separated; `.` for the root itself.
    pub rel: String,
    /// Relative to the workspace root, as opened beneath it; empty for the root itself.
    pub path: PathBuf,
}

/// The workspace root as a directory descriptor for confined opens.
pub fn open_root(root: &Path) -> Result<Root, ToolError> {
    Root::open(root).map_err(|e| {
        ToolError::new(format!(
            "the workspace root {} is not accessible: {e}",
            root.display()
        ))
    })
}

/// Resolves `raw` (relative to `root`, or absolute but inside it) for `access`.
pub fn resolve(root: &Path, raw: &str, access: Access) -> Result<Resolved, ToolError> {
    if raw.trim().is_empty() {
        return Err(ToolError::new(
            "the path is empty; give a path relative to the workspace root (\".\" is the root)",
        ));
    }
    if raw.contains('\0') {
        return Err(ToolError::new("the path contains a NUL byte"));
    }
    let root = root.canonicalize().map_err(|e| {
        ToolError::new(format!(
            "the workspace root {} is not accessible: {e}",
            root.display()
        ))
    })?;
    let relative = lexical_relative(&root, raw)?;
    let abs = follow_existing(&root, raw, &relative)?;
    let rel_path = abs
        .strip_prefix(&root)
        .unwrap_or(Path::new(""))
        .to_path_buf();
    if access == Access::Write {
        check_writable(raw, &rel_path, &relative)?;
    }
    Ok(Resolved {
        rel: display_rel(&rel_path),
        abs,
        path: rel_path,
    })
}

/// Lexical normalisation of `raw`, relative to the (canonical) root: an absolute path must
/// lie under it, a relative one may not climb out of it with `..`.
fn lexical_relative(root: &Path, raw: &str) -> Result<PathBuf, ToolError> {
    let given = Path::new(raw);
    if given.is_absolute() {
        let normal = normalise_absolute(given);
        return match normal.strip_prefix(root) {
            Ok(rest) => Ok(rest.to_path_buf()),
            Err(_) => Err(ToolError::new(format!(
                "'{raw}' is outside the workspace; use a path relative to the workspace root"
            ))),
        };
    }
    let mut parts: Vec<&OsStr> = Vec::new();
    for component in given.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if parts.pop().is_none() {
                    return Err(ToolError::new(format!(
                        "'{raw}' leads outside the workspace (too many `..`); paths are relative to the workspace root"
                    )));
                }
            }
            Component::Normal(name) => parts.push(name),
            Component::RootDir | Component::Prefix(_) => {
                return Err(ToolError::new(format!("'{raw}' is not a relative path")))
            }
        }
    }
    Ok(parts.iter().collect())
}

/// Follows what exists of `root/relative`: the deepest existing ancestor must really live
/// inside the root (symlinks resolved); the missing rest is appended to it as named.
fn follow_existing(root: &Path, raw: &str, relative: &Path) -> Result<PathBuf, ToolError> {
    let wanted = root.join(relative);
    let mut existing = wanted.clone();
    let mut missing: Vec<PathBuf> = Vec::new();
    while std::fs::symlink_metadata(&existing).is_err() {
        let Some(name) = existing.file_name().map(PathBuf::from) else {
            break;
        };
        missing.push(name);
        if !existing.pop() {
            break;
        }
    }
    let real = existing.canonicalize().map_err(|e| {
        ToolError::new(format!(
            "'{raw}' goes through a broken symlink or an unreadable directory ({e})"
        ))
    })?;
    if !real.starts_with(root) {
        return Err(ToolError::new(format!(
            "'{raw}' resolves outside the workspace through a symlink; only paths inside the workspace are allowed"
        )));
    }
    let mut abs = real;
    for name in missing.iter().rev() {
        abs.push(name);
    }
    Ok(abs)
}

/// Refuses a write into `.git/` (as resolved or as named) or to the workspace root itself.
fn check_writable(raw: &str, rel_path: &Path, relative: &Path) -> Result<(), ToolError> {
    let into_git = |p: &Path| {
        p.components()
            .next()
            .is_some_and(|c| matches!(c, Component::Normal(n) if n.eq_ignore_ascii_case(".git")))
    };
    if into_git(rel_path) || into_git(relative) {
        return Err(ToolError::new(format!(
            "'{raw}' is inside .git/, which the file tools may not change; edit the working tree instead"
        )));
    }
    if rel_path.as_os_str().is_empty() {
        return Err(ToolError::new(
            "the workspace root itself cannot be written; name a file inside it",
        ));
    }
    Ok(())
}

/// `/`-separated relative path, `.` for empty.
pub fn display_rel(rel: &Path) -> String {
    if rel.as_os_str().is_empty() {
        return ".".into();
    }
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// Drops `.` and pops `..` of an absolute path without touching the file system.
fn normalise_absolute(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/deep")).unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), "x").unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join(".git/config"), "[core]").unwrap();
        dir
    }

    #[test]
    fn relative_paths_resolve_inside() {
        let dir = root();
        let r = resolve(dir.path(), "src/./deep/../lib.rs", Access::Read).unwrap();
        assert_eq!(r.rel, "src/lib.rs");
        assert_eq!(r.abs, dir.path().canonicalize().unwrap().join("src/lib.rs"));
        assert_eq!(resolve(dir.path(), ".", Access::Read).unwrap().rel, ".");
        let new = resolve(dir.path(), "src/new/dir/file.txt", Access::Write).unwrap();
        assert_eq!(new.rel, "src/new/dir/file.txt");
    }

    #[test]
    fn parent_escapes_are_refused() {
        let dir = root();
        for raw in ["../x", "src/../../x", "..", "src/deep/../../../etc/passwd"] {
            let err = resolve(dir.path(), raw, Access::Read).unwrap_err();
            assert!(err.0.contains("outside the workspace"), "{raw}: {err}");
        }
    }

    #[test]
    fn absolute_paths_only_inside() {
        let dir = root();
        let err = resolve(dir.path(), "/etc/passwd", Access::Read).unwrap_err();
        assert!(err.0.contains("outside the workspace"), "{err}");
        let inside = dir.path().canonicalize().unwrap().join("src/lib.rs");
        let r = resolve(dir.path(), inside.to_str().unwrap(), Access::Read).unwrap();
        assert_eq!(r.rel, "src/lib.rs");
    }

    #[test]
    fn symlinks_out_are_refused_and_symlinks_in_are_fine() {
        let dir = root();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        std::os::unix::fs::symlink("src", dir.path().join("in")).unwrap();
        std::os::unix::fs::symlink("/nonexistent/target", dir.path().join("dangling")).unwrap();
        let err = resolve(dir.path(), "out/new.txt", Access::Write).unwrap_err();
        assert!(err.0.contains("symlink"), "{err}");
        assert!(resolve(dir.path(), "out", Access::Read).is_err());
        assert!(resolve(dir.path(), "dangling", Access::Write).is_err());
        let r = resolve(dir.path(), "in/lib.rs", Access::Write).unwrap();
        assert_eq!(r.rel, "src/lib.rs");
    }

    #[test]
    fn git_internals_are_read_only() {
        let dir = root();
        assert!(resolve(dir.path(), ".git/config", Access::Read).is_ok());
        for raw in [".git/config", ".git", "./.git/hooks/pre-commit", ".GIT/x"] {
            let err = resolve(dir.path(), raw, Access::Write).unwrap_err();
            assert!(err.0.contains(".git"), "{raw}: {err}");
        }
        std::os::unix::fs::symlink(".git", dir.path().join("g")).unwrap();
        assert!(resolve(dir.path(), "g/config", Access::Write).is_err());
    }

    #[test]
    fn empty_paths_and_the_root_for_writing_are_refused() {
        let dir = root();
        assert!(resolve(dir.path(), "  ", Access::Read).is_err());
        assert!(resolve(dir.path(), ".", Access::Write).is_err());
    }
}
