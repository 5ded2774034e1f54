//! The readers: one document into a type, a manifest file's documents, a kustomization and a
//! patch, each as the program that reads them upstream reads them (kyaml, sigs.k8s.io/yaml).
//! Plain block YAML goes through the fast plain reader, everything else through serde-saphyr.

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::explain::located;
use super::Text;
use crate::error::SourceError;
use crate::plain;

/// Parses one YAML document into `T`.
pub fn parse<T: DeserializeOwned>(path: &str, text: &Text) -> Result<T, SourceError> {
    serde_saphyr::from_str::<T>(text).map_err(|e| located(path, text, e))
}

/// At most this many problems are reported of one file.
const MAX_PROBLEMS_PER_FILE: usize = 32;

/// `parse`, going on past unknown fields so that one run reports each of them: serde stops
/// at the first, so each unknown block-style entry is blanked out (offsets kept, so every
/// location stays that of the file) and the file read again, until it reads or fails
/// otherwise. The first problem of another kind ends the list (a wrong type, a missing
/// field), as does an unknown key written inline (`{a: 1, b: 2}`).
pub fn parse_reporting_all<T: DeserializeOwned>(
    path: &str,
    text: &Text,
) -> Result<T, Vec<SourceError>> {
    let first = match parse::<T>(path, text) {
        Ok(v) => return Ok(v),
        Err(e) => e,
    };
    let mut errors = vec![first];
    let mut blanked = text.as_str().to_owned();
    while errors.len() < MAX_PROBLEMS_PER_FILE {
        let last = &errors[errors.len() - 1];
        let Some((start, _)) = last
            .span
            .filter(|_| last.message.starts_with("unknown field"))
        else {
            break;
        };
        let Some(end) = block_entry_end(&blanked, start) else {
            break;
        };
        // Spaces in place of the entry, its line breaks kept.
        let entry: String = blanked[start..end]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        blanked.replace_range(start..end, &entry);
        let again: Text = Arc::new(blanked.clone());
        match parse::<T>(path, &again) {
            Ok(_) => break,
            Err(e) => {
                if e.span.is_some_and(|(s, _)| s == start) {
                    break;
                }
                let mut located = SourceError::new(path, e.message);
                if let Some(span) = e.span {
                    located = located.at(text, span);
                }
                if let Some(help) = e.help {
                    located = located.help(help);
                }
                errors.push(located);
            }
        }
    }
    Err(errors)
}

/// The end of the block-mapping entry whose key starts at `start`: its line, and every line
/// after it indented deeper (or a `- ` item at the key's own indentation, as YAML allows
/// under a key), blank lines and comments included. None when the key is not the first
/// thing on its line.
fn block_entry_end(text: &str, start: usize) -> Option<usize> {
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let indent = &text[line_start..start];
    if !indent.bytes().all(|b| b == b' ') {
        return None;
    }
    let column = indent.len();
    let mut end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    while end < text.len() {
        let next_start = end + 1;
        let next_end = text[next_start..]
            .find('\n')
            .map_or(text.len(), |i| next_start + i);
        let line = &text[next_start..next_end];
        let body = line.trim_start_matches(' ');
        let depth = line.len() - body.len();
        let inside = body.is_empty()
            || depth > column
            || (depth == column && (body.starts_with("- ") || body == "-"));
        if !inside {
            break;
        }
        end = next_end;
    }
    Some(end)
}

/// Parses a single-document file into an untyped value: plain block YAML through the fast
/// reader, everything else (and every file with a problem) through serde-saphyr.
pub fn parse_value(path: &str, text: &Text) -> Result<Value, SourceError> {
    match plain::parse_value(text) {
        Some(doc) => Ok(doc),
        None => parse(path, text),
    }
}

/// How kustomize reads a manifest: kyaml decodes it with go-yaml v3, whose untyped values
/// follow YAML 1.2's core schema for booleans (`true`, `True`, `TRUE` and the three `false`
/// only: `y`, `no`, `on`, `off` are strings, so `name: y` names an object `y`) and Go's
/// `strconv.ParseInt(s, 0, 64)` for integers (`012` is octal 10). `kubectl kustomize` on
/// `data: {a: y, b: no, c: on, i: True}` prints `a: "y"`, `b: "no"`, `c: "on"`, `i: true`.
pub(crate) fn manifest_options() -> serde_saphyr::Options {
    let mut o = yaml_1_1_options();
    o.strict_booleans = true;
    o
}

/// serde-saphyr's default budget without its ratio of aliases to anchors: a Prometheus rule
/// file that names one anchored scalar in 200 rules is an ordinary manifest, and go-yaml v3
/// (`decode.go`, `allowedAliasRatio`) refuses aliasing only past 99% of the nodes decoded.
/// What aliases may expand to stays bounded by the events, nodes and replays counted.
fn budget() -> serde_saphyr::Budget {
    let mut b = serde_saphyr::Budget::default();
    b.enforce_alias_anchor_ratio = false;
    b
}

/// Parses every document of a multi-document manifest file into untyped values as kustomize
/// reads them (`manifest_options`; empty documents are left out).
pub fn parse_all(path: &str, text: &Text) -> Result<Vec<Value>, SourceError> {
    // Manifests in plain block style (most of them) are read by the plain reader; it declines
    // everything else, and every file with a problem, to serde-saphyr.
    let docs = match plain::parse_all(text) {
        Some(docs) => docs,
        None => {
            let read =
                |t: &str| serde_saphyr::from_multiple_with_options::<Value>(t, manifest_options());
            let docs: Vec<Value> = match read(text) {
                Ok(docs) => docs,
                // go-yaml reads `*app:` as the alias `app` and a colon; YAML 1.2 (and
                // serde-saphyr) as an alias named `app:`. Read as kustomize reads it.
                Err(e) => match go_yaml_names(text) {
                    Some(spaced) => read(&spaced).map_err(|_| located(path, text, e))?,
                    None => return Err(located(path, text, e)),
                },
            };
            docs.into_iter().filter(|d| !d.is_null()).collect()
        }
    };
    // A Secret's values are masked wherever this run prints them (a file or object name).
    crate::redact::remember_documents(&docs);
    Ok(docs)
}

/// `text` with a space before each colon that ends an anchor or alias name as go-yaml v3
/// reads names (`yaml_parser_scan_anchor`: letters, digits, `_` and `-` only), where YAML
/// 1.2 reads the colon as part of the name: `*app: x` is the key named by alias `app` to
/// kustomize. `None` when there is none. A colon must be followed by a blank or the line's
/// end, as a key's is.
fn go_yaml_names(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len() + 8);
    let mut last = 0;
    let mut i = 0;
    while i < b.len() {
        let starts = matches!(b[i], b'*' | b'&')
            && (i == 0 || matches!(b[i - 1], b' ' | b'\t' | b'\n' | b'[' | b'{' | b','));
        if !starts {
            i += 1;
            continue;
        }
        let name = b[i + 1..]
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-'))
            .count();
        let colon = i + 1 + name;
        let keyish = name > 0
            && b.get(colon) == Some(&b':')
            && b.get(colon + 1)
                .is_none_or(|c| matches!(c, b' ' | b'\t' | b'\r' | b'\n'));
        if keyish {
            out.push_str(&text[last..colon]);
            out.push(' ');
            last = colon;
        }
        i = colon.max(i + 1);
    }
    (last > 0).then(|| {
        out.push_str(&text[last..]);
        out
    })
}

/// The documents of a patch as kustomize reads them, `null` documents included: a
/// strategic-merge patch as a manifest (kyaml, `manifest_options`), a JSON 6902 patch (a
/// list of operations) through sigs.k8s.io/yaml, with YAML 1.1's booleans (`kubectl
/// kustomize` on `{op: add, path: /metadata/namespace, value: no}` sets `namespace: false`).
pub fn patch_documents(text: &str) -> Result<Vec<Value>, serde_saphyr::Error> {
    let docs: Vec<Value> = serde_saphyr::from_multiple_with_options(text, manifest_options())?;
    if !docs.iter().any(Value::is_array) {
        return Ok(docs);
    }
    let loose: Vec<Value> = serde_saphyr::from_multiple_with_options(text, yaml_1_1_options())?;
    Ok(docs
        .into_iter()
        .zip(loose.iter().chain(std::iter::repeat(&Value::Null)))
        .map(|(doc, loose)| {
            if doc.is_array() {
                yaml_1_1(doc, loose)
            } else {
                doc
            }
        })
        .collect())
}

/// serde-saphyr's YAML 1.1 reading: every 1.1 boolean spelling, whatever its case.
fn yaml_1_1_options() -> serde_saphyr::Options {
    let mut o = serde_saphyr::Options::default();
    o.legacy_octal_numbers = true;
    o.budget = Some(budget());
    o
}

/// go-yaml v2's booleans (`resolve.go`), the YAML 1.1 words in exactly these spellings.
const YAML_1_1_BOOLS: [(&str, bool); 22] = [
    ("y", true),
    ("Y", true),
    ("yes", true),
    ("Yes", true),
    ("YES", true),
    ("on", true),
    ("On", true),
    ("ON", true),
    ("true", true),
    ("True", true),
    ("TRUE", true),
    ("n", false),
    ("N", false),
    ("no", false),
    ("No", false),
    ("NO", false),
    ("off", false),
    ("Off", false),
    ("OFF", false),
    ("false", false),
    ("False", false),
    ("FALSE", false),
];

/// Parses a kustomization file as kustomize reads it: `types.Kustomization.Unmarshal` goes
/// through sigs.k8s.io/yaml, which converts the file to JSON with go-yaml v2 (YAML 1.1), so
/// `namespace: no` is the boolean false (kustomize then fails: "json: cannot unmarshal bool
/// into Go struct field Kustomization.namespace of type string"), while a mixed spelling
/// such as `yEs` stays a string. An empty file is `null`.
pub fn parse_kustomization(path: &str, text: &Text) -> Result<Value, SourceError> {
    if let Some(doc) = plain::parse_value(text) {
        return Ok(doc);
    }
    // The plain scalars that YAML 1.1 reads as booleans are where a reading with every
    // YAML 1.1 spelling (serde-saphyr's, which ignores case) and one with YAML 1.2's differ;
    // there the text decides, through go-yaml v2's list.
    let strict: Value = serde_saphyr::from_str_with_options(text, manifest_options())
        .map_err(|e| located(path, text, e))?;
    let loose: Value = serde_saphyr::from_str_with_options(text, yaml_1_1_options())
        .map_err(|e| located(path, text, e))?;
    Ok(yaml_1_1(strict, &loose))
}

/// `strict` with each string that `loose` reads as a boolean resolved by go-yaml v2's list.
fn yaml_1_1(strict: Value, loose: &Value) -> Value {
    match (strict, loose) {
        (Value::String(s), Value::Bool(_)) => YAML_1_1_BOOLS
            .iter()
            .find(|(w, _)| *w == s)
            .map_or(Value::String(s), |(_, b)| Value::Bool(*b)),
        (Value::Array(items), Value::Array(other)) => Value::Array(
            items
                .into_iter()
                .zip(other.iter().chain(std::iter::repeat(&Value::Null)))
                .map(|(a, b)| yaml_1_1(a, b))
                .collect(),
        ),
        (Value::Object(map), Value::Object(other)) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let o = other.get(&k).unwrap_or(&Value::Null);
                    let v = yaml_1_1(v, o);
                    (k, v)
                })
                .collect(),
        ),
        (v, _) => v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An alias as a mapping key (`*app:`, the app-template layout that names a controller
    /// after the release), as `kubectl kustomize` (go-yaml v3) reads it: the key is the
    /// anchored value. YAML 1.2 would read an alias named `app:` and fail.
    #[test]
    fn an_alias_followed_by_a_colon_is_a_key_as_go_yaml_reads_it() {
        let text: Text = std::sync::Arc::new(
            "metadata:\n  name: &app web\nspec:\n  values:\n    controllers:\n      *app:\n        replicas: 1\n    note: \"*app: in a string\"\n".to_string(),
        );
        let docs = parse_all("hr.yaml", &text).unwrap();
        assert_eq!(
            docs[0]["spec"]["values"]["controllers"]["web"]["replicas"],
            1
        );
        assert_eq!(docs[0]["spec"]["values"]["note"], "*app: in a string");
        assert_eq!(go_yaml_names("a: *b\n"), None);
    }
    use serde_json::json;

    /// One anchored scalar named by 300 rules (a Prometheus rule file's shape) is read, as
    /// go-yaml v3 reads it (`allowedAliasRatio`: 300 aliases of some 1,200 nodes decoded is
    /// far below 99%); serde-saphyr's default ratio (ten aliases an anchor) refused it.
    #[test]
    fn many_aliases_of_one_anchor_are_read() {
        let mut text = String::from("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: rules}\ndata:\n  rules:\n    - {record: &price price_usd, expr: '1'}\n");
        for i in 0..300 {
            text.push_str(&format!("    - {{record: *price, expr: '{i}'}}\n"));
        }
        let docs = parse_all("rules.yaml", &Text::new(text)).unwrap();
        let rules = docs[0]["data"]["rules"].as_array().unwrap();
        assert_eq!(rules.len(), 301);
        assert_eq!(rules[300]["record"], "price_usd");
    }

    /// What `kubectl kustomize` (v5.5, kyaml on go-yaml v3) prints for this manifest:
    /// `name: "y"`, `namespace: "no"`, every YAML 1.1 word a string, `True`/`FALSE` booleans,
    /// `012` the number 10, `tRUE` a string.
    #[test]
    fn reads_manifests_as_kustomize_does() {
        let text = Text::new(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\n  namespace: no\n  labels: {a: on, b: yes, c: off, d: n, f: NO, g: Yes}\ndata:\n  a: y\n  g: Y\n  h: ON\n  k: Off\n  i: True\n  j: FALSE\n  o: 012\n  t: tRUE\n"
                .to_string(),
        );
        let docs = parse_all("cm.yaml", &text).unwrap();
        assert_eq!(
            docs,
            [serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "y", "namespace": "no",
                    "labels": {"a": "on", "b": "yes", "c": "off", "d": "n", "f": "NO", "g": "Yes"}},
                "data": {"a": "y", "g": "Y", "h": "ON", "k": "Off", "i": true, "j": false,
                    "o": 10, "t": "tRUE"}})]
        );
    }

    /// sigs.k8s.io/yaml's go-yaml v2 reads a kustomization: YAML 1.1 booleans in v2's
    /// spellings only.
    #[test]
    fn reads_kustomizations_as_yaml_1_1() {
        let text = Text::new(
            "namespace: no\nnamePrefix: yEs\nlist: [y, Y, on, Off, TRUE, nO, 'no', 012]\n"
                .to_string(),
        );
        assert_eq!(
            parse_kustomization("k.yaml", &text).unwrap(),
            json!({"namespace": false, "namePrefix": "yEs",
                "list": [true, true, true, false, true, "nO", "no", 10]})
        );
        assert_eq!(
            parse_kustomization("k.yaml", &Text::new(String::new())).unwrap(),
            Value::Null
        );
    }

    /// `kubectl kustomize` (v5.5): a strategic-merge patch's `namespace: no` is the string
    /// `no` (it targets `ConfigMap/no/a`), a JSON 6902 operation's `value: no` is `false`.
    #[test]
    fn reads_patches_as_kustomize_does() {
        let smp = patch_documents("kind: ConfigMap\nmetadata: {name: a, namespace: no}\n").unwrap();
        assert_eq!(smp[0]["metadata"]["namespace"], "no");
        let ops = patch_documents("- {op: add, path: /metadata/namespace, value: no}\n- {op: add, path: /data, value: {a: on, b: yEs}}\n").unwrap();
        assert_eq!(ops[0][0]["value"], false);
        assert_eq!(ops[0][1]["value"], json!({"a": true, "b": "yEs"}));
    }

    #[test]
    fn a_block_entry_ends_where_its_indentation_does() {
        let text = "a:\n  bogus:\n  - x\n  -\n\n    # note\n  b: 1\nc: 2\n";
        let start = text.find("bogus").unwrap();
        assert_eq!(
            &text[start..block_entry_end(text, start).unwrap()],
            "bogus:\n  - x\n  -\n\n    # note"
        );
        // An inline key cannot be blanked alone.
        let inline = "a: {b: 1, bogus: 2}\n";
        assert_eq!(block_entry_end(inline, inline.find("bogus").unwrap()), None);
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Two {
        a: u32,
        b: Option<Inner>,
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Inner {
        c: u32,
    }

    #[test]
    fn reading_goes_on_past_each_unknown_field() {
        let text: Text = Arc::new("x: 1\na: 1\nb:\n  y:\n    - 1\n  c: 2\nz: 3\n".into());
        let errors = parse_reporting_all::<Two>("f.yaml", &text).unwrap_err();
        let places: Vec<String> = errors.iter().map(|e| e.located()).collect();
        assert_eq!(places.len(), 3, "{places:?}");
        for (e, (line, field)) in errors.iter().zip([(1, "x"), (4, "y"), (7, "z")]) {
            assert_eq!(e.line_col().map(|(l, _)| l), Some(line), "{places:?}");
            assert!(e.message.contains(&format!("`{field}`")), "{places:?}");
        }
        // A file with only unknown fields blanked out reads: no problem is invented.
        let fine: Text = Arc::new("a: 1\n".into());
        assert!(parse_reporting_all::<Two>("f.yaml", &fine).is_ok());
    }
}
