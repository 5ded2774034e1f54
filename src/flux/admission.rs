//! Variables a mutating webhook adds to Flux Kustomizations as the API server admits them:
//! the `kustomize-mutating-webhook` chart (github.com/xunholy/fluxcd-kustomize-mutating-webhook)
//! reads the `data` of the ConfigMaps and Secrets its values name, in the release's
//! namespace, and its `createPatch` (`internal/handlers/mutate.go`) adds every key to
//! `spec.postBuild.substitute` of each Kustomization created or updated in a namespace its
//! `webhook.namespaceSelector` matches, with `add` operations that replace a key the
//! Kustomization sets itself. So such a Kustomization substitutes even without
//! `postBuild` in git, and a variable only the webhook's sources set is defined.
//!
//! What the chart's values say when they leave a field out (chart 0.12.0, `values.yaml`):
//! `configMaps: [{name: cluster-config}]`, `secrets: []`, and a `namespaceSelector` that
//! leaves out `flux-system`. The webhook reads the ConfigMaps (by name, sorted) and then the
//! Secrets (sorted), a later key replacing an earlier one (`reloadConfig`); a source it
//! cannot read sets nothing. A ConfigMap the values `create` is made by the chart, with the
//! values' `data`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::substitute::Source;
use crate::kustomize::object::ObjectId;
use crate::pointer::Pointer;

/// The chart's name, as a HelmRelease's `chart.spec.chart` or the last segment of the OCI
/// repository it comes from.
const CHART: &str = "kustomize-mutating-webhook";

/// The webhook of an environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admission {
    /// The HelmRelease that installs it.
    pub release: ObjectId,
    /// What it adds, `None` when its values cannot be read (any variable may come from it).
    pub sources: Option<Vec<Admitted>>,
    /// The namespaces whose Kustomizations it changes.
    selector: Selector,
}

/// One source of the webhook's variables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admitted {
    /// A ConfigMap or Secret in the release's namespace, read as the cluster has it.
    Object(ObjectId),
    /// A ConfigMap the chart makes from its values.
    Made(String, BTreeMap<String, String>),
}

/// A namespace selector on `kubernetes.io/metadata.name`, the label the API server gives
/// every namespace its own name in; one on other labels is taken to match every namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Selector {
    Names {
        within: Option<BTreeSet<String>>,
        without: BTreeSet<String>,
    },
    Any,
}

impl Admission {
    /// Whether it changes the Kustomizations of `namespace`.
    pub fn covers(&self, namespace: &str) -> bool {
        match &self.selector {
            Selector::Any => true,
            Selector::Names { within, without } => {
                within.as_ref().is_none_or(|w| w.contains(namespace))
                    && !without.contains(namespace)
            }
        }
    }

    /// How a message names it.
    pub fn describe(&self) -> String {
        format!(
            "the {CHART} of HelmRelease {}/{}",
            self.release.namespace, self.release.name
        )
    }
}

/// The webhook among `objects` (HelmReleases and the OCIRepositories their charts come from,
/// held whole), its values composed from `sources` as helm-controller composes them.
pub fn of<'a>(
    mut whole: impl FnMut(&ObjectId) -> Option<&'a Value>,
    releases: impl Iterator<Item = (&'a ObjectId, &'a Value)>,
    sources: &BTreeMap<ObjectId, Source>,
) -> Option<Admission> {
    let (id, hr) = releases
        .filter(|(id, hr)| is_webhook(id, hr, &mut whole))
        .min_by(|a, b| a.0.cmp(b.0))?;
    let namespace = hr
        .at_pointer("/spec/targetNamespace")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .unwrap_or(&id.namespace);
    let values = crate::helm::values::compose(hr, id, sources)
        .ok()
        .map(|c| c.values);
    let selector = values
        .as_ref()
        .and_then(|v| v.at_pointer("/webhook/namespaceSelector"))
        .map_or_else(default_selector, selector);
    Some(Admission {
        release: id.clone(),
        sources: values.map(|v| admitted(&v, namespace)),
        selector,
    })
}

/// Whether HelmRelease `hr` (`id`) installs the webhook's chart.
fn is_webhook<'a>(
    id: &ObjectId,
    hr: &Value,
    whole: &mut impl FnMut(&ObjectId) -> Option<&'a Value>,
) -> bool {
    let text = |p: &str| hr.at_pointer(p).and_then(Value::as_str).unwrap_or("");
    if text("/spec/chart/spec/chart") == CHART {
        return true;
    }
    if text("/spec/chartRef/kind") != "OCIRepository" {
        return false;
    }
    let repo = ObjectId {
        group: super::source::SOURCE_GROUP.into(),
        kind: "OCIRepository".into(),
        namespace: match text("/spec/chartRef/namespace") {
            "" => id.namespace.clone(),
            n => n.into(),
        },
        name: text("/spec/chartRef/name").into(),
        cluster: id.cluster.clone(),
    };
    whole(&repo)
        .and_then(|r| r.at_pointer("/spec/url"))
        .and_then(Value::as_str)
        .is_some_and(|url| crate::helm::chart::oci_chart_name(url) == CHART)
}

/// The chart's own `namespaceSelector`: every namespace but `flux-system`.
fn default_selector() -> Selector {
    Selector::Names {
        within: None,
        without: BTreeSet::from(["flux-system".to_string()]),
    }
}

/// A `namespaceSelector` as the API server matches it, read where it names namespaces by
/// `kubernetes.io/metadata.name`.
fn selector(v: &Value) -> Selector {
    const NAME: &str = "kubernetes.io/metadata.name";
    let (mut within, mut without): (Option<BTreeSet<String>>, BTreeSet<String>) =
        (None, BTreeSet::new());
    let narrow = |within: &mut Option<BTreeSet<String>>, names: BTreeSet<String>| {
        *within = Some(match within.take() {
            Some(w) => w.intersection(&names).cloned().collect(),
            None => names,
        });
    };
    if let Some(labels) = v.get("matchLabels").and_then(Value::as_object) {
        for (k, val) in labels {
            match (k.as_str(), val.as_str()) {
                (NAME, Some(n)) => narrow(&mut within, BTreeSet::from([n.to_string()])),
                _ => return Selector::Any,
            }
        }
    }
    for e in v
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let text = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("");
        let names: BTreeSet<String> = crate::kustomize::object::strings_at(e, "values");
        match (text("key"), text("operator")) {
            (NAME, "In") => narrow(&mut within, names),
            (NAME, "NotIn") => without.extend(names),
            _ => return Selector::Any,
        }
    }
    Selector::Names { within, without }
}

/// The sources the values name, in the order the webhook reads them.
fn admitted(values: &Value, namespace: &str) -> Vec<Admitted> {
    let default = serde_json::json!([{ "name": "cluster-config" }]);
    let listed = |key: &str, default: &Value| -> Vec<Value> {
        match values.get(key) {
            Some(Value::Array(a)) => a.clone(),
            Some(_) => Vec::new(),
            None => default.as_array().cloned().unwrap_or_default(),
        }
    };
    let mut out = Vec::new();
    for (kind, entries) in [
        ("ConfigMap", listed("configMaps", &default)),
        ("Secret", listed("secrets", &Value::Null)),
    ] {
        let mut named: Vec<(String, &Value)> = entries
            .iter()
            .filter_map(|e| Some((e.get("name")?.as_str()?.to_string(), e)))
            .filter(|(n, _)| !n.is_empty())
            .collect();
        named.sort_by(|a, b| a.0.cmp(&b.0));
        named.dedup_by(|a, b| a.0 == b.0);
        for (name, e) in named {
            let made =
                kind == "ConfigMap" && e.get("create").and_then(Value::as_bool) == Some(true);
            out.push(if made {
                Admitted::Made(name, crate::flux::string_map_at(e, "/data"))
            } else {
                Admitted::Object(ObjectId {
                    group: String::new(),
                    kind: kind.into(),
                    namespace: namespace.into(),
                    name,
                    cluster: None,
                })
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn id(kind: &str, ns: &str, name: &str) -> ObjectId {
        ObjectId {
            group: if kind == "HelmRelease" {
                "helm.toolkit.fluxcd.io".into()
            } else if kind == "OCIRepository" {
                "source.toolkit.fluxcd.io".into()
            } else {
                String::new()
            },
            kind: kind.into(),
            namespace: ns.into(),
            name: name.into(),
            cluster: None,
        }
    }

    fn found(hr: &Value, repo: Option<&Value>) -> Option<Admission> {
        let hr_id = id("HelmRelease", "flux-system", "webhook");
        let repo_id = id("OCIRepository", "flux-system", "webhook-chart");
        let objects: Vec<(ObjectId, Value)> = vec![(hr_id, hr.clone())];
        of(
            |i| (*i == repo_id).then_some(repo).flatten(),
            objects.iter().map(|(i, v)| (i, v)),
            &BTreeMap::new(),
        )
    }

    /// The chart found by its name or by the OCI repository it comes from; another chart is
    /// not it.
    #[test]
    fn finds_the_chart_by_name_or_by_its_oci_repository() {
        let by_name = json!({"spec": {"chart": {"spec": {"chart": "kustomize-mutating-webhook"}}}});
        assert!(found(&by_name, None).is_some());
        let by_ref =
            json!({"spec": {"chartRef": {"kind": "OCIRepository", "name": "webhook-chart"}}});
        let repo =
            json!({"spec": {"url": "oci://ghcr.io/xunholy/charts/kustomize-mutating-webhook"}});
        assert!(found(&by_ref, Some(&repo)).is_some());
        let other = json!({"spec": {"url": "oci://ghcr.io/bjw-s/helm/app-template"}});
        assert!(found(&by_ref, Some(&other)).is_none());
        assert!(found(&by_ref, None).is_none());
    }

    /// Without values: the chart's `cluster-config`, in every namespace but flux-system.
    #[test]
    fn the_charts_defaults_read_cluster_config_outside_flux_system() {
        let hr = json!({"spec": {"chart": {"spec": {"chart": "kustomize-mutating-webhook"}}}});
        let a = found(&hr, None).unwrap();
        assert_eq!(
            a.sources,
            Some(vec![Admitted::Object(id(
                "ConfigMap",
                "flux-system",
                "cluster-config"
            ))])
        );
        assert!(a.covers("apps") && !a.covers("flux-system"));
    }

    /// ConfigMaps sorted, then Secrets sorted; a made ConfigMap holds the values' data; the
    /// release's `targetNamespace` is where they are read; a selector by name is matched.
    #[test]
    fn reads_its_sources_and_selector_from_the_values() {
        let hr = json!({"spec": {
            "chart": {"spec": {"chart": "kustomize-mutating-webhook"}},
            "targetNamespace": "hooks",
            "values": {
                "configMaps": [{"name": "zz"}, {"name": "made", "create": true, "data": {"A": "1"}}],
                "secrets": [{"name": "s2"}, {"name": "s1"}],
                "webhook": {"namespaceSelector": {"matchExpressions": [
                    {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["a", "b"]},
                    {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["b"]}
                ]}}
            }
        }});
        let a = found(&hr, None).unwrap();
        assert_eq!(
            a.sources,
            Some(vec![
                Admitted::Made("made".into(), BTreeMap::from([("A".into(), "1".into())])),
                Admitted::Object(id("ConfigMap", "hooks", "zz")),
                Admitted::Object(id("Secret", "hooks", "s1")),
                Admitted::Object(id("Secret", "hooks", "s2")),
            ])
        );
        assert!(a.covers("a") && !a.covers("b") && !a.covers("c"));
        // A selector on another label may match any namespace.
        let hr = json!({"spec": {
            "chart": {"spec": {"chart": "kustomize-mutating-webhook"}},
            "values": {"webhook": {"namespaceSelector": {"matchLabels": {"team": "x"}}}}
        }});
        assert!(found(&hr, None).unwrap().covers("flux-system"));
    }

    /// Values that cannot be read (a `valuesFrom` nothing builds): what it adds is unknown.
    #[test]
    fn values_it_cannot_read_leave_what_it_adds_unknown() {
        let hr = json!({"spec": {
            "chart": {"spec": {"chart": "kustomize-mutating-webhook"}},
            "valuesFrom": [{"kind": "ConfigMap", "name": "nowhere"}]
        }});
        assert_eq!(found(&hr, None).unwrap().sources, None);
    }
}
