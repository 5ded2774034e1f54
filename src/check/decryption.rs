//! `sops-without-decryption`: a Flux Kustomization whose path holds a SOPS-encrypted file
//! and that gets no decryption in some environment applies the ciphertext verbatim and
//! corrupts its Secrets. The environment's Flux objects are found by walking its resources
//! (folders through their kustomization.yaml); a decryption patch at any level of that walk
//! counts. Waves are left to `missing-decryption`, which `apply` repairs.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Finding, Severity};
use crate::error::Result;
use crate::flux::{normalize_path, FluxKustomization};
use crate::repo::kedit::{self, DecryptionPatch, FluxRef};
use crate::repo::Repo;
use crate::yaml::{self, Text};

pub fn sops_without_decryption(repo: &Repo) -> Result<Vec<Finding>> {
    let mut findings = Vec::new();
    for env in &repo.config.environments {
        let mut objects = Vec::new();
        let mut patches = Vec::new();
        walk(&repo.root, &env.path, 0, &mut objects, &mut patches)?;
        for k in &objects {
            if repo.config.wave_of_name(&k.name).is_some() {
                continue;
            }
            let obj = FluxRef {
                name: &k.name,
                namespace: &k.namespace,
                labels: &k.labels,
                annotations: &k.annotations,
            };
            if k.has_decryption || patches.iter().any(|p| p.covers(&obj)) {
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

/// Collects the Flux Kustomizations and decryption patches reachable from the kustomization
/// in `dir` (repository-relative). Unreadable or missing parts are left to other lints.
fn walk(
    root: &Path,
    dir: &str,
    depth: usize,
    objects: &mut Vec<FluxKustomization>,
    patches: &mut Vec<DecryptionPatch>,
) -> Result<()> {
    if depth > 16 {
        return Ok(());
    }
    let rel = format!("{dir}/kustomization.yaml");
    let Ok(text) = std::fs::read_to_string(root.join(&rel)) else {
        return Ok(());
    };
    let Ok(doc) = yaml::parse::<Value>(&rel, &Text::new(text)) else {
        return Ok(());
    };
    let abs_dir = root.join(dir);
    let read = |p: &str| std::fs::read_to_string(abs_dir.join(p)).ok();
    if let Ok(found) = kedit::decryption_patches(&doc, &read) {
        patches.extend(found);
    }
    for r in doc
        .get("resources")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        let Some(child) = join(dir, r) else { continue };
        let abs = root.join(&child);
        if abs.is_dir() {
            walk(root, &child, depth + 1, objects, patches)?;
        } else if let Ok(text) = std::fs::read_to_string(&abs) {
            if let Ok(docs) = yaml::parse_all(&child, &Text::new(text)) {
                objects.extend(docs.iter().filter_map(FluxKustomization::from_value));
            }
        }
    }
    Ok(())
}

/// `dir` joined with a relative entry, normalised; `None` when it leaves the repository.
fn join(dir: &str, entry: &str) -> Option<String> {
    let mut parts: Vec<&str> = dir
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect();
    for part in entry.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

/// The first SOPS-encrypted file under a Flux Kustomization's path, depth-first in name order.
fn first_sops_file(root: &Path, path: &str) -> Option<String> {
    let mut stack: Vec<PathBuf> = vec![root.join(normalize_path(path))];
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
    std::fs::read_to_string(path)
        .is_ok_and(|t| t.contains("\nsops:") && t.contains("ENC[") && t.contains("mac:"))
}
