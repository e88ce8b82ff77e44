//! The whole-file edit format of the oneshot arm: how the prompt shows the repository and how
//! the model is taught to answer, in listings ([`crate::chat::listing`], which also reads the
//! answer back into files).

use crate::chat::listing::listing;

/// One file of the repository as the prompt shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listing<'a> {
    /// Shown whole.
    Whole { path: &'a str, text: &'a str },
    /// Named only, with why (binary, too large for the prompt).
    Named { path: &'a str, why: &'a str },
}

/// The system message: the task, the format and one example.
pub fn system_prompt(fence: &str) -> String {
    let example = listing(
        "greet.py",
        "def greet(name):\n    return f\"Hello, {name}!\"\n",
        fence,
    );
    format!(
        "You are an expert software engineer. You change a repository by writing whole files. \
You cannot run commands, and you answer once.\n\n\
Answer with every file you create or change, each written out in full in this format:\n\n\
{path_example}\n\n\
Rules:\n\
- The line before the opening {fence} is the file's path relative to the repository root, and nothing else.\n\
- Write the whole file, every line, also the lines that stay the same: no \"...\", no diffs.\n\
- Files you do not write stay as they are; do not write files you do not change.\n\
- Keep any explanation short and put it before the files.\n\n\
Example: asked to make greet() in greet.py greet the name it is given, you answer:\n\n\
{example}",
        path_example = listing(
            "path/to/file.ext",
            "the complete new content of the file\n",
            fence
        )
        .trim_end(),
    )
}

/// The user message: the objective, then every file of the repository.
pub fn user_prompt(objective: &str, files: &[Listing<'_>], fence: &str) -> String {
    let mut out = format!(
        "Objective:\n{}\n\nThe repository's files:\n\n",
        objective.trim()
    );
    if files.is_empty() {
        out.push_str("(the repository has no files)\n\n");
    }
    for file in files {
        match file {
            Listing::Whole { path, text } => out.push_str(&listing(path, text, fence)),
            Listing::Named { path, why } => out.push_str(&format!("{path} ({why})\n")),
        }
        out.push('\n');
    }
    out.push_str("Now write every file you create or change, in full, in the format shown above.");
    out
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::listing::{fence_for, parse};

    fn files(answer: &str) -> Vec<(String, String)> {
        parse(answer, &|_| false).files
    }

    #[test]
    fn the_prompt_teaches_the_format_it_reads() {
        let fence = fence_for(["x = 1\n"]);
        let system = system_prompt(&fence);
        let example = system.split("you answer:\n\n").nth(1).unwrap();
        assert_eq!(
            files(example),
            [(
                "greet.py".to_string(),
                "def greet(name):\n    return f\"Hello, {name}!\"\n".to_string()
            )]
        );
        let user = user_prompt(
            "  Fix it. ",
            &[
                Listing::Whole {
                    path: "a.py",
                    text: "x = 1\n",
                },
                Listing::Named {
                    path: "logo.png",
                    why: "binary, 10 bytes, not shown",
                },
            ],
            &fence,
        );
        assert!(user.starts_with("Objective:\nFix it.\n\n"), "{user}");
        assert!(user.contains("a.py\n```\nx = 1\n```\n\nlogo.png (binary, 10 bytes, not shown)\n"));
        // The repository as shown reads back as its own files.
        assert_eq!(files(&user), [("a.py".to_string(), "x = 1\n".to_string())]);
    }
}
