//! `fluxwave cutover` on real git repositories built by the test: the seed's migration with
//! and without the release commit, wave promotions and demotions, removed Kustomizations,
//! opt-outs, cascades, identity changes, the per-app `ks.yaml` layout and HelmReleases; and
//! the native builder checked against the real kustomize.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::common::{
    cutover_json, deletion_id, deletions, flux_ks as ks, kustomize, objects, TestRepo,
};
use fluxwave::testing::kustomize::Builder;
use fluxwave::testing::tree::FileTree;

fn cutover(repo: &TestRepo, from: &str) -> (i32, Value, String) {
    let (code, doc) = cutover_json(repo, &["--from", from]);
    let text = repo.run(&["cutover", "--from", from]);
    assert_eq!(text.code, code, "{}", text.stderr);
    (code, doc, text.stdout)
}

/// `Kind/namespace/name` of every deletion (stateful ones marked with `!`), with its rule.
fn deleted(doc: &Value) -> Vec<String> {
    deletions(doc)
        .iter()
        .map(|d| {
            let mark = if d["stateful"].as_bool().unwrap() {
                "!"
            } else {
                ""
            };
            format!("{mark}{} {}", deletion_id(d), d["rule"].as_str().unwrap())
        })
        .collect()
}

/// examples/homelab as the seed had it: its manifests carried no `prune: disabled`
/// protection (fluxwave's rendered ones do, see `rendered_protection_keeps_the_data`).
fn seed_homelab() -> TestRepo {
    let repo = TestRepo::example("homelab");
    let protection = "  annotations:\n    kustomize.toolkit.fluxcd.io/prune: disabled\n";
    for (path, bytes) in repo.snapshot() {
        let text = String::from_utf8(bytes).unwrap();
        if path.starts_with("apps/") && text.contains(protection) {
            repo.write(&path, &text.replace(protection, ""));
        }
    }
    for (path, bytes) in repo.snapshot() {
        assert!(
            !path.starts_with("apps/")
                || !String::from_utf8_lossy(&bytes).contains("prune: disabled"),
            "{path} is still protected"
        );
    }
    repo
}

/// The seed's repository with its waves applied and committed.
fn waved_homelab() -> TestRepo {
    let repo = seed_homelab();
    repo.write(
        "clusters/base/apps.yaml",
        &repo
            .read("clusters/base/apps.yaml")
            .replace("prune: true", "prune: false"),
    );
    repo.commit_all("release apps");
    assert_eq!(repo.run(&["apply"]).code, 0);
    repo.commit_all("waves");
    repo
}

#[test]
fn the_seeds_migration_with_prune_true_destroys_the_databases() {
    let repo = seed_homelab();
    repo.commit_all("homelab before the waves");
    let run = repo.run(&["apply"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let (code, doc, text) = cutover(&repo, "HEAD");
    assert_eq!(code, 1, "{text}");
    let all = deleted(&doc);
    for must in [
        "!Cluster/nextcloud-db/nextcloud-db owner-removed",
        "!Cluster/semaphore-db/semaphore-db owner-removed",
        "!Namespace//nextcloud-db owner-removed",
        "!Namespace//semaphore-db owner-removed",
    ] {
        assert!(all.contains(&must.to_string()), "{must} not in {all:#?}");
    }
    assert!(
        all.iter().any(|d| d.starts_with("!PersistentVolumeClaim/")),
        "{all:#?}"
    );
    assert!(all.iter().any(|d| d.starts_with("Deployment/")), "{all:#?}");
    // Flux's own Kustomizations are not deletions; data loss comes first.
    assert!(!all.iter().any(|d| d.starts_with("Kustomization/")));
    let first_plain = all.iter().position(|d| !d.starts_with('!')).unwrap();
    assert!(all[first_plain..].iter().all(|d| !d.starts_with('!')));
    let d0 = &doc["deletions"][0];
    assert_eq!(d0["owner"], "Kustomization/flux-system/apps");
    assert!(
        d0["reason"].as_str().unwrap().contains("prune: true"),
        "{d0}"
    );

    // The runbook is the seed's section 5 with the real names.
    for line in [
        "clusters/base/apps.yaml: set `prune: false` on Kustomization/flux-system/apps",
        "kubectl -n flux-system get kustomization apps -o jsonpath='{.spec.prune}'    # must print false",
        "flux suspend kustomization apps -n flux-system",
        r#"kubectl -n flux-system patch kustomization apps --type=merge -p '{"spec":{"prune":false}}'"#,
        "kubectl -n nextcloud-db annotate cluster.postgresql.cnpg.io/nextcloud-db kustomize.toolkit.fluxcd.io/prune=disabled",
        "kubectl -n semaphore-db annotate cluster.postgresql.cnpg.io/semaphore-db kustomize.toolkit.fluxcd.io/prune-",
        "flux get kustomizations    # apps-wave-0, apps-wave-1, apps-wave-2 Ready; apps absent",
    ] {
        assert!(text.contains(line), "{line}\n---\n{text}");
    }
    assert!(text.find("DATA LOSS").unwrap() < text.find("\nDeleted").unwrap());

    // check --base blocks the merge with the same analysis.
    let check = repo.run(&["check", "--base", "HEAD", "--format", "json"]);
    assert_eq!(check.code, 1);
    let findings: Value = serde_json::from_str(&check.stdout).unwrap();
    let codes: BTreeSet<&str> = findings["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert!(
        codes.contains("deletes-stateful") && codes.contains("cutover-deletion"),
        "{codes:?}"
    );
}

#[test]
fn the_migration_after_a_release_commit_is_safe() {
    let repo = waved_homelab();
    let (code, doc, text) = cutover(&repo, "HEAD~1");
    assert_eq!(code, 0, "{text}");
    assert_eq!(doc["deletions"], Value::Array(vec![]));
    assert_eq!(doc["safe"], true);
    assert!(text.contains("safe: Flux deletes nothing"), "{text}");
    let check = repo.run(&["check", "--base", "HEAD~1"]);
    assert_eq!(check.code, 0, "{}", check.stdout);
}

#[test]
fn a_clean_tree_reports_nothing_and_bad_revisions_exit_2() {
    let repo = TestRepo::example("homelab");
    repo.commit_all("init");
    let (code, doc, _) = cutover(&repo, "HEAD");
    assert_eq!((code, doc["deletions"].as_array().unwrap().len()), (0, 0));
    let run = repo.run(&["cutover", "--from", "no-such-branch"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("revision `no-such-branch` does not exist"),
        "{}",
        run.stderr
    );
    let run = repo.run(&["cutover", "--from", "HEAD", "--to", "--upload-pack=x"]);
    assert_eq!(run.code, 2);
    let plain = TestRepo::example("homelab");
    let run = plain.run(&["cutover", "--from", "HEAD"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("not inside a git repository"),
        "{}",
        run.stderr
    );
}

fn add_dependency(repo: &TestRepo, service: &str, on: &str) {
    let text = repo.read(&format!("catalog/{service}.yaml"));
    let text = if text.contains("  dependencies:\n") {
        text.replace(
            "  dependencies:\n",
            &format!("  dependencies:\n    - to: {on}\n"),
        )
    } else {
        text.replace(
            "spec:\n",
            &format!("spec:\n  dependencies:\n    - to: {on}\n"),
        )
    };
    repo.write(&format!("catalog/{service}.yaml"), &text);
}

#[test]
fn a_promotion_to_a_later_wave_is_delete_then_recreate() {
    let repo = waved_homelab();
    add_dependency(&repo, "pihole", "sonarr"); // wave 0 -> wave 2
    assert_eq!(repo.run(&["apply"]).code, 0);
    let (code, doc, text) = cutover(&repo, "HEAD");
    assert_eq!(code, 1, "{text}");
    let all = deleted(&doc);
    assert!(
        all.contains(&"!PersistentVolumeClaim/pihole/pihole-config moved-later".to_string()),
        "{all:#?}"
    );
    assert!(
        all.contains(&"Deployment/pihole/pihole moved-later".to_string()),
        "{all:#?}"
    );
    assert!(
        all.iter().all(|d| d.contains("pihole")),
        "only pihole moves: {all:#?}"
    );
    assert!(text.contains("reconciles after it (dependsOn)"), "{text}");
    let check = repo.run(&["check", "--base", "HEAD"]);
    assert!(
        check.stdout.contains("error[promotes-stateful]"),
        "{}",
        check.stdout
    );
}

#[test]
fn a_demotion_to_an_earlier_wave_is_an_adoption() {
    let repo = waved_homelab();
    let text = repo.read("catalog/sonarr.yaml");
    let text = text
        .replace("    - to: qbittorrent\n", "")
        .replace("    - to: jackett\n", "")
        .replace("  dependencies:\n", "");
    repo.write("catalog/sonarr.yaml", &text); // wave 1 -> wave 0
    assert_eq!(
        repo.run(&["apply"]).code,
        0,
        "{}",
        repo.run(&["plan"]).stdout
    );
    let (code, doc, text) = cutover(&repo, "HEAD");
    assert_eq!(code, 0, "{text}\n{doc}");
}

#[test]
fn a_wave_removed_while_its_objects_move_down_deletes_them() {
    let repo = waved_homelab();
    let text = repo
        .read("catalog/seerr.yaml")
        .replace("    - to: sonarr\n", "")
        .replace("    - to: radarr\n", "    - to: qbittorrent\n");
    repo.write("catalog/seerr.yaml", &text); // wave 2 -> wave 1; apps-wave-2 is removed
    assert_eq!(repo.run(&["apply"]).code, 0);
    assert!(!repo.exists("clusters/base/apps-wave-2.yaml"));
    let (code, doc, _) = cutover(&repo, "HEAD");
    assert_eq!(code, 1);
    let all = deleted(&doc);
    assert!(
        all.contains(&"Deployment/seerr/seerr owner-removed".to_string()),
        "{all:#?}"
    );
    assert!(all.iter().all(|d| d.contains("seerr")), "{all:#?}");
    assert_eq!(
        doc["deletions"][0]["newOwner"],
        "Kustomization/flux-system/apps-wave-1"
    );
}

/// A small Flux repository: a root with two Kustomizations (`db` first, `web` after it).
fn flux_repo() -> TestRepo {
    let repo = TestRepo::empty();
    repo.write("clusters/prod/kustomization.yaml", "resources: [db.yaml, web.yaml]\n")
        .write("clusters/prod/db.yaml", &ks("db", "./db", &[]))
        .write("clusters/prod/web.yaml", &ks("web", "./web", &["dependsOn: [{name: db}]"]))
        .write("db/kustomization.yaml", "resources: [pg.yaml]\n")
        .write("db/pg.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: pg}\n---\napiVersion: postgresql.cnpg.io/v1\nkind: Cluster\nmetadata: {name: pg, namespace: pg}\nspec: {instances: 1}\n---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data, namespace: pg}\nspec: {resources: {requests: {storage: 1Gi}}}\n")
        .write("web/app.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: web}\nspec: {}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config, namespace: web}\n");
    repo.commit_all("init");
    repo
}

#[test]
fn an_orphan_policy_set_with_the_removal_does_not_help() {
    let repo = flux_repo();
    repo.write(
        "clusters/prod/kustomization.yaml",
        "resources: [web.yaml]\n",
    );
    repo.write(
        "clusters/prod/db.yaml",
        &ks("db", "./db", &["deletionPolicy: Orphan"]),
    );
    let (code, doc, _) = cutover(&repo, "HEAD");
    assert_eq!(code, 1);
    assert!(deleted(&doc).contains(&"!Cluster/pg/pg owner-removed".to_string()));

    // Set in a commit of its own first, it releases them.
    let repo = flux_repo();
    repo.write(
        "clusters/prod/db.yaml",
        &ks("db", "./db", &["deletionPolicy: Orphan"]),
    );
    repo.commit_all("orphan");
    repo.write(
        "clusters/prod/kustomization.yaml",
        "resources: [web.yaml]\n",
    );
    let (code, doc, _) = cutover(&repo, "HEAD");
    assert_eq!((code, deleted(&doc)), (0, vec![]));
}

#[test]
fn a_cluster_with_prune_disabled_is_not_deleted() {
    let repo = flux_repo();
    let pg = repo.read("db/pg.yaml").replace(
        "metadata: {name: pg, namespace: pg}",
        "metadata: {name: pg, namespace: pg, annotations: {kustomize.toolkit.fluxcd.io/prune: disabled}}",
    );
    repo.write("db/pg.yaml", &pg);
    repo.commit_all("protect the database");
    let kept: String = pg
        .split("---\n")
        .filter(|d| !d.contains("kind: Cluster"))
        .collect::<Vec<_>>()
        .join("---\n");
    repo.write("db/pg.yaml", &kept);
    let (code, doc, _) = cutover(&repo, "HEAD");
    assert_eq!((code, deleted(&doc)), (0, vec![]));
}

#[test]
fn a_namespace_removed_with_a_pvc_inside_takes_it_along() {
    let repo = flux_repo();
    let pg = repo.read("db/pg.yaml");
    let without_ns = pg.split_once("---\n").unwrap().1;
    repo.write("db/pg.yaml", without_ns);
    let (code, doc, _) = cutover(&repo, "HEAD");
    assert_eq!(code, 1);
    assert_eq!(
        deleted(&doc),
        [
            "!Cluster/pg/pg namespace-deleted",
            "!Namespace//pg left-build",
            "!PersistentVolumeClaim/pg/data namespace-deleted"
        ]
    );
}

#[test]
fn a_target_namespace_change_is_an_identity_change() {
    let repo = flux_repo();
    repo.write(
        "clusters/prod/web.yaml",
        &ks(
            "web",
            "./web",
            &["dependsOn: [{name: db}]", "targetNamespace: frontend"],
        ),
    );
    let (code, doc, text) = cutover(&repo, "HEAD");
    assert_eq!(code, 1);
    assert_eq!(
        deleted(&doc),
        [
            "ConfigMap/web/web-config identity-changed",
            "Deployment/web/web identity-changed"
        ]
    );
    assert!(
        text.contains("its identity changes to Deployment/frontend/web"),
        "{text}"
    );
}

#[test]
fn a_move_between_unordered_owners_and_a_demotion() {
    let repo = flux_repo();
    // The ConfigMap moves from web to db: db reconciles first, so it adopts it.
    let app = repo.read("web/app.yaml");
    let (deploy, cm) = app.split_once("---\n").unwrap();
    repo.write("web/app.yaml", deploy);
    repo.write("db/kustomization.yaml", "resources: [pg.yaml, cm.yaml]\n");
    repo.write("db/cm.yaml", cm);
    let (code, doc, _) = cutover(&repo, "HEAD");
    assert_eq!((code, deleted(&doc)), (0, vec![]));
    // The other way round is a promotion: delete, then recreate.
    repo.commit_all("cm in db");
    repo.write("db/kustomization.yaml", "resources: [pg.yaml]\n");
    repo.write("web/app.yaml", &app);
    let (code, doc, _) = cutover(&repo, "HEAD");
    assert_eq!(
        (code, deleted(&doc)),
        (1, vec!["ConfigMap/web/web-config moved-later".to_string()])
    );
}

#[test]
fn per_app_ks_files_under_a_parent_that_patches_them() {
    let repo = TestRepo::empty();
    repo.write(
        "kubernetes/flux/cluster/ks.yaml",
        &ks(
            "cluster-apps",
            "./kubernetes/apps",
            &[
                "patches:",
                "  - target: {group: kustomize.toolkit.fluxcd.io, kind: Kustomization}",
                "    patch: |-",
                "      apiVersion: kustomize.toolkit.fluxcd.io/v1",
                "      kind: Kustomization",
                "      metadata: {name: not-used}",
                "      spec:",
                "        decryption: {provider: sops, secretRef: {name: sops-age}}",
                "        prune: true",
            ],
        ),
    )
    .write(
        "clusters/main/kustomization.yaml",
        "resources: [../../kubernetes/flux/cluster]\n",
    )
    .write(
        "kubernetes/flux/cluster/kustomization.yaml",
        "resources: [ks.yaml]\n",
    );
    for (ns, app) in [("media", "sonarr"), ("media", "radarr"), ("db", "postgres")] {
        let path = format!("kubernetes/apps/{ns}/{app}");
        let child = ks(
            app,
            &format!("./{path}/app"),
            &["targetNamespace: ".to_string().as_str()],
        )
        .replace("  prune: true\n", "  prune: false\n")
        .replace(
            "  targetNamespace: \n",
            &format!("  targetNamespace: {ns}\n"),
        );
        repo.write(&format!("{path}/ks.yaml"), &child)
            .write(&format!("{path}/app/kustomization.yaml"), "resources: [app.yaml]\n")
            .write(&format!("{path}/app/app.yaml"), &format!("apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {{name: {app}}}\n---\napiVersion: v1\nkind: Service\nmetadata: {{name: {app}}}\n"));
    }
    for ns in ["media", "db"] {
        let apps: Vec<&str> = if ns == "media" {
            vec!["sonarr", "radarr"]
        } else {
            vec!["postgres"]
        };
        let list: String = apps
            .iter()
            .map(|a| format!("  - ./{a}/ks.yaml\n"))
            .collect();
        repo.write(
            &format!("kubernetes/apps/{ns}/kustomization.yaml"),
            &format!("resources:\n  - ./namespace.yaml\n{list}"),
        )
        .write(
            &format!("kubernetes/apps/{ns}/namespace.yaml"),
            &format!("apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n"),
        );
    }
    repo.commit_all("cluster-template layout");
    let (code, _, text) = cutover(&repo, "HEAD");
    assert_eq!(code, 0, "{text}");
    assert!(!text.contains("Not modelled"), "{text}");

    // radarr goes: its ks.yaml leaves the parent's build; the parent's patch made it prune.
    repo.write(
        "kubernetes/apps/media/kustomization.yaml",
        "resources:\n  - ./namespace.yaml\n  - ./sonarr/ks.yaml\n",
    );
    let (code, doc, _) = cutover(&repo, "HEAD");
    assert_eq!(code, 1);
    assert_eq!(
        deleted(&doc),
        [
            "!StatefulSet/media/radarr owner-removed",
            "Service/media/radarr owner-removed"
        ]
    );
    assert_eq!(
        doc["deletions"][0]["owner"],
        "Kustomization/flux-system/radarr"
    );
}

#[test]
fn a_removed_helmrelease_is_an_uninstall() {
    let repo = flux_repo();
    repo.write("web/hr.yaml", "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: redis, namespace: web}\nspec:\n  chart: {spec: {chart: redis, sourceRef: {kind: HelmRepository, name: bitnami}}}\n  values:\n    master: {persistence: {enabled: true, size: 8Gi}}\n");
    repo.commit_all("redis");
    repo.remove("web/hr.yaml");
    let (code, doc, text) = cutover(&repo, "HEAD");
    assert_eq!(code, 1);
    assert_eq!(deleted(&doc), ["!HelmRelease/web/redis left-build"]);
    let d = &doc["deletions"][0];
    let reason = d["reason"].as_str().unwrap();
    assert!(reason.contains("Helm uninstalls the release"), "{reason}");
    assert_eq!(d["data"], "holds");
    assert_eq!(
        d["evidence"],
        "spec.values.master.persistence creates a volume claim (size 8Gi)"
    );
    assert!(
        text.contains("\nDATA LOSS\n")
            && text.contains("HelmRelease/web/redis — spec.values.master.persistence"),
        "{text}"
    );
}

/// The fixture `tests/fixtures/cutover/<name>`: each file with the `data` and `evidence` its
/// header comment expects of it.
fn expected(name: &str) -> Vec<(String, String, String, String)> {
    let dir = crate::common::fixtures().join("cutover").join(name);
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let header = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("# {key}: ")))
                .unwrap_or("")
                .to_string()
        };
        let file = path.file_name().unwrap().to_str().unwrap().to_string();
        out.push((file, text.clone(), header("data"), header("evidence")));
    }
    out.sort();
    out
}

/// Each shape of values a chart reads for its volumes, one HelmRelease per file, removed:
/// data loss when the values create a claim, none when they only mount something else,
/// "may" when only the chart's defaults could say.
#[test]
fn a_helmrelease_is_judged_by_the_claims_its_values_create() {
    let repo = flux_repo();
    let fixtures = expected("helm-data");
    assert!(fixtures.len() >= 10, "{fixtures:?}");
    for (file, text, _, _) in &fixtures {
        repo.write(&format!("web/releases/{file}"), text);
    }
    repo.commit_all("releases");
    for (file, _, _, _) in &fixtures {
        repo.remove(&format!("web/releases/{file}"));
    }
    let (code, doc, text) = cutover(&repo, "HEAD");
    assert_eq!(code, 1, "{text}");
    let deletions = doc["deletions"].as_array().unwrap();
    assert_eq!(deletions.len(), fixtures.len(), "{text}");
    for (file, _, data, evidence) in &fixtures {
        let d = deletions
            .iter()
            .find(|d| d["file"].as_str() == Some(&format!("web/releases/{file}")))
            .unwrap_or_else(|| panic!("{file} is not deleted: {text}"));
        assert_eq!(d["data"], data.as_str(), "{file}: {d}");
        assert_eq!(d["stateful"], data == "holds", "{file}: {d}");
        match d["evidence"].as_str() {
            Some(found) => assert!(
                !evidence.is_empty() && found.contains(evidence.as_str()),
                "{file}: {found:?} does not contain {evidence:?}"
            ),
            None => assert!(data == "none", "{file}: {d}"),
        }
    }
    // The suspended one is let go without an uninstall (helm-controller `reconcileDelete`).
    let paperless = deletions.iter().find(|d| d["name"] == "paperless").unwrap();
    assert!(
        paperless["reason"].as_str().unwrap().contains("suspended"),
        "{paperless}"
    );
    // Text: data loss, then what may hold data, then the rest; the runbook backs up both.
    let (loss, may, rest) = (
        text.find("\nDATA LOSS\n").unwrap(),
        text.find("\nMay hold data (chart not rendered)\n").unwrap(),
        text.find("\nDeleted\n").unwrap(),
    );
    assert!(loss < may && may < rest, "{text}");
    assert!(
        text[may..rest].contains("HelmRelease/web/gitea — spec.values.persistence sizes a volume")
            && !text[may..rest].contains("HelmRelease/web/plex"),
        "{text}"
    );
    let holds = fixtures.iter().filter(|f| f.2 == "holds").count();
    let maybe = fixtures.iter().filter(|f| f.2 == "may").count();
    assert!(
        text.contains(&format!("{holds} of them holding data, {maybe} that may\n")),
        "{text}"
    );
    assert!(
        text.contains("back up what may hold data as well (charts are not rendered"),
        "{text}"
    );
    assert!(
        text.contains("kubectl -n web annotate helmrelease.helm.toolkit.fluxcd.io/gitea kustomize.toolkit.fluxcd.io/prune=disabled"),
        "{text}"
    );
}

/// The false positive this judgment fixes: a HelmRelease without persistence is not data
/// loss because another app's claim shares its namespace.
#[test]
fn a_helmrelease_is_not_judged_by_its_neighbours() {
    let repo = flux_repo();
    repo.write(
        "db/pg.yaml",
        &repo.read("db/pg.yaml").replace(
            "namespace: pg}\nspec: {resources",
            "namespace: web}\nspec: {resources",
        ),
    );
    repo.write("web/echo.yaml", "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: echo, namespace: web}\nspec:\n  chartRef: {kind: OCIRepository, name: app-template}\n  values:\n    controllers: {echo: {containers: {app: {image: {repository: ghcr.io/example/echo, tag: '1.0'}}}}}\n    persistence: {tmp: {type: emptyDir}}\n");
    repo.commit_all("echo beside a claim");
    repo.remove("web/echo.yaml");
    let (code, doc, text) = cutover(&repo, "HEAD");
    assert_eq!(code, 1, "{text}");
    assert_eq!(deleted(&doc), ["HelmRelease/web/echo left-build"]);
    assert_eq!(doc["deletions"][0]["data"], "none");
    assert_eq!(doc["deletions"][0]["evidence"], Value::Null);
    assert!(
        !text.contains("DATA LOSS") && !text.contains("May hold"),
        "{text}"
    );
    assert!(!text.contains("back up"), "{text}");
}

/// A deleted Namespace holds data when an object in it does, the evidence naming that object;
/// a HelmRelease counts in the namespace its chart installs into.
#[test]
fn a_namespace_holds_what_its_objects_hold() {
    let repo = flux_repo();
    repo.write("web/ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: media}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: tools}\n");
    repo.write("web/jellyfin.yaml", "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: jellyfin, namespace: web}\nspec:\n  targetNamespace: media\n  chartRef: {kind: OCIRepository, name: app-template}\n  values:\n    persistence: {config: {accessMode: ReadWriteOnce, size: 10Gi}}\n");
    repo.write("web/wiki.yaml", "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: wiki, namespace: tools}\nspec:\n  chart: {spec: {chart: wiki, sourceRef: {kind: HelmRepository, name: wiki}}}\n");
    repo.commit_all("namespaces");
    repo.remove("web/ns.yaml");
    let (code, doc, text) = cutover(&repo, "HEAD");
    assert_eq!(code, 1, "{text}");
    let ns = |name: &str| {
        doc["deletions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["kind"] == "Namespace" && d["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("Namespace/{name} not deleted: {text}"))
    };
    let media = ns("media");
    assert_eq!(
        (&media["data"], &media["stateful"]),
        (&"holds".into(), &true.into())
    );
    assert!(
        media["evidence"]
            .as_str()
            .unwrap()
            .starts_with("HelmRelease/web/jellyfin holds data (spec.values.persistence.config"),
        "{media}"
    );
    let tools = ns("tools");
    assert_eq!(tools["data"], "may", "{tools}");
    assert!(
        tools["evidence"]
            .as_str()
            .unwrap()
            .starts_with("HelmRelease/tools/wiki may hold data"),
        "{tools}"
    );
    // The HelmRelease in the deleted namespace goes with it, judged by its own values.
    assert!(deleted(&doc).contains(&"HelmRelease/tools/wiki namespace-deleted".to_string()));
}

#[test]
fn unmodelled_features_are_reported_not_skipped() {
    let repo = flux_repo();
    repo.write("db/kustomization.yaml", "resources: [pg.yaml]\ntransformers: [t.yaml]\nconfigMapGenerator: [{name: cfg, literals: [a=b]}]\n");
    let run = repo.run(&["cutover", "--from", "HEAD", "--format", "json"]);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    let features: Vec<&str> = doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["feature"].as_str().unwrap())
        .collect();
    assert_eq!(features, ["transformers"]);
    assert_eq!(doc["warnings"][0]["path"], "db/kustomization.yaml");
}

/// The native builder yields the same objects as the real kustomize.
fn same_as_kustomize(repo: &TestRepo, dirs: &[&str]) {
    let tree = FileTree::from_worktree(repo.path()).unwrap();
    for dir in dirs {
        let mut b = Builder::new(&tree);
        let mut ours: Vec<String> = b
            .build_dir(dir)
            .unwrap()
            .iter()
            .filter_map(|r| r.id())
            .map(|id| format!("{}/{}/{}", id.kind, id.namespace, id.name))
            .collect();
        ours.sort();
        let theirs: Vec<String> = objects(&kustomize(&repo.path().join(dir)))
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        assert_eq!(ours, theirs, "{dir}");
    }
}

#[test]
fn the_builder_agrees_with_kustomize() {
    let repo = TestRepo::example("homelab");
    repo.commit_all("init");
    same_as_kustomize(
        &repo,
        &[
            "apps",
            "clusters/dev",
            "clusters/base",
            "platform",
            "platform-config",
        ],
    );
    repo.run(&["apply"]);
    same_as_kustomize(
        &repo,
        &["apps/wave-0", "apps/wave-1", "apps/wave-2", "clusters/dev"],
    );

    let repo = flux_repo();
    repo.write("over/kustomization.yaml", "resources: [../db, ns.yaml]\nnamespace: shared\nnamePrefix: x-\nnameSuffix: -y\npatches:\n  - target: {kind: Cluster, name: pg}\n    patch: |\n      - op: replace\n        path: /spec/instances\n        value: 3\n  - patch: |\n      apiVersion: v1\n      kind: PersistentVolumeClaim\n      metadata: {name: data, namespace: pg}\n      $patch: delete\ncomponents: [../comp]\n")
        .write("over/ns.yaml", "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: reader}\n")
        .write("comp/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [extra.yaml]\ncommonLabels: {team: a}\n")
        .write("comp/extra.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra, namespace: other}\n");
    repo.commit_all("overlay");
    same_as_kustomize(&repo, &["db", "over"]);

    // `configurations` only add field specs to kustomize's own: the names stay as the
    // default transformers set them, and the builder leaves nothing unseen.
    repo.write("conf/kustomization.yaml", "namePrefix: p-\nnamespace: ns\nconfigurations: [cfg.yaml]\nresources: [objects.yaml]\n")
        .write("conf/cfg.yaml", "namePrefix:\n  - {path: data/ref, kind: ConfigMap}\nnameReference:\n  - kind: ConfigMap\n    fieldSpecs: [{path: spec/valuesFrom/name, kind: HelmRelease}]\n")
        .write("conf/objects.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {ref: x}\n---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: h}\nspec: {valuesFrom: [{kind: ConfigMap, name: a}]}\n");
    same_as_kustomize(&repo, &["conf"]);
    let tree = FileTree::from_worktree(repo.path()).unwrap();
    let mut b = Builder::new(&tree);
    b.build_dir("conf").unwrap();
    assert!(b.warnings.is_empty(), "{:?}", b.warnings);
}

#[test]
fn rendered_protection_keeps_the_data_through_a_plain_merge() {
    // fluxwave's own manifests carry `prune: disabled` on every stateful object: a plain merge
    // with `prune: true` still deletes (and recreates) the stateless objects, never the data.
    let repo = TestRepo::example("homelab");
    repo.commit_all("homelab before the waves");
    assert_eq!(repo.run(&["apply"]).code, 0);
    let (code, doc, text) = cutover(&repo, "HEAD");
    assert_eq!(code, 1, "{text}");
    let all = deleted(&doc);
    assert!(
        all.iter()
            .any(|d| d.starts_with("Deployment/nextcloud/nextcloud ")),
        "{all:#?}"
    );
    assert!(
        !all.iter().any(|d| d.starts_with('!')),
        "no stateful object may be deleted: {all:#?}"
    );
    assert!(
        !all.iter()
            .any(|d| d.contains("Cluster/") || d.contains("PersistentVolumeClaim/")),
        "{all:#?}"
    );
}

/// `--each A..B` gives, step by step along B's first-parent history, the very report
/// `--from <parent> --to <step>` gives: which commit deletes what. A merge is one step.
#[test]
fn each_step_of_a_history_is_the_report_of_its_own_cutover() {
    let repo = flux_repo();
    let start = repo.git(&["rev-parse", "HEAD"]).trim().to_string();
    repo.write(
        "web/app.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: web}\nspec: {}\n",
    );
    repo.commit_all("drop the web config");
    repo.git(&["checkout", "-q", "-b", "side"]);
    repo.write("db/kustomization.yaml", "resources: []\n");
    repo.commit_all("empty the database folder");
    repo.git(&["checkout", "-q", "-"]);
    repo.write(
        "web/extra.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra, namespace: web}\n",
    );
    repo.commit_all("add a config");
    repo.git(&["merge", "-q", "--no-ff", "-m", "merge side", "side"]);
    let range = format!("{start}..HEAD");
    let each = repo.run(&["cutover", "--each", &range, "--format", "json"]);
    assert_eq!(each.code, 1, "{}", each.stderr);
    let doc: Value = serde_json::from_str(&each.stdout).unwrap();
    let steps = doc["steps"].as_array().unwrap();
    let line: Vec<String> = repo
        .git(&["rev-list", "--first-parent", "--reverse", &range])
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(line.len(), 3, "two commits and the merge");
    assert_eq!(steps.len(), 3);
    let mut from = start.clone();
    for (step, to) in steps.iter().zip(&line) {
        let alone = repo.run(&["cutover", "--from", &from, "--to", to, "--format", "json"]);
        let alone: Value = serde_json::from_str(&alone.stdout).unwrap();
        assert_eq!(step, &alone, "{from}..{to}");
        from = to.clone();
    }
    assert_eq!(deleted(&steps[0]), ["ConfigMap/web/web-config left-build"]);
    assert_eq!(steps[1]["verdict"], "safe");
    assert!(
        deleted(&steps[2]).contains(&"!PersistentVolumeClaim/pg/data left-build".to_string()),
        "{:?}",
        deleted(&steps[2])
    );
    let text = repo.run(&["cutover", "--each", &range]);
    assert!(
        text.stdout.starts_with("== step 1 of 3: "),
        "{}",
        text.stdout
    );
    assert!(text.stdout.contains("drop the web config") && text.stdout.contains("merge side"));
    let bad = repo.run(&["cutover", "--each", "HEAD"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(bad.stderr.contains("A..B"), "{}", bad.stderr);
}

/// `--each` replays the build of a Flux Kustomization from the step before when none of the
/// files it read changed and its spec is the same: a history whose every step changes one
/// thing a build depends on (a shared component, a substitution variable, a file added to or
/// taken from a folder Flux's generator lists, a patch file, a CRD that makes a kind
/// cluster-scoped, `.sourceignore`, the GitRepository's `spec.ignore`, the Kustomization's
/// spec, a file that stops being text, a folder moved) gives, step by step, the report of
/// the step's own cutover, and each step deletes what its change takes away.
#[test]
fn each_step_replays_only_builds_whose_inputs_did_not_change() {
    let repo = TestRepo::empty();
    let sync = |ignore: &str| {
        format!("apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {{name: flux-system, namespace: flux-system}}\nspec:\n  interval: 1m\n  url: ssh://git@example.com/org/fleet\n  ref: {{branch: main}}\n{ignore}---\n{}", ks("flux-system", "./clusters/prod", &[]))
    };
    let cm = |name: &str, ns: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {ns}\n")
    };
    let widget = |name: &str| {
        format!("apiVersion: example.com/v1\nkind: Widget\nmetadata: {{name: {name}}}\n")
    };
    repo.write("clusters/prod/flux-system/gotk-sync.yaml", &sync(""))
        .write("clusters/prod/flux-system/kustomization.yaml", "resources: [gotk-sync.yaml]\n")
        .write(
            "clusters/prod/kustomization.yaml",
            "resources: [flux-system, vars.yaml, a.yaml, b.yaml, c.yaml]\n",
        )
        .write(
            "clusters/prod/vars.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: vars, namespace: flux-system}\ndata: {SUFFIX: one}\n",
        )
        .write(
            "clusters/prod/a.yaml",
            &ks(
                "a",
                "./apps/a",
                &[
                    "components: [../../components/shared]",
                    "postBuild: {substituteFrom: [{kind: ConfigMap, name: vars}]}",
                ],
            ),
        )
        .write("clusters/prod/b.yaml", &ks("b", "./apps/b", &[]))
        .write("clusters/prod/c.yaml", &ks("c", "./apps/c", &[]))
        .write("apps/a/kustomization.yaml", "resources: [app.yaml]\n")
        .write("apps/a/app.yaml", &cm("a-${SUFFIX}", "a"))
        .write(
            "components/shared/kustomization.yaml",
            "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [one.yaml, two.yaml]\n",
        )
        .write("components/shared/one.yaml", &cm("shared-one", "a"))
        .write("components/shared/two.yaml", &cm("shared-two", "a"))
        .write("apps/b/keep.yaml", &cm("b-keep", "b"))
        .write("apps/b/other.yaml", &cm("b-other", "b"))
        .write("apps/b/more.yaml", &cm("b-more", "b"))
        .write(
            "apps/c/kustomization.yaml",
            "namespace: c\nresources: [widget.yaml, app.yaml]\npatches: [{path: rename.yaml, target: {kind: ConfigMap, name: c-app}}]\n",
        )
        .write("apps/c/widget.yaml", &widget("w1"))
        .write("apps/c/app.yaml", &cm("c-app", "c"))
        .write(
            "apps/c/rename.yaml",
            "- {op: replace, path: /metadata/name, value: c-first}\n",
        );
    repo.commit_all("init");
    let start = repo.git(&["rev-parse", "HEAD"]).trim().to_string();
    // What each step's change must delete (as `deleted` writes it); empty for none.
    let mut expected: Vec<Vec<&str>> = Vec::new();
    let mut step = |repo: &TestRepo, message: &str, deletes: Vec<&'static str>| {
        repo.commit_all(message);
        expected.push(deletes);
    };

    repo.write(
        "components/shared/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [one.yaml]\n",
    );
    step(
        &repo,
        "the shared component drops a ConfigMap",
        vec!["ConfigMap/a/shared-two left-build"],
    );
    repo.write(
        "clusters/prod/vars.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: vars, namespace: flux-system}\ndata: {SUFFIX: two}\n",
    );
    step(
        &repo,
        "a variable renames an object",
        vec!["ConfigMap/a/a-one identity-changed"],
    );
    repo.write("apps/b/new.yaml", &cm("b-new", "b"));
    step(&repo, "a file added to a listed folder", vec![]);
    repo.remove("apps/b/new.yaml");
    step(
        &repo,
        "and taken away",
        vec!["ConfigMap/b/b-new left-build"],
    );
    repo.write(
        "apps/c/rename.yaml",
        "- {op: replace, path: /metadata/name, value: c-second}\n",
    );
    step(
        &repo,
        "a patch file renames an object",
        vec!["ConfigMap/c/c-first identity-changed"],
    );
    repo.write(
        "crds/widgets.yaml",
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec:\n  group: example.com\n  scope: Cluster\n  names: {kind: Widget, plural: widgets}\n  versions: [{name: v1, served: true, storage: true}]\n",
    );
    step(
        &repo,
        "a CRD makes Widget cluster-scoped",
        vec!["Widget/c/w1 identity-changed"],
    );
    repo.write(".sourceignore", "apps/b/keep.yaml\n");
    step(
        &repo,
        "a .sourceignore hides a file",
        vec!["ConfigMap/b/b-keep left-build"],
    );
    repo.write(
        "clusters/prod/flux-system/gotk-sync.yaml",
        &sync("  ignore: |\n    /apps/b/other.yaml\n"),
    );
    step(
        &repo,
        "spec.ignore hides another",
        vec!["ConfigMap/b/b-other left-build"],
    );
    repo.write(
        "clusters/prod/b.yaml",
        &ks("b", "./apps/b", &["namePrefix: x-"]),
    );
    step(
        &repo,
        "the Kustomization's spec renames",
        vec!["ConfigMap/b/b-more identity-changed"],
    );
    std::fs::write(repo.path().join("apps/a/app.yaml"), b"\xff\xfe\x00broken").unwrap();
    step(&repo, "a file that is no text fails the build", vec![]);
    repo.write("apps/a/app.yaml", &cm("a-again", "a"));
    // What the failed build applied is unknown: nothing is judged deleted.
    step(&repo, "the file is text again", vec![]);
    repo.write("apps/a/app.yaml", &cm("a-last", "a"));
    step(
        &repo,
        "and renames its object",
        vec!["ConfigMap/a/a-again identity-changed"],
    );
    repo.git(&["mv", "apps/c", "apps/moved"]);
    repo.write("clusters/prod/c.yaml", &ks("c", "./apps/moved", &[]));
    step(&repo, "a folder moved", vec![]);
    repo.write(
        "apps/moved/kustomization.yaml",
        "namespace: c\nresources: [widget.yaml]\n",
    );
    step(
        &repo,
        "and built smaller",
        vec!["ConfigMap/c/c-second left-build"],
    );

    let range = format!("{start}..HEAD");
    let each = repo.run(&["cutover", "--each", &range, "--format", "json"]);
    assert!(each.code == 0 || each.code == 1, "{}", each.stderr);
    let doc: Value = serde_json::from_str(&each.stdout).unwrap();
    let steps = doc["steps"].as_array().unwrap();
    assert_eq!(steps.len(), expected.len());
    let line: Vec<String> = repo
        .git(&["rev-list", "--first-parent", "--reverse", &range])
        .lines()
        .map(str::to_string)
        .collect();
    let mut from = start;
    for ((report, to), deletes) in steps.iter().zip(&line).zip(&expected) {
        let alone = repo.run(&["cutover", "--from", &from, "--to", to, "--format", "json"]);
        let alone: Value = serde_json::from_str(&alone.stdout).unwrap();
        assert_eq!(report, &alone, "{from}..{to}");
        let subject = repo.git(&["log", "-1", "--format=%s", to]);
        assert_eq!(deleted(report), *deletes, "{}: {report:#}", subject.trim());
        from = to.clone();
    }
}
