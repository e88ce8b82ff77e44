//! Terminal setup and restore, the event loop and frame scheduling.
