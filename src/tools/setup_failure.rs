//! How the sandbox helper says it could not set a command up: it exits with [`SETUP_FAILED`]
//! after one stderr line that starts with [`FAILURE_PREFIX`], so the parent (the command tool,
//! the hooks) can tell the helper's failure from the command's own output.
//!
//! Both halves of the helper, the confinement (`sandbox`) and the supervisor, fail this way;
//! it lives below both so that neither imports the other for it.

use std::io::Write;

/// The helper's exit code when it could not set the sandbox up (the command never ran).
pub const SETUP_FAILED: i32 = 125;
/// How the helper's own error lines start, so they are not taken for the command's output.
pub const FAILURE_PREFIX: &str = "ralph-tui sandbox:";

/// Writes the helper's error line and exits with [`SETUP_FAILED`].
pub(crate) fn fail(message: &str) -> ! {
    let _ = writeln!(std::io::stderr(), "{FAILURE_PREFIX} {message}");
    std::process::exit(SETUP_FAILED);
}
