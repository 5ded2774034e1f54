//! `Dir` for a system without the `*at` calls (`openat`, `renameat2`, `unlinkat`): each
//! operation goes by the folder's path, and refuses a link it finds at the name first. A
//! folder swapped for a link between that check and the operation is not caught, as it is
//! by the file descriptors of the unix `Dir`; the write itself is the same temporary file,
//! sync and rename (`replace`).

use super::{link_refused, replace, sync_dir, Dir, Expect};
use crate::error::{Error, Result};

impl Dir {
    pub fn read(&self, name: &str) -> std::io::Result<Option<Vec<u8>>> {
        let path = self.path.join(name);
        if path
            .symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink())
        {
            return Err(std::io::Error::other("a symbolic link"));
        }
        match std::fs::read(&path) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub(super) fn open_dir(
        &self,
        name: &str,
        rel: &str,
        make: bool,
    ) -> Result<Option<(Dir, bool)>> {
        let path = self.path.join(name);
        match path.symlink_metadata() {
            Ok(m) if m.file_type().is_symlink() => return Err(link_refused(rel)),
            Ok(_) => {
                return Ok(Some((
                    Dir {
                        rel: rel.to_string(),
                        path,
                    },
                    false,
                )))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && make => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(&path, e)),
        }
        std::fs::create_dir(&path).map_err(|e| Error::io(&path, e))?;
        Ok(Some((
            Dir {
                rel: rel.to_string(),
                path,
            },
            true,
        )))
    }

    pub fn verify(&self, name: &str, expect: Expect) -> Result<()> {
        let path = self.path.join(name);
        let rel = self.rel_of(name);
        if path
            .symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink())
        {
            return Err(link_refused(&rel));
        }
        let now = match std::fs::read(&path) {
            Ok(b) => Some(b),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(Error::io(&path, e)),
        };
        expect.holds(&rel, now.as_deref())
    }

    pub fn move_to(&self, name: &str, to: &Dir, to_name: &str) -> Result<()> {
        self.verify(name, Expect::Any)?;
        let (from, to) = (self.path.join(name), to.path.join(to_name));
        if to.symlink_metadata().is_ok() {
            return Err(Error::Usage(format!(
                "{} already exists; fluxwave will not overwrite it with {}",
                to.display(),
                from.display()
            )));
        }
        std::fs::rename(&from, &to).map_err(|e| Error::io(&from, e))
    }

    pub fn remove(&self, name: &str, expect: Expect) -> Result<()> {
        if self.path.join(name).symlink_metadata().is_err() {
            return Ok(());
        }
        self.verify(name, expect)?;
        match std::fs::remove_file(self.path.join(name)) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(&self.path.join(name), e)),
        }
    }

    pub fn remove_empty_dir(&self, name: &str) -> bool {
        match std::fs::remove_dir(self.path.join(name)) {
            Ok(()) => true,
            Err(e) => e.kind() == std::io::ErrorKind::NotFound,
        }
    }

    pub(super) fn sync(&self) -> Result<()> {
        sync_dir(&self.path)
    }

    pub fn replace(&self, name: &str, contents: &str, expect: Expect) -> Result<()> {
        self.verify(name, expect)?;
        replace(&self.path.join(name), contents)
    }
}
