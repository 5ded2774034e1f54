//! A HelmRelease's values as helm-controller composes them (fluxcd/pkg `chartutil`,
//! `ChartValuesFromReferences`): each `valuesFrom` reference in order, read from the
//! ConfigMap or Secret of that name in the HelmRelease's own namespace (`valuesKey`, default
//! `values.yaml`), merged as a whole document or, with `targetPath`, set at that path as
//! Helm's `--set` parser reads it (`ReplacePathValue`); `spec.values` merged last, over them
//! all (`MergeMaps`: mappings merge key by key, anything else replaces). An `optional`
//! reference that is missing, or lacks its key, is skipped.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::error::{PathError, ReadError, ValuesError};
use crate::flux::substitute::Source;
use crate::kustomize::object::ObjectId;
use crate::pointer::Pointer;
use crate::redact::Secrets;

/// The values composed, and the strings that came from Secrets (masked, in every form a
/// chart can give them, wherever the rendered objects and helm's errors are printed).
#[derive(Debug, Default)]
pub struct Composed {
    pub values: Value,
    pub secret_strings: Secrets,
}

/// The `valuesFrom` entries of HelmRelease `hr` (`id`), each with the object it names: a
/// ConfigMap or Secret (by its `kind`) in the release's own namespace and cluster.
fn references<'a>(
    hr: &'a Value,
    id: &'a ObjectId,
) -> impl Iterator<Item = (&'a Value, ObjectId)> + 'a {
    let refs = hr
        .at_pointer("/spec/valuesFrom")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    refs.iter().map(|r| {
        let text = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
        let source = ObjectId {
            group: String::new(),
            kind: text("kind").into(),
            namespace: id.namespace.clone(),
            name: text("name").into(),
            cluster: id.cluster.clone(),
        };
        (r, source)
    })
}

/// What `compose` reads of `sources` for `hr` (`id`): with the same object, it composes the
/// same values from the same reads.
pub fn reads<'s>(
    hr: &Value,
    id: &ObjectId,
    sources: &'s BTreeMap<ObjectId, Source>,
) -> Vec<Option<&'s Source>> {
    references(hr, id).map(|(_, s)| sources.get(&s)).collect()
}

/// The values of HelmRelease `hr` (`id`); `sources` are the ConfigMaps and Secrets of the
/// build. helm-controller reads `valuesFrom` in the HelmRelease's own namespace and cluster.
/// `Err` says why they cannot be known.
pub fn compose(
    hr: &Value,
    id: &ObjectId,
    sources: &BTreeMap<ObjectId, Source>,
) -> Result<Composed, ValuesError> {
    let mut out = Composed {
        values: Value::Object(Map::new()),
        ..Composed::default()
    };
    let mut secret_strings = Vec::new();
    for (r, source) in references(hr, id) {
        let text = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
        let (kind, name) = (text("kind"), text("name"));
        let key = match text("valuesKey") {
            "" => "values.yaml",
            k => k,
        };
        let optional = r.get("optional").and_then(Value::as_bool) == Some(true);
        if !matches!(kind, "ConfigMap" | "Secret") {
            return Err(ValuesError::UnreadKind {
                kind: kind.into(),
                name: name.into(),
            });
        }
        let namespace = id.namespace.as_str();
        let data = match sources.get(&source) {
            None if optional => continue,
            None => {
                return Err(ValuesError::Missing {
                    kind: kind.into(),
                    namespace: namespace.into(),
                    name: name.into(),
                })
            }
            Some(Source::Unknown { why, .. }) => {
                return Err(ValuesError::Unreadable {
                    kind: kind.into(),
                    namespace: namespace.into(),
                    name: name.into(),
                    why: why.clone(),
                })
            }
            Some(Source::Data(data)) => data,
        };
        let Some(raw) = data.get(key) else {
            if optional {
                continue;
            }
            return Err(ValuesError::NoKey {
                kind: kind.into(),
                namespace: namespace.into(),
                name: name.into(),
                key: key.into(),
            });
        };
        let secret = kind == "Secret";
        match text("targetPath") {
            "" => {
                let doc = read_values(raw).map_err(|e| {
                    // The reader's message may quote the Secret's text.
                    let e = e.to_string();
                    let why = if secret {
                        Secrets::new(vec![raw.clone()]).mask(&e).into_owned()
                    } else {
                        e
                    };
                    ValuesError::NotMapping {
                        kind: kind.into(),
                        namespace: namespace.into(),
                        name: name.into(),
                        key: key.into(),
                        why,
                    }
                })?;
                if secret {
                    strings(&doc, &mut secret_strings);
                }
                merge(&mut out.values, doc);
            }
            path => {
                if secret {
                    secret_strings.push(raw.trim().to_string());
                }
                set_path(&mut out.values, path, raw).map_err(|error| ValuesError::TargetPath {
                    kind: kind.into(),
                    name: name.into(),
                    path: path.into(),
                    error,
                })?;
            }
        }
    }
    if let Some(values) = hr.at_pointer("/spec/values") {
        if values.is_object() {
            merge(&mut out.values, values.clone());
        }
    }
    // Diagnostics mask them too: a rendered object's name may hold one.
    for s in &secret_strings {
        crate::redact::remember(s, false);
    }
    out.secret_strings = Secrets::new(secret_strings);
    Ok(out)
}

/// `values` as JSON that helm reads (`--values -`, through a YAML 1.1 reader) as the same
/// values: the characters that reader takes for line breaks (NEL, U+2028, U+2029), folding a
/// string at them, and those it refuses (DEL and the C1 controls, U+FFFE, U+FFFF) are
/// written as `\uXXXX` escapes, as helm-controller, which hands the values over as they are,
/// never changes them.
pub fn for_helm(values: &Value) -> String {
    let json = serde_json::to_string(values).unwrap_or_default();
    let unread = |c: char| {
        matches!(
            c,
            '\u{7f}'..='\u{9f}' | '\u{2028}' | '\u{2029}' | '\u{fffe}' | '\u{ffff}'
        )
    };
    if !json.contains(unread) {
        return json;
    }
    // Outside strings JSON is ASCII: every such character is in a string.
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if unread(c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// A values document: empty is an empty mapping (Helm's `ReadValues`).
pub(super) fn read_values(text: &str) -> Result<Value, ReadError> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    let text = std::sync::Arc::new(text.to_string());
    let mut docs =
        crate::yaml::parse_all("values", &text).map_err(|e| ReadError::Yaml(Box::new(e)))?;
    match docs.len() {
        0 => Ok(Value::Object(Map::new())),
        _ => match docs.swap_remove(0) {
            v @ Value::Object(_) => Ok(v),
            Value::Null => Ok(Value::Object(Map::new())),
            _ => Err(ReadError::NotMapping),
        },
    }
}

/// `MergeMaps`: `over` merged into `base`, mapping by mapping.
pub fn merge(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(&k) {
                    Some(slot) if slot.is_object() && v.is_object() => merge(slot, v),
                    _ => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (b, o) => *b = o,
    }
}

/// Every string leaf of `v`.
fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|i| strings(i, out)),
        Value::Object(m) => m.values().for_each(|i| strings(i, out)),
        _ => {}
    }
}

/// Sets `value` at `path` as `helm --set path=value` does (`strvals.ParseInto`): dots part
/// the keys (`\.` is a dot in a key), `name[N]` indexes a list, and the value is typed as
/// Helm types it (`true`/`false`/`null` in any case, integers without a leading zero, else a
/// string); a value in quotes is
/// set as the string inside them (`ParseIntoString`). A comma would start another
/// assignment in Helm's parser: such a value is refused rather than guessed.
pub fn set_path(values: &mut Value, path: &str, raw: &str) -> Result<(), PathError> {
    let quoted = (raw.starts_with('"') && raw.ends_with('"') && raw.len() >= 2)
        || (raw.starts_with('\'') && raw.ends_with('\'') && raw.len() >= 2);
    let value = if quoted {
        Value::String(raw.trim_matches(['"', '\'']).to_string())
    } else {
        if raw.contains(',') {
            return Err(PathError::Comma);
        }
        typed(raw)
    };
    let mut keys: Vec<Key> = Vec::new();
    let mut cur = String::new();
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'.') => {
                cur.push('.');
                chars.next();
            }
            '.' => keys.push(Key::Name(std::mem::take(&mut cur))),
            '[' => {
                let mut n = String::new();
                for d in chars.by_ref() {
                    if d == ']' {
                        break;
                    }
                    n.push(d);
                }
                let i: usize = n.parse().map_err(|_| PathError::NotIndex(n.clone()))?;
                if i > 65_536 {
                    return Err(PathError::IndexTooLarge(i));
                }
                if !cur.is_empty() {
                    keys.push(Key::Name(std::mem::take(&mut cur)));
                }
                keys.push(Key::Index(i));
                if chars.peek() == Some(&'.') {
                    chars.next();
                }
            }
            _ => cur.push(c),
        }
    }
    if !cur.is_empty() {
        keys.push(Key::Name(cur));
    }
    if keys
        .iter()
        .any(|k| matches!(k, Key::Name(n) if n.is_empty()))
        || keys.is_empty()
    {
        return Err(PathError::EmptyKey);
    }
    let mut at = values;
    for k in &keys {
        at = match k {
            Key::Name(n) => {
                if !at.is_object() {
                    *at = Value::Object(Map::new());
                }
                let Value::Object(m) = at else {
                    return Err(PathError::Unfollowable);
                };
                m.entry(n.clone()).or_insert(Value::Null)
            }
            Key::Index(i) => {
                if !at.is_array() {
                    *at = Value::Array(Vec::new());
                }
                let Value::Array(a) = at else {
                    return Err(PathError::Unfollowable);
                };
                if a.len() <= *i {
                    a.resize(i + 1, Value::Null);
                }
                &mut a[*i]
            }
        };
    }
    *at = value;
    Ok(())
}

enum Key {
    Name(String),
    Index(usize),
}

/// A `--set` value as Helm types it (`strvals.typedVal`).
fn typed(raw: &str) -> Value {
    match raw.to_ascii_lowercase().as_str() {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        "null" => Value::Null,
        _ => match raw.parse::<i64>() {
            // Helm keeps a leading zero as a string (`"0123"`), as it would lose it.
            Ok(n) if !(raw.len() > 1 && raw.starts_with('0')) => Value::from(n),
            _ => Value::String(raw.to_string()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn source(pairs: &[(&str, &str)]) -> Source {
        Source::Data(std::sync::Arc::new(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        ))
    }

    fn id(kind: &str, name: &str) -> ObjectId {
        ObjectId {
            group: String::new(),
            kind: kind.into(),
            namespace: "apps".into(),
            name: name.into(),
            cluster: None,
        }
    }

    /// What helm reads as a line break or refuses is escaped; the JSON means what it meant.
    #[test]
    fn values_reach_helm_as_they_are() {
        let values = json!({"a": "x\u{2028} y\u{85}z\u{7f}\u{ffff}é<"});
        let text = for_helm(&values);
        assert_eq!(text, r#"{"a":"x\u2028 y\u0085z\u007f\uffffé<"}"#);
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), values);
        assert_eq!(for_helm(&json!({"a": 1})), r#"{"a":1}"#);
    }

    /// References merge in order, a targetPath sets one value, spec.values wins last.
    #[test]
    fn values_compose_as_helm_controller_composes_them() {
        let sources = BTreeMap::from([
            (
                id("ConfigMap", "base"),
                source(&[("values.yaml", "a: {b: 1, c: 2}\nlist: [1, 2]\n")]),
            ),
            (id("Secret", "pw"), source(&[("password", "hunter22")])),
        ]);
        let hr = json!({"spec": {
            "valuesFrom": [
                {"kind": "ConfigMap", "name": "base"},
                {"kind": "Secret", "name": "pw", "valuesKey": "password", "targetPath": "auth.password"},
                {"kind": "ConfigMap", "name": "missing", "optional": true},
            ],
            "values": {"a": {"c": 3}, "list": [9]},
        }});
        let got = compose(&hr, &id("HelmRelease", "app"), &sources).unwrap();
        assert_eq!(
            got.values,
            json!({"a": {"b": 1, "c": 3}, "list": [9], "auth": {"password": "hunter22"}})
        );
        assert_eq!(got.secret_strings.values(), ["hunter22".to_string()]);
        let missing = json!({"spec": {"valuesFrom": [{"kind": "ConfigMap", "name": "missing"}]}});
        assert!(compose(&missing, &id("HelmRelease", "app"), &sources)
            .unwrap_err()
            .to_string()
            .contains("nothing in the build applies"));
    }

    #[test]
    fn a_target_path_is_typed_as_helm_types_set_values() {
        let mut v = json!({});
        set_path(&mut v, "a.b", "true").unwrap();
        set_path(&mut v, "a.n", "42").unwrap();
        set_path(&mut v, "a.z", "0123").unwrap();
        set_path(&mut v, "a.s", "\"42\"").unwrap();
        set_path(&mut v, "list[1].x", "y").unwrap();
        set_path(&mut v, "dotted\\.key", "v").unwrap();
        assert_eq!(
            v,
            json!({"a": {"b": true, "n": 42, "z": "0123", "s": "42"}, "list": [null, {"x": "y"}], "dotted.key": "v"})
        );
        assert!(set_path(&mut v, "a", "x,y").is_err());
    }
}
