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

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;

#[derive(Debug)]
pub struct RunLog {
    dir: PathBuf,
    events: File,
    transcript: Option<File>,
}

fn io_context(path: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// Writes `bytes` to `path` through a temporary file and a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).map_err(|e| io_context(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| io_context(path, e))
}

fn append_line(file: &mut File, line: &str) -> std::io::Result<()> {
    let mut buf = String::with_capacity(line.len() + 1);
    buf.push_str(line);
    buf.push('\n');
    file.write_all(buf.as_bytes())?;
    file.flush()
}

impl RunLog {
    /// Creates the run directory and opens `events.jsonl`.
    pub fn create(dir: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir).map_err(|e| io_context(dir, e))?;
        let path = dir.join("events.jsonl");
        let events = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| io_context(&path, e))?;
        Ok(Self {
            dir: dir.to_path_buf(),
            events,
            transcript: None,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn round_dir(&self, round: u32) -> PathBuf {
        self.dir.join("rounds").join(format!("{round:02}"))
    }

    pub fn write_run_json(&self, value: &Value) -> std::io::Result<()> {
        let text = serde_json::to_vec_pretty(value).map_err(std::io::Error::other)?;
        write_atomic(&self.dir.join("run.json"), &text)
    }

    pub fn append_event(&mut self, line: &str) -> std::io::Result<()> {
        append_line(&mut self.events, line)
    }

    /// Starts a round's directory with its prompt; later transcript lines go to this round.
    pub fn begin_round(&mut self, round: u32, prompt_json: &[u8]) -> std::io::Result<()> {
        let dir = self.round_dir(round);
        std::fs::create_dir_all(&dir).map_err(|e| io_context(&dir, e))?;
        write_atomic(&dir.join("prompt.json"), prompt_json)?;
        let path = dir.join("transcript.jsonl");
        self.transcript = Some(
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(|e| io_context(&path, e))?,
        );
        Ok(())
    }

    pub fn append_transcript(&mut self, value: &Value) -> std::io::Result<()> {
        match &mut self.transcript {
            Some(file) => append_line(file, &value.to_string()),
            None => Ok(()),
        }
    }

    pub fn write_round_file(&self, round: u32, name: &str, bytes: &[u8]) -> std::io::Result<()> {
        write_atomic(&self.round_dir(round).join(name), bytes)
    }

    pub fn end_round(&mut self) {
        self.transcript = None;
    }
}
