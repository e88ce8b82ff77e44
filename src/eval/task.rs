//! Eval tasks on disk, and the fresh workspace each run gets.
//!
//! A task is a folder: `objective.txt`, `repo/` (the starting repository's files), `verify`
//! (a POSIX shell script, exit 0 = done, kept outside `repo/` so the worker never sees it),
//! optionally `check` (one line: the visible test or build command a developer of that
//! repository runs, which the Ralph arm passes as ralph-tui's `--check`; it is not `verify`)
//! and, for the script backend, `script.json` (the agent arms' scripted worker) and
//! `oneshot.txt` (the oneshot arm's canned answer). Every run starts from a fresh copy of `repo/` with
//! one commit made under a fixed identity and date, so the starting tree and commit are the
//! same for every run.

use std::path::{Path, PathBuf};

use super::EvalError;

/// The identity and time of every workspace's first commit.
const AUTHOR_NAME: &str = "Ralph Eval";
const AUTHOR_EMAIL: &str = "eval@ralph-tui.invalid";
const COMMIT_TIME: i64 = 1_704_067_200; // 2024-01-01T00:00:00Z

/// One task folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    /// The folder's name; names sort in order of difficulty.
    pub name: String,
    pub dir: PathBuf,
    pub objective_file: PathBuf,
    pub repo: PathBuf,
    pub verify: PathBuf,
    /// `script.json`, when the task has one.
    pub script: Option<PathBuf>,
    /// `oneshot.txt`, the oneshot arm's answer under the script backend, when there is one.
    pub oneshot: Option<PathBuf>,
    /// The repository's own check command (`check`), when the task names one.
    pub check: Option<String>,
}

impl Task {
    /// Reads and checks one task folder.
    pub fn load(dir: &Path) -> Result<Self, EvalError> {
        let dir = &dir.canonicalize().map_err(|source| EvalError::Io {
            what: format!("cannot resolve {}", dir.display()),
            source,
        })?;
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let bad = |message: &str| EvalError::Task {
            task: name.clone(),
            message: message.to_string(),
        };
        let objective_file = dir.join("objective.txt");
        let objective = std::fs::read_to_string(&objective_file)
            .map_err(|e| bad(&format!("cannot read objective.txt: {e}")))?;
        if objective.trim().is_empty() {
            return Err(bad("objective.txt is empty"));
        }
        let repo = dir.join("repo");
        if !repo.is_dir() {
            return Err(bad("it has no repo/ folder"));
        }
        let verify = dir.join("verify");
        if !verify.is_file() {
            return Err(bad("it has no verify script"));
        }
        let script = Some(dir.join("script.json")).filter(|p| p.is_file());
        let oneshot = Some(dir.join("oneshot.txt")).filter(|p| p.is_file());
        let check = read_check(&dir.join("check")).map_err(|m| bad(&m))?;
        Ok(Self {
            name,
            dir: dir.to_path_buf(),
            objective_file,
            repo,
            verify,
            script,
            oneshot,
            check,
        })
    }

    /// Copies `repo/` into `dest` (which must not exist yet) and commits it.
    pub fn prepare_workspace(&self, dest: &Path) -> Result<(), EvalError> {
        let io = |what: String| move |source| EvalError::Io { what, source };
        std::fs::create_dir_all(dest).map_err(io(format!(
            "cannot create the workspace {}",
            dest.display()
        )))?;
        copy_tree(&self.repo, dest)?;
        commit_all(dest).map_err(|e| EvalError::Task {
            task: self.name.clone(),
            message: format!("cannot commit the starting repository: {e}"),
        })
    }
}

/// The command a task's `check` file names: its one line that is not blank, trimmed, or
/// `None` when there is no such file.
fn read_check(path: &Path) -> Result<Option<String>, String> {
    if !path.exists() {
        return Ok(None);
    }
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("cannot read its check file: {e}"))?;
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    match (lines.next(), lines.next()) {
        (Some(word @ ("auto" | "off")), None) => Err(format!(
            "its check file says `{word}`: name a command, or leave the file out"
        )),
        (Some(command), None) => Ok(Some(command.to_string())),
        (None, _) => Err("its check file is empty: give the command on one line".into()),
        (Some(_), Some(_)) => {
            Err("its check file has more than one line: give one command line".into())
        }
    }
}

/// Task folders under `tasks_dir` (every folder with an `objective.txt`), sorted by name,
/// keeping those whose name contains any of `filters` (all when there are none).
pub fn discover(tasks_dir: &Path, filters: &[String]) -> Result<Vec<Task>, EvalError> {
    let entries = std::fs::read_dir(tasks_dir).map_err(|source| EvalError::Io {
        what: format!("cannot read the tasks folder {}", tasks_dir.display()),
        source,
    })?;
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("objective.txt").is_file())
        .collect();
    dirs.sort();
    let mut tasks = Vec::new();
    for dir in dirs {
        let task = Task::load(&dir)?;
        if filters.is_empty() || filters.iter().any(|f| task.name.contains(f.as_str())) {
            tasks.push(task);
        }
    }
    if tasks.is_empty() {
        return Err(EvalError::Usage(format!(
            "no task in {} matches {}",
            tasks_dir.display(),
            if filters.is_empty() {
                "(no filter)".to_string()
            } else {
                filters.join(", ")
            }
        )));
    }
    Ok(tasks)
}

/// Copies files and folders, keeping permissions (the executable bit matters to scripts).
fn copy_tree(from: &Path, to: &Path) -> Result<(), EvalError> {
    let io = |what: String| move |source| EvalError::Io { what, source };
    let entries = std::fs::read_dir(from).map_err(io(format!("cannot read {}", from.display())))?;
    for entry in entries {
        let entry = entry.map_err(io(format!("cannot read {}", from.display())))?;
        let source = entry.path();
        let target = to.join(entry.file_name());
        let kind = entry
            .file_type()
            .map_err(io(format!("cannot stat {}", source.display())))?;
        if kind.is_dir() {
            std::fs::create_dir_all(&target)
                .map_err(io(format!("cannot create {}", target.display())))?;
            copy_tree(&source, &target)?;
        } else {
            std::fs::copy(&source, &target)
                .map_err(io(format!("cannot copy {}", source.display())))?;
        }
    }
    Ok(())
}

/// `git init`, then one commit of everything not ignored, under the fixed identity and date.
fn commit_all(dir: &Path) -> Result<(), git2::Error> {
    let repo = git2::Repository::init(dir)?;
    let mut config = repo.config()?;
    config.set_str("user.name", AUTHOR_NAME)?;
    config.set_str("user.email", AUTHOR_EMAIL)?;
    let mut index = repo.index()?;
    index.add_all(["*"].iter(), git2::IndexAddOption::DEFAULT, None)?;
    index.write()?;
    let tree = repo.find_tree(index.write_tree()?)?;
    let when = git2::Time::new(COMMIT_TIME, 0);
    let signature = git2::Signature::new(AUTHOR_NAME, AUTHOR_EMAIL, &when)?;
    repo.commit(
        Some("HEAD"),
        &signature,
        &signature,
        "starting point",
        &tree,
        &[],
    )?;
    Ok(())
}
