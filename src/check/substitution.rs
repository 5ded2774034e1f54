//! `undefined-variable` and `unknowable-variable`: Flux (2.9 and later) fails a reconcile on
//! an undefined `${VAR}` in the build of a Kustomization with `postBuild`. A variable is
//! defined by `postBuild.substitute`, by a `substituteFrom` ConfigMap or Secret found in some
//! environment's build, or by its own default (`${VAR:=x}`, `${VAR:-x}`, `${VAR=x}`,
//! `${VAR-x}`). A `substituteFrom` source that is not in git (a Secret made out of band, an
//! optional one) could define anything: what only it could define is a warning. When the
//! repository holds the source outside every build (a bootstrap folder applied by hand), the
//! warning says where, and whether that copy sets the variable. `$${VAR}` is an escape, and
//! objects marked `kustomize.toolkit.fluxcd.io/substitute: disabled` are left alone, as Flux
//! leaves them.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::{flux_name, locate, Finding, FluxView};
use crate::diag::Code;
use crate::flux::admission::Admitted;
use crate::flux::inventory::Inventory;
use crate::kustomize::object::ObjectId;
use crate::pointer::Pointer;

pub const UNDEFINED: Code = Code::UndefinedVariable;
pub const UNKNOWABLE: Code = Code::UnknowableVariable;

pub fn variables(flux: &FluxView) -> Vec<Finding> {
    let mut findings = Vec::new();
    for inv in &flux.envs {
        let builds = flux.builds(inv);
        for (id, owner) in inv.kustomizations() {
            // A webhook that adds variables as the cluster admits it makes it substitute, with
            // or without `postBuild` in git.
            let admission = inv.admission.as_ref().filter(|a| a.covers(&id.namespace));
            let post = owner
                .object
                .at_pointer("/spec/postBuild")
                .filter(|p| p.is_object());
            if post.is_none() && admission.is_none() {
                continue;
            }
            let mut defined: BTreeSet<String> = post
                .and_then(|p| p.get("substitute"))
                .and_then(Value::as_object)
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default();
            let mut unknowable = Vec::new();
            let mut sources = Vec::new();
            for from in post
                .and_then(|p| p.get("substituteFrom"))
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
                    cluster: None,
                };
                sources.push(source.to_string());
                match keys_of(flux, inv, &source) {
                    Some(keys) => defined.extend(keys),
                    None => unknowable.push((source.to_string(), outside_builds(flux, &source))),
                }
            }
            if let Some(a) = admission {
                let by = a.describe();
                match &a.sources {
                    None => unknowable.push((format!("{by}, whose values"), None)),
                    Some(admitted) => {
                        for s in admitted {
                            match s {
                                Admitted::Made(_, data) => defined.extend(data.keys().cloned()),
                                Admitted::Object(source) => match keys_of(flux, inv, source) {
                                    Some(keys) => defined.extend(keys),
                                    None => unknowable.push((
                                        format!("{source} (read by {by})"),
                                        outside_builds(flux, source),
                                    )),
                                },
                            }
                        }
                    }
                }
                sources.push(format!("what {by} adds"));
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
                        let (message, help) = unknowable_text(&var, &unknowable);
                        Finding::new(
                            UNKNOWABLE,
                            file,
                            format!(
                                "`${{{var}}}` can only come from {message} (Flux Kustomization `{}`, environment `{}`): if {} does not set it, Flux fails the reconcile",
                                flux_name(id),
                                inv.env,
                                if unknowable.iter().any(|(_, o)| o.is_some()) {
                                    "the cluster's copy"
                                } else {
                                    "it"
                                }
                            ),
                            help,
                        )
                    };
                    findings.push(finding.at(pos));
                }
            }
        }
    }
    findings
}

/// A substituteFrom source the repository holds outside every build: where, and its keys.
struct Outside {
    file: String,
    line: usize,
    keys: BTreeSet<String>,
}

/// What the message and the help say of the sources no build has, for `var`.
fn unknowable_text(var: &str, sources: &[(String, Option<Outside>)]) -> (String, String) {
    let described: Vec<String> = sources
        .iter()
        .map(|(id, outside)| match outside {
            None => format!("{id}, which is not in the repository"),
            Some(o) => format!(
                "{id}, which no environment builds: the repository has it at {}:{}, applied outside Flux, and that copy {}",
                o.file,
                o.line,
                if o.keys.contains(var) {
                    "sets it"
                } else {
                    "does not set it"
                }
            ),
        })
        .collect();
    let places: Vec<String> = sources
        .iter()
        .filter_map(|(_, o)| o.as_ref().map(|o| format!("{}:{}", o.file, o.line)))
        .collect();
    let help = if places.is_empty() {
        format!("make sure the source sets `{var}`, or give it a default (`${{{var}:=value}}`)")
    } else {
        format!(
            "{} is applied by hand, not by Flux: make sure the cluster's copy sets `{var}` (or build it in the environment), or give it a default (`${{{var}:=value}}`)",
            places.join(", ")
        )
    };
    (described.join(", and "), help)
}

/// Where the repository holds `id` outside every build: a manifest of its kind and name, in
/// its namespace (as written, or set by the `namespace` of the folder's kustomization), or
/// with no namespace at all (applied with `-n`). The first such file, in path order.
fn outside_builds(flux: &FluxView, id: &ObjectId) -> Option<Outside> {
    for (file, text) in flux.tree.manifests() {
        if !text.contains(id.name.as_str()) || !text.contains(id.kind.as_str()) {
            continue;
        }
        let Ok(docs) = crate::yaml::parse_all(file, text) else {
            continue;
        };
        let folder_namespace = || {
            let dir = file.rsplit_once('/').map_or("", |(d, _)| d);
            crate::kustomize::KUSTOMIZATION_FILES.iter().find_map(|k| {
                let path = if dir.is_empty() {
                    k.to_string()
                } else {
                    format!("{dir}/{k}")
                };
                let text = flux.tree.read(&path)?;
                let doc: Value = crate::yaml::parse_all(&path, &text)
                    .ok()?
                    .into_iter()
                    .next()?;
                doc.get("namespace")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
        };
        for (index, doc) in docs.iter().enumerate() {
            let s = |p: &str| doc.at_pointer(p).and_then(Value::as_str);
            if s("/kind") != Some(id.kind.as_str())
                || s("/apiVersion") != Some("v1")
                || s("/metadata/name") != Some(id.name.as_str())
            {
                continue;
            }
            let namespace = s("/metadata/namespace")
                .map(str::to_string)
                .or_else(folder_namespace);
            if namespace.is_some_and(|ns| ns != id.namespace) {
                continue;
            }
            let keys = ["data", "stringData", "binaryData"]
                .iter()
                .filter_map(|k| doc.get(*k).and_then(Value::as_object))
                .flat_map(|m| m.keys().cloned())
                .collect();
            let line = locate::document(&flux.tree, file, index).map_or(1, |p| p.line_col().0);
            return Some(Outside {
                file: file.to_string(),
                line,
                keys,
            });
        }
    }
    None
}

/// The keys of a ConfigMap or Secret: as environment `inv`'s builds make it, read as
/// `cutover` reads it (`Inventory::sources`: two owners' different copies give the keys of
/// either, a SOPS Secret its keys, an ExternalSecret's the keys its template writes), else
/// of the copy another environment builds; `None` when they are not known.
fn keys_of(flux: &FluxView, inv: &Inventory, id: &ObjectId) -> Option<BTreeSet<String>> {
    if let Some(source) = inv.sources.get(id) {
        return source.keys();
    }
    // The environment's own copy: two clusters often hold one ConfigMap name
    // (`cluster-settings`) with different keys.
    let entry = inv
        .objects
        .get(id)
        .or_else(|| flux.envs.iter().find_map(|other| other.objects.get(id)))?;
    entry
        .facts
        .data_keys
        .as_ref()
        .map(|k| k.iter().cloned().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flux::facts::needed_variables;

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
