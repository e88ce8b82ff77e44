//! Approval questions into the event stream: the approver the engine hands its tools records
//! each question as an `approval_requested` event (so `events.jsonl` says what was asked, and
//! of which request id) before the real approver puts it to the person.

use std::sync::Mutex;

use tokio_util::sync::CancellationToken;

use super::Recorder;
use crate::protocol::event::Event;
use crate::tools::approval::{ApprovalDecision, ApprovalRequest, Approver};

/// Wraps the run's approver for one tool call.
pub struct Announcing<'a> {
    pub inner: &'a dyn Approver,
    pub rec: Mutex<&'a mut Recorder>,
}

impl Approver for Announcing<'_> {
    fn decide(&self, request: &ApprovalRequest, cancel: &CancellationToken) -> ApprovalDecision {
        if let Some(decision) = self.settled() {
            return decision;
        }
        if cancel.is_cancelled() {
            return ApprovalDecision::Deny;
        }
        match self.rec.lock() {
            Ok(mut rec) => rec.emit(Event::ApprovalRequested {
                id: request.id,
                round: request.round,
                command: request.command.clone(),
                cwd: request.cwd.clone(),
            }),
            Err(_) => tracing::error!("the event recorder's lock is poisoned"),
        }
        self.inner.decide(request, cancel)
    }

    fn settled(&self) -> Option<ApprovalDecision> {
        self.inner.settled()
    }
}
