//! The terminal UI: state, update and widgets.
//!
//! [`State`] holds everything the screens show and changes only through
//! [`State::update`]; `impl Widget for &State` ([`screen`]) draws the current screen and the
//! stack of views open above it. Call [`State::sync`] with the frame's area before drawing,
//! so that scroll clamps and wrapped row counts are up to date; rendering never mutates.
//!
//! Layering, bottom up (no module imports one above it; a test checks there is no cycle):
//! data and helpers (`model`, `keys`, `scroll`, `draw`, `layout`, `theme`, `wrap`,
//! `transcript`, `patch`), the views (`help`, `report_detail`, `diff`, `commit`, `cancel`,
//! `runlog`, `approval`, joined in `overlay`), the `state`, then update (`input`, `mouse`,
//! `events`) and the screens' render (`screen` and one file per pane).

pub mod approval;
pub mod cancel;
pub mod card;
pub mod changes;
pub mod commit;
pub mod diff;
pub mod discard;
pub mod draw;
pub mod editor;
pub mod events;
pub mod header;
pub mod help;
pub mod hidden;
pub mod input;
pub mod keys;
pub mod layout;
pub mod markup;
pub mod model;
pub mod mouse;
pub mod objective;
pub mod overlay;
pub mod patch;
pub mod report_detail;
pub mod reports;
pub mod revert;
pub mod review;
pub mod runlog;
pub mod screen;
pub mod scroll;
pub mod state;
pub mod status;
pub mod stream;
pub mod theme;
pub mod transcript;
pub mod view;
pub mod worktree;
pub mod wrap;

pub use draw::{bar, compact};
pub use screen::{MIN_HEIGHT, MIN_WIDTH};
pub use state::{Effect, Msg, Phase, Setup, State};
pub use theme::Theme;
