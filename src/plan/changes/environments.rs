//! Every environment: one SOPS decryption patch per wave that would end without
//! `spec.decryption`, none for a Kustomization that no longer exists. Both questions are
//! asked of the kustomize builder that `check` and `cutover` use (an owners-only build, see
//! `flux::inventory::owners`), over the tree as the earlier changes leave it (the wave
//! Kustomizations and the base's entries written, the retired and stale ones removed), and
//! the edited kustomization is built again: a wave that would still end without decryption
//! is an error, never a wrong edit.

use std::collections::BTreeSet;

use serde_json::Value;

use super::base::Base;
use super::{edit_failed, kustomization_in, lost_settings, Change, Drift, Op, Patches, Warning};
use crate::error::{Result, SourceError};
use crate::flux::decryption::{self, PatchEntry, PATCH_FIELDS};
use crate::flux::inventory::{self, Owners};
use crate::flux::{emit, normalize_path};
use crate::kustomize::Builder;
use crate::plan::Plan;
use crate::pointer::Pointer;
use crate::repo::Repo;
use crate::tree::FileTree;
use crate::yaml::edit;
use crate::yaml::{self, Text};

/// A patch entry of an environment's kustomization, as the builder answers for it.
struct Entry<'a> {
    at: PatchEntry<'a>,
    /// The Kustomization it names literally, if it does.
    name: Option<String>,
    /// Whether it gives that Kustomization `spec.decryption`.
    decrypts: bool,
    /// Whether it can only patch Flux Kustomizations (see
    /// `decryption::targets_flux_kustomization`).
    flux_only: bool,
}

/// The decryption patch edits of every environment, appended to `changes` (which holds the
/// changes of the app tier and the base, already computed), with a warning for each setting
/// a removed patch gave a Kustomization that is gone and the waves will not carry.
pub(super) fn decryption(
    repo: &Repo,
    plan: &Plan,
    base: &Base,
    changes: &mut Vec<Change>,
    warnings: &mut Vec<Warning>,
) -> Result<()> {
    let wave_names: Vec<String> = plan.groups().iter().map(|g| g.name.clone()).collect();
    // Looked up by name, once per patch entry and per wave: a list searched each time made
    // an environment of n waves cost n * n.
    let is_wave: BTreeSet<&str> = wave_names.iter().map(String::as_str).collect();
    let run = Run {
        repo,
        base,
        gone: base
            .retired_names
            .iter()
            .cloned()
            .chain(base.stale.iter().cloned())
            .collect(),
        wave_names: &wave_names,
        is_wave: &is_wave,
        after: tree_after(repo, changes),
    };
    for env in &repo.config.environments {
        if let Some(change) = run.environment(env, warnings)? {
            changes.push(change);
        }
    }
    Ok(())
}

/// What every environment's edit is judged by.
struct Run<'a> {
    repo: &'a Repo,
    base: &'a Base,
    /// The Kustomizations this run removes: the retired ones and the stale groups.
    gone: BTreeSet<String>,
    /// The groups of the plan, in order, and by name.
    wave_names: &'a [String],
    is_wave: &'a BTreeSet<&'a str>,
    /// The tree as the earlier changes leave it.
    after: FileTree,
}

/// An environment's kustomization file.
struct EnvFile<'a> {
    /// The environment's name.
    env: &'a str,
    /// The file, as the repository names it.
    rel: String,
    /// The environment's folder, normalised.
    dir: String,
    /// The file the builder reads (`rel`, normalised).
    file: String,
}

impl Run<'_> {
    /// The decryption edit of environment `env`'s kustomization, if it changes it: the
    /// patches of Kustomizations that go removed, one patch added per wave that would end
    /// without decryption, and the result built again. Settings lost with a removed patch
    /// are `warnings`.
    fn environment(
        &self,
        env: &crate::config::ConfiguredEnvironment,
        warnings: &mut Vec<Warning>,
    ) -> Result<Option<Change>> {
        let config = &self.repo.config;
        let (name, text) = kustomization_in(
            self.repo,
            &env.path,
            "list your environments under clusters.environments in fluxwave.yaml",
        )?;
        let rel = format!("{}/{name}", env.path);
        let doc = yaml::parse_value(&rel, &Text::new(text.clone()))?;
        let dir = normalize_path(&env.path);
        let k = EnvFile {
            env: &env.name,
            file: crate::fs::join(&dir, &name).unwrap_or_default(),
            rel,
            dir,
        };
        let entries = self.entries(&doc, &k.dir);
        let removed = self.removed(&k, &doc, &entries)?;
        // Which waves end without decryption once the stale entries are gone.
        let mut kept = text.clone();
        for field in PATCH_FIELDS {
            let remove = indexes_in(&removed, field);
            if !remove.is_empty() {
                kept = edit::edit_sequence(&kept, field, &remove, None, &[])
                    .map_err(|e| edit_failed(&k.rel, e))?;
            }
        }
        let now = self.build(&k, &kept)?;
        warnings.extend(self.lost(&k, &entries, &removed, &now));
        let now = decrypted_by_name(&now);
        // `decryption: null` in fluxwave.yaml: no patch is added (stale ones still go).
        let patching = !config.waves.decryption.is_null();
        let undecrypted: Vec<&String> = self
            .wave_names
            .iter()
            .filter(|name| patching && now.get(name.as_str()) == Some(&false))
            .collect();
        let items: Vec<String> = undecrypted
            .iter()
            .map(|name| {
                emit::decryption_patch_item(name, &config.waves.namespace, &config.waves.decryption)
            })
            .collect();
        let new = edited(&k.rel, &text, &entries, &removed, &items, self.is_wave)
            .map_err(|e| past_the_budget(e, items.len()))?;
        if new == text {
            return Ok(None);
        }
        self.verify(&k, &new, patching)?;
        Ok(Some(Change {
            op: Op::Write {
                path: k.rel,
                old: Some(text),
                new,
            },
            drift: Drift::Decryption,
            why: format!(
                "environment `{}`: {}",
                env.name,
                why(&undecrypted, &removed)
            ),
        }))
    }

    /// Environment `k`'s owners-only build with its kustomization holding `text`, over the
    /// tree as the earlier changes leave it; a failure says whether this run caused it.
    fn build(&self, k: &EnvFile, text: &str) -> Result<Owners> {
        inventory::owners(&self.after.clone().with_file(&k.file, text), &k.dir)
            .map_err(|e| unbuildable(self.repo, &k.rel, &k.dir, k.env, &self.gone, &e))
    }

    /// The patch entries of an environment's kustomization `doc` (in folder `dir`), each with
    /// the Kustomization it names and whether it gives it decryption, as the builder does.
    fn entries<'d>(&self, doc: &'d Value, dir: &str) -> Vec<Entry<'d>> {
        let namespace = &self.repo.config.waves.namespace;
        let mut probe = Builder::owners_only(&self.after);
        decryption::patch_entries(doc)
            .into_iter()
            .map(|at| {
                let target = decryption::literal_target(&self.after, dir, &at);
                let decrypts = target.as_ref().is_some_and(|(name, ns)| {
                    let ns = ns.as_deref().unwrap_or(namespace);
                    decryption::gives_decryption(&mut probe, dir, &at, name, ns)
                });
                Entry {
                    flux_only: decryption::targets_flux_kustomization(&self.after, dir, &at),
                    at,
                    name: target.map(|(name, _)| name),
                    decrypts,
                }
            })
            .collect()
    }

    /// The entries that go: a patch for a Kustomization this run removes (the retired one,
    /// stale waves) that gives it decryption, and any other that can only patch a Flux
    /// Kustomization (left behind, one that names its target by its own header breaks the
    /// build, and one with a `target` is dead). A decryption patch also goes when the
    /// environment's build (without its own patches, which name them) saw everything and
    /// has no Kustomization of that name: so a run interrupted after the base lost its
    /// retired entry still removes that entry's decryption. (The retired file itself is
    /// removed last, so a rerun still finds it and its other patches.)
    fn removed<'e, 'd>(
        &self,
        k: &EnvFile,
        doc: &Value,
        entries: &'e [Entry<'d>],
    ) -> Result<Vec<&'e Entry<'d>>> {
        let unpatched = self.build(k, &without_patches(doc))?;
        let unpatched_names: BTreeSet<&str> = unpatched
            .owners
            .iter()
            .map(|o| o.id.name.as_str())
            .collect();
        let exists_after = |n: &str| {
            self.is_wave.contains(n) || (unpatched_names.contains(n) && !self.gone.contains(n))
        };
        Ok(entries
            .iter()
            .filter(|e| {
                e.name.as_deref().is_some_and(|n| {
                    let gone_now = self.gone.contains(n);
                    (e.flux_only && gone_now)
                        || (e.decrypts && (gone_now || (unpatched.complete && !exists_after(n))))
                })
            })
            .collect())
    }

    /// The settings lost with the `removed` entries, and those the entries that stay gave
    /// the retired Kustomization (a regular expression or a selector that matched it), that
    /// not every wave ends with in `now` (the build without the removed entries).
    fn lost(
        &self,
        k: &EnvFile,
        entries: &[Entry],
        removed: &[&Entry],
        now: &Owners,
    ) -> Vec<Warning> {
        let retired = &self.base.retired;
        let patches: Vec<(PatchEntry, &str)> = removed
            .iter()
            .filter_map(|e| Some((e.at, e.name.as_deref()?)))
            .collect();
        let gone_at: std::collections::HashSet<(&str, usize)> =
            removed.iter().map(|e| (e.at.field, e.at.index)).collect();
        let staying: Vec<(PatchEntry, &str)> = entries
            .iter()
            .filter(|e| !gone_at.contains(&(e.at.field, e.at.index)))
            .flat_map(|e| retired.iter().map(|k| (e.at, k.name.as_str())))
            .collect();
        // A setting is carried when every wave the environment builds ends with it.
        let carried = |key: &str, value: &Value| {
            self.wave_names.iter().all(|w| {
                now.owners
                    .iter()
                    .find(|o| o.id.name == *w)
                    .is_none_or(|o| o.object.at_pointer(&format!("/spec/{key}")) == Some(value))
            })
        };
        let mut warnings = Vec::new();
        for (patches, kept) in [(patches, false), (staying, true)] {
            warnings.extend(lost_settings(
                self.repo,
                &self.after,
                retired,
                &Patches {
                    rel: &k.rel,
                    dir: &k.dir,
                    who: format!("environment `{}`", k.env),
                    patches,
                    kept,
                },
                &carried,
            ));
        }
        warnings
    }

    /// Builds the edited kustomization `new` again: when `patching`, every wave the
    /// environment builds must now end decrypted, or the edit is refused.
    fn verify(&self, k: &EnvFile, new: &str, patching: bool) -> Result<()> {
        let verified = self.build(k, new)?;
        let verified = decrypted_by_name(&verified);
        let still: Vec<String> = self
            .wave_names
            .iter()
            .filter(|name| verified.get(name.as_str()) == Some(&false))
            .map(|n| format!("`{n}`"))
            .collect();
        if patching && !still.is_empty() {
            return Err(edit_failed(
                &k.rel,
                format!(
                    "with the decryption patches added, {} would still have no spec.decryption",
                    still.join(", ")
                ),
            ));
        }
        Ok(())
    }
}

/// `e`, an edit's failure, with help when it is past fluxwave's reading budget: `patches`
/// patches, one per generated Kustomization, are the wrong form there.
fn past_the_budget(e: crate::error::Error, patches: usize) -> crate::error::Error {
    match e {
        crate::error::Error::Input(mut errors)
            if errors
                .iter()
                .any(|e| e.message.contains("beyond what fluxwave reads")) =>
        {
            for err in &mut errors {
                err.help = Some(format!(
                    "{patches} patches, one per generated Kustomization, are more than this file can hold: set `decryption` in waves.spec of fluxwave.yaml instead, so that every generated Kustomization carries it and needs no patch"
                ));
            }
            crate::error::Error::Input(errors)
        }
        other => other,
    }
}

/// Whether each Kustomization of a build ends with `spec.decryption`, by name (the first of
/// a name, in build order).
fn decrypted_by_name(owners: &Owners) -> std::collections::HashMap<&str, bool> {
    let mut by_name = std::collections::HashMap::new();
    for o in &owners.owners {
        by_name
            .entry(o.id.name.as_str())
            .or_insert_with(|| decryption::ends_decrypted(&o.object));
    }
    by_name
}

/// `text` with the `removed` entries taken out of their lists and `items` inserted in
/// `patches`: where the first removed one was, else after the last wave's patch, else at the
/// end.
fn edited(
    rel: &str,
    text: &str,
    entries: &[Entry],
    removed: &[&Entry],
    items: &[String],
    is_wave: &BTreeSet<&str>,
) -> Result<String> {
    let mut new = text.to_string();
    for field in PATCH_FIELDS {
        let remove = indexes_in(removed, field);
        let insert: &[String] = if field == "patches" { items } else { &[] };
        if remove.is_empty() && insert.is_empty() {
            continue;
        }
        let at = remove.first().copied().or_else(|| {
            entries
                .iter()
                .filter(|e| {
                    e.decrypts
                        && e.at.field == "patches"
                        && e.name.as_deref().is_some_and(|n| is_wave.contains(n))
                })
                .map(|e| e.at.index + 1)
                .max()
        });
        new = edit::edit_sequence(&new, field, &remove, at, insert)
            .map_err(|e| edit_failed(rel, e))?;
    }
    Ok(new)
}

/// The positions in patch list `field` of the `removed` entries.
fn indexes_in(removed: &[&Entry], field: &str) -> Vec<usize> {
    removed
        .iter()
        .filter(|e| e.at.field == field)
        .map(|e| e.at.index)
        .collect()
}

/// Why an environment's kustomization changes, for people.
fn why(undecrypted: &[&String], removed: &[&Entry]) -> String {
    let mut why = Vec::new();
    if !undecrypted.is_empty() {
        let names: Vec<String> = undecrypted.iter().map(|n| format!("`{n}`")).collect();
        why.push(format!("no SOPS decryption for {}", names.join(", ")));
    }
    for (decrypts, what) in [(true, "a decryption patch"), (false, "a patch")] {
        let mut stale: Vec<String> = removed
            .iter()
            .filter(|e| e.decrypts == decrypts)
            .filter_map(|e| e.name.as_deref())
            .map(|n| format!("`{n}`"))
            .collect();
        stale.dedup();
        if !stale.is_empty() {
            why.push(format!(
                "{what} for {}, which no longer exists",
                stale.join(", ")
            ));
        }
    }
    why.join("; ")
}

/// Why environment `name` cannot be built once the changes are made. When it builds today,
/// it is the changes that break it: something apply does not edit (a component, a patch of
/// another file) still names what apply removes.
fn unbuildable(
    repo: &Repo,
    rel: &str,
    dir: &str,
    name: &str,
    gone: &BTreeSet<String>,
    e: &crate::flux::generated::FluxBuildError,
) -> crate::error::Error {
    let today = FileTree::on_disk(&repo.root);
    if inventory::owners(&today, dir).is_err() {
        return SourceError::new(rel, format!("environment `{name}` cannot be built: {e}"))
            .help("Flux cannot build it either; fix the build, then run `fluxwave apply` again")
            .into();
    }
    let removes = if gone.is_empty() {
        "makes its changes".to_string()
    } else {
        let names: Vec<String> = gone.iter().map(|n| format!("`{n}`")).collect();
        format!("removes {}", names.join(", "))
    };
    SourceError::new(
        rel,
        format!("environment `{name}` would no longer build once apply {removes}: {e}"),
    )
    .help("what the error names still refers to a Kustomization apply removes, in a place apply does not edit: remove it or point it at the waves, then run `fluxwave apply` again")
    .into()
}

/// The working tree as `changes` leave it, read from disk on demand. Writes and removals
/// under the app tier are left out: an owners-only build does not read the app tier (and
/// moves are all of app-tier files).
fn tree_after(repo: &Repo, changes: &[Change]) -> FileTree {
    let apps = format!("{}/", repo.apps.dir);
    let mut tree = FileTree::on_disk(&repo.root);
    for c in changes {
        match &c.op {
            Op::Write { path, new, .. } if !path.starts_with(&apps) => {
                tree = tree.with_file(path, new);
            }
            Op::Remove { path } if !path.starts_with(&apps) => tree = tree.without_file(path),
            _ => {}
        }
    }
    tree
}

/// The kustomization `k` without its patches, as text.
fn without_patches(k: &Value) -> String {
    let mut k = k.clone();
    if let Some(m) = k.as_object_mut() {
        for field in PATCH_FIELDS {
            m.shift_remove(field);
        }
    }
    yaml::emit(&k)
}
