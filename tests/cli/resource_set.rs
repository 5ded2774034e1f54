//! Flux Operator ResourceSets rendered by the real flux-operator CLI (`operator_env`), and
//! judged with the operator's own garbage collection (flux-operator v0.58.1
//! internal/controller/resourceset_controller.go): an object that leaves what a ResourceSet
//! makes is deleted at its next reconcile (`apply`: `inventory.Diff`, `deleteAllStaged`), a
//! ResourceSet deleted deletes everything it applied (`uninstall`), both unless the object
//! carries `fluxcd.controlplane.io/prune: disabled` (the delete options' `Exclusions`; the
//! kustomize-controller opt-outs mean nothing to the operator), and nothing at all while the
//! ResourceSet is annotated `fluxcd.controlplane.io/reconcile: disabled` (`IsDisabled`).
//! Which objects each revision makes is the operator's own builder's answer: the CLI links
//! `builder.BuildResourceSetFromSpec` and `inputs.Combine`.

use std::path::Path;
use std::sync::OnceLock;

use serde_json::Value;

use crate::common::{deletion_id, deletions, lab, TestRepo};
use crate::operator_env::flux_operator;

/// The cache of this test process (never the user's), under Cargo's `target/tmp`.
fn cache() -> &'static Path {
    static CACHE: OnceLock<tempfile::TempDir> = OnceLock::new();
    CACHE
        .get_or_init(|| {
            let parent = Path::new(env!("CARGO_TARGET_TMPDIR"));
            std::fs::create_dir_all(parent).unwrap();
            tempfile::Builder::new()
                .prefix("resourceset-cache-")
                .tempdir_in(parent)
                .unwrap()
        })
        .path()
}

/// `fluxwave ARGS` with the real flux-operator.
fn run(repo: &TestRepo, args: &[&str]) -> crate::common::Run {
    let mut cmd = repo.command(args);
    cmd.env("FLUXWAVE_FLUX_OPERATOR", flux_operator())
        .env("FLUXWAVE_CACHE", cache());
    repo.run_command(cmd)
}

/// `cutover ARGS --format json` with the real flux-operator: exit code and report (the text
/// form exits the same).
fn cutover(repo: &TestRepo, args: &[&str]) -> (i32, Value) {
    let mut all = vec!["cutover"];
    all.extend_from_slice(args);
    let text = run(repo, &all);
    all.extend(["--format", "json"]);
    let json = run(repo, &all);
    assert!(json.code == 0 || json.code == 1, "{}", json.stderr);
    assert_eq!(text.code, json.code, "{}", text.stdout);
    (json.code, serde_json::from_str(&json.stdout).unwrap())
}

/// Each deletion as `Kind/namespace/name rule owner`, sorted.
fn deleted(doc: &Value) -> Vec<String> {
    let mut out: Vec<String> = deletions(doc)
        .iter()
        .map(|d| {
            format!(
                "{} {} {}",
                deletion_id(d),
                d["rule"].as_str().unwrap(),
                d["owner"].as_str().unwrap()
            )
        })
        .collect();
    out.sort();
    out
}

/// A ResourceSet `databases` in `apps` making, for each inline input `app`, a ConfigMap and a
/// PersistentVolumeClaim; `claim_meta` and `map_meta` are written into their `metadata`.
fn databases(apps: &[&str], claim_meta: &str, map_meta: &str) -> String {
    let inputs: String = apps.iter().map(|a| format!("    - app: {a}\n")).collect();
    format!(
        "apiVersion: fluxcd.controlplane.io/v1\nkind: ResourceSet\nmetadata:\n  name: databases\n  namespace: apps\nspec:\n  inputs:\n{inputs}  resources:\n    - apiVersion: v1\n      kind: ConfigMap\n      metadata:\n        name: << inputs.app >>-config\n        namespace: apps\n{map_meta}      data:\n        app: << inputs.app >>\n    - apiVersion: v1\n      kind: PersistentVolumeClaim\n      metadata:\n        name: << inputs.app >>-data\n        namespace: apps\n{claim_meta}      spec:\n        accessModes: [ReadWriteOnce]\n        resources: {{requests: {{storage: 1Gi}}}}\n"
    )
}

#[test]
fn an_input_removed_from_a_resource_set_deletes_what_it_made_with_its_data() {
    let repo = lab();
    repo.write("apps/set.yaml", &databases(&["a", "b"], "", ""));
    repo.commit_all("two databases");
    // What the operator applies is in the build, under the ResourceSet, with its owner labels.
    let built = run(&repo, &["build", "--format", "json"]);
    assert_eq!(built.code, 0, "{}", built.stderr);
    let doc: Value = serde_json::from_str(&built.stdout).unwrap();
    let claim = doc["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["object"]["metadata"]["name"] == "b-data")
        .unwrap_or_else(|| panic!("{doc}"));
    assert_eq!(claim["owner"], "apps/databases", "{claim}");
    assert_eq!(claim["ownerKind"], "ResourceSet", "{claim}");
    // `--kustomization` picks the ResourceSet by its namespace and name, and the YAML says
    // what the owner is.
    let picked = run(&repo, &["build", "--kustomization", "apps/databases"]);
    assert_eq!(picked.code, 0, "{}", picked.stderr);
    assert_eq!(
        picked
            .stdout
            .matches("# owner: ResourceSet apps/databases,")
            .count(),
        4,
        "{}",
        picked.stdout
    );
    assert!(
        !picked.stdout.contains("# owner: flux-system/"),
        "{}",
        picked.stdout
    );
    assert_eq!(
        claim["object"]["metadata"]["labels"]["resourceset.fluxcd.controlplane.io/name"],
        "databases",
        "{claim}"
    );

    // `check` asks for the operator's opt-out, in the template.
    let found = unprotected(&repo);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found[0].0.contains("ResourceSet/apps/databases deletes it")
            && found[0]
                .1
                .contains("`fluxcd.controlplane.io/prune: disabled` in the ResourceSet's template"),
        "{found:?}"
    );

    repo.write("apps/set.yaml", &databases(&["a"], "", ""));
    let (code, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!(
        (code, doc["verdict"].as_str()),
        (1, Some("deletes")),
        "{doc}"
    );
    assert_eq!(
        deleted(&doc),
        [
            "ConfigMap/apps/b-config left-build ResourceSet/apps/databases",
            "PersistentVolumeClaim/apps/b-data left-build ResourceSet/apps/databases",
        ],
        "{doc}"
    );
    let claim = deletions(&doc)
        .iter()
        .find(|d| d["kind"] == "PersistentVolumeClaim")
        .unwrap();
    assert_eq!(claim["data"], "holds", "{doc}");
    // Renders are kept in the cache, and the run's files are gone.
    let kept = |folder: &str| {
        std::fs::read_dir(cache().join(folder))
            .map(|d| {
                d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                    .filter(|n| n.starts_with("resourceset-"))
                    .count()
            })
            .unwrap_or(0)
    };
    assert!(kept("renders") > 0);
    assert_eq!(kept("tmp"), 0);
    // The runbook protects the claim with the operator's own opt-out.
    let text = run(&repo, &["cutover", "--from", "HEAD"]).stdout;
    assert!(
        text.contains("add the annotation `fluxcd.controlplane.io/prune: disabled` to PersistentVolumeClaim/apps/b-data"),
        "{text}"
    );
}

/// The `unprotected-stateful` findings of `check`, by message.
fn unprotected(repo: &TestRepo) -> Vec<(String, String)> {
    let check = run(repo, &["check", "--format", "json"]);
    let found: Value = serde_json::from_str(&check.stdout).unwrap();
    found["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "unprotected-stateful")
        .map(|f| {
            let text = |k: &str| f[k].as_str().unwrap().to_string();
            (text("message"), text("help"))
        })
        .collect()
}

#[test]
fn only_the_operators_opt_out_protects_what_a_resource_set_made() {
    let repo = lab();
    let annotated = "        annotations: {fluxcd.controlplane.io/prune: disabled}\n";
    let kustomize_label = "        labels: {kustomize.toolkit.fluxcd.io/prune: disabled}\n";
    repo.write(
        "apps/set.yaml",
        &databases(&["a", "b"], annotated, kustomize_label),
    );
    repo.commit_all("opt-outs");
    // `check` holds the claims protected, by the operator's own opt-out.
    assert_eq!(unprotected(&repo), Vec::<(String, String)>::new());
    repo.write(
        "apps/set.yaml",
        &databases(&["a"], annotated, kustomize_label),
    );
    let (code, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(
        deleted(&doc),
        ["ConfigMap/apps/b-config left-build ResourceSet/apps/databases"],
        "{doc}"
    );
}

#[test]
fn a_resource_set_removed_deletes_everything_it_applied_unless_it_is_not_reconciled() {
    let repo = lab();
    repo.write("apps/set.yaml", &databases(&["a"], "", ""))
        .write("apps/kustomization.yaml", "resources: [set.yaml]\n");
    repo.commit_all("one database");
    repo.write("apps/kustomization.yaml", "resources: []\n");
    let (_, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!(
        deleted(&doc),
        [
            "ConfigMap/apps/a-config owner-removed ResourceSet/apps/databases",
            "PersistentVolumeClaim/apps/a-data owner-removed ResourceSet/apps/databases",
            "ResourceSet/apps/databases left-build Kustomization/flux-system/apps",
        ],
        "{doc}"
    );
    // The runbook lets it go first without deleting anything.
    let text = run(&repo, &["cutover", "--from", "HEAD"]).stdout;
    assert!(
        text.contains("add the annotation `fluxcd.controlplane.io/reconcile: disabled` to ResourceSet/apps/databases"),
        "{text}"
    );

    // As the runbook says: not reconciled, it is deleted alone.
    let disabled = databases(&["a"], "", "").replace(
        "  namespace: apps\nspec:",
        "  namespace: apps\n  annotations: {fluxcd.controlplane.io/reconcile: disabled}\nspec:",
    );
    repo.write("apps/set.yaml", &disabled)
        .write("apps/kustomization.yaml", "resources: [set.yaml]\n");
    repo.commit_all("let go");
    repo.write("apps/kustomization.yaml", "resources: []\n");
    let (_, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!(
        deleted(&doc),
        ["ResourceSet/apps/databases left-build Kustomization/flux-system/apps"],
        "{doc}"
    );
}

/// A Static ResourceSetInputProvider (`inputsFrom` by name) exports its `defaultValues` as one
/// input; the template ranges over a list in it. Only providers in the ResourceSet's
/// namespace count (`getInputs`).
const PROVIDED: &str = "apiVersion: fluxcd.controlplane.io/v1\nkind: ResourceSet\nmetadata:\n  name: backups\n  namespace: apps\nspec:\n  inputsFrom:\n    - name: backed-up\n  resourcesTemplate: |\n    <<- range $app := inputs.apps >>\n    ---\n    apiVersion: v1\n    kind: PersistentVolumeClaim\n    metadata:\n      name: << $app >>-data\n      namespace: apps\n    spec:\n      accessModes: [ReadWriteOnce]\n      resources: {requests: {storage: 1Gi}}\n    <<- end >>\n";

fn provider(name: &str, namespace: &str, kind: &str, apps: &[&str]) -> String {
    format!(
        "apiVersion: fluxcd.controlplane.io/v1\nkind: ResourceSetInputProvider\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n  type: {kind}\n  defaultValues:\n    apps: [{}]\n",
        apps.join(", ")
    )
}

#[test]
fn a_static_input_provider_feeds_a_resource_set_and_its_change_is_judged() {
    let repo = lab();
    repo.write("apps/set.yaml", PROVIDED)
        .write(
            "apps/inputs.yaml",
            &provider("backed-up", "apps", "Static", &["a", "b"]),
        )
        .write(
            "apps/elsewhere.yaml",
            &provider("backed-up", "other", "Static", &["z"]),
        );
    repo.commit_all("a provider");
    repo.write(
        "apps/inputs.yaml",
        &provider("backed-up", "apps", "Static", &["a"]),
    );
    let (code, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(
        deleted(&doc),
        ["PersistentVolumeClaim/apps/b-data left-build ResourceSet/apps/backups"],
        "{doc}"
    );
}

#[test]
fn inputs_fetched_at_reconcile_time_make_the_verdict_incomplete() {
    let repo = lab();
    repo.write("apps/set.yaml", PROVIDED).write(
        "apps/inputs.yaml",
        &provider("backed-up", "apps", "GitHubPullRequest", &["a"]),
    );
    repo.commit_all("pull requests");
    repo.write(
        "apps/set.yaml",
        &PROVIDED.replace("storage: 1Gi", "storage: 2Gi"),
    );
    let (code, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!(
        (code, doc["verdict"].as_str()),
        (1, Some("incomplete")),
        "{doc}"
    );
    let gap = &doc["incomplete"][0];
    assert_eq!(gap["kustomization"], "apps/backups", "{doc}");
    assert_eq!(gap["kind"], "ResourceSet", "{doc}");
    assert!(
        gap["why"].to_string().contains("GitHubPullRequest"),
        "{doc}"
    );
    // A change the ResourceSet does not read leaves it as it was.
    repo.commit_all("2Gi");
    repo.write(
        "apps/other.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: apps}\n",
    );
    let (code, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!((code, doc["verdict"].as_str()), (0, Some("safe")), "{doc}");
}

#[test]
fn a_kustomization_a_resource_set_makes_is_built_and_its_removal_judged() {
    let repo = lab();
    let set = |teams: &[&str]| {
        let inputs: String = teams.iter().map(|t| format!("    - team: {t}\n")).collect();
        format!("apiVersion: fluxcd.controlplane.io/v1\nkind: ResourceSet\nmetadata:\n  name: tenants\n  namespace: flux-system\nspec:\n  inputs:\n{inputs}  resources:\n    - apiVersion: kustomize.toolkit.fluxcd.io/v1\n      kind: Kustomization\n      metadata:\n        name: team-<< inputs.team >>\n        namespace: flux-system\n      spec:\n        interval: 10m\n        path: ./teams/<< inputs.team >>\n        prune: true\n        sourceRef:\n          kind: GitRepository\n          name: flux-system\n")
    };
    repo.write("apps/tenants.yaml", &set(&["red", "blue"]))
        .write(
            "teams/red/db.yaml",
            "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: db\n  namespace: red\nspec:\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 1Gi}}\n",
        )
        .write(
            "teams/blue/web.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, namespace: blue}\n",
        );
    repo.commit_all("two tenants");
    repo.write("apps/tenants.yaml", &set(&["blue"]));
    let (code, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(
        deleted(&doc),
        ["PersistentVolumeClaim/red/db owner-removed Kustomization/flux-system/team-red"],
        "{doc}"
    );
    let reason = deletions(&doc)[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("(ResourceSet flux-system/tenants prunes it)"),
        "{reason}"
    );
}

#[test]
fn a_template_the_operator_cannot_render_is_never_safe() {
    let repo = lab();
    repo.write("apps/set.yaml", &databases(&["a"], "", ""));
    repo.commit_all("one database");
    repo.write(
        "apps/set.yaml",
        &databases(&["a"], "", "").replace(
            "<< inputs.app >>-config",
            "<< inputs.app | nosuchfunction >>-config",
        ),
    );
    let (code, doc) = cutover(&repo, &["--from", "HEAD"]);
    assert_eq!(
        (code, doc["verdict"].as_str()),
        (1, Some("incomplete")),
        "{doc}"
    );
    assert!(
        doc["incomplete"].to_string().contains("nosuchfunction"),
        "{doc}"
    );
    // `check` says so where it is written.
    let check = run(&repo, &["check", "--format", "json"]);
    let found: Value = serde_json::from_str(&check.stdout).unwrap();
    let failed: Vec<&Value> = found["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "build-failed")
        .collect();
    assert_eq!(failed.len(), 1, "{found}");
    assert_eq!(failed[0]["path"], "apps/set.yaml", "{found}");
    assert!(
        failed[0]["message"]
            .as_str()
            .unwrap()
            .contains("ResourceSet `apps/databases`"),
        "{found}"
    );
}

/// The templates are the operator's hermetic ones, and flux-operator runs with no environment:
/// a template cannot read fluxwave's (a CI token), nor reach a cluster.
#[test]
fn a_template_cannot_read_the_environment() {
    let repo = lab();
    let reading = databases(&["a"], "", "").replace(
        "app: << inputs.app >>",
        "app: '<< env \"FLUXWAVE_TEST_TOKEN\" >><< expandenv \"$FLUXWAVE_TEST_TOKEN\" >>'",
    );
    repo.write("apps/set.yaml", &reading);
    repo.commit_all("reads the environment");
    let mut cmd = repo.command(&["build", "--format", "json"]);
    cmd.env("FLUXWAVE_FLUX_OPERATOR", flux_operator())
        .env("FLUXWAVE_CACHE", cache())
        .env("FLUXWAVE_TEST_TOKEN", "token-4f1d9a");
    let out = repo.run_command(cmd);
    assert!(!out.stdout.contains("token-4f1d9a"), "{}", out.stdout);
    assert!(!out.stderr.contains("token-4f1d9a"), "{}", out.stderr);
    assert!(out.stderr.contains("ResourceSet"), "{}", out.stderr);
}

#[test]
fn each_step_over_resource_sets_is_its_own_cutover() {
    let repo = lab();
    repo.write("apps/set.yaml", &databases(&["a", "b", "c"], "", ""))
        .write("apps/kustomization.yaml", "resources: [set.yaml]\n");
    repo.commit_all("start");
    let start = repo.git(&["rev-parse", "HEAD"]);
    let start = start.trim();
    repo.write("apps/set.yaml", &databases(&["a", "b"], "", ""));
    repo.commit_all("drop c");
    repo.write("apps/README.md", "notes\n");
    repo.commit_all("notes");
    repo.write("apps/set.yaml", &databases(&["a", "b", "d"], "", ""));
    repo.commit_all("add d");
    repo.write("apps/kustomization.yaml", "resources: []\n");
    repo.commit_all("drop the set");
    let range = format!("{start}..HEAD");
    let each = run(&repo, &["cutover", "--each", &range, "--format", "json"]);
    let steps: Value =
        serde_json::from_str(&each.stdout).unwrap_or_else(|e| panic!("{e}: {}", each.stderr));
    let steps = steps["steps"]
        .as_array()
        .unwrap_or_else(|| panic!("{steps}"));
    let line = repo.git(&["rev-list", "--first-parent", "--reverse", &range]);
    let mut from = start.to_string();
    let mut verdicts = Vec::new();
    for (report, to) in steps.iter().zip(line.lines()) {
        let (_, alone) = cutover(&repo, &["--from", &from, "--to", to]);
        assert_eq!(report, &alone, "{from}..{to}");
        verdicts.push(alone["verdict"].as_str().unwrap().to_string());
        from = to.to_string();
    }
    assert_eq!(verdicts, ["deletes", "safe", "safe", "deletes"]);
}
