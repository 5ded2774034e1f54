//! Findings silenced on purpose: an entry of `check.ignore` in fluxwave.yaml (a code, and a
//! path or glob relative to the repository root, everywhere when left out), or a comment
//! `# fluxwave:ignore <code>[, <code>...]` in a YAML file, on the finding's line or alone on
//! the line above it. An ignore that silences nothing is itself reported (`unused-ignore`),
//! so that none outlives what it was written for; a code that is no finding code is bad input
//! in fluxwave.yaml and an `unused-ignore` in a comment.

use std::collections::BTreeSet;

use super::{Finding, Place};
use crate::config::{Config, FILE};
use crate::diag::Code;
use crate::error::{Result, SourceError};
use crate::tree::FileTree;
use crate::yaml::Text;

const DIRECTIVE: &str = "fluxwave:ignore";

/// The codes a comment names, each with its byte span.
type Codes = Vec<(String, (usize, usize))>;

/// A `# fluxwave:ignore` comment: where it is and the codes it names, each with its byte span.
struct Comment {
    file: String,
    text: Text,
    /// 1-based.
    line: usize,
    /// Nothing but the comment on its line: it covers the line below too.
    alone: bool,
    codes: Codes,
}

/// `findings` without those an ignore silences, then an `unused-ignore` for every ignore
/// that silenced nothing. `Err` when fluxwave.yaml ignores a code that does not exist.
pub fn apply(tree: &FileTree, config: &Config, findings: Vec<Finding>) -> Result<Vec<Finding>> {
    let entries = &config.check.ignore;
    let text = config.text.clone().unwrap_or_default();
    let errors: Vec<SourceError> = entries
        .iter()
        .filter(|e| code(&e.code).is_none())
        .map(|e| {
            SourceError::new(FILE, format!("`{}` is not a finding code", e.code))
                .at(&text, e.code_span)
                .help(closest(&e.code))
        })
        .collect();
    if !errors.is_empty() {
        return Err(errors.into());
    }
    let comments = comments(tree);
    let mut used_entries = vec![false; entries.len()];
    let mut used_codes: BTreeSet<(usize, usize)> = BTreeSet::new();
    let mut kept = Vec::with_capacity(findings.len());
    for f in findings {
        let by_entry = entries.iter().position(|e| {
            e.code == f.code.as_str() && e.path.as_deref().is_none_or(|p| covers(p, &f.path))
        });
        if let Some(i) = by_entry {
            used_entries[i] = true;
            continue;
        }
        let line = f.line_col().map(|(l, _)| l);
        let by_comment = line.and_then(|line| {
            comments.iter().enumerate().find_map(|(ci, c)| {
                let here = c.file == f.path && (c.line == line || (c.alone && c.line + 1 == line));
                let k = c
                    .codes
                    .iter()
                    .position(|(code, _)| here && code == f.code.as_str())?;
                Some((ci, k))
            })
        });
        if let Some(at) = by_comment {
            used_codes.insert(at);
            continue;
        }
        kept.push(f);
    }
    for (_, e) in entries
        .iter()
        .enumerate()
        .filter(|(i, _)| !used_entries[*i])
    {
        kept.push(
            Finding::new(
                Code::UnusedIgnore,
                FILE,
                format!(
                    "check.ignore silences `{}`{}, but no finding matches",
                    e.code,
                    e.path
                        .as_deref()
                        .map(|p| format!(" under `{p}`"))
                        .unwrap_or_default()
                ),
                "remove the entry (or correct its code or path)",
            )
            .at(Some(Place::new(&text, e.code_span.0, e.code_span.1))),
        );
    }
    for (ci, c) in comments.iter().enumerate() {
        if c.codes.is_empty() {
            kept.push(
                Finding::new(
                    Code::UnusedIgnore,
                    c.file.clone(),
                    "`fluxwave:ignore` names no finding code".to_string(),
                    "name the codes to silence: `# fluxwave:ignore <code>[, <code>...] -- why`",
                )
                .at(line_place(&c.text, c.line)),
            );
        }
        for (k, (name, span)) in c.codes.iter().enumerate() {
            if used_codes.contains(&(ci, k)) {
                continue;
            }
            let (message, help) = if code(name).is_none() {
                (
                    format!("`fluxwave:ignore` names `{name}`, which is not a finding code"),
                    closest(name),
                )
            } else {
                (
                    format!(
                        "`fluxwave:ignore {name}` silences nothing: no `{name}` finding on {}",
                        if c.alone { "the line below" } else { "this line" }
                    ),
                    "remove it, or move it onto the line of the finding (or alone on the line above)".to_string(),
                )
            };
            kept.push(
                Finding::new(Code::UnusedIgnore, c.file.clone(), message, help)
                    .at(Some(Place::new(&c.text, span.0, span.1))),
            );
        }
    }
    Ok(kept)
}

fn code(name: &str) -> Option<Code> {
    Code::ALL.iter().copied().find(|c| c.as_str() == name)
}

/// The help for a code that does not exist: the closest one.
fn closest(name: &str) -> String {
    let best = Code::ALL
        .iter()
        .min_by_key(|c| strsim::levenshtein(c.as_str(), name))
        .map(|c| c.as_str())
        .unwrap_or_default();
    format!("did you mean `{best}`? `fluxwave check --explain CODE` describes a code")
}

/// The span of line `line` (1-based) of `text`, without its end of line.
fn line_place(text: &Text, line: usize) -> Option<Place> {
    let start: usize = text
        .split_inclusive('\n')
        .take(line - 1)
        .map(str::len)
        .sum();
    let len = text[start..].find('\n').unwrap_or(text.len() - start);
    Some(Place::new(text, start, len))
}

/// Every `# fluxwave:ignore` comment of the tree's YAML files, in path and line order.
fn comments(tree: &FileTree) -> Vec<Comment> {
    let mut out = Vec::new();
    for (file, text) in tree.manifests() {
        if !text.contains(DIRECTIVE) {
            continue;
        }
        let mut offset = 0;
        for (n, line) in text.split_inclusive('\n').enumerate() {
            if let Some((alone, codes)) = directive(line) {
                out.push(Comment {
                    file: file.to_string(),
                    text: text.clone(),
                    line: n + 1,
                    alone,
                    codes: codes
                        .into_iter()
                        .map(|(c, (s, l))| (c, (offset + s, l)))
                        .collect(),
                });
            }
            offset += line.len();
        }
    }
    out
}

/// The directive of one line, if its comment is one: whether the comment is alone on the
/// line, and the codes it names with their spans in the line. A YAML comment starts with a
/// `#` at the start of the line or after a space; the codes are separated by commas or
/// spaces, and end at ` -- ` (a reason follows) or at a word that cannot be a code.
fn directive(line: &str) -> Option<(bool, Codes)> {
    let mut from = 0;
    let hash = loop {
        let at = from + line[from..].find('#')?;
        let starts = at == 0 || line[..at].ends_with([' ', '\t']);
        let body = line[at + 1..].trim_start_matches([' ', '\t']);
        if starts && body.starts_with(DIRECTIVE) {
            break at;
        }
        from = at + 1;
    };
    let alone = line[..hash].trim().is_empty();
    let body_start = hash
        + 1
        + (line[hash + 1..].len() - line[hash + 1..].trim_start_matches([' ', '\t']).len());
    let at = body_start + DIRECTIVE.len();
    // `fluxwave:ignored` is no directive.
    if line[at..].starts_with(|c: char| !c.is_whitespace() && c != ',') {
        return None;
    }
    let mut codes = Vec::new();
    let rest = &line[at..];
    let mut words = Vec::new();
    let mut start = None;
    for (i, c) in rest.char_indices() {
        let sep = c.is_whitespace() || c == ',';
        match (sep, start) {
            (true, Some(s)) => {
                words.push((s, &rest[s..i]));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        words.push((s, &rest[s..]));
    }
    for (s, word) in words {
        if word == "--" {
            break;
        }
        let last = word.ends_with(':');
        let word = word.trim_end_matches(':');
        if word.is_empty()
            || !word
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            break;
        }
        codes.push((word.to_string(), (at + s, word.len())));
        if last {
            break;
        }
    }
    Some((alone, codes))
}

/// Whether the ignore path `pattern` covers the finding's `path`: it matches the path or
/// one of its folders. `*` matches within one segment, `**` any number of segments, `?` one
/// character.
fn covers(pattern: &str, path: &str) -> bool {
    let pat: Vec<&str> = pattern.split('/').collect();
    let segs: Vec<&str> = path.split('/').collect();
    (1..=segs.len()).any(|n| segments_match(&pat, &segs[..n]))
}

fn segments_match(pat: &[&str], segs: &[&str]) -> bool {
    match pat.split_first() {
        None => segs.is_empty(),
        Some((&"**", rest)) => (0..=segs.len()).any(|skip| segments_match(rest, &segs[skip..])),
        Some((p, rest)) => segs.split_first().is_some_and(|(s, more)| {
            segment_matches(p.as_bytes(), s.as_bytes()) && segments_match(rest, more)
        }),
    }
}

fn segment_matches(p: &[u8], s: &[u8]) -> bool {
    match p.split_first() {
        None => s.is_empty(),
        Some((b'*', rest)) => (0..=s.len()).any(|skip| segment_matches(rest, &s[skip..])),
        Some((b'?', rest)) => !s.is_empty() && segment_matches(rest, &s[1..]),
        Some((c, rest)) => s.first() == Some(c) && segment_matches(rest, &s[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_globs_cover_files_and_folders() {
        assert!(covers("bootstrap", "bootstrap/flux/secret.yaml"));
        assert!(covers(
            "bootstrap/flux/secret.yaml",
            "bootstrap/flux/secret.yaml"
        ));
        assert!(!covers("bootstrap", "bootstrapped/secret.yaml"));
        assert!(covers(
            "kubernetes/apps/**/ks.yaml",
            "kubernetes/apps/media/sonarr/ks.yaml"
        ));
        assert!(covers(
            "kubernetes/apps/**/ks.yaml",
            "kubernetes/apps/ks.yaml"
        ));
        assert!(!covers(
            "kubernetes/apps/**/ks.yaml",
            "kubernetes/apps/media/app/hr.yaml"
        ));
        assert!(covers("clusters/*/apps.yaml", "clusters/dev/apps.yaml"));
        assert!(!covers("clusters/*/apps.yaml", "clusters/dev/x/apps.yaml"));
        assert!(covers("clusters/*", "clusters/dev/x/apps.yaml"));
        assert!(covers("**/*.sops.yaml", "a/b/c.sops.yaml"));
        assert!(covers("apps/web-?.yaml", "apps/web-1.yaml"));
        assert!(!covers("apps/web-?.yaml", "apps/web-10.yaml"));
    }

    #[test]
    fn directives_name_codes_until_a_reason() {
        let codes = |line: &str| {
            directive(line).map(|(alone, c)| {
                (
                    alone,
                    c.into_iter()
                        .map(|(c, (s, l))| {
                            assert_eq!(&line[s..s + l], c);
                            c
                        })
                        .collect::<Vec<_>>(),
                )
            })
        };
        assert_eq!(
            codes("  wait: true # fluxwave:ignore missing-timeout\n"),
            Some((false, vec!["missing-timeout".to_string()]))
        );
        assert_eq!(
            codes("# fluxwave:ignore plaintext-secret, double-owner -- a public token\n"),
            Some((true, vec!["plaintext-secret".into(), "double-owner".into()]))
        );
        assert_eq!(
            codes("#fluxwave:ignore a b,c: and the rest\n"),
            Some((true, vec!["a".into(), "b".into(), "c".into()]))
        );
        assert_eq!(codes("# fluxwave:ignore\n"), Some((true, vec![])));
        assert_eq!(codes("url: http://x/#fluxwave:ignore a\n"), None);
        assert_eq!(codes("# fluxwave:ignored a\n"), None);
        assert_eq!(codes("# see fluxwave:ignore a\n"), None);
        assert_eq!(codes("key: value\n"), None);
    }
}
