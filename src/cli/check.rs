//! `fluxwave check`: every lint; exit 1 when any error is found (warnings count as errors
//! with `--deny warnings`). Text shows each finding with a snippet of its line (`diag::render`),
//! in colour only on a terminal without NO_COLOR; `json` is for tools, `github` makes GitHub
//! Actions annotate the lines. Every format says how many environments and Flux
//! Kustomizations were built (a run that built none reports `no-environment`).

use std::io::{IsTerminal, Write};
use std::path::Path;

use super::format::Format;
use super::report::{io, Outcome, JSON_VERSION};
use crate::check::{self, Severity};
use crate::diag::{render, Code};
use crate::error::{Error, Result};
use crate::plural::count;

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
    envs: &[(String, String)],
    out: &mut impl Write,
) -> Result<Outcome> {
    let mut report = check::run(root, base, envs)?;
    let built = format!("{}{}", built(&report), not_rendered(&report.not_rendered));
    let mut findings = std::mem::take(&mut report.findings);
    if deny == Some(Deny::Warnings) {
        for f in &mut findings {
            f.severity = Severity::Error;
        }
    }
    let text = match format {
        Format::Json => {
            let mut more = serde_json::Map::new();
            more.insert(
                "environments".into(),
                serde_json::json!(report.environments),
            );
            more.insert("kustomizations".into(), report.kustomizations().into());
            more.insert("notRendered".into(), serde_json::json!(report.not_rendered));
            render::json(JSON_VERSION, &findings, more)
        }
        Format::Text => {
            let colour = super::terminal::colour(std::io::stdout().is_terminal());
            render::write_text(&findings, colour, out).map_err(io)?;
            format!("{built}{}", render::summary(&findings))
        }
        Format::Github => {
            // The checked revision is the working tree.
            let is_file =
                |path: &str| std::fs::symlink_metadata(root.join(path)).is_ok_and(|m| m.is_file());
            before_counts(render::github(&findings, &is_file), &findings, &built)
        }
        other => return Err(other.unsupported("check")),
    };
    out.write_all(text.as_bytes()).map_err(io)?;
    Ok(if render::counts(&findings).0 > 0 {
        Outcome::Findings
    } else {
        Outcome::Clean
    })
}

/// `s` on one line: its control characters written `\uXXXX` (a name from the repository with
/// a line break cannot start a line of its own, such as a GitHub workflow command).
fn one_line(s: &str) -> std::borrow::Cow<'_, str> {
    super::markdown::escaped(s, char::is_control)
}

/// One line for each reason HelmReleases were not rendered, naming them (the first few):
/// what their charts create was judged by their values alone.
fn not_rendered(list: &[check::NotRendered]) -> String {
    let mut by_why: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
    for n in list {
        by_why.entry(&n.why).or_default().push(format!(
            "{} ({})",
            one_line(&n.release),
            one_line(&n.environment)
        ));
    }
    let mut out = String::new();
    for (why, names) in by_why {
        const SHOWN: usize = 5;
        let more = names.len().saturating_sub(SHOWN);
        let mut listed = names[..names.len().min(SHOWN)].join(", ");
        if more > 0 {
            listed.push_str(&format!(" and {more} more"));
        }
        out.push_str(&format!(
            "{} not rendered, judged by their values alone: {}: {listed}\n",
            count(names.len(), "HelmRelease"),
            one_line(why)
        ));
    }
    out
}

/// `checked 2 environments (production, staging) and 8 Flux Kustomizations`.
fn built(report: &check::Report) -> String {
    let names: Vec<&str> = report
        .environments
        .iter()
        .map(|e| e.name.as_str())
        .collect();
    format!(
        "checked {}{} and {}\n",
        count(names.len(), "environment"),
        if names.is_empty() {
            String::new()
        } else {
            format!(" ({})", names.join(", "))
        },
        count(report.kustomizations(), "Flux Kustomization")
    )
}

/// `rendered` with the `built` line put before its last line, the counts.
fn before_counts(rendered: String, findings: &[check::Finding], built: &str) -> String {
    let counts = render::summary(findings);
    match rendered.strip_suffix(&counts) {
        Some(head) => format!("{head}{built}{counts}"),
        None => rendered + built,
    }
}

/// `check --explain CODE`: the code's severity and what it catches, from the registry.
pub fn explain(name: &str, out: &mut impl Write) -> Result<Outcome> {
    let Some(code) = Code::ALL.iter().find(|c| c.as_str() == name) else {
        let known: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
        return Err(Error::Usage(format!(
            "`{name}` is not a finding code; the codes are: {}",
            known.join(", ")
        )));
    };
    writeln!(
        out,
        "{} ({}): {}\nEvery code, with an example and the fix: docs/checks.md",
        code.as_str(),
        code.severity().as_str(),
        code.summary()
    )
    .map_err(io)?;
    Ok(Outcome::Clean)
}
