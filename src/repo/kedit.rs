//! Lossless editing of kustomization.yaml lists, and analysis of SOPS decryption patches.
//!
//! Invariant: an edit keeps every byte outside the edited list items, every comment is kept,
//! and every edit is re-parsed and compared with the intended result before it is returned
//! (a mismatch is an error, never a wrong edit).

use regex::Regex;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// API group of Flux Kustomizations.
const FLUX_GROUP: &str = "kustomize.toolkit.fluxcd.io";
/// Versions of the Flux Kustomization API that a patch target may name.
const FLUX_VERSIONS: &[&str] = &["v1", "v1beta2"];
/// Item indentation used when nothing in the file suggests another.
const DEFAULT_INDENT: usize = 2;

// ---------------------------------------------------------------------------------------------
// Part 1: the lossless sequence editor
// ---------------------------------------------------------------------------------------------

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
) -> Result<String, String> {
    if remove.is_empty() && new_items.is_empty() {
        return Ok(text.to_string());
    }
    if key.is_empty() {
        return Err("edit_sequence: the key is empty".to_string());
    }
    if text.contains('\r') {
        return Err(
            "edit_sequence: the file has Windows (CRLF) or CR line endings; \
                    convert it to LF line endings first"
                .to_string(),
        );
    }

    // What the document means now, and what it must mean after the edit.
    let original = parse_single_doc(text, "edit_sequence: the file")?;
    let map = match original {
        Value::Object(m) => m,
        Value::Null => Map::new(),
        _ => return Err("edit_sequence: the document is not a YAML mapping".to_string()),
    };
    let orig_list: Vec<Value> = match map.get(key) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a.clone(),
        Some(_) => return Err(format!("edit_sequence: `{key}` is not a list")),
    };
    let len = orig_list.len();
    let mut removed = vec![false; len];
    for &r in remove {
        if r >= len {
            return Err(format!(
                "edit_sequence: cannot remove item {r} of `{key}`: the list has {len} items"
            ));
        }
        if removed[r] {
            return Err(format!(
                "edit_sequence: item {r} of `{key}` is listed twice for removal"
            ));
        }
        removed[r] = true;
    }
    let at = insert_at.unwrap_or(len);
    if at > len {
        return Err(format!(
            "edit_sequence: cannot insert before item {at} of `{key}`: the list has {len} items"
        ));
    }
    let mut new_values = Vec::with_capacity(new_items.len());
    for (i, item) in new_items.iter().enumerate() {
        if item.contains('\r') {
            return Err(format!(
                "edit_sequence: new item {i} contains a CR character"
            ));
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

    let got = parse_single_doc(&result, "the edited file")
        .map_err(|e| format!("edit_sequence: refusing the edit of `{key}`: {e}"))?;
    if got != expected {
        return Err(format!(
            "edit_sequence: refusing the edit of `{key}`: the edited file does not parse to the \
             intended value (the file's layout is not one this editor handles)"
        ));
    }
    Ok(result)
}

/// The list after the edit, as values.
fn apply_list_edit<T: Clone>(orig: &[T], removed: &[bool], at: usize, new: &[T]) -> Vec<T> {
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
fn parse_single_doc(text: &str, what: &str) -> Result<Value, String> {
    serde_saphyr::from_str::<Value>(text).map_err(|e| {
        format!(
            "{what} is not valid YAML: {}",
            crate::yaml::brief_error(text, &e)
        )
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
) -> Result<String, String> {
    let (lines, trailing_nl) = split_lines(text);

    let key_lines: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| key_colon_end(l, key).map(|_| i))
        .collect();

    if !map.contains_key(key) {
        if !key_lines.is_empty() {
            return Err(format!(
                "edit_sequence: found a line for `{key}` that the parser does not see as a \
                 top-level key"
            ));
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
        [] => {
            return Err(format!(
                "edit_sequence: cannot locate the line of top-level key `{key}` (it must start \
                 at column 0 as `{key}:`)"
            ))
        }
        _ => {
            return Err(format!(
                "edit_sequence: top-level key `{key}` appears on more than one line"
            ))
        }
    };
    let key_line = lines[k];
    let colon_end = key_colon_end(key_line, key)
        .ok_or_else(|| format!("edit_sequence: cannot read the line of `{key}`"))?;
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
                return Err(format!(
                    "edit_sequence: found {} items under `{key}` but the parser sees {}; the \
                     list's layout is not one this editor handles",
                    items.len(),
                    orig_list.len()
                ));
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
fn key_value(after: &str, key: &str) -> Result<KeyValue, String> {
    let trimmed = after.trim_start();
    if trimmed.is_empty() || trimmed.starts_with('#') {
        return Ok(KeyValue::Block);
    }
    let value_len = if trimmed.starts_with('[') {
        flow_end(trimmed).ok_or_else(|| {
            format!(
                "edit_sequence: `{key}` is a flow sequence spanning several lines (or with \
                 unbalanced brackets); rewrite it as a block sequence first"
            )
        })?
    } else {
        let token = trimmed.split([' ', '\t']).next().unwrap_or("");
        if matches!(token, "~" | "null" | "Null" | "NULL") {
            token.len()
        } else {
            return Err(format!(
                "edit_sequence: the value of `{key}` is not a list this editor can rewrite \
                 (`{trimmed}`)"
            ));
        }
    };
    let tail = &trimmed[value_len..];
    let tail_ok = tail.trim().is_empty()
        || (tail.starts_with([' ', '\t']) && tail.trim_start().starts_with('#'));
    if !tail_ok {
        return Err(format!(
            "edit_sequence: unexpected text after the value of `{key}`: `{tail}`"
        ));
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

// ---------------------------------------------------------------------------------------------
// Part 2: decryption patches
// ---------------------------------------------------------------------------------------------

/// The object a patch may apply to: a Flux Kustomization.
#[derive(Debug, Clone, Copy)]
pub struct FluxRef<'a> {
    pub name: &'a str,
    pub namespace: &'a str,
    pub labels: &'a BTreeMap<String, String>,
    pub annotations: &'a BTreeMap<String, String>,
}

/// One patch entry of a kustomization that sets `spec.decryption` on Flux Kustomizations.
#[derive(Debug, Clone)]
pub struct DecryptionPatch {
    /// "patches", "patchesStrategicMerge" or "patchesJson6902".
    pub field: &'static str,
    /// Position in that list.
    pub index: usize,
    /// What it sets spec.decryption to (for JSON 6902 ops on sub-paths, the object built from
    /// them).
    pub decryption: Value,
    selector: Selector,
}

#[derive(Debug, Clone)]
enum Selector {
    /// An explicit `target`.
    Target(Box<Target>),
    /// A strategic-merge patch without target: the object named by its own header.
    Own {
        group: String,
        kind: String,
        name: String,
        namespace: Option<String>,
    },
}

#[derive(Debug, Clone)]
struct Target {
    group: Option<String>,
    version: Option<String>,
    kind: Option<String>,
    name: Option<(String, Regex)>,
    namespace: Option<(String, Regex)>,
    labels: Option<LabelSelector>,
    annotations: Option<LabelSelector>,
}

#[derive(Debug, Clone)]
struct LabelSelector(Vec<Requirement>);

#[derive(Debug, Clone)]
enum Requirement {
    Eq(String, String),
    NotEq(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

impl DecryptionPatch {
    /// Whether this patch applies to the given Flux Kustomization (group kustomize.toolkit.fluxcd.io).
    pub fn covers(&self, obj: &FluxRef) -> bool {
        match &self.selector {
            Selector::Own {
                group,
                kind,
                name,
                namespace,
            } => {
                group == FLUX_GROUP
                    && kind == "Kustomization"
                    && name == obj.name
                    && match namespace {
                        Some(ns) => ns == obj.namespace,
                        None => true,
                    }
            }
            Selector::Target(t) => t.matches(obj),
        }
    }

    /// Whether it selects exactly one object by a literal name (no regex metacharacters, no
    /// selector), and that name.
    pub fn literal_name(&self) -> Option<&str> {
        match &self.selector {
            Selector::Own { name, .. } => Some(name),
            Selector::Target(t) => {
                if t.labels.is_some() || t.annotations.is_some() {
                    return None;
                }
                if let Some((ns, _)) = &t.namespace {
                    if !is_literal(ns) {
                        return None;
                    }
                }
                match &t.name {
                    Some((name, _)) if is_literal(name) => Some(name),
                    _ => None,
                }
            }
        }
    }
}

fn is_literal(s: &str) -> bool {
    !s.is_empty() && !s.chars().any(|c| "\\.+*?()|[]{}^$".contains(c))
}

impl Target {
    fn matches(&self, obj: &FluxRef) -> bool {
        if let Some(g) = &self.group {
            if g != FLUX_GROUP {
                return false;
            }
        }
        if let Some(v) = &self.version {
            if !FLUX_VERSIONS.contains(&v.as_str()) {
                return false;
            }
        }
        if let Some(k) = &self.kind {
            if k != "Kustomization" {
                return false;
            }
        }
        if let Some((_, re)) = &self.name {
            if !re.is_match(obj.name) {
                return false;
            }
        }
        if let Some((_, re)) = &self.namespace {
            if !re.is_match(obj.namespace) {
                return false;
            }
        }
        if let Some(sel) = &self.labels {
            if !sel.matches(obj.labels) {
                return false;
            }
        }
        if let Some(sel) = &self.annotations {
            if !sel.matches(obj.annotations) {
                return false;
            }
        }
        true
    }
}

/// Any object a kustomize patch target may select (the cutover builder applies patches to
/// every kind, not only Flux Kustomizations).
#[derive(Debug, Clone, Copy)]
pub struct ObjectRef<'a> {
    /// API group; empty for the core group.
    pub group: &'a str,
    pub version: &'a str,
    pub kind: &'a str,
    pub name: &'a str,
    pub namespace: &'a str,
    pub labels: &'a BTreeMap<String, String>,
    pub annotations: &'a BTreeMap<String, String>,
}

/// A kustomize patch `target`, parsed once: literal or regular-expression names and
/// namespaces, label and annotation selectors, as kustomize reads them.
#[derive(Debug, Clone)]
pub struct PatchTarget(Target);

impl PatchTarget {
    pub fn parse(v: &Value, what: &str) -> Result<PatchTarget, String> {
        parse_target(v, what).map(PatchTarget)
    }

    /// Whether the target selects `obj` (every field given must match).
    pub fn matches(&self, obj: &ObjectRef) -> bool {
        let t = &self.0;
        let eq = |want: &Option<String>, have: &str| want.as_ref().is_none_or(|w| w == have);
        eq(&t.group, obj.group)
            && eq(&t.version, obj.version)
            && eq(&t.kind, obj.kind)
            && t.name.as_ref().is_none_or(|(_, re)| re.is_match(obj.name))
            && t.namespace
                .as_ref()
                .is_none_or(|(_, re)| re.is_match(obj.namespace))
            && t.labels.as_ref().is_none_or(|s| s.matches(obj.labels))
            && t.annotations
                .as_ref()
                .is_none_or(|s| s.matches(obj.annotations))
    }
}

impl LabelSelector {
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|r| match r {
            Requirement::Eq(k, v) => labels.get(k) == Some(v),
            Requirement::NotEq(k, v) => labels.get(k) != Some(v),
            Requirement::In(k, vs) => labels.get(k).is_some_and(|v| vs.contains(v)),
            Requirement::NotIn(k, vs) => !labels.get(k).is_some_and(|v| vs.contains(v)),
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::NotExists(k) => !labels.contains_key(k),
        })
    }
}

/// Parses a Kubernetes label selector (`k=v`, `k==v`, `k!=v`, `k`, `!k`, `k in (a,b)`,
/// `k notin (a,b)`, comma = AND).
fn parse_selector(s: &str, what: &str) -> Result<LabelSelector, String> {
    let bad = |why: &str| format!("{what}: invalid selector `{s}`: {why}");
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.checked_sub(1).ok_or_else(|| bad("unbalanced `)`"))?,
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(bad("unbalanced `(`"));
    }
    parts.push(&s[start..]);
    if s.trim().is_empty() {
        return Ok(LabelSelector(Vec::new()));
    }
    let mut reqs = Vec::new();
    for part in parts {
        let p = part.trim();
        if p.is_empty() {
            return Err(bad("empty requirement"));
        }
        let req = if let Some(k) = p.strip_prefix('!') {
            Requirement::NotExists(label_key(k.trim(), &bad)?)
        } else if let Some((key, negate, set)) = set_requirement(p) {
            let inner = set
                .strip_prefix('(')
                .and_then(|x| x.strip_suffix(')'))
                .ok_or_else(|| bad("expected a parenthesised value list"))?;
            let mut values = Vec::new();
            for v in inner.split(',') {
                values.push(label_value(v.trim(), &bad)?);
            }
            let key = label_key(key, &bad)?;
            if negate {
                Requirement::NotIn(key, values)
            } else {
                Requirement::In(key, values)
            }
        } else if let Some((k, v)) = p.split_once("!=") {
            Requirement::NotEq(label_key(k.trim(), &bad)?, label_value(v.trim(), &bad)?)
        } else if let Some((k, v)) = p.split_once("==") {
            Requirement::Eq(label_key(k.trim(), &bad)?, label_value(v.trim(), &bad)?)
        } else if let Some((k, v)) = p.split_once('=') {
            Requirement::Eq(label_key(k.trim(), &bad)?, label_value(v.trim(), &bad)?)
        } else {
            Requirement::Exists(label_key(p, &bad)?)
        };
        reqs.push(req);
    }
    Ok(LabelSelector(reqs))
}

/// Splits `key in (a,b)` / `key notin (a,b)` into key, negation and the `(...)` part.
fn set_requirement(p: &str) -> Option<(&str, bool, &str)> {
    let i = p.find([' ', '\t'])?;
    let (key, rest) = (&p[..i], p[i..].trim_start());
    let (negate, set) = if let Some(r) = rest.strip_prefix("notin") {
        (true, r)
    } else {
        (false, rest.strip_prefix("in")?)
    };
    let set = set.trim();
    set.starts_with('(').then_some((key, negate, set))
}

fn label_key(k: &str, bad: &dyn Fn(&str) -> String) -> Result<String, String> {
    if k.is_empty()
        || !k
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
    {
        return Err(bad(&format!("invalid label key `{k}`")));
    }
    Ok(k.to_string())
}

fn label_value(v: &str, bad: &dyn Fn(&str) -> String) -> Result<String, String> {
    if !v
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(bad(&format!("invalid label value `{v}`")));
    }
    Ok(v.to_string())
}

/// A string field of a mapping; absent, null and "" are None.
fn opt_str(m: &Map<String, Value>, field: &str, what: &str) -> Result<Option<String>, String> {
    match m.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!("{what}: `{field}` must be a string, not {other}")),
    }
}

fn anchored(re: &str, what: &str) -> Result<Regex, String> {
    Regex::new(&format!("^(?:{re})$"))
        .map_err(|e| format!("{what}: invalid regular expression `{re}`: {e}"))
}

fn parse_target(v: &Value, what: &str) -> Result<Target, String> {
    let what = format!("{what}.target");
    let m = v
        .as_object()
        .ok_or_else(|| format!("{what}: must be a mapping"))?;
    let name = match opt_str(m, "name", &what)? {
        Some(n) => {
            let re = anchored(&n, &format!("{what}.name"))?;
            Some((n, re))
        }
        None => None,
    };
    let namespace = match opt_str(m, "namespace", &what)? {
        Some(n) => {
            let re = anchored(&n, &format!("{what}.namespace"))?;
            Some((n, re))
        }
        None => None,
    };
    let labels = match opt_str(m, "labelSelector", &what)? {
        Some(s) => Some(parse_selector(&s, &format!("{what}.labelSelector"))?),
        None => None,
    };
    let annotations = match opt_str(m, "annotationSelector", &what)? {
        Some(s) => Some(parse_selector(&s, &format!("{what}.annotationSelector"))?),
        None => None,
    };
    Ok(Target {
        group: opt_str(m, "group", &what)?,
        version: opt_str(m, "version", &what)?,
        kind: opt_str(m, "kind", &what)?,
        name,
        namespace,
        labels,
        annotations,
    })
}

/// The documents of a patch: strategic-merge objects or JSON 6902 op lists.
enum PatchDoc {
    Smp(Value),
    Json(Vec<Value>),
}

fn parse_patch_text(text: &str, what: &str) -> Result<Vec<PatchDoc>, String> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(text).map_err(|e| {
        format!(
            "{what}: the patch is not valid YAML or JSON: {}",
            crate::yaml::brief_error(text, &e)
        )
    })?;
    let mut out = Vec::new();
    for doc in docs {
        match doc {
            Value::Null => {}
            Value::Object(_) => out.push(PatchDoc::Smp(doc)),
            Value::Array(ops) => out.push(PatchDoc::Json(ops)),
            other => {
                return Err(format!(
                    "{what}: a patch must be a mapping or a list of operations, not {other}"
                ))
            }
        }
    }
    Ok(out)
}

/// What a strategic-merge patch sets spec.decryption to, if it sets it.
fn smp_decryption(doc: &Value) -> Option<Value> {
    if doc.get("$patch").and_then(Value::as_str) == Some("delete") {
        return None;
    }
    let spec = doc.get("spec")?;
    if spec.get("$patch").and_then(Value::as_str) == Some("delete") {
        return None;
    }
    match spec.get("decryption")? {
        Value::Object(m) => {
            if m.get("$patch").and_then(Value::as_str) == Some("delete") {
                return None;
            }
            let mut m = m.clone();
            m.shift_remove("$patch");
            Some(Value::Object(m))
        }
        _ => None,
    }
}

fn unescape_pointer(seg: &str) -> String {
    seg.replace("~1", "/").replace("~0", "~")
}

/// Sets `value` at the JSON pointer `sub` (without leading slash) inside `root`, creating
/// mappings on the way.
fn set_at(root: &mut Value, sub: &str, value: Value, what: &str) -> Result<(), String> {
    let segs: Vec<String> = sub.split('/').map(unescape_pointer).collect();
    let mut cur = root;
    for (i, seg) in segs.iter().enumerate() {
        let last = i + 1 == segs.len();
        match cur {
            Value::Object(m) => {
                if last {
                    m.insert(seg.clone(), value);
                    return Ok(());
                }
                cur = m
                    .entry(seg.clone())
                    .or_insert_with(|| Value::Object(Map::new()));
            }
            Value::Array(a) => {
                let idx = if seg == "-" {
                    a.len()
                } else {
                    seg.parse::<usize>()
                        .ok()
                        .filter(|i| *i <= a.len())
                        .ok_or_else(|| format!("{what}: bad list index `{seg}` in path"))?
                };
                if last {
                    if idx == a.len() {
                        a.push(value);
                    } else {
                        a.insert(idx, value);
                    }
                    return Ok(());
                }
                cur = a
                    .get_mut(idx)
                    .ok_or_else(|| format!("{what}: bad list index `{seg}` in path"))?;
            }
            _ => return Err(format!("{what}: path `{sub}` goes through a scalar")),
        }
    }
    Ok(())
}

/// What a list of JSON 6902 operations sets spec.decryption to, if it sets it.
fn json6902_decryption(ops: &[Value], what: &str) -> Result<Option<Value>, String> {
    let mut dec: Option<Value> = None;
    for (i, op) in ops.iter().enumerate() {
        let o = op
            .as_object()
            .ok_or_else(|| format!("{what}: operation {i} is not a mapping"))?;
        let kind = o.get("op").and_then(Value::as_str).unwrap_or("");
        let path = o.get("path").and_then(Value::as_str).unwrap_or("");
        let value = o.get("value").cloned().unwrap_or(Value::Null);
        match kind {
            "add" | "replace" => {
                if path == "/spec/decryption" {
                    dec = value.is_object().then_some(value);
                } else if let Some(sub) = path.strip_prefix("/spec/decryption/") {
                    let mut d = dec.take().unwrap_or_else(|| Value::Object(Map::new()));
                    set_at(&mut d, sub, value, what)?;
                    dec = Some(d);
                } else if path == "/spec" {
                    dec = value.get("decryption").filter(|d| d.is_object()).cloned();
                }
            }
            "remove" => {
                if path == "/spec/decryption" || path == "/spec" {
                    dec = None;
                } else if let Some(sub) = path.strip_prefix("/spec/decryption/") {
                    if let Some(d) = dec.as_mut() {
                        let ptr = format!("/{sub}");
                        if let Some((parent, leaf)) = ptr.rsplit_once('/') {
                            let leaf = unescape_pointer(leaf);
                            match d.pointer_mut(parent) {
                                Some(Value::Object(m)) => {
                                    m.shift_remove(&leaf);
                                }
                                Some(Value::Array(a)) => {
                                    if let Ok(i) = leaf.parse::<usize>() {
                                        if i < a.len() {
                                            a.remove(i);
                                        }
                                    }
                                }
                                _ => {}
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
    Ok(dec)
}

/// Appends the decryption patches among `docs` (one patch entry) to `out`.
fn collect(
    out: &mut Vec<DecryptionPatch>,
    field: &'static str,
    index: usize,
    docs: Vec<PatchDoc>,
    target: Option<&Target>,
    what: &str,
) -> Result<(), String> {
    for doc in docs {
        match doc {
            PatchDoc::Smp(doc) => {
                let Some(decryption) = smp_decryption(&doc) else {
                    continue;
                };
                let selector = match target {
                    Some(t) => Selector::Target(Box::new(t.clone())),
                    None => own_selector(&doc, what)?,
                };
                out.push(DecryptionPatch {
                    field,
                    index,
                    decryption,
                    selector,
                });
            }
            PatchDoc::Json(ops) => {
                let t =
                    target.ok_or_else(|| format!("{what}: a JSON 6902 patch needs a `target`"))?;
                if let Some(decryption) = json6902_decryption(&ops, what)? {
                    out.push(DecryptionPatch {
                        field,
                        index,
                        decryption,
                        selector: Selector::Target(Box::new(t.clone())),
                    });
                }
            }
        }
    }
    Ok(())
}

fn own_selector(doc: &Value, what: &str) -> Result<Selector, String> {
    let m = doc
        .as_object()
        .ok_or_else(|| format!("{what}: patch is not a mapping"))?;
    let api_version = opt_str(m, "apiVersion", what)?
        .ok_or_else(|| format!("{what}: a patch without target needs `apiVersion`"))?;
    let kind = opt_str(m, "kind", what)?
        .ok_or_else(|| format!("{what}: a patch without target needs `kind`"))?;
    let meta = m
        .get("metadata")
        .and_then(Value::as_object)
        .ok_or_else(|| format!("{what}: a patch without target needs `metadata`"))?;
    let name = opt_str(meta, "name", what)?
        .ok_or_else(|| format!("{what}: a patch without target needs `metadata.name`"))?;
    let namespace = opt_str(meta, "namespace", what)?;
    let group = match api_version.split_once('/') {
        Some((g, _)) => g.to_string(),
        None => String::new(),
    };
    Ok(Selector::Own {
        group,
        kind,
        name,
        namespace,
    })
}

fn list_field<'a>(k: &'a Map<String, Value>, field: &str) -> Result<&'a [Value], String> {
    match k.get(field) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(_) => Err(format!("kustomization: `{field}` must be a list")),
    }
}

fn read_patch_file(
    path: &str,
    read: &dyn Fn(&str) -> Option<String>,
    what: &str,
) -> Result<String, String> {
    read(path).ok_or_else(|| format!("{what}: patch file `{path}` not found"))
}

/// `kustomization` is the parsed kustomization.yaml; `read` loads a file named by a `path:` entry,
/// relative to the kustomization's directory (returns None when missing). Returns every patch
/// entry that sets `spec.decryption` on Flux Kustomizations, in file order.
pub fn decryption_patches(
    kustomization: &Value,
    read: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<DecryptionPatch>, String> {
    let k = match kustomization {
        Value::Object(m) => m,
        Value::Null => return Ok(Vec::new()),
        _ => return Err("kustomization: not a mapping".to_string()),
    };
    let mut out = Vec::new();

    for (i, entry) in list_field(k, "patches")?.iter().enumerate() {
        let what = format!("patches[{i}]");
        let m = entry
            .as_object()
            .ok_or_else(|| format!("{what}: must be a mapping with `patch` or `path`"))?;
        let target = match m.get("target") {
            None | Some(Value::Null) => None,
            Some(t) => Some(parse_target(t, &what)?),
        };
        let inline = opt_str(m, "patch", &what)?;
        let path = opt_str(m, "path", &what)?;
        let text = match (inline, path) {
            (Some(p), None) => p,
            (None, Some(path)) => read_patch_file(&path, read, &what)?,
            (Some(_), Some(_)) => {
                return Err(format!("{what}: has both `patch` and `path`"));
            }
            (None, None) => return Err(format!("{what}: has neither `patch` nor `path`")),
        };
        let docs = parse_patch_text(&text, &what)?;
        collect(&mut out, "patches", i, docs, target.as_ref(), &what)?;
    }

    for (i, entry) in list_field(k, "patchesStrategicMerge")?.iter().enumerate() {
        let what = format!("patchesStrategicMerge[{i}]");
        let docs = match entry {
            Value::String(s) => {
                let text = if s.contains('\n') {
                    s.clone()
                } else if let Some(t) = read(s) {
                    t
                } else if s.trim_start().starts_with('{') {
                    s.clone()
                } else {
                    return Err(format!("{what}: patch file `{s}` not found"));
                };
                parse_patch_text(&text, &what)?
            }
            Value::Object(_) => vec![PatchDoc::Smp(entry.clone())],
            _ => return Err(format!("{what}: must be a file path or an inline patch")),
        };
        let docs = docs
            .into_iter()
            .map(|d| match d {
                PatchDoc::Smp(v) => Ok(PatchDoc::Smp(v)),
                PatchDoc::Json(_) => Err(format!(
                    "{what}: a list of operations is not a strategic-merge patch"
                )),
            })
            .collect::<Result<Vec<_>, String>>()?;
        collect(&mut out, "patchesStrategicMerge", i, docs, None, &what)?;
    }

    for (i, entry) in list_field(k, "patchesJson6902")?.iter().enumerate() {
        let what = format!("patchesJson6902[{i}]");
        let m = entry
            .as_object()
            .ok_or_else(|| format!("{what}: must be a mapping with `target`"))?;
        let target = match m.get("target") {
            None | Some(Value::Null) => return Err(format!("{what}: needs a `target`")),
            Some(t) => parse_target(t, &what)?,
        };
        let inline = opt_str(m, "patch", &what)?;
        let path = opt_str(m, "path", &what)?;
        let text = match (inline, path) {
            (Some(p), None) => p,
            (None, Some(path)) => read_patch_file(&path, read, &what)?,
            (Some(_), Some(_)) => return Err(format!("{what}: has both `patch` and `path`")),
            (None, None) => return Err(format!("{what}: has neither `patch` nor `path`")),
        };
        let mut docs = Vec::new();
        for d in parse_patch_text(&text, &what)? {
            match d {
                PatchDoc::Json(ops) => docs.push(PatchDoc::Json(ops)),
                PatchDoc::Smp(_) => {
                    return Err(format!("{what}: the patch is not a list of operations"))
                }
            }
        }
        collect(&mut out, "patchesJson6902", i, docs, Some(&target), &what)?;
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Part 3: the seed's form of a new decryption patch
// ---------------------------------------------------------------------------------------------

/// The inline strategic-merge patch `apply` writes for one wave, as item text for edit_sequence.
pub fn decryption_patch_item(name: &str, namespace: &str, decryption: &Value) -> String {
    let mut metadata = Map::new();
    metadata.insert("name".into(), Value::String(name.into()));
    if !namespace.is_empty() {
        metadata.insert("namespace".into(), Value::String(namespace.into()));
    }
    let patch = serde_json::json!({
        "apiVersion": format!("{FLUX_GROUP}/v1"),
        "kind": "Kustomization",
        "metadata": metadata,
        "spec": {"decryption": decryption},
    });
    let mut s = String::from("patch: |-");
    for line in crate::yaml::emit(&patch).lines() {
        s.push_str("\n  ");
        s.push_str(line);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const BASE: &str = "# Flux objects shared by every cluster. Hand-maintained: keep the order.
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

    const DEV: &str = "# dev cluster: the shared Flux objects plus per-environment patches.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - flux-system
  - ../base
patches:
  # SOPS decryption for the app tier. Load-bearing: without it Flux applies the
  # encrypted Secrets verbatim. The sops-age Secret is created out of band.
  - patch: |-
      apiVersion: kustomize.toolkit.fluxcd.io/v1
      kind: Kustomization
      metadata:
        name: apps
        namespace: flux-system
      spec:
        decryption:
          provider: sops
          secretRef:
            name: sops-age
";

    const DEV_JSON: &str = "# dev cluster
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - flux-system
patches:
  - target:
      kind: Kustomization
      name: apps
    patch: |-
      - op: add
        path: /spec/decryption
        value:
          provider: sops
          secretRef:
            name: sops-age
";

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn parse(text: &str) -> Value {
        serde_saphyr::from_str::<Value>(text).unwrap()
    }

    fn no_files(_: &str) -> Option<String> {
        None
    }

    fn sops() -> Value {
        json!({"provider": "sops", "secretRef": {"name": "sops-age"}})
    }

    fn flux<'a>(name: &'a str, labels: &'a BTreeMap<String, String>) -> FluxRef<'a> {
        FluxRef {
            name,
            namespace: "flux-system",
            labels,
            annotations: labels,
        }
    }

    fn covered(p: &DecryptionPatch, name: &str) -> bool {
        let empty = BTreeMap::new();
        p.covers(&flux(name, &empty))
    }

    // ----- Part 1 -----

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
            "resources:\n# first\n- a.yaml\n- c.yaml\n- d.yaml\nkind: Kustomization\n"
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
        assert!(err.contains("CRLF"), "{err}");
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
    fn dev_replace_patch_with_three_wave_patches() {
        let items: Vec<String> = (0..3)
            .map(|i| decryption_patch_item(&format!("apps-wave-{i}"), "flux-system", &sops()))
            .collect();
        let out = edit_sequence(DEV, "patches", &[0], Some(0), &items).unwrap();
        let head = DEV.split("  - patch: |-").next().unwrap();
        assert!(out.starts_with(head), "comments and header kept:\n{out}");
        assert!(out.contains(
            "out of band.\n  - patch: |-\n      apiVersion: kustomize.toolkit.fluxcd.io/v1\n      kind: Kustomization\n      metadata:\n        name: apps-wave-0\n"
        ));
        assert!(!out.contains("name: apps\n"));
        let v = parse(&out);
        let found = decryption_patches(&v, &no_files).unwrap();
        assert_eq!(found.len(), 3);
        for (i, p) in found.iter().enumerate() {
            assert_eq!(p.field, "patches");
            assert_eq!(p.index, i);
            assert_eq!(p.decryption, sops());
            let name = format!("apps-wave-{i}");
            assert_eq!(p.literal_name(), Some(name.as_str()));
            assert!(covered(p, &name));
            assert!(!covered(p, "apps"));
        }
    }

    #[test]
    fn dev_json6902_patch_removed_and_replaced() {
        let item = decryption_patch_item("apps-wave-0", "flux-system", &sops());
        let out = edit_sequence(DEV_JSON, "patches", &[0], None, &[item]).unwrap();
        assert!(out.starts_with("# dev cluster\napiVersion"));
        assert!(!out.contains("op: add"));
        let v = parse(&out);
        assert_eq!(v["patches"].as_array().unwrap().len(), 1);
        // Appending after a multi-line item keeps the block scalar whole.
        let out = edit_sequence(DEV, "patches", &[], None, &s(&["path: x.yaml"])).unwrap();
        assert_eq!(out, format!("{DEV}  - path: x.yaml\n"));
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

    /// Truncated and line-dropped variants of the fixtures: never a panic, and every Ok edit
    /// parses to the intended list.
    #[test]
    fn never_panics_on_mangled_input() {
        let item = decryption_patch_item("apps-wave-0", "flux-system", &sops());
        let extra = [
            "resources: [a, \"b]\n",
            "resources: &x\n  - a\nother: *x\n",
            "---\nresources:\n- a\n...\n",
            "resources:\n  - a\n    - b\n  -\n  - - c\n",
            "r: |\n  resources:\n  - x\n",
        ];
        let mut texts: Vec<String> = Vec::new();
        for f in [BASE, DEV, DEV_JSON].iter().chain(extra.iter()) {
            for (i, _) in f.char_indices() {
                texts.push(f[..i].to_string());
            }
            let lines: Vec<&str> = f.lines().collect();
            for skip in 0..lines.len() {
                let v: Vec<&str> = lines
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != skip)
                    .map(|(_, l)| *l)
                    .collect();
                texts.push(v.join("\n") + "\n");
            }
        }
        let ops: Vec<(Vec<usize>, Option<usize>, Vec<String>)> = vec![
            (vec![0], None, s(&["x"])),
            (vec![], Some(0), vec![item.clone()]),
            (vec![1], Some(1), vec![]),
        ];
        let mut ok = 0;
        for t in &texts {
            for key in ["resources", "patches"] {
                for (rm, at, new) in &ops {
                    if let Ok(out) = edit_sequence(t, key, rm, *at, new) {
                        ok += 1;
                        let before = parse(t);
                        let after = parse(&out);
                        let old = before.get(key).and_then(Value::as_array).cloned();
                        let old = old.unwrap_or_default();
                        let removed: Vec<bool> = (0..old.len()).map(|i| rm.contains(&i)).collect();
                        let new_v: Vec<Value> = new.iter().map(|n| parse(n)).collect();
                        let want = apply_list_edit(&old, &removed, at.unwrap_or(old.len()), &new_v);
                        assert_eq!(after[key], Value::Array(want), "{t:?} -> {out:?}");
                    }
                }
            }
            if let Ok(v) = serde_saphyr::from_str::<Value>(t) {
                let _ = decryption_patches(&v, &|_: &str| Some(t.clone()));
            }
        }
        assert!(ok > 100, "only {ok} edits succeeded");
    }

    // ----- Part 2 -----

    #[test]
    fn inline_smp_by_name() {
        let found = decryption_patches(&parse(DEV), &no_files).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].field, "patches");
        assert_eq!(found[0].index, 0);
        assert_eq!(found[0].decryption, sops());
        assert_eq!(found[0].literal_name(), Some("apps"));
        assert!(covered(&found[0], "apps"));
        assert!(!covered(&found[0], "apps-wave-0"));
        let empty = BTreeMap::new();
        let other_ns = FluxRef {
            namespace: "other",
            ..flux("apps", &empty)
        };
        assert!(!found[0].covers(&other_ns));
    }

    #[test]
    fn smp_file_via_path() {
        let k = parse("patches:\n  - path: decrypt.yaml\n  - path: other.yaml\n");
        let read = |p: &str| {
            match p {
            "decrypt.yaml" => Some(
                "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: infra\nspec:\n  decryption:\n    provider: sops\n"
                    .to_string(),
            ),
            "other.yaml" => Some(
                "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: infra\nspec:\n  interval: 5m\n"
                    .to_string(),
            ),
            _ => None,
        }
        };
        let found = decryption_patches(&k, &read).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].index, 0);
        assert_eq!(found[0].decryption, json!({"provider": "sops"}));
        assert!(covered(&found[0], "infra"));
        let missing = parse("patches:\n  - path: nope.yaml\n");
        assert!(decryption_patches(&missing, &no_files)
            .unwrap_err()
            .contains("nope.yaml"));
    }

    #[test]
    fn json6902_inline_with_target_by_name() {
        let found = decryption_patches(&parse(DEV_JSON), &no_files).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].decryption, sops());
        assert_eq!(found[0].literal_name(), Some("apps"));
        assert!(covered(&found[0], "apps"));
        assert!(!covered(&found[0], "apps-wave-1"));
    }

    #[test]
    fn json6902_json_text_and_sub_paths() {
        let k = parse(
            r#"patches:
  - target: {kind: Kustomization, name: apps}
    patch: '[{"op": "add", "path": "/spec/decryption/provider", "value": "sops"}, {"op": "replace", "path": "/spec/decryption/secretRef", "value": {"name": "sops-age"}}]'
"#,
        );
        let found = decryption_patches(&k, &no_files).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].decryption, sops());
        let no_target = parse("patches:\n  - patch: '[{\"op\": \"add\", \"path\": \"/spec/decryption\", \"value\": {}}]'\n");
        assert!(decryption_patches(&no_target, &no_files).is_err());
    }

    #[test]
    fn json6902_regex_target() {
        let k = parse("patches:\n  - target:\n      group: kustomize.toolkit.fluxcd.io\n      version: v1\n      kind: Kustomization\n      name: apps-wave-.*\n    patch: |\n      - op: add\n        path: /spec/decryption\n        value: {provider: sops}\n");
        let found = decryption_patches(&k, &no_files).unwrap();
        assert_eq!(found.len(), 1);
        assert!(covered(&found[0], "apps-wave-3"));
        assert!(!covered(&found[0], "apps"));
        assert!(!covered(&found[0], "xapps-wave-3"));
        assert_eq!(found[0].literal_name(), None);
    }

    #[test]
    fn target_kind_only_covers_all_and_wrong_group_none() {
        let k = parse("patches:\n  - target: {kind: Kustomization}\n    patch: |\n      - op: add\n        path: /spec/decryption\n        value: {provider: sops}\n  - target: {group: kustomize.config.k8s.io, kind: Kustomization}\n    patch: |\n      - op: add\n        path: /spec/decryption\n        value: {provider: sops}\n  - target: {kind: HelmRelease}\n    patch: |\n      - op: add\n        path: /spec/decryption\n        value: {provider: sops}\n");
        let found = decryption_patches(&k, &no_files).unwrap();
        assert_eq!(found.len(), 3);
        assert!(covered(&found[0], "apps") && covered(&found[0], "anything"));
        assert_eq!(found[0].literal_name(), None);
        assert!(!covered(&found[1], "apps"));
        assert!(!covered(&found[2], "apps"));
    }

    #[test]
    fn label_selector_targets() {
        let k = parse("patches:\n  - target:\n      kind: Kustomization\n      labelSelector: \"tier=apps,wave in (0, 1),!skip\"\n    patch: |\n      apiVersion: kustomize.toolkit.fluxcd.io/v1\n      kind: Kustomization\n      metadata:\n        name: ignored\n      spec:\n        decryption:\n          provider: sops\n");
        let found = decryption_patches(&k, &no_files).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].literal_name(), None);
        let l = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        };
        let yes = l(&[("tier", "apps"), ("wave", "1")]);
        let wrong_wave = l(&[("tier", "apps"), ("wave", "2")]);
        let skipped = l(&[("tier", "apps"), ("wave", "0"), ("skip", "")]);
        assert!(found[0].covers(&flux("x", &yes)));
        assert!(!found[0].covers(&flux("x", &wrong_wave)));
        assert!(!found[0].covers(&flux("x", &skipped)));
    }

    #[test]
    fn selector_forms_and_errors() {
        let l: BTreeMap<String, String> = [("a", "1"), ("b", "2")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let ok = |sel: &str| parse_selector(sel, "t").unwrap().matches(&l);
        assert!(ok("a==1"));
        assert!(ok("a=1, b"));
        assert!(ok("a!=2"));
        assert!(ok("c!=2"));
        assert!(ok("b notin (3,4)"));
        assert!(ok("c notin (3)"));
        assert!(!ok("c in (3)"));
        assert!(!ok("!a"));
        assert!(ok(""));
        for bad in ["a in 1", "a=1,,b", "a in (1", "=1", "a b"] {
            assert!(parse_selector(bad, "t").is_err(), "{bad}");
        }
        let k = parse("patches:\n  - target: {kind: Kustomization, labelSelector: \"a in (1\"}\n    patch: '[]'\n");
        let err = decryption_patches(&k, &no_files).unwrap_err();
        assert!(
            err.contains("labelSelector") && err.contains("a in (1"),
            "{err}"
        );
    }

    #[test]
    fn invalid_regex_is_error() {
        let k = parse(
            "patches:\n  - target: {kind: Kustomization, name: \"apps-(\"}\n    patch: '[]'\n",
        );
        let err = decryption_patches(&k, &no_files).unwrap_err();
        assert!(err.contains("apps-("), "{err}");
    }

    #[test]
    fn legacy_patches_strategic_merge() {
        let k = parse("patchesStrategicMerge:\n  - decrypt.yaml\n  - |-\n    apiVersion: kustomize.toolkit.fluxcd.io/v1beta2\n    kind: Kustomization\n    metadata:\n      name: infra\n    spec:\n      decryption:\n        provider: sops\n");
        let read = |p: &str| {
            (p == "decrypt.yaml").then(|| {
                "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  decryption:\n    provider: sops\n".to_string()
            })
        };
        let found = decryption_patches(&k, &read).unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].field, "patchesStrategicMerge");
        assert_eq!((found[0].index, found[1].index), (0, 1));
        assert!(covered(&found[0], "apps"));
        assert!(covered(&found[1], "infra"));
        assert!(!covered(&found[1], "apps"));
    }

    #[test]
    fn legacy_patches_json6902() {
        let k = parse("patchesJson6902:\n  - target:\n      group: kustomize.toolkit.fluxcd.io\n      version: v1beta2\n      kind: Kustomization\n      name: apps\n    path: ops.yaml\n");
        let read = |p: &str| {
            (p == "ops.yaml").then(|| {
                "- op: replace\n  path: /spec/decryption\n  value:\n    provider: sops\n"
                    .to_string()
            })
        };
        let found = decryption_patches(&k, &read).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].field, "patchesJson6902");
        assert_eq!(found[0].decryption, json!({"provider": "sops"}));
        assert!(covered(&found[0], "apps"));
    }

    #[test]
    fn other_patches_and_deletes_not_returned() {
        let k = parse("patches:\n  - patch: |-\n      apiVersion: kustomize.toolkit.fluxcd.io/v1\n      kind: Kustomization\n      metadata:\n        name: apps\n      spec:\n        interval: 1m\n  - patch: |-\n      apiVersion: kustomize.toolkit.fluxcd.io/v1\n      kind: Kustomization\n      metadata:\n        name: apps\n      spec:\n        decryption:\n          $patch: delete\n  - target: {kind: Kustomization}\n    patch: |\n      - op: remove\n        path: /spec/decryption\n  - target: {kind: Kustomization}\n    patch: |\n      - op: add\n        path: /spec/interval\n        value: 1m\n");
        assert!(decryption_patches(&k, &no_files).unwrap().is_empty());
    }

    #[test]
    fn smp_from_other_group_does_not_cover() {
        let k = parse("patches:\n  - patch: |-\n      apiVersion: apps/v1\n      kind: Kustomization\n      metadata:\n        name: apps\n      spec:\n        decryption:\n          provider: sops\n");
        let found = decryption_patches(&k, &no_files).unwrap();
        assert_eq!(found.len(), 1);
        assert!(!covered(&found[0], "apps"));
    }

    // ----- Part 3 -----

    #[test]
    fn decryption_patch_item_exact() {
        let item = decryption_patch_item("apps-wave-0", "flux-system", &sops());
        assert_eq!(
            item,
            "patch: |-\n  apiVersion: kustomize.toolkit.fluxcd.io/v1\n  kind: Kustomization\n  metadata:\n    name: apps-wave-0\n    namespace: flux-system\n  spec:\n    decryption:\n      provider: sops\n      secretRef:\n        name: sops-age"
        );
    }

    #[test]
    fn decryption_patch_item_round_trips() {
        let dec = json!({
            "provider": "sops",
            "secretRef": {"name": "sops-age"},
            "weird": ["yes", "y", "1", "a: b", "#x", "", "multi\nline", {"k": true, "n": null}],
            "empty": {},
            "nested": [[1, 2]],
        });
        let item = decryption_patch_item("apps-wave-0", "flux-system", &dec);
        let out = edit_sequence("patches: []\n", "patches", &[], None, &[item]).unwrap();
        let v = parse(&out);
        let inner = parse(v["patches"][0]["patch"].as_str().unwrap());
        assert_eq!(inner["spec"]["decryption"], dec);
        let found = decryption_patches(&v, &no_files).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].decryption, dec);
        assert!(covered(&found[0], "apps-wave-0"));
        assert!(!covered(&found[0], "apps-wave-1"));
        assert!(!covered(&found[0], "apps"));
    }
}
