//! What sandboxed commands cannot change outside the paths they may write: a file's mode (by
//! path or through a descriptor opened read-only), a setuid bit on a copy of a program, its
//! times, its extended attributes, its owner, the host's `/dev/null`; and that all of these
//! still work in the workspace and the round's temp dir.
//!
//! Where this kernel cannot give the sandbox, each test checks that commands are refused with
//! the way out instead of run unconfined.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use ralph_tui::protocol::policy::{ApprovalPolicy, SandboxMode};
use serde_json::json;

use super::isolation::sandboxed;
use super::Bench;

fn mode_of(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// Whether the file system under `dir` takes `user.*` attributes at all.
fn takes_xattrs(dir: &Path) -> bool {
    let probe = dir.join("xattr-probe");
    std::fs::write(&probe, "").unwrap();
    let taken = std::process::Command::new("python3")
        .arg("-c")
        .arg("import os, sys; os.setxattr(sys.argv[1], 'user.probe', b'1')")
        .arg(&probe)
        .status()
        .is_ok_and(|s| s.success());
    std::fs::remove_file(&probe).unwrap();
    taken
}

fn has_xattr(path: &Path) -> bool {
    std::process::Command::new("python3")
        .arg("-c")
        .arg("import os, sys; os.getxattr(sys.argv[1], 'user.campaign')")
        .arg(path)
        .status()
        .unwrap()
        .success()
}

/// One shell line per metadata call, each echoing `DONE-<NAME>` when it went through.
fn metadata_calls(file: &Path, program: &Path) -> String {
    let (f, p) = (file.display(), program.display());
    [
        format!("chmod 666 '{f}' && echo DONE-CHMOD"),
        format!(
            "python3 -c \"import os; fd = os.open('{f}', os.O_RDONLY); os.fchmod(fd, 0o666)\" && echo DONE-FCHMOD"
        ),
        format!("chmod u+s '{p}' && echo DONE-SETUID"),
        format!("touch -d 2001-01-01 '{f}' && echo DONE-UTIME"),
        format!("python3 -c \"import os; os.setxattr('{f}', 'user.campaign', b'x')\" && echo DONE-XATTR"),
        format!("chown \"$(id -u):$(id -g)\" '{f}' && echo DONE-CHOWN"),
    ]
    .join("; ")
}

#[test]
fn metadata_outside_the_writable_paths_cannot_change() {
    let Some(bench) = sandboxed() else { return };
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "secret\n").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let program = outside.path().join("true");
    std::fs::copy("/bin/true", &program).unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mtime = std::fs::metadata(&secret).unwrap().modified().unwrap();
    let command = format!(
        "{}; chmod 666 /dev/null && echo DONE-DEVNULL; echo ok > /dev/null && echo null-writable",
        metadata_calls(&secret, &program)
    );
    let out = bench.ok("run_command", json!({ "command": command }));
    assert!(
        !out.contains("DONE-") && out.contains("null-writable"),
        "{out}"
    );
    assert_eq!(mode_of(&secret), 0o600, "{out}");
    assert_eq!(mode_of(&program), 0o755, "{out}");
    assert_eq!(
        std::fs::metadata(&secret).unwrap().modified().unwrap(),
        mtime
    );
    if takes_xattrs(outside.path()) {
        assert!(!has_xattr(&secret), "{out}");
    }
    // Read-only mode: the workspace itself is outside what the command may write.
    let bench = Bench::with(SandboxMode::ReadOnly, ApprovalPolicy::Auto, false);
    let readme = bench.root().join("README.md");
    let before = mode_of(&readme);
    let out = bench.ok(
        "run_command",
        json!({"command": "chmod 600 README.md && echo DONE-CHMOD; touch -d 2001-01-01 README.md && echo DONE-UTIME; echo tried"}),
    );
    assert!(!out.contains("DONE-"), "{out}");
    assert_eq!(mode_of(&readme), before);
}

#[test]
fn metadata_in_the_workspace_and_the_temp_dir_still_changes() {
    let Some(bench) = sandboxed() else { return };
    let xattrs = takes_xattrs(&bench.root()) && takes_xattrs(bench.scratch.path());
    let script = "printf '#!/bin/sh\\necho script-ran\\n' > run.sh; chmod +x run.sh && ./run.sh; \
                  printf x > \"$TMPDIR/own\"; cp /bin/true \"$TMPDIR/true\"";
    let calls = metadata_calls(&bench.root().join("run.sh"), &bench.root().join("run.sh"));
    let tmp_calls = metadata_calls(
        &bench.round_tmp().join("own"),
        &bench.round_tmp().join("true"),
    );
    let out = bench.ok(
        "run_command",
        json!({ "command": format!("{script}; {calls}; {tmp_calls}") }),
    );
    assert!(out.contains("script-ran"), "{out}");
    let mut wanted = vec!["CHMOD", "FCHMOD", "SETUID", "UTIME", "CHOWN"];
    if xattrs {
        wanted.push("XATTR");
    }
    for name in wanted {
        assert_eq!(
            out.matches(&format!("DONE-{name}")).count(),
            2,
            "{name}: {out}"
        );
    }
    assert_eq!(mode_of(&bench.round_tmp().join("true")) & 0o4000, 0o4000);
}
