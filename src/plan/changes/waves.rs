//! The app tier: every file in its group's folder, one kustomization per group folder
//! listing its files, no folder for a group that no longer exists, no flat kustomization.

use serde_json::Value;

use super::{write_if_changed, Change, Drift, Op, Warning};
use crate::diag::Code;
use crate::error::{Result, SourceError};
use crate::flux;
use crate::plan::{Group, Plan};
use crate::repo::Repo;

/// Every file that is not in its group's folder moves there.
pub(super) fn moves(repo: &Repo, plan: &Plan, changes: &mut Vec<Change>) {
    let apps = &repo.apps;
    for p in plan.placements.iter().filter(|p| p.moves) {
        let group = &plan.groups()[p.group];
        changes.push(Change {
            op: Op::Move {
                from: apps.path_of(&p.file, p.from),
                to: apps.path_in(&group.folder, &p.file),
            },
            drift: Drift::MisplacedFile,
            why: format!(
                "owned by `{}`, {}",
                repo.graph.nodes[p.owner].name,
                group.describe(&repo.graph)
            ),
        });
    }
}

/// The kustomization of every group folder; the folders of groups that no longer exist and
/// the flat kustomization go. A group folder is fluxwave's, but not every file in it: another
/// kustomization file goes only when it does no more than list the app tier's files (else it
/// is refused: kustomize would find two), and a stale group's folder is kept, with a warning,
/// while it holds files fluxwave did not write (a README, a `.gitkeep`).
pub(super) fn folders(
    repo: &Repo,
    plan: &Plan,
    changes: &mut Vec<Change>,
    warnings: &mut Vec<Warning>,
) -> Result<()> {
    let apps = &repo.apps;
    for (g, group) in plan.groups().iter().enumerate() {
        let rel = format!("{}/kustomization.yaml", apps.dir_of(&group.folder));
        let new = flux::emit::group_dir_kustomization_text(
            &group.what(&repo.graph),
            plan.files_in(g).map(|p| p.file.as_str()),
        );
        write_if_changed(
            changes,
            repo.read_optional(&rel)?,
            rel,
            new,
            Drift::WaveFolder,
            format!("the files of {}", group.describe(&repo.graph)),
        );
    }
    let current: std::collections::HashMap<&str, &Group> = plan
        .groups()
        .iter()
        .map(|g| (g.folder.as_str(), g))
        .collect();
    for folder in &apps.dirs {
        let dir = apps.dir_of(&folder.name);
        let group = current.get(folder.name.as_str());
        let gone = || match folder.wave {
            Some(n) => format!("wave {n} no longer exists"),
            None => format!("unit `{}` has no folder of its own any more", folder.name),
        };
        for k in &folder.kustomizations {
            let path = format!("{dir}/{k}");
            if k != GENERATED {
                let text = repo.read_optional(&path)?.unwrap_or_default();
                if !only_lists_app_files(&text, plan) {
                    return Err(SourceError::new(
                        &path,
                        format!("sits beside the generated {GENERATED} (or will), and kustomize refuses a folder with more than one kustomization file; it says more than which files the folder holds, so fluxwave will not delete it"),
                    )
                    .help("move what it sets into the manifests or a Flux Kustomization's spec, delete it, then run `fluxwave apply` again")
                    .into());
                }
            } else if group.is_some() {
                continue;
            }
            changes.push(Change {
                op: Op::Remove { path },
                drift: Drift::WaveFolder,
                why: match group {
                    None => gone(),
                    Some(g) => format!(
                        "the files of {} are listed in {GENERATED}",
                        g.describe(&repo.graph)
                    ),
                },
            });
        }
        if group.is_some() {
            continue;
        }
        // What fluxwave did not write stays, and so does the folder that holds it: removing
        // the folder would fail on every run.
        let inside = format!("{dir}/");
        let mut kept: Vec<&str> = folder.others.iter().map(String::as_str).collect();
        kept.extend(
            apps.foreign
                .iter()
                .filter_map(|(p, _)| p.strip_prefix(&inside)),
        );
        if kept.is_empty() {
            changes.push(Change {
                op: Op::RemoveDir { path: dir },
                drift: Drift::WaveFolder,
                why: gone(),
            });
        } else {
            kept.sort_unstable();
            warnings.push(Warning {
                code: Code::ForeignEntry,
                path: dir,
                message: format!(
                    "is the folder of {} that no longer exists, kept for what fluxwave did not write in it: {}",
                    if folder.wave.is_some() { "a wave" } else { "a unit's own Kustomization" },
                    kept.join(", ")
                ),
                help: "delete the folder if you no longer need those files: no Flux Kustomization builds it".into(),
            });
        }
    }
    if let Some(k) = apps.root_kustomizations.first() {
        changes.push(Change {
            op: Op::Remove {
                path: format!("{}/{k}", apps.dir),
            },
            drift: Drift::FlatKustomization,
            why: match repo.config.topology {
                crate::config::Topology::Waves => {
                    "nothing points at the flat app tier once it is waved"
                }
                crate::config::Topology::Units => {
                    "nothing points at the flat app tier once each unit has its own Kustomization"
                }
            }
            .into(),
        });
    }
    Ok(())
}

/// The kustomization file fluxwave writes in every group folder.
const GENERATED: &str = "kustomization.yaml";

/// Whether a kustomization does no more than list files of the app tier that the plan
/// places (a listing like the generated one, under another name): the generated
/// kustomization.yaml says all it says.
fn only_lists_app_files(text: &str, plan: &Plan) -> bool {
    let Ok(doc) = serde_saphyr::from_str::<Value>(text) else {
        return false;
    };
    let Some(map) = doc.as_object() else {
        return false;
    };
    let files: std::collections::HashSet<&str> =
        plan.placements.iter().map(|p| p.file.as_str()).collect();
    let placed = |entry: &str| {
        let name = entry.strip_prefix("./").unwrap_or(entry);
        !name.contains('/') && files.contains(name)
    };
    map.iter().all(|(key, value)| match key.as_str() {
        "apiVersion" => value
            .as_str()
            .is_some_and(|a| a.starts_with("kustomize.config.k8s.io/")),
        "kind" => value == "Kustomization",
        "resources" => value
            .as_array()
            .is_some_and(|items| items.iter().all(|i| i.as_str().is_some_and(placed))),
        _ => false,
    })
}
