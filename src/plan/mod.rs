//! Placement: which wave every app-tier file belongs to. A file belongs to the unit that owns
//! it by name (longest prefix); it goes to that unit's wave. Only files that exist are
//! placed, so the waves that get a Flux Kustomization are exactly 0..=the deepest placed one,
//! and the rules checked here guarantee each of them holds at least one file.

pub mod changes;

use std::collections::HashMap;

use crate::graph::Graph;
use crate::repo::apptier::owner_of;
use crate::repo::{AppTier, Location, Repo};

#[derive(Debug, Clone)]
pub struct Placement {
    pub file: String,
    pub owner: usize,
    pub from: Location,
    pub wave: usize,
}

impl Placement {
    pub fn moves(&self) -> bool {
        self.from != Location::Wave(self.wave)
    }
}

/// Something that stops the plan from being carried out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// A file no unit owns.
    Unowned { file: String },
    /// The same file name in more than one place.
    Duplicate { file: String, paths: Vec<String> },
    /// A placed node depends on a node with no manifest.
    MissingDependency { node: String, dependency: String },
    /// An entry fluxwave does not read (a link, a foreign folder, a name that is not UTF-8).
    Foreign { path: String, what: &'static str },
}

impl Problem {
    pub fn code(&self) -> &'static str {
        match self {
            Problem::Unowned { .. } => "unowned-file",
            Problem::Duplicate { .. } => "duplicate-file",
            Problem::MissingDependency { .. } => "unplaced-dependency",
            Problem::Foreign { .. } => "foreign-entry",
        }
    }

    pub fn message(&self) -> String {
        match self {
            Problem::Unowned { file } => format!("{file} belongs to no unit"),
            Problem::Duplicate { file, paths } => {
                format!("`{file}` is in more than one place: {}", paths.join(", "))
            }
            Problem::MissingDependency { node, dependency } => {
                format!("`{node}` is placed but depends on `{dependency}`, which has no manifest")
            }
            Problem::Foreign { path, what } => format!("{path}: {what}"),
        }
    }

    pub fn help(&self) -> &'static str {
        match self {
            Problem::Unowned { .. } => "name the file after its unit (`<unit>.yaml`, `<unit>-<anything>.yaml`), add a catalog/<unit>.yaml, or declare an extra unit in fluxwave.yaml",
            Problem::Duplicate { .. } => "keep one copy of the file",
            Problem::MissingDependency { .. } => "commit the dependency's manifest, or remove the dependency: Flux would start this unit without what it needs",
            Problem::Foreign { .. } => "the app tier holds only manifests and wave folders: move it out of the app tier",
        }
    }

    /// Whether it stops `apply` (a foreign entry is left where it is and only reported).
    pub fn blocks(&self) -> bool {
        !matches!(self, Problem::Foreign { .. })
    }
}

#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// Sorted by (wave, file).
    pub placements: Vec<Placement>,
    /// Per graph node: whether it has at least one file.
    pub placed: Vec<bool>,
    /// Number of waves that get a Flux Kustomization (the deepest placed wave + 1).
    pub waves: usize,
    pub problems: Vec<Problem>,
}

impl Plan {
    pub fn new(graph: &Graph, apps: &AppTier) -> Plan {
        let mut placed = vec![false; graph.nodes.len()];
        let mut placements = Vec::new();
        let mut problems = Vec::new();
        let mut by_name: HashMap<&str, Vec<Location>> = HashMap::new();
        for f in &apps.files {
            by_name.entry(&f.name).or_default().push(f.location);
        }
        let mut names: Vec<_> = by_name.into_iter().collect();
        names.sort();
        for (file, locations) in names {
            if locations.len() > 1 {
                // The owner has manifests all the same: only the duplicate is a problem.
                if let Some(&owner) = owner_of(file, &graph.index) {
                    placed[owner] = true;
                }
                problems.push(Problem::Duplicate {
                    file: file.to_string(),
                    paths: locations.iter().map(|&l| apps.path_of(file, l)).collect(),
                });
                continue;
            }
            match owner_of(file, &graph.index) {
                Some(&owner) => {
                    placed[owner] = true;
                    placements.push(Placement {
                        file: file.to_string(),
                        owner,
                        from: locations[0],
                        wave: graph.nodes[owner].wave,
                    });
                }
                None => problems.push(Problem::Unowned {
                    file: apps.path_of(file, locations[0]),
                }),
            }
        }
        for (i, node) in graph.nodes.iter().enumerate() {
            if !placed[i] {
                continue;
            }
            for e in &node.edges {
                if !placed[e.to] {
                    problems.push(Problem::MissingDependency {
                        node: node.name.clone(),
                        dependency: graph.nodes[e.to].name.clone(),
                    });
                }
            }
        }
        problems.extend(apps.foreign.iter().map(|(path, what)| Problem::Foreign {
            path: path.clone(),
            what,
        }));
        placements.sort_by(|a, b| (a.wave, &a.file).cmp(&(b.wave, &b.file)));
        let waves = placements.iter().map(|p| p.wave + 1).max().unwrap_or(0);
        Plan {
            placements,
            placed,
            waves,
            problems,
        }
    }

    pub fn for_repo(repo: &Repo) -> Plan {
        Plan::new(&repo.graph, &repo.apps)
    }

    /// The files of wave `n`, sorted.
    pub fn files_in(&self, n: usize) -> impl Iterator<Item = &Placement> {
        self.placements.iter().filter(move |p| p.wave == n)
    }

    pub fn blocking(&self) -> impl Iterator<Item = &Problem> {
        self.problems.iter().filter(|p| p.blocks())
    }
}
