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
        "secretGenerator", "generatorOptions";
    // Applied by `transform`, in kustomize's order (`KustTarget.accumulateTarget`).
    transforms: Components = "components", PatchesStrategicMerge = "patchesStrategicMerge",
        Patches = "patches", Namespace = "namespace", NamePrefix = "namePrefix",
        NameSuffix = "nameSuffix", CommonLabels = "commonLabels", Labels = "labels",
        CommonAnnotations = "commonAnnotations", PatchesJson6902 = "patchesJson6902",
        Replacements = "replacements";
    // Content only: images, replicas and the like. Transformer configurations only add field
    // specs to the built-in ones (kustomize's `builtinconfig.TransformerConfig.Merge`):
    // names, namespaces and labels are still set where they were, so the object set does
    // not change.
    content: "images", "replicas", "sortOptions", "buildMetadata", "crds", "configurations";
}

/// Whether the builder knows key `key` of a kustomization (else the build warns of it: what
/// it adds, removes or renames is not seen).
pub(super) fn modelled(key: &str) -> bool {
    MODELLED.contains(&key)
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
