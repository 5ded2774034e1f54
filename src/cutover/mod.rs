//! Cutover: every object Flux would delete on the way from one revision to another. Both
//! revisions are read from git into memory, every environment is built natively as Flux
//! builds it (`inventory`), and the deletions are set differences over the two inventories
//! (`ObjectId -> owner`) judged by the owners' specs (`rules`), never by file names. A
//! feature the builder does not model is reported as a warning, never skipped in silence.

mod helm;
pub mod rules;
pub mod runbook;
mod touched;

use std::path::Path;

use serde::Serialize;

use crate::config::{Accept, Config};
use crate::error::{Error, Result};
use crate::flux::discover::{self, Environment};
use crate::flux::inventory::{self, Inventory, Keep};
pub use crate::kustomize::object::ObjectId;
use crate::tree::{Blobs, FileTree, Footprint, History};
pub use rules::Deletion;
use touched::{unseen, Footprints};

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
    /// `namespace/name` of the Flux Kustomization (or ResourceSet, `kind`); empty for the
    /// environment as a whole.
    pub kustomization: String,
    /// `ResourceSet` for a Flux Operator ResourceSet; left out for a Kustomization.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    /// Where it is written (the entry folder for an environment or an assumed root).
    pub file: String,
    /// Each reason, one line each.
    pub why: Vec<String>,
    /// The kind of gap it is, when a repository may accept it by name (`cutover.accept`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gap: Option<Accept>,
}

impl Incomplete {
    /// The `kind` of an entry for owner `id`.
    pub fn kind_of(id: &ObjectId) -> Option<&'static str> {
        crate::flux::resource_set::is(id).then_some("ResourceSet")
    }

    /// What is partial, in prose: `Kustomization flux-system/apps`, or `the environment`.
    pub fn what(&self) -> String {
        if self.kustomization.is_empty() {
            "the environment".to_string()
        } else {
            format!(
                "{} {}",
                self.kind.unwrap_or("Kustomization"),
                self.kustomization
            )
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
    /// What the change touches that could not be modelled, of a kind the base revision's
    /// fluxwave.yaml accepts (`cutover.accept`): listed, and leaving the verdict alone.
    pub accepted: Vec<Incomplete>,
    pub warnings: Vec<EnvWarning>,
    pub runbook: Vec<runbook::Section>,
    /// What a history's step cost (`analyse_steps`); zero for any other report.
    #[serde(skip)]
    pub cost: Cost,
    /// Why no environment was found, when none was (a step of `cutover --each`): nothing
    /// was compared, and the verdict says so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_environment: Option<String>,
}

/// The work a history's step did beyond replaying the step before: the environments built
/// (an environment none of whose reads changed is the step before's), the Flux Kustomizations
/// built afresh, the footprints worked out and the manifests parsed (`crate::tally`). A step
/// that changes nothing a build reads does none of it; one that changes a file parses that
/// one; the test-only `FLUXWAVE_TEST_STEP_COUNTS` prints them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cost {
    pub environment_builds: usize,
    pub owner_builds: usize,
    pub footprints: usize,
    pub parses: usize,
}

impl Cost {
    /// The work counted since the last `take`.
    fn take() -> Cost {
        Cost {
            environment_builds: crate::tally::take(&crate::tally::ENVIRONMENT_BUILDS),
            owner_builds: crate::tally::take(&crate::tally::OWNER_BUILDS),
            footprints: crate::tally::take(&crate::tally::FOOTPRINTS),
            parses: crate::tally::take(&crate::tally::PARSES),
        }
    }
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
    /// No Flux environment was found in either revision: nothing was compared.
    #[serde(rename = "no-environment")]
    NoEnvironment,
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

    /// The report of a step where no environment is found (`why`).
    fn no_environment(from: &str, to: &str, why: String) -> Report {
        Report {
            from: from.to_string(),
            to: to.to_string(),
            environments: Vec::new(),
            deletions: Vec::new(),
            incomplete: Vec::new(),
            accepted: Vec::new(),
            warnings: Vec::new(),
            runbook: Vec::new(),
            cost: Cost::default(),
            no_environment: Some(why),
        }
    }

    pub fn verdict(&self) -> Verdict {
        if self.no_environment.is_some() {
            Verdict::NoEnvironment
        } else if !self.incomplete.is_empty() {
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
    let mut history = History::open(root)?;
    let mut old = history.read(first)?;
    let mut older: Vec<Kept> = Vec::new();
    // The roots written in `old`, found by the step before in its newer tree.
    let mut old_roots = None;
    let mut out = Vec::with_capacity(steps.len().saturating_sub(1));
    // What a step is done with is freed while the next is read and built (one step's
    // objects more held at once, the time to free them taken off the history's).
    let mut freeing: Vec<crate::par::Freeing> = Vec::new();
    Cost::take();
    for pair in steps.windows(2) {
        let new = history.read(&pair[1])?;
        let config = config_in_force(root, &old, &new)?;
        let mut roots = [None, old_roots.take()];
        let built = Builds::of_reusing(
            &old,
            &new,
            config.as_ref(),
            overrides,
            Keep::Facts,
            (std::mem::take(&mut older), &mut roots),
            true,
        );
        let [new_roots, _] = roots;
        old_roots = new_roots;
        // A step with no environment says so, and is not safe; the others are judged.
        let (built, newer) = match built {
            Err(Error::NoEnvironment(why)) => {
                out.push(Report::no_environment(&pair[0], &pair[1], why));
                old = new;
                continue;
            }
            other => other?,
        };
        let (mut report, built_new, done) =
            built.judge_keeping(&format!("{} -> {}", pair[0], pair[1]), true);
        // The step before's objects have been freed while this one was built.
        drop(std::mem::replace(&mut freeing, done));
        report.from = pair[0].clone();
        report.to = pair[1].clone();
        report.cost = Cost::take();
        out.push(report);
        older = newer
            .into_iter()
            .zip(built_new)
            .map(|(carried, inventory)| Kept { carried, inventory })
            .collect();
        old = new;
    }
    // No step has one: the range is bad input, as a single comparison's would be.
    if let Some(why) = out
        .iter()
        .map(|r| r.no_environment.as_ref())
        .collect::<Option<Vec<_>>>()
        .and_then(|w| w.first().copied())
    {
        return Err(Error::NoEnvironment(why.clone()));
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

/// The gaps the fluxwave.yaml of `base` (the older revision of a change: what was reviewed
/// and merged) accepts by name, `cutover.accept`; never the newer revision's or the working
/// tree's, so that a change cannot accept its own gap. A base whose file cannot be read
/// accepts nothing.
fn accepted_by(base: &FileTree) -> Vec<Accept> {
    match Config::from_tree(base) {
        Ok(Some(config)) => config.cutover_accept,
        Ok(None) | Err(_) => Vec::new(),
    }
}

/// An environment's build of one revision of a history, kept for the next step.
struct Kept {
    carried: Carried,
    inventory: Inventory,
}

/// What the builds of an environment in one revision of a history leave for the next step,
/// besides its inventory.
struct Carried {
    environment: Environment,
    remembered: inventory::Memory,
    /// The footprints of its partial owners over that revision (`touched::Footprints`).
    footprints: Footprints,
    /// What rendering its HelmReleases read of the revision (a chart in the repository).
    rendered: Footprint,
}

/// Every environment of both revisions, built.
struct Builds {
    from: String,
    to: String,
    environments: Vec<String>,
    pairs: Vec<(Inventory, Inventory)>,
    /// Whether the newer build of each pair is the older, taken whole (nothing the
    /// environment reads changed): it deletes nothing.
    unchanged: Vec<bool>,
    /// The environment of each pair.
    envs: Vec<Environment>,
    incomplete: Vec<Incomplete>,
    warnings: Vec<EnvWarning>,
    /// The gaps the older revision's fluxwave.yaml accepts (`cutover.accept`).
    accept: Vec<Accept>,
}

impl Builds {
    fn of(
        old: &FileTree,
        new: &FileTree,
        config: Option<&Config>,
        overrides: &[(String, String)],
        kept: Keep,
    ) -> Result<Builds> {
        let mut roots = [None, None];
        Ok(Builds::of_reusing(
            old,
            new,
            config,
            overrides,
            kept,
            (Vec::new(), &mut roots),
            false,
        )?
        .0)
    }

    /// `of`, for a step of a history when `keep` (with `kept` the facts): the builds of `old` are
    /// taken from `older` where an environment is the same, the roots written in `new` and
    /// `old` from `roots` where they are there (and left there where they are worked out,
    /// `discover::environments_reusing`), and for each environment of
    /// `pairs` in order the builds of its Flux Kustomizations in `new` are given back
    /// remembered: the next step replays those whose files did not change
    /// (`inventory::build_remembering`), with the footprints of its partial owners
    /// (`touched::unseen`), which the next step takes as they are where nothing they cover
    /// changed.
    fn of_reusing(
        old: &FileTree,
        new: &FileTree,
        config: Option<&Config>,
        overrides: &[(String, String)],
        kept: Keep,
        (mut older, roots): (Vec<Kept>, &mut [Option<Vec<Environment>>; 2]),
        keep: bool,
    ) -> Result<(Builds, Vec<Carried>)> {
        let envs = discover::environments_reusing(&[new, old], roots, config, overrides);
        if envs.is_empty() {
            return Err(Error::NoEnvironment(format!(
                "no Flux environment found in {} or {}; looked for {}. Name one with `--env NAME=PATH` or list them under clusters.environments in fluxwave.yaml",
                new.label,
                old.label,
                discover::WHERE_LOOKED
            )));
        }
        let mut pairs: Vec<(Inventory, Inventory)> = Vec::new();
        let mut same = Vec::new();
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
                    kind: None,
                    file: env.path.clone(),
                    why: vec![why],
                    gap: None,
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
            let remembering = |tree: &FileTree, before: inventory::Memory| {
                let (mut inv, now) = inventory::build_remembering(tree, env, before);
                let reading = tree.recording();
                crate::helm::render(&mut inv, &reading);
                (inv, now, reading.take_footprint())
            };
            let reused = older
                .iter()
                .position(|k| k.carried.environment == *env)
                .map(|i| older.swap_remove(i));
            // A history's steps replay what the step before built; its first step replays
            // the older revision's builds in the newer.
            let mut footprints = Footprints::default();
            let mut rendered = Footprint::default();
            let mut taken_whole = false;
            // Nothing the environment's builds and renders read of the step before's revision
            // changed: its build is this revision's too (and what it remembers is moved to
            // this revision's tree).
            let unchanged = |k: &mut Kept| {
                let changed = changed.get_or_init(|| old.changed_paths(new));
                !changed.iter().any(|p| k.carried.rendered.covers(p))
                    && inventory::unchanged(new, env, &mut k.carried.remembered, &k.inventory)
            };
            let (o, n, remembered) = if keep && kept == Keep::Facts {
                let mut reused = reused;
                let same = in_old && reused.as_mut().is_some_and(unchanged);
                match reused {
                    Some(k) if same => {
                        footprints = k.carried.footprints;
                        rendered = k.carried.rendered;
                        taken_whole = true;
                        let n = k.inventory.clone();
                        (k.inventory, n, k.carried.remembered)
                    }
                    reused => {
                        let (o, before) = match reused {
                            Some(k) if in_old => {
                                footprints = k.carried.footprints;
                                (k.inventory, k.carried.remembered)
                            }
                            _ if in_old => {
                                let (o, before, _) = remembering(old, inventory::Memory::default());
                                (o, before)
                            }
                            _ => (Inventory::default(), inventory::Memory::default()),
                        };
                        let (n, now, read) = remembering(new, before);
                        rendered = read;
                        (o, n, now)
                    }
                }
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
                    (o, n, inventory::Memory::default())
                })
            };
            incomplete.extend(unseen(
                (old, new),
                (&o, &n),
                || changed.get_or_init(|| old.changed_paths(new)).as_slice(),
                &mut footprints,
                keep.then(|| remembered.loads()),
            ));
            if keep {
                newer.push(Carried {
                    environment: env.clone(),
                    remembered,
                    footprints,
                    rendered,
                });
            }
            incomplete.extend(helm::unjudged(name, &o, &n));
            pairs.push((o, n));
            same.push(taken_whole);
            built.push(env.clone());
        }
        let builds = Builds {
            from: old.label.clone(),
            to: new.label.clone(),
            environments: envs.into_iter().map(|e| e.name).collect(),
            pairs,
            unchanged: same,
            envs: built,
            incomplete,
            warnings,
            accept: accepted_by(old),
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
            unchanged,
            envs: _,
            incomplete,
            mut warnings,
            accept,
        } = self;
        let (accepted, incomplete): (Vec<Incomplete>, Vec<Incomplete>) = incomplete
            .into_iter()
            .partition(|i| i.gap.is_some_and(|g| accept.contains(&g)));
        // The objects of an environment are freed on another core while the rest is judged.
        let mut freeing = Vec::new();
        let mut deletions = Vec::new();
        let mut removed = Vec::new();
        for ((o, n), unchanged) in pairs.iter_mut().zip(unchanged) {
            if !unchanged {
                let found = rules::deletions(o, n);
                if deletions.is_empty() {
                    deletions = found;
                } else {
                    deletions.extend(found);
                }
                removed.extend(rules::removed_collecting_owners(o, n).into_iter().cloned());
            }
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
            // An older build's failure is no warning of the change (what it leaves unknown
            // is said with the Kustomization, `touched`).
            let older = o
                .warnings
                .iter()
                .filter(|w| w.feature != crate::flux::inventory::BUILD_FAILURE);
            for w in older.chain(&n.warnings) {
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
            accepted,
            warnings,
            runbook,
            cost: Cost::default(),
            no_environment: None,
        };
        let newer = if keep {
            pairs.into_iter().map(|(_, n)| n).collect()
        } else {
            Vec::new()
        };
        (report, newer, freeing)
    }
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
