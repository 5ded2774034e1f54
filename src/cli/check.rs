//! `fluxwave check`: every lint; exit 1 when any error is found.

use std::io::Write;
use std::path::Path;

use serde_json::json;

use super::{io, Outcome, ReportFormat};
use crate::check::{self, Severity};
use crate::error::Result;

pub fn run(
    root: &Path,
    format: ReportFormat,
    base: Option<&str>,
    out: &mut impl Write,
) -> Result<Outcome> {
    let mut findings = check::run(root)?;
    if let Some(base) = base {
        findings.extend(check::cutover(root, base)?);
    }
    let errors = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count();
    let warnings = findings.len() - errors;
    let text = match format {
        ReportFormat::Json => {
            serde_json::to_string_pretty(
                &json!({"findings": findings, "errors": errors, "warnings": warnings}),
            )
            .unwrap_or_default()
                + "\n"
        }
        ReportFormat::Text => {
            let mut s = String::new();
            for f in &findings {
                let sev = match f.severity {
                    Severity::Error => "error",
                    Severity::Warning => "warning",
                };
                s.push_str(&format!(
                    "{sev}[{}]: {}: {}\n  help: {}\n",
                    f.code, f.path, f.message, f.help
                ));
            }
            s.push_str(&format!("{errors} errors, {warnings} warnings\n"));
            s
        }
    };
    out.write_all(text.as_bytes()).map_err(io)?;
    Ok(if errors > 0 {
        Outcome::Findings
    } else {
        Outcome::Clean
    })
}
