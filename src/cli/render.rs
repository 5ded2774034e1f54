//! `fluxwave render`: catalog files to manifests in the app tier. Every FILE is checked and
//! rendered before the first write, so bad input writes nothing; each file is then written
//! atomically, so a reader never sees half a manifest. A folder or file that cannot be
//! written is found by a probe before the first write; a run killed between two writes leaves
//! each file whole (old or new), and a rerun, a pure function of the catalog, converges.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::report::{io, Outcome};
use crate::error::{Error, Result, SourceError};
use crate::fs::write;
use crate::render::{self, Options};
use crate::repo::Repo;

pub struct Args<'a> {
    pub files: &'a [PathBuf],
    pub out_dir: Option<&'a Path>,
    pub wave_layout: bool,
    pub image_automation: bool,
}

pub fn run(root: &Path, args: Args<'_>, out: &mut impl Write) -> Result<Outcome> {
    let repo = Repo::load(root)?;
    let mut errors = Vec::new();
    let mut chosen = BTreeSet::new();
    for file in args.files {
        match service_of(&repo, file) {
            Ok(i) => {
                chosen.insert(i);
            }
            Err(e) => errors.push(e),
        }
    }
    let options = Options {
        image_automation: args.image_automation,
    };
    let mut rendered = Vec::new();
    for &i in &chosen {
        match render::service(&repo.services[i], options) {
            Ok(files) => rendered.extend(files),
            Err(e) => errors.extend(e),
        }
    }
    if !errors.is_empty() {
        return Err(Error::Input(errors));
    }
    let dir = match args.out_dir {
        Some(d) => d.to_path_buf(),
        None => repo.path(&repo.config.apps),
    };
    // Every rendered unit is a node: the service itself, or the `<svc>-db` its database adds
    // to the dependencies. Its group's folder under the repository's topology: its wave's,
    // or its own.
    let group_folder = |unit: &str| {
        repo.graph
            .get(unit)
            .map(|n| crate::plan::topology::folder_of(repo.config.topology, n))
            .ok_or_else(|| Error::Usage(format!("`{unit}` is not in the graph")))
    };
    let mut writes = Vec::with_capacity(rendered.len());
    for f in &rendered {
        let target = if args.wave_layout {
            dir.join(group_folder(&f.unit)?).join(&f.name)
        } else if args.out_dir.is_some() {
            dir.join(&f.name)
        } else if let Some(existing) = repo.apps.files.iter().find(|a| a.name == f.name) {
            // Into the app tier, as the repository lays it out: over the file where it is
            // (`apply` moves it if its wave changed), or, for a new file of a migrated tier,
            // into its group's folder; a flat tier takes it flat.
            repo.path(&repo.apps.path_of(&f.name, existing.location))
        } else if repo.apps.is_grouped() {
            repo.path(&repo.apps.path_in(&group_folder(&f.unit)?, &f.name))
        } else {
            dir.join(&f.name)
        };
        writes.push((target, &f.text));
    }
    // In the repository, nothing is written through a link (see `write::link_refused`), and
    // not while `apply` moves the app tier's files (a manifest written to its old place
    // beside the moved one would be a duplicate).
    let mut checked = std::collections::HashSet::new();
    let mut lock = None;
    for (target, _) in &writes {
        if let Some(rel) = target.strip_prefix(&repo.root).ok().and_then(Path::to_str) {
            write::refuse_links(&repo.root, rel, true, &mut checked)?;
            if lock.is_none() {
                lock = Some(crate::fs::lock::acquire(&repo.root, "render")?);
            }
        }
    }
    write::probe_writable(
        writes.iter().filter_map(|(t, _)| t.parent()),
        writes.iter().map(|(t, _)| t.as_path()),
    )?;
    for (target, text) in &writes {
        write::write_atomic(target, text)?;
        writeln!(out, "wrote {}", target.display()).map_err(io)?;
    }
    drop(lock);
    Ok(Outcome::Clean)
}

/// The index of the catalog service stored in `file`: a path relative to the repository
/// (`catalog/sonarr.yaml`), or else to the working directory.
fn service_of(repo: &Repo, file: &Path) -> std::result::Result<usize, SourceError> {
    let shown = file.display().to_string();
    let in_repo = repo.root.join(file);
    let file = if file.is_relative() && in_repo.is_file() {
        in_repo.as_path()
    } else {
        file
    };
    let abs = std::fs::canonicalize(file).map_err(|e| {
        SourceError::new(&shown, format!("cannot read the file: {e}"))
            .help("give the path of a catalog file, such as catalog/<svc>.yaml")
    })?;
    repo.services
        .iter()
        .position(|s| std::fs::canonicalize(repo.path(&s.path)).is_ok_and(|p| p == abs))
        .ok_or_else(|| {
            SourceError::new(
                &shown,
                format!(
                    "not a ServiceDefinition of the catalog `{}` of repository {}",
                    repo.config.catalog,
                    repo.root.display()
                ),
            )
            .help("render catalog files of the --repo repository; move the file into its catalog folder, or pass --repo")
        })
}
