//! Blobs of files too large to read into memory (over [`DIFF_MAX_BYTES`], up to
//! [`TRACK_MAX_BYTES`]): hashed as a stream, written (compressed, by libgit2, as a stream)
//! only when the object store does not have the blob yet, and remembered by the file's
//! identity, so that the snapshots a round takes (before and after every tool call) read a
//! large file that stays the same once, not each time.
//!
//! The identity is what `lstat` says (device, inode, size, modification and change times).
//! A remembered blob is used only while all of them are the same and the object is still in
//! the store. The change time cannot be set from user space and moves on every write, so a
//! blob is remembered only when the file's change time was at least [`SETTLED`] old before
//! it was read: a write after the read, even one within the file system's timestamp
//! granularity, then shows as a new change time.
//!
//! [`DIFF_MAX_BYTES`]: super::DIFF_MAX_BYTES
//! [`TRACK_MAX_BYTES`]: super::TRACK_MAX_BYTES

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use git2::{Oid, Repository};

/// How long before a read a file must have last changed for its blob to be remembered.
const SETTLED: Duration = Duration::from_secs(2);
/// Most files remembered; past it the memory starts over.
const MAX_REMEMBERED: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Identity {
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

/// (device, inode) → the identity a blob was read at, and the blob.
static REMEMBERED: Mutex<BTreeMap<(u64, u64), (Identity, Oid)>> = Mutex::new(BTreeMap::new());

fn identity(meta: &std::fs::Metadata) -> ((u64, u64), Identity) {
    (
        (meta.dev(), meta.ino()),
        Identity {
            len: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        },
    )
}

/// The blob of the regular file `full`, streamed into `repo`'s object store unless it is
/// remembered; `Ok(None)` when the file is gone. Apply no filter to such a file: its path
/// must have none (the snapshot checks).
pub(super) fn blob(repo: &Repository, full: &Path) -> Result<Option<Oid>, git2::Error> {
    let meta = match std::fs::symlink_metadata(full) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(git2::Error::from_str(&e.to_string())),
    };
    let (key, before) = identity(&meta);
    let remembered = REMEMBERED
        .lock()
        .ok()
        .and_then(|map| map.get(&key).copied());
    if let Some((seen, id)) = remembered {
        if seen == before && repo.odb()?.exists(id) {
            return Ok(Some(id));
        }
    }
    let started = SystemTime::now();
    // Hashing alone is cheap next to compressing; a blob the store has is not written again.
    let id = Oid::hash_file(git2::ObjectType::Blob, full)?;
    let id = if repo.odb()?.exists(id) {
        id
    } else {
        repo.blob_path(full)?
    };
    let settled = started
        .checked_sub(SETTLED)
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .is_some_and(|limit| {
            let changed = (before.ctime.0, before.ctime.1);
            i64::try_from(limit.as_secs()).is_ok_and(|secs| changed < (secs, 0))
        });
    let unchanged = std::fs::symlink_metadata(full).is_ok_and(|m| identity(&m) == (key, before));
    if settled && unchanged {
        if let Ok(mut map) = REMEMBERED.lock() {
            if map.len() >= MAX_REMEMBERED {
                map.clear();
            }
            map.insert(key, (before, id));
        }
    }
    Ok(Some(id))
}

/// Whether `full`'s blob is remembered now (for tests).
#[cfg(test)]
fn is_remembered(full: &Path) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(full) else {
        return false;
    };
    let (key, now) = identity(&meta);
    REMEMBERED
        .lock()
        .ok()
        .and_then(|map| map.get(&key).copied())
        .is_some_and(|(seen, _)| seen == now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_settled_file_is_hashed_once_and_a_rewrite_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let full = dir.path().join("big.bin");
        std::fs::write(&full, b"one").unwrap();
        // Just written: hashed, not remembered (a write in the same tick could follow).
        let first = blob(&repo, &full).unwrap().unwrap();
        assert!(!is_remembered(&full));
        assert_eq!(
            first,
            Oid::hash_object(git2::ObjectType::Blob, b"one").unwrap()
        );

        // Settled (its change time long past): remembered.
        let old = SystemTime::now() - Duration::from_secs(3600);
        let (key, mut seen) = identity(&std::fs::symlink_metadata(&full).unwrap());
        let secs = i64::try_from(old.duration_since(UNIX_EPOCH).unwrap().as_secs()).unwrap();
        seen.ctime = (secs, 0);
        let fake = Oid::hash_object(git2::ObjectType::Blob, b"remembered").unwrap();
        repo.odb()
            .unwrap()
            .write(git2::ObjectType::Blob, b"remembered")
            .unwrap();
        REMEMBERED.lock().unwrap().insert(key, (seen, fake));
        // A remembered identity that is not the file's now is not used.
        assert_eq!(blob(&repo, &full).unwrap(), Some(first));
        let (_, now) = identity(&std::fs::symlink_metadata(&full).unwrap());
        REMEMBERED.lock().unwrap().insert(key, (now, fake));
        assert_eq!(
            blob(&repo, &full).unwrap(),
            Some(fake),
            "used while unchanged"
        );

        // Rewritten: another identity, so hashed again (and, just written, not remembered).
        std::fs::write(&full, b"three").unwrap();
        let second = blob(&repo, &full).unwrap().unwrap();
        assert_eq!(
            second,
            Oid::hash_object(git2::ObjectType::Blob, b"three").unwrap()
        );
        assert!(!is_remembered(&full));

        std::fs::remove_file(&full).unwrap();
        assert_eq!(blob(&repo, &full).unwrap(), None);
    }
}
