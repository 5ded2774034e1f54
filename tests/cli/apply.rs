//! `apply` on repositories that are already waved and whose catalog changed, and on the
//! other forms an environment's decryption can take. Every result is built with the real
//! kustomize, and every second apply changes nothing.

use crate::common::{kustomize, shows_finding, TestRepo};

/// a <- b, both with manifests, flat, with Flux wiring; then applied.
fn waved() -> TestRepo {
    let repo = TestRepo::empty();
    repo.service("a", &[])
        .service("b", &["a"])
        .manifest("apps/a.yaml")
        .manifest("apps/b.yaml")
        .flat_kustomization()
        .flux_wiring();
    let run = repo.run(&["apply"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    repo
}

fn assert_idempotent(repo: &TestRepo) {
    let before = repo.snapshot();
    let run = repo.run(&["apply"]);
    assert_eq!(run.stdout, "nothing to change\n", "{}", run.stderr);
    assert_eq!(repo.snapshot(), before);
    let check = repo.run(&["check"]);
    assert_eq!(check.code, 0, "{}", check.stdout);
}

fn flux_names(repo: &TestRepo, env: &str) -> Vec<(String, bool)> {
    let build = kustomize(&repo.path().join(env));
    let mut out: Vec<(String, bool)> = build
        .split("\n---\n")
        .map(|d| serde_saphyr::from_str::<serde_json::Value>(d).unwrap())
        .map(|v| {
            (
                v["metadata"]["name"].as_str().unwrap().to_string(),
                v["spec"]["decryption"].is_object(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn a_new_deepest_wave_is_wired_without_manual_edits() {
    let repo = waved();
    assert_eq!(
        flux_names(&repo, "clusters/dev"),
        [
            ("apps-wave-0".into(), true),
            ("apps-wave-1".into(), true),
            ("platform-config".into(), false)
        ]
    );
    repo.service("c", &["b"]).manifest("apps/c.yaml");
    let run = repo.run(&["check"]);
    assert_eq!(run.code, 1);
    assert!(
        shows_finding(
            &run.stdout,
            "error[misplaced-file]: apps/c.yaml: belongs in apps/wave-2/c.yaml"
        ),
        "{}",
        run.stdout
    );
    assert!(
        shows_finding(
            &run.stdout,
            "error[missing-decryption]: clusters/dev/kustomization.yaml: "
        ),
        "{}",
        run.stdout
    );
    let run = repo.run(&["apply"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(repo
        .read("clusters/base/kustomization.yaml")
        .contains("  - apps-wave-2.yaml\n"));
    assert_eq!(
        flux_names(&repo, "clusters/dev"),
        [
            ("apps-wave-0".into(), true),
            ("apps-wave-1".into(), true),
            ("apps-wave-2".into(), true),
            ("platform-config".into(), false)
        ]
    );
    kustomize(&repo.path().join("apps/wave-2"));
    assert_idempotent(&repo);
}

#[test]
fn a_wave_that_empties_is_removed_everywhere() {
    let repo = waved();
    repo.service("b", &[]);
    let run = repo.run(&["apply"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!("wave_empties_apply", run.stdout);
    assert!(repo.exists("apps/wave-0/b.yaml"));
    assert!(!repo.exists("apps/wave-1"));
    assert!(!repo.exists("clusters/base/apps-wave-1.yaml"));
    assert!(!repo
        .read("clusters/base/kustomization.yaml")
        .contains("apps-wave-1"));
    assert!(!repo
        .read("clusters/dev/kustomization.yaml")
        .contains("apps-wave-1"));
    assert_eq!(
        flux_names(&repo, "clusters/dev"),
        [
            ("apps-wave-0".into(), true),
            ("platform-config".into(), false)
        ]
    );
    assert_idempotent(&repo);
}

#[test]
fn a_service_moves_between_waves() {
    let repo = TestRepo::empty();
    repo.service("a", &[])
        .service("b", &["a"])
        .service("c", &["b"])
        .service("d", &[]);
    for f in ["a", "b", "c", "d"] {
        repo.manifest(&format!("apps/{f}.yaml"));
    }
    repo.flat_kustomization().flux_wiring();
    assert_eq!(repo.run(&["apply"]).code, 0);
    let moved = std::fs::read(repo.path().join("apps/wave-0/d.yaml")).unwrap();
    repo.service("d", &["b"]);
    let run = repo.run(&["apply"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("move    apps/wave-0/d.yaml -> apps/wave-2/d.yaml"),
        "{}",
        run.stdout
    );
    assert_eq!(
        std::fs::read(repo.path().join("apps/wave-2/d.yaml")).unwrap(),
        moved,
        "moves keep the bytes"
    );
    assert_eq!(
        repo.read("apps/wave-2/kustomization.yaml")
            .lines()
            .filter(|l| l.starts_with("  - "))
            .count(),
        2
    );
    assert_idempotent(&repo);
}

#[test]
fn a_regex_patch_that_covers_every_wave_is_kept_and_no_patch_is_added() {
    let repo = TestRepo::empty();
    repo.service("a", &[])
        .service("b", &["a"])
        .manifest("apps/a.yaml")
        .manifest("apps/b.yaml")
        .flat_kustomization()
        .flux_wiring();
    let env = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../base\npatches:\n  - target:\n      kind: Kustomization\n      name: apps.*\n    patch: |-\n      - op: add\n        path: /spec/decryption\n        value:\n          provider: sops\n          secretRef:\n            name: sops-age\n";
    repo.write("clusters/dev/kustomization.yaml", env);
    assert_eq!(repo.run(&["apply"]).code, 0);
    assert_eq!(repo.read("clusters/dev/kustomization.yaml"), env);
    assert_eq!(
        flux_names(&repo, "clusters/dev"),
        [
            ("apps-wave-0".into(), true),
            ("apps-wave-1".into(), true),
            ("platform-config".into(), false)
        ]
    );
    assert_idempotent(&repo);
}

#[test]
fn a_legacy_strategic_merge_patch_for_the_retired_kustomization_is_replaced() {
    let repo = TestRepo::empty();
    repo.service("a", &[])
        .manifest("apps/a.yaml")
        .flat_kustomization()
        .flux_wiring();
    repo.write("clusters/dev/decrypt-apps.yaml", "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  decryption:\n    provider: sops\n    secretRef:\n      name: sops-age\n");
    repo.write("clusters/dev/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../base\npatchesStrategicMerge:\n  - decrypt-apps.yaml\n");
    kustomize(&repo.path().join("clusters/dev"));
    let run = repo.run(&["apply"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let env = repo.read("clusters/dev/kustomization.yaml");
    assert!(!env.contains("decrypt-apps.yaml"), "{env}");
    assert_eq!(
        flux_names(&repo, "clusters/dev"),
        [
            ("apps-wave-0".into(), true),
            ("platform-config".into(), false)
        ]
    );
    assert_idempotent(&repo);
}

#[test]
fn every_environment_gets_its_patches() {
    let repo = TestRepo::empty();
    repo.service("a", &[])
        .service("b", &["a"])
        .manifest("apps/a.yaml")
        .manifest("apps/b.yaml")
        .flat_kustomization()
        .flux_wiring();
    repo.write("clusters/prod/kustomization.yaml", "# prod: no patches yet\napiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../base\n");
    repo.write("fluxwave.yaml", "clusters:\n  environments:\n    - {name: dev, path: clusters/dev}\n    - {name: prod, path: clusters/prod}\n");
    assert_eq!(repo.run(&["apply"]).code, 0);
    for env in ["clusters/dev", "clusters/prod"] {
        assert_eq!(
            flux_names(&repo, env),
            [
                ("apps-wave-0".into(), true),
                ("apps-wave-1".into(), true),
                ("platform-config".into(), false)
            ],
            "{env}"
        );
    }
    assert!(repo
        .read("clusters/prod/kustomization.yaml")
        .starts_with("# prod: no patches yet\n"));
    assert_idempotent(&repo);
}

#[test]
fn a_wave_without_decryption_in_an_environment_is_an_error() {
    let repo = waved();
    let env = repo.read("clusters/dev/kustomization.yaml");
    let cut = env.find("  - patch: |-\n      apiVersion: kustomize.toolkit.fluxcd.io/v1\n      kind: Kustomization\n      metadata:\n        name: apps-wave-1").unwrap();
    repo.write("clusters/dev/kustomization.yaml", &env[..cut]);
    let run = repo.run(&["check", "--format", "json"]);
    assert_eq!(run.code, 1);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let codes: Vec<&str> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["missing-decryption"]);
    assert!(
        doc["findings"][0]["message"]
            .as_str()
            .unwrap()
            .contains("apps-wave-1"),
        "{}",
        run.stdout
    );
}

/// The waves' decryption is read from the kustomize builder, after every patch: a later
/// JSON 6902 patch that takes a wave's decryption away again is seen, and since the patch
/// apply would add cannot help (patchesJson6902 run after patches), apply stops instead of
/// making an edit that leaves the wave undecrypted. (The second interpreter saw a patch
/// that "covers" the wave and changed nothing.)
#[test]
fn a_patch_that_takes_a_waves_decryption_away_stops_apply() {
    let repo = waved();
    let env = repo.read("clusters/dev/kustomization.yaml");
    repo.write(
        "clusters/dev/kustomization.yaml",
        &format!("{env}patchesJson6902:\n  - target: {{group: kustomize.toolkit.fluxcd.io, version: v1, kind: Kustomization, name: apps-wave-1}}\n    patch: |\n      - op: remove\n        path: /spec/decryption\n"),
    );
    let before = repo.snapshot();
    let run = repo.run(&["apply"]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(
        run.stderr.contains("cannot edit this file safely")
            && run
                .stderr
                .contains("`apps-wave-1` would still have no spec.decryption"),
        "{}",
        run.stderr
    );
    assert_eq!(repo.snapshot(), before);
}

/// An environment Flux cannot build (here a resource that does not exist) stops apply: which
/// waves lack decryption is a question about the build.
#[test]
fn an_environment_that_does_not_build_stops_apply() {
    let repo = waved();
    let env = repo.read("clusters/dev/kustomization.yaml");
    repo.write(
        "clusters/dev/kustomization.yaml",
        &env.replace("  - ../base\n", "  - ../base\n  - missing\n"),
    );
    let before = repo.snapshot();
    let run = repo.run(&["apply"]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(
        run.stderr.contains("environment `dev` cannot be built")
            && run.stderr.contains("resource `missing` not found"),
        "{}",
        run.stderr
    );
    assert_eq!(repo.snapshot(), before);
}

#[test]
fn a_sops_file_under_a_kustomization_without_decryption_is_an_error() {
    let repo = waved();
    repo.write("clusters/base/infra.yaml", "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: infra\n  namespace: flux-system\nspec:\n  interval: 1h\n  path: ./infra\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n");
    let base = repo.read("clusters/base/kustomization.yaml");
    repo.write(
        "clusters/base/kustomization.yaml",
        &format!("{base}  - infra.yaml\n"),
    );
    repo.write("infra/token.sops.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n    name: token\n    namespace: infra\ndata:\n    token: ENC[AES256_GCM,data:abc=,iv:def=,tag:ghi=,type:str]\nsops:\n    mac: ENC[AES256_GCM,data:xyz=,iv:a=,tag:b=,type:str]\n    version: 3.8.1\n");
    let run = repo.run(&["check"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        shows_finding(&run.stdout, "error[sops-without-decryption]: clusters/base/infra.yaml:6:1: environment `dev`: Flux Kustomization `flux-system/infra` builds the SOPS file infra/token.sops.yaml but has no decryption"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_file_in_the_wrong_wave_is_reported_then_moved() {
    let repo = waved();
    std::fs::rename(
        repo.path().join("apps/wave-1/b.yaml"),
        repo.path().join("apps/wave-0/b.yaml"),
    )
    .unwrap();
    let run = repo.run(&["check"]);
    assert_eq!(run.code, 1);
    assert!(
        shows_finding(
            &run.stdout,
            "error[misplaced-file]: apps/wave-0/b.yaml: belongs in apps/wave-1/b.yaml"
        ),
        "{}",
        run.stdout
    );
    assert_eq!(repo.run(&["apply"]).code, 0);
    assert!(repo.exists("apps/wave-1/b.yaml"));
    assert_idempotent(&repo);
}

#[test]
fn a_flat_kustomization_that_lists_more_than_the_files_stops_apply() {
    let repo = TestRepo::empty();
    repo.service("a", &[])
        .manifest("apps/a.yaml")
        .manifest("apps/extra/cm.yaml")
        .flux_wiring();
    repo.write("apps/extra/kustomization.yaml", "resources:\n  - cm.yaml\n");
    repo.write("apps/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - a.yaml\n  - ./extra\n");
    kustomize(&repo.path().join("apps"));
    let before = repo.snapshot();
    let run = repo.run(&["apply"]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(run.stderr.contains("apps/kustomization.yaml: lists `./extra`, which no wave would build: Flux would prune what it builds"), "{}", run.stderr);
    assert_eq!(repo.snapshot(), before);
    let check = repo.run(&["check"]);
    assert_eq!(check.code, 1);
    assert!(
        shows_finding(
            &check.stdout,
            "error[flat-kustomization-loss]: apps/kustomization.yaml: "
        ),
        "{}",
        check.stdout
    );
    assert!(
        shows_finding(
            &check.stdout,
            "warning[foreign-entry]: apps/extra: folder that is not a wave\n"
        ),
        "{}",
        check.stdout
    );
}

#[test]
fn a_flat_kustomization_with_transformers_stops_apply() {
    let repo = TestRepo::empty();
    repo.service("a", &[]).manifest("apps/a.yaml").flux_wiring();
    repo.write("apps/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: media\nresources:\n  - a.yaml\n");
    let run = repo.run(&["apply", "--dry-run"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("sets `namespace`, which the generated wave kustomizations would not carry"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_manifest_the_flat_kustomization_left_out_is_a_warning() {
    let repo = TestRepo::empty();
    repo.service("a", &[])
        .service("b", &[])
        .manifest("apps/a.yaml")
        .flux_wiring();
    repo.write("apps/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - a.yaml\n");
    repo.manifest("apps/b.yaml");
    let run = repo.run(&["apply"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "warning[not-deployed-yet]: apps/b.yaml: is not listed in apps/kustomization.yaml"
        ),
        "{}",
        run.stderr
    );
    assert!(repo.exists("apps/wave-0/b.yaml"));
}

#[test]
fn a_setting_of_the_retired_kustomization_the_waves_drop_is_a_warning() {
    let repo = TestRepo::empty();
    repo.service("a", &[])
        .manifest("apps/a.yaml")
        .flat_kustomization()
        .flux_wiring();
    let apps = repo.read("clusters/base/apps.yaml").replace(
        "  interval: 10m\n",
        "  interval: 10m\n  timeout: 15m\n  targetNamespace: media\n",
    );
    repo.write("clusters/base/apps.yaml", &apps);
    let run = repo.run(&["apply", "--dry-run"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("warning[retired-setting-dropped]: clusters/base/apps.yaml: `apps` sets spec.timeout: \"15m\"; the waves get `\"5m\"` from waves.spec"), "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "`apps` sets spec.targetNamespace: \"media\"; the waves get nothing from waves.spec"
        ),
        "{}",
        run.stderr
    );
    let check = repo.run(&["check"]);
    assert!(
        check.stdout.contains("warning[retired-setting-dropped]"),
        "{}",
        check.stdout
    );
}

#[test]
fn releasing_the_retired_kustomization_is_not_a_dropped_setting() {
    // The seed's runbook sets prune: false on `apps` in a commit of its own before the waves.
    let repo = TestRepo::empty();
    repo.service("a", &[])
        .manifest("apps/a.yaml")
        .flat_kustomization()
        .flux_wiring();
    let apps = repo
        .read("clusters/base/apps.yaml")
        .replace("prune: true", "prune: false");
    repo.write("clusters/base/apps.yaml", &apps);
    let run = repo.run(&["apply"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        !run.stderr.contains("retired-setting-dropped"),
        "{}",
        run.stderr
    );
}
