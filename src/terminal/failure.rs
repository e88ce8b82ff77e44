//! One sentence for a review action that did not happen: what happened and what the person
//! can do, never git's raw error (its class and code numbers mean nothing at the review).
//!
//! The review's commit, apply, revert and discard end in a `WorktreeError` or a
//! `WorkspaceError`; the errors that already speak to a person (conflicts, an empty message,
//! no identity, a work tree that moved on) pass through, and a git error becomes a sentence
//! chosen by what git could not do.

use git2::ErrorCode;

use crate::workspace::{WorkspaceError, WorktreeError};

/// The line the review shows when an action failed; `nothing` says what did not happen
/// (`nothing was committed`).
pub fn review_error(error: WorktreeError, nothing: &str) -> String {
    match error {
        WorktreeError::Git(e) | WorktreeError::Workspace(WorkspaceError::Git(e)) => {
            git_sentence(&e, nothing)
        }
        WorktreeError::Workspace(WorkspaceError::NotGitRepo(path)) => format!(
            "{} is no longer a git work tree (was it removed?): {nothing}; q quits",
            path.display()
        ),
        WorktreeError::Io { path, source } => format!(
            "could not write {} ({source}); the files before it may be written already: free \
             space or fix the permissions, then try again",
            path.display()
        ),
        other => other.to_string(),
    }
}

/// `review_error` for the errors of the in-place workspace.
pub fn workspace_error(error: WorkspaceError, nothing: &str) -> String {
    review_error(WorktreeError::Workspace(error), nothing)
}

/// A git error as one sentence: what git could not do and what to do next.
fn git_sentence(error: &git2::Error, nothing: &str) -> String {
    let detail = error.message().trim_end_matches('.');
    match (error.code(), error.class()) {
        (ErrorCode::NotFound, git2::ErrorClass::Reference) => format!(
            "the run's branch is gone (removed outside this review?): {nothing}; the work is \
             only where it was applied or committed — q quits"
        ),
        (ErrorCode::NotFound, _) => format!(
            "git could not find what the run left ({detail}): {nothing}; look with `git status`, \
             or q quits"
        ),
        (ErrorCode::Locked, _) => format!(
            "another git command holds the repository's lock ({detail}): {nothing}; try again \
             when it has finished"
        ),
        (ErrorCode::Conflict | ErrorCode::MergeConflict | ErrorCode::Modified, _) => format!(
            "the files changed under the review ({detail}): {nothing}; look at them, then try \
             again"
        ),
        _ => format!("git refused ({detail}): {nothing}; look with `git status`, then try again"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(code: ErrorCode, class: git2::ErrorClass, message: &str) -> git2::Error {
        git2::Error::new(code, class, message)
    }

    #[test]
    fn a_git_error_becomes_one_sentence_without_class_or_code() {
        let cases = [
            raw(
                ErrorCode::NotFound,
                git2::ErrorClass::Reference,
                "reference 'refs/heads/ralph/x' not found",
            ),
            raw(
                ErrorCode::NotFound,
                git2::ErrorClass::Odb,
                "object not found",
            ),
            raw(
                ErrorCode::Locked,
                git2::ErrorClass::Index,
                "index is locked",
            ),
            raw(ErrorCode::GenericError, git2::ErrorClass::Os, "boom"),
        ];
        for error in cases {
            for wrapped in [
                WorktreeError::Git(raw(error.code(), error.class(), error.message())),
                WorktreeError::Workspace(WorkspaceError::Git(raw(
                    error.code(),
                    error.class(),
                    error.message(),
                ))),
            ] {
                let line = review_error(wrapped, "nothing was applied");
                assert!(!line.contains("class="), "{line}");
                assert!(!line.contains("code="), "{line}");
                assert!(line.contains("nothing was applied"), "{line}");
                assert!(!line.contains('\n'), "{line}");
            }
        }
        let gone = review_error(
            WorktreeError::Git(raw(
                ErrorCode::NotFound,
                git2::ErrorClass::Reference,
                "reference 'refs/heads/ralph/x' not found",
            )),
            "nothing was committed",
        );
        assert!(gone.starts_with("the run's branch is gone"), "{gone}");
    }

    #[test]
    fn errors_that_already_speak_to_a_person_pass_through() {
        let line = review_error(
            WorktreeError::Conflicts(vec!["a.txt".into()]),
            "nothing was applied",
        );
        assert_eq!(
            line,
            "the run's changes conflict with yours in a.txt: nothing was applied"
        );
        let line = workspace_error(WorkspaceError::EmptyMessage, "nothing was committed");
        assert_eq!(line, "the commit message is empty");
    }
}
