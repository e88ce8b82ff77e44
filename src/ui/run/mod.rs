//! The run screen's panes, one file each, drawn from `&State`: the header's meters, the
//! objective, the model's stream, the reports, the changes by round, and the status line.

pub mod changes;
pub mod header;
pub mod objective;
pub mod reports;
pub mod status;
pub mod stream;
