//! Widgets: one file per pane or modal, each a pure render from `&State`.
