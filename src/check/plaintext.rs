//! `plaintext-secret`: a Secret with `data` or `stringData` committed without SOPS encryption
//! (no `sops:` metadata with a `mac`) is readable by anyone who can read the repository, and
//! git keeps it for ever. Every YAML file of the working tree is read, built or not. A finding
//! names the Secret and how many keys it holds, never a value; `check.allowPlaintextSecrets`
//! in fluxwave.yaml lets a Secret through on purpose.
//!
//! A value that only points at a secret kept elsewhere is no secret: a 1Password reference
//! (`op://vault/item/[section/]field`, what `op inject` and the 1Password operator resolve), a
//! vals expression (`ref+<scheme>://...`), a bank-vaults webhook reference (`vault:path#key`),
//! a key placeholder a bootstrap tool resolves (`secret://<key>`, one name of letters, digits,
//! `_`, `-`, `.` and `/`: no host, user or port, so no webhook URL or connection string),
//! an argocd-vault-plugin placeholder (`<path:path#key>`), SOPS ciphertext (`ENC[...]`), a
//! value holding a template expression (`{{ ... }}` for Go, Helm or `op inject`, `${...}` for
//! Flux's postBuild substitution), or an empty value. `data` values are base64, decoded first
//! (one that is not base64 is judged as written: a reference there is resolved before the
//! Secret is applied). A Secret is plain text when one of its values is none of these.

use serde_json::Value;

use super::{locate, Finding, FluxView};
use crate::diag::Code;
use crate::flux::facts::is_sops;
use crate::plural::count;
use crate::pointer::Pointer;

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
            let (mut keys, mut values) = (0, 0);
            for (field, base64) in [("data", true), ("stringData", false)] {
                for v in doc
                    .get(field)
                    .and_then(Value::as_object)
                    .into_iter()
                    .flat_map(|m| m.values())
                {
                    keys += 1;
                    values += usize::from(holds_value(v, base64));
                }
            }
            if values == 0 {
                continue;
            }
            let meta = |k: &str| {
                doc.at_pointer(&format!("/metadata/{k}"))
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
                        "Secret `{shown}` is committed in plain text ({}, no SOPS metadata)",
                        if values == keys {
                            format!("{} in data/stringData", count(keys, "key"))
                        } else {
                            format!(
                                "{values} of {keys} keys in data/stringData {} a value, the rest references or templates",
                                if values == 1 { "holds" } else { "hold" }
                            )
                        }
                    ),
                    "encrypt it with `sops --encrypt --in-place` (and rotate what was committed); or, if it holds nothing secret, list it under check.allowPlaintextSecrets in fluxwave.yaml",
                )
                .at(locate::document(&flux.tree, file, index)),
            );
        }
    }
    findings
}

/// Whether a Secret value holds something secret: not empty, and neither a reference to a
/// secret kept elsewhere nor a template (see the module's documentation). A `data` value is
/// judged decoded; one that is not base64, or whose bytes are not text, as it is written (a
/// reference in `data` is resolved before the Secret is applied: vals or a bootstrap script
/// writes the value there, which the API server would refuse as it stands).
fn holds_value(v: &Value, base64: bool) -> bool {
    let text = match v {
        Value::Null => return false,
        Value::String(s) => s,
        _ => return true,
    };
    if !base64 {
        return !is_reference(text);
    }
    match crate::base64::decode(text).map(String::from_utf8) {
        Some(Ok(decoded)) => !is_reference(&decoded),
        _ => !is_reference(text),
    }
}

/// A value that is empty, a reference to a secret kept elsewhere, or a template.
fn is_reference(value: &str) -> bool {
    let v = value.trim();
    if v.is_empty() || is_template(v) {
        return true;
    }
    if v.contains(char::is_whitespace) && !v.starts_with("op://") {
        // References are one token; 1Password names may hold spaces.
        return false;
    }
    // 1Password: op://<vault>/<item>[/<section>]/<field>, query parameters allowed.
    if let Some(path) = v.strip_prefix("op://") {
        let path = path.split('?').next().unwrap_or("");
        let parts: Vec<&str> = path.split('/').collect();
        return (3..=4).contains(&parts.len()) && parts.iter().all(|p| !p.trim().is_empty());
    }
    // vals: ref+<scheme>://..., the scheme in lower case letters and digits.
    if let Some(rest) = v.strip_prefix("ref+") {
        return rest.split_once("://").is_some_and(|(scheme, path)| {
            !scheme.is_empty()
                && scheme
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
                && !path.is_empty()
        });
    }
    // A bootstrap tool's key placeholder: secret://<key>.
    if let Some(key) = v.strip_prefix("secret://") {
        return !key.is_empty()
            && key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-./".contains(&b));
    }
    // bank-vaults' webhook: vault:<path>#<key>[#<version>].
    if let Some(rest) = v.strip_prefix("vault:") {
        return rest
            .split_once('#')
            .is_some_and(|(path, key)| !path.is_empty() && !key.is_empty());
    }
    // argocd-vault-plugin: <path:<path>#<key>[#<version>]>.
    if let Some(rest) = v.strip_prefix("<path:") {
        return rest.ends_with('>') && rest.len() > 1;
    }
    // SOPS ciphertext of one value.
    v.starts_with("ENC[") && v.ends_with(']')
}

/// Whether a value holds a template expression: `{{ ... }}`, or `${...}` with a variable
/// name (Flux's postBuild substitution; an escaped `$${...}` is one too).
fn is_template(v: &str) -> bool {
    if let Some(open) = v.find("{{") {
        if v[open + 2..].contains("}}") {
            return true;
        }
    }
    let mut rest = v;
    while let Some(at) = rest.find("${") {
        let inner = &rest[at + 2..];
        if let Some(close) = inner.find('}') {
            let name = &inner[..close];
            let name = name
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .next()
                .unwrap_or("");
            if !name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit()) {
                return true;
            }
        }
        rest = inner;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_and_templates_are_no_values() {
        for reference in [
            "op://kubernetes/1password/OP_CONNECT_TOKEN",
            "op://Automation/1password connect/credentials",
            "op://vault/item/section/field?attribute=otp",
            "ref+vault://secret/data/app#/password",
            "ref+awssecrets://myteam/mykey",
            "vault:secret/data/accounts/aws#AWS_SECRET_ACCESS_KEY",
            "<path:secret/data/app#password>",
            "secret://op_connect_token",
            "secret://cluster/tunnel-id.json",
            "ENC[AES256_GCM,data:abc=,iv:def=,tag:ghi=,type:str]",
            "{{ .Values.password }}",
            "{{ op://vault/item/field }}",
            "user={{ index . \"user\" }}\npassword={{ index . \"password\" }}\n",
            "${DB_PASSWORD}",
            "postgres://app:${DB_PASSWORD:=x}@db:5432/app",
            "  op://kubernetes/cloudflare/TUNNEL_ID\n",
            "",
        ] {
            assert!(is_reference(reference), "{reference}");
        }
        for value in [
            "hunter2",
            "op://only/two",
            "op://a/b/c/d/e",
            "vault:",
            "vault:no-key",
            "ref+://x",
            "<path:>",
            "secret://",
            "secret://user:hunter2@db",
            "secret://key?token=hunter2",
            "${1}",
            "$HOME",
            "correct horse battery staple",
            "{{ unclosed",
        ] {
            assert!(!is_reference(value), "{value}");
        }
    }

    #[test]
    fn data_is_decoded_before_it_is_judged() {
        // "op://vault/item/field" and "hunter2" in base64.
        assert!(!holds_value(
            &Value::from("b3A6Ly92YXVsdC9pdGVtL2ZpZWxk"),
            true
        ));
        assert!(holds_value(&Value::from("aHVudGVyMg=="), true));
        assert!(holds_value(&Value::from("aHVudGVyMg"), true));
        // Not base64, or bytes that are not text: judged as written, so a reference left for
        // vals to resolve holds none, and anything else holds one.
        assert!(!holds_value(
            &Value::from("ref+op://Home-Lab/1password/OP_CONNECT_TOKEN"),
            true
        ));
        assert!(!holds_value(&Value::from("op://vault/item/field"), true));
        assert!(holds_value(&Value::from("hunter2!"), true));
        assert!(holds_value(&Value::from("/w=="), true));
        assert!(!holds_value(&Value::Null, true));
        assert!(holds_value(&Value::from(5432), false));
    }
}
