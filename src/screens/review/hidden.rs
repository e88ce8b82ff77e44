//! The review's group of changes git does not show: files the run wrote into ignored paths
//! or nested repositories (`workspace::hidden`), listed after the diff's files under their
//! own heading, each marked with why it is there, and the nested repositories the run
//! created without a commit, as warnings. None of them can be chosen: they are in no diff and
//! no commit. A nested repository with a commit is not here: it is a gitlink in the list
//! above, whose row says it is a separate repository, committed only when chosen.

use ratatui::text::{Line, Span};

use crate::screens::kit::theme::Theme;
use crate::screens::kit::wrap;
use crate::text::sanitize_line;
use crate::workspace::{DiffModel, HiddenWhy};

/// The rows of the group (none when there is nothing hidden), `width` columns wide.
pub fn rows(theme: Theme, model: &DiffModel, width: usize) -> Vec<Line<'static>> {
    let mut rows = Vec::new();
    // A repository with a commit is a gitlink in the list above, whose row says what it is;
    // the others have nothing of theirs listed or committed, so they are named here.
    let unlisted: Vec<&String> = model
        .new_repos
        .iter()
        .filter(|repo| !model.files.iter().any(|f| f.gitlink && f.path == **repo))
        .collect();
    if model.hidden.is_empty() && unlisted.is_empty() {
        return rows;
    }
    let heading = "── not shown by git, not committed ──";
    rows.push(Line::styled(
        wrap::truncate(heading, width),
        theme.warning(),
    ));
    for repo in unlisted {
        let text = format!(
            "! new git repository {}/.git: its hooks and config run commands when git is used there",
            sanitize_line(repo)
        );
        rows.extend(
            wrap::rows(&text, width)
                .into_iter()
                .map(|r| Line::styled(r.to_string(), theme.warning())),
        );
    }
    for change in &model.hidden {
        let why = match &change.why {
            HiddenWhy::Ignored => "ignored".to_string(),
            HiddenWhy::NestedRepo(repo) => format!("in repo {}", sanitize_line(repo)),
            HiddenWhy::TooLarge(len) => {
                format!("too large ({})", crate::workspace::hidden::human_size(*len))
            }
        };
        let head = format!(" ⊘  {} ", change.status.letter());
        let tail = format!("  {why}");
        let room = width.saturating_sub(wrap::str_width(&head) + wrap::str_width(&tail));
        rows.push(Line::from(vec![
            Span::styled(head, theme.dim()),
            Span::raw(wrap::truncate(&sanitize_line(&change.path), room)),
            Span::styled(tail, theme.warning()),
        ]));
    }
    rows
}
