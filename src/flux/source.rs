//! What an environment's root Kustomization builds: the artifact of its source, which is the
//! revision's files less those source-controller leaves out (`tree::ignore`). When the source
//! is a GitRepository written beside the root Kustomization (the `gotk-sync.yaml` of
//! `flux bootstrap`), its `spec.ignore` is read too: source-controller adds it after the
//! `.sourceignore` files (`GitRepositoryReconciler.reconcileArtifact`).

use serde_json::Value;

use crate::kustomize::object::group_of;
use crate::tree::FileTree;

const SOURCE_GROUP: &str = "source.toolkit.fluxcd.io";

/// The artifact of `tree` that a root Kustomization written in `file` (empty for an assumed
/// root) builds from its source `(kind, namespace, name)`.
pub fn artifact(tree: &FileTree, file: &str, source: (String, String, String)) -> FileTree {
    tree.artifact(spec_ignore(tree, file, &source).as_deref())
}

/// `spec.ignore` of the GitRepository `source` when `file` holds it.
pub(super) fn spec_ignore(
    tree: &FileTree,
    file: &str,
    source: &(String, String, String),
) -> Option<String> {
    let (kind, namespace, name) = source;
    if kind != "GitRepository" || file.is_empty() {
        return None;
    }
    let text = tree.read(file)?;
    let docs = crate::yaml::parse_all(file, &text).ok()?;
    let found = docs.iter().find(|d| {
        let meta = &d["metadata"];
        group_of(d["apiVersion"].as_str().unwrap_or("")) == SOURCE_GROUP
            && d["kind"] == "GitRepository"
            && meta["name"].as_str() == Some(name)
            && meta["namespace"]
                .as_str()
                .is_none_or(|ns| ns.is_empty() || ns == namespace)
    })?;
    match &found["spec"]["ignore"] {
        Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SYNC: &str = "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 1m\n  ref: {branch: main}\n  url: ssh://git@example.com/org/fleet\n  ignore: |\n    # exclude all\n    /*\n    # include the clusters\n    !/clusters\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  path: ./clusters/dev\n  sourceRef: {kind: GitRepository, name: flux-system}\n";

    fn source(name: &str) -> (String, String, String) {
        ("GitRepository".into(), "flux-system".into(), name.into())
    }

    /// The GitRepository of the root's own file lends its `spec.ignore`; another source,
    /// or an assumed root, reads the `.sourceignore` files and defaults only.
    #[test]
    fn the_root_sources_spec_ignore_hides_files() {
        let sync = "clusters/dev/flux-system/gotk-sync.yaml";
        let tree = FileTree::from_files([(sync, SYNC), ("apps/a.yaml", "a: 1\n")]);
        let view = artifact(&tree, sync, source("flux-system"));
        assert!(view.read("apps/a.yaml").is_none() && view.read(sync).is_some());
        assert!(
            tree.read("apps/a.yaml").is_some(),
            "the tree itself keeps every file"
        );
        let other = artifact(&tree, sync, source("other"));
        assert!(other.read("apps/a.yaml").is_some());
        let assumed = artifact(&tree, "", source("flux-system"));
        assert!(assumed.read("apps/a.yaml").is_some());
    }
}
