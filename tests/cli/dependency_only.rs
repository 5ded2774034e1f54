//! A ServiceDefinition that declares only its dependencies: a unit of the graph for every
//! command that orders units, refused only by `render`, which needs an image to render.

use crate::common::{wave_of, TestRepo};

/// examples/homelab with `gitea-actions` (a unit of fluxwave.yaml there) declared instead by a
/// ServiceDefinition that has nothing but its dependency.
fn homelab_with_dependency_only_unit() -> TestRepo {
    let repo = TestRepo::example("homelab");
    repo.remove("fluxwave.yaml");
    repo.write(
        "catalog/gitea-actions.yaml",
        "apiVersion: fluxwave.dev/v1alpha1\nkind: ServiceDefinition\nmetadata:\n  name: gitea-actions\nspec:\n  dependencies:\n    - to: gitea\n",
    );
    repo
}

#[test]
fn orders_its_unit_through_waves_plan_apply_check_cutover_and_blast() {
    let repo = homelab_with_dependency_only_unit();
    repo.commit_all("flat");
    assert_eq!(wave_of(&repo, "gitea-actions"), (1, "service".to_string()));
    assert_eq!(wave_of(&repo, "gitea").0, 0);

    let plan = repo.run(&["plan", "--format", "json"]);
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    let doc: serde_json::Value = serde_json::from_str(&plan.stdout).unwrap();
    let text = doc.to_string();
    assert!(
        text.contains("apps/wave-1/gitea-actions-runner-secret.sops.yaml"),
        "{}",
        plan.stdout
    );

    let blast = repo.run(&["blast", "--topology", "units"]);
    assert_eq!(blast.code, 0, "{}", blast.stderr);
    assert!(blast.stdout.contains("gitea-actions"), "{}", blast.stdout);

    let apply = repo.run(&["apply"]);
    assert_eq!(apply.code, 0, "{}", apply.stderr);
    assert!(repo.exists("apps/wave-1/gitea-actions.yaml"));
    assert!(repo.exists("apps/wave-0/gitea.yaml"));

    let check = repo.run(&["check"]);
    assert_eq!(check.code, 0, "{}\n{}", check.stdout, check.stderr);

    let cutover = repo.run(&["cutover", "--from", "HEAD"]);
    assert!(
        cutover.code == 0 || cutover.code == 1,
        "{}\n{}",
        cutover.stdout,
        cutover.stderr
    );
    assert!(
        cutover.stdout.contains("cutover HEAD"),
        "{}",
        cutover.stdout
    );
}

#[test]
fn render_says_where_the_image_and_port_are_missing() {
    let repo = homelab_with_dependency_only_unit();
    let before = repo.snapshot();
    let run = repo.run(&[
        "render",
        &repo
            .path()
            .join("catalog/gitea-actions.yaml")
            .to_string_lossy(),
    ]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(
        run.stderr.contains("catalog/gitea-actions.yaml:4:9"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("`fluxwave render` needs `image` and `port` in spec"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("repository:"), "{}", run.stderr);
    assert_eq!(repo.snapshot(), before, "render wrote something");

    // With an image but no port it still needs the image only when the image is missing.
    repo.write(
        "catalog/gitea-actions.yaml",
        "apiVersion: fluxwave.dev/v1alpha1\nkind: ServiceDefinition\nmetadata:\n  name: gitea-actions\nspec:\n  dependencies:\n    - to: gitea\n  port: 8080\n",
    );
    let run = repo.run(&[
        "render",
        &repo
            .path()
            .join("catalog/gitea-actions.yaml")
            .to_string_lossy(),
    ]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("`fluxwave render` needs `image` in spec"),
        "{}",
        run.stderr
    );

    // A full definition beside it renders as before.
    let out = tempfile::tempdir().unwrap();
    let run = repo.run(&[
        "render",
        &repo.path().join("catalog/sonarr.yaml").to_string_lossy(),
        "-o",
        &out.path().to_string_lossy(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(out.path().join("sonarr.yaml").exists());
}

/// The errors of a full ServiceDefinition are still reported where they were: a probe with
/// no port to check points at the image tag.
#[test]
fn a_full_definition_keeps_its_errors() {
    let repo = TestRepo::example("homelab");
    repo.write(
        "catalog/sonarr.yaml",
        "apiVersion: fluxwave.dev/v1alpha1\nkind: ServiceDefinition\nmetadata:\n  name: sonarr\nspec:\n  image: {repository: r, tag: \"1.0.0\"}\n  probes:\n    readiness: {http: /}\n",
    );
    let run = repo.run(&["waves"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("catalog/sonarr.yaml:6:31"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("which the container does not have"));
    // Without an image the same problem is pointed at the service's name.
    repo.write(
        "catalog/sonarr.yaml",
        "apiVersion: fluxwave.dev/v1alpha1\nkind: ServiceDefinition\nmetadata:\n  name: sonarr\nspec:\n  probes:\n    readiness: {http: /}\n",
    );
    let run = repo.run(&["waves"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("catalog/sonarr.yaml:4:9"),
        "{}",
        run.stderr
    );
}
