//! The one integration-test binary: small repositories built in temporary folders, the real
//! `fluxwave` binary run on them, outputs compared with snapshots (temporary paths redacted),
//! emitted trees built with the real kustomize and revisions made with the real git.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod apply;
mod artifact;
mod bad_input;
mod blast;
mod build;
mod build_cmd;
mod check;
mod check_build;
mod crash;
mod cutover;
mod dependency_only;
mod diff_cmd;
mod differential;
mod encoding;
mod fuzz;
mod generate;
mod helm;
mod helm_env;
mod helm_untrusted;
mod homelab;
mod hostile;
mod hostile_apply;
mod hostile_pr;
mod init;
mod install;
mod leaks;
mod limits;
mod machine;
mod markdown;
mod operator_env;
mod props;
mod render;
mod resource_set;
mod roots;
mod secret_forms;
mod secrets;
mod substitution;
mod terminal;
mod topology;
mod touched;
mod unjudged;
mod verdicts;
mod wiring;
