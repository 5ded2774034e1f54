//! The units of the app tier, as `plan` assigns files: in a flat app tier a unit is a file
//! holding more than Secrets and ConfigMaps (not SOPS-encrypted), named for it, and owns by
//! name what starts with its name; a folder `<apps>/<unit>` applied by a unit's own
//! Kustomization is a unit. Without `--catalog`, a commented `units:` hint places the units
//! that have no ServiceDefinition.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use serde_json::Value;

use crate::config::is_dns_label;
use crate::error::Result;
use crate::repo::apptier::{AppTier, Location};
use crate::tree::FileTree;
use crate::yaml;

use super::app_tier::{AppTierFound, Layout};
use super::comment::{comment, one_line};

/// The units of a flat (or grouped) app tier and their files: see the module's rules.
pub(super) fn flat_units(
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
    place_by_name(rest, &mut units, notes);
    Ok(units)
}

/// Gives each of `rest` (file name, path), the files that name no unit of their own, to
/// the unit its name starts with (the longest), else to a unit of its own name; a name that
/// is no DNS-1123 label names none, and a note says so.
fn place_by_name(
    mut rest: Vec<(String, String)>,
    units: &mut BTreeMap<String, Vec<String>>,
    notes: &mut Vec<String>,
) {
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
pub(super) fn units_hint(
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
        let (note, entry) = unplaced(catalog_dir, unit, files, |n| nodes.contains_key(n));
        notes.push(note);
        hint.push_str(&entry);
    }
    if !hint.is_empty() {
        text.push_str(&format!(
            "{}# units:\n{hint}",
            comment("", &format!("Units of the app tier ({apps}) that have no ServiceDefinition. init cannot know where they go: give each the anchor whose wave it takes (above: true for one wave above it), then uncomment; or give it a ServiceDefinition with its dependencies in {catalog_dir}/."))
        ));
    }
}

/// For `unit` (holding `files`) that has no ServiceDefinition: the note that says where it
/// goes now (the node that owns it by its name, if one does: `is_node`), and its commented
/// entry of the `units:` hint, anchored to that node or to a placeholder.
fn unplaced(
    catalog_dir: &str,
    unit: &str,
    files: &[String],
    is_node: impl Fn(&str) -> bool,
) -> (String, String) {
    let name = files
        .first()
        .map(|f| f.rsplit('/').next().unwrap_or(f).to_string())
        .unwrap_or_default();
    let now = longest_owner(&name, is_node);
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
    let note = format!(
        "units: {said}; init cannot know its place: declare it in {catalog_dir}/{unit}.yaml (its dependencies only) or under units: (see the hint in fluxwave.yaml)"
    );
    let entry = format!(
        "#   # {}\n#   - name: {unit}\n#     anchor: {anchor}{}\n#     above: true\n",
        one_line(&listed),
        if now.is_some() {
            "    # guessed from its name: the node whose wave it takes"
        } else {
            "    # the node whose wave it takes"
        }
    );
    (note, entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_owned_by_the_longest_unit_its_name_starts_with() {
        let units = ["sonarr", "sonarr-config"];
        let is_unit = |n: &str| units.contains(&n);
        assert_eq!(
            longest_owner("sonarr-config-secret.yaml", is_unit).as_deref(),
            Some("sonarr-config")
        );
        assert_eq!(
            longest_owner("sonarr.sops.yaml", is_unit).as_deref(),
            Some("sonarr")
        );
        // Only at a `-` or a `.`: a longer word is another name.
        assert_eq!(longest_owner("sonarrx.yaml", is_unit), None);
        assert_eq!(longest_owner("radarr.yaml", is_unit), None);
    }

    #[test]
    fn files_naming_no_unit_make_one_of_their_name_shortest_first() {
        let mut units = BTreeMap::new();
        let mut notes = Vec::new();
        let rest = [
            ("media-db-secret.yaml", "apps/media-db-secret.yaml"),
            ("media.sops.yaml", "apps/media.sops.yaml"),
            ("Bad_Name.yaml", "apps/Bad_Name.yaml"),
        ]
        .map(|(n, p)| (n.to_string(), p.to_string()))
        .to_vec();
        place_by_name(rest, &mut units, &mut notes);
        assert_eq!(
            units,
            BTreeMap::from([(
                "media".to_string(),
                vec![
                    "apps/media.sops.yaml".to_string(),
                    "apps/media-db-secret.yaml".to_string()
                ]
            )])
        );
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].starts_with("apps/Bad_Name.yaml: its name `Bad_Name` is not a DNS-1123 label"),
            "{notes:?}"
        );
    }

    #[test]
    fn a_unit_without_a_definition_is_anchored_to_the_node_that_owns_it_by_name() {
        let files = ["apps/gitea-actions.yaml".to_string()];
        let (note, entry) = unplaced("catalog", "gitea-actions", &files, |n| n == "gitea");
        assert!(
            note.contains("by its name `gitea` owns it now, in `gitea`'s wave")
                && note.contains("declare it in catalog/gitea-actions.yaml"),
            "{note}"
        );
        assert_eq!(
            entry,
            "#   # apps/gitea-actions.yaml\n#   - name: gitea-actions\n#     anchor: gitea    # guessed from its name: the node whose wave it takes\n#     above: true\n"
        );
        let (note, entry) = unplaced("catalog", "gitea-actions", &files, |_| false);
        assert!(
            note.contains("no unit owns it, so plan and apply stop on it"),
            "{note}"
        );
        assert!(entry.contains("#     anchor: <service>    # the node whose wave it takes\n"));
    }
}
