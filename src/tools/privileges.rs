//! What a confined command may no longer do, set up by the sandbox helper just before `exec`:
//! no inherited descriptor beyond 0-2, no capability (also not as root), and, by a seccomp
//! filter, no Unix socket, no io_uring, and no change to another process's limits, priority
//! or scheduling.
//!
//! Landlock confines paths, but not `connect()` to a pathname Unix socket, so a command could
//! reach any service listening on one (a tmux server that runs commands, the D-Bus session bus,
//! ssh-agent, Docker) and have it act outside the sandbox. The filter refuses `socket()` for
//! `AF_UNIX` altogether (a `socketpair()` of stream or seqpacket sockets stays, it reaches
//! nothing; a datagram pair is refused), so no pathname or abstract socket can be reached from inside;
//! io_uring is refused because its requests bypass seccomp.
//!
//! Nor does Landlock govern the syscalls that change another process of the same user by its
//! pid: `prlimit64` (a command could set ralph-tui's `RLIMIT_FSIZE` to 0, or the supervisor's
//! `RLIMIT_NOFILE`, so that its sweep could not read `/proc`), `setpriority`, `ioprio_set` and
//! the `sched_set*` family. A filter cannot compare a pid with the caller's own, so these are
//! allowed on the caller itself by pid 0 only (what `setrlimit`, `ulimit`, `nice`, `ionice`,
//! `taskset` and `chrt` with a command use); `prlimit64` on another pid may still read limits
//! (no new limit given). Any other target, a process group or a user gets EPERM.
//!
//! Syscalls of another ABI (32-bit x86, x32) are refused as a whole, as their numbers differ.
//! A root command also loses every capability (bounding, ambient, inheritable, permitted and
//! effective sets, with the securebits that keep `exec` from giving them back) so it cannot
//! make device nodes, change the hostname, mount or load modules.

use nix::libc;

/// The `AUDIT_ARCH_*` value of the syscall ABI the filter is written for (the syscall
/// numbers are libc's for the target).
#[cfg(target_arch = "x86_64")]
const ARCH: Option<u32> = Some(0xC000_003E);
#[cfg(target_arch = "aarch64")]
const ARCH: Option<u32> = Some(0xC000_00B7);
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const ARCH: Option<u32> = None;

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

/// `PRIO_PROCESS`: `setpriority`'s `which` for one process (not a group, not a user).
const PRIO_PROCESS: u32 = 0;
/// `IOPRIO_WHO_PROCESS`: `ioprio_set`'s `which` for one process.
const IOPRIO_WHO_PROCESS: u32 = 1;

/// Offsets in `struct seccomp_data { int nr; u32 arch; u64 ip; u64 args[6]; }`.
const NR: u32 = 0;
const ARCH_AT: u32 = 4;

/// The low half of syscall argument `n` (little-endian): all of an `int` argument, which is
/// all the kernel reads of a pid, a `which` or a socket domain.
const fn arg(n: u32) -> u32 {
    16 + 8 * n
}

/// The high half of syscall argument `n`.
const fn arg_high(n: u32) -> u32 {
    arg(n) + 4
}

/// Where a jump of the filter goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum To {
    /// The next instruction.
    On,
    /// The next rule (the syscall is not this rule's).
    NextRule,
    Allow,
    Deny,
}

/// One filter instruction, its jumps not yet resolved to offsets.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// Loads the 32-bit word at this offset of `seccomp_data`.
    Load(u32),
    /// Masks the loaded word.
    And(u32),
    /// Jumps by whether the loaded word equals the value.
    Eq(u32, To, To),
    /// Jumps by whether the loaded word is at least the value.
    AtLeast(u32, To, To),
    Return(To),
}

/// A rule for one syscall: its number, then the steps that decide (each path ends in a
/// verdict).
fn rule(nr: i64, decide: &[Step]) -> Result<Vec<Step>, String> {
    let nr = u32::try_from(nr).map_err(|e| e.to_string())?;
    let mut steps = vec![Step::Eq(nr, To::On, To::NextRule)];
    steps.extend_from_slice(decide);
    Ok(steps)
}

/// Steps that allow the syscall only when argument `n` is 0 (the caller itself).
fn self_only(n: u32) -> [Step; 2] {
    [Step::Load(arg(n)), Step::Eq(0, To::Allow, To::Deny)]
}

/// The rules, in order: other architectures and ABIs, then one rule per filtered syscall;
/// a syscall no rule names is allowed.
fn rules(arch: u32) -> Result<Vec<Vec<Step>>, String> {
    let int = |v: i32| u32::try_from(v).map_err(|e| e.to_string());
    let (unix, stream) = (int(libc::AF_UNIX)?, int(libc::SOCK_STREAM)?);
    let seqpacket = int(libc::SOCK_SEQPACKET)?;
    let mut rules = vec![
        vec![Step::Load(ARCH_AT), Step::Eq(arch, To::NextRule, To::Deny)],
        // From here on the number stays loaded: a rule that loads an argument decides.
        vec![
            Step::Load(NR),
            Step::AtLeast(X32_BIT, To::Deny, To::NextRule),
        ],
        rule(libc::SYS_io_uring_setup, &[Step::Return(To::Deny)])?,
        rule(
            libc::SYS_socket,
            &[Step::Load(arg(0)), Step::Eq(unix, To::Deny, To::Allow)],
        )?,
        // A datagram socketpair can send to any datagram socket by its path; a stream or
        // seqpacket pair is connected to itself and reaches nothing (Rust's standard library
        // spawns a process with a seqpacket pair, so cargo needs it to run rustc).
        rule(
            libc::SYS_socketpair,
            &[
                Step::Load(arg(0)),
                Step::Eq(unix, To::On, To::Allow),
                Step::Load(arg(1)),
                Step::And(0xF),
                Step::Eq(stream, To::Allow, To::On),
                Step::Eq(seqpacket, To::Allow, To::Deny),
            ],
        )?,
        // Itself by pid 0; another pid only to read (no new limit).
        rule(
            libc::SYS_prlimit64,
            &[
                Step::Load(arg(0)),
                Step::Eq(0, To::Allow, To::On),
                Step::Load(arg(2)),
                Step::Eq(0, To::On, To::Deny),
                Step::Load(arg_high(2)),
                Step::Eq(0, To::Allow, To::Deny),
            ],
        )?,
        rule(
            libc::SYS_setpriority,
            &[
                Step::Load(arg(0)),
                Step::Eq(PRIO_PROCESS, To::On, To::Deny),
                Step::Load(arg(1)),
                Step::Eq(0, To::Allow, To::Deny),
            ],
        )?,
        rule(
            libc::SYS_ioprio_set,
            &[
                Step::Load(arg(0)),
                Step::Eq(IOPRIO_WHO_PROCESS, To::On, To::Deny),
                Step::Load(arg(1)),
                Step::Eq(0, To::Allow, To::Deny),
            ],
        )?,
    ];
    for nr in [
        libc::SYS_sched_setaffinity,
        libc::SYS_sched_setscheduler,
        libc::SYS_sched_setparam,
        libc::SYS_sched_setattr,
    ] {
        rules.push(rule(nr, &self_only(0))?);
    }
    Ok(rules)
}

/// Lays the rules out as classic BPF, with an ALLOW and a DENY return at the end that the
/// jumps resolve to (offsets count from the next instruction).
fn assemble(rules: &[Vec<Step>]) -> Result<Vec<libc::sock_filter>, String> {
    let len: usize = rules.iter().map(Vec::len).sum();
    let (allow_at, deny_at) = (len, len + 1);
    let deny = libc::SECCOMP_RET_ERRNO | u32::try_from(libc::EPERM).map_err(|e| e.to_string())?;
    let code = |c: u32| u16::try_from(c).map_err(|e| e.to_string());
    let mut program = Vec::with_capacity(len + 2);
    for rule in rules {
        let next_rule = program.len() + rule.len();
        for step in rule {
            let here = program.len();
            let offset = |to: To| {
                let target = match to {
                    To::On => here + 1,
                    To::NextRule => next_rule,
                    To::Allow => allow_at,
                    To::Deny => deny_at,
                };
                u8::try_from(target - (here + 1)).map_err(|_| "the filter is too long".to_string())
            };
            let insn = |c: u32, jt: u8, jf: u8, k: u32| -> Result<libc::sock_filter, String> {
                Ok(libc::sock_filter {
                    code: code(c)?,
                    jt,
                    jf,
                    k,
                })
            };
            program.push(match *step {
                Step::Load(at) => insn(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0, 0, at)?,
                Step::And(mask) => insn(libc::BPF_ALU | libc::BPF_AND | libc::BPF_K, 0, 0, mask)?,
                Step::Eq(k, yes, no) => insn(
                    libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K,
                    offset(yes)?,
                    offset(no)?,
                    k,
                )?,
                Step::AtLeast(k, yes, no) => insn(
                    libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K,
                    offset(yes)?,
                    offset(no)?,
                    k,
                )?,
                Step::Return(to) => {
                    let verdict = if to == To::Deny {
                        deny
                    } else {
                        libc::SECCOMP_RET_ALLOW
                    };
                    insn(libc::BPF_RET | libc::BPF_K, 0, 0, verdict)?
                }
            });
        }
    }
    let ret = libc::BPF_RET | libc::BPF_K;
    for verdict in [libc::SECCOMP_RET_ALLOW, deny] {
        program.push(libc::sock_filter {
            code: code(ret)?,
            jt: 0,
            jf: 0,
            k: verdict,
        });
    }
    Ok(program)
}

/// The filter: see the module doc for what gets EPERM; everything else is allowed.
fn program() -> Result<Vec<libc::sock_filter>, String> {
    let Some(arch) = ARCH else {
        return Err("no seccomp filter for this architecture".into());
    };
    assemble(&rules(arch)?)
}

/// Installs the filter on this thread (inherited by everything it `exec`s and starts).
/// Needs no-new-privs (see [`drop_capabilities`]) or CAP_SYS_ADMIN.
#[allow(
    unsafe_code,
    reason = "PR_SET_SECCOMP takes a pointer to the filter; no safe binding in our dependencies"
)]
pub(crate) fn install_syscall_filter() -> Result<(), String> {
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
    fn verdict(arch: u32, nr: u32, args: [u64; 6]) -> u32 {
        let filter = program().unwrap();
        let word = |offset: u32| match offset {
            NR => nr,
            ARCH_AT => arch,
            at if (16..64).contains(&at) => {
                let value = args[usize::try_from((at - 16) / 8).unwrap()];
                let half = if at % 8 == 0 { value } else { value >> 32 };
                u32::try_from(half & 0xFFFF_FFFF).unwrap()
            }
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

    const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
    const DENY: u32 = libc::SECCOMP_RET_ERRNO | 1;

    fn at(n: i64, args: &[u64]) -> u32 {
        let mut all = [0u64; 6];
        all[..args.len()].copy_from_slice(args);
        verdict(ARCH.unwrap(), u32::try_from(n).unwrap(), all)
    }

    fn int(v: i32) -> u64 {
        u64::try_from(v).unwrap()
    }

    #[test]
    fn the_filter_refuses_unix_sockets_io_uring_and_other_abis_only() {
        assert_eq!(libc::EPERM, 1);
        let (unix, inet) = (int(libc::AF_UNIX), int(libc::AF_INET));
        let stream = int(libc::SOCK_STREAM | libc::SOCK_CLOEXEC);
        let dgram = int(libc::SOCK_DGRAM);
        assert_eq!(at(libc::SYS_socket, &[unix, stream]), DENY);
        assert_eq!(at(libc::SYS_socket, &[inet, stream]), ALLOW);
        assert_eq!(at(libc::SYS_socketpair, &[unix, stream]), ALLOW);
        assert_eq!(at(libc::SYS_socketpair, &[unix, dgram]), DENY);
        let seqpacket = int(libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC);
        assert_eq!(at(libc::SYS_socketpair, &[unix, seqpacket]), ALLOW);
        assert_eq!(at(libc::SYS_socketpair, &[inet, dgram]), ALLOW);
        assert_eq!(at(libc::SYS_io_uring_setup, &[0, 0]), DENY);
        assert_eq!(at(libc::SYS_connect, &[3, 0]), ALLOW);
        assert_eq!(at(libc::SYS_getpid, &[]), ALLOW);
        let x32 = u32::try_from(libc::SYS_socket).unwrap() | X32_BIT;
        assert_eq!(
            verdict(ARCH.unwrap(), x32, [unix, stream, 0, 0, 0, 0]),
            DENY
        );
        assert_eq!(verdict(0x4000_0003, 1, [0; 6]), DENY, "i386");
    }

    #[test]
    fn limits_priority_and_scheduling_are_changed_only_on_the_caller_itself() {
        let (pid, new_limit) = (4242, 0x7ffd_0000_1000);
        // prlimit64(pid, resource, new, old)
        assert_eq!(at(libc::SYS_prlimit64, &[0, 7, new_limit, 0]), ALLOW);
        assert_eq!(at(libc::SYS_prlimit64, &[pid, 7, new_limit, 0]), DENY);
        assert_eq!(at(libc::SYS_prlimit64, &[pid, 7, 0x1000, 0]), DENY);
        assert_eq!(
            at(libc::SYS_prlimit64, &[pid, 7, 0x1_0000_0000, 0]),
            DENY,
            "a pointer whose low half is zero is still a new limit"
        );
        assert_eq!(at(libc::SYS_prlimit64, &[pid, 7, 0, new_limit]), ALLOW);
        // The kernel reads an int: a pid whose low half is 0 is pid 0.
        assert_eq!(at(libc::SYS_prlimit64, &[1 << 32, 7, new_limit, 0]), ALLOW);
        assert_eq!(at(libc::SYS_setrlimit, &[7, new_limit]), ALLOW);
        // setpriority(which, who, prio): PRIO_PROCESS, PRIO_PGRP, PRIO_USER.
        assert_eq!(at(libc::SYS_setpriority, &[0, 0, 10]), ALLOW);
        assert_eq!(at(libc::SYS_setpriority, &[0, pid, 10]), DENY);
        assert_eq!(at(libc::SYS_setpriority, &[1, 0, 10]), DENY);
        assert_eq!(at(libc::SYS_setpriority, &[2, 0, 10]), DENY);
        assert_eq!(at(libc::SYS_getpriority, &[0, pid]), ALLOW);
        // ioprio_set(which, who, ioprio): IOPRIO_WHO_PROCESS, _PGRP, _USER.
        assert_eq!(at(libc::SYS_ioprio_set, &[1, 0, 0x6000]), ALLOW);
        assert_eq!(at(libc::SYS_ioprio_set, &[1, pid, 0x6000]), DENY);
        assert_eq!(at(libc::SYS_ioprio_set, &[2, 0, 0x6000]), DENY);
        assert_eq!(at(libc::SYS_ioprio_set, &[3, 0, 0x6000]), DENY);
        for nr in [
            libc::SYS_sched_setaffinity,
            libc::SYS_sched_setscheduler,
            libc::SYS_sched_setparam,
            libc::SYS_sched_setattr,
        ] {
            assert_eq!(at(nr, &[0, 8, 0x1000]), ALLOW, "{nr} on itself");
            assert_eq!(at(nr, &[pid, 8, 0x1000]), DENY, "{nr} on another");
        }
        assert_eq!(at(libc::SYS_sched_getaffinity, &[pid, 8, 0x1000]), ALLOW);
    }

    #[test]
    fn a_rule_that_names_its_syscall_decides() {
        let verdict = |to: To| matches!(to, To::Allow | To::Deny);
        for rule in &rules(ARCH.unwrap()).unwrap()[2..] {
            assert!(matches!(rule[0], Step::Eq(_, To::On, To::NextRule)));
            for step in &rule[1..] {
                if let Step::Eq(_, yes, no) | Step::AtLeast(_, yes, no) = step {
                    assert!(*yes != To::NextRule && *no != To::NextRule, "{rule:?}");
                }
            }
            // The number is no longer loaded: the last step must give the verdict.
            match rule.last().unwrap() {
                Step::Eq(_, yes, no) | Step::AtLeast(_, yes, no) => {
                    assert!(verdict(*yes) && verdict(*no), "{rule:?}")
                }
                Step::Return(to) => assert!(verdict(*to), "{rule:?}"),
                other => panic!("{other:?} ends {rule:?}"),
            }
        }
    }

    #[test]
    fn every_jump_lands_inside_the_filter() {
        let filter = program().unwrap();
        for (i, insn) in filter.iter().enumerate() {
            if u32::from(insn.code) & 0x07 == libc::BPF_JMP {
                let far = i + 1 + usize::from(insn.jt.max(insn.jf));
                assert!(far < filter.len(), "instruction {i} jumps out");
            }
        }
        let last = filter.last().unwrap();
        assert_eq!(u32::from(last.code), libc::BPF_RET | libc::BPF_K);
    }
}
