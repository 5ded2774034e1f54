//! Which chart a HelmRelease installs, found as Flux finds it, and that chart made into a
//! folder `helm template` reads.
//!
//! `spec.chart.spec` names a chart in a source (source-controller makes a HelmChart of it):
//! a HelmRepository (`spec.url`, HTTP or, with `type: oci`, an OCI registry) with a version
//! constraint (`version`, default `*`), or a GitRepository or Bucket and a path in its
//! artifact (the version is not read). `spec.chartRef` names an OCIRepository (`spec.url`
//! is the chart; `spec.ref` `digest`, then `semver`, then `tag`, default `latest`) or a
//! HelmChart, read like `spec.chart.spec`. A GitRepository that is the environment's own
//! source is this revision of this repository: its chart folder is read from the revision.
//! Anything else is pulled with `helm pull` into the cache, once per chart and version.
//!
//! Nothing a repository writes names a path outside the cache or the chart: source addresses,
//! chart names and versions pass `validate` first; a chart of this repository is found as
//! source-controller joins its path to the artifact (`flux::normalize_path`); a pulled chart is
//! looked for in its staging folder by what helm unpacked, not by a name; and `valuesFiles` are
//! read from the chart (a pulled one) or the artifact (this repository's), as source-controller
//! reads them, then merged into the chart's default values (see `with_values_files`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::command::Helm;
use super::error::{ChartError, Invalid, RunError};
use super::semver::{self, Constraint, Version};
use super::validate::{self, Scheme};
use super::Options;
use crate::flux::inventory::Inventory;
use crate::flux::{normalize_path, SourceKind, SourceRef};
use crate::pointer::Pointer;
use crate::tree::FileTree;

/// Where a chart comes from.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Chart {
    /// A folder of this revision (`path` from the repository's root).
    Local { path: String },
    /// A chart in a Helm repository or an OCI registry.
    Remote(Remote),
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Remote {
    /// `https://…` of a Helm repository, or the chart's `oci://host/path/name`.
    pub url: String,
    /// The host `url` names (lower-case, with its port when it gives one).
    pub host: String,
    /// The chart's name (for an OCI chart, the last part of its address).
    pub name: String,
    /// A version constraint, an exact version, or an OCI tag or digest (`sha256:…`).
    pub version: String,
    /// `spec.insecure` of an OCI source: the registry speaks plain HTTP.
    pub plain_http: bool,
}

impl Remote {
    fn oci(&self) -> bool {
        self.url.starts_with("oci://")
    }

    /// `name version` or `name` with the constraint, for messages.
    pub fn label(&self) -> String {
        format!("{} {} from {}", self.name, self.version, self.url)
    }
}

/// A HelmRelease's chart, and the values files of it that source-controller merges into its
/// default values (`valuesFiles`).
#[derive(Debug, Clone)]
pub struct Resolved {
    pub chart: Chart,
    pub values_files: Vec<String>,
    /// `ignoreMissingValuesFiles`: a values file that is not there is passed over.
    pub ignore_missing: bool,
}

/// The chart of HelmRelease `hr` (in `namespace`), or why it cannot be found.
/// The chart an OCIRepository's `url` holds, as helm-controller names it: the last segment
/// of the url.
pub fn oci_chart_name(url: &str) -> &str {
    url.trim_end_matches('/').rsplit('/').next().unwrap_or("")
}

pub fn resolve(hr: &Value, namespace: &str, inv: &Inventory) -> Result<Resolved, ChartError> {
    let text = |v: &Value, p: &str| {
        v.at_pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    if let Some(r) = hr.at_pointer("/spec/chartRef") {
        let (kind, name) = (text(r, "/kind"), text(r, "/name"));
        let ns = match text(r, "/namespace") {
            n if n.is_empty() => namespace.to_string(),
            n => n,
        };
        let what = format!("{kind} {ns}/{name}");
        match kind.as_str() {
            "OCIRepository" => {
                let src = source(inv, "OCIRepository", &ns, &name)
                    .ok_or_else(|| ChartError::SourceMissing { what: what.clone() })?;
                let invalid = |invalid: Invalid| ChartError::SourceInvalid {
                    what: what.clone(),
                    invalid,
                };
                let url = text(src, "/spec/url");
                let host = validate::url(&url, Scheme::Oci).map_err(invalid)?;
                let digest = text(src, "/spec/ref/digest");
                if !digest.is_empty() {
                    validate::digest(&digest).map_err(invalid)?;
                }
                let version = [
                    digest,
                    text(src, "/spec/ref/semver"),
                    text(src, "/spec/ref/tag"),
                ]
                .into_iter()
                .find(|v| !v.is_empty())
                .unwrap_or_else(|| "latest".into());
                validate::version(&version).map_err(invalid)?;
                let chart_name = oci_chart_name(&url).to_string();
                validate::chart_name(&chart_name).map_err(invalid)?;
                let remote = Remote {
                    url,
                    host,
                    name: chart_name,
                    version,
                    plain_http: src.at_pointer("/spec/insecure").and_then(Value::as_bool)
                        == Some(true),
                };
                Ok(Resolved {
                    chart: Chart::Remote(remote),
                    values_files: Vec::new(),
                    ignore_missing: false,
                })
            }
            "HelmChart" => {
                let src = source(inv, "HelmChart", &ns, &name)
                    .ok_or(ChartError::SourceMissing { what })?;
                let spec = src.get("spec").cloned().unwrap_or(Value::Null);
                from_chart_spec(&spec, &ns, inv)
            }
            "" => Err(ChartError::ChartRefNoKind),
            other => Err(ChartError::UnreadKind(other.into())),
        }
    } else if let Some(spec) = hr.at_pointer("/spec/chart/spec") {
        from_chart_spec(spec, namespace, inv)
    } else {
        Err(ChartError::NoChartSpec)
    }
}

/// A HelmChart's spec (`spec.chart.spec` of a HelmRelease, or a HelmChart object's spec).
fn from_chart_spec(spec: &Value, namespace: &str, inv: &Inventory) -> Result<Resolved, ChartError> {
    let text = |p: &str| {
        spec.at_pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let chart = text("/chart");
    if chart.is_empty() {
        return Err(ChartError::NoChartName);
    }
    let (kind, name) = (text("/sourceRef/kind"), text("/sourceRef/name"));
    let ns = match text("/sourceRef/namespace") {
        n if n.is_empty() => namespace.to_string(),
        n => n,
    };
    let what = format!("{kind} {ns}/{name}");
    let mut files: Vec<String> = crate::kustomize::object::strings_at(spec, "valuesFiles");
    if let Some(f) = spec.get("valuesFile").and_then(Value::as_str) {
        if !f.is_empty() && files.is_empty() {
            files.push(f.to_string());
        }
    }
    let resolved = |chart: Chart| Resolved {
        chart,
        values_files: files.clone(),
        ignore_missing: spec.get("ignoreMissingValuesFiles") == Some(&Value::Bool(true)),
    };
    match kind.as_str() {
        "HelmRepository" => {
            let src = source(inv, "HelmRepository", &ns, &name)
                .ok_or_else(|| ChartError::SourceMissing { what: what.clone() })?;
            let url = text_of(src, "/spec/url");
            if url.is_empty() {
                return Err(ChartError::NoUrl { what });
            }
            let host = validate::url(&url, Scheme::HelmRepository).map_err(|invalid| {
                ChartError::SourceInvalid {
                    what: what.clone(),
                    invalid,
                }
            })?;
            validate::chart_name(&chart)?;
            let oci = text_of(src, "/spec/type") == "oci" || url.starts_with("oci://");
            if oci && !url.starts_with("oci://") {
                return Err(ChartError::OciWithoutOciUrl { what });
            }
            let version = match text("/version") {
                v if v.is_empty() => "*".to_string(),
                v => v,
            };
            validate::version(&version)?;
            let remote = if oci {
                Remote {
                    url: format!("{}/{chart}", url.trim_end_matches('/')),
                    host,
                    name: chart,
                    version,
                    plain_http: src.at_pointer("/spec/insecure").and_then(Value::as_bool)
                        == Some(true),
                }
            } else {
                Remote {
                    url,
                    host,
                    name: chart,
                    version,
                    plain_http: false,
                }
            };
            Ok(resolved(Chart::Remote(remote)))
        }
        "GitRepository" | "Bucket" => {
            let root = inv
                .owners
                .values()
                .find(|o| o.parent.is_none())
                .map(|o| o.source());
            let this = root == Some(SourceRef::new(SourceKind::parse(&kind), &ns, &name));
            if !this {
                return Err(ChartError::NotThisRepository { chart, what });
            }
            Ok(resolved(Chart::Local {
                path: normalize_path(&chart),
            }))
        }
        "" => Err(ChartError::NoSourceKind),
        other => Err(ChartError::UnreadKind(other.into())),
    }
}

fn text_of(v: &Value, p: &str) -> String {
    v.at_pointer(p)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// The source object `kind` `namespace/name` of the build.
fn source<'a>(inv: &'a Inventory, kind: &str, namespace: &str, name: &str) -> Option<&'a Value> {
    let id = SourceRef::new(SourceKind::parse(kind), namespace, name).id();
    inv.objects.get(&id)?.whole.as_deref()
}

/// A chart made into a folder, with a digest of its files (for the render cache) and the
/// version it is.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub dir: PathBuf,
    pub digest: String,
    pub version: String,
}

/// `path` below `dir` ("" for the root).
fn join(dir: &str, path: &str) -> String {
    if dir.is_empty() {
        path.to_string()
    } else {
        format!("{dir}/{path}")
    }
}

/// `Chart::Local` of `tree` written into the cache (a revision need not be checked out): its
/// every file as bytes (binary files too, as the artifact holds them; links are in no
/// artifact), in a folder named by the digest of its files and written once.
pub fn local(tree: &FileTree, path: &str, opts: &Options) -> Result<Fetched, ChartError> {
    let files: Vec<&str> = tree.files_under(path).collect();
    let chart_yaml = join(path, "Chart.yaml");
    if !files.contains(&chart_yaml.as_str()) {
        return Err(ChartError::NoChartYaml(chart_yaml));
    }
    let mut contents = Vec::new();
    for f in &files {
        let Some(bytes) = tree.bytes(f) else {
            continue;
        };
        let rel = if path.is_empty() {
            f
        } else {
            f.strip_prefix(path).unwrap_or(f).trim_start_matches('/')
        };
        contents.push((rel.to_string(), bytes));
    }
    let digest = local_digest(tree, path);
    let dir = opts.cache.join("local").join(&digest[..32]).join("chart");
    let version = chart_version(tree.read(&chart_yaml).as_deref().map(String::as_str));
    if dir.join("Chart.yaml").is_file() {
        crate::cache::used(&dir);
        return Ok(Fetched {
            dir,
            digest,
            version,
        });
    }
    let staging = staging(&opts.cache)?;
    let inner = staging.join("chart");
    for (rel, bytes) in &contents {
        write_below(&inner, rel, bytes)?;
    }
    settle(&inner, &dir)?;
    Ok(Fetched {
        dir,
        digest,
        version,
    })
}

/// The digest of every file of the chart at `path` of `tree` (its name and its bytes): two
/// revisions with the same digest hold the same chart. Read without helm.
pub fn local_digest(tree: &FileTree, path: &str) -> String {
    let mut hash = Sha256::new();
    for f in tree.files_under(path) {
        let Some(bytes) = tree.bytes(f) else {
            continue;
        };
        hash.update(f.as_bytes());
        hash.update([0]);
        hash.update(bytes.as_slice());
        hash.update([0]);
    }
    crate::fs::hex(&hash.finalize())
}

/// The name a chart goes by for helm-controller (`action.ReleaseTargetChanged` compares the
/// loaded chart's `Metadata.Name`): a remote chart's name, a local chart's `Chart.yaml`
/// `name`; `None` when it cannot be read without fetching the chart.
pub fn name(tree: &FileTree, chart: &Chart) -> Option<String> {
    match chart {
        Chart::Remote(r) => Some(r.name.clone()),
        Chart::Local { path } => {
            let file = join(path, "Chart.yaml");
            let text = tree.read(&file)?;
            let docs = crate::yaml::parse_all(&file, &text).ok()?;
            docs.first()?
                .get("name")?
                .as_str()
                .filter(|n| !n.is_empty())
                .map(str::to_string)
        }
    }
}

/// Writes `bytes` at `rel` (a path of the tree's, `/`-separated, no `.` or `..` part) below
/// `dir`.
fn write_below(dir: &Path, rel: &str, bytes: &[u8]) -> Result<(), ChartError> {
    let mut to = dir.to_path_buf();
    for part in rel.split('/') {
        if part.is_empty() || part == "." || part == ".." {
            return Err(ChartError::UnwritableName(rel.into()));
        }
        to.push(part);
    }
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(ChartError::CacheWrite)?;
    }
    std::fs::write(&to, bytes).map_err(ChartError::CacheWrite)
}

/// `remote` from the cache, or pulled into it with `helm pull` (never with `--offline`, and
/// only from a host this run may reach).
pub fn remote(remote: &Remote, opts: &Options, helm: Option<&Path>) -> Result<Fetched, ChartError> {
    let base = opts
        .cache
        .join("charts")
        .join(slug(&format!("{}#{}", remote.url, remote.name)));
    let exact = remote.version.starts_with("sha256:")
        || (Version::parse(&remote.version).is_some()
            && !remote
                .version
                .contains(['x', 'X', '*', '>', '<', '=', '~', '^', '|', ' ', ',']));
    // A tag that is not a version (`latest`) moves; with the network it is pulled again.
    let mutable = !exact && remote.oci() && Constraint::parse(&remote.version).is_none();
    // `remote.name` passed `validate::chart_name`: one path part, never `.` or `..`.
    let cached = |version: &str| {
        let dir = base.join(version_dir(version)).join(&remote.name);
        dir.join("Chart.yaml").is_file().then_some(dir)
    };
    if exact || (mutable && opts.offline) {
        if let Some(dir) = cached(&remote.version) {
            return fetched(dir);
        }
    } else if opts.offline {
        let constraint = Constraint::parse(&remote.version)
            .ok_or_else(|| ChartError::NotConstraint(remote.version.clone()))?;
        let versions: Vec<String> = std::fs::read_dir(&base)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        if let Some(v) = semver::best(&constraint, versions.iter().map(String::as_str)) {
            if let Some(dir) = cached(v) {
                return fetched(dir);
            }
        }
    }
    if opts.offline {
        return Err(ChartError::Offline {
            label: remote.label(),
        });
    }
    if !opts.hosts.allows(&remote.host) {
        return Err(ChartError::HostNotAllowed {
            label: remote.label(),
            host: remote.host.clone(),
            hosts: opts.hosts.to_string(),
        });
    }
    let Some(helm) = helm else {
        return Err(ChartError::NoHelm {
            label: remote.label(),
        });
    };
    let helm = Helm {
        program: helm,
        cache: &opts.cache,
    };
    // A chart that cannot be had is asked for once a run: a history's steps name it again.
    let asked = format!("{}#{}@{}", remote.url, remote.name, remote.version);
    if let Some(why) = lock(&FAILED_PULLS).get(&asked) {
        return Err(ChartError::FailedBefore(why.clone()));
    }
    let pulled = pull(remote, &helm, &base, exact, mutable);
    if let Err(e) = &pulled {
        lock(&FAILED_PULLS).insert(asked, e.to_string());
    }
    pulled
}

/// What this run failed to pull, by `url#name@version`, with why.
static FAILED_PULLS: Mutex<BTreeMap<String, String>> = Mutex::new(BTreeMap::new());

/// The lock of a map only ever inserted into whole: a panic elsewhere leaves it sound.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `remote` pulled into the cache folder `base` with `helm pull` (`exact`: its version is one
/// version or digest; `mutable`: a tag that is not a version).
fn pull(
    remote: &Remote,
    helm: &Helm,
    base: &Path,
    exact: bool,
    mutable: bool,
) -> Result<Fetched, ChartError> {
    let cached = |version: &str| {
        let dir = base.join(version_dir(version)).join(&remote.name);
        dir.join("Chart.yaml").is_file().then_some(dir)
    };
    // A constraint on a Helm repository is resolved against its index first: the chart of
    // that version is then downloaded only when the cache lacks it.
    let mut remote = remote.clone();
    if !exact && !remote.oci() {
        remote.version = latest_in_index(&remote, helm)?;
        if let Some(dir) = cached(&remote.version) {
            return fetched(dir);
        }
    }
    let remote = &remote;
    let exact = exact || !remote.oci();
    let staging = staging(helm.cache)?;
    let cmd = if !remote.oci() {
        helm.pull_from_repo(&remote.name, &remote.url, &remote.version, &staging)
    } else if remote.version.starts_with("sha256:") {
        let reference = format!("{}@{}", remote.url, remote.version);
        helm.pull_oci(&reference, None, remote.plain_http, &staging)
    } else {
        helm.pull_oci(
            &remote.url,
            Some(&remote.version),
            remote.plain_http,
            &staging,
        )
    };
    let out = super::run(cmd).map_err(|error| ChartError::Pull {
        label: remote.label(),
        error,
    })?;
    let inner = unpacked(&staging).ok_or_else(|| ChartError::PullGaveNothing {
        label: remote.label(),
        printed: out.trim().to_string(),
    })?;
    let version = chart_version(
        std::fs::read_to_string(inner.join("Chart.yaml"))
            .ok()
            .as_deref(),
    );
    let key = if exact || mutable {
        remote.version.clone()
    } else {
        version.clone()
    };
    let dir = base.join(version_dir(&key)).join(&remote.name);
    if mutable {
        let _ = std::fs::remove_dir_all(base.join(version_dir(&key)));
    }
    settle(&inner, &dir)?;
    fetched(dir)
}

/// The chart folder `helm pull --untar` made in `staging`: the one folder (not a link) that
/// holds a `Chart.yaml`, whatever the archive named it.
fn unpacked(staging: &Path) -> Option<PathBuf> {
    let mut found = std::fs::read_dir(staging)
        .ok()?
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .filter(|p| {
            p.join("Chart.yaml")
                .symlink_metadata()
                .is_ok_and(|m| m.is_file())
        });
    let first = found.next()?;
    found.next().is_none().then_some(first)
}

/// The version of `remote`'s chart that its constraint picks in the repository's index, as
/// `helm search repo` reads it (through repository settings kept in the cache, never the
/// user's own).
fn latest_in_index(remote: &Remote, helm: &Helm) -> Result<String, ChartError> {
    let alias = slug(&remote.url);
    super::run(helm.repo_add(&alias, &remote.url)).map_err(|error: RunError| {
        ChartError::Index {
            url: remote.url.clone(),
            error,
        }
    })?;
    let name = format!("{alias}/{}", remote.name);
    let out = super::run(helm.search(&name, &remote.version))?;
    let found: Value = serde_json::from_str(&out).map_err(|error| ChartError::SearchOutput {
        printed: out.clone(),
        error,
    })?;
    found
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c.get("name").and_then(Value::as_str) == Some(name.as_str()))
        .and_then(|c| c.get("version").and_then(Value::as_str))
        .map(str::to_string)
        .ok_or_else(|| ChartError::NoMatchingVersion {
            name: remote.name.clone(),
            url: remote.url.clone(),
            version: remote.version.clone(),
        })
}

/// `fetched` with its default values replaced by the merge of `files`, as source-controller
/// packages a chart whose HelmChart lists `valuesFiles` (`OverwriteChartDefaultValues`: the
/// chart's `values.yaml` is then not read unless it is listed). For a chart of this
/// repository each file is a path in the artifact (`mergeFileValues`, joined as
/// `securejoin` joins it); for a pulled chart, one of the chart's own files
/// (`mergeChartValues`: its cleaned path is `values.yaml` or the name of one of the chart's
/// files). The chart made is kept in the cache by the digest of its files.
pub fn with_values_files(
    fetched_chart: &Fetched,
    resolved: &Resolved,
    tree: &FileTree,
    opts: &Options,
) -> Result<Fetched, ChartError> {
    // source-controller's `OverwriteChartDefaultValues` replaces the chart's values file,
    // and fails a chart that has none.
    let has_values = fetched_chart
        .dir
        .join("values.yaml")
        .symlink_metadata()
        .is_ok_and(|m| m.is_file());
    if !has_values {
        return Err(ChartError::NoValuesYaml);
    }
    let mut merged = Value::Object(serde_json::Map::new());
    for f in &resolved.values_files {
        let bytes = match &resolved.chart {
            Chart::Local { .. } => tree.bytes(&normalize_path(f)).map(|b| b.to_vec()),
            Chart::Remote(_) => chart_file(&fetched_chart.dir, f),
        };
        let Some(bytes) = bytes else {
            if resolved.ignore_missing {
                continue;
            }
            return Err(ChartError::NoValuesFile(f.chars().take(200).collect()));
        };
        let text =
            String::from_utf8(bytes).map_err(|_| ChartError::ValuesFileNotUtf8(f.clone()))?;
        let values = super::values::read_values(&text).map_err(|error| ChartError::ValuesFile {
            file: f.clone(),
            error,
        })?;
        super::values::merge(&mut merged, values);
    }
    let values = serde_json::to_string_pretty(&merged).unwrap_or_default();
    let mut hash = Sha256::new();
    hash.update(fetched_chart.digest.as_bytes());
    hash.update([0]);
    hash.update(values.as_bytes());
    let key = crate::fs::hex(&hash.finalize());
    let dir = opts.cache.join("valued").join(&key[..32]).join("chart");
    if !dir.join("Chart.yaml").is_file() {
        let staging = staging(&opts.cache)?;
        let inner = staging.join("chart");
        let mut files = Vec::new();
        walk(&fetched_chart.dir, &fetched_chart.dir, &mut files, 0)
            .map_err(ChartError::CacheRead)?;
        for (rel, bytes) in files {
            if rel != "values.yaml" {
                write_below(&inner, &rel, &bytes)?;
            }
        }
        write_below(&inner, "values.yaml", values.as_bytes())?;
        settle(&inner, &dir)?;
    }
    fetched(dir)
}

/// The file `name` of a pulled chart at `dir` as Helm's loader lists it among the chart's
/// files (`chart.Files`, which `mergeChartValues` searches; `values.yaml` is the chart's
/// values): `name` cleaned as Go's `filepath.Clean` cleans it must be a path of the chart
/// that is not its `Chart.yaml`, `Chart.lock`, `values.schema.json`, requirements or a file
/// of `templates/` or `charts/`. Read without following a link.
fn chart_file(dir: &Path, name: &str) -> Option<Vec<u8>> {
    let clean = go_clean(name);
    let listed = clean == "values.yaml"
        || !(clean.starts_with('/')
            || clean == ".."
            || clean.starts_with("../")
            || clean.starts_with("templates/")
            || clean.starts_with("charts/")
            || [
                "Chart.yaml",
                "Chart.lock",
                "values.schema.json",
                "requirements.yaml",
                "requirements.lock",
                ".",
            ]
            .contains(&clean.as_str()));
    if !listed {
        return None;
    }
    crate::fs::read_bytes(dir, &clean).ok().flatten()
}

/// Go's `filepath.Clean` of a `/`-separated path: `.` parts and empty parts dropped, `..`
/// taking the part before it off (above a relative root it stays; above `/` it is dropped).
fn go_clean(p: &str) -> String {
    let rooted = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => match parts.last() {
                Some(&last) if last != ".." => {
                    parts.pop();
                }
                _ if rooted => {}
                _ => parts.push(".."),
            },
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

/// A cached chart folder, its digest (its files' bytes) and version.
fn fetched(dir: PathBuf) -> Result<Fetched, ChartError> {
    crate::cache::used(&dir);
    let mut files = Vec::new();
    walk(&dir, &dir, &mut files, 0).map_err(|error| ChartError::CacheReadAt {
        path: dir.display().to_string(),
        error,
    })?;
    files.sort();
    let mut hash = Sha256::new();
    for (rel, bytes) in &files {
        hash.update(rel.as_bytes());
        hash.update([0]);
        hash.update(bytes);
        hash.update([0]);
    }
    let version = chart_version(
        std::fs::read_to_string(dir.join("Chart.yaml"))
            .ok()
            .as_deref(),
    );
    Ok(Fetched {
        dir,
        digest: crate::fs::hex(&hash.finalize()),
        version,
    })
}

fn walk(
    root: &Path,
    dir: &Path,
    out: &mut Vec<(String, Vec<u8>)>,
    depth: usize,
) -> std::io::Result<()> {
    if depth > 32 {
        return Ok(());
    }
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let t = e.file_type()?;
        let path = e.path();
        if t.is_dir() {
            walk(root, &path, out, depth + 1)?;
        } else if t.is_file() {
            let rel = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .to_string_lossy()
                .into_owned();
            out.push((rel, std::fs::read(&path)?));
        }
    }
    Ok(())
}

/// `version:` of a Chart.yaml.
fn chart_version(text: Option<&str>) -> String {
    text.into_iter()
        .flat_map(str::lines)
        .find_map(|l| l.strip_prefix("version:"))
        .map(|v| v.trim().trim_matches(['"', '\'']).to_string())
        .unwrap_or_default()
}

/// A fresh folder in the cache to stage a chart in before it is renamed into place. It is
/// temporary: removed when dropped (a pull that fails leaves nothing in `tmp/`), and when
/// fluxwave is interrupted or killed.
fn staging(cache: &Path) -> Result<crate::process::Temporary, ChartError> {
    let dir = cache.join("tmp").join(crate::cache::unique());
    let staged =
        crate::process::Temporary::folder(&dir).map_err(|error| ChartError::CacheWriteAt {
            path: cache.display().to_string(),
            error,
        })?;
    crate::cache::mark(cache);
    Ok(staged)
}

/// Renames a staged chart into place; another run that placed it first wins.
fn settle(staged: &Path, dir: &Path) -> Result<(), ChartError> {
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent).map_err(ChartError::CacheWrite)?;
    }
    match std::fs::rename(staged, dir) {
        Ok(()) => Ok(()),
        Err(_) if dir.join("Chart.yaml").is_file() => Ok(()),
        Err(error) => Err(ChartError::CacheWriteAt {
            path: dir.display().to_string(),
            error,
        }),
    }
}

/// The cache folder of a version: the version itself (so that the cache can be searched by
/// constraint), or, for a digest or an odd tag, a slug.
fn version_dir(version: &str) -> String {
    let plain = !version.is_empty()
        && !version.starts_with('.')
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-+".contains(c));
    if plain {
        version.to_string()
    } else {
        slug(version)
    }
}

/// A file name for `text`: its safe characters and a digest that keeps names apart.
pub fn slug(text: &str) -> String {
    let safe: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(80)
        .collect();
    let digest = crate::fs::hex(&Sha256::digest(text.as_bytes()));
    format!("{}-{}", safe.trim_matches('.'), &digest[..12])
}
