//! What a Flux Kustomization builds, held against the real kustomize: each case of
//! `tests/fixtures/build/` is a repository (`repo/`) whose Flux Kustomization `app` has a spec
//! that adds to the kustomization at its `spec.path`, and `flux/kustomization.yaml`, the
//! kustomization Flux's generator writes there for that spec (fluxcd/pkg
//! `kustomize/kustomize_generator.go`, `Generator.GenerateManifest`), written out by hand.
//! fluxwave builds the repository; `kubectl kustomize` builds Flux's kustomization; the two
//! object sets must be one. A case with `flux/fails` fails in both: its first line is in
//! kustomize's error, its second in fluxwave's.

use std::path::Path;

use crate::common::{fixtures, objects, TestRepo};
use fluxwave::testing::flux::inventory::{build, Environment, Inventory};
use fluxwave::testing::tree::FileTree;

fn cases() -> Vec<String> {
    let mut cases: Vec<String> = std::fs::read_dir(fixtures().join("build"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    cases.sort();
    cases
}

/// `spec.path` of the Flux Kustomization of a case, as written (`./apps/web`).
fn spec_path(repo: &TestRepo) -> String {
    let ks = repo.read("clusters/dev/ks.yaml");
    let line = ks
        .lines()
        .find_map(|l| l.trim().strip_prefix("path: "))
        .unwrap();
    line.trim_start_matches("./").to_string()
}

/// `kind/namespace/name` of every object the Kustomization `app` applies.
fn built_by_app(inv: &Inventory) -> Vec<String> {
    let mut ids: Vec<String> = inv
        .objects
        .iter()
        .filter(|(_, e)| e.owner.name == "app")
        .map(|(id, _)| format!("{}/{}/{}", id.kind, id.namespace, id.name))
        .collect();
    ids.sort();
    ids
}

fn kubectl_kustomize(dir: &Path) -> Result<String, String> {
    let out = std::process::Command::new("kubectl")
        .arg("kustomize")
        .arg(dir)
        .output()
        .expect("kubectl must be installed");
    if out.status.success() {
        Ok(String::from_utf8(out.stdout).unwrap())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn a_flux_kustomization_builds_what_kustomize_builds_of_the_kustomization_flux_writes() {
    let cases = cases();
    assert!(cases.len() >= 7, "{cases:?}");
    for case in cases {
        let dir = fixtures().join("build").join(&case);
        let repo = TestRepo::fixture(&format!("build/{case}/repo"));
        repo.commit_all(&case);
        let tree = FileTree::from_worktree(repo.path()).unwrap();
        let inv = build(
            &tree,
            &Environment::configured(&tree, "dev", "clusters/dev", "the test"),
        );
        let app = inv.owners.values().find(|o| o.id.name == "app").unwrap();

        // The kustomization Flux writes at spec.path, built by kustomize.
        let path = spec_path(&repo);
        let flux = std::fs::read_to_string(dir.join("flux/kustomization.yaml")).unwrap();
        repo.write(&format!("{path}/kustomization.yaml"), &flux);
        let theirs = kubectl_kustomize(&repo.path().join(&path));

        match std::fs::read_to_string(dir.join("flux/fails")) {
            Err(_) => {
                let theirs: Vec<String> =
                    objects(&theirs.unwrap_or_else(|e| panic!("{case}: {e}")))
                        .into_iter()
                        .map(|(id, _)| id)
                        .collect();
                assert!(app.built, "{case}: {:#?}", inv.warnings);
                assert_eq!(built_by_app(&inv), theirs, "{case}");
            }
            Ok(fails) => {
                let (kustomize_says, fluxwave_says) = fails.trim_end().split_once('\n').unwrap();
                let err = theirs.expect_err(&case);
                assert!(err.contains(kustomize_says), "{case}: {err}");
                assert!(!app.built, "{case}");
                assert!(built_by_app(&inv).is_empty(), "{case}");
                let failure = inv
                    .warnings
                    .iter()
                    .find(|w| w.feature == "build failure")
                    .unwrap_or_else(|| panic!("{case}: {:#?}", inv.warnings));
                assert!(
                    failure.message.contains(fluxwave_says),
                    "{case}: {}",
                    failure.message
                );
            }
        }
    }
}

/// A Kustomization whose folder keeps only a README and a template builds nothing: Flux
/// applies nothing and prunes all it applied before (kustomize-controller
/// `KustomizationReconciler.reconcile`: the new inventory is empty, `inventory.Diff` of the
/// old one against it is every object, and `prune` deletes them).
#[test]
fn emptying_a_folder_prunes_what_it_applied() {
    let repo = TestRepo::fixture("build/no-manifests/repo");
    repo.write(
        "apps/retired/app.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: default\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: worker\n  namespace: default\n",
    );
    repo.commit_all("an app");
    repo.remove("apps/retired/app.yaml");
    repo.commit_all("retire it; keep its README and template");
    let run = repo.run(&[
        "cutover", "--from", "HEAD~1", "--to", "HEAD", "--format", "json",
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let deleted: Vec<String> = doc["deletions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| format!("{}/{} {}", d["kind"], d["name"], d["rule"]).replace('"', ""))
        .collect();
    assert_eq!(
        deleted,
        [
            "ConfigMap/settings left-build",
            "Deployment/worker left-build"
        ]
    );
    // The folder itself gone is another matter: Flux cannot build the path, and deletes
    // nothing (`kustomization path not found`).
    repo.remove("apps/retired/README.md");
    repo.remove("apps/retired/values.yaml.j2");
    repo.commit_all("remove the folder");
    let run = repo.run(&[
        "cutover", "--from", "HEAD~2", "--to", "HEAD", "--format", "json",
    ]);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["deletions"], serde_json::json!([]), "{}", run.stdout);
}
