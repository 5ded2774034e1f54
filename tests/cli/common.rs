//! Test harness: a repository in a temporary folder and the real binary run on it.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The fluxwave binary, with HelmRelease rendering off (`FLUXWAVE_NO_HELM`) and no
/// flux-operator (`FLUXWAVE_FLUX_OPERATOR` names none): a test's outcome must not depend on
/// whether a `helm` or a `flux-operator` is on the PATH or a chart can be reached. The Helm
/// tests turn rendering back on with `.env_remove("FLUXWAVE_NO_HELM")`, the ResourceSet tests
/// name the real flux-operator (`operator_env`).
pub fn fluxwave() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fluxwave"));
    cmd.env("FLUXWAVE_NO_HELM", "1")
        .env("FLUXWAVE_FLUX_OPERATOR", NO_FLUX_OPERATOR);
    cmd
}

/// A flux-operator program that is not there.
pub const NO_FLUX_OPERATOR: &str = "/nonexistent/flux-operator";

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

pub struct TestRepo {
    dir: tempfile::TempDir,
}

pub fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples")
}

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

impl TestRepo {
    pub fn empty() -> TestRepo {
        TestRepo {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// A copy of `examples/<name>`.
    pub fn example(name: &str) -> TestRepo {
        let repo = TestRepo::empty();
        copy_tree(&examples().join(name), repo.path());
        repo
    }

    /// A copy of `tests/fixtures/<name>`.
    pub fn fixture(name: &str) -> TestRepo {
        let repo = TestRepo::empty();
        copy_tree(&fixtures().join(name), repo.path());
        repo
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn write(&self, rel: &str, text: &str) -> &Self {
        let p = self.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
        self
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
    }

    pub fn exists(&self, rel: &str) -> bool {
        self.path().join(rel).exists()
    }

    pub fn remove(&self, rel: &str) {
        std::fs::remove_file(self.path().join(rel)).unwrap();
    }

    /// Writes a ServiceDefinition with the contract fields.
    pub fn service(&self, name: &str, deps: &[&str]) -> &Self {
        let deps = if deps.is_empty() {
            String::new()
        } else {
            format!(
                "  dependencies:\n{}",
                deps.iter()
                    .map(|d| format!("    - to: {d}\n"))
                    .collect::<String>()
            )
        };
        self.write(
            &format!("catalog/{name}.yaml"),
            &format!("apiVersion: fluxwave.dev/v1alpha1\nkind: ServiceDefinition\nmetadata:\n  name: {name}\nspec:\n{deps}  image:\n    repository: ghcr.io/example/{name}\n    tag: \"1.0.0\"\n  port: 8080\n  ingress:\n    host: {name}.example.org\n"),
        )
    }

    /// Writes a small manifest (a ConfigMap) that a unit owns.
    pub fn manifest(&self, rel: &str) -> &Self {
        let name = Path::new(rel)
            .file_stem()
            .unwrap()
            .to_str()
            .unwrap()
            .replace('.', "-");
        self.write(rel, &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: default\ndata:\n  file: {rel}\n"))
    }

    /// The minimal Flux wiring of a flat repository: base with an `apps` Kustomization and a
    /// dev environment with its decryption patch, and the `platform-config` folder (with the
    /// waves' `cluster-vars`) so that every `spec.path` exists.
    pub fn flux_wiring(&self) -> &Self {
        self.write("platform-config/kustomization.yaml", "resources:\n  - cluster-vars.yaml\n")
            .write("platform-config/cluster-vars.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-vars\n  namespace: flux-system\ndata:\n  CLUSTER_DOMAIN: example.org\n");
        self.write("clusters/base/kustomization.yaml", "# shared Flux objects\napiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - platform-config.yaml\n  # the app tier\n  - apps.yaml\n")
            .write("clusters/base/platform-config.yaml", "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: platform-config\n  namespace: flux-system\nspec:\n  interval: 1h\n  path: ./platform-config\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n")
            .write("clusters/base/apps.yaml", "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  dependsOn:\n    - name: platform-config\n  interval: 10m\n  path: ./apps\n  prune: true\n  wait: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n")
            .write("clusters/dev/kustomization.yaml", "# dev\napiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../base\npatches:\n  # decryption for the app tier\n  - target:\n      kind: Kustomization\n      name: apps\n    patch: |-\n      - op: add\n        path: /spec/decryption\n        value:\n          provider: sops\n          secretRef:\n            name: sops-age\n")
    }

    /// Writes `apps/kustomization.yaml` listing every manifest of the flat app tier.
    pub fn flat_kustomization(&self) -> &Self {
        let mut files: Vec<String> = std::fs::read_dir(self.path().join("apps"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|f| f.ends_with(".yaml") && f != "kustomization.yaml")
            .collect();
        files.sort();
        let list: String = files.iter().map(|f| format!("  - {f}\n")).collect();
        self.write("apps/kustomization.yaml", &format!("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n{list}"))
    }

    /// Runs `fluxwave --repo <this> ARGS...` (HelmReleases judged by their values: the Helm
    /// tests turn rendering on, see `helm_env`); temporary paths in the output become `[REPO]`.
    pub fn run(&self, args: &[&str]) -> Run {
        self.run_command(self.command(args))
    }

    /// The command `run` runs, to set more of its environment first.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = fluxwave();
        cmd.arg("--repo")
            .arg(self.path())
            .args(args)
            .env("NO_COLOR", "1")
            .env("COLUMNS", "100");
        cmd
    }

    /// Runs `cmd` (see `command`); temporary paths in the output become `[REPO]`.
    pub fn run_command(&self, mut cmd: Command) -> Run {
        let out = cmd.output().unwrap();
        let redact = |b: &[u8]| {
            String::from_utf8_lossy(b).replace(&self.path().display().to_string(), "[REPO]")
        };
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: redact(&out.stdout),
            stderr: redact(&out.stderr),
        }
    }

    /// Every file under the repository with its bytes (the `.git` folder left out).
    pub fn snapshot(&self) -> BTreeMap<String, Vec<u8>> {
        fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
            for e in std::fs::read_dir(dir).unwrap() {
                let e = e.unwrap();
                if e.file_name() == ".git" {
                    continue;
                }
                let ft = e.file_type().unwrap();
                let rel = e
                    .path()
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                if ft.is_symlink() {
                    // A link is recorded as where it points, never read through.
                    let target = std::fs::read_link(e.path()).unwrap();
                    out.insert(rel, format!("-> {}", target.display()).into_bytes());
                } else if ft.is_dir() {
                    walk(root, &e.path(), out);
                } else if !ft.is_file() {
                    out.insert(rel, b"(not a regular file)".to_vec());
                } else {
                    out.insert(rel, std::fs::read(e.path()).unwrap());
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(self.path(), self.path(), &mut out);
        out
    }

    pub fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .arg("-C")
            .arg(self.path())
            .args([
                "-c",
                "user.name=fluxwave-test",
                "-c",
                "user.email=test@fluxwave.dev",
                "-c",
                "commit.gpgsign=false",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn commit_all(&self, message: &str) {
        if !self.path().join(".git").exists() {
            self.git(&["init", "-q"]);
        }
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--no-verify", "-m", message]);
    }
}

/// A second `apply` changes nothing: it says so and leaves every byte as it was.
pub fn assert_second_apply_changes_nothing(repo: &TestRepo) {
    let before = repo.snapshot();
    let run = repo.run(&["apply"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "nothing to change\n", "{}", run.stderr);
    assert_eq!(repo.snapshot(), before);
}

/// `kubectl kustomize DIR`: the real kustomize. Panics with its stderr on failure.
pub fn kustomize(dir: &Path) -> String {
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(dir)
        .output()
        .expect("kubectl must be installed");
    assert!(
        out.status.success(),
        "kubectl kustomize {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The objects of a kustomize build, as sorted `kind/namespace/name` strings with their bytes.
pub fn objects(build: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = build
        .split("\n---\n")
        .filter(|d| !d.trim().is_empty())
        .map(|doc| {
            let v: serde_json::Value = serde_saphyr::from_str(doc).unwrap();
            let id = format!(
                "{}/{}/{}",
                v["kind"].as_str().unwrap_or(""),
                v["metadata"]["namespace"].as_str().unwrap_or(""),
                v["metadata"]["name"].as_str().unwrap_or("")
            );
            (id, serde_json::to_string(&v).unwrap())
        })
        .collect();
    out.sort();
    out
}

/// Whether `check`'s text shows the finding `line`, written in the one-line form
/// `severity[code]: place: message` (`place` a path, or `path:line:col`; `message` may be
/// its beginning): the `severity[code]` head, then the message beside a snippet of
/// `path:line:col`, or after the path when the finding has no line.
pub fn shows_finding(text: &str, line: &str) -> bool {
    let (head, rest) = line.split_once(": ").unwrap();
    let (place, message) = rest.split_once(": ").unwrap();
    let glyph = if head.starts_with("error") {
        '×'
    } else {
        '⚠'
    };
    let located = place
        .rsplit(':')
        .take(2)
        .all(|n| n.parse::<usize>().is_ok())
        && place.matches(':').count() >= 2;
    if !located {
        return text.contains(&format!("{head}\n\n  {glyph} {place}: {message}"));
    }
    text.split(&format!("{head}\n\n")).skip(1).any(|f| {
        let f = f.split("\n\n").next().unwrap();
        f.starts_with(&format!("  {glyph} {message}")) && f.contains(&format!("╭─[{place}]\n"))
    })
}

/// A Flux Kustomization in `flux-system` at `path`, `prune: true`, reading the
/// `flux-system` GitRepository, with `extra` lines added to its spec.
pub fn flux_ks(name: &str, path: &str, extra: &[&str]) -> String {
    let extra: String = extra.iter().map(|e| format!("  {e}\n")).collect();
    format!("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {name}\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: {path}\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n{extra}")
}

/// `fluxwave cutover ARGS --format json`: its exit code (0 or 1, else the test fails) and
/// the report.
pub fn cutover_json(repo: &TestRepo, args: &[&str]) -> (i32, serde_json::Value) {
    let mut all = vec!["cutover"];
    all.extend_from_slice(args);
    all.extend(["--format", "json"]);
    let run = repo.run(&all);
    assert!(run.code == 0 || run.code == 1, "{}", run.stderr);
    (run.code, serde_json::from_str(&run.stdout).unwrap())
}

/// Asserts that each of `steps`, the reports of `cutover --each <start>..<end>`, is the report
/// of the step's own cutover (`--from <its parent> --to <it>`), along the first-parent line
/// of `<start>..HEAD`.
pub fn assert_steps_are_their_own_cutovers(
    repo: &TestRepo,
    start: &str,
    steps: &[serde_json::Value],
) {
    let range = format!("{start}..HEAD");
    let line = repo.git(&["rev-list", "--first-parent", "--reverse", &range]);
    let line: Vec<&str> = line.lines().collect();
    assert_eq!(steps.len(), line.len());
    let mut from = start;
    for (report, to) in steps.iter().zip(line) {
        let (_, alone) = cutover_json(repo, &["--from", from, "--to", to]);
        assert_eq!(report, &alone, "{from}..{to}");
        from = to;
    }
}

/// `Kind/namespace/name` of a deletion of a cutover report.
pub fn deletion_id(d: &serde_json::Value) -> String {
    format!(
        "{}/{}/{}",
        d["kind"].as_str().unwrap(),
        d["namespace"].as_str().unwrap(),
        d["name"].as_str().unwrap()
    )
}

/// The deletions of a cutover report, in its order.
pub fn deletions(doc: &serde_json::Value) -> &[serde_json::Value] {
    doc["deletions"].as_array().unwrap()
}

/// `text` in UTF-16 with its byte order mark, in either order.
pub fn utf16(text: &str, big_endian: bool) -> Vec<u8> {
    let mut out = if big_endian {
        vec![0xFE, 0xFF]
    } else {
        vec![0xFF, 0xFE]
    };
    for u in text.encode_utf16() {
        out.extend(if big_endian {
            u.to_be_bytes()
        } else {
            u.to_le_bytes()
        });
    }
    out
}

/// The wave and kind `waves --format json` gives node `name`.
pub fn wave_of(repo: &TestRepo, name: &str) -> (u64, String) {
    let run = repo.run(&["waves", "--format", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let node = doc["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == name)
        .unwrap_or_else(|| panic!("{name} is not a node: {}", run.stdout));
    (
        node["wave"].as_u64().unwrap(),
        node["kind"].as_str().unwrap().to_string(),
    )
}

/// `flux bootstrap --path=deploy/lab`: the sync file's Kustomization is the root, whatever
/// the folder is called.
pub const SYNC: &str = "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 1m0s\n  ref: {branch: main}\n  url: ssh://git@example.org/fleet\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m0s\n  path: ./deploy/lab\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n";

/// `flux bootstrap --path=deploy/lab` whose `apps` Kustomization applies `./apps`.
pub fn lab() -> TestRepo {
    let repo = TestRepo::empty();
    repo.write("deploy/lab/flux-system/gotk-sync.yaml", SYNC)
        .write(
            "deploy/lab/flux-system/kustomization.yaml",
            "resources: [gotk-sync.yaml]\n",
        )
        .write("deploy/lab/apps.yaml", &flux_ks("apps", "./apps", &[]));
    repo
}

/// A kustomization (beside its `cm.yaml`, a ConfigMap with `data`) whose build fails on
/// applying its patch (a JSON 6902 `remove` of a key the ConfigMap lacks: evanphx/json-patch
/// "Unable to remove nonexistent key"): a failure of a ported transformation, which fluxwave
/// does not call certain (`BuildError::is_certain`), so what Flux does with it stays
/// unknown.
pub const FAILING_PATCH: &str = "resources: [cm.yaml]\npatches:\n  - target: {kind: ConfigMap}\n    patch: '[{\"op\": \"remove\", \"path\": \"/data/missing\"}]'\n";
