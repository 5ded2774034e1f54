//! `render` and `schema`: golden files per service shape and for the homelab example (its
//! app manifests are render's output), every rendered file built by the real kustomize and
//! read back into the Kubernetes API types, located errors that write nothing, and schemas
//! that match the command and judge catalog files as fluxwave does.

use std::collections::BTreeMap;
use std::path::Path;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, PersistentVolumeClaim, Service};
use k8s_openapi::api::networking::v1::Ingress;
use serde_json::Value;

use crate::common::{examples, fixtures, kustomize, TestRepo};

const SHAPES: &[&str] = &["contract", "stateful", "worker"];

/// The homelab services that have manifests (keycloak and vm-demo are not onboarded).
const HOMELAB: &[&str] = &[
    "gitea",
    "jackett",
    "nextcloud",
    "pihole",
    "plex",
    "qbittorrent",
    "radarr",
    "seerr",
    "semaphore",
    "sonarr",
];

/// Every file directly in `dir`, name -> text.
fn files(dir: &Path) -> BTreeMap<String, String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| {
            (
                e.file_name().into_string().unwrap(),
                std::fs::read_to_string(e.path()).unwrap(),
            )
        })
        .collect()
}

fn catalog_args(repo: &TestRepo, names: &[&str]) -> Vec<String> {
    names
        .iter()
        .map(|n| {
            repo.path()
                .join(format!("catalog/{n}.yaml"))
                .display()
                .to_string()
        })
        .collect()
}

fn render(repo: &TestRepo, names: &[&str], extra: &[&str]) -> crate::common::Run {
    let args = catalog_args(repo, names);
    let mut all: Vec<&str> = vec!["render"];
    all.extend(args.iter().map(String::as_str));
    all.extend(extra);
    repo.run(&all)
}

fn stems(repo: &TestRepo) -> Vec<String> {
    let mut v: Vec<String> = files(&repo.path().join("catalog"))
        .keys()
        .map(|f| f.trim_end_matches(".yaml").to_string())
        .collect();
    v.sort();
    v
}

/// Renders every catalog file of a fixture into `out/`.
fn render_shape(shape: &str) -> (TestRepo, BTreeMap<String, String>) {
    let repo = TestRepo::fixture(&format!("render/{shape}"));
    let names = stems(&repo);
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let out = repo.path().join("out");
    let run = render(&repo, &names, &["-o", out.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{shape}: {}", run.stderr);
    (repo, files(&out))
}

#[test]
fn each_shape_renders_its_golden_files() {
    for shape in SHAPES {
        let (_repo, got) = render_shape(shape);
        let want = files(&fixtures().join(format!("render/{shape}/expected")));
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            want.keys().collect::<Vec<_>>(),
            "{shape}"
        );
        for (name, text) in &want {
            assert_eq!(
                &got[name], text,
                "{shape}/{name} differs from its golden file"
            );
        }
    }
}

#[test]
fn homelab_manifests_are_renders_output_byte_for_byte() {
    let repo = TestRepo::example("homelab");
    let before = repo.snapshot();
    // Default output folder: the config's `apps`, where the committed manifests are.
    let run = render(&repo, HOMELAB, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout.lines().count(), 12, "{}", run.stdout);
    assert!(
        run.stdout.contains("wrote [REPO]/apps/nextcloud-db.yaml\n"),
        "{}",
        run.stdout
    );
    assert_eq!(
        repo.snapshot(),
        before,
        "render must reproduce examples/homelab/apps exactly"
    );
    // The listed resources are exactly the app-tier files, and the flat tier still builds.
    let listed = repo.read("apps/kustomization.yaml");
    for name in files(&repo.path().join("apps")).keys() {
        if name != "kustomization.yaml" {
            assert!(
                listed.contains(&format!("  - {name}\n")),
                "{name} not listed"
            );
        }
    }
    kustomize(&repo.path().join("apps"));
}

#[test]
fn wave_layout_places_each_unit_in_its_wave() {
    let repo = TestRepo::example("homelab");
    let out = repo.path().join("rendered");
    let run = render(
        &repo,
        &["seerr", "nextcloud", "sonarr", "nextcloud"],
        &["-o", out.to_str().unwrap(), "--wave-layout"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut written: Vec<&str> = run.stdout.lines().collect();
    written.sort();
    assert_eq!(
        written,
        [
            "wrote [REPO]/rendered/wave-0/nextcloud-db.yaml",
            "wrote [REPO]/rendered/wave-1/nextcloud.yaml",
            "wrote [REPO]/rendered/wave-1/sonarr.yaml",
            "wrote [REPO]/rendered/wave-2/seerr.yaml",
        ]
    );
    assert_eq!(
        repo.read("rendered/wave-2/seerr.yaml"),
        repo.read("apps/seerr.yaml")
    );
}

#[test]
fn default_output_is_the_configured_app_tier_and_automation_can_be_left_out() {
    let repo = TestRepo::fixture("render/contract");
    repo.write("fluxwave.yaml", "apps: deploy/apps\n");
    let run = render(&repo, &["web"], &["--no-image-automation"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let text = repo.read("deploy/apps/web.yaml");
    assert!(!text.contains("$imagepolicy") && !text.contains("ImagePolicy"));
    assert!(text.contains("image: ghcr.io/example/web:1.20\n"), "{text}");
}

/// In a migrated tier, render writes where the repository lays the unit out: over the file
/// where it is, and a new unit's files into its wave's folder; FILE is taken relative to
/// `--repo` (the working directory is elsewhere).
#[test]
fn in_a_waved_tier_render_writes_into_the_units_wave_folder() {
    let repo = TestRepo::example("homelab");
    assert_eq!(repo.run(&["apply"]).code, 0);
    let before = repo.snapshot();
    let run = repo.run(&["render", "catalog/sonarr.yaml", "catalog/nextcloud.yaml"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        repo.snapshot(),
        before,
        "rendered over themselves, byte for byte"
    );
    assert!(
        run.stdout.contains("apps/wave-1/sonarr.yaml"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("apps/wave-0/nextcloud-db.yaml"),
        "{}",
        run.stdout
    );
    // A unit new to the tier: lidarr, like sonarr (wave 1, above jackett and qbittorrent).
    let lidarr = repo.read("catalog/sonarr.yaml").replace("sonarr", "lidarr");
    repo.write("catalog/lidarr.yaml", &lidarr);
    let run = repo.run(&["render", "catalog/lidarr.yaml"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(repo.path().join("apps/wave-1/lidarr.yaml").is_file());
    assert!(!repo.path().join("apps/lidarr.yaml").exists());
    // apply then only lists it in its wave's kustomization: nothing moves.
    let dry = repo.run(&["apply", "--dry-run"]);
    assert!(!dry.stdout.contains("move "), "{}", dry.stdout);
    assert!(
        dry.stdout.contains("apps/wave-1/kustomization.yaml"),
        "{}",
        dry.stdout
    );
}

/// Every document of every rendered file: shapes and homelab.
fn rendered_docs() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut add = |label: &str, text: &str| {
        for doc in text.split("\n---\n") {
            let v: Value = serde_saphyr::from_str(doc).unwrap();
            out.push((label.to_string(), v));
        }
    };
    for shape in SHAPES {
        for (name, text) in render_shape(shape).1 {
            add(&format!("{shape}/{name}"), &text);
        }
    }
    let repo = TestRepo::example("homelab");
    let out_dir = repo.path().join("out");
    let run = render(&repo, HOMELAB, &["-o", out_dir.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for (name, text) in files(&out_dir) {
        add(&format!("homelab/{name}"), &text);
    }
    out
}

#[test]
fn every_rendered_file_builds_with_kustomize() {
    for shape in SHAPES {
        let (repo, got) = render_shape(shape);
        let list: String = got.keys().map(|f| format!("  - {f}\n")).collect();
        repo.write(
            "out/kustomization.yaml",
            &format!("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n{list}"),
        );
        let built = kustomize(&repo.path().join("out"));
        let docs = got
            .values()
            .map(|t| t.matches("\n---\n").count() + 1)
            .sum::<usize>();
        assert_eq!(built.matches("\n---\n").count() + 1, docs, "{shape}");
    }
}

/// Deserializing into the API type and serializing back gives the same object: no field is
/// misplaced, misspelt or of the wrong type (k8s-openapi drops what it does not know).
fn round_trips<T: serde::de::DeserializeOwned + serde::Serialize>(label: &str, v: &Value) {
    let typed: T = serde_json::from_value(v.clone())
        .unwrap_or_else(|e| panic!("{label}: {} does not read back: {e}", v["kind"]));
    assert_eq!(&serde_json::to_value(typed).unwrap(), v, "{label}");
}

#[test]
fn rendered_objects_read_back_into_kubernetes_types() {
    let docs = rendered_docs();
    let mut seen = BTreeMap::<String, usize>::new();
    for (label, v) in &docs {
        let kind = v["kind"].as_str().unwrap();
        *seen.entry(kind.to_string()).or_default() += 1;
        match kind {
            "Namespace" => round_trips::<Namespace>(label, v),
            "PersistentVolumeClaim" => round_trips::<PersistentVolumeClaim>(label, v),
            "Deployment" => round_trips::<Deployment>(label, v),
            "Service" => round_trips::<Service>(label, v),
            "Ingress" => round_trips::<Ingress>(label, v),
            "Cluster" => {
                assert_eq!(v["apiVersion"], "postgresql.cnpg.io/v1", "{label}");
                let spec = &v["spec"];
                assert!(spec["instances"].as_u64().unwrap() >= 1, "{label}");
                assert!(spec["storage"]["size"].is_string(), "{label}");
                let initdb = &spec["bootstrap"]["initdb"];
                let name = v["metadata"]["name"].as_str().unwrap();
                assert_eq!(initdb["secret"]["name"], format!("{name}-app"), "{label}");
                assert!(initdb["database"].is_string() && initdb["owner"].is_string());
                assert_eq!(v["metadata"]["namespace"], name, "{label}");
            }
            "ImageRepository" | "ImagePolicy" => {
                assert_eq!(v["apiVersion"], "image.toolkit.fluxcd.io/v1", "{label}");
                assert_eq!(v["metadata"]["namespace"], "flux-system", "{label}");
                if kind == "ImageRepository" {
                    assert!(v["spec"]["image"].is_string() && v["spec"]["interval"].is_string());
                } else {
                    assert_eq!(
                        v["spec"]["imageRepositoryRef"]["name"],
                        v["metadata"]["name"]
                    );
                    assert!(
                        v["spec"]["policy"]["semver"]["range"].is_string(),
                        "{label}"
                    );
                }
            }
            other => panic!("{label}: unexpected kind {other}"),
        }
    }
    for kind in [
        "Namespace",
        "PersistentVolumeClaim",
        "Deployment",
        "Service",
        "Ingress",
        "Cluster",
        "ImageRepository",
        "ImagePolicy",
    ] {
        assert!(seen.contains_key(kind), "no {kind} rendered: {seen:?}");
    }
}

#[test]
fn stateful_objects_and_only_they_are_protected_from_prune() {
    for (label, v) in rendered_docs() {
        let kind = v["kind"].as_str().unwrap();
        let protected =
            v["metadata"]["annotations"]["kustomize.toolkit.fluxcd.io/prune"] == "disabled";
        let unprotected_fixture = label.starts_with("worker/");
        match kind {
            "PersistentVolumeClaim" | "Cluster" => {
                assert_eq!(protected, !unprotected_fixture, "{label} {kind}")
            }
            "Namespace" => {}
            _ => assert!(!protected, "{label} {kind}"),
        }
    }
}

fn bad(spec_tail: &str) -> (TestRepo, crate::common::Run) {
    let repo = TestRepo::fixture("render/contract");
    let text = repo.read("catalog/web.yaml") + spec_tail;
    repo.write("catalog/web.yaml", &text);
    let before = repo.snapshot();
    let out = repo.path().join("out");
    let run = render(&repo, &["web"], &["-o", out.to_str().unwrap()]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert_eq!(repo.snapshot(), before, "bad input writes nothing");
    (repo, run)
}

#[test]
fn bad_specs_give_located_errors_and_write_nothing() {
    let (_, run) = bad(
        "  volumes:\n    - name: data\n      mountPath: /data\n      persistent: {size: 10GB}\n",
    );
    insta::assert_snapshot!("render_bad_quantity", run.stderr);

    let (_, run) = bad("  volumes:\n    - name: data\n      mountpath: /data\n");
    assert!(
        run.stderr.contains("unknown field `mountpath`"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("catalog/web.yaml:16:7"),
        "{}",
        run.stderr
    );

    let (_, run) = bad("  probes:\n    readiness: {tcp: true, port: metrics}\n");
    assert!(
        run.stderr
            .contains("checks port `metrics`, which the container does not have"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("catalog/web.yaml:15:34"),
        "{}",
        run.stderr
    );

    let repo = TestRepo::fixture("render/contract");
    let text = repo.read("catalog/web.yaml").replace("\"1.20\"", "latest");
    repo.write("catalog/web.yaml", &text);
    let out = repo.path().join("out");
    let out = out.to_str().unwrap();
    let run = render(&repo, &["web"], &["-o", out]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("tag `latest` is not semver"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("catalog/web.yaml:10:10"),
        "{}",
        run.stderr
    );
    assert!(!repo.exists("out"));
    // Leaving automation out makes the same file fine.
    let run = render(&repo, &["web"], &["-o", out, "--no-image-automation"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn files_outside_the_catalog_are_refused() {
    let repo = TestRepo::fixture("render/contract");
    repo.write("elsewhere/web.yaml", &repo.read("catalog/web.yaml"));
    let other = repo.path().join("elsewhere/web.yaml");
    let out = repo.path().join("out");
    let run = repo.run(&[
        "render",
        other.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("not a ServiceDefinition of the catalog `catalog`"),
        "{}",
        run.stderr
    );
    let run = repo.run(&["render", "no/such/file.yaml"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("cannot read the file"),
        "{}",
        run.stderr
    );
    assert!(!repo.exists("out") && !repo.exists("apps"));
}

#[test]
fn help_shows_an_example_and_the_exit_status() {
    let repo = TestRepo::empty();
    for cmd in ["render", "schema"] {
        let run = repo.run(&[cmd, "--help"]);
        assert_eq!(run.code, 0);
        assert!(
            run.stdout.contains("Example:\n  fluxwave")
                || run.stdout.contains("Examples:\n  fluxwave"),
            "{}",
            run.stdout
        );
        assert!(run.stdout.contains("Exit status: 0"), "{}", run.stdout);
    }
}

fn schema(kind: &str) -> Value {
    let run = TestRepo::empty().run(&["schema", "--kind", kind]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    serde_json::from_str(&run.stdout).unwrap()
}

#[test]
fn committed_schemas_are_the_commands_output() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (kind, file) in [
        ("service", "schemas/service-definition.json"),
        ("config", "schemas/fluxwave-config.json"),
    ] {
        let run = TestRepo::empty().run(&["schema", "--kind", kind]);
        let committed = std::fs::read_to_string(root.join(file)).unwrap();
        assert_eq!(
            run.stdout, committed,
            "{file}: regenerate with `fluxwave schema --kind {kind}`"
        );
        assert_eq!(
            schema(kind)["$schema"],
            "http://json-schema.org/draft-07/schema#"
        );
    }
    assert_eq!(
        TestRepo::empty().run(&["schema"]).stdout,
        TestRepo::empty()
            .run(&["schema", "--kind", "service"])
            .stdout,
        "service is the default"
    );
}

fn yaml_value(text: &str) -> Value {
    serde_saphyr::from_str(text).unwrap()
}

#[test]
fn the_schema_accepts_every_example_and_rejects_broken_ones() {
    let service = jsonschema::draft7::new(&schema("service")).unwrap();
    let mut catalogs = vec![examples().join("homelab/catalog")];
    catalogs.extend(
        SHAPES
            .iter()
            .map(|s| fixtures().join(format!("render/{s}/catalog"))),
    );
    let mut checked = 0;
    for dir in catalogs {
        for (name, text) in files(&dir) {
            let v = yaml_value(&text);
            let errors: Vec<String> = service.iter_errors(&v).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{}/{name}: {errors:?}", dir.display());
            checked += 1;
        }
    }
    assert_eq!(checked, 15);
    let sonarr = std::fs::read_to_string(examples().join("homelab/catalog/sonarr.yaml")).unwrap();
    for broken in [
        sonarr.replace("  port: 8989", "  prot: 8989"),
        sonarr.replace("kind: ServiceDefinition", "kind: Service"),
        sonarr.replace("mountPath: /config", "mountPath: [/config]"),
        sonarr.replace(
            "    tls: {secretName: sonarr-tls}\n",
            "    tls: {secret: x}\n",
        ),
        // An image needs its tag (a definition without any image is dependency-only: below).
        sonarr.replace("    tag: \"4.0.9\"\n", ""),
    ] {
        assert_ne!(broken, sonarr);
        assert!(
            !service.is_valid(&yaml_value(&broken)),
            "accepted:\n{broken}"
        );
    }
    let dependency_only = "apiVersion: fluxwave.dev/v1alpha1\nkind: ServiceDefinition\nmetadata:\n  name: gitea-actions\nspec:\n  dependencies:\n    - to: gitea\n";
    assert!(service.is_valid(&yaml_value(dependency_only)));
    let config = jsonschema::draft7::new(&schema("config")).unwrap();
    let homelab = std::fs::read_to_string(examples().join("homelab/fluxwave.yaml")).unwrap();
    assert!(config.is_valid(&yaml_value(&homelab)));
    assert!(!config.is_valid(&yaml_value(&homelab.replace("above: true", "abov: true"))));
}

#[test]
fn example_catalog_files_point_editors_at_the_schema() {
    for (name, text) in files(&examples().join("homelab/catalog")) {
        assert!(
            text.starts_with(
                "# yaml-language-server: $schema=../../../schemas/service-definition.json\n"
            ),
            "{name}"
        );
    }
    assert!(examples()
        .join("homelab/catalog/../../../schemas/service-definition.json")
        .exists());
}
