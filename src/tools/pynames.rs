//! The names a Python file binds at its top level and the names its code uses, read without
//! running it: enough to see that a whole-file write drops a name its own code still uses
//! (seed 3, 09 at 1b2c3f5: `shop/users.py` written whole as `def get_user(user_id):
//! return USERS[user_id]`, the `USERS` table gone, every test then failing with a
//! `NameError` the worker took for a missing `get_usr`). Lines, not a parser: a name counts
//! as bound in the new text wherever it stands in a binding place (an assignment, a
//! parameter, a loop, an import, `as`), so only a name the new text never binds at all and
//! still uses outside strings and comments is called dropped. Pure functions, but for the
//! read of a file's last commit ([`unbound_refusal`]).

use std::path::Path;

/// A top-level binding of `before` that `after` still uses and no longer binds anywhere:
/// the name, its 1-based line in `before` and that line. At most `max`, in `before`'s order.
pub(crate) fn dropped_but_used(
    before: &str,
    after: &str,
    max: usize,
) -> Vec<(String, usize, String)> {
    let code = code_only(after);
    let used = used_names(&code);
    let bound = bound_anywhere(&code);
    let mut out: Vec<(String, usize, String)> = Vec::new();
    for (at, line) in before.lines().enumerate() {
        for name in top_level_bindings(line) {
            let named = out.iter().any(|(n, _, _)| *n == name);
            if !named && !bound.contains(&name) && used.contains(&name) {
                out.push((name, at + 1, line.trim_end().to_string()));
            }
        }
        if out.len() >= max {
            out.truncate(max);
            break;
        }
    }
    out
}

/// The names `after` uses and binds nowhere, where `before` (the file as it is) did not leave
/// them so: each with the first line (from 1) of `after` that uses it, at most `max`, in
/// `after`'s order. Builtins and soft keywords are bound; a file with a star import binds
/// what it likes, so it has none. Seed 3, 09 at 4b2c978: `shop/users.py` written whole as
/// `def get_user(user_id): pass` (the `USERS` table gone, and unused so far), then edited to
/// `return USERS[user_id]`: a `NameError` the dropped-name rule, comparing with the file just
/// before, could not see.
pub(crate) fn newly_unbound(before: &str, after: &str, max: usize) -> Vec<(String, usize)> {
    let code = code_only(after);
    if stars(&code) {
        return Vec::new();
    }
    let was = unbound(&code_only(before));
    let bound = bound_anywhere(&code);
    let mut out: Vec<(String, usize)> = Vec::new();
    for (at, line) in code.lines().enumerate() {
        if is_import(line) {
            continue;
        }
        for name in uses(line) {
            let fresh = !out.iter().any(|(n, _)| *n == name);
            if fresh && !bound.contains(&name) && !is_builtin(&name) && !was.contains(&name) {
                out.push((name, at + 1));
            }
        }
        if out.len() >= max {
            out.truncate(max);
            break;
        }
    }
    out
}

/// The names `code` uses and binds nowhere (builtins aside).
fn unbound(code: &str) -> std::collections::HashSet<String> {
    let bound = bound_anywhere(code);
    code.lines()
        .filter(|line| !is_import(line))
        .flat_map(uses)
        .filter(|name| !bound.contains(name) && !is_builtin(name))
        .collect()
}

/// An `import` or `from … import` line: its module path is no name it uses.
fn is_import(line: &str) -> bool {
    let line = line.trim_start();
    line.starts_with("import ") || line.starts_with("from ")
}

/// Whether `code` imports `*` from somewhere (then any name may be bound).
fn stars(code: &str) -> bool {
    code.lines().any(|line| {
        is_import(line)
            && line
                .split_once(" import ")
                .is_some_and(|(_, n)| n.trim().starts_with('*'))
    })
}

/// Python's builtins, the module's own dunders, and the soft keywords.
fn is_builtin(name: &str) -> bool {
    const BUILTINS: &str = "ArithmeticError AssertionError AttributeError BaseException BaseExceptionGroup BlockingIOError BrokenPipeError BufferError BytesWarning ChildProcessError ConnectionAbortedError ConnectionError ConnectionRefusedError ConnectionResetError DeprecationWarning EOFError Ellipsis EncodingWarning EnvironmentError Exception ExceptionGroup False FileExistsError FileNotFoundError FloatingPointError FutureWarning GeneratorExit IOError ImportError ImportWarning IndentationError IndexError InterruptedError IsADirectoryError KeyError KeyboardInterrupt LookupError MemoryError ModuleNotFoundError NameError None NotADirectoryError NotImplemented NotImplementedError OSError OverflowError PendingDeprecationWarning PermissionError ProcessLookupError RecursionError ReferenceError ResourceWarning RuntimeError RuntimeWarning StopAsyncIteration StopIteration SyntaxError SyntaxWarning SystemError SystemExit TabError TimeoutError True TypeError UnboundLocalError UnicodeDecodeError UnicodeEncodeError UnicodeError UnicodeTranslateError UnicodeWarning UserWarning ValueError Warning ZeroDivisionError __all__ __annotations__ __author__ __build_class__ __builtins__ __class__ __debug__ __dict__ __doc__ __file__ __import__ __loader__ __module__ __name__ __package__ __path__ __qualname__ __spec__ __version__ abs aiter all anext any ascii bin bool breakpoint bytearray bytes callable chr classmethod compile complex copyright credits delattr dict dir divmod enumerate eval exec exit filter float format frozenset getattr globals hasattr hash help hex id input int isinstance issubclass iter len license list locals map max memoryview min next object oct open ord pow print property quit range repr reversed round set setattr slice sorted staticmethod str sum super tuple type vars zip _ match case";
    BUILTINS.split(' ').any(|b| b == name)
}

/// Most unbound names a refusal names.
const NAMED_UNBOUND: usize = 3;
/// The largest committed file read for the names it defined.
const COMMITTED_BYTES: usize = 256 * 1024;

/// Why a change of the Python file `rel` (beneath `root`) from `before` to `after` is
/// refused: it uses a name it binds nowhere ([`newly_unbound`]) that the file defined at its
/// last commit, so running it would stop at a `NameError` for a name the run dropped. A name
/// the last commit did not define is let be: a rename made file by file leaves one unbound
/// for a while (`get_user` called before the import says so).
pub(crate) fn unbound_refusal(root: &Path, rel: &str, before: &str, after: &str) -> Option<String> {
    let names = newly_unbound(before, after, usize::MAX);
    if names.is_empty() {
        return None;
    }
    let committed = committed(root, rel)?;
    let defined: Vec<String> = names
        .iter()
        .filter_map(|(name, line)| {
            let (at, was) = committed
                .lines()
                .enumerate()
                .find(|(_, l)| top_level_bindings(l).contains(name))?;
            Some(format!(
                "`{name}` (line {line}; at the last commit line {}: `{}`)",
                at + 1,
                crate::text::clip(was.trim_end(), 80)
            ))
        })
        .take(NAMED_UNBOUND)
        .collect();
    if defined.is_empty() {
        return None;
    }
    Some(format!(
        "nothing written: with this change '{rel}' would use {}, which it no longer defines or imports, so running it would stop at a NameError. Put each definition back in the same change, as the last commit had it, or use a name the file has",
        defined.join(", ")
    ))
}

/// The text of `rel` at the last commit of the repository at `root` (the workspace's own: no
/// search above it), when there is one, small and UTF-8.
fn committed(root: &Path, rel: &str) -> Option<String> {
    let no_search = git2::RepositoryOpenFlags::NO_SEARCH;
    let repo = git2::Repository::open_ext(root, no_search, std::iter::empty::<&Path>()).ok()?;
    let workdir = repo.workdir()?.canonicalize().ok()?;
    let full = root.join(rel);
    let inside = full.strip_prefix(&workdir).ok()?;
    let tree = repo.head().ok()?.peel_to_tree().ok()?;
    let entry = tree.get_path(inside).ok()?;
    let blob = repo.find_blob(entry.id()).ok()?;
    if blob.size() > COMMITTED_BYTES {
        return None;
    }
    String::from_utf8(blob.content().to_vec()).ok()
}

fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The identifier `s` starts with, if any.
fn leading_ident(s: &str) -> Option<&str> {
    let s = s.trim_start();
    if !s.starts_with(is_ident_start) {
        return None;
    }
    let end = s.find(|c: char| !is_ident(c)).unwrap_or(s.len());
    Some(&s[..end])
}

/// The names an unindented line binds: `def NAME`, `class NAME`, `async def NAME`, `NAME =`,
/// `NAME: T = …`, and what an `import` or `from … import` line brings in.
fn top_level_bindings(line: &str) -> Vec<String> {
    if line.starts_with(char::is_whitespace) || line.starts_with('#') {
        return Vec::new();
    }
    let code = line.trim_end();
    for keyword in ["def ", "class ", "async def "] {
        if let Some(rest) = code.strip_prefix(keyword) {
            return leading_ident(rest).map(String::from).into_iter().collect();
        }
    }
    if let Some(rest) = code.strip_prefix("import ") {
        return imported(rest, true);
    }
    if let Some((_, names)) = code
        .strip_prefix("from ")
        .and_then(|r| r.split_once(" import "))
    {
        return imported(names, false);
    }
    let Some(name) = leading_ident(code) else {
        return Vec::new();
    };
    let rest = code[name.len()..].trim_start();
    let assigns = (rest.starts_with('=') && !rest.starts_with("=="))
        || rest.starts_with(':')
        || ["+=", "-=", "|="].iter().any(|op| rest.starts_with(op));
    if assigns && !is_keyword(name) {
        vec![name.to_string()]
    } else {
        Vec::new()
    }
}

/// The names an import list binds: `a.b as c` binds `c`; `a.b` binds `a` after `import`,
/// `b` after `from … import`.
fn imported(list: &str, modules: bool) -> Vec<String> {
    list.split([',', '(', ')'])
        .filter_map(|part| {
            let part = part.split('#').next().unwrap_or("").trim();
            let name = match part.split_once(" as ") {
                Some((_, alias)) => alias.trim(),
                None if modules => part.split('.').next().unwrap_or(""),
                None => part,
            };
            (!name.is_empty() && name.chars().all(is_ident)).then(|| name.to_string())
        })
        .collect()
}

fn is_keyword(word: &str) -> bool {
    const KEYWORDS: [&str; 35] = [
        "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
        "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global",
        "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return",
        "try", "while", "with", "yield",
    ];
    KEYWORDS.contains(&word)
}

/// The code of `text` with strings and comments blanked out (each replaced by spaces, so
/// words do not run together), line breaks kept.
fn code_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    // The quote that closes the string we are in, and whether it is tripled.
    let mut in_string: Option<(char, bool)> = None;
    while let Some(c) = chars.next() {
        match in_string {
            Some((quote, triple)) => {
                if c == '\\' {
                    chars.next();
                    out.push(' ');
                } else if c == quote {
                    if !triple {
                        in_string = None;
                    } else if chars.peek() == Some(&quote) {
                        chars.next();
                        if chars.peek() == Some(&quote) {
                            chars.next();
                            in_string = None;
                        }
                    }
                    out.push(' ');
                } else if c == '\n' {
                    if !triple {
                        in_string = None;
                    }
                    out.push('\n');
                } else {
                    out.push(' ');
                }
            }
            None if c == '#' => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            None if c == '"' || c == '\'' => {
                let triple = chars.peek() == Some(&c) && {
                    let mut ahead = chars.clone();
                    ahead.next();
                    ahead.peek() == Some(&c)
                };
                if triple {
                    chars.next();
                    chars.next();
                }
                blank_prefix(&mut out);
                in_string = Some((c, triple));
                out.push(' ');
            }
            None => out.push(c),
        }
    }
    out
}

/// Blanks the string prefix (`f`, `rb` …) that ends `out`, just before a quote: it is part
/// of the string, not a name.
fn blank_prefix(out: &mut String) {
    let prefix = out.chars().rev().take_while(|c| is_ident(*c)).count();
    let tail = &out[out.len() - prefix.min(out.len())..];
    if (1..=2).contains(&prefix) && tail.chars().all(|c| "rRbBfFuU".contains(c)) {
        out.truncate(out.len() - prefix);
        out.push_str(&" ".repeat(prefix));
    }
}

/// The identifiers `code` ([`code_only`]) uses, not after a `.` (an attribute is not a
/// name).
fn used_names(code: &str) -> std::collections::HashSet<String> {
    uses(code).into_iter().collect()
}

/// The identifiers `code` uses, in order, as [`used_names`] reads them.
fn uses(code: &str) -> Vec<String> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let start = i;
        if is_ident_start(chars[i]) {
            while i < chars.len() && is_ident(chars[i]) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let before = chars[..start].iter().rev().find(|c| !c.is_whitespace());
            if before != Some(&'.') && !is_keyword(&word) {
                out.push(word);
            }
        } else if chars[i].is_ascii_digit() {
            // A number (`1e5`, `0x1f`) is no name.
            while i < chars.len() && is_ident(chars[i]) {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    out
}

/// Every name `code` ([`code_only`]) binds anywhere, at any depth: assignments, parameters, loop targets,
/// `as` names, imports, `global` and `nonlocal`. Generous on purpose: a name bound anywhere
/// is not called dropped.
fn bound_anywhere(code: &str) -> std::collections::HashSet<String> {
    let mut out = std::collections::HashSet::new();
    // How deep the parentheses of a definition's parameters still open are, on the lines
    // after its `def` line (`def f(\n    a,\n    b=1,\n):`).
    let mut params_open: i32 = 0;
    for line in code.lines() {
        let trimmed = line.trim_start();
        let depth = |l: &str| l.matches('(').count() as i32 - l.matches(')').count() as i32;
        if params_open > 0 {
            for part in trimmed.split(',') {
                let part = part.trim().trim_start_matches('*');
                if let Some(name) = leading_ident(part) {
                    out.insert(name.to_string());
                }
            }
            params_open += depth(trimmed);
        } else if trimmed.starts_with("def ") || trimmed.starts_with("async def ") {
            params_open = depth(trimmed).max(0);
        }
        out.extend(top_level_bindings(trimmed));
        if let Some(rest) = ["def ", "async def ", "lambda "].iter().find_map(|k| {
            trimmed
                .strip_prefix(k)
                .or_else(|| trimmed.split_once(k).map(|(_, r)| r))
        }) {
            // The parameters: every identifier before the closing `)` or the lambda's `:`.
            let params = rest.split_once('(').map_or(rest, |(_, p)| p);
            let params = params.split([')', ':']).next().unwrap_or("");
            for part in params.split(',') {
                let part = part.trim().trim_start_matches('*');
                if let Some(name) = leading_ident(part) {
                    out.insert(name.to_string());
                }
            }
        }
        for keyword in [" as ", "for ", "global ", "nonlocal "] {
            for (at, _) in line.match_indices(keyword) {
                let after = &line[at + keyword.len()..];
                let targets = after.split(" in ").next().unwrap_or(after);
                for part in targets.split([',', '(', ')', ':']) {
                    if let Some(name) = leading_ident(part) {
                        out.insert(name.to_string());
                    }
                }
            }
        }
        // A keyword argument or a default (`f(a, key=1)`, `def g(x, y=2)`): the name before
        // each lone `=`.
        let bytes = line.as_bytes();
        for (at, _) in line.match_indices('=') {
            let lone = bytes.get(at + 1) != Some(&b'=')
                && !at
                    .checked_sub(1)
                    .and_then(|i| bytes.get(i))
                    .is_some_and(|b| b"=!<>+-*/%&|^@:".contains(b));
            if lone {
                let ahead = line[..at].trim_end();
                let start = ahead.rfind(|c: char| !is_ident(c)).map_or(0, |i| i + 1);
                if let Some(name) = leading_ident(&ahead[start..]) {
                    out.insert(name.to_string());
                }
            }
        }
        // `a, b = …` and assignments inside blocks.
        if let Some((targets, _)) = trimmed.split_once('=') {
            if !targets.ends_with(['=', '!', '<', '>'])
                && !trimmed[targets.len()..].starts_with("==")
            {
                for part in targets.split([',', '(', ')', '[', ']', ':']) {
                    if let Some(name) = leading_ident(part) {
                        if part.trim().len() == name.len() {
                            out.insert(name.to_string());
                        }
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const USERS: &str = "\"\"\"Users of the shop.\"\"\"\n\nUSERS = {\n    1: {\"name\": \"Ada\"},\n}\n\n\ndef get_usr(user_id):\n    \"\"\"The user with `user_id`.\"\"\"\n    return USERS[user_id]\n";

    #[test]
    fn a_table_the_new_text_still_uses_and_no_longer_binds_is_dropped() {
        let after = "def get_user(user_id):\n    return USERS[user_id]";
        assert_eq!(
            dropped_but_used(USERS, after, 3),
            [("USERS".to_string(), 3, "USERS = {".to_string())]
        );
        // Kept, renamed away, or only named in a string or a comment: not dropped.
        for after in [
            "USERS = {}\n\n\ndef get_user(user_id):\n    return USERS[user_id]\n",
            "def get_user(user_id):\n    \"\"\"Reads USERS.\"\"\"\n    return TABLE[user_id]  # was USERS\n",
            "def get_user(USERS, user_id):\n    return USERS[user_id]\n",
            "from shop.data import USERS\n\ndef get_user(i):\n    return USERS[i]\n",
            "def get_user(i):\n    return self.USERS[i]\n",
            "def get_user(i):\n    for USERS in x:\n        return USERS\n",
        ] {
            assert_eq!(dropped_but_used(USERS, after, 3), [], "{after}");
        }
    }

    #[test]
    fn imports_and_definitions_are_top_level_bindings() {
        let before = "import os.path\nimport json as j\nfrom shop import users, orders as o\nfrom x import (a,\n    b)\nclass Item:\n    size = 1\nasync def go():\n    pass\nlimit: int = 3\nif x == 1:\n    pass\n";
        let names: Vec<String> = before.lines().flat_map(top_level_bindings).collect();
        assert_eq!(names, ["os", "j", "users", "o", "a", "Item", "go", "limit"]);
        let after = "def f():\n    return users.get(1), o, os.sep, Item(), go, limit, j\n";
        let dropped: Vec<String> = dropped_but_used(before, after, 10)
            .into_iter()
            .map(|(name, _, _)| name)
            .collect();
        assert_eq!(dropped, ["os", "j", "users", "o", "Item", "go", "limit"]);
        assert_eq!(dropped_but_used(before, after, 2).len(), 2);
    }

    #[test]
    fn a_name_the_change_leaves_bound_nowhere_is_named() {
        let before = "def get_user(user_id):\n    pass\n";
        let after = "def get_user(user_id):\n    return USERS[user_id]\n";
        assert_eq!(newly_unbound(before, after, 3), [("USERS".to_string(), 2)]);
        // Bound somewhere, builtin, imported, a keyword argument, an attribute, only in a
        // string, or already unbound before the change: none.
        for after in [
            "USERS = {}\n\ndef get_user(user_id):\n    return USERS[user_id]\n",
            "from shop.data import USERS\n\ndef get_user(i):\n    return USERS.get(i, len([]))\n",
            "import os.path\n\ndef f(a, key=None):\n    return dict(a, other=1, key=key), os.sep\n",
            "def f(x):\n    return x.USERS, f'{USERS}', [y for y in x], sorted(x), __name__\n",
            "from shop.data import *\n\ndef f():\n    return USERS\n",
            "def g():\n    try:\n        pass\n    except OSError as e:\n        raise ValueError(e)\n",
            "class A:\n    n = 1\n\n    def f(self, *args, **kw):\n        with open(1) as fh:\n            return self.n, args, kw, fh, (m := 2), m\n",
            "def f(\n    first,\n    *rest,\n    last: int = 1,\n):\n    return first, rest, last, f\"{first}\", rb'x'\n",
        ] {
            assert_eq!(newly_unbound(before, after, 3), [], "{after}");
        }
        assert_eq!(
            newly_unbound("x = LEGACY\n", "x = LEGACY\ny = 2\n", 3),
            [],
            "unbound before the change"
        );
        let many = "def f():\n    return a1, a2 + a3, a4\n";
        assert_eq!(
            newly_unbound("", many, 2),
            [("a1".to_string(), 2), ("a2".to_string(), 2)]
        );
    }

    #[test]
    fn a_files_last_commit_is_read_from_the_workspaces_own_repository_only() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let repo = git2::Repository::init(&root).unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/users.py"), "USERS = {}\n").unwrap();
        let mut index = repo.index().unwrap();
        index.add_path(Path::new("sub/users.py")).unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        repo.commit(Some("HEAD"), &sig, &sig, "start", &tree, &[])
            .unwrap();
        assert_eq!(
            committed(&root, "sub/users.py").as_deref(),
            Some("USERS = {}\n")
        );
        // A workspace below the repository's root: the repository above is not read.
        assert_eq!(committed(&root.join("sub"), "users.py"), None);
        let why = unbound_refusal(
            &root,
            "sub/users.py",
            "def f():\n    pass\n",
            "def f():\n    return USERS\n",
        );
        assert!(why.is_some_and(
            |w| w.contains("`USERS` (line 2; at the last commit line 1: `USERS = {}`)")
        ));
        assert_eq!(
            unbound_refusal(
                &root,
                "sub/users.py",
                "def f():\n    pass\n",
                "def f():\n    return OTHER\n"
            ),
            None,
            "a name the last commit did not define either"
        );
    }

    #[test]
    fn strings_and_comments_are_not_code() {
        let code = code_only("a = 'b # c'  # d\ns = \"\"\"e\nf\"\"\" + g\n");
        let words: Vec<&str> = code.split_whitespace().collect();
        assert_eq!(words, ["a", "=", "s", "=", "+", "g"]);
    }
}
