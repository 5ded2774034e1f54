//! `fluxwave plan`: which file goes to which group (a wave, or a unit's own Kustomization)
//! and which files must move. Read-only.

use std::io::Write;
use std::path::Path;

use serde_json::{json, Value};

use super::format::Format;
use super::layout::{group_json, load};
use super::report::{io, Outcome, JSON_VERSION};
use crate::error::Result;
use crate::plan::{Group, GroupKind};
use crate::plural::count;

pub fn run(root: &Path, format: Format, out: &mut impl Write) -> Result<Outcome> {
    let (repo, plan) = load(root)?;
    let apps = &repo.apps;
    let g = &repo.graph;
    let unplaced: Vec<_> = (0..g.nodes.len()).filter(|&i| !plan.placed[i]).collect();
    let moves = plan.placements.iter().filter(|p| p.moves).count();
    let text = match format {
        Format::Json => {
            let group = |i: usize, group: &Group| {
                let files: Vec<_> = plan
                    .files_in(i)
                    .map(|p| {
                        json!({
                            "file": p.file,
                            "owner": g.nodes[p.owner].name,
                            "from": apps.path_of(&p.file, p.from),
                            "to": apps.path_in(&group.folder, &p.file),
                            "move": p.moves,
                        })
                    })
                    .collect();
                let mut doc = group_json(&repo, group);
                doc.insert("files".into(), json!(files));
                Value::Object(doc)
            };
            let groups: Vec<_> = plan
                .groups()
                .iter()
                .enumerate()
                .map(|(i, gr)| group(i, gr))
                .collect();
            let waves: Vec<_> = groups[..plan.waves].to_vec();
            let not_placed: Vec<_> = unplaced
                .iter()
                .map(|&i| json!({"name": g.nodes[i].name, "wave": g.nodes[i].wave}))
                .collect();
            let doc = json!({
                "version": JSON_VERSION,
                "topology": repo.config.topology.as_str(),
                "waves": waves,
                "kustomizations": groups,
                "notPlaced": not_placed,
                "files": plan.placements.len(),
                "moves": moves,
            });
            serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
        }
        Format::Text => {
            let mut s = String::new();
            for (i, group) in plan.groups().iter().enumerate() {
                match group.kind {
                    GroupKind::Wave(n) => s.push_str(&format!(
                        "wave {n}: {} -> ./{}\n",
                        group.name,
                        apps.dir_of(&group.folder)
                    )),
                    GroupKind::Unit(u) => s.push_str(&format!(
                        "unit {}: {} -> ./{}  (dependsOn {})\n",
                        g.nodes[u].name,
                        group.name,
                        apps.dir_of(&group.folder),
                        if group.depends_on.is_empty() {
                            "nothing".to_string()
                        } else {
                            group.depends_on.join(", ")
                        }
                    )),
                }
                for p in plan.files_in(i) {
                    let from = apps.path_of(&p.file, p.from);
                    if p.moves {
                        let to = apps.path_in(&group.folder, &p.file);
                        s.push_str(&format!(
                            "  move  {from} -> {to}  ({})\n",
                            g.nodes[p.owner].name
                        ));
                    } else {
                        s.push_str(&format!("  keep  {from}  ({})\n", g.nodes[p.owner].name));
                    }
                }
            }
            if !unplaced.is_empty() {
                let names: Vec<_> = unplaced
                    .iter()
                    .map(|&i| format!("{} (wave {})", g.nodes[i].name, g.nodes[i].wave))
                    .collect();
                s.push_str(&format!("not placed (no manifest): {}\n", names.join(", ")));
            }
            s.push_str(&format!(
                "{} in {}, {} to move (topology: {})\n",
                count(plan.placements.len(), "file"),
                plan.describe_groups(),
                moves,
                repo.config.topology.as_str()
            ));
            s
        }
        other => return Err(other.unsupported("plan")),
    };
    out.write_all(text.as_bytes()).map_err(io)?;
    // The process ends next: freeing every service, node and file name one by one is work
    // for nothing.
    std::mem::forget((repo, plan));
    Ok(Outcome::Clean)
}
