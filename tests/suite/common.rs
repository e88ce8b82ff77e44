//! Shared test helpers: temporary git repos with a fixed identity, scripts, running the binary.
#![allow(dead_code, reason = "each suite uses a different part")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};

pub const BIN: &str = env!("CARGO_BIN_EXE_ralph-tui");

/// A temporary git repository with one commit and a fixed identity.
pub struct TempRepo {
    pub dir: tempfile::TempDir,
}

impl TempRepo {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init(dir.path()).unwrap();
        let mut cfg = repo.config().unwrap();
        cfg.set_str("user.name", "Test User").unwrap();
        cfg.set_str("user.email", "test@example.com").unwrap();
        std::fs::write(dir.path().join("README.md"), "# demo\n").unwrap();
        let me = Self { dir };
        me.commit_all("initial");
        me
    }

    /// A directory that is not a git repository.
    pub fn plain_dir() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn write(&self, rel: &str, text: &str) {
        let p = self.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path().join(rel)).unwrap()
    }

    pub fn commit_all(&self, message: &str) -> git2::Oid {
        let repo = git2::Repository::open(self.path()).unwrap();
        let mut index = repo.index().unwrap();
        index
            .add_all(["*"].iter(), git2::IndexAddOption::DEFAULT, None)
            .unwrap();
        index.write().unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let sig = git2::Signature::now("Test User", "test@example.com").unwrap();
        let parents: Vec<git2::Commit> = repo
            .head()
            .ok()
            .and_then(|h| h.peel_to_commit().ok())
            .into_iter()
            .collect();
        let parents: Vec<&git2::Commit> = parents.iter().collect();
        repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)
            .unwrap()
    }
}

/// A Hermes-style tool call, as a model would emit it.
pub fn call(name: &str, arguments: Value) -> String {
    format!(
        "<tool_call>{}</tool_call>",
        json!({"name": name, "arguments": arguments})
    )
}

/// The worker's `write_file` call for `path` with `content`.
pub fn write_file_call(path: &str, content: &str) -> String {
    call("write_file", json!({ "path": path, "content": content }))
}

pub fn report(
    status: &str,
    summary: &str,
    evidence: &[&str],
    next: &[&str],
    blocker: &str,
) -> String {
    call(
        "ralph_report",
        json!({"status": status, "summary": summary, "evidence": evidence, "next_steps": next, "blocker": blocker}),
    )
}

pub fn continue_report(summary: &str) -> String {
    // The next step follows the summary, so rounds that say different things are not a stall.
    report(
        "continue",
        summary,
        &[],
        &[&format!("keep going after: {summary}")],
        "",
    )
}

/// A turn that checks the files (`list_dir .`) and reports completion: the engine refuses a
/// `complete` report from a round that called no tool.
pub fn complete_report(summary: &str) -> String {
    format!(
        "{}\n{}",
        call("list_dir", json!({"path": "."})),
        complete_only(summary)
    )
}

/// The completion report alone, for a round that has already called a tool.
pub fn complete_only(summary: &str) -> String {
    report("complete", summary, &["checked the files"], &[], "")
}

/// Writes a script file from rounds (each a `json!({"turns": [...]})` or `{"fail": ...}`).
pub fn script(dir: &Path, rounds: Vec<Value>) -> PathBuf {
    script_with_delay(dir, rounds, 0)
}

pub fn script_with_delay(dir: &Path, rounds: Vec<Value>, delay_ms: u64) -> PathBuf {
    let path = dir.join(format!("script-{}.json", rand_suffix()));
    std::fs::write(
        &path,
        serde_json::to_vec(&json!({"token_delay_ms": delay_ms, "rounds": rounds})).unwrap(),
    )
    .unwrap();
    path
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// One headless scripted run: its output, its events and its run directory.
pub struct Run {
    pub out: Output,
    pub events: Vec<Value>,
    pub run_dir: PathBuf,
    _tmp: tempfile::TempDir,
}

/// Runs the script `rounds` headless in `repo` with `extra` options.
pub fn run_script(repo: &TempRepo, rounds: Vec<Value>, extra: &[&str]) -> Run {
    run_script_with(repo, rounds, json!({}), extra)
}

/// As [`run_script`], with `extra_script` merged into the script's top-level object.
pub fn run_script_with(
    repo: &TempRepo,
    rounds: Vec<Value>,
    extra_script: Value,
    extra: &[&str],
) -> Run {
    let tmp = tempfile::tempdir().unwrap();
    let mut script = json!({"token_delay_ms": 0, "rounds": rounds});
    if let (Some(obj), Some(more)) = (script.as_object_mut(), extra_script.as_object()) {
        obj.extend(more.clone());
    }
    let path = tmp.path().join("script.json");
    std::fs::write(&path, serde_json::to_vec(&script).unwrap()).unwrap();
    let run_dir = tmp.path().join("run");
    let backend = format!("script:{}", path.display());
    let mut args = vec!["--backend", backend.as_str()];
    args.extend_from_slice(extra);
    let out = headless(repo.path(), &run_dir, &args).output().unwrap();
    let events = events(&out.stdout);
    Run {
        out,
        events,
        run_dir,
        _tmp: tmp,
    }
}

pub fn turns(items: &[String]) -> Value {
    json!({"turns": items})
}

/// A headless command with an isolated config/data dir (HOME, XDG_*).
pub fn headless(repo: &Path, run_dir: &Path, extra: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    isolate(&mut cmd, run_dir.parent().unwrap_or(run_dir));
    cmd.arg("--headless")
        .arg("-C")
        .arg(repo)
        .arg("--run-dir")
        .arg(run_dir)
        .args(extra);
    cmd
}

/// Points HOME and the XDG dirs at `home`, so no real config or data is used.
pub fn isolate(cmd: &mut Command, home: &Path) {
    cmd.env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        // Not made: holder files of run locks go beside the run directory or the data.
        .env("XDG_RUNTIME_DIR", home.join("runtime"))
        .env_remove("RALPH_LOG");
}

/// Parses JSON Lines; panics on any unparseable line.
pub fn events(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad line {l:?}: {e}")))
        .collect()
}

/// Reads a running headless child's events up to the first for which `stop` holds (kept too);
/// panics if the stream ends first.
pub fn events_until(
    reader: &mut impl std::io::BufRead,
    stop: impl Fn(&Value) -> bool,
) -> Vec<Value> {
    let mut seen = Vec::new();
    loop {
        let mut line = String::new();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "stream ended early"
        );
        let v: Value = serde_json::from_str(&line).unwrap();
        let done = stop(&v);
        seen.push(v);
        if done {
            return seen;
        }
    }
}

pub fn of_type<'a>(events: &'a [Value], ty: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == ty).collect()
}

pub fn last(events: &[Value]) -> &Value {
    events.last().expect("no events")
}

pub fn code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

/// `text` cut at `cuts` (character positions, taken modulo the length): the pieces a stream
/// could deliver it in.
pub fn split_at_points(text: &str, cuts: &[usize]) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (chars.len() + 1)).collect();
    points.sort_unstable();
    points.dedup();
    let mut out = Vec::new();
    let mut start = 0;
    for p in points.into_iter().chain([chars.len()]) {
        if p > start {
            out.push(chars[start..p].iter().collect());
            start = p;
        }
    }
    out
}

/// Settings for a scripted run of `objective` in `repo` with the options `extra`, with
/// config, data and cache in `tmp`.
pub fn script_settings(
    repo: &Path,
    tmp: &Path,
    script: &Path,
    extra: &[&str],
    objective: &str,
) -> ralph_tui::config::Settings {
    use clap::Parser;
    let mut args = vec![
        "ralph-tui".to_string(),
        "-C".into(),
        repo.display().to_string(),
        "--backend".into(),
        format!("script:{}", script.display()),
        "--run-dir".into(),
        tmp.join("run").display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    args.push(objective.into());
    let cli = ralph_tui::cli::Cli::try_parse_from(args).unwrap();
    let dirs = ralph_tui::config::Dirs {
        config: tmp.join("config"),
        data: tmp.join("data"),
        cache: tmp.join("cache"),
    };
    ralph_tui::config::Settings::resolve(cli, dirs).unwrap()
}

/// A small tmpfs mounted for one test, unmounted when dropped.
pub struct TinyFs {
    pub dir: tempfile::TempDir,
    mounted: PathBuf,
}

impl TinyFs {
    /// `None` where mounting is not allowed (not root, or no CAP_SYS_ADMIN).
    pub fn mount(size: &str) -> Option<Self> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_path_buf();
        Self::mount_on(dir, &path, size)
    }

    /// A tmpfs of `size` on `at` (made if missing), for a full disk inside a workspace.
    pub fn mount_at(at: &Path, size: &str) -> Option<Self> {
        std::fs::create_dir_all(at).unwrap();
        Self::mount_on(tempfile::tempdir().unwrap(), at, size)
    }

    fn mount_on(dir: tempfile::TempDir, at: &Path, size: &str) -> Option<Self> {
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Self {
            dir,
            mounted: at.to_path_buf(),
        })
    }
}

impl Drop for TinyFs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(&self.mounted)
            .status();
    }
}

/// Lists the shell's own descriptors (`ls` is a child, so its directory's fd is not among
/// them) and says which of 0-2 is a terminal.
pub const LIST_FDS: &str =
    "ls -l /proc/$$/fd; for n in 0 1 2; do [ -t $n ] && echo TTY-ON-$n; done; echo FDS-LISTED";

/// Asserts that `output` (of [`LIST_FDS`]) shows exactly 0, 1 and 2, none of them a terminal.
pub fn assert_only_stdio(output: &str) {
    assert!(output.contains("FDS-LISTED"), "{output}");
    let mut fds: Vec<(&str, &str)> = output
        .lines()
        .filter_map(|line| {
            let (left, target) = line.rsplit_once(" -> ")?;
            Some((left.split_whitespace().last()?, target))
        })
        .collect();
    fds.sort_unstable();
    let numbers: Vec<&str> = fds.iter().map(|(fd, _)| *fd).collect();
    assert_eq!(numbers, ["0", "1", "2"], "{output}");
    assert_eq!(fds[0].1, "/dev/null", "{output}");
    for (fd, target) in &fds {
        assert!(
            !target.starts_with("/dev/pts") && !target.starts_with("/dev/tty"),
            "fd {fd} is a terminal: {output}"
        );
    }
    assert!(!output.contains("TTY-ON-"), "{output}");
}
