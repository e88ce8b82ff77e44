//! Undoing one round: its `diff.patch` from the run log, applied in reverse to the work tree.
//!
//! git applies a patch as given, so the round's patch is turned around first
//! ([`reverse_patch`]: old and new sides swapped in the headers, hunk ranges and lines, the
//! two halves of a binary patch exchanged). The reversed patch is parsed by git and applied
//! to a snapshot of the work tree as it is, before anything is written: when a hunk no longer
//! applies (a later round or the person changed those lines since), nothing is changed and
//! the error names each file and hunk that conflicts. The files that changed are then written
//! through confined opens (`write`), never by name. Changes of other rounds stay; the index,
//! HEAD and refs are never touched.

use std::cell::Cell;

use git2::{ApplyOptions, Diff, Repository};

use super::{Workspace, WorkspaceError};

impl Workspace {
    /// Reverts round `round`, whose patch (as written to `rounds/NN/diff.patch`) is `patch`.
    /// Returns the paths it changed, relative to the work tree's top. Refuses, changing
    /// nothing, with [`WorkspaceError::RevertConflicts`] when any hunk does not apply.
    pub fn revert_round(&self, round: u32, patch: &str) -> Result<Vec<String>, WorkspaceError> {
        super::refuse_while_running(&self.root, "nothing was changed")?;
        if patch.trim().is_empty() {
            return Err(WorkspaceError::NothingToRevert(round));
        }
        let reversed = reverse_patch(patch);
        let diff = Diff::from_buffer(reversed.as_bytes())?;
        let paths = touched(&diff);
        if paths.is_empty() {
            return Err(WorkspaceError::NothingToRevert(round));
        }
        // A directory the worker swapped for a symlink since is named here; should one be
        // swapped later, the confined writes stop at it rather than go through.
        let through: Vec<String> = paths
            .iter()
            .filter_map(|p| {
                super::unsafe_parent(&self.top, std::path::Path::new(p)).map(|link| {
                    format!(
                        "{p}: {} is now a symlink or not a directory",
                        link.display()
                    )
                })
            })
            .collect();
        if !through.is_empty() {
            return Err(WorkspaceError::RevertConflicts {
                round,
                conflicts: through,
            });
        }
        // Applied to a snapshot of the work tree as it is (git's own check of every hunk),
        // then the files that changed are written through confined opens (`write`).
        let current = self.repo.find_tree(self.snapshot()?.tree)?;
        let reverted = match self.repo.apply_to_tree(&current, &diff, None) {
            Ok(mut index) => index.write_tree_to(&self.repo)?,
            Err(e) => {
                let mut conflicts = conflicts(&self.repo, &current, &diff);
                if conflicts.is_empty() {
                    // Each file applies alone but not all together: git's own words, then.
                    conflicts.push(e.message().to_string());
                }
                return Err(WorkspaceError::RevertConflicts { round, conflicts });
            }
        };
        let changes = super::commit::changes(&self.repo, current.id(), reverted, "")?;
        let in_the_way = super::write::in_the_way(&self.top, &current, &changes)?;
        if !in_the_way.is_empty() {
            return Err(WorkspaceError::RevertConflicts {
                round,
                conflicts: in_the_way,
            });
        }
        super::write::write_changes(&self.repo, &self.top, &changes, None)?;
        Ok(paths)
    }
}

/// Every path a diff writes or removes, new paths first, without repeats.
fn touched(diff: &Diff<'_>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for delta in diff.deltas() {
        for file in [delta.new_file(), delta.old_file()] {
            if let Some(path) = file.path_bytes() {
                let path = String::from_utf8_lossy(path).into_owned();
                if !out.contains(&path) {
                    out.push(path);
                }
            }
        }
    }
    out
}

/// Which files and hunks of `diff` do not apply to the work tree: each file is checked
/// alone, and in a file that fails each hunk alone. A file that fails with no hunk failing
/// alone (missing, binary, or only its hunks together conflict) is named as a whole.
fn conflicts(repo: &Repository, tree: &git2::Tree<'_>, diff: &Diff<'_>) -> Vec<String> {
    let mut out = Vec::new();
    for (index, delta) in diff.deltas().enumerate() {
        let path = delta
            .new_file()
            .path_bytes()
            .or_else(|| delta.old_file().path_bytes())
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .unwrap_or_default();
        if applies(repo, tree, diff, index, None).unwrap_or(false) {
            continue;
        }
        let hunks = hunk_starts(diff, index);
        let failing: Vec<String> = hunks
            .iter()
            .enumerate()
            .filter(|(h, _)| !applies(repo, tree, diff, index, Some(*h)).unwrap_or(false))
            .map(|(h, line)| format!("{path} hunk {} at line {line}", h + 1))
            .collect();
        if failing.is_empty() {
            out.push(format!("{path} no longer matches what the round left"));
        } else {
            out.extend(failing);
        }
    }
    out
}

/// Where each hunk of delta `index` starts in the file as the round left it.
fn hunk_starts(diff: &Diff<'_>, index: usize) -> Vec<u32> {
    match git2::Patch::from_diff(diff, index) {
        Ok(Some(patch)) => (0..patch.num_hunks())
            .filter_map(|h| patch.hunk(h).ok())
            .map(|(hunk, _)| hunk.old_start())
            .collect(),
        _ => Vec::new(),
    }
}

/// Whether delta `index` alone (only its hunk `hunk` when given) applies to `tree` (the work
/// tree's snapshot).
fn applies(
    repo: &Repository,
    tree: &git2::Tree<'_>,
    diff: &Diff<'_>,
    index: usize,
    hunk: Option<usize>,
) -> Result<bool, git2::Error> {
    let delta_seen = Cell::new(0usize);
    let hunk_seen = Cell::new(0usize);
    let mut opts = ApplyOptions::new();
    opts.check(true);
    opts.delta_callback(|_| {
        let this = delta_seen.get();
        delta_seen.set(this + 1);
        this == index
    });
    opts.hunk_callback(|_| {
        let this = hunk_seen.get();
        hunk_seen.set(this + 1);
        hunk.is_none_or(|h| h == this)
    });
    Ok(repo.apply_to_tree(tree, diff, Some(&mut opts)).is_ok())
}

/// Where a line of the patch is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Header,
    /// Inside a hunk, with the old and new lines still to come.
    Hunk(u64, u64),
    /// Inside a binary patch: which of its two halves.
    Binary(u8),
}

/// The patch that undoes `patch` (text as `git diff` prints it): `---`/`+++` names, mode,
/// new/deleted, rename and index lines swapped, each hunk's ranges swapped and its `+` and
/// `-` lines exchanged, and the forward and reverse halves of a binary patch exchanged.
pub fn reverse_patch(patch: &str) -> String {
    let mut rev = Reversal {
        out: String::with_capacity(patch.len()),
        part: Part::Header,
        old_name: None,
        held: None,
        binary: [Vec::new(), Vec::new()],
    };
    let lines: Vec<&str> = patch.split_inclusive('\n').collect();
    for (at, line) in lines.iter().copied().enumerate() {
        match rev.part {
            Part::Hunk(old, new) => rev.hunk_line(line, old, new),
            Part::Binary(half) => rev.binary_line(line, half),
            Part::Header => rev.header_line(line, &lines[at + 1..]),
        }
    }
    // A patch cut short inside a binary patch: keep what there is, in order.
    for half in &mut rev.binary {
        rev.out.extend(half.drain(..));
    }
    rev.out
}

/// A patch being reversed, line by line.
struct Reversal<'p> {
    out: String,
    part: Part,
    /// The `---` name until its `+++` line comes.
    old_name: Option<String>,
    /// The first of a pair of lines (`old mode`, `rename from`) until its second comes.
    held: Option<String>,
    /// The two halves of a binary patch, until both are read.
    binary: [Vec<&'p str>; 2],
}

impl<'p> Reversal<'p> {
    /// A line inside a hunk with `old` and `new` lines still to come: `+` and `-` exchanged.
    fn hunk_line(&mut self, line: &str, old: u64, new: u64) {
        let body = line.trim_end_matches('\n');
        let (old, new) = match body.as_bytes().first() {
            Some(b'+') => {
                self.out.push('-');
                self.out.push_str(&line[1..]);
                (old, new.saturating_sub(1))
            }
            Some(b'-') => {
                self.out.push('+');
                self.out.push_str(&line[1..]);
                (old.saturating_sub(1), new)
            }
            Some(b'\\') => {
                self.out.push_str(line);
                (old, new)
            }
            _ => {
                self.out.push_str(line);
                (old.saturating_sub(1), new.saturating_sub(1))
            }
        };
        // A `\ No newline` line after the hunk's last line passes as a header line.
        self.part = if old == 0 && new == 0 {
            Part::Header
        } else {
            Part::Hunk(old, new)
        };
    }

    /// A line of a binary patch's `half`; at the end of the second half both are written,
    /// exchanged.
    fn binary_line(&mut self, line: &'p str, half: u8) {
        self.binary[usize::from(half)].push(line);
        if line.trim_end_matches('\n').is_empty() {
            if half == 0 {
                self.part = Part::Binary(1);
            } else {
                self.out.extend(self.binary[1].drain(..));
                self.out.extend(self.binary[0].drain(..));
                self.part = Part::Header;
            }
        }
    }

    /// A line outside hunks and binary patches; `after` is the patch after it.
    fn header_line(&mut self, line: &str, after: &[&str]) {
        let body = line.trim_end_matches('\n');
        let out = &mut self.out;
        if let Some(range) = body.strip_prefix("@@ ") {
            if let Some((ranges, rest)) = range.split_once(" @@") {
                if let Some((old, new)) = ranges.split_once(' ') {
                    let old = old.trim_start_matches('-');
                    let new = new.trim_start_matches('+');
                    out.push_str(&format!("@@ -{new} +{old} @@{rest}\n"));
                    self.part = Part::Hunk(count(old), count(new));
                    return;
                }
            }
        }
        if body == "GIT binary patch" {
            out.push_str(line);
            self.part = Part::Binary(0);
        } else if let Some(name) = body.strip_prefix("--- ") {
            self.old_name = Some(name.to_string());
        } else if let Some(name) = body.strip_prefix("+++ ") {
            let old = self.old_name.take().unwrap_or_default();
            out.push_str(&format!("--- {}\n", side(name, "a/")));
            out.push_str(&format!("+++ {}\n", side(&old, "b/")));
        } else if let Some(rest) = body.strip_prefix("new file mode ") {
            out.push_str(&format!("deleted file mode {rest}\n"));
        } else if let Some(rest) = body.strip_prefix("deleted file mode ") {
            out.push_str(&format!("new file mode {rest}\n"));
        } else if let Some(rest) = body.strip_prefix("old mode ") {
            self.held = Some(rest.to_string());
        } else if let Some(rest) = body.strip_prefix("new mode ") {
            let old = self.held.take().unwrap_or_default();
            out.push_str(&format!("old mode {rest}\nnew mode {old}\n"));
        } else if let Some(rest) = body.strip_prefix("rename from ") {
            self.held = Some(rest.to_string());
        } else if let Some(rest) = body.strip_prefix("rename to ") {
            let old = self.held.take().unwrap_or_default();
            let (from, to) = (quoted("", rest), quoted("", &old));
            out.push_str(&format!("rename from {from}\nrename to {to}\n"));
        } else if let Some(rest) = body.strip_prefix("index ") {
            out.push_str(&format!("index {}\n", swap_index(rest)));
        } else if let Some(names) = body.strip_prefix("diff --git ") {
            let names = match renamed(after) {
                Some((from, to)) => format!("{} {}", quoted("a/", to), quoted("b/", from)),
                None => swap_git_names(names),
            };
            out.push_str(&format!("diff --git {names}\n"));
        } else {
            out.push_str(line);
        }
    }
}

/// The `rename from` and `rename to` names of the file whose header lines follow (up to its
/// first hunk or the next file), as written there.
fn renamed<'a>(rest: &[&'a str]) -> Option<(&'a str, &'a str)> {
    let mut from = None;
    let mut to = None;
    for line in rest {
        let body = line.trim_end_matches('\n');
        if body.starts_with("diff --git ")
            || body.starts_with("@@ ")
            || body.starts_with("--- ")
            || body == "GIT binary patch"
        {
            break;
        }
        if let Some(name) = body.strip_prefix("rename from ") {
            from = Some(name);
        } else if let Some(name) = body.strip_prefix("rename to ") {
            to = Some(name);
        }
    }
    from.zip(to)
}

/// `name` (as a rename line writes it: bare, or quoted by git) with `prefix`, quoted when it
/// has a space or a quote, so git can split the `diff --git` line of a rename.
fn quoted(prefix: &str, name: &str) -> String {
    if let Some(inner) = name.strip_prefix('"').and_then(|n| n.strip_suffix('"')) {
        return format!("\"{prefix}{inner}\"");
    }
    if name.contains([' ', '"', '\\', '\t']) {
        let escaped = name
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\t', "\\t");
        return format!("\"{prefix}{escaped}\"");
    }
    format!("{prefix}{name}")
}

/// The line count of a hunk range (`12,3` → 3, `12` → 1).
fn count(range: &str) -> u64 {
    match range.split_once(',') {
        Some((_, n)) => n.parse().unwrap_or(0),
        None => 1,
    }
}

/// A `---`/`+++` name moved to the other side: `b/x` → `a/x` (also inside quotes);
/// `/dev/null` stays.
fn side(name: &str, prefix: &str) -> String {
    let (quote, bare) = match name.strip_prefix('"') {
        Some(rest) => ("\"", rest),
        None => ("", name),
    };
    match bare.get(2..) {
        Some(rest) if quote.is_empty() && (bare.starts_with("a/") || bare.starts_with("b/")) => {
            quoted(prefix, rest)
        }
        Some(rest) if bare.starts_with("a/") || bare.starts_with("b/") => {
            format!("{quote}{prefix}{rest}")
        }
        _ => name.to_string(),
    }
}

/// `abc..def 100644` → `def..abc 100644`.
fn swap_index(rest: &str) -> String {
    let (ids, mode) = match rest.split_once(' ') {
        Some((ids, mode)) => (ids, Some(mode)),
        None => (rest, None),
    };
    let ids = match ids.split_once("..") {
        Some((a, b)) => format!("{b}..{a}"),
        None => ids.to_string(),
    };
    match mode {
        Some(mode) => format!("{ids} {mode}"),
        None => ids,
    }
}

/// `a/x b/y` → `a/y b/x` for unquoted names; a line it cannot split is kept (git takes the
/// names from the `---`/`+++` and rename lines then).
fn swap_git_names(names: &str) -> String {
    let Some(rest) = names.strip_prefix("a/") else {
        return names.to_string();
    };
    // With a space in a name the split is ambiguous; the same name on both sides is not.
    let halves: Vec<(&str, &str)> = rest
        .match_indices(" b/")
        .map(|(at, _)| (&rest[..at], &rest[at + 3..]))
        .collect();
    match halves.as_slice() {
        [(old, new)] => format!("a/{new} b/{old}"),
        many => match many.iter().find(|(old, new)| old == new) {
            Some((old, new)) => format!("a/{new} b/{old}"),
            None => names.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reversed_patch_swaps_sides_ranges_and_lines() {
        let forward = "diff --git a/f.txt b/f.txt\n\
                       index 1111111..2222222 100644\n\
                       --- a/f.txt\n\
                       +++ b/f.txt\n\
                       @@ -1,2 +1,3 @@\n \
                       one\n\
                       -two\n\
                       +deux\n\
                       +trois\n\
                       diff --git a/new.txt b/new.txt\n\
                       new file mode 100644\n\
                       index 0000000..3333333\n\
                       --- /dev/null\n\
                       +++ b/new.txt\n\
                       @@ -0,0 +1 @@\n\
                       +--- not a header\n\
                       \\ No newline at end of file\n";
        let back = "diff --git a/f.txt b/f.txt\n\
                    index 2222222..1111111 100644\n\
                    --- a/f.txt\n\
                    +++ b/f.txt\n\
                    @@ -1,3 +1,2 @@\n \
                    one\n\
                    +two\n\
                    -deux\n\
                    -trois\n\
                    diff --git a/new.txt b/new.txt\n\
                    deleted file mode 100644\n\
                    index 3333333..0000000\n\
                    --- a/new.txt\n\
                    +++ /dev/null\n\
                    @@ -1 +0,0 @@\n\
                    ---- not a header\n\
                    \\ No newline at end of file\n";
        assert_eq!(reverse_patch(forward), back);
    }

    #[test]
    fn renames_and_binary_halves_are_swapped() {
        let forward = "diff --git a/old name.txt b/new name.txt\n\
                       similarity index 90%\n\
                       rename from old name.txt\n\
                       rename to new name.txt\n\
                       diff --git a/b.bin b/b.bin\n\
                       index 1111111..2222222 100644\n\
                       GIT binary patch\n\
                       literal 3\n\
                       Kcmb0y\n\
                       \n\
                       literal 2\n\
                       Jcmb\n\
                       \n";
        let back = reverse_patch(forward);
        assert!(
            back.starts_with("diff --git \"a/new name.txt\" \"b/old name.txt\"\n"),
            "{back}"
        );
        assert!(
            back.contains("rename from \"new name.txt\"\nrename to \"old name.txt\"\n"),
            "{back}"
        );
        assert!(
            back.ends_with("GIT binary patch\nliteral 2\nJcmb\n\nliteral 3\nKcmb0y\n\n"),
            "{back}"
        );
    }
}
