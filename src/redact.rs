//! Secret values never reach fluxwave's output. An error may quote the file it points into
//! (miette's snippet, serde-saphyr's message), so before any text of a file is shown, the
//! places that hold secrets are masked byte for byte with `*` (offsets, spans and line breaks
//! stay valid).
//!
//! Masking reads the structure where the text parses as YAML (JSON is YAML): every value
//! under `data` / `stringData` of any mapping whose `kind` is `Secret` (a document, a `List`
//! item, an object nested anywhere), the whole `sops:` block, every SOPS `ENC[...]` value, the
//! `value` of every environment variable (an `env` list, in a catalog or a manifest), and
//! every string that itself holds a Secret (the `kubectl.kubernetes.io/last-applied-
//! configuration` annotation, an inline patch). Quoting, tags, a byte order mark, indentation
//! and `kind : Secret` are the parser's business, so none of them hides a Secret.
//!
//! Where a document does not parse, or a Secret may be in it but cannot be located (an alias,
//! a merge key, a `kind` that is not a plain string), masking is conservative: every value of
//! the document is masked, keys and structure kept. Documents are read one at a time (split
//! at `---` / `...` lines, as YAML splits them), so a broken document spoils only itself.

use std::borrow::Cow;

use serde_saphyr::granit_parser::{Event, Parser};

mod forms;

use forms::printed_forms;
pub use forms::Secrets;

/// Byte ranges of `text` that hold secret values, sorted, on character boundaries.
pub fn ranges(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (start, end) in documents(text) {
        document(&text[start..end], start, &mut out);
    }
    out.sort_unstable();
    out
}

/// The byte ranges of the YAML documents of `text`: each starts at the top or at a marker
/// line (`---` or `...` followed by a blank or the line end, as the YAML grammar has it: a
/// marker at the start of a line ends any scalar, so no value spans two of these).
fn documents(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        if at > start && is_document_marker(line) {
            out.push((start, at));
            start = at;
        }
        at += line.len();
    }
    if at > start || out.is_empty() {
        out.push((start, at));
    }
    out
}

fn is_document_marker(line: &str) -> bool {
    crate::plain::document_marker(line).is_some()
}

/// The masked ranges of one document, `doc`, found at byte `offset` of its file.
fn document(doc: &str, offset: usize, out: &mut Vec<(usize, usize)>) {
    match structure(doc, 0) {
        Some(found) => out.extend(found.into_iter().map(|(s, l)| (s + offset, l))),
        None if suspicious(doc) => every_value(doc, offset, out),
        None => textual(doc, offset, out),
    }
}

/// Whether a document that cannot be read may hold a secret: the word `Secret` (a kind; not
/// `secretRef` or `SecretStore`), a `sops` or `env` key, `ENC[`, the last-applied annotation,
/// or escapes that could spell any of them.
fn suspicious(doc: &str) -> bool {
    let word = |w: &str| {
        doc.match_indices(w).any(|(i, _)| {
            let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
            !alnum(doc[..i].chars().next_back()) && !alnum(doc[i + w.len()..].chars().next())
        })
    };
    let key = |k: &str| {
        doc.match_indices(k).any(|(i, _)| {
            doc[i + k.len()..]
                .trim_start_matches(['"', '\'', ' ', '\t'])
                .starts_with(':')
        })
    };
    word("Secret")
        || key("sops")
        || key("env")
        || [
            "ENC[",
            "last-applied",
            "\\x",
            "\\u",
            "\\U",
            "\\\n",
            "\\\r\n",
        ]
        .iter()
        .any(|w| doc.contains(w))
}

/// A node of a parsed document, with the byte span of every scalar.
#[derive(Debug, PartialEq)]
enum Node<'a> {
    Scalar(Cow<'a, str>, (usize, usize)),
    Seq(Vec<Node<'a>>),
    Map(Vec<(Node<'a>, Node<'a>)>),
    /// An alias (`*a`) or a merge key's target: what it stands for is elsewhere.
    Alias((usize, usize)),
}

/// Strings nested in strings (an annotation that holds a Secret that holds...) are read this
/// deep; deeper ones are masked whole.
const MAX_NESTING: usize = 3;

/// The secret ranges of a document read as YAML, relative to `doc`; `None` when it does not
/// parse, or when a Secret may be in it but cannot be located.
fn structure(doc: &str, depth: usize) -> Option<Vec<(usize, usize)>> {
    // The plain reader reads most manifests at a fraction of the parser's cost; what it
    // declines (anchors, tags, escapes, block scalars...) the parser reads. Both give the
    // same tree and spans where the plain reader reads (`plain_agrees`, which the
    // differential tests run).
    let (roots, anchors) = match plain_tree(doc) {
        Some(roots) => (roots, false),
        None => parsed_tree(doc)?,
    };
    let mut found = Found {
        ranges: Vec::new(),
        unsure: false,
        depth,
    };
    for root in &roots {
        found.walk(root);
    }
    // An anchor or alias in a document that names a Secret: the value may be written where
    // it is anchored, outside the Secret's data.
    if found.unsure || (anchors && doc.to_ascii_lowercase().contains("secret")) {
        return None;
    }
    Some(found.ranges)
}

/// The documents of `doc` as the plain-subset reader reads them, or `None` where it declines
/// (a block scalar too: its tree keeps no span).
fn plain_tree(doc: &str) -> Option<Vec<Node<'_>>> {
    use crate::plain::Node as Plain;
    let base = doc.as_ptr() as usize;
    fn tree<'a>(node: &Plain<'a>, base: usize) -> Option<Node<'a>> {
        Some(match node {
            Plain::Scalar { text, span, .. } => Node::Scalar(Cow::Borrowed(text), *span),
            Plain::Block(_) => return None,
            Plain::Seq(items) => {
                Node::Seq(items.iter().map(|n| tree(n, base)).collect::<Option<_>>()?)
            }
            Plain::Map(entries) => Node::Map(
                entries
                    .iter()
                    .map(|(k, v)| {
                        let key =
                            Node::Scalar(Cow::Borrowed(k), (k.as_ptr() as usize - base, k.len()));
                        Some((key, tree(v, base)?))
                    })
                    .collect::<Option<_>>()?,
            ),
        })
    }
    crate::plain::documents(doc)?
        .iter()
        .map(|n| tree(n, base))
        .collect()
}

/// For the differential tests: wherever the plain reader reads a document of `text`, the
/// parser reads the same tree, with the same spans and no anchor (an empty document, which
/// the plain reader leaves out, is the parser's scalar of no bytes, which masks nothing). Returns
/// whether the plain reader read any document.
#[cfg(test)]
pub(crate) fn plain_agrees(text: &str) -> bool {
    let mut read = false;
    for (start, end) in documents(text) {
        let doc = &text[start..end];
        let Some(fast) = plain_tree(doc) else {
            continue;
        };
        let (mut slow, anchors) = parsed_tree(doc)
            .unwrap_or_else(|| panic!("the plain reader read what the parser refuses:\n{doc}"));
        slow.retain(|n| !matches!(n, Node::Scalar(_, (_, 0))));
        assert!(!anchors, "{doc}");
        assert_eq!(fast, slow, "differs on:\n{doc}");
        read = true;
    }
    read
}

/// The documents of `doc` as the YAML parser reads them, and whether an anchor or alias is
/// in them; `None` when it does not parse.
fn parsed_tree(doc: &str) -> Option<(Vec<Node<'_>>, bool)> {
    let mut parser = Parser::new_from_str(doc);
    // The collections being built, each with its pending mapping key.
    let mut stack: Vec<(Node, Option<Node>)> = Vec::new();
    let mut roots: Vec<Node> = Vec::new();
    let mut anchors = false;
    let span = |s: &serde_saphyr::granit_parser::Span| -> Option<(usize, usize)> {
        let (a, b) = (s.start.byte_offset()?, s.end.byte_offset()?);
        Some((a, b.saturating_sub(a)))
    };
    while let Some(event) = parser.next_event() {
        let (event, at) = event.ok()?;
        let node = match event {
            Event::Scalar(value, _, anchor, _) => {
                anchors |= anchor != 0;
                Node::Scalar(value, span(&at)?)
            }
            Event::Alias(_) | Event::UnresolvedAlias(_) => {
                anchors = true;
                Node::Alias(span(&at)?)
            }
            Event::SequenceStart(_, anchor, _) => {
                anchors |= anchor != 0;
                stack.push((Node::Seq(Vec::new()), None));
                continue;
            }
            Event::MappingStart(_, anchor, _) => {
                anchors |= anchor != 0;
                stack.push((Node::Map(Vec::new()), None));
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => stack.pop()?.0,
            _ => continue,
        };
        match stack.last_mut() {
            Some((Node::Seq(items), _)) => items.push(node),
            Some((Node::Map(entries), pending)) => match pending.take() {
                Some(k) => entries.push((k, node)),
                None => *pending = Some(node),
            },
            _ => roots.push(node),
        }
    }
    Some((roots, anchors))
}

struct Found {
    ranges: Vec<(usize, usize)>,
    /// A Secret may be here but could not be located.
    unsure: bool,
    depth: usize,
}

impl Found {
    fn walk(&mut self, node: &Node) {
        match node {
            Node::Scalar(value, span) => self.scalar(value, *span),
            Node::Alias(_) => {}
            Node::Seq(items) => items.iter().for_each(|n| self.walk(n)),
            Node::Map(entries) => {
                let mut secret = false;
                for (k, v) in entries {
                    if key(k) == Some("kind") {
                        match v {
                            Node::Scalar(kind, _) => secret |= kind.eq_ignore_ascii_case("secret"),
                            _ => self.unsure = true,
                        }
                    }
                    if key(k) == Some("<<") {
                        self.unsure = true;
                    }
                }
                for (k, v) in entries {
                    self.walk(k);
                    match key(k) {
                        Some(field @ ("data" | "stringData")) if secret => {
                            let encoded = field == "data";
                            match v {
                                Node::Map(values) => {
                                    for (k, v) in values {
                                        self.walk(k);
                                        self.all(v);
                                        if let Node::Scalar(value, _) = v {
                                            remember(value, encoded);
                                        }
                                    }
                                }
                                other => self.all(other),
                            }
                        }
                        Some("sops") => self.all(v),
                        Some("env") => match v {
                            Node::Seq(vars) => {
                                for var in vars {
                                    match var {
                                        Node::Map(fields) => {
                                            for (k, v) in fields {
                                                if key(k) == Some("value") {
                                                    self.all(v);
                                                } else {
                                                    self.walk(k);
                                                    self.walk(v);
                                                }
                                            }
                                        }
                                        other => self.walk(other),
                                    }
                                }
                            }
                            other => self.walk(other),
                        },
                        _ => self.walk(v),
                    }
                }
            }
        }
    }

    /// A string outside any secret place: a SOPS value, or one that holds a Secret itself.
    fn scalar(&mut self, value: &str, span: (usize, usize)) {
        if value.contains("ENC[") {
            self.ranges.push(span);
            return;
        }
        if value.len() > 4 && value.to_ascii_lowercase().contains("secret") && value.contains(':') {
            let nested = if self.depth < MAX_NESTING {
                structure(value, self.depth + 1)
            } else {
                None
            };
            if nested.is_none_or(|r| !r.is_empty()) {
                self.ranges.push(span);
            }
        }
    }

    /// Every scalar of a node: it is a secret value.
    fn all(&mut self, node: &Node) {
        match node {
            Node::Scalar(_, span) | Node::Alias(span) => self.ranges.push(*span),
            Node::Seq(items) => items.iter().for_each(|n| self.all(n)),
            Node::Map(entries) => {
                for (k, v) in entries {
                    self.all(k);
                    self.all(v);
                }
            }
        }
    }
}

fn key<'a>(node: &'a Node<'_>) -> Option<&'a str> {
    match node {
        Node::Scalar(k, _) => Some(k),
        _ => None,
    }
}

/// Every value of a document that does not parse, line by line: what follows a key's colon,
/// a list item, a line that is neither (a block scalar's, a flow collection's).
fn every_value(doc: &str, offset: usize, out: &mut Vec<(usize, usize)>) {
    let mut at = offset;
    for line in doc.split_inclusive('\n') {
        let text = content(line);
        let trimmed = text.trim_start_matches([' ', '\t', '-', '\u{feff}']);
        let lead = text.len() - trimmed.len();
        if !(trimmed.is_empty() || trimmed.starts_with('#') || is_document_marker(line)) {
            let from = match key_colon(trimmed) {
                Some(colon) => lead + colon + 1,
                None => lead,
            };
            mask(at + from, at + text.len(), out);
        }
        at += line.len();
    }
}

/// The colon that ends a key at the start of `s` (`key:` followed by a blank or the end).
fn key_colon(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    s.match_indices(':')
        .map(|(i, _)| i)
        .find(|&i| bytes.get(i + 1).is_none_or(|b| matches!(b, b' ' | b'\t')))
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

/// The masked ranges of a document that does not parse and names no Secret, read as text:
/// the `sops:` block, `ENC[...]` values, and the values of `env` lists (to the end of the
/// line, and the lines of a block scalar).
fn textual(doc: &str, offset: usize, out: &mut Vec<(usize, usize)>) {
    // The block being masked: the indentation of its key, and whether it is the env list.
    let mut block: Option<(usize, bool)> = None;
    // A block scalar `value: |` of an env list: the indentation of its key.
    let mut scalar: Option<usize> = None;
    let mut at = offset;
    for line in doc.split_inclusive('\n') {
        let text = content(line);
        let trimmed = text.trim_start();
        let ind = indent(text);
        let blank = trimmed.is_empty() || trimmed.starts_with('#');
        if let Some(key_indent) = scalar {
            if blank || text.len() - trimmed.len() > key_indent {
                mask(at, at + text.len(), out);
                at += line.len();
                continue;
            }
            scalar = None;
        }
        if let Some((key_indent, env)) = block {
            if blank || ind > key_indent || (env && ind == key_indent && trimmed.starts_with('-')) {
                if !blank {
                    if env {
                        scalar = scalar.or(env_values(text, at, out));
                    } else {
                        mask(at + (text.len() - trimmed.len()), at + text.len(), out);
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
            .trim()
            .trim_matches(['"', '\'']);
        let after_key = trimmed.contains(':');
        if after_key && key == "sops" {
            block = Some((ind, false));
            if let Some(colon) = text.find(':') {
                mask(at + colon + 1, at + text.len(), out);
            }
        } else if after_key && key == "env" {
            block = Some((ind, true));
            scalar = env_values(text, at, out);
        }
        enc(text, at, out);
        at += line.len();
    }
}

fn mask(from: usize, to: usize, out: &mut Vec<(usize, usize)>) {
    if to > from {
        out.push((from, to - from));
    }
}

/// The text after every `value:` of an environment variable, to the end of the line (a
/// quoted value may hold a comma or a brace). `Some(indent)` when the value is a block
/// scalar whose lines follow, the indentation of its line.
fn env_values(text: &str, at: usize, out: &mut Vec<(usize, usize)>) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = text[from..].find("value:") {
        let start = from + i + "value:".len();
        let before = text[..from + i].chars().last();
        if before.is_some_and(|c| c.is_alphanumeric()) {
            from = start;
            continue;
        }
        mask(at + start, at + text.len(), out);
        let rest = strip_comment(&text[start..]).trim();
        if rest.starts_with(['|', '>']) {
            return Some(text.len() - text.trim_start().len());
        }
        return None;
    }
    None
}

/// A SOPS-encrypted value: from `ENC[` to the end of the line.
fn enc(text: &str, at: usize, out: &mut Vec<(usize, usize)>) {
    if let Some(i) = text.find("ENC[") {
        mask(at + i, at + text.len(), out);
    }
}

/// Every byte but line breaks becomes `*` (a masked block scalar keeps its lines).
fn star<'a>(bytes: impl Iterator<Item = &'a mut u8>) {
    for b in bytes {
        if !matches!(*b, b'\n' | b'\r') {
            *b = b'*';
        }
    }
}

/// The plaintext Secret values this run has read, in every form fluxwave's own output gives
/// them (`printed_forms`; of the decoded value, for the values of `data`): the last writer
/// masks them wherever they appear (`cli::terminal`). Forms shorter than `MIN_KNOWN_LEN` are left to the
/// masking of the files (they would mask common words), and so are forms that hold a line
/// break (the writer masks a line at a time: their lines are forms of their own).
static KNOWN: std::sync::Mutex<Known> = std::sync::Mutex::new(Known {
    values: Vec::new(),
    seen: None,
    read: None,
    masker: None,
});

/// At most this many values are remembered (a repository with more plaintext Secret values
/// than this has its files' masking alone beyond them). A value gives two to four forms, and
/// one more for each line of a value of several lines.
const MAX_KNOWN: usize = 100_000;

/// A form shorter than this is not searched for in the output.
pub const MIN_KNOWN_LEN: usize = 8;

struct Known {
    values: Vec<String>,
    seen: Option<std::collections::HashSet<String>>,
    /// The values remembered, as given (whether `encoded`, and the value).
    read: Option<std::collections::HashSet<(bool, String)>>,
    /// All the forms at once; `None` until first needed after a change.
    masker: Option<forms::Masker>,
}

/// Remembers a Secret's value (`encoded`: a value of `data`, base64), so that no later output
/// of this run shows it, in any of its forms.
pub fn remember(value: &str, encoded: bool) {
    // A SOPS-encrypted value is ciphertext, masked wherever a file is shown (`enc`): searching
    // every output for each of them would cost a pattern per value of every encrypted Secret.
    if value.trim_start().starts_with("ENC[") {
        return;
    }
    {
        let mut known = KNOWN.lock().unwrap_or_else(|p| p.into_inner());
        let read = known.read.get_or_insert_with(Default::default);
        if read.len() >= MAX_KNOWN || !read.insert((encoded, value.to_string())) {
            return;
        }
    }
    // The forms are made outside the lock: the files of a build are read on every core.
    let plain = if encoded {
        crate::base64::decode(value.trim()).and_then(|b| String::from_utf8(b).ok())
    } else {
        Some(value.to_string())
    };
    let as_written = std::iter::once(value.trim().to_string());
    let derived = plain.iter().flat_map(|p| {
        let trimmed = p.trim();
        std::iter::once(trimmed.to_string())
            .chain(printed_forms(p))
            .chain(if trimmed == p {
                Vec::new()
            } else {
                printed_forms(trimmed)
            })
    });
    let found: Vec<String> = as_written
        .chain(derived)
        .filter(|v| v.len() >= MIN_KNOWN_LEN && !v.contains(['\n', '\r']))
        .collect();
    let mut known = KNOWN.lock().unwrap_or_else(|p| p.into_inner());
    for v in found {
        if known
            .seen
            .get_or_insert_with(Default::default)
            .insert(v.clone())
        {
            known.values.push(v);
            known.masker = None;
        }
    }
}

/// Remembers the values of every Secret among `docs` (and among the items of a `List`).
pub fn remember_documents(docs: &[serde_json::Value]) {
    fn walk(doc: &serde_json::Value, depth: usize) {
        let Some(kind) = doc.get("kind").and_then(|k| k.as_str()) else {
            return;
        };
        if kind.eq_ignore_ascii_case("secret") {
            for (field, encoded) in [("data", true), ("stringData", false)] {
                let values = doc.get(field).and_then(|d| d.as_object());
                for v in values.into_iter().flat_map(|m| m.values()) {
                    if let Some(v) = v.as_str() {
                        remember(v, encoded);
                    }
                }
            }
        } else if depth < 2 {
            for item in doc
                .get("items")
                .and_then(|i| i.as_array())
                .into_iter()
                .flatten()
            {
                walk(item, depth + 1);
            }
        }
    }
    for doc in docs {
        walk(doc, 0);
    }
}

/// `text` with every remembered Secret value replaced by `***` (the longest where two
/// overlap).
pub fn mask_known(text: &str) -> std::borrow::Cow<'_, str> {
    let mut known = KNOWN.lock().unwrap_or_else(|p| p.into_inner());
    if known.values.is_empty() {
        return text.into();
    }
    let known = &mut *known;
    // A matcher that cannot be built (beyond its memory limits) shows nothing of the text
    // rather than a secret.
    let masker = known
        .masker
        .get_or_insert_with(|| forms::Masker::new(known.values.iter().cloned(), false));
    match masker.mask(text) {
        Cow::Borrowed(_) => text.into(),
        Cow::Owned(masked) => masked.into(),
    }
}

/// `text` with every byte of `ranges` replaced by `*` (same length, same offsets).
pub fn masked(text: &str, ranges: &[(usize, usize)]) -> String {
    let mut bytes = text.as_bytes().to_vec();
    for &(start, len) in ranges {
        let end = (start + len).min(bytes.len());
        star(bytes.get_mut(start.min(end)..end).into_iter().flatten());
    }
    // Every range starts and ends on a character boundary, so this never fails; if it did,
    // nothing of the text is shown rather than a secret.
    String::from_utf8(bytes).unwrap_or_default()
}

/// The whole lines `text[from..to]` (`from` and `to` at line starts, or `to` at the end),
/// masked exactly as `masked(text, &ranges(text))` masks them, but reading only the documents
/// that hold those lines: a snippet of one line of a large file costs that document, not the
/// file. `None` if the masked lines are not UTF-8 (never, as in `masked`).
#[cfg(test)]
pub fn masked_lines(text: &str, from: usize, to: usize) -> Option<String> {
    masked_lines_with(text, from, to, &mut Documents::new())
}

/// The secret ranges of documents already read, by where the text is in memory and the
/// document's byte range: the findings of one large document read it once.
pub type Documents = std::collections::HashMap<(usize, usize, usize), Vec<(usize, usize)>>;

/// `masked_lines`, with the ranges of the documents it reads kept in `documents`.
pub fn masked_lines_with(
    text: &str,
    from: usize,
    to: usize,
    documents: &mut Documents,
) -> Option<String> {
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
    let doc = text.get(start..end)?;
    let found = documents
        .entry((text.as_ptr() as usize, start, end))
        .or_insert_with(|| ranges(doc));
    for &(s, len) in found.iter() {
        let (s, e) = ((start + s).max(from), (start + s + len).min(to));
        if s >= e {
            continue;
        }
        star(out.get_mut(s - from..e - from)?.iter_mut());
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

/// What a masked value is printed as.
pub const MASK: &str = "***";

/// Masks object `v` (a built object, about to be printed whole) in place: every value of
/// `data` and `stringData` of a Secret (the keys stay, so what changes is still seen), every
/// value of a SOPS `sops:` block and every SOPS `ENC[...]` value anywhere, and every secret
/// value `ranges` finds in a string that itself holds a Secret (the
/// `kubectl.kubernetes.io/last-applied-configuration` annotation, an inline patch). An
/// environment variable's `value` is not a Secret's and is shown, as kustomize shows it.
/// Returns whether anything was masked.
pub fn mask_object(v: &mut serde_json::Value) -> bool {
    mask_in(v, 0)
}

fn mask_in(v: &mut serde_json::Value, depth: usize) -> bool {
    use serde_json::Value;
    let mut hid = false;
    match v {
        Value::Object(map) => {
            let secret = map
                .get("kind")
                .and_then(Value::as_str)
                .is_some_and(|k| k.eq_ignore_ascii_case("secret"));
            for (key, value) in map.iter_mut() {
                let whole = (secret && (key == "data" || key == "stringData"))
                    || (depth == 0 && key == "sops");
                if whole {
                    hid |= mask_every_value(value);
                } else if depth < 64 {
                    hid |= mask_in(value, depth + 1);
                }
            }
        }
        Value::Array(items) if depth < 64 => {
            for item in items {
                hid |= mask_in(item, depth + 1);
            }
        }
        Value::String(s) if s.trim_start().starts_with("ENC[") => {
            *s = MASK.to_string();
            hid = true;
        }
        // A string that may itself hold a Secret object or SOPS metadata.
        Value::String(s) if names_secret_or_sops(s) => {
            let found = ranges(s);
            if !found.is_empty() {
                *s = masked(s, &found);
                hid = true;
            }
        }
        _ => {}
    }
    hid
}

/// Whether `s` holds `Secret` or `sops`: one scan for their first letters.
fn names_secret_or_sops(s: &str) -> bool {
    let b = s.as_bytes();
    memchr::memchr2_iter(b'S', b's', b)
        .any(|i| b[i..].starts_with(b"Secret") || b[i..].starts_with(b"sops"))
}

/// Masks every occurrence of each of `secrets` (a Secret's values that a build substituted into
/// other objects, Flux's `postBuild.substituteFrom` a Secret; the strings a HelmRelease's
/// values took from Secrets) in the strings and keys of `v`: the value itself however short,
/// and every form a chart or kustomize can give it (`forms`). Returns whether anything was
/// masked.
pub fn mask_values(v: &mut serde_json::Value, secrets: &Secrets) -> bool {
    use serde_json::Value;
    if secrets.is_empty() {
        return false;
    }
    match v {
        Value::Object(map) => {
            let mut hid = map
                .values_mut()
                .fold(false, |m, v| mask_values(v, secrets) | m);
            if map.keys().any(|k| matches!(secrets.mask(k), Cow::Owned(_))) {
                // Keys masked alike merge, the later value kept.
                let entries = std::mem::take(map);
                map.extend(
                    entries
                        .into_iter()
                        .map(|(k, v)| (secrets.mask(&k).into_owned(), v)),
                );
                hid = true;
            }
            hid
        }
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |m, v| mask_values(v, secrets) | m),
        Value::String(s) => match secrets.mask(s) {
            Cow::Owned(masked) => {
                *s = masked;
                true
            }
            Cow::Borrowed(_) => false,
        },
        _ => false,
    }
}

/// Every scalar under `v` replaced by `MASK`, the structure kept.
fn mask_every_value(v: &mut serde_json::Value) -> bool {
    use serde_json::Value;
    match v {
        Value::Object(map) => map.values_mut().fold(false, |m, v| mask_every_value(v) | m),
        Value::Array(items) => items.iter_mut().fold(false, |m, v| mask_every_value(v) | m),
        Value::Null => false,
        other => {
            *other = Value::String(MASK.to_string());
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(text: &str) -> String {
        masked(text, &ranges(text))
    }

    /// The scan for `Secret` and `sops` says what the plain searches say.
    #[test]
    fn the_secret_scan_is_its_plain_definition() {
        let parts = ["S", "s", "Secret", "sops", "Secre", "sop", "ops", "é", " "];
        for a in parts {
            for b in parts {
                for c in parts {
                    let s = format!("{a}{b}{c}");
                    let plain = s.contains("Secret") || s.contains("sops");
                    assert_eq!(names_secret_or_sops(&s), plain, "{s:?}");
                }
            }
        }
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
    fn a_built_object_is_masked_where_it_holds_secrets() {
        let mut secret = serde_json::json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration":
                    "{\"kind\":\"Secret\",\"data\":{\"pw\":\"aHVudGVyMg==\"}}"}},
            "data": {"pw": "aHVudGVyMg=="},
            "stringData": {"token": "hunter2", "nested": {"deep": 1}},
            "sops": {"mac": "ENC[AES256_GCM,data:mac]", "age": [{"enc": "-----BEGIN AGE"}]},
        });
        assert!(mask_object(&mut secret));
        let text = secret.to_string();
        for hidden in [
            "aHVudGVyMg==",
            "hunter2",
            "BEGIN AGE",
            "data:mac",
            "\"deep\":1",
        ] {
            assert!(!text.contains(hidden), "{hidden} in {text}");
        }
        assert_eq!(secret["data"]["pw"], MASK);
        assert_eq!(secret["stringData"]["token"], MASK);
        assert_eq!(secret["metadata"]["name"], "s");
        // Not a Secret: its data is shown, as is an environment variable; ciphertext is not.
        let mut config = serde_json::json!({
            "kind": "ConfigMap", "data": {"a": "visible", "b": "ENC[AES256_GCM,data:x]"},
            "spec": {"env": [{"name": "A", "value": "shown"}]},
        });
        assert!(mask_object(&mut config));
        assert_eq!(config["data"]["a"], "visible");
        assert_eq!(config["data"]["b"], MASK);
        assert_eq!(config["spec"]["env"][0]["value"], "shown");
        let mut plain = serde_json::json!({"kind": "Deployment", "spec": {"replicas": 1}});
        assert!(!mask_object(&mut plain));
        let mut substituted =
            serde_json::json!({"data": {"url": "u:abc@db", "n": 3, "k": ["abc"]}});
        assert!(mask_values(
            &mut substituted,
            &Secrets::new(vec!["abc".into(), String::new()])
        ));
        assert_eq!(
            substituted,
            serde_json::json!({"data": {"url": "u:***@db", "n": 3, "k": ["***"]}})
        );
    }

    /// A large file is read in time linear in its size: four times the keys cost about four
    /// times the time, measured as a ratio of two sizes in one run (the fastest of three
    /// reads each), so a busy machine slows both alike; a quadratic reader would be 16×.
    #[test]
    fn a_large_document_is_read_in_time_linear_in_its_size() {
        let secret = |keys: usize| {
            let mut text = String::from("kind: Secret\nstringData:\n");
            for i in 0..keys {
                text.push_str(&format!("  key-{i}: value-{i}\n"));
            }
            text.push_str("---\nkind: ConfigMap\n");
            text
        };
        let fastest = |text: &str, keys: usize| {
            (0..5)
                .map(|_| {
                    let start = std::time::Instant::now();
                    assert_eq!(ranges(text).len(), keys);
                    start.elapsed()
                })
                .min()
                .unwrap_or_default()
        };
        // 16× the keys: linear work takes about 16× the time, a scan per key about 256×.
        // The bound sits a factor of four from each, so a loaded machine does not fail it.
        let (small, large) = (secret(1_250), secret(20_000));
        let ratio = fastest(&large, 20_000).as_secs_f64() / fastest(&small, 1_250).as_secs_f64();
        assert!(ratio < 64.0, "16× the keys took {ratio:.1}× the time");
        // And every value is masked in output in time linear in the output.
        let out = mask_known("value-19999 and value-5 stay apart from value-123456\n");
        assert_eq!(out, "*** and value-5 stay apart from ***6\n");
    }

    /// Each shape a Secret can be written in: the value is masked, the keys are not.
    #[test]
    fn masks_secrets_by_their_structure_whatever_their_shape() {
        let shapes = [
            "{\n  \"data\": {\n    \"pw\": \"SECRETVALUE\"\n  },\n  \"kind\": \"Secret\"\n}\n",
            "kind: List\nitems:\n- kind: ConfigMap\n  data: {a: visible}\n- kind: Secret\n  data:\n    pw: SECRETVALUE\n",
            "\"kind\": 'Secret'\n'stringData':\n  \"pw\": SECRETVALUE\n",
            "\u{feff}kind: Secret\nstringData:\n  pw: SECRETVALUE\n",
            "kind: !!str Secret\nstringData:\n  pw: !!str SECRETVALUE\n",
            "  kind: Secret\n  stringData:\n    pw: SECRETVALUE\n",
            "kind : Secret\nstringData :\n  pw : SECRETVALUE\n",
            "kind: \"\\x53ecret\"\nstringData:\n  pw: SECRETVALUE\n",
            "kind: Secret\nstringData:\n  pw: |\n    SECRETVALUE\n    more\n",
            "kind: Secret\nmetadata:\n  annotations:\n    kubectl.kubernetes.io/last-applied-configuration: |\n      {\"kind\":\"Secret\",\"data\":{\"pw\":\"SECRETVALUE\"}}\n",
            "kind: ConfigMap\n---\nkind: Secret\nstringData:\n  pw: SECRETVALUE\n---\nbroken: [\n",
            "spec:\n  env:\n    - {name: A, value: \"a,SECRETVALUE\"}\n    - name: B\n      value: >-\n        SECRETVALUE\n",
        ];
        for text in shapes {
            let out = shown(text);
            assert_eq!(out.len(), text.len());
            assert_eq!(out.matches('\n').count(), text.matches('\n').count());
            assert!(!out.contains("SECRETVALUE"), "{text:?}\n{out}");
            assert!(out.contains("kind") || out.contains("name: B"), "{out}");
        }
        // What is not secret stays readable.
        let out = shown(shapes[1]);
        assert!(out.contains("a: visible"), "{out}");
    }

    /// Where a Secret cannot be located, every value of its document is masked.
    #[test]
    fn masks_every_value_where_a_secret_cannot_be_located() {
        for text in [
            // Broken.
            "kind: Secret\nstringData:\n  pw: SECRETVALUE\n  x: [\n",
            "kind: Secret\ndata:\n\tpw: SECRETVALUE\n",
            // The value anchored outside the data.
            "kind: Secret\nmetadata:\n  labels: {a: &v SECRETVALUE}\nstringData:\n  pw: *v\n",
            // A kind that is not a plain string; a merge key.
            "kind: &k Secret\nother: *k\nnote: SECRETVALUE\n",
            "kind: Secret\n<<: {stringData: {pw: SECRETVALUE}}\n",
        ] {
            let out = shown(text);
            assert!(!out.contains("SECRETVALUE"), "{text:?}\n{out}");
            assert!(out.contains("kind:"), "{out}");
        }
        // A broken document that names no Secret keeps its values but those of `env`.
        let text = "spec:\n  port: 8080\n  env:\n    - name: A\n      value: |\n        SECRETVALUE\n  x: [\n";
        let out = shown(text);
        assert!(!out.contains("SECRETVALUE"), "{out}");
        assert!(
            !out.contains("8080"),
            "an env list makes the document suspect: {out}"
        );
        let text = "spec:\n  port: 8080\n  x: [\n";
        assert_eq!(shown(text), text);
        // Nor does a broken kustomization whose patch names its decryption Secret.
        let text = "resources:\n  - ../base\n  - [broken\npatches:\n  - patch: |-\n      spec:\n        decryption:\n          provider: sops\n          secretRef: {name: sops-age}\n";
        assert_eq!(shown(text), text);
        // But `kind: Secret`, however it is written, does.
        for kind in [
            "Secret",
            "\"Secret\"",
            "!!str Secret",
            "\"\\x53ecret\"",
            "\"Sec\\\n  ret\"",
        ] {
            let text = format!("kind: {kind}\nstringData:\n  pw: SECRETVALUE\n  x: [\n");
            assert!(!shown(&text).contains("SECRETVALUE"), "{text}");
        }
    }

    #[test]
    fn remembered_values_and_their_base64_forms_are_masked() {
        // "remembered-secret" and its base64.
        remember("cmVtZW1iZXJlZC1zZWNyZXQ=", true);
        remember("another-plain-secret", false);
        remember("short", false);
        let out = mask_known(
            "a remembered-secret, YW5vdGhlci1wbGFpbi1zZWNyZXQ= and another-plain-secret; short",
        );
        assert_eq!(out, "a ***, *** and ***; short");
    }

    #[test]
    fn sops_ciphertext_is_not_remembered() {
        // Masked where a file is shown; one pattern per encrypted value would make every
        // output of a repository of encrypted Secrets search for each of them.
        let enc = "ENC[AES256_GCM,data:c29wcy1jaXBoZXJ0ZXh0LXVuaXF1ZQ==,iv:aXY=,tag:dGFn,type:str]";
        remember(enc, true);
        assert_eq!(mask_known(&format!("seen {enc}")), format!("seen {enc}"));
        let text = format!("kind: Secret\ndata:\n  k: {enc}\n");
        let masked = masked(&text, &ranges(&text));
        assert!(!masked.contains("c29wcy1jaXBoZXJ0ZXh0"), "{masked}");
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
