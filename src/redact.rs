//! Secret values never reach fluxwave's output. An error may quote the file it points into
//! (miette's snippet, serde-saphyr's message), so before any text of a file is shown, the
//! places that hold secrets are masked byte for byte with `*` (offsets and spans stay valid):
//! the values under `data:` / `stringData:` of a `kind: Secret` document, the whole `sops:`
//! block, every SOPS `ENC[...]` value, and the `value:` of every environment variable (a
//! catalog's `env`). Masking is textual, so it works on files that do not parse.

/// Byte ranges of `text` that hold secret values, sorted, on character boundaries.
pub fn ranges(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut offset = 0;
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut start = 0;
    // One document at a time: whether it is a Secret decides its data blocks.
    while start < lines.len() {
        let mut end = start;
        while end < lines.len() {
            if end > start && is_document_marker(lines[end]) {
                break;
            }
            end += 1;
        }
        let doc = &lines[start..end];
        let is_secret = doc.iter().any(|l| {
            l.strip_prefix("kind:")
                .is_some_and(|k| strip_comment(k).trim().trim_matches(['"', '\'']) == "Secret")
        });
        document(doc, offset, is_secret, &mut out);
        offset += doc.iter().map(|l| l.len()).sum::<usize>();
        start = end;
    }
    out.sort_unstable();
    out
}

fn is_document_marker(line: &str) -> bool {
    line.starts_with("---") || line.starts_with("...")
}

fn strip_comment(s: &str) -> &str {
    match s.find(" #") {
        Some(i) => &s[..i],
        None => s,
    }
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start_matches([' ', '-']).len()
}

fn content(line: &str) -> &str {
    line.trim_end_matches(['\n', '\r'])
}

/// The masked ranges of one document starting at byte `offset`.
fn document(lines: &[&str], offset: usize, is_secret: bool, out: &mut Vec<(usize, usize)>) {
    // The block being masked: the indentation of its key, and whether it is the env list.
    let mut block: Option<(usize, bool)> = None;
    let mut at = offset;
    for line in lines {
        let text = content(line);
        let trimmed = text.trim_start();
        let ind = indent(text);
        let blank = trimmed.is_empty() || trimmed.starts_with('#');
        if let Some((key_indent, env)) = block {
            if blank || ind > key_indent || (env && ind == key_indent && trimmed.starts_with('-')) {
                if !blank {
                    if env {
                        env_values(text, at, out);
                    } else {
                        value_of_line(text, at, out);
                    }
                }
                enc(text, at, out);
                at += line.len();
                continue;
            }
            block = None;
        }
        let key = trimmed
            .trim_start_matches(['-', ' '])
            .split(':')
            .next()
            .unwrap_or("")
            .trim();
        let after_key = trimmed.contains(':');
        if after_key
            && ind == 0
            && (key == "sops" || (is_secret && matches!(key, "data" | "stringData")))
        {
            block = Some((0, false));
            // A flow mapping on the key's line (`data: {a: b}`): everything after the colon.
            if let Some(colon) = text.find(':') {
                mask(at + colon + 1, at + text.len(), text, out);
            }
        } else if after_key && key == "env" {
            block = Some((ind, true));
            env_values(text, at, out);
        }
        enc(text, at, out);
        at += line.len();
    }
}

fn mask(from: usize, to: usize, _line: &str, out: &mut Vec<(usize, usize)>) {
    if to > from {
        out.push((from, to - from));
    }
}

/// Everything of a line inside a secret block but its key: after the first `: ` or `:` at the
/// end, or the whole content (a block scalar's line).
fn value_of_line(text: &str, at: usize, out: &mut Vec<(usize, usize)>) {
    let start = text.len() - text.trim_start().len();
    match text.find(": ") {
        Some(i) => mask(at + i + 1, at + text.len(), text, out),
        None if text.trim_end().ends_with(':') => {}
        None => mask(at + start, at + text.len(), text, out),
    }
}

/// The text after every `value:` of an environment variable, to the end of its flow item.
fn env_values(text: &str, at: usize, out: &mut Vec<(usize, usize)>) {
    let mut from = 0;
    while let Some(i) = text[from..].find("value:") {
        let start = from + i + "value:".len();
        let before = text[..from + i].chars().last();
        if before.is_some_and(|c| c.is_alphanumeric()) {
            from = start;
            continue;
        }
        let end = text[start..]
            .find(['}', ','])
            .map_or(text.len(), |j| start + j);
        mask(at + start, at + end, text, out);
        from = end.max(start);
        if from >= text.len() {
            break;
        }
    }
}

/// A SOPS-encrypted value: from `ENC[` to the end of the line.
fn enc(text: &str, at: usize, out: &mut Vec<(usize, usize)>) {
    if let Some(i) = text.find("ENC[") {
        mask(at + i, at + text.len(), text, out);
    }
}

/// `text` with every byte of `ranges` replaced by `*` (same length, same offsets).
pub fn masked(text: &str, ranges: &[(usize, usize)]) -> String {
    let mut bytes = text.as_bytes().to_vec();
    for &(start, len) in ranges {
        let end = (start + len).min(bytes.len());
        for b in bytes.get_mut(start.min(end)..end).into_iter().flatten() {
            *b = b'*';
        }
    }
    // Every range starts and ends at an ASCII byte or a line end, so this never fails; if it
    // did, nothing of the text is shown rather than a secret.
    String::from_utf8(bytes).unwrap_or_default()
}

/// The whole lines `text[from..to]` (`from` and `to` at line starts, or `to` at the end),
/// masked exactly as `masked(text, &ranges(text))` masks them, but reading only the documents
/// that hold those lines: a snippet of one line of a large file costs that document, not the
/// file. `None` if the masked lines are not UTF-8 (never, as in `masked`).
pub fn masked_lines(text: &str, from: usize, to: usize) -> Option<String> {
    let bytes = text.as_bytes();
    let to = to.min(bytes.len());
    let from = from.min(to);
    let line_start = |at: usize| memchr::memrchr(b'\n', &bytes[..at]).map_or(0, |i| i + 1);
    // A document starts at a marker line (or at the top); `ranges` reads each on its own.
    let mut start = line_start(from);
    while start > 0 && !is_document_marker(text.get(start..)?) {
        start = line_start(start - 1);
    }
    let mut end = to;
    while end < bytes.len() && (end == start || !is_document_marker(text.get(end..)?)) {
        end = memchr::memchr(b'\n', &bytes[end..]).map_or(bytes.len(), |i| end + i + 1);
    }
    let mut out = bytes[from..to].to_vec();
    for (s, len) in ranges(text.get(start..end)?) {
        let (s, e) = ((start + s).max(from), (start + s + len).min(to));
        if s >= e {
            continue;
        }
        for b in out.get_mut(s - from..e - from)? {
            *b = b'*';
        }
    }
    String::from_utf8(out).ok()
}

/// `message` with every secret value of `text` that it quotes replaced by `***`.
pub fn message(message: &str, text: &str, ranges: &[(usize, usize)]) -> String {
    let mut out = message.to_string();
    let mut values: Vec<&str> = ranges
        .iter()
        .filter_map(|&(s, l)| text.get(s..s + l))
        .flat_map(|v| {
            // The whole value, and its words (a message may quote only a token of it).
            std::iter::once(v.trim()).chain(v.split([' ', '"', '\'', ',', '{', '}', '[', ']']))
        })
        .map(|v| v.trim_matches(|c: char| c.is_whitespace() || c == '"' || c == '\''))
        .filter(|v| v.chars().count() >= 3)
        .collect();
    values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    values.dedup();
    for v in values {
        if out.contains(v) {
            out = out.replace(v, "***");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(text: &str) -> String {
        masked(text, &ranges(text))
    }

    #[test]
    fn masks_secret_data_and_keeps_the_rest() {
        let text = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata:\n  pw: c2VjcmV0\n  cert: |\n    line-one\nstringData: {token: abc}\n---\nkind: ConfigMap\ndata:\n  a: visible\n";
        let out = shown(text);
        assert_eq!(out.len(), text.len());
        assert!(!out.contains("c2VjcmV0") && !out.contains("line-one") && !out.contains("abc"));
        assert!(out.contains("  pw:") && out.contains("name: s") && out.contains("a: visible"));
    }

    #[test]
    fn masks_sops_values_and_env_values() {
        let text = "kind: Secret\ndata:\n  pw: ENC[AES256_GCM,data:xyz]\nsops:\n  age:\n    - enc: |\n        -----BEGIN AGE\n";
        let out = shown(text);
        assert!(!out.contains("xyz") && !out.contains("BEGIN AGE"));
        let text = "spec:\n  env:\n    - {name: A, value: hunter2}\n    - name: B\n      value: \"s3cret\"\n  port: 80\n";
        let out = shown(text);
        assert!(!out.contains("hunter2") && !out.contains("s3cret"), "{out}");
        assert!(out.contains("name: A") && out.contains("port: 80"));
    }

    #[test]
    fn messages_lose_quoted_values() {
        let text = "kind: Secret\nstringData:\n  pw: hunter2\n";
        let r = ranges(text);
        assert_eq!(
            message("invalid type: string \"hunter2\"", text, &r),
            "invalid type: string \"***\""
        );
    }

    #[test]
    fn masked_lines_mask_as_the_whole_file_is_masked() {
        let text = "apiVersion: v1\nkind: ConfigMap\ndata:\n  a: visible\n---\nkind: Secret\ndata:\n  pw: c2VjcmV0\n  cert: |\n    line-one\n---\n--- \nstringData: {token: abc}\nkind: Secret\n...\nspec:\n  env:\n    - {name: A, value: hunter2}\n  x: ENC[AES256_GCM,data:xyz]\n";
        let whole = masked(text, &ranges(text));
        let starts: Vec<usize> = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        for (i, &from) in starts.iter().enumerate() {
            for &to in &starts[i..] {
                assert_eq!(
                    masked_lines(text, from, to).as_deref(),
                    Some(&whole[from..to]),
                    "lines {from}..{to}"
                );
            }
        }
    }

    /// The same on every YAML file of the examples and the test fixtures, every window of up
    /// to six lines.
    #[test]
    fn masked_lines_agree_on_every_fixture() {
        fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else if p.extension().is_some_and(|x| x == "yaml" || x == "yml") {
                    out.push(p);
                }
            }
        }
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        walk(&root.join("examples"), &mut files);
        walk(&root.join("tests/fixtures"), &mut files);
        assert!(files.len() > 50, "{}", files.len());
        for f in files {
            let Ok(text) = std::fs::read_to_string(&f) else {
                continue;
            };
            let whole = masked(&text, &ranges(&text));
            let starts: Vec<usize> = std::iter::once(0)
                .chain(text.match_indices('\n').map(|(i, _)| i + 1))
                .collect();
            for (i, &from) in starts.iter().enumerate() {
                for &to in starts[i..].iter().take(7) {
                    assert_eq!(
                        masked_lines(&text, from, to).as_deref(),
                        Some(&whole[from..to]),
                        "{}: {from}..{to}",
                        f.display()
                    );
                }
            }
        }
    }
}
