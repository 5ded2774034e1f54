//! The plain block-YAML subset parsed into a small tree of `Node`s that borrow the text.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    Plain,
    Quoted,
}

#[derive(Debug)]
pub(crate) enum Node<'a> {
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

pub(super) struct Parser<'a> {
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
    pub(super) fn new(src: &'a str) -> Self {
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
    pub(super) fn document(&mut self) -> Option<Node<'a>> {
        let first = *self.lines.first()?;
        if first.indent != 0 || self.lines.iter().any(|l| l.separator) {
            return None;
        }
        let root = self.map(0)?;
        (self.i == self.lines.len()).then_some(root)
    }

    /// Every document of a stream, empty ones left out (as `yaml::parse_all` does).
    pub(super) fn documents(&mut self) -> Option<Vec<Node<'a>>> {
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
        let mut keys = Keys::default();
        while let Some(line) = self.current() {
            if line.indent < indent {
                break;
            }
            if line.indent > indent || self.starts_item(line) {
                return None;
            }
            let (key, after) = self.key_at(line.start, line.end)?;
            if keys.repeats(&entries, key) {
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
        // Nothing left on the line (`[` ending the text): not a value this reader reads.
        if pos >= end {
            return None;
        }
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
        let mut keys = Keys::default();
        let mut pos = self.skip_blanks(open + 1, end);
        if pos < end && b[pos] == b'}' {
            return Some((Node::Map(entries), pos + 1));
        }
        loop {
            let (key, after) = self.key_at(pos, end)?;
            if after == end || keys.repeats(&entries, key) {
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

/// The keys of a mapping read so far, to refuse a repeated one: a look along the entries
/// while the mapping is small, a set once it is large, so a Secret of 40,000 keys is read
/// in time linear in its size.
#[derive(Default)]
struct Keys<'a> {
    set: std::collections::HashSet<&'a str>,
}

impl<'a> Keys<'a> {
    const SMALL: usize = 32;

    /// Whether `key` is already among `entries` (the entries read so far, in order).
    fn repeats(&mut self, entries: &[(&'a str, Node<'a>)], key: &'a str) -> bool {
        if entries.len() < Self::SMALL {
            return entries.iter().any(|(k, _)| *k == key);
        }
        if self.set.is_empty() {
            self.set.extend(entries.iter().map(|(k, _)| *k));
        }
        !self.set.insert(key)
    }
}
