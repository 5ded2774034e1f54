//! `check` on repositories with no catalog: one fixture per lint under
//! `tests/fixtures/check/<code>/`, each firing its own code and nothing else, with the line
//! it prints; the output formats; `--deny warnings`; Secret values never printed; and the
//! per-app `ks.yaml` layout under a parent that patches its children.

use serde_json::Value;

use crate::common::TestRepo;

fn codes(repo: &TestRepo) -> (i32, Vec<String>, Value) {
    let run = repo.run(&["check", "--format", "json"]);
    let doc: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", run.stdout, run.stderr));
    let codes = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap().to_string())
        .collect();
    (run.code, codes, doc)
}

/// Every fixture fires its own code only, and prints the expected line.
#[test]
fn every_lint_fires_on_its_fixture_alone() {
    let cases: &[(&str, i32, &str)] = &[
        ("sops-without-decryption", 1, "error[sops-without-decryption]: clusters/dev/apps.yaml:7:1: environment `dev`: Flux Kustomization `flux-system/apps` builds the SOPS file apps/token.sops.yaml but has no decryption"),
        ("plaintext-secret", 1, "error[plaintext-secret]: apps/db-password.yaml:2:1: Secret `web/db-password` is committed in plain text (1 key in data/stringData, no SOPS metadata)"),
        ("undefined-variable", 1, "error[undefined-variable]: apps/web.yaml:10:11: `${REGION}` is not defined for Flux Kustomization `flux-system/apps` (environment `dev`): postBuild.substitute does not set it; Flux fails the reconcile"),
        ("unknowable-variable", 0, "warning[unknowable-variable]: apps/web.yaml:7:10: `${API_TOKEN}` can only come from Secret/flux-system/cluster-secrets, which is not in the repository"),
        ("unknown-dependency", 1, "error[unknown-dependency]: clusters/dev/apps.yaml:13:3: Flux Kustomization `flux-system/apps` depends on `flux-system/infra-controllers`, which environment `dev` does not have"),
        ("dependency-cycle", 1, "error[dependency-cycle]: clusters/dev/apps.yaml:13:3: dependsOn cycle in environment `dev`: flux-system/apps -> flux-system/infra -> flux-system/apps"),
        ("missing-path", 1, "error[missing-path]: clusters/dev/apps.yaml:8:3: Flux Kustomization `flux-system/apps` (environment `dev`) builds `./apps/production`, which is not a folder of the repository"),
        ("unknown-source", 1, "error[unknown-source]: clusters/dev/apps.yaml:10:3: Flux Kustomization `flux-system/apps` reads its source from `GitRepository/flux-system/fleet-infra`, which environment `dev` does not build"),
        ("missing-timeout", 0, "warning[missing-timeout]: clusters/dev/apps.yaml:6:1: Flux Kustomization `flux-system/apps` has wait: true but sets no timeout (environment `dev`): Flux then waits as long as the interval (10m, minus 30 s in some versions)"),
        ("double-owner", 1, "error[double-owner]: apps/web/web.yaml:1:1: ConfigMap/web/web is built by both `flux-system/apps` and `flux-system/web` in environment `dev`"),
        ("unprotected-stateful", 0, "warning[unprotected-stateful]: apps/data.yaml:1:1: PersistentVolumeClaim/web/data holds data"),
        ("uncovered-image-policy", 1, "error[uncovered-image-policy]: tools/web.yaml:15:47: the image marker for `flux-system:web` lies outside every ImageUpdateAutomation's update.path (./apps)"),
        ("unknown-image-policy", 1, "error[unknown-image-policy]: apps/web.yaml:15:47: the image marker names ImagePolicy `flux-system/webapp`, which no environment builds"),
    ];
    let fixtures: Vec<String> = std::fs::read_dir(crate::common::fixtures().join("check"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(
        fixtures.len(),
        cases.len(),
        "one case per fixture: {fixtures:?}"
    );
    let docs =
        std::fs::read_to_string(crate::common::fixtures().join("../../docs/checks.md")).unwrap();
    for (code, exit, line) in cases {
        assert!(
            docs.contains(&format!("## `{code}`")),
            "docs/checks.md explains {code}"
        );
        assert!(
            docs.contains(line),
            "docs/checks.md shows what {code} prints"
        );
        let repo = TestRepo::fixture(&format!("check/{code}"));
        let (status, found, _) = codes(&repo);
        assert_eq!(found, [*code], "{code}");
        assert_eq!(status, *exit, "{code}");
        let text = repo.run(&["check"]);
        assert!(text.stdout.contains(line), "{code}:\n{}", text.stdout);
        assert!(
            text.stdout.starts_with(&format!(
                "{}\n  ",
                line.split(": ").nth(1).unwrap().split(':').next().unwrap()
            )),
            "grouped under the file: {}",
            text.stdout
        );
        // The same finding fails the fixture once committed to git (read through git ls-files).
        repo.commit_all("fixture");
        assert_eq!(codes(&repo).1, [*code], "{code} in git");
    }
}

#[test]
fn a_fixed_fixture_is_clean() {
    let repo = TestRepo::fixture("check/missing-timeout");
    let ks = repo.read("clusters/dev/apps.yaml");
    repo.write(
        "clusters/dev/apps.yaml",
        &ks.replace("  wait: true\n", "  wait: true\n  timeout: 5m\n"),
    );
    let run = repo.run(&["check"]);
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "0 errors, 0 warnings\n")
    );
}

#[test]
fn warnings_fail_with_deny_warnings() {
    let repo = TestRepo::fixture("check/unprotected-stateful");
    assert_eq!(repo.run(&["check"]).code, 0);
    let run = repo.run(&["check", "--deny", "warnings"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stdout.contains("error[unprotected-stateful]"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.ends_with("1 errors, 0 warnings\n"),
        "{}",
        run.stdout
    );
}

#[test]
fn json_and_github_formats_carry_the_place() {
    let repo = TestRepo::fixture("check/unknown-dependency");
    let (_, _, doc) = codes(&repo);
    let f = &doc["findings"][0];
    assert_eq!(f["path"], "clusters/dev/apps.yaml");
    assert_eq!(
        (f["line"].as_u64(), f["column"].as_u64()),
        (Some(13), Some(3))
    );
    assert_eq!(f["severity"], "error");
    assert!(f["help"].as_str().unwrap().contains("dependsOn"));
    assert_eq!(
        (doc["errors"].as_u64(), doc["warnings"].as_u64()),
        (Some(1), Some(0))
    );

    let run = repo.run(&["check", "--format", "github"]);
    assert_eq!(run.code, 1);
    let first = run.stdout.lines().next().unwrap();
    assert!(
        first.starts_with("::error file=clusters/dev/apps.yaml,line=13,col=3,title=unknown-dependency::Flux Kustomization `flux-system/apps` depends on"),
        "{first}"
    );
    assert!(first.contains("%0Ahelp: "), "{first}");
    assert_eq!(
        run.stdout.lines().filter(|l| l.starts_with("::")).count(),
        1
    );

    let repo = TestRepo::fixture("check/missing-timeout");
    let run = repo.run(&["check", "--format", "github"]);
    assert!(
        run.stdout.starts_with(
            "::warning file=clusters/dev/apps.yaml,line=6,col=1,title=missing-timeout::"
        ),
        "{}",
        run.stdout
    );
}

#[test]
fn no_secret_value_reaches_any_output() {
    let repo = TestRepo::fixture("check/plaintext-secret");
    // A second Secret in `data` (base64) and a substitution source with a secret value.
    repo.write("apps/more.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: more\n  namespace: web\ndata:\n  token: c2VjcmV0LU1BUktFUi1CQVNFNjQ=\n  MARKER_KEY_VALUE: UExBSU5URVhULU1BUktFUg==\n");
    for format in ["text", "json", "github"] {
        let run = repo.run(&["check", "--format", format]);
        assert_eq!(run.code, 1, "{format}");
        for marker in [
            "hunter2-PLAINTEXT-MARKER",
            "PLAINTEXT-MARKER",
            "c2VjcmV0LU1BUktFUi1CQVNFNjQ=",
            "UExBSU5URVhULU1BUktFUg==",
        ] {
            assert!(
                !run.stdout.contains(marker) && !run.stderr.contains(marker),
                "{format} shows {marker}:\n{}{}",
                run.stdout,
                run.stderr
            );
        }
        assert_eq!(
            run.stdout.matches("plaintext-secret").count(),
            2,
            "{format}: {}",
            run.stdout
        );
    }
}

#[test]
fn allowed_plaintext_secrets_pass() {
    let repo = TestRepo::fixture("check/plaintext-secret");
    repo.write(
        "fluxwave.yaml",
        "check:\n  allowPlaintextSecrets:\n    - {namespace: web, name: db-password}\n",
    );
    let run = repo.run(&["check"]);
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "0 errors, 0 warnings\n")
    );
    repo.write(
        "fluxwave.yaml",
        "check:\n  allowPlaintextSecrets:\n    - {namespace: other, name: db-password}\n",
    );
    assert_eq!(repo.run(&["check"]).code, 1);
    repo.write(
        "fluxwave.yaml",
        "check:\n  allowPlaintextSecrets:\n    - {nam: db-password}\n",
    );
    assert_eq!(repo.run(&["check"]).code, 2, "unknown keys are bad input");
}

#[test]
fn a_known_substitute_from_source_defines_its_keys() {
    let repo = TestRepo::fixture("check/unknowable-variable");
    repo.write("clusters/dev/secrets.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: cluster-secrets\n  namespace: flux-system\ndata:\n  API_TOKEN: ENC[AES256_GCM,data:abc=,iv:def=,tag:ghi=,type:str]\nsops:\n  mac: ENC[AES256_GCM,data:xyz=,iv:a=,tag:b=,type:str]\n");
    let k = repo.read("clusters/dev/kustomization.yaml");
    repo.write(
        "clusters/dev/kustomization.yaml",
        &format!("{k}  - secrets.yaml\n"),
    );
    let (_, found, doc) = codes(&repo);
    // The root applies the encrypted Secret: that is the decryption lint's business now.
    assert_eq!(found, ["sops-without-decryption"], "{doc}");
    // A key it does not have is an error, now that the source is known.
    repo.write("apps/web.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: web\ndata:\n  token: ${API_TOKEN}\n  other: ${OTHER}\n");
    let (_, found, doc) = codes(&repo);
    assert_eq!(
        found,
        ["undefined-variable", "sops-without-decryption"],
        "{doc}"
    );
    assert!(doc["findings"][0]["message"]
        .as_str()
        .unwrap()
        .contains("`${OTHER}`"));
}

/// onedr0p/cluster-template's layout: no catalog, no fluxwave.yaml, per-app ks.yaml files
/// under a parent whose spec.patches give every child its decryption.
#[test]
fn per_app_ks_files_with_a_parent_patch_and_no_catalog() {
    let repo = TestRepo::empty();
    let ks = |name: &str, path: &str, extra: &str| {
        format!("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {name}\n  namespace: flux-system\nspec:\n  interval: 1h\n  path: {path}\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n{extra}")
    };
    let parent_patch = "  patches:\n    - target: {group: kustomize.toolkit.fluxcd.io, kind: Kustomization}\n      patch: |-\n        apiVersion: kustomize.toolkit.fluxcd.io/v1\n        kind: Kustomization\n        metadata: {name: not-used}\n        spec:\n          decryption: {provider: sops, secretRef: {name: sops-age}}\n";
    repo.write("kubernetes/flux/cluster/ks.yaml", &ks("cluster-apps", "./kubernetes/apps", parent_patch))
        .write("kubernetes/flux/cluster/kustomization.yaml", "resources: [ks.yaml]\n")
        .write("clusters/main/kustomization.yaml", "resources: [../../kubernetes/flux/cluster]\n")
        .write("kubernetes/apps/media/kustomization.yaml", "resources:\n  - ./sonarr/ks.yaml\n")
        .write("kubernetes/apps/media/sonarr/ks.yaml", &ks("sonarr", "./kubernetes/apps/media/sonarr/app", "  targetNamespace: media\n"))
        .write("kubernetes/apps/media/sonarr/app/kustomization.yaml", "resources: [secret.sops.yaml, cm.yaml]\n")
        .write("kubernetes/apps/media/sonarr/app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: sonarr}\ndata: {a: b}\n")
        .write("kubernetes/apps/media/sonarr/app/secret.sops.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n    name: sonarr\ndata:\n    key: ENC[AES256_GCM,data:abc=,iv:def=,tag:ghi=,type:str]\nsops:\n    mac: ENC[AES256_GCM,data:xyz=,iv:a=,tag:b=,type:str]\n");
    repo.commit_all("cluster-template layout");
    let run = repo.run(&["check"]);
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "0 errors, 0 warnings\n")
    );

    // Without the parent's patch the child applies ciphertext.
    repo.write(
        "kubernetes/flux/cluster/ks.yaml",
        &ks("cluster-apps", "./kubernetes/apps", ""),
    );
    let run = repo.run(&["check"]);
    assert_eq!(run.code, 1);
    assert!(run.stdout.contains("error[sops-without-decryption]: kubernetes/apps/media/sonarr/ks.yaml:6:1: environment `main`: Flux Kustomization `flux-system/sonarr` builds the SOPS file kubernetes/apps/media/sonarr/app/secret.sops.yaml but has no decryption"), "{}", run.stdout);
}

#[test]
fn a_repository_with_no_flux_at_all_is_clean() {
    let repo = TestRepo::empty();
    repo.write("README.yaml", "hello: world\n");
    let run = repo.run(&["check"]);
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "0 errors, 0 warnings\n"),
        "{}",
        run.stderr
    );
}

#[test]
fn the_pre_commit_hook_runs_check_on_the_whole_repository() {
    let text =
        std::fs::read_to_string(crate::common::fixtures().join("../../.pre-commit-hooks.yaml"))
            .unwrap();
    let hooks: Value = serde_saphyr::from_str(&text).unwrap();
    let hook = &hooks[0];
    assert_eq!(hook["id"], "fluxwave-check");
    assert_eq!(hook["entry"], "fluxwave check");
    assert_eq!(hook["pass_filenames"], false);
}
