//! The differential test: every environment of every repository under
//! `tests/fixtures/flux/<layout>/` is built twice, by fluxwave (its inventory) and by Flux's
//! own libraries (`tools/flux-oracle`, the steps of kustomize-controller), and the two must
//! agree Kustomization by Kustomization: which Flux Kustomizations exist, whether each is
//! built, fails or reads another source, and the id (group, kind, namespace, name) of every
//! object each one applies, its child Kustomizations included.
//!
//! Where fluxwave differs from Flux today, the fixture's `known-differences.txt` holds the
//! difference line for line: the test fails when a difference appears and when one goes away,
//! so a fix removes its lines (`FLUXWAVE_DIFF_UPDATE=1` rewrites the files). Set
//! `FLUXWAVE_DIFF_ONLY=<layout>` to compare one fixture, `FLUXWAVE_DIFF_REPO=<folder>` to
//! compare another repository instead, and `FLUXWAVE_FLUX_ORACLE` to a built oracle; without
//! it the test builds one with `go build`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use fluxwave::testing::config::Config;
use fluxwave::testing::cutover::ObjectId;
use fluxwave::testing::flux::inventory::{build, environments, Environment, Inventory, Root};
use fluxwave::testing::tree::FileTree;
use serde_json::Value;

/// The fixture's list of the differences fluxwave has today (absent when none).
const KNOWN: &str = "known-differences.txt";
/// Folders to create in the copy, one a line: git keeps no empty folder.
const EMPTY_FOLDERS: &str = "empty-folders.txt";

/// A Kustomization as one side sees it.
#[derive(Debug, Default)]
struct Seen {
    /// `built`, `failed` or `other source`.
    status: &'static str,
    /// The error or the other source, for the reader.
    detail: String,
    objects: BTreeSet<String>,
}

type Side = BTreeMap<String, Seen>;

/// `Kind.group/namespace/name`, the group left out for the core group and the namespace for
/// cluster-scoped objects: both sides are printed this way.
fn display(group: &str, kind: &str, namespace: &str, name: &str) -> String {
    let kind = if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    };
    if namespace.is_empty() {
        format!("{kind}/{name}")
    } else {
        format!("{kind}/{namespace}/{name}")
    }
}

fn display_id(id: &ObjectId) -> String {
    display(&id.group, &id.kind, &id.namespace, &id.name)
}

/// The oracle's binary: `FLUXWAVE_FLUX_ORACLE`, or one built from `tools/flux-oracle` with
/// `go build` (Go's cache makes a second build instant). Never a silent skip: without Go the
/// test fails and says how to get the oracle.
fn oracle() -> &'static Path {
    static ORACLE: OnceLock<PathBuf> = OnceLock::new();
    ORACLE.get_or_init(|| {
        if let Some(bin) = std::env::var_os("FLUXWAVE_FLUX_ORACLE") {
            let bin = PathBuf::from(bin);
            assert!(
                bin.is_file(),
                "FLUXWAVE_FLUX_ORACLE={} is not a file; build it with `go build -o <dir> ./tools/flux-oracle` (see docs/testing.md)",
                bin.display()
            );
            return bin;
        }
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/flux-oracle");
        let bin = Path::new(env!("CARGO_TARGET_TMPDIR")).join("flux-oracle/flux-oracle");
        let how = "the differential test needs the Flux oracle: install Go (1.26 or later) and \
                   run it again, or build it with `cd tools/flux-oracle && go build -o DIR .` \
                   and set FLUXWAVE_FLUX_ORACLE=DIR/flux-oracle (docs/testing.md)";
        let out = Command::new("go")
            .args(["build", "-buildvcs=false", "-o"])
            .arg(&bin)
            .arg(".")
            .current_dir(&src)
            .output()
            .unwrap_or_else(|e| panic!("{how}\n(`go build` did not start: {e})"));
        assert!(
            out.status.success(),
            "{how}\n`go build` failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        bin
    })
}

/// Copies fixture `from` into `to`, leaving the test's own files out and creating the
/// folders of `empty-folders.txt`.
fn copy_fixture(from: &Path, to: &Path, top: bool) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if top && (name == KNOWN || name == EMPTY_FOLDERS) {
            continue;
        }
        let target = to.join(&name);
        if entry.file_type().unwrap().is_dir() {
            copy_fixture(&entry.path(), &target, false);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
    if top {
        if let Ok(list) = std::fs::read_to_string(from.join(EMPTY_FOLDERS)) {
            for dir in list.lines().map(str::trim).filter(|l| !l.is_empty()) {
                std::fs::create_dir_all(to.join(dir)).unwrap();
            }
        }
    }
}

/// Flux's side: the oracle run on environment `env` of the repository at `repo`, its
/// root read from the file that writes it (`flux-system/gotk-sync.yaml` as `flux bootstrap`
/// writes it, or another), else bootstrap's `flux-system` at the environment's path; the
/// sources of the roots nested in it are this repository too.
fn flux_side(repo: &Path, env: &Environment) -> Side {
    let env_path = env.path.as_str();
    let mut cmd = Command::new(oracle());
    cmd.arg("-repo").arg(repo).args(["-env", env_path]);
    // The root as written (bootstrap's sync file, or elsewhere); one the cluster makes is
    // built as bootstrap writes it.
    if let Root::Written { file, .. } = &env.root {
        cmd.args(["-root", file]);
    }
    for s in &env.nested {
        cmd.arg("-source")
            .arg(format!("{}/{}/{}", s.kind.as_str(), s.namespace, s.name));
    }
    let out = cmd.output().expect("the oracle runs");
    assert!(
        out.status.success(),
        "the oracle failed on {} {env_path}:\n{}",
        repo.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("the oracle prints JSON");
    let mut side = Side::new();
    for k in v["kustomizations"]
        .as_array()
        .expect("a list of Kustomizations")
    {
        let s = |key: &str| k[key].as_str().unwrap_or("").to_string();
        let (status, detail) = if !s("error").is_empty() {
            ("failed", s("error"))
        } else if !s("skipped").is_empty() {
            ("other source", s("skipped"))
        } else {
            ("built", String::new())
        };
        let objects = k["objects"]
            .as_array()
            .expect("a list of objects")
            .iter()
            .map(|o| {
                let parts: Vec<&str> = o.as_str().unwrap().splitn(4, '/').collect();
                display(parts[0], parts[1], parts[2], parts[3])
            })
            .collect();
        side.insert(
            format!("{}/{}", s("namespace"), s("name")),
            Seen {
                status,
                detail,
                objects,
            },
        );
    }
    side
}

/// fluxwave's side: every owner of the inventory with the objects it applies (those it
/// owns, those it applies after another owner, and its child Kustomizations).
fn fluxwave_side(inv: &Inventory) -> Side {
    let mut side = Side::new();
    for o in inv.owners.values() {
        // The oracle builds against an empty cluster: a `substituteFrom` source in no build
        // fails Flux's build there, where fluxwave builds it as a cluster that holds the
        // source would (`Variables::missing`).
        let in_cluster = o.reads.as_ref().is_some_and(|v| !v.missing.is_empty());
        let status = if o.built && !in_cluster {
            "built"
        } else if o.parent.is_some() && !inv.repository.contains(&o.source()) {
            "other source"
        } else {
            "failed"
        };
        let detail = inv
            .warnings
            .iter()
            .filter(|w| w.message.starts_with(&format!("{} ", o.id)))
            .map(|w| w.message.clone())
            .collect::<Vec<_>>()
            .join("; ");
        side.insert(
            format!("{}/{}", o.id.namespace, o.id.name),
            Seen {
                status,
                detail,
                objects: BTreeSet::new(),
            },
        );
    }
    let mut add = |owner: &ObjectId, id: &ObjectId| {
        if let Some(seen) = side.get_mut(&format!("{}/{}", owner.namespace, owner.name)) {
            seen.objects.insert(display_id(id));
        }
    };
    for (id, e) in inv
        .objects
        .iter()
        .chain(inv.duplicates.iter().map(|(i, e)| (i, e)))
    {
        add(&e.owner, id);
    }
    for o in inv.owners.values() {
        if let Some(parent) = &o.parent {
            add(parent, &o.id);
        }
    }
    side
}

/// `fluxwave build --env ENV` prints, Kustomization by Kustomization, the objects of the
/// inventory this test holds against Flux: the command shows what the oracle checks.
fn assert_build_prints(repo: &Path, env: &str, ours: &Side) {
    let out = crate::common::fluxwave()
        .arg("--repo")
        .arg(repo)
        .args(["build", "--env", env, "--format", "json"])
        .output()
        .unwrap();
    // 2 when a Kustomization fails to build; the rest is printed all the same.
    assert!(
        matches!(out.status.code(), Some(0 | 2)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("build prints JSON");
    let failed: BTreeSet<&str> = doc["failed"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["kustomization"].as_str())
        .collect();
    let mut printed: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for o in doc["objects"].as_array().unwrap() {
        let s = |k: &str| o[k].as_str().unwrap().to_string();
        let api = s("apiVersion");
        let group = api.rsplit_once('/').map_or("", |(g, _)| g);
        printed.entry(s("owner")).or_default().insert(display(
            group,
            &s("kind"),
            &s("namespace"),
            &s("name"),
        ));
    }
    for (name, seen) in ours {
        let empty = BTreeSet::new();
        let got = printed.remove(name);
        // A Kustomization whose build fails is listed as failed, none of its objects printed
        // (docs/build-diff.md), though the inventory keeps them for the lints.
        let want = if failed.contains(name.as_str()) {
            &empty
        } else {
            &seen.objects
        };
        assert_eq!(
            got.as_ref().unwrap_or(&empty),
            want,
            "{} {env} {name}: build prints other objects than the inventory holds",
            repo.display()
        );
    }
    assert!(
        printed.is_empty(),
        "{env}: build prints owners the inventory lacks: {printed:?}"
    );
}

/// The differences of one environment, one a line (what `known-differences.txt` holds), and
/// what each side said of the Kustomizations that differ; counts what it compared.
fn compare(env: &str, flux: &Side, ours: &Side, counts: &mut Counts) -> (Vec<String>, Vec<String>) {
    let (mut lines, mut context) = (Vec::new(), Vec::new());
    let names: BTreeSet<&String> = flux.keys().chain(ours.keys()).collect();
    for name in names {
        counts.kustomizations += 1;
        let (f, o) = match (flux.get(name), ours.get(name)) {
            (Some(f), Some(o)) => (f, o),
            (Some(_), None) => {
                lines.push(format!("{env} {name}: only Flux has this Kustomization"));
                continue;
            }
            (None, Some(_)) => {
                lines.push(format!(
                    "{env} {name}: only fluxwave has this Kustomization"
                ));
                continue;
            }
            (None, None) => unreachable!("a name of either side"),
        };
        let before = lines.len();
        if f.status != o.status {
            lines.push(format!(
                "{env} {name}: Flux: {}, fluxwave: {}",
                f.status, o.status
            ));
        }
        counts.objects += f.objects.union(&o.objects).count();
        for id in f.objects.difference(&o.objects) {
            lines.push(format!("{env} {name}: only Flux applies {id}"));
        }
        for id in o.objects.difference(&f.objects) {
            lines.push(format!("{env} {name}: only fluxwave applies {id}"));
        }
        if lines.len() > before {
            for (who, seen) in [("Flux", f), ("fluxwave", o)] {
                if !seen.detail.is_empty() {
                    context.push(format!("{env} {name}: {who} says: {}", seen.detail));
                }
            }
        }
    }
    (lines, context)
}

#[derive(Default)]
struct Counts {
    fixtures: usize,
    environments: usize,
    kustomizations: usize,
    objects: usize,
    /// The objects of Flux's side alone.
    flux_objects: usize,
}

/// The differences of every environment of the repository at `repo` (one line each, in
/// order) and what each side said of the Kustomizations that differ.
fn differences(name: &str, repo: &Path, counts: &mut Counts) -> (Vec<String>, Vec<String>) {
    let tree = FileTree::from_worktree_or_dir(repo).unwrap();
    let config = Config::load(repo).unwrap();
    let envs = environments(&[&tree], Some(&config), &[]);
    assert!(!envs.is_empty(), "{name}: fluxwave finds no environment");
    let (mut lines, mut context) = (Vec::new(), Vec::new());
    let built_before = counts.flux_objects;
    for e in &envs {
        let env = &e.name;
        counts.environments += 1;
        let flux = flux_side(repo, e);
        counts.flux_objects += flux.values().map(|k| k.objects.len()).sum::<usize>();
        let ours = fluxwave_side(&build(&tree, e));
        assert_build_prints(repo, env, &ours);
        let (l, c) = compare(env, &flux, &ours, counts);
        lines.extend(l);
        context.extend(c);
    }
    // A comparison of two empty sides would pass whatever fluxwave did.
    assert!(
        counts.flux_objects > built_before,
        "{name}: Flux builds no object in any environment, so nothing is compared"
    );
    (lines, context)
}

/// The message for `lines` that are not `known`: what is new and what went away.
fn mismatch(name: &str, lines: &[String], known: &[&str], context: &[String]) -> String {
    let mut msg = format!("{name}: fluxwave and Flux differ other than {KNOWN} says\n");
    for l in lines.iter().filter(|l| !known.contains(&l.as_str())) {
        msg.push_str(&format!("  new:  {l}\n"));
    }
    for k in known.iter().filter(|k| !lines.iter().any(|l| l == *k)) {
        msg.push_str(&format!("  gone: {k} (fixed? remove it from {KNOWN})\n"));
    }
    for c in context {
        msg.push_str(&format!("  {c}\n"));
    }
    msg
}

#[test]
fn fluxwave_builds_what_flux_builds() {
    // `FLUXWAVE_DIFF_REPO=<folder>` compares that repository (a clone, as it is on disk) in
    // place of the fixtures, every difference an error: to find what the next fixture holds.
    if let Some(repo) = std::env::var_os("FLUXWAVE_DIFF_REPO") {
        let repo = PathBuf::from(repo);
        let name = repo.display().to_string();
        let mut counts = Counts::default();
        let (lines, context) = differences(&name, &repo, &mut counts);
        eprintln!(
            "differential: {} environments, {} Kustomizations, {} objects compared",
            counts.environments, counts.kustomizations, counts.objects
        );
        assert!(
            lines.is_empty(),
            "{}",
            mismatch(&name, &lines, &[], &context)
        );
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/flux");
    let only = std::env::var("FLUXWAVE_DIFF_ONLY").ok();
    let update = std::env::var_os("FLUXWAVE_DIFF_UPDATE").is_some();
    let mut layouts: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name().into_string().unwrap())
        .filter(|l| only.as_deref().is_none_or(|o| o == l))
        .collect();
    layouts.sort();
    assert!(
        !layouts.is_empty(),
        "no fixture under {} is named {only:?}",
        root.display()
    );
    // The fixtures are compared side by side: most of the time is the oracle's builds.
    let compared: Vec<(Vec<String>, Vec<String>, Counts)> = std::thread::scope(|scope| {
        let handles: Vec<_> = layouts
            .iter()
            .map(|layout| {
                let fixture = root.join(layout);
                scope.spawn(move || {
                    let mut counts = Counts::default();
                    let copy = tempfile::tempdir().unwrap();
                    copy_fixture(&fixture, copy.path(), true);
                    let (lines, context) = differences(layout, copy.path(), &mut counts);
                    (lines, context, counts)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    let mut counts = Counts::default();
    let mut failures = Vec::new();
    for (layout, (lines, context, c)) in layouts.iter().zip(compared) {
        counts.fixtures += 1;
        counts.environments += c.environments;
        counts.kustomizations += c.kustomizations;
        counts.objects += c.objects;
        let fixture = root.join(layout);
        let known_path = fixture.join(KNOWN);
        let known_text = std::fs::read_to_string(&known_path).unwrap_or_default();
        let known: Vec<&str> = known_text
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .collect();
        if update {
            if lines.is_empty() {
                let _ = std::fs::remove_file(&known_path);
            } else {
                let header = "# Where fluxwave differs from Flux on this fixture today, one line a difference\n# (tests/cli/differential.rs): a fix removes its lines.\n";
                std::fs::write(&known_path, format!("{header}{}\n", lines.join("\n"))).unwrap();
            }
        } else if lines != known {
            failures.push(mismatch(layout, &lines, &known, &context));
        }
    }
    eprintln!(
        "differential: {} fixtures, {} environments, {} Kustomizations, {} objects compared",
        counts.fixtures, counts.environments, counts.kustomizations, counts.objects
    );
    assert!(
        failures.is_empty(),
        "{}\n(FLUXWAVE_DIFF_UPDATE=1 rewrites {KNOWN} once the change is meant)",
        failures.join("\n")
    );
}

/// The tables of `tests/fixtures/upstream` are the upstream libraries' answers: the oracle,
/// given a table (it reads only the input columns), writes it back unchanged. The unit
/// test beside each port holds fluxwave to the same table. To add a case, add its input
/// line and run `flux-oracle SUBCOMMAND < TABLE > TABLE.new`.
#[test]
fn upstream_tables_are_the_libraries_answers() {
    /// Each table with the oracle's subcommand that answers it.
    const UPSTREAM_TABLES: &[(&str, &str)] = &[
        ("json6902", "json6902.tsv"),
        ("envsubst", "envsubst.tsv"),
        ("semver", "semver.tsv"),
        ("ignore", "ignore.tsv"),
        ("replacements", "replacements.tsv"),
        ("kustomize", "generators.tsv"),
        ("kustomize", "namereference.tsv"),
        ("regexp", "regexp.tsv"),
    ];
    use std::io::Write;
    use std::process::Stdio;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/upstream");
    for (subcommand, file) in UPSTREAM_TABLES {
        let table = std::fs::read_to_string(dir.join(file)).unwrap();
        let mut child = Command::new(oracle())
            .arg(subcommand)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Written beside the reading, so neither side waits on a full pipe.
        let mut stdin = child.stdin.take().unwrap();
        let input = table.clone();
        let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap().unwrap();
        assert!(
            out.status.success(),
            "flux-oracle {subcommand}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let answers = String::from_utf8(out.stdout).unwrap();
        assert!(
            answers == table,
            "{file} is not what the library answers; write it again with `flux-oracle {subcommand} < {file}`:\n{}",
            answers
                .lines()
                .zip(table.lines())
                .filter(|(a, t)| a != t)
                .map(|(a, t)| format!("library: {a}\ntable:   {t}\n"))
                .collect::<String>()
        );
    }
}
