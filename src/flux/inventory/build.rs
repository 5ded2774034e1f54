//! The build of an environment's inventory: each owner, from the root down, built at its
//! `spec.path` in the order the builds find them, its objects recorded for the first owner
//! that builds them. A pass that finds a `substituteFrom` source an earlier owner looked for
//! in vain is made again (`build_with`); the owners that read ExternalArtifacts are built
//! over their files (`flux::artifact`).

use std::borrow::Cow;
use std::collections::{btree_map, BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use serde_json::Value;

use super::{resource_set_owner, unreachable_owner, Entry, Inventory, Keep, Owner};
use crate::envsubst::Lookup;
use crate::flux::admission::{self, Admission};
use crate::flux::artifact::{self, Folders};
use crate::flux::data::HELM_GROUP;
use crate::flux::discover::{self, Environment};
use crate::flux::facts;
use crate::flux::generated::{FluxBuild, FluxBuildError, FluxSpec};
use crate::flux::resource_set;
use crate::flux::source::spec_ignore;
use crate::flux::substitute::{self, Source, SubstituteError, Variables};
use crate::flux::{Kustomization, SourceKind, SourceRef, KUSTOMIZE_GROUP};
use crate::kustomize::object::{Cluster, ObjectId};
use crate::kustomize::{Builder, Resource, Warning};
use crate::kustomize::{Loads, Remembered, Remembering, Rewrite, Shared};
use crate::pointer::Pointer;
use crate::tree::{FileTree, Footprint};
use crate::yaml::{PerText, Text};

/// The root Kustomization of environment `env` in `tree` (see `discover::root_in`).
fn root_of(tree: &FileTree, env: &Environment) -> Owner {
    let object = discover::root_in(tree, env);
    let (file, index) = discover::root_file(tree, env).unwrap_or_default();
    let mut root = Owner::from_value(&object, None, None, &file, index)
        .unwrap_or_else(|| unreachable_owner(&env.path));
    root.file = file;
    root
}

/// Builds environment `env` of `tree`. A Kustomization that reads an `ExternalArtifact`
/// which an ArtifactGenerator of the build makes out of this repository is built from the
/// files the generator copies (`flux::artifact::build_artifacts`): the environment is built
/// a second time over the tree with those files added, and their paths are given back as
/// the repository files they copy.
pub fn build(tree: &FileTree, env: &Environment) -> Inventory {
    build_as(tree, env, Keep::Facts)
}

/// What the builds of an environment over one tree of a history keep for the next (see
/// `kustomize::Remembered`): those over the repository's files, and those over them with the
/// files of its ExternalArtifacts copied in (`artifact::build_artifacts`), each replayed only
/// in its own kind of tree.
#[derive(Debug, Default)]
pub struct Memory {
    repository: Passes,
    artifacts: Passes,
    /// The `substituteFrom` sources no build had when an owner read them, looked for in
    /// every manifest (`written_outside`), in any pass over the repository's files.
    looked_outside: BTreeSet<ObjectId>,
}

/// What the passes over one kind of tree keep for the next revision's (`build_with`).
#[derive(Debug, Default)]
struct Passes {
    /// The builds of the last pass.
    remembered: Remembered,
    /// How the next revision's first pass begins (`First`).
    first: First,
    /// The webhook that changes Kustomizations as the cluster admits them, as the last pass
    /// found it: the next revision's first pass begins with it.
    admission: Option<Admission>,
}

/// How a pass over a kind of tree begins: without sources (a build of one revision),
/// or, in a history whose revision before took two passes, with the sources its first pass
/// built (`Guess`), and once a pass made so could not stand for the second, as the first
/// again for the rest of the history (`Never`).
#[derive(Debug, Default)]
enum First {
    #[default]
    Plain,
    Guess(Sources),
    Never,
}

/// The `substituteFrom` sources (ConfigMaps and Secrets) a pass built, by id.
type Sources = BTreeMap<ObjectId, Source>;

impl Memory {
    /// The files loaded over the repository's tree (`kustomize::Loads`).
    pub fn loads(&self) -> Arc<Loads> {
        self.repository.remembered.loads()
    }
}

/// `build`, replaying the builds of Flux Kustomizations that `before` kept of an earlier
/// revision where nothing they read changed, and keeping this revision's for the next: the
/// builds of a history, one revision after another.
pub fn build_remembering(
    tree: &FileTree,
    env: &Environment,
    before: Memory,
) -> (Inventory, Memory) {
    let (inv, now) = build_keeping(tree, env, Keep::Facts, Some(before));
    (inv, now.unwrap_or_default())
}

/// Whether `build_remembering` of `env` over `tree` would give `built` again, which it gave
/// with `before` left for the next revision: the root is the same, and nothing its builds
/// read over the artifact of its source changed (`Remembered::holds_over`), nor any CRD
/// there. Then every build is replayed, in the same order, with the same sources, and
/// `before` is moved to the artifact of `tree` (`Remembered::moved_to`): the next revision
/// is compared with this one, not with the one the builds were made over.
pub fn unchanged(
    tree: &FileTree,
    env: &Environment,
    before: &mut Memory,
    built: &Inventory,
) -> bool {
    let repository = &before.repository.remembered;
    // An ExternalArtifact is made of files its generator lists (`artifact::build_artifacts`).
    let reads_artifacts = built
        .owners
        .values()
        .any(|o| o.source().kind == SourceKind::ExternalArtifact);
    if reads_artifacts
        || before.artifacts.remembered.tree().is_some()
        || repository.tree().is_none()
    {
        return false;
    }
    let root = root_of(tree, env);
    let same_root = built
        .owners
        .get(&root.id)
        .is_some_and(|o| o.parent.is_none() && o.file == root.file && o.object == root.object);
    if !same_root {
        return false;
    }
    let view = spec_ignore(tree, &root.file, &root.source());
    let artifact = tree.artifact_after(&env.artifact_root, view.as_deref(), repository.tree());
    let Some(changes) = repository.changes_to(&artifact) else {
        return false;
    };
    // Where a source no build makes is written (`written_outside`) changes only with a file
    // that writes it.
    let writes_looked_for = |t: &FileTree, path: &str| {
        t.held(path).is_some_and(|text| {
            let written = written_sources(path, text);
            before.looked_outside.iter().any(|id| writes(&written, id))
        })
    };
    let paths = || changes.changed.iter().chain(&changes.presence);
    if !before.looked_outside.is_empty()
        && paths().any(|p| {
            writes_looked_for(&artifact, p)
                || repository
                    .tree()
                    .is_some_and(|old| writes_looked_for(old, p))
        })
    {
        return false;
    }
    let same = repository.holds_over(&changes)
        && repository
            .cluster_kinds_over(&artifact, view.as_deref(), &changes)
            .is_some();
    if same {
        before
            .repository
            .remembered
            .moved_to(artifact.recording(), &changes);
    }
    same
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

/// `build`, keeping of each object what `keep` says, remembering builds when given `before`:
/// those of the passes over the repository's own files, and apart from them those over the
/// files of its ExternalArtifacts (the last pass of each is given back).
fn build_keeping(
    tree: &FileTree,
    env: &Environment,
    keep: Keep,
    before: Option<Memory>,
) -> (Inventory, Option<Memory>) {
    let (repository, artifacts) = match before {
        Some(m) => (Some(m.repository), Some(m.artifacts)),
        None => (None, None),
    };
    let made = build_with(tree, env, &Folders::new(), keep, repository);
    let mut from_artifacts = None;
    let inv = artifact::build_artifacts(tree, made.inv, |combined, folders| {
        let made = build_with(combined, env, folders, keep, artifacts);
        from_artifacts = made.next;
        made.inv
    });
    let memory = made.next.map(|repository| Memory {
        repository,
        artifacts: from_artifacts.unwrap_or_default(),
        looked_outside: made.looked,
    });
    (inv, memory)
}

/// What `build_with` makes.
struct Built {
    inv: Inventory,
    /// Given passes of a revision before, what this revision's keep for the next.
    next: Option<Passes>,
    /// The sources looked for in every manifest, in any pass (`Memory::looked_outside`).
    looked: BTreeSet<ObjectId>,
}

/// `build`, with the owners that read the ExternalArtifacts of `artifacts` built at their
/// path in its folder. A pass is made again, up to three, when an owner looked for a
/// `substituteFrom` source that the pass built only later: the next knows it from the start,
/// and replays the builds of the pass before whose spec the sources leave as they were (a
/// build depends on its files and its spec alone; what is substituted in its objects is
/// substituted again).
///
/// In a history, a revision after one that took two passes begins with the sources the
/// first of them built (`First::Guess`): most steps leave those as they were, and the pass
/// is then the second (`stands_for_second`), so one pass is made instead of two.
///
/// A pass begins with the webhook that changes Kustomizations as the cluster admits them
/// (`flux::admission`) as the revision before found it; when the pass finds another, the
/// passes are made again, once, beginning with the one it found.
///
/// `before`, the passes of the revision before over the same kind of tree, is given in a
/// history; what this revision's keep for the next is given back then.
fn build_with(
    tree: &FileTree,
    env: &Environment,
    artifacts: &Folders,
    keep: Keep,
    before: Option<Passes>,
) -> Built {
    let (mut before, first, mut admission) = match before {
        Some(p) => (Some(p.remembered), p.first, p.admission),
        None => (None, First::Plain, None),
    };
    let (mut cluster, mut guessed, mut never) = match first {
        First::Guess(sources) => (sources, true, false),
        First::Plain => (Sources::new(), false, false),
        First::Never => (Sources::new(), false, true),
    };
    let mut pass = 0;
    // The sources looked for in every manifest, in any pass (a pass reads those before it).
    let mut looked = BTreeSet::new();
    let mut admission_found = false;
    loop {
        pass += 1;
        let mut made = build_pass(
            tree,
            env,
            artifacts,
            &cluster,
            admission.as_ref(),
            keep,
            before.take(),
        );
        // What a pass found among an earlier pass's sources, a first pass looked for (the
        // guessed pass stands for that first).
        looked.extend(made.missed.iter().chain(&made.served).cloned());
        before = made.remembered.take();
        let found = made.admission();
        if found != admission && !std::mem::replace(&mut admission_found, true) {
            admission = found;
            (pass, cluster, guessed) = (0, Sources::new(), false);
            continue;
        }
        made.inv.admission = admission.clone();
        if std::mem::take(&mut guessed) && !made.served.is_empty() {
            if stands_for_second(&made, &cluster) {
                // Its sources are those the first pass builds.
                let next = First::Guess(made.sources.clone());
                return made.done(before, looked, next);
            }
            // The first pass is made, or stood for (it builds the sources this one did, and
            // finds some later), and the second after it.
            never |= made.unsure;
            let found_later = made
                .missed
                .iter()
                .chain(&made.served)
                .any(|id| made.sources.contains_key(id));
            (pass, cluster) = if !made.unsure && found_later {
                (1, made.sources)
            } else {
                (0, Sources::new())
            };
            continue;
        }
        let found_later = made.missed.iter().any(|id| made.sources.contains_key(id));
        if !found_later || pass == 3 {
            let next = match pass {
                _ if never => First::Never,
                2 => First::Guess(cluster),
                _ => First::Plain,
            };
            return made.done(before, looked, next);
        }
        cluster = made.sources;
    }
}

/// Whether pass `made`, begun with `guess` (the sources the first pass of the revision
/// before built), is the second pass of its revision: the one made with the sources its
/// first pass builds.
///
/// Its first pass differs from it only where an owner read a guessed source (`served`): there
/// the first did not have it. When what those owners record cannot differ between the two
/// (`unsure` is false), the first builds the same sources, owners and order as this one, and
/// looks for what this one looked for and did not find, and for the served ones. This pass is
/// then the second if the sources it built hold, at every id it asked the guess for, what the
/// guess holds (the second would have read the same), and no source it looked for in vain
/// was built later (the second is the last). (Its first finds a served one later, as this
/// one built it: a second is made.)
fn stands_for_second(made: &Pass, guess: &Sources) -> bool {
    !made.unsure
        && made
            .served
            .iter()
            .chain(&made.missed)
            .all(|id| made.sources.get(id) == guess.get(id))
}

/// What one pass of `build_with` makes.
struct Pass {
    inv: Inventory,
    /// The sources (ConfigMaps and Secrets) this pass built.
    sources: Sources,
    /// The sources it looked for and did not find.
    missed: BTreeSet<ObjectId>,
    /// Those it found among the sources of an earlier pass (`cluster`), not among its own.
    served: BTreeSet<ObjectId>,
    /// Whether an owner that read a served source may have recorded other sources or
    /// owners without it (see `Found::unsure`).
    unsure: bool,
    /// Given `before`, the builds it remembered.
    remembered: Option<Remembered>,
}

impl Pass {
    /// The webhook among what it built (`flux::admission`).
    fn admission(&self) -> Option<Admission> {
        let objects = &self.inv.objects;
        // Ids are ordered by kind first: the HelmReleases are one run of them.
        let first = ObjectId {
            group: String::new(),
            kind: "HelmRelease".into(),
            namespace: String::new(),
            name: String::new(),
            cluster: None,
        };
        let releases = objects
            .range(first..)
            .take_while(|(id, _)| id.kind == "HelmRelease")
            .filter(|(id, _)| id.group == HELM_GROUP)
            .filter_map(|(id, e)| Some((id, &**e.whole.as_ref()?)));
        let whole = |id: &ObjectId| objects.get(id).and_then(|e| e.whole.as_deref());
        admission::of(whole, releases, &self.sources)
    }

    /// The pass as `build_with`'s last: given `remembered`, its builds (in a history), with
    /// `first` how the next revision's first pass begins.
    fn done(
        mut self,
        remembered: Option<Remembered>,
        looked: BTreeSet<ObjectId>,
        first: First,
    ) -> Built {
        self.inv.sources = self.sources;
        let next = remembered.map(|remembered| Passes {
            remembered,
            first,
            admission: self.inv.admission.clone(),
        });
        Built {
            inv: self.inv,
            next,
            looked,
        }
    }
}

/// What a pass reads, the same for every owner it builds.
struct Context<'a> {
    /// The artifact of the root's source: what Flux builds.
    tree: &'a FileTree,
    env_path: &'a str,
    artifacts: &'a Folders,
    /// The sources an earlier pass built.
    cluster: &'a Sources,
    /// The webhook that changes Kustomizations as the cluster admits them.
    admission: Option<&'a Admission>,
    keep: Keep<'a>,
    /// The sources that are this repository (`Inventory::repository`).
    repository: &'a [SourceRef],
    /// The folder of the repository the root's source is made of (`Environment::artifact_root`).
    artifact_root: &'a str,
}

/// What a pass has found so far.
struct Found {
    inv: Inventory,
    /// The owners found and not yet built, in the order they were found.
    queue: VecDeque<ObjectId>,
    /// Warnings besides the builder's.
    warnings: Vec<Warning>,
    /// The sources built, each with the owner that built it first.
    sources: BTreeMap<ObjectId, (Arc<ObjectId>, Source)>,
    /// The sources looked for and not found.
    missed: BTreeSet<ObjectId>,
    /// Of those, the file each is written in outside every build (`written_outside`), asked
    /// once a pass: every owner that reads one looks for it.
    outside: BTreeMap<ObjectId, Option<String>>,
    /// The sources found among those of an earlier pass (`Context::cluster`) only.
    served: BTreeSet<ObjectId>,
    /// Whether an owner that read a served source may record, without it, other sources or
    /// owners than it did (`stands_for_second`): its variables could not be read, it
    /// substitutes nothing with them (without them it would), or it built an object that
    /// substitution may make or change into a source or a Flux Kustomization
    /// (`may_be_source_or_owner`).
    unsure: bool,
    /// The ResourceSets recorded since they were last rendered (`operate`).
    sets: Vec<ObjectId>,
}

/// How long the lists of `Found` were when an owner's build began.
#[derive(Clone, Copy)]
struct Mark {
    queued: usize,
    warned: usize,
    duplicated: usize,
}

/// One pass of `build_with`: `cluster` holds the sources of an earlier pass, `admission`
/// the webhook that changes Kustomizations as the cluster admits them, `before` the builds
/// of an earlier revision to replay.
fn build_pass(
    tree: &FileTree,
    env: &Environment,
    artifacts: &Folders,
    cluster: &Sources,
    admission: Option<&Admission>,
    keep: Keep,
    before: Option<Remembered>,
) -> Pass {
    crate::tally::add(&crate::tally::ENVIRONMENT_BUILDS);
    let root = root_of(tree, env);
    // What Flux builds is the artifact of the root's source.
    let view = spec_ignore(tree, &root.file, &root.source());
    let mut artifact = tree.artifact_after(
        &env.artifact_root,
        view.as_deref(),
        before.as_ref().and_then(Remembered::tree),
    );
    if before.is_some() {
        artifact = artifact.recording();
    }
    // The kinds of the tree's CRDs are those of the builds before when no file that changed
    // declares one.
    let changes = before.as_ref().and_then(|b| b.changes_to(&artifact));
    let kinds = before
        .as_ref()
        .zip(changes.as_ref())
        .and_then(|(b, changes)| b.cluster_kinds_over(&artifact, view.as_deref(), changes));
    let mut builder = match kinds {
        Some(kinds) => Builder::with_cluster_kinds(&artifact, kinds),
        None => Builder::new(&artifact),
    }
    .keeping(facts::KEEP);
    if keep.whole_objects() {
        builder.keep_objects_whole();
    }
    let mut memo = before.map(|b| builder.remembering(b, view, changes));
    let repository: Vec<SourceRef> = std::iter::once(root.source())
        .chain(env.nested.iter().cloned())
        .collect();
    let cx = Context {
        tree: &artifact,
        env_path: &env.path,
        artifacts,
        cluster,
        admission,
        keep,
        repository: &repository,
        artifact_root: &env.artifact_root,
    };
    let mut found = Found {
        inv: Inventory {
            env: env.name.clone(),
            env_path: env.path.clone(),
            artifact_root: env.artifact_root.clone(),
            repository: repository.clone(),
            ..Inventory::default()
        },
        queue: VecDeque::from([root.id.clone()]),
        warnings: Vec::new(),
        sources: BTreeMap::new(),
        missed: BTreeSet::new(),
        outside: BTreeMap::new(),
        served: BTreeSet::new(),
        unsure: false,
        sets: Vec::new(),
    };
    found.inv.owners.insert(root.id.clone(), root);
    // The Flux Kustomizations, then the ResourceSets their builds apply, and those the
    // ResourceSets make, until none is left.
    loop {
        while let Some(owner_id) = found.queue.pop_front() {
            let Some(owner) = found.inv.owners.get(&owner_id).cloned() else {
                continue;
            };
            build_owner(&cx, &mut found, &mut builder, memo.as_mut(), &owner);
        }
        if !operate(&cx, &mut found) {
            break;
        }
    }
    let Found {
        mut inv,
        warnings,
        sources,
        missed,
        served,
        unsure,
        ..
    } = found;
    inv.warnings = builder.warnings;
    inv.warnings.extend(warnings);
    inv.warnings.sort();
    inv.warnings.dedup();
    Pass {
        inv,
        sources: sources.into_iter().map(|(id, (_, s))| (id, s)).collect(),
        missed,
        served,
        unsure,
        remembered: memo.map(Remembering::into_remembered),
    }
}

/// Builds `owner`, which `found` queued, and records what it applies; an owner that reads
/// another source, or whose build fails, is marked unbuilt.
fn build_owner(
    cx: &Context,
    found: &mut Found,
    builder: &mut Builder,
    memo: Option<&mut Remembering>,
    owner: &Owner,
) {
    let where_ = if owner.file.is_empty() {
        cx.env_path.to_string()
    } else {
        owner.file.clone()
    };
    // One applied to another cluster is reconciled there, by that cluster's Flux from its
    // own sources, if it runs one.
    if owner.id.cluster.is_some() {
        let w = Warning {
            path: where_,
            feature: "another cluster".into(),
            message: format!(
                "{} is reconciled by that cluster's own Flux, from its sources there",
                owner.id
            ),
        };
        return found.unbuilt(&owner.id, w);
    }
    // One reading the root's source builds a folder of the artifact that source is made of:
    // its path in the repository is under the artifact's folder.
    let mapped;
    let owner = if !cx.artifact_root.is_empty()
        && (owner.parent.is_none() || cx.repository.contains(&owner.source()))
    {
        let mut o = owner.clone();
        o.path = crate::fs::join(cx.artifact_root, &owner.path).unwrap_or_default();
        if let Some(stored) = found.inv.owners.get_mut(&owner.id) {
            stored.path.clone_from(&o.path);
        }
        mapped = o;
        &mapped
    } else {
        owner
    };
    let path = match folder(cx, owner, &where_) {
        Ok(path) => path,
        Err(w) => return found.unbuilt(&owner.id, w),
    };
    let served = found.served.len();
    let vars = variables(cx, found, owner);
    // One that read a served source is watched (see `Found::unsure`).
    let reads_served = found.served.len() > served;
    if reads_served
        && !vars
            .as_ref()
            .is_ok_and(|v| v.as_ref().is_some_and(|v| v.runs))
    {
        found.unsure = true;
    }
    let vars = match vars {
        Ok(vars) => vars,
        Err(e) => return found.fail(&owner.id, where_, e.to_string(), true),
    };
    if let Some(o) = found.inv.owners.get_mut(&owner.id) {
        o.reads.clone_from(&vars);
    }
    // A source in no build may be in the cluster (made out of band): Flux fails the build
    // without it, and with it builds what fluxwave builds, what the source may set unknown
    // (`Variables::lookup`). What Flux deletes once the build runs is what fluxwave finds.
    if let Some(vars) = vars.as_ref().filter(|v| !v.missing.is_empty()) {
        found.warnings.push(Warning {
            path: where_.clone(),
            feature: IN_CLUSTER.into(),
            message: format!(
                "{} reads substituteFrom {}, in no build of the environment: Flux fails the build unless it is in the cluster, and any variable it may set is unknown",
                owner.id,
                vars.missing.join(", ")
            ),
        });
    }
    let shared_id = Arc::new(owner.id.clone());
    let mut building = Building {
        owner: &shared_id,
        vars: vars.map(|v| {
            let key = v.digest();
            (v, key)
        }),
        failure: None,
        undefined: BTreeSet::new(),
        keep: cx.keep,
        cluster: owner.applies_to.clone(),
        file: Arc::from(""),
        reads_served,
    };
    let mark = found.mark();
    let mut recorded = 0;
    builder.start_owner();
    let spec = owner.flux_spec(format!("{where_} ({})", owner.id));
    let dir = path.trim_end_matches('/');
    let built = builder.build_owner_remembered(memo, dir, &spec, &mut |r, shared| {
        recorded += 1;
        record(found, &mut building, r, shared);
    });
    let undefined = std::mem::take(&mut building.undefined);
    // A substitution Flux cannot parse fails as surely as the files do.
    let built = built
        .map_err(|e| (e.to_string(), e.is_certain()))
        .and_then(|()| building.failure.map_or(Ok(()), |e| Err((e, true))));
    if let Err((e, certain)) = built {
        // Nothing of a build that fails is applied: what it recorded is taken back.
        if recorded > 0 {
            found.take_back(&shared_id, mark);
        }
        return found.fail(&owner.id, where_, e, certain);
    }
    // Flux fails these builds too; what they would apply is kept for the lints.
    if undefined.is_empty() {
        found.unseen(&owner.id, builder.owner_warnings(), mark);
    } else {
        let needs = format!("{} needs {}, which nothing sets and which has no default: Flux's strict substitution fails the build", owner.id, dollars(&undefined));
        let w = Warning {
            path: where_,
            feature: BUILD_FAILURE.into(),
            message: format!("{needs}, and deletes nothing of it"),
        };
        found.unbuilt(&owner.id, w);
        if let Some(o) = found.inv.owners.get_mut(&owner.id) {
            o.substitution_error = Some(needs);
            o.surely_fails = true;
        }
    }
}

/// Renders the ResourceSets recorded since the last call that the owners built so far apply
/// and that are not yet owners (see `flux::resource_set`): each becomes the owner of what the Flux Operator applies of
/// it, recorded as a build's objects are (the Flux Kustomizations among them are queued).
/// One applied by an owner whose build fails is left out: Flux does not apply it. False when
/// there was none.
fn operate(cx: &Context, found: &mut Found) -> bool {
    let mut recorded = std::mem::take(&mut found.sets);
    recorded.sort_unstable();
    recorded.dedup();
    let built = |owner: &ObjectId| found.inv.owners.get(owner).is_some_and(|o| o.built);
    let sets: Vec<(ObjectId, Entry, Arc<Value>)> = recorded
        .into_iter()
        .filter(|id| !found.inv.owners.contains_key(id))
        .filter_map(|id| {
            let e = found.inv.objects.get(&id).filter(|e| built(&e.owner))?;
            let set = e.whole.clone()?;
            Some((id, e.clone(), set))
        })
        .collect();
    if sets.is_empty() {
        return false;
    }
    let providers: Vec<(Arc<str>, Arc<Value>)> = found
        .inv
        .objects
        .iter()
        .filter(|(id, _)| resource_set::is_provider(id))
        .filter_map(|(_, e)| Some((e.file.clone(), e.whole.clone()?)))
        .collect();
    let values: Vec<&Value> = providers.iter().map(|(_, v)| &**v).collect();
    // One the operator does not reconcile applies nothing new, and deletes nothing.
    let made: Vec<resource_set::Made> = crate::par::map(&sets, |(id, _, set)| {
        if resource_set::reconciled(set) {
            resource_set::render(id, set, &values)
        } else {
            resource_set::Made::Objects(Arc::default())
        }
    });
    // Its own file, and those of the providers it may read.
    let files = |id: &ObjectId, e: &Entry, set: &Value| {
        let reads = set.at_pointer("/spec/inputsFrom").is_some();
        let mut files: Vec<String> = providers
            .iter()
            .filter(|_| reads)
            .filter(|(_, p)| {
                p.at_pointer("/metadata/namespace").and_then(Value::as_str) == Some(&id.namespace)
            })
            .map(|(f, _)| f.to_string())
            .chain(std::iter::once(e.file.to_string()))
            .collect();
        files.sort();
        files.dedup();
        files
    };
    for ((id, e, set), made) in sets.into_iter().zip(made) {
        let mut owner = resource_set_owner(&id, &set, &e.owner, &e.file, e.index);
        owner.made_of = files(&id, &e, &set);
        found.inv.owners.insert(id.clone(), owner);
        let objects = match made {
            resource_set::Made::Objects(objects) => objects,
            resource_set::Made::Fails(why) => {
                found.fail(&id, e.file.to_string(), why, false);
                continue;
            }
            resource_set::Made::Unknown(why) => {
                let w = Warning {
                    path: e.file.to_string(),
                    feature: "ResourceSet".into(),
                    message: format!("{id} is not rendered ({why}): what the Flux Operator applies and prunes of it is not in the inventory"),
                };
                found.unbuilt(&id, w);
                continue;
            }
        };
        let shared_id = Arc::new(id.clone());
        let mut building = Building {
            owner: &shared_id,
            vars: None,
            failure: None,
            undefined: BTreeSet::new(),
            keep: cx.keep,
            cluster: id.cluster.clone(),
            file: e.file.clone(),
            reads_served: false,
        };
        for object in objects.iter() {
            let r = Resource::generated(object.clone(), &e.file, e.index);
            record(found, &mut building, Cow::Owned(r), None);
        }
    }
    true
}

/// The folder `owner` is built at: its `spec.path`, in the folder of the ExternalArtifact it
/// reads when that is made from this repository. `Err` when it reads another source: what it
/// applies is not here.
fn folder(cx: &Context, owner: &Owner, where_: &str) -> Result<String, Warning> {
    let source = owner.source();
    let artifact = (source.kind == SourceKind::ExternalArtifact)
        .then(|| {
            cx.artifacts
                .get(&(source.namespace.clone(), source.name.clone()))
        })
        .flatten();
    if owner.parent.is_some() && !cx.repository.contains(&source) && artifact.is_none() {
        return Err(Warning {
            path: where_.to_string(),
            feature: "other source".into(),
            message: format!(
                "{} reads {source}, not this repository: what it applies is not in the inventory",
                owner.id
            ),
        });
    }
    Ok(match artifact {
        Some(folder) => format!("{folder}/{}", owner.path),
        None => owner.path.clone(),
    })
}

/// The `postBuild` variables of `owner`, when it has them, read from the sources of the
/// build so far and of an earlier pass; `Err` when Flux cannot read them.
fn variables(
    cx: &Context,
    found: &mut Found,
    owner: &Owner,
) -> Result<Option<Variables>, SubstituteError> {
    // A webhook that adds variables as the cluster admits it makes it substitute, with or
    // without `postBuild` in git.
    let admission = cx.admission.filter(|a| a.covers(&owner.id.namespace));
    if !owner.substitutes() && admission.is_none() {
        return Ok(None);
    }
    let (sources, missed, outside) = (&found.sources, &mut found.missed, &mut found.outside);
    let served = &mut found.served;
    substitute::variables(&owner.object, &owner.id.namespace, admission, &mut |id| {
        let s = sources.get(id).map(|(_, s)| s).or_else(|| {
            let s = cx.cluster.get(id);
            if s.is_some() {
                served.insert(id.clone());
            }
            s
        });
        if s.is_none() {
            missed.insert(id.clone());
            // One written outside every build (a bootstrap folder) is applied by
            // hand: it is in the cluster, with values that may not be its file's.
            let file = outside
                .entry(id.clone())
                .or_insert_with(|| written_outside(cx.tree, id));
            return file.as_ref().map(|file| Source::Unknown {
                why: format!("written outside every build, in {file}, and applied by hand"),
                from: None,
                keys: None,
                agreed: Default::default(),
            });
        }
        s.cloned()
    })
    .map(Some)
}

impl Found {
    fn mark(&self) -> Mark {
        Mark {
            queued: self.queue.len(),
            warned: self.warnings.len(),
            duplicated: self.inv.duplicates.len(),
        }
    }

    /// Takes back what the build of `owner` recorded since `mark`.
    fn take_back(&mut self, owner: &Arc<ObjectId>, mark: Mark) {
        Arc::make_mut(&mut self.inv.objects).retain(|_, entry| !Arc::ptr_eq(&entry.owner, owner));
        self.inv
            .owners
            .retain(|_, o| o.parent.as_ref() != Some(&**owner));
        self.inv.duplicates.truncate(mark.duplicated);
        self.sources.retain(|_, (o, _)| !Arc::ptr_eq(o, owner));
        self.queue.truncate(mark.queued);
        self.warnings.truncate(mark.warned);
    }

    /// Marks `owner` unbuilt for the reason `w` gives: nothing is judged deleted from it.
    fn unbuilt(&mut self, owner: &ObjectId, w: Warning) {
        if let Some(o) = self.inv.owners.get_mut(owner) {
            o.built = false;
            o.unmodelled = vec![describe(&w)];
        }
        self.warnings.push(w);
    }

    /// Marks `owner`, written in `path`, as one whose build fails with `e`, `certain` when
    /// Flux's surely fails too (`Owner::surely_fails`).
    fn fail(&mut self, owner: &ObjectId, path: String, e: String, certain: bool) {
        let w = build_failure(path, owner, &e);
        if let Some(o) = self.inv.owners.get_mut(owner) {
            o.build_error = Some(e);
            o.surely_fails = certain;
        }
        self.unbuilt(owner, w);
    }

    /// What the build of `owner` could not see (`builder`'s warnings for it, and those since
    /// `mark`) makes its inventory partial.
    fn unseen(&mut self, owner: &ObjectId, builder: &[Warning], mark: Mark) {
        let unseen: Vec<&Warning> = builder
            .iter()
            .chain(&self.warnings[mark.warned..])
            .filter(|w| w.feature != TWO_OWNERS && w.feature != IN_CLUSTER)
            .collect();
        if !unseen.is_empty() {
            if let Some(o) = self.inv.owners.get_mut(owner) {
                o.unmodelled = unseen.iter().map(|w| describe(w)).collect();
            }
        }
    }
}

/// The file of the repository that writes object `id` (a ConfigMap or Secret, `writes`)
/// though no build applies it.
fn written_outside(tree: &FileTree, id: &ObjectId) -> Option<String> {
    tree.manifests()
        .find(|(file, text)| writes(&written_sources(file, text), id))
        .map(|(file, _)| file.to_string())
}

/// Whether sources `written` (`written_sources`) hold object `id`; one without a namespace
/// counts, as `kubectl apply -n` would place it.
fn writes(written: &[(String, String, Option<String>)], id: &ObjectId) -> bool {
    written.iter().any(|(kind, name, namespace)| {
        *kind == id.kind
            && *name == id.name
            && namespace.as_ref().is_none_or(|ns| *ns == id.namespace)
    })
}

/// The `v1` ConfigMaps and Secrets file `file` writes (kind, name and namespace if it has
/// one), read once per text (`PerText`): a history asks of each revision's manifests.
fn written_sources(file: &str, text: &Text) -> Arc<Vec<(String, String, Option<String>)>> {
    static WRITTEN: PerText<Vec<(String, String, Option<String>)>> = PerText::new();
    WRITTEN.get(text, || {
        let has = |word: &str| memchr::memmem::find(text.as_bytes(), word.as_bytes()).is_some();
        if !has("ConfigMap") && !has("Secret") {
            return Vec::new();
        }
        crate::yaml::parse_all(file, text)
            .unwrap_or_default()
            .iter()
            .filter_map(|doc| {
                let field = |p: &str| doc.at_pointer(p).and_then(Value::as_str);
                let kind = field("/kind").filter(|k| matches!(*k, "ConfigMap" | "Secret"))?;
                (field("/apiVersion") == Some("v1")).then_some(())?;
                Some((
                    kind.to_string(),
                    field("/metadata/name")?.to_string(),
                    field("/metadata/namespace").map(String::from),
                ))
            })
            .collect()
    })
}

fn build_failure(path: String, owner: &ObjectId, e: &str) -> Warning {
    Warning {
        path,
        feature: BUILD_FAILURE.into(),
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
pub fn owners(tree: &FileTree, env_path: &str) -> std::result::Result<Owners, FluxBuildError> {
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
        substitute::variables(&root.object, &root.id.namespace, None, &mut |_| {
            Some(Source::Unknown {
                why: "not read".into(),
                from: None,
                keys: None,
                agreed: Default::default(),
            })
        })
        .unwrap_or_default()
    });
    let artifact = crate::flux::source::artifact(tree, &root.file, &root.source());
    let mut builder = Builder::owners_only(&artifact).keeping(facts::KEEP);
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
        let lives_in = root.applies_to.clone();
        if let Some(o) =
            Owner::from_value(&r.value, Some(root.id.clone()), lives_in, &r.file, r.index)
        {
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
    /// Its variables, when it has `postBuild`, with their digest (`Variables::digest`).
    vars: Option<(Variables, [u8; 32])>,
    /// Why Flux's build of it fails, if it does (a string substitution cannot parse).
    failure: Option<String>,
    /// The variables its objects need that nothing sets: Flux's strict substitution fails
    /// the build on them. Its objects are kept (the lints read them), but it is not built.
    undefined: BTreeSet<String>,
    /// What its entries keep of their objects.
    keep: Keep<'a>,
    /// The cluster they are applied to (`Owner::applies_to`).
    cluster: Option<Cluster>,
    /// The file of the object being recorded: the objects of a file come together, and
    /// share its path.
    file: Arc<str>,
    /// Whether it read a source of an earlier pass (`Found::served`).
    reads_served: bool,
}

/// Records object `r` of the build of `building`: its variables are substituted, then a Flux
/// Kustomization becomes an owner to build next, any other object an entry of the inventory
/// unless an earlier owner has it already; a ConfigMap or Secret is a `substituteFrom`
/// source for the owners that read it. `shared` holds its whole value when the build is
/// remembered (see `Entry::new`).
fn record(
    found: &mut Found,
    building: &mut Building,
    r: Cow<'_, Resource>,
    shared: Option<&Shared>,
) {
    if *building.file != *r.file {
        building.file = Arc::from(r.file.as_str());
    }
    if building.reads_served
        && !found.unsure
        && Shared::may_change(shared, &r, substitute::may_change)
        && may_be_source_or_owner(&r.value)
    {
        found.unsure = true;
    }
    let owner = building.owner;
    // The variables it needs as written (the lints read them), before they are substituted.
    let facts = building
        .vars
        .is_some()
        .then(|| facts::of_shared(shared, &r, true));
    let written = facts.as_ref().map(|f| f.variables.as_slice());
    let rewrite;
    let mut r = r;
    let (r, shared, unknown) = match building.substitute(&mut r, shared, written) {
        Substituted::Here(unknown) => (r, shared, unknown),
        Substituted::Kept(w) => {
            rewrite = w;
            let unknown = rewrite
                .outcome
                .downcast_ref::<BTreeSet<String>>()
                .cloned()
                .unwrap_or_default();
            (
                Cow::Borrowed(&rewrite.resource),
                Some(&rewrite.cell),
                unknown,
            )
        }
        Substituted::Failed => return,
    };
    let Some(mut id) = Shared::id(shared, &r) else {
        found.warnings.push(Warning {
            path: r.file.clone(),
            feature: "unnamed object".into(),
            message: format!("document {} has no apiVersion, kind or name", r.index + 1),
        });
        return;
    };
    id.cluster.clone_from(&building.cluster);
    if !unknown.is_empty() {
        let vars = building
            .vars
            .as_ref()
            .map(|(v, _)| v.unknown_sources())
            .unwrap_or_default();
        found.warnings.push(Warning {
            path: r.file.clone(),
            feature: "postBuild substitution".into(),
            message: format!(
                "{id}: {} in its name or namespace may come from {}, which cannot be read from the repository",
                dollars(&unknown),
                vars.join(", ")
            ),
        });
    }
    if resource_set::is(&id) {
        found.sets.push(id.clone());
    }
    // `Kustomization::is`, read off the id made once for an object replayed builds hand on.
    if id.is(KUSTOMIZE_GROUP, "Kustomization") {
        found.add_owner(building, r, shared, written);
        return;
    }
    // The `substituteFrom` source it is, or makes in the cluster (the Secret, by its id): read
    // once for an object replayed builds hand on unchanged.
    let provides = || match Source::of(&id, &r.value) {
        Some(source) => Some((None, source)),
        None => Source::made_by(&id, &r.value).map(|(secret, source)| (Some(secret), source)),
    };
    let made;
    let provided = match Shared::derived(shared, &r, provides) {
        Some(kept) => kept.as_ref(),
        None => {
            made = provides();
            made.as_ref()
        }
    };
    if let Some((secret, source)) = provided {
        let at = secret.as_ref().unwrap_or(&id);
        match found.sources.get_mut(at) {
            None => {
                found
                    .sources
                    .insert(at.clone(), (owner.clone(), source.clone()));
            }
            // Another owner applies it too: what it holds is the one applied last.
            Some((first, was)) if !Arc::ptr_eq(first, owner) => {
                *was = was.either(source, || {
                    format!("applied by both {first} and {owner}, differently: the cluster holds the one applied last")
                });
            }
            Some(_) => {}
        }
    }
    found.add_entry(building, id, r, shared, written);
}

/// Whether object `v`, as built, is or may be made by substitution a `substituteFrom`
/// source, an object that makes one, or a Flux Kustomization: its kind is one of theirs, or
/// its `apiVersion` or `kind` has a variable.
fn may_be_source_or_owner(v: &Value) -> bool {
    let field = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("");
    let (api, kind) = (field("apiVersion"), field("kind"));
    crate::envsubst::may_change(api)
        || crate::envsubst::may_change(kind)
        || kind == "Kustomization"
        || substitute::SOURCE_KINDS.contains(&kind)
}

/// An object of a build after substitution (`Building::substitute`).
enum Substituted {
    /// Substituted in place (or left as it is), with what is left in its name or namespace
    /// that may come from a source that cannot be read.
    Here(BTreeSet<String>),
    /// Substituted as a replayed build's object was before with the same variables: that
    /// rewrite, shared (`Shared::rewritten`).
    Kept(Arc<Rewrite>),
    /// A string cannot be parsed: the failure is kept.
    Failed,
}

impl Building<'_> {
    /// Substitutes the variables of `r`, which needs `written` as written.
    fn substitute(
        &mut self,
        r: &mut Cow<'_, Resource>,
        shared: Option<&Shared>,
        written: Option<&[String]>,
    ) -> Substituted {
        if let (Some((vars, _)), Some(needed)) = (&self.vars, written) {
            if vars.runs {
                let unset = needed
                    .iter()
                    .filter(|v| matches!(vars.lookup(v), Lookup::Unset));
                self.undefined.extend(unset.cloned());
            }
        }
        // Only an object substitution may change is copied to be changed.
        let Some((vars, key)) = self
            .vars
            .as_ref()
            .filter(|_| Shared::may_change(shared, r, substitute::may_change))
        else {
            return Substituted::Here(BTreeSet::new());
        };
        let file = r.file.clone();
        let fail = |e: SubstituteError| format!("{file}: {e}");
        let mut failed = None;
        let kept = Shared::rewritten(shared, r, *key, |r| {
            let mut r = r.clone();
            match substitute::object(&mut r.value, vars) {
                Ok(out) => Some((r, out.in_identity())),
                Err(e) => {
                    failed = Some(fail(e));
                    None
                }
            }
        });
        let out = match kept {
            Some(Some(w)) => return Substituted::Kept(w),
            Some(None) => Err(failed.unwrap_or_default()),
            None => substitute::object(&mut r.to_mut().value, vars).map_err(fail),
        };
        match out {
            Ok(out) => Substituted::Here(out.in_identity()),
            Err(e) => {
                self.failure.get_or_insert(e);
                Substituted::Failed
            }
        }
    }
}

impl Found {
    /// The Flux Kustomization `r` that the owner of `building` applies, queued to be built
    /// unless it is already; `written` the variables it needs as written.
    fn add_owner(
        &mut self,
        building: &Building,
        r: Cow<'_, Resource>,
        shared: Option<&Shared>,
        written: Option<&[String]>,
    ) {
        let (owner, lives_in) = (building.owner, &building.cluster);
        let declared = || {
            let parent = Some((**owner).clone());
            Owner::from_value(&r.value, parent, lives_in.clone(), &r.file, r.index)
        };
        // The Kustomization an object of a replayed build declares is read once, for the
        // owner that first built it, into the cluster it was applied to then (a replayed
        // build's spec does not hold its owner's `spec.kubeConfig`).
        let child = Shared::derived(shared, &r, || (owner.clone(), declared()))
            .filter(|(first, child)| {
                first == owner && child.as_ref().is_none_or(|c| c.id.cluster == *lives_in)
            })
            .map_or_else(declared, |(_, child)| child.clone());
        if let Some(mut child) = child {
            child.variables = written.map(<[String]>::to_vec).unwrap_or_default();
            if !self.inv.owners.contains_key(&child.id) {
                self.queue.push_back(child.id.clone());
                self.inv.owners.insert(child.id.clone(), child);
            }
        }
    }

    /// Object `id` (`r`) of the build of `building`, an entry of the inventory unless an
    /// earlier owner has it; a duplicate when that is another owner.
    fn add_entry(
        &mut self,
        building: &Building,
        id: ObjectId,
        r: Cow<'_, Resource>,
        shared: Option<&Shared>,
        written: Option<&[String]>,
    ) {
        let (owner, file, keep) = (building.owner, &building.file, building.keep);
        // Only an object that becomes an entry gets a print.
        let prints = &mut self.inv.prints;
        let mut print = |r: &Resource| (keep == Keep::Prints).then(|| prints.add(&r.value));
        match Arc::make_mut(&mut self.inv.objects).entry(id) {
            btree_map::Entry::Occupied(e) if e.get().owner != *owner => {
                let (id, first) = (e.key().clone(), &e.get().owner);
                self.warnings.push(Warning {
                    path: r.file.clone(),
                    feature: TWO_OWNERS.into(),
                    message: format!(
                        "{id} is applied by both {first} and {owner}; Flux counts it as {first}'s"
                    ),
                });
                let print = print(&r);
                let mut entry = Entry::new(owner, file, written, &id, r, shared, keep);
                entry.print = print;
                self.inv.duplicates.push((id, entry));
            }
            btree_map::Entry::Occupied(_) => {}
            btree_map::Entry::Vacant(v) => {
                let print = print(&r);
                let mut entry = Entry::new(owner, file, written, v.key(), r, shared, keep);
                entry.print = print;
                v.insert(entry);
            }
        }
    }
}

/// The warning feature of an object two owners apply: Flux's behaviour is known (see
/// `Inventory::duplicates`), so it leaves nothing unseen.
const TWO_OWNERS: &str = "two owners";

/// The warning feature of a Flux Kustomization whose build fails as Flux's does: Flux
/// applies and prunes nothing of it.
pub const BUILD_FAILURE: &str = "build failure";

/// A `substituteFrom` source in no build: a note, not a part of the build fluxwave cannot
/// see (what it may set is, where an object reads it).
const IN_CLUSTER: &str = "substituteFrom in the cluster";

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

/// What building `owner` (of `env`) asks of `tree`, a `recording` tree: the files whose
/// change may change what it applies (see `Footprint`). Its objects are not kept. The file
/// its own object is written in is not counted unless the build reads it: what of it counts
/// is the object (`Owner::object`), which the caller compares, not its neighbours in the
/// file.
pub fn footprint(
    tree: &FileTree,
    env_path: &str,
    owner: &Owner,
    loads: Option<Arc<Loads>>,
) -> Footprint {
    crate::tally::add(&crate::tally::FOOTPRINTS);
    tree.take_footprint();
    let mut builder = Builder::owners_only(tree)
        .keeping(facts::KEEP)
        .loading(loads);
    let what = if owner.file.is_empty() {
        env_path
    } else {
        owner.file.as_str()
    };
    let _ = builder.build_owner(&owner.path, &owner.flux_spec(what.to_string()), &mut |_| {});
    tree.take_footprint()
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// An environment a revision does not reach keeps its builds, moved to that revision's
    /// tree (`Remembered::moved_to`): the next revision is compared with it, not with the
    /// one the builds were made over, whose differences would only grow.
    #[test]
    fn builds_a_revision_does_not_reach_are_moved_to_its_tree() {
        let ks = "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: web, namespace: flux-system}\nspec:\n  path: ./apps\n  prune: true\n  sourceRef: {kind: GitRepository, name: flux-system}\n";
        let a = FileTree::from_files([
            ("clusters/dev/kustomization.yaml", "resources: [web.yaml]\n"),
            ("clusters/dev/web.yaml", ks),
            (
                "apps/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, namespace: apps}\n",
            ),
            ("README.md", "one cluster\n"),
        ]);
        let env = Environment::configured(&a, "dev", "clusters/dev", "");
        let (inv, mut memory) = build_remembering(&a, &env, Memory::default());
        let b = a.with_file("README.md", "one cluster, edited\n");
        assert!(unchanged(&b, &env, &mut memory, &inv));
        let changes = memory
            .repository
            .remembered
            .changes_to(&b.artifact_after("", None, None))
            .unwrap();
        assert!(changes.is_empty(), "{changes:?}");
    }

    /// A build made again because one of its files changed hands on the objects it builds
    /// as before with what was derived from them before (`Remembered::stale`): the release
    /// of the file that stayed is the same object, shared, and the Kustomization it declares
    /// the same owner; the edited release is a new object.
    #[test]
    fn a_build_made_again_keeps_what_it_builds_as_before() {
        let ks = |name: &str, path: &str| {
            format!("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {{name: {name}, namespace: flux-system}}\nspec:\n  path: ./{path}\n  prune: true\n  sourceRef: {{kind: GitRepository, name: flux-system}}\n")
        };
        let hr = |name: &str, chart: &str| {
            format!("apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {{name: {name}, namespace: apps}}\nspec:\n  chart: {{spec: {{chart: {chart}, sourceRef: {{kind: HelmRepository, name: charts}}}}}}\n")
        };
        let a = FileTree::from_files([
            (
                "clusters/dev/kustomization.yaml",
                "resources: [apps.yaml]\n",
            ),
            ("clusters/dev/apps.yaml", ks("apps", "apps").leak()),
            ("apps/a.yaml", hr("a", "web").leak()),
            ("apps/b.yaml", hr("b", "web").leak()),
            ("apps/c.yaml", ks("c", "c").leak()),
            (
                "c/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: apps}\n",
            ),
        ]);
        let env = Environment::configured(&a, "dev", "clusters/dev", "");
        let (old, memory) = build_remembering(&a, &env, Memory::default());
        let b = a.with_file("apps/b.yaml", &hr("b", "web2"));
        let (new, _) = build_remembering(&b, &env, memory);
        let whole = |inv: &Inventory, name: &str| {
            let id = ObjectId {
                group: HELM_GROUP.into(),
                kind: "HelmRelease".into(),
                namespace: "apps".into(),
                name: name.into(),
                cluster: None,
            };
            inv.objects[&id].whole.clone().unwrap()
        };
        assert!(Arc::ptr_eq(&whole(&old, "a"), &whole(&new, "a")));
        assert!(!Arc::ptr_eq(&whole(&old, "b"), &whole(&new, "b")));
        assert_eq!(
            whole(&new, "b").pointer("/spec/chart/spec/chart"),
            Some(&Value::from("web2"))
        );
        // `c`, declared in a file that stayed, is the same owner and builds the same.
        let c = |inv: &Inventory| {
            inv.owners
                .iter()
                .find(|(id, _)| id.name == "c")
                .map(|(_, o)| o.clone())
                .unwrap()
        };
        assert_eq!(c(&old).object, c(&new).object);
        assert_eq!(new.objects.len(), old.objects.len());
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
