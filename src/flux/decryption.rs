//! SOPS decryption, one answer for `plan` and `check`: whether a Flux Kustomization, as an
//! environment's build leaves it, ends with `spec.decryption` (`ends_decrypted`, read from
//! the kustomize builder's objects); which Kustomization a patch entry names literally
//! (`literal_target`, so that `apply` can remove the entry of one that is gone); and whether
//! an entry gives a Kustomization decryption, asked of the builder's own patch code
//! (`gives_decryption`). What `apply` writes is in `emit::decryption_patch_item`.

use serde_json::{json, Map, Value};

use super::KUSTOMIZE_GROUP;
use crate::kustomize::{resolve, Builder};
use crate::pointer::Pointer;
use crate::tree::FileTree;

/// The fields of a kustomization that hold patches.
pub const PATCH_FIELDS: [&str; 3] = ["patches", "patchesStrategicMerge", "patchesJson6902"];

/// Whether a Flux Kustomization (as a build leaves it) decrypts SOPS files.
pub fn ends_decrypted(object: &Value) -> bool {
    object
        .at_pointer("/spec/decryption")
        .is_some_and(Value::is_object)
}

/// One entry of a kustomization's patch lists.
#[derive(Debug, Clone, Copy)]
pub struct PatchEntry<'a> {
    /// One of `PATCH_FIELDS`.
    pub field: &'static str,
    /// Its position in that list.
    pub index: usize,
    pub entry: &'a Value,
}

/// Every entry of the patch lists of kustomization `k`, list by list (a field that is not a
/// list has none: the builder reports it).
pub fn patch_entries(k: &Value) -> Vec<PatchEntry<'_>> {
    PATCH_FIELDS
        .iter()
        .flat_map(|&field| {
            k.get(field)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
                .map(move |(index, entry)| PatchEntry {
                    field,
                    index,
                    entry,
                })
        })
        .collect()
}

/// The Kustomization an entry of the kustomization in `dir` selects by one literal name, with
/// the namespace it names, if any: its `target`'s (a name without regular-expression
/// metacharacters, no label or annotation selector), or, for a strategic-merge patch without
/// one, its own header's (read from its file for a `path`), which names it exactly.
pub fn literal_target(
    tree: &FileTree,
    dir: &str,
    e: &PatchEntry,
) -> Option<(String, Option<String>)> {
    let literal = |v: Option<&Value>| -> Option<Option<String>> {
        match v {
            None | Some(Value::Null) => Some(None),
            Some(Value::String(s)) if is_literal(s) => Some(Some(s.clone())),
            Some(_) => None,
        }
    };
    let target = e.entry.get("target").filter(|t| !t.is_null());
    if let Some(t) = target.filter(|_| e.field != "patchesStrategicMerge") {
        if t.get("labelSelector").is_some() || t.get("annotationSelector").is_some() {
            return None;
        }
        let name = literal(t.get("name"))??;
        return Some((name, literal(t.get("namespace"))?));
    }
    let header = smp_documents(tree, dir, e)?.into_iter().next()?;
    // A header names its object exactly (no regular expression): any name is literal.
    let meta = header.get("metadata")?;
    let exact = |key: &str| {
        meta.get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    Some((
        exact("name")?.to_string(),
        exact("namespace").map(String::from),
    ))
}

/// Whether entry `e` of the kustomization in `dir` can only patch Flux Kustomizations: its
/// `target` names kind `Kustomization` (of Flux's group, or of no group), or, without one,
/// its strategic-merge patch is one document, a Flux Kustomization.
pub fn targets_flux_kustomization(tree: &FileTree, dir: &str, e: &PatchEntry) -> bool {
    let target = e.entry.get("target").filter(|t| !t.is_null());
    if let Some(t) = target.filter(|_| e.field != "patchesStrategicMerge") {
        let group = t.get("group").and_then(Value::as_str).unwrap_or("");
        return t.get("kind").and_then(Value::as_str) == Some("Kustomization")
            && (group.is_empty() || group == KUSTOMIZE_GROUP);
    }
    smp_documents(tree, dir, e).is_some_and(|d| d.len() == 1 && super::Kustomization::is(&d[0]))
}

/// The documents of a strategic-merge patch entry without a target (read from its file for a
/// `path`); each names the object it patches.
fn smp_documents(tree: &FileTree, dir: &str, e: &PatchEntry) -> Option<Vec<Value>> {
    let read = |path: &str| tree.read(&resolve(dir, path).local()?);
    let text = match (e.field, e.entry) {
        ("patches", m) => match (m.get("patch").and_then(Value::as_str), m.get("path")) {
            (Some(p), _) => p.to_string(),
            (None, Some(Value::String(path))) => read(path)?.to_string(),
            _ => return None,
        },
        ("patchesStrategicMerge", Value::String(s))
            if !s.contains('\n') && !s.trim_start().starts_with('{') =>
        {
            read(s)?.to_string()
        }
        ("patchesStrategicMerge", Value::String(s)) => s.clone(),
        _ => return None,
    };
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text).ok()?;
    Some(docs.into_iter().filter(Value::is_object).collect())
}

fn is_literal(s: &str) -> bool {
    !s.is_empty() && !s.chars().any(|c| "\\.+*?()|[]{}^$".contains(c))
}

/// Whether entry `e` of the kustomization in `dir` sets `spec.decryption` on a Flux
/// Kustomization `name` in `namespace`, asked of `builder`'s patch code: applied to that
/// Kustomization (of either API version a target may name) without decryption, it gives it
/// one; or applied to it with some other decryption, it leaves a different one (a JSON 6902
/// `replace` needs one there). An entry the builder cannot apply sets none.
pub fn gives_decryption(
    builder: &mut Builder,
    dir: &str,
    e: &PatchEntry,
    name: &str,
    namespace: &str,
) -> bool {
    let mut k = Map::new();
    k.insert(e.field.into(), Value::Array(vec![e.entry.clone()]));
    let what = format!("{dir}: {}[{}]", e.field, e.index);
    let placeholder = json!({"provider": "fluxwave-probe"});
    let sets = [None, Some(&placeholder)].into_iter().any(|before| {
        let objects = ["v1", "v1beta2"]
            .iter()
            .map(|v| {
                // A Flux Kustomization always has a spec (sourceRef, interval): a JSON 6902
                // `add` at /spec/decryption needs it.
                let mut spec = Map::new();
                if let Some(d) = before {
                    spec.insert("decryption".into(), d.clone());
                }
                json!({
                    "apiVersion": format!("{KUSTOMIZE_GROUP}/{v}"),
                    "kind": "Kustomization",
                    "metadata": {"name": name, "namespace": namespace},
                    "spec": spec,
                })
            })
            .collect();
        builder
            .transform_objects(&what, dir, &k, objects)
            .is_ok_and(|out| {
                out.iter()
                    .any(|o| ends_decrypted(o) && o.at_pointer("/spec/decryption") != before)
            })
    });
    sets
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flux::emit;
    use crate::yaml::edit::tests::{parse, s, BASE};
    use crate::yaml::edit::{apply_list_edit, edit_sequence};

    const DEV: &str = "# dev cluster: the shared Flux objects plus per-environment patches.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - flux-system
  - ../base
patches:
  # SOPS decryption for the app tier. Load-bearing: without it Flux applies the
  # encrypted Secrets verbatim. The sops-age Secret is created out of band.
  - patch: |-
      apiVersion: kustomize.toolkit.fluxcd.io/v1
      kind: Kustomization
      metadata:
        name: apps
        namespace: flux-system
      spec:
        decryption:
          provider: sops
          secretRef:
            name: sops-age
";

    const DEV_JSON: &str = "# dev cluster
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - flux-system
patches:
  - target:
      kind: Kustomization
      name: apps
    patch: |-
      - op: add
        path: /spec/decryption
        value:
          provider: sops
          secretRef:
            name: sops-age
";

    fn sops() -> Value {
        json!({"provider": "sops", "secretRef": {"name": "sops-age"}})
    }

    /// Each entry's literal target and whether the builder's patch code gives that name
    /// decryption.
    fn answers(tree: &FileTree, dir: &str, k: &Value) -> Vec<(Option<String>, bool)> {
        let mut b = Builder::owners_only(tree);
        patch_entries(k)
            .iter()
            .map(|e| {
                let name = literal_target(tree, dir, e).map(|(n, _)| n);
                let gives = name
                    .as_deref()
                    .is_some_and(|n| gives_decryption(&mut b, dir, e, n, "flux-system"));
                (name, gives)
            })
            .collect()
    }

    #[test]
    fn literal_targets_and_what_the_builder_makes_of_them() {
        let tree = FileTree::from_files([(
            "clusters/dev/decrypt.yaml",
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: infra\n  namespace: flux-system\nspec:\n  decryption:\n    provider: sops\n",
        )]);
        let yes = |n: &str| (Some(n.to_string()), true);
        assert_eq!(answers(&tree, "clusters/dev", &parse(DEV)), [yes("apps")]);
        assert_eq!(
            answers(&tree, "clusters/dev", &parse(DEV_JSON)),
            [yes("apps")]
        );
        let k = parse("patches:\n  - path: decrypt.yaml\n  - target: {kind: Kustomization, name: apps-wave-.*}\n    patch: '[{op: add, path: /spec/decryption, value: {}}]'\n  - target: {kind: Kustomization, name: apps, labelSelector: a=b}\n    patch: '[]'\n  - target: {kind: HelmRelease, name: apps}\n    patch: '[{op: add, path: /spec/decryption, value: {}}]'\n  - patch: |-\n      apiVersion: kustomize.toolkit.fluxcd.io/v1\n      kind: Kustomization\n      metadata: {name: apps}\n      spec: {interval: 1m}\npatchesStrategicMerge:\n  - decrypt.yaml\npatchesJson6902:\n  - target: {group: kustomize.toolkit.fluxcd.io, version: v1beta2, kind: Kustomization, name: old}\n    patch: '[{op: replace, path: /spec/decryption, value: {provider: sops}}]'\n");
        assert_eq!(
            answers(&tree, "clusters/dev", &k),
            [
                yes("infra"),
                (None, false),
                (None, false),
                (Some("apps".into()), false),
                (Some("apps".into()), false),
                yes("infra"),
                yes("old"),
            ]
        );
    }

    #[test]
    fn the_item_apply_writes_gives_its_wave_decryption_and_no_other() {
        let item = emit::decryption_patch_item("apps-wave-0", "flux-system", &sops());
        assert_eq!(
            item,
            "patch: |-\n  apiVersion: kustomize.toolkit.fluxcd.io/v1\n  kind: Kustomization\n  metadata:\n    name: apps-wave-0\n    namespace: flux-system\n  spec:\n    decryption:\n      provider: sops\n      secretRef:\n        name: sops-age"
        );
        let dec = json!({
            "provider": "sops",
            "secretRef": {"name": "sops-age"},
            "weird": ["yes", "y", "1", "a: b", "#x", "", "multi\nline", {"k": true, "n": null}],
            "empty": {},
            "nested": [[1, 2]],
        });
        let item = emit::decryption_patch_item("apps-wave-0", "flux-system", &dec);
        let out = edit_sequence("patches: []\n", "patches", &[], None, &[item]).unwrap();
        let v = parse(&out);
        let inner = parse(v["patches"][0]["patch"].as_str().unwrap());
        assert_eq!(inner["spec"]["decryption"], dec);
        let tree = FileTree::default();
        let mut b = Builder::owners_only(&tree);
        let e = patch_entries(&v)[0];
        assert_eq!(
            literal_target(&tree, "", &e),
            Some(("apps-wave-0".into(), Some("flux-system".into())))
        );
        assert!(gives_decryption(
            &mut b,
            "",
            &e,
            "apps-wave-0",
            "flux-system"
        ));
        assert!(!gives_decryption(
            &mut b,
            "",
            &e,
            "apps-wave-1",
            "flux-system"
        ));
        assert!(!gives_decryption(&mut b, "", &e, "apps-wave-0", "other"));
    }

    /// Truncated and line-dropped variants of the fixtures: never a panic, and every Ok edit
    /// parses to the intended list.
    #[test]
    fn never_panics_on_mangled_input() {
        let item = emit::decryption_patch_item("apps-wave-0", "flux-system", &sops());
        let extra = [
            "resources: [a, \"b]\n",
            "resources: &x\n  - a\nother: *x\n",
            "---\nresources:\n- a\n...\n",
            "resources:\n  - a\n    - b\n  -\n  - - c\n",
            "r: |\n  resources:\n  - x\n",
        ];
        let mut texts: Vec<String> = Vec::new();
        for f in [BASE, DEV, DEV_JSON].iter().chain(extra.iter()) {
            for (i, _) in f.char_indices() {
                texts.push(f[..i].to_string());
            }
            let lines: Vec<&str> = f.lines().collect();
            for skip in 0..lines.len() {
                let v: Vec<&str> = lines
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != skip)
                    .map(|(_, l)| *l)
                    .collect();
                texts.push(v.join("\n") + "\n");
            }
        }
        let ops: Vec<(Vec<usize>, Option<usize>, Vec<String>)> = vec![
            (vec![0], None, s(&["x"])),
            (vec![], Some(0), vec![item.clone()]),
            (vec![1], Some(1), vec![]),
        ];
        let mut ok = 0;
        for t in &texts {
            for key in ["resources", "patches"] {
                for (rm, at, new) in &ops {
                    if let Ok(out) = edit_sequence(t, key, rm, *at, new) {
                        ok += 1;
                        let before = parse(t);
                        let after = parse(&out);
                        let old = before.get(key).and_then(Value::as_array).cloned();
                        let old = old.unwrap_or_default();
                        let removed: Vec<bool> = (0..old.len()).map(|i| rm.contains(&i)).collect();
                        let new_v: Vec<Value> = new.iter().map(|n| parse(n)).collect();
                        let want = apply_list_edit(&old, &removed, at.unwrap_or(old.len()), &new_v);
                        assert_eq!(after[key], Value::Array(want), "{t:?} -> {out:?}");
                    }
                }
            }
            if let Ok(v) = serde_saphyr::from_str::<Value>(t) {
                let tree = FileTree::from_files([("x.yaml", t.as_str())]);
                for e in patch_entries(&v) {
                    let _ = literal_target(&tree, "", &e);
                }
            }
        }
        assert!(ok > 100, "only {ok} edits succeeded");
    }
}
