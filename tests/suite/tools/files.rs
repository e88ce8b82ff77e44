//! File tools through the registry: confinement, schema checks, pagination, .gitignore,
//! writes and exact edits, and the read-only rule.

use ralph_tui::protocol::policy::{ApprovalPolicy, SandboxMode};
use ralph_tui::tools::approval::ApprovalDecision;
use serde_json::json;

use super::super::common::*;
use super::{Bench, Scripted};

// ---------------------------------------------------------------- confinement

#[test]
fn escapes_from_the_workspace_are_refused() {
    let bench = Bench::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), bench.repo.path().join("link")).unwrap();
    let victim = outside.path().join("new.txt");

    let out = bench.err("read_file", json!({"path": "../secret.txt"}));
    assert!(out.contains("outside the workspace"), "{out}");
    let out = bench.err("read_file", json!({"path": "/etc/passwd"}));
    assert!(out.contains("outside the workspace"), "{out}");
    let out = bench.err(
        "write_file",
        json!({"path": victim.to_str().unwrap(), "content": "x"}),
    );
    assert!(out.contains("outside the workspace"), "{out}");
    let out = bench.err(
        "write_file",
        json!({"path": "link/new.txt", "content": "x"}),
    );
    assert!(out.contains("symlink"), "{out}");
    let out = bench.err("read_file", json!({"path": "link/secret.txt"}));
    assert!(out.contains("symlink"), "{out}");
    let out = bench.err("list_dir", json!({"path": "src/../../"}));
    assert!(out.contains("outside the workspace"), "{out}");
    let out = bench.err("search", json!({"pattern": "secret", "path": "link"}));
    assert!(out.contains("symlink"), "{out}");
    assert!(!victim.exists(), "a file was written outside the workspace");

    let git_config = bench.repo.read(".git/config");
    let out = bench.err("write_file", json!({"path": ".git/config", "content": "x"}));
    assert!(out.contains(".git"), "{out}");
    let out = bench.err(
        "edit_file",
        json!({"path": ".git/config", "old": "[core]", "new": "[evil]"}),
    );
    assert!(out.contains(".git"), "{out}");
    assert_eq!(bench.repo.read(".git/config"), git_config);
    // Reading git internals is fine.
    assert!(bench
        .ok("read_file", json!({"path": ".git/config"}))
        .contains("[core]"));
}

#[test]
fn arguments_are_checked_against_the_schema() {
    let bench = Bench::new();
    let out = bench.err("read_file", json!({"path": "README.md", "lines": 3}));
    assert!(out.contains("invalid arguments for read_file"), "{out}");
    let out = bench.err("read_file", json!({"path": "README.md", "offset": 0}));
    assert!(out.contains("invalid arguments"), "{out}");
    let out = bench.err("edit_file", json!({"path": "README.md", "old": "x"}));
    assert!(out.contains("invalid arguments"), "{out}");
    let names: Vec<String> = bench.registry.specs().into_iter().map(|s| s.name).collect();
    assert_eq!(
        names,
        [
            "list_dir",
            "read_file",
            "search",
            "write_file",
            "edit_file",
            "run_command",
            "ralph_report"
        ]
    );
}

// ---------------------------------------------------------------- reading and listing

#[test]
fn read_file_pages_and_names_binary_and_large_files() {
    let bench = Bench::new();
    let text: String = (1..=30).map(|i| format!("line {i}\n")).collect();
    bench.repo.write("notes.txt", &text);
    let out = bench.ok(
        "read_file",
        json!({"path": "notes.txt", "offset": 11, "limit": 5}),
    );
    assert!(out.starts_with("notes.txt (lines 11-15 of 30):"), "{out}");
    assert!(out.contains("line 11\n") && out.contains("line 15\n"));
    assert!(!out.contains("line 10\n") && !out.contains("line 16\n"));
    assert!(out.contains("offset=16"), "{out}");
    let last = bench.ok("read_file", json!({"path": "notes.txt", "offset": 26}));
    assert!(
        last.contains("line 30") && !last.contains("offset="),
        "{last}"
    );

    std::fs::write(
        bench.repo.path().join("blob.bin"),
        b"\x89PNG\r\n\x1a\n\0\0\0",
    )
    .unwrap();
    let out = bench.err("read_file", json!({"path": "blob.bin"}));
    assert!(out.contains("binary"), "{out}");

    let big = std::fs::File::create(bench.repo.path().join("big.dat")).unwrap();
    big.set_len(20 * 1024 * 1024).unwrap();
    let out = bench.err("read_file", json!({"path": "big.dat"}));
    assert!(out.contains("too large"), "{out}");

    let out = bench.err("read_file", json!({"path": "missing.txt"}));
    assert!(out.contains("missing.txt"), "{out}");
    let out = bench.err("read_file", json!({"path": "."}));
    assert!(out.contains("directory"), "{out}");
}

fn ignored_layout(repo: &TempRepo) {
    repo.write(".gitignore", "build/\n*.log\n");
    repo.write("src/main.rs", "fn main() {\n    // needle here\n}\n");
    repo.write("src/nested/deep.rs", "// deep needle\n");
    repo.write("build/out.rs", "// needle in build output\n");
    repo.write("debug.log", "needle in a log\n");
    repo.write("docs/guide.md", "a needle in the docs\n");
}

#[test]
fn list_dir_respects_gitignore_and_depth() {
    let bench = Bench::new();
    ignored_layout(&bench.repo);
    let out = bench.ok("list_dir", json!({"path": ".", "depth": 3}));
    for shown in [
        ".gitignore",
        "README.md",
        "src/",
        "src/main.rs",
        "src/nested/deep.rs",
        "docs/guide.md",
    ] {
        assert!(out.lines().any(|l| l == shown), "{shown} missing:\n{out}");
    }
    for hidden in ["build", "debug.log", ".git/", ".git/config"] {
        assert!(
            !out.lines().any(|l| l.starts_with(hidden)),
            "{hidden} shown:\n{out}"
        );
    }
    let shallow = bench.ok("list_dir", json!({"path": "src", "depth": 1}));
    assert!(shallow.lines().any(|l| l == "src/nested/"), "{shallow}");
    assert!(!shallow.contains("deep.rs"), "{shallow}");
    let out = bench.err("list_dir", json!({"path": "README.md"}));
    assert!(out.contains("not a directory"), "{out}");
}

#[test]
fn search_respects_gitignore_and_glob() {
    let bench = Bench::new();
    ignored_layout(&bench.repo);
    let out = bench.ok("search", json!({"pattern": "needle"}));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        [
            "docs/guide.md:1: a needle in the docs",
            "src/main.rs:2:     // needle here",
            "src/nested/deep.rs:1: // deep needle",
        ],
        "{out}"
    );
    let out = bench.ok("search", json!({"pattern": "needle", "glob": "*.rs"}));
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(
        !out.contains("build/"),
        "a glob must not bring back ignored files: {out}"
    );
    let out = bench.ok(
        "search",
        json!({"pattern": "(?i)NEEDLE", "path": "src/nested"}),
    );
    assert_eq!(out, "src/nested/deep.rs:1: // deep needle");
    let out = bench.ok("search", json!({"pattern": "absent-text"}));
    assert!(out.contains("no matches"), "{out}");
    let out = bench.err("search", json!({"pattern": "(unclosed"}));
    assert!(out.contains("invalid regular expression"), "{out}");
}

#[test]
fn search_is_bounded_with_a_hint() {
    let bench = Bench::new();
    let many: String = (0..250).map(|i| format!("hit {i}\n")).collect();
    bench.repo.write("many.txt", &many);
    let out = bench.ok("search", json!({"pattern": "^hit"}));
    let hits = out.lines().filter(|l| l.starts_with("many.txt:")).count();
    assert_eq!(hits, 100, "{out}");
    assert!(out.contains("150 more match(es)"), "{out}");
    assert!(out.contains("narrow the search"), "{out}");
}

// ---------------------------------------------------------------- writing and editing

#[test]
fn write_file_creates_parents_inside_the_workspace() {
    let bench = Bench::new();
    let out = bench.ok(
        "write_file",
        json!({"path": "a/b/c/new.txt", "content": "one\ntwo\n"}),
    );
    assert!(out.contains("created 'a/b/c/new.txt'"), "{out}");
    assert_eq!(bench.repo.read("a/b/c/new.txt"), "one\ntwo\n");
    let out = bench.ok(
        "write_file",
        json!({"path": "a/b/c/new.txt", "content": "3\n"}),
    );
    assert!(out.contains("replaced"), "{out}");
    assert_eq!(bench.repo.read("a/b/c/new.txt"), "3\n");
    let out = bench.err("write_file", json!({"path": "a/b", "content": "x"}));
    assert!(out.contains("directory"), "{out}");
}

/// The 1.5B, its write answered `replaced 'docs/guide.md' (392 bytes, 16 lines)`, wrote that
/// answer as the file's next content (seed 3 of the evals, 02-fix-typo): such a write is
/// refused and the file keeps its lines. A write of the content the file already has changes
/// nothing and says the part is done, in the words the guard reads as no failed change.
#[test]
fn a_write_of_a_tools_answer_or_of_the_same_content_changes_nothing() {
    let bench = Bench::new();
    let guide = "# Guide\n\nReceive the mail.\n";
    let out = bench.ok("write_file", json!({"path": "guide.md", "content": guide}));
    let out = bench.err("write_file", json!({"path": "guide.md", "content": out}));
    assert!(out.starts_with("nothing written:"), "{out}");
    assert!(
        out.contains("created 'guide.md' (27 bytes, 3 lines)"),
        "{out}"
    );
    let echoed = "replaced 'guide.md' (27 bytes, 3 lines)\n\n# Guide\n";
    let out = bench.err("write_file", json!({"path": "guide.md", "content": echoed}));
    assert!(out.starts_with("nothing written:"), "{out}");
    assert_eq!(bench.repo.read("guide.md"), guide);

    let out = bench.err("write_file", json!({"path": "guide.md", "content": guide}));
    assert!(
        out.starts_with(ralph_tui::tools::ALREADY_IN_PLACE)
            && out.contains("already has exactly this content (3 lines)"),
        "{out}"
    );
    assert_eq!(bench.repo.read("guide.md"), guide);
}

/// A write that runs out of space (a 64 KiB tmpfs inside the workspace) fails and leaves the
/// old file whole, with no temporary file beside it; the same for `edit_file`. Skipped, with
/// a message, where this process may not mount.
#[test]
fn a_write_that_fails_leaves_the_old_file_intact() {
    let bench = Bench::new();
    let Some(_disk) = TinyFs::mount_at(&bench.repo.path().join("disk"), "64k") else {
        eprintln!("skipped: mounting a tmpfs is not permitted here");
        return;
    };
    let old = "print('old')\n".repeat(100);
    bench.ok("write_file", json!({"path": "disk/a.py", "content": old}));
    let big = "x".repeat(256 * 1024);
    let out = bench.err("write_file", json!({"path": "disk/a.py", "content": big}));
    assert!(out.contains("cannot write 'disk/a.py'"), "{out}");
    assert_eq!(bench.repo.read("disk/a.py"), old);
    let out = bench.err(
        "edit_file",
        json!({"path": "disk/a.py", "old": "print('old')\n", "new": "y".repeat(1024), "count": 100}),
    );
    assert!(out.contains("disk/a.py"), "{out}");
    assert_eq!(bench.repo.read("disk/a.py"), old);
    let names: Vec<_> = std::fs::read_dir(bench.repo.path().join("disk"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["a.py"]);
    // A new file that does not fit is not left behind half written either.
    bench.err("write_file", json!({"path": "disk/new.py", "content": big}));
    assert!(!bench.repo.path().join("disk/new.py").exists());
}

#[test]
fn edit_file_needs_the_exact_match_count() {
    let bench = Bench::new();
    bench.repo.write("f.txt", "alpha\nbeta\nalpha\nalpha\n");
    // A line with no count is one occurrence.
    let out = bench.err(
        "edit_file",
        json!({"path": "f.txt", "old": "alpha\n", "new": "A\n"}),
    );
    assert!(
        out.contains("matches 3 times") && out.contains("count is 1"),
        "{out}"
    );
    // So is a word that also stands inside a longer one.
    bench.repo.write("g.txt", "alpha\nalphabet\n");
    let out = bench.err(
        "edit_file",
        json!({"path": "g.txt", "old": "alpha", "new": "A"}),
    );
    assert!(out.contains("matches 2 times"), "{out}");
    assert_eq!(bench.repo.read("g.txt"), "alpha\nalphabet\n");
    assert_eq!(bench.repo.read("f.txt"), "alpha\nbeta\nalpha\nalpha\n");
    let out = bench.err(
        "edit_file",
        json!({"path": "f.txt", "old": "alpha", "new": "A", "count": 2}),
    );
    assert!(out.contains("matches 3 times"), "{out}");
    let out = bench.err(
        "edit_file",
        json!({"path": "f.txt", "old": "gamma", "new": "G"}),
    );
    assert!(out.contains("no match"), "{out}");

    let out = bench.ok(
        "edit_file",
        json!({"path": "f.txt", "old": "beta", "new": "B"}),
    );
    assert!(out.contains("replaced 1 occurrence"), "{out}");
    bench.ok(
        "edit_file",
        json!({"path": "f.txt", "old": "alpha\n", "new": "", "count": 3}),
    );
    assert_eq!(bench.repo.read("f.txt"), "B\n");
    let out = bench.err(
        "edit_file",
        json!({"path": "nope.txt", "old": "a", "new": "b"}),
    );
    assert!(out.contains("write_file"), "{out}");
}

#[test]
fn a_word_given_with_no_count_is_replaced_wherever_it_stands() {
    // Seed 2, 02: the 1.5B's fix of a typo found three times, repeated after the refusal
    // that asked for count=3.
    let bench = Bench::new();
    let guide = "Run `sync` to recieve mail.\n\nFilters sort mail as you recieve it.\nYou can choose to recieve a notification.\n";
    bench.repo.write("docs/guide.md", guide);
    let out = bench.ok(
        "edit_file",
        json!({"path": "docs/guide.md", "old": "recieve", "new": "receive"}),
    );
    assert!(
        out.contains("at all 3 places") && out.contains("lines 1, 3, 4"),
        "{out}"
    );
    assert_eq!(
        bench.repo.read("docs/guide.md"),
        guide.replace("recieve", "receive")
    );
    // A count given is a count kept.
    bench.repo.write("docs/guide.md", guide);
    let out = bench.err(
        "edit_file",
        json!({"path": "docs/guide.md", "old": "recieve", "new": "receive", "count": 1}),
    );
    assert!(out.contains("matches 3 times"), "{out}");
    assert_eq!(bench.repo.read("docs/guide.md"), guide);
}

#[test]
fn a_word_renamed_in_one_place_says_where_it_is_left() {
    // Seed 3, 09: `get_usr` renamed one call at a time, the ones left lost track of.
    let bench = Bench::new();
    let orders = "from shop.users import get_usr\n\n\ndef total(user_id):\n    get_usr(user_id)\n    return get_usr(user_id)[\"name\"]\n";
    bench.repo.write("shop/orders.py", orders);
    // Another file with the word is named only once this one is done (below, and the made
    // before answer).
    bench.repo.write(
        "shop/cli.py",
        "from shop.users import get_usr\n\nprint(get_usr(1))\n",
    );
    bench.repo.write("docs/api.md", "`get_usr(id)`\n");
    let out = bench.ok(
        "edit_file",
        json!({"path": "shop/orders.py", "old": "    get_usr(user_id)\n", "new": "    get_user(user_id)\n"}),
    );
    assert_eq!(
        out,
        "replaced 1 occurrence(s) in 'shop/orders.py'. The word `get_usr` this change renamed still stands in 'shop/orders.py' at lines 1, 6; to change it everywhere in a file, give that file's path with `old` = `get_usr` and `new` = `get_user` alone"
    );
    // Taken up, the word alone changes the rest.
    let out = bench.ok(
        "edit_file",
        json!({"path": "shop/orders.py", "old": "get_usr", "new": "get_user"}),
    );
    assert!(out.contains("at all 2 places"), "{out}");
    assert_eq!(
        bench.repo.read("shop/orders.py"),
        orders.replace("get_usr", "get_user")
    );
}

#[test]
fn a_rename_made_before_here_says_where_the_word_still_stands_elsewhere() {
    // Seed 1, 09 at 2637331: the definition renamed in round 1; round 2 asked it again, was
    // told only that it was made before, and claimed the rename done.
    let bench = Bench::new();
    let users = "def get_user(user_id):\n    return {}\n";
    bench.repo.write("shop/users.py", users);
    bench.repo.write(
        "shop/cli.py",
        "from shop.users import get_usr\n\nprint(get_usr(1))\n",
    );
    let out = bench.err(
        "edit_file",
        json!({"path": "shop/users.py", "old": "def get_usr(user_id):", "new": "def get_user(user_id):"}),
    );
    assert_eq!(
        out,
        "already in place: 'shop/users.py' already reads as `new` (from line 1) and `old` is no longer in it: this edit was made before; nothing changed. The word `get_usr` this change renamed still stands in 'shop/cli.py' at lines 1, 3; to change it everywhere in a file, give that file's path with `old` = `get_usr` and `new` = `get_user` alone. Do not make this edit again"
    );
    assert_eq!(bench.repo.read("shop/users.py"), users);
}

#[test]
fn a_file_written_whole_with_one_misspelling_of_several_fixed_says_where_the_rest_are() {
    // Seed 1, 02 at fb9124e: the guide written whole with line 5's `recieve` fixed, and
    // three more left as they were.
    let bench = Bench::new();
    let guide = "Run `sync` to recieve mail.\n\nFilters sort mail as you recieve it.\nYou can choose to recieve a notification.\n";
    bench.repo.write("docs/guide.md", guide);
    let once = guide.replacen("recieve", "receive", 1);
    let out = bench.ok(
        "write_file",
        json!({"path": "docs/guide.md", "content": once}),
    );
    assert_eq!(
        out,
        "replaced 'docs/guide.md' (108 bytes, 4 lines). The word `recieve` this change renamed still stands in 'docs/guide.md' at lines 3, 4; to change it everywhere in a file, give that file's path with `old` = `recieve` and `new` = `receive` alone"
    );
    // A write that changes more than the one word says nothing of it.
    let other = once.replace("mail.", "your mail.");
    let out = bench.ok(
        "write_file",
        json!({"path": "docs/guide.md", "content": other}),
    );
    assert!(!out.contains("The word"), "{out}");
}

/// A bench whose commands run: in the sandbox where this kernel gives it, else with it off.
fn bench_that_runs() -> Bench {
    let bench = Bench::new();
    if bench.sandbox_available().is_ok() {
        return bench;
    }
    Bench::with(SandboxMode::Off, ApprovalPolicy::Auto, false)
}

#[test]
fn a_change_that_breaks_the_syntax_of_a_file_that_parses_is_refused_and_the_file_kept() {
    let bench = bench_that_runs();
    let stats = "def mean(values):\n    return sum(values) / len(values)\n\n\ndef median(values):\n    \"\"\"The middle value.\"\"\"\n    ordered = sorted(values)\n    return ordered[len(ordered) // 2]\n";
    bench.repo.write("stats.py", stats);
    // Seed 1, 06 at b315e69, as a whole file: the body on the `def` line, the old one under.
    let broken = stats.replace(
        "def median(values):\n",
        "def median(values):    return sorted(values)[0]\n",
    );
    let out = bench.err("write_file", json!({"path": "stats.py", "content": broken}));
    assert!(
        out.starts_with("nothing written: with this change 'stats.py' would not parse as Python, and it parses now: IndentationError: unexpected indent at line 6.\nIts lines 3-8 would read:\n"),
        "{out}"
    );
    assert!(
        out.contains("    5 | def median(values):    return sorted(values)[0]\n"),
        "{out}"
    );
    // An edit that would break it is refused the same way.
    let out = bench.err(
        "edit_file",
        json!({"path": "stats.py", "old": "    ordered = sorted(values)\n", "new": "  ordered = sorted(values)\n"}),
    );
    assert!(
        out.contains("would not parse as Python") && out.contains("at line 7"),
        "{out}"
    );
    assert_eq!(bench.repo.read("stats.py"), stats);
    // A change that keeps it parsing goes ahead, and so does any change to a file that did
    // not parse before it (the change may be a step toward fixing it).
    bench.ok(
        "edit_file",
        json!({"path": "stats.py", "old": "[len(ordered) // 2]", "new": "[len(ordered) // 2 - 1]"}),
    );
    bench.repo.write("old.py", "def f(:\n");
    bench.ok(
        "write_file",
        json!({"path": "old.py", "content": "def f(:\n    pass\n"}),
    );
    // A new file is gated too.
    let out = bench.err(
        "write_file",
        json!({"path": "new.py", "content": "x = (\n"}),
    );
    assert!(
        out.contains("'new.py' would not parse as Python: "),
        "{out}"
    );
    assert!(!out.contains("parses now"), "{out}");
}

#[test]
fn a_whole_function_given_for_its_body_replaces_the_function() {
    // The demo, seed 1 at 4bc40ff: `old` the stub's body, `new` the whole function; made as
    // asked it nested a second `def slugify` inside the first, three rounds running.
    let bench = bench_that_runs();
    let slug = "\"\"\"Turn titles into URL slugs.\"\"\"\n\n\ndef slugify(text):\n    raise NotImplementedError\n";
    bench.repo.write("slug.py", slug);
    let out = bench.ok(
        "edit_file",
        json!({"path": "slug.py", "old": "raise NotImplementedError", "new": "def slugify(text):\n    return text.lower().replace(' ', '-')"}),
    );
    assert_eq!(
        out,
        "replaced the whole block at lines 4-5 of 'slug.py': `new` starts with `def slugify(text):`, the line that opens the block `old` is in, so it was taken for the whole of it"
    );
    assert_eq!(
        bench.repo.read("slug.py"),
        "\"\"\"Turn titles into URL slugs.\"\"\"\n\n\ndef slugify(text):\n    return text.lower().replace(' ', '-')\n"
    );
}

#[test]
fn shell_json_and_toml_are_gated_and_other_files_are_not() {
    let bench = bench_that_runs();
    bench
        .repo
        .write("greet.sh", "#!/bin/sh\necho \"Hello, $1!\"\n");
    let out = bench.err(
        "write_file",
        json!({"path": "greet.sh", "content": "#!/bin/sh\nif [ -z \"$1\" ]; then\n  echo 'Hello, world!'\n"}),
    );
    assert!(
        out.contains("'greet.sh' would not parse as shell, and it parses now: "),
        "{out}"
    );
    assert!(out.contains("    2 | if [ -z \"$1\" ]; then"), "{out}");
    bench.repo.write("config.json", "{\"port\": 80}\n");
    let out = bench.err(
        "edit_file",
        json!({"path": "config.json", "old": "80", "new": "8080,"}),
    );
    assert!(
        out.contains("'config.json' would not parse as JSON, and it parses now: "),
        "{out}"
    );
    bench.repo.write("app.toml", "[server]\nport = 80\n");
    let out = bench.err(
        "edit_file",
        json!({"path": "app.toml", "old": "port = 80", "new": "port = = 8080"}),
    );
    assert!(
        out.contains("'app.toml' would not parse as TOML, and it parses now: ")
            && out.contains("at line 2"),
        "{out}"
    );
    bench.ok(
        "edit_file",
        json!({"path": "app.toml", "old": "80", "new": "8080"}),
    );
    assert_eq!(bench.repo.read("app.toml"), "[server]\nport = 8080\n");
    // A language the gate does not parse is written as given.
    bench.ok(
        "write_file",
        json!({"path": "notes.md", "content": "def f(:\n"}),
    );
}

#[test]
fn read_only_runs_refuse_file_changes_unless_the_person_approves() {
    let bench = Bench::with(SandboxMode::ReadOnly, ApprovalPolicy::Auto, false);
    let out = bench.err("write_file", json!({"path": "x.txt", "content": "x"}));
    assert!(out.contains("read-only"), "{out}");
    let out = bench.err(
        "edit_file",
        json!({"path": "README.md", "old": "demo", "new": "x"}),
    );
    assert!(out.contains("read-only"), "{out}");
    assert!(!bench.repo.path().join("x.txt").exists());
    assert_eq!(bench.repo.read("README.md"), "# demo\n");

    let asking = Bench::with(SandboxMode::ReadOnly, ApprovalPolicy::Ask, false);
    let yes = Scripted::new(ApprovalDecision::Approve);
    let result = asking.call_with(&yes, "write_file", json!({"path": "y.txt", "content": "y"}));
    assert!(result.ok, "{}", result.output);
    assert_eq!(yes.questions(), ["write_file y.txt (1 bytes, new file)"]);
    let no = Scripted::new(ApprovalDecision::Deny);
    let result = asking.call_with(&no, "write_file", json!({"path": "z.txt", "content": "z"}));
    assert!(
        !result.ok && result.output.contains("denied"),
        "{}",
        result.output
    );
    assert!(!asking.repo.path().join("z.txt").exists());
}
