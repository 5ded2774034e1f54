//! `fluxwave init`: a first `fluxwave.yaml` (and, asked, a first catalog) drafted from what
//! the repository already says. Nothing is guessed that a file does not show: each setting
//! comes with the file that made it so, and what init cannot know (where a unit without a
//! ServiceDefinition goes) is left as a commented hint.
//!
//! - Environments are those `check` and `cutover` discover (`flux::discover`); they are
//!   written to `clusters.environments` when the configured reading of each is the one
//!   discovery made (its root Kustomization the same), since `apply` edits the environments
//!   fluxwave.yaml lists (`environments`).
//! - The app tier is the folder of manifests that a Flux Kustomization of an environment's
//!   build applies, every object of it written directly in that folder: the one named
//!   `apps`, else the only one whose folder is named `apps`. Its Kustomization gives
//!   `clusters.base` (the folder it is written in), `waves.upstream` (its `dependsOn`),
//!   `waves.namespace`, the keys of `waves.spec` that differ from fluxwave's defaults, and
//!   `waves.decryption` (what an environment's patch gives it) (`app_tier`, `waves`).
//! - The catalog (`--catalog`) has one dependency-only ServiceDefinition per unit: in a flat
//!   app tier a unit is a file holding more than Secrets and ConfigMaps (not SOPS-encrypted),
//!   named for it, and owns by name what starts with its name, as `plan` assigns files; a
//!   folder `<apps>/<unit>` is a unit. `<svc>-db` beside `<svc>` is its database. Without a
//!   flat app tier, each Flux Kustomization written in a per-app `ks.yaml` is a unit.
//!   Dependencies are the `dependsOn` between the units' own Kustomizations, where they have
//!   them; else none, for the user to fill in (`units`, `catalog`).

use std::collections::BTreeMap;
use std::path::Path;

use crate::config::{self, Config};
use crate::error::Result;
use crate::flux::discover;
use crate::flux::inventory::{self, Inventory};
use crate::tree::FileTree;
use crate::yaml::Text;

mod app_tier;
mod catalog;
mod comment;
mod environments;
mod units;
mod waves;

/// A setting init writes, and the file that made it so.
#[derive(Debug, Clone)]
pub struct Found {
    pub setting: String,
    pub value: String,
    pub why: String,
}

/// A drafted ServiceDefinition.
#[derive(Debug, Clone)]
pub struct DraftService {
    pub name: String,
    /// `catalog/<name>.yaml`.
    pub file: String,
    pub text: String,
    /// What it was drafted from, for the report.
    pub why: String,
}

/// What init found, and the files it would write.
#[derive(Debug, Clone, Default)]
pub struct Draft {
    pub found: Vec<Found>,
    /// What is left unset, and why.
    pub notes: Vec<String>,
    /// The text of fluxwave.yaml.
    pub config: String,
    pub services: Vec<DraftService>,
}

/// The head of every fluxwave.yaml init drafts.
const HEADER: &str = "# fluxwave settings drafted by `fluxwave init` from what it found in this repository;\n# everything not set here takes its default (see the README).\napiVersion: fluxwave.dev/v1alpha1\nkind: Config\n";

/// Drafts fluxwave.yaml (and the catalog, when `catalog` is set) for the repository at `root`.
pub fn draft(root: &Path, catalog: bool) -> Result<Draft> {
    let tree = FileTree::from_worktree_or_dir(root)?;
    let envs = discover::environments(&[&tree], None, &[]);
    let inventories: Vec<Inventory> = envs.iter().map(|e| inventory::build(&tree, e)).collect();
    let mut d = Draft::default();
    let mut text = String::from(HEADER);
    let tier = app_tier::find(&tree, &envs, &inventories, &mut d.notes);
    let defaults = Config::default();

    let mut apps_dir = defaults.apps.clone();
    if let Some(t) = &tier {
        apps_dir.clone_from(&t.dir);
        app_tier::apps_settings(t, &mut text, &mut d);
    }

    let mut clusters = String::new();
    if let Some(t) = &tier {
        app_tier::base_setting(&tree, t, &envs, &apps_dir, &mut clusters, &mut d);
    }
    environments::setting(&tree, &envs, &apps_dir, &mut clusters, &mut d);
    if !clusters.is_empty() {
        text.push_str("clusters:\n");
        text.push_str(&clusters);
    }

    if let Some(t) = &tier {
        let mut waves = String::new();
        waves::settings(t, &inventories, &defaults, &mut waves, &mut d);
        if !waves.is_empty() {
            text.push_str("waves:\n");
            text.push_str(&waves);
        }
    }

    // units, and the catalog
    let catalog_dir = defaults.catalog.clone();
    let units = match &tier {
        Some(t) => units::flat_units(root, &tree, t, &mut d.notes)?,
        None => BTreeMap::new(),
    };
    if catalog {
        d.services =
            catalog::draft_catalog(&envs, &catalog_dir, tier.as_ref(), &units, &inventories);
        if d.services.is_empty() {
            d.notes.push(
                "catalog: no unit found to draft a ServiceDefinition for (no flat app tier, no per-app ks.yaml Kustomizations)".into(),
            );
        }
    } else if let Some(t) = &tier {
        units::units_hint(root, &catalog_dir, &t.dir, &units, &mut text, &mut d.notes);
    }
    d.config = text;
    Ok(d)
}

/// Checks that the drafted fluxwave.yaml reads back as it means: init never writes a file
/// `Config::load` refuses.
pub fn reads_back(text: &str) -> Result<Config> {
    Config::parse(&Text::new(text.to_string()))
}

/// The name of the config file, for messages.
pub const CONFIG_FILE: &str = config::FILE;

#[cfg(test)]
pub(super) mod fixture {
    //! A repository as `flux bootstrap` leaves it, in memory, for the tests of init's steps.

    use crate::flux::discover::{self, Environment};
    use crate::flux::inventory::{self, Inventory};
    use crate::tree::FileTree;

    /// The files of environment `prod` (clusters/prod), its root Kustomization `flux-system`.
    pub const BOOTSTRAP: &[(&str, &str)] = &[
        (
            "clusters/prod/flux-system/gotk-sync.yaml",
            "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 1m0s\n  ref:\n    branch: main\n  url: ssh://git@example.org/fleet\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m0s\n  path: ./clusters/prod\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
        ),
        (
            "clusters/prod/flux-system/kustomization.yaml",
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- gotk-sync.yaml\n",
        ),
    ];

    /// A Flux Kustomization `name` in `namespace` applying `path`, after `depends_on` (each
    /// `name` or `namespace/name`), with `extra` lines of spec.
    pub fn kustomization(
        name: &str,
        namespace: &str,
        path: &str,
        depends_on: &[&str],
        extra: &str,
    ) -> String {
        let mut doc = format!(
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n  interval: 10m0s\n  path: ./{path}\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n    namespace: flux-system\n"
        );
        if !depends_on.is_empty() {
            doc.push_str("  dependsOn:\n");
            for d in depends_on {
                match d.split_once('/') {
                    Some((ns, n)) => {
                        doc.push_str(&format!("    - name: {n}\n      namespace: {ns}\n"))
                    }
                    None => doc.push_str(&format!("    - name: {d}\n")),
                }
            }
        }
        doc.push_str(extra);
        doc
    }

    /// A ConfigMap `name` of namespace `default`.
    pub fn config_map(name: &str) -> String {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: default\n"
        )
    }

    /// The tree of `BOOTSTRAP` and `files`, its environments, and each one's build.
    pub fn built(files: &[(&str, &str)]) -> (FileTree, Vec<Environment>, Vec<Inventory>) {
        let tree = FileTree::from_files(BOOTSTRAP.iter().chain(files).copied());
        let envs = discover::environments(&[&tree], None, &[]);
        let inventories = envs.iter().map(|e| inventory::build(&tree, e)).collect();
        (tree, envs, inventories)
    }
}
