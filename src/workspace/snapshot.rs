//! Snapshots: the work tree as a tree object, the way `git add -A && git write-tree` would
//! see it, without writing the user's index.
//!
//! A second `Repository` handle loads its own copy of the index from `.git/index` (reading
//! only); the changes a diff of that copy against the work tree finds (tracked and untracked,
//! ignored files left out) are applied to the copy in memory, and `write_tree` turns it into a
//! tree. The copy keeps the user's stat cache and the index file's timestamp (libgit2 uses it
//! to spot racily-clean entries), so only files that changed are read and hashed. Nothing here
//! calls `Index::write`, and the handle is dropped at the end, so the index file, HEAD, refs,
//! stash and config stay byte-identical. Objects (blobs, trees) are the only thing written.
//!
//! Changed regular files that no filter applies to (no `core.autocrlf`, no `text`, `eol`,
//! `crlf`, `ident` or `filter` attribute) are hashed in memory: libgit2 would stream each one
//! through a new temporary file in the object store even when the blob already exists, which
//! is most of a snapshot's cost when a round keeps changing the same files. Everything else
//! (symlinks, filtered files, files over [`DIFF_MAX_BYTES`]) goes through libgit2 as `git add`
//! would, which streams a file it does not filter.
//!
//! A file over [`TRACK_MAX_BYTES`] is never read: the snapshot keeps what the index has for it
//! (nothing, when it is untracked), so it is in no diff and no commit, and the hidden-changes
//! listing names it as too large (`hidden`). A sparse file of many GiB costs nothing.
//!
//! libgit2's work-tree scan gives up on the whole tree when a directory is nested deeper than
//! it goes (`SCAN_DEPTH`). When the scan fails, the tree is walked here to find such
//! directories; the scan is then redone on everything else (a path list of their siblings
//! along the way) and the too-deep directories keep what the index has for them. The caller
//! gets their names, so it can say what the snapshot could not see.

use std::collections::BTreeSet;
use std::path::Path;

use git2::{AttrCheckFlags, Delta, DiffOptions, Index, Repository};

use super::{
    index_entry, path_from_bytes, path_to_bytes, Snapshot, WorkspaceError, DIFF_MAX_BYTES,
    TRACK_MAX_BYTES,
};

/// Files up to this size are read into memory to be hashed; larger ones are streamed.
const IN_MEMORY_MAX: u64 = DIFF_MAX_BYTES;
/// Attributes that make libgit2 convert a file's content on its way into a blob.
const FILTER_ATTRIBUTES: [&str; 5] = ["text", "eol", "crlf", "ident", "filter"];

/// The deepest directory libgit2's work-tree scan enters (its `FILESYSTEM_MAX_DEPTH` of 100
/// frames, the top's own included): a directory this many levels below the top is too deep.
const SCAN_DEPTH: usize = 100;

/// A snapshot, and the directories (relative to the work tree's top) it could not look into.
pub(super) fn take(top: &Path) -> Result<(Snapshot, Vec<String>), WorkspaceError> {
    let repo = Repository::open(top)?;
    let mut index = private_index(&repo)?;
    drop_conflicts(&mut index)?;
    let config = repo.config()?.snapshot()?;
    let autocrlf = config
        .get_string("core.autocrlf")
        .map(|v| !v.eq_ignore_ascii_case("false"))
        .unwrap_or(false);
    let filemode = config.get_bool("core.filemode").unwrap_or(true);

    // What `add_all` does, minus the content it loads for every change just to call back.
    let (changed, unseen) = match scan(&repo, &index, None) {
        Ok(changed) => (changed, Vec::new()),
        Err(e) => {
            let deep = too_deep(&repo, top);
            if deep.is_empty() {
                return Err(e);
            }
            let paths = paths_around(&index, top, &deep);
            (
                scan(&repo, &index, Some(paths))?,
                deep.into_iter().collect(),
            )
        }
    };
    for (bytes, exists) in changed {
        let path = path_from_bytes(&bytes);
        if !exists {
            index.remove_path(&path)?;
            continue;
        }
        match classify(&repo, top, &path, !autocrlf) {
            Kind::ForLibgit2 => {
                if let Err(e) = index.add_path(&path) {
                    tracing::debug!("snapshot: {}: {e}; left out", path.display());
                }
            }
            Kind::Plain { executable, large } => {
                let file = Plain {
                    executable,
                    large,
                    filemode,
                };
                add_plain(&repo, &mut index, top, &path, file)?;
            }
            Kind::Repository => add_gitlink(&mut index, top, &path)?,
            Kind::TooLarge(len) => {
                tracing::debug!(
                    "snapshot: {} is {len} bytes, over {TRACK_MAX_BYTES}; left as the index has it",
                    path.display()
                );
            }
        }
    }
    let tree = index.write_tree_to(&repo)?;
    Ok((Snapshot { tree }, unseen))
}

/// The paths where the work tree differs from `index` (and whether each still exists), as
/// `add_all` would find them, minus the content it loads for every change just to call back.
/// `only` limits the scan to exact paths and whole directories (`dir/`).
fn scan(
    repo: &Repository,
    index: &Index,
    only: Option<BTreeSet<Vec<u8>>>,
) -> Result<Vec<(Vec<u8>, bool)>, WorkspaceError> {
    let mut opts = DiffOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_typechange(true);
    if let Some(only) = only {
        opts.disable_pathspec_match(true);
        for path in only {
            opts.pathspec(path);
        }
    }
    Ok(repo
        .diff_index_to_workdir(Some(index), Some(&mut opts))?
        .deltas()
        .filter(|d| d.status() != Delta::Unreadable)
        .filter_map(|d| {
            let path = d.new_file().path_bytes().or(d.old_file().path_bytes())?;
            Some((path.to_vec(), d.new_file().exists()))
        })
        .collect())
}

/// The directories `SCAN_DEPTH` levels below the top that the scan would have to enter: not
/// ignored, not `.git`, not inside a nested repository. Symlinks are not followed.
fn too_deep(repo: &Repository, top: &Path) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut stack = vec![(top.to_path_buf(), 0_usize)];
    while let Some((dir, depth)) = stack.pop() {
        if depth > 0 && dir.join(".git").exists() {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if !entry.file_type().is_ok_and(|t| t.is_dir()) || entry.file_name() == ".git" {
                continue;
            }
            let path = entry.path();
            let Ok(rel) = path.strip_prefix(top) else {
                continue;
            };
            if repo.status_should_ignore(rel).unwrap_or(false) {
                continue;
            }
            if depth + 1 >= SCAN_DEPTH {
                found.insert(String::from_utf8_lossy(&path_to_bytes(rel)).into_owned());
            } else {
                stack.push((path, depth + 1));
            }
        }
    }
    found
}

/// A path list that covers the whole work tree and index except the directories in `deep`:
/// below each of their ancestors, every other entry (of the work tree or the index) by name,
/// whole directories as `dir/`.
fn paths_around(index: &Index, top: &Path, deep: &BTreeSet<String>) -> BTreeSet<Vec<u8>> {
    let mut ancestors: BTreeSet<Vec<u8>> = BTreeSet::from([Vec::new()]);
    for dir in deep {
        let bytes = dir.as_bytes();
        for (i, b) in bytes.iter().enumerate() {
            if *b == b'/' {
                ancestors.insert(bytes[..i].to_vec());
            }
        }
    }
    let skipped = |path: &[u8]| {
        deep.iter().any(|d| {
            let d = d.as_bytes();
            path.starts_with(d) && (path.len() == d.len() || path[d.len()] == b'/')
        })
    };
    // The first prefix of `path` that is not an ancestor: the entry that names it.
    let entry_for = |path: &[u8]| -> Option<Vec<u8>> {
        let mut end = 0;
        loop {
            let next = path[end..].iter().position(|b| *b == b'/').map(|i| end + i);
            let prefix = &path[..next.unwrap_or(path.len())];
            if !ancestors.contains(prefix) {
                return Some(match next {
                    Some(i) => [&path[..i], b"/"].concat(),
                    None => path.to_vec(),
                });
            }
            end = next? + 1;
        }
    };
    let mut out = BTreeSet::new();
    let mut add = |path: &[u8], dir: bool| {
        if skipped(path) {
            return;
        }
        if let Some(mut entry) = entry_for(path) {
            if dir && !entry.ends_with(b"/") {
                entry.push(b'/');
            }
            out.insert(entry);
        }
    };
    for entry in index.iter() {
        add(&entry.path, false);
    }
    for ancestor in &ancestors {
        let Ok(entries) = std::fs::read_dir(top.join(path_from_bytes(ancestor))) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.file_name() == ".git" {
                continue;
            }
            let name = path_to_bytes(Path::new(&entry.file_name()));
            let path = if ancestor.is_empty() {
                name
            } else {
                [ancestor.as_slice(), b"/", &name].concat()
            };
            let dir = entry.file_type().is_ok_and(|t| t.is_dir());
            add(&path, dir);
        }
    }
    out
}

/// The handle's own copy of the user's index, or HEAD's tree when there is no usable one.
fn private_index(repo: &Repository) -> Result<Index, WorkspaceError> {
    let head = || repo.head().ok().and_then(|h| h.peel_to_tree().ok());
    match repo.index() {
        Ok(mut index) => {
            // No index file but commits (someone removed it): start from HEAD, so tracked
            // files that match .gitignore stay in the snapshot.
            if index.is_empty() {
                if let Some(tree) = head() {
                    index.read_tree(&tree)?;
                }
            }
            Ok(index)
        }
        Err(e) => {
            // An index libgit2 cannot read (an extension it does not know): the snapshot is
            // still exact, only slower, because every file is hashed.
            tracing::debug!("snapshot: the index is not readable ({e}); starting from HEAD");
            let mut index = Index::new()?;
            repo.set_index(&mut index)?;
            let mut index = repo.index()?;
            if let Some(tree) = head() {
                index.read_tree(&tree)?;
            }
            Ok(index)
        }
    }
}

/// A merge in progress leaves conflict stages, from which no tree can be written: the work
/// tree's file is what the snapshot wants, so the stages go and `add_all` adds the file.
fn drop_conflicts(index: &mut Index) -> Result<(), WorkspaceError> {
    if !index.has_conflicts() {
        return Ok(());
    }
    let mut paths = Vec::new();
    for conflict in index.conflicts()? {
        let conflict = conflict?;
        if let Some(entry) = conflict.our.or(conflict.their).or(conflict.ancestor) {
            paths.push(entry.path);
        }
    }
    for path in paths {
        index.conflict_remove(&path_from_bytes(&path))?;
    }
    Ok(())
}

enum Kind {
    /// libgit2 adds it (or removes it, when it is gone).
    ForLibgit2,
    /// A regular file no filter applies to: hashed in memory, or streamed when `large` (over
    /// `IN_MEMORY_MAX`) and then remembered (`bigfile`).
    Plain { executable: bool, large: bool },
    /// A directory: a submodule or another repository inside the work tree.
    Repository,
    /// A regular file over [`TRACK_MAX_BYTES`] (its size): never read, left as the index has it.
    TooLarge(u64),
}

/// How a changed path gets into the index. Directories only come up as nested repositories;
/// they are recorded as gitlinks here (libgit2 stops on an untracked one). A file that cannot
/// be read is left out (a tracked one keeps its indexed content) rather than failing the
/// snapshot, where `git add -A` would stop. A file over [`TRACK_MAX_BYTES`] is not read.
fn classify(repo: &Repository, top: &Path, path: &Path, unfiltered: bool) -> Kind {
    let full = top.join(path);
    let Ok(meta) = std::fs::symlink_metadata(&full) else {
        return Kind::ForLibgit2;
    };
    if meta.is_dir() {
        return Kind::Repository;
    }
    if !meta.is_file() {
        return Kind::ForLibgit2;
    }
    if meta.len() > TRACK_MAX_BYTES {
        return Kind::TooLarge(meta.len());
    }
    let filtered = || {
        FILTER_ATTRIBUTES.iter().any(|name| {
            repo.get_attr(path, name, AttrCheckFlags::FILE_THEN_INDEX)
                .map_or(true, |value| value.is_some())
        })
    };
    if !cfg!(unix) || !unfiltered || filtered() {
        return Kind::ForLibgit2;
    }
    Kind::Plain {
        executable: is_executable(&meta),
        large: meta.len() > IN_MEMORY_MAX,
    }
}

#[cfg(unix)]
fn is_executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_meta: &std::fs::Metadata) -> bool {
    false
}

/// How a plain file is added.
#[derive(Clone, Copy)]
struct Plain {
    executable: bool,
    large: bool,
    /// `core.filemode`.
    filemode: bool,
}

/// Adds a plain file's blob, written only if the object store does not have it yet.
fn add_plain(
    repo: &Repository,
    index: &mut Index,
    top: &Path,
    path: &Path,
    file: Plain,
) -> Result<(), WorkspaceError> {
    let Plain {
        executable,
        large,
        filemode,
    } = file;
    if large {
        match super::bigfile::blob(repo, &top.join(path)) {
            Ok(Some(id)) => add_entry(index, path, id, executable, filemode)?,
            Ok(None) => index.remove_path(path)?,
            Err(e) => tracing::debug!("snapshot: {}: {e}; left out", path.display()),
        }
        return Ok(());
    }
    let content = match std::fs::read(top.join(path)) {
        Ok(content) => content,
        // Gone since the scan: as `add_all` would have done.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            index.remove_path(path)?;
            return Ok(());
        }
        Err(e) => {
            tracing::debug!("snapshot: {}: {e}; left out", path.display());
            return Ok(());
        }
    };
    // `Odb::write` hashes first and only touches an object that exists; `Repository::blob`
    // would stream through a temporary file either way.
    let id = repo.odb()?.write(git2::ObjectType::Blob, &content)?;
    add_entry(index, path, id, executable, filemode)
}

/// Puts `id` at `path`, executable or not as the file and `core.filemode` say.
fn add_entry(
    index: &mut Index,
    path: &Path,
    id: git2::Oid,
    executable: bool,
    filemode: bool,
) -> Result<(), WorkspaceError> {
    let mode = match index.get_path(path, 0) {
        Some(old) if !filemode && (old.mode == 0o100644 || old.mode == 0o100755) => old.mode,
        _ if executable && filemode => 0o100755,
        _ => 0o100644,
    };
    index.add(&index_entry(path_to_bytes(path), id, mode))?;
    Ok(())
}

/// Records a nested repository as a gitlink to its HEAD, as `git add -A` does; one without a
/// commit has nothing to record and is left out.
fn add_gitlink(index: &mut Index, top: &Path, path: &Path) -> Result<(), WorkspaceError> {
    let head = Repository::open(top.join(path))
        .ok()
        .and_then(|r| r.head().ok().and_then(|h| h.target()));
    let Some(head) = head else {
        tracing::debug!("snapshot: {} has no commit; left out", path.display());
        return Ok(());
    };
    let mut bytes = path_to_bytes(path);
    while bytes.last() == Some(&b'/') {
        bytes.pop();
    }
    index.add(&index_entry(bytes, head, 0o160000))?;
    Ok(())
}
