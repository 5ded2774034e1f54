//! What a HelmRelease installs, as the `helm` layer renders it: the inventory keeps it on the
//! HelmRelease's entry, and `data` and the commands read it.

use serde_json::Value;

use crate::kustomize::object::ObjectId;
use crate::redact::Secrets;

/// What a HelmRelease installs, or why that is not known, with a digest of what decides it.
#[derive(Debug, Clone)]
pub struct Release {
    /// The digest of everything the render depends on (the chart and where it comes from,
    /// its version, the composed values, the release's name and namespace, the CRD policy):
    /// two revisions with the same inputs install the same release.
    pub inputs: String,
    pub render: Render,
}

#[derive(Debug, Clone)]
pub enum Render {
    Rendered(Rendered),
    /// Rendering was tried and failed: why.
    NotRendered(String),
    /// No helm program is found: nothing was tried.
    NoHelm,
}

/// Why a release is not rendered when no helm is found.
pub const NO_HELM: &str = "no helm is found on the PATH (install Helm 3, or name it with --helm)";

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
            Render::NotRendered(_) | Render::NoHelm => None,
        }
    }

    /// Why it is not rendered, when it is not.
    pub fn why(&self) -> Option<&str> {
        match &self.render {
            Render::Rendered(_) => None,
            Render::NotRendered(why) => Some(why),
            Render::NoHelm => Some(NO_HELM),
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
            .pointer("/metadata/annotations/helm.sh~1resource-policy")
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
