//! One object of a build (`Resource`): where it came from, the names it had before a
//! transformer renamed it, and, until a patch needs it whole, only its head and the facts of
//! the rest.

use serde_json::{Map, Value};
use std::collections::BTreeMap;

use super::error::BuildError;
use super::object::{
    group_of, kept_whole, string_map, version_of, Facts, ObjectId, KUSTOMIZE_GROUP,
};
use super::target::{ObjectRef, PatchTarget};
use crate::tree::FileTree;
use crate::yaml;

/// The objects a build (or a part of one) yields, or why it fails.
pub(super) type Built = Result<Vec<Resource>, BuildError>;

/// One object of a build, with where it came from (its file and document index) and the
/// names it had before `namePrefix`/`namespace` changed them (patch targets match either).
#[derive(Debug, Clone)]
pub struct Resource {
    /// The object; while `rest` is set, only its `apiVersion`, `kind` and `metadata`.
    pub value: Value,
    /// What the inventory needs of the rest of an object loaded from a file, kept instead
    /// of the rest itself until a patch needs the object whole (`make_whole`): a build of a
    /// large app tier holds hundreds of thousands of objects, and their specs are most of
    /// the memory. Transformers other than patches change only the head.
    rest: Option<Rest>,
    pub file: String,
    pub index: usize,
    pub(super) previous: Vec<(String, String)>,
}

#[derive(Debug, Clone)]
struct Rest {
    /// The object's position in its document's `items`, when the document is a List.
    item: Option<usize>,
    facts: Facts,
}

/// The keys a build reads and transforms without a patch.
const HEAD: [&str; 3] = ["apiVersion", "kind", "metadata"];

impl Resource {
    /// An object as loaded from document `index` of `file` (item `item` of a List): split
    /// into its head and the facts of the rest, unless it is one the inventory keeps whole
    /// (a Flux Kustomization is an owner: its spec is read) or a ConfigMap or Secret, or
    /// `keep` asks for every object whole.
    pub(super) fn loaded(
        value: Value,
        file: &str,
        index: usize,
        item: Option<usize>,
        keep: bool,
    ) -> Resource {
        let s = |k: &str| value.get(k).and_then(Value::as_str).unwrap_or("");
        let (group, kind) = (group_of(s("apiVersion")), s("kind"));
        // ConfigMaps and Secrets are `substituteFrom` sources: their data is read; an
        // ExternalSecret makes one, named in its spec.
        let whole = keep
            || kept_whole(group, kind)
            || (group == KUSTOMIZE_GROUP && kind == "Kustomization")
            || (group.is_empty() && matches!(kind, "ConfigMap" | "Secret"))
            || (group == "external-secrets.io" && kind == "ExternalSecret");
        let (value, rest) = match value {
            Value::Object(mut body) if !whole => {
                let mut head = Map::new();
                for key in HEAD {
                    if let Some(v) = body.remove(key) {
                        head.insert(key.into(), v);
                    }
                }
                let facts = Facts::of(&Value::Object(body), None, true);
                (Value::Object(head), Some(Rest { item, facts }))
            }
            value => (value, None),
        };
        Resource {
            value,
            rest,
            file: file.to_string(),
            index,
            previous: Vec::new(),
        }
    }

    /// An object a generator makes.
    pub(super) fn generated(value: Value, file: &str, index: usize) -> Resource {
        Resource {
            value,
            rest: None,
            file: file.to_string(),
            index,
            previous: Vec::new(),
        }
    }

    /// The object whole again, read from its file, with its head as transformed so far.
    pub(super) fn make_whole(&mut self, tree: &FileTree) -> Result<(), BuildError> {
        let Some(rest) = self.rest.take() else {
            return Ok(());
        };
        let text = tree
            .read(&self.file)
            .ok_or_else(|| BuildError::FileNotFound(self.file.clone()))?;
        let doc = parse_file(&self.file, &text)?.into_iter().nth(self.index);
        let original = match rest.item {
            Some(i) => doc.and_then(|mut d| d.get_mut("items")?.get_mut(i).map(Value::take)),
            None => doc,
        };
        let Some(Value::Object(mut whole)) = original else {
            return Err(BuildError::DocumentGone {
                file: self.file.clone(),
                document: self.index + 1,
            });
        };
        if let Value::Object(head) = self.value.take() {
            whole.extend(head);
        }
        self.value = Value::Object(whole);
        Ok(())
    }

    /// What the inventory keeps of it (see `Facts`).
    pub fn facts(&self, substituted: bool) -> Facts {
        Facts::of(
            &self.value,
            self.rest.as_ref().map(|r| &r.facts),
            substituted,
        )
    }

    pub fn id(&self) -> Option<ObjectId> {
        ObjectId::of(&self.value)
    }

    pub(super) fn meta_str(&self, key: &str) -> &str {
        self.value
            .get("metadata")
            .and_then(|m| m.get(key))
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    pub(super) fn kind(&self) -> &str {
        self.value.get("kind").and_then(Value::as_str).unwrap_or("")
    }

    pub(super) fn api_version(&self) -> &str {
        self.value
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    pub(super) fn set_meta(&mut self, key: &str, value: String) {
        let (name, ns) = (
            self.meta_str("name").to_string(),
            self.meta_str("namespace").to_string(),
        );
        if !self.previous.contains(&(name.clone(), ns.clone())) {
            self.previous.push((name, ns));
        }
        if let Some(meta) = self
            .value
            .get_mut("metadata")
            .and_then(Value::as_object_mut)
        {
            meta.insert(key.into(), Value::String(value));
        }
    }

    pub(super) fn selected_by(&self, target: &PatchTarget) -> bool {
        // The maps are made only for a target with a selector: a patch asks every object
        // of a build, and most targets select by kind and name alone.
        let (labels, annotations) = if target.reads_metadata_maps() {
            (
                string_map(&self.value, "labels"),
                string_map(&self.value, "annotations"),
            )
        } else {
            (BTreeMap::new(), BTreeMap::new())
        };
        let api = self.api_version();
        let current = (self.meta_str("name"), self.meta_str("namespace"));
        std::iter::once(current)
            .chain(self.previous.iter().map(|(n, s)| (n.as_str(), s.as_str())))
            .any(|(name, namespace)| {
                target.matches(&ObjectRef {
                    group: group_of(api),
                    version: version_of(api),
                    kind: self.kind(),
                    name,
                    namespace,
                    labels: &labels,
                    annotations: &annotations,
                })
            })
    }
}

/// The objects of a file: its documents, and the items of a List; each whole when `whole`.
pub(super) fn load(path: &str, text: &yaml::Text, whole: bool) -> Built {
    let mut out = Vec::new();
    for (index, doc) in parse_file(path, text)?.into_iter().enumerate() {
        let is_list = doc
            .get("kind")
            .and_then(Value::as_str)
            .is_some_and(|k| k.ends_with("List"))
            && doc.get("items").is_some_and(Value::is_array);
        let items: Vec<(Option<usize>, Value)> = match doc {
            Value::Object(mut m) if is_list => match m.remove("items") {
                Some(Value::Array(items)) => items
                    .into_iter()
                    .enumerate()
                    .map(|(i, v)| (Some(i), v))
                    .collect(),
                _ => Vec::new(),
            },
            doc => vec![(None, doc)],
        };
        for (item, value) in items {
            if !value.is_object() {
                return Err(BuildError::DocumentNotAMapping {
                    file: path.to_string(),
                    document: index + 1,
                });
            }
            // kustomize reads only objects with a kind and a name, a List needing no name
            // (kyaml `RNode.GetValidatedMetadata`, through `resource.Factory.dropBadNodes`);
            // Flux's generator fails the same way on such a file ("failed to decode
            // Kubernetes YAML", fluxcd/pkg `scanManifests`).
            let missing = if !has(&value, &["kind"]) {
                Some("kind")
            } else if !has(&value, &["metadata", "name"])
                && !value["kind"].as_str().is_some_and(|k| k.ends_with("List"))
            {
                Some("metadata.name")
            } else {
                None
            };
            if let Some(missing) = missing {
                return Err(BuildError::NotAnObject {
                    file: path.to_string(),
                    document: index + 1,
                    missing,
                });
            }
            out.push(Resource::loaded(value, path, index, item, whole));
        }
    }
    Ok(out)
}

/// Whether `v` has a value at `path`: not null, not an empty string. (A value of another
/// type is there: its reading is not this check's to judge.)
pub(super) fn has(v: &Value, path: &[&str]) -> bool {
    match path.iter().try_fold(v, |v, key| v.get(key)) {
        None | Some(Value::Null) => false,
        Some(Value::String(s)) => !s.is_empty(),
        Some(_) => true,
    }
}

fn parse_file(path: &str, text: &yaml::Text) -> Result<Vec<Value>, BuildError> {
    yaml::parse_all(path, text).map_err(|e| BuildError::Yaml(Box::new(e)))
}
