//! The verdict contract when a HelmRelease is not rendered (`--no-helm`, as every test here
//! runs, or no helm): "safe" only when everything the change touches was judged. A release
//! whose chart, version, values or local chart files change is an upgrade whose deletions are
//! not seen: "incomplete", unless the *base* revision's fluxwave.yaml accepts the gap by name
//! (`cutover.accept: [helm-upgrades]`). A release whose target changes is uninstalled
//! (helm-controller `internal/action/ReleaseTargetChanged`: storage namespace, release
//! namespace, `release.ShortenName(GetReleaseName())`, chart name), which is a deletion even
//! unrendered. Real git repositories, written by the test in the shape of a `flux bootstrap`
//! repository with one `apps` Kustomization.

use serde_json::Value;

use crate::common::{cutover_json, deletions, flux_ks as ks, TestRepo};

const HELM_REPOSITORY: &str = "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {name: charts, namespace: apps}\nspec: {url: 'https://charts.example.org', interval: 1h}\n";

/// A HelmRelease `store` in `apps` of chart `chart` (version `version`) from the Helm
/// repository, with `extra` lines in its spec.
fn release(chart: &str, version: &str, extra: &str) -> String {
    format!("apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {{name: store, namespace: apps}}\nspec:\n  interval: 1h\n  chart:\n    spec: {{chart: {chart}, version: '{version}', sourceRef: {{kind: HelmRepository, name: charts}}}}\n  values: {{persistence: {{enabled: true, size: 1Gi}}}}\n{extra}")
}

/// One environment `dev` whose `apps` Kustomization applies `apps/`, holding the Helm
/// repository and `hr` (the HelmRelease), committed; `config` is the fluxwave.yaml, if any.
fn repo(hr: &str, config: Option<&str>) -> TestRepo {
    let repo = TestRepo::empty();
    repo.write(
        "clusters/dev/kustomization.yaml",
        "resources: [apps.yaml]\n",
    )
    .write("clusters/dev/apps.yaml", &ks("apps", "./apps", &[]))
    .write("apps/repository.yaml", HELM_REPOSITORY)
    .write("apps/store.yaml", hr);
    if let Some(config) = config {
        repo.write("fluxwave.yaml", config);
    }
    repo.commit_all("base");
    repo
}

fn gaps(doc: &Value, key: &str) -> Vec<(String, String)> {
    doc[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["kustomization"].as_str().unwrap().to_string(),
                i["gap"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn rules(doc: &Value) -> Vec<String> {
    deletions(doc)
        .iter()
        .map(|d| {
            format!(
                "{}/{} {}",
                d["kind"].as_str().unwrap(),
                d["name"].as_str().unwrap(),
                d["rule"].as_str().unwrap()
            )
        })
        .collect()
}

const ACCEPT: &str = "cutover:\n  accept: [helm-upgrades]\n";

/// A chart version bump (or a values change) of a release that is not rendered: Helm's
/// upgrade deletes what the new chart no longer renders, which is not seen. Incomplete,
/// never safe; the change's own fluxwave.yaml cannot accept that, the base's can, and the
/// report then names the gap as accepted (text, JSON and the Markdown of `diff`).
#[test]
fn an_unrendered_upgrade_is_incomplete_unless_the_base_accepts_it() {
    let repo = repo(&release("store", "1.0.0", ""), None);
    repo.write("apps/store.yaml", &release("store", "1.1.0", ""));
    let (code, doc) = cutover_json(&repo, &["--from", "HEAD"]);
    assert_eq!(
        (code, doc["verdict"].as_str()),
        (1, Some("incomplete")),
        "{doc:#}"
    );
    assert_eq!(
        gaps(&doc, "incomplete"),
        [("flux-system/apps".to_string(), "helm-upgrades".to_string())]
    );
    let why = doc["incomplete"][0]["why"][0].as_str().unwrap();
    assert!(
        why.contains("HelmRelease/apps/store changes") && why.contains("--no-helm"),
        "{why}"
    );
    assert!(deletions(&doc).is_empty());

    // The change accepts its own gap: not heard.
    repo.write("fluxwave.yaml", ACCEPT);
    let (code, doc) = cutover_json(&repo, &["--from", "HEAD"]);
    assert_eq!(
        (code, doc["verdict"].as_str()),
        (1, Some("incomplete")),
        "{doc:#}"
    );
    repo.commit_all("accept, and the bump with it");
    let (code, doc) = cutover_json(&repo, &["--from", "HEAD~1", "--to", "HEAD"]);
    assert_eq!(
        (code, doc["verdict"].as_str()),
        (1, Some("incomplete")),
        "{doc:#}"
    );

    // The base accepts it: safe, with the gap listed.
    repo.write("apps/store.yaml", &release("store", "1.2.0", ""));
    let (code, doc) = cutover_json(&repo, &["--from", "HEAD"]);
    assert_eq!(
        (code, doc["verdict"].as_str()),
        (0, Some("safe")),
        "{doc:#}"
    );
    assert_eq!(doc["incomplete"], serde_json::json!([]));
    assert_eq!(
        gaps(&doc, "accepted"),
        [("flux-system/apps".to_string(), "helm-upgrades".to_string())]
    );
    let text = repo.run(&["cutover", "--from", "HEAD"]);
    assert_eq!(text.code, 0, "{}", text.stdout);
    assert!(
        text.stdout.contains("Accepted gaps")
            && text.stdout.contains("[helm-upgrades]")
            && text.stdout.contains("HelmRelease/apps/store changes"),
        "{}",
        text.stdout
    );
    let markdown = repo.run(&["diff", "--from", "HEAD", "--format", "github"]);
    assert!(
        markdown.stdout.contains("Accepted gaps") && markdown.stdout.contains("`helm-upgrades`"),
        "{}",
        markdown.stdout
    );
}

/// An unrendered release of a chart of this repository whose chart files change (the
/// HelmRelease itself unchanged) is an upgrade too: the chart's files are part of what
/// decides its render, read without helm.
#[test]
fn a_local_chart_edit_of_an_unrendered_release_is_incomplete() {
    let hr = "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: store, namespace: apps}\nspec:\n  interval: 1h\n  chart:\n    spec: {chart: ./charts/store, sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}}\n";
    let repo = TestRepo::empty();
    repo.write("clusters/dev/kustomization.yaml", "resources: [apps.yaml]\n")
        .write("clusters/dev/apps.yaml", &ks("apps", "./apps", &[]))
        .write("apps/store.yaml", hr)
        .write("charts/store/Chart.yaml", "apiVersion: v2\nname: store\nversion: 1.0.0\n")
        .write("charts/store/templates/pvc.yaml", "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data}\nspec: {resources: {requests: {storage: 1Gi}}}\n");
    repo.commit_all("base");
    repo.write("charts/store/templates/pvc.yaml", "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data-v2}\nspec: {resources: {requests: {storage: 1Gi}}}\n");
    let (code, doc) = cutover_json(&repo, &["--from", "HEAD"]);
    assert_eq!(
        (code, doc["verdict"].as_str()),
        (1, Some("incomplete")),
        "{doc:#}"
    );
    assert_eq!(
        gaps(&doc, "incomplete"),
        [("flux-system/apps".to_string(), "helm-upgrades".to_string())]
    );
}

/// A release whose target changes is uninstalled before the new one is installed, rendered
/// or not: each of `releaseName`, `targetNamespace`, `storageNamespace` and the chart's name
/// is a deletion (`release-replaced`) of what the old release installed, which the
/// HelmRelease stands for, judged by its values (`persistence.enabled`: it holds data).
/// No name accepts it.
#[test]
fn an_unrendered_release_whose_target_changes_is_an_uninstall() {
    for (what, new) in [
        (
            "releaseName",
            release("store", "1.0.0", "  releaseName: shop\n"),
        ),
        (
            "targetNamespace",
            release("store", "1.0.0", "  targetNamespace: media\n"),
        ),
        (
            "storageNamespace",
            release("store", "1.0.0", "  storageNamespace: helm\n"),
        ),
        ("chart", release("shop", "1.0.0", "")),
    ] {
        let repo = repo(&release("store", "1.0.0", ""), Some(ACCEPT));
        repo.write("apps/store.yaml", &new);
        let (code, doc) = cutover_json(&repo, &["--from", "HEAD"]);
        assert_eq!(
            (code, doc["verdict"].as_str()),
            (1, Some("deletes")),
            "{what}: {doc:#}"
        );
        assert_eq!(
            rules(&doc),
            ["HelmRelease/store release-replaced"],
            "{what}"
        );
        let d = &deletions(&doc)[0];
        assert_eq!(d["stateful"], true, "{what}: {d:#}");
        let reason = d["reason"].as_str().unwrap();
        assert!(
            reason.contains("uninstalls the old release"),
            "{what}: {reason}"
        );
        assert_eq!(doc["accepted"], serde_json::json!([]), "{what}");
    }
}

/// `cutover.accept` names gaps: an unknown name is bad input, with its place.
#[test]
fn an_unknown_accepted_gap_is_bad_input_with_its_place() {
    let repo = repo(&release("store", "1.0.0", ""), None);
    repo.write("fluxwave.yaml", "cutover:\n  accept: [helm-upgrade]\n");
    for args in [&["cutover", "--from", "HEAD"][..], &["check"]] {
        let run = repo.run(args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stdout);
        assert!(
            run.stderr.contains("`helm-upgrade` names no gap")
                && run.stderr.contains("fluxwave.yaml:2:12")
                && run.stderr.contains("helm-upgrades"),
            "{}",
            run.stderr
        );
    }
}

/// A chart upgrade in a Kustomization whose newer build surely fails (the same change adds a
/// `${VARIABLE}` nothing sets, which Flux's strict substitution fails on): Flux applies none
/// of the build, so the HelmRelease in the cluster stays as it was and helm-controller
/// upgrades nothing (kustomize-controller `reconcile` returns on a build error before
/// `apply`). Judged: safe, with the failure said. Without the variable, the same upgrade is
/// not seen.
#[test]
fn an_upgrade_in_a_build_that_surely_fails_is_not_applied() {
    let repo = repo(&release("store", "1.0.0", ""), None);
    repo.write(
        "clusters/dev/apps.yaml",
        &ks("apps", "./apps", &["postBuild: {substitute: {ZONE: eu}}"]),
    );
    repo.commit_all("substitutes");
    let upgraded = release("store", "1.1.0", "");
    repo.write(
        "apps/store.yaml",
        &upgraded.replace("size: 1Gi", "size: '${SIZE}'"),
    );
    let (code, doc) = cutover_json(&repo, &["--from", "HEAD", "--no-helm"]);
    assert_eq!(
        (code, doc["verdict"].as_str()),
        (0, Some("safe")),
        "{doc:#}"
    );
    assert!(
        doc["warnings"].to_string().contains("needs `${SIZE}`"),
        "{doc:#}"
    );
    repo.write("apps/store.yaml", &upgraded);
    let (code, doc) = cutover_json(&repo, &["--from", "HEAD", "--no-helm"]);
    assert_eq!(
        (code, gaps(&doc, "incomplete")),
        (1, vec![("flux-system/apps".into(), "helm-upgrades".into())]),
        "{doc:#}"
    );
}
