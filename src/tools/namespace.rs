//! The namespaces the sandbox helper enters before it starts a command: a network namespace
//! (no interface up) and its own UTS and IPC namespaces (a hostname and SysV IPC objects of
//! its own); each directly when ralph-tui has the privilege, else inside a new user
//! namespace. The private mount namespace is [`super::mounts`]'s.

use nix::sched::{unshare, CloneFlags};

/// How a command can be cut off from the network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetworkIsolation {
    /// A new network namespace directly (ralph-tui runs with the privilege for it).
    Namespace,
    /// A new user namespace first, then the network namespace (unprivileged).
    UserNamespace,
    /// Neither works; the reason.
    Unavailable(String),
}

/// The namespaces every confined command gets: a hostname and SysV IPC objects of its own.
const HOST: CloneFlags = CloneFlags::CLONE_NEWUTS.union(CloneFlags::CLONE_NEWIPC);

/// Moves this (single-threaded) process into new network, UTS and IPC namespaces.
pub(crate) fn isolate_network() -> Result<NetworkIsolation, String> {
    let flags = CloneFlags::CLONE_NEWNET | HOST;
    let direct = match unshare(flags) {
        Ok(()) => return Ok(NetworkIsolation::Namespace),
        Err(e) => e,
    };
    enter_user_namespace(flags).map_err(|e| {
        format!("new network namespace: {direct}; new user + network namespace: {e}")
    })?;
    Ok(NetworkIsolation::UserNamespace)
}

/// Moves this process into new UTS and IPC namespaces (for a command that keeps the
/// network); returns whether that took a new user namespace.
pub(crate) fn isolate_host() -> Result<bool, String> {
    let direct = match unshare(HOST) {
        Ok(()) => return Ok(false),
        Err(e) => e,
    };
    enter_user_namespace(HOST).map_err(|e| {
        format!("new UTS + IPC namespace: {direct}; new user + UTS + IPC namespace: {e}")
    })?;
    Ok(true)
}

/// Unshares a new user namespace together with `also`, mapping our own ids (or files the
/// command creates would have no owner).
pub(super) fn enter_user_namespace(also: CloneFlags) -> Result<(), String> {
    let uid = nix::unistd::getuid();
    let gid = nix::unistd::getgid();
    unshare(CloneFlags::CLONE_NEWUSER | also).map_err(|e| e.to_string())?;
    let write = |file: &str, text: String| {
        std::fs::write(file, text).map_err(|e| format!("writing {file}: {e}"))
    };
    write("/proc/self/setgroups", "deny".into())?;
    write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1"))?;
    Ok(())
}
