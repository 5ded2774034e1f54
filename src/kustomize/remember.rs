//! Builds kept from one revision of a history for the next (`cutover --each`, whose builds are
//! Flux Kustomizations): a build of the same folder with the same spec (the caller's: what it
//! writes into the kustomization there), none of whose files changed since, builds what it
//! built before (the build reads the tree through the calls a `Footprint` records, and
//! nothing else but the cluster-scoped kinds of the tree's CRDs), so the objects it handed on
//! then are handed on again instead of being read, parsed and transformed again.
//!
//! A build that fails is kept with its error when the error does not name the revision it
//! was read from (`FileTree::shown`: `<commit>:<path>`): replayed in another revision, a
//! message that names one would name the wrong one.

use std::any::Any;
use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;

use super::error::Warning;
use super::object::ObjectId;
use super::resource::Built;
use super::{Builder, Emit, Resource};
use crate::tree::{Changes, FileTree, Footprint};
use crate::yaml::Text;

/// The builds made over one tree, to replay over the next.
#[derive(Debug, Default)]
pub struct Remembered {
    /// The tree they were made over; `None` when nothing is kept.
    tree: Option<FileTree>,
    /// What else the builds depended on: the view of the tree (its `spec.ignore`), the
    /// cluster-scoped kinds and whether objects were kept whole.
    context: Context,
    builds: HashMap<String, Vec<Kept>>,
    /// The files loaded over the tree (see `Loads`).
    loads: Arc<Loads>,
    /// What was read of the tree between the builds (see `holds_over`).
    between: Footprint,
    /// Whether everything the builds read of the tree is known: every build was kept, and
    /// a build again of the same tree (its caller's next pass) built what the one before did.
    complete: bool,
}

/// Files loaded (`resource::load`), by path, with the text each was loaded from and whether
/// its objects were held whole (without the builder's `Keep`, which is otherwise always
/// `facts::KEEP`).
type LoadedFiles = HashMap<String, (Text, bool, Arc<Built>)>;

/// The files loaded by the builds of a history's trees that were made afresh (owners'
/// footprints too): a build of a folder made again because one of its files changed loads the
/// others from here instead of parsing them again. Kept from tree to tree for the files whose
/// text the next tree still has at their path (`keep_for`).
#[derive(Debug, Default)]
pub struct Loads(Mutex<LoadedFiles>);

impl Loads {
    /// The objects of file `path` (`text`), held `whole` or not: those it held when it was
    /// loaded so from the same text, else `load`'s.
    pub(super) fn load(
        &self,
        path: &str,
        text: &Text,
        whole: bool,
        load: impl FnOnce() -> Built,
    ) -> Built {
        let files = || self.0.lock().unwrap_or_else(|p| p.into_inner());
        let known = files()
            .get(path)
            .filter(|(t, w, _)| *w == whole && (Arc::ptr_eq(t, text) || t == text))
            .map(|(_, _, built)| built.clone());
        let built = match known {
            Some(built) => built,
            None => {
                let built = Arc::new(load());
                let entry = (text.clone(), whole, built.clone());
                files().insert(path.to_string(), entry);
                built
            }
        };
        Built::clone(&built)
    }

    /// Lets go of the files `tree` no longer has as they were loaded, of those at the paths
    /// of `changes` (how it differs from the tree the others were loaded over: a file loaded
    /// again at another path since is only a file more, as `load` compares texts).
    fn keep_for(&self, tree: &FileTree, changes: &Changes) {
        let mut files = self.0.lock().unwrap_or_else(|p| p.into_inner());
        for path in changes.changed.iter().chain(&changes.presence) {
            if files
                .get(path)
                .is_some_and(|(text, _, _)| !tree.holds(path, text))
            {
                files.remove(path);
            }
        }
    }
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Context {
    view: Option<String>,
    cluster_kinds: BTreeSet<String>,
    /// Whether objects were held whole, without the caller's `Keep` (a caller remembers
    /// builds made with one `Keep`).
    whole: bool,
}

#[derive(Debug)]
struct Kept {
    /// The caller's spec of the build (see `build_remembered`).
    spec: Box<dyn Any + Send + Sync>,
    footprint: Footprint,
    emitted: Vec<(Resource, Shared)>,
    warnings: Vec<Warning>,
    /// The caller's error, when the build failed.
    failure: Option<Box<dyn Any + Send + Sync>>,
}

/// What the caller derives from an object of a kept build, made once and shared by every
/// revision whose build replays the object unchanged: its whole value, its facts (the
/// caller's, with and without substitution), its id. Each is asked of the object as it was
/// built (see `of`).
#[derive(Debug, Default)]
pub struct Shared {
    whole: OnceLock<Arc<Value>>,
    /// The caller's facts of it without and with substitution (see `facts`).
    facts: [OnceLock<Box<dyn Any + Send + Sync>>; 2],
    id: OnceLock<Option<ObjectId>>,
    /// Whether substitution may change it (see `may_change`).
    may_change: OnceLock<bool>,
    /// What a later layer derives from it (the Flux Kustomization it declares, say).
    derived: OnceLock<Box<dyn Any + Send + Sync>>,
    /// The last rewrite a later layer made of it (see `rewritten`).
    rewrite: Mutex<Option<Arc<Rewrite>>>,
}

/// An object of a kept build as a later layer rewrote it for one key (substituted with one
/// owner's variables, the key their digest), with a cell of its own: the next revision that
/// replays the object and rewrites it with the same key takes this one, and what is derived
/// from it, instead of copying and rewriting it again.
#[derive(Debug)]
pub struct Rewrite {
    key: [u8; 32],
    pub resource: Resource,
    pub cell: Shared,
    /// What else the rewrite gave (the caller's).
    pub outcome: Box<dyn Any + Send + Sync>,
}

/// The objects a build of a folder emitted in the revision before, which no build of this
/// revision replays (the files it read changed): an object the folder's new build emits the
/// same as one of them is taken over with its cell, so what later layers derived from it
/// (its facts, id, the Flux Kustomization it declares, its substitution) is not derived again.
#[derive(Default)]
struct Stale {
    emitted: Vec<Option<(Resource, Shared)>>,
    /// Where each is in `emitted`, by file.
    at: HashMap<String, Vec<usize>>,
}

impl Stale {
    /// `r` with the cell of the same object emitted before, or a new one.
    fn take(&mut self, r: Resource) -> (Resource, Shared) {
        let same = self
            .at
            .get(&r.file)
            .into_iter()
            .flatten()
            .copied()
            .find(|&i| self.emitted[i].as_ref().is_some_and(|(e, _)| e.same_as(&r)));
        match same.and_then(|i| self.emitted[i].take()) {
            Some(kept) => kept,
            None => (r, Shared::default()),
        }
    }
}

/// Each of these asks `cell` when the build handed one on with `r` and `r` is still the
/// object it was made for (borrowed from the kept build, not changed on the way, by
/// substitution say); otherwise it asks `r`.
// The `Cow` itself is asked: whether it still borrows the kept object.
#[allow(clippy::ptr_arg)]
impl Shared {
    fn of<'s>(cell: Option<&'s Shared>, r: &Cow<'_, Resource>) -> Option<&'s Shared> {
        cell.filter(|_| matches!(r, Cow::Borrowed(_)))
    }

    /// The whole value of `r`.
    pub fn whole(cell: Option<&Shared>, r: Cow<'_, Resource>) -> Arc<Value> {
        match Shared::of(cell, &r) {
            Some(c) => c.whole.get_or_init(|| Arc::new(r.value.clone())).clone(),
            None => Arc::new(r.into_owned().value),
        }
    }

    /// `of(r)`: the facts the caller reads of `r` (the caller's type), one kind of them for
    /// each value of `substituted`. Made again when the first call made another type.
    pub fn facts<F: Any + Clone + Send + Sync>(
        cell: Option<&Shared>,
        r: &Cow<'_, Resource>,
        substituted: bool,
        of: impl Fn(&Resource) -> F,
    ) -> F {
        let made = Shared::of(cell, r).and_then(|c| {
            c.facts[usize::from(substituted)]
                .get_or_init(|| Box::new(of(r)))
                .downcast_ref::<F>()
        });
        match made {
            Some(f) => f.clone(),
            None => of(r),
        }
    }

    /// `r.id()`.
    pub fn id(cell: Option<&Shared>, r: &Cow<'_, Resource>) -> Option<ObjectId> {
        match Shared::of(cell, r) {
            Some(c) => c.id.get_or_init(|| r.id()).clone(),
            None => r.id(),
        }
    }

    /// `test(r)`: whether substitution may change `r` (the test is the caller's: this layer
    /// does not substitute).
    pub fn may_change(
        cell: Option<&Shared>,
        r: &Cow<'_, Resource>,
        test: impl FnOnce(&Value) -> bool,
    ) -> bool {
        match Shared::of(cell, r) {
            Some(c) => *c.may_change.get_or_init(|| test(&r.value)),
            None => test(&r.value),
        }
    }

    /// What `make` derives from `r` (a later layer's reading of it), made by the first call;
    /// `None` without a cell, or when that call made a value of another type.
    pub fn derived<'s, T: Any + Send + Sync>(
        cell: Option<&'s Shared>,
        r: &Cow<'_, Resource>,
        make: impl FnOnce() -> T,
    ) -> Option<&'s T> {
        Shared::of(cell, r)?
            .derived
            .get_or_init(|| Box::new(make()))
            .downcast_ref()
    }

    /// `r` rewritten by `make` for `key`: the rewrite the last call with this key made, else
    /// `make`'s, kept for the next call (a rewrite that fails, `None`, is not kept). `None`
    /// without a cell: the caller rewrites `r` itself.
    pub fn rewritten<T: Any + Send + Sync>(
        cell: Option<&Shared>,
        r: &Cow<'_, Resource>,
        key: [u8; 32],
        make: impl FnOnce(&Resource) -> Option<(Resource, T)>,
    ) -> Option<Option<Arc<Rewrite>>> {
        let cell = Shared::of(cell, r)?;
        let mut last = cell.rewrite.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(w) = last.as_ref().filter(|w| w.key == key) {
            return Some(Some(w.clone()));
        }
        let made = make(r).map(|(resource, outcome)| {
            Arc::new(Rewrite {
                key,
                resource,
                cell: Shared::default(),
                outcome: Box::new(outcome),
            })
        });
        if let Some(w) = &made {
            *last = Some(w.clone());
        }
        Some(made)
    }
}

impl Remembered {
    /// The objects of the builds of folder `dir` kept here that no build replays over
    /// `changes` (`Stale`), taken out.
    fn stale(&mut self, dir: &str, changes: &Changes) -> Stale {
        let Some(kept) = self.builds.get_mut(dir) else {
            return Stale::default();
        };
        let mut stale = Stale::default();
        let mut i = 0;
        while i < kept.len() {
            if kept[i].footprint.holds_over(changes) {
                i += 1;
                continue;
            }
            for (r, shared) in kept.swap_remove(i).emitted {
                stale
                    .at
                    .entry(r.file.clone())
                    .or_default()
                    .push(stale.emitted.len());
                stale.emitted.push(Some((r, shared)));
            }
        }
        stale
    }

    /// The tree the builds were made over (an artifact view), when any were kept.
    pub fn tree(&self) -> Option<&FileTree> {
        self.tree.as_ref()
    }

    /// Whether every build would be replayed, and the caller would read what it read between
    /// them, over a tree that differs by `changes` from the one they were made over: nothing
    /// any of them read changed (with the kinds of its CRDs, `cluster_kinds_over`, what a
    /// build of the tree reads).
    pub fn holds_over(&self, changes: &Changes) -> bool {
        self.tree.is_some()
            && self.complete
            && self.between.holds_over(changes)
            && self
                .builds
                .values()
                .flatten()
                .all(|k| k.footprint.holds_over(changes))
    }

    /// These builds as made over `tree`, which differs from their tree by `changes`, none of
    /// which they read (`holds_over`): they build there what they built, and a later tree is
    /// compared with this one (what changed since theirs is more, and only grows).
    pub fn moved_to(&mut self, tree: FileTree, changes: &Changes) {
        self.loads.keep_for(&tree, changes);
        self.tree = Some(tree);
    }

    /// How `tree` differs from the tree the builds were made over, when any were kept.
    pub fn changes_to(&self, tree: &FileTree) -> Option<Changes> {
        self.tree.as_ref().map(|old| old.changes(tree))
    }

    /// The cluster-scoped kinds of the CRDs of `tree`, the same view (`view`, see
    /// `remembering`) of a tree that differs by `changes` from the one the builds were made
    /// over: the kinds they were made with, when no file that differs declares one in either
    /// tree (`None` otherwise: `tree` is read for them).
    pub fn cluster_kinds_over(
        &self,
        tree: &FileTree,
        view: Option<&str>,
        changes: &Changes,
    ) -> Option<BTreeSet<String>> {
        let old = self
            .tree
            .as_ref()
            .filter(|_| self.context.view.as_deref() == view)?;
        // (The view is asked last: most texts declare none.)
        let declares = |t: &FileTree, path: &str| {
            t.held(path)
                .is_some_and(|text| !super::crd_kinds(path, text).is_empty())
                && t.lists(path)
        };
        let same = changes
            .changed
            .iter()
            .chain(&changes.presence)
            .all(|p| !declares(old, p) && !declares(tree, p));
        same.then(|| self.context.cluster_kinds.clone())
    }

    /// The files loaded over the tree, for other builds of it (see `Loads`).
    pub fn loads(&self) -> Arc<Loads> {
        self.loads.clone()
    }
}

/// A build of one tree that replays what it may of `Remembered` builds of an earlier one and
/// keeps its own for the next.
#[derive(Debug)]
pub struct Remembering {
    before: Remembered,
    /// How this tree differs from the earlier one.
    changes: Changes,
    now: Remembered,
}

impl Remembering {
    /// What the builds of this tree leave for the next.
    pub fn into_remembered(mut self) -> Remembered {
        if let Some(tree) = &self.now.tree {
            self.now.loads.keep_for(tree, &self.changes);
            self.now.between.extend(tree.take_footprint());
        }
        // Builds again of the same tree (a caller's next pass, whose inputs the builds before
        // made): what the pass before read counts too, and a build of it not made again read
        // what no footprint kept records.
        if self.before.tree.is_some() && self.changes.is_empty() {
            self.now
                .between
                .extend(std::mem::take(&mut self.before.between));
            if self.before.builds.values().any(|kept| !kept.is_empty()) {
                self.now.complete = false;
            }
        }
        self.now
    }
}

impl<'a> Builder<'a> {
    /// Starts remembering the builds of this builder's tree, which must be `recording` (else
    /// nothing is kept or replayed), replaying those of `before` where they hold. `view`
    /// names the view of the tree the builder reads (the artifact's `spec.ignore`);
    /// `changes`, how the tree differs from `before`'s, when known (`changes_to`).
    pub fn remembering(
        &self,
        before: Remembered,
        view: Option<String>,
        changes: Option<Changes>,
    ) -> Remembering {
        let context = Context {
            view,
            cluster_kinds: self.cluster_kinds.clone(),
            whole: self.keep.is_none(),
        };
        let recording = self.tree.is_recording();
        let (before, changes) = match &before.tree {
            Some(old) if recording && before.context == context => {
                let changes = changes.unwrap_or_else(|| old.changes(self.tree));
                (before, changes)
            }
            _ => (Remembered::default(), Changes::default()),
        };
        let loads = before.loads.clone();
        Remembering {
            before,
            changes,
            now: Remembered {
                tree: recording.then(|| self.tree.clone()),
                context,
                builds: HashMap::new(),
                loads,
                between: Footprint::default(),
                complete: true,
            },
        }
    }

    /// `build(self, emit)`, the build of folder `dir` with the caller's `spec`, replayed from
    /// `memo` when the same folder was built with the same spec and none of the files it
    /// read changed (its failure too); otherwise built, and kept unless it fails with an
    /// error that names this revision. Without `memo`, `build`.
    /// Objects are handed to `emit` borrowed where they are kept, with the cell their whole
    /// value is shared in: one that is not changed on the way is not copied.
    pub fn build_remembered<S, E>(
        &mut self,
        memo: Option<&mut Remembering>,
        dir: &str,
        spec: &S,
        build: impl FnOnce(&mut Self, &mut Emit) -> Result<(), E>,
        emit: &mut dyn FnMut(Cow<'_, Resource>, Option<&Shared>),
    ) -> Result<(), E>
    where
        S: Any + Clone + PartialEq + Send + Sync,
        E: Any + Clone + std::fmt::Display + Send + Sync,
    {
        let Some(memo) = memo.filter(|m| m.now.tree.is_some()) else {
            return build(self, &mut |r| emit(Cow::Owned(r), None));
        };
        // What was read since the last build was read between builds.
        memo.now.between.extend(self.tree.take_footprint());
        let changes = &memo.changes;
        let same = memo.before.builds.get_mut(dir).and_then(|kept| {
            let at = kept.iter().position(|k| {
                k.spec.downcast_ref() == Some(spec) && k.footprint.holds_over(changes)
            })?;
            Some(kept.swap_remove(at))
        });
        if let Some(kept) = same {
            self.warnings.extend(kept.warnings.iter().cloned());
            for (r, shared) in &kept.emitted {
                emit(Cow::Borrowed(r), Some(shared));
            }
            let failed = kept
                .failure
                .as_ref()
                .and_then(|e| e.downcast_ref::<E>())
                .cloned();
            memo.now
                .builds
                .entry(dir.to_string())
                .or_default()
                .push(kept);
            return failed.map_or(Ok(()), Err);
        }
        let warned = self.warnings.len();
        let mut emitted = Vec::new();
        let mut before = memo.before.stale(dir, changes);
        let lent = self.loads.replace(memo.now.loads.clone());
        let built = build(self, &mut |r: Resource| {
            emitted.push(before.take(r));
            if let Some((r, shared)) = emitted.last() {
                emit(Cow::Borrowed(r), Some(shared));
            }
        });
        self.loads = lent;
        let footprint = self.tree.take_footprint();
        let names_revision = |e: &E| {
            self.tree
                .commit()
                .is_some_and(|c| e.to_string().contains(&format!("{c}:")))
        };
        if built.as_ref().err().is_none_or(|e| !names_revision(e)) {
            let kept = Kept {
                spec: Box::new(spec.clone()),
                footprint,
                emitted,
                warnings: self.warnings[warned..].to_vec(),
                failure: built
                    .as_ref()
                    .err()
                    .map(|e| Box::new(e.clone()) as Box<dyn Any + Send + Sync>),
            };
            memo.now
                .builds
                .entry(dir.to_string())
                .or_default()
                .push(kept);
        } else {
            memo.now.complete = false;
        }
        built
    }
}
