//! `unprotected-stateful`: an object that holds data (`flux::data`, the judgment `cutover`
//! uses: a claim, a volume, a StatefulSet, a CloudNativePG Cluster, a HelmRelease whose
//! values create a claim) that Flux may prune. A path change, a rename or a removed
//! Kustomization deletes it and its data with it; `kustomize.toolkit.fluxcd.io/prune:
//! disabled` (label or annotation) makes Flux leave it in place; for what a ResourceSet makes,
//! the Flux Operator's `fluxcd.controlplane.io/prune: disabled`. A Namespace is judged by
//! what it holds, which this lint reports one by one; what only *may* hold data (a chart not
//! rendered) is left to `cutover`, which shows it when it is deleted.

use super::{locate, Finding, FluxView};
use crate::diag::Code;
use crate::flux::data::{self, Data};

pub const CODE: Code = Code::UnprotectedStateful;

pub fn unprotected_stateful(flux: &FluxView) -> Vec<Finding> {
    let namespaces = data::Namespaces::new();
    let mut findings = Vec::new();
    for (_, id, e) in flux.objects() {
        // What a ResourceSet makes is pruned by the Flux Operator, which reads its own opt-out.
        let by_operator = crate::flux::resource_set::is(&e.owner);
        let protected = if by_operator {
            e.facts.operator_prune_disabled
        } else {
            e.facts.prune_disabled
        };
        if protected || id.is("", "Namespace") {
            continue;
        }
        let Data::Holds(evidence) =
            data::of(id, e.whole.as_deref(), e.release.as_deref(), &namespaces)
        else {
            continue;
        };
        let finding = if by_operator {
            Finding::new(
                CODE,
                e.file.to_string(),
                format!("{id} holds data ({evidence}), and {} deletes it when it leaves what the ResourceSet makes: a removed input or a removed ResourceSet deletes the data", e.owner),
                "annotate it with `fluxcd.controlplane.io/prune: disabled` in the ResourceSet's template (the Flux Operator's opt-out; kustomize-controller's means nothing to it)",
            )
        } else {
            Finding::new(
                CODE,
                e.file.to_string(),
                format!("{id} holds data ({evidence}), and Flux prunes it when it leaves the build: a moved path, a rename or a removed Kustomization deletes the data"),
                "annotate it with `kustomize.toolkit.fluxcd.io/prune: disabled` (render does so unless the catalog says `pruneProtection: false`)",
            )
        };
        findings.push(finding.at(locate::document(&flux.tree, &e.file, e.index)));
    }
    findings
}
