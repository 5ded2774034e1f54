//! `blast`: what a failing unit blocks. The homelab before its migration (one `apps`
//! Kustomization: every unit shares one gate, nothing is blocked), after `apply` under waves
//! and the hypothetical layouts beside it; the per-app `ks.yaml` layout of
//! `tests/fixtures/blast/ks-layout` (no catalog: each Flux Kustomization is a unit) with every
//! list asserted; and the refusals.

use serde_json::Value;

use crate::common::TestRepo;

fn json(repo: &TestRepo, args: &[&str]) -> Value {
    let mut all = vec!["blast", "--format", "json"];
    all.extend_from_slice(args);
    let run = repo.run(&all);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout))
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect()
}

/// Each unit's (name, blocks, shares).
fn radius(doc: &Value) -> Vec<(&str, Vec<&str>, Vec<&str>)> {
    doc["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["name"].as_str().unwrap(),
                strings(&u["blocks"]),
                strings(&u["shares"]),
            )
        })
        .collect()
}

fn unit<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["units"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["name"] == name)
        .unwrap_or_else(|| panic!("no unit {name}: {doc}"))
}

#[test]
fn the_flat_homelab_shares_one_gate_and_blocks_nothing() {
    let repo = TestRepo::example("homelab");
    let doc = json(&repo, &[]);
    assert_eq!(doc["topology"], "current");
    assert_eq!(doc["environment"], "dev");
    let units = radius(&doc);
    let names: Vec<&str> = units.iter().map(|(n, _, _)| *n).collect();
    assert_eq!(
        names,
        [
            "gitea",
            "gitea-actions",
            "jackett",
            "nextcloud",
            "nextcloud-db",
            "pihole",
            "plex",
            "qbittorrent",
            "radarr",
            "seerr",
            "semaphore",
            "semaphore-db",
            "sonarr"
        ]
    );
    for (name, blocks, shares) in &units {
        assert!(blocks.is_empty(), "{name} blocks {blocks:?}");
        let others: Vec<&str> = names.iter().copied().filter(|n| n != name).collect();
        assert_eq!(shares, &others, "{name}");
        assert_eq!(unit(&doc, name)["kustomization"], "flux-system/apps");
        assert_eq!(unit(&doc, name)["gated"], true);
    }
    assert_eq!(doc["totals"]["blocked"], 0);
    assert_eq!(doc["totals"]["shared"], 13 * 12);
    assert_eq!(doc["totals"]["worst"], Value::Null);
    assert_eq!(
        strings(&doc["chain"]["kustomizations"]),
        [
            "flux-system/platform",
            "flux-system/platform-config",
            "flux-system/apps"
        ]
    );
    assert_eq!(doc["chain"]["timeout"], "15m0s");
    assert_eq!(doc["chain"]["seconds"], 900);
    // Both layouts of the catalog stand beside it, with their totals.
    let alternatives: Vec<(&str, u64)> = doc["alternatives"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["topology"].as_str().unwrap(),
                a["totals"]["blocked"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(alternatives, [("waves", 47), ("units", 11)]);
    assert_eq!(doc["environments"].as_array().unwrap().len(), 1);
    assert_eq!(doc["environments"][0]["path"], "clusters/dev");
}

#[test]
fn under_waves_a_failing_runner_holds_the_wave_above() {
    let repo = TestRepo::example("homelab");
    let doc = json(&repo, &["--topology", "waves"]);
    assert_eq!(doc["topology"], "waves");
    assert_eq!(doc["environment"], Value::Null);
    let runner = unit(&doc, "gitea-actions");
    assert_eq!(strings(&runner["blocks"]), ["seerr"]);
    assert_eq!(runner["kustomization"], "flux-system/apps-wave-1");
    assert_eq!(
        strings(&runner["shares"]),
        ["nextcloud", "radarr", "semaphore", "sonarr"]
    );
    assert_eq!(
        strings(&unit(&doc, "gitea")["blocks"]),
        [
            "gitea-actions",
            "nextcloud",
            "radarr",
            "seerr",
            "semaphore",
            "sonarr"
        ]
    );
    assert_eq!(
        doc["totals"]["worst"],
        serde_json::json!({"unit": "gitea", "blocks": 6})
    );
    // Under units, a failing runner holds nothing; jackett holds what needs it.
    let doc = json(&repo, &["--topology", "units"]);
    assert!(strings(&unit(&doc, "gitea-actions")["blocks"]).is_empty());
    assert_eq!(
        strings(&unit(&doc, "jackett")["blocks"]),
        ["radarr", "seerr", "sonarr"]
    );
    assert!(strings(&unit(&doc, "jackett")["shares"]).is_empty());

    // Once applied, the waves as built say what the hypothetical waves said.
    assert_eq!(repo.run(&["apply"]).code, 0);
    let built = json(&repo, &[]);
    let planned = json(&repo, &["--topology", "waves"]);
    assert_eq!(radius(&built), radius(&planned));
    assert_eq!(built["totals"], planned["totals"]);
    assert_eq!(built["chain"], planned["chain"]);
}

#[test]
fn per_app_ks_files_each_kustomization_is_a_unit() {
    let repo = TestRepo::fixture("blast/ks-layout");
    let doc = json(&repo, &[]);
    assert_eq!(doc["environment"], "cluster");
    let none: Vec<&str> = Vec::new();
    assert_eq!(
        radius(&doc),
        [
            (
                "database/cloudnative-pg",
                vec![
                    "database/cloudnative-pg-cluster",
                    "media/radarr",
                    "media/seerr",
                    "media/sonarr"
                ],
                none.clone()
            ),
            (
                "database/cloudnative-pg-cluster",
                vec!["media/radarr", "media/seerr", "media/sonarr"],
                none.clone()
            ),
            // The parent of every ks.yaml does not wait for them, nor the root.
            ("flux-system/cluster-apps", none.clone(), none.clone()),
            ("flux-system/flux-system", none.clone(), none.clone()),
            ("media/radarr", vec!["media/seerr"], none.clone()),
            ("media/seerr", none.clone(), none.clone()),
            // seerr depends on sonarr, but sonarr has `wait: false`: Ready once applied.
            ("media/sonarr", none.clone(), none.clone()),
            (
                "storage/rook-ceph",
                vec![
                    "database/cloudnative-pg-cluster",
                    "media/radarr",
                    "media/seerr",
                    "media/sonarr",
                    "storage/rook-ceph-cluster"
                ],
                none.clone()
            ),
            // Its healthChecks gate it across namespaces (`namespace: storage` on the way).
            (
                "storage/rook-ceph-cluster",
                vec![
                    "database/cloudnative-pg-cluster",
                    "media/radarr",
                    "media/seerr",
                    "media/sonarr"
                ],
                none.clone()
            ),
        ]
    );
    assert_eq!(unit(&doc, "media/sonarr")["gated"], false);
    assert_eq!(unit(&doc, "storage/rook-ceph-cluster")["gated"], true);
    assert_eq!(doc["totals"]["blocked"], 17);
    assert_eq!(
        doc["totals"]["worst"],
        serde_json::json!({"unit": "storage/rook-ceph", "blocks": 5})
    );
    // The chain of the largest timeouts: through sonarr (interval 30m, no timeout: 29m30s)
    // rather than radarr (5m); rook-ceph-cluster has interval 1h and no timeout (59m30s).
    assert_eq!(
        strings(&doc["chain"]["kustomizations"]),
        [
            "storage/rook-ceph",
            "storage/rook-ceph-cluster",
            "database/cloudnative-pg-cluster",
            "media/sonarr",
            "media/seerr"
        ]
    );
    assert_eq!(doc["chain"]["timeout"], "1h49m0s");
    assert_eq!(doc["chain"]["seconds"], 6540);
    assert!(doc["alternatives"].as_array().unwrap().is_empty());

    let text = repo.run(&["blast"]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    insta::with_settings!({
        description => "fluxwave blast on tests/fixtures/blast/ks-layout",
        omit_expression => true,
    }, {
        insta::assert_snapshot!("ks_layout_text", text.stdout);
    });
    let md = repo.run(&["blast", "--format", "markdown"]);
    assert!(
        md.stdout.starts_with("### What a failing unit blocks")
            && md
                .stdout
                .contains("| UNIT | KUSTOMIZATION | GATED | BLOCKS | BLOCKED UNITS | SHARES |\n|---|---|---|---|---|---|\n"),
        "{}",
        md.stdout
    );
}

#[test]
fn a_layout_needs_a_catalog_and_current_an_environment() {
    let repo = TestRepo::fixture("blast/ks-layout");
    let run = repo.run(&["blast", "--topology", "units"]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(
        run.stderr.contains("--topology units: no catalog"),
        "{}",
        run.stderr
    );
    let repo = TestRepo::empty();
    repo.write("README.md", "nothing here\n");
    let run = repo.run(&["blast"]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(
        run.stderr.contains("no Flux environment found"),
        "{}",
        run.stderr
    );
}

/// Two environments: each is reported in full (the first, by name, at the top level too),
/// and the totals of each stand beside the layouts.
#[test]
fn every_environment_is_reported() {
    let repo = TestRepo::example("homelab");
    repo.write(
        "clusters/prod/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../base\n",
    );
    let doc = json(&repo, &[]);
    let envs: Vec<&str> = doc["environments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(envs, ["dev", "prod"]);
    assert_eq!(doc["environment"], "dev");
    assert_eq!(doc["units"], doc["environments"][0]["units"]);
    assert_eq!(doc["environments"][1]["path"], "clusters/prod");
    let text = repo.run(&["blast"]);
    assert!(
        text.stdout.contains(
            "What a failing unit blocks: environment dev (clusters/dev), topology current"
        ) && text.stdout.contains(
            "What a failing unit blocks: environment prod (clusters/prod), topology current"
        ) && text
            .stdout
            .contains("current (dev)  current (prod)  waves      units"),
        "{}",
        text.stdout
    );
    // A layout beside every environment's totals.
    let doc = json(&repo, &["--topology", "units"]);
    let beside: Vec<(&str, &Value)> = doc["alternatives"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["topology"].as_str().unwrap(), &a["environment"]))
        .collect();
    assert_eq!(
        beside,
        [
            ("current", &Value::from("dev")),
            ("current", &Value::from("prod")),
            ("waves", &Value::Null)
        ]
    );
    assert!(doc["environments"].as_array().unwrap().is_empty());
}

/// Once moved to units, the Kustomizations as built say what the hypothetical units said.
#[test]
fn the_units_as_built_block_what_the_units_layout_said() {
    let repo = TestRepo::example("homelab");
    let planned = json(&repo, &["--topology", "units"]);
    let config = repo.read("fluxwave.yaml") + "topology: units\n";
    repo.write("fluxwave.yaml", &config);
    assert_eq!(repo.run(&["apply"]).code, 0);
    let built = json(&repo, &[]);
    assert_eq!(radius(&built), radius(&planned));
    assert_eq!(built["totals"], planned["totals"]);
    assert_eq!(built["chain"], planned["chain"]);
}

/// examples/homelab/README.md shows the tables `blast` prints for the example, so that the
/// choice it documents is the one fluxwave computes.
#[test]
fn the_homelab_readme_shows_the_tables_blast_prints() {
    let repo = TestRepo::example("homelab");
    let readme = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/homelab/README.md"),
    )
    .unwrap();
    let markdown = |topology: &str| {
        let run = repo.run(&["blast", "--topology", topology, "--format", "markdown"]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        run.stdout
            .replace("\n### ", "\n#### ")
            .replacen("### ", "#### ", 1)
    };
    let waves = markdown("waves");
    assert!(readme.contains(&waves), "README lacks:\n{waves}");
    let units = markdown("units");
    let first_table = &units[..units.find("\n#### Totals").unwrap()];
    assert!(readme.contains(first_table), "README lacks:\n{first_table}");
}
