//! The frame scheduler: redraws are requested, never polled, and coalesced so that at most
//! one frame is drawn per [`MIN_FRAME`] however many requests arrive.
//!
//! A flood of tokens asks for a frame thousands of times a second; the scheduler turns that
//! into ~60 frames, and because the event loop is `biased` toward terminal input, a key press
//! is handled at once and shows in the next frame.

use std::time::{Duration, Instant};

/// The shortest time between two frames (~60 frames per second).
pub const MIN_FRAME: Duration = Duration::from_millis(16);

#[derive(Debug, Clone)]
pub struct FrameScheduler {
    min_frame: Duration,
    last: Option<Instant>,
    pending: bool,
}

impl Default for FrameScheduler {
    fn default() -> Self {
        Self::new(MIN_FRAME)
    }
}

impl FrameScheduler {
    pub fn new(min_frame: Duration) -> Self {
        Self {
            min_frame,
            last: None,
            pending: false,
        }
    }

    /// Asks for a frame; any number of requests before it is drawn make one frame.
    pub fn request(&mut self) {
        self.pending = true;
    }

    pub fn pending(&self) -> bool {
        self.pending
    }

    /// When the requested frame may be drawn; `None` when none is requested.
    pub fn deadline(&self) -> Option<Instant> {
        if !self.pending {
            return None;
        }
        Some(match self.last {
            Some(last) => last + self.min_frame,
            None => Instant::now(),
        })
    }

    /// Records that a frame was drawn at `at`.
    pub fn drawn(&mut self, at: Instant) {
        self.pending = false;
        self.last = Some(at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_coalesce_and_respect_the_interval() {
        let mut frames = FrameScheduler::new(Duration::from_millis(16));
        assert_eq!(frames.deadline(), None);
        for _ in 0..1000 {
            frames.request();
        }
        let first = frames.deadline().unwrap();
        frames.drawn(first);
        assert_eq!(frames.deadline(), None, "1000 requests made one frame");
        frames.request();
        assert_eq!(frames.deadline(), Some(first + Duration::from_millis(16)));
    }
}
