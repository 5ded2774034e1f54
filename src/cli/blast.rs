//! `fluxwave blast`: what a failing health check of each unit blocks, under the repository's
//! Flux Kustomizations as built (`current`, per environment) or a topology the catalog could
//! have (`waves`, `units`); the totals of every topology side by side; the longest
//! `dependsOn` chain with its timeouts. A report: exit 0, or 2 on bad input.

use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

use serde_json::{json, Value};

use super::format::Format;
use super::markdown;
use super::report::{io, write_json, Outcome, JSON_VERSION};
use crate::blast::{self, Blast, Detail, Model};
use crate::config::{Config, Topology};
use crate::error::{Error, Result};
use crate::flux::discover;
use crate::flux::gates::{go_duration, Gates};
use crate::flux::inventory;
use crate::plan::topology::Layout;
use crate::plan::Plan;
use crate::repo::Repo;
use crate::tree::FileTree;

/// `--topology`.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Which {
    /// The Flux Kustomizations as built, per environment
    Current,
    /// One Kustomization per wave, as `apply` writes them under `topology: waves`
    Waves,
    /// One Kustomization per unit, as `apply` writes them under `topology: units`
    Units,
}

impl Which {
    fn as_str(self) -> &'static str {
        match self {
            Which::Current => "current",
            Which::Waves => "waves",
            Which::Units => "units",
        }
    }
}

/// One topology's analysis: of an environment's build, or of a hypothetical layout.
struct Section {
    topology: Which,
    /// (name, entry folder) for `current`.
    environment: Option<(String, String)>,
    model: Model,
    blast: Blast,
}

/// How many names a text or markdown cell lists before `+N`.
const SHOWN: usize = 3;

pub fn run(
    root: &Path,
    which: Which,
    format: Format,
    overrides: &[(String, String)],
    out: &mut impl Write,
) -> Result<Outcome> {
    let config = Config::load(root)?;
    let tree = FileTree::from_worktree_or_dir(root)?;
    let managed = root.join(&config.catalog).is_dir() || !config.units.is_empty();
    let repo = if managed {
        Some(Repo::load_with(root, &|path| tree.read(path))?)
    } else {
        None
    };
    if which != Which::Current && repo.is_none() {
        return Err(Error::Usage(format!(
            "--topology {}: no catalog ({}/ or units in fluxwave.yaml), so there is no {} layout to compute; without a catalog only `--topology current` applies",
            which.as_str(),
            config.catalog,
            which.as_str()
        )));
    }
    // JSON lists every name, one unit at a time as it is written (`blast::Lister`).
    let detail = match format {
        Format::Json => Detail::Count,
        _ => Detail::First(SHOWN),
    };
    let envs = discover::environments(&[&tree], Some(&config), overrides);
    if which == Which::Current && envs.is_empty() {
        let layouts = if repo.is_some() {
            ", or ask for a layout of the catalog with `--topology waves` or `--topology units`"
        } else {
            ""
        };
        return Err(Error::Usage(format!(
            "no Flux environment found in {}; looked for {}. Name one with `--env NAME=PATH`{layouts}",
            root.display(),
            discover::WHERE_LOOKED
        )));
    }
    let mut current = Vec::new();
    for env in &envs {
        let inv = inventory::build(&tree, env);
        let gates = match &repo {
            Some(repo) => Gates::of(&inv, &|file: &str| repo.unit_of_file(file)),
            None => Gates::of(&inv, &|_| None),
        };
        let names = repo
            .as_ref()
            .map(|r| r.graph.nodes.iter().map(|n| n.name.clone()).collect());
        let model = Model::from_gates(&gates, names);
        let section_detail = if which == Which::Current {
            detail
        } else {
            Detail::Count
        };
        current.push(Section {
            topology: Which::Current,
            environment: Some((inv.env.clone(), inv.env_path.clone())),
            blast: blast::analyse(&model, section_detail),
            model,
        });
    }
    let mut layouts = Vec::new();
    if let Some(repo) = &repo {
        // Beside the first environment's Kustomizations that apply no unit.
        let built = current.first().map(|s: &Section| &s.model);
        for (topology, model) in layouts_of(repo, built)? {
            let d = if topology == which {
                detail
            } else {
                Detail::Count
            };
            layouts.push(Section {
                topology,
                environment: None,
                blast: blast::analyse(&model, d),
                model,
            });
        }
    }
    // The sections reported in full, and those whose totals stand beside them.
    let (main, others): (Vec<Section>, Vec<Section>) = current
        .into_iter()
        .chain(layouts)
        .partition(|s| s.topology == which);
    let text = match format {
        Format::Json => {
            // Written as it is serialised, through the same writer as every output.
            write_json(out, &to_json(which, &main, &others))?;
            return Ok(Outcome::Clean);
        }
        Format::Text => text(&main, &others, false),
        Format::Markdown => text(&main, &others, true),
        other => return Err(other.unsupported("blast")),
    };
    out.write_all(text.as_bytes()).map_err(io)?;
    Ok(Outcome::Clean)
}

/// The layouts of the catalog `apply` would write under each topology, as models.
fn layouts_of(repo: &Repo, built: Option<&Model>) -> Result<Vec<(Which, Model)>> {
    let plan = Plan::new(&repo.graph, &repo.apps, &repo.config)?;
    let mut models = Vec::new();
    for topology in Topology::ALL {
        let layout = Layout::new(repo, &plan, topology)?;
        let which = match topology {
            Topology::Waves => Which::Waves,
            Topology::Units => Which::Units,
        };
        models.push((which, Model::from_layout(repo, &layout, built)));
    }
    Ok(models)
}

fn unit_list<'a>(model: &'a Model, units: &blast::Units) -> Vec<&'a str> {
    units
        .kept
        .iter()
        .map(|&u| model.unit_names[u].as_str())
        .collect()
}

fn chain_json(s: &Section) -> Value {
    let c = &s.blast.chain;
    let seconds = if c.timeout_ms.is_multiple_of(1000) {
        json!(c.timeout_ms / 1000)
    } else {
        json!(c.timeout_ms as f64 / 1000.0)
    };
    json!({
        "kustomizations": c.kustomizations.iter().map(|&k| s.model.names[k].as_str()).collect::<Vec<_>>(),
        "timeout": go_duration(c.timeout_ms),
        "seconds": seconds,
    })
}

fn totals_json(s: &Section) -> Value {
    let t = &s.blast.totals;
    json!({
        "units": t.units,
        "blocked": t.blocked,
        "shared": t.shared,
        "worst": t.worst.map(|(u, n)| json!({"unit": s.model.unit_names[u], "blocks": n})),
    })
}

/// A section's units, serialised as they are written, each unit's lists walked as it comes
/// (at 100,000 units under waves the lists hold billions of names: nothing may hold them
/// all at once).
struct UnitsJson<'a>(&'a Section);

/// Unit names by index.
struct NamesJson<'a>(&'a Model, Vec<usize>);

impl serde::Serialize for NamesJson<'_> {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> std::result::Result<S::Ok, S::Error> {
        ser.collect_seq(self.1.iter().map(|&u| self.0.unit_names[u].as_str()))
    }
}

#[derive(serde::Serialize)]
struct UnitJson<'a> {
    name: &'a str,
    kustomization: Option<&'a str>,
    kustomizations: Vec<&'a str>,
    gated: bool,
    blocks: NamesJson<'a>,
    shares: NamesJson<'a>,
}

impl serde::Serialize for UnitsJson<'_> {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> std::result::Result<S::Ok, S::Error> {
        let s = self.0;
        let lister = blast::Lister::new(&s.model);
        ser.collect_seq(s.blast.units.iter().map(|u| {
            let kustomizations: Vec<&str> = u
                .kustomizations
                .iter()
                .map(|&k| s.model.names[k].as_str())
                .collect();
            UnitJson {
                name: &s.model.unit_names[u.unit],
                kustomization: kustomizations.first().copied(),
                kustomizations,
                gated: u.gated,
                blocks: NamesJson(&s.model, lister.blocks(u.unit)),
                shares: NamesJson(&s.model, lister.shares(u.unit)),
            }
        }))
    }
}

#[derive(serde::Serialize)]
struct EnvironmentJson<'a> {
    name: &'a str,
    path: &'a str,
    units: UnitsJson<'a>,
    totals: Value,
    chain: Value,
}

/// The document of `--format json` (see docs/blast.md).
#[derive(serde::Serialize)]
struct Json<'a> {
    version: u32,
    topology: &'static str,
    environment: Value,
    units: UnitsJson<'a>,
    totals: Value,
    chain: Value,
    alternatives: Vec<Value>,
    environments: Vec<EnvironmentJson<'a>>,
}

fn environment_json(s: &Section) -> Value {
    s.environment
        .as_ref()
        .map_or(Value::Null, |(name, _)| json!(name))
}

fn to_json<'a>(which: Which, main: &'a [Section], others: &[Section]) -> Json<'a> {
    let first = &main[0];
    let alternatives: Vec<Value> = others
        .iter()
        .map(|s| {
            json!({
                "topology": s.topology.as_str(),
                "environment": environment_json(s),
                "totals": totals_json(s),
                "chain": chain_json(s),
            })
        })
        .collect();
    let environments = if which == Which::Current {
        main.iter()
            .filter_map(|s| {
                let (name, path) = s.environment.as_ref()?;
                Some(EnvironmentJson {
                    name,
                    path,
                    units: UnitsJson(s),
                    totals: totals_json(s),
                    chain: chain_json(s),
                })
            })
            .collect()
    } else {
        Vec::new()
    };
    Json {
        version: JSON_VERSION,
        topology: which.as_str(),
        environment: environment_json(first),
        units: UnitsJson(first),
        totals: totals_json(first),
        chain: chain_json(first),
        alternatives,
        environments,
    }
}

/// How a format writes a name: as it is in text, a code span in markdown.
type Name = fn(&str) -> String;

/// `a, b, c +4`, or `-` for none.
fn abbreviated(model: &Model, units: &blast::Units, name: Name) -> String {
    if units.count == 0 {
        return "-".into();
    }
    let names: Vec<String> = unit_list(model, units).into_iter().map(name).collect();
    let mut s = names.join(", ");
    if units.count > units.kept.len() {
        let _ = write!(s, " +{}", units.count - units.kept.len());
    }
    s
}

/// A table, aligned in text, GitHub's form in markdown.
fn table(rows: &[Vec<String>], markdown: bool, out: &mut String) {
    let Some(head) = rows.first() else { return };
    if markdown {
        let escape = |c: &String| markdown::cell(c);
        let line = |r: &Vec<String>| {
            format!(
                "| {} |\n",
                r.iter().map(escape).collect::<Vec<_>>().join(" | ")
            )
        };
        out.push_str(&line(head));
        out.push_str(&format!("|{}\n", "---|".repeat(head.len())));
        rows[1..].iter().for_each(|r| out.push_str(&line(r)));
        return;
    }
    let mut widths = vec![0; head.len()];
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    for r in rows {
        let mut line = String::new();
        for (i, (c, w)) in r.iter().zip(&widths).enumerate() {
            if i + 1 == r.len() {
                line.push_str(c);
            } else {
                line.push_str(c);
                line.extend(std::iter::repeat_n(' ', w - c.chars().count() + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

fn title(s: &Section, name: Name) -> String {
    match &s.environment {
        Some((env, _)) => format!("{} ({})", s.topology.as_str(), name(env)),
        None => s.topology.as_str().to_string(),
    }
}

fn chain_line(s: &Section, name: Name) -> String {
    let c = &s.blast.chain;
    let names: Vec<String> = c
        .kustomizations
        .iter()
        .map(|&k| name(&s.model.names[k]))
        .collect();
    format!(
        "{}: {} ({}, {} of timeouts)",
        title(s, name),
        if names.is_empty() {
            "-".to_string()
        } else {
            names.join(" -> ")
        },
        crate::plural::count(names.len(), "Kustomization"),
        go_duration(c.timeout_ms)
    )
}

/// The report as text, or as markdown (GitHub tables under `###` headings, every name from
/// the repository a code span).
fn text(main: &[Section], others: &[Section], markdown: bool) -> String {
    let name: Name = if markdown {
        markdown::code
    } else {
        str::to_string
    };
    let mut out = String::new();
    let heading = |out: &mut String, text: &str| {
        if markdown {
            let _ = writeln!(out, "### {text}\n");
        } else {
            let _ = writeln!(out, "{text}\n");
        }
    };
    for s in main {
        let what = match &s.environment {
            Some((env, path)) => format!(
                "environment {} ({}), topology current",
                name(env),
                name(path)
            ),
            None => format!("topology {}", s.topology.as_str()),
        };
        heading(&mut out, &format!("What a failing unit blocks: {what}"));
        let mut rows = vec![[
            "UNIT",
            "KUSTOMIZATION",
            "GATED",
            "BLOCKS",
            "BLOCKED UNITS",
            "SHARES",
        ]
        .map(String::from)
        .to_vec()];
        let mut ungated = Vec::new();
        for u in &s.blast.units {
            let unit = name(&s.model.unit_names[u.unit]);
            if !u.gated {
                ungated.push(unit.clone());
            }
            let ks: Vec<String> = u
                .kustomizations
                .iter()
                .map(|&k| name(&s.model.names[k]))
                .collect();
            let shares = if u.shares.count == 0 {
                "-".to_string()
            } else {
                format!(
                    "{} ({})",
                    u.shares.count,
                    abbreviated(&s.model, &u.shares, name)
                )
            };
            rows.push(vec![
                unit,
                ks.join(", "),
                if u.gated { "yes" } else { "no" }.to_string(),
                u.blocks.count.to_string(),
                abbreviated(&s.model, &u.blocks, name),
                shares,
            ]);
        }
        table(&rows, markdown, &mut out);
        if !ungated.is_empty() {
            let _ = writeln!(
                out,
                "\nNot gated ({}): no Kustomization that applies them has `wait: true` or lists them in `healthChecks`, so it is Ready once applied and their failure blocks nothing: {}.",
                ungated.len(),
                ungated.join(", ")
            );
        }
        out.push('\n');
    }
    heading(&mut out, "Totals");
    let all: Vec<&Section> = main.iter().chain(others).collect();
    let mut rows = vec![std::iter::once(String::new())
        .chain(all.iter().map(|s| title(s, name)))
        .collect::<Vec<_>>()];
    let row = |label: &str, f: &dyn Fn(&Section) -> String| -> Vec<String> {
        std::iter::once(label.to_string())
            .chain(all.iter().map(|s| f(s)))
            .collect()
    };
    rows.push(row("units", &|s| s.blast.totals.units.to_string()));
    rows.push(row("Kustomizations", &|s| s.model.names.len().to_string()));
    rows.push(row("units blocked (sum)", &|s| {
        s.blast.totals.blocked.to_string()
    }));
    rows.push(row("worst unit", &|s| match s.blast.totals.worst {
        Some((u, n)) => format!("{} ({n})", name(&s.model.unit_names[u])),
        None => "-".into(),
    }));
    rows.push(row("units sharing a gate (sum)", &|s| {
        s.blast.totals.shared.to_string()
    }));
    rows.push(row("longest chain", &|s| {
        format!(
            "{} ({})",
            s.blast.chain.kustomizations.len(),
            go_duration(s.blast.chain.timeout_ms)
        )
    }));
    table(&rows, markdown, &mut out);
    out.push('\n');
    heading(&mut out, "Longest dependsOn chain (the sum of its timeouts: the worst time for a fresh cluster to converge)");
    for s in &all {
        let line = chain_line(s, name);
        if markdown {
            let _ = writeln!(out, "- {line}");
        } else {
            let _ = writeln!(out, "{line}");
        }
    }
    out
}
