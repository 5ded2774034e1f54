//! A value a HelmRelease takes from a Secret (`valuesFrom`) never reaches any output, in any
//! form a chart can give it: the fixture chart `masks` writes it verbatim, through `toJson`,
//! `toPrettyJson`, `mustToJson`, `toRawJson`, `toYaml`, `quote`, `squote`, `printf "%q"`,
//! `b64enc` (of the value, of its JSON, of its YAML, after one or two bytes), `indent` and
//! `nindent`, into ConfigMap data, annotations and environment variables, and `fail`s quoting
//! it when `explode` is set. Secrets are drawn from a hostile alphabet (markup, quotes,
//! backslashes, line breaks, tabs, non-ASCII, U+2028) and every command that prints rendered
//! objects or why a release is not rendered runs in every format on a repository of two
//! commits, each with its own secret, with the real helm.
//!
//! The check does not use fluxwave's masking: no run of six letters or digits of a secret may
//! appear in stdout or stderr, nor once every escape in the output is undone (three times:
//! an escaped form inside fluxwave's JSON), nor in what any run of base64 characters decodes
//! to at any of its four alignments (then unescaped too).

use std::path::Path;

use proptest::prelude::*;
use serde_json::{json, Value};

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

/// A HelmRelease of the chart `masks` in this repository, its values from the Secret
/// `chart-values` and `extra` (`spec.values`, four spaces in).
fn release(name: &str, extra: &str) -> String {
    format!(
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {{name: {name}, namespace: apps}}\nspec:\n  interval: 1h\n  chart:\n    spec:\n      chart: ./charts/masks\n      sourceRef: {{kind: GitRepository, name: flux-system, namespace: flux-system}}\n  valuesFrom:\n    - {{kind: Secret, name: chart-values}}\n  values:\n{extra}"
    )
}

/// The app tier of revision `rev`: the Secret holding `secret` (as the chart's `secret` and
/// `config.password`), the release `forms` that renders it, and `boom`, which fails quoting
/// it.
fn write_revision(repo: &TestRepo, secret: &str, rev: u32) {
    let values = json!({"secret": secret, "config": {"password": secret}});
    let object = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "chart-values", "namespace": "apps"},
        "stringData": {"values.yaml": values.to_string()},
    });
    repo.write("apps/secret.yaml", &format!("{object:#}\n"));
    repo.write(
        "apps/forms.yaml",
        &release("forms", &format!("    rev: {rev}\n")),
    );
    repo.write(
        "apps/boom.yaml",
        &release("boom", &format!("    rev: {rev}\n    explode: true\n")),
    );
}

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// A repository of two commits, the first with secret `before`, the second with `after`.
fn repository(before: &str, after: &str) -> TestRepo {
    let repo = TestRepo::empty();
    repo.write(
        "clusters/dev/kustomization.yaml",
        "resources: [sync.yaml]\n",
    );
    repo.write("clusters/dev/sync.yaml", SYNC);
    repo.write(
        "apps/kustomization.yaml",
        "resources: [secret.yaml, forms.yaml, boom.yaml]\n",
    );
    copy(
        &helm_env::charts().join("masks"),
        &repo.path().join("charts/masks"),
    );
    write_revision(&repo, before, 1);
    repo.commit_all("first");
    write_revision(&repo, after, 2);
    repo.commit_all("second");
    repo
}

/// fluxwave with HelmRelease rendering on, the test's helm and the chart cache `cache`.
fn run(repo: &TestRepo, cache: &Path, args: &[&str]) -> Run {
    let mut cmd = repo.command(args);
    cmd.env_remove("FLUXWAVE_NO_HELM")
        .env("FLUXWAVE_HELM", helm_env::helm())
        .env("FLUXWAVE_CACHE", cache);
    helm_env::isolate(&mut cmd);
    repo.run_command(cmd)
}

/// Every command that prints rendered objects, or why a release is not rendered, in every
/// format.
const COMMANDS: &[&[&str]] = &[
    &["build", "--format", "yaml"],
    &["build", "--format", "json"],
    &["diff", "--from", "HEAD~1", "--format", "text"],
    &["diff", "--from", "HEAD~1", "--format", "json"],
    &["diff", "--from", "HEAD~1", "--format", "github"],
    &["cutover", "--from", "HEAD~1", "--format", "text"],
    &["cutover", "--from", "HEAD~1", "--format", "json"],
    &["check", "--base", "HEAD~1", "--format", "text"],
    &["check", "--base", "HEAD~1", "--format", "json"],
    &["check", "--base", "HEAD~1", "--format", "github"],
];

/// Every run of six ASCII letters or digits of `secret`.
fn needles(secret: &str) -> Vec<String> {
    let chars: Vec<char> = secret.chars().collect();
    let mut out = Vec::new();
    for run in chars.split(|c| !c.is_ascii_alphanumeric()) {
        for w in run.windows(6) {
            out.push(w.iter().collect());
        }
    }
    out
}

/// `text` with every backslash escape of JSON, Go and YAML undone (`\n`, `\"`, `\\`, `\xNN`,
/// `\uNNNN`, `\UNNNNNNNN`, `\L`...); what is not an escape stays as it is.
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(&e) = chars.peek() else {
            out.push(c);
            break;
        };
        let simple = match e {
            'n' => Some('\n'),
            't' => Some('\t'),
            'r' => Some('\r'),
            'b' => Some('\u{8}'),
            'f' => Some('\u{c}'),
            'v' => Some('\u{b}'),
            'a' => Some('\u{7}'),
            'e' => Some('\u{1b}'),
            '0' => Some('\0'),
            'L' => Some('\u{2028}'),
            'P' => Some('\u{2029}'),
            'N' => Some('\u{85}'),
            '_' => Some('\u{a0}'),
            '"' | '\\' | '/' | '\'' | ' ' => Some(e),
            _ => None,
        };
        if let Some(s) = simple {
            chars.next();
            out.push(s);
            continue;
        }
        let digits = match e {
            'x' => 2,
            'u' => 4,
            'U' => 8,
            _ => 0,
        };
        let hex: String = chars.clone().skip(1).take(digits).collect();
        let decoded = (digits > 0 && hex.len() == digits)
            .then(|| u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32))
            .flatten();
        match decoded {
            Some(d) => {
                for _ in 0..=digits {
                    chars.next();
                }
                out.push(d);
            }
            None => out.push(c),
        }
    }
    out
}

/// What `run` (a run of base64 characters) decodes to, starting at each of its first four
/// characters (one of them is where its encoding starts), bytes that are not UTF-8 replaced.
fn decodings(run: &str) -> Vec<String> {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    (0..4)
        .filter_map(|skip| run.get(skip..))
        .map(|s| {
            let (mut bits, mut n, mut out) = (0u32, 0, Vec::new());
            for c in s.bytes() {
                let v = A.iter().position(|&a| a == c).unwrap() as u32;
                bits = (bits << 6 | v) & 0xffffff;
                n += 6;
                if n >= 8 {
                    n -= 8;
                    out.push((bits >> n & 0xff) as u8);
                }
            }
            String::from_utf8_lossy(&out).into_owned()
        })
        .collect()
}

/// `text`, and what it says once unescaped and decoded: the texts searched for a secret.
fn views(text: &str) -> Vec<String> {
    let unescaped = |t: &str| {
        let mut all = vec![t.to_string()];
        for _ in 0..3 {
            let next = unescape(all.last().unwrap());
            if &next == all.last().unwrap() {
                break;
            }
            all.push(next);
        }
        all
    };
    let plain = unescaped(text);
    let mut out = plain.clone();
    for t in &plain {
        let runs = t
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '+' || c == '/'))
            .filter(|r| r.len() >= 8);
        for run in runs {
            for d in decodings(run) {
                out.extend(unescaped(&d));
            }
        }
    }
    out
}

/// No output of `runs` shows a needle of `secret`, in any view.
fn assert_hidden(secret: &str, runs: &[(String, Run)]) {
    let needles = needles(secret);
    assert!(
        !needles.is_empty(),
        "{secret:?} has no run of six to look for"
    );
    for (what, run) in runs {
        for (stream, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
            for view in views(text) {
                if let Some(n) = needles.iter().find(|n| view.contains(n.as_str())) {
                    let at = view.find(n.as_str()).unwrap();
                    let from = view[..at]
                        .char_indices()
                        .rev()
                        .nth(80)
                        .map_or(0, |(i, _)| i);
                    let context: String = view[from..].chars().take(200).collect();
                    panic!(
                        "`fluxwave {what}` shows {n:?} of the secret {secret:?} in its {stream}:\n...{context}...\n--- {stream}:\n{text}"
                    );
                }
            }
        }
    }
}

/// Runs every command on a repository whose secret goes from `before` to `after`, checks that
/// the chart did render (and fail) as the test means it to, and that neither secret shows.
fn secrets_stay_hidden(before: &str, after: &str) {
    let repo = repository(before, after);
    let cache = tempfile::tempdir().unwrap();
    let runs: Vec<(String, Run)> = COMMANDS
        .iter()
        .map(|args| (args.join(" "), run(&repo, cache.path(), args)))
        .collect();
    let by = |what: &str| &runs.iter().find(|(w, _)| w.starts_with(what)).unwrap().1;

    // The forms were rendered and masked, and the failing release failed quoting the secret.
    let build = by("build --format json");
    assert_eq!(build.code, 0, "{}", build.stderr);
    let doc: Value = serde_json::from_str(&build.stdout).unwrap();
    let forms = doc["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["release"] == "apps/forms" && o["kind"] == "ConfigMap")
        .unwrap_or_else(|| panic!("no rendered ConfigMap:\n{}", build.stdout));
    assert_eq!(forms["masked"], true, "{forms:#}");
    assert_eq!(forms["object"]["data"]["rev"], "2", "{forms:#}");
    let why = doc["notRendered"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["release"] == "apps/boom")
        .and_then(|n| n["why"].as_str())
        .unwrap_or_else(|| panic!("boom is rendered:\n{}", build.stdout));
    assert!(why.contains("refusing"), "{why}");
    let diff = by("diff --from HEAD~1 --format text");
    assert!(diff.stdout.contains("forms-forms"), "{}", diff.stdout);
    let cutover = by("cutover --from HEAD~1 --format text");
    assert!(
        cutover.stdout.contains("refusing") || cutover.stderr.contains("refusing"),
        "{}\n{}",
        cutover.stdout,
        cutover.stderr
    );
    for (what, run) in &runs {
        assert!(
            (0..=1).contains(&run.code),
            "`fluxwave {what}` exits {}:\n{}",
            run.code,
            run.stderr
        );
    }

    assert_hidden(before, &runs);
    assert_hidden(after, &runs);
}

/// A private key, indented line by line and encoded; a passphrase long enough that the YAML
/// writer folds it.
#[test]
fn a_private_key_and_a_long_passphrase_stay_hidden_in_every_form() {
    let key = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\nMzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZHtCSuYEvu\nNMoSfm76oqFvAp8Gy0iz5sxjZmSnXyCdPEovGhLa0VzMaQ8s+CLOyS56YyCFGeJZ\n-----END PRIVATE KEY-----\n";
    let phrase = "zqxwvu kjhgf mnbvcx lkjhgq <and> \"pqowie\" 'alskdj' \\zmxncb\\ tab\tqpwoei cafébvncmx\u{2028}naïvezpqmwx uqpwnvzr lzkxjcvb qpwoeiru zmxncbvq pqlamzws";
    secrets_stay_hidden(key, phrase);
}

/// A character of the hostile alphabet, or a run of them.
fn hostile() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "<",
        ">",
        "&",
        "\"",
        "'",
        "\\",
        "\n",
        "\t",
        " ",
        "é",
        "日本",
        "\u{2028}",
        "<>&\"'\\",
        " \n  ",
        "\\n",
        "ü ",
        "\t\n",
        "\u{2028} ",
        "  ",
        "😀",
    ])
}

/// A run of 8 to 12 ASCII letters and digits.
fn word() -> impl Strategy<Value = String> {
    let alnum: Vec<char> = ('a'..='z').chain('A'..='Z').chain('0'..='9').collect();
    prop::collection::vec(prop::sample::select(alnum), 8..13)
        .prop_map(|cs| cs.into_iter().collect())
}

/// Words and hostile characters, alternating, starting and ending with either.
fn secret() -> impl Strategy<Value = String> {
    (
        prop::option::of(hostile()),
        prop::collection::vec((word(), hostile()), 1..9),
        any::<bool>(),
    )
        .prop_map(|(lead, parts, trail)| {
            let mut s = lead.unwrap_or("").to_string();
            let last = parts.len() - 1;
            for (i, (w, h)) in parts.into_iter().enumerate() {
                s.push_str(&w);
                if i < last || trail {
                    s.push_str(h);
                }
            }
            s
        })
}

proptest! {
    // Every case runs ten commands that run helm (50-150 ms a render): few cases.
    #![proptest_config(ProptestConfig { cases: 8, max_shrink_iters: 16, ..ProptestConfig::default() })]

    #[test]
    fn hostile_secrets_stay_hidden_in_every_form_and_format(before in secret(), after in secret()) {
        prop_assume!(before != after);
        secrets_stay_hidden(&before, &after);
    }
}

/// The checks above find what they look for: a secret printed plainly, escaped, in base64
/// and in base64 after one byte.
#[test]
fn the_leak_check_finds_every_form_it_undoes() {
    let secret = "p4ssw0rdXYZ<\"";
    let run = |stdout: String| {
        vec![(
            "made up".to_string(),
            Run {
                code: 0,
                stdout,
                stderr: String::new(),
            },
        )]
    };
    let b64 = |s: &str| {
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in s.as_bytes().chunks(3) {
            let n = chunk
                .iter()
                .enumerate()
                .fold(0u32, |n, (i, &c)| n | u32::from(c) << (16 - 8 * i));
            for i in 0..=chunk.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            }
        }
        out
    };
    for shown in [
        format!("x {secret} y"),
        "x p4ss\\u0077\\x30rdXYZ y".to_string(),
        format!("x {} y", b64(secret)),
        format!("x {} y", b64(&format!("{{\"pw\":\"{secret}\"}}"))),
        format!("x {} y", b64(&format!("a{secret}"))),
    ] {
        let caught = std::panic::catch_unwind(|| assert_hidden(secret, &run(shown.clone())));
        assert!(caught.is_err(), "not caught: {shown}");
    }
    assert_hidden(secret, &run("x p4ss*** y".into()));
}
