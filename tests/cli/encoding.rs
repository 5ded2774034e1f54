//! Reading revisions and files: a file is judged the same whether it comes from a git
//! revision or from the working tree (bytes that are no text, a byte order mark, UTF-16),
//! and git is run for the repository fluxwave was given, or refused in words that say why.

use std::process::Command;

use crate::common::{utf16, Run, TestRepo};

/// `fluxwave --repo REPO ARGS` with `env` set (and `unset` removed) on top of the test's
/// environment; temporary paths of `repo` in the output become `[REPO]`.
fn run_with(repo: &TestRepo, args: &[&str], env: &[(&str, &str)], unset: &[&str]) -> Run {
    let mut cmd = repo.command(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    for k in unset {
        cmd.env_remove(k);
    }
    repo.run_command(cmd)
}

/// examples/homelab in a fresh git repository, committed once.
fn homelab() -> TestRepo {
    let repo = TestRepo::example("homelab");
    repo.commit_all("homelab");
    repo
}

/// Writes `bytes` at `rel` of the repository.
fn write_bytes(repo: &TestRepo, rel: &str, bytes: &[u8]) {
    let p = repo.path().join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, bytes).unwrap();
}

/// The file at `rel` with a Latin-1 comment (`# café`, the `é` one byte, 0xE9) put first.
fn latin1_comment(repo: &TestRepo, rel: &str) {
    let mut bytes = b"# caf\xe9\n".to_vec();
    bytes.extend(std::fs::read(repo.path().join(rel)).unwrap());
    write_bytes(repo, rel, &bytes);
}

#[track_caller]
fn refused(run: &Run, says: &[&str]) {
    assert_eq!(
        run.code, 2,
        "exit code\nstdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    for s in says {
        assert!(
            run.stderr.contains(s),
            "stderr should contain {s:?}:\n{}",
            run.stderr
        );
    }
}

// -- git: the repository given, or a refusal that says why ----------------------------------

/// A folder on PATH that holds no `git`.
fn path_without_git() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    assert!(!dir.path().join("git").exists());
    dir
}

#[test]
fn a_missing_git_is_called_missing_not_a_missing_repository() {
    let repo = homelab();
    let empty = path_without_git();
    let path = empty.path().to_str().unwrap();
    for args in [&["cutover", "--from", "HEAD"][..], &["check"]] {
        let run = run_with(&repo, args, &[("PATH", path)], &[]);
        refused(&run, &["git is not installed"]);
        assert!(
            !run.stderr.contains("not inside a git repository"),
            "{args:?}: {}",
            run.stderr
        );
    }
    // A folder that is no repository is still checked without git.
    let plain = TestRepo::example("homelab");
    let run = run_with(&plain, &["check"], &[("PATH", path)], &[]);
    assert!(run.code == 0 || run.code == 1, "{}", run.stderr);
}

/// git refuses a repository owned by another user ("dubious ownership"); its advice is
/// passed on. `GIT_TEST_ASSUME_DIFFERENT_OWNER` is git's own knob for this case (its test
/// `t0033-safe-directory.sh` uses it), honoured by released git.
#[test]
fn a_repository_git_calls_dubious_is_refused_with_gits_advice() {
    let repo = homelab();
    for args in [&["cutover", "--from", "HEAD"][..], &["check"]] {
        let run = run_with(
            &repo,
            args,
            &[
                ("GIT_TEST_ASSUME_DIFFERENT_OWNER", "1"),
                ("GIT_CONFIG_GLOBAL", "/dev/null"),
                ("GIT_CONFIG_NOSYSTEM", "1"),
            ],
            &[],
        );
        refused(
            &run,
            &[
                "dubious ownership",
                "owned by another user",
                "git config --global --add safe.directory [REPO]",
            ],
        );
        assert!(!run.stderr.contains("not inside a git repository"));
    }
}

#[test]
fn no_repository_and_a_revision_that_does_not_exist_are_told_apart() {
    let plain = TestRepo::example("homelab");
    let run = plain.run(&["cutover", "--from", "HEAD"]);
    refused(&run, &["[REPO] is not inside a git repository"]);
    let repo = homelab();
    let run = repo.run(&["cutover", "--from", "no-such-branch"]);
    refused(&run, &["revision `no-such-branch` does not exist"]);
}

/// A `GIT_DIR` (and `GIT_WORK_TREE`, `GIT_INDEX_FILE`) inherited from the caller (a git hook,
/// an editor's terminal) must not make fluxwave read another repository than `--repo`.
#[test]
fn an_inherited_git_dir_does_not_redirect_fluxwave_to_another_repository() {
    let repo = homelab();
    // Another repository, whose HEAD holds one more object than `repo`.
    let other = TestRepo::example("homelab");
    other.write(
        "apps/extra.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: default\n",
    );
    let listed = other.read("apps/kustomization.yaml");
    other.write(
        "apps/kustomization.yaml",
        &listed.replace("resources:\n", "resources:\n  - extra.yaml\n"),
    );
    other.commit_all("another repository");
    let git_dir = other.path().join(".git");
    // git takes the folder it runs in for the work tree of `GIT_DIR`: the other
    // repository's HEAD, compared with this working tree, silently.
    let redirect = [("GIT_DIR", git_dir.to_str().unwrap())];
    let elsewhere = [
        ("GIT_DIR", git_dir.to_str().unwrap()),
        ("GIT_WORK_TREE", other.path().to_str().unwrap()),
    ];
    let broken = [
        ("GIT_DIR", git_dir.to_str().unwrap()),
        ("GIT_INDEX_FILE", "/nonexistent/index"),
        ("GIT_OBJECT_DIRECTORY", "/nonexistent/objects"),
        ("GIT_NAMESPACE", "elsewhere"),
    ];
    let clean = repo.run(&["check", "--format", "json"]);
    for env in [&redirect[..], &elsewhere, &broken] {
        let run = run_with(&repo, &["cutover", "--from", "HEAD"], env, &[]);
        assert_eq!(run.code, 0, "{env:?}: {}\n{}", run.stdout, run.stderr);
        assert!(run.stdout.contains("safe:"), "{}", run.stdout);
        assert!(!run.stdout.contains("extra"), "{}", run.stdout);
        let run = run_with(&repo, &["check", "--format", "json"], env, &[]);
        assert_eq!(run.code, clean.code, "{env:?}: {}", run.stderr);
        assert_eq!(run.stdout, clean.stdout, "{env:?}");
    }
}

// -- the same file, read from a revision or from the working tree ----------------------------

/// The first 12 characters of the commit id of `rev`: how a revision's files are named.
fn short(repo: &TestRepo, rev: &str) -> String {
    repo.git(&["rev-parse", rev]).trim()[..12].to_string()
}

/// A `fluxwave.yaml` that cannot be read (a Latin-1 comment) or does not parse, in a
/// revision, is the error the working tree gives for it, naming the revision, the file and
/// the place: never a silent fall back to the working tree's file or to the defaults.
#[test]
fn a_fluxwave_yaml_a_revision_cannot_read_is_an_error_as_in_the_working_tree() {
    let repo = homelab();
    let good = repo.read("fluxwave.yaml");
    latin1_comment(&repo, "fluxwave.yaml");
    let run = repo.run(&["check"]);
    refused(
        &run,
        &["fluxwave.yaml:1:6: cannot be read as text: invalid trailing UTF-8 octet (byte 5)"],
    );
    repo.commit_all("a Latin-1 comment");
    let latin1 = short(&repo, "HEAD");
    // The working tree's file is fine: the revision's is the one in force, and refused.
    repo.write("fluxwave.yaml", &good);
    let run = repo.run(&["cutover", "--from", "HEAD~1", "--to", "HEAD"]);
    refused(
        &run,
        &[&format!(
            "{latin1}:fluxwave.yaml:1:6: cannot be read as text: invalid trailing UTF-8 octet (byte 5)"
        )],
    );
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    // A revision's file that does not parse is located in that revision.
    repo.write("fluxwave.yaml", &format!("{good}units: [\n"));
    repo.commit_all("an unclosed list");
    let unclosed = short(&repo, "HEAD");
    repo.write("fluxwave.yaml", &good);
    let run = repo.run(&["cutover", "--from", "HEAD~1", "--to", "HEAD"]);
    refused(&run, &[&format!("[{unclosed}:fluxwave.yaml:")]);
    // The older revision's file, when neither the newer one nor the working tree has one.
    repo.remove("fluxwave.yaml");
    repo.commit_all("no fluxwave.yaml");
    let run = repo.run(&["cutover", "--from", "HEAD~2", "--to", "HEAD"]);
    refused(
        &run,
        &[&format!(
            "{latin1}:fluxwave.yaml:1:6: cannot be read as text"
        )],
    );
    assert!(!run.stdout.contains("safe"), "{}", run.stdout);
}

// -- a file that is there but is no text is called so, where it is --------------------------

/// Adds to the dev environment a JSON 6902 patch of `platform` (a Kustomization apply keeps,
/// so the patch stays: a patch of the retired `apps` goes with it) read from
/// `clusters/dev/timeout.yaml`, whose comment is Latin-1, and commits it.
fn latin1_patch_file(repo: &TestRepo) {
    let k = repo.read("clusters/dev/kustomization.yaml");
    repo.write(
        "clusters/dev/kustomization.yaml",
        &format!(
            "{k}  - path: timeout.yaml\n    target:\n      kind: Kustomization\n      name: platform\n"
        ),
    );
    write_bytes(
        repo,
        "clusters/dev/timeout.yaml",
        b"# caf\xe9\n- op: add\n  path: /spec/timeout\n  value: 5m\n",
    );
    repo.commit_all("a patch file with a Latin-1 comment");
}

/// A patch file that exists but is no text was called "not found"; it is named with the
/// place of its first bad byte, in every command that reads it, from the working tree and
/// from a revision alike.
#[test]
fn a_file_that_is_no_text_is_called_so_not_missing() {
    let repo = homelab();
    latin1_patch_file(&repo);
    let said = "patch file clusters/dev/timeout.yaml:1:6: cannot be read as text: invalid trailing UTF-8 octet (byte 5)";
    let run = repo.run(&["check"]);
    refused(&run, &[said]);
    assert!(!run.stderr.contains("not found"), "{}", run.stderr);
    let before = repo.snapshot();
    let run = repo.run(&["apply"]);
    refused(&run, &[said]);
    assert!(!run.stderr.contains("not found"), "{}", run.stderr);
    assert!(repo.snapshot() == before, "apply changed the repository");
    // From the working tree, and from a revision (named as git names its files).
    let head = short(&repo, "HEAD");
    let in_head =
        format!("patch file {head}:clusters/dev/timeout.yaml:1:6: cannot be read as text");
    for (args, says) in [
        (&["cutover", "--from", "HEAD~1"][..], said),
        (
            &["cutover", "--from", "HEAD~1", "--to", "HEAD"],
            in_head.as_str(),
        ),
    ] {
        let run = repo.run(args);
        assert_eq!(run.code, 1, "{args:?}: {}\n{}", run.stdout, run.stderr);
        assert!(run.stdout.contains("incomplete:"), "{}", run.stdout);
        assert!(run.stdout.contains(says), "{args:?}: {}", run.stdout);
        assert!(!run.stdout.contains("not found"), "{}", run.stdout);
    }
    // A manifest of the app tier, with the line and column of its first bad byte.
    let repo = homelab();
    latin1_comment(&repo, "apps/plex.yaml");
    let run = repo.run(&["cutover", "--from", "HEAD"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stdout.contains(
            "apps/plex.yaml:1:6: cannot be read as text: invalid trailing UTF-8 octet (byte 5)"
        ),
        "{}",
        run.stdout
    );
}

/// Issue 14, item 8: a Latin-1 comment in the working tree's environment kustomization.
/// kustomize refuses the file, so Flux builds nothing there and deletes nothing: cutover
/// says it cannot see the environment whole, never that the folder built without the file
/// deletes everything it applied.
#[test]
fn a_latin1_environment_kustomization_in_the_working_tree_deletes_nothing() {
    let repo = homelab();
    latin1_comment(&repo, "clusters/dev/kustomization.yaml");
    let kustomize = Command::new("kubectl")
        .arg("kustomize")
        .arg(repo.path().join("clusters/dev"))
        .output()
        .expect("kubectl must be installed");
    assert!(!kustomize.status.success(), "kustomize refuses the file");
    let (code, doc) = crate::common::cutover_json(&repo, &["--from", "HEAD"]);
    assert_eq!(code, 1);
    assert_eq!(doc["verdict"], "incomplete", "{doc:#}");
    assert!(crate::common::deletions(&doc).is_empty(), "{doc:#}");
    let why = doc["incomplete"][0]["why"][0].as_str().unwrap();
    assert!(
        why.contains("clusters/dev/kustomization.yaml:1:6: cannot be read as text"),
        "{why}"
    );
    // The reverse: the file committed so, and mended in the working tree.
    repo.commit_all("a Latin-1 comment");
    let bad = short(&repo, "HEAD");
    repo.git(&[
        "checkout",
        "HEAD~1",
        "--",
        "clusters/dev/kustomization.yaml",
    ]);
    let (code, doc) = crate::common::cutover_json(&repo, &["--from", "HEAD"]);
    assert_eq!(code, 1);
    assert_eq!(doc["verdict"], "incomplete", "{doc:#}");
    assert!(crate::common::deletions(&doc).is_empty(), "{doc:#}");
    let why = doc["incomplete"][0]["why"][0].as_str().unwrap();
    assert!(
        why.contains(&format!("{bad}:clusters/dev/kustomization.yaml:1:6")),
        "{why}"
    );
}

/// A fluxwave.yaml with a UTF-8 byte order mark, or in UTF-16 with one, is read alike from
/// the working tree and from a revision: the environment it names is the one compared.
#[test]
fn a_byte_order_mark_and_utf16_read_alike_from_a_revision_and_the_working_tree() {
    let config = "apiVersion: fluxwave.dev/v1alpha1\nkind: Config\nclusters:\n  environments: [{name: marked, path: clusters/dev}]\n";
    let with_bom = format!("\u{feff}{config}");
    for bytes in [
        with_bom.as_bytes().to_vec(),
        utf16(config, false),
        utf16(config, true),
    ] {
        let repo = homelab();
        write_bytes(&repo, "fluxwave.yaml", &bytes);
        // The working tree's.
        let run = repo.run(&["cutover", "--from", "HEAD"]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(
            run.stdout.contains("(environments: marked)"),
            "{}",
            run.stdout
        );
        // The revision's, with none in the working tree.
        repo.commit_all("marked");
        repo.remove("fluxwave.yaml");
        let run = repo.run(&["cutover", "--from", "HEAD", "--to", "HEAD"]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(
            run.stdout.contains("(environments: marked)"),
            "{}",
            run.stdout
        );
    }
}

/// source-controller reads a `.sourceignore` as bytes, line by line (fluxcd/pkg
/// `sourceignore.ReadPatterns`, a `bufio.Scanner`), so a comment that is not UTF-8 leaves
/// its patterns in force: the file they leave out of the artifact is deleted by Flux, from
/// a revision and from the working tree alike.
#[test]
fn a_sourceignore_with_a_latin1_comment_still_leaves_its_files_out() {
    let repo = homelab();
    let base = repo.read("clusters/base/kustomization.yaml");
    repo.write(
        "clusters/base/kustomization.yaml",
        &format!("{base}  - extras.yaml\n"),
    )
    .write(
        "clusters/base/extras.yaml",
        &crate::common::flux_ks("extras", "./extras", &[]),
    )
    .write(
        "extras/notes.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\n  namespace: default\n",
    )
    .write(
        "extras/keep.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: keep\n  namespace: default\n",
    );
    repo.commit_all("extras");
    write_bytes(
        &repo,
        ".sourceignore",
        b"# notes are kept out of the cluster, d\xe9j\xe0 vu\nextras/notes.yaml\n",
    );
    let (code, doc) = crate::common::cutover_json(&repo, &["--from", "HEAD"]);
    let deleted: Vec<String> = crate::common::deletions(&doc)
        .iter()
        .map(crate::common::deletion_id)
        .collect();
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(deleted, ["ConfigMap/default/notes"], "{doc:#}");
    repo.commit_all("a .sourceignore with a Latin-1 comment");
    let (code, doc) = crate::common::cutover_json(&repo, &["--from", "HEAD~1", "--to", "HEAD"]);
    let deleted: Vec<String> = crate::common::deletions(&doc)
        .iter()
        .map(crate::common::deletion_id)
        .collect();
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(deleted, ["ConfigMap/default/notes"], "{doc:#}");
}

/// A file of a revision over the size bound is named as the working tree's is, by its path
/// (in that revision), not by its blob id.
#[test]
fn a_revisions_file_over_the_bound_is_named_by_its_path() {
    let repo = homelab();
    let line = format!("# {}\n", "x".repeat(1021));
    let big: String = line.repeat(65 * 1024);
    repo.write("apps/big.yaml", &big);
    let run = repo.run(&["cutover", "--from", "HEAD"]);
    refused(
        &run,
        &["apps/big.yaml: is 65 MiB; fluxwave reads files up to 64 MiB"],
    );
    repo.commit_all("a big file");
    let head = short(&repo, "HEAD");
    let run = repo.run(&["cutover", "--from", "HEAD", "--to", "HEAD"]);
    refused(
        &run,
        &[&format!(
            "{head}:apps/big.yaml: is 65 MiB; fluxwave reads files up to 64 MiB"
        )],
    );
}

/// A local `git replace` (refs Flux's clone never fetches) does not change what a revision
/// holds: fluxwave reads the objects the commit names, as source-controller does.
#[test]
fn a_local_replace_ref_does_not_change_a_revision() {
    let repo = homelab();
    let original = repo.git(&["rev-parse", "HEAD:apps/plex.yaml"]);
    let extra = format!(
        "{}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: replaced\n  namespace: default\n",
        repo.read("apps/plex.yaml")
    );
    std::fs::write(repo.path().join("replacement.txt"), extra).unwrap();
    let replacement = repo.git(&["hash-object", "-w", "replacement.txt"]);
    std::fs::remove_file(repo.path().join("replacement.txt")).unwrap();
    repo.git(&["replace", original.trim(), replacement.trim()]);
    let run = repo.run(&["cutover", "--from", "HEAD"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(!run.stdout.contains("replaced"), "{}", run.stdout);
    // An inherited `GIT_NO_REPLACE_OBJECTS` that is false does not turn the replacement on.
    let run = run_with(
        &repo,
        &["cutover", "--from", "HEAD"],
        &[("GIT_NO_REPLACE_OBJECTS", "")],
        &[],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
}

/// An ArtifactGenerator copies a file's bytes into its ExternalArtifact whatever they are
/// (source-controller's `copy` does not decode them), and the build of the artifact fails
/// on one kustomize cannot read: Flux deletes nothing of it. fluxwave left such a file out
/// of the artifact, and the objects it held were reported deleted.
#[test]
fn a_file_an_artifact_generator_copies_is_judged_as_in_the_repository() {
    let repo = TestRepo::empty();
    let sync = "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 1m0s\n  ref: {branch: main}\n  url: ssh://git@example.org/fleet\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m0s\n  path: ./clusters/production\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n";
    repo.write("clusters/production/flux-system/gotk-sync.yaml", sync)
        .write("clusters/production/flux-system/kustomization.yaml", "resources: [gotk-sync.yaml]\n")
        .write("clusters/production/artifacts.yaml", "apiVersion: source.extensions.fluxcd.io/v1beta1\nkind: ArtifactGenerator\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  sources:\n    - alias: monorepo\n      kind: GitRepository\n      name: flux-system\n  artifacts:\n    - name: apps\n      originRevision: \"@monorepo\"\n      copy:\n        - from: \"@monorepo/apps/**\"\n          to: \"@artifact/\"\n")
        .write("clusters/production/apps.yaml", "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  interval: 1h\n  sourceRef:\n    kind: ExternalArtifact\n    name: apps\n  path: ./\n  prune: true\n")
        .write("apps/a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: web}\n")
        .write("apps/b.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: web}\n");
    repo.commit_all("artifacts");
    let (code, doc) = crate::common::cutover_json(&repo, &["--from", "HEAD", "--to", "HEAD"]);
    assert_eq!(
        (code, doc["verdict"].as_str()),
        (0, Some("safe")),
        "{doc:#}"
    );
    latin1_comment(&repo, "apps/b.yaml");
    let (code, doc) = crate::common::cutover_json(&repo, &["--from", "HEAD"]);
    assert_eq!(code, 1, "{doc:#}");
    assert!(crate::common::deletions(&doc).is_empty(), "{doc:#}");
    assert_eq!(doc["verdict"], "incomplete", "{doc:#}");
    assert!(
        doc["incomplete"]
            .to_string()
            .contains("b.yaml:1:6: cannot be read as text"),
        "{doc:#}"
    );
}
