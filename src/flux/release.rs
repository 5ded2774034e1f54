//! What a HelmRelease installs, as the `helm` layer renders it: the inventory keeps it on the
//! HelmRelease's entry, and `data` and the commands read it.

use serde_json::Value;

use crate::kustomize::object::ObjectId;
use crate::pointer::Pointer;
use crate::redact::Secrets;

/// What a HelmRelease installs, or why that is not known, with a digest of what decides it.
#[derive(Debug, Clone)]
pub struct Release {
    /// The digest of everything the render depends on (the chart and where it comes from,
    /// its version, the composed values, the release's name and namespace, the CRD policy):
    /// two revisions with the same inputs install the same release.
    pub inputs: String,
    /// Which release it is, read from the spec without rendering.
    pub target: Target,
    pub render: Render,
}

/// What names a release for helm-controller (`action.ReleaseTargetChanged`): its name
/// (`release.ShortenName` of `GetReleaseName`), the namespace it installs into, the namespace
/// Helm keeps it in, and its chart's name. A change of any of them uninstalls the old release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub release_name: String,
    pub namespace: String,
    pub storage_namespace: String,
    /// The chart's name, when it can be read without fetching the chart: a Helm repository
    /// or OCI chart's name, a chart of this repository's `Chart.yaml` `name`.
    pub chart: Option<String>,
}

impl Target {
    /// Whether `other` is another release for helm-controller: `Some(true)` when it surely
    /// is, `None` when a chart name that cannot be read leaves it open.
    pub fn replaced_by(&self, other: &Target) -> Option<bool> {
        if (&self.release_name, &self.namespace, &self.storage_namespace)
            != (
                &other.release_name,
                &other.namespace,
                &other.storage_namespace,
            )
        {
            return Some(true);
        }
        match (&self.chart, &other.chart) {
            (Some(a), Some(b)) => Some(a != b),
            _ => None,
        }
    }

    /// `release NAME in NS, stored in NS, chart NAME`, for reasons.
    pub fn describe(&self) -> String {
        format!(
            "release {} in {}, stored in {}, chart {}",
            self.release_name,
            self.namespace,
            self.storage_namespace,
            self.chart.as_deref().unwrap_or("(not read)")
        )
    }
}

#[derive(Debug, Clone)]
pub enum Render {
    Rendered(Rendered),
    /// Rendering was tried and failed: why.
    NotRendered(String),
    /// No helm program is found: nothing was tried.
    NoHelm,
    /// Rendering is off (`--no-helm`): nothing was tried, as asked.
    Off,
}

/// Why a release is not rendered when no helm is found.
pub const NO_HELM: &str = "no helm is found on the PATH (install Helm 3, or name it with --helm)";

/// Why a release is not rendered with rendering off.
pub const OFF: &str = "rendering is off (--no-helm)";

impl Render {
    /// The render with every form of `secrets` masked in why it failed: Helm's error text
    /// quotes what a chart's `fail` was given, a post-renderer's or the YAML reader's may
    /// quote a rendered value.
    pub fn masked(self, secrets: &Secrets) -> Render {
        match self {
            Render::NotRendered(why) => Render::NotRendered(secrets.mask(&why).into_owned()),
            other => other,
        }
    }
}

impl Release {
    pub fn rendered(&self) -> Option<&Rendered> {
        match &self.render {
            Render::Rendered(r) => Some(r),
            Render::NotRendered(_) | Render::NoHelm | Render::Off => None,
        }
    }

    /// Why it is not rendered, when rendering was asked for and it is not (with rendering
    /// off, nothing is said: `unrendered` says it).
    pub fn why(&self) -> Option<&str> {
        match &self.render {
            Render::Rendered(_) | Render::Off => None,
            Render::NotRendered(why) => Some(why),
            Render::NoHelm => Some(NO_HELM),
        }
    }

    /// Why it is not rendered, whatever the reason (rendering off included).
    pub fn unrendered(&self) -> Option<&str> {
        match &self.render {
            Render::Off => Some(OFF),
            _ => self.why(),
        }
    }
}

/// A release as `helm template` rendered it and helm-controller's post-renderers changed it.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// `name version`.
    pub chart: String,
    pub release_name: String,
    /// Where namespaced objects without a namespace go (`targetNamespace`, else the
    /// HelmRelease's own).
    pub namespace: String,
    /// Where Helm keeps the release (`storageNamespace`, else the HelmRelease's own).
    pub storage_namespace: String,
    pub objects: Vec<Object>,
    /// Strings the values took from Secrets: masked, in every form a chart can give them,
    /// wherever the objects are printed.
    pub secret_strings: Secrets,
    /// Why the values were not checked against the chart's schema, when they were not.
    pub unchecked: Option<String>,
}

impl Rendered {
    /// `release NAME in NS, stored in NS, chart NAME VERSION`, for reasons.
    pub fn describe(&self) -> String {
        format!(
            "release {} in {}, stored in {}, chart {}",
            self.release_name, self.namespace, self.storage_namespace, self.chart
        )
    }
}

/// One object of a rendered release.
#[derive(Debug, Clone)]
pub struct Object {
    pub id: ObjectId,
    /// The chart file that rendered it (`templates/pvc.yaml`).
    pub template: String,
    /// A hook (`helm.sh/hook`): Helm runs it, and it is not part of the release an
    /// uninstall deletes.
    pub hook: bool,
    /// A CRD of the chart's `crds/` folder: Helm installs it once and never deletes it.
    pub crd_folder: bool,
    pub value: Value,
}

impl Object {
    /// Part of the release Helm upgrades and uninstalls: not a hook, not of `crds/`.
    pub fn in_release(&self) -> bool {
        !self.hook && !self.crd_folder
    }

    /// Annotated `helm.sh/resource-policy: keep`: Helm leaves it in place when it would
    /// delete it.
    pub fn kept(&self) -> bool {
        self.value
            .at_pointer("/metadata/annotations/helm.sh~1resource-policy")
            .and_then(Value::as_str)
            == Some("keep")
    }

    /// `Kind namespace/name (template)`, for evidence.
    pub fn at(&self) -> String {
        format!(
            "{} {}/{} ({})",
            self.id.kind, self.id.namespace, self.id.name, self.template
        )
    }
}
