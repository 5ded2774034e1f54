//! `missing-path`: a Flux Kustomization whose `spec.path` is not a folder of the repository
//! fails every reconcile ("kustomization path not found": kustomize-controller only checks
//! that the folder exists, `os.Stat` in `KustomizationReconciler.reconcile`) and applies
//! nothing. Only Kustomizations that read this repository (the environment's own source) are
//! judged. A folder that holds no manifest (a README, templates) exists: it builds nothing,
//! which is no business of this lint.

use std::path::Path;
use std::process::Stdio;

use super::{flux_name, Finding, FluxView};
use crate::diag::Code;
use crate::pointer::Pointer;

pub const CODE: Code = Code::MissingPath;

/// Whether `dir` is a folder of the working tree at `root` though it holds no file the tree
/// reads (only a README, templates, ...): a file git tracks or would track lies under it, or,
/// outside git, it is a folder on disk.
fn is_folder(root: &Path, dir: &str) -> bool {
    if crate::tree::require_git(root).is_err() {
        return root.join(dir).symlink_metadata().is_ok_and(|m| m.is_dir());
    }
    let listed = crate::tree::git_command(root)
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
            "--",
        ])
        .arg(format!(":(literal){dir}/"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .output();
    // A tracked file deleted on disk is gone, as it is from the tree.
    listed.is_ok_and(|o| {
        o.status.success()
            && o.stdout
                .split(|b| *b == 0)
                .filter_map(|p| std::str::from_utf8(p).ok())
                .filter(|p| !p.is_empty())
                .any(|p| root.join(p).symlink_metadata().is_ok())
    })
}

pub fn missing_path(flux: &FluxView, repo: &Path) -> Vec<Finding> {
    let mut findings = Vec::new();
    for inv in &flux.envs {
        let Some(root) = inv.owners.values().find(|o| o.parent.is_none()) else {
            continue;
        };
        let own_source = root.source();
        for (id, owner) in inv.kustomizations() {
            if owner.parent.is_some() && owner.source() != own_source {
                continue;
            }
            if flux.tree.is_dir(&owner.path) || is_folder(repo, &owner.path) {
                continue;
            }
            let written = owner
                .object
                .at_pointer("/spec/path")
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
