//! Whether deleting an object loses data, judged on the object's own evidence: its kind (a
//! claim, a volume, a StatefulSet, a CloudNativePG Cluster), for a HelmRelease what its own
//! `spec.values` configure, and for a Namespace what the objects inside it hold. A chart is
//! rendered by the `helm` layer is judged by the objects its chart renders (`rendered`); one
//! that is not is judged by its values, and when they do not settle the question it *may*
//! hold data: a third answer, never counted as data loss.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::inventory::Entry;
use super::release::{Release, Rendered};
use crate::kustomize::object::{Cluster, ObjectId};
use crate::pointer::Pointer;

/// What an object holds. The evidence names where the answer comes from: a kind, a values
/// path (`spec.values.persistence.config`), or the object inside a Namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Data {
    /// Deleting it deletes data.
    Holds(String),
    /// It may hold data: what is unknown, and why.
    May(String),
    None,
}

impl Data {
    /// `holds`, `may` or `none`, as JSON prints it.
    pub fn as_str(&self) -> &'static str {
        match self {
            Data::Holds(_) => "holds",
            Data::May(_) => "may",
            Data::None => "none",
        }
    }

    pub fn evidence(&self) -> Option<&str> {
        match self {
            Data::Holds(e) | Data::May(e) => Some(e),
            Data::None => None,
        }
    }

    pub fn holds(&self) -> bool {
        matches!(self, Data::Holds(_))
    }

    pub fn may(&self) -> bool {
        matches!(self, Data::May(_))
    }
}

/// What a kind holds by itself, whatever its spec says.
fn kind_holds(id: &ObjectId) -> Option<&'static str> {
    match (id.group.as_str(), id.kind.as_str()) {
        ("", "PersistentVolumeClaim") => Some("a PersistentVolumeClaim: its volume"),
        ("", "PersistentVolume") => Some("a PersistentVolume"),
        ("apps", "StatefulSet") => Some("a StatefulSet: its volume claims"),
        ("postgresql.cnpg.io", "Cluster") => Some("a CloudNativePG Cluster: its database"),
        _ => None,
    }
}

/// What the object `id` holds; `whole` is the object when the inventory keeps it (a
/// HelmRelease), `rendered` what its chart renders when the `helm` layer ran, `namespaces`
/// what each Namespace holds (see `namespaces`).
pub fn of(
    id: &ObjectId,
    whole: Option<&Value>,
    rendered: Option<&Release>,
    namespaces: &Namespaces,
) -> Data {
    if let Some(kind) = kind_holds(id) {
        return Data::Holds(kind.to_string());
    }
    if id.is("", "Namespace") {
        let key = (id.cluster.clone(), id.name.clone());
        return namespaces.get(&key).cloned().unwrap_or(Data::None);
    }
    if id.is(HELM_GROUP, "HelmRelease") {
        if let Some(r) = rendered.and_then(Release::rendered) {
            return self::rendered(r, true).0;
        }
        let judged = whole.map_or_else(
            || Data::May("the HelmRelease was not read".to_string()),
            release,
        );
        return with_reason(judged, rendered);
    }
    Data::None
}

/// A judgment by values, with why the chart was not rendered when it was tried.
fn with_reason(judged: Data, rendered: Option<&Release>) -> Data {
    match (judged, rendered.and_then(Release::why)) {
        (Data::May(e), Some(why)) => {
            Data::May(e.replace("chart not rendered", &format!("chart not rendered: {why}")))
        }
        (judged, _) => judged,
    }
}

/// What the objects of a rendered release hold: with `uninstall`, what uninstalling it
/// deletes (Helm leaves hooks, the chart's `crds/` and anything annotated
/// `helm.sh/resource-policy: keep`; Kubernetes keeps a StatefulSet's claims unless its
/// `persistentVolumeClaimRetentionPolicy.whenDeleted` is `Delete`), else what they hold at
/// all (a deleted Namespace takes every claim in it). The notes say what holds data and
/// stays, for the reason of an uninstall.
pub fn rendered(r: &Rendered, uninstall: bool) -> (Data, Vec<String>) {
    let mut holds: Vec<String> = Vec::new();
    let mut notes = Vec::new();
    for o in r.objects.iter().filter(|o| o.in_release()) {
        if kind_holds(&o.id).is_none() {
            continue;
        }
        let at = o.at();
        let keep = o.kept();
        if o.id.is("apps", "StatefulSet") {
            let claims: Vec<&str> = o
                .value
                .at_pointer("/spec/volumeClaimTemplates")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|t| t.at_pointer("/metadata/name").and_then(Value::as_str))
                .collect();
            if claims.is_empty() {
                continue;
            }
            let claims = claims.join(", ");
            let deletes = o
                .value
                .at_pointer("/spec/persistentVolumeClaimRetentionPolicy/whenDeleted")
                .and_then(Value::as_str)
                == Some("Delete");
            if !uninstall {
                holds.push(format!(
                    "{at}: the claims of its volumeClaimTemplates ({claims})"
                ));
            } else if deletes && !keep {
                holds.push(format!("{at}: its volume claims ({claims}) go with it (persistentVolumeClaimRetentionPolicy.whenDeleted: Delete)"));
            } else {
                notes.push(format!("the claims of {at} (volumeClaimTemplates {claims}) are not deleted by the uninstall: Kubernetes keeps them (persistentVolumeClaimRetentionPolicy.whenDeleted: Retain, the default)"));
            }
            continue;
        }
        if uninstall && keep {
            notes.push(format!("{at} stays: helm.sh/resource-policy: keep"));
            continue;
        }
        holds.push(if uninstall {
            format!("{at}, which the uninstall deletes")
        } else {
            at
        });
    }
    let data = match holds.len() {
        0 => Data::None,
        1 => Data::Holds(format!("chart {} renders {}", r.chart, holds[0])),
        n => Data::Holds(format!(
            "chart {} renders {} (and {} more)",
            r.chart,
            holds[0],
            n - 1
        )),
    };
    (data, notes)
}

/// What each Namespace holds, by its cluster (`ObjectId::cluster`) and name.
pub type Namespaces = BTreeMap<(Option<Cluster>, String), Data>;

/// What each Namespace holds, by the objects in it: data when one of them holds data (the
/// evidence names the first), else possibly data when one of them may. A HelmRelease counts
/// in the namespace and cluster its chart installs into (`spec.targetNamespace`, else its
/// own; `spec.kubeConfig`'s cluster, else its own).
pub fn namespaces<'a>(objects: impl Iterator<Item = (&'a ObjectId, &'a Entry)>) -> Namespaces {
    let none = Namespaces::new();
    let mut out = Namespaces::new();
    for (id, e) in objects {
        if id.namespace.is_empty() {
            continue;
        }
        let whole = e.whole.as_deref();
        let release = e.release.as_deref();
        let data = match (whole, release.and_then(Release::rendered)) {
            (_, Some(r)) if id.is(HELM_GROUP, "HelmRelease") => rendered(r, false).0,
            (Some(hr), _) if id.is(HELM_GROUP, "HelmRelease") => {
                with_reason(installed(hr), release)
            }
            _ => of(id, whole, release, &none),
        };
        let hr = whole.filter(|_| id.is(HELM_GROUP, "HelmRelease"));
        let ns = hr
            .and_then(|v| v.at_pointer("/spec/targetNamespace"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .unwrap_or(&id.namespace);
        let cluster = match hr {
            Some(v) => crate::flux::inventory::target_cluster(v, id),
            None => id.cluster.clone(),
        };
        let slot = out.entry((cluster, ns.to_string())).or_insert(Data::None);
        match (&data, &*slot) {
            (Data::Holds(e), Data::May(_) | Data::None) => {
                *slot = Data::Holds(format!("{id} holds data ({e})"));
            }
            (Data::May(e), Data::None) => *slot = Data::May(format!("{id} may hold data ({e})")),
            _ => {}
        }
    }
    out.retain(|_, d| *d != Data::None);
    out
}

/// The API group of HelmReleases.
pub const HELM_GROUP: &str = "helm.toolkit.fluxcd.io";

/// The chart a HelmRelease installs, as far as its defaults are known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chart {
    /// bjw-s app-template: it creates nothing persistent by default; each
    /// `persistence.<name>` is enabled by default and is a persistentVolumeClaim unless its
    /// `type` says otherwise (bjw-s common library, `lib/pvc/_enabled_pvcs.tpl`).
    AppTemplate,
    /// A Bitnami chart: `persistence.enabled` defaults to true where the chart has it.
    Bitnami,
    /// Any other chart: its defaults are unknown until it is rendered.
    Other,
}

/// The chart of a HelmRelease: `spec.chart.spec.chart` with its `sourceRef`, or
/// `spec.chartRef` (an OCIRepository or HelmChart named after the chart, by convention).
fn chart_of(hr: &Value) -> (Chart, String) {
    let text = |p: &str| hr.at_pointer(p).and_then(Value::as_str).unwrap_or("");
    let name = match text("/spec/chart/spec/chart") {
        "" => text("/spec/chartRef/name"),
        n => n,
    };
    let source = text("/spec/chart/spec/sourceRef/name");
    // An OCI chart is written `oci://host/path/name`; a chart from a GitRepository as a path.
    let base = name.rsplit('/').next().unwrap_or(name);
    let chart = if base == "app-template" {
        Chart::AppTemplate
    } else if source.contains("bitnami") || name.contains("bitnami") {
        Chart::Bitnami
    } else {
        Chart::Other
    };
    (chart, name.to_string())
}

/// How values are read: for which chart, and whether for what an uninstall deletes (a
/// claim kept through an uninstall still goes with its Namespace).
#[derive(Debug, Clone, Copy)]
struct Judge {
    chart: Chart,
    uninstall: bool,
}

/// What uninstalling a HelmRelease deletes, by what its `spec.values` configure
/// (helm-controller merges `valuesFrom` first and `spec.values` over them: fluxcd/pkg
/// `chartutil.ChartValuesFromReferences`).
pub fn release(hr: &Value) -> Data {
    judge(hr, true)
}

/// What a HelmRelease's chart installs that holds data, kept through an uninstall or not.
fn installed(hr: &Value) -> Data {
    judge(hr, false)
}

fn judge(hr: &Value, uninstall: bool) -> Data {
    let (chart, name) = chart_of(hr);
    let mut seen = Vec::new();
    if let Some(values) = hr.at_pointer("/spec/values") {
        walk(
            values,
            "spec.values",
            Judge { chart, uninstall },
            &mut seen,
            0,
        );
    }
    if let Some(s) = seen.iter().find_map(|s| match s {
        Seen::Claim(e) => Some(e),
        _ => None,
    }) {
        return Data::Holds(s.clone());
    }
    if let Some(s) = seen.iter().find_map(|s| match s {
        Seen::Unsettled(e) => Some(e),
        _ => None,
    }) {
        return Data::May(format!("{s}; chart not rendered"));
    }
    let from: Vec<String> = hr
        .at_pointer("/spec/valuesFrom")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| {
            Some(format!(
                "{}/{}",
                r.get("kind")?.as_str()?,
                r.get("name")?.as_str()?
            ))
        })
        .collect();
    if !from.is_empty() {
        return Data::May(format!(
            "its values come partly from {} (valuesFrom), which is not read; chart not rendered",
            from.join(", ")
        ));
    }
    if !seen.is_empty() || chart == Chart::AppTemplate {
        return Data::None; // every persistence block it configures mounts something else
    }
    let chart = if name.is_empty() { "its chart" } else { &name };
    Data::May(format!(
        "spec.values configure no persistence, and the defaults of {chart} decide; chart not rendered"
    ))
}

/// What one place in the values configures.
#[derive(Debug)]
enum Seen {
    /// A volume claim is created.
    Claim(String),
    /// Storage is configured, and the chart's defaults decide whether it is a claim.
    Unsettled(String),
    /// A persistence block that creates no claim (disabled, an existing claim, another type).
    Off,
}

/// Keys of a persistence block that size or place a claim.
const CLAIM_KEYS: &[&str] = &[
    "size",
    "storageClass",
    "storageClassName",
    "accessMode",
    "accessModes",
];

/// Keys that mark a mapping as one persistence block rather than a map of named ones.
const BLOCK_KEYS: &[&str] = &[
    "enabled",
    "existingClaim",
    "type",
    "size",
    "storageClass",
    "storageClassName",
    "accessMode",
    "accessModes",
    "mountPath",
];

/// Deep enough for any chart's values; deeper input is not read further.
const MAX_DEPTH: usize = 32;

fn walk(v: &Value, path: &str, j: Judge, seen: &mut Vec<Seen>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match v {
        Value::Object(m) => {
            // A disabled component (`postgresql: {enabled: false}`, a subchart) installs
            // nothing, its persistence included.
            if depth > 0 && m.get("enabled") == Some(&Value::Bool(false)) {
                return;
            }
            for (k, child) in m {
                let at = format!("{path}.{k}");
                match k.as_str() {
                    "persistence" | "persistentVolume" => persistence(child, &at, j, seen),
                    "volumeClaimTemplates" if child.as_array().is_some_and(|a| !a.is_empty()) => {
                        seen.push(Seen::Claim(format!(
                            "{at} creates a volume claim for each replica"
                        )));
                    }
                    "volumeClaimTemplate" if child.as_object().is_some_and(|o| !o.is_empty()) => {
                        seen.push(Seen::Claim(format!("{at} creates a volume claim")));
                    }
                    "storage" => storage(child, &at, j, seen, depth + 1),
                    _ => walk(child, &at, j, seen, depth + 1),
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(item, &format!("{path}[{i}]"), j, seen, depth + 1);
            }
        }
        _ => {}
    }
}

/// `storage:` — a CloudNativePG-style `{size, storageClass}` sizes claims the chart creates,
/// but the word means object storage in other charts: settled only by a claim template.
fn storage(v: &Value, path: &str, j: Judge, seen: &mut Vec<Seen>, depth: usize) {
    let Some(m) = v.as_object() else { return };
    let before = seen.len();
    walk(v, path, j, seen, depth);
    if seen.len() == before && CLAIM_KEYS.iter().any(|k| m.contains_key(*k)) {
        seen.push(Seen::Unsettled(format!(
            "{path} sizes storage, and the chart decides what it creates"
        )));
    }
}

/// A `persistence` mapping: one block (`{enabled, size, ...}`, the Bitnami shape) or a map
/// of named blocks (`{config: {type, size}, ...}`, the app-template shape).
fn persistence(v: &Value, path: &str, j: Judge, seen: &mut Vec<Seen>) {
    let Some(m) = v.as_object() else { return };
    if BLOCK_KEYS
        .iter()
        .any(|k| m.get(*k).is_some_and(|x| !x.is_object()))
    {
        // One block: app-template has none (its items are named), so a chart's own default
        // of `enabled` applies.
        let default = match j.chart {
            Chart::Bitnami => Some(true),
            _ => None,
        };
        seen.push(block(m, path, default, j.uninstall));
        return;
    }
    for (name, item) in m {
        let Some(item) = item.as_object() else {
            continue;
        };
        let default = match j.chart {
            Chart::AppTemplate => Some(true),
            Chart::Bitnami | Chart::Other => None,
        };
        seen.push(block(item, &format!("{path}.{name}"), default, j.uninstall));
    }
}

/// One persistence block; `enabled` is the chart's default for `enabled` when known;
/// `uninstall` when what counts is what an uninstall deletes.
fn block(m: &Map<String, Value>, path: &str, enabled: Option<bool>, uninstall: bool) -> Seen {
    let enabled = match m.get("enabled") {
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => None, // a template or a string: only the chart knows
        None => enabled,
    };
    if enabled == Some(false) {
        return Seen::Off;
    }
    if m.get("existingClaim")
        .and_then(Value::as_str)
        .is_some_and(|c| !c.is_empty())
    {
        return Seen::Off; // mounts a claim made elsewhere
    }
    match m.get("type").and_then(Value::as_str) {
        None | Some("persistentVolumeClaim" | "pvc") => {}
        Some(_) => return Seen::Off, // emptyDir, hostPath, nfs, configMap, secret, custom
    }
    // app-template's `retain: true` and a chart's `resourcePolicy: keep` annotate the claim
    // `helm.sh/resource-policy: keep`, which an uninstall leaves in place (bjw-s common
    // library, classes/_pvc.tpl); a deleted Namespace still takes it.
    let kept = m.get("retain") == Some(&Value::Bool(true))
        || m.get("resourcePolicy").and_then(Value::as_str) == Some("keep");
    if uninstall && kept {
        return Seen::Off;
    }
    let sized: Vec<String> = CLAIM_KEYS
        .iter()
        .filter_map(|k| {
            let v = m.get(*k)?;
            let v = match v {
                Value::String(s) => s.clone(),
                Value::Array(a) => a
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(","),
                Value::Null => return None,
                other => other.to_string(),
            };
            Some(format!("{k} {v}"))
        })
        .collect();
    let detail = if sized.is_empty() {
        String::new()
    } else {
        format!(" ({})", sized.join(", "))
    };
    match enabled {
        Some(true) => Seen::Claim(format!("{path} creates a volume claim{detail}")),
        _ if !sized.is_empty() => Seen::Unsettled(format!(
            "{path} sizes a volume{detail} without `enabled`, and the chart's default decides"
        )),
        _ => Seen::Unsettled(format!(
            "{path} configures persistence without `enabled`, and the chart's default decides"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Arc;

    fn rendered_of(objects: Vec<Value>) -> Rendered {
        use crate::flux::release::Object;
        Rendered {
            chart: "db 2.0.0".into(),
            release_name: "db".into(),
            namespace: "data".into(),
            storage_namespace: "data".into(),
            objects: objects
                .into_iter()
                .map(|value| Object {
                    id: ObjectId::of(&value).unwrap(),
                    template: "templates/x.yaml".into(),
                    hook: value
                        .at_pointer("/metadata/annotations/helm.sh~1hook")
                        .is_some(),
                    crd_folder: false,
                    value,
                })
                .collect(),
            secret_strings: Default::default(),
            unchecked: None,
        }
    }

    /// An uninstall deletes the chart's claims but for kept ones and hooks; a StatefulSet's
    /// claims stay unless its retention policy deletes them; a deleted Namespace takes all.
    #[test]
    fn a_rendered_release_is_judged_by_what_its_uninstall_deletes() {
        let pvc = |name: &str, keep: bool| {
            let mut v = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "data"}});
            if keep {
                v["metadata"]["annotations"] = json!({"helm.sh/resource-policy": "keep"});
            }
            v
        };
        let sts = |policy: Option<&str>| {
            let mut v = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": "data"},
                "spec": {"volumeClaimTemplates": [{"metadata": {"name": "data"}}]}});
            if let Some(p) = policy {
                v["spec"]["persistentVolumeClaimRetentionPolicy"] = json!({"whenDeleted": p});
            }
            v
        };
        let (d, notes) = rendered(&rendered_of(vec![sts(None)]), true);
        assert_eq!(d, Data::None);
        assert!(
            notes[0].contains("not deleted by the uninstall"),
            "{notes:?}"
        );
        assert!(rendered(&rendered_of(vec![sts(None)]), false).0.holds());
        assert!(rendered(&rendered_of(vec![sts(Some("Delete"))]), true)
            .0
            .holds());
        let (d, notes) = rendered(&rendered_of(vec![pvc("kept", true)]), true);
        assert_eq!(d, Data::None);
        assert!(notes[0].contains("resource-policy: keep"));
        assert!(rendered(&rendered_of(vec![pvc("kept", true)]), false)
            .0
            .holds());
        let mut hook = pvc("hook", false);
        hook["metadata"]["annotations"] = json!({"helm.sh/hook": "pre-install"});
        assert_eq!(rendered(&rendered_of(vec![hook]), true).0, Data::None);
        let Data::Holds(e) = rendered(&rendered_of(vec![pvc("a", false), pvc("b", false)]), true).0
        else {
            panic!("a claim holds data");
        };
        assert!(
            e.contains("PersistentVolumeClaim data/a") && e.contains("(and 1 more)"),
            "{e}"
        );
    }

    fn hr(chart: &str, source: &str, values: Value) -> Value {
        json!({
            "apiVersion": "helm.toolkit.fluxcd.io/v2",
            "kind": "HelmRelease",
            "metadata": {"name": "app", "namespace": "media"},
            "spec": {
                "chart": {"spec": {"chart": chart, "sourceRef": {"kind": "HelmRepository", "name": source}}},
                "values": values,
            },
        })
    }

    fn app(values: Value) -> Data {
        release(&hr("app-template", "bjw-s", values))
    }

    fn other(values: Value) -> Data {
        release(&hr("gitea", "gitea-charts", values))
    }

    #[test]
    fn app_template_items_are_claims_unless_they_mount_something_else() {
        // bjw-s common library, lib/pvc/_enabled_pvcs.tpl: `enabled` defaults to true and
        // `type` to persistentVolumeClaim; an `existingClaim` makes no claim.
        assert_eq!(
            app(json!({"persistence": {"config": {"size": "1Gi", "accessMode": "ReadWriteOnce"}}})),
            Data::Holds(
                "spec.values.persistence.config creates a volume claim (size 1Gi, accessMode ReadWriteOnce)"
                    .into()
            )
        );
        assert!(
            app(json!({"persistence": {"config": {"type": "persistentVolumeClaim", "storageClass": "ceph-block", "size": "5Gi"}}}))
                .holds()
        );
        for off in [
            json!({"config": {"existingClaim": "media"}}),
            json!({"tmp": {"type": "emptyDir"}}),
            json!({"host": {"type": "hostPath", "hostPath": "/dev"}}),
            json!({"nas": {"type": "nfs", "server": "nas", "path": "/media"}}),
            json!({"cfg": {"type": "configMap", "name": "cfg"}, "sec": {"type": "secret", "name": "s"}}),
            json!({"config": {"enabled": false, "size": "1Gi"}}),
        ] {
            assert_eq!(app(json!({ "persistence": off })), Data::None, "{off}");
        }
        // Nothing configured: app-template creates nothing persistent by itself.
        assert_eq!(app(json!({"controllers": {"main": {}}})), Data::None);
        // The same chart through `chartRef`, and as an OCI reference.
        let by_ref = json!({"spec": {"chartRef": {"kind": "OCIRepository", "name": "app-template"}, "values": {}}});
        assert_eq!(release(&by_ref), Data::None);
        let oci = hr("oci://ghcr.io/bjw-s/helm/app-template", "x", json!({}));
        assert_eq!(release(&oci), Data::None);
    }

    #[test]
    fn a_claim_kept_through_an_uninstall_still_goes_with_its_namespace() {
        let retained = hr(
            "app-template",
            "bjw-s",
            json!({"persistence": {"config": {"size": "1Gi", "accessMode": "ReadWriteOnce", "retain": true}}}),
        );
        assert_eq!(release(&retained), Data::None);
        assert!(installed(&retained).holds());
        let harbor = hr(
            "harbor",
            "harbor",
            json!({"persistence": {"enabled": true, "resourcePolicy": "keep"}}),
        );
        assert_eq!(release(&harbor), Data::None);
        assert!(installed(&harbor).holds());
    }

    #[test]
    fn bitnami_blocks_are_enabled_by_default() {
        let bitnami = |v: Value| release(&hr("postgresql", "bitnami", v));
        assert!(bitnami(json!({"primary": {"persistence": {"size": "8Gi"}}})).holds());
        assert!(bitnami(json!({"persistence": {"enabled": true}})).holds());
        assert_eq!(
            bitnami(json!({"primary": {"persistence": {"enabled": false}}})),
            Data::None
        );
        assert_eq!(
            bitnami(json!({"persistence": {"existingClaim": "pg-data"}})),
            Data::None
        );
        // Values that say nothing leave the chart's defaults, unknown here.
        assert!(bitnami(json!({"auth": {"database": "app"}})).may());
    }

    #[test]
    fn an_unknown_chart_with_a_size_but_no_enabled_may_hold_data() {
        let d = other(json!({"persistence": {"size": "10Gi"}}));
        assert!(d.may(), "{d:?}");
        assert!(
            d.evidence().unwrap().contains("spec.values.persistence"),
            "{d:?}"
        );
        assert!(other(json!({"persistence": {"enabled": true, "size": "10Gi"}})).holds());
        assert!(other(json!({"redis": {"master": {"persistence": {"enabled": true}}}})).holds());
        // A disabled subchart installs nothing, its persistence included.
        assert_eq!(
            other(
                json!({"postgresql": {"enabled": false, "primary": {"persistence": {"enabled": true}}}, "persistence": {"enabled": false}})
            ),
            Data::None
        );
        // No values at all: the chart decides.
        let d = release(&hr("gitea", "gitea-charts", Value::Null));
        assert!(d.may() && d.evidence().unwrap().contains("gitea"), "{d:?}");
    }

    #[test]
    fn claim_templates_hold_data_wherever_they_are() {
        let prometheus = json!({"prometheus": {"prometheusSpec": {"storageSpec": {"volumeClaimTemplate": {"spec": {"resources": {"requests": {"storage": "50Gi"}}}}}}}});
        assert_eq!(
            other(prometheus),
            Data::Holds("spec.values.prometheus.prometheusSpec.storageSpec.volumeClaimTemplate creates a volume claim".into())
        );
        let sts = json!({"controllers": {"main": {"type": "statefulset", "statefulset": {"volumeClaimTemplates": [{"name": "data", "size": "1Gi"}]}}}});
        assert!(app(sts).holds());
        // CloudNativePG's cluster chart: `cluster.storage.size` sizes the instances' claims.
        assert!(other(json!({"cluster": {"storage": {"size": "8Gi"}}})).may());
        // Object storage is no claim.
        assert!(other(json!({"storage": {"type": "s3", "bucket": "x"}})).may());
        assert!(
            other(json!({"storage": {"volumeClaimTemplate": {}}})).may(),
            "an empty template makes nothing"
        );
    }

    #[test]
    fn values_from_unread_leave_it_open_unless_the_inline_values_settle_it() {
        let mut v = hr(
            "gitea",
            "gitea-charts",
            json!({"persistence": {"enabled": false}}),
        );
        v["spec"]["valuesFrom"] = json!([{"kind": "ConfigMap", "name": "gitea-values"}]);
        let d = release(&v);
        assert!(
            d.may() && d.evidence().unwrap().contains("ConfigMap/gitea-values"),
            "{d:?}"
        );
        // `spec.values` are merged last, so a claim they create stands.
        v["spec"]["values"] = json!({"persistence": {"enabled": true}});
        assert!(release(&v).holds());
    }

    #[test]
    fn kinds_hold_data_and_namespaces_by_what_is_inside() {
        let id = |group: &str, kind: &str, ns: &str, name: &str| ObjectId {
            group: group.into(),
            kind: kind.into(),
            namespace: ns.into(),
            name: name.into(),
            cluster: None,
        };
        let none = BTreeMap::new();
        assert!(of(
            &id("", "PersistentVolumeClaim", "a", "x"),
            None,
            None,
            &none
        )
        .holds());
        assert!(of(
            &id("postgresql.cnpg.io", "Cluster", "a", "x"),
            None,
            None,
            &none
        )
        .holds());
        assert_eq!(
            of(&id("apps", "Deployment", "a", "x"), None, None, &none),
            Data::None
        );
        assert_eq!(
            of(&id("", "Namespace", "", "a"), None, None, &none),
            Data::None
        );
        let owner = std::sync::Arc::new(id(KUSTOMIZE, "Kustomization", "flux-system", "apps"));
        let entry = |whole: Option<Value>| Entry {
            owner: owner.clone(),
            file: "apps/x.yaml".into(),
            index: 0,
            facts: Default::default(),
            whole: whole.map(std::sync::Arc::new),
            packed: None,
            print: None,
            release: None,
        };
        let pvc = id("", "PersistentVolumeClaim", "db", "data");
        let web = id(HELM_GROUP, "HelmRelease", "flux-system", "web");
        let mut target = hr(
            "app-template",
            "bjw-s",
            json!({"persistence": {"data": {"size": "1Gi"}}}),
        );
        target["spec"]["targetNamespace"] = json!("web");
        let unknown = id(HELM_GROUP, "HelmRelease", "tools", "gitea");
        let cm = id("", "ConfigMap", "cfg", "c");
        let entries = [
            (pvc, entry(None)),
            (web, entry(Some(target))),
            (unknown, entry(Some(hr("gitea", "gitea-charts", json!({}))))),
            (cm, entry(None)),
        ];
        let ns = namespaces(entries.iter().map(|(i, e)| (i, e)));
        assert_eq!(
            ns.get(&(None, "db".into())),
            Some(&Data::Holds(
                "PersistentVolumeClaim/db/data holds data (a PersistentVolumeClaim: its volume)"
                    .into()
            ))
        );
        assert!(
            ns.get(&(None, "web".into())).is_some_and(Data::holds),
            "{ns:?}"
        );
        assert!(!ns.contains_key(&(None, "flux-system".into())), "{ns:?}");
        assert!(
            ns.get(&(None, "tools".into())).is_some_and(Data::may),
            "{ns:?}"
        );
        assert!(!ns.contains_key(&(None, "cfg".into())));
        assert!(of(&id("", "Namespace", "", "db"), None, None, &ns).holds());
        // A Namespace of the same name in another cluster holds what is there only.
        let elsewhere = ObjectId {
            cluster: Some(Arc::new("Secret/staging/cluster-kubeconfig".into())),
            ..id("", "Namespace", "", "db")
        };
        assert_eq!(of(&elsewhere, None, None, &ns), Data::None);
    }

    const KUSTOMIZE: &str = "kustomize.toolkit.fluxcd.io";
}
