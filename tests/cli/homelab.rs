//! The seed's migration, end to end on examples/homelab: the real kustomize builds every
//! wave, the waves together build exactly what the flat app tier built, every environment
//! gets one decryption patch per wave, git sees renames, and a second apply changes nothing.

use crate::common::{kustomize, objects, TestRepo};

#[test]
fn waves_prints_the_seeds_table() {
    let repo = TestRepo::example("homelab");
    for format in ["text", "json", "markdown", "mermaid"] {
        let run = repo.run(&["waves", "--format", format]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        insta::assert_snapshot!(format!("homelab_waves_{format}"), run.stdout);
    }
    let run = repo.run(&["waves", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let wave_of = |name: &str| {
        let node = doc["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["name"] == name)
            .unwrap();
        (
            node["wave"].as_u64().unwrap(),
            node["placed"].as_bool().unwrap(),
            node["kind"].as_str().unwrap().to_string(),
        )
    };
    for name in [
        "pihole",
        "gitea",
        "jackett",
        "plex",
        "qbittorrent",
        "nextcloud-db",
        "semaphore-db",
    ] {
        assert_eq!(wave_of(name).0, 0, "{name}");
        assert!(wave_of(name).1, "{name}");
    }
    for name in [
        "sonarr",
        "radarr",
        "nextcloud",
        "semaphore",
        "gitea-actions",
    ] {
        assert_eq!(wave_of(name).0, 1, "{name}");
    }
    assert_eq!(wave_of("seerr").0, 2);
    assert_eq!(wave_of("keycloak"), (1, false, "service".into()));
    assert_eq!(wave_of("keycloak-db"), (0, false, "database".into()));
    assert_eq!(wave_of("vm-demo"), (0, false, "service".into()));
    assert_eq!(wave_of("gitea-actions").2, "unit");
}

#[test]
fn plan_is_read_only() {
    let repo = TestRepo::example("homelab");
    let before = repo.snapshot();
    let run = repo.run(&["plan"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!("homelab_plan_text", run.stdout);
    let run = repo.run(&["plan", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["moves"], 19);
    assert_eq!(doc["waves"].as_array().unwrap().len(), 3);
    let dry = repo.run(&["apply", "--dry-run"]);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    insta::assert_snapshot!("homelab_apply_dry_run", dry.stdout);
    assert_eq!(
        repo.snapshot(),
        before,
        "plan and apply --dry-run write nothing"
    );
}

#[test]
fn migration_builds_the_same_objects_and_is_idempotent() {
    let repo = TestRepo::example("homelab");
    repo.commit_all("homelab before the waves");
    let flat = objects(&kustomize(&repo.path().join("apps")));
    let flat_dev = kustomize(&repo.path().join("clusters/dev"));
    assert_eq!(flat_dev.matches("decryption:").count(), 1);

    // A flat repository is not waved yet: said, but as a warning (docs/checks.md, not-waved).
    let check = repo.run(&["check"]);
    assert_eq!(check.code, 0, "{}", check.stdout);
    assert!(
        check.stdout.contains("warning[not-waved]")
            && check.stdout.ends_with("0 errors, 1 warning\n"),
        "{}",
        check.stdout
    );
    assert_eq!(repo.run(&["check", "--deny", "warnings"]).code, 1);

    let run = repo.run(&["apply"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.ends_with("29 changes made\n"), "{}", run.stdout);

    // Every wave builds on its own; together they build exactly the flat tier's objects.
    let mut waved = Vec::new();
    for n in 0..3 {
        let dir = repo.path().join(format!("apps/wave-{n}"));
        let objs = objects(&kustomize(&dir));
        assert!(!objs.is_empty(), "wave {n} is empty");
        waved.extend(objs);
    }
    waved.sort();
    assert_eq!(waved.len(), 79);
    assert_eq!(waved, flat);
    assert!(!repo.exists("apps/kustomization.yaml"));
    assert!(!repo.exists("clusters/base/apps.yaml"));

    // The environment: one decryption patch per wave, none for the retired `apps`.
    let dev = kustomize(&repo.path().join("clusters/dev"));
    let flux: Vec<serde_json::Value> = dev
        .split("\n---\n")
        .map(|d| serde_saphyr::from_str(d).unwrap())
        .filter(|v: &serde_json::Value| v["kind"] == "Kustomization")
        .collect();
    let names: Vec<&str> = flux
        .iter()
        .map(|v| v["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "apps-wave-0",
            "apps-wave-1",
            "apps-wave-2",
            "flux-system",
            "platform",
            "platform-config"
        ]
    );
    for v in &flux[..3] {
        assert_eq!(v["spec"]["decryption"]["provider"], "sops", "{v}");
        assert_eq!(v["spec"]["prune"], true);
        assert_eq!(v["spec"]["wait"], true);
    }
    assert_eq!(flux[0]["spec"]["dependsOn"][0]["name"], "platform-config");
    assert_eq!(flux[1]["spec"]["dependsOn"][0]["name"], "apps-wave-0");
    assert_eq!(flux[2]["spec"]["dependsOn"][0]["name"], "apps-wave-1");
    assert_eq!(flux[2]["spec"]["path"], "./apps/wave-2");
    assert_eq!(dev.matches("decryption:").count(), 3);

    // Comments of the hand-kept files survive.
    let base = repo.read("clusters/base/kustomization.yaml");
    for comment in [
        "# Flux objects shared by every cluster",
        "# controllers and CRDs",
        "# the app tier",
    ] {
        assert!(base.contains(comment), "{base}");
    }
    let env = repo.read("clusters/dev/kustomization.yaml");
    assert!(
        env.contains("# SOPS decryption for the app tier. Load-bearing"),
        "{env}"
    );
    insta::assert_snapshot!("homelab_base_kustomization_after_apply", base);
    insta::assert_snapshot!("homelab_dev_kustomization_after_apply", env);

    // git records every move as a pure rename (the bytes did not change).
    repo.git(&["add", "-A"]);
    let status = repo.git(&["diff", "--cached", "-M", "--name-status"]);
    let renames = status.lines().filter(|l| l.starts_with("R100\t")).count();
    assert_eq!(renames, 19, "{status}");

    // A second apply changes no byte; check is clean.
    let after = repo.snapshot();
    let again = repo.run(&["apply"]);
    assert_eq!(again.stdout, "nothing to change\n");
    assert_eq!(repo.snapshot(), after);
    let check = repo.run(&["check"]);
    assert_eq!(
        (check.code, check.stdout.as_str()),
        (
            0,
            "checked 1 environment (dev) and 6 Flux Kustomizations\n0 errors, 0 warnings\n"
        )
    );
}

/// The migration as its runbook says, one pull request per commit, each gated by
/// `check --base` against what the cluster runs then: commit 1 only releases the flat `apps`
/// Kustomization (`prune: false`), commit 2 is the migration. Each passes; the two merged
/// at once would not (Flux would delete what `apps` applied), and the gate says so.
#[test]
fn each_step_of_the_migration_runbook_passes_the_gate() {
    let repo = TestRepo::example("homelab");
    repo.commit_all("flat");
    let dry = repo.run(&["apply", "--dry-run"]);
    assert!(
        dry.stdout.contains(
            "clusters/base/apps.yaml: set `prune: false` on Kustomization/flux-system/apps"
        ),
        "{}",
        dry.stdout
    );
    let flat = repo.read("clusters/base/apps.yaml");
    assert!(flat.contains("  prune: true\n"));
    repo.write(
        "clusters/base/apps.yaml",
        &flat.replace("  prune: true\n", "  prune: false\n"),
    );
    let step1 = repo.run(&["check", "--base", "HEAD"]);
    assert_eq!(step1.code, 0, "runbook commit 1: {}", step1.stdout);
    repo.commit_all("runbook commit 1: release the flat apps Kustomization");

    assert_eq!(repo.run(&["apply"]).code, 0);
    let step2 = repo.run(&["check", "--base", "HEAD"]);
    assert_eq!(step2.code, 0, "runbook commit 2: {}", step2.stdout);
    let both = repo.run(&["check", "--base", "HEAD~1"]);
    assert_eq!(both.code, 1, "both at once: {}", both.stdout);
}
