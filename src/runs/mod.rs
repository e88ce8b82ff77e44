//! Past runs: finding one by id, id prefix, `last` or directory among the data dir's runs,
//! and reading back what it left on disk.
//!
//! A run that ended has a final `run.json` (status, rounds, HEAD at its end) and a
//! `run_finished` event. A killed run has neither, so its facts come from `events.jsonl`: the
//! last `round_started`, the last `report_accepted`. A resumed run's `events.jsonl` holds
//! every part (each from its `run_started`); `run.json` is the latest part's. Nothing here writes, so a past run's
//! directory is never modified by reading it. `--resume` (`resume`) is built on this; so can
//! any listing of runs be.

pub mod commands;
pub mod history;
pub mod prune;
pub mod resume;
pub mod review;

use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::config::Dirs;
use crate::engine::run_info::RunInfo;
use crate::error::UsageError;
use crate::protocol::event::{Event, RunStatus, Stamped};
use crate::protocol::report::Report;

/// What `--resume` and friends may name instead of an id: the run started (or resumed, its
/// `run.json` being its latest part's) most recently.
pub const LAST: &str = "last";

/// Why a run could not be found or read.
#[derive(Debug, thiserror::Error)]
pub enum FindError {
    #[error("there are no runs in {0}")]
    NoRuns(PathBuf),
    #[error("no run '{wanted}' in {dir}: give a run id, an id prefix, `last` or a run directory")]
    NotFound { wanted: String, dir: PathBuf },
    #[error("run id prefix '{wanted}' matches {}: give more of the id", .candidates.join(", "))]
    Ambiguous {
        wanted: String,
        candidates: Vec<String>,
    },
    #[error("run directory {dir} has no readable run.json: {message}")]
    Unreadable { dir: PathBuf, message: String },
}

impl From<FindError> for UsageError {
    fn from(e: FindError) -> Self {
        UsageError::Invalid(e.to_string())
    }
}

/// `run.json` as the engine writes it: its own fields and the wiring's `RunInfo`.
#[derive(Debug, Clone, Deserialize)]
pub struct RunRecord {
    pub run_id: String,
    pub objective: String,
    pub max_rounds: u32,
    pub workspace: PathBuf,
    pub started_at: String,
    #[serde(default)]
    pub finished_at: Option<String>,
    /// `None` until the run ends (or forever, for a killed run).
    #[serde(default)]
    pub status: Option<RunStatus>,
    #[serde(default)]
    pub rounds_started: u32,
    /// HEAD when `run.json` was last written: at the run's end, or at its start if it was
    /// killed. Absent in runs from before it was recorded.
    #[serde(default)]
    pub head: Option<String>,
    #[serde(flatten)]
    pub info: RunInfo,
}

/// A past run as its directory shows it.
#[derive(Debug, Clone)]
pub struct PastRun {
    pub dir: PathBuf,
    pub record: RunRecord,
    /// How it ended; `None` when it never wrote an end (it was killed).
    pub status: Option<RunStatus>,
    /// The last round it started (0: none).
    pub last_round: u32,
    /// Its last valid report: the last one it accepted, else the one it was resumed with.
    pub last_valid: Option<Report>,
    /// The person's notes its rounds were given (its `note` events).
    pub notes_given: usize,
}

/// What `events.jsonl` says, for a run whose `run.json` may have no end.
#[derive(Debug, Default)]
struct EventFacts {
    last_round: u32,
    last_accepted: Option<Report>,
    finished: Option<(RunStatus, u32, Option<Report>)>,
    notes_given: usize,
}

fn read_events(path: &Path) -> EventFacts {
    let mut facts = EventFacts::default();
    let Ok(file) = std::fs::File::open(path) else {
        return facts;
    };
    for line in std::io::BufReader::new(file).lines() {
        let Ok(line) = line else { break };
        // Tokens are most of the log and say nothing here.
        if line.contains(r#""type":"token""#) {
            continue;
        }
        let Ok(stamped) = serde_json::from_str::<Stamped>(&line) else {
            continue;
        };
        match stamped.event {
            // A resumed part's start: the end of the part before is not the run's end.
            Event::RunStarted { .. } => facts.finished = None,
            Event::RoundStarted { round, .. } => facts.last_round = facts.last_round.max(round),
            Event::ReportAccepted { report, .. } => facts.last_accepted = Some(report),
            Event::Note { .. } => facts.notes_given += 1,
            Event::RunFinished {
                status,
                rounds_started,
                last_valid_report,
                ..
            } => facts.finished = Some((status, rounds_started, last_valid_report)),
            _ => {}
        }
    }
    facts
}

impl PastRun {
    /// Reads a run directory: `run.json` first, `events.jsonl` for what it lacks.
    pub fn load(dir: &Path) -> Result<Self, FindError> {
        let unreadable = |message: String| FindError::Unreadable {
            dir: dir.to_path_buf(),
            message,
        };
        let text = std::fs::read(dir.join("run.json")).map_err(|e| unreadable(e.to_string()))?;
        let record: RunRecord =
            serde_json::from_slice(&text).map_err(|e| unreadable(e.to_string()))?;
        let facts = read_events(&dir.join("events.jsonl"));
        let (finished_status, finished_rounds, finished_report) = match facts.finished {
            Some((status, rounds, report)) => (Some(status), rounds, report),
            None => (None, 0, None),
        };
        Ok(Self {
            dir: dir.to_path_buf(),
            status: record.status.or(finished_status),
            last_round: record
                .rounds_started
                .max(facts.last_round)
                .max(finished_rounds),
            last_valid: finished_report
                .or(facts.last_accepted)
                .or_else(|| record.info.resumed_report.clone()),
            notes_given: facts.notes_given,
            record,
        })
    }

    pub fn id(&self) -> &str {
        &self.record.run_id
    }

    /// Whether `--resume` has something to continue: the run did not end on a worker's
    /// complete or blocked (nor was it killed after a report that said so).
    pub fn can_go_on(&self) -> bool {
        match self.status {
            Some(status) => !status.is_worker_report(),
            None => self
                .last_valid
                .as_ref()
                .is_none_or(|r| r.status == crate::protocol::report::ReportStatus::Continue),
        }
    }

    /// How it ended, in a word: its status, or `killed`.
    pub fn ending(&self) -> &'static str {
        self.status.map_or("killed", RunStatus::as_str)
    }
}

/// The most recently started run under `runs_dir` that `--resume` can continue: it did not
/// end on a worker's report, and no later run went on from it.
pub fn newest_resumable(runs_dir: &Path) -> Option<PastRun> {
    let mut dirs: Vec<_> = run_dirs(runs_dir)
        .into_iter()
        .filter_map(|(_, dir)| Some((started_at(&dir)?, dir)))
        .collect();
    dirs.sort();
    let continued = continuations(runs_dir);
    dirs.into_iter()
        .rev()
        .filter_map(|(_, dir)| PastRun::load(&dir).ok())
        .find(|past| past.can_go_on() && !continued.contains_key(past.id()))
}

/// Which run went on from which, under `runs_dir`: the earlier run's id → the id of the run
/// `--resume` started from it. Read from each `run.json`'s `resumed_from`.
pub fn continuations(runs_dir: &Path) -> std::collections::BTreeMap<String, String> {
    #[derive(Deserialize)]
    struct From {
        run_id: String,
        #[serde(default)]
        resumed_from: Option<String>,
    }
    run_dirs(runs_dir)
        .into_iter()
        .filter_map(|(_, dir)| {
            let text = std::fs::read(dir.join("run.json")).ok()?;
            let from: From = serde_json::from_slice(&text).ok()?;
            Some((from.resumed_from?, from.run_id))
        })
        .collect()
}

/// Where runs go by default: `<data dir>/runs/<run id>`.
pub fn runs_dir(dirs: &Dirs) -> PathBuf {
    dirs.data.join("runs")
}

/// The run directories under `runs_dir` (those with a `run.json`), by name.
fn run_dirs(runs_dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(runs_dir) else {
        return Vec::new();
    };
    let mut dirs: Vec<(String, PathBuf)> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.join("run.json").is_file())
        .filter_map(|path| {
            let name = path.file_name()?.to_str()?.to_string();
            Some((name, path))
        })
        .collect();
    dirs.sort();
    dirs
}

/// When a run started, from its `run.json` alone.
fn started_at(dir: &Path) -> Option<chrono::DateTime<chrono::FixedOffset>> {
    #[derive(Deserialize)]
    struct Started {
        started_at: String,
    }
    let text = std::fs::read(dir.join("run.json")).ok()?;
    let started: Started = serde_json::from_slice(&text).ok()?;
    chrono::DateTime::parse_from_rfc3339(&started.started_at).ok()
}

/// Finds a run: `last` (the most recently started), a run id, a unique id prefix, or a run
/// directory (for a run started with `--run-dir`).
pub fn find(runs_dir: &Path, wanted: &str) -> Result<PathBuf, FindError> {
    let as_dir = Path::new(wanted);
    if wanted.contains(std::path::MAIN_SEPARATOR) && as_dir.join("run.json").is_file() {
        return Ok(as_dir.to_path_buf());
    }
    let dirs = run_dirs(runs_dir);
    if wanted == LAST {
        return dirs
            .into_iter()
            .filter_map(|(_, dir)| Some((started_at(&dir)?, dir)))
            .max()
            .map(|(_, dir)| dir)
            .ok_or_else(|| FindError::NoRuns(runs_dir.to_path_buf()));
    }
    if let Some((_, dir)) = dirs.iter().find(|(name, _)| name == wanted) {
        return Ok(dir.clone());
    }
    let mut matches: Vec<(String, PathBuf)> = dirs
        .into_iter()
        .filter(|(name, _)| !wanted.is_empty() && name.starts_with(wanted))
        .collect();
    match matches.len() {
        0 => Err(FindError::NotFound {
            wanted: wanted.to_string(),
            dir: runs_dir.to_path_buf(),
        }),
        1 => Ok(matches.remove(0).1),
        _ => Err(FindError::Ambiguous {
            wanted: wanted.to_string(),
            candidates: matches.into_iter().map(|(name, _)| name).collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_dir(runs: &Path, id: &str) {
        let dir = runs.join(id);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("run.json"), "{}").unwrap();
    }

    #[test]
    fn a_run_is_found_by_its_id_or_a_unique_prefix() {
        let tmp = tempfile::tempdir().unwrap();
        let runs = tmp.path();
        run_dir(runs, "20260102-000000-aaaa");
        run_dir(runs, "20260102-000000-aaaab");
        run_dir(runs, "20260103-000000-bbbb");
        std::fs::create_dir_all(runs.join("20260104-no-run-json")).unwrap();
        let found = |wanted: &str| find(runs, wanted).map(|d| d.file_name().unwrap().to_owned());
        // An exact id wins over the longer ids it is a prefix of.
        assert_eq!(
            found("20260102-000000-aaaa").unwrap(),
            "20260102-000000-aaaa"
        );
        assert_eq!(found("20260103").unwrap(), "20260103-000000-bbbb");
        assert!(matches!(
            found("20260102"),
            Err(FindError::Ambiguous { candidates, .. }) if candidates.len() == 2
        ));
        for missing in ["2027", "", "20260104"] {
            assert!(
                matches!(found(missing), Err(FindError::NotFound { .. })),
                "{missing}"
            );
        }
        assert!(matches!(
            find(&runs.join("none"), LAST),
            Err(FindError::NoRuns(_))
        ));
    }
}
