//! Cutover: every object Flux would delete on the way from one revision to another. Both
//! revisions are read from git into memory, every environment is built natively as Flux
//! builds it (`inventory`), and the deletions are set differences over the two inventories
//! (`ObjectId -> owner`) judged by the owners' specs (`rules`), never by file names. A
//! feature the builder does not model is reported as a warning, never skipped in silence.

pub mod rules;
pub mod runbook;

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::error::Result;
use crate::flux::inventory::{self, Inventory};
pub use crate::kustomize::object::ObjectId;
use crate::tree::{Blobs, FileTree};
pub use rules::Deletion;

#[derive(Debug, Clone, Serialize)]
pub struct EnvWarning {
    pub environment: String,
    pub path: String,
    pub feature: String,
    pub message: String,
}

/// The analysis of one change.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub from: String,
    pub to: String,
    pub environments: Vec<String>,
    /// Data loss first, then by environment, owner and object.
    pub deletions: Vec<Deletion>,
    pub warnings: Vec<EnvWarning>,
    pub runbook: Vec<runbook::Section>,
}

impl Report {
    pub fn is_safe(&self) -> bool {
        self.deletions.is_empty()
    }
}

/// Compares revision `from` with `to` (the working tree when `None`) of the repository at
/// `root`.
pub fn analyse(root: &Path, from: &str, to: Option<&str>) -> Result<Report> {
    // Blobs both revisions hold are read from git once.
    let mut blobs = Blobs::default();
    let old = FileTree::from_git_sharing(root, from, &mut blobs)?;
    let new = match to {
        Some(rev) => FileTree::from_git_sharing(root, rev, &mut blobs)?,
        None => FileTree::from_worktree(root)?,
    };
    drop(blobs);
    let change = format!("{from} -> {}", to.unwrap_or("the working tree"));
    let built = Builds::of(&old, &new)?;
    // The texts are not read again: at 100,000 services they are 270 MB.
    drop((old, new));
    let mut report = built.judge(&change);
    report.from = from.to_string();
    report.to = to.unwrap_or("the working tree").to_string();
    Ok(report)
}

/// The comparison of two trees (what `analyse` does once both are read).
pub fn compare(old: &FileTree, new: &FileTree, change: &str) -> Result<Report> {
    Ok(Builds::of(old, new)?.judge(change))
}

/// Sorts deletions by data loss first, then by environment, owner and object. Each
/// environment's deletions come in object order (`rules::deletions`), so a stable sort by the
/// rest of the key keeps that order without comparing objects, which at 100,000 services
/// are most of the comparisons. Their positions are sorted, then the deletions are moved
/// into place: no second list of them.
fn sort_deletions(deletions: &mut [Deletion]) {
    let mut order: Vec<usize> = (0..deletions.len()).collect();
    order.sort_by(|&a, &b| {
        let (a, b) = (&deletions[a], &deletions[b]);
        (!a.stateful, &a.environment, &a.owner_id).cmp(&(!b.stateful, &b.environment, &b.owner_id))
    });
    permute(deletions, &mut order);
}

/// Rearranges `items` so that item `i` is the one that was at `order[i]` (`order` is a
/// permutation; it is used up), by swaps along its cycles.
fn permute<T>(items: &mut [T], order: &mut [usize]) {
    for start in 0..items.len() {
        let mut at = start;
        loop {
            let from = order[at];
            order[at] = at;
            if from == start || from == at {
                break;
            }
            items.swap(at, from);
            at = from;
        }
    }
}

/// Every environment of both revisions, built.
struct Builds {
    from: String,
    to: String,
    environments: Vec<String>,
    pairs: Vec<(Inventory, Inventory)>,
    warnings: Vec<EnvWarning>,
}

impl Builds {
    fn of(old: &FileTree, new: &FileTree) -> Result<Builds> {
        let mut envs: BTreeMap<String, (Option<String>, Option<String>)> = BTreeMap::new();
        for (name, path) in inventory::environments(old)? {
            envs.entry(name).or_default().0 = Some(path);
        }
        for (name, path) in inventory::environments(new)? {
            envs.entry(name).or_default().1 = Some(path);
        }
        let mut pairs: Vec<(Inventory, Inventory)> = Vec::new();
        let mut warnings = Vec::new();
        // Both revisions are built side by side.
        for (name, (old_path, new_path)) in &envs {
            match (old_path, new_path) {
                (Some(op), Some(np)) => pairs.push(std::thread::scope(|s| {
                    let o = s.spawn(|| inventory::build(old, name, op));
                    let n = inventory::build(new, name, np);
                    let o = o.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
                    (o, n)
                })),
                (Some(op), None) => warnings.push(EnvWarning {
                    environment: name.clone(),
                    path: op.clone(),
                    feature: "environment removed".into(),
                    message: format!("environment {name} is gone in {}: a cluster still synced to `{op}` fails to build, and Flux deletes nothing until it is pointed elsewhere", new.label),
                }),
                _ => {}
            }
        }
        Ok(Builds {
            from: old.label.clone(),
            to: new.label.clone(),
            environments: envs.into_keys().collect(),
            pairs,
            warnings,
        })
    }

    /// What Flux deletes between the two builds, and the runbook.
    fn judge(self, change: &str) -> Report {
        let Builds {
            from,
            to,
            environments,
            mut pairs,
            mut warnings,
        } = self;
        // The objects of an environment are freed on another core while the rest is judged.
        std::thread::scope(|s| {
            let mut deletions = Vec::new();
            let mut removed = Vec::new();
            for (o, n) in &mut pairs {
                let found = rules::deletions(o, n);
                if deletions.is_empty() {
                    deletions = found;
                } else {
                    deletions.extend(found);
                }
                removed.extend(rules::removed_collecting_owners(o, n).into_iter().cloned());
                // The runbook reads the owners only.
                let objects = [&mut *o, &mut *n].map(|inv| {
                    (
                        std::mem::take(&mut inv.objects),
                        std::mem::take(&mut inv.duplicates),
                    )
                });
                s.spawn(move || drop(objects));
                for w in o.warnings.iter().chain(&n.warnings) {
                    let w = EnvWarning {
                        environment: o.env.clone(),
                        path: w.path.clone(),
                        feature: w.feature.clone(),
                        message: w.message.clone(),
                    };
                    if !warnings
                        .iter()
                        .any(|x: &EnvWarning| x.path == w.path && x.message == w.message)
                    {
                        warnings.push(w);
                    }
                }
            }
            sort_deletions(&mut deletions);
            warnings.sort_by(|a, b| {
                (&a.environment, &a.path, &a.message).cmp(&(&b.environment, &b.path, &b.message))
            });
            removed.sort_by(|a, b| a.id.cmp(&b.id));
            removed.dedup_by(|a, b| a.id == b.id);
            let runbook = runbook::write(&deletions, &pairs, &removed, change);
            Report {
                from,
                to,
                environments,
                deletions,
                warnings,
                runbook,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::permute;

    #[test]
    fn a_permutation_moves_each_item_once_into_place() {
        let items = ["a", "b", "c", "d", "e", "f"];
        for order in [
            vec![0, 1, 2, 3, 4, 5],
            vec![5, 4, 3, 2, 1, 0],
            vec![2, 0, 1, 4, 5, 3],
            vec![1, 2, 3, 4, 5, 0],
            vec![0, 2, 1, 3, 5, 4],
        ] {
            let mut moved = items;
            permute(&mut moved, &mut order.clone());
            let expected: Vec<&str> = order.iter().map(|&i| items[i]).collect();
            assert_eq!(moved.to_vec(), expected, "{order:?}");
        }
    }
}
