//! What a person meets on first use, outside the review: `--help` that says each option in
//! whole sentences, a usage error that says how to quote an objective or which option was
//! meant, and the lines printed after a run.

use clap::{CommandFactory, Parser};
use ralph_tui::cli::{error_line, Cli};

/// Words a sentence cut at a line's end tends to stop on.
const DANGLING: [&str; 22] = [
    "the", "a", "an", "is", "are", "of", "to", "with", "and", "or", "while", "when", "in", "on",
    "for", "by", "from", "as", "that", "its", "your", "than",
];

#[test]
fn every_options_help_is_a_whole_sentence() {
    let command = Cli::command();
    let mut seen = 0;
    for arg in command.get_arguments() {
        let Some(help) = arg.get_help().map(|h| h.to_string()) else {
            continue;
        };
        seen += 1;
        let sentence = help.split(" [default:").next().unwrap_or(&help).trim();
        let last = sentence
            .rsplit(|c: char| c.is_whitespace())
            .next()
            .unwrap_or("")
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase();
        assert!(
            !DANGLING.contains(&last.as_str()),
            "--{}: the help stops mid-sentence: {help}",
            arg.get_id()
        );
        for (open, close) in [('(', ')'), ('[', ']')] {
            assert_eq!(
                help.matches(open).count(),
                help.matches(close).count(),
                "--{}: unbalanced {open}{close}: {help}",
                arg.get_id()
            );
        }
        assert_eq!(
            help.matches('`').count() % 2,
            0,
            "--{}: unbalanced `: {help}",
            arg.get_id()
        );
    }
    assert!(seen > 20, "only {seen} options have help");
    // The two the first use found cut off, whole.
    let help_of = |id: &str| {
        command
            .get_arguments()
            .find(|a| a.get_id() == id)
            .and_then(|a| a.get_help())
            .map(|h| h.to_string())
            .unwrap_or_default()
    };
    assert!(
        help_of("model").contains("server's model name"),
        "{}",
        help_of("model")
    );
    let notify = help_of("notify");
    assert!(!notify.contains("terminal is [default"), "{notify}");
}

fn usage_error(args: &[&str]) -> String {
    let mut all = vec!["ralph-tui"];
    all.extend(args);
    match Cli::try_parse_from(all) {
        Ok(cli) => panic!("parsed: {cli:?}"),
        Err(e) => error_line(&e),
    }
}

#[test]
fn an_unquoted_objective_is_told_to_quote_it_or_use_a_file() {
    let line = usage_error(&["fix", "the", "bug"]);
    assert!(line.contains("unexpected argument 'the'"), "{line}");
    assert!(line.contains("goes in quotes"), "{line}");
    assert!(line.contains("-f FILE"), "{line}");
    assert!(!line.contains('\n'), "{line}");
}

#[test]
fn a_mistyped_option_gets_clap_s_suggestion() {
    let line = usage_error(&["--max-round", "3", "x"]);
    assert!(line.contains("did you mean '--max-rounds'?"), "{line}");
    assert!(!line.contains("quotes"), "{line}");
    let line = usage_error(&["--headles", "x"]);
    assert!(line.contains("did you mean '--headless'?"), "{line}");
}

#[test]
fn a_flag_that_needs_another_names_it() {
    for args in [
        ["ralph-tui", "runs", "--older-than", "3d"].as_slice(),
        &["ralph-tui", "runs", "--all-finished"],
        &["ralph-tui", "runs", "2026"],
    ] {
        let line = match Cli::try_parse_from(args) {
            Ok(cli) => panic!("parsed: {cli:?}"),
            Err(e) => error_line(&e),
        };
        assert!(
            line.contains("were not provided: --prune"),
            "{args:?}: {line}"
        );
        assert!(!line.contains('\n'), "{line}");
    }
}

#[test]
fn short_and_long_help_open_alike_and_say_each_default_once() {
    let short = Cli::command().render_help().to_string();
    let long = Cli::command().render_long_help().to_string();
    let first = |text: &str| {
        text.lines()
            .next()
            .unwrap_or("")
            .trim_end_matches('.')
            .to_string()
    };
    assert_eq!(first(&short), first(&long));
    for sub in ["show", "replay"] {
        let mut command = Cli::command();
        let help = command
            .find_subcommand_mut(sub)
            .unwrap()
            .render_long_help()
            .to_string();
        assert_eq!(help.matches("[default: last]").count(), 1, "{help}");
    }
}

#[test]
fn subcommands_are_commands_and_a_command_word_is_not_an_objective() {
    use ralph_tui::cli::{mistaken_command, History};
    let parsed = |args: &[&str]| {
        let all: Vec<std::ffi::OsString> = std::iter::once("ralph-tui")
            .chain(args.iter().copied())
            .map(Into::into)
            .collect();
        let cli = Cli::try_parse_from(&all).unwrap();
        let refused = mistaken_command(&all, &cli);
        (cli, refused)
    };
    assert!(matches!(
        parsed(&["runs"]).0.command,
        Some(History::Runs { .. })
    ));
    assert!(
        matches!(parsed(&["show", "abc"]).0.command, Some(History::Show { run }) if run == "abc")
    );
    let (cli, refused) = parsed(&["fix the bug"]);
    assert_eq!(
        (cli.objective.as_deref(), refused),
        (Some("fix the bug"), None)
    );
    for word in ["status", "run", "Help"] {
        let (_, refused) = parsed(&[word]);
        assert!(
            refused.is_some_and(|r| r.contains("not a ralph-tui command")),
            "{word}"
        );
    }
    // After `--` every word is the objective, a subcommand's name too.
    for word in ["status", "runs"] {
        let (cli, refused) = parsed(&["--", word]);
        assert_eq!(
            (cli.command.is_none(), cli.objective.as_deref(), refused),
            (true, Some(word), None)
        );
    }
    // `help` is clap's own, and --help lists the commands.
    let help = Cli::try_parse_from(["ralph-tui", "help"]).unwrap_err();
    assert_eq!(help.kind(), clap::error::ErrorKind::DisplayHelp);
    let text = Cli::command().render_long_help().to_string();
    assert!(text.contains("Commands (instead of a run):"), "{text}");
    for sub in ["runs", "show", "replay", "help"] {
        assert!(text.contains(&format!("\n  {sub} ")), "{sub}: {text}");
    }
}

/// The binary, headless, with HOME under `home`: its exit code and stderr.
fn headless_in(home: &std::path::Path, args: &[&str]) -> (i32, String) {
    let mut cmd = std::process::Command::new(super::common::BIN);
    super::common::isolate(&mut cmd, home);
    let out = cmd.arg("--headless").args(args).output().unwrap();
    (
        super::common::code(&out),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn errors_say_what_is_wrong_in_the_person_s_terms() {
    let home = tempfile::tempdir().unwrap();
    // Headless with no objective: nothing to type it into.
    let repo = super::common::TempRepo::new();
    let (code, err) = headless_in(home.path(), &["-C", repo.path().to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("-f FILE") && !err.contains("TUI\n") && !err.contains("type it in the TUI"),
        "{err}"
    );
    // An objective given to --resume.
    let (code, err) = headless_in(home.path(), &["--resume", "fix it"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("'fix it' is not a run") && err.contains("leave --resume out"),
        "{err}"
    );
    // A directory given as the model.
    let err = ralph_tui::model_file::check(home.path())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("is a directory") && !err.contains("GGUF header"),
        "{err}"
    );
    // A config value of the wrong type, and a script round of the wrong shape.
    let path = home.path().join("config.toml");
    std::fs::write(&path, "max_rounds = \"four\"\n").unwrap();
    let err = ralph_tui::config::load_config(&path, true)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("a whole number") && !err.contains("u32"),
        "{err}"
    );
    let err =
        ralph_tui::llm::script::ScriptBackend::parse(&path, r#"{"rounds": [{"turn": ["x"]}]}"#)
            .unwrap_err();
    assert!(
        !err.contains("untagged") && !err.contains("ScriptRound"),
        "{err}"
    );
    assert!(err.contains("\"turns\""), "{err}");
}

#[test]
fn a_workspace_the_worker_cannot_write_is_refused_at_start() {
    let repo = super::common::TempRepo::new();
    let home = tempfile::tempdir().unwrap();
    // Read-only for everyone, root too: a read-only bind mount where mounting is allowed,
    // else no write permission (which binds every user but root).
    let path = repo.path().to_path_buf();
    let mounted = nix::unistd::geteuid().is_root()
        && std::process::Command::new("mount")
            .args(["--bind"])
            .arg(&path)
            .arg(&path)
            .status()
            .is_ok_and(|s| s.success())
        && std::process::Command::new("mount")
            .args(["-o", "remount,bind,ro"])
            .arg(&path)
            .status()
            .is_ok_and(|s| s.success());
    let mode = |m: u32| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(m)).unwrap();
    };
    if !mounted {
        assert!(
            !nix::unistd::geteuid().is_root(),
            "root but no mount namespace to bind in"
        );
        mode(0o555);
    }
    let script = super::common::script(
        home.path(),
        vec![super::common::turns(&[super::common::complete_only(
            "done",
        )])],
    );
    let backend = format!("script:{}", script.display());
    let run_dir = home.path().join("run");
    let args = [
        "-C",
        path.to_str().unwrap(),
        "--run-dir",
        run_dir.to_str().unwrap(),
        "--backend",
        &backend,
    ];
    let (code, err) = headless_in(home.path(), &[&args[..], &["fix it"]].concat());
    let (ro_code, ro_err) = headless_in(
        home.path(),
        &[&args[..], &["--sandbox", "read-only", "look around"]].concat(),
    );
    if mounted {
        let _ = std::process::Command::new("umount").arg(&path).status();
    } else {
        mode(0o755);
    }
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("is not writable") && err.contains("--sandbox read-only"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    // A run that only reads may go on.
    assert_ne!(ro_code, 2, "{ro_err}");
}

#[test]
fn a_truncated_model_is_named_with_the_tensor_it_cuts_before_llama_cpp_loads_it() {
    use std::io::{Read, Write};
    // The test model, which `make test` fetches before the deterministic tests.
    let model = ralph_tui::config::Dirs::discover().unwrap().test_model();
    assert!(
        model.is_file(),
        "no test model at {}: run `make model`",
        model.display()
    );
    let len = std::fs::metadata(&model).unwrap().len();
    // The sizes read from the header account for the whole file: every tensor type sized.
    let (tensor, end) = ralph_tui::model_file::data_end(&model).unwrap().unwrap();
    assert!(
        end <= len && len - end < 4096,
        "{tensor} ends at {end} of {len}"
    );
    assert!(ralph_tui::model_file::check(&model).is_ok());
    // Cut in half: refused with the cause, before anything is loaded.
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut.gguf");
    let mut head = Vec::new();
    std::fs::File::open(&model)
        .unwrap()
        .take(len / 2)
        .read_to_end(&mut head)
        .unwrap();
    std::fs::File::create(&cut)
        .unwrap()
        .write_all(&head)
        .unwrap();
    let err = ralph_tui::model_file::check(&cut).unwrap_err().to_string();
    assert!(err.contains("truncated: tensor '"), "{err}");
    assert!(
        err.contains(&format!("the file has {} bytes", len / 2)),
        "{err}"
    );
    assert!(err.contains("ralph-tui model fetch"), "{err}");
}

#[test]
fn a_tui_run_without_a_terminal_leaves_no_run_directory() {
    let home = tempfile::tempdir().unwrap();
    let repo = super::common::TempRepo::new();
    let mut cmd = std::process::Command::new(super::common::BIN);
    super::common::isolate(&mut cmd, home.path());
    let out = cmd
        .args(["-C", repo.path().to_str().unwrap(), "fix it"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(super::common::code(&out), 2, "{err}");
    assert!(err.contains("the TUI needs a terminal"), "{err}");
    let runs = home.path().join("data").join("ralph-tui").join("runs");
    let left: Vec<_> = std::fs::read_dir(&runs)
        .map(|d| d.collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "run directories left: {left:?}");
}

mod streaming {
    use crossterm::event::KeyCode;
    use ralph_tui::screens::state::Overlay;
    use ralph_tui::screens::Theme;

    use crate::suite::ui::fixtures::*;

    #[test]
    fn before_the_first_tool_call_enter_and_the_card_keys_say_why_nothing_opens() {
        let mut state = new_state(Theme::default());
        start_round(&mut state, 1);
        tokens(&mut state, 1, "I will look at the files first, then ");
        for code in [KeyCode::Enter, KeyCode::Char('['), KeyCode::Char(']')] {
            press(&mut state, code);
            assert!(state.overlay().is_none());
            let notice = state.notice.clone().unwrap_or_default();
            assert!(notice.starts_with("no tool call yet"), "{code:?}: {notice}");
        }
        press(&mut state, KeyCode::Char('e'));
        let notice = state.notice.clone().unwrap_or_default();
        assert!(notice.starts_with("nothing is folded yet"), "{notice}");
    }

    #[test]
    fn once_a_card_is_there_enter_opens_it() {
        let mut state = mid_run(Theme::default());
        // While the next turn streams, the cards so far still open.
        tokens(&mut state, 3, "Now I will write the file ");
        press(&mut state, KeyCode::Char('['));
        assert!(state.notice.is_none(), "{:?}", state.notice);
        press(&mut state, KeyCode::Enter);
        assert!(
            matches!(state.overlay(), Some(Overlay::Card(_))),
            "{:?}",
            state.notice
        );
    }
}

mod editor {
    use crossterm::event::KeyCode;
    use ralph_tui::screens::{Msg, Phase, State, Theme};

    use crate::suite::ui::fixtures::*;

    #[test]
    fn esc_over_a_typed_objective_asks_before_throwing_it_away() {
        let mut state = State::new(setup(), None, Theme::default());
        // Nothing typed: Esc quits at once.
        assert!(!press(&mut state, KeyCode::Esc).is_empty());
        let mut state = State::new(setup(), None, Theme::default());
        state.update(Msg::Paste("Make the slug tests pass.".into()));
        assert!(press(&mut state, KeyCode::Esc).is_empty(), "quit at once");
        assert_eq!(state.phase, Phase::Editing);
        let text = screen(&mut state, 80, 24);
        assert!(text.contains("Esc again quits"), "{text}");
        insta::assert_snapshot!("objective_editor_esc_asks_80x24", text);
        assert!(
            !press(&mut state, KeyCode::Esc).is_empty(),
            "the second Esc quits"
        );
    }
}

/// A run directory left by a process killed in the objective editor holds only its log:
/// `runs` says so and `runs --prune` removes it, never one a live process holds, nor a
/// directory with anything else in it.
#[test]
fn run_directories_where_no_run_started_are_named_and_pruned() {
    use crate::suite::common::{code, isolate, BIN};
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data").join("ralph-tui");
    let runs = data.join("runs");
    let leftover = runs.join("20260101-000000-aaaa");
    let held = runs.join("20260101-000000-bbbb");
    let other = runs.join("not-a-run");
    for dir in [&leftover, &held] {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("ralph-tui.log"), "log\n").unwrap();
    }
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("notes.txt"), "mine\n").unwrap();
    std::fs::create_dir_all(data.join("locks")).unwrap();
    std::fs::write(
        data.join("locks").join("a-lock"),
        format!(
            "run 20260101-000000-bbbb, pid {}, editing\n",
            std::process::id()
        ),
    )
    .unwrap();
    let run = |args: &[&str]| {
        let mut cmd = std::process::Command::new(BIN);
        isolate(&mut cmd, home.path());
        let out = cmd.args(args).output().unwrap();
        assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let listing = run(&["runs"]);
    assert!(
        listing.contains("1 run directory holds only a log"),
        "{listing}"
    );
    let pruned = run(&["runs", "--prune", "--all-finished"]);
    assert!(pruned.contains("removed 1 run directory"), "{pruned}");
    assert!(!leftover.exists());
    assert!(held.exists(), "a live process holds it");
    assert!(other.exists(), "not only a log");
}
