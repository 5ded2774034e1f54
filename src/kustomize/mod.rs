//! A native kustomize builder, enough to know *which objects* a build yields: resources,
//! components, patches (strategic merge as a deep merge of mappings with lists replaced, JSON
//! 6902), `namespace`, `namePrefix`/`nameSuffix`, labels and annotations, ConfigMap and
//! Secret generators with their data and hash suffixes, `replacements`, the name references
//! that follow a renamed object (`nameref`: kustomize's defaults and `configurations`); a
//! folder's kustomization
//! (`build_dir`) or one its caller made or edited
//! (`build_kustomization`: Flux's, in `flux::generated`). A build fails where kustomize fails
//! it (`BuildError`). Anything else that can change the set of objects is reported as a
//! `Warning` naming the file and the feature: a build is never silently incomplete. The
//! builder holds of each object only what its caller reads (`Keep`), and knows nothing of
//! what the caller is.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use serde_json::{Map, Value};

mod error;
mod generate;
mod keys;
mod nameref;
pub mod object;
mod patch;
mod remember;
mod replace;
mod resolve;
mod resource;
pub mod target;
mod transform;
mod types;

pub use error::{BuildError, Warning};
pub use remember::{Loads, Remembered, Remembering, Rewrite, Shared};
pub use resolve::{resolve, resolve_under, Ref};
pub use resource::{has, Keep, Kept, Resource};
pub use transform::add_metadata;

use crate::fs::join;
use crate::tree::FileTree;
use crate::yaml;
use object::CLUSTER_SCOPED;
use resource::{load, Built};

pub use crate::fs::KUSTOMIZATION_FILES;

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
    /// The name references of the build under way, once a `configurations` file added to
    /// kustomize's defaults (see `nameref`).
    name_refs: Option<nameref::Config>,
    /// The files loaded over this tree and the one before, while a history's build is made
    /// afresh (see `remember::Loads`).
    loads: Option<Arc<remember::Loads>>,
}

/// Entries a build's caller appended to a kustomization's `patches` and `components` (Flux's
/// generator appends a Kustomization's `spec.patches` and `spec.components`): named in
/// messages as the caller's, `{by}.{field}[i]`, counted from the first appended.
#[derive(Debug, Clone, Default)]
pub struct Appended {
    /// How the caller names its entries (`ks.yaml (Kustomization/flux-system/app): spec`).
    pub by: String,
    /// How many entries of `patches` and of `components` are the kustomization's own.
    pub patches: usize,
    pub components: usize,
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
            (Some(a), Some(from)) if i >= from => format!("{}.{field}[{}]", a.by, i - from),
            _ => format!("{file}: {field}[{i}]"),
        }
    }
}

/// Where a build hands its objects, one at a time and in build order.
pub type Emit<'e> = dyn FnMut(Resource) + 'e;

/// How many files a build parses ahead (on every core) of the one it loads: enough to keep
/// the cores busy, few enough that a folder of 100,000 files is not held parsed at once.
pub const AHEAD: usize = 1024;

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

/// The cluster-scoped kinds the CRDs of file `path` (`text`) declare, read once for every
/// tree that holds the text (`PerText`). A text without the word is known to have none once
/// too: a history's trees hold mostly the texts of the one before.
pub fn crd_kinds(path: &str, text: &crate::yaml::Text) -> Arc<Vec<String>> {
    static KINDS: yaml::PerText<Vec<String>> = yaml::PerText::new();
    KINDS.get(text, || {
        if memchr::memmem::find(text.as_bytes(), b"CustomResourceDefinition").is_none() {
            return Vec::new();
        }
        // Not `take`: only builds count as loads.
        let docs = yaml::parse_all(path, text).unwrap_or_default();
        docs.iter()
            .filter_map(|doc| match object::crd_kind(doc) {
                Some((_, kind, true)) => Some(kind),
                _ => None,
            })
            .collect()
    })
}

impl<'a> Builder<'a> {
    pub fn new(tree: &'a FileTree) -> Builder<'a> {
        // Cluster-scoped custom kinds are known from any CRD in the revision.
        let mut cluster_kinds = BTreeSet::new();
        for (path, text) in tree.files() {
            cluster_kinds.extend(crd_kinds(path, text).iter().cloned());
        }
        Builder::with_cluster_kinds(tree, cluster_kinds)
    }

    /// `new`, with the cluster-scoped kinds of the tree's CRDs known already.
    pub fn with_cluster_kinds(tree: &'a FileTree, cluster_kinds: BTreeSet<String>) -> Builder<'a> {
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
            name_refs: None,
            loads: None,
        }
    }

    /// Holds of the objects it loads only what `keep` says its caller reads (see `Keep`).
    pub fn keeping(mut self, keep: Keep) -> Self {
        self.keep = Some(keep);
        self
    }

    /// Loads files from `loads` where they were loaded before (see `remember::Loads`).
    pub fn loading(mut self, loads: Option<Arc<Loads>>) -> Self {
        self.loads = loads;
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

    /// The tree it builds from.
    pub fn tree(&self) -> &'a FileTree {
        self.tree
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
        self.build_kustomization(dir, &file, &k, None, &mut |r| out.push(r))?;
        Ok(out)
    }

    /// The outermost kustomization of a build, `k` of `file` in `dir` (a folder's own, or one
    /// its caller made or edited: `appended` names the entries it appended), built: each
    /// object handed to `emit` in build order, checked for one id twice (kustomize checks
    /// every accumulation, `resWrangler.Append`; a list built whole is checked where it is
    /// built), and those kustomize keeps for itself left out (`KustTarget.IgnoreLocal`:
    /// annotated `config.kubernetes.io/local-config`, unless `"false"`). Where no
    /// kustomization of the build transforms or generates (`may_rename`), objects are handed
    /// on as they are loaded and the build holds no list: a flat app tier of hundreds of
    /// thousands of objects is never held whole. Else the list is held until the fields that
    /// name a renamed object are written (`nameref`). When the build fails, `emit` may have
    /// had some of its objects.
    pub fn build_kustomization(
        &mut self,
        dir: &str,
        file: &str,
        k: &Map<String, Value>,
        appended: Option<&Appended>,
        emit: &mut Emit,
    ) -> Result<(), BuildError> {
        let mut ids = Ids::new(self, file);
        let mut failed = None;
        let whole = keys::transforms(k);
        self.name_refs = None;
        // A build that renames an object is held whole until the fields that name it are
        // written with its new name (kustomize `FixBackReferences`, after the hash
        // suffixes); any other streams.
        let mut held = self
            .may_rename(dir, k, 0, &mut BTreeSet::new())
            .then(Vec::new);
        let mut out = |mut r: Resource| {
            if failed.is_some() {
                return;
            }
            if !whole {
                if let Err(e) = ids.insert(&r) {
                    failed = Some(e);
                    return;
                }
            }
            // The build is transformed: a generated object's name gets its content hash
            // (kustomize `KustTarget.addHashesToNames`, after every transformer).
            if r.hash {
                let hashed = format!(
                    "{}-{}",
                    r.meta_str("name"),
                    generate::content_hash(&r.value)
                );
                r.set_meta("name", hashed);
                r.hash = false;
            }
            match &mut held {
                Some(held) => held.push(r),
                None => emit_unless_local(r, emit),
            }
        };
        self.nested(dir, file, |b| {
            b.stream_map(dir, file, k, appended, &mut out)
        })?;
        if let Some(e) = failed {
            return Err(e);
        }
        if let Some(mut held) = held {
            let config = self.name_refs.take();
            let config = config.as_ref().unwrap_or(nameref::Config::defaults());
            let tree = self.tree;
            nameref::fix(
                config,
                &mut held,
                &|kind| self.is_cluster_scoped(kind),
                &mut |r| r.make_whole(tree),
            )
            .map_err(|e| match e {
                nameref::Fix::Whole(e) => e,
                nameref::Fix::Reference(why) => BuildError::NameReference {
                    what: file.to_string(),
                    why,
                },
            })?;
            for r in held {
                emit_unless_local(r, emit);
            }
        }
        Ok(())
    }

    /// Whether building kustomization `k` of `dir` (`depth` kustomizations in) may rename an
    /// object: it, or one it reaches through `resources` or `bases`, has a transformer or a
    /// generator. Reads only kustomizations, each folder once (`seen`); one it cannot read,
    /// or one deeper than a build goes (`MAX_DEPTH`), may (its build says why).
    fn may_rename(
        &self,
        dir: &str,
        k: &Map<String, Value>,
        depth: usize,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        let generates = ["configMapGenerator", "secretGenerator"]
            .iter()
            .any(|g| list(k, g, dir).is_ok_and(|l| !l.is_empty()));
        if keys::transforms(k) || generates || depth > MAX_DEPTH {
            return true;
        }
        ["resources", "bases"]
            .iter()
            .filter_map(|field| list(k, field, dir).ok())
            .flatten()
            .filter_map(|entry| resolve(dir, entry.as_str()?).local())
            .filter(|path| self.tree.is_dir(path))
            .any(|path| {
                if !seen.insert(path.clone()) {
                    return false;
                }
                match self.kustomization_file(&path) {
                    Ok(Some(file)) => match self.read_kustomization(&file) {
                        Ok(sub) => self.may_rename(&path, &sub, depth + 1, seen),
                        Err(_) => true,
                    },
                    _ => true,
                }
            })
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
            None => loaded(self.loads.as_deref(), path, &text, self.keep),
        }
    }

    /// Loads `paths` (files a build is about to load) in parallel, so that building a folder
    /// of thousands of manifests uses every core.
    fn prefetch<S: AsRef<str> + Sync>(&mut self, paths: &[S]) {
        let (tree, keep, loads) = (self.tree, self.keep, self.loads.as_deref());
        let loaded = crate::par::map(paths, |path| {
            let path = path.as_ref();
            tree.read(path).map(|text| loaded(loads, path, &text, keep))
        });
        for (path, objects) in paths.iter().zip(loaded) {
            if let Some(objects) = objects {
                self.ready.insert(path.as_ref().to_string(), objects);
            }
        }
    }

    /// Kustomization `file` read for kustomize to build: a key that sets no field of
    /// `types.Kustomization` fails (kustomize's "invalid Kustomization: json: unknown field");
    /// one that says nothing but its kind
    /// (every other field absent or Go's zero value: null, "", false, 0; an empty list is
    /// not one) fails (`Kustomization.CheckEmpty`: "kustomization.yaml is empty"). A caller that builds a
    /// kustomization of its own (Flux's generator at `spec.path`) reads it with
    /// `read_kustomization`, which does not check it.
    fn read_for_kustomize(&self, file: &str) -> Result<Map<String, Value>, BuildError> {
        let k = self.read_kustomization(file)?;
        // `Kustomization.Unmarshal` decodes with `DisallowUnknownFields`.
        if let Some(unknown) = k.keys().find(|key| keys::field(key).is_none()) {
            return Err(BuildError::UnknownField {
                file: file.to_string(),
                field: unknown.clone(),
            });
        }
        // Go's zero values say nothing: `resources:` with every entry commented out is null.
        let zero = |v: &Value| match v {
            Value::Null => true,
            Value::Bool(b) => !b,
            Value::String(s) => s.is_empty(),
            Value::Number(n) => n.as_f64() == Some(0.0),
            Value::Array(_) | Value::Object(_) => false,
        };
        if k.iter()
            .all(|(key, v)| key == "apiVersion" || key == "kind" || zero(v))
        {
            return Err(BuildError::Empty(file.to_string()));
        }
        Ok(k)
    }

    /// Kustomization `file` read as kustomize reads it (see `types`), each key named as the
    /// field it sets (`keys::canonical`: `Resources:` is `resources`); an empty file is an
    /// empty mapping. A key that sets no field is kept: Flux's generator drops it from the
    /// kustomization at a Kustomization's `spec.path`, and kustomize refuses it in any other
    /// (see `read_for_kustomize`).
    pub fn read_kustomization(&self, file: &str) -> Result<Map<String, Value>, BuildError> {
        let text = self.tree.read(file).ok_or_else(|| self.not_read(file))?;
        match yaml::parse_kustomization(file, &text).map_err(|e| BuildError::Yaml(Box::new(e)))? {
            Value::Object(m) => {
                let m = keys::canonical(m);
                types::check(file, &m).map(|()| m)
            }
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
    /// transformed. `appended` names the entries its caller appended to it.
    fn stream_map(
        &mut self,
        dir: &str,
        file: &str,
        k: &Map<String, Value>,
        appended: Option<&Appended>,
        emit: &mut Emit,
    ) -> Result<(), BuildError> {
        if keys::transforms(k) {
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

    /// ConfigMap and Secret generators (see `generate`): each entry's object made from its
    /// literals and files (read from the tree, so that what a build reads holds them), and
    /// added to `acc`, or merged into or replacing the one object of `acc` with its id
    /// (current or earlier: kustomize `GetMatchingResourcesByAnyId`). The content hash is
    /// added to the name once the whole build is transformed (`build_kustomization`).
    pub(super) fn generators(
        &mut self,
        file: &str,
        dir: &str,
        k: &Map<String, Value>,
        acc: &mut Vec<Resource>,
    ) -> Result<(), BuildError> {
        // Flux builds with kustomize's Helm support off (fluxcd/pkg/kustomize `SecureBuild`:
        // `DisabledPluginConfig`): a chart to inflate fails the build, "must specify
        // --enable-helm" (`HelmChartInflationGeneratorPlugin.Config`).
        for field in ["helmCharts", "helmChartInflationGenerator"] {
            if !list(k, field, file)?.is_empty() {
                return Err(BuildError::HelmDisabled {
                    file: file.to_string(),
                    field: field.to_string(),
                });
            }
        }
        let global = k.get("generatorOptions");
        for (field, kind) in [
            ("configMapGenerator", "ConfigMap"),
            ("secretGenerator", "Secret"),
        ] {
            for (i, item) in list(k, field, file)?.iter().enumerate() {
                let what = format!("{file}: {field}[{i}]");
                let made = match generate::make(self.tree, dir, kind, item, global, &what)? {
                    generate::Made::Object(made) => made,
                    generate::Made::Remote(why) => {
                        let name = item.get("name").and_then(Value::as_str).unwrap_or("");
                        self.warn(
                            file,
                            "remote generator input",
                            format!(
                                "{kind} `{name}` from `{field}`: {why}; it is not in the inventory"
                            ),
                        );
                        continue;
                    }
                };
                let mut r = Resource::generated(made.value, file, 1000 + i);
                r.hash = made.hash;
                let matches: Vec<usize> = acc
                    .iter()
                    .enumerate()
                    .filter(|(_, old)| old.had_id_of(&r.value))
                    .map(|(j, _)| j)
                    .collect();
                let fail = |why: String| BuildError::Generator {
                    what: what.clone(),
                    why,
                };
                match (matches.as_slice(), made.behavior) {
                    ([], generate::Behavior::Create) => acc.push(r),
                    ([], _) => {
                        return Err(fail(format!(
                            "{kind} `{}` does not exist; cannot merge or replace",
                            r.meta_str("name")
                        )))
                    }
                    ([j], generate::Behavior::Merge | generate::Behavior::Replace) => {
                        let old = &mut acc[*j];
                        old.make_whole(self.tree)?;
                        if made.behavior == generate::Behavior::Merge {
                            generate::merge_data(&mut r.value, &old.value);
                        }
                        generate::copy_metadata(&mut r.value, &old.value);
                        r.hash &= old.hash;
                        r.previous = std::mem::take(&mut old.previous);
                        r.file = old.file.clone();
                        r.index = old.index;
                        *old = r;
                    }
                    ([_], generate::Behavior::Create) => {
                        return Err(fail(format!(
                            "{kind} `{}` exists; behavior must be merge or replace",
                            r.meta_str("name")
                        )))
                    }
                    (_, _) => {
                        return Err(fail(format!(
                            "several objects could accept the merge of {kind} `{}`",
                            r.meta_str("name")
                        )))
                    }
                }
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
        } else {
            object::effective_namespace(namespace)
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

/// Hands `r` to `emit` unless kustomize keeps it for itself (`KustTarget.IgnoreLocal`:
/// annotated `config.kubernetes.io/local-config`, unless `"false"`).
fn emit_unless_local(r: Resource, emit: &mut Emit) {
    let local = r
        .value
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get("config.kubernetes.io/local-config"))
        .is_some_and(|v| v.as_str() != Some("false"));
    if !local {
        emit(r);
    }
}

/// List `field` of kustomization `k` (of `file`): empty when absent or null; a value that is
/// not a list fails the build.
pub fn list<'v>(
    k: &'v Map<String, Value>,
    field: &str,
    file: &str,
) -> Result<&'v [Value], BuildError> {
    match k.get(field) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(_) => Err(BuildError::NotAList {
            file: file.to_string(),
            field: field.to_string(),
        }),
    }
}

/// The objects of file `path` (`text`), from `loads` when it was loaded before.
fn loaded(
    loads: Option<&remember::Loads>,
    path: &str,
    text: &yaml::Text,
    keep: Option<Keep>,
) -> Built {
    match loads {
        Some(loads) => loads.load(path, text, keep.is_none(), || load(path, text, keep)),
        None => load(path, text, keep),
    }
}

#[cfg(test)]
mod tests;
