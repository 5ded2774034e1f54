//! One object of a build (`Resource`): where it came from, the names it had before a
//! transformer renamed it, and, until a patch needs it whole, only its head and what the
//! build's caller keeps of the rest (`Keep`).

use serde_json::{Map, Value};
use std::any::Any;
use std::collections::BTreeMap;
use std::sync::Arc;

use super::error::BuildError;
use super::object::{
    effective_namespace, group_of, string_map, version_of, ObjectId, CLUSTER_SCOPED,
};
use super::target::{ObjectRef, PatchTarget};
use crate::pointer::Pointer;
use crate::tree::FileTree;
use crate::yaml;

/// The objects a build (or a part of one) yields, or why it fails.
pub(super) type Built = Result<Vec<Resource>, BuildError>;

/// What a build's caller reads of the objects it is handed, so that the build holds no more of
/// them (`Builder::keeping`): which objects it reads whole, and what it needs of the rest of
/// the others. Without it, a build holds every object whole. The builder never reads what
/// `rest` takes: the caller's own type, asked back of each object with `Resource::kept`.
#[derive(Debug, Clone, Copy)]
pub struct Keep {
    /// Whether an object of this API group and kind is held whole as it is loaded.
    pub whole: fn(group: &str, kind: &str) -> bool,
    /// What the caller needs of the rest of any other object (its body less `apiVersion`,
    /// `kind` and `metadata`), taken as it is loaded and held in place of the rest.
    pub rest: fn(rest: &Value) -> Kept,
}

/// What a caller keeps of the rest of an object held as its head (see `Keep`).
pub type Kept = Arc<dyn Any + Send + Sync>;

/// One object of a build, with where it came from (its file and document index) and the
/// names it had before `namePrefix`/`namespace` changed them (patch targets match either).
#[derive(Debug, Clone)]
pub struct Resource {
    /// The object; while `rest` is set, only its `apiVersion`, `kind` and `metadata`.
    pub value: Value,
    /// What the caller needs of the rest of an object loaded from a file (`Keep::rest`), held
    /// instead of the rest itself until a patch needs the object whole (`make_whole`): a
    /// build of a large app tier holds hundreds of thousands of objects, and their specs are
    /// most of the memory. Transformers other than patches change only the head.
    rest: Option<Rest>,
    pub file: String,
    pub index: usize,
    pub(super) previous: Vec<(String, String)>,
    /// The name prefixes and suffixes each kustomization on the way gave it, innermost first
    /// (kustomize's build annotations: name references prefer an object of the referrer's).
    pub(super) prefixes: Vec<String>,
    pub(super) suffixes: Vec<String>,
    /// Whether its name gets a content hash once the build is transformed: a generated
    /// object without `disableNameSuffixHash` (see `generate`).
    pub(super) hash: bool,
}

#[derive(Debug, Clone)]
struct Rest {
    /// The object's position in its document's `items`, when the document is a List.
    item: Option<usize>,
    kept: Kept,
}

/// The keys a build reads and transforms without a patch.
const HEAD: [&str; 3] = ["apiVersion", "kind", "metadata"];

impl Resource {
    /// Whether `self` is `other` as built: the same object from the same place, with the same
    /// names before and the same rest (the one loaded once, not an equal one: what was kept
    /// of it is read no further).
    pub fn same_as(&self, other: &Resource) -> bool {
        let rest = match (&self.rest, &other.rest) {
            (None, None) => true,
            (Some(a), Some(b)) => a.item == b.item && Arc::ptr_eq(&a.kept, &b.kept),
            _ => false,
        };
        rest && self.index == other.index
            && self.hash == other.hash
            && self.file == other.file
            && self.previous == other.previous
            && self.prefixes == other.prefixes
            && self.suffixes == other.suffixes
            && self.value == other.value
    }

    /// An object as loaded from document `index` of `file` (item `item` of a List): split
    /// into its head and what `keep` takes of the rest, unless `keep` holds it whole (or
    /// there is no `keep`: every object whole).
    pub(super) fn loaded(
        value: Value,
        file: &str,
        index: usize,
        item: Option<usize>,
        keep: Option<Keep>,
    ) -> Resource {
        let s = |k: &str| value.get(k).and_then(Value::as_str).unwrap_or("");
        let (group, kind) = (group_of(s("apiVersion")), s("kind"));
        let keep = keep.filter(|k| !(k.whole)(group, kind));
        let (value, rest) = match (value, keep) {
            (Value::Object(mut body), Some(keep)) => {
                let mut head = Map::new();
                for key in HEAD {
                    if let Some(v) = body.remove(key) {
                        head.insert(key.into(), v);
                    }
                }
                let kept = (keep.rest)(&Value::Object(body));
                (Value::Object(head), Some(Rest { item, kept }))
            }
            (value, _) => (value, None),
        };
        Resource {
            value,
            rest,
            file: file.to_string(),
            index,
            previous: Vec::new(),
            prefixes: Vec::new(),
            suffixes: Vec::new(),
            hash: false,
        }
    }

    /// An object a generator makes (kustomize's, or a Flux Operator ResourceSet).
    pub(crate) fn generated(value: Value, file: &str, index: usize) -> Resource {
        Resource {
            value,
            rest: None,
            file: file.to_string(),
            index,
            previous: Vec::new(),
            prefixes: Vec::new(),
            suffixes: Vec::new(),
            hash: false,
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

    /// What the caller's `Keep::rest` took of the rest of it, while it is held as its head
    /// (`None` once it is whole, or when what was taken is not a `T`).
    pub fn kept<T: Any>(&self) -> Option<&T> {
        self.rest.as_ref()?.kept.downcast_ref()
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

    /// Whether it has, or had before a transformer renamed it, the id `header` (an object's
    /// apiVersion, kind and metadata) names, as kustomize's `ResId.Equals` compares ids on
    /// each of an object's ids (`resWrangler.GetMatchingResourcesByAnyId`): the same group,
    /// version, kind and name, and the same namespace where no namespace is `default` (a
    /// cluster-scoped kind has none). A header without `apiVersion`, or without the object's
    /// namespace, names no object. (The object a strategic-merge patch without a target
    /// patches, and the one a generator's `merge` or `replace` meets.)
    pub(super) fn had_id_of(&self, header: &Value) -> bool {
        let s = |p: &str| header.at_pointer(p).and_then(Value::as_str).unwrap_or("");
        let api = s("/apiVersion");
        let (kind, name) = (s("/kind"), s("/metadata/name"));
        if kind != self.kind() || api != self.api_version() || name.is_empty() {
            return false;
        }
        let cluster_scoped = CLUSTER_SCOPED.contains(&kind);
        let effective = |ns| {
            if cluster_scoped {
                ""
            } else {
                effective_namespace(ns)
            }
        };
        let want = effective(s("/metadata/namespace"));
        std::iter::once((self.meta_str("name"), self.meta_str("namespace")))
            .chain(self.previous.iter().map(|(a, b)| (a.as_str(), b.as_str())))
            .any(|(n, ns)| n == name && effective(ns) == want)
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

/// The objects of a file: its documents, and the items of a List; each split as `keep` says
/// (see `Resource::loaded`).
pub(super) fn load(path: &str, text: &yaml::Text, keep: Option<Keep>) -> Built {
    crate::tally::add(&crate::tally::PARSES);
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
            out.push(Resource::loaded(value, path, index, item, keep));
        }
    }
    Ok(out)
}

/// Whether `v` has a value at `path`: not null, not an empty string. (A value of another
/// type is there: its reading is not this check's to judge.)
pub fn has(v: &Value, path: &[&str]) -> bool {
    match path.iter().try_fold(v, |v, key| v.get(key)) {
        None | Some(Value::Null) => false,
        Some(Value::String(s)) => !s.is_empty(),
        Some(_) => true,
    }
}

fn parse_file(path: &str, text: &yaml::Text) -> Result<Vec<Value>, BuildError> {
    if let Some(line) = directive_line(text) {
        return Err(BuildError::Directive {
            file: path.to_string(),
            line,
        });
    }
    yaml::parse_all(path, text).map_err(|e| BuildError::Yaml(Box::new(e)))
}

/// The line (from 1) of the first YAML directive (`%YAML`, `%TAG`) of a manifest. kustomize's
/// reader (kyaml `kio.ByteReader`) splits a file at its `---` lines and decodes each part
/// alone, so a directive is a part without a document ("did not find expected <document
/// start>"), and go-yaml v3 refuses `%YAML 1.2` outright ("found incompatible YAML
/// document"): kustomize fails the build of any manifest with one. A line at column 0 that
/// starts with `%` can be nothing else in a manifest (a block scalar's lines are indented).
fn directive_line(text: &str) -> Option<usize> {
    if !(text.starts_with('%') || text.contains("\n%")) {
        return None;
    }
    text.lines().position(|l| l.starts_with('%')).map(|i| i + 1)
}
