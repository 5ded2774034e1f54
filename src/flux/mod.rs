//! The Flux model: Flux Kustomizations as fluxwave reads them (`Kustomization`), what
//! fluxwave emits (`emit`), an environment built as Flux builds it with the inventory of
//! which Kustomization applies each object (`inventory`) from the artifact of its source
//! (`source`, which also names the kinds of Flux's sources), the kustomization Flux builds
//! at a Kustomization's `spec.path` (`generated`), what a build keeps of each object
//! (`facts`) and the form it holds objects in (`packed`), `postBuild` variable substitution
//! (`substitute`) with what a mutating webhook adds to it (`admission`), Flux Operator
//! ResourceSets rendered by the user's flux-operator (`resource_set`), SOPS decryption
//! patches (`decryption`), whether deleting an object loses data (`data`), and the health
//! gates the Kustomizations of a build form (`gates`).

pub mod admission;
pub mod artifact;
pub mod data;
pub mod decryption;
pub mod discover;
pub mod emit;
pub mod facts;
pub mod gates;
pub mod generated;
pub mod inventory;
pub mod packed;
pub mod release;
pub mod resource_set;
pub mod source;
pub mod substitute;

use std::collections::BTreeMap;

use serde::de::{DeserializeOwned, Deserializer};
use serde::Deserialize;
use serde_json::{Map, Value};

pub use crate::kustomize::object::string_map_at;
pub use source::{SourceKind, SourceRef};
/// The API group of Flux Kustomizations.
pub const KUSTOMIZE_GROUP: &str = "kustomize.toolkit.fluxcd.io";
pub const KUSTOMIZE_API: &str = "kustomize.toolkit.fluxcd.io/v1";
pub const KUSTOMIZATION_API: &str = "kustomize.config.k8s.io/v1beta1";

/// A Flux Kustomization (`kustomize.toolkit.fluxcd.io`), read once into types: every command
/// that reasons about one (the inventory's owners, `plan`'s retired Kustomization) reads it
/// through here. A field of the wrong type reads as absent, and a `dependsOn` entry without a
/// name is left out: the API server would refuse such an object, and fluxwave reports what
/// it can rather than nothing.
#[derive(Debug, Clone)]
pub struct Kustomization {
    pub name: String,
    /// As written; empty when the document names none.
    pub namespace: String,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub spec: KustomizationSpec,
    /// The document as read.
    pub object: Value,
}

/// The fields of `spec` fluxwave reasons about.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KustomizationSpec {
    /// `spec.path`, normalised (no leading `./`, no trailing `/`); empty for the root.
    #[serde(default, deserialize_with = "lenient")]
    pub path: String,
    #[serde(default, deserialize_with = "lenient")]
    pub prune: bool,
    /// MirrorPrune (the default), Delete, WaitForTermination or Orphan.
    #[serde(default, deserialize_with = "lenient")]
    pub deletion_policy: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub suspend: bool,
    #[serde(default, deserialize_with = "lenient_items")]
    pub depends_on: Vec<DependsOn>,
    /// As written: its namespace defaults to the Kustomization's.
    #[serde(default, deserialize_with = "lenient")]
    pub source_ref: SourceRef,
    #[serde(default, deserialize_with = "lenient")]
    pub decryption: Option<Map<String, Value>>,
    #[serde(default, deserialize_with = "lenient")]
    pub post_build: Option<Map<String, Value>>,
}

/// A `spec.dependsOn` entry; the namespace defaults to the dependant's.
#[derive(Debug, Clone, Deserialize)]
pub struct DependsOn {
    pub name: String,
    #[serde(default, deserialize_with = "lenient")]
    pub namespace: Option<String>,
}

/// A field that does not read as `T` reads as `T::default()`.
fn lenient<'de, D: Deserializer<'de>, T: DeserializeOwned + Default>(d: D) -> Result<T, D::Error> {
    Ok(serde_json::from_value(Value::deserialize(d)?).unwrap_or_default())
}

/// A list whose entries that do not read as `T` are left out (a list that is not a list is
/// empty).
fn lenient_items<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Vec<T>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Array(items) => items
            .into_iter()
            .filter_map(|v| serde_json::from_value(v).ok())
            .collect(),
        _ => Vec::new(),
    })
}

impl Kustomization {
    /// Whether a parsed document is a Flux Kustomization.
    pub fn is(doc: &Value) -> bool {
        doc.get("kind").and_then(Value::as_str) == Some("Kustomization")
            && doc
                .get("apiVersion")
                .and_then(Value::as_str)
                .is_some_and(|a| {
                    a.strip_prefix(KUSTOMIZE_GROUP)
                        .is_some_and(|v| v.starts_with('/'))
                })
    }

    /// The Flux Kustomization in a parsed document, if it is one (with a name).
    pub fn from_value(doc: &Value) -> Option<Kustomization> {
        if !Kustomization::is(doc) {
            return None;
        }
        let meta = doc.get("metadata")?;
        let strings = |key: &str| string_map_at(meta, &format!("/{key}"));
        let mut spec = match doc.get("spec") {
            Some(spec) => KustomizationSpec::deserialize(spec).unwrap_or_default(),
            None => KustomizationSpec::default(),
        };
        spec.path = normalize_path(&spec.path);
        Some(Kustomization {
            name: meta.get("name")?.as_str()?.to_string(),
            namespace: meta
                .get("namespace")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            labels: strings("labels"),
            annotations: strings("annotations"),
            spec,
            object: doc.clone(),
        })
    }
}

/// A path in a source's artifact as Flux resolves it (`securejoin.SecureJoin` of the
/// artifact's folder and the path, as kustomize-controller joins `spec.path` and
/// source-controller a chart's path and values files): `./apps/` -> `apps`, `./` -> ``, and
/// `..` never above the root (`../../etc` -> `etc`, `/etc` -> `etc`). Links are no concern:
/// an artifact holds none.
pub fn normalize_path(p: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// cyphar/filepath-securejoin's `SecureJoin` on a root without links: `..` stops at the
    /// root, an absolute path is read under it.
    #[test]
    fn paths_are_joined_as_securejoin_joins_them() {
        for (path, joined) in [
            ("./apps/", "apps"),
            ("./", ""),
            ("", ""),
            ("apps//dev/./x", "apps/dev/x"),
            ("../apps", "apps"),
            ("../../../etc/passwd", "etc/passwd"),
            ("/etc/passwd", "etc/passwd"),
            ("a/../../b", "b"),
            ("a/b/../c", "a/c"),
            ("..", ""),
        ] {
            assert_eq!(normalize_path(path), joined, "{path:?}");
        }
    }

    #[test]
    fn reads_flux_kustomizations_only() {
        let doc: Value = serde_saphyr::from_str("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: apps, namespace: flux-system}\nspec: {path: ./apps/}\n").unwrap();
        let k = Kustomization::from_value(&doc).unwrap();
        assert_eq!((k.name.as_str(), k.spec.path.as_str()), ("apps", "apps"));
        let doc: Value = serde_saphyr::from_str(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n",
        )
        .unwrap();
        assert!(Kustomization::from_value(&doc).is_none());
    }

    /// Each field is read on its own: one of the wrong type is absent, the others are kept.
    #[test]
    fn a_field_of_the_wrong_type_reads_as_absent() {
        let doc: Value = serde_saphyr::from_str("apiVersion: kustomize.toolkit.fluxcd.io/v1beta2\nkind: Kustomization\nmetadata: {name: apps, labels: {a: b, n: 1}}\nspec:\n  path: ./apps\n  prune: 'yes'\n  suspend: true\n  dependsOn: [{name: infra}, {namespace: x}, 3, {name: db, namespace: data}]\n  sourceRef: {kind: GitRepository, name: 7}\n  decryption: sops\n  postBuild: {substitute: {A: b}}\n").unwrap();
        let k = Kustomization::from_value(&doc).unwrap();
        assert_eq!(k.namespace, "");
        assert_eq!(k.labels.len(), 1);
        let s = &k.spec;
        assert_eq!((s.path.as_str(), s.prune, s.suspend), ("apps", false, true));
        let deps: Vec<(&str, Option<&str>)> = s
            .depends_on
            .iter()
            .map(|d| (d.name.as_str(), d.namespace.as_deref()))
            .collect();
        assert_eq!(deps, [("infra", None), ("db", Some("data"))]);
        assert_eq!(
            (s.source_ref.kind.as_str(), s.source_ref.name.as_str()),
            ("GitRepository", "")
        );
        assert!(s.decryption.is_none() && s.post_build.is_some());
        let doc: Value = serde_saphyr::from_str("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: a}\nspec: nothing\n").unwrap();
        assert_eq!(Kustomization::from_value(&doc).unwrap().spec.path, "");
        let doc: Value = serde_saphyr::from_str("apiVersion: kustomize.toolkit.fluxcd.iox/v1\nkind: Kustomization\nmetadata: {name: a}\n").unwrap();
        assert!(!Kustomization::is(&doc));
    }
}
