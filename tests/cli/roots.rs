//! How fluxwave finds each Flux environment and its root Kustomization on layouts beyond
//! `clusters/<env>`: a hub that applies its spokes to remote clusters, a root written outside
//! a `flux-system` folder. Real git repositories made from the fixtures under
//! `tests/fixtures/roots/`.

use serde_json::Value;

use crate::common::{cutover_json, deletion_id, deletions, TestRepo};

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
