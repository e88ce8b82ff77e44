//! The terminal UI: state, update and widgets.
//!
//! [`State`] holds everything the screens show and changes only through
//! [`State::update`]; `impl Widget for &State` ([`frame`]) draws the current screen and the
//! stack of views open above it. Call [`State::sync`] with the frame's area before drawing,
//! so that scroll clamps and wrapped row counts are up to date; rendering never mutates.
//!
//! The folders show the layering, bottom up (no module imports one above it; a test checks
//! there is no cycle): data (`model`, the key table `keys` and the `hints` drawn from it,
//! `transcript`), the drawing kit (`kit/`), the views that open above a screen (`views/`,
//! joined in `views::overlay`), the `state`, then update (`input`, `mouse`, `events`, `supervise`) and
//! the screens: the objective `editor`, the run screen's panes (`run/`) and the review
//! (`review/`, which owns its keys), put together in `frame`.

pub mod editor;
pub mod events;
pub mod frame;
pub mod hints;
pub mod input;
pub mod keys;
pub mod kit;
pub mod model;
pub mod mouse;
pub mod review;
pub mod run;
pub mod state;
pub mod supervise;
pub mod transcript;
pub mod views;

pub use frame::{MIN_HEIGHT, MIN_WIDTH};
pub use kit::draw::{bar, compact};
pub use kit::theme::Theme;
pub use state::{Effect, Msg, Phase, Setup, State};
