//! Every write fluxwave makes. A file is written whole or not at all (temporary file, fsync,
//! rename, then one fsync of each touched folder), and a move is a rename, so a manifest's
//! bytes are never rewritten and git records the move as a rename.

use std::collections::{BTreeSet, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};

/// Writes `contents` to `path` whole or not at all (`replace`), then makes the rename
/// durable by syncing the folder.
pub fn write_atomic(path: &Path, contents: &str) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new(""));
    make_dir(dir)?;
    replace(path, contents)?;
    sync_dirs([dir])
}

/// Replaces (or creates) `path` in its existing folder with `contents`, whole or not at all:
/// the bytes go to a temporary file beside it, which is synced and then renamed over `path`. A
/// file replaced keeps its permissions and, where allowed, its owner. The folder is not synced.
///
/// On Linux the temporary file is unnamed (`O_TMPFILE`) until it is complete: it gets its
/// `.<name>.fluxwave-tmp-XXXXXXXXXX` name just before the rename, so a process killed while writing leaves
/// nothing behind. Where there are no unnamed files the temporary is named from the start;
/// `leftover_temporaries` finds what an interrupted write left.
fn replace(path: &Path, contents: &str) -> Result<()> {
    let io = |e| Error::io(path, e);
    let dir = folder(path.parent().unwrap_or(Path::new("")));
    let name = path.file_name().ok_or_else(|| {
        io(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a file name",
        ))
    })?;
    // The bytes, with the permissions and owner of the file they replace.
    let fill = |mut file: &std::fs::File| -> std::io::Result<()> {
        if let Ok(old) = std::fs::symlink_metadata(path) {
            if old.is_file() {
                file.set_permissions(old.permissions())?;
                #[cfg(unix)]
                {
                    use std::os::unix::fs::MetadataExt;
                    // Only root may give a file away; anyone else keeps their own.
                    let _ = std::os::unix::fs::fchown(file, Some(old.uid()), Some(old.gid()));
                }
            }
        }
        file.write_all(contents.as_bytes())
    };
    let mut temp = None;
    let written = (|| {
        let (mut file, named) = open_temporary(dir, name)?;
        temp = named;
        fill(&file)?;
        if temp.is_none() {
            match link_unnamed(&file, dir, name) {
                Ok(named) => temp = Some(named),
                // Without /proc an unnamed file cannot be given a name: a named one instead.
                Err(_) => {
                    let (named_file, named) = named_temporary(dir, name)?;
                    (file, temp) = (named_file, Some(named));
                    fill(&file)?;
                }
            }
        }
        // After the link: some file systems (btrfs) do not sync a file that has no name.
        file.sync_data()?;
        match &temp {
            Some(temp) => std::fs::rename(temp, path),
            None => Ok(()),
        }
    })();
    if let Err(e) = written {
        if let Some(temp) = &temp {
            let _ = std::fs::remove_file(temp);
        }
        return Err(io(e));
    }
    Ok(())
}

/// A new temporary file in `dir` for a write of `name`: unnamed where the file system has
/// unnamed files (with `None`), else named `.<name>.fluxwave-tmp-XXXXXXXXXX` (with its path).
fn open_temporary(
    dir: &Path,
    name: &std::ffi::OsStr,
) -> std::io::Result<(std::fs::File, Option<std::path::PathBuf>)> {
    match open_unnamed(dir, 0o666)? {
        Some(file) => Ok((file, None)),
        None => named_temporary(dir, name).map(|(file, temp)| (file, Some(temp))),
    }
}

/// A new unnamed file in `dir` (`O_TMPFILE`), or `None` where there are none: off Linux, and
/// on file systems (or kernels) without them.
fn open_unnamed(dir: &Path, mode: u32) -> std::io::Result<Option<std::fs::File>> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // O_TMPFILE | O_DIRECTORY on Linux (the same value on every architecture but a few
        // that fluxwave does not target; there the open fails as unsupported).
        const O_TMPFILE: i32 = 0o20_200_000;
        match std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(O_TMPFILE)
            .mode(mode)
            .open(dir)
        {
            Ok(file) => return Ok(Some(file)),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(95 /* EOPNOTSUPP */ | 21 /* EISDIR */ | 22 /* EINVAL */)
                ) => {}
            Err(e) => return Err(e),
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (dir, mode);
    Ok(None)
}

/// A new file `.<name>.fluxwave-tmp-XXXXXXXXXX` in `dir`, and its path.
fn named_temporary(
    dir: &Path,
    name: &std::ffi::OsStr,
) -> std::io::Result<(std::fs::File, std::path::PathBuf)> {
    loop {
        let temp = dir.join(temporary_name(name));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
        {
            Ok(file) => return Ok((file, temp)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Gives an unnamed temporary file a name in `dir`, and returns its path.
#[cfg(target_os = "linux")]
fn link_unnamed(
    file: &std::fs::File,
    dir: &Path,
    name: &std::ffi::OsStr,
) -> std::io::Result<std::path::PathBuf> {
    use std::os::fd::AsRawFd;
    let proc = format!("/proc/self/fd/{}", file.as_raw_fd());
    loop {
        let temp = dir.join(temporary_name(name));
        let linked = rustix::fs::linkat(
            rustix::fs::CWD,
            proc.as_str(),
            rustix::fs::CWD,
            &temp,
            rustix::fs::AtFlags::SYMLINK_FOLLOW,
        );
        match linked {
            Ok(()) => return Ok(temp),
            Err(rustix::io::Errno::EXIST) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn link_unnamed(
    _: &std::fs::File,
    _: &Path,
    _: &std::ffi::OsStr,
) -> std::io::Result<std::path::PathBuf> {
    Err(std::io::Error::other(
        "unnamed temporary files are made on Linux only",
    ))
}

/// What marks a temporary file of fluxwave's: `.<name>` + this + ten random letters and
/// digits. A name no one writes by hand (`.kustomization.yaml.backup` is someone's backup),
/// so that `leftover_temporaries` finds only what an interrupted write of fluxwave's left.
pub const TEMPORARY_MARK: &str = ".fluxwave-tmp-";

/// The number of random letters and digits after `TEMPORARY_MARK`: 62^10 names, from the
/// 64 bits of one seed.
const TEMPORARY_SUFFIX: usize = 10;

/// `.<name>.fluxwave-tmp-XXXXXXXXXX` (the pattern `leftover_temporaries` finds).
fn temporary_name(name: &std::ffi::OsStr) -> std::ffi::OsString {
    use std::hash::{BuildHasher, Hasher};
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    // Every RandomState is seeded afresh.
    let mut bits = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let mut out = std::ffi::OsString::from(".");
    out.push(name);
    out.push(TEMPORARY_MARK);
    let suffix: String = (0..TEMPORARY_SUFFIX)
        .map(|_| {
            let c = ALPHABET[(bits % ALPHABET.len() as u64) as usize];
            bits /= ALPHABET.len() as u64;
            char::from(c)
        })
        .collect();
    out.push(suffix);
    out
}

/// Makes a folder and its missing parents.
pub fn make_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))
}

/// Fails, changing nothing, unless every folder can take a new entry and every existing file
/// can be renamed or replaced: a read-only mount, an immutable or append-only file or folder,
/// or a missing permission is found before the first change, not half-way through a change
/// set. A folder that does not exist yet is probed at its nearest existing ancestor (where it
/// would be made).
pub fn probe_writable<'a>(
    dirs: impl IntoIterator<Item = &'a Path>,
    files: impl IntoIterator<Item = &'a Path>,
) -> Result<()> {
    let mut dirs: Vec<&Path> = dirs.into_iter().collect();
    dirs.sort();
    dirs.dedup();
    for dir in dirs {
        let mut dir = dir;
        while !dir.exists() {
            match dir.parent() {
                Some(p) if !p.as_os_str().is_empty() => dir = p,
                _ => break,
            }
        }
        probe_dir(dir)?;
    }
    files.into_iter().try_for_each(probe_file)
}

/// Whether a file, if it exists, can be renamed or replaced. Its folder is probed by
/// `probe_dir`; what stops a rename beyond that is the file's own immutable or append-only
/// flag. On Linux one `statx` reads both flags (a move of 100,000 files makes 100,000 probes);
/// where the file system does not report them, and elsewhere, the file is opened for writing,
/// which those flags refuse.
fn probe_file(file: &Path) -> Result<()> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{statx, AtFlags, FileType, StatxAttributes, StatxFlags, CWD};
        let flags = StatxAttributes::IMMUTABLE | StatxAttributes::APPEND;
        match statx(CWD, file, AtFlags::SYMLINK_NOFOLLOW, StatxFlags::TYPE) {
            Ok(st) if FileType::from_raw_mode(st.stx_mode.into()) != FileType::RegularFile => {
                return Ok(())
            }
            Ok(st) if st.stx_attributes_mask.contains(flags) => {
                if st.stx_attributes.intersects(flags) {
                    return Err(Error::io(file, rustix::io::Errno::PERM.into()));
                }
                return Ok(());
            }
            Err(rustix::io::Errno::NOENT) => return Ok(()),
            Ok(_) | Err(_) => {}
        }
    }
    if file.symlink_metadata().is_ok_and(|m| m.is_file()) {
        std::fs::OpenOptions::new()
            .write(true)
            .open(file)
            .map_err(|e| Error::io(file, e))?;
    }
    Ok(())
}

/// Whether `dir` takes a new entry. On Linux the probe is an unnamed temporary file
/// (`O_TMPFILE`): it has no name, so a process killed while probing leaves nothing behind.
/// Elsewhere, or where the file system has no unnamed files, a named probe is made and
/// removed at once.
fn probe_dir(dir: &Path) -> Result<()> {
    if open_unnamed(dir, 0o600)
        .map_err(|e| Error::io(dir, e))?
        .is_some()
    {
        return Ok(());
    }
    let probe = dir.join(format!(".fluxwave-probe-{}", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .map_err(|e| Error::io(dir, e))?;
    std::fs::remove_file(&probe).map_err(|e| Error::io(&probe, e))
}

/// Makes the renames and removals in these folders durable.
pub fn sync_dirs<'a>(dirs: impl IntoIterator<Item = &'a Path>) -> Result<()> {
    let mut dirs: Vec<&Path> = dirs.into_iter().collect();
    dirs.sort();
    dirs.dedup();
    dirs.into_iter().try_for_each(sync_dir)
}

fn sync_dir(dir: &Path) -> Result<()> {
    let dir = folder(dir);
    match std::fs::File::open(dir).and_then(|f| f.sync_all()) {
        Ok(()) => Ok(()),
        Err(e) => Err(Error::io(dir, e)),
    }
}

/// A folder as a path to open: the empty path (a file's folder when it has none) is `.`.
fn folder(dir: &Path) -> &Path {
    if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    }
}

/// Temporary files interrupted atomic writes of `paths` may have left beside them, each with
/// the index of its path, sorted: regular files named exactly `.<name>.fluxwave-tmp-` and ten
/// letters and digits (see `temporary_name`). Nothing else is taken for one, whatever its
/// name looks like. Each folder is listed once, however many of `paths` it holds: one
/// listing per path made 10,000 files in one folder cost 10,000 listings of it.
pub fn leftover_temporaries(paths: &[std::path::PathBuf]) -> Vec<(std::path::PathBuf, usize)> {
    let mut by_dir: std::collections::BTreeMap<&Path, std::collections::HashMap<&str, usize>> =
        std::collections::BTreeMap::new();
    for (i, path) in paths.iter().enumerate() {
        if let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str()))
        {
            by_dir.entry(dir).or_default().insert(name, i);
        }
    }
    let mut found = Vec::new();
    for (dir, names) in by_dir {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for e in entries.flatten() {
            let Some(n) = e.file_name().to_str().map(str::to_string) else {
                continue;
            };
            let Some((name, tail)) = n
                .strip_prefix('.')
                .and_then(|rest| rest.rsplit_once(TEMPORARY_MARK))
            else {
                continue;
            };
            let wanted = names.get(name);
            let shaped =
                tail.len() == TEMPORARY_SUFFIX && tail.bytes().all(|b| b.is_ascii_alphanumeric());
            if let (Some(&i), true) = (wanted, shaped) {
                if e.file_type().is_ok_and(|t| t.is_file()) {
                    found.push((e.path(), i));
                }
            }
        }
    }
    found.sort();
    found
}

// ---------------------------------------------------------------------------------------
// `apply`'s writes: folders opened without following links, and compare-before-replace.

/// What a file `apply` replaces or removes must hold just before it does: the bytes it read
/// when planning, or nothing (a file it creates must not exist yet).
#[derive(Debug, Clone, Copy)]
pub enum Expect<'a> {
    Absent,
    Bytes(&'a [u8]),
    /// Whatever it holds (a file whose bytes nothing was planned from).
    Any,
}

impl Expect<'_> {
    /// Fails with `changed_under` unless the file at `rel` (`now`: its bytes, `None` when it
    /// is not there) is as expected.
    fn holds(&self, rel: &str, now: Option<&[u8]>) -> Result<()> {
        match (self, now) {
            (Expect::Absent, Some(_)) => Err(changed_under(rel, "was created")),
            (Expect::Bytes(_), None) => Err(changed_under(rel, "was removed")),
            (Expect::Bytes(old), Some(now)) if now != *old => {
                Err(changed_under(rel, "was changed"))
            }
            _ => Ok(()),
        }
    }
}

/// The refusal of a symbolic link on a path fluxwave would write, move or remove through.
/// Flux's source-controller leaves links out of the artifact it builds (`Storage.Archive`:
/// "Ignore anything that is not a file or directories e.g. symlinks"), so what a link leads
/// to is not what Flux deploys, and writing through it would change a file elsewhere.
pub fn link_refused(rel: &str) -> Error {
    crate::error::SourceError::new(
        rel,
        "is a symbolic link on a path fluxwave would write; it never writes, moves or removes through a link (Flux leaves links out of what it deploys)",
    )
    .help("replace the link with a folder (or file) of its own, or remove it, then run the command again")
    .into()
}

/// The refusal of a file that changed between planning and the moment `apply` replaces,
/// moves or removes it: someone else's edit is never overwritten.
pub fn changed_under(rel: &str, how: &str) -> Error {
    crate::error::SourceError::new(
        rel,
        format!("{how} while `fluxwave apply` ran; it was left as it is"),
    )
    .help("nothing is lost: every file is whole, at its old place or its new one; run `fluxwave apply` again to complete the work with the file as it is now")
    .into()
}

/// Fails with `link_refused` when a component of `rel` below `root` (the folders, and the
/// entry itself when `whole`) is a symbolic link. `checked` holds folders found clean or
/// missing, so that a change set of 100,000 moves looks at each folder once; it is valid
/// while nothing is written.
pub fn refuse_links(
    root: &Path,
    rel: &str,
    whole: bool,
    checked: &mut std::collections::HashSet<String>,
) -> Result<()> {
    let mut end = 0;
    let parts: Vec<&str> = rel.split('/').collect();
    let upto = if whole {
        parts.len()
    } else {
        parts.len().saturating_sub(1)
    };
    for (i, part) in parts.iter().enumerate().take(upto) {
        end += part.len() + usize::from(i > 0);
        let prefix = &rel[..end];
        let is_dir = i + 1 < parts.len();
        if is_dir && checked.contains(prefix) {
            continue;
        }
        match root.join(prefix).symlink_metadata() {
            Ok(m) if m.file_type().is_symlink() => return Err(link_refused(prefix)),
            Ok(_) => {}
            // What does not exist yet is made by `apply` as a folder or file of its own
            // (and nothing below it exists either: remembered, so it is looked up once).
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if is_dir {
                    checked.insert(prefix.to_string());
                }
                return Ok(());
            }
            Err(e) => return Err(Error::io(&root.join(prefix), e)),
        }
        if is_dir {
            checked.insert(prefix.to_string());
        }
    }
    Ok(())
}

/// A folder of the repository as `apply` writes into it: opened one component at a time
/// from the repository root, never through a symbolic link, and kept open, so that every
/// rename, write and removal is made relative to the folder that was checked (a folder
/// swapped for a link once it is open cannot redirect them).
pub struct Dir {
    /// Repository-relative (`""` for the root).
    pub rel: String,
    /// Where it was opened, for messages.
    pub path: PathBuf,
    #[cfg(unix)]
    fd: rustix::fd::OwnedFd,
}

impl Dir {
    /// The repository-relative path of the entry `name` of this folder.
    fn rel_of(&self, name: &str) -> String {
        if self.rel.is_empty() {
            name.to_string()
        } else {
            format!("{}/{name}", self.rel)
        }
    }
}

/// The folders of one repository that `apply` has opened, by repository-relative path. At
/// most `OPEN_AT_ONCE` stay open: a move between topologies touches a folder per unit
/// (100,000 of them), more than a process may hold open. A folder opened again is opened as
/// the first time, one component at a time and never through a link, so a folder swapped for
/// a link meanwhile is refused then.
pub struct Dirs {
    open: HashMap<String, Arc<Dir>>,
    /// Folders whose entries changed: each is synced once at the end (`sync`).
    touched: BTreeSet<String>,
}

/// How many folders `Dirs` keeps open (each holds a file descriptor).
const OPEN_AT_ONCE: usize = 256;

/// How many writes `apply` makes side by side at most, each holding its folder open.
pub const WRITES_AT_ONCE: usize = 128;

impl Dirs {
    /// The repository root, followed as the user named it (`--repo`); below it, nothing is.
    pub fn new(root: &Path) -> Result<Dirs> {
        let dir = Dir {
            rel: String::new(),
            path: root.to_path_buf(),
            #[cfg(unix)]
            fd: rustix::fs::open(
                folder(root),
                rustix::fs::OFlags::RDONLY
                    | rustix::fs::OFlags::DIRECTORY
                    | rustix::fs::OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            )
            .map_err(|e| Error::io(root, e.into()))?,
        };
        Ok(Dirs {
            open: HashMap::from([(String::new(), Arc::new(dir))]),
            touched: BTreeSet::new(),
        })
    }

    /// The folder `rel`, opened; `None` when it does not exist, unless `make` (then it and
    /// its missing parents are made). A link at any component is `link_refused`.
    pub fn get(&mut self, rel: &str, make: bool) -> Result<Option<Arc<Dir>>> {
        if let Some(d) = self.open.get(rel) {
            return Ok(Some(d.clone()));
        }
        let (parent_rel, name) = rel.rsplit_once('/').unwrap_or(("", rel));
        let Some(parent) = self.get(parent_rel, make)? else {
            return Ok(None);
        };
        let path = parent.path.join(name);
        let Some(dir) = parent.open_dir(name, rel, make)? else {
            return Ok(None);
        };
        if dir.1 {
            self.touched.insert(parent_rel.to_string());
        }
        let dir = Arc::new(dir.0);
        debug_assert_eq!(dir.path, path);
        if self.open.len() >= OPEN_AT_ONCE {
            // The root stays: every other folder is opened from it.
            self.open.retain(|rel, _| rel.is_empty());
        }
        self.open.insert(rel.to_string(), dir.clone());
        Ok(Some(dir))
    }

    /// Marks a folder for the final sync.
    pub fn touch(&mut self, rel: &str) {
        self.touched.insert(rel.to_string());
    }

    /// Makes the renames, writes and removals in every touched folder durable.
    pub fn sync(&mut self) -> Result<()> {
        for rel in std::mem::take(&mut self.touched) {
            if let Some(dir) = self.get(&rel, false)? {
                dir.sync()?;
            }
        }
        Ok(())
    }
}

/// `Dir` where there are no `*at` calls: by paths, checked for links before each use (see
/// `portable`).
#[cfg(not(unix))]
mod portable;

#[cfg(unix)]
mod at {
    //! The `*at` calls of `Dir`: every path is one name inside an open folder.
    pub use rustix::fs::{AtFlags, FileType, Mode, OFlags};
    pub use rustix::io::Errno;

    /// Opening a file to read it: never through a link, never blocking on a FIFO.
    pub const READ: OFlags = OFlags::RDONLY
        .union(OFlags::NOFOLLOW)
        .union(OFlags::NONBLOCK)
        .union(OFlags::NOCTTY)
        .union(OFlags::CLOEXEC);
    pub const DIR: OFlags = OFlags::RDONLY
        .union(OFlags::DIRECTORY)
        .union(OFlags::NOFOLLOW)
        .union(OFlags::CLOEXEC);
}

#[cfg(unix)]
impl Dir {
    /// The type of the entry `name` (a link is a link), `None` when there is none.
    fn kind(&self, name: &str) -> std::io::Result<Option<at::FileType>> {
        match rustix::fs::statat(&self.fd, name, at::AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(at::FileType::from_raw_mode(st.st_mode as _))),
            Err(at::Errno::NOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The sub-folder `name` (`rel` below the root), opened; made when missing and `make`
    /// (with whether it was).
    fn open_dir(&self, name: &str, rel: &str, make: bool) -> Result<Option<(Dir, bool)>> {
        let path = self.path.join(name);
        let mut made = false;
        loop {
            match rustix::fs::openat(&self.fd, name, at::DIR, at::Mode::empty()) {
                Ok(fd) => {
                    return Ok(Some((
                        Dir {
                            rel: rel.to_string(),
                            path,
                            fd,
                        },
                        made,
                    )))
                }
                Err(at::Errno::NOENT) if make && !made => {
                    match rustix::fs::mkdirat(&self.fd, name, at::Mode::from_raw_mode(0o777)) {
                        Ok(()) => made = true,
                        Err(at::Errno::EXIST) => made = true,
                        Err(e) => return Err(Error::io(&path, e.into())),
                    }
                }
                Err(at::Errno::NOENT) => return Ok(None),
                Err(e) => {
                    if self.kind(name).ok().flatten() == Some(at::FileType::Symlink) {
                        return Err(link_refused(rel));
                    }
                    return Err(Error::io(&path, e.into()));
                }
            }
        }
    }

    /// The bytes of the regular file `name`, `None` when there is none; a link, FIFO or
    /// device is an error (`ELOOP`, or not a regular file).
    pub fn read(&self, name: &str) -> std::io::Result<Option<Vec<u8>>> {
        use std::io::Read;
        let fd = match rustix::fs::openat(&self.fd, name, at::READ, at::Mode::empty()) {
            Ok(fd) => fd,
            Err(at::Errno::NOENT) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let file = std::fs::File::from(fd);
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(std::io::Error::other("not a regular file"));
        }
        let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
        file.take(crate::fs::MAX_FILE_BYTES + 1)
            .read_to_end(&mut bytes)?;
        Ok(Some(bytes))
    }

    /// Fails unless the entry `name` is as `expect` says: `changed_under` when someone
    /// changed it, `link_refused` when it is now a link.
    pub fn verify(&self, name: &str, expect: Expect) -> Result<()> {
        let rel = self.rel_of(name);
        if matches!(expect, Expect::Any) {
            return match self.kind(name) {
                Ok(Some(at::FileType::Symlink)) => Err(link_refused(&rel)),
                Ok(_) => Ok(()),
                Err(e) => Err(Error::io(&self.path.join(name), e)),
            };
        }
        let now = match self.read(name) {
            Ok(now) => now,
            Err(_) if self.kind(name).ok().flatten() == Some(at::FileType::Symlink) => {
                return Err(link_refused(&rel))
            }
            Err(e) => return Err(Error::io(&self.path.join(name), e)),
        };
        expect.holds(&rel, now.as_deref())
    }

    /// Moves the file `name` into `to` as `to_name` by one rename: its bytes are not
    /// touched (an edit made meanwhile moves with it), and a rename follows a link at
    /// neither end (one put in the file's place moves as a link). The target must not
    /// exist. No look at the file first: a move of 100,000 files is 100,000 renames.
    pub fn move_to(&self, name: &str, to: &Dir, to_name: &str) -> Result<()> {
        let (from_path, to_path) = (self.path.join(name), to.path.join(to_name));
        let gone = || changed_under(&self.rel_of(name), "was removed");
        let exists = || {
            Error::Usage(format!(
                "{} already exists; fluxwave will not overwrite it with {}",
                to_path.display(),
                from_path.display()
            ))
        };
        // On Linux the check and the rename are one call (`RENAME_NOREPLACE`); where the
        // file system does not take that flag, and elsewhere, the target is looked up first.
        #[cfg(target_os = "linux")]
        {
            use rustix::fs::{renameat_with, RenameFlags};
            match renameat_with(&self.fd, name, &to.fd, to_name, RenameFlags::NOREPLACE) {
                Ok(()) => return Ok(()),
                Err(at::Errno::EXIST) => return Err(exists()),
                Err(at::Errno::NOENT) => return Err(gone()),
                Err(at::Errno::INVAL | at::Errno::NOSYS) => {}
                Err(e) => return Err(Error::io(&from_path, e.into())),
            }
        }
        if to
            .kind(to_name)
            .map_err(|e| Error::io(&to_path, e))?
            .is_some()
        {
            return Err(exists());
        }
        match rustix::fs::renameat(&self.fd, name, &to.fd, to_name) {
            Ok(()) => Ok(()),
            Err(at::Errno::NOENT) => Err(gone()),
            Err(e) => Err(Error::io(&from_path, e.into())),
        }
    }

    /// Removes the file `name` when it is as `expect` says (a link is refused, never
    /// followed); one already gone is fine (a rerun after an interruption).
    pub fn remove(&self, name: &str, expect: Expect) -> Result<()> {
        if self
            .kind(name)
            .map_err(|e| Error::io(&self.path.join(name), e))?
            .is_none()
        {
            return Ok(());
        }
        self.verify(name, expect)?;
        match rustix::fs::unlinkat(&self.fd, name, at::AtFlags::empty()) {
            Ok(()) | Err(at::Errno::NOENT) => Ok(()),
            Err(e) => Err(Error::io(&self.path.join(name), e.into())),
        }
    }

    /// Removes the sub-folder `name` when it is empty; one that still holds something (or
    /// is not a folder) stays.
    pub fn remove_empty_dir(&self, name: &str) -> bool {
        match rustix::fs::unlinkat(&self.fd, name, at::AtFlags::REMOVEDIR) {
            Ok(()) | Err(at::Errno::NOENT) => true,
            Err(_) => false,
        }
    }

    fn sync(&self) -> Result<()> {
        rustix::fs::fsync(&self.fd).map_err(|e| Error::io(&self.path, e.into()))
    }

    /// Replaces (or creates) `name` with `contents`, whole or not at all, once the file is
    /// still as `expect` says: the bytes go to a temporary file in this folder (unnamed until
    /// complete where the system allows, see `replace`), which is synced, compared against
    /// and renamed over `name`. A file replaced keeps its permissions and, where allowed, its
    /// owner. The folder is not synced.
    pub fn replace(&self, name: &str, contents: &str, expect: Expect) -> Result<()> {
        let path = self.path.join(name);
        let io = |e: std::io::Error| Error::io(&path, e);
        let old = match rustix::fs::statat(&self.fd, name, at::AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) if at::FileType::from_raw_mode(st.st_mode as _) == at::FileType::Symlink => {
                return Err(link_refused(&self.rel_of(name)))
            }
            Ok(st) if at::FileType::from_raw_mode(st.st_mode as _) == at::FileType::RegularFile => {
                Some(st)
            }
            _ => None,
        };
        let fill = |file: &std::fs::File| -> std::io::Result<()> {
            if let Some(st) = &old {
                rustix::fs::fchmod(file, at::Mode::from_raw_mode((st.st_mode & 0o7777) as _))?;
                // Only root may give a file away; anyone else keeps their own.
                let _ = rustix::fs::fchown(
                    file,
                    Some(rustix::fs::Uid::from_raw(st.st_uid)),
                    Some(rustix::fs::Gid::from_raw(st.st_gid)),
                );
            }
            let mut file = file;
            file.write_all(contents.as_bytes())
        };
        let mut temp: Option<std::ffi::OsString> = None;
        let written = (|| -> Result<()> {
            let file = match self.open_unnamed().map_err(io)? {
                Some(file) => {
                    fill(&file).map_err(io)?;
                    match self.link_unnamed(&file, name) {
                        Ok(named) => {
                            temp = Some(named);
                            file
                        }
                        // Without /proc an unnamed file cannot be given a name: a named one.
                        Err(_) => {
                            let (file, named) = self.named_temporary(name).map_err(io)?;
                            temp = Some(named);
                            fill(&file).map_err(io)?;
                            file
                        }
                    }
                }
                None => {
                    let (file, named) = self.named_temporary(name).map_err(io)?;
                    temp = Some(named);
                    fill(&file).map_err(io)?;
                    file
                }
            };
            // After the link: some file systems (btrfs) do not sync a file that has no name.
            file.sync_data().map_err(io)?;
            // The last look before the rename: an edit saved since planning is kept.
            self.verify(name, expect)?;
            let temp = temp.as_deref().unwrap_or_default();
            rustix::fs::renameat(&self.fd, temp, &self.fd, name).map_err(|e| io(e.into()))
        })();
        if written.is_err() {
            if let Some(temp) = &temp {
                let _ = rustix::fs::unlinkat(&self.fd, temp.as_os_str(), at::AtFlags::empty());
            }
        }
        written
    }

    /// A new unnamed file in this folder (`O_TMPFILE`), or `None` where there are none.
    fn open_unnamed(&self) -> std::io::Result<Option<std::fs::File>> {
        #[cfg(target_os = "linux")]
        match rustix::fs::openat(
            &self.fd,
            ".",
            at::OFlags::WRONLY | at::OFlags::TMPFILE | at::OFlags::CLOEXEC,
            at::Mode::from_raw_mode(0o666),
        ) {
            Ok(fd) => return Ok(Some(std::fs::File::from(fd))),
            Err(at::Errno::OPNOTSUPP | at::Errno::ISDIR | at::Errno::INVAL) => {}
            Err(e) => return Err(e.into()),
        }
        Ok(None)
    }

    /// Gives an unnamed temporary file its temporary name in this folder.
    fn link_unnamed(
        &self,
        file: &std::fs::File,
        name: &str,
    ) -> std::io::Result<std::ffi::OsString> {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let proc = format!("/proc/self/fd/{}", file.as_raw_fd());
            loop {
                let temp = temporary_name(std::ffi::OsStr::new(name));
                match rustix::fs::linkat(
                    rustix::fs::CWD,
                    proc.as_str(),
                    &self.fd,
                    temp.as_os_str(),
                    at::AtFlags::SYMLINK_FOLLOW,
                ) {
                    Ok(()) => return Ok(temp),
                    Err(at::Errno::EXIST) => continue,
                    Err(e) => return Err(e.into()),
                }
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (file, name);
            Err(std::io::Error::other(
                "unnamed files are made on Linux only",
            ))
        }
    }

    /// A new file with a temporary name for a write of `name`, and that name.
    fn named_temporary(&self, name: &str) -> std::io::Result<(std::fs::File, std::ffi::OsString)> {
        loop {
            let temp = temporary_name(std::ffi::OsStr::new(name));
            match rustix::fs::openat(
                &self.fd,
                temp.as_os_str(),
                at::OFlags::WRONLY
                    | at::OFlags::CREATE
                    | at::OFlags::EXCL
                    | at::OFlags::NOFOLLOW
                    | at::OFlags::CLOEXEC,
                at::Mode::from_raw_mode(0o666),
            ) {
                Ok(fd) => return Ok((std::fs::File::from(fd), temp)),
                Err(at::Errno::EXIST) => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// `Dir::replace` of every (folder, name, contents, expectation), on up to 8 threads: each
/// write waits on an fsync, and they overlap. The folders are not synced here (`Dirs::sync`).
/// The first error in list order is returned; writes after it may have been made (as after
/// an interruption, which a second run completes).
pub fn replace_all_in(writes: &[(Arc<Dir>, &str, &str, Expect)]) -> Result<()> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<Result<()>>>> =
        writes.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..writes.len().min(8) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((dir, name, contents, expect)) = writes.get(i) else {
                    break;
                };
                let result = dir.replace(name, contents, *expect);
                if let Ok(mut slot) = results[i].lock() {
                    *slot = Some(result);
                }
            });
        }
    });
    for slot in results {
        let result = slot
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        result.unwrap_or(Ok(()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("fluxwave-fsops-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn replace_writes_whole_files_and_leaves_nothing_beside_them() {
        let dir = scratch("replace");
        let mut dirs = Dirs::new(&dir).unwrap();
        let root = dirs.get("", false).unwrap().unwrap();
        let names: Vec<String> = (0..20).map(|i| format!("f{i:02}.yaml")).collect();
        let writes: Vec<(Arc<Dir>, &str, &str, Expect)> = names
            .iter()
            .map(|n| (root.clone(), n.as_str(), "a: 1\n", Expect::Absent))
            .collect();
        replace_all_in(&writes).unwrap();
        replace_all_in(&[(root.clone(), "f00.yaml", "b: 2\n", Expect::Bytes(b"a: 1\n"))]).unwrap();
        assert_eq!(entries(&dir), names);
        assert_eq!(
            std::fs::read_to_string(dir.join("f00.yaml")).unwrap(),
            "b: 2\n"
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("f19.yaml")).unwrap(),
            "a: 1\n"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A file that is not what the plan read is never replaced or removed, and nothing is
    /// left beside it.
    #[test]
    fn a_file_changed_since_planning_is_kept() {
        let dir = scratch("changed");
        std::fs::write(dir.join("k.yaml"), "edited\n").unwrap();
        let mut dirs = Dirs::new(&dir).unwrap();
        let root = dirs.get("", false).unwrap().unwrap();
        let err = root
            .replace("k.yaml", "new\n", Expect::Bytes(b"planned\n"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("k.yaml: was changed while"), "{err}");
        let err = root.replace("k.yaml", "new\n", Expect::Absent).unwrap_err();
        assert!(err.to_string().contains("was created"), "{err}");
        let err = root
            .remove("k.yaml", Expect::Bytes(b"planned\n"))
            .unwrap_err();
        assert!(err.to_string().contains("was changed"), "{err}");
        assert_eq!(entries(&dir), ["k.yaml"]);
        assert_eq!(
            std::fs::read_to_string(dir.join("k.yaml")).unwrap(),
            "edited\n"
        );
        root.remove("k.yaml", Expect::Bytes(b"edited\n")).unwrap();
        assert!(entries(&dir).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// No folder below the root is opened, made or written through a link, and no file
    /// that is a link is replaced, moved or removed.
    #[cfg(unix)]
    #[test]
    fn links_below_the_root_are_never_written_through() {
        let dir = scratch("links");
        std::fs::create_dir_all(dir.join("real")).unwrap();
        std::fs::write(dir.join("real/k.yaml"), "kept\n").unwrap();
        std::os::unix::fs::symlink("real", dir.join("link")).unwrap();
        std::os::unix::fs::symlink("real/k.yaml", dir.join("file.yaml")).unwrap();
        let mut dirs = Dirs::new(&dir).unwrap();
        for rel in ["link", "link/sub"] {
            let err = dirs.get(rel, true).err().expect(rel).to_string();
            assert!(err.starts_with("link: is a symbolic link"), "{err}");
        }
        let root = dirs.get("", false).unwrap().unwrap();
        let real = dirs.get("real", false).unwrap().unwrap();
        for err in [
            root.replace("file.yaml", "x\n", Expect::Any).unwrap_err(),
            root.remove("file.yaml", Expect::Any).unwrap_err(),
        ] {
            assert!(
                err.to_string().starts_with("file.yaml: is a symbolic link"),
                "{err}"
            );
        }
        assert_eq!(entries(&dir), ["file.yaml", "link", "real"]);
        assert_eq!(entries(&dir.join("real")), ["k.yaml"]);
        assert_eq!(
            std::fs::read_to_string(dir.join("real/k.yaml")).unwrap(),
            "kept\n"
        );
        // A link put where a moving file was moves as a link: nothing is read or written
        // through it.
        root.move_to("file.yaml", &real, "moved.yaml").unwrap();
        let moved = dir.join("real/moved.yaml").symlink_metadata().unwrap();
        assert!(moved.file_type().is_symlink());
        let err = root.move_to("gone.yaml", &real, "x.yaml").unwrap_err();
        assert!(
            err.to_string().starts_with("gone.yaml: was removed while"),
            "{err}"
        );
        std::fs::rename(dir.join("real/moved.yaml"), dir.join("file.yaml")).unwrap();
        let mut checked = std::collections::HashSet::new();
        let err = refuse_links(&dir, "link/k.yaml", true, &mut checked).unwrap_err();
        assert!(
            err.to_string().starts_with("link: is a symbolic link"),
            "{err}"
        );
        assert!(refuse_links(&dir, "file.yaml", false, &mut checked).is_ok());
        assert!(refuse_links(&dir, "file.yaml", true, &mut checked).is_err());
        assert!(refuse_links(&dir, "real/new/k.yaml", true, &mut checked).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_replaced_file_keeps_its_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = scratch("mode");
        let file = dir.join("kustomization.yaml");
        std::fs::write(&file, "old\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&file, "new\n").unwrap();
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "new\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A move between topologies opens a folder per unit: more than a process may hold, so
    /// only `OPEN_AT_ONCE` stay open, and a folder opened again is checked again.
    #[cfg(target_os = "linux")]
    #[test]
    fn folders_opened_by_the_thousand_stay_within_a_bound() {
        let dir = scratch("many");
        let fds = || std::fs::read_dir("/proc/self/fd").unwrap().count();
        let before = fds();
        let mut dirs = Dirs::new(&dir).unwrap();
        for i in 0..2000 {
            let d = dirs.get(&format!("apps/u{i}"), true).unwrap().unwrap();
            d.replace("kustomization.yaml", "x\n", Expect::Absent)
                .unwrap();
        }
        // Other tests' files come and go meanwhile: the bound, with room for them.
        assert!(
            fds() < before + OPEN_AT_ONCE + 64,
            "{} open",
            fds() - before
        );
        dirs.sync().unwrap();
        // A folder swapped for a link after it was closed is refused when opened again.
        std::fs::remove_dir_all(dir.join("apps/u0")).unwrap();
        std::os::unix::fs::symlink("/tmp", dir.join("apps/u0")).unwrap();
        assert!(dirs.get("apps/u0", false).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn temporary_names_are_what_leftover_temporaries_finds() {
        let dir = scratch("names");
        let file = dir.join("apps-wave-0.yaml");
        let names: std::collections::BTreeSet<_> = (0..50)
            .map(|_| temporary_name(file.file_name().unwrap()))
            .collect();
        assert_eq!(names.len(), 50, "temporary names repeat");
        for name in names.iter().take(3) {
            std::fs::write(dir.join(name), "partial").unwrap();
        }
        // Names a person gives files, and near misses of the pattern, are not temporaries.
        for name in [
            ".apps-wave-0.yaml.backup",
            ".apps-wave-0.yaml.old123",
            ".apps-wave-0.yaml.fluxwave-tmp-short",
            ".apps-wave-0.yaml.fluxwave-tmp-toolong12345",
            ".apps-wave-0.yaml.fluxwave-tmp-with.dot123",
        ] {
            std::fs::write(dir.join(name), "mine").unwrap();
        }
        // A link with exactly the pattern's name is not a temporary of fluxwave's either
        // (its temporaries are regular files): removing it would remove what it names.
        #[cfg(unix)]
        std::os::unix::fs::symlink(
            "apps-wave-0.yaml",
            dir.join(".apps-wave-0.yaml.fluxwave-tmp-LinkLink12"),
        )
        .unwrap();
        let found = leftover_temporaries(&[file]);
        let expected: Vec<_> = names.iter().take(3).map(|n| (dir.join(n), 0)).collect();
        assert_eq!(found, expected);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
