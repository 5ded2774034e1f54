//! The checks behind every fuzz target, one function per target taking the raw input. They
//! are shared with `cargo test` (tests/cli/fuzz.rs includes this file), where every input a
//! fuzzer ever crashed is replayed from tests/fixtures/fuzz/<target>/. Dependencies: fluxwave,
//! serde_json, serde-saphyr and miette only, so the test binary can include it as is.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use serde_json::{Map, Value};

use fluxwave::testing::tree::FileTree;

const KEYS: [&str; 4] = [
    "resources",
    "patches",
    "patchesStrategicMerge",
    "components",
];

/// Renders an error as the CLI does (miette, with the source span), so that a span outside
/// the text or inside a character panics here first.
fn render(e: &fluxwave::testing::error::SourceError) -> String {
    let report = e.report();
    let mut out = String::new();
    let _ = miette::GraphicalReportHandler::new().render_report(&mut out, report.as_ref());
    out
}

fn render_all(e: &fluxwave::testing::error::Error) -> String {
    match e {
        fluxwave::testing::error::Error::Input(errors) => errors.iter().map(render).collect(),
        other => other.to_string(),
    }
}

/// A catalog file: parse and validate, render every error, and when it is valid render its
/// manifests twice (deterministic to the byte) and read every rendered file back.
pub fn catalog(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The file name must equal metadata.name; take it from the text when it is a label.
    let stem = serde_saphyr::from_str::<Value>(text)
        .ok()
        .and_then(|v| v.pointer("/metadata/name")?.as_str().map(str::to_string))
        .filter(|n| fluxwave::testing::config::is_dns_label(n))
        .unwrap_or_else(|| "svc".to_string());
    let path = format!("catalog/{stem}.yaml");
    match fluxwave::testing::catalog::parse(&path, &stem, Arc::new(text.to_string())) {
        Err(errors) => {
            assert!(!errors.is_empty());
            for e in &errors {
                render(e);
            }
        }
        Ok(svc) => {
            for automation in [true, false] {
                let opts = fluxwave::testing::render::Options {
                    image_automation: automation,
                };
                let first = fluxwave::testing::render::service(&svc, opts);
                let second = fluxwave::testing::render::service(&svc, opts);
                assert_eq!(
                    first.as_ref().ok(),
                    second.as_ref().ok(),
                    "rendering is not deterministic"
                );
                if let Ok(files) = first {
                    for f in files {
                        let docs = serde_saphyr::from_multiple::<Value>(&f.text);
                        assert!(
                            docs.is_ok(),
                            "rendered {} does not parse: {:?}\n{}",
                            f.name,
                            docs.err(),
                            f.text
                        );
                    }
                }
            }
        }
    }
}

/// `fluxwave.yaml`: parse, render every error, and when valid emit every wave Kustomization
/// and decryption patch it templates and read them back.
pub fn config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match fluxwave::testing::config::Config::parse(&Arc::new(text.to_string())) {
        Err(e) => {
            render_all(&e);
        }
        Ok(config) => {
            for n in 0..3 {
                let (name, folder, what) = (
                    config.wave_name(n),
                    format!("wave-{n}"),
                    format!("wave {n}"),
                );
                let depends_on = config.waves.upstream.clone();
                let wave = fluxwave::testing::flux::emit::GroupKustomization {
                    name: &name,
                    folder: &folder,
                    depends_on: &depends_on,
                    what: &what,
                };
                let emitted =
                    fluxwave::testing::flux::emit::group_kustomization_text(&config, &wave);
                let back: Value =
                    serde_saphyr::from_str(&emitted).expect("wave Kustomization parses");
                assert_eq!(
                    back,
                    fluxwave::testing::flux::emit::group_kustomization(&config, &wave),
                    "{emitted}"
                );
                assert_eq!(config.wave_of_name(&config.wave_name(n)), Some(n));
                let item = fluxwave::testing::flux::emit::decryption_patch_item(
                    &config.wave_name(n),
                    &config.waves.namespace,
                    &config.waves.decryption,
                );
                let doc: Value = serde_saphyr::from_str(&item).expect("patch item parses");
                let k = serde_json::json!({"patches": [doc]});
                let tree = FileTree::default();
                let e = fluxwave::testing::flux::decryption::patch_entries(&k)[0];
                let (name, _) = fluxwave::testing::flux::decryption::literal_target(&tree, "", &e)
                    .expect("a patch fluxwave writes names its wave");
                assert_eq!(name, config.wave_name(n), "{item}");
            }
        }
    }
}

/// A kustomization file and the Flux objects in a manifest: decryption patches of every
/// form (with any referenced patch file answering with the same text), the Flux
/// Kustomizations of every document, and the lossless editor's no-op.
pub fn kustomization(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let shared = Arc::new(text.to_string());
    match fluxwave::testing::yaml::parse::<Value>("clusters/dev/kustomization.yaml", &shared) {
        Err(e) => {
            render(&e);
        }
        Ok(doc) => {
            // Every patch file the kustomization names answers with the same text.
            let mut files: Vec<(String, &str)> = Vec::new();
            for e in fluxwave::testing::flux::decryption::patch_entries(&doc) {
                let path = e
                    .entry
                    .get("path")
                    .or(Some(e.entry))
                    .and_then(Value::as_str);
                if let Some(rel) = path
                    .and_then(|p| fluxwave::testing::kustomize::resolve("clusters/dev", p).local())
                {
                    files.push((rel, text));
                }
            }
            let tree = FileTree::from_files(files.iter().map(|(p, t)| (p.as_str(), *t)));
            let mut builder = fluxwave::testing::kustomize::Builder::owners_only(&tree);
            for e in fluxwave::testing::flux::decryption::patch_entries(&doc) {
                let name =
                    fluxwave::testing::flux::decryption::literal_target(&tree, "clusters/dev", &e)
                        .map_or("apps-wave-0".to_string(), |(n, _)| n);
                let _ = fluxwave::testing::flux::decryption::gives_decryption(
                    &mut builder,
                    "clusters/dev",
                    &e,
                    &name,
                    "flux-system",
                );
            }
            let _ = fluxwave::testing::yaml::edit::edit_sequence(text, "patches", &[], None, &[]);
        }
    }
    match fluxwave::testing::yaml::parse_all("clusters/base/apps.yaml", &shared) {
        Err(e) => {
            render(&e);
        }
        Ok(docs) => {
            for d in &docs {
                if let Some(k) = fluxwave::testing::flux::Kustomization::from_value(d) {
                    assert!(!k.spec.path.starts_with("./"));
                    assert!(fluxwave::testing::flux::Kustomization::is(d));
                }
                let _ = fluxwave::testing::cutover::ObjectId::of(d);
            }
        }
    }
}

/// The cutover builder on an in-memory tree: the input is `path NUL text NUL path NUL text
/// ...`. A revision compared with itself deletes nothing; compared with the tree less one
/// file, it must only not fail or hang.
pub fn cutover(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let parts: Vec<&str> = text.split('\0').collect();
    let files: Vec<(&str, &str)> = parts
        .chunks(2)
        .filter_map(|c| Some((c[0], *c.get(1)?)))
        .filter(|(p, _)| !p.is_empty())
        .collect();
    if files.len() > 64 {
        return;
    }
    let tree = FileTree::from_files(files.iter().copied());
    if let Ok(report) = fluxwave::testing::cutover::compare(&tree, &tree, None, "fuzz") {
        assert!(
            report.deletions.is_empty(),
            "a revision compared with itself deletes {:?}",
            report.deletions
        );
    }
    if let Some((first, rest)) = files.split_first() {
        let _ = first;
        let smaller = FileTree::from_files(rest.iter().copied());
        let _ = fluxwave::testing::cutover::compare(&tree, &smaller, None, "fuzz");
        let _ = fluxwave::testing::cutover::compare(&smaller, &tree, None, "fuzz");
    }
}

/// The lossless editor: an edit either fails or gives a file that parses to exactly the
/// intended document (the list edited, every other key unchanged), and edits nothing when
/// asked for nothing.
pub fn kedit(data: &[u8]) {
    let [k, a, n, rest @ ..] = data else { return };
    let n = usize::from(*n % 8);
    if rest.len() < n {
        return;
    }
    let (rm, rest) = rest.split_at(n);
    let Ok(rest) = std::str::from_utf8(rest) else {
        return;
    };
    let mut parts = rest.split('\0');
    let text = parts.next().unwrap_or("").to_string();
    let items: Vec<String> = parts.take(4).map(str::to_string).collect();
    let key = KEYS[usize::from(*k) % KEYS.len()];
    let remove: Vec<usize> = rm.iter().map(|&r| usize::from(r % 16)).collect();
    let at = (*a != 255).then(|| usize::from(*a % 16));
    let result = fluxwave::testing::yaml::edit::edit_sequence(&text, key, &remove, at, &items);
    let Ok(edited) = result else { return };
    if remove.is_empty() && items.is_empty() {
        assert_eq!(edited, text);
        return;
    }
    // The intended document, computed independently of the editor.
    let original: Value = serde_saphyr::from_str(&text).expect("the editor accepted it");
    let mut map = match original {
        Value::Object(m) => m,
        Value::Null => serde_json::Map::new(),
        other => panic!("edited a non-mapping: {other:?}"),
    };
    let list = match map.get(key) {
        None | Some(Value::Null) => vec![],
        Some(Value::Array(a)) => a.clone(),
        Some(other) => panic!("edited a non-list: {other:?}"),
    };
    let new: Vec<Value> = items
        .iter()
        .map(|i| serde_saphyr::from_str(i).expect("the editor parsed the new item"))
        .collect();
    let at = at.unwrap_or(list.len());
    let mut want = Vec::new();
    for (i, v) in list.iter().enumerate() {
        if i == at {
            want.extend(new.iter().cloned());
        }
        if !remove.contains(&i) {
            want.push(v.clone());
        }
    }
    if at >= list.len() {
        want.extend(new.iter().cloned());
    }
    map.insert(key.to_string(), Value::Array(want));
    let got: Value = serde_saphyr::from_str(&edited).expect("an Ok edit parses");
    assert_eq!(
        got,
        Value::Object(map),
        "edit of\n{}\ngave\n{}",
        text,
        edited
    );
}

/// Reads a tree from bytes: one byte picks the node, a length byte precedes a string.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(*b)
    }

    fn string(&mut self) -> Option<String> {
        let n = usize::from(self.byte()?).min(self.0.len());
        let (s, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(String::from_utf8_lossy(s).into_owned())
    }

    fn value(&mut self, depth: usize) -> Option<Value> {
        let choice = self.byte()? % if depth > 4 { 4 } else { 6 };
        Some(match choice {
            0 => Value::Null,
            1 => Value::Bool(self.byte()? % 2 == 0),
            2 => {
                let mut n = [0u8; 8];
                for b in &mut n {
                    *b = self.byte()?;
                }
                Value::from(i64::from_le_bytes(n))
            }
            3 => Value::String(self.string()?),
            4 => {
                let n = self.byte()? % 5;
                Value::Array(
                    (0..n)
                        .map(|_| self.value(depth + 1))
                        .collect::<Option<_>>()?,
                )
            }
            _ => {
                let n = self.byte()? % 5;
                let mut m = Map::new();
                for _ in 0..n {
                    m.insert(self.string()?, self.value(depth + 1)?);
                }
                Value::Object(m)
            }
        })
    }
}

fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                pointers(
                    v,
                    format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                pointers(v, format!("{at}/{i}"), out);
            }
        }
        _ => out.push(at),
    }
}

/// The YAML emitter: any tree of strings, integers, booleans and nulls, with a trailing
/// comment on any scalar, reads back as the same tree (a comment can never inject YAML).
pub fn emit(data: &[u8]) {
    let mut input = Bytes(data);
    let Some(v) = input.value(0) else { return };
    let Some(comment) = input.string() else {
        return;
    };
    let mut ptrs = Vec::new();
    pointers(&v, String::new(), &mut ptrs);
    let target = ptrs.first().cloned().unwrap_or_default();
    let text =
        fluxwave::testing::yaml::emit_with_comments(&v, &[(target.as_str(), comment.as_str())]);
    let back: Value = match serde_saphyr::from_str(&text) {
        Ok(b) => b,
        Err(e) => panic!("emitted YAML does not parse: {e}\n{text}"),
    };
    // An empty top-level mapping or list is written as nothing at all (a null document).
    let empty_top = matches!(&v, Value::Object(m) if m.is_empty())
        || matches!(&v, Value::Array(a) if a.is_empty());
    if !empty_top {
        assert_eq!(back, v, "emitted:\n{text}");
    }
}
