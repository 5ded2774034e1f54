//! `clusters.base`: one Flux Kustomization per group (a wave, or a unit's own), listed in its
//! kustomization's `resources` in place of the retired single Kustomization, which goes
//! (found by what it points at, listed or not); no Kustomization for a group that no longer
//! exists (a wave's by its name, a unit's by the group folder it points at). The retired
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
    /// The groups that no longer exist whose Kustomization this run removes, by name.
    pub stale: Vec<String>,
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
        s.kind.to_string(),
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
    let desired: Vec<String> = plan
        .groups()
        .iter()
        .map(|g| format!("{}.yaml", g.name))
        .collect();
    let folder = BaseFolder {
        repo,
        dir: flux::normalize_path(base),
        kustomization: &base_name,
        desired_files: desired.iter().cloned().collect(),
        own: own_sources(repo),
    };
    let listed: BTreeSet<String> = entries.iter().filter_map(|e| folder.in_base(e)).collect();
    // The retired Kustomization is found by what it points at, listed or not: a run that was
    // interrupted after the entry was removed still finds and removes the file.
    let base_files = list_files(&repo.path(base))?;
    let mut removed = Removed::default();
    for file in base_files.iter().filter(|f| folder.may_retire(f, &listed)) {
        folder.judge(file, &listed, set, &mut removed)?;
    }
    let managed: Vec<usize> = entries
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            folder.group_file(e)
                || folder.in_base(e).is_some_and(|f| {
                    removed.retired_files.contains(&f) || removed.stale_files.contains(&f)
                })
        })
        .map(|(i, _)| i)
        .collect();
    folder.write_groups(plan, &desired, &mut set.changes)?;
    let stale_waves = folder.remove_stale_waves(&base_files, &mut set.changes);
    removed
        .stale
        .extend(stale_waves.iter().map(|&n| config.wave_name(n)));
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
        why.push(match config.topology {
            crate::config::Topology::Waves => "one entry per wave, the retired entry removed",
            crate::config::Topology::Units => "one entry per unit, the retired entries removed",
        });
    }
    let patches = folder.without_retired_patches(&base_doc, &base_rel, &removed, new, set)?;
    new = patches.0;
    why.extend(patches.1);
    if new != base_text {
        set.changes.push(Change {
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
        retired_names: removed.retired_names,
        stale: removed.stale,
        retired: removed.retired,
    })
}

/// The base folder as one run reads it: which of its files are fluxwave's.
struct BaseFolder<'a> {
    repo: &'a Repo,
    /// `clusters.base`, normalised, under which entries are resolved as the builder does.
    dir: String,
    /// The name of its kustomization file.
    kustomization: &'a str,
    /// The group files of this plan, `<group>.yaml`.
    desired_files: BTreeSet<String>,
    /// The sources the environments' roots sync from (`own_sources`).
    own: BTreeSet<(String, SourceId)>,
}

/// What this run removes from the base folder.
#[derive(Default)]
struct Removed {
    /// The retired Kustomizations, by name, by file, and as written.
    retired_names: BTreeSet<String>,
    retired_files: BTreeSet<String>,
    retired: Vec<Kustomization>,
    /// The Kustomizations of groups that no longer exist, by name, and their files.
    stale: Vec<String>,
    stale_files: BTreeSet<String>,
}

impl BaseFolder<'_> {
    /// An entry (or a file name) as the file of the base folder it names, as the builder
    /// resolves it.
    fn in_base(&self, entry: &str) -> Option<String> {
        resolve_under(&self.dir, entry)
    }

    /// The wave whose Kustomization's file the entry names, by the file's name.
    fn wave_file(&self, entry: &str) -> Option<usize> {
        self.repo
            .config
            .wave_of_name(self.in_base(entry)?.strip_suffix(".yaml")?)
    }

    /// Whether the entry names a group file fluxwave writes: a group's of this plan, or a
    /// wave's by its name.
    fn group_file(&self, entry: &str) -> bool {
        self.in_base(entry)
            .is_some_and(|f| self.desired_files.contains(&f) || self.wave_file(&f).is_some())
    }

    /// The folder of the app tier a unit's own Kustomization at `path` may have built: a
    /// folder named after a unit, or one of the app tier's group folders (a unit that has
    /// left the catalog).
    fn group_folder(&self, path: &str) -> Option<String> {
        let repo = self.repo;
        let folder = path.strip_prefix(&repo.config.apps)?.strip_prefix('/')?;
        let known = repo.graph.index.contains_key(folder)
            || repo.apps.dirs.iter().any(|d| d.name == folder);
        (known && !folder.contains('/')).then(|| folder.to_string())
    }

    /// Whether `k` is applied from the repository's own source.
    fn is_own(&self, k: &Kustomization) -> bool {
        self.own
            .iter()
            .any(|(namespace, source)| source_of(k, namespace) == *source)
    }

    /// Whether the base folder's `file` may hold a Kustomization this run removes: no group
    /// file and not the kustomization; an unlisted file only when it is a manifest (a name
    /// the entry of an interrupted run had, not a backup, `apps.yaml.bak`, Flux never reads).
    fn may_retire(&self, file: &str, listed: &BTreeSet<String>) -> bool {
        !self.group_file(file)
            && file != self.kustomization
            && (listed.contains(file) || crate::fs::is_manifest(file))
    }

    /// Judges the base folder's `file`: a unit's own Kustomization that no longer is, or the
    /// retired Kustomization (alone in its file), is removed, with the settings the waves
    /// drop as warnings; anything else stays. A listed file that does not parse fails.
    fn judge(
        &self,
        file: &str,
        listed: &BTreeSet<String>,
        set: &mut ChangeSet,
        removed: &mut Removed,
    ) -> Result<()> {
        let config = &self.repo.config;
        let rel = format!("{}/{file}", config.base);
        let Some(text) = self.repo.read_optional(&rel)? else {
            return Ok(());
        };
        let docs = match parse_docs(&rel, &text) {
            Ok(docs) => docs,
            Err(e) if listed.contains(file) => return Err(e),
            Err(_) => return Ok(()),
        };
        let ours: Vec<Kustomization> = docs
            .iter()
            .filter_map(Kustomization::from_value)
            .filter(|k| self.is_own(k))
            .collect();
        // A unit's own Kustomization that no longer is (the topology changed, or the unit
        // left the catalog): one fluxwave wrote, alone in its file, named as it names them.
        if let [k] = ours.as_slice() {
            let folder = self.group_folder(&k.spec.path);
            if docs.len() == 1
                && folder.is_some_and(|f| k.name == config.unit_kustomization_name(&f))
                && !self.desired_files.contains(file)
            {
                removed.stale.push(k.name.clone());
                removed.stale_files.insert(file.to_string());
                set.changes.push(Change {
                    op: Op::Remove { path: rel },
                    drift: Drift::WaveKustomization,
                    why: format!(
                        "`{}` is no longer one of the app tier's Kustomizations",
                        k.name
                    ),
                });
                return Ok(());
            }
        }
        let retired: Vec<&Kustomization> =
            ours.iter().filter(|k| k.spec.path == config.apps).collect();
        let Some(&first) = retired.first() else {
            return Ok(());
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
        set.warnings.extend(dropped_settings(config, &rel, first));
        removed.retired_names.insert(first.name.clone());
        removed.retired_files.insert(file.to_string());
        removed.retired.push(first.clone());
        set.changes.push(Change {
            op: Op::Remove { path: rel },
            drift: Drift::RetiredKustomization,
            why: format!(
                "the single `{}` Kustomization is replaced by {}",
                first.name,
                match config.topology {
                    crate::config::Topology::Waves => "the waves",
                    crate::config::Topology::Units => "one Kustomization per unit",
                }
            ),
        });
        Ok(())
    }

    /// Writes each group's Flux Kustomization to its file of `desired` (in the plan's order)
    /// where it differs.
    fn write_groups(
        &self,
        plan: &Plan,
        desired: &[String],
        changes: &mut Vec<Change>,
    ) -> Result<()> {
        let repo = self.repo;
        for (group, file) in plan.groups().iter().zip(desired) {
            let rel = format!("{}/{file}", repo.config.base);
            let what = group.what(&repo.graph);
            let new =
                flux::emit::group_kustomization_text(&repo.config, &group.kustomization(&what));
            write_if_changed(
                changes,
                repo.read_optional(&rel)?,
                rel,
                new,
                Drift::WaveKustomization,
                format!("Flux Kustomization of {}", group.describe(&repo.graph)),
            );
        }
        Ok(())
    }

    /// Removes the Kustomization of each wave that no longer exists (a wave's file of
    /// `base_files` no group of the plan has); its numbers, in order.
    fn remove_stale_waves(&self, base_files: &[String], changes: &mut Vec<Change>) -> Vec<usize> {
        let config = &self.repo.config;
        let mut stale_waves: Vec<usize> = base_files
            .iter()
            .filter(|f| !self.desired_files.contains(f.as_str()))
            .filter_map(|f| self.wave_file(f))
            .collect();
        stale_waves.sort_unstable();
        for n in &stale_waves {
            changes.push(Change {
                op: Op::Remove {
                    path: format!("{}/{}.yaml", config.base, config.wave_name(*n)),
                },
                drift: Drift::WaveKustomization,
                why: format!("wave {n} no longer exists"),
            });
        }
        stale_waves
    }

    /// `new` (the base kustomization's text) without the base's own patches of the retired
    /// Kustomizations, which go with them as an environment's do (see `environments`): left
    /// behind, one breaks the build or is dead. The settings they gave that the waves do not
    /// carry are warnings in `set`. With why, when any is removed.
    fn without_retired_patches(
        &self,
        base_doc: &Value,
        base_rel: &str,
        removed: &Removed,
        mut new: String,
        set: &mut ChangeSet,
    ) -> Result<(String, Option<&'static str>)> {
        let (repo, base_dir) = (self.repo, self.dir.as_str());
        let tree = FileTree::on_disk(&repo.root);
        let of_retired: Vec<(PatchEntry, &str)> = decryption::patch_entries(base_doc)
            .into_iter()
            .filter(|at| decryption::targets_flux_kustomization(&tree, base_dir, at))
            .filter_map(|at| {
                let (name, _) = decryption::literal_target(&tree, base_dir, &at)?;
                let name = removed.retired_names.get(&name)?;
                Some((at, name.as_str()))
            })
            .collect();
        if of_retired.is_empty() {
            return Ok((new, None));
        }
        for field in PATCH_FIELDS {
            let remove: Vec<usize> = of_retired
                .iter()
                .filter(|(at, _)| at.field == field)
                .map(|(at, _)| at.index)
                .collect();
            new = edit::edit_sequence(&new, field, &remove, None, &[])
                .map_err(|e| edit_failed(base_rel, e))?;
        }
        // The waves get what `waves.spec` gives them, in every environment.
        let carried = |key: &str, value: &Value| repo.config.waves.spec.get(key) == Some(value);
        set.warnings.extend(lost_settings(
            repo,
            &tree,
            &removed.retired,
            &Patches {
                rel: base_rel,
                dir: base_dir,
                who: "the base".into(),
                patches: of_retired,
                kept: false,
            },
            &carried,
        ));
        Ok((
            new,
            Some("the patches of the retired Kustomization removed"),
        ))
    }
}
