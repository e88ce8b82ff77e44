//! The key table: every binding of every screen and view, as data.
//!
//! Each row is what the help screen shows (keys, what they do) together with the chords it
//! stands for and the [`Action`] each chord means. The key handlers look keys up here and
//! act on the action, and the help view draws these same rows, so a binding added here is
//! both live and documented. A row with no chords documents the mouse.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::model::Msg;

/// What a key means; each screen or view decides what it does with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Help,
    /// Ctrl-C: cancel or quit, depending on where.
    Interrupt,
    /// Esc: leave the current place.
    Back,
    Submit,
    NewLine,
    FocusNext,
    FocusPrevious,
    Up,
    Down,
    PageUp,
    PageDown,
    Top,
    Bottom,
    Follow,
    Open,
    RunLog,
    Yes,
    No,
    Approve,
    Deny,
    ApproveAll,
    Previous,
    Next,
    Close,
    Commit,
    Quit,
    /// A worktree run's review: apply its changes to the person's work tree.
    ApplyWorktree,
    /// A worktree run's review: remove its worktree and branch.
    DiscardWorktree,
    FinalReport,
    /// Replay: pause or resume playback.
    PlayPause,
    /// Replay: one event forward.
    Step,
    /// Replay: to the start of the next round.
    NextRound,
    /// Replay: to the start of this round, or the one before.
    PreviousRound,
    /// Space on the review: choose or leave out the selected file.
    Toggle,
    RevertRound,
    Discard,
    /// Show or hide the model's raw call markup in the stream.
    RawOutput,
    /// Unfold or fold every card and reasoning block in the stream.
    Unfold,
    PreviousCard,
    NextCard,
    /// The run screen: write a note to the next round.
    Note,
    /// The review: send the run back to work with a note.
    SendBack,
    /// The send-back editor: one more round, one fewer.
    MoreRounds,
    FewerRounds,
}

/// One key, with or without Ctrl.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chord {
    pub code: KeyCode,
    pub ctrl: bool,
}

impl Chord {
    /// Whether `key` is this chord. Ctrl must match for letters; Shift and Alt are ignored
    /// (Shift is already in a letter's case and in `BackTab`).
    pub fn matches(&self, key: &KeyEvent) -> bool {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        key.code == self.code && (ctrl == self.ctrl || (!self.ctrl && !is_char(self.code)))
    }

    /// The chord as help and the footers write it: `y`, `space`, `Enter`, `Ctrl-S`, `↑`.
    pub fn name(&self) -> String {
        let key = match self.code {
            KeyCode::Char(' ') => "space".to_string(),
            KeyCode::Char(c) if self.ctrl => c.to_ascii_uppercase().to_string(),
            KeyCode::Char(c) => c.to_string(),
            KeyCode::F(n) => format!("F{n}"),
            KeyCode::Enter => "Enter".into(),
            KeyCode::Esc => "Esc".into(),
            KeyCode::Tab => "Tab".into(),
            KeyCode::BackTab => "Shift-Tab".into(),
            KeyCode::Up => "↑".into(),
            KeyCode::Down => "↓".into(),
            KeyCode::Left => "←".into(),
            KeyCode::Right => "→".into(),
            KeyCode::PageUp => "PgUp".into(),
            KeyCode::PageDown => "PgDn".into(),
            KeyCode::Home => "Home".into(),
            KeyCode::End => "End".into(),
            other => format!("{other:?}"),
        };
        if self.ctrl {
            format!("Ctrl-{key}")
        } else {
            key
        }
    }

    /// A printable character typed without Ctrl: text, when an editor has the keyboard.
    pub fn is_text(&self) -> bool {
        !self.ctrl && is_char(self.code)
    }
}

fn is_char(code: KeyCode) -> bool {
    matches!(code, KeyCode::Char(_))
}

const fn plain(code: KeyCode) -> Chord {
    Chord { code, ctrl: false }
}

const fn ch(c: char) -> Chord {
    plain(KeyCode::Char(c))
}

const fn ctrl(c: char) -> Chord {
    Chord {
        code: KeyCode::Char(c),
        ctrl: true,
    }
}

/// One help row: the keys as written, what they do, and the chords behind them; a view's
/// row also says what its footer calls it.
#[derive(Debug)]
pub struct Binding {
    pub keys: &'static str,
    pub what: &'static str,
    pub chords: &'static [(Chord, Action)],
    /// What the footer of the section's view says of the row ("" in sections whose place
    /// has no footer of rows: the screens' status lines pick their keys by action).
    pub hint: &'static str,
}

impl Binding {
    /// This row, with what its view's footer says of it.
    const fn hint(self, hint: &'static str) -> Self {
        Binding { hint, ..self }
    }

    /// The row's keys as a footer writes them: `y / Enter` is `y/Enter`, `↑ ↓` is `↑↓`.
    pub fn footer_keys(&self) -> String {
        self.keys.replace(" / ", "/").replace("↑ ↓", "↑↓")
    }
}

/// The bindings of one screen or view, under the title help shows.
#[derive(Debug)]
pub struct Section {
    pub title: &'static str,
    pub bindings: &'static [Binding],
}

const fn row(
    keys: &'static str,
    what: &'static str,
    chords: &'static [(Chord, Action)],
) -> Binding {
    Binding {
        keys,
        what,
        chords,
        hint: "",
    }
}

pub const EVERYWHERE: Section = Section {
    title: "Everywhere",
    bindings: &[
        row(
            "?",
            "this help (F1 in editors)",
            &[
                (ch('?'), Action::Help),
                (plain(KeyCode::F(1)), Action::Help),
            ],
        ),
        row(
            "Ctrl-C",
            "cancel the run (asks; twice cancels at once), or quit",
            &[(ctrl('c'), Action::Interrupt)],
        ),
        row(
            "Esc",
            "close the open view; else ask to cancel the run",
            &[(plain(KeyCode::Esc), Action::Back)],
        ),
    ],
};

pub const EDITOR: Section = Section {
    title: "Objective editor",
    bindings: &[
        row(
            "Ctrl-S",
            "start the run with this objective",
            &[(ctrl('s'), Action::Submit)],
        ),
        row(
            "Esc",
            "quit without running (exit 130); twice over typed text",
            &[(plain(KeyCode::Esc), Action::Back)],
        ),
        row(
            "Enter",
            "new line",
            &[(plain(KeyCode::Enter), Action::NewLine)],
        ),
    ],
};

pub const RUN: Section = Section {
    title: "Run screen",
    bindings: &[
        row(
            "Tab / Shift-Tab",
            "move focus: stream, reports, changes, objective",
            &[
                (plain(KeyCode::Tab), Action::FocusNext),
                (plain(KeyCode::BackTab), Action::FocusPrevious),
            ],
        ),
        row(
            "↑ ↓ / k j",
            "scroll the focused pane, or move in its list",
            &[
                (plain(KeyCode::Up), Action::Up),
                (plain(KeyCode::Down), Action::Down),
                (ch('k'), Action::Up),
                (ch('j'), Action::Down),
            ],
        ),
        row(
            "PgUp / PgDn",
            "scroll a page",
            &[
                (plain(KeyCode::PageUp), Action::PageUp),
                (plain(KeyCode::PageDown), Action::PageDown),
            ],
        ),
        row(
            "Home / End",
            "top / bottom; End in the stream follows it again",
            &[
                (plain(KeyCode::Home), Action::Top),
                (plain(KeyCode::End), Action::Bottom),
            ],
        ),
        row("f", "follow the stream", &[(ch('f'), Action::Follow)]),
        row(
            "Enter",
            "open the selected tool call, report, or change's diff",
            &[(plain(KeyCode::Enter), Action::Open)],
        ),
        row(
            "m",
            "raw model output on/off (the call markup; the run log keeps it all)",
            &[(ch('m'), Action::RawOutput)],
        ),
        row(
            "e",
            "unfold / fold tool calls and reasoning in the stream",
            &[(ch('e'), Action::Unfold)],
        ),
        row(
            "[ ]",
            "select the previous / next tool call in the stream",
            &[(ch('['), Action::PreviousCard), (ch(']'), Action::NextCard)],
        ),
        row("mouse wheel", "scroll the pane under the pointer", &[]),
        row(
            "Shift + drag",
            "select text (the UI takes the mouse otherwise)",
            &[],
        ),
        row(
            "n",
            "write a note to the next round (given after the fixed prompt, marked as yours)",
            &[(ch('n'), Action::Note)],
        ),
        row(
            "l",
            "show where the run log is",
            &[(ch('l'), Action::RunLog)],
        ),
    ],
};

/// The note editor (`n` on the run screen, `b` at the review).
pub const NOTE: Section = Section {
    title: "Note editor",
    bindings: &[
        row(
            "Ctrl-S",
            "send the note (at the review: resume the run with it)",
            &[(ctrl('s'), Action::Submit)],
        ),
        row(
            "PgUp / PgDn",
            "at the review: more / fewer rounds added to the cap",
            &[
                (plain(KeyCode::PageUp), Action::MoreRounds),
                (plain(KeyCode::PageDown), Action::FewerRounds),
            ],
        ),
        row(
            "Esc",
            "close, sending nothing",
            &[(plain(KeyCode::Esc), Action::Back)],
        ),
        row(
            "Enter",
            "new line",
            &[(plain(KeyCode::Enter), Action::NewLine)],
        ),
    ],
};

pub const CANCEL: Section = Section {
    title: "Cancel question",
    bindings: &[
        row(
            "y / Enter",
            "cancel the run",
            &[
                (ch('y'), Action::Yes),
                (ch('Y'), Action::Yes),
                (plain(KeyCode::Enter), Action::Yes),
            ],
        )
        .hint("cancel it"),
        row(
            "n / Esc",
            "keep running",
            &[
                (ch('n'), Action::No),
                (ch('N'), Action::No),
                (plain(KeyCode::Esc), Action::No),
            ],
        )
        .hint("keep running"),
        row(
            "Ctrl-C",
            "cancel the run at once",
            &[(ctrl('c'), Action::Yes)],
        )
        .hint("again cancels at once"),
    ],
};

pub const APPROVAL: Section = Section {
    title: "Approval",
    bindings: &[
        row(
            "y",
            "run this command",
            &[(ch('y'), Action::Approve), (ch('Y'), Action::Approve)],
        )
        .hint("run it"),
        row(
            "n",
            "refuse it (the worker is told)",
            &[(ch('n'), Action::Deny), (ch('N'), Action::Deny)],
        )
        .hint("refuse"),
        row(
            "a",
            "run it and every later command of this run",
            &[(ch('a'), Action::ApproveAll), (ch('A'), Action::ApproveAll)],
        )
        .hint("allow every command this run"),
    ],
};

pub const VIEWS: Section = Section {
    title: "Report and diff views",
    bindings: &[
        row(
            "↑ ↓ PgUp PgDn",
            "scroll",
            &[
                (plain(KeyCode::Up), Action::Up),
                (ch('k'), Action::Up),
                (plain(KeyCode::Down), Action::Down),
                (ch('j'), Action::Down),
                (plain(KeyCode::PageUp), Action::PageUp),
                (plain(KeyCode::PageDown), Action::PageDown),
                (ch(' '), Action::PageDown),
                (plain(KeyCode::Home), Action::Top),
                (plain(KeyCode::End), Action::Bottom),
            ],
        ),
        row(
            "← → / [ ]",
            "previous / next report or file",
            &[
                (plain(KeyCode::Left), Action::Previous),
                (ch('['), Action::Previous),
                (plain(KeyCode::Right), Action::Next),
                (ch(']'), Action::Next),
            ],
        ),
        row(
            "Esc / q",
            "close",
            &[
                (plain(KeyCode::Esc), Action::Close),
                (ch('q'), Action::Close),
            ],
        ),
    ],
};

pub const REVIEW: Section = Section {
    title: "Review",
    bindings: &[
        row(
            "space",
            "choose the selected file for the commit, or leave it out",
            &[(ch(' '), Action::Toggle)],
        ),
        row(
            "c",
            "commit the chosen files (edit the message, Ctrl-S commits)",
            &[(ch('c'), Action::Commit)],
        ),
        row(
            "u",
            "revert one round (its changes undone, later rounds' kept)",
            &[(ch('u'), Action::RevertRound)],
        ),
        row(
            "d",
            "discard the run's changes (lists them, asks); after a commit, those left out",
            &[(ch('d'), Action::Discard)],
        ),
        row(
            "b",
            "send the run back to work: a note to its next round, more rounds (it resumes)",
            &[(ch('b'), Action::SendBack)],
        ),
        row(
            "q",
            "quit and leave the changes uncommitted",
            &[(ch('q'), Action::Quit)],
        ),
        row(
            "l",
            "show the run log location",
            &[(ch('l'), Action::RunLog)],
        ),
        row(
            "r",
            "the final report in full",
            &[(ch('r'), Action::FinalReport)],
        ),
        row(
            "↑ ↓",
            "choose a file",
            &[
                (plain(KeyCode::Up), Action::Up),
                (ch('k'), Action::Up),
                (plain(KeyCode::Down), Action::Down),
                (ch('j'), Action::Down),
            ],
        ),
        row(
            "PgUp / PgDn",
            "scroll its diff",
            &[
                (plain(KeyCode::PageUp), Action::PageUp),
                (plain(KeyCode::PageDown), Action::PageDown),
            ],
        ),
        row(
            "Enter",
            "open the diff full screen",
            &[(plain(KeyCode::Enter), Action::Open)],
        ),
    ],
};

/// `ralph-tui replay`: the playback keys, before the run screen's own.
pub const REPLAY: Section = Section {
    title: "Replay (ralph-tui replay)",
    bindings: &[
        row("p", "pause / resume", &[(ch('p'), Action::PlayPause)]),
        row("s", "one event forward", &[(ch('s'), Action::Step)]),
        row(
            "> / <",
            "next round / back to this round's start",
            &[
                (ch('>'), Action::NextRound),
                (ch('<'), Action::PreviousRound),
            ],
        ),
        row(
            "q / Ctrl-C",
            "leave the replay (nothing to commit: it is read-only)",
            &[(ch('q'), Action::Quit), (ctrl('c'), Action::Quit)],
        ),
    ],
};

pub const REVERT: Section = Section {
    title: "Revert a round",
    bindings: &[
        row(
            "↑ ↓ / k j",
            "choose the round",
            &[
                (plain(KeyCode::Up), Action::Up),
                (ch('k'), Action::Up),
                (plain(KeyCode::Down), Action::Down),
                (ch('j'), Action::Down),
            ],
        )
        .hint("choose"),
        row(
            "y / Enter",
            "revert it if its patch still applies; else list the conflicts",
            &[
                (ch('y'), Action::Yes),
                (ch('Y'), Action::Yes),
                (plain(KeyCode::Enter), Action::Yes),
            ],
        )
        .hint("revert it"),
        row(
            "n / Esc / q",
            "close, changing nothing",
            &[
                (ch('n'), Action::No),
                (ch('N'), Action::No),
                (ch('q'), Action::No),
                (plain(KeyCode::Esc), Action::No),
            ],
        )
        .hint("back"),
    ],
};

pub const DISCARD: Section = Section {
    title: "Discard question",
    bindings: &[
        row(
            "y",
            "discard: the listed files go back to how the run found them",
            &[(ch('y'), Action::Yes), (ch('Y'), Action::Yes)],
        )
        .hint("discard them"),
        row(
            "n / Esc",
            "keep the changes",
            &[
                (ch('n'), Action::No),
                (ch('N'), Action::No),
                (plain(KeyCode::Esc), Action::No),
            ],
        )
        .hint("keep them"),
    ],
};

/// The review of a worktree run (`--worktree`), besides the review's own keys.
pub const WORKTREE: Section = Section {
    title: "Review of a worktree run",
    bindings: &[
        row(
            "A",
            "apply what the review shows (chosen files, reverts kept) to your work tree",
            &[(ch('A'), Action::ApplyWorktree)],
        ),
        row(
            "X X",
            "discard the run's worktree and branch (then only q is left)",
            &[(ch('X'), Action::DiscardWorktree)],
        ),
    ],
};

/// Every section, in the order help shows them.
pub const SECTIONS: [&Section; 12] = [
    &EVERYWHERE,
    &EDITOR,
    &RUN,
    &NOTE,
    &CANCEL,
    &APPROVAL,
    &VIEWS,
    &REVIEW,
    &REPLAY,
    &REVERT,
    &DISCARD,
    &WORKTREE,
];

/// The action `key` means in a place whose bindings are `sections`, the first section that
/// binds it winning.
pub fn action(sections: &[&Section], key: &KeyEvent) -> Option<Action> {
    lookup(sections, key, false)
}

/// Like [`action`], for a place where an editor takes the keyboard: printable characters
/// are text there, so bindings to plain characters do not apply.
pub fn editor_action(sections: &[&Section], key: &KeyEvent) -> Option<Action> {
    lookup(sections, key, true)
}

fn lookup(sections: &[&Section], key: &KeyEvent, typing: bool) -> Option<Action> {
    sections
        .iter()
        .flat_map(|section| section.bindings.iter())
        .flat_map(|binding| binding.chords.iter())
        .find(|(chord, _)| !(typing && chord.is_text()) && chord.matches(key))
        .map(|(_, action)| *action)
}

/// A key message, for tests and the event loop.
pub fn key(code: KeyCode, modifiers: KeyModifiers) -> Msg {
    Msg::Key(KeyEvent::new(code, modifiers))
}
