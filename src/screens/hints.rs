//! Footers and status lines, derived from the key table ([`super::keys`]): a view's footer
//! is every row of its section with the row's hint; a status line names actions, and the
//! keys it shows are the chords those actions have in that place. So what a footer says is
//! what the handlers dispatch on, and help, footers and dispatch cannot drift.

use super::keys::{Action, Section, EVERYWHERE, REPLAY, REVIEW, RUN, WORKTREE};

/// One item of a footer or a status line: keys, then what they do there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hint {
    pub keys: String,
    pub what: String,
}

impl std::fmt::Display for Hint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.what.as_str() {
            "" => f.write_str(&self.keys),
            what => write!(f, "{} {what}", self.keys),
        }
    }
}

/// A view's footer: every row of its section, with what the row's hint says.
pub fn footer(section: &Section) -> Vec<Hint> {
    section
        .bindings
        .iter()
        .map(|b| Hint {
            keys: b.footer_keys(),
            what: b.hint.to_string(),
        })
        .collect()
}

/// A status line's item for `actions` in a place whose bindings are `sections`: the keys are
/// the first chord each action has there (where an editor types, printable ones are text and
/// left out), named as help names them (`↑ ↓` written `↑↓`). `None` when one of the actions is not bound there.
pub fn hint(sections: &[&Section], actions: &[Action], what: &str, typing: bool) -> Option<Hint> {
    let names: Option<Vec<String>> = actions
        .iter()
        .map(|action| {
            sections
                .iter()
                .flat_map(|section| section.bindings.iter())
                .flat_map(|binding| binding.chords.iter())
                .find(|(chord, a)| a == action && !(typing && chord.is_text()))
                .map(|(chord, _)| chord.name())
        })
        .collect();
    Some(Hint {
        keys: names?.join(" ").replace("↑ ↓", "↑↓"),
        what: what.to_string(),
    })
}

/// What a status line offers: for each item, the actions whose keys it names (one item
/// may name two, as `< >`) and what it says they do.
pub type HintSpec = [(&'static [Action], &'static str)];

/// The items of `spec` in a place whose bindings are `sections`, each as [`hint`] finds it.
pub fn of(sections: &[&Section], spec: &HintSpec, typing: bool) -> Vec<Hint> {
    spec.iter()
        .filter_map(|(actions, what)| hint(sections, actions, what, typing))
        .collect()
}

/// Where the review's status line finds its keys: a worktree run's, the review's, help.
pub const AT_REVIEW: [&Section; 3] = [&WORKTREE, &REVIEW, &EVERYWHERE];

/// What a status line says of `spec` in a place whose bindings are `sections`.
pub fn said(sections: &[&Section], spec: &HintSpec) -> String {
    text(&of(sections, spec, false))
}

/// Columns `s` takes on screen.
fn columns(s: &str) -> usize {
    ratatui::text::Span::raw(s).width()
}

/// As many of `hints`, from the first, as fit in `width` columns, joined as [`text`] joins
/// them: a status line too narrow for all its keys leaves the last ones out whole rather
/// than cutting one in the middle (help, `?`, stays in the key table and the help view).
pub fn fit(hints: &[Hint], width: usize) -> String {
    let mut out = String::new();
    for hint in hints {
        let item = hint.to_string();
        let wanted = if out.is_empty() {
            columns(&item)
        } else {
            columns(&out) + 3 + columns(&item)
        };
        if wanted > width {
            break;
        }
        if !out.is_empty() {
            out.push_str(" · ");
        }
        out.push_str(&item);
    }
    out
}

/// Status-line items joined as the status lines write them.
pub fn text(hints: &[Hint]) -> String {
    hints
        .iter()
        .map(Hint::to_string)
        .collect::<Vec<_>>()
        .join(" · ")
}

/// The keys a replay offers, in place of the live run's.
const REPLAY_KEYS: &HintSpec = &[
    (&[Action::PlayPause], "pause"),
    (&[Action::Step], "step"),
    (&[Action::PreviousRound, Action::NextRound], "round"),
    (&[Action::Quit], "leave"),
    (&[Action::Help], "help"),
];

/// The replay's keys, for its status lines.
pub fn replay_hints() -> Vec<Hint> {
    let at = [&REPLAY, &RUN, &EVERYWHERE];
    of(&at, REPLAY_KEYS, false)
}
