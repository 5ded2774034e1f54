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

    /// Whether losing this object loses data by itself (a Namespace is judged by what it
    /// holds, see `Stateful`).
    pub fn is_stateful_kind(&self) -> bool {
        matches!(
            (self.group.as_str(), self.kind.as_str()),
            ("", "PersistentVolumeClaim")
                | ("", "PersistentVolume")
                | ("apps", "StatefulSet")
                | ("postgresql.cnpg.io", "Cluster")
        )
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

/// A string map of `metadata.<key>` (labels or annotations).
pub fn string_map(v: &Value, key: &str) -> BTreeMap<String, String> {
    crate::flux::string_map_at(v, &format!("/metadata/{key}"))
}

/// The per-object opt-out Flux honours before deleting, if the object carries one (as a
/// label or an annotation): `prune: disabled`, `reconcile: disabled` or `ssa: Ignore`.
pub fn opt_out(v: &Value) -> Option<String> {
    const OPT_OUTS: &[(&str, &str)] = &[
        ("kustomize.toolkit.fluxcd.io/prune", "disabled"),
        ("kustomize.toolkit.fluxcd.io/reconcile", "disabled"),
        ("kustomize.toolkit.fluxcd.io/ssa", "Ignore"),
    ];
    for key in ["annotations", "labels"] {
        let map = string_map(v, key);
        for (k, val) in OPT_OUTS {
            if map.get(*k).is_some_and(|x| x.eq_ignore_ascii_case(val)) {
                return Some(format!("{k}: {val}"));
            }
        }
    }
    None
}

/// The group and kind of every custom resource a CRD manifest defines.
pub fn crd_kind(v: &Value) -> Option<(String, String, bool)> {
    let spec = v.get("spec")?;
    let group = spec.get("group")?.as_str()?.to_string();
    let kind = spec.get("names")?.get("kind")?.as_str()?.to_string();
    let cluster = spec.get("scope").and_then(Value::as_str) == Some("Cluster");
    Some((group, kind, cluster))
}

/// Namespaces in `ids` that hold a stateful object.
pub fn namespaces_with_state<'a>(ids: impl Iterator<Item = &'a ObjectId>) -> BTreeSet<String> {
    ids.filter(|id| id.is_stateful_kind() && !id.namespace.is_empty())
        .map(|id| id.namespace.clone())
        .collect()
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
