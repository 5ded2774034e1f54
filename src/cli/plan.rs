//! `fluxwave plan`: which file goes to which group (a wave, or a unit's own Kustomization)
//! and which files must move. Read-only.

use std::io::Write;
use std::path::Path;

use serde_json::{json, Map, Value};

use super::{io, Outcome, ReportFormat};
use crate::diag::{render, Finding};
use crate::error::{Error, Result, SourceError};
use crate::plan::{Group, GroupKind, Plan, Problem};
use crate::plural::count;
use crate::repo::Repo;

/// The plan of a repository, or every problem that stops it as an input error.
pub(crate) fn load(root: &Path) -> Result<(Repo, Plan)> {
    super::managed_here(root)?;
    let repo = Repo::load(root)?;
    let plan = Plan::for_repo(&repo)?;
    let blocking: Vec<SourceError> = plan.blocking().map(|p| locate(&repo, p)).collect();
    if !blocking.is_empty() {
        return Err(Error::Input(blocking));
    }
    for p in plan.problems.iter().filter(|p| !p.blocks()) {
        let f = Finding::new(p.code(), p.path(&repo.apps.dir), p.message(), p.help());
        super::warn(format_args!("{}", render::line(&f)));
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

pub fn run(root: &Path, format: ReportFormat, out: &mut impl Write) -> Result<Outcome> {
    let (repo, plan) = load(root)?;
    let apps = &repo.apps;
    let g = &repo.graph;
    let unplaced: Vec<_> = (0..g.nodes.len()).filter(|&i| !plan.placed[i]).collect();
    let moves = plan.placements.iter().filter(|p| p.moves).count();
    let text = match format {
        ReportFormat::Json => {
            let group = |i: usize, group: &Group| {
                let files: Vec<_> = plan
                    .files_in(i)
                    .map(|p| {
                        json!({
                            "file": p.file,
                            "owner": g.nodes[p.owner].name,
                            "from": apps.path_of(&p.file, p.from),
                            "to": apps.path_in(&group.folder, &p.file),
                            "move": p.moves,
                        })
                    })
                    .collect();
                let mut doc = group_json(&repo, group);
                doc.insert("files".into(), json!(files));
                Value::Object(doc)
            };
            let groups: Vec<_> = plan
                .groups()
                .iter()
                .enumerate()
                .map(|(i, gr)| group(i, gr))
                .collect();
            let waves: Vec<_> = groups[..plan.waves].to_vec();
            let not_placed: Vec<_> = unplaced
                .iter()
                .map(|&i| json!({"name": g.nodes[i].name, "wave": g.nodes[i].wave}))
                .collect();
            let doc = json!({
                "version": super::JSON_VERSION,
                "topology": repo.config.topology.as_str(),
                "waves": waves,
                "kustomizations": groups,
                "notPlaced": not_placed,
                "files": plan.placements.len(),
                "moves": moves,
            });
            serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
        }
        ReportFormat::Text => {
            let mut s = String::new();
            for (i, group) in plan.groups().iter().enumerate() {
                match group.kind {
                    GroupKind::Wave(n) => s.push_str(&format!(
                        "wave {n}: {} -> ./{}\n",
                        group.name,
                        apps.dir_of(&group.folder)
                    )),
                    GroupKind::Unit(u) => s.push_str(&format!(
                        "unit {}: {} -> ./{}  (dependsOn {})\n",
                        g.nodes[u].name,
                        group.name,
                        apps.dir_of(&group.folder),
                        if group.depends_on.is_empty() {
                            "nothing".to_string()
                        } else {
                            group.depends_on.join(", ")
                        }
                    )),
                }
                for p in plan.files_in(i) {
                    let from = apps.path_of(&p.file, p.from);
                    if p.moves {
                        let to = apps.path_in(&group.folder, &p.file);
                        s.push_str(&format!(
                            "  move  {from} -> {to}  ({})\n",
                            g.nodes[p.owner].name
                        ));
                    } else {
                        s.push_str(&format!("  keep  {from}  ({})\n", g.nodes[p.owner].name));
                    }
                }
            }
            if !unplaced.is_empty() {
                let names: Vec<_> = unplaced
                    .iter()
                    .map(|&i| format!("{} (wave {})", g.nodes[i].name, g.nodes[i].wave))
                    .collect();
                s.push_str(&format!("not placed (no manifest): {}\n", names.join(", ")));
            }
            s.push_str(&format!(
                "{} in {}, {} to move (topology: {})\n",
                count(plan.placements.len(), "file"),
                plan.describe_groups(),
                moves,
                repo.config.topology.as_str()
            ));
            s
        }
    };
    out.write_all(text.as_bytes()).map_err(io)?;
    // The process ends next: freeing every service, node and file name one by one is work
    // for nothing.
    std::mem::forget((repo, plan));
    Ok(Outcome::Clean)
}
