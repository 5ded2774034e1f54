//! The app tier as it is on disk. A file is known by its name alone: the same name in two
//! places (flat and in a wave, or in two waves) is a problem, because ownership and the
//! generated kustomizations are keyed by file name.

use std::fmt::Write as _;
use std::path::Path;

use crate::config::wave_number;
use crate::error::{Error, Result};
use crate::fs::is_manifest;
use crate::kustomize::KUSTOMIZATION_FILES;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Location {
    Flat,
    Wave(usize),
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
    /// `wave-<N>` folders, sorted.
    pub wave_dirs: Vec<WaveDir>,
    /// Entries fluxwave does not manage and will not touch: other folders, links, names that
    /// are not UTF-8 (repository-relative paths).
    pub foreign: Vec<(String, &'static str)>,
}

/// A `wave-<N>` folder as it is on disk.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct WaveDir {
    pub n: usize,
    /// Its kustomization files, sorted.
    pub kustomizations: Vec<String>,
    /// Its regular files that are neither manifests nor kustomizations (a README, a
    /// `.gitkeep`): not fluxwave's, so never removed, sorted.
    pub others: Vec<String>,
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
                match name.strip_prefix("wave-").and_then(wave_number) {
                    Some(n) => {
                        let wave = tier.scan_wave(&entry.path(), dir, &name, n)?;
                        tier.wave_dirs.push(wave);
                    }
                    None => tier
                        .foreign
                        .push((format!("{dir}/{name}"), "folder that is not a wave")),
                }
            } else if KUSTOMIZATION_FILES.contains(&name.as_str()) {
                tier.root_kustomizations.push(name);
            } else if is_manifest(&name) {
                tier.files.push(AppFile {
                    name,
                    location: Location::Flat,
                });
            }
        }
        // (name, location) pairs are unique: an unstable sort gives the same order, faster.
        tier.files
            .sort_unstable_by(|a, b| (&a.name, a.location).cmp(&(&b.name, b.location)));
        tier.wave_dirs.sort();
        tier.root_kustomizations.sort();
        tier.foreign.sort();
        Ok(tier)
    }

    fn scan_wave(&mut self, abs: &Path, dir: &str, wave_dir: &str, n: usize) -> Result<WaveDir> {
        let mut wave = WaveDir {
            n,
            ..WaveDir::default()
        };
        for entry in std::fs::read_dir(abs).map_err(|e| Error::io(abs, e))? {
            let entry = entry.map_err(|e| Error::io(abs, e))?;
            let ft = entry.file_type().map_err(|e| Error::io(&entry.path(), e))?;
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                self.foreign.push((
                    format!("{dir}/{wave_dir}/{}", entry.file_name().to_string_lossy()),
                    "name is not UTF-8",
                ));
                continue;
            };
            if ft.is_symlink() {
                self.foreign.push((
                    format!("{dir}/{wave_dir}/{name}"),
                    "symbolic link (not followed)",
                ));
            } else if ft.is_dir() {
                self.foreign
                    .push((format!("{dir}/{wave_dir}/{name}"), "folder inside a wave"));
            } else if KUSTOMIZATION_FILES.contains(&name.as_str()) {
                wave.kustomizations.push(name);
            } else if is_manifest(&name) {
                self.files.push(AppFile {
                    name,
                    location: Location::Wave(n),
                });
            } else {
                wave.others.push(name);
            }
        }
        wave.kustomizations.sort();
        wave.others.sort();
        Ok(wave)
    }

    /// Repository-relative path of a file at a location.
    pub fn path_of(&self, name: &str, location: Location) -> String {
        // Built by hand: `format!` was 6% of `plan`, which makes two paths per file.
        let mut s = String::with_capacity(self.dir.len() + name.len() + 12);
        s.push_str(&self.dir);
        s.push('/');
        if let Location::Wave(n) = location {
            let _ = write!(s, "wave-{n}/");
        }
        s.push_str(name);
        s
    }

    pub fn wave_dir(&self, n: usize) -> String {
        format!("{}/wave-{n}", self.dir)
    }

    /// Whether the tier has been migrated (any wave folder exists).
    pub fn is_waved(&self) -> bool {
        !self.wave_dirs.is_empty()
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
