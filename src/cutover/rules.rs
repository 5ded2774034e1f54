//! The deletion model: set differences over two inventories (`ObjectId -> owner`) judged by
//! the owners' specs. The *old* spec decides what a removed Kustomization's finalizer does
//! (it is what the cluster holds when the removal lands); the *new* spec decides what a
//! surviving owner prunes. Every deletion carries the rule that causes it and its reason.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use foldhash::HashMap;

use serde::Serialize;
use serde_json::Value;

use crate::flux::data::{self, Data, HELM_GROUP};
use crate::flux::facts::opt_out;
use crate::flux::inventory::{Entry, Inventory, Owner};
use crate::flux::release::Release;
use crate::flux::resource_set;
use crate::kustomize::object::{crd_kind, ObjectId};
use crate::pointer::Pointer;

/// Why Flux deletes an object. Serialised as its code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    /// Its owner is removed and its finalizer deletes what it applied.
    OwnerRemoved,
    /// It moves to an owner that reconciles later: pruned first, recreated after.
    MovedLater,
    /// It moves between owners with no order between them: a race.
    MovedUnordered,
    /// Its name, namespace or prefix changes: the old object is pruned.
    IdentityChanged,
    /// It leaves the build of an owner that prunes.
    LeftBuild,
    /// It lives in a Namespace that is deleted.
    NamespaceDeleted,
    /// It is a custom resource of a CRD that is deleted.
    CrdDeleted,
    /// A HelmRelease that stays renders it no more: Helm's upgrade deletes it.
    ReleaseUpgraded,
    /// A HelmRelease's release name, namespace, storage namespace or chart changes:
    /// helm-controller uninstalls the old release before it installs the new one.
    ReleaseReplaced,
    /// A second owner that applies it too (`double-owner`) stops building it and prunes:
    /// it deletes it if it applied it last, and the other owner recreates it.
    DoubleOwnerPruned,
}

impl Rule {
    /// Its code, in reports and JSON: the variant's name in kebab-case, written here only.
    pub fn code(self) -> &'static str {
        match self {
            Rule::OwnerRemoved => "owner-removed",
            Rule::MovedLater => "moved-later",
            Rule::MovedUnordered => "moved-unordered",
            Rule::IdentityChanged => "identity-changed",
            Rule::LeftBuild => "left-build",
            Rule::NamespaceDeleted => "namespace-deleted",
            Rule::CrdDeleted => "crd-deleted",
            Rule::ReleaseUpgraded => "release-upgraded",
            Rule::ReleaseReplaced => "release-replaced",
            Rule::DoubleOwnerPruned => "double-owner-pruned",
        }
    }

    /// A move: the object comes back, but only after it was deleted.
    pub fn is_move(self) -> bool {
        matches!(self, Rule::MovedLater | Rule::MovedUnordered)
    }

    /// Helm deletes it, not Flux: Flux's opt-outs do not protect it.
    pub fn is_helm(self) -> bool {
        matches!(self, Rule::ReleaseUpgraded | Rule::ReleaseReplaced)
    }
}

impl Serialize for Rule {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.code())
    }
}

/// One object Flux deletes. Serialised flat: `environment`, `kind`, `group`, `namespace`,
/// `name`, `stateful`, `data`, `evidence`, `owner`, `newOwner` (when it moves), `rule`,
/// `reason`, `file`.
#[derive(Debug, Clone)]
pub struct Deletion {
    /// Shared by the deletions of an environment.
    pub environment: Arc<str>,
    pub id: ObjectId,
    /// Deleting it loses data: `data` holds (a "may" is not counted).
    pub stateful: bool,
    /// What it holds, on its own evidence (`flux::data`).
    pub data: Data,
    /// The Kustomization that applied it in the old revision.
    pub owner_id: Arc<ObjectId>,
    /// The Kustomization that applies it in the new revision, when it moves.
    pub new_owner: Option<Arc<ObjectId>>,
    pub rule: Rule,
    /// Shared by the deletions with the same reason (most of an owner's).
    pub reason: Arc<str>,
    /// Whether its file is SOPS-encrypted: the runbook says how to edit it.
    pub sops: bool,
    pub file: Arc<str>,
}

impl Serialize for Deletion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Flat<'a> {
            environment: &'a str,
            kind: &'a str,
            group: &'a str,
            namespace: &'a str,
            name: &'a str,
            /// The cluster of its owner's `spec.kubeConfig`, when it is not Flux's own.
            #[serde(skip_serializing_if = "Option::is_none")]
            cluster: Option<&'a str>,
            stateful: bool,
            data: &'static str,
            evidence: Option<&'a str>,
            owner: String,
            #[serde(rename = "newOwner", skip_serializing_if = "Option::is_none")]
            new_owner: Option<String>,
            rule: Rule,
            reason: &'a str,
            file: &'a str,
        }
        Flat {
            environment: &self.environment,
            kind: &self.id.kind,
            group: &self.id.group,
            namespace: &self.id.namespace,
            name: &self.id.name,
            cluster: self.id.cluster_name(),
            stateful: self.stateful,
            data: self.data.as_str(),
            evidence: self.data.evidence(),
            owner: self.owner_id.to_string(),
            new_owner: self.new_owner.as_ref().map(ToString::to_string),
            rule: self.rule,
            reason: &self.reason,
            file: &self.file,
        }
        .serialize(s)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Fate {
    /// Still built: it reconciles the new revision.
    Alive,
    /// Deleted from the cluster; whether its finalizer deletes what it applied.
    Deleted { collects: bool, why: String },
    /// Left in the cluster (its owner does not prune it, or an opt-out protects it).
    Stays,
}

fn fate(old: &Inventory, new: &Inventory, id: &ObjectId, depth: usize) -> Fate {
    if new.owners.contains_key(id) {
        return Fate::Alive;
    }
    let Some(owner) = old.owners.get(id) else {
        return Fate::Stays;
    };
    let Some(parent) = &owner.parent else {
        return Fate::Stays; // the root is not removed by git
    };
    if opt_out(&owner.object).is_some() || depth > 64 {
        return Fate::Stays;
    }
    let removed_by = match new.owners.get(parent) {
        Some(p) if p.built && p.prunes() => format!("{} prunes it", named(parent)),
        Some(_) => return Fate::Stays,
        None => match fate(old, new, parent, depth + 1) {
            Fate::Deleted { collects: true, .. } => {
                format!("{} is removed and deletes it", named(parent))
            }
            _ => return Fate::Stays,
        },
    };
    let why = if owner.is_resource_set() {
        format!(
            "its owner {} is removed ({removed_by}), and the Flux Operator deletes what it applied",
            named(id)
        )
    } else {
        format!(
            "its owner {} is removed ({removed_by}) and, with {}, deletes what it applied",
            short(id),
            owner.policy()
        )
    };
    Fate::Deleted {
        collects: owner.deletes_on_removal(),
        why,
    }
}

/// Why Flux deletes Flux Kustomization `id` of `old` on the way to `new` (its parent prunes
/// it, or is removed and deletes it), when it does: the reason, as its objects' deletions
/// give it, names it as their owner.
pub fn kustomization_deleted(old: &Inventory, new: &Inventory, id: &ObjectId) -> Option<String> {
    match fate(old, new, id, 0) {
        Fate::Deleted { why, .. } => Some(why),
        _ => None,
    }
}

/// `namespace/name` of a Flux Kustomization, for reasons.
fn short(id: &ObjectId) -> String {
    format!("{}/{}", id.namespace, id.name)
}

/// An owner, for reasons: `namespace/name` of a Flux Kustomization, `ResourceSet
/// namespace/name` of a ResourceSet.
fn named(id: &ObjectId) -> String {
    if resource_set::is(id) {
        format!("ResourceSet {}", short(id))
    } else {
        short(id)
    }
}

fn deletion(
    env: &Arc<str>,
    id: &ObjectId,
    e: &Entry,
    rule: Rule,
    reason: Arc<str>,
    new_owner: Option<&Arc<ObjectId>>,
) -> Deletion {
    Deletion {
        environment: env.clone(),
        id: id.clone(),
        stateful: false,
        data: Data::None,
        owner_id: e.owner.clone(),
        new_owner: new_owner.cloned(),
        rule,
        reason,
        sops: e.facts.sops,
        file: e.file.clone(),
    }
}

/// What a shared reason depends on: a rule and the addresses of the owners' ids (0 for
/// none).
type Because = (Rule, usize, usize);

/// The reason for `because`, made by `text` the first time.
fn shared<K: std::hash::Hash + Eq>(
    reasons: &mut HashMap<K, Arc<str>>,
    because: K,
    text: impl FnOnce() -> String,
) -> Arc<str> {
    reasons
        .entry(because)
        .or_insert_with(|| Arc::from(text()))
        .clone()
}

/// The address of an id shared through `Arc`: the same for every clone.
fn address(id: &Arc<ObjectId>) -> usize {
    Arc::as_ptr(id) as usize
}

/// Where each object of a revision comes from: (file, document) -> its id and entry there.
type Origins<'a> = HashMap<(&'a str, usize), (&'a ObjectId, &'a Entry)>;

/// An owner as both revisions see it.
#[derive(Clone, Copy)]
struct OwnerView<'a> {
    id: &'a Arc<ObjectId>,
    old: Option<&'a Owner>,
    fate: Option<&'a Fate>,
    new: Option<&'a Owner>,
}

/// The objects of the old revision in id order, each with its entry. At 100,000 services
/// they and what is deleted of each are hundreds of thousands long, so they are walked in
/// step rather than looked up in a tree.
type Objects<'a> = [(&'a ObjectId, &'a Entry)];

/// Every object Flux deletes in one environment on the way from `old` to `new`, sorted by id:
/// those their owners delete, then the cascades of deleted CRDs and Namespaces, each judged
/// for the data it holds, then what Helm deletes.
pub fn deletions(old: &Inventory, new: &Inventory) -> Vec<Deletion> {
    let env: &Arc<str> = &Arc::from(old.env.as_str());
    let objects: Vec<(&ObjectId, &Entry)> = old.objects.iter().collect();
    let mut out = by_owners(env, old, new, &objects);
    let helm = super::helm::deletions(env, old, new);
    let rendered = crd_cascade(env, &objects, &helm, &mut out);
    namespace_cascade(env, &objects, &mut out);
    judge_data(old, &objects, &mut out);
    // `filter_map`, not `flatten`: it collects in place, without a second list.
    #[allow(clippy::filter_map_identity)]
    let mut found: Vec<Deletion> = out.into_iter().filter_map(|d| d).collect();
    found.extend(helm);
    found.extend(rendered);
    found
}

/// What is deleted of each of `objects` (the old revision's) by its owners: its owner is
/// removed and deletes it, it moves to another owner, or it leaves the build of an owner
/// that prunes.
fn by_owners<'a>(
    env: &'a Arc<str>,
    old: &'a Inventory,
    new: &'a Inventory,
    objects: &Objects<'a>,
) -> Vec<Option<Deletion>> {
    let mut out: Vec<Option<Deletion>> = Vec::with_capacity(objects.len());
    out.resize_with(objects.len(), || None);
    let fates: BTreeMap<&ObjectId, Fate> = old
        .owners
        .keys()
        .map(|id| (id, fate(old, new, id, 0)))
        .collect();
    let mut judge = Judge {
        env,
        old,
        new,
        reasons: HashMap::default(),
        origins: None,
        order: HashMap::default(),
    };
    let mut now_built = new.objects.iter().peekable();
    let (seconds, now_seconds) = (second_owners(old), second_owners(new));
    // The owner of the previous object, as the objects of one owner mostly come together.
    let mut last: Option<OwnerView> = None;
    for (i, (id, e)) in objects.iter().copied().enumerate() {
        // `new.objects.get(id)`, walking the new objects alongside the old ones.
        while now_built.next_if(|(nid, _)| *nid < id).is_some() {}
        let moved_to = now_built
            .peek()
            .filter(|(nid, _)| *nid == id)
            .map(|(_, n)| &n.owner);
        if let Some(others) = seconds.get(id) {
            let still = |owner: &Arc<ObjectId>| {
                moved_to == Some(owner)
                    || now_seconds
                        .get(id)
                        .is_some_and(|now| now.iter().any(|n| n.owner == *owner))
            };
            out[i] = judge.released(id, others, &fates, moved_to, still);
        }
        if opted_out(e) {
            continue;
        }
        let view = match last {
            Some(v) if Arc::ptr_eq(v.id, &e.owner) => v,
            _ => *last.insert(OwnerView {
                id: &e.owner,
                old: old.owners.get(&*e.owner),
                fate: fates.get(&*e.owner),
                new: new.owners.get(&*e.owner),
            }),
        };
        if !view.old.is_some_and(|owner| owner.built) {
            continue;
        }
        if let Some(d) = judge.object(id, e, view, moved_to) {
            out[i] = Some(d);
        }
    }
    out
}

/// Whether object `e` carries its owner's opt-out of pruning: kustomize-controller's
/// (`facts::opt_out`), or for one a ResourceSet applies, the Flux Operator's (its delete
/// options exclude `fluxcd.controlplane.io/prune: disabled` only).
fn opted_out(e: &Entry) -> bool {
    if resource_set::is(&e.owner) {
        e.facts.operator_prune_disabled
    } else {
        e.facts.opt_out.is_some()
    }
}

/// The second owners of each object an inventory's owners build twice (`duplicates`).
fn second_owners(inv: &Inventory) -> HashMap<&ObjectId, Vec<&Entry>> {
    let mut out: HashMap<&ObjectId, Vec<&Entry>> = HashMap::default();
    for (id, e) in &inv.duplicates {
        out.entry(id).or_default().push(e);
    }
    out
}

/// What judges the objects of the old revision by their owners (see `by_owners`).
struct Judge<'a> {
    env: &'a Arc<str>,
    old: &'a Inventory,
    new: &'a Inventory,
    /// Reasons by what they depend on: the owners' ids (by address).
    reasons: HashMap<Because, Arc<str>>,
    /// Where each object new in the new revision comes from (file, document) -> its id
    /// there; only needed when something leaves a build, so only then made.
    origins: Option<Origins<'a>>,
    /// What reconciles after and before each old owner, made once per owner (see
    /// `Inventory::order_around`).
    order: HashMap<Arc<ObjectId>, (BTreeSet<ObjectId>, BTreeSet<ObjectId>)>,
}

impl<'a> Judge<'a> {
    /// What the owner of object `id` (`e`), seen as `view`, deletes of it, given the owner
    /// that builds it in the new revision (`moved_to`).
    fn object(
        &mut self,
        id: &ObjectId,
        e: &Entry,
        view: OwnerView,
        moved_to: Option<&Arc<ObjectId>>,
    ) -> Option<Deletion> {
        match view.fate {
            Some(Fate::Deleted {
                collects: true,
                why,
            }) => return Some(self.owner_removed(id, e, why, moved_to)),
            Some(Fate::Alive) => {}
            _ => return None,
        }
        let now = view.new.filter(|now| now.built && now.prunes())?;
        // Its owner now applies to another cluster (`spec.kubeConfig` added, removed or
        // changed): kustomize-controller prunes with the new cluster's client what its
        // inventory (ids without a cluster) no longer lists, so nothing in the old cluster
        // is deleted; what is there stays, no longer managed.
        if view.old.is_some_and(|was| was.applies_to != now.applies_to)
            && id.cluster != now.applies_to
        {
            return None;
        }
        match moved_to {
            Some(to) if *to == e.owner => None,
            Some(to) => self.moved(id, e, to),
            None => Some(self.left(id, e, now)),
        }
    }

    /// What a second owner of object `id` that stops building it deletes (`others` are the
    /// second owners, `still` says whether one builds it in the new revision, `now` is its
    /// first owner there). Each applies its copy with its own ownership labels, so the object
    /// carries those of whichever applied it last; kustomize-controller prunes (and its
    /// finalizer deletes) only objects labelled for it (`ssa.DeleteOptions.Inclusions`,
    /// fluxcd/pkg `ssa/manager_delete.go` skips the others). Which applied last is not known
    /// before the merge: a second owner that stops building it, and prunes, may delete it.
    fn released(
        &mut self,
        id: &ObjectId,
        others: &[&'a Entry],
        fates: &BTreeMap<&ObjectId, Fate>,
        now: Option<&Arc<ObjectId>>,
        still: impl Fn(&Arc<ObjectId>) -> bool,
    ) -> Option<Deletion> {
        for e in others {
            if opted_out(e) || !self.old.owners.get(&*e.owner).is_some_and(|o| o.built) {
                continue;
            }
            let why = match fates.get(&*e.owner) {
                Some(Fate::Deleted {
                    collects: true,
                    why,
                }) => why.clone(),
                Some(Fate::Alive) => {
                    let prunes = self
                        .new
                        .owners
                        .get(&*e.owner)
                        .is_some_and(|n| n.built && n.prunes());
                    if !prunes || still(&e.owner) {
                        continue;
                    }
                    format!("it leaves the build of {}, which prunes", e.owner)
                }
                _ => continue,
            };
            let text = format!(
                "{} applies it too and stops ({why}): it deletes it if it applied it last (its ownership labels are on it then){}",
                e.owner,
                now.map_or(String::new(), |to| format!(", and {to} recreates it as a new object"))
            );
            return Some(deletion(
                self.env,
                id,
                e,
                Rule::DoubleOwnerPruned,
                Arc::from(text),
                now,
            ));
        }
        None
    }

    /// Its owner is removed, and deletes it (`why`).
    fn owner_removed(
        &mut self,
        id: &ObjectId,
        e: &Entry,
        why: &str,
        moved_to: Option<&Arc<ObjectId>>,
    ) -> Deletion {
        let because = (
            Rule::OwnerRemoved,
            address(&e.owner),
            moved_to.map_or(0, address),
        );
        let text = shared(&mut self.reasons, because, || {
            let tail = match moved_to {
                Some(to) => format!("; {} recreates it afterwards as a new object", short(to)),
                None => String::new(),
            };
            format!("{why}{tail}")
        });
        deletion(self.env, id, e, Rule::OwnerRemoved, text, moved_to)
    }

    /// It moves to owner `to`: deleted when `to` reconciles after its owner, or in no order
    /// with it.
    fn moved(&mut self, id: &ObjectId, e: &Entry, to: &Arc<ObjectId>) -> Option<Deletion> {
        let new = self.new;
        let (after, before) = self
            .order
            .entry(e.owner.clone())
            .or_insert_with(|| new.order_around(&e.owner));
        if after.contains(to) {
            let because = (Rule::MovedLater, address(&e.owner), address(to));
            let text = shared(&mut self.reasons, because, || {
                format!(
                "moves from {} to {to}, which reconciles after it (dependsOn): {} prunes it first and {to} recreates it",
                e.owner, e.owner
            )
            });
            Some(deletion(self.env, id, e, Rule::MovedLater, text, Some(to)))
        } else if !before.contains(to) {
            let because = (Rule::MovedUnordered, address(&e.owner), address(to));
            let text = shared(&mut self.reasons, because, || {
                format!(
                "moves from {} to {to} with no dependsOn order between them: {} may prune it before {to} adopts it",
                e.owner, e.owner
            )
            });
            Some(deletion(
                self.env,
                id,
                e,
                Rule::MovedUnordered,
                text,
                Some(to),
            ))
        } else {
            None
        }
    }

    /// It leaves the build of its owner, `now` in the new revision, which prunes it: the
    /// object of its file and document there, of its kind, is it renamed, when that object
    /// is new. One the old revision has too was not made by a rename: a file of a component
    /// that several folders build (an Alert in each namespace) makes both, and a folder
    /// removed takes its copy away while the others stay.
    fn left(&mut self, id: &ObjectId, e: &Entry, now: &Owner) -> Deletion {
        let (old, new) = (self.old, self.new);
        let origins = self.origins.get_or_insert_with(|| {
            new.objects
                .iter()
                .filter(|(id, e)| !old.objects.contains_key(*id) && !resource_set::is(&e.owner))
                .map(|(id, e)| ((&*e.file, e.index), (id, e)))
                .collect()
        });
        // What a ResourceSet makes all comes from its one document: it is never renamed.
        let renamed = origins
            .get(&(&*e.file, e.index))
            .filter(|_| !resource_set::is(&e.owner))
            .filter(|(nid, _)| nid.kind == id.kind && nid.group == id.group);
        match renamed {
            Some((nid, ne)) if rehashed(&id.name, &nid.name) => deletion(self.env, id, e, Rule::IdentityChanged, format!(
                "its content changes its generated name to {nid} (a generator's hash suffix): {} prunes the old object and {} applies the new one",
                e.owner, ne.owner
            ).into(), Some(&ne.owner)),
            Some((nid, ne)) => deletion(self.env, id, e, Rule::IdentityChanged, format!(
                "its identity changes to {nid} (name, namePrefix or targetNamespace): {} prunes the old object and {} creates a new, empty one",
                e.owner, ne.owner
            ).into(), Some(&ne.owner)),
            None => {
                let because = (Rule::LeftBuild, address(&e.owner), 0);
                let text = shared(&mut self.reasons, because, || format!(
                    "leaves the build of {}, which prunes ({})", e.owner, now.policy()
                ));
                deletion(self.env, id, e, Rule::LeftBuild, text, None)
            }
        }
    }
}

/// Whether `old` and `new` are one generated name with two content hashes (kustomize's
/// suffix: `-` and ten characters of its alphabet, see `kustomize::generate`).
fn rehashed(old: &str, new: &str) -> bool {
    fn base(name: &str) -> Option<&str> {
        let (base, hash) = name.rsplit_once('-')?;
        let alphabet = |c: char| c.is_ascii_digit() || c.is_ascii_lowercase();
        (hash.len() == 10 && hash.chars().all(alphabet)).then_some(base)
    }
    matches!((base(old), base(new)), (Some(a), Some(b)) if a == b)
}

/// The custom resources of every CRD that is deleted, which nothing else deletes: the API
/// server deletes them with their CRD, whoever deletes it. A CRD is deleted by its owner
/// (in `out`), by a Helm upgrade or replacement (in `helm`), or by the uninstall of a
/// removed HelmRelease that rendered it from a template (Helm never deletes those of a
/// chart's `crds/` folder, nor one kept by `helm.sh/resource-policy: keep`). Custom resources
/// of the inventory are added to `out`; those a HelmRelease that stays renders are returned
/// (Helm's own deletions already hold what its upgrades delete). The first CRD of their kind
/// (in id order) names the cascade.
fn crd_cascade(
    env: &Arc<str>,
    objects: &Objects,
    helm: &[Deletion],
    out: &mut [Option<Deletion>],
) -> Vec<Deletion> {
    let deleted_by_helm: BTreeSet<(&ObjectId, &ObjectId)> =
        helm.iter().map(|d| (&*d.owner_id, &d.id)).collect();
    let mut deleted_kinds: BTreeSet<(String, String, ObjectId)> = BTreeSet::new();
    for ((id, e), d) in objects.iter().zip(out.iter()) {
        let removed = d.is_some();
        if removed && id.kind == "CustomResourceDefinition" {
            if let Some((g, k, _)) = e.whole.as_deref().and_then(crd_kind) {
                deleted_kinds.insert((g, k, (*id).clone()));
            }
        }
        let Some(rendered) = e.release.as_deref().and_then(Release::rendered) else {
            continue;
        };
        for o in &rendered.objects {
            let by_helm = deleted_by_helm.contains(&(&*e.owner, &o.id));
            let uninstalled = removed && o.in_release() && !o.kept();
            if o.id.kind == "CustomResourceDefinition" && (by_helm || uninstalled) {
                if let Some((g, k, _)) = crd_kind(&o.value) {
                    deleted_kinds.insert((g, k, o.id.clone()));
                }
            }
        }
    }
    // A CRD takes with it what is in its own cluster.
    let mut crd_of: BTreeMap<(Option<&str>, &str, &str), &ObjectId> = BTreeMap::new();
    for (g, k, crd) in &deleted_kinds {
        let key = (crd.cluster_name(), g.as_str(), k.as_str());
        crd_of.entry(key).or_insert(crd);
    }
    let crd_of_id = |id: &ObjectId| -> Option<&ObjectId> {
        let key = (id.cluster_name(), id.group.as_str(), id.kind.as_str());
        crd_of.get(&key).copied()
    };
    let mut rendered_out = Vec::new();
    if crd_of.is_empty() {
        return rendered_out;
    }
    let reason = |crd: &ObjectId, kind: &str| -> Arc<str> {
        format!("its CustomResourceDefinition {crd} is deleted, and with it every {kind}").into()
    };
    for (i, (id, e)) in objects.iter().copied().enumerate() {
        if out[i].is_none() {
            if let Some(crd) = crd_of_id(id) {
                let text = reason(crd, &id.kind);
                out[i] = Some(deletion(env, id, e, Rule::CrdDeleted, text, None));
            }
            // A release that stays: what it renders of a deleted CRD's kind goes too.
            let Some(rendered) = e.release.as_deref().and_then(Release::rendered) else {
                continue;
            };
            for o in &rendered.objects {
                let Some(crd) = crd_of_id(&o.id) else {
                    continue;
                };
                if deleted_by_helm.contains(&(&*e.owner, &o.id)) {
                    continue;
                }
                let judged = super::helm::rendered_data(rendered, o, Some(&o.value));
                let mut d = deletion(
                    env,
                    &o.id,
                    e,
                    Rule::CrdDeleted,
                    reason(crd, &o.id.kind),
                    None,
                );
                d.stateful = judged.holds();
                d.data = judged;
                rendered_out.push(d);
            }
        }
    }
    rendered_out
}

/// Everything in a Namespace deleted in `out` that nothing else deletes, added to `out`.
fn namespace_cascade(env: &Arc<str>, objects: &Objects, out: &mut [Option<Deletion>]) {
    // A Namespace holds what is in its own cluster.
    let deleted_ns: BTreeSet<(Option<&str>, &str)> = objects
        .iter()
        .zip(out.iter())
        .filter(|((id, _), d)| d.is_some() && id.kind == "Namespace" && id.group.is_empty())
        .map(|((id, _), _)| (id.cluster_name(), id.name.as_str()))
        .collect();
    if deleted_ns.is_empty() {
        return;
    }
    // One reason for each Namespace, shared by what it holds.
    let mut reasons: HashMap<&str, Arc<str>> = HashMap::default();
    for (i, (id, e)) in objects.iter().copied().enumerate() {
        if out[i].is_none() && deleted_ns.contains(&(id.cluster_name(), id.namespace.as_str())) {
            let text = shared(&mut reasons, id.namespace.as_str(), || {
                format!(
                "its Namespace {} is deleted, and Kubernetes deletes everything inside (opt-outs do not help)",
                id.namespace
            )
            });
            out[i] = Some(deletion(env, id, e, Rule::NamespaceDeleted, text, None));
        }
    }
}

/// Judges the data each deletion of `out` loses, on each object's own evidence; a Namespace
/// by the objects it held in `old` (those are what Kubernetes deletes with it), judged only
/// when one goes. A HelmRelease's reason says what its deletion uninstalls.
fn judge_data(old: &Inventory, objects: &Objects, out: &mut [Option<Deletion>]) {
    let namespace_goes = out.iter().flatten().any(|d| d.id.is("", "Namespace"));
    let namespaces = if namespace_goes {
        data::namespaces(old.objects.iter())
    } else {
        BTreeMap::new()
    };
    for ((_, e), d) in objects.iter().zip(out.iter_mut()) {
        let Some(d) = d else { continue };
        let mut judged = data::of(&d.id, e.whole.as_deref(), e.release.as_deref(), &namespaces);
        if d.id.is(HELM_GROUP, "HelmRelease") {
            let (reason, uninstalls) = release_deleted(&d.reason, e);
            d.reason = reason.into();
            if !uninstalls {
                judged = Data::None;
            }
        }
        d.stateful = judged.holds();
        d.data = judged;
    }
}

/// The reason a HelmRelease (`e`) deleted for `reason` is, with what helm-controller does
/// then, and whether it uninstalls the release.
fn release_deleted(reason: &str, e: &Entry) -> (String, bool) {
    let mut text = reason.to_string();
    if e.whole.as_deref().is_some_and(suspended) {
        // helm-controller `reconcileDelete`: a suspended HelmRelease is let go without
        // uninstalling its release.
        text.push_str(
            "; it is suspended, so helm-controller lets it go without uninstalling the release",
        );
        return (text, false);
    }
    text.push_str("; Helm uninstalls the release and everything its chart installed");
    if let Some(r) = e.release.as_deref().and_then(Release::rendered) {
        let installed = r.objects.iter().filter(|o| o.in_release()).count();
        text.push_str(&format!(
            " ({installed} objects of chart {}, release {} in {})",
            r.chart, r.release_name, r.namespace
        ));
        for note in data::rendered(r, true).1 {
            text.push_str("; ");
            text.push_str(&note);
        }
    }
    (text, true)
}

/// `spec.suspend: true` (in the old revision: what the cluster holds when it is deleted).
pub(super) fn suspended(hr: &Value) -> bool {
    hr.at_pointer("/spec/suspend").and_then(Value::as_bool) == Some(true)
}

/// Owners removed with a finalizer that deletes, with the old spec (for the runbook).
pub fn removed_collecting_owners<'a>(old: &'a Inventory, new: &Inventory) -> Vec<&'a Owner> {
    old.owners
        .values()
        .filter(|o| {
            matches!(
                fate(old, new, &o.id, 0),
                Fate::Deleted { collects: true, .. }
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::Rule;
    use crate::cutover::{compare, Report};
    use crate::tree::FileTree;

    /// A rule's code is its name in kebab-case (what serde's `rename_all` would make), and
    /// its JSON is its code.
    #[test]
    fn a_rules_code_is_its_name_in_kebab_case_and_its_json() {
        use Rule::*;
        let rules = [
            OwnerRemoved,
            MovedLater,
            MovedUnordered,
            IdentityChanged,
            LeftBuild,
            NamespaceDeleted,
            CrdDeleted,
            ReleaseUpgraded,
            ReleaseReplaced,
            DoubleOwnerPruned,
        ];
        // Every rule is in the list: a new one fails to compile here until it is added.
        let _listed = |rule: Rule| match rule {
            OwnerRemoved | MovedLater | MovedUnordered | IdentityChanged | LeftBuild
            | NamespaceDeleted | CrdDeleted | ReleaseUpgraded | ReleaseReplaced
            | DoubleOwnerPruned => {}
        };
        for rule in rules {
            let mut kebab = String::new();
            for c in format!("{rule:?}").chars() {
                if c.is_ascii_uppercase() && !kebab.is_empty() {
                    kebab.push('-');
                }
                kebab.push(c.to_ascii_lowercase());
            }
            assert_eq!(rule.code(), kebab);
            assert_eq!(serde_json::to_value(rule).unwrap(), rule.code());
        }
    }

    fn ks(name: &str, extra: &str) -> String {
        format!("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {{name: {name}, namespace: flux-system}}\nspec:\n  path: ./{name}\n  prune: true\n  sourceRef: {{kind: GitRepository, name: flux-system}}\n{extra}")
    }

    const CRD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {kind: Widget, plural: widgets}\n";
    const WIDGET: &str =
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: app}\n";
    const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: app}\n";

    fn run(old: &[(&str, &str)], new: &[(&str, &str)]) -> Report {
        compare(
            &FileTree::from_files(old.iter().copied()),
            &FileTree::from_files(new.iter().copied()),
            None,
            "old -> new",
        )
        .unwrap()
    }

    fn listed(r: &Report) -> Vec<String> {
        r.deletions
            .iter()
            .map(|d| format!("{} {}", d.id, d.rule.code()))
            .collect()
    }

    #[test]
    fn a_deleted_crd_takes_its_custom_resources() {
        let (a, b) = (ks("crds", ""), ks("apps", ""));
        let old = [
            (
                "clusters/dev/kustomization.yaml",
                "resources: [a.yaml, b.yaml]\n",
            ),
            ("clusters/dev/a.yaml", a.as_str()),
            ("clusters/dev/b.yaml", b.as_str()),
            ("crds/crd.yaml", CRD),
            ("apps/w.yaml", WIDGET),
        ];
        let mut new = old.to_vec();
        new.retain(|(p, _)| *p != "crds/crd.yaml");
        new.push(("crds/other.yaml", CM));
        let r = run(&old, &new);
        assert_eq!(
            listed(&r),
            // grouped by owner: `apps` before `crds`
            [
                "Widget/app/w crd-deleted",
                "CustomResourceDefinition/widgets.example.com left-build"
            ]
        );
    }

    #[test]
    fn suspend_and_orphan_in_the_old_spec_release_a_removed_owner() {
        for extra in ["  suspend: true\n", "  deletionPolicy: Orphan\n", ""] {
            let a = ks("apps", extra).replace(
                "prune: true",
                if extra.is_empty() {
                    "prune: false"
                } else {
                    "prune: true"
                },
            );
            let old = [
                ("clusters/dev/kustomization.yaml", "resources: [a.yaml]\n"),
                ("clusters/dev/a.yaml", a.as_str()),
                ("apps/cm.yaml", CM),
            ];
            let new = [
                ("clusters/dev/kustomization.yaml", "resources: []\n"),
                ("apps/cm.yaml", CM),
            ];
            assert!(run(&old, &new).is_safe(), "{extra}");
        }
        let a = ks("apps", "  deletionPolicy: Delete\n").replace("prune: true", "prune: false");
        let old = [
            ("clusters/dev/kustomization.yaml", "resources: [a.yaml]\n"),
            ("clusters/dev/a.yaml", a.as_str()),
            ("apps/cm.yaml", CM),
        ];
        let new = [
            ("clusters/dev/kustomization.yaml", "resources: []\n"),
            ("apps/cm.yaml", CM),
        ];
        assert_eq!(listed(&run(&old, &new)), ["ConfigMap/app/cm owner-removed"]);
    }

    #[test]
    fn moves_are_judged_by_the_dependson_order() {
        let (a, b) = (ks("a", ""), ks("b", ""));
        let b_after_a = ks("b", "  dependsOn: [{name: a}]\n");
        let keep_a = CM.replace("name: cm", "name: keep");
        let keep_b = CM.replace("name: cm", "name: keep-b");
        let files = |b: &str, cm_in: &str| -> Vec<(String, String)> {
            [
                (
                    "clusters/dev/kustomization.yaml",
                    "resources: [a.yaml, b.yaml]\n",
                ),
                ("clusters/dev/a.yaml", a.as_str()),
                ("clusters/dev/b.yaml", b),
                (cm_in, CM),
                ("a/keep.yaml", keep_a.as_str()),
                ("b/keep.yaml", keep_b.as_str()),
            ]
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect()
        };
        let tree = |v: &[(String, String)]| {
            FileTree::from_files(v.iter().map(|(p, t)| (p.as_str(), t.as_str())))
        };
        let judge = |b: &str, from: &str, to: &str| {
            listed(&compare(&tree(&files(b, from)), &tree(&files(b, to)), None, "").unwrap())
        };
        assert_eq!(
            judge(&b, "a/cm.yaml", "b/cm.yaml"),
            ["ConfigMap/app/cm moved-unordered"]
        );
        assert_eq!(
            judge(&b_after_a, "a/cm.yaml", "b/cm.yaml"),
            ["ConfigMap/app/cm moved-later"]
        );
        assert!(judge(&b_after_a, "b/cm.yaml", "a/cm.yaml").is_empty());
    }

    #[test]
    fn objects_that_stay_are_matched_among_those_that_leave() {
        let (apps, other) = (ks("apps", ""), ks("other", ""));
        let cm = |ns: &str, name: &str| {
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: {ns}}}\n"
            )
        };
        let gone = "apiVersion: v1\nkind: Namespace\nmetadata: {name: gone}\n".to_string();
        let entry = (
            "clusters/dev/kustomization.yaml",
            "resources: [apps.yaml, other.yaml]\n",
        );
        let mut old = vec![
            entry,
            ("clusters/dev/apps.yaml", apps.as_str()),
            ("clusters/dev/other.yaml", other.as_str()),
            ("other/x.yaml", cm("gone", "x").leak()),
            ("other/y.yaml", cm("kept", "y").leak()),
        ];
        let mut new = old.clone();
        for name in ["a", "c", "e"] {
            old.push((format!("apps/{name}.yaml").leak(), cm("app", name).leak()));
        }
        old.push(("apps/ns.yaml", gone.as_str()));
        for name in ["b", "c", "d"] {
            new.push((format!("apps/{name}.yaml").leak(), cm("app", name).leak()));
        }
        assert_eq!(
            listed(&run(&old, &new)),
            [
                "ConfigMap/app/a left-build",
                "ConfigMap/app/e left-build",
                "Namespace/gone left-build",
                "ConfigMap/gone/x namespace-deleted"
            ]
        );
    }

    #[test]
    fn an_opt_out_on_the_object_protects_it() {
        let a = ks("apps", "");
        let cm = CM.replace(
            "namespace: app}",
            "namespace: app, labels: {kustomize.toolkit.fluxcd.io/reconcile: disabled}}",
        );
        let old = [
            ("clusters/dev/kustomization.yaml", "resources: [a.yaml]\n"),
            ("clusters/dev/a.yaml", a.as_str()),
            ("apps/cm.yaml", cm.as_str()),
            ("apps/other.yaml", WIDGET),
        ];
        let new = [
            ("clusters/dev/kustomization.yaml", "resources: [a.yaml]\n"),
            ("clusters/dev/a.yaml", a.as_str()),
            ("apps/other.yaml", WIDGET),
        ];
        assert!(run(&old, &new).is_safe());
    }
}
