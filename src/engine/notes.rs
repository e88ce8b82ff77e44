//! The person's notes to the next round: what they are allowed to be, where they wait, and
//! how they reach a round.
//!
//! A note is the supervisor's words, never the worker's: it is given to the next round's
//! child after the fixed prompt (so the prefix cache still holds), marked as the person's
//! with the time it was written, and recorded as a `note` event. It never becomes the
//! report, never counts as evidence, and the objective stays as it was.
//!
//! Notes wait in a [`NoteInbox`] that every front end shares with the engine: the TUI puts
//! what the person typed there, a resumed or sent-back run the note it was given, and
//! `--notes FILE` a line appended to that file (read at each round's start, one note a
//! line). The file lies outside the work tree, where the worker cannot write; it is opened
//! without following a symlink and must stay a regular file.
//!
//! Every note is written down the moment it comes in, in the run directory's
//! [`JOURNAL_FILE`], before any round is given it: a note sent while a round runs survives a
//! cancel or a crash, and `--resume` gives the next round the notes no round was given. The
//! run directory lies outside the work tree, and the sandbox lets the worker's commands write
//! only the work tree and their scratch directory, so the worker cannot write a note.

use std::collections::VecDeque;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::protocol::event::NoteSource;

/// Most bytes one note may carry.
pub const NOTE_MAX_BYTES: usize = 4 * 1024;

/// The file in the run directory where each note is written down as it comes in (JSON Lines:
/// `written_at`, `source`, `text`).
pub const JOURNAL_FILE: &str = "notes.jsonl";

/// Why a note is not sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoteRefusal {
    #[error("the note is empty: nothing was sent")]
    Empty,
    #[error("the note is {0} bytes, over the {NOTE_MAX_BYTES}-byte limit: shorten it")]
    TooLong(usize),
}

/// The note a person's text makes: trimmed, not empty, at most [`NOTE_MAX_BYTES`]. Control
/// characters are kept as written (the run log keeps them; screens sanitize).
pub fn check(text: &str) -> Result<String, NoteRefusal> {
    let text = text.trim();
    if text.is_empty() {
        return Err(NoteRefusal::Empty);
    }
    if text.len() > NOTE_MAX_BYTES {
        return Err(NoteRefusal::TooLong(text.len()));
    }
    Ok(text.to_string())
}

/// One note waiting for the next round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub text: String,
    /// When the person wrote it (RFC 3339, UTC, seconds).
    pub written_at: String,
    pub source: NoteSource,
}

/// One line of the [`JOURNAL_FILE`].
#[derive(serde::Serialize, serde::Deserialize)]
struct JournalLine {
    written_at: String,
    source: NoteSource,
    text: String,
}

impl Note {
    /// A note written now.
    pub fn now(text: String, source: NoteSource) -> Self {
        Self {
            text,
            written_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            source,
        }
    }
}

/// Refuses a `--notes FILE` that is a symlink, a FIFO, a directory or anything but a regular
/// file, or that lies inside the work tree `top` (the worker could write it); a file that is
/// not there yet is created empty, for a script to append to.
pub fn check_file(path: &Path, top: &Path) -> Result<PathBuf, String> {
    let refused = |why: String| format!("--notes {}: {why}", path.display());
    let absolute = std::path::absolute(path).map_err(|e| refused(e.to_string()))?;
    let parent = absolute
        .parent()
        .and_then(|p| p.canonicalize().ok())
        .ok_or_else(|| refused("its directory does not exist".into()))?;
    let canonical_top = top.canonicalize().unwrap_or_else(|_| top.to_path_buf());
    if parent.starts_with(&canonical_top) {
        return Err(refused(format!(
            "it is inside the work tree {}, where the worker could write notes: keep it outside",
            canonical_top.display()
        )));
    }
    let path = match absolute.file_name() {
        Some(name) => parent.join(name),
        None => return Err(refused("it names no file".into())),
    };
    match std::fs::symlink_metadata(&path) {
        Ok(meta) => refuse_kind(&meta.file_type()).map_err(refused)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .map_err(|e| refused(format!("cannot create it: {e}")))?;
        }
        Err(e) => return Err(refused(e.to_string())),
    }
    Ok(path)
}

fn refuse_kind(kind: &std::fs::FileType) -> Result<(), String> {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_symlink() {
        Err("it is a symlink: name the file itself".into())
    } else if kind.is_fifo() {
        Err("it is a FIFO: give a regular file that notes are appended to".into())
    } else if kind.is_dir() {
        Err("it is a directory: give a regular file".into())
    } else if !kind.is_file() {
        Err("it is not a regular file".into())
    } else {
        Ok(())
    }
}

/// The notes file a run reads, and how far it has read it.
#[derive(Debug)]
struct NotesFile {
    path: PathBuf,
    offset: u64,
}

impl NotesFile {
    /// The complete lines appended since the last read (a line still being written waits);
    /// a file that stopped being a regular file is an error, said once a read.
    fn read_new(&mut self) -> Result<Vec<String>, String> {
        use std::os::unix::fs::OpenOptionsExt;
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags((nix::fcntl::OFlag::O_NOFOLLOW | nix::fcntl::OFlag::O_NONBLOCK).bits())
            .open(&self.path)
            .map_err(|e| format!("cannot read the notes file {}: {e}", self.path.display()))?;
        let meta = file.metadata().map_err(|e| e.to_string())?;
        refuse_kind(&meta.file_type())
            .map_err(|why| format!("the notes file {}: {why}", self.path.display()))?;
        if meta.len() < self.offset {
            // Truncated: start again from its beginning.
            self.offset = 0;
        }
        file.seek(SeekFrom::Start(self.offset))
            .map_err(|e| e.to_string())?;
        let mut bytes = Vec::new();
        file.take(1024 * 1024)
            .read_to_end(&mut bytes)
            .map_err(|e| e.to_string())?;
        let Some(end) = bytes.iter().rposition(|b| *b == b'\n') else {
            return Ok(Vec::new());
        };
        self.offset += end as u64 + 1;
        Ok(String::from_utf8_lossy(&bytes[..end])
            .lines()
            .map(str::to_string)
            .collect())
    }
}

/// Where notes wait for the next round: shared between the front end that takes them and the
/// engine that gives them. Cloning shares the same inbox.
#[derive(Debug, Clone, Default)]
pub struct NoteInbox {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug, Default)]
struct Inner {
    waiting: VecDeque<Note>,
    file: Option<NotesFile>,
    /// Where each note is written down as it comes in ([`JOURNAL_FILE`]).
    journal: Option<PathBuf>,
}

/// What a round takes from the inbox: the notes, in the order they were written, and what
/// was refused on the way (a bad line of the notes file), for `warning` events.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Taken {
    pub notes: Vec<Note>,
    pub refused: Vec<String>,
}

impl NoteInbox {
    /// An inbox that also reads the lines appended to `path` (checked with [`check_file`]);
    /// what the file holds already when the run starts is not a note to this run.
    pub fn watching(path: PathBuf) -> Self {
        let offset = std::fs::metadata(&path).map_or(0, |m| m.len());
        let inbox = Self::default();
        if let Ok(mut inner) = inbox.inner.lock() {
            inner.file = Some(NotesFile { path, offset });
        }
        inbox
    }

    /// Writes each note down in `path` (the run directory's [`JOURNAL_FILE`]) as it comes in.
    pub fn journaled(self, path: PathBuf) -> Self {
        if let Ok(mut inner) = self.inner.lock() {
            inner.journal = Some(path);
        }
        self
    }

    /// Puts a checked note in the inbox for the next round, written down first.
    pub fn push(&self, note: Note) {
        if let Ok(mut inner) = self.inner.lock() {
            write_down(inner.journal.as_deref(), &note);
            inner.waiting.push_back(note);
        }
    }

    /// Puts a note the run's journal holds already (one a stopped part of the run was never
    /// given) in the inbox, without writing it down again.
    pub fn push_written(&self, note: Note) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.waiting.push_back(note);
        }
    }

    /// Everything waiting, oldest first: the inbox's own notes, then the file's new lines.
    pub fn take(&self) -> Taken {
        let mut taken = Taken::default();
        let Ok(mut guard) = self.inner.lock() else {
            return taken;
        };
        let inner = &mut *guard;
        taken.notes.extend(inner.waiting.drain(..));
        let Some(file) = inner.file.as_mut() else {
            return taken;
        };
        match file.read_new() {
            Ok(lines) => {
                for line in lines {
                    match check(&line) {
                        Ok(text) => {
                            let note = Note::now(text, NoteSource::File);
                            write_down(inner.journal.as_deref(), &note);
                            taken.notes.push(note);
                        }
                        Err(NoteRefusal::Empty) => {}
                        Err(refusal) => taken
                            .refused
                            .push(format!("a note in the notes file was not given: {refusal}")),
                    }
                }
            }
            Err(e) => taken.refused.push(e),
        }
        taken
    }
}

/// Appends `note` to the journal at `path`, if any (never through a symlink); a journal that
/// cannot be written is logged, and the note is still given.
fn write_down(path: Option<&Path>, note: &Note) {
    use std::os::unix::fs::OpenOptionsExt;
    let Some(path) = path else {
        return;
    };
    let line = JournalLine {
        written_at: note.written_at.clone(),
        source: note.source,
        text: note.text.clone(),
    };
    let written = serde_json::to_string(&line)
        .map_err(std::io::Error::from)
        .and_then(|mut line| {
            line.push('\n');
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
                .open(path)?
                .write_all(line.as_bytes())
        });
    if let Err(e) = written {
        tracing::warn!("cannot write the note down in {}: {e}", path.display());
    }
}

/// The notes written down in run directory `dir` that none of its rounds was given (the run
/// stopped first), oldest first: the journal's lines after the first `given` (the run's
/// `note` events; rounds are given notes in the order they were written down).
pub fn not_given(dir: &Path, given: usize) -> Vec<Note> {
    let Ok(journal) = std::fs::read_to_string(dir.join(JOURNAL_FILE)) else {
        return Vec::new();
    };
    journal
        .lines()
        .filter_map(|line| serde_json::from_str::<JournalLine>(line).ok())
        .skip(given)
        .map(|line| Note {
            text: line.text,
            written_at: line.written_at,
            source: line.source,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_is_trimmed_not_empty_and_bounded() {
        assert_eq!(check("  look at b.py \n"), Ok("look at b.py".into()));
        assert_eq!(check(" \n\t"), Err(NoteRefusal::Empty));
        let long = "x".repeat(NOTE_MAX_BYTES + 1);
        let refusal = check(&long).unwrap_err();
        assert_eq!(refusal, NoteRefusal::TooLong(NOTE_MAX_BYTES + 1));
        assert!(refusal.to_string().contains("4097 bytes"), "{refusal}");
        assert_eq!(check(&"é".repeat(2048)).map(|t| t.len()), Ok(4096));
        // Controls stay as written: the log keeps them, screens sanitize.
        assert_eq!(check("a\u{1b}[2Jb"), Ok("a\u{1b}[2Jb".into()));
    }

    #[test]
    fn the_inbox_gives_its_notes_then_the_files_new_complete_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes");
        std::fs::write(&path, "said before the run\n").unwrap();
        let inbox = NoteInbox::watching(path.clone());
        inbox.push(Note::now("typed".into(), NoteSource::Tui));
        let append = |text: &str| {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .unwrap();
            f.write_all(text.as_bytes()).unwrap();
        };
        append("one\n\ntwo\nhalf");
        let texts = |t: Taken| t.notes.into_iter().map(|n| n.text).collect::<Vec<_>>();
        assert_eq!(texts(inbox.take()), ["typed", "one", "two"]);
        assert_eq!(inbox.take(), Taken::default());
        append(&format!(" done\n{}\n", "y".repeat(5000)));
        let taken = inbox.take();
        assert_eq!(taken.refused.len(), 1, "{:?}", taken.refused);
        assert!(taken.refused[0].contains("5000 bytes"));
        assert_eq!(texts(taken), ["half done"]);
    }

    #[test]
    fn each_note_is_written_down_as_it_comes_and_the_ones_never_given_are_found() {
        let run = tempfile::tempdir().unwrap();
        let notes = tempfile::tempdir().unwrap();
        let file = notes.path().join("notes");
        std::fs::write(&file, "").unwrap();
        let inbox = NoteInbox::watching(file.clone()).journaled(run.path().join(JOURNAL_FILE));
        inbox.push(Note::now("typed \u{1b}[2J".into(), NoteSource::Tui));
        std::fs::write(&file, "from the file\n").unwrap();
        let given = inbox.take();
        assert_eq!(given.notes.len(), 2);
        // The round that took them was given two; a third note came after.
        inbox.push(Note::now("sent while round 2 ran".into(), NoteSource::Tui));

        let journal = std::fs::read_to_string(run.path().join(JOURNAL_FILE)).unwrap();
        let sources: Vec<serde_json::Value> = journal
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["source"].clone())
            .collect();
        assert_eq!(sources, ["tui", "file", "tui"]);
        assert!(
            journal.contains("typed \\u001b[2J"),
            "kept verbatim: {journal}"
        );

        let left = not_given(run.path(), given.notes.len());
        let texts: Vec<&str> = left.iter().map(|n| n.text.as_str()).collect();
        assert_eq!(texts, ["sent while round 2 ran"]);
        assert_eq!(left[0].source, NoteSource::Tui);
        assert!(
            not_given(notes.path(), 0).is_empty(),
            "no journal, nothing left"
        );
    }
}
