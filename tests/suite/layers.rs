//! The import graph between the library's top-level modules, read from the source.
//!
//! Every `crate::name` a file mentions (in `use` lines, `use crate::{a, b}` blocks over several
//! lines, or paths in code) is an edge from the file's top-level module to `name`. The layers,
//! lowest first: `protocol` and `text` (import nothing of ours); `error`, `logging`,
//! `signals`, `intake`, `runlock`; `workspace`, `tools`;
//! `chat` with the settings (`options`, `cli`, `config`: a chat format is a setting's value);
//! `llm`; `engine`; `app`, `headless`, `eval`, `runs`, `hooks`; `ui`; `tui`.
//! A module may import its own layer or lower ones, never a higher one, and the graph has no
//! cycle. Comments are skipped; the binaries (`main.rs`, `bin/`) sit above everything. Files
//! inside one module (the `ui/` screens among themselves) are not this check's business.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each top-level module's layer; a module may import only its own layer or lower ones.
const LAYERS: &[(&str, u8)] = &[
    ("protocol", 0),
    ("text", 0),
    ("error", 1),
    ("logging", 1),
    ("signals", 1),
    ("intake", 1),
    ("runlock", 1),
    ("model_file", 1),
    ("model_defaults", 2),
    ("workspace", 2),
    ("tools", 2),
    ("chat", 3),
    ("options", 3),
    ("cli", 3),
    ("config", 3),
    ("llm", 4),
    ("engine", 5),
    ("app", 6),
    ("headless", 6),
    ("eval", 6),
    ("runs", 6),
    ("hooks", 6),
    ("ui", 7),
    ("tui", 8),
];

fn layer(module: &str) -> Option<u8> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file belongs to; `None` for the crate root and the binaries.
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next()?.as_os_str().to_str()?.to_string();
    match first.as_str() {
        "lib.rs" | "main.rs" | "bin" => None,
        _ => Some(first.trim_end_matches(".rs").to_string()),
    }
}

/// The source without `//` comments (doc comments included); string contents are kept,
/// which can only add edges, never hide one.
fn strip_comments(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident_at(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// Top-level names inside a `{ ... }` group that starts at `text[0] == '{'`.
fn group_names(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut depth = 0usize;
    let mut item_start = true;
    for (i, c) in text.char_indices() {
        match c {
            '{' => {
                depth += 1;
                if depth == 1 {
                    item_start = true;
                }
            }
            '}' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            ',' if depth == 1 => item_start = true,
            c if depth == 1 && item_start && !c.is_whitespace() => {
                item_start = false;
                let name = ident_at(&text[i..]);
                if !name.is_empty() && name != "self" {
                    names.push(name);
                }
            }
            _ => {}
        }
    }
    names
}

/// Every top-level module of ours a source text names through `crate::`.
fn crate_refs(text: &str) -> BTreeSet<String> {
    let text = strip_comments(text);
    let mut refs = BTreeSet::new();
    for (at, _) in text.match_indices("crate::") {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // `ralph_crate::` or the like
        }
        let rest = &text[at + "crate::".len()..];
        if rest.starts_with('{') {
            refs.extend(group_names(rest));
        } else {
            let name = ident_at(rest);
            if !name.is_empty() {
                refs.insert(name);
            }
        }
    }
    refs
}

/// module -> (imported module -> one file that imports it)
fn graph() -> BTreeMap<String, BTreeMap<String, String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut graph: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for file in files {
        let Some(module) = module_of(&src, &file) else {
            continue;
        };
        let text = std::fs::read_to_string(&file).unwrap();
        let rel = file.strip_prefix(&src).unwrap().display().to_string();
        let edges = graph.entry(module.clone()).or_default();
        for target in crate_refs(&text) {
            if target != module && layer(&target).is_some() {
                edges.entry(target).or_insert_with(|| rel.clone());
            }
        }
    }
    graph
}

#[test]
fn the_parser_reads_multi_line_groups_and_skips_comments() {
    let text = "use crate::{\n    engine::{Event, Stamped},\n    tools::Registry,\n    self,\n};\n// use crate::tui::X;\nlet x = crate::llm::script::load();\n";
    let refs: Vec<String> = crate_refs(text).into_iter().collect();
    assert_eq!(refs, ["engine", "llm", "tools"]);
}

#[test]
fn every_top_level_module_has_a_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    for line in lib.lines() {
        if let Some(name) = line.trim().strip_prefix("pub mod ") {
            let name = name.trim_end_matches(';');
            assert!(
                layer(name).is_some(),
                "module {name} has no layer in LAYERS"
            );
        }
    }
}

#[test]
fn no_module_imports_a_higher_layer() {
    let mut wrong = Vec::new();
    for (module, edges) in graph() {
        let Some(own) = layer(&module) else {
            continue;
        };
        for (target, file) in edges {
            let theirs = layer(&target).unwrap_or(0);
            if theirs > own {
                wrong.push(format!("{module} -> {target} (in {file})"));
            }
        }
    }
    assert!(wrong.is_empty(), "upward imports:\n{}", wrong.join("\n"));
}

#[test]
fn protocol_imports_nothing_of_ours() {
    let graph = graph();
    let edges = graph.get("protocol").cloned().unwrap_or_default();
    assert!(edges.is_empty(), "protocol imports {edges:?}");
}

#[test]
fn text_imports_nothing_of_ours() {
    let graph = graph();
    let edges = graph.get("text").cloned().unwrap_or_default();
    assert!(edges.is_empty(), "text imports {edges:?}");
}

#[test]
fn the_import_graph_has_no_cycle() {
    let graph = graph();
    // Depth-first search; a back edge is a cycle.
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeMap<String, String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for target in graph.get(node).into_iter().flat_map(|e| e.keys()) {
            if let Some(cycle) = visit(target, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        let cycle = visit(node, &graph, &mut Vec::new(), &mut done);
        assert!(
            cycle.is_none(),
            "import cycle: {}",
            cycle.unwrap().join(" -> ")
        );
    }
}
