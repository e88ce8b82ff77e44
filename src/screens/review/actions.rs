//! The review screen's keys: quit, commit the chosen files, revert a round, discard, choose
//! files and move through them, and open the views above the review (help, the run log, the
//! final report, a diff full screen). Each key is looked up in the review's sections of the
//! key table; a worktree run's own keys ([`super::worktree`]) go first.

use crossterm::event::KeyEvent;

use super::{Lent, ReviewScreen};
use crate::screens::keys::{self, Action};
use crate::screens::model::{CommitState, DiffSource, Effect, Loadable, ReportEntry, WorktreeGone};
use crate::screens::views::commit::CommitEditor;
use crate::screens::views::diff::DiffView;
use crate::screens::views::discard::{DiscardQuestion, Lost};
use crate::screens::views::note::NoteEditor;
use crate::screens::views::overlay::Overlay;
use crate::screens::views::report_detail::ReportDetail;
use crate::screens::views::revert::RevertQuestion;

impl ReviewScreen {
    /// The review screen's keys, once no view is open above it: a worktree run's own first,
    /// then the review's.
    pub(super) fn on_key(&mut self, key: &KeyEvent, lent: &mut Lent<'_>) -> Vec<Effect> {
        if let Some(effects) = self.worktree_key(key, lent) {
            return effects;
        }
        let exit = self.exit_code();
        if self.shown.is_none() {
            return vec![Effect::Quit(exit)];
        }
        match keys::action(&[&keys::REVIEW, &keys::EVERYWHERE], key) {
            Some(Action::Quit | Action::Interrupt) => return vec![Effect::Quit(exit)],
            Some(Action::Back) => {
                *lent.notice =
                    Some("the run is over: q quits (changes stay uncommitted), c commits".into());
            }
            Some(Action::Help) => lent.overlays.push(Overlay::help()),
            Some(Action::RunLog) => lent.overlays.push(Overlay::RunLog),
            Some(Action::FinalReport) => self.open_final_report(lent),
            Some(Action::Commit) => self.ask_commit(lent),
            Some(Action::SendBack) => self.open_send_back(lent),
            Some(Action::RevertRound) => return self.ask_revert(lent),
            Some(Action::Discard) => self.ask_discard(lent),
            Some(Action::Open) => self.open_diff(lent),
            Some(action) => self.move_in_files(action, lent),
            None => {}
        }
        Vec::new()
    }

    /// `r`: the last accepted report in full, or a notice that there is none.
    fn open_final_report(&self, lent: &mut Lent<'_>) {
        let last = lent
            .shared
            .reports
            .iter()
            .rposition(|e| matches!(e, ReportEntry::Accepted { .. }));
        match last {
            Some(index) => lent
                .overlays
                .push(Overlay::ReportDetail(ReportDetail::new(index))),
            None => *lent.notice = Some("no report was accepted in this run".into()),
        }
    }

    /// Enter: the selected file's diff full screen.
    fn open_diff(&self, lent: &mut Lent<'_>) {
        let Some(review) = &self.shown else {
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
            lent.overlays.push(Overlay::Diff(view));
        }
    }

    /// Space, the arrows and the page keys: choose the selected file or leave it out, select
    /// another, scroll its diff.
    fn move_in_files(&mut self, action: Action, lent: &mut Lent<'_>) {
        let page = usize::from(self.areas.diff.height.saturating_sub(3)).max(1);
        let Some(review) = &mut self.shown else {
            return;
        };
        let files = match &review.diff {
            Loadable::Ready(diff) => diff.files.len(),
            _ => 0,
        };
        match action {
            Action::Toggle if matches!(review.commit, CommitState::Done(_)) => {
                *lent.notice = Some(
                    "already committed: the files marked [ ] were left out (d discards them)"
                        .into(),
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
    fn ask_commit(&self, lent: &mut Lent<'_>) {
        let Some(review) = &self.shown else {
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
            CommitState::Done(id) => *lent.notice = Some(format!("already committed as {id}")),
            CommitState::Committing => *lent.notice = Some("committing…".into()),
            _ if matches!(review.diff, Loadable::Loading) => {
                *lent.notice = Some("the run's changes are still being read".into())
            }
            _ if matches!(review.diff, Loadable::Failed(_)) => {
                *lent.notice = Some("cannot commit: the run's changes could not be read".into())
            }
            _ if review.chosen().is_empty() => {
                *lent.notice = Some(match &review.diff {
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
                let mut editor =
                    CommitEditor::new(&self.commit_message(&lent.shared)).leaving_out(outside > 0);
                if let Some(review) = self.shown.as_ref().filter(|_| !default) {
                    editor.note = Some(format!(
                        "Commits only the {} chosen of the {files} files this run changed; \
                         the others stay uncommitted. Edit the message:",
                        review.chosen().len()
                    ));
                }
                lent.overlays.push(Overlay::Commit(Box::new(editor)));
            }
        }
    }

    /// Opens the revert question over the rounds that changed files.
    fn ask_revert(&self, lent: &mut Lent<'_>) -> Vec<Effect> {
        let busy = self.shown.as_ref().is_some_and(|r| {
            matches!(r.diff, Loadable::Loading) || r.commit == CommitState::Committing
        });
        if busy {
            *lent.notice = Some("wait until the run's changes are read".into());
            return Vec::new();
        }
        let rounds: Vec<(u32, Vec<String>)> = lent
            .shared
            .changes
            .iter()
            .filter(|c| !c.files.is_empty())
            .map(|c| (c.round, c.files.iter().map(|f| f.path.clone()).collect()))
            .collect();
        if rounds.is_empty() {
            *lent.notice = Some("no round changed files: there is nothing to revert".into());
        } else {
            lent.overlays
                .push(Overlay::Revert(RevertQuestion::new(rounds)));
        }
        Vec::new()
    }

    /// Opens the discard question with the list of what would be lost.
    fn ask_discard(&self, lent: &mut Lent<'_>) {
        let Some(review) = &self.shown else {
            return;
        };
        let Loadable::Ready(diff) = &review.diff else {
            *lent.notice = Some("the run's changes are still being read".into());
            return;
        };
        // After a commit only the files left out of it can go; the committed ones stay.
        let committed = match &review.commit {
            CommitState::Committing => {
                *lent.notice = Some("committing…".into());
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
            *lent.notice = Some(match committed {
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
        lent.overlays
            .push(Overlay::Discard(DiscardQuestion { files, more }));
    }

    /// Why the reviewed run cannot be sent back now, if it cannot (`replay`: the screens
    /// show a replay).
    pub fn cannot_send_back(&self, replay: bool) -> Option<String> {
        let review = self.shown.as_ref()?;
        if replay {
            return Some("replay: read-only, it cannot be sent back".into());
        }
        if let Some(gone) = self.worktree.gone {
            let how = match gone {
                WorktreeGone::Removed => "was removed",
                WorktreeGone::Committed => "was removed when its changes were committed",
            };
            return Some(format!(
                "the run's worktree {how}: there is nothing left to send back to work"
            ));
        }
        if review.commit == CommitState::Committing {
            return Some("committing…".into());
        }
        (review.rounds_started >= crate::options::RoundCount::CEILING).then(|| {
            "the run has started 64 rounds, the most a run may have: it cannot go on".into()
        })
    }

    /// `b` at the review: the send-back editor, or why the run cannot go back to work.
    fn open_send_back(&self, lent: &mut Lent<'_>) {
        if let Some(why) = self.cannot_send_back(lent.shared.replay) {
            *lent.notice = Some(why);
            return;
        }
        let Some(review) = &self.shown else {
            return;
        };
        let editor = NoteEditor::sending_back(review.rounds_started, lent.shared.setup.max_rounds);
        lent.overlays.push(Overlay::Note(Box::new(editor)));
    }
}
