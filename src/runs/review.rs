//! What the person did at a run's review, recorded beside its log: `review.jsonl` in the run
//! directory, one JSON object a line (`ts`, `action`, `detail`), appended as each action
//! succeeds. `events.jsonl` ends with `run_finished`, so the review's outcome (applied,
//! committed, reverted, discarded, removed, kept, sent back) lives here, and `ralph-tui show`
//! reads it.
//! Writing is best-effort: a review that cannot be recorded still happened.

use std::io::{BufRead, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The file, inside the run directory.
pub const FILE: &str = "review.jsonl";

/// One action taken at the review.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewAction {
    pub ts: String,
    /// `applied`, `committed`, `reverted`, `discarded`, `removed`, `kept` or `sent back`.
    pub action: String,
    /// What it did, in words (`3 file(s) to the work tree`, `abc1234567 on main`).
    pub detail: String,
}

/// Appends one action to the run's review record.
pub fn record(run_dir: &Path, action: &str, detail: &str) {
    let line = ReviewAction {
        ts: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        action: action.to_string(),
        detail: detail.to_string(),
    };
    let Ok(text) = serde_json::to_string(&line) else {
        return;
    };
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(run_dir.join(FILE))
        .and_then(|mut file| writeln!(file, "{text}"));
    if let Err(e) = written {
        tracing::warn!("cannot record the review's {action}: {e}");
    }
}

/// The run's review actions, oldest first (none when it was never reviewed).
pub fn read(run_dir: &Path) -> Vec<ReviewAction> {
    let Ok(file) = std::fs::File::open(run_dir.join(FILE)) else {
        return Vec::new();
    };
    std::io::BufReader::new(file)
        .lines()
        .map_while(Result::ok)
        .filter_map(|line| serde_json::from_str(&line).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_are_read_back_in_order() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read(dir.path()).is_empty());
        record(dir.path(), "applied", "2 file(s) to the work tree");
        record(dir.path(), "committed", "abc1234567 on main");
        let actions: Vec<(String, String)> = read(dir.path())
            .into_iter()
            .map(|a| (a.action, a.detail))
            .collect();
        assert_eq!(
            actions,
            vec![
                ("applied".into(), "2 file(s) to the work tree".into()),
                ("committed".into(), "abc1234567 on main".into()),
            ]
        );
    }
}
