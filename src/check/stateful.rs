//! `unprotected-stateful`: a CloudNativePG Cluster, PersistentVolumeClaim or StatefulSet that
//! Flux may prune. A path change, a rename or a removed Kustomization deletes it and its data
//! with it; `kustomize.toolkit.fluxcd.io/prune: disabled` (label or annotation) makes Flux
//! leave it in place.

use super::{locate, Finding, FluxView};
use crate::diag::Code;

pub const CODE: Code = Code::UnprotectedStateful;

pub fn unprotected_stateful(flux: &FluxView) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (_, id, e) in flux.objects() {
        let stateful = matches!(
            (id.group.as_str(), id.kind.as_str()),
            ("", "PersistentVolumeClaim")
                | ("apps", "StatefulSet")
                | ("postgresql.cnpg.io", "Cluster")
        );
        if !stateful || e.facts.prune_disabled {
            continue;
        }
        findings.push(
            Finding::new(
                CODE,
                e.file.to_string(),
                format!("{id} holds data, and Flux prunes it when it leaves the build: a moved path, a rename or a removed Kustomization deletes the data"),
                "annotate it with `kustomize.toolkit.fluxcd.io/prune: disabled` (render does so unless the catalog says `pruneProtection: false`)",
            )
            .at(locate::document(&flux.tree, &e.file, e.index)),
        );
    }
    findings
}
