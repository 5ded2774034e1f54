//! `fluxwave check`: every lint; exit 1 when any error is found (warnings count as errors
//! with `--deny warnings`). Text is grouped by file, each finding at `path:line:col`, in
//! colour only on a terminal without NO_COLOR; `json` is for tools, `github` makes GitHub
//! Actions annotate the lines.

use std::io::{IsTerminal, Write};
use std::path::Path;

use serde_json::json;

use super::{io, Outcome};
use crate::check::{self, Finding, Severity};
use crate::error::Result;

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Grouped by file, `path:line:col: severity[code]: message`
    Text,
    /// `{"findings": [...], "errors": N, "warnings": N}`
    Json,
    /// GitHub Actions workflow commands (`::error file=...,line=...::message`)
    Github,
}

/// What `--deny` turns into errors.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Deny {
    Warnings,
}

pub fn run(
    root: &Path,
    format: Format,
    base: Option<&str>,
    deny: Option<Deny>,
    out: &mut impl Write,
) -> Result<Outcome> {
    let mut findings = check::run(root)?;
    if let Some(base) = base {
        findings.extend(check::cutover(root, base)?);
    }
    if deny == Some(Deny::Warnings) {
        for f in &mut findings {
            f.severity = Severity::Error;
        }
    }
    let errors = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count();
    let warnings = findings.len() - errors;
    let text = match format {
        Format::Json => {
            serde_json::to_string_pretty(
                &json!({"findings": findings, "errors": errors, "warnings": warnings}),
            )
            .unwrap_or_default()
                + "\n"
        }
        Format::Text => {
            let colour = std::io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
            text(&findings, errors, warnings, colour)
        }
        Format::Github => github(&findings, errors, warnings),
    };
    out.write_all(text.as_bytes()).map_err(io)?;
    Ok(if errors > 0 {
        Outcome::Findings
    } else {
        Outcome::Clean
    })
}

fn place(f: &Finding) -> String {
    match (f.line, f.column) {
        (Some(l), Some(c)) => format!("{}:{l}:{c}", f.path),
        (Some(l), None) => format!("{}:{l}", f.path),
        _ => f.path.clone(),
    }
}

fn text(findings: &[Finding], errors: usize, warnings: usize, colour: bool) -> String {
    let paint = |code: &str, s: &str| {
        if colour {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    };
    let mut s = String::new();
    let mut file: Option<&str> = None;
    for f in findings {
        if file != Some(f.path.as_str()) {
            if file.is_some() {
                s.push('\n');
            }
            s.push_str(&paint("1", &f.path));
            s.push('\n');
            file = Some(&f.path);
        }
        let sev = match f.severity {
            Severity::Error => paint("1;31", &format!("error[{}]", f.code)),
            Severity::Warning => paint("1;33", &format!("warning[{}]", f.code)),
        };
        s.push_str(&format!(
            "  {sev}: {}: {}\n    {} {}\n",
            place(f),
            f.message,
            paint("36", "help:"),
            f.help
        ));
    }
    if !findings.is_empty() {
        s.push('\n');
    }
    s.push_str(&format!("{errors} errors, {warnings} warnings\n"));
    s
}

/// GitHub's escaping of a workflow command's message and properties.
fn escape(s: &str, property: bool) -> String {
    let mut out = s
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A");
    if property {
        out = out.replace(':', "%3A").replace(',', "%2C");
    }
    out
}

fn github(findings: &[Finding], errors: usize, warnings: usize) -> String {
    let mut s = String::new();
    for f in findings {
        let level = match f.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let mut props = format!("file={}", escape(&f.path, true));
        if let Some(l) = f.line {
            props.push_str(&format!(",line={l}"));
        }
        if let Some(c) = f.column {
            props.push_str(&format!(",col={c}"));
        }
        props.push_str(&format!(",title={}", escape(f.code.as_str(), true)));
        s.push_str(&format!(
            "::{level} {props}::{}\n",
            escape(&format!("{}\nhelp: {}", f.message, f.help), false)
        ));
    }
    s.push_str(&format!("{errors} errors, {warnings} warnings\n"));
    s
}
