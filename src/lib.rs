//! fluxwave keeps a Flux app tier split into dependency-ordered waves.
//!
//! Data flows one way: `config` and `catalog` read the repository's intent, `graph` computes
//! each unit's wave (its longest dependency path), `repo` reads the tree as it is, `render`
//! turns a ServiceDefinition into manifests, `plan` places every file and derives the change
//! set, `flux` emits the wave Kustomizations, and `check` reports what is out of step.
//! `cutover` builds two git revisions as Flux does and names every object Flux would delete
//! between them. `cli` is the only place that prints.

pub mod catalog;
pub mod check;
pub mod cli;
pub mod config;
pub mod cutover;
pub mod diag;
pub mod error;
pub mod flux;
pub mod fs;
pub mod graph;
pub mod kustomize;
mod par;
pub mod plan;
pub mod plural;
pub mod redact;
pub mod render;
pub mod repo;
pub mod tree;
pub mod yaml;
