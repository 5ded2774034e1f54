//! Rule 4 of discovery: Flux Operator. A `FluxInstance` (`fluxcd.controlplane.io`) with
//! `spec.sync.path`, or a HelmRelease of the flux-instance chart whose values set
//! `instance.sync.path`: inline in `spec.values`, or through `valuesFrom` from a ConfigMap or
//! Secret that a generator of the release's own folder makes of a file (the layout of
//! onedr0p's cluster-template: `configMapGenerator` `files: [values.yaml=./helm/values.yaml]`).
//! helm-controller merges the `valuesFrom` references in order, each read at its `valuesKey`
//! (default `values.yaml`), then `spec.values` over them (fluxcd/pkg `chartutil`
//! `ChartValuesFromReferences`). The operator creates the root as its sync template writes
//! it: a Kustomization named `spec.sync.name` or else the instance's namespace, in that
//! namespace, `prune: true`, reading the `spec.sync.kind` source of the same name. The
//! environment is named after the path's last folder. A FluxInstance or HelmRelease listed in
//! a Flux Operator `ResourceSet`'s `spec.resources` is read as written. The sync of an OCI
//! artifact is found in the folder the artifact is made of (`located`).

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};

use serde_json::{json, Map, Value};

use super::{last_folder, Environment, Root};
use crate::flux::{normalize_path, SourceKind};
use crate::fs::join;
use crate::pointer::Pointer;
use crate::tree::FileTree;
use crate::yaml::{self, PerText, Text};

/// The environments Flux Operator's syncs written in `tree` name (see the module).
pub(super) fn roots(tree: &FileTree) -> Vec<Environment> {
    let mut found = Vec::new();
    for (file, text) in tree.manifests() {
        // Only the files that may hold one are parsed.
        if !super::Marks::of(text).operator {
            continue;
        }
        for written in declared(file, text).iter() {
            let Some(op) = written.resolve(tree, file) else {
                continue;
            };
            let Some((path, artifact_root)) = located(tree, &op) else {
                continue;
            };
            let root = json!({
                "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
                "kind": "Kustomization",
                "metadata": {"name": op.name, "namespace": written.namespace},
                "spec": {"interval": "10m0s", "path": op.path, "prune": true,
                         "sourceRef": {"kind": op.kind.as_str(), "name": op.name}},
            });
            let root = patched(tree, file, root, &op.patches);
            let pushed = if artifact_root.is_empty() {
                String::new()
            } else {
                format!(", its {} made of folder {artifact_root}", op.kind.as_str())
            };
            found.push(Environment {
                name: last_folder(&op.path, "cluster"),
                path,
                found: format!("{} in {file}{pushed}", written.what),
                root: Root::Generated(root),
                artifact_root,
                nested: Vec::new(),
            });
        }
    }
    found
}

/// The root as the instance's `kustomize.patches` leave it: those that target a Flux
/// Kustomization, applied as kustomize applies `patches` (the operator builds what it
/// generates with them). A patch that cannot be applied leaves the root as generated.
fn patched(tree: &FileTree, file: &str, root: Value, patches: &[Value]) -> Value {
    let ours: Vec<Value> = patches
        .iter()
        .filter(|p| {
            let kind = p.at_pointer("/target/kind").and_then(Value::as_str);
            let text = p.get("patch").and_then(Value::as_str).unwrap_or("");
            match kind {
                Some(kind) => kind == "Kustomization",
                None => text.contains("Kustomization"),
            }
        })
        .cloned()
        .collect();
    if ours.is_empty() {
        return root;
    }
    let mut k = Map::new();
    k.insert("patches".into(), Value::Array(ours));
    let dir = file.rsplit_once('/').map_or("", |(dir, _)| dir);
    let what = format!("{file} (the instance's kustomize.patches)");
    match crate::kustomize::Builder::owners_only(tree).transform_objects(
        &what,
        dir,
        &k,
        vec![root.clone()],
    ) {
        Ok(mut out) if out.len() == 1 => out.remove(0),
        _ => root,
    }
}

/// Where the sync's `path` is in this repository, and the folder its source's artifact is
/// made of: the repository itself when the path is there. An OCI artifact or a Bucket is
/// made of a folder of the repository (`flux push artifact --path=DIR`, `flux push artifact`
/// being how a repository's own workflow publishes it): the folder a workflow pushes that
/// holds the path, else the one folder of the repository that holds it. None when no folder
/// or several do.
fn located(tree: &FileTree, op: &OperatorSync) -> Option<(String, String)> {
    if tree.is_dir(&op.path) {
        return Some((op.path.clone(), String::new()));
    }
    if !matches!(op.kind, SourceKind::OCIRepository | SourceKind::Bucket) {
        return None;
    }
    let holds = |root: &str| join(root, &op.path).filter(|p| !p.is_empty() && tree.is_dir(p));
    let mut roots: BTreeSet<String> = pushed_folders(tree)
        .into_iter()
        .filter(|root| holds(root).is_some())
        .collect();
    if roots.is_empty() && !op.path.is_empty() {
        let inner = format!("/{}/", op.path);
        roots = tree
            .files()
            .filter_map(|(file, _)| file.find(&inner).map(|at| file[..at].to_string()))
            .collect();
    }
    match roots.len() {
        1 => {
            let root = roots.pop_first()?;
            Some((holds(&root)?, root))
        }
        _ => None,
    }
}

/// The folders the repository's GitHub workflows push as OCI artifacts: the `--path` of
/// each `flux push artifact` command (its continuation lines included), when it is written
/// out rather than made of expressions.
fn pushed_folders(tree: &FileTree) -> BTreeSet<String> {
    static COMMAND: OnceLock<Option<(regex::Regex, regex::Regex)>> = OnceLock::new();
    let Some((command, path)) = COMMAND
        .get_or_init(|| {
            Some((
                regex::Regex::new(r"flux\s+push\s+artifact(?:[^\n]*\\[ \t]*\r?\n)*[^\n]*").ok()?,
                regex::Regex::new(r#"--path[= ]\s*["']?([^\s"'\\]+)"#).ok()?,
            ))
        })
        .as_ref()
    else {
        return BTreeSet::new();
    };
    tree.files_under(".github/workflows")
        .filter(|f| crate::fs::is_manifest(f))
        .filter_map(|f| tree.read(f))
        .flat_map(|text| {
            command
                .find_iter(&text)
                .filter_map(|c| Some(path.captures(c.as_str())?[1].to_string()))
                .collect::<Vec<_>>()
        })
        .filter(|p| !p.contains('$') && !p.starts_with('/'))
        .map(|p| normalize_path(&p))
        .collect()
}

/// A sync as a manifest declares it, before the values it reads from other files are known.
#[derive(Debug)]
struct Declared {
    /// The instance written inline: `sync` and `kustomize` of a FluxInstance's `spec`, or a
    /// HelmRelease's `spec.values.instance`.
    inline: Map<String, Value>,
    /// A HelmRelease's `valuesFrom`, in order: kind, name and `valuesKey`; none with a
    /// `targetPath` (which places a single value elsewhere).
    values_from: Vec<(String, String, String)>,
    /// The namespace the operator creates the root in.
    namespace: String,
    what: &'static str,
}

/// What the sync says once its values are merged.
struct OperatorSync {
    /// Its `path`, normalised.
    path: String,
    name: String,
    /// The kind of its source.
    kind: SourceKind,
    /// The instance's `kustomize.patches`: the operator applies them to every object it
    /// generates, the root Kustomization among them (`spec.decryption`, `postBuild`).
    patches: Vec<Value>,
}

impl Declared {
    /// The sync, its `valuesFrom` read from the generators of `file`'s folder and merged
    /// under the inline values; None without a path.
    fn resolve(&self, tree: &FileTree, file: &str) -> Option<OperatorSync> {
        let mut instance = Map::new();
        let dir = file.rsplit_once('/').map_or("", |(dir, _)| dir);
        for (kind, name, key) in &self.values_from {
            if let Some(from) = generated_instance(tree, dir, kind, name, key) {
                merge_values(&mut instance, &from);
            }
        }
        merge_values(&mut instance, &self.inline);
        let sync = instance.get("sync")?.as_object()?;
        let patches = instance
            .get("kustomize")
            .and_then(|k| k.get("patches"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let path = normalize_path(sync.get("path")?.as_str()?);
        let name = sync
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or(&self.namespace)
            .to_string();
        let kind = sync
            .get("kind")
            .and_then(Value::as_str)
            .map_or(SourceKind::GitRepository, SourceKind::parse);
        Some(OperatorSync {
            path,
            name,
            kind,
            patches,
        })
    }
}

/// `from` merged into `into` as helm-controller merges values (`chartutil.MergeMaps`): a
/// mapping into a mapping key by key, anything else in place of what was there.
fn merge_values(into: &mut Map<String, Value>, from: &Map<String, Value>) {
    for (k, v) in from {
        match (into.get_mut(k), v) {
            (Some(Value::Object(a)), Value::Object(b)) => merge_values(a, b),
            _ => {
                into.insert(k.clone(), v.clone());
            }
        }
    }
}

/// The syncs the documents of `text` (the manifest `file`) declare; none when it does not
/// parse. Each text is parsed once (`PerText`): a history hands discovery hundreds of trees
/// that share most of their files.
fn declared(file: &str, text: &Text) -> Arc<Vec<Declared>> {
    static READ: PerText<Vec<Declared>> = PerText::new();
    READ.get(text, || {
        let Ok(docs) = yaml::parse_all(file, text) else {
            return Vec::new();
        };
        docs.iter()
            .flat_map(|doc| resource_set_items(doc).unwrap_or(std::slice::from_ref(doc)))
            .filter_map(declared_in)
            .collect()
    })
}

/// The objects a Flux Operator `ResourceSet` lists in `spec.resources` (it applies each,
/// once per input; a sync is read from them as written); `None` for any other document.
fn resource_set_items(doc: &Value) -> Option<&[Value]> {
    let api = doc.get("apiVersion")?.as_str()?;
    if doc.get("kind")?.as_str()? != "ResourceSet" || !api.starts_with("fluxcd.controlplane.io/") {
        return None;
    }
    doc.at_pointer("/spec/resources")?
        .as_array()
        .map(Vec::as_slice)
}

/// A FluxInstance's `spec.sync`, or a HelmRelease's `values.instance.sync` and
/// `valuesFrom`, with the namespace the operator creates the root in.
fn declared_in(doc: &Value) -> Option<Declared> {
    let api = doc.get("apiVersion")?.as_str()?;
    let kind = doc.get("kind")?.as_str()?;
    let namespace = |ns: Option<&Value>| {
        ns.and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .unwrap_or("flux-system")
            .to_string()
    };
    let object = |v: Option<&Value>| v.and_then(Value::as_object).cloned().unwrap_or_default();
    if kind == "FluxInstance" && api.starts_with("fluxcd.controlplane.io/") {
        doc.at_pointer("/spec/sync")?;
        let spec = object(doc.get("spec"));
        let inline = spec
            .into_iter()
            .filter(|(k, _)| k == "sync" || k == "kustomize")
            .collect();
        return Some(Declared {
            inline,
            values_from: Vec::new(),
            namespace: namespace(doc.at_pointer("/metadata/namespace")),
            what: "a FluxInstance",
        });
    }
    if kind != "HelmRelease" || !api.starts_with("helm.toolkit.fluxcd.io/") {
        return None;
    }
    let values_from: Vec<(String, String, String)> = doc
        .at_pointer("/spec/valuesFrom")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|r| r.get("targetPath").is_none())
        .filter_map(|r| {
            let text = |k: &str| r.get(k).and_then(Value::as_str).map(String::from);
            let key = text("valuesKey").unwrap_or_else(|| "values.yaml".to_string());
            Some((text("kind")?, text("name")?, key))
        })
        .collect();
    let inline = doc.at_pointer("/spec/values/instance");
    if doc.at_pointer("/spec/values/instance/sync").is_none() && values_from.is_empty() {
        return None;
    }
    // The chart makes the FluxInstance in the release's namespace.
    let ns = doc
        .at_pointer("/spec/targetNamespace")
        .or(doc.at_pointer("/metadata/namespace"));
    Some(Declared {
        inline: object(inline),
        values_from,
        namespace: namespace(ns),
        what: "a flux-instance HelmRelease",
    })
}

/// `instance` of the values that the generator of `dir`'s kustomization named `name`
/// (a `configMapGenerator` for a ConfigMap, a `secretGenerator` for a Secret) makes of the
/// file it reads at `key` (`files: [key=path]`, or `[path]` keyed by its file name).
fn generated_instance(
    tree: &FileTree,
    dir: &str,
    kind: &str,
    name: &str,
    key: &str,
) -> Option<Arc<Map<String, Value>>> {
    let generators = match kind {
        "ConfigMap" => "configMapGenerator",
        "Secret" => "secretGenerator",
        _ => return None,
    };
    let (k_file, k_text) = crate::kustomize::KUSTOMIZATION_FILES
        .iter()
        .filter_map(|f| join(dir, f))
        .find_map(|f| tree.read(&f).map(|t| (f, t)))?;
    let docs = yaml::parse_all(&k_file, &k_text).ok()?;
    let generator = docs
        .first()?
        .get(generators)?
        .as_array()?
        .iter()
        .find(|g| g.get("name").and_then(Value::as_str) == Some(name))?;
    let source = generator
        .get("files")?
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .find_map(|entry| match entry.split_once('=') {
            Some((k, path)) => (k == key).then_some(path),
            None => (entry.rsplit('/').next() == Some(key)).then_some(entry),
        })?;
    let file = normalize_path(&join(dir, source)?);
    let text = tree.read(&file)?;
    static READ: PerText<Option<Map<String, Value>>> = PerText::new();
    let sync = READ.get(&text, || {
        let docs = yaml::parse_all(&file, &text).ok()?;
        docs.first()?.at_pointer("/instance")?.as_object().cloned()
    });
    sync.as_ref().clone().map(Arc::new)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The operator applies the instance's `kustomize.patches` to what it generates: one
    /// that targets the root Kustomization gives it `spec.decryption` and `postBuild`
    /// (flux-operator's documented way to have the root decrypt and substitute); one for
    /// the controllers' Deployments leaves it alone. Read from generated values too.
    #[test]
    fn the_instances_patches_of_the_root_kustomization_are_applied() {
        let values = "instance:\n  sync: {kind: GitRepository, url: 'https://example.org/fleet', ref: refs/heads/main, path: clusters/dev}\n  kustomize:\n    patches:\n      - target: {kind: Deployment}\n        patch: |\n          - {op: add, path: /spec/replicas, value: 2}\n      - target: {kind: Kustomization, name: flux-system}\n        patch: |\n          apiVersion: kustomize.toolkit.fluxcd.io/v1\n          kind: Kustomization\n          metadata: {name: flux-system, namespace: flux-system}\n          spec:\n            decryption: {provider: sops}\n            postBuild:\n              substituteFrom: [{kind: ConfigMap, name: cluster-settings}]\n";
        let release = "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: flux-instance, namespace: flux-system}\nspec:\n  valuesFrom: [{kind: ConfigMap, name: values}]\n";
        let instance = format!(
            "apiVersion: fluxcd.controlplane.io/v1\nkind: FluxInstance\nmetadata: {{name: flux, namespace: flux-system}}\nspec:\n{}",
            values.replace("instance:\n", "")
        );
        for tree in [
            FileTree::from_files([
                ("op/helmrelease.yaml", release),
                (
                    "op/kustomization.yaml",
                    "configMapGenerator: [{name: values, files: [values.yaml]}]\n",
                ),
                ("op/values.yaml", values),
                ("clusters/dev/ks.yaml", "a: b\n"),
            ]),
            FileTree::from_files([
                ("op/instance.yaml", instance.as_str()),
                ("clusters/dev/ks.yaml", "a: b\n"),
            ]),
        ] {
            let envs = roots(&tree);
            assert_eq!(envs.len(), 1);
            let Root::Generated(root) = &envs[0].root else {
                panic!("{:?}", envs[0].root)
            };
            assert_eq!(root["spec"]["decryption"]["provider"], "sops", "{root}");
            assert_eq!(
                root["spec"]["postBuild"]["substituteFrom"][0]["name"],
                "cluster-settings"
            );
            assert_eq!(root["spec"]["path"], "clusters/dev");
            assert!(root["spec"].get("replicas").is_none(), "{root}");
        }
    }

    /// helm-controller merges `valuesFrom` in order and `spec.values` over them; a reference
    /// is read at its `valuesKey`, `values.yaml` by default, and one with `targetPath` is not
    /// a values document.
    #[test]
    fn values_from_generated_files_merge_under_the_inline_values() {
        let release = "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: flux-instance, namespace: flux-system}\nspec:\n  valuesFrom:\n    - {kind: ConfigMap, name: base}\n    - {kind: Secret, name: extra, valuesKey: sync.yaml}\n    - {kind: ConfigMap, name: base, targetPath: instance.sync.path}\n  values:\n    instance:\n      sync: {name: home}\n";
        let kustomization = "configMapGenerator:\n  - name: base\n    files: [values.yaml=./helm/values.yaml]\nsecretGenerator:\n  - name: extra\n    files: [./helm/sync.yaml]\n";
        let tree = FileTree::from_files([
            ("k/app/helmrelease.yaml", release),
            ("k/app/kustomization.yaml", kustomization),
            (
                "k/app/helm/values.yaml",
                "instance:\n  sync: {kind: OCIRepository, path: k/old, name: other}\n",
            ),
            (
                "k/app/helm/sync.yaml",
                "instance:\n  sync: {path: k/cluster}\n",
            ),
            ("k/cluster/ks.yaml", "a: b\n"),
        ]);
        let envs = roots(&tree);
        assert_eq!(envs.len(), 1);
        assert_eq!(envs[0].path, "k/cluster");
        let Root::Generated(root) = &envs[0].root else {
            panic!("{:?}", envs[0].root)
        };
        assert_eq!(root["metadata"]["name"], "home");
        assert_eq!(root["spec"]["sourceRef"]["kind"], "OCIRepository");
    }
}
