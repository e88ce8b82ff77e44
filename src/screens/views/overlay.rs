//! The views that open above a screen (help, the cancel question, a report, a tool call, a
//! diff, the commit and note editors, the run log), as one closed set: the state keeps a stack of them,
//! the top one takes the keys, and all of them are drawn bottom to top.

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use super::cancel::CancelQuestion;
use super::card::CardDetail;
use super::commit::CommitEditor;
use super::diff::DiffView;
use super::discard::DiscardQuestion;
use super::help::Help;
use super::note::NoteEditor;
use super::report_detail::ReportDetail;
use super::revert::RevertQuestion;
use super::runlog::RunLog;
use super::view::{Ctx, Outcome, View};

/// One open view.
#[derive(Debug, Clone)]
pub enum Overlay {
    Help(Help),
    ConfirmCancel,
    ReportDetail(ReportDetail),
    Card(Box<CardDetail>),
    Diff(DiffView),
    Commit(Box<CommitEditor>),
    Note(Box<NoteEditor>),
    RunLog,
    Revert(RevertQuestion),
    Discard(DiscardQuestion),
}

impl Overlay {
    pub fn help() -> Self {
        Self::Help(Help::default())
    }

    fn view(&self) -> &dyn View {
        match self {
            Self::Help(view) => view,
            Self::ConfirmCancel => &CancelQuestion,
            Self::ReportDetail(view) => view,
            Self::Card(view) => view.as_ref(),
            Self::Diff(view) => view,
            Self::Commit(view) => view.as_ref(),
            Self::Note(view) => view.as_ref(),
            Self::RunLog => &RunLog,
            Self::Revert(view) => view,
            Self::Discard(view) => view,
        }
    }

    fn view_mut(&mut self) -> Option<&mut dyn View> {
        match self {
            Self::Help(view) => Some(view),
            Self::ReportDetail(view) => Some(view),
            Self::Card(view) => Some(view.as_mut()),
            Self::Diff(view) => Some(view),
            Self::Commit(view) => Some(view.as_mut()),
            Self::Note(view) => Some(view.as_mut()),
            Self::Revert(view) => Some(view),
            Self::Discard(view) => Some(view),
            Self::ConfirmCancel | Self::RunLog => None,
        }
    }
}

impl View for Overlay {
    fn handle_key(&mut self, key: &KeyEvent, ctx: &Ctx) -> Outcome {
        match self {
            Self::ConfirmCancel => CancelQuestion.handle_key(key, ctx),
            Self::RunLog => RunLog.handle_key(key, ctx),
            other => match other.view_mut() {
                Some(view) => view.handle_key(key, ctx),
                None => Outcome::Close,
            },
        }
    }

    fn sync(&mut self, area: Rect, ctx: &Ctx) {
        if let Some(view) = self.view_mut() {
            view.sync(area, ctx);
        }
    }

    fn render(&self, ctx: &Ctx, area: Rect, buf: &mut Buffer) {
        self.view().render(ctx, area, buf);
    }
}
