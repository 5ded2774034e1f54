//! `check` on builds that fail (`build-failed`): a Kustomization of examples/homelab that
//! lists a file that does not exist, an environment whose root cannot be built (the cause,
//! not the noise that follows from it), the siblings of a failing component, a substitution
//! that cannot be parsed and a path that does not exist (reported once, as `missing-path`);
//! and `check` on long `dependsOn` chains.

use serde_json::Value;

use crate::common::{flux_ks, TestRepo};

/// A finding as (code, path, line, message).
type Found = (String, String, Option<u64>, String);

/// `check --format json`: its exit code and the findings.
fn findings(repo: &TestRepo) -> (i32, Vec<Found>) {
    let run = repo.run(&["check", "--format", "json"]);
    let doc: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", run.stdout, run.stderr));
    let found = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["code"].as_str().unwrap().to_string(),
                f["path"].as_str().unwrap().to_string(),
                f["line"].as_u64(),
                f["message"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    (run.code, found)
}

fn codes(found: &[Found]) -> Vec<&str> {
    found.iter().map(|f| f.0.as_str()).collect()
}

/// examples/homelab once applied: `check` is clean.
fn applied_homelab() -> TestRepo {
    let repo = TestRepo::example("homelab");
    assert_eq!(repo.run(&["apply"]).code, 0);
    let (code, found) = findings(&repo);
    assert_eq!((code, codes(&found)), (0, vec![]));
    repo
}

#[test]
fn a_kustomization_listing_a_missing_file_fails_check() {
    let repo = applied_homelab();
    let k = repo.read("platform-config/kustomization.yaml");
    repo.write(
        "platform-config/kustomization.yaml",
        &format!("{k}  - missing.yaml\n"),
    );
    let (code, found) = findings(&repo);
    assert_eq!(
        (code, codes(&found)),
        (1, vec!["build-failed"]),
        "{found:?}"
    );
    let (_, path, line, message) = &found[0];
    // Where the Kustomization is written, and where kustomize stops.
    assert_eq!(path, "clusters/base/platform-config.yaml");
    assert!(line.is_some(), "{found:?}");
    assert!(
        message.contains("`flux-system/platform-config`")
            && message.contains(
                "platform-config/kustomization.yaml:5: resource `missing.yaml` not found"
            ),
        "{message}"
    );
    let text = repo.run(&["check"]);
    assert_eq!(text.code, 1);
    assert!(
        text.stdout.contains("error[build-failed]"),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout.ends_with("1 error, 0 warnings\n"),
        "{}",
        text.stdout
    );
}

#[test]
fn a_root_that_fails_is_the_cause_not_its_noise() {
    // Without a catalog (the catalog lints stop at a root that cannot be built, exit 2).
    let repo = applied_homelab();
    repo.remove("fluxwave.yaml");
    std::fs::remove_dir_all(repo.path().join("catalog")).unwrap();
    let k = repo.read("clusters/dev/kustomization.yaml");
    repo.write(
        "clusters/dev/kustomization.yaml",
        &k.replace("  - ../base\n", "  - ../base\n  - missing.yaml\n"),
    );
    let (code, found) = findings(&repo);
    // Every image marker's policy is in the build that fails: no finding of them.
    assert_eq!(
        (code, codes(&found)),
        (1, vec!["build-failed"]),
        "{found:?}"
    );
    let (_, path, _, message) = &found[0];
    // Where the root is written (bootstrap's file), and where kustomize stops.
    assert_eq!(path, "clusters/dev/flux-system/gotk-sync.yaml");
    assert!(
        message
            .contains("the root Flux Kustomization `flux-system/flux-system` of environment `dev`")
            && message
                .contains("clusters/dev/kustomization.yaml:7: resource `missing.yaml` not found")
            && message.contains("nothing in it could be checked"),
        "{message}"
    );
}

#[test]
fn a_root_with_a_bootstrap_file_points_at_it() {
    let repo = TestRepo::fixture("check/build-failed");
    repo.write(
        "clusters/dev/kustomization.yaml",
        "resources:\n  - flux-system\n  - apps.yaml\n  - gone.yaml\n",
    );
    let (code, found) = findings(&repo);
    assert_eq!(
        (code, codes(&found)),
        (1, vec!["build-failed"]),
        "{found:?}"
    );
    let (_, path, _, message) = &found[0];
    assert_eq!(path, "clusters/dev/flux-system/gotk-sync.yaml");
    assert!(
        message.contains("clusters/dev/kustomization.yaml:4: resource `gone.yaml` not found"),
        "{message}"
    );
}

#[test]
fn a_dependency_in_a_failing_build_is_a_consequence() {
    // `infra` builds `db`; its build fails, so `app`'s dependency on `db` is not found.
    let repo = TestRepo::empty();
    repo.write(
        "clusters/dev/kustomization.yaml",
        "resources:\n  - infra.yaml\n  - app.yaml\n",
    )
    .write("clusters/dev/infra.yaml", &flux_ks("infra", "./infra", &[]))
    .write(
        "clusters/dev/app.yaml",
        &flux_ks("app", "./app", &["dependsOn:", "  - name: db"]),
    )
    .write(
        "infra/kustomization.yaml",
        "resources:\n  - db.yaml\n  - broken.yaml\n",
    )
    .write("infra/db.yaml", &flux_ks("db", "./db", &[]))
    .write("infra/broken.yaml", "apiVersion: v1\nkind: ConfigMap\n")
    .write(
        "db/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: db, namespace: db}\n",
    )
    .write(
        "app/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: app}\n",
    );
    let (code, found) = findings(&repo);
    assert_eq!(code, 1);
    assert_eq!(
        codes(&found),
        vec!["unknown-dependency", "build-failed"],
        "{found:?}"
    );
    assert!(
        found[0]
            .3
            .contains("unless it is in the build of `flux-system/infra`, which fails"),
        "{found:?}"
    );
    assert!(
        found[1]
            .3
            .contains("infra/broken.yaml: document 1 is not a Kubernetes object"),
        "{found:?}"
    );
}

#[test]
fn siblings_a_component_and_a_substitution_fail_and_a_missing_path_is_said_once() {
    let repo = TestRepo::empty();
    repo.write(
        "clusters/dev/kustomization.yaml",
        "resources:\n  - ks.yaml\n",
    )
    .write(
        "clusters/dev/ks.yaml",
        &[
            flux_ks("with-component", "./a", &[]),
            flux_ks(
                "substitutes",
                "./b",
                &["postBuild:", "  substitute: {X: x}"],
            ),
            flux_ks("nowhere", "./c", &[]),
        ]
        .join("---\n"),
    )
    .write(
        "a/kustomization.yaml",
        "resources:\n  - cm.yaml\ncomponents:\n  - ../gone-component\n",
    )
    .write(
        "a/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: a}\n",
    )
    // `${X` without its closing brace: Flux's envsubst cannot parse it.
    .write(
        "b/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: b}\ndata: {v: \"${X\"}\n",
    );
    let (code, found) = findings(&repo);
    assert_eq!(code, 1);
    assert_eq!(
        codes(&found),
        vec!["build-failed", "build-failed", "missing-path"],
        "{found:?}"
    );
    let messages: Vec<&str> = found.iter().map(|f| f.3.as_str()).collect();
    assert!(
        messages[0].contains("`flux-system/with-component`")
            && messages[0].contains("component `../gone-component` does not exist"),
        "{messages:?}"
    );
    assert!(
        messages[1].contains("`flux-system/substitutes`")
            && messages[1].contains("b/cm.yaml:4: ")
            && messages[1].contains("missing closing brace"),
        "{messages:?}"
    );
    assert!(
        messages[2].contains("`flux-system/nowhere`"),
        "{messages:?}"
    );
}

#[test]
fn a_long_dependency_chain_has_no_cycle() {
    // 2,000 Kustomizations, each depending on the one before (the last on the first makes
    // a cycle of them all): one finding, or none.
    let n = 2_000;
    let repo = TestRepo::empty();
    let mut files = String::from("resources:\n");
    for chunk in 0..n / 500 {
        let docs: Vec<String> = (chunk * 500..(chunk + 1) * 500)
            .map(|i| {
                let dep = if i == 0 {
                    String::new()
                } else {
                    format!("ks-{:04}", i - 1)
                };
                let extra: &[&str] = if dep.is_empty() {
                    &[]
                } else {
                    &["dependsOn:", &format!("  - name: {dep}")]
                };
                flux_ks(&format!("ks-{i:04}"), "./app", extra)
            })
            .collect();
        repo.write(
            &format!("clusters/dev/ks-{chunk}.yaml"),
            &docs.join("---\n"),
        );
        files.push_str(&format!("  - ks-{chunk}.yaml\n"));
    }
    repo.write("clusters/dev/kustomization.yaml", &files)
        .write("app/kustomization.yaml", "resources: []\n");
    let (code, found) = findings(&repo);
    assert_eq!((code, codes(&found)), (0, vec![]), "{found:?}");
    let first = repo.read("clusters/dev/ks-0.yaml");
    repo.write(
        "clusters/dev/ks-0.yaml",
        &first.replacen(
            "  interval: 10m\n",
            &format!(
                "  interval: 10m\n  dependsOn:\n    - name: ks-{:04}\n",
                n - 1
            ),
            1,
        ),
    );
    let (code, found) = findings(&repo);
    assert_eq!((code, codes(&found)), (1, vec!["dependency-cycle"]));
    // A dependant first: ks-0000 waits for ks-1999, which waits for ks-1998, ...
    let message = &found[0].3;
    assert!(
        message.contains(": flux-system/ks-0000 -> flux-system/ks-1999 -> flux-system/ks-1998 -> ")
            && message.contains("flux-system/ks-0001 -> flux-system/ks-0000;")
            && message.matches(" -> ").count() == n,
        "{}",
        &message[..200]
    );
}

#[test]
fn a_kustomizations_own_entries_are_named_as_its_own_not_the_specs() {
    // Flux appends `spec.components` and `spec.patches` after the kustomization's own
    // (fluxcd/pkg `Generator.WriteFile`): an own entry that fails is named in its file, and
    // one the spec appended is named in the Flux Kustomization.
    let repo = TestRepo::empty();
    repo.write("clusters/dev/kustomization.yaml", "resources: [app.yaml]\n")
        .write("clusters/dev/app.yaml", &flux_ks("app", "./app", &[]))
        .write(
            "app/kustomization.yaml",
            "resources: [cm.yaml]\ncomponents: [../nothere]\n",
        )
        .write(
            "app/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: default\n",
        );
    let (code, found) = findings(&repo);
    assert_eq!(
        (code, codes(&found)),
        (1, vec!["build-failed"]),
        "{found:?}"
    );
    let message = &found[0].3;
    assert!(
        message.contains("app/kustomization.yaml:2: components[0]: component `../nothere`"),
        "{message}"
    );
    assert!(!message.contains("spec.components"), "{message}");
}
