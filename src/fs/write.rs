//! Every write fluxwave makes. A file is written whole or not at all (temporary file, fsync,
//! rename, then one fsync of each touched folder), and a move is a rename, so a manifest's
//! bytes are never rewritten and git records the move as a rename.

use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};

/// Writes `contents` to `path` whole or not at all (`replace`), then makes the rename
/// durable by syncing the folder.
pub fn write_atomic(path: &Path, contents: &str) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new(""));
    make_dir(dir)?;
    replace(path, contents)?;
    sync_dirs([dir])
}

/// `replace` of every (path, contents) into existing folders, on up to 8 threads: each write
/// waits on an fsync, and they overlap. The folders are not synced here: the caller syncs each
/// once (`sync_dirs`), not once per file. The first error in list order is returned; writes
/// after it may have been made (as after an interruption, which a second run completes).
pub fn replace_all(writes: &[(std::path::PathBuf, &str)]) -> Result<()> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<Result<()>>>> =
        writes.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..writes.len().min(8) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((path, contents)) = writes.get(i) else {
                    break;
                };
                let result = replace(path, contents);
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

/// Replaces (or creates) `path` in its existing folder with `contents`, whole or not at all:
/// the bytes go to a temporary file beside it, which is synced and then renamed over `path`. A
/// file replaced keeps its permissions and, where allowed, its owner. The folder is not synced.
///
/// On Linux the temporary file is unnamed (`O_TMPFILE`) until it is complete: it gets its
/// `.<name>.XXXXXX` name just before the rename, so a process killed while writing leaves
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
/// unnamed files (with `None`), else named `.<name>.XXXXXX` (with its path).
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

/// A new file `.<name>.XXXXXX` in `dir`, and its path.
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

/// `.<name>.XXXXXX`, six random letters and digits (the pattern `leftover_temporaries` finds).
fn temporary_name(name: &std::ffi::OsStr) -> std::ffi::OsString {
    use std::hash::{BuildHasher, Hasher};
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    // Every RandomState is seeded afresh.
    let mut bits = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let mut out = std::ffi::OsString::from(".");
    out.push(name);
    out.push(".");
    let suffix: String = (0..6)
        .map(|_| {
            let c = ALPHABET[(bits % ALPHABET.len() as u64) as usize];
            bits /= ALPHABET.len() as u64;
            char::from(c)
        })
        .collect();
    out.push(suffix);
    out
}

/// Moves a file by renaming it into an existing folder; the target must not exist (a rename
/// never overwrites). The two folders are not synced here: the caller syncs each touched
/// folder once (`sync_dirs`).
pub fn move_file(from: &Path, to: &Path) -> Result<()> {
    let exists = || {
        Error::Usage(format!(
            "{} already exists; fluxwave will not overwrite it with {}",
            to.display(),
            from.display()
        ))
    };
    // On Linux the check and the rename are one call (`RENAME_NOREPLACE`); where the file
    // system does not take that flag, and elsewhere, the target is looked up first.
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{renameat_with, RenameFlags, CWD};
        match renameat_with(CWD, from, CWD, to, RenameFlags::NOREPLACE) {
            Ok(()) => return Ok(()),
            Err(rustix::io::Errno::EXIST) => return Err(exists()),
            Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS) => {}
            Err(e) => return Err(Error::io(from, e.into())),
        }
    }
    if to.symlink_metadata().is_ok() {
        return Err(exists());
    }
    std::fs::rename(from, to).map_err(|e| Error::io(from, e))
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

/// Removes a file (the caller syncs its folder).
pub fn remove_file(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Removes a folder only when it is empty; a folder that still holds something stays.
pub fn remove_empty_dir(path: &Path) -> Result<bool> {
    match std::fs::remove_dir(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
        Err(_) => Ok(false),
    }
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

/// Temporary files an interrupted atomic write of `path` may have left beside it
/// (`.<name>.XXXXXX`), sorted.
pub fn leftover_temporaries(path: &Path) -> Vec<std::path::PathBuf> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return vec![];
    };
    let prefix = format!(".{name}.");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return vec![];
    };
    let mut found: Vec<std::path::PathBuf> = entries
        .flatten()
        .filter(|e| {
            e.file_name().to_str().is_some_and(|n| {
                n.strip_prefix(&prefix).is_some_and(|tail| {
                    tail.len() == 6 && tail.bytes().all(|b| b.is_ascii_alphanumeric())
                })
            })
        })
        .map(|e| e.path())
        .collect();
    found.sort();
    found
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
        let writes: Vec<(std::path::PathBuf, &str)> = (0..20)
            .map(|i| (dir.join(format!("f{i:02}.yaml")), "a: 1\n"))
            .collect();
        replace_all(&writes).unwrap();
        replace_all(&[(dir.join("f00.yaml"), "b: 2\n")]).unwrap();
        let expected: Vec<String> = (0..20).map(|i| format!("f{i:02}.yaml")).collect();
        assert_eq!(entries(&dir), expected);
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
        std::fs::write(dir.join(".apps-wave-0.yaml.toolong7"), "").unwrap();
        let found = leftover_temporaries(&file);
        let expected: Vec<_> = names.iter().take(3).map(|n| dir.join(n)).collect();
        assert_eq!(found, expected);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
