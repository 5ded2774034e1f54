//! `apply` on generated repositories, in either topology, that carry random hostile shapes: links, stray files
//! beside the ones apply writes, odd encodings and extra kustomization files. Whatever the
//! shapes, apply either refuses (exit 2) and changes nothing, or succeeds and then: no file
//! outside the app tier and the wiring apply owns has changed, every app-tier file is still
//! there byte for byte, no link was read through or moved, and a second apply changes nothing.

use std::collections::BTreeMap;
use std::path::Path;

use proptest::prelude::*;

use crate::common::TestRepo;

/// One hostile shape: what it adds to a freshly generated repository.
#[derive(Clone, Copy, Debug)]
enum Shape {
    /// A wave folder that is a link to a hand-kept folder outside the app tier.
    WaveLinkedOutside,
    /// The app tier's own folder reached through a link inside it.
    LinkedManifestInApps,
    /// A link in an environment folder to a folder outside it.
    LinkInEnvironment,
    /// A user's file whose name looks like a temporary of a file apply writes.
    BackupBesideEnvironment,
    /// A stale wave folder that holds a README and a `.gitkeep`.
    StaleWaveWithReadme,
    /// A wave folder that already has a `kustomization.yml`.
    WaveKustomizationYml,
    /// `apps/Kustomization` beside `apps/kustomization.yaml`.
    SecondAppsKustomization,
    /// A Latin-1 comment in a hand-kept file outside the app tier.
    Latin1Outside,
    /// A UTF-16 file outside the app tier.
    Utf16Outside,
    /// A file in the app tier that is not YAML.
    NotesInApps,
    /// A Flux Kustomization of another repository whose path is also `./apps`.
    ForeignAppsKustomization,
    /// A patch of the single `apps` Kustomization that is not its decryption.
    TimeoutPatchOfApps,
    /// A unit's folder that is a link to a hand-kept folder outside the app tier.
    UnitLinkedOutside,
    /// A folder of the app tier named after no unit, with manifests and a kustomization.
    ForeignFolderInApps,
}

const SHAPES: [Shape; 14] = [
    Shape::WaveLinkedOutside,
    Shape::LinkedManifestInApps,
    Shape::LinkInEnvironment,
    Shape::BackupBesideEnvironment,
    Shape::StaleWaveWithReadme,
    Shape::WaveKustomizationYml,
    Shape::SecondAppsKustomization,
    Shape::Latin1Outside,
    Shape::Utf16Outside,
    Shape::NotesInApps,
    Shape::ForeignAppsKustomization,
    Shape::TimeoutPatchOfApps,
    Shape::UnitLinkedOutside,
    Shape::ForeignFolderInApps,
];

fn name(i: usize) -> String {
    format!("svc{i}")
}

fn link(repo: &TestRepo, target: &str, rel: &str) {
    let p = repo.path().join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(target, p).unwrap();
}

fn add(repo: &TestRepo, shape: Shape) {
    match shape {
        Shape::WaveLinkedOutside => link(repo, "../platform-config", "apps/wave-1"),
        Shape::LinkedManifestInApps => link(
            repo,
            "../platform-config/cluster-vars.yaml",
            "apps/linked.yaml",
        ),
        Shape::LinkInEnvironment => link(repo, "../../platform-config", "clusters/dev/shared"),
        Shape::BackupBesideEnvironment => {
            repo.write(
                "clusters/dev/.kustomization.yaml.backup",
                "# my own copy, kept by hand\nresources: []\n",
            );
        }
        Shape::StaleWaveWithReadme => {
            repo.write("apps/wave-9/README.md", "# notes about wave 9\n")
                .write("apps/wave-9/.gitkeep", "");
        }
        Shape::WaveKustomizationYml => {
            repo.write(
                "apps/wave-0/kustomization.yml",
                "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n",
            );
        }
        Shape::SecondAppsKustomization => {
            repo.write(
                "apps/Kustomization",
                "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n",
            );
        }
        Shape::Latin1Outside => {
            let p = repo.path().join("platform-config/notes.yaml");
            std::fs::write(p, b"# caf\xe9 notes\nkey: value\n").unwrap();
        }
        Shape::Utf16Outside => {
            let text = "# wide\nkey: value\n";
            let mut bytes = vec![0xff, 0xfe];
            bytes.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
            std::fs::write(repo.path().join("platform-config/wide.yaml"), bytes).unwrap();
        }
        Shape::NotesInApps => {
            repo.write("apps/NOTES.md", "what lives here\n");
        }
        Shape::ForeignAppsKustomization => {
            repo.write(
                "clusters/base/vendor-apps.yaml",
                "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: vendor-apps\n  namespace: flux-system\nspec:\n  interval: 1h\n  path: ./apps\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: vendor\n",
            );
            let base = repo.read("clusters/base/kustomization.yaml");
            repo.write(
                "clusters/base/kustomization.yaml",
                &format!("{base}  - vendor-apps.yaml\n"),
            );
        }
        Shape::UnitLinkedOutside => link(repo, "../platform-config", "apps/svc1"),
        Shape::ForeignFolderInApps => {
            repo.write(
                "apps/legacy/kustomization.yaml",
                "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - legacy.yaml\n",
            )
            .manifest("apps/legacy/legacy.yaml");
        }
        Shape::TimeoutPatchOfApps => {
            let dev = repo.read("clusters/dev/kustomization.yaml");
            repo.write(
                "clusters/dev/kustomization.yaml",
                &format!("{dev}  - patch: |-\n      apiVersion: kustomize.toolkit.fluxcd.io/v1\n      kind: Kustomization\n      metadata:\n        name: apps\n        namespace: flux-system\n      spec:\n        timeout: 10m\n"),
            );
        }
    }
}

/// A repository of `deps.len()` services in the flat layout, with the shapes added, split
/// into one Kustomization per unit when `units`, else into waves.
fn repository(deps: &[Vec<usize>], shapes: &[Shape], units: bool) -> TestRepo {
    let repo = TestRepo::empty();
    if units {
        repo.write("fluxwave.yaml", "topology: units\n");
    }
    for (i, d) in deps.iter().enumerate() {
        let names: Vec<String> = d.iter().map(|&j| name(j)).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        repo.service(&name(i), &names);
        repo.manifest(&format!("apps/{}.yaml", name(i)));
    }
    repo.flat_kustomization().flux_wiring();
    for &s in shapes {
        add(&repo, s);
    }
    repo.commit_all("hostile");
    repo
}

/// Whether `rel` is a file apply may write: the app tier and the Flux wiring it keeps.
fn owned(rel: &str) -> bool {
    rel.starts_with("apps/")
        || rel == "clusters/base/kustomization.yaml"
        || rel == "clusters/base/apps.yaml"
        || (rel.starts_with("clusters/base/apps-") && rel.ends_with(".yaml"))
        || rel == "clusters/dev/kustomization.yaml"
}

fn is_kustomization_file(rel: &str) -> bool {
    matches!(
        rel.rsplit('/').next(),
        Some("kustomization.yaml" | "kustomization.yml" | "Kustomization")
    )
}

/// The app tier's files other than kustomization files, as a multiset of contents (a link
/// is recorded as where it points).
fn app_files(snapshot: &BTreeMap<String, Vec<u8>>) -> BTreeMap<Vec<u8>, usize> {
    let mut out = BTreeMap::new();
    for (rel, bytes) in snapshot {
        if rel.starts_with("apps/") && !is_kustomization_file(rel) {
            *out.entry(bytes.clone()).or_insert(0) += 1;
        }
    }
    out
}

fn links(snapshot: &BTreeMap<String, Vec<u8>>, root: &Path) -> Vec<String> {
    snapshot
        .keys()
        .filter(|rel| {
            std::fs::symlink_metadata(root.join(rel)).is_ok_and(|m| m.file_type().is_symlink())
        })
        .cloned()
        .collect()
}

fn acyclic() -> impl Strategy<Value = Vec<Vec<usize>>> {
    (2usize..8).prop_flat_map(|n| {
        (0..n)
            .map(|i| {
                if i == 0 {
                    Just(vec![]).boxed()
                } else {
                    proptest::sample::subsequence((0..i).collect::<Vec<_>>(), 0..=i.min(2)).boxed()
                }
            })
            .collect::<Vec<_>>()
    })
}

fn shapes() -> impl Strategy<Value = Vec<Shape>> {
    proptest::sample::subsequence(SHAPES.to_vec(), 1..=5)
}

/// Applies twice and says what went wrong, if anything; else whether apply refused (exit 2).
fn judge(deps: &[Vec<usize>], shapes: &[Shape], units: bool) -> Result<bool, String> {
    let repo = repository(deps, shapes, units);
    let before = repo.snapshot();
    let links_before = links(&before, repo.path());

    let first = repo.run(&["apply"]);
    let after = repo.snapshot();
    if first.code != 0 && first.code != 2 {
        return Err(format!(
            "apply exited {}\n{}{}",
            first.code, first.stdout, first.stderr
        ));
    }
    if first.code == 2 {
        if after != before {
            return Err(format!("a refused apply changed files\n{}", first.stderr));
        }
        if first.stderr.trim().is_empty() {
            return Err("a refusal that does not say why".into());
        }
        return Ok(true);
    }

    // Nothing outside what apply owns changed, came or went.
    for (rel, bytes) in &before {
        if !owned(rel) && after.get(rel) != Some(bytes) {
            return Err(format!("{rel} changed or went\n{}", first.stdout));
        }
    }
    if let Some(rel) = after
        .keys()
        .find(|rel| !owned(rel) && !before.contains_key(*rel))
    {
        return Err(format!("{rel} appeared\n{}", first.stdout));
    }
    // Every app-tier file is still in the app tier, byte for byte, and every link stays
    // where it was, pointing where it did.
    if app_files(&after) != app_files(&before) {
        return Err(format!("app-tier files changed\n{}", first.stdout));
    }
    if let Some(rel) = links_before
        .iter()
        .find(|rel| after.get(*rel) != before.get(*rel))
    {
        return Err(format!("link {rel} moved or changed\n{}", first.stdout));
    }

    // The environment and every folder of the app tier that holds a kustomization build with
    // kustomize (they all did before).
    let folders: std::collections::BTreeSet<&str> = after
        .keys()
        .filter(|rel| rel.starts_with("apps/") && is_kustomization_file(rel))
        .filter_map(|rel| rel.rsplit_once('/').map(|(dir, _)| dir))
        .chain(["clusters/dev"])
        .collect();
    for dir in folders {
        let out = std::process::Command::new("kubectl")
            .arg("kustomize")
            .arg(repo.path().join(dir))
            .output()
            .unwrap();
        if !out.status.success() {
            return Err(format!(
                "{dir} no longer builds: {}\n{}",
                String::from_utf8_lossy(&out.stderr),
                first.stdout
            ));
        }
    }

    let second = repo.run(&["apply"]);
    if second.code != 0 || !second.stdout.contains("nothing to change") {
        return Err(format!(
            "the second apply did not converge (exit {})\n{}{}",
            second.code, second.stdout, second.stderr
        ));
    }
    if repo.snapshot() != after {
        return Err("the second apply changed bytes".into());
    }
    Ok(false)
}

/// The shapes apply refuses on their own: a folder of the topology's groups that is a link
/// (apply never writes through one: a wave's under waves, a unit's under units; the other is a
/// foreign entry, left alone), and a folder of two kustomization files (kustomize refuses
/// it). Every other shape is applied around.
fn refused_alone(shape: Shape, units: bool) -> bool {
    match shape {
        Shape::WaveLinkedOutside => !units,
        Shape::UnitLinkedOutside => units,
        Shape::SecondAppsKustomization => true,
        _ => false,
    }
}

#[test]
fn every_hostile_shape_alone_is_refused_or_kept_and_converges() {
    let deps = vec![vec![], vec![0], vec![1], vec![0]];
    let failures: Vec<String> = [false, true]
        .into_iter()
        .flat_map(|units| SHAPES.iter().map(move |&s| (s, units)))
        .filter_map(|(s, units)| match judge(&deps, &[s], units) {
            Err(e) => Some(format!("{s:?} (units: {units}): {e}")),
            Ok(refused) if refused != refused_alone(s, units) => Some(format!(
                "{s:?} (units: {units}): refused {refused}, expected {}",
                refused_alone(s, units)
            )),
            Ok(_) => None,
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

proptest! {
    // Each case builds a git repository and runs the binary a few times: few cases.
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn apply_on_hostile_shapes_refuses_or_keeps_every_file_and_converges(
        deps in acyclic(),
        shapes in shapes(),
        units in proptest::bool::ANY,
    ) {
        let verdict = judge(&deps, &shapes, units);
        prop_assert!(verdict.is_ok(), "on {:?}: {}", shapes, verdict.unwrap_err());
    }
}
