//! `missing-path`: a Flux Kustomization whose `spec.path` is not a folder of the repository
//! fails every reconcile ("no such file or directory") and applies nothing. Only
//! Kustomizations that read this repository (the environment's own source) are judged.

use super::{flux_name, Finding, FluxView};
use crate::diag::Code;

pub const CODE: Code = Code::MissingPath;

pub fn missing_path(flux: &FluxView) -> Vec<Finding> {
    let mut findings = Vec::new();
    for inv in &flux.envs {
        let Some(root) = inv.owners.values().find(|o| o.parent.is_none()) else {
            continue;
        };
        let own_source = root.source();
        for (id, owner) in &inv.owners {
            if owner.parent.is_some() && owner.source() != own_source {
                continue;
            }
            if flux.tree.is_dir(&owner.path) {
                continue;
            }
            let written = owner
                .object
                .pointer("/spec/path")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("");
            let (path, pos) = flux.owner_at(inv, owner, "path");
            findings.push(
                Finding::new(
                    CODE,
                    path,
                    format!(
                        "Flux Kustomization `{}` (environment `{}`) builds `{written}`, which is not a folder of the repository: every reconcile fails",
                        flux_name(id),
                        inv.env
                    ),
                    "point spec.path at an existing folder (relative to the repository root), or add the folder",
                )
                .at(pos),
            );
        }
    }
    findings
}
