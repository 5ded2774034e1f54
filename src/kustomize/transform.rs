//! What a kustomization does after loading its resources, in kustomize's order
//! (`KustTarget.accumulateTarget`): components, generators, then the transformers —
//! strategic-merge patches, `patches`, namespace, name affixes, labels, annotations, JSON 6902
//! patches, replacements. An id held by two objects fails the build where kustomize fails it.

use serde_json::{Map, Value};

use super::error::{BuildError, PatchProblem};
use super::keys::{self, Transformer};
use super::patch::{patch_file, patch_text, target_of, Allow};
use super::resource::{Built, Resource};
use super::{list, replace, resolve, Appended, Builder, Ids, Ref};

impl Builder<'_> {
    /// What a kustomization does to `acc`, the objects of its resources (and of the
    /// kustomization it is a component of), in kustomize's order: components, generators,
    /// strategic-merge patches, `patches`, namespace, name affixes, labels, annotations,
    /// JSON 6902 patches. `file` names the kustomization in messages, `appended` the
    /// entries its caller appended to it; `dir` resolves paths.
    pub(super) fn transform(
        &mut self,
        file: &str,
        dir: &str,
        k: &Map<String, Value>,
        mut acc: Vec<Resource>,
        appended: Option<&Appended>,
    ) -> Built {
        // A key that sets no field of a kustomization is dropped by Flux's generator (the
        // kustomization at `spec.path`; any other fails on it, `read_for_kustomize`).
        for key in k.keys().filter(|key| keys::field(key).is_some()) {
            if !keys::modelled(key) {
                self.warn(
                    file,
                    key,
                    format!("`{key}` is not modelled: the objects it adds, removes or renames are not in the inventory"),
                );
            }
        }
        // kustomize merges a kustomization's transformer configurations into its build's
        // before it runs its generators (`accumulateTarget`).
        self.configurations(file, dir, k)?;
        let components = Transformer::Components.key();
        for (i, entry) in list(k, components, file)?.iter().enumerate() {
            let Some((entry, path)) = self.local_entry(
                file,
                dir,
                components,
                entry,
                ("remote component", "not modelled"),
            )?
            else {
                continue;
            };
            let what = Appended::name(appended, file, components, i);
            let kfile = self.kustomization_file(&path)?.ok_or_else(|| {
                let (what, entry) = (what.clone(), entry.to_string());
                if self.tree.is_dir(&path) {
                    BuildError::ComponentWithoutKustomization { what, entry }
                } else {
                    BuildError::NoComponent { what, entry }
                }
            })?;
            acc = self.build_component(&path, &kfile, (&what, entry), acc)?;
        }
        self.generators(file, dir, k, &mut acc)?;
        // Everything accumulated: kustomize appends each object to the list, refusing an
        // id it holds already (`resWrangler.Append`, `appendReplaceOrMerge`).
        Ids::check(self, file, &acc)?;
        let mut patched = false;
        let mut names = None;
        let strategic_merge = Transformer::PatchesStrategicMerge.key();
        for (i, entry) in list(k, strategic_merge, file)?.iter().enumerate() {
            let what = format!("{file}: {strategic_merge}[{i}]");
            let text = match entry.as_str() {
                Some(s) if !s.contains('\n') && !s.trim_start().starts_with('{') => {
                    let found = match resolve(dir, s) {
                        Ref::Local(path) => patch_file(self.tree, &path, s),
                        Ref::Remote => Err(PatchProblem::FileNotFound(s.to_string())),
                        Ref::Escapes => Err(PatchProblem::FileEscapes),
                    };
                    found.map_err(|problem| BuildError::patch(&what, problem))?
                }
                Some(s) => s.to_string(),
                None => return Err(BuildError::patch(&what, PatchProblem::NotAString)),
            };
            acc = self.apply_patch(&what, &text, (None, Allow::default()), acc, &mut names)?;
            patched = true;
        }
        let patches = Transformer::Patches.key();
        for (i, entry) in list(k, patches, file)?.iter().enumerate() {
            let what = Appended::name(appended, file, patches, i);
            let text = patch_text(self.tree, dir, entry, &what)?;
            let target = target_of(entry, &what)?;
            let allow = Allow::of(entry);
            acc = self.apply_patch(&what, &text, (target, allow), acc, &mut names)?;
            patched = true;
        }
        drop(names);
        if let Some(ns) = str_field(k, Transformer::Namespace).filter(|s| !s.is_empty()) {
            // `NamespaceTransformerPlugin.Transform`: two objects moved onto one id (two
            // Namespace objects renamed to `ns`, one name in two namespaces) fail the build.
            Ids::moved_onto(self, file, &ns, &acc)?;
            for r in &mut acc {
                if r.kind() == "Namespace" {
                    r.set_meta("name", ns.clone());
                } else if !self.is_cluster_scoped(r.kind()) {
                    r.set_meta("namespace", ns.clone());
                }
            }
        }
        let prefix = str_field(k, Transformer::NamePrefix).unwrap_or_default();
        let suffix = str_field(k, Transformer::NameSuffix).unwrap_or_default();
        if !prefix.is_empty() || !suffix.is_empty() {
            for r in &mut acc {
                // `prefixFieldSpecsToSkip` / `suffixFieldSpecsToSkip` of kustomize's
                // PrefixTransformer and SuffixTransformer.
                let skipped = match r.kind() {
                    "Namespace" | "CustomResourceDefinition" => true,
                    "APIService" => r.api_version().starts_with("apiregistration.k8s.io/"),
                    _ => false,
                };
                if !skipped {
                    let name = format!("{prefix}{}{suffix}", r.meta_str("name"));
                    r.set_meta("name", name);
                    for (affix, list) in [(&prefix, &mut r.prefixes), (&suffix, &mut r.suffixes)] {
                        if !affix.is_empty() {
                            list.push(affix.clone());
                        }
                    }
                }
            }
        }
        let mut labels = k
            .get(Transformer::CommonLabels.key())
            .cloned()
            .unwrap_or(Value::Null);
        for l in list(k, Transformer::Labels.key(), file)? {
            if let (Some(pairs), Value::Null) = (l.get("pairs"), &labels) {
                labels = pairs.clone();
            } else if let (Some(Value::Object(p)), Value::Object(m)) = (l.get("pairs"), &mut labels)
            {
                m.extend(p.clone());
            }
        }
        add_metadata(&mut acc, "labels", &labels);
        add_metadata(
            &mut acc,
            "annotations",
            k.get(Transformer::CommonAnnotations.key())
                .unwrap_or(&Value::Null),
        );
        // The names as namespace and affixes left them, indexed again for these patches.
        let mut names = None;
        let json6902 = Transformer::PatchesJson6902.key();
        for (i, entry) in list(k, json6902, file)?.iter().enumerate() {
            let what = format!("{file}: {json6902}[{i}]");
            let text = patch_text(self.tree, dir, entry, &what)?;
            let target = target_of(entry, &what)?
                .ok_or_else(|| BuildError::patch(&what, PatchProblem::NeedsTarget))?;
            acc = self.apply_patch(
                &what,
                &text,
                (Some(target), Allow::default()),
                acc,
                &mut names,
            )?;
            patched = true;
        }
        if patched {
            // A patch that renames one object onto another: kustomize fails when it makes
            // the list again (`resmap.Factory.FromResourceSlice`).
            Ids::check(self, file, &acc)?;
        }
        // Last of kustomize's built-in transformers (after `replicas` and `images`, which
        // change no object's id): a replacement reads and writes any field, so every object
        // is whole for it.
        let replacements = self.replacements(file, dir, k)?;
        if !replacements.is_empty() {
            for r in &mut acc {
                r.make_whole(self.tree)?;
            }
            replace::apply(&replacements, &mut acc).map_err(|why| BuildError::Replacement {
                what: format!("{file}: {}", Transformer::Replacements.key()),
                why,
            })?;
        }
        Ok(acc)
    }

    /// The replacements kustomization `k` lists, inline or read from the file an entry's
    /// `path` names (one replacement, or a list of them: `ReplacementTransformerPlugin.Config`).
    fn replacements(
        &mut self,
        file: &str,
        dir: &str,
        k: &Map<String, Value>,
    ) -> Result<Vec<replace::Replacement>, BuildError> {
        let key = Transformer::Replacements.key();
        let mut out = Vec::new();
        for (i, entry) in list(k, key, file)?.iter().enumerate() {
            let what = format!("{file}: {key}[{i}]");
            let fail = |why: String| BuildError::Replacement {
                what: what.clone(),
                why,
            };
            let path = match entry.as_object().and_then(replace::path) {
                Some(Ok(path)) if !path.is_empty() => path,
                Some(Err(why)) => return Err(fail(why)),
                _ => {
                    out.push(replace::parse(entry).map_err(fail)?);
                    continue;
                }
            };
            let local = match resolve(dir, &path) {
                Ref::Local(local) => local,
                Ref::Remote => {
                    self.warn(
                        file,
                        "remote replacement",
                        format!("`{path}` is fetched from the network; what its replacements write is not in the inventory"),
                    );
                    continue;
                }
                Ref::Escapes => {
                    return Err(BuildError::Escapes {
                        file: file.to_string(),
                        entry: path,
                    })
                }
            };
            let text = self
                .tree
                .read(&local)
                .ok_or_else(|| self.not_read(&local))?;
            let docs =
                crate::yaml::parse_all(&local, &text).map_err(|e| BuildError::Yaml(Box::new(e)))?;
            match docs.as_slice() {
                [Value::Array(items)] => {
                    for item in items {
                        out.push(replace::parse(item).map_err(fail)?);
                    }
                }
                [item @ Value::Object(_)] => out.push(replace::parse(item).map_err(fail)?),
                _ => {
                    return Err(fail(format!(
                        "`{local}` must hold one replacement or a list of them"
                    )))
                }
            }
        }
        Ok(out)
    }
}

fn str_field(k: &Map<String, Value>, field: Transformer) -> Option<String> {
    k.get(field.key()).and_then(Value::as_str).map(String::from)
}

/// Sets each of `pairs` (a mapping) in `metadata.<key>` (labels or annotations) of every
/// object of `acc`, over what it has.
pub fn add_metadata(acc: &mut [Resource], key: &str, pairs: &Value) {
    let Value::Object(pairs) = pairs else { return };
    if pairs.is_empty() {
        return;
    }
    for r in acc.iter_mut() {
        if let Some(meta) = r.value.get_mut("metadata").and_then(Value::as_object_mut) {
            let entry = meta
                .entry(key.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            if !entry.is_object() {
                *entry = Value::Object(Map::new());
            }
            if let Some(m) = entry.as_object_mut() {
                for (k, v) in pairs {
                    m.insert(k.clone(), v.clone());
                }
            }
        }
    }
}
