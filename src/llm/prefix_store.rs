//! The fixed prefix's KV state kept on disk between runs, under `<cache dir>/prefix/`.
//!
//! Each stored state is two files named by the sha256 of its key: `<id>.state`, written by
//! llama.cpp (the sequence's KV cache and the prefix's token ids), and `<id>.json`, a header
//! with the whole key and the state file's size and sha256. The key is everything the state
//! depends on: the model file's sha256, the prefix token ids' sha256 and count, the
//! `llama-cpp-2` version, the context parameters that shape the KV cache (context size, batch
//! sizes, KV type) and the device. A lookup checks the header's key field by field and the
//! state file's size and sha256 before the file is handed to llama.cpp; anything else is a
//! miss that says why, and a header or state that does not check out is removed, never
//! loaded. Files are written under temporary names and renamed into place, so a reader never
//! sees half a file.
//!
//! The directory is bounded: after every store, and on `ralph-tui runs --prune`, the least
//! recently used states (by the header's mtime, touched on every hit) are removed until the
//! total fits the limit (`prefix_cache_max_mib`, 2 GiB by default).
//!
//! Hashing a model of a gigabyte takes seconds, so the model's sha256 is recorded once per
//! file identity (canonical path, size, mtime in nanoseconds) in `models.json` and taken from
//! there while that identity holds: a file rewritten in place with the same size and mtime
//! would keep its old sha256 (a deliberate trade; touching or replacing the file rehashes).
//!
//! Plain Rust with no llama.cpp types, so `runs --prune` and the tests use it in any build.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

/// The header's format; a header of another format is a miss.
pub const FORMAT: u32 = 1;

/// The default bound on the directory's total size.
pub const DEFAULT_LIMIT_BYTES: u64 = 2 << 30;

/// The `llama-cpp-2` version this build links (pinned exactly in `Cargo.toml`; a test checks
/// the two agree).
pub const LLAMA_CPP_2_VERSION: &str = "0.1.153";

/// Temporary and orphaned files younger than this may belong to a writer at work: kept.
const STALE_AFTER: Duration = Duration::from_secs(600);

/// The store's directory inside a cache dir.
pub fn dir_in(cache: &Path) -> PathBuf {
    cache.join("prefix")
}

/// Everything a stored state depends on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrefixKey {
    pub model_sha256: String,
    pub prefix_sha256: String,
    pub prefix_tokens: u32,
    pub llama_cpp_2: String,
    pub n_ctx: u32,
    pub n_batch: u32,
    pub n_ubatch: u32,
    /// The KV cache's types and attention kernel choice (`f16/f16 flash-attn auto`).
    pub kv_type: String,
    /// The device as the backend describes it (`CPU`, `GPU (Vulkan0 ..., 31/31 layers)`).
    pub device: String,
}

impl PrefixKey {
    /// The stored files' name: sha256 of the key's JSON.
    pub fn id(&self) -> String {
        crate::text::sha256_hex(serde_json::to_string(self).unwrap_or_default().as_bytes())
    }

    /// The names of the fields where `self` and `other` differ.
    pub fn differences(&self, other: &Self) -> Vec<&'static str> {
        let mut out = Vec::new();
        let mut check = |same: bool, name: &'static str| {
            if !same {
                out.push(name);
            }
        };
        check(self.model_sha256 == other.model_sha256, "model sha256");
        check(self.prefix_sha256 == other.prefix_sha256, "prefix sha256");
        check(self.prefix_tokens == other.prefix_tokens, "prefix tokens");
        check(self.llama_cpp_2 == other.llama_cpp_2, "llama-cpp-2 version");
        check(self.n_ctx == other.n_ctx, "context size");
        check(self.n_batch == other.n_batch, "batch size");
        check(self.n_ubatch == other.n_ubatch, "micro-batch size");
        check(self.kv_type == other.kv_type, "KV type");
        check(self.device == other.device, "device");
        out
    }
}

/// The sidecar header of one stored state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    pub format: u32,
    pub key: PrefixKey,
    pub state_bytes: u64,
    pub state_sha256: String,
}

/// What a lookup found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// A state file whose header matches the key and whose bytes match the header.
    Hit(PathBuf),
    /// Nothing usable; the reason, for the log.
    Miss(String),
}

/// What a prune removed and kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Files removed.
    pub removed: usize,
    /// Bytes removed.
    pub freed: u64,
    /// Bytes left in the directory.
    pub kept: u64,
}

/// The on-disk prefix states of one cache directory.
#[derive(Debug, Clone)]
pub struct PrefixStore {
    dir: PathBuf,
    limit: u64,
}

fn io(what: &str, path: &Path, e: std::io::Error) -> String {
    format!("cannot {what} {}: {e}", path.display())
}

/// A name no other writer picks: the process id and the clock's nanoseconds.
fn temp_name(base: &Path) -> PathBuf {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let mut name = base.as_os_str().to_owned();
    name.push(format!(".tmp-{}-{nanos}", std::process::id()));
    PathBuf::from(name)
}

/// sha256 of a file's bytes, read as a stream.
pub fn file_sha256(path: &Path) -> std::io::Result<String> {
    crate::text::sha256_hex_reader(std::fs::File::open(path)?)
}

fn touch(path: &Path) {
    if let Ok(file) = std::fs::File::options().append(true).open(path) {
        let _ = file.set_modified(SystemTime::now());
    }
}

impl PrefixStore {
    /// The states under `dir`, bounded to `limit` bytes in all.
    pub fn new(dir: impl Into<PathBuf>, limit: u64) -> Self {
        Self {
            dir: dir.into(),
            limit,
        }
    }

    /// The store of a cache dir: `<cache>/prefix`.
    pub fn in_cache(cache: &Path, limit: u64) -> Self {
        Self::new(dir_in(cache), limit)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    pub fn state_path(&self, key: &PrefixKey) -> PathBuf {
        self.dir.join(format!("{}.state", key.id()))
    }

    pub fn header_path(&self, key: &PrefixKey) -> PathBuf {
        self.dir.join(format!("{}.json", key.id()))
    }

    /// Removes both files of `key`'s entry (one that did not check out, or that llama.cpp
    /// refused).
    pub fn remove(&self, key: &PrefixKey) {
        self.discard(key);
    }

    fn discard(&self, key: &PrefixKey) {
        let _ = std::fs::remove_file(self.header_path(key));
        let _ = std::fs::remove_file(self.state_path(key));
    }

    /// Finds `key`'s state and checks it: the header's format and key, the state file's size
    /// and sha256. A hit is touched (it becomes the most recently used).
    pub fn lookup(&self, key: &PrefixKey) -> Lookup {
        let header_path = self.header_path(key);
        let text = match std::fs::read_to_string(&header_path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Lookup::Miss(match self.nearest(key) {
                    Some(differ) => format!(
                        "no state is stored for this key (the nearest stored one is for another {differ})"
                    ),
                    None => "no state is stored for this key".into(),
                })
            }
            Err(e) => return Lookup::Miss(io("read", &header_path, e)),
        };
        let header: Header = match serde_json::from_str(&text) {
            Ok(header) => header,
            Err(e) => {
                self.discard(key);
                return Lookup::Miss(format!("its header is not valid ({e}): removed"));
            }
        };
        if header.format != FORMAT {
            self.discard(key);
            return Lookup::Miss(format!(
                "its header has format {}, not {FORMAT}: removed",
                header.format
            ));
        }
        let differ = key.differences(&header.key);
        if !differ.is_empty() {
            // The name is the key's hash, so only a forged or damaged header gets here.
            self.discard(key);
            return Lookup::Miss(format!(
                "its header is for another {}: removed",
                differ.join(", ")
            ));
        }
        let state = self.state_path(key);
        let bytes = match std::fs::metadata(&state) {
            Ok(meta) => meta.len(),
            Err(e) => {
                self.discard(key);
                return Lookup::Miss(format!("{}: removed", io("read", &state, e)));
            }
        };
        if bytes != header.state_bytes {
            self.discard(key);
            return Lookup::Miss(format!(
                "its state file has {bytes} bytes, its header says {}: removed",
                header.state_bytes
            ));
        }
        match file_sha256(&state) {
            Ok(sha) if sha == header.state_sha256 => {}
            Ok(_) => {
                self.discard(key);
                return Lookup::Miss(
                    "its state file's sha256 differs from its header's (corrupt): removed".into(),
                );
            }
            Err(e) => return Lookup::Miss(io("read", &state, e)),
        }
        touch(&header_path);
        Lookup::Hit(state)
    }

    /// The fields in which the stored key nearest to `key` differs from it (for the log).
    fn nearest(&self, key: &PrefixKey) -> Option<String> {
        std::fs::read_dir(&self.dir)
            .ok()?
            .flatten()
            .filter(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                name.ends_with(".json") && name != "models.json" && !name.contains(".tmp-")
            })
            .filter_map(|e| {
                let text = std::fs::read_to_string(e.path()).ok()?;
                let header: Header = serde_json::from_str(&text).ok()?;
                Some(key.differences(&header.key))
            })
            .filter(|differ| !differ.is_empty())
            .min_by_key(Vec::len)
            .map(|differ| differ.join(", "))
    }

    /// Stores `key`'s state: `write` writes it to the path it is given (a temporary name),
    /// then the header records its size and sha256 and both are renamed into place; then the
    /// directory is pruned to its bound. Returns the state's size.
    pub fn save(
        &self,
        key: &PrefixKey,
        write: impl FnOnce(&Path) -> Result<(), String>,
    ) -> Result<u64, String> {
        std::fs::create_dir_all(&self.dir).map_err(|e| io("create", &self.dir, e))?;
        let state = self.state_path(key);
        let header_path = self.header_path(key);
        let temp_state = temp_name(&state);
        let temp_header = temp_name(&header_path);
        let written = (|| {
            write(&temp_state)?;
            let state_bytes = std::fs::metadata(&temp_state)
                .map_err(|e| io("read", &temp_state, e))?
                .len();
            if state_bytes > self.limit {
                return Err(format!(
                    "the state has {state_bytes} bytes, more than the cache's bound of {}",
                    self.limit
                ));
            }
            let state_sha256 = file_sha256(&temp_state).map_err(|e| io("read", &temp_state, e))?;
            let header = Header {
                format: FORMAT,
                key: key.clone(),
                state_bytes,
                state_sha256,
            };
            let json = serde_json::to_string_pretty(&header).map_err(|e| e.to_string())?;
            std::fs::write(&temp_header, json).map_err(|e| io("write", &temp_header, e))?;
            std::fs::rename(&temp_state, &state).map_err(|e| io("rename", &temp_state, e))?;
            std::fs::rename(&temp_header, &header_path)
                .map_err(|e| io("rename", &temp_header, e))?;
            Ok(state_bytes)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&temp_state);
            let _ = std::fs::remove_file(&temp_header);
        }
        let bytes = written?;
        self.prune();
        Ok(bytes)
    }

    /// Bounds the directory: removes stale temporary files and orphans (a state without its
    /// header or the reverse, older than a writer could take), then the least recently used
    /// states until the total fits the limit.
    pub fn prune(&self) -> Pruned {
        let mut pruned = Pruned::default();
        let now = SystemTime::now();
        let Some(entries) = self.read_entries(now, &mut pruned) else {
            return pruned;
        };
        let mut complete: Vec<(SystemTime, String, u64)> = Vec::new();
        for (id, parts) in entries {
            match parts {
                (Some((h, used)), Some((s, _))) => complete.push((used, id, h + s)),
                (Some((size, modified)), None) => {
                    let path = self.dir.join(format!("{id}.json"));
                    pruned.remove_if_stale(&path, size, modified, now);
                }
                (None, Some((size, modified))) => {
                    let path = self.dir.join(format!("{id}.state"));
                    pruned.remove_if_stale(&path, size, modified, now);
                }
                (None, None) => {}
            }
        }
        // Newest first; keep while the total fits.
        complete.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        for (_, id, size) in complete {
            if pruned.kept + size <= self.limit {
                pruned.kept += size;
                continue;
            }
            let header = self.dir.join(format!("{id}.json"));
            let state = self.dir.join(format!("{id}.state"));
            let h = std::fs::metadata(&header).map(|m| m.len()).unwrap_or(0);
            pruned.remove(&header, h);
            pruned.remove(&state, size.saturating_sub(h));
        }
        if pruned.removed > 0 {
            tracing::info!(
                dir = %self.dir.display(),
                removed = pruned.removed,
                freed = pruned.freed,
                kept = pruned.kept,
                limit = self.limit,
                "prefix cache pruned"
            );
        }
        pruned
    }

    /// The directory's states by id, each with its header's and its state file's size and
    /// mtime. Temporary files are pruned (when stale) or counted as kept on the way, and so
    /// are files not ours. `None` when the directory cannot be read.
    fn read_entries(
        &self,
        now: SystemTime,
        pruned: &mut Pruned,
    ) -> Option<BTreeMap<String, Parts>> {
        let read = std::fs::read_dir(&self.dir).ok()?;
        let mut entries: BTreeMap<String, Parts> = BTreeMap::new();
        for entry in read.flatten() {
            let path = entry.path();
            let Ok(meta) = entry.metadata() else { continue };
            if !meta.is_file() {
                continue;
            }
            let modified = meta.modified().unwrap_or(now);
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.contains(".tmp-") {
                pruned.remove_if_stale(&path, meta.len(), modified, now);
                continue;
            }
            let part = Some((meta.len(), modified));
            if let Some(id) = name.strip_suffix(".json") {
                entries.entry(id.to_string()).or_default().0 = part;
            } else if let Some(id) = name.strip_suffix(".state") {
                entries.entry(id.to_string()).or_default().1 = part;
            } else {
                // Not ours (models.json included): left alone, but counted.
                pruned.kept += meta.len();
            }
        }
        Some(entries)
    }
}

/// One state's files as a prune finds them: the header's and the state's (size, mtime).
type Parts = (Option<(u64, SystemTime)>, Option<(u64, SystemTime)>);

impl Pruned {
    /// Removes `path` and counts its `bytes` as freed (nothing when it cannot be removed).
    fn remove(&mut self, path: &Path, bytes: u64) {
        if std::fs::remove_file(path).is_ok() {
            self.removed += 1;
            self.freed += bytes;
        }
    }

    /// Removes `path` when it was last written long enough before `now` that no writer is
    /// still at it ([`STALE_AFTER`]); else counts its `size` as kept.
    fn remove_if_stale(&mut self, path: &Path, size: u64, modified: SystemTime, now: SystemTime) {
        let stale = now
            .duration_since(modified)
            .is_ok_and(|age| age >= STALE_AFTER);
        if stale {
            self.remove(path, size);
        } else {
            self.kept += size;
        }
    }
}

/// A model file's identity, cheap to read: where it is, its size and its mtime.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct ModelIdentity {
    size: u64,
    mtime_ns: u128,
    sha256: String,
}

fn identity(path: &Path) -> Option<(String, u64, u128)> {
    let canonical = path.canonicalize().ok()?;
    let meta = std::fs::metadata(&canonical).ok()?;
    let mtime_ns = meta
        .modified()
        .ok()?
        .duration_since(SystemTime::UNIX_EPOCH)
        .ok()?
        .as_nanos();
    Some((
        canonical.to_string_lossy().into_owned(),
        meta.len(),
        mtime_ns,
    ))
}

/// The sha256 of the model file at `model`, taken from `<dir>/models.json` while the file's
/// identity (canonical path, size, mtime) is what was recorded there, else computed (reading
/// the whole file) and recorded. `None` when the file cannot be read.
pub fn model_sha256(dir: &Path, model: &Path) -> Option<String> {
    let (path, size, mtime_ns) = identity(model)?;
    let record = dir.join("models.json");
    let mut known: BTreeMap<String, ModelIdentity> = std::fs::read_to_string(&record)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default();
    if let Some(id) = known.get(&path) {
        if id.size == size && id.mtime_ns == mtime_ns && id.sha256.len() == 64 {
            return Some(id.sha256.clone());
        }
    }
    let started = std::time::Instant::now();
    let sha256 = file_sha256(model).ok()?;
    tracing::info!(
        path = %path,
        ms = started.elapsed().as_millis() as u64,
        "model sha256 computed (recorded for the next runs while its size and mtime hold)"
    );
    // Records of files that are gone go; the record stays small.
    known.retain(|p, _| Path::new(p).is_file());
    known.insert(
        path,
        ModelIdentity {
            size,
            mtime_ns,
            sha256: sha256.clone(),
        },
    );
    if std::fs::create_dir_all(dir).is_ok() {
        if let Ok(json) = serde_json::to_string_pretty(&known) {
            let temp = temp_name(&record);
            if std::fs::write(&temp, json).is_ok() && std::fs::rename(&temp, &record).is_err() {
                let _ = std::fs::remove_file(&temp);
            }
        }
    }
    Some(sha256)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(prefix: &str) -> PrefixKey {
        PrefixKey {
            model_sha256: "m".repeat(64),
            prefix_sha256: crate::text::sha256_hex(prefix.as_bytes()),
            prefix_tokens: 12,
            llama_cpp_2: LLAMA_CPP_2_VERSION.into(),
            n_ctx: 2048,
            n_batch: 64,
            n_ubatch: 64,
            kv_type: "f16/f16 flash-attn auto".into(),
            device: "CPU".into(),
        }
    }

    fn write_bytes(bytes: Vec<u8>) -> impl FnOnce(&Path) -> Result<(), String> {
        move |path| std::fs::write(path, bytes).map_err(|e| e.to_string())
    }

    fn set_mtime(path: &Path, secs_ago: u64) {
        let file = std::fs::File::options().append(true).open(path).unwrap();
        file.set_modified(SystemTime::now() - Duration::from_secs(secs_ago))
            .unwrap();
    }

    #[test]
    fn a_saved_state_is_found_by_its_key_only() {
        let dir = tempfile::tempdir().unwrap();
        let store = PrefixStore::new(dir.path(), DEFAULT_LIMIT_BYTES);
        assert!(matches!(store.lookup(&key("a")), Lookup::Miss(why) if why.contains("no state")));
        assert_eq!(store.save(&key("a"), write_bytes(vec![7; 100])), Ok(100));
        assert_eq!(
            store.lookup(&key("a")),
            Lookup::Hit(store.state_path(&key("a")))
        );
        // A miss names what differs from the nearest stored key.
        match store.lookup(&PrefixKey {
            device: "GPU".into(),
            ..key("a")
        }) {
            Lookup::Miss(why) => assert!(why.ends_with("for another device)"), "{why}"),
            hit => panic!("{hit:?}"),
        }
        for other in [
            PrefixKey {
                device: "GPU".into(),
                ..key("a")
            },
            PrefixKey {
                n_ctx: 4096,
                ..key("a")
            },
            PrefixKey {
                llama_cpp_2: "0.1.161".into(),
                ..key("a")
            },
            key("b"),
        ] {
            assert!(matches!(store.lookup(&other), Lookup::Miss(_)));
        }
        // No temporary file is left behind.
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    #[test]
    fn a_corrupt_state_is_refused_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let store = PrefixStore::new(dir.path(), DEFAULT_LIMIT_BYTES);
        let k = key("a");
        store.save(&k, write_bytes(vec![7; 100])).unwrap();
        // One byte flipped, same size.
        let mut bytes = std::fs::read(store.state_path(&k)).unwrap();
        bytes[50] ^= 1;
        std::fs::write(store.state_path(&k), &bytes).unwrap();
        match store.lookup(&k) {
            Lookup::Miss(why) => assert!(why.contains("sha256"), "{why}"),
            hit => panic!("a corrupt state was trusted: {hit:?}"),
        }
        assert!(!store.state_path(&k).exists() && !store.header_path(&k).exists());

        // Truncated.
        store.save(&k, write_bytes(vec![7; 100])).unwrap();
        std::fs::write(store.state_path(&k), [7; 99]).unwrap();
        assert!(matches!(store.lookup(&k), Lookup::Miss(why) if why.contains("99 bytes")));

        // A header that is not JSON.
        store.save(&k, write_bytes(vec![7; 100])).unwrap();
        std::fs::write(store.header_path(&k), "{not json").unwrap();
        assert!(matches!(store.lookup(&k), Lookup::Miss(why) if why.contains("not valid")));
        assert!(!store.state_path(&k).exists());
    }

    #[test]
    fn a_header_for_another_key_is_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let store = PrefixStore::new(dir.path(), DEFAULT_LIMIT_BYTES);
        let k = key("a");
        store.save(&k, write_bytes(vec![7; 100])).unwrap();
        // A header rewritten to say another model, under this key's name.
        let mut header: Header =
            serde_json::from_str(&std::fs::read_to_string(store.header_path(&k)).unwrap()).unwrap();
        header.key.model_sha256 = "x".repeat(64);
        header.key.device = "GPU".into();
        std::fs::write(
            store.header_path(&k),
            serde_json::to_string(&header).unwrap(),
        )
        .unwrap();
        match store.lookup(&k) {
            Lookup::Miss(why) => {
                assert!(why.contains("model sha256, device"), "{why}")
            }
            hit => panic!("a mismatched state was trusted: {hit:?}"),
        }
        // Another format.
        store.save(&k, write_bytes(vec![7; 100])).unwrap();
        let text = std::fs::read_to_string(store.header_path(&k)).unwrap();
        std::fs::write(
            store.header_path(&k),
            text.replace("\"format\": 1", "\"format\": 99"),
        )
        .unwrap();
        assert!(matches!(store.lookup(&k), Lookup::Miss(why) if why.contains("format 99")));
    }

    #[test]
    fn the_least_recently_used_states_go_first_to_keep_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let big = PrefixStore::new(dir.path(), DEFAULT_LIMIT_BYTES);
        for (n, name) in ["a", "b", "c"].iter().enumerate() {
            big.save(&key(name), write_bytes(vec![1; 1000])).unwrap();
            set_mtime(&big.header_path(&key(name)), 100 - n as u64 * 10);
        }
        // "a" is the oldest, but a hit makes it the most recently used.
        assert!(matches!(big.lookup(&key("a")), Lookup::Hit(_)));
        let header = std::fs::metadata(big.header_path(&key("a"))).unwrap().len();
        // Room for two entries, not three.
        let store = PrefixStore::new(dir.path(), 2 * (1000 + header) + 10);
        let pruned = store.prune();
        assert_eq!(pruned.removed, 2);
        assert!(pruned.kept <= store.limit());
        assert!(matches!(store.lookup(&key("a")), Lookup::Hit(_)));
        assert!(
            matches!(store.lookup(&key("b")), Lookup::Miss(_)),
            "b was the oldest"
        );
        assert!(matches!(store.lookup(&key("c")), Lookup::Hit(_)));

        // A save prunes too; a state larger than the bound is not stored at all.
        let tiny = PrefixStore::new(dir.path(), 1500);
        assert!(tiny.save(&key("d"), write_bytes(vec![1; 1600])).is_err());
        assert!(tiny.save(&key("e"), write_bytes(vec![1; 100])).is_ok());
        assert!(matches!(tiny.lookup(&key("e")), Lookup::Hit(_)));
        assert!(matches!(tiny.lookup(&key("a")), Lookup::Miss(_)));
        assert!(matches!(tiny.lookup(&key("c")), Lookup::Miss(_)));
    }

    #[test]
    fn stale_temporary_files_and_orphans_are_pruned_fresh_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let store = PrefixStore::new(dir.path(), DEFAULT_LIMIT_BYTES);
        let stale_temp = dir.path().join("x.state.tmp-1-2");
        let fresh_temp = dir.path().join("y.state.tmp-1-3");
        let orphan = dir.path().join("z.state");
        for path in [&stale_temp, &fresh_temp, &orphan] {
            std::fs::write(path, [0; 10]).unwrap();
        }
        set_mtime(&stale_temp, 3600);
        set_mtime(&orphan, 3600);
        let pruned = store.prune();
        assert_eq!(pruned.removed, 2);
        assert!(!stale_temp.exists() && !orphan.exists() && fresh_temp.exists());
    }

    #[test]
    fn the_model_sha256_is_computed_once_per_file_identity() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("m.gguf");
        std::fs::write(&model, b"first").unwrap();
        let cache = dir.path().join("prefix");
        let first = model_sha256(&cache, &model).unwrap();
        assert_eq!(first, crate::text::sha256_hex(b"first"));
        // The same identity is trusted from the record (forge the record to show it is read).
        let record = cache.join("models.json");
        let text = std::fs::read_to_string(&record).unwrap();
        std::fs::write(&record, text.replace(&first, &"f".repeat(64))).unwrap();
        assert_eq!(model_sha256(&cache, &model).unwrap(), "f".repeat(64));
        // A changed size (or mtime) is hashed again.
        std::fs::write(&model, b"second!").unwrap();
        assert_eq!(
            model_sha256(&cache, &model).unwrap(),
            crate::text::sha256_hex(b"second!")
        );
        assert_eq!(model_sha256(&cache, &dir.path().join("none")), None);
    }

    #[test]
    fn the_recorded_llama_cpp_2_version_is_the_pinned_one() {
        let manifest = include_str!("../../Cargo.toml");
        assert!(
            manifest.contains(&format!(
                "llama-cpp-2 = {{ version = \"={LLAMA_CPP_2_VERSION}\""
            )),
            "LLAMA_CPP_2_VERSION differs from Cargo.toml's pin"
        );
    }
}
