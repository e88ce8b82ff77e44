//! The drawing kit the screens and views are built from: cells and blocks (`draw`), where
//! panes and popups go (`layout`), scroll arithmetic (`scroll`), colours (`theme`), text
//! width and wrapping (`wrap`) and the worker's light markup (`markup`). Nothing here knows
//! the state, a screen or a view.

pub mod draw;
pub mod layout;
pub mod markup;
pub mod scroll;
pub mod theme;
pub mod wrap;
