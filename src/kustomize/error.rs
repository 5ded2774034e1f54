//! Why a build fails (`BuildError`: where kustomize or Flux fails it too, and applies
//! nothing of it), and what a build could not see (`Warning`: a feature that may change the
//! objects it yields and that fluxwave does not model). Each message names the file and the
//! entry, in the words of the kustomize or Flux function that fails the same way.

use serde_json::Value;

use crate::error::SourceError;
use crate::fs::Undecodable;

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
    /// A manifest with a YAML directive, which kustomize's reader fails on (see
    /// `resource::directive_line`).
    #[error("{file}:{line}: a YAML directive (`%YAML`, `%TAG`): kustomize fails to read the file (\"did not find expected <document start>\", or for `%YAML 1.2` \"found incompatible YAML document\"); remove the line")]
    Directive { file: String, line: usize },
    /// A `configMapGenerator` or `secretGenerator` entry kustomize cannot make (`what` names
    /// it): a missing input file, a malformed literal or file source, a key given twice, a
    /// `merge`/`replace` with nothing to merge into.
    #[error("{what}: {why}")]
    Generator { what: String, why: String },
    /// A generator's input file that is not there (kustomize's loader: "no such file or
    /// directory").
    #[error("{what}: `{entry}`: file not found")]
    GeneratorInputMissing { what: String, entry: String },
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
    /// A file kustomize cannot read as text (not UTF-8, broken UTF-16), `path` as shown.
    #[error("{}", why.located(path))]
    Undecodable { path: String, why: Undecodable },
    /// A kustomization or manifest that is not YAML kustomize reads, located in its file.
    #[error("{0}")]
    Yaml(Box<SourceError>),
    /// A kustomization that says nothing but its kind (`Kustomization.CheckEmpty`).
    #[error("{0}: kustomization.yaml is empty; kustomize fails on it")]
    Empty(String),
    #[error("{0}: a kustomization must be a mapping")]
    NotAMapping(String),
    /// A string field of `types.Kustomization` given a boolean or a number (see `types`).
    #[error("{file}: invalid Kustomization: json: cannot unmarshal {kind} into Go struct field {field} of type string (quote the value)")]
    NotAString {
        file: String,
        field: String,
        kind: &'static str,
    },
    #[error("{file}: `{field}` must be a list")]
    NotAList { file: String, field: String },
    /// A key of a kustomization that kustomize builds (not the one at a Flux Kustomization's
    /// `spec.path`, whose unknown keys Flux's generator drops) that sets no field.
    #[error("{file}: `{field}` is no field of a kustomization; kustomize fails: invalid Kustomization: json: unknown field \"{field}\"")]
    UnknownField { file: String, field: String },
    #[error("{file}: `{field}` entries must be strings")]
    EntryNotAString { file: String, field: String },
    /// A document of a manifest (or an item of a List) that is not a mapping.
    #[error("{file}: document {document} is not a mapping")]
    DocumentNotAMapping { file: String, document: usize },
    /// An object held as its head whose document is no longer in its file (see
    /// `Resource::make_whole`).
    #[error("{file}: document {document} is gone")]
    DocumentGone { file: String, document: usize },
    /// A `components` entry, named `what`, whose folder has no kustomization.
    #[error("{what}: component `{entry}` has no kustomization.yaml")]
    ComponentWithoutKustomization { what: String, entry: String },
    #[error("{what}: component `{entry}` does not exist")]
    NoComponent { what: String, entry: String },
    /// A patch, named `what`, that kustomize would not read or apply.
    #[error("{what}: {problem}")]
    Patch { what: String, problem: PatchProblem },
    /// A `replacements` entry, named `what`, that kustomize cannot read or apply
    /// (api/filters/replacement: no source or several, a missing field, a bad option).
    #[error("{what}: {why}; kustomize fails")]
    Replacement { what: String, why: String },
    /// A chart to inflate (`helmCharts`): Flux builds with kustomize's Helm support off.
    #[error("{file}: `{field}` needs kustomize's --enable-helm, which Flux never sets; kustomize fails: must specify --enable-helm")]
    HelmDisabled { file: String, field: String },
    /// A name reference kustomize cannot fix, or a `configurations` file it cannot read
    /// (api/filters/nameref, `builtinconfig.MakeTransformerConfig`).
    #[error("{what}: {why}; kustomize fails")]
    NameReference { what: String, why: String },
    #[error(transparent)]
    Target(#[from] TargetError),
}

impl BuildError {
    /// Whether kustomize surely fails the same way: the failure follows from which files
    /// and folders there are, what kind of kustomization each is, and which keys and ids
    /// they hold, never from how a transformation (a patch, a replacement, a name
    /// reference, a selector's regular expression, a generator's merge) or the YAML reader
    /// is ported. `cutover` judges an owner whose newer build surely fails as deleting
    /// nothing; any other failure leaves what it deletes unknown.
    pub fn is_certain(&self) -> bool {
        use BuildError::*;
        match self {
            FileNotFound(_)
            | NoKustomization(_)
            | ManyKustomizations { .. }
            | Cycle { .. }
            | Escapes { .. }
            | MissingResource { .. }
            | DuplicateId { .. }
            | NamespaceConflict { .. }
            | NotAnObject { .. }
            | Directive { .. }
            | WrongKind { .. }
            | Empty(_)
            | NotAMapping(_)
            | NotAString { .. }
            | NotAList { .. }
            | UnknownField { .. }
            | EntryNotAString { .. }
            | DocumentNotAMapping { .. }
            | ComponentWithoutKustomization { .. }
            | NoComponent { .. }
            | HelmDisabled { .. }
            | GeneratorInputMissing { .. } => true,
            Patch { problem, .. } => problem.is_certain(),
            Undecodable { .. }
            | Yaml(_)
            | Generator { .. }
            | DocumentGone { .. }
            | Replacement { .. }
            | NameReference { .. }
            | Target(_) => false,
        }
    }

    /// `problem` of the patch named `what`.
    pub(super) fn patch(what: &str, problem: impl Into<PatchProblem>) -> BuildError {
        BuildError::Patch {
            what: what.to_string(),
            problem: problem.into(),
        }
    }
}

/// What is wrong with a patch: how it is written, where its file is, or what applying it
/// meets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchProblem {
    #[error("a JSON 6902 patch needs a `target`")]
    NeedsTarget,
    #[error("a patch must be a mapping or a list of operations")]
    NotAPatch,
    /// A strategic-merge patch without a target, whose own header (apiVersion, kind, name
    /// and namespace) names no object built (kustomize's "no resource matches strategic
    /// merge patch").
    #[error("the patch's target {kind}/{name} is not in the build (its apiVersion, kind, name and namespace must be the object's)")]
    TargetNotBuilt { kind: String, name: String },
    /// One whose header names several (kustomize's "multiple matches for Id").
    #[error("the patch's target {kind}/{name} names several objects of the build")]
    SeveralTargets { kind: String, name: String },
    /// The YAML reader's message, on one line, with any secret it quotes masked.
    #[error("the patch is not valid YAML: {0}")]
    NotYaml(String),
    #[error("needs `patch` or `path`")]
    NeedsPatchOrPath,
    #[error("must be a string")]
    NotAString,
    /// A patch file kustomize cannot read as text, `path` as shown.
    #[error("patch file {}", why.located(path))]
    FileUndecodable { path: String, why: Undecodable },
    #[error("patch file `{0}` not found")]
    FileNotFound(String),
    /// A `path` that leaves the repository.
    #[error("`{0}` leaves the repository")]
    Escapes(String),
    /// A `patchesStrategicMerge` file that leaves the repository.
    #[error("leaves the repository")]
    FileEscapes,
    #[error(transparent)]
    Operation(#[from] OperationError),
}

impl PatchProblem {
    /// Whether kustomize surely fails on it too (see `BuildError::is_certain`): how the
    /// patch is written and which object it names, not what applying it meets.
    fn is_certain(&self) -> bool {
        use PatchProblem::*;
        match self {
            NeedsTarget
            | NotAPatch
            | TargetNotBuilt { .. }
            | SeveralTargets { .. }
            | NeedsPatchOrPath
            | NotAString
            | FileNotFound(_)
            | Escapes(_)
            | FileEscapes => true,
            NotYaml(_) | FileUndecodable { .. } | Operation(_) => false,
        }
    }
}

/// Why a JSON 6902 operation cannot be applied to an object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OperationError {
    #[error("a JSON 6902 operation needs `path`")]
    NeedsPath,
    /// `replace` of the whole document with something other than an object or an array.
    #[error("`replace` of the whole document needs an object or an array as `value`")]
    WholeDocument,
    /// `move` or `copy` without `from`.
    #[error("`{0}` needs `from`")]
    NeedsFrom(&'static str),
    #[error("unknown JSON 6902 operation {0:?}")]
    Unknown(Option<String>),
    #[error("path `{0}` does not exist")]
    NoPath(String),
    #[error("index `{index}` out of range at `{path}`")]
    Index { index: String, path: String },
    #[error("test failed at `{0}`")]
    TestFailed(String),
}

/// Why a patch `target` cannot be read; `what` names it (`...patches[0].target`, or one of
/// its fields).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error("{what}: must be a mapping")]
    NotAMapping { what: String },
    #[error("{what}: `{field}` must be a string, not {value}")]
    NotAString {
        what: String,
        field: String,
        value: Value,
    },
    /// A name or namespace that is no regular expression; `error` is the regex crate's.
    #[error("{what}: invalid regular expression `{pattern}`: {error}")]
    Regex {
        what: String,
        pattern: String,
        error: String,
    },
    #[error("{what}: invalid selector `{selector}`: {problem}")]
    Selector {
        what: String,
        selector: String,
        problem: SelectorProblem,
    },
}

/// What is wrong with a label or annotation selector.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorProblem {
    #[error("unbalanced `)`")]
    UnbalancedClose,
    #[error("unbalanced `(`")]
    UnbalancedOpen,
    #[error("empty requirement")]
    EmptyRequirement,
    #[error("expected a parenthesised value list")]
    NoValueList,
    #[error("invalid label key `{0}`")]
    Key(String),
    #[error("invalid label value `{0}`")]
    Value(String),
}
