//! Reading a GitOps tree: `fluxwave.yaml`, the catalog, and the app tier's files, flat
//! (`apps/<file>`) or waved (`apps/wave-<N>/<file>`). Reading never writes; links are
//! never followed (a link in the app tier is reported, not read through).

pub mod apptier;
pub mod fluxtree;
pub mod fsops;
pub mod kedit;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::catalog::{self, Service};
use crate::config::Config;
use crate::error::Result;
use crate::graph::Graph;

pub use apptier::{AppFile, AppTier, Location};

/// Everything fluxwave knows about a repository before it plans anything.
pub struct Repo {
    pub root: PathBuf,
    pub config: Config,
    pub services: Vec<Service>,
    pub graph: Graph,
    pub apps: AppTier,
    /// The files of the Flux wiring read so far: each is read from disk once per run,
    /// however many lints and walks look at it.
    pub reads: Reads,
}

/// Files read during one run, by absolute path: each file's bytes (or its absence) are read
/// from disk once. Failed reads are not kept, so a retry reports its own error.
#[derive(Default)]
pub struct Reads(Mutex<HashMap<PathBuf, Option<Arc<Vec<u8>>>>>);

impl Reads {
    /// The file's bytes through `read_regular` (a regular file, never through a link, size
    /// bounded); `Ok(None)` when it does not exist. `shown` names it in errors.
    pub fn bytes(&self, path: &Path, shown: &str) -> Result<Option<Arc<Vec<u8>>>> {
        let mut cache = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(hit) = cache.get(path) {
            return Ok(hit.clone());
        }
        let read = read_regular(path, shown)?.map(Arc::new);
        cache.insert(path.to_path_buf(), read.clone());
        Ok(read)
    }

    /// The file as text, `None` when it cannot be read safely or is not UTF-8.
    pub fn text(&self, path: &Path) -> Option<String> {
        let bytes = self.bytes(path, "").ok()??;
        String::from_utf8(bytes.to_vec()).ok()
    }
}

impl Repo {
    pub fn load(root: &Path) -> Result<Repo> {
        Repo::load_with(root, &|_| None)
    }

    /// `load`, taking the catalog files this run has read already from `preread` (by
    /// repository-relative path) instead of reading them again.
    pub fn load_with(
        root: &Path,
        preread: &(dyn Fn(&str) -> Option<crate::yaml::Text> + Sync),
    ) -> Result<Repo> {
        let config = Config::load(root)?;
        // The app tier's listing overlaps the catalog's reads and parses.
        let (services, apps) = std::thread::scope(|s| {
            let apps = s.spawn(|| AppTier::scan(root, &config.apps));
            let services = catalog::load(root, &config.catalog, preread);
            let apps = apps.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            (services, apps)
        });
        let services = services?;
        let graph = Graph::build(&services, &config)?;
        let apps = apps?;
        Ok(Repo {
            root: root.to_path_buf(),
            config,
            services,
            graph,
            apps,
            reads: Reads::default(),
        })
    }

    /// `read_optional` (inside the repository, a regular file), read once per run.
    pub fn read_optional(&self, rel: &str) -> Result<Option<String>> {
        if let Some(parent) = Path::new(rel).parent().and_then(Path::to_str) {
            if !parent.is_empty() {
                check_inside(&self.root, parent)?;
            }
        }
        match self.reads.bytes(&self.root.join(rel), rel)? {
            Some(bytes) => String::from_utf8(bytes.to_vec()).map(Some).map_err(|_| {
                crate::error::SourceError::new(rel, "the file is not UTF-8 text")
                    .help("kustomization and manifest files are UTF-8 YAML")
                    .into()
            }),
            None => Ok(None),
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }
}

/// Whether a file is a YAML manifest by its name (`.yaml` or `.yml`).
pub fn is_manifest(path: &str) -> bool {
    path.ends_with(".yaml") || path.ends_with(".yml")
}

/// The largest file fluxwave reads. Real manifests and CRD bundles are far below it; a file
/// above it is refused with a clear error rather than read into memory and parsed for minutes.
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Reads a regular file, `Ok(None)` when it does not exist. A link, a FIFO (reading it would
/// block forever), a socket or device, and a file over `MAX_FILE_BYTES` are refused as bad
/// input under the name `shown`.
pub fn read_regular(path: &Path, shown: &str) -> Result<Option<Vec<u8>>> {
    let meta = match path.symlink_metadata() {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(crate::error::Error::io(path, e)),
    };
    check_regular(&meta, shown)?;
    let file = std::fs::File::open(path).map_err(|e| crate::error::Error::io(path, e))?;
    read_bounded(file, meta.len(), path, shown).map(Some)
}

fn refuse(shown: &str, message: String, help: &str) -> crate::error::Error {
    crate::error::SourceError::new(shown, message)
        .help(help)
        .into()
}

fn too_big(shown: &str, len: u64) -> crate::error::Error {
    refuse(
        shown,
        format!(
            "is {} MiB; fluxwave reads files up to {} MiB",
            len.div_ceil(1024 * 1024),
            MAX_FILE_BYTES / (1024 * 1024)
        ),
        "split the file, or keep generated bulk out of the GitOps tree",
    )
}

/// Refuses a link, a FIFO, socket or device, and a file over `MAX_FILE_BYTES`.
fn check_regular(meta: &std::fs::Metadata, shown: &str) -> Result<()> {
    if meta.file_type().is_symlink() {
        return Err(refuse(
            shown,
            "is a symbolic link; fluxwave does not follow links".into(),
            "replace the link with the file itself",
        ));
    }
    if !meta.is_file() {
        return Err(refuse(
            shown,
            "is not a regular file (a FIFO, socket or device)".into(),
            "replace it with a regular file",
        ));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(too_big(shown, meta.len()));
    }
    Ok(())
}

fn read_bounded(file: impl std::io::Read, len: u64, path: &Path, shown: &str) -> Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    // Bounded even if the file grows while it is read.
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| crate::error::Error::io(path, e))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_big(shown, bytes.len() as u64));
    }
    Ok(bytes)
}

/// A folder whose regular files are read by name, as `read_regular` reads them. Where the
/// system allows, the folder is opened once and each file is opened relative to it and
/// checked on the open file: one path lookup per file instead of a walk of the whole path
/// for its metadata and another for its contents.
pub struct Folder {
    path: PathBuf,
    #[cfg(unix)]
    fd: Option<rustix::fd::OwnedFd>,
}

impl Folder {
    pub fn open(path: &Path) -> Folder {
        Folder {
            path: path.to_path_buf(),
            #[cfg(unix)]
            fd: {
                use rustix::fs::{open, Mode, OFlags};
                open(
                    path,
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .ok()
            },
        }
    }

    /// `read_regular` of the entry `name`, which the folder's listing says is a regular file.
    pub fn read_regular(&self, name: &str, shown: &str) -> Result<Option<Vec<u8>>> {
        #[cfg(unix)]
        if let Some(dir) = &self.fd {
            use rustix::fs::{openat, Mode, OFlags};
            use std::io::Read;
            // Never through a link, and never blocking on a FIFO put in the file's place.
            let flags = OFlags::RDONLY
                | OFlags::NOFOLLOW
                | OFlags::NONBLOCK
                | OFlags::NOCTTY
                | OFlags::CLOEXEC;
            if let Ok(fd) = openat(dir, name, flags, Mode::empty()) {
                let file = std::fs::File::from(fd);
                // A regular file (as the listing said) that ends within the first read needs
                // no fstat: a short read is its end. What is not a regular file (a FIFO put
                // in its place reads nothing, without blocking; a device fills the buffer or
                // cannot be read at an offset) falls through to the checks below.
                thread_local! {
                    static HEAD: std::cell::RefCell<Vec<u8>> =
                        std::cell::RefCell::new(vec![0; 4096]);
                }
                let whole =
                    HEAD.with_borrow_mut(|head| {
                        match std::os::unix::fs::FileExt::read_at(&file, head, 0) {
                            Ok(n) if n > 0 && n < head.len() => Some(head[..n].to_vec()),
                            _ => None,
                        }
                    });
                if whole.is_some() {
                    return Ok(whole);
                }
                let path = self.path.join(name);
                let meta = file
                    .metadata()
                    .map_err(|e| crate::error::Error::io(&path, e))?;
                check_regular(&meta, shown)?;
                if meta.len() == 0 {
                    // Empty, or a file whose size is not known up front.
                    return read_bounded(file, 0, &path, shown).map(Some);
                }
                // The size it had when opened: no further read to find the end.
                return read_bounded(file.take(meta.len()), meta.len(), &path, shown).map(Some);
            }
            // Whatever kept it from opening is reported as `read_regular` reports it.
        }
        read_regular(&self.path.join(name), shown)
    }
}

/// Whether `path` (which exists) lies inside `root` once every link in it is resolved: a
/// linked folder must not lead fluxwave out of the repository.
pub fn inside(root: &Path, path: &Path) -> bool {
    match (root.canonicalize(), path.canonicalize()) {
        (Ok(r), Ok(p)) => p.starts_with(r),
        _ => false,
    }
}

/// Fails when the folder `rel` of the repository exists and leads out of it through a link.
pub fn check_inside(root: &Path, rel: &str) -> Result<()> {
    let path = root.join(rel);
    if path.symlink_metadata().is_ok() && !inside(root, &path) {
        return Err(crate::error::SourceError::new(
            rel,
            "leads out of the repository through a symbolic link; fluxwave does not follow it",
        )
        .help("replace the link with the folder itself")
        .into());
    }
    Ok(())
}

/// Reads a file of the repository as text; `Ok(None)` when it does not exist. The file must
/// be a regular file inside the repository (see `read_regular`, `check_inside`).
pub fn read_optional(root: &Path, rel: &str) -> Result<Option<String>> {
    let path = root.join(rel);
    if let Some(parent) = Path::new(rel).parent().and_then(Path::to_str) {
        if !parent.is_empty() {
            check_inside(root, parent)?;
        }
    }
    match read_regular(&path, rel)? {
        Some(bytes) => String::from_utf8(bytes).map(Some).map_err(|_| {
            crate::error::SourceError::new(rel, "the file is not UTF-8 text")
                .help("kustomization and manifest files are UTF-8 YAML")
                .into()
        }),
        None => Ok(None),
    }
}

/// `a/b` + `../c` -> `a/c` (a leading `/` starts from the repository root); `None` when the
/// path leaves the repository. Every relative reference fluxwave follows goes through here.
pub fn join(dir: &str, rel: &str) -> Option<String> {
    let mut parts: Vec<&str> = if rel.starts_with('/') {
        Vec::new()
    } else {
        dir.split('/')
            .filter(|s| !s.is_empty() && *s != ".")
            .collect()
    };
    for seg in rel.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    Some(parts.join("/"))
}

/// A file a kustomization in `dir` refers to (a patch), read only when the reference stays
/// inside the repository and is a regular file: what the editor and the lints may look at.
pub fn read_referenced(root: &Path, dir: &str, entry: &str) -> Option<String> {
    let rel = fluxtree::join(dir, entry)?;
    read_optional(root, &rel).ok().flatten()
}

#[cfg(test)]
mod tests {
    /// Every size reads whole: within the first read (no fstat), exactly its buffer, beyond
    /// it (read through the size checks), and empty.
    #[test]
    fn a_folder_reads_files_of_every_size_whole() {
        let dir = std::env::temp_dir().join(format!("fluxwave-folder-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let folder = super::Folder::open(&dir);
        for len in [0, 1, 300, 4095, 4096, 4097, 10_000, 100_000] {
            let bytes: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            let name = format!("f{len}.yaml");
            std::fs::write(dir.join(&name), &bytes).unwrap();
            let read = folder.read_regular(&name, &name).unwrap();
            assert_eq!(read.as_deref(), Some(&bytes[..]), "{len} bytes");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
