//! A comparison of two revisions as `cutover` and `diff` print it: the same first line, the
//! same section on what fluxwave cannot see, and one JSON document whose shared fields keep
//! their order around each command's own.

use serde::Serialize;

use super::report::JSON_VERSION;
use crate::cutover::{self, Report, Verdict};

/// The JSON form of a comparison: what is compared and cutover's verdict, then `body` (the
/// command's own fields, in its order), then what could not be seen and what is not
/// modelled, then the runbook (`cutover` only).
#[derive(Serialize)]
pub(super) struct RevisionsJson<'a, B: Serialize> {
    version: u32,
    from: &'a str,
    to: &'a str,
    environments: &'a [String],
    /// cutover's verdict: `safe`, `deletes`, `incomplete` or `no-environment` (a step of
    /// `cutover --each` in which none is found).
    verdict: Verdict,
    /// Why no environment was found, with that verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    no_environment: Option<&'a str>,
    #[serde(flatten)]
    body: B,
    incomplete: &'a [cutover::Incomplete],
    /// Gaps of the kinds the base revision's fluxwave.yaml accepts (`cutover.accept`).
    accepted: &'a [cutover::Incomplete],
    warnings: &'a [cutover::EnvWarning],
    #[serde(skip_serializing_if = "Option::is_none")]
    runbook: Option<&'a [cutover::runbook::Section]>,
}

impl<'a, B: Serialize> RevisionsJson<'a, B> {
    pub(super) fn of(r: &'a Report, body: B) -> RevisionsJson<'a, B> {
        RevisionsJson {
            version: JSON_VERSION,
            from: &r.from,
            to: &r.to,
            environments: &r.environments,
            verdict: r.verdict(),
            no_environment: r.no_environment.as_deref(),
            body,
            incomplete: &r.incomplete,
            accepted: &r.accepted,
            warnings: &r.warnings,
            runbook: None,
        }
    }

    /// With the report's runbook last.
    pub(super) fn with_runbook(self, r: &'a Report) -> RevisionsJson<'a, B> {
        RevisionsJson {
            runbook: Some(&r.runbook),
            ..self
        }
    }
}

/// The first line of `cutover` and `diff`: what is compared, and in which environments.
pub(super) fn heading(command: &str, r: &Report) -> String {
    format!(
        "{command} {} -> {} (environments: {})",
        r.from,
        r.to,
        if r.environments.is_empty() {
            "none found".to_string()
        } else {
            r.environments.join(", ")
        }
    )
}

/// The Kustomizations the analysis could not see into, each with why: Flux may `verb` objects
/// there that no list shows. Then the gaps the base revision accepts, each with why.
pub(super) fn incomplete(s: &mut String, r: &Report, verb: &str) {
    gaps(
        s,
        &r.incomplete,
        &format!("Incomplete (Flux may {verb} objects fluxwave cannot see)"),
    );
    gaps(
        s,
        &r.accepted,
        "Accepted gaps (not judged; cutover.accept in the base revision's fluxwave.yaml)",
    );
}

/// How many Flux Kustomizations (and ResourceSets) `gaps` name, in words (one may hold
/// several): `3 Kustomizations`, `1 Kustomization and 2 ResourceSets`.
pub(super) fn kustomizations(gaps: &[cutover::Incomplete]) -> String {
    let named = |kind: Option<&str>| {
        gaps.iter()
            .filter(|i| i.kind == kind)
            .map(|i| (i.environment.as_str(), i.kustomization.as_str()))
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    };
    let (ks, sets) = (named(None), named(Some("ResourceSet")));
    let count = crate::plural::count;
    match (ks, sets) {
        (_, 0) => count(ks, "Kustomization"),
        (0, _) => count(sets, "ResourceSet"),
        _ => format!(
            "{} and {}",
            count(ks, "Kustomization"),
            count(sets, "ResourceSet")
        ),
    }
}

fn gaps(s: &mut String, gaps: &[cutover::Incomplete], title: &str) {
    if gaps.is_empty() {
        return;
    }
    s.push_str(&format!("\n{title}\n"));
    for i in gaps {
        let gap = i
            .gap
            .map(|g| format!(" [{}]", g.as_str()))
            .unwrap_or_default();
        s.push_str(&format!(
            "  {} — {} ({}){gap}\n",
            i.environment,
            i.what(),
            i.file
        ));
        for why in &i.why {
            s.push_str(&format!("    {why}\n"));
        }
    }
}
