//! Options, written once: every option set on the command line or in `config.toml` resolves
//! the same, the command line wins over the file, and a bad file or value is a clear error
//! that names the file and line, or the allowed values.

use std::collections::BTreeSet;
use std::path::Path;

use clap::{CommandFactory, Parser};
use ralph_tui::cli::{error_line, Cli};
use ralph_tui::config::{load_config, Dirs, Settings};
use ralph_tui::options::Options;

use crate::suite::common::{code, headless, TempRepo};

/// One option: its config key, command-line arguments and TOML value that set it away from
/// its default, and another command-line setting that differs from the first.
struct Case {
    key: &'static str,
    cli: &'static [&'static str],
    toml: &'static str,
    other: &'static [&'static str],
}

const fn case(
    key: &'static str,
    cli: &'static [&'static str],
    toml: &'static str,
    other: &'static [&'static str],
) -> Case {
    Case {
        key,
        cli,
        toml,
        other,
    }
}

const CASES: &[Case] = &[
    case("max_rounds", &["-n", "3"], "3", &["--max-rounds", "64"]),
    case(
        "model",
        &["-m", "a.gguf"],
        "\"a.gguf\"",
        &["--model", "b.gguf"],
    ),
    case(
        "backend",
        &["--backend", "script:a.json"],
        "\"script:a.json\"",
        &["--backend", "llama"],
    ),
    case(
        "run_dir",
        &["--run-dir", "runs"],
        "\"runs\"",
        &["--run-dir", "r2"],
    ),
    case(
        "verify",
        &["--verify", "make test"],
        "\"make test\"",
        &["--verify", "true"],
    ),
    case(
        "check",
        &["--check", "python3 -m unittest"],
        "\"python3 -m unittest\"",
        &["--check", "off"],
    ),
    case(
        "check_on_change",
        &["--check-on-change=false"],
        "false",
        &["--check-on-change"],
    ),
    case(
        "observe",
        &["--observe", "off"],
        "\"off\"",
        &["--observe", "on"],
    ),
    case(
        "sandbox",
        &["--sandbox", "read-only"],
        "\"read-only\"",
        &["--sandbox", "off"],
    ),
    case(
        "approval",
        &["--approval", "deny"],
        "\"deny\"",
        &["--approval", "ask"],
    ),
    case("network", &["--network"], "true", &["--network=false"]),
    case("worktree", &["--worktree"], "true", &["--worktree=false"]),
    case(
        "no_prefix_cache",
        &["--no-prefix-cache"],
        "true",
        &["--no-prefix-cache=false"],
    ),
    case(
        "prefix_cache_max_mib",
        &["--prefix-cache-max-mib", "64"],
        "64",
        &["--prefix-cache-max-mib", "0"],
    ),
    case(
        "command_timeout",
        &["--command-timeout", "5"],
        "5",
        &["--command-timeout", "6"],
    ),
    case(
        "max_turns",
        &["--max-turns", "3"],
        "3",
        &["--max-turns", "4"],
    ),
    case(
        "stall_rounds",
        &["--stall-rounds", "2"],
        "2",
        &["--stall-rounds", "0"],
    ),
    case(
        "round_timeout",
        &["--round-timeout", "60"],
        "60",
        &["--round-timeout", "61"],
    ),
    case(
        "token_budget",
        &["--token-budget", "900"],
        "900",
        &["--token-budget", "901"],
    ),
    case(
        "chat_format",
        &["--chat-format", "llama3"],
        "\"llama3\"",
        &["--chat-format", "glm"],
    ),
    case(
        "ctx_size",
        &["--ctx-size", "512"],
        "512",
        &["--ctx-size", "513"],
    ),
    case("threads", &["--threads", "3"], "3", &["--threads", "5"]),
    case(
        "gpu_layers",
        &["--gpu-layers", "0"],
        "0",
        &["--gpu-layers", "9"],
    ),
    case(
        "batch_size",
        &["--batch-size", "8"],
        "8",
        &["--batch-size", "9"],
    ),
    case(
        "max_tokens",
        &["--max-tokens", "77"],
        "77",
        &["--max-tokens", "78"],
    ),
    case(
        "temperature",
        &["--temperature", "0.25"],
        "0.25",
        &["--temperature", "0"],
    ),
    case("top_k", &["--top-k", "7"], "7", &["--top-k", "8"]),
    case("top_p", &["--top-p", "0.5"], "0.5", &["--top-p", "0.6"]),
    case("min_p", &["--min-p", "0.1"], "0.1", &["--min-p", "0.2"]),
    case(
        "repeat_penalty",
        &["--repeat-penalty", "1.3"],
        "1.3",
        &["--repeat-penalty", "1.4"],
    ),
    case("seed", &["--seed", "7"], "7", &["--seed", "8"]),
    case(
        "api_key_env",
        &["--api-key-env", "SERVER_KEY"],
        "\"SERVER_KEY\"",
        &["--api-key-env", "OTHER_KEY"],
    ),
    case(
        "request_timeout",
        &["--request-timeout", "30"],
        "30",
        &["--request-timeout", "31"],
    ),
    case(
        "notify",
        &["--notify", "off"],
        "\"off\"",
        &["--notify", "bell"],
    ),
];

fn cli(args: &[&str]) -> Cli {
    Cli::try_parse_from(std::iter::once("ralph-tui").chain(args.iter().copied()))
        .unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn dirs(home: &Path) -> Dirs {
    Dirs {
        config: home.join("config"),
        data: home.join("data"),
        cache: home.join("cache"),
    }
}

/// The settings a run gets from `args` with `config.toml` (in the default place) holding
/// `toml`, shown as their `Debug` text so two of them compare field by field.
fn settings(args: &[&str], toml: &str) -> String {
    let home = tempfile::tempdir().unwrap();
    let dirs = dirs(home.path());
    std::fs::create_dir_all(&dirs.config).unwrap();
    std::fs::write(dirs.config.join("config.toml"), toml).unwrap();
    let mut settings =
        Settings::resolve(cli(args), dirs).unwrap_or_else(|e| panic!("{args:?}: {e}"));
    // Where a value came from differs by design (tests/suite/model_defaults.rs checks it).
    settings.sources.clear();
    format!("{settings:?}").replace(&home.path().display().to_string(), "<home>")
}

fn config_error(toml: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, toml).unwrap();
    match load_config(&path, true) {
        Ok(options) => panic!("{toml:?} loaded as {options:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_table_covers_every_option() {
    let table: BTreeSet<&str> = CASES.iter().map(|c| c.key).collect();
    let options: BTreeSet<&str> = Options::KEYS.iter().copied().collect();
    assert_eq!(table, options);
}

#[test]
fn every_option_resolves_the_same_from_the_command_line_and_the_config_file() {
    let defaults = settings(&[], "");
    for case in CASES {
        let from_cli = settings(case.cli, "");
        let from_file = settings(&[], &format!("{} = {}\n", case.key, case.toml));
        assert_eq!(from_cli, from_file, "{}", case.key);
        assert_ne!(from_cli, defaults, "{} must change the settings", case.key);
    }
}

#[test]
fn the_command_line_wins_over_the_config_file_for_every_option() {
    for case in CASES {
        let file = format!("{} = {}\n", case.key, case.toml);
        let cli_only = settings(case.other, "");
        assert_eq!(settings(case.other, &file), cli_only, "{}", case.key);
        assert_ne!(settings(&[], &file), cli_only, "{}", case.key);
    }
    // All at once, through `--config FILE`.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mine.toml");
    let file: String = CASES
        .iter()
        .map(|c| format!("{} = {}\n", c.key, c.toml))
        .collect();
    std::fs::write(&path, file).unwrap();
    let mut args: Vec<&str> = CASES.iter().flat_map(|c| c.other.iter().copied()).collect();
    let all_cli = settings(&args, "");
    let path_arg = path.display().to_string();
    args.extend(["--config", path_arg.as_str()]);
    assert_eq!(settings(&args, ""), all_cli);
}

#[test]
fn an_unknown_key_names_the_file_the_line_and_the_key() {
    let err = config_error("max_rounds = 2\n\nbogus = 1\n");
    assert!(err.contains("config.toml"), "{err}");
    assert!(err.contains("line 3"), "{err}");
    assert!(err.contains("bogus"), "{err}");
    let err = config_error("max_rounds = 1\nbogus = [\n");
    assert!(
        err.contains("line 2"),
        "a problem at the end is on the last line: {err}"
    );
    assert_eq!(err.lines().count(), 1, "one line: {err}");
}

#[test]
fn a_bad_value_in_the_config_file_names_the_file_line_and_what_is_allowed() {
    let err = config_error("seed = 1\nsandbox = \"nope\"\n");
    assert!(
        err.contains("config.toml") && err.contains("line 2"),
        "{err}"
    );
    for allowed in ["workspace-write", "read-only", "off"] {
        assert!(err.contains(allowed), "{err}");
    }
    let err = config_error("approval = \"sometimes\"\n");
    for allowed in ["auto", "ask", "deny"] {
        assert!(err.contains(allowed), "{err}");
    }
    let err = config_error("max_rounds = 65\n");
    assert!(err.contains("line 1") && err.contains("1 to 64"), "{err}");
    let err = config_error("backend = \"gpt\"\n");
    assert!(err.contains("unknown backend 'gpt'"), "{err}");
    let err = config_error("chat_format = \"nope\"\n");
    assert!(
        err.contains("unknown chat format") && err.contains("hermes"),
        "{err}"
    );
}

#[test]
fn a_bad_value_on_the_command_line_names_what_is_allowed() {
    let line = |args: &[&str]| match Cli::try_parse_from(
        std::iter::once("ralph-tui").chain(args.iter().copied()),
    ) {
        Ok(cli) => panic!("{args:?} parsed as {cli:?}"),
        Err(e) => error_line(&e),
    };
    let err = line(&["--sandbox", "nope"]);
    assert!(err.contains("--sandbox"), "{err}");
    for allowed in ["workspace-write", "read-only", "off"] {
        assert!(err.contains(allowed), "{err}");
    }
    let err = line(&["--approval", "sometimes"]);
    assert!(err.contains("auto, ask, deny"), "{err}");
    let err = line(&["--chat-format", "nope"]);
    assert!(err.contains("hermes") && err.contains("auto"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn the_binary_says_a_bad_mode_in_one_line_and_exits_two() {
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    for (args, needle) in [
        (
            &["--sandbox", "nope", "obj"][..],
            "workspace-write, read-only, off",
        ),
        (&["--approval", "nope", "obj"][..], "auto, ask, deny"),
    ] {
        let out = headless(repo.path(), &tmp.path().join("run"), args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(code(&out), 2, "{err}");
        assert!(err.contains(needle), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    let cfg = tmp.path().join("config/ralph-tui");
    std::fs::create_dir_all(&cfg).unwrap();
    std::fs::write(cfg.join("config.toml"), "sandbox = \"nope\"\n").unwrap();
    let out = headless(repo.path(), &tmp.path().join("run"), &["obj"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 2, "{err}");
    assert!(
        err.contains("config.toml") && err.contains("line 1"),
        "{err}"
    );
    assert!(err.contains("workspace-write"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(!tmp.path().join("run").exists());
}

#[test]
fn help_gives_each_option_its_default_and_each_mode_its_values() {
    // Wide enough that no help line wraps.
    let command = || Cli::command().term_width(1000).max_term_width(1000);
    let long = command().render_long_help().to_string();
    for needle in [
        "Most rounds to run, 1..=64 [default: 8]",
        "[default: llama]",
        "[default: workspace-write]",
        "Commands may write nowhere",
        "Ask a person before each command (TUI only)",
        "[default: 120]",
        "[default: the model's, else 0.2]",
        "[default: 1234]",
        "Exit codes: 0 complete",
    ] {
        assert!(long.contains(needle), "{needle} missing from:\n{long}");
    }
    let short = command().render_help().to_string();
    assert!(
        short.contains("[possible values: workspace-write, read-only, off]"),
        "{short}"
    );
    assert!(short.len() < long.len(), "-h is the summary");
}

#[test]
fn every_objective_is_checked_where_it_is_normalized() {
    // The argument, `-f FILE` and the TUI editor all pass through `normalize_objective`.
    assert!(ralph_tui::intake::normalize_objective("a\0b").is_err());
    assert_eq!(
        ralph_tui::intake::normalize_objective(" a\tb \n").unwrap(),
        "a\tb"
    );
}

/// The options the table marks `@inference` are what a backend is given, each under its
/// own name and with its own value: a backend setting added or renamed on one side alone
/// fails here.
#[test]
fn the_inference_group_is_what_a_backend_is_given() {
    let home = tempfile::tempdir().unwrap();
    let cli = cli(&["--gpu-layers", "3", "--seed", "7"]);
    let resolved = Settings::resolve(cli, dirs(home.path())).unwrap().options;
    let given = serde_json::to_value(ralph_tui::app::inference(&resolved)).unwrap();
    let options = serde_json::to_value(resolved.to_options()).unwrap();
    let given = given.as_object().unwrap();
    let names: BTreeSet<&str> = given.keys().map(String::as_str).collect();
    assert_eq!(names, Options::INFERENCE.iter().copied().collect());
    for (name, value) in given {
        assert_eq!(Some(value), options.get(name), "{name}");
    }
    assert_eq!(Options::INFERENCE.len(), 11);
}
