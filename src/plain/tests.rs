//! Differential tests: wherever the plain reader accepts a file, `catalog::parse` must
//! give exactly what it gives through serde-saphyr alone (the parsed values and their
//! spans, or the same located errors).

use std::path::Path;

use crate::catalog::parse_with;
use crate::yaml::Text;

/// `parse` with and without the plain reader, compared; returns whether the plain reader
/// accepted the file.
fn same(text: &str) -> bool {
    let run = |fast| match parse_with("catalog/s.yaml", "s", Text::new(text.to_string()), fast) {
        Ok(s) => format!("{s:?}"),
        Err(errors) => errors
            .iter()
            .map(|e| format!("{} {:?} {:?} {:?}", e.message, e.span, e.line_col(), e.help))
            .collect::<Vec<_>>()
            .join("\n"),
    };
    assert_eq!(run(true), run(false), "differs on:\n{text}");
    super::parse::<crate::catalog::RawServiceDefinition>(text).is_some()
}

/// xorshift64*: a deterministic generator without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

/// A catalog file for service `s` in the styles people and gen_repo.py write.
fn generate(r: &mut Rng) -> String {
    let mut t = String::new();
    if r.chance(30) {
        t.push_str("# s: generated\n");
    }
    t.push_str("apiVersion: fluxwave.dev/v1alpha1\nkind: ServiceDefinition\n");
    t.push_str(r.pick(&[
        "metadata:\n  name: s\n",
        "metadata: {name: s}\n",
        "metadata:\n  name: s  # the service\n",
        "metadata:\n  name: \"s\"\n",
        "metadata:\n  name: s\n  labels:\n    team: media\n    app.kubernetes.io/part-of: s\n",
        "metadata:\n  name: s\n  annotations: {note: 'kept in the catalog'}\n",
    ]));
    t.push_str("spec:\n");
    if r.chance(20) {
        t.push_str(r.pick(&[
            "  description: Media server, movies and shows\n",
            "  description: \"Quoted: with a colon\"\n",
        ]));
    }
    match r.below(6) {
        0 => {}
        1 => t.push_str("  dependencies: []\n"),
        2 => t.push_str("  dependencies:\n    - to: a\n    - to: b-db  # its database\n"),
        3 => t.push_str("  dependencies:\n  - to: a\n  - to: b\n"),
        4 => t.push_str("  dependencies: [{to: a}, {to: \"b\"}]\n"),
        _ => t.push_str("  dependencies:\n    - {to: a}\n    -   to: c\n"),
    }
    t.push_str(r.pick(&[
        "  image:\n    repository: ghcr.io/example/s\n    tag: \"1.2.3\"\n",
        "  image: {repository: lscr.io/linuxserver/s, tag: \"4.0.9\"}\n",
        "  image:\n    repository: 'docker.io/library/s'\n    tag: v2.1.0\n    pullPolicy: IfNotPresent\n",
        "  image:\n    repository: r\n    tag: latest\n    automation: {enabled: false}\n",
        "  image:\n    repository: r\n    tag: 1.2.3\n",
        "  image:\n    repository: r\n    tag: \"1.0\"\n    automation:\n      interval: 1h\n      semver: '>=1.0.0'\n",
    ]));
    if r.chance(85) {
        t.push_str(r.pick(&["  port: 8989\n", "  port: 80\n", "  port: 0\n"]));
    }
    if r.chance(70) {
        t.push_str(r.pick(&[
            "  ingress:\n    host: s.apps.example.internal\n",
            "  ingress: {host: s.home.example}\n",
            "  ingress:\n    host: s.example\n    className: traefik\n    tls: {secretName: s-tls}\n    annotations:\n      cert-manager.io/cluster-issuer: letsencrypt\n",
        ]));
    }
    if r.chance(30) {
        t.push_str(r.pick(&[
            "  env:\n    - name: TZ\n      value: Europe/Berlin\n    - name: PUID\n      value: \"1000\"\n",
            "  env:\n    - {name: TZ, value: \"${CLUSTER_TZ:=UTC}\"}\n    - name: DB_PASSWORD\n      secretKeyRef: {name: s-db-app, key: password}\n",
        ]));
    }
    if r.chance(20) {
        t.push_str("  envFrom:\n    - secret: s-bootstrap-secret\n");
    }
    if r.chance(25) {
        t.push_str(r.pick(&[
            "  volumes:\n    - name: config\n      mountPath: /config\n      persistent: {size: 1Gi, storageClass: longhorn}\n",
            "  volumes:\n    - {name: cache, mountPath: /cache, readOnly: true}\n",
        ]));
    }
    if r.chance(20) {
        t.push_str("  resources:\n    requests: {cpu: 50m, memory: 128Mi}\n    limits:\n      memory: 512Mi\n");
    }
    if r.chance(15) {
        t.push_str("  probes:\n    readiness: {http: /healthz}\n    liveness:\n      tcp: true\n      periodSeconds: 30\n");
    }
    if r.chance(15) {
        t.push_str(r.pick(&[
            "  ports:\n    - {name: dns, port: 53, protocol: UDP, expose: true}\n",
            "  replicas: 2\n  strategy: Recreate\n",
            "  securityContext: {runAsUser: 1000, runAsNonRoot: true, fsGroup: 1000}\n",
            "  database:\n    size: 5Gi\n    instances: 2\n",
            "  pruneProtection: false\n  service: {type: ClusterIP, port: 8080}\n",
        ]));
    }
    if r.chance(20) {
        t.push_str("# trailing comment\n\n");
    }
    t
}

/// Characters and fragments that take a file out of the subset or make it invalid.
const NOISE: &[&str] = &[
    " ", ":", "-", "#", "\"", "'", "{", "}", "[", "]", ",", "\n", "\t", "&a ", "*a", "!!str ",
    "|\n", ">\n", "null", "~", "yes", "012", "1e3", "\\n", "---\n", "? ", "é", "  ", "\r",
];

fn mutate(r: &mut Rng, text: &str) -> String {
    let mut t = text.to_string();
    for _ in 0..1 + r.below(3) {
        let mut at = r.below(t.len() + 1);
        while !t.is_char_boundary(at) {
            at -= 1;
        }
        match r.below(4) {
            0 => t.insert_str(at, r.pick(NOISE)),
            1 if at < t.len() => {
                let end = (at + 1 + r.below(4)).min(t.len());
                if t.is_char_boundary(end) {
                    t.replace_range(at..end, "");
                }
            }
            2 => {
                // Duplicate or re-indent a line.
                let lines: Vec<&str> = t.lines().collect();
                let i = r.below(lines.len().max(1));
                let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
                if let Some(line) = lines.get(i) {
                    if r.chance(50) {
                        out.insert(i, line.to_string());
                    } else {
                        out[i] = format!("{}{line}", " ".repeat(r.below(3)));
                    }
                }
                t = out.join("\n") + "\n";
            }
            _ => t.insert_str(at, r.pick(&["x", "2", "s", "_", "."])),
        }
    }
    t
}

#[test]
fn reads_gen_repo_files_as_serde_saphyr_does() {
    let gen = "# svc-00017: generated by gen_repo.py\napiVersion: fluxwave.dev/v1alpha1\nkind: ServiceDefinition\nmetadata:\n  name: s\nspec:\n  dependencies:\n    - to: svc-00003\n    - to: s-db\n  image:\n    repository: ghcr.io/example/svc-00017\n    tag: \"3.14.1\"\n  port: 8080\n  ingress:\n    host: s.apps.example.internal\n";
    assert!(
        same(gen),
        "the plain reader must accept gen_repo.py's files"
    );
    assert!(same(&gen.replace(
        "  dependencies:\n    - to: svc-00003\n    - to: s-db\n",
        "  dependencies: []\n"
    )));
}

#[test]
fn every_example_and_fixture_catalog_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = vec![root.join("examples"), root.join("tests/fixtures")];
    let (mut files, mut accepted) = (0, 0);
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.parent().is_some_and(|p| p.ends_with("catalog"))
                && path.extension().is_some_and(|e| e == "yaml")
            {
                let text = std::fs::read_to_string(&path).unwrap();
                // Compared under the stem `s`: the name check must agree too.
                files += 1;
                accepted += usize::from(same(&text));
            }
        }
    }
    assert!(files >= 12, "found {files} catalog files");
    assert!(
        accepted * 2 >= files,
        "only {accepted} of {files} read fast"
    );
}

/// `rounds` generated texts and four mutants of each through `agrees` (the plain reader
/// gives what serde-saphyr gives, or declines): how many texts and mutants it accepted.
fn differential(
    seed: u64,
    rounds: usize,
    generate: fn(&mut Rng) -> String,
    agrees: fn(&str) -> bool,
) -> (usize, usize) {
    let mut r = Rng(seed);
    let (mut accepted, mut mutants_accepted) = (0, 0);
    for _ in 0..rounds {
        let text = generate(&mut r);
        accepted += usize::from(agrees(&text));
        for _ in 0..4 {
            mutants_accepted += usize::from(agrees(&mutate(&mut r, &text)));
        }
    }
    (accepted, mutants_accepted)
}

#[test]
fn generated_variations_and_mutations() {
    let (accepted, mutants_accepted) = differential(0x5EED_F1A5, 1500, generate, same);
    assert!(
        accepted > 1400,
        "the generated files are in the subset: {accepted}"
    );
    assert!(
        mutants_accepted > 500,
        "mutants exercise the fast path: {mutants_accepted}"
    );
}

#[test]
fn declines_what_it_does_not_read() {
    let base = "apiVersion: fluxwave.dev/v1alpha1\nkind: ServiceDefinition\nmetadata:\n  name: s\nspec:\n  image: {repository: r, tag: \"1\"}\n";
    for extra in [
        "  port: &p 80\n",
        "  port: !!int 80\n",
        "  description: |\n    two\n    lines\n",
        "  description: one\n    continued\n",
        "  description: \"esc\\taped\"\n",
        "  description: 'it''s'\n",
        "  description: null\n",
        "  description: yes\n",
        "  description: 1.5\n",
        "  description:\n",
        "  port: \"80\"\n",
        "  port: 0x50\n",
        "  replicas: 01\n",
        "  port: 80\n  port: 81\n",
    ] {
        let text = format!("{base}{extra}");
        assert!(
            super::parse::<crate::catalog::RawServiceDefinition>(&text).is_none(),
            "{text}"
        );
        same(&text);
    }
    assert!(
        super::parse::<crate::catalog::RawServiceDefinition>(&format!("---\n{base}")).is_none()
    );
}

/// `parse_all` with and without the plain reader, compared; whether it read `text`.
fn same_values(text: &str) -> bool {
    let fast = super::parse_all(text);
    let slow: Result<Vec<serde_json::Value>, _> =
        serde_saphyr::from_multiple_with_options(text, crate::yaml::manifest_options());
    if let Some(docs) = &fast {
        let slow: Vec<_> = slow
            .unwrap_or_else(|e| panic!("fast read a file serde-saphyr refuses ({e}):\n{text}"))
            .into_iter()
            .filter(|d| !d.is_null())
            .collect();
        assert_eq!(docs, &slow, "differs on:\n{text}");
    }
    fast.is_some()
}

/// A manifest file as gen_repo.py and people write them.
fn manifest(r: &mut Rng) -> String {
    let mut t = String::new();
    if r.chance(20) {
        t.push_str("---\n");
    }
    t.push_str("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: s\n  labels:\n    app.kubernetes.io/part-of: s\n---\n");
    t.push_str("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: s\n  namespace: s\n  labels:\n    app.kubernetes.io/version: \"1.2.3\"\n");
    t.push_str(r.pick(&[
        "spec:\n  replicas: 2\n",
        "spec:\n  replicas: 1 # one\n",
        "spec:\n  paused: false\n",
    ]));
    t.push_str("  template:\n    spec:\n      containers:\n        - name: s\n          image: ghcr.io/example/s:1.2.3 # {\"$imagepolicy\": \"flux-system:s\"}\n");
    t.push_str(r.pick(&[
        "          env:\n            - name: TZ\n              value: ${CLUSTER_TZ:=UTC}\n            - name: URL\n              value: https://s.example/a?b=c,d\n",
        "          env: []\n",
        "          args: [\"--port\", \"80\"]\n",
        "          ports:\n            - containerPort: 8080\n              protocol: TCP\n",
    ]));
    t.push_str(r.pick(&[
        "          resources:\n            requests:\n              cpu: 50m\n              memory: 128Mi\n",
        "          securityContext:\n            privileged: true\n            runAsUser: 0\n",
        "          readinessProbe:\n            httpGet: {path: /healthz, port: http}\n",
    ]));
    if r.chance(40) {
        t.push_str("---\napiVersion: v1\nkind: Secret\nmetadata:\n    name: s-secret\n    namespace: s\ntype: Opaque\ndata:\n    KEY: ENC[AES256_GCM,data:abc=,iv:def=,tag:ghi==,type:str]\nsops:\n    kms: []\n    age:\n        - recipient: age1abc\n          enc: |\n            -----BEGIN AGE ENCRYPTED FILE-----\n            YWdlLWVuY3J5cHRpb24ub3JnL3YxCi0+IFgyNTUxOSA\n            -----END AGE ENCRYPTED FILE-----\n    lastmodified: \"2024-03-04T05:06:07Z\"\n    encrypted_regex: ^(data|stringData)$\n    version: 3.8.1\n");
    }
    if r.chance(30) {
        t.push_str(r.pick(&[
            "---\napiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - a.yaml\n  - ../base\npatches:\n  - target:\n      kind: Kustomization\n    patch: |-\n      - op: add\n        path: /spec/decryption\n        value: {provider: sops}\n",
            "---\n# only a comment\n",
            "---\napiVersion: v1\nkind: ConfigMap\ndata:\n  a: \"1\"\n  b: 0\n  c: x y z\n  d: '1.5'\n",
        ]));
    }
    t
}

#[test]
fn reads_manifests_as_serde_saphyr_does() {
    let (accepted, mutants_accepted) = differential(0xF1A5_0000_0001, 600, manifest, same_values);
    assert!(
        accepted > 500,
        "generated manifests are in the subset: {accepted}"
    );
    assert!(
        mutants_accepted > 300,
        "mutants exercise the fast path: {mutants_accepted}"
    );
}

/// Every YAML file of the examples and fixtures through `agrees`: how many files there are
/// and how many it read fast.
fn every_example_and_fixture(agrees: fn(&str) -> bool) -> (usize, usize) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = vec![root.join("examples"), root.join("tests/fixtures")];
    let (mut files, mut accepted) = (0, 0);
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                files += 1;
                accepted += usize::from(agrees(&std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    (files, accepted)
}

#[test]
fn every_example_and_fixture_yaml_file() {
    let (files, accepted) = every_example_and_fixture(same_values);
    assert!(
        files >= 50 && accepted * 2 >= files,
        "{accepted} of {files} read fast"
    );
}

#[test]
fn reads_single_documents_as_serde_saphyr_does() {
    let base = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n# the app tier\nresources:\n  - a.yaml\n  - b-db.yaml # its database\n  - base\nlabels:\n  - pairs: {app: media}\n    includeSelectors: true\nnamespace: media\n";
    let mut r = Rng(0xF1A5_0000_0002);
    let (mut accepted, mut mutants_accepted) = (0, 0);
    for i in 0..800 {
        let text = if i == 0 {
            base.to_string()
        } else {
            mutate(&mut r, base)
        };
        let fast = super::parse_value(&text);
        let slow: Result<serde_json::Value, _> = serde_saphyr::from_str(&text);
        if let Some(doc) = &fast {
            let slow = slow
                .unwrap_or_else(|e| panic!("fast read a file serde-saphyr refuses ({e}):\n{text}"));
            assert_eq!(doc, &slow, "differs on:\n{text}");
            if i == 0 {
                accepted += 1;
            } else {
                mutants_accepted += 1;
            }
        }
    }
    assert_eq!(accepted, 1, "the base file is in the subset");
    assert!(
        mutants_accepted > 100,
        "mutants exercise the fast path: {mutants_accepted}"
    );
    // A marker line before the one document (how most kustomization files start) is read.
    for text in ["---\na: b\n", "---\n# c\na: ./x\nb: [../y, ./z.yaml]\n"] {
        let slow: serde_json::Value = serde_saphyr::from_str(text).unwrap();
        assert_eq!(super::parse_value(text), Some(slow), "{text}");
    }
    assert!(super::parse_value("---\n---\na: b\n").is_none());
    assert!(super::parse_value("--- # c\na: b\n").is_none());
    assert!(super::parse_value("a: b\n---\nc: d\n").is_none());
    assert!(super::parse_value("- a\n").is_none());
}

#[test]
fn values_decline_what_a_reader_could_type_otherwise() {
    for doc in [
        "a: 1.5\n",
        "a: null\n",
        "a: ~\n",
        "a: yes\n",
        "a: 012\n",
        "a: 1e3\n",
        "a: -1\n",
        "a: .inf\n",
        "a: .5\n",
        "a: -.5e3\n",
        "a: +1\n",
        "a: .NaN\n",
        "a: 2024-01-01\n",
        "a: 0x1f\n",
        "a: True\n",
        "1: a\n",
        "a: |+\n  x\n",
        "a: |\n  x\n\n  y\n",
        "a: |\n  x",
        "...\n",
        "--- !tag\na: b\n",
        "a:\n",
    ] {
        assert!(super::parse_all(doc).is_none(), "{doc}");
        same_values(doc);
    }
    assert_eq!(
        super::parse_all("a: |\n  x\n   y\nb: [1, c]\n"),
        Some(vec![serde_json::json!({"a": "x\n y\n", "b": [1, "c"]})])
    );
    assert!(same_values("a: |\n  x\n   y\nb: [1, c]\n"));
    // A slash makes a string of what a dot starts.
    let paths = "resources:\n  - ./app\n  - ../../components/common\n  - .x/y\n";
    assert_eq!(
        super::parse_all(paths),
        Some(vec![
            serde_json::json!({"resources": ["./app", "../../components/common", ".x/y"]})
        ])
    );
    assert!(same_values(paths));
}

/// A manifest file with the secret places masking looks for: a Secret's data, environment
/// values, an annotation that holds a Secret, SOPS values.
fn secret_places(r: &mut Rng) -> String {
    let mut t = manifest(r);
    t.push_str(r.pick(&[
        "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  pw: hunter2\n  \"token\": 'abc def'\n",
        "---\nkind: secret\ndata: {pw: aHVudGVyMg==}\n",
        "---\nkind: List\nitems:\n  - kind: Secret\n    data:\n      pw: aHVudGVyMg==\n  - kind: ConfigMap\n    data: {a: b}\n",
        "---\nkind: ConfigMap\nmetadata:\n  annotations:\n    last-applied: '{\"kind\": \"Secret\", \"data\": {\"pw\": \"x\"}}'\n",
        "---\nspec:\n  env:\n    - {name: A, value: \"a b\"}\n    - name: B\n      value: 'c'\n",
        "---\nkind: Secret\nsops:\n  age: []\n  version: 3.8.1\ndata:\n  k: ENC[AES256_GCM,data:x=,type:str]\n",
    ]));
    t
}

#[test]
fn masking_reads_manifests_as_the_parser_does() {
    let (accepted, mutants_accepted) = differential(
        0xF1A5_0000_0002,
        600,
        secret_places,
        crate::redact::plain_agrees,
    );
    assert!(
        accepted > 500,
        "generated manifests are read fast: {accepted}"
    );
    assert!(
        mutants_accepted > 1000,
        "mutants exercise the fast path: {mutants_accepted}"
    );
}

#[test]
fn masking_reads_every_example_and_fixture_yaml_file_as_the_parser_does() {
    let (files, accepted) = every_example_and_fixture(crate::redact::plain_agrees);
    assert!(
        files >= 50 && accepted * 2 >= files,
        "{accepted} of {files} read fast"
    );
}

/// A flow collection left open at the very end of the text (no line break after it): the
/// reader declines, as it does for every text it does not read, and never reads past the end.
#[test]
fn declines_a_flow_collection_open_at_the_end() {
    for text in [
        "a: [", "a: [b, ", "a: [b,", "a: {", "a: {b: ", "- [", "a: [[", "a: [b, [",
    ] {
        assert!(super::parse_all(text).is_none(), "{text:?}");
        assert!(super::documents(text).is_none(), "{text:?}");
        assert!(!crate::redact::plain_agrees(text), "{text:?}");
    }
}
