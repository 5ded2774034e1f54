//! Lints. A finding is data (a code, a severity, a place, a message and what to do), never
//! an error: every finding is gathered and the exit code is decided at the end by counting
//! errors. Drift findings come from the same change set `apply` carries out, so `check` is
//! clean exactly when `apply` has nothing to do.

mod decryption;

use std::path::Path;

use serde::Serialize;

use crate::error::Result;
use crate::plan::changes::{self, Op};
use crate::plan::Plan;
use crate::repo::Repo;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub code: &'static str,
    pub severity: Severity,
    pub path: String,
    pub message: String,
    pub help: String,
}

/// Every lint over the repository at `root`. `Err` only for unreadable input.
pub fn run(root: &Path) -> Result<Vec<Finding>> {
    let repo = Repo::load(root)?;
    let plan = Plan::for_repo(&repo)?;
    let mut findings: Vec<Finding> = plan
        .problems
        .iter()
        .map(|p| Finding {
            code: p.code(),
            severity: if p.blocks() {
                Severity::Error
            } else {
                Severity::Warning
            },
            path: p.path(&repo.apps.dir).to_string(),
            message: p.message(),
            help: p.help().to_string(),
        })
        .collect();
    if plan.blocking().next().is_none() {
        let set = changes::compute(&repo, &plan)?;
        findings.extend(set.warnings.into_iter().map(|w| Finding {
            code: w.code,
            severity: Severity::Warning,
            path: w.path,
            message: w.message,
            help: w.help,
        }));
        if !repo.apps.is_waved() && plan.waves > 0 {
            // Before the first apply every file is out of place: one finding says it all.
            findings.push(Finding {
                code: "not-waved",
                severity: Severity::Error,
                path: repo.apps.dir.clone(),
                message: format!(
                    "the app tier is one flat folder: {} files wait to be placed in {} waves",
                    plan.placements.len(),
                    plan.waves
                ),
                help:
                    "run `fluxwave plan` to see the placement and `fluxwave apply` to carry it out"
                        .into(),
            });
        } else {
            findings.extend(set.changes.iter().map(drift_finding));
        }
    }
    findings.extend(decryption::sops_without_decryption(&repo)?);
    findings.sort_by(|a, b| {
        (&a.path, a.severity, a.code, &a.message).cmp(&(&b.path, b.severity, b.code, &b.message))
    });
    findings.dedup_by(|a, b| a.path == b.path && a.code == b.code && a.message == b.message);
    Ok(findings)
}

/// A change `apply` would make, as the drift it repairs.
fn drift_finding(c: &changes::Change) -> Finding {
    let (path, message) = match &c.op {
        Op::Move { from, to } => (from.clone(), format!("belongs in {to} ({})", c.why)),
        Op::Write {
            path, old: None, ..
        } => (path.clone(), format!("is missing ({})", c.why)),
        Op::Write { path, .. } => (
            path.clone(),
            format!("is out of step with the catalog ({})", c.why),
        ),
        Op::Remove { path } | Op::RemoveDir { path } => {
            (path.clone(), format!("should not exist ({})", c.why))
        }
    };
    Finding {
        code: c.drift.code(),
        severity: Severity::Error,
        path,
        message,
        help: "run `fluxwave apply`".into(),
    }
}

/// What Flux would delete going from `base` to the working tree, as findings: a CI job
/// that runs `check --base origin/main` blocks a merge that would delete a database.
pub fn cutover(root: &Path, base: &str) -> Result<Vec<Finding>> {
    let report = crate::cutover::analyse(root, base, None)?;
    let mut findings: Vec<Finding> = report
        .deletions
        .iter()
        .map(|d| Finding {
            code: match (d.stateful, d.rule.is_move()) {
                (true, true) => "promotes-stateful",
                (true, false) => "deletes-stateful",
                _ => "cutover-deletion",
            },
            severity: Severity::Error,
            path: d.file.clone(),
            message: format!(
                "{} ({}): Flux deletes it: {}",
                d.id, d.environment, d.reason
            ),
            help: format!("run `fluxwave cutover --from {base}` for the safe runbook"),
        })
        .collect();
    findings.extend(report.warnings.iter().map(|w| Finding {
        code: "cutover-unmodelled",
        severity: Severity::Warning,
        path: w.path.clone(),
        message: format!("{} ({}): {}", w.feature, w.environment, w.message),
        help: "fluxwave cannot see what this feature does; check it by hand".into(),
    }));
    Ok(findings)
}
