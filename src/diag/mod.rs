//! The registry of every finding code fluxwave reports: `check`'s lints, the plan problems
//! and drift of a catalog-managed repository, the warnings of `plan`/`apply`, and the
//! deletions of `check --base`. Each code has one kebab-case name, a default severity and a
//! one-line summary, all on one row of the table below; docs/checks.md has a section for each
//! (a unit test holds the two together).
//!
//! The table is a `macro_rules!` rather than `strum`'s derives: one row holds the name, the
//! severity and the summary side by side (strum would give the name, but severity and summary
//! would still be two hand-written matches, or string properties parsed at run time), and it
//! adds no proc-macro crate to the build.

use serde::Serialize;

use crate::yaml::Text;

pub mod render;

/// How bad a finding is. `check --deny warnings` counts warnings as errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

impl Severity {
    /// `error` or `warning`, as printed.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

macro_rules! codes {
    ($($(#[$doc:meta])* $variant:ident = $name:literal, $severity:ident, $summary:literal;)*) => {
        /// A finding code.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Code {
            $($(#[$doc])* $variant,)*
        }

        impl Code {
            /// Every code, in the order of the table.
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            /// The code as printed and documented (kebab-case).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Code::$variant => $name,)*
                }
            }

            /// The severity a finding of this code has (before `--deny warnings`).
            pub fn severity(self) -> Severity {
                match self {
                    $(Code::$variant => Severity::$severity,)*
                }
            }

            /// What the code catches, in one line.
            pub fn summary(self) -> &'static str {
                match self {
                    $(Code::$variant => $summary,)*
                }
            }
        }
    };
}

codes! {
    // The lints of any Flux repository (src/check/*.rs).
    SopsWithoutDecryption = "sops-without-decryption", Error,
        "a Flux Kustomization builds a SOPS-encrypted file but has no decryption";
    PlaintextSecret = "plaintext-secret", Error,
        "a Secret is committed in plain text";
    UndefinedVariable = "undefined-variable", Error,
        "a ${VAR} that postBuild substitution leaves undefined";
    UnknowableVariable = "unknowable-variable", Warning,
        "a ${VAR} that only a source outside the repository could define";
    UnknownDependency = "unknown-dependency", Error,
        "a dependsOn entry names a Flux Kustomization the environment does not have";
    DependencyCycle = "dependency-cycle", Error,
        "Flux Kustomizations whose dependsOn form a cycle";
    BuildFailed = "build-failed", Error,
        "a Flux Kustomization whose kustomize build fails";
    MissingPath = "missing-path", Error,
        "a Flux Kustomization's spec.path is not a folder of the repository";
    UnknownSource = "unknown-source", Error,
        "a Flux Kustomization's sourceRef names no source the environment builds";
    MissingTimeout = "missing-timeout", Warning,
        "a Flux Kustomization that waits but sets no timeout";
    DoubleOwner = "double-owner", Error,
        "one object built by two Flux Kustomizations";
    UnprotectedStateful = "unprotected-stateful", Warning,
        "a PersistentVolumeClaim, StatefulSet or database Cluster Flux may prune";
    UncoveredImagePolicy = "uncovered-image-policy", Error,
        "an image setter marker outside every ImageUpdateAutomation's update.path";
    UnknownImagePolicy = "unknown-image-policy", Error,
        "an image setter marker naming an ImagePolicy no environment builds";

    NoEnvironment = "no-environment", Error,
        "check found no Flux environment to build, so it checked nothing";
    UnusedIgnore = "unused-ignore", Warning,
        "a check.ignore entry or fluxwave:ignore comment that silences no finding";

    // A catalog-managed repository before its first apply (src/check/mod.rs).
    NotWaved = "not-waved", Warning,
        "the app tier is still one flat folder while the catalog has waves";

    // The Flux dependsOn graph against the catalog (src/check/dependency_drift.rs).
    DependencyDrift = "dependency-drift", Error,
        "a unit's Flux Kustomization lacks a dependsOn the catalog declares, or has one it does not";

    // Drift: a change `apply` would make (plan::changes::Drift).
    MisplacedFile = "misplaced-file", Error,
        "an app-tier file is not in its unit's folder (its wave's, or its own)";
    WaveFolderDrift = "wave-folder-drift", Error,
        "a wave's or a unit's folder has a kustomization.yaml missing or unlike the catalog's";
    WaveKustomizationDrift = "wave-kustomization-drift", Error,
        "a wave's or a unit's Flux Kustomization is missing or differs from the catalog's";
    BaseEntriesDrift = "base-entries-drift", Error,
        "clusters/base/kustomization.yaml does not list exactly the generated Kustomizations";
    MissingDecryption = "missing-decryption", Error,
        "an environment lacks the SOPS decryption patch of a wave or a unit's Kustomization";
    FlatKustomization = "flat-kustomization", Error,
        "the flat apps/kustomization.yaml is still there after the migration";
    RetiredKustomization = "retired-kustomization", Error,
        "the single apps Flux Kustomization is still there after the migration";
    InterruptedWrite = "interrupted-write", Error,
        "a write of apply was interrupted";

    // Plan problems (plan::Problem).
    UnownedFile = "unowned-file", Error,
        "an app-tier file belongs to no unit";
    DuplicateFile = "duplicate-file", Error,
        "the same file name in more than one place of the app tier";
    UnplacedDependency = "unplaced-dependency", Error,
        "a placed unit depends on a unit with no manifest";
    ForeignEntry = "foreign-entry", Warning,
        "an app-tier entry that is neither a manifest nor a wave's or a unit's folder";
    FlatKustomizationLoss = "flat-kustomization-loss", Error,
        "the flat kustomization lists or sets something no wave would carry";
    NotDeployedYet = "not-deployed-yet", Warning,
        "a manifest Flux does not apply today that the waves would start applying";

    // A warning of the change set (plan::changes::Warning).
    RetiredSettingDropped = "retired-setting-dropped", Warning,
        "the retired apps Kustomization sets something the waves will not carry";

    // `check --base REV` (check::cutover).
    CutoverDeletion = "cutover-deletion", Error,
        "Flux would delete an object going from the base revision to the working tree";
    DeletesStateful = "deletes-stateful", Error,
        "Flux would delete an object that holds data";
    PromotesStateful = "promotes-stateful", Error,
        "Flux would delete and recreate an object that holds data (a move to a later wave)";
    CutoverIncomplete = "cutover-incomplete", Error,
        "the change touches a Flux Kustomization whose objects fluxwave cannot see whole (another source, a failing build, an unmodelled feature): Flux may delete what it cannot report";
    CutoverUnmodelled = "cutover-unmodelled", Warning,
        "a kustomize feature fluxwave does not model, so the deletion analysis may be incomplete";
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Where a finding points: a byte span of a file's text (the text shared with the tree it
/// was read from, so a finding costs no copy of it).
#[derive(Debug, Clone)]
pub struct Place {
    pub text: Text,
    /// Byte offset and length, on character boundaries.
    pub span: (usize, usize),
}

impl Place {
    /// `len` bytes at `offset` of `text` (clamped to it).
    pub fn new(text: &Text, offset: usize, len: usize) -> Place {
        let start = offset.min(text.len());
        let end = offset.saturating_add(len).min(text.len());
        Place {
            text: text.clone(),
            span: (start, end - start),
        }
    }

    /// 1-based line and column (in characters) of the span's start.
    pub fn line_col(&self) -> (usize, usize) {
        crate::error::line_col(&self.text, self.span.0)
    }

    /// The text under the span (for tests; never printed, it may be a secret).
    #[cfg(test)]
    pub fn shown(&self) -> &str {
        self.text
            .get(self.span.0..self.span.0 + self.span.1)
            .unwrap_or("")
    }
}

/// One finding: data (a code, a severity, a place, a message and what to do), never an
/// error. `check` gathers every finding and decides its exit code by counting errors.
#[derive(Debug, Clone)]
pub struct Finding {
    pub code: Code,
    pub severity: Severity,
    /// Relative to the repository root.
    pub path: String,
    /// Where in the file, when the object or key is known.
    pub place: Option<Place>,
    pub message: String,
    pub help: String,
}

impl Finding {
    /// A finding of `code`, with the code's severity.
    pub fn new(
        code: Code,
        path: impl Into<String>,
        message: String,
        help: impl Into<String>,
    ) -> Finding {
        Finding {
            code,
            severity: code.severity(),
            path: path.into(),
            place: None,
            message,
            help: help.into(),
        }
    }

    /// At a place of the file's text.
    pub fn at(mut self, place: Option<Place>) -> Finding {
        self.place = place;
        self
    }

    /// 1-based line and column, when the place is known.
    pub fn line_col(&self) -> Option<(usize, usize)> {
        self.place.as_ref().map(Place::line_col)
    }
}

/// JSON's form of a finding: `line` and `column` (1-based) from the span, left out when the
/// place is unknown.
impl Serialize for Finding {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let pos = self.line_col();
        let mut m = s.serialize_struct("Finding", 7)?;
        m.serialize_field("code", &self.code)?;
        m.serialize_field("severity", &self.severity)?;
        m.serialize_field("path", &self.path)?;
        match pos {
            Some((line, column)) => {
                m.serialize_field("line", &line)?;
                m.serialize_field("column", &column)?;
            }
            None => {
                m.skip_field("line")?;
                m.skip_field("column")?;
            }
        }
        m.serialize_field("message", &self.message)?;
        m.serialize_field("help", &self.help)?;
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_kebab_case() {
        let mut names: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
        for n in &names {
            assert!(
                n.split('-').all(|w| !w.is_empty()
                    && w.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())),
                "{n}"
            );
        }
        names.sort_unstable();
        let len = names.len();
        names.dedup();
        assert_eq!(names.len(), len, "a code name is used twice");
    }

    /// docs/checks.md has a `## `<code>`` section for every code, with an example of what
    /// it prints; and every such section is a code of the registry.
    #[test]
    fn every_code_is_documented_with_an_example() {
        let docs = include_str!("../../docs/checks.md");
        for code in Code::ALL {
            let heading = format!("\n## `{code}`\n");
            let Some(at) = docs.find(&heading) else {
                panic!("docs/checks.md has no section `## `{code}``");
            };
            let body = &docs[at + heading.len()..];
            let body = &body[..body.find("\n## ").unwrap_or(body.len())];
            let shown = format!(
                "{}[{code}]",
                match code.severity() {
                    Severity::Error => "error",
                    Severity::Warning => "warning",
                }
            );
            assert!(
                body.contains("\n```\n") && body.contains(&shown),
                "the section of {code} in docs/checks.md has no example that shows `{shown}`"
            );
        }
        for line in docs.lines() {
            if let Some(name) = line.strip_prefix("## `").and_then(|l| l.strip_suffix('`')) {
                assert!(
                    Code::ALL.iter().any(|c| c.as_str() == name),
                    "docs/checks.md documents `{name}`, which is no code"
                );
            }
        }
    }
}
