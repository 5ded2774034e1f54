//! The app tier: every file in its wave's folder, one kustomization per wave folder listing
//! its files, no folder for a wave that no longer exists, no flat kustomization.

use super::{write_if_changed, Change, Drift, Op};
use crate::error::Result;
use crate::flux;
use crate::plan::Plan;
use crate::repo::{Location, Repo};

/// Every file that is not in its wave's folder moves there.
pub(super) fn moves(repo: &Repo, plan: &Plan, changes: &mut Vec<Change>) {
    let apps = &repo.apps;
    for p in plan.placements.iter().filter(|p| p.moves()) {
        changes.push(Change {
            op: Op::Move {
                from: apps.path_of(&p.file, p.from),
                to: apps.path_of(&p.file, Location::Wave(p.wave)),
            },
            drift: Drift::MisplacedFile,
            why: format!(
                "owned by `{}`, wave {}",
                repo.graph.nodes[p.owner].name, p.wave
            ),
        });
    }
}

/// The kustomization of every wave folder; the folders of waves that no longer exist and the
/// flat kustomization go.
pub(super) fn folders(repo: &Repo, plan: &Plan, changes: &mut Vec<Change>) -> Result<()> {
    let apps = &repo.apps;
    for n in 0..plan.waves {
        let rel = format!("{}/kustomization.yaml", apps.wave_dir(n));
        let new =
            flux::emit::wave_dir_kustomization_text(n, plan.files_in(n).map(|p| p.file.as_str()));
        write_if_changed(
            changes,
            repo.read_optional(&rel)?,
            rel,
            new,
            Drift::WaveFolder,
            format!("the files of wave {n}"),
        );
    }
    for (n, k) in apps.wave_dirs.iter().filter(|(n, _)| *n >= plan.waves) {
        let dir = apps.wave_dir(*n);
        if let Some(k) = k {
            changes.push(Change {
                op: Op::Remove {
                    path: format!("{dir}/{k}"),
                },
                drift: Drift::WaveFolder,
                why: format!("wave {n} no longer exists"),
            });
        }
        changes.push(Change {
            op: Op::RemoveDir { path: dir },
            drift: Drift::WaveFolder,
            why: format!("wave {n} no longer exists"),
        });
    }
    if let Some(k) = &apps.root_kustomization {
        changes.push(Change {
            op: Op::Remove {
                path: format!("{}/{k}", apps.dir),
            },
            drift: Drift::FlatKustomization,
            why: "nothing points at the flat app tier once it is waved".into(),
        });
    }
    Ok(())
}
