//! The import graph of the library, read from the source with the shared scanner
//! (`imports.rs`).
//!
//! Between top-level modules: every path a file names into another top-level module (in `use`
//! lines, `use crate::{a, b}` blocks over several lines, or paths in code, test code
//! included) is an edge from the file's top-level module to that one. The layers,
//! lowest first: `protocol` and `text` (import nothing of ours); `error`, `logging`,
//! `signals`, `intake`, `runlock`; `workspace`, `tools`;
//! `chat` with the settings (`options`, `cli`, `config`: a chat format is a setting's value);
//! `llm`; `engine`; `app`, `headless`, `eval`, `runs`, `hooks`; `screens`; `terminal`.
//! A module may import its own layer or lower ones, never a higher one, and the graph has no
//! cycle. Comments are skipped; the binaries (`main.rs`, `bin/`) sit above everything.
//!
//! Inside every folder: the graph between its files (a subfolder counts as one), outside test
//! code, has no cycle either; the failure names the cycle and a file behind each edge.

use std::collections::BTreeSet;
use std::path::Path;

use super::imports::{self, Graph};

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
    ("model_store", 3),
    ("cli", 3),
    ("config", 3),
    ("llm", 4),
    ("engine", 5),
    ("app", 6),
    ("headless", 6),
    ("eval", 6),
    ("runs", 6),
    ("hooks", 6),
    ("screens", 7),
    ("terminal", 8),
];

fn layer(module: &str) -> Option<u8> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
}

/// Every top-level module of ours a source text names through `crate::`.
fn crate_refs(text: &str) -> BTreeSet<String> {
    imports::named_paths(&[], text)
        .into_iter()
        .filter_map(|(path, _)| path.first().cloned())
        .collect()
}

/// module -> (imported module -> one file that imports it), test code included.
fn graph() -> Graph {
    let mut graph = imports::scan().child_graph(&[], true);
    for edges in graph.values_mut() {
        edges.retain(|target, _| layer(target).is_some());
    }
    graph
}

#[test]
fn the_parser_reads_multi_line_groups_and_skips_comments() {
    let text = "use crate::{\n    engine::{Event, Stamped},\n    tools::Registry,\n    self,\n};\n// use crate::terminal::X;\nlet x = crate::llm::script::load();\n";
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

/// The protocol is the bottom layer: it imports nothing of ours but `text`, a leaf of pure
/// string functions (which the JSON Lines escaping uses, and which imports nothing itself).
#[test]
fn protocol_imports_nothing_of_ours_but_text() {
    let graph = graph();
    let mut edges = graph.get("protocol").cloned().unwrap_or_default();
    edges.remove("text");
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
    let cycle = imports::find_cycle(&imports::targets(&graph));
    assert!(
        cycle.is_none(),
        "import cycle: {}",
        describe(&graph, &cycle.unwrap_or_default())
    );
}

/// A cycle's edges, each with one file that makes it.
fn describe(graph: &Graph, cycle: &[String]) -> String {
    cycle
        .windows(2)
        .map(|pair| {
            let file = graph[&pair[0]].get(&pair[1]).map_or("?", String::as_str);
            format!("{} -> {} (in {file})", pair[0], pair[1])
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The cycles between the child modules of every folder under `src/` (test code left out),
/// each as `folder: a -> b (in file), b -> a (in file)`.
fn folder_cycles(tree: &imports::SourceTree) -> Vec<String> {
    let mut cycles = Vec::new();
    for folder in tree.folders() {
        let graph = tree.child_graph(&folder, false);
        if let Some(cycle) = imports::find_cycle(&imports::targets(&graph)) {
            cycles.push(format!(
                "src/{}: {}",
                folder.join("/"),
                describe(&graph, &cycle)
            ));
        }
    }
    cycles
}

#[test]
fn no_folder_has_a_cycle_between_its_files() {
    let tree = imports::scan();
    let folders = tree.folders();
    assert!(
        folders.contains(&vec!["engine".to_string()])
            && folders.contains(&vec!["tools".to_string()]),
        "the scan sees no folders: {folders:?}"
    );
    let cycles = folder_cycles(&tree);
    assert!(
        cycles.is_empty(),
        "import cycles inside folders:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn the_folder_check_finds_a_cycle_when_there_is_one() {
    let mut tree = imports::scan();
    // The first edge between two files of one folder, turned around.
    let edge = tree
        .edges
        .iter()
        .find(|e| {
            !e.in_tests
                && e.from.len() == 2
                && e.to.len() == 2
                && e.from[0] == e.to[0]
                && e.from != e.to
        })
        .cloned()
        .expect("some file imports a file of its own folder");
    tree.edges.push(imports::Edge {
        from: edge.to.clone(),
        to: edge.from.clone(),
        ..edge.clone()
    });
    let cycles = folder_cycles(&tree);
    let folder = format!("src/{}:", edge.from[0]);
    assert!(
        cycles.iter().any(|c| c.starts_with(&folder)),
        "{edge:?} turned around is no cycle: {cycles:?}"
    );
}
