//! The commit message the review offers: the worker's summary and evidence, of a round the
//! review did not revert, said as the worker's, and what the review reverted.

use super::{ReviewScreen, Shared};
use crate::protocol::report::Report;
use crate::screens::kit::wrap;
use crate::screens::model::ReportEntry;

impl ReviewScreen {
    /// The report the commit describes: the run's last, unless the review reverted the
    /// round that made it, then the newest accepted report of a round still in the work.
    fn described_report<'a>(&'a self, shared: &Shared<'a>) -> Option<&'a Report> {
        let review = self.shown.as_ref()?;
        let latest = review.report.as_ref().or(review.last_valid.as_ref());
        if review.reverted.is_empty() {
            return latest;
        }
        shared.reports.iter().rev().find_map(|entry| match entry {
            ReportEntry::Accepted { round, report } if !review.reverted.contains(round) => {
                Some(report)
            }
            _ => None,
        })
    }

    /// The text the commit editor starts with: the worker's summary and evidence (of a
    /// round the review did not revert), and what the review reverted.
    pub fn commit_message(&self, shared: &Shared) -> String {
        let review = self.shown.as_ref();
        let report = self.described_report(shared);
        let mut message = match report {
            Some(report) => report.summary.clone(),
            None => {
                let first = shared.objective.lines().next().unwrap_or("");
                format!("ralph-tui run: {}", wrap::truncate(first, 60))
            }
        };
        if let Some(report) = report.filter(|r| !r.evidence.is_empty()) {
            message
                .push_str("\n\nEvidence, as the worker reported it (not independently verified):");
            for item in &report.evidence {
                message.push_str("\n- ");
                message.push_str(item);
            }
        }
        if let Some(review) = review {
            message.push_str(&format!(
                "\n\nralph-tui run {}: {} after {}.",
                shared.run_id,
                review.status.as_str(),
                crate::text::count(review.rounds_started as usize, "round", "rounds")
            ));
            if !review.reverted.is_empty() {
                let rounds: Vec<String> = review.reverted.iter().map(u32::to_string).collect();
                message.push_str(&format!(
                    " Reverted in the review: round {}.",
                    rounds.join(", ")
                ));
            }
        }
        message
    }
}
