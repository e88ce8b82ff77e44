//! Diffs between two snapshots as a model the run log and the TUI both read.

use git2::{Delta, DiffFormat, DiffOptions, Oid, Repository};
use serde::{Deserialize, Serialize};

use super::WorkspaceError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileStatus {
    Added,
    Modified,
    Deleted,
    Renamed,
    TypeChange,
}

impl FileStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "added",
            Self::Modified => "modified",
            Self::Deleted => "deleted",
            Self::Renamed => "renamed",
            Self::TypeChange => "typechange",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LineKind {
    Context,
    Added,
    Removed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffLine {
    pub kind: LineKind,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hunk {
    pub header: String,
    pub lines: Vec<DiffLine>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileDiff {
    pub path: String,
    pub old_path: Option<String>,
    pub status: FileStatus,
    pub binary: bool,
    pub insertions: usize,
    pub deletions: usize,
    pub hunks: Vec<Hunk>,
}

/// A whole diff: files, counts, and the patch text.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffModel {
    pub files: Vec<FileDiff>,
    pub insertions: usize,
    pub deletions: usize,
    pub patch: String,
}

impl DiffModel {
    pub fn files_changed(&self) -> usize {
        self.files.len()
    }
}

fn path_of(delta: &git2::DiffDelta<'_>) -> (String, Option<String>) {
    let new = delta
        .new_file()
        .path()
        .map(|p| p.to_string_lossy().into_owned());
    let old = delta
        .old_file()
        .path()
        .map(|p| p.to_string_lossy().into_owned());
    match (new, old) {
        (Some(n), Some(o)) if n != o => (n, Some(o)),
        (Some(n), _) => (n, None),
        (None, Some(o)) => (o, None),
        (None, None) => (String::new(), None),
    }
}

/// Diffs two trees, limited to `prefix` (a directory inside the work tree, `""` for all).
pub fn between(
    repo: &Repository,
    from: Oid,
    to: Oid,
    prefix: &str,
) -> Result<DiffModel, WorkspaceError> {
    let old = repo.find_tree(from)?;
    let new = repo.find_tree(to)?;
    let mut opts = DiffOptions::new();
    if !prefix.is_empty() {
        opts.pathspec(prefix);
    }
    let mut diff = repo.diff_tree_to_tree(Some(&old), Some(&new), Some(&mut opts))?;
    let mut find = git2::DiffFindOptions::new();
    find.renames(true);
    diff.find_similar(Some(&mut find))?;

    let mut model = DiffModel::default();
    for delta in diff.deltas() {
        let status = match delta.status() {
            Delta::Added | Delta::Untracked | Delta::Copied => FileStatus::Added,
            Delta::Deleted => FileStatus::Deleted,
            Delta::Renamed => FileStatus::Renamed,
            Delta::Typechange => FileStatus::TypeChange,
            _ => FileStatus::Modified,
        };
        let (path, old_path) = path_of(&delta);
        model.files.push(FileDiff {
            path,
            old_path,
            status,
            binary: delta.flags().is_binary(),
            insertions: 0,
            deletions: 0,
            hunks: Vec::new(),
        });
    }

    let mut patch = Vec::new();
    let mut file_index: Option<usize> = None;
    let mut last_delta: Option<(Option<std::path::PathBuf>, Option<std::path::PathBuf>)> = None;
    diff.print(DiffFormat::Patch, |delta, hunk, line| {
        let key = (
            delta.old_file().path().map(|p| p.to_path_buf()),
            delta.new_file().path().map(|p| p.to_path_buf()),
        );
        if last_delta.as_ref() != Some(&key) {
            file_index = Some(file_index.map_or(0, |i| i + 1));
            last_delta = Some(key);
        }
        let origin = line.origin();
        if matches!(origin, '+' | '-' | ' ') {
            patch.push(origin as u8);
        }
        patch.extend_from_slice(line.content());
        let Some(file) = file_index.and_then(|i| model.files.get_mut(i)) else {
            return true;
        };
        if delta.flags().is_binary() {
            file.binary = true;
        }
        let text = String::from_utf8_lossy(line.content())
            .trim_end_matches(['\n', '\r'])
            .to_string();
        match origin {
            'H' => {
                if let Some(h) = hunk {
                    file.hunks.push(Hunk {
                        header: String::from_utf8_lossy(h.header()).trim_end().to_string(),
                        lines: Vec::new(),
                    });
                }
            }
            '+' | '-' | ' ' => {
                let kind = match origin {
                    '+' => {
                        file.insertions += 1;
                        LineKind::Added
                    }
                    '-' => {
                        file.deletions += 1;
                        LineKind::Removed
                    }
                    _ => LineKind::Context,
                };
                if let Some(h) = file.hunks.last_mut() {
                    h.lines.push(DiffLine { kind, text });
                }
            }
            _ => {}
        }
        true
    })?;
    model.insertions = model.files.iter().map(|f| f.insertions).sum();
    model.deletions = model.files.iter().map(|f| f.deletions).sum();
    model.patch = String::from_utf8_lossy(&patch).into_owned();
    Ok(model)
}
