//! The objects an environment's Flux Kustomizations apply, whole and with their Secret values
//! masked (`build`), and what changes in them between two builds of one environment
//! (`diff`). An object is matched across the builds by its id; one whose owner changes is
//! one object that moves, not one removed and one added, as Flux sees it (the newer owner
//! adopts it; whether the older prunes it first is cutover's verdict). `diff` holds each
//! revision by its objects' prints (`Keep::Prints`), not by the objects: it reads again only
//! the objects that change, and must come to what comparing whole objects comes to.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use crate::cutover::{self, Analysed, Report};
use crate::error::{Error, Result};
use crate::flux::facts::is_sops;
use crate::flux::inventory::{self, Entry, Inventory, Keep, Owner, Print, Prints};
use crate::flux::release::{self, Release, Rendered};
use crate::flux::substitute::Source;
use crate::kustomize::object::{digest, ObjectId};
use crate::pointer::Pointer;
use crate::redact::Secrets;

/// One object as its owner applies it, its Secret values masked: what is printed of it.
#[derive(Debug, Clone)]
pub struct MaskedObject {
    /// Shared by the objects of the environment.
    pub environment: Arc<str>,
    /// The Flux Kustomization that applies it, shared by its objects.
    pub owner: Arc<ObjectId>,
    pub id: ObjectId,
    /// The file it is written in (a generator's kustomization for what a generator makes),
    /// shared by its objects.
    pub file: Arc<str>,
    /// The object, its Secret values masked (`redact::mask_object`). (The object as built,
    /// unmasked, stays where the build holds it: compared, never printed.)
    pub object: Value,
    /// Whether masking changed it.
    pub masked: bool,
    /// The HelmRelease whose chart renders it, for an object of a rendered release.
    pub release: Option<ObjectId>,
}

impl MaskedObject {
    pub fn api_version(&self) -> &str {
        self.object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// The object as block YAML (masked), a string of several lines as a literal block.
    pub fn yaml(&self) -> String {
        crate::yaml::emit_for_reading(&self.object)
    }
}

/// Every object the Flux Kustomizations of `inv` (built with `inventory::build_whole`) apply,
/// the Flux Kustomizations they apply included, sorted by owner and id. An object two owners
/// apply is listed under each: Flux applies it twice. Each is copied and masked, then handed
/// to `make`, on every core at once, a run of objects at a time; what `make` makes of each is
/// handed to `take` in that order. What is held at once is one run's objects.
pub fn each<R: Send, E>(
    inv: &Inventory,
    make: impl Fn(MaskedObject) -> R + Sync,
    mut take: impl FnMut(R) -> std::result::Result<(), E>,
) -> std::result::Result<(), E> {
    // Long enough that spreading it over the cores pays, short enough that what is held
    // stays small.
    const RUN: usize = 1024;
    let substituted = substituted_secrets(inv);
    let environment: Arc<str> = inv.env.as_str().into();
    for run in applied(inv).chunks(RUN) {
        let made = crate::par::map(run, |a| {
            a.raw()
                .map(|raw| make(a.built(&environment, raw, &substituted)))
        });
        for r in made.into_iter().flatten() {
            take(r)?;
        }
    }
    Ok(())
}

/// One object as its owner applies it, as the inventory holds it, before it is copied and
/// masked (`Applied::built`). (A few words each: `diff` lists every object of two builds.)
struct Applied<'a> {
    owner: &'a ObjectId,
    id: &'a ObjectId,
    held: Held<'a>,
}

/// Where an inventory holds an object.
#[derive(Clone, Copy)]
enum Held<'a> {
    /// A Flux Kustomization, as its parent applies it.
    Owner(&'a Owner),
    /// An entry, with the prints of its inventory.
    Entry(&'a Entry, &'a Prints),
    /// What a HelmRelease's chart renders: the HelmRelease, its entry, the release and the
    /// object.
    Rendered(&'a ObjectId, &'a Entry, &'a Rendered, &'a release::Object),
    /// An entry read again: its owner, its file and its value.
    Read(&'a Arc<ObjectId>, &'a Arc<str>, &'a Value),
}

impl<'a> Applied<'a> {
    /// Its owner, shared with the entries of the inventory where they share it (a Flux
    /// Kustomization's parent is not: each is its own).
    fn shared_owner(&self) -> Arc<ObjectId> {
        match self.held {
            Held::Entry(e, _) | Held::Rendered(_, e, _, _) => e.owner.clone(),
            Held::Read(owner, _, _) => owner.clone(),
            Held::Owner(_) => Arc::new(self.owner.clone()),
        }
    }

    /// The file it is written in (for what a chart renders, the HelmRelease's and the
    /// template), shared with the entry where it has one.
    fn file(&self) -> Arc<str> {
        match self.held {
            Held::Owner(o) => o.file.as_str().into(),
            Held::Entry(e, _) => e.file.clone(),
            Held::Rendered(id, e, r, o) => format!(
                "{} (HelmRelease {}/{}, chart {}: {})",
                e.file, id.namespace, id.name, r.chart, o.template
            )
            .into(),
            Held::Read(_, file, _) => file.clone(),
        }
    }

    /// The object as built, unmasked, where the inventory holds it (read back, when it is
    /// held packed).
    fn raw(&self) -> Option<Cow<'a, Value>> {
        match self.held {
            Held::Owner(o) => Some(Cow::Borrowed(&o.object)),
            Held::Entry(e, _) => e.value(),
            Held::Rendered(_, _, _, o) => Some(Cow::Borrowed(&o.value)),
            Held::Read(_, _, value) => Some(Cow::Borrowed(value)),
        }
    }

    /// Whether the inventory holds the object (`raw` is `Some`), read back or not.
    fn holds(&self) -> bool {
        match self.held {
            Held::Entry(e, _) => e.holds(),
            _ => true,
        }
    }

    /// Its print, where the inventory holds that (`Keep::Prints`).
    fn print(&self) -> Option<Print<'a>> {
        match self.held {
            Held::Entry(e, prints) => prints.get(e.print?),
            _ => None,
        }
    }

    /// For an object of a rendered release: the HelmRelease, and the strings of its values
    /// that come from Secrets (masked wherever they stand).
    fn release(&self) -> Option<(&'a ObjectId, &'a Secrets)> {
        match self.held {
            Held::Rendered(id, _, r, _) => Some((id, &r.secret_strings)),
            _ => None,
        }
    }

    /// The object `raw` (this one's value) as it is shown: its Secret values masked (in
    /// place, when `raw` is owned).
    fn built(
        &self,
        environment: &Arc<str>,
        raw: Cow<'_, Value>,
        substituted: &BTreeMap<ObjectId, Secrets>,
    ) -> MaskedObject {
        let (masks, release) = self.masks(substituted);
        let (object, masked) = shown(raw, masks, release);
        MaskedObject {
            environment: environment.clone(),
            owner: self.shared_owner(),
            id: self.id.clone(),
            file: self.file(),
            object,
            masked,
            release: self.release().map(|(id, _)| id.clone()),
        }
    }

    /// What its print says of it (`object::digest`), from its value where it has no print.
    fn digest(&self) -> Option<[u8; 32]> {
        match (self.print(), self.raw()) {
            (Some(p), _) => Some(p.digest),
            (None, raw) => raw.map(|raw| digest(&raw)),
        }
    }

    /// What masks it besides its own Secret values: the values its owner substitutes from
    /// Secrets, and the secret strings of its release (see `shown`).
    fn masks<'s>(
        &'s self,
        substituted: &'s BTreeMap<ObjectId, Secrets>,
    ) -> (Option<&'s Secrets>, Option<&'s Secrets>) {
        (
            substituted.get(self.owner),
            self.release().map(|(_, strings)| strings),
        )
    }

    /// It as a change of `kind` without a diff, named by its `apiVersion` as shown.
    fn listed(
        &self,
        environment: &Arc<str>,
        kind: Kind,
        substituted: &BTreeMap<ObjectId, Secrets>,
    ) -> Change {
        let api_version = match (self.print(), self.raw()) {
            // Masking reads each string on its own (but for a Secret's data and a SOPS
            // block): the `apiVersion` shows as it shows in the whole object.
            (Some(p), _) => {
                let (masks, release) = self.masks(substituted);
                let head = serde_json::json!({ "apiVersion": p.api_version });
                let (head, _) = shown(Cow::Owned(head), masks, release);
                head["apiVersion"].as_str().unwrap_or("").to_string()
            }
            (None, Some(raw)) => self
                .built(environment, raw, substituted)
                .api_version()
                .to_string(),
            (None, None) => String::new(),
        };
        Change::of(
            environment,
            kind,
            self.id,
            api_version,
            self.shared_owner(),
            self.file(),
        )
    }

    /// It as a side of a comparison: as shown when the inventory holds its value, else the
    /// entry to read again.
    fn side(&self, environment: &Arc<str>, substituted: &BTreeMap<ObjectId, Secrets>) -> Side {
        match self.raw() {
            Some(raw) => Side::Built {
                built: Box::new(self.built(environment, Cow::Borrowed(&raw), substituted)),
                raw: raw.into_owned(),
            },
            None => Side::Entry {
                owner: self.shared_owner(),
                file: self.file(),
            },
        }
    }
}

/// Every object the Flux Kustomizations of `inv` apply, in the order of `of`: an entry that
/// holds neither its object nor its print is left out (what its chart renders is not).
fn applied(inv: &Inventory) -> Vec<Applied<'_>> {
    let mut out = Vec::with_capacity(inv.objects.len() + inv.owners.len());
    // A ResourceSet is an entry of its parent's build already.
    for (id, o) in inv.kustomizations() {
        if let Some(parent) = &o.parent {
            out.push(Applied {
                owner: parent,
                id,
                held: Held::Owner(o),
            });
        }
    }
    let entries = inv
        .objects
        .iter()
        .chain(inv.duplicates.iter().map(|(id, e)| (id, e)));
    for (id, e) in entries {
        // Every entry of a `build_whole` inventory holds its object, every entry of a
        // `Keep::Prints` one its print.
        if e.holds() || e.print.is_some() {
            out.push(Applied {
                owner: &e.owner,
                id,
                held: Held::Entry(e, &inv.prints),
            });
        }
        // What its chart renders, under the HelmRelease, as its owner applies the release.
        if let Some(r) = e.release.as_deref().and_then(Release::rendered) {
            for o in &r.objects {
                out.push(Applied {
                    owner: &e.owner,
                    id: &o.id,
                    held: Held::Rendered(id, e, r, o),
                });
            }
        }
    }
    out.sort_by(|a, b| (a.owner, a.id).cmp(&(b.owner, b.id)));
    out
}

/// `raw` as it is shown, and whether masking changed it: the values of the Secrets its owner
/// substitutes from masked where they stand (`substituted`), then every Secret value
/// (`redact::mask_object`), then, for an object of a rendered release, the strings of its
/// values that come from Secrets (`release`).
fn shown(
    raw: Cow<'_, Value>,
    substituted: Option<&Secrets>,
    release: Option<&Secrets>,
) -> (Value, bool) {
    // kustomize-controller decrypts a SOPS-encrypted object and applies it without its
    // `sops` block; its values, ciphertext here, are masked all the same.
    let sops = is_sops(&raw);
    let mut object = raw.into_owned();
    if let (true, Value::Object(map)) = (sops, &mut object) {
        map.remove("sops");
    }
    // Substituted values first: they are masked where they stand, not their whole string.
    let mut masked =
        substituted.is_some_and(|values| crate::redact::mask_values(&mut object, values));
    masked |= crate::redact::mask_object(&mut object) || sops;
    if let Some(strings) = release {
        masked |= crate::redact::mask_values(&mut object, strings);
    }
    (object, masked)
}

/// The values of the Secrets of `inv` each owner substitutes from (`postBuild.substituteFrom`
/// of kind Secret, decoded): Flux writes them into the objects it builds.
fn substituted_secrets(inv: &Inventory) -> BTreeMap<ObjectId, Secrets> {
    let mut out = BTreeMap::new();
    for (id, o) in &inv.owners {
        let refs = o
            .object
            .at_pointer("/spec/postBuild/substituteFrom")
            .and_then(Value::as_array);
        let mut values: Vec<String> = Vec::new();
        for r in refs.into_iter().flatten() {
            if r.get("kind").and_then(Value::as_str) != Some("Secret") {
                continue;
            }
            let secret = ObjectId {
                group: String::new(),
                kind: "Secret".into(),
                namespace: id.namespace.clone(),
                name: r.get("name").and_then(Value::as_str).unwrap_or("").into(),
                cluster: id.cluster.clone(),
            };
            let whole = inv.objects.get(&secret).and_then(|e| e.whole.as_deref());
            if let Some(Source::Data(data)) = whole.and_then(|w| Source::of(&secret, w)) {
                values.extend(data.values().map(|v| v.replace('\n', "")));
            }
        }
        if !values.is_empty() {
            out.insert(id.clone(), Secrets::new(values));
        }
    }
    out
}

/// How an object changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Added,
    Removed,
    /// Its content or its owner changes.
    Modified,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Added => "added",
            Kind::Removed => "removed",
            Kind::Modified => "modified",
        }
    }
}

/// One object that changes between two builds of an environment. (An environment's changes
/// share its name, an owner's its id, a file's its path, with each other and the builds: a
/// change that moves every object of an app tier makes hundreds of thousands.)
#[derive(Debug, Clone)]
pub struct Change {
    pub environment: Arc<str>,
    pub id: ObjectId,
    pub api_version: String,
    pub change: Kind,
    /// Its owner in the newer build (the older, for one removed).
    pub owner: Arc<ObjectId>,
    /// Its owner in the older build, when that is another (it moves).
    pub previous_owner: Option<Arc<ObjectId>>,
    /// Its file in the newer build (the older, for one removed).
    pub file: Arc<str>,
    /// Its file in the older build, when that is another.
    pub previous_file: Option<Arc<str>>,
    /// The unified diff of its YAML, masked; empty when only its owner changes or only
    /// masked values do.
    pub diff: String,
    /// The keys of `data` / `stringData` of a Secret whose masked values change.
    pub secret_keys: Vec<String>,
    /// For a Flux Kustomization removed: why Flux deletes it, when it does (its objects'
    /// deletions are cutover's, by object).
    pub kustomization_deleted: Option<String>,
}

impl Change {
    /// Object `id` of `owner` (from `file`), changing as `kind` says.
    fn of(
        environment: &Arc<str>,
        kind: Kind,
        id: &ObjectId,
        api_version: String,
        owner: Arc<ObjectId>,
        file: Arc<str>,
    ) -> Change {
        Change {
            environment: environment.clone(),
            id: id.clone(),
            api_version,
            change: kind,
            owner,
            previous_owner: None,
            file,
            previous_file: None,
            diff: String::new(),
            secret_keys: Vec::new(),
            kustomization_deleted: None,
        }
    }
}

/// What changes from revision `from` to `to` (the working tree when `None`) of the repository
/// at `root`, environment after environment, and cutover's report on the change (as
/// `cutover::analyse` makes it, from the same builds). Each revision is built keeping every
/// object's print, not the object (`Keep::Prints`); the objects whose prints do not settle
/// what changes are built again, whole, once the verdicts have freed the rest.
pub fn changes(
    root: &Path,
    from: &str,
    to: Option<&str>,
    overrides: &[(String, String)],
) -> Result<(Report, Vec<Change>)> {
    finish(cutover::analyse_with(
        root,
        from,
        to,
        overrides,
        Keep::Prints,
        found,
        builds_again,
    )?)
}

/// `changes` between two trees (older, newer), built keeping of each object what `kept`
/// says: its print, as `changes` does, or the object itself: the plain comparison that the
/// one by prints must agree with.
#[cfg(test)]
pub fn changes_between(
    trees: (crate::tree::FileTree, crate::tree::FileTree),
    change: &str,
    kept: Keep,
) -> Result<(Report, Vec<Change>)> {
    finish(cutover::analyse_trees(
        trees,
        None,
        &[],
        change,
        kept,
        found,
        builds_again,
    )?)
}

/// What `diff` finds in an environment's two builds, and the objects to read again from each.
type Found = (Diff, [BTreeSet<ObjectId>; 2]);

fn found(old: &Inventory, new: &Inventory) -> Found {
    let found = diff(old, new);
    let wanted = found.wanted();
    (found, wanted)
}

/// The changes of every environment analysed, the objects their prints did not settle read
/// from the environment built again, keeping them whole (`Keep::These`). Helm is not run
/// again: what a chart renders is held whole.
fn finish(analysed: Analysed<Found>) -> Result<(Report, Vec<Change>)> {
    let Analysed {
        report,
        found,
        trees,
    } = analysed;
    let mut changes = Vec::new();
    for (env, (found, wanted)) in found {
        let again = |side: usize| match &trees {
            Some((old, new)) if !wanted[side].is_empty() => {
                let tree = if side == 0 { old } else { new };
                inventory::build_as(tree, &env, Keep::These(&wanted[side]))
            }
            _ => Inventory::default(),
        };
        let [old, new] = std::thread::scope(|s| {
            let old = s.spawn(|| again(0));
            let new = again(1);
            [
                old.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
                new,
            ]
        });
        changes.extend(found.finish([&old, &new]).map_err(|e| {
            Error::Usage(format!(
                "internal error: {e}; nothing was printed. Please report this with the repository's layout"
            ))
        })?);
    }
    Ok((report, changes))
}

/// What changes between two builds of one environment, as `diff` finds it: the changes, and
/// the objects to read before the rest can be told (`wanted`, `finish`).
struct Diff {
    environment: Arc<str>,
    changes: Vec<Change>,
    /// Objects of both builds whose values must be compared and that a build holds by
    /// their print only.
    pending: Vec<Pending>,
    /// The Secret values each owner substitutes, in the older build and the newer.
    substituted: [BTreeMap<ObjectId, Secrets>; 2],
}

/// An object of both builds, to be compared by value.
struct Pending {
    id: ObjectId,
    /// In the older build and the newer.
    sides: [Side; 2],
}

enum Side {
    /// As shown, read from the build that held it, and as built.
    Built {
        built: Box<MaskedObject>,
        raw: Value,
    },
    /// Held by its print: the entry of `owner` (from `file`) to read again.
    Entry {
        owner: Arc<ObjectId>,
        file: Arc<str>,
    },
}

impl Diff {
    /// The ids of the objects to read from each build (the older, the newer): the builds
    /// `finish` needs keep at least these whole (`Keep::These`).
    fn wanted(&self) -> [BTreeSet<ObjectId>; 2] {
        let mut out: [BTreeSet<ObjectId>; 2] = Default::default();
        for p in &self.pending {
            for (ids, side) in out.iter_mut().zip(&p.sides) {
                if let Side::Entry { .. } = side {
                    ids.insert(p.id.clone());
                }
            }
        }
        out
    }

    /// Every change, in owner and id order, the objects of `wanted` read from `builds` (the
    /// older, the newer): the builds `diff` was given, made again keeping them whole. `Err`
    /// names an object such a build does not hold.
    fn finish(self, builds: [&Inventory; 2]) -> Result<Vec<Change>, String> {
        let Diff {
            environment,
            mut changes,
            pending,
            substituted,
        } = self;
        for p in pending {
            let mut shown = Vec::with_capacity(2);
            for ((side, inv), subs) in p.sides.into_iter().zip(builds).zip(&substituted) {
                shown.push(match side {
                    Side::Built { built, raw } => (*built, Cow::Owned(raw)),
                    Side::Entry { owner, file } => {
                        let raw = held(inv, &owner, &p.id).ok_or_else(|| {
                            format!(
                                "{}: not found again in the build of {environment} ({owner})",
                                label(&p.id)
                            )
                        })?;
                        let a = Applied {
                            owner: &owner,
                            id: &p.id,
                            held: Held::Read(&owner, &file, &raw),
                        };
                        (a.built(&environment, Cow::Borrowed(&raw), subs), raw)
                    }
                });
            }
            if let [(a, x), (b, y)] = shown.as_slice() {
                changes.extend(modified(&environment, (a, x), (b, y)));
            }
        }
        changes.sort_by(|a, b| (&a.owner, &a.id).cmp(&(&b.owner, &b.id)));
        Ok(changes)
    }
}

/// The value of object `id` as `owner` applies it in `inv`, where its entry holds it.
fn held<'a>(inv: &'a Inventory, owner: &ObjectId, id: &ObjectId) -> Option<Cow<'a, Value>> {
    let entry = match inv.objects.get(id) {
        Some(e) if *e.owner == *owner => Some(e),
        _ => inv
            .duplicates
            .iter()
            .find(|(i, e)| i == id && *e.owner == *owner)
            .map(|(_, e)| e),
    };
    entry?.value()
}

/// What changes between `old` and `new`, two builds of one environment (`old` empty when the
/// environment is new), but for the objects that must be read before they can be told
/// (`Diff::wanted`, `Diff::finish`). Builds that keep every object whole (`Keep::Whole`)
/// leave none: every object is compared by its value. Builds that keep prints
/// (`Keep::Prints`) come to the same changes: two objects with one print are one object
/// (`object::digest`), and two whose prints differ are compared by value once read.
fn diff(old: &Inventory, new: &Inventory) -> Diff {
    let environment: &Arc<str> = &if new.env.is_empty() {
        &old.env
    } else {
        &new.env
    }
    .as_str()
    .into();
    let substituted = [substituted_secrets(old), substituted_secrets(new)];
    let [was, is] = &substituted;
    let (before, after) = in_id_order(old, new);
    let mut after = after.into_iter().peekable();
    let (mut changes, mut pending) = (Vec::new(), Vec::new());
    for a in before {
        let id = a.id;
        while let Some(b) = after.next_if(|b| b.id < id) {
            changes.push(b.listed(environment, Kind::Added, is));
        }
        let Some(b) = after.next_if(|b| b.id == id) else {
            let mut c = a.listed(environment, Kind::Removed, was);
            if old.owners.contains_key(id) {
                // The reason names it as its objects' owner: "its owner X is removed (...)".
                c.kustomization_deleted =
                    crate::cutover::rules::kustomization_deleted(old, new, id)
                        .map(|why| why.strip_prefix("its owner ").unwrap_or(&why).to_string());
            }
            changes.push(c);
            continue;
        };
        if let (Some(x), Some(y)) = (a.raw(), b.raw()) {
            if x == y && a.owner == b.owner {
                continue;
            }
            changes.extend(modified(
                environment,
                (&a.built(environment, Cow::Borrowed(&x), was), &x),
                (&b.built(environment, Cow::Borrowed(&y), is), &y),
            ));
            continue;
        }
        if is_pending(&a, &b, &substituted) {
            pending.push(Pending {
                id: id.clone(),
                sides: [a.side(environment, was), b.side(environment, is)],
            });
            continue;
        }
        // One print, one object: unless it moves, nothing changes.
        if a.owner == b.owner {
            continue;
        }
        let mut c = b.listed(environment, Kind::Modified, is);
        c.previous_owner = Some(a.shared_owner());
        let file = a.file();
        if file != c.file {
            c.previous_file = Some(file);
        }
        changes.push(c);
    }
    for b in after {
        changes.push(b.listed(environment, Kind::Added, is));
    }
    Diff {
        environment: environment.clone(),
        changes,
        pending,
        substituted,
    }
}

/// What each build applies, in id order, so that the builds are walked side by side (a
/// list, not a map, is what 100,000 services can afford for each build). An object is
/// matched by its id; one two owners apply is compared as its first owner's (the one Flux
/// counts it as), and of what is left of one id, the first listed.
fn in_id_order<'a>(old: &'a Inventory, new: &'a Inventory) -> (Vec<Applied<'a>>, Vec<Applied<'a>>) {
    fn index<'a>(mut applied: Vec<Applied<'a>>, inv: &Inventory) -> Vec<Applied<'a>> {
        applied.retain(|a| inv.objects.get(a.id).is_none_or(|e| *e.owner == *a.owner));
        // Stable: the first listed of an id stays first.
        applied.sort_by(|a, b| a.id.cmp(b.id));
        applied.dedup_by(|later, first| later.id == first.id);
        applied
    }
    (index(applied(old), old), index(applied(new), new))
}

/// Whether `a` and `b`, one object of two builds, can be told apart only by reading it
/// again: the builds do not both hold its value, and their prints differ or it moves and is
/// masked by other values (`Applied::masks`). Two with one print are one object, key order
/// included, and masked by the same values it shows the same.
fn is_pending(a: &Applied, b: &Applied, [was, is]: &[BTreeMap<ObjectId, Secrets>; 2]) -> bool {
    if a.holds() && b.holds() {
        return false;
    }
    let same = a.digest().is_some_and(|d| Some(d) == b.digest());
    !(same && (a.owner == b.owner || a.masks(was) == b.masks(is)))
}

/// Whether `diff` of `old` and `new` leaves objects to read again (`Diff::wanted`): then the
/// revisions are kept to build them again. The same walk as `diff`'s, finding nothing.
fn builds_again(old: &Inventory, new: &Inventory) -> bool {
    let substituted = [substituted_secrets(old), substituted_secrets(new)];
    let (before, after) = in_id_order(old, new);
    let mut after = after.iter().peekable();
    before.iter().any(|a| {
        while after.next_if(|b| b.id < a.id).is_some() {}
        after
            .next_if(|b| b.id == a.id)
            .is_some_and(|b| is_pending(a, b, &substituted))
    })
}

/// What changes from `a` to `b`, one object of two builds, as shown (`x` and `y` as built):
/// nothing when it is the same value with the same owner, else a modified object with the
/// diff of its YAML.
fn modified(
    environment: &Arc<str>,
    (a, x): (&MaskedObject, &Value),
    (b, y): (&MaskedObject, &Value),
) -> Option<Change> {
    if x == y && a.owner == b.owner {
        return None;
    }
    let mut c = Change::of(
        environment,
        Kind::Modified,
        &b.id,
        b.api_version().to_string(),
        b.owner.clone(),
        b.file.clone(),
    );
    if a.owner != b.owner {
        c.previous_owner = Some(a.owner.clone());
    }
    if a.file != b.file {
        c.previous_file = Some(a.file.clone());
    }
    let (ya, yb) = (a.yaml(), b.yaml());
    if ya != yb {
        c.diff = crate::unified::unified_diff(&label(&b.id), &ya, &yb);
    }
    c.secret_keys = changed_secret_keys(x, y);
    Some(c)
}

/// `kind/namespace/name` (`kind/name` for a cluster-scoped object), naming an object's diff.
pub fn label(id: &ObjectId) -> String {
    if id.namespace.is_empty() {
        format!("{}/{}", id.kind, id.name)
    } else {
        format!("{}/{}/{}", id.kind, id.namespace, id.name)
    }
}

/// The keys of `data` and `stringData` whose values differ between two versions of a Secret
/// (`data.password`): what changes where the diff shows only masks.
fn changed_secret_keys(a: &Value, b: &Value) -> Vec<String> {
    let secret = |v: &Value| {
        v.get("kind")
            .and_then(Value::as_str)
            .is_some_and(|k| k.eq_ignore_ascii_case("secret"))
    };
    if !secret(a) || !secret(b) {
        return Vec::new();
    }
    let mut keys = Vec::new();
    for field in ["data", "stringData"] {
        let (ma, mb) = (a.get(field), b.get(field));
        let empty = serde_json::Map::new();
        let (ma, mb) = (
            ma.and_then(Value::as_object).unwrap_or(&empty),
            mb.and_then(Value::as_object).unwrap_or(&empty),
        );
        for (k, va) in ma {
            if mb.get(k).is_some_and(|vb| vb != va) {
                keys.push(format!("{field}.{k}"));
            }
        }
    }
    keys
}
