//! Every reason a HelmRelease is not rendered, as a value: what helm-controller, the API
//! server or source-controller would refuse (each worded as they give it), and what stops
//! fluxwave (no helm, `--offline`, a host it may not reach, the cache). The release is kept
//! with the message (`Render::NotRendered`), and the message is part of the release's inputs
//! digest, so a message's words are kept as they are.

use crate::error::SourceError;
use crate::process;

/// Why a release is not rendered (`Render::NotRendered` holds its message).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error(transparent)]
    Chart(#[from] ChartError),
    #[error(transparent)]
    Values(#[from] ValuesError),
    #[error("its chart was not fetched")]
    NotFetched,
    #[error("helm template fails: {0}")]
    Template(RunError),
    #[error("helm template printed YAML fluxwave cannot read: {0}")]
    TemplateYaml(Box<SourceError>),
    /// The kustomize builder's error on `spec.postRenderers[].kustomize`.
    #[error("its post-renderer fails: {0}")]
    PostRenderer(Box<dyn std::error::Error + Send + Sync>),
    #[error("its post-renderer changes the number of objects")]
    PostRendererCount,
    /// A `spec.postRenderStrategy` the HelmRelease CRD refuses (its enum: `nohooks`,
    /// `combined`, `separate`).
    #[error("its spec.postRenderStrategy `{0}` is none of nohooks, combined and separate, which the HelmRelease CRD refuses")]
    PostRenderStrategy(String),
    #[error("{template} renders an object without apiVersion, kind or name")]
    NoIdentity { template: String },
}

/// A value read from the repository that the upstream controller or Helm refuses (see
/// `validate`). Each names the value as `validate::shown` cuts it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Invalid {
    #[error("its release name is empty")]
    ReleaseNameEmpty,
    #[error("its release name `{0}` is invalid: Helm and helm-controller want at most 53 characters of lower-case letters, digits, `-` and `.`, starting and ending with a letter or digit")]
    ReleaseName(String),
    #[error("its name `{0}` is no object name the API server accepts (a DNS-1123 subdomain of at most 253 characters)")]
    ObjectName(String),
    #[error(
        "its spec.releaseName is longer than 53 characters, which the HelmRelease CRD refuses"
    )]
    ReleaseNameTooLong,
    #[error("its namespace `{0}` is not a namespace name Kubernetes accepts (at most 63 lower-case letters, digits and `-`)")]
    Namespace(String),
    #[error("its chart name `{0}` is not a name Helm accepts (letters, digits, `.`, `_` and `-`, not first, and not `.` or `..`)")]
    ChartName(String),
    #[error("its source's url `{url}` is not {} (source-controller refuses it)", .scheme.expected())]
    UrlScheme {
        url: String,
        scheme: super::validate::Scheme,
    },
    #[error("its source's url `{0}` holds white space, a control character or `\\`")]
    UrlCharacters(String),
    #[error("its source's url `{0}` names no host fluxwave can read (user information, or characters a host name does not have)")]
    UrlHost(String),
    #[error("`{0}` is not an OCI digest")]
    Digest(String),
    #[error("its chart version `{0}` is not a version, a version constraint or a tag")]
    Version(String),
}

/// Why the chart of a release cannot be found or made into a folder. `what` is the source
/// as `Kind namespace/name`, `label` a remote chart as `Remote::label` gives it.
#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    #[error("its chart comes from {what}, which nothing in the build applies")]
    SourceMissing { what: String },
    #[error("{what}: {invalid}")]
    SourceInvalid { what: String, invalid: Invalid },
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error("spec.chartRef has no kind")]
    ChartRefNoKind,
    #[error("its chart comes from a {0}, which fluxwave does not read")]
    UnreadKind(String),
    #[error("it has neither spec.chart nor spec.chartRef")]
    NoChartSpec,
    #[error("its chart spec names no chart")]
    NoChartName,
    #[error("its chart spec has no sourceRef kind")]
    NoSourceKind,
    #[error("{what} has no spec.url")]
    NoUrl { what: String },
    #[error("{what} is of type oci, and its spec.url is no oci:// address")]
    OciWithoutOciUrl { what: String },
    #[error("its chart is at {chart} in {what}, which is not this repository: fluxwave reads charts from this repository, Helm repositories and OCI registries")]
    NotThisRepository { chart: String, what: String },
    #[error("{0} is not in the repository")]
    NoChartYaml(String),
    #[error("the chart file {0} has no name fluxwave writes")]
    UnwritableName(String),
    #[error("cannot write the chart cache: {0}")]
    CacheWrite(std::io::Error),
    /// `path` is the folder as it is displayed.
    #[error("cannot write the chart cache {path}: {error}")]
    CacheWriteAt { path: String, error: std::io::Error },
    #[error("cannot read the chart cache: {0}")]
    CacheRead(std::io::Error),
    #[error("cannot read the chart cache {path}: {error}")]
    CacheReadAt { path: String, error: std::io::Error },
    #[error("version `{0}` is not a version constraint")]
    NotConstraint(String),
    #[error("{label} is not in the chart cache, and --offline forbids pulling it")]
    Offline { label: String },
    #[error("{label} is not in the chart cache, and {host} is not among the hosts this run may pull charts from ({hosts}; --allow-host adds one)")]
    HostNotAllowed {
        label: String,
        host: String,
        hosts: String,
    },
    #[error("{label} is not in the chart cache, and no helm is found to pull it")]
    NoHelm { label: String },
    /// A pull that failed earlier in this run, with what it said then.
    #[error("{0}")]
    FailedBefore(String),
    #[error("helm pull of {label} fails: {error}")]
    Pull { label: String, error: RunError },
    /// `printed` is what helm printed, trimmed.
    #[error("helm pull of {label} gave no chart: {printed}")]
    PullGaveNothing { label: String, printed: String },
    #[error("the index of {url} cannot be read: {error}")]
    Index { url: String, error: RunError },
    #[error(transparent)]
    Search(#[from] RunError),
    #[error("helm search printed {printed}: {error}")]
    SearchOutput {
        printed: String,
        error: serde_json::Error,
    },
    #[error("no version of chart {name} in {url} matches `{version}`")]
    NoMatchingVersion {
        name: String,
        url: String,
        version: String,
    },
    #[error("failed to locate values file: values.yaml (valuesFiles replace it)")]
    NoValuesYaml,
    /// The path is cut to its first 200 characters.
    #[error("no values file found at path '{0}' (valuesFiles)")]
    NoValuesFile(String),
    #[error("values file '{0}' (valuesFiles) is not UTF-8 text")]
    ValuesFileNotUtf8(String),
    #[error("unmarshaling values from '{file}' (valuesFiles) failed: {error}")]
    ValuesFile { file: String, error: ReadError },
}

/// Why a release's values cannot be composed (see `values::compose`).
#[derive(Debug, thiserror::Error)]
pub enum ValuesError {
    #[error("valuesFrom {kind}/{name}: only ConfigMap and Secret are read")]
    UnreadKind { kind: String, name: String },
    #[error("its values come from {kind} {namespace}/{name} (valuesFrom), which nothing in the build applies")]
    Missing {
        kind: String,
        namespace: String,
        name: String,
    },
    #[error(
        "its values come from {kind} {namespace}/{name} (valuesFrom), which cannot be read: {why}"
    )]
    Unreadable {
        kind: String,
        namespace: String,
        name: String,
        why: String,
    },
    #[error("{kind} {namespace}/{name} has no key `{key}` (valuesFrom valuesKey), and helm-controller fails the release")]
    NoKey {
        kind: String,
        namespace: String,
        name: String,
        key: String,
    },
    /// `why` is the reader's message, a Secret's text masked in it.
    #[error("{kind} {namespace}/{name} key `{key}` is not a YAML mapping: {why}")]
    NotMapping {
        kind: String,
        namespace: String,
        name: String,
        key: String,
        why: String,
    },
    #[error("valuesFrom {kind}/{name} targetPath `{path}`: {error}")]
    TargetPath {
        kind: String,
        name: String,
        path: String,
        error: PathError,
    },
}

/// Why a values document cannot be read (Helm's `ReadValues`).
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{0}")]
    Yaml(Box<SourceError>),
    #[error("it is not a mapping")]
    NotMapping,
}

/// Why a value cannot be set at a `--set` path (see `values::set_path`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("the value holds a comma, which Helm's parser reads as a second assignment")]
    Comma,
    #[error("`[{0}]` is not a list index")]
    NotIndex(String),
    #[error("list index {0} is too large")]
    IndexTooLarge(usize),
    #[error("an empty key")]
    EmptyKey,
    #[error("the path could not be followed")]
    Unfollowable,
}

/// Why a helm run gave nothing: its error output in a few lines when it failed, else what
/// stopped it, with the option that moves the bound it passed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{0} (the bound is --helm-output-limit, FLUXWAVE_HELM_OUTPUT_LIMIT, in MiB; nothing was cached)")]
    TooMuchOutput(process::Error),
    #[error("{0} (the bound is --helm-timeout, FLUXWAVE_HELM_TIMEOUT, in seconds)")]
    TimedOut(process::Error),
    #[error("{}", .0.brief())]
    Failed(process::Error),
    #[error("helm printed output that is not UTF-8")]
    NotUtf8,
}

impl From<process::Error> for RunError {
    fn from(e: process::Error) -> RunError {
        match e {
            e @ process::Error::TooMuchOutput { .. } => RunError::TooMuchOutput(e),
            e @ process::Error::TimedOut { .. } => RunError::TimedOut(e),
            e => RunError::Failed(e),
        }
    }
}
