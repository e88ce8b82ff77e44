//! The command's private mount namespace: a `/dev` of its own that holds only the harmless
//! devices, the repository's git dirs bound read-only, and every other mount read-only and
//! nosuid except the paths the command may write.
//!
//! Landlock governs what a command writes into files and directories, not their metadata:
//! `chmod`, `chown`, `utimensat` and `setxattr` pass it, also through a descriptor opened
//! read-only. So the paths Landlock lets the command write (the workspace, the round's temp
//! dir, the private `/dev/shm`) are each bound onto themselves, and every other mount is
//! remounted `MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID`. That flag is per mount, on this
//! namespace's copies: the host's mounts stay as they were. A metadata change anywhere else
//! then fails with EROFS, by path or by descriptor. Device nodes keep working on a read-only
//! mount (writes to `/dev/null` are fine), and `/proc` still reads. Mounts beneath a writable
//! path stay as they were, like the writes Landlock lets through there.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use nix::mount::{mount, MsFlags};
use nix::sched::{unshare, CloneFlags};
use nix::sys::statvfs::{statvfs, FsFlags};

use super::namespace::enter_user_namespace;

/// The command's own shared memory: a private tmpfs it may write.
pub(crate) const SHM: &str = "/dev/shm";

/// The devices a command's `/dev` holds, bound from the host's: the ones it may write.
const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom"];

/// Moves this (single-threaded) process into a private mount namespace and shapes it for a
/// command: [`private_dev`]; each of `writable` bound onto itself and left writable (with
/// the mounts beneath it); each of `read_only` bound read-only (after the writable binds, as
/// git dirs lie inside the workspace); every other mount read-only and nosuid. Checks that
/// each mount reads as it should afterwards, and changes back into the working directory
/// (the old one is on a mount now read-only).
pub(crate) fn private_mounts(
    writable: &[PathBuf],
    read_only: &[PathBuf],
    in_user_ns: bool,
) -> Result<(), String> {
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
    private_dev()?;
    let mut kept = Vec::new();
    for path in writable
        .iter()
        .map(PathBuf::as_path)
        .chain([Path::new(SHM)])
    {
        let path = path
            .canonicalize()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        bind(&path)?;
        kept.push(path);
    }
    let mut sealed = Vec::new();
    for path in read_only {
        bind(path)?;
        remount(path, MsFlags::MS_RDONLY | MsFlags::MS_NOSUID)?;
        sealed.push(path.canonicalize().unwrap_or_else(|_| path.clone()));
    }
    seal_all_but(&kept, &sealed)?;
    let cwd = std::env::current_dir().map_err(|e| format!("working directory: {e}"))?;
    std::env::set_current_dir(&cwd).map_err(|e| format!("{}: {e}", cwd.display()))
}

/// Binds `path` onto itself, with the mounts beneath it.
fn bind(path: &Path) -> Result<(), String> {
    let none: Option<&str> = None;
    mount(
        Some(path),
        path,
        none,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        none,
    )
    .map_err(|e| format!("bind-mounting {}: {e}", path.display()))
}

/// Adds `extra` (read-only, nosuid) to the flags of the mount at `path`. Only this mount
/// changes (`MS_BIND | MS_REMOUNT`), keeping the flags a user namespace locks (nosuid,
/// nodev, noexec and the atime mode) or the kernel refuses; then checks it reads as
/// read-only.
fn remount(path: &Path, extra: MsFlags) -> Result<(), String> {
    let shown = path.display();
    let current = statvfs(path).map_err(|e| format!("{shown}: {e}"))?;
    let mut flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | extra;
    for (have, keep) in [
        (FsFlags::ST_RDONLY, MsFlags::MS_RDONLY),
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
    if !current
        .flags()
        .intersects(FsFlags::ST_NOATIME | FsFlags::ST_RELATIME)
    {
        // Neither means strictatime; left out, the remount would ask for relatime.
        flags |= MsFlags::MS_STRICTATIME;
    }
    let none: Option<&str> = None;
    mount(none, path, none, flags, none)
        .map_err(|e| format!("remounting {shown} read-only: {e}"))?;
    if !statvfs(path).is_ok_and(|after| after.flags().contains(FsFlags::ST_RDONLY)) {
        return Err(format!("{shown} is still writable after the remount"));
    }
    Ok(())
}

/// Remounts read-only and nosuid every mount of this namespace not at or beneath one of
/// `writable` (a git dir in `sealed` is beneath the workspace but stays sealed), then checks
/// each mount point reads so. A mount hidden under a later one cannot be remounted by its
/// path (nor reached through it), so only the check decides: whatever its path now leads
/// to must be read-only. A mount point this process cannot reach is no more reachable by
/// the command, which runs with the same ids and no capabilities.
fn seal_all_but(writable: &[PathBuf], sealed: &[PathBuf]) -> Result<(), String> {
    let points = mount_points()?;
    let outside = |point: &Path| {
        sealed.iter().any(|s| point.starts_with(s))
            || !writable.iter().any(|w| point.starts_with(w))
    };
    let mut first_error = None;
    for point in points.iter().filter(|p| outside(p)) {
        if let Err(e) = remount(point, MsFlags::MS_RDONLY | MsFlags::MS_NOSUID) {
            first_error.get_or_insert(e);
        }
    }
    for point in points.iter().filter(|p| outside(p)) {
        let Ok(now) = statvfs(point.as_path()) else {
            continue;
        };
        if !now
            .flags()
            .contains(FsFlags::ST_RDONLY | FsFlags::ST_NOSUID)
        {
            let why = first_error.unwrap_or_else(|| "the remount did not hold".into());
            return Err(format!(
                "{} is still writable for commands ({why})",
                point.display()
            ));
        }
    }
    Ok(())
}

/// The mount points of this process's mount namespace, from `/proc/self/mountinfo`.
fn mount_points() -> Result<Vec<PathBuf>, String> {
    let text = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("/proc/self/mountinfo: {e}"))?;
    let mut points: Vec<PathBuf> = text
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(|field| PathBuf::from(unescape(field)))
        .collect();
    points.dedup();
    Ok(points)
}

/// Undoes mountinfo's octal escapes (`\040` for a space, `\011`, `\012`, `\134`).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)))
            .and_then(|d| u8::from_str_radix(std::str::from_utf8(d).ok()?, 8).ok());
        match octal {
            Some(byte) => {
                out.push(byte);
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Mounts a fresh tmpfs on `/dev` (in this process's private mount namespace) holding
/// [`DEVICES`], the `fd`, `stdin`, `stdout` and `stderr` links, an empty `pts` and a fresh
/// tmpfs on `shm` ([`SHM`]).
/// What was under `/dev` (terminals, disks, input devices) is no longer reachable by path.
fn private_dev() -> Result<(), String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_escapes_are_undone() {
        assert_eq!(unescape("/a\\040b\\011c\\134d"), "/a b\tc\\d");
        assert_eq!(unescape("/plain"), "/plain");
        assert_eq!(unescape("/odd\\9x\\"), "/odd\\9x\\");
    }
}
