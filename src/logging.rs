//! Logging to a file, never to the terminal.
//!
//! While the TUI owns the terminal nothing else may write to it, so every log line (ours and
//! llama.cpp's, through `tracing`) goes to one file.

use std::fs::OpenOptions;
use std::path::Path;
use std::sync::Mutex;

use tracing_subscriber::EnvFilter;

/// Sends `tracing` output to `path` (appending). `RALPH_LOG` overrides the filter; by default
/// llama.cpp's thousands of load-time info lines are left out. Returns an error message when the file cannot
/// be opened; the caller decides whether that matters.
pub fn init(path: &Path) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let filter = EnvFilter::try_from_env("RALPH_LOG")
        .unwrap_or_else(|_| EnvFilter::new("info,llama-cpp-2=warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        // A log write that fails (full disk) must not spill onto the terminal.
        .log_internal_errors(false)
        .with_writer(Mutex::new(file))
        .try_init()
        .map_err(|e| e.to_string())
}
