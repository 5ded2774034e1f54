//! What a change touches among the Flux Kustomizations fluxwave cannot see whole, and what a
//! step of a history costs. A partial Kustomization makes the verdict "incomplete" only when
//! the change reaches what it builds: its own object (not its file's other documents), a file
//! its build reads, or, when its build fails in both revisions on its way through Flux
//! Kustomizations it declares, anything (those an earlier build applied still reconcile).
//! Real git repositories, written by the tests in the shapes of the common layouts.

use serde_json::Value;

use crate::common::{
    assert_steps_are_their_own_cutovers, cutover_json, flux_ks as ks, TestRepo, FAILING_PATCH,
};

fn config_map(name: &str, value: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: apps\ndata:\n  a: {value}\n")
}

fn incomplete(doc: &Value) -> Vec<String> {
    doc["incomplete"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["kustomization"].as_str().unwrap().to_string())
        .collect()
}

/// `cutover --from HEAD` (to the working tree): exit code, verdict and the partial
/// Kustomizations named.
fn verdict(repo: &TestRepo) -> (i32, String, Vec<String>) {
    let (code, doc) = cutover_json(repo, &["--from", "HEAD"]);
    let verdict = doc["verdict"].as_str().unwrap().to_string();
    (code, verdict, incomplete(&doc))
}

/// The Kustomization `broken` fails to build (a resource is missing) in both revisions; the
/// ConfigMap it reads carries Flux's own labels (`kustomize.toolkit.fluxcd.io/ssa`,
/// `.../prune`), as manifests commonly do.
fn failing_build_repo() -> TestRepo {
    let repo = TestRepo::empty();
    repo.write(
        "clusters/dev/kustomization.yaml",
        "resources: [apps.yaml, broken.yaml]\n",
    )
    .write("clusters/dev/apps.yaml", &ks("apps", "./apps", &[]))
    .write("clusters/dev/broken.yaml", &ks("broken", "./broken", &[]))
    .write("apps/web.yaml", &config_map("web", "b"))
    .write(
        "broken/kustomization.yaml",
        "resources: [cm.yaml, missing.yaml]\n",
    )
    .write(
        "broken/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: broken\n  labels:\n    kustomize.toolkit.fluxcd.io/ssa: IfNotPresent\n  annotations:\n    kustomize.toolkit.fluxcd.io/prune: disabled\n",
    );
    repo.commit_all("a build that fails");
    repo
}

#[test]
fn a_failing_build_that_declares_no_kustomization_hides_nothing() {
    // kustomize-controller internal/controller/kustomization_controller.go, `reconcile`: a
    // build that fails returns before `apply` and `prune`, so `broken` applies and deletes
    // nothing in either revision; the Kustomizations it could hide are those its objects
    // declare (`ssautil.ReadObjects`: apiVersion kustomize.toolkit.fluxcd.io/*, kind
    // Kustomization), and it declares none: a label of Flux's group is not one. The change
    // to `apps` is judged in full, and is safe.
    let repo = failing_build_repo();
    repo.write("apps/web.yaml", &config_map("web", "c"));
    assert_eq!(verdict(&repo), (0, "safe".to_string(), vec![]));
    // A change to a file it reads reaches it, but its build surely fails still (a resource
    // is missing): Flux applies and deletes nothing of it.
    repo.write(
        "broken/cm.yaml",
        &repo.read("broken/cm.yaml").replace("name: cm", "name: cm2"),
    );
    assert_eq!(verdict(&repo), (0, "safe".to_string(), vec![]));
    // The report says the failure apart from what fluxwave does not model.
    let text = repo.run(&["cutover", "--from", "HEAD"]).stdout;
    let failing = text.find("Fails to build (fix before merging)\n");
    assert!(
        failing.is_some_and(|at| text[at..].contains("resource `missing.yaml` not found")),
        "{text}"
    );
    // The change that fixes it: Flux prunes what it applied last, which only the cluster's
    // inventory lists. The older revision's failure is no warning of this change.
    repo.write("broken/missing.yaml", &config_map("missing", "b"));
    let (code, doc) = cutover_json(&repo, &["--from", "HEAD"]);
    assert_eq!(
        (code, incomplete(&doc)),
        (1, vec!["flux-system/broken".into()])
    );
    let why = doc["incomplete"][0]["why"].to_string();
    assert!(
        why.contains("build failure in the older revision")
            && why.contains("listed only in the cluster's inventory"),
        "{why}"
    );
    assert!(
        !doc["warnings"].to_string().contains("build failure"),
        "{doc}"
    );
    // A failure fluxwave does not call certain: a change to a file the build reads leaves
    // what Flux does unknown.
    repo.write("broken/kustomization.yaml", FAILING_PATCH);
    repo.remove("broken/missing.yaml");
    repo.commit_all("a patch that fails");
    assert_eq!(verdict(&repo), (0, "safe".to_string(), vec![]));
    repo.write(
        "broken/cm.yaml",
        &repo.read("broken/cm.yaml").replace("name: cm2", "name: cm"),
    );
    assert_eq!(
        verdict(&repo),
        (
            1,
            "incomplete".to_string(),
            vec!["flux-system/broken".into()]
        )
    );
}

#[test]
fn a_failing_build_that_declares_a_kustomization_hides_it() {
    // The same, but `broken` declares `child`, which an earlier build of it applied: `child`
    // is still in the cluster and reconciles the newer revision (`reconcile` keeps the
    // inventory of a failing build), so removing a file at its path deletes an object that
    // no build fluxwave sees holds: incomplete, whatever the change.
    let repo = failing_build_repo();
    repo.write(
        "broken/kustomization.yaml",
        "resources: [cm.yaml, child.yaml, missing.yaml]\n",
    )
    .write("broken/child.yaml", &ks("child", "./child", &[]))
    .write("child/cm.yaml", &config_map("child", "b"));
    repo.commit_all("broken declares child");
    repo.remove("child/cm.yaml");
    assert_eq!(
        verdict(&repo),
        (
            1,
            "incomplete".to_string(),
            vec!["flux-system/broken".into()]
        )
    );
}

#[test]
fn a_failing_root_hides_the_kustomizations_its_own_file_declares() {
    // `flux bootstrap`'s sync file, with a second Kustomization `apps` beside the root's own
    // document. The root's build fails in both revisions (a resource is missing), so Flux
    // applies none of it (kustomize-controller `reconcile`), but `apps`, applied by an
    // earlier build, reconciles the newer revision and prunes `db`. The root's own document
    // is not a Kustomization it hides; the other document of its file is.
    let repo = TestRepo::empty();
    let sync = "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 1m0s\n  ref: {branch: main}\n  url: ssh://git@example.org/fleet\n---\n".to_string()
        + &ks("flux-system", "./clusters/dev", &[])
        + "---\n"
        + &ks("apps", "./apps", &[]);
    repo.write("clusters/dev/flux-system/gotk-sync.yaml", &sync)
        .write(
            "clusters/dev/kustomization.yaml",
            "resources: [flux-system/gotk-sync.yaml, missing.yaml]\n",
        )
        .write("apps/web.yaml", &config_map("web", "b"))
        .write("apps/db.yaml", &config_map("db", "b"));
    repo.commit_all("a root that fails");
    repo.remove("apps/db.yaml");
    assert_eq!(
        verdict(&repo),
        (
            1,
            "incomplete".to_string(),
            vec!["flux-system/flux-system".into()]
        )
    );
}

#[test]
fn a_change_to_another_document_of_its_file_does_not_touch_a_kustomization() {
    // One `ks.yaml` declares two Kustomizations (onedr0p/cluster-template's per-app layout):
    // `web`, seen whole, and `broken`, whose build fails (not surely: `FAILING_PATCH`). What
    // `broken` applies depends on its own object (its spec, as its parent's build holds it)
    // and the files its build reads, not on its neighbour in the file: a new `timeout` for
    // `web` leaves it alone.
    let repo = TestRepo::empty();
    let both = |web_extra: &[&str], broken_extra: &[&str]| {
        ks("web", "./web", web_extra) + "---\n" + &ks("broken", "./broken", broken_extra)
    };
    repo.write("clusters/dev/kustomization.yaml", "resources: [ks.yaml]\n")
        .write("clusters/dev/ks.yaml", &both(&[], &[]))
        .write("web/cm.yaml", &config_map("web", "b"))
        .write("broken/kustomization.yaml", FAILING_PATCH)
        .write("broken/cm.yaml", &config_map("broken", "b"));
    repo.commit_all("two Kustomizations in one file");
    repo.write("clusters/dev/ks.yaml", &both(&["timeout: 5m"], &[]));
    assert_eq!(verdict(&repo), (0, "safe".to_string(), vec![]));
    // Its own object changes: what it applies once fixed may change.
    repo.write("clusters/dev/ks.yaml", &both(&[], &["timeout: 5m"]));
    assert_eq!(
        verdict(&repo),
        (
            1,
            "incomplete".to_string(),
            vec!["flux-system/broken".into()]
        )
    );
}

/// `cutover --each` over `range` with `FLUXWAVE_TEST_STEP_COUNTS` set: for each step, the
/// Flux Kustomizations built afresh and the footprints worked out; and the verdicts.
fn step_counts(repo: &TestRepo, range: &str) -> (Vec<(usize, usize)>, Vec<String>) {
    let (counts, verdicts) = step_costs(repo, range);
    (counts.iter().map(|&(b, f, _)| (b, f)).collect(), verdicts)
}

/// `step_counts`, with the manifests each step parsed.
pub(crate) fn step_costs(
    repo: &TestRepo,
    range: &str,
) -> (Vec<(usize, usize, usize)>, Vec<String>) {
    let (counts, doc) = each_counted(repo, range);
    let counts = counts.iter().map(|&[b, f, p, _]| (b, f, p)).collect();
    let verdicts = doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["verdict"].as_str().unwrap().to_string())
        .collect();
    (counts, verdicts)
}

#[test]
fn a_step_that_touches_no_footprint_builds_nothing() {
    // Six per-app Kustomizations: two seen whole, two reading a remote base (built, not seen
    // whole), two whose build fails. What a partial one reads depends only on the files its
    // footprint names: a step that edits README.md, or one app's ConfigMap, works out no
    // footprint again, and builds afresh only what it changes (a build that fails is
    // replayed too, its error with it).
    let repo = TestRepo::empty();
    let apps = ["a", "b", "remote-a", "remote-b", "broken-a", "broken-b"];
    let list: String = apps.iter().map(|a| format!("  - {a}.yaml\n")).collect();
    repo.write(
        "clusters/dev/kustomization.yaml",
        &format!("resources:\n{list}"),
    );
    for a in apps {
        repo.write(
            &format!("clusters/dev/{a}.yaml"),
            &ks(a, &format!("./apps/{a}"), &[]),
        )
        .write(&format!("apps/{a}/cm.yaml"), &config_map(a, "b"));
        let extra = match a.split('-').next() {
            Some("remote") => "  - https://github.com/example/app//deploy?ref=v1\n",
            Some("broken") => "  - missing.yaml\n",
            _ => "",
        };
        repo.write(
            &format!("apps/{a}/kustomization.yaml"),
            &format!("resources:\n  - cm.yaml\n{extra}"),
        );
    }
    repo.write("README.md", "a fleet\n");
    repo.commit_all("init");
    repo.write("README.md", "a fleet, edited\n");
    repo.commit_all("README");
    repo.write("README.md", "a fleet, edited twice\n");
    repo.commit_all("README twice");
    repo.write("apps/a/cm.yaml", &config_map("a", "c"));
    repo.commit_all("a: c");
    repo.write("README.md", "a fleet, edited again\n");
    repo.commit_all("README again");
    let (counts, verdicts) = step_counts(&repo, "HEAD~4..HEAD");
    assert_eq!(verdicts, ["safe"; 4]);
    // The first step builds both revisions and works out each partial footprint once per
    // revision; the others replay them.
    assert_eq!(counts.len(), 4, "{counts:?}");
    assert_eq!(counts[1..], [(0, 0), (1, 0), (0, 0)], "{counts:?}");
}

/// A folder of manifests Flux builds with the kustomization it generates, built again at
/// every step that changes one of them, and a partial Kustomization reading two of them (it
/// also lists a missing file): the builds and footprints a step makes again parse only the
/// file that changed, the others are taken as the step before loaded them
/// (`kustomize::Loads`).
#[test]
fn a_step_parses_only_the_files_it_changes() {
    let repo = TestRepo::empty();
    repo.write(
        "clusters/dev/kustomization.yaml",
        "resources:\n  - apps.yaml\n  - broken.yaml\n",
    )
    .write("clusters/dev/apps.yaml", &ks("apps", "./apps", &[]))
    .write("clusters/dev/broken.yaml", &ks("broken", "./broken", &[]))
    .write(
        "broken/kustomization.yaml",
        "resources:\n  - ../apps/a.yaml\n  - ../apps/b.yaml\n  - missing.yaml\n",
    );
    let apps: Vec<String> = (0..20).map(|i| ((b'a' + i) as char).to_string()).collect();
    for a in &apps {
        repo.write(&format!("apps/{a}.yaml"), &config_map(a, "b"));
    }
    repo.commit_all("init");
    for a in ["c", "a", "d"] {
        repo.write(&format!("apps/{a}.yaml"), &config_map(a, "c"));
        repo.commit_all(&format!("{a}: c"));
    }
    let (costs, verdicts) = step_costs(&repo, "HEAD~3..HEAD");
    // `broken` surely fails (a resource is missing): Flux applies nothing of it.
    assert_eq!(verdicts, ["safe", "safe", "safe"], "{costs:?}");
    // The first step loads both revisions. After it, each step builds the folder again and
    // parses one file, whatever else it builds again or works out (its failing build names
    // the revision it read, so it is never replayed; its footprint is worked out anew).
    let later = &costs[1..];
    assert!(later.iter().all(|&(builds, _, _)| builds >= 1), "{costs:?}");
    assert!(
        later.iter().any(|&(_, footprints, _)| footprints >= 1),
        "{costs:?}"
    );
    assert_eq!(
        later
            .iter()
            .map(|&(_, _, parses)| parses)
            .collect::<Vec<_>>(),
        [1, 1],
        "{costs:?}"
    );
}

/// Bootstrap's folder, whose kustomization lists a folder besides the sync file (a
/// `flux-system/patches` kustomization, say): discovery and every build ask for the root's
/// documents as that kustomization builds them, and the answer is kept with what its build
/// read and listed, so a step that changes none of it parses nothing, however large the
/// folder's files (bootstrap's half a megabyte of `gotk-components.yaml`).
#[test]
fn the_roots_documents_are_built_once_while_their_folder_stays() {
    let sync = "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: flux-system, namespace: flux-system}\nspec: {url: 'ssh://git@example.com/fleet', ref: {branch: main}, interval: 1m}\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: flux-system, namespace: flux-system}\nspec: {path: ./clusters/dev, prune: true, sourceRef: {kind: GitRepository, name: flux-system}, interval: 10m}\n";
    let repo = TestRepo::empty();
    repo.write("clusters/dev/flux-system/gotk-sync.yaml", sync)
        .write(
            "clusters/dev/flux-system/kustomization.yaml",
            "resources:\n  - gotk-sync.yaml\n  - extra\n",
        )
        .write(
            "clusters/dev/flux-system/extra/kustomization.yaml",
            "resources:\n  - cm.yaml\n",
        )
        .write(
            "clusters/dev/flux-system/extra/cm.yaml",
            &config_map("extra", "b"),
        )
        .write("clusters/dev/apps.yaml", &ks("apps", "./apps", &[]))
        .write("apps/cm.yaml", &config_map("web", "b"))
        .write("README.md", "a fleet\n");
    repo.commit_all("init");
    repo.write("README.md", "a fleet, edited\n");
    repo.commit_all("README");
    repo.write("README.md", "a fleet, edited twice\n");
    repo.commit_all("README twice");
    let (costs, verdicts) = step_costs(&repo, "HEAD~2..HEAD");
    assert_eq!(verdicts, ["safe", "safe"], "{costs:?}");
    assert_eq!(costs[1], (0, 0, 0), "{costs:?}");
}

/// The settings one Kustomization substitutes from are built by a later one: each revision
/// is built in two passes, the second knowing the settings from the start
/// (`inventory::build_with`). The second pass replays the first's builds (a build depends on
/// its files and spec; what is substituted is substituted again), so a step that edits
/// README.md builds nothing afresh, and one that changes a setting still sees the renamed
/// object it makes.
#[test]
fn a_second_pass_replays_the_first_passes_builds() {
    let repo = TestRepo::empty();
    repo.write(
        "clusters/dev/kustomization.yaml",
        "resources:\n  - apps.yaml\n  - settings.yaml\n",
    )
    .write(
        "clusters/dev/apps.yaml",
        &ks(
            "apps",
            "./apps",
            &["postBuild:", "  substituteFrom:", "    - {kind: ConfigMap, name: cluster-settings}"],
        ),
    )
    .write(
        "clusters/dev/settings.yaml",
        &ks("settings", "./settings", &[]),
    )
    .write(
        "settings/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-settings\n  namespace: flux-system\ndata:\n  SUFFIX: blue\n",
    )
    .write("apps/kustomization.yaml", "resources:\n  - cm.yaml\n")
    .write(
        "apps/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-${SUFFIX}\n  namespace: apps\n",
    )
    .write("README.md", "a fleet\n");
    repo.commit_all("init");
    repo.write("README.md", "a fleet, edited\n");
    repo.commit_all("README");
    repo.write("README.md", "a fleet, edited twice\n");
    repo.commit_all("README twice");
    repo.write(
        "settings/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-settings\n  namespace: flux-system\ndata:\n  SUFFIX: green\n",
    );
    repo.commit_all("green");
    let (counts, verdicts) = step_counts(&repo, "HEAD~3..HEAD");
    assert_eq!(verdicts, ["safe", "safe", "deletes"], "{counts:?}");
    assert_eq!(counts[1], (0, 0), "{counts:?}");
    let (_, doc) = cutover_json(&repo, &["--from", "HEAD~1", "--to", "HEAD"]);
    let gone: Vec<String> = crate::common::deletions(&doc)
        .iter()
        .map(crate::common::deletion_id)
        .collect();
    assert_eq!(gone, ["ConfigMap/apps/web-blue"], "{doc}");
}

/// A step builds only the environments its change reaches: one none of whose builds read a
/// file that changed (nor a CRD, nor its root) is the step before's, taken whole, and every
/// step's report is the one its own cutover gives.
#[test]
fn a_step_builds_only_the_environments_its_change_reaches() {
    let repo = TestRepo::empty();
    for env in ["prod", "staging"] {
        repo.write(
            &format!("clusters/{env}/kustomization.yaml"),
            "resources: [web.yaml]\n",
        )
        .write(
            &format!("clusters/{env}/web.yaml"),
            &ks("web", &format!("./apps/{env}"), &[]),
        )
        .write(&format!("apps/{env}/cm.yaml"), &config_map("web", "a"));
    }
    repo.write("README.md", "two clusters\n");
    repo.commit_all("init");
    let start = repo.git(&["rev-parse", "HEAD"]).trim().to_string();
    repo.write("README.md", "two clusters: prod and staging\n");
    repo.commit_all("README first");
    repo.write("apps/staging/cm.yaml", &config_map("web-2", "a"));
    repo.commit_all("staging renames its ConfigMap");
    repo.write("README.md", "two clusters, edited\n");
    repo.commit_all("README");
    repo.write("apps/prod/cm.yaml", &config_map("web-2", "a"));
    repo.commit_all("prod renames its ConfigMap");

    let range = format!("{start}..HEAD");
    let mut cmd = repo.command(&["cutover", "--each", &range, "--format", "json"]);
    cmd.env("FLUXWAVE_TEST_STEP_COUNTS", "1");
    let run = repo.run_command(cmd);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let environments: Vec<usize> = run
        .stderr
        .lines()
        .filter_map(|l| l.split_once(", environments ")?.1.trim().parse().ok())
        .collect();
    // The first step builds both environments in both revisions.
    assert_eq!(environments[1..], [1, 0, 1], "{}", run.stderr);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    let steps = doc["steps"].as_array().unwrap();
    assert_steps_are_their_own_cutovers(&repo, &start, steps);
    let verdicts: Vec<&str> = steps
        .iter()
        .map(|s| s["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["safe", "deletes", "safe", "deletes"]);
}

/// A `substituteFrom` source no build applies is looked for in every manifest (a bootstrap
/// folder applied by hand): a step that takes that file away changes what the build reads
/// though no build reads the file, and is judged again, as its own cutover judges it.
#[test]
fn a_step_that_removes_a_source_written_outside_every_build_is_judged_again() {
    let repo = TestRepo::empty();
    repo.write(
        "clusters/prod/kustomization.yaml",
        "resources: [web.yaml]\n",
    )
    .write(
        "clusters/prod/web.yaml",
        &ks(
            "web",
            "./apps/web",
            &["postBuild: {substituteFrom: [{kind: Secret, name: cluster-secrets}]}"],
        ),
    )
    .write(
        "apps/web/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: apps\ndata:\n  host: ${DOMAIN}\n",
    )
    .write(
        "bootstrap/cluster-secrets.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: cluster-secrets\n  namespace: flux-system\nstringData:\n  DOMAIN: example.com\n",
    )
    .write("README.md", "one cluster\n");
    repo.commit_all("init");
    let start = repo.git(&["rev-parse", "HEAD"]).trim().to_string();
    repo.write("README.md", "one cluster, edited\n");
    repo.commit_all("README");
    repo.remove("bootstrap/cluster-secrets.yaml");
    repo.commit_all("the bootstrap secret goes");
    let range = format!("{start}..HEAD");
    let (_, each) = cutover_json(&repo, &["--each", &range]);
    let steps = each["steps"].as_array().unwrap();
    assert_steps_are_their_own_cutovers(&repo, &start, steps);
    // The step tells what it changed: the build reads a source the repository no longer
    // writes.
    let warns = |s: &Value| {
        s["warnings"]
            .to_string()
            .contains("in no build of the environment")
    };
    assert!(!warns(&steps[0]) && warns(&steps[1]), "{each:#}");
}

/// `cutover --each` over `range` without Helm, with `FLUXWAVE_TEST_STEP_COUNTS` set: for
/// each step, the Flux Kustomizations built afresh, the footprints worked out, the manifests
/// parsed and the environment passes made (the first step's counts cover both of its
/// revisions); and the report.
fn each_counted(repo: &TestRepo, range: &str) -> (Vec<[usize; 4]>, Value) {
    let mut cmd = repo.command(&["cutover", "--each", range, "--format", "json", "--no-helm"]);
    cmd.env("FLUXWAVE_TEST_STEP_COUNTS", "1");
    let run = repo.run_command(cmd);
    assert!(run.code == 0 || run.code == 1, "{}", run.stderr);
    let counts = run
        .stderr
        .lines()
        .filter_map(|l| {
            let (_, rest) = l.split_once(": builds ")?;
            let (builds, rest) = rest.split_once(", footprints ")?;
            let (footprints, rest) = rest.split_once(", parses ")?;
            let (parses, environments) = rest.split_once(", environments ")?;
            let n = |s: &str| s.trim().parse::<usize>().unwrap();
            Some([n(builds), n(footprints), n(parses), n(environments)])
        })
        .collect();
    (counts, serde_json::from_str(&run.stdout).unwrap())
}

/// The environment passes each step of `cutover --each` over `<start>..HEAD` made
/// (`each_counted`), once each step is held to its own cutover; and the steps' reports.
fn passes_of_steps_as_their_own_cutovers(repo: &TestRepo, start: &str) -> (Vec<usize>, Value) {
    let (counts, doc) = each_counted(repo, &format!("{start}..HEAD"));
    assert_steps_are_their_own_cutovers(repo, start, doc["steps"].as_array().unwrap());
    (counts.iter().map(|c| c[3]).collect(), doc)
}

/// The ids of what each step of a `cutover --each` report deletes.
fn deleted_by_step(doc: &Value) -> Vec<Vec<String>> {
    doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            crate::common::deletions(s)
                .iter()
                .map(crate::common::deletion_id)
                .collect()
        })
        .collect()
}

/// What `apps` writes to read `cluster-secrets`.
const SUBSTITUTES: &str = "postBuild: {substituteFrom: [{kind: Secret, name: cluster-secrets}]}";

/// An environment `prod` applying `resources` (`apps.yaml`, the Flux Kustomization `apps`,
/// and `secrets.yaml`, the one of `secrets/`, which makes `cluster-secrets`): `apps/` holds a
/// Namespace named from the Secret's `TEAM` (a team renamed deletes it) and `web.yaml`.
fn team_repo(resources: &str, apps: &str, web: &str) -> TestRepo {
    let repo = TestRepo::empty();
    repo.write(
        "clusters/prod/kustomization.yaml",
        &format!("resources: {resources}\n"),
    )
    .write("clusters/prod/apps.yaml", apps)
    .write(
        "clusters/prod/secrets.yaml",
        &ks("secrets", "./secrets", &[]),
    )
    .write("secrets/secret.yaml", &cluster_secrets("a"))
    .write(
        "apps/kustomization.yaml",
        "resources: [team.yaml, web.yaml]\n",
    )
    .write(
        "apps/team.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-${TEAM}\n",
    )
    .write("apps/web.yaml", web)
    .write("README.md", "one cluster\n");
    repo
}

/// The Secret `cluster-secrets` in `secrets/`, setting `TEAM`.
fn cluster_secrets(team: &str) -> String {
    format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: cluster-secrets\n  namespace: flux-system\nstringData:\n  TEAM: {team}\n")
}

/// An environment whose builds read a `substituteFrom` source one of them makes later takes
/// two passes (the cluster has the source once the repository is applied; see
/// `inventory::build_with`): `apps` reads `cluster-secrets` before `secrets` makes it. A step
/// after such a revision makes one pass, begun with the sources the first pass before built,
/// when the sources it read from them are as they were; a step that changes one makes
/// them all. Every step's report is the one its own cutover gives.
#[test]
fn a_step_after_two_passes_makes_one_while_the_sources_it_reads_stay() {
    let apps = ks("apps", "./apps", &[SUBSTITUTES]);
    let repo = team_repo("[apps.yaml, secrets.yaml]", &apps, &ks("web", "./web", &[]));
    repo.write("web/cm.yaml", &config_map("web", "a"));
    repo.commit_all("init");
    let start = repo.git(&["rev-parse", "HEAD"]).trim().to_string();
    repo.write("web/cm.yaml", &config_map("web-2", "a"));
    repo.commit_all("web renames its ConfigMap");
    repo.write("secrets/secret.yaml", &cluster_secrets("b"));
    repo.commit_all("the team is renamed");
    repo.write("web/cm.yaml", &config_map("web-3", "a"));
    repo.commit_all("web renames its ConfigMap again");

    let (passes, doc) = passes_of_steps_as_their_own_cutovers(&repo, &start);
    // Two passes in the first revision, one in the second; then two where the Secret the
    // pass read changed, and one again.
    assert_eq!(passes, [3, 2, 1], "{doc:#}");
    assert_eq!(deleted_by_step(&doc)[1], ["Namespace//team-a"], "{doc:#}");
}

/// The same over the files of an ExternalArtifact an ArtifactGenerator makes of this
/// repository (the layout of Flux 2.7's monorepo example, and of ResourceSets that make one
/// per app): the passes over the tree with the artifact's files copied in begin as the
/// revision before's did, so a step makes one pass over each kind of tree (the repository's
/// files, where `apps` is not built, and the artifact's), and every pass again where the
/// Secret `apps` reads changed. Every step's report is the one its own cutover gives.
#[test]
fn a_step_over_an_external_artifact_makes_one_pass_while_the_sources_it_reads_stay() {
    let generator = "apiVersion: source.extensions.fluxcd.io/v1beta1\nkind: ArtifactGenerator\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  sources:\n    - alias: monorepo\n      kind: GitRepository\n      name: flux-system\n  artifacts:\n    - name: apps\n      originRevision: \"@monorepo\"\n      copy:\n        - from: \"@monorepo/apps/**\"\n          to: \"@artifact/\"\n";
    let apps = ks("apps", "./", &[SUBSTITUTES]).replace(
        "kind: GitRepository\n    name: flux-system",
        "kind: ExternalArtifact\n    name: apps",
    );
    let entry = "[artifacts.yaml, apps.yaml, secrets.yaml]";
    let repo = team_repo(entry, &apps, &config_map("web", "a"));
    repo.write("clusters/prod/artifacts.yaml", generator);
    repo.commit_all("init");
    let start = repo.git(&["rev-parse", "HEAD"]).trim().to_string();
    repo.write("apps/web.yaml", &config_map("web-2", "a"));
    repo.commit_all("web renames its ConfigMap");
    repo.write("secrets/secret.yaml", &cluster_secrets("b"));
    repo.commit_all("the team is renamed");
    repo.write("README.md", "one cluster, edited\n");
    repo.commit_all("README");

    let (passes, doc) = passes_of_steps_as_their_own_cutovers(&repo, &start);
    // The first revision: one pass over the repository's files, two over the artifact's
    // (`cluster-secrets` is built after `apps` reads it); the second: one and one. Then two
    // over the artifact's where the Secret changed, and one again.
    assert_eq!(passes, [5, 3, 2], "{doc:#}");
    let gone = deleted_by_step(&doc);
    assert_eq!(gone[0], ["ConfigMap/apps/web"], "{doc:#}");
    assert_eq!(gone[1], ["Namespace//team-a"], "{doc:#}");
}

/// A pass begun with the sources of the revision before stands for the second only when an
/// owner that read one of them could not have recorded other sources without it: here
/// `team` does (a ConfigMap it substitutes) which `early` reads before it is built, so each
/// step makes its passes from the first, and reports what its own cutover does.
#[test]
fn a_step_whose_guessed_sources_feed_a_source_makes_every_pass() {
    let repo = TestRepo::empty();
    let reads = |kind: &str, name: &str| {
        format!("postBuild: {{substituteFrom: [{{kind: {kind}, name: {name}}}]}}")
    };
    repo.write(
        "clusters/prod/kustomization.yaml",
        "resources: [early.yaml, team.yaml, secrets.yaml]\n",
    )
    .write(
        "clusters/prod/early.yaml",
        &ks("early", "./early", &[&reads("ConfigMap", "team-config")]),
    )
    .write(
        "clusters/prod/team.yaml",
        &ks("team", "./team", &[&reads("Secret", "cluster-secrets")]),
    )
    .write("clusters/prod/secrets.yaml", &ks("secrets", "./secrets", &[]))
    .write("secrets/secret.yaml", &cluster_secrets("a"))
    .write(
        "team/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: team-config\n  namespace: flux-system\ndata:\n  TEAM_NAME: ${TEAM}\n",
    )
    .write(
        "early/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: early-${TEAM_NAME}\n  namespace: apps\n",
    )
    .write("web/cm.yaml", &config_map("web", "a"))
    .write("README.md", "one cluster\n");
    repo.commit_all("init");
    let start = repo.git(&["rev-parse", "HEAD"]).trim().to_string();
    repo.write("early/extra.yaml", &config_map("extra", "a"));
    repo.write(
        "early/kustomization.yaml",
        "resources: [cm.yaml, extra.yaml]\n",
    );
    repo.commit_all("early gets another ConfigMap");
    repo.write("early/extra.yaml", &config_map("extra-2", "a"));
    repo.commit_all("early renames it");

    let (passes, doc) = passes_of_steps_as_their_own_cutovers(&repo, &start);
    // Two passes in the first revision; in the second, the one begun with the guess and
    // two more; none is begun so after it.
    assert_eq!(passes, [5, 2], "{doc:#}");
}

#[test]
fn a_build_that_surely_fails_after_applying_a_kustomization_hides_it() {
    // `broken` built in the older revision and applied `child`; its newer build surely fails
    // (a resource is missing), so `child` stays in the cluster as that build applied it and
    // reconciles the newer revision (kustomize-controller `reconcile` keeps the inventory of
    // a failing build): what it prunes there is not judged.
    let repo = failing_build_repo();
    repo.write(
        "broken/kustomization.yaml",
        "resources: [cm.yaml, child.yaml]\n",
    )
    .write("broken/child.yaml", &ks("child", "./child", &[]))
    .write("child/cm.yaml", &config_map("child", "b"));
    repo.commit_all("broken builds, with a child");
    repo.write(
        "broken/kustomization.yaml",
        "resources: [cm.yaml, child.yaml, missing.yaml]\n",
    );
    repo.remove("child/cm.yaml");
    assert_eq!(
        verdict(&repo),
        (
            1,
            "incomplete".to_string(),
            vec!["flux-system/broken".into()]
        )
    );
}
