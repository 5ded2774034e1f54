//! Reading revisions and files: a file is judged the same whether it comes from a git
//! revision or from the working tree (bytes that are no text, a byte order mark, UTF-16),
//! and git is run for the repository fluxwave was given, or refused in words that say why.

use std::process::Command;

use crate::common::{Run, TestRepo};

/// `fluxwave --repo REPO ARGS` with `env` set (and `unset` removed) on top of the test's
/// environment; temporary paths of `repo` in the output become `[REPO]`.
fn run_with(repo: &TestRepo, args: &[&str], env: &[(&str, &str)], unset: &[&str]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fluxwave"));
    cmd.arg("--repo")
        .arg(repo.path())
        .args(args)
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100");
    for (k, v) in env {
        cmd.env(k, v);
    }
    for k in unset {
        cmd.env_remove(k);
    }
    let out = cmd.output().unwrap();
    let redact =
        |b: &[u8]| String::from_utf8_lossy(b).replace(&repo.path().display().to_string(), "[REPO]");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: redact(&out.stdout),
        stderr: redact(&out.stderr),
    }
}

/// examples/homelab in a fresh git repository, committed once.
fn homelab() -> TestRepo {
    let repo = TestRepo::example("homelab");
    repo.commit_all("homelab");
    repo
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
