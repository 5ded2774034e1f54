//! A HelmRelease is untrusted input (SECURITY.md): what a repository writes in one never
//! becomes an option of helm, a path outside the chart or the repository's artifact, a
//! folder outside the cache, a schema fetched from a host or read from the machine, or a
//! chart pulled from a host the base of a comparison does not name. Each expected behaviour
//! is the upstream controller's: Helm's `ValidateReleaseName` (helm-controller's install),
//! source-controller's `mergeFileValues`/`mergeChartValues` (values files), its artifact
//! (no links, every file as bytes), and Helm's chart name rule (`Metadata.Validate`).

use std::io::Read;
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::common::TestRepo;
use crate::helm::{cache, json, local_chart, release, repo, run};
use crate::helm_env::{self, ChartServer};

/// Writes a chart `name` (1.0.0) of this repository under `charts/`, with `values.yaml`
/// holding `values` and `templates` (file name, text).
fn chart(repo: &TestRepo, name: &str, values: &str, templates: &[(&str, &str)]) {
    repo.write(
        &format!("charts/{name}/Chart.yaml"),
        &format!("apiVersion: v2\nname: {name}\nversion: 1.0.0\n"),
    );
    repo.write(&format!("charts/{name}/values.yaml"), values);
    for (file, text) in templates {
        repo.write(&format!("charts/{name}/templates/{file}"), text);
    }
}

/// A repository with one environment whose `apps` Kustomization applies `releases`.
fn with_releases(releases: &[(&str, String)]) -> TestRepo {
    repo("", releases, &[])
}

/// The `notRendered` entries of a `build --format json`, by release, with why.
fn not_rendered(build: &Value) -> Vec<(String, String)> {
    build["notRendered"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["release"].as_str().unwrap().to_string(),
                n["why"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The ConfigMap `name` a release renders, in `build --format json`.
fn config_map<'a>(build: &'a Value, name: &str) -> Option<&'a Value> {
    build["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| &o["object"])
        .find(|o| o["kind"] == "ConfigMap" && o["metadata"]["name"] == name)
}

/// `releaseName: --post-renderer=/bin/sh` made helm pipe the chart into a shell, and
/// `--output-dir=` write files anywhere: helm-controller refuses both names (Helm's
/// `ValidateReleaseName`), and so does fluxwave, before helm runs. A namespace that is not a
/// DNS-1123 label is refused too.
#[test]
fn a_release_name_or_namespace_that_is_an_option_never_reaches_helm() {
    let outside = tempfile::tempdir().unwrap();
    let pwned = outside.path().join("pwned");
    let written = outside.path().join("written");
    std::fs::create_dir(&written).unwrap();
    let shell = format!("a: b; touch {}\n", pwned.display());
    let as_release = |name: &str, extra: &str| {
        format!(
            "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {{name: {name}, namespace: apps}}\nspec:\n  interval: 1h\n{extra}{}",
            local_chart("./charts/evil")
        )
    };
    let releases = [
        (
            "shell.yaml",
            as_release("shell", "  releaseName: '--post-renderer=/bin/sh'\n"),
        ),
        (
            "out.yaml",
            as_release(
                "out",
                &format!("  releaseName: '--output-dir={}'\n", written.display()),
            ),
        ),
        (
            "ns.yaml",
            as_release(
                "ns",
                &format!(
                    "  releaseName: ns\n  targetNamespace: '--output-dir={}'\n",
                    written.display()
                ),
            ),
        ),
    ];
    let repo = with_releases(&releases);
    chart(&repo, "evil", "", &[("cm.yaml", &shell)]);
    repo.commit_all("the chart");
    let cache = cache();
    for args in [
        &["build", "--format", "json"][..],
        &["check"],
        &["cutover", "--from", "HEAD~1"],
        &["diff", "--from", "HEAD~1"],
    ] {
        let r = run(&repo, cache.path(), args);
        assert!(r.code <= 1, "{args:?}: {}", r.stderr);
        assert!(!pwned.exists(), "{args:?} ran the chart through a shell");
        assert_eq!(
            std::fs::read_dir(&written).unwrap().count(),
            0,
            "{args:?} let helm write outside the cache"
        );
        if args[0] == "build" {
            let got = not_rendered(&json(&r));
            assert_eq!(got.len(), 3, "{got:?}");
            for (release, why) in &got {
                let want = if release == "apps/ns" {
                    "namespace"
                } else {
                    "release name"
                };
                assert!(why.contains(want), "{release}: {why}");
            }
        }
    }
}

/// source-controller merges a chart's `valuesFiles` into its default values
/// (`OverwriteChartDefaultValues`: `values.yaml` is read only when listed). For a chart of
/// the repository they are paths in the artifact, joined as `securejoin` joins them
/// (`mergeFileValues`): an absolute path or `../` never leaves it.
#[test]
fn values_files_are_read_from_the_artifact_and_replace_the_defaults() {
    let outside = tempfile::tempdir().unwrap();
    let canary = outside.path().join("canary.yaml");
    std::fs::write(&canary, "a: CANARY-READ-7f3e\n").unwrap();
    let with_files = |name: &str, files: &[String], ignore: bool| {
        let list: Vec<String> = files.iter().map(|f| format!("'{f}'")).collect();
        release(
            name,
            &format!(
                "  chart:\n    spec:\n      chart: ./charts/vals\n      valuesFiles: [{}]\n      ignoreMissingValuesFiles: {ignore}\n      sourceRef: {{kind: GitRepository, name: flux-system, namespace: flux-system}}\n",
                list.join(", ")
            ),
            "",
        )
    };
    let up = format!("../../../../../..{}", canary.display());
    let releases = [
        (
            "prod.yaml",
            with_files("prod", &["charts/vals/values-prod.yaml".into()], false),
        ),
        (
            "both.yaml",
            with_files(
                "both",
                &[
                    "./charts/vals/values.yaml".into(),
                    "charts/vals/values-prod.yaml".into(),
                ],
                false,
            ),
        ),
        (
            "abs.yaml",
            with_files("abs", &[canary.display().to_string()], false),
        ),
        ("up.yaml", with_files("up", &[up], false)),
        (
            "gone.yaml",
            with_files("gone", &["charts/vals/nope.yaml".into()], true),
        ),
    ];
    let repo = with_releases(&releases);
    chart(
        &repo,
        "vals",
        "a: default\nb: kept\n",
        &[(
            "cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}}\ndata:\n  a: {{ .Values.a | default \"none\" | quote }}\n  b: {{ .Values.b | default \"none\" | quote }}\n",
        )],
    );
    repo.write("charts/vals/values-prod.yaml", "a: prod\n");
    repo.commit_all("the chart");
    let r = run(&repo, cache().path(), &["build", "--format", "json"]);
    assert!(!r.stdout.contains("CANARY") && !r.stderr.contains("CANARY"));
    let built = json(&r);
    let data = |name: &str| {
        config_map(&built, name)
            .map(|c| c["data"].clone())
            .unwrap_or_else(|| panic!("{name} is not rendered: {}", r.stderr))
    };
    assert_eq!(data("prod"), serde_json::json!({"a": "prod", "b": "none"}));
    assert_eq!(data("both"), serde_json::json!({"a": "prod", "b": "kept"}));
    assert_eq!(data("gone"), serde_json::json!({"a": "none", "b": "none"}));
    let refused: Vec<String> = not_rendered(&built)
        .into_iter()
        .filter(|(_, why)| why.contains("no values file found"))
        .map(|(release, _)| release)
        .collect();
    assert_eq!(refused, ["apps/abs", "apps/up"], "{}", r.stderr);
}

/// A pulled chart's `valuesFiles` are files of the chart (`mergeChartValues`): a path out of
/// it names none.
#[test]
fn values_files_of_a_pulled_chart_are_the_charts_own() {
    let outside = tempfile::tempdir().unwrap();
    let canary = outside.path().join("canary.yaml");
    std::fs::write(&canary, "persistence: {size: CANARY-READ-91ab}\n").unwrap();
    let served = tempfile::tempdir().unwrap();
    helm_env::package(&helm_env::charts().join("store"), served.path());
    let server = ChartServer::serve(served.path());
    helm_env::index(served.path(), &server.url());
    let sources = format!(
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {{name: charts, namespace: flux-system}}\nspec: {{url: '{}', interval: 1h}}\n",
        server.url()
    );
    let store = |name: &str, file: &str| {
        release(
            name,
            &format!("  chart:\n    spec:\n      chart: store\n      version: 1.0.0\n      valuesFiles: ['{file}']\n      sourceRef: {{kind: HelmRepository, name: charts, namespace: flux-system}}\n"),
            "",
        )
    };
    let up = format!("../../../../../../../..{}", canary.display());
    let releases = [
        ("own.yaml", store("own", "./values.yaml")),
        ("abs.yaml", store("abs", &canary.display().to_string())),
        ("up.yaml", store("up", &up)),
        ("tpl.yaml", store("tpl", "templates/pvc.yaml")),
    ];
    let repo = repo(&sources, &releases, &[]);
    let r = run(&repo, cache().path(), &["build", "--format", "json"]);
    assert!(!r.stdout.contains("CANARY") && !r.stderr.contains("CANARY"));
    let refused: Vec<String> = not_rendered(&json(&r))
        .into_iter()
        .filter(|(_, why)| why.contains("no values file found"))
        .map(|(release, _)| release)
        .collect();
    assert_eq!(refused, ["apps/abs", "apps/tpl", "apps/up"], "{}", r.stderr);
}

/// fluxwave's `slug` of a chart cache key, as the cache names a chart's folder.
fn slug(text: &str) -> String {
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
    let digest: String = Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{}-{}", safe.trim_matches('.'), &digest[..12])
}

/// A chart name with `../` named a folder outside the cache, whose chart was then rendered,
/// `--offline` too. A chart name is a name (Helm's `Metadata.Validate`), never a path.
#[test]
fn a_chart_name_never_names_a_folder_outside_the_cache() {
    let work = tempfile::tempdir().unwrap();
    let cache = work.path().join("cache");
    let evil = work.path().join("evil");
    std::fs::create_dir_all(evil.join("templates")).unwrap();
    std::fs::write(
        evil.join("Chart.yaml"),
        "apiVersion: v2\nname: evil\nversion: 1.0.0\n",
    )
    .unwrap();
    std::fs::write(
        evil.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: evil}\ndata: {read: CANARY-CHART-55d1}\n",
    )
    .unwrap();
    let url = "http://127.0.0.1:9/charts";
    let name = "../../../../evil";
    // The folders an earlier run would have made: `charts/<slug>/<version>/`.
    std::fs::create_dir_all(
        cache
            .join("charts")
            .join(slug(&format!("{url}#{name}")))
            .join("1.0.0"),
    )
    .unwrap();
    let sources = format!(
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {{name: charts, namespace: flux-system}}\nspec: {{url: '{url}', interval: 1h}}\n"
    );
    let releases = [(
        "evil.yaml",
        release(
            "evil",
            &format!("  chart:\n    spec:\n      chart: '{name}'\n      version: 1.0.0\n      sourceRef: {{kind: HelmRepository, name: charts, namespace: flux-system}}\n"),
            "",
        ),
    )];
    let repo = repo(&sources, &releases, &[]);
    let r = run(&repo, &cache, &["--offline", "build", "--format", "json"]);
    assert!(
        !r.stdout.contains("CANARY"),
        "a folder outside the cache was rendered:\n{}",
        r.stdout
    );
    let got = not_rendered(&json(&r));
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].1.contains("chart name"), "{got:?}");
}

/// source-controller's artifact holds every file of a chart as bytes, and no link (its
/// archive keeps regular files only): `.Files.Get` of a binary file gives its bytes, from the
/// working tree and from a git revision alike, and a link inside the chart is not there.
#[test]
fn a_charts_binary_files_are_its_bytes_and_its_links_are_not_there() {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "CANARY-LINK-0c4e").unwrap();
    let repo = with_releases(&[("bin.yaml", release("bin", &local_chart("./charts/bin"), ""))]);
    chart(
        &repo,
        "bin",
        "",
        &[(
            "cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bin}\ndata:\n  blob: {{ .Files.Get \"files/blob.bin\" | b64enc | quote }}\n  link: {{ .Files.Get \"files/link\" | quote }}\n",
        )],
    );
    let first: Vec<u8> = vec![0xff, 0x00, 0x80, 0x41, 0xfe, 0x0a, 0xc3];
    std::fs::create_dir_all(repo.path().join("charts/bin/files")).unwrap();
    std::fs::write(repo.path().join("charts/bin/files/blob.bin"), &first).unwrap();
    std::os::unix::fs::symlink(&secret, repo.path().join("charts/bin/files/link")).unwrap();
    repo.commit_all("a binary file");
    // What helm itself renders of the chart's bytes.
    let direct = helm_env::template(&[
        "bin",
        repo.path().join("charts/bin").to_str().unwrap(),
        "--set",
        "x=1",
    ]);
    let direct_blob = helm_env::documents(&direct)
        .into_iter()
        .find(|d| d["kind"] == "ConfigMap")
        .map(|d| d["data"]["blob"].clone())
        .unwrap();
    let cache = cache();
    let r = run(&repo, cache.path(), &["build", "--format", "json"]);
    assert!(!r.stdout.contains("CANARY"), "{}", r.stdout);
    let built = json(&r);
    let cm = config_map(&built, "bin").unwrap_or_else(|| panic!("{}", r.stderr));
    assert_eq!(cm["data"]["blob"], direct_blob);
    assert_eq!(cm["data"]["blob"], "/wCAQf4Kww==");
    assert_eq!(cm["data"]["link"], "");
    // The next revision changes the bytes: `diff` reads both revisions from git.
    std::fs::write(repo.path().join("charts/bin/files/blob.bin"), [0xff, 0x01]).unwrap();
    repo.commit_all("other bytes");
    let d = run(
        &repo,
        cache.path(),
        &["diff", "--from", "HEAD~1", "--to", "HEAD"],
    );
    assert_eq!(d.code, 1, "{}\n{}", d.stdout, d.stderr);
    assert!(
        d.stdout.contains("-  blob: /wCAQf4Kww==") && d.stdout.contains("+  blob: /wE="),
        "{}",
        d.stdout
    );
}

/// Counts the connections made to a listener on 127.0.0.1 until it is dropped.
struct Listener {
    port: u16,
    accepted: Arc<AtomicUsize>,
}

impl Listener {
    fn start() -> Listener {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&accepted);
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                count.fetch_add(1, Ordering::SeqCst);
                let mut conn = conn;
                let mut buf = [0; 1024];
                let _ = conn.set_read_timeout(Some(std::time::Duration::from_millis(200)));
                let _ = conn.read(&mut buf);
            }
        });
        Listener { port, accepted }
    }
}

/// helm loads what a chart's `values.schema.json` refers to, from the network
/// (`http(s)://`) and from the machine's disk (`file://`): fluxwave lets it follow neither,
/// online or `--offline`, renders the chart without schema validation and says so.
#[test]
fn a_charts_schema_never_makes_helm_fetch_or_read_anything() {
    let listener = Listener::start();
    let outside = tempfile::tempdir().unwrap();
    let canary = outside.path().join("schema.json");
    std::fs::write(
        &canary,
        r#"{"type": "string", "enum": ["CANARY-SCHEMA-e21f"]}"#,
    )
    .unwrap();
    let repo = with_releases(&[
        ("net.yaml", release("net", &local_chart("./charts/net"), "")),
        (
            "disk.yaml",
            release("disk", &local_chart("./charts/disk"), ""),
        ),
    ]);
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}}\ndata: {a: {{ .Values.a | quote }}}\n";
    chart(&repo, "net", "a: x\n", &[("cm.yaml", cm)]);
    repo.write(
        "charts/net/values.schema.json",
        &format!(
            r#"{{"properties": {{"a": {{"$ref": "http://127.0.0.1:{}/a.json"}}}}}}"#,
            listener.port
        ),
    );
    chart(&repo, "disk", "a: x\n", &[("cm.yaml", cm)]);
    repo.write(
        "charts/disk/values.schema.json",
        &format!(
            r#"{{"properties": {{"a": {{"$ref": "file://{}"}}}}}}"#,
            canary.display()
        ),
    );
    repo.commit_all("schemas");
    for offline in [true, false] {
        let mut args = vec!["build", "--format", "json"];
        if offline {
            args.insert(0, "--offline");
        }
        let r = run(&repo, cache().path(), &args);
        assert_eq!(listener.accepted.load(Ordering::SeqCst), 0, "{args:?}");
        assert!(
            !r.stdout.contains("CANARY") && !r.stderr.contains("CANARY"),
            "{}",
            r.stderr
        );
        let built = json(&r);
        assert!(not_rendered(&built).is_empty(), "{}", r.stderr);
        for name in ["net", "disk"] {
            assert!(config_map(&built, name).is_some(), "{name}: {}", r.stderr);
            assert!(
                r.stderr
                    .lines()
                    .any(|l| l.contains(&format!("chart {name} 1.0.0 (apps/{name})"))
                        && l.contains("not checked against the chart's schema")),
                "{name}: {}",
                r.stderr
            );
        }
    }
}

/// Comparing with a base revision, charts come only from the hosts the base's chart sources
/// name (and `--allow-host`): a change that points a release at another host does not make
/// fluxwave reach it, and says why.
#[test]
fn a_comparison_pulls_charts_only_from_hosts_the_base_revision_names() {
    let served = tempfile::tempdir().unwrap();
    helm_env::package(&helm_env::charts().join("store"), served.path());
    let trusted = ChartServer::serve(served.path());
    helm_env::index(served.path(), &trusted.url());
    let other_dir = tempfile::tempdir().unwrap();
    helm_env::package(&helm_env::charts().join("store"), other_dir.path());
    let other = ChartServer::serve(other_dir.path());
    helm_env::index(other_dir.path(), &other.url());
    let source = |url: &str| {
        format!(
            "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {{name: charts, namespace: flux-system}}\nspec: {{url: '{url}', interval: 1h}}\n"
        )
    };
    let store = release(
        "store",
        "  chart:\n    spec:\n      chart: store\n      version: 1.0.0\n      sourceRef: {kind: HelmRepository, name: charts, namespace: flux-system}\n",
        "",
    );
    let repo = repo(&source(&trusted.url()), &[("store.yaml", store)], &[]);
    repo.write("clusters/dev/sources.yaml", &source(&other.url()));
    repo.commit_all("another chart host");
    let r = run(
        &repo,
        cache().path(),
        &["cutover", "--from", "HEAD~1", "--to", "HEAD"],
    );
    assert_eq!(other.hits("/index.yaml"), 0, "{:?}", other.requests());
    assert!(
        trusted.hits("/store-1.0.0.tgz") >= 1,
        "{:?}",
        trusted.requests()
    );
    assert!(
        r.stdout
            .contains("not among the hosts this run may pull charts from"),
        "{}\n{}",
        r.stdout,
        r.stderr
    );
    // Named by the user, the host is reached.
    let host = other.url().trim_start_matches("http://").to_string();
    let r = run(
        &repo,
        cache().path(),
        &[
            "--allow-host",
            &host,
            "cutover",
            "--from",
            "HEAD~1",
            "--to",
            "HEAD",
        ],
    );
    assert!(other.hits("/store-1.0.0.tgz") >= 1, "{}", r.stderr);
    // A run on one revision reaches any host.
    let r = run(&repo, cache().path(), &["build", "--format", "json"]);
    assert!(not_rendered(&json(&r)).is_empty(), "{}", r.stderr);
}
