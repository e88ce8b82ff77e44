//! The review's side effects, off the loop: commit, apply, revert and discard exactly what
//! the review shows, the review's record of each (`review.jsonl`), and the line the person
//! reads after the UI is gone.
//!
//! What the review shows is the work tree the review diff was read from (`Driver::reviewed`),
//! limited to the chosen files; for a worktree run that is the worktree after any revert or
//! discard, never the branch's commits. Once a worktree run's commit moved the changes into
//! the person's work tree, the review goes on there (`Driver::moved`). Every failure reaches
//! the screen as one sentence (`failure`).

use std::collections::BTreeSet;
use std::path::PathBuf;

use super::{Done, Driver, Run};
use crate::protocol::event::RunStatus;
use crate::runs::review;
use crate::screens::model::{ReviewEffect, ReviewResult, WorktreeAction, WorktreeGone};
use crate::screens::review::resume_command;
use crate::screens::state::{CommitState, Loadable, Msg, Phase, State};
use crate::terminal::failure::{review_error, workspace_error};
use crate::text::count;
use crate::workspace::{DiffModel, DiscardPlan, Snapshot, Workspace, WorktreeInfo};

impl Driver {
    /// Performs a review action off the loop; what it did comes back as `Msg::Review`.
    pub(super) fn review_effect(&self, effect: ReviewEffect, state: &State) {
        match effect {
            ReviewEffect::Commit(message) => self.commit(message, chosen_paths(state)),
            ReviewEffect::RevertRound(round) => self.revert(round),
            ReviewEffect::Discard => self.discard(left_out_of_commit(state)),
            ReviewEffect::Worktree(action) => self.worktree(action, state),
        }
    }

    /// The review's workspace and the tree its changes are counted from: the run's, or the
    /// person's once a worktree run's commit moved the changes there.
    pub(super) fn review_place(&self, run: &Run) -> (PathBuf, Snapshot) {
        match &self.moved {
            Some((root, before)) => (root.clone(), *before),
            None => (
                self.prepared.settings.workspace.clone(),
                run.baseline.snapshot,
            ),
        }
    }

    pub(super) fn commit(&self, message: String, chosen: Option<Chosen>) {
        let (Some(run), Some(last)) = (&self.run, self.reviewed) else {
            let _ = self
                .done_tx
                .send(Done::Msg(Msg::Review(ReviewResult::Committed(Err(
                    "the run's changes are not known yet".into(),
                )))));
            return;
        };
        let done = self.done_tx.clone();
        let root = self.prepared.settings.workspace.clone();
        let baseline = run.baseline.clone();
        let shown = last.tree;
        let run_dir = run.run_dir.clone();
        let only = to_take(chosen);
        // A worktree run commits on the person's branch: apply the run's changes as the
        // review showed them (the worktree's tree, after any revert or discard), then commit
        // the chosen paths among them (the rest stays in the work tree).
        let worktree = self.prepared.worktree.clone();
        tokio::task::spawn_blocking(move || {
            let result = match worktree {
                Some(info) => info
                    .commit_shown(&message, shown, Some(&only))
                    .map(|committed| {
                        let root = info.user_repo.join(&info.prefix);
                        let _ = done.send(Done::Moved(root, committed.before, committed.after));
                        committed.outcome
                    })
                    .map_err(|e| review_error(e, "nothing was committed")),
                None => Workspace::open(&root)
                    .and_then(|ws| ws.commit_run_only(&baseline, &last, &message, &only))
                    .map_err(|e| workspace_error(e, "nothing was committed")),
            }
            .map(|outcome| {
                let id = outcome.commit.to_string();
                let short = id.get(..10).unwrap_or(&id).to_string();
                match outcome.branch {
                    Some(branch) => format!(
                        "{short} on {branch} ({} +{} −{})",
                        count(outcome.files_changed, "file", "files"),
                        outcome.insertions,
                        outcome.deletions
                    ),
                    None => format!("{short} (detached HEAD)"),
                }
            });
            if let Ok(commit) = &result {
                review::record(&run_dir, "committed", commit);
            }
            let _ = done.send(Done::Msg(Msg::Review(ReviewResult::Committed(result))));
        });
    }

    /// Reverts one round from its `diff.patch` in the run log, off the loop.
    pub(super) fn revert(&self, round: u32) {
        let Some(run) = &self.run else {
            let _ = self
                .done_tx
                .send(Done::Msg(Msg::Review(ReviewResult::Reverted(
                    round,
                    Err("no run to revert a round of".into()),
                ))));
            return;
        };
        let done = self.done_tx.clone();
        let (root, _) = self.review_place(run);
        let run_dir = run.run_dir.clone();
        let path = run
            .run_dir
            .join("rounds")
            .join(format!("{round:02}"))
            .join("diff.patch");
        tokio::task::spawn_blocking(move || {
            let result = std::fs::read_to_string(&path)
                .map_err(|e| format!("{}: {e}", path.display()))
                .and_then(|patch| {
                    Workspace::open(&root)
                        .and_then(|ws| ws.revert_round(round, &patch))
                        .map_err(|e| workspace_error(e, "nothing was changed"))
                });
            if let Ok(paths) = &result {
                let detail = format!("round {round}: {}", paths.join(", "));
                review::record(&run_dir, "reverted", &detail);
            }
            let _ = done.send(Done::Msg(Msg::Review(ReviewResult::Reverted(
                round, result,
            ))));
        });
    }

    /// Discards the run's changes (after a commit, `only` those left out of it): the plan is
    /// the work tree the review diff was read from, so a work tree that changed since is
    /// refused rather than discarded unseen.
    pub(super) fn discard(&self, only: Option<BTreeSet<String>>) {
        let (Some(run), Some(current)) = (&self.run, self.reviewed) else {
            let _ = self
                .done_tx
                .send(Done::Msg(Msg::Review(ReviewResult::Discarded(Err(
                    "the run's changes are not known yet".into(),
                )))));
            return;
        };
        let done = self.done_tx.clone();
        let (root, base) = self.review_place(run);
        let run_dir = run.run_dir.clone();
        tokio::task::spawn_blocking(move || {
            let plan = DiscardPlan {
                current,
                lost: DiffModel::default(),
            };
            let result = Workspace::open(&root)
                .and_then(|ws| ws.discard_to(&base, &plan, only.as_ref()))
                .map_err(|e| workspace_error(e, "nothing was discarded"));
            if let Ok(paths) = &result {
                let detail = format!(
                    "{}: {}",
                    count(paths.len(), "file", "files"),
                    paths.join(", ")
                );
                review::record(&run_dir, "discarded", &detail);
            }
            let _ = done.send(Done::Msg(Msg::Review(ReviewResult::Discarded(result))));
        });
    }
    /// Applies a worktree run's changes to the person's work tree, or discards its worktree.
    /// Apply takes exactly what the review shows: the worktree's tree the review diff was
    /// read from (after any revert or discard), limited to the chosen files.
    pub(super) fn worktree(&self, action: WorktreeAction, state: &State) {
        let Some(info) = self.prepared.worktree.clone() else {
            return;
        };
        let done = self.done_tx.clone();
        let shown = match (action, self.reviewed) {
            (WorktreeAction::Apply, None) => {
                let _ = done.send(Done::Msg(Msg::Review(ReviewResult::WorktreeDone(
                    action,
                    Err("the run's changes are still being read: press A again in a moment".into()),
                ))));
                return;
            }
            (_, reviewed) => reviewed,
        };
        let chosen = chosen_paths(state);
        let run_dir = self.run.as_ref().map(|run| run.run_dir.clone());
        tokio::task::spawn_blocking(move || {
            let result = match (action, shown) {
                (WorktreeAction::Apply, Some(shown)) => info
                    .apply_shown(shown.tree, Some(&to_take(chosen)))
                    .map(|applied| match applied.paths.len() {
                        0 => "nothing to apply: the review shows no chosen change".to_string(),
                        n => format!(
                            "applied {} to your work tree (index untouched); {} is kept",
                            count(n, "file", "files"),
                            info.branch
                        ),
                    })
                    .map_err(|e| review_error(e, "nothing was applied")),
                (WorktreeAction::Apply, None) => Err("the run's changes are not known".into()),
                (WorktreeAction::Discard, _) => info
                    .discard()
                    .map(|()| format!("removed the worktree and the branch {}", info.branch))
                    .map_err(|e| review_error(e, "the worktree may be partly removed")),
            };
            let changed = result.as_ref().is_ok_and(|d| !d.starts_with("nothing"));
            if let (Ok(detail), Some(run_dir), true) = (&result, &run_dir, changed) {
                let word = match action {
                    WorktreeAction::Apply => "applied",
                    WorktreeAction::Discard => "removed",
                };
                let detail = detail.strip_prefix(&format!("{word} ")).unwrap_or(detail);
                review::record(run_dir, word, detail);
            }
            let _ = done.send(Done::Msg(Msg::Review(ReviewResult::WorktreeDone(
                action, result,
            ))));
        });
    }
}

/// The review's choice: the chosen files' paths and every listed file's paths (a renamed
/// file's old path too).
pub(super) struct Chosen {
    chosen: BTreeSet<String>,
    listed: BTreeSet<String>,
}

/// What the review chose, `None` before there is a review.
fn chosen_paths(state: &State) -> Option<Chosen> {
    let review = state.review.shown.as_ref()?;
    let Loadable::Ready(diff) = &review.diff else {
        return None;
    };
    let mut out = Chosen {
        chosen: BTreeSet::new(),
        listed: BTreeSet::new(),
    };
    for file in &diff.files {
        let paths = std::iter::once(file.path.clone()).chain(file.old_path.clone());
        if review.is_chosen(&file.path) {
            out.chosen.extend(paths.clone());
        }
        out.listed.extend(paths);
    }
    Some(out)
}

/// The files the person chose among those listed, and nothing else: the review lists every
/// changed file, so a file the person could not see is never taken, and before the list is
/// read nothing is. What a commit commits and an apply applies.
fn to_take(chosen: Option<Chosen>) -> BTreeSet<String> {
    chosen.map(|c| c.chosen).unwrap_or_default()
}

/// What quitting the review keeps, for the review's record: a worktree run's branch while it
/// is there, else the run's changes still uncommitted in the work tree; `None` when nothing
/// is left (or there was no review).
pub(super) fn kept(state: &State, worktree: Option<&WorktreeInfo>) -> Option<String> {
    let review = state.review.shown.as_ref()?;
    match (worktree, state.review.worktree.gone) {
        (Some(info), None) => return Some(format!("the branch {} and its worktree", info.branch)),
        // `X X` removed the run's work: nothing of it is kept anywhere.
        (Some(_), Some(WorktreeGone::Removed)) => return None,
        _ => {}
    }
    let Loadable::Ready(diff) = &review.diff else {
        return None;
    };
    let uncommitted = match review.commit {
        CommitState::Done(_) => review.listed_left_out(),
        _ => diff.files.len(),
    };
    (uncommitted > 0).then(|| {
        format!(
            "{} uncommitted in the work tree",
            count(uncommitted, "file", "files")
        )
    })
}

/// After a commit, the listed files left out of it (what a discard may still take back);
/// `None` before a commit, when a discard takes all the run's changes.
fn left_out_of_commit(state: &State) -> Option<BTreeSet<String>> {
    let review = state.review.shown.as_ref()?;
    if !matches!(review.commit, CommitState::Done(_)) {
        return None;
    }
    let Chosen { chosen, listed } = chosen_paths(state)?;
    Some(listed.difference(&chosen).cloned().collect())
}

/// The line the person reads after the UI is gone; a worktree run's says what became of its
/// worktree and branch, and for a kept branch how to get its work later.
pub fn farewell(state: &State, worktree: Option<&WorktreeInfo>) -> String {
    match (&state.review.shown, state.phase) {
        (Some(review), _) => {
            let mut line = format!(
                "{} after {}: {}; run log: {}",
                review.status.as_str(),
                count(review.rounds_started as usize, "round", "rounds"),
                // The review's own words, `--verify`'s result included.
                review.status.describe_with(review.verification.as_ref()),
                state.setup.run_dir
            );
            if let CommitState::Done(id) = &review.commit {
                line.push_str(&format!("; committed {id}"));
            }
            // The command the review showed, for a run that can go on (a worktree run's
            // kept branch says it below).
            if let (None, Some(command)) =
                (worktree, resume_command(&state.review_shared(), review))
            {
                line.push_str(&format!("; continue it with `{command}`"));
            }
            if let Some(info) = worktree {
                let branch = &info.branch;
                line.push_str(&match state.review.worktree.gone {
                    Some(WorktreeGone::Removed) => {
                        format!("; the worktree and the branch {branch} were removed")
                    }
                    Some(WorktreeGone::Committed) => format!(
                        "; the commit brought the run's changes into your work tree and removed \
                         the worktree and the branch {branch}"
                    ),
                    // Applied: the changes are in the person's work tree already, and applying
                    // the branch again would apply them twice.
                    None if state.review.worktree.applied => format!(
                        "; the run's changes were applied to your work tree (index untouched); \
                         the branch {branch} is kept: remove it with `ralph-tui runs --prune {}`",
                        info.run_id()
                    ),
                    None => {
                        let resumable = matches!(
                            review.status,
                            RunStatus::Cancelled
                                | RunStatus::RoundFailed
                                | RunStatus::BudgetLimited
                                | RunStatus::Stalled
                        );
                        format!("; {}", info.kept_line(resumable))
                    }
                });
            }
            line
        }
        (None, Phase::Editing) => "no run was started".to_string(),
        (None, _) => format!(
            "quit before the run had finished stopping; run log: {}",
            state.setup.run_dir
        ),
    }
}
