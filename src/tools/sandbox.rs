//! The OS sandbox around a child's commands (Linux: Landlock, a network namespace, a private
//! mount namespace and a supervising helper).
//!
//! A command never gets a `pre_exec` hook (code after `fork` in a multithreaded process may
//! only call async-signal-safe functions). Instead ralph-tui re-executes itself:
//!
//! ```text
//! <ralph-tui> __sandbox-exec --mode workspace-write --write DIR [--read-only DIR] [--no-network] -- sh -c CMD
//! ```
//!
//! That hidden entry point ([`exec_main`]) runs before anything else in `main`, while the
//! process is still single-threaded. It first closes every descriptor above 2 it inherited.
//! It becomes the command's *supervisor*: it starts a new session (no controlling terminal),
//! asks for SIGTERM when ralph-tui dies, becomes a child subreaper (see
//! [`super::supervisor`]), moves into new UTS and IPC namespaces and a new network namespace
//! (no interfaces up, not even loopback) unless the run allows the network, and bind-mounts
//! the repository's `.git` (and a `.git` file's target) read-only in a private mount
//! namespace, where `/dev` is a tmpfs of its own with only the devices a command may write
//! (no terminal, disk or input device to open, not even for reading), and every mount but
//! the `--write` directories is read-only and nosuid: Landlock does not govern metadata, so
//! this is what refuses a chmod, chown, utime or xattr outside them (see [`super::mounts`]).
//! It then starts itself
//! once more as `__sandbox-exec --inner`, which restricts
//! itself with Landlock (writes only beneath the `--write` directories and a few harmless
//! devices, no device node or socket file made anywhere; reads and execution stay allowed
//! everywhere; no signals to processes outside the Landlock domain, which includes the
//! supervisor and ralph-tui), drops every capability and installs a seccomp filter that
//! refuses Unix sockets and any change to another process's limits, priority or scheduling
//! (see [`super::privileges`]), and `exec`s the shell. The restrictions
//! are inherited by everything the command starts.
//!
//! Modes: `workspace-write` writes the workspace (never its `.git`) and the round's scratch
//! dir; `read-only` writes only the round's scratch dir; `off` runs `sh -c` directly with no
//! confinement at all. It fails closed: when the kernel lacks what a mode needs, the helper
//! refuses to run the command and says to use `--sandbox off`. Signal scoping needs Landlock
//! ABI 6; on older kernels it is left out and [`describe`] says so.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use landlock::{
    path_beneath_rules, AccessFs, LandlockStatus, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};

use super::mounts::{private_mounts, SHM};
pub use super::namespace::NetworkIsolation;
use super::namespace::{isolate_host, isolate_network};
use super::privileges;
use super::setup_failure::fail;
pub use super::setup_failure::{FAILURE_PREFIX, SETUP_FAILED};
use super::supervisor::{self, PARENT_ENV};
use super::ToolPolicy;
use crate::protocol::policy::SandboxMode;

/// What the private mounts do, for the sentences that say they are missing.
const MOUNTS_DO: &str = ".git and metadata outside the workspace read-only, a /dev of their own";

/// The hidden first argument that turns ralph-tui into the sandbox helper.
pub const EXEC_ARG: &str = "__sandbox-exec";

/// The Landlock ABI whose write rights are requested (V5 adds device ioctls); older kernels
/// get what they support.
const TARGET_ABI: ABI = ABI::V5;
/// The first Landlock ABI that can scope signals.
const SIGNAL_SCOPE_ABI: u32 = 6;
/// Devices a sandboxed command may always open for writing (and, from ABI 5, ioctl). No
/// terminal is among them: commands have no business with the terminal under the TUI.
const WRITABLE_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// Variables that name a service listening on a socket (a terminal multiplexer, a session
/// bus, an agent, a container engine, a display, an editor): confined commands do not get
/// them (nor could they reach the socket).
pub const SOCKET_ENV: &[&str] = &[
    "TMUX",
    "TMUX_PANE",
    "TMUX_TMPDIR",
    "STY",
    "ZELLIJ",
    "ZELLIJ_SESSION_NAME",
    "DBUS_SESSION_BUS_ADDRESS",
    "DBUS_SYSTEM_BUS_ADDRESS",
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "GPG_AGENT_INFO",
    "DOCKER_HOST",
    "CONTAINER_HOST",
    "XDG_RUNTIME_DIR",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XAUTHORITY",
    "KITTY_LISTEN_ON",
    "WEZTERM_UNIX_SOCKET",
    "NVIM",
    "NVIM_LISTEN_ADDRESS",
    "VSCODE_IPC_HOOK_CLI",
    "VSCODE_GIT_IPC_HANDLE",
    "PULSE_SERVER",
];

/// What this kernel offers the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSupport {
    /// The kernel's Landlock ABI version; `None` when Landlock is missing or disabled.
    pub landlock_abi: Option<u32>,
    /// Why Landlock is unusable, when it is.
    pub landlock_problem: Option<String>,
    pub network: NetworkIsolation,
    /// Why commands cannot get their private mounts (`.git` and metadata outside the
    /// workspace read-only, a `/dev` of their own): no mount namespace, when so.
    pub mount_problem: Option<String>,
    /// Whether Landlock keeps commands from signalling processes outside the sandbox.
    pub signals_scoped: bool,
}

impl SandboxSupport {
    /// Whether commands can run under `mode` (with or without network); the error is a
    /// sentence for the person, naming the way out.
    pub fn check(&self, mode: SandboxMode, network: bool) -> Result<(), String> {
        if mode == SandboxMode::Off {
            return Ok(());
        }
        if self.landlock_abi.is_none() {
            let why = self
                .landlock_problem
                .as_deref()
                .unwrap_or("Landlock is not available");
            return Err(format!(
                "the sandbox cannot confine file writes on this system ({why}); commands will be refused — run with --sandbox off to run them unconfined"
            ));
        }
        if let (false, NetworkIsolation::Unavailable(why)) = (network, &self.network) {
            return Err(format!(
                "the sandbox cannot cut commands off the network on this system ({why}); commands will be refused — run with --network to allow the network, or --sandbox off"
            ));
        }
        if let Some(why) = &self.mount_problem {
            return Err(format!(
                "the sandbox cannot give commands private mounts ({MOUNTS_DO}) on this system ({why}); commands will be refused — run with --sandbox off to run them unconfined"
            ));
        }
        Ok(())
    }
}

/// One sentence on what the sandbox can do here, for the run's log and events.
pub fn describe(support: &SandboxSupport) -> String {
    let files = match (support.landlock_abi, &support.landlock_problem) {
        (Some(abi), _) => format!("Landlock ABI {abi} confines command writes to the workspace"),
        (None, Some(why)) => format!("no Landlock ({why}), so command writes cannot be confined"),
        (None, None) => "no Landlock, so command writes cannot be confined".into(),
    };
    let net = match &support.network {
        NetworkIsolation::Namespace => "a network namespace cuts commands off the network".into(),
        NetworkIsolation::UserNamespace => {
            "a user + network namespace cuts commands off the network".into()
        }
        NetworkIsolation::Unavailable(why) => {
            format!("no network namespace ({why}), so commands cannot be cut off the network")
        }
    };
    let git = match &support.mount_problem {
        None => "private mounts keep .git and every file's metadata outside the writable paths read-only, and give commands a /dev of their own".to_string(),
        Some(why) => format!(
            "no private mounts ({why}), so neither .git nor metadata outside the workspace can be kept read-only, nor /dev private"
        ),
    };
    let signals = if support.signals_scoped {
        "commands cannot signal processes outside the sandbox"
    } else {
        "this kernel cannot stop commands signalling processes outside the sandbox (Landlock ABI 6 needed)"
    };
    // Set up per command, failing it closed when the kernel refuses.
    let rest = "commands hold no capability, reach no Unix socket and change no other process's limits, priority or scheduling";
    format!("Sandbox: {files}; {net}; {git}; {signals}; {rest}.")
}

/// Probes by running `exe __sandbox-exec --probe`, which tries exactly what a command gets.
pub fn probe_with(exe: &Path) -> SandboxSupport {
    let output = match Command::new(exe).args([EXEC_ARG, "--probe"]).output() {
        Ok(o) => o,
        Err(e) => {
            return unsupported(format!(
                "cannot run the sandbox helper {}: {e}",
                exe.display()
            ))
        }
    };
    let text = String::from_utf8_lossy(&output.stdout);
    let mut support = unsupported("the sandbox helper gave no answer".into());
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("landlock=") {
            match v.parse::<u32>() {
                Ok(abi) => {
                    support.landlock_abi = Some(abi);
                    support.landlock_problem = None;
                }
                Err(_) => support.landlock_problem = Some(v.to_string()),
            }
        } else if let Some(v) = line.strip_prefix("netns=") {
            support.network = match v {
                "namespace" => NetworkIsolation::Namespace,
                "user" => NetworkIsolation::UserNamespace,
                other => NetworkIsolation::Unavailable(other.to_string()),
            };
        } else if let Some(v) = line.strip_prefix("mountns=") {
            support.mount_problem = (v != "ok").then(|| v.to_string());
        } else if let Some(v) = line.strip_prefix("signals=") {
            support.signals_scoped = v == "scoped";
        }
    }
    support
}

fn unsupported(why: String) -> SandboxSupport {
    SandboxSupport {
        landlock_abi: None,
        landlock_problem: Some(why.clone()),
        network: NetworkIsolation::Unavailable(why.clone()),
        mount_problem: Some(why),
        signals_scoped: false,
    }
}

fn mode_name(mode: SandboxMode) -> &'static str {
    match mode {
        SandboxMode::WorkspaceWrite => "workspace-write",
        SandboxMode::ReadOnly => "read-only",
        SandboxMode::Off => "off",
    }
}

/// The git directories of the repository at `root` that commands must not change: `.git`
/// itself and, when `.git` is a file (a linked worktree), the directory it names and that
/// directory's common dir (hooks and config live there).
pub fn git_dirs(root: &Path) -> Vec<PathBuf> {
    let dot_git = root.join(".git");
    let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
        return Vec::new();
    };
    let mut dirs = vec![dot_git.clone()];
    if !meta.is_file() {
        return dirs;
    }
    let Some(target) = std::fs::read_to_string(&dot_git).ok().and_then(|text| {
        let line = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?;
        root.join(line.trim()).canonicalize().ok()
    }) else {
        return dirs;
    };
    if let Some(common) = std::fs::read_to_string(target.join("commondir"))
        .ok()
        .and_then(|c| target.join(c.trim()).canonicalize().ok())
    {
        dirs.push(common);
    }
    dirs.push(target);
    dirs
}

/// The command that runs `shell_command` under `policy`, always through the helper: confined
/// as the mode says, and with the sandbox off still supervised (its own session with no
/// terminal, every descendant killed at the round's end), only unconfined. Working directory
/// = `root`; `TMPDIR` = `round_tmp`. The policy's secret variables are removed from the
/// environment, and, when confined, the variables naming a socket ([`SOCKET_ENV`]).
pub fn command(policy: &ToolPolicy, root: &Path, round_tmp: &Path, shell_command: &str) -> Command {
    let mode = policy.sandbox;
    let mut cmd = Command::new(&policy.sandbox_exe);
    cmd.arg(EXEC_ARG).args(["--mode", mode_name(mode)]);
    if mode == SandboxMode::WorkspaceWrite {
        cmd.arg("--write").arg(root);
        for dir in git_dirs(root) {
            cmd.arg("--read-only").arg(dir);
        }
    }
    if mode != SandboxMode::Off {
        cmd.arg("--write").arg(round_tmp);
        if !policy.network {
            cmd.arg("--no-network");
        }
    }
    cmd.args(["--", "sh"])
        .env(PARENT_ENV, std::process::id().to_string());
    for name in policy.secrets.names() {
        cmd.env_remove(name);
    }
    if mode != SandboxMode::Off {
        for name in SOCKET_ENV {
            cmd.env_remove(name);
        }
    }
    cmd.arg("-c")
        .arg(shell_command)
        .current_dir(root)
        .env("TMPDIR", round_tmp)
        .env("PAGER", "cat")
        .env("GIT_PAGER", "cat")
        .env("GIT_TERMINAL_PROMPT", "0");
    cmd
}

/// Whether `command` goes through the supervising helper (see [`super::supervisor`]).
pub fn is_supervised(command: &Command) -> bool {
    command.get_args().next().is_some_and(|a| a == EXEC_ARG)
}

/// The helper's parsed command line.
#[derive(Debug, Default, PartialEq, Eq)]
struct ExecArgs {
    probe: bool,
    /// The Landlock stage, started by the supervisor.
    inner: bool,
    mode: Option<SandboxMode>,
    writable: Vec<PathBuf>,
    read_only: Vec<PathBuf>,
    no_network: bool,
    program: Vec<String>,
}

fn parse(args: &[String]) -> Result<ExecArgs, String> {
    let mut parsed = ExecArgs::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--probe" => parsed.probe = true,
            "--inner" => parsed.inner = true,
            "--no-network" => parsed.no_network = true,
            "--mode" => {
                parsed.mode = Some(match it.next().map(String::as_str) {
                    Some("workspace-write") => SandboxMode::WorkspaceWrite,
                    Some("read-only") => SandboxMode::ReadOnly,
                    Some("off") => SandboxMode::Off,
                    other => return Err(format!("unknown --mode {other:?}")),
                })
            }
            "--write" => match it.next() {
                Some(dir) => parsed.writable.push(PathBuf::from(dir)),
                None => return Err("--write needs a directory".into()),
            },
            "--read-only" => match it.next() {
                Some(dir) => parsed.read_only.push(PathBuf::from(dir)),
                None => return Err("--read-only needs a path".into()),
            },
            "--" => {
                parsed.program = it.cloned().collect();
                break;
            }
            other => return Err(format!("unexpected argument {other:?}")),
        }
    }
    if !parsed.probe {
        if parsed.mode.is_none() {
            return Err("--mode is required".into());
        }
        if parsed.program.is_empty() {
            return Err("no command after --".into());
        }
    }
    Ok(parsed)
}

/// The helper: `args` are the arguments after [`EXEC_ARG`]. Sets the sandbox up and runs the
/// command under supervision, or exits with [`SETUP_FAILED`] saying why. Call it first thing
/// in `main`, before any thread exists.
pub fn exec_main(args: &[String]) -> ! {
    // Whatever ralph-tui (or a library in it) left open without close-on-exec goes first.
    privileges::close_inherited_fds();
    let parsed = match parse(args) {
        Ok(p) => p,
        Err(e) => fail(&format!("bad helper arguments: {e}")),
    };
    if parsed.probe {
        run_probe();
    }
    if parsed.inner {
        confine_and_exec(&parsed);
    }
    if let Err(e) = supervisor::detach() {
        fail(&format!("cannot supervise this command ({e})"));
    }
    let confined = parsed.mode.is_some_and(|m| m != SandboxMode::Off);
    let mut in_user_ns = false;
    if parsed.no_network {
        match isolate_network() {
            Ok(isolation) => in_user_ns = isolation == NetworkIsolation::UserNamespace,
            Err(e) => fail(&format!(
                "cannot cut this command off the network ({e}); run with --network to allow it, or --sandbox off"
            )),
        }
    } else if confined {
        match isolate_host() {
            Ok(user_ns) => in_user_ns = user_ns,
            // Only root could change the hostname or others' IPC objects; it must not fail.
            Err(e) if nix::unistd::geteuid().is_root() => fail(&format!(
                "cannot give this command its own hostname and IPC namespace ({e}); run with --sandbox off to run commands unconfined"
            )),
            Err(_) => {}
        }
    }
    if confined {
        // The paths Landlock lets it write (see `confine_and_exec`) keep their metadata
        // writable; every other mount goes read-only.
        if let Err(e) = private_mounts(&parsed.writable, &parsed.read_only, in_user_ns) {
            fail(&format!(
                "cannot give this command its private mounts ({MOUNTS_DO}) ({e}); run with --sandbox off to run commands unconfined"
            ));
        }
    }
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => fail(&format!("cannot find the ralph-tui executable: {e}")),
    };
    let mut inner = Command::new(exe);
    inner.args([EXEC_ARG, "--inner", "--mode"]);
    inner.arg(mode_name(parsed.mode.unwrap_or(SandboxMode::ReadOnly)));
    for dir in &parsed.writable {
        inner.arg("--write").arg(dir);
    }
    if confined {
        // Its own (see `private_dev`), so writable in every confined mode.
        inner.arg("--write").arg(SHM);
    }
    inner.arg("--").args(&parsed.program);
    // Its own process group (so `$$` names the group it and its jobs share), no terminal.
    std::os::unix::process::CommandExt::process_group(&mut inner, 0);
    inner.stdin(Stdio::null()).env_remove(PARENT_ENV);
    supervisor::run(inner)
}

/// The inner stage: Landlock on this process, then `exec` the command.
fn confine_and_exec(parsed: &ExecArgs) -> ! {
    // The supervisor takes its signals with sigwait, blocked; the command starts unblocked
    // (a blocked mask survives `exec`, and shells hand it on to their jobs).
    if let Err(e) = nix::sys::signal::SigSet::all().thread_unblock() {
        fail(&format!("cannot unblock signals: {e}"));
    }
    if parsed.mode != Some(SandboxMode::Off) {
        if let Err(e) = restrict_writes(&parsed.writable) {
            fail(&format!(
                "cannot confine this command's writes ({e}); run with --sandbox off to run commands unconfined"
            ));
        }
        if let Err(e) =
            privileges::drop_capabilities().and_then(|()| privileges::install_syscall_filter())
        {
            fail(&format!(
                "cannot take this command's privileges away ({e}); run with --sandbox off to run commands unconfined"
            ));
        }
    }
    let (program, rest) = match parsed.program.split_first() {
        Some(split) => split,
        None => fail("no command to run"),
    };
    let error = std::os::unix::process::CommandExt::exec(Command::new(program).args(rest));
    let _ = writeln!(
        std::io::stderr(),
        "{FAILURE_PREFIX} cannot start {program}: {error}"
    );
    std::process::exit(127);
}

/// Reports what works, as `key=value` lines on stdout, and exits.
fn run_probe() -> ! {
    let (netns, in_user_ns) = match isolate_network() {
        Ok(NetworkIsolation::Namespace) => ("namespace".to_string(), false),
        Ok(NetworkIsolation::UserNamespace) => ("user".to_string(), true),
        Ok(NetworkIsolation::Unavailable(why)) | Err(why) => (why, false),
    };
    let mountns = match private_mounts(&[], &[], in_user_ns) {
        Ok(()) => "ok".to_string(),
        Err(why) => why,
    };
    let (landlock, signals) = match restrict_writes(&[]) {
        Ok((abi, scoped)) => (abi.to_string(), if scoped { "scoped" } else { "unscoped" }),
        Err(why) => (why, "unscoped"),
    };
    let mut out = std::io::stdout();
    let _ = writeln!(out, "landlock={landlock}");
    let _ = writeln!(out, "netns={netns}");
    let _ = writeln!(out, "mountns={mountns}");
    let _ = writeln!(out, "signals={signals}");
    std::process::exit(0);
}

/// Restricts this process: writes only beneath `writable` (and the harmless devices), and,
/// where the kernel can, no signals to processes outside this Landlock domain. Returns the
/// kernel's Landlock ABI version and whether signals are scoped.
fn restrict_writes(writable: &[PathBuf]) -> Result<(u32, bool), String> {
    let access = AccessFs::from_write(TARGET_ABI);
    // Handled but never granted: no device nodes (a block device is a way around every
    // path rule) and no socket files.
    let granted = access & !(AccessFs::MakeBlock | AccessFs::MakeChar | AccessFs::MakeSock);
    let mut ruleset = Ruleset::default()
        .handle_access(access)
        .and_then(|r| r.scope(Scope::Signal))
        .and_then(|r| r.create())
        .map_err(|e| format!("Landlock: {e}"))?;
    for dir in writable {
        let fd = PathFd::new(dir)
            .map_err(|e| format!("cannot open {} for the sandbox: {e}", dir.display()))?;
        ruleset = ruleset
            .add_rule(PathBeneath::new(fd, granted))
            .map_err(|e| format!("Landlock rule for {}: {e}", dir.display()))?;
    }
    let status = ruleset
        .add_rules(path_beneath_rules(WRITABLE_DEVICES, granted))
        .and_then(|r| r.restrict_self())
        .map_err(|e| format!("Landlock: {e}"))?;
    let abi = match status.landlock {
        LandlockStatus::Available {
            effective_abi,
            kernel_abi,
        } => kernel_abi
            .and_then(|v| u32::try_from(v).ok())
            .or_else(|| effective_abi.to_string().parse().ok()),
        LandlockStatus::NotEnabled => return Err("Landlock is disabled in this kernel".into()),
        LandlockStatus::NotImplemented => {
            return Err("this kernel has no Landlock (Linux 5.13+ with Landlock enabled)".into())
        }
    };
    match (status.ruleset, abi) {
        (RulesetStatus::NotEnforced, _) | (_, None) => {
            Err("Landlock could not be enforced on this kernel".into())
        }
        (_, Some(abi)) => Ok((abi, abi >= SIGNAL_SCOPE_ABI)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::policy::ApprovalPolicy;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_string()).collect()
    }

    /// The variables `cmd` takes out of the environment it inherits.
    fn removed_env(cmd: &Command) -> Vec<String> {
        cmd.get_envs()
            .filter(|(_, value)| value.is_none())
            .map(|(name, _)| name.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn parses_the_helper_command_line() {
        let parsed = parse(&strings(&[
            "--mode",
            "workspace-write",
            "--write",
            "/w",
            "--write",
            "/t",
            "--no-network",
            "--",
            "sh",
            "-c",
            "echo --mode",
        ]))
        .unwrap();
        assert_eq!(parsed.mode, Some(SandboxMode::WorkspaceWrite));
        assert_eq!(
            parsed.writable,
            vec![PathBuf::from("/w"), PathBuf::from("/t")]
        );
        assert!(parsed.no_network);
        assert_eq!(parsed.program, strings(&["sh", "-c", "echo --mode"]));
        assert!(parse(&strings(&["--mode", "sideways", "--", "true"])).is_err());
        assert!(parse(&strings(&["--mode", "off"])).is_err());
        assert!(parse(&strings(&["--write"])).is_err());
        assert!(parse(&strings(&["--probe"])).unwrap().probe);
    }

    #[test]
    fn builds_the_wrapped_command() {
        let mut policy = ToolPolicy::new(SandboxMode::ReadOnly, ApprovalPolicy::Auto, false);
        policy.sandbox_exe = PathBuf::from("/bin/ralph");
        let args_of = |cmd: &Command| -> Vec<String> {
            cmd.get_args()
                .map(|a| a.to_string_lossy().into_owned())
                .collect()
        };
        let cmd = command(&policy, Path::new("/w"), Path::new("/t"), "ls");
        assert_eq!(cmd.get_program(), "/bin/ralph");
        assert_eq!(
            args_of(&cmd),
            strings(&[
                EXEC_ARG,
                "--mode",
                "read-only",
                "--write",
                "/t",
                "--no-network",
                "--",
                "sh",
                "-c",
                "ls"
            ])
        );
        // The secrets and the variables that lead to a socket are taken out.
        let removed = removed_env(&cmd);
        for name in [
            "OPENAI_API_KEY",
            "TMUX",
            "SSH_AUTH_SOCK",
            "DBUS_SESSION_BUS_ADDRESS",
        ] {
            assert!(removed.iter().any(|r| r == name), "{name}: {removed:?}");
        }
        // Off: unconfined (no write, network or read-only flags), still supervised; the
        // secrets stay out, the socket variables are the person's to use.
        policy.sandbox = SandboxMode::Off;
        let cmd = command(&policy, Path::new("/w"), Path::new("/t"), "ls");
        assert_eq!(cmd.get_program(), "/bin/ralph");
        assert_eq!(
            args_of(&cmd),
            strings(&[EXEC_ARG, "--mode", "off", "--", "sh", "-c", "ls"])
        );
        assert!(is_supervised(&cmd));
        assert_eq!(cmd.get_current_dir(), Some(Path::new("/w")));
        let removed = removed_env(&cmd);
        assert!(removed.iter().any(|r| r == "OPENAI_API_KEY"), "{removed:?}");
        assert!(!removed.iter().any(|r| r == "TMUX"), "{removed:?}");
    }

    #[test]
    fn support_check_fails_closed_and_names_the_way_out() {
        let full = SandboxSupport {
            landlock_abi: Some(4),
            landlock_problem: None,
            network: NetworkIsolation::Namespace,
            mount_problem: None,
            signals_scoped: true,
        };
        assert!(full.check(SandboxMode::WorkspaceWrite, false).is_ok());
        let none = unsupported("no kernel support".into());
        assert!(none.check(SandboxMode::Off, false).is_ok());
        let err = none.check(SandboxMode::ReadOnly, true).unwrap_err();
        assert!(err.contains("--sandbox off"), "{err}");
        let no_net = SandboxSupport {
            network: NetworkIsolation::Unavailable("EPERM".into()),
            ..full.clone()
        };
        assert!(no_net.check(SandboxMode::WorkspaceWrite, true).is_ok());
        let err = no_net
            .check(SandboxMode::WorkspaceWrite, false)
            .unwrap_err();
        assert!(err.contains("--network") && err.contains("EPERM"), "{err}");
        assert!(describe(&full).contains("Landlock ABI 4"));
        // No mount namespace: metadata outside could change, so commands are refused.
        let no_mounts = SandboxSupport {
            mount_problem: Some("EPERM".into()),
            ..full.clone()
        };
        let err = no_mounts.check(SandboxMode::ReadOnly, true).unwrap_err();
        assert!(
            err.contains("metadata") && err.contains("--sandbox off"),
            "{err}"
        );
        assert!(describe(&no_mounts).contains("no private mounts (EPERM)"));
        assert!(describe(&no_net).contains("no network namespace (EPERM)"));
    }
}
