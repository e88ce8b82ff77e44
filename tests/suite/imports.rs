//! The library's import graph, read from the source: one scanner for every architecture test.
//!
//! Every file under `src/` (the binaries, `main.rs` and `bin/`, left out) is a module whose
//! path follows from where the file lies (`engine/turn.rs` is `engine::turn`, `screens/kit/mod.rs`
//! is `screens::kit`; a `name.rs` beside a `name/` folder would be `name` too). Every path a
//! file names through `crate::`, `super::` or `self::` (in `use` lines, `use x::{a, b::{c}}`
//! trees over several lines, or paths in code) is resolved to the deepest module file it
//! reaches; that is an edge from the file to that module. Comments are skipped; string
//! contents are kept, which can only add edges, never hide one. Items under `#[cfg(test)]`
//! are marked as test code: their `crate::` paths are kept (marked), their relative ones
//! dropped (inside `mod tests`, `super` is the file itself).
//!
//! From the edges: the graph between a folder's child modules ([`child_graph`]; a subfolder
//! counts as one module with all its files), the graph between the files under a folder
//! ([`file_graph`]), and [`find_cycle`] over either. Nothing here knows a file by name, so
//! the checks keep working when files move between folders.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path from the crate root, e.g. `["engine", "turn"]`; `[]` is `lib.rs`.
pub type ModulePath = Vec<String>;

/// module -> (module it imports -> one file that imports it)
pub type Graph = BTreeMap<String, BTreeMap<String, String>>;

/// One path a file names, resolved to the module file it reaches.
#[derive(Debug, Clone)]
pub struct Edge {
    /// The module of the naming file.
    pub from: ModulePath,
    /// The deepest module (one with a file of its own) on the named path.
    pub to: ModulePath,
    /// The naming file, relative to `src/`.
    pub file: String,
    /// Named inside an item under `#[cfg(test)]`.
    pub in_tests: bool,
}

/// The library's source files and the paths they name.
pub struct SourceTree {
    /// Every module that has a file of its own.
    pub modules: BTreeSet<ModulePath>,
    pub edges: Vec<Edge>,
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
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

/// The module a file under `src/` is; `None` for the binaries (`main.rs`, `bin/`).
pub fn module_of(rel: &Path) -> Option<ModulePath> {
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.first().is_some_and(|p| p == "bin") || parts == ["main.rs"] {
        return None;
    }
    let last = parts.pop()?;
    match last.trim_end_matches(".rs") {
        "lib" if parts.is_empty() => {}
        "mod" => {}
        stem => parts.push(stem.to_string()),
    }
    Some(parts)
}

/// Reads the whole library.
pub fn scan() -> SourceTree {
    let src = src_dir();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut sources = Vec::new();
    for file in files {
        let rel = file.strip_prefix(&src).unwrap().to_path_buf();
        if let Some(module) = module_of(&rel) {
            let text = std::fs::read_to_string(&file).unwrap();
            sources.push((module, rel.display().to_string(), text));
        }
    }
    let modules: BTreeSet<ModulePath> = sources.iter().map(|(m, _, _)| m.clone()).collect();
    let mut edges = Vec::new();
    for (module, file, text) in &sources {
        for (path, in_tests) in named_paths(module, text) {
            let to = deepest_module(&modules, &path);
            edges.push(Edge {
                from: module.clone(),
                to,
                file: file.clone(),
                in_tests,
            });
        }
    }
    SourceTree { modules, edges }
}

/// The longest start of `path` that is a module with a file of its own.
fn deepest_module(modules: &BTreeSet<ModulePath>, path: &[String]) -> ModulePath {
    (0..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|p| modules.contains(p))
        .unwrap_or_default()
}

/// The source without `//` comments (doc comments included); string contents are kept,
/// which can only add edges, never hide one.
pub fn strip_comments(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident_at(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    &text[..end]
}

/// The paths of a use tree (or a plain path) that starts at `text`, each as its segments;
/// `self` in a group names the group's own path, `*` and `as` aliases add nothing.
pub fn use_tree(text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    tree_at(text, &mut Vec::new(), &mut out);
    out
}

/// Reads one tree at the start of `text` below `prefix` into `out`; returns the bytes read.
fn tree_at(text: &str, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    let depth = prefix.len();
    let mut at = 0;
    loop {
        let rest = &text[at..];
        if rest.starts_with('{') {
            at += 1 + group_at(&text[at + 1..], prefix, out);
            break;
        }
        let name = ident_at(rest);
        if name.is_empty() {
            break;
        }
        at += name.len();
        if name != "self" {
            prefix.push(name.to_string());
        }
        match text[at..].strip_prefix("::") {
            Some(after)
                if after.starts_with(|c: char| c == '{' || c.is_alphanumeric() || c == '_') =>
            {
                at += 2;
            }
            _ => {
                out.push(prefix.clone());
                break;
            }
        }
    }
    prefix.truncate(depth);
    at
}

/// Reads the items of a `{ ... }` group whose `{` was just read; returns the bytes read,
/// the closing `}` included.
fn group_at(text: &str, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    let mut at = 0;
    while at < text.len() {
        let c = text[at..].chars().next().unwrap_or(' ');
        match c {
            '}' => return at + 1,
            c if c.is_alphanumeric() || c == '_' || c == '{' => {
                at += tree_at(&text[at..], prefix, out).max(1);
                // Skip an alias (`as name`) up to the next item.
                let skip = text[at..].find([',', '}']).unwrap_or(text.len() - at);
                at += skip;
            }
            _ => at += c.len_utf8(),
        }
    }
    at
}

/// Byte ranges of the items under `#[cfg(test)]`: from the attribute to the item's `;` or
/// the `}` matching its first `{` (string literals skipped).
fn test_ranges(text: &str) -> Vec<(usize, usize)> {
    let mut ranges = Vec::new();
    let mut from = 0;
    while let Some(found) = text[from..].find("#[cfg(test)]") {
        let start = from + found;
        let end = item_end(text, start + "#[cfg(test)]".len());
        ranges.push((start, end));
        from = end.max(start + 1);
    }
    ranges
}

/// Where the item starting at `at` ends: after its `;` at depth 0 or its closing `}`.
fn item_end(text: &str, at: usize) -> usize {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = at;
    while i < bytes.len() {
        match bytes[i] {
            b'r' if bytes.get(i + 1).is_some_and(|&b| b == b'#' || b == b'"')
                && (i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_')) =>
            {
                // A raw string: `r"..."` or `r#"..."#`, read to its own end.
                let hashes = bytes[i + 1..].iter().take_while(|&&b| b == b'#').count();
                if bytes.get(i + 1 + hashes) == Some(&b'"') {
                    let close = format!("\"{}", "#".repeat(hashes));
                    let body = i + 2 + hashes;
                    i = text[body..]
                        .find(&close)
                        .map_or(bytes.len(), |e| body + e + close.len())
                        - 1;
                }
            }
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'\'' if bytes.get(i + 2) == Some(&b'\'') => i += 2,
            b'{' => depth += 1,
            b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            b';' if depth == 0 => return i + 1,
            _ => {}
        }
        i += 1;
    }
    bytes.len()
}

/// Every path `module`'s source names through `crate::`, `super::` or `self::`, from the
/// crate root, and whether it is named in test code.
pub fn named_paths(module: &[String], text: &str) -> Vec<(ModulePath, bool)> {
    let text = strip_comments(text);
    let tests = test_ranges(&text);
    let mut paths = Vec::new();
    for prefix in ["crate::", "super::", "self::"] {
        for (at, _) in text.match_indices(prefix) {
            let before = text[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':' || c == '$') {
                continue; // part of a longer path or name
            }
            let in_tests = tests.iter().any(|&(s, e)| (s..e).contains(&at));
            let (base, rest) = match prefix {
                "crate::" => (Vec::new(), &text[at + prefix.len()..]),
                _ if in_tests => continue,
                "self::" => (module.to_vec(), &text[at + prefix.len()..]),
                _ => {
                    let mut base = module.to_vec();
                    let mut rest = &text[at..];
                    while let Some(r) = rest.strip_prefix("super::") {
                        base.pop();
                        rest = r;
                    }
                    (base, rest)
                }
            };
            for tail in use_tree(rest) {
                let mut path = base.clone();
                path.extend(tail);
                paths.push((path, in_tests));
            }
        }
    }
    paths
}

impl SourceTree {
    /// The graph between the child modules of `folder` (`[]`: the top-level modules): an edge
    /// from child `a` to child `b` when a file in `a` (or under it) names a path into `b`.
    /// Every child is a node, with or without edges. Test code counts when `with_tests`.
    pub fn child_graph(&self, folder: &[String], with_tests: bool) -> Graph {
        let n = folder.len();
        let child = |m: &ModulePath| (m.len() > n && m.starts_with(folder)).then(|| m[n].clone());
        let mut graph = Graph::new();
        for module in &self.modules {
            if let Some(name) = child(module) {
                graph.entry(name).or_default();
            }
        }
        for edge in &self.edges {
            if edge.in_tests && !with_tests {
                continue;
            }
            if let (Some(a), Some(b)) = (child(&edge.from), child(&edge.to)) {
                if a != b {
                    let targets = graph.entry(a).or_default();
                    targets.entry(b).or_insert_with(|| edge.file.clone());
                }
            }
        }
        graph
    }

    /// Every module that has child modules (folders, and `lib.rs` as `[]`).
    pub fn folders(&self) -> BTreeSet<ModulePath> {
        self.modules
            .iter()
            .filter(|m| !m.is_empty())
            .map(|m| m[..m.len() - 1].to_vec())
            .collect()
    }

    /// The graph between the module files under `folder` (its own file left out), outside
    /// test code, each named by its last segment (by its path below `folder` where two share
    /// one). A folder's own file and the files under it import each other by the way modules
    /// are declared; those edges are left out.
    pub fn file_graph(&self, folder: &[String]) -> BTreeMap<String, BTreeSet<String>> {
        let under: Vec<&ModulePath> = self
            .modules
            .iter()
            .filter(|m| m.len() > folder.len() && m.starts_with(folder))
            .collect();
        let mut leaves: BTreeMap<&str, usize> = BTreeMap::new();
        for m in &under {
            *leaves.entry(m[m.len() - 1].as_str()).or_default() += 1;
        }
        let name = |m: &ModulePath| {
            let leaf = m[m.len() - 1].as_str();
            if leaves[leaf] > 1 {
                m[folder.len()..].join("::")
            } else {
                leaf.to_string()
            }
        };
        let mut graph: BTreeMap<String, BTreeSet<String>> =
            under.iter().map(|m| (name(m), BTreeSet::new())).collect();
        for edge in &self.edges {
            let inside = |m: &ModulePath| under.contains(&m);
            if edge.in_tests || !inside(&edge.from) || !inside(&edge.to) {
                continue;
            }
            if edge.from.starts_with(&edge.to) || edge.to.starts_with(&edge.from) {
                continue;
            }
            graph
                .entry(name(&edge.from))
                .or_default()
                .insert(name(&edge.to));
        }
        graph
    }
}

/// The graph without the files that witness its edges.
pub fn targets(graph: &Graph) -> BTreeMap<String, BTreeSet<String>> {
    graph
        .iter()
        .map(|(node, edges)| (node.clone(), edges.keys().cloned().collect()))
        .collect()
}

/// A cycle in `graph`, as the nodes along it (the first repeated at the end), if there is one.
pub fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        done: &mut BTreeSet<String>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|n| n == node) {
            let mut cycle = path[start..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, done, path) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut done, &mut Vec::new()))
}

#[test]
fn the_scanner_resolves_trees_relative_paths_and_test_code() {
    let module: ModulePath = vec!["engine".into(), "turn".into()];
    let text = "use super::wrapup::{self, WrapUp};\nuse crate::{\n    engine::{Event, Stamped as S},\n    tools::Registry,\n};\n// use crate::terminal::X;\nlet a = super::announce::Announcing { inner };\nlet b = super::super::llm::script::load();\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use crate::screens::x;\n}\n";
    let paths: Vec<(String, bool)> = named_paths(&module, text)
        .into_iter()
        .map(|(p, t)| (p.join("::"), t))
        .collect();
    let expect = [
        ("engine::Event", false),
        ("engine::Stamped", false),
        ("tools::Registry", false),
        ("screens::x", true),
        ("engine::wrapup", false),
        ("engine::wrapup::WrapUp", false),
        ("engine::announce::Announcing", false),
        ("llm::script::load", false),
    ];
    let expect: Vec<(String, bool)> = expect.iter().map(|(p, t)| (p.to_string(), *t)).collect();
    assert_eq!(paths, expect);
}

#[test]
fn module_paths_follow_the_files() {
    let of = |p: &str| module_of(Path::new(p)).map(|m| m.join("::"));
    assert_eq!(of("lib.rs").as_deref(), Some(""));
    assert_eq!(of("engine/mod.rs").as_deref(), Some("engine"));
    assert_eq!(of("llm/llama.rs").as_deref(), Some("llm::llama"));
    assert_eq!(
        of("screens/kit/theme.rs").as_deref(),
        Some("screens::kit::theme")
    );
    assert_eq!(of("main.rs"), None);
    assert_eq!(of("bin/ralph-eval.rs"), None);
}

/// One module style: a module with submodules is a folder with a `mod.rs`, never a `name.rs`
/// beside a `name/` folder.
#[test]
fn a_module_with_submodules_is_a_folder_with_mod_rs() {
    let mut files = Vec::new();
    rust_files(&src_dir(), &mut files);
    let beside: Vec<String> = files
        .iter()
        .filter(|f| {
            f.file_name()
                .is_some_and(|n| n != "mod.rs" && n != "lib.rs" && n != "main.rs")
        })
        .filter(|f| f.with_extension("").is_dir())
        .map(|f| f.strip_prefix(src_dir()).unwrap().display().to_string())
        .collect();
    assert!(
        beside.is_empty(),
        "module files beside a folder of their name: {beside:?}"
    );
    // The check can fail: the source has folders, and each has its mod.rs.
    assert!(files.iter().any(|f| f.ends_with("screens/mod.rs")));
}
