//! Lints. A finding is data (a code, a severity, a place, a message and what to do), never
//! an error: every finding is gathered and the exit code is decided at the end by counting
//! errors. Drift findings come from the same change set `apply` carries out, so `check` is
//! clean exactly when `apply` has nothing to do; they run only where there is a catalog (or
//! units declared in fluxwave.yaml). Every other lint reads the environments as Flux builds
//! them (`flux::inventory` over the working tree, HelmReleases rendered by `helm`), so it sees
//! what Flux sees, whatever the layout.

mod build;
mod decryption;
mod dependency;
mod dependency_drift;
mod ignore;
mod images;
pub mod locate;
mod ownership;
mod path;
mod plaintext;
mod source;
mod stateful;
mod substitution;
mod timeout;

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::config::Config;
pub use crate::diag::{Code, Finding, Place, Severity};
use crate::error::Result;
use crate::flux::discover;
use crate::flux::facts::Facts;
use crate::flux::inventory::{self, Inventory, Owner};
use crate::kustomize::object::ObjectId;
use crate::plan::changes::{self, Op};
use crate::plan::Plan;
use crate::plural::count;
use crate::repo::Repo;
use crate::tree::FileTree;

/// The repository as Flux sees it: the working tree, its config, and every environment built
/// as Flux builds it.
pub struct FluxView {
    pub tree: FileTree,
    pub config: Config,
    pub envs: Vec<Inventory>,
}

/// The facts of one object of an owner's build (a plain object or a Flux Kustomization it
/// creates) and where it is written.
pub struct ObjectFacts<'a> {
    pub facts: Cow<'a, Facts>,
    pub file: &'a str,
    pub index: usize,
}

impl FluxView {
    /// The Flux view of a tree already read; `overrides` are `--env NAME=PATH`.
    pub fn with_tree(
        tree: FileTree,
        config: Config,
        overrides: &[(String, String)],
    ) -> Result<FluxView> {
        let envs = discover::environments(&[&tree], Some(&config), overrides)
            .iter()
            .map(|env| {
                let mut inv = inventory::build(&tree, env);
                crate::helm::render(&mut inv, &tree);
                inv
            })
            .collect();
        Ok(FluxView { tree, config, envs })
    }

    /// Everything each owner of `inv` applies, by owner (one pass over the inventory).
    pub fn builds<'a>(&self, inv: &'a Inventory) -> BTreeMap<&'a ObjectId, Vec<ObjectFacts<'a>>> {
        let mut builds: BTreeMap<&ObjectId, Vec<ObjectFacts>> = BTreeMap::new();
        for e in inv
            .objects
            .values()
            .chain(inv.duplicates.iter().map(|(_, e)| e))
        {
            builds.entry(&e.owner).or_default().push(ObjectFacts {
                facts: Cow::Borrowed(&*e.facts),
                file: &e.file,
                index: e.index,
            });
        }
        // A ResourceSet owner is an entry of its parent's build already.
        for (_, o) in inv.kustomizations() {
            let Some(parent) = &o.parent else { continue };
            // What it needs as written: its object is the substituted one.
            let mut facts = Facts::of(&o.object, None, false);
            facts.variables.clone_from(&o.variables);
            builds.entry(parent).or_default().push(ObjectFacts {
                facts: Cow::Owned(facts),
                file: &o.file,
                index: o.index,
            });
        }
        builds
    }

    /// Every object of every environment (each owner's copy of an object built twice).
    pub fn objects(&self) -> impl Iterator<Item = (&Inventory, &ObjectId, &inventory::Entry)> {
        self.envs.iter().flat_map(|inv| {
            inv.objects
                .iter()
                .chain(inv.duplicates.iter().map(|(id, e)| (id, e)))
                .map(move |(id, e)| (inv, id, e))
        })
    }

    /// Where a Flux Kustomization is written (the environment for an assumed root), at `key`.
    pub fn owner_at(&self, inv: &Inventory, owner: &Owner, key: &str) -> (String, Option<Place>) {
        if owner.file.is_empty() {
            return (inv.env_path.clone(), None);
        }
        (
            owner.file.clone(),
            locate::key(&self.tree, &owner.file, owner.index, key),
        )
    }
}

/// `Kind/namespace/name` of a Flux Kustomization without its kind: `flux-system/apps`.
pub fn flux_name(id: &ObjectId) -> String {
    format!("{}/{}", id.namespace, id.name)
}

/// An environment `check` built: its name, its folder, how many Flux Kustomizations its
/// build has (the root one included), the file that writes its root Kustomization when the
/// repository does, and the sources that are this repository (`kind/namespace/name`: the
/// root's, then those of the roots nested in its entry).
#[derive(Debug, Clone, serde::Serialize)]
pub struct BuiltEnvironment {
    pub name: String,
    pub path: String,
    pub kustomizations: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
    pub sources: Vec<String>,
}

/// What `check` found, and what it built to find it.
pub struct Report {
    pub findings: Vec<Finding>,
    pub environments: Vec<BuiltEnvironment>,
    /// The HelmReleases whose charts could not be rendered (rendering on), with why, by
    /// environment: the lints judged them by their values alone.
    pub not_rendered: Vec<NotRendered>,
}

/// A HelmRelease of environment `environment` whose chart was not rendered, and why.
#[derive(Debug, Clone, serde::Serialize)]
pub struct NotRendered {
    pub environment: String,
    pub release: String,
    pub why: String,
}

impl Report {
    /// Flux Kustomizations of every environment's build.
    pub fn kustomizations(&self) -> usize {
        self.environments.iter().map(|e| e.kustomizations).sum()
    }
}

/// Every lint over the repository at `root`, whose environments `overrides` names when it
/// is not empty (`--env NAME=PATH`), with the cutover analysis from `base` when one is
/// given, less the findings `check.ignore` and `fluxwave:ignore` comments silence. `Err`
/// only for unreadable input.
pub fn run(root: &Path, base: Option<&str>, overrides: &[(String, String)]) -> Result<Report> {
    let config = Config::load(root)?;
    // A fluxwave.yaml that only configures `check` does not make a repository catalog-managed.
    let managed = root.join(&config.catalog).is_dir() || !config.units.is_empty();
    // The tree is read first and once: the catalog lints take their files from it.
    let tree = FileTree::from_worktree_or_dir(root)?;
    let (mut findings, decrypted, repo) = if managed {
        let (findings, decrypted, repo) = catalog_lints(root, &tree)?;
        (findings, decrypted, Some(repo))
    } else {
        Default::default()
    };
    let flux = FluxView::with_tree(tree, config, overrides)?;
    if flux.envs.is_empty() {
        // Nothing built is nothing checked: a green run would say nothing.
        let configured = flux.config.text.is_some();
        findings.push(Finding::new(
            Code::NoEnvironment,
            if configured { crate::config::FILE } else { "." },
            format!("found no Flux environment to build, so nothing was checked (looked for {})", discover::WHERE_LOOKED),
            "name the folder each cluster's root Flux Kustomization builds in fluxwave.yaml (`clusters: {environments: [{name: main, path: kubernetes/flux/cluster}]}`), or pass `--env main=kubernetes/flux/cluster`",
        ));
    }
    let failures = build::Failures::of(&flux);
    findings.extend(build::build_failed(&flux));
    findings.extend(decryption::sops_without_decryption(&flux, &decrypted));
    findings.extend(plaintext::plaintext_secret(&flux));
    findings.extend(substitution::variables(&flux));
    findings.extend(dependency::unknown_dependency(&flux, &failures));
    findings.extend(dependency::dependency_cycle(&flux));
    if let Some(repo) = &repo {
        findings.extend(dependency_drift::dependency_drift(&flux, repo));
    }
    findings.extend(path::missing_path(&flux, root));
    findings.extend(source::unknown_source(&flux, &failures));
    findings.extend(timeout::missing_timeout(&flux, managed));
    findings.extend(ownership::double_owner(&flux));
    findings.extend(stateful::unprotected_stateful(&flux));
    // A marker's policy or automation may be in a build that fails: build-failed says it.
    if !failures.any() {
        findings.extend(images::image_policies(&flux));
    }
    // By byte offset within a file: the order of line and column.
    findings.sort_by(|a, b| {
        let offset = |f: &Finding| f.place.as_ref().map(|p| p.span.0);
        (&a.path, offset(a), a.severity, a.code.as_str(), &a.message).cmp(&(
            &b.path,
            offset(b),
            b.severity,
            b.code.as_str(),
            &b.message,
        ))
    });
    findings.dedup_by(|a, b| a.path == b.path && a.code == b.code && a.message == b.message);
    if let Some(base) = base {
        findings.extend(cutover(root, base, overrides)?);
    }
    let findings = ignore::apply(&flux.tree, &flux.config, findings)?;
    let environments = flux
        .envs
        .iter()
        .map(|inv| BuiltEnvironment {
            name: inv.env.clone(),
            path: inv.env_path.clone(),
            kustomizations: inv.kustomizations().count(),
            root: inv
                .owners
                .values()
                .find(|o| o.parent.is_none() && !o.file.is_empty())
                .map(|o| o.file.clone()),
            sources: inv.repository.iter().map(ToString::to_string).collect(),
        })
        .collect();
    let not_rendered = flux
        .envs
        .iter()
        .flat_map(|inv| {
            inv.objects.iter().filter_map(|(id, e)| {
                // Not when rendering is off: the user asked for that (`--no-helm`).
                let why = e.release.as_deref()?.why()?;
                Some(NotRendered {
                    environment: inv.env.clone(),
                    release: format!("{}/{}", id.namespace, id.name),
                    why: why.to_string(),
                })
            })
        })
        .collect();
    Ok(Report {
        findings,
        environments,
        not_rendered,
    })
}

/// The lints of a catalog-managed repository: plan problems and drift from `apply`; with
/// the Flux Kustomizations whose decryption `apply` answers for (see `ChangeSet::decrypted`).
/// The repository read is given back for the lints that compare the catalog with the builds.
fn catalog_lints(root: &Path, tree: &FileTree) -> Result<(Vec<Finding>, BTreeSet<String>, Repo)> {
    let repo = Repo::load_with(root, &|path| tree.read(path))?;
    let plan = Plan::for_repo(&repo)?;
    let mut findings: Vec<Finding> = plan
        .problems
        .iter()
        .map(|p| Finding::new(p.code(), p.path(&repo.apps.dir), p.message(), p.help()))
        .collect();
    let mut decrypted = BTreeSet::new();
    if plan.blocking().next().is_none() {
        let set = changes::compute(&repo, &plan)?;
        decrypted = set.decrypted;
        findings.extend(
            set.warnings
                .into_iter()
                .map(|w| Finding::new(w.code, w.path, w.message, w.help)),
        );
        if !repo.apps.is_grouped() && !plan.groups().is_empty() {
            // Before the first apply every file is out of place: one finding says it all.
            findings.push(Finding::new(
                Code::NotWaved,
                repo.apps.dir.clone(),
                format!(
                    "the app tier is one flat folder: {} {} to be placed in {}",
                    count(plan.placements.len(), "file"),
                    if plan.placements.len() == 1 {
                        "waits"
                    } else {
                        "wait"
                    },
                    plan.describe_groups()
                ),
                "run `fluxwave plan` to see the placement and `fluxwave apply` to carry it out",
            ));
        } else {
            findings.extend(set.changes.iter().map(drift_finding));
        }
    }
    Ok((findings, decrypted, repo))
}

/// A change `apply` would make, as the drift it repairs.
fn drift_finding(c: &changes::Change) -> Finding {
    let (path, message) = match &c.op {
        Op::Move { from, to } => (from.clone(), format!("belongs in {to} ({})", c.why)),
        Op::Write {
            path, old: None, ..
        } => (path.clone(), format!("is missing ({})", c.why)),
        Op::Write { path, .. } => (
            path.clone(),
            format!("is out of step with the catalog ({})", c.why),
        ),
        Op::Remove { path } | Op::RemoveDir { path } => {
            (path.clone(), format!("should not exist ({})", c.why))
        }
    };
    Finding::new(c.drift.code(), path, message, "run `fluxwave apply`")
}

/// What Flux would delete going from `base` to the working tree, as findings: a CI job
/// that runs `check --base origin/main` blocks a merge that would delete a database.
pub fn cutover(root: &Path, base: &str, overrides: &[(String, String)]) -> Result<Vec<Finding>> {
    let report = crate::cutover::analyse(root, base, None, overrides)?;
    // One finding per file and reason: the objects one file holds, deleted for one reason
    // (their owner removed, say), are one annotation in a pull request, not one per object.
    let mut groups: Vec<(Code, &str, &str, &str, Vec<String>)> = Vec::new();
    let mut at: std::collections::HashMap<(Code, &str, &str, &str), usize> =
        std::collections::HashMap::new();
    for d in &report.deletions {
        let code = match (d.stateful, d.rule.is_move()) {
            (true, true) => Code::PromotesStateful,
            (true, false) => Code::DeletesStateful,
            _ => Code::CutoverDeletion,
        };
        let key = (code, &*d.file, &*d.environment, &*d.reason);
        let i = *at.entry(key).or_insert_with(|| {
            groups.push((key.0, key.1, key.2, key.3, Vec::new()));
            groups.len() - 1
        });
        groups[i].4.push(d.id.to_string());
    }
    let mut findings: Vec<Finding> = groups
        .into_iter()
        .map(|(code, file, environment, reason, ids)| {
            let message = match ids.as_slice() {
                [one] => format!("{one} ({environment}): Flux deletes it: {reason}"),
                _ => format!(
                    "{} ({environment}): Flux deletes them: {reason}: {}",
                    crate::plural::count(ids.len(), "object"),
                    ids.join(", ")
                ),
            };
            Finding::new(
                code,
                file.to_string(),
                message,
                format!("run `fluxwave cutover --from {base}` for the safe runbook"),
            )
        })
        .collect();
    findings.extend(report.incomplete.iter().map(|i| {
        Finding::new(
            Code::CutoverIncomplete,
            i.file.clone(),
            format!(
                "{} ({}): the change touches what fluxwave cannot see; Flux may delete more: {}",
                i.what(),
                i.environment,
                i.why.join("; ")
            ),
            format!("check what it applies by hand (`flux diff kustomization` against a cluster), then run `fluxwave cutover --from {base}` again"),
        )
    }));
    findings.extend(report.warnings.iter().map(|w| {
        Finding::new(
            Code::CutoverUnmodelled,
            w.path.clone(),
            format!("{} ({}): {}", w.feature, w.environment, w.message),
            "fluxwave cannot see what this feature does; check it by hand",
        )
    }));
    Ok(findings)
}
