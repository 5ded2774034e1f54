//! What `apply` decides to change in the hand-kept wiring, on shapes that are easy to get
//! wrong: a Kustomization of another source at `./apps`, patches of the retired
//! Kustomization beyond decryption, extra kustomization files in the app tier, stale wave
//! folders holding the user's files, comments on removed entries. Every result is built with
//! the real kustomize, and every second apply changes nothing.

use crate::common::{assert_second_apply_changes_nothing, kustomize, TestRepo};

/// a <- b, both with manifests, flat, with Flux wiring (not applied).
fn flat() -> TestRepo {
    let repo = TestRepo::empty();
    repo.service("a", &[])
        .service("b", &["a"])
        .manifest("apps/a.yaml")
        .manifest("apps/b.yaml")
        .flat_kustomization()
        .flux_wiring();
    repo
}

/// A second apply changes nothing, and `check` finds no error.
fn assert_converged(repo: &TestRepo) {
    assert_second_apply_changes_nothing(repo);
    let check = repo.run(&["check"]);
    assert_eq!(check.code, 0, "{}{}", check.stdout, check.stderr);
}

/// The names of the Flux Kustomizations an environment builds (with the real kustomize).
fn flux_names(repo: &TestRepo, env: &str) -> Vec<String> {
    let build = kustomize(&repo.path().join(env));
    let mut out: Vec<String> = build
        .split("\n---\n")
        .map(|d| serde_saphyr::from_str::<serde_json::Value>(d).unwrap())
        .filter(|v| {
            v["apiVersion"]
                .as_str()
                .unwrap()
                .starts_with("kustomize.toolkit")
        })
        .map(|v| v["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    out.sort();
    out
}

fn flux_object(repo: &TestRepo, env: &str, name: &str) -> serde_json::Value {
    let build = kustomize(&repo.path().join(env));
    build
        .split("\n---\n")
        .map(|d| serde_saphyr::from_str::<serde_json::Value>(d).unwrap())
        .find(|v| v["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("{name} not in {env}"))
}

const BASE_WITH_OTHER: &str = "# shared Flux objects\napiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - platform-config.yaml\n  # the app tier\n  - apps.yaml\n  - tenant-source.yaml\n  - tenant-apps.yaml\n";

/// A Kustomization at `./apps` is the retired one only when it reads the repository's own
/// source (the environment root's, `flux-system` GitRepository here): one of another
/// source, or of this source's name in another namespace, or of an OCIRepository, is another
/// repository's app tier and stays, file and entry.
#[test]
fn a_kustomization_at_apps_of_another_source_is_left_alone() {
    let git = "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: tenant\n  namespace: flux-system\nspec:\n  interval: 10m\n  url: https://example.org/tenant.git\n  ref:\n    branch: main\n";
    let git_ns = "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n  namespace: tenant\nspec:\n  interval: 10m\n  url: https://example.org/tenant.git\n  ref:\n    branch: main\n";
    let oci = "apiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m\n  url: oci://example.org/tenant\n  ref:\n    tag: latest\n";
    let ks = |ns: &str, path: &str, source: &str| {
        format!("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: tenant-apps\n  namespace: {ns}\nspec:\n  interval: 10m\n  path: {path}\n  prune: true\n  sourceRef:\n{source}")
    };
    let cases = [
        (
            "another GitRepository",
            git,
            ks(
                "flux-system",
                "./apps",
                "    kind: GitRepository\n    name: tenant\n",
            ),
        ),
        (
            "`path: apps`",
            git,
            ks(
                "flux-system",
                "apps",
                "    kind: GitRepository\n    name: tenant\n",
            ),
        ),
        (
            "`path: ./apps/`",
            git,
            ks(
                "flux-system",
                "./apps/",
                "    kind: GitRepository\n    name: tenant\n",
            ),
        ),
        (
            "the same name in another namespace",
            git_ns,
            ks(
                "tenant",
                "./apps",
                "    kind: GitRepository\n    name: flux-system\n",
            ),
        ),
        (
            "an OCIRepository",
            oci,
            ks(
                "flux-system",
                "./apps",
                "    kind: OCIRepository\n    name: flux-system\n",
            ),
        ),
    ];
    for (what, source, tenant) in cases {
        let repo = flat();
        repo.write("clusters/base/kustomization.yaml", BASE_WITH_OTHER)
            .write("clusters/base/tenant-source.yaml", source)
            .write("clusters/base/tenant-apps.yaml", &tenant);
        let run = repo.run(&["apply"]);
        assert_eq!(run.code, 0, "{what}: {}", run.stderr);
        assert_eq!(
            repo.read("clusters/base/tenant-apps.yaml"),
            tenant,
            "{what}"
        );
        assert!(!repo.exists("clusters/base/apps.yaml"), "{what}");
        let base = repo.read("clusters/base/kustomization.yaml");
        assert!(
            base.contains("  - tenant-source.yaml\n  - tenant-apps.yaml\n"),
            "{what}: {base}"
        );
        assert!(!base.contains("- apps.yaml"), "{what}: {base}");
        assert_eq!(
            flux_names(&repo, "clusters/dev"),
            [
                "apps-wave-0",
                "apps-wave-1",
                "platform-config",
                "tenant-apps"
            ],
            "{what}"
        );
        assert_converged(&repo);
    }
}

/// The sibling shapes of the repository's own source are still retired: a path written
/// `apps` or `./apps/`, a sourceRef that names the root's namespace from another namespace,
/// and a root (bootstrap's gotk-sync) that reads a source of another name.
#[test]
fn the_retired_kustomization_is_found_in_every_spelling_of_the_own_source() {
    let apps = |ns: &str, path: &str, source: &str| {
        format!("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n  namespace: {ns}\nspec:\n  interval: 10m\n  path: {path}\n  prune: true\n  sourceRef:\n{source}")
    };
    let git = "    kind: GitRepository\n    name: flux-system\n";
    let cases = [
        ("`path: apps`", apps("flux-system", "apps", git), None),
        ("`path: ./apps/`", apps("flux-system", "./apps/", git), None),
        (
            "a sourceRef naming the root's namespace",
            apps(
                "apps",
                "./apps",
                "    kind: GitRepository\n    name: flux-system\n    namespace: flux-system\n",
            ),
            None,
        ),
        (
            "a root that reads `fleet`",
            apps("flux-system", "./apps", "    kind: GitRepository\n    name: fleet\n"),
            Some("apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: fleet\n  namespace: flux-system\nspec:\n  interval: 1m\n  url: https://example.org/fleet.git\n  ref:\n    branch: main\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./clusters/dev\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: fleet\n"),
        ),
    ];
    for (what, retired, sync) in cases {
        let repo = flat();
        repo.write("clusters/base/apps.yaml", &retired);
        if let Some(sync) = sync {
            repo.write("clusters/dev/flux-system/gotk-sync.yaml", sync)
                .write(
                    "clusters/dev/flux-system/kustomization.yaml",
                    "resources:\n  - gotk-sync.yaml\n",
                );
            let env = repo
                .read("clusters/dev/kustomization.yaml")
                .replace("  - ../base\n", "  - flux-system\n  - ../base\n");
            repo.write("clusters/dev/kustomization.yaml", &env);
            let platform = repo
                .read("clusters/base/platform-config.yaml")
                .replace("    name: flux-system\n", "    name: fleet\n");
            repo.write("clusters/base/platform-config.yaml", &platform);
            repo.write(
                "fluxwave.yaml",
                "waves:\n  spec:\n    sourceRef: {kind: GitRepository, name: fleet}\n",
            );
        }
        let run = repo.run(&["apply"]);
        assert_eq!(run.code, 0, "{what}: {}", run.stderr);
        assert!(!repo.exists("clusters/base/apps.yaml"), "{what}");
        let base = repo.read("clusters/base/kustomization.yaml");
        assert!(!base.contains("apps.yaml\n"), "{what}: {base}");
        assert!(
            !flux_names(&repo, "clusters/dev").contains(&"apps".to_string()),
            "{what}"
        );
        assert_converged(&repo);
    }
}

/// Every patch an environment gives the retired Kustomization goes with it, in each form a
/// kustomization can write one (a patch left behind either breaks the build, when it names
/// its target by its own header, or is dead); what it set that the waves will not carry is
/// reported, never dropped silently.
#[test]
fn every_patch_of_the_retired_kustomization_goes_and_what_it_set_is_reported() {
    let smp = "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  timeout: 15m\n";
    let inline = |doc: &str| {
        let body: String = doc.lines().map(|l| format!("      {l}\n")).collect();
        format!("  - patch: |-\n{body}")
    };
    let both = smp.replace(
        "  timeout: 15m\n",
        "  timeout: 15m\n  decryption:\n    provider: sops\n    secretRef:\n      name: sops-age\n",
    );
    let cases: Vec<(&str, String, Option<&str>)> = vec![
        (
            "a targeted JSON 6902 patch",
            "  - target:\n      kind: Kustomization\n      name: apps\n    patch: |-\n      - op: add\n        path: /spec/timeout\n        value: 15m\n".into(),
            None,
        ),
        ("an inline strategic-merge patch", inline(smp), None),
        (
            "a strategic-merge patch that also decrypts",
            inline(&both),
            None,
        ),
        (
            "a patch file",
            "  - path: timeout-apps.yaml\n".into(),
            Some(smp),
        ),
        (
            "patchesStrategicMerge",
            "patchesStrategicMerge:\n  - timeout-apps.yaml\n".into(),
            Some(smp),
        ),
        (
            "patchesJson6902",
            "patchesJson6902:\n  - target:\n      group: kustomize.toolkit.fluxcd.io\n      version: v1\n      kind: Kustomization\n      name: apps\n    patch: |-\n      - op: add\n        path: /spec/timeout\n        value: 15m\n".into(),
            None,
        ),
    ];
    for (what, entry, file) in cases {
        let repo = flat();
        if let Some(file) = file.filter(|f| !f.is_empty()) {
            repo.write("clusters/dev/timeout-apps.yaml", file);
        }
        let env = format!("{}{entry}", repo.read("clusters/dev/kustomization.yaml"));
        repo.write("clusters/dev/kustomization.yaml", &env);
        kustomize(&repo.path().join("clusters/dev"));
        let run = repo.run(&["apply"]);
        assert_eq!(run.code, 0, "{what}: {}", run.stderr);
        assert!(
            run.stderr.contains("warning[retired-setting-dropped]: clusters/dev/kustomization.yaml: environment `dev` patches spec.timeout: \"15m\" into `apps`; the waves get `\"5m\"`"),
            "{what}: {}",
            run.stderr
        );
        let env = repo.read("clusters/dev/kustomization.yaml");
        assert!(
            !env.contains("name: apps\n") && !env.contains("timeout-apps.yaml"),
            "{what}: {env}"
        );
        assert_eq!(
            flux_names(&repo, "clusters/dev"),
            ["apps-wave-0", "apps-wave-1", "platform-config"],
            "{what}"
        );
        for wave in ["apps-wave-0", "apps-wave-1"] {
            let w = flux_object(&repo, "clusters/dev", wave);
            assert!(w["spec"]["decryption"].is_object(), "{what}: {wave}");
        }
        assert_converged(&repo);
    }
}

/// When the environment already gives the waves the setting, nothing is reported.
#[test]
fn a_setting_the_waves_get_in_the_environment_is_not_reported() {
    let repo = flat();
    let env = format!("{}  - target:\n      kind: Kustomization\n      name: apps.*\n    patch: |-\n      - op: add\n        path: /spec/timeout\n        value: 15m\n", repo.read("clusters/dev/kustomization.yaml"));
    repo.write("clusters/dev/kustomization.yaml", &env);
    let run = repo.run(&["apply"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        !run.stderr.contains("retired-setting-dropped"),
        "{}",
        run.stderr
    );
    let w = flux_object(&repo, "clusters/dev", "apps-wave-1");
    assert_eq!(w["spec"]["timeout"], "15m");
    assert_converged(&repo);
}

/// A patch of the retired Kustomization that apply cannot edit (here in a component) would
/// leave the environment unbuildable: apply says so, exit 2, and writes nothing.
#[test]
fn an_environment_apply_would_leave_unbuildable_stops_it() {
    let repo = flat();
    repo.write("clusters/dev/tuning/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n  - patch: |-\n      apiVersion: kustomize.toolkit.fluxcd.io/v1\n      kind: Kustomization\n      metadata:\n        name: apps\n        namespace: flux-system\n      spec:\n        timeout: 15m\n");
    let env = format!(
        "{}components:\n  - tuning\n",
        repo.read("clusters/dev/kustomization.yaml")
    );
    repo.write("clusters/dev/kustomization.yaml", &env);
    kustomize(&repo.path().join("clusters/dev"));
    let before = repo.snapshot();
    for args in [&["apply"][..], &["apply", "--dry-run"]] {
        let run = repo.run(args);
        assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
        assert!(
            run.stderr
                .contains("environment `dev` would no longer build once apply removes `apps`")
                && run.stderr.contains("Kustomization/apps"),
            "{}",
            run.stderr
        );
        assert!(!run.stdout.contains("nothing to change"), "{}", run.stdout);
        assert_eq!(repo.snapshot(), before);
    }
}

/// a <- b, applied: two waves.
fn waved() -> TestRepo {
    let repo = flat();
    let run = repo.run(&["apply"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    repo
}

/// kustomize accepts three names for a folder's kustomization and refuses a folder with more
/// than one. A wave folder is fluxwave's: another kustomization file in it that only lists
/// the app tier's files (fluxwave's own listing, or one like it) is replaced by the
/// generated kustomization.yaml, whether the folder has one yet or not.
#[test]
fn another_kustomization_file_in_a_wave_folder_that_only_lists_files_is_replaced() {
    for (name, before_apply) in [
        ("kustomization.yml", true),
        ("Kustomization", true),
        ("kustomization.yml", false),
        ("Kustomization", false),
    ] {
        let what = format!("{name}, before the first apply: {before_apply}");
        let repo = if before_apply { flat() } else { waved() };
        let listing = "# my listing\napiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - a.yaml\n";
        repo.write(&format!("apps/wave-0/{name}"), listing);
        let run = repo.run(&["apply"]);
        assert_eq!(run.code, 0, "{what}: {}", run.stderr);
        assert!(!repo.exists(&format!("apps/wave-0/{name}")), "{what}");
        assert!(
            repo.read("apps/wave-0/kustomization.yaml")
                .contains("  - a.yaml\n"),
            "{what}"
        );
        kustomize(&repo.path().join("apps/wave-0"));
        assert_converged(&repo);
    }
}

/// One that says more than a listing (a patch, a file that is not the app tier's) is the
/// user's: apply refuses it, exit 2, naming the file, and writes nothing.
#[test]
fn a_hand_written_kustomization_file_in_a_wave_folder_stops_apply() {
    for (name, text) in [
        (
            "kustomization.yml",
            "resources:\n  - a.yaml\npatches:\n  - path: tune.yaml\n",
        ),
        (
            "Kustomization",
            "resources:\n  - a.yaml\n  - ../../platform/extra.yaml\n",
        ),
    ] {
        let repo = waved();
        repo.write(&format!("apps/wave-0/{name}"), text);
        let before = repo.snapshot();
        let run = repo.run(&["apply"]);
        assert_eq!(run.code, 2, "{name}: {}{}", run.stdout, run.stderr);
        assert!(
            run.stderr.contains(&format!("apps/wave-0/{name}"))
                && run.stderr.contains("more than one kustomization file"),
            "{name}: {}",
            run.stderr
        );
        assert_eq!(repo.snapshot(), before, "{name}");
    }
}

/// The flat app tier with two kustomization files is refused (kustomize refuses the folder
/// too, so Flux builds nothing of it today): which one the user means is theirs to say.
#[test]
fn a_flat_app_tier_with_two_kustomization_files_stops_apply() {
    let repo = flat();
    let k = repo.read("apps/kustomization.yaml");
    repo.write("apps/Kustomization", &k);
    let before = repo.snapshot();
    for args in [&["apply"][..], &["plan"], &["check"]] {
        let run = repo.run(args);
        assert_eq!(run.code, 2, "{args:?}: {}{}", run.stdout, run.stderr);
        assert!(
            run.stderr.contains("apps/Kustomization")
                && run.stderr.contains("apps/kustomization.yaml")
                && run.stderr.contains("more than one kustomization file"),
            "{args:?}: {}",
            run.stderr
        );
        assert_eq!(repo.snapshot(), before, "{args:?}");
    }
    // Keeping one, apply converges and loses nothing but the flat kustomization.
    repo.remove("apps/Kustomization");
    assert_eq!(repo.run(&["apply"]).code, 0);
    assert!(repo.exists("apps/wave-0/a.yaml") && repo.exists("apps/wave-1/b.yaml"));
    assert_converged(&repo);
}

/// A wave that empties leaves its folder when the folder holds the user's files (a README, a
/// `.gitkeep`): fluxwave removes only its own kustomization, keeps the files, says so once
/// per run as a warning, and the next run changes nothing.
#[test]
fn a_stale_wave_folder_with_the_users_files_is_kept_and_converges() {
    let repo = waved();
    repo.write("apps/wave-1/README.md", "# wave 1\nNotes of mine.\n")
        .write("apps/wave-1/.gitkeep", "");
    // b no longer depends on a: wave 1 empties.
    repo.service("b", &[]);
    let run = repo.run(&["apply"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("warning[foreign-entry]: apps/wave-1: is the folder of a wave that no longer exists, kept for what fluxwave did not write in it: .gitkeep, README.md"),
        "{}",
        run.stderr
    );
    assert!(!run.stdout.contains("rmdir"), "{}", run.stdout);
    assert!(!repo.exists("apps/wave-1/kustomization.yaml"));
    assert_eq!(
        repo.read("apps/wave-1/README.md"),
        "# wave 1\nNotes of mine.\n"
    );
    assert!(repo.exists("apps/wave-1/.gitkeep") && repo.exists("apps/wave-0/b.yaml"));
    assert_eq!(
        flux_names(&repo, "clusters/dev"),
        ["apps-wave-0", "platform-config"]
    );
    assert_converged(&repo);
    // A wave folder with nothing of the user's still goes.
    let repo = waved();
    repo.service("b", &[]);
    let run = repo.run(&["apply"]);
    assert!(run.stdout.contains("rmdir   apps/wave-1"), "{}", run.stdout);
    assert!(!repo.exists("apps/wave-1"));
    assert_converged(&repo);
}

/// The comments on the entries apply removes (the retired entry of the base, the retired
/// Kustomization's patch in an environment) are kept where the entry was: apply edits the
/// hand-kept kustomizations without losing a comment.
#[test]
fn the_comments_of_removed_entries_are_kept() {
    let repo = flat();
    let base = repo.read("clusters/base/kustomization.yaml").replace(
        "  - apps.yaml\n",
        "  - apps.yaml # one Kustomization for now\n",
    );
    repo.write("clusters/base/kustomization.yaml", &base);
    let env = repo.read("clusters/dev/kustomization.yaml").replace(
        "  - target:\n      kind: Kustomization\n      name: apps\n",
        "  - target: # the app tier's\n      kind: Kustomization\n      # until the waves\n      name: apps # see base\n",
    );
    repo.write("clusters/dev/kustomization.yaml", &env);
    kustomize(&repo.path().join("clusters/dev"));
    let run = repo.run(&["apply"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let base = repo.read("clusters/base/kustomization.yaml");
    assert!(
        base.contains("  # the app tier\n  # one Kustomization for now\n  - apps-wave-0.yaml\n"),
        "{base}"
    );
    let env = repo.read("clusters/dev/kustomization.yaml");
    assert!(
        env.contains("  # decryption for the app tier\n  # the app tier's\n  # until the waves\n  # see base\n  - patch: |-\n"),
        "{env}"
    );
    assert_eq!(
        flux_names(&repo, "clusters/dev"),
        ["apps-wave-0", "apps-wave-1", "platform-config"]
    );
    assert_converged(&repo);
}

/// The base's own patches of the retired Kustomization go with it too (a sibling of the
/// environments' patches), and what they set is reported.
#[test]
fn the_bases_patches_of_the_retired_kustomization_go_with_it() {
    let targeted = "patches:\n  # longer for the big ones\n  - target:\n      kind: Kustomization\n      name: apps\n    patch: |-\n      - op: add\n        path: /spec/timeout\n        value: 15m\n";
    let inline = "patches:\n  - patch: |-\n      apiVersion: kustomize.toolkit.fluxcd.io/v1\n      kind: Kustomization\n      metadata:\n        name: apps\n        namespace: flux-system\n      spec:\n        timeout: 15m\n";
    for (what, patches) in [("targeted", targeted), ("inline", inline)] {
        let repo = flat();
        let base = format!("{}{patches}", repo.read("clusters/base/kustomization.yaml"));
        repo.write("clusters/base/kustomization.yaml", &base);
        kustomize(&repo.path().join("clusters/dev"));
        let run = repo.run(&["apply"]);
        assert_eq!(run.code, 0, "{what}: {}", run.stderr);
        assert!(
            run.stderr.contains("warning[retired-setting-dropped]: clusters/base/kustomization.yaml: the base patches spec.timeout: \"15m\" into `apps`; the waves get `\"5m\"` from waves.spec"),
            "{what}: {}",
            run.stderr
        );
        let base = repo.read("clusters/base/kustomization.yaml");
        assert!(!base.contains("name: apps\n"), "{what}: {base}");
        assert_eq!(
            flux_names(&repo, "clusters/dev"),
            ["apps-wave-0", "apps-wave-1", "platform-config"],
            "{what}"
        );
        assert_converged(&repo);
    }
}

/// A stale wave folder holding a folder or a link of the user's is kept the same way
/// (removing it failed on every run).
#[test]
fn a_stale_wave_folder_with_a_folder_of_the_users_is_kept_and_converges() {
    let repo = waved();
    repo.write("apps/wave-1/notes/todo.md", "- later\n");
    std::os::unix::fs::symlink(
        "../../platform-config",
        repo.path().join("apps/wave-1/link"),
    )
    .unwrap();
    repo.service("b", &[]);
    let run = repo.run(&["apply"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("apps/wave-1: is the folder of a wave that no longer exists, kept for what fluxwave did not write in it: link, notes"),
        "{}",
        run.stderr
    );
    assert_eq!(repo.read("apps/wave-1/notes/todo.md"), "- later\n");
    assert!(std::fs::symlink_metadata(repo.path().join("apps/wave-1/link")).is_ok());
    assert_second_apply_changes_nothing(&repo);
    // `check` warns (foreign-entry), it does not fail.
    assert_eq!(repo.run(&["check"]).code, 0);
}

/// An environment's or the base's kustomization may be under any name kustomize reads
/// (`kustomization.yml`, `Kustomization`): apply edits that file; two in one folder are
/// refused, as kustomize refuses them.
#[test]
fn the_wiring_kustomizations_may_have_any_name_kustomize_reads() {
    for name in ["kustomization.yml", "Kustomization"] {
        let repo = flat();
        for dir in ["clusters/dev", "clusters/base"] {
            let text = repo.read(&format!("{dir}/kustomization.yaml"));
            repo.remove(&format!("{dir}/kustomization.yaml"));
            repo.write(&format!("{dir}/{name}"), &text);
        }
        let run = repo.run(&["apply"]);
        assert_eq!(run.code, 0, "{name}: {}", run.stderr);
        assert!(!repo.exists("clusters/dev/kustomization.yaml"), "{name}");
        assert!(
            repo.read(&format!("clusters/base/{name}"))
                .contains("  - apps-wave-1.yaml\n"),
            "{name}"
        );
        assert_eq!(
            flux_names(&repo, "clusters/dev"),
            ["apps-wave-0", "apps-wave-1", "platform-config"],
            "{name}"
        );
        assert_converged(&repo);
        repo.write("clusters/dev/kustomization.yaml", "resources: []\n");
        let before = repo.snapshot();
        let run = repo.run(&["apply"]);
        assert_eq!(run.code, 2, "{name}: {}", run.stdout);
        assert!(
            run.stderr
                .contains("clusters/dev holds more than one kustomization file"),
            "{name}: {}",
            run.stderr
        );
        assert_eq!(repo.snapshot(), before);
    }
}

/// A patch that selects the retired Kustomization by a regular expression or a selector is
/// not fluxwave's to remove (it may select others), but what it gave the retired one and
/// the waves will not get is reported all the same.
#[test]
fn a_setting_a_regex_patch_gave_the_retired_kustomization_is_reported() {
    let repo = flat();
    let env = format!("{}  - target:\n      kind: Kustomization\n      name: ^apps$\n    patch: |-\n      - op: add\n        path: /spec/timeout\n        value: 15m\n", repo.read("clusters/dev/kustomization.yaml"));
    repo.write("clusters/dev/kustomization.yaml", &env);
    let run = repo.run(&["apply"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("warning[retired-setting-dropped]: clusters/dev/kustomization.yaml: environment `dev` patches spec.timeout: \"15m\" into `apps`"),
        "{}",
        run.stderr
    );
    assert!(repo
        .read("clusters/dev/kustomization.yaml")
        .contains("name: ^apps$\n"));
    assert_converged(&repo);
}

/// A copy of the retired Kustomization that the base does not list and that is no manifest
/// (`apps.yaml.bak`) is the user's: Flux never reads it, and apply leaves it.
#[test]
fn an_unlisted_backup_of_the_retired_kustomization_is_kept() {
    let repo = flat();
    let retired = repo.read("clusters/base/apps.yaml");
    repo.write("clusters/base/apps.yaml.bak", &retired);
    let run = repo.run(&["apply"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!repo.exists("clusters/base/apps.yaml"));
    assert_eq!(repo.read("clusters/base/apps.yaml.bak"), retired);
    assert_converged(&repo);
}

/// A repository without SOPS says `decryption: null`: apply adds no decryption patch (one
/// naming a Secret the cluster lacks makes kustomize-controller fail every reconciliation:
/// it reads `spec.decryption.secretRef` before it builds), and removes the retired
/// Kustomization's as it always does; check agrees, and a second apply changes nothing.
#[test]
fn decryption_null_adds_no_patch() {
    let repo = TestRepo::empty();
    repo.service("a", &[]).manifest("apps/a.yaml");
    repo.service("b", &["a"]).manifest("apps/b.yaml");
    repo.flat_kustomization().flux_wiring();
    repo.write("fluxwave.yaml", "waves:\n  decryption: null\n");
    let run = repo.run(&["apply"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let dev = repo.read("clusters/dev/kustomization.yaml");
    assert!(
        !dev.contains("provider: sops") && !dev.contains("/spec/decryption"),
        "{dev}"
    );
    assert!(dev.starts_with("# dev\n"), "{dev}");
    let built = crate::common::kustomize(&repo.path().join("clusters/dev"));
    assert!(
        built.contains("name: apps-wave-1") && !built.contains("decryption"),
        "{built}"
    );
    assert_eq!(repo.run(&["check"]).code, 0);
    assert_eq!(repo.run(&["apply"]).stdout, "nothing to change\n");
    // Without the setting, each wave gets the default patch.
    repo.write("fluxwave.yaml", "waves: {}\n");
    let dry = repo.run(&["apply", "--dry-run"]);
    assert!(
        dry.stdout
            .contains("no SOPS decryption for `apps-wave-0`, `apps-wave-1`"),
        "{}",
        dry.stdout
    );
}
