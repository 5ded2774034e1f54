//! `fluxwave init`: a first `fluxwave.yaml` (and, asked, a first catalog) drafted from what
//! the repository already says. Nothing is guessed that a file does not show: each setting
//! comes with the file that made it so, and what init cannot know (where a unit without a
//! ServiceDefinition goes) is left as a commented hint.
//!
//! - Environments are those `check` and `cutover` discover (`flux::discover`); they are
//!   written to `clusters.environments` when the configured reading of each is the one
//!   discovery made (its root Kustomization the same), since `apply` edits the environments
//!   fluxwave.yaml lists.
//! - The app tier is the folder of manifests that a Flux Kustomization of an environment's
//!   build applies, every object of it written directly in that folder: the one named
//!   `apps`, else the only one whose folder is named `apps`. Its Kustomization gives
//!   `clusters.base` (the folder it is written in), `waves.upstream` (its `dependsOn`),
//!   `waves.namespace`, the keys of `waves.spec` that differ from fluxwave's defaults, and
//!   `waves.decryption` (what an environment's patch gives it).
//! - The catalog (`--catalog`) has one dependency-only ServiceDefinition per unit: in a flat
//!   app tier a unit is a file holding more than Secrets and ConfigMaps (not SOPS-encrypted),
//!   named for it, and owns by name what starts with its name, as `plan` assigns files; a
//!   folder `<apps>/<unit>` is a unit. `<svc>-db` beside `<svc>` is its database. Without a
//!   flat app tier, each Flux Kustomization written in a per-app `ks.yaml` is a unit.
//!   Dependencies are the `dependsOn` between the units' own Kustomizations, where they have
//!   them; else none, for the user to fill in.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use serde_json::{json, Map, Value};

use crate::config::{self, is_dns_label, Config};
use crate::error::Result;
use crate::flux::discover::{self, Environment};
use crate::flux::inventory::{self, Inventory, Owner};
use crate::flux::Kustomization;
use crate::kustomize::object::ObjectId;
use crate::repo::apptier::{AppTier, Location};
use crate::tree::FileTree;
use crate::yaml::{self, Text};

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

/// The app tier init found: its folder and the Flux Kustomization that applies it.
struct AppTierFound<'a> {
    dir: String,
    owner: &'a Owner,
    /// Its document as written in its file.
    written: Value,
    /// Number of files it applies.
    files: usize,
    layout: Layout<'a>,
}

/// How the app tier is split into Flux Kustomizations today.
enum Layout<'a> {
    /// One Kustomization applies the whole folder.
    Flat,
    /// Split by fluxwave into waves: `<prefix><N>` at `<apps>/wave-<N>`.
    Waves { prefix: String },
    /// One Kustomization per unit: `<prefix><unit>` at `<apps>/<unit>`.
    Units {
        prefix: String,
        members: Vec<&'a Owner>,
    },
}

/// A Kustomization at `<dir>/<folder>` named `<prefix><folder>` (a unit's) or
/// `<prefix><N>` at `<dir>/wave-<N>` (a wave's): (dir, prefix, wave).
fn group_of(o: &Owner) -> Option<(String, String, Option<usize>)> {
    let (dir, folder) = o.path.rsplit_once('/')?;
    let wave = folder.strip_prefix("wave-").and_then(config::wave_number);
    let suffix = match wave {
        Some(n) => n.to_string(),
        None => folder.to_string(),
    };
    let prefix = o.id.name.strip_suffix(&suffix)?;
    let valid = match wave {
        Some(_) => is_dns_label(&format!("{prefix}0")),
        None => is_dns_label(&format!("{prefix}a")) && is_dns_label(folder),
    };
    valid.then(|| (dir.to_string(), prefix.to_string(), wave))
}

/// Drafts fluxwave.yaml (and the catalog, when `catalog` is set) for the repository at `root`.
pub fn draft(root: &Path, catalog: bool) -> Result<Draft> {
    let tree = FileTree::from_worktree_or_dir(root)?;
    let envs = discover::environments(&[&tree], None, &[]);
    let inventories: Vec<Inventory> = envs.iter().map(|e| inventory::build(&tree, e)).collect();
    let mut d = Draft::default();
    let mut text = String::from(
        "# fluxwave settings drafted by `fluxwave init` from what it found in this repository;\n# everything not set here takes its default (see the README).\napiVersion: fluxwave.dev/v1alpha1\nkind: Config\n",
    );
    let tier = app_tier(&tree, &envs, &inventories, &mut d.notes);
    let defaults = Config::default();

    // apps
    let mut apps_dir = defaults.apps.clone();
    if let Some(t) = &tier {
        apps_dir.clone_from(&t.dir);
        let files = crate::plural::count(t.files, "file");
        let why = match &t.layout {
            Layout::Flat => format!(
                "Flux Kustomization {} in {} applies this folder of manifests ({files})",
                shown_id(&t.owner.id),
                t.owner.file
            ),
            Layout::Waves { .. } => format!(
                "its wave folders are applied by Flux Kustomizations such as {} in {} ({files})",
                shown_id(&t.owner.id),
                t.owner.file
            ),
            Layout::Units { members, .. } => format!(
                "its unit folders are applied by {} Flux Kustomizations such as {} in {} ({files})",
                members.len(),
                shown_id(&t.owner.id),
                t.owner.file
            ),
        };
        text.push_str(&format!(
            "{}apps: {}\n",
            comment("", &format!("The app tier: {why}.")),
            yaml::scalar(&json!(t.dir))
        ));
        d.found.push(Found {
            setting: "apps".into(),
            value: t.dir.clone(),
            why,
        });
        if let Layout::Units { members, .. } = &t.layout {
            let why = format!(
                "one Flux Kustomization per unit folder of {}, as {} in {}",
                t.dir,
                shown_id(&members[0].id),
                members[0].file
            );
            text.push_str(&format!(
                "{}topology: units\n",
                comment("", &format!("Already split, {why}."))
            ));
            d.found.push(Found {
                setting: "topology".into(),
                value: "units".into(),
                why,
            });
        }
    }

    // clusters
    let mut clusters = String::new();
    if let Some(t) = &tier {
        let base = parent_dir(&t.owner.file);
        let env_folder = envs.iter().find(|e| e.path == base);
        let inside_apps = base == apps_dir || base.starts_with(&format!("{apps_dir}/"));
        if base.is_empty() || env_folder.is_some() || inside_apps {
            let whose = match env_folder {
                Some(e) => format!("in the folder of environment `{}`", e.name),
                None if base.is_empty() => "in the repository's root".to_string(),
                None => "inside the app tier".to_string(),
            };
            d.notes.push(format!(
                "clusters.base: not set. {} is written {whose}; `fluxwave apply` replaces it with the wave Kustomizations in a folder of shared Flux objects of its own (default clusters/base): move {} there, list that folder in each environment's kustomization.yaml, and set clusters.base. waves and plan do without it; check and apply need it",
                t.owner.file, t.owner.file
            ));
            clusters.push_str(&comment("  ", &format!("base: not set. {} is written {whose}; apply needs the app tier's Kustomization in a folder of shared Flux objects of its own (default clusters/base): move it there and set this.", t.owner.file))
            );
        } else {
            let why = format!("where {} is written", t.owner.file);
            clusters.push_str(&format!(
                "{}  base: {}\n",
                comment("  ", &format!("The folder of shared Flux objects, {why}: apply keeps the app tier's Flux Kustomizations there (one per wave, or per unit){}.", if matches!(t.layout, Layout::Flat) { format!(", in place of {}", shown_id(&t.owner.id)) } else { String::new() })),
                yaml::scalar(&json!(base))
            ));
            d.found.push(Found {
                setting: "clusters.base".into(),
                value: base.clone(),
                why,
            });
            let has_kustomization = crate::kustomize::KUSTOMIZATION_FILES
                .iter()
                .any(|k| tree.is_file(&format!("{base}/{k}")));
            if !has_kustomization {
                d.notes.push(format!("{base} has no kustomization.yaml (Flux generates one): `fluxwave apply` edits that file's resources, so create it listing the folder's manifests before you apply"));
            }
        }
    }
    environments(&tree, &envs, &apps_dir, &mut clusters, &mut d);
    if !clusters.is_empty() {
        text.push_str("clusters:\n");
        text.push_str(&clusters);
    }

    // waves
    if let Some(t) = &tier {
        let mut waves = String::new();
        waves_settings(t, &inventories, &defaults, &mut waves, &mut d);
        if !waves.is_empty() {
            text.push_str("waves:\n");
            text.push_str(&waves);
        }
    }

    // units, and the catalog
    let catalog_dir = defaults.catalog.clone();
    let units = match &tier {
        Some(t) => flat_units(root, &tree, t, &mut d.notes)?,
        None => BTreeMap::new(),
    };
    if catalog {
        d.services = draft_catalog(&envs, &catalog_dir, tier.as_ref(), &units, &inventories);
        if d.services.is_empty() {
            d.notes.push(
                "catalog: no unit found to draft a ServiceDefinition for (no flat app tier, no per-app ks.yaml Kustomizations)".into(),
            );
        }
    } else if let Some(t) = &tier {
        units_hint(root, &catalog_dir, &t.dir, &units, &mut text, &mut d.notes);
    }
    d.config = text;
    Ok(d)
}

/// `text` as YAML comment lines at `indent`, wrapped at 92 columns.
fn comment(indent: &str, text: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    // A word is kept whole, and so is a `code span` with spaces in it.
    let mut words: Vec<String> = Vec::new();
    let mut open = false;
    for word in one_line(text).split_whitespace() {
        match words.last_mut() {
            Some(last) if open => {
                last.push(' ');
                last.push_str(word);
            }
            _ => words.push(word.to_string()),
        }
        if word.matches('`').count() % 2 == 1 {
            open = !open;
        }
    }
    for word in &words {
        if !line.is_empty() && indent.len() + 2 + line.len() + 1 + word.len() > 92 {
            out.push_str(&format!("{indent}# {line}\n"));
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        out.push_str(&format!("{indent}# {line}\n"));
    }
    out
}

/// `text` on one line: a name with a line break or a control character in it cannot end a
/// comment and start YAML of its own.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{85}' | '\u{feff}') {
                ' '
            } else {
                c
            }
        })
        .collect()
}

/// `namespace/name` of a Flux Kustomization.
fn shown_id(id: &ObjectId) -> String {
    format!("{}/{}", id.namespace, id.name)
}

fn parent_dir(file: &str) -> String {
    file.rsplit_once('/')
        .map_or(String::new(), |(d, _)| d.to_string())
}

/// The app tier: see the module's rules. Notes say why none was taken.
fn app_tier<'a>(
    tree: &FileTree,
    envs: &[Environment],
    inventories: &'a [Inventory],
    notes: &mut Vec<String>,
) -> Option<AppTierFound<'a>> {
    if envs.is_empty() {
        notes.push(format!(
            "no Flux environment found; looked for {}",
            discover::WHERE_LOOKED
        ));
        return None;
    }
    // The files each Kustomization applies, over every environment.
    let mut files: HashMap<&ObjectId, BTreeSet<&str>> = HashMap::new();
    for inv in inventories {
        for entry in inv.objects.values() {
            files.entry(&*entry.owner).or_default().insert(&entry.file);
        }
    }
    let mut seen = BTreeSet::new();
    let mut flat: Vec<(&Owner, usize)> = Vec::new();
    let mut elsewhere: Vec<(&Owner, String)> = Vec::new();
    for inv in inventories {
        for owner in inv.owners.values() {
            if owner.parent.is_none()
                || owner.path.is_empty()
                || envs.iter().any(|e| e.path == owner.path)
                || !seen.insert(owner.id.clone())
            {
                continue;
            }
            let Some(applied) = files.get(&owner.id) else {
                // An app tier whose build fails shows nothing of its folder: say why.
                let likely =
                    owner.id.name == "apps" || owner.path.rsplit('/').next() == Some("apps");
                if let Some(e) = owner.build_error.as_ref().filter(|_| likely) {
                    notes.push(format!(
                        "apps: Flux Kustomization {} ({}) does not build, so its folder {} is not read: {}",
                        shown_id(&owner.id),
                        owner.file,
                        owner.path,
                        one_line(e)
                    ));
                }
                continue;
            };
            let outside = applied
                .iter()
                .find(|f| parent_dir(f) != owner.path)
                .map(|f| f.to_string());
            match outside {
                None => flat.push((owner, applied.len())),
                Some(f) => elsewhere.push((owner, f)),
            }
        }
    }
    let named = |n: &str| flat.iter().find(|(o, _)| o.id.name == n).copied();
    let folder_apps: Vec<(&Owner, usize)> = flat
        .iter()
        .filter(|(o, _)| o.path.rsplit('/').next() == Some("apps"))
        .copied()
        .collect();
    let chosen = named("apps").or(match folder_apps.as_slice() {
        [one] => Some(*one),
        _ => None,
    });
    if chosen.is_none() {
        if let Some(found) = grouped(tree, &flat) {
            return Some(found);
        }
    }
    let Some((owner, count)) = chosen else {
        if let Some((o, f)) = elsewhere
            .iter()
            .find(|(o, _)| o.id.name == "apps" || o.path.ends_with("apps"))
        {
            notes.push(format!(
                "apps: not set. Flux Kustomization {} ({}) applies {}, whose objects are not all written in that folder ({f}); fluxwave's app tier is a folder of manifests",
                shown_id(&o.id),
                o.file,
                o.path
            ));
        } else {
            let candidates: Vec<String> = flat
                .iter()
                .map(|(o, _)| format!("{} ({})", o.path, shown_id(&o.id)))
                .collect();
            notes.push(if candidates.is_empty() || candidates.len() > 8 {
                "apps: not set. No Flux Kustomization named `apps` applies a folder of manifests".to_string()
            } else {
                format!(
                    "apps: not set. No Flux Kustomization named `apps` applies a folder of manifests; folders of manifests found: {}. Set `apps` to the app tier's",
                    candidates.join(", ")
                )
            });
        }
        return None;
    };
    let written = written_doc(tree, owner).unwrap_or_else(|| (*owner.object).clone());
    Some(AppTierFound {
        dir: owner.path.clone(),
        owner,
        written,
        files: count,
        layout: Layout::Flat,
    })
}

/// An app tier split into waves or units already: two or more Kustomizations of folders of
/// manifests side by side in one folder, named with one prefix (see `group_of`). The folder
/// with the most of them is the app tier; wave 0's Kustomization (or the first unit's)
/// stands for the tier's spec.
fn grouped<'a>(tree: &FileTree, flat: &[(&'a Owner, usize)]) -> Option<AppTierFound<'a>> {
    // (folder, name prefix, waves or units) -> (Kustomization, files, wave)
    type Members<'o> = Vec<(&'o Owner, usize, Option<usize>)>;
    let mut by: BTreeMap<(String, String, bool), Members<'a>> = BTreeMap::new();
    for (o, n) in flat {
        if let Some((dir, prefix, wave)) = group_of(o) {
            // fluxwave writes them beside the other Flux objects, never in the tier: two
            // Kustomizations in an app's own ks.yaml are that app's, not a tier.
            if o.file.starts_with(&format!("{dir}/")) {
                continue;
            }
            by.entry((dir, prefix, wave.is_some()))
                .or_default()
                .push((o, *n, wave));
        }
    }
    let ((dir, prefix, waves), mut members) = by
        .into_iter()
        .filter(|(_, m)| m.len() >= 2)
        .max_by_key(|(_, m)| m.len())?;
    members.sort_by_key(|(o, _, w)| (*w, o.id.name.clone()));
    let (owner, _, _) = members[0];
    let files = members.iter().map(|(_, n, _)| n).sum();
    let layout = if waves {
        Layout::Waves { prefix }
    } else {
        Layout::Units {
            prefix,
            members: members.iter().map(|(o, _, _)| *o).collect(),
        }
    };
    Some(AppTierFound {
        dir,
        written: written_doc(tree, owner).unwrap_or_else(|| (*owner.object).clone()),
        owner,
        files,
        layout,
    })
}

/// The Flux Kustomization `owner` as written in its file (no patch of an environment on it).
fn written_doc(tree: &FileTree, owner: &Owner) -> Option<Value> {
    let text = tree.read(&owner.file)?;
    let docs = yaml::parse_all(&owner.file, &text).ok()?;
    let doc = docs.into_iter().nth(owner.index)?;
    let k = Kustomization::from_value(&doc)?;
    (k.name == owner.id.name).then_some(doc)
}

/// `clusters.environments`, or a comment saying why they are left to discovery.
fn environments(
    tree: &FileTree,
    envs: &[Environment],
    apps: &str,
    clusters: &mut String,
    d: &mut Draft,
) {
    if envs.is_empty() {
        return;
    }
    let faithful = envs.iter().all(|e| {
        let configured = Environment::configured(tree, &e.name, &e.path, "");
        discover::root_in(tree, &configured) == discover::root_in(tree, e)
    });
    let valid = envs.iter().all(|e| {
        is_dns_label(&e.name) && e.path != apps && !e.path.starts_with(&format!("{apps}/"))
    });
    if !faithful || !valid {
        let why = if faithful {
            "an environment's name is not a DNS-1123 label, or its folder is inside the app tier"
        } else {
            "the root Kustomization of one is made by the cluster, by the Flux Operator, and a listed environment would not read it"
        };
        clusters.push_str(&comment(
            "  ",
            &format!("environments: left to discovery, which finds them each run ({why}):"),
        ));
        for e in envs {
            clusters.push_str(&format!(
                "  #   {}: {} ({})\n",
                one_line(&e.name),
                one_line(&e.path),
                one_line(&e.found)
            ));
        }
        for e in envs {
            d.found.push(Found {
                setting: format!("environment `{}`", e.name),
                value: e.path.clone(),
                why: format!("{}; discovered each run, not written", e.found),
            });
        }
        d.notes.push(format!(
            "clusters.environments: not set ({why}); fluxwave discovers them each run, but `fluxwave apply` edits only listed ones"
        ));
        return;
    }
    clusters.push_str(
        "  # The environments: apply keeps a decryption patch per wave in each one's kustomization.\n  environments:\n",
    );
    for e in envs {
        clusters.push_str(&format!(
            "{}    - name: {}\n      path: {}\n",
            comment("    ", &e.found),
            yaml::scalar(&json!(e.name)),
            yaml::scalar(&json!(e.path))
        ));
        d.found.push(Found {
            setting: format!("clusters.environments `{}`", e.name),
            value: e.path.clone(),
            why: e.found.clone(),
        });
    }
}

/// `waves.upstream`, `waves.namespace`, `waves.spec` and `waves.decryption` from the app
/// tier's Kustomization.
fn waves_settings(
    t: &AppTierFound,
    inventories: &[Inventory],
    defaults: &Config,
    out: &mut String,
    d: &mut Draft,
) {
    let k = &t.owner;
    let what = format!("{} in {}", shown_id(&k.id), k.file);
    // What the tier waits for: the one Kustomization's dependsOn, wave 0's, or under units
    // what the units' Kustomizations wait for besides one another.
    let (depends_on, what): (Vec<&ObjectId>, String) = match &t.layout {
        Layout::Units { members, .. } => {
            let ids: BTreeSet<&ObjectId> = members.iter().map(|m| &m.id).collect();
            let outside: BTreeSet<&ObjectId> = members
                .iter()
                .flat_map(|m| m.depends_on.iter())
                .filter(|d| !ids.contains(d))
                .collect();
            (
                outside.into_iter().collect(),
                format!("the unit Kustomizations of {}", t.dir),
            )
        }
        _ => (k.depends_on.iter().collect(), what),
    };
    let upstream: Vec<String> = depends_on.iter().map(|o| o.name.clone()).collect();
    let cross: Vec<String> = depends_on
        .iter()
        .copied()
        .filter(|o| o.namespace != k.id.namespace)
        .map(shown_id)
        .collect();
    let list = if upstream.is_empty() {
        "[]".to_string()
    } else {
        format!(
            "[{}]",
            upstream
                .iter()
                .map(|u| yaml::scalar(&json!(u)))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    out.push_str(&format!(
        "{}  upstream: {list}\n",
        comment(
            "  ",
            &format!(
                "What {} waits for: the dependsOn of {what}.",
                if matches!(t.layout, Layout::Units { .. }) {
                    "a unit without dependencies"
                } else {
                    "wave 0"
                }
            )
        )
    ));
    d.found.push(Found {
        setting: "waves.upstream".into(),
        value: list,
        why: format!("the dependsOn of {what}"),
    });
    if !cross.is_empty() {
        d.notes.push(format!("waves.upstream names Kustomizations of another namespace ({}); the waves depend on them in waves.namespace: check the names", cross.join(", ")));
    }
    let prefix = match &t.layout {
        Layout::Flat => None,
        Layout::Waves { prefix } => Some(("namePrefix", prefix, &defaults.waves.name_prefix)),
        Layout::Units { prefix, .. } => {
            Some(("unitNamePrefix", prefix, &defaults.waves.unit_name_prefix))
        }
    };
    if let Some((key, prefix, default)) = prefix.filter(|(_, p, d)| p != d) {
        let why = format!("the name of {} in {}", shown_id(&k.id), k.file);
        out.push_str(&format!(
            "{}  {key}: {}\n",
            comment("  ", &format!("From {why}.")),
            yaml::scalar(&json!(prefix))
        ));
        d.found.push(Found {
            setting: format!("waves.{key}"),
            value: prefix.clone(),
            why: format!("{why} (the default is {default})"),
        });
    }
    let namespace = Some(k.id.namespace.as_str()).filter(|n| !n.is_empty());
    if let Some(ns) = namespace.filter(|n| *n != defaults.waves.namespace) {
        out.push_str(&format!(
            "{}  namespace: {}\n",
            comment("  ", &format!("The namespace of {what}.")),
            yaml::scalar(&json!(ns))
        ));
        d.found.push(Found {
            setting: "waves.namespace".into(),
            value: ns.to_string(),
            why: format!("the namespace of {what}"),
        });
    }
    // The spec: each key as written that differs from the default, and `null` for a default
    // the Kustomization does without.
    let written = t
        .written
        .get("spec")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    // `wait` and `timeout` make a wave a health gate (the next wave starts once it is Ready,
    // and with `wait: true` Ready means healthy): the defaults stay, whatever the one
    // Kustomization did, and a difference is said.
    const GATING: [&str; 2] = ["wait", "timeout"];
    let mut spec = Map::new();
    for (key, value) in &written {
        if matches!(key.as_str(), "path" | "dependsOn") || GATING.contains(&key.as_str()) {
            continue;
        }
        if defaults.waves.spec.get(key) != Some(value) {
            spec.insert(key.clone(), value.clone());
        }
    }
    let mut dropped = Vec::new();
    for key in defaults.waves.spec.keys() {
        if !written.contains_key(key) && !GATING.contains(&key.as_str()) {
            spec.insert(key.clone(), Value::Null);
            dropped.push(key.clone());
        }
    }
    let kept: Vec<String> = GATING
        .iter()
        .filter(|key| written.get(**key) != defaults.waves.spec.get(**key))
        .filter_map(|key| {
            let default = defaults.waves.spec.get(*key)?;
            Some(format!("{key}: {}", yaml::scalar(default)))
        })
        .collect();
    if !kept.is_empty() {
        d.notes.push(format!(
            "waves.spec: {} kept as fluxwave's default, unlike {what}: they make each wave a health gate, so the next wave starts once it is healthy (set them in waves.spec to have the waves do as {what} did)",
            kept.join(", ")
        ));
    }
    if !spec.is_empty() {
        let mut said = format!("The spec of {what} where it differs from fluxwave's defaults");
        if !dropped.is_empty() {
            said.push_str(&format!(
                "; `null` leaves out a default it does not set ({})",
                dropped.join(", ")
            ));
        }
        said.push('.');
        out.push_str(&comment("  ", &said));
        out.push_str("  spec:\n");
        for line in yaml::emit(&Value::Object(spec.clone())).lines() {
            out.push_str("    ");
            out.push_str(line);
            out.push('\n');
        }
        let keys: Vec<&String> = spec.keys().collect();
        d.found.push(Found {
            setting: "waves.spec".into(),
            value: keys
                .iter()
                .map(|k| k.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            why: format!("the spec of {what}"),
        });
    }
    // Decryption an environment's patch gives the Kustomization.
    if written.contains_key("decryption") {
        return;
    }
    let patched = inventories.iter().find_map(|inv| {
        let built = inv.owners.get(&k.id)?;
        let dec = built.object.pointer("/spec/decryption")?.clone();
        Some((inv.env.clone(), inv.env_path.clone(), dec))
    });
    match patched {
        Some((env, env_path, dec)) => {
            if dec != defaults.waves.decryption && dec.is_object() {
                out.push_str(&format!(
                    "{}  decryption:\n",
                    comment(
                        "  ",
                        &format!(
                            "The decryption environment `{env}` ({env_path}) patches onto {}.",
                            shown_id(&k.id)
                        )
                    )
                ));
                for line in yaml::emit(&dec).lines() {
                    out.push_str("    ");
                    out.push_str(line);
                    out.push('\n');
                }
                d.found.push(Found {
                    setting: "waves.decryption".into(),
                    value: serde_json::to_string(&dec).unwrap_or_default(),
                    why: format!("the patch of environment `{env}` ({env_path})"),
                });
            }
        }
        None => {
            // No environment decrypts it: a default SOPS patch would name a Secret the
            // cluster may not have, and kustomize-controller fails a Kustomization whose
            // decryption Secret it cannot read.
            let why = format!("no environment gives {} spec.decryption", shown_id(&k.id));
            out.push_str(&format!(
                "{}  decryption: null\n",
                comment(
                    "  ",
                    &format!("No decryption patch on the waves: {why}. Set the provider and its Secret here once the app tier holds SOPS files.")
                )
            ));
            d.found.push(Found {
                setting: "waves.decryption".into(),
                value: "null".into(),
                why,
            });
        }
    }
}

/// The units of a flat (or grouped) app tier and their files: see the module's rules.
fn flat_units(
    root: &Path,
    tree: &FileTree,
    found: &AppTierFound,
    notes: &mut Vec<String>,
) -> Result<BTreeMap<String, Vec<String>>> {
    let dir = found.dir.as_str();
    // The folders Flux applies as units' own (under `topology: units`); any other folder
    // but a wave's is none of the app tier's, as `plan` reads it.
    let unit_folders: BTreeSet<&str> = match &found.layout {
        Layout::Units { members, .. } => members
            .iter()
            .filter_map(|m| m.path.rsplit('/').next())
            .collect(),
        _ => BTreeSet::new(),
    };
    let mut foreign: BTreeSet<String> = BTreeSet::new();
    let tier = AppTier::scan(root, dir)?;
    let mut units: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut rest: Vec<(String, String)> = Vec::new();
    for f in &tier.files {
        let path = tier.path_of(&f.name, f.location);
        let folder = match f.location {
            Location::Flat => None,
            Location::Dir(i) => tier.dirs.get(i as usize),
        };
        if let Some(folder) = folder.filter(|g| g.wave.is_none()) {
            if unit_folders.contains(folder.name.as_str()) {
                units.entry(folder.name.clone()).or_default().push(path);
            } else {
                foreign.insert(tier.dir_of(&folder.name));
            }
            continue;
        }
        let stem = f.name.split('.').next().unwrap_or("").to_string();
        let primary = !f.name.contains(".sops.") && holds_more_than_config(tree, &path);
        if primary && is_dns_label(&stem) {
            units.entry(stem).or_default().push(path);
        } else {
            rest.push((f.name.clone(), path));
        }
    }
    for f in foreign {
        notes.push(format!(
            "{f}: a folder no Flux Kustomization of the app tier applies; its files are no unit's (plan leaves them alone)"
        ));
    }
    // What a primary file does not name is owned by its longest prefix, else its own unit.
    rest.sort_by_key(|(name, _)| (name.len(), name.clone()));
    for (name, path) in rest {
        match longest_owner(&name, |u| units.contains_key(u)) {
            Some(o) => units.entry(o).or_default().push(path),
            None => {
                let stem = name.split('.').next().unwrap_or("").to_string();
                if is_dns_label(&stem) {
                    units.entry(stem).or_default().push(path);
                } else {
                    notes.push(format!("{path}: its name `{stem}` is not a DNS-1123 label, so it names no unit; rename it after the unit it belongs to"));
                }
            }
        }
    }
    Ok(units)
}

/// The unit that owns file `name` by its name, as `plan` assigns files (`apptier::owner_of`):
/// the longest prefix that is a unit, followed by `-` or `.`.
fn longest_owner(name: &str, is_unit: impl Fn(&str) -> bool) -> Option<String> {
    name.char_indices()
        .rev()
        .filter(|&(i, c)| i > 0 && (c == '-' || c == '.'))
        .find(|(i, _)| is_unit(&name[..*i]))
        .map(|(i, _)| name[..i].to_string())
}

/// Whether the manifest holds an object other than a Secret or a ConfigMap (or cannot be
/// read, which `check` reports): a file that is a unit of its own.
fn holds_more_than_config(tree: &FileTree, path: &str) -> bool {
    let Some(text) = tree.read(path) else {
        return true;
    };
    match yaml::parse_all(path, &text) {
        Ok(docs) => docs.iter().any(|d| {
            !matches!(
                d.get("kind").and_then(Value::as_str),
                Some("Secret" | "ConfigMap")
            )
        }),
        Err(_) => true,
    }
}

/// A commented `units:` for the app tier's units that have no ServiceDefinition.
fn units_hint(
    root: &Path,
    catalog_dir: &str,
    apps: &str,
    units: &BTreeMap<String, Vec<String>>,
    text: &mut String,
    notes: &mut Vec<String>,
) {
    let services = match crate::catalog::load(root, catalog_dir, &|_| None) {
        Ok(s) => s,
        Err(_) => {
            notes.push(format!("units: not looked for, as {catalog_dir}/ does not load (`fluxwave waves` says why)"));
            return;
        }
    };
    if services.is_empty() {
        let names: Vec<&str> = units.keys().map(String::as_str).collect();
        if names.is_empty() {
            return;
        }
        notes.push(format!(
            "catalog: {catalog_dir}/ holds no ServiceDefinition, so no file of the app tier has a unit yet; `fluxwave init --catalog` drafts one per unit ({})",
            names.join(", ")
        ));
        text.push_str(&comment("", &format!("No ServiceDefinition in {catalog_dir}/ yet: `fluxwave init --catalog` drafts one per unit of the app tier ({}), with its dependencies where a dependsOn shows them.", names.join(", "))));
        return;
    }
    let mut nodes: HashMap<String, ()> = HashMap::new();
    for s in &services {
        nodes.insert(s.name.clone(), ());
        for dep in &s.dependencies {
            if dep.to.ends_with("-db") {
                nodes.insert(dep.to.clone(), ());
            }
        }
    }
    let mut hint = String::new();
    for (unit, files) in units {
        if nodes.contains_key(unit) {
            continue;
        }
        let name = files
            .first()
            .map(|f| f.rsplit('/').next().unwrap_or(f).to_string())
            .unwrap_or_default();
        let now = longest_owner(&name, |n| nodes.contains_key(n));
        let listed = files.join(", ");
        let (said, anchor) = match &now {
            Some(o) => (
                format!("{listed}: unit `{unit}` has no ServiceDefinition; by its name `{o}` owns it now, in `{o}`'s wave"),
                o.clone(),
            ),
            None => (
                format!("{listed}: unit `{unit}` has no ServiceDefinition and no unit owns it, so plan and apply stop on it"),
                "<service>".to_string(),
            ),
        };
        notes.push(format!(
            "units: {said}; init cannot know its place: declare it in {catalog_dir}/{unit}.yaml (its dependencies only) or under units: (see the hint in fluxwave.yaml)"
        ));
        hint.push_str(&format!(
            "#   # {}\n#   - name: {unit}\n#     anchor: {anchor}{}\n#     above: true\n",
            one_line(&listed),
            if now.is_some() {
                "    # guessed from its name: the node whose wave it takes"
            } else {
                "    # the node whose wave it takes"
            }
        ));
    }
    if !hint.is_empty() {
        text.push_str(&format!(
            "{}# units:\n{hint}",
            comment("", &format!("Units of the app tier ({apps}) that have no ServiceDefinition. init cannot know where they go: give each the anchor whose wave it takes (above: true for one wave above it), then uncomment; or give it a ServiceDefinition with its dependencies in {catalog_dir}/."))
        ));
    }
}

/// One dependency-only ServiceDefinition per unit (see the module's rules).
fn draft_catalog(
    envs: &[Environment],
    catalog_dir: &str,
    tier: Option<&AppTierFound>,
    units: &BTreeMap<String, Vec<String>>,
    inventories: &[Inventory],
) -> Vec<DraftService> {
    // Every Flux Kustomization, by id, the first build's.
    let mut owners: BTreeMap<&ObjectId, &Owner> = BTreeMap::new();
    for inv in inventories {
        for (id, o) in &inv.owners {
            owners.entry(id).or_insert(o);
        }
    }
    // unit -> (what it was drafted from, its Kustomization, if it has one of its own)
    let mut drafted: BTreeMap<String, (String, Option<&Owner>)> = BTreeMap::new();
    if let Some(t) = tier {
        for (unit, files) in units {
            let own = owners
                .values()
                .find(|o| o.path == format!("{}/{unit}", t.dir))
                .copied();
            drafted.insert(unit.clone(), (files.join(", "), own));
        }
    } else {
        for o in owners.values() {
            let file_name = o.file.rsplit('/').next().unwrap_or("");
            // The Kustomizations an environment's own folder declares apply the apps; they
            // are not apps themselves.
            let in_env = envs
                .iter()
                .any(|e| o.file.starts_with(&format!("{}/", e.path)));
            if o.parent.is_none() || in_env || !matches!(file_name, "ks.yaml" | "ks.yml") {
                continue;
            }
            if !is_dns_label(&o.id.name) || drafted.contains_key(&o.id.name) {
                continue;
            }
            drafted.insert(
                o.id.name.clone(),
                (
                    format!("Flux Kustomization {} in {}", shown_id(&o.id), o.file),
                    Some(*o),
                ),
            );
        }
    }
    let unit_of = |id: &ObjectId| -> Option<String> {
        drafted
            .iter()
            .find(|(_, (_, o))| o.is_some_and(|o| &o.id == id))
            .map(|(u, _)| u.clone())
    };
    let mut out = Vec::new();
    for (unit, (from, own)) in &drafted {
        // `<svc>-db` beside `<svc>` is its database: a dependency, not a definition.
        if let Some(svc) = unit.strip_suffix("-db") {
            if drafted.contains_key(svc) && tier.is_some() {
                continue;
            }
        }
        let mut deps: Vec<(String, String)> = Vec::new();
        let mut left_out: Vec<String> = Vec::new();
        if let Some(o) = own {
            for dep in &o.depends_on {
                match unit_of(dep) {
                    Some(u) if u != *unit => deps.push((
                        u,
                        format!("dependsOn {} of {}", shown_id(dep), shown_id(&o.id)),
                    )),
                    _ => left_out.push(shown_id(dep)),
                }
            }
        }
        let db = format!("{unit}-db");
        if tier.is_some() && drafted.contains_key(&db) && !deps.iter().any(|(d, _)| *d == db) {
            let files = drafted.get(&db).map(|(f, _)| f.clone()).unwrap_or_default();
            deps.push((db.clone(), format!("its database: {files}")));
        }
        let mut text = comment(
            "",
            &format!("Drafted by `fluxwave init --catalog` from {from}."),
        );
        if deps.is_empty() && left_out.is_empty() {
            let none = if own.is_some() {
                "Its Kustomization has no dependsOn"
            } else {
                "No dependsOn to read"
            };
            text.push_str(&comment("", &format!("{none}: add what must be healthy before `{unit}` starts (`- to: <service>`); it sets the unit's wave.")));
            // A unit in wave N > 0 of a tier fluxwave split waited for something below it.
            let wave = tier
                .and_then(|t| from.strip_prefix(&format!("{}/wave-", t.dir)))
                .and_then(|rest| rest.split('/').next())
                .and_then(config::wave_number)
                .filter(|n| *n > 0);
            if let Some(n) = wave {
                text.push_str(&comment("", &format!("It is in wave {n} today, so it waits for something of the waves below: without a dependency, apply moves it to wave 0.")));
            }
        }
        if !left_out.is_empty() {
            text.push_str(&comment("", &format!(
                "Left out: dependsOn {} (not a unit of the app tier; waves.upstream orders the waves after the platform).",
                left_out.join(", ")
            )));
        }
        text.push_str(&format!(
            "apiVersion: fluxwave.dev/v1alpha1\nkind: ServiceDefinition\nmetadata:\n  name: {unit}\nspec:\n"
        ));
        if deps.is_empty() {
            text.push_str("  dependencies: []\n");
        } else {
            text.push_str("  dependencies:\n");
            for (to, why) in &deps {
                text.push_str(&format!("    - to: {to}    # {}\n", one_line(why)));
            }
        }
        let why = if deps.is_empty() {
            format!("{from}; no dependencies")
        } else {
            format!(
                "{from}; depends on {}",
                deps.iter()
                    .map(|(d, _)| d.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        out.push(DraftService {
            name: unit.clone(),
            file: format!("{catalog_dir}/{unit}.yaml"),
            text,
            why,
        });
    }
    out
}

/// Checks that the drafted fluxwave.yaml reads back as it means: init never writes a file
/// `Config::load` refuses.
pub fn reads_back(text: &str) -> Result<Config> {
    Config::parse(&Text::new(text.to_string()))
}

/// The name of the config file, for messages.
pub const CONFIG_FILE: &str = config::FILE;
