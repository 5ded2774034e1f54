//! Why a build fails (`BuildError`: where kustomize or Flux fails it too, and applies
//! nothing of it), and what a build could not see (`Warning`: a feature that may change the
//! objects it yields and that fluxwave does not model). Each message names the file and the
//! entry, in the words of the kustomize or Flux function that fails the same way.

/// A kustomize feature that may change what a build yields and that fluxwave does not model.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Warning {
    pub path: String,
    pub feature: String,
    pub message: String,
}

/// Why a build failed. Flux's build fails there too, and applies nothing of it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    #[error("{0}: file not found")]
    FileNotFound(String),
    #[error("{0}: no kustomization.yaml in this folder")]
    NoKustomization(String),
    /// kustomize reads one kustomization file a folder: more than one fails its build
    /// (`api/internal/target.loadKustFile`: "Found multiple kustomization files under"), and
    /// so Flux's, whose generator keeps the folder's own.
    #[error("{dir}: holds {files}; kustomize fails: Found multiple kustomization files")]
    ManyKustomizations { dir: String, files: String },
    #[error("path `./{0}` does not exist")]
    NoPath(String),
    #[error("{file}: kustomization cycle through `{dir}`")]
    Cycle { file: String, dir: String },
    #[error("{file}: `{entry}` leaves the repository")]
    Escapes { file: String, entry: String },
    #[error("{file}: resource `{entry}` not found")]
    MissingResource { file: String, entry: String },
    /// Two objects with one id in one build (kustomize's `resWrangler.Append`: "may not add
    /// resource with an already registered id"; ids as `resid.ResId.Equals` compares them).
    #[error("{file}: `{id}` is built twice, from `{first}` and from `{second}`; kustomize fails: may not add resource with an already registered id")]
    DuplicateId {
        file: String,
        id: String,
        first: String,
        second: String,
    },
    /// `namespace:` gives two objects one id (kustomize's `NamespaceTransformerPlugin`:
    /// "namespace transformation produces ID conflict"), e.g. two Namespace objects renamed
    /// onto one.
    #[error("{file}: `namespace: {namespace}` makes both {first} and {second} `{id}`; kustomize fails: namespace transformation produces ID conflict")]
    NamespaceConflict {
        file: String,
        namespace: String,
        id: String,
        first: String,
        second: String,
    },
    /// A document that is not a Kubernetes object: kustomize refuses one without a kind or a
    /// name (kyaml `RNode.GetValidatedMetadata`), kustomize-controller one without an
    /// apiVersion (`KustomizationReconciler.build`: "failed to decode Kubernetes apiVersion,
    /// kind and name").
    #[error("{file}: document {document} is not a Kubernetes object: it has no `{missing}`")]
    NotAnObject {
        file: String,
        document: usize,
        missing: &'static str,
    },
    /// A folder listed under `resources` whose kustomization is a Component, or one listed
    /// under `components` whose kustomization is not (kustomize's
    /// `KustTarget.accumulateDirectory`: "expected kind != 'Component' for path", "expected
    /// kind 'Component' for path ... but got"). `what` names the entry, `kustomization` the
    /// folder's kustomization file. The kustomization a build starts from may be either kind.
    #[error("{what} `{entry}`: `{kustomization}` is {is}; kustomize fails: {says}")]
    WrongKind {
        what: String,
        entry: String,
        kustomization: String,
        is: String,
        says: String,
    },
    /// A kustomization, manifest or patch that kustomize would not read: the file, and what
    /// is wrong with it.
    #[error("{0}")]
    Malformed(String),
}

impl From<String> for BuildError {
    fn from(message: String) -> Self {
        BuildError::Malformed(message)
    }
}
