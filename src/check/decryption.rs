//! `sops-without-decryption`: a Flux Kustomization whose path holds a SOPS-encrypted file
//! and that gets no decryption in some environment applies the ciphertext verbatim and
//! corrupts its Secrets. The environment's Flux objects are found by walking its resources
//! (folders through their kustomization.yaml); a decryption patch at any level of that walk
//! counts. Waves are left to `missing-decryption`, which `apply` repairs.

use std::path::{Path, PathBuf};

use super::{Finding, Severity};
use crate::error::Result;
use crate::flux::normalize_path;
use crate::repo::fluxtree::FluxTree;
use crate::repo::kedit::FluxRef;
use crate::repo::Repo;

pub fn sops_without_decryption(repo: &Repo) -> Result<Vec<Finding>> {
    let mut findings = Vec::new();
    for env in &repo.config.environments {
        let tree = FluxTree::walk(&repo.root, &env.path);
        for k in &tree.kustomizations {
            if repo.config.wave_of_name(&k.name).is_some() {
                continue;
            }
            let obj = FluxRef {
                name: &k.name,
                namespace: &k.namespace,
                labels: &k.labels,
                annotations: &k.annotations,
            };
            if k.has_decryption || tree.patches.iter().any(|p| p.covers(&obj)) {
                continue;
            }
            if let Some(file) = first_sops_file(&repo.root, &k.path) {
                findings.push(Finding {
                    code: "sops-without-decryption",
                    severity: Severity::Error,
                    path: format!("{}/kustomization.yaml", env.path),
                    message: format!(
                        "environment `{}`: Flux Kustomization `{}` builds the SOPS file {file} but has no decryption",
                        env.name, k.name
                    ),
                    help: "add a patch that sets spec.decryption (provider: sops) on it in this environment".into(),
                });
            }
        }
    }
    Ok(findings)
}

/// The first SOPS-encrypted file under a Flux Kustomization's path, depth-first in name order.
fn first_sops_file(root: &Path, path: &str) -> Option<String> {
    // `spec.path` is the author's text: a path that leaves the repository is not walked.
    let start = crate::repo::fluxtree::join("", &normalize_path(path))?;
    if !crate::repo::inside(root, &root.join(&start)) {
        return None;
    }
    let mut stack: Vec<PathBuf> = vec![root.join(start)];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|e| std::cmp::Reverse(e.file_name()));
        for e in entries {
            let Ok(ft) = e.file_type() else { continue };
            let p = e.path();
            if ft.is_dir() {
                stack.push(p);
            } else if ft.is_file() && is_sops(&p) {
                return p
                    .strip_prefix(root)
                    .ok()
                    .map(|r| r.to_string_lossy().into_owned());
            }
        }
    }
    None
}

fn is_sops(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if !(name.ends_with(".yaml") || name.ends_with(".yml")) {
        return false;
    }
    crate::repo::read_regular(path, "")
        .ok()
        .flatten()
        .and_then(|b| String::from_utf8(b).ok())
        .is_some_and(|t| t.contains("\nsops:") && t.contains("ENC[") && t.contains("mac:"))
}
