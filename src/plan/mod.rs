//! Placement: which group (a wave, or a unit's own: see `topology`) every app-tier file
//! belongs to. A file belongs to the unit that owns it by name (longest prefix); it goes to
//! that unit's group. Only files that exist are placed, so the waves that get a Flux
//! Kustomization are exactly 0..=the deepest placed one, and the rules checked here
//! guarantee each of them holds at least one file.

pub mod changes;
pub mod execute;
pub mod topology;

use std::collections::HashMap;

use serde_json::Value;

use crate::diag::{Code, Severity};
use crate::error::Result;
use crate::graph::Graph;
use crate::repo::apptier::owner_of;
use crate::repo::{AppTier, Location, Repo};
pub use topology::{Group, GroupKind, Layout};

#[derive(Debug, Clone)]
pub struct Placement {
    pub file: String,
    pub owner: usize,
    pub from: Location,
    /// The index of the owner's group in `Plan::layout`.
    pub group: usize,
    /// Whether the file is somewhere else than its group's folder.
    pub moves: bool,
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
    /// The flat kustomization lists something no wave would build: Flux would prune it.
    FlatListsUnplaced {
        kustomization: String,
        entry: String,
    },
    /// The flat kustomization sets a field the generated wave kustomizations would drop.
    FlatSetsField {
        kustomization: String,
        field: String,
    },
    /// A manifest the flat kustomization does not list: once waved, Flux deploys it.
    NotDeployedYet { file: String, kustomization: String },
}

impl Problem {
    pub fn code(&self) -> Code {
        match self {
            Problem::Unowned { .. } => Code::UnownedFile,
            Problem::Duplicate { .. } => Code::DuplicateFile,
            Problem::MissingDependency { .. } => Code::UnplacedDependency,
            Problem::Foreign { .. } => Code::ForeignEntry,
            Problem::FlatListsUnplaced { .. } | Problem::FlatSetsField { .. } => {
                Code::FlatKustomizationLoss
            }
            Problem::NotDeployedYet { .. } => Code::NotDeployedYet,
        }
    }

    pub fn message(&self) -> String {
        match self {
            Problem::Unowned { .. } => "belongs to no unit".to_string(),
            Problem::Duplicate { file, paths } => {
                format!("`{file}` is in more than one place: {}", paths.join(", "))
            }
            Problem::MissingDependency { node, dependency } => {
                format!("`{node}` is placed but depends on `{dependency}`, which has no manifest")
            }
            Problem::Foreign { what, .. } => what.to_string(),
            Problem::FlatListsUnplaced { entry, .. } => {
                format!(
                    "lists `{entry}`, which no wave would build: Flux would prune what it builds"
                )
            }
            Problem::FlatSetsField { field, .. } => {
                format!("sets `{field}`, which the generated wave kustomizations would not carry")
            }
            Problem::NotDeployedYet { kustomization, .. } => {
                format!("is not listed in {kustomization}: Flux does not deploy it today, and will once it is in a wave")
            }
        }
    }

    pub fn help(&self) -> &'static str {
        match self {
            Problem::Unowned { .. } => "name the file after its unit (`<unit>.yaml`, `<unit>-<anything>.yaml`), add a catalog/<unit>.yaml, or declare an extra unit in fluxwave.yaml",
            // Never "your last apply left it": apply only renames, and two runs never
            // interleave (`fs::lock`), so a copy was made by someone or something else.
            Problem::Duplicate { .. } => "keep one copy of the file and delete the others (compare them first: fluxwave only renames files, so the copy came from a merge, a checkout or another tool), then run `fluxwave apply` again",
            Problem::MissingDependency { .. } => "commit the dependency's manifest, or remove the dependency: Flux would start this unit without what it needs",
            Problem::Foreign { .. } => "the app tier holds only manifests and the folders of its waves and units: move it out of the app tier",
            Problem::FlatListsUnplaced { .. } => "move what it lists into the app tier as a file a unit owns, or into a Flux Kustomization of its own, then run `fluxwave apply` again",
            Problem::FlatSetsField { .. } => "move the setting into the manifests (or a Flux Kustomization's spec), then run `fluxwave apply` again",
            Problem::NotDeployedYet { .. } => "delete the file if it is not meant to run, or list it to confirm it is",
        }
    }

    /// Whether it stops `apply` (the others are left as they are and only reported): the
    /// problems whose code is an error.
    pub fn blocks(&self) -> bool {
        self.code().severity() == Severity::Error
    }

    /// The file the problem is about, as the user sees it.
    pub fn path<'a>(&'a self, apps_dir: &'a str) -> &'a str {
        match self {
            Problem::Unowned { file } | Problem::NotDeployedYet { file, .. } => file,
            Problem::Duplicate { paths, .. } => paths.first().map_or(apps_dir, String::as_str),
            Problem::Foreign { path, .. } => path,
            Problem::FlatListsUnplaced { kustomization, .. }
            | Problem::FlatSetsField { kustomization, .. } => kustomization,
            Problem::MissingDependency { .. } => apps_dir,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// Sorted by (group, file).
    pub placements: Vec<Placement>,
    /// Per graph node: whether it has at least one file.
    pub placed: Vec<bool>,
    /// The groups of the configured topology.
    pub layout: Layout,
    /// Number of waves that get a Flux Kustomization (the deepest placed wave of a gating
    /// unit + 1, under `waves`).
    pub waves: usize,
    pub problems: Vec<Problem>,
}

impl Plan {
    pub fn new(graph: &Graph, apps: &AppTier, config: &crate::config::Config) -> Result<Plan> {
        let mut placed = vec![false; graph.nodes.len()];
        let mut placements = Vec::new();
        let mut problems = Vec::new();
        // `apps.files` is sorted by (name, location): each name's places are one run.
        let names = apps.files.chunk_by(|a, b| a.name == b.name).map(|run| {
            let locations: Vec<Location> = run.iter().map(|f| f.location).collect();
            (run[0].name.as_str(), locations)
        });
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
                        group: 0,
                        moves: true,
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
        let layout = Layout::of(graph, &placed, config, config.topology)?;
        // Each group's folder as the app tier's `Location`, when it exists.
        let folders: std::collections::HashMap<&str, Location> = apps
            .dirs
            .iter()
            .enumerate()
            .map(|(i, d)| {
                (
                    d.name.as_str(),
                    Location::Dir(u32::try_from(i).unwrap_or(u32::MAX)),
                )
            })
            .collect();
        let at: Vec<Option<Location>> = layout
            .groups
            .iter()
            .map(|g| folders.get(g.folder.as_str()).copied())
            .collect();
        for p in &mut placements {
            if let Some(g) = layout.group_of[p.owner] {
                p.group = g;
                p.moves = at[g] != Some(p.from);
            }
        }
        // Placements were made in file order: a stable sort by group keeps it within one.
        placements.sort_by_key(|p| p.group);
        Ok(Plan {
            placements,
            placed,
            waves: layout.waves(),
            layout,
            problems,
        })
    }

    /// The groups in words: `3 waves`, `8 unit Kustomizations`, `3 waves and 1 unit
    /// Kustomization`.
    pub fn describe_groups(&self) -> String {
        let units = self.groups().len() - self.waves;
        match (self.waves, units) {
            (_, 0) => crate::plural::count(self.waves, "wave"),
            (0, u) => crate::plural::count(u, "unit Kustomization"),
            (w, u) => format!(
                "{} and {}",
                crate::plural::count(w, "wave"),
                crate::plural::count(u, "unit Kustomization")
            ),
        }
    }

    /// The groups of the configured topology, in order.
    pub fn groups(&self) -> &[Group] {
        &self.layout.groups
    }

    /// The plan with what migrating the flat layout would lose: its kustomization may list
    /// more than the app tier's files, or set fields, or leave files out.
    pub fn for_repo(repo: &Repo) -> Result<Plan> {
        refuse_many_kustomizations(&repo.apps.dir, &repo.apps.root_kustomizations)?;
        let mut plan = Plan::new(&repo.graph, &repo.apps, &repo.config)?;
        refuse_links(repo, &plan)?;
        plan.problems
            .extend(flat_kustomization_problems(repo, &plan)?);
        Ok(plan)
    }

    /// The files of group `g`, sorted. The placements are sorted by group, so a group's
    /// files are one run, found by binary search: a pass over every placement for each group
    /// made `plan` and `apply` quadratic in the number of groups.
    pub fn files_in(&self, g: usize) -> impl Iterator<Item = &Placement> {
        let start = self.placements.partition_point(|p| p.group < g);
        let len = self.placements[start..].partition_point(|p| p.group == g);
        self.placements[start..start + len].iter()
    }

    pub fn blocking(&self) -> impl Iterator<Item = &Problem> {
        self.problems.iter().filter(|p| p.blocks())
    }
}

/// Fails when the plan would move a file into or through a symbolic link: the app tier or a
/// wave folder that is a link, or a link where a file moves to. The scan does not follow
/// links (they are foreign entries); moving files through one would put them wherever it
/// leads and overwrite what is there (`fs::write::link_refused` says why Flux ignores them).
fn refuse_links(repo: &Repo, plan: &Plan) -> Result<()> {
    let apps = &repo.apps;
    if plan.groups().is_empty() {
        return Ok(());
    }
    let mut checked = std::collections::HashSet::new();
    let root = &repo.root;
    crate::fs::write::refuse_links(root, &apps.dir, true, &mut checked)?;
    for g in plan.groups() {
        crate::fs::write::refuse_links(root, &apps.dir_of(&g.folder), true, &mut checked)?;
    }
    let links: std::collections::HashSet<&str> = apps
        .foreign
        .iter()
        .filter(|(_, what)| what.starts_with("symbolic link"))
        .map(|(path, _)| path.as_str())
        .collect();
    if links.is_empty() {
        return Ok(());
    }
    for p in plan.placements.iter().filter(|p| p.moves) {
        let to = apps.path_in(&plan.groups()[p.group].folder, &p.file);
        if links.contains(to.as_str()) {
            return Err(crate::fs::write::link_refused(&to));
        }
    }
    Ok(())
}

/// A folder with more than one kustomization file is refused: kustomize fails to build it
/// ("Found multiple kustomization files", `api/internal/target.loadKustFile`), so Flux
/// applies nothing of it, and which one was meant is the user's to say.
pub(crate) fn refuse_many_kustomizations(dir: &str, names: &[String]) -> Result<()> {
    if names.len() < 2 {
        return Ok(());
    }
    let paths: Vec<String> = names.iter().map(|n| format!("{dir}/{n}")).collect();
    Err(crate::error::SourceError::new(
        &paths[0],
        format!(
            "{dir} holds more than one kustomization file ({}): kustomize refuses to build such a folder",
            paths.join(", ")
        ),
    )
    .help("keep the one you mean (merge the other into it), then run fluxwave again")
    .into())
}

/// What removing the flat kustomization would change in what Flux builds.
fn flat_kustomization_problems(repo: &Repo, plan: &Plan) -> Result<Vec<Problem>> {
    let apps = &repo.apps;
    let Some(name) = apps.root_kustomizations.first() else {
        return Ok(vec![]);
    };
    if plan.groups().is_empty() {
        return Ok(vec![]);
    }
    let rel = format!("{}/{name}", apps.dir);
    let Some(text) = repo.read_optional(&rel)? else {
        return Ok(vec![]);
    };
    let doc = crate::yaml::parse_value(&rel, &crate::yaml::Text::new(text))?;
    let mut problems = Vec::new();
    for field in doc.as_object().into_iter().flat_map(|m| m.keys()) {
        if !matches!(
            field.as_str(),
            "apiVersion" | "kind" | "resources" | "metadata"
        ) {
            problems.push(Problem::FlatSetsField {
                kustomization: rel.clone(),
                field: field.clone(),
            });
        }
    }
    // Every flat manifest counts as listed-and-built, placed or not: a file with a problem of
    // its own is reported once, under that problem.
    let placed: std::collections::HashSet<&str> =
        plan.placements.iter().map(|p| p.file.as_str()).collect();
    let flat: HashMap<&str, bool> = apps
        .files
        .iter()
        .filter(|f| f.location == Location::Flat)
        .map(|f| (f.name.as_str(), placed.contains(f.name.as_str())))
        .collect();
    let mut listed = std::collections::HashSet::new();
    for entry in doc
        .get("resources")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let text = entry.as_str().unwrap_or("");
        let file = crate::kustomize::resolve_under(&apps.dir, text);
        // A file already moved into a wave (by an interrupted apply) is still built.
        if let Some(file) =
            file.filter(|f| flat.contains_key(f.as_str()) || placed.contains(f.as_str()))
        {
            listed.insert(file);
        } else {
            problems.push(Problem::FlatListsUnplaced {
                kustomization: rel.clone(),
                entry: text.to_string(),
            });
        }
    }
    for file in flat
        .iter()
        .filter(|(f, placed)| **placed && !listed.contains(**f))
        .map(|(f, _)| f)
    {
        problems.push(Problem::NotDeployedYet {
            file: apps.path_of(file, Location::Flat),
            kustomization: rel.clone(),
        });
    }
    problems.sort_by(|a, b| (a.path(""), a.message()).cmp(&(b.path(""), b.message())));
    Ok(problems)
}
