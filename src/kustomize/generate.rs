//! ConfigMap and Secret generators as kustomize makes them, data and name: the key-value
//! pairs (api `kv.loader.Load`: `envs` files, then `literals`, then `files`), the object
//! (`internal/generators.MakeConfigMap`/`MakeSecret`, kyaml `LoadMapIntoConfigMapData`,
//! `LoadMapIntoSecretData`), the options (`types.MergeGlobalOptionsIntoLocal`), `merge` and
//! `replace` into an object the build has (`resWrangler.appendReplaceOrMerge`), and the
//! content hash the name gets once the whole build is transformed (`hasher.Hasher.Hash`,
//! applied by `KustTarget.addHashesToNames` to the outermost kustomization's objects only).
//!
//! Held against kustomize by the differential test's `generators` fixture
//! (tests/fixtures/flux/generators): each object's name carries the hash of its kind, name and
//! data, so a name Flux's build agrees with is data it agrees with.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::error::BuildError;
use super::resolve::{resolve, Ref};
use crate::tree::FileTree;

/// What a generator entry does with an object of its id that the build has already
/// (`types.GenerationBehavior`; any other word is `Unspecified`, which acts as `create`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Behavior {
    Create,
    Merge,
    Replace,
}

/// An object a generator entry makes, before it meets the build.
#[derive(Debug)]
pub(super) struct Generated {
    pub value: Value,
    pub behavior: Behavior,
    /// Whether its name gets the content hash (no `disableNameSuffixHash`).
    pub hash: bool,
}

/// What a generator entry makes: its object, or nothing known when it reads a file from the
/// network (kustomize's loader fetches an `http(s)` file source).
#[derive(Debug)]
pub(super) enum Made {
    Object(Generated),
    Remote(String),
}

/// kustomize `types.GeneratorOptions`.
#[derive(Debug, Clone, Default)]
struct Options {
    labels: Option<Map<String, Value>>,
    annotations: Option<Map<String, Value>>,
    disable_hash: bool,
    immutable: bool,
}

impl Options {
    fn of(v: Option<&Value>) -> Option<Options> {
        let v = v.filter(|v| !v.is_null())?;
        let map = |k: &str| v.get(k).and_then(Value::as_object).cloned();
        let flag = |k: &str| v.get(k).and_then(Value::as_bool).unwrap_or(false);
        Some(Options {
            labels: map("labels"),
            annotations: map("annotations"),
            disable_hash: flag("disableNameSuffixHash"),
            immutable: flag("immutable"),
        })
    }

    /// `MergeGlobalOptionsIntoLocal`: the entry's own labels and annotations win over the
    /// kustomization's `generatorOptions`; either one's flags set it.
    fn merged(local: Option<Options>, global: Option<Options>) -> Option<Options> {
        let Some(global) = global else {
            return local;
        };
        let mut local = local.unwrap_or_default();
        for (mine, theirs) in [
            (&mut local.labels, &global.labels),
            (&mut local.annotations, &global.annotations),
        ] {
            match (mine.as_mut(), theirs) {
                (None, Some(t)) => *mine = Some(t.clone()),
                (Some(m), Some(t)) => {
                    for (k, v) in t {
                        m.entry(k.clone()).or_insert_with(|| v.clone());
                    }
                }
                _ => {}
            }
        }
        local.disable_hash |= global.disable_hash;
        local.immutable |= global.immutable;
        Some(local)
    }
}

/// The object generator entry `item` (of `configMapGenerator` when `kind` is `ConfigMap`,
/// of `secretGenerator` when `Secret`; named `what` in errors) makes, its files read from
/// `tree` relative to the kustomization's folder `dir`; `global` is the kustomization's
/// `generatorOptions`.
pub(super) fn make(
    tree: &FileTree,
    dir: &str,
    kind: &str,
    item: &Value,
    global: Option<&Value>,
    what: &str,
) -> Result<Made, BuildError> {
    let fail = |why: String| BuildError::Generator {
        what: what.to_string(),
        why,
    };
    let s = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or("");
    let strings = |k: &str| -> Vec<&str> {
        item.get(k)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    };
    let name = s("name");
    if name.is_empty() {
        // kustomize's words, for a Secret too.
        return Err(fail("a configmap must have a name".into()));
    }
    let read = |entry: &str| -> Result<Option<Vec<u8>>, BuildError> {
        match resolve(dir, entry) {
            Ref::Local(path) => match tree.bytes(&path) {
                Some(bytes) => Ok(Some(bytes.to_vec())),
                None => Err(match tree.unreadable(&path) {
                    Some(why) => fail(why.located(&tree.shown(&path))),
                    None => BuildError::GeneratorInputMissing {
                        what: what.to_string(),
                        entry: entry.to_string(),
                    },
                }),
            },
            Ref::Remote => Ok(None),
            Ref::Escapes => Err(BuildError::Escapes {
                file: what.to_string(),
                entry: entry.to_string(),
            }),
        }
    };
    let remote = |entry: &str| Made::Remote(format!("`{entry}` is fetched from the network"));
    // kustomize's order: env files (`envs`, then the older `env`), literals, files.
    let mut pairs: Vec<(String, Vec<u8>)> = Vec::new();
    let mut envs = strings("envs");
    if !s("env").is_empty() {
        envs.push(s("env"));
    }
    for entry in envs {
        let Some(bytes) = read(entry)? else {
            return Ok(remote(entry));
        };
        pairs.extend(env_pairs(&bytes).map_err(|e| fail(format!("`{entry}`: {e}")))?);
    }
    for literal in strings("literals") {
        let (k, v) = literal_pair(literal).map_err(fail)?;
        pairs.push((k, v.into_bytes()));
    }
    for source in strings("files") {
        let (key, path) = file_source(source).map_err(fail)?;
        let Some(bytes) = read(path)? else {
            return Ok(remote(path));
        };
        pairs.push((key.to_string(), bytes));
    }
    let mut data: Vec<(String, Vec<u8>)> = Vec::with_capacity(pairs.len());
    for (k, v) in pairs {
        if data.iter().any(|(known, _)| *known == k) {
            return Err(fail(format!(
                "configmap {name} illegally repeats the key `{k}`"
            )));
        }
        data.push((k, v));
    }
    data.sort_by(|a, b| a.0.cmp(&b.0));

    let mut meta = Map::new();
    meta.insert("name".into(), name.into());
    if !s("namespace").is_empty() {
        meta.insert("namespace".into(), s("namespace").into());
    }
    let mut object = Map::new();
    object.insert("apiVersion".into(), "v1".into());
    object.insert("kind".into(), kind.into());
    object.insert("metadata".into(), Value::Object(meta));
    if kind == "Secret" {
        let t = match s("type") {
            "" => "Opaque",
            t => t,
        };
        object.insert("type".into(), t.into());
        let encoded = data
            .into_iter()
            .map(|(k, v)| (k, Value::String(wrapped_base64(&v))))
            .collect();
        object.insert("data".into(), Value::Object(encoded));
    } else {
        load_config_map_data(&mut object, data);
    }
    let options = Options::merged(Options::of(item.get("options")), Options::of(global));
    if let Some(o) = &options {
        for (field, map) in [("labels", &o.labels), ("annotations", &o.annotations)] {
            let Some(map) = map.as_ref().filter(|m| !m.is_empty()) else {
                continue;
            };
            if let Some(Value::Object(meta)) = object.get_mut("metadata") {
                let mut sorted: Vec<_> = map.iter().collect();
                sorted.sort_by(|a, b| a.0.cmp(b.0));
                let set = meta
                    .entry(field)
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(set) = set {
                    for (k, v) in sorted {
                        set.insert(k.clone(), Value::String(scalar_text(v)));
                    }
                }
            }
        }
        if o.immutable {
            object.insert("immutable".into(), true.into());
        }
    }
    let behavior = match s("behavior") {
        "merge" => Behavior::Merge,
        "replace" => Behavior::Replace,
        _ => Behavior::Create,
    };
    Ok(Made::Object(Generated {
        value: Value::Object(object),
        behavior,
        hash: !options.is_some_and(|o| o.disable_hash),
    }))
}

/// A label or annotation value of `generatorOptions` as kustomize holds it
/// (`map[string]string`: the kustomization's types already refuse anything but text).
fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// kyaml `LoadMapIntoConfigMapData`: each pair, in key order, under `data` when its value is
/// UTF-8, else base64 under `binaryData`; a field is made by its first pair.
fn load_config_map_data(object: &mut Map<String, Value>, pairs: Vec<(String, Vec<u8>)>) {
    for (k, v) in pairs {
        let (field, text) = match String::from_utf8(v) {
            Ok(text) => ("data", text),
            Err(e) => ("binaryData", wrapped_base64(e.as_bytes())),
        };
        if let Value::Object(m) = object
            .entry(field)
            .or_insert_with(|| Value::Object(Map::new()))
        {
            m.insert(k, Value::String(text));
        }
    }
}

/// `merge` into `old`, an object of the build (`appendReplaceOrMerge` with
/// `BehaviorMerge`): `new` keeps its own fields, and its `data` and `binaryData` are the old
/// ones with its own over them (kyaml `SetDataMap`: a field without pairs is removed, and
/// pairs go back through `LoadMapIntoConfigMapData`).
pub(super) fn merge_data(new: &mut Value, old: &Value) {
    let Value::Object(object) = new else {
        return;
    };
    for field in ["data", "binaryData"] {
        let mut merged: Vec<(String, String)> = Vec::new();
        for side in [old.get(field), object.get(field)] {
            for (k, v) in side.and_then(Value::as_object).into_iter().flatten() {
                let v = scalar_text(v);
                match merged.iter_mut().find(|(known, _)| known == k) {
                    Some(slot) => slot.1 = v,
                    None => merged.push((k.clone(), v)),
                }
            }
        }
        object.remove(field);
        merged.sort_by(|a, b| a.0.cmp(&b.0));
        if field == "data" {
            load_config_map_data(
                object,
                merged
                    .into_iter()
                    .map(|(k, v)| (k, v.into_bytes()))
                    .collect(),
            );
        } else if !merged.is_empty() {
            let m = merged.into_iter().map(|(k, v)| (k, Value::String(v)));
            object.insert(field.into(), Value::Object(m.collect()));
        }
    }
}

/// The metadata `new` takes from `old` when it merges into or replaces it
/// (`CopyMergeMetaDataFieldsFrom`): labels and annotations merged (its own winning), and
/// the old object's name and namespace.
pub(super) fn copy_metadata(new: &mut Value, old: &Value) {
    let meta = |v: &Value, k: &str| v.get("metadata").and_then(|m| m.get(k)).cloned();
    let Some(Value::Object(m)) = new.get_mut("metadata") else {
        return;
    };
    for field in ["labels", "annotations"] {
        let mut merged = meta(old, field)
            .and_then(|v| v.as_object().cloned())
            .unwrap_or_default();
        if let Some(Value::Object(own)) = m.get(field) {
            merged.extend(own.clone());
        }
        if merged.is_empty() {
            m.remove(field);
        } else {
            m.insert(field.into(), Value::Object(merged));
        }
    }
    for field in ["name", "namespace"] {
        match meta(old, field).filter(|v| v.as_str().is_some_and(|s| !s.is_empty())) {
            Some(v) => {
                m.insert(field.into(), v);
            }
            None => {
                m.remove(field);
            }
        }
    }
}

/// The pairs of an env file (kustomize `kv.loader.keyValuesFromLines`): one a line, split at
/// its first `=` (no `=`: an empty value), leading white space and a first line's byte order
/// mark dropped; blank lines, `#` comments and lines with an empty key (`=x`) skipped. Lines end at `\n` with one `\r`
/// before it dropped (Go's `bufio.ScanLines`); a line that is not UTF-8 fails, and the file
/// ends early at a line of 64 KiB or more.
fn env_pairs(bytes: &[u8]) -> Result<Vec<(String, Vec<u8>)>, String> {
    /// Go's `bufio.MaxScanTokenSize`.
    const MAX_SCAN_TOKEN: usize = 64 * 1024;
    let mut out = Vec::new();
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    if bytes.is_empty() {
        return Ok(out);
    }
    for (n, line) in body.split(|b| *b == b'\n').enumerate() {
        // kustomize reads the lines with a bufio.Scanner whose error it never checks: at a
        // line longer than the scanner's buffer (64 KiB with its `\n`) the file ends.
        if line.len() >= MAX_SCAN_TOKEN {
            break;
        }
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Ok(mut line) = std::str::from_utf8(line) else {
            return Err(format!("line {} has invalid utf8 bytes", n + 1));
        };
        if n == 0 {
            line = line.strip_prefix('\u{feff}').unwrap_or(line);
        }
        let line = line.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (k, v) = line.split_once('=').unwrap_or((line, ""));
        // An empty key is read as a blank line is.
        if !k.is_empty() {
            out.push((k.to_string(), v.as_bytes().to_vec()));
        }
    }
    Ok(out)
}

/// A `literals` entry, `key=value` (kustomize `parseLiteralSource`): the value loses one
/// pair of matching quotes around it.
fn literal_pair(source: &str) -> Result<(String, String), String> {
    let invalid = || format!("invalid literal source {source}, expected key=value");
    let (k, v) = source.split_once('=').ok_or_else(invalid)?;
    if k.is_empty() {
        return Err(invalid());
    }
    let b = v.as_bytes();
    let unquoted = match b {
        [first, .., last] if first == last && (*first == b'"' || *first == b'\'') => {
            &v[1..v.len() - 1]
        }
        _ => v,
    };
    Ok((k.to_string(), unquoted.to_string()))
}

/// A `files` entry, `[key=]path` (kustomize `generators.ParseFileSource`): the key is the
/// path's last element when none is given.
fn file_source(source: &str) -> Result<(&str, &str), String> {
    match source.matches('=').count() {
        0 => Ok((go_path_base(source), source)),
        1 => match source.split_once('=') {
            Some(("", path)) => Err(format!(
                "missing key name for file path {path:?} in source {source:?}"
            )),
            Some((key, "")) => Err(format!(
                "missing file path for key name {key:?} in source {source:?}"
            )),
            Some((key, path)) => Ok((key, path)),
            None => Err(format!("invalid file source {source:?}")),
        },
        _ => Err(format!(
            "source {source:?} key name or file path contains '='"
        )),
    }
}

/// Go's `path.Base`: the last element, trailing slashes dropped.
fn go_path_base(p: &str) -> &str {
    if p.is_empty() {
        return ".";
    }
    let trimmed = p.trim_end_matches('/');
    if trimmed.is_empty() {
        return "/";
    }
    trimmed.rsplit('/').next().unwrap_or(trimmed)
}

/// kyaml `encodeBase64`: standard base64, broken after every 70 characters (each line, the
/// last too, ending in `\n`) when it is longer than one line.
fn wrapped_base64(bytes: &[u8]) -> String {
    const LINE: usize = 70;
    let encoded = crate::base64::encode(bytes);
    if encoded.len() / LINE + 1 == 1 {
        return encoded;
    }
    let mut out = String::with_capacity(encoded.len() + encoded.len() / LINE + 1);
    for chunk in encoded.as_bytes().chunks(LINE) {
        out.push_str(std::str::from_utf8(chunk).unwrap_or_default());
        out.push('\n');
    }
    out
}

/// The name suffix kustomize gives a generated object (`hasher.Hasher.Hash`): the SHA-256 of
/// the JSON of its kind and data (for a Secret, also its type and `stringData`) and an empty
/// name, its first ten hex digits with `0 1 3 a e` spelled `g h k m t`.
pub(super) fn content_hash(value: &Value) -> String {
    let field = |k: &str| match value.get(k) {
        None => Value::String(String::new()),
        Some(v @ Value::Object(_)) => v.clone(),
        Some(Value::String(s)) => Value::String(s.clone()),
        Some(Value::Null) => Value::String(String::new()),
        Some(other) => Value::String(other.to_string()),
    };
    // kustomize looks the name up as one field named `metadata/name` (`yaml.Lookup` takes
    // path elements, not a path), which no object has: the name is always "".
    let name = "";
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
    let mut m: Vec<(&str, Value)> = vec![
        ("data", field("data")),
        ("kind", Value::String(kind.into())),
        ("name", Value::String(name.into())),
    ];
    let extra = if kind == "Secret" {
        m.push(("type", field("type")));
        "stringData"
    } else {
        "binaryData"
    };
    if let Some(v @ Value::Object(_)) = value.get(extra) {
        m.push((extra, v.clone()));
    }
    let encoded = if kind == "ConfigMap" || kind == "Secret" {
        let mut object = Map::new();
        for (k, v) in m {
            object.insert(k.into(), v);
        }
        go_json(&Value::Object(object))
    } else {
        go_json(value)
    };
    let digest = Sha256::digest(encoded.as_bytes());
    digest
        .iter()
        .flat_map(|b| [b >> 4, b & 15])
        .take(10)
        .map(|n| match n {
            0 => 'g',
            1 => 'h',
            3 => 'k',
            10 => 'm',
            14 => 't',
            n => char::from_digit(u32::from(n), 16).unwrap_or('0'),
        })
        .collect()
}

/// JSON as Go's `encoding/json` writes a `map[string]interface{}`: keys sorted, no spaces,
/// and `<`, `>`, `&`, U+2028 and U+2029 escaped as `\u003c`... (its HTML-safe default).
fn go_json(v: &Value) -> String {
    let mut out = String::new();
    write_go_json(v, &mut out);
    out
}

fn write_go_json(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_string(k, out);
                out.push(':');
                write_go_json(&m[k], out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, e) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json(e, out);
            }
            out.push(']');
        }
        Value::String(s) => write_go_string(s, out),
        other => out.push_str(&other.to_string()),
    }
}

fn write_go_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", u32::from(c)));
            }
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    /// kustomize's own cases (api `hasher/hasher_test.go`, `TestConfigMapHash` and
    /// `TestSecretHash`), every one.
    #[test]
    fn hashes_as_kustomize_hashes() {
        let cases = [
            (r#"{"kind":"ConfigMap"}"#, "6ct58987ht"),
            (r#"{"kind":"ConfigMap","data":{"one":""}}"#, "9g67k2htb6"),
            (
                r#"{"kind":"ConfigMap","data":{"two":2,"one":"","three":3}}"#,
                "7757f9kkct",
            ),
            (
                r#"{"kind":"ConfigMap","binaryData":{"one":""}}"#,
                "6mtk2m274t",
            ),
            (
                r#"{"kind":"ConfigMap","binaryData":{"two":2,"one":"","three":3}}"#,
                "9th7kc28dg",
            ),
            (
                r#"{"kind":"ConfigMap","data":{"one":""},"binaryData":{"two":""}}"#,
                "698h7c7t9m",
            ),
            (r#"{"kind":"Secret","type":"my-type"}"#, "5gmgkf8578"),
            (
                r#"{"kind":"Secret","type":"my-type","data":{"one":""}}"#,
                "74bd68bm66",
            ),
            (
                r#"{"kind":"Secret","type":"my-type","data":{"two":2,"one":"","three":3}}"#,
                "4gf75c7476",
            ),
            (
                r#"{"kind":"Secret","type":"my-type","data":{"one":""},"stringData":{"two":2}}"#,
                "c4h4264gdb",
            ),
        ];
        for (object, want) in cases {
            let v: Value = serde_json::from_str(object).unwrap();
            assert_eq!(content_hash(&v), want, "{object}");
        }
    }

    #[test]
    fn env_files_are_read_as_kustomize_reads_them() {
        let pairs = env_pairs(b"\xef\xbb\xbfA=1\r\n  # c\n\n B = x=y \nC\n").unwrap();
        let text: Vec<(String, String)> = pairs
            .into_iter()
            .map(|(k, v)| (k, String::from_utf8(v).unwrap()))
            .collect();
        assert_eq!(
            text,
            [("A", "1"), ("B ", " x=y "), ("C", "")].map(|(k, v)| (k.to_string(), v.to_string()))
        );
        assert!(env_pairs(b"A=\xff\n").is_err());
    }

    #[test]
    fn long_base64_is_broken_into_lines() {
        assert_eq!(wrapped_base64(b"abc"), "YWJj");
        let long = wrapped_base64(&[b'x'; 60]);
        assert_eq!(long.lines().map(str::len).collect::<Vec<_>>(), [70, 10]);
        assert!(long.ends_with('\n'));
    }
}
