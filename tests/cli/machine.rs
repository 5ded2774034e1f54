//! Output for programs: every JSON document carries the format's `version`; `waves` and `plan`
//! print a wave in one shape; and a run that fails on bad input still prints, on stdout, a
//! JSON error object (`--format json`) or workflow commands (`--format github`), with every
//! problem located, beside the report on stderr. A folder with nothing fluxwave lays out is
//! said to be so, not printed as an empty table.

use serde_json::Value;

use crate::common::TestRepo;

fn doc(run: &crate::common::Run) -> Value {
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout))
}

#[test]
fn every_json_document_has_the_version() {
    let repo = TestRepo::example("homelab");
    repo.commit_all("flat");
    for args in [
        &["waves", "--format", "json"][..],
        &["plan", "--format", "json"],
        &["check", "--format", "json"],
        &["blast", "--format", "json"],
        &["cutover", "--from", "HEAD", "--format", "json"],
        &["build", "--format", "json"],
        &["diff", "--from", "HEAD", "--format", "json"],
    ] {
        let run = repo.run(args);
        assert!(run.code == 0 || run.code == 1, "{args:?}: {}", run.stderr);
        assert_eq!(doc(&run)["version"], 1, "{args:?}");
    }
}

#[test]
fn waves_and_plan_print_a_wave_alike() {
    let repo = TestRepo::example("homelab");
    let waves = doc(&repo.run(&["waves", "--format", "json"]));
    let plan = doc(&repo.run(&["plan", "--format", "json"]));
    let shape = |w: &Value| {
        let mut w = w.clone();
        w.as_object_mut().unwrap().remove("files");
        w
    };
    let from_plan: Vec<Value> = plan["waves"]
        .as_array()
        .unwrap()
        .iter()
        .map(shape)
        .collect();
    assert_eq!(waves["waves"].as_array().unwrap(), &from_plan);
    assert_eq!(waves["waves"][1]["wave"], 1);
    assert_eq!(waves["waves"][1]["name"], "apps-wave-1");
    assert_eq!(
        waves["waves"][1]["dependsOn"],
        serde_json::json!(["apps-wave-0"])
    );
    assert!(waves["waves"][1]["units"]
        .as_array()
        .unwrap()
        .contains(&Value::from("gitea-actions")));
    // Each node's Kustomization is one of them.
    let names: Vec<&Value> = waves["kustomizations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| &k["name"])
        .collect();
    for node in waves["nodes"].as_array().unwrap() {
        if node["placed"] == true {
            assert!(names.contains(&&node["kustomization"]), "{node}");
        }
    }
}

/// Two broken catalog files: both problems, located, in every format.
#[test]
fn bad_input_is_machine_readable_in_a_machine_format() {
    let repo = TestRepo::example("homelab");
    repo.write("catalog/plex.yaml", "kind: [\n");
    let sonarr = repo
        .read("catalog/sonarr.yaml")
        .replacen("spec:\n", "spec:\n  colour: red\n", 1);
    repo.write("catalog/sonarr.yaml", &sonarr);
    for args in [
        &["waves", "--format", "json"][..],
        &["plan", "--format", "json"],
        &["check", "--format", "json"],
        &["blast", "--format", "json"],
    ] {
        let run = repo.run(args);
        assert_eq!(run.code, 2, "{args:?}");
        assert!(run.stderr.contains("catalog/plex.yaml"), "{}", run.stderr);
        let doc = doc(&run);
        assert_eq!(doc["version"], 1);
        assert_eq!(doc["error"]["kind"], "input");
        let problems: Vec<(&str, u64, u64)> = doc["error"]["problems"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p["file"].as_str().unwrap(),
                    p["line"].as_u64().unwrap(),
                    p["column"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            problems,
            [("catalog/plex.yaml", 1, 7), ("catalog/sonarr.yaml", 7, 3)],
            "{args:?}"
        );
    }
    let run = repo.run(&["check", "--format", "github"]);
    assert_eq!(run.code, 2);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", run.stdout);
    assert!(lines[0].starts_with("::error file=catalog/plex.yaml,line=1,col=7,title=bad-input::"));
    assert!(lines[1].starts_with(
        "::error file=catalog/sonarr.yaml,line=7,col=3,title=bad-input::unknown field `colour`"
    ));
    // Text formats keep stdout for results: the report is on stderr only.
    let run = repo.run(&["waves"]);
    assert_eq!((run.code, run.stdout.as_str()), (2, ""));
}

#[test]
fn a_folder_with_nothing_to_lay_out_says_so() {
    let repo = TestRepo::empty();
    repo.write("notes.yaml", "hello: world\n");
    for command in ["waves", "plan", "apply"] {
        let run = repo.run(&[command]);
        assert_eq!(run.code, 2, "{command}: {}", run.stdout);
        assert!(
            run.stderr
                .contains("no fluxwave.yaml and no catalog/ folder, so there is nothing for fluxwave to lay out here"),
            "{command}: {}",
            run.stderr
        );
        assert_eq!(run.stdout, "");
    }
    assert_eq!(repo.snapshot().len(), 1, "nothing was written");
    let out = crate::common::fluxwave()
        .args(["--repo", "/nonexistent", "waves", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["error"]["kind"], "usage");
}

/// GitHub places an annotation only on a file of the pull request's revision, at a line: a
/// finding on a folder (or on a file the change deleted) is written without a file, its path
/// leading the message, and one with a line on a file that exists is placed there.
#[test]
fn github_annotations_go_only_on_files_that_exist_with_a_line() {
    let repo = TestRepo::empty();
    repo.write("README.yaml", "hello: world\n");
    let run = repo.run(&["check", "--format", "github"]);
    assert_eq!(run.code, 1);
    let first = run.stdout.lines().next().unwrap();
    assert!(
        first.starts_with("::error title=no-environment::.: found no Flux environment"),
        "{first}"
    );

    let repo = TestRepo::example("homelab");
    let sonarr = repo.read("catalog/sonarr.yaml").replacen(
        "dependencies:\n",
        "dependencies:\n    - nosuchservice\n",
        1,
    );
    repo.write("catalog/sonarr.yaml", &sonarr);
    let run = repo.run(&["check", "--format", "github"]);
    assert!(
        run.stdout
            .lines()
            .any(|l| l.starts_with("::error file=catalog/sonarr.yaml,line=")),
        "{}",
        run.stdout
    );
}

/// A revision that does not exist: JSON says so as an error object, and diff's job-summary
/// markdown says it in its own form.
#[test]
fn a_revision_that_does_not_exist_is_said_in_the_format_asked() {
    let repo = TestRepo::example("homelab");
    repo.commit_all("flat");
    for command in ["diff", "cutover"] {
        let run = repo.run(&[command, "--from", "nosuchrev", "--format", "json"]);
        assert_eq!(run.code, 2);
        let doc = doc(&run);
        assert_eq!(doc["error"]["kind"], "usage", "{command}");
        assert!(doc["error"]["message"]
            .as_str()
            .unwrap()
            .contains("nosuchrev"));
    }
    let run = repo.run(&["diff", "--from", "nosuchrev", "--format", "github"]);
    assert_eq!(run.code, 2);
    // The message quotes the revision: it stands in a code block, whole.
    assert!(
        run.stdout.starts_with(
            "**fluxwave could not compare the revisions:**\n\n```text\nrevision `nosuchrev` does not exist"
        ) && run.stdout.ends_with("(try a branch, a tag or a commit id)\n```\n"),
        "{}",
        run.stdout
    );
}
