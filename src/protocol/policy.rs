//! The run's policies for commands and writes, as the settings, the tools and `run.json` share
//! them. Serialized in kebab-case, the spelling of the command line and the config file.

use serde::{Deserialize, Serialize};

/// What the sandbox lets commands touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    WorkspaceWrite,
    ReadOnly,
    Off,
}

/// Whether a command may run without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalPolicy {
    Auto,
    Ask,
    Deny,
}
