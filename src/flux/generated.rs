//! What kustomize-controller builds at a Flux Kustomization's `spec.path`: the kustomization
//! there, or the one Flux's generator writes for a folder that has none (fluxcd/pkg
//! `kustomize/kustomize_generator.go`), edited by the Kustomization's spec (`FluxSpec`),
//! built by the kustomize builder, and every object given the spec's common metadata. The
//! builder knows nothing of Flux: it builds the kustomization it is given, and names the
//! entries the spec appended as the spec's (`kustomize::Appended`).

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::fs::{is_manifest, join};
use crate::kustomize::{
    add_metadata, has, list, resolve, Appended, BuildError, Builder, Emit, Ref, Remembering,
    Resource, Shared,
};
use crate::tree::FileTree;

/// What a Flux Kustomization's spec writes into the kustomization at its `spec.path` before
/// kustomize builds it (fluxcd/pkg `kustomize/kustomize_generator.go`,
/// `Generator.GenerateManifest`), and the metadata kustomize-controller sets on every object
/// it applies (`KustomizationReconciler.apply`, `ssautil.SetCommonMetadata`). Images and
/// `buildMetadata` change content only and are not kept.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FluxSpec {
    /// Names the Kustomization in messages: its file and id.
    pub what: String,
    /// What its spec writes, shared by the builds of one Kustomization object: a history's
    /// steps ask whether a build's spec is the one before, which for the same object is known
    /// without comparing its patches.
    pub written: Arc<Written>,
}

/// The fields of a Flux Kustomization's spec that its build reads (see `FluxSpec`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Written {
    /// `spec.targetNamespace`: replaces the kustomization's `namespace`.
    pub target_namespace: Option<String>,
    /// `spec.namePrefix` and `spec.nameSuffix`: replace the kustomization's own.
    pub name_prefix: Option<String>,
    pub name_suffix: Option<String>,
    /// `spec.patches`: appended to the kustomization's `patches`.
    pub patches: Vec<Value>,
    /// `spec.components`: appended to the kustomization's `components`.
    pub components: Vec<Value>,
    /// `spec.ignoreMissingComponents`: a component that does not exist is left out.
    pub ignore_missing_components: bool,
    /// `spec.commonMetadata`: set on every object built, over what it has.
    pub labels: Map<String, Value>,
    pub annotations: Map<String, Value>,
}

/// Why Flux's build of a Kustomization fails: the kustomize build fails, or the spec or its
/// `spec.path` does not let Flux make the kustomization it builds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FluxBuildError {
    /// (Boxed: a `Result` of it stays small.)
    #[error(transparent)]
    Build(Box<BuildError>),
    /// `spec.path` is not there (`KustomizationReconciler.reconcile`: "kustomization path
    /// not found").
    #[error("path `./{0}` does not exist")]
    NoPath(String),
    /// A `spec.components` entry, of the Kustomization `what`, that is not a string.
    #[error("{what}: spec.components[{index}] must be a string")]
    ComponentNotAString { what: String, index: usize },
    /// A `spec.components` entry that is not a local relative path (fluxcd/pkg
    /// `kustomize.IsLocalRelativePath`).
    #[error("{what}: component path '{path}' must be local and relative")]
    ComponentNotLocal { what: String, path: String },
}

impl FluxBuildError {
    /// Whether Flux surely fails the same way (see `BuildError::is_certain`).
    pub fn is_certain(&self) -> bool {
        match self {
            FluxBuildError::Build(e) => e.is_certain(),
            FluxBuildError::NoPath(_)
            | FluxBuildError::ComponentNotAString { .. }
            | FluxBuildError::ComponentNotLocal { .. } => true,
        }
    }
}

impl From<BuildError> for FluxBuildError {
    fn from(e: BuildError) -> Self {
        FluxBuildError::Build(Box::new(e))
    }
}

/// Flux's build of a Kustomization, asked of the kustomize builder.
pub trait FluxBuild {
    /// What a Flux Kustomization applies, as kustomize-controller builds it: the
    /// kustomization at `dir` (its `spec.path`; generated when there is none, see
    /// `kustomization_at`) edited by `spec` (`write_spec`), built
    /// (`Builder::build_kustomization`), and every object given `spec`'s common metadata;
    /// each object handed to `emit` in build order. When the build fails, `emit` may have
    /// had some of its objects.
    fn build_owner(
        &mut self,
        dir: &str,
        spec: &FluxSpec,
        emit: &mut Emit,
    ) -> Result<(), FluxBuildError>;

    /// `build_owner`, replayed from `memo` where it holds (see
    /// `Builder::build_remembered`).
    fn build_owner_remembered(
        &mut self,
        memo: Option<&mut Remembering>,
        dir: &str,
        spec: &FluxSpec,
        emit: &mut dyn FnMut(Cow<'_, Resource>, Option<&Shared>),
    ) -> Result<(), FluxBuildError>;
}

impl FluxBuild for Builder<'_> {
    fn build_owner(
        &mut self,
        dir: &str,
        spec: &FluxSpec,
        emit: &mut Emit,
    ) -> Result<(), FluxBuildError> {
        crate::tally::add(&crate::tally::OWNER_BUILDS);
        let (file, mut k) = kustomization_at(self, dir)?;
        let appended = write_spec(self.tree(), spec, dir, &file, &mut k)?;
        let labels = Value::Object(spec.written.labels.clone());
        let annotations = Value::Object(spec.written.annotations.clone());
        let mut failed = None;
        self.build_kustomization(dir, &file, &k, Some(&appended), &mut |mut r| {
            if failed.is_some() {
                return;
            }
            // kustomize-controller's `build`: "failed to decode Kubernetes apiVersion, kind
            // and name" (kustomize itself accepts an object without an apiVersion).
            let missing = [
                ("apiVersion", &["apiVersion"][..]),
                ("kind", &["kind"]),
                ("metadata.name", &["metadata", "name"]),
            ]
            .into_iter()
            .find(|(_, at)| !has(&r.value, at));
            if let Some((missing, _)) = missing {
                failed = Some(BuildError::NotAnObject {
                    file: r.file.clone(),
                    document: r.index + 1,
                    missing,
                });
                return;
            }
            let one = std::slice::from_mut(&mut r);
            add_metadata(one, "labels", &labels);
            add_metadata(one, "annotations", &annotations);
            emit(r);
        })?;
        failed.map_or(Ok(()), |e| Err(e.into()))
    }

    fn build_owner_remembered(
        &mut self,
        memo: Option<&mut Remembering>,
        dir: &str,
        spec: &FluxSpec,
        emit: &mut dyn FnMut(Cow<'_, Resource>, Option<&Shared>),
    ) -> Result<(), FluxBuildError> {
        self.build_remembered(
            memo,
            dir,
            spec,
            |b, emit| b.build_owner(dir, spec, emit),
            emit,
        )
    }
}

/// The kustomization Flux builds at `spec.path` `dir`, with the name it has in messages:
/// the folder's own, or the one Flux's generator writes when it has none (fluxcd/pkg
/// `Generator.findOrGenerateKustomization`, `scanManifests`): every `.yaml`/`.yml` file
/// under the folder, recursively, and every sub-folder holding a kustomization, built as
/// one; when that lists nothing (a folder of a README or of templates), only `namespace:
/// _placeholder` ("to avoid kustomization.yaml is empty"), which builds nothing. Only a
/// folder that is not there fails (`KustomizationReconciler.reconcile`: "kustomization
/// path not found").
fn kustomization_at(
    builder: &Builder<'_>,
    dir: &str,
) -> Result<(String, Map<String, Value>), FluxBuildError> {
    let tree = builder.tree();
    if let Some(file) = builder.kustomization_file(dir)? {
        let k = builder.read_kustomization(&file)?;
        return Ok((file, k));
    }
    if !tree.is_dir(dir) {
        return Err(FluxBuildError::NoPath(dir.to_string()));
    }
    let prefix = if dir.is_empty() {
        String::new()
    } else {
        format!("{dir}/")
    };
    // In the order of the generator's walk (`filepath.Walk`: each folder's entries by
    // name), which differs from path order where a name continues past a folder's
    // (`a/b.yaml` comes before `a.yaml`).
    let mut files: Vec<&str> = tree.files_under(dir).collect();
    if files.iter().any(|f| f[prefix.len()..].contains('/')) {
        files.sort_by(|a, b| a.split('/').cmp(b.split('/')));
    }
    let mut resources = Vec::new();
    let mut last_sub: Option<String> = None;
    for file in files {
        let below = file.strip_prefix(&prefix).unwrap_or(file);
        let segments: Vec<&str> = below.split('/').collect();
        let mut sub = dir.to_string();
        let mut kustomized = None;
        for (i, seg) in segments[..segments.len().saturating_sub(1)]
            .iter()
            .enumerate()
        {
            sub = join(&sub, seg).unwrap_or_default();
            // A sub-folder of several kustomization files is one too: its build fails.
            if !matches!(builder.kustomization_file(&sub), Ok(None)) {
                kustomized = Some(segments[..=i].join("/"));
                break;
            }
        }
        match kustomized {
            // Files come in path order: a sub-folder's come together.
            Some(sub) if last_sub.as_ref() != Some(&sub) => {
                resources.push(Value::String(sub.clone()));
                last_sub = Some(sub);
            }
            Some(_) => {}
            None if is_manifest(file) => resources.push(Value::String(below.to_string())),
            None => {}
        }
    }
    let mut k = Map::new();
    if resources.is_empty() {
        k.insert("namespace".into(), Value::String("_placeholder".into()));
    } else {
        k.insert("resources".into(), Value::Array(resources));
    }
    let name = if dir.is_empty() { "." } else { dir };
    Ok((format!("{name} (the kustomization Flux generates)"), k))
}

/// Kustomization `k` (of `file` in `dir`) as Flux's generator edits it for `spec`
/// (fluxcd/pkg `Generator.GenerateManifest`): `targetNamespace` replaces its `namespace`,
/// `namePrefix`/`nameSuffix` replace its own, `patches` are appended to its patches and
/// `components` to its components (so its own `namespace:` and transformers apply to
/// the components' objects too); a component that does not exist is left out under
/// `ignoreMissingComponents: true`, and one that is not a local relative path fails.
fn write_spec(
    tree: &FileTree,
    spec: &FluxSpec,
    dir: &str,
    file: &str,
    k: &mut Map<String, Value>,
) -> Result<Appended, FluxBuildError> {
    for (key, value) in [
        ("namespace", &spec.written.target_namespace),
        ("namePrefix", &spec.written.name_prefix),
        ("nameSuffix", &spec.written.name_suffix),
    ] {
        if let Some(v) = value {
            k.insert(key.into(), Value::String(v.clone()));
        }
    }
    // The kustomization's own entries come first and are named as its own, whether or
    // not the spec appends any.
    let appended = Appended {
        by: format!("{}: spec", spec.what),
        patches: list(k, "patches", file)?.len(),
        components: list(k, "components", file)?.len(),
    };
    if !spec.written.patches.is_empty() {
        let mut patches = list(k, "patches", file)?.to_vec();
        // Flux's `kustomize.Patch`: the patch and its target, nothing else.
        patches.extend(spec.written.patches.iter().map(|p| {
            let mut m = Map::new();
            for key in ["patch", "target"] {
                if let Some(v) = p.get(key) {
                    m.insert(key.into(), v.clone());
                }
            }
            Value::Object(m)
        }));
        k.insert("patches".into(), Value::Array(patches));
    }
    if !spec.written.components.is_empty() {
        let mut components = list(k, "components", file)?.to_vec();
        for (i, c) in spec.written.components.iter().enumerate() {
            let Some(path) = c.as_str() else {
                return Err(FluxBuildError::ComponentNotAString {
                    what: spec.what.clone(),
                    index: i,
                });
            };
            if !is_local_relative(path) {
                return Err(FluxBuildError::ComponentNotLocal {
                    what: spec.what.clone(),
                    path: path.to_string(),
                });
            }
            let exists = match resolve(dir, path) {
                Ref::Local(p) => tree.is_file(&p) || tree.is_dir(&p),
                Ref::Remote | Ref::Escapes => false,
            };
            if exists || !spec.written.ignore_missing_components {
                components.push(c.clone());
            }
        }
        k.insert("components".into(), Value::Array(components));
    }
    Ok(appended)
}

/// Whether a `spec.components` entry is a local relative path (fluxcd/pkg
/// `kustomize.IsLocalRelativePath`): not a remote URL form kustomize knows, not absolute.
fn is_local_relative(path: &str) -> bool {
    let lower = path.to_lowercase();
    let remote = [
        "git::",
        "gh:",
        "ssh://",
        "https://",
        "http://",
        "git@",
        "github.com:",
        "github.com/",
    ]
    .iter()
    .any(|p| p.len() < lower.len() && lower.starts_with(p));
    !remote
        && !path.starts_with('/')
        && !lower
            .strip_prefix("file://")
            .unwrap_or(&lower)
            .starts_with('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(r: &[Resource]) -> Vec<String> {
        let mut v: Vec<String> = r
            .iter()
            .filter_map(Resource::id)
            .map(|i| i.to_string())
            .collect();
        v.sort();
        v
    }

    const CM: &str =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: a\ndata: {x: '1'}\n";

    /// What Flux builds at `spec.path` `dir` for a Kustomization whose spec adds nothing.
    fn build_flux_path(tree: &FileTree, dir: &str) -> Result<Vec<Resource>, FluxBuildError> {
        let mut out = Vec::new();
        Builder::new(tree).build_owner(dir, &FluxSpec::default(), &mut |r| out.push(r))?;
        Ok(out)
    }

    #[test]
    fn flux_generates_a_kustomization_for_a_plain_folder() {
        let files = [
            ("apps/a.yaml", CM),
            ("apps/README.md", "# apps\n"),
            (
                "apps/sub/deep/b.yaml",
                CM.replace("name: cm", "name: b").leak(),
            ),
            (
                "apps/k/kustomization.yaml",
                "resources: [c.yaml]\nnamespace: kk\n",
            ),
            ("apps/k/c.yaml", CM.replace("name: cm", "name: c").leak()),
        ];
        let tree = FileTree::from_files(files);
        let out = build_flux_path(&tree, "apps").unwrap();
        assert_eq!(
            ids(&out),
            ["ConfigMap/a/b", "ConfigMap/a/cm", "ConfigMap/kk/c"]
        );
        assert!(Builder::new(&tree).build_dir("apps").is_err());
        // The walk's order: a folder before a file whose name continues the folder's.
        let walk = FileTree::from_files([
            (
                "w/k.yaml",
                CM.replace("name: cm", "name: file").leak() as &str,
            ),
            ("w/k/x.yaml", CM.replace("name: cm", "name: folder").leak()),
        ]);
        let out = build_flux_path(&walk, "w").unwrap();
        let order: Vec<&str> = out
            .iter()
            .map(|r| r.value["metadata"]["name"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(order, ["folder", "file"]);
        // A YAML file that is not an object fails the generated kustomization (fluxcd/pkg
        // `scanManifests`: "failed to decode Kubernetes YAML"), where it used to be left out.
        let with_notes = FileTree::from_files(files).with_file("apps/notes.yaml", "just: notes\n");
        assert_eq!(
            build_flux_path(&with_notes, "apps").unwrap_err(),
            FluxBuildError::Build(Box::new(BuildError::NotAnObject {
                file: "apps/notes.yaml".into(),
                document: 1,
                missing: "kind"
            }))
        );
    }

    #[test]
    fn an_owner_build_hands_on_objects_in_build_order() {
        let cm = |name: &str| CM.replace("name: cm", &format!("name: {name}"));
        let (a, b, c, d, e) = (cm("a"), cm("b"), cm("c"), cm("d"), cm("e"));
        let tree = FileTree::from_files([
            // Flux's generated kustomization: files in path order, a kustomized folder once.
            ("apps/1.yaml", a.as_str()),
            ("apps/k/kustomization.yaml", "resources: [c.yaml, ../../plain, b.yaml]\nconfigMapGenerator: [{name: g, options: {disableNameSuffixHash: true}}]\n"),
            ("apps/k/b.yaml", b.as_str()),
            ("apps/k/c.yaml", c.as_str()),
            ("apps/t/kustomization.yaml", "namespace: t\nresources: [e.yaml]\n"),
            ("apps/t/e.yaml", e.as_str()),
            ("plain/kustomization.yaml", "resources: [d.yaml]\n"),
            ("plain/d.yaml", d.as_str()),
        ]);
        let build = |spec: FluxSpec| {
            let mut out = Vec::new();
            let mut b = Builder::new(&tree);
            b.build_owner("apps", &spec, &mut |r| {
                out.push(r.id().map(|i| i.to_string()).unwrap_or_default())
            })
            .unwrap();
            out
        };
        assert_eq!(
            build(FluxSpec::default()),
            [
                "ConfigMap/a/a",
                "ConfigMap/a/c",
                "ConfigMap/a/d",
                "ConfigMap/a/b",
                "ConfigMap/g",
                "ConfigMap/t/e"
            ]
        );
        let prefixed = FluxSpec {
            written: Arc::new(Written {
                name_prefix: Some("p-".into()),
                ..Written::default()
            }),
            ..FluxSpec::default()
        };
        assert_eq!(
            build(prefixed),
            [
                "ConfigMap/a/p-a",
                "ConfigMap/a/p-c",
                "ConfigMap/a/p-d",
                "ConfigMap/a/p-b",
                "ConfigMap/p-g",
                "ConfigMap/t/p-e"
            ]
        );
    }

    /// fluxcd/pkg `Generator.GenerateManifest`: the spec edits the kustomization at
    /// `spec.path` rather than wrapping it (the CLI tests hold each case against kustomize).
    #[test]
    fn a_flux_spec_is_written_into_the_kustomization_at_its_path() {
        let tree = FileTree::from_files([
            ("app/kustomization.yaml", "namespace: own\nnamePrefix: own-\nresources: [cm.yaml]\n"),
            ("app/cm.yaml", CM),
            ("c/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [extra.yaml]\n"),
            ("c/extra.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\n"),
            ("empty/README.md", "# nothing to apply\n"),
        ]);
        let build = |dir: &str, spec: &FluxSpec| {
            let mut out = Vec::new();
            Builder::new(&tree).build_owner(dir, spec, &mut |r| out.push(r))?;
            Ok::<_, FluxBuildError>(ids(&out))
        };
        let written = Written {
            name_prefix: Some("flux-".into()),
            components: vec!["../c".into(), "../gone".into()],
            ignore_missing_components: true,
            ..Written::default()
        };
        let with = |written: Written| FluxSpec {
            what: "ks.yaml (Kustomization/flux-system/app)".into(),
            written: Arc::new(written),
        };
        let spec = with(written.clone());
        assert_eq!(
            build("app", &spec),
            Ok(vec![
                "ConfigMap/own/flux-cm".to_string(),
                "ConfigMap/own/flux-extra".to_string()
            ])
        );
        let strict = with(Written {
            ignore_missing_components: false,
            ..written.clone()
        });
        assert_eq!(
            build("app", &strict).unwrap_err().to_string(),
            "ks.yaml (Kustomization/flux-system/app): spec.components[1]: component `../gone` does not exist"
        );
        let remote = with(Written {
            components: vec!["https://github.com/x/y//c".into()],
            ..written
        });
        assert!(build("app", &remote)
            .unwrap_err()
            .to_string()
            .ends_with("component path 'https://github.com/x/y//c' must be local and relative"));
        // A folder of no manifests builds nothing; its components would land in the
        // generator's placeholder namespace.
        assert_eq!(build("empty", &FluxSpec::default()), Ok(vec![]));
        assert_eq!(
            build("empty", &spec),
            Ok(vec!["ConfigMap/_placeholder/flux-extra".to_string()])
        );
        // An empty kustomization fails kustomize, but not at `spec.path`: Flux's generator
        // gives it `buildMetadata` when it lists no resources.
        let empty = FileTree::from_files([
            (
                "e/kustomization.yaml",
                "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n",
            ),
            ("o/kustomization.yaml", "resources: [../e]\n"),
        ]);
        assert_eq!(build_flux_path(&empty, "e").map(|o| o.len()), Ok(0));
        assert_eq!(
            build_flux_path(&empty, "o").unwrap_err().to_string(),
            "e/kustomization.yaml: kustomization.yaml is empty; kustomize fails on it"
        );
        assert_eq!(
            build("nowhere", &spec),
            Err(FluxBuildError::NoPath("nowhere".into()))
        );
        // commonMetadata is set on every object after the build, over what it has.
        let labelled = FluxSpec {
            written: Arc::new(Written {
                labels: serde_json::json!({"team": "media"})
                    .as_object()
                    .cloned()
                    .unwrap(),
                ..Written::default()
            }),
            ..FluxSpec::default()
        };
        let mut out = Vec::new();
        Builder::new(&tree)
            .build_owner("app", &labelled, &mut |r| out.push(r))
            .unwrap();
        assert_eq!(out[0].value["metadata"]["labels"]["team"], "media");
    }

    /// More files than the builder parses ahead (`kustomize::AHEAD`) in a folder without a
    /// kustomization: every manifest, in path order.
    #[test]
    fn a_large_plain_folder_is_every_manifest_in_path_order() {
        let n = 2 * crate::kustomize::AHEAD + 7;
        let names: Vec<String> = (0..n).map(|i| format!("cm-{i:05}")).collect();
        let texts: Vec<String> = names
            .iter()
            .map(|name| CM.replace("name: cm", &format!("name: {name}")))
            .collect();
        let paths: Vec<String> = names.iter().map(|n| format!("big/{n}.yaml")).collect();
        let tree = FileTree::from_files(
            paths
                .iter()
                .map(String::as_str)
                .zip(texts.iter().map(String::as_str)),
        );
        let out = build_flux_path(&tree, "big").unwrap();
        let built: Vec<&str> = out
            .iter()
            .map(|r| r.value["metadata"]["name"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(built, names);
    }

    /// One id in two builds of a plain folder's sub-folders, and in one plain folder: the
    /// generated kustomization fails as kustomize fails (`resWrangler.Append`).
    #[test]
    fn a_plain_folder_fails_on_one_id_twice() {
        let tree = FileTree::from_files([
            ("p/a/kustomization.yaml", "resources: [cm.yaml]\n"),
            ("p/a/cm.yaml", CM),
            ("p/b.yaml", CM),
        ]);
        assert!(matches!(
            build_flux_path(&tree, "p"),
            Err(FluxBuildError::Build(e)) if matches!(*e, BuildError::DuplicateId { .. })
        ));
    }

    /// kustomize-controller's `build`: a document without an apiVersion fails Flux's build
    /// ("failed to decode Kubernetes apiVersion, kind and name"), though kustomize builds it.
    #[test]
    fn a_document_without_an_api_version_fails_the_build() {
        let tree = FileTree::from_files([
            ("a/kustomization.yaml", "resources: [x.yaml]\n"),
            ("a/x.yaml", "kind: ConfigMap\nmetadata: {name: x}\n"),
        ]);
        assert_eq!(
            build_flux_path(&tree, "a").unwrap_err(),
            FluxBuildError::Build(Box::new(BuildError::NotAnObject {
                file: "a/x.yaml".into(),
                document: 1,
                missing: "apiVersion"
            }))
        );
    }

    /// Flux's generated kustomization lists a sub-folder under `resources`, so a Component
    /// there fails (kustomize's `KustTarget.accumulateDirectory`), while a Component at
    /// `spec.path` builds; a `spec.components` entry is named as the spec's.
    #[test]
    fn a_component_builds_at_spec_path_but_not_below_a_generated_kustomization() {
        const COMPONENT: &str = "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n";
        let component = format!("{COMPONENT}resources: [cm.yaml]\n");
        let tree = FileTree::from_files([
            ("generated/c/kustomization.yaml", component.as_str()),
            ("generated/c/cm.yaml", CM),
            ("base/kustomization.yaml", "resources: [cm.yaml]\n"),
            ("base/cm.yaml", CM),
        ]);
        assert!(matches!(
            build_flux_path(&tree, "generated"),
            Err(FluxBuildError::Build(e)) if matches!(*e, BuildError::WrongKind { .. })
        ));
        assert_eq!(
            build_flux_path(&tree, "generated/c").map(|o| o.len()),
            Ok(1)
        );
        let spec = FluxSpec {
            what: "ks.yaml (Kustomization/flux-system/app)".into(),
            written: Arc::new(Written {
                components: vec!["../../base".into()],
                ..Written::default()
            }),
        };
        let e = Builder::new(&tree)
            .build_owner("generated/c", &spec, &mut |_| {})
            .unwrap_err();
        assert!(
            e.to_string().starts_with(
                "ks.yaml (Kustomization/flux-system/app): spec.components[0] `../../base`:"
            ),
            "{e}"
        );
    }
}
