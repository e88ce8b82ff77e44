//! Reads a round's `diff.patch` from the run log back into a [`DiffModel`] for the diff view.
//!
//! The run log keeps each round's change as git patch text; the TUI shows finished rounds
//! from there rather than keeping every diff in memory.

use crate::protocol::event::FileStatus;
use crate::workspace::{DiffLine, DiffModel, FileDiff, Hunk, LineKind};

/// The `b/` path of a `diff --git a/X b/Y` line.
fn git_header_path(rest: &str) -> String {
    match rest.rfind(" b/") {
        Some(i) => rest[i + 3..].to_string(),
        None => rest.trim_start_matches("a/").to_string(),
    }
}

/// Parses git patch text. Unknown lines are ignored; nothing here can fail.
pub fn parse(patch: &str) -> DiffModel {
    let mut model = DiffModel {
        patch: patch.to_string(),
        ..DiffModel::default()
    };
    for line in patch.lines() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            model.files.push(FileDiff::modified(git_header_path(rest)));
            continue;
        }
        let Some(file) = model.files.last_mut() else {
            continue;
        };
        let in_header = file.hunks.is_empty();
        if in_header {
            if line.starts_with("new file mode") {
                file.status = FileStatus::Added;
            } else if line.starts_with("deleted file mode") {
                file.status = FileStatus::Deleted;
            } else if let Some(from) = line.strip_prefix("rename from ") {
                file.old_path = Some(from.to_string());
                file.status = FileStatus::Renamed;
            } else if let Some(to) = line.strip_prefix("rename to ") {
                file.path = to.to_string();
            } else if let Some(path) = line.strip_prefix("+++ b/") {
                file.path = path.to_string();
            } else if line.starts_with("Binary files ") || line == "GIT binary patch" {
                file.binary = true;
            }
            if !line.starts_with("@@") {
                continue;
            }
        }
        if line.starts_with("@@") {
            file.hunks.push(Hunk {
                header: line.to_string(),
                lines: Vec::new(),
            });
            continue;
        }
        let (kind, text) = match line.chars().next() {
            Some('+') => (LineKind::Added, &line[1..]),
            Some('-') => (LineKind::Removed, &line[1..]),
            Some(' ') => (LineKind::Context, &line[1..]),
            _ => continue,
        };
        match kind {
            LineKind::Added => file.insertions += 1,
            LineKind::Removed => file.deletions += 1,
            LineKind::Context => {}
        }
        if let Some(hunk) = file.hunks.last_mut() {
            hunk.lines.push(DiffLine {
                kind,
                text: text.to_string(),
            });
        }
    }
    model.insertions = model.files.iter().map(|f| f.insertions).sum();
    model.deletions = model.files.iter().map(|f| f.deletions).sum();
    model
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATCH: &str = "diff --git a/src/lib.rs b/src/lib.rs
index 1111111..2222222 100644
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1,3 +1,3 @@ fn main
 keep
-old line
+new line
--- looks like a header
diff --git a/notes.txt b/notes.txt
new file mode 100644
index 0000000..3333333
--- /dev/null
+++ b/notes.txt
@@ -0,0 +1 @@
+hello
";

    #[test]
    fn parses_files_hunks_and_counts() {
        let model = parse(PATCH);
        assert_eq!(model.files.len(), 2);
        let lib = &model.files[0];
        assert_eq!(lib.path, "src/lib.rs");
        assert_eq!(lib.status, FileStatus::Modified);
        assert_eq!(lib.hunks.len(), 1);
        assert_eq!(lib.hunks[0].header, "@@ -1,3 +1,3 @@ fn main");
        assert_eq!((lib.insertions, lib.deletions), (1, 2));
        assert_eq!(model.files[1].status, FileStatus::Added);
        assert_eq!(model.files[1].path, "notes.txt");
        assert_eq!((model.insertions, model.deletions), (2, 2));
    }
}
