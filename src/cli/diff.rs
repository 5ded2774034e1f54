//! `fluxwave diff`: what changes in each Flux Kustomization's objects between two revisions,
//! as `build` builds them: objects added, removed and modified (content, owner or both), a
//! unified diff of each modified one, Secret values masked, and for each removed or moved
//! object cutover's verdict (whether Flux deletes it on the way, and whether it holds data).
//! Exit 0 when nothing changes, 1 when something does (as `git diff --exit-code`), 2 on bad
//! input.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use serde::Serialize;

use super::format::Format;
use super::markdown;
use super::report::{io, write_json, Outcome};
use super::revisions::{heading, incomplete, kustomizations, RevisionsJson};
use crate::cutover::{Deletion, Report, Verdict};
use crate::error::Result;
use crate::kustomize::object::ObjectId;
use crate::objects::{self, Change, Kind};
use crate::plural::count;

/// At most this many changes are listed in `--format github`, and at most this many bytes
/// of diffs: a pull-request comment holds 65,536 characters.
const GITHUB_ROWS: usize = 100;
const GITHUB_DIFF_BYTES: usize = 40_000;

pub fn run(
    root: &Path,
    from: &str,
    to: Option<&str>,
    format: Format,
    envs: &[(String, String)],
    out: &mut impl Write,
) -> Result<Outcome> {
    let (report, changes) = objects::changes(root, from, to, envs)?;
    let mut w = std::io::BufWriter::with_capacity(1 << 16, &mut *out);
    let outcome = shown(&report, &changes, format, &mut w)?;
    w.flush().map_err(io)?;
    Ok(outcome)
}

/// The changes and cutover's report on them, written to `out` as `format` prints them (JSON
/// as it is made: the document of a change that moves every object of a large app tier is
/// hundreds of megabytes).
fn shown(
    report: &Report,
    changes: &[Change],
    format: Format,
    out: &mut impl Write,
) -> Result<Outcome> {
    let verdicts: HashMap<(&str, &ObjectId), &Deletion> = report
        .deletions
        .iter()
        .map(|d| ((&*d.environment, &d.id), d))
        .collect();
    let rows: Vec<Row> = changes
        .iter()
        .map(|c| Row {
            change: c,
            deletion: verdicts.get(&(&*c.environment, &c.id)).copied(),
        })
        .collect();
    // What Flux deletes of objects the change leaves as they are: everything in a Namespace
    // that is deleted, every custom resource of a CRD that is deleted.
    let listed: std::collections::HashSet<(&str, &ObjectId)> =
        changes.iter().map(|c| (&*c.environment, &c.id)).collect();
    let also: Vec<&Deletion> = report
        .deletions
        .iter()
        .filter(|d| !listed.contains(&(&*d.environment, &d.id)))
        .collect();
    match format {
        Format::Json => write_json(out, &json_of(report, &rows, &also))?,
        Format::Text => out
            .write_all(text(report, &rows, &also).as_bytes())
            .map_err(io)?,
        Format::Github => out
            .write_all(github(report, &rows, &also).as_bytes())
            .map_err(io)?,
        other => return Err(other.unsupported("diff")),
    }
    Ok(if rows.is_empty() && also.is_empty() {
        Outcome::Clean
    } else {
        Outcome::Findings
    })
}

/// A change and cutover's verdict on it.
struct Row<'a> {
    change: &'a Change,
    /// Flux deletes it on the way (a removed object, or one that moves and is pruned first).
    deletion: Option<&'a Deletion>,
}

impl Row<'_> {
    fn moves(&self) -> bool {
        self.change.previous_owner.is_some()
    }

    /// What cutover says of a removed or moved object, in a few words (the reason is printed
    /// once for the objects that share it); `None` for the others.
    fn verdict(&self) -> Option<String> {
        match (self.deletion, self.change.change) {
            (Some(d), _) => {
                let data = match d.data.evidence() {
                    Some(e) if d.stateful => format!(", DATA LOSS: {e}"),
                    Some(e) if d.data.may() => format!(", may hold data: {e}"),
                    _ => String::new(),
                };
                let who = if d.rule.is_helm() { "Helm" } else { "Flux" };
                Some(format!("{who} deletes it ({}{data})", d.rule.code()))
            }
            (None, Kind::Removed) if self.change.kustomization_deleted.is_some() => {
                Some("Flux deletes it (left-build)".into())
            }
            (None, Kind::Removed) => Some("Flux leaves it in the cluster".into()),
            (None, _) if self.moves() => Some("Flux keeps it on the way".into()),
            _ => None,
        }
    }
}

fn short(id: &ObjectId) -> String {
    format!("{}/{}", id.namespace, id.name)
}

/// The counts of a change set.
#[derive(Serialize, Default)]
struct Summary {
    added: usize,
    removed: usize,
    modified: usize,
    /// Of `modified`: those whose owner changes.
    moved: usize,
    /// Removed or moved objects Flux deletes on the way (cutover's deletions).
    deleted: usize,
    /// Of `deleted`: those that hold data.
    stateful: usize,
}

impl Summary {
    fn of(rows: &[Row]) -> Summary {
        let mut s = Summary::default();
        for r in rows {
            match r.change.change {
                Kind::Added => s.added += 1,
                Kind::Removed => s.removed += 1,
                Kind::Modified => s.modified += 1,
            }
            s.moved += usize::from(r.moves());
            if let Some(d) = r.deletion {
                s.deleted += 1;
                s.stateful += usize::from(d.stateful);
            }
        }
        s
    }

    /// `3 added, 1 removed, 8 modified (8 move owner)`.
    fn line(&self) -> String {
        let mut s = format!(
            "{} added, {} removed, {} modified",
            self.added, self.removed, self.modified
        );
        if self.moved > 0 {
            s.push_str(&format!(" ({} move owner)", self.moved));
        }
        s
    }
}

/// `diff`'s own fields of its JSON report.
#[derive(Serialize)]
struct Body<'a> {
    summary: Summary,
    changes: JsonChanges<'a>,
    /// cutover's deletions of objects that do not change themselves (in a Namespace or of a
    /// CRD that is deleted), as `cutover --format json` lists them.
    #[serde(rename = "alsoDeleted")]
    also_deleted: &'a [&'a Deletion],
}

/// The JSON form of the changes and cutover's report on them.
fn json_of<'a>(
    r: &'a Report,
    rows: &'a [Row<'a>],
    also: &'a [&'a Deletion],
) -> RevisionsJson<'a, Body<'a>> {
    let body = Body {
        summary: Summary::of(rows),
        changes: JsonChanges(rows),
        also_deleted: also,
    };
    RevisionsJson::of(r, body)
}

/// The changes of `Json`, each made as it is written.
struct JsonChanges<'a>(&'a [Row<'a>]);

impl Serialize for JsonChanges<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(JsonChange::of))
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonChange<'a> {
    kind: &'a str,
    api_version: &'a str,
    namespace: &'a str,
    name: &'a str,
    /// The cluster of its owner's `spec.kubeConfig`, when it is not Flux's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    cluster: Option<&'a str>,
    /// `namespace/name` of the Flux Kustomization that applies it (in the older revision,
    /// for one removed).
    owner: String,
    change: Kind,
    environment: &'a str,
    file: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    previous_owner: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    previous_file: Option<&'a str>,
    /// The unified diff of its YAML, Secret values masked (modified objects).
    #[serde(skip_serializing_if = "str::is_empty")]
    diff: &'a str,
    /// The Secret keys whose (masked) values change: `data.password`.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    secret_keys: &'a [String],
    /// For a removed or moved object: whether Flux deletes it on the way (cutover).
    #[serde(skip_serializing_if = "Option::is_none")]
    deleted: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rule: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stateful: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    evidence: Option<&'a str>,
}

impl<'a> JsonChange<'a> {
    fn of(r: &'a Row<'a>) -> JsonChange<'a> {
        let c = r.change;
        let d = r.deletion;
        let judged = c.change == Kind::Removed || r.moves();
        JsonChange {
            kind: &c.id.kind,
            api_version: &c.api_version,
            namespace: &c.id.namespace,
            name: &c.id.name,
            cluster: c.id.cluster_name(),
            owner: short(&c.owner),
            change: c.change,
            environment: &c.environment,
            file: &c.file,
            previous_owner: c.previous_owner.as_deref().map(short),
            previous_file: c.previous_file.as_deref(),
            diff: &c.diff,
            secret_keys: &c.secret_keys,
            deleted: (judged || d.is_some())
                .then_some(d.is_some() || c.kustomization_deleted.is_some()),
            rule: d
                .map(|d| d.rule.code())
                .or(c.kustomization_deleted.as_ref().map(|_| "left-build")),
            reason: d.map(|d| &*d.reason).or(c.kustomization_deleted.as_deref()),
            stateful: d.map(|d| d.stateful),
            data: d.map(|d| d.data.as_str()),
            evidence: d.and_then(|d| d.data.evidence()),
        }
    }
}

/// What cutover says of the whole change, in one sentence.
fn deletes_line(r: &Report, s: &Summary) -> String {
    match r.verdict() {
        Verdict::Safe => "Flux deletes nothing on the way".to_string(),
        Verdict::Deletes => format!(
            "{} {} on the way, {} of them holding data",
            match r.deleters() {
                "Flux and Helm" => "Flux and Helm delete",
                "Helm" => "Helm deletes",
                _ => "Flux deletes",
            },
            count(r.deletions.len(), "object"),
            s.stateful
        ),
        Verdict::NoEnvironment => "no Flux environment found: nothing was compared".to_string(),
        Verdict::Incomplete => format!(
            "incomplete: fluxwave cannot see all of {}; Flux may delete more than the {} found",
            kustomizations(&r.incomplete),
            count(r.deletions.len(), "deletion")
        ),
    }
}

/// One change as a line: `modified  Deployment media/sonarr (from flux-system/apps)`.
fn line(r: &Row) -> String {
    let c = r.change;
    let mut s = format!("{:<9} {}", c.change.as_str(), objects::label(&c.id));
    if let Some(prev) = &c.previous_owner {
        s.push_str(&format!(" (moves from {})", short(prev)));
    }
    if !c.secret_keys.is_empty() {
        s.push_str(&format!(
            " (Secret values change: {})",
            c.secret_keys.join(", ")
        ));
    }
    if let Some(v) = r.verdict() {
        s.push_str(&format!(" — {v}"));
    }
    s
}

fn text(r: &Report, rows: &[Row], also: &[&Deletion]) -> String {
    let summary = Summary::of(rows);
    let mut s = format!("{}\n", heading("diff", r));
    if rows.is_empty() {
        s.push_str("no object changes\n");
    } else {
        s.push_str(&format!(
            "{} change{}: {}; {}\n",
            count(rows.len(), "object"),
            if rows.len() == 1 { "s" } else { "" },
            summary.line(),
            deletes_line(r, &summary)
        ));
    }
    // By environment and owner; the reasons of the deletions after each group's lines, once.
    let mut start = 0;
    while start < rows.len() {
        let c = rows[start].change;
        let end = start
            + rows[start..]
                .iter()
                .take_while(|r| r.change.environment == c.environment && r.change.owner == c.owner)
                .count();
        s.push_str(&format!(
            "\n{} — owner {}\n",
            c.environment,
            short(&c.owner)
        ));
        let mut reasons: Vec<(&str, &str)> = Vec::new();
        for row in &rows[start..end] {
            s.push_str(&format!("  {}\n", line(row)));
            for l in row.change.diff.lines() {
                s.push_str(&format!("    {l}\n"));
            }
            let why = match (row.deletion, &row.change.kustomization_deleted) {
                (Some(d), _) => Some((d.rule.code(), &*d.reason)),
                (None, Some(why)) => Some(("left-build", why.as_str())),
                (None, None) => None,
            };
            if let Some(why) = why {
                if !reasons.contains(&why) {
                    reasons.push(why);
                }
            }
        }
        for (rule, reason) in reasons {
            s.push_str(&format!("  {rule}: {reason}\n"));
        }
        start = end;
    }
    if !also.is_empty() {
        s.push_str("\nFlux also deletes, though they do not change\n");
        for d in also {
            let data = if d.stateful { ", DATA LOSS" } else { "" };
            s.push_str(&format!(
                "  {} — owner {}: {} ({}{data}): {}\n",
                d.environment,
                short(&d.owner_id),
                objects::label(&d.id),
                d.rule.code(),
                d.reason
            ));
        }
    }
    incomplete(&mut s, r, "change");
    s
}

/// Markdown: a heading, the counts and cutover's verdict, a table of the changes, then the
/// diffs folded away; cut short to fit a pull-request comment. Every name, revision, reason
/// and diff is written through `markdown`, so that none is read as markdown.
fn github(r: &Report, rows: &[Row], also: &[&Deletion]) -> String {
    let summary = Summary::of(rows);
    let mut s = format!(
        "### fluxwave diff: {} → {}\n\n",
        markdown::code(&r.from),
        if r.to == "the working tree" {
            r.to.clone()
        } else {
            markdown::code(&r.to)
        }
    );
    let environments = markdown::codes(&r.environments);
    if rows.is_empty() && also.is_empty() && r.incomplete.is_empty() && r.accepted.is_empty() {
        s.push_str(&format!("No object changes in {environments}.\n"));
        return s;
    }
    let icon = match r.verdict() {
        Verdict::Safe => "✅",
        Verdict::Deletes if summary.stateful > 0 => "🛑",
        Verdict::Deletes | Verdict::Incomplete | Verdict::NoEnvironment => "⚠️",
    };
    s.push_str(&format!(
        "**{}** in {environments}: {}.\n\n{icon} {}.\n\n",
        count(rows.len(), "object"),
        summary.line(),
        deletes_line(r, &summary)
    ));
    if !rows.is_empty() {
        s.push_str("| Environment | Owner | Change | Object | Flux |\n|---|---|---|---|---|\n");
    }
    for row in rows.iter().take(GITHUB_ROWS) {
        let c = row.change;
        let mut change = match &c.previous_owner {
            Some(prev) => format!("moved from {}", markdown::code(&short(prev))),
            None => c.change.as_str().to_string(),
        };
        if !c.secret_keys.is_empty() {
            change.push_str(&format!(
                " (Secret values change: {})",
                markdown::codes(&c.secret_keys)
            ));
        }
        let flux = match row.deletion {
            Some(d) if d.stateful => format!("🛑 **deletes, data loss** ({})", d.rule.code()),
            Some(d) => format!("deletes ({})", d.rule.code()),
            None if c.kustomization_deleted.is_some() => "deletes (left-build)".into(),
            None if c.change == Kind::Removed => "leaves it".into(),
            None if c.previous_owner.is_some() => "keeps it".into(),
            None => String::new(),
        };
        let cells = [
            markdown::code(&c.environment),
            markdown::code(&short(&c.owner)),
            change,
            markdown::code(&objects::label(&c.id)),
            flux,
        ];
        s.push('|');
        for cell in cells {
            s.push(' ');
            s.push_str(&markdown::cell(&cell));
            s.push_str(" |");
        }
        s.push('\n');
    }
    if rows.len() > GITHUB_ROWS {
        s.push_str(&format!(
            "\n… and {} more; `fluxwave diff` lists them all.\n",
            rows.len() - GITHUB_ROWS
        ));
    }
    if !also.is_empty() {
        s.push_str(&format!(
            "\nUnchanged objects Flux also deletes ({}):\n\n",
            also.len()
        ));
        for d in also.iter().take(GITHUB_ROWS) {
            let mark = if d.stateful { "🛑 " } else { "" };
            s.push_str(&format!(
                "- {mark}{} ({}, {}): {}\n",
                markdown::code(&objects::label(&d.id)),
                markdown::code(&d.environment),
                d.rule.code(),
                markdown::code(&d.reason)
            ));
        }
        if also.len() > GITHUB_ROWS {
            s.push_str(&format!("- … and {} more\n", also.len() - GITHUB_ROWS));
        }
    }
    gaps_markdown(
        &mut s,
        &r.incomplete,
        "Incomplete: Flux may change objects fluxwave cannot see",
    );
    gaps_markdown(
        &mut s,
        &r.accepted,
        "Accepted gaps (not judged; `cutover.accept` in the base revision's fluxwave.yaml)",
    );
    let diffs: Vec<&Change> = rows
        .iter()
        .map(|r| r.change)
        .filter(|c| !c.diff.is_empty())
        .collect();
    if !diffs.is_empty() {
        s.push_str(&format!(
            "\n<details><summary>Diffs of {}</summary>\n\n",
            count(diffs.len(), "modified object")
        ));
        let mut shown = 0;
        for (i, c) in diffs.iter().enumerate() {
            if shown + c.diff.len() > GITHUB_DIFF_BYTES {
                s.push_str(&format!(
                    "… {} more not shown here; `fluxwave diff` shows them all.\n\n",
                    count(diffs.len() - i, "diff")
                ));
                break;
            }
            shown += c.diff.len();
            s.push_str(&markdown::fenced("diff", &c.diff));
            s.push('\n');
        }
        s.push_str("</details>\n");
    }
    s
}

/// The gaps of a comparison as a Markdown list under `title`, each with why.
fn gaps_markdown(s: &mut String, gaps: &[crate::cutover::Incomplete], title: &str) {
    if gaps.is_empty() {
        return;
    }
    s.push_str(&format!("\n{title}:\n\n"));
    for i in gaps.iter().take(GITHUB_ROWS) {
        let gap = i
            .gap
            .map(|g| format!(" [{}]", markdown::code(g.as_str())))
            .unwrap_or_default();
        s.push_str(&format!(
            "- {} ({}, {}){gap}: {}\n",
            markdown::code(&i.what()),
            markdown::code(&i.environment),
            markdown::code(&i.file),
            markdown::code(&i.why.join("; "))
        ));
    }
    if gaps.len() > GITHUB_ROWS {
        s.push_str(&format!("- … and {} more\n", gaps.len() - GITHUB_ROWS));
    }
}

#[cfg(test)]
mod tests {
    use super::{shown, Format};
    use crate::flux::inventory::Keep;
    use crate::objects;
    use crate::tree::FileTree;

    fn ks(name: &str, extra: &str) -> String {
        format!("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {{name: {name}, namespace: flux-system}}\nspec:\n  path: ./{name}\n  prune: true\n  sourceRef: {{kind: GitRepository, name: flux-system}}\n{extra}")
    }

    fn deployment(name: &str, image: &str, replicas: u32) -> String {
        format!("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  namespace: default\n  annotations:\n    token: ${{TOKEN}}\nspec:\n  replicas: {replicas}\n  template:\n    spec:\n      containers:\n        - name: {name}\n          image: {image}\n")
    }

    fn config_map(name: &str, data: &str) -> String {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: default\ndata:\n{data}")
    }

    fn sops_secret(data: &str, mac: &str) -> String {
        format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: sealed\n  namespace: default\nstringData:\n  password: ENC[AES256_GCM,data:{data},iv:aXY=,tag:dGFn,type:str]\nsops:\n  mac: ENC[AES256_GCM,data:{mac},iv:aXY=,tag:dGFn,type:str]\n  version: 3.8.1\n")
    }

    fn release(size: &str) -> String {
        format!("apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: web\n  namespace: default\nspec:\n  chart:\n    spec:\n      chart: web\n      sourceRef: {{kind: HelmRepository, name: charts}}\n  values:\n    persistence:\n      data:\n        size: {size}\n")
    }

    const VARS: &str = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: vars\n  namespace: flux-system\nstringData:\n  TOKEN: tok-3f9a1c-plain\n  VERSION: apps/v1\n";
    const PVC: &str = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\n  namespace: default\nspec:\n  resources:\n    requests:\n      storage: 1Gi\n";
    const CONF: &str = "  app.ini: |\n    [server]\n    port = 80\n";

    /// What no output may hold: the Secrets' values, plain, base64 or encrypted.
    const HIDDEN: [&str; 8] = [
        "tok-3f9a1c-plain",
        "b2xkLXBhc3N3b3JkLXZhbHVl",
        "bmV3LXBhc3N3b3JkLXZhbHVl",
        "old-password-value",
        "new-password-value",
        "data:b2xkLXNvcHM=",
        "data:bmV3LXNvcHM=",
        "data:bWFjLTE=",
    ];

    fn files(list: &[(&str, String)]) -> FileTree {
        FileTree::from_files(list.iter().map(|(p, t)| (*p, t.as_str())))
    }

    /// Two revisions of one environment: objects modified (a Deployment whose annotation is
    /// a substituted Secret value, a Secret, a SOPS-encrypted Secret, a HelmRelease, a
    /// ConfigMap whose keys only change order), added, removed (with and without their
    /// Kustomization), and moved (as they were, masked alike or not, and modified on the
    /// way).
    fn revisions() -> (FileTree, FileTree) {
        let secret = |password: &str| {
            format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: default\ndata:\n  password: {password}\n")
        };
        let apps = ks(
            "apps",
            "  postBuild:\n    substituteFrom:\n      - kind: Secret\n        name: vars\n",
        );
        let old = files(&[
            ("clusters/dev/kustomization.yaml", "resources: [vars.yaml, apps.yaml, db.yaml, gone.yaml]\n".into()),
            ("clusters/dev/vars.yaml", VARS.into()),
            ("clusters/dev/apps.yaml", apps.clone()),
            ("clusters/dev/db.yaml", ks("db", "")),
            ("clusters/dev/gone.yaml", ks("gone", "")),
            ("apps/kustomization.yaml", "resources: [web.yaml, conf.yaml, secret.yaml, sealed.yaml, data.yaml, shared.yaml, order.yaml, cache.yaml, release.yaml]\n".into()),
            ("apps/web.yaml", deployment("web", "example/web:1.0.0", 1)),
            ("apps/conf.yaml", config_map("conf", CONF)),
            ("apps/secret.yaml", secret("b2xkLXBhc3N3b3JkLXZhbHVl")),
            ("apps/sealed.yaml", sops_secret("b2xkLXNvcHM=", "bWFjLTE=")),
            ("apps/data.yaml", PVC.into()),
            ("apps/shared.yaml", config_map("shared", "  a: b\n")),
            ("apps/order.yaml", config_map("order", "  a: \"1\"\n  b: \"2\"\n")),
            ("apps/cache.yaml", deployment("cache", "example/cache:1", 1)),
            ("apps/release.yaml", release("1Gi")),
            ("db/kustomization.yaml", "resources: [move.yaml]\n".into()),
            ("db/move.yaml", config_map("move", "  c: d\n")),
            ("gone/kustomization.yaml", "resources: [cm.yaml]\n".into()),
            ("gone/cm.yaml", config_map("gone", "  e: f\n")),
        ]);
        let new = files(&[
            ("clusters/dev/kustomization.yaml", "resources: [vars.yaml, apps.yaml, db.yaml, tools.yaml]\n".into()),
            ("clusters/dev/vars.yaml", VARS.into()),
            ("clusters/dev/apps.yaml", apps),
            ("clusters/dev/db.yaml", ks("db", "")),
            ("clusters/dev/tools.yaml", ks("tools", "")),
            ("apps/kustomization.yaml", "resources: [web.yaml, conf.yaml, secret.yaml, sealed.yaml, order.yaml, release.yaml, fresh.yaml, worker.yaml]\n".into()),
            ("apps/web.yaml", deployment("web", "example/web:1.1.0", 1)),
            ("apps/conf.yaml", config_map("conf", CONF)),
            ("apps/secret.yaml", secret("bmV3LXBhc3N3b3JkLXZhbHVl")),
            ("apps/sealed.yaml", sops_secret("bmV3LXNvcHM=", "bWFjLTI=")),
            ("apps/order.yaml", config_map("order", "  b: \"2\"\n  a: \"1\"\n")),
            ("apps/release.yaml", release("2Gi")),
            ("apps/fresh.yaml", config_map("fresh", "  g: h\n")),
            ("apps/worker.yaml", deployment("worker", "example/worker:1", 1)),
            ("db/kustomization.yaml", "resources: [shared.yaml, cache.yaml]\n".into()),
            ("db/shared.yaml", config_map("shared", "  a: b\n")),
            ("db/cache.yaml", deployment("cache", "example/cache:1", 2)),
            ("tools/kustomization.yaml", "resources: [move.yaml]\n".into()),
            ("tools/move.yaml", config_map("move", "  c: d\n")),
        ]);
        (old, new)
    }

    /// Every output of `diff` from `old` to `new`, built keeping what `kept` says.
    fn outputs(old: &FileTree, new: &FileTree, kept: Keep) -> Vec<String> {
        let trees = (old.clone(), new.clone());
        let (report, changes) = objects::changes_between(trees, "old -> new", kept).unwrap();
        [Format::Text, Format::Json, Format::Github]
            .into_iter()
            .map(|f| {
                let mut out = Vec::new();
                shown(&report, &changes, f, &mut out).unwrap();
                String::from_utf8(out).unwrap()
            })
            .collect()
    }

    #[test]
    fn the_diff_by_prints_is_the_diff_of_whole_objects() {
        let (old, new) = revisions();
        for (a, b) in [(&old, &new), (&new, &old), (&old, &old)] {
            let by_prints = outputs(a, b, Keep::Prints);
            assert_eq!(by_prints, outputs(a, b, Keep::Whole));
            for (out, h) in by_prints.iter().flat_map(|o| HIDDEN.map(|h| (o, h))) {
                assert!(!out.contains(h), "{h}:\n{out}");
            }
        }
        // The revisions hold every kind of change.
        let json = &outputs(&old, &new, Keep::Prints)[1];
        let doc: serde_json::Value = serde_json::from_str(json).unwrap();
        let change = |kind: &str, name: &str| {
            doc["changes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["kind"] == kind && c["name"] == name)
                .unwrap_or_else(|| panic!("{kind}/{name}:\n{json}"))
                .clone()
        };
        let modified = |kind: &str, name: &str| {
            let c = change(kind, name);
            assert_eq!(c["change"], "modified", "{c}");
            c
        };
        assert!(modified("Deployment", "web")["diff"]
            .as_str()
            .unwrap()
            .contains("+          image: example/web:1.1.0\n"));
        assert_eq!(
            modified("Secret", "db")["secretKeys"],
            serde_json::json!(["data.password"])
        );
        assert_eq!(
            modified("Secret", "sealed")["secretKeys"],
            serde_json::json!(["stringData.password"])
        );
        assert!(
            modified("HelmRelease", "web")["diff"]
                .as_str()
                .unwrap()
                .contains("+        size: 2Gi\n"),
            "{json}"
        );
        for (kind, name, from, diff) in [
            ("ConfigMap", "shared", "apps", false),
            ("ConfigMap", "move", "db", false),
            ("Deployment", "cache", "apps", true),
        ] {
            let c = modified(kind, name);
            assert_eq!(c["previousOwner"], format!("flux-system/{from}"), "{c}");
            assert_eq!(c.get("diff").is_some(), diff, "{c}");
        }
        assert_eq!(change("ConfigMap", "fresh")["change"], "added");
        // Masked as the newer owner substitutes: `apps/v1` is a value of its Secret.
        assert_eq!(change("Deployment", "worker")["apiVersion"], "***");
        assert_eq!(change("PersistentVolumeClaim", "data")["change"], "removed");
        assert_eq!(change("ConfigMap", "gone")["change"], "removed");
        let gone = change("Kustomization", "gone");
        assert_eq!(
            (&gone["change"], &gone["rule"]),
            (&"removed".into(), &"left-build".into()),
            "{gone}"
        );
        assert!(!json.contains("\"order\""), "{json}");
        assert!(!json.contains("\"conf\""), "{json}");
    }
}
