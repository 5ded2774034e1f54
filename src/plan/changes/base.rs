//! `clusters.base`: one Flux Kustomization per wave, listed in its kustomization's
//! `resources` in place of the retired single Kustomization, which goes (found by what it
//! points at, listed or not); no Kustomization for a wave that no longer exists. The retired
//! one is the Kustomization that applies this repository's app tier: its `spec.path` is the
//! app tier and its `sourceRef` is the repository's own source, the one an environment's root
//! syncs from. A Kustomization at `./apps` of another source applies another repository's
//! files and is left alone.

use std::collections::BTreeSet;

use serde_json::Value;

use super::{
    dropped_settings, edit_failed, kustomization_in, list_files, lost_settings, parse_docs,
    write_if_changed, Change, ChangeSet, Drift, Op, Patches,
};
use crate::error::{Result, SourceError};
use crate::flux::decryption::{self, PatchEntry, PATCH_FIELDS};
use crate::flux::{self, discover, Kustomization};
use crate::kustomize::resolve_under;
use crate::plan::Plan;
use crate::repo::Repo;
use crate::tree::FileTree;
use crate::yaml::edit;
use crate::yaml::{self, Text};

/// What the base's changes leave to the environments and the leftovers.
pub(super) struct Base {
    /// `<clusters.base>/kustomization.yaml`.
    pub rel: String,
    /// The names of the retired Kustomizations this run removes.
    pub retired_names: BTreeSet<String>,
    /// The waves that no longer exist whose Kustomization this run removes.
    pub stale_waves: Vec<usize>,
    /// The retired Kustomizations this run removes, as written.
    pub retired: Vec<Kustomization>,
}

/// A source as (kind, namespace, name).
type SourceId = (String, String, String);

/// The sources the environments' roots sync from: the repository's own source, under every
/// name an environment gives it (a root that is not written in the repository is assumed as
/// `flux bootstrap` writes it, the `flux-system` GitRepository of `flux-system`).
/// Each with the namespace of its root, which a Kustomization without one is applied in.
fn own_sources(repo: &Repo) -> BTreeSet<(String, SourceId)> {
    let tree = FileTree::on_disk(&repo.root);
    repo.config
        .environments
        .iter()
        .filter_map(|env| {
            let env = discover::Environment::configured(&tree, &env.name, &env.path, "");
            let root = Kustomization::from_value(&discover::root_in(&tree, &env))?;
            let namespace = non_empty(&root.namespace)
                .unwrap_or("flux-system")
                .to_string();
            let source = source_of(&root, &namespace);
            Some((namespace, source))
        })
        .collect()
}

/// `spec.sourceRef` of `k` as (kind, namespace, name). Its namespace defaults to the
/// Kustomization's (Flux's `CrossNamespaceSourceReference`), which defaults to `namespace`,
/// the namespace of the root that applies it, as the inventory reads it.
fn source_of(k: &Kustomization, namespace: &str) -> SourceId {
    let s = &k.spec.source_ref;
    let own = non_empty(&k.namespace).unwrap_or(namespace);
    (
        s.kind.clone(),
        non_empty(&s.namespace).unwrap_or(own).to_string(),
        s.name.clone(),
    )
}

fn non_empty(s: &str) -> Option<&str> {
    Some(s).filter(|s| !s.is_empty())
}

/// The base's changes, appended to `set` (with the warnings of settings the waves drop).
pub(super) fn entries(repo: &Repo, plan: &Plan, set: &mut ChangeSet) -> Result<Base> {
    let config = &repo.config;
    let (changes, warnings) = (&mut set.changes, &mut set.warnings);
    let base = &config.base;
    let (base_name, base_text) = kustomization_in(repo, base, "fluxwave keeps the wave entries of clusters.base's kustomization.yaml; create it, or set clusters.base in fluxwave.yaml")?;
    let base_rel = format!("{base}/{base_name}");
    let base_doc = yaml::parse_value(&base_rel, &Text::new(base_text.clone()))?;
    let entries: Vec<String> = base_doc
        .get("resources")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|v| v.as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default();
    // An entry (or a file name) as the file of the base folder it names, as the builder
    // resolves it.
    let base_dir = flux::normalize_path(base);
    let in_base = |entry: &str| resolve_under(&base_dir, entry);
    let wave_file = |entry: &str| -> Option<usize> {
        config.wave_of_name(in_base(entry)?.strip_suffix(".yaml")?)
    };
    let listed: BTreeSet<String> = entries.iter().filter_map(|e| in_base(e)).collect();
    // The retired Kustomization is found by what it points at, listed or not: a run that was
    // interrupted after the entry was removed still finds and removes the file.
    let base_files = list_files(&repo.path(base))?;
    let mut retired_names: BTreeSet<String> = BTreeSet::new();
    let mut retired_files: BTreeSet<String> = BTreeSet::new();
    let mut retired_objects: Vec<Kustomization> = Vec::new();
    let own = own_sources(repo);
    let is_own = |k: &Kustomization| {
        own.iter()
            .any(|(namespace, source)| source_of(k, namespace) == *source)
    };
    // An unlisted file is looked at only when it is a manifest: a name the entry of an
    // interrupted run had, not a backup (`apps.yaml.bak`) Flux never reads.
    for file in base_files.iter().filter(|f| {
        wave_file(f).is_none()
            && **f != base_name
            && (listed.contains(f.as_str()) || crate::fs::is_manifest(f))
    }) {
        let rel = format!("{base}/{file}");
        let Some(text) = repo.read_optional(&rel)? else {
            continue;
        };
        let docs = match parse_docs(&rel, &text) {
            Ok(docs) => docs,
            Err(e) if listed.contains(file) => return Err(e),
            Err(_) => continue,
        };
        let retired: Vec<Kustomization> = docs
            .iter()
            .filter_map(Kustomization::from_value)
            .filter(|k| k.spec.path == config.apps && is_own(k))
            .collect();
        let Some(first) = retired.first() else {
            continue;
        };
        if docs.len() > 1 {
            return Err(SourceError::new(
                &rel,
                format!(
                    "holds other objects beside the Flux Kustomization `{}` that points at ./{}",
                    first.name, config.apps
                ),
            )
            .help("move the other objects to a file of their own, then run `fluxwave apply` again")
            .into());
        }
        warnings.extend(dropped_settings(config, &rel, first));
        retired_names.insert(first.name.clone());
        retired_files.insert(file.clone());
        retired_objects.push(first.clone());
        changes.push(Change {
            op: Op::Remove { path: rel },
            drift: Drift::RetiredKustomization,
            why: format!(
                "the single `{}` Kustomization is replaced by the waves",
                first.name
            ),
        });
    }
    let managed: Vec<usize> = entries
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            wave_file(e).is_some() || in_base(e).is_some_and(|f| retired_files.contains(&f))
        })
        .map(|(i, _)| i)
        .collect();
    for n in 0..plan.waves {
        let rel = format!("{base}/{}.yaml", config.wave_name(n));
        let new = flux::emit::wave_kustomization_text(config, n);
        write_if_changed(
            changes,
            repo.read_optional(&rel)?,
            rel,
            new,
            Drift::WaveKustomization,
            format!("Flux Kustomization of wave {n}"),
        );
    }
    let mut stale_waves: Vec<usize> = base_files
        .iter()
        .filter_map(|f| wave_file(f))
        .filter(|&n| n >= plan.waves)
        .collect();
    stale_waves.sort_unstable();
    for n in &stale_waves {
        changes.push(Change {
            op: Op::Remove {
                path: format!("{base}/{}.yaml", config.wave_name(*n)),
            },
            drift: Drift::WaveKustomization,
            why: format!("wave {n} no longer exists"),
        });
    }
    let desired: Vec<String> = (0..plan.waves)
        .map(|n| format!("{}.yaml", config.wave_name(n)))
        .collect();
    let current: Vec<&str> = managed.iter().map(|&i| entries[i].as_str()).collect();
    let mut new = base_text.clone();
    let mut why = Vec::new();
    if current != desired {
        new = edit::edit_sequence(
            &new,
            "resources",
            &managed,
            managed.first().copied(),
            &desired,
        )
        .map_err(|e| edit_failed(&base_rel, e))?;
        why.push("one entry per wave, the retired entry removed");
    }
    // The base's own patches of the retired Kustomization go with it, as an environment's do
    // (see `environments`): left behind, one breaks the build or is dead.
    let tree = FileTree::on_disk(&repo.root);
    let of_retired: Vec<(PatchEntry, &str)> = decryption::patch_entries(&base_doc)
        .into_iter()
        .filter(|at| decryption::targets_flux_kustomization(&tree, &base_dir, at))
        .filter_map(|at| {
            let (name, _) = decryption::literal_target(&tree, &base_dir, &at)?;
            let name = retired_names.get(&name)?;
            Some((at, name.as_str()))
        })
        .collect();
    if !of_retired.is_empty() {
        for field in PATCH_FIELDS {
            let remove: Vec<usize> = of_retired
                .iter()
                .filter(|(at, _)| at.field == field)
                .map(|(at, _)| at.index)
                .collect();
            new = edit::edit_sequence(&new, field, &remove, None, &[])
                .map_err(|e| edit_failed(&base_rel, e))?;
        }
        why.push("the patches of the retired Kustomization removed");
        // The waves get what `waves.spec` gives them, in every environment.
        let carried = |key: &str, value: &Value| config.waves.spec.get(key) == Some(value);
        warnings.extend(lost_settings(
            repo,
            &tree,
            &retired_objects,
            &Patches {
                rel: &base_rel,
                dir: &base_dir,
                who: "the base".into(),
                patches: of_retired,
                kept: false,
            },
            &carried,
        ));
    }
    if new != base_text {
        changes.push(Change {
            op: Op::Write {
                path: base_rel.clone(),
                old: Some(base_text.clone()),
                new,
            },
            drift: Drift::BaseEntries,
            why: why.join("; "),
        });
    }
    Ok(Base {
        rel: base_rel,
        retired_names,
        stale_waves,
        retired: retired_objects,
    })
}
