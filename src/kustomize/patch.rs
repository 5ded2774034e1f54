//! Patches: strategic merge (a deep merge of mappings with lists replaced, `$patch:
//! delete`/`replace`) and JSON 6902, applied to the objects a target selects.

use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;

use super::error::{BuildError, PatchProblem, TargetError};
use super::resource::{Built, Resource};
use super::target::PatchTarget;
use super::{resolve, Builder, Ref};
use crate::pointer::Pointer;
use crate::tree::FileTree;
use crate::yaml;

/// Where every name of a build's objects is (the name it has, and those it had before a
/// prefix, a suffix or a namespace changed it): the objects a patch may select when it
/// selects by one name — a strategic-merge patch without a `target` by its own header's
/// name, a `target` by a name with no pattern in it (`PatchTarget::exact_name`). One patch
/// per object over one kustomization would otherwise ask every object of every patch: a
/// quadratic build for an app tier of a thousand releases, each with its values patch, or
/// for the environment of 100,000 waves. The index follows the objects: a patch that
/// renames one moves it to its new name (later patches select it by that name, as
/// kustomize applies each patch to the objects as the earlier ones left them); a
/// `$patch: delete` drops the index, to be made again when next asked.
#[derive(Debug, Default)]
pub(super) struct Names {
    at: HashMap<String, Vec<usize>>,
}

impl Names {
    fn of(acc: &[Resource]) -> Names {
        let mut at: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, r) in acc.iter().enumerate() {
            let mut names: Vec<&str> = std::iter::once(r.meta_str("name"))
                .chain(r.previous.iter().map(|(n, _)| n.as_str()))
                .collect();
            names.sort_unstable();
            names.dedup();
            for n in names {
                at.entry(n.to_string()).or_default().push(i);
            }
        }
        Names { at }
    }

    /// The objects that have or had `name`, in their order.
    fn named(&self, name: &str) -> Vec<usize> {
        self.at.get(name).cloned().unwrap_or_default()
    }

    /// Object `i` (`r`) was named `old` before a patch: it is found by its name now.
    fn renamed(&mut self, i: usize, old: &str, r: &Resource) {
        let new = r.meta_str("name");
        let had = |n: &str| r.previous.iter().any(|(p, _)| p == n);
        if old == new {
            return;
        }
        if !had(old) {
            if let Some(v) = self.at.get_mut(old) {
                if let Ok(k) = v.binary_search(&i) {
                    v.remove(k);
                }
            }
        }
        let v = self.at.entry(new.to_string()).or_default();
        if let Err(k) = v.binary_search(&i) {
            v.insert(k, i);
        }
    }
}

impl Builder<'_> {
    /// `text` applied to `acc`: every document to the objects `target` selects, or, without
    /// one, to those its header names. `names` indexes `acc` for a document that selects by
    /// one name (made on first use, kept as the patches rename objects, dropped when one
    /// removes objects); every other document asks every object.
    pub(super) fn apply_patch(
        &mut self,
        what: &str,
        text: &str,
        (target, allow): (Option<PatchTarget>, Allow),
        mut acc: Vec<Resource>,
        names: &mut Option<Names>,
    ) -> Built {
        let docs = self.patch_documents(what, text)?;
        for doc in docs.iter().filter(|d| !d.is_null()) {
            if let (Value::Array(_), None) = (&doc, &target) {
                return Err(BuildError::patch(what, PatchProblem::NeedsTarget));
            }
            if !doc.is_array() && !doc.is_object() {
                return Err(BuildError::patch(what, PatchProblem::NotAPatch));
            }
            // The objects that may be selected, in their order: those of the one name the
            // document selects by, else all.
            let by_name = match &target {
                Some(t) => t.exact_name(),
                None => Some(
                    doc.at_pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .unwrap_or(""),
                ),
            };
            let candidates: Vec<usize> = match by_name {
                Some(name) if !self.plain_patches => {
                    names.get_or_insert_with(|| Names::of(&acc)).named(name)
                }
                _ => (0..acc.len()).collect(),
            };
            if let Value::Array(ops) = &doc {
                for i in candidates {
                    self.patch_checks += 1;
                    let r = &mut acc[i];
                    if target.as_ref().is_some_and(|t| r.selected_by(t)) {
                        let old = r.meta_str("name").to_string();
                        r.make_whole(self.tree)?;
                        json6902(&mut r.value, ops).map_err(|e| BuildError::patch(what, e))?;
                        if let Some(n) = names.as_mut() {
                            n.renamed(i, &old, r);
                        }
                    }
                }
                continue;
            }
            let mut selected = Vec::new();
            for i in candidates {
                self.patch_checks += 1;
                let r = &acc[i];
                let selects = match &target {
                    Some(t) => r.selected_by(t),
                    None => r.had_id_of(doc),
                };
                if selects {
                    selected.push(i);
                }
            }
            let delete = doc.get("$patch").and_then(Value::as_str) == Some("delete");
            if target.is_none() && selected.len() != 1 {
                let field = |p: &str| doc.at_pointer(p).and_then(Value::as_str).unwrap_or("?");
                let (kind, name) = (
                    field("/kind").to_string(),
                    field("/metadata/name").to_string(),
                );
                return Err(BuildError::patch(
                    what,
                    if selected.is_empty() {
                        PatchProblem::TargetNotBuilt { kind, name }
                    } else {
                        PatchProblem::SeveralTargets { kind, name }
                    },
                ));
            }
            if delete {
                *names = None;
                let mut i = 0;
                acc.retain(|_| {
                    i += 1;
                    selected.binary_search(&(i - 1)).is_err()
                });
                continue;
            }
            // kustomize `Resource.ApplySmPatch`: the object keeps its namespace, and its name
            // and kind unless the patch's options allow them to change.
            let mut patch = doc.clone();
            if let Some(meta) = patch.get_mut("metadata").and_then(Value::as_object_mut) {
                if !allow.name_change {
                    meta.remove("name");
                }
                meta.remove("namespace");
            }
            if let Some(p) = patch.as_object_mut() {
                p.remove("apiVersion");
                if !allow.kind_change {
                    p.remove("kind");
                }
            }
            for i in selected {
                let r = &mut acc[i];
                let old = r.meta_str("name").to_string();
                r.make_whole(self.tree)?;
                merge(&mut r.value, &patch);
                // A merge keeps the name, unless it replaces or removes all of `metadata`.
                if let Some(n) = names.as_mut() {
                    n.renamed(i, &old, r);
                }
            }
        }
        Ok(acc)
    }

    /// `yaml::patch_documents` of `text`, read once for each text in this builder.
    fn patch_documents(&mut self, what: &str, text: &str) -> Result<Arc<[Value]>, BuildError> {
        if let Some(docs) = self.patches.get(text) {
            return Ok(docs.clone());
        }
        let docs = yaml::patch_documents(text).map_err(|e| {
            BuildError::patch(what, PatchProblem::NotYaml(yaml::brief_error(text, &e)))
        })?;
        let docs: Arc<[Value]> = inline_lists(docs).into();
        self.patches.insert(text.to_string(), docs.clone());
        Ok(docs)
    }
}

/// The documents of a patch with each `...List` that has `items` replaced by its items, put
/// after the other documents (kustomize `Factory.inlineAnyEmbeddedLists`, through which a
/// patch text is read as objects: a `List` of `$patch: delete` entries deletes each). A list
/// whose `items` is null is dropped; one without `items` is no collection, and stays.
fn inline_lists(docs: Vec<Value>) -> Vec<Value> {
    let mut queue: std::collections::VecDeque<Value> = docs.into();
    let mut out = Vec::with_capacity(queue.len());
    while let Some(doc) = queue.pop_front() {
        let list = doc
            .get("kind")
            .and_then(Value::as_str)
            .is_some_and(|k| k.ends_with("List"));
        match doc.get("items") {
            Some(Value::Array(items)) if list => queue.extend(items.iter().cloned()),
            Some(Value::Null) if list => {}
            _ => out.push(doc),
        }
    }
    out
}

/// The `options` of a `patches` entry that let a strategic-merge patch change what names
/// an object (kustomize api `internal/builtins/PatchTransformer.Config`: `allowNameChange`,
/// `allowKindChange`, read as `map[string]bool`); `patchesStrategicMerge` has none.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Allow {
    pub name_change: bool,
    pub kind_change: bool,
}

impl Allow {
    pub(super) fn of(entry: &Value) -> Allow {
        let option =
            |key: &str| entry.at_pointer(&format!("/options/{key}")) == Some(&Value::Bool(true));
        Allow {
            name_change: option("allowNameChange"),
            kind_change: option("allowKindChange"),
        }
    }
}

/// The text of patch `entry` (named `what`) of a kustomization in `dir`: inline (`patch`) or
/// read from a file (`path`).
pub(super) fn patch_text(
    tree: &FileTree,
    dir: &str,
    entry: &Value,
    what: &str,
) -> Result<String, BuildError> {
    if let Some(p) = entry.get("patch").and_then(Value::as_str) {
        return Ok(p.to_string());
    }
    let Some(p) = entry.get("path").and_then(Value::as_str) else {
        return Err(BuildError::patch(what, PatchProblem::NeedsPatchOrPath));
    };
    let path = match resolve(dir, p) {
        Ref::Local(path) => path,
        Ref::Remote => {
            return Err(BuildError::patch(
                what,
                PatchProblem::FileNotFound(p.into()),
            ))
        }
        Ref::Escapes => return Err(BuildError::patch(what, PatchProblem::Escapes(p.into()))),
    };
    patch_file(tree, &path, p).map_err(|problem| BuildError::patch(what, problem))
}

/// The text of the patch file at `path` (`entry` as the kustomization names it).
pub(super) fn patch_file(tree: &FileTree, path: &str, entry: &str) -> Result<String, PatchProblem> {
    match tree.read(path) {
        Some(text) => Ok(text.to_string()),
        None => Err(match tree.unreadable(path) {
            Some(why) => PatchProblem::FileUndecodable {
                path: tree.shown(path),
                why,
            },
            None => PatchProblem::FileNotFound(entry.to_string()),
        }),
    }
}

pub(super) fn target_of(entry: &Value, what: &str) -> Result<Option<PatchTarget>, TargetError> {
    match entry.get("target") {
        None | Some(Value::Null) => Ok(None),
        Some(t) => PatchTarget::parse(t, what).map(Some),
    }
}

/// Strategic merge as fluxwave models it: mappings merge key by key, `null` removes a key,
/// `$patch: delete`/`replace` on a mapping are honoured, and lists are replaced whole.
pub fn merge(dst: &mut Value, patch: &Value) {
    let (Value::Object(d), Value::Object(p)) = (&mut *dst, patch) else {
        *dst = patch.clone();
        return;
    };
    for (k, v) in p {
        if k.starts_with('$') {
            continue;
        }
        match v {
            Value::Null => {
                d.remove(k);
            }
            Value::Object(inner) => match inner.get("$patch").and_then(Value::as_str) {
                Some("delete") => {
                    d.remove(k);
                }
                Some("replace") => {
                    let mut clean = inner.clone();
                    clean.remove("$patch");
                    d.insert(k.clone(), Value::Object(clean));
                }
                _ => match d.get_mut(k) {
                    Some(existing) if existing.is_object() => merge(existing, v),
                    _ => {
                        let mut fresh = Value::Object(Map::new());
                        merge(&mut fresh, v);
                        d.insert(k.clone(), fresh);
                    }
                },
            },
            other => {
                d.insert(k.clone(), other.clone());
            }
        }
    }
}

#[cfg(test)]
mod differential;
mod json6902;

pub use json6902::json6902;

#[cfg(test)]
mod tests {
    use super::*;

    /// A Kustomization per wave, a decryption patch per wave (what `apply` writes into an
    /// environment of 10,000 waves): each patch asks only the objects of its name, in one
    /// build, and each object ends patched (a delete and a renaming JSON 6902 patch on the
    /// way).
    #[test]
    fn a_patch_per_object_asks_each_object_once() {
        let n = 10_000;
        let ks = |i: usize| {
            serde_json::json!({
                "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
                "kind": "Kustomization",
                "metadata": {"name": format!("apps-wave-{i}"), "namespace": "flux-system"},
                "spec": {"path": format!("./apps/wave-{i}")},
            })
        };
        let patch = |i: usize| serde_json::json!({"patch": format!("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {{name: apps-wave-{i}, namespace: flux-system}}\nspec: {{decryption: {{provider: sops}}}}\n")});
        let mut patches: Vec<Value> = (0..n).map(patch).collect();
        // The last object goes, the first is renamed, and the renamed one is still patched
        // by its new name.
        patches.push(serde_json::json!({"patch": format!("$patch: delete\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {{name: apps-wave-{}, namespace: flux-system}}\n", n - 1)}));
        patches.push(serde_json::json!({
            "patch": "[{op: replace, path: /metadata/name, value: renamed}]",
            "target": {"kind": "Kustomization", "name": "apps-wave-0"},
        }));
        patches.push(serde_json::json!({"patch": "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: renamed, namespace: flux-system}\nspec: {suspend: true}\n"}));
        let mut k = Map::new();
        k.insert("patches".into(), Value::Array(patches));
        let tree = FileTree::from_files([("x/kustomization.yaml", "")]);
        let mut builder = Builder::owners_only(&tree);
        let out = builder
            .transform_objects("x/kustomization.yaml", "x", &k, (0..n).map(ks).collect())
            .unwrap();
        assert_eq!(out.len(), n - 1);
        assert!(out
            .iter()
            .all(|o| o.at_pointer("/spec/decryption/provider") == Some(&"sops".into())));
        assert_eq!(out[0].at_pointer("/metadata/name"), Some(&"renamed".into()));
        assert_eq!(out[0].at_pointer("/spec/suspend"), Some(&true.into()));
        // One question per patch of its own name, and the targeted patch asks every object.
        assert!(
            builder.patch_checks <= 3 * n,
            "{} questions for {n} objects and patches",
            builder.patch_checks
        );
    }
}
