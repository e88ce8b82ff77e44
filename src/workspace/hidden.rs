//! Changes git does not show: files the run wrote where snapshots never look.
//!
//! Snapshots hold tracked and untracked, non-ignored files, so a file written into an ignored
//! directory (`build/tool.sh`, `__pycache__/x.pyc`) or inside a repository nested in the work
//! tree (`sub2/`) is in no diff, no `diff.patch` and no commit. The person must still see
//! it: a nested repository's own `.git` can carry `core.fsmonitor` or hooks that run when git
//! is used inside it, and an ignored script can be run later by a build.
//!
//! So the workspace is listed by `lstat` (size, times, inode, mode; no file is read) before
//! and after, and every path that differs and is not in the snapshot diff is a
//! [`HiddenChange`], marked ignored or inside a nested repository. A `.git` below the top is
//! not walked into; its directory is recorded, and one that appears is named as a new nested
//! repository. The walk stops at [`MAX_ENTRIES`] entries and says so.
//!
//! A file over [`TRACK_MAX_BYTES`](super::TRACK_MAX_BYTES) is one snapshots never read, so
//! a change to it that no diff holds is a [`HiddenChange`] too, marked too large.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::Workspace;
use crate::protocol::event::FileStatus;

/// Most entries one listing records; past it the listing says it is incomplete.
pub const MAX_ENTRIES: usize = 200_000;

/// What `lstat` says about one entry: enough to see that it changed without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    mode: u32,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    ino: u64,
}

/// Every file (and symlink) beneath the workspace, outside the repository's own `.git`.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    files: BTreeMap<String, Stamp>,
    /// Directories holding a `.git` of their own (nested repositories), relative to the top.
    repos: BTreeSet<String>,
    /// The walk stopped at [`MAX_ENTRIES`].
    pub truncated: bool,
}

/// Why a changed path is in no diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HiddenWhy {
    /// `.gitignore` (or another exclude) hides it.
    Ignored,
    /// It lies inside the nested repository at this directory.
    NestedRepo(String),
    /// It is larger (this many bytes) than snapshots read (`TRACK_MAX_BYTES`).
    TooLarge(u64),
}

/// A path the run created, changed or removed that git does not show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HiddenChange {
    pub path: String,
    pub status: FileStatus,
    pub why: HiddenWhy,
}

/// What [`compare`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hidden {
    pub changes: Vec<HiddenChange>,
    /// Nested repositories (their directories) that appeared.
    pub new_repos: Vec<String>,
    /// A listing was cut short: there may be more.
    pub incomplete: bool,
}

impl Workspace {
    /// Lists the workspace for [`compare`]. Never fails: what cannot be read is left out.
    pub fn listing(&self) -> Listing {
        let mut listing = Listing::default();
        let own_git = self.top.join(".git");
        let mut stack: Vec<PathBuf> = vec![self.root.clone()];
        let mut entries = 0usize;
        while let Some(dir) = stack.pop() {
            let Ok(read) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in read.flatten() {
                entries += 1;
                if entries > MAX_ENTRIES {
                    listing.truncated = true;
                    return listing;
                }
                let path = entry.path();
                if path == own_git {
                    continue;
                }
                let Some(rel) = self.rel(&path) else {
                    continue;
                };
                if entry.file_name() == ".git" {
                    let parent = rel.rsplit_once('/').map_or("", |(p, _)| p);
                    listing.repos.insert(parent.to_string());
                    continue;
                }
                let Ok(meta) = entry.metadata() else {
                    continue;
                };
                if meta.is_dir() {
                    stack.push(path);
                    continue;
                }
                listing.files.insert(
                    rel,
                    Stamp {
                        mode: meta.mode(),
                        len: meta.len(),
                        mtime: (meta.mtime(), meta.mtime_nsec()),
                        ctime: (meta.ctime(), meta.ctime_nsec()),
                        ino: meta.ino(),
                    },
                );
            }
        }
        listing
    }

    /// `path` relative to the work tree's top, `/`-separated, as diffs name files.
    fn rel(&self, path: &Path) -> Option<String> {
        let rel = path.strip_prefix(&self.top).ok()?;
        Some(rel.to_string_lossy().replace('\\', "/"))
    }

    /// The paths that changed between `before` and `after` and that `shown` (the snapshot
    /// diff's paths) does not hold, with why git does not show them. A change git would show
    /// but that is not in `shown` (a file touched without a change of content) is no change.
    pub fn compare(&self, before: &Listing, after: &Listing, shown: &BTreeSet<String>) -> Hidden {
        let repos: BTreeSet<&String> = before.repos.iter().chain(&after.repos).collect();
        let nested = |path: &str| {
            repos
                .iter()
                .find(|r| !r.is_empty() && path.starts_with(&format!("{r}/")))
                .map(|r| (*r).clone())
        };
        let mut changes = Vec::new();
        let paths: BTreeSet<&String> = before.files.keys().chain(after.files.keys()).collect();
        for path in paths {
            let (old, new) = (before.files.get(path), after.files.get(path));
            let status = match (old, new) {
                (None, Some(_)) => FileStatus::Added,
                (Some(_), None) => FileStatus::Deleted,
                (Some(a), Some(b)) if a != b => FileStatus::Modified,
                _ => continue,
            };
            // The size that kept it out of the snapshots: now, or before it went.
            let len = new.or(old).map_or(0, |stamp| stamp.len);
            if shown.contains(path) {
                continue;
            }
            let why = match nested(path) {
                Some(repo) => HiddenWhy::NestedRepo(repo),
                None if self.repo.is_path_ignored(Path::new(path)).unwrap_or(false) => {
                    HiddenWhy::Ignored
                }
                None if len > super::TRACK_MAX_BYTES => HiddenWhy::TooLarge(len),
                None => continue,
            };
            changes.push(HiddenChange {
                path: path.clone(),
                status,
                why,
            });
        }
        Hidden {
            changes,
            new_repos: after.repos.difference(&before.repos).cloned().collect(),
            incomplete: before.truncated || after.truncated,
        }
    }
}

impl HiddenChange {
    /// `build/tool.sh (added, ignored)`, `sub2/a.txt (added, in the nested repository sub2)`.
    pub fn describe(&self) -> String {
        let why = match &self.why {
            HiddenWhy::Ignored => "ignored by git".to_string(),
            HiddenWhy::NestedRepo(repo) => format!("in the nested repository {repo}"),
            HiddenWhy::TooLarge(len) => format!(
                "{}, over the {} ralph-tui tracks",
                human_size(*len),
                human_size(super::TRACK_MAX_BYTES)
            ),
        };
        format!("{} ({}, {why})", self.path, self.status.as_str())
    }
}

/// `1.5 GiB`, `100 MiB`, `812 KiB`: one decimal below ten, none above.
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    #[allow(clippy::cast_precision_loss, reason = "a size for people to read")]
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if value < 10.0 && value.fract() >= 0.05 {
        format!("{value:.1} {}", UNITS[unit])
    } else {
        format!("{value:.0} {}", UNITS[unit])
    }
}

impl super::DiffModel {
    /// Every path the diff names (old and new paths of renames), for [`Workspace::compare`].
    pub fn paths(&self) -> BTreeSet<String> {
        self.files
            .iter()
            .flat_map(|f| std::iter::once(f.path.clone()).chain(f.old_path.clone()))
            .collect()
    }
}
