//! When a prompt's evaluation is worth reporting, and how often.
//!
//! A child reads its prompt in batches; between batches it knows how many of the prompt's
//! tokens are in the cache. `ProgressGate` turns those steps into at most a few
//! `prompt_progress` reports a second, and only for an evaluation that will take longer than
//! about a second: one predicted to from a known rate (an earlier turn's), one whose steps so
//! far predict it, or one that has already run that long. Once anything was said, the last
//! step (all tokens read) is always said too, so a reader can close what it showed. Time is
//! passed in, so the rules are tested without a clock.

use std::time::Duration;

/// How long an evaluation must be expected to take before its progress is reported.
pub const WORTH_REPORTING: Duration = Duration::from_secs(1);

/// The least time between two reports (the last one excepted): at most four a second.
pub const MIN_INTERVAL: Duration = Duration::from_millis(250);

/// The most tokens a batch takes on the CPU: llama.cpp says how far a prompt is only
/// between batches, and a batch of 512 tokens takes about 7 s of a 1.5B model on two cores
/// (a minute when the machine is busy). On the CPU a smaller batch costs little: the work
/// per token is the same matrix-vector products.
pub const CPU_STEP: usize = 128;

/// The batch step of a prompt evaluation: `cap` (the configured batch size) with the model on
/// a GPU, where large batches are what make prompts fast, and at most [`CPU_STEP`] on the CPU.
pub fn batch_step(cap: usize, on_gpu: bool) -> usize {
    let cap = cap.max(1);
    if on_gpu {
        cap
    } else {
        cap.min(CPU_STEP)
    }
}

/// Where the batch that starts at `pos` ends, for a prompt of `len` tokens: at the next
/// multiple of `step`. Batches end at the same positions whatever the evaluation started
/// from, so an evaluation that restores a cached prefix and one that reads it again decode
/// the same batches after it, and no clock decides a batch (the numbers stay repeatable).
pub fn batch_end(pos: usize, step: usize, len: usize) -> usize {
    let step = step.max(1);
    ((pos / step + 1) * step).min(len)
}

/// A prompt's evaluation so far: `done` of its `total` tokens are in the cache (tokens reused
/// from the cache count as done).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PromptProgress {
    pub done: u32,
    pub total: u32,
}

/// Decides which steps of one prompt evaluation are reported.
#[derive(Debug, Clone)]
pub struct ProgressGate {
    start: u32,
    total: u32,
    /// Tokens a second, from an earlier evaluation, when known.
    rate: Option<f64>,
    /// Tokens one step evaluates at most (the batch size).
    step: u32,
    /// When (since the evaluation started) the last report was made.
    said: Option<Duration>,
    finished: bool,
}

impl ProgressGate {
    /// An evaluation of `total` tokens of which `start` are already in the cache, read `step`
    /// tokens at a time; `rate` is an earlier evaluation's tokens a second, when known.
    pub fn new(start: u32, total: u32, step: u32, rate: Option<f64>) -> Self {
        Self {
            start: start.min(total),
            total,
            rate: rate.filter(|r| r.is_finite() && *r > 0.0),
            step: step.max(1),
            said: None,
            finished: false,
        }
    }

    /// The report to make before the first step: when the known rate predicts a long
    /// evaluation, or, without a rate, when the evaluation takes more than one step.
    pub fn begin(&mut self) -> Option<PromptProgress> {
        let left = self.total - self.start;
        let worth = match self.rate {
            Some(rate) => Duration::from_secs_f64(f64::from(left) / rate) >= WORTH_REPORTING,
            None => left > self.step,
        };
        if !worth || left == 0 {
            return None;
        }
        self.said = Some(Duration::ZERO);
        Some(self.progress(self.start))
    }

    /// The report to make after a step: `done` tokens in the cache, `elapsed` since the
    /// evaluation began.
    pub fn step(&mut self, done: u32, elapsed: Duration) -> Option<PromptProgress> {
        let done = done.min(self.total);
        if self.finished {
            return None;
        }
        if done >= self.total {
            self.finished = true;
            return self.said.map(|_| self.progress(done));
        }
        let read = done.saturating_sub(self.start);
        let predicted = if read == 0 {
            Duration::ZERO
        } else {
            elapsed.mul_f64(f64::from(self.total - self.start) / f64::from(read))
        };
        let worth =
            self.said.is_some() || predicted >= WORTH_REPORTING || elapsed >= WORTH_REPORTING;
        if !worth {
            return None;
        }
        if let Some(last) = self.said {
            if elapsed.saturating_sub(last) < MIN_INTERVAL {
                return None;
            }
        }
        self.said = Some(elapsed);
        Some(self.progress(done))
    }

    /// Whether anything was reported.
    pub fn reported(&self) -> bool {
        self.said.is_some()
    }

    fn progress(&self, done: u32) -> PromptProgress {
        PromptProgress {
            done,
            total: self.total,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn batches_end_at_multiples_of_the_step_wherever_they_start() {
        assert_eq!(batch_step(512, false), CPU_STEP);
        assert_eq!(batch_step(512, true), 512);
        assert_eq!(batch_step(64, false), 64);
        assert_eq!(batch_step(0, false), 1);
        assert_eq!(batch_end(0, 128, 900), 128);
        assert_eq!(batch_end(700, 128, 900), 768);
        assert_eq!(batch_end(768, 128, 900), 896);
        assert_eq!(batch_end(896, 128, 900), 900);
        // From a restored prefix at 700 or read from 0 and cut there: the same batches on.
        let from = |mut pos: usize| {
            let mut ends = Vec::new();
            while pos < 900 {
                pos = batch_end(pos, 128, 900);
                ends.push(pos);
            }
            ends
        };
        assert!(from(0).ends_with(&from(700)[1..]));
        assert_eq!(from(700), vec![768, 896, 900]);
    }

    #[test]
    fn a_quick_evaluation_says_nothing() {
        // One step, no rate known: nothing before it, nothing after a quick one.
        let mut gate = ProgressGate::new(0, 200, 200, None);
        assert_eq!(gate.begin(), None);
        assert_eq!(gate.step(200, ms(150)), None);
        // 600 tokens in 3 steps of 200, 100 ms each (300 ms in all), at a known fast rate.
        let mut gate = ProgressGate::new(0, 600, 200, Some(6000.0));
        assert_eq!(gate.begin(), None);
        assert_eq!(gate.step(200, ms(100)), None);
        assert_eq!(gate.step(400, ms(200)), None);
        assert_eq!(gate.step(600, ms(300)), None);
        assert!(!gate.reported());
    }

    #[test]
    fn a_slow_evaluation_is_said_at_most_four_times_a_second_and_always_at_its_end() {
        // 2000 tokens, 20 steps of 100 at 50 ms each (1 s in all), no rate known.
        let mut gate = ProgressGate::new(0, 2000, 100, None);
        let first = gate.begin();
        assert_eq!(
            first,
            Some(PromptProgress {
                done: 0,
                total: 2000
            })
        );
        let mut said = vec![];
        for n in 1..=20u32 {
            if let Some(p) = gate.step(n * 100, ms(u64::from(n) * 50)) {
                said.push((n, p.done));
            }
        }
        // Every 250 ms (5 steps), and the end.
        assert_eq!(
            said,
            vec![(5, 500), (10, 1000), (15, 1500), (20, 2000)],
            "{said:?}"
        );
        // Nothing after the end.
        assert_eq!(gate.step(2000, ms(2000)), None);
    }

    #[test]
    fn a_long_evaluation_found_from_its_first_step_is_said_then() {
        // One step of a 4-step prompt takes 400 ms: 1.6 s predicted, said at once.
        let mut gate = ProgressGate::new(100, 900, 200, Some(1e9));
        assert_eq!(gate.begin(), None, "the known rate predicted a quick one");
        assert_eq!(
            gate.step(300, ms(400)),
            Some(PromptProgress {
                done: 300,
                total: 900
            })
        );
        assert_eq!(gate.step(400, ms(500)), None, "within 250 ms of the last");
        assert_eq!(
            gate.step(900, ms(520)),
            Some(PromptProgress {
                done: 900,
                total: 900
            })
        );
    }

    #[test]
    fn a_known_slow_rate_is_said_before_the_first_step() {
        // 1712 tokens at 46 tokens a second: 37 s.
        let mut gate = ProgressGate::new(0, 1712, 512, Some(46.0));
        assert_eq!(
            gate.begin(),
            Some(PromptProgress {
                done: 0,
                total: 1712
            })
        );
        // Reused tokens count as done; nothing left is nothing to say.
        let mut gate = ProgressGate::new(1712, 1712, 512, Some(46.0));
        assert_eq!(gate.begin(), None);
    }
}
