//! `fluxwave build`: the objects each Flux Kustomization applies, as a YAML stream that
//! parses and holds the object set the real kustomize builds, as JSON, with Secret values
//! masked, and bad input refused with exit 2.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::common::{kustomize, objects, TestRepo};

/// The documents of a `build` YAML stream, each with its comment line.
fn documents(stream: &str) -> Vec<(String, Value)> {
    stream
        .split("---\n")
        .filter(|d| !d.trim().is_empty())
        .map(|d| {
            let (comment, body) = d.split_once('\n').unwrap();
            assert!(comment.starts_with("# owner: "), "{d}");
            (comment.to_string(), serde_saphyr::from_str(body).unwrap())
        })
        .collect()
}

fn id(v: &Value) -> String {
    format!(
        "{}/{}/{}",
        v["kind"].as_str().unwrap_or(""),
        v["metadata"]["namespace"].as_str().unwrap_or(""),
        v["metadata"]["name"].as_str().unwrap_or("")
    )
}

#[test]
fn homelab_builds_what_kustomize_builds_for_each_kustomization() {
    let repo = TestRepo::example("homelab");
    let run = repo.run(&["build"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let docs = documents(&run.stdout);
    let mut by_owner: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (comment, v) in &docs {
        let owner = comment
            .trim_start_matches("# owner: ")
            .split(',')
            .next()
            .unwrap();
        assert!(comment.contains(", environment: dev, file: "), "{comment}");
        by_owner.entry(owner.to_string()).or_default().push(id(v));
    }
    // The root applies the Flux Kustomizations; each of them its folder, as kustomize builds it
    // (postBuild substitution changes values, not ids).
    for (owner, folder) in [
        ("flux-system/apps", "apps"),
        ("flux-system/platform", "platform"),
        ("flux-system/platform-config", "platform-config"),
    ] {
        let mut built = by_owner.remove(owner).unwrap_or_default();
        built.sort();
        let expected: Vec<String> = objects(&kustomize(&repo.path().join(folder)))
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        assert_eq!(built, expected, "{owner}");
    }
    let root = by_owner.remove("flux-system/flux-system").unwrap();
    assert!(
        root.contains(&"Kustomization/flux-system/apps".to_string()),
        "{root:?}"
    );
    assert!(by_owner.is_empty(), "{by_owner:?}");

    // JSON: the same objects, each whole.
    let run = repo.run(&["build", "--format", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["version"], 1);
    let objects = doc["objects"].as_array().unwrap();
    assert_eq!(objects.len(), docs.len());
    for (o, (_, v)) in objects.iter().zip(&docs) {
        assert_eq!(o["object"], *v);
        assert_eq!(
            id(&o["object"]),
            format!(
                "{}/{}/{}",
                o["kind"].as_str().unwrap(),
                o["namespace"].as_str().unwrap(),
                o["name"].as_str().unwrap()
            )
        );
        assert_eq!(o["environment"], "dev");
        assert!(o["owner"].as_str().unwrap().starts_with("flux-system/"));
    }

    // One Kustomization, one environment.
    let run = repo.run(&[
        "build",
        "--env",
        "dev",
        "--kustomization",
        "flux-system/platform-config",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let docs = documents(&run.stdout);
    assert!(!docs.is_empty());
    assert!(docs
        .iter()
        .all(|(c, _)| c.starts_with("# owner: flux-system/platform-config,")));
}

/// A small repository whose app tier holds a plain Secret (data and stringData) and a SOPS
/// one.
fn with_secrets() -> TestRepo {
    let repo = TestRepo::empty();
    repo.flux_wiring()
        .write(
            "apps/secret.yaml",
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: default\ndata:\n  password: aHVudGVyMi1pcy1hLWxvbmctb25l\nstringData:\n  token: plain-token-value-1234\n",
        )
        .write(
            "apps/sops.yaml",
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: enc\n  namespace: default\ndata:\n  key: ENC[AES256_GCM,data:c2VjcmV0Y2lwaGVy,iv:aXY=,tag:dGFn,type:str]\nsops:\n  mac: ENC[AES256_GCM,data:bWFjbWFjbWFj,iv:aXY=,tag:dGFn,type:str]\n  lastmodified: \"2024-01-01T00:00:00Z\"\n  version: 3.8.1\n",
        )
        .write(
            "apps/app.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: default\ndata:\n  image: example/app:1.0.0\n",
        )
        .flat_kustomization();
    repo
}

const HIDDEN: [&str; 6] = [
    "aHVudGVyMi1pcy1hLWxvbmctb25l",
    "hunter2-is-a-long-one",
    "plain-token-value-1234",
    "c2VjcmV0Y2lwaGVy",
    "bWFjbWFjbWFj",
    "ENC[",
];

#[test]
fn secret_values_never_reach_build_output() {
    let repo = with_secrets();
    for format in ["yaml", "json"] {
        let run = repo.run(&["build", "--format", format]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        for hidden in HIDDEN {
            assert!(
                !run.stdout.contains(hidden),
                "{format}: {hidden} shown:\n{}",
                run.stdout
            );
            assert!(!run.stderr.contains(hidden), "{format}: {hidden} on stderr");
        }
        assert!(run.stdout.contains("password") && run.stdout.contains("token"));
        assert!(run.stdout.contains("example/app:1.0.0"), "{}", run.stdout);
    }
    let run = repo.run(&["build"]);
    let docs = documents(&run.stdout);
    let (comment, secret) = docs
        .iter()
        .find(|(_, v)| v["metadata"]["name"] == "db")
        .unwrap();
    assert!(comment.ends_with("secret values masked"), "{comment}");
    assert_eq!(secret["stringData"]["token"], "***");
    // The SOPS Secret as Flux applies it, decrypted: no sops block.
    let (_, sops) = docs
        .iter()
        .find(|(_, v)| v["metadata"]["name"] == "enc")
        .unwrap();
    assert!(sops.get("sops").is_none(), "{sops}");
    assert_eq!(sops["data"]["key"], "***");
}

#[test]
fn bad_input_names_what_there_is() {
    let repo = TestRepo::example("homelab");
    let run = repo.run(&["build", "--env", "prod"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("--env prod") && run.stderr.contains("dev (clusters/dev)"),
        "{}",
        run.stderr
    );
    assert!(run.stdout.is_empty());
    let run = repo.run(&["build", "--kustomization", "flux-system/nope"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("flux-system/nope") && run.stderr.contains("flux-system/apps, "),
        "{}",
        run.stderr
    );
    let run = repo.run(&["build", "--kustomization", "apps"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("NAMESPACE/NAME"), "{}", run.stderr);
    let run = TestRepo::empty().run(&["build"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("no Flux environment"), "{}", run.stderr);
}

#[test]
fn a_kustomization_that_fails_to_build_is_bad_input_and_the_rest_is_printed() {
    let repo = TestRepo::empty();
    repo.flux_wiring()
        .write("apps/kustomization.yaml", "resources:\n  - missing.yaml\n");
    let run = repo.run(&["build"]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(
        run.stderr.contains("flux-system/apps fails to build")
            && run.stderr.contains("missing.yaml"),
        "{}",
        run.stderr
    );
    assert!(run.stdout.contains("name: cluster-vars"), "{}", run.stdout);
    // In JSON, one document: the failure in it, beside what the others apply.
    let run = repo.run(&["build", "--format", "json"]);
    assert_eq!(run.code, 2);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["failed"][0]["kustomization"], "flux-system/apps");
    assert!(doc["failed"][0]["error"]
        .as_str()
        .unwrap()
        .contains("missing.yaml"));
    assert!(doc["objects"]
        .as_array()
        .unwrap()
        .iter()
        .any(|o| o["name"] == "cluster-vars"));
    assert!(doc.get("error").is_none());
}

/// A `${VAR}` nothing sets and without a default fails Flux's build (strict substitution,
/// kustomize-controller's default since v1.9): `build` lists it as failed, exits 2 and
/// prints nothing of it, as for any other build Flux fails.
#[test]
fn a_build_strict_substitution_fails_is_listed_as_failed_and_not_printed() {
    let repo = TestRepo::empty();
    repo.flux_wiring()
        .write("clusters/base/apps.yaml", "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: apps, namespace: flux-system}\nspec:\n  interval: 10m\n  path: ./apps\n  prune: true\n  sourceRef: {kind: GitRepository, name: flux-system}\n  postBuild:\n    substitute: {GREETING: hello}\n")
        .write("apps/kustomization.yaml", "resources:\n  - cm.yaml\n")
        .write(
            "apps/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: greeting, namespace: apps}\ndata: {who: '${NOBODY_SETS_ME}'}\n",
        );
    let run = repo.run(&["build", "--format", "json"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        doc["failed"][0]["kustomization"], "flux-system/apps",
        "{doc:#}"
    );
    assert!(doc["failed"][0]["error"]
        .as_str()
        .unwrap()
        .contains("${NOBODY_SETS_ME}"));
    let names: Vec<&str> = doc["objects"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|o| o["name"].as_str())
        .collect();
    assert!(!names.contains(&"greeting"), "{names:?}");
    assert!(names.contains(&"cluster-vars"), "{names:?}");
}

/// A Secret's values that postBuild substitutes into another object (`substituteFrom` a
/// Secret) are that Secret's values: masked there too, however short, in build and diff.
#[test]
fn values_substituted_from_a_secret_are_masked_where_they_land() {
    let repo = TestRepo::empty();
    repo.write("clusters/dev/kustomization.yaml", "resources:\n  - cfg.yaml\n  - apps.yaml\n")
        .write("clusters/dev/cfg.yaml", &crate::common::flux_ks("cfg", "./cfg", &[]))
        .write(
            "clusters/dev/apps.yaml",
            &crate::common::flux_ks("apps", "./apps", &["postBuild:", "  substituteFrom:", "    - kind: Secret", "      name: vars"]),
        )
        .write("cfg/kustomization.yaml", "resources:\n  - vars.yaml\n")
        .write("cfg/vars.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: vars\n  namespace: flux-system\nstringData:\n  PASS: pw-sub-9876543\n  SHORT: q7z\ndata:\n  B64: ZGVjb2RlZC1zdWI=\n")
        .write("apps/kustomization.yaml", "resources:\n  - cm.yaml\n")
        .write("apps/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: default\ndata:\n  url: postgres://u:${PASS}@db\n  short: x-${SHORT}\n  b: ${B64}\n");
    let hidden = ["pw-sub-9876543", "q7z", "decoded-sub", "ZGVjb2RlZC1zdWI="];
    for format in ["yaml", "json"] {
        let run = repo.run(&["build", "--format", format]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        for h in hidden {
            assert!(!run.stdout.contains(h), "{format}: {h}:\n{}", run.stdout);
        }
        assert!(run.stdout.contains("postgres://u:***@db"), "{}", run.stdout);
    }
    repo.commit_all("vars");
    repo.write(
        "cfg/vars.yaml",
        &repo.read("cfg/vars.yaml").replace("q7z", "r8y"),
    );
    let run = repo.run(&["diff", "--from", "HEAD"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    for h in hidden.iter().chain(&["r8y"]) {
        assert!(!run.stdout.contains(h), "{h}:\n{}", run.stdout);
    }
    assert!(run.stdout.contains("stringData.SHORT"), "{}", run.stdout);
}
