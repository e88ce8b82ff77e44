//! The names a Python file binds at its top level and the names its code uses, read without
//! running it: enough to see that a whole-file write drops a name its own code still uses
//! (seed 3, 09 at 1b2c3f5: `shop/users.py` written whole as `def get_user(user_id):
//! return USERS[user_id]`, the `USERS` table gone, every test then failing with a
//! `NameError` the worker took for a missing `get_usr`). Lines, not a parser: a name counts
//! as bound in the new text wherever it stands in a binding place (an assignment, a
//! parameter, a loop, an import, `as`), so only a name the new text never binds at all and
//! still uses outside strings and comments is called dropped. Pure functions.

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
                in_string = Some((c, triple));
                out.push(' ');
            }
            None => out.push(c),
        }
    }
    out
}

/// The identifiers `code` ([`code_only`]) uses, not after a `.` (an attribute is not a
/// name).
fn used_names(code: &str) -> std::collections::HashSet<String> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = std::collections::HashSet::new();
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
                out.insert(word);
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
    for line in code.lines() {
        let trimmed = line.trim_start();
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
    fn strings_and_comments_are_not_code() {
        let code = code_only("a = 'b # c'  # d\ns = \"\"\"e\nf\"\"\" + g\n");
        let words: Vec<&str> = code.split_whitespace().collect();
        assert_eq!(words, ["a", "=", "s", "=", "+", "g"]);
    }
}
