//! Where fluxwave finds the Flux environments without configuration, and the three verdicts
//! of `cutover` (and `check --base`): "safe" only when everything the change touches was
//! seen, "incomplete" when the change touches what cannot be seen, exit 2 when no Flux
//! environment is found. Real git repositories, written by the test in the shapes of the
//! common layouts (flux bootstrap, Flux Operator, per-app `ks.yaml`).

use serde_json::Value;

use crate::common::{
    cutover_json, deletion_id, deletions, flux_ks as ks, lab, TestRepo, FAILING_PATCH, SYNC,
};

fn config_map(name: &str, namespace: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {namespace}\ndata:\n  a: b\n")
}

/// `cutover --from REV` as JSON, with its exit code; the text form exits the same.
fn cutover(repo: &TestRepo, args: &[&str]) -> (i32, Value) {
    let (code, doc) = cutover_json(repo, args);
    let mut all = vec!["cutover"];
    all.extend_from_slice(args);
    let text = repo.run(&all);
    assert_eq!(text.code, code, "{}", text.stdout);
    (code, doc)
}

fn deleted(doc: &Value) -> Vec<String> {
    deletions(doc).iter().map(deletion_id).collect()
}

fn incomplete(doc: &Value) -> Vec<String> {
    doc["incomplete"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["kustomization"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_bootstrap_sync_file_outside_clusters_names_its_environment() {
    let repo = lab();
    repo.write("apps/web.yaml", &config_map("web", "web"))
        .write("apps/db.yaml", &config_map("db", "web"));
    repo.commit_all("bootstrap");
    repo.remove("apps/db.yaml");
    let (code, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!(code, 1);
    assert_eq!(doc["environments"], serde_json::json!(["lab"]));
    assert_eq!(doc["verdict"], "deletes");
    assert_eq!(deleted(&doc), ["ConfigMap/web/db"]);
}

#[test]
fn a_commit_that_adds_the_sync_file_compares_with_its_parent() {
    // The parent has no mark of an environment; the commit adds bootstrap's files and drops
    // an object: the parent is built at the entry the commit names.
    let repo = TestRepo::empty();
    repo.write("deploy/lab/apps.yaml", &ks("apps", "./apps", &[]))
        .write("apps/web.yaml", &config_map("web", "web"))
        .write("apps/db.yaml", &config_map("db", "web"));
    repo.commit_all("before bootstrap");
    let run = repo.run(&["cutover", "--from", "HEAD", "--to", "HEAD"]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    repo.write("deploy/lab/flux-system/gotk-sync.yaml", SYNC)
        .write(
            "deploy/lab/flux-system/kustomization.yaml",
            "resources: [gotk-sync.yaml]\n",
        );
    repo.remove("apps/db.yaml");
    repo.commit_all("bootstrap");
    let (code, doc) = cutover(&repo, &["--from", "HEAD~1", "--to", "HEAD"]);
    assert_eq!(
        (code, deleted(&doc)),
        (1, vec!["ConfigMap/web/db".to_string()])
    );
}

#[test]
fn a_flux_instance_helm_release_names_a_per_app_tree() {
    // Flux Operator's flux-instance chart: the root syncs kubernetes/flux/cluster, a folder
    // of Flux Kustomizations without a kustomization.yaml (Flux generates one).
    let repo = TestRepo::empty();
    repo.write("kubernetes/apps/flux-system/flux-instance/app/helmrelease.yaml", "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: flux-instance\nspec:\n  chartRef: {kind: OCIRepository, name: flux-instance}\n  values:\n    instance:\n      sync:\n        kind: GitRepository\n        url: https://example.org/home-ops\n        ref: refs/heads/main\n        path: kubernetes/flux/cluster\n")
        .write(
            "kubernetes/flux/cluster/ks.yaml",
            &ks("cluster-apps", "./kubernetes/apps", &[]),
        )
        .write(
            "kubernetes/apps/kustomization.yaml",
            "resources: [./default/ks.yaml]\n",
        )
        .write(
            "kubernetes/apps/default/ks.yaml",
            &ks("echo", "./kubernetes/apps/default/app", &["targetNamespace: default"]),
        )
        .write(
            "kubernetes/apps/default/app/kustomization.yaml",
            "resources: [cm.yaml, pvc.yaml]\n",
        )
        .write("kubernetes/apps/default/app/cm.yaml", &config_map("echo", "x"))
        .write("kubernetes/apps/default/app/pvc.yaml", "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: echo}\nspec: {resources: {requests: {storage: 1Gi}}}\n");
    repo.commit_all("home-ops layout");
    repo.write("kubernetes/apps/kustomization.yaml", "resources: []\n");
    let (code, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!(code, 1);
    assert_eq!(doc["environments"], serde_json::json!(["cluster"]));
    assert_eq!(
        deleted(&doc),
        [
            "PersistentVolumeClaim/default/echo",
            "ConfigMap/default/echo"
        ]
    );
    assert_eq!(
        doc["deletions"][0]["owner"],
        "Kustomization/flux-system/echo"
    );
}

#[test]
fn no_environment_is_bad_input_that_says_where_it_looked() {
    let repo = TestRepo::empty();
    repo.write("deploy/apps.yaml", &ks("apps", "./apps", &[]))
        .write("apps/keep.yaml", &config_map("keep", "web"))
        .write("apps/web.yaml", &config_map("web", "web"));
    repo.commit_all("no entry");
    let run = repo.run(&["cutover", "--from", "HEAD"]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(
        run.stderr.contains("no Flux environment found")
            && run.stderr.contains("gotk-sync.yaml")
            && run.stderr.contains("--env NAME=PATH"),
        "{}",
        run.stderr
    );
    // `--env` names one for the run.
    repo.remove("apps/web.yaml");
    let (code, doc) = cutover(&repo, &["--from", "HEAD", "--env", "lab=./deploy/"]);
    assert_eq!(doc["environments"], serde_json::json!(["lab"]));
    assert_eq!(
        (code, deleted(&doc)),
        (1, vec!["ConfigMap/web/web".to_string()])
    );
    let bad = repo.run(&["cutover", "--from", "HEAD", "--env", "lab"]);
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("NAME=PATH"), "{}", bad.stderr);
}

#[test]
fn a_revision_without_fluxwave_yaml_uses_the_working_trees() {
    let repo = TestRepo::empty();
    repo.write("deploy/apps.yaml", &ks("apps", "./apps", &[]))
        .write("apps/web.yaml", &config_map("web", "web"));
    repo.commit_all("no config");
    repo.write(
        "fluxwave.yaml",
        "clusters:\n  environments:\n    - {name: lab, path: deploy}\n",
    );
    let (code, doc) = cutover(&repo, &["--from", "HEAD", "--to", "HEAD"]);
    assert_eq!(doc["environments"], serde_json::json!(["lab"]));
    assert_eq!((code, doc["verdict"].as_str()), (0, Some("safe")));
}

/// A repository whose `kyverno` Kustomization reads an OCIRepository, and whose `apps`
/// Kustomization is built from this repository.
fn other_source_repo() -> TestRepo {
    let repo = TestRepo::empty();
    repo.write(
        "clusters/prod/kustomization.yaml",
        "resources: [apps.yaml, kyverno.yaml]\n",
    )
    .write("clusters/prod/apps.yaml", &ks("apps", "./apps", &[]))
    .write("clusters/prod/kyverno.yaml", "apiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata:\n  name: kyverno\n  namespace: flux-system\nspec:\n  interval: 1h\n  url: oci://example.org/kyverno\n  ref: {tag: 1.0.0}\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: kyverno\n  namespace: flux-system\nspec:\n  interval: 1h\n  path: ./\n  prune: true\n  sourceRef: {kind: OCIRepository, name: kyverno}\n")
    .write("apps/web.yaml", &config_map("web", "web"));
    repo.commit_all("init");
    repo
}

#[test]
fn a_change_to_another_sources_object_is_incomplete() {
    let repo = other_source_repo();
    // A change elsewhere leaves what kyverno applies as it was: safe.
    repo.write(
        "apps/web.yaml",
        &config_map("web", "web").replace("a: b", "a: c"),
    );
    let (code, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!((code, doc["verdict"].as_str()), (0, Some("safe")));
    assert_eq!(doc["safe"], true);
    // A new tag changes what it applies, which is not in this repository.
    repo.write(
        "clusters/prod/kyverno.yaml",
        &repo
            .read("clusters/prod/kyverno.yaml")
            .replace("tag: 1.0.0", "tag: 2.0.0"),
    );
    let (code, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!((code, doc["verdict"].as_str()), (1, Some("incomplete")));
    assert_eq!(doc["safe"], false);
    assert_eq!(incomplete(&doc), ["flux-system/kyverno"]);
    let why = doc["incomplete"][0]["why"][0].as_str().unwrap();
    assert!(why.contains("OCIRepository/flux-system/kyverno"), "{why}");
    let text = repo.run(&["cutover", "--from", "HEAD"]).stdout;
    assert!(
        text.contains("incomplete: the change touches 1 Kustomization"),
        "{text}"
    );
    // `check --base` says the same, as an error.
    let check = repo.run(&["check", "--base", "HEAD", "--format", "json"]);
    assert_eq!(check.code, 1, "{}", check.stdout);
    assert!(
        check.stdout.contains("cutover-incomplete"),
        "{}",
        check.stdout
    );
}

#[test]
fn a_failing_build_the_change_touches_is_incomplete() {
    // Its patch fails (a JSON 6902 `remove` of a key the ConfigMap lacks), a failure of a
    // ported transformation that fluxwave does not call certain: what Flux does with the
    // build is not known.
    let repo = other_source_repo();
    repo.write(
        "clusters/prod/kustomization.yaml",
        "resources: [apps.yaml, broken.yaml]\n",
    )
    .write("clusters/prod/broken.yaml", &ks("broken", "./broken", &[]))
    .write("broken/kustomization.yaml", FAILING_PATCH)
    .write("broken/cm.yaml", &config_map("cm", "b"));
    repo.commit_all("a build that fails");
    // Untouched, it applies what it applied before.
    repo.write(
        "apps/web.yaml",
        &config_map("web", "web").replace("a: b", "a: c"),
    );
    let (code, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!((code, doc["verdict"].as_str()), (0, Some("safe")), "{doc}");
    // A file its build reads changes: what it will apply once fixed is unknown.
    repo.write("broken/cm.yaml", &config_map("cm2", "b"));
    let (code, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!(
        (code, incomplete(&doc)),
        (1, vec!["flux-system/broken".to_string()])
    );
    // A new file its kustomization does not list changes nothing it reads.
    repo.write("broken/cm.yaml", &config_map("cm", "b"))
        .write("broken/extra.yaml", &config_map("extra", "b"));
    let (code, _) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!(code, 0);
    // Without a kustomization, Flux generates one listing every file of the folder: a new
    // file there is read.
    repo.remove("broken/extra.yaml");
    repo.remove("broken/kustomization.yaml");
    repo.write("broken/bad.yaml", "kind: [\n");
    repo.commit_all("a generated kustomization that fails");
    repo.write("broken/extra.yaml", &config_map("extra", "b"));
    let (code, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!(
        (code, incomplete(&doc)),
        (1, vec!["flux-system/broken".to_string()]),
        "{doc}"
    );
}

#[test]
fn a_remote_base_the_change_touches_is_incomplete() {
    let repo = other_source_repo();
    repo.write(
        "clusters/prod/kustomization.yaml",
        "resources: [apps.yaml, remote.yaml]\n",
    )
    .write("clusters/prod/remote.yaml", &ks("remote", "./remote", &[]))
    .write(
        "remote/kustomization.yaml",
        "resources:\n  - https://github.com/example/app//deploy?ref=v1\n",
    );
    repo.commit_all("remote base");
    let (code, _) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!(code, 0);
    repo.write(
        "remote/kustomization.yaml",
        "resources:\n  - https://github.com/example/app//deploy?ref=v2\n",
    );
    let (code, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!(
        (code, incomplete(&doc)),
        (1, vec!["flux-system/remote".to_string()])
    );
    let why = doc["incomplete"][0]["why"][0].as_str().unwrap();
    assert!(why.contains("remote base"), "{why}");
}

#[test]
fn a_removed_environment_is_incomplete() {
    let repo = other_source_repo();
    std::fs::remove_dir_all(repo.path().join("clusters/prod")).unwrap();
    repo.write("clusters/dev/kustomization.yaml", "resources: []\n");
    let (code, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!((code, doc["verdict"].as_str()), (1, Some("incomplete")));
    assert_eq!(doc["incomplete"][0]["environment"], "prod");
    assert_eq!(doc["incomplete"][0]["kustomization"], "");
}

/// The flux2-kustomize-helm-example layout of Flux 2.7: an ArtifactGenerator splits this
/// repository into ExternalArtifacts, and the Kustomizations read those; a `.sourceignore`
/// keeps everything but the manifest folders out of the source's artifact.
fn artifact_repo() -> TestRepo {
    let repo = TestRepo::empty();
    repo.write(".sourceignore", "/*\n!/apps/\n!/clusters/\n");
    let sync = SYNC.replace("./deploy/lab", "./clusters/production");
    repo.write("clusters/production/flux-system/gotk-sync.yaml", &sync)
        .write(
            "clusters/production/flux-system/kustomization.yaml",
            "resources: [gotk-sync.yaml]\n",
        )
        .write("clusters/production/artifacts.yaml", "apiVersion: source.extensions.fluxcd.io/v1beta1\nkind: ArtifactGenerator\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  sources:\n    - alias: monorepo\n      kind: GitRepository\n      name: flux-system\n  artifacts:\n    - name: apps\n      originRevision: \"@monorepo\"\n      copy:\n        - from: \"@monorepo/apps/base/**\"\n          to: \"@artifact/base/\"\n        - from: \"@monorepo/apps/production/**\"\n          to: \"@artifact/production/\"\n")
        .write("clusters/production/apps.yaml", "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  interval: 1h\n  sourceRef:\n    kind: ExternalArtifact\n    name: apps\n  path: ./production\n  prune: true\n")
        .write(
            "apps/base/web/kustomization.yaml",
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: web\nresources: [namespace.yaml, release.yaml]\n",
        )
        .write("apps/base/web/namespace.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: web\n")
        .write("apps/base/web/release.yaml", "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: web\nspec:\n  chart: {spec: {chart: web, sourceRef: {kind: HelmRepository, name: web}}}\n")
        .write(
            "apps/production/kustomization.yaml",
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../base/web\n",
        );
    repo.commit_all("artifacts");
    repo
}

/// A history over that layout: the builds over the ExternalArtifact's files are remembered
/// from step to step as those over the repository's are, so a step that changes nothing
/// they read builds nothing afresh and one that edits the release builds only what reads
/// it; and each step reports what a comparison of its two revisions alone reports.
#[test]
fn a_history_replays_the_builds_over_external_artifacts() {
    let repo = artifact_repo();
    let release = "apps/base/web/release.yaml";
    repo.write("README.md", "the fleet\n");
    repo.commit_all("README");
    let edited = std::fs::read_to_string(repo.path().join(release)).unwrap();
    repo.write(release, &edited.replace("chart: web,", "chart: web2,"));
    repo.commit_all("web2");
    repo.write("README.md", "the fleet, edited\n");
    repo.commit_all("README again");
    let (costs, verdicts) = crate::touched::step_costs(&repo, "HEAD~3..HEAD");
    let builds: Vec<usize> = costs.iter().map(|&(b, _, _)| b).collect();
    assert_eq!(builds[1..], [1, 0], "{costs:?}");
    for (i, verdict) in verdicts.iter().enumerate() {
        let (from, to) = (format!("HEAD~{}", 3 - i), format!("HEAD~{}", 2 - i));
        let (_, alone) = cutover(&repo, &["--from", &from, "--to", &to, "--no-helm"]);
        assert_eq!(
            alone["verdict"].as_str(),
            Some(verdict.as_str()),
            "step {i}: {alone}"
        );
    }
}

#[test]
fn an_external_artifact_made_from_this_repository_is_built() {
    let repo = artifact_repo();
    let (code, doc) = cutover(&repo, &["--from", "HEAD", "--to", "HEAD"]);
    assert_eq!((code, doc["verdict"].as_str()), (0, Some("safe")), "{doc}");
    assert!(doc["warnings"].as_array().unwrap().is_empty(), "{doc}");
    repo.write(
        "apps/production/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n",
    );
    let (code, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!(
        (code, doc["verdict"].as_str()),
        (1, Some("deletes")),
        "{doc}"
    );
    assert_eq!(
        deleted(&doc),
        ["HelmRelease/web/web", "Namespace//web"],
        "{doc}"
    );
    // Each deletion names the repository file it is written in, not the artifact's path.
    assert_eq!(doc["deletions"][0]["file"], "apps/base/web/release.yaml");
    // A base the overlay needs removed: the build fails, and the verdict says so.
    repo.write(
        "apps/production/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../base/web\n",
    );
    std::fs::remove_dir_all(repo.path().join("apps/base/web")).unwrap();
    repo.write("apps/base/README.yaml", "# the bases\n");
    // Why the one incomplete owner, `apps`, is not seen.
    let apps_unseen = || {
        let (code, doc) = cutover(&repo, &["--from", "HEAD"]);
        assert_eq!(
            (code, incomplete(&doc)),
            (1, vec!["flux-system/apps".to_string()])
        );
        doc["incomplete"][0]["why"][0].as_str().unwrap().to_string()
    };
    let why = apps_unseen();
    assert!(
        why.contains("(ExternalArtifact flux-system/apps) production/kustomization.yaml"),
        "{why}"
    );
    // With nothing left under `apps/base`, source-watcher's copy of `apps/base/**` fails
    // (`builder.applyCopyOperation`: no files match), and the generator keeps the artifact
    // it made last: what Flux applies is known only in the cluster.
    std::fs::remove_file(repo.path().join("apps/base/README.yaml")).unwrap();
    let why = apps_unseen();
    assert!(
        why.contains("its ArtifactGenerator fails to build artifact `apps` (copy from `@monorepo/apps/base/**`: no files match pattern 'apps/base/**')"),
        "{why}"
    );
}

#[test]
fn an_external_artifact_copied_from_another_source_is_incomplete_when_touched() {
    let repo = artifact_repo();
    repo.write(
        "clusters/production/artifacts.yaml",
        &repo
            .read("clusters/production/artifacts.yaml")
            .replace(
                "name: flux-system\n  artifacts",
                "name: charts\n  artifacts",
            )
            .replace("kind: GitRepository", "kind: OCIRepository"),
    );
    repo.commit_all("from an OCI repository");
    let (code, doc) = cutover(&repo, &["--from", "HEAD", "--to", "HEAD"]);
    assert_eq!(code, 0, "{doc}");
    repo.write(
        "clusters/production/apps.yaml",
        &repo
            .read("clusters/production/apps.yaml")
            .replace("./production", "./staging"),
    );
    let (code, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!(
        (code, incomplete(&doc)),
        (1, vec!["flux-system/apps".to_string()])
    );
    let why = doc["incomplete"][0]["why"][0].as_str().unwrap();
    assert!(why.contains("not this repository"), "{why}");
}

#[test]
fn a_source_made_in_the_cluster_or_applied_by_hand_lets_the_build_be_seen() {
    // home-ops layouts: substituteFrom a Secret an ExternalSecret makes, or one written in a
    // bootstrap folder that no Kustomization applies. Flux finds them in the cluster, so
    // its build succeeds, and a change to it is judged, not left incomplete.
    let repo = TestRepo::empty();
    let reader = |name: &str, secret: &str| {
        ks(
            name,
            &format!("./{name}"),
            &[
                "targetNamespace: net",
                "postBuild:",
                &format!("  substituteFrom: [{{kind: Secret, name: {secret}}}]"),
            ],
        )
        .replace("namespace: flux-system\nspec", "namespace: net\nspec")
        .replace(
            "name: flux-system\n",
            "name: flux-system\n    namespace: flux-system\n",
        )
    };
    repo.write(
        "clusters/prod/kustomization.yaml",
        "resources: [secrets.yaml, tunnel.yaml, dns.yaml]\n",
    )
    .write("clusters/prod/secrets.yaml", &ks("secrets", "./secrets", &[]))
    .write("clusters/prod/tunnel.yaml", &reader("tunnel", "tunnel-id"))
    .write("clusters/prod/dns.yaml", &reader("dns", "dns-token"))
    .write("secrets/external.yaml", "apiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata:\n  name: tunnel\n  namespace: net\nspec:\n  target: {name: tunnel-id}\n")
    .write("bootstrap/dns-token.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: dns-token\n  namespace: net\nstringData:\n  TOKEN: op://vault/dns/token\n");
    for app in ["tunnel", "dns"] {
        repo.write(&format!("{app}/cm.yaml"), &config_map(app, "net"))
            .write(
                &format!("{app}/old.yaml"),
                &config_map(&format!("{app}-old"), "net"),
            );
    }
    repo.commit_all("init");
    repo.remove("tunnel/old.yaml");
    repo.remove("dns/old.yaml");
    let (code, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!(
        (code, doc["verdict"].as_str()),
        (1, Some("deletes")),
        "{doc}"
    );
    assert_eq!(
        deleted(&doc),
        ["ConfigMap/net/dns-old", "ConfigMap/net/tunnel-old"]
    );
}

#[test]
fn a_kustomization_kustomize_cannot_read_is_a_failed_build_not_a_missing_file() {
    // A Latin-1 comment: kustomize refuses the file ("invalid leading UTF-8 octet") and Flux
    // applies nothing of the build, so nothing is deleted; read as absent, the folder would
    // be built without it and every object it lists reported deleted.
    let repo = TestRepo::empty();
    repo.write(
        "clusters/dev/kustomization.yaml",
        "resources: [apps.yaml]\n",
    )
    .write("clusters/dev/apps.yaml", &ks("apps", "./apps", &[]))
    .write("apps/a.yaml", &config_map("a", "x"));
    repo.commit_all("init");
    std::fs::write(
        repo.path().join("clusters/dev/kustomization.yaml"),
        b"# caf\xe9\nresources: [apps.yaml]\n",
    )
    .unwrap();
    let (code, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!((code, deleted(&doc)), (1, vec![]));
    assert_eq!(doc["verdict"], "incomplete");
    let why = doc["incomplete"][0]["why"][0].as_str().unwrap();
    assert!(why.contains("UTF-8"), "{why}");
}

#[test]
fn a_folder_of_two_kustomization_files_is_a_failed_build_not_one_of_them() {
    // kustomize reads one kustomization file a folder and refuses a folder of several
    // (`api/internal/target.loadKustFile`: "Found multiple kustomization files"); Flux's build
    // fails with it and applies nothing, so nothing is deleted. Read as one of the two, the
    // folder would be built without what the other lists.
    let repo = TestRepo::empty();
    repo.write(
        "clusters/dev/kustomization.yaml",
        "resources: [apps.yaml]\n",
    )
    .write("clusters/dev/apps.yaml", &ks("apps", "./apps", &[]))
    .write("apps/kustomization.yaml", "resources: [a.yaml, b.yaml]\n")
    .write("apps/a.yaml", &config_map("a", "x"))
    .write("apps/b.yaml", &config_map("b", "x"));
    repo.commit_all("init");
    repo.write("apps/Kustomization", "resources: [a.yaml]\n");
    let (code, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!((code, deleted(&doc)), (0, vec![]));
    assert_eq!(doc["verdict"], "safe");
    let why = doc["warnings"][0]["message"].as_str().unwrap();
    assert!(why.contains("multiple kustomization files"), "{why}");
    // kustomize agrees that the folder does not build.
    let out = std::process::Command::new("kubectl")
        .arg("kustomize")
        .arg(repo.path().join("apps"))
        .output()
        .unwrap();
    assert!(!out.status.success());
}

#[test]
fn a_kustomization_whose_build_fails_in_both_revisions_hides_what_it_applies() {
    // The root's build fails before and after the change, so Flux applies neither; but the
    // `apps` Kustomization an earlier build of it applied is still in the cluster and
    // reconciles the newer revision: the ConfigMap removed below is deleted. What a failing
    // build applies is not known, so every change of its source may reach it.
    let repo = TestRepo::empty();
    repo.write(
        "clusters/dev/kustomization.yaml",
        "resources: [apps.yaml, missing.yaml]\n",
    )
    .write("clusters/dev/apps.yaml", &ks("apps", "./apps", &[]))
    .write("apps/web.yaml", &config_map("web", "web"))
    .write("apps/db.yaml", &config_map("db", "web"));
    repo.commit_all("broken root");
    repo.remove("apps/db.yaml");
    let (code, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(doc["verdict"], "incomplete");
    assert_eq!(incomplete(&doc), ["flux-system/flux-system"]);
    let why = doc["incomplete"][0]["why"].to_string();
    assert!(why.contains("missing.yaml"), "{why}");
    // The same revision compared with itself changes nothing Flux does.
    let (code, doc) = cutover(&repo, &["--from", "HEAD", "--to", "HEAD"]);
    assert_eq!((code, doc["verdict"].as_str()), (0, Some("safe")));
}

/// A `patches` entry whose `options.allowNameChange` lets a strategic-merge patch rename a
/// claim (kustomize `Resource.ApplySmPatch` restores the name only when the option is not
/// set): the old claim leaves the build, and Flux prunes it with its volume. Without the
/// option the same patch keeps the name, and nothing is deleted. `allowKindChange` makes a
/// ConfigMap a Secret: the ConfigMap leaves the build. (The fixture
/// `tests/fixtures/flux/patch-options` holds the same build against Flux's own code.)
#[test]
fn a_patch_allowed_to_rename_a_claim_deletes_it() {
    let claim = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: media, namespace: media}\nspec: {resources: {requests: {storage: 10Gi}}}\n";
    let patched = |options: &str| {
        format!("resources: [claim.yaml, settings.yaml]\npatches:\n- target: {{kind: PersistentVolumeClaim, name: media}}\n  {options}\n  patch: |\n    apiVersion: v1\n    kind: PersistentVolumeClaim\n    metadata: {{name: media-v2}}\n- target: {{kind: ConfigMap, name: settings}}\n  {options}\n  patch: |\n    apiVersion: v1\n    kind: Secret\n    metadata: {{name: settings}}\n")
    };
    let repo = TestRepo::empty();
    repo.write(
        "clusters/dev/kustomization.yaml",
        "resources: [apps.yaml]\n",
    )
    .write("clusters/dev/apps.yaml", &ks("apps", "./apps", &[]))
    .write(
        "apps/kustomization.yaml",
        "resources: [claim.yaml, settings.yaml]\n",
    )
    .write("apps/claim.yaml", claim)
    .write("apps/settings.yaml", &config_map("settings", "media"));
    repo.commit_all("a claim");
    repo.write("apps/kustomization.yaml", &patched("options: {}"));
    let (code, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!(
        (code, doc["verdict"].as_str()),
        (0, Some("safe")),
        "{doc:#}"
    );
    repo.write(
        "apps/kustomization.yaml",
        &patched("options: {allowNameChange: true, allowKindChange: true}"),
    );
    let (code, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!(
        (code, doc["verdict"].as_str()),
        (1, Some("deletes")),
        "{doc:#}"
    );
    let found: Vec<(String, &str, bool)> = deletions(&doc)
        .iter()
        .map(|d| {
            (
                deletion_id(d),
                d["rule"].as_str().unwrap(),
                d["stateful"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            (
                "PersistentVolumeClaim/media/media".to_string(),
                "identity-changed",
                true
            ),
            ("ConfigMap/media/settings".to_string(), "left-build", false),
        ]
    );
}

/// `replacements` set a child Kustomization's `spec.targetNamespace` from a Namespace object
/// (kustomize api/filters/replacement, the last built-in transformer): renaming that object
/// moves the child's claim to the new namespace, and Flux prunes the old one with its volume.
/// A replacement whose value does not change leaves the verdict "safe"; one that fails
/// (its source is gone) fails the build, as kustomize fails it, and deletes nothing. (The
/// fixture `tests/fixtures/flux/replacements` holds such builds against Flux's own code.)
#[test]
fn a_replacement_that_moves_a_claim_deletes_it() {
    let claim = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: library}\nspec: {resources: {requests: {storage: 10Gi}}}\n";
    let apps = |namespace: &str| {
        format!("resources: [namespace.yaml, media.yaml]\nreplacements:\n- source: {{kind: Namespace, name: {namespace}}}\n  targets:\n  - select: {{kind: Kustomization, name: media}}\n    fieldPaths: [spec.targetNamespace]\n    options: {{create: true}}\n")
    };
    let repo = TestRepo::empty();
    repo.write(
        "clusters/dev/kustomization.yaml",
        "resources: [apps.yaml]\n",
    )
    .write("clusters/dev/apps.yaml", &ks("apps", "./apps", &[]))
    .write("apps/kustomization.yaml", &apps("media"))
    .write(
        "apps/namespace.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: media}\n",
    )
    .write("apps/media.yaml", &ks("media", "./apps/media", &[]))
    .write("apps/media/claim.yaml", claim);
    repo.commit_all("media");
    // A comment changes no value a replacement reads.
    repo.write(
        "apps/namespace.yaml",
        "# media\napiVersion: v1\nkind: Namespace\nmetadata: {name: media}\n",
    );
    let (code, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!(
        (code, doc["verdict"].as_str()),
        (0, Some("safe")),
        "{doc:#}"
    );
    repo.write(
        "apps/namespace.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: multimedia}\n",
    )
    .write("apps/kustomization.yaml", &apps("multimedia"));
    let (code, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!(
        (code, doc["verdict"].as_str()),
        (1, Some("deletes")),
        "{doc:#}"
    );
    let found: Vec<(String, bool)> = deletions(&doc)
        .iter()
        .map(|d| (deletion_id(d), d["stateful"].as_bool().unwrap()))
        .collect();
    assert!(
        found.contains(&("PersistentVolumeClaim/media/library".to_string(), true)),
        "{found:?}"
    );
    // A source that selects nothing fails the build: Flux applies nothing of it.
    repo.write("apps/kustomization.yaml", &apps("gone"));
    let (code, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(doc["verdict"], "incomplete");
    let why = doc["incomplete"][0]["why"].to_string();
    assert!(why.contains("nothing selected by Namespace"), "{why}");
}

/// A `configMapGenerator` with its hash suffix on (no `disableNameSuffixHash`) names its
/// ConfigMap after a hash of its content (kustomize api `hasher`), so an edit of a file it
/// reads renames the ConfigMap and Flux prunes the old one: the verdict names that deletion,
/// an identity change to the new name (no data lost: the new ConfigMap holds the new content). An edit of a generator's input
/// that is no YAML (an env file) is seen the same way; without the hash, an edit changes the
/// ConfigMap in place and deletes nothing.
#[test]
fn an_edit_of_a_hash_suffixed_generators_file_replaces_its_configmap() {
    let repo = TestRepo::empty();
    repo.write("clusters/dev/kustomization.yaml", "resources: [apps.yaml]\n")
        .write("clusters/dev/apps.yaml", &ks("apps", "./apps", &[]))
        .write(
            "apps/kustomization.yaml",
            "resources: [web.yaml]\nconfigMapGenerator:\n- name: dashboards\n  namespace: web\n  files: [board=dashboards/board.json]\n- name: env\n  namespace: web\n  envs: [web.env]\n  options: {disableNameSuffixHash: true}\n",
        )
        .write("apps/dashboards/board.json", "{\"panels\": 1}\n")
        .write("apps/web.env", "LEVEL=info\n")
        .write("apps/web.yaml", &config_map("web", "web"));
    repo.commit_all("a dashboard");
    // The generated ConfigMaps' names, as `build` prints them.
    let names = |repo: &TestRepo| -> Vec<String> {
        let run = repo.run(&["build", "--format", "json"]);
        let doc: Value = serde_json::from_str(&run.stdout).unwrap();
        let objects = doc["objects"].as_array().unwrap();
        let names = objects.iter().filter_map(|o| o["name"].as_str());
        let mut names: Vec<String> = names
            .filter(|n| n.starts_with("dashboards-") || n.starts_with("env"))
            .map(str::to_string)
            .collect();
        names.sort();
        names
    };
    let before = names(&repo);
    assert_eq!(before.len(), 2, "{before:?}");
    assert_eq!(before[1], "env", "no hash without the suffix");
    assert_eq!(before[0].len(), "dashboards-".len() + 10, "{before:?}");

    repo.write("apps/web.env", "LEVEL=debug\n");
    let (code, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!(
        (code, doc["verdict"].as_str()),
        (0, Some("safe")),
        "{doc:#}"
    );

    repo.write("apps/dashboards/board.json", "{\"panels\": 2}\n");
    let (code, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!(
        (code, doc["verdict"].as_str()),
        (1, Some("deletes")),
        "{doc:#}"
    );
    let rules: Vec<(String, &str, &str)> = deletions(&doc)
        .iter()
        .map(|d| {
            (
                deletion_id(d),
                d["rule"].as_str().unwrap(),
                d["data"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rules,
        [(
            format!("ConfigMap/web/{}", before[0]),
            "identity-changed",
            "none"
        )],
        "{doc:#}"
    );
    let after = names(&repo);
    assert_ne!(after, before);
    let reason = deletions(&doc)[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains(&format!("ConfigMap/web/{}", after[0])) && reason.contains("hash suffix"),
        "{reason}"
    );
}

/// A component built into every namespace's folder (an Alert in each): removing one folder
/// takes its copy out of the build, and Flux prunes it. The copy the other folder builds from
/// the same file and document was there before: the removed one is not renamed into it
/// (an identity change needs an object the old revision lacks; kustomize-controller's garbage
/// collection deletes what leaves the inventory, whatever else shares its file).
#[test]
fn an_object_leaving_a_shared_component_is_not_renamed_into_a_copy_that_stays() {
    let repo = lab();
    repo.write(
        "apps/kustomization.yaml",
        "resources: [./media, ./backup]\n",
    )
    .write(
        "components/alerts/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [alert.yaml]\n",
    )
    .write(
        "components/alerts/alert.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: alertmanager\ndata:\n  a: b\n",
    );
    for ns in ["media", "backup"] {
        repo.write(
            &format!("apps/{ns}/kustomization.yaml"),
            &format!(
                "namespace: {ns}\ncomponents: [../../components/alerts]\nresources: [web.yaml]\n"
            ),
        )
        .write(&format!("apps/{ns}/web.yaml"), &config_map("web", ns));
    }
    repo.commit_all("two namespaces with alerts");
    repo.write("apps/kustomization.yaml", "resources: [./media]\n");
    repo.remove("apps/backup/kustomization.yaml");
    repo.remove("apps/backup/web.yaml");
    let (code, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!(
        (code, doc["verdict"].as_str()),
        (1, Some("deletes")),
        "{doc}"
    );
    let rules: Vec<(String, &str)> = deletions(&doc)
        .iter()
        .map(|d| (deletion_id(d), d["rule"].as_str().unwrap()))
        .collect();
    assert_eq!(
        rules,
        [
            ("ConfigMap/backup/alertmanager".to_string(), "left-build"),
            ("ConfigMap/backup/web".to_string(), "left-build"),
        ],
        "{doc}"
    );
}

/// A Flux Operator ResourceSet makes objects from its inputs and templates, and the operator
/// applies and prunes them itself (its own inventory): dropping a HelmRelease from its
/// `resources` uninstalls the release. Without a flux-operator to render it (the tests name
/// none, `common::fluxwave`), a change that touches it is "incomplete", never "safe"; with
/// one, the release's deletion is judged (tests/cli/resource_set.rs).
#[test]
fn a_change_to_a_resource_set_is_not_judged_safe() {
    let repo = lab();
    let set = |releases: &[&str]| {
        let mut text = String::from("apiVersion: fluxcd.controlplane.io/v1\nkind: ResourceSet\nmetadata:\n  name: databases\n  namespace: apps\nspec:\n  resources:\n");
        for r in releases {
            text.push_str(&format!("    - apiVersion: helm.toolkit.fluxcd.io/v2\n      kind: HelmRelease\n      metadata: {{name: {r}, namespace: apps}}\n      spec:\n        chartRef: {{kind: OCIRepository, name: postgres}}\n"));
        }
        text
    };
    repo.write("apps/set.yaml", &set(&["pg-a", "pg-b"]))
        .write("apps/web.yaml", &config_map("web", "apps"));
    repo.commit_all("a ResourceSet of two releases");
    repo.write("apps/set.yaml", &set(&["pg-a"]));
    let (code, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!(
        (code, doc["verdict"].as_str()),
        (1, Some("incomplete")),
        "{doc}"
    );
    assert_eq!(incomplete(&doc), ["apps/databases"], "{doc}");
    assert!(
        doc["incomplete"]
            .to_string()
            .contains("cannot run flux-operator"),
        "{doc}"
    );
}

/// Two Kustomizations that both apply one claim (a `double-owner` error) each take its
/// ownership labels when they apply it, and kustomize-controller prunes only what is labelled
/// for the pruning Kustomization (`ssa.DeleteOptions.Inclusions`, fluxcd/pkg
/// `ssa/manager_delete.go`). The second owner that stops building it deletes it if it applied
/// it last, which nothing before the merge tells: the data may go, never "safe".
#[test]
fn a_second_owner_that_stops_building_a_claim_may_delete_it() {
    let pvc = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\n  namespace: web\nspec:\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 1Gi}}\n";
    let both = format!(
        "{}---\n{}",
        ks("apps", "./apps", &[]),
        ks("extra", "./extra", &[])
    );
    let repo = lab();
    repo.write("deploy/lab/apps.yaml", &both)
        .write("apps/pvc.yaml", pvc)
        .write(
            "extra/kustomization.yaml",
            "resources: [../apps/pvc.yaml, cm.yaml]\n",
        )
        .write("extra/cm.yaml", &config_map("extra", "web"));
    repo.commit_all("two owners of one claim");
    // The second owner stops building it, and prunes.
    repo.write("extra/kustomization.yaml", "resources: [cm.yaml]\n");
    let (code, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!(
        (code, doc["verdict"].as_str()),
        (1, Some("deletes")),
        "{doc}"
    );
    let d = &deletions(&doc)[0];
    assert_eq!(
        (
            deletion_id(d).as_str(),
            d["rule"].as_str(),
            d["stateful"].as_bool(),
            d["owner"].as_str()
        ),
        (
            "PersistentVolumeClaim/web/data",
            Some("double-owner-pruned"),
            Some(true),
            Some("Kustomization/flux-system/extra")
        ),
        "{doc}"
    );
    // The second owner removed, its finalizer deleting what it applied: the same.
    repo.write("deploy/lab/apps.yaml", &ks("apps", "./apps", &[]));
    repo.write(
        "extra/kustomization.yaml",
        "resources: [../apps/pvc.yaml, cm.yaml]\n",
    );
    let (_, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert!(
        deletions(&doc)
            .iter()
            .any(|d| deletion_id(d) == "PersistentVolumeClaim/web/data"
                && d["rule"] == "double-owner-pruned"),
        "{doc}"
    );
    // Both keep building it: nothing is deleted.
    repo.write("deploy/lab/apps.yaml", &both);
    let (code, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!((code, doc["verdict"].as_str()), (0, Some("safe")), "{doc}");
}
