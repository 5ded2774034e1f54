//! Builds every environment of one revision as Flux does and records its inventory: which
//! Flux Kustomization (the *owner*) applies every object. The root Kustomization owns the
//! environment's entry; every Flux Kustomization found in a build is an owner too, built at
//! its `spec.path` with its spec written into the kustomization there, as Flux's generator
//! writes it (see `FluxSpec`). An object belongs to the first owner that builds it.

use std::borrow::Cow;
use std::collections::{btree_map, BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use serde_json::Value;

use super::discover::{self, Environment};
use super::substitute::{self, Source, Variables};
use super::{Kustomization, SourceKind, SourceRef, KUSTOMIZE_GROUP};
use crate::kustomize::envsubst::Lookup;
use crate::kustomize::object::{digest, is_sops, kept_whole, Facts, ObjectId};
use crate::kustomize::packed::Packed;
use crate::kustomize::{BuildError, Builder, FluxSpec, Resource, Warning};
use crate::kustomize::{Remembered, Remembering, Shared};
use crate::tree::{FileTree, Footprint};

/// A Flux Kustomization as the cluster would hold it after this revision is applied.
#[derive(Debug, Clone)]
pub struct Owner {
    pub id: ObjectId,
    pub path: String,
    pub prune: bool,
    /// MirrorPrune (the default), Delete, WaitForTermination or Orphan.
    pub deletion_policy: String,
    pub suspend: bool,
    pub depends_on: Vec<ObjectId>,
    /// `spec.sourceRef` as written.
    source: SourceRef,
    /// Whether it has `spec.postBuild`.
    substitutes: bool,
    /// The owner whose build holds this Kustomization (None for the root).
    pub parent: Option<ObjectId>,
    /// The file it is written in; empty for an assumed root.
    pub file: String,
    /// Its document's index in `file` (non-empty documents, from 0).
    pub index: usize,
    /// False when its build failed or its source is not this repository: its inventory is
    /// unknown, so nothing is judged deleted from it.
    pub built: bool,
    /// Why what it applies is not wholly known (its source is elsewhere, its build fails, a
    /// feature on the way is not modelled): empty when fluxwave saw all of it.
    pub unmodelled: Vec<String>,
    /// Why Flux's build of it fails (kustomize's error, or a postBuild substitution that
    /// cannot be parsed), when it does: `check` reports it (`build-failed`).
    pub build_error: Option<String>,
    /// For one that reads an ExternalArtifact made from this repository: the repository
    /// files the artifact is made of and the file of its ArtifactGenerator, sorted.
    pub artifact_files: Vec<String>,
    /// As its parent's build holds it, `postBuild` variables substituted (shared by the
    /// copies of the owner a build and a history's steps make).
    pub object: Arc<Value>,
    /// The `${VAR}`s it needs as written, when its parent substitutes (see `Facts`).
    pub variables: Vec<String>,
}

impl Owner {
    fn from_value(v: &Value, parent: Option<ObjectId>, file: &str, index: usize) -> Option<Owner> {
        let k = Kustomization::from_value(v)?;
        let mut id = ObjectId::of(v)?;
        if id.namespace.is_empty() {
            id.namespace = parent
                .as_ref()
                .map_or("flux-system".to_string(), |p| p.namespace.clone());
        }
        let spec = k.spec;
        let depends_on = spec
            .depends_on
            .iter()
            .map(|d| flux_id(d.namespace.as_deref().unwrap_or(&id.namespace), &d.name))
            .collect();
        Some(Owner {
            path: spec.path,
            prune: spec.prune,
            deletion_policy: spec
                .deletion_policy
                .unwrap_or_else(|| "MirrorPrune".to_string()),
            suspend: spec.suspend,
            depends_on,
            source: spec.source_ref,
            substitutes: spec.post_build.is_some(),
            parent,
            file: file.to_string(),
            index,
            built: true,
            unmodelled: Vec::new(),
            build_error: None,
            artifact_files: Vec::new(),
            object: Arc::new(k.object),
            variables: Vec::new(),
            id,
        })
    }

    /// Whether it substitutes variables in what it builds (`spec.postBuild`).
    pub fn substitutes(&self) -> bool {
        self.substitutes
    }

    /// Whether it deletes what leaves its build when it reconciles.
    pub fn prunes(&self) -> bool {
        self.prune && !self.suspend
    }

    /// Whether deleting this Kustomization deletes what it applied (its finalizer).
    pub fn deletes_on_removal(&self) -> bool {
        !self.suspend
            && match self.deletion_policy.as_str() {
                "Delete" | "WaitForTermination" => true,
                "Orphan" => false,
                _ => self.prune,
            }
    }

    /// The spec as one line: `prune: true, deletionPolicy: MirrorPrune`.
    pub fn policy(&self) -> String {
        let mut s = format!(
            "prune: {}, deletionPolicy: {}",
            self.prune, self.deletion_policy
        );
        if self.suspend {
            s.push_str(", suspend: true");
        }
        s
    }

    /// `spec.sourceRef`, its namespace defaulted to the owner's.
    pub fn source(&self) -> SourceRef {
        self.source.in_namespace(&self.id.namespace)
    }

    /// What its spec writes into the kustomization at its `spec.path` (see `FluxSpec`);
    /// `what` names it in messages. Empty strings are unset: the API omits them
    /// (`omitempty`) before Flux's generator reads the spec.
    fn flux_spec(&self, what: String) -> FluxSpec {
        let spec = self.object.get("spec").unwrap_or(&Value::Null);
        let text = |key: &str| {
            spec.get(key)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(String::from)
        };
        let items = |key: &str| {
            spec.get(key)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let metadata = |key: &str| {
            spec.get("commonMetadata")
                .and_then(|m| m.get(key))
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default()
        };
        FluxSpec {
            what,
            target_namespace: text("targetNamespace"),
            name_prefix: text("namePrefix"),
            name_suffix: text("nameSuffix"),
            patches: items("patches"),
            components: items("components"),
            ignore_missing_components: spec
                .get("ignoreMissingComponents")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            labels: metadata("labels"),
            annotations: metadata("annotations"),
        }
    }
}

pub fn flux_id(namespace: &str, name: &str) -> ObjectId {
    ObjectId {
        group: KUSTOMIZE_GROUP.into(),
        kind: "Kustomization".into(),
        namespace: namespace.into(),
        name: name.into(),
    }
}

/// What an inventory keeps of each object besides its facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep<'a> {
    /// The objects of the kinds of `kept_whole`, whole: what the rules and lints read.
    Facts,
    /// Every object, as the commands that print what is built need it: whole the objects
    /// of `Facts` and the Secrets (what `objects::substituted_secrets` reads), the others
    /// packed (`Entry::packed`), a few times smaller than whole, read back one at a time as
    /// they are printed.
    Whole,
    /// Every object's print (`Entry::print`), and whole the objects of `Facts` and the
    /// Secrets not encrypted with SOPS: what `diff` compares two builds by. An app tier's
    /// objects held whole are gigabytes, their prints megabytes, and a Secret's values are
    /// masked wherever an owner substitutes them (`objects::substituted_secrets`).
    Prints,
    /// Whole the objects of `Facts` and those of these ids: the objects `diff` shows, built
    /// again once their prints have told that they change.
    These(&'a BTreeSet<ObjectId>),
}

impl Keep<'_> {
    /// Whether the builder must hand on every object whole for this.
    fn whole_objects(self) -> bool {
        self != Keep::Facts
    }

    /// Whether the entry of object `id`, `value` as built, keeps it whole.
    fn keeps_whole(self, id: &ObjectId, value: &Value) -> bool {
        kept_whole(&id.group, &id.kind)
            || match self {
                Keep::Facts => false,
                Keep::Whole => id.is("", "Secret"),
                Keep::Prints => id.is("", "Secret") && !is_sops(value),
                Keep::These(ids) => ids.contains(id),
            }
    }
}

/// What `diff` keeps of an object it does not keep whole (`Keep::Prints`): enough to tell
/// whether it changes, and to list it when it comes or goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Print<'a> {
    /// The object as built (`object::digest`).
    pub digest: [u8; 32],
    /// Its `apiVersion` (empty when that is not a string).
    pub api_version: &'a str,
}

/// The prints of an inventory's objects (`Entry::print`), in lists of `PRINTS` rather than an
/// allocation each: among the whole objects a build makes and frees, hundreds of thousands
/// of small allocations that stay would keep its memory from being given back (and one list
/// doubling as it grows would hold twice what it needs).
#[derive(Debug, Clone, Default)]
pub struct Prints {
    /// Each digest, and its `apiVersion`'s place in `api_versions`.
    lists: Vec<Vec<([u8; 32], u32)>>,
    api_versions: Vec<Box<str>>,
    known: BTreeMap<Box<str>, u32>,
}

const PRINTS: usize = 4096;

impl Prints {
    /// Adds the print of `value`; its place among them.
    fn add(&mut self, value: &Value) -> usize {
        let api_version = value
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let at = match self.known.get(api_version) {
            Some(&at) => at,
            None => {
                let at = u32::try_from(self.api_versions.len()).unwrap_or(u32::MAX);
                self.api_versions.push(api_version.into());
                self.known.insert(api_version.into(), at);
                at
            }
        };
        if self.lists.last().is_none_or(|l| l.len() == PRINTS) {
            self.lists.push(Vec::with_capacity(PRINTS));
        }
        let full = PRINTS * (self.lists.len() - 1);
        let list = self.lists.last_mut().map_or(0, |list| {
            list.push((digest(value), at));
            list.len()
        });
        full + list - 1
    }

    /// The print at `at` (an `Entry::print`).
    pub fn get(&self, at: usize) -> Option<Print<'_>> {
        let (digest, api_version) = self.lists.get(at / PRINTS)?.get(at % PRINTS)?;
        Some(Print {
            digest: *digest,
            api_version: self.api_versions.get(*api_version as usize)?,
        })
    }
}

/// One object of an inventory: who applies it, where it is written, and what the rules and
/// lints read of it (the object itself is kept only for the kinds of `kept_whole`, or as
/// `Keep` says).
#[derive(Debug, Clone)]
pub struct Entry {
    /// Shared by every object of the owner.
    pub owner: Arc<ObjectId>,
    /// Shared by every object of the file.
    pub file: Arc<str>,
    pub index: usize,
    pub facts: Facts,
    /// Shared with the build it came from when it is kept for a history's next step.
    pub whole: Option<Arc<Value>>,
    /// In an inventory built with `Keep::Whole`, the object when it is not kept whole.
    pub packed: Option<Packed>,
    /// In an inventory built with `Keep::Prints`, where its print is in `Inventory::prints`.
    pub print: Option<usize>,
    /// For a HelmRelease, what its chart renders (or why it is not rendered), once
    /// `helm::render` has run over the inventory.
    pub release: Option<Arc<super::release::Release>>,
}

impl Entry {
    /// `r`, built by `owner` from `file`; `variables` are those it needs as written, when
    /// the owner has `postBuild`.
    fn new(
        owner: &Arc<ObjectId>,
        file: &Arc<str>,
        variables: &Option<Vec<String>>,
        id: &ObjectId,
        r: Cow<'_, Resource>,
        shared: Option<&Shared>,
        keep: Keep,
    ) -> Entry {
        // An object kept for the next step as it is built is shared, not copied, and what
        // is derived from it is derived once.
        let mut facts = Shared::facts(shared, &r, false);
        if let Some(v) = variables {
            facts.variables.clone_from(v);
        }
        let index = r.index;
        let (whole, packed) = if keep.keeps_whole(id, &r.value) {
            (Some(Shared::whole(shared, r)), None)
        } else {
            (None, (keep == Keep::Whole).then(|| Packed::of(&r.value)))
        };
        Entry {
            owner: owner.clone(),
            file: file.clone(),
            facts,
            index,
            print: None,
            whole,
            packed,
            release: None,
        }
    }

    /// Whether the entry holds the object (`value` is `Some`).
    pub fn holds(&self) -> bool {
        self.whole.is_some() || self.packed.is_some()
    }

    /// The object, where the entry holds it, whole or packed.
    pub fn value(&self) -> Option<Cow<'_, Value>> {
        match (&self.whole, &self.packed) {
            (Some(whole), _) => Some(Cow::Borrowed(whole)),
            (None, Some(packed)) => packed.value().map(Cow::Owned),
            (None, None) => None,
        }
    }
}

/// One environment at one revision.
#[derive(Debug, Clone, Default)]
pub struct Inventory {
    pub env: String,
    pub env_path: String,
    pub owners: BTreeMap<ObjectId, Owner>,
    /// Every object but Flux Kustomizations (those are `owners`).
    pub objects: BTreeMap<ObjectId, Entry>,
    /// Objects a second owner builds too (the entry names that second owner): Flux applies
    /// them twice, and the owner that stops building one prunes it.
    pub duplicates: Vec<(ObjectId, Entry)>,
    pub warnings: Vec<Warning>,
    /// What each ConfigMap and Secret of the build holds, as `postBuild.substituteFrom` and a
    /// HelmRelease's `valuesFrom` read it.
    pub sources: BTreeMap<ObjectId, Source>,
    /// The prints of its entries, when it is built with `Keep::Prints`.
    pub prints: Prints,
}

impl Inventory {
    /// Whether `later` reconciles after `earlier`: it depends on it (transitively), or it is
    /// created by it (a descendant in the ownership tree).
    pub fn reconciles_after(&self, later: &ObjectId, earlier: &ObjectId) -> bool {
        let mut seen = std::collections::BTreeSet::new();
        let mut stack = vec![later.clone()];
        while let Some(cur) = stack.pop() {
            if !seen.insert(cur.clone()) {
                continue;
            }
            if let Some(o) = self.owners.get(&cur) {
                for next in o.depends_on.iter().chain(o.parent.iter()) {
                    if next == earlier {
                        return true;
                    }
                    stack.push(next.clone());
                }
            }
        }
        false
    }
}

impl Inventory {
    /// Every Flux Kustomization that reconciles after `earlier` (see `reconciles_after`), and
    /// every one `earlier` reconciles after: one walk of the edges each way, so that the
    /// moves of many objects out of one owner ask two set lookups each, not a walk of a
    /// `dependsOn` chain each (100,000 objects moving out of one owner into a chain of
    /// 100,000 waves would walk it 100,000 times).
    pub fn order_around(&self, earlier: &ObjectId) -> (BTreeSet<ObjectId>, BTreeSet<ObjectId>) {
        let mut dependants: BTreeMap<&ObjectId, Vec<&ObjectId>> = BTreeMap::new();
        for (id, o) in &self.owners {
            for next in o.depends_on.iter().chain(o.parent.iter()) {
                dependants.entry(next).or_default().push(id);
            }
        }
        let walk = |next: &dyn Fn(&ObjectId) -> Vec<ObjectId>| {
            let mut seen = BTreeSet::new();
            let mut stack = next(earlier);
            while let Some(cur) = stack.pop() {
                if seen.insert(cur.clone()) {
                    stack.extend(next(&cur));
                }
            }
            seen
        };
        let after = walk(&|id| {
            dependants
                .get(id)
                .into_iter()
                .flatten()
                .map(|d| (*d).clone())
                .collect()
        });
        let before = walk(&|id| {
            self.owners
                .get(id)
                .into_iter()
                .flat_map(|o| o.depends_on.iter().chain(o.parent.iter()).cloned())
                .collect()
        });
        (after, before)
    }
}

/// The root Kustomization of environment `env` in `tree` (see `discover::root_in`).
fn root_of(tree: &FileTree, env: &Environment) -> Owner {
    let object = discover::root_in(tree, env);
    let (file, index) = discover::root_file(tree, env).unwrap_or_default();
    let mut root = Owner::from_value(&object, None, &file, index)
        .unwrap_or_else(|| unreachable_owner(&env.path));
    root.file = file;
    root
}

fn unreachable_owner(env_path: &str) -> Owner {
    Owner {
        id: flux_id("flux-system", "flux-system"),
        path: env_path.to_string(),
        prune: true,
        deletion_policy: "MirrorPrune".into(),
        suspend: false,
        depends_on: Vec::new(),
        source: SourceRef::default(),
        substitutes: false,
        parent: None,
        file: String::new(),
        index: 0,
        built: true,
        unmodelled: Vec::new(),
        build_error: None,
        artifact_files: Vec::new(),
        object: Arc::new(Value::Null),
        variables: Vec::new(),
    }
}

/// Builds environment `env` of `tree`. A Kustomization that reads an `ExternalArtifact`
/// which an ArtifactGenerator of the build makes out of this repository is built from the
/// files the generator copies (`artifact`): the environment is built a second time over the
/// tree with those files added under `ARTIFACTS`, and their paths are given back as the
/// repository files they copy.
pub fn build(tree: &FileTree, env: &Environment) -> Inventory {
    build_as(tree, env, Keep::Facts)
}

/// `build`, replaying the builds of Flux Kustomizations that `before` kept of an earlier
/// revision where nothing they read changed (see `kustomize::Remembered`), and keeping this
/// revision's for the next: the builds of a history, one revision after another.
pub fn build_remembering(
    tree: &FileTree,
    env: &Environment,
    before: Remembered,
) -> (Inventory, Remembered) {
    let (inv, now) = build_keeping(tree, env, Keep::Facts, Some(before));
    (inv, now.unwrap_or_default())
}

/// `build`, with every object held (`Entry::value`: whole or packed, `Keep::Whole`), as the
/// commands that print what is built need it; the others keep only the facts, as a large
/// app tier's specs are most of its memory.
pub fn build_whole(tree: &FileTree, env: &Environment) -> Inventory {
    build_as(tree, env, Keep::Whole)
}

/// `build`, keeping of each object what `keep` says.
pub fn build_as(tree: &FileTree, env: &Environment, keep: Keep) -> Inventory {
    build_keeping(tree, env, keep, None).0
}

/// `build`, keeping of each object what `keep` says, remembering builds when given `before`.
/// Only the first pass over the repository's own files is remembered: the builds over the
/// files of ExternalArtifacts, and the passes that know sources from an earlier one, are
/// made afresh.
fn build_keeping(
    tree: &FileTree,
    env: &Environment,
    keep: Keep,
    before: Option<Remembered>,
) -> (Inventory, Option<Remembered>) {
    let (inv, remembered) = build_with(tree, env, &BTreeMap::new(), keep, before);
    (build_artifacts(tree, env, keep, inv), remembered)
}

/// `inv`, an environment's build, built again over the files of the ExternalArtifacts its
/// ArtifactGenerators make, when they make any (see `build`).
fn build_artifacts(tree: &FileTree, env: &Environment, keep: Keep, inv: Inventory) -> Inventory {
    // A generator copies from its source's artifact: what `.sourceignore` hides is not there.
    let source = match inv.owners.values().find(|o| o.parent.is_none()) {
        Some(root) => super::source::artifact(tree, &root.file, &root.source()),
        None => tree.clone(),
    };
    let (made, unmade, generator_files) = external_artifacts(&source, &inv);
    if made.is_empty() {
        return with_reasons(inv, &unmade);
    }
    let mut combined = tree.clone();
    let mut prefixes = BTreeMap::new();
    let mut copies: BTreeMap<String, String> = BTreeMap::new();
    for ((namespace, name), files) in &made {
        let prefix = format!("{ARTIFACTS}/{namespace}/{name}");
        for (at, from) in files {
            // Joined as the generator joins it (`securejoin`): never out of its artifact.
            let path = format!("{prefix}/{}", crate::flux::normalize_path(at));
            // The generator copies bytes: a file kustomize cannot read is copied as it is,
            // and fails the build that reads it.
            if let Some(text) = source.read(from) {
                combined = combined.with_text(&path, text);
            } else if let Some(why) = source.unreadable(from) {
                combined = combined.with_unreadable(&path, why);
            } else {
                continue;
            }
            copies.insert(path, from.clone());
        }
        prefixes.insert((namespace.clone(), name.clone()), prefix);
    }
    let (mut inv, _) = build_with(&combined, env, &prefixes, keep, None);
    // Paths in the artifacts are the repository files they copy, and a message names an
    // artifact's file by the artifact, not by the folder it is built in.
    let back = |file: &str| copies.get(file).cloned();
    let in_words = |text: &mut String| {
        for (namespace, name) in made.keys() {
            let folder = format!("{ARTIFACTS}/{namespace}/{name}/");
            if text.contains(&folder) {
                *text = text.replace(&folder, &format!("(ExternalArtifact {namespace}/{name}) "));
            }
        }
    };
    for entry in inv
        .objects
        .values_mut()
        .chain(inv.duplicates.iter_mut().map(|(_, e)| e))
    {
        if entry.file.starts_with(ARTIFACTS) {
            if let Some(from) = back(&entry.file) {
                entry.file = Arc::from(from.as_str());
            }
        }
    }
    for o in inv.owners.values_mut() {
        if let Some(from) = back(&o.file) {
            o.file = from;
        }
        let source = o.source();
        if source.kind == SourceKind::ExternalArtifact {
            let key = (source.namespace, source.name);
            if let Some(files) = made.get(&key) {
                let mut read: Vec<String> = files.values().cloned().collect();
                read.extend(generator_files.get(&key).cloned());
                read.sort();
                read.dedup();
                o.artifact_files = read;
            }
        }
        o.unmodelled.iter_mut().for_each(in_words);
    }
    for w in &mut inv.warnings {
        if let Some(from) = back(&w.path) {
            w.path = from;
        }
        in_words(&mut w.message);
    }
    with_reasons(inv, &unmade)
}

/// Where the files of the ExternalArtifacts made from this repository are put for a build.
const ARTIFACTS: &str = crate::tree::GENERATED;

/// The ExternalArtifacts the owners of `inv` read, by (namespace, name): the files each is
/// made of when an ArtifactGenerator of the build makes it out of this repository, else
/// why it cannot be seen.
type Artifacts = BTreeMap<(String, String), crate::flux::artifact::Files>;

#[allow(clippy::type_complexity)]
fn external_artifacts(
    tree: &FileTree,
    inv: &Inventory,
) -> (
    Artifacts,
    BTreeMap<ObjectId, String>,
    BTreeMap<(String, String), String>,
) {
    let (mut made, mut unmade, mut generator_files) =
        (Artifacts::new(), BTreeMap::new(), BTreeMap::new());
    let Some(root) = inv.owners.values().find(|o| o.parent.is_none()) else {
        return (made, unmade, generator_files);
    };
    let root_source = root.source();
    let this_repo = |source: &SourceRef| *source == root_source;
    for o in inv.owners.values() {
        let SourceRef {
            kind,
            namespace,
            name,
        } = o.source();
        if kind != SourceKind::ExternalArtifact || o.parent.is_none() {
            continue;
        }
        let key = (namespace.clone(), name.clone());
        if made.contains_key(&key) {
            continue;
        }
        let generators: Vec<(&Value, &str)> = inv
            .objects
            .iter()
            .filter(|(id, _)| crate::flux::artifact::is_generator(id) && id.namespace == namespace)
            .filter_map(|(_, e)| e.whole.as_deref().map(|g| (g, &*e.file)))
            .filter(|(g, _)| {
                g.pointer("/spec/artifacts")
                    .and_then(Value::as_array)
                    .is_some_and(|a| {
                        a.iter()
                            .any(|x| x.get("name").and_then(Value::as_str) == Some(name.as_str()))
                    })
            })
            .collect();
        match generators.as_slice() {
            [(g, file)] => match crate::flux::artifact::files(g, &name, tree, &this_repo) {
                Ok(files) => {
                    generator_files.insert(key.clone(), file.to_string());
                    made.insert(key, files);
                }
                Err(why) => {
                    unmade.insert(o.id.clone(), why);
                }
            },
            [] => {
                unmade.insert(
                    o.id.clone(),
                    "no ArtifactGenerator of this repository makes it".to_string(),
                );
            }
            _ => {
                unmade.insert(
                    o.id.clone(),
                    "two ArtifactGenerators declare it".to_string(),
                );
            }
        }
    }
    (made, unmade, generator_files)
}

/// `inv` with why each ExternalArtifact in `unmade` cannot be seen added to its readers.
fn with_reasons(mut inv: Inventory, unmade: &BTreeMap<ObjectId, String>) -> Inventory {
    for (id, why) in unmade {
        if let Some(o) = inv.owners.get_mut(id) {
            for u in &mut o.unmodelled {
                u.push_str(&format!("; the ExternalArtifact: {why}"));
            }
        }
    }
    inv
}

/// `build`, with the owners that read the ExternalArtifacts of `artifacts` built at their
/// path under its folder (namespace, name -> folder of the combined tree).
fn build_with(
    tree: &FileTree,
    env: &Environment,
    artifacts: &BTreeMap<(String, String), String>,
    keep: Keep,
    mut before: Option<Remembered>,
) -> (Inventory, Option<Remembered>) {
    let mut cluster = BTreeMap::new();
    let mut pass = 0;
    let mut remembered = None;
    loop {
        pass += 1;
        let (mut inv, sources, missed, kept) =
            build_pass(tree, env, artifacts, &cluster, keep, before.take());
        remembered = remembered.or(kept);
        let found_later = missed.iter().any(|id| sources.contains_key(id));
        if !found_later || pass == 3 {
            inv.sources = sources;
            return (inv, remembered);
        }
        cluster = sources;
    }
}

/// One pass of `build_with`: `cluster` holds the sources of an earlier pass. Returns the
/// inventory, the sources this pass built, the sources it looked for and did not find, and,
/// given `before`, the builds it remembered.
#[allow(clippy::type_complexity)]
fn build_pass(
    tree: &FileTree,
    env: &Environment,
    artifacts: &BTreeMap<(String, String), String>,
    cluster: &BTreeMap<ObjectId, Source>,
    keep: Keep,
    before: Option<Remembered>,
) -> (
    Inventory,
    BTreeMap<ObjectId, Source>,
    BTreeSet<ObjectId>,
    Option<Remembered>,
) {
    let env_path = env.path.as_str();
    let root = root_of(tree, env);
    // What Flux builds is the artifact of the root's source.
    let view = super::source::spec_ignore(tree, &root.file, &root.source());
    // Remembered builds are kept with what they read, and replayed only in the context they
    // were made in: the repository's own files, with no sources known from an earlier pass.
    let before = before.filter(|_| artifacts.is_empty() && cluster.is_empty());
    let mut artifact =
        tree.artifact_after(view.as_deref(), before.as_ref().and_then(Remembered::tree));
    if before.is_some() {
        artifact = artifact.recording();
    }
    let tree = &artifact;
    let mut builder = Builder::new(tree);
    if keep.whole_objects() {
        builder.keep_objects_whole();
    }
    let mut memo = before.map(|b| builder.remembering(b, view));
    let mut inv = Inventory {
        env: env.name.clone(),
        env_path: env_path.to_string(),
        ..Inventory::default()
    };
    let root_source = root.source();
    let mut queue = VecDeque::from([root.id.clone()]);
    inv.owners.insert(root.id.clone(), root);
    let mut extra_warnings = Vec::new();
    let mut sources: BTreeMap<ObjectId, (Arc<ObjectId>, Source)> = BTreeMap::new();
    let mut missed = BTreeSet::new();
    while let Some(owner_id) = queue.pop_front() {
        let Some(owner) = inv.owners.get(&owner_id).cloned() else {
            continue;
        };
        let where_ = if owner.file.is_empty() {
            env_path.to_string()
        } else {
            owner.file.clone()
        };
        let source = owner.source();
        let artifact = (source.kind == SourceKind::ExternalArtifact)
            .then(|| artifacts.get(&(source.namespace.clone(), source.name.clone())))
            .flatten();
        let path = match artifact {
            Some(folder) => format!("{folder}/{}", owner.path),
            None => owner.path.clone(),
        };
        if owner.parent.is_some() && source != root_source && artifact.is_none() {
            let w = Warning {
                path: where_,
                feature: "other source".into(),
                message: format!("{} reads {source}, not this repository: what it applies is not in the inventory", owner.id),
            };
            mark_unbuilt(&mut inv, &owner_id, &[&w]);
            extra_warnings.push(w);
            continue;
        }
        let vars = if owner.substitutes() {
            let found = substitute::variables(&owner.object, &owner.id.namespace, &mut |id| {
                let s = sources.get(id).map(|(_, s)| s).or_else(|| cluster.get(id));
                if s.is_none() {
                    missed.insert(id.clone());
                    // One written outside every build (a bootstrap folder) is applied by
                    // hand: it is in the cluster, with values that may not be its file's.
                    return written_outside(tree, id).map(|file| {
                        Source::Unknown(format!(
                            "written outside every build, in {file}, and applied by hand"
                        ))
                    });
                }
                s.cloned()
            });
            match found {
                Ok(vars) => Some(vars),
                Err(e) => {
                    let w = build_failure(where_, &owner.id, &e);
                    mark_unbuilt(&mut inv, &owner_id, &[&w]);
                    failed(&mut inv, &owner_id, e);
                    extra_warnings.push(w);
                    continue;
                }
            }
        } else {
            None
        };
        // A source in no build may be in the cluster (made out of band): the owner is built,
        // what the source sets unknown, but Flux fails without it, so nothing is judged.
        let missing = vars
            .as_ref()
            .map(|v| v.missing.join(", "))
            .unwrap_or_default();
        let shared_id = Arc::new(owner_id.clone());
        let mut building = Building {
            owner: &shared_id,
            vars,
            failure: None,
            undefined: BTreeSet::new(),
            keep,
            file: Arc::from(""),
        };
        let (queued, warned, duplicated) =
            (queue.len(), extra_warnings.len(), inv.duplicates.len());
        let mut recorded = 0;
        builder.start_owner();
        let spec = owner.flux_spec(format!("{where_} ({})", owner.id));
        let dir = path.trim_end_matches('/');
        let mut each = |r: Cow<'_, Resource>, shared: Option<&Shared>| {
            recorded += 1;
            record(
                &mut inv,
                &mut queue,
                &mut extra_warnings,
                &mut sources,
                &mut building,
                r,
                shared,
            );
        };
        let built = builder.build_owner_remembered(memo.as_mut(), dir, &spec, &mut each);
        let undefined = std::mem::take(&mut building.undefined);
        let built = built
            .map_err(|e| e.to_string())
            .and_then(|()| building.failure.map_or(Ok(()), Err));
        if let Err(e) = built {
            // Nothing of a build that fails is applied: what it recorded is taken back.
            if recorded > 0 {
                inv.objects
                    .retain(|_, entry| !Arc::ptr_eq(&entry.owner, &shared_id));
                inv.owners
                    .retain(|_, o| o.parent.as_ref() != Some(&owner_id));
                inv.duplicates.truncate(duplicated);
                sources.retain(|_, (o, _)| !Arc::ptr_eq(o, &shared_id));
                queue.truncate(queued);
                extra_warnings.truncate(warned);
            }
            let w = build_failure(where_, &owner.id, &e);
            mark_unbuilt(&mut inv, &owner_id, &[&w]);
            failed(&mut inv, &owner_id, e);
            extra_warnings.push(w);
        } else {
            // Flux fails these builds too; what they would apply is kept for the lints.
            let mut why = Vec::new();
            if !missing.is_empty() {
                why.push(format!("reads substituteFrom {missing}, in no build of the environment: unless it is in the cluster, Flux fails the build"));
            }
            if !undefined.is_empty() {
                why.push(format!("needs {}, which nothing sets and which has no default: Flux's strict substitution fails the build", dollars(&undefined)));
            }
            if !why.is_empty() {
                let w = Warning {
                    path: where_,
                    feature: "build failure".into(),
                    message: format!("{} {}, and deletes nothing of it", owner.id, why.join("; ")),
                };
                mark_unbuilt(&mut inv, &owner_id, &[&w]);
                extra_warnings.push(w);
            } else {
                // What the build could not see makes this owner's inventory partial.
                let unseen: Vec<&Warning> = builder
                    .owner_warnings()
                    .iter()
                    .chain(&extra_warnings[warned..])
                    .filter(|w| w.feature != TWO_OWNERS)
                    .collect();
                if !unseen.is_empty() {
                    if let Some(o) = inv.owners.get_mut(&owner_id) {
                        o.unmodelled = unseen.iter().map(|w| describe(w)).collect();
                    }
                }
            }
        }
    }
    inv.warnings = builder.warnings;
    inv.warnings.extend(extra_warnings);
    inv.warnings.sort();
    inv.warnings.dedup();
    let sources = sources.into_iter().map(|(id, (_, s))| (id, s)).collect();
    (inv, sources, missed, memo.map(Remembering::into_remembered))
}

/// The file of the repository that writes object `id` (a ConfigMap or Secret) though no
/// build applies it; a copy without a namespace counts, as `kubectl apply -n` would place it.
fn written_outside(tree: &FileTree, id: &ObjectId) -> Option<String> {
    let name = memchr::memmem::Finder::new(id.name.as_bytes());
    tree.manifests()
        .filter(|(_, text)| name.find(text.as_bytes()).is_some())
        .find(|(file, text)| {
            crate::yaml::parse_all(file, text)
                .unwrap_or_default()
                .iter()
                .any(|doc| {
                    let field = |p: &str| doc.pointer(p).and_then(Value::as_str);
                    field("/kind") == Some(id.kind.as_str())
                        && field("/apiVersion") == Some("v1")
                        && field("/metadata/name") == Some(id.name.as_str())
                        && field("/metadata/namespace").is_none_or(|ns| ns == id.namespace)
                })
        })
        .map(|(file, _)| file.to_string())
}

fn build_failure(path: String, owner: &ObjectId, e: &str) -> Warning {
    Warning {
        path,
        feature: "build failure".into(),
        message: format!(
            "{owner} cannot be built ({e}); Flux stops there and deletes nothing of it"
        ),
    }
}

/// The Flux Kustomizations an environment's build declares, as Flux holds them once every
/// patch on the way has been applied (the environment's, and its root Kustomization's
/// `spec.patches`): an owners-only build. It builds what the root Kustomization applies and
/// keeps only the Flux Kustomizations of it, without building their `spec.path` or keeping
/// any other object, so it reads the Flux wiring, not the app tier.
#[derive(Debug, Clone, Default)]
pub struct Owners {
    /// In build order; the first of two with one id.
    pub owners: Vec<Owner>,
    /// False when the build met something whose objects it cannot see (a remote base, a
    /// kustomize feature it does not model): a Kustomization it lacks may still be there.
    pub complete: bool,
}

/// The owners-only build of environment `env_path` of `tree` (see `Owners`); `Err` when the
/// build fails, as Flux's would.
pub fn owners(tree: &FileTree, env_path: &str) -> std::result::Result<Owners, BuildError> {
    let root = root_of(tree, &Environment::configured(tree, "", env_path, ""));
    // The root's own patches apply when it is the environment's (bootstrap's gotk-sync).
    let what = format!("{env_path} ({})", root.id);
    let spec = if root.path == env_path {
        root.flux_spec(what)
    } else {
        FluxSpec {
            what,
            ..FluxSpec::default()
        }
    };
    // Its sources are not read here: what they set is unknown, and left as written.
    let vars = root.substitutes().then(|| {
        substitute::variables(&root.object, &root.id.namespace, &mut |_| {
            Some(Source::Unknown("not read".into()))
        })
        .unwrap_or_default()
    });
    let artifact = super::source::artifact(tree, &root.file, &root.source());
    let mut builder = Builder::owners_only(&artifact);
    let mut owners: Vec<Owner> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    builder.build_owner(env_path, &spec, &mut |mut r: Resource| {
        if !Kustomization::is(&r.value) {
            return;
        }
        if let Some(vars) = &vars {
            // A string Flux cannot parse fails the whole build; it is read as written.
            let _ = substitute::object(&mut r.value, vars);
        }
        if let Some(o) = Owner::from_value(&r.value, Some(root.id.clone()), &r.file, r.index) {
            if seen.insert(o.id.clone()) {
                owners.push(o);
            }
        }
    })?;
    Ok(Owners {
        owners,
        complete: builder.warnings.is_empty(),
    })
}

/// The owner whose build is being recorded.
struct Building<'a> {
    /// Its id, shared by its entries.
    owner: &'a Arc<ObjectId>,
    /// Its variables, when it has `postBuild`.
    vars: Option<Variables>,
    /// Why Flux's build of it fails, if it does (a string substitution cannot parse).
    failure: Option<String>,
    /// The variables its objects need that nothing sets: Flux's strict substitution fails
    /// the build on them. Its objects are kept (the lints read them), but it is not built.
    undefined: BTreeSet<String>,
    /// What its entries keep of their objects.
    keep: Keep<'a>,
    /// The file of the object being recorded: the objects of a file come together, and
    /// share its path.
    file: Arc<str>,
}

/// Records object `r` of the build of `building`: its variables are substituted, then a Flux
/// Kustomization becomes an owner to build next, any other object an entry of the inventory
/// unless an earlier owner has it already; a ConfigMap or Secret is a `substituteFrom`
/// source for the owners that read it. `shared` holds its whole value when the build is
/// remembered (see `Entry::new`).
fn record(
    inv: &mut Inventory,
    queue: &mut VecDeque<ObjectId>,
    warnings: &mut Vec<Warning>,
    sources: &mut BTreeMap<ObjectId, (Arc<ObjectId>, Source)>,
    building: &mut Building,
    mut r: Cow<'_, Resource>,
    shared: Option<&Shared>,
) {
    if *building.file != *r.file {
        building.file = Arc::from(r.file.as_str());
    }
    let (owner, file) = (building.owner, &building.file.clone());
    // The variables it needs as written (the lints read them), before they are substituted.
    let written = building
        .vars
        .is_some()
        .then(|| Shared::facts(shared, &r, true).variables);
    let mut unknown = BTreeSet::new();
    if let (Some(vars), Some(needed)) = (&building.vars, &written) {
        if vars.runs {
            let unset = needed
                .iter()
                .filter(|v| matches!(vars.lookup(v), Lookup::Unset));
            building.undefined.extend(unset.cloned());
        }
    }
    // Only an object substitution may change is copied to be changed.
    if let Some(vars) = building
        .vars
        .as_ref()
        .filter(|_| Shared::may_change(shared, &r, substitute::may_change))
    {
        match substitute::object(&mut r.to_mut().value, vars) {
            Ok(out) => unknown = out.in_identity(),
            Err(e) => {
                building.failure.get_or_insert(format!("{}: {e}", r.file));
                return;
            }
        }
    }
    let Some(id) = Shared::id(shared, &r) else {
        warnings.push(Warning {
            path: r.file.clone(),
            feature: "unnamed object".into(),
            message: format!("document {} has no apiVersion, kind or name", r.index + 1),
        });
        return;
    };
    if !unknown.is_empty() {
        let vars = building
            .vars
            .as_ref()
            .map(Variables::unknown_sources)
            .unwrap_or_default();
        warnings.push(Warning {
            path: r.file.clone(),
            feature: "postBuild substitution".into(),
            message: format!(
                "{id}: {} in its name or namespace may come from {}, which cannot be read from the repository",
                dollars(&unknown),
                vars.join(", ")
            ),
        });
    }
    if let Some(source) = Source::of(&id, &r.value) {
        sources
            .entry(id.clone())
            .or_insert_with(|| (owner.clone(), source));
    } else if let Some((secret, source)) = Source::made_by(&id, &r.value) {
        sources
            .entry(secret)
            .or_insert_with(|| (owner.clone(), source));
    }
    if Kustomization::is(&r.value) {
        let declared = || Owner::from_value(&r.value, Some((**owner).clone()), &r.file, r.index);
        // The Kustomization an object of a replayed build declares is read once, for the
        // owner that first built it.
        let child = Shared::derived(shared, &r, || (owner.clone(), declared()))
            .filter(|(first, _)| first == owner)
            .map_or_else(declared, |(_, child)| child.clone());
        if let Some(mut child) = child {
            child.variables = written.unwrap_or_default();
            if !inv.owners.contains_key(&child.id) {
                queue.push_back(child.id.clone());
                inv.owners.insert(child.id.clone(), child);
            }
        }
        return;
    }
    // Only an object that becomes an entry gets a print.
    let keep = building.keep;
    let mut print = |r: &Resource| (keep == Keep::Prints).then(|| inv.prints.add(&r.value));
    match inv.objects.entry(id) {
        btree_map::Entry::Occupied(e) if e.get().owner != *owner => {
            let (id, first) = (e.key().clone(), &e.get().owner);
            warnings.push(Warning {
                path: r.file.clone(),
                feature: TWO_OWNERS.into(),
                message: format!(
                    "{id} is applied by both {first} and {owner}; Flux counts it as {first}'s"
                ),
            });
            let print = print(&r);
            let mut entry = Entry::new(owner, file, &written, &id, r, shared, keep);
            entry.print = print;
            inv.duplicates.push((id, entry));
        }
        btree_map::Entry::Occupied(_) => {}
        btree_map::Entry::Vacant(v) => {
            let print = print(&r);
            let mut entry = Entry::new(owner, file, &written, v.key(), r, shared, keep);
            entry.print = print;
            v.insert(entry);
        }
    }
}

/// The warning feature of an object two owners apply: Flux's behaviour is known (see
/// `Inventory::duplicates`), so it leaves nothing unseen.
const TWO_OWNERS: &str = "two owners";

/// A warning as one line: `feature: message (path)`.
fn describe(w: &Warning) -> String {
    format!("{}: {} ({})", w.feature, w.message, w.path)
}

/// `${A}, ${B}`.
fn dollars(vars: &BTreeSet<String>) -> String {
    vars.iter()
        .map(|v| format!("`${{{v}}}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn mark_unbuilt(inv: &mut Inventory, id: &ObjectId, why: &[&Warning]) {
    if let Some(o) = inv.owners.get_mut(id) {
        o.built = false;
        o.unmodelled = why.iter().map(|w| describe(w)).collect();
    }
}

fn failed(inv: &mut Inventory, id: &ObjectId, why: String) {
    if let Some(o) = inv.owners.get_mut(id) {
        o.build_error = Some(why);
    }
}

/// What building `owner` (of `env`) asks of `tree`, a `recording` tree: the files whose
/// change may change what it applies (see `Footprint`). Its objects are not kept.
pub fn footprint(tree: &FileTree, env_path: &str, owner: &Owner) -> Footprint {
    tree.take_footprint();
    let mut builder = Builder::owners_only(tree);
    let what = if owner.file.is_empty() {
        env_path
    } else {
        owner.file.as_str()
    };
    let _ = builder.build_owner(&owner.path, &owner.flux_spec(what.to_string()), &mut |_| {});
    let mut seen = tree.take_footprint();
    if !owner.file.is_empty() {
        seen.files.insert(owner.file.clone());
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_order_around_an_owner_is_what_reconciles_after_says() {
        // a <- b <- c (dependsOn), d a child of c, e depends on a missing x, f on nothing;
        // g <-> h a cycle.
        let mut inv = Inventory::default();
        let mut add = |name: &str, deps: &[&str], parent: Option<&str>| {
            let mut o = unreachable_owner("x");
            o.id = flux_id("flux-system", name);
            o.depends_on = deps.iter().map(|d| flux_id("flux-system", d)).collect();
            o.parent = parent.map(|p| flux_id("flux-system", p));
            inv.owners.insert(o.id.clone(), o);
        };
        add("a", &[], None);
        add("b", &["a"], None);
        add("c", &["b"], None);
        add("d", &[], Some("c"));
        add("e", &["x"], None);
        add("f", &[], None);
        add("g", &["h"], None);
        add("h", &["g"], None);
        let names = ["a", "b", "c", "d", "e", "f", "g", "h", "x"];
        for earlier in names {
            let earlier = flux_id("flux-system", earlier);
            let (after, before) = inv.order_around(&earlier);
            for other in names {
                let other = flux_id("flux-system", other);
                assert_eq!(
                    after.contains(&other),
                    inv.reconciles_after(&other, &earlier),
                    "{other} after {earlier}"
                );
                assert_eq!(
                    before.contains(&other),
                    inv.reconciles_after(&earlier, &other),
                    "{earlier} after {other}"
                );
            }
        }
    }

    /// `Keep::Whole` packs most objects (`Entry::packed`): each reads back as the object
    /// built, key order and numbers included, in every environment of the example and the
    /// Flux fixtures, against the same builds keeping every object as built
    /// (`Keep::These`).
    #[test]
    fn a_packed_object_reads_back_as_the_object_built() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut repos = vec![root.join("examples/homelab")];
        for entry in std::fs::read_dir(root.join("tests/fixtures/flux")).unwrap() {
            repos.push(entry.unwrap().path());
        }
        let shown = |v: &Value| serde_json::to_string(v).unwrap();
        let (mut packed, mut entries) = (0, 0);
        for repo in repos {
            let tree = FileTree::from_worktree_or_dir(&repo).unwrap();
            for env in discover::environments(&[&tree], None, &[]) {
                let whole = build_as(&tree, &env, Keep::Whole);
                let every = whole.objects.keys().cloned().collect::<BTreeSet<_>>();
                let plain = build_as(&tree, &env, Keep::These(&every));
                let of = |inv: &Inventory| -> Vec<(ObjectId, Arc<ObjectId>, Option<String>)> {
                    inv.objects
                        .iter()
                        .chain(inv.duplicates.iter().map(|(id, e)| (id, e)))
                        .map(|(id, e)| (id.clone(), e.owner.clone(), e.value().map(|v| shown(&v))))
                        .collect()
                };
                let (got, want) = (of(&whole), of(&plain));
                assert_eq!(got, want, "{} {}", repo.display(), env.name);
                assert!(got.iter().all(|(_, _, v)| v.is_some()));
                packed += whole
                    .objects
                    .values()
                    .filter(|e| e.packed.is_some())
                    .count();
                entries += whole.objects.len();
            }
        }
        // Most objects are packed, not all: the Secrets and the kinds the rules read stay
        // whole.
        assert!(
            packed * 2 > entries && packed < entries,
            "{packed} of {entries}"
        );
    }

    #[test]
    fn a_build_that_fails_records_nothing() {
        let ks = |name: &str, path: &str| {
            format!("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {{name: {name}, namespace: flux-system}}\nspec:\n  path: ./{path}\n  prune: true\n  sourceRef: {{kind: GitRepository, name: flux-system}}\n")
        };
        let cm = |name: &str| {
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: app}}\n")
        };
        let (first, apps, child) = (
            ks("first", "first"),
            ks("apps", "apps"),
            ks("child", "child"),
        );
        let (shared, own) = (cm("shared"), cm("own"));
        let tree = FileTree::from_files([
            (
                "clusters/dev/kustomization.yaml",
                "resources: [first.yaml, apps.yaml]\n",
            ),
            ("clusters/dev/first.yaml", first.as_str()),
            ("clusters/dev/apps.yaml", apps.as_str()),
            ("first/shared.yaml", shared.as_str()),
            // `apps` loads three files, then fails on the fourth.
            (
                "apps/kustomization.yaml",
                "resources: [shared.yaml, own.yaml, child.yaml, missing.yaml]\n",
            ),
            ("apps/shared.yaml", shared.as_str()),
            ("apps/own.yaml", own.as_str()),
            ("apps/child.yaml", child.as_str()),
            ("child/cm.yaml", cm("c").leak()),
        ]);
        let inv = build(
            &tree,
            &Environment::configured(&tree, "dev", "clusters/dev", ""),
        );
        let objects: Vec<String> = inv.objects.keys().map(ToString::to_string).collect();
        assert_eq!(objects, ["ConfigMap/app/shared"]);
        assert_eq!(
            inv.objects.values().next().map(|e| e.owner.name.as_str()),
            Some("first")
        );
        assert!(inv.duplicates.is_empty());
        let owners: Vec<(&str, bool)> = inv
            .owners
            .values()
            .map(|o| (o.id.name.as_str(), o.built))
            .collect();
        assert_eq!(
            owners,
            [("apps", false), ("first", true), ("flux-system", true)]
        );
        let features: Vec<&str> = inv.warnings.iter().map(|w| w.feature.as_str()).collect();
        assert_eq!(features, ["build failure"]);
    }
}
