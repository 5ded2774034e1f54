//! `double-owner`: one object (group, kind, namespace, name) built by two Flux Kustomizations
//! in one environment. Each applies its own copy over the other's, taking its ownership
//! labels (`kustomize.toolkit.fluxcd.io/name` and `/namespace`), and when one stops building
//! it, that one deletes it if it applied it last (kustomize-controller prunes with
//! `ssa.DeleteOptions.Inclusions` set to its own labels: fluxcd/pkg `ssa/manager_delete.go`
//! skips an object labelled for another) while the other still expects it. Also an object a
//! rendered HelmRelease's chart installs that a Flux Kustomization or another release
//! applies too: Helm refuses to install over an object it does not own ("exists and cannot
//! be imported into the current release"), and once it owns it, the two overwrite each
//! other.

use super::{flux_name, locate, Finding, FluxView};
use crate::diag::Code;

pub const CODE: Code = Code::DoubleOwner;

pub fn double_owner(flux: &FluxView) -> Vec<Finding> {
    let mut findings = Vec::new();
    for inv in &flux.envs {
        for (id, second) in &inv.duplicates {
            let Some(first) = inv.objects.get(id) else {
                continue;
            };
            // A name still written with `${...}` is one substitution could not know (a
            // source fluxwave cannot read may set it: `unknowable-variable` says so): the
            // two may well differ in the cluster.
            if [&id.namespace, &id.name].iter().any(|s| s.contains("${")) {
                continue;
            }
            findings.push(
                Finding::new(
                    CODE,
                    second.file.to_string(),
                    format!(
                        "{id} is built by both `{}` and `{}` in environment `{}`: they overwrite each other's copy and ownership labels, and the one that stops building it deletes it if it applied it last",
                        flux_name(&first.owner),
                        flux_name(&second.owner),
                        inv.env
                    ),
                    "build every object in exactly one Flux Kustomization: remove it from one of the two paths",
                )
                .at(locate::document(&flux.tree, &second.file, second.index)),
            );
        }
        findings.extend(rendered_twice(flux, inv));
    }
    findings
}

/// The objects of rendered releases that something else in the environment applies too.
fn rendered_twice(flux: &FluxView, inv: &crate::flux::inventory::Inventory) -> Vec<Finding> {
    use crate::flux::release::Release;
    use std::collections::BTreeMap;
    let mut out = Vec::new();
    let mut by_release: BTreeMap<
        &crate::kustomize::object::ObjectId,
        &crate::kustomize::object::ObjectId,
    > = BTreeMap::new();
    for (hr, e) in inv.objects.iter() {
        let Some(r) = e.release.as_deref().and_then(Release::rendered) else {
            continue;
        };
        for o in r.objects.iter().filter(|o| o.in_release()) {
            let other = if let Some(k) = inv.objects.get(&o.id) {
                format!("`{}`", flux_name(&k.owner))
            } else if let Some(first) = by_release.get(&o.id).filter(|f| **f != hr) {
                format!("HelmRelease {}/{}", first.namespace, first.name)
            } else {
                by_release.insert(&o.id, hr);
                continue;
            };
            out.push(
                Finding::new(
                    CODE,
                    e.file.to_string(),
                    format!(
                        "{} is installed by HelmRelease {}/{} (chart {}, {}) and applied by {other} in environment `{}`: Helm refuses to install over an object it does not own, and the two overwrite each other",
                        o.id, hr.namespace, hr.name, r.chart, o.template, inv.env
                    ),
                    "let one of them own it: disable it in the chart's values, or remove it from the other",
                )
                .at(locate::document(&flux.tree, &e.file, e.index)),
            );
        }
    }
    out
}
