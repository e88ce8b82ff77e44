//! Input checks that guard a run before anything is written: the objective's size and
//! characters, and whether the run directory can hold a new run.
//!
//! Each check returns a [`UsageError`] whose one line names the problem and the fix; callers
//! exit 2 on it. They only look, never create, so a refused run leaves no trace. The objective
//! is checked where every objective passes (`normalize_objective`: the command line,
//! `-f FILE` and the TUI's editor); the run directory in `app::prepare`.

use std::path::Path;

use crate::error::UsageError;

/// The largest objective accepted, in bytes (64 KiB). An objective is a task statement, not a
/// document: every round's prompt and the run log carry it again.
pub const MAX_OBJECTIVE_BYTES: usize = 64 * 1024;

/// Validates an objective: trimmed, non-empty, within [`check_objective`]'s limits.
pub fn normalize_objective(raw: &str) -> Result<String, UsageError> {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Err(UsageError::EmptyObjective);
    }
    check_objective(trimmed)?;
    Ok(trimmed.to_string())
}

/// Refuses an objective over [`MAX_OBJECTIVE_BYTES`] or one holding control characters other
/// than newline and tab (a CR is accepted only as part of a CRLF line end).
pub fn check_objective(objective: &str) -> Result<(), UsageError> {
    if objective.len() > MAX_OBJECTIVE_BYTES {
        return Err(UsageError::Invalid(format!(
            "the objective is {} bytes, over the limit of {} bytes (64 KiB): state the task and point to files for the details",
            objective.len(),
            MAX_OBJECTIVE_BYTES
        )));
    }
    let mut chars = objective.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let crlf = c == '\r' && chars.peek().is_some_and(|&(_, next)| next == '\n');
        if c.is_control() && c != '\n' && c != '\t' && !crlf {
            return Err(UsageError::Invalid(format!(
                "the objective holds a control character (U+{:04X} at byte {at}): only newlines and tabs are allowed",
                u32::from(c)
            )));
        }
    }
    Ok(())
}

/// Checks that `dir` can become a new run's directory: absent (with a writable directory to
/// create it in) or an empty, writable directory. A non-empty directory holds another run's
/// log and is refused rather than mixed into.
pub fn check_run_dir(dir: &Path) -> Result<(), UsageError> {
    let refuse = |why: String| {
        UsageError::Invalid(format!(
            "cannot use {} as the run directory: {why}",
            dir.display()
        ))
    };
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => {
            let mut entries = std::fs::read_dir(dir).map_err(|e| refuse(e.to_string()))?;
            if entries.next().is_some() {
                return Err(refuse(
                    "it is not empty (it may hold another run's log): pass a new or empty directory with --run-dir".into(),
                ));
            }
            writable(dir).map_err(refuse)
        }
        Ok(_) => Err(refuse(
            "it exists and is not a directory: pass a new or empty directory with --run-dir".into(),
        )),
        Err(e) if is_missing(&e) => {
            let mut parent = dir.parent();
            while let Some(p) = parent {
                let p = if p.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    p
                };
                match std::fs::metadata(p) {
                    Ok(meta) if meta.is_dir() => return writable(p).map_err(refuse),
                    Ok(_) => {
                        return Err(refuse(format!(
                            "{} is not a directory: pass a path under a writable directory with --run-dir",
                            p.display()
                        )))
                    }
                    Err(e) if is_missing(&e) => parent = p.parent(),
                    Err(e) => return Err(refuse(format!("{}: {e}", p.display()))),
                }
            }
            Err(refuse("no existing directory above it".into()))
        }
        Err(e) => Err(refuse(e.to_string())),
    }
}

/// Refuses a run directory inside the work tree whose top is `top`: the worker's tools and
/// commands could rewrite its `run.json` (the settings a resume takes) and its log.
pub fn check_run_dir_outside(dir: &Path, top: &Path) -> Result<(), UsageError> {
    let top = top.canonicalize().unwrap_or_else(|_| top.to_path_buf());
    if resolved(dir).starts_with(&top) {
        return Err(UsageError::Invalid(format!(
            "cannot use {} as the run directory: it is inside the work tree {}, where the worker's tools and commands could rewrite the run's log and settings; pass a directory outside it with --run-dir",
            dir.display(),
            top.display()
        )));
    }
    Ok(())
}

/// `path` made absolute with its nearest existing ancestor's symlinks resolved (the rest,
/// not there yet, appended as given).
fn resolved(path: &Path) -> std::path::PathBuf {
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut rest = Vec::new();
    let mut at = path.as_path();
    loop {
        if let Ok(real) = at.canonicalize() {
            return rest.iter().rev().fold(real, |p, part| p.join(part));
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                at = parent;
            }
            _ => return path,
        }
    }
}

/// Absent, or below something that is not a directory: look further up.
fn is_missing(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
    )
}

fn writable(dir: &Path) -> Result<(), String> {
    use nix::unistd::{access, AccessFlags};
    access(dir, AccessFlags::W_OK | AccessFlags::X_OK).map_err(|e| {
        format!(
            "{} is not writable ({e}): pass a writable place with --run-dir",
            dir.display()
        )
    })?;
    let read_only = nix::sys::statvfs::statvfs(dir)
        .map(|s| s.flags().contains(nix::sys::statvfs::FsFlags::ST_RDONLY))
        .unwrap_or(false);
    if read_only {
        return Err(format!(
            "{} is on a read-only file system: pass a writable place with --run-dir",
            dir.display()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objectives_are_bounded_and_plain() {
        assert!(check_objective("fix the bug\n\tin main.rs\r\n").is_ok());
        assert!(check_objective(&"x".repeat(MAX_OBJECTIVE_BYTES)).is_ok());
        let big = check_objective(&"x".repeat(MAX_OBJECTIVE_BYTES + 1)).unwrap_err();
        assert!(big.to_string().contains("64 KiB"), "{big}");
        let nul = check_objective("a\0b").unwrap_err();
        assert!(nul.to_string().contains("U+0000"), "{nul}");
        assert!(check_objective("a\rb").is_err());
        assert!(check_objective("a\u{1b}[2Jb").is_err());
    }
}
