//! Bounds and cleanup around the programs fluxwave runs: helm output past its bound and helm
//! past its deadline are stopped with an error naming the release; SIGINT, SIGTERM and SIGHUP
//! end every child and leave no temporary in the cache, and fluxwave exits 128 + the signal;
//! a SIGKILL too leaves no child; a failed pull leaves no staging folder; `cache gc` removes
//! what is old and keeps what is fresh. A `--helm` wrapper script counts as the program
//! fluxwave runs: what it starts must end with it.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::common::{Run, TestRepo};
use crate::helm_env;

const SYNC: &str = "apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: flux-system, namespace: flux-system}
spec: {url: 'ssh://git@example.com/fleet', ref: {branch: main}, interval: 1m}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: flux-system, namespace: flux-system}
spec: {path: ./clusters/dev, prune: true, sourceRef: {kind: GitRepository, name: flux-system}, interval: 10m}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec: {path: ./apps, prune: true, sourceRef: {kind: GitRepository, name: flux-system}, interval: 10m}
";

/// A Helm repository nothing answers at: the wrapper scripts stand in for helm.
const SOURCES: &str = "apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: charts, namespace: flux-system}
spec: {url: 'http://127.0.0.1:9/charts', interval: 1h}
";

/// A repository with one environment whose `apps` Kustomization applies the HelmRelease
/// `apps/<name>` of `chart` (its `spec.chart` block), with `files` besides (path, text).
fn repo(name: &str, chart: &str, files: &[(&str, &str)]) -> TestRepo {
    let repo = TestRepo::empty();
    repo.write(
        "clusters/dev/kustomization.yaml",
        "resources: [sync.yaml, sources.yaml]\n",
    );
    repo.write("clusters/dev/sync.yaml", SYNC);
    repo.write("clusters/dev/sources.yaml", SOURCES);
    repo.write("apps/kustomization.yaml", "resources: [release.yaml]\n");
    repo.write(
        "apps/release.yaml",
        &format!(
            "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {{name: {name}, namespace: apps}}\nspec:\n  interval: 1h\n{chart}"
        ),
    );
    for (path, text) in files {
        repo.write(path, text);
    }
    repo.commit_all("first");
    repo
}

/// `spec.chart` of a chart folder of this repository.
fn local(path: &str) -> String {
    format!("  chart:\n    spec:\n      chart: {path}\n      sourceRef: {{kind: GitRepository, name: flux-system, namespace: flux-system}}\n")
}

/// `spec.chart` of chart `store` 1.0.0 from the Helm repository: an exact version, so that
/// fluxwave goes straight to `helm pull` into a staging folder of the cache.
const REMOTE: &str = "  chart:\n    spec:\n      chart: store\n      version: 1.0.0\n      sourceRef: {kind: HelmRepository, name: charts, namespace: flux-system}\n";

/// A chart whose one ConfigMap has `lines` keys of about 110 bytes each.
fn big_chart(lines: usize) -> [(&'static str, String); 3] {
    [
        (
            "charts/big/Chart.yaml",
            "apiVersion: v2\nname: big\nversion: 1.0.0\n".into(),
        ),
        ("charts/big/values.yaml", format!("lines: {lines}\n")),
        (
            "charts/big/templates/big.yaml",
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n{{{{- range $i := until (int .Values.lines) }}}}\n  k{{{{ $i }}}}: \"{}\"\n{{{{- end }}}}\n",
                "x".repeat(100)
            ),
        ),
    ]
}

/// fluxwave on `repo` with rendering on, `helm` as the helm program and `cache` as the cache.
fn command(repo: &TestRepo, cache: &Path, helm: &Path, args: &[&str]) -> Command {
    let mut cmd = repo.command(args);
    cmd.env_remove("FLUXWAVE_NO_HELM")
        .env("FLUXWAVE_HELM", helm)
        .env("FLUXWAVE_CACHE", cache);
    helm_env::isolate(&mut cmd);
    cmd
}

fn json(run: &Run) -> Value {
    serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\nstderr: {}", run.stdout, run.stderr))
}

/// The one release `build --format json` did not render, and why.
fn not_rendered(run: &Run) -> (String, String) {
    let doc = json(run);
    let missing = doc["notRendered"].as_array().unwrap();
    assert_eq!(missing.len(), 1, "{doc:#}");
    (
        missing[0]["release"].as_str().unwrap().to_string(),
        missing[0]["why"].as_str().unwrap().to_string(),
    )
}

/// An executable script `name` in `dir` holding `body` (after `#!/bin/sh`).
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A helm wrapper that writes its process id to `helm.pid` and that of a `sleep` it starts to
/// `sleep.pid` (both in `dir`), then waits for the sleep: a helm that hangs, and what it
/// started.
fn hanging_helm(dir: &Path) -> PathBuf {
    script(
        dir,
        "helm",
        &format!(
            "sleep 60 &\necho $! > '{d}/sleep.pid.tmp' && mv '{d}/sleep.pid.tmp' '{d}/sleep.pid'\necho $$ > '{d}/helm.pid.tmp' && mv '{d}/helm.pid.tmp' '{d}/helm.pid'\nwait\n",
            d = dir.display()
        ),
    )
}

/// The process ids the hanging helm wrote, once it has written both.
fn pids(dir: &Path) -> Vec<i32> {
    ["sleep.pid", "helm.pid"]
        .iter()
        .map(|f| {
            std::fs::read_to_string(dir.join(f))
                .unwrap_or_else(|e| panic!("{f}: {e}"))
                .trim()
                .parse()
                .unwrap()
        })
        .collect()
}

/// Whether process `pid` runs (a zombie, which has ended and waits for a parent to reap it,
/// does not).
fn running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|s| s.trim_start().starts_with('Z')),
    }
}

/// Waits up to a minute for `done` (a process to start, or to be gone); whether it came.
fn eventually(mut done: impl FnMut() -> bool) -> bool {
    for _ in 0..600 {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    done()
}

/// Kills what a test left running, so that a failing run leaves nothing behind either.
fn kill_all(pids: &[i32]) {
    for pid in pids {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .stderr(Stdio::null())
            .status();
    }
}

/// What is left in the cache's `tmp/` folder.
fn temporaries(cache: &Path) -> Vec<String> {
    std::fs::read_dir(cache.join("tmp"))
        .into_iter()
        .flatten()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// A release whose chart renders far more than the bound is not rendered, with an error
/// naming the bound and the release; its render is not cached.
#[test]
fn helm_output_past_the_bound_is_refused_naming_the_release() {
    let files = big_chart(60_000);
    let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (*p, t.as_str())).collect();
    let repo = repo("big", &local("./charts/big"), &files);
    let cache = tempfile::tempdir().unwrap();
    let mut cmd = command(
        &repo,
        cache.path(),
        &helm_env::helm(),
        &["build", "--format", "json"],
    );
    cmd.env("FLUXWAVE_HELM_OUTPUT_LIMIT", "1");
    let run = repo.run_command(cmd);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let (release, why) = not_rendered(&run);
    assert_eq!(release, "apps/big");
    assert!(
        why.contains("printed more than 1 MiB on its standard output")
            && why.contains("FLUXWAVE_HELM_OUTPUT_LIMIT"),
        "{why}"
    );
    assert!(
        run.stderr.contains("HelmRelease apps/big is not rendered"),
        "{}",
        run.stderr
    );
    let renders: Vec<_> = std::fs::read_dir(cache.path().join("renders"))
        .into_iter()
        .flatten()
        .collect();
    assert!(
        renders.is_empty(),
        "a render past the bound is cached: {renders:?}"
    );
}

/// A helm that prints far past the default bound (a wrapper streaming 300 MB) is stopped at
/// 64 MiB: fluxwave's peak memory (GNU time's maximum resident set, which counts the wrapper's
/// small programs too) stays far below what reading it all takes.
#[test]
fn helm_output_without_end_keeps_fluxwave_within_memory() {
    let time = Path::new("/usr/bin/time");
    assert!(
        time.is_file(),
        "this test measures peak memory with GNU time: install it (Debian's `time` package)"
    );
    let repo = repo(
        "endless",
        &local("./charts/big"),
        &big_chart(1)
            .iter()
            .map(|(p, t)| (*p, t.as_str()))
            .collect::<Vec<_>>(),
    );
    let bin = tempfile::tempdir().unwrap();
    let helm = script(
        bin.path(),
        "helm",
        "head -c 300000000 /dev/zero | tr '\\0' '\\377'\n",
    );
    let cache = tempfile::tempdir().unwrap();
    let fluxwave = command(&repo, cache.path(), &helm, &["build", "--format", "json"]);
    let mut cmd = Command::new(time);
    cmd.arg("-f").arg("peak %M").arg(fluxwave.get_program());
    cmd.args(fluxwave.get_args());
    for (k, v) in fluxwave.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let run = repo.run_command(cmd);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let peak_kib: u64 = run
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("peak "))
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak in {}", run.stderr));
    assert!(
        peak_kib < 160 * 1024,
        "fluxwave peaked at {} MiB",
        peak_kib / 1024
    );
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    let why = doc["notRendered"][0]["why"].as_str().unwrap_or("");
    assert!(why.contains("more than 64 MiB"), "{doc:#}");
}

/// helm past its deadline (`FLUXWAVE_HELM_TIMEOUT`) is killed with what it started, and the
/// release says why.
#[test]
fn helm_past_its_deadline_is_killed_with_what_it_started() {
    let files = big_chart(1);
    let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (*p, t.as_str())).collect();
    let repo = repo("slow", &local("./charts/big"), &files);
    let bin = tempfile::tempdir().unwrap();
    let helm = hanging_helm(bin.path());
    let cache = tempfile::tempdir().unwrap();
    let mut cmd = command(&repo, cache.path(), &helm, &["build", "--format", "json"]);
    cmd.env("FLUXWAVE_HELM_TIMEOUT", "2");
    let run = repo.run_command(cmd);
    let pids = pids(bin.path());
    let left: Vec<i32> = pids.iter().copied().filter(|p| running(*p)).collect();
    kill_all(&left);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let (release, why) = not_rendered(&run);
    assert_eq!(release, "apps/slow");
    assert!(
        why.contains("took longer than 2 s") && why.contains("FLUXWAVE_HELM_TIMEOUT"),
        "{why}"
    );
    // The wrapper was reaped by fluxwave; its sleep may wait a moment for its new parent.
    assert!(!running(pids[1]), "helm {} outlived fluxwave", pids[1]);
    assert!(
        eventually(|| !running(pids[0])),
        "the sleep {} that helm started outlived fluxwave",
        pids[0]
    );
}

/// Starts `fluxwave build` with the hanging helm pulling a chart into the cache, and waits
/// until helm runs and fluxwave handles signals.
fn pulling(repo: &TestRepo, cache: &Path, bin: &Path) -> (Child, Vec<i32>) {
    let helm = hanging_helm(bin);
    let mut cmd = command(repo, cache, &helm, &["build", "--format", "json"]);
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = eventually(|| bin.join("helm.pid").exists());
    if !started {
        let _ = child.kill();
        panic!("helm did not start");
    }
    let pids = pids(bin);
    assert_eq!(temporaries(cache).len(), 1, "the pull's staging folder");
    (child, pids)
}

/// SIGINT, SIGTERM and SIGHUP while helm runs: fluxwave kills helm and what helm started,
/// removes the pull's staging folder and exits 130, 143 and 129.
#[test]
fn a_signal_ends_helm_and_removes_the_staging_folder() {
    let repo = repo("store", REMOTE, &[]);
    for (signal, status) in [("INT", 130), ("TERM", 143), ("HUP", 129)] {
        let bin = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        let (mut child, pids) = pulling(&repo, cache.path(), bin.path());
        Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(child.id().to_string())
            .status()
            .unwrap();
        let exit = child.wait().unwrap();
        // fluxwave reaped helm; the sleep helm started may wait a moment for its new parent.
        let helm_ran = running(pids[1]);
        let gone = eventually(|| !running(pids[0]));
        let left: Vec<i32> = pids.iter().copied().filter(|p| running(*p)).collect();
        kill_all(&left);
        assert_eq!(exit.code(), Some(status), "SIG{signal}: {exit:?}");
        assert!(!helm_ran && gone, "SIG{signal}: {left:?} outlived fluxwave");
        assert_eq!(
            temporaries(cache.path()),
            Vec::<String>::new(),
            "SIG{signal}"
        );
    }
}

/// SIGKILL, which fluxwave cannot handle: its watcher kills helm and what helm started, and
/// removes the staging folder.
#[test]
fn sigkill_leaves_no_child_and_no_staging_folder() {
    let repo = repo("store", REMOTE, &[]);
    let bin = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let (mut child, pids) = pulling(&repo, cache.path(), bin.path());
    child.kill().unwrap();
    child.wait().unwrap();
    let gone = eventually(|| pids.iter().all(|p| !running(*p)));
    let left: Vec<i32> = pids.iter().copied().filter(|p| running(*p)).collect();
    kill_all(&left);
    assert!(gone, "{left:?} outlived fluxwave");
    assert!(
        eventually(|| temporaries(cache.path()).is_empty()),
        "{:?}",
        temporaries(cache.path())
    );
}

/// A pull that fails leaves no staging folder, and says which chart it was.
#[test]
fn a_failed_pull_leaves_no_staging_folder() {
    let repo = repo("store", REMOTE, &[]);
    let bin = tempfile::tempdir().unwrap();
    let helm = script(
        bin.path(),
        "helm",
        "echo 'Error: no such chart' >&2\nexit 1\n",
    );
    let cache = tempfile::tempdir().unwrap();
    let run = repo.run_command(command(
        &repo,
        cache.path(),
        &helm,
        &["build", "--format", "json"],
    ));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let (release, why) = not_rendered(&run);
    assert_eq!(release, "apps/store");
    assert!(
        why.contains("helm pull of store 1.0.0") && why.contains("Error: no such chart"),
        "{why}"
    );
    assert_eq!(temporaries(cache.path()), Vec::<String>::new());
}

fn age(path: &Path, days: u64) {
    let t = SystemTime::now() - Duration::from_secs(days * 24 * 60 * 60);
    std::fs::File::open(path).unwrap().set_modified(t).unwrap();
}

/// Ages every entry under `dir` (and what it holds directly) by `days`.
fn age_entries(dir: &Path, days: u64) {
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.is_dir() {
            for inner in std::fs::read_dir(&path).unwrap() {
                age(&inner.unwrap().path(), days);
            }
        }
        age(&path, days);
    }
}

fn count(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| d.count())
}

/// `cache gc` removes the renders and charts not used for 30 days and the leftovers of runs
/// older than an hour, and keeps what is fresh; a run that uses a render or a chart makes it
/// fresh again.
#[test]
fn cache_gc_removes_what_is_old_and_keeps_what_is_fresh() {
    let store = helm_env::charts().join("store");
    let repo = repo("store", &local("./charts/store"), &[]);
    for e in std::fs::read_dir(&store).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            for t in std::fs::read_dir(e.path()).unwrap() {
                let t = t.unwrap();
                repo.write(
                    &format!("charts/store/templates/{}", t.file_name().to_string_lossy()),
                    &std::fs::read_to_string(t.path()).unwrap(),
                );
            }
        } else {
            repo.write(
                &format!("charts/store/{}", e.file_name().to_string_lossy()),
                &std::fs::read_to_string(e.path()).unwrap(),
            );
        }
    }
    repo.commit_all("chart");
    let cache = tempfile::tempdir().unwrap();
    let c = cache.path();
    let helm = helm_env::helm();
    let build = || {
        let run = repo.run_command(command(&repo, c, &helm, &["build", "--format", "json"]));
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(
            json(&run)["notRendered"]
                .as_array()
                .is_none_or(|a| a.is_empty()),
            "{}",
            run.stdout
        );
    };
    let gc = || repo.run_command(command(&repo, c, &helm, &["cache", "gc"]));
    build();
    assert!(c.join("CACHEDIR.TAG").is_file());
    assert_eq!((count(&c.join("renders")), count(&c.join("local"))), (1, 1));

    // Used 40 days ago, then used again by a run: kept.
    age_entries(&c.join("renders"), 40);
    age_entries(&c.join("local"), 40);
    build();
    let run = gc();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("removed 0 entries"), "{}", run.stdout);
    assert_eq!((count(&c.join("renders")), count(&c.join("local"))), (1, 1));

    // Not used since: removed, with what interrupted runs left an hour ago and more; what a
    // run may still own stays.
    age_entries(&c.join("renders"), 40);
    age_entries(&c.join("local"), 40);
    for (name, days) in [("1-1", 1), ("2-2", 0)] {
        std::fs::create_dir_all(c.join("tmp").join(name).join("store")).unwrap();
        age(&c.join("tmp").join(name).join("store"), days);
        age(&c.join("tmp").join(name), days);
    }
    std::fs::write(c.join("renders/.render.3-3"), "half").unwrap();
    age(&c.join("renders/.render.3-3"), 1);
    let run = gc();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("removed 4 entries")
            && run.stdout.contains("2 entries unused for 30 days")
            && run.stdout.contains("2 entries left by interrupted runs"),
        "{}",
        run.stdout
    );
    assert_eq!((count(&c.join("renders")), count(&c.join("local"))), (0, 0));
    assert_eq!(temporaries(c), ["2-2"]);
}

/// `cache gc` refuses a folder fluxwave did not mark as its cache, the home folder and `/`,
/// and removes nothing from them.
#[test]
fn cache_gc_refuses_what_is_not_fluxwaves_cache() {
    let repo = TestRepo::empty();
    let home = tempfile::tempdir().unwrap();
    let old = home.path().join("renders/old.yaml");
    std::fs::create_dir_all(old.parent().unwrap()).unwrap();
    std::fs::write(&old, "x").unwrap();
    age(&old, 100);
    let gc = |cache: &Path| {
        let mut cmd = repo.command(&["--cache", cache.to_str().unwrap(), "cache", "gc"]);
        cmd.env("HOME", home.path());
        repo.run_command(cmd)
    };
    // A folder with old renders, not marked by fluxwave.
    let unmarked = tempfile::tempdir().unwrap();
    let theirs = unmarked.path().join("renders/old.yaml");
    std::fs::create_dir_all(theirs.parent().unwrap()).unwrap();
    std::fs::write(&theirs, "x").unwrap();
    age(&theirs, 100);
    let run = gc(unmarked.path());
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(
        run.stderr.contains("it has no CACHEDIR.TAG"),
        "{}",
        run.stderr
    );
    assert!(theirs.exists());
    // Even marked, the home folder is refused.
    std::fs::write(
        home.path().join("CACHEDIR.TAG"),
        "Signature: 8a477f597d28d172789f06886806bc55\n# fluxwave\n",
    )
    .unwrap();
    let run = gc(home.path());
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(
        run.stderr.contains("it is the home folder"),
        "{}",
        run.stderr
    );
    let run = gc(Path::new("/"));
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(
        run.stderr.contains("it is the root folder"),
        "{}",
        run.stderr
    );
    assert!(old.exists());
    let run = repo.run(&["cache", "gc", "--help"]);
    assert!(
        run.stdout.contains("Examples:\n  fluxwave cache gc"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("Exit status: 0"), "{}", run.stdout);
}
