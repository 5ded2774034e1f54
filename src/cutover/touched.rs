//! Which Flux Kustomizations that fluxwave cannot wholly see (`Owner::unmodelled`) a change
//! touches (`unseen`): those make the verdict "incomplete". Whether the change touches one is
//! decided from what its build reads (its `Footprint`, an owners-only build over a recording
//! tree) and from its own object, never from the text of its files. A history's steps keep
//! each footprint for the next (`Footprints`): it depends only on the files it names, so a
//! step whose changed paths it does not cover takes it as it was instead of building again.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use super::{Incomplete, ObjectId};
use crate::flux::inventory::{self, Inventory, Owner};
use crate::kustomize::Loads;
use crate::tree::{FileTree, Footprint};

/// The footprints of one environment's partial owners over one tree, by owner: what a
/// history's next step starts from (its older tree is this one).
#[derive(Debug, Default)]
pub(super) struct Footprints {
    by_owner: HashMap<ObjectId, Arc<Known>>,
}

/// The footprint of one owner, and what it was worked out for: the owner's object (its
/// `spec.path` and what its spec writes into the kustomization there) and where it is
/// written. Over a tree that differs only by paths the footprint does not cover, the same
/// build reads the same files and lists the same folders: it holds there too.
#[derive(Debug)]
struct Known {
    object: Arc<Value>,
    file: String,
    index: usize,
    footprint: Footprint,
    /// Whether a file it reads or lists declares a Flux Kustomization other than the owner
    /// (`declares_owner`), once asked: it reads only what the footprint covers.
    declares: OnceLock<bool>,
}

impl Known {
    /// Whether it was worked out for `o` as it is.
    fn is_for(&self, o: &Owner) -> bool {
        self.file == o.file
            && self.index == o.index
            && (Arc::ptr_eq(&self.object, &o.object) || self.object == o.object)
    }

    fn touched_by(&self, changed: &[String]) -> bool {
        changed.iter().any(|c| self.footprint.covers(c))
    }

    /// `declares_owner` of any file its build reads or lists, in `tree`.
    fn declares(&self, tree: &FileTree) -> bool {
        *self.declares.get_or_init(|| {
            let declares =
                |file: &str| declares_owner(tree, file, (file == self.file).then_some(self.index));
            self.footprint.files.iter().any(|f| declares(f))
                || self
                    .footprint
                    .folders
                    .iter()
                    .any(|d| tree.files_under(d).any(declares))
        })
    }
}

/// One revision of an environment, as `unseen` reads it.
struct Side<'a> {
    tree: &'a FileTree,
    /// The same tree, recording what a build asks of it (`inventory::footprint`).
    recording: FileTree,
    inv: &'a Inventory,
    /// The files a history's builds loaded, which a footprint's build loads from.
    loads: Option<Arc<Loads>>,
}

impl<'a> Side<'a> {
    fn of(tree: &'a FileTree, inv: &'a Inventory, loads: Option<Arc<Loads>>) -> Side<'a> {
        Side {
            tree,
            recording: tree.recording(),
            inv,
            loads,
        }
    }

    /// Whether the change touches `o`, when that is decided without its build: for one
    /// made by an ArtifactGenerator from files of this repository, when one of them
    /// changes; for one that reads another source, when the file that declares the source
    /// changes (an OCIRepository's tag). `None` for one built from this repository's source.
    fn touched_elsewhere(&self, o: &Owner, changed: &[String]) -> Option<bool> {
        if !o.made_of.is_empty() {
            return Some(changed.iter().any(|c| o.made_of.binary_search(c).is_ok()));
        }
        let source = o.source();
        if o.parent.is_none() || self.inv.repository.contains(&source) {
            return None;
        }
        let touched = self
            .inv
            .objects
            .iter()
            .filter(|(id, _)| {
                id.kind == source.kind.as_str()
                    && id.namespace == source.namespace
                    && id.name == source.name
            })
            .any(|(_, e)| {
                changed
                    .binary_search_by(|c| c.as_str().cmp(&e.file))
                    .is_ok()
            });
        Some(touched)
    }

    /// The footprint of `o` over this side's tree: `known`'s when it was worked out for `o`
    /// over this tree, else worked out.
    fn known(&self, o: &Owner, known: Option<&Arc<Known>>) -> Arc<Known> {
        match known.filter(|k| k.is_for(o)) {
            Some(k) => k.clone(),
            None => Arc::new(Known {
                object: o.object.clone(),
                file: o.file.clone(),
                index: o.index,
                footprint: inventory::footprint(
                    &self.recording,
                    &self.inv.env_path,
                    o,
                    self.loads.clone(),
                ),
                declares: OnceLock::new(),
            }),
        }
    }

    /// Whether `o`'s build of this repository fails on its way through Flux Kustomizations
    /// (a file it reads or lists declares one other than `o` itself), so that the
    /// Kustomizations it applies, and so where the rest of the repository is reconciled
    /// from, are not known. When that holds in both revisions, the Kustomizations an earlier
    /// build of it applied are still in the cluster and reconcile the newer revision
    /// (kustomize-controller internal/controller/kustomization_controller.go, `reconcile`: a
    /// build error returns before `apply` and `prune`, and the inventory of the last build
    /// that succeeded stays): any change of the repository may reach them.
    fn hides_what_it_applies(&self, o: &Owner, known: &Known) -> bool {
        !self.inv.repository.is_empty() && !o.built && known.declares(self.tree)
    }
}

/// Whether `file` of `tree` declares a Flux Kustomization or a ResourceSet (which makes
/// them), by its objects as kustomize-controller reads them (`ssautil.ReadObjects`:
/// apiVersion `kustomize.toolkit.fluxcd.io/*`, kind `Kustomization`; the items of a `List`
/// too), the document at `own` (an owner's own, counted as the builds do: non-empty
/// documents from 0) left out. A manifest that cannot be parsed in this revision may have declared one in the
/// revision an earlier build read: it counts.
fn declares_owner(tree: &FileTree, file: &str, own: Option<usize>) -> bool {
    let Some(text) = tree.read(file) else {
        return false;
    };
    let Ok(docs) = crate::yaml::parse_all(file, &text) else {
        return crate::fs::is_manifest(file);
    };
    let is = |v: &Value| {
        crate::flux::Kustomization::is(v)
            || ObjectId::of(v).is_some_and(|id| crate::flux::resource_set::is(&id))
    };
    docs.iter().enumerate().any(|(i, doc)| {
        Some(i) != own && is(doc)
            || doc
                .get("items")
                .and_then(Value::as_array)
                .is_some_and(|items| items.iter().any(is))
    })
}

/// The owners of one environment whose objects fluxwave cannot wholly see in either
/// revision (`Owner::unmodelled`) and that the change touches. An owner the change does not
/// touch applies what it applied before, whatever that is. The change touches an owner when
/// its own object changes (or it comes or goes), or the `postBuild` variables it reads (a
/// `substituteFrom` value, or the object an unreadable source comes from), and
/// - for one that reads another source: when the file that declares that source changes
///   (an OCIRepository's tag, a GitRepository's branch);
/// - for any other: when a file its build reads, or a folder it lists, changes
///   (`inventory::footprint`);
/// - for one whose build of this repository fails in both revisions on its way through
///   Flux Kustomizations: when anything changes (`Side::hides_what_it_applies`);
/// - and for every one when the root's own file changes (its source's `spec.ignore` decides
///   what each build of the artifact sees).
///
/// One the change touches is judged all the same when its newer build surely fails and it
/// applies no other owner (`fails_alone`): Flux applies and prunes nothing of it.
///
/// `known` holds the footprints worked out over `old_tree` (in a history, by the step
/// before), and is left holding those over `new_tree`, for the next step.
pub(super) fn unseen<'a>(
    (old_tree, new_tree): (&FileTree, &FileTree),
    (old, new): (&Inventory, &Inventory),
    changed: impl FnOnce() -> &'a [String],
    known: &mut Footprints,
    loads: Option<Arc<Loads>>,
) -> Vec<Incomplete> {
    let before = std::mem::take(known);
    let partial: BTreeSet<&ObjectId> = old
        .owners
        .iter()
        .chain(&new.owners)
        .filter(|(_, o)| !o.unmodelled.is_empty())
        .map(|(id, _)| id)
        .collect();
    if partial.is_empty() {
        return Vec::new();
    }
    // The paths the change touches are worked out only when some owner is partial.
    let changed = changed();
    let sides = [
        Side::of(old_tree, old, loads.clone()),
        Side::of(new_tree, new, loads),
    ];
    // The root's own file holds the source's `spec.ignore`, which decides what every build
    // of the artifact sees.
    let root_changed = [old, new].iter().any(|inv| {
        inv.owners
            .values()
            .filter(|o| o.parent.is_none() && !o.file.is_empty())
            .any(|r| changed.binary_search(&r.file).is_ok())
    });
    let mut out = Vec::new();
    for id in partial {
        let pair = [old.owners.get(id), new.owners.get(id)];
        let touched = match pair {
            [Some(a), Some(b)] => {
                root_changed
                    || a.object != b.object
                    || a.reads != b.reads
                    || touches(&sides, [a, b], changed, before.by_owner.get(id), known)
            }
            // Added or removed by the change.
            _ => true,
        };
        let Some(o) = pair[1].or(pair[0]).filter(|_| touched) else {
            continue;
        };
        if fails_alone(&sides, id, pair, before.by_owner.get(id), known) {
            continue;
        }
        out.push(incomplete(new, id, pair, o));
    }
    out
}

/// Whether owner `id` (`pair`: old, new) is judged though the change touches it: its newer
/// build surely fails (`Owner::surely_fails`), so Flux applies and prunes nothing of it
/// (kustomize-controller `reconcile` returns on a build error before `apply` and `prune`),
/// and it applies no Flux Kustomization or ResourceSet in either revision, so nothing
/// reconciles on from what it applied before. Its objects stay as the cluster has them;
/// what it would apply is reported as the failure it is (a warning), not as unknown.
///
/// One whose older build fails and whose newer one does not stays unjudged: what Flux
/// applied of it last is listed only in the cluster's inventory.
fn fails_alone(
    [old, new]: &[Side; 2],
    id: &ObjectId,
    [a, b]: [Option<&Owner>; 2],
    before: Option<&Arc<Known>>,
    known: &mut Footprints,
) -> bool {
    // A build of an ExternalArtifact reads a tree made as fluxwave models the
    // ArtifactGenerator's copy: a file missing there may be in Flux's.
    let Some(b) = b.filter(|b| b.surely_fails && b.made_of.is_empty()) else {
        return false;
    };
    let applies = |side: &Side| {
        side.inv
            .owners
            .values()
            .any(|c| c.parent.as_ref() == Some(id))
    };
    if applies(old) || applies(new) {
        return false;
    }
    // A build that fails lists none: what it reads tells whether it would. The footprint
    // over the newer tree is the one this step worked out, if it did.
    let declares = |side: &Side, o: &Owner, k: Option<&Arc<Known>>| {
        let k = side.known(o, k);
        (k.declares(side.tree), k)
    };
    if a.is_some_and(|a| !a.built && declares(old, a, before).0) {
        return false;
    }
    let (declared, kb) = declares(new, b, known.by_owner.get(id));
    known.by_owner.insert(id.clone(), kb);
    !declared
}

/// Whether the change touches owner `a` (old) / `b` (new), whose objects are the same, by
/// what each side's build reads; `before` is `a`'s footprint when the step before worked it
/// out, and `b`'s is kept in `known` when it is known without building (the same as `a`'s:
/// the change covers none of it).
fn touches(
    [old, new]: &[Side; 2],
    [a, b]: [&Owner; 2],
    changed: &[String],
    before: Option<&Arc<Known>>,
    known: &mut Footprints,
) -> bool {
    let (elsewhere_a, elsewhere_b) = (
        old.touched_elsewhere(a, changed),
        new.touched_elsewhere(b, changed),
    );
    if elsewhere_a == Some(true) || elsewhere_b == Some(true) {
        return true;
    }
    let ka = elsewhere_a.is_none().then(|| old.known(a, before));
    if ka.as_ref().is_some_and(|k| k.touched_by(changed)) {
        return true;
    }
    let kb = elsewhere_b.is_none().then(|| new.known(b, ka.as_ref()));
    if let Some(kb) = &kb {
        known.by_owner.insert(b.id.clone(), kb.clone());
        if kb.touched_by(changed) {
            return true;
        }
    }
    match (ka, kb) {
        (Some(ka), Some(kb)) => {
            !changed.is_empty()
                && old.hides_what_it_applies(a, &ka)
                && new.hides_what_it_applies(b, &kb)
        }
        _ => false,
    }
}

/// The entry of partial owner `id` (`o`, of the newer revision when it is there) of `new`'s
/// environment, with every reason of either side. A build that surely fails only in the
/// older revision is said for what it leaves unknown: what Flux applied last.
fn incomplete(new: &Inventory, id: &ObjectId, pair: [Option<&Owner>; 2], o: &Owner) -> Incomplete {
    let mut why: Vec<String> = match pair {
        [Some(a), Some(b)] if b.failure().is_none() && a.surely_fails => {
            let older = match (&a.build_error, &a.substitution_error) {
                (Some(e), _) => format!("{id} cannot be built ({e})"),
                (None, Some(needs)) => needs.clone(),
                (None, None) => String::new(),
            };
            let mut why = vec![format!(
                "build failure in the older revision: {older}; what Flux applied of it last is listed only in the cluster's inventory, so what the newer build prunes is not known ({})",
                a.file
            )];
            why.extend(b.unmodelled.iter().cloned());
            why
        }
        _ => pair
            .iter()
            .flatten()
            .flat_map(|o| o.unmodelled.iter().cloned())
            .collect(),
    };
    why.sort();
    why.dedup();
    Incomplete {
        environment: new.env.clone(),
        kustomization: format!("{}/{}", id.namespace, id.name),
        kind: Incomplete::kind_of(id),
        file: if o.file.is_empty() {
            new.env_path.clone()
        } else {
            o.file.clone()
        },
        why,
        gap: None,
    }
}
