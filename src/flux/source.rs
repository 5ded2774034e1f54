//! Flux sources: the kinds an object reads its artifact or chart from (`SourceKind`), a
//! reference to one (`SourceRef`), and what an environment's root Kustomization builds: the
//! artifact of its source, which is the revision's files less those source-controller leaves
//! out (`tree::ignore`). When the source is a GitRepository written beside the root
//! Kustomization (the `gotk-sync.yaml` of `flux bootstrap`), its `spec.ignore` is read too:
//! source-controller adds it after the `.sourceignore` files
//! (`GitRepositoryReconciler.reconcileArtifact`).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::kustomize::object::{group_of, ObjectId};
use crate::kustomize::Builder;
use crate::tree::FileTree;
use crate::yaml::Text;

/// The API group of Flux's sources (source-controller's `source.toolkit.fluxcd.io`).
pub const SOURCE_GROUP: &str = "source.toolkit.fluxcd.io";

/// The kind of a Flux source, as a `sourceRef` or `chartRef` names it. The kinds are those
/// the controllers read: kustomize-controller's `sourceRef` (`CrossNamespaceSourceReference`
/// in `api/v1/reference_types.go`: GitRepository, OCIRepository, Bucket, ExternalArtifact)
/// and helm-controller's chart sources (`api/v2/reference_types.go`: HelmRepository,
/// GitRepository or Bucket in `spec.chart.spec.sourceRef`, OCIRepository or HelmChart in
/// `spec.chartRef`). Any other text is kept as written, so that it is reported as it is.
#[derive(Debug, Clone)]
pub enum SourceKind {
    GitRepository,
    OCIRepository,
    Bucket,
    HelmRepository,
    HelmChart,
    /// Made by an ArtifactGenerator (`source.extensions.fluxcd.io`, see `flux::artifact`).
    ExternalArtifact,
    /// A kind no Flux controller reads as a source, as written (empty when none is): never
    /// the name of a kind above (`parse` makes it, and two kinds are equal by their names).
    Other(String),
}

impl SourceKind {
    /// The kinds Flux knows.
    pub const KNOWN: [SourceKind; 6] = [
        SourceKind::GitRepository,
        SourceKind::OCIRepository,
        SourceKind::Bucket,
        SourceKind::HelmRepository,
        SourceKind::HelmChart,
        SourceKind::ExternalArtifact,
    ];

    /// The kind `kind` names.
    pub fn parse(kind: &str) -> SourceKind {
        match kind {
            "GitRepository" => SourceKind::GitRepository,
            "OCIRepository" => SourceKind::OCIRepository,
            "Bucket" => SourceKind::Bucket,
            "HelmRepository" => SourceKind::HelmRepository,
            "HelmChart" => SourceKind::HelmChart,
            "ExternalArtifact" => SourceKind::ExternalArtifact,
            other => SourceKind::Other(other.to_string()),
        }
    }

    /// The kind as written.
    pub fn as_str(&self) -> &str {
        match self {
            SourceKind::GitRepository => "GitRepository",
            SourceKind::OCIRepository => "OCIRepository",
            SourceKind::Bucket => "Bucket",
            SourceKind::HelmRepository => "HelmRepository",
            SourceKind::HelmChart => "HelmChart",
            SourceKind::ExternalArtifact => "ExternalArtifact",
            SourceKind::Other(kind) => kind,
        }
    }

    /// Whether a Flux Kustomization can read its artifact from a source of this kind
    /// (kustomize-controller's `getSource`).
    pub fn kustomization_reads(&self) -> bool {
        match self {
            SourceKind::GitRepository
            | SourceKind::OCIRepository
            | SourceKind::Bucket
            | SourceKind::ExternalArtifact => true,
            SourceKind::HelmRepository | SourceKind::HelmChart | SourceKind::Other(_) => false,
        }
    }

    /// The kinds a Flux Kustomization can read, as a list in prose: `A, B, C or D`.
    pub fn kustomization_kinds() -> String {
        let kinds: Vec<&str> = SourceKind::KNOWN
            .iter()
            .filter(|k| k.kustomization_reads())
            .map(SourceKind::as_str)
            .collect();
        match kinds.split_last() {
            Some((last, [])) => (*last).to_string(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        }
    }
}

impl Default for SourceKind {
    /// No kind written.
    fn default() -> SourceKind {
        SourceKind::Other(String::new())
    }
}

impl PartialEq for SourceKind {
    fn eq(&self, other: &SourceKind) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for SourceKind {}

impl std::hash::Hash for SourceKind {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl fmt::Display for SourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for SourceKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<SourceKind, D::Error> {
        Ok(SourceKind::parse(&String::deserialize(d)?))
    }
}

/// A reference to a Flux source: a Flux Kustomization's `spec.sourceRef` as written (its
/// namespace empty when it names none), or with its namespace resolved (`Owner::source`).
/// Displays as `kind/namespace/name`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Deserialize)]
pub struct SourceRef {
    #[serde(default, deserialize_with = "super::lenient")]
    pub kind: SourceKind,
    #[serde(default, deserialize_with = "super::lenient")]
    pub namespace: String,
    #[serde(default, deserialize_with = "super::lenient")]
    pub name: String,
}

impl SourceRef {
    pub fn new(kind: SourceKind, namespace: &str, name: &str) -> SourceRef {
        SourceRef {
            kind,
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }

    /// The reference with its namespace defaulted to `namespace` when it names none
    /// (Flux's `CrossNamespaceSourceReference`).
    pub fn in_namespace(&self, namespace: &str) -> SourceRef {
        SourceRef {
            kind: self.kind.clone(),
            namespace: if self.namespace.is_empty() {
                namespace.to_string()
            } else {
                self.namespace.clone()
            },
            name: self.name.clone(),
        }
    }

    /// The id of the source object it names.
    pub fn id(&self) -> ObjectId {
        ObjectId {
            group: SOURCE_GROUP.into(),
            kind: self.kind.to_string(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            cluster: None,
        }
    }
}

impl fmt::Display for SourceRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.kind, self.namespace, self.name)
    }
}

/// The artifact of `tree` that a root Kustomization written in `file` (empty for an assumed
/// root) builds from its source.
pub fn artifact(tree: &FileTree, file: &str, source: &SourceRef) -> FileTree {
    tree.artifact(spec_ignore(tree, file, source).as_deref())
}

/// The documents of `file`, a root's sync file, as the cluster holds them: as the
/// kustomization of the file's folder builds them when it builds the file, else as written.
/// Bootstrap's documented customisation is `patches` in `flux-system/kustomization.yaml`
/// targeting the root GitRepository or Kustomization; the root applies its own entry, which
/// builds that kustomization, so the objects source-controller and kustomize-controller
/// reconcile are the patched ones (kustomize-controller `internal/controller/
/// kustomization_controller.go`, `reconcile`: build, then apply every object built). A
/// build that fails leaves the documents as written.
///
/// The folder holds bootstrap's `gotk-components.yaml` (half a megabyte of CRDs), and
/// discovery and every build of every revision ask for the root: an answer is kept with the
/// texts of the files its build read (`RootsRead`) and given again over a tree that holds the
/// same texts there.
pub fn root_documents(tree: &FileTree, file: &str) -> Option<Vec<Value>> {
    static KNOWN: RootsRead = RootsRead::new();
    if let Some(docs) = KNOWN.find(tree, file) {
        return docs;
    }
    let recording = tree.recording();
    let docs = read_root_documents(&recording, file);
    KNOWN.keep(tree, file, &recording, &docs);
    docs
}

/// The answers of `root_documents`, by file, the latest first, each with what its build read:
/// of every file it asked for, whether the tree has it and its text (`None` where it has
/// none, or none kustomize can read); of every folder it asked about (a `resources` entry
/// that is no file is looked for as a folder), whether the tree has it and the files under it.
struct RootsRead(Mutex<BTreeMap<String, Vec<Arc<RootRead>>>>);

struct RootRead {
    read: Vec<(String, bool, Option<Text>)>,
    listed: Vec<(String, bool, Vec<String>)>,
    docs: Option<Vec<Value>>,
}

/// Whether `tree` has folder `dir`, and the files under it.
fn listing(tree: &FileTree, dir: &str) -> (bool, Vec<String>) {
    (
        tree.is_dir(dir),
        tree.files_under(dir).map(str::to_string).collect(),
    )
}

impl RootsRead {
    /// The answers kept per file: the two revisions of a step, and a few environments' views.
    const KEPT: usize = 8;

    const fn new() -> RootsRead {
        RootsRead(Mutex::new(BTreeMap::new()))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Vec<Arc<RootRead>>>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The answer for `file` over `tree` when one kept read the same texts.
    fn find(&self, tree: &FileTree, file: &str) -> Option<Option<Vec<Value>>> {
        let candidates = self.lock().get(file).cloned().unwrap_or_default();
        let same = |r: &RootRead| {
            r.read.iter().all(|(path, is_file, text)| {
                tree.is_file(path) == *is_file
                    && match (tree.read(path), text) {
                        (Some(now), Some(then)) => Arc::ptr_eq(&now, then),
                        (None, None) => true,
                        _ => false,
                    }
            }) && r.listed.iter().all(|(dir, is_dir, files)| {
                let (now_dir, now_files) = listing(tree, dir);
                now_dir == *is_dir && now_files == *files
            })
        };
        candidates
            .into_iter()
            .find(|r| same(r))
            .map(|r| r.docs.clone())
    }

    /// Keeps `docs`, read over `recording` (a recording copy of `tree`).
    fn keep(&self, tree: &FileTree, file: &str, recording: &FileTree, docs: &Option<Vec<Value>>) {
        let footprint = recording.take_footprint();
        let listed = footprint
            .folders
            .into_iter()
            .map(|dir| {
                let (is_dir, files) = listing(tree, &dir);
                (dir, is_dir, files)
            })
            .collect();
        let read = footprint
            .files
            .into_iter()
            .map(|path| {
                let (is_file, text) = (tree.is_file(&path), tree.read(&path));
                (path, is_file, text)
            })
            .collect();
        let kept = Arc::new(RootRead {
            read,
            listed,
            docs: docs.clone(),
        });
        let mut known = self.lock();
        let list = known.entry(file.to_string()).or_default();
        list.insert(0, kept);
        list.truncate(Self::KEPT);
    }
}

/// `root_documents`, read afresh.
fn read_root_documents(tree: &FileTree, file: &str) -> Option<Vec<Value>> {
    let text = tree.read(file)?;
    let mut docs = crate::yaml::parse_all(file, &text).ok()?;
    let dir = file.rsplit_once('/').map_or("", |(dir, _)| dir);
    let mut builder = Builder::owners_only(tree);
    if !matches!(builder.kustomization_file(dir), Ok(Some(_))) {
        return Some(docs);
    }
    for r in builder.build_dir(dir).unwrap_or_default() {
        if r.file != file {
            continue;
        }
        // An item of a List shares its document's index: only a document is replaced.
        if let Some(doc) = docs
            .get_mut(r.index)
            .filter(|d| d.get("kind") == r.value.get("kind"))
        {
            *doc = r.value;
        }
    }
    Some(docs)
}

/// `spec.ignore` of the GitRepository `source` when `file` holds it (as `root_documents`
/// reads it).
pub(super) fn spec_ignore(tree: &FileTree, file: &str, source: &SourceRef) -> Option<String> {
    if source.kind != SourceKind::GitRepository || file.is_empty() {
        return None;
    }
    let docs = root_documents(tree, file)?;
    let found = docs.iter().find(|d| {
        let meta = &d["metadata"];
        group_of(d["apiVersion"].as_str().unwrap_or("")) == SOURCE_GROUP
            && d["kind"] == SourceKind::GitRepository.as_str()
            && meta["name"].as_str() == Some(source.name.as_str())
            && meta["namespace"]
                .as_str()
                .is_none_or(|ns| ns.is_empty() || ns == source.namespace)
    })?;
    match &found["spec"]["ignore"] {
        Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SYNC: &str = "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 1m\n  ref: {branch: main}\n  url: ssh://git@example.com/org/fleet\n  ignore: |\n    # exclude all\n    /*\n    # include the clusters\n    !/clusters\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  path: ./clusters/dev\n  sourceRef: {kind: GitRepository, name: flux-system}\n";

    fn source(name: &str) -> SourceRef {
        SourceRef::new(SourceKind::GitRepository, "flux-system", name)
    }

    /// The GitRepository of the root's own file lends its `spec.ignore`; another source,
    /// or an assumed root, reads the `.sourceignore` files and defaults only.
    #[test]
    fn the_root_sources_spec_ignore_hides_files() {
        let sync = "clusters/dev/flux-system/gotk-sync.yaml";
        let tree = FileTree::from_files([(sync, SYNC), ("apps/a.yaml", "a: 1\n")]);
        let view = artifact(&tree, sync, &source("flux-system"));
        assert!(view.read("apps/a.yaml").is_none() && view.read(sync).is_some());
        assert!(
            tree.read("apps/a.yaml").is_some(),
            "the tree itself keeps every file"
        );
        let other = artifact(&tree, sync, &source("other"));
        assert!(other.read("apps/a.yaml").is_some());
        let assumed = artifact(&tree, "", &source("flux-system"));
        assert!(assumed.read("apps/a.yaml").is_some());
    }

    /// The kustomization of the sync file's folder patches the root objects; a build that
    /// fails, or one that does not build the file, leaves them as written.
    #[test]
    fn the_root_documents_are_as_their_folder_builds_them() {
        let sync = "clusters/dev/flux-system/gotk-sync.yaml";
        let kustomization = "clusters/dev/flux-system/kustomization.yaml";
        let patch = "resources: [gotk-sync.yaml]\npatches:\n  - target: {kind: GitRepository}\n    patch: |\n      - {op: replace, path: /spec/ignore, value: \"/apps\"}\n";
        let tree = FileTree::from_files([(sync, SYNC), (kustomization, patch)]);
        let ignore = spec_ignore(&tree, sync, &source("flux-system"));
        assert_eq!(ignore.as_deref(), Some("/apps"));
        for other in ["resources: [missing.yaml]\n", "resources: []\n"] {
            let tree = FileTree::from_files([(sync, SYNC), (kustomization, other)]);
            let ignore = spec_ignore(&tree, sync, &source("flux-system"));
            assert!(ignore.is_some_and(|i| i.contains("!/clusters")));
        }
    }

    /// An answer is given again only over the same texts of every file its build read: a
    /// change of the patch file, or its removal, is read afresh; a change elsewhere is not
    /// asked for.
    #[test]
    fn the_root_documents_follow_every_file_their_build_reads() {
        let sync = "clusters/dev/flux-system/gotk-sync.yaml";
        let kustomization = "clusters/dev/flux-system/kustomization.yaml";
        let patch = "clusters/dev/flux-system/ignore.yaml";
        let ignoring = |what: &str| {
            format!("apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {{name: flux-system, namespace: flux-system}}\nspec:\n  ignore: {what}\n")
        };
        let a = FileTree::from_files([
            (sync, SYNC),
            (
                kustomization,
                "resources: [gotk-sync.yaml]\npatches:\n  - path: ignore.yaml\n",
            ),
            (patch, ignoring("/apps").as_str()),
        ]);
        let ignore = |t: &FileTree| spec_ignore(t, sync, &source("flux-system"));
        assert_eq!(ignore(&a).as_deref(), Some("/apps"));
        let b = a.clone().with_file(patch, &ignoring("/db"));
        assert_eq!(ignore(&b).as_deref(), Some("/db"));
        let elsewhere = a.clone().with_file("apps/web.yaml", "kind: ConfigMap\n");
        assert_eq!(ignore(&elsewhere).as_deref(), Some("/apps"));
        // Without the patch file the build fails: the documents are as written.
        let gone = a.clone().without_file(patch);
        assert!(ignore(&gone).is_some_and(|i| i.contains("!/clusters")));
        assert_eq!(ignore(&a).as_deref(), Some("/apps"));
        assert_eq!(ignore(&b).as_deref(), Some("/db"));
    }

    /// A kind reads back as written, known or not, and two kinds are one when their names are.
    #[test]
    fn kinds_read_back_as_written() {
        for kind in SourceKind::KNOWN {
            assert_eq!(SourceKind::parse(kind.as_str()), kind);
            assert!(!matches!(
                SourceKind::parse(kind.as_str()),
                SourceKind::Other(_)
            ));
        }
        for text in ["", "GitRepo", "gitrepository", "HelmRelease"] {
            assert_eq!(SourceKind::parse(text).as_str(), text);
        }
        assert_eq!(
            SourceKind::Other("Bucket".into()),
            SourceKind::Bucket,
            "equal by name"
        );
        assert_eq!(SourceKind::default().as_str(), "");
        assert_eq!(
            SourceKind::kustomization_kinds(),
            "GitRepository, OCIRepository, Bucket or ExternalArtifact"
        );
    }

    #[test]
    fn a_reference_defaults_its_namespace() {
        let written = SourceRef::new(SourceKind::OCIRepository, "", "podinfo");
        let source = written.in_namespace("apps");
        assert_eq!(source.to_string(), "OCIRepository/apps/podinfo");
        assert_eq!(source.id().to_string(), "OCIRepository/apps/podinfo");
        assert_eq!(source.id().group, SOURCE_GROUP);
        assert_eq!(source.in_namespace("other"), source);
    }
}
