//! What a confined command may no longer do, set up by the sandbox helper just before `exec`:
//! no inherited descriptor beyond 0-2, no capability (also not as root), and, by a seccomp
//! filter, no Unix socket and no io_uring.
//!
//! Landlock confines paths, but not `connect()` to a pathname Unix socket, so a command could
//! reach any service listening on one (a tmux server that runs commands, the D-Bus session bus,
//! ssh-agent, Docker) and have it act outside the sandbox. The filter refuses `socket()` for
//! `AF_UNIX` altogether (`socketpair()` stays, it reaches nothing), so no pathname or abstract
//! socket can be reached from inside; io_uring is refused because its requests bypass seccomp.
//! Syscalls of another ABI (32-bit x86, x32) are refused as a whole, as their numbers differ.
//! A root command also loses every capability (bounding, ambient, inheritable, permitted and
//! effective sets, with the securebits that keep `exec` from giving them back) so it cannot
//! make device nodes, change the hostname, mount or load modules.

use nix::libc;

/// `AUDIT_ARCH_*` of this build's syscall ABI, with the numbers of the filtered syscalls.
#[cfg(target_arch = "x86_64")]
const ARCH: Option<(u32, i64, i64)> =
    Some((0xC000_003E, libc::SYS_socket, libc::SYS_io_uring_setup));
#[cfg(target_arch = "aarch64")]
const ARCH: Option<(u32, i64, i64)> =
    Some((0xC000_00B7, libc::SYS_socket, libc::SYS_io_uring_setup));
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const ARCH: Option<(u32, i64, i64)> = None;

/// x32 syscalls are x86_64 numbers with this bit set.
const X32_BIT: u32 = 0x4000_0000;

/// Highest descriptor closed one by one when `/proc/self/fd` cannot be listed.
const BLIND_CLOSE_LIMIT: i32 = 65_536;

/// Closes every descriptor above 2 (whatever ralph-tui or a library left without
/// close-on-exec), as listed in `/proc/self/fd`; without `/proc`, every number up to
/// [`BLIND_CLOSE_LIMIT`].
pub(crate) fn close_inherited_fds() {
    let listed: Vec<i32> = match std::fs::read_dir("/proc/self/fd") {
        Ok(entries) => entries
            .flatten()
            .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
            .collect(),
        Err(_) => (3..BLIND_CLOSE_LIMIT).collect(),
    };
    // The listing's own descriptor is among them, closed by now: EBADF is fine.
    for fd in listed.into_iter().filter(|fd| *fd > 2) {
        let _ = nix::unistd::close(fd);
    }
}

/// Drops every capability of this process and of what it `exec`s, and sets no-new-privs.
/// The bounding set and securebits need CAP_SETPCAP; without it (an ordinary user, who has
/// no capability to lose) they are skipped, and no-new-privs keeps setuid programs from
/// giving any.
pub(crate) fn drop_capabilities() -> Result<(), String> {
    use rustix::thread::{self as thread, CapabilitiesSecureBits as Bits, CapabilitySet};
    thread::set_no_new_privs(true).map_err(|e| format!("no-new-privs: {e}"))?;
    // `exec` as root gives no capability back, ever (each bit with its lock).
    let bits = Bits::NO_ROOT
        | Bits::NO_ROOT_LOCKED
        | Bits::NO_SETUID_FIXUP
        | Bits::NO_SETUID_FIXUP_LOCKED
        | Bits::KEEP_CAPS_LOCKED
        | Bits::NO_CAP_AMBIENT_RAISE
        | Bits::NO_CAP_AMBIENT_RAISE_LOCKED;
    let _ = thread::set_capabilities_secure_bits(bits);
    let _ = thread::clear_ambient_capability_set();
    for bit in 0..64 {
        // EINVAL past the kernel's last capability, EPERM without CAP_SETPCAP.
        let _ =
            thread::remove_capability_from_bounding_set(CapabilitySet::from_bits_retain(1 << bit));
    }
    let none = thread::CapabilitySets {
        effective: CapabilitySet::empty(),
        permitted: CapabilitySet::empty(),
        inheritable: CapabilitySet::empty(),
    };
    thread::set_capabilities(None, none).map_err(|e| format!("dropping capabilities: {e}"))
}

/// One classic-BPF instruction.
fn op(code: u32, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: u16::try_from(code).unwrap_or(0),
        jt,
        jf,
        k,
    }
}

/// The filter: other ABIs, `socket(AF_UNIX, ...)` and `io_uring_setup` get EPERM.
fn program() -> Result<Vec<libc::sock_filter>, String> {
    let Some((arch, socket, io_uring)) = ARCH else {
        return Err("no seccomp filter for this architecture".into());
    };
    let (socket, io_uring) = (
        u32::try_from(socket).map_err(|e| e.to_string())?,
        u32::try_from(io_uring).map_err(|e| e.to_string())?,
    );
    let load = libc::BPF_LD | libc::BPF_W | libc::BPF_ABS;
    let jeq = libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K;
    let jge = libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K;
    let ret = libc::BPF_RET | libc::BPF_K;
    let deny = libc::SECCOMP_RET_ERRNO | u32::try_from(libc::EPERM).unwrap_or(1);
    // struct seccomp_data { int nr; u32 arch; u64 ip; u64 args[6]; }: nr at 0, arch at 4,
    // the low half of args[0] at 16 (little-endian).
    Ok(vec![
        op(load, 0, 0, 4),
        op(jeq, 1, 0, arch),
        op(ret, 0, 0, deny),
        op(load, 0, 0, 0),
        op(jge, 5, 0, X32_BIT),
        op(jeq, 4, 0, io_uring),
        op(jeq, 0, 2, socket),
        op(load, 0, 0, 16),
        op(jeq, 1, 0, u32::try_from(libc::AF_UNIX).unwrap_or(1)),
        op(ret, 0, 0, libc::SECCOMP_RET_ALLOW),
        op(ret, 0, 0, deny),
    ])
}

/// Installs the filter on this thread (inherited by everything it `exec`s and starts).
/// Needs no-new-privs (see [`drop_capabilities`]) or CAP_SYS_ADMIN.
#[allow(
    unsafe_code,
    reason = "PR_SET_SECCOMP takes a pointer to the filter; no safe binding in our dependencies"
)]
pub(crate) fn refuse_unix_sockets() -> Result<(), String> {
    let filter = program()?;
    let fprog = libc::sock_fprog {
        len: u16::try_from(filter.len()).map_err(|e| e.to_string())?,
        filter: filter.as_ptr().cast_mut(),
    };
    // SAFETY: the program outlives the call, which copies it into the kernel.
    let set = unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER as libc::c_ulong,
            std::ptr::addr_of!(fprog),
            0,
            0,
        )
    };
    if set != 0 {
        return Err(format!("seccomp: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_jump_lands_inside_the_program() {
        let filter = program().unwrap();
        for (at, insn) in filter.iter().enumerate() {
            if u32::from(insn.code) & 0x07 == libc::BPF_JMP {
                assert!(at + 1 + usize::from(insn.jt) < filter.len(), "{at}");
                assert!(at + 1 + usize::from(insn.jf) < filter.len(), "{at}");
            }
        }
        assert_eq!(
            u32::from(filter.last().unwrap().code),
            libc::BPF_RET | libc::BPF_K
        );
    }
}
