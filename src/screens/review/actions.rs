//! The review screen's keys: quit, commit the chosen files, revert a round, discard, choose
//! files and move through them, and open the views above the review (help, the run log, the
//! final report, a diff full screen). Each key is looked up in the review's sections of the
//! key table; a worktree run's own keys ([`super::worktree`]) go first.

use crossterm::event::KeyEvent;

use crate::screens::keys::{self, Action};
use crate::screens::model::{CommitState, DiffSource, Effect, Loadable, ReportEntry};
use crate::screens::state::State;
use crate::screens::views::commit::CommitEditor;
use crate::screens::views::diff::DiffView;
use crate::screens::views::discard::{DiscardQuestion, Lost};
use crate::screens::views::overlay::Overlay;
use crate::screens::views::report_detail::ReportDetail;
use crate::screens::views::revert::RevertQuestion;

/// The review screen's keys, once no view is open above it: a worktree run's own first,
/// then the review's.
pub fn on_key(state: &mut State, key: &KeyEvent) -> Vec<Effect> {
    if let Some(effects) = super::worktree::on_key(state, key) {
        return effects;
    }
    let exit = state.exit_code();
    if state.review.is_none() {
        return vec![Effect::Quit(exit)];
    }
    match keys::action(&[&keys::REVIEW, &keys::EVERYWHERE], key) {
        Some(Action::Quit | Action::Interrupt) => return vec![Effect::Quit(exit)],
        Some(Action::Back) => {
            state.notice =
                Some("the run is over: q quits (changes stay uncommitted), c commits".into());
        }
        Some(Action::Help) => state.open(Overlay::help()),
        Some(Action::RunLog) => state.open(Overlay::RunLog),
        Some(Action::FinalReport) => open_final_report(state),
        Some(Action::Commit) => ask_commit(state),
        Some(Action::SendBack) => state.open_send_back(),
        Some(Action::RevertRound) => return ask_revert(state),
        Some(Action::Discard) => ask_discard(state),
        Some(Action::Open) => open_diff(state),
        Some(action) => move_in_files(state, action),
        None => {}
    }
    Vec::new()
}

/// `r`: the last accepted report in full, or a notice that there is none.
fn open_final_report(state: &mut State) {
    let last = state
        .reports
        .iter()
        .rposition(|e| matches!(e, ReportEntry::Accepted { .. }));
    match last {
        Some(index) => state.open(Overlay::ReportDetail(ReportDetail::new(index))),
        None => state.notice = Some("no report was accepted in this run".into()),
    }
}

/// Enter: the selected file's diff full screen.
fn open_diff(state: &mut State) {
    let Some(review) = &state.review else {
        return;
    };
    if let Loadable::Ready(diff) = &review.diff {
        let view = DiffView {
            source: DiffSource::Review,
            diff: Loadable::Ready(diff.clone()),
            file: review.file,
            scroll: 0,
            only: Vec::new(),
        };
        state.open(Overlay::Diff(view));
    }
}

/// Space, the arrows and the page keys: choose the selected file or leave it out, select
/// another, scroll its diff.
fn move_in_files(state: &mut State, action: Action) {
    let page = usize::from(state.areas.review.diff.height.saturating_sub(3)).max(1);
    let Some(review) = &mut state.review else {
        return;
    };
    let files = match &review.diff {
        Loadable::Ready(diff) => diff.files.len(),
        _ => 0,
    };
    match action {
        Action::Toggle if matches!(review.commit, CommitState::Done(_)) => {
            state.notice = Some(
                "already committed: the files marked [ ] were left out (d discards them)".into(),
            );
        }
        Action::Toggle => {
            if let Loadable::Ready(diff) = &review.diff {
                if let Some(file) = diff.files.get(review.file) {
                    if !review.left_out.remove(&file.path) {
                        review.left_out.insert(file.path.clone());
                    }
                }
            }
        }
        Action::Up => {
            review.file = review.file.saturating_sub(1);
            review.diff_scroll = 0;
        }
        Action::Down => {
            review.file = (review.file + 1).min(files.saturating_sub(1));
            review.diff_scroll = 0;
        }
        Action::PageUp => review.diff_scroll = review.diff_scroll.saturating_sub(page),
        Action::PageDown => review.diff_scroll += page,
        _ => {}
    }
}

/// `c` at the review: the commit editor over the chosen files, or a notice saying why
/// there is nothing to commit yet.
fn ask_commit(state: &mut State) {
    let Some(review) = &state.review else {
        return;
    };
    let files = match &review.diff {
        Loadable::Ready(diff) => diff.files.len(),
        _ => 0,
    };
    // What a commit would take: the files not changed outside the run.
    let outside = match &review.diff {
        Loadable::Ready(diff) => diff.outside_run().len(),
        _ => 0,
    };
    match &review.commit {
        CommitState::Done(id) => state.notice = Some(format!("already committed as {id}")),
        CommitState::Committing => state.notice = Some("committing…".into()),
        _ if matches!(review.diff, Loadable::Loading) => {
            state.notice = Some("the run's changes are still being read".into())
        }
        _ if matches!(review.diff, Loadable::Failed(_)) => {
            state.notice = Some("cannot commit: the run's changes could not be read".into())
        }
        _ if review.chosen().is_empty() => {
            state.notice = Some(match &review.diff {
                Loadable::Ready(d) if !d.files.is_empty() && files == outside => {
                    "nothing to commit: every change was made outside the run (space \
                         chooses one to commit anyway)"
                        .into()
                }
                Loadable::Ready(d) if !d.files.is_empty() => {
                    "no file is chosen: space chooses the selected file".into()
                }
                Loadable::Ready(d) if !d.unseen.is_empty() => format!(
                "nothing to commit among the files that could be read; {} could not be looked into",
                d.unseen.join(", ")
            ),
                _ => "nothing to commit: the run changed no files".into(),
            })
        }
        _ => {
            // Only the files changed outside the run left out: the default, said as
            // such; any other choice is said in numbers.
            let default = match &review.diff {
                Loadable::Ready(d) => d
                    .files
                    .iter()
                    .all(|f| review.is_chosen(&f.path) != f.outside_run),
                _ => true,
            };
            let mut editor = CommitEditor::new(&state.commit_message()).leaving_out(outside > 0);
            if let Some(review) = state.review.as_ref().filter(|_| !default) {
                editor.note = Some(format!(
                    "Commits only the {} chosen of the {files} files this run changed; \
                         the others stay uncommitted. Edit the message:",
                    review.chosen().len()
                ));
            }
            state.open(Overlay::Commit(Box::new(editor)));
        }
    }
}

/// Opens the revert question over the rounds that changed files.
fn ask_revert(state: &mut State) -> Vec<Effect> {
    let busy = state.review.as_ref().is_some_and(|r| {
        matches!(r.diff, Loadable::Loading) || r.commit == CommitState::Committing
    });
    if busy {
        state.notice = Some("wait until the run's changes are read".into());
        return Vec::new();
    }
    let rounds: Vec<(u32, Vec<String>)> = state
        .changes
        .iter()
        .filter(|c| !c.files.is_empty())
        .map(|c| (c.round, c.files.iter().map(|f| f.path.clone()).collect()))
        .collect();
    if rounds.is_empty() {
        state.notice = Some("no round changed files: there is nothing to revert".into());
    } else {
        state.open(Overlay::Revert(RevertQuestion::new(rounds)));
    }
    Vec::new()
}

/// Opens the discard question with the list of what would be lost.
fn ask_discard(state: &mut State) {
    let Some(review) = &state.review else {
        return;
    };
    let Loadable::Ready(diff) = &review.diff else {
        state.notice = Some("the run's changes are still being read".into());
        return;
    };
    // After a commit only the files left out of it can go; the committed ones stay.
    let committed = match &review.commit {
        CommitState::Committing => {
            state.notice = Some("committing…".into());
            return;
        }
        CommitState::Done(id) => Some(id.clone()),
        CommitState::NotYet | CommitState::Failed(_) => None,
    };
    let left: Vec<_> = diff
        .files
        .iter()
        .filter(|f| committed.is_none() || !review.is_chosen(&f.path))
        .collect();
    if left.is_empty() {
        state.notice = Some(match committed {
            Some(id) => format!("nothing left to discard: every file was committed as {id}"),
            None => "nothing to discard: the work tree is as the run found it".into(),
        });
        return;
    }
    let files = left
        .into_iter()
        .map(|f| Lost {
            letter: f.status.letter(),
            path: f.path.clone(),
            outside: review.outside.contains(&f.path),
        })
        .collect();
    let more = diff.note.clone();
    state.open(Overlay::Discard(DiscardQuestion { files, more }));
}
