//! The run log: everything a run did, on disk, as it happens.
//!
//! ```text
//! run.json                      settings, model + sha256, start/end, final status
//! events.jsonl                  every event, one line each, written whole and flushed
//! rounds/NN/prompt.json         exactly what the fresh child was given
//! rounds/NN/transcript.jsonl    every message of the round
//! rounds/NN/report.json         the accepted report
//! rounds/NN/diff.patch          the workspace change made during the round
//! ```
//! Each line goes out in one `write` of the whole line, so a `kill -9` leaves every written
//! line parseable; `run.json` is replaced atomically.
//!
//! A log that cannot be written (full disk, file size limit, I/O error) is a run that cannot
//! be trusted: the first failed write puts back the file's last good length (so no torn line
//! stays), records the failure, cancels the run through the token given to
//! [`RunLog::stop_run_on_failure`], and every later write is skipped. The caller reads
//! [`RunLog::failure`] after the run and exits non-zero with that one message.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// The first write failure of a run log, shared with whoever reports the run's end.
pub type Failure = Arc<OnceLock<String>>;

/// An append-only file of whole lines and its last good length.
#[derive(Debug)]
struct LineFile {
    file: File,
    path: PathBuf,
    len: u64,
}

impl LineFile {
    fn open(path: PathBuf, create_new: bool) -> std::io::Result<Self> {
        let file = OpenOptions::new()
            .create(!create_new)
            .create_new(create_new)
            .append(true)
            .open(&path)
            .map_err(|e| io_context(&path, e))?;
        let len = file.metadata().map_err(|e| io_context(&path, e))?.len();
        Ok(Self { file, path, len })
    }

    /// Writes `line` and a newline whole, or puts the file back as it was.
    fn append(&mut self, line: &str) -> std::io::Result<()> {
        let mut buf = String::with_capacity(line.len() + 1);
        buf.push_str(line);
        buf.push('\n');
        match self
            .file
            .write_all(buf.as_bytes())
            .and_then(|()| self.file.flush())
        {
            Ok(()) => {
                self.len += buf.len() as u64;
                Ok(())
            }
            Err(e) => {
                let _ = self.file.set_len(self.len);
                Err(io_context(&self.path, e))
            }
        }
    }
}

#[derive(Debug)]
pub struct RunLog {
    dir: PathBuf,
    events: LineFile,
    transcript: Option<LineFile>,
    failure: Failure,
    on_failure: Option<CancellationToken>,
}

fn io_context(path: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// The file in a round's directory naming the tree (a git object id) the round started from,
/// so a viewer can show the round's own diff while it runs.
pub const BASE_TREE: &str = "base.tree";

/// The tree round `round` started from, as its directory in `run_dir` names it.
pub fn round_base(run_dir: &Path, round: u32) -> Option<git2::Oid> {
    let path = run_dir
        .join("rounds")
        .join(format!("{round:02}"))
        .join(BASE_TREE);
    let text = std::fs::read_to_string(path).ok()?;
    git2::Oid::from_str(text.trim()).ok()
}

/// The tree the first round of `run_dir` started from.
pub fn first_round_base(run_dir: &Path) -> Option<git2::Oid> {
    let first = std::fs::read_dir(run_dir.join("rounds"))
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .min()?;
    round_base(run_dir, first)
}

/// Writes `bytes` to `path` through a temporary file and a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    if let Err(e) = std::fs::write(&tmp, bytes) {
        let _ = std::fs::remove_file(&tmp);
        return Err(io_context(&tmp, e));
    }
    std::fs::rename(&tmp, path).map_err(|e| io_context(path, e))
}

impl RunLog {
    /// Creates the run directory and a new `events.jsonl` in it (an existing one is an error:
    /// a run never appends to another run's log).
    pub fn create(dir: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir).map_err(|e| io_context(dir, e))?;
        let events = LineFile::open(dir.join("events.jsonl"), true)?;
        Ok(Self::writing(dir, events))
    }

    /// Opens a stopped run's directory to go on in (`--resume`): its `events.jsonl` gets the
    /// new part's events after the old ones. A log that is not there (the old part was
    /// killed before its first event) is started.
    pub fn reopen(dir: &Path) -> std::io::Result<Self> {
        let events = LineFile::open(dir.join("events.jsonl"), false)?;
        Ok(Self::writing(dir, events))
    }

    /// The log of `dir`, its events going to `events`, nothing failed yet.
    fn writing(dir: &Path, events: LineFile) -> Self {
        Self {
            dir: dir.to_path_buf(),
            events,
            transcript: None,
            failure: Failure::default(),
            on_failure: None,
        }
    }

    /// Cancels `cancel` at the first write that fails.
    pub fn stop_run_on_failure(&mut self, cancel: CancellationToken) {
        self.on_failure = Some(cancel);
    }

    /// The first write failure, filled in when it happens.
    pub fn failure(&self) -> Failure {
        Arc::clone(&self.failure)
    }

    fn failed(&self) -> bool {
        self.failure.get().is_some()
    }

    /// Records the first failure and stops the run; later writes are skipped.
    fn check(&self, result: std::io::Result<()>) -> std::io::Result<()> {
        if let Err(e) = &result {
            if self.failure.set(e.to_string()).is_ok() {
                if let Some(cancel) = &self.on_failure {
                    cancel.cancel();
                }
            }
        }
        result
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn round_dir(&self, round: u32) -> PathBuf {
        self.dir.join("rounds").join(format!("{round:02}"))
    }

    pub fn write_run_json(&self, value: &Value) -> std::io::Result<()> {
        if self.failed() {
            return Ok(());
        }
        let text = serde_json::to_vec_pretty(value).map_err(std::io::Error::other)?;
        self.check(write_atomic(&self.dir.join("run.json"), &text))
    }

    pub fn append_event(&mut self, line: &str) -> std::io::Result<()> {
        if self.failed() {
            return Ok(());
        }
        let result = self.events.append(line);
        self.check(result)
    }

    /// Starts a round's directory with its prompt; later transcript lines go to this round.
    /// What a directory of that number held is removed first: only a resumed part meets
    /// one, left by a part killed as its round began (before `round_started`, which the
    /// resume counts from).
    pub fn begin_round(&mut self, round: u32, prompt_json: &[u8]) -> std::io::Result<()> {
        self.transcript = None;
        if self.failed() {
            return Ok(());
        }
        let dir = self.round_dir(round);
        if std::fs::symlink_metadata(&dir).is_ok() {
            let removed = std::fs::remove_dir_all(&dir).map_err(|e| io_context(&dir, e));
            self.check(removed)?;
        }
        let opened = std::fs::create_dir_all(&dir)
            .map_err(|e| io_context(&dir, e))
            .and_then(|()| write_atomic(&dir.join("prompt.json"), prompt_json))
            .and_then(|()| LineFile::open(dir.join("transcript.jsonl"), false));
        match opened {
            Ok(file) => {
                self.transcript = Some(file);
                Ok(())
            }
            Err(e) => self.check(Err(e)),
        }
    }

    pub fn append_transcript(&mut self, value: &Value) -> std::io::Result<()> {
        if self.failed() {
            return Ok(());
        }
        let result = match &mut self.transcript {
            Some(file) => file.append(&crate::protocol::event::json_line(value.to_string())),
            None => Ok(()),
        };
        self.check(result)
    }

    pub fn write_round_file(&self, round: u32, name: &str, bytes: &[u8]) -> std::io::Result<()> {
        if self.failed() {
            return Ok(());
        }
        self.check(write_atomic(&self.round_dir(round).join(name), bytes))
    }

    pub fn end_round(&mut self) {
        self.transcript = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_leaves_no_torn_line_and_stops_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = RunLog::create(&dir.path().join("run")).unwrap();
        let cancel = CancellationToken::new();
        log.stop_run_on_failure(cancel.clone());
        log.append_event("{\"a\":1}").unwrap();
        // A write that fails part-way: point the events file at a read-only handle.
        let path = dir.path().join("run").join("events.jsonl");
        log.events.file = File::open(&path).unwrap();
        assert!(log.append_event("{\"b\":2}").is_err());
        assert!(cancel.is_cancelled());
        assert!(log.failure().get().is_some());
        assert!(
            log.append_event("{\"c\":3}").is_ok(),
            "later writes are skipped"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"a\":1}\n");
        assert!(
            RunLog::create(&dir.path().join("run")).is_err(),
            "never appends to an old log"
        );
    }

    #[test]
    fn a_reopened_log_goes_on_after_the_old_lines_and_a_stale_round_is_started_over() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run");
        let mut log = RunLog::create(&run).unwrap();
        log.append_event("{\"part\":1}").unwrap();
        log.begin_round(1, b"{}").unwrap();
        log.append_transcript(&serde_json::json!({"m": 1})).unwrap();
        log.end_round();
        // A part killed as its round 2 began: the directory is there, no round_started.
        let stale = run.join("rounds").join("02");
        std::fs::create_dir_all(&stale).unwrap();
        std::fs::write(stale.join("transcript.jsonl"), "{\"old\":true}\n").unwrap();
        std::fs::write(stale.join("report.json"), "{}").unwrap();
        drop(log);

        let mut log = RunLog::reopen(&run).unwrap();
        log.append_event("{\"part\":2}").unwrap();
        log.begin_round(2, b"{\"round\":2}").unwrap();
        log.append_transcript(&serde_json::json!({"m": 2})).unwrap();
        assert_eq!(
            std::fs::read_to_string(run.join("events.jsonl")).unwrap(),
            "{\"part\":1}\n{\"part\":2}\n"
        );
        assert_eq!(
            std::fs::read_to_string(stale.join("transcript.jsonl")).unwrap(),
            "{\"m\":2}\n"
        );
        assert!(!stale.join("report.json").exists());
        assert_eq!(
            std::fs::read_to_string(run.join("rounds/01/transcript.jsonl")).unwrap(),
            "{\"m\":1}\n",
            "an earlier round is never touched"
        );
    }
}
