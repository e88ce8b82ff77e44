//! Every command the README and `docs/` show is checked here, so none rots: each
//! `ralph-tui …` command parses with today's command line (placeholders such as `RUN` or
//! `FILE` filled in), `--help` and `runs` really run, each `make` target exists, `cargo
//! install --path .` names this package's binary, each `config.toml` example loads and each
//! script example is a script the script backend takes.

use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Parser;
use ralph_tui::cli::Cli;

use super::common::*;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The README and every page under `docs/`.
fn pages() -> Vec<(PathBuf, String)> {
    let root = Path::new(ROOT);
    let mut paths = vec![root.join("README.md")];
    if let Ok(entries) = std::fs::read_dir(root.join("docs")) {
        let mut docs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .collect();
        docs.sort();
        paths.extend(docs);
    }
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect()
}

/// A fenced block: its language and its text.
struct Block {
    lang: String,
    text: String,
}

fn blocks(page: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for line in page.lines() {
        let fence = line.trim_start().starts_with("```") && !line.contains("````");
        match (&mut open, fence) {
            (None, true) => {
                open = Some(Block {
                    lang: line.trim_start().trim_start_matches('`').trim().to_string(),
                    text: String::new(),
                })
            }
            (Some(_), true) => out.extend(open.take()),
            (Some(block), false) => {
                block.text.push_str(line);
                block.text.push('\n');
            }
            (None, false) => {}
        }
    }
    out
}

/// The commands a page shows: lines of its shell blocks (continued lines joined, comments
/// dropped) and inline code that starts with `ralph-tui ` or `make `.
fn commands(page: &str) -> Vec<String> {
    let mut out = Vec::new();
    for block in blocks(page) {
        if matches!(block.lang.as_str(), "toml" | "json") {
            continue;
        }
        let joined = block.text.replace("\\\n", " ");
        for line in joined.lines() {
            let line = match line.find(" #") {
                Some(at) => &line[..at],
                None => line,
            };
            let line = line.trim();
            if !line.is_empty() && !line.starts_with('#') {
                out.push(line.to_string());
            }
        }
    }
    let mut rest = page;
    while let Some(start) = rest.find('`') {
        let after = &rest[start + 1..];
        let Some(end) = after.find('`') else { break };
        let code = &after[..end];
        if code.starts_with("ralph-tui ") || code == "ralph-tui" || code.starts_with("make ") {
            out.push(code.to_string());
        }
        rest = &after[end + 1..];
    }
    out
}

/// A placeholder's stand-in.
fn filled(word: &str) -> Option<&'static str> {
    Some(match word {
        "RUN" => "last",
        "FILE" => "objective.txt",
        "PATH" => "model.gguf",
        "DIR" => "somewhere",
        "CMD" => "true",
        "N" | "X" | "K" | "T" | "P" => "2",
        "URL" => "http://127.0.0.1:8080/v1",
        "NAME" => "a-model",
        "SECS" => "5",
        "AGE" => "30d",
        "KIND" => "llama",
        "MODE" => "off",
        "POLICY" => "auto",
        "F" => "auto",
        "VAR" => "MY_KEY",
        "OBJECTIVE" => "an objective",
        "OPTIONS" => "",
        _ => return None,
    })
}

/// Words as a shell splits them (quotes kept together, placeholders filled in, `[…]`
/// optional parts taken).
fn words(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for c in command.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                any = true;
            }
            (None, c) if c.is_whitespace() => {
                if any || !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
                any = false;
            }
            (None, c) => word.push(c),
        }
    }
    if any || !word.is_empty() {
        out.push(word);
    }
    out.into_iter()
        .map(|w| w.trim_matches(|c| c == '[' || c == ']').to_string())
        .filter_map(|w| match filled(&w) {
            Some("") => None,
            Some(value) => Some(value.to_string()),
            None => Some(w.replace('…', "an objective")),
        })
        .collect()
}

/// Whether `args` (program name first) parse as a run or a subcommand today.
fn parses(args: &[String]) -> Result<(), String> {
    use clap::error::ErrorKind;
    let result = Cli::try_parse_from(args).map(|_| ());
    match result {
        Ok(()) => Ok(()),
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

fn make_targets() -> Vec<String> {
    let makefile = std::fs::read_to_string(Path::new(ROOT).join("Makefile")).unwrap();
    makefile
        .lines()
        .filter_map(|l| l.split_once(':').map(|(t, _)| t))
        .filter(|t| !t.is_empty() && !t.contains([' ', '\t', '.', '$', '=']))
        .map(str::to_string)
        .collect()
}

#[test]
fn every_command_in_the_readme_and_docs_is_one_that_works_today() {
    let targets = make_targets();
    let mut checked = 0;
    let mut problems = Vec::new();
    for (path, page) in pages() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        for command in commands(&page) {
            let args = words(&command);
            match args.first().map(String::as_str) {
                Some("ralph-tui") if args.len() > 1 || command == "ralph-tui" => {
                    if let Err(e) = parses(&args) {
                        problems.push(format!("{name}: `{command}`: {e}"));
                    }
                    checked += 1;
                }
                Some("make") => {
                    let target = args.get(1).map(String::as_str).unwrap_or("");
                    if !targets.iter().any(|t| t == target) {
                        problems.push(format!("{name}: `{command}`: no such make target"));
                    }
                    checked += 1;
                }
                Some("cargo") if args.get(1).map(String::as_str) == Some("install") => {
                    let manifest =
                        std::fs::read_to_string(Path::new(ROOT).join("Cargo.toml")).unwrap();
                    assert!(manifest.contains("[[bin]]\nname = \"ralph-tui\""));
                    checked += 1;
                }
                _ => {}
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(checked >= 15, "only {checked} commands found");
}

#[test]
fn every_config_and_script_example_in_the_readme_and_docs_loads() {
    let tmp = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for (path, page) in pages() {
        for (i, block) in blocks(&page).into_iter().enumerate() {
            let file = tmp.path().join(format!("example-{i}.{}", block.lang));
            match block.lang.as_str() {
                "toml" => {
                    std::fs::write(&file, &block.text).unwrap();
                    if let Err(e) = ralph_tui::config::load_config(&file, true) {
                        panic!("{}: {e}\n{}", path.display(), block.text);
                    }
                    checked += 1;
                }
                "json" if block.text.contains("\"rounds\"") => {
                    std::fs::write(&file, &block.text).unwrap();
                    if let Err(e) = ralph_tui::llm::script::ScriptBackend::load(&file) {
                        panic!("{}: {e}\n{}", path.display(), block.text);
                    }
                    checked += 1;
                }
                _ => {}
            }
        }
    }
    assert!(checked >= 3, "only {checked} examples found");
}

#[test]
fn the_readmes_harmless_commands_run() {
    let home = tempfile::tempdir().unwrap();
    for args in [
        &["--help"][..],
        &["runs"],
        &["runs", "--help"],
        &["show", "--help"],
    ] {
        let mut cmd = Command::new(BIN);
        isolate(&mut cmd, home.path());
        let out = cmd.args(args).output().unwrap();
        assert_eq!(
            code(&out),
            0,
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn the_check_itself_finds_commands_and_refuses_a_stale_one() {
    let page = "Run `ralph-tui runs --prune RUN` or\n```sh\nmake run   # comment\nralph-tui --resume RUN \\\n  -n 4\n```\n";
    assert_eq!(
        commands(page),
        vec![
            "make run".to_string(),
            "ralph-tui --resume RUN    -n 4".to_string(),
            "ralph-tui runs --prune RUN".to_string(),
        ]
    );
    assert_eq!(
        words("ralph-tui replay RUN [--speed X]"),
        vec!["ralph-tui", "replay", "last", "--speed", "2"]
    );
    assert!(parses(&words("ralph-tui --resume RUN -n 4")).is_ok());
    assert!(parses(&words("ralph-tui --max-round 4 \"…\"")).is_err());
}

#[test]
fn the_readmes_run_screen_is_the_run_screens_snapshot() {
    // The first screen of the README shows the run screen; it is the test suite's own
    // snapshot of it, so a change to the screen that the snapshot accepts shows here too.
    let root = Path::new(ROOT);
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let snap = std::fs::read_to_string(
        root.join("tests/suite/snapshots/all__suite__ui__run_mid_stream_80x24.snap"),
    )
    .unwrap();
    let screen = snap
        .splitn(3, "---\n")
        .nth(2)
        .unwrap()
        .trim_end_matches('\n');
    let shown = readme
        .split("```text\n")
        .filter_map(|rest| rest.split("\n```").next())
        .find(|block| block.contains("┏ Stream"))
        .expect("the README shows the run screen in a text block");
    assert_eq!(
        shown, screen,
        "README's run screen differs from its snapshot"
    );
}
