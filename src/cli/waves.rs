//! `fluxwave waves`: every node, its wave, kind, whether it is placed, and why.

use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

use serde_json::json;

use super::format::Format;
use super::layout::{group_json, managed_here};
use super::markdown;
use super::report::{io, Outcome, JSON_VERSION};
use crate::config::Topology;
use crate::error::Result;
use crate::graph::NodeKind;
use crate::plan::Plan;
use crate::plural::count;
use crate::repo::Repo;

pub fn run(root: &Path, format: Format, out: &mut impl Write) -> Result<Outcome> {
    managed_here(root)?;
    let repo = Repo::load(root)?;
    let plan = Plan::new(&repo.graph, &repo.apps, &repo.config)?;
    let text = match format {
        Format::Text => text(&repo, &plan),
        Format::Json => json(&repo, &plan),
        Format::Markdown => markdown(&repo, &plan),
        Format::Mermaid => mermaid(&repo, &plan),
        other => return Err(other.unsupported("waves")),
    };
    out.write_all(text.as_bytes()).map_err(io)?;
    // The process ends next: freeing every service, node and file name one by one is work
    // for nothing (~4% of `waves` at 10,000 services).
    std::mem::forget((repo, plan));
    Ok(Outcome::Clean)
}

fn above(repo: &Repo) -> impl Fn(&str) -> bool + '_ {
    |name| repo.config.units.iter().any(|u| u.name == name && u.above)
}

/// Node indices sorted by (wave, name).
fn order(repo: &Repo) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..repo.graph.nodes.len()).collect();
    idx.sort_by_key(|&i| (repo.graph.nodes[i].wave, i));
    idx
}

/// Each node's files, in plan order (one pass: filtering per node was quadratic).
fn files_by_node(plan: &Plan) -> Vec<Vec<&str>> {
    let mut files = vec![Vec::new(); plan.placed.len()];
    for p in &plan.placements {
        files[p.owner].push(p.file.as_str());
    }
    files
}

fn text(repo: &Repo, plan: &Plan) -> String {
    let g = &repo.graph;
    let width = g
        .nodes
        .iter()
        .map(|n| n.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut s = String::with_capacity((width + 60) * (g.nodes.len() + 2));
    let _ = writeln!(
        s,
        "{:<4}  {:<width$}  {:<8}  {:<10}  REASON",
        "WAVE", "NAME", "KIND", "PLACED"
    );
    let above = above(repo);
    for i in order(repo) {
        let n = &g.nodes[i];
        let placed = if plan.placed[i] {
            "placed    "
        } else {
            "not placed"
        };
        // Written piece by piece: `format!` with padding per row was 13% of `waves`.
        let _ = write!(s, "{:<4}  ", n.wave);
        s.push_str(&n.name);
        s.extend(std::iter::repeat_n(' ', width - n.name.len() + 2));
        s.push_str(n.kind.as_str());
        s.extend(std::iter::repeat_n(' ', 8 - n.kind.as_str().len() + 2));
        s.push_str(placed);
        s.push_str("  ");
        g.write_reason(i, &above, crate::graph::backticked, &mut s);
        s.push('\n');
    }
    let unplaced = plan.placed.iter().filter(|p| !**p).count();
    s.push_str(&format!(
        "\n{}, {}, {} placed, {} not placed\n",
        count(plan.waves, "wave"),
        count(g.nodes.len(), "node"),
        g.nodes.len() - unplaced,
        unplaced
    ));
    s.push_str(&topology_line(repo, plan, str::to_string));
    s
}

/// The topology in one line, and the units nothing waits for; each name as `name` writes it.
fn topology_line(repo: &Repo, plan: &Plan, name: fn(&str) -> String) -> String {
    let config = &repo.config;
    let mut s = match config.topology {
        Topology::Waves => format!(
            "topology: waves (one Flux Kustomization per wave, {})\n",
            name(&format!("{}<N>", config.waves.name_prefix))
        ),
        Topology::Units => format!(
            "topology: units (one Flux Kustomization per unit, {}, {})\n",
            name(&format!("{}<unit>", config.waves.unit_name_prefix)),
            plan.describe_groups()
        ),
    };
    let not_gating: Vec<String> = repo
        .graph
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| !n.gating)
        .map(|(i, n)| match plan.layout.group_of[i] {
            Some(gr) => format!("{} ({})", name(&n.name), name(&plan.groups()[gr].name)),
            None => name(&n.name),
        })
        .collect();
    if !not_gating.is_empty() {
        s.push_str(&format!(
            "not gating (a Kustomization of its own that nothing waits for): {}\n",
            not_gating.join(", ")
        ));
    }
    s
}

fn json(repo: &Repo, plan: &Plan) -> String {
    let g = &repo.graph;
    let files = files_by_node(plan);
    let nodes: Vec<_> = order(repo)
        .into_iter()
        .map(|i| {
            let n = &g.nodes[i];
            json!({
                "name": n.name,
                "wave": n.wave,
                "kind": n.kind.as_str(),
                "placed": plan.placed[i],
                "files": files[i],
                "dependsOn": n.edges.iter().map(|e| g.nodes[e.to].name.as_str()).collect::<Vec<_>>(),
                "path": g.path(i).iter().map(|&j| g.nodes[j].name.as_str()).collect::<Vec<_>>(),
                "reason": g.reason(i, above(repo)),
                "gating": n.gating,
                "kustomization": plan.layout.group_of[i].map(|gr| plan.groups()[gr].name.as_str()),
            })
        })
        .collect();
    let groups: Vec<_> = plan
        .groups()
        .iter()
        .map(|group| group_json(repo, group))
        .collect();
    let doc = json!({
        "version": JSON_VERSION,
        "topology": repo.config.topology.as_str(),
        "waves": groups[..plan.waves],
        "kustomizations": groups,
        "nodes": nodes,
    });
    serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
}

/// The wave table of `--format markdown`: one row per placed node, its main file first;
/// every file and node name a code span (`markdown`).
fn markdown(repo: &Repo, plan: &Plan) -> String {
    let g = &repo.graph;
    let mut s =
        String::from("| Wave | File | Kind | Reason (dependency path) |\n|---|---|---|---|\n");
    let mut last_wave = None;
    let mut by_node = files_by_node(plan);
    for i in order(repo).into_iter().filter(|&i| plan.placed[i]) {
        let n = &g.nodes[i];
        let mut files = std::mem::take(&mut by_node[i]);
        let main = format!("{}.yaml", n.name);
        files.sort_by_key(|f| (*f != main, *f));
        let file = match files.split_first() {
            Some((first, [])) => markdown::code(first),
            Some((first, rest)) => {
                format!("{} (+ {})", markdown::code(first), markdown::codes(rest))
            }
            None => String::new(),
        };
        let wave = if last_wave != Some(n.wave) {
            format!("**{}**", n.wave)
        } else {
            n.wave.to_string()
        };
        last_wave = Some(n.wave);
        let kind = match n.kind {
            NodeKind::Service => "service",
            NodeKind::Database => "database",
            NodeKind::Unit => "unit",
        };
        let mut reason = String::new();
        g.write_reason(
            i,
            above(repo),
            |out, name| out.push_str(&markdown::code(name)),
            &mut reason,
        );
        s.push_str(&format!(
            "| {wave} | {} | {kind} | {} |\n",
            markdown::cell(&file),
            markdown::cell(&reason)
        ));
    }
    let unplaced: Vec<String> = order(repo)
        .into_iter()
        .filter(|&i| !plan.placed[i])
        .map(|i| {
            format!(
                "{} (w{})",
                markdown::code(&g.nodes[i].name),
                g.nodes[i].wave
            )
        })
        .collect();
    if !unplaced.is_empty() {
        s.push_str(&format!(
            "\nComputed but not placed (no manifest yet): {}.\n",
            unplaced.join(", ")
        ));
    }
    s.push('\n');
    s.push_str(
        &topology_line(repo, plan, markdown::code)
            .replace('\n', "\n\n")
            .trim_end()
            .replacen("topology: ", "Topology: ", 1),
    );
    s.push('\n');
    s
}

/// A flowchart: one subgraph per wave, an arrow from each dependency to its dependant.
fn mermaid(repo: &Repo, plan: &Plan) -> String {
    let g = &repo.graph;
    let mut s = String::from("flowchart LR\n");
    for wave in 0..=g.max_wave() {
        let members: Vec<usize> = order(repo)
            .into_iter()
            .filter(|&i| g.nodes[i].wave == wave)
            .collect();
        if members.is_empty() {
            continue;
        }
        s.push_str(&format!("  subgraph w{wave}[\"wave {wave}\"]\n"));
        for i in members {
            s.push_str(&format!("    n{i}[\"{}\"]\n", g.nodes[i].name));
        }
        s.push_str("  end\n");
    }
    for (i, n) in g.nodes.iter().enumerate() {
        for e in &n.edges {
            s.push_str(&format!("  n{} --> n{i}\n", e.to));
        }
    }
    let unplaced: Vec<String> = (0..g.nodes.len())
        .filter(|&i| !plan.placed[i])
        .map(|i| format!("n{i}"))
        .collect();
    if !unplaced.is_empty() {
        s.push_str("  classDef unplaced stroke-dasharray: 5 5\n");
        s.push_str(&format!("  class {} unplaced\n", unplaced.join(",")));
    }
    s
}
