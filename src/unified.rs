//! Unified diffs, as `diff -u` and `git diff` print them: of a file `apply --dry-run` edits,
//! and of an object `diff` finds modified.

/// The unified diff of an edit, with two lines of context, its sides named `a/{path}` and
/// `b/{path}`. An edit whose changed middle is large on both sides (thousands of patches
/// replaced by thousands of others, when a topology changes) is shown as one hunk, its old
/// middle removed and its new one added: the minimal diff of such a middle costs its length
/// squared (minutes at 10,000 units) and shows no more.
pub(crate) fn unified_diff(path: &str, old: &str, new: &str) -> String {
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
