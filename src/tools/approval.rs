//! The approval policy: may this command (or, in a read-only run, this write) go ahead?
//!
//! `--approval auto` runs everything, `deny` refuses every command, `ask` puts the question to
//! an [`Approver`] and blocks the round until it answers. "Always for this run" is remembered
//! by the approver itself ([`ApprovalBroker`] does), so one approver value belongs to exactly
//! one run.
//!
//! [`ApprovalBroker`] is the TUI's approver: it hands each question to a notifier (which turns
//! it into an event) and waits for [`ApprovalBroker::answer`], or for the run's cancellation,
//! which counts as a refusal. Each request carries its id from the moment it is made, so the
//! engine's `approval_requested` event and the broker's question name the same request.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use futures::channel::oneshot;
use futures::future::{select, Either};
use tokio_util::sync::CancellationToken;

use super::{ToolContext, ToolError};
use crate::protocol::policy::ApprovalPolicy;

/// What is being asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalRequest {
    /// Unique within the process; the id the answer is given by.
    pub id: u64,
    pub round: u32,
    /// The shell command, or a one-line description of a file change.
    pub command: String,
    pub cwd: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalDecision {
    Approve,
    Deny,
    /// Approve this and every later command of this run.
    AlwaysThisRun,
}

/// Answers approval requests; blocks until the person decides or `cancel` fires (then it
/// answers `Deny`).
pub trait Approver: Send + Sync {
    fn decide(&self, request: &ApprovalRequest, cancel: &CancellationToken) -> ApprovalDecision;

    /// The answer `decide` would give right now without putting the question to anyone
    /// (nobody to ask, or "always for this run" already given); `None` when it would ask.
    fn settled(&self) -> Option<ApprovalDecision> {
        None
    }
}

impl<A: Approver + ?Sized> Approver for std::sync::Arc<A> {
    fn decide(&self, request: &ApprovalRequest, cancel: &CancellationToken) -> ApprovalDecision {
        (**self).decide(request, cancel)
    }

    fn settled(&self) -> Option<ApprovalDecision> {
        (**self).settled()
    }
}

/// A fresh request id.
pub fn next_request_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::SeqCst)
}

/// An approver that says no to everything (headless runs never ask).
#[derive(Debug, Clone, Copy, Default)]
pub struct DenyAll;

impl Approver for DenyAll {
    fn decide(&self, _request: &ApprovalRequest, _cancel: &CancellationToken) -> ApprovalDecision {
        ApprovalDecision::Deny
    }

    fn settled(&self) -> Option<ApprovalDecision> {
        Some(ApprovalDecision::Deny)
    }
}

/// Applies `policy` to `request`: `Ok(())` means go ahead; the error is what the child reads.
pub fn authorize(
    policy: ApprovalPolicy,
    approver: &dyn Approver,
    request: &ApprovalRequest,
    cancel: &CancellationToken,
) -> Result<(), ToolError> {
    match policy {
        ApprovalPolicy::Auto => Ok(()),
        ApprovalPolicy::Deny => Err(ToolError::new(
            "denied by the approval policy (--approval deny): commands are not run in this run; work with the file tools, or report blocked if a command is essential",
        )),
        ApprovalPolicy::Ask => match approver.decide(request, cancel) {
            ApprovalDecision::Approve | ApprovalDecision::AlwaysThisRun => Ok(()),
            ApprovalDecision::Deny if cancel.is_cancelled() => {
                Err(ToolError::new("the run was cancelled before this was approved"))
            }
            ApprovalDecision::Deny => Err(ToolError::new(
                "denied by the person at the terminal; try another approach, or report blocked if this is essential",
            )),
        },
    }
}

/// [`authorize`] with the policy, approver and cancellation of a tool call.
pub fn authorize_in(ctx: &ToolContext<'_>, command: String) -> Result<(), ToolError> {
    let request = ApprovalRequest {
        id: next_request_id(),
        round: ctx.round,
        command,
        cwd: ctx.root.display().to_string(),
    };
    authorize(ctx.policy.approval, ctx.approver, &request, ctx.cancel)
}

/// Receives each question with the id to answer it by.
pub type Notifier = Box<dyn Fn(ApprovalRequest, u64) + Send + Sync>;

/// The TUI's approver: announces each request through a notifier and blocks until
/// [`answer`](Self::answer) is called with its id, or the cancellation token fires (a refusal).
/// Remembers `AlwaysThisRun` for the rest of the run; make one per run.
pub struct ApprovalBroker {
    notify: Notifier,
    pending: Mutex<HashMap<u64, oneshot::Sender<ApprovalDecision>>>,
    always: AtomicBool,
}

impl std::fmt::Debug for ApprovalBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalBroker")
            .field("pending", &self.pending_ids())
            .field("always", &self.always.load(Ordering::SeqCst))
            .finish_non_exhaustive()
    }
}

impl ApprovalBroker {
    pub fn new(notify: impl Fn(ApprovalRequest, u64) + Send + Sync + 'static) -> Self {
        Self {
            notify: Box::new(notify),
            pending: Mutex::new(HashMap::new()),
            always: AtomicBool::new(false),
        }
    }

    /// Answers request `id`. Returns false when no such request is waiting (already answered,
    /// cancelled, or never asked).
    pub fn answer(&self, id: u64, decision: ApprovalDecision) -> bool {
        let sender = match self.pending.lock() {
            Ok(mut pending) => pending.remove(&id),
            Err(_) => None,
        };
        sender.is_some_and(|s| s.send(decision).is_ok())
    }

    /// The ids of the requests waiting for an answer, oldest first.
    pub fn pending_ids(&self) -> Vec<u64> {
        let mut ids: Vec<u64> = self
            .pending
            .lock()
            .map(|p| p.keys().copied().collect())
            .unwrap_or_default();
        ids.sort_unstable();
        ids
    }

    /// Whether "always for this run" has been given.
    pub fn always_approved(&self) -> bool {
        self.always.load(Ordering::SeqCst)
    }

    fn forget(&self, id: u64) {
        if let Ok(mut pending) = self.pending.lock() {
            pending.remove(&id);
        }
    }
}

impl Approver for ApprovalBroker {
    fn settled(&self) -> Option<ApprovalDecision> {
        self.always
            .load(Ordering::SeqCst)
            .then_some(ApprovalDecision::AlwaysThisRun)
    }

    fn decide(&self, request: &ApprovalRequest, cancel: &CancellationToken) -> ApprovalDecision {
        if self.always.load(Ordering::SeqCst) {
            return ApprovalDecision::AlwaysThisRun;
        }
        if cancel.is_cancelled() {
            return ApprovalDecision::Deny;
        }
        let id = request.id;
        let (tx, rx) = oneshot::channel();
        match self.pending.lock() {
            Ok(mut pending) => {
                pending.insert(id, tx);
            }
            Err(_) => return ApprovalDecision::Deny,
        }
        (self.notify)(request.clone(), id);
        let outcome = futures::executor::block_on(select(Box::pin(cancel.cancelled()), rx));
        let decision = match outcome {
            Either::Right((Ok(decision), _)) => decision,
            // Cancelled, or the sender vanished: nobody approved it.
            Either::Left(_) | Either::Right((Err(_), _)) => ApprovalDecision::Deny,
        };
        self.forget(id);
        if decision == ApprovalDecision::AlwaysThisRun {
            self.always.store(true, Ordering::SeqCst);
        }
        decision
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::{mpsc, Arc};

    fn request(command: &str) -> ApprovalRequest {
        ApprovalRequest {
            id: next_request_id(),
            round: 1,
            command: command.into(),
            cwd: "/w".into(),
        }
    }

    /// A broker whose notifier forwards (request, id) to a channel.
    fn broker() -> (Arc<ApprovalBroker>, mpsc::Receiver<(ApprovalRequest, u64)>) {
        let (tx, rx) = mpsc::channel();
        let tx = Mutex::new(tx);
        let broker = ApprovalBroker::new(move |req, id| {
            let _ = tx.lock().unwrap().send((req, id));
        });
        (Arc::new(broker), rx)
    }

    #[test]
    fn broker_blocks_until_answered() {
        let (broker, asked) = broker();
        let cancel = CancellationToken::new();
        let b = Arc::clone(&broker);
        let c = cancel.clone();
        let worker = std::thread::spawn(move || b.decide(&request("make test"), &c));
        let (req, id) = asked.recv().unwrap();
        assert_eq!(req.command, "make test");
        assert_eq!(broker.pending_ids(), vec![id]);
        assert!(broker.answer(id, ApprovalDecision::Approve));
        assert_eq!(worker.join().unwrap(), ApprovalDecision::Approve);
        assert!(broker.pending_ids().is_empty());
        assert!(!broker.answer(id, ApprovalDecision::Deny), "answered twice");
    }

    #[test]
    fn broker_denies_on_cancel() {
        let (broker, asked) = broker();
        let cancel = CancellationToken::new();
        let b = Arc::clone(&broker);
        let c = cancel.clone();
        let worker = std::thread::spawn(move || b.decide(&request("rm -rf build"), &c));
        let (_, id) = asked.recv().unwrap();
        cancel.cancel();
        assert_eq!(worker.join().unwrap(), ApprovalDecision::Deny);
        assert!(!broker.answer(id, ApprovalDecision::Approve));
        assert!(broker.pending_ids().is_empty());
    }

    #[test]
    fn broker_remembers_always_this_run() {
        let (broker, asked) = broker();
        let cancel = CancellationToken::new();
        let b = Arc::clone(&broker);
        let c = cancel.clone();
        let worker = std::thread::spawn(move || b.decide(&request("ls"), &c));
        let (_, id) = asked.recv().unwrap();
        assert!(broker.answer(id, ApprovalDecision::AlwaysThisRun));
        assert_eq!(worker.join().unwrap(), ApprovalDecision::AlwaysThisRun);
        assert!(broker.always_approved());
        // Later requests are approved without a question.
        let again = broker.decide(&request("cargo test"), &cancel);
        assert_eq!(again, ApprovalDecision::AlwaysThisRun);
        assert!(asked.try_recv().is_err(), "asked again after always");
    }

    #[test]
    fn broker_refuses_at_once_when_already_cancelled() {
        let (broker, asked) = broker();
        let cancel = CancellationToken::new();
        cancel.cancel();
        assert_eq!(
            broker.decide(&request("ls"), &cancel),
            ApprovalDecision::Deny
        );
        assert!(asked.try_recv().is_err());
    }

    struct Counting {
        asked: AtomicUsize,
        answer: ApprovalDecision,
    }

    impl Approver for Counting {
        fn decide(&self, _r: &ApprovalRequest, _c: &CancellationToken) -> ApprovalDecision {
            self.asked.fetch_add(1, Ordering::SeqCst);
            self.answer
        }
    }

    #[test]
    fn policies_auto_deny_ask() {
        let cancel = CancellationToken::new();
        let no = Counting {
            asked: AtomicUsize::new(0),
            answer: ApprovalDecision::Deny,
        };
        assert!(authorize(ApprovalPolicy::Auto, &no, &request("ls"), &cancel).is_ok());
        let err = authorize(ApprovalPolicy::Deny, &no, &request("ls"), &cancel).unwrap_err();
        assert!(err.0.contains("denied by the approval policy"), "{err}");
        assert_eq!(no.asked.load(Ordering::SeqCst), 0, "auto/deny never ask");
        let err = authorize(ApprovalPolicy::Ask, &no, &request("ls"), &cancel).unwrap_err();
        assert!(err.0.contains("denied by the person"), "{err}");
        assert_eq!(no.asked.load(Ordering::SeqCst), 1);
    }
}
