//! HelmReleases rendered with the real Helm, as helm-controller would install them: the chart
//! found as Flux finds it (`chart`), the values composed as helm-controller composes them
//! (`values`), `helm template` run as an external program (the one on the PATH, or `--helm`),
//! then helm-controller's post-renderers: each `spec.postRenderers[].kustomize` (patches),
//! `spec.commonMetadata`, and the origin labels `helm.toolkit.fluxcd.io/name` and
//! `/namespace` on every object (helm-controller `postrender.BuildPostRenderers`).
//!
//! Charts are pulled once per chart and version into the cache (`--cache`, default
//! `$XDG_CACHE_HOME/fluxwave`, else `~/.cache/fluxwave`), and what `helm template` printed is
//! kept there too, by the digest of everything it depends on (the helm binary, the chart's
//! files, the release name and namespace, the values, the CRD policy): a warm cache renders
//! an unchanged release without running Helm. Releases are rendered in parallel. A release
//! that cannot be rendered (no helm, `--offline` and not cached, a chart source elsewhere,
//! values that cannot be read, a chart Helm refuses) is kept with the reason, never skipped.

pub(crate) mod chart;
mod command;
mod error;
mod schema;
mod semver;
mod validate;
pub(crate) mod values;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::flux::data::HELM_GROUP;
use crate::flux::inventory::Inventory;
pub use crate::flux::release::{Object, Release, Render, Rendered, Target};
use crate::flux::substitute::Source;
use crate::kustomize::object::{crd_kind, Cluster, ObjectId, CLUSTER_SCOPED};
use crate::kustomize::Builder;
use crate::pointer::Pointer;
use crate::tree::FileTree;

pub use chart::Chart;
use error::{ChartError, Error, RunError, ValuesError};

/// How releases are rendered in this run (`--helm`, `--no-helm`, `--offline`, `--cache`).
#[derive(Debug, Clone)]
pub struct Options {
    /// Whether to render at all.
    pub enabled: bool,
    /// The helm program; `None` when none is found (every release then says so).
    pub helm: Option<PathBuf>,
    /// Never reach the network: charts only from this repository and the cache.
    pub offline: bool,
    pub cache: PathBuf,
    /// The hosts charts may be pulled from.
    pub hosts: Hosts,
    /// The bounds of each helm run (`--helm-timeout`, `--helm-output-limit`).
    pub limits: crate::process::Limits,
    /// The Kubernetes version charts are rendered for (`--kube-version`): helm-controller
    /// renders for its cluster's, which an offline render cannot ask.
    pub kube_version: String,
}

/// The Kubernetes version charts are rendered for unless `--kube-version` says another: the
/// one a released helm v3.22 (the pinned helm) is built for, its client-go's (helm's
/// Makefile sets it; a `go install`ed helm says v1.20.0, which charts such as app-template
/// 4 refuse).
pub const DEFAULT_KUBE_VERSION: &str = "v1.37.0";

/// Whether `v` is a Kubernetes version helm takes: `v1.37`, `1.37.2`.
pub fn valid_kube_version(v: &str) -> bool {
    let parts: Vec<&str> = v.strip_prefix('v').unwrap_or(v).split('.').collect();
    (2..=3).contains(&parts.len())
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 9 && p.bytes().all(|b| b.is_ascii_digit()))
}

/// The hosts a run may pull charts from (`--allow-host`, and for a comparison with a base
/// revision, the hosts of that revision's chart sources: see `cli`).
#[derive(Clone, Default)]
pub enum Hosts {
    /// Any host the repository names.
    #[default]
    Any,
    /// These hosts only: a name alone allows every port of it, `name:port` that port.
    Only(BTreeSet<String>),
    /// The hosts a function gives, asked the first time a chart is to be pulled (most runs
    /// pull nothing: their charts are cached).
    Later(Arc<Later>),
}

/// The hosts of `Hosts::Later`, worked out once.
pub struct Later {
    make: Box<dyn Fn() -> BTreeSet<String> + Send + Sync>,
    hosts: OnceLock<BTreeSet<String>>,
}

impl Hosts {
    /// The hosts `make` gives, when first needed.
    pub fn later(make: impl Fn() -> BTreeSet<String> + Send + Sync + 'static) -> Hosts {
        Hosts::Later(Arc::new(Later {
            make: Box::new(make),
            hosts: OnceLock::new(),
        }))
    }

    fn list(&self) -> Option<&BTreeSet<String>> {
        match self {
            Hosts::Any => None,
            Hosts::Only(hosts) => Some(hosts),
            Hosts::Later(l) => Some(l.hosts.get_or_init(|| (l.make)())),
        }
    }

    pub fn allows(&self, host: &str) -> bool {
        let Some(hosts) = self.list() else {
            return true;
        };
        let host = host.to_ascii_lowercase();
        hosts.contains(&host) || hosts.contains(validate::host_name(&host))
    }
}

impl std::fmt::Debug for Hosts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self}")
    }
}

impl std::fmt::Display for Hosts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.list() {
            None => f.write_str("any host"),
            Some(hosts) if hosts.is_empty() => f.write_str("none"),
            Some(hosts) => {
                let list: Vec<&str> = hosts.iter().map(String::as_str).collect();
                f.write_str(&list.join(", "))
            }
        }
    }
}

/// The hosts of the chart sources `tree` writes: the `spec.url` of every HelmRepository and
/// OCIRepository among its manifests that is an address source-controller fetches.
pub fn source_hosts(tree: &FileTree) -> BTreeSet<String> {
    let mut hosts = BTreeSet::new();
    for (path, text) in tree.files() {
        if !(text.contains("HelmRepository") || text.contains("OCIRepository")) {
            continue;
        }
        let Ok(docs) = crate::yaml::parse_all(path, text) else {
            continue;
        };
        for doc in docs {
            let kind = doc.get("kind").and_then(Value::as_str);
            let scheme = match kind {
                Some("HelmRepository") => validate::Scheme::HelmRepository,
                Some("OCIRepository") => validate::Scheme::Oci,
                _ => continue,
            };
            let group = doc.get("apiVersion").and_then(Value::as_str).unwrap_or("");
            if !group
                .strip_prefix(crate::flux::source::SOURCE_GROUP)
                .is_some_and(|version| version.starts_with('/'))
            {
                continue;
            }
            if let Some(url) = doc.at_pointer("/spec/url").and_then(Value::as_str) {
                hosts.extend(validate::url(url, scheme).ok());
            }
        }
    }
    hosts
}

impl Options {
    /// Rendering off: releases are judged by their values alone.
    pub fn off() -> Options {
        Options {
            enabled: false,
            helm: None,
            offline: true,
            cache: PathBuf::new(),
            hosts: Hosts::Any,
            limits: crate::process::Limits::HELM,
            kube_version: DEFAULT_KUBE_VERSION.into(),
        }
    }

    /// Rendering on, with `helm` (else the first `helm` on the PATH) and `cache` (else the
    /// user's cache folder), pulling charts from `hosts` only.
    pub fn new(
        helm: Option<PathBuf>,
        offline: bool,
        cache: Option<PathBuf>,
        hosts: Hosts,
    ) -> Options {
        let helm = helm.or_else(|| on_path("helm"));
        let cache = cache.unwrap_or_else(default_cache);
        Options {
            enabled: true,
            helm,
            offline,
            cache,
            hosts,
            limits: crate::process::Limits::HELM,
            kube_version: DEFAULT_KUBE_VERSION.into(),
        }
    }
}

/// The options of this run, set by the command line (off until then, as in the library's
/// own tests).
static OPTIONS: Mutex<Option<Arc<Options>>> = Mutex::new(None);

pub fn configure(options: Options) {
    *OPTIONS.lock().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(options));
}

pub fn options() -> Arc<Options> {
    OPTIONS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
        .unwrap_or_else(|| Arc::new(Options::off()))
}

pub fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

pub fn default_cache() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("fluxwave")
}

/// Renders every HelmRelease of `inv` (built from `tree`) with this run's options, and
/// sets each one's `release`.
/// With rendering off, each is kept not rendered (`Render::Off`), with what decides its
/// render and which release it is: a change of either is still seen.
pub fn render(inv: &mut Inventory, tree: &FileTree) {
    let opts = options();
    render_with(inv, tree, &opts);
}

/// What one release needs to be rendered.
struct Job {
    id: ObjectId,
    chart: Result<chart::Resolved, Error>,
    release_name: String,
    namespace: String,
    storage_namespace: String,
    include_crds: bool,
    values: Values,
    hr: Arc<Value>,
    target: Target,
    /// The cluster it installs into when that is not Flux's own: its `spec.kubeConfig`'s, else
    /// the one it is applied to (helm-controller installs with the client `kubeConfig`
    /// gives; changing it leaves the old release where it was).
    cluster: Option<Cluster>,
}

/// A release's values as composed (`values::compose`), and as helm reads them on its standard
/// input, JSON (empty when they cannot be composed): the render's key and the release's inputs
/// digest both take it.
#[derive(Debug)]
struct ReleaseValues {
    values: Result<values::Composed, ValuesError>,
    json: String,
}

type Values = Arc<ReleaseValues>;

/// Values composed in this run, by the id of the release they were composed for, with its
/// object (held here, so that an object no inventory holds any more is let go) and what its
/// `valuesFrom` read (`values::reads`): a history's step composes again only the values of a
/// release that changed. One object stands for another equal to it: a release a ResourceSet
/// makes is made afresh at every step.
type Memo = std::collections::HashMap<ObjectId, Vec<(Arc<Value>, Vec<Option<Source>>, Values)>>;
static COMPOSED: Mutex<Option<Memo>> = Mutex::new(None);

/// The values of release `hr` (`id`) of `inv`, composed again only when they were not for
/// this object, or one equal to it, with the same reads.
fn composed(id: &ObjectId, hr: &Arc<Value>, inv: &Inventory) -> Values {
    let reads = values::reads(hr, id, &inv.sources);
    let lock = || COMPOSED.lock().unwrap_or_else(|p| p.into_inner());
    let same_reads =
        |read: &[Option<Source>]| read.iter().map(Option::as_ref).eq(reads.iter().copied());
    let mut guard = lock();
    if let Some(kept) = guard.get_or_insert_default().get_mut(id) {
        let same =
            |was: &Arc<Value>, read: &[Option<Source>]| Arc::ptr_eq(was, hr) && same_reads(read);
        if let Some((_, _, values)) = kept.iter().find(|(was, read, _)| same(was, read)) {
            return values.clone();
        }
        // An equal object made afresh takes the values on, kept while it is.
        let equal = kept
            .iter()
            .find(|(was, read, _)| was == hr && same_reads(read))
            .map(|(_, read, values)| (hr.clone(), read.clone(), values.clone()));
        if let Some(made) = equal {
            let values = made.2.clone();
            kept.push(made);
            return values;
        }
    }
    drop(guard);
    let values = values::compose(hr, id, &inv.sources);
    let json = values
        .as_ref()
        .map(|v| values::for_helm(&v.values))
        .unwrap_or_default();
    let made = Arc::new(ReleaseValues { values, json });
    let reads = reads.into_iter().map(|r| r.cloned()).collect();
    lock()
        .get_or_insert_default()
        .entry(id.clone())
        .or_default()
        .push((hr.clone(), reads, made.clone()));
    made
}

fn render_with(inv: &mut Inventory, tree: &FileTree, opts: &Options) {
    let releases: Vec<(&ObjectId, &Arc<Value>)> = inv
        .objects
        .iter()
        .filter(|(id, _)| id.is(HELM_GROUP, "HelmRelease"))
        .filter_map(|(id, e)| Some((id, e.whole.as_ref()?)))
        .collect();
    if releases.is_empty() {
        return;
    }
    // Values kept for objects no inventory holds are let go.
    if let Some(kept) = COMPOSED.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
        kept.retain(|_, made| {
            made.retain(|(hr, _, _)| Arc::strong_count(hr) > 1);
            !made.is_empty()
        });
    }
    // Composing each release's values reads the inventory only: on every core.
    let jobs: Vec<Job> = crate::par::map(&releases, |(id, hr)| job(id, hr, inv, tree));
    if !opts.enabled {
        for j in &jobs {
            if let Some(e) = Arc::make_mut(&mut inv.objects).get_mut(&j.id) {
                e.release = Some(Arc::new(Release {
                    inputs: inputs(j, tree),
                    target: j.target.clone(),
                    render: Render::Off,
                }));
            }
        }
        return;
    }
    // Each distinct chart is fetched once, in parallel; without helm, none is.
    let helm = opts.helm.as_deref();
    let charts: BTreeSet<&Chart> = jobs
        .iter()
        .filter(|_| helm.is_some())
        .filter_map(|j| j.chart.as_ref().ok())
        .map(|r| &r.chart)
        .collect();
    let charts: Vec<&Chart> = charts.into_iter().collect();
    let fetched = pool(&charts, |c| match c {
        Chart::Local { path } => chart::local(tree, path, opts),
        Chart::Remote(r) => chart::remote(r, opts, helm),
    });
    let fetched: BTreeMap<&Chart, Result<chart::Fetched, ChartError>> =
        charts.iter().copied().zip(fetched).collect();
    let helm_id = helm.map(crate::cache::program_identity).unwrap_or_default();
    let renders = pool(&jobs, |j| {
        let render = render_one(j, &fetched, tree, opts, &helm_id);
        // Why it failed may quote its values (a chart's `fail`, helm's own errors).
        let render = match &j.values.values {
            Ok(v) => render.masked(&v.secret_strings),
            Err(_) => render,
        };
        (render, inputs(j, tree))
    });
    for (j, (render, inputs)) in jobs.iter().zip(renders) {
        if let Some(e) = Arc::make_mut(&mut inv.objects).get_mut(&j.id) {
            e.release = Some(Arc::new(Release {
                inputs,
                target: j.target.clone(),
                render,
            }));
        }
    }
}

/// The digest of what decides a release's render (`Release::inputs`): where its chart comes
/// from and which version (a chart of this repository by its files, read with or without
/// helm), the values, the release's name and namespaces, the CRD policy and the
/// post-renderers.
fn inputs(j: &Job, tree: &FileTree) -> String {
    let mut h = Sha256::new();
    let (chart, values_files) = match &j.chart {
        Ok(r) => (
            match &r.chart {
                Chart::Local { path } => chart::local_digest(tree, path),
                remote => format!("{remote:?}"),
            },
            r.values_files.join("\n"),
        ),
        Err(e) => (e.to_string(), String::new()),
    };
    let values = match &j.values.values {
        Ok(_) => j.values.json.clone(),
        Err(e) => e.to_string(),
    };
    let spec = |p: &str| j.hr.at_pointer(p).map(Value::to_string).unwrap_or_default();
    for part in [
        chart,
        values,
        values_files,
        j.release_name.clone(),
        j.namespace.clone(),
        j.storage_namespace.clone(),
        j.include_crds.to_string(),
        spec("/spec/postRenderers"),
        spec("/spec/commonMetadata"),
    ] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    crate::fs::hex(&h.finalize())
}

fn job(id: &ObjectId, hr: &Arc<Value>, inv: &Inventory, tree: &FileTree) -> Job {
    let text = |p: &str| {
        hr.at_pointer(p)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let target = text("/spec/targetNamespace");
    let namespace = target.clone().unwrap_or_else(|| id.namespace.clone());
    let release_name = shorten(&text("/spec/releaseName").unwrap_or_else(|| match &target {
        Some(t) => format!("{t}-{}", id.name),
        None => id.name.clone(),
    }));
    // A HelmRelease the API server refuses is never reconciled: nothing to render.
    let chart = validate::helm_release(&id.name, text("/spec/releaseName").as_deref())
        .map_err(Error::from)
        .and_then(|()| chart::resolve(hr, &id.namespace, inv).map_err(Error::from));
    // helm-controller installs the chart's `crds/` unless `install.crds` is `Skip` (its
    // default is `Create`).
    let include_crds = text("/spec/install/crds").as_deref() != Some("Skip");
    let values = composed(id, hr, inv);
    let storage_namespace = text("/spec/storageNamespace").unwrap_or_else(|| id.namespace.clone());
    let target = Target {
        release_name: release_name.clone(),
        namespace: namespace.clone(),
        storage_namespace: storage_namespace.clone(),
        chart: chart
            .as_ref()
            .ok()
            .and_then(|r| chart::name(tree, &r.chart)),
    };
    Job {
        id: id.clone(),
        chart,
        release_name,
        storage_namespace,
        namespace,
        include_crds,
        values,
        hr: hr.clone(),
        target,
        cluster: crate::flux::inventory::target_cluster(hr, id),
    }
}

/// helm-controller's `release.ShortenName`: a name over 53 characters becomes its first 40,
/// `-` and the first 12 hex digits of its SHA-256.
pub fn shorten(name: &str) -> String {
    if name.len() <= 53 {
        return name.to_string();
    }
    let sum = crate::fs::hex(&Sha256::digest(name.as_bytes()));
    let cut = name
        .char_indices()
        .map(|(i, _)| i)
        .take_while(|i| *i <= 40)
        .last()
        .unwrap_or(0);
    format!("{}-{}", &name[..cut], &sum[..12])
}

fn render_one(
    j: &Job,
    fetched: &BTreeMap<&Chart, Result<chart::Fetched, ChartError>>,
    tree: &FileTree,
    opts: &Options,
    helm_id: &str,
) -> Render {
    let resolved = match &j.chart {
        Ok(r) => r,
        Err(e) => return Render::NotRendered(e.to_string()),
    };
    let chart = &resolved.chart;
    let values = match &j.values.values {
        Ok(v) => v,
        Err(e) => return Render::NotRendered(e.to_string()),
    };
    // helm-controller's install and upgrade refuse these (Helm's `ValidateReleaseName`; the
    // API server, a namespace that is no DNS-1123 label): helm never sees them.
    // The storage namespace is where helm-controller keeps the release: the same rule.
    if let Err(e) = validate::release_name(&j.release_name)
        .and_then(|()| validate::namespace(&j.namespace))
        .and_then(|()| validate::namespace(&j.storage_namespace))
    {
        return Render::NotRendered(e.to_string());
    }
    let Some(helm) = &opts.helm else {
        return Render::NoHelm;
    };
    let got = match fetched.get(chart) {
        Some(Ok(f)) => f,
        Some(Err(e)) => return Render::NotRendered(e.to_string()),
        None => return Render::NotRendered(Error::NotFetched.to_string()),
    };
    let valued;
    let got = if resolved.values_files.is_empty() {
        got
    } else {
        match chart::with_values_files(got, resolved, tree, opts) {
            Ok(f) => {
                valued = f;
                &valued
            }
            Err(e) => return Render::NotRendered(e.to_string()),
        }
    };
    // The HelmRelease may switch the schema off (helm-controller's install and upgrade
    // `disableSchemaValidation`, either taken: a release is installed, then upgraded); a
    // schema that refers outside itself is not followed (see `schema`).
    let disabled = [
        "/spec/install/disableSchemaValidation",
        "/spec/upgrade/disableSchemaValidation",
    ]
    .iter()
    .any(|p| j.hr.at_pointer(p) == Some(&Value::Bool(true)));
    let unchecked = if disabled {
        Some("its values are not checked against the chart's schema: the HelmRelease sets disableSchemaValidation".to_string())
    } else {
        schema::outside_reference(&got.dir).map(|r| {
            format!("its values are not checked against the chart's schema: {r}, which fluxwave does not fetch or read")
        })
    };
    let values_json = &j.values.json;
    let mut key = Sha256::new();
    for part in [
        helm_id,
        &got.digest,
        &j.release_name,
        &j.namespace,
        if j.include_crds { "crds" } else { "" },
        values_json,
        if unchecked.is_some() { "unchecked" } else { "" },
        &opts.kube_version,
    ] {
        key.update(part.as_bytes());
        key.update([0]);
    }
    let key = crate::fs::hex(&key.finalize());
    let cached = opts.cache.join("renders").join(format!("{key}.yaml"));
    // One render per key in this run: a cutover renders both revisions of an unchanged
    // release at once, and the second waits for the first.
    let cell = {
        let mut inflight = INFLIGHT.lock().unwrap_or_else(|p| p.into_inner());
        inflight.entry(key).or_default().clone()
    };
    let output = cell.get_or_init(|| {
        if let Ok(text) = std::fs::read_to_string(&cached) {
            crate::cache::used(&cached);
            return Ok(text);
        }
        let cmd = command::Helm {
            program: helm,
            cache: &opts.cache,
        }
        .template(
            &j.release_name,
            &got.dir,
            &j.namespace,
            &opts.kube_version,
            (j.include_crds, unchecked.is_some()),
        );
        let text = run_with_input(cmd, values_json).map_err(Error::Template)?;
        crate::cache::keep(&cached, &text);
        Ok(text)
    });
    let output = match output {
        Ok(text) => text,
        Err(e) => return Render::NotRendered(e.to_string()),
    };
    let label = format!("{} (chart {} {})", j.id, chart_name(chart), got.version);
    match finish(j, output, &label) {
        Ok(objects) => Render::Rendered(Rendered {
            chart: format!("{} {}", chart_name(chart), got.version),
            release_name: j.release_name.clone(),
            namespace: j.namespace.clone(),
            storage_namespace: j.storage_namespace.clone(),
            objects,
            secret_strings: values.secret_strings.clone(),
            unchecked,
        }),
        Err(e) => Render::NotRendered(e.to_string()),
    }
}

fn chart_name(c: &Chart) -> &str {
    match c {
        Chart::Local { path } => path.rsplit('/').next().unwrap_or(path),
        Chart::Remote(r) => &r.name,
    }
}

/// The renders of this run by key, each made once (see `render_one`).
type Inflight = BTreeMap<String, Arc<OnceLock<Result<String, Error>>>>;
static INFLIGHT: Mutex<Inflight> = Mutex::new(BTreeMap::new());

/// How helm-controller hands hooks to its post-renderers (`spec.postRenderStrategy`,
/// helm-controller `toHelmPostRenderStrategy`, Helm v4 `renderResources`).
#[derive(Debug, Clone, Copy, PartialEq)]
enum PostRenderStrategy {
    /// Hooks and the release's objects in one stream (Helm 4's default, and
    /// helm-controller's unless its `UseHelm3Defaults` feature gate is on).
    Combined,
    /// Hooks untouched (Helm 3).
    NoHooks,
    /// Hooks and the release's objects in two streams.
    Separate,
}

impl PostRenderStrategy {
    fn of(hr: &Value) -> Result<PostRenderStrategy, Error> {
        match hr.at_pointer("/spec/postRenderStrategy") {
            None | Some(Value::Null) => Ok(PostRenderStrategy::Combined),
            Some(Value::String(s)) => match s.as_str() {
                "" | "combined" => Ok(PostRenderStrategy::Combined),
                "nohooks" => Ok(PostRenderStrategy::NoHooks),
                "separate" => Ok(PostRenderStrategy::Separate),
                other => Err(Error::PostRenderStrategy(validate::shown(other))),
            },
            Some(other) => Err(Error::PostRenderStrategy(validate::shown(
                &other.to_string(),
            ))),
        }
    }
}

/// Whether `v` is a Helm hook (Helm's `SortManifests` reads the `helm.sh/hook` annotation).
fn is_hook(v: &Value) -> bool {
    v.at_pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .is_some_and(|a| a.contains_key("helm.sh/hook"))
}

/// The objects of `helm template`'s output, post-rendered as helm-controller does: the
/// release's objects, and its hooks as `spec.postRenderStrategy` says; the CRDs of the
/// chart's `crds/` folders are applied by helm-controller itself (`applyCRDs`), with its
/// origin labels and without its post-renderers, and only CustomResourceDefinitions: any
/// other object there is left out.
fn finish(j: &Job, output: &str, label: &str) -> Result<Vec<Object>, Error> {
    let strategy = PostRenderStrategy::of(&j.hr)?;
    let mut crds: Vec<(String, Value)> = Vec::new();
    let mut hooks: Vec<(String, Value)> = Vec::new();
    let mut main: Vec<(String, Value)> = Vec::new();
    for (template, doc) in documents(output) {
        let text = Arc::new(doc.to_string());
        let docs = crate::yaml::parse_all(&format!("{label} {template}"), &text)
            .map_err(|e| Error::TemplateYaml(Box::new(e)))?;
        for v in docs {
            if in_crds_folder(&template) {
                if crd_kind(&v).is_some() {
                    crds.push((template.clone(), v));
                }
            } else if is_hook(&v) {
                hooks.push((template.clone(), v));
            } else {
                main.push((template.clone(), v));
            }
        }
    }
    let rendered: Vec<(String, Value)> = match strategy {
        PostRenderStrategy::NoHooks => hooks.into_iter().chain(post_render(j, main)?).collect(),
        PostRenderStrategy::Separate => post_render(j, hooks)?
            .into_iter()
            .chain(post_render(j, main)?)
            .collect(),
        PostRenderStrategy::Combined => post_render(j, hooks.into_iter().chain(main).collect())?,
    };
    for (_, v) in &mut crds {
        add_origin_labels(j, v);
    }
    // Namespaced objects without a namespace are installed in the release's namespace;
    // custom kinds are cluster-scoped when a CRD of the chart says so. Helm sorts hooks from
    // the release's objects after post-rendering.
    let all: Vec<(String, bool, bool, Value)> = crds
        .into_iter()
        .map(|(t, v)| (t, false, true, v))
        .chain(
            rendered
                .into_iter()
                .map(|(t, v)| (t, is_hook(&v), false, v)),
        )
        .collect();
    let cluster_kinds: BTreeSet<String> = all
        .iter()
        .filter_map(|(_, _, _, v)| crd_kind(v))
        .filter(|(_, _, cluster)| *cluster)
        .map(|(_, k, _)| k)
        .collect();
    let mut out = Vec::with_capacity(all.len());
    for (template, hook, crd_folder, mut v) in all {
        let kind = v
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let namespaced = !CLUSTER_SCOPED.contains(&kind.as_str()) && !cluster_kinds.contains(&kind);
        let has_ns = v
            .at_pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty());
        if namespaced && !has_ns {
            if let Some(meta) = metadata(&mut v) {
                meta.insert("namespace".into(), Value::String(j.namespace.clone()));
            }
        }
        let Some(mut id) = ObjectId::of(&v) else {
            return Err(Error::NoIdentity { template });
        };
        id.cluster.clone_from(&j.cluster);
        out.push(Object {
            id,
            template,
            hook,
            crd_folder,
            value: v,
        });
    }
    Ok(out)
}

/// helm-controller's post-renderers (`postrender.BuildPostRenderers`) over one stream of
/// objects: each `spec.postRenderers[].kustomize` (its `patches`), `spec.commonMetadata`,
/// then the origin labels, which win over a common label of the same key.
fn post_render(j: &Job, objects: Vec<(String, Value)>) -> Result<Vec<(String, Value)>, Error> {
    if objects.is_empty() {
        return Ok(objects);
    }
    let (templates, mut values): (Vec<String>, Vec<Value>) = objects.into_iter().unzip();
    let empty = FileTree::from_files([]);
    for (i, r) in
        j.hr.at_pointer("/spec/postRenderers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
    {
        let Some(k) = r.get("kustomize").and_then(Value::as_object) else {
            continue;
        };
        let mut kustomization = Map::new();
        for key in ["patches", "images"] {
            if let Some(v) = k.get(key) {
                kustomization.insert(key.to_string(), v.clone());
            }
        }
        let mut builder = Builder::new(&empty);
        let before = values.len();
        values = builder
            .transform_objects(
                &format!("{} spec.postRenderers[{i}]", j.id),
                "",
                &kustomization,
                values,
            )
            .map_err(|e| Error::PostRenderer(Box::new(e)))?;
        if values.len() != before {
            return Err(Error::PostRendererCount);
        }
    }
    let labels =
        j.hr.at_pointer("/spec/commonMetadata/labels")
            .and_then(Value::as_object);
    let annotations =
        j.hr.at_pointer("/spec/commonMetadata/annotations")
            .and_then(Value::as_object);
    for v in &mut values {
        for (field, extra) in [("labels", labels), ("annotations", annotations)] {
            let Some(extra) = extra else { continue };
            if let Some(map) = metadata_map(v, field) {
                map.extend(extra.iter().map(|(k, x)| (k.clone(), x.clone())));
            }
        }
        add_origin_labels(j, v);
    }
    Ok(templates.into_iter().zip(values).collect())
}

/// helm-controller's origin labels, `helm.toolkit.fluxcd.io/name` and `/namespace`.
fn add_origin_labels(j: &Job, v: &mut Value) {
    if let Some(origin) = metadata_map(v, "labels") {
        origin.insert(
            "helm.toolkit.fluxcd.io/name".into(),
            Value::String(j.id.name.clone()),
        );
        origin.insert(
            "helm.toolkit.fluxcd.io/namespace".into(),
            Value::String(j.id.namespace.clone()),
        );
    }
}

/// `v` as a mapping, made one when it is not.
fn mapping(v: &mut Value) -> Option<&mut Map<String, Value>> {
    if !v.is_object() {
        *v = Value::Object(Map::new());
    }
    v.as_object_mut()
}

/// The `metadata` mapping of `v`, made where it is missing.
fn metadata(v: &mut Value) -> Option<&mut Map<String, Value>> {
    mapping(mapping(v)?.entry("metadata").or_insert(Value::Null))
}

/// `metadata.<field>` of `v` (`labels`, `annotations`), made where it is missing.
fn metadata_map<'a>(v: &'a mut Value, field: &str) -> Option<&'a mut Map<String, Value>> {
    mapping(metadata(v)?.entry(field).or_insert(Value::Null))
}

/// The documents of `helm template`'s output with the chart file each comes from (its
/// `# Source: chart/templates/x.yaml` line, the chart's name left off).
fn documents(output: &str) -> Vec<(String, &str)> {
    let mut docs = Vec::new();
    let (mut start, mut at) = (0, 0);
    for line in output.split_inclusive('\n') {
        if line.trim_end() == "---" {
            docs.push(&output[start..at]);
            start = at + line.len();
        }
        at += line.len();
    }
    docs.push(&output[start..]);
    // Helm writes `# Source:` above each document of a template, but a file of `crds/` as it
    // is (`action.Install` with `IncludeCRDs`): its later documents have none, and are of the
    // file above them.
    let mut last = String::new();
    docs.into_iter()
        .filter(|doc| !doc.trim().is_empty())
        .map(|doc| {
            if let Some(source) = doc.lines().find_map(|l| l.strip_prefix("# Source: ")) {
                let source = source.trim();
                last = source
                    .split_once('/')
                    .map_or(source, |(_, t)| t)
                    .to_string();
            }
            (last.clone(), doc)
        })
        .collect()
}

/// Whether `template` (a chart file, its chart's name left out) is of the `crds/` folder of
/// the chart or of a subchart (Helm's `Chart.CRDObjects`: `<chart>/charts/<sub>/crds/...`),
/// which Helm installs once and never upgrades or deletes. A subchart named `crds`, or a
/// `templates/crds/` folder, holds templates.
fn in_crds_folder(template: &str) -> bool {
    let mut rest = template;
    loop {
        if rest.starts_with("crds/") {
            return true;
        }
        match rest.strip_prefix("charts/").and_then(|r| r.split_once('/')) {
            Some((_, inner)) => rest = inner,
            None => return false,
        }
    }
}

/// Runs `cmd` and gives its output, or its error output when it fails; within this run's
/// bounds (`--helm-timeout`, `--helm-output-limit`).
fn run(cmd: std::process::Command) -> Result<String, RunError> {
    let out = crate::process::run(cmd, None, &options().limits)?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `run`, with `input` on its standard input.
fn run_with_input(cmd: std::process::Command, input: &str) -> Result<String, RunError> {
    let out = crate::process::run(cmd, Some(input.as_bytes()), &options().limits)?;
    String::from_utf8(out.stdout).map_err(|_| RunError::NotUtf8)
}

/// `f` over `items` on a few threads at once (each mostly waits for a helm process), in
/// order.
fn pool<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8)
        .min(items.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let out: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let r = f(item);
                out.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(r);
            });
        }
    });
    out.into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .into_iter()
        .flatten()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// helm-controller `release.ShortenName` (its doc comment's example shape).
    #[test]
    fn long_release_names_are_shortened_as_helm_controller_shortens_them() {
        assert_eq!(shorten("short"), "short");
        let long = "some-front-appended-namespace-release-with-a-very-long-name";
        let got = shorten(long);
        assert_eq!(got.len(), 53);
        assert!(
            got.starts_with("some-front-appended-namespace-release-wi-"),
            "{got}"
        );
    }

    /// Helm's `Chart.CRDObjects` paths are `crds/` folders; templates that happen to sit
    /// under a `crds` name are part of the release (prometheus-operator-crds renders its
    /// CRDs from `charts/crds/templates/`).
    #[test]
    fn only_a_charts_crds_folder_holds_crds_helm_never_deletes() {
        for (template, crds) in [
            ("crds/a.yaml", true),
            ("charts/sub/crds/a.yaml", true),
            ("charts/sub/charts/deeper/crds/a.yaml", true),
            ("templates/crds/a.yaml", false),
            ("charts/crds/templates/a.yaml", false),
            ("charts/sub/templates/crds/a.yaml", false),
            ("templates/a.yaml", false),
            ("", false),
        ] {
            assert_eq!(in_crds_folder(template), crds, "{template}");
        }
    }

    #[test]
    fn helm_output_is_split_by_chart_file() {
        let out = "---\n# Source: store/templates/pvc.yaml\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: a\n---\n# Source: store/crds/crd.yaml\nkind: X\n";
        let docs = documents(out);
        let names: Vec<&str> = docs.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(names, ["templates/pvc.yaml", "crds/crd.yaml"]);
        // A `crds/` file of two documents, as Helm prints it: the second has no `# Source:`.
        let out = "---\n# Source: ops/crds/both.yaml\nkind: A\n---\nkind: B\n---\n# Source: ops/templates/x.yaml\nkind: C\n";
        let names: Vec<String> = documents(out).into_iter().map(|(t, _)| t).collect();
        assert_eq!(
            names,
            ["crds/both.yaml", "crds/both.yaml", "templates/x.yaml"]
        );
    }
}
