//! `undefined-variable` and `unknowable-variable`: Flux (2.9 and later) fails a reconcile on
//! an undefined `${VAR}` in the build of a Kustomization with `postBuild`. A variable is
//! defined by `postBuild.substitute`, by a `substituteFrom` ConfigMap or Secret found in some
//! environment's build, or by its own default (`${VAR:=x}`, `${VAR:-x}`, `${VAR=x}`,
//! `${VAR-x}`). A `substituteFrom` source that is not in git (a Secret made out of band, an
//! optional one) could define anything: what only it could define is a warning. `$${VAR}` is
//! an escape, and objects marked `kustomize.toolkit.fluxcd.io/substitute: disabled` are left
//! alone, as Flux leaves them.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::{flux_name, locate, Finding, FluxView};
use crate::diag::Code;
use crate::kustomize::object::ObjectId;

pub const UNDEFINED: Code = Code::UndefinedVariable;
pub const UNKNOWABLE: Code = Code::UnknowableVariable;

pub fn variables(flux: &FluxView) -> Vec<Finding> {
    let mut findings = Vec::new();
    for inv in &flux.envs {
        let builds = flux.builds(inv);
        for (id, owner) in &inv.owners {
            let Some(post) = owner
                .object
                .pointer("/spec/postBuild")
                .filter(|p| p.is_object())
            else {
                continue;
            };
            let mut defined: BTreeSet<String> = post
                .get("substitute")
                .and_then(Value::as_object)
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default();
            let mut unknowable = Vec::new();
            let mut sources = Vec::new();
            for from in post
                .get("substituteFrom")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let s = |k: &str| from.get(k).and_then(Value::as_str).unwrap_or("");
                let (kind, name) = (s("kind"), s("name"));
                let source = ObjectId {
                    group: String::new(),
                    kind: kind.to_string(),
                    namespace: id.namespace.clone(),
                    name: name.to_string(),
                };
                sources.push(source.to_string());
                match keys_of(flux, &source) {
                    Some(keys) => defined.extend(keys),
                    None => unknowable.push(source.to_string()),
                }
            }
            let mut by_file: BTreeMap<(&str, usize), BTreeSet<String>> = BTreeMap::new();
            for b in builds.get(id).into_iter().flatten() {
                let vars = b.facts.variables.iter().filter(|v| !defined.contains(*v));
                by_file
                    .entry((b.file, b.index))
                    .or_default()
                    .extend(vars.cloned());
            }
            by_file.retain(|_, vars| !vars.is_empty());
            for ((file, index), vars) in by_file {
                for var in vars {
                    // The whole `${VAR...}`, to its closing brace on the line.
                    let pos =
                        locate::text(&flux.tree, file, index, &format!("${{{var}")).map(|mut p| {
                            let (start, len) = p.span;
                            let rest = &p.text[start + len..];
                            let line = &rest[..rest.find('\n').unwrap_or(rest.len())];
                            if let Some(close) = line.find('}') {
                                p.span.1 += close + 1;
                            }
                            p
                        });
                    let finding = if unknowable.is_empty() {
                        Finding::new(
                            UNDEFINED,
                            file,
                            format!(
                                "`${{{var}}}` is not defined for Flux Kustomization `{}` (environment `{}`): {}; Flux fails the reconcile",
                                flux_name(id),
                                inv.env,
                                if sources.is_empty() {
                                    "postBuild.substitute does not set it".to_string()
                                } else {
                                    format!("neither postBuild.substitute nor {} set it", sources.join(", "))
                                }
                            ),
                            format!("add `{var}` to postBuild.substitute or to a substituteFrom source, give it a default (`${{{var}:=value}}`), or escape it as `$${{{var}}}`"),
                        )
                    } else {
                        Finding::new(
                            UNKNOWABLE,
                            file,
                            format!(
                                "`${{{var}}}` can only come from {}, which is not in the repository (Flux Kustomization `{}`, environment `{}`): if it does not set it, Flux fails the reconcile",
                                unknowable.join(", "),
                                flux_name(id),
                                inv.env
                            ),
                            format!("make sure the source sets `{var}`, or give it a default (`${{{var}:=value}}`)"),
                        )
                    };
                    findings.push(finding.at(pos));
                }
            }
        }
    }
    findings
}

/// The keys of a ConfigMap or Secret some environment builds; `None` when none does.
fn keys_of(flux: &FluxView, id: &ObjectId) -> Option<BTreeSet<String>> {
    let entry = flux.envs.iter().find_map(|inv| inv.objects.get(id))?;
    // A generated ConfigMap's keys are not modelled: as good as unknown.
    entry
        .facts
        .data_keys
        .as_ref()
        .map(|k| k.iter().cloned().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kustomize::object::needed_variables;

    #[test]
    fn finds_variables_without_defaults_and_skips_escapes() {
        let mut out = BTreeSet::new();
        needed_variables(
            "${A} ${B:=x} ${C:-${K:=y}} ${D=x} $${F} ${G^^} $H ${1X} ${_I} ${J:=${L}}",
            &mut out,
        );
        // Flux's scanner reads digits anywhere in a name, so `${1X}` needs `1X`, which no
        // variable can define (`varsubRegex`); `L` is evaluated before `J` is looked up.
        assert_eq!(
            out.into_iter().collect::<Vec<_>>(),
            ["1X", "A", "G", "L", "_I"]
        );
    }
}
