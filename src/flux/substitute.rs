//! Flux's `postBuild` variable substitution: the variables a Flux Kustomization sets and
//! what `${VAR}` becomes in the objects it builds.

use std::collections::BTreeMap;

use serde_json::Value;

/// The inline `postBuild.substitute` variables of a Flux Kustomization.
pub fn substitutions(owner: &Value) -> BTreeMap<String, String> {
    crate::flux::string_map_at(owner, "/spec/postBuild/substitute")
}

/// Flux's `${VAR}`, `${VAR:=default}` and `${VAR:-default}` in an object's name and namespace.
pub fn substitute_identity(v: &mut Value, vars: &BTreeMap<String, String>) {
    let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    for key in ["name", "namespace"] {
        if let Some(Value::String(s)) = meta.get_mut(key) {
            if s.contains("${") {
                *s = substitute(s, vars);
            }
        }
    }
}

pub fn substitute(s: &str, vars: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let Some(end) = rest[start..].find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let inner = &rest[start + 2..start + end];
        let (name, default) = match inner.split_once(":=").or_else(|| inner.split_once(":-")) {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        match (vars.get(name), default) {
            (Some(v), _) => out.push_str(v),
            (None, Some(d)) => out.push_str(d),
            (None, None) => out.push_str(&rest[start..=start + end]),
        }
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitutes_inline_variables_and_defaults() {
        let vars = BTreeMap::from([("APP".to_string(), "web".to_string())]);
        assert_eq!(
            substitute("${APP}-${NS:=media}-${X}", &vars),
            "web-media-${X}"
        );
    }
}
