//! The Flux Kustomizations an environment declares, found by walking its kustomization's
//! resources (folders through their own kustomization.yaml, files parsed), with every
//! decryption patch met on the way. A walk that met something it could not read (a remote
//! base, an unparsable file) says so: `complete` is false, and callers that would act on the
//! absence of an object must not.

use std::path::Path;

use serde_json::Value;

use crate::flux::decryption::{self, DecryptionPatch};
use crate::flux::Kustomization;
use crate::repo::{Reads, Repo};
use crate::yaml::{self, Text};

#[derive(Debug, Default)]
pub struct FluxTree {
    pub kustomizations: Vec<Kustomization>,
    pub patches: Vec<DecryptionPatch>,
    pub complete: bool,
}

impl FluxTree {
    /// Walks the kustomization in `dir` (repository-relative), reading through the
    /// repository's `reads`.
    pub fn walk(repo: &Repo, dir: &str) -> FluxTree {
        let mut tree = FluxTree {
            complete: true,
            ..FluxTree::default()
        };
        tree.visit(&repo.root, &repo.reads, dir, 0);
        tree
    }

    pub fn has(&self, name: &str) -> bool {
        self.kustomizations.iter().any(|k| k.name == name)
    }

    fn visit(&mut self, root: &Path, reads: &Reads, dir: &str, depth: usize) {
        if depth > 16 {
            self.complete = false;
            return;
        }
        let rel = format!("{dir}/kustomization.yaml");
        let Some(doc) =
            read_text(root, reads, &rel).and_then(|t| yaml::parse_value(&rel, &Text::new(t)).ok())
        else {
            self.complete = false;
            return;
        };
        // A patch file is read only where its reference stays inside the repository.
        let read = |p: &str| join(dir, p).and_then(|rel| reads.text(&root.join(rel)));
        match decryption::decryption_patches(&doc, &read) {
            Ok(found) => self.patches.extend(found),
            Err(_) => self.complete = false,
        }
        for r in doc
            .get("resources")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(child) = r.as_str().and_then(|r| join(dir, r)) else {
                self.complete = false;
                continue;
            };
            let abs = root.join(&child);
            if abs.is_dir() {
                self.visit(root, reads, &child, depth + 1);
                continue;
            }
            let docs = read_text(root, reads, &child)
                .and_then(|t| yaml::parse_all(&child, &Text::new(t)).ok());
            match docs {
                Some(docs) => self
                    .kustomizations
                    .extend(docs.iter().filter_map(Kustomization::from_value)),
                None => self.complete = false,
            }
        }
    }
}

fn read_text(root: &Path, reads: &Reads, rel: &str) -> Option<String> {
    crate::fs::check_inside(root, Path::new(rel).parent()?.to_str()?).ok()?;
    reads.text(&root.join(rel))
}

/// `dir` joined with a resource entry (see `kustomize::resolve`); `None` for a remote
/// resource or one that leaves the repository.
pub fn join(dir: &str, entry: &str) -> Option<String> {
    crate::kustomize::resolve(dir, entry).local()
}
