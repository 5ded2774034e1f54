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
use crate::flux::inventory::Entry;
use crate::kustomize::object::ObjectId;

pub const CODE: Code = Code::DoubleOwner;

pub fn double_owner(flux: &FluxView) -> Vec<Finding> {
    let mut findings = Vec::new();
    for inv in &flux.envs {
        // Every owner past the first of each object, in the order they were found: one
        // finding for the object, at the first of them.
        let mut others: Vec<(&ObjectId, Vec<&Entry>)> = Vec::new();
        let mut at: std::collections::BTreeMap<&ObjectId, usize> = Default::default();
        for (id, second) in &inv.duplicates {
            let i = *at.entry(id).or_insert_with(|| {
                others.push((id, Vec::new()));
                others.len() - 1
            });
            others[i].1.push(second);
        }
        for (id, seconds) in others {
            let Some(first) = inv.objects.get(id) else {
                continue;
            };
            // A name still written with `${...}` is one substitution could not know (a
            // source fluxwave cannot read may set it: `unknowable-variable` says so): the
            // two may well differ in the cluster.
            if [&id.namespace, &id.name].iter().any(|s| s.contains("${")) {
                continue;
            }
            let mut names: Vec<String> = std::iter::once(first)
                .chain(seconds.iter().copied())
                .map(|e| format!("`{}`", flux_name(&e.owner)))
                .collect();
            names.dedup();
            let (by, help) = match names.len() {
                2 => (
                    format!("both {} and {}", names[0], names[1]),
                    "build every object in exactly one Flux Kustomization: remove it from one of the two paths",
                ),
                n => {
                    const SHOWN: usize = 3;
                    let rest = if n > SHOWN + 1 {
                        format!("{} others", n - SHOWN)
                    } else {
                        names[n - 1].clone()
                    };
                    let shown = names[..SHOWN.min(n - 1)].join(", ");
                    (
                        format!("{shown} and {rest}"),
                        "build it in exactly one Flux Kustomization (one the others depend on): remove it from the other paths",
                    )
                }
            };
            let second = seconds[0];
            findings.push(
                Finding::new(
                    CODE,
                    second.file.to_string(),
                    format!(
                        "{id} is built by {by} in environment `{}`: they overwrite each other's copy and ownership labels, and the one that stops building it deletes it if it applied it last",
                        inv.env
                    ),
                    help,
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
