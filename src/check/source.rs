//! `unknown-source`: a Flux Kustomization whose `sourceRef` names no GitRepository,
//! OCIRepository or Bucket in its environment's build waits for an artifact that never
//! comes. The source the root Kustomization reads (the bootstrap GitRepository, usually in
//! `clusters/<env>/flux-system/gotk-sync.yaml`) exists by definition: Flux runs from it.

use super::{flux_name, Finding, FluxView};
use crate::diag::Code;
use crate::kustomize::object::ObjectId;

pub const CODE: Code = Code::UnknownSource;

const SOURCE_GROUP: &str = "source.toolkit.fluxcd.io";
const SOURCE_KINDS: &[&str] = &["GitRepository", "OCIRepository", "Bucket"];

pub fn unknown_source(flux: &FluxView) -> Vec<Finding> {
    let mut findings = Vec::new();
    for inv in &flux.envs {
        let bootstrap = inv
            .owners
            .values()
            .find(|o| o.parent.is_none())
            .map(|o| o.source());
        for (id, owner) in &inv.owners {
            if owner.parent.is_none() {
                continue;
            }
            let (kind, namespace, name) = owner.source();
            if Some((kind.clone(), namespace.clone(), name.clone())) == bootstrap {
                continue;
            }
            let source = ObjectId {
                group: SOURCE_GROUP.into(),
                kind: kind.clone(),
                namespace: namespace.clone(),
                name: name.clone(),
            };
            let known = SOURCE_KINDS.contains(&kind.as_str());
            if known && inv.objects.contains_key(&source) {
                continue;
            }
            let (path, pos) = flux.owner_at(inv, owner, "sourceRef");
            let what = if known {
                format!(
                    "`{kind}/{namespace}/{name}`, which environment `{}` does not build",
                    inv.env
                )
            } else {
                format!("`{kind}/{namespace}/{name}`, which is not a GitRepository, OCIRepository or Bucket (environment `{}`)", inv.env)
            };
            findings.push(
                Finding::new(
                    CODE,
                    path,
                    format!(
                        "Flux Kustomization `{}` reads its source from {what}: it never gets an artifact",
                        flux_name(id)
                    ),
                    "name a source the environment builds in spec.sourceRef (its namespace defaults to the Kustomization's), or add the source",
                )
                .at(pos),
            );
        }
    }
    findings
}
