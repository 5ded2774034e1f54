//! The inventory of every environment of one revision, built as Flux builds it (`build`):
//! which Flux Kustomization (the *owner*) applies every object. The root Kustomization owns
//! the environment's entry; every Flux Kustomization found in a build is an owner too, built
//! at its `spec.path` with its spec written into the kustomization there, as Flux's generator
//! writes it (see `FluxSpec`). An object belongs to the first owner that builds it. The
//! owners of ExternalArtifacts are built from the files their generators copy
//! (`flux::artifact`).

mod build;

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::Value;

use super::substitute::{Source, Variables};
use super::{Kustomization, SourceRef, KUSTOMIZE_GROUP};
use crate::flux::facts::{self, is_sops, kept_whole, Facts};
use crate::flux::generated::{FluxSpec, Written};
use crate::flux::packed::Packed;
use crate::flux::resource_set;
use crate::kustomize::object::{digest, Cluster, ObjectId};
use crate::kustomize::{Resource, Shared, Warning};
use crate::pointer::Pointer;

pub use build::{
    build, build_as, build_remembering, build_whole, footprint, owners, unchanged, Memory, Owners,
    BUILD_FAILURE,
};

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
    /// The cluster what it applies goes to when that is not the one Flux runs in: its own
    /// `spec.kubeConfig`, else the cluster it is applied to itself (`ObjectId::cluster`).
    pub applies_to: Option<Cluster>,
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
    /// Why Flux's strict substitution fails its build (variables nothing sets, without a
    /// default), when it does: kept apart from `build_error`, as `check` reports each such
    /// variable where it is written (`undefined-variable`).
    pub substitution_error: Option<String>,
    /// Whether its build fails from what the repository holds alone, in a way fluxwave
    /// reproduces exactly (a file or folder missing, a kustomization of the wrong kind, an
    /// id built twice, a variable nothing sets: see `FluxBuildError::is_certain`): Flux
    /// applies and prunes nothing of it at this revision, whatever the cluster holds.
    pub surely_fails: bool,
    /// The repository files what it applies is made of when that is not a build of this
    /// repository's source, sorted: for one that reads an ExternalArtifact made from this
    /// repository, the files the artifact is made of and its ArtifactGenerator's; for a
    /// ResourceSet, its own file and those of the input providers in its namespace.
    pub made_of: Vec<String>,
    /// As its parent's build holds it, `postBuild` variables substituted (shared by the
    /// copies of the owner a build and a history's steps make).
    pub object: Arc<Value>,
    /// What its spec writes into the kustomization it builds, read once from `object`.
    written: Arc<Written>,
    /// The `${VAR}`s it needs as written, when its parent substitutes (see `Facts`).
    pub variables: Vec<String>,
    /// The `postBuild` variables it substitutes with, as its build read its sources: a
    /// change of them touches what it builds (`cutover`).
    pub reads: Option<Variables>,
}

impl Owner {
    /// The Kustomization `v`, applied by `parent` to the cluster `lives_in` (its parent's
    /// `applies_to`).
    fn from_value(
        v: &Value,
        parent: Option<ObjectId>,
        lives_in: Option<Cluster>,
        file: &str,
        index: usize,
    ) -> Option<Owner> {
        let k = Kustomization::from_value(v)?;
        let mut id = ObjectId::of(v)?;
        if id.namespace.is_empty() {
            id.namespace = parent
                .as_ref()
                .map_or("flux-system".to_string(), |p| p.namespace.clone());
        }
        id.cluster = lives_in;
        let spec = k.spec;
        // What it depends on is in its own cluster.
        let depends_on = spec
            .depends_on
            .iter()
            .map(|d| ObjectId {
                cluster: id.cluster.clone(),
                ..flux_id(d.namespace.as_deref().unwrap_or(&id.namespace), &d.name)
            })
            .collect();
        let applies_to = target_cluster(&k.object, &id);
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
            applies_to,
            file: file.to_string(),
            index,
            built: true,
            unmodelled: Vec::new(),
            build_error: None,
            substitution_error: None,
            surely_fails: false,
            made_of: Vec::new(),
            written: Arc::new(written(&k.object)),
            object: Arc::new(k.object),
            variables: Vec::new(),
            reads: None,
            id,
        })
    }

    /// Why Flux's build of it fails, when it does (`build_error`, else `substitution_error`).
    pub fn failure(&self) -> Option<&str> {
        self.build_error
            .as_deref()
            .or(self.substitution_error.as_deref())
    }

    /// Whether it is a Flux Operator ResourceSet, not a Flux Kustomization.
    pub fn is_resource_set(&self) -> bool {
        resource_set::is(&self.id)
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
        if self.is_resource_set() {
            return if self.prune {
                "the Flux Operator's garbage collection".into()
            } else {
                "fluxcd.controlplane.io/reconcile: disabled".into()
            };
        }
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
    /// `what` names it in messages.
    fn flux_spec(&self, what: String) -> FluxSpec {
        FluxSpec {
            what,
            written: self.written.clone(),
        }
    }
}

/// ResourceSet `id`, applied by `parent` from document `index` of `file`, as the owner of
/// what the Flux Operator applies of it: it prunes what leaves it, and deletes all of it when
/// it is deleted, unless it is not reconciled at all (`resource_set::reconciled`).
fn resource_set_owner(
    id: &ObjectId,
    v: &Arc<Value>,
    parent: &ObjectId,
    file: &str,
    index: usize,
) -> Owner {
    let reconciled = resource_set::reconciled(v);
    Owner {
        id: id.clone(),
        path: String::new(),
        prune: reconciled,
        deletion_policy: String::new(),
        suspend: false,
        depends_on: Vec::new(),
        source: SourceRef::default(),
        substitutes: false,
        parent: Some(parent.clone()),
        applies_to: id.cluster.clone(),
        file: file.to_string(),
        index,
        built: true,
        unmodelled: Vec::new(),
        build_error: None,
        substitution_error: None,
        surely_fails: false,
        made_of: Vec::new(),
        object: v.clone(),
        written: Arc::default(),
        variables: Vec::new(),
        reads: None,
    }
}

/// What the spec of Kustomization `object` writes into the kustomization at its
/// `spec.path` (see `FluxSpec`). Empty strings are unset: the API omits them (`omitempty`)
/// before Flux's generator reads the spec.
fn written(object: &Value) -> Written {
    let spec = object.get("spec").unwrap_or(&Value::Null);
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
    Written {
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

pub fn flux_id(namespace: &str, name: &str) -> ObjectId {
    ObjectId {
        group: KUSTOMIZE_GROUP.into(),
        kind: "Kustomization".into(),
        namespace: namespace.into(),
        name: name.into(),
        cluster: None,
    }
}

/// The cluster the Flux object `v` (`id`) applies or installs into: the one its
/// `spec.kubeConfig` names, else the one it is in itself (`id.cluster`). A kubeConfig names
/// `Secret/<namespace>/<name>` (with `:<key>` when the key is set) or
/// `ConfigMap/<namespace>/<name>`, the object read in its own namespace
/// (kustomize-controller and helm-controller build their client with
/// `runtimeClient.WithKubeConfig(obj.Spec.KubeConfig, ..., obj.GetNamespace(), ...)`). Two
/// that name the same object reach the same cluster; others are taken as distinct. A
/// cluster inside another is named through it: `<outer> > <inner>`.
pub fn target_cluster(v: &Value, id: &ObjectId) -> Option<Cluster> {
    let Some(kc) = v.at_pointer("/spec/kubeConfig") else {
        return id.cluster.clone();
    };
    let name = |r: &str| {
        kc.get(r)
            .and_then(|r| r.get("name"))
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
    };
    let here = match (name("secretRef"), name("configMapRef")) {
        (Some(n), _) => {
            let key = kc.at_pointer("/secretRef/key").and_then(Value::as_str);
            match key.filter(|k| !k.is_empty()) {
                Some(k) => format!("Secret/{}/{n}:{k}", id.namespace),
                None => format!("Secret/{}/{n}", id.namespace),
            }
        }
        (None, Some(n)) => format!("ConfigMap/{}/{n}", id.namespace),
        (None, None) => return id.cluster.clone(),
    };
    Some(Arc::new(match &id.cluster {
        Some(outer) => format!("{outer} > {here}"),
        None => here,
    }))
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
    pub facts: Arc<Facts>,
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
        variables: Option<&[String]>,
        id: &ObjectId,
        r: Cow<'_, Resource>,
        shared: Option<&Shared>,
        keep: Keep,
    ) -> Entry {
        // An object kept for the next step as it is built is shared, not copied, and what
        // is derived from it is derived once.
        let mut facts = facts::of_shared(shared, &r, false);
        if let Some(v) = variables.filter(|v| *v != facts.variables.as_slice()) {
            Arc::make_mut(&mut facts).variables = v.to_vec();
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
    /// The folder of the repository the root's source is made of (`Environment::artifact_root`).
    pub artifact_root: String,
    /// The sources that are this repository: the root's, then those of the roots nested in
    /// its entry (`Environment::nested`).
    pub repository: Vec<SourceRef>,
    pub owners: BTreeMap<ObjectId, Owner>,
    /// Every object but Flux Kustomizations (those are `owners`), shared by the copies of
    /// an inventory a history's steps take whole.
    pub objects: Arc<BTreeMap<ObjectId, Entry>>,
    /// Objects a second owner builds too (the entry names that second owner): Flux applies
    /// them twice, and the owner that stops building one prunes it.
    pub duplicates: Vec<(ObjectId, Entry)>,
    pub warnings: Vec<Warning>,
    /// What each ConfigMap and Secret of the build holds, as `postBuild.substituteFrom` and a
    /// HelmRelease's `valuesFrom` read it.
    pub sources: BTreeMap<ObjectId, Source>,
    /// The prints of its entries, when it is built with `Keep::Prints`.
    pub prints: Prints,
    /// The webhook that adds variables to its Flux Kustomizations as the cluster admits them
    /// (`flux::admission`), when it has one.
    pub admission: Option<crate::flux::admission::Admission>,
}

impl Inventory {
    /// Its Flux Kustomizations: the owners but ResourceSets.
    pub fn kustomizations(&self) -> impl Iterator<Item = (&ObjectId, &Owner)> {
        self.owners.iter().filter(|(_, o)| !o.is_resource_set())
    }

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

/// The root Kustomization of an environment whose root cannot be read: `flux-system`, as
/// `flux bootstrap` writes it, at the entry.
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
        applies_to: None,
        file: String::new(),
        index: 0,
        built: true,
        unmodelled: Vec::new(),
        build_error: None,
        substitution_error: None,
        surely_fails: false,
        made_of: Vec::new(),
        object: Arc::new(Value::Null),
        written: Arc::default(),
        variables: Vec::new(),
        reads: None,
    }
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
}
