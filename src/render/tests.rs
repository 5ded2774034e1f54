use super::*;
use crate::catalog;
use crate::yaml::Text;

fn svc(name: &str, spec: &str) -> Service {
    let text = format!(
        "apiVersion: fluxwave.dev/v1alpha1\nkind: ServiceDefinition\nmetadata:\n  name: {name}\nspec:\n{spec}"
    );
    catalog::parse(&format!("catalog/{name}.yaml"), name, Text::new(text))
        .unwrap_or_else(|e| panic!("{e:?}"))
}

const CONTRACT: &str = "  image:\n    repository: ghcr.io/example/web\n    tag: \"1.20\"\n  port: 8080\n  ingress:\n    host: web.example.org\n";

fn kinds(text: &str) -> Vec<String> {
    yaml::parse_all("x", &Text::new(text.to_string()))
        .unwrap()
        .iter()
        .map(|d| d["kind"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn contract_fields_alone_render_a_whole_service() {
    let files = service(&svc("web", CONTRACT), Options::default()).unwrap();
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].name, "web.yaml");
    assert_eq!(
        kinds(&files[0].text),
        [
            "Namespace",
            "Deployment",
            "Service",
            "Ingress",
            "ImageRepository",
            "ImagePolicy"
        ]
    );
    let text = &files[0].text;
    assert!(
        text.contains(
            "image: ghcr.io/example/web:1.20 # {\"$imagepolicy\": \"flux-system:web\"}\n"
        ),
        "{text}"
    );
    // `1.20` read by a YAML 1.1 reader would be the float 1.2: the range is quoted.
    assert!(text.contains("range: \">=1.20\"\n"), "{text}");
    assert!(!text.contains(PRUNE_ANNOTATION), "nothing stateful: {text}");
    assert_eq!(
        text,
        &service(&svc("web", CONTRACT), Options::default()).unwrap()[0].text,
        "deterministic"
    );
}

#[test]
fn no_image_automation_leaves_objects_and_marker_out() {
    let files = service(
        &svc("web", CONTRACT),
        Options {
            image_automation: false,
        },
    )
    .unwrap();
    assert_eq!(
        kinds(&files[0].text),
        ["Namespace", "Deployment", "Service", "Ingress"]
    );
    assert!(!files[0].text.contains("$imagepolicy"));
    let off = CONTRACT.replace(
        "    tag: \"1.20\"\n",
        "    tag: \"1.20\"\n    automation: {enabled: false}\n",
    );
    assert!(!service(&svc("web", &off), Options::default()).unwrap()[0]
        .text
        .contains("ImagePolicy"));
}

#[test]
fn a_non_semver_tag_needs_a_policy_only_when_automated() {
    let s = svc("web", &CONTRACT.replace("\"1.20\"", "latest"));
    let errs = service(&s, Options::default()).unwrap_err();
    assert_eq!(errs[0].line_col(), Some((8, 10)));
    assert!(
        errs[0].message.contains("not semver"),
        "{}",
        errs[0].message
    );
    assert!(service(
        &s,
        Options {
            image_automation: false
        }
    )
    .is_ok());
}

const STATEFUL: &str = "  image: {repository: docker.io/library/app, tag: \"2.0.0\"}\n  port: 80\n  env:\n    - {name: FLAG, value: \"on\"}\n    - {name: MODE, value: \"012\"}\n  volumes:\n    - name: data\n      mountPath: /data\n      persistent: {size: 5Gi, storageClass: longhorn}\n    - name: tmp\n      mountPath: /tmp\n  database:\n    size: 10Gi\n    instances: 2\n";

#[test]
fn stateful_objects_are_protected_from_prune_by_default() {
    let files = service(&svc("my-app", STATEFUL), Options::default()).unwrap();
    let names: Vec<(&str, &str)> = files
        .iter()
        .map(|f| (f.name.as_str(), f.unit.as_str()))
        .collect();
    assert_eq!(
        names,
        [("my-app.yaml", "my-app"), ("my-app-db.yaml", "my-app-db")]
    );
    let app = yaml::parse_all("x", &Text::new(files[0].text.clone())).unwrap();
    let db = yaml::parse_all("x", &Text::new(files[1].text.clone())).unwrap();
    let protected = |v: &Value| v["metadata"]["annotations"][PRUNE_ANNOTATION] == "disabled";
    assert!(protected(&app[0]), "the Namespace holds a claim");
    assert_eq!(app[1]["kind"], "PersistentVolumeClaim");
    assert_eq!(app[1]["metadata"]["name"], "my-app-data");
    assert!(protected(&app[1]));
    assert!(!protected(&app[2]), "a Deployment is not stateful");
    assert_eq!(app[2]["spec"]["strategy"]["type"], "Recreate");
    assert_eq!(
        app[2]["spec"]["template"]["spec"]["volumes"][1],
        json!({"name": "tmp", "emptyDir": {}})
    );
    assert_eq!(db[1]["kind"], "Cluster");
    assert!(protected(&db[0]) && protected(&db[1]));
    assert_eq!(db[1]["spec"]["bootstrap"]["initdb"]["database"], "my_app");
    assert_eq!(
        db[1]["spec"]["bootstrap"]["initdb"]["secret"]["name"],
        "my-app-db-app"
    );
    assert!(files[0].text.contains("value: \"on\"\n"));
    assert!(files[0].text.contains("value: \"012\"\n"));

    let off = svc("my-app", &format!("{STATEFUL}  pruneProtection: false\n"));
    for f in service(&off, Options::default()).unwrap() {
        assert!(!f.text.contains(PRUNE_ANNOTATION), "{}", f.text);
    }
}

#[test]
fn database_implies_its_dependency_once() {
    let s = svc("my-app", STATEFUL);
    let deps: Vec<&str> = s.dependencies.iter().map(|d| d.to.as_str()).collect();
    assert_eq!(deps, ["my-app-db"]);
    let listed = svc(
        "my-app",
        &format!("  dependencies:\n    - to: my-app-db\n{STATEFUL}"),
    );
    assert_eq!(listed.dependencies.len(), 1);
}
