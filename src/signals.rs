//! Process-wide signals, set up from the first line of `main`: SIGINT and SIGTERM become a
//! cancel request, SIGXFSZ a failed write; and the soft limits that would end the process
//! early are raised back to the hard ones.
//!
//! [`install`] replaces the default action (death by signal) with a flag, so a signal at any
//! moment after startup is noticed instead of killing the process half-way through setting up
//! a run. Whoever runs the process reads the flag: before a run begins `main` exits 130; once
//! a run has begun the headless loop and the TUI turn it into the run's cancel, so the log
//! ends in `run_finished` with `cancelled`. Later signals also reach tokio's listeners, which
//! share the same registry.
//!
//! A write past `RLIMIT_FSIZE` raises SIGXFSZ, whose default action kills the process with the
//! terminal still in the alternate screen and the log cut short. Caught, the write fails with
//! `EFBIG` instead, an error the run log reports and stops the run on. It is caught, not
//! ignored, because an ignored signal stays ignored across `exec` and would reach every
//! command and hook; a caught one is back to its default in them. [`raise_soft_limits`] then
//! lifts a lowered soft limit on file size and open files to the hard limit (a lowered hard
//! limit cannot be raised again).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use nix::sys::signal::{SigSet, SigmaskHow, Signal};

static REQUESTED: OnceLock<Arc<AtomicBool>> = OnceLock::new();
/// Set when a write went past the file size limit (SIGXFSZ).
static FILE_TOO_LARGE: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// The most open files the soft limit is raised to: plenty for ralph-tui, and what commands
/// inherit stays an ordinary figure even where the hard limit is huge.
const OPEN_FILES_CAP: u64 = 65_536;

/// Catches SIGINT and SIGTERM into the cancel flag and unblocks them (a parent may have
/// started us with them blocked), and catches SIGXFSZ so that a write past the file size
/// limit fails instead of killing the process. Call once, first thing, while the process has
/// one thread.
///
/// Both are blocked while the handlers are registered: signal-hook installs a signal's handler
/// before it stores the action the handler runs, and a signal that lands in between would be
/// dropped. Blocked, it waits and arrives at the unblock, when the flag is in place.
pub fn install() -> std::io::Result<()> {
    let flag = REQUESTED.get_or_init(|| Arc::new(AtomicBool::new(false)));
    let mut set = SigSet::empty();
    set.add(Signal::SIGINT);
    set.add(Signal::SIGTERM);
    let mask = |how| {
        nix::sys::signal::pthread_sigmask(how, Some(&set), None).map_err(std::io::Error::from)
    };
    mask(SigmaskHow::SIG_BLOCK)?;
    for signal in [Signal::SIGINT, Signal::SIGTERM] {
        if let Err(e) = signal_hook::flag::register(signal as i32, Arc::clone(flag)) {
            let _ = mask(SigmaskHow::SIG_UNBLOCK);
            return Err(e);
        }
    }
    mask(SigmaskHow::SIG_UNBLOCK)?;
    let too_large = FILE_TOO_LARGE.get_or_init(|| Arc::new(AtomicBool::new(false)));
    signal_hook::flag::register(Signal::SIGXFSZ as i32, Arc::clone(too_large))?;
    Ok(())
}

/// Whether a write went past the file size limit since [`install`].
pub fn file_too_large() -> bool {
    FILE_TOO_LARGE
        .get()
        .is_some_and(|flag| flag.load(Ordering::SeqCst))
}

/// The soft limit to set for a resource whose limits are `(soft, hard)`: the hard limit, at
/// most `cap`, never below the soft limit it has; `None` when it stays.
pub fn raised_soft_limit(soft: u64, hard: u64, cap: u64) -> Option<u64> {
    let wanted = hard.min(cap);
    (wanted > soft).then_some(wanted)
}

/// Raises the soft limits on file size (to the hard limit) and on open files (to the hard
/// limit, at most [`OPEN_FILES_CAP`]), should whoever started ralph-tui have lowered them.
/// Best effort: a limit that cannot be read or set stays as it is.
#[allow(
    unsafe_code,
    reason = "getrlimit and setrlimit take a pointer; nix's resource feature is not enabled"
)]
pub fn raise_soft_limits() {
    use nix::libc;
    for (resource, cap) in [
        (libc::RLIMIT_FSIZE, libc::RLIM_INFINITY),
        (libc::RLIMIT_NOFILE, OPEN_FILES_CAP),
    ] {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: `limit` is a valid, writable rlimit for the duration of the call.
        if unsafe { libc::getrlimit(resource, &mut limit) } != 0 {
            continue;
        }
        if let Some(soft) = raised_soft_limit(limit.rlim_cur, limit.rlim_max, cap) {
            limit.rlim_cur = soft;
            // SAFETY: `limit` is a valid rlimit, only read by the call.
            let _ = unsafe { libc::setrlimit(resource, &limit) };
        }
    }
}

/// Whether a SIGINT or SIGTERM has arrived since [`install`].
pub fn requested() -> bool {
    REQUESTED
        .get()
        .is_some_and(|flag| flag.load(Ordering::SeqCst))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_soft_limit_is_raised_to_the_hard_one_within_the_cap_and_never_lowered() {
        let infinity = u64::MAX;
        assert_eq!(raised_soft_limit(0, infinity, infinity), Some(infinity));
        assert_eq!(raised_soft_limit(16, 4096, OPEN_FILES_CAP), Some(4096));
        assert_eq!(
            raised_soft_limit(1024, 1 << 20, OPEN_FILES_CAP),
            Some(OPEN_FILES_CAP)
        );
        assert_eq!(raised_soft_limit(1 << 18, 1 << 20, OPEN_FILES_CAP), None);
        assert_eq!(raised_soft_limit(0, 0, infinity), None);
        assert_eq!(raised_soft_limit(infinity, infinity, infinity), None);
    }
}
