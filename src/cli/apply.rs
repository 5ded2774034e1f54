//! `fluxwave apply [--dry-run]`: computes the whole change set first (every edit verified in
//! memory), then carries it out; with `--dry-run` prints it, with diffs of edited files. A
//! run that writes holds the repository's lock (`fs::lock`) from before it reads the tree
//! until its last write is durable, so two runs never interleave.

use std::io::Write;
use std::path::Path;

use super::layout::load;
use super::report::{io, warn, Outcome};
use crate::diag::{render, Finding};
use crate::error::Result;
use crate::plan::changes::{self, Change, Op};
use crate::plan::execute;
use crate::plural::count;
use crate::unified::unified_diff;

pub fn run(root: &Path, dry_run: bool, out: &mut impl Write) -> Result<Outcome> {
    // Taken before the tree is read: the plan is made from a tree no other run is changing.
    let lock = if dry_run {
        None
    } else {
        Some(crate::fs::lock::acquire(root, "apply")?)
    };
    let (repo, plan) = load(root)?;
    let set = changes::compute(&repo, &plan)?;
    for w in &set.warnings {
        let f = Finding::new(w.code, &w.path, w.message.clone(), &w.help);
        warn(format_args!("{}", render::line(&f)));
    }
    let changes = set.changes;
    let mut s = String::new();
    for c in &changes {
        s.push_str(&describe(c, dry_run));
    }
    if dry_run && changes::transfers_ownership(&changes) {
        s.push_str(&ownership_note(&repo, &changes)?);
    }
    if !dry_run {
        execute::execute(&repo, &changes)?;
    }
    s.push_str(&match (changes.len(), dry_run) {
        (0, _) => "nothing to change\n".to_string(),
        (n, true) => format!(
            "{} would be made (dry run: nothing written)\n",
            count(n, "change")
        ),
        (n, false) => format!("{} made\n", count(n, "change")),
    });
    out.write_all(s.as_bytes()).map_err(io)?;
    // The process ends next: freeing every service, node, file name and change one by one
    // is work for nothing.
    std::mem::forget((repo, plan, changes));
    drop(lock);
    Ok(Outcome::Clean)
}

/// What Flux would delete on the way from the tree as it is to the tree as `changes` leave
/// it, as `cutover` judges it: a change that moves objects between Flux Kustomizations not
/// ordered by `dependsOn` needs its runbook (release first, then move).
fn ownership_note(repo: &crate::repo::Repo, changes: &[Change]) -> Result<String> {
    let before = crate::tree::FileTree::from_worktree_or_dir(&repo.root)?;
    let after = changes::tree_after(before.clone(), changes);
    let report = crate::cutover::compare(&before, &after, Some(&repo.config), "this apply")?;
    let mut s = String::from("\n");
    match report.verdict() {
        crate::cutover::Verdict::Safe => {
            s.push_str("cutover: safe: from the working tree as it is to the tree this apply leaves, Flux deletes nothing on the way\n");
            return Ok(s);
        }
        crate::cutover::Verdict::Deletes => s.push_str(&format!(
            "cutover: this change moves objects between Flux Kustomizations, and Flux would delete {} ({} holding data) on the way unless the old owners release them first\n",
            count(report.deletions.len(), "object"),
            report.deletions.iter().filter(|d| d.data.holds()).count()
        )),
        crate::cutover::Verdict::Incomplete | crate::cutover::Verdict::NoEnvironment => s.push_str(&format!(
            "cutover: incomplete: this change moves objects between Flux Kustomizations, and it touches {} fluxwave cannot see whole; Flux may delete more than the {} found\n",
            count(report.incomplete.len(), "Kustomization"),
            count(report.deletions.len(), "object")
        )),
    }
    s.push_str("commit the repository as it is, then after `fluxwave apply` run `fluxwave cutover --from <that commit>` for the objects and the runbook; in short:\n");
    for section in &report.runbook {
        s.push_str(&format!("  {}\n", section.title));
        for line in &section.lines {
            s.push_str(&format!("    {line}\n"));
        }
    }
    s.push('\n');
    Ok(s)
}

fn describe(c: &Change, dry_run: bool) -> String {
    let mut s = match &c.op {
        Op::Move { from, to } => format!("move    {from} -> {to}  ({})\n", c.why),
        Op::Write {
            path, old: None, ..
        } => format!("create  {path}  ({})\n", c.why),
        Op::Write { path, .. } => format!("update  {path}  ({})\n", c.why),
        Op::Remove { path } => format!("remove  {path}  ({})\n", c.why),
        Op::RemoveDir { path } => format!("rmdir   {path}  ({})\n", c.why),
    };
    if dry_run {
        if let Op::Write {
            path,
            old: Some(old),
            new,
        } = &c.op
        {
            // A diff shows lines of the file around each edit: their secrets are masked as
            // in a snippet (line for line, so the diff is the same).
            let old = crate::redact::masked(old, &crate::redact::ranges(old));
            let new = crate::redact::masked(new, &crate::redact::ranges(new));
            s.push_str(&unified_diff(path, &old, &new));
        }
    }
    s
}
