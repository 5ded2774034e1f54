//! The `spec` of a ServiceDefinition, exactly as written: every field optional, unknown
//! fields rejected. A file with only `dependencies` places a unit in the graph (`waves`,
//! `plan`, `apply`, `check`, `cutover`, `blast` read nothing else); `render` also needs
//! `image` (and `port` for a Service), and says so where the file names the service. These types are also the source of the JSON Schema
//! (`fluxwave schema`), so each doc comment is what an editor shows on hover; defaults live
//! in the renderer and are stated here.

use std::collections::BTreeMap;

use crate::yaml::Spanned;
use schemars::JsonSchema;
use serde::Deserialize;

/// What the service is and how it runs. Rendered into a Namespace, PersistentVolumeClaims, a
/// Deployment, a Service, an Ingress and Flux image automation objects in `<name>.yaml`, and a
/// CloudNativePG cluster in `<name>-db.yaml` when `database` is set.
// The sections few services set are boxed: unset they cost a pointer, not their size (a
// Spec was 1,400 bytes, held for every service and moved while it is read).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Spec {
    /// One line about the service, written as the first comment of its rendered manifest.
    pub description: Option<String>,
    /// What must be healthy before this service starts: catalog services, extra units of
    /// fluxwave.yaml, or `<svc>-db` databases. Sets the service's wave.
    pub dependencies: Option<Vec<DependencyRef>>,
    /// `false`: nothing waits for this service, so its failure holds nothing else. It gets
    /// a Flux Kustomization of its own that depends on what the service depends on; a
    /// dependency on it is an error. Default true.
    pub gating: Option<bool>,
    /// The container image. `repository` and `tag` make the image reference. Needed by
    /// `fluxwave render` only: a definition without it just orders its unit.
    pub image: Option<Image>,
    /// The main container port, named `http`: the Service, the Ingress and the probes point
    /// at it. Without it the service gets no Service and no Ingress.
    pub port: Option<u16>,
    /// More container ports (DNS, metrics, ...), beside `port`.
    #[serde(default)]
    pub ports: Vec<Port>,
    /// The Kubernetes Service in front of `port`.
    pub service: Option<ServiceSpec>,
    /// Exposes `port` through an Ingress at this host.
    pub ingress: Option<Ingress>,
    /// Environment variables of the container, in this order.
    #[serde(default)]
    pub env: Vec<EnvVar>,
    /// Secrets and ConfigMaps whose every key becomes an environment variable, such as the
    /// `<name>-bootstrap-secret` SOPS Secret.
    #[serde(default)]
    pub env_from: Vec<EnvFrom>,
    /// Volumes mounted into the container: a PersistentVolumeClaim `<name>-<volume>` when
    /// `persistent` is set, else an emptyDir.
    #[serde(default)]
    pub volumes: Vec<Volume>,
    /// CPU and memory requests and limits of the container.
    pub resources: Option<Box<Resources>>,
    /// Readiness, liveness and startup probes.
    pub probes: Option<Box<Probes>>,
    /// Pod count of the Deployment. Default 1.
    pub replicas: Option<u32>,
    /// Deployment strategy. Default: `Recreate` when a ReadWriteOnce volume is mounted (two
    /// pods cannot share it during a rolling update), else Kubernetes' default.
    pub strategy: Option<Strategy>,
    /// Security settings of the container (and `fsGroup` of the pod).
    pub security_context: Option<Box<SecurityContext>>,
    /// A CloudNativePG Postgres cluster `<name>-db` in namespace `<name>-db`, rendered into
    /// `<name>-db.yaml`. Declaring it implies the dependency on `<name>-db`.
    pub database: Option<Box<Database>>,
    /// Annotate stateful objects (PersistentVolumeClaims, the CNPG cluster and their
    /// Namespaces) with `kustomize.toolkit.fluxcd.io/prune: disabled`, so that Flux never
    /// garbage-collects a volume or a database. Default true; set false to let Flux prune them.
    pub prune_protection: Option<bool>,
}

/// One dependency.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DependencyRef {
    /// The name of a catalog service, an extra unit or a `<svc>-db` database.
    #[schemars(with = "String")]
    pub to: Spanned<String>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Image {
    /// Image repository without tag, such as `lscr.io/linuxserver/sonarr`.
    pub repository: String,
    /// Image tag, such as `"4.0.9"` (quote it: YAML reads 4.10 as a number).
    #[schemars(with = "String")]
    pub tag: Spanned<String>,
    /// `IfNotPresent`, `Always` or `Never`. Default: Kubernetes' default for the tag.
    pub pull_policy: Option<PullPolicy>,
    /// Flux image automation: an ImageRepository and an ImagePolicy `<name>` in flux-system,
    /// and the `$imagepolicy` setter marker on the image line. On by default.
    pub automation: Option<Box<ImageAutomation>>,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
pub enum PullPolicy {
    IfNotPresent,
    Always,
    Never,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ImageAutomation {
    /// Render the image automation objects and the setter marker. Default true.
    pub enabled: Option<bool>,
    /// How often Flux scans the repository for tags. Default `6h`.
    pub interval: Option<String>,
    /// The semver range of tags Flux may update to. Default `>=<tag>`, which needs a semver
    /// tag (a leading `v` is fine); give `filterTags` to extract one from other tags.
    pub semver: Option<String>,
    /// Only tags matching `pattern` are considered; `extract` (such as `$version`) is the
    /// part compared by `semver`.
    pub filter_tags: Option<FilterTags>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FilterTags {
    /// A regular expression over tags, with named groups for `extract`.
    pub pattern: String,
    /// What to compare, such as `$version`. Default: the whole tag.
    pub extract: Option<String>,
}

/// An extra container port.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Port {
    /// Port name (an IANA service name: at most 15 lower-case letters, digits and `-`); not
    /// `http`, which is `port`.
    #[schemars(with = "String")]
    pub name: Spanned<String>,
    /// Container port number.
    pub port: u16,
    /// `TCP` (default), `UDP` or `SCTP`.
    pub protocol: Option<Protocol>,
    /// Also list the port on the Service (same number). Default false.
    pub expose: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
pub enum Protocol {
    #[serde(rename = "TCP")]
    Tcp,
    #[serde(rename = "UDP")]
    Udp,
    #[serde(rename = "SCTP")]
    Sctp,
}

impl Protocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Tcp => "TCP",
            Protocol::Udp => "UDP",
            Protocol::Sctp => "SCTP",
        }
    }
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServiceSpec {
    /// `ClusterIP` (default), `NodePort` or `LoadBalancer`.
    #[serde(rename = "type")]
    pub type_: Option<ServiceType>,
    /// The Service's port for `port` (named `http`). Default 80.
    pub port: Option<u16>,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
pub enum ServiceType {
    ClusterIP,
    NodePort,
    LoadBalancer,
}

impl ServiceType {
    pub fn as_str(self) -> &'static str {
        match self {
            ServiceType::ClusterIP => "ClusterIP",
            ServiceType::NodePort => "NodePort",
            ServiceType::LoadBalancer => "LoadBalancer",
        }
    }
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Ingress {
    /// The host name the service answers on, such as `sonarr.home.example`.
    #[schemars(with = "String")]
    pub host: Spanned<String>,
    /// `spec.ingressClassName`, such as `traefik`. Default: the cluster's default class.
    pub class_name: Option<String>,
    /// URL path prefix routed to the service. Default `/`.
    pub path: Option<String>,
    /// Terminate TLS for `host` with this certificate Secret.
    pub tls: Option<Tls>,
    /// Annotations of the Ingress (cert-manager issuer, middleware, ...).
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Tls {
    /// The Secret holding the certificate. Default `<name>-tls`.
    pub secret_name: Option<String>,
}

/// An environment variable: `value`, or `secretKeyRef` for one key of a Secret.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EnvVar {
    #[schemars(with = "String")]
    pub name: Spanned<String>,
    /// The value, always a string (`"1000"`, `"${CLUSTER_TZ:=UTC}"` for Flux substitution).
    pub value: Option<String>,
    /// One key of a Secret in the service's namespace.
    pub secret_key_ref: Option<SecretKeyRef>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SecretKeyRef {
    pub name: String,
    pub key: String,
}

/// Exactly one of `secret` and `configMap`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EnvFrom {
    /// A Secret in the service's namespace, such as `<name>-bootstrap-secret`.
    #[schemars(with = "Option<String>")]
    pub secret: Option<Spanned<String>>,
    /// A ConfigMap in the service's namespace.
    #[schemars(with = "Option<String>")]
    pub config_map: Option<Spanned<String>>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Volume {
    /// Volume name (a DNS-1123 label); the claim is `<service>-<name>`.
    #[schemars(with = "String")]
    pub name: Spanned<String>,
    /// Where the volume is mounted in the container.
    pub mount_path: String,
    /// Mount read-only. Default false.
    pub read_only: Option<bool>,
    /// Back the volume by a PersistentVolumeClaim; without it the volume is an emptyDir.
    pub persistent: Option<Persistent>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Persistent {
    /// Requested size, a Kubernetes quantity such as `10Gi`.
    #[schemars(with = "String")]
    pub size: Spanned<String>,
    /// `storageClassName` of the claim. Default: the cluster's default class.
    pub storage_class: Option<String>,
    /// Default `ReadWriteOnce`.
    pub access_mode: Option<AccessMode>,
}

// Kubernetes' own names for the access modes: they all start with `Read`.
#[allow(clippy::enum_variant_names)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
pub enum AccessMode {
    ReadWriteOnce,
    ReadWriteOncePod,
    ReadOnlyMany,
    ReadWriteMany,
}

impl AccessMode {
    pub fn as_str(self) -> &'static str {
        match self {
            AccessMode::ReadWriteOnce => "ReadWriteOnce",
            AccessMode::ReadWriteOncePod => "ReadWriteOncePod",
            AccessMode::ReadOnlyMany => "ReadOnlyMany",
            AccessMode::ReadWriteMany => "ReadWriteMany",
        }
    }
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Resources {
    pub requests: Option<ResourceList>,
    pub limits: Option<ResourceList>,
}

/// Kubernetes quantities, such as `cpu: 100m`, `memory: 256Mi`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResourceList {
    #[schemars(with = "Option<String>")]
    pub cpu: Option<Spanned<String>>,
    #[schemars(with = "Option<String>")]
    pub memory: Option<Spanned<String>>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Probes {
    pub readiness: Option<Probe>,
    pub liveness: Option<Probe>,
    pub startup: Option<Probe>,
}

/// Exactly one of `http` and `tcp`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Probe {
    /// HTTP GET this path; ready on a 2xx or 3xx answer.
    pub http: Option<String>,
    /// Ready when the port accepts a TCP connection (`tcp: true`).
    pub tcp: Option<bool>,
    /// The port name probed. Default `http` (the main `port`).
    #[schemars(with = "Option<String>")]
    pub port: Option<Spanned<String>>,
    /// Default 10.
    pub initial_delay_seconds: Option<u32>,
    /// Default 10.
    pub period_seconds: Option<u32>,
    /// Default: Kubernetes' default (3).
    pub failure_threshold: Option<u32>,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
pub enum Strategy {
    Recreate,
    RollingUpdate,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SecurityContext {
    pub run_as_user: Option<i64>,
    pub run_as_group: Option<i64>,
    pub run_as_non_root: Option<bool>,
    pub privileged: Option<bool>,
    pub read_only_root_filesystem: Option<bool>,
    pub allow_privilege_escalation: Option<bool>,
    /// Pod-level: the group that owns mounted volumes.
    pub fs_group: Option<i64>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Database {
    /// Postgres instances (1 primary, the rest replicas). Default 1.
    pub instances: Option<u32>,
    /// Volume size of each instance, a Kubernetes quantity such as `10Gi`.
    #[schemars(with = "String")]
    pub size: Spanned<String>,
    /// Storage class of the instances' volumes. Default: the cluster's default class.
    pub storage_class: Option<String>,
    /// Postgres image, such as `ghcr.io/cloudnative-pg/postgresql:16.4`. Default: the
    /// operator's.
    pub image_name: Option<String>,
    /// The application database. Default: the service name with `-` as `_`.
    pub database: Option<String>,
    /// Its owner; the password is in the Secret `<name>-db-app` (namespace `<name>-db`).
    /// Default: the database name.
    pub owner: Option<String>,
    /// Requests and limits of each instance.
    pub resources: Option<Resources>,
}
