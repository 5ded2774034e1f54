//! ServiceDefinition -> Kubernetes manifests. The output is a pure function of the validated
//! spec and the options: fixed object order (Namespace first), fixed field order, quoting by
//! `crate::yaml`, so rendering twice gives the same bytes and a golden file can pin it.
//! Stateful objects (claims, the CNPG cluster and their Namespaces) carry Flux's
//! `prune: disabled` unless the spec opts out: a volume or a database is never collected.

use serde_json::{json, Map, Value};

use crate::catalog::spec::{
    AccessMode, Image, Ingress, Probe, Protocol, ResourceList, Resources, SecurityContext,
    ServiceType, Spec, Strategy,
};
use crate::catalog::{validate, Service};
use crate::error::SourceError;
use crate::yaml;

/// The annotation Flux honours on any object: never delete it, whoever owns it.
pub const PRUNE_ANNOTATION: &str = "kustomize.toolkit.fluxcd.io/prune";
/// Where the image automation objects live (the ImageUpdateAutomation's namespace).
pub const IMAGE_NAMESPACE: &str = "flux-system";
const NAME_LABEL: &str = "app.kubernetes.io/name";
const DEFAULT_AUTOMATION_INTERVAL: &str = "6h";

#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Render ImageRepository/ImagePolicy and the setter marker (where the spec allows).
    pub image_automation: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            image_automation: true,
        }
    }
}

/// One rendered multi-document file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    /// `<svc>.yaml` or `<svc>-db.yaml`.
    pub name: String,
    /// The graph node that owns the file (its wave decides `--wave-layout`).
    pub unit: String,
    pub text: String,
}

/// One object with its trailing comments (JSON pointer, comment).
struct Doc {
    value: Value,
    comments: Vec<(String, String)>,
}

impl Doc {
    fn plain(value: Value) -> Doc {
        Doc {
            value,
            comments: vec![],
        }
    }
}

/// Renders a service into its files: `<svc>.yaml`, and `<svc>-db.yaml` when it has a
/// database. The errors are a definition without the `image` a Deployment needs (one that
/// declares only its dependencies), and a spec that asks for image automation without a
/// policy.
pub fn service(svc: &Service, opts: Options) -> Result<Vec<File>, Vec<SourceError>> {
    let Some(image) = svc.spec.image.as_ref() else {
        return Err(validate::renderable(svc).into_iter().collect());
    };
    let automation = opts.image_automation && automation_enabled(image);
    if automation {
        if let Some(e) = validate::automation_policy(svc) {
            return Err(vec![e]);
        }
    }
    let mut files = vec![File {
        name: format!("{}.yaml", svc.name),
        unit: svc.name.clone(),
        text: text(
            svc.spec.description.as_deref(),
            &svc.path,
            &app_docs(svc, image, automation),
        ),
    }];
    if svc.spec.database.is_some() {
        let db = format!("{}-db", svc.name);
        let about = format!(
            "CloudNativePG Postgres cluster for {}. The app user's credentials come from {db}-app.",
            svc.name
        );
        files.push(File {
            name: format!("{db}.yaml"),
            unit: db,
            text: text(Some(&about), &svc.path, &database_docs(svc)),
        });
    }
    Ok(files)
}

fn automation_enabled(image: &Image) -> bool {
    image
        .automation
        .as_ref()
        .is_none_or(|a| a.enabled != Some(false))
}

fn text(about: Option<&str>, source: &str, docs: &[Doc]) -> String {
    let mut out = String::new();
    if let Some(about) = about {
        for line in about.lines() {
            out.push_str(format!("# {line}").trim_end());
            out.push('\n');
        }
    }
    out.push_str(&format!(
        "# Rendered by `fluxwave render` from {source}; edit that file, not this one.\n"
    ));
    for (i, doc) in docs.iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        let comments: Vec<(&str, &str)> = doc
            .comments
            .iter()
            .map(|(p, c)| (p.as_str(), c.as_str()))
            .collect();
        out.push_str(&yaml::emit_with_comments(&doc.value, &comments));
    }
    out
}

fn protected(svc: &Service) -> bool {
    svc.spec.prune_protection != Some(false)
}

fn prune_disabled() -> Value {
    json!({ PRUNE_ANNOTATION: "disabled" })
}

fn namespace(name: &str, stateful: bool) -> Value {
    let mut meta = Map::new();
    meta.insert("name".into(), json!(name));
    if stateful {
        meta.insert("annotations".into(), prune_disabled());
    }
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": meta})
}

/// metadata of a namespaced object of the service.
fn meta(svc: &Service, name: &str, annotations: Option<Value>) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), json!(name));
    m.insert("namespace".into(), json!(svc.name));
    m.insert("labels".into(), json!({ NAME_LABEL: svc.name }));
    if let Some(a) = annotations {
        m.insert("annotations".into(), a);
    }
    Value::Object(m)
}

fn app_docs(svc: &Service, image: &Image, automation: bool) -> Vec<Doc> {
    let spec = &svc.spec;
    let claims: Vec<Value> = spec
        .volumes
        .iter()
        .filter_map(|v| v.persistent.as_ref().map(|p| (v, p)))
        .map(|(v, p)| {
            let mut s = Map::new();
            let mode = p.access_mode.unwrap_or(AccessMode::ReadWriteOnce);
            s.insert("accessModes".into(), json!([mode.as_str()]));
            if let Some(class) = &p.storage_class {
                s.insert("storageClassName".into(), json!(class));
            }
            s.insert(
                "resources".into(),
                json!({"requests": {"storage": p.size.value}}),
            );
            json!({
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": meta(
                    svc,
                    &format!("{}-{}", svc.name, v.name.value),
                    protected(svc).then(prune_disabled),
                ),
                "spec": s,
            })
        })
        .collect();
    let mut docs = vec![Doc::plain(namespace(
        &svc.name,
        protected(svc) && !claims.is_empty(),
    ))];
    docs.extend(claims.into_iter().map(Doc::plain));
    docs.push(deployment(svc, image, automation));
    if spec.port.is_some() {
        docs.push(Doc::plain(service_object(svc)));
        if let Some(ing) = &spec.ingress {
            docs.push(Doc::plain(ingress(svc, ing)));
        }
    }
    if automation {
        docs.extend(image_automation(svc, image).into_iter().map(Doc::plain));
    }
    docs
}

/// The service's Deployment, its image marked for Flux's image automation when
/// `automation`.
fn deployment(svc: &Service, image: &Image, automation: bool) -> Doc {
    let spec = &svc.spec;
    let mut d = Map::new();
    d.insert("replicas".into(), json!(spec.replicas.unwrap_or(1)));
    if let Some(s) = strategy(spec) {
        d.insert("strategy".into(), json!({"type": format!("{s:?}")}));
    }
    d.insert(
        "selector".into(),
        json!({"matchLabels": { NAME_LABEL: svc.name }}),
    );
    d.insert(
        "template".into(),
        json!({"metadata": {"labels": { NAME_LABEL: svc.name }}, "spec": pod(svc, image)}),
    );
    let comments = if automation {
        vec![(
            "/spec/template/spec/containers/0/image".to_string(),
            format!("{{\"$imagepolicy\": \"{IMAGE_NAMESPACE}:{}\"}}", svc.name),
        )]
    } else {
        vec![]
    };
    Doc {
        value: json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": meta(svc, &svc.name, None),
            "spec": d,
        }),
        comments,
    }
}

/// The Deployment's strategy: the one the spec asks for, else `Recreate` when a volume is a
/// ReadWriteOnce claim, which two pods cannot mount during a rolling update.
fn strategy(spec: &Spec) -> Option<Strategy> {
    let rwo = spec.volumes.iter().any(|v| {
        v.persistent.as_ref().is_some_and(|p| {
            matches!(
                p.access_mode.unwrap_or(AccessMode::ReadWriteOnce),
                AccessMode::ReadWriteOnce | AccessMode::ReadWriteOncePod
            )
        })
    });
    spec.strategy.or(rwo.then_some(Strategy::Recreate))
}

/// The Deployment's pod: its one container, the pod's `fsGroup`, and its volumes (a
/// persistent one is the service's claim `<svc>-<volume>`, any other an `emptyDir`).
fn pod(svc: &Service, image: &Image) -> Map<String, Value> {
    let spec = &svc.spec;
    let mut pod = Map::new();
    pod.insert("containers".into(), json!([container(svc, image)]));
    if let Some(fs_group) = spec.security_context.as_ref().and_then(|s| s.fs_group) {
        pod.insert("securityContext".into(), json!({"fsGroup": fs_group}));
    }
    if !spec.volumes.is_empty() {
        let volumes = spec
            .volumes
            .iter()
            .map(|v| match &v.persistent {
                Some(_) => json!({"name": v.name.value, "persistentVolumeClaim":
                    {"claimName": format!("{}-{}", svc.name, v.name.value)}}),
                None => json!({"name": v.name.value, "emptyDir": {}}),
            })
            .collect();
        pod.insert("volumes".into(), Value::Array(volumes));
    }
    pod
}

/// The service's container, each field only when the spec sets it: the image, the ports
/// (`http` for `port`, then the others), the environment, the probes, resources, the
/// container's security context and the volume mounts.
fn container(svc: &Service, image: &Image) -> Map<String, Value> {
    let spec = &svc.spec;
    let mut c = Map::new();
    c.insert("name".into(), json!(svc.name));
    c.insert(
        "image".into(),
        json!(format!("{}:{}", image.repository, image.tag.value)),
    );
    if let Some(p) = image.pull_policy {
        c.insert("imagePullPolicy".into(), json!(format!("{p:?}")));
    }
    let mut ports = Vec::new();
    if let Some(port) = spec.port {
        ports.push(json!({"name": "http", "containerPort": port, "protocol": "TCP"}));
    }
    for p in &spec.ports {
        ports.push(json!({
            "name": p.name.value,
            "containerPort": p.port,
            "protocol": p.protocol.unwrap_or(Protocol::Tcp).as_str(),
        }));
    }
    if !ports.is_empty() {
        c.insert("ports".into(), Value::Array(ports));
    }
    environment(spec, &mut c);
    if let Some(probes) = &spec.probes {
        for (key, probe) in [
            ("startupProbe", &probes.startup),
            ("livenessProbe", &probes.liveness),
            ("readinessProbe", &probes.readiness),
        ] {
            if let Some(p) = probe {
                c.insert(key.into(), probe_object(p));
            }
        }
    }
    if let Some(r) = &spec.resources {
        c.insert("resources".into(), resources(r));
    }
    if let Some(sc) = spec
        .security_context
        .as_ref()
        .and_then(|sc| container_security(sc))
    {
        c.insert("securityContext".into(), sc);
    }
    if !spec.volumes.is_empty() {
        let mounts = spec
            .volumes
            .iter()
            .map(|v| {
                let mut m = Map::new();
                m.insert("name".into(), json!(v.name.value));
                m.insert("mountPath".into(), json!(v.mount_path));
                if v.read_only == Some(true) {
                    m.insert("readOnly".into(), json!(true));
                }
                Value::Object(m)
            })
            .collect();
        c.insert("volumeMounts".into(), Value::Array(mounts));
    }
    c
}

/// The container's `env` (a value, a Secret's key, or the name alone) and `envFrom` (a
/// Secret or a ConfigMap), into `c`, each when the spec has any.
fn environment(spec: &Spec, c: &mut Map<String, Value>) {
    if !spec.env.is_empty() {
        let env = spec
            .env
            .iter()
            .map(|e| match (&e.value, &e.secret_key_ref) {
                (Some(v), _) => json!({"name": e.name.value, "value": v}),
                (None, Some(r)) => json!({"name": e.name.value,
                    "valueFrom": {"secretKeyRef": {"name": r.name, "key": r.key}}}),
                (None, None) => json!({"name": e.name.value}),
            })
            .collect();
        c.insert("env".into(), Value::Array(env));
    }
    if !spec.env_from.is_empty() {
        let from = spec
            .env_from
            .iter()
            .map(|f| match (&f.secret, &f.config_map) {
                (Some(s), _) => json!({"secretRef": {"name": s.value}}),
                (None, Some(m)) => json!({"configMapRef": {"name": m.value}}),
                (None, None) => json!({}),
            })
            .collect();
        c.insert("envFrom".into(), Value::Array(from));
    }
}

/// The container's security context: the fields the spec sets, in a fixed order
/// (`fsGroup` is the pod's); none when it sets none of them.
fn container_security(sc: &SecurityContext) -> Option<Value> {
    let fields: [(&str, Option<Value>); 6] = [
        ("runAsUser", sc.run_as_user.map(Value::from)),
        ("runAsGroup", sc.run_as_group.map(Value::from)),
        ("runAsNonRoot", sc.run_as_non_root.map(Value::from)),
        ("privileged", sc.privileged.map(Value::from)),
        (
            "readOnlyRootFilesystem",
            sc.read_only_root_filesystem.map(Value::from),
        ),
        (
            "allowPrivilegeEscalation",
            sc.allow_privilege_escalation.map(Value::from),
        ),
    ];
    let mut s = Map::new();
    for (k, v) in fields {
        if let Some(v) = v {
            s.insert(k.into(), v);
        }
    }
    (!s.is_empty()).then_some(Value::Object(s))
}

fn probe_object(p: &Probe) -> Value {
    let port = p.port.as_ref().map_or("http", |s| s.value.as_str());
    let mut m = Map::new();
    match &p.http {
        Some(path) => m.insert("httpGet".into(), json!({"path": path, "port": port})),
        None => m.insert("tcpSocket".into(), json!({"port": port})),
    };
    m.insert(
        "initialDelaySeconds".into(),
        json!(p.initial_delay_seconds.unwrap_or(10)),
    );
    m.insert(
        "periodSeconds".into(),
        json!(p.period_seconds.unwrap_or(10)),
    );
    if let Some(f) = p.failure_threshold {
        m.insert("failureThreshold".into(), json!(f));
    }
    Value::Object(m)
}

fn resources(r: &Resources) -> Value {
    let list = |l: &ResourceList| {
        let mut m = Map::new();
        if let Some(cpu) = &l.cpu {
            m.insert("cpu".into(), json!(cpu.value));
        }
        if let Some(memory) = &l.memory {
            m.insert("memory".into(), json!(memory.value));
        }
        Value::Object(m)
    };
    let mut m = Map::new();
    if let Some(req) = &r.requests {
        m.insert("requests".into(), list(req));
    }
    if let Some(lim) = &r.limits {
        m.insert("limits".into(), list(lim));
    }
    Value::Object(m)
}

fn service_object(svc: &Service) -> Value {
    let s = svc.spec.service.as_ref();
    let kind = s
        .and_then(|s| s.type_)
        .unwrap_or(ServiceType::ClusterIP)
        .as_str();
    let mut ports = vec![json!({
        "name": "http",
        "port": s.and_then(|s| s.port).unwrap_or(80),
        "targetPort": "http",
        "protocol": "TCP",
    })];
    for p in svc.spec.ports.iter().filter(|p| p.expose == Some(true)) {
        ports.push(json!({
            "name": p.name.value,
            "port": p.port,
            "targetPort": p.name.value,
            "protocol": p.protocol.unwrap_or(Protocol::Tcp).as_str(),
        }));
    }
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta(svc, &svc.name, None),
        "spec": {
            "type": kind,
            "selector": { NAME_LABEL: svc.name },
            "ports": ports,
        },
    })
}

fn ingress(svc: &Service, ing: &Ingress) -> Value {
    let host = &ing.host.value;
    let annotations = (!ing.annotations.is_empty()).then(|| json!(ing.annotations));
    let mut s = Map::new();
    if let Some(class) = &ing.class_name {
        s.insert("ingressClassName".into(), json!(class));
    }
    if let Some(tls) = &ing.tls {
        let secret = tls
            .secret_name
            .clone()
            .unwrap_or_else(|| format!("{}-tls", svc.name));
        s.insert(
            "tls".into(),
            json!([{"hosts": [host], "secretName": secret}]),
        );
    }
    s.insert(
        "rules".into(),
        json!([{
            "host": host,
            "http": {"paths": [{
                "path": ing.path.as_deref().unwrap_or("/"),
                "pathType": "Prefix",
                "backend": {"service": {"name": svc.name, "port": {"name": "http"}}},
            }]},
        }]),
    );
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": meta(svc, &svc.name, annotations),
        "spec": s,
    })
}

fn image_automation(svc: &Service, image: &Image) -> [Value; 2] {
    let a = image.automation.as_ref();
    let interval = a
        .and_then(|a| a.interval.as_deref())
        .unwrap_or(DEFAULT_AUTOMATION_INTERVAL);
    let range = a
        .and_then(|a| a.semver.clone())
        .unwrap_or_else(|| format!(">={}", image.tag.value));
    let meta = json!({"name": svc.name, "namespace": IMAGE_NAMESPACE});
    let repository = json!({
        "apiVersion": "image.toolkit.fluxcd.io/v1",
        "kind": "ImageRepository",
        "metadata": meta,
        "spec": {"image": image.repository, "interval": interval},
    });
    let mut spec = Map::new();
    spec.insert("imageRepositoryRef".into(), json!({"name": svc.name}));
    if let Some(ft) = a.and_then(|a| a.filter_tags.as_ref()) {
        let mut f = Map::new();
        f.insert("pattern".into(), json!(ft.pattern));
        if let Some(extract) = &ft.extract {
            f.insert("extract".into(), json!(extract));
        }
        spec.insert("filterTags".into(), Value::Object(f));
    }
    spec.insert("policy".into(), json!({"semver": {"range": range}}));
    let policy = json!({
        "apiVersion": "image.toolkit.fluxcd.io/v1",
        "kind": "ImagePolicy",
        "metadata": meta,
        "spec": spec,
    });
    [repository, policy]
}

fn database_docs(svc: &Service) -> Vec<Doc> {
    let Some(db) = &svc.spec.database else {
        return vec![];
    };
    let name = format!("{}-db", svc.name);
    let database = db
        .database
        .clone()
        .unwrap_or_else(|| svc.name.replace('-', "_"));
    let owner = db.owner.clone().unwrap_or_else(|| database.clone());
    let mut spec = Map::new();
    spec.insert("instances".into(), json!(db.instances.unwrap_or(1)));
    if let Some(image) = &db.image_name {
        spec.insert("imageName".into(), json!(image));
    }
    let mut storage = Map::new();
    storage.insert("size".into(), json!(db.size.value));
    if let Some(class) = &db.storage_class {
        storage.insert("storageClass".into(), json!(class));
    }
    spec.insert("storage".into(), Value::Object(storage));
    spec.insert(
        "bootstrap".into(),
        json!({"initdb": {"database": database, "owner": owner,
            "secret": {"name": format!("{name}-app")}}}),
    );
    if let Some(r) = &db.resources {
        spec.insert("resources".into(), resources(r));
    }
    let mut meta = Map::new();
    meta.insert("name".into(), json!(name));
    meta.insert("namespace".into(), json!(name));
    if protected(svc) {
        meta.insert("annotations".into(), prune_disabled());
    }
    vec![
        Doc::plain(namespace(&name, protected(svc))),
        Doc::plain(json!({
            "apiVersion": "postgresql.cnpg.io/v1",
            "kind": "Cluster",
            "metadata": meta,
            "spec": spec,
        })),
    ]
}

#[cfg(test)]
mod tests;
