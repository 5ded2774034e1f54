//! Every write fluxwave makes. A file is written whole or not at all (temporary file, fsync,
//! rename, fsync of the folder), and a move is a rename, so a manifest's bytes are never
//! rewritten and git records the move as a rename.

use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};

pub fn write_atomic(path: &Path, contents: &str) -> Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    }
    let mut file = atomic_write_file::AtomicWriteFile::options()
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    file.write_all(contents.as_bytes())
        .map_err(|e| Error::io(path, e))?;
    file.commit().map_err(|e| Error::io(path, e))
}

/// `write_atomic` of every (path, contents), on up to 8 threads: each write waits on two
/// fsyncs, which overlap. The first error in list order is returned; writes after it may
/// have been made (as after an interruption, which a second run completes).
pub fn write_all_atomic(writes: &[(std::path::PathBuf, &str)]) -> Result<()> {
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
                let result = write_atomic(path, contents);
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
/// can be opened for writing: a read-only mount, an immutable file or folder, or a missing
/// permission is found before the first change, not half-way through a change set. A folder
/// that does not exist yet is probed at its nearest existing ancestor (where it would be made).
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
    for file in files {
        if file.symlink_metadata().is_ok_and(|m| m.is_file()) {
            std::fs::OpenOptions::new()
                .write(true)
                .open(file)
                .map_err(|e| Error::io(file, e))?;
        }
    }
    Ok(())
}

/// Whether `dir` takes a new entry. On Linux the probe is an unnamed temporary file
/// (`O_TMPFILE`): it has no name, so a process killed while probing leaves nothing behind.
/// Elsewhere, or where the file system has no unnamed files, a named probe is made and
/// removed at once.
fn probe_dir(dir: &Path) -> Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // O_TMPFILE | O_DIRECTORY on Linux (the same value on every architecture but a few
        // that fluxwave does not target; there the open fails and the named probe runs).
        const O_TMPFILE: i32 = 0o20_200_000;
        match std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(O_TMPFILE)
            .mode(0o600)
            .open(dir)
        {
            Ok(_) => return Ok(()),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(95 /* EOPNOTSUPP */ | 21 /* EISDIR */ | 22 /* EINVAL */)
                ) => {}
            Err(e) => return Err(Error::io(dir, e)),
        }
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
    dirs.into_iter().try_for_each(|d| sync_dir(Some(d)))
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

fn sync_dir(dir: Option<&Path>) -> Result<()> {
    let Some(dir) = dir else { return Ok(()) };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    match std::fs::File::open(dir).and_then(|f| f.sync_all()) {
        Ok(()) => Ok(()),
        Err(e) => Err(Error::io(dir, e)),
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
