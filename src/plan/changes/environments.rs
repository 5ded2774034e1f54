//! Every environment: one SOPS decryption patch per wave that would lack one, none for a
//! Kustomization that no longer exists.

use std::collections::BTreeSet;

use serde_json::Value;

use super::base::Base;
use super::{edit_failed, require, Change, Drift, Op};
use crate::error::{Error, Result, SourceError};
use crate::flux::decryption::{self, FluxRef};
use crate::plan::Plan;
use crate::repo::fluxtree::FluxTree;
use crate::repo::Repo;
use crate::yaml::edit;
use crate::yaml::{self, Text};

/// The decryption patch edits of every environment, appended to `changes`.
pub(super) fn decryption(
    repo: &Repo,
    plan: &Plan,
    base: &Base,
    changes: &mut Vec<Change>,
) -> Result<()> {
    let config = &repo.config;
    let (retired_names, stale_waves) = (&base.retired_names, &base.stale_waves);
    // Every environment: one decryption patch per wave; none for what no longer exists.
    let gone: BTreeSet<String> = retired_names
        .iter()
        .cloned()
        .chain(stale_waves.iter().map(|&n| config.wave_name(n)))
        .collect();
    let wave_names: Vec<String> = (0..plan.waves).map(|n| config.wave_name(n)).collect();
    let template_decrypts = config
        .waves
        .spec
        .get("decryption")
        .is_some_and(Value::is_object);
    for env in &config.environments {
        let rel = format!("{}/kustomization.yaml", env.path);
        let text = require(
            repo,
            &rel,
            "list your environments under clusters.environments in fluxwave.yaml",
        )?;
        let doc = yaml::parse_value(&rel, &Text::new(text.clone()))?;
        let read = |p: &str| crate::repo::read_referenced(&repo.root, &env.path, p);
        let patches = decryption::decryption_patches(&doc, &read)
            .map_err(|e| Error::from(SourceError::new(&rel, e)))?;
        // A patch for a Kustomization the environment no longer builds goes too. Which those
        // are is known from this run (the retired one, stale waves) and, when the walk of the
        // environment saw everything, from what it builds: so a run interrupted after the base
        // lost its retired entry still removes that entry's patch.
        let tree = FluxTree::walk(repo, &env.path);
        let exists_after =
            |n: &str| wave_names.iter().any(|w| w == n) || (tree.has(n) && !gone.contains(n));
        let removed: Vec<&decryption::DecryptionPatch> = patches
            .iter()
            .filter(|p| {
                p.literal_name()
                    .is_some_and(|n| gone.contains(n) || (tree.complete && !exists_after(n)))
            })
            .collect();
        let empty = Default::default();
        let mut items = Vec::new();
        let mut undecrypted = Vec::new();
        for name in &wave_names {
            let obj = FluxRef {
                name,
                namespace: &config.waves.namespace,
                labels: &empty,
                annotations: &empty,
            };
            let covered = template_decrypts
                || patches
                    .iter()
                    .any(|p| p.covers(&obj) && !removed.iter().any(|r| std::ptr::eq(*r, p)));
            if !covered {
                undecrypted.push(format!("`{name}`"));
                items.push(decryption::decryption_patch_item(
                    name,
                    &config.waves.namespace,
                    &config.waves.decryption,
                ));
            }
        }
        let mut new = text.clone();
        for field in ["patches", "patchesStrategicMerge", "patchesJson6902"] {
            let remove: Vec<usize> = removed
                .iter()
                .filter(|p| p.field == field)
                .map(|p| p.index)
                .collect();
            let insert: &[String] = if field == "patches" { &items } else { &[] };
            if remove.is_empty() && insert.is_empty() {
                continue;
            }
            let at = remove.first().copied().or_else(|| {
                patches
                    .iter()
                    .filter(|p| {
                        p.field == "patches"
                            && p.literal_name()
                                .is_some_and(|n| wave_names.iter().any(|w| w == n))
                    })
                    .map(|p| p.index + 1)
                    .max()
            });
            new = edit::edit_sequence(&new, field, &remove, at, insert)
                .map_err(|e| edit_failed(&rel, e))?;
        }
        if new != text {
            let mut why = Vec::new();
            if !undecrypted.is_empty() {
                why.push(format!("no SOPS decryption for {}", undecrypted.join(", ")));
            }
            let mut stale: Vec<String> = removed
                .iter()
                .filter_map(|p| p.literal_name())
                .map(|n| format!("`{n}`"))
                .collect();
            stale.dedup();
            if !stale.is_empty() {
                why.push(format!(
                    "a decryption patch for {}, which no longer exists",
                    stale.join(", ")
                ));
            }
            changes.push(Change {
                op: Op::Write {
                    path: rel,
                    old: Some(text),
                    new,
                },
                drift: Drift::Decryption,
                why: format!("environment `{}`: {}", env.name, why.join("; ")),
            });
        }
    }
    Ok(())
}
