//! The model file check every backend plan runs before anything is written: a GGUF file
//! that is present, readable and not truncated. Backends and the app wiring both use it.

use std::path::Path;

use crate::error::UsageError;

/// Checks that a file looks like a GGUF model: present, readable, the magic, a sane size.
pub fn check(path: &Path) -> Result<(), UsageError> {
    use std::io::Read;
    let err = |message: &str| UsageError::Model {
        path: path.to_path_buf(),
        message: message.to_string(),
    };
    let mut file = std::fs::File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => err("not found: run `make model`, or pass --model PATH"),
        _ => err(&format!("cannot read it: {e}")),
    })?;
    let mut magic = [0u8; 4];
    if file.read_exact(&mut magic).is_err() || &magic != b"GGUF" {
        return Err(err("not a GGUF file (no GGUF header): pass a .gguf model"));
    }
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len < 1024 {
        return Err(err("the file is truncated: fetch it again (`make model`)"));
    }
    Ok(())
}
