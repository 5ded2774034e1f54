//! `plaintext-secret`: a Secret with `data` or `stringData` committed without SOPS encryption
//! (no `sops:` metadata with a `mac`) is readable by anyone who can read the repository, and
//! git keeps it for ever. Every YAML file of the working tree is read, built or not. A finding
//! names the Secret and how many keys it holds, never a value; `check.allowPlaintextSecrets`
//! in fluxwave.yaml lets a Secret through on purpose.

use serde_json::Value;

use super::{locate, Finding, FluxView};
use crate::diag::Code;
use crate::kustomize::object::is_sops;

pub const CODE: Code = Code::PlaintextSecret;

pub fn plaintext_secret(flux: &FluxView) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (file, text) in flux.tree.manifests() {
        if !text.contains("Secret") {
            continue;
        }
        // A file that does not parse is no manifest Flux could apply (a Helm template, ...).
        let Ok(docs) = crate::yaml::parse_all(file, text) else {
            continue;
        };
        for (index, doc) in docs.iter().enumerate() {
            if doc.get("kind").and_then(Value::as_str) != Some("Secret")
                || doc.get("apiVersion").and_then(Value::as_str) != Some("v1")
                || is_sops(doc)
            {
                continue;
            }
            let keys: usize = ["data", "stringData"]
                .iter()
                .filter_map(|k| doc.get(*k).and_then(Value::as_object))
                .map(|m| m.len())
                .sum();
            if keys == 0 {
                continue;
            }
            let meta = |k: &str| {
                doc.pointer(&format!("/metadata/{k}"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            };
            let (namespace, name) = (meta("namespace"), meta("name"));
            if flux.config.check.allows_plaintext(&namespace, &name) {
                continue;
            }
            let shown = if namespace.is_empty() {
                name.clone()
            } else {
                format!("{namespace}/{name}")
            };
            findings.push(
                Finding::new(
                    CODE,
                    file,
                    format!(
                        "Secret `{shown}` is committed in plain text ({keys} key{} in data/stringData, no SOPS metadata)",
                        if keys == 1 { "" } else { "s" }
                    ),
                    "encrypt it with `sops --encrypt --in-place` (and rotate what was committed); or, if it holds nothing secret, list it under check.allowPlaintextSecrets in fluxwave.yaml",
                )
                .at(locate::document(&flux.tree, file, index)),
            );
        }
    }
    findings
}
