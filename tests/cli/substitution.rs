//! Flux's `postBuild` variable substitution on real git repositories: nested defaults in
//! the names of a shared component (the per-app `ks.yaml` layout with a volsync-style
//! component naming every claim `${VOLSYNC_CLAIM:=${APP}}`), a parent's variables in the
//! `spec.path` of the child it applies, `substituteFrom` ConfigMaps and Secrets read from
//! the environment's builds, SOPS sources and missing ones. The rules are fluxcd/pkg
//! `kustomize/kustomize_varsub.go` and its `envsubst` package, and kustomize-controller's
//! "Post build variable substitution" documentation.

use serde_json::Value;

use crate::common::{cutover_json, deletion_id, deletions, flux_ks, TestRepo};

fn cutover(repo: &TestRepo) -> (i32, Value) {
    cutover_json(repo, &["--from", "HEAD"])
}

fn deleted(doc: &Value) -> Vec<String> {
    deletions(doc)
        .iter()
        .map(|d| {
            let (rule, owner) = (d["rule"].as_str().unwrap(), d["owner"].as_str().unwrap());
            format!("{} {rule} {owner}", deletion_id(d))
        })
        .collect()
}

fn warnings(doc: &Value) -> Vec<(String, String)> {
    doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["feature"].as_str().unwrap().to_string(),
                w["message"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// `flux_ks` with `extra` spec lines written as they are (indented already).
fn ks(name: &str, path: &str, extra: &str) -> String {
    format!("{}{extra}", flux_ks(name, path, &[]))
}

/// A cluster in the per-app `ks.yaml` layout: `cluster-apps` builds `kubernetes/apps`, where
/// every app's Kustomization sets `APP` and reads the cluster-wide `cluster-settings`
/// ConfigMap; every app includes a component whose claim is named
/// `${VOLSYNC_CLAIM:=${APP}}`.
fn apps_repo(apps: &[(&str, &str)]) -> TestRepo {
    let repo = TestRepo::empty();
    repo.write(
        "clusters/main/kustomization.yaml",
        "resources: [../../kubernetes/flux/cluster]\n",
    )
    .write(
        "kubernetes/flux/cluster/kustomization.yaml",
        "resources: [ks.yaml, settings.yaml]\n",
    )
    .write(
        "kubernetes/flux/cluster/ks.yaml",
        &ks("cluster-apps", "./kubernetes/apps", ""),
    )
    .write(
        "kubernetes/flux/cluster/settings.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-settings\n  namespace: flux-system\ndata:\n  STORAGE_CLASS: ceph-block\n",
    )
    .write(
        "kubernetes/components/volsync/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [pvc.yaml]\n",
    )
    .write(
        "kubernetes/components/volsync/pvc.yaml",
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: \"${VOLSYNC_CLAIM:=${APP}}\"\nspec:\n  accessModes: [\"${VOLSYNC_ACCESSMODES:=ReadWriteOnce}\"]\n  storageClassName: \"${VOLSYNC_STORAGECLASS:=${STORAGE_CLASS}}\"\n  resources:\n    requests:\n      storage: \"${VOLSYNC_CAPACITY:=5Gi}\"\n",
    );
    let list: String = apps
        .iter()
        .map(|(a, _)| format!("  - ./{a}/ks.yaml\n"))
        .collect();
    repo.write(
        "kubernetes/apps/media/kustomization.yaml",
        &format!("resources:\n  - ./namespace.yaml\n{list}"),
    )
    .write(
        "kubernetes/apps/kustomization.yaml",
        "resources: [./media]\n",
    )
    .write(
        "kubernetes/apps/media/namespace.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: media\n",
    );
    for (app, extra) in apps {
        let dir = format!("kubernetes/apps/media/{app}");
        let post = format!("  targetNamespace: media\n  postBuild:\n    substitute:\n      APP: {app}\n{extra}    substituteFrom:\n      - kind: ConfigMap\n        name: cluster-settings\n");
        repo.write(
            &format!("{dir}/ks.yaml"),
            &ks(app, &format!("./{dir}/app"), &post),
        )
        .write(
            &format!("{dir}/app/kustomization.yaml"),
            "resources: [./deployment.yaml]\ncomponents: [../../../../components/volsync]\n",
        )
        .write(
            &format!("{dir}/app/deployment.yaml"),
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: ${APP}\nspec: {}\n",
        );
    }
    repo.commit_all("apps");
    repo
}

/// Before, every claim was named `${APP}`: they collapsed into one object owned twice, and
/// removing an app found no claim to delete.
#[test]
fn nested_defaults_name_each_claim_and_its_removal_is_found() {
    let repo = apps_repo(&[
        ("sonarr", ""),
        ("radarr", ""),
        ("plex", "      VOLSYNC_CLAIM: plex-config\n"),
    ]);
    let (code, doc) = cutover(&repo);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(warnings(&doc), []);

    let check = repo.run(&["check", "--format", "json"]);
    let doc: Value = serde_json::from_str(&check.stdout).unwrap();
    let codes: Vec<&str> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["code"].as_str())
        .filter(|c| c.contains("owner") || c.contains("variable"))
        .collect();
    assert_eq!(codes, Vec::<&str>::new(), "{doc}");

    repo.write(
        "kubernetes/apps/media/kustomization.yaml",
        "resources:\n  - ./namespace.yaml\n  - ./sonarr/ks.yaml\n",
    );
    let (code, doc) = cutover(&repo);
    assert_eq!(code, 1);
    assert_eq!(
        deleted(&doc),
        // Data loss first.
        [
            "PersistentVolumeClaim/media/plex-config owner-removed Kustomization/flux-system/plex",
            "PersistentVolumeClaim/media/radarr owner-removed Kustomization/flux-system/radarr",
            "Deployment/media/plex owner-removed Kustomization/flux-system/plex",
            "Deployment/media/radarr owner-removed Kustomization/flux-system/radarr",
        ]
    );
}

/// A parent's `postBuild` substitutes the child Kustomization it applies, `spec.path`
/// included; the variable comes from a ConfigMap built by another Kustomization that is
/// built after the parent (Flux reads it from the cluster, where it is once applied).
#[test]
fn a_parents_variables_set_the_childs_path_from_a_config_map() {
    let repo = TestRepo::empty();
    let settings = |stage: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-settings\n  namespace: flux-system\ndata:\n  STAGE: {stage}\n")
    };
    repo.write(
        "clusters/main/kustomization.yaml",
        "resources: [apps.yaml, settings.yaml]\n",
    )
    .write(
        "clusters/main/apps.yaml",
        &ks(
            "apps",
            "./apps",
            "  postBuild:\n    substituteFrom:\n      - kind: ConfigMap\n        name: cluster-settings\n",
        ),
    )
    .write("clusters/main/settings.yaml", &ks("settings", "./settings", ""))
    .write("settings/cm.yaml", &settings("canary"))
    .write("apps/web.yaml", &ks("web", "./web/${STAGE}", ""))
    .write(
        "web/canary/app.yaml",
        "apiVersion: v1\nkind: Service\nmetadata: {name: web-canary, namespace: web}\n",
    )
    .write(
        "web/stable/app.yaml",
        "apiVersion: v1\nkind: Service\nmetadata: {name: web-stable, namespace: web}\n",
    );
    repo.commit_all("canary");
    repo.write("settings/cm.yaml", &settings("stable"));
    let (code, doc) = cutover(&repo);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(
        deleted(&doc),
        ["Service/web/web-canary left-build Kustomization/flux-system/web"]
    );
}

/// `$${VAR}` is an escape and `kustomize.toolkit.fluxcd.io/substitute: disabled` an
/// opt-out; Secret `data` is base64 and `stringData` plain; a later source overrides an
/// earlier one and the inline `substitute` overrides both.
#[test]
fn secrets_precedence_escapes_and_opt_outs() {
    let repo = TestRepo::empty();
    repo.write(
        "clusters/main/kustomization.yaml",
        "resources: [app.yaml, vars.yaml]\n",
    )
    .write(
        "clusters/main/vars.yaml",
        // NAME=from-secret (base64), KIND_=from-secret; the ConfigMap sets NAME too.
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: vars, namespace: flux-system}\ndata: {NAME: from-config, SUFFIX: config}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: vars, namespace: flux-system}\ndata: {NAME: ZnJvbS1zZWNyZXQ=}\nstringData: {NS: apps}\n",
    )
    .write(
        "clusters/main/app.yaml",
        &ks(
            "app",
            "./app",
            "  postBuild:\n    substitute: {SUFFIX: inline}\n    substituteFrom:\n      - {kind: ConfigMap, name: vars}\n      - {kind: Secret, name: vars}\n      - {kind: Secret, name: absent, optional: true}\n",
        ),
    )
    .write(
        "app/objects.yaml",
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: \"${NAME}-${SUFFIX}\", namespace: \"${NS}\"}\n---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: \"kept-$${NAME}\"\n  namespace: apps\n---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: \"raw-${NAME}\"\n  namespace: apps\n  labels: {kustomize.toolkit.fluxcd.io/substitute: disabled}\n",
    );
    repo.commit_all("init");
    repo.write("app/objects.yaml", "");
    let (code, doc) = cutover(&repo);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(
        deleted(&doc),
        [
            "PersistentVolumeClaim/apps/from-secret-inline left-build Kustomization/flux-system/app",
            "PersistentVolumeClaim/apps/kept-${NAME} left-build Kustomization/flux-system/app",
            "PersistentVolumeClaim/apps/raw-${NAME} left-build Kustomization/flux-system/app",
        ]
    );
}

/// A SOPS-encrypted source cannot be read: a name that needs it is reported. A source that
/// is not optional and in no build fails Flux's build unless it is in the cluster (made out of
/// band, as a bootstrap Secret is): with it Flux builds the owner, and prunes what leaves
/// the build (fluxcd/pkg `LoadVariables` fails only on a missing source).
#[test]
fn sops_sources_are_unknown_and_missing_ones_are_in_the_cluster() {
    let repo = TestRepo::empty();
    repo.write(
        "clusters/main/kustomization.yaml",
        "resources: [sealed.yaml, missing.yaml, secret.sops.yaml]\n",
    )
    .write(
        "clusters/main/secret.sops.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: cluster-secrets\n  namespace: flux-system\nstringData:\n  DOMAIN: ENC[AES256_GCM,data:abc,type:str]\nsops:\n  mac: ENC[AES256_GCM,data:xyz,type:str]\n",
    )
    .write(
        "clusters/main/sealed.yaml",
        &ks(
            "sealed",
            "./sealed",
            "  postBuild:\n    substitute: {APP: web}\n    substituteFrom:\n      - {kind: Secret, name: cluster-secrets}\n",
        ),
    )
    .write(
        "clusters/main/missing.yaml",
        &ks(
            "missing",
            "./missing",
            "  postBuild:\n    substituteFrom:\n      - {kind: ConfigMap, name: not-in-git}\n",
        ),
    )
    .write(
        "sealed/app.yaml",
        "apiVersion: v1\nkind: Service\nmetadata: {name: \"${APP}-${DOMAIN}\", namespace: web}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: \"${APP}\", namespace: web}\n",
    )
    .write(
        "missing/app.yaml",
        "apiVersion: v1\nkind: Service\nmetadata: {name: other, namespace: web}\n",
    );
    repo.commit_all("init");
    repo.write("missing/app.yaml", "");
    let (code, doc) = cutover(&repo);
    // The source being in the cluster, Flux deletes `other`; without it the build fails
    // until it is there, and then deletes it.
    assert_eq!(
        deleted(&doc),
        ["Service/web/other left-build Kustomization/flux-system/missing"]
    );
    assert_eq!((code, doc["verdict"].as_str()), (1, Some("deletes")));
    let w = warnings(&doc);
    assert_eq!(w.len(), 2, "{w:?}");
    assert_eq!(w[0].0, "substituteFrom in the cluster");
    assert!(
        w[0].1.contains("Kustomization/flux-system/missing")
            && w[0].1.contains("ConfigMap/not-in-git"),
        "{w:?}"
    );
    assert_eq!(w[1].0, "postBuild substitution");
    assert!(
        w[1].1.contains("`${DOMAIN}`") && w[1].1.contains("Secret/cluster-secrets"),
        "{w:?}"
    );
}

/// The opt-outs Flux honours are read after substitution: a claim annotated
/// `prune: ${PVC_PRUNE:=disabled}` is protected, one whose app sets `PVC_PRUNE: enabled`
/// is not.
#[test]
fn an_opt_out_from_a_variable_protects_the_claim() {
    let repo = apps_repo(&[("sonarr", ""), ("radarr", "      PVC_PRUNE: enabled\n")]);
    let pvc = repo.read("kubernetes/components/volsync/pvc.yaml").replace(
        "metadata:\n",
        "metadata:\n  annotations:\n    kustomize.toolkit.fluxcd.io/prune: ${PVC_PRUNE:=disabled}\n",
    );
    repo.write("kubernetes/components/volsync/pvc.yaml", &pvc);
    repo.commit_all("protect the claims");
    repo.write(
        "kubernetes/apps/media/kustomization.yaml",
        "resources:\n  - ./namespace.yaml\n",
    );
    let (code, doc) = cutover(&repo);
    assert_eq!(code, 1);
    assert_eq!(
        deleted(&doc),
        [
            "PersistentVolumeClaim/media/radarr owner-removed Kustomization/flux-system/radarr",
            "Deployment/media/radarr owner-removed Kustomization/flux-system/radarr",
            "Deployment/media/sonarr owner-removed Kustomization/flux-system/sonarr",
        ]
    );
}

/// A variable without default that nothing sets fails Flux's build (the
/// `StrictPostBuildSubstitutions` feature gate, on by default since kustomize-controller
/// v1.9): nothing of the owner is applied or pruned, and `check` still points at the
/// variable.
#[test]
fn an_undefined_variable_fails_the_build_and_deletes_nothing() {
    let repo = TestRepo::empty();
    repo.write("clusters/main/kustomization.yaml", "resources: [app.yaml]\n")
        .write(
            "clusters/main/app.yaml",
            &ks("app", "./app", "  postBuild:\n    substitute: {APP: web}\n"),
        )
        .write(
            "app/objects.yaml",
            "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: \"${APP}\", namespace: apps}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: \"${APP}-config\", namespace: apps}\n",
        );
    repo.commit_all("init");
    let broken = repo
        .read("app/objects.yaml")
        .replace(
            "kind: ConfigMap\n",
            "kind: ConfigMap\ndata: {region: \"${REGION}\"}\n",
        )
        .replace(
            "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: \"${APP}\", namespace: apps}\n---\n",
            "",
        );
    repo.write("app/objects.yaml", &broken);
    let (code, doc) = cutover(&repo);
    // Flux applies and deletes nothing while the build fails (the claim stays): safe, with
    // the failure said.
    assert_eq!((code, deleted(&doc)), (0, vec![]));
    assert_eq!(doc["verdict"], "safe");
    let w = warnings(&doc);
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0].0, "build failure");
    assert!(w[0].1.contains("needs `${REGION}`"), "{w:?}");

    let check = repo.run(&["check", "--format", "json"]);
    let doc: Value = serde_json::from_str(&check.stdout).unwrap();
    let codes: Vec<&str> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["code"].as_str())
        .collect();
    assert!(codes.contains(&"undefined-variable"), "{doc}");

    // Defined, the build is Flux's again and the claim's removal is found.
    repo.write(
        "app/objects.yaml",
        &broken.replace("${REGION}", "${REGION:=eu}"),
    );
    let (code, doc) = cutover(&repo);
    assert_eq!(code, 1);
    assert_eq!(
        deleted(&doc),
        ["PersistentVolumeClaim/apps/web left-build Kustomization/flux-system/app"]
    );
}

/// A Kustomization reading `substituteFrom` sources in the order `from` (each `Kind/name`),
/// with inline `substitute` lines `inline`: a Service named `app-${SUFFIX}`, SUFFIX set to
/// `blue` by the readable ConfigMap `settings`. `Secret/sealed` is SOPS-encrypted;
/// `Secret/in-cluster` is in no build (made out of band).
fn unreadable_repo(from: &[&str], inline: &str) -> TestRepo {
    let repo = TestRepo::empty();
    let refs: String = from
        .iter()
        .map(|r| {
            let (kind, name) = r.split_once('/').unwrap();
            format!("      - {{kind: {kind}, name: {name}}}\n")
        })
        .collect();
    repo.write(
        "clusters/main/kustomization.yaml",
        "resources: [app.yaml, settings.yaml, sealed.sops.yaml]\n",
    )
    .write(
        "clusters/main/settings.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: flux-system}\ndata: {SUFFIX: blue}\n",
    )
    .write(
        "clusters/main/sealed.sops.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata: {name: sealed, namespace: flux-system}\nstringData:\n  TOKEN: ENC[AES256_GCM,data:abc,type:str]\n  SUFFIX: ENC[AES256_GCM,data:ghi,type:str]\n  CLAIM: ENC[AES256_GCM,data:jkl,type:str]\nsops:\n  mac: ENC[AES256_GCM,data:xyz,type:str]\n",
    )
    .write(
        "clusters/main/app.yaml",
        &ks(
            "app",
            "./app",
            &format!("  postBuild:\n{inline}    substituteFrom:\n{refs}"),
        ),
    )
    .write(
        "app/svc.yaml",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: app-${SUFFIX}\n  namespace: web\n",
    );
    repo.commit_all("init");
    repo
}

/// One source fluxwave cannot read makes unknown only what it may set: fluxcd/pkg
/// `kustomize/kustomize_varsub.go`, `LoadVariables` reads the `substituteFrom` sources in
/// order, each overriding the ones before, and `SubstituteVariables` lays the inline
/// `substitute` over them all. A variable a readable source sets after every unreadable one
/// (or the inline `substitute` sets) is known, and a rename through it deletes the old
/// object; one an unreadable source may override is unknown, and its owner incomplete when
/// what it reads changes.
#[test]
fn an_unreadable_source_makes_unknown_only_what_it_may_set() {
    let rename = |repo: &TestRepo| {
        let settings = repo.read("clusters/main/settings.yaml");
        repo.write(
            "clusters/main/settings.yaml",
            &settings.replace("blue", "green"),
        );
        cutover(repo)
    };
    let renamed = ["Service/web/app-blue identity-changed Kustomization/flux-system/app"];
    // The Secret in the cluster comes first: the ConfigMap overrides whatever it sets.
    for first in ["Secret/in-cluster", "Secret/sealed"] {
        let repo = unreadable_repo(&[first, "ConfigMap/settings"], "");
        let (code, doc) = rename(&repo);
        assert_eq!(
            (code, deleted(&doc)),
            (1, renamed.map(String::from).to_vec()),
            "{first}: {doc}"
        );
        assert_eq!(doc["verdict"], "deletes", "{first}");
    }
    // It comes last: it may set SUFFIX too, so the rename is not known, and the change to
    // what the owner reads cannot be judged safe.
    for last in ["Secret/in-cluster", "Secret/sealed"] {
        let repo = unreadable_repo(&["ConfigMap/settings", last], "");
        let (code, doc) = rename(&repo);
        assert_eq!(
            (code, doc["verdict"].as_str()),
            (1, Some("incomplete")),
            "{last}: {doc}"
        );
        let why = doc["incomplete"][0]["why"].to_string();
        assert!(why.contains("`${SUFFIX}`") && why.contains(last), "{why}");
    }
    // SOPS encrypts values, not keys: a Secret without the key sets no SUFFIX, and the
    // rename is known.
    let repo = unreadable_repo(&["ConfigMap/settings", "Secret/sealed"], "");
    let sealed = repo.read("clusters/main/sealed.sops.yaml");
    repo.write(
        "clusters/main/sealed.sops.yaml",
        &sealed.replace("  SUFFIX: ENC[AES256_GCM,data:ghi,type:str]\n", ""),
    );
    repo.commit_all("no SUFFIX in the Secret");
    let (code, doc) = rename(&repo);
    assert_eq!(
        (code, deleted(&doc)),
        (1, renamed.map(String::from).to_vec()),
        "{doc}"
    );
    // The encrypted Secret itself changes: what it sets may rename the Service.
    let repo = unreadable_repo(&["ConfigMap/settings", "Secret/sealed"], "");
    let sealed = repo.read("clusters/main/sealed.sops.yaml");
    repo.write(
        "clusters/main/sealed.sops.yaml",
        &sealed.replace("data:abc", "data:def"),
    );
    let (code, doc) = cutover(&repo);
    assert_eq!(
        (code, doc["verdict"].as_str()),
        (1, Some("incomplete")),
        "{doc}"
    );
    // The inline `substitute` pins SUFFIX over every source: the rename is known.
    let repo = unreadable_repo(
        &["ConfigMap/settings", "Secret/sealed", "Secret/in-cluster"],
        "    substitute: {SUFFIX: red}\n",
    );
    let app = repo.read("clusters/main/app.yaml");
    repo.write("clusters/main/app.yaml", &app.replace("red", "purple"));
    let (code, doc) = cutover(&repo);
    assert_eq!(
        (code, deleted(&doc)),
        (
            1,
            vec!["Service/web/app-red identity-changed Kustomization/flux-system/app".to_string()]
        ),
        "{doc}"
    );
    assert_eq!(doc["verdict"], "deletes");
    // Nothing changes: nothing is touched, whatever is unknown.
    let repo = unreadable_repo(&["ConfigMap/settings", "Secret/in-cluster"], "");
    repo.write("README.md", "notes\n");
    assert_eq!(cutover(&repo).1["verdict"], "safe");
}

/// Two Kustomizations whose claims are named `${CLAIM:-${APP}}` with `APP` set inline to
/// each one's own name: when a SOPS-encrypted source cannot be ruled out as setting `CLAIM`,
/// both names stay as written, which says nothing of whether they collide in the cluster, so
/// `check` reports no `double-owner`. With `CLAIM` set inline too (the inline values win over
/// every source), both claims are named by it and do collide.
#[test]
fn claims_named_by_an_unknowable_variable_are_not_double_owned() {
    let two = |inline: &str| {
        let repo = unreadable_repo(
            &["Secret/sealed"],
            &format!("    substitute: {{APP: a{inline}}}\n"),
        );
        let app = repo.read("clusters/main/app.yaml");
        repo.write(
            "clusters/main/app-b.yaml",
            &app.replace("name: app\n", "name: app-b\n")
                .replace("./app", "./app-b")
                .replace("APP: a", "APP: b"),
        )
        .write(
            "clusters/main/kustomization.yaml",
            "resources: [app.yaml, app-b.yaml, settings.yaml, sealed.sops.yaml]\n",
        );
        let claim = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: ${CLAIM:-${APP}}\n  namespace: web\n";
        repo.write("app/claim.yaml", claim)
            .write("app-b/claim.yaml", claim);
        repo.commit_all("two apps");
        let out = repo.run(&["check", "--format", "json"]);
        let doc: Value = serde_json::from_str(&out.stdout).unwrap();
        doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["code"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let unknown = two("");
    assert!(
        !unknown.contains(&"double-owner".to_string()),
        "{unknown:?}"
    );
    let named = two(", CLAIM: shared");
    assert!(named.contains(&"double-owner".to_string()), "{named:?}");
}

/// The cluster-wide settings made by a `configMapGenerator` from an env file (the
/// cluster-template layout: `envs: [cluster-settings.env]`, no hash suffix): its data is in
/// the build, so the apps that read it are built with its values, and an edit of the env file
/// that renames a claim is a deletion, not a gap.
#[test]
fn settings_generated_from_an_env_file_are_read_for_substitution() {
    let repo = apps_repo(&[("sonarr", "")]);
    repo.remove("kubernetes/flux/cluster/settings.yaml");
    repo.write(
        "kubernetes/flux/cluster/kustomization.yaml",
        "resources: [ks.yaml]\nconfigMapGenerator:\n  - name: cluster-settings\n    namespace: flux-system\n    envs: [cluster-settings.env]\ngeneratorOptions:\n  disableNameSuffixHash: true\n",
    )
    .write(
        "kubernetes/flux/cluster/cluster-settings.env",
        "STORAGE_CLASS=ceph-block\nVOLSYNC_CLAIM=data\n",
    );
    repo.commit_all("settings from an env file");
    let build = repo.run(&["build", "--format", "json"]);
    assert_eq!(build.code, 0, "{}", build.stderr);
    let doc: Value = serde_json::from_str(&build.stdout).unwrap();
    let claim = doc["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "PersistentVolumeClaim")
        .unwrap_or_else(|| panic!("{doc:#}"));
    assert_eq!(claim["name"], "data");
    assert_eq!(claim["object"]["spec"]["storageClassName"], "ceph-block");

    repo.write(
        "kubernetes/flux/cluster/cluster-settings.env",
        "STORAGE_CLASS=ceph-block\nVOLSYNC_CLAIM=data-v2\n",
    );
    let (code, doc) = cutover(&repo);
    assert_eq!(
        (code, doc["verdict"].as_str()),
        (1, Some("deletes")),
        "{doc:#}"
    );
    assert!(
        deleted(&doc).contains(
            &"PersistentVolumeClaim/media/data identity-changed Kustomization/flux-system/sonarr"
                .to_string()
        ),
        "{:?}",
        deleted(&doc)
    );
}

/// Two clusters, each with its own `cluster-settings` ConfigMap (one name, different keys):
/// each cluster's apps are checked against their own cluster's settings, not the first
/// cluster's, so neither cluster's variables are reported undefined.
#[test]
fn each_cluster_reads_its_own_settings() {
    let repo = TestRepo::empty();
    for (env, var) in [("alpha", "ALPHA_ONLY"), ("beta", "BETA_ONLY")] {
        let from = "  postBuild:\n    substituteFrom:\n      - kind: ConfigMap\n        name: cluster-settings\n";
        repo.write(
            &format!("clusters/{env}/kustomization.yaml"),
            "resources: [settings.yaml, apps.yaml]\n",
        )
        .write(
            &format!("clusters/{env}/settings.yaml"),
            &format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cluster-settings, namespace: flux-system}}\ndata: {{{var}: set}}\n"),
        )
        .write(
            &format!("clusters/{env}/apps.yaml"),
            &ks("apps", &format!("./apps/{env}"), from),
        )
        .write(&format!("apps/{env}/kustomization.yaml"), "resources: [cm.yaml]\n")
        .write(
            &format!("apps/{env}/cm.yaml"),
            &format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: app, namespace: default}}\ndata: {{v: '${{{var}}}'}}\n"),
        );
    }
    repo.commit_all("two clusters");
    let check = repo.run(&["check", "--format", "json"]);
    let doc: Value = serde_json::from_str(&check.stdout).unwrap();
    let undefined: Vec<&Value> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "undefined-variable")
        .collect();
    assert_eq!(undefined, Vec::<&Value>::new(), "{doc:#}");
    assert_eq!(
        doc["environments"].as_array().map(Vec::len),
        Some(2),
        "{doc:#}"
    );
}

/// A `substituteFrom` Secret made by an ExternalSecret whose template names its keys (external-
/// secrets `Reconciler.applyTemplate`: with `template.data` and no `mergePolicy: Merge`, the
/// Secret holds the template's keys only) sets no other variable: a claim named
/// `${VOLSYNC_CLAIM:-${APP}}` is the app's name, and a change that renames the app deletes
/// the old claim, where before every change of the app was "incomplete" (the claim's name
/// "may come from" the Secret). With `mergePolicy: Merge` the fetched keys are in it too,
/// unknown, and the claim's name is unknown again.
#[test]
fn a_templated_external_secret_sets_only_its_keys() {
    let external_secret = |merge: &str| {
        format!("apiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata:\n  name: cluster-secrets\n  namespace: flux-system\nspec:\n  secretStoreRef: {{kind: ClusterSecretStore, name: onepassword}}\n  target:\n    name: cluster-secrets\n    template:\n{merge}      data:\n        SECRET_DOMAIN: \"{{{{ .SECRET_DOMAIN }}}}\"\n  dataFrom:\n    - extract: {{key: cluster}}\n")
    };
    let app = |name: &str| {
        ks(
            "media",
            "./media",
            &format!("  postBuild:\n    substitute: {{APP: {name}}}\n    substituteFrom:\n      - {{kind: Secret, name: cluster-secrets}}\n"),
        )
    };
    let repo = TestRepo::empty();
    repo.write(
        "clusters/main/kustomization.yaml",
        "resources: [secrets.yaml, media.yaml]\n",
    )
    .write("clusters/main/secrets.yaml", &external_secret(""))
    .write("clusters/main/media.yaml", &app("jellyfin"))
    .write(
        "media/claim.yaml",
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: \"${VOLSYNC_CLAIM:-${APP}}\"\n  namespace: media\nspec: {resources: {requests: {storage: 1Gi}}}\n",
    );
    repo.commit_all("init");
    repo.write("clusters/main/media.yaml", &app("emby"));
    let (code, doc) = cutover(&repo);
    assert_eq!(
        deleted(&doc),
        ["PersistentVolumeClaim/media/jellyfin identity-changed Kustomization/flux-system/media"],
        "{doc:#}"
    );
    assert_eq!((code, doc["verdict"].as_str()), (1, Some("deletes")));
    repo.write(
        "clusters/main/secrets.yaml",
        &external_secret("      mergePolicy: Merge\n"),
    );
    repo.commit_all("the fetched keys too");
    repo.write("clusters/main/media.yaml", &app("plex"));
    let (code, doc) = cutover(&repo);
    assert_eq!(
        (code, doc["verdict"].as_str()),
        (1, Some("incomplete")),
        "{doc:#}"
    );
}

/// The layout of a cluster that runs the `kustomize-mutating-webhook` chart (xunholy's; its
/// `createPatch` in `internal/handlers/mutate.go` adds every key of the ConfigMaps and
/// Secrets its values name to `spec.postBuild.substitute` of each Kustomization admitted in
/// a namespace its `namespaceSelector` matches, by default every one but `flux-system`):
/// the chart from an OCIRepository, its values from a ConfigMap generated from `values.yaml`
/// with a hash suffix, `cluster-config` in git and `cluster-secrets` made by an
/// ExternalSecret. `web` (namespace `media`) has no `postBuild`; `api` sets `STAGE` itself,
/// and the webhook's value replaces it; `tools` (namespace `flux-system`) is not changed by
/// the webhook.
fn webhook_repo(stage: &str) -> TestRepo {
    let repo = TestRepo::empty();
    let app_ks = |name: &str, namespace: &str, extra: &str| {
        format!("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n  interval: 1h\n  path: ./apps/{name}\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n    namespace: flux-system\n{extra}")
    };
    let objects = |name: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}-${{STAGE}}\n  namespace: media\n  annotations:\n    example.com/host: {name}.${{SECRET_DOMAIN}}\ndata: {{}}\n")
    };
    repo.write(
        "clusters/main/kustomization.yaml",
        "resources: [cluster-config.yaml, secrets.yaml, webhook.yaml, apps.yaml]\n",
    )
    .write(
        "clusters/main/cluster-config.yaml",
        &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-config\n  namespace: flux-system\ndata:\n  STAGE: {stage}\n"),
    )
    .write(
        "clusters/main/secrets.yaml",
        "apiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata:\n  name: cluster-secrets\n  namespace: flux-system\nspec:\n  secretStoreRef: {kind: ClusterSecretStore, name: onepassword}\n  target: {name: cluster-secrets}\n  dataFrom:\n    - extract: {key: homelab}\n",
    )
    .write("clusters/main/webhook.yaml", &ks("webhook", "./webhook", "  targetNamespace: flux-system\n"))
    .write("clusters/main/apps.yaml", &ks("apps", "./apps", ""))
    .write(
        "webhook/kustomization.yaml",
        "resources: [helmrelease.yaml, ocirepository.yaml]\nconfigMapGenerator:\n  - name: webhook-values\n    files: [values.yaml=./values.yaml]\nconfigurations: [kustomizeconfig.yaml]\n",
    )
    .write(
        "webhook/kustomizeconfig.yaml",
        "nameReference:\n  - kind: ConfigMap\n    version: v1\n    fieldSpecs:\n      - path: spec/valuesFrom/name\n        kind: HelmRelease\n",
    )
    .write(
        "webhook/helmrelease.yaml",
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: kustomize-mutating-webhook\nspec:\n  interval: 1h\n  chartRef:\n    kind: OCIRepository\n    name: kustomize-mutating-webhook\n  valuesFrom:\n    - kind: ConfigMap\n      name: webhook-values\n",
    )
    .write(
        "webhook/ocirepository.yaml",
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata:\n  name: kustomize-mutating-webhook\nspec:\n  interval: 1h\n  url: oci://ghcr.io/xunholy/charts/kustomize-mutating-webhook\n  ref: {tag: 0.12.0}\n",
    )
    .write(
        "webhook/values.yaml",
        "configMaps:\n  - name: cluster-config\nsecrets:\n  - name: cluster-secrets\n",
    )
    .write(
        "apps/kustomization.yaml",
        "resources: [web.yaml, api.yaml, tools.yaml]\n",
    )
    .write("apps/web.yaml", &app_ks("web", "media", ""))
    .write(
        "apps/api.yaml",
        &app_ks("api", "media", "  postBuild:\n    substitute:\n      STAGE: red\n"),
    )
    .write(
        "apps/tools.yaml",
        &app_ks("tools", "flux-system", "  postBuild:\n    substitute:\n      APP: tools\n"),
    )
    .write("apps/web/cm.yaml", &objects("web"))
    .write("apps/api/cm.yaml", &objects("api"))
    .write("apps/tools/cm.yaml", &objects("tools"));
    repo.commit_all("webhook");
    repo
}

/// Before, `web` and `api` were built with their own variables only: `web` not substituted
/// at all, `api` with `STAGE: red`, so a change of `cluster-config` deleted nothing, and
/// `check` called `${SECRET_DOMAIN}` undefined (Flux fails the reconcile) where the webhook
/// may set it from `cluster-secrets`.
#[test]
fn a_mutating_webhook_adds_its_variables_to_the_kustomizations_it_admits() {
    let repo = webhook_repo("blue");
    let check = repo.run(&["check", "--format", "json"]);
    let doc: Value = serde_json::from_str(&check.stdout).unwrap();
    let mut found: Vec<String> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"].as_str().unwrap().contains("variable"))
        .map(|f| {
            let m = f["message"].as_str().unwrap();
            format!(
                "{} {} {}",
                f["code"].as_str().unwrap(),
                f["path"].as_str().unwrap(),
                &m[..m.find(' ').unwrap()]
            )
        })
        .collect();
    found.sort();
    found.dedup();
    assert_eq!(
        found,
        [
            // `flux-system` is not admitted through the webhook: only its own variables.
            "undefined-variable apps/tools/cm.yaml `${SECRET_DOMAIN}`",
            "undefined-variable apps/tools/cm.yaml `${STAGE}`",
            "unknowable-variable apps/api/cm.yaml `${SECRET_DOMAIN}`",
            "unknowable-variable apps/web/cm.yaml `${SECRET_DOMAIN}`",
        ],
        "{doc:#}"
    );
    let message = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "apps/web/cm.yaml")
        .unwrap()["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.contains("Secret/flux-system/cluster-secrets (read by the kustomize-mutating-webhook of HelmRelease flux-system/kustomize-mutating-webhook)"),
        "{message}"
    );

    repo.write(
        "clusters/main/cluster-config.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-config\n  namespace: flux-system\ndata:\n  STAGE: green\n",
    );
    let (code, doc) = cutover(&repo);
    assert_eq!(
        deleted(&doc),
        [
            "ConfigMap/media/api-blue identity-changed Kustomization/media/api",
            "ConfigMap/media/web-blue identity-changed Kustomization/media/web",
        ],
        "{doc:#}"
    );
    assert_eq!((code, doc["verdict"].as_str()), (1, Some("deletes")));
}

/// `cluster-settings` applied by two Kustomizations with different data (a cluster folder
/// that also applies a sibling cluster's folder, as some multi-cluster layouts do): each
/// applies its own copy, and the cluster holds the copy applied last, which is not known
/// before the merge. A variable either copy sets is unknown, not undefined: no strict
/// substitution failure is claimed, and a name made of it is not judged. A variable neither
/// sets still fails the build, and one both set alike is known whichever applied last
/// (both apply with kustomize-controller's field manager, so the last apply's data is the
/// whole of it).
#[test]
fn a_source_two_owners_apply_differently_holds_either() {
    let settings = |data: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cluster-settings, namespace: flux-system}}\ndata: {{{data}}}\n")
    };
    let repo = TestRepo::empty();
    repo.write(
        "clusters/dev/kustomization.yaml",
        "resources: [settings.yaml, shared.yaml, app.yaml]\n",
    )
    .write(
        "clusters/dev/settings.yaml",
        &settings("ZONE: dev, TEAM: a"),
    )
    .write(
        "clusters/dev/shared.yaml",
        &ks("shared", "./clusters/shared", ""),
    )
    .write(
        "clusters/shared/kustomization.yaml",
        "resources: [settings.yaml]\n",
    )
    .write(
        "clusters/shared/settings.yaml",
        &settings("ZONE: prod, STORE: vault, TEAM: a"),
    )
    .write(
        "clusters/dev/app.yaml",
        &ks(
            "app",
            "./app",
            "  postBuild:\n    substituteFrom: [{kind: ConfigMap, name: cluster-settings}]\n",
        ),
    )
    .write(
        "app/store.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: \"store-${STORE}\", namespace: web}\n",
    );
    repo.commit_all("init");
    // Nothing changes: no failure is claimed, and `check` finds no undefined variable.
    let (code, doc) = cutover_json(&repo, &["--from", "HEAD", "--to", "HEAD"]);
    assert_eq!(
        (code, doc["verdict"].as_str()),
        (0, Some("safe")),
        "{doc:#}"
    );
    assert!(
        warnings(&doc).iter().all(|(f, _)| f != "build failure"),
        "{doc:#}"
    );
    let check = repo.run(&["check", "--format", "json"]);
    assert!(
        !check.stdout.contains("undefined-variable"),
        "{}",
        check.stdout
    );
    // A change to what the app builds: its name comes from a value only the cluster knows.
    repo.write(
        "app/store.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: \"store-${STORE}\", namespace: web}\ndata: {a: b}\n",
    );
    let (code, doc) = cutover(&repo);
    assert_eq!(
        (code, doc["verdict"].as_str()),
        (1, Some("incomplete")),
        "{doc:#}"
    );
    assert!(
        doc["incomplete"]
            .to_string()
            .contains("may come from ConfigMap/cluster-settings, which cannot be read"),
        "{doc:#}"
    );
    assert!(
        warnings(&doc).iter().any(|(f, m)| f == "two owners"
            && m.contains("ConfigMap/flux-system/cluster-settings is applied by both")),
        "{doc:#}"
    );
    // A variable neither copy sets fails Flux's build, whichever applied last.
    repo.write(
        "app/store.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: store, namespace: web}\ndata: {a: \"${REGION}\"}\n",
    );
    let (_, doc) = cutover(&repo);
    assert!(
        warnings(&doc)
            .iter()
            .any(|(f, m)| f == "build failure" && m.contains("needs `${REGION}`")),
        "{doc:#}"
    );

    // A name made of a value both copies hold alike is judged: its rename deletes the old.
    repo.write(
        "app/store.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: \"team-${TEAM}\", namespace: web}\n",
    );
    repo.commit_all("team");
    repo.write(
        "app/store.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: \"crew-${TEAM}\", namespace: web}\n",
    );
    let (code, doc) = cutover(&repo);
    assert_eq!(
        (code, doc["verdict"].as_str()),
        (1, Some("deletes")),
        "{doc:#}"
    );
    assert_eq!(
        deleted(&doc),
        ["ConfigMap/web/team-a identity-changed Kustomization/flux-system/app"],
        "{doc:#}"
    );
}
