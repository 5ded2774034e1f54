//! `unknown-source`: a Flux Kustomization whose `sourceRef` names no source in its
//! environment's build waits for an artifact that never comes. The kinds a Kustomization can
//! read are kustomize-controller's (`CrossNamespaceSourceReference.Kind` in
//! `api/v1/reference_types.go`, the `switch` of `getSource` in
//! `internal/controller/kustomization_controller.go`): GitRepository, OCIRepository, Bucket and
//! ExternalArtifact. An ExternalArtifact is made by an ArtifactGenerator
//! (`source.extensions.fluxcd.io`) in its own namespace, one per `spec.artifacts[].name`
//! (source-watcher), so a generator in the build makes it known. The source the root
//! Kustomization reads (the bootstrap GitRepository, usually in
//! `clusters/<env>/flux-system/gotk-sync.yaml`) exists by definition: Flux runs from it; so
//! does the source of a root nested in the environment's entry (`Environment::nested`).

use serde_json::Value;

use super::build::Failures;
use super::{flux_name, Finding, FluxView};
use crate::diag::Code;
use crate::flux::artifact::is_generator;
use crate::flux::inventory::Inventory;
use crate::flux::SourceKind;
use crate::pointer::Pointer;

pub const CODE: Code = Code::UnknownSource;

pub fn unknown_source(flux: &FluxView, failures: &Failures) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (env, inv) in flux.envs.iter().enumerate() {
        let hidden = failures.may_hide(env);
        for (id, owner) in inv.kustomizations() {
            if owner.parent.is_none() {
                continue;
            }
            let source = owner.source();
            if inv.repository.contains(&source) {
                continue;
            }
            let external = source.kind == SourceKind::ExternalArtifact;
            let known = source.kind.kustomization_reads();
            if known
                && (inv.objects.contains_key(&source.id())
                    || (external && generated(inv, &source.namespace, &source.name)))
            {
                continue;
            }
            let (path, pos) = flux.owner_at(inv, owner, "sourceRef");
            let what = if external {
                format!(
                    "`{source}`, which no ArtifactGenerator of environment `{}` makes (in spec.artifacts of a generator in `{}`){hidden}",
                    inv.env, source.namespace
                )
            } else if known {
                format!(
                    "`{source}`, which environment `{}` does not build{hidden}",
                    inv.env
                )
            } else {
                format!(
                    "`{source}`, which is not a {} (environment `{}`)",
                    SourceKind::kustomization_kinds(),
                    inv.env
                )
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

/// Whether an ArtifactGenerator of `inv` in `namespace` makes the ExternalArtifact `name`.
fn generated(inv: &Inventory, namespace: &str, name: &str) -> bool {
    inv.objects
        .iter()
        .filter(|(id, _)| is_generator(id) && id.namespace == namespace)
        .filter_map(|(_, e)| e.whole.as_deref())
        .flat_map(|g| {
            g.at_pointer("/spec/artifacts")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
        .filter_map(|a| a.get("name").and_then(Value::as_str))
        .any(|pattern| matches_name(pattern, name))
}

/// Whether `name` is an artifact name a generator renders from `pattern`. With a
/// `spec.pathPattern`, a name may hold placeholders (`{app}`) that each become one captured
/// path segment, lowercased (`buildArtifactRequests` in source-watcher): a placeholder
/// matches one or more characters other than `/`.
fn matches_name(pattern: &str, name: &str) -> bool {
    let Some(open) = pattern.find('{') else {
        return pattern == name;
    };
    let Some(close) = pattern[open..].find('}').map(|c| open + c) else {
        return pattern == name;
    };
    let (head, rest) = (&pattern[..open], &pattern[close + 1..]);
    let Some(tail) = name.strip_prefix(head) else {
        return false;
    };
    // The placeholder takes at least one character, then the rest must match.
    tail.char_indices()
        .skip(1)
        .map(|(i, _)| i)
        .chain(std::iter::once(tail.len()))
        .take_while(|&i| !tail[..i].contains('/'))
        .filter(|&i| i > 0)
        .any(|i| matches_name(rest, &tail[i..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_match_one_segment() {
        assert!(matches_name("apps", "apps"));
        assert!(!matches_name("apps", "app"));
        assert!(matches_name("{app}", "podinfo"));
        assert!(matches_name("{app}-{env}", "podinfo-staging"));
        assert!(matches_name("app-{app}", "app-x"));
        assert!(!matches_name("app-{app}", "app-"));
        assert!(!matches_name("{app}", ""));
        assert!(!matches_name("{app}-prod", "podinfo-staging"));
        assert!(!matches_name("{app}", "a/b"));
    }
}
