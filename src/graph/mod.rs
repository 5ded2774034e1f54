//! The dependency graph of the app tier: catalog services, `<svc>-db` database leaves and
//! the extra units of `fluxwave.yaml`. A node's wave is the length of its longest dependency
//! path (a dependency costs one wave, a unit's anchor one with `above: true` and none
//! without). Computed iteratively, so a 100,000-node chain cannot overflow the stack; a cycle
//! is an error that prints the whole cycle from its alphabetically first node.

pub(crate) mod scc;

use foldhash::HashMap;
use foldhash::HashMapExt;

use crate::catalog::Service;
use crate::config::{self, Config};
use crate::error::{Error, Result, SourceError};
use crate::yaml::Text;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum NodeKind {
    Service,
    Database,
    Unit,
}

impl NodeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            NodeKind::Service => "service",
            NodeKind::Database => "database",
            NodeKind::Unit => "unit",
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Edge {
    pub to: usize,
    /// Waves this edge adds: 1 for a dependency and an `above` anchor, 0 for a plain anchor.
    pub weight: usize,
}

#[derive(Debug, Clone)]
pub struct Node {
    pub name: String,
    pub kind: NodeKind,
    pub edges: Vec<Edge>,
    pub wave: usize,
    /// The edge that sets the wave (the first, by name, of the highest): the reason.
    pub via: Option<usize>,
    /// Nodes with an edge to this one, sorted.
    pub dependants: Vec<usize>,
    /// False for a unit nothing waits for (`gating: false`): it gets a Flux Kustomization of
    /// its own whatever the topology, and no edge may lead to it.
    pub gating: bool,
}

#[derive(Debug, Clone, Default)]
pub struct Graph {
    /// Sorted by name; indices are stable identifiers.
    pub nodes: Vec<Node>,
    pub index: HashMap<String, usize>,
}

/// Where an edge was declared, for error messages.
#[derive(Clone)]
enum Origin {
    Catalog { service: usize, dep: usize },
    Unit(usize),
}

impl Origin {
    /// The declaration of the edge `from -> to` (looked up only to report a cycle).
    fn of(services: &[Service], config: &Config, from: &str, to: &str) -> Option<Origin> {
        let unit = config
            .units
            .iter()
            .rposition(|u| u.name == from && u.anchor == to)
            .map(Origin::Unit);
        let service = services.iter().enumerate().rev().find_map(|(si, s)| {
            (s.name == from).then_some(())?;
            let dep = s.dependencies.iter().position(|d| d.to == to)?;
            Some(Origin::Catalog { service: si, dep })
        });
        unit.or(service)
    }
}

/// The nodes of a graph by name, before their edges.
struct Names<'a> {
    /// Every node's name and kind, sorted by name: its index is the node's.
    names: Vec<(String, NodeKind)>,
    /// The units of fluxwave.yaml that are nodes, with their index in `config.units`.
    unit_names: HashMap<&'a str, usize>,
    /// The services and units with `gating: false`.
    not_gating: HashMap<&'a str, ()>,
}

impl<'a> Names<'a> {
    /// The catalog's services, the units of `config` (one with a service's name is an
    /// error, and no node) and every unknown `-db` target as a database leaf.
    fn of(
        services: &'a [Service],
        config: &'a Config,
        config_text: &Text,
        errors: &mut Vec<SourceError>,
    ) -> Names<'a> {
        let service_names: HashMap<&str, usize> = services
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name.as_str(), i))
            .collect();
        let mut names: Vec<(String, NodeKind)> = services
            .iter()
            .map(|s| (s.name.clone(), NodeKind::Service))
            .collect();
        let mut not_gating: HashMap<&str, ()> = services
            .iter()
            .filter(|s| s.spec.gating == Some(false))
            .map(|s| (s.name.as_str(), ()))
            .collect();
        let mut unit_names: HashMap<&str, usize> = HashMap::new();
        for (i, u) in config.units.iter().enumerate() {
            if service_names.contains_key(u.name.as_str()) {
                errors.push(
                    SourceError::new(
                        config::FILE,
                        format!("unit `{}` has the name of a catalog service", u.name),
                    )
                    .at(config_text, u.name_span)
                    .help(format!(
                        "rename the unit, or delete it and give catalog/{}.yaml its dependencies",
                        u.name
                    )),
                );
                continue;
            }
            unit_names.insert(&u.name, i);
            if !u.gating {
                not_gating.insert(&u.name, ());
            }
            names.push((u.name.clone(), NodeKind::Unit));
        }
        let known = |n: &str| service_names.contains_key(n) || unit_names.contains_key(n);
        // Every unknown `-db` target is a database leaf.
        let mut leaves: Vec<&str> = services
            .iter()
            .flat_map(|s| s.dependencies.iter().map(|d| d.to.as_str()))
            .chain(config.units.iter().map(|u| u.anchor.as_str()))
            .filter(|t| !known(t) && t.ends_with("-db"))
            .collect();
        leaves.sort_unstable();
        leaves.dedup();
        names.extend(leaves.iter().map(|l| (l.to_string(), NodeKind::Database)));
        names.sort();
        Names {
            names,
            unit_names,
            not_gating,
        }
    }
}

/// What the edges are made from: the nodes by name, and the text of fluxwave.yaml where a
/// unit's anchor is reported.
struct Wiring<'a> {
    names: &'a [(String, NodeKind)],
    index: &'a HashMap<String, usize>,
    config_text: &'a Text,
}

impl Wiring<'_> {
    /// The help for an unknown target: the closest name when it is close.
    fn suggest(&self, target: &str) -> String {
        let best = self
            .names
            .iter()
            .map(|(n, _)| (strsim::levenshtein(n, target), n))
            .min();
        match best {
            Some((d, n)) if d <= target.len().max(3) / 2 + 1 => format!("did you mean `{n}`?"),
            _ => "name a catalog service, an extra unit of fluxwave.yaml, or a `<svc>-db` database"
                .into(),
        }
    }

    /// The edge of each service's dependencies; an unknown or non-gating target is an error.
    fn dependencies(
        &self,
        services: &[Service],
        nodes: &mut [Node],
        errors: &mut Vec<SourceError>,
    ) {
        for s in services {
            let from = self.index[&s.name];
            for d in &s.dependencies {
                match self.index.get(&d.to) {
                    Some(&to) if !nodes[to].gating => errors.push(
                        SourceError::new(
                            &s.path,
                            format!("`{}` depends on `{}`, which is not gating", s.name, d.to),
                        )
                        .at(&s.text, d.span)
                        .help(not_gating_help(&d.to)),
                    ),
                    Some(&to) => nodes[from].edges.push(Edge { to, weight: 1 }),
                    None => errors.push(
                        SourceError::new(&s.path, format!("unknown dependency `{}`", d.to))
                            .at(&s.text, d.span)
                            .help(self.suggest(&d.to)),
                    ),
                }
            }
        }
    }

    /// The edge of each unit to its anchor (one wave with `above`, none without); an unknown
    /// or non-gating anchor is an error. A unit that is no node (`unit_names`) has none.
    fn anchors(
        &self,
        config: &Config,
        unit_names: &HashMap<&str, usize>,
        nodes: &mut [Node],
        errors: &mut Vec<SourceError>,
    ) {
        for u in &config.units {
            let Some(&from) = unit_names
                .get(u.name.as_str())
                .and_then(|_| self.index.get(&u.name))
            else {
                continue;
            };
            match self.index.get(&u.anchor) {
                Some(&to) if !nodes[to].gating => errors.push(
                    SourceError::new(
                        config::FILE,
                        format!(
                            "unit `{}` anchors on `{}`, which is not gating",
                            u.name, u.anchor
                        ),
                    )
                    .at(self.config_text, u.anchor_span)
                    .help(not_gating_help(&u.anchor)),
                ),
                Some(&to) => {
                    nodes[from].edges.push(Edge {
                        to,
                        weight: usize::from(u.above),
                    });
                }
                None => errors.push(
                    SourceError::new(
                        config::FILE,
                        format!("unit `{}` anchors on unknown `{}`", u.name, u.anchor),
                    )
                    .at(self.config_text, u.anchor_span)
                    .help(self.suggest(&u.anchor)),
                ),
            }
        }
    }
}

/// Nothing waits for a unit that is not gating: an edge to one would order a unit after
/// something its Kustomization is never told to wait for.
fn not_gating_help(to: &str) -> String {
    format!("`{to}` has `gating: false`, so nothing waits for it: remove this dependency, or make `{to}` gating again")
}

impl Graph {
    /// The graph of `services` and the units of `config`, with every node's wave; every
    /// unknown or non-gating dependency is reported at once, and a cycle whole.
    pub fn build(services: &[Service], config: &Config) -> Result<Graph> {
        let mut errors = Vec::new();
        let config_text = config.text.clone().unwrap_or_default();
        let named = Names::of(services, config, &config_text, &mut errors);
        let index: HashMap<String, usize> = named
            .names
            .iter()
            .enumerate()
            .map(|(i, (n, _))| (n.clone(), i))
            .collect();
        let mut nodes: Vec<Node> = named
            .names
            .iter()
            .map(|(name, kind)| Node {
                name: name.clone(),
                kind: *kind,
                edges: vec![],
                wave: 0,
                via: None,
                dependants: vec![],
                gating: !named.not_gating.contains_key(name.as_str()),
            })
            .collect();
        let wiring = Wiring {
            names: &named.names,
            index: &index,
            config_text: &config_text,
        };
        wiring.dependencies(services, &mut nodes, &mut errors);
        wiring.anchors(config, &named.unit_names, &mut nodes, &mut errors);
        if !errors.is_empty() {
            return Err(Error::Input(errors));
        }
        for n in &mut nodes {
            n.edges.sort_by_key(|e| e.to);
        }
        let mut graph = Graph { nodes, index };
        if let Err(cycle) = graph.compute_waves() {
            return Err(graph.cycle_error(&cycle, services, config, &config_text));
        }
        for i in 0..graph.nodes.len() {
            for e in graph.nodes[i].edges.clone() {
                graph.nodes[e.to].dependants.push(i);
            }
        }
        Ok(graph)
    }

    /// The error for `cycle` (its nodes from the alphabetically first), at the declaration
    /// of its first edge.
    fn cycle_error(
        &self,
        cycle: &[usize],
        services: &[Service],
        config: &Config,
        config_text: &Text,
    ) -> Error {
        let first = cycle[0];
        let text = cycle
            .iter()
            .chain(std::iter::once(&first))
            .map(|&i| self.nodes[i].name.as_str())
            .collect::<Vec<_>>()
            .join(" -> ");
        let message = format!("dependency cycle: {text}");
        let help =
            "a wave needs every dependency in a lower wave: remove one of these dependencies";
        let origin = Origin::of(
            services,
            config,
            &self.nodes[cycle[0]].name,
            &self.nodes[cycle[1 % cycle.len()]].name,
        );
        let err = match origin.as_ref() {
            Some(Origin::Catalog { service, dep }) => {
                let s = &services[*service];
                SourceError::new(&s.path, message).at(&s.text, s.dependencies[*dep].span)
            }
            Some(Origin::Unit(u)) => SourceError::new(config::FILE, message)
                .at(config_text, config.units[*u].anchor_span),
            None => SourceError::new(config::FILE, message),
        };
        err.help(help).into()
    }

    /// Longest-path waves by an iterative depth-first search; on a cycle, returns its nodes
    /// starting from the alphabetically first (the lowest index).
    fn compute_waves(&mut self) -> std::result::Result<(), Vec<usize>> {
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            New,
            Open,
            Done,
        }
        let n = self.nodes.len();
        let mut mark = vec![Mark::New; n];
        let mut stack: Vec<(usize, usize)> = Vec::new();
        for root in 0..n {
            if mark[root] != Mark::New {
                continue;
            }
            stack.push((root, 0));
            mark[root] = Mark::Open;
            while let Some(&mut (node, ref mut next)) = stack.last_mut() {
                if let Some(&edge) = self.nodes[node].edges.get(*next) {
                    *next += 1;
                    match mark[edge.to] {
                        Mark::New => {
                            mark[edge.to] = Mark::Open;
                            stack.push((edge.to, 0));
                        }
                        Mark::Open => {
                            let pos = stack.iter().position(|&(v, _)| v == edge.to).unwrap_or(0);
                            let mut cycle: Vec<usize> =
                                stack[pos..].iter().map(|&(v, _)| v).collect();
                            let min = cycle
                                .iter()
                                .enumerate()
                                .min_by_key(|(_, &v)| v)
                                .map_or(0, |(i, _)| i);
                            cycle.rotate_left(min);
                            return Err(cycle);
                        }
                        Mark::Done => {}
                    }
                } else {
                    let (mut wave, mut via) = (0, None);
                    for e in &self.nodes[node].edges {
                        let w = self.nodes[e.to].wave + e.weight;
                        if via.is_none() || w > wave {
                            wave = w;
                            via = Some(e.to);
                        }
                    }
                    self.nodes[node].wave = wave;
                    self.nodes[node].via = via;
                    mark[node] = Mark::Done;
                    stack.pop();
                }
            }
        }
        Ok(())
    }

    pub fn get(&self, name: &str) -> Option<&Node> {
        self.index.get(name).map(|&i| &self.nodes[i])
    }

    /// The dependency path that sets a node's wave: the node, then each `via` in turn.
    pub fn path(&self, node: usize) -> Vec<usize> {
        let mut path = vec![node];
        let mut cur = node;
        while let Some(next) = self.nodes[cur].via {
            path.push(next);
            cur = next;
        }
        path
    }

    /// Why a node is in its wave, in words (the Reason column of `waves --format markdown`).
    pub fn reason(&self, i: usize, unit_above: impl Fn(&str) -> bool) -> String {
        let mut s = String::new();
        self.write_reason(i, unit_above, backticked, &mut s);
        s
    }

    /// `reason`, appended to `out`, each name written by `name` (`backticked`, or as the
    /// format quotes names); written piece by piece: `waves` writes one per node.
    pub fn write_reason(
        &self,
        i: usize,
        unit_above: impl Fn(&str) -> bool,
        name: impl Fn(&mut String, &str),
        out: &mut String,
    ) {
        use std::fmt::Write as _;
        let node = &self.nodes[i];
        let name_wave = |out: &mut String, j: usize| {
            name(out, &self.nodes[j].name);
            let _ = write!(out, " (w{})", self.nodes[j].wave);
        };
        match node.kind {
            NodeKind::Unit => match node.edges.first().map(|e| e.to) {
                Some(a) => {
                    out.push_str("unit: anchor ");
                    name_wave(out, a);
                    out.push_str(if unit_above(&node.name) {
                        ", above -> one wave up"
                    } else {
                        ", same wave"
                    });
                }
                None => out.push_str("unit"),
            },
            NodeKind::Database if node.edges.is_empty() => {
                out.push_str("database leaf");
                for (k, &d) in node.dependants.iter().enumerate() {
                    out.push_str(if k == 0 { "; strictly below " } else { ", " });
                    name(out, &self.nodes[d].name);
                }
            }
            _ if node.edges.is_empty() => out.push_str("no dependencies (leaf)"),
            _ => {
                out.push_str("-> ");
                for (k, e) in node.edges.iter().enumerate() {
                    if k > 0 {
                        out.push_str(", ");
                    }
                    name_wave(out, e.to);
                }
            }
        }
    }

    /// The largest wave of any node (0 for an empty graph).
    pub fn max_wave(&self) -> usize {
        self.nodes.iter().map(|n| n.wave).max().unwrap_or(0)
    }
}

/// A name in backticks, as `reason` writes it.
pub fn backticked(out: &mut String, name: &str) {
    out.push('`');
    out.push_str(name);
    out.push('`');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog;
    use crate::yaml::Text;

    fn service(name: &str, deps: &[&str]) -> Service {
        let deps: String = deps.iter().map(|d| format!("    - to: {d}\n")).collect();
        let text = format!(
            "apiVersion: fluxwave.dev/v1alpha1\nkind: ServiceDefinition\nmetadata:\n  name: {name}\nspec:\n  dependencies:\n{deps}  image: {{repository: x, tag: \"1\"}}\n"
        );
        catalog::parse(&format!("catalog/{name}.yaml"), name, Text::new(text)).unwrap()
    }

    fn config(units: &str) -> Config {
        Config::parse(&Text::new(format!("units:\n{units}"))).unwrap()
    }

    fn waves(g: &Graph) -> Vec<(String, usize)> {
        g.nodes.iter().map(|n| (n.name.clone(), n.wave)).collect()
    }

    #[test]
    fn longest_path_with_database_leaves_and_units() {
        let services = vec![
            service("gitea", &[]),
            service("jackett", &[]),
            service("nextcloud", &["nextcloud-db"]),
            service("seerr", &["sonarr", "jackett"]),
            service("sonarr", &["jackett"]),
        ];
        let g = Graph::build(&services, &config("  - {name: gitea-actions, anchor: gitea, above: true}\n  - {name: db-backup, anchor: nextcloud-db}\n")).unwrap();
        let w: HashMap<_, _> = waves(&g).into_iter().collect();
        assert_eq!(w["seerr"], 2);
        assert_eq!(w["sonarr"], 1);
        assert_eq!(w["nextcloud-db"], 0);
        assert_eq!(w["nextcloud"], 1);
        assert_eq!(w["gitea-actions"], 1);
        assert_eq!(w["db-backup"], 0);
        assert_eq!(g.get("nextcloud-db").unwrap().kind, NodeKind::Database);
        let path: Vec<_> = g
            .path(g.index["seerr"])
            .iter()
            .map(|&i| g.nodes[i].name.clone())
            .collect();
        assert_eq!(path, ["seerr", "sonarr", "jackett"]);
    }

    #[test]
    fn cycle_is_printed_from_its_first_node() {
        let services = vec![
            service("b", &["c"]),
            service("c", &["a"]),
            service("a", &["b"]),
            service("d", &["a"]),
        ];
        let mut sorted = services.clone();
        sorted.sort_by(|x, y| x.name.cmp(&y.name));
        let err = Graph::build(&sorted, &Config::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("dependency cycle: a -> b -> c -> a"), "{err}");
        assert!(err.starts_with("catalog/a.yaml:"), "{err}");
    }

    #[test]
    fn unknown_dependency_suggests_the_closest_name() {
        let err = Graph::build(
            &[service("sonarr", &["jacket"]), service("jackett", &[])],
            &Config::default(),
        )
        .unwrap_err();
        let Error::Input(errs) = err else { panic!() };
        assert_eq!(errs[0].message, "unknown dependency `jacket`");
        assert_eq!(errs[0].help.as_deref(), Some("did you mean `jackett`?"));
    }

    #[test]
    fn unit_clashing_with_a_service_is_an_error() {
        let err = Graph::build(
            &[service("gitea", &[])],
            &config("  - {name: gitea, anchor: gitea}\n"),
        )
        .unwrap_err();
        assert!(err
            .to_string()
            .contains("has the name of a catalog service"));
    }

    #[test]
    fn long_chains_do_not_overflow() {
        let services: Vec<Service> = (0..20_000)
            .map(|i| {
                if i == 0 {
                    service("s00000", &[])
                } else {
                    service(&format!("s{i:05}"), &[&format!("s{:05}", i - 1)])
                }
            })
            .collect();
        let g = Graph::build(&services, &Config::default()).unwrap();
        assert_eq!(g.max_wave(), 19_999);
    }
}
