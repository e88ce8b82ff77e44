//! What a run started from: the baseline snapshot plus the user's git state (HEAD and the
//! index's entries), recorded so the review can tell whether someone moved HEAD or staged
//! something during the run, and say what, before it commits anything.
//!
//! The index is compared by its entries (path, stage, mode, object id), not by its bytes:
//! `git status` rewrites the file just to refresh its stat cache, which changes nothing
//! the user staged.

use std::collections::BTreeMap;

use git2::{ErrorCode, Index, Oid, Repository};
use sha2::{Digest, Sha256};

use super::{Snapshot, Workspace, WorkspaceError};

/// Where HEAD pointed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct HeadState {
    /// The ref HEAD names (`refs/heads/main`), `None` when detached.
    pub branch: Option<String>,
    /// The commit, `None` before the first commit.
    pub oid: Option<Oid>,
}

/// The index's content: (path, stage) → (mode, object id). `None` when there is no index file.
pub(super) type IndexEntries = Option<BTreeMap<(Vec<u8>, u16), (u32, Oid)>>;

/// What the index held, in the most precise form available.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum IndexContent {
    Entries(IndexEntries),
    /// An index libgit2 cannot parse (a split index, say): its bytes' digest.
    Digest(Vec<u8>),
}

/// The run's starting point, taken once before the first round.
#[derive(Debug, Clone)]
pub struct Baseline {
    pub snapshot: Snapshot,
    /// Every file by `lstat`, for the changes no snapshot shows (`hidden`).
    pub listing: super::hidden::Listing,
    pub(super) head: HeadState,
    pub(super) index: IndexContent,
}

impl Workspace {
    /// Records HEAD and the index, then snapshots the work tree. Call it once, before the run.
    pub fn baseline(&self) -> Result<Baseline, WorkspaceError> {
        let head = head_state(&self.repo)?;
        let index = index_entries(&self.repo)?;
        let snapshot = self.snapshot()?;
        Ok(Baseline {
            snapshot,
            listing: self.listing(),
            head,
            index,
        })
    }

    /// What changed in HEAD or the index since `baseline`, in words; `None` when nothing did.
    pub fn git_state_changes(&self, baseline: &Baseline) -> Result<Option<String>, WorkspaceError> {
        let head = head_state(&self.repo)?;
        let index = index_entries(&self.repo)?;
        let mut what = Vec::new();
        if let Some(text) = describe_head_change(&baseline.head, &head) {
            what.push(text);
        }
        if let Some(text) = describe_index_change(&baseline.index, &index) {
            what.push(text);
        }
        Ok((!what.is_empty()).then(|| what.join("; ")))
    }
}

pub(super) fn head_state(repo: &Repository) -> Result<HeadState, WorkspaceError> {
    let head = repo.find_reference("HEAD")?;
    let branch = head
        .symbolic_target_bytes()
        .map(|b| String::from_utf8_lossy(b).into_owned());
    let oid = match repo.head() {
        Ok(resolved) => resolved.target(),
        Err(e) if matches!(e.code(), ErrorCode::UnbornBranch | ErrorCode::NotFound) => None,
        Err(e) => return Err(e.into()),
    };
    Ok(HeadState { branch, oid })
}

/// Reads the index file (never writes it) into its entries.
pub(super) fn index_entries(repo: &Repository) -> Result<IndexContent, WorkspaceError> {
    let path = repo.path().join("index");
    if !path.exists() {
        return Ok(IndexContent::Entries(None));
    }
    let index = match Index::open(&path) {
        Ok(index) => index,
        Err(e) => {
            tracing::debug!("index: {e}; comparing its bytes instead");
            let bytes = std::fs::read(&path).map_err(|source| WorkspaceError::Io {
                path: path.clone(),
                source,
            })?;
            return Ok(IndexContent::Digest(Sha256::digest(bytes).to_vec()));
        }
    };
    let entries = index
        .iter()
        .map(|e| ((e.path, (e.flags >> 12) & 0x3), (e.mode, e.id)))
        .collect();
    Ok(IndexContent::Entries(Some(entries)))
}

fn short(oid: Oid) -> String {
    let mut text = oid.to_string();
    text.truncate(7);
    text
}

fn branch_name(reference: &str) -> &str {
    reference.strip_prefix("refs/heads/").unwrap_or(reference)
}

fn describe_head(head: &HeadState) -> String {
    match (&head.branch, head.oid) {
        (Some(b), Some(oid)) => format!("on branch {} at {}", branch_name(b), short(oid)),
        (Some(b), None) => format!("on branch {} with no commits", branch_name(b)),
        (None, Some(oid)) => format!("detached at {}", short(oid)),
        (None, None) => "nowhere".to_string(),
    }
}

fn describe_head_change(before: &HeadState, now: &HeadState) -> Option<String> {
    if before == now {
        return None;
    }
    if before.branch != now.branch {
        return Some(format!(
            "HEAD was {} when the run started and is now {} (a checkout or switch happened)",
            describe_head(before),
            describe_head(now)
        ));
    }
    let what = match &now.branch {
        Some(b) => format!("branch {}", branch_name(b)),
        None => "the detached HEAD".to_string(),
    };
    let from = before.oid.map_or_else(|| "no commits".to_string(), short);
    let to = now.oid.map_or_else(|| "no commits".to_string(), short);
    Some(format!(
        "{what} moved from {from} to {to} during the run (a commit, reset, merge or pull)"
    ))
}

fn describe_index_change(before: &IndexContent, now: &IndexContent) -> Option<String> {
    if before == now {
        return None;
    }
    let (IndexContent::Entries(before), IndexContent::Entries(now)) = (before, now) else {
        return Some("the index (staging area) file changed during the run".to_string());
    };
    let empty = BTreeMap::new();
    let (a, b) = (
        before.as_ref().unwrap_or(&empty),
        now.as_ref().unwrap_or(&empty),
    );
    let mut paths: Vec<String> = a
        .iter()
        .filter(|(k, v)| b.get(k) != Some(v))
        .map(|(k, _)| k)
        .chain(b.keys().filter(|k| !a.contains_key(k)))
        .map(|(path, _)| String::from_utf8_lossy(path).into_owned())
        .collect();
    paths.sort();
    paths.dedup();
    let count = paths.len();
    let mut named: Vec<String> = paths.into_iter().take(5).collect();
    if count > named.len() {
        named.push(format!("{} more", count - named.len()));
    }
    Some(if named.is_empty() {
        "the index (staging area) file was replaced during the run".to_string()
    } else {
        format!(
            "the index (staging area) changed during the run: {} staged, unstaged or restaged",
            named.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_changes_are_named() {
        let a = Oid::from_str("1111111111111111111111111111111111111111").unwrap();
        let b = Oid::from_str("2222222222222222222222222222222222222222").unwrap();
        let main = Some("refs/heads/main".to_string());
        let on_main = HeadState {
            branch: main.clone(),
            oid: Some(a),
        };
        assert_eq!(describe_head_change(&on_main, &on_main), None);
        let moved = describe_head_change(
            &on_main,
            &HeadState {
                branch: main,
                oid: Some(b),
            },
        )
        .unwrap();
        assert!(
            moved.contains("branch main moved from 1111111 to 2222222"),
            "{moved}"
        );
        let detached = describe_head_change(
            &on_main,
            &HeadState {
                branch: None,
                oid: Some(a),
            },
        )
        .unwrap();
        assert!(detached.contains("detached at 1111111"), "{detached}");
    }

    #[test]
    fn index_changes_list_paths() {
        let a = Oid::from_str("1111111111111111111111111111111111111111").unwrap();
        let b = Oid::from_str("2222222222222222222222222222222222222222").unwrap();
        let before: IndexEntries = Some(BTreeMap::from([((b"x.txt".to_vec(), 0), (0o100644, a))]));
        let now: IndexEntries = Some(BTreeMap::from([
            ((b"x.txt".to_vec(), 0), (0o100644, b)),
            ((b"y.txt".to_vec(), 0), (0o100644, b)),
        ]));
        let (before, now) = (IndexContent::Entries(before), IndexContent::Entries(now));
        let text = describe_index_change(&before, &now).unwrap();
        assert!(text.contains("x.txt, y.txt"), "{text}");
        assert_eq!(describe_index_change(&now, &now), None);
        let digest = IndexContent::Digest(vec![1, 2, 3]);
        assert!(describe_index_change(&digest, &now).is_some());
    }
}
