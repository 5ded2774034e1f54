//! Blast radius: for each unit, what a failure of its health check blocks (the units of every
//! Kustomization that waits for its Kustomization's readiness, directly or transitively) and
//! who shares its Kustomization's health gate; their totals; and the longest `dependsOn`
//! chain with the sum of its timeouts. The same computation runs on the Kustomizations as
//! built (`flux::gates`) and on a hypothetical layout, so topologies compare like for like.
//!
//! Blocked sets are computed once per strongly connected component of the Kustomization
//! graph, successors first, as bitsets over one chunk of units at a time: memory stays
//! bounded (Kustomizations × 4,096 bits) however many units there are, and a unit's count
//! is a popcount, not a walk of its dependants.

use std::collections::HashMap;

use serde_json::{json, Value};

use crate::flux::gates::{self, Gates};
use crate::plan::topology::Layout;
use crate::repo::Repo;

/// Kustomizations holding units, as one topology lays them out.
#[derive(Debug, Clone, Default)]
pub struct Model {
    /// Kustomization names as shown (`namespace/name`), one per Kustomization.
    pub names: Vec<String>,
    /// `dependsOn` of each, as indices.
    pub deps: Vec<Vec<usize>>,
    /// The parent whose readiness waits for it, if one does.
    pub gated_parent: Vec<Option<usize>>,
    pub timeout_ms: Vec<u64>,
    /// The units each applies, sorted, with whether its readiness covers the unit.
    pub holds: Vec<Vec<(usize, bool)>>,
    /// Every unit name, by unit index (indices sorted by name).
    pub unit_names: Vec<String>,
}

impl Model {
    /// The Kustomizations of an environment as built. `unit_names` names the catalog's units
    /// when there is a catalog; without one (`None`) each Kustomization is its own unit.
    pub fn from_gates(gates: &Gates, unit_names: Option<Vec<String>>) -> Model {
        let names: Vec<String> = gates
            .nodes
            .iter()
            .map(|g| format!("{}/{}", g.id.namespace, g.id.name))
            .collect();
        let holds = match &unit_names {
            Some(_) => gates.nodes.iter().map(|g| g.units.clone()).collect(),
            None => gates
                .nodes
                .iter()
                .enumerate()
                .map(|(i, g)| vec![(i, g.waits.gates_anything())])
                .collect(),
        };
        Model {
            deps: gates.nodes.iter().map(|g| g.depends_on.clone()).collect(),
            gated_parent: (0..gates.nodes.len())
                .map(|i| gates.gates_parent(i))
                .collect(),
            timeout_ms: gates.nodes.iter().map(|g| g.timeout_ms).collect(),
            holds,
            unit_names: unit_names.unwrap_or_else(|| names.clone()),
            names,
        }
    }
}

impl Model {
    /// The Kustomizations `apply` would write for `layout`: each group's `dependsOn`, and the
    /// spec template of `waves.spec` for all (whether they wait, their timeout). `built`, an
    /// environment as built, gives the Kustomizations that apply no unit (the platform, the
    /// root), kept as they are, so that a chain through `waves.upstream` counts them as the
    /// current topology does; without it, names that are no group are left out.
    pub fn from_layout(repo: &Repo, layout: &Layout, built: Option<&Model>) -> Model {
        let config = &repo.config;
        let template = json!({ "spec": Value::Object(config.waves.spec.clone()) });
        let spec = &template["spec"];
        let waits = spec.get("wait").and_then(Value::as_bool) == Some(true)
            || spec
                .get("healthChecks")
                .and_then(Value::as_array)
                .is_some_and(|h| !h.is_empty());
        let timeout = gates::timeout_ms(&template);
        let mut m = Model {
            unit_names: repo.graph.nodes.iter().map(|n| n.name.clone()).collect(),
            ..Model::default()
        };
        // The Kustomizations of the build that hold no unit, by their index there.
        let mut kept: HashMap<usize, usize> = HashMap::new();
        if let Some(b) = built {
            for k in (0..b.names.len()).filter(|&k| b.holds[k].is_empty()) {
                kept.insert(k, m.names.len());
                m.names.push(b.names[k].clone());
                m.timeout_ms.push(b.timeout_ms[k]);
                m.holds.push(Vec::new());
            }
            let mut order: Vec<(&usize, &usize)> = kept.iter().collect();
            order.sort_unstable_by_key(|(_, to)| **to);
            for (from, _) in order {
                m.deps.push(
                    b.deps[*from]
                        .iter()
                        .filter_map(|d| kept.get(d).copied())
                        .collect(),
                );
                m.gated_parent
                    .push(b.gated_parent[*from].and_then(|p| kept.get(&p).copied()));
            }
        }
        let mut at: HashMap<String, usize> = m
            .names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), i))
            .collect();
        let first = m.names.len();
        for (i, g) in layout.groups.iter().enumerate() {
            let name = format!("{}/{}", config.waves.namespace, g.name);
            at.insert(name.clone(), first + i);
            m.names.push(name);
        }
        for g in &layout.groups {
            let mut d: Vec<usize> = g
                .depends_on
                .iter()
                .filter_map(|name| {
                    at.get(&format!("{}/{name}", config.waves.namespace))
                        .copied()
                })
                .collect();
            d.sort_unstable();
            d.dedup();
            m.deps.push(d);
            m.gated_parent.push(None);
            m.timeout_ms.push(timeout);
            m.holds
                .push(g.members.iter().map(|&u| (u, waits)).collect());
        }
        m
    }
}

/// How much of each unit's lists to keep: every name is n × blocks for the whole report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Counts only.
    Count,
    /// The first `n` names (by name) beside the counts (every unit's full lists are
    /// `Lister`'s).
    First(usize),
}

/// A set of units: its size and the names kept (see `Detail`), as unit indices, sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Units {
    pub count: usize,
    pub kept: Vec<usize>,
}

impl Units {
    fn keep(&mut self, unit: usize, detail: Detail) {
        self.count += 1;
        if let Detail::First(n) = detail {
            if self.kept.len() < n {
                self.kept.push(unit);
            }
        }
    }
}

/// One unit's blast radius.
#[derive(Debug, Clone)]
pub struct UnitBlast {
    pub unit: usize,
    /// The Kustomizations that apply it, sorted.
    pub kustomizations: Vec<usize>,
    /// Whether any of them waits for its health.
    pub gated: bool,
    pub blocks: Units,
    pub shares: Units,
}

/// The longest `dependsOn` chain by its timeouts: Kustomization indices, dependency first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Chain {
    pub kustomizations: Vec<usize>,
    pub timeout_ms: u64,
}

/// Sums over every unit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Totals {
    /// The sum over units of the units each blocks.
    pub blocked: u64,
    /// The sum over units of the units each shares a gate with.
    pub shared: u64,
    /// The unit that blocks most (the first by name among equals), and how many; None when
    /// no unit blocks any.
    pub worst: Option<(usize, usize)>,
    /// Units applied by some Kustomization.
    pub units: usize,
}

#[derive(Debug, Clone, Default)]
pub struct Blast {
    /// Units applied by some Kustomization, by unit index.
    pub units: Vec<UnitBlast>,
    pub totals: Totals,
    pub chain: Chain,
}

/// Bits of one chunk of units.
const CHUNK_WORDS: usize = 64;

/// Readiness flows from a Kustomization to its dependants and to a parent that waits for
/// it: each Kustomization's successors, `true` on the dependsOn edges (a parent that is not
/// Ready has still applied its own objects: only what depends on it is blocked).
fn readiness_edges(model: &Model) -> Vec<Vec<(usize, bool)>> {
    let mut next: Vec<Vec<(usize, bool)>> = vec![Vec::new(); model.names.len()];
    for (k, deps) in model.deps.iter().enumerate() {
        for &d in deps {
            next[d].push((k, true));
        }
    }
    for (k, p) in model.gated_parent.iter().enumerate() {
        if let Some(p) = *p {
            next[k].push((p, false));
        }
    }
    next
}

/// Each unit's Kustomizations, with whether each gates it (its readiness covers the unit).
fn kustomizations_of_units(model: &Model) -> Vec<Vec<(usize, bool)>> {
    let mut of_unit: Vec<Vec<(usize, bool)>> = vec![Vec::new(); model.unit_names.len()];
    for (k, held) in model.holds.iter().enumerate() {
        for &(u, gated) in held {
            of_unit[u].push((k, gated));
        }
    }
    of_unit
}

/// Each unit's blast radius under `model`, their totals and the longest `dependsOn` chain;
/// `detail` says how many names of each list to keep.
pub fn analyse(model: &Model, detail: Detail) -> Blast {
    let scc = Components::of(readiness_edges(model));
    let of_unit = kustomizations_of_units(model);
    let mut units = unit_entries(&of_unit);
    blocked(model, &scc, &of_unit, detail, &mut units);
    shared(model, &of_unit, detail, &mut units);
    let totals = totals(&units);
    Blast {
        units,
        totals,
        chain: chain(model, &scc.component, scc.members.len()),
    }
}

/// The strongly connected components of the readiness graph: each Kustomization's, and each
/// component's Kustomizations. A component is numbered above every component it reaches.
struct Components {
    /// The readiness edges (`readiness_edges`).
    next: Vec<Vec<(usize, bool)>>,
    component: Vec<usize>,
    members: Vec<Vec<usize>>,
}

impl Components {
    fn of(next: Vec<Vec<(usize, bool)>>) -> Components {
        let (component, count) = crate::graph::scc::components(&next, |&(to, _)| to);
        let mut members: Vec<Vec<usize>> = vec![Vec::new(); count];
        for (k, &c) in component.iter().enumerate() {
            members[c].push(k);
        }
        Components {
            next,
            component,
            members,
        }
    }
}

/// The units some Kustomization applies, with their Kustomizations and whether any gates
/// them; nothing counted yet.
fn unit_entries(of_unit: &[Vec<(usize, bool)>]) -> Vec<UnitBlast> {
    of_unit
        .iter()
        .enumerate()
        .filter(|(_, ks)| !ks.is_empty())
        .map(|(u, ks)| UnitBlast {
            unit: u,
            kustomizations: ks.iter().map(|(k, _)| *k).collect(),
            gated: ks.iter().any(|(_, g)| *g),
            blocks: Units::default(),
            shares: Units::default(),
        })
        .collect()
}

/// One chunk of unit indices, `start..end`: `words` words of each component's row of bits.
#[derive(Clone, Copy)]
struct Chunk {
    start: usize,
    end: usize,
    words: usize,
}

impl Chunk {
    /// Component `c`'s row of `bits`.
    fn row(self, bits: &[u64], c: usize) -> &[u64] {
        &bits[c * CHUNK_WORDS..c * CHUNK_WORDS + self.words]
    }
}

/// What each unit blocks: chunk by chunk of unit indices, the units each component's
/// readiness blocks (`reach`), then each unit's count and first names from the components
/// of its gating Kustomizations (`block_one`).
fn blocked(
    model: &Model,
    scc: &Components,
    of_unit: &[Vec<(usize, bool)>],
    detail: Detail,
    units: &mut [UnitBlast],
) {
    let units_len = model.unit_names.len();
    let count = scc.members.len();
    let chunk_bits = CHUNK_WORDS * 64;
    let mut bits = vec![0u64; count * CHUNK_WORDS];
    let mut acc = [0u64; CHUNK_WORDS];
    let limit = match detail {
        Detail::Count => 0,
        Detail::First(n) => n,
    };
    for start in (0..units_len).step_by(chunk_bits) {
        let end = (start + chunk_bits).min(units_len);
        let chunk = Chunk {
            start,
            end,
            words: (end - start).div_ceil(64),
        };
        reach(model, scc, chunk, &mut bits, &mut acc);
        // Most units have one gating Kustomization: its row, counted once per component.
        let pop: Vec<usize> = (0..count)
            .map(|c| {
                chunk
                    .row(&bits, c)
                    .iter()
                    .map(|w| w.count_ones() as usize)
                    .sum()
            })
            .collect();
        let reached = Reached {
            chunk,
            bits: &bits,
            pop: &pop,
        };
        for ub in units.iter_mut() {
            let gating = of_unit[ub.unit].iter().filter(|(_, g)| *g).map(|(k, _)| *k);
            block_one(ub, gating, &scc.component, &reached, &mut acc, limit);
        }
    }
}

/// Into `bits`, a row per component: the units of `chunk` its readiness blocks, each
/// component after its successors (numbered below it), whose rows it takes in.
fn reach(
    model: &Model,
    scc: &Components,
    chunk: Chunk,
    bits: &mut [u64],
    acc: &mut [u64; CHUNK_WORDS],
) {
    let words = chunk.words;
    bits.iter_mut().for_each(|w| *w = 0);
    for (c, members) in scc.members.iter().enumerate() {
        acc[..words].iter_mut().for_each(|w| *w = 0);
        for &k in members {
            for &(to, blocking) in &scc.next[k] {
                if blocking {
                    let held = &model.holds[to];
                    let from = held.partition_point(|(u, _)| *u < chunk.start);
                    for &(u, _) in held[from..].iter().take_while(|(u, _)| *u < chunk.end) {
                        let b = u - chunk.start;
                        acc[b / 64] |= 1 << (b % 64);
                    }
                }
                let tc = scc.component[to];
                if tc != c {
                    for (a, r) in acc[..words].iter_mut().zip(chunk.row(bits, tc)) {
                        *a |= r;
                    }
                }
            }
        }
        bits[c * CHUNK_WORDS..c * CHUNK_WORDS + words].copy_from_slice(&acc[..words]);
    }
}

/// One chunk's rows (`reach`) and each component's count of set bits in it.
struct Reached<'a> {
    chunk: Chunk,
    bits: &'a [u64],
    pop: &'a [usize],
}

/// What unit `ub` blocks among the units of the chunk: the union of the rows of its gating
/// Kustomizations' components, less itself. Its count is added; names are kept up to
/// `limit` (a unit of wave 0 blocks nearly every unit: walking each bit would be units
/// squared).
fn block_one(
    ub: &mut UnitBlast,
    mut gating: impl Iterator<Item = usize>,
    component: &[usize],
    reached: &Reached,
    acc: &mut [u64; CHUNK_WORDS],
    limit: usize,
) {
    let Reached { chunk, bits, pop } = *reached;
    let (first, second) = (gating.next(), gating.next());
    let Some(first) = first else { return };
    let row: &[u64] = if second.is_none() {
        chunk.row(bits, component[first])
    } else {
        acc[..chunk.words].iter_mut().for_each(|w| *w = 0);
        for k in [first].into_iter().chain(second).chain(gating) {
            for (a, r) in acc[..chunk.words]
                .iter_mut()
                .zip(chunk.row(bits, component[k]))
            {
                *a |= r;
            }
        }
        &acc[..chunk.words]
    };
    // A unit never blocks itself (its files in two Kustomizations, one after the other, or a
    // cycle).
    let own = (chunk.start..chunk.end)
        .contains(&ub.unit)
        .then(|| ub.unit - chunk.start);
    let has_own = own.is_some_and(|b| row[b / 64] & (1 << (b % 64)) != 0);
    let count: usize = if second.is_none() {
        pop[component[first]]
    } else {
        row.iter().map(|w| w.count_ones() as usize).sum()
    };
    ub.blocks.count += count - usize::from(has_own);
    'words: for (w, &word) in row.iter().enumerate() {
        let mut word = word;
        while word != 0 {
            if ub.blocks.kept.len() >= limit {
                break 'words;
            }
            let b = word.trailing_zeros() as usize;
            word &= word - 1;
            if Some(w * 64 + b) != own {
                ub.blocks.kept.push(chunk.start + w * 64 + b);
            }
        }
    }
}

/// What each unit shares a gate with: the other units of the Kustomizations that gate it.
fn shared(model: &Model, of_unit: &[Vec<(usize, bool)>], detail: Detail, units: &mut [UnitBlast]) {
    for ub in units {
        let gates: Vec<usize> = of_unit[ub.unit]
            .iter()
            .filter(|(_, g)| *g)
            .map(|(k, _)| *k)
            .collect();
        match gates.as_slice() {
            [] => {}
            [k] => {
                let held = &model.holds[*k];
                ub.shares.count = held.len() - 1;
                if let Detail::First(limit) = detail {
                    ub.shares.kept = held
                        .iter()
                        .map(|(u, _)| *u)
                        .filter(|u| *u != ub.unit)
                        .take(limit)
                        .collect();
                }
            }
            many => {
                let mut all: Vec<usize> = many
                    .iter()
                    .flat_map(|k| model.holds[*k].iter().map(|(u, _)| *u))
                    .filter(|u| *u != ub.unit)
                    .collect();
                all.sort_unstable();
                all.dedup();
                for u in all {
                    ub.shares.keep(u, detail);
                }
            }
        }
    }
}

/// The sums over every unit, and the unit that blocks most.
fn totals(units: &[UnitBlast]) -> Totals {
    let mut totals = Totals {
        units: units.len(),
        ..Totals::default()
    };
    for ub in units {
        totals.blocked += ub.blocks.count as u64;
        totals.shared += ub.shares.count as u64;
        if ub.blocks.count > 0 && totals.worst.is_none_or(|(_, most)| ub.blocks.count > most) {
            totals.worst = Some((ub.unit, ub.blocks.count));
        }
    }
    totals
}

/// Every unit a unit blocks or shares a gate with, one unit at a time, as `--format json`
/// writes them: a walk from the unit's gating Kustomizations takes time in proportion to
/// what it lists, and holds one unit's lists (a unit of wave 0 of 100,000 blocks most of
/// them: `analyse` keeping every list at once would hold billions of names).
pub struct Lister<'a> {
    model: &'a Model,
    next: Vec<Vec<(usize, bool)>>,
    /// Each unit's gating Kustomizations.
    gates: Vec<Vec<usize>>,
    /// Per Kustomization, the walk that last reached it and the walk that last found it
    /// blocked: stamps, so that no walk clears an array the size of the graph.
    seen: std::cell::RefCell<(u32, Vec<u32>, Vec<u32>)>,
}

impl<'a> Lister<'a> {
    pub fn new(model: &'a Model) -> Lister<'a> {
        let n = model.names.len();
        Lister {
            model,
            next: readiness_edges(model),
            gates: kustomizations_of_units(model)
                .into_iter()
                .map(|ks| ks.into_iter().filter(|(_, g)| *g).map(|(k, _)| k).collect())
                .collect(),
            seen: std::cell::RefCell::new((0, vec![0; n], vec![0; n])),
        }
    }

    /// The units held by Kustomizations that wait, through dependsOn, for one that gates
    /// `unit` or for anything that one's failure makes not Ready; sorted, without `unit`.
    pub fn blocks(&self, unit: usize) -> Vec<usize> {
        let mut guard = self.seen.borrow_mut();
        let (walk, reached, blocked) = &mut *guard;
        *walk += 1;
        let walk = *walk;
        let mut stack: Vec<usize> = Vec::new();
        for &k in &self.gates[unit] {
            if reached[k] != walk {
                reached[k] = walk;
                stack.push(k);
            }
        }
        let mut held = Vec::new();
        while let Some(k) = stack.pop() {
            for &(to, blocking) in &self.next[k] {
                if blocking && blocked[to] != walk {
                    blocked[to] = walk;
                    held.extend(self.model.holds[to].iter().map(|(u, _)| *u));
                }
                if reached[to] != walk {
                    reached[to] = walk;
                    stack.push(to);
                }
            }
        }
        sorted_without(held, unit)
    }

    /// The other units of the Kustomizations that gate `unit`; sorted.
    pub fn shares(&self, unit: usize) -> Vec<usize> {
        let held = self.gates[unit]
            .iter()
            .flat_map(|&k| self.model.holds[k].iter().map(|(u, _)| *u))
            .collect();
        sorted_without(held, unit)
    }
}

fn sorted_without(mut units: Vec<usize>, unit: usize) -> Vec<usize> {
    units.sort_unstable();
    units.dedup();
    units.retain(|&u| u != unit);
    units
}

/// The `dependsOn` chain with the largest sum of timeouts (then the most Kustomizations): a
/// dependency's component is numbered above its dependants', so counting down meets it
/// first. Edges inside a cycle are left out (`dependency-cycle` reports the cycle; none of it
/// ever becomes ready).
fn chain(model: &Model, component: &[usize], count: usize) -> Chain {
    let n = model.names.len();
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); count];
    for (k, &c) in component.iter().enumerate() {
        members[c].push(k);
    }
    // (sum, length, previous) of the best chain ending at each Kustomization.
    let mut best: Vec<(u64, usize, Option<usize>)> = vec![(0, 0, None); n];
    for c in (0..count).rev() {
        for &k in &members[c] {
            let mut here = (model.timeout_ms[k], 1, None);
            for &d in &model.deps[k] {
                if component[d] == c {
                    continue;
                }
                let (sum, len, _) = best[d];
                let candidate = (sum + model.timeout_ms[k], len + 1, Some(d));
                if (candidate.0, candidate.1) > (here.0, here.1) {
                    here = candidate;
                }
            }
            best[k] = here;
        }
    }
    let Some(last) = (0..n).max_by(|&a, &b| {
        (best[a].0, best[a].1)
            .cmp(&(best[b].0, best[b].1))
            .then(b.cmp(&a))
    }) else {
        return Chain::default();
    };
    let mut kustomizations = vec![last];
    let mut at = last;
    while let Some(prev) = best[at].2 {
        kustomizations.push(prev);
        at = prev;
    }
    kustomizations.reverse();
    Chain {
        kustomizations,
        timeout_ms: best[last].0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kustomizations named by one letter, each holding the unit of the same name, every one
    /// waiting for its units; `deps` as (dependant, dependency).
    fn model(names: &[&str], deps: &[(usize, usize)]) -> Model {
        let mut m = Model {
            names: names.iter().map(|n| n.to_string()).collect(),
            deps: vec![Vec::new(); names.len()],
            gated_parent: vec![None; names.len()],
            timeout_ms: vec![60_000; names.len()],
            holds: (0..names.len()).map(|i| vec![(i, true)]).collect(),
            unit_names: names.iter().map(|n| n.to_string()).collect(),
        };
        for &(k, d) in deps {
            m.deps[k].push(d);
        }
        m
    }

    fn blocks(b: &Blast, m: &Model) -> Vec<(String, Vec<String>)> {
        b.units
            .iter()
            .map(|u| {
                let names = u
                    .blocks
                    .kept
                    .iter()
                    .map(|&i| m.unit_names[i].clone())
                    .collect();
                (m.unit_names[u.unit].clone(), names)
            })
            .collect()
    }

    fn owned(pairs: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
        pairs
            .iter()
            .map(|(n, b)| (n.to_string(), b.iter().map(|s| s.to_string()).collect()))
            .collect()
    }

    #[test]
    fn a_diamond_blocks_each_unit_once() {
        // b and c depend on a, d on both: a's failure blocks b, c and d (d once).
        let m = model(&["a", "b", "c", "d"], &[(1, 0), (2, 0), (3, 1), (3, 2)]);
        let b = analyse(&m, Detail::First(usize::MAX));
        assert_eq!(
            blocks(&b, &m),
            owned(&[
                ("a", &["b", "c", "d"]),
                ("b", &["d"]),
                ("c", &["d"]),
                ("d", &[])
            ])
        );
        assert_eq!(b.totals.blocked, 5);
        assert_eq!(b.totals.worst, Some((0, 3)));
        assert_eq!(analyse(&m, Detail::Count).totals, b.totals);
        // The longest chain: a -> b -> d (b before c among equals).
        assert_eq!(b.chain.kustomizations, [0, 1, 3]);
        assert_eq!(b.chain.timeout_ms, 180_000);
    }

    #[test]
    fn a_chain_blocks_everything_after_it() {
        let n = 10_000;
        let names: Vec<String> = (0..n).map(|i| format!("k{i:05}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let deps: Vec<(usize, usize)> = (1..n).map(|i| (i, i - 1)).collect();
        let m = model(&refs, &deps);
        let b = analyse(&m, Detail::First(2));
        assert_eq!(b.units[0].blocks.count, n - 1);
        assert_eq!(b.units[0].blocks.kept, [1, 2]);
        assert_eq!(b.units[n - 2].blocks.kept, [n - 1]);
        assert_eq!(b.totals.blocked, (n as u64 - 1) * n as u64 / 2);
        assert_eq!(b.chain.kustomizations.len(), n);
        assert_eq!(b.chain.timeout_ms, n as u64 * 60_000);
    }

    #[test]
    fn gates_decide_what_is_blocked_and_shared() {
        // a holds units x and y (x gated, y not); b depends on a and holds z; c is the parent
        // of a that waits for it, d depends on c.
        let mut m = model(&["a", "b", "c", "d"], &[(1, 0), (3, 2)]);
        m.unit_names = ["x", "y", "z", "w", "v"].map(String::from).to_vec();
        m.holds = vec![
            vec![(0, true), (1, false)],
            vec![(2, true)],
            vec![(3, true)],
            vec![(4, true)],
        ];
        m.gated_parent[0] = Some(2);
        let b = analyse(&m, Detail::First(usize::MAX));
        // x blocks z (b depends on a) and v (d depends on a's parent c, not Ready while a is
        // not); w, c's own unit, is applied all the same. y's failure blocks nothing.
        assert_eq!(
            blocks(&b, &m),
            owned(&[
                ("x", &["z", "v"]),
                ("y", &[]),
                ("z", &[]),
                ("w", &["v"]),
                ("v", &[])
            ])
        );
        let shares: Vec<Vec<usize>> = b.units.iter().map(|u| u.shares.kept.clone()).collect();
        assert_eq!(shares, [vec![1], vec![], vec![], vec![], vec![]]);
        assert!(!b.units[1].gated);
    }

    #[test]
    fn a_cycle_blocks_its_members_and_ends_no_chain() {
        let m = model(&["a", "b", "c"], &[(0, 1), (1, 0), (2, 1)]);
        let b = analyse(&m, Detail::First(usize::MAX));
        assert_eq!(
            blocks(&b, &m),
            owned(&[("a", &["b", "c"]), ("b", &["a", "c"]), ("c", &[])])
        );
        assert_eq!(b.chain.kustomizations.len(), 2);
    }

    /// The lister's walk and `analyse`'s bitsets agree, on graphs with cycles, parents that
    /// wait for their children, units in several Kustomizations and units no gate covers.
    #[test]
    fn the_lister_lists_what_analyse_counts() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |below: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % below as u64) as usize
        };
        for _ in 0..200 {
            let (ks, units) = (1 + next(12), 1 + next(20));
            let mut m = model(&vec!["k"; ks], &[]);
            m.unit_names = (0..units).map(|u| format!("u{u:02}")).collect();
            m.holds = vec![Vec::new(); ks];
            for u in 0..units {
                for _ in 0..1 + next(2) {
                    m.holds[next(ks)].push((u, next(4) != 0));
                }
            }
            for k in 0..ks {
                m.holds[k].sort_unstable();
                m.holds[k].dedup_by_key(|(u, _)| *u);
                for _ in 0..next(3) {
                    m.deps[k].push(next(ks));
                }
                if next(4) == 0 {
                    m.gated_parent[k] = Some(next(ks));
                }
            }
            let b = analyse(&m, Detail::First(usize::MAX));
            let lister = Lister::new(&m);
            for u in &b.units {
                assert_eq!(lister.blocks(u.unit), u.blocks.kept, "{m:?}");
                assert_eq!(lister.blocks(u.unit).len(), u.blocks.count);
                assert_eq!(lister.shares(u.unit), u.shares.kept, "{m:?}");
            }
        }
    }
}
