//! `sops-without-decryption`: a Flux Kustomization whose build holds a SOPS-encrypted file and
//! that gets no decryption in some environment applies the ciphertext verbatim and corrupts
//! its Secrets. Read from the builder's view of each environment: the Kustomization as Flux
//! holds it after every patch (the environment's, and a parent Kustomization's `spec.patches`
//! on its children), so decryption counts in whatever form it was set. Waves of a
//! catalog-managed repository are left to `missing-decryption`, which `apply` repairs: both
//! read the same answer (`flux::decryption::ends_decrypted` on the builder's objects), and
//! the waves `apply` answers for come from its change set.

use std::collections::BTreeSet;

use super::{flux_name, Finding, FluxView};
use crate::diag::Code;
use crate::flux::decryption::ends_decrypted;

pub const CODE: Code = Code::SopsWithoutDecryption;

/// `decrypted`: the Kustomizations whose decryption `apply` answers for
/// (`ChangeSet::decrypted`), reported as `missing-decryption` drift instead.
pub fn sops_without_decryption(flux: &FluxView, decrypted: &BTreeSet<String>) -> Vec<Finding> {
    let mut findings = Vec::new();
    for inv in &flux.envs {
        let builds = flux.builds(inv);
        for (id, owner) in inv.kustomizations() {
            if ends_decrypted(&owner.object) || decrypted.contains(&id.name) {
                continue;
            }
            let Some(sops) = builds.get(id).into_iter().flatten().find(|b| b.facts.sops) else {
                continue;
            };
            let (path, pos) = flux.owner_at(inv, owner, "spec");
            findings.push(
                Finding::new(
                    CODE,
                    path,
                    format!(
                        "environment `{}`: Flux Kustomization `{}` builds the SOPS file {} but has no decryption",
                        inv.env,
                        flux_name(id),
                        sops.file
                    ),
                    format!(
                        "set spec.decryption (provider: sops, secretRef: the age key's Secret) on it, or add a patch that sets it in {}/kustomization.yaml",
                        inv.env_path
                    ),
                )
                .at(pos),
            );
        }
    }
    findings
}
