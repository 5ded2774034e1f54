//! Every key of a kustomization the builder knows, written once with what it does to a build:
//! the one table that the warning of unmodelled keys (`modelled`), the choice to stream a
//! build (`transforms`) and `transform` itself (which reads a transformer only as a
//! `Transformer`) are made from. A transformer taught to `transform` is therefore never left
//! out of the choice to stream, where it would silently do nothing.

use serde_json::{Map, Value};

macro_rules! keys {
    (
        loads: $($loads:literal),+ ;
        transforms: $($variant:ident = $key:literal),+ ;
        content: $($content:literal),+ ;
    ) => {
        /// A key whose value changes the objects a kustomization accumulated: `transform`
        /// applies it once the resources are loaded, so a kustomization that has one is built
        /// whole rather than streamed (see `transforms`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(super) enum Transformer {
            $($variant,)+
        }

        impl Transformer {
            /// Every transformer, in the order of the table.
            pub(super) const ALL: &'static [Transformer] = &[$(Transformer::$variant,)+];

            /// The key as a kustomization writes it.
            pub(super) const fn key(self) -> &'static str {
                match self {
                    $(Transformer::$variant => $key,)+
                }
            }
        }

        /// Every key the builder knows: those it reads as objects are loaded or made, the
        /// transformers, and those that change what objects hold, never which objects a
        /// build yields.
        const MODELLED: &[&str] = &[$($loads,)+ $($key,)+ $($content,)+];
    };
}

keys! {
    // Read as the kustomization's objects are loaded or made.
    loads: "apiVersion", "kind", "metadata", "resources", "bases", "configMapGenerator",
        "secretGenerator", "generatorOptions", "helmCharts", "helmChartInflationGenerator",
        "helmGlobals";
    // Applied by `transform`, in kustomize's order (`KustTarget.accumulateTarget`).
    transforms: Components = "components", PatchesStrategicMerge = "patchesStrategicMerge",
        Patches = "patches", Namespace = "namespace", NamePrefix = "namePrefix",
        NameSuffix = "nameSuffix", CommonLabels = "commonLabels", Labels = "labels",
        CommonAnnotations = "commonAnnotations", PatchesJson6902 = "patchesJson6902",
        Replacements = "replacements";
    // Content only: images, replicas and the like. Transformer configurations only add field
    // specs to the built-in ones (kustomize's `builtinconfig.TransformerConfig.Merge`):
    // names, namespaces and labels are still set where they were, so the object set does
    // not change; their name references are read (`nameref`).
    content: "images", "replicas", "sortOptions", "buildMetadata", "crds", "configurations";
}

/// Whether the builder knows key `key` of a kustomization (else the build warns of it: what
/// it adds, removes or renames is not seen).
pub(super) fn modelled(key: &str) -> bool {
    MODELLED.contains(&key)
}

/// Every field of kustomize's `types.Kustomization` (api v0.21.1), as its JSON tags name them.
const FIELDS: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "bases",
    "buildMetadata",
    "commonAnnotations",
    "commonLabels",
    "components",
    "configMapGenerator",
    "configurations",
    "crds",
    "generatorOptions",
    "generators",
    "helmChartInflationGenerator",
    "helmCharts",
    "helmGlobals",
    "imageTags",
    "images",
    "labels",
    "namePrefix",
    "nameSuffix",
    "namespace",
    "openapi",
    "patches",
    "patchesJson6902",
    "patchesStrategicMerge",
    "replacements",
    "replicas",
    "resources",
    "secretGenerator",
    "sortOptions",
    "transformers",
    "validators",
    "vars",
];

/// `s` as Go's encoding/json compares a key with a field name when they differ: ASCII
/// letters in lower case, `ſ` as `s`, `K` (Kelvin) as `k`.
pub(super) fn fold(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\u{17F}' => 's',
            '\u{212A}' => 'k',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

/// The field key `key` of a kustomization sets, as Go's encoding/json matches it (kustomize
/// and Flux's generator both read a kustomization so): the field of that name, else one
/// equal to it without regard to case (ASCII letters, and `ſ` as `s`, `K` (Kelvin) as `k`).
pub(super) fn field(key: &str) -> Option<&'static str> {
    FIELDS
        .iter()
        .find(|f| **f == key)
        .or_else(|| {
            let folded = fold(key);
            FIELDS.iter().find(|f| fold(f) == folded)
        })
        .copied()
}

/// Kustomization `k` with each key named as the field it sets (see `field`; where two keys
/// set one field the later wins, as in Go); a key that sets no field is kept as it is.
pub(super) fn canonical(k: Map<String, Value>) -> Map<String, Value> {
    if k.keys().all(|key| field(key).is_none_or(|f| f == key)) {
        return k;
    }
    let mut out = Map::new();
    for (key, v) in k {
        let name = field(&key).map_or(key, str::to_string);
        out.insert(name, v);
    }
    out
}

/// Whether kustomization `k` may change what it accumulated (it has a `Transformer`, or a
/// generator that merges): else its build is the objects of its resources and generators as
/// they are loaded.
pub(super) fn transforms(k: &Map<String, Value>) -> bool {
    Transformer::ALL.iter().any(|t| k.contains_key(t.key())) || merges(k)
}

/// Whether a generator of `k` merges into or replaces an object of its resources, which
/// it needs in hand.
fn merges(k: &Map<String, Value>) -> bool {
    ["configMapGenerator", "secretGenerator"]
        .iter()
        .filter_map(|f| k.get(*f).and_then(Value::as_array))
        .flatten()
        .any(|g| {
            matches!(
                g.get("behavior").and_then(Value::as_str),
                Some("merge" | "replace")
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `kubectl kustomize` (v5.5) reads `Resources:` and `namePREFIX:` as `resources` and
    /// `namePrefix`, as Go's encoding/json matches field names.
    #[test]
    fn a_key_names_its_field_without_regard_to_case() {
        assert_eq!(field("resources"), Some("resources"));
        assert_eq!(field("Resources"), Some("resources"));
        assert_eq!(field("namePREFIX"), Some("namePrefix"));
        assert_eq!(field("apiversion"), Some("apiVersion"));
        assert_eq!(field("re\u{17F}ources"), Some("resources"));
        assert_eq!(field("\u{212A}ind"), Some("kind"));
        assert_eq!(field("resource"), None);
        let k: Map<String, Value> =
            serde_json::from_str(r#"{"Resources": ["a"], "resources": ["b"], "x": 1}"#).unwrap();
        assert_eq!(
            Value::Object(canonical(k)),
            serde_json::json!({"resources": ["b"], "x": 1})
        );
        assert!(FIELDS.iter().all(|f| field(f) == Some(*f)));
        assert!(MODELLED.iter().all(|m| FIELDS.contains(m)));
    }

    #[test]
    fn each_key_is_in_the_table_once() {
        let mut keys = MODELLED.to_vec();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), MODELLED.len());
        assert!(Transformer::ALL.iter().all(|t| modelled(t.key())));
    }

    /// A kustomization with any transformer is built whole; one with only keys that load
    /// objects or change their content streams.
    #[test]
    fn a_kustomization_with_a_transformer_is_built_whole() {
        let with = |key: &str| {
            let mut k = Map::new();
            k.insert(key.to_string(), Value::Null);
            k
        };
        for t in Transformer::ALL {
            assert!(transforms(&with(t.key())), "{}", t.key());
        }
        for key in MODELLED {
            let transformer = Transformer::ALL.iter().any(|t| t.key() == *key);
            assert_eq!(transforms(&with(key)), transformer, "{key}");
        }
    }

    /// `transform` reads every key it applies as a `Transformer` (never by its text, which
    /// would leave the key out of `transforms`), and applies every transformer of the table.
    #[test]
    fn transform_reads_every_key_it_applies_from_the_table() {
        let source = include_str!("transform.rs");
        let code = source.split("#[cfg(test)]").next().unwrap_or(source);
        for by_text in [r#"k.get(""#, r#"list(k, ""#, r#"str_field(k, ""#] {
            assert!(
                !code.contains(by_text),
                "transform.rs reads a key as `{by_text}...`"
            );
        }
        for t in Transformer::ALL {
            let named = regex::Regex::new(&format!(r"Transformer::{t:?}\b")).unwrap();
            assert!(
                named.is_match(code),
                "transform.rs never applies `{}`",
                t.key()
            );
        }
    }
}
