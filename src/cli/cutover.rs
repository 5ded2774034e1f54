//! `fluxwave cutover`: what Flux would delete between two revisions, grouped by owner with
//! data loss first, then what may hold data (a chart not rendered), then what could not be
//! seen, then the runbook. Exit 0 only when the verdict is "safe"; 1 when anything would be
//! deleted or the analysis is incomplete.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use serde::Serialize;

use super::format::Format;
use super::report::{io, write_json, Outcome, JSON_VERSION};
use super::revisions::{heading, incomplete, kustomizations, RevisionsJson};
use crate::cutover::{self, Deletion, Report, Verdict};
use crate::error::Result;
use crate::plural::count;

pub fn run(
    root: &Path,
    from: &str,
    to: Option<&str>,
    format: Format,
    envs: &[(String, String)],
    out: &mut impl Write,
) -> Result<Outcome> {
    let report = cutover::analyse(root, from, to, envs)?;
    match format {
        // Written as it is serialised: at 100,000 services the document is 220 MB.
        Format::Json => write_json(out, &json_of(&report))?,
        Format::Text => out.write_all(text(&report).as_bytes()).map_err(io)?,
        other => return Err(other.unsupported("cutover")),
    }
    Ok(if report.is_safe() {
        Outcome::Clean
    } else {
        Outcome::Findings
    })
}

/// `cutover --each A..B`: one report per step of B's first-parent history since A, each the
/// report `cutover --from <step's parent> --to <step>` gives, in order. Text heads each with
/// the step's commit and subject; JSON is `{"version", "range", "steps": [report, ...]}`.
/// Exit 0 only when every step is safe.
pub fn run_each(
    root: &Path,
    range: &str,
    format: Format,
    envs: &[(String, String)],
    out: &mut impl Write,
) -> Result<Outcome> {
    let steps = crate::tree::first_parent_steps(root, range)?;
    let reports = cutover::analyse_steps(root, &steps, envs)?;
    // Test-only: what each step cost, as counts (docs/testing.md).
    if std::env::var_os("FLUXWAVE_TEST_STEP_COUNTS").is_some() {
        for (i, r) in reports.iter().enumerate() {
            super::report::warn(format_args!(
                "step {}: builds {}, footprints {}, parses {}, environments {}",
                i + 1,
                r.cost.owner_builds,
                r.cost.footprints,
                r.cost.parses,
                r.cost.environment_builds
            ));
        }
    }
    let subjects = match format {
        Format::Text => crate::tree::subjects(root, &steps).unwrap_or_default(),
        Format::Json => Default::default(),
        other => return Err(other.unsupported("cutover")),
    };
    for (i, (pair, report)) in steps.windows(2).zip(&reports).enumerate() {
        if let Format::Text = format {
            let subject = subjects.get(&pair[1]).map_or("", String::as_str);
            let head = format!(
                "== step {} of {}: {} {}\n",
                i + 1,
                steps.len() - 1,
                &pair[1][..pair[1].len().min(12)],
                subject
            );
            out.write_all(head.as_bytes()).map_err(io)?;
            out.write_all(text(report).as_bytes()).map_err(io)?;
            out.write_all(b"\n").map_err(io)?;
        }
    }
    if let Format::Json = format {
        #[derive(Serialize)]
        struct Each<'a> {
            version: u32,
            range: &'a str,
            steps: Vec<RevisionsJson<'a, Body<'a>>>,
        }
        let doc = Each {
            version: JSON_VERSION,
            range,
            steps: reports.iter().map(json_of).collect(),
        };
        write_json(out, &doc)?;
    } else if reports.is_empty() {
        out.write_all(format!("--each {range}: no commit on the way\n").as_bytes())
            .map_err(io)?;
    }
    Ok(if reports.iter().all(Report::is_safe) {
        Outcome::Clean
    } else {
        Outcome::Findings
    })
}

/// `cutover`'s own fields of its JSON report.
#[derive(Serialize)]
struct Body<'a> {
    safe: bool,
    stateful: usize,
    deletions: &'a [Deletion],
}

/// The JSON form of a report.
fn json_of(r: &Report) -> RevisionsJson<'_, Body<'_>> {
    let body = Body {
        safe: r.is_safe(),
        stateful: r.deletions.iter().filter(|d| d.stateful).count(),
        deletions: &r.deletions,
    };
    RevisionsJson::of(r, body).with_runbook(r)
}

/// Deletions grouped by environment and owner, then by reason (the same reason is printed once,
/// with every object it applies to under it).
fn group(s: &mut String, title: &str, items: &[&Deletion]) {
    if items.is_empty() {
        return;
    }
    s.push_str(&format!("\n{title}\n"));
    let mut by_owner: BTreeMap<(&str, String), BTreeMap<&str, Vec<&Deletion>>> = BTreeMap::new();
    for d in items {
        by_owner
            .entry((&d.environment, d.owner_id.to_string()))
            .or_default()
            .entry(&d.reason)
            .or_default()
            .push(d);
    }
    for ((env, owner), reasons) in by_owner {
        s.push_str(&format!("  {env} — owner {owner}\n"));
        for (reason, ds) in reasons {
            s.push_str(&format!("    {reason}:\n"));
            for d in ds {
                match d.data.evidence() {
                    Some(evidence) => s.push_str(&format!("      {} — {evidence}\n", d.id)),
                    None => s.push_str(&format!("      {}\n", d.id)),
                }
            }
        }
    }
}

fn text(r: &Report) -> String {
    let mut s = heading("cutover", r) + "\n";
    let stateful: Vec<&Deletion> = r.deletions.iter().filter(|d| d.data.holds()).collect();
    let may: Vec<&Deletion> = r.deletions.iter().filter(|d| d.data.may()).collect();
    let other: Vec<&Deletion> = r
        .deletions
        .iter()
        .filter(|d| !d.data.holds() && !d.data.may())
        .collect();
    let mut found = format!(
        "{} would delete {}, {} of them holding data",
        r.deleters(),
        count(r.deletions.len(), "object"),
        stateful.len()
    );
    if !may.is_empty() {
        found.push_str(&format!(", {} that may", may.len()));
    }
    match r.verdict() {
        Verdict::NoEnvironment => {
            let why = r.no_environment.as_deref().unwrap_or_default();
            s.push_str(&format!("no environment: nothing compared, not safe: {why}\n"));
        }
        Verdict::Safe => s.push_str("safe: Flux deletes nothing on the way\n"),
        Verdict::Deletes => s.push_str(&format!("{found}\n")),
        Verdict::Incomplete => s.push_str(&format!(
            "incomplete: the change touches {} fluxwave cannot see whole; Flux may delete more than the {} found\n",
            kustomizations(&r.incomplete),
            count(r.deletions.len(), "deletion")
        )),
    }
    group(&mut s, "DATA LOSS", &stateful);
    group(&mut s, "May hold data (chart not rendered)", &may);
    group(&mut s, "Deleted", &other);
    incomplete(&mut s, r, "delete");
    // A build that fails is Flux's failure, said apart from what fluxwave does not model.
    let (failing, unmodelled): (Vec<_>, Vec<_>) = r
        .warnings
        .iter()
        .partition(|w| w.feature == crate::flux::inventory::BUILD_FAILURE);
    for (title, warnings) in [
        ("Fails to build (fix before merging)", failing),
        ("Not modelled (check by hand)", unmodelled),
    ] {
        if warnings.is_empty() {
            continue;
        }
        s.push_str(&format!("\n{title}\n"));
        for w in warnings {
            s.push_str(&format!(
                "  {}: {}: {}: {}\n",
                w.environment, w.path, w.feature, w.message
            ));
        }
    }
    if !r.runbook.is_empty() {
        s.push_str("\nRunbook\n");
        for section in &r.runbook {
            s.push_str(&format!("  {}\n", section.title));
            for line in &section.lines {
                s.push_str(&format!("    {line}\n"));
            }
        }
    }
    s
}
