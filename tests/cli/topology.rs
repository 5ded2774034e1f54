//! Topologies: the homelab moved from waves to one Kustomization per unit and back, a unit
//! nothing waits for (`gating: false`), and what `cutover` and `apply --dry-run` say of the
//! ownership transfer. Every emitted tree is built with the real kustomize; revisions are
//! real git commits.

use serde_json::Value;

use crate::common::{
    assert_second_apply_changes_nothing, cutover_json, deletions, kustomize, objects, TestRepo,
};

/// Appends a line to fluxwave.yaml.
fn set(repo: &TestRepo, line: &str) {
    let text = repo.read("fluxwave.yaml");
    repo.write("fluxwave.yaml", &format!("{text}{line}\n"));
}

/// The Flux Kustomizations environment `dev` builds, by name.
fn flux_kustomizations(repo: &TestRepo) -> Vec<Value> {
    let dev = kustomize(&repo.path().join("clusters/dev"));
    let mut ks: Vec<Value> = dev
        .split("\n---\n")
        .map(|d| serde_saphyr::from_str(d).unwrap())
        .filter(|v: &Value| v["kind"] == "Kustomization")
        .collect();
    ks.sort_by(|a, b| {
        a["metadata"]["name"]
            .as_str()
            .cmp(&b["metadata"]["name"].as_str())
    });
    ks
}

fn name(k: &Value) -> &str {
    k["metadata"]["name"].as_str().unwrap()
}

fn depends_on(k: &Value) -> Vec<&str> {
    k["spec"]["dependsOn"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| d["name"].as_str().unwrap())
        .collect()
}

/// The objects every Flux Kustomization at `./apps/...` builds, together, sorted.
fn app_tier_objects(repo: &TestRepo) -> Vec<(String, String)> {
    let mut all = Vec::new();
    for k in flux_kustomizations(repo) {
        let path = k["spec"]["path"].as_str().unwrap();
        if let Some(folder) = path.strip_prefix("./apps/") {
            let built = objects(&kustomize(&repo.path().join("apps").join(folder)));
            assert!(!built.is_empty(), "{path} builds nothing");
            all.extend(built);
        }
    }
    all.sort();
    all
}

/// Renames git records among the staged changes, and every change that is not a pure one of
/// an app-tier manifest.
fn staged_renames(repo: &TestRepo) -> usize {
    repo.git(&["add", "-A"]);
    let status = repo.git(&["diff", "--cached", "-M", "--name-status"]);
    status.lines().filter(|l| l.starts_with("R100\t")).count()
}

#[test]
fn the_homelab_moves_from_waves_to_units_and_back() {
    let repo = TestRepo::example("homelab");
    repo.commit_all("flat");
    let flat = objects(&kustomize(&repo.path().join("apps")));
    assert_eq!(repo.run(&["apply"]).code, 0);
    repo.commit_all("waves");
    let waves_tree = repo.snapshot();
    assert_eq!(app_tier_objects(&repo), flat);

    set(&repo, "topology: units");
    repo.commit_all("topology: units");
    // The dry run lists the moves and says that the change needs cutover's runbook.
    let dry = repo.run(&["apply", "--dry-run"]);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    assert!(
        dry.stdout.contains("move    apps/wave-2/seerr.yaml -> apps/seerr/seerr.yaml  (owned by `seerr`, unit `seerr`)"),
        "{}",
        dry.stdout
    );
    assert!(dry.stdout.contains("cutover: this change moves objects between Flux Kustomizations, and Flux would delete 59 objects (0 holding data) on the way unless the old owners release them first"), "{}", dry.stdout);
    assert!(
        dry.stdout.contains("clusters/base/apps-wave-1.yaml: set `prune: false` on Kustomization/flux-system/apps-wave-1"),
        "{}",
        dry.stdout
    );

    let run = repo.run(&["apply"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // Every file moved as a rename, byte for byte.
    assert_eq!(staged_renames(&repo), 19);
    // The units build exactly the objects the waves built.
    assert_eq!(app_tier_objects(&repo), flat);
    let ks = flux_kustomizations(&repo);
    let units: Vec<&Value> = ks
        .iter()
        .filter(|k| k["spec"]["path"].as_str().unwrap().starts_with("./apps/"))
        .collect();
    let names: Vec<&str> = units.iter().map(|k| name(k)).collect();
    assert_eq!(
        names,
        [
            "apps-gitea",
            "apps-gitea-actions",
            "apps-jackett",
            "apps-nextcloud",
            "apps-nextcloud-db",
            "apps-pihole",
            "apps-plex",
            "apps-qbittorrent",
            "apps-radarr",
            "apps-seerr",
            "apps-semaphore",
            "apps-semaphore-db",
            "apps-sonarr",
        ]
    );
    // dependsOn is exactly each unit's own dependencies.
    let of = |n: &str| depends_on(units.iter().find(|k| name(k) == n).unwrap());
    assert_eq!(of("apps-seerr"), ["apps-radarr", "apps-sonarr"]);
    assert_eq!(of("apps-sonarr"), ["apps-jackett", "apps-qbittorrent"]);
    assert_eq!(of("apps-gitea-actions"), ["apps-gitea"]);
    assert_eq!(of("apps-nextcloud"), ["apps-nextcloud-db"]);
    assert_eq!(of("apps-jackett"), ["platform-config"]);
    // One decryption patch per unit in clusters/dev, every unit decrypted, nothing of the
    // waves left.
    let dev = repo.read("clusters/dev/kustomization.yaml");
    assert_eq!(dev.matches("decryption:").count(), 13, "{dev}");
    assert!(!dev.contains("apps-wave-"), "{dev}");
    for k in &units {
        assert_eq!(k["spec"]["decryption"]["provider"], "sops", "{k}");
        assert_eq!(k["spec"]["timeout"], "5m");
    }
    assert!(!repo.exists("apps/wave-0"));
    assert!(!repo.exists("clusters/base/apps-wave-0.yaml"));
    // Comments of the hand-kept files survive.
    assert!(repo
        .read("clusters/base/kustomization.yaml")
        .contains("# the app tier"));
    assert!(dev.contains("# SOPS decryption for the app tier. Load-bearing"));
    assert_second_apply_changes_nothing(&repo);
    let check = repo.run(&["check"]);
    assert_eq!(check.code, 0, "{}", check.stdout);

    // cutover names every object the move deletes unless released, with the runbook.
    let (code, doc) = cutover_json(&repo, &["--from", "HEAD"]);
    assert_eq!(code, 1);
    assert_eq!(deletions(&doc).len(), 59);
    assert!(deletions(&doc).iter().all(|d| d["stateful"] == false));
    let seerr = deletions(&doc)
        .iter()
        .find(|d| d["kind"] == "Deployment" && d["name"] == "seerr")
        .unwrap();
    assert_eq!(
        seerr["owner"], "Kustomization/flux-system/apps-wave-2",
        "{seerr}"
    );
    assert_eq!(
        seerr["newOwner"], "Kustomization/flux-system/apps-seerr",
        "{seerr}"
    );
    let runbook = serde_json::to_string(&doc["runbook"]).unwrap();
    for wave in ["apps-wave-0", "apps-wave-1", "apps-wave-2"] {
        assert!(
            runbook.contains(&format!(
                "set `prune: false` on Kustomization/flux-system/{wave}"
            )),
            "{runbook}"
        );
    }
    // The suspended waves go with the change: the single-commit variant leaves nothing to undo.
    assert!(
        runbook.contains("it removes the suspended Kustomizations, so nothing is left to undo")
            && !runbook.contains("remove the opt-outs"),
        "{runbook}"
    );
    repo.commit_all("units");

    // And back: the tree is the waved one again, byte for byte.
    let text = repo.read("fluxwave.yaml").replace("topology: units\n", "");
    repo.write("fluxwave.yaml", &text);
    let back = repo.run(&["apply"]);
    assert_eq!(back.code, 0, "{}", back.stderr);
    assert_eq!(staged_renames(&repo), 19);
    assert_eq!(repo.snapshot(), waves_tree);
    assert_second_apply_changes_nothing(&repo);
}

#[test]
fn a_unit_that_is_not_gating_has_a_kustomization_nothing_waits_for() {
    let repo = TestRepo::example("homelab");
    let config = repo
        .read("fluxwave.yaml")
        .replace("    above: true\n", "    above: true\n    gating: false\n");
    repo.write("fluxwave.yaml", &config);
    repo.commit_all("flat");
    let flat = objects(&kustomize(&repo.path().join("apps")));
    let run = repo.run(&["apply"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(app_tier_objects(&repo), flat);
    let ks = flux_kustomizations(&repo);
    let names: Vec<&str> = ks.iter().map(name).collect();
    assert_eq!(
        names,
        [
            "apps-gitea-actions",
            "apps-wave-0",
            "apps-wave-1",
            "apps-wave-2",
            "flux-system",
            "platform",
            "platform-config"
        ]
    );
    let runner = &ks[0];
    // It starts once the wave of what it depends on (gitea, wave 0) is ready ...
    assert_eq!(depends_on(runner), ["apps-wave-0"]);
    assert_eq!(runner["spec"]["path"], "./apps/gitea-actions");
    assert_eq!(runner["spec"]["decryption"]["provider"], "sops");
    // ... and nothing waits for it.
    assert!(ks
        .iter()
        .all(|k| !depends_on(k).contains(&"apps-gitea-actions")));
    assert!(repo.exists("apps/gitea-actions/gitea-actions-runner-secret.sops.yaml"));
    assert!(!repo
        .read("apps/wave-1/kustomization.yaml")
        .contains("gitea-actions"));
    let waves = repo.run(&["waves"]);
    assert!(
        waves.stdout.contains("not gating (a Kustomization of its own that nothing waits for): gitea-actions (apps-gitea-actions)"),
        "{}",
        waves.stdout
    );
    assert_second_apply_changes_nothing(&repo);
    repo.commit_all("waves, the runner apart");

    // Gating again: the runner goes back into wave 1 and its own Kustomization goes.
    repo.write("fluxwave.yaml", &config.replace("    gating: false\n", ""));
    let run = repo.run(&["apply"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("remove  clusters/base/apps-gitea-actions.yaml  (`apps-gitea-actions` is no longer one of the app tier's Kustomizations)"), "{}", run.stdout);
    assert!(repo.exists("apps/wave-1/gitea-actions.yaml"));
    assert!(!repo.exists("apps/gitea-actions"));
    let dev = repo.read("clusters/dev/kustomization.yaml");
    assert_eq!(dev.matches("decryption:").count(), 3, "{dev}");
    assert_eq!(app_tier_objects(&repo), flat);
    assert_second_apply_changes_nothing(&repo);
}

#[test]
fn a_dependency_on_a_unit_that_is_not_gating_is_an_error_naming_both() {
    let repo = TestRepo::example("homelab");
    let config = repo
        .read("fluxwave.yaml")
        .replace("    above: true\n", "    above: true\n    gating: false\n");
    repo.write("fluxwave.yaml", &config);
    let seerr = repo.read("catalog/seerr.yaml").replace(
        "  dependencies:\n",
        "  dependencies:\n    - to: gitea-actions\n",
    );
    repo.write("catalog/seerr.yaml", &seerr);
    for cmd in [&["waves"][..], &["plan"], &["apply", "--dry-run"]] {
        let run = repo.run(cmd);
        assert_eq!(run.code, 2, "{cmd:?}: {}", run.stdout);
        assert!(
            run.stderr
                .contains("`seerr` depends on `gitea-actions`, which is not gating"),
            "{}",
            run.stderr
        );
        assert!(run.stderr.contains("catalog/seerr.yaml:"), "{}", run.stderr);
    }
}

#[test]
fn a_unit_named_like_a_wave_cannot_have_a_kustomization_of_its_own() {
    let repo = TestRepo::empty();
    repo.flux_wiring()
        .service("wave-1", &[])
        .manifest("apps/wave-1.yaml")
        .write("fluxwave.yaml", "topology: units\n");
    let run = repo.run(&["plan"]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(
        run.stderr.contains("unit `wave-1` would get the Kustomization `apps-wave-1` in folder `apps/wave-1`, the name of a wave's"),
        "{}",
        run.stderr
    );
}

#[test]
fn an_unknown_topology_is_refused_where_it_is_written() {
    let repo = TestRepo::example("homelab");
    set(&repo, "topology: lines");
    let run = repo.run(&["waves"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("fluxwave.yaml:"), "{}", run.stderr);
    assert!(run.stderr.contains("lines"), "{}", run.stderr);
}

#[test]
fn render_follows_the_topology() {
    let repo = TestRepo::example("homelab");
    set(&repo, "topology: units");
    let out = repo.path().join("out");
    let run = repo.run(&[
        "render",
        &repo
            .path()
            .join("catalog/nextcloud.yaml")
            .display()
            .to_string(),
        "--wave-layout",
        "-o",
        &out.display().to_string(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(out.join("nextcloud/nextcloud.yaml").is_file());
    assert!(out.join("nextcloud-db/nextcloud-db.yaml").is_file());
}

#[test]
fn a_unit_that_leaves_the_catalog_takes_its_kustomization_and_folder_with_it() {
    let repo = TestRepo::example("homelab");
    set(&repo, "topology: units");
    assert_eq!(repo.run(&["apply"]).code, 0);
    repo.commit_all("units");
    // plex leaves: its catalog entry and its manifest go, its generated folder stays behind.
    repo.remove("catalog/plex.yaml");
    repo.remove("apps/plex/plex.yaml");
    let run = repo.run(&["apply"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("remove  clusters/base/apps-plex.yaml"),
        "{}",
        run.stdout
    );
    assert!(!repo.exists("apps/plex"));
    assert!(!repo.exists("clusters/base/apps-plex.yaml"));
    let dev = repo.read("clusters/dev/kustomization.yaml");
    assert!(!dev.contains("apps-plex"), "{dev}");
    assert_eq!(dev.matches("decryption:").count(), 12, "{dev}");
    assert!(!repo
        .read("clusters/base/kustomization.yaml")
        .contains("apps-plex"));
    assert_second_apply_changes_nothing(&repo);

    // A manifest left in the folder of a unit that is gone belongs to no unit: an error,
    // never silently dropped.
    repo.git(&["checkout", "-q", "--", "."]);
    repo.git(&["clean", "-q", "-fd"]);
    repo.remove("catalog/plex.yaml");
    let run = repo.run(&["apply"]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(
        run.stderr
            .contains("apps/plex/plex.yaml: belongs to no unit"),
        "{}",
        run.stderr
    );
}

/// Making a unit non-gating moves its objects from a wave that stays to a Kustomization no
/// wave orders: Flux's old owner prunes them while the new one may not have applied them.
/// The runbook protects each object instead of releasing the whole wave, and says how to
/// edit a SOPS file without breaking its MAC.
#[test]
fn a_unit_made_non_gating_is_an_unordered_move_with_its_runbook() {
    let repo = TestRepo::example("homelab");
    assert_eq!(repo.run(&["apply"]).code, 0);
    repo.commit_all("waves");
    let config = repo
        .read("fluxwave.yaml")
        .replace("    above: true\n", "    above: true\n    gating: false\n");
    repo.write("fluxwave.yaml", &config);
    let dry = repo.run(&["apply", "--dry-run"]);
    assert!(dry.stdout.contains("Flux would delete 2 objects (0 holding data) on the way unless the old owners release them first"), "{}", dry.stdout);
    assert!(dry.stdout.contains("apps/wave-1/gitea-actions-runner-secret.sops.yaml: add the annotation `kustomize.toolkit.fluxcd.io/prune: disabled` to Secret/gitea/gitea-actions-runner-secret (a SOPS file: edit it with `sops edit apps/wave-1/gitea-actions-runner-secret.sops.yaml`, which keeps its MAC in step; an edit by hand makes Flux's decryption fail)"), "{}", dry.stdout);
    assert!(
        !dry.stdout.contains("set `prune: false`"),
        "the waves stay: releasing one would release all its units\n{}",
        dry.stdout
    );
    assert_eq!(repo.run(&["apply"]).code, 0);
    let (code, doc) = cutover_json(&repo, &["--from", "HEAD"]);
    assert_eq!(code, 1);
    let moved: Vec<(String, String)> = deletions(&doc)
        .iter()
        .map(|d| {
            (
                format!(
                    "{}/{}",
                    d["kind"].as_str().unwrap(),
                    d["name"].as_str().unwrap()
                ),
                d["rule"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        moved,
        [
            (
                "Deployment/gitea-actions-runner".to_string(),
                "moved-unordered".to_string()
            ),
            (
                "Secret/gitea-actions-runner-secret".to_string(),
                "moved-unordered".to_string()
            ),
        ]
    );
}

/// A unit's own Kustomization is waited for by what depends on it, as a wave is: without a
/// timeout, a stuck rollout holds its dependants for most of an interval.
#[test]
fn a_units_kustomization_without_a_timeout_is_reported_as_a_waves_is() {
    let repo = TestRepo::example("homelab");
    set(&repo, "topology: units");
    assert_eq!(repo.run(&["apply"]).code, 0);
    let sonarr = repo
        .read("clusters/base/apps-sonarr.yaml")
        .replace("  timeout: 5m\n", "")
        .replace("  wait: true\n", "");
    repo.write("clusters/base/apps-sonarr.yaml", &sonarr);
    let check = repo.run(&["check"]);
    assert!(
        check.stdout.contains("Flux Kustomization `flux-system/apps-sonarr` is a unit's own Kustomization but sets no timeout"),
        "{}",
        check.stdout
    );
}

/// A move that hands nothing from one owner to another (a new manifest placed in its wave)
/// is judged too, and said to be safe.
#[test]
fn a_move_that_deletes_nothing_is_said_to_be_safe() {
    let repo = TestRepo::example("homelab");
    assert_eq!(repo.run(&["apply"]).code, 0);
    repo.manifest("apps/vm-demo.yaml");
    let dry = repo.run(&["apply", "--dry-run"]);
    assert!(
        dry.stdout
            .contains("move    apps/vm-demo.yaml -> apps/wave-0/vm-demo.yaml"),
        "{}",
        dry.stdout
    );
    assert!(dry.stdout.contains("cutover: safe: from the working tree as it is to the tree this apply leaves, Flux deletes nothing on the way\n"), "{}", dry.stdout);
}
