//! `--worktree`: a run that works in its own worktree on `ralph/<run id>` leaves the person's
//! checkout, index, stash, branches and `git status` byte-identical; the branch gets one
//! commit per round (also when the run is killed); apply merges three-way into the person's
//! work tree or refuses with the conflicting files; commit, discard and the abandoned list.

use std::collections::BTreeMap;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use ralph_tui::workspace::worktree::{self, WorktreeError};
use ralph_tui::workspace::WorktreeInfo;
use serde_json::{json, Value};

use super::common::*;
use super::workspace::{git, git_state};

/// The work tree's files (without `.git`), by path, with their bytes.
fn tree_files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(dir: &Path, base: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(base).unwrap().to_path_buf();
            if rel.starts_with(".git") {
                continue;
            }
            if path.is_dir() {
                walk(&path, base, out);
            } else {
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// What `git` itself says about the person's repository.
fn porcelain(repo: &Path) -> (String, String, String) {
    let text = |out: Output| String::from_utf8(out.stdout).unwrap();
    (
        text(git(
            repo,
            &["status", "--porcelain=v1", "-uall", "--ignored"],
        )),
        text(git(repo, &["stash", "list"])),
        text(git(
            repo,
            &["for-each-ref", "--format=%(refname) %(objectname)"],
        )),
    )
}

/// A repository as people have it: a committed file with a staged edit, a stash, an
/// untracked file and an ignored one.
fn busy_repo() -> TempRepo {
    let repo = TempRepo::new();
    repo.write("a.txt", "one\ntwo\nthree\n");
    repo.write(".gitignore", "*.log\n");
    repo.commit_all("a");
    repo.write("a.txt", "stashed\n");
    {
        let mut r = git2::Repository::open(repo.path()).unwrap();
        let sig = git2::Signature::now("Test User", "test@example.com").unwrap();
        r.stash_save(&sig, "wip", None).unwrap();
    }
    repo.write("a.txt", "one\ntwo\nthree\nstaged four\n");
    git(repo.path(), &["add", "a.txt"]);
    repo.write("scratch.txt", "untracked before the run\n");
    repo.write("debug.log", "ignored\n");
    repo
}

fn backend(script: &Path) -> String {
    format!("script:{}", script.display())
}

/// A headless worktree run with HOME and the XDG dirs under `home`.
fn ralph(home: &Path, repo: &Path, script: &Path, extra: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    isolate(&mut cmd, home);
    cmd.arg("--headless")
        .arg("-C")
        .arg(repo)
        .args(["--worktree", "--backend", &backend(script)])
        .args(extra);
    cmd
}

fn data_dir(home: &Path) -> PathBuf {
    home.join("data").join("ralph-tui")
}

fn run_dir_of(events: &[Value]) -> PathBuf {
    PathBuf::from(
        of_type(events, "run_started")[0]["run_dir"]
            .as_str()
            .unwrap(),
    )
}

fn info_of(run_dir: &Path) -> WorktreeInfo {
    let run: Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("run.json")).unwrap()).unwrap();
    serde_json::from_value(run["worktree"].clone()).unwrap_or_else(|e| panic!("{e}: {run}"))
}

/// The branch's first `count` commits from its tip, as (message, commit) pairs.
fn branch_log(repo: &Path, branch: &str, count: usize) -> Vec<(String, git2::Oid)> {
    let repo = git2::Repository::open(repo).unwrap();
    let mut commit = repo
        .find_branch(branch, git2::BranchType::Local)
        .unwrap()
        .get()
        .peel_to_commit()
        .unwrap();
    let mut out = Vec::new();
    for _ in 0..count {
        out.push((commit.message().unwrap().trim().to_string(), commit.id()));
        match commit.parent(0) {
            Ok(parent) => commit = parent,
            Err(_) => break,
        }
    }
    out
}

fn file_at(repo: &Path, commit: git2::Oid, path: &str) -> Option<String> {
    let repo = git2::Repository::open(repo).unwrap();
    let tree = repo.find_commit(commit).unwrap().tree().unwrap();
    let entry = tree.get_path(Path::new(path)).ok()?;
    let blob = repo.find_blob(entry.id()).unwrap();
    Some(String::from_utf8(blob.content().to_vec()).unwrap())
}

/// Two rounds: the first edits a.txt and adds new.txt, the second adds b.txt.
fn two_round_script(dir: &Path) -> PathBuf {
    script(
        dir,
        vec![
            turns(&[
                write_file_call("a.txt", "one\ntwo\nthree\nstaged four\nfive by the run\n"),
                write_file_call("new.txt", "made by the run\n"),
                continue_report("round one: a.txt and new.txt"),
            ]),
            turns(&[
                write_file_call("b.txt", "round two\n"),
                complete_report("round two: b.txt"),
            ]),
        ],
    )
}

/// Runs the two-round script in a worktree and returns the run's worktree record.
fn finished_run(repo: &Path, home: &Path) -> WorktreeInfo {
    let script = two_round_script(home);
    let out = ralph(home, repo, &script, &["two rounds"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the run's work is on branch ralph/"),
        "{stderr}"
    );
    // And how to get it later: the branch's first commit and the git commands.
    assert!(
        stderr.contains("is a snapshot of your uncommitted files when the run started")
            && stderr.contains("| git apply --3way"),
        "{stderr}"
    );
    let events = events(&out.stdout);
    // The branch's commits happen between rounds: no round sees its refs move.
    for warning in of_type(&events, "warning") {
        assert!(!warning.to_string().contains("config or refs"), "{warning}");
    }
    assert_eq!(of_type(&events, "round_finished").len(), 2);
    info_of(&run_dir_of(&events))
}

#[test]
fn a_worktree_run_leaves_the_users_checkout_index_stash_and_branches_byte_identical() {
    let repo = busy_repo();
    let home = tempfile::tempdir().unwrap();
    let git_before = git_state(repo.path());
    let files_before = tree_files(repo.path());
    let (status, stash, refs) = porcelain(repo.path());
    let head = git2::Repository::open(repo.path())
        .unwrap()
        .head()
        .unwrap()
        .target()
        .unwrap();

    let info = finished_run(repo.path(), home.path());
    let id = info.run_id().to_string();
    assert_eq!(info.branch, format!("ralph/{id}"));
    assert_eq!(info.user_repo, repo.path().canonicalize().unwrap());
    assert!(info.path.starts_with(
        data_dir(home.path())
            .canonicalize()
            .unwrap()
            .join("worktrees")
    ));

    // The person's side: files, status, stash, refs and every file under .git but the new
    // branch (its ref, its reflog) and git's record of the worktree.
    assert_eq!(tree_files(repo.path()), files_before);
    let (status_after, stash_after, refs_after) = porcelain(repo.path());
    assert_eq!(status_after, status);
    assert_eq!(stash_after, stash);
    let new_refs: Vec<&str> = refs_after
        .lines()
        .filter(|line| !refs.lines().any(|old| old == *line))
        .collect();
    assert_eq!(new_refs.len(), 1, "{refs_after}");
    assert!(new_refs[0].starts_with(&format!("refs/heads/ralph/{id} ")));
    let mut git_after = git_state(repo.path());
    git_after.retain(|path, _| {
        !(path.starts_with("refs/heads/ralph")
            || path.starts_with("logs/refs/heads/ralph")
            || path.starts_with(Path::new("worktrees").join(&id)))
    });
    assert_eq!(git_after, git_before);

    // The branch: the snapshot (on HEAD, with the staged and untracked files, without the
    // ignored one), then one commit per round with the round's summary.
    let log = branch_log(repo.path(), &info.branch, 4);
    let messages: Vec<&str> = log.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(messages[0], "round two: b.txt");
    assert_eq!(messages[1], "round one: a.txt and new.txt");
    assert!(
        log[2].0.lines().next().unwrap().contains(&id),
        "{}",
        log[2].0
    );
    assert_eq!(log[2].1.to_string(), info.snapshot);
    assert_eq!(log[3].1, head);
    let snap = log[2].1;
    assert_eq!(
        file_at(repo.path(), snap, "a.txt").as_deref(),
        Some("one\ntwo\nthree\nstaged four\n")
    );
    assert_eq!(
        file_at(repo.path(), snap, "scratch.txt").as_deref(),
        Some("untracked before the run\n")
    );
    assert_eq!(file_at(repo.path(), snap, "debug.log"), None);
    assert_eq!(file_at(repo.path(), log[1].1, "b.txt"), None);
    assert_eq!(
        file_at(repo.path(), log[0].1, "b.txt").as_deref(),
        Some("round two\n")
    );
    // The worker worked in the worktree, which saw what the person sees.
    assert_eq!(
        std::fs::read_to_string(info.path.join("scratch.txt")).unwrap(),
        "untracked before the run\n"
    );
    assert!(!info.path.join("debug.log").exists());
}

#[test]
fn apply_without_conflicts_writes_only_the_runs_files_and_never_the_index() {
    let repo = busy_repo();
    let home = tempfile::tempdir().unwrap();
    let info = finished_run(repo.path(), home.path());
    // The person kept working meanwhile, in a file the run did not touch and in a.txt's
    // first line, far from the run's edit.
    repo.write("scratch.txt", "edited during the run\n");
    repo.write("a.txt", "ONE\ntwo\nthree\nstaged four\n");
    let index_before = std::fs::read(repo.path().join(".git/index")).unwrap();
    let mut expected = tree_files(repo.path());

    let applied = info.apply().unwrap();
    assert_eq!(applied.paths, vec!["a.txt", "b.txt", "new.txt"]);
    expected.insert(
        "a.txt".into(),
        b"ONE\ntwo\nthree\nstaged four\nfive by the run\n".to_vec(),
    );
    expected.insert("b.txt".into(), b"round two\n".to_vec());
    expected.insert("new.txt".into(), b"made by the run\n".to_vec());
    assert_eq!(tree_files(repo.path()), expected);
    assert_eq!(
        std::fs::read(repo.path().join(".git/index")).unwrap(),
        index_before
    );
    // Applying keeps the branch for later.
    assert!(info.path.is_dir());
    assert!(info.tip().is_ok());
    // Committing after applying commits the run's files as they are now, and nothing else.
    let outcome = info.commit_on_current("after applying").unwrap();
    assert_eq!(outcome.files_changed, 3);
    let r = git2::Repository::open(repo.path()).unwrap();
    let tree = r.head().unwrap().peel_to_tree().unwrap();
    let blob = |path: &str| {
        let id = tree.get_path(Path::new(path)).unwrap().id();
        String::from_utf8(r.find_blob(id).unwrap().content().to_vec()).unwrap()
    };
    assert_eq!(
        blob("a.txt"),
        "ONE\ntwo\nthree\nstaged four\nfive by the run\n"
    );
    assert_eq!(blob("new.txt"), "made by the run\n");
    assert!(tree.get_path(Path::new("scratch.txt")).is_err(), "swept in");
    assert_eq!(tree_files(repo.path()), expected);
}

#[test]
fn apply_with_a_conflicting_edit_names_the_file_and_changes_nothing() {
    let repo = busy_repo();
    let home = tempfile::tempdir().unwrap();
    let info = finished_run(repo.path(), home.path());
    repo.write(
        "a.txt",
        "one\ntwo\nthree\nstaged four\nfive by the person\n",
    );
    let git_before = git_state(repo.path());
    let files_before = tree_files(repo.path());

    match info.apply() {
        Err(WorktreeError::Conflicts(files)) => assert_eq!(files, vec!["a.txt"]),
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(tree_files(repo.path()), files_before, "half applied");
    assert_eq!(git_state(repo.path()), git_before);
}

/// The run replaced the directory `conf` with a file, and the person's checkout has an
/// ignored `conf/local.secret` there: apply names it as a conflict and applies nothing.
#[test]
fn apply_never_removes_a_file_git_does_not_track_in_the_checkout() {
    let repo = TempRepo::new();
    repo.write(".gitignore", "conf/local.secret\n");
    repo.write("conf/a.txt", "a\n");
    repo.commit_all("conf");
    repo.write("conf/local.secret", "secret\n");
    let data = tempfile::tempdir().unwrap();
    let info = worktree::create(repo.path(), data.path(), "conf").unwrap();
    std::fs::remove_dir_all(info.path.join("conf")).unwrap();
    std::fs::write(info.path.join("conf"), "now a file\n").unwrap();
    std::fs::write(info.path.join("other.txt"), "other\n").unwrap();
    let files_before = tree_files(repo.path());

    match info.apply() {
        Err(WorktreeError::Conflicts(files)) => assert!(
            files
                .iter()
                .any(|f| f.starts_with("conf/local.secret (git does not track it")),
            "{files:?}"
        ),
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(repo.read("conf/local.secret"), "secret\n");
    assert_eq!(tree_files(repo.path()), files_before, "half applied");
}

#[test]
fn commit_on_the_current_branch_commits_the_runs_files_and_removes_the_worktree() {
    let repo = TempRepo::new();
    repo.write("a.txt", "one\ntwo\nthree\nstaged four\n");
    repo.commit_all("a");
    repo.write("mine.txt", "the person's own edit\n");
    let home = tempfile::tempdir().unwrap();
    let info = finished_run(repo.path(), home.path());

    let outcome = info.commit_on_current("the run's work").unwrap();
    assert_eq!(outcome.files_changed, 3);
    let r = git2::Repository::open(repo.path()).unwrap();
    let head = r.head().unwrap().peel_to_commit().unwrap();
    assert_eq!(head.id(), outcome.commit);
    assert_eq!(head.message(), Some("the run's work\n"));
    let tree = head.tree().unwrap();
    assert!(tree.get_path(Path::new("b.txt")).is_ok());
    assert!(tree.get_path(Path::new("new.txt")).is_ok());
    assert!(tree.get_path(Path::new("mine.txt")).is_err(), "swept in");
    assert!(!info.path.exists());
    assert!(r
        .find_branch(&info.branch, git2::BranchType::Local)
        .is_err());
    assert!(r.find_worktree(info.run_id()).is_err());
}

#[test]
fn committing_the_chosen_files_leaves_the_others_applied_and_uncommitted() {
    let repo = TempRepo::new();
    repo.write("a.txt", "one\ntwo\nthree\nstaged four\n");
    repo.commit_all("a");
    let home = tempfile::tempdir().unwrap();
    let info = finished_run(repo.path(), home.path());

    let only: std::collections::BTreeSet<String> = ["b.txt".to_string()].into();
    let outcome = info
        .commit_chosen_on_current("only b", Some(&only))
        .unwrap();
    assert_eq!(outcome.files_changed, 1);
    let r = git2::Repository::open(repo.path()).unwrap();
    let tree = r.head().unwrap().peel_to_commit().unwrap().tree().unwrap();
    assert!(tree.get_path(Path::new("b.txt")).is_ok());
    assert!(tree.get_path(Path::new("new.txt")).is_err(), "not chosen");
    // The others are in the work tree, uncommitted: nothing of the run is lost.
    let read = |p: &str| std::fs::read_to_string(repo.path().join(p)).unwrap();
    assert_eq!(read("new.txt"), "made by the run\n");
    assert!(read("a.txt").contains("five by the run"));
    let status = String::from_utf8(git(repo.path(), &["status", "--porcelain"]).stdout).unwrap();
    assert!(
        status.contains("new.txt") && status.contains("a.txt"),
        "{status}"
    );
    assert!(!status.contains("b.txt"), "{status}");
    assert!(!info.path.exists());
    assert!(r
        .find_branch(&info.branch, git2::BranchType::Local)
        .is_err());
}

#[test]
fn discard_removes_the_worktree_and_the_branch() {
    let repo = busy_repo();
    let home = tempfile::tempdir().unwrap();
    let git_before = git_state(repo.path());
    let files_before = tree_files(repo.path());
    let info = finished_run(repo.path(), home.path());

    info.discard().unwrap();
    assert!(!info.path.exists());
    let r = git2::Repository::open(repo.path()).unwrap();
    assert!(r
        .find_branch(&info.branch, git2::BranchType::Local)
        .is_err());
    assert!(r.find_worktree(info.run_id()).is_err());
    assert_eq!(tree_files(repo.path()), files_before);
    // Nothing of the run is left under .git (a branch's reflog would be ignored here).
    let mut after = git_state(repo.path());
    after.retain(|path, _| !path.starts_with("logs/refs/heads/ralph"));
    assert_eq!(after, git_before);
}

#[test]
fn a_killed_runs_branch_holds_its_finished_rounds_and_resume_goes_on_in_the_worktree() {
    let repo = TempRepo::new();
    let home = tempfile::tempdir().unwrap();
    let long_turn = format!("{} {}", "word ".repeat(5000), complete_report("never"));
    let script = script_with_delay(
        home.path(),
        vec![
            turns(&[
                write_file_call("one.txt", "1\n"),
                continue_report("round one"),
            ]),
            turns(&[long_turn]),
            turns(&[
                write_file_call("three.txt", "3\n"),
                complete_report("round three"),
            ]),
        ],
        5,
    );
    let mut child = ralph(home.path(), repo.path(), &script, &["obj"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let seen = events_until(&mut reader, |v| v["type"] == "token" && v["round"] == 2);
    let run_dir = run_dir_of(&seen);
    let info = info_of(&run_dir);
    // While it runs, it is not abandoned.
    assert_eq!(
        worktree::abandoned(repo.path(), &data_dir(home.path())).unwrap(),
        vec![]
    );
    child.kill().unwrap();
    child.wait().unwrap();

    let log = branch_log(repo.path(), &info.branch, 2);
    assert_eq!(log[0].0, "round one");
    assert_eq!(
        file_at(repo.path(), log[0].1, "one.txt").as_deref(),
        Some("1\n")
    );
    assert!(!repo.path().join("one.txt").exists());

    // Killed, it is listed as abandoned.
    let listed = worktree::abandoned(repo.path(), &data_dir(home.path())).unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].run_id, info.run_id());
    assert_eq!(listed[0].branch.as_deref(), Some(info.branch.as_str()));
    assert_eq!(listed[0].path.as_deref(), Some(info.path.as_path()));

    // Resumed, it goes on in the same worktree and on the same branch.
    let mut cmd = Command::new(BIN);
    isolate(&mut cmd, home.path());
    let out = cmd
        .args(["--headless", "--resume", info.run_id()])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let resumed_events = events(&out.stdout);
    for warning in of_type(&resumed_events, "warning") {
        assert!(!warning.to_string().contains("HEAD moved"), "{warning}");
    }
    let resumed = info_of(&run_dir_of(&resumed_events));
    assert_eq!(resumed, info);
    let log = branch_log(repo.path(), &info.branch, 2);
    assert_eq!(log[0].0, "round three");
    assert_eq!(log[1].0, "round one");
    assert!(info.path.join("three.txt").exists());
    assert!(!repo.path().join("three.txt").exists());

    // `ralph-tui runs` lists the worktree left behind, and one command removes it.
    let runs = |args: &[&str]| {
        let mut cmd = Command::new(BIN);
        isolate(&mut cmd, home.path());
        let out = cmd.arg("runs").args(args).output().unwrap();
        assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let listing = runs(&[]);
    assert!(listing.contains(&info.branch), "{listing}");
    // Each run's line names the branch beside the repository; the note lists it once.
    let (_, note) = listing
        .split_once("worktrees and branches of runs")
        .unwrap_or_else(|| panic!("{listing}"));
    assert_eq!(note.matches(&info.branch).count(), 1, "{listing}");
    let pruned = runs(&["--prune", info.run_id()]);
    assert!(
        pruned.contains("removed the worktree and branch"),
        "{pruned}"
    );
    assert!(!info.path.exists());
    assert!(git2::Repository::open(repo.path())
        .unwrap()
        .find_branch(&info.branch, git2::BranchType::Local)
        .is_err());
    // The resumed run still names its branch beside the repository; no worktree is left.
    assert!(!runs(&[]).contains("worktrees and branches of runs"));
    assert_eq!(
        worktree::abandoned(repo.path(), &data_dir(home.path())).unwrap(),
        vec![]
    );
}

mod review_keys {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use ralph_tui::protocol::event::{Event, RunStatus};
    use ralph_tui::screens::model::{
        Effect, Msg, ReviewEffect, ReviewResult, Setup, WorktreeAction,
    };
    use ralph_tui::screens::state::State;
    use ralph_tui::screens::Theme;

    fn reviewing(worktree: Option<&str>) -> State {
        let setup = Setup {
            repo: "demo".into(),
            max_rounds: 2,
            worktree: worktree.map(str::to_string),
            ..Setup::default()
        };
        let mut state = State::new(setup, Some("obj".into()), Theme::default());
        state.update(Msg::Engine(Event::RunFinished {
            status: RunStatus::Complete,
            rounds_started: 1,
            report: None,
            last_valid_report: None,
            error: None,
            worker_reported: true,
            verification: None,
        }));
        state
    }

    fn press(state: &mut State, c: char) -> Vec<Effect> {
        state.update(Msg::Key(KeyEvent::new(
            KeyCode::Char(c),
            KeyModifiers::NONE,
        )))
    }

    #[test]
    fn a_worktree_runs_review_applies_and_discards_only_after_asking_twice() {
        let mut state = reviewing(Some("ralph/20260101-000000-abcd"));
        // Nothing is applied before the review shows the run's changes (a revert or a
        // discard reads them again).
        assert_eq!(press(&mut state, 'A'), vec![]);
        let notice = state.notice.clone().unwrap_or_default();
        assert!(notice.contains("not read yet"), "{notice}");
        state.update(Msg::DiffLoaded(
            ralph_tui::screens::model::DiffSource::Review,
            Ok(ralph_tui::workspace::DiffModel::default()),
        ));
        assert_eq!(
            press(&mut state, 'A'),
            vec![Effect::Review(ReviewEffect::Worktree(
                WorktreeAction::Apply
            ))]
        );
        assert_eq!(press(&mut state, 'X'), vec![]);
        let asked = state.notice.clone().unwrap_or_default();
        assert!(asked.contains("ralph/20260101-000000-abcd"), "{asked}");
        // Another key in between takes the first X back.
        press(&mut state, 'j');
        assert_eq!(press(&mut state, 'X'), vec![]);
        assert_eq!(
            press(&mut state, 'X'),
            vec![Effect::Review(ReviewEffect::Worktree(
                WorktreeAction::Discard
            ))]
        );
        state.update(Msg::Review(ReviewResult::WorktreeDone(
            WorktreeAction::Discard,
            Err("conflicts in a.txt".into()),
        )));
        assert_eq!(
            state.notice.as_deref(),
            Some("not done: conflicts in a.txt")
        );
    }

    #[test]
    fn a_run_without_a_worktree_has_no_worktree_keys() {
        let mut state = reviewing(None);
        assert_eq!(press(&mut state, 'A'), vec![]);
        assert_eq!(press(&mut state, 'X'), vec![]);
        assert_eq!(press(&mut state, 'X'), vec![]);
    }
}

#[test]
fn worktree_is_an_option_of_the_command_line_and_the_config_file() {
    use clap::Parser;
    use ralph_tui::cli::Cli;
    use ralph_tui::config::{Dirs, Settings};
    let repo = TempRepo::new();
    let home = tempfile::tempdir().unwrap();
    let dirs = Dirs {
        config: home.path().join("config"),
        data: home.path().join("data"),
        cache: home.path().join("cache"),
    };
    let resolve = |args: &[&str]| {
        let mut all = vec!["ralph-tui", "-C", repo.path().to_str().unwrap()];
        all.extend_from_slice(args);
        all.push("obj");
        Settings::resolve(Cli::try_parse_from(all).unwrap(), dirs.clone())
            .unwrap()
            .options
            .worktree
    };
    assert!(!resolve(&[]));
    assert!(resolve(&["--worktree"]));
    std::fs::create_dir_all(&dirs.config).unwrap();
    std::fs::write(dirs.config.join("config.toml"), "worktree = true\n").unwrap();
    assert!(resolve(&[]));
    assert!(!resolve(&["--worktree=false"]));
}

#[test]
fn on_an_unborn_branch_the_snapshot_has_no_parent_and_head_stays_unborn() {
    let dir = tempfile::tempdir().unwrap();
    let repo = git2::Repository::init(dir.path()).unwrap();
    std::fs::write(dir.path().join("first.txt"), "not committed yet\n").unwrap();
    let home = tempfile::tempdir().unwrap();
    let git_before = git_state(dir.path());

    let info =
        worktree::create(dir.path(), &data_dir(home.path()), "20260101-000000-0001").unwrap();
    assert_eq!(info.branch, "ralph/20260101-000000-0001");
    let snap = repo
        .find_commit(git2::Oid::from_str(&info.snapshot).unwrap())
        .unwrap();
    assert_eq!(snap.parent_count(), 0);
    assert_eq!(
        std::fs::read_to_string(info.path.join("first.txt")).unwrap(),
        "not committed yet\n"
    );
    assert!(repo.head().is_err(), "HEAD is born");
    info.commit_round("round 1: no report").unwrap();
    assert_eq!(
        branch_log(dir.path(), &info.branch, 1)[0].0,
        "round 1: no report"
    );

    // The library's one-call removal, for what no run directory names any more.
    worktree::remove(dir.path(), &data_dir(home.path()), "20260101-000000-0001").unwrap();
    assert_eq!(git_state(dir.path()), git_before);
    assert!(!info.path.exists());
}

#[test]
fn the_header_names_the_branch_the_worker_works_on() {
    use ralph_tui::screens::model::Setup;
    use ralph_tui::screens::state::State;
    use ralph_tui::screens::Theme;
    let setup = Setup {
        repo: "demo".into(),
        max_rounds: 2,
        worktree: Some("ralph/20260101-000000-abcd".into()),
        ..Setup::default()
    };
    let state = State::new(setup, Some("obj".into()), Theme::default());
    let area = ratatui::layout::Rect::new(0, 0, 120, 1);
    let mut buf = ratatui::buffer::Buffer::empty(area);
    ralph_tui::screens::run::header::render(&state, area, &mut buf);
    let text: String = (0..area.width)
        .map(|x| buf[(x, 0)].symbol().to_string())
        .collect();
    assert!(text.contains("demo ⎇ ralph/20260101-000000-abcd"), "{text}");
}

#[test]
fn a_worktree_run_refused_before_it_starts_leaves_no_worktree_and_no_branch() {
    let repo = busy_repo();
    let home = tempfile::tempdir().unwrap();
    let before = porcelain(repo.path());
    let files_before = tree_files(repo.path());
    // A context too small for the round prompt: refused after the worktree was made.
    let path = home.path().join("small.json");
    std::fs::write(
        &path,
        serde_json::to_vec(&json!({"ctx_size": 700,
            "rounds": [turns(&[complete_report("never")])]}))
        .unwrap(),
    )
    .unwrap();
    let out = ralph(home.path(), repo.path(), &path, &["objective"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 2, "{stderr}");
    assert!(stderr.contains("--ctx-size"), "{stderr}");
    assert_eq!(porcelain(repo.path()), before, "no ralph/ branch is left");
    assert_eq!(tree_files(repo.path()), files_before);
    let worktrees = data_dir(home.path()).join("worktrees");
    let left: Vec<_> = std::fs::read_dir(&worktrees)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "worktrees left: {left:?}");
    let r = git2::Repository::open(repo.path()).unwrap();
    assert!(r.worktrees().unwrap().is_empty());
}

/// An ignored `vendor -> <elsewhere>` symlink in the person's checkout; the worker empties
/// `.gitignore` and writes `vendor/evil.txt`. Apply and commit list it as a conflict (naming
/// the symlink) and write nothing, neither through the link nor anywhere else.
#[test]
fn apply_and_commit_never_write_through_a_symlink_in_the_checkout() {
    let repo = TempRepo::new();
    repo.write(".gitignore", "vendor\n");
    repo.commit_all("ignore vendor");
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), repo.path().join("vendor")).unwrap();
    let home = tempfile::tempdir().unwrap();
    let script = script(
        home.path(),
        vec![turns(&[
            write_file_call(".gitignore", ""),
            write_file_call("vendor/evil.txt", "planted\n"),
            complete_report("vendor/evil.txt written"),
        ])],
    );
    let out = ralph(home.path(), repo.path(), &script, &["plant it"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let info = info_of(&run_dir_of(&events(&out.stdout)));
    let gitignore = repo.read(".gitignore");

    match info.apply() {
        Err(WorktreeError::Conflicts(files)) => {
            assert_eq!(files.len(), 1, "{files:?}");
            assert!(
                files[0].starts_with("vendor/evil.txt (vendor is a symlink"),
                "{files:?}"
            );
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    match info.commit_on_current("commit it") {
        Err(WorktreeError::Conflicts(files)) => assert!(files[0].starts_with("vendor/evil.txt")),
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(
        std::fs::read_dir(elsewhere.path()).unwrap().count(),
        0,
        "written through the symlink"
    );
    assert_eq!(repo.read(".gitignore"), gitignore, "half applied");
    assert!(info.tip().is_ok(), "the branch is kept for later");
}

#[test]
fn runs_and_show_name_the_persons_repository_and_the_branch() {
    let repo = TempRepo::new();
    let home = tempfile::tempdir().unwrap();
    let info = finished_run(repo.path(), home.path());
    let run = |args: &[&str]| {
        let mut cmd = Command::new(BIN);
        isolate(&mut cmd, home.path());
        let out = cmd.args(args).output().unwrap();
        assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let listing = run(&["runs"]);
    let name = repo
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let line = listing
        .lines()
        .find(|l| l.starts_with(info.run_id()))
        .unwrap_or_else(|| panic!("{listing}"));
    assert!(
        line.contains(&format!("{name} ⎇ {}", info.branch)),
        "{line}"
    );
    let shown = run(&["show", info.run_id()]);
    assert_show_names_the_kept_worktree(&shown, &info.user_repo, &info.branch);
}

/// `show`'s text names the person's repository `top`, the worktree's `branch`, and says the
/// branch is still there.
pub(super) fn assert_show_names_the_kept_worktree(shown: &str, top: &Path, branch: &str) {
    assert!(
        shown.contains(&format!(
            "workspace: {} (worked in its own worktree on branch {branch}",
            top.display(),
        )),
        "{shown}"
    );
    assert!(
        shown.contains(&format!("branch: {branch} is still there")),
        "{shown}"
    );
}

#[test]
fn a_commit_refused_for_its_message_or_choice_applies_nothing() {
    let repo = TempRepo::new();
    let home = tempfile::tempdir().unwrap();
    let info = finished_run(repo.path(), home.path());
    let files_before = tree_files(repo.path());
    let shown = info.shown().unwrap();
    assert!(matches!(
        info.commit_shown("  \n", shown, None),
        Err(WorktreeError::Workspace(
            ralph_tui::workspace::WorkspaceError::EmptyMessage
        ))
    ));
    let none = std::collections::BTreeSet::new();
    assert!(matches!(
        info.commit_shown("a message", shown, Some(&none)),
        Err(WorktreeError::Workspace(
            ralph_tui::workspace::WorkspaceError::NothingChosen
        ))
    ));
    assert_eq!(
        tree_files(repo.path()),
        files_before,
        "applied before refusing"
    );
    assert!(info.is_left());
}
