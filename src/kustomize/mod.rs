//! A native kustomize builder, enough to know *which objects* a build yields: resources,
//! components, patches (strategic merge as a deep merge of mappings with lists replaced, JSON
//! 6902), `namespace`, `namePrefix`/`nameSuffix`, labels and annotations, generators without
//! hash suffixes, and the kustomization Flux builds at a Kustomization's `spec.path` (its
//! spec written into the folder's kustomization, or into the one Flux generates). A build
//! fails where kustomize or Flux fails it (`BuildError`). Anything else that can change the
//! set of objects is reported as a `Warning` naming the file and the feature: a build is
//! never silently incomplete.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use serde_json::{Map, Value};

mod error;
pub mod object;
mod patch;
mod remember;
mod resolve;
mod resource;
pub mod target;
mod transform;
mod types;

pub use error::{BuildError, Warning};
pub use remember::{Remembered, Remembering, Shared};
pub use resolve::{resolve, resolve_under, Ref};
pub use resource::{Keep, Kept, Resource};

use crate::fs::is_manifest;
use crate::fs::join;
use crate::tree::FileTree;
use crate::yaml;
use object::CLUSTER_SCOPED;
use resource::{load, Built};

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
    // Transformer configurations only add field specs to the built-in ones (kustomize's
    // `builtinconfig.TransformerConfig.Merge`): names, namespaces and labels are still set
    // where they were, so the object set does not change.
    "configurations",
];

/// The names kustomize reads a folder's kustomization from; a folder with more than one
/// fails to build ("Found multiple kustomization files"). From kustomize's
/// `api/konfig.RecognizedKustomizationFileNames` and `api/internal/target.loadKustFile`.
pub const KUSTOMIZATION_FILES: [&str; 3] =
    ["kustomization.yaml", "kustomization.yml", "Kustomization"];

const MAX_DEPTH: usize = 64;

pub struct Builder<'a> {
    tree: &'a FileTree,
    /// Files of the folder being built, parsed ahead on every core (see `prefetch`).
    ready: HashMap<String, Built>,
    pub warnings: Vec<Warning>,
    /// Where the warnings of the owner being built start in `warnings` (see `start_owner`).
    owner_start: usize,
    /// Kinds of cluster-scoped custom resources seen in CRDs of this tree.
    cluster_kinds: BTreeSet<String>,
    stack: Vec<String>,
    /// How many times a patch asked whether it selects an object (see `patch::Names`).
    pub(crate) patch_checks: usize,
    /// Whether every patch asks every object, without `patch::Names`: the plain loop the
    /// index must agree with (the tests build both ways and compare).
    pub(crate) plain_patches: bool,
    /// What the caller reads of the objects, so that the build holds no more (see
    /// `keeping`); `None`: every object whole.
    keep: Option<Keep>,
    /// The documents of each patch text read so far: one patch is often applied by many
    /// Kustomizations (a parent's `patches` that gives every child the same patch).
    patches: HashMap<String, Arc<[Value]>>,
}

/// What a Flux Kustomization's spec writes into the kustomization at its `spec.path` before
/// kustomize builds it (fluxcd/pkg `kustomize/kustomize_generator.go`,
/// `Generator.GenerateManifest`), and the metadata kustomize-controller sets on every object
/// it applies (`KustomizationReconciler.apply`, `ssautil.SetCommonMetadata`). Images and
/// `buildMetadata` change content only and are not kept.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FluxSpec {
    /// Names the Kustomization in messages: its file and id.
    pub what: String,
    /// `spec.targetNamespace`: replaces the kustomization's `namespace`.
    pub target_namespace: Option<String>,
    /// `spec.namePrefix` and `spec.nameSuffix`: replace the kustomization's own.
    pub name_prefix: Option<String>,
    pub name_suffix: Option<String>,
    /// `spec.patches`: appended to the kustomization's `patches`.
    pub patches: Vec<Value>,
    /// `spec.components`: appended to the kustomization's `components`.
    pub components: Vec<Value>,
    /// `spec.ignoreMissingComponents`: a component that does not exist is left out.
    pub ignore_missing_components: bool,
    /// `spec.commonMetadata`: set on every object built, over what it has.
    pub labels: Map<String, Value>,
    pub annotations: Map<String, Value>,
}

/// Where the entries a Flux spec appended start in the kustomization it edited, to name them
/// in messages as the spec's.
#[derive(Debug, Clone, Default)]
struct Appended {
    what: String,
    patches: usize,
    components: usize,
}

impl Appended {
    /// How entry `i` of list `field` of kustomization `file` is named in messages.
    fn name(this: Option<&Appended>, file: &str, field: &str, i: usize) -> String {
        let from = match (this, field) {
            (Some(a), "patches") => Some(a.patches),
            (Some(a), "components") => Some(a.components),
            _ => None,
        };
        match (this, from) {
            (Some(a), Some(from)) if i >= from => format!("{}: spec.{field}[{}]", a.what, i - from),
            _ => format!("{file}: {field}[{i}]"),
        }
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
        // Cluster-scoped custom kinds are known from any CRD in the revision, each file's
        // read once for every tree that holds it (`PerText`).
        static KINDS: yaml::PerText<Vec<String>> = yaml::PerText::new();
        let crd = memchr::memmem::Finder::new("CustomResourceDefinition");
        for (path, text) in tree.files() {
            if crd.find(text.as_bytes()).is_none() {
                continue;
            }
            let kinds = KINDS.get(text, || {
                // Not `take`: only builds count as loads.
                let docs = yaml::parse_all(path, text).unwrap_or_default();
                docs.iter()
                    .filter_map(|doc| match object::crd_kind(doc) {
                        Some((_, kind, true)) => Some(kind),
                        _ => None,
                    })
                    .collect()
            });
            cluster_kinds.extend(kinds.iter().cloned());
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
            owner_start: 0,
            cluster_kinds: BTreeSet::new(),
            stack: Vec::new(),
            patch_checks: 0,
            plain_patches: false,
            keep: None,
            patches: HashMap::new(),
        }
    }

    /// Holds of the objects it loads only what `keep` says its caller reads (see `Keep`).
    pub fn keeping(mut self, keep: Keep) -> Self {
        self.keep = Some(keep);
        self
    }

    /// Keeps every object it builds whole after all, for a command that prints what is built
    /// (see `keeping`).
    pub fn keep_objects_whole(&mut self) {
        self.keep = None;
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
            .transform(file, dir, k, acc, None)?
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
        if !self.warnings[self.owner_start..].contains(&w) {
            self.warnings.push(w);
        }
    }

    /// Starts the warnings of a new owner's build: a warning is given once per owner, so
    /// that each owner whose build meets it is known to be partial (`owner_warnings`).
    pub fn start_owner(&mut self) {
        self.owner_start = self.warnings.len();
    }

    /// The warnings since `start_owner`.
    pub fn owner_warnings(&self) -> &[Warning] {
        &self.warnings[self.owner_start..]
    }

    fn is_cluster_scoped(&self, kind: &str) -> bool {
        CLUSTER_SCOPED.contains(&kind) || self.cluster_kinds.contains(kind)
    }

    /// Why the file at `path` has no text: it is not there, or kustomize cannot read it
    /// (not UTF-8, broken UTF-16: its build fails, as kustomize's does).
    fn not_read(&self, path: &str) -> BuildError {
        match self.tree.unreadable(path) {
            Some(why) => BuildError::Undecodable {
                path: self.tree.shown(path),
                why,
            },
            None => BuildError::FileNotFound(path.to_string()),
        }
    }

    /// The kustomization file of `dir`, if it has one; a folder of several is kustomize's
    /// error.
    pub fn kustomization_file(&self, dir: &str) -> Result<Option<String>, BuildError> {
        let mut found = KUSTOMIZATION_FILES
            .iter()
            .map(|f| join(dir, f).unwrap_or_default())
            .filter(|p| self.tree.is_file(p));
        let first = found.next();
        let rest: Vec<String> = found.collect();
        match first {
            Some(first) if !rest.is_empty() => Err(BuildError::ManyKustomizations {
                dir: dir.to_string(),
                files: [first]
                    .iter()
                    .chain(&rest)
                    .map(|f| format!("`{f}`"))
                    .collect::<Vec<_>>()
                    .join(" and "),
            }),
            first => Ok(first),
        }
    }

    /// `kustomize build DIR`: `dir` must hold a kustomization.
    pub fn build_dir(&mut self, dir: &str) -> Built {
        let file = self
            .kustomization_file(dir)?
            .ok_or_else(|| BuildError::NoKustomization(dir.to_string()))?;
        let k = self.read_for_kustomize(&file)?;
        let mut out = Vec::new();
        self.build_top(dir, &file, &k, None, &mut |r| out.push(r))?;
        Ok(out)
    }

    /// What Flux builds at `spec.path` for a Kustomization whose spec adds nothing (see
    /// `build_owner`).
    pub fn build_flux_path(&mut self, dir: &str) -> Built {
        let mut out = Vec::new();
        self.build_owner(dir, &FluxSpec::default(), &mut |r| out.push(r))?;
        Ok(out)
    }

    /// What a Flux Kustomization applies, as kustomize-controller builds it: the
    /// kustomization at `dir` (its `spec.path`; generated when there is none, see
    /// `flux_kustomization`) edited by `spec` (`write_spec`), built, and every object given
    /// `spec`'s common metadata; each object handed to `emit` in build order. Where no
    /// kustomization on the way transforms the list, objects are handed on as they are
    /// loaded and the build holds no list: a flat app tier of hundreds of thousands of
    /// objects is never held whole. When the build fails, `emit` may have had some of its
    /// objects.
    pub fn build_owner(
        &mut self,
        dir: &str,
        spec: &FluxSpec,
        emit: &mut Emit,
    ) -> Result<(), BuildError> {
        let (file, mut k) = self.flux_kustomization(dir)?;
        let appended = self.write_spec(spec, dir, &file, &mut k)?;
        let labels = Value::Object(spec.labels.clone());
        let annotations = Value::Object(spec.annotations.clone());
        let mut failed = None;
        self.build_top(dir, &file, &k, Some(&appended), &mut |mut r| {
            if failed.is_some() {
                return;
            }
            // kustomize-controller's `build`: "failed to decode Kubernetes apiVersion, kind
            // and name" (kustomize itself accepts an object without an apiVersion).
            let missing = [
                ("apiVersion", &["apiVersion"][..]),
                ("kind", &["kind"]),
                ("metadata.name", &["metadata", "name"]),
            ]
            .into_iter()
            .find(|(_, at)| !resource::has(&r.value, at));
            if let Some((missing, _)) = missing {
                failed = Some(BuildError::NotAnObject {
                    file: r.file.clone(),
                    document: r.index + 1,
                    missing,
                });
                return;
            }
            let one = std::slice::from_mut(&mut r);
            transform::add_metadata(one, "labels", &labels);
            transform::add_metadata(one, "annotations", &annotations);
            emit(r);
        })?;
        failed.map_or(Ok(()), Err)
    }

    /// The kustomization Flux builds at `spec.path` `dir`, with the name it has in messages:
    /// the folder's own, or the one Flux's generator writes when it has none (fluxcd/pkg
    /// `Generator.findOrGenerateKustomization`, `scanManifests`): every `.yaml`/`.yml` file
    /// under the folder, recursively, and every sub-folder holding a kustomization, built as
    /// one; when that lists nothing (a folder of a README or of templates), only `namespace:
    /// _placeholder` ("to avoid kustomization.yaml is empty"), which builds nothing. Only a
    /// folder that is not there fails (`KustomizationReconciler.reconcile`: "kustomization
    /// path not found").
    fn flux_kustomization(&self, dir: &str) -> Result<(String, Map<String, Value>), BuildError> {
        if let Some(file) = self.kustomization_file(dir)? {
            let k = self.read_kustomization(&file)?;
            return Ok((file, k));
        }
        if !self.tree.is_dir(dir) {
            return Err(BuildError::NoPath(dir.to_string()));
        }
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        // In the order of the generator's walk (`filepath.Walk`: each folder's entries by
        // name), which differs from path order where a name continues past a folder's
        // (`a/b.yaml` comes before `a.yaml`).
        let mut files: Vec<&str> = self.tree.files_under(dir).collect();
        if files.iter().any(|f| f[prefix.len()..].contains('/')) {
            files.sort_by(|a, b| a.split('/').cmp(b.split('/')));
        }
        let mut resources = Vec::new();
        let mut last_sub: Option<String> = None;
        for file in files {
            let below = file.strip_prefix(&prefix).unwrap_or(file);
            let segments: Vec<&str> = below.split('/').collect();
            let mut sub = dir.to_string();
            let mut kustomized = None;
            for (i, seg) in segments[..segments.len().saturating_sub(1)]
                .iter()
                .enumerate()
            {
                sub = join(&sub, seg).unwrap_or_default();
                // A sub-folder of several kustomization files is one too: its build fails.
                if !matches!(self.kustomization_file(&sub), Ok(None)) {
                    kustomized = Some(segments[..=i].join("/"));
                    break;
                }
            }
            match kustomized {
                // Files come in path order: a sub-folder's come together.
                Some(sub) if last_sub.as_ref() != Some(&sub) => {
                    resources.push(Value::String(sub.clone()));
                    last_sub = Some(sub);
                }
                Some(_) => {}
                None if is_manifest(file) => resources.push(Value::String(below.to_string())),
                None => {}
            }
        }
        let mut k = Map::new();
        if resources.is_empty() {
            k.insert("namespace".into(), Value::String("_placeholder".into()));
        } else {
            k.insert("resources".into(), Value::Array(resources));
        }
        let name = if dir.is_empty() { "." } else { dir };
        Ok((format!("{name} (the kustomization Flux generates)"), k))
    }

    /// Kustomization `k` (of `file` in `dir`) as Flux's generator edits it for `spec`
    /// (fluxcd/pkg `Generator.GenerateManifest`): `targetNamespace` replaces its `namespace`,
    /// `namePrefix`/`nameSuffix` replace its own, `patches` are appended to its patches and
    /// `components` to its components (so its own `namespace:` and transformers apply to
    /// the components' objects too); a component that does not exist is left out under
    /// `ignoreMissingComponents: true`, and one that is not a local relative path fails.
    fn write_spec(
        &self,
        spec: &FluxSpec,
        dir: &str,
        file: &str,
        k: &mut Map<String, Value>,
    ) -> Result<Appended, BuildError> {
        for (key, value) in [
            ("namespace", &spec.target_namespace),
            ("namePrefix", &spec.name_prefix),
            ("nameSuffix", &spec.name_suffix),
        ] {
            if let Some(v) = value {
                k.insert(key.into(), Value::String(v.clone()));
            }
        }
        // The kustomization's own entries come first and are named as its own, whether or
        // not the spec appends any.
        let appended = Appended {
            what: spec.what.clone(),
            patches: list(k, "patches", file)?.len(),
            components: list(k, "components", file)?.len(),
        };
        if !spec.patches.is_empty() {
            let mut patches = list(k, "patches", file)?.to_vec();
            // Flux's `kustomize.Patch`: the patch and its target, nothing else.
            patches.extend(spec.patches.iter().map(|p| {
                let mut m = Map::new();
                for key in ["patch", "target"] {
                    if let Some(v) = p.get(key) {
                        m.insert(key.into(), v.clone());
                    }
                }
                Value::Object(m)
            }));
            k.insert("patches".into(), Value::Array(patches));
        }
        if !spec.components.is_empty() {
            let mut components = list(k, "components", file)?.to_vec();
            for (i, c) in spec.components.iter().enumerate() {
                let Some(path) = c.as_str() else {
                    return Err(BuildError::SpecComponentNotAString {
                        what: spec.what.clone(),
                        index: i,
                    });
                };
                if !is_local_relative(path) {
                    return Err(BuildError::SpecComponentNotLocal {
                        what: spec.what.clone(),
                        path: path.to_string(),
                    });
                }
                let exists = match resolve(dir, path) {
                    Ref::Local(p) => self.tree.is_file(&p) || self.tree.is_dir(&p),
                    Ref::Remote | Ref::Escapes => false,
                };
                if exists || !spec.ignore_missing_components {
                    components.push(c.clone());
                }
            }
            k.insert("components".into(), Value::Array(components));
        }
        Ok(appended)
    }

    /// The outermost kustomization of a build, `k` of `file` in `dir`: built, its objects
    /// checked for one id twice (kustomize checks every accumulation, `resWrangler.Append`;
    /// a list built whole is checked where it is built) and those kustomize keeps for itself
    /// left out (`KustTarget.IgnoreLocal`: annotated `config.kubernetes.io/local-config`,
    /// unless `"false"`).
    fn build_top(
        &mut self,
        dir: &str,
        file: &str,
        k: &Map<String, Value>,
        appended: Option<&Appended>,
        emit: &mut Emit,
    ) -> Result<(), BuildError> {
        let mut ids = Ids::new(self, file);
        let mut failed = None;
        let whole = transforms(k);
        let mut out = |r: Resource| {
            if failed.is_some() {
                return;
            }
            if !whole {
                if let Err(e) = ids.insert(&r) {
                    failed = Some(e);
                    return;
                }
            }
            let local = r
                .value
                .get("metadata")
                .and_then(|m| m.get("annotations"))
                .and_then(|a| a.get("config.kubernetes.io/local-config"))
                .is_some_and(|v| v.as_str() != Some("false"));
            if !local {
                emit(r);
            }
        };
        self.nested(dir, file, |b| {
            b.stream_map(dir, file, k, appended, &mut out)
        })?;
        failed.map_or(Ok(()), Err)
    }

    /// The folder `dir` that entry `entry` of `resources` (named `what`) lists, built as
    /// `build_dir` builds it, each object handed to `emit` in build order. Its kustomization
    /// may not be a Component (see `check_kind`).
    fn stream_dir(
        &mut self,
        dir: &str,
        (what, entry): (&str, &str),
        emit: &mut Emit,
    ) -> Result<(), BuildError> {
        let file = self
            .kustomization_file(dir)?
            .ok_or_else(|| BuildError::NoKustomization(dir.to_string()))?;
        self.nested(dir, &file, |b| {
            let k = b.read_for_kustomize(&file)?;
            check_kind((what, entry), dir, &file, &k, false)?;
            b.stream_map(dir, &file, &k, None, emit)
        })
    }

    fn load_file(&mut self, path: &str) -> Built {
        let text = self.tree.read(path).ok_or_else(|| self.not_read(path))?;
        match self.ready.remove(path) {
            Some(loaded) => loaded,
            None => load(path, &text, self.keep),
        }
    }

    /// Loads `paths` (files a build is about to load) in parallel, so that building a folder
    /// of thousands of manifests uses every core.
    fn prefetch<S: AsRef<str> + Sync>(&mut self, paths: &[S]) {
        let (tree, keep) = (self.tree, self.keep);
        let loaded = crate::par::map(paths, |path| {
            let path = path.as_ref();
            tree.read(path).map(|text| load(path, &text, keep))
        });
        for (path, objects) in paths.iter().zip(loaded) {
            if let Some(objects) = objects {
                self.ready.insert(path.as_ref().to_string(), objects);
            }
        }
    }

    /// Kustomization `file` read for kustomize to build: one that says nothing fails
    /// (`Kustomization.CheckEmpty`: "kustomization.yaml is empty"). Flux's generator saves
    /// the one at `spec.path` from that (see `flux_kustomization`).
    fn read_for_kustomize(&self, file: &str) -> Result<Map<String, Value>, BuildError> {
        let k = self.read_kustomization(file)?;
        if k.keys().all(|key| key == "apiVersion" || key == "kind") {
            return Err(BuildError::Empty(file.to_string()));
        }
        Ok(k)
    }

    fn read_kustomization(&self, file: &str) -> Result<Map<String, Value>, BuildError> {
        let text = self.tree.read(file).ok_or_else(|| self.not_read(file))?;
        match yaml::parse_kustomization(file, &text).map_err(|e| BuildError::Yaml(Box::new(e)))? {
            Value::Object(m) => types::check(file, &m).map(|()| m),
            Value::Null => Ok(Map::new()),
            _ => Err(BuildError::NotAMapping(file.to_string())),
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

    /// The component `file` of `dir`, which entry `entry` of `components` (named `what`)
    /// lists, built over `acc` (the list of the kustomization it is a component of). Its
    /// kustomization must be a Component (see `check_kind`).
    pub(super) fn build_component(
        &mut self,
        dir: &str,
        file: &str,
        (what, entry): (&str, &str),
        mut acc: Vec<Resource>,
    ) -> Built {
        self.nested(dir, file, |b| {
            let k = b.read_for_kustomize(file)?;
            check_kind((what, entry), dir, file, &k, true)?;
            b.resources(dir, file, &k, &mut |r| acc.push(r))?;
            b.transform(file, dir, &k, acc, None)
        })
    }

    /// Kustomization `k` of `file` in `dir` built, each object handed to `emit` as it is
    /// loaded when the kustomization transforms nothing, else once its list is built and
    /// transformed. `appended` names the entries a Flux spec added to it.
    fn stream_map(
        &mut self,
        dir: &str,
        file: &str,
        k: &Map<String, Value>,
        appended: Option<&Appended>,
        emit: &mut Emit,
    ) -> Result<(), BuildError> {
        if transforms(k) {
            let mut acc = Vec::new();
            self.resources(dir, file, k, &mut |r| acc.push(r))?;
            self.transform(file, dir, k, acc, appended)?
                .into_iter()
                .for_each(emit);
        } else {
            self.resources(dir, file, k, emit)?;
            // Nothing to transform: its generators, and the warnings of unmodelled keys.
            self.transform(file, dir, k, Vec::new(), appended)?
                .into_iter()
                .for_each(emit);
        }
        Ok(())
    }

    /// The objects of kustomization `k`'s `resources` and `bases`, in order, untransformed.
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
            for (i, entry) in list(k, field, file)?.iter().enumerate() {
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
                    let what = format!("{file}: {field}[{i}]");
                    self.stream_dir(&path, (&what, entry), emit)?;
                } else {
                    return Err(BuildError::MissingResource {
                        file: file.to_string(),
                        entry: entry.to_string(),
                    });
                }
            }
        }
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
            return Err(BuildError::EntryNotAString {
                file: file.to_string(),
                field: field.to_string(),
            });
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
    pub(super) fn generators(
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

/// The ids of a build's objects as kustomize compares them (kyaml `resid.ResId.Equals`:
/// group, version, kind, name and `EffectiveNamespace`, where no namespace is `default` and
/// a cluster-scoped object has none), each with the file it came from.
struct Ids {
    cluster_kinds: BTreeSet<String>,
    /// The kustomization whose build is checked.
    file: String,
    /// The files objects came from, each once in a row (a file's objects come together).
    files: Vec<String>,
    /// Each id, with the index in `files` of the file it came from.
    seen: HashMap<String, usize>,
}

impl Ids {
    fn new(builder: &Builder<'_>, file: &str) -> Ids {
        Ids {
            cluster_kinds: builder.cluster_kinds.clone(),
            file: file.to_string(),
            files: Vec::new(),
            seen: HashMap::new(),
        }
    }

    /// Records `r`; an object with its id seen already fails the build.
    fn insert(&mut self, r: &Resource) -> Result<(), BuildError> {
        let key = self.key(r, r.meta_str("name"), r.meta_str("namespace"));
        match self.seen.entry(key) {
            std::collections::hash_map::Entry::Occupied(first) => Err(BuildError::DuplicateId {
                file: self.file.clone(),
                id: Ids::show(r),
                first: self.files[*first.get()].clone(),
                second: r.file.clone(),
            }),
            std::collections::hash_map::Entry::Vacant(v) => {
                if self.files.last() != Some(&r.file) {
                    self.files.push(r.file.clone());
                }
                v.insert(self.files.len() - 1);
                Ok(())
            }
        }
    }

    /// The id of `r` were it named `name` in `namespace`, as kustomize compares ids.
    fn key(&self, r: &Resource, name: &str, namespace: &str) -> String {
        let kind = r.kind();
        let namespace = if self.cluster_scoped(kind) {
            ""
        } else if namespace.is_empty() {
            "default"
        } else {
            namespace
        };
        format!("{}\0{kind}\0{namespace}\0{name}", r.api_version())
    }

    fn cluster_scoped(&self, kind: &str) -> bool {
        CLUSTER_SCOPED.contains(&kind) || self.cluster_kinds.contains(kind)
    }

    /// Whether `namespace: ns` would move two objects of `acc` onto one id (see
    /// `NamespaceConflict`); checked before the move, to name both as they were.
    fn moved_onto(
        builder: &Builder<'_>,
        file: &str,
        ns: &str,
        acc: &[Resource],
    ) -> Result<(), BuildError> {
        let ids = Ids::new(builder, file);
        let mut seen: HashMap<String, usize> = HashMap::new();
        for (i, r) in acc.iter().enumerate() {
            let (name, namespace) = match r.kind() {
                "Namespace" => (ns, ""),
                kind if ids.cluster_scoped(kind) => (r.meta_str("name"), ""),
                _ => (r.meta_str("name"), ns),
            };
            let key = ids.key(r, name, namespace);
            if let Some(&first) = seen.get(&key) {
                let was = |r: &Resource| format!("`{}` ({})", Ids::show(r), r.file);
                let id = if namespace.is_empty() {
                    format!("{}/{name}", r.kind())
                } else {
                    format!("{}/{namespace}/{name}", r.kind())
                };
                return Err(BuildError::NamespaceConflict {
                    file: file.to_string(),
                    namespace: ns.to_string(),
                    id,
                    first: was(&acc[first]),
                    second: was(r),
                });
            }
            seen.insert(key, i);
        }
        Ok(())
    }

    /// Every object of `acc` recorded (see `insert`).
    fn check(builder: &Builder<'_>, file: &str, acc: &[Resource]) -> Result<(), BuildError> {
        let mut ids = Ids::new(builder, file);
        acc.iter().try_for_each(|r| ids.insert(r))
    }

    fn show(r: &Resource) -> String {
        r.id()
            .map_or_else(|| r.meta_str("name").to_string(), |id| id.to_string())
    }
}

/// Whether a `spec.components` entry is a local relative path (fluxcd/pkg
/// `kustomize.IsLocalRelativePath`): not a remote URL form kustomize knows, not absolute.
fn is_local_relative(path: &str) -> bool {
    let lower = path.to_lowercase();
    let remote = [
        "git::",
        "gh:",
        "ssh://",
        "https://",
        "http://",
        "git@",
        "github.com:",
        "github.com/",
    ]
    .iter()
    .any(|p| p.len() < lower.len() && lower.starts_with(p));
    !remote
        && !path.starts_with('/')
        && !lower
            .strip_prefix("file://")
            .unwrap_or(&lower)
            .starts_with('/')
}

/// Kustomize's check of a folder one kustomization lists (`KustTarget.accumulateDirectory`,
/// since components came, kustomize v3.8; v5.8 still): a folder under `components` must hold
/// a Component ("expected kind 'Component' for path '...' but got '...'"), one under
/// `resources` (or `bases`) must not ("expected kind != 'Component' for path '...'"). Its
/// kind is `Kustomization` when it says none (`Kustomization.FixKustomization`). Only listed
/// folders are checked: `kustomize build` of a Component's own folder builds it, and so does
/// Flux at a `spec.path` (fluxcd/pkg's generator keeps the kind it finds). `what` and `entry`
/// name the entry, `file` is the kustomization of `dir`.
fn check_kind(
    (what, entry): (&str, &str),
    dir: &str,
    file: &str,
    k: &Map<String, Value>,
    component: bool,
) -> Result<(), BuildError> {
    let kind = match k.get("kind").and_then(Value::as_str) {
        None | Some("") => "Kustomization",
        Some(kind) => kind,
    };
    let path = if dir.is_empty() { "." } else { dir };
    let (is, says) = match (component, kind == "Component") {
        (true, false) => (
            format!("a {kind}, not a Component"),
            format!("expected kind 'Component' for path '{path}' but got '{kind}'"),
        ),
        (false, true) => (
            "a Component, which only `components` may list".to_string(),
            format!("expected kind != 'Component' for path '{path}'"),
        ),
        _ => return Ok(()),
    };
    Err(BuildError::WrongKind {
        what: what.to_string(),
        entry: entry.to_string(),
        kustomization: file.to_string(),
        is,
        says,
    })
}

fn list<'v>(k: &'v Map<String, Value>, field: &str, file: &str) -> Result<&'v [Value], BuildError> {
    match k.get(field) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(_) => Err(BuildError::NotAList {
            file: file.to_string(),
            field: field.to_string(),
        }),
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
            ("app/ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: old}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r}\n---\napiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: v1beta1.metrics.k8s.io}\n"),
        ]);
        let mut b = Builder::new(&tree);
        let out = b.build_dir("app").unwrap();
        // kustomize's prefix and suffix skip Namespaces, CRDs and APIServices.
        assert_eq!(
            ids(&out),
            [
                "APIService/v1beta1.metrics.k8s.io",
                "ClusterRole/p-r-s",
                "ConfigMap/media/p-cm-s",
                "Namespace/media"
            ]
        );
    }

    #[test]
    fn an_object_is_held_as_its_head_until_a_patch_reads_it_whole() {
        // The caller holds ConfigMaps whole, and keeps the keys of every other one's rest.
        let keep = Keep {
            whole: |_, kind| kind == "ConfigMap",
            rest: |rest| {
                let keys: Vec<String> = rest
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, _)| k.clone())
                    .collect();
                Arc::new(keys)
            },
        };
        let list = "apiVersion: v1\nkind: List\nitems:\n  - {apiVersion: example.com/v1, kind: Settings, metadata: {name: a}, data: {k: '1'}}\n  - {apiVersion: example.com/v1, kind: Settings, metadata: {name: b}, data: {k: '${V}'}}\n  - {apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {k: '2'}}\n";
        let tree = FileTree::from_files([
            ("base/kustomization.yaml", "namespace: ns\nresources: [list.yaml]\n"),
            ("base/list.yaml", list),
            ("o/kustomization.yaml", "resources: [../base]\npatches:\n  - target: {name: b}\n    patch: |\n      - op: add\n        path: /data/j\n        value: '2'\n"),
        ]);
        let out = Builder::new(&tree).keeping(keep).build_dir("o").unwrap();
        assert_eq!(out.len(), 3);
        // Not patched: the head, transformed, and what the caller keeps of the rest.
        assert_eq!(out[0].value.get("data"), None);
        assert_eq!(out[0].value["metadata"]["namespace"], "ns");
        assert_eq!(
            out[0].kept::<Vec<String>>(),
            Some(&vec!["data".to_string()])
        );
        // Patched: the second item whole again, keeping the namespace its base set.
        assert_eq!(
            out[1].value["data"],
            serde_json::json!({"k": "${V}", "j": "2"})
        );
        assert_eq!(out[1].value["metadata"]["namespace"], "ns");
        assert_eq!(out[1].kept::<Vec<String>>(), None);
        // Held whole as it was loaded.
        assert_eq!(out[2].value["data"], serde_json::json!({"k": "2"}));
        // Without a `Keep`, every object is whole.
        let out = Builder::new(&tree).build_dir("o").unwrap();
        assert_eq!(out[0].value["data"], serde_json::json!({"k": "1"}));
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
        let files = [
            ("apps/a.yaml", CM),
            ("apps/README.md", "# apps\n"),
            (
                "apps/sub/deep/b.yaml",
                CM.replace("name: cm", "name: b").leak(),
            ),
            (
                "apps/k/kustomization.yaml",
                "resources: [c.yaml]\nnamespace: kk\n",
            ),
            ("apps/k/c.yaml", CM.replace("name: cm", "name: c").leak()),
        ];
        let tree = FileTree::from_files(files);
        let mut b = Builder::new(&tree);
        let out = b.build_flux_path("apps").unwrap();
        assert_eq!(
            ids(&out),
            ["ConfigMap/a/b", "ConfigMap/a/cm", "ConfigMap/kk/c"]
        );
        assert!(b.build_dir("apps").is_err());
        // The walk's order: a folder before a file whose name continues the folder's.
        let walk = FileTree::from_files([
            (
                "w/k.yaml",
                CM.replace("name: cm", "name: file").leak() as &str,
            ),
            ("w/k/x.yaml", CM.replace("name: cm", "name: folder").leak()),
        ]);
        let out = Builder::new(&walk).build_flux_path("w").unwrap();
        let order: Vec<&str> = out.iter().map(|r| r.meta_str("name")).collect();
        assert_eq!(order, ["folder", "file"]);
        // A YAML file that is not an object fails the generated kustomization (fluxcd/pkg
        // `scanManifests`: "failed to decode Kubernetes YAML"), where it used to be left out.
        let with_notes = FileTree::from_files(files).with_file("apps/notes.yaml", "just: notes\n");
        assert_eq!(
            Builder::new(&with_notes)
                .build_flux_path("apps")
                .unwrap_err(),
            BuildError::NotAnObject {
                file: "apps/notes.yaml".into(),
                document: 1,
                missing: "kind"
            }
        );
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
        // Generators run after components (kustomize's `KustTarget.accumulateTarget`).
        assert_eq!(
            features,
            ["remote base", "helmCharts", "generator with hash suffix"]
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
        let build = |spec: FluxSpec| {
            let mut out = Vec::new();
            let mut b = Builder::new(&tree);
            b.build_owner("apps", &spec, &mut |r| {
                out.push(r.id().map(|i| i.to_string()).unwrap_or_default())
            })
            .unwrap();
            out
        };
        assert_eq!(
            build(FluxSpec::default()),
            [
                "ConfigMap/a/a",
                "ConfigMap/a/c",
                "ConfigMap/a/d",
                "ConfigMap/a/b",
                "ConfigMap/g",
                "ConfigMap/t/e"
            ]
        );
        let prefixed = FluxSpec {
            name_prefix: Some("p-".into()),
            ..FluxSpec::default()
        };
        assert_eq!(
            build(prefixed),
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
        // Listed out of path order.
        let listed: Vec<String> = names.iter().rev().map(|n| format!("{n}.yaml")).collect();
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

    /// kustomize's id conflicts, each checked with `kubectl kustomize` on the same files:
    /// `resWrangler.Append` refuses a second object with an id it holds (`resid.ResId.Equals`:
    /// no namespace is `default`; the version counts), `NamespaceTransformerPlugin` two
    /// objects moved onto one id, and a patch that renames one object onto another fails
    /// when the list is made again.
    #[test]
    fn kustomize_refuses_two_objects_with_one_id() {
        let cm = |name: &str, ns: Option<&str>| {
            let ns = ns.map(|n| format!(", namespace: {n}")).unwrap_or_default();
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}{ns}}}\n")
        };
        let build = |k: &str, docs: &[String]| {
            let text = docs.join("---\n");
            let tree = FileTree::from_files([
                ("a/kustomization.yaml", k),
                ("a/cm.yaml", text.as_str()),
                ("a/other.yaml", text.as_str()),
            ]);
            Builder::new(&tree).build_dir("a")
        };
        let twice = build("resources: [cm.yaml, cm.yaml]\n", &[cm("x", None)]);
        assert!(
            matches!(&twice, Err(BuildError::DuplicateId { id, .. }) if id == "ConfigMap/x"),
            "{twice:?}"
        );
        assert!(twice
            .unwrap_err()
            .to_string()
            .contains("may not add resource with an already registered id"));
        let default = build(
            "resources: [cm.yaml]\n",
            &[cm("x", None), cm("x", Some("default"))],
        );
        assert!(matches!(default, Err(BuildError::DuplicateId { .. })));
        let versions = build(
            "resources: [cm.yaml]\n",
            &[cm("x", None), cm("x", None).replace("v1", "v2")],
        );
        assert_eq!(versions.map(|o| o.len()), Ok(2));
        let generated = build(
            "resources: [cm.yaml]\nconfigMapGenerator: [{name: x, options: {disableNameSuffixHash: true}}]\n",
            &[cm("x", None)],
        );
        assert!(matches!(generated, Err(BuildError::DuplicateId { .. })));
        let moved = build(
            "namespace: c\nresources: [cm.yaml]\n",
            &[cm("x", Some("a")), cm("x", Some("b"))],
        );
        assert!(
            matches!(&moved, Err(BuildError::NamespaceConflict { namespace, id, .. }) if namespace == "c" && id == "ConfigMap/c/x"),
            "{moved:?}"
        );
        let ns = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n".to_string();
        let namespaces = build(
            "namespace: one\nresources: [cm.yaml]\n",
            &[ns.clone(), ns.replace("name: a", "name: b")],
        );
        assert_eq!(
            namespaces.unwrap_err().to_string(),
            "a/kustomization.yaml: `namespace: one` makes both `Namespace/a` (a/cm.yaml) and `Namespace/b` (a/cm.yaml) `Namespace/one`; kustomize fails: namespace transformation produces ID conflict"
        );
        let renamed = build(
            "resources: [cm.yaml]\npatches:\n  - target: {name: yy}\n    patch: |\n      - op: replace\n        path: /metadata/name\n        value: x\n",
            &[cm("x", None), cm("yy", None)],
        );
        assert!(matches!(renamed, Err(BuildError::DuplicateId { .. })));
        // One id in two builds of a plain folder's sub-folders, and in one plain folder.
        let tree = FileTree::from_files([
            ("p/a/kustomization.yaml", "resources: [cm.yaml]\n"),
            ("p/a/cm.yaml", CM),
            ("p/b.yaml", CM),
        ]);
        assert!(matches!(
            Builder::new(&tree).build_flux_path("p"),
            Err(BuildError::DuplicateId { .. })
        ));
    }

    /// kyaml `RNode.GetValidatedMetadata` (kind and name), kustomize-controller's `build`
    /// (apiVersion): a document that is not an object fails the build.
    #[test]
    fn a_document_without_a_kind_or_a_name_fails_the_build() {
        let build = |doc: &str| {
            let tree = FileTree::from_files([
                ("a/kustomization.yaml", "resources: [x.yaml]\n"),
                ("a/x.yaml", doc),
            ]);
            let mut b = Builder::new(&tree);
            let mut n = 0;
            b.build_owner("a", &FluxSpec::default(), &mut |_| n += 1)
                .map(|()| n)
        };
        let missing = |doc: &str| match build(doc) {
            Err(BuildError::NotAnObject { missing, .. }) => missing,
            other => panic!("{other:?}"),
        };
        assert_eq!(missing("apiVersion: v1\nmetadata: {name: x}\n"), "kind");
        assert_eq!(
            missing("apiVersion: v1\nkind: ConfigMap\nmetadata: {labels: {a: b}}\n"),
            "metadata.name"
        );
        assert_eq!(
            missing("kind: ConfigMap\nmetadata: {name: x}\n"),
            "apiVersion"
        );
        assert_eq!(missing("creation_rules: [{age: x}]\n"), "kind");
        assert_eq!(build("# nothing but a comment\n"), Ok(0));
        // kustomize keeps for itself what is annotated `config.kubernetes.io/local-config`.
        let local = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  annotations: {config.kubernetes.io/local-config: 'true'}\n";
        assert_eq!(build(local), Ok(0));
        assert_eq!(build(&local.replace("'true'", "'false'")), Ok(1));
    }

    /// fluxcd/pkg `Generator.GenerateManifest`: the spec edits the kustomization at
    /// `spec.path` rather than wrapping it (the CLI tests hold each case against kustomize).
    #[test]
    fn a_flux_spec_is_written_into_the_kustomization_at_its_path() {
        let tree = FileTree::from_files([
            ("app/kustomization.yaml", "namespace: own\nnamePrefix: own-\nresources: [cm.yaml]\n"),
            ("app/cm.yaml", CM),
            ("c/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [extra.yaml]\n"),
            ("c/extra.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\n"),
            ("empty/README.md", "# nothing to apply\n"),
        ]);
        let build = |dir: &str, spec: &FluxSpec| {
            let mut out = Vec::new();
            Builder::new(&tree).build_owner(dir, spec, &mut |r| out.push(r))?;
            Ok::<_, BuildError>(ids(&out))
        };
        let spec = FluxSpec {
            what: "ks.yaml (Kustomization/flux-system/app)".into(),
            name_prefix: Some("flux-".into()),
            components: vec!["../c".into(), "../gone".into()],
            ignore_missing_components: true,
            ..FluxSpec::default()
        };
        assert_eq!(
            build("app", &spec),
            Ok(vec![
                "ConfigMap/own/flux-cm".to_string(),
                "ConfigMap/own/flux-extra".to_string()
            ])
        );
        let strict = FluxSpec {
            ignore_missing_components: false,
            ..spec.clone()
        };
        assert_eq!(
            build("app", &strict).unwrap_err().to_string(),
            "ks.yaml (Kustomization/flux-system/app): spec.components[1]: component `../gone` does not exist"
        );
        let remote = FluxSpec {
            components: vec!["https://github.com/x/y//c".into()],
            ..spec.clone()
        };
        assert!(build("app", &remote)
            .unwrap_err()
            .to_string()
            .ends_with("component path 'https://github.com/x/y//c' must be local and relative"));
        // A folder of no manifests builds nothing; its components would land in the
        // generator's placeholder namespace.
        assert_eq!(build("empty", &FluxSpec::default()), Ok(vec![]));
        assert_eq!(
            build("empty", &spec),
            Ok(vec!["ConfigMap/_placeholder/flux-extra".to_string()])
        );
        // An empty kustomization fails kustomize, but not at `spec.path`: Flux's generator
        // gives it `buildMetadata` when it lists no resources.
        let empty = FileTree::from_files([
            (
                "e/kustomization.yaml",
                "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n",
            ),
            ("o/kustomization.yaml", "resources: [../e]\n"),
        ]);
        assert_eq!(
            Builder::new(&empty).build_flux_path("e").map(|o| o.len()),
            Ok(0)
        );
        assert_eq!(
            Builder::new(&empty)
                .build_flux_path("o")
                .unwrap_err()
                .to_string(),
            "e/kustomization.yaml: kustomization.yaml is empty; kustomize fails on it"
        );
        assert_eq!(
            build("nowhere", &spec),
            Err(BuildError::NoPath("nowhere".into()))
        );
        // commonMetadata is set on every object after the build, over what it has.
        let labelled = FluxSpec {
            labels: serde_json::json!({"team": "media"})
                .as_object()
                .cloned()
                .unwrap(),
            ..FluxSpec::default()
        };
        let mut out = Vec::new();
        Builder::new(&tree)
            .build_owner("app", &labelled, &mut |r| out.push(r))
            .unwrap();
        assert_eq!(out[0].value["metadata"]["labels"]["team"], "media");
    }

    /// Kustomize's `KustTarget.accumulateDirectory`: a folder reached through `resources`
    /// (or `bases`) must not be a Component, one reached through `components` must be one;
    /// the folder a build starts from may be either (`kustomize build` of a Component, or a
    /// Flux `spec.path` holding one, builds).
    #[test]
    fn a_folder_is_a_component_only_where_components_lists_it() {
        const COMPONENT: &str = "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n";
        let tree = FileTree::from_files([
            (
                "components/common/kustomization.yaml",
                format!("{COMPONENT}resources: [./alerts]\n").leak() as &str,
            ),
            (
                "components/common/alerts/kustomization.yaml",
                format!("{COMPONENT}resources: [cm.yaml]\n").leak(),
            ),
            ("components/common/alerts/cm.yaml", CM),
            (
                "apps/kustomization.yaml",
                "components: [../components/common]\n",
            ),
            ("base/kustomization.yaml", "resources: [cm.yaml]\n"),
            ("base/cm.yaml", CM),
            ("wrong/kustomization.yaml", "components: [../base]\n"),
            (
                "generated/c/kustomization.yaml",
                format!("{COMPONENT}resources: [cm.yaml]\n").leak(),
            ),
            ("generated/c/cm.yaml", CM),
        ]);
        let err = |dir: &str| Builder::new(&tree).build_flux_path(dir).unwrap_err();
        assert_eq!(
            err("apps"),
            BuildError::WrongKind {
                what: "components/common/kustomization.yaml: resources[0]".into(),
                entry: "./alerts".into(),
                kustomization: "components/common/alerts/kustomization.yaml".into(),
                is: "a Component, which only `components` may list".into(),
                says: "expected kind != 'Component' for path 'components/common/alerts'".into(),
            }
        );
        assert_eq!(
            err("wrong").to_string(),
            "wrong/kustomization.yaml: components[0] `../base`: `base/kustomization.yaml` is a \
             Kustomization, not a Component; kustomize fails: expected kind 'Component' for \
             path 'base' but got 'Kustomization'"
        );
        // Flux's generated kustomization lists the sub-folder under `resources`.
        assert!(matches!(err("generated"), BuildError::WrongKind { .. }));
        // A spec.components entry is named as the spec's.
        let spec = FluxSpec {
            what: "ks.yaml (Kustomization/flux-system/app)".into(),
            components: vec!["../../base".into()],
            ..FluxSpec::default()
        };
        let e = Builder::new(&tree)
            .build_owner("generated/c", &spec, &mut |_| {})
            .unwrap_err();
        assert!(
            e.to_string().starts_with(
                "ks.yaml (Kustomization/flux-system/app): spec.components[0] `../../base`:"
            ),
            "{e}"
        );
        // A Component built on its own builds.
        for dir in ["components/common/alerts", "generated/c"] {
            assert_eq!(Builder::new(&tree).build_dir(dir).map(|o| o.len()), Ok(1));
            assert_eq!(
                Builder::new(&tree).build_flux_path(dir).map(|o| o.len()),
                Ok(1)
            );
        }
    }
}
