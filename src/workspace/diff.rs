//! Diffs between two snapshots as a model the run log and the TUI both read.
//!
//! Each changed file becomes a `FileDiff` (status, binary flag, +/− counts, hunks) and a
//! piece of `patch`, the text `git diff` would print: `diff --git` headers, rename and mode
//! lines, hunks, and `GIT binary patch` literals for binary files, so `diff.patch` in the run
//! log applies with `git apply` from the work tree's top. A file whose content is not UTF-8
//! text is written as a binary patch, which keeps `patch` exact as a `String`.
//!
//! When the workspace is a subdirectory, the two subtrees are diffed and the header prefixes
//! carry the subdirectory, so paths stay relative to the work tree's top as in `git diff`.
//! `for_display` bounds a huge diff for the screen and says so; the full model goes to the log.
//! A blob over [`DIFF_MAX_BYTES`] is never loaded: its file is binary and `too_large`, and its
//! patch is git's `Binary files ... differ` (headers only, which `git apply` cannot apply).
//! `from_patch` reads a logged patch back into the same model through the same per-file
//! reader, so a finished round shows as its live diff did.

use git2::{Delta, Diff, DiffDelta, DiffFindOptions, DiffOptions, Oid, Patch, Repository, Tree};
use serde::{Deserialize, Serialize};

use super::{WorkspaceError, DIFF_MAX_BYTES};
use crate::protocol::event::{ChangedFile, FileStatus};

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

/// One changed file. Paths are relative to the work tree's top (lossy UTF-8 for display; the
/// patch quotes unusual names exactly, as git does).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileDiff {
    pub path: String,
    /// The old path of a renamed file.
    pub old_path: Option<String>,
    pub status: FileStatus,
    pub binary: bool,
    pub insertions: usize,
    pub deletions: usize,
    pub hunks: Vec<Hunk>,
    /// Over [`DIFF_MAX_BYTES`] on either side: binary, its content never read.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub too_large: bool,
    /// Changed by someone other than the worker's tools and commands (`attribution`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub outside_run: bool,
    /// A gitlink (mode 160000) after the change: the path is a git repository of its own
    /// (nested in the work tree, or a submodule), whose config and hooks git runs.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gitlink: bool,
    /// The person had changed the file before the run (it differed from HEAD), so the
    /// review's diff and a commit of it hold those changes too (`review`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub yours_before: bool,
}

impl FileDiff {
    /// `path` changed in place: text, no line counted and no hunk yet, the worker's own.
    pub fn modified(path: String) -> Self {
        Self {
            path,
            old_path: None,
            status: FileStatus::Modified,
            binary: false,
            insertions: 0,
            deletions: 0,
            hunks: Vec::new(),
            too_large: false,
            outside_run: false,
            gitlink: false,
            yours_before: false,
        }
    }
}

/// A whole diff: files, counts, and the patch text.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffModel {
    pub files: Vec<FileDiff>,
    pub insertions: usize,
    pub deletions: usize,
    pub patch: String,
    /// Set on a model shortened for display (`for_display`): what was left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Directories the snapshots could not look into (nested too deep for git's scan): their
    /// changes are not in this diff.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unseen: Vec<String>,
    /// Paths the run changed that git does not show (ignored, or in a nested repository):
    /// not in this diff's files or patch, and never committed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hidden: Vec<super::HiddenChange>,
    /// Nested repositories the run created (their directories).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub new_repos: Vec<String>,
}

/// How much of a diff the screen gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DisplayLimits {
    /// Files listed (the rest are counted in the note).
    pub max_files: usize,
    /// Hunk lines over all files.
    pub max_lines: usize,
    /// Characters kept of one line.
    pub max_line_chars: usize,
    /// Bytes kept of the patch text.
    pub max_patch_bytes: usize,
}

impl Default for DisplayLimits {
    fn default() -> Self {
        Self {
            max_files: 500,
            max_lines: 5_000,
            max_line_chars: 400,
            max_patch_bytes: 256 * 1024,
        }
    }
}

impl DisplayLimits {
    /// The review's: every file is listed, however many, since the person chooses among them
    /// and a commit takes only what they chose; hunk lines stay bounded.
    pub fn review() -> Self {
        Self {
            max_files: usize::MAX,
            ..Self::default()
        }
    }
}

impl DiffModel {
    pub fn files_changed(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The per-file summary the engine's events carry.
    pub fn changed_files(&self) -> Vec<ChangedFile> {
        self.files
            .iter()
            .map(|f| ChangedFile {
                path: f.path.clone(),
                status: f.status,
                insertions: f.insertions,
                deletions: f.deletions,
                binary: f.binary,
                outside_run: f.outside_run,
            })
            .collect()
    }

    /// A copy bounded for the screen: at most `max_files` files, `max_lines` hunk lines,
    /// `max_line_chars` per line and `max_patch_bytes` of patch, with `note` saying what was
    /// left out. The totals stay those of the whole diff. Write the full model to the log.
    pub fn for_display(&self, limits: &DisplayLimits) -> DiffModel {
        let mut clip = LineClip {
            budget: limits.max_lines,
            max_chars: limits.max_line_chars,
            shown: 0,
            long_lines: false,
        };
        let files: Vec<FileDiff> = self
            .files
            .iter()
            .take(limits.max_files)
            .map(|file| FileDiff {
                hunks: clip.hunks(&file.hunks),
                ..file.clone()
            })
            .collect();
        let (patch, patch_cut) = clip_patch(&self.patch, limits.max_patch_bytes);
        let mut left_out = Vec::new();
        if files.len() < self.files.len() {
            left_out.push(format!(
                "{} of {} files listed",
                files.len(),
                self.files.len()
            ));
        }
        let total_lines: usize = self
            .files
            .iter()
            .flat_map(|f| &f.hunks)
            .map(|h| h.lines.len())
            .sum();
        if clip.shown < total_lines {
            left_out.push(format!("{} of {total_lines} lines shown", clip.shown));
        }
        if clip.long_lines {
            left_out.push(format!(
                "lines longer than {} characters cut",
                limits.max_line_chars
            ));
        }
        if patch_cut {
            left_out.push(format!(
                "patch text cut at {} KiB",
                limits.max_patch_bytes / 1024
            ));
        }
        let note = (!left_out.is_empty()).then(|| {
            format!(
                "diff shortened for display ({}); the full patch is in the run log",
                left_out.join(", ")
            )
        });
        DiffModel {
            files,
            insertions: self.insertions,
            deletions: self.deletions,
            patch,
            note,
            unseen: self.unseen.clone(),
            hidden: self.hidden.clone(),
            new_repos: self.new_repos.clone(),
        }
    }

    /// Reads git patch text (a round's `diff.patch`) back into a model whose `patch` is that
    /// text, with libgit2's patch parser, the one `revert` applies: paths are top-relative as
    /// written, quoted names unquoted, and a malformed patch (a hunk whose line counts do not
    /// match its header) is an error rather than a guess.
    pub fn from_patch(text: &str) -> Result<DiffModel, WorkspaceError> {
        let diff = Diff::from_buffer(text.as_bytes())?;
        let files = files_of(&diff, "", |file, _, patch| {
            read_lines(file, patch)?;
            // Only a blob too large to load is written without its content.
            file.too_large = file.binary && !has_binary_data(&patch.to_buf()?);
            Ok(())
        })?;
        let mut model = DiffModel {
            files,
            patch: text.to_string(),
            ..DiffModel::default()
        };
        model.count_totals();
        Ok(model)
    }

    /// The totals, summed over the files.
    fn count_totals(&mut self) {
        self.insertions = self.files.iter().map(|f| f.insertions).sum();
        self.deletions = self.files.iter().map(|f| f.deletions).sum();
    }
}

/// `for_display`'s line budget, spent file by file, and what it cut.
struct LineClip {
    /// Hunk lines still to show.
    budget: usize,
    max_chars: usize,
    shown: usize,
    long_lines: bool,
}

impl LineClip {
    /// `hunks` within the budget left, their lines cut at `max_chars` characters.
    fn hunks(&mut self, hunks: &[Hunk]) -> Vec<Hunk> {
        let mut out = Vec::new();
        for hunk in hunks {
            if self.budget == 0 {
                break;
            }
            let lines: Vec<DiffLine> = hunk
                .lines
                .iter()
                .take(self.budget)
                .map(|line| {
                    let (text, cut) = clip_chars(&line.text, self.max_chars);
                    self.long_lines |= cut;
                    DiffLine {
                        kind: line.kind,
                        text,
                    }
                })
                .collect();
            self.budget -= lines.len();
            self.shown += lines.len();
            out.push(Hunk {
                header: hunk.header.clone(),
                lines,
            });
        }
        out
    }
}

fn clip_chars(text: &str, max: usize) -> (String, bool) {
    match text.char_indices().nth(max) {
        Some((end, _)) => (format!("{}…", &text[..end]), true),
        None => (text.to_string(), false),
    }
}

/// The patch cut at the last line end within `max` bytes.
fn clip_patch(patch: &str, max: usize) -> (String, bool) {
    if patch.len() <= max {
        return (patch.to_string(), false);
    }
    let head = crate::text::cut_at_char_boundary(patch, max);
    let end = head.rfind('\n').map_or(0, |i| i + 1);
    (patch[..end].to_string(), true)
}

/// The tree at `prefix` inside the tree `id` (`None` when the directory does not exist).
pub(super) fn subtree<'r>(
    repo: &'r Repository,
    id: Oid,
    prefix: &str,
) -> Result<Option<Tree<'r>>, WorkspaceError> {
    let tree = repo.find_tree(id)?;
    if prefix.is_empty() {
        return Ok(Some(tree));
    }
    match tree.get_path(std::path::Path::new(prefix)) {
        Ok(entry) if entry.kind() == Some(git2::ObjectType::Tree) => {
            Ok(Some(repo.find_tree(entry.id())?))
        }
        Ok(_) => Ok(None),
        Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Blobs over [`DIFF_MAX_BYTES`] are binary by size, and without `show_binary` libgit2 then
/// never loads them; `binary_patch` asks for the content of the others.
fn options(prefix: &str) -> DiffOptions {
    let mut opts = DiffOptions::new();
    opts.max_size(i64::try_from(DIFF_MAX_BYTES).unwrap_or(i64::MAX));
    if !prefix.is_empty() {
        let dir = prefix.trim_end_matches('/');
        opts.old_prefix(format!("a/{dir}/"));
        opts.new_prefix(format!("b/{dir}/"));
    }
    opts
}

fn detect_renames(diff: &mut Diff<'_>) -> Result<(), WorkspaceError> {
    let mut find = DiffFindOptions::new();
    find.renames(true);
    diff.find_similar(Some(&mut find))?;
    Ok(())
}

fn top_relative(prefix: &str, path: Option<&[u8]>) -> Option<String> {
    let path = String::from_utf8_lossy(path?);
    Some(if prefix.is_empty() {
        path.into_owned()
    } else {
        format!("{}/{path}", prefix.trim_end_matches('/'))
    })
}

fn file_of(delta: &DiffDelta<'_>, prefix: &str) -> FileDiff {
    let status = match delta.status() {
        Delta::Added | Delta::Untracked | Delta::Copied => FileStatus::Added,
        Delta::Deleted => FileStatus::Deleted,
        Delta::Renamed => FileStatus::Renamed,
        Delta::Typechange => FileStatus::TypeChange,
        _ => FileStatus::Modified,
    };
    let new = top_relative(prefix, delta.new_file().path_bytes());
    let old = top_relative(prefix, delta.old_file().path_bytes());
    let (path, old_path) = match (new, old) {
        (Some(n), Some(o)) if n != o => (n, Some(o)),
        (Some(n), _) => (n, None),
        (None, Some(o)) => (o, None),
        (None, None) => (String::new(), None),
    };
    let new_file = delta.new_file();
    FileDiff {
        old_path,
        status,
        binary: delta.flags().is_binary(),
        gitlink: new_file.exists() && new_file.mode() == git2::FileMode::Commit,
        ..FileDiff::modified(path)
    }
}

fn hunks_of(patch: &Patch<'_>) -> Result<Vec<Hunk>, WorkspaceError> {
    let mut hunks = Vec::with_capacity(patch.num_hunks());
    for h in 0..patch.num_hunks() {
        let (hunk, count) = patch.hunk(h)?;
        let mut lines = Vec::with_capacity(count);
        for l in 0..count {
            let line = patch.line_in_hunk(h, l)?;
            let kind = match line.origin() {
                '+' => LineKind::Added,
                '-' => LineKind::Removed,
                ' ' => LineKind::Context,
                // "\ No newline at end of file" markers belong to the line before.
                _ => continue,
            };
            let text = String::from_utf8_lossy(line.content())
                .trim_end_matches(['\n', '\r'])
                .to_string();
            lines.push(DiffLine { kind, text });
        }
        hunks.push(Hunk {
            header: String::from_utf8_lossy(hunk.header())
                .trim_end()
                .to_string(),
            lines,
        });
    }
    Ok(hunks)
}

/// Diffs two trees, limited to `prefix` (a directory inside the work tree, `""` for all).
pub fn between(
    repo: &Repository,
    from: Oid,
    to: Oid,
    prefix: &str,
) -> Result<DiffModel, WorkspaceError> {
    let old = subtree(repo, from, prefix)?;
    let new = subtree(repo, to, prefix)?;
    let mut opts = options(prefix);
    let mut diff = repo.diff_tree_to_tree(old.as_ref(), new.as_ref(), Some(&mut opts))?;
    detect_renames(&mut diff)?;

    let odb = repo.odb()?;
    let mut patch_text = String::new();
    let files = files_of(&diff, prefix, |file, delta, patch| {
        if too_large(&odb, delta) {
            // Headers and `Binary files ... differ`: ASCII, since git quotes odd names.
            file.binary = true;
            file.too_large = true;
            patch_text.push_str(&String::from_utf8_lossy(&patch.to_buf()?));
            return Ok(());
        }
        let text = patch.to_buf()?;
        match std::str::from_utf8(&text) {
            Ok(text) => {
                read_lines(file, patch)?;
                if file.binary {
                    let text = binary_patch(repo, old.as_ref(), new.as_ref(), prefix, delta)?;
                    patch_text.push_str(&text);
                } else {
                    patch_text.push_str(text);
                }
            }
            Err(_) => {
                file.binary = true;
                let text = binary_patch(repo, old.as_ref(), new.as_ref(), prefix, delta)?;
                patch_text.push_str(&text);
            }
        }
        Ok(())
    })?;
    let mut model = DiffModel {
        files,
        patch: patch_text,
        ..DiffModel::default()
    };
    model.count_totals();
    Ok(model)
}

/// Whether either side of `delta` is a blob over [`DIFF_MAX_BYTES`], by its object header
/// (the content is not read).
fn too_large(odb: &git2::Odb<'_>, delta: &DiffDelta<'_>) -> bool {
    [delta.old_file(), delta.new_file()].iter().any(|side| {
        !side.id().is_zero()
            && side.mode() != git2::FileMode::Commit
            && odb
                .read_header(side.id())
                .is_ok_and(|(size, _)| u64::try_from(size).unwrap_or(u64::MAX) > DIFF_MAX_BYTES)
    })
}

/// Each delta of `diff` as a file, its paths under `prefix`; `read` is handed each patch a
/// delta has, to fill in lines (`read_lines`) and take its text.
fn files_of(
    diff: &Diff<'_>,
    prefix: &str,
    mut read: impl FnMut(&mut FileDiff, &DiffDelta<'_>, &mut Patch<'_>) -> Result<(), WorkspaceError>,
) -> Result<Vec<FileDiff>, WorkspaceError> {
    let mut files = Vec::with_capacity(diff.deltas().len());
    for (idx, delta) in diff.deltas().enumerate() {
        let mut file = file_of(&delta, prefix);
        if let Some(mut patch) = Patch::from_diff(diff, idx)? {
            read(&mut file, &delta, &mut patch)?;
        }
        files.push(file);
    }
    Ok(files)
}

/// A text file's counts and hunks from its patch; a binary file keeps none.
fn read_lines(file: &mut FileDiff, patch: &Patch<'_>) -> Result<(), WorkspaceError> {
    file.binary |= patch.delta().flags().is_binary();
    if !file.binary {
        let (_, insertions, deletions) = patch.line_stats()?;
        file.insertions = insertions;
        file.deletions = deletions;
        file.hunks = hunks_of(patch)?;
    }
    Ok(())
}

/// The patch of one delta whose text is not UTF-8, redone as a binary patch (ASCII).
fn binary_patch(
    repo: &Repository,
    old: Option<&Tree<'_>>,
    new: Option<&Tree<'_>>,
    prefix: &str,
    delta: &DiffDelta<'_>,
) -> Result<String, WorkspaceError> {
    let mut opts = options(prefix);
    opts.show_binary(true)
        .force_binary(true)
        .disable_pathspec_match(true);
    let old_path = delta.old_file().path_bytes();
    let new_path = delta.new_file().path_bytes();
    for path in [old_path, new_path].into_iter().flatten() {
        opts.pathspec(path);
    }
    let mut diff = repo.diff_tree_to_tree(old, new, Some(&mut opts))?;
    detect_renames(&mut diff)?;
    let mut out = String::new();
    for idx in 0..diff.deltas().len() {
        if let Some(mut patch) = Patch::from_diff(&diff, idx)? {
            out.push_str(&String::from_utf8_lossy(&patch.to_buf()?));
        }
    }
    Ok(out)
}

/// Whether patch text carries a binary file's content (`GIT binary patch`), not only
/// `Binary files ... differ`.
fn has_binary_data(text: &[u8]) -> bool {
    text.windows(16).any(|w| w == b"GIT binary patch")
}
