//! The review's actions for a worktree run (`--worktree`): apply the run's changes to the
//! person's own work tree, commit them on the current branch (the review's `c`), keep the
//! branch for later (quit), or discard the worktree and branch (asked twice). The keys are
//! their own section of the key table, live only when the run had a worktree.
//!
//! Once the worktree and branch are gone, nothing acts on them: after `X X` only quitting
//! (and looking) is left, and the review says what was removed; after a commit the review
//! goes on in the person's work tree, where the files left out can still be discarded.

use crossterm::event::KeyEvent;

use super::{Lent, ReviewScreen};
use crate::screens::hints::{self, HintSpec};
use crate::screens::keys::{self, Action};
use crate::screens::model::{Effect, Loadable, ReviewEffect, Setup, WorktreeAction, WorktreeGone};

impl ReviewScreen {
    /// What the review says was removed, once the worktree and branch are gone.
    pub fn gone_text(&self, setup: &Setup) -> Option<String> {
        let branch = setup.worktree.as_deref()?;
        match self.worktree.gone? {
        WorktreeGone::Removed => Some(format!(
            "the worktree and the branch {branch} were removed: nothing of the run is left to apply, commit, revert or discard"
        )),
        WorktreeGone::Committed => Some(format!(
            "the commit brought the run's changes into your work tree, then removed the worktree and the branch {branch}"
        )),
    }
    }

    /// The worktree keys, when the run had a worktree; `None` leaves the key to the review.
    pub(super) fn worktree_key(
        &mut self,
        key: &KeyEvent,
        lent: &mut Lent<'_>,
    ) -> Option<Vec<Effect>> {
        let setup = lent.shared.setup;
        let branch = setup.worktree.as_deref()?;
        // Any key but a second X takes back a first one.
        let armed = std::mem::take(&mut self.worktree.discard_armed);
        if let Some(gone) = self.worktree.gone {
            return self.gone_key(gone, key, lent);
        }
        match keys::action(&[&keys::WORKTREE], key)? {
            // Apply takes the tree the review diff was read from: never one a revert or discard
            // has just made stale.
            Action::ApplyWorktree if !self.review_ready() => {
                *lent.notice = Some(
                "the run's changes are not read yet (or could not be read): nothing is applied \
                 until the review shows them"
                    .into(),
            );
                Some(Vec::new())
            }
            Action::ApplyWorktree => {
                *lent.notice = Some("applying the run's changes to your work tree…".into());
                Some(vec![Effect::Review(ReviewEffect::Worktree(
                    WorktreeAction::Apply,
                ))])
            }
            Action::DiscardWorktree if armed => {
                *lent.notice = Some(format!("discarding the worktree and {branch}…"));
                Some(vec![Effect::Review(ReviewEffect::Worktree(
                    WorktreeAction::Discard,
                ))])
            }
            Action::DiscardWorktree => {
                self.worktree.discard_armed = true;
                *lent.notice = Some(format!(
                "X again removes the worktree and the branch {branch}: the run's work is lost unless applied or committed"
            ));
                Some(Vec::new())
            }
            _ => None,
        }
    }

    /// Whether the review's diff is read (not loading again after a revert or discard).
    fn review_ready(&self) -> bool {
        self.shown
            .as_ref()
            .is_some_and(|r| matches!(r.diff, Loadable::Ready(_)))
    }

    /// The keys once the worktree is gone: after `X X` only quit, help, the run log, the final
    /// report and moving through the list act; after a commit, the worktree's own keys say why
    /// they cannot.
    fn gone_key(
        &self,
        gone: WorktreeGone,
        key: &KeyEvent,
        lent: &mut Lent<'_>,
    ) -> Option<Vec<Effect>> {
        let action = keys::action(&[&keys::WORKTREE, &keys::REVIEW, &keys::EVERYWHERE], key)?;
        let looking = matches!(
            action,
            Action::Quit
                | Action::Interrupt
                | Action::Help
                | Action::RunLog
                | Action::FinalReport
                | Action::Up
                | Action::Down
                | Action::PageUp
                | Action::PageDown
                | Action::Open
        );
        let worktree_key = matches!(action, Action::ApplyWorktree | Action::DiscardWorktree);
        match gone {
            WorktreeGone::Removed if !looking => {
                let quit = hints::said(&hints::AT_REVIEW, &[(&[Action::Quit], "quit")]);
                *lent.notice = self
                    .gone_text(lent.shared.setup)
                    .map(|text| format!("{text} · {quit}"));
                Some(Vec::new())
            }
            WorktreeGone::Committed if worktree_key => {
                *lent.notice = Some(
                "already committed: the worktree and branch are gone, and the files you left out are in your work tree (d discards them, q keeps them)"
                    .into(),
            );
                Some(Vec::new())
            }
            _ => None,
        }
    }
}

/// A worktree run's keys on the review's status line.
const WORKTREE_KEYS: &HintSpec = &[
    (&[Action::ApplyWorktree], "apply to your tree"),
    (&[Action::Commit], "commit on your branch"),
    (&[Action::Quit], "keep the branch"),
    (&[Action::DiscardWorktree], "discard"),
];

/// The review's key hint for a worktree run (the branch itself is in the header).
pub fn hint(setup: &Setup) -> Option<String> {
    setup.worktree.as_ref()?;
    Some(hints::said(&hints::AT_REVIEW, WORKTREE_KEYS))
}
