//! What Flux builds is the artifact of its source, not the checkout: files that
//! source-controller leaves out (`.sourceignore`, the GitRepository's `spec.ignore`, the
//! default exclusions) do not exist for kustomize-controller (fluxcd/pkg
//! `artifact/storage.SourceIgnoreFilter`, `sourceignore.LoadIgnorePatterns`). And files
//! kustomize reads in other encodings and YAML 1.1 words, read as kustomize reads them.

use serde_json::Value;

use crate::common::{cutover_json, deletion_id, deletions, flux_ks, utf16, TestRepo};

fn ks(name: &str, path: &str) -> String {
    flux_ks(name, path, &[])
}

/// `flux bootstrap`'s sync file for `clusters/prod`, with a `spec.ignore` when given.
fn gotk_sync(ignore: Option<&str>) -> String {
    let ignore = ignore.map_or(String::new(), |i| {
        let lines: String = i.lines().map(|l| format!("    {l}\n")).collect();
        format!("  ignore: |\n{lines}")
    });
    format!("apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 1m0s\n  ref:\n    branch: main\n  secretRef:\n    name: flux-system\n  url: ssh://git@example.com/org/fleet\n{ignore}---\n{}", ks("flux-system", "./clusters/prod"))
}

/// A bootstrapped repository: the root Kustomization applies `db` and `web`.
fn repo() -> TestRepo {
    let repo = TestRepo::empty();
    repo.write("clusters/prod/flux-system/gotk-sync.yaml", &gotk_sync(None))
        .write("clusters/prod/flux-system/kustomization.yaml", "resources: [gotk-sync.yaml]\n")
        .write("clusters/prod/db.yaml", &ks("db", "./db"))
        .write("clusters/prod/web.yaml", &ks("web", "./web"))
        .write("db/kustomization.yaml", "resources: [pg.yaml]\n")
        .write("db/pg.yaml", "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data, namespace: pg}\nspec: {resources: {requests: {storage: 1Gi}}}\n")
        .write("web/app.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: web}\nspec: {}\n")
        .write("web/config.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config, namespace: web}\n");
    repo.commit_all("init");
    repo
}

fn cutover(repo: &TestRepo) -> (i32, Value) {
    cutover_json(repo, &["--from", "HEAD"])
}

fn deleted(doc: &Value) -> Vec<String> {
    let mut out: Vec<String> = deletions(doc).iter().map(deletion_id).collect();
    out.sort();
    out
}

fn warnings(doc: &Value) -> String {
    doc["warnings"].to_string()
}

/// A `.sourceignore` in a folder hides its files from Flux: the folder's generated
/// kustomization no longer holds them, and `prune: true` deletes them.
#[test]
fn a_file_a_sourceignore_hides_is_pruned() {
    let repo = repo();
    repo.write(
        "web/.sourceignore",
        "# kept out of the cluster\nconfig.yaml\n",
    );
    let (code, doc) = cutover(&repo);
    assert_eq!(
        (code, deleted(&doc)),
        (1, vec!["ConfigMap/web/web-config".to_string()])
    );
    // A negation in a file below brings it back (the nested file outranks the root's).
    let repo = self::repo();
    repo.write(".sourceignore", "/web/\n");
    repo.write("web/.sourceignore", "!config.yaml\n");
    let (code, doc) = cutover(&repo);
    assert_eq!(
        (code, deleted(&doc)),
        (1, vec!["Deployment/web/web".to_string()])
    );
}

/// The bootstrap GitRepository's `spec.ignore` counts, after every `.sourceignore`: the
/// Flux docs' "exclude all, include what Flux reads" shape. A kustomization that lists a
/// file the artifact lacks fails to build, and Flux applies and deletes nothing of it until
/// it is fixed: the change is safe, and the failure is said.
#[test]
fn the_bootstrap_gitrepositorys_spec_ignore_counts() {
    let repo = repo();
    repo.write(
        "clusters/prod/flux-system/gotk-sync.yaml",
        &gotk_sync(Some("# exclude all\n/*\n# include what Flux reads\n!/clusters/\n!/db/\n!/web/\n/db/pg.yaml\n")),
    );
    let (code, doc) = cutover(&repo);
    assert_eq!((code, deleted(&doc)), (0, vec![]));
    assert_eq!(doc["verdict"], "safe");
    assert!(
        warnings(&doc).contains("db/kustomization.yaml")
            && warnings(&doc).contains("cannot be built"),
        "{}",
        warnings(&doc)
    );
}

/// Without any pattern, Flux's default exclusions apply (`sourceignore.DefaultPatterns`): a
/// manifest named `cloudbuild.yaml` is never in the artifact, so removing it deletes
/// nothing. One `.sourceignore` pattern anywhere replaces them: then it is built, and its
/// removal prunes it.
#[test]
fn the_default_exclusions_hold_until_a_pattern_replaces_them() {
    let repo = repo();
    let build = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: build, namespace: web}\n";
    repo.write("web/cloudbuild.yaml", build);
    repo.commit_all("a build config");
    repo.git(&["rm", "-q", "web/cloudbuild.yaml"]);
    let (code, doc) = cutover(&repo);
    assert_eq!((code, deleted(&doc)), (0, vec![]));
    repo.write("web/cloudbuild.yaml", build);
    repo.write("db/.sourceignore", "notes.txt\n");
    repo.commit_all("ignore notes");
    repo.git(&["rm", "-q", "web/cloudbuild.yaml"]);
    let (code, doc) = cutover(&repo);
    assert_eq!(
        (code, deleted(&doc)),
        (1, vec!["ConfigMap/web/build".to_string()])
    );
}

/// kustomize reads a manifest's YAML 1.1 words as strings (kyaml, go-yaml v3): `name: y`
/// in namespace `no` is the object `ConfigMap/no/y`, and its removal prunes it. In a
/// kustomization the same word is YAML 1.1's boolean (sigs.k8s.io/yaml) and the build fails
/// where a string belongs: Flux applies and deletes nothing of it.
#[test]
fn yaml_1_1_words_read_as_kustomize_reads_them() {
    let repo = repo();
    repo.write(
        "web/word.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\n  namespace: no\n",
    );
    repo.commit_all("a word");
    repo.git(&["rm", "-q", "web/word.yaml"]);
    let (code, doc) = cutover(&repo);
    assert_eq!(
        (code, deleted(&doc)),
        (1, vec!["ConfigMap/no/y".to_string()])
    );
    repo.git(&["checkout", "-q", "HEAD", "--", "web/word.yaml"]);
    repo.write(
        "web/kustomization.yaml",
        "namespace: no\nresources: [app.yaml, config.yaml, word.yaml]\n",
    );
    let (code, doc) = cutover(&repo);
    assert_eq!((code, deleted(&doc)), (0, vec![]));
    assert_eq!(doc["verdict"], "safe");
    assert!(
        warnings(&doc)
            .contains("cannot unmarshal bool into Go struct field Kustomization.namespace"),
        "{}",
        warnings(&doc)
    );
}

/// kustomize reads UTF-16 with a byte order mark and UTF-8 with one (`kubectl kustomize`
/// v5.5): a UTF-16 kustomization and a UTF-8 manifest with a mark are built, and of a UTF-16
/// manifest only the first document is (kyaml splits documents before decoding them).
#[test]
fn files_in_the_encodings_kustomize_reads_are_built() {
    let repo = repo();
    let cm = |n: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {n}, namespace: pg}}\n")
    };
    let write = |rel: &str, bytes: &[u8]| std::fs::write(repo.path().join(rel), bytes).unwrap();
    write(
        "db/kustomization.yaml",
        &utf16("resources: [pg.yaml, bom.yaml, two.yaml]\n", true),
    );
    write("db/bom.yaml", format!("\u{feff}{}", cm("bom")).as_bytes());
    write(
        "db/two.yaml",
        &utf16(&format!("{}---\n{}", cm("first"), cm("second")), false),
    );
    repo.commit_all("other encodings");
    repo.write("db/kustomization.yaml", "resources: [pg.yaml]\n");
    let (code, doc) = cutover(&repo);
    assert_eq!(
        (code, deleted(&doc)),
        (
            1,
            vec![
                "ConfigMap/pg/bom".to_string(),
                "ConfigMap/pg/first".to_string()
            ]
        )
    );
    // Broken UTF-16 fails the build that reads it, as kustomize fails ("yaml: incomplete
    // UTF-16 character"), even through Flux's generated kustomization: nothing of it is
    // deleted, though web/app.yaml leaves the build.
    let mut broken = utf16(&cm("broken"), false);
    broken.push(b'x');
    write("web/broken.yaml", &broken);
    repo.git(&["rm", "-q", "web/app.yaml"]);
    let (_, doc) = cutover(&repo);
    assert!(!deleted(&doc).contains(&"Deployment/web/web".to_string()));
    // Located at the odd byte that ends it, after the file's three lines.
    let said = format!(
        "web/broken.yaml:4:1: cannot be read as text: incomplete UTF-16 character (byte {})",
        broken.len() - 1
    );
    assert!(warnings(&doc).contains(&said), "{}", warnings(&doc));
}
