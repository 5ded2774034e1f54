//! What Flux's builds keep of the objects they build: the facts the deletion rules and the
//! lints read of each object (`Facts`: Flux's opt-out labels and annotations, SOPS, the
//! `${VAR}`s it needs, its data keys), and the kinds read whole (`kept_whole`). The builder
//! knows none of it: a Flux build hands it over as the builder's `Keep` (`KEEP`), and reads
//! an object's facts back here (`of_object`, `of_shared`).

use super::source::{SourceKind, SOURCE_GROUP};
use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;

use super::KUSTOMIZE_GROUP;
use crate::kustomize::{Keep, Kept, Resource, Shared};

/// What a Flux build keeps of each object it loads: whole the kinds Flux or a rule reads
/// (`loaded_whole`), the facts of the rest of every other (`Facts`).
pub const KEEP: Keep = Keep {
    whole: loaded_whole,
    rest: rest_facts,
};

/// Whether a build holds an object of this group and kind whole as it loads it: the kinds of
/// `kept_whole`, Flux Kustomizations (owners: their spec is read), ConfigMaps and Secrets
/// (`substituteFrom` sources: their data is read) and ExternalSecrets (one makes a Secret,
/// named in its spec).
fn loaded_whole(group: &str, kind: &str) -> bool {
    kept_whole(group, kind)
        || (group == KUSTOMIZE_GROUP && kind == "Kustomization")
        || (group.is_empty() && matches!(kind, "ConfigMap" | "Secret"))
        || (group == "external-secrets.io" && kind == "ExternalSecret")
}

/// The facts of the rest of an object held as its head, its variables included (they are
/// read only when its owner substitutes, see `Facts::of`).
fn rest_facts(rest: &Value) -> Kept {
    Arc::new(Facts::of(rest, None, true))
}

/// What the inventory keeps of `r` (see `Facts`): of its value, and of the rest of it that
/// the build did not hold.
pub fn of_object(r: &Resource, substituted: bool) -> Facts {
    Facts::of(&r.value, r.kept::<Facts>(), substituted)
}

/// `of_object`, made once for an object a remembered build hands on again (see
/// `kustomize::Shared`).
// The `Cow` itself is asked: whether it still borrows the kept object.
#[allow(clippy::ptr_arg)]
pub fn of_shared(cell: Option<&Shared>, r: &Cow<'_, Resource>, substituted: bool) -> Arc<Facts> {
    Shared::facts(cell, r, substituted, |r| {
        Arc::new(of_object(r, substituted))
    })
}

/// The per-object opt-out Flux honours before deleting, if the object carries one (as a
/// label or an annotation): `prune: disabled`, `reconcile: disabled` or `ssa: Ignore`.
pub fn opt_out(v: &Value) -> Option<String> {
    opt_out_of(&Metadata::of(v))
}

fn opt_out_of(meta: &Metadata) -> Option<String> {
    const OPT_OUTS: &[(&str, &str)] = &[
        (PRUNE, "disabled"),
        ("kustomize.toolkit.fluxcd.io/reconcile", "disabled"),
        ("kustomize.toolkit.fluxcd.io/ssa", "Ignore"),
    ];
    for map in [meta.annotations, meta.labels] {
        for (k, val) in OPT_OUTS {
            if string_at(map, k).is_some_and(|x| x.eq_ignore_ascii_case(val)) {
                return Some(format!("{k}: {val}"));
            }
        }
    }
    None
}

/// An object's annotations and labels, read where they are (`kustomize::object::string_map` copies
/// them).
struct Metadata<'a> {
    annotations: Option<&'a serde_json::Map<String, Value>>,
    labels: Option<&'a serde_json::Map<String, Value>>,
}

impl<'a> Metadata<'a> {
    fn of(v: &'a Value) -> Metadata<'a> {
        let map = |key: &str| v.get("metadata")?.get(key)?.as_object();
        Metadata {
            annotations: map("annotations"),
            labels: map("labels"),
        }
    }

    /// Whether `key` is `disabled`, in any case, as an annotation or a label (how the Flux
    /// Operator reads its opt-outs: `ssautil.AnyInMetadata`).
    fn is_disabled(&self, key: &str) -> bool {
        [self.annotations, self.labels]
            .into_iter()
            .any(|m| string_at(m, key).is_some_and(|v| v.eq_ignore_ascii_case("disabled")))
    }

    /// Whether `key` is `value` as an annotation or a label.
    fn is_set(&self, key: &str, value: &str) -> bool {
        [self.annotations, self.labels]
            .into_iter()
            .any(|m| string_at(m, key) == Some(value))
    }
}

/// The string value of `key` in `map` (not a string: none).
fn string_at<'a>(map: Option<&'a serde_json::Map<String, Value>>, key: &str) -> Option<&'a str> {
    map?.get(key)?.as_str()
}

/// What the deletion rules and the lints read of an object, taken when a build records it.
/// An inventory keeps these instead of the object: a repository of 100,000 services builds
/// hundreds of thousands of objects, and holding them whole costs gigabytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// The Flux opt-out it carries (see `opt_out`).
    pub opt_out: Option<String>,
    /// `kustomize.toolkit.fluxcd.io/prune: disabled`, as a label or an annotation.
    pub prune_disabled: bool,
    /// The Flux Operator's opt-out (`resource_set::prune_disabled`): what protects an object
    /// a ResourceSet applies, where kustomize-controller's opt-outs mean nothing.
    pub operator_prune_disabled: bool,
    /// SOPS-encrypted (see `is_sops`).
    pub sops: bool,
    /// The `${VAR}`s it needs (see `needed_variables`), sorted; only read when its owner
    /// substitutes variables, so only then taken.
    pub variables: Vec<String>,
    /// The keys of its `data`, `stringData` and `binaryData`, when it has any of them.
    pub data_keys: Option<Vec<String>>,
}

impl Facts {
    /// The facts of `v` and, when `v` is an object's head only, of the `rest` of it; its
    /// variables only when `substituted` (its owner has `postBuild`).
    pub fn of(v: &Value, rest: Option<&Facts>, substituted: bool) -> Facts {
        let meta = Metadata::of(v);
        let mut variables = BTreeSet::new();
        if substituted && !meta.is_set(SUBSTITUTE, "disabled") {
            needed_in(v, &mut variables);
            variables.extend(rest.iter().flat_map(|r| r.variables.iter().cloned()));
        }
        let maps: Vec<&serde_json::Map<String, Value>> = ["data", "stringData", "binaryData"]
            .iter()
            .filter_map(|k| v.get(*k).and_then(Value::as_object))
            .collect();
        Facts {
            opt_out: opt_out_of(&meta),
            prune_disabled: meta.is_set(PRUNE, "disabled"),
            operator_prune_disabled: meta.is_disabled(super::resource_set::PRUNE),
            sops: is_sops(v) || rest.is_some_and(|r| r.sops),
            variables: variables.into_iter().collect(),
            data_keys: if maps.is_empty() {
                rest.and_then(|r| r.data_keys.clone())
            } else {
                Some(maps.iter().flat_map(|m| m.keys().cloned()).collect())
            },
        }
    }
}

/// Kinds an inventory keeps whole, because a rule or a lint reads their specs: CRDs (the
/// kinds they define), HelmReleases (whether their values configure persistence) and
/// ImageUpdateAutomations (the path they update), ArtifactGenerators (what they copy),
/// ResourceSets and their input providers (rendered into what the Flux Operator applies), and
/// the sources a HelmRelease's chart comes from. A repository holds few of them.
pub fn kept_whole(group: &str, kind: &str) -> bool {
    if group == SOURCE_GROUP {
        // a HelmRelease's chart source, read to render it
        return matches!(
            SourceKind::parse(kind),
            SourceKind::HelmRepository
                | SourceKind::OCIRepository
                | SourceKind::GitRepository
                | SourceKind::HelmChart
                | SourceKind::Bucket
        );
    }
    matches!(
        (group, kind),
        ("apiextensions.k8s.io", "CustomResourceDefinition")
            | (
                "fluxcd.controlplane.io",
                "ResourceSet" | "ResourceSetInputProvider"
            )
            | ("helm.toolkit.fluxcd.io", "HelmRelease")
            | ("image.toolkit.fluxcd.io", "ImageUpdateAutomation")
            | ("source.extensions.fluxcd.io", "ArtifactGenerator")
    )
}

/// Whether a manifest is SOPS-encrypted: a `sops` mapping with its `mac`.
pub fn is_sops(v: &Value) -> bool {
    v.get("sops").and_then(|s| s.get("mac")).is_some()
}

/// Flux's opt-out of pruning, as a label or an annotation (`disabled`).
const PRUNE: &str = "kustomize.toolkit.fluxcd.io/prune";
/// Flux's opt-out of `postBuild` substitution, as a label or an annotation (`disabled`).
pub(super) const SUBSTITUTE: &str = "kustomize.toolkit.fluxcd.io/substitute";

/// The variables a string needs for Flux's `postBuild` substitution (see
/// `envsubst::needed`): those of every `${NAME...}` whose operator is not a default
/// (`${NAME:=x}`, `${NAME:-x}`, `${NAME=x}`), defaults nested in defaults included;
/// `$${...}` is an escape.
pub fn needed_variables(s: &str, out: &mut BTreeSet<String>) {
    crate::envsubst::needed(s, out);
}

/// `needed_variables` of every key and string of `v`.
fn needed_in(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::String(s) => needed_variables(s, out),
        Value::Array(items) => items.iter().for_each(|i| needed_in(i, out)),
        Value::Object(m) => {
            for (k, v) in m {
                needed_variables(k, out);
                needed_in(v, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An object held as its head has the facts of its rest; one patched whole again has
    /// the facts of its value; a ConfigMap is held whole.
    #[test]
    fn the_facts_of_an_object_held_as_its_head_are_those_of_the_whole() {
        let list = "apiVersion: v1\nkind: List\nitems:\n  - {apiVersion: example.com/v1, kind: Settings, metadata: {name: a}, data: {k: '1'}}\n  - {apiVersion: example.com/v1, kind: Settings, metadata: {name: b}, data: {k: '${V}'}}\n  - {apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {k: '${W}'}}\n";
        let tree = crate::tree::FileTree::from_files([
            ("base/kustomization.yaml", "namespace: ns\nresources: [list.yaml]\n"),
            ("base/list.yaml", list),
            ("o/kustomization.yaml", "resources: [../base]\npatches:\n  - target: {name: b}\n    patch: |\n      - op: add\n        path: /data/j\n        value: '2'\n"),
        ]);
        let out = crate::kustomize::Builder::new(&tree)
            .keeping(KEEP)
            .build_dir("o")
            .unwrap();
        assert_eq!(out[0].value.get("data"), None);
        assert_eq!(
            of_object(&out[0], true).data_keys,
            Some(vec!["k".to_string()])
        );
        assert_eq!(out[1].kept::<Facts>(), None);
        assert_eq!(of_object(&out[1], true).variables, ["V"]);
        assert_eq!(of_object(&out[1], false).variables, Vec::<String>::new());
        assert!(out[2].value.get("data").is_some());
        assert_eq!(of_object(&out[2], true).variables, ["W"]);
    }

    #[test]
    fn the_operators_opt_out_is_its_own() {
        let of = |v: Value| Facts::of(&v, None, false);
        let f =
            of(json!({"metadata": {"annotations": {"fluxcd.controlplane.io/prune": "Disabled"}}}));
        assert!(f.operator_prune_disabled && f.opt_out.is_none());
        let f = of(json!({"metadata": {"labels": {"fluxcd.controlplane.io/prune": "disabled"}}}));
        assert!(f.operator_prune_disabled);
        let f =
            of(json!({"metadata": {"labels": {"kustomize.toolkit.fluxcd.io/prune": "disabled"}}}));
        assert!(!f.operator_prune_disabled && f.opt_out.is_some());
    }

    #[test]
    fn opt_outs_are_read_from_labels_and_annotations() {
        let v = json!({"metadata": {"labels": {"kustomize.toolkit.fluxcd.io/prune": "disabled"}}});
        assert!(opt_out(&v).is_some());
        let v = json!({"metadata": {"annotations": {"kustomize.toolkit.fluxcd.io/ssa": "Ignore"}}});
        assert!(opt_out(&v).is_some());
        let v =
            json!({"metadata": {"annotations": {"kustomize.toolkit.fluxcd.io/prune": "enabled"}}});
        assert!(opt_out(&v).is_none());
    }
}
