//! No secret leaks: a repository seeded with marker values in every place a secret lives
//! (plaintext Secrets, SOPS secrets, a Secret with a YAML error inside its data, a secret
//! value at an unknown-field error, the catalog's env) and every command in every format
//! run on it; no output, error or log line may hold a marker.

use crate::common::{Run, TestRepo};

/// The marker values; each one is a secret somewhere in the repositories below.
const MARKERS: &[&str] = &[
    "PLAINDATAMARKER",
    "c2VjcmV0TUFSS0VS", // base64 in `data:`
    "STRINGDATAMARKER",
    "SOPSENCMARKER",
    "SOPSKEYMARKER",
    "BROKENDATAMARKER",
    "CATALOGENVMARKER",
    "UNKNOWNFIELDMARKER",
    "PATCHSECRETMARKER",
];

fn assert_clean(what: &str, run: &Run) {
    for m in MARKERS {
        assert!(
            !run.stdout.contains(m) && !run.stderr.contains(m),
            "{what} leaks {m}:\n--- stdout\n{}\n--- stderr\n{}",
            run.stdout,
            run.stderr
        );
    }
}

/// A valid flat repository with secrets in the app tier and in the catalog's env.
fn seeded() -> TestRepo {
    let repo = TestRepo::empty();
    repo.service("api", &[])
        .service("web", &["api"])
        .flux_wiring();
    // The catalog's env: a value written straight into a ServiceDefinition.
    let api = repo.read("catalog/api.yaml").replace(
        "  port: 8080\n",
        "  port: 8080\n  env:\n    - name: DB_PASSWORD\n      value: CATALOGENVMARKER\n",
    );
    repo.write("catalog/api.yaml", &api);
    repo.manifest("apps/api.yaml").manifest("apps/web.yaml");
    repo.write("apps/api-secret.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: api-secret\n  namespace: default\ntype: Opaque\ndata:\n  password: c2VjcmV0TUFSS0VS\nstringData:\n  token: STRINGDATAMARKER\n  plain: PLAINDATAMARKER\n");
    repo.write("apps/web-creds.sops.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: web-creds\n  namespace: default\nstringData:\n  password: ENC[AES256_GCM,data:SOPSENCMARKER,iv:abc=,tag:def=,type:str]\nsops:\n  age:\n    - recipient: age1xyz\n      enc: |\n        -----BEGIN AGE ENCRYPTED FILE-----\n        SOPSKEYMARKER\n        -----END AGE ENCRYPTED FILE-----\n  lastmodified: \"2024-01-01T00:00:00Z\"\n  mac: ENC[AES256_GCM,data:SOPSENCMARKER,type:str]\n  version: 3.8.1\n");
    repo.flat_kustomization();
    repo
}

fn every_command(repo: &TestRepo, label: &str) {
    let render_api = repo.path().join("catalog/api.yaml").display().to_string();
    let render_out = repo.path().join("rendered").display().to_string();
    let commands: &[&[&str]] = &[
        &["waves"],
        &["waves", "--format", "json"],
        &["waves", "--format", "markdown"],
        &["waves", "--format", "mermaid"],
        &["plan"],
        &["plan", "--format", "json"],
        &["check"],
        &["check", "--format", "json"],
        &["check", "--base", "HEAD"],
        &["check", "--base", "HEAD", "--format", "json"],
        &["cutover", "--from", "HEAD"],
        &["cutover", "--from", "HEAD", "--format", "json"],
        &["build"],
        &["build", "--format", "json"],
        &["diff", "--from", "HEAD"],
        &["diff", "--from", "HEAD", "--format", "json"],
        &["diff", "--from", "HEAD", "--format", "github"],
        &["render", &render_api, "-o", &render_out],
        &["apply", "--dry-run"],
        &["apply"],
        &["check", "--base", "HEAD"],
        &["cutover", "--from", "HEAD", "--format", "json"],
        &["cutover", "--from", "HEAD"],
        &["build"],
        &["diff", "--from", "HEAD"],
        &["diff", "--from", "HEAD", "--format", "json"],
    ];
    for args in commands {
        let run = repo.run(args);
        if std::env::var_os("FLUXWAVE_SHOW").is_some() {
            eprintln!(
                "== {label}: {args:?} -> {}\n{}\n{}",
                run.code, run.stdout, run.stderr
            );
        }
        assert_clean(&format!("{label}: fluxwave {}", args.join(" ")), &run);
    }
}

#[test]
fn no_command_prints_a_secret_of_a_valid_repository() {
    let repo = seeded();
    repo.commit_all("flat");
    every_command(&repo, "valid");
    // render wrote the env value into the manifest: that is its job, not a leak.
    assert!(repo.read("rendered/api.yaml").contains("CATALOGENVMARKER"));
}

#[test]
fn errors_inside_secrets_never_quote_them() {
    // A Secret with a YAML error inside its data: the builder of cutover reads it.
    let repo = seeded();
    repo.commit_all("flat");
    repo.write("apps/api-broken.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: api-broken\n  namespace: default\nstringData:\n  password: BROKENDATAMARKER: oops\n  other: \"BROKENDATAMARKER\n");
    repo.flat_kustomization();
    every_command(&repo, "broken data");
    // An environment patch that inlines a Secret and does not parse.
    let repo = seeded();
    repo.commit_all("flat");
    let dev = repo.read("clusters/dev/kustomization.yaml");
    repo.write("clusters/dev/kustomization.yaml", &format!("{dev}  - patch: |-\n      apiVersion: v1\n      kind: Secret\n      metadata:\n        name: x\n      stringData:\n        pw: PATCHSECRETMARKER: [\n"));
    every_command(&repo, "broken patch");

    // A secret value at the spot of an unknown-field error in the catalog, and a syntax
    // error beside the env value.
    let repo = seeded();
    let api = repo.read("catalog/api.yaml");
    repo.write(
        "catalog/api.yaml",
        &api.replace(
            "  port: 8080\n",
            "  password: UNKNOWNFIELDMARKER\n  port: 8080\n",
        ),
    );
    repo.commit_all("unknown field");
    let run = repo.run(&["waves"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("password"), "{}", run.stderr);
    every_command(&repo, "unknown field");
    let repo = seeded();
    let api = repo.read("catalog/api.yaml");
    repo.write(
        "catalog/api.yaml",
        &api.replace("CATALOGENVMARKER", "CATALOGENVMARKER: [oops"),
    );
    repo.commit_all("syntax error");
    let run = repo.run(&["waves"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    every_command(&repo, "env syntax error");
    // A type error at the env value quotes the value in serde's message.
    let repo = seeded();
    let api = repo.read("catalog/api.yaml");
    repo.write(
        "catalog/api.yaml",
        &api.replace("value: CATALOGENVMARKER", "value: {CATALOGENVMARKER: 1}"),
    );
    repo.commit_all("type error");
    every_command(&repo, "env type error");
}
