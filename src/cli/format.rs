//! `--format`: one vocabulary of output formats for every command. Each command accepts the
//! values it prints (`Formats`, one constant per command, in the order `--help` lists them);
//! clap refuses any other value with the list of those the command accepts.

use std::ffi::OsStr;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};

use crate::error::Error;

/// An output format, as `--format` spells it. The spellings are a public interface (scripts
/// and CI workflows pass them): a value keeps its name even where its meaning differs by
/// command, and that meaning is written here.
///
/// | value      | commands                          | what is printed                      |
/// |------------|-----------------------------------|--------------------------------------|
/// | `text`     | waves, plan, check, cutover, diff, blast | for people (the default)      |
/// | `json`     | waves, plan, check, cutover, build, diff, blast | one document for programs |
/// | `yaml`     | build                             | a stream of documents (the default)  |
/// | `markdown` | waves, blast                      | Markdown tables                      |
/// | `mermaid`  | waves                             | a Mermaid flowchart                  |
/// | `github`   | check, diff                       | for GitHub Actions: see `Github`     |
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// For people: lines, and tables aligned in plain text. `check` shows each finding with a
    /// snippet of the line it points at.
    Text,
    /// One JSON document for programs, whose `version` is `report::JSON_VERSION`. Bad input
    /// is printed as a JSON `error` document on stdout too.
    Json,
    /// `build`: a stream of YAML documents, each after a comment naming its owner, its
    /// environment and its file.
    Yaml,
    /// Markdown: `waves`' table of nodes, `blast`'s tables.
    Markdown,
    /// `waves`: a Mermaid flowchart of the nodes and their dependencies, by wave.
    Mermaid,
    /// For GitHub Actions, as each command is used there. `check`: workflow commands
    /// (`::error file=...,line=...::message`) that annotate the lines of a pull request, and
    /// bad input as one. `diff`: a Markdown summary meant for `$GITHUB_STEP_SUMMARY` or a
    /// pull-request comment, and bad input as Markdown.
    Github,
}

impl Format {
    /// The value as `--format` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
            Format::Yaml => "yaml",
            Format::Markdown => "markdown",
            Format::Mermaid => "mermaid",
            Format::Github => "github",
        }
    }

    /// The error of `command` handed a format it does not print: clap refuses such a value
    /// first (`Formats`), so no run meets it.
    pub fn unsupported(self, command: &str) -> Error {
        Error::Usage(format!(
            "--format {}: `fluxwave {command}` does not print it",
            self.name()
        ))
    }
}

/// The formats one command accepts, in the order its `--help` lists them, each with the line
/// that help shows beside it (none: the value alone).
#[derive(Clone, Copy)]
pub struct Formats(&'static [(Format, Option<&'static str>)]);

pub const WAVES: Formats = Formats(&[
    (Format::Text, None),
    (Format::Json, None),
    (Format::Markdown, None),
    (Format::Mermaid, None),
]);

pub const PLAN: Formats = Formats(&[(Format::Text, None), (Format::Json, None)]);

pub const CHECK: Formats = Formats(&[
    (
        Format::Text,
        Some("Each finding with a snippet of the line it points at, then the counts"),
    ),
    (
        Format::Json,
        Some("`{\"findings\": [...], \"errors\": N, \"warnings\": N, \"environments\": [{name, path, kustomizations}], \"kustomizations\": N}`"),
    ),
    (
        Format::Github,
        Some("GitHub Actions workflow commands (`::error file=...,line=...::message`)"),
    ),
]);

pub const CUTOVER: Formats = Formats(&[(Format::Text, None), (Format::Json, None)]);

pub const BUILD: Formats = Formats(&[(Format::Yaml, None), (Format::Json, None)]);

pub const DIFF: Formats = Formats(&[
    (Format::Text, None),
    (Format::Json, None),
    (
        Format::Github,
        Some("Markdown for a pull-request comment or `$GITHUB_STEP_SUMMARY`"),
    ),
]);

pub const BLAST: Formats = Formats(&[
    (Format::Text, None),
    (Format::Json, None),
    (Format::Markdown, None),
]);

impl Formats {
    fn values(self) -> impl Iterator<Item = PossibleValue> {
        self.0.iter().map(|&(format, help)| {
            let value = PossibleValue::new(format.name());
            match help {
                Some(help) => value.help(help),
                None => value,
            }
        })
    }
}

impl TypedValueParser for Formats {
    type Value = Format;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<Format, clap::Error> {
        // As clap refuses a value of an enum: one that is not UTF-8 is quoted lossily, with the
        // values there are.
        let value = value.to_string_lossy();
        let name = PossibleValuesParser::new(self.values()).parse_ref(
            cmd,
            arg,
            OsStr::new(value.as_ref()),
        )?;
        self.0
            .iter()
            .map(|&(format, _)| format)
            .find(|format| format.name() == name)
            .ok_or_else(|| clap::Error::new(clap::error::ErrorKind::InvalidValue).with_cmd(cmd))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(self.values()))
    }
}
