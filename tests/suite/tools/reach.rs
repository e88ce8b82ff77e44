//! What a command cannot reach from inside the sandbox: a descriptor beyond 0-2 (a terminal
//! least of all), a Unix socket (a tmux server, a listening service), a capability (device
//! nodes, the hostname), the host's SysV IPC objects, the API key, and the limits, priority
//! or scheduling of any process but itself. Also `--verify` runs in the same sandbox and
//! leaves nothing behind, even when it tried to starve its supervisor of descriptors.
//!
//! Where this kernel cannot give the sandbox, each test checks that commands are refused with
//! the way out instead of run unconfined.

use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixDatagram, UnixListener};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use ralph_tui::protocol::policy::{ApprovalPolicy, SandboxMode};
use ralph_tui::tools::sandbox;
use serde_json::json;

use super::super::common::*;
use super::isolation::{marker, sandboxed, wait_until, with_marker};
use super::Bench;

/// A pseudo-terminal whose descriptors children inherit (no close-on-exec), as a careless
/// library in ralph-tui would leave one.
fn leaked_terminal() -> nix::pty::OpenptyResult {
    let pty = nix::pty::openpty(None, None).unwrap();
    for fd in [pty.master.as_raw_fd(), pty.slave.as_raw_fd()] {
        nix::fcntl::fcntl(
            fd,
            nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::empty()),
        )
        .unwrap();
    }
    pty
}

#[test]
fn commands_get_only_stdio_even_when_a_terminal_leaks() {
    let _pty = leaked_terminal();
    // Confined or not, the supervisor closes what it inherited.
    let off = Bench::with(SandboxMode::Off, ApprovalPolicy::Auto, true);
    assert_only_stdio(&off.ok("run_command", json!({ "command": LIST_FDS })));
    let Some(bench) = sandboxed() else { return };
    assert_only_stdio(&bench.ok("run_command", json!({ "command": LIST_FDS })));
}

#[test]
fn no_terminal_or_device_can_be_opened_even_for_reading() {
    let pty = nix::pty::openpty(None, None).unwrap();
    let tty = nix::unistd::ttyname(&pty.slave).unwrap();
    // Shared memory is the command's own: writable, and not the host's.
    let shm = format!("ralph-reach-{}", std::process::id());
    let command = format!(
        "(exec 3< {tty}) && echo opened-tty; (exec 3< /dev/ptmx) && echo opened-ptmx; ls /dev; echo ok > /dev/null && echo null-ok; echo x > /dev/shm/{shm} && echo shm-ok",
        tty = tty.display()
    );
    for mode in [SandboxMode::WorkspaceWrite, SandboxMode::ReadOnly] {
        let bench = Bench::with(mode, ApprovalPolicy::Auto, false);
        if bench.sandbox_available().is_err() {
            continue;
        }
        let out = bench.ok("run_command", json!({ "command": command }));
        assert!(!out.contains("opened-"), "{mode:?}: {out}");
        assert!(
            out.contains("null-ok") && out.contains("shm-ok"),
            "{mode:?}: {out}"
        );
        assert!(!Path::new("/dev/shm").join(&shm).exists());
        let listed: Vec<&str> = out
            .lines()
            .skip_while(|l| !l.starts_with("exit code"))
            .skip(1)
            .filter(|l| !l.contains(' ') && !l.is_empty() && !l.ends_with("-ok"))
            .collect();
        assert_eq!(
            listed,
            [
                "fd", "full", "null", "pts", "random", "shm", "stderr", "stdin", "stdout",
                "urandom", "zero"
            ],
            "{mode:?}: {out}"
        );
    }
}

/// A tmux server of the test's own, on a socket in a temp dir; killed when dropped.
struct TmuxServer {
    socket: std::path::PathBuf,
}

impl TmuxServer {
    fn start(dir: &Path) -> Self {
        let socket = dir.join("tmux.sock");
        let status = Command::new("tmux")
            .arg("-S")
            .arg(&socket)
            .args(["-f", "/dev/null", "new-session", "-d", "sleep 600"])
            .stdin(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "tmux did not start");
        Self { socket }
    }
}

impl Drop for TmuxServer {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .status();
    }
}

#[test]
fn a_tmux_server_and_a_listening_socket_are_unreachable() {
    let Some(bench) = sandboxed() else { return };
    std::fs::write(
        bench.root().join("prog.rs"),
        "fn main() { let s = std::process::Command::new(\"true\").status().unwrap(); assert!(s.success()); }\n",
    )
    .unwrap();
    // Both under the system temp dir, as a user's tmux socket and services would be.
    let outside = tempfile::tempdir().unwrap();
    let tmux = TmuxServer::start(outside.path());
    let listener_path = outside.path().join("service.sock");
    let listener = UnixListener::bind(&listener_path).unwrap();
    listener.set_nonblocking(true).unwrap();
    // A datagram socket takes a message from any socket that names its path.
    let datagram_path = outside.path().join("log.sock");
    let datagram = UnixDatagram::bind(&datagram_path).unwrap();
    datagram.set_nonblocking(true).unwrap();
    let escaped = outside.path().join("escaped");
    let out = bench.call(
        "run_command",
        json!({"command": format!(
            "tmux -S {sock} run-shell 'touch {escaped}'; echo tmux=$?; \
             TMUX={sock},1,0 tmux run-shell 'touch {escaped}'; echo env=$?; \
             timeout 5 tmux -S {listener} ls; echo listener=$?; \
             python3 -c \"import socket; a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); a.sendto(b'x', '{datagram}')\"; echo datagram=$?; \
             python3 -c 'import socket; socket.socketpair()'; echo pair=$?; \
             python3 -c 'import socket; socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)'; echo seqpacket=$?; \
             {cargo} --version >/dev/null 2>&1 && {rustc} -o prog prog.rs && ./prog; echo spawn=$?",
            sock = tmux.socket.display(),
            escaped = escaped.display(),
            listener = listener_path.display(),
            datagram = datagram_path.display(),
            cargo = "cargo",
            rustc = "rustc",
        )}),
    );
    // A stream or seqpacket socketpair (no address, reaches nothing) still works: Rust's
    // standard library spawns with a seqpacket pair, so cargo could not run rustc without it.
    assert!(out.output.contains("pair=0"), "{}", out.output);
    assert!(out.output.contains("seqpacket=0"), "{}", out.output);
    assert!(out.output.contains("spawn=0"), "{}", out.output);
    for step in ["tmux", "env", "listener", "datagram"] {
        assert!(
            out.output.contains(&format!("{step}=")) && !out.output.contains(&format!("{step}=0")),
            "{step}: {}",
            out.output
        );
    }
    assert!(!escaped.exists(), "a tmux server ran a command for it");
    assert!(
        matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the listening socket got a connection"
    );
    let mut buf = [0u8; 8];
    assert!(
        matches!(datagram.recv(&mut buf), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the datagram socket got a message"
    );
    // The server is fine: the same command from outside the sandbox gets through.
    let status = Command::new("tmux")
        .arg("-S")
        .arg(&tmux.socket)
        .arg("run-shell")
        .arg(format!("touch {}", escaped.display()))
        .status()
        .unwrap();
    assert!(status.success() && escaped.exists());
}

/// The fields of `/proc/self/status` a command printed, by name.
fn status_field<'a>(out: &'a str, name: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .unwrap_or_else(|| panic!("no {name} in {out}"))
        .trim()
}

#[test]
fn commands_hold_no_capability_no_device_no_hostname_and_no_host_ipc() {
    let Some(bench) = sandboxed() else { return };
    // A message queue of the host's, made outside the sandbox.
    let made = Command::new("ipcmk").arg("-Q").output().unwrap();
    let text = String::from_utf8_lossy(&made.stdout);
    let queue = text.split_whitespace().last().unwrap().to_string();
    let host_uts = std::fs::read_link("/proc/self/ns/uts").unwrap();
    let out = bench.call(
        "run_command",
        json!({"command": format!(
            "grep -E '^(CapEff|CapPrm|CapBnd|CapAmb|NoNewPrivs):' /proc/self/status; \
             mknod blk b 7 0; echo blk=$?; mknod chr c 1 3; echo chr=$?; \
             hostname \"$(hostname)\"; echo hostname=$?; echo uts=$(readlink /proc/self/ns/uts); \
             ipcrm -q {queue}; echo ipcrm=$?"
        )}),
    );
    let listed = String::from_utf8_lossy(&Command::new("ipcs").arg("-q").output().unwrap().stdout)
        .into_owned();
    let _ = Command::new("ipcrm").args(["-q", &queue]).status();
    let out = out.output;
    for set in ["CapEff", "CapPrm", "CapAmb"] {
        assert_eq!(status_field(&out, set), "0000000000000000", "{set}: {out}");
    }
    if nix::unistd::geteuid().is_root() {
        assert_eq!(status_field(&out, "CapBnd"), "0000000000000000", "{out}");
    }
    assert_eq!(status_field(&out, "NoNewPrivs"), "1", "{out}");
    for step in ["blk", "chr", "hostname", "ipcrm"] {
        assert!(
            out.contains(&format!("{step}=")) && !out.contains(&format!("{step}=0")),
            "{step}: {out}"
        );
    }
    assert!(!bench.root().join("blk").exists() && !bench.root().join("chr").exists());
    assert!(
        !out.contains(&format!("uts={}", host_uts.display())),
        "the command shares the host's UTS namespace: {out}"
    );
    assert!(
        listed
            .lines()
            .any(|l| l.split_whitespace().nth(1) == Some(queue.as_str())),
        "the host's queue is gone: {listed}"
    );
}

#[test]
fn the_api_key_reaches_no_command_and_no_file_of_the_run_dir() {
    let repo = TempRepo::new();
    let key = format!("sk-test-{}-secretvalue", std::process::id());
    // The worker finds the key in a file too: its value is masked in what the tool returns.
    repo.write(".env", &format!("SERVER_KEY={key}\n"));
    let tmp = tempfile::tempdir().unwrap();
    let script = script(
        tmp.path(),
        vec![turns(&[
            call(
                "run_command",
                json!({"command": "echo key=$SERVER_KEY openai=$OPENAI_API_KEY; v=$(cut -d= -f2 .env); env | grep -cF \"$v\"; cat .env"}),
            ),
            call("read_file", json!({"path": ".env"})),
            complete_report("looked for keys"),
        ])],
    );
    let backend = format!("script:{}", script.display());
    let mut args = vec![
        "--backend",
        backend.as_str(),
        "--api-key-env",
        "SERVER_KEY",
        "--verify",
        "echo verify=$SERVER_KEY; cat .env",
        // The observation shows `.env` whole: the key is masked there as in read_file's.
        "--observe",
        "on",
    ];
    let support = sandbox::probe_with(Path::new(BIN));
    if support.check(SandboxMode::WorkspaceWrite, false).is_err() {
        args.extend(["--sandbox", "off"]);
    }
    args.push("find the key");
    let run_dir = tmp.path().join("run");
    let out = headless(repo.path(), &run_dir, &args)
        .env("SERVER_KEY", &key)
        .env("OPENAI_API_KEY", &key)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 0, "{stderr}");
    let events = events(&out.stdout);
    let result = of_type(&events, "tool_result")[0]["output"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(result.contains("key= openai=\n0\n"), "{result}");
    assert!(result.contains("[secret hidden]"), "{result}");
    let verification = &last(&events)["verification"]["output_tail"];
    assert!(
        verification.as_str().unwrap().contains("verify=\n"),
        "{verification}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains(&key) && !stderr.contains(&key));
    let mut found = Vec::new();
    let mut dirs = vec![run_dir];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if String::from_utf8_lossy(&std::fs::read(&path).unwrap()).contains(&key) {
                found.push(path);
            }
        }
    }
    assert!(found.is_empty(), "the key is in {found:?}");
}

#[test]
fn verify_runs_sandboxed_and_leaves_nothing_behind() {
    if sandbox::probe_with(Path::new(BIN))
        .check(SandboxMode::WorkspaceWrite, false)
        .is_err()
    {
        return;
    }
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside.txt");
    let (build, needle) = marker();
    let rest = needle.trim_start_matches("rtmark-");
    // The worker writes the check the person's --verify runs.
    let check = format!(
        "echo x > {outside}; echo outside=$?\n\
         echo planted > .git/hooks/pre-commit; echo hook=$?\n\
         {build}; setsid sh -c \"sleep 300; : ${{m}}-{rest}\" >/dev/null 2>&1 &\n\
         echo started\n",
        outside = outside.display()
    );
    let script = script(
        tmp.path(),
        vec![turns(&[
            call("write_file", json!({"path": "check.sh", "content": check})),
            complete_report("wrote the check"),
        ])],
    );
    let backend = format!("script:{}", script.display());
    let out = headless(
        repo.path(),
        &tmp.path().join("run"),
        &["--backend", &backend, "--verify", "sh check.sh", "verify"],
    )
    .output()
    .unwrap();
    let events = events(&out.stdout);
    let tail = last(&events)["verification"]["output_tail"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(tail.contains("started"), "{tail}");
    assert!(
        !tail.contains("outside=0") && !tail.contains("hook=0"),
        "{tail}"
    );
    assert!(!outside.exists());
    assert!(!repo.path().join(".git/hooks/pre-commit").exists());
    assert!(
        wait_until(Duration::from_secs(10), || with_marker(&needle).is_empty()),
        "the verification left {:?} running",
        with_marker(&needle)
    );
}

/// The lines of a `/proc/<pid>/limits` for file size and open files.
fn limit_lines(limits: &str) -> Vec<String> {
    limits
        .lines()
        .filter(|l| l.starts_with("Max file size") || l.starts_with("Max open files"))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

#[test]
fn commands_change_limits_priority_and_scheduling_of_no_other_process() {
    let Some(bench) = sandboxed() else { return };
    let (build, needle) = marker();
    let rest = needle.trim_start_matches("rtmark-");
    // $PPID is the supervisor, whose sweep must read /proc at the round's end.
    // $PPID is the supervisor, whose sweep must read /proc at the round's end.
    let command = format!(
        r#"sup=$PPID
{build}; setsid sh -c "sleep 300; : ${{m}}-{rest}" >/dev/null 2>&1 &
prlimit --pid $sup --fsize=0:0; echo fsize=$?
prlimit --pid $sup --nofile=0:0; echo nofile=$?
renice -n 19 -p $sup >/dev/null; echo renice=$?
ionice -c 3 -p $sup; echo ionice=$?
prlimit --pid $sup --nofile >/dev/null; echo read=$?
prlimit --nofile=32:32 sh -c 'echo self=$(ulimit -n)'
nice -n 7 sh -c 'echo nice=$(cut -d" " -f19 /proc/self/stat)'
ionice -c 3 true; echo idle=$?
python3 - $sup <<'PY'
import os, resource, sys
sup = int(sys.argv[1])
def attempt(name, call):
    try:
        call()
        print(name + '=0')
    except OSError as e:
        print('%s=%d' % (name, e.errno))
attempt('py', lambda: resource.prlimit(sup, resource.RLIMIT_NOFILE, (0, 0)))
attempt('prio', lambda: os.setpriority(os.PRIO_PROCESS, sup, 19))
attempt('affinity', lambda: os.sched_setaffinity(sup, os.sched_getaffinity(sup)))
attempt('policy', lambda: os.sched_setscheduler(sup, os.SCHED_BATCH, os.sched_param(0)))
attempt('param', lambda: os.sched_setparam(sup, os.sched_param(0)))
attempt('own_limit', lambda: resource.prlimit(0, resource.RLIMIT_NOFILE, (64, 64)))
attempt('own_affinity', lambda: os.sched_setaffinity(0, os.sched_getaffinity(0)))
attempt('own_policy', lambda: os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0)))
print('own=%d' % resource.getrlimit(resource.RLIMIT_NOFILE)[0])
PY
echo limits
cat /proc/$sup/limits"#
    );
    let out = bench.ok("run_command", json!({ "command": command }));
    let said = |line: &str| out.lines().any(|l| l.trim() == line);
    for refused in [
        "fsize=1",
        "nofile=1",
        "renice=1",
        "ionice=1",
        "py=1",
        "prio=1",
        "affinity=1",
        "policy=1",
        "param=1",
    ] {
        assert!(said(refused), "{refused}: {out}");
    }
    // On itself (pid 0) limits, nice, affinity, policy and I/O priority still change, and
    // another's limits can still be read.
    for allowed in [
        "read=0",
        "self=32",
        "nice=7",
        "idle=0",
        "own_limit=0",
        "own_affinity=0",
        "own_policy=0",
        "own=64",
    ] {
        assert!(said(allowed), "{allowed}: {out}");
    }
    // The supervisor has the limits it started with, this process's.
    let mine = limit_lines(&std::fs::read_to_string("/proc/self/limits").unwrap());
    let (_, theirs) = out.split_once("\nlimits\n").unwrap();
    assert_eq!(limit_lines(theirs), mine, "{out}");
    assert!(
        wait_until(Duration::from_secs(10), || with_marker(&needle).len() == 1),
        "the background process should run until the round ends"
    );
    bench.processes.kill_all();
    assert!(
        wait_until(Duration::from_secs(10), || with_marker(&needle).is_empty()),
        "survived the round: {:?}",
        with_marker(&needle)
    );
}

#[test]
fn verify_cannot_starve_its_supervisor_and_ends_at_once() {
    if sandbox::probe_with(Path::new(BIN))
        .check(SandboxMode::WorkspaceWrite, false)
        .is_err()
    {
        return;
    }
    let repo = TempRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let (build, needle) = marker();
    let rest = needle.trim_start_matches("rtmark-");
    let check = format!(
        "prlimit --pid $PPID --nofile=0:0; echo nofile=$?\n\
         {build}; setsid sh -c \"sleep 300; : ${{m}}-{rest}\" >/dev/null 2>&1 &\n\
         echo started\n"
    );
    let script = script(
        tmp.path(),
        vec![turns(&[
            call("write_file", json!({"path": "check.sh", "content": check})),
            complete_report("wrote the check"),
        ])],
    );
    let backend = format!("script:{}", script.display());
    let started = std::time::Instant::now();
    let out = headless(
        repo.path(),
        &tmp.path().join("run"),
        &["--backend", &backend, "--verify", "sh check.sh", "verify"],
    )
    .output()
    .unwrap();
    let events = events(&out.stdout);
    let tail = last(&events)["verification"]["output_tail"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        tail.contains("started") && tail.contains("nofile=1"),
        "{tail}"
    );
    assert!(started.elapsed() < Duration::from_secs(60), "{events:?}");
    assert!(
        wait_until(Duration::from_secs(10), || with_marker(&needle).is_empty()),
        "the verification left {:?} running",
        with_marker(&needle)
    );
}
