//! The app tier init finds: the folder of manifests a Flux Kustomization of an environment's
//! build applies, every object of it written directly in that folder (the one named `apps`,
//! else the only one whose folder is named `apps`), or a folder already split into waves or
//! units. It gives `apps`, `topology` and `clusters.base`.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{json, Value};

use crate::config::{self, is_dns_label};
use crate::flux::discover::{self, Environment};
use crate::flux::inventory::{Inventory, Owner};
use crate::flux::Kustomization;
use crate::kustomize::object::ObjectId;
use crate::tree::FileTree;
use crate::yaml;

use super::comment::{comment, one_line, shown_id};
use super::{Draft, Found};

/// The app tier init found: its folder and the Flux Kustomization that applies it.
pub(super) struct AppTierFound<'a> {
    pub dir: String,
    pub owner: &'a Owner,
    /// Its document as written in its file.
    pub written: Value,
    /// Number of files it applies.
    pub files: usize,
    pub layout: Layout<'a>,
}

/// How the app tier is split into Flux Kustomizations today.
pub(super) enum Layout<'a> {
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

/// A Kustomization named `name` at `path`: at `<dir>/<folder>` named `<prefix><folder>` (a
/// unit's) or `<prefix><N>` at `<dir>/wave-<N>` (a wave's): (dir, prefix, wave).
fn group_of(path: &str, name: &str) -> Option<(String, String, Option<usize>)> {
    let (dir, folder) = path.rsplit_once('/')?;
    let wave = folder.strip_prefix("wave-").and_then(config::wave_number);
    let suffix = match wave {
        Some(n) => n.to_string(),
        None => folder.to_string(),
    };
    let prefix = name.strip_suffix(&suffix)?;
    let valid = match wave {
        Some(_) => is_dns_label(&format!("{prefix}0")),
        None => is_dns_label(&format!("{prefix}a")) && is_dns_label(folder),
    };
    valid.then(|| (dir.to_string(), prefix.to_string(), wave))
}

/// The folder `file` is in ("" for the root).
pub(super) fn parent_dir(file: &str) -> String {
    file.rsplit_once('/')
        .map_or(String::new(), |(d, _)| d.to_string())
}

/// The app tier: see the module's rules. Notes say why none was taken.
pub(super) fn find<'a>(
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
    let (flat, elsewhere) = folders_applied(envs, inventories, notes);
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
        notes.push(none_taken(&flat, &elsewhere));
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

/// A Kustomization of an environment's build (no environment's root) that applies a folder,
/// with the number of files it applies.
type Applying<'a> = Vec<(&'a Owner, usize)>;

/// The Kustomizations below the environments' roots, each once, that apply a folder of
/// manifests (every object written directly in their folder), and those whose objects are
/// not all in their folder, with one file that is not. An app tier whose build fails shows
/// nothing of its folder: a note says why.
fn folders_applied<'a>(
    envs: &[Environment],
    inventories: &'a [Inventory],
    notes: &mut Vec<String>,
) -> (Applying<'a>, Vec<(&'a Owner, String)>) {
    // The files each Kustomization applies, over every environment.
    let mut files: HashMap<&ObjectId, BTreeSet<&str>> = HashMap::new();
    for inv in inventories {
        for entry in inv.objects.values() {
            files.entry(&*entry.owner).or_default().insert(&entry.file);
        }
    }
    let mut seen = BTreeSet::new();
    let mut flat = Vec::new();
    let mut elsewhere = Vec::new();
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
    (flat, elsewhere)
}

/// Why no app tier was taken: an `apps` Kustomization applies objects outside its folder, or
/// none is named `apps` (with the folders of manifests found, when they are a few).
fn none_taken(flat: &[(&Owner, usize)], elsewhere: &[(&Owner, String)]) -> String {
    if let Some((o, f)) = elsewhere
        .iter()
        .find(|(o, _)| o.id.name == "apps" || o.path.ends_with("apps"))
    {
        return format!(
            "apps: not set. Flux Kustomization {} ({}) applies {}, whose objects are not all written in that folder ({f}); fluxwave's app tier is a folder of manifests",
            shown_id(&o.id),
            o.file,
            o.path
        );
    }
    let candidates: Vec<String> = flat
        .iter()
        .map(|(o, _)| format!("{} ({})", o.path, shown_id(&o.id)))
        .collect();
    if candidates.is_empty() || candidates.len() > 8 {
        "apps: not set. No Flux Kustomization named `apps` applies a folder of manifests"
            .to_string()
    } else {
        format!(
            "apps: not set. No Flux Kustomization named `apps` applies a folder of manifests; folders of manifests found: {}. Set `apps` to the app tier's",
            candidates.join(", ")
        )
    }
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
        if let Some((dir, prefix, wave)) = group_of(&o.path, &o.id.name) {
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

/// `apps` (the app tier's folder) and, when it is split into units already, `topology`,
/// written to `text`.
pub(super) fn apps_settings(t: &AppTierFound, text: &mut String, d: &mut Draft) {
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

/// `clusters.base`, the folder the app tier's Kustomization is written in, written to
/// `clusters`; unless that folder is the repository's root, an environment's or inside the
/// app tier (`apps`), where apply could not keep the wave Kustomizations: then a note says
/// what to do.
pub(super) fn base_setting(
    tree: &FileTree,
    t: &AppTierFound,
    envs: &[Environment],
    apps: &str,
    clusters: &mut String,
    d: &mut Draft,
) {
    let base = parent_dir(&t.owner.file);
    let env_folder = envs.iter().find(|e| e.path == base);
    let inside_apps = base == apps || base.starts_with(&format!("{apps}/"));
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
        return;
    }
    let why = format!("where {} is written", t.owner.file);
    let instead = if matches!(t.layout, Layout::Flat) {
        format!(", in place of {}", shown_id(&t.owner.id))
    } else {
        String::new()
    };
    clusters.push_str(&format!(
        "{}  base: {}\n",
        comment("  ", &format!("The folder of shared Flux objects, {why}: apply keeps the app tier's Flux Kustomizations there (one per wave, or per unit){instead}.")),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::init::fixture::{built, config_map, kustomization};

    #[test]
    fn a_wave_or_unit_kustomization_is_named_for_its_folder_after_one_prefix() {
        let group =
            |dir: &str, prefix: &str, wave| Some((dir.to_string(), prefix.to_string(), wave));
        assert_eq!(
            group_of("apps/wave-2", "apps-wave-2"),
            group("apps", "apps-wave-", Some(2))
        );
        assert_eq!(
            group_of("k/apps/sonarr", "app-sonarr"),
            group("k/apps", "app-", None)
        );
        // The name does not end with the folder's, or the prefix makes no DNS-1123 label.
        assert_eq!(group_of("apps/sonarr", "radarr"), None);
        assert_eq!(group_of("apps/wave-0", "Apps-0"), None);
        assert_eq!(group_of("apps/Sonarr", "x-Sonarr"), None);
        // A folder at the root is in no folder of a tier.
        assert_eq!(group_of("sonarr", "sonarr"), None);
    }

    #[test]
    fn the_folder_of_a_file_is_the_root_for_a_file_at_the_root() {
        assert_eq!(parent_dir("clusters/prod/apps.yaml"), "clusters/prod");
        assert_eq!(parent_dir("apps.yaml"), "");
    }

    /// A repository whose `apps` Kustomization (in clusters/prod) applies the folder apps.
    fn flat_tier(name: &str) -> Vec<(String, String)> {
        vec![
            (
                "clusters/prod/kustomization.yaml".into(),
                "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- flux-system\n- apps.yaml\n".into(),
            ),
            (
                "clusters/prod/apps.yaml".into(),
                kustomization(name, "flux-system", "apps", &["infra"], ""),
            ),
            (
                "apps/kustomization.yaml".into(),
                "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- a.yaml\n- b.yaml\n".into(),
            ),
            ("apps/a.yaml".into(), config_map("a")),
            ("apps/b.yaml".into(), config_map("b")),
        ]
    }

    fn borrowed(files: &[(String, String)]) -> Vec<(&str, &str)> {
        files
            .iter()
            .map(|(p, t)| (p.as_str(), t.as_str()))
            .collect()
    }

    #[test]
    fn the_kustomization_named_apps_gives_the_app_tier() {
        let files = flat_tier("apps");
        let (tree, envs, inventories) = built(&borrowed(&files));
        let mut notes = Vec::new();
        let t = find(&tree, &envs, &inventories, &mut notes).unwrap();
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!((t.dir.as_str(), t.files), ("apps", 2));
        assert!(matches!(t.layout, Layout::Flat));
        assert_eq!(t.owner.file, "clusters/prod/apps.yaml");
        // As written: the path as the file spells it.
        assert_eq!(t.written["spec"]["path"], "./apps");

        let mut d = Draft::default();
        let mut text = String::new();
        apps_settings(&t, &mut text, &mut d);
        assert!(text.ends_with("apps: apps\n"), "{text}");
        assert_eq!(d.found.len(), 1);
        assert!(
            d.found[0]
                .why
                .contains("flux-system/apps in clusters/prod/apps.yaml"),
            "{:?}",
            d.found
        );
    }

    #[test]
    fn a_tier_written_in_an_environments_folder_leaves_clusters_base_unset() {
        let files = flat_tier("apps");
        let (tree, envs, inventories) = built(&borrowed(&files));
        let t = find(&tree, &envs, &inventories, &mut Vec::new()).unwrap();
        let (mut clusters, mut d) = (String::new(), Draft::default());
        base_setting(&tree, &t, &envs, "apps", &mut clusters, &mut d);
        assert!(clusters.starts_with("  # base: not set."), "{clusters}");
        assert!(d.found.is_empty());
        assert!(
            d.notes[0].contains("is written in the folder of environment `prod`"),
            "{:?}",
            d.notes
        );
    }

    #[test]
    fn without_an_apps_kustomization_the_folders_found_are_named() {
        let files = flat_tier("web");
        let (tree, envs, inventories) = built(&borrowed(&files));
        let mut notes = Vec::new();
        // The folder is named apps: it is the tier, whatever its Kustomization's name.
        assert!(find(&tree, &envs, &inventories, &mut notes).is_some());
        let files: Vec<(String, String)> = flat_tier("web")
            .into_iter()
            .map(|(p, t)| (p.replace("apps", "site"), t.replace("apps", "site")))
            .collect();
        let (tree, envs, inventories) = built(&borrowed(&files));
        assert!(find(&tree, &envs, &inventories, &mut notes).is_none());
        assert_eq!(
            notes,
            ["apps: not set. No Flux Kustomization named `apps` applies a folder of manifests; folders of manifests found: site (flux-system/web). Set `apps` to the app tier's"]
        );
    }

    #[test]
    fn wave_kustomizations_side_by_side_are_a_tier_split_into_waves() {
        let waves = format!(
            "{}---\n{}",
            kustomization(
                "apps-wave-1",
                "flux-system",
                "apps/wave-1",
                &["apps-wave-0"],
                ""
            ),
            kustomization("apps-wave-0", "flux-system", "apps/wave-0", &[], "")
        );
        let files = [
            (
                "clusters/prod/kustomization.yaml",
                "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- flux-system\n- waves.yaml\n",
            ),
            ("clusters/prod/waves.yaml", waves.as_str()),
            ("apps/wave-0/a.yaml", &config_map("a")),
            ("apps/wave-1/b.yaml", &config_map("b")),
            ("apps/wave-1/c.yaml", &config_map("c")),
        ];
        let (tree, envs, inventories) = built(&files);
        let mut notes = Vec::new();
        let t = find(&tree, &envs, &inventories, &mut notes).unwrap();
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!((t.dir.as_str(), t.files), ("apps", 3));
        assert!(matches!(&t.layout, Layout::Waves { prefix } if prefix == "apps-wave-"));
        // Wave 0's Kustomization stands for the tier.
        assert_eq!(t.owner.id.name, "apps-wave-0");
    }
}
