//! A run that stalls: rounds that change nothing and keep saying the same next steps, and a
//! round that runs past its wall-clock limit (`--round-timeout`).
//!
//! [`StallWatch`] follows the rounds' ends: a round counts toward a stall when it reported
//! `continue`, its diff is known and empty, and its next steps say what the round before
//! said (compared without case, spacing or end punctuation). `stall_rounds` such rounds in
//! a row stop the run as `stalled`. A round given a note from the person starts a new count:
//! new direction is what a stall lacks. [`RoundTimer`] cancels the round's token once its
//! limit is past and says so afterwards, so the engine can tell a timeout from a cancel.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::protocol::report::{Report, ReportStatus};

/// Next steps as compared: lower case, spacing collapsed, end punctuation gone.
fn normalized(steps: &[String]) -> Vec<String> {
    steps
        .iter()
        .map(|step| {
            let words: Vec<String> = step.split_whitespace().map(str::to_lowercase).collect();
            words
                .join(" ")
                .trim_end_matches(['.', '!', ';', ':', ','])
                .to_string()
        })
        .collect()
}

/// The rounds in a row that changed nothing and said the same next steps.
#[derive(Debug, Default)]
pub(super) struct StallWatch {
    /// How many such rounds stop the run (0: never).
    limit: u32,
    /// The first round of the current count, and the next steps it said.
    streak: Option<(u32, Vec<String>)>,
    count: u32,
}

impl StallWatch {
    pub(super) fn new(limit: u32) -> Self {
        Self {
            limit,
            ..Self::default()
        }
    }

    /// A note reached round `round`: the count starts again there.
    pub(super) fn noted(&mut self) {
        self.streak = None;
        self.count = 0;
    }

    /// Round `round` ended with `report` (if any), having changed `changed` files (`None`:
    /// not known). `Some(reason)` when the run has stalled with it.
    pub(super) fn round_ended(
        &mut self,
        round: u32,
        changed: Option<usize>,
        report: Option<&Report>,
    ) -> Option<String> {
        let still = match (changed, report) {
            (Some(0), Some(report)) if report.status == ReportStatus::Continue => {
                Some(normalized(&report.next_steps))
            }
            _ => None,
        };
        let Some(steps) = still else {
            self.noted();
            return None;
        };
        match &self.streak {
            Some((_, same)) if *same == steps => self.count += 1,
            _ => {
                self.streak = Some((round, steps));
                self.count = 1;
            }
        }
        let first = self.streak.as_ref().map_or(round, |(first, _)| *first);
        (self.limit > 0 && self.count >= self.limit).then(|| {
            let next = report
                .and_then(|r| r.next_steps.first())
                .map(|s| crate::text::cut_at_char_boundary(s, 120).to_string())
                .unwrap_or_default();
            format!(
                "rounds {first}–{round} changed no file and their reports gave the same next steps (\"{next}\"): {} rounds in a row with no progress (--stall-rounds)",
                self.count
            )
        })
    }
}

/// A round's wall-clock limit: cancels the round's token when it is past.
pub(super) struct RoundTimer {
    stop: Option<mpsc::Sender<()>>,
    fired: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl RoundTimer {
    /// Starts counting `limit` for a round working under `cancel`; a timer thread that
    /// cannot start leaves the round without a limit (logged).
    pub(super) fn start(limit: Duration, cancel: CancellationToken) -> Self {
        let (stop, stopped) = mpsc::channel::<()>();
        let fired = Arc::new(AtomicBool::new(false));
        let flag = fired.clone();
        let thread = std::thread::Builder::new()
            .name("ralph-round-timer".into())
            .spawn(move || {
                if let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(limit) {
                    flag.store(true, Ordering::SeqCst);
                    cancel.cancel();
                }
            })
            .map_err(|e| tracing::error!("no round timer: {e}"))
            .ok();
        Self {
            stop: Some(stop),
            fired,
            thread,
        }
    }

    /// Stops the timer; true when the limit was reached first.
    pub(super) fn stop(mut self) -> bool {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.fired.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(steps: &[&str]) -> Report {
        Report {
            status: ReportStatus::Continue,
            summary: "looked".into(),
            evidence: vec![],
            next_steps: steps.iter().map(|s| (*s).to_string()).collect(),
            blocker: String::new(),
        }
    }

    #[test]
    fn three_still_rounds_with_the_same_next_steps_stall() {
        let mut watch = StallWatch::new(3);
        let same = report(&["Fix the parser."]);
        assert_eq!(watch.round_ended(1, Some(0), Some(&same)), None);
        assert_eq!(
            watch.round_ended(2, Some(0), Some(&report(&["fix  the parser"]))),
            None
        );
        let reason = watch.round_ended(3, Some(0), Some(&same)).unwrap();
        assert!(reason.starts_with("rounds 1–3 changed no file"), "{reason}");
    }

    #[test]
    fn a_change_new_next_steps_an_unknown_diff_or_a_note_start_the_count_again() {
        let mut watch = StallWatch::new(3);
        let same = report(&["fix the parser"]);
        watch.round_ended(1, Some(0), Some(&same));
        watch.round_ended(2, Some(0), Some(&same));
        assert_eq!(watch.round_ended(3, Some(1), Some(&same)), None);
        watch.round_ended(4, Some(0), Some(&same));
        watch.round_ended(5, Some(0), Some(&same));
        assert_eq!(
            watch.round_ended(6, Some(0), Some(&report(&["other"]))),
            None
        );
        watch.round_ended(7, Some(0), Some(&report(&["other"])));
        assert_eq!(watch.round_ended(8, None, Some(&report(&["other"]))), None);
        watch.round_ended(9, Some(0), Some(&same));
        watch.noted();
        watch.round_ended(10, Some(0), Some(&same));
        assert_eq!(watch.round_ended(11, Some(0), Some(&same)), None);
        assert!(watch.round_ended(12, Some(0), Some(&same)).is_some());
        // Off: never.
        let mut off = StallWatch::new(0);
        for round in 1..10 {
            assert_eq!(off.round_ended(round, Some(0), Some(&same)), None);
        }
    }

    #[test]
    fn the_timer_cancels_only_past_its_limit() {
        let cancel = CancellationToken::new();
        let timer = RoundTimer::start(Duration::from_secs(600), cancel.clone());
        assert!(!timer.stop());
        assert!(!cancel.is_cancelled());
        let timer = RoundTimer::start(Duration::from_millis(1), cancel.clone());
        while !cancel.is_cancelled() {
            std::thread::yield_now();
        }
        assert!(timer.stop());
    }
}
