//! The string fields of kustomize's `types.Kustomization` that decide which objects a build
//! yields, held to their type as kustomize holds them: the file goes through sigs.k8s.io/yaml
//! to JSON and `encoding/json` refuses a boolean or a number where a string belongs. With
//! YAML 1.1's words (`yaml::parse_kustomization`), `namespace: no` fails the build as
//! `kubectl kustomize` fails it: "invalid Kustomization: json: cannot unmarshal bool into Go
//! struct field Kustomization.namespace of type string".

use serde_json::{Map, Value};

use super::error::BuildError;

/// The first field of `k` whose value is not a string, in kustomize's words.
pub(super) fn check(file: &str, k: &Map<String, Value>) -> Result<(), BuildError> {
    let scalar = |field: &str, v: &Value| typed(file, field, v);
    for field in ["namespace", "namePrefix", "nameSuffix"] {
        if let Some(v) = k.get(field) {
            scalar(&format!("Kustomization.{field}"), v)?;
        }
    }
    for field in [
        "resources",
        "components",
        "bases",
        "commonLabels",
        "commonAnnotations",
    ] {
        for v in values(k.get(field)) {
            scalar(&format!("Kustomization.{field}"), v)?;
        }
    }
    for label in k
        .get("labels")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for v in values(label.get("pairs")) {
            scalar("Label.labels.pairs", v)?;
        }
    }
    Ok(())
}

/// The items of a list or the values of a mapping (what Go decodes into `[]string` or
/// `map[string]string`).
fn values(v: Option<&Value>) -> Box<dyn Iterator<Item = &Value> + '_> {
    match v {
        Some(Value::Array(items)) => Box::new(items.iter()),
        Some(Value::Object(map)) => Box::new(map.values()),
        _ => Box::new(std::iter::empty()),
    }
}

fn typed(file: &str, field: &str, v: &Value) -> Result<(), BuildError> {
    let kind = match v {
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        _ => return Ok(()),
    };
    Err(BuildError::NotAString {
        file: file.to_string(),
        field: field.to_string(),
        kind,
    })
}

#[cfg(test)]
mod tests {
    use crate::kustomize::{BuildError, Builder};
    use crate::tree::FileTree;

    fn build(k: &str) -> Result<Vec<String>, BuildError> {
        let tree = FileTree::from_files([
            ("k/kustomization.yaml", k),
            (
                "k/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\n",
            ),
        ]);
        let built = Builder::new(&tree).build_dir("k")?;
        Ok(built
            .iter()
            .map(|r| format!("{}/{}", r.meta_str("namespace"), r.meta_str("name")))
            .collect())
    }

    /// `kubectl kustomize` (v5.5) on these kustomizations: YAML 1.1 words where a string
    /// belongs fail the build with the field named; quoted, or in a spelling go-yaml v2 does
    /// not know (`yEs`), they are strings; the manifest's `name: y` is the name `y`.
    #[test]
    fn yaml_1_1_words_in_a_kustomization_fail_as_kustomize_fails() {
        for (k, field) in [
            ("namespace: no\n", "Kustomization.namespace"),
            ("namePrefix: y\n", "Kustomization.namePrefix"),
            ("nameSuffix: on\n", "Kustomization.nameSuffix"),
            ("commonLabels: {a: off}\n", "Kustomization.commonLabels"),
            ("labels: [{pairs: {b: yes}}]\n", "Label.labels.pairs"),
            ("namespace: True\n", "Kustomization.namespace"),
        ] {
            let err = build(&format!("resources: [cm.yaml]\n{k}")).unwrap_err();
            assert_eq!(
                err,
                BuildError::NotAString {
                    file: "k/kustomization.yaml".into(),
                    field: field.into(),
                    kind: "bool"
                }
            );
        }
        let err = build("resources: [cm.yaml]\nnamespace: 012\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "k/kustomization.yaml: invalid Kustomization: json: cannot unmarshal number into Go \
             struct field Kustomization.namespace of type string (quote the value)"
        );
        assert_eq!(
            build("resources: [cm.yaml]\nnamespace: \"no\"\n"),
            Ok(vec!["no/y".to_string()])
        );
        assert_eq!(
            build("resources: [cm.yaml]\nnamespace: yEs\n"),
            Ok(vec!["yEs/y".to_string()])
        );
        assert_eq!(
            build("resources: [cm.yaml]\nnamespace: null\n"),
            Ok(vec!["/y".to_string()])
        );
    }
}
