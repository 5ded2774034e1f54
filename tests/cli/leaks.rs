//! The secret-leak table: every shape a Secret's value can be written in (pretty JSON as
//! `kubectl get secret -o json` prints it, List items, quoted keys, a byte order mark, a tag,
//! indented documents, `kind : Secret`, the last-applied annotation, env values with a comma
//! or in a block scalar, a multi-document file with an error later, a value that is also a
//! file's name), each as written and with errors forced beside it so that snippets are
//! printed, and every command that reads manifests in every format run on it. No stdout or
//! stderr may hold the value, nor its base64 form.

use crate::common::{Run, TestRepo};

/// Standard base64 with padding, as `data:` holds values.
pub fn base64(s: &str) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let b = s.as_bytes();
    let mut out = String::new();
    for chunk in b.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &c)| n | (c as u32) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Where a shape puts its secret.
enum Place {
    /// An app-tier file of the unit `api` (relative to `apps/`), the same file in the
    /// environment `clusters/dev`, and its documents before the `apps` Kustomization's.
    Manifest(&'static str),
    /// The env of `catalog/api.yaml`: the text replaces the `port:` line.
    CatalogEnv,
}

struct Shape {
    name: &'static str,
    place: Place,
    /// The text, with `{M}` for the secret and `{B}` for its base64 form.
    text: &'static str,
}

const NORMAL: &str = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: api-secret\n  namespace: default\ntype: Opaque\ndata:\n  password: {B}\nstringData:\n  token: {M}\n";

const SHAPES: &[Shape] = &[
    Shape {
        name: "normal",
        place: Place::Manifest("api-secret.yaml"),
        text: NORMAL,
    },
    Shape {
        name: "pretty-json",
        place: Place::Manifest("api-secret.yaml"),
        text: "{\n    \"apiVersion\": \"v1\",\n    \"data\": {\n        \"password\": \"{B}\"\n    },\n    \"stringData\": {\n        \"token\": \"{M}\"\n    },\n    \"kind\": \"Secret\",\n    \"metadata\": {\n        \"name\": \"api-secret\",\n        \"namespace\": \"default\"\n    },\n    \"type\": \"Opaque\"\n}\n",
    },
    Shape {
        name: "list-items",
        place: Place::Manifest("api-secret.yaml"),
        text: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: api-first\n    namespace: default\n- apiVersion: v1\n  kind: Secret\n  metadata:\n    name: api-secret\n    namespace: default\n  data:\n    password: {B}\n  stringData:\n    token: {M}\n",
    },
    Shape {
        name: "quoted-keys",
        place: Place::Manifest("api-secret.yaml"),
        text: "\"apiVersion\": v1\n\"kind\": \"Secret\"\n\"metadata\":\n  \"name\": api-secret\n  \"namespace\": default\n'data':\n  \"password\": {B}\n\"stringData\":\n  'token': '{M}'\n",
    },
    Shape {
        name: "byte-order-mark",
        place: Place::Manifest("api-secret.yaml"),
        text: "\u{feff}apiVersion: v1\nkind: Secret\nmetadata:\n  name: api-secret\n  namespace: default\ndata:\n  password: {B}\nstringData:\n  token: {M}\n",
    },
    Shape {
        name: "tagged-kind",
        place: Place::Manifest("api-secret.yaml"),
        text: "apiVersion: v1\nkind: !!str Secret\nmetadata:\n  name: api-secret\n  namespace: default\ndata:\n  password: !!str {B}\nstringData:\n  token: {M}\n",
    },
    Shape {
        name: "indented-document",
        place: Place::Manifest("api-secret.yaml"),
        text: "  apiVersion: v1\n  kind: Secret\n  metadata:\n    name: api-secret\n    namespace: default\n  data:\n    password: {B}\n  stringData:\n    token: {M}\n",
    },
    Shape {
        name: "space-before-colon",
        place: Place::Manifest("api-secret.yaml"),
        text: "apiVersion: v1\nkind : Secret\nmetadata:\n  name: api-secret\n  namespace: default\ndata :\n  password: {B}\nstringData :\n  token: {M}\n",
    },
    Shape {
        name: "last-applied-annotation",
        place: Place::Manifest("api-secret.yaml"),
        text: "apiVersion: v1\nkind: Secret\nmetadata:\n  name: api-secret\n  namespace: default\n  annotations:\n    kubectl.kubernetes.io/last-applied-configuration: |\n      {\"apiVersion\":\"v1\",\"data\":{\"password\":\"{B}\"},\"kind\":\"Secret\",\"metadata\":{\"name\":\"api-secret\",\"namespace\":\"default\"},\"stringData\":{\"token\":\"{M}\"}}\ntype: Opaque\n",
    },
    Shape {
        name: "env-value-with-a-comma",
        place: Place::CatalogEnv,
        text: "  port: 8080\n  env:\n    - name: DB_PASSWORD\n      value: first,{M}\n    - {name: API_TOKEN, value: \"x,{M}\"}\n",
    },
    Shape {
        name: "env-value-in-a-block-scalar",
        place: Place::CatalogEnv,
        text: "  port: 8080\n  env:\n    - name: DB_PASSWORD\n      value: |\n        {M}\n    - name: API_TOKEN\n      value: >-\n        folded\n        {M}\n",
    },
    Shape {
        name: "env-in-a-manifest",
        place: Place::Manifest("api-deployment.yaml"),
        text: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\n  namespace: default\nspec:\n  template:\n    spec:\n      containers:\n        - name: api\n          image: ghcr.io/example/api:1.0.0\n          env:\n            - name: A\n              value: \"one,{M}\"\n            - name: B\n              value: |\n                {M}\n",
    },
    Shape {
        name: "multi-document-error-later",
        place: Place::Manifest("api-secret.yaml"),
        text: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: api-first\n  namespace: default\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: api-secret\n  namespace: default\ndata:\n  password: {B}\nstringData:\n  token: {M}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: api-later\n  namespace: default\ndata:\n  broken: [unclosed\n",
    },
    Shape {
        name: "value-is-a-file-name",
        place: Place::Manifest("api-{M}.yaml"),
        text: NORMAL,
    },
];

/// How a shape's text is spoilt so that errors, with snippets, are printed beside it.
#[derive(Clone, Copy, Debug)]
enum Spoil {
    /// As written (lints such as `plaintext-secret` still show a snippet of it).
    None,
    /// A line that does not parse, right after the secret, in its document.
    Syntax,
    /// A key written twice right after the secret: the text parses as YAML events but is
    /// refused as a mapping.
    DuplicateKey,
    /// A tab in the indentation of the secret's own line.
    Tab,
}

fn spoilt(text: &str, spoil: Spoil, marker: &str) -> String {
    // The line that holds the marker (the last one, for env shapes).
    let at = text.rfind(marker).expect("every shape holds its marker");
    let line_end = text[at..].find('\n').map_or(text.len(), |i| at + i + 1);
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line = &text[line_start..line_end];
    let indent = &line[..line.len() - line.trim_start().len()];
    match spoil {
        Spoil::None => text.to_string(),
        // Two columns left of the secret's line: out of a block scalar that holds it.
        Spoil::Syntax => format!(
            "{}{}broken: [{marker}: {{\n{}",
            &text[..line_end],
            &indent[indent.len().min(2)..],
            &text[line_end..]
        ),
        Spoil::DuplicateKey => {
            let key = line.trim_start().trim_start_matches("- ");
            let key = key.split(':').next().unwrap_or("x");
            format!(
                "{}{indent}{key}: again\n{}",
                &text[..line_end],
                &text[line_end..]
            )
        }
        Spoil::Tab => format!(
            "{}\t{}",
            &text[..line_start],
            &text[line_start..].trim_start_matches(' ')
        ),
    }
}

fn marker_of(i: usize) -> String {
    format!("ZQLEAK{i:02}VALUEQZ")
}

/// A committed flat repository with the shape in the working tree and in `HEAD`, the
/// revision before it as `HEAD~1`.
fn repository(shape: &Shape, spoil: Spoil, marker: &str) -> TestRepo {
    let repo = TestRepo::empty();
    repo.service("api", &[])
        .service("web", &["api"])
        .flux_wiring();
    repo.manifest("apps/api.yaml").manifest("apps/web.yaml");
    repo.flat_kustomization();
    repo.commit_all("flat");
    let text = shape
        .text
        .replace("{M}", marker)
        .replace("{B}", &base64(marker));
    let text = spoilt(&text, spoil, marker);
    match shape.place {
        Place::Manifest(file) => {
            // In the app tier, and in the environment's own folder: the files of both are
            // read by every command that builds, and errors in the second are located.
            let file = file.replace("{M}", marker);
            repo.write(&format!("apps/{file}"), &text);
            repo.flat_kustomization();
            repo.write(&format!("clusters/dev/{file}"), &text);
            let dev = repo
                .read("clusters/dev/kustomization.yaml")
                .replace("  - ../base\n", &format!("  - ../base\n  - {file}\n"));
            repo.write("clusters/dev/kustomization.yaml", &dev);
            // And as documents of the file of a Flux Kustomization, whose errors are shown
            // with a snippet by every command.
            let apps = repo.read("clusters/base/apps.yaml");
            repo.write("clusters/base/apps.yaml", &format!("{text}---\n{apps}"));
        }
        Place::CatalogEnv => {
            let api = repo
                .read("catalog/api.yaml")
                .replace("  port: 8080\n", &text);
            repo.write("catalog/api.yaml", &api);
        }
    }
    repo.commit_all(shape.name);
    repo
}

/// Every command that reads the repository's files, in every format.
fn commands(repo: &TestRepo) -> Vec<Vec<String>> {
    let render_out = repo.path().join("rendered").display().to_string();
    let s = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    let mut all = Vec::new();
    for format in ["text", "json", "markdown", "mermaid"] {
        all.push(s(&["waves", "--format", format]));
    }
    for format in ["text", "json"] {
        all.push(s(&["plan", "--format", format]));
    }
    for format in ["text", "json", "github"] {
        all.push(s(&["check", "--format", format]));
        all.push(s(&["check", "--base", "HEAD~1", "--format", format]));
    }
    for format in ["text", "json"] {
        all.push(s(&["cutover", "--from", "HEAD~1", "--format", format]));
        all.push(s(&[
            "cutover", "--from", "HEAD~1", "--to", "HEAD", "--format", format,
        ]));
        all.push(s(&[
            "cutover", "--from", "HEAD", "--to", "HEAD~1", "--format", format,
        ]));
    }
    for format in ["yaml", "json"] {
        all.push(s(&["build", "--format", format]));
    }
    for format in ["text", "json", "github"] {
        all.push(s(&["diff", "--from", "HEAD~1", "--format", format]));
    }
    all.push(s(&["render", "catalog/api.yaml", "-o", &render_out]));
    all.push(s(&["apply", "--dry-run"]));
    // Last: it changes the repository (and then the commands above run on the result).
    all.push(s(&["apply"]));
    all.push(s(&["check"]));
    all.push(s(&["cutover", "--from", "HEAD"]));
    all.push(s(&["diff", "--from", "HEAD"]));
    all
}

fn leaks(run: &Run, secrets: &[String]) -> Option<String> {
    secrets
        .iter()
        .find(|m| run.stdout.contains(m.as_str()) || run.stderr.contains(m.as_str()))
        .cloned()
}

#[test]
fn no_shape_of_a_secret_leaks_from_any_command_or_format() {
    let spoils = [Spoil::None, Spoil::Syntax, Spoil::DuplicateKey, Spoil::Tab];
    let failures = std::sync::Mutex::new(Vec::new());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let show = std::env::var_os("FLUXWAVE_SHOW").is_some();
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(shape) = SHAPES.get(i) else { break };
                if std::env::var("FLUXWAVE_SHAPE").is_ok_and(|n| n != shape.name) {
                    continue;
                }
                let marker = marker_of(i);
                let secrets = [marker.clone(), base64(&marker)];
                for spoil in spoils {
                    let repo = repository(shape, spoil, &marker);
                    // The render command's file is relative to the working directory.
                    let api = repo.path().join("catalog/api.yaml").display().to_string();
                    for args in commands(&repo) {
                        let args: Vec<&str> = args
                            .iter()
                            .map(|a| if a == "catalog/api.yaml" { api.as_str() } else { a })
                            .collect();
                        let mut run = repo.run(&args);
                        // A name is data in the results of the commands but `check`: they
                        // name files and objects as the repository has them (a cutover
                        // report names what Flux deletes). Diagnostics never show the value.
                        if shape.name == "value-is-a-file-name" && args[0] != "check" {
                            run.stdout.clear();
                        }
                        if show {
                            eprintln!(
                                "== {} {spoil:?}: {args:?} -> {}\n{}\n{}",
                                shape.name, run.code, run.stdout, run.stderr
                            );
                        }
                        assert!(
                            !run.stderr.contains("panicked"),
                            "{} {spoil:?}: fluxwave {args:?} panicked:\n{}",
                            shape.name,
                            run.stderr
                        );
                        if let Some(m) = leaks(&run, &secrets) {
                            failures.lock().unwrap().push(format!(
                                "{} ({spoil:?}): fluxwave {} prints {m}\n--- stdout\n{}\n--- stderr\n{}",
                                shape.name,
                                args.join(" "),
                                run.stdout,
                                run.stderr
                            ));
                        }
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    let heads: Vec<&str> = failures
        .iter()
        .map(|f| f.lines().next().unwrap_or(""))
        .collect();
    assert!(
        failures.is_empty(),
        "{} leaks:\n{}\n\nthe first:\n{}",
        failures.len(),
        heads.join("\n"),
        failures[0]
    );
}

/// The table's own check: each shape with a syntax error beside its secret really fails to
/// read, so that the table runs the error paths it claims to.
#[test]
fn the_spoilt_shapes_print_errors() {
    for (i, shape) in SHAPES.iter().enumerate() {
        let marker = marker_of(i);
        let repo = repository(shape, Spoil::Syntax, &marker);
        let run = repo.run(&["check"]);
        assert_eq!(
            run.code, 2,
            "{}: check read the broken text\n{}\n{}",
            shape.name, run.stdout, run.stderr
        );
    }
}

/// `apply --dry-run` prints diffs of the files it edits: a Secret written inline beside the
/// edited lines (a patch on one line) is masked in them as in a snippet.
#[test]
fn dry_run_diffs_mask_a_secret_beside_the_edit() {
    let marker = "ZQDIFFVALUEQZ";
    let secret = format!("  - patch: '{{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{{\"name\":\"extra\"}},\"stringData\":{{\"token\":\"{marker}\"}}}}'\n    target: {{kind: Secret, name: extra}}\n");
    let repo = TestRepo::empty();
    repo.service("api", &[]).flux_wiring();
    repo.manifest("apps/api.yaml").flat_kustomization();
    repo.write(
        "clusters/dev/extra.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: extra\nstringData:\n  token: placeholder\n",
    );
    let dev = repo.read("clusters/dev/kustomization.yaml");
    let dev = dev.replace("  - ../base\n", "  - ../base\n  - extra.yaml\n");
    // Right before the patch apply rewrites: within the diff's context.
    let dev = dev.replace(
        "patches:\n  # decryption for the app tier\n",
        &format!("patches:\n{secret}"),
    );
    repo.write("clusters/dev/kustomization.yaml", &dev);
    repo.commit_all("flat");
    let run = repo.run(&["apply", "--dry-run"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("+++ b/clusters/dev/kustomization.yaml"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("  - patch: *****"),
        "the Secret's line is in the diff's context:\n{}",
        run.stdout
    );
    assert!(!run.stdout.contains(marker), "{}", run.stdout);
}
