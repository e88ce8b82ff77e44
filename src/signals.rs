//! Process-wide SIGINT and SIGTERM, caught from the first line of `main`.
//!
//! [`install`] replaces the default action (death by signal) with a flag, so a signal at any
//! moment after startup is noticed instead of killing the process half-way through setting up
//! a run. Whoever runs the process reads the flag: before a run begins `main` exits 130; once
//! a run has begun the headless loop and the TUI turn it into the run's cancel, so the log
//! ends in `run_finished` with `cancelled`. Later signals also reach tokio's listeners, which
//! share the same registry.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use nix::sys::signal::{SigSet, SigmaskHow, Signal};

static REQUESTED: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Catches SIGINT and SIGTERM into the cancel flag and unblocks them (a parent may have
/// started us with them blocked). Call once, first thing, while the process has one thread.
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
    mask(SigmaskHow::SIG_UNBLOCK)
}

/// Whether a SIGINT or SIGTERM has arrived since [`install`].
pub fn requested() -> bool {
    REQUESTED
        .get()
        .is_some_and(|flag| flag.load(Ordering::SeqCst))
}
