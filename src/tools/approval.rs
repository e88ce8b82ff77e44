//! The approval policy's question to the person: may this command run?

/// What is being asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalRequest {
    pub round: u32,
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

/// Answers approval requests; blocks until the person decides (or the run is cancelled).
pub trait Approver: Send + Sync {
    fn decide(&self, request: &ApprovalRequest) -> ApprovalDecision;
}

/// An approver that says no to everything (headless runs never ask).
#[derive(Debug, Clone, Copy, Default)]
pub struct DenyAll;

impl Approver for DenyAll {
    fn decide(&self, _request: &ApprovalRequest) -> ApprovalDecision {
        ApprovalDecision::Deny
    }
}
