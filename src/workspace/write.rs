//! The review's writes into a work tree: discard, revert, apply and a worktree run's commit
//! put what git has for each path into the work tree, and remove what the change removes,
//! through [`Root`]: every open, write, rename and removal is relative to a directory
//! descriptor opened beneath the work tree's top with no symlink followed at any component.
//! A process that swaps a directory for a symlink while the review writes therefore makes the
//! review stop at that path; it never sends a write or a removal outside (libgit2's checkout
//! and `std::fs` resolve the path again by name, and follow such a symlink).
//!
//! Nothing git does not know is removed: before anything is written, [`in_the_way`] names
//! each path the change would remove that the work tree's snapshot does not hold (an ignored
//! file, say, under a directory that the change replaces with a file), and the caller refuses.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use git2::{Repository, Tree};
use rustix::fs::FileType;

use super::{path_from_bytes, WorkspaceError};
use crate::tools::confined::{Content, Refusal, Root};

/// Per path (relative to the work tree's top), the entry it gets, or `None` to remove it.
pub(super) type Changes = std::collections::BTreeMap<Vec<u8>, Option<(git2::Oid, u32)>>;

const GITLINK: u32 = 0o160000;
const SYMLINK: u32 = 0o120000;
const EXECUTABLE: u32 = 0o100755;

/// How many paths [`in_the_way`] names under one directory before it says how many more.
const NAMED_PER_DIR: usize = 5;

/// The paths that applying `changes` to the work tree at `top` would remove although
/// `known` (a snapshot of that work tree: tracked and untracked, not ignored) does not hold
/// them, each with the reason; empty when nothing stands in the way.
pub(super) fn in_the_way(
    top: &Path,
    known: &Tree<'_>,
    changes: &Changes,
) -> Result<Vec<String>, WorkspaceError> {
    let root = open_root(top)?;
    let removed: BTreeSet<PathBuf> = changes
        .iter()
        .filter(|(_, change)| change.is_none())
        .map(|(path, _)| path_from_bytes(path))
        .collect();
    let mut out = Vec::new();
    for (path, change) in changes {
        let rel = path_from_bytes(path);
        let shown = rel.display().to_string();
        let kind = match root.kind(&rel) {
            Ok(kind) => kind,
            // A symlink or a file on the way: the callers name those with their own reasons.
            Err(_) => continue,
        };
        match (change, kind) {
            (None, Some(kind)) if kind != FileType::Directory && !holds(known, &rel) => {
                out.push(format!("{shown} (git does not track it in your work tree)"));
            }
            (Some((_, mode)), Some(FileType::Directory)) if *mode != GITLINK => {
                let mut unknown = Vec::new();
                let mut more = 0usize;
                let walked = root.visit_files(&rel, &mut |file| {
                    if !removed.contains(file) {
                        if unknown.len() < NAMED_PER_DIR {
                            unknown.push(file.display().to_string());
                        } else {
                            more += 1;
                        }
                    }
                    true
                });
                if let Err(e) = walked {
                    out.push(format!("{shown} (its directory cannot be read: {e})"));
                    continue;
                }
                if !unknown.is_empty() {
                    let more = match more {
                        0 => String::new(),
                        n => format!(" and {n} more"),
                    };
                    out.push(format!(
                        "{} (git does not track it in your work tree, and the directory {shown} \
                         would be replaced by a file){more}",
                        unknown.join(", ")
                    ));
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

/// Whether `tree` holds a file (not a directory) at `rel`.
fn holds(tree: &Tree<'_>, rel: &Path) -> bool {
    tree.get_path(rel)
        .is_ok_and(|entry| entry.kind() != Some(git2::ObjectType::Tree))
}

/// Writes `changes` (path → the entry it gets, or removal) into the work tree at `top`:
/// removals first (a directory is left alone; with `prune_below`, the directories a removal
/// leaves empty go too, up to that directory, relative to `top`), then each entry's content
/// as `repo` has it, replacing a directory left empty. Gitlinks are left where they are.
/// Check [`in_the_way`] first: a directory that still holds files stops the write there.
pub(super) fn write_changes(
    repo: &Repository,
    top: &Path,
    changes: &Changes,
    prune_below: Option<&Path>,
) -> Result<(), WorkspaceError> {
    let root = open_root(top)?;
    for (path, change) in changes {
        if change.is_some() {
            continue;
        }
        let rel = path_from_bytes(path);
        match root.remove_file(&rel) {
            Ok(removed) => {
                if let (true, Some(floor)) = (removed, prune_below) {
                    root.prune_empty_parents(&rel, floor);
                }
            }
            Err(Refusal::Directory) => {}
            Err(e) => return Err(stopped(&rel, &e)),
        }
    }
    for (path, change) in changes {
        let Some((id, mode)) = change else {
            continue;
        };
        if *mode == GITLINK {
            continue;
        }
        let rel = path_from_bytes(path);
        if let Ok(Some(FileType::Directory)) = root.kind(&rel) {
            root.remove_empty_tree(&rel)
                .map_err(|e| stopped(&rel, &e))?;
        }
        let blob = repo.find_blob(*id)?;
        let content = match *mode {
            SYMLINK => Content::Symlink(blob.content()),
            mode => Content::File {
                bytes: blob.content(),
                executable: mode == EXECUTABLE,
            },
        };
        root.place(&rel, content).map_err(|e| stopped(&rel, &e))?;
    }
    Ok(())
}

fn open_root(top: &Path) -> Result<Root, WorkspaceError> {
    Root::open(top).map_err(|e| WorkspaceError::Io {
        path: top.to_path_buf(),
        source: match e {
            Refusal::Io(source) => source,
            other => std::io::Error::other(other.to_string()),
        },
    })
}

/// The error for a write or removal at `rel` that did not happen.
fn stopped(rel: &Path, refusal: &Refusal) -> WorkspaceError {
    let reason = match refusal {
        Refusal::Symlink | Refusal::NotDirectory => {
            "a directory on its way is a symlink or not a directory now, and the review never \
             writes or removes through one"
                .to_string()
        }
        Refusal::NotEmpty => "it is a directory that holds files git does not track".to_string(),
        other => other.to_string(),
    };
    WorkspaceError::Stopped {
        path: rel.display().to_string(),
        reason,
    }
}
