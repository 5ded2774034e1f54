//! SOPS decryption patches of an environment's kustomization: which patch entries set
//! `spec.decryption` on which Flux Kustomizations, and the form `apply` writes a new one in.

use serde_json::{Map, Value};
use std::collections::BTreeMap;

use crate::kustomize::target::{opt_str, parse_target, Target};

/// API group of Flux Kustomizations.
const FLUX_GROUP: &str = "kustomize.toolkit.fluxcd.io";
/// Versions of the Flux Kustomization API that a patch target may name.
const FLUX_VERSIONS: &[&str] = &["v1", "v1beta2"];

/// The object a patch may apply to: a Flux Kustomization.
#[derive(Debug, Clone, Copy)]
pub struct FluxRef<'a> {
    pub name: &'a str,
    pub namespace: &'a str,
    pub labels: &'a BTreeMap<String, String>,
    pub annotations: &'a BTreeMap<String, String>,
}

/// One patch entry of a kustomization that sets `spec.decryption` on Flux Kustomizations.
#[derive(Debug, Clone)]
pub struct DecryptionPatch {
    /// "patches", "patchesStrategicMerge" or "patchesJson6902".
    pub field: &'static str,
    /// Position in that list.
    pub index: usize,
    /// What it sets spec.decryption to (for JSON 6902 ops on sub-paths, the object built from
    /// them).
    pub decryption: Value,
    selector: Selector,
}

#[derive(Debug, Clone)]
enum Selector {
    /// An explicit `target`.
    Target(Box<Target>),
    /// A strategic-merge patch without target: the object named by its own header.
    Own {
        group: String,
        kind: String,
        name: String,
        namespace: Option<String>,
    },
}

impl DecryptionPatch {
    /// Whether this patch applies to the given Flux Kustomization (group kustomize.toolkit.fluxcd.io).
    pub fn covers(&self, obj: &FluxRef) -> bool {
        match &self.selector {
            Selector::Own {
                group,
                kind,
                name,
                namespace,
            } => {
                group == FLUX_GROUP
                    && kind == "Kustomization"
                    && name == obj.name
                    && match namespace {
                        Some(ns) => ns == obj.namespace,
                        None => true,
                    }
            }
            Selector::Target(t) => t.matches(obj),
        }
    }

    /// Whether it selects exactly one object by a literal name (no regex metacharacters, no
    /// selector), and that name.
    pub fn literal_name(&self) -> Option<&str> {
        match &self.selector {
            Selector::Own { name, .. } => Some(name),
            Selector::Target(t) => {
                if t.labels.is_some() || t.annotations.is_some() {
                    return None;
                }
                if let Some((ns, _)) = &t.namespace {
                    if !is_literal(ns) {
                        return None;
                    }
                }
                match &t.name {
                    Some((name, _)) if is_literal(name) => Some(name),
                    _ => None,
                }
            }
        }
    }
}

fn is_literal(s: &str) -> bool {
    !s.is_empty() && !s.chars().any(|c| "\\.+*?()|[]{}^$".contains(c))
}

impl Target {
    fn matches(&self, obj: &FluxRef) -> bool {
        if let Some(g) = &self.group {
            if g != FLUX_GROUP {
                return false;
            }
        }
        if let Some(v) = &self.version {
            if !FLUX_VERSIONS.contains(&v.as_str()) {
                return false;
            }
        }
        if let Some(k) = &self.kind {
            if k != "Kustomization" {
                return false;
            }
        }
        if let Some((_, re)) = &self.name {
            if !re.is_match(obj.name) {
                return false;
            }
        }
        if let Some((_, re)) = &self.namespace {
            if !re.is_match(obj.namespace) {
                return false;
            }
        }
        if let Some(sel) = &self.labels {
            if !sel.matches(obj.labels) {
                return false;
            }
        }
        if let Some(sel) = &self.annotations {
            if !sel.matches(obj.annotations) {
                return false;
            }
        }
        true
    }
}

/// The documents of a patch: strategic-merge objects or JSON 6902 op lists.
enum PatchDoc {
    Smp(Value),
    Json(Vec<Value>),
}

fn parse_patch_text(text: &str, what: &str) -> Result<Vec<PatchDoc>, String> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(text).map_err(|e| {
        format!(
            "{what}: the patch is not valid YAML or JSON: {}",
            crate::yaml::brief_error(text, &e)
        )
    })?;
    let mut out = Vec::new();
    for doc in docs {
        match doc {
            Value::Null => {}
            Value::Object(_) => out.push(PatchDoc::Smp(doc)),
            Value::Array(ops) => out.push(PatchDoc::Json(ops)),
            other => {
                return Err(format!(
                    "{what}: a patch must be a mapping or a list of operations, not {other}"
                ))
            }
        }
    }
    Ok(out)
}

/// What a strategic-merge patch sets spec.decryption to, if it sets it.
fn smp_decryption(doc: &Value) -> Option<Value> {
    if doc.get("$patch").and_then(Value::as_str) == Some("delete") {
        return None;
    }
    let spec = doc.get("spec")?;
    if spec.get("$patch").and_then(Value::as_str) == Some("delete") {
        return None;
    }
    match spec.get("decryption")? {
        Value::Object(m) => {
            if m.get("$patch").and_then(Value::as_str) == Some("delete") {
                return None;
            }
            let mut m = m.clone();
            m.shift_remove("$patch");
            Some(Value::Object(m))
        }
        _ => None,
    }
}

fn unescape_pointer(seg: &str) -> String {
    seg.replace("~1", "/").replace("~0", "~")
}

/// Sets `value` at the JSON pointer `sub` (without leading slash) inside `root`, creating
/// mappings on the way.
fn set_at(root: &mut Value, sub: &str, value: Value, what: &str) -> Result<(), String> {
    let segs: Vec<String> = sub.split('/').map(unescape_pointer).collect();
    let mut cur = root;
    for (i, seg) in segs.iter().enumerate() {
        let last = i + 1 == segs.len();
        match cur {
            Value::Object(m) => {
                if last {
                    m.insert(seg.clone(), value);
                    return Ok(());
                }
                cur = m
                    .entry(seg.clone())
                    .or_insert_with(|| Value::Object(Map::new()));
            }
            Value::Array(a) => {
                let idx = if seg == "-" {
                    a.len()
                } else {
                    seg.parse::<usize>()
                        .ok()
                        .filter(|i| *i <= a.len())
                        .ok_or_else(|| format!("{what}: bad list index `{seg}` in path"))?
                };
                if last {
                    if idx == a.len() {
                        a.push(value);
                    } else {
                        a.insert(idx, value);
                    }
                    return Ok(());
                }
                cur = a
                    .get_mut(idx)
                    .ok_or_else(|| format!("{what}: bad list index `{seg}` in path"))?;
            }
            _ => return Err(format!("{what}: path `{sub}` goes through a scalar")),
        }
    }
    Ok(())
}

/// What a list of JSON 6902 operations sets spec.decryption to, if it sets it.
fn json6902_decryption(ops: &[Value], what: &str) -> Result<Option<Value>, String> {
    let mut dec: Option<Value> = None;
    for (i, op) in ops.iter().enumerate() {
        let o = op
            .as_object()
            .ok_or_else(|| format!("{what}: operation {i} is not a mapping"))?;
        let kind = o.get("op").and_then(Value::as_str).unwrap_or("");
        let path = o.get("path").and_then(Value::as_str).unwrap_or("");
        let value = o.get("value").cloned().unwrap_or(Value::Null);
        match kind {
            "add" | "replace" => {
                if path == "/spec/decryption" {
                    dec = value.is_object().then_some(value);
                } else if let Some(sub) = path.strip_prefix("/spec/decryption/") {
                    let mut d = dec.take().unwrap_or_else(|| Value::Object(Map::new()));
                    set_at(&mut d, sub, value, what)?;
                    dec = Some(d);
                } else if path == "/spec" {
                    dec = value.get("decryption").filter(|d| d.is_object()).cloned();
                }
            }
            "remove" => {
                if path == "/spec/decryption" || path == "/spec" {
                    dec = None;
                } else if let Some(sub) = path.strip_prefix("/spec/decryption/") {
                    if let Some(d) = dec.as_mut() {
                        let ptr = format!("/{sub}");
                        if let Some((parent, leaf)) = ptr.rsplit_once('/') {
                            let leaf = unescape_pointer(leaf);
                            match d.pointer_mut(parent) {
                                Some(Value::Object(m)) => {
                                    m.shift_remove(&leaf);
                                }
                                Some(Value::Array(a)) => {
                                    if let Ok(i) = leaf.parse::<usize>() {
                                        if i < a.len() {
                                            a.remove(i);
                                        }
                                    }
                                }
                                _ => {}
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
    Ok(dec)
}

/// Appends the decryption patches among `docs` (one patch entry) to `out`.
fn collect(
    out: &mut Vec<DecryptionPatch>,
    field: &'static str,
    index: usize,
    docs: Vec<PatchDoc>,
    target: Option<&Target>,
    what: &str,
) -> Result<(), String> {
    for doc in docs {
        match doc {
            PatchDoc::Smp(doc) => {
                let Some(decryption) = smp_decryption(&doc) else {
                    continue;
                };
                let selector = match target {
                    Some(t) => Selector::Target(Box::new(t.clone())),
                    None => own_selector(&doc, what)?,
                };
                out.push(DecryptionPatch {
                    field,
                    index,
                    decryption,
                    selector,
                });
            }
            PatchDoc::Json(ops) => {
                let t =
                    target.ok_or_else(|| format!("{what}: a JSON 6902 patch needs a `target`"))?;
                if let Some(decryption) = json6902_decryption(&ops, what)? {
                    out.push(DecryptionPatch {
                        field,
                        index,
                        decryption,
                        selector: Selector::Target(Box::new(t.clone())),
                    });
                }
            }
        }
    }
    Ok(())
}

fn own_selector(doc: &Value, what: &str) -> Result<Selector, String> {
    let m = doc
        .as_object()
        .ok_or_else(|| format!("{what}: patch is not a mapping"))?;
    let api_version = opt_str(m, "apiVersion", what)?
        .ok_or_else(|| format!("{what}: a patch without target needs `apiVersion`"))?;
    let kind = opt_str(m, "kind", what)?
        .ok_or_else(|| format!("{what}: a patch without target needs `kind`"))?;
    let meta = m
        .get("metadata")
        .and_then(Value::as_object)
        .ok_or_else(|| format!("{what}: a patch without target needs `metadata`"))?;
    let name = opt_str(meta, "name", what)?
        .ok_or_else(|| format!("{what}: a patch without target needs `metadata.name`"))?;
    let namespace = opt_str(meta, "namespace", what)?;
    let group = match api_version.split_once('/') {
        Some((g, _)) => g.to_string(),
        None => String::new(),
    };
    Ok(Selector::Own {
        group,
        kind,
        name,
        namespace,
    })
}

fn list_field<'a>(k: &'a Map<String, Value>, field: &str) -> Result<&'a [Value], String> {
    match k.get(field) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(_) => Err(format!("kustomization: `{field}` must be a list")),
    }
}

fn read_patch_file(
    path: &str,
    read: &dyn Fn(&str) -> Option<String>,
    what: &str,
) -> Result<String, String> {
    read(path).ok_or_else(|| format!("{what}: patch file `{path}` not found"))
}

/// `kustomization` is the parsed kustomization.yaml; `read` loads a file named by a `path:` entry,
/// relative to the kustomization's directory (returns None when missing). Returns every patch
/// entry that sets `spec.decryption` on Flux Kustomizations, in file order.
pub fn decryption_patches(
    kustomization: &Value,
    read: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<DecryptionPatch>, String> {
    let k = match kustomization {
        Value::Object(m) => m,
        Value::Null => return Ok(Vec::new()),
        _ => return Err("kustomization: not a mapping".to_string()),
    };
    let mut out = Vec::new();

    for (i, entry) in list_field(k, "patches")?.iter().enumerate() {
        let what = format!("patches[{i}]");
        let m = entry
            .as_object()
            .ok_or_else(|| format!("{what}: must be a mapping with `patch` or `path`"))?;
        let target = match m.get("target") {
            None | Some(Value::Null) => None,
            Some(t) => Some(parse_target(t, &what)?),
        };
        let inline = opt_str(m, "patch", &what)?;
        let path = opt_str(m, "path", &what)?;
        let text = match (inline, path) {
            (Some(p), None) => p,
            (None, Some(path)) => read_patch_file(&path, read, &what)?,
            (Some(_), Some(_)) => {
                return Err(format!("{what}: has both `patch` and `path`"));
            }
            (None, None) => return Err(format!("{what}: has neither `patch` nor `path`")),
        };
        let docs = parse_patch_text(&text, &what)?;
        collect(&mut out, "patches", i, docs, target.as_ref(), &what)?;
    }

    for (i, entry) in list_field(k, "patchesStrategicMerge")?.iter().enumerate() {
        let what = format!("patchesStrategicMerge[{i}]");
        let docs = match entry {
            Value::String(s) => {
                let text = if s.contains('\n') {
                    s.clone()
                } else if let Some(t) = read(s) {
                    t
                } else if s.trim_start().starts_with('{') {
                    s.clone()
                } else {
                    return Err(format!("{what}: patch file `{s}` not found"));
                };
                parse_patch_text(&text, &what)?
            }
            Value::Object(_) => vec![PatchDoc::Smp(entry.clone())],
            _ => return Err(format!("{what}: must be a file path or an inline patch")),
        };
        let docs = docs
            .into_iter()
            .map(|d| match d {
                PatchDoc::Smp(v) => Ok(PatchDoc::Smp(v)),
                PatchDoc::Json(_) => Err(format!(
                    "{what}: a list of operations is not a strategic-merge patch"
                )),
            })
            .collect::<Result<Vec<_>, String>>()?;
        collect(&mut out, "patchesStrategicMerge", i, docs, None, &what)?;
    }

    for (i, entry) in list_field(k, "patchesJson6902")?.iter().enumerate() {
        let what = format!("patchesJson6902[{i}]");
        let m = entry
            .as_object()
            .ok_or_else(|| format!("{what}: must be a mapping with `target`"))?;
        let target = match m.get("target") {
            None | Some(Value::Null) => return Err(format!("{what}: needs a `target`")),
            Some(t) => parse_target(t, &what)?,
        };
        let inline = opt_str(m, "patch", &what)?;
        let path = opt_str(m, "path", &what)?;
        let text = match (inline, path) {
            (Some(p), None) => p,
            (None, Some(path)) => read_patch_file(&path, read, &what)?,
            (Some(_), Some(_)) => return Err(format!("{what}: has both `patch` and `path`")),
            (None, None) => return Err(format!("{what}: has neither `patch` nor `path`")),
        };
        let mut docs = Vec::new();
        for d in parse_patch_text(&text, &what)? {
            match d {
                PatchDoc::Json(ops) => docs.push(PatchDoc::Json(ops)),
                PatchDoc::Smp(_) => {
                    return Err(format!("{what}: the patch is not a list of operations"))
                }
            }
        }
        collect(&mut out, "patchesJson6902", i, docs, Some(&target), &what)?;
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
/// The inline strategic-merge patch `apply` writes for one wave, as item text for edit_sequence.
pub fn decryption_patch_item(name: &str, namespace: &str, decryption: &Value) -> String {
    let mut metadata = Map::new();
    metadata.insert("name".into(), Value::String(name.into()));
    if !namespace.is_empty() {
        metadata.insert("namespace".into(), Value::String(namespace.into()));
    }
    let patch = serde_json::json!({
        "apiVersion": format!("{FLUX_GROUP}/v1"),
        "kind": "Kustomization",
        "metadata": metadata,
        "spec": {"decryption": decryption},
    });
    let mut s = String::from("patch: |-");
    for line in crate::yaml::emit(&patch).lines() {
        s.push_str("\n  ");
        s.push_str(line);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::edit::{apply_list_edit, edit_sequence};
    use serde_json::json;

    const BASE: &str = "# Flux objects shared by every cluster. Hand-maintained: keep the order.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  # controllers and CRDs (CNPG, cert-manager)
  - platform.yaml
  # cluster-wide config that needs those CRDs; also the cluster-vars ConfigMap
  - platform-config.yaml
  # the app tier: everything under ./apps (see apps/kustomization.yaml)
  - apps.yaml
";

    const DEV: &str = "# dev cluster: the shared Flux objects plus per-environment patches.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - flux-system
  - ../base
patches:
  # SOPS decryption for the app tier. Load-bearing: without it Flux applies the
  # encrypted Secrets verbatim. The sops-age Secret is created out of band.
  - patch: |-
      apiVersion: kustomize.toolkit.fluxcd.io/v1
      kind: Kustomization
      metadata:
        name: apps
        namespace: flux-system
      spec:
        decryption:
          provider: sops
          secretRef:
            name: sops-age
";

    const DEV_JSON: &str = "# dev cluster
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - flux-system
patches:
  - target:
      kind: Kustomization
      name: apps
    patch: |-
      - op: add
        path: /spec/decryption
        value:
          provider: sops
          secretRef:
            name: sops-age
";

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn parse(text: &str) -> Value {
        serde_saphyr::from_str::<Value>(text).unwrap()
    }

    fn no_files(_: &str) -> Option<String> {
        None
    }

    fn sops() -> Value {
        json!({"provider": "sops", "secretRef": {"name": "sops-age"}})
    }

    fn flux<'a>(name: &'a str, labels: &'a BTreeMap<String, String>) -> FluxRef<'a> {
        FluxRef {
            name,
            namespace: "flux-system",
            labels,
            annotations: labels,
        }
    }

    fn covered(p: &DecryptionPatch, name: &str) -> bool {
        let empty = BTreeMap::new();
        p.covers(&flux(name, &empty))
    }

    #[test]
    fn inline_smp_by_name() {
        let found = decryption_patches(&parse(DEV), &no_files).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].field, "patches");
        assert_eq!(found[0].index, 0);
        assert_eq!(found[0].decryption, sops());
        assert_eq!(found[0].literal_name(), Some("apps"));
        assert!(covered(&found[0], "apps"));
        assert!(!covered(&found[0], "apps-wave-0"));
        let empty = BTreeMap::new();
        let other_ns = FluxRef {
            namespace: "other",
            ..flux("apps", &empty)
        };
        assert!(!found[0].covers(&other_ns));
    }

    #[test]
    fn smp_file_via_path() {
        let k = parse("patches:\n  - path: decrypt.yaml\n  - path: other.yaml\n");
        let read = |p: &str| {
            match p {
            "decrypt.yaml" => Some(
                "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: infra\nspec:\n  decryption:\n    provider: sops\n"
                    .to_string(),
            ),
            "other.yaml" => Some(
                "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: infra\nspec:\n  interval: 5m\n"
                    .to_string(),
            ),
            _ => None,
        }
        };
        let found = decryption_patches(&k, &read).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].index, 0);
        assert_eq!(found[0].decryption, json!({"provider": "sops"}));
        assert!(covered(&found[0], "infra"));
        let missing = parse("patches:\n  - path: nope.yaml\n");
        assert!(decryption_patches(&missing, &no_files)
            .unwrap_err()
            .contains("nope.yaml"));
    }

    #[test]
    fn json6902_inline_with_target_by_name() {
        let found = decryption_patches(&parse(DEV_JSON), &no_files).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].decryption, sops());
        assert_eq!(found[0].literal_name(), Some("apps"));
        assert!(covered(&found[0], "apps"));
        assert!(!covered(&found[0], "apps-wave-1"));
    }

    #[test]
    fn json6902_json_text_and_sub_paths() {
        let k = parse(
            r#"patches:
  - target: {kind: Kustomization, name: apps}
    patch: '[{"op": "add", "path": "/spec/decryption/provider", "value": "sops"}, {"op": "replace", "path": "/spec/decryption/secretRef", "value": {"name": "sops-age"}}]'
"#,
        );
        let found = decryption_patches(&k, &no_files).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].decryption, sops());
        let no_target = parse("patches:\n  - patch: '[{\"op\": \"add\", \"path\": \"/spec/decryption\", \"value\": {}}]'\n");
        assert!(decryption_patches(&no_target, &no_files).is_err());
    }

    #[test]
    fn json6902_regex_target() {
        let k = parse("patches:\n  - target:\n      group: kustomize.toolkit.fluxcd.io\n      version: v1\n      kind: Kustomization\n      name: apps-wave-.*\n    patch: |\n      - op: add\n        path: /spec/decryption\n        value: {provider: sops}\n");
        let found = decryption_patches(&k, &no_files).unwrap();
        assert_eq!(found.len(), 1);
        assert!(covered(&found[0], "apps-wave-3"));
        assert!(!covered(&found[0], "apps"));
        assert!(!covered(&found[0], "xapps-wave-3"));
        assert_eq!(found[0].literal_name(), None);
    }

    #[test]
    fn target_kind_only_covers_all_and_wrong_group_none() {
        let k = parse("patches:\n  - target: {kind: Kustomization}\n    patch: |\n      - op: add\n        path: /spec/decryption\n        value: {provider: sops}\n  - target: {group: kustomize.config.k8s.io, kind: Kustomization}\n    patch: |\n      - op: add\n        path: /spec/decryption\n        value: {provider: sops}\n  - target: {kind: HelmRelease}\n    patch: |\n      - op: add\n        path: /spec/decryption\n        value: {provider: sops}\n");
        let found = decryption_patches(&k, &no_files).unwrap();
        assert_eq!(found.len(), 3);
        assert!(covered(&found[0], "apps") && covered(&found[0], "anything"));
        assert_eq!(found[0].literal_name(), None);
        assert!(!covered(&found[1], "apps"));
        assert!(!covered(&found[2], "apps"));
    }

    #[test]
    fn label_selector_targets() {
        let k = parse("patches:\n  - target:\n      kind: Kustomization\n      labelSelector: \"tier=apps,wave in (0, 1),!skip\"\n    patch: |\n      apiVersion: kustomize.toolkit.fluxcd.io/v1\n      kind: Kustomization\n      metadata:\n        name: ignored\n      spec:\n        decryption:\n          provider: sops\n");
        let found = decryption_patches(&k, &no_files).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].literal_name(), None);
        let l = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        };
        let yes = l(&[("tier", "apps"), ("wave", "1")]);
        let wrong_wave = l(&[("tier", "apps"), ("wave", "2")]);
        let skipped = l(&[("tier", "apps"), ("wave", "0"), ("skip", "")]);
        assert!(found[0].covers(&flux("x", &yes)));
        assert!(!found[0].covers(&flux("x", &wrong_wave)));
        assert!(!found[0].covers(&flux("x", &skipped)));
    }

    #[test]
    fn an_invalid_selector_names_itself() {
        let k = parse("patches:\n  - target: {kind: Kustomization, labelSelector: \"a in (1\"}\n    patch: '[]'\n");
        let err = decryption_patches(&k, &no_files).unwrap_err();
        assert!(
            err.contains("labelSelector") && err.contains("a in (1"),
            "{err}"
        );
    }

    #[test]
    fn invalid_regex_is_error() {
        let k = parse(
            "patches:\n  - target: {kind: Kustomization, name: \"apps-(\"}\n    patch: '[]'\n",
        );
        let err = decryption_patches(&k, &no_files).unwrap_err();
        assert!(err.contains("apps-("), "{err}");
    }

    #[test]
    fn legacy_patches_strategic_merge() {
        let k = parse("patchesStrategicMerge:\n  - decrypt.yaml\n  - |-\n    apiVersion: kustomize.toolkit.fluxcd.io/v1beta2\n    kind: Kustomization\n    metadata:\n      name: infra\n    spec:\n      decryption:\n        provider: sops\n");
        let read = |p: &str| {
            (p == "decrypt.yaml").then(|| {
                "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  decryption:\n    provider: sops\n".to_string()
            })
        };
        let found = decryption_patches(&k, &read).unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].field, "patchesStrategicMerge");
        assert_eq!((found[0].index, found[1].index), (0, 1));
        assert!(covered(&found[0], "apps"));
        assert!(covered(&found[1], "infra"));
        assert!(!covered(&found[1], "apps"));
    }

    #[test]
    fn legacy_patches_json6902() {
        let k = parse("patchesJson6902:\n  - target:\n      group: kustomize.toolkit.fluxcd.io\n      version: v1beta2\n      kind: Kustomization\n      name: apps\n    path: ops.yaml\n");
        let read = |p: &str| {
            (p == "ops.yaml").then(|| {
                "- op: replace\n  path: /spec/decryption\n  value:\n    provider: sops\n"
                    .to_string()
            })
        };
        let found = decryption_patches(&k, &read).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].field, "patchesJson6902");
        assert_eq!(found[0].decryption, json!({"provider": "sops"}));
        assert!(covered(&found[0], "apps"));
    }

    #[test]
    fn other_patches_and_deletes_not_returned() {
        let k = parse("patches:\n  - patch: |-\n      apiVersion: kustomize.toolkit.fluxcd.io/v1\n      kind: Kustomization\n      metadata:\n        name: apps\n      spec:\n        interval: 1m\n  - patch: |-\n      apiVersion: kustomize.toolkit.fluxcd.io/v1\n      kind: Kustomization\n      metadata:\n        name: apps\n      spec:\n        decryption:\n          $patch: delete\n  - target: {kind: Kustomization}\n    patch: |\n      - op: remove\n        path: /spec/decryption\n  - target: {kind: Kustomization}\n    patch: |\n      - op: add\n        path: /spec/interval\n        value: 1m\n");
        assert!(decryption_patches(&k, &no_files).unwrap().is_empty());
    }

    #[test]
    fn smp_from_other_group_does_not_cover() {
        let k = parse("patches:\n  - patch: |-\n      apiVersion: apps/v1\n      kind: Kustomization\n      metadata:\n        name: apps\n      spec:\n        decryption:\n          provider: sops\n");
        let found = decryption_patches(&k, &no_files).unwrap();
        assert_eq!(found.len(), 1);
        assert!(!covered(&found[0], "apps"));
    }

    #[test]
    fn decryption_patch_item_exact() {
        let item = decryption_patch_item("apps-wave-0", "flux-system", &sops());
        assert_eq!(
            item,
            "patch: |-\n  apiVersion: kustomize.toolkit.fluxcd.io/v1\n  kind: Kustomization\n  metadata:\n    name: apps-wave-0\n    namespace: flux-system\n  spec:\n    decryption:\n      provider: sops\n      secretRef:\n        name: sops-age"
        );
    }

    #[test]
    fn decryption_patch_item_round_trips() {
        let dec = json!({
            "provider": "sops",
            "secretRef": {"name": "sops-age"},
            "weird": ["yes", "y", "1", "a: b", "#x", "", "multi\nline", {"k": true, "n": null}],
            "empty": {},
            "nested": [[1, 2]],
        });
        let item = decryption_patch_item("apps-wave-0", "flux-system", &dec);
        let out = edit_sequence("patches: []\n", "patches", &[], None, &[item]).unwrap();
        let v = parse(&out);
        let inner = parse(v["patches"][0]["patch"].as_str().unwrap());
        assert_eq!(inner["spec"]["decryption"], dec);
        let found = decryption_patches(&v, &no_files).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].decryption, dec);
        assert!(covered(&found[0], "apps-wave-0"));
        assert!(!covered(&found[0], "apps-wave-1"));
        assert!(!covered(&found[0], "apps"));
    }

    #[test]
    fn dev_replace_patch_with_three_wave_patches() {
        let items: Vec<String> = (0..3)
            .map(|i| decryption_patch_item(&format!("apps-wave-{i}"), "flux-system", &sops()))
            .collect();
        let out = edit_sequence(DEV, "patches", &[0], Some(0), &items).unwrap();
        let head = DEV.split("  - patch: |-").next().unwrap();
        assert!(out.starts_with(head), "comments and header kept:\n{out}");
        assert!(out.contains(
            "out of band.\n  - patch: |-\n      apiVersion: kustomize.toolkit.fluxcd.io/v1\n      kind: Kustomization\n      metadata:\n        name: apps-wave-0\n"
        ));
        assert!(!out.contains("name: apps\n"));
        let v = parse(&out);
        let found = decryption_patches(&v, &no_files).unwrap();
        assert_eq!(found.len(), 3);
        for (i, p) in found.iter().enumerate() {
            assert_eq!(p.field, "patches");
            assert_eq!(p.index, i);
            assert_eq!(p.decryption, sops());
            let name = format!("apps-wave-{i}");
            assert_eq!(p.literal_name(), Some(name.as_str()));
            assert!(covered(p, &name));
            assert!(!covered(p, "apps"));
        }
    }

    #[test]
    fn dev_json6902_patch_removed_and_replaced() {
        let item = decryption_patch_item("apps-wave-0", "flux-system", &sops());
        let out = edit_sequence(DEV_JSON, "patches", &[0], None, &[item]).unwrap();
        assert!(out.starts_with("# dev cluster\napiVersion"));
        assert!(!out.contains("op: add"));
        let v = parse(&out);
        assert_eq!(v["patches"].as_array().unwrap().len(), 1);
        // Appending after a multi-line item keeps the block scalar whole.
        let out = edit_sequence(DEV, "patches", &[], None, &s(&["path: x.yaml"])).unwrap();
        assert_eq!(out, format!("{DEV}  - path: x.yaml\n"));
    }

    /// Truncated and line-dropped variants of the fixtures: never a panic, and every Ok edit
    /// parses to the intended list.
    #[test]
    fn never_panics_on_mangled_input() {
        let item = decryption_patch_item("apps-wave-0", "flux-system", &sops());
        let extra = [
            "resources: [a, \"b]\n",
            "resources: &x\n  - a\nother: *x\n",
            "---\nresources:\n- a\n...\n",
            "resources:\n  - a\n    - b\n  -\n  - - c\n",
            "r: |\n  resources:\n  - x\n",
        ];
        let mut texts: Vec<String> = Vec::new();
        for f in [BASE, DEV, DEV_JSON].iter().chain(extra.iter()) {
            for (i, _) in f.char_indices() {
                texts.push(f[..i].to_string());
            }
            let lines: Vec<&str> = f.lines().collect();
            for skip in 0..lines.len() {
                let v: Vec<&str> = lines
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != skip)
                    .map(|(_, l)| *l)
                    .collect();
                texts.push(v.join("\n") + "\n");
            }
        }
        let ops: Vec<(Vec<usize>, Option<usize>, Vec<String>)> = vec![
            (vec![0], None, s(&["x"])),
            (vec![], Some(0), vec![item.clone()]),
            (vec![1], Some(1), vec![]),
        ];
        let mut ok = 0;
        for t in &texts {
            for key in ["resources", "patches"] {
                for (rm, at, new) in &ops {
                    if let Ok(out) = edit_sequence(t, key, rm, *at, new) {
                        ok += 1;
                        let before = parse(t);
                        let after = parse(&out);
                        let old = before.get(key).and_then(Value::as_array).cloned();
                        let old = old.unwrap_or_default();
                        let removed: Vec<bool> = (0..old.len()).map(|i| rm.contains(&i)).collect();
                        let new_v: Vec<Value> = new.iter().map(|n| parse(n)).collect();
                        let want = apply_list_edit(&old, &removed, at.unwrap_or(old.len()), &new_v);
                        assert_eq!(after[key], Value::Array(want), "{t:?} -> {out:?}");
                    }
                }
            }
            if let Ok(v) = serde_saphyr::from_str::<Value>(t) {
                let _ = decryption_patches(&v, &|_: &str| Some(t.clone()));
            }
        }
        assert!(ok > 100, "only {ok} edits succeeded");
    }
}
