//! The subcommands about past runs, as `main` hands them over: `runs` (the listing, or
//! `--prune`), `show` and `replay`. Each answers on stdout (sanitized) or with one line on
//! stderr, and ends in an exit code; `history` builds the text, `prune` removes.

use std::path::Path;

use super::history::{list, out, running_ids, show, table, worktrees_note};
use super::prune::{never_started, prune, prune_never_started, prune_prefix_cache, PruneChoice};
use super::{find, runs_dir};
use crate::config::Dirs;
use crate::error::{say, ExitCode};

/// A question about past runs, as the command line asks it.
#[derive(Debug, Clone, PartialEq)]
pub enum Query {
    /// `runs`: every past run, newest first, as a table or (`json`) as JSON.
    List { json: bool },
    /// `runs --prune`: remove the runs `choice` names (asks in a terminal when it is empty).
    Prune(PruneChoice),
    /// `show RUN`: a run's summary.
    Show { run: String },
    /// `replay RUN`: a run's events played back at `speed`.
    Replay { run: String, speed: f64 },
}

/// Runs a subcommand about past runs and returns the exit code (0, or 2 for a run that
/// cannot be found, 1 for what cannot be written). `replay` plays a run directory at a speed
/// (the TUI's, handed down by the binary: the TUI sits above this layer).
pub fn run(query: Query, dirs: Dirs, replay: &dyn Fn(&Path, f64) -> ExitCode) -> ExitCode {
    let runs = runs_dir(&dirs);
    match query {
        Query::List { json } => list_runs(&dirs, json),
        Query::Prune(choice) => {
            let code = prune(&list(&dirs), &choice, &runs);
            if code == ExitCode::Complete {
                prune_never_started(&runs, &running_ids(&dirs.data));
                prune_prefix_cache(&dirs);
            }
            code
        }
        Query::Show { run } => match find(&runs, &run).and_then(|dir| show(&dir, &dirs)) {
            Ok(text) => {
                out(&text);
                ExitCode::Complete
            }
            Err(e) => {
                say(&e.to_string());
                ExitCode::Usage
            }
        },
        Query::Replay { run, speed } => match find(&runs, &run) {
            Ok(dir) => replay(&dir, speed),
            Err(e) => {
                say(&e.to_string());
                ExitCode::Usage
            }
        },
    }
}

/// `ralph-tui runs`: the table (with the worktrees left behind and the run directories that
/// hold only a log), or JSON.
fn list_runs(dirs: &Dirs, json: bool) -> ExitCode {
    let runs = runs_dir(dirs);
    let entries = list(dirs);
    if json {
        match serde_json::to_string_pretty(&entries) {
            Ok(text) => out(&format!("{text}\n")),
            Err(e) => {
                say(&e.to_string());
                return ExitCode::Internal;
            }
        }
        return ExitCode::Complete;
    }
    if entries.is_empty() {
        out(&format!("no runs in {}\n", runs.display()));
    } else {
        out(&table(&entries));
        out(&worktrees_note(&entries));
    }
    let left = never_started(&runs, &running_ids(&dirs.data)).len();
    if left > 0 {
        let (noun, verb) = if left == 1 {
            ("directory", "holds")
        } else {
            ("directories", "hold")
        };
        out(&format!(
            "\n{left} run {noun} {verb} only a log (no run ever started there): \
             `ralph-tui runs --prune --all-finished` removes them\n"
        ));
    }
    ExitCode::Complete
}
