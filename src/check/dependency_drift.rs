//! `dependency-drift`, per environment of a catalog-managed repository: the Flux
//! Kustomizations as built order the units otherwise than the catalog declares.
//!
//! - A missing edge: a unit's Kustomization does not wait, through `dependsOn` (directly or
//!   transitively), for the Kustomization of a dependency the catalog declares, and is not
//!   that Kustomization. Flux may then start the unit before what it needs (kustomize-
//!   controller reconciles a Kustomization once each of its `dependsOn` is Ready, and orders
//!   nothing else: `checkDependencies` in `internal/controller/kustomization_controller.go`).
//! - An extra edge: a Kustomization that holds exactly one unit lists in `dependsOn` a
//!   Kustomization that holds units, none of which the unit depends on, directly or through
//!   the catalog's dependencies, and which no declared dependency's Kustomization waits for
//!   either. Its failure then blocks the unit for nothing. Kustomizations that hold no unit
//!   (`platform-config`) and Kustomizations that hold several units (a wave, which waits for
//!   the whole wave below) are never reported: their extra edges are the layout's own.
//!
//! Units are assigned to Kustomizations as `blast` assigns them (`flux::gates`).

use std::collections::{BTreeSet, HashMap};

use super::{flux_name, Finding, FluxView};
use crate::diag::Code;
use crate::flux::gates::Gates;
use crate::flux::inventory::flux_id;
use crate::graph::Graph;
use crate::kustomize::object::ObjectId;
use crate::plan::topology::own_dependencies;
use crate::repo::Repo;

pub const CODE: Code = Code::DependencyDrift;

pub fn dependency_drift(flux: &FluxView, repo: &Repo) -> Vec<Finding> {
    let mut findings = Vec::new();
    let node = |i: usize| repo.graph.nodes[i].name.as_str();
    for inv in &flux.envs {
        let gates = Gates::of(inv, &|file: &str| repo.unit_of_file(file));
        let found = disagreements(&gates, &repo.graph);
        // One finding per dependsOn entry to add or remove: a wave that lacks the wave below
        // is one fix, however many of its units depend on what that wave applies.
        for run in found.chunk_by(|a, b| {
            (a.kustomization, a.missing, a.other) == (b.kustomization, b.missing, b.other)
        }) {
            let d = &run[0];
            let k = &gates.nodes[d.kustomization];
            let Some(owner) = inv.owners.get(&k.id) else {
                continue;
            };
            let (path, pos) = flux.owner_at(inv, owner, "dependsOn");
            let other = &gates.nodes[d.other].id;
            let entry = depends_on_entry(&k.id, other);
            let mut files: Vec<String> = run.iter().map(|d| declared_in(repo, d.unit)).collect();
            files.dedup();
            // Where the file writes the entry otherwise than the build has it, a patch on
            // the way (the environment's, a parent's) made the difference: say so.
            let written = written_depends_on(flux, &owner.file, owner.index, &k.id.namespace);
            let patched = written
                .as_ref()
                .is_some_and(|w| w.contains(other) == d.missing);
            let by_patch = match (patched, d.missing) {
                (false, _) => String::new(),
                (true, true) => {
                    " (its file lists it: a patch applied on the way removes it)".into()
                }
                (true, false) => " (its file does not: a patch applied on the way adds it)".into(),
            };
            let fix = match (patched, d.missing) {
                (false, true) => format!("add `{entry}` to the dependsOn of `{}`", flux_name(&k.id)),
                (false, false) => format!("remove `{entry}` from the dependsOn of `{}`", flux_name(&k.id)),
                (true, true) => format!("drop the patch (of environment `{}`, or of a parent Kustomization's spec.patches) that removes `{entry}` from the dependsOn of `{}`", inv.env, flux_name(&k.id)),
                (true, false) => format!("drop the patch (of environment `{}`, or of a parent Kustomization's spec.patches) that adds `{entry}` to the dependsOn of `{}`", inv.env, flux_name(&k.id)),
            };
            let finding = if d.missing {
                let needs = match run {
                    [one] => format!(
                        "it applies `{}`, which depends on `{}`",
                        node(one.unit),
                        node(one.dependency)
                    ),
                    _ => {
                        let pairs: Vec<String> = run
                            .iter()
                            .map(|d| format!("`{}` on `{}`", node(d.unit), node(d.dependency)))
                            .collect();
                        format!(
                            "the units it applies depend on what that one applies: {}",
                            names(&pairs)
                        )
                    }
                };
                Finding::new(
                    CODE,
                    path,
                    format!(
                        "Flux Kustomization `{}`, as environment `{}` builds it, does not wait for `{}`, directly or through dependsOn{by_patch}, yet {needs}: Flux may start {} before what {} needs is ready",
                        flux_name(&k.id),
                        inv.env,
                        flux_name(other),
                        if run.len() == 1 { format!("`{}`", node(d.unit)) } else { "them".into() },
                        if run.len() == 1 { "it" } else { "each" },
                    ),
                    format!(
                        "{fix}, or remove the dependency from {} if it is not needed",
                        names(&files)
                    ),
                )
            } else {
                let unit = node(d.unit);
                let held: Vec<String> = gates.nodes[d.other]
                    .units
                    .iter()
                    .map(|(u, _)| format!("`{}`", node(*u)))
                    .collect();
                Finding::new(
                    CODE,
                    path,
                    format!(
                        "Flux Kustomization `{}`, as environment `{}` builds it, applies only `{unit}` and depends on `{}`{by_patch}, which applies {}: `{unit}` depends on none of {}, so a failure there blocks `{unit}` for nothing",
                        flux_name(&k.id),
                        inv.env,
                        flux_name(other),
                        names(&held),
                        if held.len() == 1 { "it" } else { "them" },
                    ),
                    format!(
                        "{fix}, or declare the dependency in {} if `{unit}` needs it",
                        files[0]
                    ),
                )
            };
            findings.push(finding.at(pos));
        }
    }
    findings
}

/// The `dependsOn` of document `index` of `file` as written (before any patch), as ids; None
/// when it cannot be read (an assumed root, an artifact's copy).
fn written_depends_on(
    flux: &FluxView,
    file: &str,
    index: usize,
    namespace: &str,
) -> Option<Vec<ObjectId>> {
    let text = flux.tree.read(file)?;
    let docs = crate::yaml::parse_all(file, &text).ok()?;
    let k = crate::flux::Kustomization::from_value(docs.get(index)?)?;
    Some(
        k.spec
            .depends_on
            .iter()
            .map(|d| flux_id(d.namespace.as_deref().unwrap_or(namespace), &d.name))
            .collect(),
    )
}

/// Where a unit's dependencies are declared.
fn declared_in(repo: &Repo, unit: usize) -> String {
    let name = &repo.graph.nodes[unit].name;
    if repo.services.iter().any(|s| &s.name == name) {
        format!("{}/{name}.yaml", repo.config.catalog)
    } else {
        format!("the units of {}", crate::config::FILE)
    }
}

/// The dependsOn entry `dependant` would write for `dependency`.
fn depends_on_entry(dependant: &ObjectId, dependency: &ObjectId) -> String {
    if dependant.namespace == dependency.namespace {
        format!("- name: {}", dependency.name)
    } else {
        format!(
            "- {{name: {}, namespace: {}}}",
            dependency.name, dependency.namespace
        )
    }
}

/// `a`, `a and b`, `a, b and c`, `a, b, c, d, e and 3 more`.
fn names(list: &[String]) -> String {
    const SHOWN: usize = 5;
    match list {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] if list.len() <= SHOWN => format!("{} and {last}", init.join(", ")),
        _ => format!(
            "{} and {} more",
            list[..SHOWN].join(", "),
            list.len() - SHOWN
        ),
    }
}

/// One disagreement: the Kustomization to fix, the unit it holds, and the other
/// Kustomization (the dependency's, for a missing edge; the one listed, for an extra one).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Disagreement {
    pub kustomization: usize,
    pub missing: bool,
    pub other: usize,
    pub unit: usize,
    /// The declared dependency, for a missing edge (the unit itself for an extra one).
    pub dependency: usize,
}

/// Every disagreement between `gates` and `graph`, sorted. The common case (a Kustomization
/// listing each dependency's Kustomization directly) is answered by looking at its own
/// `dependsOn`; only the rest walk the graph, once per Kustomization.
pub fn disagreements(gates: &Gates, graph: &Graph) -> Vec<Disagreement> {
    let mut holders: HashMap<usize, Vec<usize>> = HashMap::new();
    for (k, g) in gates.nodes.iter().enumerate() {
        for (u, _) in &g.units {
            holders.entry(*u).or_default().push(k);
        }
    }
    let mut ancestors: HashMap<usize, BTreeSet<usize>> = HashMap::new();
    let mut reaches = |from: usize, to: usize| -> bool {
        if from == to || gates.nodes[from].depends_on.binary_search(&to).is_ok() {
            return true;
        }
        ancestors
            .entry(from)
            .or_insert_with(|| {
                let mut seen = BTreeSet::new();
                let mut stack = gates.nodes[from].depends_on.clone();
                while let Some(k) = stack.pop() {
                    if seen.insert(k) {
                        stack.extend(&gates.nodes[k].depends_on);
                    }
                }
                seen
            })
            .contains(&to)
    };
    let mut found = Vec::new();
    let none = Vec::new();
    let mut units: Vec<(&usize, &Vec<usize>)> = holders.iter().collect();
    units.sort_unstable();
    // What each unit must start after: its dependencies and `above` anchors, and for a plain
    // anchor (`above: false`, started beside it) what the anchor must start after.
    let own = own_dependencies(graph);
    for (&unit, ks) in units {
        for &k in ks {
            for &dependency in &own[unit] {
                let theirs = holders.get(&dependency).unwrap_or(&none);
                // A dependency no Kustomization applies is `unplaced-dependency`'s business.
                let Some(&first) = theirs.first() else {
                    continue;
                };
                if !theirs.iter().any(|&kd| reaches(k, kd)) {
                    found.push(Disagreement {
                        kustomization: k,
                        unit,
                        missing: true,
                        other: first,
                        dependency,
                    });
                }
            }
        }
    }
    // Extra edges, of Kustomizations holding exactly one unit.
    for (k, g) in gates.nodes.iter().enumerate() {
        let [(unit, _)] = g.units.as_slice() else {
            continue;
        };
        // Every edge counts here, a plain anchor too: waiting for the anchor is stricter
        // than the catalog asks, not unrelated to it.
        let declared: Vec<usize> = graph.nodes[*unit].edges.iter().map(|e| e.to).collect();
        let mut transitive: Option<BTreeSet<usize>> = None;
        for &listed in &g.depends_on {
            let held = &gates.nodes[listed].units;
            if held.is_empty() || held.iter().any(|(u, _)| declared.contains(u)) {
                continue;
            }
            let deps = transitive.get_or_insert_with(|| dependencies_of(graph, *unit));
            if held.iter().any(|(u, _)| deps.contains(u)) {
                continue;
            }
            // Waited for through a declared dependency's Kustomization: the edge is redundant,
            // not wrong.
            let through = declared.iter().any(|d| {
                holders
                    .get(d)
                    .unwrap_or(&none)
                    .iter()
                    .any(|&kd| kd != k && reaches(kd, listed))
            });
            if !through {
                found.push(Disagreement {
                    kustomization: k,
                    unit: *unit,
                    missing: false,
                    other: listed,
                    dependency: *unit,
                });
            }
        }
    }
    found.sort();
    found
}

/// Every node `node` depends on, transitively.
fn dependencies_of(graph: &Graph, node: usize) -> BTreeSet<usize> {
    let mut seen = BTreeSet::new();
    let mut stack: Vec<usize> = graph.nodes[node].edges.iter().map(|e| e.to).collect();
    while let Some(n) = stack.pop() {
        if seen.insert(n) {
            stack.extend(graph.nodes[n].edges.iter().map(|e| e.to));
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flux::gates::{Gate, Waits};
    use crate::graph::{Edge, Node, NodeKind};

    fn graph(nodes: &[(&str, &[usize])]) -> Graph {
        Graph {
            nodes: nodes
                .iter()
                .map(|(name, deps)| Node {
                    name: name.to_string(),
                    kind: NodeKind::Service,
                    edges: deps.iter().map(|&to| Edge { to, weight: 1 }).collect(),
                    wave: 0,
                    via: None,
                    dependants: Vec::new(),
                    gating: true,
                })
                .collect(),
            index: Default::default(),
        }
    }

    fn gates(ks: &[(&str, &[usize], &[usize])]) -> Gates {
        Gates {
            nodes: ks
                .iter()
                .map(|(name, deps, units)| Gate {
                    id: flux_id("flux-system", name),
                    depends_on: deps.to_vec(),
                    parent: None,
                    waits: Waits::All,
                    timeout_ms: 30_000,
                    units: units.iter().map(|&u| (u, true)).collect(),
                })
                .collect(),
        }
    }

    fn found(g: &Gates, graph: &Graph) -> Vec<(String, bool, String)> {
        disagreements(g, graph)
            .into_iter()
            .map(|d| {
                (
                    g.nodes[d.kustomization].id.name.clone(),
                    d.missing,
                    g.nodes[d.other].id.name.clone(),
                )
            })
            .collect()
    }

    #[test]
    fn per_unit_kustomizations_missing_and_extra_edges() {
        // a; b -> a; c -> b; d; e -> a; f -> c (so f -> b -> a through the catalog).
        let graph = graph(&[
            ("a", &[]),
            ("b", &[0]),
            ("c", &[1]),
            ("d", &[]),
            ("e", &[0]),
            ("f", &[2]),
        ]);
        let g = gates(&[
            ("upstream", &[], &[]),
            ("apps-a", &[0], &[0]),
            ("apps-b", &[1], &[1]),
            // c lacks b.
            ("apps-c", &[0], &[2]),
            // d lists a, which it does not depend on.
            ("apps-d", &[1], &[3]),
            // e lists c besides a: nothing it depends on waits for c.
            ("apps-e", &[1, 3], &[4]),
            // f lists b besides c: b is a dependency of c, declared in the catalog.
            ("apps-f", &[2, 3], &[5]),
        ]);
        assert_eq!(
            found(&g, &graph),
            [
                ("apps-c".to_string(), true, "apps-b".to_string()),
                ("apps-d".to_string(), false, "apps-a".to_string()),
                ("apps-e".to_string(), false, "apps-c".to_string()),
            ]
        );
    }

    #[test]
    fn waves_are_satisfied_through_the_wave_between() {
        // a, d in wave 0; b -> a in wave 1; c -> b and g -> a in wave 2.
        let graph = graph(&[
            ("a", &[]),
            ("b", &[0]),
            ("c", &[1]),
            ("d", &[]),
            ("g", &[0]),
        ]);
        let g = gates(&[
            ("platform-config", &[], &[]),
            ("apps-wave-0", &[0], &[0, 3]),
            ("apps-wave-1", &[1], &[1]),
            ("apps-wave-2", &[2], &[2, 4]),
        ]);
        assert!(found(&g, &graph).is_empty());
        // Wave 1 waits for the platform only: b lacks a, and so does g in wave 2 (through
        // wave 1 no more); the single-unit wave's edge to the platform is no unit's.
        let g = gates(&[
            ("platform-config", &[], &[]),
            ("apps-wave-0", &[0], &[0, 3]),
            ("apps-wave-1", &[0], &[1]),
            ("apps-wave-2", &[2], &[2, 4]),
        ]);
        assert_eq!(
            found(&g, &graph),
            [
                ("apps-wave-1".to_string(), true, "apps-wave-0".to_string()),
                ("apps-wave-2".to_string(), true, "apps-wave-0".to_string()),
            ]
        );
    }
}
