//! `apply` on repositories that are already waved and whose catalog changed, and on the
//! other forms an environment's decryption can take. Every result is built with the real
//! kustomize, and every second apply changes nothing.

use crate::common::{assert_second_apply_changes_nothing, kustomize, shows_finding, TestRepo};

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
    assert_second_apply_changes_nothing(repo);
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
            "warning[foreign-entry]: apps/extra: folder that is not a wave's or a unit's\n"
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

// Reliability under attack: links, files named like temporaries, concurrent edits and runs,
// folders shared by two settings.

/// examples/homelab, flat, committed to a fresh git repository.
fn homelab() -> TestRepo {
    let repo = TestRepo::example("homelab");
    repo.commit_all("flat");
    repo
}

fn link(target: &str, at: &std::path::Path) {
    std::os::unix::fs::symlink(target, at).unwrap();
}

#[track_caller]
fn refused_unchanged(repo: &TestRepo, args: &[&str], shows: &[&str]) {
    let before = repo.snapshot();
    let run = repo.run(args);
    assert_eq!(run.code, 2, "{args:?}: {}\n{}", run.stdout, run.stderr);
    for text in shows {
        assert!(
            run.stderr.contains(text),
            "{args:?}: stderr should say {text:?}:\n{}",
            run.stderr
        );
    }
    assert_eq!(repo.snapshot(), before, "{args:?} changed the tree");
}

/// A wave folder that is a link to a hand-kept folder: `apply` used to move the app tier's
/// files into `platform/` and overwrite `platform/kustomization.yaml`, and exit 0.
#[test]
fn a_linked_wave_folder_is_refused_before_anything_is_written() {
    let repo = homelab();
    link("../platform", &repo.path().join("apps/wave-1"));
    let platform = repo.read("platform/kustomization.yaml");
    for args in [
        &["apply"][..],
        &["apply", "--dry-run"],
        &["plan"],
        &["check"],
    ] {
        refused_unchanged(
            &repo,
            args,
            &[
                "apps/wave-1: is a symbolic link",
                "replace the link with a folder",
            ],
        );
    }
    assert_eq!(repo.read("platform/kustomization.yaml"), platform);
}

/// The same through every other component a change goes through: the app tier itself, the
/// base and environment folders (links inside the repository, which the containment check
/// lets through), a link where a file moves to, and a kustomization apply edits.
#[test]
fn a_link_on_any_path_apply_writes_is_refused() {
    type Setup = fn(&TestRepo);
    let cases: [(&str, Setup); 8] = [
        ("apps", |r| {
            std::fs::rename(r.path().join("apps"), r.path().join("apps-real")).unwrap();
            link("apps-real", &r.path().join("apps"));
        }),
        ("clusters/dev", |r| {
            std::fs::rename(r.path().join("clusters/dev"), r.path().join("dev-real")).unwrap();
            link("../dev-real", &r.path().join("clusters/dev"));
        }),
        ("clusters/base", |r| {
            std::fs::rename(r.path().join("clusters/base"), r.path().join("base-real")).unwrap();
            link("../base-real", &r.path().join("clusters/base"));
        }),
        ("clusters", |r| {
            std::fs::rename(r.path().join("clusters"), r.path().join("clusters-real")).unwrap();
            link("clusters-real", &r.path().join("clusters"));
        }),
        ("apps/wave-0/plex.yaml", |r| {
            std::fs::create_dir_all(r.path().join("apps/wave-0")).unwrap();
            link(
                "../../platform/cnpg.yaml",
                &r.path().join("apps/wave-0/plex.yaml"),
            );
        }),
        ("apps/wave-0/kustomization.yaml", |r| {
            std::fs::create_dir_all(r.path().join("apps/wave-0")).unwrap();
            link(
                "../../platform/kustomization.yaml",
                &r.path().join("apps/wave-0/kustomization.yaml"),
            );
        }),
        ("clusters/base/apps-wave-0.yaml", |r| {
            link(
                "../../platform/cnpg.yaml",
                &r.path().join("clusters/base/apps-wave-0.yaml"),
            );
        }),
        ("clusters/dev/kustomization.yaml", |r| {
            std::fs::rename(
                r.path().join("clusters/dev/kustomization.yaml"),
                r.path().join("dev-kustomization.yaml"),
            )
            .unwrap();
            link(
                "../../dev-kustomization.yaml",
                &r.path().join("clusters/dev/kustomization.yaml"),
            );
        }),
    ];
    for (at, setup) in cases {
        let repo = homelab();
        setup(&repo);
        for args in [&["apply"][..], &["apply", "--dry-run"]] {
            refused_unchanged(&repo, args, &[&format!("{at}: is a symbolic link")]);
        }
    }
}

/// A user's file whose name looks like a temporary (`.kustomization.yaml.backup`: a dot,
/// the name, six letters) used to be removed as "left by an interrupted write", tracked by
/// git or not.
#[test]
fn a_users_file_named_like_a_temporary_is_never_removed() {
    let repo = homelab();
    let mine = [
        "clusters/dev/.kustomization.yaml.backup",
        "clusters/base/.kustomization.yaml.orig12",
        "apps/wave-0/.kustomization.yaml.before",
    ];
    for f in mine {
        repo.write(f, "# my own copy\n");
    }
    // Exactly fluxwave's pattern, but tracked by git: someone's file all the same.
    let tracked = "clusters/dev/.kustomization.yaml.fluxwave-tmp-AbCdE12345";
    repo.write(tracked, "# committed on purpose\n");
    repo.commit_all("backups");
    // Exactly fluxwave's pattern and untracked: what an interrupted write leaves.
    let leftover = "clusters/base/.kustomization.yaml.fluxwave-tmp-Zz9Yy8Xx7W";
    repo.write(
        leftover,
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustom",
    );
    let run = repo.run(&["apply"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for f in mine.iter().chain([&tracked]) {
        assert!(repo.exists(f), "{f} was removed:\n{}", run.stdout);
    }
    assert!(!repo.exists(leftover), "{}", run.stdout);
    assert!(
        run.stdout.contains(&format!(
            "remove  {leftover}  (left by an interrupted write"
        )),
        "{}",
        run.stdout
    );
    assert_second_apply_changes_nothing(&repo);
}

#[test]
fn a_temporary_beside_an_environment_kustomization_of_any_name_is_found() {
    // kustomize reads `kustomization.yml` too, and apply edits it under that name: a write of
    // it cut short leaves its temporary beside it, found on a later run that writes nothing.
    let repo = TestRepo::example("homelab");
    std::fs::rename(
        repo.path().join("clusters/dev/kustomization.yaml"),
        repo.path().join("clusters/dev/kustomization.yml"),
    )
    .unwrap();
    repo.commit_all("flat");
    let run = repo.run(&["apply"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    repo.commit_all("waved");
    let leftover = "clusters/dev/.kustomization.yml.fluxwave-tmp-Qq1Ww2Ee3R";
    repo.write(leftover, "# dev cluster: the shar");
    let run = repo.run(&["apply"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!repo.exists(leftover), "{}", run.stdout);
    assert_second_apply_changes_nothing(&repo);
}

/// Starts `apply` paused between its moves and its writes (the test-only pause point), and
/// waits until it is there.
fn paused_apply(repo: &TestRepo, sync: &std::path::Path) -> std::process::Child {
    let mut child = crate::common::fluxwave()
        .arg("--repo")
        .arg(repo.path())
        .arg("apply")
        .env("FLUXWAVE_TEST_PAUSE_APPLY", sync)
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while !sync.join("paused").exists() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("apply ended ({status}) without pausing between its moves and its writes");
        }
        assert!(start.elapsed().as_secs() < 60, "apply never paused");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    child
}

/// An edit saved to an environment's kustomization while `apply` runs used to be silently
/// overwritten; a second `apply` started meanwhile ran alongside the first.
#[test]
fn a_concurrent_edit_is_kept_and_a_concurrent_apply_is_refused() {
    let repo = homelab();
    let sync = tempfile::tempdir().unwrap();
    let child = paused_apply(&repo, sync.path());

    // A second run while the first holds the lock: refused at once, nothing written.
    let before = repo.snapshot();
    let second = repo.run(&["apply"]);
    assert_eq!(second.code, 2, "{}\n{}", second.stdout, second.stderr);
    let pid = child.id().to_string();
    for text in [
        "another `fluxwave apply`",
        &format!("(process {pid})"),
        "fluxwave.lock",
        "run `fluxwave apply` again",
    ] {
        assert!(second.stderr.contains(text), "{text:?}:\n{}", second.stderr);
    }
    assert_eq!(repo.snapshot(), before, "the refused run wrote something");

    // An edit saved while the first run is between its moves and its writes.
    let env = "clusters/dev/kustomization.yaml";
    let edited = format!("{}# saved while apply ran\n", repo.read(env));
    repo.write(env, &edited);
    std::fs::write(sync.path().join("resume"), "").unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    for text in [
        &format!("{env}: was changed while `fluxwave apply` ran"),
        "nothing is lost",
        "run `fluxwave apply` again to complete",
    ] {
        assert!(stderr.contains(text), "{text:?}:\n{stderr}");
    }
    assert_eq!(repo.read(env), edited, "the edit was overwritten");
    assert!(
        !repo.path().join(".git/fluxwave.lock").exists(),
        "the lock stayed"
    );

    // A rerun completes the work on top of the edit.
    let run = repo.run(&["apply"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let now = repo.read(env);
    assert!(now.contains("# saved while apply ran\n"), "{now}");
    assert!(now.contains("apps-wave-2"), "{now}");
    assert_second_apply_changes_nothing(&repo);
}

/// A run killed while it holds the lock leaves no lock behind that blocks the next one.
#[test]
fn a_killed_apply_does_not_block_the_next() {
    let repo = homelab();
    let sync = tempfile::tempdir().unwrap();
    let mut child = paused_apply(&repo, sync.path());
    child.kill().unwrap();
    child.wait().unwrap();
    let run = repo.run(&["apply"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_second_apply_changes_nothing(&repo);
}

/// A failure after the first change used to print the raw OS error alone; it now says
/// that nothing is lost and that a rerun completes the work. Here a folder is put, while
/// apply runs, where it writes a new wave Kustomization.
#[test]
fn an_apply_that_stops_part_way_says_a_rerun_completes_it() {
    let repo = homelab();
    let sync = tempfile::tempdir().unwrap();
    let child = paused_apply(&repo, sync.path());
    let blocker = "clusters/base/apps-wave-0.yaml";
    std::fs::create_dir(repo.path().join(blocker)).unwrap();
    std::fs::write(sync.path().join("resume"), "").unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(blocker), "{stderr}");
    assert!(
        stderr.contains("nothing is lost")
            && stderr.contains("run `fluxwave apply` again to complete it"),
        "{stderr}"
    );
    std::fs::remove_dir(repo.path().join(blocker)).unwrap();
    let run = repo.run(&["apply"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(repo.exists(blocker));
    assert_second_apply_changes_nothing(&repo);
}

/// `clusters.base` and an environment in one folder used to be accepted, and one of the
/// two edits of its kustomization was lost.
#[test]
fn a_folder_shared_by_the_base_and_an_environment_is_refused() {
    let cases = [
        ("clusters: {base: clusters/dev}\n", "fluxwave.yaml:1:18"),
        (
            "clusters:\n  base: clusters/base\n  environments:\n    - {name: dev, path: clusters/dev}\n    - {name: again, path: ./clusters/dev/}\n",
            "fluxwave.yaml:5:27",
        ),
        (
            "clusters:\n  environments:\n    - {name: dev, path: apps}\n",
            "fluxwave.yaml:3:25",
        ),
    ];
    for (config, at) in cases {
        let repo = homelab();
        let kept = repo.read("fluxwave.yaml");
        repo.write("fluxwave.yaml", &format!("{kept}{config}"));
        let lines = kept.lines().count();
        let (line, col) = at
            .strip_prefix("fluxwave.yaml:")
            .unwrap()
            .split_once(':')
            .unwrap();
        let at = format!(
            "fluxwave.yaml:{}:{col}",
            line.parse::<usize>().unwrap() + lines
        );
        for args in [&["apply"][..], &["apply", "--dry-run"]] {
            refused_unchanged(&repo, args, &[&at, "folders of their own"]);
        }
    }
}

/// The same file in two places used to get "keep one copy of the file" alone, which read as
/// if apply had made the copy (a run that lost a race with another): apply only renames and
/// two runs never interleave, so the advice says where a copy comes from and what to do.
#[test]
fn a_duplicate_file_gets_advice_that_fits_how_the_copy_was_made() {
    let repo = homelab();
    std::fs::create_dir_all(repo.path().join("apps/wave-0")).unwrap();
    std::fs::copy(
        repo.path().join("apps/plex.yaml"),
        repo.path().join("apps/wave-0/plex.yaml"),
    )
    .unwrap();
    refused_unchanged(
        &repo,
        &["apply"],
        &[
            "`plex.yaml` is in more than one place: apps/plex.yaml, apps/wave-0/plex.yaml",
            "keep one copy of the file and delete the others",
            "fluxwave only renames files",
        ],
    );
}

/// `render` writes into the app tier too: through a linked wave folder it used to put the
/// manifests wherever the link led (here beside the hand-kept platform manifests), and over
/// a manifest that is a link it replaced the link.
#[test]
fn render_never_writes_through_a_link_in_the_app_tier() {
    let repo = homelab();
    let plex = repo.path().join("catalog/plex.yaml");
    let plex = plex.to_str().unwrap();
    link("../platform", &repo.path().join("apps/wave-0"));
    refused_unchanged(
        &repo,
        &["render", plex, "--wave-layout"],
        &["apps/wave-0: is a symbolic link"],
    );
    assert!(!repo.exists("platform/plex.yaml"));
    std::fs::remove_file(repo.path().join("apps/wave-0")).unwrap();
    std::fs::rename(
        repo.path().join("apps/plex.yaml"),
        repo.path().join("plex-real.yaml"),
    )
    .unwrap();
    link("../plex-real.yaml", &repo.path().join("apps/plex.yaml"));
    refused_unchanged(
        &repo,
        &["render", plex],
        &["apps/plex.yaml: is a symbolic link"],
    );
}

/// `render` into the app tier while `apply` moves it used to write a manifest back to its
/// old place beside the moved one (a duplicate that stopped the next apply); it now finds
/// the lock held, says by whom, and writes nothing.
#[test]
fn a_render_into_the_repository_is_refused_while_apply_runs() {
    let repo = homelab();
    let sync = tempfile::tempdir().unwrap();
    let child = paused_apply(&repo, sync.path());
    let before = repo.snapshot();
    let plex = repo.path().join("catalog/plex.yaml");
    let render = repo.run(&["render", plex.to_str().unwrap()]);
    assert_eq!(render.code, 2, "{}\n{}", render.stdout, render.stderr);
    for text in [
        &format!("another `fluxwave apply` (process {})", child.id()),
        "run `fluxwave render` again",
    ] {
        assert!(render.stderr.contains(text), "{text:?}:\n{}", render.stderr);
    }
    assert_eq!(
        repo.snapshot(),
        before,
        "the refused render wrote something"
    );
    std::fs::write(sync.path().join("resume"), "").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!repo.exists("apps/plex.yaml") && repo.exists("apps/wave-0/plex.yaml"));
    assert_second_apply_changes_nothing(&repo);
}
