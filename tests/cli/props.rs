//! Property tests on random catalogs and repositories (modest case counts: they run in CI):
//! waves are longest paths, a cycle is always the cycle error and never a hang, `apply` keeps
//! every app-tier file byte for byte and converges in one run, and a revision compared with
//! itself deletes nothing.

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;

use fluxwave::testing::catalog;
use fluxwave::testing::config::Config;
use fluxwave::testing::graph::Graph;
use fluxwave::testing::tree::FileTree;

use crate::common::TestRepo;

fn name(i: usize) -> String {
    format!("svc{i}")
}

fn service_text(i: usize, deps: &[usize]) -> String {
    let deps: String = deps
        .iter()
        .map(|d| format!("    - to: {}\n", name(*d)))
        .collect();
    let deps = if deps.is_empty() {
        String::new()
    } else {
        format!("  dependencies:\n{deps}")
    };
    format!("apiVersion: fluxwave.dev/v1alpha1\nkind: ServiceDefinition\nmetadata:\n  name: {n}\nspec:\n{deps}  image:\n    repository: ghcr.io/example/{n}\n    tag: \"1.0.0\"\n  port: 8080\n", n = name(i))
}

/// A random acyclic catalog: service i depends only on services below i.
fn acyclic() -> impl Strategy<Value = Vec<Vec<usize>>> {
    (1usize..14).prop_flat_map(|n| {
        (0..n)
            .map(|i| {
                if i == 0 {
                    Just(vec![]).boxed()
                } else {
                    proptest::sample::subsequence((0..i).collect::<Vec<_>>(), 0..=i.min(3)).boxed()
                }
            })
            .collect::<Vec<_>>()
    })
}

fn graph(deps: &[Vec<usize>]) -> fluxwave::testing::error::Result<Graph> {
    let services: Vec<_> = deps
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let path = format!("catalog/{}.yaml", name(i));
            catalog::parse(&path, &name(i), Arc::new(service_text(i, d))).unwrap()
        })
        .collect();
    Graph::build(&services, &Config::default())
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100000001b3)
    })
}

/// The app tier's manifests as a multiset of (length, hash).
fn app_tier(repo: &TestRepo) -> BTreeMap<(usize, u64), usize> {
    let mut out = BTreeMap::new();
    for (path, bytes) in repo.snapshot() {
        let file = path.rsplit('/').next().unwrap_or("");
        if path.starts_with("apps/") && file.ends_with(".yaml") && file != "kustomization.yaml" {
            *out.entry((bytes.len(), fnv(&bytes))).or_insert(0) += 1;
        }
    }
    out
}

fn tree_of(repo: &TestRepo) -> FileTree {
    let files: Vec<(String, String)> = repo
        .snapshot()
        .into_iter()
        .filter_map(|(p, b)| Some((p, String::from_utf8(b).ok()?)))
        .collect();
    FileTree::from_files(files.iter().map(|(p, t)| (p.as_str(), t.as_str())))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn a_wave_is_one_above_the_highest_dependency(deps in acyclic()) {
        let g = graph(&deps).unwrap();
        for (i, d) in deps.iter().enumerate() {
            let wave = |n: &str| g.nodes[g.index[n]].wave;
            let expected = d.iter().map(|&j| wave(&name(j)) + 1).max().unwrap_or(0);
            prop_assert_eq!(wave(&name(i)), expected, "{}", name(i));
        }
    }

    #[test]
    fn a_cycle_is_always_the_cycle_error(deps in acyclic(), back in any::<proptest::sample::Index>()) {
        // Close a cycle: the lowest service depends on one that (transitively) may depend on
        // it, or on itself.
        let mut deps = deps;
        let target = back.index(deps.len());
        deps[0].push(target);
        if target != 0 {
            // Make sure `target` reaches 0: chain it down.
            for (i, d) in deps.iter_mut().enumerate().take(target + 1).skip(1) {
                if !d.contains(&(i - 1)) {
                    d.push(i - 1);
                }
            }
        }
        let err = graph(&deps).err().map(|e| e.to_string()).unwrap_or_default();
        prop_assert!(err.contains("dependency cycle"), "{}", err);
    }
}

proptest! {
    // Each case builds a repository and runs the binary: few cases.
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    #[test]
    fn apply_keeps_every_file_and_converges(deps in acyclic(), extra in proptest::collection::vec(0usize..14, 0..6)) {
        let repo = TestRepo::empty();
        for (i, d) in deps.iter().enumerate() {
            repo.write(&format!("catalog/{}.yaml", name(i)), &service_text(i, d));
            repo.manifest(&format!("apps/{}.yaml", name(i)));
        }
        for (k, e) in extra.iter().enumerate() {
            let owner = name(e % deps.len());
            repo.write(&format!("apps/{owner}-extra{k}.sops.yaml"), &format!("apiVersion: v1\nkind: Secret\nmetadata: {{name: {owner}-extra{k}, namespace: default}}\nsops: {{version: 3.8.1}}\nk: {k}\n"));
        }
        repo.flat_kustomization().flux_wiring();
        let before = app_tier(&repo);
        let tree = tree_of(&repo);
        let same = fluxwave::testing::cutover::compare(&tree, &tree, None, "same").unwrap();
        prop_assert!(same.deletions.is_empty(), "{:?}", same.deletions);

        let first = repo.run(&["apply"]);
        prop_assert_eq!(first.code, 0, "{}", first.stderr);
        prop_assert_eq!(app_tier(&repo), before);
        let snapshot = repo.snapshot();
        let second = repo.run(&["apply"]);
        prop_assert_eq!(second.code, 0, "{}", second.stderr);
        prop_assert!(second.stdout.contains("nothing to change"), "{}", second.stdout);
        prop_assert!(repo.snapshot() == snapshot, "the second apply changed bytes");
        let check = repo.run(&["check"]);
        prop_assert_eq!(check.code, 0, "{}", check.stdout);

        let tree = tree_of(&repo);
        let same = fluxwave::testing::cutover::compare(&tree, &tree, None, "same").unwrap();
        prop_assert!(same.deletions.is_empty(), "{:?}", same.deletions);
        // And on git revisions through the CLI.
        repo.commit_all("waved");
        let cut = repo.run(&["cutover", "--from", "HEAD", "--to", "HEAD"]);
        prop_assert_eq!(cut.code, 0, "{}", cut.stdout);
    }
}
