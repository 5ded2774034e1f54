//! Bad input: every case exits 2 with a located error and writes nothing.
//!
//! Each negative case is built on a repository that `apply` would otherwise change (a flat
//! app tier with its Flux wiring; see `apply_succeeds_on_the_valid_flat_repository`), so
//! "the repository is unchanged" proves the input was refused before anything was written.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::{Run, TestRepo};

/// A valid flat repository: each service with its catalog file and one manifest in `apps/`,
/// the flat `apps/kustomization.yaml` and the Flux wiring (base and dev environment).
fn flat_repo(services: &[(&str, &[&str])]) -> TestRepo {
    let repo = TestRepo::empty();
    for (name, deps) in services {
        repo.service(name, deps)
            .manifest(&format!("apps/{name}.yaml"));
    }
    repo.flat_kustomization().flux_wiring();
    repo
}

/// The minimal valid flat repository of the brief: `b` depends on `a`.
fn minimal() -> TestRepo {
    flat_repo(&[("a", &[]), ("b", &["a"])])
}

/// Every folder under the repository (the file snapshot does not show empty ones).
fn folders(repo: &TestRepo) -> BTreeSet<String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeSet<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                out.insert(
                    e.path()
                        .strip_prefix(root)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned(),
                );
                walk(root, &e.path(), out);
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(repo.path(), repo.path(), &mut out);
    out
}

/// Runs `args` on `repo`, asserts a bad-input refusal (exit 2, nothing on stdout, no panic)
/// and that no file or folder of the repository was created, changed or removed.
fn refused(repo: &TestRepo, args: &[&str]) -> Run {
    let files = repo.snapshot();
    let dirs = folders(repo);
    let run = repo.run(args);
    assert_eq!(
        run.code, 2,
        "fluxwave {args:?}: exit code\nstdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    assert!(
        run.stdout.is_empty(),
        "fluxwave {args:?}: nothing on stdout, got:\n{}",
        run.stdout
    );
    assert!(
        !run.stderr.contains("panicked"),
        "fluxwave {args:?} panicked:\n{}",
        run.stderr
    );
    assert!(
        repo.snapshot() == files,
        "fluxwave {args:?} changed the files of the repository"
    );
    assert_eq!(
        folders(repo),
        dirs,
        "fluxwave {args:?} changed the folders of the repository"
    );
    run
}

/// `apply` is refused, with the repository left byte-for-byte as it was.
fn apply_refused(repo: &TestRepo) -> Run {
    refused(repo, &["apply"])
}

#[track_caller]
fn has(run: &Run, text: &str) {
    assert!(
        run.stderr.contains(text),
        "stderr should contain {text:?}:\n{}",
        run.stderr
    );
}

#[track_caller]
fn lacks(run: &Run, text: &str) {
    assert!(
        !run.stderr.contains(text),
        "stderr should not contain {text:?}:\n{}",
        run.stderr
    );
}

/// miette's location header, `╭─[path:line:col]`.
#[track_caller]
fn located(run: &Run, at: &str) {
    has(run, &format!("╭─[{at}]"));
}

fn replace_in(repo: &TestRepo, rel: &str, from: &str, to: &str) {
    let text = repo.read(rel);
    assert!(text.contains(from), "{rel} should contain {from:?}");
    repo.write(rel, &text.replacen(from, to, 1));
}

// -- the positive control --------------------------------------------------------------------

#[test]
fn apply_succeeds_on_the_valid_flat_repository() {
    let repo = minimal();
    let before = repo.snapshot();
    let run = repo.run(&["apply"]);
    assert_eq!(
        run.code, 0,
        "stdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    assert!(repo.snapshot() != before, "apply changed nothing");
    assert!(repo.exists("apps/wave-0/a.yaml"));
    assert!(repo.exists("apps/wave-1/b.yaml"));
    assert!(!repo.exists("apps/a.yaml"));
    // Every other repository of this file is valid but for the one thing it breaks.
    for args in [&["waves"][..], &["plan"][..]] {
        let run = minimal().run(args);
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
    }
}

// -- catalog files ---------------------------------------------------------------------------

#[test]
fn malformed_yaml_in_a_catalog_file() {
    // An unclosed quote: a syntax error whatever the schema.
    let quote = minimal();
    replace_in(
        &quote,
        "catalog/b.yaml",
        "    tag: \"1.0.0\"\n",
        "    tag: \"1.0.0\n",
    );
    // The brief's example: a flow sequence left open where the spec mapping belongs.
    let unclosed = minimal();
    unclosed.write(
        "catalog/b.yaml",
        "apiVersion: fluxwave.dev/v1alpha1\nkind: ServiceDefinition\nmetadata:\n  name: b\nspec: [unclosed\n",
    );
    for (repo, at, message, repeated) in [
        (
            &quote,
            "catalog/b.yaml:10:10",
            "unclosed quote",
            "line 10 column 10",
        ),
        (
            &unclosed,
            "catalog/b.yaml:5:7",
            "expected a mapping",
            "line 5 column 7",
        ),
    ] {
        let run = apply_refused(repo);
        located(&run, at);
        has(&run, message);
        // The location is printed once, by the header, not repeated in the message.
        lacks(&run, repeated);
    }
}

#[test]
fn unknown_field_in_a_service_definition() {
    let repo = flat_repo(&[("jackett", &[]), ("sonarr", &["jackett"])]);
    replace_in(&repo, "catalog/sonarr.yaml", "  port: 8080", "  prot: 8080");
    let run = apply_refused(&repo);
    located(&run, "catalog/sonarr.yaml:11:3");
    has(&run, "unknown field `prot`");
    lacks(&run, "line 11 column 3");
    insta::assert_snapshot!("unknown_field", run.stderr);
}

#[test]
fn name_differs_from_the_file_name() {
    let repo = minimal();
    repo.write(
        "catalog/c.yaml",
        "apiVersion: fluxwave.dev/v1alpha1\nkind: ServiceDefinition\nmetadata:\n  name: cc\nspec:\n  image:\n    repository: ghcr.io/example/c\n    tag: \"1.0.0\"\n",
    );
    let run = apply_refused(&repo);
    located(&run, "catalog/c.yaml:4:9");
    has(&run, "metadata.name `cc` differs from the file name");
    has(
        &run,
        "help: rename the file to `cc.yaml`, or the service to `c`",
    );
}

#[test]
fn name_that_is_not_a_dns_label_never_reaches_a_path() {
    let repo = minimal();
    repo.manifest("apps/x.yaml").flat_kustomization();
    repo.write(
        "catalog/x.yaml",
        "apiVersion: fluxwave.dev/v1alpha1\nkind: ServiceDefinition\nmetadata:\n  name: ../x\nspec:\n  image:\n    repository: ghcr.io/example/x\n    tag: \"1.0.0\"\n",
    );
    let outside = repo.path().parent().unwrap().join("x.yaml");
    let existed = outside.exists();
    for args in [
        &["waves"][..],
        &["plan"][..],
        &["check"][..],
        &["apply", "--dry-run"][..],
        &["apply"][..],
    ] {
        let run = refused(&repo, args);
        located(&run, "catalog/x.yaml:4:9");
        has(&run, "`../x` is not a DNS-1123 label");
        has(
            &run,
            "help: a service name is 1-63 lower-case letters, digits and `-`",
        );
    }
    assert_eq!(
        outside.exists(),
        existed,
        "{} was created",
        outside.display()
    );
    let names: Vec<String> = repo.snapshot().into_keys().chain(folders(&repo)).collect();
    assert!(!names.iter().any(|n| n.contains("..")), "{names:?}");
}

#[test]
fn duplicate_service_names() {
    let repo = minimal();
    repo.write("catalog/a.yml", &repo.read("catalog/a.yaml"));
    let run = apply_refused(&repo);
    has(&run, "service `a` is also defined in catalog/a.yaml");
    has(&run, "help: keep one file per service: catalog/<name>.yaml");
    // Located at the second file's name.
    located(&run, "catalog/a.yml:4:9");
}

#[test]
fn unknown_dependency_with_a_suggestion() {
    let repo = flat_repo(&[("jackett", &[]), ("sonarr", &["jacket"])]);
    let run = apply_refused(&repo);
    located(&run, "catalog/sonarr.yaml:7:11");
    has(&run, "unknown dependency `jacket`");
    has(&run, "help: did you mean `jackett`?");
    insta::assert_snapshot!("unknown_dependency", run.stderr);
}

#[test]
fn unknown_dependency_far_from_every_name() {
    let repo = flat_repo(&[("jackett", &[]), ("sonarr", &["qbittorrent"])]);
    let run = apply_refused(&repo);
    located(&run, "catalog/sonarr.yaml:7:11");
    has(&run, "unknown dependency `qbittorrent`");
    has(
        &run,
        "help: name a catalog service, an extra unit of fluxwave.yaml, or a",
    );
    lacks(&run, "did you mean");
}

#[test]
fn dependency_cycle() {
    // c -> a -> b -> c. The depth-first search starts at `0-entry` (the first name), so it
    // enters the cycle at `c`; the cycle is still printed from `a`, the first of its nodes.
    let repo = flat_repo(&[
        ("0-entry", &["c"]),
        ("a", &["d", "b"]),
        ("b", &["c"]),
        ("c", &["a"]),
        ("d", &[]),
    ]);
    let run = apply_refused(&repo);
    has(&run, "dependency cycle: a -> b -> c -> a");
    // At a's dependency on b (its second, after d).
    located(&run, "catalog/a.yaml:8:11");
    has(
        &run,
        "help: a wave needs every dependency in a lower wave: remove one of these",
    );
    insta::assert_snapshot!("dependency_cycle", run.stderr);
}

#[test]
fn dependency_cycle_is_the_same_wherever_the_search_starts() {
    for (entry, target) in [
        ("0-entry", "a"),
        ("0-entry", "b"),
        ("0-entry", "c"),
        ("z-entry", "b"),
    ] {
        let repo = flat_repo(&[
            (entry, &[target]),
            ("a", &["b"]),
            ("b", &["c"]),
            ("c", &["a"]),
        ]);
        let run = apply_refused(&repo);
        has(&run, "dependency cycle: a -> b -> c -> a");
        located(&run, "catalog/a.yaml:7:11");
    }
}

// -- fluxwave.yaml ---------------------------------------------------------------------------

#[test]
fn unit_with_the_name_of_a_catalog_service() {
    let repo = minimal();
    repo.write("fluxwave.yaml", "units:\n  - name: a\n    anchor: b\n");
    let run = apply_refused(&repo);
    located(&run, "fluxwave.yaml:2:11");
    has(&run, "unit `a` has the name of a catalog service");
    has(
        &run,
        "help: rename the unit, or delete it and give catalog/a.yaml its",
    );
}

#[test]
fn unit_anchored_on_an_unknown_name() {
    let repo = flat_repo(&[("gitea", &[]), ("b", &["gitea"])]);
    repo.write(
        "fluxwave.yaml",
        "units:\n  - name: gitea-runner\n    anchor: gitae\n    above: true\n",
    );
    let run = apply_refused(&repo);
    located(&run, "fluxwave.yaml:3:13");
    has(&run, "unit `gitea-runner` anchors on unknown `gitae`");
    has(&run, "help: did you mean `gitea`?");
}

#[test]
fn unknown_field_in_fluxwave_yaml() {
    let repo = minimal();
    repo.write(
        "fluxwave.yaml",
        "apiVersion: fluxwave.dev/v1alpha1\nkind: Config\napss: apps\n",
    );
    let run = apply_refused(&repo);
    located(&run, "fluxwave.yaml:3:1");
    has(&run, "unknown field `apss`");
    lacks(&run, "line 3 column 1");
}

#[test]
fn apps_path_outside_the_repository() {
    let repo = minimal();
    repo.write(
        "fluxwave.yaml",
        "apiVersion: fluxwave.dev/v1alpha1\nkind: Config\napps: ../outside\n",
    );
    let run = apply_refused(&repo);
    located(&run, "fluxwave.yaml:3:7");
    has(&run, "`../outside` is not a path inside the repository");
    has(
        &run,
        "help: give a relative path without `..`, such as `clusters/dev`",
    );
    assert!(!repo
        .path()
        .parent()
        .unwrap()
        .join("outside")
        .join("wave-0")
        .exists());
}

// -- hostile YAML ----------------------------------------------------------------------------

/// "Billion laughs": 9 levels of anchors, each a list of 9 aliases of the previous one.
fn alias_bomb(indent: &str) -> String {
    let mut s = format!("{indent}l0: &l0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
    for i in 1..=9 {
        let refs = vec![format!("*l{}", i - 1); 9].join(",");
        s.push_str(&format!("{indent}l{i}: &l{i} [{refs}]\n"));
    }
    s
}

#[track_caller]
fn refused_quickly(repo: &TestRepo) -> Run {
    let start = Instant::now();
    let run = apply_refused(repo);
    let took = start.elapsed();
    assert!(took < Duration::from_secs(10), "took {took:?}");
    run
}

#[test]
fn alias_bomb_in_a_catalog_file() {
    let repo = minimal();
    let text = repo.read("catalog/b.yaml");
    repo.write("catalog/b.yaml", &format!("{text}{}", alias_bomb("  ")));
    let run = refused_quickly(&repo);
    has(&run, "[catalog/b.yaml:");
}

#[test]
fn alias_bomb_in_fluxwave_yaml_where_any_value_is_read() {
    // `waves.spec` takes any YAML, so here the aliases really are expanded: the budget stops it.
    let repo = minimal();
    repo.write(
        "fluxwave.yaml",
        &format!("waves:\n  spec:\n{}", alias_bomb("    ")),
    );
    let run = refused_quickly(&repo);
    has(&run, "[fluxwave.yaml:");
}

#[test]
fn absurd_nesting_in_a_catalog_file() {
    let repo = minimal();
    repo.write("catalog/c.yaml", &"[".repeat(100_000));
    let run = refused_quickly(&repo);
    // The line is too long to show: the location is printed without the snippet.
    has(&run, "catalog/c.yaml:1:");
    has(&run, "nested more than 64 levels deep");
    assert!(
        run.stderr.len() < 2_000,
        "{} bytes of stderr",
        run.stderr.len()
    );
}

#[test]
fn absurd_nesting_in_fluxwave_yaml() {
    let repo = minimal();
    repo.write("fluxwave.yaml", &format!("units: {}", "[".repeat(100_000)));
    let run = refused_quickly(&repo);
    has(&run, "fluxwave.yaml:1:");
    assert!(
        run.stderr.len() < 2_000,
        "{} bytes of stderr",
        run.stderr.len()
    );
}

/// The YAML reader's limits and complaints reach the user in the product's words, located
/// and with what to do: never as Rust debug text (`Nodes { nodes: 250001 }`) nor as advice
/// on the reader's API (`set DuplicateKeyPolicy in Options`, `use Option<String>`).
#[test]
fn reader_errors_name_the_place_and_what_to_do_in_the_products_words() {
    let leaks = [
        "budget breached",
        "{ ",
        "Options",
        "Option<",
        "from_str",
        "u16",
    ];
    let cases = [
        (
            "fluxwave.yaml",
            format!("waves:\n  spec:\n{}", alias_bomb("    ")),
            "[fluxwave.yaml:",
            "values (after aliases are expanded)",
        ),
        (
            "fluxwave.yaml",
            format!(
                "waves:\n  spec:\n    x: {}1{}\n",
                "[".repeat(100),
                "]".repeat(100)
            ),
            "[fluxwave.yaml:3:",
            "nested more than 64 levels deep",
        ),
        (
            "catalog/a.yaml",
            "apiVersion: fluxwave.dev/v1alpha1\nkind: ServiceDefinition\nmetadata:\n  name: a\n  name: a\nspec: {}\n".to_string(),
            "[catalog/a.yaml:5:3]",
            "key `name` appears twice in the same mapping",
        ),
        (
            "catalog/a.yaml",
            "apiVersion: fluxwave.dev/v1alpha1\nkind: ServiceDefinition\nmetadata:\n  name:\nspec: {}\n".to_string(),
            "[catalog/a.yaml:4:",
            "the field is empty",
        ),
        (
            "catalog/a.yaml",
            "apiVersion: fluxwave.dev/v1alpha1\nkind: ServiceDefinition\nmetadata:\n  name: a\nspec:\n  port: 70000\n".to_string(),
            "[catalog/a.yaml:6:9]",
            "expected a whole number from 0 to 65535",
        ),
    ];
    for (file, text, at, says) in cases {
        let repo = minimal();
        repo.write(file, &text);
        let run = refused_quickly(&repo);
        has(&run, at);
        has(&run, says);
        if !says.starts_with("expected") {
            has(&run, "help: ");
        }
        for leak in leaks {
            lacks(&run, leak);
        }
    }
}

#[test]
fn catalog_file_that_is_not_utf8() {
    let repo = minimal();
    std::fs::write(repo.path().join("catalog/c.yaml"), [0xff, 0xfe, b'\n']).unwrap();
    let run = apply_refused(&repo);
    has(&run, "catalog/c.yaml");
    has(&run, "UTF-8");
}

/// A catalog file that is not UTF-8 is named with the line, column and byte of its first
/// bad byte, by every command that reads the catalog; one in UTF-16 with a byte order mark
/// (which kustomize reads, and `check` read from its tree) is read by every command alike.
#[test]
fn a_catalog_file_that_is_not_utf8_names_its_first_bad_byte() {
    let commands = [
        &["waves"][..],
        &["plan"],
        &["apply"],
        &["check"],
        &["render", "catalog/a.yaml"],
    ];
    let repo = minimal();
    let mut bytes = b"# caf\xe9\n".to_vec();
    bytes.extend(repo.read("catalog/b.yaml").into_bytes());
    std::fs::write(repo.path().join("catalog/b.yaml"), bytes).unwrap();
    for args in commands {
        let run = refused(&repo, args);
        has(
            &run,
            "catalog/b.yaml:1:6: cannot be read as text: invalid trailing UTF-8 octet (byte 5)",
        );
    }
    let repo = minimal();
    let utf16: Vec<u8> = [0xFF, 0xFE]
        .into_iter()
        .chain(
            repo.read("catalog/b.yaml")
                .encode_utf16()
                .flat_map(u16::to_le_bytes),
        )
        .collect();
    std::fs::write(repo.path().join("catalog/b.yaml"), utf16).unwrap();
    for args in [&["waves"][..], &["check"]] {
        let run = repo.run(args);
        assert!(run.code == 0 || run.code == 1, "{args:?}: {}", run.stderr);
    }
    let run = repo.run(&["waves", "--format", "json"]);
    assert!(run.stdout.contains("\"b\""), "{}", run.stdout);
}

// -- the app tier ----------------------------------------------------------------------------

#[test]
fn app_tier_file_that_belongs_to_no_unit() {
    let repo = minimal();
    repo.manifest("apps/unknown-thing.yaml")
        .flat_kustomization();
    for args in [&["plan"][..], &["apply"][..]] {
        let run = refused(&repo, args);
        has(&run, "apps/unknown-thing.yaml: belongs to no unit");
        assert!(
            !run.stderr.contains("no wave would build"),
            "one problem, reported once: {}",
            run.stderr
        );
        has(&run, "help: name the file after its unit");
    }
}

#[test]
fn same_file_flat_and_in_a_wave_folder() {
    let repo = minimal();
    repo.manifest("apps/wave-0/a.yaml");
    let run = apply_refused(&repo);
    has(
        &run,
        "`a.yaml` is in more than one place: apps/a.yaml, apps/wave-0/a.yaml",
    );
    has(&run, "help: keep one copy of the file");
    // `a` has two manifests: no error may claim it has none.
    lacks(&run, "which has no manifest");
}

#[test]
fn placed_service_depending_on_one_without_a_manifest() {
    let repo = minimal();
    repo.remove("apps/a.yaml");
    repo.flat_kustomization();
    let run = apply_refused(&repo);
    has(
        &run,
        "`b` is placed but depends on `a`, which has no manifest",
    );
    has(
        &run,
        "help: commit the dependency's manifest, or remove the dependency",
    );
}

// -- the Flux wiring -------------------------------------------------------------------------

#[test]
fn base_kustomization_that_is_not_yaml_stops_apply_before_any_write() {
    let repo = minimal();
    replace_in(
        &repo,
        "clusters/base/kustomization.yaml",
        "  - apps.yaml\n",
        "  - [apps.yaml\n",
    );
    // Everything apply would do before reading the base (moves, wave folders) is held back.
    let run = apply_refused(&repo);
    located(&run, "clusters/base/kustomization.yaml:7:5");
    has(&run, "unclosed bracket '['");
    assert!(repo.exists("apps/a.yaml") && !repo.exists("apps/wave-0"));
}

#[test]
fn missing_environment_kustomization() {
    let repo = minimal();
    repo.remove("clusters/dev/kustomization.yaml");
    let run = apply_refused(&repo);
    has(&run, "clusters/dev/kustomization.yaml: not found");
    has(
        &run,
        "help: list your environments under clusters.environments in fluxwave.yaml",
    );
}

// -- usage -----------------------------------------------------------------------------------

#[test]
fn unknown_command() {
    let repo = minimal();
    let run = refused(&repo, &["bogus-command"]);
    has(&run, "bogus-command");
}

#[test]
fn unknown_format() {
    let repo = minimal();
    let run = refused(&repo, &["waves", "--format", "nope"]);
    has(&run, "nope");
    has(&run, "text, json, markdown, mermaid");
}

#[test]
fn a_catalog_link_is_never_followed() {
    let repo = minimal();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(
        outside.path().join("secret.yaml"),
        "apiVersion: fluxwave.dev/v1alpha1\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("secret.yaml"),
        repo.path().join("catalog/c.yaml"),
    )
    .unwrap();
    let run = refused(&repo, &["waves"]);
    has(
        &run,
        "catalog/c.yaml: is a symbolic link; fluxwave does not follow links",
    );
}

#[test]
fn a_repo_that_is_not_a_folder_is_bad_input_for_every_command() {
    let bin = env!("CARGO_BIN_EXE_fluxwave");
    let missing = std::env::temp_dir().join("fluxwave-no-such-repository");
    let commands: [&[&str]; 6] = [
        &["waves"],
        &["plan"],
        &["apply"],
        &["check"],
        &["cutover", "--from", "HEAD"],
        &["render", "catalog/a.yaml"],
    ];
    for args in commands {
        let out = std::process::Command::new(bin)
            .arg("--repo")
            .arg(&missing)
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("no such folder"), "{args:?}: {stderr}");
    }
    // `schema` reads no repository.
    let out = std::process::Command::new(bin)
        .arg("--repo")
        .arg(&missing)
        .arg("schema")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn a_full_or_closed_stderr_loses_the_message_not_the_exit_code() {
    // `eprintln!` panics (exit 101) when stderr cannot be written; the exit code must still
    // say what happened.
    let repo = minimal();
    repo.write("catalog/a.yaml", "kind: [\n");
    let bin = env!("CARGO_BIN_EXE_fluxwave");
    for args in [&["waves"][..], &["plan"], &["apply"]] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = std::process::Command::new(bin)
            .arg("--repo")
            .arg(repo.path())
            .args(args)
            .stderr(full)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}

#[test]
fn a_decryption_that_is_not_a_mapping_is_refused_where_it_is_written() {
    // Flux's `spec.decryption` is a mapping; a string or a list was taken as it was, and every
    // apply appended more patches that never matched (issue 14, item 15).
    for value in ["sops", "[]"] {
        let repo = minimal();
        repo.write("fluxwave.yaml", &format!("waves:\n  decryption: {value}\n"));
        let run = apply_refused(&repo);
        located(&run, "fluxwave.yaml:2:15");
    }
}

/// Every unknown field of a file is reported in one run, each at its own line (serde stops at
/// the first; fluxwave reads on past each), then the first problem of another kind; in
/// fluxwave.yaml as in a catalog file.
#[test]
fn every_unknown_field_of_a_file_is_reported_at_once() {
    let repo = minimal();
    let a = repo.read("catalog/a.yaml").replacen(
        "spec:\n",
        "spec:\n  bogus: 1\n  nested:\n    x: 1\n    y:\n    - z\n  # a comment\n  other: [1, 2]\n",
        1,
    ) + "  port: many\n";
    repo.write("catalog/a.yaml", &a);
    repo.write(
        "fluxwave.yaml",
        "apps: apps\nwavez: {}\nunitz:\n  - name: x\n",
    );
    let run = refused(&repo, &["waves"]);
    let located: Vec<&str> = run
        .stderr
        .lines()
        .filter_map(|l| l.trim().strip_prefix("╭─["))
        .collect();
    assert_eq!(
        located,
        ["fluxwave.yaml:2:1]", "fluxwave.yaml:3:1]"],
        "{}",
        run.stderr
    );
    repo.write("fluxwave.yaml", "apps: apps\n");
    let run = refused(&repo, &["waves"]);
    for field in ["bogus", "nested", "other"] {
        assert!(
            run.stderr.contains(&format!("unknown field `{field}`")),
            "{}",
            run.stderr
        );
    }
    assert!(run.stderr.contains("4 problems"), "{}", run.stderr);
}
