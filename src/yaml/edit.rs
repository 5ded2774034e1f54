//! Lossless editing of the block sequences of a single-document YAML mapping (the lists of a
//! hand-kept kustomization.yaml).
//!
//! Invariant: an edit keeps every byte outside the edited list items, every comment is kept,
//! and every edit is re-parsed and compared with the intended result before it is returned
//! (a mismatch is an error, never a wrong edit).

use serde_json::{Map, Value};

/// Item indentation used when nothing in the file suggests another.
const DEFAULT_INDENT: usize = 2;

/// Why an edit was refused. Every refusal leaves the file as it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    #[error("edit_sequence: the key is empty")]
    EmptyKey,
    #[error("edit_sequence: the file has Windows (CRLF) or CR line endings; convert it to LF line endings first")]
    LineEndings,
    #[error("{what} is not valid YAML: {error}")]
    Invalid { what: String, error: String },
    #[error("edit_sequence: the document is not a YAML mapping")]
    NotAMapping,
    #[error("edit_sequence: `{key}` is not a list")]
    NotAList { key: String },
    #[error("edit_sequence: cannot remove item {index} of `{key}`: the list has {len} items")]
    RemoveOutOfRange {
        key: String,
        index: usize,
        len: usize,
    },
    #[error("edit_sequence: item {index} of `{key}` is listed twice for removal")]
    RemovedTwice { key: String, index: usize },
    #[error(
        "edit_sequence: cannot insert before item {index} of `{key}`: the list has {len} items"
    )]
    InsertOutOfRange {
        key: String,
        index: usize,
        len: usize,
    },
    #[error("edit_sequence: new item {index} contains a CR character")]
    ItemWithCr { index: usize },
    #[error("edit_sequence: refusing the edit of `{key}`: {source}")]
    Unverified { key: String, source: Box<EditError> },
    #[error("edit_sequence: refusing the edit of `{key}`: the edited file does not parse to the intended value (the file's layout is not one this editor handles)")]
    Mismatch { key: String },
    #[error(
        "edit_sequence: found a line for `{key}` that the parser does not see as a top-level key"
    )]
    HiddenKeyLine { key: String },
    #[error("edit_sequence: cannot locate the line of top-level key `{key}` (it must start at column 0 as `{key}:`)")]
    KeyLineNotFound { key: String },
    #[error("edit_sequence: top-level key `{key}` appears on more than one line")]
    KeyOnManyLines { key: String },
    #[error("edit_sequence: found {found} items under `{key}` but the parser sees {parsed}; the list's layout is not one this editor handles")]
    ItemCount {
        key: String,
        found: usize,
        parsed: usize,
    },
    #[error("edit_sequence: `{key}` is a flow sequence spanning several lines (or with unbalanced brackets); rewrite it as a block sequence first")]
    MultiLineFlow { key: String },
    #[error(
        "edit_sequence: the value of `{key}` is not a list this editor can rewrite (`{value}`)"
    )]
    NotRewritable { key: String, value: String },
    #[error("edit_sequence: unexpected text after the value of `{key}`: `{tail}`")]
    TrailingText { key: String, tail: String },
}

/// Removes the items at `remove` (indices into the original list) from the block sequence
/// under the top-level key `key` of a single-document YAML mapping, and inserts `new_items`
/// before original index `insert_at` (None = after the last item; an index equal to a removed
/// item means "where that item was"). Each new item is given as YAML text for the item's
/// value at column 0 (may be multi-line, e.g. "apps-wave-0.yaml" or
/// "patch: |-\n  apiVersion: v1\n  kind: X"); it is written with the sequence's own
/// indentation and "- " marker. When the key is absent it is appended at the end of the
/// document as `key:\n  - item`. When the key exists with an empty/flow value (`resources: []`),
/// replace it with a block sequence.
pub fn edit_sequence(
    text: &str,
    key: &str,
    remove: &[usize],
    insert_at: Option<usize>,
    new_items: &[String],
) -> Result<String, EditError> {
    if remove.is_empty() && new_items.is_empty() {
        return Ok(text.to_string());
    }
    if key.is_empty() {
        return Err(EditError::EmptyKey);
    }
    if text.contains('\r') {
        return Err(EditError::LineEndings);
    }

    // What the document means now, and what it must mean after the edit.
    let original = parse_single_doc(text, "edit_sequence: the file")?;
    let map = match original {
        Value::Object(m) => m,
        Value::Null => Map::new(),
        _ => return Err(EditError::NotAMapping),
    };
    let orig_list: Vec<Value> = match map.get(key) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a.clone(),
        Some(_) => return Err(EditError::NotAList { key: key.into() }),
    };
    let len = orig_list.len();
    let mut removed = vec![false; len];
    for &r in remove {
        if r >= len {
            return Err(EditError::RemoveOutOfRange {
                key: key.into(),
                index: r,
                len,
            });
        }
        if removed[r] {
            return Err(EditError::RemovedTwice {
                key: key.into(),
                index: r,
            });
        }
        removed[r] = true;
    }
    let at = insert_at.unwrap_or(len);
    if at > len {
        return Err(EditError::InsertOutOfRange {
            key: key.into(),
            index: at,
            len,
        });
    }
    let mut new_values = Vec::with_capacity(new_items.len());
    for (i, item) in new_items.iter().enumerate() {
        if item.contains('\r') {
            return Err(EditError::ItemWithCr { index: i });
        }
        new_values.push(parse_single_doc(
            item,
            &format!("edit_sequence: new item {i}"),
        )?);
    }
    let expected_list = apply_list_edit(&orig_list, &removed, at, &new_values);
    let mut expected_map = map.clone();
    expected_map.insert(key.to_string(), Value::Array(expected_list.clone()));
    let expected = Value::Object(expected_map);

    let result = edit_text(text, key, &map, &orig_list, &removed, at, new_items)?;

    let got = parse_single_doc(&result, "the edited file").map_err(|e| EditError::Unverified {
        key: key.into(),
        source: Box::new(e),
    })?;
    if got != expected {
        return Err(EditError::Mismatch { key: key.into() });
    }
    Ok(result)
}

/// The list after the edit, as values.
pub(crate) fn apply_list_edit<T: Clone>(
    orig: &[T],
    removed: &[bool],
    at: usize,
    new: &[T],
) -> Vec<T> {
    let mut out = Vec::with_capacity(orig.len() + new.len());
    for (j, item) in orig.iter().enumerate() {
        if j == at {
            out.extend(new.iter().cloned());
        }
        if !removed.get(j).copied().unwrap_or(false) {
            out.push(item.clone());
        }
    }
    if at >= orig.len() {
        out.extend(new.iter().cloned());
    }
    out
}

/// Parses one YAML document into JSON; empty input is `null`.
fn parse_single_doc(text: &str, what: &str) -> Result<Value, EditError> {
    serde_saphyr::from_str::<Value>(text).map_err(|e| EditError::Invalid {
        what: what.into(),
        error: crate::yaml::brief_error(text, &e),
    })
}

/// How the value of the key is written on the key's own line.
enum KeyValue {
    /// Nothing (or only a comment) after the colon: a block sequence or null follows.
    Block,
    /// A one-line flow sequence or an explicit null; `tail` is what follows it on the line.
    Inline { tail: String },
}

/// The text edit. `map` and `orig_list` are the parsed original.
fn edit_text(
    text: &str,
    key: &str,
    map: &Map<String, Value>,
    orig_list: &[Value],
    removed: &[bool],
    at: usize,
    new_items: &[String],
) -> Result<String, EditError> {
    let (lines, trailing_nl) = split_lines(text);

    let key_lines: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| key_colon_end(l, key).map(|_| i))
        .collect();

    if !map.contains_key(key) {
        if !key_lines.is_empty() {
            return Err(EditError::HiddenKeyLine { key: key.into() });
        }
        let indent = default_indent(&lines);
        let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        out.push(format!("{key}:"));
        for item in new_items {
            out.extend(render_item(indent, item));
        }
        return Ok(join_lines(&out, trailing_nl));
    }

    let k = match key_lines.as_slice() {
        [k] => *k,
        [] => return Err(EditError::KeyLineNotFound { key: key.into() }),
        _ => return Err(EditError::KeyOnManyLines { key: key.into() }),
    };
    let key_line = lines[k];
    let colon_end = key_colon_end(key_line, key)
        .ok_or_else(|| EditError::KeyLineNotFound { key: key.into() })?;
    let prefix = &key_line[..colon_end];
    let after = &key_line[colon_end..];
    let final_len = removed.iter().filter(|r| !**r).count() + new_items.len();

    let mut out: Vec<String> = lines[..k].iter().map(|l| l.to_string()).collect();

    match key_value(after, key)? {
        KeyValue::Inline { tail } => {
            // `key: []`, `key: [a, b]` or `key: ~`: rewrite as a block sequence.
            if final_len == 0 {
                out.push(format!("{prefix} []{tail}"));
            } else {
                out.push(format!("{prefix}{tail}"));
            }
            let indent = default_indent(&lines);
            let existing: Vec<String> = orig_list.iter().map(render_value_item).collect();
            for item in apply_list_edit(&existing, removed, at, new_items) {
                out.extend(render_item(indent, &item));
            }
            out.extend(lines[k + 1..].iter().map(|l| l.to_string()));
        }
        KeyValue::Block => {
            let (indent, items) = scan_block_sequence(&lines, k);
            if items.len() != orig_list.len() {
                return Err(EditError::ItemCount {
                    key: key.into(),
                    found: items.len(),
                    parsed: orig_list.len(),
                });
            }
            let indent = indent.unwrap_or_else(|| default_indent(&lines));
            if final_len == 0 {
                out.push(format!("{prefix} []{after}"));
            } else {
                out.push(key_line.to_string());
            }
            let new_lines: Vec<String> = new_items
                .iter()
                .flat_map(|item| render_item(indent, item))
                .collect();
            let mut pos = k + 1;
            for (j, &(start, end)) in items.iter().enumerate() {
                let is_removed = removed.get(j).copied().unwrap_or(false);
                if j == at && !is_removed {
                    // Before a kept item: above the comments that describe it.
                    out.extend(new_lines.iter().cloned());
                }
                out.extend(lines[pos..start].iter().map(|l| l.to_string()));
                if is_removed {
                    out.extend(removed_comments(
                        &lines,
                        trailing_nl,
                        (start, end),
                        map,
                        indent,
                    ));
                }
                if j == at && is_removed {
                    // In place of a removed item: below the comments that were above it.
                    out.extend(new_lines.iter().cloned());
                }
                if !is_removed {
                    out.extend(lines[start..end].iter().map(|l| l.to_string()));
                }
                pos = end;
            }
            if at >= items.len() {
                out.extend(new_lines.iter().cloned());
            }
            out.extend(lines[pos..].iter().map(|l| l.to_string()));
        }
    }
    Ok(join_lines(&out, trailing_nl))
}

/// The comments of a removed item (lines `range` of `lines`), as full-line comments at the
/// item's indentation: a comment at the end of one of its lines, or a comment line inside
/// it. Whether a `#` starts a comment (and not a quoted value, or a line of a block scalar)
/// is asked of the parser: the file without it must mean what it meant (`map`).
fn removed_comments(
    lines: &[&str],
    trailing_nl: bool,
    range: (usize, usize),
    map: &Map<String, Value>,
    indent: usize,
) -> Vec<String> {
    let original = Value::Object(map.clone());
    let means_the_same = |i: usize, line: Option<&str>| {
        let edited: Vec<String> = lines
            .iter()
            .enumerate()
            .filter_map(|(j, l)| match (j == i, line) {
                (false, _) => Some(l.to_string()),
                (true, Some(l)) => Some(l.to_string()),
                (true, None) => None,
            })
            .collect();
        parse_single_doc(&join_lines(&edited, trailing_nl), "").is_ok_and(|v| v == original)
    };
    let pad = " ".repeat(indent);
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate().take(range.1).skip(range.0) {
        let line: &str = line;
        if !line.contains('#') {
            continue;
        }
        let t = line.trim_start_matches([' ', '\t']);
        if t.starts_with('#') {
            if means_the_same(i, None) {
                out.push(format!("{pad}{}", t.trim_end()));
            }
            continue;
        }
        let starts = line
            .char_indices()
            .filter(|&(p, c)| c == '#' && line[..p].ends_with([' ', '\t']))
            .map(|(p, _)| p);
        for p in starts {
            if means_the_same(i, Some(line[..p].trim_end())) {
                out.push(format!("{pad}{}", line[p..].trim_end()));
                break;
            }
        }
    }
    out
}

/// Splits text into lines and whether it ends with a newline. Empty text counts as ending with
/// one, so that text appended to an empty file ends with a newline.
fn split_lines(text: &str) -> (Vec<&str>, bool) {
    if text.is_empty() {
        return (Vec::new(), true);
    }
    match text.strip_suffix('\n') {
        Some(body) => (body.split('\n').collect(), true),
        None => (text.split('\n').collect(), false),
    }
}

fn join_lines(lines: &[String], trailing_nl: bool) -> String {
    let mut s = lines.join("\n");
    if trailing_nl && !lines.is_empty() {
        s.push('\n');
    }
    s
}

/// If `line` is the top-level key `key` (plain, single- or double-quoted), the byte offset just
/// past its colon.
fn key_colon_end(line: &str, key: &str) -> Option<usize> {
    let candidates = [key.to_string(), format!("\"{key}\""), format!("'{key}'")];
    for c in &candidates {
        if let Some(rest) = line.strip_prefix(c.as_str()) {
            if let Some(after) = rest.strip_prefix(':') {
                if after.is_empty() || after.starts_with(' ') || after.starts_with('\t') {
                    return Some(c.len() + 1);
                }
            }
        }
    }
    None
}

/// Classifies what follows `key:` on its line.
fn key_value(after: &str, key: &str) -> Result<KeyValue, EditError> {
    let trimmed = after.trim_start();
    if trimmed.is_empty() || trimmed.starts_with('#') {
        return Ok(KeyValue::Block);
    }
    let value_len = if trimmed.starts_with('[') {
        flow_end(trimmed).ok_or_else(|| EditError::MultiLineFlow { key: key.into() })?
    } else {
        let token = trimmed.split([' ', '\t']).next().unwrap_or("");
        if matches!(token, "~" | "null" | "Null" | "NULL") {
            token.len()
        } else {
            return Err(EditError::NotRewritable {
                key: key.into(),
                value: trimmed.into(),
            });
        }
    };
    let tail = &trimmed[value_len..];
    let tail_ok = tail.trim().is_empty()
        || (tail.starts_with([' ', '\t']) && tail.trim_start().starts_with('#'));
    if !tail_ok {
        return Err(EditError::TrailingText {
            key: key.into(),
            tail: tail.into(),
        });
    }
    let tail = if tail.trim().is_empty() { "" } else { tail };
    Ok(KeyValue::Inline {
        tail: tail.to_string(),
    })
}

/// Byte length of the one-line flow collection at the start of `s`, if it closes on this line.
fn flow_end(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_single = false;
    let mut in_double = false;
    let mut escaped = false;
    let mut prev = ' ';
    for (i, c) in s.char_indices() {
        if in_double {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_double = false;
            }
        } else if in_single {
            if c == '\'' {
                in_single = false;
            }
        } else {
            match c {
                '"' => in_double = true,
                '\'' => in_single = true,
                '[' | '{' => depth += 1,
                ']' | '}' => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        return Some(i + c.len_utf8());
                    }
                }
                '#' if prev == ' ' || prev == '\t' => return None,
                _ => {}
            }
        }
        prev = c;
    }
    None
}

fn leading_spaces(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// Whether trimmed line content starts a block sequence item.
fn is_dash(t: &str) -> bool {
    t == "-" || t.starts_with("- ") || t.starts_with("-\t")
}

/// Whether a line ends with a block scalar header (`|`, `|-`, `>+`, `|2`, ...).
fn opens_block_scalar(t: &str) -> bool {
    let content = match t.find(" #") {
        Some(i) => &t[..i],
        None => t,
    };
    let content = content.trim_end();
    let stripped = content.trim_end_matches(|c: char| c == '-' || c == '+' || c.is_ascii_digit());
    let Some(before) = stripped
        .strip_suffix('|')
        .or_else(|| stripped.strip_suffix('>'))
    else {
        return false;
    };
    before.is_empty() || before.ends_with(' ') || before.ends_with('\t')
}

/// Finds the items of the block sequence under the key on line `k`: the indentation of the
/// `- ` markers (None when there are no items) and each item's line range `[start, end)`, from
/// its marker line to its last content line. Comment and blank lines between items belong to
/// no item.
fn scan_block_sequence(lines: &[&str], k: usize) -> (Option<usize>, Vec<(usize, usize)>) {
    let mut indent: Option<usize> = None;
    let mut items: Vec<(usize, usize)> = Vec::new();
    let mut current: Option<(usize, usize)> = None;
    // Indentation of the line that opened a block scalar, while inside one.
    let mut scalar_from: Option<usize> = None;
    for (i, line) in lines.iter().enumerate().skip(k + 1) {
        let t = line.trim_start_matches(' ');
        let col = leading_spaces(line);
        if t.is_empty() {
            continue;
        }
        if let Some(s) = scalar_from {
            if col > s {
                if let Some(cur) = current.as_mut() {
                    cur.1 = i;
                }
                continue;
            }
            scalar_from = None;
        }
        if t.starts_with('#') {
            continue;
        }
        let ind = match indent {
            Some(ind) => ind,
            None => {
                if !is_dash(t) {
                    break;
                }
                indent = Some(col);
                col
            }
        };
        if col == ind && is_dash(t) {
            if let Some((s, e)) = current.take() {
                items.push((s, e + 1));
            }
            current = Some((i, i));
        } else if col > ind {
            match current.as_mut() {
                Some(cur) => cur.1 = i,
                None => break,
            }
        } else {
            break;
        }
        if opens_block_scalar(t) {
            scalar_from = Some(col);
        }
    }
    if let Some((s, e)) = current {
        items.push((s, e + 1));
    }
    (indent, items)
}

/// The item indentation other top-level block sequences of the file use, or the default.
fn default_indent(lines: &[&str]) -> usize {
    let mut prev_key = false;
    for line in lines {
        let t = line.trim_start_matches(' ');
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if prev_key && is_dash(t) {
            return leading_spaces(line);
        }
        prev_key = leading_spaces(line) == 0 && {
            let content = match t.find(" #") {
                Some(i) => &t[..i],
                None => t,
            };
            content.trim_end().ends_with(':')
        };
    }
    DEFAULT_INDENT
}

/// The lines of a new item: `- ` plus its first line, the rest shifted under it.
fn render_item(indent: usize, item: &str) -> Vec<String> {
    let pad = " ".repeat(indent);
    let body = item.strip_suffix('\n').unwrap_or(item);
    body.split('\n')
        .enumerate()
        .map(|(i, l)| {
            if i == 0 {
                if l.is_empty() {
                    format!("{pad}-")
                } else {
                    format!("{pad}- {l}")
                }
            } else if l.is_empty() {
                String::new()
            } else {
                format!("{pad}  {l}")
            }
        })
        .collect()
}

/// A value as item text for `edit_sequence` (YAML at column 0).
fn render_value_item(v: &Value) -> String {
    crate::yaml::emit(v).trim_end_matches('\n').to_string()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// A hand-kept clusters/base kustomization (the editor's and the decryption tests').
    pub(crate) const BASE: &str =
        "# Flux objects shared by every cluster. Hand-maintained: keep the order.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  # controllers and CRDs (CNPG, cert-manager)
  - platform.yaml
  # cluster-wide config that needs those CRDs; also the cluster-vars ConfigMap
  - platform-config.yaml
  # the app tier: everything under ./apps (see apps/kustomization.yaml)
  - apps.yaml
";

    pub(crate) fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    pub(crate) fn parse(text: &str) -> Value {
        serde_saphyr::from_str::<Value>(text).unwrap()
    }

    #[test]
    fn replace_apps_with_waves_keeps_comment_above() {
        let items = s(&["apps-wave-0.yaml", "apps-wave-1.yaml", "apps-wave-2.yaml"]);
        let out = edit_sequence(BASE, "resources", &[2], Some(2), &items).unwrap();
        let expected = BASE.replace(
            "  - apps.yaml\n",
            "  - apps-wave-0.yaml\n  - apps-wave-1.yaml\n  - apps-wave-2.yaml\n",
        );
        assert_eq!(out, expected);
        assert!(out.contains("# the app tier: everything under ./apps (see apps/kustomization.yaml)\n  - apps-wave-0.yaml\n"));
    }

    #[test]
    fn noop_is_byte_identical() {
        assert_eq!(
            edit_sequence(BASE, "resources", &[], None, &[]).unwrap(),
            BASE
        );
        let weird = "a: [unterminated\r\n";
        assert_eq!(edit_sequence(weird, "x", &[], Some(9), &[]).unwrap(), weird);
    }

    #[test]
    fn insert_at_end() {
        let out = edit_sequence(BASE, "resources", &[], None, &s(&["extra.yaml"])).unwrap();
        assert_eq!(out, format!("{BASE}  - extra.yaml\n"));
        let out2 = edit_sequence(BASE, "resources", &[], Some(3), &s(&["extra.yaml"])).unwrap();
        assert_eq!(out, out2);
    }

    #[test]
    fn insert_before_kept_item_goes_above_its_comment() {
        let out = edit_sequence(BASE, "resources", &[], Some(1), &s(&["new.yaml"])).unwrap();
        assert!(out.contains("  - platform.yaml\n  - new.yaml\n  # cluster-wide"));
    }

    #[test]
    fn remove_middle_item_keeps_its_comment() {
        let out = edit_sequence(BASE, "resources", &[1], None, &[]).unwrap();
        let expected = BASE.replace("  - platform-config.yaml\n", "");
        assert_eq!(out, expected);
        assert!(out.contains("ConfigMap\n  # the app tier"));
    }

    #[test]
    fn remove_everything_writes_empty_flow() {
        let out = edit_sequence(BASE, "resources", &[0, 1, 2], None, &[]).unwrap();
        assert!(out.contains("resources: []\n  # controllers"));
        assert_eq!(parse(&out)["resources"], json!([]));
    }

    #[test]
    fn key_absent_is_appended() {
        let text = "# header\nkind: Kustomization\n";
        let out = edit_sequence(text, "patches", &[], None, &s(&["a.yaml", "b.yaml"])).unwrap();
        assert_eq!(
            out,
            "# header\nkind: Kustomization\npatches:\n  - a.yaml\n  - b.yaml\n"
        );
        let out = edit_sequence("", "resources", &[], None, &s(&["a.yaml"])).unwrap();
        assert_eq!(out, "resources:\n  - a.yaml\n");
    }

    #[test]
    fn key_absent_follows_column_zero_style() {
        let text = "resources:\n- a.yaml\n";
        let out = edit_sequence(text, "components", &[], None, &s(&["c"])).unwrap();
        assert_eq!(out, "resources:\n- a.yaml\ncomponents:\n- c\n");
    }

    #[test]
    fn column_zero_dash_style() {
        let text = "resources:\n# first\n- a.yaml\n- b.yaml # trailing\nkind: Kustomization\n";
        let out =
            edit_sequence(text, "resources", &[1], Some(1), &s(&["c.yaml", "d.yaml"])).unwrap();
        assert_eq!(
            out,
            "resources:\n# first\n- a.yaml\n# trailing\n- c.yaml\n- d.yaml\nkind: Kustomization\n"
        );
    }

    /// A removed item's comments (at the end of its lines, or on lines of their own inside
    /// it) stay, as full-line comments where it was; a `#` that is part of a value (quoted,
    /// or inside a block scalar) is no comment and goes with the item.
    #[test]
    fn a_removed_items_comments_are_kept_where_it_was() {
        let text = "resources:\n  - a.yaml # keep me\n  - b.yaml\n";
        let out = edit_sequence(text, "resources", &[0], None, &[]).unwrap();
        assert_eq!(out, "resources:\n  # keep me\n  - b.yaml\n");
        let out = edit_sequence(text, "resources", &[0, 1], None, &[]).unwrap();
        assert_eq!(out, "resources: []\n  # keep me\n");
        let out = edit_sequence(text, "resources", &[0], Some(0), &s(&["w0.yaml"])).unwrap();
        assert_eq!(out, "resources:\n  # keep me\n  - w0.yaml\n  - b.yaml\n");
        let text = "patches:\n  - target: # the retired one\n      # by name\n      name: apps\n    patch: |-\n      # not a comment\n      - op: add # nor this\n  - path: \"x #1.yaml\" # but this\nkind: K\n";
        let out = edit_sequence(text, "patches", &[0, 1], None, &[]).unwrap();
        assert_eq!(
            out,
            "patches: []\n  # the retired one\n  # by name\n  # but this\nkind: K\n"
        );
    }

    #[test]
    fn no_trailing_newline_is_kept() {
        let text = "resources:\n  - a\n  - b";
        let out = edit_sequence(text, "resources", &[0], None, &s(&["c"])).unwrap();
        assert_eq!(out, "resources:\n  - b\n  - c");
        let out = edit_sequence(text, "other", &[], None, &s(&["x"])).unwrap();
        assert_eq!(out, "resources:\n  - a\n  - b\nother:\n  - x");
    }

    #[test]
    fn flow_and_null_values_become_block() {
        let out = edit_sequence(
            "resources: [] # none yet\nkind: K\n",
            "resources",
            &[],
            None,
            &s(&["a"]),
        )
        .unwrap();
        assert_eq!(out, "resources: # none yet\n  - a\nkind: K\n");
        let out = edit_sequence(
            "resources: [a, 'b c']\n",
            "resources",
            &[0],
            None,
            &s(&["d"]),
        )
        .unwrap();
        assert_eq!(out, "resources:\n  - b c\n  - d\n");
        let out =
            edit_sequence("resources:\nkind: K\n", "resources", &[], None, &s(&["a"])).unwrap();
        assert_eq!(out, "resources:\n  - a\nkind: K\n");
        let out = edit_sequence("resources: ~\n", "resources", &[], None, &s(&["a"])).unwrap();
        assert_eq!(out, "resources:\n  - a\n");
    }

    #[test]
    fn crlf_rejected() {
        let text = BASE.replace('\n', "\r\n");
        let err = edit_sequence(&text, "resources", &[0], None, &[]).unwrap_err();
        assert!(err.to_string().contains("CRLF"), "{err}");
    }

    #[test]
    fn bad_arguments_are_errors() {
        assert!(edit_sequence(BASE, "resources", &[3], None, &[]).is_err());
        assert!(edit_sequence(BASE, "resources", &[1, 1], None, &[]).is_err());
        assert!(edit_sequence(BASE, "resources", &[], Some(4), &s(&["x"])).is_err());
        assert!(edit_sequence(BASE, "kind", &[], None, &s(&["x"])).is_err());
        assert!(edit_sequence("- a\n", "resources", &[], None, &s(&["x"])).is_err());
        assert!(edit_sequence(BASE, "resources", &[], None, &s(&["a: [b"])).is_err());
        assert!(edit_sequence("a: 1\n---\nb: 2\n", "r", &[], None, &s(&["x"])).is_err());
        assert!(edit_sequence("r: [a,\n  b]\n", "r", &[], None, &s(&["x"])).is_err());
    }

    #[test]
    fn block_scalar_with_hash_lines_moves_with_item() {
        let text = "patches:\n  - patch: |-\n      a: 1\n      # inside the scalar\n  # between\n  - path: b.yaml\n";
        let out = edit_sequence(text, "patches", &[0], None, &[]).unwrap();
        assert_eq!(out, "patches:\n  # between\n  - path: b.yaml\n");
    }

    #[test]
    fn multi_line_item_with_nested_lists() {
        let text = "resources:\n    - a\n";
        let item =
            "target:\n  kind: Kustomization\npatch: |-\n  - op: add\n    path: /x\n".to_string();
        let out = edit_sequence(text, "resources", &[], Some(0), &[item]).unwrap();
        assert_eq!(
            out,
            "resources:\n    - target:\n        kind: Kustomization\n      patch: |-\n        - op: add\n          path: /x\n    - a\n"
        );
    }

    #[test]
    fn block_scalar_item_with_blank_line() {
        let item = "patch: |-\n  a\n\n  b".to_string();
        let out = edit_sequence("patches:\n  - x\n", "patches", &[], None, &[item]).unwrap();
        assert_eq!(out, "patches:\n  - x\n  - patch: |-\n      a\n\n      b\n");
        assert_eq!(parse(&out)["patches"][1]["patch"], json!("a\n\nb"));
    }
}
