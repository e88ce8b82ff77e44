//! `ralph-tui runs --prune`: which past runs go (by age, by end, by id, or as the person
//! picks from the listing in a terminal), removing them with the worktrees and branches they
//! left, the run directories where no run ever started, and the prefix states on disk past
//! their bound. A run that is still going is never removed.

use std::collections::HashSet;
use std::io::{BufRead, IsTerminal};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::history::{out, table, Entry};
use super::{find, FindError, PastRun};
use crate::config::Dirs;
use crate::error::{say, ExitCode};

/// Which runs `runs --prune` removes when told without asking.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PruneChoice {
    pub all_finished: bool,
    pub older_than: Option<Duration>,
    pub ids: Vec<String>,
}

impl PruneChoice {
    fn is_empty(&self) -> bool {
        !self.all_finished && self.older_than.is_none() && self.ids.is_empty()
    }
}

/// The runs `choice` names (never a running one); a RUN that names none is an error.
pub fn chosen(
    entries: &[Entry],
    choice: &PruneChoice,
    runs: &Path,
) -> Result<Vec<Entry>, FindError> {
    let now = chrono::Utc::now();
    let mut named = HashSet::new();
    for wanted in &choice.ids {
        let dir = find(runs, wanted)?;
        named.insert(dir);
    }
    Ok(entries
        .iter()
        .filter(|e| e.outcome != "running")
        .filter(|e| {
            let old = choice.older_than.is_some_and(|age| {
                chrono::DateTime::parse_from_rfc3339(&e.started_at).is_ok_and(|t| {
                    (now - t.with_timezone(&chrono::Utc))
                        .to_std()
                        .is_ok_and(|d| d > age)
                })
            });
            let finished = choice.all_finished && e.outcome != "killed";
            old || finished || named.contains(&e.dir)
        })
        .cloned()
        .collect())
}

/// Parses the person's answer to "which runs?": numbers and ranges (`1 3-5`), `all`, or
/// nothing for none. Numbers count from 1 in the listing shown.
pub fn parse_picks(answer: &str, count: usize) -> Result<Vec<usize>, String> {
    let answer = answer.trim();
    if answer.eq_ignore_ascii_case("all") {
        return Ok((0..count).collect());
    }
    let mut picks = Vec::new();
    for part in answer.split(|c: char| c == ',' || c.is_whitespace()) {
        if part.is_empty() {
            continue;
        }
        let bad = || format!("'{part}' is not a number from 1 to {count} or a range like 2-4");
        let (from, to) = match part.split_once('-') {
            Some((a, b)) => (a.parse::<usize>(), b.parse::<usize>()),
            None => (part.parse::<usize>(), part.parse::<usize>()),
        };
        let (from, to) = (from.map_err(|_| bad())?, to.map_err(|_| bad())?);
        if from == 0 || to < from || to > count {
            return Err(bad());
        }
        picks.extend(from - 1..to);
    }
    picks.sort_unstable();
    picks.dedup();
    Ok(picks)
}

/// Removes the worktree and branch a run worked in (`--worktree`), if they are still there.
fn remove_worktree(e: &Entry) -> Result<(), String> {
    let Some(info) = PastRun::load(&e.dir)
        .ok()
        .and_then(|past| past.record.info.worktree)
    else {
        return Ok(());
    };
    if !info.is_left() {
        return Ok(());
    }
    info.discard().map_err(|error| {
        format!(
            "cannot remove the worktree {} and branch {}: {error}",
            info.path.display(),
            info.branch
        )
    })?;
    out(&format!(
        "removed the worktree and branch {}\n",
        info.branch
    ));
    Ok(())
}

fn remove(entries: &[Entry], runs: &Path) -> ExitCode {
    let mut code = ExitCode::Complete;
    for e in entries {
        // Only directories inside the runs dir are ever removed.
        if e.dir.parent() != Some(runs) {
            say(&format!(
                "{} is outside {}: not removed",
                e.dir.display(),
                runs.display()
            ));
            code = ExitCode::Usage;
            continue;
        }
        // The run stays (and stays listed) while its worktree cannot be removed.
        if let Err(error) = remove_worktree(e) {
            say(&error);
            code = ExitCode::Internal;
            continue;
        }
        match std::fs::remove_dir_all(&e.dir) {
            Ok(()) => out(&format!("removed {}\n", e.id)),
            Err(error) => {
                say(&format!("cannot remove {}: {error}", e.dir.display()));
                code = ExitCode::Internal;
            }
        }
    }
    code
}

/// Run directories of the data dir whose run never started (the person quit the objective
/// editor, or the process was killed there): no `run.json`, nothing in them but the log
/// file, and no live process holding them.
pub(super) fn never_started(runs: &Path, running: &HashSet<String>) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(runs) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|dir| dir.is_dir() && !dir.join("run.json").exists())
        .filter(|dir| {
            let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
            !name.is_some_and(|n| running.contains(&n))
        })
        .filter(|dir| {
            std::fs::read_dir(dir).is_ok_and(|mut files| {
                files.all(|f| f.is_ok_and(|f| f.file_name() == "ralph-tui.log"))
            })
        })
        .collect();
    out.sort();
    out
}

/// Removes the run directories whose run never started, saying how many went.
pub(super) fn prune_never_started(runs: &Path, running: &HashSet<String>) {
    let mut removed = 0;
    for dir in never_started(runs, running) {
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => removed += 1,
            Err(e) => say(&format!("cannot remove {}: {e}", dir.display())),
        }
    }
    if removed > 0 {
        out(&format!(
            "removed {removed} run director{} where no run ever started (only a log)\n",
            if removed == 1 { "y" } else { "ies" }
        ));
    }
}

pub(super) fn prune(entries: &[Entry], choice: &PruneChoice, runs: &Path) -> ExitCode {
    if !choice.is_empty() {
        return match chosen(entries, choice, runs) {
            Ok(gone) => remove(&gone, runs),
            Err(e) => {
                say(&e.to_string());
                ExitCode::Usage
            }
        };
    }
    if !std::io::stdin().is_terminal() {
        say("--prune needs a terminal to ask, or say which: --all-finished, --older-than AGE or RUN ids");
        return ExitCode::Usage;
    }
    let candidates: Vec<Entry> = entries
        .iter()
        .filter(|e| e.outcome != "running")
        .cloned()
        .collect();
    if candidates.is_empty() {
        out("no runs to remove\n");
        return ExitCode::Complete;
    }
    let mut listing = String::new();
    for (n, line) in table(&candidates).lines().enumerate() {
        let number = if n == 0 {
            "  #".into()
        } else {
            format!("{n:>3}")
        };
        listing.push_str(&format!("{number} {line}\n"));
    }
    out(&listing);
    out("runs to remove (numbers or ranges like 1 3-5, `all`; empty keeps them all): ");
    let mut answer = String::new();
    if std::io::stdin().lock().read_line(&mut answer).is_err() {
        return ExitCode::Usage;
    }
    match parse_picks(&answer, candidates.len()) {
        Ok(picks) if picks.is_empty() => {
            out("nothing removed\n");
            ExitCode::Complete
        }
        Ok(picks) => {
            let gone: Vec<Entry> = picks.iter().map(|&i| candidates[i].clone()).collect();
            remove(&gone, runs)
        }
        Err(e) => {
            say(&e);
            ExitCode::Usage
        }
    }
}

/// Bounds the prefix states kept on disk (`<cache>/prefix`) to the config file's
/// `prefix_cache_max_mib` (2 GiB without one), saying what went when something did.
pub(super) fn prune_prefix_cache(dirs: &Dirs) {
    let mib = crate::config::load_config(&dirs.config.join("config.toml"), false)
        .ok()
        .and_then(|options| options.prefix_cache_max_mib)
        .unwrap_or(crate::llm::prefix_store::DEFAULT_LIMIT_BYTES >> 20);
    let store =
        crate::llm::prefix_store::PrefixStore::in_cache(&dirs.cache, mib.saturating_mul(1 << 20));
    let pruned = store.prune();
    if pruned.removed > 0 {
        let mib = |bytes: u64| bytes as f64 / f64::from(1u32 << 20);
        out(&format!(
            "prefix cache: removed {} file(s), {:.1} MiB; {:.1} MiB kept (bound {} MiB)\n",
            pruned.removed,
            mib(pruned.freed),
            mib(pruned.kept),
            store.limit() >> 20
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, outcome: &str, age: chrono::Duration) -> Entry {
        Entry {
            id: id.into(),
            started_at: (chrono::Utc::now() - age).to_rfc3339(),
            repository: "/repo".into(),
            branch: None,
            objective: "x".into(),
            outcome: outcome.into(),
            rounds: 1,
            dir: PathBuf::from(id),
        }
    }

    #[test]
    fn pruning_picks_by_age_and_end_and_never_a_running_run() {
        let entries = [
            entry("old-complete", "complete", chrono::Duration::hours(3)),
            entry("old-killed", "killed", chrono::Duration::hours(3)),
            entry("old-running", "running", chrono::Duration::hours(3)),
            entry("new-cancelled", "cancelled", chrono::Duration::minutes(1)),
        ];
        let ids = |choice: PruneChoice| -> Vec<String> {
            chosen(&entries, &choice, Path::new("none"))
                .unwrap()
                .into_iter()
                .map(|e| e.id)
                .collect()
        };
        let old = PruneChoice {
            older_than: Some(Duration::from_secs(3600)),
            ..PruneChoice::default()
        };
        assert_eq!(ids(old), ["old-complete", "old-killed"]);
        let finished = PruneChoice {
            all_finished: true,
            ..PruneChoice::default()
        };
        assert_eq!(ids(finished), ["old-complete", "new-cancelled"]);
        assert!(ids(PruneChoice::default()).is_empty());
    }

    #[test]
    fn picks_are_numbers_ranges_or_all() {
        assert_eq!(parse_picks("1 3-4", 5), Ok(vec![0, 2, 3]));
        assert_eq!(parse_picks("all", 3), Ok(vec![0, 1, 2]));
        assert_eq!(parse_picks("  ", 3), Ok(vec![]));
        assert_eq!(parse_picks("2,2", 3), Ok(vec![1]));
        for bad in ["0", "4", "3-2", "x"] {
            assert!(parse_picks(bad, 3).is_err(), "{bad}");
        }
    }
}
