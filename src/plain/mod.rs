//! The plain-block-subset reader, for the plain block YAML that catalog files and most
//! manifests are written in, producing exactly what serde-saphyr produces for them (the differential tests compare the two on
//! every example and fixture catalog file and on generated variations). It parses a file
//! into a small tree and feeds the derived `Deserialize` impls from it; anything outside its
//! subset (anchors, tags, block scalars, escapes, multi-line or empty values, documents
//! markers, tabs, non-ASCII text, values whose type a YAML reader could resolve otherwise)
//! and any error at all makes it decline (`None`): serde-saphyr then reads the file and
//! reports its problems with their locations. At 10,000 catalog files it takes `waves` from
//! ~170,000 instructions per file to a few thousand.
//!
//! A leaf: it imports nothing of fluxwave, so that the YAML layer (`yaml`) and the masking of
//! secrets in errors (`redact`) can both read through it without a cycle.

mod de;
mod parser;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use de::De;
pub(crate) use parser::Node;
use parser::{Parser, Style};

/// The key under which the reader hands a value's byte span to a spanned value (`yaml`'s
/// `Spanned` reads it): serde-saphyr hands its own location under keys of its own.
pub(crate) const FAST_SPAN_KEY: &str = "__fluxwave_byte_span";

/// A YAML document marker: `---` starts a document, `...` ends one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Marker {
    Start,
    End,
}

/// The document marker `line` is, if it is one (YAML 1.2 `c-directives-end` and
/// `c-document-end`: three characters at column 0, then white space, a comment after it, or
/// the line's end). Every reader that splits a YAML text into documents asks this, so a
/// `---\t# comment` line is a marker to each of them.
pub(crate) fn document_marker(line: &str) -> Option<Marker> {
    let marker = match line.get(..3)? {
        "---" => Marker::Start,
        "..." => Marker::End,
        _ => return None,
    };
    line[3..]
        .chars()
        .next()
        .is_none_or(|c| matches!(c, ' ' | '\t' | '\r' | '\n'))
        .then_some(marker)
}

/// ASCII without tabs or carriage returns: the only text the reader reads.
fn in_charset(text: &str) -> bool {
    text.is_ascii() && memchr::memchr2(b'\t', b'\r', text.as_bytes()).is_none()
}

/// Parses `text` into `T`, or declines.
pub fn parse<T: DeserializeOwned>(text: &str) -> Option<T> {
    if !in_charset(text) {
        return None;
    }
    let mut p = Parser::new(text);
    let root = p.document()?;
    T::deserialize(De { node: &root }).ok()
}

/// Every document of `text` as untyped values (empty documents left out), or declines.
/// Plain scalars become integers (decimal, no sign or leading zero), booleans (`true`,
/// `false`) or strings (anything no YAML reader takes for a number, date, null or boolean);
/// everything else declines.
pub fn parse_all(text: &str) -> Option<Vec<Value>> {
    if !in_charset(text) {
        return None;
    }
    let mut p = Parser::new(text);
    p.documents()?.iter().map(value).collect()
}

/// Every document of `text` as the reader's tree, whose scalars and keys borrow the text
/// (their spans are offsets into it), empty ones left out; or declines, as `parse_all` does.
pub(crate) fn documents(text: &str) -> Option<Vec<Node<'_>>> {
    if !in_charset(text) {
        return None;
    }
    Parser::new(text).documents()
}

/// A single-document file (a mapping, no `---`) as an untyped value, or declines; values as
/// in `parse_all`.
pub fn parse_value(text: &str) -> Option<Value> {
    if !in_charset(text) {
        return None;
    }
    // A marker line before the one document starts it, as in most kustomization files;
    // the value does not depend on where the text starts.
    let text = text.strip_prefix("---\n").unwrap_or(text);
    value(&Parser::new(text).document()?)
}

fn value(node: &Node<'_>) -> Option<Value> {
    Some(match node {
        Node::Scalar {
            text,
            style: Style::Quoted,
            ..
        } => Value::String((*text).to_string()),
        Node::Scalar { text, .. } => match *text {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            t if t.bytes().all(|b| b.is_ascii_digit()) => {
                if t.len() > 1 && t.starts_with('0') {
                    return None;
                }
                Value::Number(t.parse::<u64>().ok()?.into())
            }
            t => Value::String(plain_string(t)?.to_string()),
        },
        Node::Block(text) => Value::String(text.clone()),
        Node::Map(entries) => {
            let mut map = Map::with_capacity(entries.len());
            for (k, v) in entries {
                map.insert(plain_string(k)?.to_string(), value(v)?);
            }
            Value::Object(map)
        }
        Node::Seq(items) => Value::Array(items.iter().map(value).collect::<Option<_>>()?),
    })
}

/// A plain scalar that every YAML reader resolves to this string: not a null, a boolean
/// (1.1 or 1.2), or anything number- or date-like. `50m`, `1Gi` (a letter no number has),
/// `3.8.1` (two dots: no number, no date) and `./app` (a slash) are strings.
pub(super) fn plain_string(text: &str) -> Option<&str> {
    let first = text.as_bytes().first().copied()?;
    let reserved = [
        "null", "~", "true", "false", "yes", "no", "on", "off", "y", "n",
    ];
    let numeric = |b: u8| b.is_ascii_hexdigit() || b"._+-:xXoObB".contains(&b);
    let version = text.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && text.bytes().filter(|&b| b == b'.').count() >= 2
        && !text.contains("..")
        && !text.ends_with('.');
    let number_like = first.is_ascii_digit() && text.bytes().all(numeric) && !version;
    // No number, boolean, null or date of YAML 1.1 or 1.2 has a `/` in it: `./app` and
    // `../../components/common` (most of a kustomization's paths) are strings.
    if number_like
        || matches!(first, b'.' | b'+' | b'-') && !text.contains('/')
        || text.len() <= 5 && reserved.iter().any(|r| r.eq_ignore_ascii_case(text))
    {
        return None;
    }
    Some(text)
}

#[cfg(test)]
mod tests;
