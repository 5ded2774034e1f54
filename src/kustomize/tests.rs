//! The builder's cases, each checked against `kubectl kustomize` on the same files (the CLI
//! tests hold whole repositories against the real kustomize and Flux).

use super::*;

fn ids(r: &[Resource]) -> Vec<String> {
    let mut v: Vec<String> = r
        .iter()
        .filter_map(Resource::id)
        .map(|i| i.to_string())
        .collect();
    v.sort();
    v
}

const CM: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: a\ndata: {x: '1'}\n";

#[test]
fn namespace_prefix_and_suffix_as_kustomize_applies_them() {
    let tree = FileTree::from_files([
        ("app/kustomization.yaml", "namespace: media\nnamePrefix: p-\nnameSuffix: -s\nresources: [cm.yaml, ns.yaml]\n"),
        ("app/cm.yaml", CM),
        ("app/ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: old}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r}\n---\napiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: v1beta1.metrics.k8s.io}\n"),
    ]);
    let mut b = Builder::new(&tree);
    let out = b.build_dir("app").unwrap();
    // kustomize's prefix and suffix skip Namespaces, CRDs and APIServices.
    assert_eq!(
        ids(&out),
        [
            "APIService/v1beta1.metrics.k8s.io",
            "ClusterRole/p-r-s",
            "ConfigMap/media/p-cm-s",
            "Namespace/media"
        ]
    );
}

#[test]
fn an_object_is_held_as_its_head_until_a_patch_reads_it_whole() {
    // The caller holds ConfigMaps whole, and keeps the keys of every other one's rest.
    let keep = Keep {
        whole: |_, kind| kind == "ConfigMap",
        rest: |rest| {
            let keys: Vec<String> = rest
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, _)| k.clone())
                .collect();
            Arc::new(keys)
        },
    };
    let list = "apiVersion: v1\nkind: List\nitems:\n  - {apiVersion: example.com/v1, kind: Settings, metadata: {name: a}, data: {k: '1'}}\n  - {apiVersion: example.com/v1, kind: Settings, metadata: {name: b}, data: {k: '${V}'}}\n  - {apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {k: '2'}}\n";
    let tree = FileTree::from_files([
        ("base/kustomization.yaml", "namespace: ns\nresources: [list.yaml]\n"),
        ("base/list.yaml", list),
        ("o/kustomization.yaml", "resources: [../base]\npatches:\n  - target: {name: b}\n    patch: |\n      - op: add\n        path: /data/j\n        value: '2'\n"),
    ]);
    let out = Builder::new(&tree).keeping(keep).build_dir("o").unwrap();
    assert_eq!(out.len(), 3);
    // Not patched: the head, transformed, and what the caller keeps of the rest.
    assert_eq!(out[0].value.get("data"), None);
    assert_eq!(out[0].value["metadata"]["namespace"], "ns");
    assert_eq!(
        out[0].kept::<Vec<String>>(),
        Some(&vec!["data".to_string()])
    );
    // Patched: the second item whole again, keeping the namespace its base set.
    assert_eq!(
        out[1].value["data"],
        serde_json::json!({"k": "${V}", "j": "2"})
    );
    assert_eq!(out[1].value["metadata"]["namespace"], "ns");
    assert_eq!(out[1].kept::<Vec<String>>(), None);
    // Held whole as it was loaded.
    assert_eq!(out[2].value["data"], serde_json::json!({"k": "2"}));
    // Without a `Keep`, every object is whole.
    let out = Builder::new(&tree).build_dir("o").unwrap();
    assert_eq!(out[0].value["data"], serde_json::json!({"k": "1"}));
}

#[test]
fn patches_merge_mappings_replace_lists_and_follow_renames() {
    let tree = FileTree::from_files([
        ("base/kustomization.yaml", "namePrefix: p-\nresources: [cm.yaml]\n"),
        ("base/cm.yaml", CM),
        ("o/kustomization.yaml", "resources: [../base]\npatches:\n  - target: {kind: ConfigMap, name: cm}\n    patch: |\n      - op: add\n        path: /data/y\n        value: '2'\n  - patch: |\n      apiVersion: v1\n      kind: ConfigMap\n      metadata: {name: p-cm, namespace: a, labels: {l: v}}\n      data: {x: null}\n"),
    ]);
    let mut b = Builder::new(&tree);
    let out = b.build_dir("o").unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].value["data"], serde_json::json!({"y": "2"}));
    assert_eq!(out[0].value["metadata"]["labels"]["l"], "v");
    assert_eq!(out[0].value["metadata"]["name"], "p-cm");
}

#[test]
fn components_and_unmodelled_features_are_reported() {
    let tree = FileTree::from_files([
        ("c/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n  - target: {kind: ConfigMap}\n    patch: |\n      - op: add\n        path: /metadata/annotations\n        value: {c: 'yes'}\n"),
        ("a/kustomization.yaml", "resources: [cm.yaml, https://github.com/x/y//z]\ncomponents: [../c]\ntransformers: [t.yaml]\nconfigMapGenerator: [{name: g}, {name: h, options: {disableNameSuffixHash: true}}]\n"),
        ("a/cm.yaml", CM),
    ]);
    let mut b = Builder::new(&tree);
    let out = b.build_dir("a").unwrap();
    // `g` is named after its content (an empty ConfigMap).
    let hash = super::generate::content_hash(
        &serde_json::json!({"kind": "ConfigMap", "metadata": {"name": "g"}}),
    );
    assert_eq!(
        ids(&out),
        [
            "ConfigMap/a/cm".to_string(),
            format!("ConfigMap/g-{hash}"),
            "ConfigMap/h".to_string()
        ]
    );
    assert_eq!(out[0].value["metadata"]["annotations"]["c"], "yes");
    let features: Vec<&str> = b.warnings.iter().map(|w| w.feature.as_str()).collect();
    assert_eq!(features, ["remote base", "transformers"]);
}

/// Flux builds with kustomize's Helm support off: `helmCharts` (or the older
/// `helmChartInflationGenerator`) with a chart fails the build, at any level, where
/// `kubectl kustomize` without `--enable-helm` fails it too; an empty list does not.
#[test]
fn a_chart_to_inflate_fails_the_build() {
    for field in ["helmCharts", "helmChartInflationGenerator"] {
        let b = format!("resources: [cm.yaml]\n{field}: [{{name: x}}]\n");
        let tree = FileTree::from_files([
            ("a/kustomization.yaml", "resources: [../b]\n"),
            ("b/kustomization.yaml", b.as_str()),
            ("b/cm.yaml", CM),
        ]);
        let err = Builder::new(&tree).build_dir("a").unwrap_err();
        assert!(
            err.to_string().contains("must specify --enable-helm"),
            "{err}"
        );
    }
    let tree = FileTree::from_files([
        (
            "a/kustomization.yaml",
            "resources: [cm.yaml]\nhelmCharts: []\n",
        ),
        ("a/cm.yaml", CM),
    ]);
    assert_eq!(Builder::new(&tree).build_dir("a").unwrap().len(), 1);
}

/// Flux fails the build of an absolute entry (see `resolve`): the builder does too,
/// where it used to read `/apps` as `apps`.
#[test]
fn an_absolute_resource_fails_the_build() {
    let tree = FileTree::from_files([
        ("clusters/dev/kustomization.yaml", "resources: [/apps]\n"),
        ("apps/kustomization.yaml", "resources: [cm.yaml]\n"),
        ("apps/cm.yaml", CM),
    ]);
    let err = Builder::new(&tree).build_dir("clusters/dev").unwrap_err();
    assert_eq!(
        err,
        BuildError::Escapes {
            file: "clusters/dev/kustomization.yaml".into(),
            entry: "/apps".into()
        }
    );
    assert_eq!(
        err.to_string(),
        "clusters/dev/kustomization.yaml: `/apps` leaves the repository"
    );
}

#[test]
fn strategic_merge_delete_removes_the_object() {
    let tree = FileTree::from_files([
        ("a/kustomization.yaml", "resources: [cm.yaml]\npatchesStrategicMerge:\n  - |\n    apiVersion: v1\n    kind: ConfigMap\n    metadata: {name: cm, namespace: a}\n    $patch: delete\n"),
        ("a/cm.yaml", CM),
    ]);
    assert!(Builder::new(&tree).build_dir("a").unwrap().is_empty());
}

#[test]
fn a_folder_larger_than_the_parse_ahead_window_is_built_whole_and_in_order() {
    let n = 2 * AHEAD + 7;
    let names: Vec<String> = (0..n).map(|i| format!("cm-{i:05}")).collect();
    let texts: Vec<String> = names
        .iter()
        .map(|name| CM.replace("name: cm", &format!("name: {name}")))
        .collect();
    // Listed out of path order.
    let listed: Vec<String> = names.iter().rev().map(|n| format!("{n}.yaml")).collect();
    let k = format!(
        "resources:\n{}",
        listed
            .iter()
            .map(|f| format!("  - {f}\n"))
            .collect::<String>()
    );
    let paths: Vec<String> = names.iter().map(|n| format!("big/{n}.yaml")).collect();
    let mut files: Vec<(&str, &str)> = paths
        .iter()
        .zip(&texts)
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    files.push(("big/kustomization.yaml", k.as_str()));
    let tree = FileTree::from_files(files.iter().copied());
    let out = Builder::new(&tree).build_dir("big").unwrap();
    let built: Vec<String> = out
        .iter()
        .filter_map(|r| r.id())
        .map(|i| format!("{}.yaml", i.name))
        .collect();
    assert_eq!(built, listed);
}

/// kustomize's id conflicts, each checked with `kubectl kustomize` on the same files:
/// `resWrangler.Append` refuses a second object with an id it holds (`resid.ResId.Equals`:
/// no namespace is `default`; the version counts), `NamespaceTransformerPlugin` two
/// objects moved onto one id, and a patch that renames one object onto another fails
/// when the list is made again.
#[test]
fn kustomize_refuses_two_objects_with_one_id() {
    let cm = |name: &str, ns: Option<&str>| {
        let ns = ns.map(|n| format!(", namespace: {n}")).unwrap_or_default();
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}{ns}}}\n")
    };
    let build = |k: &str, docs: &[String]| {
        let text = docs.join("---\n");
        let tree = FileTree::from_files([
            ("a/kustomization.yaml", k),
            ("a/cm.yaml", text.as_str()),
            ("a/other.yaml", text.as_str()),
        ]);
        Builder::new(&tree).build_dir("a")
    };
    let twice = build("resources: [cm.yaml, cm.yaml]\n", &[cm("x", None)]);
    assert!(
        matches!(&twice, Err(BuildError::DuplicateId { id, .. }) if id == "ConfigMap/x"),
        "{twice:?}"
    );
    assert!(twice
        .unwrap_err()
        .to_string()
        .contains("may not add resource with an already registered id"));
    let default = build(
        "resources: [cm.yaml]\n",
        &[cm("x", None), cm("x", Some("default"))],
    );
    assert!(matches!(default, Err(BuildError::DuplicateId { .. })));
    let versions = build(
        "resources: [cm.yaml]\n",
        &[cm("x", None), cm("x", None).replace("v1", "v2")],
    );
    assert_eq!(versions.map(|o| o.len()), Ok(2));
    let generated = build(
        "resources: [cm.yaml]\nconfigMapGenerator: [{name: x, options: {disableNameSuffixHash: true}}]\n",
        &[cm("x", None)],
    );
    assert!(matches!(generated, Err(BuildError::DuplicateId { .. })));
    let moved = build(
        "namespace: c\nresources: [cm.yaml]\n",
        &[cm("x", Some("a")), cm("x", Some("b"))],
    );
    assert!(
        matches!(&moved, Err(BuildError::NamespaceConflict { namespace, id, .. }) if namespace == "c" && id == "ConfigMap/c/x"),
        "{moved:?}"
    );
    let ns = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n".to_string();
    let namespaces = build(
        "namespace: one\nresources: [cm.yaml]\n",
        &[ns.clone(), ns.replace("name: a", "name: b")],
    );
    assert_eq!(
        namespaces.unwrap_err().to_string(),
        "a/kustomization.yaml: `namespace: one` makes both `Namespace/a` (a/cm.yaml) and `Namespace/b` (a/cm.yaml) `Namespace/one`; kustomize fails: namespace transformation produces ID conflict"
    );
    let renamed = build(
        "resources: [cm.yaml]\npatches:\n  - target: {name: yy}\n    patch: |\n      - op: replace\n        path: /metadata/name\n        value: x\n",
        &[cm("x", None), cm("yy", None)],
    );
    assert!(matches!(renamed, Err(BuildError::DuplicateId { .. })));
}

/// kyaml `RNode.GetValidatedMetadata`: a document without a kind or a name fails the build
/// (kustomize itself builds one without an apiVersion; Flux's build does not, see
/// `flux::generated`).
#[test]
fn a_document_without_a_kind_or_a_name_fails_the_build() {
    let build = |doc: &str| {
        let tree = FileTree::from_files([
            ("a/kustomization.yaml", "resources: [x.yaml]\n"),
            ("a/x.yaml", doc),
        ]);
        Builder::new(&tree).build_dir("a").map(|o| o.len())
    };
    let missing = |doc: &str| match build(doc) {
        Err(BuildError::NotAnObject { missing, .. }) => missing,
        other => panic!("{other:?}"),
    };
    assert_eq!(missing("apiVersion: v1\nmetadata: {name: x}\n"), "kind");
    assert_eq!(
        missing("apiVersion: v1\nkind: ConfigMap\nmetadata: {labels: {a: b}}\n"),
        "metadata.name"
    );
    assert_eq!(build("kind: ConfigMap\nmetadata: {name: x}\n"), Ok(1));
    assert_eq!(missing("creation_rules: [{age: x}]\n"), "kind");
    assert_eq!(build("# nothing but a comment\n"), Ok(0));
    // kustomize keeps for itself what is annotated `config.kubernetes.io/local-config`.
    let local = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  annotations: {config.kubernetes.io/local-config: 'true'}\n";
    assert_eq!(build(local), Ok(0));
    assert_eq!(build(&local.replace("'true'", "'false'")), Ok(1));
}

/// Kustomize's `KustTarget.accumulateDirectory`: a folder reached through `resources`
/// (or `bases`) must not be a Component, one reached through `components` must be one;
/// the folder a build starts from may be either (`kustomize build` of a Component builds).
#[test]
fn a_folder_is_a_component_only_where_components_lists_it() {
    const COMPONENT: &str = "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n";
    let tree = FileTree::from_files([
        (
            "components/common/kustomization.yaml",
            format!("{COMPONENT}resources: [./alerts]\n").leak() as &str,
        ),
        (
            "components/common/alerts/kustomization.yaml",
            format!("{COMPONENT}resources: [cm.yaml]\n").leak(),
        ),
        ("components/common/alerts/cm.yaml", CM),
        (
            "apps/kustomization.yaml",
            "components: [../components/common]\n",
        ),
        ("base/kustomization.yaml", "resources: [cm.yaml]\n"),
        ("base/cm.yaml", CM),
        ("wrong/kustomization.yaml", "components: [../base]\n"),
        (
            "generated/c/kustomization.yaml",
            format!("{COMPONENT}resources: [cm.yaml]\n").leak(),
        ),
        ("generated/c/cm.yaml", CM),
    ]);
    let err = |dir: &str| Builder::new(&tree).build_dir(dir).unwrap_err();
    assert_eq!(
        err("apps"),
        BuildError::WrongKind {
            what: "components/common/kustomization.yaml: resources[0]".into(),
            entry: "./alerts".into(),
            kustomization: "components/common/alerts/kustomization.yaml".into(),
            is: "a Component, which only `components` may list".into(),
            says: "expected kind != 'Component' for path 'components/common/alerts'".into(),
        }
    );
    assert_eq!(
        err("wrong").to_string(),
        "wrong/kustomization.yaml: components[0] `../base`: `base/kustomization.yaml` is a \
         Kustomization, not a Component; kustomize fails: expected kind 'Component' for \
         path 'base' but got 'Kustomization'"
    );
    // A Component built on its own builds.
    for dir in ["components/common/alerts", "generated/c"] {
        assert_eq!(Builder::new(&tree).build_dir(dir).map(|o| o.len()), Ok(1));
    }
}

/// A strategic-merge patch written as a `List` is its items, each a patch (kustomize reads a
/// patch text through `inlineAnyEmbeddedLists`): here one edits and one deletes, as
/// `kubectl kustomize` (v5.5.0) builds it.
#[test]
fn a_list_patch_is_its_items() {
    let tree = FileTree::from_files([
        (
            "a/kustomization.yaml",
            "resources: [cm.yaml]\npatches:\n- patch: |\n    apiVersion: v1\n    kind: List\n    items:\n    - apiVersion: v1\n      kind: ConfigMap\n      metadata: {name: d}\n      data: {x: y}\n    - $patch: delete\n      apiVersion: v1\n      kind: ConfigMap\n      metadata: {name: c}\n",
        ),
        (
            "a/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: d}\n",
        ),
    ]);
    let out = Builder::new(&tree).build_dir("a").unwrap();
    assert_eq!(ids(&out), ["ConfigMap/d"]);
    assert_eq!(out[0].value["data"]["x"], "y");
}

/// A manifest with a YAML directive fails the build, as `kubectl kustomize` (v5.5.0) fails it
/// for `%YAML 1.2` and `%YAML 1.1` alike; a `%` inside a block scalar is text.
#[test]
fn a_yaml_directive_fails_the_build_as_kustomize_fails_it() {
    for (cm, line) in [
        ("%YAML 1.2\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n", Some(1)),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n---\n%YAML 1.1\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n", Some(5)),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  t: |\n    %YAML 1.2\n", None),
    ] {
        let tree = FileTree::from_files([("a/kustomization.yaml", "resources: [cm.yaml]\n"), ("a/cm.yaml", cm)]);
        let got = Builder::new(&tree).build_dir("a");
        match line {
            Some(line) => assert_eq!(
                got.unwrap_err(),
                BuildError::Directive { file: "a/cm.yaml".into(), line }
            ),
            None => assert_eq!(ids(&got.unwrap()), ["ConfigMap/c"]),
        }
    }
}

/// A patch target's group, version and kind are anchored patterns like its name (kustomize's
/// `SelectorRegex`): `kubectl kustomize` (v5.5.0) patches the Deployment and the StatefulSet
/// here, not the ConfigMap.
#[test]
fn a_patch_targets_kinds_by_pattern() {
    let tree = FileTree::from_files([
        ("k/kustomization.yaml", "resources: [a.yaml]\npatches:\n- target: {kind: Deploy.*|StatefulSet, group: app.}\n  patch: |\n    - op: add\n      path: /metadata/labels\n      value: {patched: \"yes\"}\n"),
        ("k/a.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n---\napiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"),
    ]);
    let out = Builder::new(&tree).build_dir("k").unwrap();
    let patched: Vec<(&str, bool)> = out
        .iter()
        .map(|r| (r.kind(), r.value["metadata"].get("labels").is_some()))
        .collect();
    assert_eq!(
        patched,
        [
            ("Deployment", true),
            ("StatefulSet", true),
            ("ConfigMap", false)
        ]
    );
}

/// A target's patterns are Go's (`goregex`): a name written `${CLUSTER}` (a variable
/// nothing substitutes in a Flux Kustomization's own `spec.patches`) is `$`, then the text
/// `{CLUSTER}`, which names no object: `kubectl kustomize` (v5.5.0) builds the folder and
/// patches nothing. A pattern Go refuses (`a**`) fails the build as kustomize fails it.
#[test]
fn a_patch_targets_names_by_go_patterns() {
    let kustomization = |name: &str| {
        format!("resources: [a.yaml]\npatches:\n- target: {{name: '{name}'}}\n  patch: |\n    - op: add\n      path: /metadata/labels\n      value: {{patched: \"yes\"}}\n")
    };
    let build = |name: &str| {
        let tree = FileTree::from_files([
            ("k/kustomization.yaml", kustomization(name).as_str()),
            ("k/a.yaml", CM),
        ]);
        Builder::new(&tree).build_dir("k")
    };
    let out = build("${CLUSTER}").unwrap();
    assert!(out[0].value["metadata"].get("labels").is_none());
    let err = build("a**").unwrap_err().to_string();
    assert!(err.contains("invalid nested repetition operator"), "{err}");
}

/// `replacements` run after `namespace` and `namePrefix`, and select sources and targets by
/// the names objects had before them too (kustomize's `utils.MakeResIds`); an entry's `path`
/// names a file of one replacement. `kubectl kustomize` (v5.5.0) on these files moves the
/// Service to the namespace `moved` and gives the ConfigMap `y: moved`.
#[test]
fn replacements_follow_earlier_names_and_read_files() {
    let tree = FileTree::from_files([
        ("k/kustomization.yaml", "namePrefix: p-\nnamespace: apps\nresources: [a.yaml]\nreplacements:\n- source: {kind: ConfigMap, name: cm, namespace: default, fieldPath: data.x}\n  targets:\n  - select: {kind: Service, name: svc}\n    fieldPaths: [metadata.namespace]\n- path: r/more.yaml\n"),
        ("k/r/more.yaml", "source: {kind: Service, fieldPath: metadata.namespace}\ntargets:\n- select: {name: p-cm}\n  fieldPaths: [data.y]\n  options: {create: true}\n"),
        ("k/a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {x: moved}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: svc}\n"),
    ]);
    let out = Builder::new(&tree).build_dir("k").unwrap();
    assert_eq!(ids(&out), ["ConfigMap/apps/p-cm", "Service/moved/p-svc"]);
    assert_eq!(
        out[0].value["data"],
        serde_json::json!({"x": "moved", "y": "moved"})
    );
    // A replacement whose source is not built fails the build, as kustomize fails it.
    let tree = FileTree::from_files([
        ("k/kustomization.yaml", "resources: [a.yaml]\nreplacements:\n- source: {kind: Secret, name: cm}\n  targets:\n  - select: {kind: ConfigMap}\n"),
        ("k/a.yaml", CM),
    ]);
    let err = Builder::new(&tree).build_dir("k").unwrap_err();
    assert_eq!(
        err.to_string(),
        "k/kustomization.yaml: replacements: nothing selected by Secret.[noVer].[noGrp]/cm.[noNs]; kustomize fails"
    );
}

/// Where the builder differs from kustomize on a table of `tests/fixtures/upstream` answered by
/// `flux-oracle kustomize` (kustomize's own build of each kustomization in a folder of its
/// files): each case whose objects, in build order, or failure are not kustomize's.
fn differences_from_kustomize(table: &str) -> (usize, Vec<String>) {
    let cases = crate::upstream::cases(table, 2);
    let mut failures = Vec::new();
    for c in &cases {
        let files: serde_json::Map<String, Value> = serde_json::from_str(c.inputs[0]).unwrap();
        let mut tree: Vec<(String, String)> = files
            .iter()
            .map(|(path, text)| {
                let path = match path.strip_prefix("../") {
                    Some(up) => up.to_string(),
                    None => format!("k/{path}"),
                };
                (path, text.as_str().unwrap().to_string())
            })
            .collect();
        tree.push(("k/kustomization.yaml".into(), c.inputs[1].to_string()));
        let tree = FileTree::from_files(tree.iter().map(|(p, t)| (p.as_str(), t.as_str())));
        let got = Builder::new(&tree)
            .build_dir("k")
            .map(|objects| Value::Array(objects.into_iter().map(|r| r.value).collect()));
        let want = (c.answer != "error").then(|| serde_json::from_str::<Value>(c.answer).unwrap());
        if got.as_ref().ok() != want.as_ref() {
            failures.push(format!(
                "line {}\n  kustomize: {}\n  fluxwave:  {}",
                c.line,
                c.answer,
                match &got {
                    Ok(v) => v.to_string(),
                    Err(e) => format!("error: {e}"),
                }
            ));
        }
    }
    (cases.len(), failures)
}

/// ConfigMap and Secret generators (tests/fixtures/upstream/generators.tsv): every case.
#[test]
fn generators_agree_with_kustomize_on_their_table() {
    let (cases, failures) =
        differences_from_kustomize(include_str!("../../tests/fixtures/upstream/generators.tsv"));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(cases >= 60, "{cases} cases");
}

/// Name references (tests/fixtures/upstream/namereference.tsv): kustomize's defaults and
/// `configurations` files, after hash suffixes and name affixes: every case.
#[test]
fn name_references_agree_with_kustomize_on_their_table() {
    let (cases, failures) = differences_from_kustomize(include_str!(
        "../../tests/fixtures/upstream/namereference.tsv"
    ));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(cases >= 30, "{cases} cases");
}

/// Strategic-merge patches (tests/fixtures/upstream/strategic-merge.tsv). The builder merges
/// mappings and replaces lists, which is what kustomize does for a kind it has no schema of (a
/// Flux Kustomization, a HelmRelease: every custom resource), so a patch never changes which
/// objects a build yields other than kustomize's. For built-in kinds kustomize merges lists by
/// their schema's merge keys (containers, env and volumes by name, ports by port) and reads
/// the `$patch`, `$setElementOrder`, `$retainKeys` and `$deleteFromPrimitiveList` directives:
/// those cases are listed here, by name, until the builder merges as kustomize does (the test
/// fails when one more differs, and when one of them stops differing).
#[test]
fn strategic_merge_patches_agree_with_kustomize_on_their_table() {
    const DIFFER: &[&str] = &[
        "args replaced",
        "container image by name",
        "container without name in patch",
        "cronjob deep containers",
        "deleteFromPrimitiveList",
        "env merged by name",
        "env valueFrom replaces value",
        "finalizers merged",
        "imagePullSecrets merged",
        "init containers merged",
        "new container appended",
        "patch delete container",
        "patch replace a list",
        "ports merged by containerPort",
        "resources map merged",
        "retainKeys",
        "service ports by port",
        "setElementOrder",
        "volume replaced source",
        "volumeMounts merged by mountPath",
        "volumes merged by name",
    ];
    let table = include_str!("../../tests/fixtures/upstream/strategic-merge.tsv");
    let (cases, failures) = differences_from_kustomize(table);
    let lines: Vec<&str> = table.lines().collect();
    let mut differ: Vec<&str> = failures
        .iter()
        .filter_map(|f| {
            f.strip_prefix("line ")?
                .split('\n')
                .next()?
                .parse::<usize>()
                .ok()
        })
        .map(|line| lines[line - 2].trim_start_matches("# "))
        .collect();
    differ.sort_unstable();
    let mut known = DIFFER.to_vec();
    known.sort_unstable();
    assert_eq!(
        differ,
        known,
        "{} of {cases}:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A chain of kustomizations deeper than any build goes fails the build as too deep, and
/// the question whether it renames anything stops there too: 20,000 folders, each listing
/// the next, end in an error, not a stack overflow.
#[test]
fn a_chain_deeper_than_a_build_goes_is_an_error_not_a_crash() {
    let depth = 20_000;
    let mut files = Vec::new();
    let mut dir = String::from("k");
    for _ in 0..depth {
        files.push((
            format!("{dir}/kustomization.yaml"),
            "resources: [d]\n".to_string(),
        ));
        dir.push_str("/d");
    }
    files.push((
        format!("{dir}/kustomization.yaml"),
        "resources: [cm.yaml]\n".to_string(),
    ));
    files.push((format!("{dir}/cm.yaml"), CM.to_string()));
    let tree = FileTree::from_files(files.iter().map(|(p, t)| (p.as_str(), t.as_str())));
    let err = Builder::new(&tree).build_dir("k").unwrap_err();
    assert!(matches!(err, BuildError::Cycle { .. }), "{err}");
}
