//! Cutover: every object Flux would delete on the way from one revision to another. Both
//! revisions are read from git into memory, every environment is built natively as Flux
//! builds it (`inventory`), and the deletions are set differences over the two inventories
//! (`ObjectId -> owner`) judged by the owners' specs (`rules`), never by file names. A
//! feature the builder does not model is reported as a warning, never skipped in silence.

pub mod rules;
pub mod runbook;

use std::collections::BTreeSet;
use std::path::Path;

use serde::Serialize;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::flux::discover::{self, Environment};
use crate::flux::inventory::{self, Inventory, Keep, Owner};
pub use crate::kustomize::object::ObjectId;
use crate::kustomize::Remembered;
use crate::tree::{Blobs, FileTree, Footprint, GitObjects};
pub use rules::Deletion;

#[derive(Debug, Clone, Serialize)]
pub struct EnvWarning {
    pub environment: String,
    pub path: String,
    pub feature: String,
    pub message: String,
}

/// A Flux Kustomization (or a whole environment) that the change touches and whose objects
/// fluxwave cannot wholly see: what Flux deletes there is unknown.
#[derive(Debug, Clone, Serialize)]
pub struct Incomplete {
    pub environment: String,
    /// `namespace/name` of the Flux Kustomization; empty for the environment as a whole.
    pub kustomization: String,
    /// Where it is written (the entry folder for an environment or an assumed root).
    pub file: String,
    /// Each reason, one line each.
    pub why: Vec<String>,
}

impl Incomplete {
    /// What is partial, in prose: `Kustomization flux-system/apps`, or `the environment`.
    pub fn what(&self) -> String {
        if self.kustomization.is_empty() {
            "the environment".to_string()
        } else {
            format!("Kustomization {}", self.kustomization)
        }
    }
}

/// The analysis of one change.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub from: String,
    pub to: String,
    pub environments: Vec<String>,
    /// Data loss first, then by environment, owner and object.
    pub deletions: Vec<Deletion>,
    /// What the change touches that could not be modelled: the verdict is "incomplete".
    pub incomplete: Vec<Incomplete>,
    pub warnings: Vec<EnvWarning>,
    pub runbook: Vec<runbook::Section>,
}

/// What a report says of its change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Everything the change touches was seen, and Flux deletes nothing.
    Safe,
    /// Everything was seen, and Flux deletes what `deletions` lists.
    Deletes,
    /// Something the change touches could not be seen (`incomplete`): Flux may delete more
    /// than `deletions` lists.
    Incomplete,
}

impl Report {
    /// Who deletes the objects found: Flux, Helm (inside a HelmRelease that stays), or both.
    pub fn deleters(&self) -> &'static str {
        let helm = self.deletions.iter().filter(|d| d.rule.is_helm()).count();
        match helm {
            0 => "Flux",
            n if n == self.deletions.len() => "Helm",
            _ => "Flux and Helm",
        }
    }

    pub fn verdict(&self) -> Verdict {
        if !self.incomplete.is_empty() {
            Verdict::Incomplete
        } else if self.deletions.is_empty() {
            Verdict::Safe
        } else {
            Verdict::Deletes
        }
    }

    pub fn is_safe(&self) -> bool {
        self.verdict() == Verdict::Safe
    }
}

/// Compares revision `from` with `to` (the working tree when `None`) of the repository at
/// `root`, in the environments `overrides` names (`--env NAME=PATH`) or else those of the
/// fluxwave.yaml in force (the newer revision's, else the working tree's, else the older
/// revision's) or discovered in either revision (`flux::discover`). `Err` with no
/// environment found at all.
pub fn analyse(
    root: &Path,
    from: &str,
    to: Option<&str>,
    overrides: &[(String, String)],
) -> Result<Report> {
    let inspect = |_: &Inventory, _: &Inventory| ();
    let again = |_: &Inventory, _: &Inventory| false;
    Ok(analyse_with(root, from, to, overrides, Keep::Facts, inspect, again)?.report)
}

/// A change analysed (`analyse_with`): cutover's report, what was found in each
/// environment's builds, and the two revisions when they were kept.
pub struct Analysed<T> {
    pub report: Report,
    /// In environment order, each with its environment.
    pub found: Vec<(Environment, T)>,
    /// The older revision and the newer, when they were asked for.
    pub trees: Option<(FileTree, FileTree)>,
}

/// `analyse`, handing each environment's two builds (older, newer), keeping of every object
/// what `kept` says (`inventory::build_as`), to `inspect` before they are judged: what a
/// command that shows the objects themselves needs, built once with the verdicts. The
/// revisions are kept when `again` says of some environment's builds that what `inspect`
/// finds in them needs them (to build the environment again), else freed before `inspect`
/// runs.
pub fn analyse_with<T>(
    root: &Path,
    from: &str,
    to: Option<&str>,
    overrides: &[(String, String)],
    kept: Keep,
    inspect: impl FnMut(&Inventory, &Inventory) -> T,
    again: impl Fn(&Inventory, &Inventory) -> bool,
) -> Result<Analysed<T>> {
    let (old, new) = revisions(root, from, to)?;
    let config = config_in_force(root, &old, &new)?;
    let change = change_of(from, to);
    let mut analysed = analyse_trees(
        (old, new),
        config.as_ref(),
        overrides,
        &change,
        kept,
        inspect,
        again,
    )?;
    analysed.report.from = from.to_string();
    analysed.report.to = to.unwrap_or("the working tree").to_string();
    Ok(analysed)
}

/// `analyse_with` of two trees (older, newer), in the environments of `config` or else those
/// discovered in them.
pub fn analyse_trees<T>(
    (old, new): (FileTree, FileTree),
    config: Option<&Config>,
    overrides: &[(String, String)],
    change: &str,
    kept: Keep,
    mut inspect: impl FnMut(&Inventory, &Inventory) -> T,
    again: impl Fn(&Inventory, &Inventory) -> bool,
) -> Result<Analysed<T>> {
    let mut built = Builds::of(&old, &new, config, overrides, kept)?;
    // Unless asked for, the texts are freed before anything is looked for in the builds: at
    // 100,000 services they are 270 MB, held beside both builds and what is found.
    let trees = built
        .pairs
        .iter()
        .any(|(o, n)| again(o, n))
        .then_some((old, new));
    let found: Vec<T> = built.pairs.iter().map(|(o, n)| inspect(o, n)).collect();
    let envs = std::mem::take(&mut built.envs);
    Ok(Analysed {
        report: built.judge(change),
        found: envs.into_iter().zip(found).collect(),
        trees,
    })
}

/// Revision `from` and `to` (the working tree when `None`) of the repository at `root`; the
/// blobs both hold are read from git once.
fn revisions(root: &Path, from: &str, to: Option<&str>) -> Result<(FileTree, FileTree)> {
    let mut blobs = Blobs::default();
    let old = FileTree::from_git_sharing(root, from, &mut blobs)?;
    let new = match to {
        Some(rev) => FileTree::from_git_sharing(root, rev, &mut blobs)?,
        None => FileTree::from_worktree(root)?,
    };
    Ok((old, new))
}

/// A change's name in the runbook: `HEAD~1 -> HEAD`.
fn change_of(from: &str, to: Option<&str>) -> String {
    format!("{from} -> {}", to.unwrap_or("the working tree"))
}

/// The fluxwave.yaml in force for a change from `old` to `new`: the first that has the file
/// (the newer revision, the working tree, the older revision). One that has it and cannot
/// read it is an error, as in the working tree, never a fall back to the next or to the
/// defaults.
fn config_in_force(root: &Path, old: &FileTree, new: &FileTree) -> Result<Option<Config>> {
    Ok(match Config::from_tree(new)? {
        Some(config) => Some(config),
        None => match Config::load_optional(root)? {
            Some(config) => Some(config),
            None => Config::from_tree(old)?,
        },
    })
}

/// `analyse` of every consecutive pair of `steps` (revisions, oldest first), in order: each
/// report is the one `analyse(root, steps[i], Some(steps[i + 1]), overrides)` gives. Each
/// revision is read once, and the newer revision's builds of a step are the older's of the
/// next (an environment found the same way in both is not built again).
pub fn analyse_steps(
    root: &Path,
    steps: &[String],
    overrides: &[(String, String)],
) -> Result<Vec<Report>> {
    let Some(first) = steps.first() else {
        return Ok(Vec::new());
    };
    let mut blobs = Blobs::default();
    let mut objects = GitObjects::open(root)?;
    let mut old = FileTree::from_git_reading(root, first, &mut blobs, Some(&mut objects))?;
    let mut older: Vec<Kept> = Vec::new();
    let mut out = Vec::with_capacity(steps.len().saturating_sub(1));
    // What a step is done with is freed while the next is read and built (one step's
    // objects more held at once, the time to free them taken off the history's).
    let mut freeing: Vec<crate::par::Freeing> = Vec::new();
    for pair in steps.windows(2) {
        let new = FileTree::from_git_reading(root, &pair[1], &mut blobs, Some(&mut objects))?;
        let config = config_in_force(root, &old, &new)?;
        let (built, newer) = Builds::of_reusing(
            &old,
            &new,
            config.as_ref(),
            overrides,
            Keep::Facts,
            std::mem::take(&mut older),
            true,
        )?;
        let (mut report, built_new, done) =
            built.judge_keeping(&format!("{} -> {}", pair[0], pair[1]), true);
        // The step before's objects have been freed while this one was built.
        drop(std::mem::replace(&mut freeing, done));
        report.from = pair[0].clone();
        report.to = pair[1].clone();
        out.push(report);
        older = newer
            .into_iter()
            .zip(built_new)
            .map(|((environment, remembered), inventory)| Kept {
                environment,
                inventory,
                remembered,
            })
            .collect();
        old = new;
    }
    Ok(out)
}

/// The comparison of two trees (what `analyse` does once both are read), in the
/// environments of `config` or else those discovered in them.
pub fn compare(
    old: &FileTree,
    new: &FileTree,
    config: Option<&Config>,
    change: &str,
) -> Result<Report> {
    Ok(Builds::of(old, new, config, &[], Keep::Facts)?.judge(change))
}

/// Sorts deletions by data loss first, then by environment, owner and object. Each
/// environment's deletions come in object order (`rules::deletions`), so a stable sort by the
/// rest of the key keeps that order without comparing objects, which at 100,000 services
/// are most of the comparisons. Their positions are sorted, then the deletions are moved
/// into place: no second list of them.
fn sort_deletions(deletions: &mut [Deletion]) {
    let mut order: Vec<usize> = (0..deletions.len()).collect();
    order.sort_by(|&a, &b| {
        let (a, b) = (&deletions[a], &deletions[b]);
        (!a.stateful, &a.environment, &a.owner_id).cmp(&(!b.stateful, &b.environment, &b.owner_id))
    });
    permute(deletions, &mut order);
}

/// Rearranges `items` so that item `i` is the one that was at `order[i]` (`order` is a
/// permutation; it is used up), by swaps along its cycles.
fn permute<T>(items: &mut [T], order: &mut [usize]) {
    for start in 0..items.len() {
        let mut at = start;
        loop {
            let from = order[at];
            order[at] = at;
            if from == start || from == at {
                break;
            }
            items.swap(at, from);
            at = from;
        }
    }
}

/// The HelmReleases whose render inputs change between the builds (their values, or the
/// chart version their source names) while a side of them is not rendered: incomplete when
/// rendering failed, a warning when no helm is found (Helm's own deletions are then not
/// judged, as with `--no-helm`, which leaves the warning out too):
/// what Helm's upgrade deletes inside them is not seen (only with rendering on; off, Helm's
/// own deletions are not judged at all, as the documentation says).
fn unrendered_upgrades(
    env: &str,
    old: &Inventory,
    new: &Inventory,
) -> (Vec<Incomplete>, Vec<EnvWarning>) {
    use crate::flux::release::Render;
    let (mut out, mut unjudged) = (Vec::new(), Vec::new());
    // Only HelmReleases carry a release: the others are passed over without a lookup.
    for (id, e) in new.objects.iter().filter(|(_, e)| e.release.is_some()) {
        let Some(was) = old.objects.get(id) else {
            continue;
        };
        let (Some(before), Some(after)) = (was.release.as_deref(), e.release.as_deref()) else {
            continue;
        };
        // What the render depends on is the same: the same release is installed.
        if before.inputs == after.inputs {
            continue;
        }
        let Some(why) = before.why().or(after.why()) else {
            continue;
        };
        if matches!(before.render, Render::NoHelm) || matches!(after.render, Render::NoHelm) {
            unjudged.push(EnvWarning {
                environment: env.to_string(),
                path: e.file.to_string(),
                feature: "HelmRelease not rendered".into(),
                message: format!(
                    "{id} changes, and no helm is found: what Helm's upgrade deletes inside the release is not judged (install Helm 3, or name it with --helm; --no-helm leaves it unjudged without this warning)"
                ),
            });
            continue;
        }
        out.push(Incomplete {
            environment: env.to_string(),
            kustomization: format!("{}/{}", e.owner.namespace, e.owner.name),
            file: e.file.to_string(),
            why: vec![format!(
                "{id} changes, and its chart is not rendered ({why}): what Helm's upgrade deletes inside the release is not seen"
            )],
        });
    }
    (out, unjudged)
}

/// An environment's build of one revision of a history, kept for the next step.
struct Kept {
    environment: Environment,
    inventory: Inventory,
    remembered: Remembered,
}

/// Every environment of both revisions, built.
struct Builds {
    from: String,
    to: String,
    environments: Vec<String>,
    pairs: Vec<(Inventory, Inventory)>,
    /// The environment of each pair.
    envs: Vec<Environment>,
    incomplete: Vec<Incomplete>,
    warnings: Vec<EnvWarning>,
}

impl Builds {
    fn of(
        old: &FileTree,
        new: &FileTree,
        config: Option<&Config>,
        overrides: &[(String, String)],
        kept: Keep,
    ) -> Result<Builds> {
        Ok(Builds::of_reusing(old, new, config, overrides, kept, Vec::new(), false)?.0)
    }

    /// `of`, for a step of a history when `keep` (with `kept` the facts): the builds of `old` are
    /// taken from `older` where an environment is the same, and for each environment of
    /// `pairs` in order the builds of its Flux Kustomizations in `new` are given back
    /// remembered: the next step replays those whose files did not change
    /// (`inventory::build_remembering`).
    fn of_reusing(
        old: &FileTree,
        new: &FileTree,
        config: Option<&Config>,
        overrides: &[(String, String)],
        kept: Keep,
        mut older: Vec<Kept>,
        keep: bool,
    ) -> Result<(Builds, Vec<(Environment, Remembered)>)> {
        let envs = discover::environments(&[new, old], config, overrides);
        if envs.is_empty() {
            return Err(Error::Usage(format!(
                "no Flux environment found in {} or {}; looked for {}. Name one with `--env NAME=PATH` or list them under clusters.environments in fluxwave.yaml",
                new.label,
                old.label,
                discover::WHERE_LOOKED
            )));
        }
        let mut pairs: Vec<(Inventory, Inventory)> = Vec::new();
        let mut built = Vec::new();
        let mut incomplete = Vec::new();
        let mut warnings = Vec::new();
        let mut newer = Vec::new();
        let changed = std::sync::OnceLock::new();
        for env in &envs {
            let name = &env.name;
            let (in_old, in_new) = (old.is_dir(&env.path), new.is_dir(&env.path));
            if in_old && !in_new {
                let why = format!("its entry `{}` is gone in {}: a cluster still synced to it fails to build, and Flux deletes nothing until it is pointed elsewhere; what it deletes then is unknown", env.path, new.label);
                warnings.push(EnvWarning {
                    environment: name.clone(),
                    path: env.path.clone(),
                    feature: "environment removed".into(),
                    message: why.clone(),
                });
                incomplete.push(Incomplete {
                    environment: name.clone(),
                    kustomization: String::new(),
                    file: env.path.clone(),
                    why: vec![why],
                });
                continue;
            }
            if !in_new {
                continue;
            }
            // Both revisions are built side by side; an entry the older one lacks applied
            // nothing there.
            let build = |tree: &FileTree| {
                let mut inv = inventory::build_as(tree, env, kept);
                crate::helm::render(&mut inv, tree);
                inv
            };
            let remembering = |tree: &FileTree, before: Remembered| {
                let (mut inv, now) = inventory::build_remembering(tree, env, before);
                crate::helm::render(&mut inv, tree);
                (inv, now)
            };
            let reused = older
                .iter()
                .position(|k| k.environment == *env)
                .map(|i| older.swap_remove(i));
            // A history's steps replay what the step before built; its first step replays
            // the older revision's builds in the newer.
            let (o, n, remembered) = if keep && kept == Keep::Facts {
                let (o, before) = match reused {
                    Some(k) if in_old => (k.inventory, k.remembered),
                    _ if in_old => remembering(old, Remembered::default()),
                    _ => (Inventory::default(), Remembered::default()),
                };
                let (n, now) = remembering(new, before);
                (o, n, now)
            } else {
                std::thread::scope(|s| {
                    let o = s.spawn(|| {
                        if in_old {
                            build(old)
                        } else {
                            Inventory::default()
                        }
                    });
                    let n = build(new);
                    let o = o.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
                    (o, n, Remembered::default())
                })
            };
            if keep {
                newer.push((env.clone(), remembered));
            }
            incomplete.extend(unseen(old, new, &o, &n, || {
                changed.get_or_init(|| old.changed_paths(new)).as_slice()
            }));
            let (unseen, unjudged) = unrendered_upgrades(name, &o, &n);
            incomplete.extend(unseen);
            warnings.extend(unjudged);
            pairs.push((o, n));
            built.push(env.clone());
        }
        let builds = Builds {
            from: old.label.clone(),
            to: new.label.clone(),
            environments: envs.into_iter().map(|e| e.name).collect(),
            pairs,
            envs: built,
            incomplete,
            warnings,
        };
        Ok((builds, newer))
    }

    /// What Flux deletes between the two builds, and the runbook.
    fn judge(self, change: &str) -> Report {
        self.judge_keeping(change, false).0
    }

    /// `judge`, giving back the newer build of each environment when `keep` (the older
    /// builds of a history's next step), and the objects of the builds it is done with, being
    /// freed on other threads: dropped, it waits for them.
    fn judge_keeping(
        self,
        change: &str,
        keep: bool,
    ) -> (Report, Vec<Inventory>, Vec<crate::par::Freeing>) {
        let Builds {
            from,
            to,
            environments,
            mut pairs,
            envs: _,
            incomplete,
            mut warnings,
        } = self;
        // The objects of an environment are freed on another core while the rest is judged.
        let mut freeing = Vec::new();
        let mut deletions = Vec::new();
        let mut removed = Vec::new();
        for (o, n) in &mut pairs {
            let found = rules::deletions(o, n);
            if deletions.is_empty() {
                deletions = found;
            } else {
                deletions.extend(found);
            }
            removed.extend(rules::removed_collecting_owners(o, n).into_iter().cloned());
            // The runbook reads the owners only.
            let objects = [Some(&mut *o), (!keep).then_some(&mut *n)].map(|inv| {
                inv.map(|inv| {
                    (
                        std::mem::take(&mut inv.objects),
                        std::mem::take(&mut inv.duplicates),
                    )
                })
            });
            freeing.push(crate::par::Freeing::start(objects));
            for w in o.warnings.iter().chain(&n.warnings) {
                let w = EnvWarning {
                    environment: o.env.clone(),
                    path: w.path.clone(),
                    feature: w.feature.clone(),
                    message: w.message.clone(),
                };
                if !warnings
                    .iter()
                    .any(|x: &EnvWarning| x.path == w.path && x.message == w.message)
                {
                    warnings.push(w);
                }
            }
        }
        sort_deletions(&mut deletions);
        warnings.sort_by(|a, b| {
            (&a.environment, &a.path, &a.message).cmp(&(&b.environment, &b.path, &b.message))
        });
        removed.sort_by(|a, b| a.id.cmp(&b.id));
        removed.dedup_by(|a, b| a.id == b.id);
        let runbook = runbook::write(&deletions, &pairs, &removed, change);
        let report = Report {
            from,
            to,
            environments,
            deletions,
            incomplete,
            warnings,
            runbook,
        };
        let newer = if keep {
            pairs.into_iter().map(|(_, n)| n).collect()
        } else {
            Vec::new()
        };
        (report, newer, freeing)
    }
}

/// Whether `o`'s build of this repository fails on its way through Flux Kustomizations
/// (a file it reads, `seen`, other than its own object's, declares one), so that the
/// Kustomizations it applies, and so where the rest of the repository is reconciled from, are
/// not known. When that holds in both revisions, the Kustomizations an earlier build of it
/// applied are still in the cluster and reconcile the newer revision (kustomize-controller
/// applies nothing of a failing build and prunes nothing, `KustomizationReconciler.reconcile`):
/// any change of the repository may reach them. Asked of an owner of this repository's
/// source that no ArtifactGenerator makes.
fn hides_what_it_applies(o: &Owner, tree: &FileTree, seen: &Footprint) -> bool {
    // Its own object's file declares itself.
    let declares = |file: &str| {
        file != o.file
            && tree
                .read(file)
                .is_some_and(|t| t.contains(crate::flux::KUSTOMIZE_GROUP))
    };
    !o.built
        && (seen.files.iter().any(|f| declares(f))
            || seen
                .folders
                .iter()
                .any(|d| tree.files_under(d).any(declares)))
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
///   Flux Kustomizations: when anything changes (`hides_what_it_applies`);
/// - and for every one when the root's own file changes (its source's `spec.ignore` decides
///   what each build of the artifact sees).
fn unseen<'a>(
    old_tree: &FileTree,
    new_tree: &FileTree,
    old: &Inventory,
    new: &Inventory,
    changed: impl FnOnce() -> &'a [String],
) -> Vec<Incomplete> {
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
    let recording = [old_tree.recording(), new_tree.recording()];
    // Both sides of an owner are read: a file the older build read may be gone in the newer.
    // Whether the change touches `o` of `inv` (`tree`, recording what a build reads, as
    // `recording`), and whether `o` hides what it applies (`hides_what_it_applies`).
    let touches = |o: &Owner, inv: &Inventory, tree: &FileTree, recording: &FileTree| {
        if !o.artifact_files.is_empty() {
            // Made by an ArtifactGenerator from these files of this repository.
            let touched = changed
                .iter()
                .any(|c| o.artifact_files.binary_search(c).is_ok());
            return (touched, false);
        }
        let root_source = inv
            .owners
            .values()
            .find(|r| r.parent.is_none())
            .map(Owner::source);
        let source = o.source();
        if o.parent.is_some() && root_source.as_ref() != Some(&source) {
            let touched = inv
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
            return (touched, false);
        }
        let seen = inventory::footprint(recording, &inv.env_path, o);
        (
            changed.iter().any(|c| seen.covers(c)),
            root_source.is_some() && hides_what_it_applies(o, tree, &seen),
        )
    };
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
        let sides = [old.owners.get(id), new.owners.get(id)];
        let touched = match sides {
            [Some(a), Some(b)] => {
                root_changed || a.object != b.object || a.reads != b.reads || {
                    let (touched, hides) = touches(a, old, old_tree, &recording[0]);
                    touched || {
                        let (touched, hides_too) = touches(b, new, new_tree, &recording[1]);
                        touched || (hides && hides_too && !changed.is_empty())
                    }
                }
            }
            // Added or removed by the change.
            _ => true,
        };
        let Some(o) = sides[1].or(sides[0]).filter(|_| touched) else {
            continue;
        };
        let mut why: Vec<String> = sides
            .iter()
            .flatten()
            .flat_map(|o| o.unmodelled.iter().cloned())
            .collect();
        why.sort();
        why.dedup();
        out.push(Incomplete {
            environment: new.env.clone(),
            kustomization: format!("{}/{}", id.namespace, id.name),
            file: if o.file.is_empty() {
                new.env_path.clone()
            } else {
                o.file.clone()
            },
            why,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::permute;

    #[test]
    fn a_permutation_moves_each_item_once_into_place() {
        let items = ["a", "b", "c", "d", "e", "f"];
        for order in [
            vec![0, 1, 2, 3, 4, 5],
            vec![5, 4, 3, 2, 1, 0],
            vec![2, 0, 1, 4, 5, 3],
            vec![1, 2, 3, 4, 5, 0],
            vec![0, 2, 1, 3, 5, 4],
        ] {
            let mut moved = items;
            permute(&mut moved, &mut order.clone());
            let expected: Vec<&str> = order.iter().map(|&i| items[i]).collect();
            assert_eq!(moved.to_vec(), expected, "{order:?}");
        }
    }
}
