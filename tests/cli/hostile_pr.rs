//! A pull request is untrusted input: whoever opens one controls every byte fluxwave reads.
//! Repositories are generated in which every name, path, value and chart field is, in turn,
//! one of a table of hostile strings (options for helm, `../` and absolute paths to canary
//! files outside the repository, control characters, markdown and HTML, shell and Flux
//! substitution syntax, 10,000 characters, bidirectional text, schemes helm should never be
//! handed), and every command is run on them in every format with Helm rendering on (the real
//! helm behind a `PATH` of wrappers that log their arguments), online and `--offline`.
//!
//! Each run is held to what a CI runner needs: nothing outside the repository and the chart
//! cache is written (write canaries), nothing outside them is read into the output (a read
//! canary), no program but git and helm starts, helm gets no option and no unvalidated value
//! from the repository, no Secret value is printed in any form, `--offline` opens no
//! connection and a chart's schema `$ref`s are never fetched, nothing panics, every line
//! passes the terminal writer, markdown shows names as text; and a release that
//! helm-controller or source-controller would refuse (a release name or namespace that is no
//! DNS-1123 name, values files outside the chart, a chart name, version or URL they reject)
//! is listed as not rendered, while a chart whose schema refers elsewhere is still rendered.
//!
//! `FLUXWAVE_HOSTILE_GROUP=release|chart|source|template|flux` runs one repository;
//! `FLUXWAVE_SHOW=1` prints every run; `FLUXWAVE_HOSTILE_ALL=1` lists every problem found, not
//! the first of each kind.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{json, Value};

use crate::common::TestRepo;
use crate::helm_env::{self, ChartServer};
use crate::leaks::base64;

/// The content of the read canaries outside the repository: no output may ever hold it.
const READ_TOKEN: &str = "FwReadCanaryQ4Z7k";

/// The Secret canaries: a plaintext Secret's value, a value a HelmRelease takes from a Secret
/// (`valuesFrom`, with the characters JSON escapes), one its chart fails with, and one a
/// Kustomization substitutes from a Secret (`postBuild.substituteFrom`).
const SECRET_PLAIN: &str = "FwPlainSecretQ8K2x";
const SECRET_VALUES: &str = "FwValuesSecret<&>Q5M";
const SECRET_FAIL: &str = "FwFailSecret<&>Q3J9w";
const SECRET_SUBST: &str = "FwSubstSecretQ6T1v";

/// Longest a fluxwave run may take before the test fails instead of hanging.
const RUN_LIMIT: Duration = Duration::from_secs(600);

/// The hostile strings. `{OUT}` is the watched folder outside the repository, `{CANARY}` a
/// values file there holding [`READ_TOKEN`], `{SCHEMA}` a JSON schema there that quotes it in
/// its error, `{CHART}` a chart (and a kustomization) there that renders it, `{UP_…}` the
/// same reached by `../` from any folder, `{PORT}` the test's listener on 127.0.0.1.
fn payload_templates() -> Vec<String> {
    let mut all: Vec<String> = [
        "--post-renderer=/bin/sh",
        "--post-renderer=sh",
        "--output-dir={OUT}/written",
        "--output-dir=written",
        "--kubeconfig={CANARY}",
        "-f{CANARY}",
        "--values={CANARY}",
        "--set-file=probe={CANARY}",
        "--repository-config={OUT}/repositories.yaml",
        "{CANARY}",
        "{UP_CANARY}",
        "file://{CANARY}",
        "{CHART}",
        "{UP_CHART}",
        "{SCHEMA}",
        "{UP_SCHEMA}",
        "file://{SCHEMA}",
        "http://127.0.0.1:{PORT}/schema.json",
        "http://169.254.169.254/latest/meta-data/",
        "ssh://git@127.0.0.1:{PORT}/fleet.git",
        "s3://charts/plain",
        "-http://127.0.0.1:{PORT}/",
        "\u{1b}[2J\u{1b}[31mred",
        "\u{1b}]52;c;cHduZWQ=\u{7}",
        "ok\rforged",
        "line\n::add-mask::forged",
        "x,title=forged,line=1",
        "`a|b`",
        "<img src=x onerror=alert(1)>",
        "</details>",
        "@octocat",
        "$(echo pwned > {OUT}/pwned-by-subshell)",
        "x; echo pwned > {OUT}/pwned-by-semicolon",
        "`echo pwned > {OUT}/pwned-by-backtick`",
        "${CLUSTER_NAME}",
        "${UNSET:=--post-renderer=/bin/sh}",
        "\u{202e}lmth.exe\u{202c}",
        "\u{2066}iso\u{2069}\u{200f}",
        "Ã©\u{fffd}\u{feff}\u{200b}",
        "..",
        "-",
        "ok-name",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    all.push("l".repeat(10_000));
    all
}

/// Where a hostile string is put.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Slot {
    HrName,
    ReleaseName,
    TargetNamespace,
    StorageNamespace,
    Values,
    LocalChart,
    RepoChart,
    OciChart,
    Version,
    LocalValuesFiles,
    RepoValuesFiles,
    SourceRefName,
    SourceRefNamespace,
    SourceRefKind,
    ChartRefName,
    ChartRefKind,
    HelmRepositoryUrl,
    OciRepositoryUrl,
    SchemaRef,
    FilesGet,
    KsName,
    KsPath,
    KsTargetNamespace,
    KsPatch,
    KsSubstitute,
    KustomizeResource,
    KustomizeComponent,
    KustomizePatchFile,
    GeneratorFile,
    GeneratorEnv,
    ConfigMapName,
    SecretName,
    FileName,
    FolderName,
}

const SLOTS: [Slot; 34] = [
    Slot::HrName,
    Slot::ReleaseName,
    Slot::TargetNamespace,
    Slot::StorageNamespace,
    Slot::Values,
    Slot::LocalChart,
    Slot::RepoChart,
    Slot::OciChart,
    Slot::Version,
    Slot::LocalValuesFiles,
    Slot::RepoValuesFiles,
    Slot::SourceRefName,
    Slot::SourceRefNamespace,
    Slot::SourceRefKind,
    Slot::ChartRefName,
    Slot::ChartRefKind,
    Slot::HelmRepositoryUrl,
    Slot::OciRepositoryUrl,
    Slot::SchemaRef,
    Slot::FilesGet,
    Slot::KsName,
    Slot::KsPath,
    Slot::KsTargetNamespace,
    Slot::KsPatch,
    Slot::KsSubstitute,
    Slot::KustomizeResource,
    Slot::KustomizeComponent,
    Slot::KustomizePatchFile,
    Slot::GeneratorFile,
    Slot::GeneratorEnv,
    Slot::ConfigMapName,
    Slot::SecretName,
    Slot::FileName,
    Slot::FolderName,
];

/// The repositories: the slots of one never stop the builds of another's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Group {
    Release,
    Chart,
    Source,
    Template,
    Flux,
}

/// The slowest first, so that two threads end together.
const GROUPS: [Group; 5] = [
    Group::Chart,
    Group::Flux,
    Group::Release,
    Group::Source,
    Group::Template,
];

impl Group {
    fn name(self) -> &'static str {
        match self {
            Group::Release => "release",
            Group::Chart => "chart",
            Group::Source => "source",
            Group::Template => "template",
            Group::Flux => "flux",
        }
    }
}

impl Slot {
    fn group(self) -> Group {
        use Slot::*;
        match self {
            HrName | ReleaseName | TargetNamespace | StorageNamespace | Values => Group::Release,
            LocalChart | RepoChart | OciChart | Version | LocalValuesFiles | RepoValuesFiles => {
                Group::Chart
            }
            SourceRefName | SourceRefNamespace | SourceRefKind | ChartRefName | ChartRefKind
            | HelmRepositoryUrl | OciRepositoryUrl => Group::Source,
            SchemaRef | FilesGet => Group::Template,
            KsName | KsPath | KsTargetNamespace | KsPatch | KsSubstitute | KustomizeResource
            | KustomizeComponent | KustomizePatchFile | GeneratorFile | GeneratorEnv
            | ConfigMapName | SecretName | FileName | FolderName => Group::Flux,
        }
    }

    /// No hostile string of the table is a chart, version, values file or source that Flux
    /// would use: the release must be listed as not rendered, with a reason.
    fn never_renders(self) -> bool {
        use Slot::*;
        matches!(
            self,
            LocalChart
                | RepoChart
                | OciChart
                | Version
                | LocalValuesFiles
                | RepoValuesFiles
                | SourceRefNamespace
                | SourceRefKind
                | ChartRefKind
                | HelmRepositoryUrl
                | OciRepositoryUrl
        )
    }

    /// The chart is this repository's and valid: whatever the string does, the release is
    /// rendered (a schema `$ref` to anywhere else is not followed: the values are then not
    /// validated against it).
    fn always_renders(self) -> bool {
        matches!(self, Slot::SchemaRef | Slot::FilesGet)
    }
}

/// One hostile string in one place (or one of the fixed cases, `slot` `None`).
struct Case {
    slot: Option<Slot>,
    /// The string, its placeholders resolved, or what the fixed case does.
    text: String,
}

/// Shows a hostile string in a message: escaped, and cut short.
fn show(s: &str) -> String {
    let escaped: String = s.escape_debug().collect();
    if escaped.chars().count() > 70 {
        let cut: String = escaped.chars().take(60).collect();
        format!("\"{cut}…\" ({} chars)", s.chars().count())
    } else {
        format!("\"{escaped}\"")
    }
}

impl Case {
    fn label(&self) -> String {
        match self.slot {
            Some(slot) => format!("{slot:?} = {}", show(&self.text)),
            None => format!("fixed case: {}", self.text),
        }
    }
}

/// The test's surroundings for one repository: the watched folders outside it (canaries and
/// write targets, the working directory, `HOME`), the wrappers `PATH` holds and their logs,
/// the chart cache, and a Helm repository served on 127.0.0.1 that counts every connection.
struct World {
    outside: PathBuf,
    cwd: PathBuf,
    home: PathBuf,
    tmp: PathBuf,
    bin: PathBuf,
    logs: PathBuf,
    /// The chart cache of the online runs, and the one the offline runs start cold with.
    cache: PathBuf,
    offline_cache: PathBuf,
    server: ChartServer,
    // Last: the folders go once the server has stopped.
    root: tempfile::TempDir,
}

/// Programs fluxwave must never start, each a wrapper that logs it was started and fails.
const FORBIDDEN: &[&str] = &[
    "sh",
    "bash",
    "dash",
    "zsh",
    "ksh",
    "busybox",
    "env",
    "kubectl",
    "kustomize",
    "flux",
    "curl",
    "wget",
    "python",
    "python3",
    "perl",
    "ruby",
    "node",
    "nc",
    "ncat",
    "socat",
    "ssh",
    "scp",
    "sops",
    "age",
    "gpg",
    "docker",
    "podman",
    "tar",
    "gzip",
    "cat",
    "cp",
    "mv",
    "rm",
    "touch",
    "ls",
    "mkdir",
    "ln",
    "chmod",
    "echo",
    "xdg-open",
    "less",
    "vi",
];

fn executable(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `git` as the test's own PATH finds it.
fn real_git() -> PathBuf {
    let path = std::env::var_os("PATH").expect("PATH is set");
    std::env::split_paths(&path)
        .map(|d| d.join("git"))
        .find(|p| p.is_file())
        .expect("git must be installed")
}

impl World {
    fn new() -> World {
        let root = tempfile::tempdir().unwrap();
        let dir = |name: &str| {
            let p = root.path().join(name);
            std::fs::create_dir_all(&p).unwrap();
            p
        };
        let (outside, cwd, home, tmp, bin, logs, cache, offline_cache, served) = (
            dir("outside"),
            dir("cwd"),
            dir("home"),
            dir("tmp"),
            dir("bin"),
            dir("logs"),
            dir("cache"),
            dir("offline-cache"),
            dir("served"),
        );
        std::fs::write(
            outside.join("canary.yaml"),
            format!("{{\"readCanary\": \"{READ_TOKEN}\"}}\n"),
        )
        .unwrap();
        std::fs::write(
            outside.join("canary.schema.json"),
            format!("{{\"enum\": [\"{READ_TOKEN}\"]}}\n"),
        )
        .unwrap();
        let chart = outside.join("chart");
        let cm = format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: outside\n  namespace: apps\ndata:\n  token: {READ_TOKEN}\n");
        for (rel, text) in [
            (
                "Chart.yaml",
                "apiVersion: v2\nname: outside\nversion: 1.0.0\n",
            ),
            ("templates/cm.yaml", cm.as_str()),
            ("kustomization.yaml", "resources:\n  - cm.yaml\n"),
            ("cm.yaml", cm.as_str()),
        ] {
            let p = chart.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }

        // The wrappers: one record per run, `argc NUL arg NUL …`, in a file per process.
        let record = |log: &str| {
            format!(
                "printf '%s\\0' \"$#\" \"$@\" >> '{}/{log}.'$$\n",
                logs.display()
            )
        };
        executable(
            &bin.join("git"),
            &format!(
                "#!/bin/sh\n{}exec '{}' \"$@\"\n",
                record("git"),
                real_git().display()
            ),
        );
        executable(
            &bin.join("helm"),
            &format!(
                "#!/bin/sh\n{}exec '{}' \"$@\"\n",
                record("helm"),
                helm_env::helm().display()
            ),
        );
        for name in FORBIDDEN {
            executable(
                &bin.join(name),
                &format!(
                    "#!/bin/sh\nset -- '{name}' \"$@\"\n{}exit 1\n",
                    record("forbidden")
                ),
            );
        }

        // The Helm repository: the `plain` chart packaged, its index, and a schema.
        let server = ChartServer::serve(&served);
        let world = World {
            outside,
            cwd,
            home,
            tmp,
            bin,
            logs,
            cache,
            offline_cache,
            server,
            root,
        };
        let source = world.root.path().join("source/plain");
        for (rel, text) in plain_chart(&world) {
            let p = source.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        helm_env::package(&source, &served);
        helm_env::index(&served, &world.server.url());
        std::fs::write(served.join("schema.json"), "{\"type\": \"string\"}\n").unwrap();
        world
    }

    fn port(&self) -> String {
        self.server.url().rsplit(':').next().unwrap().to_string()
    }

    /// `template` with this world's places put in.
    fn resolve(&self, template: &str) -> String {
        let up = |p: &Path| {
            format!(
                "{}{}",
                "../".repeat(40),
                p.display().to_string().trim_start_matches('/')
            )
        };
        let canary = self.outside.join("canary.yaml");
        let schema = self.outside.join("canary.schema.json");
        let chart = self.outside.join("chart");
        template
            .replace("{UP_CANARY}", &up(&canary))
            .replace("{UP_SCHEMA}", &up(&schema))
            .replace("{UP_CHART}", &up(&chart))
            .replace("{CANARY}", &canary.display().to_string())
            .replace("{SCHEMA}", &schema.display().to_string())
            .replace("{CHART}", &chart.display().to_string())
            .replace("{OUT}", &self.outside.display().to_string())
            .replace("{PORT}", &self.port())
    }

    /// The watched folders, every entry with its kind and bytes.
    fn watched(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for (name, dir) in [
            ("outside", &self.outside),
            ("cwd", &self.cwd),
            ("home", &self.home),
        ] {
            listing(dir, name, &mut out);
        }
        out
    }

    /// The records the wrappers named `log` wrote since the last call, each the arguments of
    /// one run; the log files are removed.
    fn take_records(&self, log: &str) -> Vec<Vec<String>> {
        let mut records = Vec::new();
        let mut files: Vec<PathBuf> = std::fs::read_dir(&self.logs)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&format!("{log}.")))
            })
            .collect();
        files.sort();
        for file in files {
            let bytes = std::fs::read(&file).unwrap();
            std::fs::remove_file(&file).unwrap();
            let mut fields = bytes
                .split(|b| *b == 0)
                .map(|f| String::from_utf8_lossy(f).into_owned());
            while let Some(argc) = fields.next() {
                let Ok(argc) = argc.parse::<usize>() else {
                    break;
                };
                records.push(fields.by_ref().take(argc).collect());
            }
        }
        records
    }
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// Every entry under `dir` (links not followed) as `name/rel -> kind and content`.
fn listing(dir: &Path, name: &str, out: &mut BTreeMap<String, String>) {
    fn walk(root: &Path, dir: &Path, name: &str, out: &mut BTreeMap<String, String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let path = e.path();
            let rel = format!(
                "{name}/{}",
                path.strip_prefix(root).unwrap().to_string_lossy()
            );
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.file_type().is_symlink() {
                let to = std::fs::read_link(&path).unwrap_or_default();
                out.insert(rel, format!("link to {}", to.display()));
            } else if meta.is_dir() {
                out.insert(rel, "folder".into());
                walk(root, &path, name, out);
            } else {
                let bytes = std::fs::read(&path).unwrap_or_default();
                out.insert(rel, format!("{} bytes {:x}", bytes.len(), fnv(&bytes)));
            }
        }
    }
    walk(dir, dir, name, out);
}

/// `text` as a YAML scalar: a JSON string (YAML reads JSON), with the characters a YAML
/// stream may not hold raw escaped too.
fn scalar(text: &str) -> String {
    escape_unprintable(&serde_json::to_string(text).unwrap())
}

/// JSON text with DEL, C1 controls and U+FEFF escaped (serde_json leaves them raw; they can
/// only occur inside its strings).
fn escape_unprintable(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if c == '\u{7f}' || ('\u{80}'..='\u{9f}').contains(&c) || c == '\u{feff}' {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// Objects as a YAML stream of JSON documents.
fn stream(docs: &[Value]) -> String {
    docs.iter()
        .map(|d| escape_unprintable(&serde_json::to_string_pretty(d).unwrap()))
        .collect::<Vec<_>>()
        .join("\n---\n")
        + "\n"
}

/// The chart every case installs (and the Helm repository serves): a ConfigMap that shows
/// the values whole and the Secret-sourced one transformed as charts do, a second object
/// named by a value, `fail` with a value; and lines a shell would run, should the rendered
/// text ever reach one.
fn plain_chart(world: &World) -> Vec<(&'static str, String)> {
    let out = world.outside.display();
    vec![
        (
            "Chart.yaml",
            "apiVersion: v2\nname: plain\nversion: 1.0.0\n".to_string(),
        ),
        (
            "values.yaml",
            "secret: \"\"\nextraName: \"\"\nfailWith: \"\"\n".to_string(),
        ),
        (
            "templates/cm.yaml",
            format!(
                r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {{{{ printf "%s-plain" .Release.Name | quote }}}}
data:
  values: {{{{ toJson .Values | quote }}}}
  secretJson: {{{{ toJson .Values.secret | quote }}}}
  secretBase64: {{{{ .Values.secret | toString | b64enc | quote }}}}
  secretQuoted: {{{{ .Values.secret | quote }}}}
  note: x; echo pwned > {out}/pwned-by-post-renderer
  fetch: x; curl http://127.0.0.1:1/; wget http://127.0.0.1:1/; kubectl version
{{{{- with .Values.extraName }}}}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{{{ quote . }}}}
{{{{- end }}}}
{{{{- with .Values.failWith }}}}{{{{ fail (printf "%s is wrong (%s, %s)" . (toJson .) (b64enc .)) }}}}{{{{ end }}}}
"#
            ),
        ),
    ]
}

fn write_chart(repo: &TestRepo, dir: &str, files: &[(&str, String)]) {
    for (rel, text) in files {
        repo.write(&format!("{dir}/{rel}"), text);
    }
}

fn link(repo: &TestRepo, rel: &str, to: &Path) {
    let p = repo.path().join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(to, p).unwrap();
}

fn helm_release(name: &str, namespace: &str, spec: Value) -> Value {
    let mut spec = spec;
    spec["interval"] = json!("1h");
    json!({
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    })
}

/// `spec.chart` of a chart in this repository.
fn local_chart(path: &str) -> Value {
    json!({"spec": {
        "chart": path,
        "sourceRef": {"kind": "GitRepository", "name": "flux-system", "namespace": "flux-system"},
    }})
}

/// `spec.chart` of `chart` `version` from the HelmRepository `namespace/name`.
fn repo_chart(chart: &str, version: &str, name: &str, namespace: &str) -> Value {
    json!({"spec": {
        "chart": chart,
        "version": version,
        "sourceRef": {"kind": "HelmRepository", "name": name, "namespace": namespace},
    }})
}

fn config_map(name: &str, namespace: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace}, "data": data})
}

fn secret(name: &str, namespace: &str, string_data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": name, "namespace": namespace}, "stringData": string_data})
}

fn flux_kustomization(name: &str, path: &str) -> Value {
    json!({
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": name, "namespace": "flux-system"},
        "spec": {
            "interval": "10m",
            "path": path,
            "prune": true,
            "sourceRef": {"kind": "GitRepository", "name": "flux-system"},
            "postBuild": {"substitute": {"CLUSTER_NAME": "dev"}},
        },
    })
}

fn helm_repository(name: &str, namespace: &str, url: &str) -> Value {
    json!({"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "HelmRepository",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"url": url, "interval": "1h"}})
}

fn oci_repository(name: &str, namespace: &str, url: &str) -> Value {
    json!({"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "OCIRepository",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"url": url, "ref": {"tag": "1.0.0"}, "insecure": true, "interval": "1h"}})
}

const SYNC: &str = "apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: flux-system, namespace: flux-system}
spec: {url: 'ssh://git@example.com/fleet', ref: {branch: main}, interval: 1m}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: flux-system, namespace: flux-system}
spec: {path: ./clusters/dev, prune: true, sourceRef: {kind: GitRepository, name: flux-system}, interval: 10m}
";

const DEV: &str = "resources:
  - sync.yaml
  - secrets.yaml
  - ../base
patches:
  - target:
      kind: Kustomization
      name: apps
    patch: |-
      - op: add
        path: /spec/decryption
        value:
          provider: sops
          secretRef:
            name: sops-age
";

/// The revision a pull request starts from: one environment (`clusters/dev`, shared Flux
/// objects in `clusters/base`), a flat app tier (`apps`), the Helm sources, the chart
/// `plain`, and the Secret canaries: a plaintext Secret, Secret values of releases that
/// print them transformed or fail with them, and a Secret a Kustomization substitutes.
fn write_base(repo: &TestRepo, world: &World, hostile: bool) {
    repo.write("clusters/dev/kustomization.yaml", DEV)
        .write("clusters/dev/sync.yaml", SYNC)
        .write(
            "clusters/dev/secrets.yaml",
            &stream(&[secret(
                "subst-secret",
                "flux-system",
                json!({"SECRET_TOKEN": SECRET_SUBST}),
            )]),
        );
    repo.write(
        "clusters/base/kustomization.yaml",
        "resources:\n  - sources.yaml\n  - apps.yaml\n  - baseline.yaml\n",
    );
    let mut oci = helm_repository(
        "oci-charts",
        "flux-system",
        &format!("oci://127.0.0.1:{}/charts", world.port()),
    );
    oci["spec"]["type"] = json!("oci");
    repo.write(
        "clusters/base/sources.yaml",
        &stream(&[
            helm_repository("charts", "flux-system", &world.server.url()),
            oci,
        ]),
    );
    repo.write(
        "clusters/base/apps.yaml",
        &stream(&[flux_kustomization("apps", "./apps")]),
    );
    let mut baseline = flux_kustomization("baseline", "./baseline");
    baseline["spec"]["postBuild"]["substituteFrom"] =
        json!([{"kind": "Secret", "name": "subst-secret"}]);
    repo.write("clusters/base/baseline.yaml", &stream(&[baseline]));
    repo.write(
        "apps/web.yaml",
        &stream(&[config_map("web", "default", json!({"a": "b"}))]),
    );
    if !hostile {
        repo.write("apps/kustomization.yaml", "resources:\n  - web.yaml\n");
    }
    let values_from = |extra: Value| {
        let mut v = json!({"kind": "Secret", "name": "values-secret"});
        if let (Some(v), Some(extra)) = (v.as_object_mut(), extra.as_object()) {
            v.extend(extra.clone());
        }
        json!([v])
    };
    let mut transforms = helm_release(
        "transforms",
        "apps",
        json!({"chart": local_chart("./charts/plain")}),
    );
    transforms["spec"]["valuesFrom"] = values_from(json!({}));
    let mut remote = helm_release(
        "remote",
        "apps",
        json!({"chart": repo_chart("plain", "1.0.0", "charts", "flux-system")}),
    );
    remote["spec"]["valuesFrom"] = values_from(json!({}));
    let mut fails = helm_release(
        "fails",
        "apps",
        json!({"chart": local_chart("./charts/plain")}),
    );
    fails["spec"]["valuesFrom"] =
        values_from(json!({"valuesKey": "fail", "targetPath": "failWith"}));
    let mut plain = secret("plain-secret", "apps", json!({"token": SECRET_PLAIN}));
    plain["data"] = json!({"password": base64(SECRET_PLAIN)});
    repo.write(
        "baseline/kustomization.yaml",
        "resources:\n  - secrets.yaml\n  - releases.yaml\n  - subst.yaml\n",
    )
    .write(
        "baseline/secrets.yaml",
        &stream(&[
            plain,
            secret(
                "values-secret",
                "apps",
                json!({"values.yaml": format!("secret: {}\n", scalar(SECRET_VALUES)), "fail": SECRET_FAIL}),
            ),
        ]),
    )
    .write(
        "baseline/releases.yaml",
        &stream(&[transforms, remote, fails]),
    )
    .write(
        "baseline/subst.yaml",
        &stream(&[config_map(
            "subst",
            "apps",
            json!({"token": "${SECRET_TOKEN}", "cluster": "${CLUSTER_NAME}"}),
        )]),
    );
    write_chart(repo, "charts/plain", &plain_chart(world));
}

/// A file or folder name made of `text`: no `/`, at most 200 bytes, never `.` or `..`.
fn file_name(text: &str) -> String {
    let mut name = String::new();
    for c in text.replace('/', "_").chars() {
        if name.len() + c.len_utf8() > 200 {
            break;
        }
        name.push(c);
    }
    if name.is_empty() || name == "." || name == ".." {
        name = format!("x{name}");
    }
    name
}

/// Writes case `i` into the repository: its files, and its Flux Kustomization into `ks`
/// (the cases of the app tier go into `apps`).
fn write_case(
    repo: &TestRepo,
    world: &World,
    i: usize,
    case: &Case,
    ks: &mut Vec<Value>,
    apps: &mut Vec<String>,
) {
    let name = format!("case-{i}");
    let folder = format!("cases/{name}");
    let p = case.text.as_str();
    let plain = || json!({"chart": local_chart("./charts/plain")});
    let hr = |spec: Value| helm_release(&name, "apps", spec);
    let mut kustomization = flux_kustomization(&name, &format!("./{folder}"));
    let mut docs: Vec<Value> = Vec::new();
    let mut kustomize = json!({"resources": ["case.yaml"]});
    let mut folder = folder.clone();
    let Some(slot) = case.slot else {
        fixed_case(repo, world, i, case, ks);
        return;
    };
    match slot {
        Slot::HrName => docs.push(helm_release(p, "apps", plain())),
        Slot::ReleaseName => {
            let mut r = hr(plain());
            r["spec"]["releaseName"] = json!(p);
            docs.push(r);
        }
        Slot::TargetNamespace | Slot::StorageNamespace => {
            let mut r = hr(plain());
            let field = if slot == Slot::TargetNamespace {
                "targetNamespace"
            } else {
                "storageNamespace"
            };
            r["spec"][field] = json!(p);
            docs.push(r);
        }
        Slot::Values => {
            let mut r = hr(plain());
            r["spec"]["values"] = json!({"extraName": p, "note": p});
            docs.push(r);
        }
        Slot::LocalChart => docs.push(hr(json!({"chart": local_chart(p)}))),
        Slot::RepoChart => docs.push(hr(
            json!({"chart": repo_chart(p, "1.0.0", "charts", "flux-system")}),
        )),
        Slot::OciChart => docs.push(hr(
            json!({"chart": repo_chart(p, "1.0.0", "oci-charts", "flux-system")}),
        )),
        Slot::Version => docs.push(hr(
            json!({"chart": repo_chart("plain", p, "charts", "flux-system")}),
        )),
        Slot::LocalValuesFiles => {
            let mut chart = local_chart("./charts/plain");
            chart["spec"]["valuesFiles"] = json!([p]);
            docs.push(hr(json!({ "chart": chart })));
        }
        Slot::RepoValuesFiles => {
            let mut chart = repo_chart("plain", "1.0.0", "charts", "flux-system");
            chart["spec"]["valuesFiles"] = json!([p]);
            docs.push(hr(json!({ "chart": chart })));
        }
        Slot::SourceRefName => {
            docs.push(helm_repository(p, "apps", &world.server.url()));
            docs.push(hr(
                json!({"chart": repo_chart("plain", "1.0.0", p, "apps")}),
            ));
        }
        Slot::SourceRefNamespace => docs.push(hr(
            json!({"chart": repo_chart("plain", "1.0.0", "charts", p)}),
        )),
        Slot::SourceRefKind => {
            let mut chart = repo_chart("plain", "1.0.0", "charts", "flux-system");
            chart["spec"]["sourceRef"]["kind"] = json!(p);
            docs.push(hr(json!({ "chart": chart })));
        }
        Slot::ChartRefName => {
            let url = format!("oci://127.0.0.1:{}/charts/plain", world.port());
            docs.push(oci_repository(p, "apps", &url));
            docs.push(hr(
                json!({"chartRef": {"kind": "OCIRepository", "name": p}}),
            ));
        }
        Slot::ChartRefKind => docs.push(hr(json!({"chartRef": {"kind": p, "name": "plain"}}))),
        // Each case its own source: one name for all would be one object of the build.
        Slot::HelmRepositoryUrl => {
            docs.push(helm_repository(&name, "apps", p));
            docs.push(hr(
                json!({"chart": repo_chart("plain", "1.0.0", &name, "apps")}),
            ));
        }
        Slot::OciRepositoryUrl => {
            docs.push(oci_repository(&name, "apps", p));
            docs.push(hr(
                json!({"chartRef": {"kind": "OCIRepository", "name": name}}),
            ));
        }
        Slot::SchemaRef => {
            let chart = format!("charts/schema-{i}");
            repo.write(
                &format!("{chart}/Chart.yaml"),
                &format!("apiVersion: v2\nname: schema-{i}\nversion: 1.0.0\n"),
            )
            .write(&format!("{chart}/values.yaml"), "probe: x\n")
            .write(
                &format!("{chart}/values.schema.json"),
                &format!(
                    "{{\"type\": \"object\", \"properties\": {{\"probe\": {{\"$ref\": {}}}}}}}\n",
                    scalar(p)
                ),
            )
            .write(
                &format!("{chart}/templates/cm.yaml"),
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-schema\ndata:\n  probe: {{ .Values.probe | quote }}\n",
            );
            docs.push(hr(json!({"chart": local_chart(&format!("./{chart}"))})));
        }
        Slot::FilesGet => {
            let chart = format!("charts/files-{i}");
            repo.write(
                &format!("{chart}/Chart.yaml"),
                &format!("apiVersion: v2\nname: files-{i}\nversion: 1.0.0\n"),
            )
            .write(
                &format!("{chart}/templates/cm.yaml"),
                &format!(
                    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{{{ .Release.Name }}}}-files\ndata:\n  got: {{{{ .Files.Get {} | quote }}}}\n  lines: {{{{ .Files.Lines {} | toJson | quote }}}}\n",
                    scalar(p),
                    scalar(p)
                ),
            );
            docs.push(hr(json!({"chart": local_chart(&format!("./{chart}"))})));
        }
        Slot::KsName => {
            kustomization["metadata"]["name"] = json!(p);
            docs.push(hr(plain()));
        }
        Slot::KsPath => {
            kustomization["spec"]["path"] = json!(p);
            docs.push(hr(plain()));
        }
        Slot::KsTargetNamespace => {
            kustomization["spec"]["targetNamespace"] = json!(p);
            docs.push(hr(plain()));
            docs.push(config_map(&format!("{name}-cm"), "apps", json!({"a": "b"})));
        }
        Slot::KsPatch => {
            let ops = json!([
                {"op": "add", "path": "/data/p", "value": p},
                {"op": "add", "path": "/metadata/labels", "value": {"p": p}},
            ]);
            kustomization["spec"]["patches"] = json!([
                {"patch": serde_json::to_string(&ops).unwrap(),
                 "target": {"kind": "ConfigMap", "name": format!("{name}-cm")}},
                {"patch": serde_json::to_string(&json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": p}, "data": {"q": p}})).unwrap(),
                 "target": {"kind": "ConfigMap", "name": p}},
                {"patch": serde_json::to_string(&json!([{"op": "replace",
                    "path": "/spec/releaseName", "value": p}])).unwrap(),
                 "target": {"kind": "HelmRelease"}},
            ]);
            let mut r = hr(plain());
            r["spec"]["releaseName"] = json!(name);
            docs.push(r);
            docs.push(config_map(&format!("{name}-cm"), "apps", json!({"a": "b"})));
        }
        Slot::KsSubstitute => {
            kustomization["spec"]["postBuild"]["substitute"]["PAYLOAD"] = json!(p);
            let mut r = hr(plain());
            r["spec"]["releaseName"] = json!("${PAYLOAD}");
            r["spec"]["values"] = json!({"extraName": "${PAYLOAD}"});
            docs.push(r);
            docs.push(config_map(
                &format!("{name}-${{PAYLOAD}}"),
                "apps",
                json!({"p": "${PAYLOAD}"}),
            ));
        }
        Slot::KustomizeResource
        | Slot::KustomizeComponent
        | Slot::KustomizePatchFile
        | Slot::GeneratorFile
        | Slot::GeneratorEnv => {
            docs.push(config_map(&format!("{name}-cm"), "apps", json!({"a": "b"})));
            let generator =
                |key: &str| json!([{"name": format!("{name}-gen"), "namespace": "apps", key: [p]}]);
            match slot {
                Slot::KustomizeResource => kustomize["resources"] = json!(["case.yaml", p]),
                Slot::KustomizeComponent => kustomize["components"] = json!([p]),
                Slot::KustomizePatchFile => kustomize["patches"] = json!([{"path": p}]),
                Slot::GeneratorFile => kustomize["configMapGenerator"] = generator("files"),
                _ => kustomize["configMapGenerator"] = generator("envs"),
            }
        }
        Slot::ConfigMapName => {
            docs.push(config_map(
                p,
                "apps",
                json!({"values.yaml": format!("extraName: {}\n", scalar(p))}),
            ));
            let mut r = hr(plain());
            r["spec"]["valuesFrom"] = json!([{"kind": "ConfigMap", "name": p}]);
            docs.push(r);
        }
        Slot::SecretName => {
            docs.push(secret(
                p,
                "apps",
                json!({"values.yaml": format!("secret: {}\n", scalar(SECRET_VALUES)), "token": SECRET_PLAIN}),
            ));
            let mut r = hr(plain());
            r["spec"]["valuesFrom"] = json!([{"kind": "Secret", "name": p}]);
            docs.push(r);
        }
        Slot::FileName => {
            let file = format!("{}.yaml", file_name(p));
            repo.write(
                &format!("apps/{file}"),
                &stream(&[config_map(&name, "default", json!({"file": p}))]),
            );
            apps.push(file);
            return;
        }
        Slot::FolderName => {
            folder = format!("cases/{}", file_name(p));
            kustomization["spec"]["path"] = json!(format!("./{folder}"));
            docs.push(hr(plain()));
        }
    }
    repo.write(&format!("{folder}/case.yaml"), &stream(&docs));
    repo.write(
        &format!("{folder}/kustomization.yaml"),
        &stream(&[kustomize]),
    );
    ks.push(kustomization);
}

/// The fixed cases: symbolic links in charts of this repository out to the canaries.
fn fixed_cases() -> Vec<Case> {
    [
        "a chart file that is a link to the read canary, read with .Files.Get",
        "a chart template that is a link to a template outside the repository",
        "a chart folder that is a link to a chart outside the repository",
        "a values file inside the chart that is a link to the read canary",
    ]
    .iter()
    .map(|t| Case {
        slot: None,
        text: t.to_string(),
    })
    .collect()
}

fn fixed_case(repo: &TestRepo, world: &World, i: usize, case: &Case, ks: &mut Vec<Value>) {
    let name = format!("case-{i}");
    let chart = format!("charts/linked-{i}");
    let canary = world.outside.join("canary.yaml");
    let outside_chart = world.outside.join("chart");
    let mut spec = json!({"chart": local_chart(&format!("./{chart}"))});
    let files = || {
        vec![
            (
                "Chart.yaml",
                format!("apiVersion: v2\nname: linked-{i}\nversion: 1.0.0\n"),
            ),
            (
                "templates/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-linked\ndata:\n  got: {{ .Files.Get \"files/canary.yaml\" | quote }}\n  values: {{ toJson .Values | quote }}\n".to_string(),
            ),
        ]
    };
    match fixed_cases().iter().position(|c| c.text == case.text) {
        Some(0) => {
            write_chart(repo, &chart, &files());
            link(repo, &format!("{chart}/files/canary.yaml"), &canary);
        }
        Some(1) => {
            write_chart(repo, &chart, &files()[..1]);
            link(
                repo,
                &format!("{chart}/templates/cm.yaml"),
                &outside_chart.join("templates/cm.yaml"),
            );
        }
        Some(2) => link(repo, &chart, &outside_chart),
        _ => {
            write_chart(repo, &chart, &files());
            link(repo, &format!("{chart}/extra-values.yaml"), &canary);
            spec["chart"]["spec"]["valuesFiles"] = json!(["extra-values.yaml"]);
        }
    }
    let folder = format!("cases/{name}");
    repo.write(
        &format!("{folder}/case.yaml"),
        &stream(&[helm_release(&name, "apps", spec)]),
    )
    .write(
        &format!("{folder}/kustomization.yaml"),
        "resources:\n  - case.yaml\n",
    );
    ks.push(flux_kustomization(&name, &format!("./{folder}")));
}

/// The pull request's revision: the base and every case of the group.
fn write_hostile(repo: &TestRepo, world: &World, cases: &[Case]) {
    write_base(repo, world, true);
    let mut ks = Vec::new();
    let mut apps = vec!["web.yaml".to_string()];
    for (i, case) in cases.iter().enumerate() {
        write_case(repo, world, i, case, &mut ks, &mut apps);
    }
    // A file each: one file of hundreds of Kustomizations is another test (check locates each
    // finding's document by reading the file again).
    let mut base = repo.read("clusters/base/kustomization.yaml");
    for (j, k) in ks.iter().enumerate() {
        repo.write(
            &format!("clusters/base/cases/{j}.yaml"),
            &stream(std::slice::from_ref(k)),
        );
        base.push_str(&format!("  - cases/{j}.yaml\n"));
    }
    repo.write("clusters/base/kustomization.yaml", &base);
    let list: String = apps
        .iter()
        .map(|f| format!("  - {}\n", scalar(f)))
        .collect();
    repo.write("apps/kustomization.yaml", &format!("resources:\n{list}"));
}

/// Standard base64 of every run of whole groups of three bytes of `secret`, at each of the
/// three offsets it can start at inside a longer encoded text.
fn base64_forms(secret: &str) -> Vec<String> {
    (0..3)
        .filter_map(|skip| {
            let tail = secret.get(skip..)?;
            let whole = tail.len() / 3 * 3;
            (whole >= 9).then(|| base64(&tail[..whole]))
        })
        .collect()
}

/// Every form of every Secret canary that must never be printed: as it is, JSON-escaped as
/// serde and as Go's `toJson` (`\u003c`) escape it, each of those escaped once more (a JSON
/// text printed inside a JSON or YAML string), and base64.
fn secret_needles() -> Vec<(String, String)> {
    let json = |s: &str| {
        let quoted = serde_json::to_string(s).unwrap();
        quoted[1..quoted.len() - 1].to_string()
    };
    let go = |s: &str| {
        json(s)
            .replace('<', "\\u003c")
            .replace('>', "\\u003e")
            .replace('&', "\\u0026")
    };
    let mut out = Vec::new();
    for s in [SECRET_PLAIN, SECRET_VALUES, SECRET_FAIL, SECRET_SUBST] {
        for (how, form) in [
            ("as it is", s.to_string()),
            ("JSON-escaped", json(s)),
            ("escaped as Go's toJson escapes", go(s)),
        ] {
            out.push((format!("{s} {how}"), form.clone()));
            out.push((format!("{s} {how}, then JSON-escaped"), json(&form)));
        }
        for b in base64_forms(s) {
            out.push((format!("{s} in base64"), b));
        }
    }
    out.sort_by(|a, b| a.1.cmp(&b.1));
    out.dedup_by(|a, b| a.1 == b.1);
    out
}

/// Kubernetes' DNS-1123 label: what a namespace must be.
fn dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// Helm's `ValidateReleaseName`: DNS-1123 labels joined by dots, at most 53 characters.
fn release_name_ok(s: &str) -> bool {
    s.len() <= 53 && s.split('.').all(dns_label)
}

/// A Kubernetes object name (DNS-1123 subdomain).
fn object_name_ok(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(dns_label)
}

/// Why helm-controller would refuse to install HelmRelease `hr` as it is built (its object
/// name, release name or namespaces), if it would.
fn refused_release(hr: &Value) -> Option<String> {
    let text = |p: &str| {
        hr.pointer(p)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let name = text("/metadata/name").unwrap_or_default();
    let namespace = text("/metadata/namespace").unwrap_or_default();
    if !object_name_ok(&name) {
        return Some(format!("its name {} is no object name", show(&name)));
    }
    if !dns_label(&namespace) {
        return Some(format!(
            "its namespace {} is no namespace",
            show(&namespace)
        ));
    }
    for field in ["targetNamespace", "storageNamespace"] {
        if let Some(ns) = text(&format!("/spec/{field}")) {
            if !dns_label(&ns) {
                return Some(format!("spec.{field} {} is no namespace", show(&ns)));
            }
        }
    }
    if let Some(release) = text("/spec/releaseName") {
        if !release_name_ok(&release) {
            return Some(format!("spec.releaseName {} is refused", show(&release)));
        }
        return None;
    }
    let derived = match text("/spec/targetNamespace") {
        Some(t) => format!("{t}-{name}"),
        None => name,
    };
    // helm-controller shortens a derived name past 53 characters to its first 40, `-` and
    // 12 hex digits.
    let shortened = if derived.len() > 53 {
        let cut = (0..=40)
            .rev()
            .find(|i| derived.is_char_boundary(*i))
            .unwrap_or(0);
        format!("{}-0123456789ab", &derived[..cut])
    } else {
        derived.clone()
    };
    (!release_name_ok(&shortened))
        .then(|| format!("its release name {} is refused", show(&shortened)))
}

/// Problems with the output of a run as the terminal writer promises it: UTF-8, no control
/// character but line feed and tab, no bidirectional control, no line that starts a GitHub
/// workflow command (`check --format github` may print its own, whose properties hold only
/// the keys GitHub defines).
fn terminal_problems(stream: &str, bytes: &[u8], workflow: bool) -> Vec<String> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return vec![format!("{stream} is not UTF-8")];
    };
    let mut problems = Vec::new();
    let bad = |c: char| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{200e}' | '\u{200f}' | '\u{061c}')
            || ('\u{202a}'..='\u{202e}').contains(&c)
            || ('\u{2066}'..='\u{2069}').contains(&c)
    };
    if let Some(c) = text.chars().find(|c| bad(*c)) {
        let line = text.lines().find(|l| l.contains(c)).unwrap_or("");
        problems.push(format!("{stream} holds {:?} raw: {}", c, show(line)));
    }
    for line in text.lines().filter(|l| l.starts_with("::")) {
        if !(workflow && own_workflow_command(line)) {
            problems.push(format!(
                "{stream} has a line that starts a workflow command: {}",
                show(line)
            ));
        }
    }
    problems
}

/// The HTML tags of the hostile strings (the product's own text may hold `<N>` and such).
const HTML_TAGS: &[&str] = &["img", "details", "summary"];

/// Whether `line` is an annotation as `check --format github` writes them: `::error`,
/// `::warning` or `::notice`, then no properties or only those GitHub defines, each once (a
/// name that is not escaped adds one, or repeats one).
fn own_workflow_command(line: &str) -> bool {
    let Some(rest) = ["::error", "::warning", "::notice"]
        .iter()
        .find_map(|k| line.strip_prefix(k))
    else {
        return false;
    };
    if rest.starts_with("::") {
        return true;
    }
    let Some((props, _message)) = rest.strip_prefix(' ').and_then(|r| r.split_once("::")) else {
        return false;
    };
    let mut seen = BTreeSet::new();
    props.split(',').all(|p| {
        p.split_once('=').is_some_and(|(k, _)| {
            ["file", "line", "col", "endLine", "endColumn", "title"].contains(&k)
                && seen.insert(k.to_string())
        })
    })
}

/// Raw HTML, mentions and broken table rows in markdown, outside code spans and fenced
/// blocks (the product's own `<details>` folding excepted).
fn markdown_problems(text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let mut fence: Option<String> = None;
    let mut table_pipes: Option<usize> = None;
    let (mut opened, mut closed) = (0, 0);
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(f) = &fence {
            if trimmed.starts_with(f.as_str())
                && trimmed.trim_end().chars().all(|c| c == '`' || c == '~')
            {
                fence = None;
            }
            continue;
        }
        let run: String = trimmed
            .chars()
            .take_while(|c| *c == '`' || *c == '~')
            .collect();
        if run.len() >= 3 && run.chars().all(|c| c == run.chars().next().unwrap()) {
            fence = Some(run);
            continue;
        }
        if line == "</details>" {
            closed += 1;
            continue;
        }
        if line.starts_with("<details><summary>")
            && line.ends_with("</summary>")
            && !line["<details><summary>".len()..line.len() - "</summary>".len()]
                .contains(['<', '>', '`', '@'])
        {
            opened += 1;
            continue;
        }
        // Unescaped pipes split a table row into cells, inside code spans too (GFM).
        if line.starts_with('|') {
            let pipes = unescaped(line, '|');
            match table_pipes {
                None => table_pipes = Some(pipes),
                Some(n) if n != pipes => problems.push(format!(
                    "a table row has {pipes} cell borders, its header {n}: {}",
                    show(line)
                )),
                Some(_) => {}
            }
        } else {
            table_pipes = None;
        }
        let plain = outside_code_spans(line);
        let mut chars = plain.chars().peekable();
        let mut prev = ' ';
        while let Some(c) = chars.next() {
            if c == '\\' {
                chars.next();
                prev = ' ';
                continue;
            }
            if c == '<' {
                let tag: String = chars
                    .clone()
                    .skip_while(|n| *n == '/')
                    .take_while(char::is_ascii_alphabetic)
                    .collect();
                if HTML_TAGS.contains(&tag.to_ascii_lowercase().as_str()) {
                    problems.push(format!("raw HTML outside a code span: {}", show(line)));
                    break;
                }
            }
            if c == '@'
                && !prev.is_alphanumeric()
                && chars.peek().is_some_and(char::is_ascii_alphanumeric)
            {
                problems.push(format!("a mention outside a code span: {}", show(line)));
                break;
            }
            prev = c;
        }
    }
    if opened != closed {
        problems.push(format!(
            "{opened} <details> folds opened and {closed} closed"
        ));
    }
    problems
}

/// How often `c` occurs in `line` not escaped by a backslash.
fn unescaped(line: &str, c: char) -> usize {
    let mut n = 0;
    let mut escaped = false;
    for x in line.chars() {
        if escaped {
            escaped = false;
        } else if x == '\\' {
            escaped = true;
        } else if x == c {
            n += 1;
        }
    }
    n
}

/// `line` with its code spans (a run of backticks to the next run of the same length) left
/// out.
fn outside_code_spans(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '\\' && i + 1 < chars.len() {
            out.push(chars[i]);
            out.push(chars[i + 1]);
            i += 2;
            continue;
        }
        if chars[i] != '`' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && chars[i] == '`' {
            i += 1;
        }
        let n = i - start;
        // The closing run: exactly n backticks.
        let mut j = i;
        let mut close = None;
        while j < chars.len() {
            if chars[j] == '`' {
                let s = j;
                while j < chars.len() && chars[j] == '`' {
                    j += 1;
                }
                if j - s == n {
                    close = Some(j);
                    break;
                }
            } else {
                j += 1;
            }
        }
        match close {
            Some(end) => {
                out.push(' ');
                i = end;
            }
            None => out.extend(&chars[start..i]),
        }
    }
    out
}

/// The helm flags fluxwave may pass, and those of them that take the next argument as value.
const HELM_FLAGS: &[&str] = &[
    "namespace",
    "n",
    "include-crds",
    "skip-crds",
    "values",
    "f",
    "repo",
    "version",
    "devel",
    "plain-http",
    "untar",
    "untardir",
    "destination",
    "d",
    "force-update",
    "output",
    "o",
    "skip-schema-validation",
    "kube-version",
    "api-versions",
    "no-hooks",
    "skip-tests",
    "debug",
    "repository-config",
    "repository-cache",
    "registry-config",
];
const HELM_VALUED: &[&str] = &[
    "namespace",
    "n",
    "values",
    "f",
    "repo",
    "version",
    "untardir",
    "destination",
    "d",
    "output",
    "o",
    "kube-version",
    "api-versions",
    "repository-config",
    "repository-cache",
    "registry-config",
];

/// `path` with `.` and `..` resolved as text (a link is not followed).
fn normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// A chart name as a Helm repository's index may hold it.
fn chart_name_ok(s: &str) -> bool {
    !s.is_empty()
        && s != "."
        && s != ".."
        && !s.starts_with('-')
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// Problems with one helm run's arguments: an option fluxwave does not pass (a value from
/// the repository read as an option), a value that names a place outside the repository and
/// the cache, a URL helm must not be handed, a release name, namespace or chart name
/// helm-controller or source-controller would refuse.
fn helm_argv_problems(args: &[String], inside: &[&Path], outside: &[&Path]) -> Vec<String> {
    let mut problems = Vec::new();
    let inside = |v: &str| {
        let p = normal(Path::new(v));
        inside.iter().any(|i| p.starts_with(i))
    };
    let outside: Vec<String> = outside.iter().map(|o| o.display().to_string()).collect();
    let mut positionals: Vec<&str> = Vec::new();
    let mut flags: Vec<(&str, &str)> = Vec::new();
    let mut after_dashes = false;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        i += 1;
        let climbs = normal(Path::new(a));
        if outside
            .iter()
            .any(|o| a.contains(o.as_str()) || climbs.starts_with(o))
        {
            problems.push(format!("{} names a place outside the repository", show(a)));
        }
        // The value of a `--flag=value` argument, or the argument itself.
        let valued = a
            .strip_prefix("--")
            .and_then(|f| f.split_once('='))
            .map_or(a, |(_, v)| v);
        if valued.contains("://")
            && !["http://", "https://", "oci://"]
                .iter()
                .any(|s| valued.starts_with(s))
        {
            problems.push(format!("{} is a URL helm must not be handed", show(a)));
        }
        if after_dashes {
            positionals.push(a);
            continue;
        }
        if a == "--" {
            after_dashes = true;
            continue;
        }
        let Some(flag) = a.strip_prefix('-') else {
            positionals.push(a);
            continue;
        };
        let flag = flag.trim_start_matches('-');
        let (name, value) = match flag.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (flag, None),
        };
        if !HELM_FLAGS.contains(&name) {
            problems.push(format!("{} is not an option fluxwave passes", show(a)));
            continue;
        }
        let value = match value {
            Some(v) => v,
            None if HELM_VALUED.contains(&name) => {
                let v = args.get(i).map_or("", String::as_str);
                i += 1;
                v
            }
            None => "",
        };
        flags.push((name, value));
    }
    for (name, value) in &flags {
        match *name {
            "namespace" | "n" if !dns_label(value) => {
                problems.push(format!("--namespace {} is no namespace", show(value)));
            }
            "values" | "f" if *value != "-" && !inside(value) => problems.push(format!(
                "--values {} is outside the chart cache and the repository",
                show(value)
            )),
            "untardir" | "destination" | "d" | "repository-config" | "repository-cache"
            | "registry-config"
                if !inside(value) =>
            {
                problems.push(format!(
                    "--{name} {} is outside the chart cache",
                    show(value)
                ));
            }
            "repo" if !value.starts_with("http://") && !value.starts_with("https://") => {
                problems.push(format!("--repo {} is no chart repository URL", show(value)));
            }
            _ => {}
        }
    }
    match (args.first().map(String::as_str), positionals.get(1..)) {
        (Some("template"), Some(rest)) => {
            if rest.len() != 2 {
                problems.push(format!(
                    "helm template is given {} arguments, not a release name and a chart",
                    rest.len()
                ));
            }
            if let Some(release) = rest.first() {
                if !release_name_ok(release) {
                    problems.push(format!("release name {} is refused by Helm", show(release)));
                }
            }
            if let Some(chart) = rest.get(1) {
                if !inside(chart) {
                    problems.push(format!(
                        "chart {} is outside the chart cache and the repository",
                        show(chart)
                    ));
                }
            }
        }
        (Some("pull"), Some(rest)) => {
            for chart in rest {
                if !chart.starts_with("oci://") && !chart_name_ok(chart) {
                    problems.push(format!("chart name {} is refused", show(chart)));
                }
            }
        }
        (Some("repo"), Some(rest)) if rest.first() == Some(&"add") => {
            if let Some(url) = rest.get(2) {
                if !url.starts_with("http://") && !url.starts_with("https://") {
                    problems.push(format!("{} is no chart repository URL", show(url)));
                }
            }
        }
        (Some("search"), Some(rest)) => {
            for name in rest.iter().skip(1) {
                let chart = name.rsplit('/').next().unwrap_or(name);
                if !chart_name_ok(chart) {
                    problems.push(format!("chart name {} is refused", show(name)));
                }
            }
        }
        _ => {}
    }
    problems
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Online,
    Offline,
}

/// What the test found wrong: by kind, each problem with the runs it was seen in.
#[derive(Default)]
struct Findings(Mutex<BTreeMap<(&'static str, String), Vec<String>>>);

impl Findings {
    fn add(&self, kind: &'static str, run: &str, problem: String) {
        self.0
            .lock()
            .unwrap()
            .entry((kind, problem))
            .or_default()
            .push(run.to_string());
    }

    /// Every kind with its count of problems and runs, and the first problems of each.
    fn report(self) -> String {
        let shown = if std::env::var_os("FLUXWAVE_HOSTILE_ALL").is_some() {
            usize::MAX
        } else {
            15
        };
        let all = self.0.into_inner().unwrap();
        let mut kinds: BTreeMap<&str, Vec<(String, Vec<String>)>> = BTreeMap::new();
        for ((kind, problem), runs) in all {
            kinds.entry(kind).or_default().push((problem, runs));
        }
        let mut out = String::new();
        for (kind, problems) in kinds {
            let runs: BTreeSet<&String> = problems.iter().flat_map(|(_, r)| r).collect();
            out.push_str(&format!(
                "\n{kind}: {} problems in {} runs\n",
                problems.len(),
                runs.len()
            ));
            for (problem, runs) in problems.iter().take(shown) {
                out.push_str(&format!(
                    "  {problem}\n      ({} runs: {}",
                    runs.len(),
                    runs[0]
                ));
                if let Some(last) = runs.get(1..).and_then(<[String]>::last) {
                    out.push_str(&format!(" … {last}"));
                }
                out.push_str(")\n");
            }
            if problems.len() > shown {
                out.push_str(&format!("  … and {} more\n", problems.len() - shown));
            }
        }
        out
    }
}

fn words(args: &'static str) -> Vec<&'static str> {
    args.split(' ').collect()
}

/// The commands that render HelmReleases, every format of each, online.
fn rendering_commands() -> Vec<Vec<&'static str>> {
    [
        "check --format text",
        "check --format json",
        "check --format github",
        "check --base HEAD --format github",
        "build --format yaml",
        "build --format json",
        "diff --from HEAD --format text",
        "diff --from HEAD --format json",
        "diff --from HEAD --format github",
        "diff --from HEAD~1 --to HEAD --format github",
        "cutover --from HEAD~1 --to HEAD --format text",
        "cutover --from HEAD~1 --to HEAD --format json",
        "cutover --each HEAD~2..HEAD --format json",
    ]
    .into_iter()
    .map(words)
    .collect()
}

/// The same commands `--offline`, each once: what `--offline` changes is where charts come
/// from, which no format changes (and a failing render runs helm again in every run).
fn offline_commands() -> Vec<Vec<&'static str>> {
    [
        "check --format github",
        "check --base HEAD --format github",
        "build --format json",
        "diff --from HEAD --format github",
        "diff --from HEAD~1 --to HEAD --format json",
        "cutover --from HEAD~1 --to HEAD --format text",
        "cutover --each HEAD~2..HEAD --format json",
    ]
    .into_iter()
    .map(words)
    .collect()
}

/// The commands that read the layout; `init` first, so that the others have a catalog and a
/// fluxwave.yaml drafted from the hostile app tier.
fn layout_commands() -> Vec<Vec<&'static str>> {
    vec![
        vec!["blast", "--format", "text"],
        vec!["blast", "--format", "json"],
        vec!["blast", "--format", "markdown"],
        vec!["init", "--catalog"],
        vec!["waves", "--format", "text"],
        vec!["waves", "--format", "json"],
        vec!["waves", "--format", "markdown"],
        vec!["waves", "--format", "mermaid"],
        vec!["plan", "--format", "text"],
        vec!["plan", "--format", "json"],
        vec!["apply", "--dry-run"],
    ]
}

#[derive(Default)]
struct Tally {
    cases: AtomicUsize,
    runs: AtomicUsize,
    git: AtomicUsize,
    /// The helm runs under each command.
    helm: Mutex<BTreeMap<String, usize>>,
}

/// One group's repository, made and run through every command; what is wrong goes into
/// `findings`.
fn run_group(group: Group, findings: &Findings, tally: &Tally) {
    let world = World::new();
    let mut cases: Vec<Case> = SLOTS
        .iter()
        .filter(|s| s.group() == group)
        .flat_map(|slot| {
            payload_templates().into_iter().map(|t| Case {
                slot: Some(*slot),
                text: world.resolve(&t),
            })
        })
        .collect();
    if group == Group::Template {
        cases.extend(fixed_cases());
    }
    tally.cases.fetch_add(cases.len(), Ordering::Relaxed);
    let repo = TestRepo::empty();
    write_base(&repo, &world, false);
    repo.commit_all("base");
    write_hostile(&repo, &world, &cases);
    repo.commit_all("hostile");
    repo.git(&["revert", "--no-edit", "HEAD"]);
    repo.git(&["checkout", "HEAD~1", "--", "."]);
    let needles = secret_needles();
    let show_runs = std::env::var_os("FLUXWAVE_SHOW").is_some();

    let mut runs: Vec<(Mode, Vec<&str>)> = Vec::new();
    // Offline first, from a cold cache of its own: every release it can render is rendered by
    // helm then, not read from renders an online run left.
    runs.extend(offline_commands().into_iter().map(|c| (Mode::Offline, c)));
    runs.extend(rendering_commands().into_iter().map(|c| (Mode::Online, c)));
    runs.extend(layout_commands().into_iter().map(|c| (Mode::Online, c)));
    for (mode, args) in runs {
        let label = format!(
            "[{}] fluxwave {}{}",
            group.name(),
            args.join(" "),
            if mode == Mode::Offline {
                " --offline"
            } else {
                ""
            }
        );
        let watched = world.watched();
        let (connections, schema_hits) = (
            world.server.connections(),
            world.server.hits("/schema.json"),
        );
        let mut cmd = repo.command(&args);
        cmd.env_remove("FLUXWAVE_NO_HELM")
            .env_remove("FLUXWAVE_HELM")
            .env_remove("FLUXWAVE_OFFLINE")
            .env_remove("FLUXWAVE_CACHE")
            .env_remove("XDG_CACHE_HOME")
            .arg("--helm")
            .arg(world.bin.join("helm"))
            .arg("--cache")
            .arg(if mode == Mode::Offline {
                &world.offline_cache
            } else {
                &world.cache
            })
            .env("PATH", &world.bin)
            .env("HOME", &world.home)
            .env("TMPDIR", &world.tmp)
            .current_dir(&world.cwd);
        if mode == Mode::Offline {
            cmd.arg("--offline");
        }
        helm_env::isolate(&mut cmd);
        let started = std::time::Instant::now();
        let out: Output = helm_env::output_within(&mut cmd, RUN_LIMIT);
        let took = started.elapsed();
        tally.runs.fetch_add(1, Ordering::Relaxed);
        let code = out.status.code().unwrap_or(-1);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if show_runs {
            eprintln!("== {label} -> {code} ({took:?})\n{stdout}\n{stderr}");
        }

        // 5: exit 0, 1 or 2, never a panic.
        if !(0..=2).contains(&code) || stderr.contains("panicked") {
            let head: Vec<&str> = stderr.lines().take(3).collect();
            findings.add(
                "exit status or panic",
                &label,
                format!("exit {code}: {}", show(&head.join("\n"))),
            );
        }
        // 1: nothing written outside the repository and the cache.
        let now = world.watched();
        for (path, what) in &now {
            if watched.get(path) != Some(what) {
                findings.add(
                    "written outside the repository",
                    &label,
                    format!("{path} ({what})"),
                );
            }
        }
        for path in watched.keys().filter(|p| !now.contains_key(*p)) {
            findings.add(
                "written outside the repository",
                &label,
                format!("{path} removed"),
            );
        }
        // 2: the read canary never printed.
        for (stream, text) in [("stdout", &stdout), ("stderr", &stderr)] {
            for line in text.lines().filter(|l| l.contains(READ_TOKEN)).take(8) {
                findings.add(
                    "file outside the repository printed",
                    &label,
                    format!("{stream}: {}", show(line.trim())),
                );
            }
        }
        // 3: no program but git and helm; helm's arguments all validated.
        for record in world.take_records("forbidden") {
            let argv: Vec<String> = record.iter().map(|a| show(a)).collect();
            findings.add("program started", &label, argv.join(" "));
        }
        tally
            .git
            .fetch_add(world.take_records("git").len(), Ordering::Relaxed);
        for record in world.take_records("helm") {
            *tally
                .helm
                .lock()
                .unwrap()
                .entry(args[0].to_string())
                .or_default() += 1;
            let sub = record.first().map_or("", String::as_str);
            let inside = [world.cache.as_path(), &world.offline_cache, repo.path()];
            let outside = [world.outside.as_path(), &world.home, &world.cwd];
            for problem in helm_argv_problems(&record, &inside, &outside) {
                findings.add("helm argument", &label, format!("helm {sub}: {problem}"));
            }
        }
        // 4: no Secret value in any form.
        for (what, needle) in &needles {
            for (stream, text) in [("stdout", &stdout), ("stderr", &stderr)] {
                for line in text.lines().filter(|l| l.contains(needle.as_str())).take(8) {
                    findings.add(
                        "secret printed",
                        &label,
                        format!("{stream}: {what}: {}", show(line.trim())),
                    );
                }
            }
        }
        // 5: --offline opens no connection; a schema $ref is never fetched.
        let opened = world.server.connections() - connections;
        if mode == Mode::Offline && opened > 0 {
            findings.add(
                "connection with --offline",
                &label,
                format!("{opened} connections to the listener on 127.0.0.1"),
            );
        }
        let fetched = world.server.hits("/schema.json") - schema_hits;
        if fetched > 0 {
            findings.add(
                "schema $ref fetched",
                &label,
                format!("GET /schema.json {fetched} times"),
            );
        }
        // The terminal writer, and markdown.
        let github = args.contains(&"github") && args[0] == "check";
        for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            for problem in terminal_problems(stream, bytes, github && stream == "stdout") {
                findings.add("terminal writer", &label, problem);
            }
        }
        let markdown =
            args.contains(&"markdown") || (args.contains(&"github") && args[0] == "diff");
        if markdown {
            for problem in markdown_problems(&stdout) {
                findings.add("markdown", &label, problem);
            }
        }
        // What is rendered, and what is refused.
        if args == ["build", "--format", "json"] {
            match serde_json::from_str::<Value>(&stdout) {
                Ok(doc) => render_problems(&doc, &cases, &label, findings),
                Err(e) => findings.add("exit status or panic", &label, format!("not JSON: {e}")),
            }
        }
    }
}

/// Holds `build --format json` to what helm-controller and source-controller do: a release
/// they refuse is listed as not rendered with a reason and renders nothing; a chart of the
/// repository whose schema refers elsewhere is rendered.
fn render_problems(doc: &Value, cases: &[Case], label: &str, findings: &Findings) {
    let list = |key: &str| doc[key].as_array().cloned().unwrap_or_default();
    let rendered: BTreeSet<String> = list("objects")
        .iter()
        .filter_map(|o| o["release"].as_str().map(str::to_string))
        .collect();
    let not_rendered: BTreeMap<String, String> = list("notRendered")
        .iter()
        .filter_map(|n| {
            Some((
                n["release"].as_str()?.to_string(),
                n["why"].as_str().unwrap_or("").to_string(),
            ))
        })
        .collect();
    for o in list("objects")
        .iter()
        .filter(|o| o["kind"] == "HelmRelease")
    {
        let hr = &o["object"];
        let id = format!(
            "{}/{}",
            o["namespace"].as_str().unwrap_or(""),
            o["name"].as_str().unwrap_or("")
        );
        let case = o["name"]
            .as_str()
            .and_then(|n| n.strip_prefix("case-"))
            .and_then(|i| i.parse::<usize>().ok())
            .and_then(|i| cases.get(i));
        let what = case.map_or_else(|| format!("HelmRelease {}", show(&id)), Case::label);
        let refused = refused_release(hr).or_else(|| {
            case.and_then(|c| c.slot)
                .filter(|s| s.never_renders())
                .map(|s| format!("no {s:?} of the table is one Flux uses"))
        });
        let listed = not_rendered
            .get(&id)
            .is_some_and(|why| !why.trim().is_empty());
        if let Some(why) = refused {
            if rendered.contains(&id) || !listed {
                findings.add(
                    "refused release not listed as not rendered",
                    label,
                    format!(
                        "{what}: {why}, yet it is {}",
                        if rendered.contains(&id) {
                            "rendered"
                        } else {
                            "not listed in notRendered"
                        }
                    ),
                );
            }
        } else if case.and_then(|c| c.slot).is_some_and(Slot::always_renders)
            && !rendered.contains(&id)
        {
            findings.add(
                "release of a valid chart not rendered",
                label,
                format!(
                    "{what}: {}",
                    not_rendered
                        .get(&id)
                        .map_or("not listed".to_string(), |w| show(w))
                ),
            );
        }
    }
}

#[test]
fn a_hostile_pull_request_runs_nothing_reads_nothing_outside_and_prints_no_secret() {
    let only = std::env::var("FLUXWAVE_HOSTILE_GROUP").ok();
    let groups: Vec<Group> = GROUPS
        .iter()
        .copied()
        .filter(|g| only.as_deref().is_none_or(|o| o == g.name()))
        .collect();
    assert!(!groups.is_empty(), "FLUXWAVE_HOSTILE_GROUP names no group");
    let findings = Findings::default();
    let tally = Tally::default();
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                while let Some(group) = groups.get(next.fetch_add(1, Ordering::Relaxed)) {
                    run_group(*group, &findings, &tally);
                }
            });
        }
    });
    let helm = tally.helm.into_inner().unwrap();
    let under: Vec<String> = helm.iter().map(|(c, n)| format!("{n} under {c}")).collect();
    eprintln!(
        "hostile pull request: {} cases ({} strings through {} places, and {} fixed cases) in {} repositories; {} fluxwave runs, which ran git {} times and helm {} times ({})",
        tally.cases.load(Ordering::Relaxed),
        payload_templates().len(),
        SLOTS.len(),
        fixed_cases().len(),
        groups.len(),
        tally.runs.load(Ordering::Relaxed),
        tally.git.load(Ordering::Relaxed),
        helm.values().sum::<usize>(),
        under.join(", "),
    );
    let report = findings.report();
    assert!(
        report.is_empty(),
        "a hostile pull request gets through:{report}"
    );
}

/// The checks above catch what they claim, and pass what fluxwave may rightly print and run.
#[test]
fn the_hostile_pull_request_checks_catch_what_they_claim() {
    // Markdown: HTML, mentions, unbalanced folds and torn table rows outside code spans.
    let fine = "| A | B |\n|---|---|\n| `<img src=x>` | ``a`<img>`b`` |\n| \\| `@octocat` | x |\n\n<details><summary>Diffs of 1 object</summary>\n\n```diff\n-</details>\n<img>\n```\n</details>\n";
    assert_eq!(markdown_problems(fine), Vec::<String>::new());
    for bad in [
        "| `a` | <img src=x onerror=alert(1)> |",
        "text `a`</details> more",
        "hello @octocat",
        "| A | B |\n|---|---|\n| `a|b` | c |",
        "| A | B |\n|---|---|\n| a\nb | c |",
        "`unclosed <img src=x>",
    ] {
        assert!(!markdown_problems(bad).is_empty(), "{bad:?}");
    }

    // The terminal writer and workflow commands.
    assert!(terminal_problems("stdout", b"plain\ttext\n", false).is_empty());
    for bad in [
        &b"\x1b[2J"[..],
        "\u{202e}x".as_bytes(),
        b"a\rb",
        b"\xff\xfe",
        b"x\n::add-mask::y\n",
    ] {
        assert!(
            !terminal_problems("stdout", bad, true).is_empty(),
            "{bad:?}"
        );
    }
    assert!(own_workflow_command(
        "::error file=a.yaml,line=3,col=1,title=x::message: here"
    ));
    assert!(own_workflow_command("::warning::message"));
    assert!(!own_workflow_command("::add-mask::x"));
    assert!(!own_workflow_command(
        "::error file=a,title=forged,title=x::m"
    ));
    assert!(!own_workflow_command("::error file=a,line=1,x=y::m"));

    // helm's arguments.
    let (cache, repo, out) = (Path::new("/c"), Path::new("/r"), Path::new("/o"));
    let argv = |a: &[&str]| -> Vec<String> { a.iter().map(|s| s.to_string()).collect() };
    let problems = |a: &[&str]| helm_argv_problems(&argv(a), &[cache, repo], &[out]);
    assert_eq!(
        problems(&[
            "template",
            "rel",
            "/c/local/x/plain",
            "--namespace",
            "apps",
            "--include-crds",
            "--values",
            "/c/local/x/plain/extra.yaml",
            "--values",
            "-"
        ]),
        Vec::<String>::new()
    );
    assert_eq!(
        problems(&["template", "--namespace=apps", "--", "rel", "/c/x"]),
        Vec::<String>::new()
    );
    assert_eq!(
        problems(&[
            "pull",
            "plain",
            "--repo",
            "http://127.0.0.1:1",
            "--version",
            "1.0.0",
            "--untar",
            "--untardir",
            "/c/tmp/1"
        ]),
        Vec::<String>::new()
    );
    for bad in [
        &[
            "template",
            "--post-renderer=/bin/sh",
            "/c/x",
            "--namespace",
            "apps",
        ][..],
        &[
            "template",
            "rel",
            "/c/x",
            "--values",
            "/c/x/../../../o/canary.yaml",
        ],
        &["template", "rel", "/o/chart"],
        &["template", "--", "Not A Name", "/c/x"],
        &[
            "template",
            "rel",
            "/c/x",
            "--namespace",
            "--kubeconfig=/o/k",
        ],
        &["pull", "../../o/chart", "--repo", "http://x"],
        &["pull", "-f/o/canary.yaml", "--repo", "http://x"],
        &["repo", "add", "alias", "file:///o/repo"],
        &["pull", "plain", "--repo", "ssh://git@x/y"],
    ] {
        assert!(!problems(bad).is_empty(), "{bad:?}");
    }

    // Secret needles: each form is found wherever a chart or a printer puts it.
    let needles = secret_needles();
    let found = |text: &str| needles.iter().any(|(_, n)| text.contains(n.as_str()));
    assert!(found(&base64(&format!("x{SECRET_VALUES}"))));
    assert!(found(&base64(&format!("xy{SECRET_FAIL}z"))));
    let go = serde_json::to_string(SECRET_VALUES)
        .unwrap()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026");
    assert!(found(&serde_json::to_string(&go).unwrap()));
    assert!(!found("nothing secret here"));

    // Releases helm-controller refuses.
    let hr = |name: &str, spec: Value| json!({"metadata": {"name": name, "namespace": "apps"}, "spec": spec});
    assert_eq!(refused_release(&hr("web", json!({}))), None);
    assert_eq!(
        refused_release(&hr("a.b", json!({"targetNamespace": "media"}))),
        None
    );
    let long = "x".repeat(60);
    assert_eq!(
        refused_release(&hr(&long, json!({"targetNamespace": "media"}))),
        None
    );
    for bad in [
        hr("--post-renderer=/bin/sh", json!({})),
        hr("web", json!({"releaseName": "-f/etc/passwd"})),
        hr("web", json!({"releaseName": long})),
        hr("web", json!({"targetNamespace": "Media"})),
        hr("web", json!({"storageNamespace": "a b"})),
        hr("..", json!({})),
    ] {
        assert!(refused_release(&bad).is_some(), "{bad}");
    }
}
