//! How fluxwave finds each Flux environment and its root Kustomization on layouts beyond
//! `clusters/<env>`: a hub that applies its spokes to remote clusters, a root written outside
//! a `flux-system` folder. Real git repositories made from the fixtures under
//! `tests/fixtures/roots/`.

use serde_json::Value;

use crate::common::{cutover_json, deletion_id, deletions, TestRepo};

/// A kustomization.yaml listing `resources`.
fn kustomization(resources: &[&str]) -> String {
    let list: String = resources.iter().map(|r| format!("  - {r}\n")).collect();
    format!("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n{list}")
}

fn deleted(doc: &Value) -> Vec<String> {
    deletions(doc).iter().map(deletion_id).collect()
}

/// The hub-and-spoke fixture, committed.
fn hub_spoke() -> TestRepo {
    let repo = TestRepo::fixture("roots/hub-spoke");
    repo.commit_all("hub and spokes");
    repo
}

/// flux2's bootstrap (`pkg/manifestgen/sync`, `Generate`) writes the root GitRepository and
/// Kustomization to `<path>/<namespace>/gotk-sync.yaml` with `spec.path: ./<path>`: here
/// `./hub`. The spokes' folders under `clusters/` are applied by the hub's Kustomizations
/// (to other clusters): no root is bootstrapped there, so they are no environments.
#[test]
fn a_hub_is_the_one_environment_and_its_spokes_are_not() {
    let repo = hub_spoke();
    let (code, doc) = cutover_json(&repo, &["--from", "HEAD", "--to", "HEAD"]);
    assert_eq!(doc["environments"], serde_json::json!(["hub"]), "{doc}");
    assert_eq!((code, doc["verdict"].as_str()), (0, Some("safe")), "{doc}");
    // Removing a spoke removes its Kustomization from the hub's build: kustomize-controller
    // prunes it (prune: true), and its finalizer deletes what it applied.
    repo.remove("hub/production.yaml");
    let (code, doc) = cutover_json(&repo, &["--from", "HEAD"]);
    assert_eq!(
        (code, doc["verdict"].as_str()),
        (1, Some("deletes")),
        "{doc}"
    );
    let gone = deleted(&doc);
    for id in [
        "PersistentVolumeClaim/web/production-data",
        "ConfigMap/web/production-web",
        "Namespace//production",
    ] {
        assert!(gone.contains(&id.to_string()), "{id} in {gone:?}");
    }
}

/// The root as `flux create source git flux-system` and `flux create kustomization
/// flux-system --path=./hub` write it with `--export` (what the hub-and-spoke example's
/// script applies by hand), kept in `hub/flux-system.yaml`: a GitRepository and a
/// Kustomization reading it, in a folder that Kustomization applies, is a root wherever the
/// file is.
#[test]
fn a_root_written_outside_a_flux_system_folder_is_found() {
    let repo = TestRepo::fixture("roots/hub-spoke");
    let sync = repo.read("hub/flux-system/gotk-sync.yaml");
    std::fs::remove_dir_all(repo.path().join("hub/flux-system")).unwrap();
    repo.write("hub/flux-system.yaml", &sync);
    repo.commit_all("the hub's root exported by flux create");
    repo.remove("hub/production.yaml");
    let (code, doc) = cutover_json(&repo, &["--from", "HEAD"]);
    assert_eq!(doc["environments"], serde_json::json!(["hub"]), "{doc}");
    assert_eq!(
        (code, doc["verdict"].as_str()),
        (1, Some("deletes")),
        "{doc}"
    );
    assert!(
        deleted(&doc).contains(&"PersistentVolumeClaim/web/production-data".to_string()),
        "{doc}"
    );
}

/// Bootstrap's documented customisation: `patches` in `clusters/<c>/flux-system/
/// kustomization.yaml` targeting the root GitRepository or Kustomization. The root applies
/// `./clusters/<c>`, which builds that kustomization: the objects the cluster holds, and
/// that source-controller and kustomize-controller reconcile, are the patched ones.
fn patched_root() -> TestRepo {
    let repo = TestRepo::empty();
    let sync = "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 1m0s\n  ref:\n    branch: main\n  url: ssh://git@example.org/acme/fleet\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m0s\n  path: ./clusters/prod\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n";
    repo.write("clusters/prod/flux-system/gotk-sync.yaml", sync)
        .write(
            "clusters/prod/flux-system/kustomization.yaml",
            &kustomization(&["gotk-sync.yaml"]),
        )
        .write(
            "clusters/prod/apps.yaml",
            &crate::common::flux_ks("apps", "./apps", &[]),
        )
        .write("apps/web/config.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: web\ndata:\n  a: b\n")
        .write("apps/db/data.yaml", "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\n  namespace: db\nspec:\n  resources:\n    requests:\n      storage: 1Gi\n");
    repo.commit_all("bootstrap");
    repo
}

/// A patch that adds `/apps/db` to the root GitRepository's `spec.ignore`: source-controller
/// leaves those files out of the artifact, the `apps` build no longer has the PVC, and
/// kustomize-controller prunes it (prune: true).
#[test]
fn a_patch_of_the_root_source_in_flux_system_changes_what_flux_builds() {
    let repo = patched_root();
    repo.write(
        "clusters/prod/flux-system/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - gotk-sync.yaml\npatches:\n  - target:\n      kind: GitRepository\n      name: flux-system\n    patch: |\n      - op: add\n        path: /spec/ignore\n        value: |\n          /apps/db\n",
    );
    let (code, doc) = cutover_json(&repo, &["--from", "HEAD"]);
    assert_eq!(
        (code, doc["verdict"].as_str()),
        (1, Some("deletes")),
        "{doc}"
    );
    assert_eq!(deleted(&doc), ["PersistentVolumeClaim/db/data"], "{doc}");
}

/// A patch that sets `prune: false` on the root Kustomization, merged before: the root the
/// cluster holds does not prune, so removing `apps` from its build orphans it
/// (kustomize-controller prunes only when the in-cluster `spec.prune` is true), and its
/// finalizer deletes nothing.
#[test]
fn a_patch_of_the_root_kustomization_in_flux_system_is_the_root() {
    let repo = patched_root();
    repo.write(
        "clusters/prod/flux-system/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - gotk-sync.yaml\npatches:\n  - target:\n      kind: Kustomization\n      name: flux-system\n    patch: |\n      - op: replace\n        path: /spec/prune\n        value: false\n",
    );
    repo.commit_all("the root does not prune");
    repo.remove("clusters/prod/apps.yaml");
    let (code, doc) = cutover_json(&repo, &["--from", "HEAD"]);
    assert_eq!((code, doc["verdict"].as_str()), (0, Some("safe")), "{doc}");
}

/// `--env NAME=PATH` names the environment for `build` and `diff` as it does for `cutover`:
/// a layout discovery does not read is still built.
#[test]
fn build_and_diff_take_an_environment_by_its_entry() {
    let repo = TestRepo::empty();
    repo.write(
        "deploy/apps.yaml",
        &crate::common::flux_ks("apps", "./apps", &[]),
    )
    .write("apps/web.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: web\ndata:\n  a: b\n");
    repo.commit_all("no entry discovery reads");
    let none = repo.run(&["build"]);
    assert_eq!(none.code, 2, "{}", none.stdout);
    let run = repo.run(&["build", "--env", "lab=./deploy/", "--format", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["environments"], serde_json::json!(["lab"]));
    let objects: Vec<(&str, &str)> = doc["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["kind"].as_str().unwrap(),
                o["environment"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(objects, [("ConfigMap", "lab"), ("Kustomization", "lab")]);
    // NAME picks one of those NAME=PATH gives.
    let run = repo.run(&["build", "--env", "lab=deploy", "--env", "lab"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = repo.run(&["build", "--env", "lab=deploy", "--env", "dev"]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(run.stderr.contains("no such environment"), "{}", run.stderr);
    repo.remove("apps/web.yaml");
    let run = repo.run(&[
        "diff",
        "--from",
        "HEAD",
        "--env",
        "lab=deploy",
        "--format",
        "json",
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["changes"][0]["change"], "removed", "{doc}");
    assert_eq!(doc["changes"][0]["name"], "web", "{doc}");
    let bad = repo.run(&["diff", "--from", "HEAD", "--env", "lab"]);
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("NAME=PATH"), "{}", bad.stderr);
}

/// `cutover --each`: a step in which neither revision has an environment is reported as such
/// (verdict `no-environment`, not safe); the other steps are judged as usual. A range in
/// which no step has one is bad input, as a single comparison's is.
#[test]
fn a_step_without_an_environment_is_reported_as_such() {
    let repo = TestRepo::empty();
    repo.write("README.md", "fleet\n");
    repo.commit_all("start");
    let start = repo.git(&["rev-parse", "HEAD"]).trim().to_string();
    repo.write("README.md", "fleet, soon\n");
    repo.commit_all("no environment yet");
    let all_none = repo.run(&["cutover", "--each", &format!("{start}..HEAD")]);
    assert_eq!(all_none.code, 2, "{}", all_none.stdout);
    assert!(
        all_none.stderr.contains("no Flux environment found"),
        "{}",
        all_none.stderr
    );
    repo.write(
        "clusters/dev/kustomization.yaml",
        "resources: [web.yaml, db.yaml]\n",
    )
    .write(
        "clusters/dev/web.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: web\n",
    )
    .write(
        "clusters/dev/db.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: db\n  namespace: web\n",
    );
    repo.commit_all("an environment");
    repo.write("clusters/dev/kustomization.yaml", "resources: [web.yaml]\n");
    repo.commit_all("drop db");
    let range = format!("{start}..HEAD");
    let run = repo.run(&["cutover", "--each", &range, "--format", "json"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    let verdicts: Vec<&str> = doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["no-environment", "safe", "deletes"], "{doc}");
    assert!(doc["steps"][0]["no_environment"]
        .as_str()
        .unwrap()
        .contains("looked for"));
    assert_eq!(doc["steps"][2]["deletions"][0]["name"], "db", "{doc}");
    let text = repo.run(&["cutover", "--each", &range]);
    assert_eq!(text.code, 1);
    assert!(
        text.stdout
            .contains("no environment: nothing compared, not safe"),
        "{}",
        text.stdout
    );
}

/// Flux Operator's flux-instance HelmRelease with its values in `valuesFrom`: a ConfigMap
/// that the `configMapGenerator` of the release's folder makes of `helm/values.yaml`
/// (`values.yaml=./helm/values.yaml`, read at helm-controller's default `valuesKey`,
/// `values.yaml`). Its `instance.sync.path` names the environment, and the operator makes
/// the root (flux-operator's sync: a Kustomization named after the namespace, `prune:
/// true`, reading the GitRepository of the same name).
#[test]
fn a_flux_instance_whose_values_come_from_a_generated_config_map_names_its_environment() {
    let repo = TestRepo::fixture("roots/flux-instance-values");
    repo.commit_all("home-ops");
    repo.write(
        "kubernetes/main/apps/default/kustomization.yaml",
        "---\napiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n",
    );
    let (code, doc) = cutover_json(&repo, &["--from", "HEAD"]);
    assert_eq!(doc["environments"], serde_json::json!(["cluster"]), "{doc}");
    assert_eq!(
        (code, doc["verdict"].as_str()),
        (1, Some("deletes")),
        "{doc}"
    );
    assert_eq!(
        deleted(&doc),
        ["PersistentVolumeClaim/default/echo"],
        "{doc}"
    );
}

/// A FluxInstance syncing an OCI artifact that the repository's workflow pushes from
/// `kubernetes/` (`flux push artifact --path=./kubernetes`): its `sync.path` and every
/// `spec.path` reading the root's OCIRepository are folders of `kubernetes/`, and the
/// artifact holds all of that folder, the repository's own `.sourceignore` (outside it)
/// leaving nothing out. Removing the app's claim deletes it; without the workflow the one
/// folder holding `clusters/dev` is the artifact's.
#[test]
fn an_oci_root_pushed_from_a_folder_reads_its_paths_under_it() {
    let repo = TestRepo::fixture("roots/oci-root");
    repo.commit_all("a gitless fleet");
    let build = repo.run(&["build", "--format", "json"]);
    assert_eq!(build.code, 0, "{}", build.stderr);
    let doc: Value = serde_json::from_str(&build.stdout).unwrap();
    assert_eq!(doc["environments"], serde_json::json!(["dev"]), "{doc}");
    let owned = |name: &str| {
        doc["objects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["name"] == name)
            .map(|o| o["owner"].as_str().unwrap_or("").to_string())
    };
    assert_eq!(owned("db").as_deref(), Some("flux-system/apps"), "{doc}");
    assert_eq!(
        owned("cluster-settings").as_deref(),
        Some("flux-system/flux-system"),
        "{doc}"
    );
    repo.write("kubernetes/apps/kustomization.yaml", &kustomization(&[]));
    let (code, doc) = cutover_json(&repo, &["--from", "HEAD"]);
    assert_eq!(
        (code, doc["verdict"].as_str()),
        (1, Some("deletes")),
        "{doc}"
    );
    assert_eq!(deleted(&doc), ["PersistentVolumeClaim/default/db"], "{doc}");

    std::fs::remove_dir_all(repo.path().join(".github")).unwrap();
    repo.commit_all("the workflow moves elsewhere");
    let (code, doc) = cutover_json(&repo, &["--from", "HEAD~1", "--to", "HEAD"]);
    assert_eq!(doc["environments"], serde_json::json!(["dev"]), "{doc}");
    assert_eq!(
        deleted(&doc),
        ["PersistentVolumeClaim/default/db"],
        "{doc} {code}"
    );
}

/// `init` on a hub: the one environment is the hub (not its spokes), and once listed in
/// fluxwave.yaml it keeps the root written for it, wherever under its entry that is.
#[test]
fn init_lists_the_hub_alone_and_the_listed_hub_keeps_its_root() {
    let repo = TestRepo::fixture("roots/hub-spoke");
    repo.commit_all("hub and spokes");
    let run = repo.run(&["init"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let config = repo.read("fluxwave.yaml");
    assert!(
        config.contains("- name: hub\n      path: hub\n"),
        "{config}"
    );
    assert!(!config.contains("path: clusters/"), "{config}");
    // The root exported by `flux create` into hub/flux-system.yaml, with a spec.ignore that
    // hides the production spoke's data: the listed environment reads it.
    let sync = repo.read("hub/flux-system/gotk-sync.yaml").replace(
        "  url: ssh://git@example.org/acme/fleet\n",
        "  url: ssh://git@example.org/acme/fleet\n  ignore: |\n    /clusters/production/data.yaml\n",
    );
    std::fs::remove_dir_all(repo.path().join("hub/flux-system")).unwrap();
    repo.write("hub/flux-system.yaml", &sync);
    repo.write(
        "clusters/production/kustomization.yaml",
        &kustomization(&["web.yaml"]),
    );
    repo.commit_all("the hub's root exported, ignoring a file");
    // The production spoke now lists data.yaml, which the root's spec.ignore hides from the
    // artifact: Flux's build of the spoke fails on the missing file and applies nothing of
    // it, which the verdict says. Read without the root's ignore (an assumed root), the file
    // would be there and the claim applied.
    repo.write(
        "clusters/production/kustomization.yaml",
        &kustomization(&["web.yaml", "data.yaml"]),
    );
    let (code, doc) = cutover_json(&repo, &["--from", "HEAD"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["environments"], serde_json::json!(["hub"]), "{doc}");
    assert_eq!(doc["verdict"], "safe", "{doc}");
    let why = doc["warnings"].to_string();
    assert!(
        why.contains("build failure") && why.contains("resource `data.yaml` not found"),
        "{why}"
    );
}

/// Each spoke applies the same objects (a Namespace, a claim, a ClusterRoleBinding) to its
/// own cluster: kustomize-controller applies and prunes a Kustomization with
/// `spec.kubeConfig` through the client that kubeConfig gives
/// (internal/controller/kustomization_controller.go: `runtimeClient.WithKubeConfig(
/// obj.Spec.KubeConfig, ..., obj.GetNamespace(), ...)` for apply and for the finalizer), so
/// each target cluster has its own copy: no two owners of one object, and removing one spoke
/// deletes its copy and leaves the other's.
#[test]
fn each_spoke_is_its_own_cluster() {
    let repo = TestRepo::fixture("roots/hub-spoke");
    let shared = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: db\n---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: shared-data\n  namespace: db\nspec:\n  resources:\n    requests:\n      storage: 1Gi\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: flux-cluster-admin\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: cluster-admin\nsubjects:\n  - kind: ServiceAccount\n    name: flux\n    namespace: flux-system\n";
    for spoke in ["production", "staging"] {
        repo.write(&format!("clusters/{spoke}/shared.yaml"), shared)
            .write(
                &format!("clusters/{spoke}/kustomization.yaml"),
                &kustomization(&["web.yaml", "data.yaml", "shared.yaml"]),
            );
    }
    repo.commit_all("both spokes get the shared objects");
    let check = repo.run(&["check", "--format", "json"]);
    assert_eq!(check.code, 0, "{}{}", check.stdout, check.stderr);
    assert!(!check.stdout.contains("double-owner"), "{}", check.stdout);
    // `build` names the cluster of each spoke's copy.
    let build = repo.run(&["build"]);
    assert!(
        build.stdout.contains("# owner: staging/apps, environment: hub, file: clusters/staging/shared.yaml, cluster: Secret/staging/cluster-kubeconfig"),
        "{}",
        build.stdout
    );
    repo.remove("hub/staging.yaml");
    let (code, doc) = cutover_json(&repo, &["--from", "HEAD"]);
    assert_eq!(code, 1, "{doc}");
    let gone: Vec<(String, &str)> = deletions(&doc)
        .iter()
        .map(|d| (deletion_id(d), d["cluster"].as_str().unwrap_or("")))
        .collect();
    let staging = "Secret/staging/cluster-kubeconfig";
    for id in [
        "PersistentVolumeClaim/db/shared-data",
        "Namespace//db",
        "ClusterRoleBinding//flux-cluster-admin",
    ] {
        assert!(
            gone.contains(&(id.to_string(), staging)),
            "{id} in {gone:?}"
        );
    }
    // The production spoke's copies stay, and so does anything of the hub's own.
    assert!(
        !gone.iter().any(|(_, c)| c.contains("production")),
        "{gone:?}"
    );
    assert!(
        gone.contains(&("Namespace//staging".to_string(), "")),
        "{gone:?}"
    );
}

/// Before `flux bootstrap --path=hub` writes it, a hub's sync file is the placeholder its
/// repository keeps (comments only): the hub is still the environment, its root assumed as
/// bootstrap writes it (flux2 `pkg/manifestgen/sync`: `flux-system`, `prune: true`, at
/// `./hub`), and its spokes are still no roots of their own.
#[test]
fn a_hub_whose_sync_file_is_a_placeholder_is_the_environment() {
    let repo = TestRepo::fixture("roots/hub-spoke");
    repo.write(
        "hub/flux-system/gotk-sync.yaml",
        "# This file will be generated automatically by flux bootstrap.\n",
    );
    repo.commit_all("hub before bootstrap");
    repo.remove("hub/production.yaml");
    let (code, doc) = cutover_json(&repo, &["--from", "HEAD"]);
    assert_eq!(doc["environments"], serde_json::json!(["hub"]), "{doc}");
    assert_eq!(code, 1, "{doc}");
    assert!(
        deleted(&doc).contains(&"PersistentVolumeClaim/web/production-data".to_string()),
        "{doc}"
    );
}

/// A CRD that one spoke's removal deletes takes the custom resources of that spoke's cluster
/// with it, and none of the other spoke's: the API server of each cluster garbage-collects
/// its own.
#[test]
fn a_crd_deleted_in_one_spoke_takes_only_that_spokes_resources() {
    let repo = TestRepo::fixture("roots/hub-spoke");
    let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {kind: Widget, plural: widgets}\n";
    let widget = |name: &str| {
        format!("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: {name}\n  namespace: web\n")
    };
    repo.write("clusters/staging/crd.yaml", crd)
        .write("clusters/staging/widget.yaml", &widget("staging-widget"))
        .write(
            "clusters/staging/kustomization.yaml",
            &kustomization(&["web.yaml", "data.yaml", "crd.yaml", "widget.yaml"]),
        )
        .write(
            "clusters/production/widget.yaml",
            &widget("production-widget"),
        )
        .write(
            "clusters/production/kustomization.yaml",
            &kustomization(&["web.yaml", "data.yaml", "widget.yaml"]),
        );
    repo.commit_all("a CRD in staging, widgets in both");
    // staging stops applying its CRD: kustomize-controller prunes it there.
    repo.remove("clusters/staging/crd.yaml");
    repo.write(
        "clusters/staging/kustomization.yaml",
        &kustomization(&["web.yaml", "data.yaml", "widget.yaml"]),
    );
    let (code, doc) = cutover_json(&repo, &["--from", "HEAD"]);
    assert_eq!(code, 1, "{doc}");
    let gone: Vec<(String, String, &str)> = deletions(&doc)
        .iter()
        .map(|d| {
            let rule = d["rule"].as_str().unwrap().to_string();
            (deletion_id(d), rule, d["cluster"].as_str().unwrap_or(""))
        })
        .collect();
    let staging = "Secret/staging/cluster-kubeconfig";
    assert!(
        gone.contains(&(
            "Widget/web/staging-widget".into(),
            "crd-deleted".into(),
            staging
        )),
        "{gone:?}"
    );
    assert!(
        !gone
            .iter()
            .any(|(id, _, _)| id.contains("production-widget")),
        "{gone:?}"
    );
}

/// A spoke's Kustomization that gains `spec.kubeConfig` sends what it applies, a Flux
/// Kustomization among it, to the spoke: that one is the spoke's Flux's to reconcile from
/// then on. A history's step replays the unchanged build of the folder (a build's spec does
/// not hold the kubeConfig), and still reads the Kustomization it declares as the spoke's:
/// `--each` says what `--from`/`--to` says.
#[test]
fn a_kubeconfig_added_moves_what_a_replayed_build_declares() {
    let repo = TestRepo::fixture("roots/hub-spoke");
    let inner = "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: inner\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./inner\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n";
    let production = repo.read("hub/production.yaml");
    repo.write(
        "hub/production.yaml",
        &production.replace(
            "  kubeConfig:\n    secretRef:\n      name: cluster-kubeconfig\n",
            "",
        ),
    )
    .write("clusters/production/inner.yaml", inner)
    .write(
        "clusters/production/kustomization.yaml",
        &kustomization(&["web.yaml", "data.yaml", "inner.yaml"]),
    )
    .write(
        "inner/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: inner\n  namespace: web\n",
    );
    repo.commit_all("production applied by the hub itself");
    repo.write("hub/production.yaml", &production);
    repo.commit_all("production applied to its own cluster");
    let (_, one) = cutover_json(&repo, &["--from", "HEAD~1", "--to", "HEAD"]);
    let (_, each) = cutover_json(&repo, &["--each", "HEAD~1..HEAD"]);
    let step = &each["steps"][0];
    assert_eq!(step["verdict"], one["verdict"], "{one}\n{step}");
    assert_eq!(step["incomplete"], one["incomplete"], "{one}\n{step}");
    assert_eq!(step["deletions"], one["deletions"], "{one}\n{step}");
    assert_eq!(one["verdict"], "incomplete", "{one}");
    assert!(
        one["incomplete"].to_string().contains("another cluster"),
        "{one}"
    );
}

/// A Kustomization given a `spec.kubeConfig` applies its objects in the spoke from then on,
/// and the copies it applied in the hub are not deleted: kustomize-controller prunes with the
/// new cluster's client what its inventory (ids without a cluster) no longer lists
/// (`KustomizationReconciler.reconcile`: `inventory.Diff`, then `prune` with the
/// `resourceManager` of `WithKubeConfig`), and the ids are the same. So the claim left in the
/// hub is orphaned, not deleted, and the move is not a deletion; an object that also leaves
/// the build in that change is not deleted in the hub either. Removed again, the
/// kubeConfig leaves the spoke's copies in the same way.
#[test]
fn a_kubeconfig_changed_deletes_nothing_in_the_cluster_left() {
    let repo = TestRepo::fixture("roots/hub-spoke");
    let production = repo.read("hub/production.yaml");
    let local = production.replace(
        "  kubeConfig:\n    secretRef:\n      name: cluster-kubeconfig\n",
        "",
    );
    repo.write("hub/production.yaml", &local);
    repo.commit_all("production applied by the hub itself");
    repo.write("hub/production.yaml", &production).write(
        "clusters/production/kustomization.yaml",
        &kustomization(&["data.yaml"]),
    );
    let deletes_nothing = |repo: &TestRepo| {
        let (code, doc) = cutover_json(repo, &["--from", "HEAD"]);
        assert_eq!(doc["deletions"], serde_json::json!([]), "{doc:#}");
        assert_eq!(
            (code, doc["verdict"].as_str()),
            (0, Some("safe")),
            "{doc:#}"
        );
    };
    deletes_nothing(&repo);
    repo.commit_all("production applied to its own cluster");
    repo.write("hub/production.yaml", &local);
    deletes_nothing(&repo);
    // The spoke's copy still leaves the build of an owner that stays in its cluster.
    repo.write("hub/production.yaml", &production).write(
        "clusters/production/kustomization.yaml",
        &kustomization(&[]),
    );
    let (_, doc) = cutover_json(&repo, &["--from", "HEAD"]);
    let gone: Vec<(String, &Value)> = deletions(&doc)
        .iter()
        .map(|d| (deletion_id(d), &d["cluster"]))
        .collect();
    assert_eq!(
        gone,
        [(
            "PersistentVolumeClaim/web/production-data".to_string(),
            &Value::from("Secret/production/cluster-kubeconfig")
        )]
    );
}

/// The runbook's commands about a spoke's objects say which kubeconfig they run with: the
/// hub's kubectl context would get or annotate nothing there (or another cluster's object of
/// the same name).
#[test]
fn the_runbook_runs_a_spokes_commands_with_its_kubeconfig() {
    let repo = TestRepo::fixture("roots/hub-spoke");
    repo.commit_all("hub and spokes");
    repo.remove("hub/production.yaml");
    let (_, doc) = cutover_json(&repo, &["--from", "HEAD"]);
    let lines: Vec<&str> = doc["runbook"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["lines"].as_array().unwrap())
        .filter_map(Value::as_str)
        .collect();
    let about_the_claim: Vec<&&str> = lines
        .iter()
        .filter(|l| l.starts_with("kubectl -n web "))
        .collect();
    assert!(about_the_claim.len() >= 3, "{lines:#?}");
    for l in about_the_claim {
        assert!(
            l.ends_with("with the kubeconfig in Secret/production/cluster-kubeconfig"),
            "{l}"
        );
    }
    assert!(
        lines.contains(&"back up what holds data (Velero, Longhorn, a database dump): namespaces web (cluster Secret/production/cluster-kubeconfig)"),
        "{lines:#?}"
    );
}

/// A root written in the repository (`kubernetes/flux/config/cluster.yaml`: GitRepository
/// `home-kubernetes` and the Kustomization that applies `kubernetes/flux`) and a Flux
/// Operator's sync of `kubernetes/flux/cluster` (GitRepository `flux-system`) inside its
/// entry are two roots of one cluster: the outer build applies the inner folder, and a
/// Kustomization reading either source reads this repository (what Flux builds, given both
/// sources, is the oracle's: `tests/fixtures/flux/nested-roots` in the differential test).
/// Taken apart, each root's apps read a source the other builds: every app was an
/// `unknown-source` error and no removal was judged.
#[test]
fn a_root_inside_another_roots_entry_is_the_same_cluster() {
    let repo = TestRepo::fixture("flux/nested-roots");
    repo.commit_all("two roots");
    let check = repo.run(&["check", "--format", "json"]);
    let doc: Value = serde_json::from_str(&check.stdout).unwrap();
    assert_eq!(
        (check.code, &doc["errors"], &doc["environments"]),
        (
            0,
            &serde_json::json!(0),
            &serde_json::json!([{
                "name": "flux",
                "path": "kubernetes/flux",
                "kustomizations": 3,
                "root": "kubernetes/flux/config/cluster.yaml",
                "sources": [
                    "GitRepository/flux-system/home-kubernetes",
                    "GitRepository/flux-system/flux-system"
                ]
            }])
        ),
        "{doc}"
    );
    repo.write("kubernetes/apps/kustomization.yaml", &kustomization(&[]));
    let (code, doc) = cutover_json(&repo, &["--from", "HEAD"]);
    assert_eq!(
        (code, doc["verdict"].as_str()),
        (1, Some("deletes")),
        "{doc}"
    );
    assert_eq!(
        deleted(&doc),
        ["PersistentVolumeClaim/default/echo"],
        "{doc}"
    );
}
