//! Nothing a repository holds drives the reader's terminal: file names, catalog and object
//! names, snippets and messages with escape sequences (a screen clear, an OSC 52 clipboard
//! write), C1 controls or bidirectional overrides reach stdout and stderr escaped, in every
//! command and format, and JSON output stays valid JSON that decodes to the same names.

use crate::common::{Run, TestRepo};

/// The characters no output may hold raw.
fn raw_control(s: &str) -> Option<char> {
    s.chars().find(|&c| {
        (c.is_control() && c != '\n' && c != '\t')
            || ('\u{202a}'..='\u{202e}').contains(&c)
            || ('\u{2066}'..='\u{2069}').contains(&c)
    })
}

/// Runs fluxwave and reads its output as bytes made text without replacing anything.
fn run(repo: &TestRepo, args: &[&str]) -> Run {
    let out = crate::common::fluxwave()
        .arg("--repo")
        .arg(repo.path())
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(out.stderr).expect("stderr is UTF-8"),
    }
}

#[track_caller]
fn assert_escaped(what: &str, run: &Run) {
    for (stream, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        assert!(
            !text.contains("panicked"),
            "{what} panicked:\n{}",
            run.stderr
        );
        if let Some(c) = raw_control(text) {
            panic!("{what}: {stream} holds {c:?} raw:\n{}", text.escape_debug());
        }
    }
}

/// The hostile names: a screen clear, an OSC 52 clipboard write, a C1 CSI, a right-to-left
/// override, a first-strong isolate and DEL.
const NAMES: &[&str] = &[
    "api-\u{1b}[2J\u{1b}[H.yaml",
    "api-\u{1b}]52;c;aGVsbG8=\u{7}.yaml",
    "api-\u{9b}31m.yaml",
    "api-\u{202e}lmay.txt.yaml",
    "web-\u{2068}x\u{7f}.yaml",
];

/// `name` as a YAML double-quoted scalar, every control character as an escape.
fn quoted(name: &str) -> String {
    let inner: String = name
        .chars()
        .map(|c| match raw_control(&c.to_string()) {
            Some(c) => format!("\\u{:04X}", c as u32),
            None if c == '\n' => "\\n".to_string(),
            None => c.to_string(),
        })
        .collect();
    format!("\"{inner}\"")
}

fn hostile() -> TestRepo {
    let repo = TestRepo::empty();
    repo.service("api", &[])
        .service("web", &["api"])
        .flux_wiring();
    repo.manifest("apps/api.yaml").manifest("apps/web.yaml");
    // An object whose name holds an override, written with YAML's escapes.
    repo.write(
        "apps/api-names.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: \"evil\\u202Eeman\\e[2J\"\n  namespace: default\n",
    );
    repo.flat_kustomization();
    repo.commit_all("flat");
    for (i, name) in NAMES.iter().enumerate() {
        repo.write(
            &format!("apps/{name}"),
            &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hostile-{i}\n  namespace: default\n"),
        );
    }
    // The object leaves the build (cutover names it), the files join it, listed with
    // YAML's escapes.
    repo.remove("apps/api-names.yaml");
    let list: String = ["api.yaml", "web.yaml"]
        .iter()
        .chain(NAMES)
        .map(|n| format!("  - {}\n", quoted(n)))
        .collect();
    repo.write(
        "apps/kustomization.yaml",
        &format!(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n{list}"
        ),
    );
    repo
}

#[test]
fn hostile_file_and_object_names_reach_no_terminal_raw() {
    let repo = hostile();
    let commands: &[&[&str]] = &[
        &["waves"],
        &["waves", "--format", "json"],
        &["waves", "--format", "markdown"],
        &["waves", "--format", "mermaid"],
        &["plan"],
        &["plan", "--format", "json"],
        &["check"],
        &["check", "--format", "json"],
        &["check", "--format", "github"],
        &["check", "--base", "HEAD"],
        &["cutover", "--from", "HEAD"],
        &["cutover", "--from", "HEAD", "--format", "json"],
        &["build"],
        &["build", "--format", "json"],
        &["apply", "--dry-run"],
        &["apply"],
        &["check"],
        &["diff", "--from", "HEAD"],
        &["diff", "--from", "HEAD", "--format", "json"],
        &["diff", "--from", "HEAD", "--format", "github"],
    ];
    for args in commands {
        let r = run(&repo, args);
        assert_escaped(&format!("fluxwave {}", args.join(" ")), &r);
        if args.contains(&"json") {
            let doc: serde_json::Value = serde_json::from_str(&r.stdout).unwrap_or_else(|e| {
                panic!("{args:?}: not JSON ({e}):\n{}\n{}", r.stdout, r.stderr)
            });
            assert!(doc.is_object(), "{args:?}");
        }
    }
    // The names are shown, escaped, not left out.
    let plan = run(&repo, &["plan", "--format", "json"]);
    assert!(
        plan.stdout.contains("api-\\u001b[2J\\u001b[H.yaml"),
        "{}",
        plan.stdout
    );
    let plan_text = run(&repo, &["plan"]);
    assert!(
        plan_text.stdout.contains("api-\\u202elmay.txt.yaml"),
        "{}",
        plan_text.stdout
    );
    // JSON decodes back to the names as they are on disk.
    let doc: serde_json::Value = serde_json::from_str(&plan.stdout).unwrap();
    let files: Vec<&str> = doc["waves"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|w| w["files"].as_array().unwrap())
        .map(|f| f["file"].as_str().unwrap())
        .collect();
    for name in NAMES {
        assert!(files.contains(name), "{name:?} not in {files:?}");
    }
}

#[test]
fn the_deleted_object_name_is_escaped_in_cutover() {
    let repo = hostile();
    let text = run(&repo, &["cutover", "--from", "HEAD"]);
    assert_escaped("cutover", &text);
    assert!(
        text.stdout.contains("evil\\u202eeman\\u001b[2J"),
        "{}",
        text.stdout
    );
    let json = run(&repo, &["cutover", "--from", "HEAD", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let names: Vec<&str> = doc["deletions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"evil\u{202e}eman\u{1b}[2J"), "{names:?}");
}

#[test]
fn snippets_and_messages_of_bad_input_are_escaped() {
    // A catalog file with raw control characters (YAML refuses them: the snippet shows the
    // line), one with an override on a line with an error, and a name that is no DNS label.
    let cases: &[(&str, &str)] = &[
        (
            "  port: 8080\n",
            "  port: \"\u{1b}]52;c;aGk=\u{7}\u{1b}[2J\"\n",
        ),
        ("  port: 8080\n", "  port: [8080 \u{202e}\u{9b}2J\n"),
        ("  name: api\n", "  name: \"api\u{1b}[2J\u{202e}\"\n"),
    ];
    for (from, to) in cases {
        let repo = TestRepo::empty();
        repo.service("api", &[]).flux_wiring();
        repo.manifest("apps/api.yaml").flat_kustomization();
        let api = repo.read("catalog/api.yaml").replace(from, to);
        repo.write("catalog/api.yaml", &api);
        for args in [
            &["waves"][..],
            &["plan"],
            &["check"],
            &["check", "--format", "json"],
        ] {
            let r = run(&repo, args);
            assert_eq!(r.code, 2, "{to:?}: {args:?}\n{}\n{}", r.stdout, r.stderr);
            assert_escaped(&format!("{to:?}: fluxwave {}", args.join(" ")), &r);
            assert!(r.stderr.contains("catalog/api.yaml"), "{}", r.stderr);
        }
    }
}

/// The command line's own errors quote the arguments they refuse: escaped as well.
#[test]
fn refused_arguments_are_escaped() {
    let repo = TestRepo::empty();
    for args in [
        &["check", "--format", "\u{9b}2J\u{202e}x"][..],
        &["check", "--env", "a\u{202e}\u{9b}=clusters/a"],
        &[
            "cutover",
            "--from",
            "HEAD",
            "--env",
            "\u{1b}]52;c;aGk=\u{7}=clusters/a",
        ],
    ] {
        let r = run(&repo, args);
        assert_eq!(r.code, 2, "{args:?}\n{}", r.stderr);
        assert_escaped(&format!("fluxwave {args:?}"), &r);
        assert!(r.stderr.contains("\\u"), "{}", r.stderr);
    }
}

/// A file name with a line break cannot forge a GitHub Actions workflow command in a CI log
/// (`check --format github` escapes line breaks in its own commands).
#[test]
fn a_file_name_cannot_forge_a_workflow_command() {
    let repo = TestRepo::empty();
    repo.service("api", &[]).flux_wiring();
    repo.manifest("apps/api.yaml");
    let forged = "api-x\n::add-mask::hidden\n::error file=a::forged\n.yaml";
    repo.write(
        &format!("apps/{forged}"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: forged\n  namespace: default\n",
    );
    repo.write(
        "apps/kustomization.yaml",
        &format!("resources:\n  - api.yaml\n  - {}\n", quoted(forged)),
    );
    repo.commit_all("forged");
    for args in [
        &["plan"][..],
        &["waves", "--format", "markdown"],
        &["check"],
        &["check", "--format", "github"],
        &["apply", "--dry-run"],
        &["cutover", "--from", "HEAD"],
    ] {
        let r = run(&repo, args);
        for line in r.stdout.lines().chain(r.stderr.lines()) {
            let line = line.trim_start();
            let ours = args == ["check", "--format", "github"]
                && [
                    "::error file=",
                    "::warning file=",
                    "::error title=",
                    "::warning title=",
                ]
                .iter()
                .any(|p| line.starts_with(p));
            assert!(
                !line.starts_with("::") || ours,
                "fluxwave {args:?} prints a workflow command: {line}\n{}",
                r.stdout
            );
        }
    }
    let plan = run(&repo, &["plan"]);
    assert!(
        plan.stdout.contains("\\u003a:add-mask::hidden"),
        "{}\n{}",
        plan.stdout,
        plan.stderr
    );
}
