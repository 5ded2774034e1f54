//! The Flux model: Flux Kustomizations as fluxwave reads them (`FluxKustomization`), what
//! fluxwave emits (`emit`), an environment built as Flux builds it with the inventory of
//! which Kustomization applies each object (`inventory`), and SOPS decryption patches
//! (`decryption`).

pub mod decryption;
pub mod emit;
pub mod inventory;

use serde_json::Value;

pub use crate::kustomize::object::{string_map_at, KUSTOMIZE_GROUP};
pub const KUSTOMIZE_API: &str = "kustomize.toolkit.fluxcd.io/v1";
pub const KUSTOMIZATION_API: &str = "kustomize.config.k8s.io/v1beta1";

/// A Flux Kustomization as read from a file: the fields fluxwave reasons about.
#[derive(Debug, Clone)]
pub struct FluxKustomization {
    pub name: String,
    pub namespace: String,
    /// `spec.path`, normalised (no leading `./`, no trailing `/`); empty for the root.
    pub path: String,
    pub has_decryption: bool,
    pub labels: std::collections::BTreeMap<String, String>,
    pub annotations: std::collections::BTreeMap<String, String>,
    pub object: Value,
}

impl FluxKustomization {
    /// The Flux Kustomization in a parsed document, if it is one.
    pub fn from_value(doc: &Value) -> Option<FluxKustomization> {
        let api = doc.get("apiVersion")?.as_str()?;
        if !api.starts_with(&format!("{KUSTOMIZE_GROUP}/"))
            || doc.get("kind")?.as_str()? != "Kustomization"
        {
            return None;
        }
        let meta = doc.get("metadata")?;
        let strings = |key: &str| string_map_at(meta, &format!("/{key}"));
        let spec = doc.get("spec");
        Some(FluxKustomization {
            name: meta.get("name")?.as_str()?.to_string(),
            namespace: meta
                .get("namespace")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            path: normalize_path(
                spec.and_then(|s| s.get("path"))
                    .and_then(Value::as_str)
                    .unwrap_or(""),
            ),
            has_decryption: spec
                .and_then(|s| s.get("decryption"))
                .is_some_and(Value::is_object),
            labels: strings("labels"),
            annotations: strings("annotations"),
            object: doc.clone(),
        })
    }
}

/// `./apps/` -> `apps`; `./` -> ``.
pub fn normalize_path(p: &str) -> String {
    p.split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_flux_kustomizations_only() {
        let doc: Value = serde_saphyr::from_str("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: apps, namespace: flux-system}\nspec: {path: ./apps/}\n").unwrap();
        let k = FluxKustomization::from_value(&doc).unwrap();
        assert_eq!((k.name.as_str(), k.path.as_str()), ("apps", "apps"));
        let doc: Value = serde_saphyr::from_str(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n",
        )
        .unwrap();
        assert!(FluxKustomization::from_value(&doc).is_none());
    }
}
