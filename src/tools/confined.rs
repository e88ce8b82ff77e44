//! Confined opens: every byte a file tool reads or writes goes through a descriptor opened
//! beneath the workspace root with no symlink followed at any component.
//!
//! `path::resolve` checks a path and names it; this module does the I/O. Resolving a name and
//! then opening it again by name is a race (a directory swapped for a symlink in between sends
//! the open outside), so the open itself is confined: `openat2` with `RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS` from a descriptor of the root, or, where the
//! kernel has no `openat2`, a walk of single components with `O_NOFOLLOW` from that
//! descriptor. Every open is `O_NONBLOCK`, so a FIFO or device never blocks; the descriptor is
//! then `fstat`ed and anything that is not a regular file (or a directory, where one is
//! asked for) is refused before a byte is read. Sizes are checked before reading, and reads
//! are bounded to the limit plus one byte, so a file that grows meanwhile is still bounded.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

/// Why a confined open or read did not happen; `Display` is fit for the child (with the path
/// put in front by the caller through [`Refusal::about`]).
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error("it does not exist")]
    NotFound,
    #[error("a part of the path is a symlink or leads outside the workspace; the file tools do not follow symlinks (use the real path)")]
    Symlink,
    #[error("it is a {0}, not a regular file; the file tools only read and write regular files")]
    NotRegular(&'static str),
    #[error("it is a directory")]
    Directory,
    #[error("a part of the path is not a directory")]
    NotDirectory,
    #[error("it is a directory that holds files")]
    NotEmpty,
    #[error("it is too large ({size} bytes, the limit is {limit})")]
    TooLarge { size: u64, limit: u64 },
    #[error("{0}")]
    Io(std::io::Error),
}

impl Refusal {
    /// `'rel': reason` as one sentence.
    pub fn about(&self, rel: &str) -> super::ToolError {
        super::ToolError::new(format!("cannot use '{rel}': {self}"))
    }
}

impl From<Errno> for Refusal {
    fn from(errno: Errno) -> Self {
        match errno {
            Errno::NOENT => Self::NotFound,
            // ELOOP: a symlink met under RESOLVE_NO_SYMLINKS or O_NOFOLLOW; EXDEV: the path
            // would leave the root under RESOLVE_BENEATH.
            Errno::LOOP | Errno::XDEV => Self::Symlink,
            Errno::NOTDIR => Self::NotDirectory,
            Errno::ISDIR => Self::Directory,
            Errno::NOTEMPTY => Self::NotEmpty,
            // ENXIO: a FIFO without a reader opened for writing with O_NONBLOCK.
            Errno::NXIO => Self::NotRegular("FIFO or device"),
            other => Self::Io(std::io::Error::from(other)),
        }
    }
}

/// A regular file or a directory, opened beneath the root.
#[derive(Debug)]
pub enum Opened {
    File { file: File, len: u64 },
    Dir(OwnedFd),
}

/// The workspace root as a directory descriptor; everything else is opened beneath it.
#[derive(Debug)]
pub struct Root {
    fd: OwnedFd,
}

impl Root {
    /// Opens the root directory itself (following symlinks in the root's own path is fine:
    /// the root is what the person chose).
    pub fn open(root: &Path) -> Result<Self, Refusal> {
        let fd = rfs::open(
            root,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Self { fd })
    }

    /// Opens `rel` (normalised, relative, no `..`) for reading: a regular file or a directory.
    pub fn open_read(&self, rel: &Path) -> Result<Opened, Refusal> {
        let fd = open_beneath(&self.fd, rel, OFlags::RDONLY)?;
        classify(fd)
    }

    /// Whether `rel` exists beneath the root without going through a symlink (a symlink as
    /// the last component counts as existing).
    pub fn exists(&self, rel: &Path) -> bool {
        open_beneath(&self.fd, rel, OFlags::PATH).is_ok()
    }

    /// Reads the regular file `rel`, refusing it when larger than `limit` bytes.
    pub fn read(&self, rel: &Path, limit: u64) -> Result<Vec<u8>, Refusal> {
        match self.open_read(rel)? {
            Opened::Dir(_) => Err(Refusal::Directory),
            Opened::File { file, len } => read_bounded(file, len, limit),
        }
    }

    /// Writes `bytes` as the whole content of the regular file `rel`, creating it and its
    /// missing parent directories beneath the root. Returns whether the file existed.
    ///
    /// Atomic: the bytes go to a new file in the same directory, which is synced and then
    /// renamed over `rel` (keeping an existing file's permission bits). When anything fails
    /// (a full disk, a quota) the temporary file is removed and `rel` is as it was.
    pub fn write(&self, rel: &Path, bytes: &[u8]) -> Result<bool, Refusal> {
        let (parents, name) = split_last(rel)?;
        let dir = self.make_parents(&parents)?;
        let old_mode = match rfs::openat(
            &dir,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => match classify(fd)? {
                Opened::File { file, .. } => Some(rfs::fstat(&file)?.st_mode & 0o7777),
                Opened::Dir(_) => return Err(Refusal::Directory),
            },
            Err(Errno::NOENT) => None,
            Err(e) => return Err(e.into()),
        };
        replace_file(&dir, name, bytes, 0o666, old_mode)?;
        Ok(old_mode.is_some())
    }

    /// Puts `content` at `rel` (the review writing what git has for a path), creating missing
    /// parent directories beneath the root: atomically replaces a regular file or a symlink
    /// there (the symlink itself, never what it points to); refuses a directory (remove it
    /// first) and any symlink on the way. A new file gets git's permissions for its mode
    /// (0666 or 0777, less the umask).
    pub fn place(&self, rel: &Path, content: Content<'_>) -> Result<(), Refusal> {
        let (parents, name) = split_last(rel)?;
        let dir = self.make_parents(&parents)?;
        if let Ok(stat) = rfs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            if FileType::from_raw_mode(stat.st_mode) == FileType::Directory {
                return Err(Refusal::Directory);
            }
        }
        match content {
            Content::File { bytes, executable } => {
                let mode = if executable { 0o777 } else { 0o666 };
                replace_file(&dir, name, bytes, mode, None)
            }
            Content::Symlink(target) => {
                let target = std::ffi::OsStr::from_bytes(target);
                let temp = loop {
                    let temp = temp_name(name);
                    match rfs::symlinkat(target, &dir, temp.as_os_str()) {
                        Ok(()) => break temp,
                        Err(Errno::EXIST) => continue,
                        Err(e) => return Err(e.into()),
                    }
                };
                if let Err(e) = rfs::renameat(&dir, &temp, &dir, name) {
                    let _ = rfs::unlinkat(&dir, &temp, AtFlags::empty());
                    return Err(e.into());
                }
                Ok(())
            }
        }
    }

    /// What `rel` is, without following a symlink at any component; `None` when it does not
    /// exist.
    pub fn kind(&self, rel: &Path) -> Result<Option<FileType>, Refusal> {
        let (dir, name) = match self.parent(rel) {
            Ok(found) => found,
            Err(Refusal::NotFound) => return Ok(None),
            Err(e) => return Err(e),
        };
        match rfs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(Some(FileType::from_raw_mode(stat.st_mode))),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Removes the file (or symlink, never what it points to) `rel`, refusing a directory.
    /// Returns whether there was one.
    pub fn remove_file(&self, rel: &Path) -> Result<bool, Refusal> {
        let (dir, name) = match self.parent(rel) {
            Ok(found) => found,
            Err(Refusal::NotFound) => return Ok(false),
            Err(e) => return Err(e),
        };
        match rfs::unlinkat(&dir, name, AtFlags::empty()) {
            Ok(()) => Ok(true),
            Err(Errno::NOENT) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Removes the directory `rel` when it holds nothing but empty directories (those go
    /// too); refuses with [`Refusal::NotEmpty`] otherwise, removing nothing that holds a file.
    pub fn remove_empty_tree(&self, rel: &Path) -> Result<(), Refusal> {
        let (dir, name) = self.parent(rel)?;
        remove_empty_tree_at(&dir, name, 0)
    }

    /// Removes the directories above the removed `rel` that it left empty, deepest first,
    /// up to (not including) `floor`; stops at the first that is not empty.
    pub fn prune_empty_parents(&self, rel: &Path, floor: &Path) {
        let mut at = rel.parent();
        while let Some(dir) = at {
            if dir == floor || !dir.starts_with(floor) || dir.as_os_str().is_empty() {
                break;
            }
            let Ok((parent, name)) = self.parent(dir) else {
                break;
            };
            if rfs::unlinkat(&parent, name, AtFlags::REMOVEDIR).is_err() {
                break;
            }
            at = dir.parent();
        }
    }

    /// Calls `each` with every entry under the directory `rel` that is not a directory (its
    /// path relative to the root), going no deeper than [`MAX_DEPTH`] levels; `each` returns
    /// whether to go on.
    pub fn visit_files(
        &self,
        rel: &Path,
        each: &mut dyn FnMut(&Path) -> bool,
    ) -> Result<(), Refusal> {
        let fd = open_beneath(&self.fd, rel, OFlags::RDONLY | OFlags::DIRECTORY)?;
        visit_files_at(fd, rel, each, 0).map(|_| ())
    }

    /// The parent directory of `rel`, opened beneath the root, and `rel`'s last component.
    fn parent<'r>(&self, rel: &'r Path) -> Result<(OwnedFd, &'r std::ffi::OsStr), Refusal> {
        let (parents, name) = split_last(rel)?;
        let dir: std::path::PathBuf = parents.iter().collect();
        let fd = open_beneath(&self.fd, &dir, OFlags::PATH | OFlags::DIRECTORY)?;
        Ok((fd, name))
    }

    /// Opens (making the missing ones) the directories `parents` beneath the root, one
    /// component at a time with no symlink followed.
    fn make_parents(&self, parents: &[&std::ffi::OsStr]) -> Result<OwnedFd, Refusal> {
        let mut dir = rfs::openat(
            &self.fd,
            ".",
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        for part in parents {
            match rfs::mkdirat(&dir, *part, Mode::from_raw_mode(0o777)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(e.into()),
            }
            dir = step(&dir, part)?;
        }
        Ok(dir)
    }
}

/// What [`Root::place`] writes.
#[derive(Debug, Clone, Copy)]
pub enum Content<'a> {
    File {
        bytes: &'a [u8],
        executable: bool,
    },
    /// A symlink with this target (as git stores it: the bytes of the target path).
    Symlink(&'a [u8]),
}

/// How deep [`Root::visit_files`] and [`Root::remove_empty_tree`] go.
pub const MAX_DEPTH: u32 = 256;

/// Writes `bytes` to a new file beside `name` in `dir` (created with `create_mode`, less the
/// umask; then set to `keep_mode` when given), syncs it and renames it over `name`; on any
/// failure the new file is removed and `name` is as it was.
fn replace_file(
    dir: &OwnedFd,
    name: &std::ffi::OsStr,
    bytes: &[u8],
    create_mode: u32,
    keep_mode: Option<u32>,
) -> Result<(), Refusal> {
    let (temp_name, file) = create_temp(dir, name, create_mode)?;
    let written = (|| {
        if let Some(mode) = keep_mode {
            rfs::fchmod(&file, Mode::from_raw_mode(mode))?;
        }
        let mut file = File::from(file);
        file.write_all(bytes).map_err(Refusal::Io)?;
        file.sync_all().map_err(Refusal::Io)?;
        rfs::renameat(dir, &temp_name, dir, name)?;
        Ok(())
    })();
    if let Err(e) = written {
        let _ = rfs::unlinkat(dir, &temp_name, AtFlags::empty());
        return Err(e);
    }
    // The rename itself is durable once the directory is synced; a failure here loses
    // nothing that was there before, so it is not an error.
    if let Ok(d) = rfs::openat(
        dir,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        let _ = rfs::fsync(&d);
    }
    Ok(())
}

/// The entries of the directory `fd` other than `.` and `..`, each with what it is (not
/// following a symlink).
fn entries(fd: &OwnedFd) -> Result<Vec<(std::ffi::OsString, FileType)>, Refusal> {
    let dup = rfs::openat(
        fd,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let mut out = Vec::new();
    for entry in rfs::Dir::new(dup)? {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        let name = std::ffi::OsStr::from_bytes(name).to_os_string();
        let stat = rfs::statat(fd, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW)?;
        out.push((name, FileType::from_raw_mode(stat.st_mode)));
    }
    Ok(out)
}

/// [`Root::remove_empty_tree`] for `name` in `parent`, `depth` levels down.
fn remove_empty_tree_at(
    parent: &OwnedFd,
    name: &std::ffi::OsStr,
    depth: u32,
) -> Result<(), Refusal> {
    if depth > MAX_DEPTH {
        return Err(Refusal::NotEmpty);
    }
    let fd = rfs::openat(
        parent,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    for (entry, kind) in entries(&fd)? {
        if kind != FileType::Directory {
            return Err(Refusal::NotEmpty);
        }
        remove_empty_tree_at(&fd, &entry, depth + 1)?;
    }
    rfs::unlinkat(parent, name, AtFlags::REMOVEDIR)?;
    Ok(())
}

/// [`Root::visit_files`] for the directory `fd` at `rel`, `depth` levels down; returns
/// whether to go on.
fn visit_files_at(
    fd: OwnedFd,
    rel: &Path,
    each: &mut dyn FnMut(&Path) -> bool,
    depth: u32,
) -> Result<bool, Refusal> {
    for (entry, kind) in entries(&fd)? {
        let path = rel.join(&entry);
        if kind != FileType::Directory {
            if !each(&path) {
                return Ok(false);
            }
            continue;
        }
        if depth >= MAX_DEPTH {
            continue;
        }
        let sub = rfs::openat(
            &fd,
            entry.as_os_str(),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        if !visit_files_at(sub, &path, each, depth + 1)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Creates a new, empty file beside `name` in `dir` for an atomic replace: a dot-name that
/// says what it is, with the process id and a counter, made with `O_EXCL`.
fn create_temp(
    dir: &OwnedFd,
    name: &std::ffi::OsStr,
    mode: u32,
) -> Result<(std::ffi::OsString, OwnedFd), Refusal> {
    loop {
        let temp = temp_name(name);
        match rfs::openat(
            dir,
            temp.as_os_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
        ) {
            Ok(fd) => return Ok((temp, fd)),
            Err(Errno::EXIST) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// A fresh dot-name beside `name` that says what it is: the process id and a counter.
fn temp_name(name: &std::ffi::OsStr) -> std::ffi::OsString {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = name.to_string_lossy();
    let stem = crate::text::cut_at_char_boundary(&name, 64);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    std::ffi::OsString::from(format!(".{stem}.ralph-tmp-{}-{n}", std::process::id()))
}

/// Reads at most `limit` bytes of a regular file whose `fstat` size was `len`.
pub fn read_bounded(file: File, len: u64, limit: u64) -> Result<Vec<u8>, Refusal> {
    if len > limit {
        return Err(Refusal::TooLarge { size: len, limit });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(Refusal::Io)?;
    let read = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    if read > limit {
        return Err(Refusal::TooLarge { size: read, limit });
    }
    Ok(bytes)
}

/// `fstat`s a fresh descriptor: a regular file or a directory, anything else refused.
fn classify(fd: OwnedFd) -> Result<Opened, Refusal> {
    let stat = rfs::fstat(&fd)?;
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => {
            // O_NONBLOCK means nothing for a regular file, but clear it so the descriptor
            // behaves like any other file.
            let flags = rfs::fcntl_getfl(&fd)?;
            rfs::fcntl_setfl(&fd, flags - OFlags::NONBLOCK)?;
            Ok(Opened::File {
                file: File::from(fd),
                len: u64::try_from(stat.st_size).unwrap_or(0),
            })
        }
        FileType::Directory => Ok(Opened::Dir(fd)),
        FileType::Fifo => Err(Refusal::NotRegular("FIFO (named pipe)")),
        FileType::Socket => Err(Refusal::NotRegular("socket")),
        FileType::CharacterDevice | FileType::BlockDevice => Err(Refusal::NotRegular("device")),
        FileType::Symlink => Err(Refusal::Symlink),
        FileType::Unknown => Err(Refusal::NotRegular("special file")),
    }
}

/// Opens `rel` beneath `root` with `flags`, following no symlink and never blocking.
fn open_beneath(root: &OwnedFd, rel: &Path, flags: OFlags) -> Result<OwnedFd, Refusal> {
    // openat2 refuses any other flag beside O_PATH (EINVAL); an O_PATH open never blocks.
    let flags = if flags.contains(OFlags::PATH) {
        flags | OFlags::NOFOLLOW | OFlags::CLOEXEC
    } else {
        flags | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY
    };
    let rel = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    match rfs::openat2(
        root,
        rel,
        flags,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
    ) {
        // ENOSYS: a kernel before 5.6; EPERM: a seccomp filter that does not know openat2.
        Err(Errno::NOSYS | Errno::PERM) => walk_beneath(root, rel, flags),
        other => other.map_err(Refusal::from),
    }
}

/// The same open as a walk of single components with `O_NOFOLLOW`, for kernels without
/// `openat2`; each step is relative to the descriptor of the previous directory.
fn walk_beneath(root: &OwnedFd, rel: &Path, flags: OFlags) -> Result<OwnedFd, Refusal> {
    let (parents, name) = match split_last(rel) {
        Ok(split) => split,
        // The root itself.
        Err(_) => (Vec::new(), std::ffi::OsStr::new(".")),
    };
    let mut dir = rfs::openat(
        root,
        ".",
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    for part in parents {
        dir = step(&dir, part)?;
    }
    Ok(rfs::openat(&dir, name, flags, Mode::empty())?)
}

/// Opens the directory `part` of `dir` without following a symlink.
fn step(dir: &OwnedFd, part: &std::ffi::OsStr) -> Result<OwnedFd, Refusal> {
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match rfs::openat(dir, part, flags, Mode::empty()) {
        Ok(fd) => Ok(fd),
        // O_NOFOLLOW | O_DIRECTORY on a symlink says ENOTDIR; name the symlink instead.
        Err(Errno::NOTDIR) => match rfs::statat(dir, part, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::Symlink => {
                Err(Refusal::Symlink)
            }
            _ => Err(Refusal::NotDirectory),
        },
        Err(e) => Err(e.into()),
    }
}

/// The normal components of `rel` before the last one, and the last one; `..`, absolute
/// paths and the empty path are refused (callers pass normalised relative paths).
fn split_last(rel: &Path) -> Result<(Vec<&std::ffi::OsStr>, &std::ffi::OsStr), Refusal> {
    let mut parts = Vec::new();
    for component in rel.components() {
        match component {
            Component::Normal(name) => parts.push(name),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(Refusal::Symlink)
            }
        }
    }
    let Some(last) = parts.pop() else {
        return Err(Refusal::Directory);
    };
    Ok((parts, last))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> (tempfile::TempDir, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), "inside").unwrap();
        std::fs::write(outside.path().join("secret"), "outside").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        std::os::unix::fs::symlink("src", dir.path().join("in")).unwrap();
        std::os::unix::fs::symlink("src/lib.rs", dir.path().join("file-link")).unwrap();
        nix::unistd::mkfifo(&dir.path().join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        (dir, outside)
    }

    #[test]
    fn reads_regular_files_and_refuses_every_symlink() {
        let (dir, _outside) = tree();
        let root = Root::open(dir.path()).unwrap();
        assert_eq!(root.read(Path::new("src/lib.rs"), 100).unwrap(), b"inside");
        for rel in ["out/secret", "in/lib.rs", "file-link"] {
            let err = root.read(Path::new(rel), 100).unwrap_err();
            assert!(matches!(err, Refusal::Symlink), "{rel}: {err}");
        }
        assert!(matches!(
            root.read(Path::new("src"), 100).unwrap_err(),
            Refusal::Directory
        ));
        assert!(matches!(
            root.read(Path::new("src/lib.rs"), 3).unwrap_err(),
            Refusal::TooLarge { size: 6, limit: 3 }
        ));
        assert!(root.exists(Path::new("out")) && !root.exists(Path::new("out/secret")));
    }

    #[test]
    fn fifos_are_refused_without_blocking() {
        let (dir, _outside) = tree();
        let root = Root::open(dir.path()).unwrap();
        let err = root.read(Path::new("fifo"), 100).unwrap_err();
        assert!(matches!(err, Refusal::NotRegular(_)), "{err}");
        let err = root.write(Path::new("fifo"), b"x").unwrap_err();
        assert!(matches!(err, Refusal::NotRegular(_)), "{err}");
    }

    #[test]
    fn writes_create_parents_beneath_and_never_through_symlinks() {
        let (dir, outside) = tree();
        let root = Root::open(dir.path()).unwrap();
        assert!(!root.write(Path::new("a/b/c.txt"), b"new").unwrap());
        assert_eq!(std::fs::read(dir.path().join("a/b/c.txt")).unwrap(), b"new");
        assert!(root.write(Path::new("a/b/c.txt"), b"n").unwrap());
        assert_eq!(std::fs::read(dir.path().join("a/b/c.txt")).unwrap(), b"n");
        for rel in ["out/new", "out/deeper/new", "file-link", "in/new"] {
            let err = root.write(Path::new(rel), b"x").unwrap_err();
            assert!(matches!(err, Refusal::Symlink), "{rel}: {err}");
        }
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1);
        assert_eq!(
            std::fs::read(dir.path().join("src/lib.rs")).unwrap(),
            b"inside"
        );
    }

    #[test]
    fn the_walk_without_openat2_is_as_strict() {
        let (dir, _outside) = tree();
        let root = Root::open(dir.path()).unwrap();
        let fd = walk_beneath(&root.fd, Path::new("src/lib.rs"), OFlags::RDONLY).unwrap();
        assert!(matches!(classify(fd).unwrap(), Opened::File { len: 6, .. }));
        for rel in ["out/secret", "in/lib.rs", "file-link"] {
            let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK;
            let err = walk_beneath(&root.fd, Path::new(rel), flags).unwrap_err();
            assert!(matches!(err, Refusal::Symlink), "{rel}: {err}");
        }
        let fd = walk_beneath(&root.fd, Path::new("."), OFlags::RDONLY).unwrap();
        assert!(matches!(classify(fd).unwrap(), Opened::Dir(_)));
    }
}
