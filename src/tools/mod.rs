//! The tools a child works with, behind one registry.
//!
//! Each tool declares a JSON Schema for its arguments; the registry validates arguments
//! against it before the tool runs, so a tool only ever sees well-typed input. Every failure
//! becomes a `ToolResult` with `ok: false` that goes back to the child; nothing here crashes a
//! run. `ralph_report` is handled by the engine (it ends the round), and `ralph` itself is
//! never offered: a call to it is denied.

pub mod approval;
mod args;
pub(crate) mod blocks;
pub mod confined;
mod definition;
pub mod edit_file;
pub mod list_dir;
mod mounts;
mod namespace;
mod nearest;
pub mod path;
mod privileges;
pub mod process;
mod pynames;
pub mod read_file;
pub mod run_command;
pub mod sandbox;
pub mod search;
pub mod secrets;
mod setup_failure;
pub mod supervisor;
pub mod survivors;
mod syntax;
pub(crate) mod walk;
mod words;
pub mod write_file;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::protocol::policy::{ApprovalPolicy, SandboxMode};
use crate::protocol::tool::{ToolSpec, REPORT_TOOL};
use approval::Approver;
use process::ProcessTracker;
pub use words::AskedRenames;

/// The recursive tool a child may never call.
pub const RECURSIVE_TOOL: &str = "ralph";
/// How the result of a file tool's call that found the file already as it asked begins
/// (an edit whose text is already there, a write of the content the file has): nothing
/// changed, and nothing failed (the round's record does not count it as a failed change).
/// It comes before the path, which the worker chose.
pub const ALREADY_IN_PLACE: &str = "already in place: ";
/// The words of a file tool's answer that say the word its change renamed still stands in
/// the file, or in others of its kind, and where (the claims check reads them for prose).
pub const WORD_LEFT: &str = "this change renamed still stands in";
/// Most bytes of a tool's output that go back to the child.
pub const DEFAULT_OUTPUT_CAP: usize = 16 * 1024;

/// A tool failure, phrased for the child so it can act on it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ToolError(pub String);

impl ToolError {
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

/// How commands and writes are governed for this run.
#[derive(Debug, Clone)]
pub struct ToolPolicy {
    pub sandbox: SandboxMode,
    pub approval: ApprovalPolicy,
    pub network: bool,
    pub command_timeout: Duration,
    pub output_cap: usize,
    /// The executable that applies the sandbox before running a command (ralph-tui itself).
    pub sandbox_exe: PathBuf,
    /// Variables no command sees; their values are masked in every tool's output.
    pub secrets: secrets::Secrets,
}

impl ToolPolicy {
    pub fn new(sandbox: SandboxMode, approval: ApprovalPolicy, network: bool) -> Self {
        Self {
            sandbox,
            approval,
            network,
            command_timeout: Duration::from_secs(120),
            output_cap: DEFAULT_OUTPUT_CAP,
            sandbox_exe: sandbox_helper(),
            secrets: secrets::Secrets::from_env(),
        }
    }
}

/// The `ralph-tui` executable that applies the sandbox. Only a ralph-tui binary understands
/// `__sandbox-exec`: another program embedding the library (a test or a bench) would start
/// itself again instead, so it gets the `ralph-tui` binary beside it (or on `PATH`).
pub fn sandbox_helper() -> PathBuf {
    const NAME: &str = "ralph-tui";
    let Ok(exe) = std::env::current_exe() else {
        return PathBuf::from(NAME);
    };
    if exe.file_name().is_some_and(|n| n == NAME) {
        return exe;
    }
    exe.ancestors()
        .skip(1)
        .take(3)
        .map(|dir| dir.join(NAME))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| PathBuf::from(NAME))
}

/// Whether `path` names a prose file (Markdown, reStructuredText, AsciiDoc, plain text): no
/// check judges it, so the file tools and the claims check read its words instead.
pub fn is_prose(path: &str) -> bool {
    let ext = Path::new(path)
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    matches!(
        ext.as_deref(),
        Some("md" | "markdown" | "rst" | "adoc" | "txt")
    )
}

/// What a tool may use while it runs.
pub struct ToolContext<'a> {
    /// The canonical workspace root; every path resolves inside it.
    pub root: &'a Path,
    /// The renames the run's objective asks for (made wherever an edit makes them in part).
    pub renames: &'a AskedRenames,
    pub round: u32,
    /// A per-round scratch directory commands may write to.
    pub round_tmp: &'a Path,
    pub cancel: &'a CancellationToken,
    pub policy: &'a ToolPolicy,
    /// Process groups started this round, killed at its end and on cancel.
    pub processes: &'a ProcessTracker,
    pub approver: &'a dyn Approver,
}

pub trait Tool: Send + Sync {
    fn spec(&self) -> ToolSpec;
    fn run(&self, arguments: &Value, ctx: &ToolContext<'_>) -> Result<String, ToolError>;
    /// What a call with these arguments can change in the work tree under `root`, asked
    /// before it runs so the engine knows which changes are the run's. The default,
    /// `Anything`, makes the engine look at the work tree before and after the call.
    fn writes(&self, _arguments: &Value, _root: &Path) -> Writes {
        Writes::Anything
    }
    /// Whether the model is told about the tool; an internal one (what a turn's prose is
    /// read as) runs when called but is not offered.
    fn listed(&self) -> bool {
        true
    }
}

/// What a tool call can change in the work tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Writes {
    /// Nothing: the tool only reads.
    Nothing,
    /// These files (absolute paths), and nothing else.
    Files(Vec<PathBuf>),
    /// Anything (a command): only a look before and after says what changed.
    Anything,
}

/// One executed call, as the engine reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResult {
    pub ok: bool,
    pub output: String,
}

struct Registered {
    tool: Box<dyn Tool>,
    spec: ToolSpec,
    validator: Option<jsonschema::Validator>,
}

/// The tools offered to a child.
pub struct Registry {
    tools: Vec<Registered>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.tools.iter().map(|t| &t.spec.name))
            .finish()
    }
}

/// The `ralph_report` tool's spec; its arguments are the report itself.
pub fn report_spec() -> ToolSpec {
    ToolSpec {
        name: REPORT_TOOL.into(),
        description: "End this round with your report. status: continue (more work remains; give next_steps), complete (the objective is met; give evidence, no next_steps), or blocked (give the blocker). Call it exactly once, last.".into(),
        parameters: crate::protocol::report::schema_value(),
    }
}

impl Registry {
    pub fn new(tools: Vec<Box<dyn Tool>>) -> Self {
        let tools = tools
            .into_iter()
            .map(|tool| {
                let spec = tool.spec();
                let validator = jsonschema::validator_for(&spec.parameters).ok();
                Registered {
                    tool,
                    spec,
                    validator,
                }
            })
            .collect();
        Self { tools }
    }

    /// The standard workspace tools, in the order the child is told about them.
    pub fn standard() -> Self {
        Self::new(vec![
            Box::new(list_dir::ListDir),
            Box::new(read_file::ReadFile),
            Box::new(search::Search),
            Box::new(write_file::WriteFile),
            Box::new(edit_file::EditFile),
            Box::new(run_command::RunCommand),
            Box::new(definition::ReplaceDefinition),
        ])
    }

    /// Every spec offered to the child, `ralph_report` last.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools
            .iter()
            .filter(|t| t.tool.listed())
            .map(|t| t.spec.clone())
            .chain(std::iter::once(report_spec()))
            .collect()
    }

    /// What a call of `name` can change in the work tree (an unknown tool runs nothing).
    pub fn writes(&self, name: &str, arguments: &Value, root: &Path) -> Writes {
        match self.tools.iter().find(|t| t.spec.name == name) {
            Some(t) => t.tool.writes(arguments, root),
            None => Writes::Nothing,
        }
    }

    /// Validates the arguments and runs the tool. `ralph_report` is not run here.
    pub fn call(&self, name: &str, arguments: &Value, ctx: &ToolContext<'_>) -> ToolResult {
        let fail = |output: String| ToolResult { ok: false, output };
        if name == RECURSIVE_TOOL {
            return fail(
                "denied: `ralph` cannot be called from inside a Ralph round (no recursion); do the work with the tools you have and end with ralph_report".into(),
            );
        }
        let Some(entry) = self.tools.iter().find(|t| t.spec.name == name) else {
            let known: Vec<&str> = self
                .tools
                .iter()
                .filter(|t| t.tool.listed())
                .map(|t| t.spec.name.as_str())
                .collect();
            return fail(format!(
                "unknown tool '{name}'; the tools are: {}, {REPORT_TOOL}",
                known.join(", ")
            ));
        };
        if let Some(validator) = &entry.validator {
            if let Some(error) = validator.iter_errors(arguments).next() {
                let at = error.instance_path.to_string();
                let place = if at.is_empty() {
                    "arguments".to_string()
                } else {
                    format!("argument {at}")
                };
                return fail(format!("invalid arguments for {name}: {place}: {error}"));
            }
        }
        let secrets = &ctx.policy.secrets;
        match entry.tool.run(arguments, ctx) {
            Ok(output) => ToolResult {
                ok: true,
                output: cap_output(secrets.mask(&output), ctx.policy.output_cap),
            },
            Err(e) => fail(cap_output(secrets.mask(&e.0), ctx.policy.output_cap)),
        }
    }
}

/// Bounds a tool's output at a char boundary, saying how much was left out.
pub fn cap_output(mut output: String, cap: usize) -> String {
    if output.len() <= cap {
        return output;
    }
    let cut = crate::text::cut_at_char_boundary(&output, cap).len();
    let dropped = output.len() - cut;
    output.truncate(cut);
    output.push_str(&format!("\n[… {dropped} more bytes not shown]"));
    output
}
