//! fluxwave keeps a Flux app tier split into dependency-ordered waves, and tells before a
//! merge what Flux will do to the cluster.
//!
//! The modules are layers, each using only those below it (README, "Layout of the code"):
//! `fs` reads and writes files, `yaml` reads and edits YAML, `tree` holds a revision's files,
//! `kustomize` builds a kustomization as kustomize does, `flux` builds an environment as Flux
//! does and records which Kustomization applies each object, `helm` renders its HelmReleases
//! with the real Helm; `config`, `catalog` and `graph`
//! read the repository's intent and compute each unit's wave, `repo` assembles them, `init`
//! drafts that intent from a repository that has none yet, `render` turns a ServiceDefinition
//! into manifests, `plan` places every file and derives the change set `apply` carries out,
//! `diag` holds the finding codes and renders findings, `blast` computes what a failing unit
//! blocks, `cutover` judges what Flux deletes between two revisions, `check` lints, `objects`
//! gives the objects each Kustomization applies and what changes in them (with `unified`
//! diffs), and `cli`, the only module that prints, runs the commands. `plain` (the fast
//! reader of plain block YAML), `envsubst` (Flux's variable syntax), `goregex` (Go's regular
//! expressions) and `pointer` (JSON Pointer lookups) are leaves: they import nothing of the
//! crate.
//!
//! Only `cli` is the library's interface (with `process`'s guard over children, for `main`);
//! `testing` hands the integration tests and the fuzz targets the parts they drive directly.
//! Everything else is `pub(crate)`, so the compiler reports what nothing uses.

pub(crate) mod base64;
pub(crate) mod blast;
pub(crate) mod cache;
pub(crate) mod catalog;
pub(crate) mod check;
pub mod cli;
pub(crate) mod config;
pub(crate) mod cutover;
pub(crate) mod diag;
pub(crate) mod envsubst;
pub(crate) mod error;
pub(crate) mod flux;
pub(crate) mod fs;
pub(crate) mod goregex;
pub(crate) mod graph;
pub(crate) mod helm;
pub(crate) mod init;
pub(crate) mod kustomize;
pub(crate) mod objects;
mod par;
mod plain;
pub(crate) mod plan;
pub(crate) mod plural;
pub(crate) mod pointer;
pub(crate) mod process;
pub(crate) mod redact;
pub(crate) mod render;
pub(crate) mod repo;
mod tally;
pub(crate) mod tree;
pub(crate) mod unified;
#[cfg(test)]
mod upstream;
pub(crate) mod yaml;

/// For the binary's `main`: the guard that ends every child and temporary on a signal, and the
/// watcher that does it when fluxwave is killed outright (`process`).
pub use process::{guard, is_watcher, watch};

/// What the integration tests and the fuzz targets drive directly: the readers they feed
/// hostile input, and the builders they hold against the real kustomize and git. Not an
/// interface for other programs; it changes with the code.
#[doc(hidden)]
pub mod testing {
    pub mod catalog {
        pub use crate::catalog::{parse, Service};
    }
    pub mod config {
        pub use crate::config::{is_dns_label, Config};
    }
    pub mod cutover {
        pub use crate::cutover::{compare, Deletion, ObjectId, Report};
    }
    pub mod error {
        pub use crate::error::{Error, Result, SourceError};
    }
    pub mod flux {
        pub use crate::flux::Kustomization;
        pub mod inventory {
            pub use crate::flux::discover::{environments, Environment, Root};
            pub use crate::flux::inventory::{build, Inventory, Owner};
        }
        pub mod decryption {
            pub use crate::flux::decryption::{gives_decryption, literal_target, patch_entries};
        }
        pub mod emit {
            pub use crate::flux::emit::{
                decryption_patch_item, group_kustomization, group_kustomization_text,
                GroupKustomization,
            };
        }
    }
    pub mod graph {
        pub use crate::graph::Graph;
    }
    pub mod kustomize {
        pub use crate::kustomize::{resolve, Builder};
    }
    pub mod render {
        pub use crate::render::{service, Options};
    }
    pub mod tree {
        pub use crate::tree::FileTree;
    }
    pub mod yaml {
        pub use crate::yaml::{emit_with_comments, parse, parse_all, Text};
        pub mod edit {
            pub use crate::yaml::edit::edit_sequence;
        }
    }
}
