//! Scroll and selection arithmetic shared by the panes and the views: moving a selection,
//! keeping it visible, applying a scrolling action. A leaf, so that any view can own its
//! scroll without importing the state.

use crate::screens::keys::Action;

/// A list selection moved by `delta` or to an end, inside `0..len`.
pub fn moved(current: usize, delta: isize, jump: Option<bool>, len: usize) -> usize {
    let last = len.saturating_sub(1);
    match jump {
        Some(false) => 0,
        Some(true) => last,
        None => current.saturating_add_signed(delta).min(last),
    }
}

/// The first visible row of a list of `height` rows so that `selected` shows.
pub fn keep_visible(offset: usize, selected: usize, height: usize) -> usize {
    if selected < offset {
        selected
    } else if selected >= offset + height {
        selected + 1 - height
    } else {
        offset
    }
}

/// `scroll` after a scrolling `action` with pages of `page` rows; `None` when the action
/// does not scroll. The bottom is clamped later, in sync, where the row count is known.
pub fn scrolled(scroll: usize, action: Action, page: usize) -> Option<usize> {
    Some(match action {
        Action::Up => scroll.saturating_sub(1),
        Action::Down => scroll + 1,
        Action::PageUp => scroll.saturating_sub(page),
        Action::PageDown => scroll + page,
        Action::Top => 0,
        Action::Bottom => usize::MAX / 2,
        _ => return None,
    })
}

/// `scroll` clamped so that a body of `rows` rows fills a view `height` rows high.
pub fn clamp(scroll: usize, rows: usize, height: u16) -> usize {
    scroll.min(rows.saturating_sub(usize::from(height)))
}
