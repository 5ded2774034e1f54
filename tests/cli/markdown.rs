//! The markdown fluxwave prints for GitHub (`diff --format github` and its error, `waves
//! --format markdown`, `blast --format markdown`), on repositories whose objects, files,
//! Kustomizations, namespaces, environments, Secret keys and revisions have hostile names,
//! read back with a GFM parser (comrak): no name makes an HTML element, a link, an image or
//! emphasis, leaves its table cell or row, or ends a code block or `<details>` early; every
//! name stands whole in a code span or block, where GitHub links no mention or reference.

use comrak::nodes::NodeValue;

use crate::common::{Run, TestRepo};

/// Names that break out of a hand-made code span, a table cell or a line.
const OBJECT: &str = "x`<img src=x onerror=alert(1)>`y";
const DETAILS: &str = "</details><!--@someone #1 [x](https://evil.example)";
const LINES: &str = "a|b\n| c | d |\n# heading\r![i](https://evil.example/i.png)";
const PLAIN: &str = "www.evil.example *bold* _x_ \\ &amp; ``` ~~~ :+1:";
const NAMESPACE: &str = "ns`|<b>@team";
const OWNER: &str = "apps`<img src=x>`@owner|x";
const KEY: &str = "k`<img src=x>`|@key";
const ENVIRONMENT: &str = "dev`<img src=x>|@env#1";
const REVISION: &str = "base`<img>|@rev#1&amp;";

/// What no text outside a code span or block may hold: the pieces of the names above.
const MARKERS: &[&str] = &[
    "evil", "img", "@", "#", "<", "`", "|", "\\", "details", "www", "://", "*", "_", "&", ":+1:",
];

/// `s` as a YAML double-quoted scalar.
fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// A name as a code span shows it: line breaks and other controls as `\uXXXX`, a backslash
/// before a pipe as `\u005c`.
fn shown(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\n' | '\r' | '\t' => format!("\\u{:04x}", c as u32),
            c => c.to_string(),
        })
        .collect::<String>()
        .replace("\\|", "\\u005c|")
}

/// The markdown as GitHub's parser reads it.
struct Read {
    /// Raw HTML, and every node that makes a link, an image, emphasis, a footnote or emoji.
    structure: Vec<String>,
    /// The text outside code spans and blocks.
    text: Vec<String>,
    /// The text of code spans and code blocks.
    code: Vec<String>,
    /// Code blocks that run to the end of the document.
    unclosed: usize,
    headings: usize,
}

fn read(md: &str) -> Read {
    let mut options = comrak::Options::default();
    options.extension.table = true;
    options.extension.autolink = true;
    options.extension.strikethrough = true;
    options.extension.tasklist = true;
    options.extension.footnotes = true;
    options.extension.alerts = true;
    let arena = comrak::Arena::new();
    let root = comrak::parse_document(&arena, md, &options);
    let mut r = Read {
        structure: Vec::new(),
        text: Vec::new(),
        code: Vec::new(),
        unclosed: 0,
        headings: 0,
    };
    for node in root.descendants() {
        match &node.data.borrow().value {
            NodeValue::Text(t) => r.text.push(t.to_string()),
            NodeValue::Code(c) => r.code.push(c.literal.clone()),
            NodeValue::CodeBlock(b) => {
                r.code.push(b.literal.clone());
                r.unclosed += usize::from(!b.closed);
            }
            NodeValue::Heading(_) => r.headings += 1,
            v @ (NodeValue::HtmlInline(_)
            | NodeValue::HtmlBlock(_)
            | NodeValue::Link(_)
            | NodeValue::Image(_)
            | NodeValue::Emph
            | NodeValue::Strikethrough
            | NodeValue::FootnoteReference(_)
            | NodeValue::FootnoteDefinition(_)
            | NodeValue::TaskItem(_)
            | NodeValue::Alert(_)
            | NodeValue::WikiLink(_)) => r.structure.push(format!("{v:?}")),
            _ => {}
        }
    }
    r
}

/// The pipes that separate cells on a line (those not escaped).
fn cell_pipes(line: &str) -> usize {
    let b = line.as_bytes();
    (0..b.len())
        .filter(|&i| b[i] == b'|' && (i == 0 || b[i - 1] != b'\\'))
        .count()
}

/// `md` holds `names` inert: only the raw HTML `allowed`, no link, image or emphasis, no
/// marker of a name outside code, every name whole in a code span or block, every table row
/// as many cells as its header, and `headings` headings.
#[track_caller]
fn assert_inert(what: &str, md: &str, names: &[&str], allowed: &[&str], headings: usize) {
    let r = read(md);
    let structure: Vec<&String> = r
        .structure
        .iter()
        .filter(|s| !allowed.iter().any(|a| s.contains(a)))
        .collect();
    assert!(structure.is_empty(), "{what}: {structure:?} in:\n{md}");
    for t in &r.text {
        for m in MARKERS {
            assert!(
                !t.contains(m),
                "{what}: {m:?} outside code, in {t:?}:\n{md}"
            );
        }
    }
    for name in names {
        let name = shown(name);
        assert!(
            r.code.iter().any(|c| c.contains(&name)),
            "{what}: {name:?} is not whole in a code span:\n{md}"
        );
    }
    assert_eq!(r.unclosed, 0, "{what}: a code block runs to the end:\n{md}");
    assert_eq!(r.headings, headings, "{what}: headings:\n{md}");
    assert!(!md.contains('\r'), "{what}: a carriage return:\n{md}");
    let mut header = None;
    for line in md.lines() {
        match (line.starts_with('|'), header) {
            (true, None) => header = Some(cell_pipes(line)),
            (true, Some(n)) => assert_eq!(cell_pipes(line), n, "{what}: row {line:?}:\n{md}"),
            (false, _) => header = None,
        }
    }
}

fn config_map(name: &str, namespace: &str, data: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {}\n  namespace: {}\ndata:\n{data}",
        quoted(name),
        quoted(namespace)
    )
}

/// A repository whose change touches hostile names everywhere `diff --format github` shows
/// one: objects added, removed, modified and moved (to a Kustomization with a hostile name),
/// a Namespace removed with what is in it, a Secret key whose value changes, a diff whose
/// lines are fences and `</details>`, two environments (one with a hostile name), and the
/// base revision a branch with a hostile name.
fn hostile_change() -> TestRepo {
    let repo = TestRepo::empty();
    repo.flux_wiring()
        .write("clusters/base/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - platform-config.yaml\n  - apps.yaml\n  - owner.yaml\n")
        .write("clusters/base/owner.yaml", &format!("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {}\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./apps2\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n", quoted(OWNER)))
        .write(&format!("clusters/{ENVIRONMENT}/kustomization.yaml"), "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../base\n")
        .write("apps2/kustomization.yaml", "resources:\n  - keep.yaml\n")
        .write("apps2/keep.yaml", &config_map("keep", "default", "  a: b\n"))
        .write("apps/ns.yaml", &format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {}\n", quoted(NAMESPACE)))
        .write("apps/inside.yaml", &config_map(OBJECT, NAMESPACE, "  a: b\n"))
        .write("apps/conf.yaml", &config_map(DETAILS, "default", "  app.ini: |\n    one\n"))
        .write("apps/secret.yaml", &format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: {}\n  namespace: default\nstringData:\n  {}: old-value-1234\n", quoted(LINES), quoted(KEY)))
        .write("apps/moved.yaml", &config_map(PLAIN, "default", "  c: d\n"))
        .flat_kustomization();
    repo.commit_all("base");
    repo.git(&["branch", REVISION]);
    repo.remove("apps/ns.yaml");
    repo.write(
        "apps/conf.yaml",
        &config_map(
            DETAILS,
            "default",
            "  app.ini: |\n    one\n    ```\n    ~~~\n    </details>\n       ````\n    <img src=x>\n",
        ),
    );
    repo.write(
        "apps/secret.yaml",
        &repo
            .read("apps/secret.yaml")
            .replace("old-value-1234", "new-value-5678"),
    );
    let moved = repo.read("apps/moved.yaml");
    repo.remove("apps/moved.yaml");
    repo.write("apps2/moved.yaml", &moved)
        .write(
            "apps2/kustomization.yaml",
            "resources:\n  - keep.yaml\n  - moved.yaml\n",
        )
        .write(
            "apps/added.yaml",
            &config_map(OBJECT, "default", "  e: f\n"),
        )
        .flat_kustomization();
    repo
}

#[test]
fn diff_for_github_shows_hostile_names_as_code() {
    let repo = hostile_change();
    let run = repo.run(&["diff", "--from", REVISION, "--format", "github"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let md = &run.stdout;
    // Each part is there: the table, what the deleted Namespace takes, the diffs.
    for part in [
        "| Environment | Owner | Change | Object | Flux |\n",
        "Unchanged objects Flux also deletes",
        "\n<details><summary>Diffs of ",
    ] {
        assert!(md.contains(part), "{part:?}:\n{md}");
    }
    assert!(md.ends_with("</details>\n"), "{md}");
    assert_inert(
        "diff --format github",
        md,
        &[
            REVISION,
            ENVIRONMENT,
            OBJECT,
            DETAILS,
            LINES,
            PLAIN,
            NAMESPACE,
            OWNER,
            KEY,
        ],
        &["<details><summary>Diffs of ", "\"</details>\\n\""],
        1,
    );
    // The diff shows its lines as they are, in one block that only its own fence closes.
    let r = read(md);
    assert!(
        r.code
            .iter()
            .any(|c| c.contains("+    ```\n+    ~~~\n+    </details>\n+       ````\n")),
        "{md}"
    );
    // Secret values stay masked.
    assert!(
        !md.contains("value-1234") && !md.contains("value-5678"),
        "{md}"
    );

    // --to names a revision too.
    repo.commit_all("change");
    let run = repo.run(&[
        "diff", "--from", REVISION, "--to", "HEAD", "--format", "github",
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stdout
            .starts_with("### fluxwave diff: ``base`<img>|@rev#1&amp;`` → `HEAD`\n"),
        "{}",
        run.stdout
    );
}

#[test]
fn diff_for_github_says_a_hostile_revision_is_missing_in_a_code_block() {
    let repo = hostile_change();
    let missing = "nope`<img src=x>|@rev#1\n</details>";
    let run = repo.run(&["diff", "--from", missing, "--format", "github"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_inert(
        "diff's error",
        &run.stdout,
        &["nope`<img src=x>|@rev#1"],
        &[],
        0,
    );
    assert!(
        run.stdout
            .starts_with("**fluxwave could not compare the revisions:**\n\n```text\n"),
        "{}",
        run.stdout
    );
}

/// A catalog whose app-tier files have hostile names.
fn hostile_files() -> (TestRepo, Vec<String>) {
    let repo = TestRepo::empty();
    repo.service("api", &[])
        .service("web", &["api"])
        .flux_wiring();
    repo.manifest("apps/api.yaml").manifest("apps/web.yaml");
    let files: Vec<String> = [
        "api-`<img src=x onerror=alert(1)>`.yaml",
        "api-|@someone|#1.yaml",
        "web-<details open><summary>[x](https:evil.example)!<!--.yaml",
        "web-www.evil.example-*b*-_i_-\\.yaml",
        "web-line\nbreak.yaml",
    ]
    .map(String::from)
    .to_vec();
    for (i, f) in files.iter().enumerate() {
        repo.write(
            &format!("apps/{f}"),
            &config_map(&format!("extra-{i}"), "default", "  a: b\n"),
        );
    }
    let mut list: Vec<String> = vec!["api.yaml".into(), "web.yaml".into()];
    list.extend(files.iter().cloned());
    let list: String = list
        .iter()
        .map(|f| format!("  - {}\n", quoted(f)))
        .collect();
    repo.write(
        "apps/kustomization.yaml",
        &format!(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n{list}"
        ),
    );
    (repo, files)
}

#[test]
fn waves_markdown_shows_hostile_file_names_as_code() {
    let (repo, files) = hostile_files();
    let run: Run = repo.run(&["waves", "--format", "markdown"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let names: Vec<&str> = files.iter().map(String::as_str).collect();
    assert_inert("waves --format markdown", &run.stdout, &names, &[], 0);
    assert!(
        run.stdout.contains("| **0** | `api.yaml` (+ ``api-`<img src=x onerror=alert(1)>`.yaml``, `api-\\|@someone\\|#1.yaml`) | service | no dependencies (leaf) |\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .ends_with("Topology: waves (one Flux Kustomization per wave, `apps-wave-<N>`)\n"),
        "{}",
        run.stdout
    );
}

#[test]
fn blast_markdown_shows_hostile_kustomization_and_environment_names_as_code() {
    let repo = hostile_change();
    // Every Kustomization gates what it applies, so that the tables list them by name.
    for file in ["clusters/base/apps.yaml", "clusters/base/owner.yaml"] {
        let text = repo.read(file);
        if !text.contains("wait: true") {
            repo.write(
                file,
                &text.replace("  prune: true\n", "  prune: true\n  wait: true\n"),
            );
        }
    }
    let run = repo.run(&["blast", "--format", "markdown"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let owner = format!("flux-system/{OWNER}");
    assert_inert(
        "blast --format markdown",
        &run.stdout,
        &[ENVIRONMENT, &format!("clusters/{ENVIRONMENT}"), &owner],
        &[],
        // Per environment a table, then the totals and the chains.
        4,
    );
    assert!(
        run.stdout
            .contains("### What a failing unit blocks: environment ``dev`<img src=x>|@env#1``"),
        "{}",
        run.stdout
    );
}
