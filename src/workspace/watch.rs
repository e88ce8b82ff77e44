//! Live changes: a file watcher that, during a round, recomputes the round's diff (round-start
//! snapshot → work tree now) off the engine thread and reports the changed files.
//!
//! Shape: `notify` delivers raw events into a channel; one worker thread owns the watcher,
//! filters events (`.git/`, gitignored paths and pure reads are dropped), debounces them
//! (a refresh runs 200 ms after the last relevant event, or at most 1 s after the first of a
//! burst) and calls back only when the list of changed files differs from the last one it
//! reported. Between rounds events are dropped. Idle, both threads sit in blocking waits.
//! Whoever runs rounds tells it where each starts and ends (`round_started`/`round_ended`);
//! the app wiring connects that to the engine, which this module does not know.
//!
//! The tree is watched directory by directory rather than with one recursive watch, so
//! ignored directories (build outputs, `node_modules`), `.git/` and submodules are never
//! watched at all; directories that appear later are added as their creation is seen, and
//! the refresh it triggers snapshots the whole tree, so nothing written into them is missed.

use std::path::{Component, Path};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode};
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use super::{Snapshot, Workspace, WorkspaceError};
use crate::protocol::event::ChangedFile;

/// Called with the round and its changed files whenever that list changes.
pub type OnChange = Box<dyn Fn(u32, Vec<ChangedFile>) + Send + Sync>;

/// Quiet time after the last relevant event before a refresh.
const QUIET: Duration = Duration::from_millis(200);
/// Longest a burst can hold a refresh back.
const MAX_WAIT: Duration = Duration::from_millis(1000);

/// Counters, for tests and the benchmark.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WatchStats {
    /// Directories under watch (added over time; removed ones are not subtracted).
    pub watched_dirs: u64,
    /// Events that scheduled a refresh (or would have, outside a round).
    pub relevant_events: u64,
    /// Events about `.git/` or ignored paths, dropped.
    pub ignored_events: u64,
    /// Diffs computed.
    pub refreshes: u64,
    /// Callbacks made.
    pub reports: u64,
}

#[derive(Default)]
struct Counters {
    watched_dirs: AtomicU64,
    relevant_events: AtomicU64,
    ignored_events: AtomicU64,
    refreshes: AtomicU64,
    reports: AtomicU64,
}

impl Counters {
    fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

enum Msg {
    Fs(notify::Result<notify::Event>),
    RoundStarted(u32, Snapshot),
    RoundEnded,
    Stop,
}

/// The live watcher. Dropping it stops the watch and joins its thread.
pub struct LiveWatch {
    tx: Sender<Msg>,
    /// The round in progress, 0 between rounds; checked before each callback so a refresh
    /// that finishes after its round ended is not reported.
    active: Arc<AtomicU32>,
    counters: Arc<Counters>,
    worker: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for LiveWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveWatch")
            .field("stats", &self.stats())
            .finish()
    }
}

fn watch_error(e: impl std::fmt::Display) -> WorkspaceError {
    WorkspaceError::Watch(e.to_string())
}

impl LiveWatch {
    /// Starts watching the workspace at `root`; nothing is reported until a round starts.
    pub fn start(root: &Path, on_change: OnChange) -> Result<LiveWatch, WorkspaceError> {
        let workspace = Workspace::open(root)?;
        let (tx, rx) = mpsc::channel();
        let events = tx.clone();
        let watcher = notify::recommended_watcher(move |event| {
            // The receiver is gone only after Stop; nothing to do then.
            let _ = events.send(Msg::Fs(event));
        })
        .map_err(watch_error)?;
        let counters = Arc::new(Counters::default());
        let active = Arc::new(AtomicU32::new(0));
        let mut worker = Worker {
            workspace,
            watcher,
            on_change,
            active: Arc::clone(&active),
            counters: Arc::clone(&counters),
            round: None,
            last: Vec::new(),
        };
        let root = worker.workspace.root().to_path_buf();
        worker.watch_tree(&root);
        let worker = std::thread::Builder::new()
            .name("ralph-watch".into())
            .spawn(move || worker.run(&rx))
            .map_err(watch_error)?;
        Ok(LiveWatch {
            tx,
            active,
            counters,
            worker: Some(worker),
        })
    }

    pub fn stats(&self) -> WatchStats {
        let c = &self.counters;
        WatchStats {
            watched_dirs: c.watched_dirs.load(Ordering::Relaxed),
            relevant_events: c.relevant_events.load(Ordering::Relaxed),
            ignored_events: c.ignored_events.load(Ordering::Relaxed),
            refreshes: c.refreshes.load(Ordering::Relaxed),
            reports: c.reports.load(Ordering::Relaxed),
        }
    }
}

/// Round boundaries, told by whoever runs rounds (the app wiring connects them to the engine).
impl LiveWatch {
    /// Starts reporting changes against `base`, the snapshot the round `round` started from.
    pub fn round_started(&self, round: u32, base: Snapshot) {
        self.active.store(round, Ordering::SeqCst);
        let _ = self.tx.send(Msg::RoundStarted(round, base));
    }

    /// Stops reporting until the next round starts.
    pub fn round_ended(&self) {
        self.active.store(0, Ordering::SeqCst);
        let _ = self.tx.send(Msg::RoundEnded);
    }
}

impl Drop for LiveWatch {
    fn drop(&mut self) {
        let _ = self.tx.send(Msg::Stop);
        if let Some(worker) = self.worker.take() {
            if worker.join().is_err() {
                tracing::error!("the file watcher's thread panicked");
            }
        }
    }
}

struct Worker {
    workspace: Workspace,
    watcher: RecommendedWatcher,
    on_change: OnChange,
    active: Arc<AtomicU32>,
    counters: Arc<Counters>,
    round: Option<(u32, Snapshot)>,
    last: Vec<ChangedFile>,
}

impl Worker {
    fn run(mut self, rx: &Receiver<Msg>) {
        // (first relevant event of the burst, when to refresh)
        let mut pending: Option<(Instant, Instant)> = None;
        loop {
            let msg = match pending {
                None => match rx.recv() {
                    Ok(msg) => msg,
                    Err(_) => return,
                },
                Some((_, due)) => {
                    match rx.recv_timeout(due.saturating_duration_since(Instant::now())) {
                        Ok(msg) => msg,
                        Err(RecvTimeoutError::Timeout) => {
                            pending = None;
                            self.refresh();
                            continue;
                        }
                        Err(RecvTimeoutError::Disconnected) => return,
                    }
                }
            };
            let relevant = match msg {
                Msg::Fs(Ok(event)) => self.is_relevant(&event),
                Msg::Fs(Err(e)) => {
                    // Something may have been missed: look again.
                    tracing::debug!("file watcher: {e}");
                    true
                }
                Msg::RoundStarted(round, base) => {
                    self.round = Some((round, base));
                    self.last.clear();
                    pending = None;
                    false
                }
                Msg::RoundEnded => {
                    self.round = None;
                    pending = None;
                    false
                }
                Msg::Stop => return,
            };
            if relevant && self.round.is_some() {
                let now = Instant::now();
                let first = pending.map_or(now, |(first, _)| first);
                pending = Some((first, (now + QUIET).min(first + MAX_WAIT)));
            }
        }
    }

    /// Whether an event can change the diff; watches directories it sees created.
    fn is_relevant(&mut self, event: &notify::Event) -> bool {
        match event.kind {
            EventKind::Access(AccessKind::Close(AccessMode::Write)) => {}
            // Opens and reads, including the snapshots' own.
            EventKind::Access(_) => return false,
            _ => {}
        }
        if event.need_rescan() {
            Counters::bump(&self.counters.relevant_events);
            return true;
        }
        let mut relevant = false;
        for path in &event.paths {
            if self.is_relevant_path(path) {
                relevant = true;
                let created = matches!(
                    event.kind,
                    EventKind::Create(_) | EventKind::Modify(notify::event::ModifyKind::Name(_))
                );
                if created && std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
                    self.watch_tree(path);
                }
            }
        }
        let counter = if relevant {
            &self.counters.relevant_events
        } else {
            &self.counters.ignored_events
        };
        Counters::bump(counter);
        relevant
    }

    /// Not under `.git/`, not gitignored, inside the work tree.
    fn is_relevant_path(&self, path: &Path) -> bool {
        let Ok(rel) = path.strip_prefix(self.workspace.top()) else {
            return false;
        };
        if rel
            .components()
            .any(|c| c == Component::Normal(".git".as_ref()))
        {
            return false;
        }
        if rel.as_os_str().is_empty() {
            return true;
        }
        !self
            .workspace
            .repo()
            .status_should_ignore(rel)
            .unwrap_or(false)
    }

    /// Watches `dir` and every directory below it that is not ignored, `.git` or a nested
    /// repository.
    fn watch_tree(&mut self, dir: &Path) {
        let mut stack = vec![dir.to_path_buf()];
        while let Some(dir) = stack.pop() {
            if dir != self.workspace.top() && dir.join(".git").exists() {
                continue;
            }
            if let Err(e) = self.watcher.watch(&dir, RecursiveMode::NonRecursive) {
                tracing::debug!("file watcher: cannot watch {}: {e}", dir.display());
                continue;
            }
            Counters::bump(&self.counters.watched_dirs);
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
                let path = entry.path();
                if is_dir && entry.file_name() != ".git" && self.is_relevant_path(&path) {
                    stack.push(path);
                }
            }
        }
    }

    fn refresh(&mut self) {
        let Some((round, base)) = self.round else {
            return;
        };
        Counters::bump(&self.counters.refreshes);
        let diff = self
            .workspace
            .snapshot()
            .and_then(|now| self.workspace.diff(&base, &now));
        let files = match diff {
            Ok(diff) => diff.changed_files(),
            Err(e) => {
                tracing::debug!("live diff: {e}");
                return;
            }
        };
        if files == self.last {
            return;
        }
        self.last.clone_from(&files);
        if self.active.load(Ordering::SeqCst) != round {
            return;
        }
        Counters::bump(&self.counters.reports);
        (self.on_change)(round, files);
    }
}
