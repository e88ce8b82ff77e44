//! The review's actions for a worktree run (`--worktree`): apply the run's changes to the
//! person's own work tree, commit them on the current branch (the review's `c`), keep the
//! branch for later (quit), or discard the worktree and branch (asked twice). The keys are
//! their own section of the key table, live only when the run had a worktree.

use crossterm::event::KeyEvent;

use super::keys::{self, Action};
use super::model::{Effect, Setup, WorktreeAction};
use super::state::State;

/// The worktree keys, when the run had a worktree; `None` leaves the key to the review.
pub fn on_key(state: &mut State, key: &KeyEvent) -> Option<Vec<Effect>> {
    let branch = state.setup.worktree.clone()?;
    // Any key but a second X takes back a first one.
    let armed = std::mem::take(&mut state.worktree_discard_armed);
    match keys::action(&[&keys::WORKTREE], key)? {
        Action::ApplyWorktree => {
            state.notice = Some("applying the run's changes to your work tree…".into());
            Some(vec![Effect::Worktree(WorktreeAction::Apply)])
        }
        Action::DiscardWorktree if armed => {
            state.notice = Some(format!("discarding the worktree and {branch}…"));
            Some(vec![Effect::Worktree(WorktreeAction::Discard)])
        }
        Action::DiscardWorktree => {
            state.worktree_discard_armed = true;
            state.notice = Some(format!(
                "X again removes the worktree and the branch {branch}: the run's work is lost unless applied or committed"
            ));
            Some(Vec::new())
        }
        _ => None,
    }
}

/// The review's key hint for a worktree run (the branch itself is in the header).
pub fn hint(setup: &Setup) -> Option<String> {
    setup.worktree.as_ref()?;
    Some(
        "A apply to your tree · c commit on your branch · q keep the branch · X discard"
            .to_string(),
    )
}
