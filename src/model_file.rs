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
    if path.is_dir() {
        return Err(err(
            "is a directory: --model takes a .gguf file (a model server's model name goes with --backend openai:URL)",
        ));
    }
    let mut file = std::fs::File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => err("not found: fetch the default model with `ralph-tui model fetch`, or pass --model PATH to a GGUF file"),
        _ => err(&format!("cannot read it: {e}")),
    })?;
    let mut magic = [0u8; 4];
    if file.read_exact(&mut magic).is_err() || &magic != b"GGUF" {
        return Err(err("not a GGUF file (no GGUF header): pass a .gguf model"));
    }
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len < 1024 {
        return Err(err(
            "the file is truncated: fetch it again (`ralph-tui model fetch`)",
        ));
    }
    // What llama.cpp would only say in its log ("data is not within the file bounds").
    match data_end(path) {
        Ok(Some((tensor, end))) if end > len => Err(err(&format!(
            "the file is truncated: tensor '{}' ends at byte {end}, and the file has {len} bytes; fetch it again (`ralph-tui model fetch`)",
            crate::text::sanitize_line(&tensor)
        ))),
        Err(why) => Err(err(&format!("its GGUF header cannot be read: {why}"))),
        _ => Ok(()),
    }
}

/// A GGUF value this program reads: numbers, booleans, strings and short arrays of integers
/// (per-layer head counts). Other arrays (the tokenizer's) are skipped while reading.
#[derive(Debug, Clone, PartialEq)]
pub enum MetaValue {
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
    Ints(Vec<i64>),
}

/// The key-value metadata at the head of a GGUF file (`general.*`, `<arch>.*`), without the
/// tensors. Read in plain Rust, so settings can depend on it before llama.cpp loads anything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelMeta {
    values: std::collections::BTreeMap<String, MetaValue>,
}

/// Caps that keep a corrupt header from asking for absurd allocations.
const MAX_KEYS: u64 = 1 << 20;
const MAX_STRING: u64 = 1 << 26;
const MAX_KEPT_INTS: u64 = 4096;

impl ModelMeta {
    /// Reads the metadata of the GGUF file at `path`.
    pub fn read(path: &Path) -> Result<Self, String> {
        let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
        Self::parse(std::io::BufReader::new(file))
    }

    /// Reads GGUF metadata (versions 2 and 3) from the start of a file.
    pub fn parse<R: std::io::BufRead + std::io::Seek>(mut reader: R) -> Result<Self, String> {
        Self::parse_head(&mut reader).map(|(meta, _)| meta)
    }

    /// The metadata and the tensor count, `reader` left at the first tensor's info.
    fn parse_head<R: std::io::BufRead + std::io::Seek>(
        mut reader: R,
    ) -> Result<(Self, u64), String> {
        let mut magic = [0u8; 4];
        read_exact(&mut reader, &mut magic)?;
        if &magic != b"GGUF" {
            return Err("not a GGUF file".into());
        }
        let version = read_u32(&mut reader)?;
        if !(2..=3).contains(&version) {
            return Err(format!("GGUF version {version} is not supported"));
        }
        let tensors = read_u64(&mut reader)?;
        let count = read_u64(&mut reader)?;
        if count > MAX_KEYS {
            return Err(format!("{count} metadata keys: the header is corrupt"));
        }
        let mut values = std::collections::BTreeMap::new();
        for _ in 0..count {
            let key = read_string(&mut reader)?;
            let kind = read_u32(&mut reader)?;
            if let Some(value) = read_value(&mut reader, kind)? {
                values.insert(key, value);
            }
        }
        Ok((Self { values }, tensors))
    }

    /// A metadata map from pairs (for tests and callers that already hold the values).
    pub fn from_pairs<K: Into<String>>(pairs: impl IntoIterator<Item = (K, MetaValue)>) -> Self {
        Self {
            values: pairs.into_iter().map(|(k, v)| (k.into(), v)).collect(),
        }
    }

    pub fn get(&self, key: &str) -> Option<&MetaValue> {
        self.values.get(key)
    }

    /// A number as a float, whatever its GGUF type (llama.cpp reads these keys the same way).
    pub fn float(&self, key: &str) -> Option<f64> {
        match self.get(key)? {
            MetaValue::Int(n) => Some(*n as f64),
            MetaValue::Float(x) => Some(*x),
            MetaValue::Str(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    /// A whole number, whatever its GGUF type.
    pub fn int(&self, key: &str) -> Option<i64> {
        match self.get(key)? {
            MetaValue::Int(n) => Some(*n),
            MetaValue::Float(x) if x.fract() == 0.0 && x.is_finite() => Some(*x as i64),
            MetaValue::Str(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    pub fn str(&self, key: &str) -> Option<&str> {
        match self.get(key)? {
            MetaValue::Str(s) => Some(s),
            _ => None,
        }
    }

    /// `general.architecture`, which names the `<arch>.*` keys.
    pub fn architecture(&self) -> Option<&str> {
        self.str("general.architecture")
    }

    fn arch_int(&self, suffix: &str) -> Option<i64> {
        self.int(&format!("{}.{suffix}", self.architecture()?))
            .filter(|&n| n > 0)
    }

    /// The context length the model was trained with (`<arch>.context_length`).
    pub fn trained_context(&self) -> Option<u32> {
        self.arch_int("context_length")
            .and_then(|n| u32::try_from(n).ok())
    }

    /// Bytes the KV cache takes per token of context, at `bytes_per_value` per element (2 for
    /// f16): keys and values of every layer's KV heads. Head sizes are
    /// `<arch>.attention.key_length`/`value_length`, else `embedding_length / head_count`;
    /// the KV head count may be one number or one per layer. `None` when a dimension is
    /// missing.
    pub fn kv_bytes_per_token(&self, bytes_per_value: u64) -> Option<u64> {
        let arch = self.architecture()?;
        let layers = u64::try_from(self.arch_int("block_count")?).ok()?;
        let heads = u64::try_from(self.arch_int("attention.head_count")?).ok()?;
        let embd = u64::try_from(self.arch_int("embedding_length")?).ok()?;
        let head_size = |key: &str| {
            self.arch_int(key)
                .and_then(|n| u64::try_from(n).ok())
                .or_else(|| (heads > 0).then(|| embd / heads))
        };
        let (k, v) = (
            head_size("attention.key_length")?,
            head_size("attention.value_length")?,
        );
        // Summed over the layers: one count for all, or one per layer.
        let kv_heads_total = match self.get(&format!("{arch}.attention.head_count_kv")) {
            Some(MetaValue::Ints(per_layer)) if !per_layer.is_empty() => per_layer
                .iter()
                .map(|&n| u64::try_from(n).unwrap_or(0))
                .sum(),
            Some(_) => layers * u64::try_from(self.arch_int("attention.head_count_kv")?).ok()?,
            None => layers * heads,
        };
        kv_heads_total
            .checked_mul(k + v)?
            .checked_mul(bytes_per_value)
    }
}

/// Elements per block and bytes per block of the ggml tensor types this reader sizes (the
/// common float, integer, legacy, K and IQ quantizations); others are `None`.
fn block_size(ggml_type: u32) -> Option<(u64, u64)> {
    Some(match ggml_type {
        0 => (1, 4),
        1 | 30 => (1, 2),
        2 | 20 => (32, 18),
        3 => (32, 20),
        6 => (32, 22),
        7 => (32, 24),
        8 => (32, 34),
        9 => (32, 36),
        10 => (256, 84),
        11 | 21 => (256, 110),
        12 => (256, 144),
        13 => (256, 176),
        14 => (256, 210),
        15 => (256, 292),
        16 => (256, 66),
        17 => (256, 74),
        18 => (256, 98),
        19 => (256, 50),
        22 => (256, 82),
        23 => (256, 136),
        24 => (1, 1),
        25 => (1, 2),
        26 => (1, 4),
        27 | 28 => (1, 8),
        29 => (256, 56),
        _ => return None,
    })
}

/// The tensor whose data ends last in the GGUF file at `path`, and the byte where it ends:
/// a file shorter than that is cut off. `None` when a tensor has a type this reader does
/// not size.
pub fn data_end(path: &Path) -> Result<Option<(String, u64)>, String> {
    use std::io::Seek;
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut reader = std::io::BufReader::new(file);
    let (meta, tensors) = ModelMeta::parse_head(&mut reader)?;
    if tensors > MAX_KEYS {
        return Err(format!("{tensors} tensors: the header is corrupt"));
    }
    let mut last: Option<(String, u64)> = None;
    for _ in 0..tensors {
        let name = read_string(&mut reader)?;
        let dims = read_u32(&mut reader)?;
        if dims > 8 {
            return Err(format!(
                "tensor '{name}' has {dims} dimensions: the header is corrupt"
            ));
        }
        let mut elements: u64 = 1;
        for _ in 0..dims {
            elements = elements.saturating_mul(read_u64(&mut reader)?);
        }
        let kind = read_u32(&mut reader)?;
        let offset = read_u64(&mut reader)?;
        let Some((per_block, bytes)) = block_size(kind) else {
            return Ok(None);
        };
        let end = offset.saturating_add(elements.div_ceil(per_block).saturating_mul(bytes));
        if last.as_ref().is_none_or(|(_, e)| end > *e) {
            last = Some((name, end));
        }
    }
    let alignment = meta
        .int("general.alignment")
        .and_then(|a| u64::try_from(a).ok())
        .filter(|&a| a > 0)
        .unwrap_or(32);
    let start = reader
        .stream_position()
        .map_err(|e| e.to_string())?
        .next_multiple_of(alignment);
    Ok(last.map(|(name, end)| (name, start.saturating_add(end))))
}

fn read_exact(reader: &mut impl std::io::Read, buf: &mut [u8]) -> Result<(), String> {
    reader
        .read_exact(buf)
        .map_err(|_| "the header is truncated".to_string())
}

fn read_u32(reader: &mut impl std::io::Read) -> Result<u32, String> {
    let mut b = [0u8; 4];
    read_exact(reader, &mut b)?;
    Ok(u32::from_le_bytes(b))
}

fn read_u64(reader: &mut impl std::io::Read) -> Result<u64, String> {
    let mut b = [0u8; 8];
    read_exact(reader, &mut b)?;
    Ok(u64::from_le_bytes(b))
}

fn read_string(reader: &mut impl std::io::Read) -> Result<String, String> {
    let len = read_u64(reader)?;
    if len > MAX_STRING {
        return Err(format!("a {len}-byte string: the header is corrupt"));
    }
    let mut buf = vec![0u8; len as usize];
    read_exact(reader, &mut buf)?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// Bytes of one fixed-size GGUF scalar, by type id; `None` for strings and arrays.
fn scalar_size(kind: u32) -> Option<u64> {
    match kind {
        0 | 1 | 7 => Some(1),
        2 | 3 => Some(2),
        4..=6 => Some(4),
        10..=12 => Some(8),
        _ => None,
    }
}

/// Reads one scalar of GGUF type `kind` (0..=12 but 8 and 9).
fn read_scalar(reader: &mut impl std::io::Read, kind: u32) -> Result<MetaValue, String> {
    let size = scalar_size(kind).ok_or_else(|| format!("unknown value type {kind}"))?;
    let mut b = [0u8; 8];
    read_exact(reader, &mut b[..size as usize])?;
    let int = |bytes: [u8; 8]| i64::from_le_bytes(bytes);
    Ok(match kind {
        0 => MetaValue::Int(i64::from(b[0])),
        1 => MetaValue::Int(i64::from(b[0] as i8)),
        2 => MetaValue::Int(i64::from(u16::from_le_bytes([b[0], b[1]]))),
        3 => MetaValue::Int(i64::from(i16::from_le_bytes([b[0], b[1]]))),
        4 => MetaValue::Int(i64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))),
        5 => MetaValue::Int(i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))),
        6 => MetaValue::Float(f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))),
        7 => MetaValue::Bool(b[0] != 0),
        10 => MetaValue::Int(i64::try_from(u64::from_le_bytes(b)).unwrap_or(i64::MAX)),
        11 => MetaValue::Int(int(b)),
        _ => MetaValue::Float(f64::from_le_bytes(b)),
    })
}

/// Reads one value of GGUF type `kind`; arrays other than short integer ones are skipped
/// (`None`).
fn read_value<R: std::io::Read + std::io::Seek>(
    reader: &mut R,
    kind: u32,
) -> Result<Option<MetaValue>, String> {
    match kind {
        8 => read_string(reader).map(|s| Some(MetaValue::Str(s))),
        9 => {
            let item = read_u32(reader)?;
            let len = read_u64(reader)?;
            let is_int = matches!(item, 0..=5 | 10 | 11);
            if is_int && len <= MAX_KEPT_INTS {
                let mut ints = Vec::with_capacity(len as usize);
                for _ in 0..len {
                    if let MetaValue::Int(n) = read_scalar(reader, item)? {
                        ints.push(n);
                    }
                }
                return Ok(Some(MetaValue::Ints(ints)));
            }
            skip_array(reader, item, len)?;
            Ok(None)
        }
        _ => read_scalar(reader, kind).map(Some),
    }
}

fn skip_array<R: std::io::Read + std::io::Seek>(
    reader: &mut R,
    item: u32,
    len: u64,
) -> Result<(), String> {
    let skip = |reader: &mut R, bytes: u64| {
        let bytes = i64::try_from(bytes).map_err(|_| "the header is corrupt".to_string())?;
        reader
            .seek_relative(bytes)
            .map_err(|_| "the header is truncated".to_string())
    };
    match (item, scalar_size(item)) {
        (_, Some(size)) => skip(
            reader,
            len.checked_mul(size)
                .ok_or_else(|| "the header is corrupt".to_string())?,
        ),
        (8, None) => {
            for _ in 0..len {
                let n = read_u64(reader)?;
                if n > MAX_STRING {
                    return Err(format!("a {n}-byte string: the header is corrupt"));
                }
                skip(reader, n)?;
            }
            Ok(())
        }
        (9, None) => {
            for _ in 0..len {
                let inner = read_u32(reader)?;
                let inner_len = read_u64(reader)?;
                skip_array(reader, inner, inner_len)?;
            }
            Ok(())
        }
        _ => Err(format!("unknown array type {item}")),
    }
}
