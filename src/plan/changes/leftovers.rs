//! What an interrupted run left: the temporary file of a write cut short, beside any file
//! this run may write. Only a regular file named exactly as fluxwave names its temporaries
//! (`fs::write::leftover_temporaries`) is taken for one, and never a file git tracks: a
//! user's file is never removed, whatever its name.

use std::collections::BTreeSet;

use super::{Change, Drift, Op};
use crate::fs::write;
use crate::kustomize::KUSTOMIZATION_FILES;
use crate::plan::Plan;
use crate::repo::Repo;

/// A removal for every temporary an interrupted write of a file this run may write left.
pub(super) fn interrupted_writes(
    repo: &Repo,
    plan: &Plan,
    base_rel: &str,
    changes: &mut Vec<Change>,
) {
    let (apps, config) = (&repo.apps, &repo.config);
    let base = &config.base;
    // An interrupted write of any file this run may write leaves a temporary beside it.
    let written: Vec<String> = changes
        .iter()
        .filter_map(|c| match &c.op {
            Op::Write { path, .. } => Some(path.clone()),
            _ => None,
        })
        .chain(
            plan.groups()
                .iter()
                .map(|g| format!("{}/kustomization.yaml", apps.dir_of(&g.folder))),
        )
        .chain(
            plan.groups()
                .iter()
                .map(|g| format!("{base}/{}.yaml", g.name)),
        )
        .chain(std::iter::once(base_rel.to_string()))
        // An environment's kustomization under any name kustomize reads (apply edits it
        // under its own).
        .chain(config.environments.iter().flat_map(|e| {
            KUSTOMIZATION_FILES
                .iter()
                .map(move |name| format!("{}/{name}", e.path))
        }))
        .collect::<BTreeSet<String>>()
        .into_iter()
        .collect();
    let paths: Vec<std::path::PathBuf> = written.iter().map(|rel| repo.path(rel)).collect();
    let mut found: Vec<(String, String)> = Vec::new();
    for (temp, i) in write::leftover_temporaries(&paths) {
        if let Some(temp_rel) = temp.strip_prefix(&repo.root).ok().and_then(|p| p.to_str()) {
            found.push((temp_rel.to_string(), written[i].clone()));
        }
    }
    if found.is_empty() {
        return;
    }
    let tracked = tracked(&repo.root, found.iter().map(|(t, _)| t.as_str()));
    for (temp, rel) in found {
        if tracked.contains(&temp) {
            continue;
        }
        changes.push(Change {
            op: Op::Remove { path: temp },
            drift: Drift::InterruptedWrite,
            why: format!("left by an interrupted write of {rel}"),
        });
    }
}

/// Which of `paths` git tracks, when `root` is in a git working tree (none otherwise, and
/// none when git cannot be asked: an untracked temporary then stays until it can be).
fn tracked<'a>(root: &std::path::Path, paths: impl Iterator<Item = &'a str>) -> BTreeSet<String> {
    let paths: Vec<&str> = paths.collect();
    // For this repository whatever the environment says (`GIT_DIR` and the like cleared).
    let out = crate::tree::git_command(root)
        .args(["ls-files", "-z", "--"])
        .args(paths.iter().map(|p| format!(":(literal){p}")))
        .stdin(std::process::Stdio::null())
        .output();
    match out {
        Ok(o) if o.status.success() => o
            .stdout
            .split(|b| *b == 0)
            .filter_map(|p| std::str::from_utf8(p).ok())
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect(),
        // Not a git working tree: nothing is tracked. git missing or failing otherwise:
        // every candidate counts as tracked, so nothing is removed on a guess.
        Ok(o) if String::from_utf8_lossy(&o.stderr).contains("not a git repository") => {
            BTreeSet::new()
        }
        _ => paths.iter().map(|p| p.to_string()).collect(),
    }
}
