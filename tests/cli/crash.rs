//! Crash safety: `apply` killed with SIGKILL at random moments never loses, duplicates or
//! truncates an app-tier file, and a second `apply` converges to exactly the tree an
//! uninterrupted run produces. The number of kills is FLUXWAVE_CRASH_KILLS: 20 by default,
//! so that a local `cargo test` spends about 20 s here instead of 3.5 minutes (each kill costs
//! about 1 s); `.ci/run` sets 200, so CI kills as often as before.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::common::TestRepo;
use crate::generate;

/// Content fingerprints of the app tier's manifests (generated kustomizations left out), as a
/// multiset: (length, FNV-1a hash) -> count.
fn app_tier_multiset(repo: &TestRepo) -> BTreeMap<(usize, u64), usize> {
    let mut out = BTreeMap::new();
    for (path, bytes) in repo.snapshot() {
        let name = path.rsplit('/').next().unwrap_or("");
        let manifest =
            (name.ends_with(".yaml") || name.ends_with(".yml")) && name != "kustomization.yaml";
        if path.starts_with("apps/") && manifest {
            let hash = bytes.iter().fold(0xcbf29ce484222325u64, |h, b| {
                (h ^ u64::from(*b)).wrapping_mul(0x100000001b3)
            });
            *out.entry((bytes.len(), hash)).or_insert(0) += 1;
        }
    }
    out
}

/// The number of kills: FLUXWAVE_CRASH_KILLS, else 20.
fn kills() -> usize {
    // A value that is not a number fails rather than quietly running the local default.
    match std::env::var("FLUXWAVE_CRASH_KILLS") {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("FLUXWAVE_CRASH_KILLS={v:?} is not a number of kills")),
        Err(_) => 20,
    }
}

#[test]
fn apply_survives_sigkill_at_any_moment() {
    let repo = generate::repository(1000, 7);
    repo.commit_all("flat");
    killed_applies_converge(&repo, kills());
}

/// A move between topologies (waves to one Kustomization per unit: every file moves, every
/// generated Kustomization is replaced, the environment gets a patch per unit) is as safe.
/// A quarter of the kills: the first test covers the moment-by-moment order of apply.
#[test]
fn apply_between_topologies_survives_sigkill_at_any_moment() {
    let repo = generate::repository(300, 11);
    assert_eq!(repo.run(&["apply"]).code, 0);
    let config = repo.read("fluxwave.yaml");
    repo.write("fluxwave.yaml", &format!("{config}topology: units\n"));
    repo.commit_all("waves, and the move to units asked for");
    killed_applies_converge(&repo, (kills() / 4).max(5));
}

/// SIGINT and SIGTERM (Ctrl-C, a CI runner cancelling the job) at random moments are no worse
/// than a SIGKILL: nothing is lost and a second `apply` converges; `apply` exits 130 or 143
/// (or 0, done before the signal), never killed by the signal itself.
#[test]
fn apply_interrupted_by_sigint_or_sigterm_converges() {
    let repo = generate::repository(300, 13);
    repo.commit_all("flat");
    for stop in [Stop::Signal("INT", 130), Stop::Signal("TERM", 143)] {
        interrupted_applies_converge(&repo, (kills() / 4).max(5), stop);
    }
}

/// How a run is stopped: SIGKILL, or a signal fluxwave handles and the status it then exits
/// with.
#[derive(Clone, Copy, Debug)]
enum Stop {
    Kill,
    Signal(&'static str, i32),
}

/// Whether process `pid` catches SIGINT and SIGTERM (its `SigCgt` mask).
fn catches_signals(pid: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << 1) != 0 && mask & (1 << 14) != 0)
}

/// Kills `apply` of the committed tree `kills` times at random moments: no app-tier manifest
/// is ever lost, duplicated or truncated, and a second `apply` always converges to the tree
/// of one uninterrupted run.
fn killed_applies_converge(repo: &TestRepo, kills: usize) {
    interrupted_applies_converge(repo, kills, Stop::Kill);
}

/// `killed_applies_converge`, stopping each run with `stop`.
fn interrupted_applies_converge(repo: &TestRepo, kills: usize, stop: Stop) {
    let original = app_tier_multiset(repo);

    // The reference: one uninterrupted run, timed to aim the kills.
    let start = Instant::now();
    assert_eq!(repo.run(&["apply"]).code, 0);
    let full = start.elapsed();
    let reference = repo.snapshot();
    assert_eq!(app_tier_multiset(repo), original);

    let mut interrupted = 0;
    let mut seed = 0x5eed_u64;
    for i in 0..kills {
        repo.git(&["checkout", "-q", "--", "."]);
        repo.git(&["clean", "-q", "-fdx"]);
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        // A signal is aimed at the first half of a run: the reference run may have been slowed
        // by other tests, and a signal after the end tests nothing.
        let span = match stop {
            Stop::Kill => full,
            Stop::Signal(..) => full / 2,
        };
        let delay = Duration::from_micros((seed >> 33) % (span.as_micros() as u64 + 1));
        let mut child = crate::common::fluxwave()
            .arg("--repo")
            .arg(repo.path())
            .arg("apply")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        match stop {
            Stop::Kill => {
                let _ = child.kill(); // SIGKILL
            }
            Stop::Signal(name, _) => {
                // Not before fluxwave handles signals (its first instant), unless it is done.
                while child.try_wait().unwrap().is_none() && !catches_signals(child.id()) {
                    std::thread::sleep(Duration::from_micros(200));
                }
                let _ = std::process::Command::new("kill")
                    .arg(format!("-{name}"))
                    .arg(child.id().to_string())
                    .stderr(std::process::Stdio::null())
                    .status();
            }
        }
        let status = child.wait().unwrap();
        if let Stop::Signal(name, code) = stop {
            assert!(
                status.code() == Some(0) || status.code() == Some(code),
                "kill {i} (SIG{name}) after {delay:?}: {status:?}"
            );
        }
        if !status.success() {
            interrupted += 1;
        }
        let now = app_tier_multiset(repo);
        if now != original {
            let lost = original
                .iter()
                .filter(|(k, n)| now.get(*k) != Some(*n))
                .count();
            let extra = now
                .iter()
                .filter(|(k, n)| original.get(*k) != Some(*n))
                .count();
            panic!("kill {i} after {delay:?}: manifests lost or truncated: {lost}, duplicated or new: {extra}");
        }
        let run = repo.run(&["apply"]);
        assert_eq!(run.code, 0, "kill {i} after {delay:?}: {}", run.stderr);
        let after = repo.snapshot();
        if after != reference {
            let differ: Vec<&String> = after
                .keys()
                .chain(reference.keys())
                .filter(|k| after.get(*k) != reference.get(*k))
                .collect();
            panic!("kill {i} after {delay:?}: apply did not converge to the uninterrupted tree; differing: {differ:?}");
        }
    }
    assert!(
        interrupted * 4 >= kills,
        "only {interrupted} of {kills} runs were interrupted: the kills are not aimed inside apply"
    );
}
