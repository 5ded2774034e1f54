//! The index of names (`Names`) against the plain loop that asks every object of every
//! patch: random objects (namespaced and cluster-scoped, with names they had before) and
//! random patches (by exact, pattern and no name, by label, merges, deletes, renames,
//! metadata replaced) through one kustomization, built both ways: the same objects, names
//! and errors.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use serde_json::{json, Map, Value};
use std::cell::Cell;

use super::super::{BuildError, Builder, Resource};
use crate::tree::FileTree;

/// apiVersion, kind, and whether the kind is namespaced.
const KINDS: [(&str, &str, bool); 4] = [
    ("helm.toolkit.fluxcd.io/v2", "HelmRelease", true),
    ("v1", "ConfigMap", true),
    ("v1", "Namespace", false),
    ("rbac.authorization.k8s.io/v1", "ClusterRole", false),
];
const NAMES: [&str; 6] = ["a", "b", "a-1", "ax1", "a.1", "web"];
/// Names a target gives: exact ones, patterns (`a.1` selects `ax1` and `a-1` too) and names
/// no object has.
const TARGET_NAMES: [&str; 10] = [
    "a", "b", "a-1", "ax1", "a.1", "web", "a.*", "a|b", "zzz", "A",
];
const NAMESPACES: [&str; 2] = ["n1", "n2"];

/// kind, name, namespace, labels, and the (name, namespace) pairs it had.
type ObjectCase = (usize, usize, usize, usize, Vec<(usize, usize)>);
/// form, kind (4: none, 5: HelmRelease by group too), name, namespace (2: none), value, section.
type PatchCase = (usize, usize, usize, usize, u8, usize);

fn object((kind, name, ns, labels, previous): &ObjectCase, i: usize) -> Resource {
    let (api, k, namespaced) = KINDS[*kind];
    let mut meta = Map::new();
    meta.insert("name".into(), NAMES[*name].into());
    if namespaced {
        meta.insert("namespace".into(), NAMESPACES[*ns].into());
    }
    match labels {
        1 => {
            meta.insert("labels".into(), json!({"app": "a"}));
        }
        2 => {
            meta.insert("labels".into(), json!({"app": "b"}));
            meta.insert("annotations".into(), json!({"tier": "x"}));
        }
        _ => {}
    }
    let value = json!({"apiVersion": api, "kind": k, "metadata": meta, "spec": {"i": i}});
    let mut r = Resource::generated(value, "x/objects.yaml", i);
    for (n, s) in previous {
        let ns = if namespaced { NAMESPACES[*s] } else { "" };
        let pair = (NAMES[*n].to_string(), ns.to_string());
        if !r.previous.contains(&pair) {
            r.previous.push(pair);
        }
    }
    r
}

/// The header of a patch without a target: that of object `name` (modulo their number),
/// with its namespace, or none when `kind` is 0 and `ns` 1 (it then names no namespaced
/// object, as kustomize reads it); in another namespace when `kind` is 4 and `ns` 1.
fn header(objects: &[ObjectCase], kind: usize, name: usize, ns: usize) -> Map<String, Value> {
    let (k, n, s) = match objects.get(name % objects.len().max(1)) {
        Some((k, n, s, _, _)) => (*k, *n, *s),
        None => (kind % 4, name % NAMES.len(), ns % 2),
    };
    let (api, kind_name, namespaced) = KINDS[k];
    let mut meta = Map::new();
    meta.insert("name".into(), NAMES[n].into());
    if kind == 4 && ns == 1 {
        meta.insert("namespace".into(), NAMESPACES[(s + 1) % 2].into());
    } else if namespaced && !(kind == 0 && ns == 1) {
        meta.insert("namespace".into(), NAMESPACES[s].into());
    }
    let mut h = Map::new();
    h.insert("apiVersion".into(), api.into());
    h.insert("kind".into(), kind_name.into());
    h.insert("metadata".into(), Value::Object(meta));
    h
}

fn target(kind: usize, name: Option<usize>, ns: usize, labels: bool) -> Value {
    let mut t = Map::new();
    match kind {
        0..=3 => {
            t.insert("kind".into(), KINDS[kind].1.into());
        }
        5 => {
            t.insert("group".into(), "helm.toolkit.fluxcd.io".into());
            t.insert("kind".into(), "HelmRelease".into());
        }
        _ => {}
    }
    if let Some(n) = name {
        t.insert("name".into(), TARGET_NAMES[n].into());
    }
    if ns < 2 {
        t.insert("namespace".into(), NAMESPACES[ns].into());
    }
    if labels {
        t.insert("labelSelector".into(), "app=a".into());
    }
    Value::Object(t)
}

/// Where a patch goes: `patchesStrategicMerge` (a string), `patches` or `patchesJson6902`
/// (entries).
enum Entry {
    Merge(String),
    Patch(Value),
    Json(Value),
}

fn patch(objects: &[ObjectCase], &(form, kind, name, ns, v, section): &PatchCase) -> Entry {
    let text = |v: Value| serde_json::to_string(&v).unwrap_or_default();
    let untargeted = |h: Map<String, Value>| {
        let t = text(Value::Object(h));
        if section == 0 {
            Entry::Merge(t)
        } else {
            Entry::Patch(json!({"patch": t}))
        }
    };
    let ops = |ops: Value, t: Value| {
        let entry = json!({"patch": text(ops), "target": t});
        if section == 3 {
            Entry::Json(entry)
        } else {
            Entry::Patch(entry)
        }
    };
    let rename = if (v as usize) % 7 == 6 {
        "renamed"
    } else {
        NAMES[(v as usize) % 7]
    };
    match form {
        0 => {
            let mut h = header(objects, kind, name, ns);
            h.insert("spec".into(), json!({ "v": v }));
            untargeted(h)
        }
        1 => {
            let mut h = header(objects, kind, name, ns);
            h.insert("$patch".into(), "delete".into());
            untargeted(h)
        }
        2 => {
            // Replaces all of `metadata`: the object is left without a name.
            let mut h = header(objects, kind, name, ns);
            if let Some(m) = h.get_mut("metadata").and_then(Value::as_object_mut) {
                m.insert("$patch".into(), "replace".into());
                m.insert("labels".into(), json!({"app": "a"}));
            }
            untargeted(h)
        }
        3 => Entry::Patch(json!({
            "patch": text(json!({"spec": {"v": v}})),
            "target": target(kind, Some(name), ns, false),
        })),
        4 => ops(
            json!([{"op": "add", "path": "/spec/v", "value": v}]),
            target(kind, Some(name), ns, false),
        ),
        5 => ops(
            json!([{"op": "replace", "path": "/metadata/name", "value": rename}]),
            target(kind, Some(name), ns, false),
        ),
        6 => Entry::Patch(json!({
            "patch": text(json!({"metadata": {"annotations": {"seen": "yes"}}})),
            "target": target(kind, None, ns, true),
        })),
        7 => ops(
            json!([{"op": "replace", "path": "/metadata/name", "value": rename}]),
            target(kind, None, ns, v % 2 == 0),
        ),
        _ => Entry::Patch(json!({
            "patch": "$patch: delete\nmetadata: {name: x}\n",
            "target": target(kind, Some(name), ns, false),
        })),
    }
}

type Outcome = Result<Vec<(Value, Vec<(String, String)>)>, BuildError>;

fn build(
    tree: &FileTree,
    k: &Map<String, Value>,
    acc: Vec<Resource>,
    plain: bool,
) -> (Outcome, usize) {
    let mut builder = Builder::owners_only(tree);
    builder.plain_patches = plain;
    let out = builder
        .transform("x/kustomization.yaml", "x", k, acc, None)
        .map(|acc| acc.into_iter().map(|r| (r.value, r.previous)).collect());
    (out, builder.patch_checks)
}

#[test]
fn the_index_selects_what_asking_every_object_selects() {
    let objects = proptest::collection::vec(
        (
            0..4usize,
            0..6usize,
            0..2usize,
            0..3usize,
            proptest::collection::vec((0..6usize, 0..2usize), 0..3),
        ),
        0..16,
    );
    let patches = proptest::collection::vec(
        (
            0..9usize,
            0..6usize,
            0..10usize,
            0..3usize,
            any::<u8>(),
            0..4usize,
        ),
        0..10,
    );
    let affixes = (any::<bool>(), any::<bool>());
    let tree = FileTree::from_files([("x/kustomization.yaml", "")]);
    let (built, changed, asked_fast, asked_plain) =
        (Cell::new(0), Cell::new(0), Cell::new(0), Cell::new(0));
    let mut runner = TestRunner::new(Config {
        cases: 2000,
        rng_seed: RngSeed::Fixed(0x9A7C_4E55),
        failure_persistence: None,
        ..Config::default()
    });
    let outcome = runner.run(
        &(objects, patches, affixes),
        |(objects, patches, (namespace, prefix))| {
            // One object an id (kind, name, namespace): two fail the build either way.
            let mut ids = std::collections::BTreeSet::new();
            let objects: Vec<ObjectCase> = objects
                .into_iter()
                .filter(|(k, n, s, _, _)| ids.insert((*k, *n, if KINDS[*k].2 { *s } else { 0 })))
                .collect();
            let acc: Vec<Resource> = objects
                .iter()
                .enumerate()
                .map(|(i, o)| object(o, i))
                .collect();
            let (mut merges, mut entries, mut jsons) = (Vec::new(), Vec::new(), Vec::new());
            for p in &patches {
                match patch(&objects, p) {
                    Entry::Merge(t) => merges.push(Value::String(t)),
                    Entry::Patch(e) => entries.push(e),
                    Entry::Json(e) => jsons.push(e),
                }
            }
            let mut k = Map::new();
            k.insert("patchesStrategicMerge".into(), Value::Array(merges));
            k.insert("patches".into(), Value::Array(entries));
            k.insert("patchesJson6902".into(), Value::Array(jsons));
            // Between `patches` and `patchesJson6902`: the latter select by either name.
            if namespace {
                k.insert("namespace".into(), "n3".into());
            }
            if prefix {
                k.insert("namePrefix".into(), "p-".into());
            }
            let before: Vec<Value> = acc.iter().map(|r| r.value.clone()).collect();
            let (fast, fast_checks) = build(&tree, &k, acc.clone(), false);
            let (plain, plain_checks) = build(&tree, &k, acc, true);
            asked_fast.set(asked_fast.get() + fast_checks);
            asked_plain.set(asked_plain.get() + plain_checks);
            if let Ok(out) = &plain {
                built.set(built.get() + 1);
                let after: Vec<&Value> = out.iter().map(|(v, _)| v).collect();
                if after.len() != before.len() || after.iter().zip(&before).any(|(a, b)| *a != b) {
                    changed.set(changed.get() + 1);
                }
            }
            if fast == plain {
                Ok(())
            } else {
                Err(TestCaseError::fail(format!(
                    "{k:?}\nindexed: {fast:?}\nplain: {plain:?}"
                )))
            }
        },
    );
    if let Err(e) = outcome {
        panic!("{e}");
    }
    // The cases exercise both: most build, most of those change, and the index asks fewer.
    assert!(built.get() > 800, "{} of 2000 built", built.get());
    assert!(changed.get() > 600, "{} changed", changed.get());
    assert!(
        asked_fast.get() * 3 < asked_plain.get() * 2,
        "indexed {} against plain {}",
        asked_fast.get(),
        asked_plain.get()
    );
}
