//! The topology: which generated Flux Kustomizations (*groups*) the placed units go to, and
//! what each depends on. Under `waves`, one group per wave, each depending on the wave below
//! (wave 0 on `waves.upstream`): a failure holds its wave and every wave above. Under
//! `units`, one group per unit, depending on exactly the groups of the unit's own
//! dependencies: a failure holds only what depends on it. Whatever the topology, a unit with
//! `gating: false` has a group of its own that nothing depends on.
//!
//! A unit's own dependencies are its graph edges: a dependency (or an `above` anchor) is one;
//! a plain anchor (`above: false`, "the anchor's wave") is not, and the unit depends on
//! what its anchor depends on instead, so it starts beside the anchor as it does in a wave.

use crate::config::{Config, Topology};
use crate::error::{Result, SourceError};
use crate::graph::Graph;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum GroupKind {
    /// Wave N.
    Wave(usize),
    /// The group of one unit (a graph node index).
    Unit(usize),
}

/// One generated Flux Kustomization and the folder of the app tier it builds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub kind: GroupKind,
    /// The Flux Kustomization's name: `apps-wave-1`, `apps-gitea`.
    pub name: String,
    /// Its folder under the app tier: `wave-1`, `gitea`.
    pub folder: String,
    /// The placed units it holds (graph node indices), sorted.
    pub members: Vec<usize>,
    /// The Kustomizations it depends on, by name: other groups, or `waves.upstream`.
    pub depends_on: Vec<String>,
}

impl Group {
    /// The Flux Kustomization fluxwave writes for it.
    pub fn kustomization<'a>(&'a self, what: &'a str) -> crate::flux::emit::GroupKustomization<'a> {
        crate::flux::emit::GroupKustomization {
            name: &self.name,
            folder: &self.folder,
            depends_on: &self.depends_on,
            what,
        }
    }

    /// What it is in the first line of the files fluxwave writes for it: `wave 1`, `unit gitea`.
    pub fn what(&self, graph: &Graph) -> String {
        match self.kind {
            GroupKind::Wave(n) => format!("wave {n}"),
            GroupKind::Unit(u) => format!("unit {}", graph.nodes[u].name),
        }
    }
    /// Wave `n`, empty: it depends on the wave below, wave 0 on `waves.upstream`.
    pub fn wave(config: &Config, n: usize) -> Group {
        Group {
            kind: GroupKind::Wave(n),
            name: config.wave_name(n),
            // As `folder_of` names it.
            folder: format!("wave-{n}"),
            members: vec![],
            depends_on: if n == 0 {
                config.waves.upstream.clone()
            } else {
                vec![config.wave_name(n - 1)]
            },
        }
    }

    /// For people: `wave 1`, `unit `gitea``.
    pub fn describe(&self, graph: &Graph) -> String {
        match self.kind {
            GroupKind::Wave(n) => format!("wave {n}"),
            GroupKind::Unit(u) => format!("unit `{}`", graph.nodes[u].name),
        }
    }
}

/// The groups of one topology.
#[derive(Debug, Clone, Default)]
pub struct Layout {
    /// The waves in order, then the units' own groups by (wave, name).
    pub groups: Vec<Group>,
    /// Per graph node: the index of its group, None when it is not placed.
    pub group_of: Vec<Option<usize>>,
}

impl Layout {
    /// The layout of `topology` for the repository's placed units.
    pub fn new(repo: &crate::repo::Repo, plan: &super::Plan, topology: Topology) -> Result<Layout> {
        Layout::of(&repo.graph, &plan.placed, &repo.config, topology)
    }

    /// The layout of `topology` for the nodes of `graph` that are `placed`.
    pub fn of(
        graph: &Graph,
        placed: &[bool],
        config: &Config,
        topology: Topology,
    ) -> Result<Layout> {
        let n = graph.nodes.len();
        let own = |i: usize| has_own_group(topology, &graph.nodes[i]);
        let mut group_of = vec![None; n];
        let mut groups = Vec::new();
        let waves = (0..n)
            .filter(|&i| placed[i] && !own(i))
            .map(|i| graph.nodes[i].wave + 1)
            .max()
            .unwrap_or(0);
        groups.extend((0..waves).map(|w| Group::wave(config, w)));
        for i in (0..n).filter(|&i| placed[i] && !own(i)) {
            let w = graph.nodes[i].wave;
            groups[w].members.push(i);
            group_of[i] = Some(w);
        }
        let mut units: Vec<usize> = (0..n).filter(|&i| placed[i] && own(i)).collect();
        units.sort_by_key(|&i| (graph.nodes[i].wave, i));
        let deps = match topology {
            Topology::Units => own_dependencies(graph),
            Topology::Waves => vec![],
        };
        for i in units {
            let node = &graph.nodes[i];
            let name = config.unit_kustomization_name(&node.name);
            if node
                .name
                .strip_prefix("wave-")
                .is_some_and(|w| crate::config::wave_number(w).is_some())
                || config.wave_of_name(&name).is_some()
            {
                return Err(SourceError::new(
                    crate::config::FILE,
                    format!(
                        "unit `{}` would get the Kustomization `{name}` in folder `{}/{}`, the name of a wave's",
                        node.name, config.apps, node.name
                    ),
                )
                .help("rename the unit, or set waves.unitNamePrefix (or waves.namePrefix) in fluxwave.yaml so that the two cannot meet")
                .into());
            }
            let depends_on = match topology {
                Topology::Units => {
                    let mut names: Vec<String> = deps[i]
                        .iter()
                        .filter(|&&d| placed[d])
                        .map(|&d| config.unit_kustomization_name(&graph.nodes[d].name))
                        .collect();
                    names.sort();
                    names.dedup();
                    names
                }
                // Under waves, a unit of its own starts once the wave of what it depends on
                // is ready: the wave below its own (the waves are chained).
                Topology::Waves if node.wave > 0 => vec![config.wave_name(node.wave - 1)],
                Topology::Waves => vec![],
            };
            group_of[i] = Some(groups.len());
            groups.push(Group {
                kind: GroupKind::Unit(i),
                name,
                folder: folder_of(topology, node),
                members: vec![i],
                depends_on: if depends_on.is_empty() {
                    config.waves.upstream.clone()
                } else {
                    depends_on
                },
            });
        }
        Ok(Layout { groups, group_of })
    }

    /// The number of wave groups (they come first).
    pub fn waves(&self) -> usize {
        self.groups
            .iter()
            .take_while(|g| matches!(g.kind, GroupKind::Wave(_)))
            .count()
    }
}

/// Whether a node has a group of its own under `topology` (else it is in its wave's).
pub fn has_own_group(topology: Topology, node: &crate::graph::Node) -> bool {
    topology == Topology::Units || !node.gating
}

/// The folder under the app tier of a node's group under `topology`: its own, or its wave's.
pub fn folder_of(topology: Topology, node: &crate::graph::Node) -> String {
    if has_own_group(topology, node) {
        node.name.clone()
    } else {
        format!("wave-{}", node.wave)
    }
}

/// Per node, the nodes whose groups it depends on under `units`: the target of each edge
/// that costs a wave, and for a plain anchor the anchor's own (iteratively: a chain of plain
/// anchors may be as long as the graph).
pub fn own_dependencies(graph: &Graph) -> Vec<Vec<usize>> {
    let n = graph.nodes.len();
    let mut deps: Vec<Option<Vec<usize>>> = vec![None; n];
    for root in 0..n {
        let mut stack = vec![root];
        while let Some(&i) = stack.last() {
            if deps[i].is_some() {
                stack.pop();
                continue;
            }
            let pending: Vec<usize> = graph.nodes[i]
                .edges
                .iter()
                .filter(|e| e.weight == 0 && deps[e.to].is_none())
                .map(|e| e.to)
                .collect();
            if !pending.is_empty() {
                stack.extend(pending);
                continue;
            }
            let mut own = Vec::new();
            for e in &graph.nodes[i].edges {
                if e.weight == 0 {
                    own.extend(deps[e.to].iter().flatten().copied());
                } else {
                    own.push(e.to);
                }
            }
            own.sort_unstable();
            own.dedup();
            deps[i] = Some(own);
            stack.pop();
        }
    }
    deps.into_iter().map(Option::unwrap_or_default).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{self, Service};
    use crate::yaml::Text;

    fn service(name: &str, deps: &[&str], gating: bool) -> Service {
        let deps: String = deps.iter().map(|d| format!("    - to: {d}\n")).collect();
        let gating = if gating { "" } else { "  gating: false\n" };
        let text = format!(
            "apiVersion: fluxwave.dev/v1alpha1\nkind: ServiceDefinition\nmetadata:\n  name: {name}\nspec:\n  dependencies:\n{deps}{gating}  image: {{repository: x, tag: \"1\"}}\n"
        );
        catalog::parse(&format!("catalog/{name}.yaml"), name, Text::new(text)).unwrap()
    }

    fn homelab(topology: &str) -> (Graph, Config) {
        let config = Config::parse(&Text::new(format!(
            "topology: {topology}\nunits:\n  - {{name: gitea-actions, anchor: gitea, above: true, gating: false}}\n  - {{name: db-backup, anchor: nextcloud-db}}\n"
        )))
        .unwrap();
        let mut services = vec![
            service("gitea", &[], true),
            service("jackett", &[], true),
            service("nextcloud", &["nextcloud-db"], true),
            service("seerr", &["sonarr", "jackett"], true),
            service("sonarr", &["jackett"], true),
        ];
        services.sort_by(|a, b| a.name.cmp(&b.name));
        (Graph::build(&services, &config).unwrap(), config)
    }

    fn shape(layout: &Layout, graph: &Graph) -> Vec<String> {
        layout
            .groups
            .iter()
            .map(|g| {
                let members: Vec<&str> = g
                    .members
                    .iter()
                    .map(|&m| graph.nodes[m].name.as_str())
                    .collect();
                format!(
                    "{} [{}] <- {}",
                    g.name,
                    members.join(" "),
                    g.depends_on.join(" ")
                )
            })
            .collect()
    }

    #[test]
    fn waves_with_a_unit_that_is_not_gating() {
        let (graph, config) = homelab("waves");
        let placed = vec![true; graph.nodes.len()];
        let layout = Layout::of(&graph, &placed, &config, Topology::Waves).unwrap();
        assert_eq!(
            shape(&layout, &graph),
            [
                "apps-wave-0 [db-backup gitea jackett nextcloud-db] <- platform-config",
                "apps-wave-1 [nextcloud sonarr] <- apps-wave-0",
                "apps-wave-2 [seerr] <- apps-wave-1",
                "apps-gitea-actions [gitea-actions] <- apps-wave-0",
            ]
        );
        assert_eq!(layout.waves(), 3);
    }

    #[test]
    fn units_depend_on_exactly_their_own_dependencies() {
        let (graph, config) = homelab("units");
        let placed = vec![true; graph.nodes.len()];
        let layout = Layout::of(&graph, &placed, &config, Topology::Units).unwrap();
        assert_eq!(
            shape(&layout, &graph),
            [
                // A plain anchor starts beside its anchor: it depends on what that depends on.
                "apps-db-backup [db-backup] <- platform-config",
                "apps-gitea [gitea] <- platform-config",
                "apps-jackett [jackett] <- platform-config",
                "apps-nextcloud-db [nextcloud-db] <- platform-config",
                "apps-gitea-actions [gitea-actions] <- apps-gitea",
                "apps-nextcloud [nextcloud] <- apps-nextcloud-db",
                "apps-sonarr [sonarr] <- apps-jackett",
                "apps-seerr [seerr] <- apps-jackett apps-sonarr",
            ]
        );
        assert_eq!(layout.waves(), 0);
    }

    #[test]
    fn a_unit_named_like_a_wave_is_refused_its_own_group() {
        let config = Config::parse(&Text::new("topology: units\n".into())).unwrap();
        let graph = Graph::build(&[service("wave-1", &[], true)], &config).unwrap();
        let err = Layout::of(&graph, &[true], &config, Topology::Units).unwrap_err();
        assert!(err.to_string().contains("the name of a wave's"), "{err}");
        // Under waves it has no group of its own, so nothing clashes.
        assert!(Layout::of(&graph, &[true], &config, Topology::Waves).is_ok());
    }

    #[test]
    fn a_dependency_on_a_unit_that_is_not_gating_names_both() {
        let services = vec![service("a", &["b"], true), service("b", &[], false)];
        let err = Graph::build(&services, &Config::default()).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("`a` depends on `b`, which is not gating"),
            "{text}"
        );
        assert!(text.starts_with("catalog/a.yaml:"), "{text}");
    }
}
