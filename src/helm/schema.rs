//! Whether a chart's values schemas reach outside themselves. `helm template` checks the
//! values against each `values.schema.json` of the chart and its subcharts, and loads
//! whatever a schema refers to: `http(s)://` addresses from the network and `file://` (also a
//! relative reference, read against `file:///values.schema.json`) from the machine's disk
//! (Helm's `chartutil.ValidateAgainstSingleSchema` gives its JSON Schema compiler loaders for
//! `file`, `http` and `https`). A repository chooses its charts, so fluxwave never lets helm
//! follow such a reference: a chart whose schemas refer outside the document they are in is
//! rendered with `--skip-schema-validation`, and the release says its values were not
//! checked, and why.

use std::io::Read;
use std::path::Path;

use serde_json::Value;

/// At most this many bytes of one packaged subchart are read, unpacked (a chart archive is a
/// few hundred KB; this bounds an archive built to unpack without end).
const MAX_ARCHIVE_BYTES: u64 = 64 << 20;

/// Subcharts packaged inside packaged subcharts are read this deep.
const MAX_NESTING: usize = 4;

/// The meta-schemas the JSON Schema compiler Helm uses knows without loading them
/// (santhosh-tekuri/jsonschema v6 `draftFromURL`), after `http://` or `https://`, with or
/// without an empty fragment.
const KNOWN_DRAFTS: &[&str] = &[
    "json-schema.org/schema",
    "json-schema.org/draft/2020-12/schema",
    "json-schema.org/draft/2019-09/schema",
    "json-schema.org/draft-07/schema",
    "json-schema.org/draft-06/schema",
    "json-schema.org/draft-04/schema",
];

/// The first reference the values schemas of the chart folder `dir` make to anything outside
/// the document they are in (`None` when every reference is a `#` fragment of its own
/// document), with the schema that makes it: `charts/common/values.schema.json refers to
/// https://…`.
pub fn outside_reference(dir: &Path) -> Option<String> {
    let mut found = None;
    walk(dir, "", 0, &mut found);
    found
}

fn walk(dir: &Path, rel: &str, depth: usize, found: &mut Option<String>) {
    if depth > 32 || found.is_some() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let Ok(t) = e.file_type() else { continue };
        let name = e.file_name().to_string_lossy().into_owned();
        let path = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        if t.is_dir() {
            walk(&e.path(), &path, depth + 1, found);
        } else if t.is_file() && name == "values.schema.json" {
            if let Ok(text) = std::fs::read(e.path()) {
                if let Some(r) = reference(&text) {
                    *found = Some(format!("{path} refers to {r}"));
                }
            }
        } else if t.is_file() && name.ends_with(".tgz") {
            if let Ok(mut file) = std::fs::File::open(e.path()) {
                archive(&mut file, &path, 0, found);
            }
        }
        if found.is_some() {
            return;
        }
    }
}

/// The schemas inside a packaged (sub)chart, `.tgz`, and the archives packaged in it.
fn archive(reader: &mut dyn Read, rel: &str, nesting: usize, found: &mut Option<String>) {
    if nesting > MAX_NESTING {
        return;
    }
    let unpacked = flate2::read::GzDecoder::new(reader).take(MAX_ARCHIVE_BYTES);
    let mut tar = tar::Archive::new(unpacked);
    let Ok(entries) = tar.entries() else { return };
    for entry in entries {
        let Ok(mut entry) = entry else { return };
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let Ok(path) = entry.path() else { continue };
        let name = path.to_string_lossy().into_owned();
        let inner = format!("{rel}:{name}");
        if name.ends_with("/values.schema.json") || name == "values.schema.json" {
            let mut text = Vec::new();
            if entry.read_to_end(&mut text).is_ok() {
                if let Some(r) = reference(&text) {
                    *found = Some(format!("{inner} refers to {r}"));
                }
            }
        } else if name.ends_with(".tgz") {
            archive(&mut entry, &inner, nesting + 1, found);
        }
        if found.is_some() {
            return;
        }
    }
}

/// The first reference of a schema document to anything outside it. A document that is no
/// JSON refers to nothing (helm refuses it, and says so).
fn reference(text: &[u8]) -> Option<String> {
    let doc: Value = serde_json::from_slice(text).ok()?;
    first(&doc, 0)
}

fn first(v: &Value, depth: usize) -> Option<String> {
    if depth > 256 {
        // A schema nested deeper than this is refused rather than searched.
        return Some("a schema nested too deep to search".into());
    }
    match v {
        Value::Object(map) => {
            for (key, value) in map {
                if let Value::String(s) = value {
                    let outside = match key.as_str() {
                        "$ref" | "$dynamicRef" | "$recursiveRef" => !s.starts_with('#'),
                        "$schema" => !known_draft(s),
                        _ => false,
                    };
                    if outside {
                        return Some(s.chars().take(200).collect());
                    }
                }
                if let Some(r) = first(value, depth + 1) {
                    return Some(r);
                }
            }
            None
        }
        Value::Array(items) => items.iter().find_map(|i| first(i, depth + 1)),
        _ => None,
    }
}

fn known_draft(url: &str) -> bool {
    let bare = url.strip_suffix('#').unwrap_or(url);
    let bare = bare
        .strip_prefix("http://")
        .or_else(|| bare.strip_prefix("https://"));
    bare.is_some_and(|b| KNOWN_DRAFTS.contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_fragments_of_the_document_and_known_drafts_stay_inside() {
        let inside = br##"{"$schema": "http://json-schema.org/draft-07/schema#",
            "definitions": {"a": {"type": "string"}},
            "properties": {"x": {"$ref": "#/definitions/a"}, "y": {"$ref": "#"}}}"##;
        assert_eq!(reference(inside), None);
        for (doc, want) in [
            (
                r#"{"properties": {"x": {"$ref": "https://example.com/s.json"}}}"#,
                "https://example.com/s.json",
            ),
            (r#"{"$ref": "file:///etc/passwd"}"#, "file:///etc/passwd"),
            (r#"{"items": [{"$ref": "other.json#/a"}]}"#, "other.json#/a"),
            (
                r#"{"$schema": "http://evil.example/meta"}"#,
                "http://evil.example/meta",
            ),
            (r#"{"$dynamicRef": "urn:x"}"#, "urn:x"),
        ] {
            assert_eq!(reference(doc.as_bytes()).as_deref(), Some(want), "{doc}");
        }
        assert!(known_draft("https://json-schema.org/draft/2020-12/schema"));
        assert!(!known_draft(
            "https://json-schema.org/draft/2020-12/schema#/x"
        ));
    }

    #[test]
    fn schemas_of_packaged_subcharts_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let chart = dir.path().join("c");
        std::fs::create_dir_all(chart.join("charts")).unwrap();
        std::fs::write(chart.join("values.schema.json"), r##"{"$ref": "#/x"}"##).unwrap();
        assert_eq!(outside_reference(&chart), None);
        // charts/common-1.0.0.tgz holding common/values.schema.json with a remote reference.
        let mut tgz = Vec::new();
        {
            let gz = flate2::write::GzEncoder::new(&mut tgz, flate2::Compression::fast());
            let mut b = tar::Builder::new(gz);
            let body = br#"{"properties": {"a": {"$ref": "https://raw.example/k8s.json"}}}"#;
            let mut h = tar::Header::new_gnu();
            h.set_size(body.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            b.append_data(&mut h, "common/values.schema.json", &body[..])
                .unwrap();
            b.into_inner().unwrap().finish().unwrap();
        }
        std::fs::write(chart.join("charts/common-1.0.0.tgz"), tgz).unwrap();
        assert_eq!(
            outside_reference(&chart).as_deref(),
            Some("charts/common-1.0.0.tgz:common/values.schema.json refers to https://raw.example/k8s.json")
        );
    }
}
