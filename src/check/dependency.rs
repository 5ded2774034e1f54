//! `unknown-dependency` and `dependency-cycle`, per environment: a Flux Kustomization that
//! depends on one that does not exist never becomes ready, and neither does anything in a
//! `dependsOn` cycle. A dependency's namespace defaults to the dependant's own, as in Flux.
//! A cycle is printed whole, from its alphabetically first member.

use std::collections::{BTreeMap, BTreeSet};

use super::build::Failures;
use super::{flux_name, Finding, FluxView};
use crate::diag::Code;
use crate::kustomize::object::ObjectId;

pub const UNKNOWN: Code = Code::UnknownDependency;
pub const CYCLE: Code = Code::DependencyCycle;

pub fn unknown_dependency(flux: &FluxView, failures: &Failures) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (env, inv) in flux.envs.iter().enumerate() {
        let hidden = failures.may_hide(env);
        for (id, owner) in inv.kustomizations() {
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
                            "Flux Kustomization `{}` depends on `{}`, which environment `{}` does not have{closest}{hidden}: it never becomes ready",
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
        for cycle in cycles(&edges, &mut 0) {
            let start = cycle[0];
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

/// The cycles to report, each from its smallest member: nodes in name order, the shortest
/// cycle through each node not yet reported whose members are all unreported and none
/// smaller than it. Only nodes of one strongly connected component can share a cycle, so
/// each search stays inside its node's component: a 100,000-long `dependsOn` chain (every
/// component one node) costs one pass, not a search of every node's whole ancestry. `work`
/// counts the edges visited.
fn cycles<'a>(
    edges: &BTreeMap<&'a ObjectId, Vec<&'a ObjectId>>,
    work: &mut usize,
) -> Vec<Vec<&'a ObjectId>> {
    let component = components(edges, work);
    let mut reported: BTreeSet<&ObjectId> = BTreeSet::new();
    let mut found = Vec::new();
    // Nodes in name order: the first node of a cycle met is its smallest member.
    for (start, outgoing) in edges {
        if reported.contains(start) {
            continue;
        }
        let own = component.get(start);
        // A node alone in its component is on a cycle only through an edge to itself.
        if !outgoing.iter().any(|n| component.get(n) == own) {
            continue;
        }
        let Some(cycle) = shortest_cycle(edges, start, &|n| component.get(n) == own, work) else {
            continue;
        };
        if cycle.iter().any(|n| reported.contains(n) || *n < *start) {
            continue;
        }
        reported.extend(cycle.iter().copied());
        found.push(cycle);
    }
    found
}

/// The strongly connected component of every node, as a number per node.
fn components<'a>(
    edges: &BTreeMap<&'a ObjectId, Vec<&'a ObjectId>>,
    work: &mut usize,
) -> BTreeMap<&'a ObjectId, usize> {
    let ids: Vec<&ObjectId> = edges.keys().copied().collect();
    let at: BTreeMap<&ObjectId, usize> = ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
    let next: Vec<Vec<usize>> = ids
        .iter()
        .map(|id| {
            edges[id]
                .iter()
                .filter_map(|n| at.get(n).copied())
                .collect()
        })
        .collect();
    // Tarjan's algorithm visits each edge once.
    *work += next.iter().map(Vec::len).sum::<usize>();
    let (component, _) = crate::graph::scc::components(&next, |&w| w);
    ids.into_iter().zip(component).collect()
}

/// The shortest path `start -> ... -> start` (without the final `start`) through the nodes
/// `inside` accepts, by breadth first.
fn shortest_cycle<'a>(
    edges: &BTreeMap<&'a ObjectId, Vec<&'a ObjectId>>,
    start: &'a ObjectId,
    inside: &dyn Fn(&ObjectId) -> bool,
    work: &mut usize,
) -> Option<Vec<&'a ObjectId>> {
    let mut prev: BTreeMap<&ObjectId, &ObjectId> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(cur) = queue.pop_front() {
        for next in edges.get(cur).into_iter().flatten() {
            *work += 1;
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
            if inside(next) && !prev.contains_key(next) {
                prev.insert(next, cur);
                queue.push_back(next);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flux::inventory::flux_id;

    fn graph(edges: &[(usize, &[usize])]) -> Vec<(ObjectId, Vec<ObjectId>)> {
        edges
            .iter()
            .map(|(from, to)| {
                let id = |i: &usize| flux_id("flux-system", &format!("ks-{i:06}"));
                (id(from), to.iter().map(id).collect())
            })
            .collect()
    }

    fn found(nodes: &[(ObjectId, Vec<ObjectId>)], work: &mut usize) -> Vec<Vec<String>> {
        let edges: BTreeMap<&ObjectId, Vec<&ObjectId>> = nodes
            .iter()
            .map(|(id, deps)| (id, deps.iter().collect()))
            .collect();
        cycles(&edges, work)
            .into_iter()
            .map(|c| c.iter().map(|id| id.name.clone()).collect())
            .collect()
    }

    #[test]
    fn a_long_chain_is_walked_once() {
        // ks-i depends on ks-(i-1): no cycle, and no search of each node's whole ancestry.
        let n = 10_000;
        let chain: Vec<(usize, Vec<usize>)> = (0..n)
            .map(|i| (i, if i == 0 { vec![] } else { vec![i - 1] }))
            .collect();
        let shape: Vec<(usize, &[usize])> = chain.iter().map(|(i, d)| (*i, &d[..])).collect();
        let mut work = 0;
        assert!(found(&graph(&shape), &mut work).is_empty());
        assert!(work <= 2 * n, "visited {work} edges for {n} nodes");
    }

    #[test]
    fn cycles_are_found_from_their_smallest_member() {
        // 0 -> 1 -> 2 -> 0, a self-loop on 3, 4 -> 5 -> 4 reached from the first cycle, and
        // 6 depending on all of them without being on a cycle.
        let shape: &[(usize, &[usize])] = &[
            (0, &[1]),
            (1, &[2, 4]),
            (2, &[0]),
            (3, &[3]),
            (4, &[5]),
            (5, &[4]),
            (6, &[0, 3, 4]),
        ];
        let cycles = found(&graph(shape), &mut 0);
        assert_eq!(
            cycles,
            [
                vec!["ks-000000", "ks-000001", "ks-000002"],
                vec!["ks-000003"],
                vec!["ks-000004", "ks-000005"],
            ]
        );
    }
}
