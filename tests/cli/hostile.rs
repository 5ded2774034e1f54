//! Hostile repositories: links out of the repository, odd file names, huge and deep files,
//! binary files, FIFOs, unreadable and read-only trees, no git. Each gives a clear error with
//! exit 2 and writes nothing, or is handled correctly; none hangs or panics.
//!
//! What could not be tested here, and why: these tests run as root in CI containers, where
//! `chmod 000` stops no read and `chmod -w` no write (root bypasses permission bits), so the
//! permission tests only run as another user; as root the read-only tree is made with
//! `chattr +i` (the immutable flag binds root too) when the file system supports it, and a
//! FIFO stands in for a file whose read cannot complete. A full disk (ENOSPC) half-way
//! through a write is not simulated: writes are atomic, so it fails like any other write.

use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Run, TestRepo};

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

/// Runs fluxwave with a deadline: a run that blocks (on a FIFO, say) is killed and fails the
/// test instead of hanging it.
fn run_within(repo: &TestRepo, args: &[&str], limit: Duration) -> Run {
    let mut child = crate::common::fluxwave()
        .arg("--repo")
        .arg(repo.path())
        .args(args)
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("fluxwave {args:?} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let run = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(
        !run.stderr.contains("panicked"),
        "fluxwave {args:?} panicked:\n{}",
        run.stderr
    );
    run
}

fn run(repo: &TestRepo, args: &[&str]) -> Run {
    run_within(repo, args, Duration::from_secs(120))
}

/// Exit 2, the message on stderr, and not one byte of the repository changed.
#[track_caller]
fn refused(repo: &TestRepo, args: &[&str], message: &str) -> Run {
    let before = repo.snapshot();
    let r = run(repo, args);
    assert_eq!(r.code, 2, "fluxwave {args:?}\n{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains(message),
        "expected `{message}` in:\n{}",
        r.stderr
    );
    assert!(
        repo.snapshot() == before,
        "fluxwave {args:?} changed the repository"
    );
    r
}

fn flat() -> TestRepo {
    let repo = TestRepo::empty();
    repo.service("api", &[]).service("web", &["api"]);
    repo.manifest("apps/api.yaml").manifest("apps/web.yaml");
    repo.flat_kustomization().flux_wiring();
    repo
}

/// A file outside every repository of these tests, with a marker in it.
fn outside() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("outside.yaml");
    std::fs::write(
        &file,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: outsidemarker\n  namespace: default\n",
    )
    .unwrap();
    (dir, file)
}

fn link(target: &Path, at: &Path) {
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(target, at).unwrap();
}

#[test]
fn a_link_in_the_app_tier_is_reported_and_never_followed() {
    let repo = flat();
    let (_keep, file) = outside();
    link(&file, &repo.path().join("apps/api-evil.yaml"));
    let c = run(&repo, &["check"]);
    assert!(
        c.stdout.contains("apps/api-evil.yaml") && c.stdout.contains("symbolic link"),
        "{}",
        c.stdout
    );
    let a = run(&repo, &["apply"]);
    assert_eq!(a.code, 0, "{}", a.stderr);
    // The link stays where it was, a link, and what it points at is untouched.
    let meta = repo
        .path()
        .join("apps/api-evil.yaml")
        .symlink_metadata()
        .unwrap();
    assert!(meta.file_type().is_symlink());
    assert!(std::fs::read_to_string(&file)
        .unwrap()
        .contains("outsidemarker"));
    assert!(!repo.read("apps/wave-0/kustomization.yaml").contains("evil"));
}

#[test]
fn linked_cluster_files_and_folders_are_refused() {
    let (_keep, file) = outside();
    // A hand-kept kustomization that is a link out of the repository.
    let repo = flat();
    let text = repo.read("clusters/base/kustomization.yaml");
    std::fs::write(&file, &text).unwrap();
    repo.remove("clusters/base/kustomization.yaml");
    link(&file, &repo.path().join("clusters/base/kustomization.yaml"));
    refused(&repo, &["apply"], "symbolic link");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);

    // An environment folder that is a link out of the repository.
    let repo = flat();
    let env = tempfile::tempdir().unwrap();
    std::fs::write(
        env.path().join("kustomization.yaml"),
        repo.read("clusters/dev/kustomization.yaml"),
    )
    .unwrap();
    std::fs::remove_dir_all(repo.path().join("clusters/dev")).unwrap();
    link(env.path(), &repo.path().join("clusters/dev"));
    refused(&repo, &["apply"], "leads out of the repository");

    // The app tier and the catalog as links out of the repository.
    let repo = flat();
    let apps = tempfile::tempdir().unwrap();
    std::fs::rename(repo.path().join("apps"), apps.path().join("apps")).unwrap();
    link(&apps.path().join("apps"), &repo.path().join("apps"));
    refused(&repo, &["apply"], "leads out of the repository");
    assert!(apps.path().join("apps/api.yaml").exists());
    let repo = flat();
    let catalog = tempfile::tempdir().unwrap();
    std::fs::rename(repo.path().join("catalog"), catalog.path().join("catalog")).unwrap();
    link(
        &catalog.path().join("catalog"),
        &repo.path().join("catalog"),
    );
    refused(&repo, &["waves"], "leads out of the repository");
}

#[test]
fn kustomization_entries_that_leave_the_repository_are_not_read() {
    let repo = flat();
    let (_keep, file) = outside();
    // A resource entry that climbs out, and a resource that is a link out.
    let base = repo.read("clusters/base/kustomization.yaml");
    let climb = format!("../..{}", file.display());
    repo.write(
        "clusters/base/kustomization.yaml",
        &format!("{base}  - {climb}\n  - linked.yaml\n"),
    );
    link(&file, &repo.path().join("clusters/base/linked.yaml"));
    // A decryption patch file that climbs out (the builder reads patch files for apply).
    let dev = repo.read("clusters/dev/kustomization.yaml");
    repo.write(
        "clusters/dev/kustomization.yaml",
        &format!("{dev}  - path: ../../../../../../../..{}\n", file.display()),
    );
    repo.commit_all("hostile");
    for args in [
        &["cutover", "--from", "HEAD", "--format", "json"][..],
        &["check", "--base", "HEAD", "--format", "json"],
        &["check"],
        &["plan"],
    ] {
        let r = run(&repo, args);
        assert!(
            r.code == 0 || r.code == 1 || r.code == 2,
            "{args:?}: {}",
            r.code
        );
        assert!(
            !r.stdout.contains("outsidemarker") && !r.stderr.contains("outsidemarker"),
            "{args:?} read the outside file:\n{}\n{}",
            r.stdout,
            r.stderr
        );
    }
}

#[test]
fn file_names_with_spaces_newlines_and_bytes_that_are_not_utf8() {
    let repo = TestRepo::empty();
    repo.service("api", &[])
        .service("web", &["api"])
        .flux_wiring();
    repo.manifest("apps/api.yaml").manifest("apps/web.yaml");
    repo.manifest("apps/api-with space.yaml");
    repo.write(
        "apps/web-line\nbreak.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nl\n",
    );
    let odd = std::ffi::OsStr::from_bytes(b"api-\xff\xfe.yaml");
    std::fs::write(repo.path().join("apps").join(odd), "kind: ConfigMap\n").unwrap();
    repo.write("apps/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - api.yaml\n  - web.yaml\n  - api-with space.yaml\n  - \"web-line\\nbreak.yaml\"\n");
    let c = run(&repo, &["check"]);
    assert!(c.stdout.contains("not UTF-8"), "{}", c.stdout);
    let a = run(&repo, &["apply"]);
    assert_eq!(a.code, 0, "{}\n{}", a.stdout, a.stderr);
    let listed = |wave: usize| -> Vec<String> {
        let v: serde_json::Value =
            serde_saphyr::from_str(&repo.read(&format!("apps/wave-{wave}/kustomization.yaml")))
                .unwrap();
        v["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap().to_string())
            .collect()
    };
    assert!(
        listed(0).contains(&"api-with space.yaml".to_string()),
        "{:?}",
        listed(0)
    );
    assert!(
        listed(1).contains(&"web-line\nbreak.yaml".to_string()),
        "{:?}",
        listed(1)
    );
    assert!(repo.exists("apps/wave-1/web-line\nbreak.yaml"));
    // The name that is not UTF-8 is left where it is, unread.
    assert!(repo.path().join("apps").join(odd).exists());
    let again = run(&repo, &["apply"]);
    assert!(
        again.stdout.contains("nothing to change"),
        "{}",
        again.stdout
    );
}

/// A YAML file of about `mib` MiB: one ConfigMap with many keys.
fn huge_yaml(path: &Path, mib: usize) {
    use std::io::Write;
    let mut w = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    writeln!(
        w,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: huge\ndata:"
    )
    .unwrap();
    let line = format!("  k{{}}: {}\n", "x".repeat(90));
    let _ = line;
    let mut written = 0;
    let mut i = 0usize;
    while written < mib * 1024 * 1024 {
        let l = format!("  k{i}: {}\n", "x".repeat(90));
        written += l.len();
        w.write_all(l.as_bytes()).unwrap();
        i += 1;
    }
}

#[test]
fn a_100_mib_yaml_file_is_refused_quickly_with_a_clear_error() {
    let repo = flat();
    huge_yaml(&repo.path().join("catalog/big.yaml"), 100);
    let start = Instant::now();
    let r = refused(&repo, &["waves"], "fluxwave reads files up to 64 MiB");
    assert!(r.stderr.contains("catalog/big.yaml"), "{}", r.stderr);
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );

    // In the app tier: apply moves it (a rename, never read); cutover refuses to read it.
    let repo = flat();
    repo.commit_all("flat");
    huge_yaml(&repo.path().join("apps/api-big.yaml"), 100);
    let size = std::fs::metadata(repo.path().join("apps/api-big.yaml"))
        .unwrap()
        .len();
    refused(
        &repo,
        &["cutover", "--from", "HEAD"],
        "fluxwave reads files up to 64 MiB",
    );
    let a = run(&repo, &["apply"]);
    assert_eq!(a.code, 0, "{}", a.stderr);
    assert_eq!(
        std::fs::metadata(repo.path().join("apps/wave-0/api-big.yaml"))
            .unwrap()
            .len(),
        size
    );
}

#[test]
fn ten_thousand_documents_deep_nesting_and_binary_files() {
    let repo = flat();
    repo.commit_all("flat");
    let many: String = (0..10_000)
        .map(|i| format!("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: many-{i}\n  namespace: default\n"))
        .collect();
    repo.write("apps/api-many.yaml", &many);
    repo.write("apps/api-deep.yaml", &format!("a: {}", "[".repeat(100_000)));
    let binary: Vec<u8> = (0..65_536u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    std::fs::write(repo.path().join("apps/web-blob.yaml"), &binary).unwrap();
    repo.flat_kustomization();
    let start = Instant::now();
    let c = run(&repo, &["cutover", "--from", "HEAD", "--format", "json"]);
    assert!(c.code == 0 || c.code == 1, "{}", c.stderr);
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "cutover took {:?}",
        start.elapsed()
    );
    let a = run(&repo, &["apply"]);
    assert_eq!(a.code, 0, "{}", a.stderr);
    // Moves are renames: the binary file is byte for byte what it was.
    assert_eq!(
        std::fs::read(repo.path().join("apps/wave-1/web-blob.yaml")).unwrap(),
        binary
    );
    let r = run(&repo, &["check", "--base", "HEAD"]);
    assert!(r.code == 0 || r.code == 1, "{}", r.stderr);
    // Deep nesting where fluxwave must read: the environment's kustomization.
    let dev = repo.read("clusters/dev/kustomization.yaml");
    repo.write(
        "clusters/dev/kustomization.yaml",
        &format!("{dev}x: {}\n", "[".repeat(100_000)),
    );
    refused(&repo, &["apply"], "clusters/dev/kustomization.yaml");
}

fn mkfifo(path: &Path) -> bool {
    Command::new("mkfifo")
        .arg(path)
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn a_fifo_never_blocks_a_read() {
    // A FIFO blocks its reader until a writer comes: the stand-in for a file whose read
    // cannot complete. fluxwave only reads regular files.
    let repo = flat();
    if !mkfifo(&repo.path().join("catalog/pipe.yaml")) {
        eprintln!("mkfifo is not available: not tested");
        return;
    }
    let r = run_within(&repo, &["waves"], Duration::from_secs(30));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("not a regular file"), "{}", r.stderr);
    std::fs::remove_file(repo.path().join("catalog/pipe.yaml")).unwrap();
    repo.commit_all("flat");
    assert!(mkfifo(&repo.path().join("apps/api-pipe.yaml")));
    assert!(mkfifo(&repo.path().join("clusters/base/pipe.yaml")));
    for args in [
        &["cutover", "--from", "HEAD"][..],
        &["check", "--base", "HEAD"],
        &["plan"],
        &["apply", "--dry-run"],
    ] {
        run_within(&repo, args, Duration::from_secs(30));
    }
}

#[test]
fn unreadable_files() {
    if is_root() {
        // Root reads a file of mode 000 and lists a folder without x: nothing to test.
        eprintln!("running as root: permission bits do not stop reads; see the module doc");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let repo = flat();
    let file = repo.path().join("catalog/api.yaml");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o000)).unwrap();
    let r = run(&repo, &["waves"]);
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("catalog/api.yaml"), "{}", r.stderr);
}

/// Sets or clears the immutable flag; false when the file system has none.
fn chattr(flag: &str, path: &Path) -> bool {
    Command::new("chattr")
        .arg(flag)
        .arg(path)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn a_read_only_tree_fails_whole_before_the_first_change() {
    let repo = flat();
    let base = repo.path().join("clusters/base");
    let made_read_only = if is_root() {
        chattr("+i", &base)
    } else {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o555)).is_ok()
    };
    if !made_read_only {
        eprintln!("no way to make a folder read-only for this user here: not tested");
        return;
    }
    let before: BTreeMap<String, Vec<u8>> = repo.snapshot();
    let r = run(&repo, &["apply"]);
    if is_root() {
        chattr("-i", &base);
    } else {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("clusters/base"), "{}", r.stderr);
    // Not one file moved: the moves would have come before the writes into clusters/base.
    assert!(
        repo.snapshot() == before,
        "apply changed the tree before failing"
    );
    assert!(!repo.exists("apps/wave-0"));
    // Once writable, apply goes through.
    assert_eq!(run(&repo, &["apply"]).code, 0);

    // An immutable manifest: the move of it would fail half-way; the probe finds it first.
    let repo = flat();
    let file = repo.path().join("apps/web.yaml");
    if is_root() && chattr("+i", &file) {
        let before = repo.snapshot();
        let r = run(&repo, &["apply"]);
        chattr("-i", &file);
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(
            repo.snapshot() == before,
            "apply changed the tree before failing"
        );
    }
}

#[test]
fn cutover_outside_git_and_with_a_revision_that_does_not_exist() {
    let repo = flat();
    refused(
        &repo,
        &["cutover", "--from", "HEAD"],
        "is not inside a git repository",
    );
    refused(
        &repo,
        &["check", "--base", "HEAD"],
        "is not inside a git repository",
    );
    repo.commit_all("flat");
    refused(
        &repo,
        &["cutover", "--from", "no-such-rev"],
        "revision `no-such-rev` does not exist",
    );
    refused(
        &repo,
        &["cutover", "--from", "HEAD", "--to=--upload-pack=touch x"],
        "does not exist",
    );
    refused(&repo, &["cutover", "--from", "HEAD~5"], "does not exist");
}

/// A revision git cannot read (its tree object is gone) is git's failure, reported with the
/// command and git's own message: exit 2, not a verdict.
#[test]
fn a_revision_git_cannot_read_is_reported_as_a_git_failure() {
    let repo = flat();
    repo.commit_all("flat");
    let tree = repo.git(&["rev-parse", "HEAD^{tree}"]);
    let tree = tree.trim();
    let object = repo
        .path()
        .join(".git/objects")
        .join(&tree[..2])
        .join(&tree[2..]);
    std::fs::remove_file(&object).unwrap();
    let r = run(&repo, &["cutover", "--from", "HEAD"]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("`git ls-tree -r -z --end-of-options ") && r.stderr.contains("failed: "),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("fatal: "),
        "git's own message:\n{}",
        r.stderr
    );
}
