//! `double-owner`: one object (group, kind, namespace, name) built by two Flux Kustomizations
//! in one environment. Each applies its own copy over the other's, and when one stops
//! building it, that one prunes it while the other still expects it.

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
            findings.push(
                Finding::new(
                    CODE,
                    second.file.to_string(),
                    format!(
                        "{id} is built by both `{}` and `{}` in environment `{}`: they overwrite each other, and the one that stops building it prunes it",
                        flux_name(&first.owner),
                        flux_name(&second.owner),
                        inv.env
                    ),
                    "build every object in exactly one Flux Kustomization: remove it from one of the two paths",
                )
                .at(locate::document(&flux.tree, &second.file, second.index)),
            );
        }
    }
    findings
}
