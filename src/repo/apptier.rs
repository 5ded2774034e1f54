//! The app tier as it is on disk. A file is known by its name alone: the same name in two
//! places (flat and in a wave, or in two waves) is a problem, because ownership and the
//! generated kustomizations are keyed by file name.

use std::path::Path;

use crate::config::wave_number;
use crate::error::{Error, Result};
use crate::flux::emit::GENERATED_MARK;
use crate::fs::is_manifest;
use crate::kustomize::KUSTOMIZATION_FILES;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Location {
    Flat,
    /// In a group folder: `AppTier::dirs[i]`.
    Dir(u32),
}

#[derive(Debug, Clone)]
pub struct AppFile {
    pub name: String,
    pub location: Location,
}

#[derive(Debug, Clone, Default)]
pub struct AppTier {
    /// The app tier folder, relative to the repository root.
    pub dir: String,
    /// Every `*.yaml` / `*.yml` file but kustomizations, sorted by (name, location).
    pub files: Vec<AppFile>,
    /// The flat layout's own kustomization files, sorted (one, when the folder builds: see
    /// `kustomize::KUSTOMIZATION_FILES`).
    pub root_kustomizations: Vec<String>,
    /// The group folders (`wave-<N>`, `<unit>`), sorted by name.
    pub dirs: Vec<GroupDir>,
    /// Entries fluxwave does not manage and will not touch: other folders, links, names that
    /// are not UTF-8 (repository-relative paths).
    pub foreign: Vec<(String, &'static str)>,
}

/// A folder of the app tier that one generated Flux Kustomization builds, as it is on disk:
/// a wave's (`wave-<N>`) or a unit's (named after the unit).
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct GroupDir {
    pub name: String,
    /// N of a `wave-<N>` folder.
    pub wave: Option<usize>,
    /// Its kustomization files, sorted.
    pub kustomizations: Vec<String>,
    /// Its regular files that are neither manifests nor kustomizations (a README, a
    /// `.gitkeep`): not fluxwave's, so never removed, sorted.
    pub others: Vec<String>,
    /// What it holds that fluxwave does not read (links, folders), until `settle` says
    /// whether the folder is fluxwave's.
    foreign: Vec<(String, &'static str)>,
}

impl AppTier {
    pub fn scan(root: &Path, dir: &str) -> Result<AppTier> {
        let mut tier = AppTier {
            dir: dir.to_string(),
            ..AppTier::default()
        };
        let abs = root.join(dir);
        // Moves inside a linked app tier would rename files outside the repository.
        crate::fs::check_inside(root, dir)?;
        let entries = match std::fs::read_dir(&abs) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(tier),
            Err(e) => return Err(Error::io(&abs, e)),
        };
        let mut folders = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(&abs, e))?;
            let ft = entry.file_type().map_err(|e| Error::io(&entry.path(), e))?;
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                tier.foreign.push((
                    format!("{dir}/{}", entry.file_name().to_string_lossy()),
                    "name is not UTF-8",
                ));
                continue;
            };
            if ft.is_symlink() {
                tier.foreign
                    .push((format!("{dir}/{name}"), "symbolic link (not followed)"));
            } else if ft.is_dir() {
                folders.push((entry.path(), name));
            } else if KUSTOMIZATION_FILES.contains(&name.as_str()) {
                tier.root_kustomizations.push(name);
            } else if is_manifest(&name) {
                tier.files.push(AppFile {
                    name,
                    location: Location::Flat,
                });
            }
        }
        // Folders in name order, so that `Location::Dir` indices follow it.
        folders.sort_by(|a, b| a.1.cmp(&b.1));
        for (i, (path, name)) in folders.into_iter().enumerate() {
            let folder = tier.scan_dir(&path, dir, name, i)?;
            tier.dirs.push(folder);
        }
        // (name, location) pairs are unique: an unstable sort gives the same order, faster.
        tier.files
            .sort_unstable_by(|a, b| (&a.name, a.location).cmp(&(&b.name, b.location)));
        tier.root_kustomizations.sort();
        tier.foreign.sort();
        Ok(tier)
    }

    fn scan_dir(&mut self, abs: &Path, dir: &str, name: String, i: usize) -> Result<GroupDir> {
        let mut folder = GroupDir {
            wave: name.strip_prefix("wave-").and_then(wave_number),
            name,
            ..GroupDir::default()
        };
        let at = Location::Dir(u32::try_from(i).unwrap_or(u32::MAX));
        for entry in std::fs::read_dir(abs).map_err(|e| Error::io(abs, e))? {
            let entry = entry.map_err(|e| Error::io(abs, e))?;
            let ft = entry.file_type().map_err(|e| Error::io(&entry.path(), e))?;
            let inside = |n: &str| format!("{dir}/{}/{n}", folder.name);
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                let shown = inside(&entry.file_name().to_string_lossy());
                folder.foreign.push((shown, "name is not UTF-8"));
                continue;
            };
            if ft.is_symlink() {
                let shown = inside(&name);
                folder.foreign.push((shown, "symbolic link (not followed)"));
            } else if ft.is_dir() {
                let shown = inside(&name);
                folder.foreign.push((shown, "folder inside a group folder"));
            } else if KUSTOMIZATION_FILES.contains(&name.as_str()) {
                folder.kustomizations.push(name);
            } else if is_manifest(&name) {
                self.files.push(AppFile { name, location: at });
            } else {
                folder.others.push(name);
            }
        }
        folder.kustomizations.sort();
        folder.others.sort();
        Ok(folder)
    }

    /// Decides which folders are fluxwave's, once the units are known: a `wave-<N>` folder,
    /// a folder named after a unit (`is_unit`), or one whose kustomization fluxwave wrote.
    /// Any other folder is foreign, and the files in it are not the app tier's.
    pub fn settle(&mut self, root: &Path, is_unit: impl Fn(&str) -> bool) {
        let generated = |d: &GroupDir| {
            d.kustomizations.iter().any(|k| {
                let path = root.join(&self.dir).join(&d.name).join(k);
                crate::fs::read_regular(&path, k)
                    .ok()
                    .flatten()
                    .is_some_and(|b| b.starts_with(GENERATED_MARK.as_bytes()))
            })
        };
        let keep: Vec<bool> = self
            .dirs
            .iter()
            .map(|d| d.wave.is_some() || is_unit(&d.name) || generated(d))
            .collect();
        let mut renumber = Vec::with_capacity(keep.len());
        let mut next = 0u32;
        for &k in &keep {
            renumber.push(k.then_some(next));
            next += u32::from(k);
        }
        if keep.iter().any(|k| !k) {
            self.files.retain_mut(|f| match f.location {
                Location::Flat => true,
                Location::Dir(i) => match renumber[i as usize] {
                    Some(j) => {
                        f.location = Location::Dir(j);
                        true
                    }
                    None => false,
                },
            });
        }
        let dirs = std::mem::take(&mut self.dirs);
        for (mut d, k) in dirs.into_iter().zip(keep) {
            if k {
                self.foreign.append(&mut d.foreign);
                self.dirs.push(d);
            } else {
                self.foreign.push((
                    format!("{}/{}", self.dir, d.name),
                    "folder that is not a wave's or a unit's",
                ));
            }
        }
        // Renumbering keeps the folders' order, so the files stay sorted.
        self.foreign.sort();
    }

    /// Repository-relative path of a file at a location.
    pub fn path_of(&self, name: &str, location: Location) -> String {
        // Built by hand: `format!` was 6% of `plan`, which makes two paths per file.
        let folder = match location {
            Location::Flat => "",
            Location::Dir(i) => self.dirs[i as usize].name.as_str(),
        };
        self.path_in(folder, name)
    }

    /// Repository-relative path of a file in group folder `folder` (the app tier itself for
    /// an empty one).
    pub fn path_in(&self, folder: &str, name: &str) -> String {
        let mut s = String::with_capacity(self.dir.len() + folder.len() + name.len() + 2);
        s.push_str(&self.dir);
        s.push('/');
        if !folder.is_empty() {
            s.push_str(folder);
            s.push('/');
        }
        s.push_str(name);
        s
    }

    /// Repository-relative path of group folder `folder`.
    pub fn dir_of(&self, folder: &str) -> String {
        format!("{}/{folder}", self.dir)
    }

    /// Whether the tier has been migrated (any group folder exists).
    pub fn is_grouped(&self) -> bool {
        !self.dirs.is_empty()
    }
}

/// The unit that owns a file: the longest node name that is a prefix of the file name and is
/// followed there by `-` or `.` (`gitea-actions-runner-secret.sops.yaml` -> `gitea-actions`).
pub fn owner_of<'a, T, S: std::hash::BuildHasher>(
    file: &str,
    nodes: &'a std::collections::HashMap<String, T, S>,
) -> Option<&'a T> {
    file.char_indices()
        .rev()
        .filter(|&(i, c)| i > 0 && (c == '-' || c == '.'))
        .find_map(|(i, _)| nodes.get(&file[..i]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn longest_prefix_followed_by_dash_or_dot() {
        let nodes: HashMap<String, &str> = [
            "gitea",
            "gitea-actions",
            "nextcloud",
            "nextcloud-db",
            "plex",
        ]
        .iter()
        .map(|n| (n.to_string(), *n))
        .collect();
        let owner = |f: &str| owner_of(f, &nodes).copied();
        assert_eq!(
            owner("gitea-actions-runner-secret.sops.yaml"),
            Some("gitea-actions")
        );
        assert_eq!(owner("gitea-actions.yaml"), Some("gitea-actions"));
        assert_eq!(owner("gitea.yaml"), Some("gitea"));
        assert_eq!(owner("nextcloud-db-app.sops.yaml"), Some("nextcloud-db"));
        assert_eq!(
            owner("nextcloud-bootstrap-secret.sops.yaml"),
            Some("nextcloud")
        );
        assert_eq!(owner("plexus.yaml"), None);
        assert_eq!(owner("plex"), None);
        assert_eq!(owner(".yaml"), None);
    }
}
