//! What a confined command may no longer do, set up by the sandbox helper just before `exec`:
//! no inherited descriptor beyond 0-2, no capability (also not as root), and, by a seccomp
//! filter, no Unix socket and no io_uring.
//!
//! Landlock confines paths, but not `connect()` to a pathname Unix socket, so a command could
//! reach any service listening on one (a tmux server that runs commands, the D-Bus session bus,
//! ssh-agent, Docker) and have it act outside the sandbox. The filter refuses `socket()` for
//! `AF_UNIX` altogether (a `socketpair()` of stream sockets stays, it reaches nothing; any
//! other type is refused), so no pathname or abstract socket can be reached from inside; io_uring is refused because its requests bypass seccomp.
//! Syscalls of another ABI (32-bit x86, x32) are refused as a whole, as their numbers differ.
//! A root command also loses every capability (bounding, ambient, inheritable, permitted and
//! effective sets, with the securebits that keep `exec` from giving them back) so it cannot
//! make device nodes, change the hostname, mount or load modules.

use nix::libc;

/// A syscall ABI: its `AUDIT_ARCH_*` value and the numbers of the filtered syscalls.
struct Abi {
    arch: u32,
    socket: i64,
    socketpair: i64,
    io_uring_setup: i64,
}

#[cfg(target_arch = "x86_64")]
const ABI: Option<Abi> = Some(Abi {
    arch: 0xC000_003E,
    socket: libc::SYS_socket,
    socketpair: libc::SYS_socketpair,
    io_uring_setup: libc::SYS_io_uring_setup,
});
#[cfg(target_arch = "aarch64")]
const ABI: Option<Abi> = Some(Abi {
    arch: 0xC000_00B7,
    socket: libc::SYS_socket,
    socketpair: libc::SYS_socketpair,
    io_uring_setup: libc::SYS_io_uring_setup,
});
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const ABI: Option<Abi> = None;

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

/// The filter: other ABIs, `socket(AF_UNIX, ...)`, `socketpair(AF_UNIX, ...)` of any type but
/// `SOCK_STREAM` (a datagram socket can send to any datagram socket by its path) and
/// `io_uring_setup` get EPERM; everything else is allowed.
fn program() -> Result<Vec<libc::sock_filter>, String> {
    let Some(abi) = ABI else {
        return Err("no seccomp filter for this architecture".into());
    };
    let nr = |n: i64| u32::try_from(n).map_err(|e| e.to_string());
    let (socket, socketpair, io_uring) = (
        nr(abi.socket)?,
        nr(abi.socketpair)?,
        nr(abi.io_uring_setup)?,
    );
    let unix = u32::try_from(libc::AF_UNIX).map_err(|e| e.to_string())?;
    let stream = u32::try_from(libc::SOCK_STREAM).map_err(|e| e.to_string())?;
    let load = libc::BPF_LD | libc::BPF_W | libc::BPF_ABS;
    let jeq = libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K;
    let jge = libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K;
    let and = libc::BPF_ALU | libc::BPF_AND | libc::BPF_K;
    let ret = libc::BPF_RET | libc::BPF_K;
    let deny = libc::SECCOMP_RET_ERRNO | u32::try_from(libc::EPERM).unwrap_or(1);
    // struct seccomp_data { int nr; u32 arch; u64 ip; u64 args[6]; }: nr at 0, arch at 4,
    // the low halves of args[0] and args[1] at 16 and 24 (little-endian). Jump offsets count
    // from the next instruction; ALLOW is at 15, DENY at 16.
    Ok(vec![
        /* 0 */ op(load, 0, 0, 4),
        /* 1 */ op(jeq, 1, 0, abi.arch),
        /* 2 */ op(ret, 0, 0, deny),
        /* 3 */ op(load, 0, 0, 0),
        /* 4 */ op(jge, 11, 0, X32_BIT),
        /* 5 */ op(jeq, 10, 0, io_uring),
        /* 6 */ op(jeq, 0, 2, socket),
        /* 7 */ op(load, 0, 0, 16),
        /* 8 */ op(jeq, 7, 6, unix),
        /* 9 */ op(jeq, 0, 5, socketpair),
        /* 10 */ op(load, 0, 0, 16),
        /* 11 */ op(jeq, 0, 3, unix),
        /* 12 */ op(load, 0, 0, 24),
        /* 13 */ op(and, 0, 0, 0xF),
        /* 14 */ op(jeq, 0, 1, stream),
        /* 15 */ op(ret, 0, 0, libc::SECCOMP_RET_ALLOW),
        /* 16 */ op(ret, 0, 0, deny),
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

    /// Runs the filter on one syscall, as the kernel would (the subset of classic BPF it
    /// uses).
    fn verdict(arch: u32, nr: u32, args: [u32; 2]) -> u32 {
        let filter = program().unwrap();
        let word = |offset: u32| match offset {
            0 => nr,
            4 => arch,
            16 => args[0],
            24 => args[1],
            other => panic!("unexpected load at {other}"),
        };
        let (mut pc, mut acc) = (0usize, 0u32);
        loop {
            let insn = filter[pc];
            let code = u32::from(insn.code);
            pc += 1;
            match code & 0x07 {
                c if c == libc::BPF_LD => acc = word(insn.k),
                c if c == libc::BPF_ALU => acc &= insn.k,
                c if c == libc::BPF_RET => return insn.k,
                c if c == libc::BPF_JMP => {
                    let taken = if code & 0xF0 == libc::BPF_JEQ {
                        acc == insn.k
                    } else {
                        acc >= insn.k
                    };
                    pc += usize::from(if taken { insn.jt } else { insn.jf });
                }
                other => panic!("unexpected class {other}"),
            }
        }
    }

    #[test]
    fn the_filter_refuses_unix_sockets_io_uring_and_other_abis_only() {
        let abi = ABI.unwrap();
        let nr = |n: i64| u32::try_from(n).unwrap();
        let unix = u32::try_from(libc::AF_UNIX).unwrap();
        let inet = u32::try_from(libc::AF_INET).unwrap();
        let stream = u32::try_from(libc::SOCK_STREAM | libc::SOCK_CLOEXEC).unwrap();
        let dgram = u32::try_from(libc::SOCK_DGRAM).unwrap();
        let allow = libc::SECCOMP_RET_ALLOW;
        let deny = libc::SECCOMP_RET_ERRNO | u32::try_from(libc::EPERM).unwrap();
        let at = |n, args| verdict(abi.arch, n, args);
        assert_eq!(at(nr(abi.socket), [unix, stream]), deny);
        assert_eq!(at(nr(abi.socket), [inet, stream]), allow);
        assert_eq!(at(nr(abi.socketpair), [unix, stream]), allow);
        assert_eq!(at(nr(abi.socketpair), [unix, dgram]), deny);
        assert_eq!(at(nr(abi.io_uring_setup), [0, 0]), deny);
        assert_eq!(at(nr(libc::SYS_connect), [3, 0]), allow);
        assert_eq!(at(nr(libc::SYS_socket) | X32_BIT, [unix, stream]), deny);
        assert_eq!(verdict(0x4000_0003, 1, [0, 0]), deny, "i386");
    }
}
