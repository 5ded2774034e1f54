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

use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::semver::{self, Constraint, Version};
use super::Options;
use crate::flux::inventory::Inventory;
use crate::kustomize::object::ObjectId;
use crate::tree::FileTree;

const SOURCE_GROUP: &str = "source.toolkit.fluxcd.io";

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

/// The chart of HelmRelease `hr` (in `namespace`) and the values files of the chart it
/// merges (`valuesFiles`), or why it cannot be found.
pub fn resolve(
    hr: &Value,
    namespace: &str,
    inv: &Inventory,
) -> Result<(Chart, Vec<String>), String> {
    let text = |v: &Value, p: &str| {
        v.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    if let Some(r) = hr.pointer("/spec/chartRef") {
        let (kind, name) = (text(r, "/kind"), text(r, "/name"));
        let ns = match text(r, "/namespace") {
            n if n.is_empty() => namespace.to_string(),
            n => n,
        };
        let what = format!("{kind} {ns}/{name}");
        match kind.as_str() {
            "OCIRepository" => {
                let src = source(inv, "OCIRepository", &ns, &name).ok_or_else(|| {
                    format!("its chart comes from {what}, which nothing in the build applies")
                })?;
                let url = text(src, "/spec/url");
                if !url.starts_with("oci://") {
                    return Err(format!("{what} has no oci:// spec.url"));
                }
                let version = [
                    ("/spec/ref/digest"),
                    ("/spec/ref/semver"),
                    ("/spec/ref/tag"),
                ]
                .iter()
                .map(|p| text(src, p))
                .find(|v| !v.is_empty())
                .unwrap_or_else(|| "latest".into());
                let chart_name = url
                    .trim_end_matches('/')
                    .rsplit('/')
                    .next()
                    .unwrap_or("")
                    .to_string();
                let remote = Remote {
                    url,
                    name: chart_name,
                    version,
                    plain_http: src.pointer("/spec/insecure").and_then(Value::as_bool)
                        == Some(true),
                };
                Ok((Chart::Remote(remote), Vec::new()))
            }
            "HelmChart" => {
                let src = source(inv, "HelmChart", &ns, &name).ok_or_else(|| {
                    format!("its chart comes from {what}, which nothing in the build applies")
                })?;
                let spec = src.get("spec").cloned().unwrap_or(Value::Null);
                from_chart_spec(&spec, &ns, inv)
            }
            "" => Err("spec.chartRef has no kind".into()),
            other => Err(format!(
                "its chart comes from a {other}, which fluxwave does not read"
            )),
        }
    } else if let Some(spec) = hr.pointer("/spec/chart/spec") {
        from_chart_spec(spec, namespace, inv)
    } else {
        Err("it has neither spec.chart nor spec.chartRef".into())
    }
}

/// A HelmChart's spec (`spec.chart.spec` of a HelmRelease, or a HelmChart object's spec).
fn from_chart_spec(
    spec: &Value,
    namespace: &str,
    inv: &Inventory,
) -> Result<(Chart, Vec<String>), String> {
    let text = |p: &str| {
        spec.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let chart = text("/chart");
    if chart.is_empty() {
        return Err("its chart spec names no chart".into());
    }
    let (kind, name) = (text("/sourceRef/kind"), text("/sourceRef/name"));
    let ns = match text("/sourceRef/namespace") {
        n if n.is_empty() => namespace.to_string(),
        n => n,
    };
    let what = format!("{kind} {ns}/{name}");
    let mut files: Vec<String> = spec
        .get("valuesFiles")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    if let Some(f) = spec.get("valuesFile").and_then(Value::as_str) {
        if !f.is_empty() && files.is_empty() {
            files.push(f.to_string());
        }
    }
    match kind.as_str() {
        "HelmRepository" => {
            let src = source(inv, "HelmRepository", &ns, &name).ok_or_else(|| {
                format!("its chart comes from {what}, which nothing in the build applies")
            })?;
            let url = text_of(src, "/spec/url");
            if url.is_empty() {
                return Err(format!("{what} has no spec.url"));
            }
            let oci = text_of(src, "/spec/type") == "oci" || url.starts_with("oci://");
            let version = match text("/version") {
                v if v.is_empty() => "*".to_string(),
                v => v,
            };
            let remote = if oci {
                Remote {
                    url: format!("{}/{chart}", url.trim_end_matches('/')),
                    name: chart,
                    version,
                    plain_http: src.pointer("/spec/insecure").and_then(Value::as_bool)
                        == Some(true),
                }
            } else {
                Remote {
                    url,
                    name: chart,
                    version,
                    plain_http: false,
                }
            };
            Ok((Chart::Remote(remote), files))
        }
        "GitRepository" | "Bucket" => {
            let root = inv
                .owners
                .values()
                .find(|o| o.parent.is_none())
                .map(|o| o.source());
            let this = root
                .as_ref()
                .is_some_and(|(k, n, s)| k == &kind && n == &ns && s == &name);
            if !this {
                return Err(format!(
                    "its chart is at {chart} in {what}, which is not this repository: fluxwave reads charts from this repository, Helm repositories and OCI registries"
                ));
            }
            let path = chart
                .trim_start_matches("./")
                .trim_end_matches('/')
                .to_string();
            Ok((Chart::Local { path }, files))
        }
        "" => Err("its chart spec has no sourceRef kind".into()),
        other => Err(format!(
            "its chart comes from a {other}, which fluxwave does not read"
        )),
    }
}

fn text_of(v: &Value, p: &str) -> String {
    v.pointer(p)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// The source object `kind` `namespace/name` of the build.
fn source<'a>(inv: &'a Inventory, kind: &str, namespace: &str, name: &str) -> Option<&'a Value> {
    let id = ObjectId {
        group: SOURCE_GROUP.into(),
        kind: kind.into(),
        namespace: namespace.into(),
        name: name.into(),
    };
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

/// `Chart::Local` of `tree` written into the cache (a revision need not be checked out): its
/// folder, named by the digest of its files, is written once.
pub fn local(tree: &FileTree, path: &str, opts: &Options) -> Result<Fetched, String> {
    let files: Vec<&str> = tree.files_under(path).collect();
    if !files.iter().any(|f| *f == format!("{path}/Chart.yaml")) {
        return Err(format!("{path}/Chart.yaml is not in the repository"));
    }
    let mut hash = Sha256::new();
    let mut texts = Vec::new();
    for f in &files {
        let Some(text) = tree.read(f) else {
            continue;
        };
        hash.update(f.as_bytes());
        hash.update([0]);
        hash.update(text.as_bytes());
        hash.update([0]);
        texts.push((
            f.strip_prefix(path)
                .unwrap_or(f)
                .trim_start_matches('/')
                .to_string(),
            text,
        ));
    }
    let digest = crate::fs::hex(&hash.finalize());
    let name = path.rsplit('/').next().unwrap_or("chart");
    let dir = opts.cache.join("local").join(&digest[..32]).join(name);
    let version = chart_version(
        tree.read(&format!("{path}/Chart.yaml"))
            .as_deref()
            .map(String::as_str),
    );
    if dir.join("Chart.yaml").is_file() {
        crate::cache::used(&dir);
        return Ok(Fetched {
            dir,
            digest,
            version,
        });
    }
    let staging = staging(&opts.cache)?;
    let inner = staging.join(name);
    for (rel, text) in &texts {
        let to = inner.join(rel);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot write the chart cache: {e}"))?;
        }
        std::fs::write(&to, text.as_bytes())
            .map_err(|e| format!("cannot write the chart cache: {e}"))?;
    }
    settle(&inner, &dir)?;
    let _ = std::fs::remove_dir_all(&staging);
    Ok(Fetched {
        dir,
        digest,
        version,
    })
}

/// `remote` from the cache, or pulled into it with `helm pull` (never with `--offline`).
pub fn remote(remote: &Remote, opts: &Options, helm: Option<&Path>) -> Result<Fetched, String> {
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
            .ok_or_else(|| format!("version `{}` is not a version constraint", remote.version))?;
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
        return Err(format!(
            "{} is not in the chart cache, and --offline forbids pulling it",
            remote.label()
        ));
    }
    let Some(helm) = helm else {
        return Err(format!(
            "{} is not in the chart cache, and no helm is found to pull it",
            remote.label()
        ));
    };
    // A constraint on a Helm repository is resolved against its index first: the chart of
    // that version is then downloaded only when the cache lacks it.
    let mut remote = remote.clone();
    if !exact && !remote.oci() {
        remote.version = latest_in_index(&remote, opts, helm)?;
        if let Some(dir) = cached(&remote.version) {
            return fetched(dir);
        }
    }
    let remote = &remote;
    let exact = exact || !remote.oci();
    let staging = staging(&opts.cache)?;
    let mut cmd = std::process::Command::new(helm);
    cmd.arg("pull");
    if remote.oci() {
        if remote.version.starts_with("sha256:") {
            cmd.arg(format!("{}@{}", remote.url, remote.version));
        } else {
            cmd.arg(&remote.url).args(["--version", &remote.version]);
        }
        if remote.plain_http {
            cmd.arg("--plain-http");
        }
    } else {
        cmd.arg(&remote.name)
            .args(["--repo", &remote.url, "--version", &remote.version]);
    }
    cmd.arg("--untar").arg("--untardir").arg(&staging);
    let out = super::run(cmd).map_err(|e| format!("helm pull of {} fails: {e}", remote.label()))?;
    let inner = staging.join(&remote.name);
    if !inner.join("Chart.yaml").is_file() {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(format!(
            "helm pull of {} gave no chart {}: {}",
            remote.label(),
            remote.name,
            out.trim()
        ));
    }
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
    let _ = std::fs::remove_dir_all(&staging);
    fetched(dir)
}

/// The version of `remote`'s chart that its constraint picks in the repository's index, as
/// `helm search repo` reads it (through repository settings kept in the cache, never the
/// user's own).
fn latest_in_index(remote: &Remote, opts: &Options, helm: &Path) -> Result<String, String> {
    let settings = opts.cache.join("repositories");
    let alias = slug(&remote.url);
    let with_settings = |cmd: &mut std::process::Command| {
        cmd.env("HELM_REPOSITORY_CONFIG", settings.join("repositories.yaml"))
            .env("HELM_REPOSITORY_CACHE", settings.join("cache"));
    };
    let mut add = std::process::Command::new(helm);
    add.args(["repo", "add", &alias, &remote.url, "--force-update"]);
    with_settings(&mut add);
    super::run(add).map_err(|e| format!("the index of {} cannot be read: {e}", remote.url))?;
    let mut search = std::process::Command::new(helm);
    let name = format!("{alias}/{}", remote.name);
    search.args([
        "search",
        "repo",
        &name,
        "--version",
        &remote.version,
        "-o",
        "json",
    ]);
    with_settings(&mut search);
    let out = super::run(search)?;
    let found: Value =
        serde_json::from_str(&out).map_err(|e| format!("helm search printed {out}: {e}"))?;
    found
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c.get("name").and_then(Value::as_str) == Some(name.as_str()))
        .and_then(|c| c.get("version").and_then(Value::as_str))
        .map(str::to_string)
        .ok_or_else(|| {
            format!(
                "no version of chart {} in {} matches `{}`",
                remote.name, remote.url, remote.version
            )
        })
}

/// A cached chart folder, its digest (its files' bytes) and version.
fn fetched(dir: PathBuf) -> Result<Fetched, String> {
    crate::cache::used(&dir);
    let mut files = Vec::new();
    walk(&dir, &dir, &mut files, 0)
        .map_err(|e| format!("cannot read the chart cache {}: {e}", dir.display()))?;
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
fn staging(cache: &Path) -> Result<crate::process::Temporary, String> {
    let dir = cache.join("tmp").join(super::unique());
    let staged = crate::process::Temporary::folder(&dir)
        .map_err(|e| format!("cannot write the chart cache {}: {e}", cache.display()))?;
    crate::cache::mark(cache);
    Ok(staged)
}

/// Renames a staged chart into place; another run that placed it first wins.
fn settle(staged: &Path, dir: &Path) -> Result<(), String> {
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot write the chart cache: {e}"))?;
    }
    match std::fs::rename(staged, dir) {
        Ok(()) => Ok(()),
        Err(_) if dir.join("Chart.yaml").is_file() => Ok(()),
        Err(e) => Err(format!(
            "cannot write the chart cache {}: {e}",
            dir.display()
        )),
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
