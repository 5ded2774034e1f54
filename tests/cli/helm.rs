//! HelmReleases rendered with the real helm: charts from this repository, from a Helm
//! repository served on 127.0.0.1 and from an OCI registry started here (`helm_env`), each
//! rendered set held against `helm template` run directly; then what the renders decide in
//! `cutover`, `diff`, `build` and `check`.

use std::path::Path;

use serde_json::Value;

use crate::common::{Run, TestRepo};
use crate::helm_env::{self, ChartServer, Registry};

/// Runs fluxwave with HelmRelease rendering on, helm from `helm_env`, the chart cache `cache`.
pub(crate) fn run(repo: &TestRepo, cache: &Path, args: &[&str]) -> Run {
    let mut cmd = repo.command(args);
    cmd.env_remove("FLUXWAVE_NO_HELM")
        .env("FLUXWAVE_HELM", helm_env::helm())
        .env("FLUXWAVE_CACHE", cache);
    helm_env::isolate(&mut cmd);
    repo.run_command(cmd)
}

pub(crate) fn json(run: &Run) -> Value {
    serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\nstderr: {}", run.stdout, run.stderr))
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
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec: {path: ./apps, prune: true, sourceRef: {kind: GitRepository, name: flux-system}, interval: 10m}
";

/// A repository with one environment (`clusters/dev`) whose `apps` Kustomization applies
/// `apps/`, holding `files` (path, text), with the fixture charts `charts` copied under
/// `charts/`.
pub(crate) fn repo(sources: &str, files: &[(&str, String)], charts: &[&str]) -> TestRepo {
    let repo = TestRepo::empty();
    repo.write(
        "clusters/dev/kustomization.yaml",
        "resources: [sync.yaml, sources.yaml]\n",
    );
    repo.write("clusters/dev/sync.yaml", SYNC);
    repo.write("clusters/dev/sources.yaml", sources);
    write_apps(&repo, files);
    for c in charts {
        copy(
            &helm_env::charts().join(c),
            &repo.path().join("charts").join(c),
        );
    }
    repo.commit_all("first");
    repo
}

/// `apps/` holding `files`, and its kustomization listing them.
fn write_apps(repo: &TestRepo, files: &[(&str, String)]) {
    let mut list = String::from("resources:\n");
    for (name, text) in files {
        repo.write(&format!("apps/{name}"), text);
        list.push_str(&format!("  - {name}\n"));
    }
    if files.is_empty() {
        list = "resources: []\n".into();
    }
    repo.write("apps/kustomization.yaml", &list);
}

pub(crate) fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// A HelmRelease in namespace `apps`; `chart` is its `spec.chart` or `spec.chartRef` block
/// (two spaces in), `values` its `spec.values` block (four spaces in) or empty.
pub(crate) fn release(name: &str, chart: &str, values: &str) -> String {
    let values = if values.is_empty() {
        String::new()
    } else {
        format!("  values:\n{values}")
    };
    format!(
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {{name: {name}, namespace: apps}}\nspec:\n  interval: 1h\n{chart}{values}"
    )
}

/// Release `name` of the fixture chart `store` copied into this repository, with `values`.
fn store(name: &str, values: &str) -> String {
    release(name, &local_chart("./charts/store"), values)
}

/// A repository whose one release is `store` of the chart in this repository, defaults only.
fn store_repo() -> TestRepo {
    repo("", &[("store.yaml", store("store", ""))], &["store"])
}

pub(crate) fn local_chart(path: &str) -> String {
    format!("  chart:\n    spec:\n      chart: {path}\n      sourceRef: {{kind: GitRepository, name: flux-system, namespace: flux-system}}\n")
}

/// The objects `build --format json` lists under HelmRelease `apps/<name>`, without the
/// labels helm-controller's post-renderer adds, sorted by kind and name.
fn rendered_by(build: &Value, name: &str) -> Vec<Value> {
    let mut out: Vec<Value> = build["objects"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["release"] == format!("apps/{name}").as_str())
        .map(|o| {
            let mut v = o["object"].clone();
            // helm-controller labels every object it applies: hooks through its post-renderers
            // (Helm 4 hands them hooks too, `postRenderStrategy: combined`), the chart's
            // `crds/` as it applies them itself (`applyCRDs`, `setOriginVisitor`).
            let mut none = serde_json::Map::new();
            let labels = v["metadata"]["labels"].as_object_mut().unwrap_or(&mut none);
            let (n, ns) = (
                labels.remove("helm.toolkit.fluxcd.io/name"),
                labels.remove("helm.toolkit.fluxcd.io/namespace"),
            );
            let emptied = labels.is_empty();
            assert_eq!((n, ns), (Some(name.into()), Some("apps".into())));
            if emptied {
                v["metadata"].as_object_mut().unwrap().remove("labels");
            }
            v
        })
        .collect();
    out.sort_by_key(key);
    out
}

fn key(v: &Value) -> String {
    format!(
        "{}/{}",
        v["kind"].as_str().unwrap_or(""),
        v["metadata"]["name"].as_str().unwrap_or("")
    )
}

/// `helm template` run directly, hooks left out (they are listed apart), each namespaced
/// object given the release namespace `ns` as the cluster gives it.
fn direct(ns: &str, args: &[&str]) -> Vec<Value> {
    let text = helm_env::template(args);
    let mut out: Vec<Value> = helm_env::documents(&text)
        .into_iter()
        .filter(|d| d["metadata"]["annotations"]["helm.sh/hook"].is_null())
        .map(|mut d| {
            let kind = d["kind"].as_str().unwrap_or("").to_string();
            let cluster = kind == "CustomResourceDefinition" || kind == "Namespace";
            if !cluster && d["metadata"]["namespace"].is_null() {
                d["metadata"]["namespace"] = ns.into();
            }
            d
        })
        .collect();
    out.sort_by_key(key);
    out
}

fn without_hooks(objects: Vec<Value>) -> Vec<Value> {
    objects
        .into_iter()
        .filter(|o| o["metadata"]["annotations"]["helm.sh/hook"].is_null())
        .collect()
}

/// `Kind/name rule data` of every deletion of a cutover document.
fn gone(doc: &Value) -> Vec<String> {
    doc["deletions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            format!(
                "{}/{} {} {}",
                d["kind"].as_str().unwrap(),
                d["name"].as_str().unwrap(),
                d["rule"].as_str().unwrap(),
                d["data"].as_str().unwrap()
            )
        })
        .collect()
}

pub(crate) fn cache() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// A Helm repository (an index and packaged charts) served on 127.0.0.1, holding store 1.0.0
/// and 1.1.0 and web 0.3.0.
fn helm_repository() -> (tempfile::TempDir, ChartServer) {
    let dir = tempfile::tempdir().unwrap();
    for c in ["store", "store-1.1.0", "web"] {
        helm_env::package(&helm_env::charts().join(c), dir.path());
    }
    let server = ChartServer::serve(dir.path());
    helm_env::index(dir.path(), &server.url());
    (dir, server)
}

/// Releases from the three kinds of source, each rendered as `helm template` renders it;
/// then, with neither server running and the renders forgotten, rendered again from the
/// chart cache alone with `--offline`. Each chart is downloaded once.
#[test]
fn releases_from_every_source_kind_render_as_helm_template_and_then_offline_from_the_cache() {
    let (served, server) = helm_repository();
    let registry = Registry::start();
    let work = tempfile::tempdir().unwrap();
    let db = helm_env::package(&helm_env::charts().join("db"), work.path());
    helm_env::push(&db, &registry.charts());
    let sources = format!(
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {{name: charts, namespace: flux-system}}\nspec: {{url: '{}', interval: 1h}}\n---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata: {{name: db, namespace: apps}}\nspec: {{url: 'oci://{}/charts/db', ref: {{tag: 2.0.0}}, insecure: true, interval: 1h}}\n---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {{name: oci-charts, namespace: flux-system}}\nspec: {{type: oci, url: 'oci://{}/charts', insecure: true, interval: 1h}}\n",
        server.url(),
        registry.host(),
        registry.host()
    );
    let files = [
        ("web.yaml", release("web", &local_chart("./charts/web"), "")),
        (
            "store.yaml",
            release(
                "store",
                "  chart:\n    spec:\n      chart: store\n      version: '>=1.0.0 <1.1.0'\n      sourceRef: {kind: HelmRepository, name: charts, namespace: flux-system}\n",
                "    persistence: {size: 2Gi}\n",
            ),
        ),
        (
            "db.yaml",
            release("db", "  chartRef: {kind: OCIRepository, name: db}\n", ""),
        ),
        // An OCI HelmRepository, a version constraint, and a target namespace: the release
        // is `backup-replica` in `backup` (helm-controller `GetReleaseName`).
        (
            "replica.yaml",
            release(
                "replica",
                "  targetNamespace: backup\n  chart:\n    spec:\n      chart: db\n      version: 2.x\n      sourceRef: {kind: HelmRepository, name: oci-charts, namespace: flux-system}\n",
                "    replicas: 2\n",
            ),
        ),
    ];
    let repo = repo(&sources, &files, &["web"]);
    let cache = cache();
    let first = run(&repo, cache.path(), &["build", "--format", "json"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let built = json(&first);
    assert_eq!(
        built["notRendered"],
        serde_json::json!([]),
        "{}",
        first.stderr
    );

    let web_dir = repo.path().join("charts/web");
    let store_tgz = served.path().join("store-1.0.0.tgz");
    let expected = [
        (
            "web",
            direct(
                "apps",
                &[
                    "web",
                    web_dir.to_str().unwrap(),
                    "--namespace",
                    "apps",
                    "--include-crds",
                ],
            ),
        ),
        (
            "store",
            direct(
                "apps",
                &[
                    "store",
                    store_tgz.to_str().unwrap(),
                    "--namespace",
                    "apps",
                    "--include-crds",
                    "--set",
                    "persistence.size=2Gi",
                ],
            ),
        ),
        (
            "db",
            direct(
                "apps",
                &[
                    "db",
                    db.to_str().unwrap(),
                    "--namespace",
                    "apps",
                    "--include-crds",
                ],
            ),
        ),
        (
            "replica",
            direct(
                "backup",
                &[
                    "backup-replica",
                    db.to_str().unwrap(),
                    "--namespace",
                    "backup",
                    "--include-crds",
                    "--set",
                    "replicas=2",
                ],
            ),
        ),
    ];
    for (name, want) in &expected {
        let got = without_hooks(rendered_by(&built, name));
        assert!(!want.is_empty());
        assert_eq!(&got, want, "{name}: fluxwave's render and helm template's");
    }
    // The claim the chart creates, with the release's own size.
    let pvc = rendered_by(&built, "store")
        .into_iter()
        .find(|o| o["kind"] == "PersistentVolumeClaim")
        .unwrap();
    assert_eq!(pvc["spec"]["resources"]["requests"]["storage"], "2Gi");
    assert_eq!(pvc["metadata"]["namespace"], "apps");

    let again = run(&repo, cache.path(), &["build", "--format", "json"]);
    assert_eq!(again.code, 0);
    assert_eq!(json(&again)["objects"], built["objects"]);
    assert_eq!(
        server.hits("/store-1.0.0.tgz"),
        1,
        "{:?}",
        server.requests()
    );
    assert_eq!(
        server.hits("/store-1.1.0.tgz"),
        0,
        "the constraint excludes 1.1.0"
    );

    drop(server);
    drop(registry);
    std::fs::remove_dir_all(cache.path().join("renders")).unwrap();
    let offline = run(
        &repo,
        cache.path(),
        &["--offline", "build", "--format", "json"],
    );
    assert_eq!(offline.code, 0, "{}", offline.stderr);
    let offline = json(&offline);
    assert_eq!(offline["notRendered"], serde_json::json!([]));
    assert_eq!(offline["objects"], built["objects"]);
}

/// Two releases of the `store` chart from this repository: `a` with the claim the chart
/// creates, `b` mounting an existing claim instead.
fn claim_and_existing_claim() -> TestRepo {
    let files = [
        ("a.yaml", store("a", "")),
        (
            "b.yaml",
            store("b", "    persistence: {existingClaim: mine}\n"),
        ),
    ];
    repo("", &files, &["store"])
}

/// Removing a release whose chart creates a claim is data loss, with the claim and its
/// template as evidence; removing one that only mounts an existing claim is not. (Judged by
/// values alone, the first is only "may hold data": the chart's defaults decide there.)
#[test]
fn cutover_flags_a_removed_release_by_the_claims_its_chart_creates() {
    let repo = claim_and_existing_claim();
    write_apps(&repo, &[]);
    repo.remove("apps/a.yaml");
    repo.remove("apps/b.yaml");
    repo.commit_all("remove both");
    let cache = cache();
    let out = run(
        &repo,
        cache.path(),
        &[
            "cutover", "--from", "HEAD~1", "--to", "HEAD", "--format", "json",
        ],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    let doc = json(&out);
    let of = |name: &str| {
        doc["deletions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["kind"] == "HelmRelease" && d["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {doc:#}"))
            .clone()
    };
    let a = of("a");
    assert_eq!(a["data"], "holds", "{a:#}");
    assert_eq!(a["stateful"], true);
    let evidence = a["evidence"].as_str().unwrap();
    assert!(
        evidence.contains("PersistentVolumeClaim apps/a-store-data (templates/pvc.yaml)"),
        "{evidence}"
    );
    assert!(
        a["reason"].as_str().unwrap().contains("chart store 1.0.0"),
        "{a:#}"
    );
    let b = of("b");
    assert_eq!(b["data"], "none", "{b:#}");
    assert_eq!(b["stateful"], false);

    // Without rendering, the same change is judged by the values: `a` only may hold data.
    let off = repo.run(&[
        "cutover", "--from", "HEAD~1", "--to", "HEAD", "--format", "json",
    ]);
    let off: Value = serde_json::from_str(&off.stdout).unwrap();
    let a_off = off["deletions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "a")
        .unwrap();
    assert_eq!(a_off["data"], "may", "{a_off:#}");
}

/// A values change that renames the chart's claim: `diff` shows the old claim removed and the
/// new one added under the release, and `cutover` names the old claim as deleted by Helm's
/// upgrade, with its data.
#[test]
fn a_values_change_that_renames_a_claim_is_seen_in_diff_and_cutover() {
    let repo = store_repo();
    repo.write(
        "apps/store.yaml",
        &store("store", "    nameOverride: vault\n"),
    );
    repo.commit_all("rename");
    let cache = cache();
    let diff = run(
        &repo,
        cache.path(),
        &[
            "diff", "--from", "HEAD~1", "--to", "HEAD", "--format", "json",
        ],
    );
    assert_eq!(diff.code, 1, "{}", diff.stderr);
    let doc = json(&diff);
    let changes: Vec<String> = doc["changes"]
        .as_array()
        .unwrap_or_else(|| panic!("{doc:#}"))
        .iter()
        .filter(|c| c["kind"] == "PersistentVolumeClaim")
        .map(|c| {
            format!(
                "{} {}",
                c["change"].as_str().unwrap(),
                c["name"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        changes,
        ["removed store-data", "added store-vault-data"],
        "{doc:#}"
    );

    let cut = run(
        &repo,
        cache.path(),
        &[
            "cutover", "--from", "HEAD~1", "--to", "HEAD", "--format", "json",
        ],
    );
    assert_eq!(cut.code, 1, "{}", cut.stderr);
    let doc = json(&cut);
    let d = doc["deletions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["kind"] == "PersistentVolumeClaim")
        .unwrap_or_else(|| panic!("{doc:#}"));
    assert_eq!(d["name"], "store-data");
    assert_eq!(d["rule"], "release-upgraded");
    assert_eq!(d["data"], "holds");
    assert!(
        d["reason"]
            .as_str()
            .unwrap()
            .contains("Helm's upgrade deletes it"),
        "{d:#}"
    );
    let text = run(
        &repo,
        cache.path(),
        &["cutover", "--from", "HEAD~1", "--to", "HEAD"],
    );
    assert!(
        text.stdout.contains("helm.sh/resource-policy=keep"),
        "the runbook says how to keep the claim:\n{}",
        text.stdout
    );
}

/// A release whose values come from a ConfigMap and a Secret (`targetPath`), with a
/// post-renderer patch: the values are composed as helm-controller composes them, the patch
/// is applied, and the Secret's value is masked in what `build` prints.
#[test]
fn values_from_configmaps_and_secrets_and_post_renderers_are_applied() {
    let config = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: store-values, namespace: apps}\ndata:\n  values.yaml: |\n    persistence:\n      size: 3Gi\n".to_string();
    let secret = "apiVersion: v1\nkind: Secret\nmetadata: {name: store-tag, namespace: apps}\nstringData:\n  tag: hidden-tag-8271\n".to_string();
    let mut hr = store("store", "    image: {repository: ghcr.io/example/other}\n");
    hr.push_str("  valuesFrom:\n    - {kind: ConfigMap, name: store-values}\n    - {kind: Secret, name: store-tag, valuesKey: tag, targetPath: image.tag}\n    - {kind: ConfigMap, name: absent, optional: true}\n");
    hr.push_str("  postRenderers:\n    - kustomize:\n        patches:\n          - target: {kind: Deployment}\n            patch: |\n              - op: add\n                path: /metadata/annotations\n                value: {patched: \"yes\"}\n");
    let files = [
        ("values.yaml", config),
        ("secret.yaml", secret),
        ("store.yaml", hr),
    ];
    let repo = repo("", &files, &["store"]);
    let cache = cache();
    let out = run(&repo, cache.path(), &["build", "--format", "json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stdout.contains("hidden-tag-8271"), "{}", out.stdout);
    let doc = json(&out);
    let objects = rendered_by(&doc, "store");
    let find = |kind: &str| objects.iter().find(|o| o["kind"] == kind).unwrap().clone();
    assert_eq!(
        find("PersistentVolumeClaim")["spec"]["resources"]["requests"]["storage"],
        "3Gi"
    );
    let deploy = find("Deployment");
    assert_eq!(deploy["metadata"]["annotations"]["patched"], "yes");
    assert_eq!(
        deploy["spec"]["template"]["spec"]["containers"][0]["image"],
        "ghcr.io/example/other:***"
    );
    let masked = doc["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["release"] == "apps/store" && o["kind"] == "Deployment")
        .unwrap();
    assert_eq!(masked["masked"], true);
}

/// The layout many home-lab repositories share: a release's values in a file of its folder,
/// made a ConfigMap by a `configMapGenerator` (hash-suffixed), the release's `valuesFrom`
/// naming it by the generator's name and a `configurations` file naming
/// `spec/valuesFrom/name` as a reference to a ConfigMap. kustomize writes the hashed name
/// into the release (api/filters/nameref), so helm-controller reads the values; without the
/// file the release names a ConfigMap Flux never applies, and it is not rendered.
#[test]
fn values_from_a_generated_configmap_follow_its_hash_through_configurations() {
    let mut hr = store("store", "");
    hr.push_str("  valuesFrom:\n    - {kind: ConfigMap, name: store-values}\n");
    let repo = repo("", &[("store.yaml", hr)], &["store"]);
    repo.write("apps/values.yaml", "persistence:\n  size: 3Gi\n");
    repo.write(
        "apps/kustomizeconfig.yaml",
        "nameReference:\n  - kind: ConfigMap\n    version: v1\n    fieldSpecs:\n      - {path: spec/valuesFrom/name, kind: HelmRelease}\n",
    );
    let kustomization = "resources: [store.yaml]\nconfigMapGenerator:\n  - {name: store-values, namespace: apps, files: [values.yaml]}\n";
    repo.write(
        "apps/kustomization.yaml",
        &format!("{kustomization}configurations: [kustomizeconfig.yaml]\n"),
    );
    repo.commit_all("values from a generated ConfigMap");
    let cache = cache();
    let out = run(&repo, cache.path(), &["build", "--format", "json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc = json(&out);
    let objects = rendered_by(&doc, "store");
    let claim = objects
        .iter()
        .find(|o| o["kind"] == "PersistentVolumeClaim")
        .unwrap_or_else(|| panic!("{}", out.stdout));
    assert_eq!(claim["spec"]["resources"]["requests"]["storage"], "3Gi");
    let release = doc["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "HelmRelease")
        .unwrap();
    let named = release["object"]["spec"]["valuesFrom"][0]["name"]
        .as_str()
        .unwrap();
    assert!(
        named.starts_with("store-values-") && named.len() == "store-values-".len() + 10,
        "{named}"
    );

    repo.write("apps/kustomization.yaml", kustomization);
    repo.commit_all("no configurations");
    let out = run(&repo, cache.path(), &["build", "--format", "json"]);
    let doc = json(&out);
    assert!(rendered_by(&doc, "store").is_empty(), "{}", out.stdout);
    assert!(
        doc["notRendered"].to_string().contains("store-values"),
        "{}",
        doc["notRendered"]
    );
}

/// A chart that cannot be had is reported, never skipped: offline with an empty cache, `build`
/// lists the release as not rendered with the reason and warns; `cutover` of a change to it
/// is incomplete rather than safe.
#[test]
fn a_chart_that_cannot_be_had_is_reported_not_rendered() {
    let sources = "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {name: charts, namespace: flux-system}\nspec: {url: 'http://127.0.0.1:9/charts', interval: 1h}\n";
    let chart = "  chart:\n    spec:\n      chart: store\n      version: 1.0.0\n      sourceRef: {kind: HelmRepository, name: charts, namespace: flux-system}\n";
    let files = [("store.yaml", release("store", chart, ""))];
    let repo = repo(sources, &files, &[]);
    let cache = cache();
    let out = run(
        &repo,
        cache.path(),
        &["--offline", "build", "--format", "json"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc = json(&out);
    let missing = &doc["notRendered"][0];
    assert_eq!(missing["release"], "apps/store");
    assert!(
        missing["why"].as_str().unwrap().contains("--offline"),
        "{missing:#}"
    );
    assert!(
        out.stderr
            .contains("HelmRelease apps/store is not rendered"),
        "{}",
        out.stderr
    );

    repo.write(
        "apps/store.yaml",
        &release("store", chart, "    persistence: {size: 9Gi}\n"),
    );
    repo.commit_all("bigger");
    let cut = run(
        &repo,
        cache.path(),
        &[
            "--offline",
            "cutover",
            "--from",
            "HEAD~1",
            "--to",
            "HEAD",
            "--format",
            "json",
        ],
    );
    let doc = json(&cut);
    assert_eq!(doc["verdict"], "incomplete", "{doc:#}");
    assert_eq!(doc["safe"], false);
}

/// `check` holds rendered objects to `double-owner`: a claim the chart installs that the
/// Kustomization applies too.
#[test]
fn check_finds_an_object_both_a_chart_and_a_kustomization_apply() {
    let claim = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: store-data, namespace: apps, annotations: {kustomize.toolkit.fluxcd.io/prune: disabled}}\nspec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n".to_string();
    let files = [("claim.yaml", claim), ("store.yaml", store("store", ""))];
    let repo = repo("", &files, &["store"]);
    let cache = cache();
    let out = run(&repo, cache.path(), &["check", "--format", "json"]);
    let doc = json(&out);
    let found: Vec<&Value> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "double-owner")
        .collect();
    assert_eq!(found.len(), 1, "{doc:#}");
    let message = found[0]["message"].as_str().unwrap();
    assert!(
        message.contains("PersistentVolumeClaim") && message.contains("HelmRelease apps/store"),
        "{message}"
    );
}

/// A chart version bump that renames the claim (store 1.0.0 -> 1.1.0 from the Helm
/// repository): `cutover` names the old claim as deleted by Helm's upgrade; with the new
/// version neither cached nor reachable, the same change is incomplete, never safe.
#[test]
fn a_chart_version_bump_is_judged_by_both_renders() {
    let (_served, server) = helm_repository();
    let sources = format!(
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {{name: charts, namespace: flux-system}}\nspec: {{url: '{}', interval: 1h}}\n",
        server.url()
    );
    let chart = |v: &str| {
        format!("  chart:\n    spec:\n      chart: store\n      version: {v}\n      sourceRef: {{kind: HelmRepository, name: charts, namespace: flux-system}}\n")
    };
    let files = [("store.yaml", release("store", &chart("1.0.0"), ""))];
    let repo = repo(&sources, &files, &[]);
    repo.write("apps/store.yaml", &release("store", &chart("1.1.0"), ""));
    repo.commit_all("bump");
    let args = [
        "cutover", "--from", "HEAD~1", "--to", "HEAD", "--format", "json",
    ];

    let offline = run(&repo, cache().path(), &[&["--offline"][..], &args].concat());
    let doc = json(&offline);
    assert_eq!(doc["verdict"], "incomplete", "{doc:#}");

    let cache = cache();
    let online = run(&repo, cache.path(), &args);
    assert_eq!(online.code, 1, "{}", online.stderr);
    let doc = json(&online);
    assert_eq!(
        gone(&doc),
        ["PersistentVolumeClaim/store-data release-upgraded holds"],
        "{doc:#}"
    );
    assert!(doc["deletions"][0]["reason"]
        .as_str()
        .unwrap()
        .contains("chart store 1.0.0 -> store 1.1.0"));
}

/// A `targetNamespace` added to a HelmRelease changes its release (`store` becomes
/// `media-store` in `media`): helm-controller uninstalls the old release first, so its claim
/// is deleted (`release-replaced`), and the runbook says a keep annotation on the live claim
/// does not stop that.
#[test]
fn a_release_whose_target_changes_is_reported_as_replaced() {
    let repo = store_repo();
    let moved = store("store", "").replace(
        "  interval: 1h\n",
        "  interval: 1h\n  targetNamespace: media\n",
    );
    repo.write("apps/store.yaml", &moved);
    repo.commit_all("target");
    let cache = cache();
    let args = [
        "cutover", "--from", "HEAD~1", "--to", "HEAD", "--format", "json",
    ];
    let out = run(&repo, cache.path(), &args);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let doc = json(&out);
    assert_eq!(
        gone(&doc),
        [
            "PersistentVolumeClaim/store-data release-replaced holds",
            "Deployment/store release-replaced none",
            "Service/store release-replaced none",
        ],
        "{doc:#}"
    );
    let reason = doc["deletions"][0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("release store in apps") && reason.contains("release media-store in media"),
        "{reason}"
    );
    let text = run(&repo, cache.path(), &args[..5]);
    assert!(
        text.stdout.contains("does not stop an uninstall"),
        "{}",
        text.stdout
    );
}

/// `check`'s `unprotected-stateful` reads the render: a release whose chart creates a claim,
/// and which Flux may prune, is reported; one that mounts an existing claim is not.
#[test]
fn check_reports_a_release_whose_chart_creates_a_claim_flux_may_prune() {
    let repo = claim_and_existing_claim();
    let out = run(&repo, cache().path(), &["check", "--format", "json"]);
    let doc = json(&out);
    let flagged: Vec<&str> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "unprotected-stateful")
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(flagged, ["apps/a.yaml"], "{doc:#}");
}

/// `spec.chartRef` to a HelmChart (read like `spec.chart.spec`), and `install.crds: Skip`:
/// the chart's `crds/` are left out, as helm-controller leaves them.
#[test]
fn a_helm_chart_reference_and_the_crd_policy_are_followed() {
    let chart = "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmChart\nmetadata: {name: db, namespace: apps}\nspec: {chart: ./charts/db, interval: 1h, sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}}\n".to_string();
    let with_crds = release("db", "  chartRef: {kind: HelmChart, name: db}\n", "");
    let files = [
        ("chart.yaml", chart.clone()),
        ("db.yaml", with_crds.clone()),
    ];
    let repo = repo("", &files, &["db"]);
    let cache = cache();
    let kinds = |repo: &TestRepo| -> Vec<String> {
        let out = run(repo, cache.path(), &["build", "--format", "json"]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        rendered_by(&json(&out), "db").iter().map(key).collect()
    };
    assert_eq!(
        kinds(&repo),
        [
            "CustomResourceDefinition/backups.db.example.com",
            "Service/db",
            "StatefulSet/db"
        ]
    );
    let skip = with_crds.replace(
        "  interval: 1h\n",
        "  interval: 1h\n  install: {crds: Skip}\n",
    );
    repo.write("apps/db.yaml", &skip);
    assert_eq!(kinds(&repo), ["Service/db", "StatefulSet/db"]);
}

/// helm-controller's post-renderers see hooks as `spec.postRenderStrategy` says (its
/// `toHelmPostRenderStrategy`, Helm v4 `renderResources`): with `combined` (the default) and
/// `separate` a patch and the origin labels reach the chart's pre-install hook, with `nohooks`
/// (Helm 3) the hook is left as the chart renders it. The chart's `crds/` are applied by
/// helm-controller itself (`applyCRDs`): CustomResourceDefinitions only, each with the origin
/// labels and never post-rendered; another object placed there is not applied.
#[test]
fn hooks_and_crds_are_post_rendered_as_helm_controller_does() {
    let mut hr = store("store", "");
    hr.push_str("  postRenderers:\n    - kustomize:\n        patches:\n          - target: {kind: ConfigMap|CustomResourceDefinition}\n            patch: |\n              - op: add\n                path: /metadata/annotations/patched\n                value: \"yes\"\n");
    let repo = repo("", &[("store.yaml", hr.clone())], &["store"]);
    repo.write(
        "charts/store/crds/widgets.yaml",
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.store.example.com, annotations: {from: chart}}\nspec:\n  group: store.example.com\n  names: {kind: Widget, plural: widgets}\n  scope: Namespaced\n  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: misplaced, namespace: apps}\n",
    );
    let cache = cache();
    let objects = |repo: &TestRepo| -> Vec<Value> {
        let out = run(repo, cache.path(), &["build", "--format", "json"]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        json(&out)["objects"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|o| o["release"] == "apps/store")
            .map(|o| o["object"].clone())
            .collect()
    };
    let hook = |objects: &[Value]| -> Value {
        objects
            .iter()
            .find(|o| !o["metadata"]["annotations"]["helm.sh/hook"].is_null())
            .unwrap()
            .clone()
    };
    let labelled = |v: &Value| v["metadata"]["labels"]["helm.toolkit.fluxcd.io/name"] == "store";
    let all = objects(&repo);
    let crd = all
        .iter()
        .find(|o| o["kind"] == "CustomResourceDefinition")
        .unwrap();
    assert!(labelled(crd), "{crd}");
    assert!(crd["metadata"]["annotations"]["patched"].is_null(), "{crd}");
    assert!(
        all.iter().all(|o| o["metadata"]["name"] != "misplaced"),
        "{all:#?}"
    );
    let combined = hook(&all);
    assert_eq!(combined["metadata"]["annotations"]["patched"], "yes");
    assert!(labelled(&combined));
    for (strategy, patched) in [("separate", true), ("nohooks", false)] {
        repo.write(
            "apps/store.yaml",
            &hr.replace(
                "  interval: 1h\n",
                &format!("  interval: 1h\n  postRenderStrategy: {strategy}\n"),
            ),
        );
        let h = hook(&objects(&repo));
        assert_eq!(
            (
                h["metadata"]["annotations"]["patched"] == "yes",
                labelled(&h)
            ),
            (patched, patched),
            "{strategy}: {h}"
        );
    }
    repo.write(
        "apps/store.yaml",
        &hr.replace(
            "  interval: 1h\n",
            "  interval: 1h\n  postRenderStrategy: later\n",
        ),
    );
    let out = run(&repo, cache.path(), &["build", "--format", "json"]);
    assert!(
        out.stderr.contains("spec.postRenderStrategy `later`"),
        "{}",
        out.stderr
    );
}

/// Without a helm program (none on the PATH, none named) and with `--no-helm`, a HelmRelease
/// that changes is an upgrade whose deletions are not judged: the verdict is incomplete, and
/// says why, never safe with a warning beside it.
#[test]
fn without_helm_or_with_no_helm_a_changed_release_is_incomplete() {
    let repo = store_repo();
    repo.write(
        "apps/store.yaml",
        &store("store", "    persistence: {size: 5Gi}\n"),
    );
    repo.commit_all("bigger");
    // A PATH with git alone.
    let bin = tempfile::tempdir().unwrap();
    let git = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join("git"))
        .find(|p| p.is_file())
        .unwrap();
    std::os::unix::fs::symlink(git, bin.path().join("git")).unwrap();
    let args = [
        "cutover", "--from", "HEAD~1", "--to", "HEAD", "--format", "json",
    ];
    let mut cmd = repo.command(&args);
    cmd.env_remove("FLUXWAVE_NO_HELM")
        .env_remove("FLUXWAVE_HELM")
        .env("PATH", bin.path())
        .env("FLUXWAVE_CACHE", cache().path());
    let doc = json(&repo.run_command(cmd));
    assert_eq!(doc["verdict"], "incomplete", "{doc:#}");
    let why = |doc: &Value| doc["incomplete"][0]["why"][0].as_str().unwrap().to_string();
    assert!(why(&doc).contains("no helm is found"), "{doc:#}");
    assert_eq!(doc["incomplete"][0]["gap"], "helm-upgrades", "{doc:#}");
    let off: Value = serde_json::from_str(&repo.run(&args).stdout).unwrap();
    assert_eq!(off["verdict"], "incomplete", "{off:#}");
    assert!(why(&off).contains("--no-helm"), "{off:#}");
}

/// `cutover --each` takes an environment's build from the step before when nothing it read
/// changed, and what rendering its releases read counts: a template taken out of a chart in
/// the repository, which no Kustomization reads, deletes what it rendered, as the step's own
/// cutover says.
#[test]
fn a_step_that_edits_a_chart_in_the_repository_renders_it_again() {
    let repo = store_repo();
    let cache = cache();
    repo.write("README.md", "the store\n");
    repo.commit_all("README");
    repo.remove("charts/store/templates/pvc.yaml");
    repo.commit_all("the chart drops its claim");
    let each = run(
        &repo,
        cache.path(),
        &["cutover", "--each", "HEAD~2..HEAD", "--format", "json"],
    );
    let doc = json(&each);
    let steps = doc["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "{doc:#}");
    assert_eq!(steps[0]["verdict"], "safe", "{:#}", steps[0]);
    assert!(
        gone(&steps[1])
            .iter()
            .any(|g| g.starts_with("PersistentVolumeClaim/")),
        "{:#}",
        steps[1]
    );
    for (step, (from, to)) in steps.iter().zip([("HEAD~2", "HEAD~1"), ("HEAD~1", "HEAD")]) {
        let [from, to] = [from, to].map(|r| repo.git(&["rev-parse", r]).trim().to_string());
        let alone = run(
            &repo,
            cache.path(),
            &["cutover", "--from", &from, "--to", &to, "--format", "json"],
        );
        assert_eq!(step, &json(&alone), "{from}..{to}");
    }
}

/// A chart that cannot be had is asked for once a run: over a history whose every step
/// changes the release's values, the Helm repository (serving no index) is asked once, and
/// every step that changes the release is incomplete.
#[test]
fn a_chart_that_cannot_be_pulled_is_asked_for_once_a_run() {
    let empty = tempfile::tempdir().unwrap();
    let server = ChartServer::serve(empty.path());
    let sources = format!(
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {{name: charts, namespace: flux-system}}\nspec: {{url: '{}', interval: 1h}}\n",
        server.url()
    );
    let chart = "  chart:\n    spec:\n      chart: store\n      version: 1.0.0\n      sourceRef: {kind: HelmRepository, name: charts, namespace: flux-system}\n";
    let size = |n: u32| format!("    persistence: {{size: {n}Gi}}\n");
    let repo = repo(
        &sources,
        &[("store.yaml", release("store", chart, &size(1)))],
        &[],
    );
    for n in 2..=4 {
        repo.write("apps/store.yaml", &release("store", chart, &size(n)));
        repo.commit_all(&format!("size {n}"));
    }
    let cache = cache();
    let out = run(
        &repo,
        cache.path(),
        &["cutover", "--each", "HEAD~3..HEAD", "--format", "json"],
    );
    let doc = json(&out);
    let steps = doc["steps"].as_array().unwrap();
    let verdicts: Vec<&Value> = steps.iter().map(|r| &r["verdict"]).collect();
    assert_eq!(verdicts, ["incomplete"; 3], "{doc:#}");
    assert_eq!(server.hits("/index.yaml"), 1, "{:?}", server.requests());
}

/// A chart whose CRDs are templates (a subchart named `crds`, as prometheus-operator-crds
/// ships them) and one of its own `crds/` folder. Removing the release uninstalls it: Helm
/// deletes the templated CRD, and the API server every custom resource of it with it (here a
/// CloudNativePG cluster of the `apps` Kustomization: data loss); the `crds/` folder's CRD
/// stays (Helm never deletes those), and so do its custom resources.
#[test]
fn a_removed_release_deletes_its_templated_crds_and_their_custom_resources() {
    let crd = |plural: &str, kind: &str| {
        format!("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: {plural}.postgresql.cnpg.io\nspec:\n  group: postgresql.cnpg.io\n  scope: Namespaced\n  names: {{plural: {plural}, kind: {kind}}}\n  versions: [{{name: v1, served: true, storage: true, schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}}}]\n")
    };
    let files = [
        ("crds.yaml", release("pg-crds", &local_chart("./charts/pg-crds"), "")),
        (
            "db.yaml",
            "apiVersion: postgresql.cnpg.io/v1\nkind: Cluster\nmetadata: {name: db, namespace: apps}\nspec: {instances: 1, storage: {size: 1Gi}}\n---\napiVersion: postgresql.cnpg.io/v1\nkind: Backup\nmetadata: {name: nightly, namespace: apps}\nspec: {cluster: {name: db}}\n".to_string(),
        ),
    ];
    let repo = repo("", &files, &[]);
    repo.write(
        "charts/pg-crds/Chart.yaml",
        "apiVersion: v2\nname: pg-crds\nversion: 1.0.0\n",
    )
    .write("charts/pg-crds/crds/backup.yaml", &crd("backups", "Backup"))
    .write(
        "charts/pg-crds/charts/crds/Chart.yaml",
        "apiVersion: v2\nname: crds\nversion: 1.0.0\n",
    )
    .write(
        "charts/pg-crds/charts/crds/templates/cluster.yaml",
        &crd("clusters", "Cluster"),
    );
    repo.commit_all("a chart of CRDs");
    write_apps(&repo, &[("db.yaml", files[1].1.clone())]);
    repo.remove("apps/crds.yaml");
    repo.commit_all("remove the CRD release");
    let cache = cache();
    let out = run(
        &repo,
        cache.path(),
        &[
            "cutover", "--from", "HEAD~1", "--to", "HEAD", "--format", "json",
        ],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    let doc = json(&out);
    let deleted: Vec<(String, String, String)> = doc["deletions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let s = |k: &str| d[k].as_str().unwrap_or("").to_string();
            (format!("{}/{}", s("kind"), s("name")), s("rule"), s("data"))
        })
        .collect();
    assert_eq!(
        deleted,
        [
            (
                "Cluster/db".to_string(),
                "crd-deleted".to_string(),
                "holds".to_string()
            ),
            (
                "HelmRelease/pg-crds".to_string(),
                "left-build".to_string(),
                "none".to_string()
            ),
        ],
        "{doc:#}"
    );
    let reason = doc["deletions"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("clusters.postgresql.cnpg.io"), "{reason}");
}

/// Charts render for a current Kubernetes (`--kube-version`, v1.37.0 unless set), not the
/// v1.20.0 a `go install`ed helm assumes: a chart whose `kubeVersion` asks for more renders,
/// and `.Capabilities.KubeVersion` says the version asked for. A HelmRelease's
/// `disableSchemaValidation` lets values the chart's schema refuses render, as
/// helm-controller renders them.
#[test]
fn charts_render_for_the_kubernetes_version_asked_and_the_schema_the_release_allows() {
    let files = [
        (
            "modern.yaml",
            release("modern", &local_chart("./charts/modern"), ""),
        ),
        (
            "strict.yaml",
            release(
                "strict",
                &local_chart("./charts/modern"),
                "    size: huge\n",
            ),
        ),
        (
            "lenient.yaml",
            release(
                "lenient",
                &local_chart("./charts/modern"),
                "    size: huge\n",
            ) + "  install: {disableSchemaValidation: true}\n",
        ),
    ];
    let repo = repo("", &files, &[]);
    repo.write(
        "charts/modern/Chart.yaml",
        "apiVersion: v2\nname: modern\nversion: 1.0.0\nkubeVersion: '>=1.30.0-0'\n",
    )
    .write("charts/modern/values.yaml", "size: small\n")
    .write(
        "charts/modern/values.schema.json",
        r#"{"type": "object", "properties": {"size": {"enum": ["small", "large"]}}}"#,
    )
    .write(
        "charts/modern/templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Release.Name }}'}\ndata:\n  kube: '{{ .Capabilities.KubeVersion.Version }}'\n  size: '{{ .Values.size }}'\n",
    );
    repo.commit_all("a chart for a recent Kubernetes");
    let cache = cache();
    let data = |args: &[&str]| -> Vec<(String, String)> {
        let mut all = vec!["build", "--format", "json"];
        all.extend_from_slice(args);
        let doc = json(&run(&repo, cache.path(), &all));
        let mut seen: Vec<(String, String)> = doc["objects"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|o| o["kind"] == "ConfigMap")
            .map(|o| {
                let d = &o["object"]["data"];
                (
                    o["name"].as_str().unwrap().to_string(),
                    format!(
                        "{} {}",
                        d["kube"].as_str().unwrap(),
                        d["size"].as_str().unwrap()
                    ),
                )
            })
            .collect();
        seen.sort();
        seen
    };
    let pair = |n: &str, v: &str| (n.to_string(), v.to_string());
    // `strict` breaks the schema: not rendered, so it makes no ConfigMap.
    assert_eq!(
        data(&[]),
        [
            pair("lenient", "v1.37.0 huge"),
            pair("modern", "v1.37.0 small")
        ]
    );
    assert_eq!(
        data(&["--kube-version", "1.31.4"]),
        [
            pair("lenient", "v1.31.4 huge"),
            pair("modern", "v1.31.4 small")
        ]
    );
    // Below the chart's kubeVersion, helm refuses it.
    assert_eq!(data(&["--kube-version", "v1.29.0"]), []);
    let bad = run(&repo, cache.path(), &["build", "--kube-version", "1.x"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(
        bad.stderr.contains("no Kubernetes version"),
        "{}",
        bad.stderr
    );
}

/// `check` says which HelmReleases it could not render and why (as `build` and `cutover`
/// do): what their charts create was judged by their values alone. Not with `--no-helm`,
/// which asks for that.
#[test]
fn check_says_which_releases_it_could_not_render() {
    let repo = store_repo();
    let mut cmd = repo.command(&["check"]);
    cmd.env_remove("FLUXWAVE_NO_HELM")
        .env("FLUXWAVE_HELM", repo.path().join("no-such-helm"));
    let run = repo.run_command(cmd);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("1 HelmRelease not rendered, judged by their values alone: ")
            && run.stdout.contains("apps/store (dev)"),
        "{}",
        run.stdout
    );
    let mut cmd = repo.command(&["check", "--format", "json"]);
    cmd.env_remove("FLUXWAVE_NO_HELM")
        .env("FLUXWAVE_HELM", repo.path().join("no-such-helm"));
    let doc = json(&repo.run_command(cmd));
    assert_eq!(doc["notRendered"][0]["release"], "apps/store", "{doc:#}");
    let off = repo.run(&["check"]);
    assert!(!off.stdout.contains("not rendered"), "{}", off.stdout);
}
