//! A fast reader for the plain block-YAML subset catalog files are written in, producing
//! exactly what serde-saphyr produces for them (the differential tests compare the two on
//! every example and fixture catalog file and on generated variations). It parses a file
//! into a small tree and feeds the derived `Deserialize` impls from it; anything outside its
//! subset (anchors, tags, block scalars, escapes, multi-line or empty values, documents
//! markers, tabs, non-ASCII text, values whose type a YAML reader could resolve otherwise)
//! and any error at all makes it decline (`None`): serde-saphyr then reads the file and
//! reports its problems with their locations. At 10,000 catalog files it takes `waves` from
//! ~170,000 instructions per file to a few thousand.

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor,
};

use serde_json::{Map, Value};

use crate::yaml::FAST_SPAN_KEY;

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

/// A single-document file (a mapping, no `---`) as an untyped value, or declines; values as
/// in `parse_all`.
pub fn parse_value(text: &str) -> Option<Value> {
    if !in_charset(text) {
        return None;
    }
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
/// (1.1 or 1.2), or anything number- or date-like. `50m`, `1Gi` (a letter no number has)
/// and `3.8.1` (two dots: no number, no date) are strings.
fn plain_string(text: &str) -> Option<&str> {
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
    if number_like
        || matches!(first, b'.' | b'+' | b'-')
        || text.len() <= 5 && reserved.iter().any(|r| r.eq_ignore_ascii_case(text))
    {
        return None;
    }
    Some(text)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Plain,
    Quoted,
}

#[derive(Debug)]
enum Node<'a> {
    Scalar {
        text: &'a str,
        style: Style,
        /// Byte offset and length of the scalar as written (quotes included).
        span: (usize, usize),
    },
    /// A literal block scalar (`|`, `|-`): its text, lines joined.
    Block(String),
    Map(Vec<(&'a str, Node<'a>)>),
    Seq(Vec<Node<'a>>),
}

#[derive(Clone, Copy)]
struct Line {
    /// A `---` line between documents.
    separator: bool,
    /// Byte offset of the first character after the indentation.
    start: usize,
    /// Byte offset of the end of the line (its `\n` or the end of the text).
    end: usize,
    indent: usize,
}

struct Parser<'a> {
    src: &'a str,
    lines: Vec<Line>,
    i: usize,
    /// Collections open around the current position: past `MAX_DEPTH` the reader declines
    /// (serde-saphyr, whose budget has the same depth, then reports the error), so hostile
    /// nesting can never exhaust the stack.
    depth: std::cell::Cell<usize>,
}

const MAX_DEPTH: usize = 64;

fn is_key_byte(b: u8) -> bool {
    KEY_BYTES[usize::from(b)]
}

/// The bytes a plain key is made of (letters, digits, `_-./`), as a table: keys are most of
/// what the reader scans byte by byte.
const KEY_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b'/');
        b += 1;
    }
    table
};

/// Whether a scalar at this byte cannot start a plain scalar (or is not one we read).
fn is_indicator(b: u8) -> bool {
    matches!(
        b,
        b'-' | b'?'
            | b':'
            | b','
            | b'['
            | b']'
            | b'{'
            | b'}'
            | b'#'
            | b'&'
            | b'*'
            | b'!'
            | b'|'
            | b'>'
            | b'\''
            | b'"'
            | b'%'
            | b'@'
            | b'`'
            | b' '
    )
}

impl<'a> Parser<'a> {
    fn new(src: &'a str) -> Self {
        let b = src.as_bytes();
        let mut lines = Vec::with_capacity(32);
        let mut pos = 0;
        // memchr, not `split_inclusive('\n')`: its char searcher was a tenth of the reader.
        while pos < b.len() {
            let end = memchr::memchr(b'\n', &b[pos..]).map_or(b.len(), |k| pos + k);
            let mut start = pos;
            while start < end && b[start] == b' ' {
                start += 1;
            }
            if start < end && b[start] != b'#' {
                lines.push(Line {
                    separator: &b[pos..end] == b"---",
                    start,
                    end,
                    indent: start - pos,
                });
            }
            pos = end + 1;
        }
        Parser {
            src,
            lines,
            i: 0,
            depth: std::cell::Cell::new(0),
        }
    }

    fn bytes(&self) -> &'a [u8] {
        self.src.as_bytes()
    }

    /// The current line; `None` at the end of a document.
    fn current(&self) -> Option<Line> {
        self.lines.get(self.i).copied().filter(|l| !l.separator)
    }

    /// A single document (a catalog file): a mapping, no `---`.
    fn document(&mut self) -> Option<Node<'a>> {
        let first = *self.lines.first()?;
        if first.indent != 0 || self.lines.iter().any(|l| l.separator) {
            return None;
        }
        let root = self.map(0)?;
        (self.i == self.lines.len()).then_some(root)
    }

    /// Every document of a stream, empty ones left out (as `yaml::parse_all` does).
    fn documents(&mut self) -> Option<Vec<Node<'a>>> {
        let mut docs = Vec::new();
        while let Some(line) = self.lines.get(self.i).copied() {
            if line.separator {
                self.i += 1;
                continue;
            }
            if line.indent != 0 {
                return None;
            }
            docs.push(self.block(line)?);
            if self.lines.get(self.i).is_some_and(|l| !l.separator) {
                return None;
            }
        }
        Some(docs)
    }

    /// A key at `pos` followed by `:` and a space or the end of the line: (key, position
    /// after the colon).
    fn key_at(&self, pos: usize, end: usize) -> Option<(&'a str, usize)> {
        let b = self.bytes();
        let mut k = pos;
        while k < end && is_key_byte(b[k]) {
            k += 1;
        }
        if k == pos || !b[pos].is_ascii_alphanumeric() && b[pos] != b'_' {
            return None;
        }
        if k < end && b[k] == b':' && (k + 1 == end || b[k + 1] == b' ') {
            Some((&self.src[pos..k], k + 1))
        } else {
            None
        }
    }

    fn starts_item(&self, line: Line) -> bool {
        let b = self.bytes();
        b[line.start] == b'-' && (line.start + 1 == line.end || b[line.start + 1] == b' ')
    }

    /// A block mapping whose keys are at column `indent`; the current line's key may start
    /// mid-line (a mapping inside a sequence item), at `self.lines[self.i].start`.
    fn map(&mut self, indent: usize) -> Option<Node<'a>> {
        let depth = self.depth.get();
        if depth >= MAX_DEPTH {
            return None;
        }
        self.depth.set(depth + 1);
        let node = self.map_inner(indent);
        self.depth.set(depth);
        node
    }

    fn map_inner(&mut self, indent: usize) -> Option<Node<'a>> {
        let mut entries: Vec<(&'a str, Node<'a>)> = Vec::with_capacity(8);
        while let Some(line) = self.current() {
            if line.indent < indent {
                break;
            }
            if line.indent > indent || self.starts_item(line) {
                return None;
            }
            let (key, after) = self.key_at(line.start, line.end)?;
            if entries.iter().any(|(k, _)| *k == key) {
                return None;
            }
            let value = self.value_after(after, line, indent)?;
            entries.push((key, value));
        }
        Some(Node::Map(entries))
    }

    /// The value of a mapping entry whose `:` ends before `after`: inline on the line, or a
    /// nested block (deeper, or a sequence at the key's own indentation).
    fn value_after(&mut self, after: usize, line: Line, indent: usize) -> Option<Node<'a>> {
        let b = self.bytes();
        let mut pos = after;
        while pos < line.end && b[pos] == b' ' {
            pos += 1;
        }
        if pos == line.end || b[pos] == b'#' {
            if pos < line.end && pos == after {
                return None;
            }
            self.i += 1;
            let next = self.current()?;
            return if next.indent > indent {
                self.block(next)
            } else if next.indent == indent && self.starts_item(next) {
                self.seq(indent)
            } else {
                None
            };
        }
        if b[pos] == b'|' {
            return self.literal(pos, line, indent);
        }
        let (node, end) = self.inline(pos, line.end, false)?;
        self.rest_is_comment(end, line.end)?;
        self.i += 1;
        // A deeper line after an inline value would continue it (a multi-line scalar).
        match self.current() {
            Some(next) if next.indent > indent => None,
            _ => Some(node),
        }
    }

    /// A literal block scalar `|` (clip) or `|-` (strip) after a key at `indent`: lines
    /// more indented than the key, none blank, ending with a line break.
    fn literal(&mut self, pos: usize, line: Line, indent: usize) -> Option<Node<'a>> {
        let strip = match &self.src[pos..line.end] {
            "|" => false,
            "|-" => true,
            _ => return None,
        };
        let src = self.src;
        let mut cur = line.end + 1;
        let mut block_indent = None;
        let mut text = String::new();
        while cur < src.len() {
            let end = src[cur..].find('\n').map_or(src.len(), |k| cur + k);
            let body = &src[cur..end];
            let ind = body.len() - body.trim_start_matches(' ').len();
            if ind == body.len() {
                // A blank line: fine only where the scalar ends (clipped away).
                let next = src[end..]
                    .split('\n')
                    .find(|l| !l.trim_start_matches(' ').is_empty());
                let min = block_indent.unwrap_or(indent + 1);
                if next.is_some_and(|l| l.len() - l.trim_start_matches(' ').len() >= min) {
                    return None;
                }
                break;
            }
            let bi = *block_indent.get_or_insert(ind);
            if bi <= indent || ind < bi {
                break;
            }
            if end == src.len() {
                // The last line has no line break: clipping would keep none.
                return None;
            }
            text.push_str(&body[bi..]);
            text.push('\n');
            cur = end + 1;
        }
        if text.is_empty() {
            return None;
        }
        if strip {
            text.pop();
        }
        self.i += 1;
        while self.lines.get(self.i).is_some_and(|l| l.start < cur) {
            self.i += 1;
        }
        Some(Node::Block(text))
    }

    fn block(&mut self, line: Line) -> Option<Node<'a>> {
        if self.starts_item(line) {
            self.seq(line.indent)
        } else {
            self.map(line.indent)
        }
    }

    /// A block sequence whose dashes are at column `indent`.
    fn seq(&mut self, indent: usize) -> Option<Node<'a>> {
        let depth = self.depth.get();
        if depth >= MAX_DEPTH {
            return None;
        }
        self.depth.set(depth + 1);
        let node = self.seq_inner(indent);
        self.depth.set(depth);
        node
    }

    fn seq_inner(&mut self, indent: usize) -> Option<Node<'a>> {
        let b = self.bytes();
        let mut items = Vec::new();
        while let Some(line) = self.current() {
            if line.indent < indent || line.indent == indent && !self.starts_item(line) {
                break;
            }
            if line.indent > indent {
                return None;
            }
            let mut pos = line.start + 1;
            while pos < line.end && b[pos] == b' ' {
                pos += 1;
            }
            if pos == line.end || b[pos] == b'#' || b[pos] == b'-' {
                return None;
            }
            let column = pos - (line.start - line.indent);
            if self.key_at(pos, line.end).is_some() {
                // `- key: value`: a mapping whose keys sit at the item's content column.
                self.lines[self.i] = Line {
                    separator: false,
                    start: pos,
                    end: line.end,
                    indent: column,
                };
                items.push(self.map(column)?);
            } else {
                let (node, end) = self.inline(pos, line.end, false)?;
                self.rest_is_comment(end, line.end)?;
                self.i += 1;
                if self.current().is_some_and(|n| n.indent > indent) {
                    return None;
                }
                items.push(node);
            }
        }
        Some(Node::Seq(items))
    }

    /// Only blanks, or blanks and a comment, from `pos` to the end of the line.
    fn rest_is_comment(&self, pos: usize, end: usize) -> Option<()> {
        let rest = &self.src[pos..end];
        let trimmed = rest.trim_start_matches(' ');
        (trimmed.is_empty() || trimmed.starts_with('#') && trimmed.len() < rest.len()).then_some(())
    }

    /// A scalar or flow collection starting at `pos`, on one line: (node, end position).
    fn inline(&self, pos: usize, end: usize, flow: bool) -> Option<(Node<'a>, usize)> {
        let b = self.bytes();
        match b[pos] {
            q @ (b'"' | b'\'') => {
                let close = pos + 1 + self.src[pos + 1..end].find(q as char)?;
                let text = &self.src[pos + 1..close];
                if q == b'"' && text.contains('\\') || q == b'\'' && b.get(close + 1) == Some(&q) {
                    return None;
                }
                let node = Node::Scalar {
                    text,
                    style: Style::Quoted,
                    span: (pos, close + 1 - pos),
                };
                Some((node, close + 1))
            }
            b'{' => self.flow_map(pos, end),
            b'[' => self.flow_seq(pos, end),
            c if is_indicator(c) => None,
            _ if !flow => {
                // A plain scalar ends at ` #` (a comment) or the end of the line; `: ` inside
                // it would make it a key. Only `#` and `:` need a look.
                let mut k = pos;
                let stop = loop {
                    let Some(i) = memchr::memchr2(b'#', b':', &b[k..end]) else {
                        break end;
                    };
                    k += i;
                    match b[k] {
                        b'#' if b[k - 1] == b' ' => break k,
                        b':' if k + 1 == end || b[k + 1] == b' ' => return None,
                        _ => k += 1,
                    }
                };
                self.plain(pos, stop)
            }
            _ => {
                let mut k = pos;
                while k < end {
                    match b[k] {
                        b'#' if b[k - 1] == b' ' => break,
                        b':' if k + 1 == end || b[k + 1] == b' ' => return None,
                        b',' | b']' | b'}' => break,
                        b'[' | b'{' | b'#' | b':' => return None,
                        _ => k += 1,
                    }
                }
                self.plain(pos, k)
            }
        }
    }

    /// The plain scalar from `pos` to `k` (trailing blanks left out): (node, end position).
    fn plain(&self, pos: usize, k: usize) -> Option<(Node<'a>, usize)> {
        let text = self.src[pos..k].trim_end_matches(' ');
        if text.ends_with(':') {
            return None;
        }
        let node = Node::Scalar {
            text,
            style: Style::Plain,
            span: (pos, text.len()),
        };
        Some((node, pos + text.len()))
    }

    fn skip_blanks(&self, mut pos: usize, end: usize) -> usize {
        while pos < end && self.bytes()[pos] == b' ' {
            pos += 1;
        }
        pos
    }

    /// After a flow entry: `, ` and the next entry (true), or the closing bracket (false).
    fn flow_next(&self, pos: usize, end: usize, close: u8) -> Option<(bool, usize)> {
        let b = self.bytes();
        let pos = self.skip_blanks(pos, end);
        match b.get(pos) {
            Some(&c) if c == close && pos < end => Some((false, pos + 1)),
            Some(b',') if pos + 1 < end && b[pos + 1] == b' ' => {
                let next = self.skip_blanks(pos + 1, end);
                // No trailing comma before the closing bracket.
                (next < end && b[next] != close).then_some((true, next))
            }
            _ => None,
        }
    }

    fn flow_map(&self, open: usize, end: usize) -> Option<(Node<'a>, usize)> {
        let depth = self.depth.get();
        if depth >= MAX_DEPTH {
            return None;
        }
        self.depth.set(depth + 1);
        let node = self.flow_map_inner(open, end);
        self.depth.set(depth);
        node
    }

    fn flow_map_inner(&self, open: usize, end: usize) -> Option<(Node<'a>, usize)> {
        let b = self.bytes();
        let mut entries: Vec<(&'a str, Node<'a>)> = Vec::new();
        let mut pos = self.skip_blanks(open + 1, end);
        if pos < end && b[pos] == b'}' {
            return Some((Node::Map(entries), pos + 1));
        }
        loop {
            let (key, after) = self.key_at(pos, end)?;
            if after == end || entries.iter().any(|(k, _)| *k == key) {
                return None;
            }
            let start = self.skip_blanks(after, end);
            if start == end {
                return None;
            }
            let (value, next) = self.inline(start, end, true)?;
            entries.push((key, value));
            match self.flow_next(next, end, b'}')? {
                (true, p) => pos = p,
                (false, p) => return Some((Node::Map(entries), p)),
            }
        }
    }

    fn flow_seq(&self, open: usize, end: usize) -> Option<(Node<'a>, usize)> {
        let depth = self.depth.get();
        if depth >= MAX_DEPTH {
            return None;
        }
        self.depth.set(depth + 1);
        let node = self.flow_seq_inner(open, end);
        self.depth.set(depth);
        node
    }

    fn flow_seq_inner(&self, open: usize, end: usize) -> Option<(Node<'a>, usize)> {
        let b = self.bytes();
        let mut items = Vec::new();
        let mut pos = self.skip_blanks(open + 1, end);
        if pos < end && b[pos] == b']' {
            return Some((Node::Seq(items), pos + 1));
        }
        loop {
            if self.key_at(pos, end).is_some() {
                // `[a: b]` is a mapping inside a sequence: not read here.
                return None;
            }
            let (value, next) = self.inline(pos, end, true)?;
            items.push(value);
            match self.flow_next(next, end, b']')? {
                (true, p) => pos = p,
                (false, p) => return Some((Node::Seq(items), p)),
            }
        }
    }
}

/// Declining: the reason is never shown (serde-saphyr reads the file again and reports).
#[derive(Debug)]
struct Decline;

impl std::fmt::Display for Decline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("outside the fast reader's subset")
    }
}

impl std::error::Error for Decline {}

impl de::Error for Decline {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Decline
    }
}

struct De<'n, 'a> {
    node: &'n Node<'a>,
}

impl<'a> De<'_, 'a> {
    /// A plain scalar's text, or a quoted one's.
    fn scalar(&self) -> Result<(&'a str, Style), Decline> {
        match *self.node {
            Node::Scalar { text, style, .. } => Ok((text, style)),
            _ => Err(Decline),
        }
    }

    /// A scalar every YAML reader resolves to this string: quoted, or plain and not a null,
    /// a boolean (1.1 or 1.2) or anything number- or date-like (`50m` and `1Gi` are fine:
    /// they hold a letter no number has).
    fn string(&self) -> Result<&'a str, Decline> {
        let (text, style) = self.scalar()?;
        if style == Style::Quoted {
            return Ok(text);
        }
        plain_string(text).ok_or(Decline)
    }

    /// A plain decimal integer without sign, leading zeros or separators.
    fn unsigned(&self) -> Result<u64, Decline> {
        let (text, style) = self.scalar()?;
        if style != Style::Plain
            || text.is_empty()
            || !text.bytes().all(|b| b.is_ascii_digit())
            || text.len() > 1 && text.starts_with('0')
        {
            return Err(Decline);
        }
        text.parse().map_err(|_| Decline)
    }
}

macro_rules! unsigned {
    ($($method:ident $visit:ident $t:ty),*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Decline> {
            let n = <$t>::try_from(self.unsigned()?).map_err(|_| Decline)?;
            visitor.$visit(n)
        }
    )*};
}

macro_rules! decline {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Decline> {
            Err(Decline)
        }
    )*};
}

impl<'de> de::Deserializer<'de> for De<'_, '_> {
    type Error = Decline;

    decline!(deserialize_any deserialize_f32 deserialize_f64 deserialize_char deserialize_bytes
        deserialize_byte_buf deserialize_unit deserialize_ignored_any);

    unsigned!(deserialize_u8 visit_u8 u8, deserialize_u16 visit_u16 u16,
        deserialize_u32 visit_u32 u32, deserialize_u64 visit_u64 u64,
        deserialize_i8 visit_i8 i8, deserialize_i16 visit_i16 i16,
        deserialize_i32 visit_i32 i32, deserialize_i64 visit_i64 i64);

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Decline> {
        match self.scalar()? {
            ("true", Style::Plain) => visitor.visit_bool(true),
            ("false", Style::Plain) => visitor.visit_bool(false),
            _ => Err(Decline),
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Decline> {
        visitor.visit_str(self.string()?)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Decline> {
        visitor.visit_str(self.string()?)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Decline> {
        visitor.visit_str(self.scalar()?.0)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Decline> {
        // Nulls are declined (`string` and the others refuse them), so a value is always Some.
        visitor.visit_some(self)
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: V,
    ) -> Result<V::Value, Decline> {
        Err(Decline)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Decline> {
        if name != "__yaml_spanned" {
            return visitor.visit_newtype_struct(self);
        }
        match *self.node {
            Node::Scalar { span, .. } => visitor.visit_map(SpannedAccess {
                node: self.node,
                span,
                state: 0,
            }),
            _ => Err(Decline),
        }
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Decline> {
        match self.node {
            Node::Seq(items) => {
                let mut access = Items(items.iter());
                let value = visitor.visit_seq(&mut access)?;
                access.0.next().map_or(Ok(value), |_| Err(Decline))
            }
            _ => Err(Decline),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, _: V) -> Result<V::Value, Decline> {
        Err(Decline)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        _: V,
    ) -> Result<V::Value, Decline> {
        Err(Decline)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Decline> {
        match self.node {
            Node::Map(entries) => {
                let mut access = Entries {
                    iter: entries.iter(),
                    value: None,
                };
                let value = visitor.visit_map(&mut access)?;
                access.iter.next().map_or(Ok(value), |_| Err(Decline))
            }
            _ => Err(Decline),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Decline> {
        self.deserialize_map(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Decline> {
        match self.scalar()? {
            (text, Style::Plain) => {
                visitor.visit_enum(IntoDeserializer::<Decline>::into_deserializer(text))
            }
            _ => Err(Decline),
        }
    }
}

struct Items<'n, 'a>(std::slice::Iter<'n, Node<'a>>);

impl<'de> SeqAccess<'de> for Items<'_, '_> {
    type Error = Decline;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Decline> {
        self.0
            .next()
            .map(|node| seed.deserialize(De { node }))
            .transpose()
    }
}

struct Entries<'n, 'a> {
    iter: std::slice::Iter<'n, (&'a str, Node<'a>)>,
    value: Option<&'n Node<'a>>,
}

impl<'de> MapAccess<'de> for Entries<'_, '_> {
    type Error = Decline;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Decline> {
        let Some((key, value)) = self.iter.next() else {
            return Ok(None);
        };
        self.value = Some(value);
        let key = Node::Scalar {
            text: key,
            style: Style::Plain,
            span: (0, 0),
        };
        seed.deserialize(De { node: &key }).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Decline> {
        seed.deserialize(De {
            node: self.value.take().ok_or(Decline)?,
        })
    }
}

/// The `Spanned` view of a scalar: its byte span, then its value.
struct SpannedAccess<'n, 'a> {
    node: &'n Node<'a>,
    span: (usize, usize),
    state: u8,
}

impl<'de> MapAccess<'de> for SpannedAccess<'_, '_> {
    type Error = Decline;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Decline> {
        let key = match self.state {
            0 => FAST_SPAN_KEY,
            1 => "value",
            _ => return Ok(None),
        };
        seed.deserialize(IntoDeserializer::<Decline>::into_deserializer(key))
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Decline> {
        self.state += 1;
        match self.state {
            1 => seed.deserialize(de::value::SeqDeserializer::<_, Decline>::new(
                [self.span.0, self.span.1].into_iter(),
            )),
            _ => seed.deserialize(De { node: self.node }),
        }
    }
}

#[cfg(test)]
mod tests {
    //! Differential tests: wherever the fast reader accepts a file, `catalog::parse` must
    //! give exactly what it gives through serde-saphyr alone (the parsed values and their
    //! spans, or the same located errors).

    use std::path::Path;

    use crate::catalog::parse_with;
    use crate::yaml::Text;

    /// `parse` with and without the fast reader, compared; returns whether the fast reader
    /// accepted the file.
    fn same(text: &str) -> bool {
        let run = |fast| match parse_with("catalog/s.yaml", "s", Text::new(text.to_string()), fast)
        {
            Ok(s) => format!("{s:?}"),
            Err(errors) => errors
                .iter()
                .map(|e| format!("{} {:?} {:?} {:?}", e.message, e.span, e.line_col(), e.help))
                .collect::<Vec<_>>()
                .join("\n"),
        };
        assert_eq!(run(true), run(false), "differs on:\n{text}");
        super::parse::<crate::catalog::RawServiceDefinition>(text).is_some()
    }

    /// xorshift64*: a deterministic generator without a dependency.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }

        fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
            items[self.below(items.len())]
        }

        fn chance(&mut self, percent: usize) -> bool {
            self.below(100) < percent
        }
    }

    /// A catalog file for service `s` in the styles people and gen_repo.py write.
    fn generate(r: &mut Rng) -> String {
        let mut t = String::new();
        if r.chance(30) {
            t.push_str("# s: generated\n");
        }
        t.push_str("apiVersion: fluxwave.dev/v1alpha1\nkind: ServiceDefinition\n");
        t.push_str(r.pick(&[
            "metadata:\n  name: s\n",
            "metadata: {name: s}\n",
            "metadata:\n  name: s  # the service\n",
            "metadata:\n  name: \"s\"\n",
            "metadata:\n  name: s\n  labels:\n    team: media\n    app.kubernetes.io/part-of: s\n",
            "metadata:\n  name: s\n  annotations: {note: 'kept in the catalog'}\n",
        ]));
        t.push_str("spec:\n");
        if r.chance(20) {
            t.push_str(r.pick(&[
                "  description: Media server, movies and shows\n",
                "  description: \"Quoted: with a colon\"\n",
            ]));
        }
        match r.below(6) {
            0 => {}
            1 => t.push_str("  dependencies: []\n"),
            2 => t.push_str("  dependencies:\n    - to: a\n    - to: b-db  # its database\n"),
            3 => t.push_str("  dependencies:\n  - to: a\n  - to: b\n"),
            4 => t.push_str("  dependencies: [{to: a}, {to: \"b\"}]\n"),
            _ => t.push_str("  dependencies:\n    - {to: a}\n    -   to: c\n"),
        }
        t.push_str(r.pick(&[
            "  image:\n    repository: ghcr.io/example/s\n    tag: \"1.2.3\"\n",
            "  image: {repository: lscr.io/linuxserver/s, tag: \"4.0.9\"}\n",
            "  image:\n    repository: 'docker.io/library/s'\n    tag: v2.1.0\n    pullPolicy: IfNotPresent\n",
            "  image:\n    repository: r\n    tag: latest\n    automation: {enabled: false}\n",
            "  image:\n    repository: r\n    tag: 1.2.3\n",
            "  image:\n    repository: r\n    tag: \"1.0\"\n    automation:\n      interval: 1h\n      semver: '>=1.0.0'\n",
        ]));
        if r.chance(85) {
            t.push_str(r.pick(&["  port: 8989\n", "  port: 80\n", "  port: 0\n"]));
        }
        if r.chance(70) {
            t.push_str(r.pick(&[
                "  ingress:\n    host: s.apps.example.internal\n",
                "  ingress: {host: s.home.example}\n",
                "  ingress:\n    host: s.example\n    className: traefik\n    tls: {secretName: s-tls}\n    annotations:\n      cert-manager.io/cluster-issuer: letsencrypt\n",
            ]));
        }
        if r.chance(30) {
            t.push_str(r.pick(&[
                "  env:\n    - name: TZ\n      value: Europe/Berlin\n    - name: PUID\n      value: \"1000\"\n",
                "  env:\n    - {name: TZ, value: \"${CLUSTER_TZ:=UTC}\"}\n    - name: DB_PASSWORD\n      secretKeyRef: {name: s-db-app, key: password}\n",
            ]));
        }
        if r.chance(20) {
            t.push_str("  envFrom:\n    - secret: s-bootstrap-secret\n");
        }
        if r.chance(25) {
            t.push_str(r.pick(&[
                "  volumes:\n    - name: config\n      mountPath: /config\n      persistent: {size: 1Gi, storageClass: longhorn}\n",
                "  volumes:\n    - {name: cache, mountPath: /cache, readOnly: true}\n",
            ]));
        }
        if r.chance(20) {
            t.push_str("  resources:\n    requests: {cpu: 50m, memory: 128Mi}\n    limits:\n      memory: 512Mi\n");
        }
        if r.chance(15) {
            t.push_str("  probes:\n    readiness: {http: /healthz}\n    liveness:\n      tcp: true\n      periodSeconds: 30\n");
        }
        if r.chance(15) {
            t.push_str(r.pick(&[
                "  ports:\n    - {name: dns, port: 53, protocol: UDP, expose: true}\n",
                "  replicas: 2\n  strategy: Recreate\n",
                "  securityContext: {runAsUser: 1000, runAsNonRoot: true, fsGroup: 1000}\n",
                "  database:\n    size: 5Gi\n    instances: 2\n",
                "  pruneProtection: false\n  service: {type: ClusterIP, port: 8080}\n",
            ]));
        }
        if r.chance(20) {
            t.push_str("# trailing comment\n\n");
        }
        t
    }

    /// Characters and fragments that take a file out of the subset or make it invalid.
    const NOISE: &[&str] = &[
        " ", ":", "-", "#", "\"", "'", "{", "}", "[", "]", ",", "\n", "\t", "&a ", "*a", "!!str ",
        "|\n", ">\n", "null", "~", "yes", "012", "1e3", "\\n", "---\n", "? ", "é", "  ", "\r",
    ];

    fn mutate(r: &mut Rng, text: &str) -> String {
        let mut t = text.to_string();
        for _ in 0..1 + r.below(3) {
            let mut at = r.below(t.len() + 1);
            while !t.is_char_boundary(at) {
                at -= 1;
            }
            match r.below(4) {
                0 => t.insert_str(at, r.pick(NOISE)),
                1 if at < t.len() => {
                    let end = (at + 1 + r.below(4)).min(t.len());
                    if t.is_char_boundary(end) {
                        t.replace_range(at..end, "");
                    }
                }
                2 => {
                    // Duplicate or re-indent a line.
                    let lines: Vec<&str> = t.lines().collect();
                    let i = r.below(lines.len().max(1));
                    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
                    if let Some(line) = lines.get(i) {
                        if r.chance(50) {
                            out.insert(i, line.to_string());
                        } else {
                            out[i] = format!("{}{line}", " ".repeat(r.below(3)));
                        }
                    }
                    t = out.join("\n") + "\n";
                }
                _ => t.insert_str(at, r.pick(&["x", "2", "s", "_", "."])),
            }
        }
        t
    }

    #[test]
    fn reads_gen_repo_files_as_serde_saphyr_does() {
        let gen = "# svc-00017: generated by gen_repo.py\napiVersion: fluxwave.dev/v1alpha1\nkind: ServiceDefinition\nmetadata:\n  name: s\nspec:\n  dependencies:\n    - to: svc-00003\n    - to: s-db\n  image:\n    repository: ghcr.io/example/svc-00017\n    tag: \"3.14.1\"\n  port: 8080\n  ingress:\n    host: s.apps.example.internal\n";
        assert!(same(gen), "the fast reader must accept gen_repo.py's files");
        assert!(same(&gen.replace(
            "  dependencies:\n    - to: svc-00003\n    - to: s-db\n",
            "  dependencies: []\n"
        )));
    }

    #[test]
    fn every_example_and_fixture_catalog_file() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut dirs = vec![root.join("examples"), root.join("tests/fixtures")];
        let (mut files, mut accepted) = (0, 0);
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.parent().is_some_and(|p| p.ends_with("catalog"))
                    && path.extension().is_some_and(|e| e == "yaml")
                {
                    let text = std::fs::read_to_string(&path).unwrap();
                    // Compared under the stem `s`: the name check must agree too.
                    files += 1;
                    accepted += usize::from(same(&text));
                }
            }
        }
        assert!(files >= 12, "found {files} catalog files");
        assert!(
            accepted * 2 >= files,
            "only {accepted} of {files} read fast"
        );
    }

    /// `rounds` generated texts and four mutants of each through `agrees` (the fast reader
    /// gives what serde-saphyr gives, or declines): how many texts and mutants it accepted.
    fn differential(
        seed: u64,
        rounds: usize,
        generate: fn(&mut Rng) -> String,
        agrees: fn(&str) -> bool,
    ) -> (usize, usize) {
        let mut r = Rng(seed);
        let (mut accepted, mut mutants_accepted) = (0, 0);
        for _ in 0..rounds {
            let text = generate(&mut r);
            accepted += usize::from(agrees(&text));
            for _ in 0..4 {
                mutants_accepted += usize::from(agrees(&mutate(&mut r, &text)));
            }
        }
        (accepted, mutants_accepted)
    }

    #[test]
    fn generated_variations_and_mutations() {
        let (accepted, mutants_accepted) = differential(0x5EED_F1A5, 1500, generate, same);
        assert!(
            accepted > 1400,
            "the generated files are in the subset: {accepted}"
        );
        assert!(
            mutants_accepted > 500,
            "mutants exercise the fast path: {mutants_accepted}"
        );
    }

    #[test]
    fn declines_what_it_does_not_read() {
        let base = "apiVersion: fluxwave.dev/v1alpha1\nkind: ServiceDefinition\nmetadata:\n  name: s\nspec:\n  image: {repository: r, tag: \"1\"}\n";
        for extra in [
            "  port: &p 80\n",
            "  port: !!int 80\n",
            "  description: |\n    two\n    lines\n",
            "  description: one\n    continued\n",
            "  description: \"esc\\taped\"\n",
            "  description: 'it''s'\n",
            "  description: null\n",
            "  description: yes\n",
            "  description: 1.5\n",
            "  description:\n",
            "  port: \"80\"\n",
            "  port: 0x50\n",
            "  replicas: 01\n",
            "  port: 80\n  port: 81\n",
        ] {
            let text = format!("{base}{extra}");
            assert!(
                super::parse::<crate::catalog::RawServiceDefinition>(&text).is_none(),
                "{text}"
            );
            same(&text);
        }
        assert!(
            super::parse::<crate::catalog::RawServiceDefinition>(&format!("---\n{base}")).is_none()
        );
    }

    /// `parse_all` with and without the fast reader, compared; whether it read `text`.
    fn same_values(text: &str) -> bool {
        let fast = super::parse_all(text);
        let slow: Result<Vec<serde_json::Value>, _> = serde_saphyr::from_multiple(text);
        if let Some(docs) = &fast {
            let slow: Vec<_> = slow
                .unwrap_or_else(|e| panic!("fast read a file serde-saphyr refuses ({e}):\n{text}"))
                .into_iter()
                .filter(|d| !d.is_null())
                .collect();
            assert_eq!(docs, &slow, "differs on:\n{text}");
        }
        fast.is_some()
    }

    /// A manifest file as gen_repo.py and people write them.
    fn manifest(r: &mut Rng) -> String {
        let mut t = String::new();
        if r.chance(20) {
            t.push_str("---\n");
        }
        t.push_str("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: s\n  labels:\n    app.kubernetes.io/part-of: s\n---\n");
        t.push_str("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: s\n  namespace: s\n  labels:\n    app.kubernetes.io/version: \"1.2.3\"\n");
        t.push_str(r.pick(&[
            "spec:\n  replicas: 2\n",
            "spec:\n  replicas: 1 # one\n",
            "spec:\n  paused: false\n",
        ]));
        t.push_str("  template:\n    spec:\n      containers:\n        - name: s\n          image: ghcr.io/example/s:1.2.3 # {\"$imagepolicy\": \"flux-system:s\"}\n");
        t.push_str(r.pick(&[
            "          env:\n            - name: TZ\n              value: ${CLUSTER_TZ:=UTC}\n            - name: URL\n              value: https://s.example/a?b=c,d\n",
            "          env: []\n",
            "          args: [\"--port\", \"80\"]\n",
            "          ports:\n            - containerPort: 8080\n              protocol: TCP\n",
        ]));
        t.push_str(r.pick(&[
            "          resources:\n            requests:\n              cpu: 50m\n              memory: 128Mi\n",
            "          securityContext:\n            privileged: true\n            runAsUser: 0\n",
            "          readinessProbe:\n            httpGet: {path: /healthz, port: http}\n",
        ]));
        if r.chance(40) {
            t.push_str("---\napiVersion: v1\nkind: Secret\nmetadata:\n    name: s-secret\n    namespace: s\ntype: Opaque\ndata:\n    KEY: ENC[AES256_GCM,data:abc=,iv:def=,tag:ghi==,type:str]\nsops:\n    kms: []\n    age:\n        - recipient: age1abc\n          enc: |\n            -----BEGIN AGE ENCRYPTED FILE-----\n            YWdlLWVuY3J5cHRpb24ub3JnL3YxCi0+IFgyNTUxOSA\n            -----END AGE ENCRYPTED FILE-----\n    lastmodified: \"2024-03-04T05:06:07Z\"\n    encrypted_regex: ^(data|stringData)$\n    version: 3.8.1\n");
        }
        if r.chance(30) {
            t.push_str(r.pick(&[
                "---\napiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - a.yaml\n  - ../base\npatches:\n  - target:\n      kind: Kustomization\n    patch: |-\n      - op: add\n        path: /spec/decryption\n        value: {provider: sops}\n",
                "---\n# only a comment\n",
                "---\napiVersion: v1\nkind: ConfigMap\ndata:\n  a: \"1\"\n  b: 0\n  c: x y z\n  d: '1.5'\n",
            ]));
        }
        t
    }

    #[test]
    fn reads_manifests_as_serde_saphyr_does() {
        let (accepted, mutants_accepted) =
            differential(0xF1A5_0000_0001, 600, manifest, same_values);
        assert!(
            accepted > 500,
            "generated manifests are in the subset: {accepted}"
        );
        assert!(
            mutants_accepted > 300,
            "mutants exercise the fast path: {mutants_accepted}"
        );
    }

    #[test]
    fn every_example_and_fixture_yaml_file() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut dirs = vec![root.join("examples"), root.join("tests/fixtures")];
        let (mut files, mut accepted) = (0, 0);
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                    files += 1;
                    accepted += usize::from(same_values(&std::fs::read_to_string(&path).unwrap()));
                }
            }
        }
        assert!(
            files >= 50 && accepted * 2 >= files,
            "{accepted} of {files} read fast"
        );
    }

    #[test]
    fn reads_single_documents_as_serde_saphyr_does() {
        let base = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n# the app tier\nresources:\n  - a.yaml\n  - b-db.yaml # its database\n  - base\nlabels:\n  - pairs: {app: media}\n    includeSelectors: true\nnamespace: media\n";
        let mut r = Rng(0xF1A5_0000_0002);
        let (mut accepted, mut mutants_accepted) = (0, 0);
        for i in 0..800 {
            let text = if i == 0 {
                base.to_string()
            } else {
                mutate(&mut r, base)
            };
            let fast = super::parse_value(&text);
            let slow: Result<serde_json::Value, _> = serde_saphyr::from_str(&text);
            if let Some(doc) = &fast {
                let slow = slow.unwrap_or_else(|e| {
                    panic!("fast read a file serde-saphyr refuses ({e}):\n{text}")
                });
                assert_eq!(doc, &slow, "differs on:\n{text}");
                if i == 0 {
                    accepted += 1;
                } else {
                    mutants_accepted += 1;
                }
            }
        }
        assert_eq!(accepted, 1, "the base file is in the subset");
        assert!(
            mutants_accepted > 100,
            "mutants exercise the fast path: {mutants_accepted}"
        );
        assert!(super::parse_value("---\na: b\n").is_none());
        assert!(super::parse_value("a: b\n---\nc: d\n").is_none());
        assert!(super::parse_value("- a\n").is_none());
    }

    #[test]
    fn values_decline_what_a_reader_could_type_otherwise() {
        for doc in [
            "a: 1.5\n",
            "a: null\n",
            "a: ~\n",
            "a: yes\n",
            "a: 012\n",
            "a: 1e3\n",
            "a: -1\n",
            "a: .inf\n",
            "a: 2024-01-01\n",
            "a: 0x1f\n",
            "a: True\n",
            "1: a\n",
            "a: |+\n  x\n",
            "a: |\n  x\n\n  y\n",
            "a: |\n  x",
            "...\n",
            "--- !tag\na: b\n",
            "a:\n",
        ] {
            assert!(super::parse_all(doc).is_none(), "{doc}");
            same_values(doc);
        }
        assert_eq!(
            super::parse_all("a: |\n  x\n   y\nb: [1, c]\n"),
            Some(vec![serde_json::json!({"a": "x\n y\n", "b": [1, "c"]})])
        );
        assert!(same_values("a: |\n  x\n   y\nb: [1, c]\n"));
    }
}
