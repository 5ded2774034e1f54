//! Reading a GitOps tree: `fluxwave.yaml`, the catalog, and the app tier's files, flat
//! (`apps/<file>`) or waved (`apps/wave-<N>/<file>`). Reading never writes; links are
//! never followed (a link in the app tier is reported, not read through).

pub mod apptier;
pub mod fluxtree;
pub mod fsops;
pub mod kedit;

use std::path::{Path, PathBuf};

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
        })
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
