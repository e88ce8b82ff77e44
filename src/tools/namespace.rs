//! The namespaces the sandbox helper enters before it starts a command: a network namespace
//! (no interface up), its own UTS and IPC namespaces (a hostname and SysV IPC objects of its
//! own), and a private mount namespace with the repository's git dirs bind-mounted read-only
//! and a `/dev` of its own that holds only the harmless devices (the terminals, disks and
//! input devices of the host cannot even be opened for reading); each directly when
//! ralph-tui has the privilege, else inside a new user namespace.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::PathBuf;

use nix::mount::{mount, MsFlags};
use nix::sched::{unshare, CloneFlags};
use nix::sys::statvfs::{statvfs, FsFlags};

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
fn enter_user_namespace(also: CloneFlags) -> Result<(), String> {
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

/// Moves this process into a private mount namespace where each of `paths` is bind-mounted
/// read-only onto itself; checks that each really reads as read-only afterwards.
pub(crate) fn mount_read_only(paths: &[PathBuf], in_user_ns: bool) -> Result<(), String> {
    if let Err(direct) = unshare(CloneFlags::CLONE_NEWNS) {
        if in_user_ns {
            return Err(format!("new mount namespace: {direct}"));
        }
        enter_user_namespace(CloneFlags::CLONE_NEWNS).map_err(|e| {
            format!("new mount namespace: {direct}; new user + mount namespace: {e}")
        })?;
    }
    let none: Option<&str> = None;
    mount(none, "/", none, MsFlags::MS_REC | MsFlags::MS_PRIVATE, none)
        .map_err(|e| format!("making mounts private: {e}"))?;
    for path in paths {
        let shown = path.display();
        mount(
            Some(path.as_path()),
            path.as_path(),
            none,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            none,
        )
        .map_err(|e| format!("bind-mounting {shown}: {e}"))?;
        // A remount must keep the flags the kernel locks (nosuid, nodev, noexec, atime).
        let current = statvfs(path.as_path()).map_err(|e| format!("{shown}: {e}"))?;
        let mut flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY;
        for (have, keep) in [
            (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
            (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
            (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
            (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
            (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
            (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
        ] {
            if current.flags().contains(have) {
                flags |= keep;
            }
        }
        mount(none, path.as_path(), none, flags, none)
            .map_err(|e| format!("remounting {shown} read-only: {e}"))?;
        let after = statvfs(path.as_path()).map_err(|e| format!("{shown}: {e}"))?;
        if !after.flags().contains(FsFlags::ST_RDONLY) {
            return Err(format!("{shown} is still writable after the remount"));
        }
    }
    Ok(())
}

/// The command's own shared memory: a private tmpfs it may write.
pub(crate) const SHM: &str = "/dev/shm";

/// The devices a command's `/dev` holds, bound from the host's: the ones it may write.
const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom"];

/// Mounts a fresh tmpfs on `/dev` (in this process's private mount namespace) holding
/// [`DEVICES`], the `fd`, `stdin`, `stdout` and `stderr` links, an empty `pts` and a fresh
/// tmpfs on `shm` ([`SHM`]).
/// What was under `/dev` (terminals, disks, input devices) is no longer reachable by path.
pub(crate) fn private_dev() -> Result<(), String> {
    let none: Option<&str> = None;
    let mut held = Vec::new();
    for name in DEVICES {
        let file = File::open(format!("/dev/{name}")).map_err(|e| format!("/dev/{name}: {e}"))?;
        held.push((name, file));
    }
    mount(
        Some("tmpfs"),
        "/dev",
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
        Some("mode=0755,size=64k"),
    )
    .map_err(|e| format!("mounting a private /dev: {e}"))?;
    for (name, file) in &held {
        let target = format!("/dev/{name}");
        File::create(&target).map_err(|e| format!("{target}: {e}"))?;
        let source = format!("/proc/self/fd/{}", file.as_raw_fd());
        mount(
            Some(source.as_str()),
            target.as_str(),
            none,
            MsFlags::MS_BIND,
            none,
        )
        .map_err(|e| format!("binding {target}: {e}"))?;
    }
    for (link, to) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        std::os::unix::fs::symlink(to, format!("/dev/{link}"))
            .map_err(|e| format!("/dev/{link}: {e}"))?;
    }
    for dir in ["pts", "shm"] {
        std::fs::create_dir(format!("/dev/{dir}")).map_err(|e| format!("/dev/{dir}: {e}"))?;
    }
    // Shared memory of the command's own (POSIX semaphores, multiprocessing), writable.
    mount(
        Some("tmpfs"),
        SHM,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        Some("mode=1777"),
    )
    .map_err(|e| format!("mounting a private {SHM}: {e}"))?;
    Ok(())
}
