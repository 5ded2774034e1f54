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
    /// The file's bytes; `Ok(None)` when it does not exist.
    pub fn bytes(&self, path: &Path) -> std::io::Result<Option<Arc<Vec<u8>>>> {
        let mut cache = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(hit) = cache.get(path) {
            return Ok(hit.clone());
        }
        let read = match std::fs::read(path) {
            Ok(bytes) => Some(Arc::new(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        cache.insert(path.to_path_buf(), read.clone());
        Ok(read)
    }

    /// The file as text, `None` when it cannot be read or is not UTF-8 (as
    /// `std::fs::read_to_string(path).ok()`).
    pub fn text(&self, path: &Path) -> Option<String> {
        let bytes = self.bytes(path).ok()??;
        String::from_utf8(bytes.to_vec()).ok()
    }
}

impl Repo {
    pub fn load(root: &Path) -> Result<Repo> {
        let config = Config::load(root)?;
        // The app tier's listing overlaps the catalog's reads and parses.
        let (services, apps) = std::thread::scope(|s| {
            let apps = s.spawn(|| AppTier::scan(root, &config.apps));
            let services = catalog::load(root, &config.catalog);
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

    /// `read_optional`, through `reads`.
    pub fn read_optional(&self, rel: &str) -> Result<Option<String>> {
        let path = self.root.join(rel);
        match self.reads.bytes(&path) {
            Ok(Some(bytes)) => String::from_utf8(bytes.to_vec()).map(Some).map_err(|_| {
                crate::error::SourceError::new(rel, "the file is not UTF-8 text")
                    .help("kustomization and manifest files are UTF-8 YAML")
                    .into()
            }),
            Ok(None) => Ok(None),
            Err(e) => Err(crate::error::Error::io(&path, e)),
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }
}

/// Reads a file of the repository as text; `Ok(None)` when it does not exist.
pub fn read_optional(root: &Path, rel: &str) -> Result<Option<String>> {
    let path = root.join(rel);
    match std::fs::read(&path) {
        Ok(bytes) => String::from_utf8(bytes).map(Some).map_err(|_| {
            crate::error::SourceError::new(rel, "the file is not UTF-8 text")
                .help("kustomization and manifest files are UTF-8 YAML")
                .into()
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(crate::error::Error::io(&path, e)),
    }
}
