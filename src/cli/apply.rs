//! `fluxwave apply [--dry-run]`: computes the whole change set first (every edit verified in
//! memory), then carries it out; with `--dry-run` prints it, with diffs of edited files. A
//! run that writes holds the repository's lock (`fs::lock`) from before it reads the tree
//! until its last write is durable, so two runs never interleave.

use std::io::Write;
use std::path::Path;

use super::{io, Outcome};
use crate::diag::{render, Finding};
use crate::error::Result;
use crate::plan::changes::{self, Change, Op};
use crate::plan::execute;
use crate::plural::count;

pub fn run(root: &Path, dry_run: bool, out: &mut impl Write) -> Result<Outcome> {
    // Taken before the tree is read: the plan is made from a tree no other run is changing.
    let lock = if dry_run {
        None
    } else {
        Some(crate::fs::lock::acquire(root, "apply")?)
    };
    let (repo, plan) = super::plan::load(root)?;
    let set = changes::compute(&repo, &plan)?;
    for w in &set.warnings {
        let f = Finding::new(w.code, &w.path, w.message.clone(), &w.help);
        super::warn(format_args!("{}", render::line(&f)));
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
        crate::cutover::Verdict::Incomplete => s.push_str(&format!(
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

/// The unified diff of an edit, with two lines of context. An edit whose changed middle is
/// large on both sides (thousands of patches replaced by thousands of others, when a
/// topology changes) is shown as one hunk, its old middle removed and its new one added:
/// the minimal diff of such a middle costs its length squared (minutes at 10,000 units)
/// and shows no more.
fn unified_diff(path: &str, old: &str, new: &str) -> String {
    const CONTEXT: usize = 2;
    const MINIMAL_UP_TO: usize = 4_000_000;
    let a: Vec<&str> = old.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (mid_a, mid_b) = (a.len() - prefix - suffix, b.len() - prefix - suffix);
    if mid_a.saturating_mul(mid_b) <= MINIMAL_UP_TO {
        return similar::TextDiff::from_lines(old, new)
            .unified_diff()
            .context_radius(CONTEXT)
            .header(&format!("a/{path}"), &format!("b/{path}"))
            .to_string();
    }
    let start = prefix.saturating_sub(CONTEXT);
    let after = (a.len() - suffix + CONTEXT).min(a.len());
    let (len_a, len_b) = (after - start, after - start - mid_a + mid_b);
    // Line numbers count from 1; an empty range names the line before it, as diff does.
    let at = |len: usize| if len == 0 { start } else { start + 1 };
    let mut s = format!(
        "--- a/{path}\n+++ b/{path}\n@@ -{},{len_a} +{},{len_b} @@\n",
        at(len_a),
        at(len_b)
    );
    let line = |s: &mut String, mark: char, l: &str| {
        s.push(mark);
        s.push_str(l);
        if !l.ends_with('\n') {
            s.push_str("\n\\ No newline at end of file\n");
        }
    };
    for l in &a[start..prefix] {
        line(&mut s, ' ', l);
    }
    for l in &a[prefix..prefix + mid_a] {
        line(&mut s, '-', l);
    }
    for l in &b[prefix..prefix + mid_b] {
        line(&mut s, '+', l);
    }
    for l in &a[prefix + mid_a..after] {
        line(&mut s, ' ', l);
    }
    s
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

#[cfg(test)]
mod tests {
    use super::unified_diff;

    /// `old` with the one-hunk diff applied, as `patch` would.
    fn patched(old: &str, diff: &str) -> String {
        let lines: Vec<&str> = old.split_inclusive('\n').collect();
        let mut body = diff.lines().skip(2);
        let header = body.next().unwrap();
        let start: usize = header
            .trim_start_matches("@@ -")
            .split(',')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let mut out: String = lines[..start.saturating_sub(1)].concat();
        let mut at = start.saturating_sub(1);
        let mut last: Option<char> = None;
        for l in body {
            if l == "\\ No newline at end of file" {
                if last != Some('-') {
                    out.pop();
                }
                continue;
            }
            let (mark, text) = l.split_at(1);
            last = mark.chars().next();
            match mark {
                " " => {
                    out.push_str(text);
                    out.push('\n');
                    at += 1;
                }
                "-" => at += 1,
                "+" => {
                    out.push_str(text);
                    out.push('\n');
                }
                _ => panic!("{l}"),
            }
        }
        out.push_str(&lines[at..].concat());
        out
    }

    #[test]
    fn a_large_middle_is_one_hunk_that_patches_old_into_new() {
        let patches = |name: &str, n: usize| -> String {
            (0..n)
                .map(|i| format!("  - patch: |-\n      name: {name}-{i}\n"))
                .collect()
        };
        let head = "# env\nresources:\n  - ../base\npatches:\n";
        let old = format!("{head}{}# end\n", patches("apps-wave", 3000));
        let new = format!("{head}{}# end\n", patches("apps", 5000));
        let diff = unified_diff("k.yaml", &old, &new);
        assert!(
            diff.starts_with("--- a/k.yaml\n+++ b/k.yaml\n@@ -4,6002 +4,10002 @@\n"),
            "{}",
            &diff[..200]
        );
        assert_eq!(patched(&old, &diff), new);
        // Without a final newline too.
        let (old, new) = (old.trim_end().to_string(), new.trim_end().to_string());
        assert_eq!(patched(&old, &unified_diff("k.yaml", &old, &new)), new);
    }

    #[test]
    fn a_small_edit_is_the_minimal_diff() {
        let old = "a\nb\nc\nd\ne\n";
        let new = "a\nb\nC\nd\ne\n";
        let diff = unified_diff("f", old, new);
        assert_eq!(
            diff,
            "--- a/f\n+++ b/f\n@@ -1,5 +1,5 @@\n a\n b\n-c\n+C\n d\n e\n"
        );
        assert_eq!(patched(old, &diff), new);
    }
}
