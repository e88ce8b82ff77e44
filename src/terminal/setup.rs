//! Owning the terminal: raw mode and the alternate screen in, everything restored out, on
//! every path (normal exit, error, panic).
//!
//! While the UI owns the terminal nothing else may write to it: file descriptor 2 is pointed
//! at the run's log file (llama.cpp writes some errors straight to fd 2) and pointed back on
//! the way out. A panic on the UI's thread puts fd 2 and the terminal back before its message
//! is printed, so the message lands on a usable screen; a panic on another thread (the
//! engine's) leaves the screen to the UI, which sees the thread end and quits cleanly, and
//! its message goes to the log file.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Mutex;
use std::thread::ThreadId;

use crossterm::event::{
    DisableBracketedPaste, DisableFocusChange, DisableMouseCapture, EnableBracketedPaste,
    EnableFocusChange, EnableMouseCapture,
};
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use crossterm::{cursor, execute};

/// The saved copy of fd 2 while it points at the log file, or -1.
static SAVED_STDERR: AtomicI32 = AtomicI32::new(-1);

/// The thread that owns the terminal, while one does.
static UI_THREAD: Mutex<Option<ThreadId>> = Mutex::new(None);

fn set_ui_thread(id: Option<ThreadId>) {
    if let Ok(mut owner) = UI_THREAD.lock() {
        *owner = id;
    }
}

fn on_ui_thread() -> bool {
    UI_THREAD
        .lock()
        .map(|owner| *owner == Some(std::thread::current().id()))
        .unwrap_or(false)
}

/// Points fd 2 back at what it was, once.
fn restore_stderr() {
    let saved = SAVED_STDERR.swap(-1, Ordering::SeqCst);
    if saved >= 0 {
        let _ = nix::unistd::dup2(saved, 2);
        let _ = nix::unistd::close(saved);
    }
}

/// Leaves the alternate screen and raw mode; safe to call more than once.
pub fn restore_terminal() {
    let mut out = io::stdout();
    let _ = execute!(
        out,
        DisableMouseCapture,
        DisableBracketedPaste,
        DisableFocusChange,
        LeaveAlternateScreen,
        cursor::Show
    );
    let _ = disable_raw_mode();
    let _ = out.flush();
}

/// fd 2 redirected to a file for as long as this lives.
#[derive(Debug)]
pub struct StderrToFile {
    _private: (),
}

impl StderrToFile {
    pub fn new(path: &Path) -> io::Result<Self> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        // Close-on-exec, or every child would inherit the terminal (and could write to it,
        // read keys from it or push keys into it).
        let saved = nix::fcntl::fcntl(2, nix::fcntl::FcntlArg::F_DUPFD_CLOEXEC(3))
            .map_err(io::Error::from)?;
        if let Err(e) = nix::unistd::dup2(file.as_raw_fd(), 2) {
            let _ = nix::unistd::close(saved);
            return Err(io::Error::from(e));
        }
        restore_stderr();
        SAVED_STDERR.store(saved, Ordering::SeqCst);
        Ok(Self { _private: () })
    }
}

impl Drop for StderrToFile {
    fn drop(&mut self) {
        restore_stderr();
    }
}

/// The terminal in raw mode on the alternate screen; restored when dropped.
#[derive(Debug)]
pub struct TerminalGuard {
    _private: (),
}

impl TerminalGuard {
    /// Takes the terminal and installs the panic hook that gives it back.
    pub fn enter() -> io::Result<Self> {
        install_panic_hook();
        set_ui_thread(Some(std::thread::current().id()));
        enable_raw_mode()?;
        let guard = Self { _private: () };
        execute!(
            io::stdout(),
            EnterAlternateScreen,
            EnableMouseCapture,
            EnableBracketedPaste,
            EnableFocusChange,
            cursor::Hide
        )?;
        Ok(guard)
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        set_ui_thread(None);
        restore_terminal();
    }
}

fn install_panic_hook() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if on_ui_thread() {
                restore_stderr();
                restore_terminal();
            }
            previous(info);
        }));
    });
}
