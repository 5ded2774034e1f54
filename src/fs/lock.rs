//! One writing run at a time in a repository (`apply`, and `render` into the repository).
//! The lock is an exclusive `flock(2)` on a lock file:
//! `.git/fluxwave.lock` where the repository has a `.git` folder (out of every tree Flux or
//! git sees), else `.fluxwave.lock` at its root. The kernel drops a `flock` when its process
//! ends, however it ends, so a run killed with SIGKILL leaves no lock that blocks the next
//! one. A second run does not wait: it stops at once, naming the lock and the run (command
//! and process) that holds it. The holder removes the file before it lets the lock go, and a run that
//! locked a file since removed tries again, so two runs can never each hold a lock.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The lock of one repository, held until dropped.
pub struct Lock {
    /// The lock file, held open (closing it releases the lock); `None` where no file can be
    /// made (a read-only tree, which no other run can change either: `apply` then stops at
    /// its probe if it has anything to write).
    held: Option<(PathBuf, std::fs::File)>,
}

/// Whether a failure to create the lock file means the tree cannot be written at all.
fn unwritable(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::PermissionDenied
        || e.raw_os_error() == Some(30 /* EROFS */)
}

/// Where the lock of the repository at `root` lives.
pub fn path(root: &Path) -> PathBuf {
    let git = root.join(".git");
    if git.symlink_metadata().is_ok_and(|m| m.is_dir()) {
        git.join("fluxwave.lock")
    } else {
        root.join(".fluxwave.lock")
    }
}

/// The refusal `command` gets while another run holds the lock; `holder` is what the lock
/// file says (`<process id> <command>`).
fn held(path: &Path, holder: &str, command: &str) -> Error {
    let mut words = holder.split_whitespace();
    let pid = words
        .next()
        .filter(|p| p.bytes().all(|b| b.is_ascii_digit()));
    let other = words
        .next()
        .filter(|c| matches!(*c, "apply" | "render"))
        .unwrap_or("apply");
    let who = match pid {
        Some(pid) => format!("another `fluxwave {other}` (process {pid})"),
        None => format!("another `fluxwave {other}`"),
    };
    Error::Usage(format!(
        "{who} is changing this repository: it holds the lock {}. Nothing was written; wait for it to finish, then run `fluxwave {command}` again (the lock goes when that process ends, even if it is killed)",
        path.display()
    ))
}

/// Takes the lock of the repository at `root` for `command` (`apply`, `render`), or fails at
/// once when another run holds it.
#[cfg(unix)]
pub fn acquire(root: &Path, command: &str) -> Result<Lock> {
    use std::io::{Read, Seek, Write};
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let path = path(root);
    loop {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            // Never a lock taken through a link put in the file's place.
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(&path);
        let mut file = match file {
            Ok(file) => file,
            Err(e) if unwritable(&e) => return Ok(Lock { held: None }),
            Err(e) => return Err(Error::io(&path, e)),
        };
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => {
                let mut holder = String::new();
                let _ = (&file).take(32).read_to_string(&mut holder);
                return Err(held(&path, &holder, command));
            }
            Err(e) => return Err(Error::io(&path, e.into())),
        }
        // The holder before us removes the file before it unlocks: a file locked after
        // that is no longer the lock, and the one at the path (if any) is tried instead.
        let locked = file.metadata().map_err(|e| Error::io(&path, e))?;
        let current = path.symlink_metadata();
        if !current.is_ok_and(|m| m.dev() == locked.dev() && m.ino() == locked.ino()) {
            continue;
        }
        // Who holds it, for the message of a run that finds it held.
        let _ = file.set_len(0);
        let _ = file.seek(std::io::SeekFrom::Start(0));
        let _ = writeln!(file, "{} {command}", std::process::id());
        return Ok(Lock {
            held: Some((path, file)),
        });
    }
}

/// Takes the lock of the repository at `root` (without `flock`: a lock file made with
/// `O_EXCL`, which a killed run leaves behind; the message names it for removal).
#[cfg(not(unix))]
pub fn acquire(root: &Path, command: &str) -> Result<Lock> {
    use std::io::Write;
    let path = path(root);
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
    {
        Ok(mut file) => {
            let _ = writeln!(file, "{} {command}", std::process::id());
            Ok(Lock {
                held: Some((path, file)),
            })
        }
        Err(e) if unwritable(&e) => Ok(Lock { held: None }),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let holder = std::fs::read_to_string(&path).unwrap_or_default();
            Err(held(&path, &holder, command))
        }
        Err(e) => Err(Error::io(&path, e)),
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        // Removed while still held; closing the file then releases the lock.
        if let Some((path, file)) = self.held.take() {
            let _ = std::fs::remove_file(&path);
            drop(file);
        }
    }
}
