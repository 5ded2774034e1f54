//! `unknown-dependency` and `dependency-cycle`, per environment: a Flux Kustomization that
//! depends on one that does not exist never becomes ready, and neither does anything in a
//! `dependsOn` cycle. A dependency's namespace defaults to the dependant's own, as in Flux.
//! A cycle is printed whole, from its alphabetically first member.

use std::collections::{BTreeMap, BTreeSet};

use super::{flux_name, Finding, FluxView};
use crate::diag::Code;
use crate::kustomize::object::ObjectId;

pub const UNKNOWN: Code = Code::UnknownDependency;
pub const CYCLE: Code = Code::DependencyCycle;

pub fn unknown_dependency(flux: &FluxView) -> Vec<Finding> {
    let mut findings = Vec::new();
    for inv in &flux.envs {
        for (id, owner) in &inv.owners {
            for dep in &owner.depends_on {
                if inv.owners.contains_key(dep) {
                    continue;
                }
                let closest = inv
                    .owners
                    .keys()
                    .map(|k| (strsim::levenshtein(&k.name, &dep.name), k))
                    .filter(|(d, _)| *d <= 3)
                    .min_by_key(|(d, _)| *d)
                    .map(|(_, k)| format!(" (did you mean `{}`?)", flux_name(k)))
                    .unwrap_or_default();
                let (path, pos) = flux.owner_at(inv, owner, "dependsOn");
                findings.push(
                    Finding::new(
                        UNKNOWN,
                        path,
                        format!(
                            "Flux Kustomization `{}` depends on `{}`, which environment `{}` does not have{closest}: it never becomes ready",
                            flux_name(id),
                            flux_name(dep),
                            inv.env
                        ),
                        "name an existing Kustomization in dependsOn (its namespace defaults to the dependant's), or add the missing one to the environment",
                    )
                    .at(pos),
                );
            }
        }
    }
    findings
}

pub fn dependency_cycle(flux: &FluxView) -> Vec<Finding> {
    let mut findings = Vec::new();
    for inv in &flux.envs {
        let edges: BTreeMap<&ObjectId, Vec<&ObjectId>> = inv
            .owners
            .iter()
            .map(|(id, o)| {
                (
                    id,
                    o.depends_on
                        .iter()
                        .filter(|d| inv.owners.contains_key(*d))
                        .collect(),
                )
            })
            .collect();
        let mut reported: BTreeSet<&ObjectId> = BTreeSet::new();
        // Nodes in name order: the first node of a cycle met is its smallest member.
        for start in inv.owners.keys() {
            if reported.contains(start) {
                continue;
            }
            let Some(cycle) = shortest_cycle(&edges, start) else {
                continue;
            };
            if cycle.iter().any(|n| reported.contains(n) || *n < start) {
                continue;
            }
            reported.extend(cycle.iter().copied());
            let Some(owner) = inv.owners.get(start) else {
                continue;
            };
            let text: Vec<String> = cycle
                .iter()
                .chain(std::iter::once(&start))
                .map(|n| flux_name(n))
                .collect();
            let (path, pos) = flux.owner_at(inv, owner, "dependsOn");
            findings.push(
                Finding::new(
                    CYCLE,
                    path,
                    format!(
                        "dependsOn cycle in environment `{}`: {}; none of them ever becomes ready",
                        inv.env,
                        text.join(" -> ")
                    ),
                    "remove one dependsOn entry of the cycle",
                )
                .at(pos),
            );
        }
    }
    findings
}

/// The shortest path `start -> ... -> start` (without the final `start`), by breadth first.
fn shortest_cycle<'a>(
    edges: &BTreeMap<&'a ObjectId, Vec<&'a ObjectId>>,
    start: &'a ObjectId,
) -> Option<Vec<&'a ObjectId>> {
    let mut prev: BTreeMap<&ObjectId, &ObjectId> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(cur) = queue.pop_front() {
        for next in edges.get(cur).into_iter().flatten() {
            if *next == start {
                let mut path = vec![cur];
                let mut at = cur;
                while at != start {
                    at = prev.get(at)?;
                    path.push(at);
                }
                path.reverse();
                return Some(path);
            }
            if !prev.contains_key(next) {
                prev.insert(next, cur);
                queue.push_back(next);
            }
        }
    }
    None
}
