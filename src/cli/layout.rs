//! The repository's layout as `waves`, `plan` and `apply` read it: the plan of a repository
//! fluxwave manages (refused, with every problem located, when one blocks it), and a group
//! (a wave's or a unit's Kustomization) as their JSON prints it.

use std::path::Path;

use serde_json::{json, Map, Value};

use super::report::warn;
use crate::diag::{render, Finding};
use crate::error::{Error, Result, SourceError};
use crate::plan::{Group, GroupKind, Plan, Problem};
use crate::repo::Repo;

/// The repository fluxwave lays out has a `fluxwave.yaml` or a catalog: without either, a
/// command that lays out waves would print an empty table for any folder (a typo in
/// `--repo`, the wrong working directory), so it says so instead.
pub(super) fn managed_here(root: &Path) -> Result<()> {
    let config_file = root.join(crate::config::FILE);
    let catalog = root.join("catalog");
    if config_file.exists() || catalog.is_dir() {
        return Ok(());
    }
    Err(Error::Usage(format!(
        "{}: no {} and no catalog/ folder, so there is nothing for fluxwave to lay out here; run it from the GitOps repository's root (or name it with --repo), or start with `fluxwave init`",
        root.display(),
        crate::config::FILE
    )))
}

/// The plan of a repository, or every problem that stops it as an input error.
pub(super) fn load(root: &Path) -> Result<(Repo, Plan)> {
    managed_here(root)?;
    let repo = Repo::load(root)?;
    let plan = Plan::for_repo(&repo)?;
    let blocking: Vec<SourceError> = plan.blocking().map(|p| locate(&repo, p)).collect();
    if !blocking.is_empty() {
        return Err(Error::Input(blocking));
    }
    for p in plan.problems.iter().filter(|p| !p.blocks()) {
        let f = Finding::new(p.code(), p.path(&repo.apps.dir), p.message(), p.help());
        warn(format_args!("{}", render::line(&f)));
    }
    Ok((repo, plan))
}

/// A blocking problem as an input error, at the dependency entry when a catalog file declares it.
fn locate(repo: &Repo, p: &Problem) -> SourceError {
    let plain = |path: &str| SourceError::new(path, p.message()).help(p.help());
    match p {
        Problem::Unowned { file } => plain(file),
        Problem::Duplicate { paths, .. } => {
            plain(paths.first().map_or(repo.apps.dir.as_str(), String::as_str))
        }
        Problem::MissingDependency { node, dependency } => {
            let declared = repo
                .services
                .iter()
                .find(|s| &s.name == node)
                .and_then(|s| {
                    let d = s.dependencies.iter().find(|d| &d.to == dependency)?;
                    Some(
                        SourceError::new(&s.path, p.message())
                            .at(&s.text, d.span)
                            .help(p.help()),
                    )
                });
            declared.unwrap_or_else(|| plain(crate::config::FILE))
        }
        other => plain(other.path(&repo.apps.dir)),
    }
}

/// A wave's or a unit's Kustomization as `plan` and `waves` print it: its name, its wave (or
/// its unit), its folder, its `dependsOn` and its units, by name.
pub(super) fn group_json(repo: &Repo, group: &Group) -> Map<String, Value> {
    let g = &repo.graph;
    let mut doc = Map::new();
    doc.insert("name".into(), json!(group.name));
    match group.kind {
        GroupKind::Wave(n) => doc.insert("wave".into(), json!(n)),
        GroupKind::Unit(u) => doc.insert("unit".into(), json!(g.nodes[u].name)),
    };
    doc.insert("path".into(), json!(repo.apps.dir_of(&group.folder)));
    doc.insert("dependsOn".into(), json!(group.depends_on));
    let units: Vec<&str> = group
        .members
        .iter()
        .map(|&m| g.nodes[m].name.as_str())
        .collect();
    doc.insert("units".into(), json!(units));
    doc
}
