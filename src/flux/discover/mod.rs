//! Where a repository's Flux environments are, found the way the common layouts put them, so
//! that a repository needs no configuration. An environment is an entry folder and the root
//! Kustomization that applies it (the one the cluster was bootstrapped with). In order, the
//! first rule that names an entry folder names its environment:
//!
//! 1. `--env NAME=PATH` on the command line, when given: those only.
//! 2. `clusters.environments` of `fluxwave.yaml`, when it lists them: those only.
//! 3. `flux bootstrap`: every `<dir>/flux-system/gotk-sync.yaml`. The environment is named
//!    after `<dir>`'s last folder; its entry is the `spec.path` of the sync file's
//!    Kustomization (bootstrap writes `<dir>`), and that Kustomization is its root. So is a
//!    root written elsewhere (`flux create ... --export`, `flux bootstrap --namespace`): a
//!    Kustomization reading a GitRepository, OCIRepository or Bucket declared in the same
//!    file, at a `spec.path` that holds the file, in a file named `gotk-sync.yaml` or in
//!    namespace `flux-system`; the environment is named after the path's last folder. A
//!    sync file that holds nothing but comments is the placeholder a repository keeps until
//!    `flux bootstrap --path=<dir>` writes it: its root is assumed as bootstrap writes it.
//! 4. Flux Operator: a `FluxInstance` (`fluxcd.controlplane.io`) with `spec.sync.path`, or a
//!    HelmRelease of the flux-instance chart whose values set `instance.sync.path`, inline or
//!    through `valuesFrom` from a file a generator of its folder reads (`operator.rs`). The
//!    operator creates the root as its sync template writes it: a Kustomization named
//!    `spec.sync.name` or else the instance's namespace, in that namespace, `prune: true`,
//!    reading the `spec.sync.kind` source of the same name. The environment is named after
//!    the path's last folder. Either may be listed in a `ResourceSet`'s `spec.resources`. An
//!    OCI artifact (or a Bucket) whose `path` is not a folder of the repository is taken to
//!    be made of the folder a workflow pushes (`flux push artifact --path=DIR`), else of the
//!    one folder holding the path (`Environment::artifact_root`).
//! 5. Every folder `clusters/<env>` (but `clusters/base`) holding a kustomization, or Flux
//!    objects without one (Flux generates the kustomization then); its root is assumed as
//!    `flux bootstrap` writes it. Not a folder that a Kustomization written under the entry
//!    of a root of rules 3 and 4 applies, in either tree: a hub's spokes are in its build.
//! 6. A `flux/cluster` folder of Flux Kustomizations (the per-app `ks.yaml` layout, when its
//!    FluxInstance is installed from outside the repository), as environment `cluster`.
//!
//! A root found inside another's entry is a second root of that cluster (`nest`).
//!
//! A folder that does not exist in the tree is no entry. Discovery reads every tree it is
//! given (both revisions of a cutover), so an environment added or removed by the change is
//! still compared with the other side.

mod operator;

use std::sync::Arc;

use memchr::memmem;
use serde_json::{json, Value};

use super::source::SOURCE_GROUP;
use super::{normalize_path, Kustomization, SourceKind, SourceRef, KUSTOMIZE_GROUP};
use crate::config::Config;
use crate::fs::{is_manifest, join};
use crate::tree::FileTree;
use crate::yaml::{self, PerText, Text};

/// One Flux environment: an entry folder and the root Kustomization that applies it.
#[derive(Debug, Clone, PartialEq)]
pub struct Environment {
    pub name: String,
    /// The entry folder, relative to the repository root, normalised.
    pub path: String,
    /// How it was found, for messages: the rule and the file.
    pub found: String,
    pub root: Root,
    /// The folder of the repository its root's source is made of, when that is not the
    /// repository's root: an OCI artifact pushed from a folder (`flux push artifact
    /// --path=kubernetes`). Every `spec.path` of a Kustomization reading the root's source is
    /// read under it. Empty for the repository itself.
    pub artifact_root: String,
    /// The sources of the roots found inside its entry (`nest`): a second root of the same
    /// cluster, such as a Flux Operator's sync beside a root written in the repository, reads
    /// this repository too, and so does a Kustomization that reads its source.
    pub nested: Vec<SourceRef>,
}

/// The root Kustomization of an environment.
#[derive(Debug, Clone, PartialEq)]
pub enum Root {
    /// Written in the repository (`flux bootstrap`'s gotk-sync file): the file and the
    /// document's index among its non-empty documents. Each revision reads its own copy when
    /// it has the file; `object` is the copy of the revision that found it.
    Written {
        file: String,
        index: usize,
        object: Value,
    },
    /// Made by the cluster, not written here (Flux Operator's sync).
    Generated(Value),
    /// Assumed as `flux bootstrap` writes it: `flux-system`, `prune: true`, at the entry.
    Assumed,
}

impl Environment {
    /// An environment named by configuration: bootstrap's sync file in `path/flux-system` is
    /// its root when `tree` has one, else a root written elsewhere under `path` whose
    /// `spec.path` is `path` (rule 3).
    pub fn configured(tree: &FileTree, name: &str, path: &str, found: &str) -> Environment {
        let path = normalize_path(path);
        let bootstrap = join(&path, "flux-system/gotk-sync.yaml").unwrap_or_default();
        let sync = if tree.is_file(&bootstrap) {
            bootstrap
        } else {
            written_under(tree, &path).unwrap_or(bootstrap)
        };
        let root = written_root(tree, &sync, Some(&path))
            .map(|(index, object)| Root::Written {
                file: sync,
                index,
                object,
            })
            .unwrap_or(Root::Assumed);
        Environment {
            name: name.to_string(),
            path,
            found: found.to_string(),
            root,
            artifact_root: String::new(),
            nested: Vec::new(),
        }
    }
}

/// The environments of `trees` (the first is the newest): see the module's rules. `config`
/// is the fluxwave.yaml in force; `overrides` come from `--env NAME=PATH`.
pub fn environments(
    trees: &[&FileTree],
    config: Option<&Config>,
    overrides: &[(String, String)],
) -> Vec<Environment> {
    environments_reusing(trees, &mut vec![None; trees.len()], config, overrides)
}

/// `environments`, with the roots written in each tree (rules 3 and 4) taken from `known`
/// (one for each tree) where they are there, and left there where they are worked out: a
/// history's step finds those of its newer tree for the next step, whose older tree it is.
pub fn environments_reusing(
    trees: &[&FileTree],
    known: &mut [Option<Vec<Environment>>],
    config: Option<&Config>,
    overrides: &[(String, String)],
) -> Vec<Environment> {
    let first = trees.first().copied();
    let configured = |pairs: Vec<(String, String)>, found: &str| -> Vec<Environment> {
        pairs
            .into_iter()
            .map(|(name, path)| match first {
                Some(tree) => Environment::configured(tree, &name, &path, found),
                None => Environment::configured(&FileTree::default(), &name, &path, found),
            })
            .collect()
    };
    if !overrides.is_empty() {
        return configured(overrides.to_vec(), "--env");
    }
    if let Some(c) = config.filter(|c| c.environments_configured) {
        let pairs = c
            .environments
            .iter()
            .map(|e| (e.name.clone(), e.path.clone()))
            .collect();
        return configured(pairs, "clusters.environments in fluxwave.yaml");
    }
    // A folder a root applies in either revision is no root of its own (rule 5).
    let roots: Vec<Vec<Environment>> = trees
        .iter()
        .enumerate()
        .map(|(i, t)| match known.get_mut(i) {
            Some(known) => known.get_or_insert_with(|| roots(t)).clone(),
            None => roots(t),
        })
        .collect();
    let applied: Vec<(String, String)> = trees
        .iter()
        .zip(&roots)
        .flat_map(|(tree, found)| applied_folders(tree, found))
        .collect();
    let mut found: Vec<Environment> = Vec::new();
    for (tree, roots) in trees.iter().zip(roots) {
        for env in folders(tree, roots, &applied) {
            if found.iter().any(|e| e.path == env.path) {
                continue;
            }
            let mut env = env;
            if found.iter().any(|e| e.name == env.name) {
                env.name = env.path.replace('/', "-");
            }
            found.push(env);
        }
    }
    let mut found = nest(found);
    found.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

/// `found` with each environment whose entry is inside another's (not the repository's root)
/// made part of the outermost one: the outer root's build reaches the inner entry's
/// Kustomizations, so both roots reconcile one cluster, and a Kustomization reading either
/// root's source reads this repository (`Environment::nested`). A repository moving from a
/// root written in it (`kubernetes/flux`, reading GitRepository `home-kubernetes`) to a Flux
/// Operator's sync of a folder inside it (`kubernetes/flux/cluster`, reading `flux-system`)
/// has both while its apps read either.
fn nest(found: Vec<Environment>) -> Vec<Environment> {
    let outer_of = |env: &Environment| {
        found
            .iter()
            .enumerate()
            .filter(|(_, o)| !o.path.is_empty() && o.path != env.path && within(&env.path, &o.path))
            .min_by_key(|(_, o)| o.path.len())
            .map(|(i, _)| i)
    };
    let outer: Vec<Option<usize>> = found.iter().map(outer_of).collect();
    let mut kept: Vec<Option<Environment>> = found.into_iter().map(Some).collect();
    for (inner, outer) in outer.iter().enumerate() {
        let Some(outer) = *outer else { continue };
        let Some(env) = kept[inner].take() else {
            continue;
        };
        let Some(into) = kept[outer].as_mut() else {
            continue;
        };
        let own = root_source(into);
        for source in std::iter::once(root_source(&env)).chain(env.nested) {
            if source != own && !into.nested.contains(&source) {
                into.nested.push(source);
            }
        }
        into.found = format!(
            "{}; with the root at {} ({}) inside it, of the same cluster",
            into.found, env.path, env.found
        );
    }
    kept.into_iter().flatten().collect()
}

/// The source the root of `env` reads, its namespace resolved.
fn root_source(env: &Environment) -> SourceRef {
    let bootstrap = SourceRef::new(SourceKind::GitRepository, "flux-system", "flux-system");
    let object = match &env.root {
        Root::Written { object, .. } | Root::Generated(object) => object,
        Root::Assumed => return bootstrap,
    };
    Kustomization::from_value(object).map_or(bootstrap, |k| root_reads(&k).1)
}

/// The namespace of root Kustomization `k` (`flux-system`, where a root is made, when it
/// names none) and the source it reads there.
fn root_reads(k: &Kustomization) -> (&str, SourceRef) {
    let namespace = if k.namespace.is_empty() {
        "flux-system"
    } else {
        k.namespace.as_str()
    };
    (namespace, k.spec.source_ref.in_namespace(namespace))
}

/// Which of the words that mark a file discovery reads a text holds, found once per text
/// (`PerText`): a history reads every manifest of each revision, and most are the previous
/// revision's.
#[derive(Debug, Clone, Copy)]
struct Marks {
    /// `kustomize.toolkit.fluxcd.io`
    kustomize: bool,
    /// `source.toolkit.fluxcd.io`
    source: bool,
    /// `FluxInstance` or `HelmRelease` (`operator::roots`)
    operator: bool,
}

impl Marks {
    fn of(text: &Text) -> Marks {
        static FOUND: PerText<Marks> = PerText::new();
        *FOUND.get(text, || {
            let has = |word: &str| memmem::find(text.as_bytes(), word.as_bytes()).is_some();
            Marks {
                kustomize: has(KUSTOMIZE_GROUP),
                source: has(SOURCE_GROUP),
                operator: has("FluxInstance") || has("HelmRelease"),
            }
        })
    }
}

/// Where the rules looked, for the message that says none was found.
pub const WHERE_LOOKED: &str = "clusters.environments in fluxwave.yaml, <dir>/flux-system/gotk-sync.yaml (flux bootstrap) or another file declaring a GitRepository and the Kustomization that reads it inside its own spec.path, a FluxInstance's spec.sync.path or a flux-instance HelmRelease's instance.sync.path, inline or in a generated valuesFrom (Flux Operator), folders clusters/<env> with a kustomization or Flux objects (that no root applies), and a flux/cluster folder of Flux Kustomizations";

/// Adds `env` to `found` unless an environment has its entry already.
fn add(found: &mut Vec<Environment>, env: Environment) {
    if !found.iter().any(|e| e.path == env.path) {
        found.push(env);
    }
}

/// The environments of one tree by rules 3 and 4: the roots written in it.
fn roots(tree: &FileTree) -> Vec<Environment> {
    let mut found: Vec<Environment> = Vec::new();
    // 3. flux bootstrap.
    for (file, _) in tree.files() {
        let Some(dir) = file
            .strip_suffix("flux-system/gotk-sync.yaml")
            .filter(|d| d.is_empty() || d.ends_with('/'))
        else {
            continue;
        };
        let dir = dir.trim_end_matches('/');
        let Some((index, object)) = written_root(tree, file, Some(dir)) else {
            // A sync file that declares nothing is the placeholder a repository keeps until
            // `flux bootstrap --path=<dir>` writes the sync of `<dir>` there.
            if is_placeholder(tree, file) && tree.is_dir(dir) {
                let name = last_folder(dir, "flux-system");
                let found_by = format!("flux bootstrap's placeholder {file}");
                add(
                    &mut found,
                    Environment::configured(tree, &name, dir, &found_by),
                );
            }
            continue;
        };
        let path = Kustomization::from_value(&object)
            .map(|k| k.spec.path)
            .unwrap_or_else(|| dir.to_string());
        if !tree.is_dir(&path) {
            continue;
        }
        add(
            &mut found,
            Environment {
                name: last_folder(dir, "flux-system"),
                path,
                found: format!("flux bootstrap's {file}"),
                root: Root::Written {
                    file: file.to_string(),
                    index,
                    object,
                },
                artifact_root: String::new(),
                nested: Vec::new(),
            },
        );
    }
    // 3. A root written elsewhere: a Kustomization reading a source declared beside it, in a
    // folder it applies (`flux create ... --export`, or bootstrap's file moved).
    for (file, text) in tree.manifests() {
        let marks = Marks::of(text);
        if !marks.kustomize || !marks.source {
            continue;
        }
        for path in written_syncs(file, text).iter() {
            if !tree.is_dir(path) {
                continue;
            }
            let Some((index, object)) = written_root(tree, file, Some(path)) else {
                continue;
            };
            add(
                &mut found,
                Environment {
                    name: last_folder(path, "flux-system"),
                    path: path.clone(),
                    found: format!("the root Kustomization written in {file}"),
                    root: Root::Written {
                        file: file.to_string(),
                        index,
                        object,
                    },
                    artifact_root: String::new(),
                    nested: Vec::new(),
                },
            );
        }
    }
    // 4. Flux Operator.
    for env in operator::roots(tree) {
        add(&mut found, env);
    }
    found
}

/// The environments of one tree: its `roots`, then rules 5 and 6. `applied` are the folders
/// the roots of every tree apply (`applied_folders`).
fn folders(
    tree: &FileTree,
    mut found: Vec<Environment>,
    applied: &[(String, String)],
) -> Vec<Environment> {
    // 5. clusters/<env>, unless a root applies it (a hub's spokes).
    let mut folders: Vec<&str> = Vec::new();
    for (file, text) in tree.files() {
        let Some(rest) = file.strip_prefix("clusters/") else {
            continue;
        };
        let Some((env, below)) = rest.split_once('/') else {
            continue;
        };
        if env == "base" || folders.last() == Some(&env) {
            continue;
        }
        let dir = format!("clusters/{env}");
        let dir = dir.as_str();
        let by_other = |(from, path): &(String, String)| within(path, dir) && !within(from, dir);
        if applied.iter().any(by_other) {
            continue;
        }
        let marks = crate::kustomize::KUSTOMIZATION_FILES.contains(&below)
            || (is_manifest(file) && memmem::find(text.as_bytes(), b"toolkit.fluxcd.io").is_some());
        if marks {
            folders.push(env);
        }
    }
    for env in folders {
        add(
            &mut found,
            Environment::configured(
                tree,
                env,
                &format!("clusters/{env}"),
                &format!("the folder clusters/{env}"),
            ),
        );
    }
    // 6. A flux/cluster folder of Flux Kustomizations.
    if found.is_empty() {
        for dir in ["kubernetes/flux/cluster", "flux/cluster"] {
            let holds_flux = tree.files_under(dir).any(|f| {
                is_manifest(f)
                    && tree.read(f).is_some_and(|t| {
                        memmem::find(t.as_bytes(), b"kustomize.toolkit.fluxcd.io").is_some()
                    })
            });
            if holds_flux {
                add(
                    &mut found,
                    Environment::configured(
                        tree,
                        "cluster",
                        dir,
                        &format!("the folder {dir} of Flux Kustomizations"),
                    ),
                );
                break;
            }
        }
    }
    found
}

/// The entries of the roots written in `file` (`text`) outside bootstrap's `flux-system`
/// folder: each Kustomization that reads a GitRepository, OCIRepository or Bucket declared in
/// the same file, at a `spec.path` that holds the file (it applies itself, as a root does:
/// flux2's `pkg/manifestgen/sync` `Generate` writes both objects to
/// `<path>/<namespace>/gotk-sync.yaml` with `spec.path: ./<path>`). Only a file named
/// `gotk-sync.yaml` or a Kustomization in `flux-system` (where the root is made) counts: a
/// tenant's sync (its own GitRepository, in its namespace) is a child of another build.
fn written_syncs(file: &str, text: &Text) -> Arc<Vec<String>> {
    static READ: PerText<Vec<String>> = PerText::new();
    READ.get(text, || {
        let Ok(docs) = yaml::parse_all(file, text) else {
            return Vec::new();
        };
        let sources: Vec<SourceRef> = docs.iter().filter_map(declared_source).collect();
        let named_sync = file.rsplit('/').next() == Some("gotk-sync.yaml");
        docs.iter()
            .filter_map(Kustomization::from_value)
            .filter(|k| {
                let (namespace, reads) = root_reads(k);
                (named_sync || namespace == "flux-system")
                    && !k.spec.path.is_empty()
                    && within(file, &k.spec.path)
                    && sources.iter().any(|s| s.in_namespace(namespace) == reads)
            })
            .map(|k| k.spec.path)
            .collect()
    })
}

/// The source a document declares, if it is one a Kustomization reads from a repository
/// (its namespace empty when it names none).
fn declared_source(doc: &Value) -> Option<SourceRef> {
    let api = doc.get("apiVersion")?.as_str()?;
    if !api.starts_with("source.toolkit.fluxcd.io/") {
        return None;
    }
    let kind = SourceKind::parse(doc.get("kind")?.as_str()?);
    if !matches!(
        kind,
        SourceKind::GitRepository | SourceKind::OCIRepository | SourceKind::Bucket
    ) {
        return None;
    }
    let meta = doc.get("metadata")?;
    let namespace = meta.get("namespace").and_then(Value::as_str).unwrap_or("");
    Some(SourceRef::new(kind, namespace, meta.get("name")?.as_str()?))
}

/// The first file under `path` (not the root) that writes a root at `path` (see
/// `written_syncs`).
fn written_under(tree: &FileTree, path: &str) -> Option<String> {
    if path.is_empty() {
        return None;
    }
    let source = memmem::Finder::new(SOURCE_GROUP);
    tree.files_under(path)
        .filter(|f| is_manifest(f))
        .find(|f| {
            tree.read(f).is_some_and(|text| {
                source.find(text.as_bytes()).is_some()
                    && written_syncs(f, &text).iter().any(|p| p == path)
            })
        })
        .map(String::from)
}

/// The `spec.path` of every Flux Kustomization written under the entry of an environment of
/// `found`, with its file: the folders those roots apply, which are no roots of their own.
fn applied_folders(tree: &FileTree, found: &[Environment]) -> Vec<(String, String)> {
    static READ: PerText<Vec<String>> = PerText::new();
    let mut applied = Vec::new();
    for (file, text) in tree.manifests() {
        if !found.iter().any(|e| within(file, &e.path)) || !Marks::of(text).kustomize {
            continue;
        }
        let paths = READ.get(text, || {
            yaml::parse_all(file, text)
                .unwrap_or_default()
                .iter()
                .filter_map(Kustomization::from_value)
                .map(|k| k.spec.path)
                .collect()
        });
        applied.extend(paths.iter().map(|p| (file.to_string(), p.clone())));
    }
    applied
}

/// Whether `path` is folder `dir` or below it (everything is below the root, `""`).
fn within(path: &str, dir: &str) -> bool {
    dir.is_empty()
        || path
            .strip_prefix(dir)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// The root Kustomization written in `file` of `tree`, as the kustomization of its folder
/// builds it (`source::root_documents`): the one at `path` when given and present, else the
/// first; with its index among the file's non-empty documents.
fn written_root(tree: &FileTree, file: &str, path: Option<&str>) -> Option<(usize, Value)> {
    // As the cluster holds it: bootstrap's customisation patches applied.
    let docs = super::source::root_documents(tree, file)?;
    let flux: Vec<(usize, &Value)> = docs
        .iter()
        .enumerate()
        .filter(|(_, d)| Kustomization::is(d))
        .collect();
    let at = |(_, d): &&(usize, &Value)| {
        Kustomization::from_value(d).is_some_and(|k| Some(k.spec.path.as_str()) == path)
    };
    flux.iter()
        .find(at)
        .or(flux.first())
        .map(|(i, d)| (*i, (*d).clone()))
}

/// Whether `file` holds no document but comments: a sync file `flux bootstrap` has yet to
/// write.
fn is_placeholder(tree: &FileTree, file: &str) -> bool {
    tree.read(file)
        .is_some_and(|text| matches!(yaml::parse_all(file, &text), Ok(docs) if docs.is_empty()))
}

/// The last folder of `path`, or `otherwise` for the repository root.
pub(super) fn last_folder(path: &str, otherwise: &str) -> String {
    path.rsplit('/')
        .find(|s| !s.is_empty())
        .unwrap_or(otherwise)
        .to_string()
}

/// The root Kustomization of `env` in `tree`: its written copy in this tree when the tree
/// has the file, else the copy discovery found, the operator's, or the assumed one.
pub fn root_in(tree: &FileTree, env: &Environment) -> Value {
    match &env.root {
        Root::Written {
            file,
            index: _,
            object,
        } => written_root(tree, file, Some(&env.path))
            .map(|(_, v)| v)
            .unwrap_or_else(|| object.clone()),
        Root::Generated(v) => v.clone(),
        Root::Assumed => json!({
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
            "kind": "Kustomization",
            "metadata": {"name": "flux-system", "namespace": "flux-system"},
            "spec": {"path": format!("./{}", env.path), "prune": true,
                     "sourceRef": {"kind": SourceKind::GitRepository.as_str(), "name": "flux-system"}},
        }),
    }
}

/// Where the root of `env` is written in `tree` (file and document index), if it is.
pub fn root_file(tree: &FileTree, env: &Environment) -> Option<(String, usize)> {
    match &env.root {
        Root::Written { file, .. } => {
            written_root(tree, file, Some(&env.path)).map(|(i, _)| (file.clone(), i))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(envs: &[Environment]) -> Vec<(&str, &str)> {
        envs.iter()
            .map(|e| (e.name.as_str(), e.path.as_str()))
            .collect()
    }

    const SYNC: &str = "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: flux-system, namespace: flux-system}\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: flux-system, namespace: flux-system}\nspec:\n  path: ./clusters/prod\n  prune: true\n  sourceRef: {kind: GitRepository, name: flux-system}\n";

    #[test]
    fn bootstrap_sync_files_and_cluster_folders() {
        let tree = FileTree::from_files([
            ("clusters/base/kustomization.yaml", ""),
            ("clusters/prod/flux-system/gotk-sync.yaml", SYNC),
            ("clusters/prod/apps.yaml", ""),
            ("clusters/staging/kustomization.yaml", ""),
            // Flux objects without a kustomization: Flux generates one.
            (
                "clusters/lab/infra.yaml",
                "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n",
            ),
            ("clusters/notes/readme.yaml", "a: b\n"),
        ]);
        let envs = environments(&[&tree], None, &[]);
        assert_eq!(
            names(&envs),
            [
                ("lab", "clusters/lab"),
                ("prod", "clusters/prod"),
                ("staging", "clusters/staging")
            ]
        );
        let prod = &envs[1];
        assert!(matches!(&prod.root, Root::Written { index: 1, .. }));
        assert_eq!(envs[0].root, Root::Assumed);
    }

    #[test]
    fn flux_operator_instances_and_chart_values() {
        let instance = "apiVersion: fluxcd.controlplane.io/v1\nkind: FluxInstance\nmetadata: {name: flux, namespace: flux-system}\nspec:\n  sync: {kind: GitRepository, url: x, ref: main, path: kubernetes/flux/cluster}\n";
        let tree = FileTree::from_files([
            ("kubernetes/apps/flux/instance.yaml", instance),
            ("kubernetes/flux/cluster/ks.yaml", "a: b\n"),
        ]);
        let envs = environments(&[&tree], None, &[]);
        assert_eq!(names(&envs), [("cluster", "kubernetes/flux/cluster")]);
        let root = root_in(&tree, &envs[0]);
        let k = Kustomization::from_value(&root).unwrap();
        assert_eq!(
            (k.name.as_str(), k.spec.path.as_str(), k.spec.prune),
            ("flux-system", "kubernetes/flux/cluster", true)
        );
        let release = "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: flux-instance}\nspec:\n  values:\n    instance:\n      sync: {kind: GitRepository, path: k8s/flux/cluster, name: home}\n";
        let tree = FileTree::from_files([
            ("k8s/apps/flux-instance/helmrelease.yaml", release),
            ("k8s/flux/cluster/ks.yaml", "a: b\n"),
        ]);
        let envs = environments(&[&tree], None, &[]);
        assert_eq!(names(&envs), [("cluster", "k8s/flux/cluster")]);
        let k = Kustomization::from_value(&root_in(&tree, &envs[0])).unwrap();
        assert_eq!(
            (k.name.as_str(), k.namespace.as_str()),
            ("home", "flux-system")
        );
    }

    #[test]
    fn a_sync_path_outside_the_tree_is_no_environment() {
        let instance = "apiVersion: fluxcd.controlplane.io/v1\nkind: FluxInstance\nmetadata: {name: flux}\nspec:\n  sync: {kind: OCIRepository, path: ./elsewhere}\n";
        let tree = FileTree::from_files([("flux/instance.yaml", instance)]);
        assert!(environments(&[&tree], None, &[]).is_empty());
    }

    #[test]
    fn either_revision_names_an_environment() {
        let old = FileTree::from_files([("clusters/dev/kustomization.yaml", "")]);
        let sync = SYNC.replace("prod", "dev");
        let new = FileTree::from_files([
            ("clusters/dev/flux-system/gotk-sync.yaml", sync.as_str()),
            ("clusters/dev/kustomization.yaml", ""),
            ("clusters/prod/kustomization.yaml", ""),
        ]);
        let envs = environments(&[&new, &old], None, &[]);
        assert_eq!(
            names(&envs),
            [("dev", "clusters/dev"), ("prod", "clusters/prod")]
        );
        // The old revision has no sync file: it is read as the new one writes it.
        assert!(matches!(envs[0].root, Root::Written { .. }));
        let k = Kustomization::from_value(&root_in(&old, &envs[0])).unwrap();
        assert_eq!(k.spec.path, "clusters/dev");
    }

    #[test]
    fn configuration_and_overrides_come_first() {
        let tree = FileTree::from_files([("clusters/dev/kustomization.yaml", "")]);
        let over = [("lab".to_string(), "./clusters/lab/".to_string())];
        assert_eq!(
            names(&environments(&[&tree], None, &over)),
            [("lab", "clusters/lab")]
        );
        let text = yaml::Text::new(
            "clusters:\n  environments: [{name: x, path: clusters/x}]\n".to_string(),
        );
        let config = Config::parse(&text).unwrap();
        assert_eq!(
            names(&environments(&[&tree], Some(&config), &[])),
            [("x", "clusters/x")]
        );
        // A fluxwave.yaml that lists no environments leaves them to discovery.
        let config = Config::parse(&yaml::Text::new("catalog: catalog\n".to_string())).unwrap();
        assert_eq!(
            names(&environments(&[&tree], Some(&config), &[])),
            [("dev", "clusters/dev")]
        );
    }

    #[test]
    fn a_root_written_anywhere_applies_itself_and_its_spokes_are_no_roots() {
        let hub = SYNC.replace("./clusters/prod", "./hub");
        let spoke = "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: apps, namespace: prod}\nspec:\n  path: ./clusters/prod\n  sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}\n";
        // A tenant's own sync (its namespace, another repository, no path) is no root.
        let tenant = "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: team, namespace: team}\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: team, namespace: team}\nspec:\n  sourceRef: {kind: GitRepository, name: team}\n";
        // A Kustomization whose source is not beside it is no root either.
        let other = hub.replace("name: flux-system}", "name: elsewhere}");
        let tree = FileTree::from_files([
            ("hub/flux-system.yaml", hub.as_str()),
            ("hub/prod.yaml", spoke),
            ("clusters/prod/kustomization.yaml", ""),
            ("clusters/dev/kustomization.yaml", ""),
            ("tenants/team/sync.yaml", tenant),
            ("lab/sync.yaml", other.replace("./hub", "./lab").leak()),
        ]);
        let envs = environments(&[&tree], None, &[]);
        assert_eq!(names(&envs), [("dev", "clusters/dev"), ("hub", "hub")]);
        assert!(
            matches!(&envs[1].root, Root::Written { file, index: 1, .. } if file == "hub/flux-system.yaml")
        );
        // A spoke applied in the other revision only is still no root.
        let without = FileTree::from_files([
            ("hub/flux-system.yaml", hub.as_str()),
            ("clusters/prod/kustomization.yaml", ""),
        ]);
        let envs = environments(&[&without, &tree], None, &[]);
        assert_eq!(names(&envs), [("dev", "clusters/dev"), ("hub", "hub")]);
    }

    /// The hub-and-spoke layout before bootstrap: the hub's sync file is a placeholder, its
    /// spokes' Kustomizations are in `hub/*.yaml` and apply `clusters/<spoke>/...`.
    #[test]
    fn a_placeholder_sync_file_names_its_folder_and_its_spokes_are_no_roots() {
        let spoke = "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: apps, namespace: prod}\nspec:\n  path: ./clusters/prod/apps\n  sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}\n  kubeConfig: {secretRef: {name: cluster-kubeconfig}}\n";
        let tree = FileTree::from_files([
            (
                "hub/flux-system/gotk-sync.yaml",
                "# This file will be generated automatically by flux bootstrap.\n",
            ),
            ("hub/flux-system/kustomization.yaml", "resources: []\n"),
            ("hub/prod.yaml", spoke),
            ("clusters/prod/kustomization.yaml", ""),
            ("clusters/prod/apps/kustomization.yaml", ""),
        ]);
        let envs = environments(&[&tree], None, &[]);
        assert_eq!(names(&envs), [("hub", "hub")]);
        assert!(matches!(envs[0].root, Root::Assumed));
        // A sync file that declares something else is no placeholder.
        let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n";
        let tree = FileTree::from_files([
            ("hub/flux-system/gotk-sync.yaml", cm),
            ("hub/prod.yaml", spoke),
            ("clusters/prod/kustomization.yaml", ""),
            ("clusters/prod/apps/kustomization.yaml", ""),
        ]);
        assert_eq!(
            names(&environments(&[&tree], None, &[])),
            [("prod", "clusters/prod")]
        );
    }

    #[test]
    fn a_flux_cluster_folder_when_nothing_else_names_one() {
        let tree = FileTree::from_files([(
            "kubernetes/flux/cluster/ks.yaml",
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n",
        )]);
        assert_eq!(
            names(&environments(&[&tree], None, &[])),
            [("cluster", "kubernetes/flux/cluster")]
        );
    }
}
