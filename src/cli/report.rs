//! What every command's report shares: how a run ended (`Outcome`), the version of every
//! JSON document, writing to stdout and stderr without panicking on a closed stream, and a
//! failure reported on stderr and, in a format for programs, on stdout too.

use std::io::{IsTerminal, Write};

use serde::Serialize;

use super::{markdown, terminal};
use crate::error::{Error, Result};

/// How a successful run ended: with nothing to report, or with findings (exit 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Clean,
    Findings,
}

/// The `version` of every JSON document fluxwave prints: raised when a field changes meaning
/// or goes away; a field added leaves it as it is.
pub const JSON_VERSION: u32 = 1;

/// Writes to stdout, turning a write failure (a closed pipe) into an error.
pub(crate) fn io(e: std::io::Error) -> Error {
    Error::io(std::path::Path::new("<stdout>"), e)
}

/// One line to stderr. A stderr that is closed or full loses the line, never the run:
/// `eprintln!` would panic (exit 101) where the exit code must still say what happened.
pub(crate) fn warn(line: std::fmt::Arguments) {
    let stderr = std::io::stderr();
    let colour = terminal::colour(stderr.is_terminal());
    let line = terminal::diagnostic(&format!("{line}\n"), colour);
    let _ = stderr.lock().write_all(line.as_bytes());
}

/// `doc` as pretty JSON and a line end, written as it is serialised (the document of a large
/// app tier is hundreds of megabytes).
pub(super) fn write_json(out: &mut impl Write, doc: &impl Serialize) -> Result<()> {
    let mut w = std::io::BufWriter::with_capacity(1 << 16, out);
    serde_json::to_writer_pretty(&mut w, doc).map_err(|e| io(e.into()))?;
    w.write_all(b"\n").map_err(io)?;
    w.flush().map_err(io)
}

/// A format for programs (`--format json`, `--format github`): bad input is printed in it
/// too, on stdout, beside the report on stderr.
#[derive(Clone, Copy)]
pub(super) enum Machine {
    Json,
    /// Workflow commands (`check`).
    Github,
    /// A job summary's markdown (`diff`).
    Markdown,
}

/// Reports a failure on stderr, and on stdout too in a format for programs; exit 2.
pub(super) fn fail(e: &Error, machine: Option<Machine>, out: &mut impl Write) -> u8 {
    report(e);
    if let (Some(machine), false) = (machine, matches!(e, Error::Partial(_))) {
        let _ = out.write_all(machine_error(e, machine).as_bytes());
        let _ = out.flush();
    }
    2
}

/// `{"version", "error": {"kind", "message", "problems": [{file, line, column, message,
/// help}]}}`, or one workflow command per problem.
fn machine_error(e: &Error, machine: Machine) -> String {
    let (kind, message, problems): (&str, String, &[crate::error::SourceError]) = match e {
        Error::Input(errors) => (
            "input",
            format!(
                "{} in the input; nothing was written",
                crate::plural::count(errors.len(), "problem")
            ),
            errors,
        ),
        Error::Usage(_) | Error::NoEnvironment(_) | Error::Partial(_) => {
            ("usage", e.to_string(), &[])
        }
        Error::Io { .. } => ("io", e.to_string(), &[]),
        Error::Git { .. } => ("git", e.to_string(), &[]),
    };
    match machine {
        Machine::Json => {
            let problems: Vec<serde_json::Value> = problems
                .iter()
                .map(|p| {
                    let (line, column) = p.line_col().unzip();
                    serde_json::json!({
                        "file": p.path,
                        "line": line,
                        "column": column,
                        "message": p.message,
                        "help": p.help,
                    })
                })
                .collect();
            let doc = serde_json::json!({
                "version": JSON_VERSION,
                "error": {"kind": kind, "message": message, "problems": problems},
            });
            serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
        }
        Machine::Markdown => {
            // The message quotes revisions, paths and the input: all in a code block.
            let mut body = format!("{message}\n");
            for p in problems {
                let place = match p.line_col() {
                    Some((line, col)) => format!("{}:{line}:{col}", p.path),
                    None => p.path.clone(),
                };
                body.push_str(&format!("{place}: {}\n", p.message));
            }
            format!(
                "**fluxwave could not compare the revisions:**\n\n{}",
                markdown::fenced("text", &body)
            )
        }
        Machine::Github if problems.is_empty() => {
            crate::diag::render::github_error(None, None, &message, None)
        }
        Machine::Github => problems
            .iter()
            .map(|p| {
                crate::diag::render::github_error(
                    Some(&p.path),
                    p.line_col(),
                    &p.message,
                    p.help.as_deref(),
                )
            })
            .collect(),
    }
}

fn report(e: &Error) {
    match e {
        Error::Input(errors) => {
            for err in errors {
                warn(format_args!("{:?}", err.report()));
            }
            if errors.len() > 1 {
                warn(format_args!(
                    "fluxwave: {}; nothing was written",
                    crate::plural::count(errors.len(), "problem")
                ));
            }
        }
        other => warn(format_args!("fluxwave: {other}")),
    }
}
