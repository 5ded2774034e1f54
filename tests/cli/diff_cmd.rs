//! `fluxwave diff`: what changes in each Kustomization's objects between two revisions, on
//! repositories the test commits: the homelab migration (objects that move owner, with
//! cutover's verdict), an edited object's unified diff, a removed volume's data loss, Secret
//! values masked, the exit codes.

use serde_json::Value;

use crate::common::TestRepo;

fn diff_json(repo: &TestRepo, args: &[&str]) -> (i32, Value) {
    let mut all = vec!["diff"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--format", "json"]);
    let run = repo.run(&all);
    assert!(matches!(run.code, 0 | 1), "{}", run.stderr);
    (run.code, serde_json::from_str(&run.stdout).unwrap())
}

fn changes(doc: &Value) -> &[Value] {
    doc["changes"].as_array().unwrap()
}

fn find<'a>(doc: &'a Value, kind: &str, name: &str) -> &'a Value {
    changes(doc)
        .iter()
        .find(|c| c["kind"] == kind && c["name"] == name)
        .unwrap_or_else(|| panic!("{kind}/{name} not in {doc:#}"))
}

#[test]
fn the_homelab_migration_moves_objects_between_owners() {
    let repo = TestRepo::example("homelab");
    repo.commit_all("flat");
    let run = repo.run(&["diff", "--from", "HEAD"]);
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (
            0,
            "diff HEAD -> the working tree (environments: dev)\nno object changes\n"
        ),
        "{}",
        run.stderr
    );
    let apps = repo.run(&[
        "build",
        "--kustomization",
        "flux-system/apps",
        "--format",
        "json",
    ]);
    let apps: Value = serde_json::from_str(&apps.stdout).unwrap();
    let moving = apps["objects"].as_array().unwrap().len();

    let applied = repo.run(&["apply"]);
    assert_eq!(applied.code, 0, "{}", applied.stderr);
    let (code, doc) = diff_json(&repo, &["--from", "HEAD"]);
    assert_eq!(code, 1);
    assert_eq!(doc["version"], 1);
    let all = changes(&doc);
    // Every object of `apps` moves to a wave, as one modified entry, never removed and added.
    let moved: Vec<&Value> = all
        .iter()
        .filter(|c| c["previousOwner"] == "flux-system/apps")
        .collect();
    assert_eq!(moved.len(), moving, "{doc:#}");
    for c in &moved {
        assert_eq!(c["change"], "modified");
        assert!(
            c["owner"]
                .as_str()
                .unwrap()
                .starts_with("flux-system/apps-wave-"),
            "{c}"
        );
        assert!(c["deleted"].is_boolean(), "{c}");
    }
    let mut ids: Vec<(String, String, String)> = all
        .iter()
        .map(|c| {
            (
                c["kind"].to_string(),
                c["namespace"].to_string(),
                c["name"].to_string(),
            )
        })
        .collect();
    let n = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), n, "an object listed twice");
    // The Kustomizations: apps goes, and its finalizer deletes what it applied (cutover);
    // the waves come.
    let gone = find(&doc, "Kustomization", "apps");
    assert_eq!(
        (gone["change"].as_str(), gone["deleted"].as_bool()),
        (Some("removed"), Some(true)),
        "{gone}"
    );
    assert_eq!(
        find(&doc, "Kustomization", "apps-wave-0")["change"],
        "added"
    );
    // What cutover says is what diff says, object for object.
    let cutover = repo.run(&["cutover", "--from", "HEAD", "--format", "json"]);
    let cutover: Value = serde_json::from_str(&cutover.stdout).unwrap();
    let deleted = all
        .iter()
        .filter(|c| c["deleted"] == true && c["kind"] != "Kustomization")
        .count();
    assert_eq!(deleted, cutover["deletions"].as_array().unwrap().len());
    assert_eq!(doc["verdict"], cutover["verdict"]);
    assert_eq!(doc["summary"]["moved"], moving);

    let text = repo.run(&["diff", "--from", "HEAD"]);
    assert_eq!(text.code, 1);
    assert!(
        text.stdout
            .contains(&format!("{moving} modified ({moving} move owner)")),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout.contains("(moves from flux-system/apps)"),
        "{}",
        text.stdout
    );
    let github = repo.run(&["diff", "--from", "HEAD", "--format", "github"]);
    assert_eq!(github.code, 1);
    assert!(
        github
            .stdout
            .starts_with("### fluxwave diff: `HEAD` → the working tree\n"),
        "{}",
        github.stdout
    );
    assert!(github
        .stdout
        .contains("| Environment | Owner | Change | Object | Flux |"));
    assert!(github.stdout.len() < 65_536);
}

/// A flat app tier with a Deployment, a volume and a Secret, committed.
fn small() -> TestRepo {
    let repo = TestRepo::empty();
    repo.flux_wiring()
        .write("apps/web.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: default\nspec:\n  template:\n    spec:\n      containers:\n        - name: web\n          image: example/web:1.0.0\n")
        .write("apps/data.yaml", "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\n  namespace: default\nspec:\n  resources:\n    requests:\n      storage: 1Gi\n")
        .write("apps/secret.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: default\ndata:\n  password: b2xkLXBhc3N3b3JkLXZhbHVl\nstringData:\n  token: old-token-value-1234\n")
        .flat_kustomization();
    repo.commit_all("app");
    repo
}

#[test]
fn an_edit_is_a_unified_diff_and_a_removed_volume_is_data_loss() {
    let repo = small();
    let conf = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: conf\n  namespace: default\ndata:\n  app.ini: |\n    [server]\n    port = 80\n    host = a\n";
    repo.write("apps/conf.yaml", conf).flat_kustomization();
    repo.commit_all("conf");
    repo.write("apps/conf.yaml", &conf.replace("port = 80", "port = 8080"));
    repo.write(
        "apps/web.yaml",
        &repo.read("apps/web.yaml").replace("1.0.0", "1.1.0"),
    );
    repo.remove("apps/data.yaml");
    repo.flat_kustomization();
    let (code, doc) = diff_json(&repo, &["--from", "HEAD"]);
    assert_eq!(code, 1);
    let web = find(&doc, "Deployment", "web");
    assert_eq!(web["change"], "modified");
    assert_eq!(web["owner"], "flux-system/apps");
    assert!(web.get("previousOwner").is_none());
    let diff = web["diff"].as_str().unwrap();
    assert!(
        diff.starts_with("--- a/Deployment/default/web\n+++ b/Deployment/default/web\n"),
        "{diff}"
    );
    assert!(
        diff.contains(
            "\n-          image: example/web:1.0.0\n+          image: example/web:1.1.0\n"
        ),
        "{diff}"
    );
    let data = find(&doc, "PersistentVolumeClaim", "data");
    assert_eq!(data["change"], "removed");
    assert_eq!(
        (data["deleted"].as_bool(), data["stateful"].as_bool()),
        (Some(true), Some(true)),
        "{data}"
    );
    assert_eq!(data["rule"], "left-build");
    // A value of several lines is a literal block: the diff shows the line that changes.
    let conf = find(&doc, "ConfigMap", "conf")["diff"].as_str().unwrap();
    assert!(
        conf.contains("   app.ini: |\n     [server]\n-    port = 80\n+    port = 8080\n"),
        "{conf}"
    );
    assert_eq!(changes(&doc).len(), 3, "{doc:#}");
    let text = repo.run(&["diff", "--from", "HEAD"]);
    assert!(
        text.stdout.contains(
            "removed   PersistentVolumeClaim/default/data — Flux deletes it (left-build, DATA LOSS"
        ),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout
            .contains("    +          image: example/web:1.1.0\n"),
        "{}",
        text.stdout
    );
    let github = repo.run(&["diff", "--from", "HEAD", "--format", "github"]);
    assert!(
        github
            .stdout
            .contains("🛑 **deletes, data loss** (left-build)"),
        "{}",
        github.stdout
    );
    assert!(
        github
            .stdout
            .contains("```diff\n--- a/Deployment/default/web"),
        "{}",
        github.stdout
    );

    // Between two commits, --to.
    repo.commit_all("edit");
    let (code, between) = diff_json(&repo, &["--from", "HEAD~1", "--to", "HEAD"]);
    assert_eq!(code, 1);
    assert_eq!(between["changes"], doc["changes"]);
    assert_eq!(between["to"], "HEAD");
}

#[test]
fn secret_values_never_reach_diff_output() {
    let repo = small();
    let secret = repo
        .read("apps/secret.yaml")
        .replace("b2xkLXBhc3N3b3JkLXZhbHVl", "bmV3LXBhc3N3b3JkLXZhbHVl")
        .replace("old-token-value-1234", "new-token-value-5678");
    repo.write("apps/secret.yaml", &secret);
    let hidden = [
        "b2xkLXBhc3N3b3JkLXZhbHVl",
        "old-password-value",
        "old-token-value-1234",
        "bmV3LXBhc3N3b3JkLXZhbHVl",
        "new-password-value",
        "new-token-value-5678",
    ];
    for format in ["text", "json", "github"] {
        let run = repo.run(&["diff", "--from", "HEAD", "--format", format]);
        assert_eq!(run.code, 1, "{}", run.stderr);
        for h in hidden {
            assert!(
                !run.stdout.contains(h) && !run.stderr.contains(h),
                "{format}: {h}:\n{}",
                run.stdout
            );
        }
        assert!(
            run.stdout.contains("data.password") && run.stdout.contains("stringData.token"),
            "{format}:\n{}",
            run.stdout
        );
    }
    let (_, doc) = diff_json(&repo, &["--from", "HEAD"]);
    let c = find(&doc, "Secret", "db");
    assert_eq!(c["change"], "modified");
    assert_eq!(
        c["secretKeys"],
        serde_json::json!(["data.password", "stringData.token"])
    );
}

#[test]
fn bad_revisions_are_bad_input() {
    let repo = small();
    let run = repo.run(&["diff", "--from", "no-such-rev"]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(run.stderr.contains("no-such-rev"), "{}", run.stderr);
    let run = TestRepo::example("homelab").run(&["diff", "--from", "HEAD"]);
    assert_eq!(run.code, 2, "{}", run.stdout);
}

/// A Namespace that goes takes every object inside with it, though they do not change
/// themselves: diff lists them with cutover's verdict, beside the changes.
#[test]
fn what_a_deleted_namespace_takes_is_listed_too() {
    let repo = small();
    repo.write("apps/team.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n")
        .write("apps/team-config.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: team\ndata:\n  a: b\n")
        .flat_kustomization();
    repo.commit_all("team");
    repo.remove("apps/team.yaml");
    repo.flat_kustomization();
    let (code, doc) = diff_json(&repo, &["--from", "HEAD"]);
    assert_eq!(code, 1);
    assert_eq!(find(&doc, "Namespace", "team")["change"], "removed");
    assert_eq!(changes(&doc).len(), 1, "{doc:#}");
    let also = doc["alsoDeleted"].as_array().unwrap();
    assert_eq!(also.len(), 1, "{doc:#}");
    assert_eq!(
        (also[0]["name"].as_str(), also[0]["rule"].as_str()),
        (Some("settings"), Some("namespace-deleted"))
    );
    let text = repo.run(&["diff", "--from", "HEAD"]);
    assert!(text.stdout.contains("Flux also deletes, though they do not change\n  dev — owner flux-system/apps: ConfigMap/team/settings (namespace-deleted)"), "{}", text.stdout);
    let github = repo.run(&["diff", "--from", "HEAD", "--format", "github"]);
    // Names, and the reason that quotes them, are code spans (see tests/cli/markdown.rs).
    assert!(github.stdout.contains("Unchanged objects Flux also deletes (1):\n\n- `ConfigMap/team/settings` (`dev`, namespace-deleted): `its Namespace team is deleted, and Kubernetes deletes everything inside (opt-outs do not help)`\n"), "{}", github.stdout);
}
