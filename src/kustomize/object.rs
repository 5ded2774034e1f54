//! What kustomize knows of any object: its identity, `ObjectId { group, kind, namespace,
//! name }` only (the version does not matter to the API server's identity), and the cluster
//! it is applied to when that is not Flux's own; displayed `Kind/namespace/name` and ordered
//! by that display; its API group and version; the kinds that are never namespaced and those
//! a CRD defines; and a digest of its value.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::pointer::Pointer;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectId {
    /// API group; empty for the core group.
    pub group: String,
    pub kind: String,
    /// Empty for cluster-scoped objects.
    pub namespace: String,
    pub name: String,
    /// The cluster it is in when that is not the one Flux runs in: the `spec.kubeConfig`
    /// of the Flux Kustomization that applies it (`Cluster::of`). `None` for Flux's own.
    pub cluster: Option<Cluster>,
}

/// The name of a cluster other than Flux's own (`ObjectId::cluster`), shared by the ids of
/// what is in it: one pointer, as most ids have none.
pub type Cluster = Arc<String>;

impl Ord for ObjectId {
    fn cmp(&self, other: &Self) -> Ordering {
        // One id shared by many (an owner's, through `Arc`) is compared without its strings.
        if std::ptr::eq(self, other) {
            return Ordering::Equal;
        }
        (
            &self.kind,
            &self.namespace,
            &self.name,
            &self.group,
            &self.cluster,
        )
            .cmp(&(
                &other.kind,
                &other.namespace,
                &other.name,
                &other.group,
                &other.cluster,
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
            write!(f, "{}/{}", self.kind, self.name)?;
        } else {
            write!(f, "{}/{}/{}", self.kind, self.namespace, self.name)?;
        }
        match &self.cluster {
            Some(c) => write!(f, " (cluster {c})"),
            None => Ok(()),
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
            cluster: None,
        })
    }

    /// The name of its cluster (`cluster`), `None` for Flux's own.
    pub fn cluster_name(&self) -> Option<&str> {
        self.cluster.as_deref().map(String::as_str)
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
    v.at_pointer(pointer)
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// The string items of the list at key `key` of `v` (a selector's `values`, a chart's
/// `valuesFiles`); empty when there is none. Non-string items are left out.
pub fn strings_at<B: FromIterator<String>>(v: &Value, key: &str) -> B {
    v.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

/// A string map of `metadata.<key>` (labels or annotations).
pub fn string_map(v: &Value, key: &str) -> BTreeMap<String, String> {
    string_map_at(v, &format!("/metadata/{key}"))
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

/// The group and kind of every custom resource a CRD manifest defines.
pub fn crd_kind(v: &Value) -> Option<(String, String, bool)> {
    let spec = v.get("spec")?;
    let group = spec.get("group")?.as_str()?.to_string();
    let kind = spec.get("names")?.get("kind")?.as_str()?.to_string();
    let cluster = spec.get("scope").and_then(Value::as_str) == Some("Cluster");
    Some((group, kind, cluster))
}

/// A namespaced object's namespace as kustomize compares ids (kyaml
/// `ResId.EffectiveNamespace`): none is `default`.
pub(super) fn effective_namespace(ns: &str) -> &str {
    if ns.is_empty() {
        "default"
    } else {
        ns
    }
}

/// kyaml `utils.PathSplitter`: `path` split at `delimiter`, a delimiter after `\` kept in
/// its part (the field paths of transformer configurations and of `replacements`).
pub(super) fn path_splitter(path: &str, delimiter: char) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for part in path.split(delimiter) {
        match out.last_mut() {
            Some(last) if last.ends_with('\\') => {
                last.pop();
                last.push(delimiter);
                last.push_str(part);
            }
            _ => out.push(part.to_string()),
        }
    }
    out
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
}
