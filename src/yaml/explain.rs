//! serde-saphyr's errors in fluxwave's words, located in the file: its own wording names its
//! Rust API or prints a limit as Rust debug text, which means nothing to a manifest's author.

use super::{span_of, Text};
use crate::error::SourceError;

/// `err` of reading `text` (of `path`), said in fluxwave's words and located in the file.
pub(super) fn located(path: &str, text: &Text, err: serde_saphyr::Error) -> SourceError {
    let (message, help) = explained(&err);
    let mut e = SourceError::new(path, message);
    if let Some(help) = help {
        e = e.help(help);
    }
    match err.location() {
        Some(loc) if loc.line() > 0 => e.at(text, span_of(text, &loc)),
        _ => e,
    }
}

/// The help for a file that trips a reading limit.
const LIMIT_HELP: &str =
    "fluxwave reads ordinary manifests well inside these limits; write the values out (no anchors and aliases), flatten the nesting, or split the file";

/// What went wrong, in fluxwave's words, and what to do: serde-saphyr's own wording names
/// its Rust API (`use Option<String>`, `set DuplicateKeyPolicy in Options`) or prints a
/// limit as Rust debug text (`Nodes { nodes: 250001 }`), neither of which means anything
/// to the author of a manifest. Everything else is its message in YAML's terms.
fn explained(err: &serde_saphyr::Error) -> (String, Option<&'static str>) {
    use serde_saphyr::budget::BudgetBreach as B;
    use serde_saphyr::Error as E;
    let limits = serde_saphyr::Budget::default();
    let limit = |what: String| (what, Some(LIMIT_HELP));
    let alias =
        || limit("aliases expand the file beyond what fluxwave reads (an alias bomb?)".to_string());
    match err.without_snippet() {
        E::AliasError { error, .. } => explained(error),
        E::Budget { breach, .. } => match breach {
            B::Depth { .. } => limit(format!(
                "the file is nested more than {} levels deep: beyond what fluxwave reads",
                limits.max_depth
            )),
            B::Nodes { .. } => limit(format!(
                "the file holds more than {} values (after aliases are expanded): beyond what fluxwave reads",
                limits.max_nodes
            )),
            B::Events { .. } => limit(format!(
                "the file holds more than {} YAML events (after aliases are expanded): beyond what fluxwave reads",
                limits.max_events
            )),
            B::Aliases { .. } => limit(format!(
                "the file uses more than {} aliases: beyond what fluxwave reads",
                limits.max_aliases
            )),
            B::Anchors { .. } => limit(format!(
                "the file defines more than {} anchors: beyond what fluxwave reads",
                limits.max_anchors
            )),
            B::Documents { .. } => (
                format!(
                    "the file holds more than {} YAML documents: beyond what fluxwave reads",
                    limits.max_documents
                ),
                Some("split the file into several"),
            ),
            B::ScalarBytes { .. } | B::InputBytes { .. } => (
                "the file holds more text than fluxwave reads".to_string(),
                Some("split the file, or keep generated bulk out of the GitOps tree"),
            ),
            B::MergeKeys { .. } => limit(format!(
                "the file uses more than {} merge keys (`<<`): beyond what fluxwave reads",
                limits.max_merge_keys
            )),
            B::AliasAnchorRatio { .. } | B::RecordedAnchorEvents { .. } | B::RecordedAnchorBytes { .. } => alias(),
            B::SequenceUnbalanced => ("a list or mapping ends that never started".to_string(), Some("check the brackets and indentation here")),
            _ => limit("the file goes beyond what fluxwave reads".to_string()),
        },
        E::AliasReplayCounterOverflow { .. }
        | E::AliasReplayLimitExceeded { .. }
        | E::AliasExpansionLimitExceeded { .. }
        | E::AliasReplayStackDepthExceeded { .. } => alias(),
        E::RecursiveReferencesRequireWeakTypes { .. } => (
            "an alias refers to the node that holds it (a cycle)".to_string(),
            Some("write the value out instead of the alias"),
        ),
        E::UnknownAnchor { .. } => (
            "an alias (`*name`) refers to an anchor (`&name`) defined nowhere before it".to_string(),
            Some("define the anchor before the alias, or write the value out"),
        ),
        E::DuplicateMappingKey { key, .. } => (
            match key {
                Some(k) => format!("key `{k}` appears twice in the same mapping"),
                None => "a key appears twice in the same mapping".to_string(),
            },
            Some("keep one of the two entries: which one a reader takes differs between tools"),
        ),
        E::NullIntoString { .. } | E::InvalidCharNull { .. } => (
            "a value is required here, and the field is empty".to_string(),
            Some("write a value after the colon, or remove the field"),
        ),
        E::MultipleDocuments { .. } => (
            "the file holds more than one YAML document, where one is read".to_string(),
            Some("keep one document in the file (remove the `---` separators)"),
        ),
        E::BinaryNotUtf8 { .. } | E::BytesNotSupportedMissingBinaryTag { .. } => (
            "a `!!binary` value is not text".to_string(),
            Some("write the value as a string"),
        ),
        E::Unexpected { expected, .. } => (
            format!("expected {}", expected_in_yaml(expected)),
            None,
        ),
        E::InvalidScalar { ty, .. } => (
            format!("expected {}", scalar_in_yaml(ty)),
            None,
        ),
        E::InvalidUtf8Input => (
            "the file is not UTF-8 text".to_string(),
            Some("save the file as UTF-8"),
        ),
        _ => {
            let message = plain_message(err);
            // A message from inside the reader (`internal ...`, `seed reused ...`) is no
            // fault of the file's author; it is still bad input, reported where it is.
            if message.starts_with("internal") || message.contains("recursion limit") {
                let message = if message.contains("recursion limit") {
                    format!(
                        "the file is nested more than {} levels deep: beyond what fluxwave reads",
                        limits.max_depth
                    )
                } else {
                    "cannot be read as YAML here".to_string()
                };
                return (message, Some(LIMIT_HELP));
            }
            (message, None)
        }
    }
}

/// What a value of the Rust type `ty` is, as a manifest's author writes it.
fn scalar_in_yaml(ty: &str) -> String {
    let range = |min: i128, max: u128| format!("a whole number from {min} to {max}");
    match ty {
        "u8" => range(0, u8::MAX.into()),
        "u16" => range(0, u16::MAX.into()),
        "u32" => range(0, u32::MAX.into()),
        "u64" | "usize" => range(0, u64::MAX.into()),
        "i8" => range(i8::MIN.into(), i8::MAX as u128),
        "i16" => range(i16::MIN.into(), i16::MAX as u128),
        "i32" => range(i32::MIN.into(), i32::MAX as u128),
        "i64" | "isize" => range(i64::MIN.into(), i64::MAX as u128),
        "u128" => range(0, u128::MAX),
        "i128" => range(i128::MIN, i128::MAX as u128),
        "f32" | "f64" | "floating point" => "a number".to_string(),
        "bool" | "boolean" => "`true` or `false`".to_string(),
        "char" => "a single character".to_string(),
        other if other.starts_with('u') || other.starts_with('i') => "a whole number".to_string(),
        _ => "a value of another kind".to_string(),
    }
}

/// serde-saphyr's name of the token it expected, as YAML calls it.
fn expected_in_yaml(expected: &str) -> String {
    match expected {
        "mapping start" | "empty mapping start" => "a mapping (`key: value` lines)",
        "sequence start" => "a list (`- item` lines)",
        "string scalar" => "a single value (text or a number), not a list or mapping",
        "scalar" | "single YAML node" | "value" => "a single value",
        "binary scalar" => "a `!!binary` value",
        "mapping end" | "empty mapping end" => "the end of the mapping",
        other => return format!("something else here (the reader wanted a {other})"),
    }
    .to_string()
}

/// serde-saphyr's message, without its own location suffix and snippet (ours are attached).
fn plain_message(err: &serde_saphyr::Error) -> String {
    let full = err.to_string();
    let first = full.lines().next().unwrap_or("invalid YAML").trim();
    let first = first.trim_start_matches("error: ");
    let first = match first.find(" at line ") {
        Some(i) => &first[..i],
        None => first,
    };
    // serde-saphyr may also lead with the location: `line 11 column 3: ...`.
    let first = match first.strip_prefix("line ").and_then(|r| r.split_once(": ")) {
        Some((loc, rest))
            if loc
                .split(' ')
                .next()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())) =>
        {
            rest
        }
        _ => first,
    };
    let first = first.trim();
    if first.is_empty() {
        "invalid YAML".to_string()
    } else {
        first.to_string()
    }
}

/// serde-saphyr's error as one line, without the snippet of the text it carries and with
/// any secret value of `text` it quotes masked (see `redact`).
pub fn brief_error(text: &str, err: &serde_saphyr::Error) -> String {
    let (message, _) = explained(err);
    let secrets = crate::redact::ranges(text);
    let message = crate::redact::message(&message, text, &secrets);
    match err.location() {
        Some(loc) if loc.line() > 0 => {
            format!("{message} (line {}, column {})", loc.line(), loc.column())
        }
        _ => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::{parse, parse_all};

    fn alias_bomb() -> String {
        let mut s = "l0: &l0 [a, a, a, a, a, a, a, a, a]\n".to_string();
        for i in 1..=9 {
            let refs = vec![format!("*l{}", i - 1); 9].join(", ");
            s.push_str(&format!("l{i}: &l{i} [{refs}]\n"));
        }
        s
    }

    /// Every error the YAML reader gives reaches the user in fluxwave's words, located, with
    /// what to do where there is something to do: never the reader's Rust API (`Options`,
    /// `Option<String>`, `from_str_multiple`) nor a limit as Rust debug text.
    #[test]
    fn reader_errors_are_said_in_the_products_words() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Named {
            name: String,
        }
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        let nested: String = (0..100)
            .map(|i| format!("{}k{i}:\n", "  ".repeat(i)))
            .collect::<String>()
            + &"  ".repeat(100)
            + "x: 1\n";
        let cases: Vec<(String, &str)> = vec![
            (alias_bomb(), "values (after aliases are expanded)"),
            (deep, "nested more than 64 levels deep"),
            (nested, "nested more than 64 levels deep"),
            ("a: 1\nb: 2\na: 3\n".into(), "key `a` appears twice"),
            ("x: &x [*x]\n".into(), "refers to the node that holds it"),
            ("a: *nowhere\n".into(), "defined nowhere before it"),
        ];
        for (text, says) in cases {
            let text = Text::new(text);
            let e = parse_all("f.yaml", &text).unwrap_err();
            assert!(e.message.contains(says), "{says:?}: {}", e.message);
            assert!(e.line_col().is_some(), "{says:?}: located");
            assert!(e.help.is_some(), "{says:?}: a help line");
            for leak in [
                "Options",
                "Option<",
                "{ ",
                "budget breached",
                "from_str",
                "Rust",
            ] {
                assert!(!e.message.contains(leak), "{leak:?} in {}", e.message);
            }
        }
        let typed = [
            ("name:\n", "the field is empty"),
            ("name: a\n---\nname: b\n", "more than one YAML document"),
            ("[a]\n", "expected a mapping"),
            ("name: [a]\n", "expected a single value"),
        ];
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Port {
            port: u16,
            on: Option<bool>,
        }
        for (text, says) in [
            ("port: 70000\n", "expected a whole number from 0 to 65535"),
            ("port: 1\non: maybe\n", "expected `true` or `false`"),
        ] {
            let e = parse::<Port>("f.yaml", &Text::new(text.into())).unwrap_err();
            assert!(e.message.contains(says), "{says:?}: {}", e.message);
            assert!(!e.message.contains("u16"), "{}", e.message);
        }
        for (text, says) in typed {
            let e = parse::<Named>("f.yaml", &Text::new(text.into())).unwrap_err();
            assert!(e.message.contains(says), "{says:?}: {}", e.message);
            for leak in ["Options", "Option<", "from_str", "struct Named", "weak"] {
                assert!(!e.message.contains(leak), "{leak:?} in {}", e.message);
            }
        }
    }
}
