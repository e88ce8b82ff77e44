//! The engine's look at the workspace over a run: the snapshots it takes (round start and
//! end, and around each call of a tool that can write anything), what it says when one
//! cannot see everything, and whose changes it finds.
//!
//! A snapshot that fails is a `warning` naming the moment, and a round whose diff could not be
//! taken says so; it is never reported as a round that changed nothing without a word.
//! Directories nested too deep for git's scan are named once per run. The files a file tool
//! names and the paths that change while a command runs are the worker's
//! (`workspace::attribution`); a change found in a round's diff or between rounds that no tool
//! made is "changed outside the run", marked in the round's `workspace_changed` files and
//! named in a `warning`.

use std::collections::BTreeSet;

use super::record::Recorder;
use crate::protocol::event::Event;
use crate::workspace::{Attribution, DiffModel, Hidden, Listing, Snapshot, Workspace};

/// Most paths one warning names; the rest are counted.
const NAMED: usize = 10;

/// What the engine knows about the run's changes so far.
#[derive(Debug, Default)]
pub(super) struct RunChanges {
    worker: Attribution,
    /// Too-deep directories already named in a warning.
    unseen_named: BTreeSet<String>,
    /// The last round's closing snapshot: what changes before the next round starts is not
    /// the worker's.
    last_end: Option<Snapshot>,
    /// The round whose tool-call snapshots already failed with a warning.
    tool_failure_named: Option<u32>,
    /// Every file at the round's start, for the changes no snapshot shows (`hidden`).
    round_listing: Option<Listing>,
    /// The last round's closing listing: the next round starts from it (one walk a round).
    last_listing: Option<Listing>,
    /// The first round's opening snapshot: where this run's changes are counted from.
    run_start: Option<Snapshot>,
}

/// `a, b, 3 more`: at most `NAMED` paths, the rest counted.
fn name_paths(paths: &[&str]) -> String {
    let mut named: Vec<String> = paths.iter().take(NAMED).map(|p| (*p).to_string()).collect();
    if paths.len() > named.len() {
        named.push(format!("{} more", paths.len() - named.len()));
    }
    named.join(", ")
}

impl RunChanges {
    /// The paths the worker's tools and commands have changed so far in this run.
    pub(super) fn worker_paths(&self) -> &BTreeSet<String> {
        self.worker.paths()
    }

    /// A snapshot, with a warning for what it could not see or why it failed.
    fn snapshot(
        &mut self,
        ws: &Workspace,
        rec: &mut Recorder,
        round: u32,
        when: &str,
    ) -> Option<Snapshot> {
        match ws.snapshot_seen() {
            Ok((snapshot, unseen)) => {
                let new: Vec<String> = unseen
                    .into_iter()
                    .filter(|dir| self.unseen_named.insert(dir.clone()))
                    .collect();
                if !new.is_empty() {
                    let dirs: Vec<&str> = new.iter().map(String::as_str).collect();
                    rec.emit(Event::Warning {
                        message: format!(
                            "round {round}: {} nested deeper than git's scan goes (100 directories): changes inside are left out of diffs and commits",
                            name_paths(&dirs)
                        ),
                    });
                }
                Some(snapshot)
            }
            Err(e) => {
                tracing::error!("snapshot {when}: {e}");
                rec.emit(Event::Warning {
                    message: format!(
                        "round {round}: could not snapshot the workspace {when} ({e}); the changes made around then are not known"
                    ),
                });
                None
            }
        }
    }

    /// The round's opening snapshot; changes since the last round ended are named as made
    /// outside the run.
    pub(super) fn round_start(
        &mut self,
        ws: &Workspace,
        rec: &mut Recorder,
        round: u32,
    ) -> Option<Snapshot> {
        self.round_listing = Some(self.last_listing.take().unwrap_or_else(|| ws.listing()));
        let base = self.snapshot(ws, rec, round, "at the round's start")?;
        if self.run_start.is_none() {
            self.run_start = Some(base);
        }
        if let Some(end) = self.last_end.take() {
            let between: Vec<String> = ws
                .changed_paths(&end, &base)
                .unwrap_or_default()
                .into_iter()
                .filter(|p| ws.contains_path(p))
                .collect();
            if !between.is_empty() {
                let paths: Vec<&str> = between.iter().map(String::as_str).collect();
                rec.emit(Event::Warning {
                    message: format!(
                        "changed outside the run, between rounds {} and {round}: {} (shown, not committed by default)",
                        round.saturating_sub(1),
                        name_paths(&paths)
                    ),
                });
            }
        }
        Some(base)
    }

    /// What the run has changed from its first round's start to `now`, as a patch; `None`
    /// when nothing has (the first round) or the diff cannot be read.
    pub(super) fn run_patch(&self, ws: &Workspace, now: Option<Snapshot>) -> Option<String> {
        let (start, now) = (self.run_start?, now?);
        if start.tree == now.tree {
            return None;
        }
        let diff = ws.diff(&start, &now).ok()?;
        (!diff.patch.trim().is_empty()).then_some(diff.patch)
    }

    /// The snapshot before a tool call; pass it to `after_tool`.
    pub(super) fn before_tool(
        &mut self,
        ws: &Workspace,
        rec: &mut Recorder,
        round: u32,
    ) -> Option<Snapshot> {
        self.tool_snapshot(ws, rec, round)
    }

    /// Records what changed while the tool ran as the worker's; whether anything did.
    pub(super) fn after_tool(
        &mut self,
        ws: &Workspace,
        rec: &mut Recorder,
        round: u32,
        before: Option<Snapshot>,
    ) -> bool {
        let after = self.tool_snapshot(ws, rec, round);
        let (Some(before), Some(after)) = (before, after) else {
            // Without both snapshots nobody can say: count it as a change.
            return true;
        };
        match ws.changed_paths(&before, &after) {
            Ok(paths) => {
                let changed = !paths.is_empty();
                self.worker.add(paths);
                changed
            }
            Err(e) => {
                tracing::error!("changed paths: {e}");
                true
            }
        }
    }

    /// Records files a tool wrote (absolute paths) as the worker's.
    pub(super) fn wrote(&mut self, ws: &Workspace, files: &[std::path::PathBuf]) {
        self.worker
            .add(files.iter().filter_map(|f| ws.top_relative(f)));
    }

    /// A tool call's snapshot; a failure is named once per round.
    fn tool_snapshot(
        &mut self,
        ws: &Workspace,
        rec: &mut Recorder,
        round: u32,
    ) -> Option<Snapshot> {
        if self.tool_failure_named == Some(round) {
            return ws.snapshot().ok();
        }
        let snapshot = self.snapshot(ws, rec, round, "around a tool call");
        if snapshot.is_none() {
            self.tool_failure_named = Some(round);
        }
        snapshot
    }

    /// The round's diff (`None` when it could not be taken, which a warning says), with
    /// files no tool changed marked as outside the run and named in a warning.
    pub(super) fn round_end(
        &mut self,
        ws: &Workspace,
        rec: &mut Recorder,
        round: u32,
        base: Option<Snapshot>,
    ) -> Option<DiffModel> {
        let end = self.snapshot(ws, rec, round, "at the round's end");
        self.last_end = end;
        let listed = self.round_listing.take();
        let diff = match (base, end) {
            (Some(base), Some(end)) => ws.diff(&base, &end).map_err(|e| e.to_string()),
            _ => Err("a snapshot failed".to_string()),
        };
        let mut diff = match diff {
            Ok(diff) => diff,
            Err(e) => {
                rec.emit(Event::Warning {
                    message: format!(
                        "round {round}: its changes are not known ({e}); diff.patch and the counts of round_finished are empty because nothing could be compared, not because nothing changed"
                    ),
                });
                return None;
            }
        };
        self.worker.mark(&mut diff);
        if let Some(before) = listed {
            let after = ws.listing();
            let hidden = ws.compare(&before, &after, &diff.paths());
            self.last_listing = Some(after);
            warn_hidden(rec, round, &hidden);
            diff.hidden = hidden.changes;
            diff.new_repos = hidden.new_repos;
        }
        let outside = diff.outside_run();
        if !outside.is_empty() {
            rec.emit(Event::Warning {
                message: format!(
                    "changed outside the run during round {round} (not by the worker's tools or commands): {} (shown, not committed by default)",
                    name_paths(&outside)
                ),
            });
        }
        Some(diff)
    }
}

/// Warnings for what the round changed where git does not look (ignored paths, nested
/// repositories) and for a nested repository it created: none of it is in `diff.patch` or a
/// commit, and a nested `.git` can run commands when git is used inside it.
fn warn_hidden(rec: &mut Recorder, round: u32, hidden: &Hidden) {
    if !hidden.changes.is_empty() {
        let named: Vec<String> = hidden.changes.iter().map(|c| c.describe()).collect();
        let paths: Vec<&str> = named.iter().map(String::as_str).collect();
        rec.emit(Event::Warning {
            message: format!(
                "round {round} changed files git does not show (or too large to track), so they are in no diff.patch and no commit: {}",
                name_paths(&paths)
            ),
        });
    }
    for repo in &hidden.new_repos {
        rec.emit(Event::Warning {
            message: format!(
                "round {round} created a git repository at {repo}/.git: its config and hooks (core.fsmonitor, for one) run commands whenever git is used inside it; look at it before you do"
            ),
        });
    }
    if hidden.incomplete {
        rec.emit(Event::Warning {
            message: format!(
                "round {round}: the workspace has more than {} entries, so changes git does not show were only looked for among the first",
                crate::workspace::hidden::MAX_ENTRIES
            ),
        });
    }
}
