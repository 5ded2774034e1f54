//! A native kustomize builder, enough to know *which objects* a build yields: resources,
//! components, patches (strategic merge as a deep merge of mappings with lists replaced, JSON
//! 6902), `namespace`, `namePrefix`/`nameSuffix`, labels and annotations, generators without
//! hash suffixes, and Flux's generated kustomization for a folder without one. Anything else
//! that can change the set of objects is reported as a `Warning` naming the file and the
//! feature: a build is never silently incomplete.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value};

pub mod object;
mod patch;
mod resolve;
mod resource;
pub mod target;
mod transform;
mod types;

pub use resolve::{resolve, resolve_under, Ref};
pub use resource::Resource;

use crate::fs::is_manifest;
use crate::fs::join;
use crate::tree::FileTree;
use crate::yaml;
use object::CLUSTER_SCOPED;
use resource::load;

/// A kustomize feature that may change what a build yields and that fluxwave does not model.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Warning {
    pub path: String,
    pub feature: String,
    pub message: String,
}

/// Keys of a kustomization that fluxwave builds (or that cannot change which objects a build
/// yields: images, replicas and the like change content only).
const MODELLED: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "resources",
    "bases",
    "components",
    "patches",
    "patchesStrategicMerge",
    "patchesJson6902",
    "namespace",
    "namePrefix",
    "nameSuffix",
    "commonLabels",
    "labels",
    "commonAnnotations",
    "configMapGenerator",
    "secretGenerator",
    "generatorOptions",
    "images",
    "replicas",
    "sortOptions",
    "buildMetadata",
    "crds",
];

const KUSTOMIZATION_FILES: &[&str] = &["kustomization.yaml", "kustomization.yml", "Kustomization"];

const MAX_DEPTH: usize = 64;

pub struct Builder<'a> {
    tree: &'a FileTree,
    /// Files of the folder being built, parsed ahead on every core (see `prefetch`).
    ready: HashMap<String, Built>,
    pub warnings: Vec<Warning>,
    /// Kinds of cluster-scoped custom resources seen in CRDs of this tree.
    cluster_kinds: BTreeSet<String>,
    stack: Vec<String>,
}

type Built = Result<Vec<Resource>, BuildError>;

/// Why a build failed. Flux's build fails there too, and applies nothing of it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    #[error("{0}: file not found")]
    FileNotFound(String),
    #[error("{0}: no kustomization.yaml in this folder")]
    NoKustomization(String),
    #[error("path `./{0}` does not exist")]
    NoPath(String),
    #[error("{file}: kustomization cycle through `{dir}`")]
    Cycle { file: String, dir: String },
    #[error("{file}: `{entry}` leaves the repository")]
    Escapes { file: String, entry: String },
    #[error("{file}: resource `{entry}` not found")]
    MissingResource { file: String, entry: String },
    /// A kustomization, manifest or patch that kustomize would not read: the file, and what
    /// is wrong with it.
    #[error("{0}")]
    Malformed(String),
}

impl From<String> for BuildError {
    fn from(message: String) -> Self {
        BuildError::Malformed(message)
    }
}

/// Where a build hands its objects, one at a time and in build order.
pub type Emit<'e> = dyn FnMut(Resource) + 'e;

/// How many files a build parses ahead (on every core) of the one it loads: enough to keep
/// the cores busy, few enough that a folder of 100,000 files is not held parsed at once.
const AHEAD: usize = 1024;

/// The window of a build's files parsed ahead: `next` is called before the build loads each
/// of `files`, in order, and parses the next `AHEAD` of them when the window is used up.
/// (A file not parsed ahead is parsed when it is loaded: the window never changes what a
/// build yields, only when files are parsed.)
#[derive(Default)]
struct Ahead {
    loaded: usize,
    parsed: usize,
}

impl Ahead {
    fn next<S: AsRef<str> + Sync>(&mut self, builder: &mut Builder<'_>, files: &[S]) {
        if self.loaded == self.parsed && self.parsed < files.len() {
            let end = (self.parsed + AHEAD).min(files.len());
            builder.prefetch(&files[self.parsed..end]);
            self.parsed = end;
        }
        self.loaded += 1;
    }
}

/// Keys of a kustomization that change the objects it accumulated (see `transform`).
const TRANSFORMERS: &[&str] = &[
    "components",
    "patchesStrategicMerge",
    "patches",
    "namespace",
    "namePrefix",
    "nameSuffix",
    "commonLabels",
    "labels",
    "commonAnnotations",
    "patchesJson6902",
];

/// Whether kustomization `k` may change what it accumulated: else its build is the objects
/// of its resources and generators as they are loaded.
fn transforms(k: &Map<String, Value>) -> bool {
    TRANSFORMERS.iter().any(|key| k.contains_key(*key))
}

impl<'a> Builder<'a> {
    pub fn new(tree: &'a FileTree) -> Builder<'a> {
        let mut cluster_kinds = BTreeSet::new();
        // Cluster-scoped custom kinds are known from any CRD in the revision.
        let crd = memchr::memmem::Finder::new("CustomResourceDefinition");
        for (path, text) in tree.files() {
            if crd.find(text.as_bytes()).is_none() {
                continue;
            }
            // Not `take`: only builds count as loads.
            let docs = yaml::parse_all(path, text).unwrap_or_default();
            for doc in docs {
                if let Some((_, kind, true)) = object::crd_kind(&doc) {
                    cluster_kinds.insert(kind);
                }
            }
        }
        Builder {
            cluster_kinds,
            ..Builder::owners_only(tree)
        }
    }

    /// A builder for questions about Flux Kustomizations only (which ones a build declares,
    /// what patches do to them): it does not scan the tree for CRDs, which decide only where
    /// `namespace` leaves cluster-scoped custom resources, so it reads no file that is not
    /// built. (A Flux Kustomization is namespaced whatever the CRDs say.)
    pub fn owners_only(tree: &'a FileTree) -> Builder<'a> {
        Builder {
            tree,
            ready: HashMap::new(),
            warnings: Vec::new(),
            cluster_kinds: BTreeSet::new(),
            stack: Vec::new(),
        }
    }

    /// `objects` as kustomization `k` of `dir` transforms them (`transform`: its patches,
    /// namespace, affixes and metadata; not its resources). `file` names it in messages.
    pub fn transform_objects(
        &mut self,
        file: &str,
        dir: &str,
        k: &Map<String, Value>,
        objects: Vec<Value>,
    ) -> Result<Vec<Value>, BuildError> {
        let acc = objects
            .into_iter()
            .enumerate()
            .map(|(i, v)| Resource::generated(v, file, i))
            .collect();
        Ok(self
            .transform(file, dir, k, acc)?
            .into_iter()
            .map(|r| r.value)
            .collect())
    }

    fn warn(&mut self, path: &str, feature: &str, message: String) {
        let w = Warning {
            path: path.to_string(),
            feature: feature.to_string(),
            message,
        };
        if !self.warnings.contains(&w) {
            self.warnings.push(w);
        }
    }

    fn is_cluster_scoped(&self, kind: &str) -> bool {
        CLUSTER_SCOPED.contains(&kind) || self.cluster_kinds.contains(kind)
    }

    /// Why the file at `path` has no text: it is not there, or kustomize cannot read it
    /// (not UTF-8, broken UTF-16: its build fails, as kustomize's does).
    fn not_read(&self, path: &str) -> BuildError {
        match self.tree.unreadable(path) {
            Some(why) => BuildError::Malformed(format!("{path}: cannot be read as text: {why}")),
            None => BuildError::FileNotFound(path.to_string()),
        }
    }

    /// The kustomization file of `dir`, if it has one.
    pub fn kustomization_file(&self, dir: &str) -> Option<String> {
        KUSTOMIZATION_FILES
            .iter()
            .map(|f| join(dir, f).unwrap_or_default())
            .find(|p| self.tree.is_file(p))
    }

    /// `kustomize build DIR`: `dir` must hold a kustomization.
    pub fn build_dir(&mut self, dir: &str) -> Built {
        let mut out = Vec::new();
        self.stream_dir(dir, &mut |r| out.push(r))?;
        Ok(out)
    }

    /// `build_dir`, handing each object to `emit` in build order.
    fn stream_dir(&mut self, dir: &str, emit: &mut Emit) -> Result<(), BuildError> {
        let file = self
            .kustomization_file(dir)
            .ok_or_else(|| BuildError::NoKustomization(dir.to_string()))?;
        self.stream_kustomization(dir, &file, emit)
    }

    /// What Flux builds at `spec.path`: the folder's kustomization, or the one Flux generates
    /// when there is none (every manifest under the folder, recursively; a sub-folder with its
    /// own kustomization is built as one).
    pub fn build_flux_path(&mut self, dir: &str) -> Built {
        let mut out = Vec::new();
        self.stream_flux_path(dir, &mut |r| out.push(r))?;
        Ok(out)
    }

    /// What a Flux Kustomization applies: `build_flux_path(dir)` transformed by `overlay`
    /// (the kustomization Flux wraps around its `spec.path`, see `transform`), each object
    /// handed to `emit` in build order. Where no kustomization on the way transforms the
    /// list, objects are handed on as they are loaded and the build holds no list: a flat app
    /// tier of hundreds of thousands of objects is never held whole. When the build fails,
    /// `emit` may have had some of its objects.
    pub fn build_owner(
        &mut self,
        what: &str,
        dir: &str,
        overlay: &Map<String, Value>,
        emit: &mut Emit,
    ) -> Result<(), BuildError> {
        if transforms(overlay) {
            let acc = self.build_flux_path(dir)?;
            self.transform(what, dir, overlay, acc)?
                .into_iter()
                .for_each(emit);
        } else {
            self.stream_flux_path(dir, emit)?;
            // Nothing to transform: only the warnings of unmodelled keys.
            self.transform(what, dir, overlay, Vec::new())?;
        }
        Ok(())
    }

    fn stream_flux_path(&mut self, dir: &str, emit: &mut Emit) -> Result<(), BuildError> {
        if self.kustomization_file(dir).is_some() {
            return self.stream_dir(dir, emit);
        }
        if !self.tree.is_dir(dir) {
            return Err(BuildError::NoPath(dir.to_string()));
        }
        // Every file, with the sub-folder holding a kustomization that builds it, if any.
        let files: Vec<(String, Option<String>)> = self
            .tree
            .files_under(dir)
            .map(|file| {
                let below = file.strip_prefix(&format!("{dir}/")).unwrap_or(file);
                let segments: Vec<&str> = below.split('/').collect();
                let mut sub = dir.to_string();
                for seg in &segments[..segments.len().saturating_sub(1)] {
                    sub = join(&sub, seg).unwrap_or_default();
                    if self.kustomization_file(&sub).is_some() {
                        return (file.to_string(), Some(sub));
                    }
                }
                (file.to_string(), None)
            })
            .collect();
        let manifests: Vec<&str> = files
            .iter()
            .filter(|(file, sub)| sub.is_none() && is_manifest(file))
            .map(|(file, _)| file.as_str())
            .collect();
        let mut ahead = Ahead::default();
        let mut built = BTreeSet::new();
        for (file, kustomized) in &files {
            match kustomized {
                Some(sub) if built.insert(sub.clone()) => {
                    self.stream_dir(sub, emit)?;
                }
                Some(_) => {}
                None if is_manifest(file) => {
                    ahead.next(self, &manifests);
                    // Flux's generator leaves out what is not a Kubernetes object.
                    self.load_file(file)?
                        .into_iter()
                        .filter(|r| !r.kind().is_empty() && !r.api_version().is_empty())
                        .for_each(&mut *emit);
                }
                None => {}
            }
        }
        Ok(())
    }

    fn load_file(&mut self, path: &str) -> Built {
        let text = self.tree.read(path).ok_or_else(|| self.not_read(path))?;
        match self.ready.remove(path) {
            Some(loaded) => loaded,
            None => load(path, &text),
        }
    }

    /// Loads `paths` (files a build is about to load) in parallel, so that building a folder
    /// of thousands of manifests uses every core.
    fn prefetch<S: AsRef<str> + Sync>(&mut self, paths: &[S]) {
        let tree = self.tree;
        let loaded = crate::par::map(paths, |path| {
            let path = path.as_ref();
            tree.read(path).map(|text| load(path, &text))
        });
        for (path, objects) in paths.iter().zip(loaded) {
            if let Some(objects) = objects {
                self.ready.insert(path.as_ref().to_string(), objects);
            }
        }
    }

    fn read_kustomization(&self, file: &str) -> Result<Map<String, Value>, BuildError> {
        let text = self.tree.read(file).ok_or_else(|| self.not_read(file))?;
        match yaml::parse_kustomization(file, &text).map_err(|e| e.to_string())? {
            Value::Object(m) => types::check(file, &m).map(|()| m).map_err(Into::into),
            Value::Null => Ok(Map::new()),
            _ => Err(format!("{file}: a kustomization must be a mapping").into()),
        }
    }

    /// Runs `f` with `dir` on the stack of kustomizations being built (a cycle or a chain
    /// deeper than `MAX_DEPTH` is an error).
    fn nested<T>(
        &mut self,
        dir: &str,
        file: &str,
        f: impl FnOnce(&mut Self) -> Result<T, BuildError>,
    ) -> Result<T, BuildError> {
        if self.stack.len() > MAX_DEPTH || self.stack.iter().any(|d| d == dir) {
            return Err(BuildError::Cycle {
                file: file.to_string(),
                dir: dir.to_string(),
            });
        }
        self.stack.push(dir.to_string());
        let result = f(self);
        self.stack.pop();
        result
    }

    /// The kustomization `file` of `dir` built over `acc` (a component's list).
    fn build_kustomization(&mut self, dir: &str, file: &str, mut acc: Vec<Resource>) -> Built {
        self.nested(dir, file, |b| {
            let k = b.read_kustomization(file)?;
            b.resources(dir, file, &k, &mut |r| acc.push(r))?;
            b.transform(file, dir, &k, acc)
        })
    }

    /// `build_kustomization` over nothing, each object handed to `emit` as it is loaded when
    /// the kustomization transforms nothing, else once its list is built and transformed.
    fn stream_kustomization(
        &mut self,
        dir: &str,
        file: &str,
        emit: &mut Emit,
    ) -> Result<(), BuildError> {
        self.nested(dir, file, |b| {
            let k = b.read_kustomization(file)?;
            if transforms(&k) {
                let mut acc = Vec::new();
                b.resources(dir, file, &k, &mut |r| acc.push(r))?;
                b.transform(file, dir, &k, acc)?.into_iter().for_each(emit);
            } else {
                b.resources(dir, file, &k, emit)?;
                // Nothing to transform: only the warnings of unmodelled keys.
                b.transform(file, dir, &k, Vec::new())?;
            }
            Ok(())
        })
    }

    /// The objects of kustomization `k`'s `resources` and `bases`, then of its generators,
    /// in order, untransformed.
    fn resources(
        &mut self,
        dir: &str,
        file: &str,
        k: &Map<String, Value>,
        emit: &mut Emit,
    ) -> Result<(), BuildError> {
        let files: Vec<String> = ["resources", "bases"]
            .iter()
            .filter_map(|field| list(k, field, file).ok())
            .flatten()
            .filter_map(Value::as_str)
            .filter_map(|entry| resolve(dir, entry).local())
            .filter(|path| self.tree.is_file(path))
            .collect();
        let mut ahead = Ahead::default();
        for field in ["resources", "bases"] {
            for entry in list(k, field, file)? {
                let Some((entry, path)) = self.local_entry(
                    file,
                    dir,
                    field,
                    entry,
                    ("remote base", "its objects are not in the inventory"),
                )?
                else {
                    continue;
                };
                if self.tree.is_file(&path) {
                    ahead.next(self, &files);
                    self.load_file(&path)?.into_iter().for_each(&mut *emit);
                } else if self.tree.is_dir(&path) {
                    self.stream_dir(&path, emit)?;
                } else {
                    return Err(BuildError::MissingResource {
                        file: file.to_string(),
                        entry: entry.to_string(),
                    });
                }
            }
        }
        let mut generated = Vec::new();
        self.generators(file, k, &mut generated)?;
        generated.into_iter().for_each(emit);
        Ok(())
    }

    /// Entry `entry` of list `field` of kustomization `file` in `dir`, with its local path;
    /// `None` for a remote one, reported as the unmodelled `feature` with what it leaves
    /// `unseen`. An entry that is not a string or that leaves the repository fails the build.
    fn local_entry<'e>(
        &mut self,
        file: &str,
        dir: &str,
        field: &str,
        entry: &'e Value,
        (feature, unseen): (&str, &str),
    ) -> Result<Option<(&'e str, String)>, BuildError> {
        let Some(entry) = entry.as_str() else {
            return Err(format!("{file}: `{field}` entries must be strings").into());
        };
        match resolve(dir, entry) {
            Ref::Local(path) => Ok(Some((entry, path))),
            Ref::Remote => {
                self.warn(
                    file,
                    feature,
                    format!("`{entry}` is fetched from the network; {unseen}"),
                );
                Ok(None)
            }
            Ref::Escapes => Err(BuildError::Escapes {
                file: file.to_string(),
                entry: entry.to_string(),
            }),
        }
    }

    /// ConfigMap and Secret generators: modelled when their names carry no hash suffix.
    fn generators(
        &mut self,
        file: &str,
        k: &Map<String, Value>,
        acc: &mut Vec<Resource>,
    ) -> Result<(), BuildError> {
        let global_off = k
            .get("generatorOptions")
            .and_then(|o| o.get("disableNameSuffixHash"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        for (field, kind) in [
            ("configMapGenerator", "ConfigMap"),
            ("secretGenerator", "Secret"),
        ] {
            for (i, item) in list(k, field, file)?.iter().enumerate() {
                let name = item.get("name").and_then(Value::as_str).unwrap_or("");
                let behavior = item
                    .get("behavior")
                    .and_then(Value::as_str)
                    .unwrap_or("create");
                if behavior != "create" {
                    continue; // merges into an object that exists already
                }
                let off = item
                    .get("options")
                    .and_then(|o| o.get("disableNameSuffixHash"))
                    .and_then(Value::as_bool)
                    .unwrap_or(global_off);
                if !off {
                    self.warn(
                        file,
                        "generator with hash suffix",
                        format!("{kind} `{name}` from `{field}` gets a content-hash suffix fluxwave does not compute; it is not in the inventory"),
                    );
                    continue;
                }
                let mut meta = Map::new();
                meta.insert("name".into(), Value::String(name.into()));
                if let Some(ns) = item.get("namespace").and_then(Value::as_str) {
                    meta.insert("namespace".into(), Value::String(ns.into()));
                }
                let mut value = Map::new();
                value.insert("apiVersion".into(), Value::String("v1".into()));
                value.insert("kind".into(), Value::String(kind.into()));
                value.insert("metadata".into(), Value::Object(meta));
                acc.push(Resource::generated(Value::Object(value), file, 1000 + i));
            }
        }
        Ok(())
    }
}

fn list<'v>(k: &'v Map<String, Value>, field: &str, file: &str) -> Result<&'v [Value], String> {
    match k.get(field) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(_) => Err(format!("{file}: `{field}` must be a list")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(r: &[Resource]) -> Vec<String> {
        let mut v: Vec<String> = r
            .iter()
            .filter_map(Resource::id)
            .map(|i| i.to_string())
            .collect();
        v.sort();
        v
    }

    const CM: &str =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: a\ndata: {x: '1'}\n";

    #[test]
    fn namespace_prefix_and_suffix_as_kustomize_applies_them() {
        let tree = FileTree::from_files([
            ("app/kustomization.yaml", "namespace: media\nnamePrefix: p-\nnameSuffix: -s\nresources: [cm.yaml, ns.yaml]\n"),
            ("app/cm.yaml", CM),
            ("app/ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: old}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r}\n"),
        ]);
        let mut b = Builder::new(&tree);
        let out = b.build_dir("app").unwrap();
        assert_eq!(
            ids(&out),
            [
                "ClusterRole/p-r-s",
                "ConfigMap/media/p-cm-s",
                "Namespace/media"
            ]
        );
    }

    #[test]
    fn an_object_is_held_as_its_head_until_a_patch_reads_it_whole() {
        let list = "apiVersion: v1\nkind: List\nitems:\n  - {apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {k: '1'}}\n  - {apiVersion: v1, kind: ConfigMap, metadata: {name: b}, data: {k: '${V}'}}\n";
        let tree = FileTree::from_files([
            ("base/kustomization.yaml", "namespace: ns\nresources: [list.yaml]\n"),
            ("base/list.yaml", list),
            ("o/kustomization.yaml", "resources: [../base]\npatches:\n  - target: {name: b}\n    patch: |\n      - op: add\n        path: /data/j\n        value: '2'\n"),
        ]);
        let out = Builder::new(&tree).build_dir("o").unwrap();
        assert_eq!(out.len(), 2);
        // Not patched: the head, transformed, and the facts of the rest.
        assert_eq!(out[0].value.get("data"), None);
        assert_eq!(out[0].value["metadata"]["namespace"], "ns");
        let facts = out[0].facts(true);
        assert_eq!(facts.data_keys, Some(vec!["k".to_string()]));
        // Patched: the second item whole again, keeping the namespace its base set.
        assert_eq!(
            out[1].value["data"],
            serde_json::json!({"k": "${V}", "j": "2"})
        );
        assert_eq!(out[1].value["metadata"]["namespace"], "ns");
        assert_eq!(out[1].facts(true).variables, ["V"]);
    }

    #[test]
    fn patches_merge_mappings_replace_lists_and_follow_renames() {
        let tree = FileTree::from_files([
            ("base/kustomization.yaml", "namePrefix: p-\nresources: [cm.yaml]\n"),
            ("base/cm.yaml", CM),
            ("o/kustomization.yaml", "resources: [../base]\npatches:\n  - target: {kind: ConfigMap, name: cm}\n    patch: |\n      - op: add\n        path: /data/y\n        value: '2'\n  - patch: |\n      apiVersion: v1\n      kind: ConfigMap\n      metadata: {name: p-cm, labels: {l: v}}\n      data: {x: null}\n"),
        ]);
        let mut b = Builder::new(&tree);
        let out = b.build_dir("o").unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].value["data"], serde_json::json!({"y": "2"}));
        assert_eq!(out[0].value["metadata"]["labels"]["l"], "v");
        assert_eq!(out[0].value["metadata"]["name"], "p-cm");
    }

    #[test]
    fn flux_generates_a_kustomization_for_a_plain_folder() {
        let tree = FileTree::from_files([
            ("apps/a.yaml", CM),
            ("apps/notes.yaml", "just: notes\n"),
            (
                "apps/sub/deep/b.yaml",
                CM.replace("name: cm", "name: b").leak(),
            ),
            (
                "apps/k/kustomization.yaml",
                "resources: [c.yaml]\nnamespace: kk\n",
            ),
            ("apps/k/c.yaml", CM.replace("name: cm", "name: c").leak()),
        ]);
        let mut b = Builder::new(&tree);
        let out = b.build_flux_path("apps").unwrap();
        assert_eq!(
            ids(&out),
            ["ConfigMap/a/b", "ConfigMap/a/cm", "ConfigMap/kk/c"]
        );
        assert!(b.build_dir("apps").is_err());
    }

    #[test]
    fn components_and_unmodelled_features_are_reported() {
        let tree = FileTree::from_files([
            ("c/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n  - target: {kind: ConfigMap}\n    patch: |\n      - op: add\n        path: /metadata/annotations\n        value: {c: 'yes'}\n"),
            ("a/kustomization.yaml", "resources: [cm.yaml, https://github.com/x/y//z]\ncomponents: [../c]\nhelmCharts: [{name: x}]\nconfigMapGenerator: [{name: g}, {name: h, options: {disableNameSuffixHash: true}}]\n"),
            ("a/cm.yaml", CM),
        ]);
        let mut b = Builder::new(&tree);
        let out = b.build_dir("a").unwrap();
        assert_eq!(ids(&out), ["ConfigMap/a/cm", "ConfigMap/h"]);
        assert_eq!(out[0].value["metadata"]["annotations"]["c"], "yes");
        let features: Vec<&str> = b.warnings.iter().map(|w| w.feature.as_str()).collect();
        assert_eq!(
            features,
            ["remote base", "generator with hash suffix", "helmCharts"]
        );
    }

    #[test]
    fn an_owner_build_hands_on_objects_in_build_order() {
        let cm = |name: &str| CM.replace("name: cm", &format!("name: {name}"));
        let (a, b, c, d, e) = (cm("a"), cm("b"), cm("c"), cm("d"), cm("e"));
        let tree = FileTree::from_files([
            // Flux's generated kustomization: files in path order, a kustomized folder once.
            ("apps/1.yaml", a.as_str()),
            ("apps/k/kustomization.yaml", "resources: [c.yaml, ../../plain, b.yaml]\nconfigMapGenerator: [{name: g, options: {disableNameSuffixHash: true}}]\n"),
            ("apps/k/b.yaml", b.as_str()),
            ("apps/k/c.yaml", c.as_str()),
            ("apps/t/kustomization.yaml", "namespace: t\nresources: [e.yaml]\n"),
            ("apps/t/e.yaml", e.as_str()),
            ("plain/kustomization.yaml", "resources: [d.yaml]\n"),
            ("plain/d.yaml", d.as_str()),
        ]);
        let build = |overlay: Map<String, Value>| {
            let mut out = Vec::new();
            let mut b = Builder::new(&tree);
            b.build_owner("apps", "apps", &overlay, &mut |r| {
                out.push(r.id().map(|i| i.to_string()).unwrap_or_default())
            })
            .unwrap();
            out
        };
        assert_eq!(
            build(Map::new()),
            [
                "ConfigMap/a/a",
                "ConfigMap/a/c",
                "ConfigMap/a/d",
                "ConfigMap/a/b",
                "ConfigMap/g",
                "ConfigMap/t/e"
            ]
        );
        let mut overlay = Map::new();
        overlay.insert("namePrefix".into(), Value::String("p-".into()));
        assert_eq!(
            build(overlay),
            [
                "ConfigMap/a/p-a",
                "ConfigMap/a/p-c",
                "ConfigMap/a/p-d",
                "ConfigMap/a/p-b",
                "ConfigMap/p-g",
                "ConfigMap/t/p-e"
            ]
        );
    }

    #[test]
    fn a_folder_larger_than_the_parse_ahead_window_is_built_whole_and_in_order() {
        let n = 2 * AHEAD + 7;
        let names: Vec<String> = (0..n).map(|i| format!("cm-{i:05}")).collect();
        let texts: Vec<String> = names
            .iter()
            .map(|name| CM.replace("name: cm", &format!("name: {name}")))
            .collect();
        // Listed out of path order, one file twice, and a missing one at the end.
        let mut listed: Vec<String> = names.iter().rev().map(|n| format!("{n}.yaml")).collect();
        listed.insert(AHEAD + 3, listed[5].clone());
        let k = format!(
            "resources:\n{}",
            listed
                .iter()
                .map(|f| format!("  - {f}\n"))
                .collect::<String>()
        );
        let paths: Vec<String> = names.iter().map(|n| format!("big/{n}.yaml")).collect();
        let mut files: Vec<(&str, &str)> = paths
            .iter()
            .zip(&texts)
            .map(|(p, t)| (p.as_str(), t.as_str()))
            .collect();
        files.push(("big/kustomization.yaml", k.as_str()));
        let tree = FileTree::from_files(files.iter().copied());
        let out = Builder::new(&tree).build_dir("big").unwrap();
        let built: Vec<String> = out
            .iter()
            .filter_map(|r| r.id())
            .map(|i| format!("{}.yaml", i.name))
            .collect();
        assert_eq!(built, listed);
        // A folder without a kustomization: every manifest, in path order.
        let plain = FileTree::from_files(files[..n].iter().copied());
        let out = Builder::new(&plain).build_flux_path("big").unwrap();
        let built: Vec<&str> = out.iter().map(|r| r.meta_str("name")).collect();
        assert_eq!(built, names);
    }

    /// Flux fails the build of an absolute entry (see `resolve`): the builder does too,
    /// where it used to read `/apps` as `apps`.
    #[test]
    fn an_absolute_resource_fails_the_build() {
        let tree = FileTree::from_files([
            ("clusters/dev/kustomization.yaml", "resources: [/apps]\n"),
            ("apps/kustomization.yaml", "resources: [cm.yaml]\n"),
            ("apps/cm.yaml", CM),
        ]);
        let err = Builder::new(&tree).build_dir("clusters/dev").unwrap_err();
        assert_eq!(
            err,
            BuildError::Escapes {
                file: "clusters/dev/kustomization.yaml".into(),
                entry: "/apps".into()
            }
        );
        assert_eq!(
            err.to_string(),
            "clusters/dev/kustomization.yaml: `/apps` leaves the repository"
        );
    }

    #[test]
    fn strategic_merge_delete_removes_the_object() {
        let tree = FileTree::from_files([
            ("a/kustomization.yaml", "resources: [cm.yaml]\npatchesStrategicMerge:\n  - |\n    apiVersion: v1\n    kind: ConfigMap\n    metadata: {name: cm}\n    $patch: delete\n"),
            ("a/cm.yaml", CM),
        ]);
        assert!(Builder::new(&tree).build_dir("a").unwrap().is_empty());
    }
}
