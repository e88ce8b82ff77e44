//! The oneshot arm: the floor an agent loop must beat. No tools, no rounds: one generation
//! sees the objective and the repository's files and answers with whole files
//! (`whole_file`), which the harness writes into the workspace before the verify script runs.
//!
//! The generation goes through exactly what a ralph-tui run would load: the same ralph-tui
//! arguments (backend, model, seed, sampling, the extra arguments) are parsed and resolved by
//! the library, and the backend is loaded as `app` loads it, in this process. Under the
//! script backend the answer is the task's `oneshot.txt`, played as a one-turn script.
//!
//! Bounds. The prompt shows the files of the starting commit whole, in path order, while the
//! context leaves room to rewrite every shown file plus `--max-tokens`; past that the largest
//! files are named only (binary files, and text files over 32 KiB, always are), and a prompt
//! whose objective and instructions alone leave no room for an answer is a failed run. The
//! answer's cap is `--oneshot-max-tokens`, else the Ralph arm's generated tokens for the task
//! and seed, at least room for the repository's text (bytes / 3) plus `--max-tokens`; the
//! context's end and `--run-timeout` also end it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clap::Parser;
use tokio_util::sync::CancellationToken;

use super::results::{OneshotRecord, RunRecord};
use super::task::Task;
use super::trial::{self, Invocation, Setup};
use super::whole_file::{self, Listing};
use super::{Arm, EvalError};
use crate::chat::listing;
use crate::llm::{BackendError, Generation, Request, StopReason};
use crate::protocol::message::{Message, Role};
use crate::tools::path::{open_root, resolve, Access};

/// A text file larger than this is named in the prompt, not shown.
const MAX_FILE_BYTES: usize = 32 * 1024;
/// At most this much file text in one prompt; later files are named only.
const MAX_SHOWN_BYTES: usize = 256 * 1024;
/// Bytes of source text per token, for the answer cap's floor (a low guess, so the floor is
/// generous).
const BYTES_PER_TOKEN: u64 = 3;

/// One file of the starting commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RepoFile {
    pub path: String,
    /// The text, or why it is not shown (binary, a symlink).
    pub text: Result<String, String>,
}

/// The prompt that fits, and what it left out.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Prompt {
    pub messages: Vec<Message>,
    pub shown: u32,
    /// `path (why)` for each file named but not shown.
    pub not_shown: Vec<String>,
}

/// Why no prompt could be built.
#[derive(Debug)]
pub(super) enum FitError {
    Backend(BackendError),
    /// The objective and instructions alone leave no room for an answer.
    NoRoom {
        base: u32,
        ctx: u32,
        room: u32,
    },
}

impl std::fmt::Display for FitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Backend(e) => write!(f, "{e}"),
            Self::NoRoom { base, ctx, room } => write!(
                f,
                "the prompt does not fit: its objective and instructions take {base} tokens, and the answer needs {room} more, in a context of {ctx}"
            ),
        }
    }
}

/// Builds the largest prompt that leaves room to rewrite every file it shows: `prompt +
/// shown files' tokens + room <= ctx`. Files are dropped to a named line, largest first,
/// until it does. `count` gives a prompt's tokens.
pub(super) fn fit(
    objective: &str,
    files: &[RepoFile],
    ctx: u32,
    room: u32,
    count: &mut dyn FnMut(&[Message]) -> Result<u32, BackendError>,
) -> Result<Prompt, FitError> {
    let mut why: Vec<Option<String>> = Vec::with_capacity(files.len());
    let mut total = 0;
    for file in files {
        why.push(match &file.text {
            Err(why) => Some(why.clone()),
            Ok(text) if text.len() > MAX_FILE_BYTES => {
                Some(format!("{} bytes, too large to show", text.len()))
            }
            Ok(text) if total + text.len() > MAX_SHOWN_BYTES => {
                Some("not shown: the prompt's limit was reached".into())
            }
            Ok(text) => {
                total += text.len();
                None
            }
        });
    }
    let all_named: Vec<Option<String>> = why
        .iter()
        .map(|w| Some(w.clone().unwrap_or_else(|| "not shown".into())))
        .collect();
    let base = count(&render(objective, files, &all_named)).map_err(FitError::Backend)?;
    if u64::from(base) + u64::from(room) > u64::from(ctx) {
        return Err(FitError::NoRoom { base, ctx, room });
    }
    loop {
        let messages = render(objective, files, &why);
        let tokens = count(&messages).map_err(FitError::Backend)?;
        let files_tokens = u64::from(tokens.saturating_sub(base));
        let needed = u64::from(base) + 2 * files_tokens + u64::from(room);
        let largest = files
            .iter()
            .zip(&why)
            .enumerate()
            .filter(|(_, (_, w))| w.is_none())
            .max_by_key(|(i, (f, _))| (f.text.as_ref().map_or(0, String::len), usize::MAX - i))
            .map(|(i, _)| i);
        match largest {
            Some(i) if needed > u64::from(ctx) => {
                why[i] = Some("not shown: no room in the context to rewrite it".into());
            }
            _ => {
                let not_shown = files
                    .iter()
                    .zip(&why)
                    .filter_map(|(f, w)| w.as_ref().map(|w| format!("{} ({w})", f.path)))
                    .collect();
                let shown = why.iter().filter(|w| w.is_none()).count();
                return Ok(Prompt {
                    messages,
                    shown: u32::try_from(shown).unwrap_or(u32::MAX),
                    not_shown,
                });
            }
        }
    }
}

/// The system and user messages showing the files `why` leaves unmarked.
fn render(objective: &str, files: &[RepoFile], why: &[Option<String>]) -> Vec<Message> {
    let listings: Vec<Listing<'_>> = files
        .iter()
        .zip(why)
        .map(|(f, w)| match (&f.text, w) {
            (Ok(text), None) => Listing::Whole {
                path: &f.path,
                text,
            },
            (_, Some(why)) | (Err(why), None) => Listing::Named { path: &f.path, why },
        })
        .collect();
    let fence = listing::fence_for(listings.iter().filter_map(|l| match l {
        Listing::Whole { text, .. } => Some(*text),
        Listing::Named { .. } => None,
    }));
    vec![
        Message::new(Role::System, whole_file::system_prompt(&fence)),
        Message::new(
            Role::User,
            whole_file::user_prompt(objective, &listings, &fence),
        ),
    ]
}

/// The files of the workspace's starting commit, in path order.
pub(super) fn repo_files(workspace: &Path) -> Result<Vec<RepoFile>, git2::Error> {
    let repo = git2::Repository::open(workspace)?;
    let tree = repo.head()?.peel_to_tree()?;
    let mut files = Vec::new();
    let mut failed = None;
    tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
        if entry.kind() != Some(git2::ObjectType::Blob) {
            return git2::TreeWalkResult::Ok;
        }
        let path = format!("{dir}{}", String::from_utf8_lossy(entry.name_bytes()));
        let blob = match repo.find_blob(entry.id()) {
            Ok(blob) => blob,
            Err(e) => {
                failed = Some(e);
                return git2::TreeWalkResult::Abort;
            }
        };
        let bytes = blob.content();
        let text = if entry.filemode() == 0o120_000 {
            Err("a symlink, not shown".to_string())
        } else {
            match std::str::from_utf8(bytes) {
                Ok(text) if !text.contains('\0') => Ok(text.to_string()),
                _ => Err(format!("binary, {} bytes, not shown", bytes.len())),
            }
        };
        files.push(RepoFile { path, text });
        git2::TreeWalkResult::Ok
    })?;
    match failed {
        Some(e) => Err(e),
        None => Ok(files),
    }
}

/// The answer's cap: `--oneshot-max-tokens`, else the Ralph arm's generated tokens, at least
/// room for the repository's text plus `room`.
fn answer_cap(
    explicit: Option<u32>,
    ralph_generated: Option<u64>,
    files: &[RepoFile],
    room: u32,
) -> u32 {
    let text_bytes: u64 = files
        .iter()
        .filter_map(|f| f.text.as_ref().ok())
        .map(|t| t.len() as u64)
        .sum();
    let floor = u64::from(room) + text_bytes.div_ceil(BYTES_PER_TOKEN);
    explicit.unwrap_or_else(|| {
        u32::try_from(ralph_generated.unwrap_or(0).max(floor)).unwrap_or(u32::MAX)
    })
}

/// Cancels a token when a time is up, unless stopped first.
struct Watchdog {
    done: Option<mpsc::Sender<()>>,
    fired: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    fn start(token: CancellationToken, timeout: Duration) -> Self {
        let (done, wait) = mpsc::channel::<()>();
        let fired = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&fired);
        let thread = std::thread::spawn(move || {
            if wait.recv_timeout(timeout) == Err(mpsc::RecvTimeoutError::Timeout) {
                flag.store(true, Ordering::SeqCst);
                token.cancel();
            }
        });
        Self {
            done: Some(done),
            fired,
            thread: Some(thread),
        }
    }

    /// Stops the watch; whether the time was up first.
    fn stop(mut self) -> bool {
        drop(self.done.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.fired.load(Ordering::SeqCst)
    }
}

/// The answer written into the workspace: which files were written, which refused.
fn write_answer(
    workspace: &Path,
    answer: &listing::Answer,
    record: &mut OneshotRecord,
) -> Result<(), EvalError> {
    let root = open_root(workspace).map_err(|e| EvalError::Io {
        what: format!("cannot open the workspace {}", workspace.display()),
        source: std::io::Error::other(e.to_string()),
    })?;
    for (path, content) in &answer.files {
        let refuse = |why: &str| format!("{}: {why}", listing::shown(path));
        if let Err(why) = listing::check_path(path) {
            record.refused.push(refuse(&why));
            continue;
        }
        let target = match resolve(workspace, path, Access::Write) {
            Ok(target) => target,
            Err(e) => {
                record.refused.push(refuse(&e.to_string()));
                continue;
            }
        };
        match root.write(&target.path, content.as_bytes()) {
            Ok(_) => record.written.push(target.rel),
            Err(e) => record.refused.push(refuse(&e.to_string())),
        }
    }
    Ok(())
}

/// What the generation came to: the generation, or why there was none.
struct Answered {
    generation: Result<Generation, String>,
    timed_out: bool,
}

impl Answered {
    fn failed(why: impl std::fmt::Display) -> Self {
        Self {
            generation: Err(why.to_string()),
            timed_out: false,
        }
    }
}

/// One oneshot run: a task and seed, its fresh workspace and its starting files.
struct OneshotRun<'a> {
    setup: &'a Setup<'a>,
    task: &'a Task,
    seed: u32,
    /// The run's folder: `workspace/`, `prompt.txt`, `answer.txt`, `verify.txt`.
    dir: PathBuf,
    files: Vec<RepoFile>,
    /// The answer's room beyond the shown files (`--max-tokens`).
    room: u32,
    /// The answer's cap.
    cap: u32,
}

/// One oneshot run of a task and seed. `None` when the eval was cancelled during it.
pub(super) fn run_one(
    setup: &Setup<'_>,
    task: &Task,
    seed: u32,
    ralph_generated: Option<u64>,
    cancel: &CancellationToken,
) -> Result<Option<RunRecord>, EvalError> {
    let options = setup.options;
    let dir = setup.scratch.join(format!("{}-oneshot-s{seed}", task.name));
    let workspace = dir.join("workspace");
    task.prepare_workspace(&workspace)?;
    let files = repo_files(&workspace).map_err(|e| EvalError::Task {
        task: task.name.clone(),
        message: format!("cannot read the starting commit: {e}"),
    })?;
    let room = setup.limits.max_tokens;
    let cap = answer_cap(options.oneshot_max_tokens, ralph_generated, &files, room);
    let run = OneshotRun {
        setup,
        task,
        seed,
        dir,
        files,
        room,
        cap,
    };

    let started = Instant::now();
    let mut record = OneshotRecord::default();
    let Some(answered) = run.generate(&mut record, cancel)? else {
        return Ok(None);
    };
    let (status, error, prompt_tokens, generated_tokens) =
        run.take_answer(&answered, &workspace, &mut record)?;
    let wall = started.elapsed();

    let Some(mut verify) =
        trial::verify(task, &workspace, &run.dir, options.verify_timeout, cancel)?
    else {
        return Ok(None);
    };
    let scrub = |text: &str| trial::scrub_run(text, setup, task, &run.dir);
    verify.output_tail = scrub(&verify.output_tail);
    for list in [&mut record.refused, &mut record.problems] {
        for item in list.iter_mut() {
            *item = scrub(item);
        }
    }
    Ok(Some(RunRecord {
        task: task.name.clone(),
        arm: Arm::Oneshot,
        seed,
        completed: verify.passed,
        status: status.into(),
        report_status: None,
        claimed_complete: false,
        false_completion: false,
        discovery: super::metrics::Discovery::default(),
        tool_calls: 0,
        prompt_tokens: u64::from(prompt_tokens),
        generated_tokens: u64::from(generated_tokens),
        // No rounds: one generation in one context.
        rounds_used: 0,
        max_rounds: 0,
        max_turns: Some(1),
        max_tokens: Some(run.room),
        observe: None,
        check: None,
        round_context: super::metrics::RoundContextFigures::default(),
        token_budget: Some(u64::from(run.cap)),
        wall_ms: trial::millis(wall),
        exit_code: None,
        timed_out: answered.timed_out,
        error: error.map(|e| scrub(&e)),
        verify,
        oneshot: Some(record),
        worker: super::results::WorkerFigures::default(),
    }))
}

impl OneshotRun<'_> {
    /// Writes the answer's files into `workspace` (the answer itself to `answer.txt`) and
    /// says how the generation ended: status, error, prompt and generated tokens.
    fn take_answer(
        &self,
        answered: &Answered,
        workspace: &Path,
        record: &mut OneshotRecord,
    ) -> Result<(&'static str, Option<String>, u32, u32), EvalError> {
        Ok(match &answered.generation {
            Ok(g) => {
                write_file(&self.dir.join("answer.txt"), &g.text)?;
                let known = |p: &str| self.files.iter().any(|f| f.path == p);
                let answer = listing::parse(&g.text, &known);
                record.problems = answer.problems.clone();
                write_answer(workspace, &answer, record)?;
                let status = match g.stop {
                    StopReason::EndOfTurn => "answered",
                    StopReason::MaxTokens => "max-tokens",
                    StopReason::ContextFull => "context-full",
                    StopReason::Cancelled if answered.timed_out => "timed-out",
                    StopReason::Cancelled => "cancelled",
                };
                let timeout = self.setup.options.run_timeout;
                let error = answered
                    .timed_out
                    .then(|| format!("timed out after {} s", timeout.as_secs()));
                (status, error, g.prompt_tokens, g.generated_tokens)
            }
            Err(e) => ("failed", Some(e.clone()), 0, 0),
        })
    }

    /// Loads the backend as a ralph-tui run would, builds the prompt and generates the
    /// answer. `Err` when ralph-tui would refuse the run; `Ok(None)` when the eval was
    /// cancelled.
    fn generate(
        &self,
        record: &mut OneshotRecord,
        cancel: &CancellationToken,
    ) -> Result<Option<Answered>, EvalError> {
        let (setup, task, dir) = (self.setup, self.task, self.dir.as_path());
        let refused = |message: String| EvalError::Refused {
            task: task.name.clone(),
            arm: Arm::Oneshot.as_str(),
            message: trial::scrub_run(&message, setup, task, dir),
        };
        let script = self.canned_script()?;
        let run_dir = dir.join("run");
        let args = setup.ralph_args(
            task,
            &Invocation {
                workspace: &dir.join("workspace"),
                run_dir: run_dir.clone(),
                seed: self.seed,
                max_rounds: 1,
                max_turns: Some(1),
                max_tokens: Some(self.cap),
                token_budget: None,
                context: None,
                script: script.as_deref(),
            },
        )?;
        let program = std::iter::once(OsString::from("ralph-tui"));
        let cli = crate::cli::Cli::try_parse_from(program.chain(args))
            .map_err(|e| refused(crate::cli::error_line(&e)))?;
        // As ralph-tui itself: without a home, the run directory and config file it is given.
        let dirs = crate::config::Dirs::discover()
            .unwrap_or_else(|| crate::config::Dirs::without_home(&setup.config, &run_dir));
        let settings =
            crate::config::Settings::resolve(cli, dirs).map_err(|e| refused(e.to_string()))?;
        let objective = settings.objective.clone().unwrap_or_default();
        let prepared = crate::app::prepare(&settings).map_err(|e| refused(e.to_string()))?;
        let mut backend = crate::app::load_backend(&prepared.backend, &settings, None)
            .map_err(|e| refused(e.to_string()))?;
        let ctx = backend.info().ctx_size;
        let mut child = match backend.new_child(1) {
            Ok(child) => child,
            Err(e) => return Ok(Some(Answered::failed(e))),
        };
        let fitted = fit(&objective, &self.files, ctx, self.room, &mut |messages| {
            child.count_prompt_tokens(Request::new(messages, &[]))
        });
        let prompt = match fitted {
            Ok(prompt) => prompt,
            Err(e) => return Ok(Some(Answered::failed(e))),
        };
        record.files_shown = prompt.shown;
        record.files_not_shown = prompt.not_shown.clone();
        let text: Vec<&str> = prompt.messages.iter().map(|m| m.content.as_str()).collect();
        write_file(&dir.join("prompt.txt"), &text.join("\n\n"))?;

        let token = cancel.child_token();
        let watchdog = Watchdog::start(token.clone(), setup.options.run_timeout);
        let generation = child.generate(Request::new(&prompt.messages, &[]), &mut |_| {}, &token);
        let timed_out = watchdog.stop();
        if cancel.is_cancelled() {
            return Ok(None);
        }
        Ok(Some(Answered {
            generation: generation.map_err(|e| e.to_string()),
            timed_out,
        }))
    }

    /// Under the script backend, the task's canned answer as a one-turn script file.
    fn canned_script(&self) -> Result<Option<PathBuf>, EvalError> {
        if self.setup.options.server_backend().is_some() || self.setup.model.is_some() {
            return Ok(None);
        }
        let Some(canned) = &self.task.oneshot else {
            return Ok(None);
        };
        let answer = std::fs::read_to_string(canned).map_err(|source| EvalError::Io {
            what: format!("cannot read {}", canned.display()),
            source,
        })?;
        let path = self.dir.join("oneshot-script.json");
        let script = serde_json::json!({"rounds": [{"turns": [answer]}]});
        write_file(&path, &script.to_string())?;
        Ok(Some(path))
    }
}

fn write_file(path: &Path, text: &str) -> Result<(), EvalError> {
    std::fs::write(path, text).map_err(|source| EvalError::Io {
        what: format!("cannot write {}", path.display()),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, text: &str) -> RepoFile {
        RepoFile {
            path: path.into(),
            text: Ok(text.into()),
        }
    }

    /// One token per 4 bytes of content, like the script backend's estimate.
    fn count(messages: &[Message]) -> Result<u32, BackendError> {
        Ok(u32::try_from(
            messages
                .iter()
                .map(|m| m.content.len())
                .sum::<usize>()
                .div_ceil(4),
        )
        .unwrap())
    }

    #[test]
    fn everything_is_shown_when_it_fits_twice() {
        let files = [file("a.py", "x = 1\n"), file("b.py", "y = 2\n")];
        let p = fit("Do it.", &files, 100_000, 384, &mut count).unwrap();
        assert_eq!((p.shown, p.not_shown.len()), (2, 0));
        assert!(p.messages[1].content.contains("b.py\n```\ny = 2\n```\n"));
    }

    #[test]
    fn the_largest_files_are_named_only_until_an_answer_can_rewrite_the_rest() {
        let small = file("small.py", "s = 1\n");
        let big = file("big.py", &"b = 2\n".repeat(400));
        let files = [big.clone(), small.clone()];
        let base = count(&render(
            "Do it.",
            &files,
            &[Some("x".into()), Some("x".into())],
        ))
        .unwrap();
        // Room for the small file twice, not the big one.
        let ctx = base + 384 + 40;
        let p = fit("Do it.", &files, ctx, 384, &mut count).unwrap();
        assert_eq!(p.shown, 1);
        assert_eq!(
            p.not_shown,
            ["big.py (not shown: no room in the context to rewrite it)"]
        );
        assert!(p.messages[1].content.contains("small.py\n```\ns = 1\n```"));
        assert!(!p.messages[1].content.contains("b = 2"));
    }

    #[test]
    fn binary_and_huge_files_are_named_and_no_room_is_an_error() {
        let files = [
            RepoFile {
                path: "logo.png".into(),
                text: Err("binary, 9 bytes, not shown".into()),
            },
            file("huge.txt", &"x".repeat(MAX_FILE_BYTES + 1)),
        ];
        let p = fit("Do it.", &files, 100_000, 384, &mut count).unwrap();
        assert_eq!(p.shown, 0);
        assert_eq!(
            p.not_shown,
            [
                "logo.png (binary, 9 bytes, not shown)".to_string(),
                format!("huge.txt ({} bytes, too large to show)", MAX_FILE_BYTES + 1)
            ]
        );
        let e = fit("Do it.", &files, 300, 384, &mut count).unwrap_err();
        assert!(e.to_string().starts_with("the prompt does not fit"), "{e}");
    }

    #[test]
    fn the_cap_is_the_ralph_arms_tokens_but_never_below_room_for_the_files() {
        let files = [file("a.py", &"x".repeat(300))];
        assert_eq!(answer_cap(None, None, &files, 384), 484);
        assert_eq!(answer_cap(None, Some(50), &files, 384), 484);
        assert_eq!(answer_cap(None, Some(5000), &files, 384), 5000);
        assert_eq!(answer_cap(Some(64), Some(5000), &files, 384), 64);
    }
}
