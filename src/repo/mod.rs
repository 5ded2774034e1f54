//! Reading a GitOps tree: `fluxwave.yaml`, the catalog, and the app tier's files, flat
//! (`apps/<file>`) or grouped (`apps/wave-<N>/<file>`, `apps/<unit>/<file>`). Reading never writes; links are
//! never followed (a link in the app tier is reported, not read through).

pub mod apptier;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::catalog::{self, Service};
use crate::config::Config;
use crate::error::Result;
use crate::fs::read_regular;
use crate::graph::Graph;

pub use apptier::{AppTier, Location};

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

    /// What this run read of the file, if it read it: `apply` replaces or removes a file
    /// only while it still holds these bytes.
    pub fn cached(&self, path: &Path) -> Option<Option<Arc<Vec<u8>>>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(path)
            .cloned()
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
        let mut apps = apps?;
        apps.settle(root, |name| graph.index.contains_key(name));
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
        crate::fs::read_text_with(&self.root, rel, |path| {
            Ok(self.reads.bytes(path, rel)?.map(|b| b.to_vec()))
        })
    }

    /// The graph node of the unit a repository file belongs to, when it is an app-tier file
    /// (at any depth under the app tier, so in a flat, wave or unit folder alike) that a
    /// unit owns by its name. `blast` and `check` assign files to units through here.
    pub fn unit_of_file(&self, file: &str) -> Option<usize> {
        let rest = file
            .strip_prefix(self.config.apps.trim_end_matches('/'))?
            .strip_prefix('/')?;
        let name = rest.rsplit('/').next().unwrap_or(rest);
        apptier::owner_of(name, &self.graph.index).copied()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }
}
