//! Object identity and the few facts about an object the deletion model needs. An object is
//! known by `ObjectId { group, kind, namespace, name }` only (the version does not matter to
//! the API server's identity), displayed `Kind/namespace/name` and ordered by that display.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectId {
    /// API group; empty for the core group.
    pub group: String,
    pub kind: String,
    /// Empty for cluster-scoped objects.
    pub namespace: String,
    pub name: String,
}

impl Ord for ObjectId {
    fn cmp(&self, other: &Self) -> Ordering {
        // One id shared by many (an owner's, through `Arc`) is compared without its strings.
        if std::ptr::eq(self, other) {
            return Ordering::Equal;
        }
        (&self.kind, &self.namespace, &self.name, &self.group).cmp(&(
            &other.kind,
            &other.namespace,
            &other.name,
            &other.group,
        ))
    }
}

impl PartialOrd for ObjectId {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{}/{}", self.kind, self.name)
        } else {
            write!(f, "{}/{}/{}", self.kind, self.namespace, self.name)
        }
    }
}

impl ObjectId {
    /// The identity of a manifest; `None` when it lacks `apiVersion`, `kind` or a name.
    pub fn of(v: &Value) -> Option<ObjectId> {
        let api = v.get("apiVersion")?.as_str()?;
        let meta = v.get("metadata")?;
        Some(ObjectId {
            group: group_of(api).to_string(),
            kind: v.get("kind")?.as_str()?.to_string(),
            namespace: meta
                .get("namespace")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            name: meta.get("name")?.as_str()?.to_string(),
        })
    }

    pub fn is(&self, group: &str, kind: &str) -> bool {
        self.group == group && self.kind == kind
    }

    /// What `kubectl` calls the resource: `cluster.postgresql.cnpg.io`, `persistentvolumeclaim`.
    pub fn resource(&self) -> String {
        let kind = self.kind.to_ascii_lowercase();
        if self.group.is_empty() {
            kind
        } else {
            format!("{kind}.{}", self.group)
        }
    }
}

/// The API group of Flux Kustomizations: a build keeps them whole (their spec is read).
pub const KUSTOMIZE_GROUP: &str = "kustomize.toolkit.fluxcd.io";

/// `apps/v1` -> `apps`; `v1` -> ``.
pub fn group_of(api_version: &str) -> &str {
    api_version.split_once('/').map_or("", |(g, _)| g)
}

pub fn version_of(api_version: &str) -> &str {
    api_version.split_once('/').map_or(api_version, |(_, v)| v)
}

/// Kinds that are never namespaced (the built-in ones; CRDs with `scope: Cluster` found in a
/// build are added by the builder).
pub const CLUSTER_SCOPED: &[&str] = &[
    "Namespace",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleBinding",
    "PersistentVolume",
    "StorageClass",
    "PriorityClass",
    "IngressClass",
    "RuntimeClass",
    "CSIDriver",
    "Node",
    "APIService",
    "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "ClusterIssuer",
    "VolumeSnapshotClass",
    "ClusterPolicy",
    "GatewayClass",
];

/// The string entries of the mapping at a JSON pointer (labels, annotations, substitutions);
/// empty when there is none. Non-string values are left out.
pub fn string_map_at(v: &Value, pointer: &str) -> std::collections::BTreeMap<String, String> {
    v.pointer(pointer)
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// A string map of `metadata.<key>` (labels or annotations).
pub fn string_map(v: &Value, key: &str) -> BTreeMap<String, String> {
    string_map_at(v, &format!("/metadata/{key}"))
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

/// An object's annotations and labels, read where they are (`string_map` copies them).
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
/// ImageUpdateAutomations (the path they update), ArtifactGenerators (what they copy), and
/// the sources a HelmRelease's chart comes from. A repository holds few of them.
pub fn kept_whole(group: &str, kind: &str) -> bool {
    matches!(
        (group, kind),
        ("apiextensions.k8s.io", "CustomResourceDefinition")
            | ("helm.toolkit.fluxcd.io", "HelmRelease")
            | ("image.toolkit.fluxcd.io", "ImageUpdateAutomation")
            | ("source.extensions.fluxcd.io", "ArtifactGenerator")
            // a HelmRelease's chart source, read to render it
            | (
                "source.toolkit.fluxcd.io",
                "HelmRepository" | "OCIRepository" | "GitRepository" | "HelmChart" | "Bucket"
            )
    )
}

/// The SHA-256 of `v` written out in a form that no other value has: each value tagged with
/// its type, strings and lists and mappings led by their lengths, a mapping's keys in their
/// order, numbers as they print. Two values with one digest are the same value, key order
/// included, unless SHA-256 collides, which no one has ever made it do, by chance or on
/// purpose: a change cannot hide behind a digest, even one crafted to. (One value may have
/// two digests, its keys in another order, or `-0.0` for `0.0`: whoever finds two digests
/// differ compares the values themselves.)
pub fn digest(v: &Value) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    fn text(h: &mut Sha256, s: &str) {
        h.update((s.len() as u64).to_le_bytes());
        h.update(s.as_bytes());
    }
    fn feed(h: &mut Sha256, v: &Value) {
        match v {
            Value::Null => h.update([0]),
            Value::Bool(b) => h.update([1, u8::from(*b)]),
            Value::Number(n) => {
                h.update([2]);
                text(h, &n.to_string());
            }
            Value::String(s) => {
                h.update([3]);
                text(h, s);
            }
            Value::Array(items) => {
                h.update([4]);
                h.update((items.len() as u64).to_le_bytes());
                items.iter().for_each(|item| feed(h, item));
            }
            Value::Object(map) => {
                h.update([5]);
                h.update((map.len() as u64).to_le_bytes());
                for (key, value) in map {
                    text(h, key);
                    feed(h, value);
                }
            }
        }
    }
    let mut h = Sha256::new();
    feed(&mut h, v);
    h.finalize().into()
}

/// Whether a manifest is SOPS-encrypted: a `sops` mapping with its `mac`.
pub fn is_sops(v: &Value) -> bool {
    v.get("sops").and_then(|s| s.get("mac")).is_some()
}

const PRUNE: &str = "kustomize.toolkit.fluxcd.io/prune";
const SUBSTITUTE: &str = "kustomize.toolkit.fluxcd.io/substitute";

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

/// The group and kind of every custom resource a CRD manifest defines.
pub fn crd_kind(v: &Value) -> Option<(String, String, bool)> {
    let spec = v.get("spec")?;
    let group = spec.get("group")?.as_str()?.to_string();
    let kind = spec.get("names")?.get("kind")?.as_str()?.to_string();
    let cluster = spec.get("scope").and_then(Value::as_str) == Some("Cluster");
    Some((group, kind, cluster))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn displays_and_orders_by_kind_namespace_name() {
        let a = ObjectId::of(
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "media"}}),
        )
        .unwrap();
        let b = ObjectId::of(&json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x", "namespace": "media"}})).unwrap();
        assert_eq!(a.to_string(), "Namespace/media");
        assert_eq!(b.to_string(), "Deployment/media/x");
        assert!(b < a);
        assert_eq!(b.resource(), "deployment.apps");
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
