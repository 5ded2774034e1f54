//! `build-failed`: a Flux Kustomization whose build fails applies nothing, prunes nothing and
//! never becomes ready, and every Kustomization that depends on it waits (kustomize-controller
//! `KustomizationReconciler.reconcile`: a failed `build` ends the reconcile with reason
//! `BuildFailed`). The inventory knows which builds fail and why (`Owner::build_error`); this
//! lint says so, naming where kustomize stops. A `spec.path` that is not a folder is
//! `missing-path`'s, and the builds strict substitution fails are `undefined-variable`'s and
//! `unknowable-variable`'s: they are not reported twice. What the other lints cannot see
//! because a build fails is said once here, not as their findings (see `Failures`). A Flux
//! Operator ResourceSet the operator cannot build is reported here too.

use std::collections::BTreeSet;

use super::{flux_name, Finding, FluxView, Place};
use crate::diag::Code;
use crate::flux::inventory::Owner;
use crate::kustomize::object::ObjectId;
use crate::tree::FileTree;

pub const CODE: Code = Code::BuildFailed;

pub fn build_failed(flux: &FluxView) -> Vec<Finding> {
    let mut findings = Vec::new();
    for inv in &flux.envs {
        for (id, owner) in inv.kustomizations() {
            let Some(error) = reported(flux, owner) else {
                continue;
            };
            let (cause, at) = cause(&flux.tree, error);
            let root = owner.parent.is_none();
            let (path, pos) = match (&at, owner.file.is_empty()) {
                // An assumed root is written nowhere: the finding points where the build stops.
                (Some((file, place)), true) => (file.clone(), Some(place.clone())),
                _ => flux.owner_at(inv, owner, "path"),
            };
            let what = if root {
                format!(
                    "the root Flux Kustomization `{}` of environment `{}`",
                    flux_name(id),
                    inv.env
                )
            } else {
                format!(
                    "Flux Kustomization `{}` (environment `{}`)",
                    flux_name(id),
                    inv.env
                )
            };
            let consequence = if root {
                "Flux applies nothing of the environment, and nothing in it could be checked"
            } else {
                "Flux applies nothing of it, and what depends on it never becomes ready"
            };
            findings.push(
                Finding::new(
                    CODE,
                    path,
                    format!("{what} cannot be built: {cause}; {consequence}"),
                    "fix the file and line kustomize stops at (`kubectl kustomize` of the folder fails there too), then run `fluxwave check` again",
                )
                .at(pos),
            );
        }
        // A ResourceSet the Flux Operator cannot build stalls: it applies and prunes nothing
        // (flux-operator `ResourceSetReconciler.reconcile`: `stallWithTerminalError`).
        for (id, set) in inv.owners.iter().filter(|(_, o)| o.is_resource_set()) {
            let Some(error) = set.build_error.as_deref() else {
                continue;
            };
            let (path, pos) = flux.owner_at(inv, set, "spec");
            findings.push(
                Finding::new(
                    CODE,
                    path,
                    format!(
                        "ResourceSet `{}` (environment `{}`) cannot be built by the Flux Operator: {error}; it applies and prunes nothing until it can",
                        flux_name(id),
                        inv.env
                    ),
                    "fix its template or inputs (`flux-operator build resourceset` of the file fails there too), then run `fluxwave check` again",
                )
                .at(pos),
            );
        }
    }
    findings
}

/// Why `owner`'s build fails, when this lint reports it: a `spec.path` that is not a folder
/// is `missing-path`'s, and a folder an ExternalArtifact lacks is not judged (the artifact is
/// modelled as the files its generator copies, not as a tree of folders).
fn reported<'a>(flux: &FluxView, owner: &'a Owner) -> Option<&'a str> {
    let error = owner.build_error.as_deref()?;
    (flux.tree.is_dir(&owner.path) && !error.contains(crate::tree::GENERATED)).then_some(error)
}

/// The Flux Kustomizations whose builds fail, per environment: what the other lints read of
/// an environment is incomplete where one does.
pub struct Failures {
    by_env: Vec<BTreeSet<ObjectId>>,
}

impl Failures {
    pub fn of(flux: &FluxView) -> Failures {
        Failures {
            by_env: flux
                .envs
                .iter()
                .map(|inv| {
                    inv.owners
                        .values()
                        .filter(|o| reported(flux, o).is_some())
                        .map(|o| o.id.clone())
                        .collect()
                })
                .collect(),
        }
    }

    /// Whether any build of any environment fails.
    pub fn any(&self) -> bool {
        self.by_env.iter().any(|f| !f.is_empty())
    }

    /// What a finding about something the environment at `env` (its index) lacks adds: it
    /// may be in a build that fails. Empty when every build of it succeeds.
    pub fn may_hide(&self, env: usize) -> String {
        let Some(failing) = self.by_env.get(env).filter(|f| !f.is_empty()) else {
            return String::new();
        };
        let names: Vec<String> = failing
            .iter()
            .map(|id| format!("`{}`", flux_name(id)))
            .collect();
        format!(
            " (unless it is in the build of {}, which fails: see build-failed)",
            names.join(", ")
        )
    }
}

/// The error with the line kustomize stops at, and that place, when the error names a file
/// of the tree and, in backquotes, an entry written on one of its lines:
/// `apps/kustomization.yaml: resource `missing.yaml` not found` becomes
/// `apps/kustomization.yaml:4: resource ...`.
fn cause(tree: &FileTree, error: &str) -> (String, Option<(String, Place)>) {
    let Some((file, rest)) = error.split_once(": ") else {
        return (error.to_string(), None);
    };
    let Some(text) = tree.read(file) else {
        return (error.to_string(), None);
    };
    let Some(entry) = rest.split('`').nth(1).filter(|e| !e.is_empty()) else {
        return (error.to_string(), None);
    };
    let mut offset = 0;
    for (n, line) in text.split_inclusive('\n').enumerate() {
        let content = line.split(" #").next().unwrap_or(line);
        if let Some(at) = content
            .find(entry)
            .filter(|_| !content.trim_start().starts_with('#'))
        {
            let place = Place::new(&text, offset + at, entry.len());
            return (
                format!("{file}:{}: {rest}", n + 1),
                Some((file.to_string(), place)),
            );
        }
        offset += line.len();
    }
    (error.to_string(), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cause_names_the_line_of_the_entry() {
        let tree = FileTree::from_files([(
            "a/kustomization.yaml",
            "# lists `missing.yaml`\nresources:\n  - x.yaml\n  - missing.yaml # `x.yaml`\n",
        )]);
        let (said, at) = cause(
            &tree,
            "a/kustomization.yaml: resource `missing.yaml` not found",
        );
        assert_eq!(
            said,
            "a/kustomization.yaml:4: resource `missing.yaml` not found"
        );
        assert_eq!(at.map(|(_, p)| p.line_col()), Some((4, 5)));
        // An error that names no file of the tree is said as it is.
        let (said, at) = cause(&tree, "path `./b` does not exist");
        assert_eq!(
            (said.as_str(), at.is_none()),
            ("path `./b` does not exist", true)
        );
    }
}
