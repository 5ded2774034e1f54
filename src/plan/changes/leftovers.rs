//! What an interrupted run left: the temporary file of a write cut short, beside any file
//! this run may write.

use std::collections::BTreeSet;

use super::{Change, Drift, Op};
use crate::fs::write;
use crate::plan::Plan;
use crate::repo::Repo;

/// A removal for every temporary an interrupted write of a file this run may write left.
pub(super) fn interrupted_writes(
    repo: &Repo,
    plan: &Plan,
    base_rel: &str,
    changes: &mut Vec<Change>,
) {
    let (apps, config) = (&repo.apps, &repo.config);
    let base = &config.base;
    // An interrupted write of any file this run may write leaves a temporary beside it.
    let written: Vec<String> = changes
        .iter()
        .filter_map(|c| match &c.op {
            Op::Write { path, .. } => Some(path.clone()),
            _ => None,
        })
        .chain((0..plan.waves).map(|n| format!("{}/kustomization.yaml", apps.wave_dir(n))))
        .chain((0..plan.waves).map(|n| format!("{base}/{}.yaml", config.wave_name(n))))
        .chain(std::iter::once(base_rel.to_string()))
        .chain(
            config
                .environments
                .iter()
                .map(|e| format!("{}/kustomization.yaml", e.path)),
        )
        .collect::<BTreeSet<String>>()
        .into_iter()
        .collect();
    for rel in written {
        for temp in write::leftover_temporaries(&repo.path(&rel)) {
            if let Ok(temp_rel) = temp.strip_prefix(&repo.root) {
                changes.push(Change {
                    op: Op::Remove {
                        path: temp_rel.to_string_lossy().into_owned(),
                    },
                    drift: Drift::InterruptedWrite,
                    why: format!("left by an interrupted write of {rel}"),
                });
            }
        }
    }
}
