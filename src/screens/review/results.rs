//! What the review's actions did: the results of a commit, a revert, a discard and a worktree
//! run's apply or removal come back here as [`ReviewResult`]s, and the review screen says
//! them, reads its diff again where the work tree changed, and marks what a worktree run has
//! left. The actions themselves are asked here too ([`ReviewScreen::asked`], from the views
//! that confirm them), so a new review action lives in this folder, the key table, its
//! [`ReviewEffect`] and the event loop's call into the workspace.

use super::{Lent, ReviewScreen};
use crate::screens::model::{
    CommitState, DiffSource, Effect, Loadable, Review, ReviewEffect, ReviewResult, WorktreeAction,
    WorktreeGone,
};
use crate::screens::views::overlay::Overlay;
use crate::text;
use crate::workspace::DiffModel;

impl ReviewScreen {
    /// A review action a view asked for (the commit editor, the revert and discard
    /// questions): a commit's and a discard's view closes, a revert's stays open to show
    /// what it did.
    pub fn asked(&mut self, effect: ReviewEffect, lent: Lent<'_>) -> Vec<Effect> {
        match &effect {
            ReviewEffect::Commit(_) => {
                lent.overlays.pop();
                if let Some(review) = &mut self.shown {
                    review.commit = CommitState::Committing;
                }
            }
            ReviewEffect::Discard => {
                lent.overlays.pop();
                *lent.notice = Some("discarding the run's changes…".into());
            }
            ReviewEffect::RevertRound(_) | ReviewEffect::Worktree(_) => {}
        }
        vec![Effect::Review(effect)]
    }

    /// What a review action did: said on the review, the diff read again where it changed.
    pub fn result(&mut self, result: ReviewResult, lent: Lent<'_>) -> Vec<Effect> {
        match result {
            ReviewResult::Committed(result) => {
                self.committed(result, lent);
                Vec::new()
            }
            ReviewResult::Reverted(round, result) => self.reverted(round, result, lent),
            ReviewResult::Discarded(result) => self.discarded(result, lent),
            ReviewResult::WorktreeDone(action, result) => {
                self.worktree_done(action, result, lent);
                Vec::new()
            }
        }
    }

    /// The review's diff came: which files are chosen is settled before it is shown.
    pub fn diff_loaded(&mut self, loaded: &mut Loadable<DiffModel>) {
        if let Some(review) = &mut self.shown {
            if let Loadable::Ready(diff) = loaded {
                choose_files(review, diff);
            }
            review.diff = loaded.clone();
        }
    }

    /// A commit's result: the review says it, and a worktree run's worktree is gone once
    /// its changes are committed.
    fn committed(&mut self, result: Result<String, String>, lent: Lent<'_>) {
        if let Some(review) = &mut self.shown {
            review.commit = match result {
                Ok(id) => {
                    *lent.notice = Some(format!("committed {id}"));
                    if lent.shared.setup.worktree.is_some() {
                        self.worktree.gone = Some(WorktreeGone::Committed);
                    }
                    CommitState::Done(id)
                }
                Err(e) => {
                    *lent.notice = Some(format!("commit failed: {e}"));
                    CommitState::Failed(e)
                }
            };
        }
    }

    /// A discard's result, on the status line; the review's diff is read again.
    fn discarded(&mut self, result: Result<Vec<String>, String>, lent: Lent<'_>) -> Vec<Effect> {
        *lent.notice = Some(match &result {
            Ok(paths) => format!(
                "discarded the run's changes: {} back as the run found them",
                text::count(paths.len(), "file", "files")
            ),
            Err(e) => format!("discard failed: {e}"),
        });
        if let (Ok(paths), Some(review)) = (&result, self.shown.as_mut()) {
            review.emptied = Some(format!(
                "you discarded the run's changes to {}: {}",
                text::count(paths.len(), "file", "files"),
                paths.join(", ")
            ));
        }
        self.reload()
    }

    /// A worktree action's result, on the status line.
    fn worktree_done(
        &mut self,
        action: WorktreeAction,
        result: Result<String, String>,
        lent: Lent<'_>,
    ) {
        match (action, &result) {
            (WorktreeAction::Discard, Ok(_)) => {
                self.worktree.gone = Some(WorktreeGone::Removed);
                // Nothing of the run is left: no file is listed, so none is chosen.
                if let Some(review) = self.shown.as_mut() {
                    review.diff = Loadable::Ready(DiffModel::default());
                    review.file = 0;
                    review.diff_scroll = 0;
                }
            }
            (WorktreeAction::Apply, Ok(done)) if !done.starts_with("nothing") => {
                self.worktree.applied = true;
            }
            _ => {}
        }
        *lent.notice = Some(match result {
            Ok(done) => done,
            Err(e) => format!("not done: {e}"),
        });
    }

    /// A revert's result: shown in the revert question (or the status line when it was
    /// closed); the review's diff is read again when something changed.
    fn reverted(
        &mut self,
        round: u32,
        result: Result<Vec<String>, String>,
        lent: Lent<'_>,
    ) -> Vec<Effect> {
        let changed = result.is_ok();
        if let (true, Some(review)) = (changed, self.shown.as_mut()) {
            review.reverted.insert(round);
        }
        let mut shown = false;
        for overlay in lent.overlays.iter_mut() {
            if let Overlay::Revert(view) = overlay {
                view.finished(round, result.clone());
                shown = true;
            }
        }
        if !shown {
            *lent.notice = Some(match &result {
                Ok(paths) => format!("round {round} reverted: {}", paths.join(", ")),
                Err(e) => e.clone(),
            });
        }
        if changed {
            self.reload()
        } else {
            Vec::new()
        }
    }

    /// Reads the review's diff again (after a revert or a discard changed the work tree);
    /// until it comes, nothing can be committed from the old one.
    fn reload(&mut self) -> Vec<Effect> {
        match &mut self.shown {
            Some(review) => {
                review.diff = Loadable::Loading;
                vec![Effect::LoadDiff(DiffSource::Review)]
            }
            None => Vec::new(),
        }
    }
}

/// Files changed outside the run: marked in the diff (or in a round's list), listed after the
/// run's own, and left out of the commit when first seen; so is a gitlink (a separate
/// repository) and a file that holds the person's changes from before the run too. Which
/// files are chosen is kept as the files left out, so the choices survive a reload after a
/// revert or a discard.
fn choose_files(review: &mut Review, diff: &mut DiffModel) {
    for file in &mut diff.files {
        file.outside_run |= review.outside.contains(&file.path);
        if file.outside_run && review.outside.insert(file.path.clone()) {
            review.left_out.insert(file.path.clone());
        }
        if file.gitlink && review.gitlinks.insert(file.path.clone()) {
            review.left_out.insert(file.path.clone());
        }
        if file.yours_before && review.yours.insert(file.path.clone()) {
            review.left_out.insert(file.path.clone());
        }
    }
    diff.files.sort_by_key(|f| f.outside_run);
}
