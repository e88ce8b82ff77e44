//! Workspace benchmark, figures only (nothing asserted).
//!
//! On a generated repository of 10,000 files with 100 of them changed: the median time of a
//! snapshot plus the cumulative diff against the baseline snapshot, side by side with
//! `git add -A && git diff --cached --stat` in a throwaway copy of the same repository (the
//! index reset between runs, so both redo the same work), printed as a ratio. Then the live
//! watcher: start-up, CPU time while the tree sits idle, and the delay from a write to its
//! report. Run with `cargo bench --bench workspace`.
#![allow(
    clippy::print_stdout,
    reason = "a benchmark reports its figures on stdout"
)]

use std::error::Error;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use ralph_tui::workspace::{LiveWatch, Workspace};

const DIRS: usize = 100;
const FILES_PER_DIR: usize = 100;
const CHANGED: usize = 100;
const RUNS: usize = 15;
const IDLE: Duration = Duration::from_secs(3);

type Result<T> = std::result::Result<T, Box<dyn Error>>;

fn git(dir: &Path, args: &[&str]) -> Result<()> {
    let status = Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .stdout(Stdio::null())
        .status()?;
    if !status.success() {
        return Err(format!("git {args:?} failed").into());
    }
    Ok(())
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn generate(root: &Path) -> Result<()> {
    for d in 0..DIRS {
        let dir = root.join(format!("pkg{d:03}"));
        std::fs::create_dir_all(&dir)?;
        for f in 0..FILES_PER_DIR {
            let text: String = (0..20)
                .map(|l| format!("// pkg {d} file {f} line {l}: some ordinary source text\n"))
                .collect();
            std::fs::write(dir.join(format!("file{f:03}.rs")), text)?;
        }
    }
    std::fs::write(root.join(".gitignore"), "target/\n")?;
    git(root, &["init", "-q"])?;
    git(root, &["add", "-A"])?;
    git(
        root,
        &[
            "-c",
            "user.name=Bench",
            "-c",
            "user.email=bench@example.com",
            "commit",
            "-q",
            "-m",
            "generated",
        ],
    )
}

/// Changes every 100th file: one line edited, one added.
fn change(root: &Path) -> Result<()> {
    let step = DIRS * FILES_PER_DIR / CHANGED;
    for i in (0..DIRS * FILES_PER_DIR).step_by(step) {
        let path = root
            .join(format!("pkg{:03}", i / FILES_PER_DIR))
            .join(format!("file{:03}.rs", i % FILES_PER_DIR));
        let text = std::fs::read_to_string(&path)?;
        let text = text.replacen("line 3:", "line three:", 1) + "// appended by the benchmark\n";
        std::fs::write(&path, text)?;
    }
    Ok(())
}

/// CPU time of every live thread of this process (ns resolution, from schedstat).
fn process_cpu() -> Duration {
    let mut total = 0u64;
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for task in tasks.flatten() {
            let stat = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
            total += stat
                .split_whitespace()
                .next()
                .and_then(|ns| ns.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    Duration::from_nanos(total)
}

fn main() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let root = tmp.path().join("repo");
    std::fs::create_dir_all(&root)?;
    let t = Instant::now();
    generate(&root)?;
    println!(
        "workspace bench: {} files in {DIRS} directories, {CHANGED} changed (generated in {:.1} s)",
        DIRS * FILES_PER_DIR,
        t.elapsed().as_secs_f64()
    );

    let ws = Workspace::open(&root)?;
    let base = ws.snapshot()?;
    change(&root)?;

    let mut snapshots = Vec::with_capacity(RUNS);
    let mut diffs = Vec::with_capacity(RUNS);
    let mut both = Vec::with_capacity(RUNS);
    let mut files = 0;
    for _ in 0..RUNS {
        let t = Instant::now();
        let now = ws.snapshot()?;
        let snapped = t.elapsed();
        let diff = ws.diff(&base, &now)?;
        let total = t.elapsed();
        files = diff.files_changed();
        snapshots.push(snapped);
        diffs.push(total - snapped);
        both.push(total);
    }
    let ours = median(both);
    println!(
        "  ralph-tui snapshot + cumulative diff: median {:.1} ms (snapshot {:.1} ms, diff {:.1} ms; {files} files in the diff; {RUNS} runs)",
        ms(ours),
        ms(median(snapshots)),
        ms(median(diffs)),
    );

    let copy = tmp.path().join("copy");
    git(
        tmp.path(),
        &[
            "clone",
            "-q",
            "--no-local",
            root.to_str().ok_or("path")?,
            copy.to_str().ok_or("path")?,
        ],
    )?;
    change(&copy)?;
    git(&copy, &["status", "--porcelain"])?;
    let mut baseline = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        git(&copy, &["reset", "-q"])?;
        let t = Instant::now();
        let status = Command::new("sh")
            .current_dir(&copy)
            .args(["-c", "git add -A && git diff --cached --stat"])
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .stdout(Stdio::null())
            .status()?;
        baseline.push(t.elapsed());
        if !status.success() {
            return Err("git add -A && git diff --cached --stat failed".into());
        }
    }
    let theirs = median(baseline);
    println!(
        "  baseline `git add -A && git diff --cached --stat` (throwaway copy): median {:.1} ms",
        ms(theirs)
    );
    println!(
        "  ratio ralph-tui / git: {:.2} (goal for ralph-tui: < 150 ms)",
        ours.as_secs_f64() / theirs.as_secs_f64()
    );

    let (tx, rx) = mpsc::channel();
    let t = Instant::now();
    let watch = LiveWatch::start(
        &root,
        Box::new(move |_, files| {
            let _ = tx.send((Instant::now(), files.len()));
        }),
    )?;
    let started = t.elapsed();
    watch.round_started(1, base);
    std::thread::sleep(Duration::from_millis(300));
    let cpu_before = process_cpu();
    std::thread::sleep(IDLE);
    let idle_cpu = process_cpu().saturating_sub(cpu_before);
    println!(
        "  watcher: started in {:.1} ms watching {} directories; idle for {:.0} s: {:.3} ms CPU ({:.4} % of one core), {} refreshes",
        ms(started),
        watch.stats().watched_dirs,
        IDLE.as_secs_f64(),
        ms(idle_cpu),
        idle_cpu.as_secs_f64() / IDLE.as_secs_f64() * 100.0,
        watch.stats().refreshes,
    );
    let written = Instant::now();
    std::fs::write(root.join("pkg000").join("new.rs"), "// new\n")?;
    match rx.recv_timeout(Duration::from_secs(10)) {
        Ok((at, n)) => println!(
            "  watcher: a write reported {:.0} ms later ({n} files; the debounce is 200 ms)",
            ms(at.duration_since(written))
        ),
        Err(_) => println!("  watcher: no report within 10 s of a write"),
    }
    watch.round_ended();
    Ok(())
}
