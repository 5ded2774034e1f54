//! `check` on repositories with no catalog: one fixture per lint under
//! `tests/fixtures/check/<code>/`, each firing its own code and nothing else, with its outputs
//! in the snapshot `snapshots/cli__check__<code>.snap` and its text as docs/checks.md shows
//! it; the output formats; `--deny warnings`; Secret values never printed; and the per-app
//! `ks.yaml` layout under a parent that patches its children.

use serde_json::Value;

use crate::common::{shows_finding, Run, TestRepo};

fn codes(repo: &TestRepo) -> (i32, Vec<String>, Value) {
    let run = repo.run(&["check", "--format", "json"]);
    let (codes, doc) = parse(&run);
    (run.code, codes, doc)
}

/// The codes of a `check --format json` run's findings, in order, and its document.
fn parse(run: &Run) -> (Vec<String>, Value) {
    let doc: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", run.stdout, run.stderr));
    let codes = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap().to_string())
        .collect();
    (codes, doc)
}

/// One test per fixture, so that the fixtures run in parallel and a changed message shows up
/// as one snapshot per fixture in `cargo insta review`; `FIXTURES` lists them all.
macro_rules! lint_fixtures {
    ($($test:ident: $code:literal,)*) => {
        $(
            #[test]
            fn $test() {
                lint_fixture($code);
            }
        )*
        const FIXTURES: &[&str] = &[$($code),*];
    };
}

lint_fixtures! {
    sops_without_decryption: "sops-without-decryption",
    plaintext_secret: "plaintext-secret",
    undefined_variable: "undefined-variable",
    unknowable_variable: "unknowable-variable",
    unknown_dependency: "unknown-dependency",
    dependency_cycle: "dependency-cycle",
    build_failed: "build-failed",
    missing_path: "missing-path",
    unknown_source: "unknown-source",
    missing_timeout: "missing-timeout",
    double_owner: "double-owner",
    unprotected_stateful: "unprotected-stateful",
    uncovered_image_policy: "uncovered-image-policy",
    unknown_image_policy: "unknown-image-policy",
}

/// Shapes real repositories have, each under `tests/fixtures/check/<name>/`: the codes its
/// findings have, in order (a shape that must not fire has none), and its outputs in the
/// snapshot `snapshots/cli__check__<name>.snap`.
macro_rules! shape_fixtures {
    ($($test:ident: $name:literal => [$($code:literal),*],)*) => {
        $(
            #[test]
            fn $test() {
                shape_fixture($name, &[$($code),*]);
            }
        )*
        const SHAPES: &[&str] = &[$($name),*];
    };
}

shape_fixtures! {
    // ExternalArtifacts an ArtifactGenerator makes (fluxcd/flux2-kustomize-helm-example).
    unknown_source_external_artifact: "unknown-source-external-artifact" => ["unknown-source"],
    // Secrets of references (1Password's `op://` in bootstrap files, vals, bank-vaults,
    // argocd-vault-plugin, SOPS values, templates): only the one with a real value fires.
    plaintext_secret_references: "plaintext-secret-references" => ["plaintext-secret"],
    // A substituteFrom Secret in a bootstrap folder applied by hand: where it is, and whether
    // it sets each variable (onedr0p/home-ops' cloudflare tunnel id).
    // Folders with only a README or templates exist: only the missing one fires.
    missing_path_no_manifests: "missing-path-no-manifests" => ["missing-path"],
    // check.ignore by path and glob and fluxwave:ignore comments silence what they name; the
    // Kustomization nothing silences still fires, and every ignore that silences nothing is
    // reported (a misspelt code too).
    ignore: "ignore" => ["missing-timeout", "unused-ignore", "unused-ignore", "unused-ignore"],
    unknowable_variable_bootstrap: "unknowable-variable-bootstrap" => ["unknowable-variable", "unknowable-variable"],
    // One OCIRepository a component gives each app of a namespace: one finding for the object,
    // naming its owners (five here), not one for each pair; one for a pair as before.
    double_owner_shared_component: "double-owner-shared-component" => ["double-owner", "double-owner"],
    // A catalog under `topology: units`, applied, whose environment patches one unit's
    // dependsOn to lack a dependency and another's to wait for a unit it does not need.
    dependency_drift: "dependency-drift" => ["dependency-drift", "dependency-drift"],
}

fn shape_fixture(name: &str, expected: &[&str]) {
    let (repo, _, json, found, doc) = snapshot_fixture(name);
    assert_eq!(found, expected, "{name}: {doc}");
    same_in_git(&repo, &json, name);
}

/// `check` and `check --format json` on `tests/fixtures/check/<name>`, their exit statuses
/// and outputs the snapshot `snapshots/cli__check__<name>.snap`: the fixture, both runs, and
/// the codes found with the JSON document.
fn snapshot_fixture(name: &str) -> (TestRepo, Run, Run, Vec<String>, Value) {
    let repo = TestRepo::fixture(&format!("check/{name}"));
    let text = repo.run(&["check"]);
    let json = repo.run(&["check", "--format", "json"]);
    let (found, doc) = parse(&json);
    let mut shown = String::new();
    for (args, run) in [("check", &text), ("check --format json", &json)] {
        shown += &format!("$ fluxwave {args}\nexit {}\n{}", run.code, run.stdout);
        if !run.stderr.is_empty() {
            shown += &format!("stderr:\n{}", run.stderr);
        }
        shown += "\n";
    }
    insta::with_settings!({
        description => format!("fluxwave check on tests/fixtures/check/{name}"),
        omit_expression => true,
    }, {
        insta::assert_snapshot!(name, shown);
    });
    (repo, text, json, found, doc)
}

/// The fixture committed to git (read through git ls-files) gives what its folder gave.
fn same_in_git(repo: &TestRepo, json: &Run, name: &str) {
    repo.commit_all("fixture");
    let committed = repo.run(&["check", "--format", "json"]);
    assert_eq!(
        (committed.code, committed.stdout.as_str()),
        (json.code, json.stdout.as_str()),
        "{name} in git"
    );
}

#[test]
fn every_fixture_has_its_test() {
    let mut fixtures: Vec<String> = std::fs::read_dir(crate::common::fixtures().join("check"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    fixtures.sort();
    let mut tested: Vec<&str> = FIXTURES.iter().chain(SHAPES).copied().collect();
    tested.sort();
    assert_eq!(
        fixtures, tested,
        "one lint_fixtures! or shape_fixtures! entry per fixture"
    );
}

/// `tests/fixtures/check/<code>` fires `<code>` and nothing else; its exit status and its
/// text and JSON outputs are the snapshot `snapshots/cli__check__<code>.snap`; the finding's
/// line is the one docs/checks.md shows; and the same finding fails the fixture once
/// committed to git (read through git ls-files).
fn lint_fixture(code: &str) {
    let (repo, text, json, found, doc) = snapshot_fixture(code);
    assert_eq!(found, [code], "{code} fires alone");

    // The text output opens with the finding's head.
    let severity = doc["findings"][0]["severity"].as_str().unwrap();
    assert!(
        text.stdout
            .starts_with(&format!("{severity}[{code}]\n\n  ")),
        "{code}: {}",
        text.stdout
    );
    let docs =
        std::fs::read_to_string(crate::common::fixtures().join("../../docs/checks.md")).unwrap();
    assert!(
        docs.contains(&format!("## `{code}`")),
        "docs/checks.md explains {code}"
    );
    // The finding, with its snippet, as docs/checks.md shows it (the counts left out).
    let (shown, _) = text.stdout.rsplit_once("\n\n").unwrap();
    assert!(
        docs.contains(&format!("```\n{shown}\n```")),
        "docs/checks.md shows what {code} prints:\n{shown}"
    );

    same_in_git(&repo, &json, code);
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
        (
            0,
            "checked 1 environment (dev) and 2 Flux Kustomizations\n0 errors, 0 warnings\n"
        )
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
        run.stdout.ends_with("1 error, 0 warnings\n"),
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
        (
            0,
            "checked 1 environment (dev) and 2 Flux Kustomizations\n0 errors, 0 warnings\n"
        )
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

/// A `check.ignore` entry naming no code, or a path out of the repository, is bad input
/// with its place in fluxwave.yaml; the closest code is suggested.
#[test]
fn ignores_of_unknown_codes_are_bad_input() {
    let repo = TestRepo::fixture("check/missing-timeout");
    repo.write(
        "fluxwave.yaml",
        "check:\n  ignore:\n    - {code: missing-timeout, path: clusters}\n    - code: plaintext-secrets\n",
    );
    let run = repo.run(&["check"]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(
        run.stderr
            .contains("`plaintext-secrets` is not a finding code")
            && run.stderr.contains("fluxwave.yaml:4:13")
            && run.stderr.contains("did you mean `plaintext-secret`?"),
        "{}",
        run.stderr
    );
    repo.write(
        "fluxwave.yaml",
        "check:\n  ignore:\n    - {code: missing-timeout, path: ../elsewhere}\n",
    );
    let run = repo.run(&["check"]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(
        run.stderr
            .contains("`../elsewhere` is not a path inside the repository")
            && run.stderr.contains("fluxwave.yaml:3:37"),
        "{}",
        run.stderr
    );
    // A path that is the finding's file, written as the repository spells it, silences it.
    repo.write(
        "fluxwave.yaml",
        "check:\n  ignore:\n    - {code: missing-timeout, path: ./clusters/dev/apps.yaml}\n",
    );
    let (code, found, doc) = codes(&repo);
    assert_eq!((code, found.len()), (0, 0), "{doc}");
}

/// `check --base` findings go through the same ignores: a deletion silenced by path.
#[test]
fn ignores_silence_the_deletions_of_check_base() {
    let repo = TestRepo::fixture("check/missing-timeout");
    repo.commit_all("base");
    repo.write("apps/kustomization.yaml", "resources: []\n");
    let (code, found, doc) = {
        let run = repo.run(&["check", "--base", "HEAD", "--format", "json"]);
        let (found, doc) = parse(&run);
        (run.code, found, doc)
    };
    assert_eq!(
        (code, found.as_slice()),
        (
            1,
            &[
                "missing-timeout".to_string(),
                "cutover-deletion".to_string()
            ][..]
        ),
        "{doc}"
    );
    let deleted = doc["findings"][1]["path"].as_str().unwrap().to_string();
    repo.write(
        "fluxwave.yaml",
        &format!("check:\n  ignore:\n    - {{code: cutover-deletion, path: {deleted}}}\n"),
    );
    let run = repo.run(&["check", "--base", "HEAD", "--format", "json"]);
    let (found, doc) = parse(&run);
    assert_eq!(
        (run.code, found.as_slice()),
        (0, &["missing-timeout".to_string()][..]),
        "{doc}"
    );
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
        (
            0,
            "checked 1 environment (main) and 3 Flux Kustomizations\n0 errors, 0 warnings\n"
        )
    );

    // Without the parent's patch the child applies ciphertext.
    repo.write(
        "kubernetes/flux/cluster/ks.yaml",
        &ks("cluster-apps", "./kubernetes/apps", ""),
    );
    let run = repo.run(&["check"]);
    assert_eq!(run.code, 1);
    assert!(shows_finding(&run.stdout, "error[sops-without-decryption]: kubernetes/apps/media/sonarr/ks.yaml:6:1: environment `main`: Flux Kustomization `flux-system/sonarr` builds the SOPS file kubernetes/apps/media/sonarr/app/secret.sops.yaml but has no decryption"), "{}", run.stdout);
}

/// A repository in which no environment is found was not checked: that is an error, never a
/// green run, and it says where it looked and what to configure.
#[test]
fn a_repository_with_no_environment_is_not_green() {
    let repo = TestRepo::empty();
    repo.write("README.yaml", "hello: world\n");
    let run = repo.run(&["check"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.starts_with("error[no-environment]")
            && run.stdout.contains("clusters.environments")
            && run.stdout.ends_with(
                "checked 0 environments and 0 Flux Kustomizations\n1 error, 0 warnings\n"
            ),
        "{}",
        run.stdout
    );
    let (_, found, doc) = codes(&repo);
    assert_eq!(found, ["no-environment"]);
    assert_eq!(doc["findings"][0]["path"], ".");
    assert_eq!(
        (
            doc["environments"].as_array().map(Vec::len),
            doc["kustomizations"].as_u64()
        ),
        (Some(0), Some(0))
    );

    // Configured, the environment is built and counted.
    repo.write(
        "kubernetes/flux/cluster/kustomization.yaml",
        "resources: []\n",
    )
    .write(
        "fluxwave.yaml",
        "clusters:\n  environments: [{name: main, path: kubernetes/flux/cluster}]\n",
    );
    let (code, found, doc) = codes(&repo);
    assert_eq!((code, found.len()), (0, 0), "{doc}");
    assert_eq!(doc["environments"][0]["name"], "main");
    assert_eq!(doc["environments"][0]["path"], "kubernetes/flux/cluster");
    assert_eq!(doc["kustomizations"], 1);
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

/// `check --explain CODE` reads the registry: the code's severity and what it catches; a
/// name that is no code is a usage error listing the codes.
#[test]
fn explain_names_a_codes_severity_and_what_it_catches() {
    let repo = TestRepo::empty();
    let r = repo.run(&["check", "--explain", "sops-without-decryption"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .starts_with("sops-without-decryption (error): a Flux Kustomization builds"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("docs/checks.md"), "{}", r.stdout);
    let r = repo.run(&["check", "--explain", "retired-setting-dropped"]);
    assert!(
        r.stdout.starts_with("retired-setting-dropped (warning): "),
        "{}",
        r.stdout
    );
    let r = repo.run(&["check", "--explain", "no-such-code"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("`no-such-code` is not a finding code")
            && r.stderr.contains("missing-decryption"),
        "{}",
        r.stderr
    );
}

/// `unprotected-stateful` judges a HelmRelease as `cutover` does, by the claims its own values
/// create: one that does is reported, one that only mounts or only may hold data (the
/// cutover fixtures, `tests/fixtures/cutover/helm-data`) is not.
#[test]
fn unprotected_stateful_reads_a_helmreleases_values() {
    let repo = TestRepo::fixture("check/unprotected-stateful");
    let shapes = crate::common::fixtures().join("cutover/helm-data");
    let mut expected = Vec::new();
    let mut resources = vec!["data.yaml".to_string()];
    for file in [
        "app-template-claim.yaml",
        "bitnami-primary.yaml",
        "app-template-mounts.yaml",
        "size-without-enabled.yaml",
        "no-persistence-values.yaml",
    ] {
        let text = std::fs::read_to_string(shapes.join(file)).unwrap();
        if text.starts_with("# data: holds") {
            expected.push(format!("apps/{file}"));
        }
        repo.write(&format!("apps/{file}"), &text);
        resources.push(file.to_string());
    }
    repo.write(
        "apps/kustomization.yaml",
        &format!("resources: [{}]\n", resources.join(", ")),
    );
    let run = repo.run(&["check", "--format", "json"]);
    let (codes, doc) = parse(&run);
    assert!(
        codes.iter().all(|c| c == "unprotected-stateful"),
        "{codes:?}"
    );
    let found: Vec<&str> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["path"].as_str())
        .filter(|p| *p != "apps/data.yaml")
        .collect();
    assert_eq!(found, expected, "{}", run.stdout);
    assert!(
        run.stdout.contains(
            "HelmRelease/web/sonarr holds data (spec.values.persistence.config creates a volume claim"
        ),
        "{}",
        run.stdout
    );
}

/// `dependency-drift` gives no false alarm on the homelab, flat, waved and per unit; a wave
/// that stops waiting for the wave below is reported beside the drift of its generated file.
#[test]
fn dependency_drift_agrees_with_every_topology_of_the_homelab() {
    let repo = TestRepo::example("homelab");
    let (_, found, doc) = codes(&repo);
    assert_eq!(found, ["not-waved"], "{doc}");
    assert_eq!(repo.run(&["apply"]).code, 0);
    let (code, found, doc) = codes(&repo);
    assert_eq!((code, found.len()), (0, 0), "{doc}");
    let wave = repo.read("clusters/base/apps-wave-1.yaml");
    repo.write(
        "clusters/base/apps-wave-1.yaml",
        &wave.replace("name: apps-wave-0", "name: platform-config"),
    );
    let (_, found, doc) = codes(&repo);
    assert_eq!(
        found,
        ["wave-kustomization-drift", "dependency-drift"],
        "{doc}"
    );
    let message = doc["findings"][1]["message"].as_str().unwrap();
    assert!(
        message.contains("`flux-system/apps-wave-1`, as environment `dev` builds it, does not wait for `flux-system/apps-wave-0`")
            && message.contains("`gitea-actions` on `gitea`")
            && !message.contains("seerr"),
        "{message}"
    );
    assert_eq!(
        doc["findings"][1]["help"],
        "add `- name: apps-wave-0` to the dependsOn of `flux-system/apps-wave-1`, or remove the dependency from the units of fluxwave.yaml, catalog/nextcloud.yaml, catalog/radarr.yaml, catalog/semaphore.yaml and catalog/sonarr.yaml if it is not needed"
    );
    repo.write("clusters/base/apps-wave-1.yaml", &wave);
    let config = repo.read("fluxwave.yaml");
    repo.write("fluxwave.yaml", &format!("{config}topology: units\n"));
    assert_eq!(repo.run(&["apply"]).code, 0);
    let (code, found, doc) = codes(&repo);
    assert_eq!((code, found.len()), (0, 0), "{doc}");
}

/// In a pull request, `check --base` annotates each file once per reason: the five objects of
/// apps/jackett.yaml that the migration without its release commit deletes are one finding
/// that names each of them, not five that repeat the same reason.
#[test]
fn check_base_reports_each_file_once_per_reason() {
    let repo = TestRepo::example("homelab");
    repo.commit_all("flat");
    assert_eq!(repo.run(&["apply"]).code, 0);
    let run = repo.run(&["check", "--base", "HEAD", "--format", "json"]);
    assert_eq!(run.code, 1);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let deletions: Vec<&serde_json::Value> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "cutover-deletion")
        .collect();
    let files: std::collections::BTreeSet<&str> = deletions
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        files.len(),
        deletions.len(),
        "one finding per file: {deletions:?}"
    );
    let jackett = deletions
        .iter()
        .find(|f| f["path"] == "apps/jackett.yaml")
        .unwrap()["message"]
        .as_str()
        .unwrap();
    assert!(
        jackett.starts_with(
            "5 objects (dev): Flux deletes them: its owner flux-system/apps is removed"
        ),
        "{jackett}"
    );
    for object in [
        "Deployment/jackett/jackett",
        "Service/jackett/jackett",
        "Ingress/jackett/jackett",
    ] {
        assert!(jackett.contains(object), "{jackett}");
    }
    // The cutover report still counts every object.
    let cutover = repo.run(&["cutover", "--from", "HEAD", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&cutover.stdout).unwrap();
    assert_eq!(doc["deletions"].as_array().unwrap().len(), 59);
}
