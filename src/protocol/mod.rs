//! The types every layer exchanges, at the bottom of the import graph.
//!
//! Events, reports, chat messages, tool specs and the run's policies are defined here once;
//! the engine, workspace, tools, chat formats, backends and the UI all import downward from
//! this module, and it imports nothing of ours (serde and the standard library only), so no
//! lower layer ever needs a higher one to name what it hands over.

pub mod event;
pub mod message;
pub mod policy;
pub mod report;
pub mod tool;
