//! Every form a known secret value can take once a chart or kustomize has written it, and
//! the masking of all of them at once. A chart may print a value from a Secret escaped
//! (`toJson`, `toYaml`, `quote`), encoded (`b64enc`, alone or of a larger text), indented line
//! by line (`indent`, `nindent`) or folded by a YAML writer; masking only the value as it is
//! would print the rest. Each form is derived as the program that writes it derives it
//! (Go's `encoding/json` and `strconv.Quote`, the YAML emitter Helm's `toYaml` runs, standard
//! base64), so a value is masked however the chart wrote it.
//!
//! Short values are the caller's business for the value as it is (`Secrets` masks it however
//! short, as Flux's substitution puts it in place); the derived forms of a short value would
//! be mostly escape sequences and padding that stand for nothing secret, so each has a
//! minimum (see `forms`).

use std::borrow::Cow;
use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};

/// The escaped forms (JSON, Go-quoted, YAML-quoted) and the whole base64 of a value are
/// derived from a value of at least this many characters.
pub const MIN_ESCAPED: usize = 4;

/// A line of a value of several lines, or the value with its line breaks flattened, is
/// searched for when it has at least this many characters (blanks at its ends left out), and
/// a word's base64 when the word has at least this many bytes.
pub const MIN_LINE: usize = 6;

/// A middle of a base64 text is searched for when it has at least this many characters (42
/// bits: a chance of about one in 4·10¹² at each place of an unrelated base64 text).
pub const MIN_BASE64: usize = 7;

/// The characters that end a line: YAML 1.1's line breaks, which Helm's YAML writer breaks a
/// scalar at (and Go's `bufio` splits error text at the first two).
const BREAKS: [char; 5] = ['\n', '\r', '\u{85}', '\u{2028}', '\u{2029}'];

/// Every form `value` can take in what a chart renders, itself first; empty for an empty
/// value. With `n` its length in characters:
///
/// - the value itself, however short;
/// - when `n >= MIN_ESCAPED` and they differ from it: JSON-escaped as Go writes it with and
///   without its HTML escaping (`toJson`, `toPrettyJson`, `mustToJson` escape `<` `>` `&`;
///   `toRawJson` does not) and as fluxwave's own JSON output and messages write it;
///   Go-quoted (`quote`, `printf "%q"`); YAML double-quoted and single-quoted as `toYaml`
///   writes them; and one level of composition: each of those JSON-escaped and Go-quoted
///   again (`toJson | quote` in a file the chart writes);
/// - for a value of several lines, each line of at least `MIN_LINE` characters, blanks at its
///   ends left out: an error message shows the first lines only, an indented value shows
///   each line apart (indentation itself is matched by `Secrets`, which flattens line breaks);
/// - when `n >= MIN_ESCAPED`, its standard base64 (`b64enc`), and the stable middle of the
///   base64 of a larger text that holds it, at each of the three byte alignments it can stand
///   at (`b64enc (toJson .Values.config)`): of the value, of each escaped form, and of each of
///   their words of at least `MIN_LINE` bytes (split at blanks and line breaks, which
///   indentation and YAML folding change inside the encoded text), each middle when it has at
///   least `MIN_BASE64` characters (a value or word of 6 bytes or more has all three). Shorter
///   base64 runs turn up by chance in the base64 of large unrelated text (a CA bundle, a
///   dashboard).
///
/// Escaped forms are not derived below `MIN_ESCAPED` characters: there they are mostly escape
/// sequences (`\"`, `\n`, `\u003c`) found all over JSON and YAML text, and `MQ==` is the end of
/// many unrelated base64 strings. Lines below `MIN_LINE` are words and brackets (`}`,
/// `debug`). Go decides `quote`'s escapes by Unicode category; a code point Unicode has not
/// assigned is taken as printable here, where Go would escape it.
pub fn forms(value: &str) -> Vec<String> {
    if value.is_empty() {
        return Vec::new();
    }
    fn push(out: &mut Vec<String>, form: String) {
        if !form.is_empty() && !out.contains(&form) {
            out.push(form);
        }
    }
    let mut out = vec![value.to_string()];
    let long = value.chars().count() >= MIN_ESCAPED;
    // The escaped forms, first as one writer writes them, then each written by a second;
    // a value of printable ASCII that none escapes has none.
    let (mut first, mut escaped) = (Vec::new(), Vec::new());
    let escapes =
        |c: char| !matches!(c, ' '..='~') || matches!(c, '"' | '\\' | '<' | '>' | '&' | '\'');
    if long && value.contains(escapes) {
        first = vec![
            json(value, true),
            json(value, false),
            fluxwave_json(value),
            go_quote(value),
            yaml_double(value),
            value.replace('\'', "''"),
            debug(value),
        ];
        for f in &first {
            escaped.push(f.clone());
            escaped.push(json(f, true));
            escaped.push(go_quote(f));
        }
        first.retain(|f| f != value);
        escaped.retain(|f| f != value);
        escaped.sort();
        escaped.dedup();
    }
    let lines = lines(value);
    for f in &escaped {
        push(&mut out, f.clone());
    }
    for l in &lines {
        push(&mut out, l.to_string());
    }
    if long {
        push(&mut out, crate::base64::encode(value.as_bytes()));
    }
    // A YAML writer folds a long scalar at a blank and indents what follows, inside the text
    // a chart may then encode: the words of a value are encoded whole whatever happens to
    // the blanks between them.
    let whole_forms = std::iter::once(value).chain(first.iter().map(String::as_str));
    let words = whole_forms
        .clone()
        .flat_map(|f| f.split(|c: char| c == ' ' || c == '\t' || BREAKS.contains(&c)))
        .filter(|w| w.len() >= MIN_LINE);
    for source in whole_forms.chain(words) {
        for middle in base64_middles(source.as_bytes()) {
            if middle.len() >= MIN_BASE64 {
                push(&mut out, middle);
            }
        }
    }
    out
}

/// The forms fluxwave's own output gives `value`, for its diagnostics: as it is; when it has
/// at least `MIN_ESCAPED` characters, JSON-escaped as fluxwave's JSON output writes it and
/// quoted as its messages quote a name (`{:?}`), and its standard base64 (as a Secret's `data`
/// holds it); each line of a value of several lines, as in `forms`. A subset of `forms`: what
/// a chart makes of a value reaches diagnostics only through why its release is not rendered,
/// masked with every form of the release's Secret strings; and every output line searched for
/// every form of every Secret value of a repository costs tenfold (a repository of 20,852
/// plaintext values with quotes and line breaks: `check` 3.8 s and 250 MB with the value and
/// its base64 alone, 6 s and 430 MB with these forms, 32 s and 1.7 GB with all of `forms`).
pub fn printed_forms(value: &str) -> Vec<String> {
    let mut out = vec![value.to_string()];
    if value.chars().count() >= MIN_ESCAPED {
        // Printable ASCII but quotes and backslashes is written as it is.
        if value.contains(|c: char| !matches!(c, ' '..='~') || c == '"' || c == '\\') {
            out.extend([fluxwave_json(value), debug(value)]);
        }
        out.push(crate::base64::encode(value.as_bytes()));
    }
    out.extend(lines(value).into_iter().map(str::to_string));
    out.retain(|f| !f.is_empty());
    out.dedup();
    out
}

/// Each line of `value` of at least `MIN_LINE` characters, blanks at its ends left out; none
/// when it has one line.
fn lines(value: &str) -> Vec<&str> {
    if !value.contains(BREAKS) {
        return Vec::new();
    }
    value
        .split(BREAKS)
        .map(str::trim)
        .filter(|l| l.chars().count() >= MIN_LINE)
        .collect()
}

/// `s` as fluxwave's JSON output writes it inside its quotes.
fn fluxwave_json(s: &str) -> String {
    serde_json::to_string(s)
        .ok()
        .and_then(|q| Some(q.get(1..q.len().checked_sub(1)?)?.to_string()))
        .unwrap_or_default()
}

/// `s` as fluxwave's messages quote a name (`{:?}`), inside its quotes.
fn debug(s: &str) -> String {
    format!("{s:?}")
        .get(1..)
        .and_then(|q| q.strip_suffix('"'))
        .unwrap_or_default()
        .to_string()
}

/// The base64 characters that `bytes` alone decide in the base64 of any text that holds them,
/// at each of the three alignments they can start at (after 0, 1 or 2 bytes of a group of
/// three): a character that also takes bits of the bytes around them is left out.
fn base64_middles(bytes: &[u8]) -> [String; 3] {
    std::array::from_fn(|k| {
        let mut padded = vec![0u8; k];
        padded.extend_from_slice(bytes);
        let enc = crate::base64::encode(&padded);
        // Character i holds bits 6i..6i+6; the value's are 8k..8(k+n).
        let first = (8 * k).div_ceil(6);
        let last = 8 * (k + bytes.len()) / 6;
        enc.get(first..last.max(first)).unwrap_or("").to_string()
    })
}

/// `s` as Go's `encoding/json` writes it inside its quotes: `"`, `\` and control characters
/// escaped (`\b`, `\f`, `\n`, `\r`, `\t`, else `\u00xx`), U+2028 and U+2029 as `\u2028` and
/// `\u2029`, and with `html` (`json.Marshal`, Helm's `toJson`) `<`, `>` and `&` as `\u003c`,
/// `\u003e` and `\u0026`.
fn json(s: &str, html: bool) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' if html => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c if u32::from(c) < 0x20 || c == '\u{2028}' || c == '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out
}

/// `s` as Go's `strconv.Quote` writes it inside its quotes (Helm's `quote`, `printf "%q"`):
/// `"` and `\` escaped, printable characters as they are, the others as `\a`, `\b`, `\f`,
/// `\n`, `\r`, `\t`, `\v`, `\xNN` (below U+0020, and DEL), `\uNNNN` or `\UNNNNNNNN`.
fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        let n = u32::from(c);
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if go_printable(c) => out.push(c),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            _ if n < 0x20 || n == 0x7f => out.push_str(&format!("\\x{n:02x}")),
            _ if n < 0x10000 => out.push_str(&format!("\\u{n:04x}")),
            _ => out.push_str(&format!("\\U{n:08x}")),
        }
    }
    out
}

/// Go's `unicode.IsPrint`: letters, marks, numbers, punctuation, symbols and the ASCII space;
/// not control characters, other spaces, line and paragraph separators, format characters,
/// private use or noncharacters. (Unassigned code points, which Go does not print either,
/// would take Unicode's tables: they are taken as printable.)
fn go_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    let n = u32::from(c);
    !(matches!(n,
        // Format characters (Cf).
        0xad | 0x600..=0x605 | 0x61c | 0x6dd | 0x70f | 0x890..=0x891 | 0x8e2 | 0x180e
        | 0x200b..=0x200f | 0x202a..=0x202e | 0x2060..=0x2064 | 0x2066..=0x206f | 0xfeff
        | 0xfff9..=0xfffb | 0x110bd | 0x110cd | 0x13430..=0x1343f | 0x1bca0..=0x1bca3
        | 0x1d173..=0x1d17a | 0xe0001 | 0xe0020..=0xe007f
        // Private use (Co).
        | 0xe000..=0xf8ff | 0xf0000..=0xffffd | 0x100000..=0x10fffd
        // Noncharacters.
        | 0xfdd0..=0xfdef)
        || n & 0xfffe == 0xfffe)
}

/// `s` as Helm's `toYaml` writes it in a double-quoted scalar (the YAML emitter of
/// go.yaml.in/yaml/v2, after sigs.k8s.io/yaml's round trip through JSON, which reads a NEL as
/// a space): `"` and `\` escaped, and every character that emitter does not print or takes
/// for a line break as `\0`, `\a`, `\b`, `\t`, `\n`, `\v`, `\f`, `\r`, `\e`, `\L`, `\P`, else
/// `\xNN`, `\uNNNN` or `\UNNNNNNNN` (upper-case digits).
fn yaml_double(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        let n = u32::from(c);
        let printable = matches!(n, 0x20..=0x7e | 0xa0..=0xd7ff | 0xe000..=0xfffd) && n != 0xfeff;
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{85}' => out.push(' '),
            c if printable && !BREAKS.contains(&c) => out.push(c),
            '\0' => out.push_str("\\0"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{b}' => out.push_str("\\v"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            '\u{1b}' => out.push_str("\\e"),
            '\u{2028}' => out.push_str("\\L"),
            '\u{2029}' => out.push_str("\\P"),
            _ if n <= 0xff => out.push_str(&format!("\\x{n:02X}")),
            _ if n <= 0xffff => out.push_str(&format!("\\u{n:04X}")),
            _ => out.push_str(&format!("\\U{n:08X}")),
        }
    }
    out
}

/// Known secret values, masked in every form `forms` gives them: in the strings of a rendered
/// object, in an error message. The matchers are made the first time a text is masked.
#[derive(Debug, Default)]
pub struct Secrets {
    values: Vec<String>,
    masker: OnceLock<Masker>,
}

/// Two are alike when they mask the same values.
impl PartialEq for Secrets {
    fn eq(&self, other: &Secrets) -> bool {
        self.values == other.values
    }
}

impl Clone for Secrets {
    fn clone(&self) -> Secrets {
        Secrets::new(self.values.clone())
    }
}

impl Secrets {
    /// `values`, empty ones left out.
    pub fn new(mut values: Vec<String>) -> Secrets {
        values.retain(|v| !v.is_empty());
        values.sort();
        values.dedup();
        Secrets {
            values,
            masker: OnceLock::new(),
        }
    }

    pub fn values(&self) -> &[String] {
        &self.values
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// `text` with every form of every value replaced by `***`: each as it is written, and
    /// each that holds a blank or a line break also across the line breaks of `text` with
    /// the blanks beside them (a value indented line by line, or folded by a YAML writer at a
    /// blank).
    pub fn mask<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if self.values.is_empty() {
            return Cow::Borrowed(text);
        }
        self.masker
            .get_or_init(|| Masker::new(self.values.iter().flat_map(|v| forms(v)), true))
            .mask(text)
    }
}

/// Patterns searched for at once, and replaced by `***`.
#[derive(Debug)]
pub struct Masker {
    /// Every pattern as it is written; `Err` when no matcher could be built (then every text
    /// is masked whole rather than shown).
    direct: Result<Option<AhoCorasick>, ()>,
    /// The patterns that hold a blank or a line break, flattened (`flatten`) and trimmed:
    /// searched in a text that holds a line break, flattened the same way.
    flat: Result<Option<AhoCorasick>, ()>,
}

impl Masker {
    /// A masker of `patterns`; `flat`: also across line breaks.
    pub fn new(patterns: impl IntoIterator<Item = String>, flat: bool) -> Masker {
        let patterns: Vec<String> = patterns.into_iter().filter(|p| !p.is_empty()).collect();
        let spaced: Vec<String> = if flat {
            patterns
                .iter()
                .filter(|p| p.contains(|c: char| c == ' ' || c == '\t' || BREAKS.contains(&c)))
                .map(|p| flatten(p).0.trim_matches([' ', '\t']).to_string())
                .filter(|p| p.chars().count() >= MIN_LINE)
                .collect()
        } else {
            Vec::new()
        };
        Masker {
            direct: matcher(&patterns),
            flat: matcher(&spaced),
        }
    }

    /// `text` with every pattern replaced by `***` (the longest where two start together; a
    /// match that begins inside a backslash escape of `text` takes the whole escape, so JSON
    /// stays valid).
    pub fn mask<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let (Ok(direct), Ok(flat)) = (&self.direct, &self.flat) else {
            return Cow::Borrowed(super::MASK);
        };
        let mut found: Vec<(usize, usize)> = direct
            .iter()
            .flat_map(|m| m.find_iter(text))
            .map(|m| (m.start(), m.end()))
            .collect();
        if let Some(flat) = flat {
            if text.contains(BREAKS) {
                let (flattened, runs) = flatten(text);
                let at = |i: usize| original(&runs, i);
                found.extend(
                    flat.find_iter(flattened.as_str())
                        .map(|m| (at(m.start()), at(m.end()))),
                );
            }
        }
        if found.is_empty() {
            return Cow::Borrowed(text);
        }
        for m in &mut found {
            m.0 = escape_start(text, m.0);
        }
        found.sort_unstable();
        // Matches that overlap or touch are masked as one.
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (i, (start, end)) in found.into_iter().enumerate() {
            if i == 0 || start > at {
                out.push_str(&text[at..start]);
                out.push_str(super::MASK);
            }
            at = at.max(end);
        }
        out.push_str(&text[at..]);
        Cow::Owned(out)
    }
}

/// One matcher of `patterns`, leftmost-longest; `None` when there are none, `Err` when it
/// cannot be built. A contiguous NFA: a secret's forms are long (a certificate, base64 of a
/// whole file), and the DFA the builder would pick for a few of them costs milliseconds to
/// build (a state per byte of every pattern, a transition per byte class), while a masker
/// reads mostly short texts (a failure's message, a line).
fn matcher(patterns: &[String]) -> Result<Option<AhoCorasick>, ()> {
    if patterns.is_empty() {
        return Ok(None);
    }
    AhoCorasick::builder()
        .kind(Some(AhoCorasickKind::ContiguousNFA))
        .match_kind(MatchKind::LeftmostLongest)
        .build(patterns)
        .map(Some)
        .map_err(|_| ())
}

/// `text` with every run of blanks that holds a line break written as one space, and where
/// each such run is: (its byte in the flattened text, its start and end in `text`).
fn flatten(text: &str) -> (String, Vec<(usize, usize, usize)>) {
    let mut out = String::with_capacity(text.len());
    let mut runs = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let blank = |c: char| c == ' ' || c == '\t' || BREAKS.contains(&c);
        if !blank(c) {
            out.push(c);
            continue;
        }
        let (mut end, mut broken) = (i + c.len_utf8(), BREAKS.contains(&c));
        while let Some(&(j, d)) = chars.peek().filter(|(_, d)| blank(*d)) {
            end = j + d.len_utf8();
            broken |= BREAKS.contains(&d);
            chars.next();
        }
        if broken {
            // A YAML writer that folds a double-quoted scalar before a second blank escapes
            // that blank (`\ `) at the start of the next line: the backslash is the fold's.
            let mut rest = text[end..].chars();
            if rest.next() == Some('\\') && matches!(rest.next(), Some(' ' | '\t')) {
                chars.next();
                end += 1;
            }
            runs.push((out.len(), i, end));
            out.push(' ');
        } else {
            out.push_str(&text[i..end]);
        }
    }
    (out, runs)
}

/// The byte of the original text where byte `i` of its flattened text (`flatten`) is: a run
/// written as one space maps to its start, the byte after it to the run's end.
fn original(runs: &[(usize, usize, usize)], i: usize) -> usize {
    let k = runs.partition_point(|r| r.0 <= i);
    match k.checked_sub(1).map(|k| runs[k]) {
        None => i,
        Some((flat, start, _)) if flat == i => start,
        Some((flat, _, end)) => end + (i - flat - 1),
    }
}

/// Where a match that starts at `start` of `text` must start so that no backslash escape is
/// cut: at the backslash of `\n`, `\"`, `\\`, `\xNN`, `\uNNNN` or `\UNNNNNNNN` when `start`
/// is inside one.
fn escape_start(text: &str, start: usize) -> usize {
    let b = text.as_bytes();
    // A backslash that begins an escape: one after an even run of backslashes.
    let opens = |p: usize| {
        b[p] == b'\\' && b[..p].iter().rev().take_while(|&&c| c == b'\\').count() % 2 == 0
    };
    for back in 1..=9.min(start) {
        let p = start - back;
        if !opens(p) {
            continue;
        }
        let len = match b.get(p + 1) {
            Some(b'x') => 4,
            Some(b'u') => 6,
            Some(b'U') => 10,
            Some(_) => 2,
            None => 1,
        };
        let hex = b.get(p + 2..(p + len).min(b.len())).unwrap_or(&[]);
        let whole = len == 2 || (hex.len() == len - 2 && hex.iter().all(u8::is_ascii_hexdigit));
        if whole && p + len > start {
            return p;
        }
    }
    start
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (value, `json.Marshal` inside its quotes, an `Encoder` with `SetEscapeHTML(false)`,
    /// `strconv.Quote` inside its quotes, `sigs.k8s.io/yaml.Marshal` of `{k: value}` after
    /// `k: `, `base64.StdEncoding`).
    type GoRow = (
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        Option<&'static str>,
        &'static str,
    );

    /// What Go gives each value, as a table of `GoRow`s.
    /// Produced by a throwaway Go program (go1.26.8, sigs.k8s.io/yaml v1.6.0 with
    /// go.yaml.in/yaml/v2 v2.4.2, as helm 3.22.0 builds with) that printed these rows; a YAML
    /// form Go refuses ("control characters are not allowed") is `None`.
    const GO: &[GoRow] = &[
        (
            "plainvalue",
            "plainvalue",
            "plainvalue",
            "plainvalue",
            Some("plainvalue"),
            "cGxhaW52YWx1ZQ==",
        ),
        (
            "a<b>c&d",
            "a\\u003cb\\u003ec\\u0026d",
            "a<b>c&d",
            "a<b>c&d",
            Some("a<b>c&d"),
            "YTxiPmMmZA==",
        ),
        (
            "quote\"back\\slash",
            "quote\\\"back\\\\slash",
            "quote\\\"back\\\\slash",
            "quote\\\"back\\\\slash",
            Some("quote\"back\\slash"),
            "cXVvdGUiYmFja1xzbGFzaA==",
        ),
        (
            "line one\nline two\n",
            "line one\\nline two\\n",
            "line one\\nline two\\n",
            "line one\\nline two\\n",
            Some("|\n  line one\n  line two"),
            "bGluZSBvbmUKbGluZSB0d28K",
        ),
        (
            "tab\there",
            "tab\\there",
            "tab\\there",
            "tab\\there",
            Some("\"tab\\there\""),
            "dGFiCWhlcmU=",
        ),
        (
            "crlf\r\nend",
            "crlf\\r\\nend",
            "crlf\\r\\nend",
            "crlf\\r\\nend",
            Some("\"crlf\\r\\nend\""),
            "Y3JsZg0KZW5k",
        ),
        (
            "esc\u{1b}del\u{7f}nul\u{0}bell\u{7}vt\u{b}ff\u{c}bs\u{8}",
            "esc\\u001bdel\u{7f}nul\\u0000bell\\u0007vt\\u000bff\\fbs\\b",
            "esc\\u001bdel\u{7f}nul\\u0000bell\\u0007vt\\u000bff\\fbs\\b",
            "esc\\x1bdel\\x7fnul\\x00bell\\avt\\vff\\fbs\\b",
            None,
            "ZXNjG2RlbH9udWwAYmVsbAd2dAtmZgxicwg=",
        ),
        (
            "sep\u{2028}para\u{2029}nel\u{85}nbsp\u{a0}",
            "sep\\u2028para\\u2029nel\u{85}nbsp\u{a0}",
            "sep\\u2028para\\u2029nel\u{85}nbsp\u{a0}",
            "sep\\u2028para\\u2029nel\\u0085nbsp\\u00a0",
            Some("'sep\u{2028}  para\u{2029}  nel nbsp\u{a0}'"),
            "c2Vw4oCocGFyYeKAqW5lbMKFbmJzcMKg",
        ),
        (
            "soft\u{ad}zwsp\u{200b}bom\u{feff}rtl\u{202e}",
            "soft\u{ad}zwsp\u{200b}bom\u{feff}rtl\u{202e}",
            "soft\u{ad}zwsp\u{200b}bom\u{feff}rtl\u{202e}",
            "soft\\u00adzwsp\\u200bbom\\ufeffrtl\\u202e",
            Some("\"soft\u{ad}zwsp\u{200b}bom\\uFEFFrtl\u{202e}\""),
            "c29mdMKtendzcOKAi2Jvbe+7v3J0bOKArg==",
        ),
        (
            "caf\u{e9} \u{65e5}\u{672c} \u{1f600} \u{e000}",
            "caf\u{e9} \u{65e5}\u{672c} \u{1f600} \u{e000}",
            "caf\u{e9} \u{65e5}\u{672c} \u{1f600} \u{e000}",
            "caf\u{e9} \u{65e5}\u{672c} \u{1f600} \\ue000",
            Some("\"caf\u{e9} \u{65e5}\u{672c} \\U0001F600 \u{e000}\""),
            "Y2Fmw6kg5pel5pysIPCfmIAg7oCA",
        ),
        (
            "it's 'quoted'",
            "it's 'quoted'",
            "it's 'quoted'",
            "it's 'quoted'",
            Some("it's 'quoted'"),
            "aXQncyAncXVvdGVkJw==",
        ),
        (
            " lead and trail ",
            " lead and trail ",
            " lead and trail ",
            " lead and trail ",
            Some("' lead and trail '"),
            "IGxlYWQgYW5kIHRyYWlsIA==",
        ),
        (
            "del\u{7f}only",
            "del\u{7f}only",
            "del\u{7f}only",
            "del\\x7fonly",
            None,
            "ZGVsf29ubHk=",
        ),
        (
            "esc\u{1b}only",
            "esc\\u001bonly",
            "esc\\u001bonly",
            "esc\\x1bonly",
            Some("\"esc\\eonly\""),
            "ZXNjG29ubHk=",
        ),
        (
            "nel\u{85}only",
            "nel\u{85}only",
            "nel\u{85}only",
            "nel\\u0085only",
            Some("nel only"),
            "bmVswoVvbmx5",
        ),
        (
            "p@ss<w0rd>&\"'\\\n\t\u{2028}\u{e9}",
            "p@ss\\u003cw0rd\\u003e\\u0026\\\"'\\\\\\n\\t\\u2028\u{e9}",
            "p@ss<w0rd>&\\\"'\\\\\\n\\t\\u2028\u{e9}",
            "p@ss<w0rd>&\\\"'\\\\\\n\\t\\u2028\u{e9}",
            Some("\"p@ss<w0rd>&\\\"'\\\\\\n\\t\\L\u{e9}\""),
            "cEBzczx3MHJkPiYiJ1wKCeKAqMOp",
        ),
    ];

    #[test]
    fn each_form_is_what_go_writes() {
        for &(value, html, raw, quoted, yaml, b64) in GO {
            assert_eq!(json(value, true), html, "toJson {value:?}");
            assert_eq!(json(value, false), raw, "toRawJson {value:?}");
            assert_eq!(go_quote(value), quoted, "quote {value:?}");
            assert_eq!(
                crate::base64::encode(value.as_bytes()),
                b64,
                "b64enc {value:?}"
            );
            // `toYaml` chooses a style; where it double-quotes, the text inside the quotes is
            // `yaml_double`'s, and where it writes the value plain, that is the NEL read as a
            // space.
            if let Some(inner) = yaml.and_then(|y| y.strip_prefix('"')?.strip_suffix('"')) {
                assert_eq!(yaml_double(value), inner, "toYaml {value:?}");
            }
            let all = forms(value);
            for form in [html, raw, quoted, b64] {
                assert!(
                    all.iter().any(|f| f == form),
                    "{form:?} of {value:?}: {all:?}"
                );
            }
        }
        assert_eq!(yaml_double("nel\u{85}only"), "nel only");
    }

    /// Every form of every value of the table is masked where Go put it, in a longer text.
    #[test]
    fn every_go_form_is_masked_in_text() {
        for &(value, html, raw, quoted, yaml, b64) in GO {
            let secrets = Secrets::new(vec![value.to_string()]);
            for form in [Some(html), Some(raw), Some(quoted), yaml, Some(b64)]
                .into_iter()
                .flatten()
            {
                let text = format!("before {form} after");
                let shown = secrets.mask(&text);
                // All but the quotes and block indicator the form is written between.
                let left = shown
                    .strip_prefix("before ")
                    .and_then(|s| s.strip_suffix(" after"))
                    .map(|s| {
                        s.replace("***", "")
                            .replace(['|', '\'', '"', ' ', '\n'], "")
                    });
                assert_eq!(left.as_deref(), Some(""), "{value:?} as {form:?}: {shown}");
            }
        }
    }

    #[test]
    fn base64_middles_are_found_at_every_alignment() {
        let value = "s3cr3t-passw0rd";
        let secrets = Secrets::new(vec![value.to_string()]);
        for prefix in ["", "a", "ab", "abc", "{\"password\":\""] {
            let text = format!("{prefix}{value}\",\"other\":1}}");
            let encoded = crate::base64::encode(text.as_bytes());
            let shown = secrets.mask(&encoded);
            assert!(shown.contains("***"), "{prefix:?}: {shown}");
            // What is left decodes to no more than a few bytes of the value at its ends.
            let left: String = shown.replace("***", " ");
            for piece in left.split(' ') {
                for skip in 0..4 {
                    let decoded = decode_lossy(piece.get(skip..).unwrap_or(""));
                    assert!(!decoded.contains("cr3t-pa"), "{prefix:?}: {shown}");
                }
            }
        }
        // The middle of a short value is too short to be searched for.
        assert_eq!(forms("abc"), ["abc"]);
        assert_eq!(forms("abcde"), ["abcde", "YWJjZGU="]);
        // Its base64 alone, after one byte and after two.
        assert_eq!(
            forms("abcdef"),
            ["abcdef", "YWJjZGVm", "FiY2RlZ", "hYmNkZW"]
        );
    }

    fn decode_lossy(s: &str) -> String {
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut bits = 0u32;
        let mut n = 0;
        let mut out = Vec::new();
        for c in s.bytes() {
            let Some(v) = A.iter().position(|&a| a == c) else {
                continue;
            };
            bits = bits << 6 | v as u32;
            n += 6;
            if n >= 8 {
                n -= 8;
                out.push((bits >> n & 0xff) as u8);
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    }

    #[test]
    fn an_indented_or_folded_value_is_masked_across_its_lines() {
        let key = "-----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7\n-----END KEY-----\n";
        let secrets = Secrets::new(vec![key.to_string()]);
        let indented: String = key.lines().map(|l| format!("      {l}\n")).collect();
        let text = format!("tls:\n  key: |\n{indented}  other: shown\n");
        let shown = secrets.mask(&text);
        assert_eq!(shown, "tls:\n  key: |\n      ***\n  other: shown\n");
        // Helm's error text shows the first lines, joined.
        let why = "execution error: -----BEGIN KEY-----; MIIEvQIBADANBgkqhkiG9w0BAQEFAASC; BKcwggSjAgEAAoIBAQC7";
        assert!(
            !secrets.mask(why).contains("MIIEvQ"),
            "{}",
            secrets.mask(why)
        );
        // A long value with blanks, folded by the YAML writer at a blank past its width.
        let long =
            "correct horse battery staple correct horse battery staple correct horse\tbattery";
        let secrets = Secrets::new(vec![long.to_string()]);
        let folded = "config: |\n  pw: \"correct horse battery staple correct horse battery staple\n    correct horse\\tbattery\"\n";
        assert_eq!(secrets.mask(folded), "config: |\n  pw: \"***\"\n");
        // Folded before a second blank, which it escapes.
        let secrets = Secrets::new(vec!["first part\t  second part".to_string()]);
        assert_eq!(
            secrets.mask("pw: \"first part\\t\n    \\ second part\""),
            "pw: \"***\""
        );
        // And a value YAML writes with a line break as a separator, indented after it.
        let secrets = Secrets::new(vec!["sep\u{2028}para\u{2029}nel\u{85}nbsp".to_string()]);
        assert_eq!(
            secrets.mask("k: 'sep\u{2028}    para\u{2029}    nel nbsp'"),
            "k: '***'"
        );
    }

    /// What fluxwave prints of a value itself: a few of its forms.
    #[test]
    fn fluxwave_prints_a_value_in_a_few_of_its_forms() {
        let v = "pa\"ss\\word\nsecond line here";
        let printed = printed_forms(v);
        assert_eq!(
            printed,
            [
                v,
                r#"pa\"ss\\word\nsecond line here"#,
                "cGEic3Ncd29yZApzZWNvbmQgbGluZSBoZXJl",
                "pa\"ss\\word",
                "second line here",
            ]
        );
        let all = forms(v);
        assert!(printed.iter().all(|p| all.contains(p)), "{all:?}");
        assert_eq!(printed_forms("abc"), ["abc"]);
    }

    #[test]
    fn short_values_are_masked_as_they_are_only() {
        for short in ["1", "ab", "yes", "a<b"] {
            assert_eq!(forms(short), [short], "{short:?}");
        }
        let secrets = Secrets::new(vec!["true".into()]);
        assert_eq!(secrets.mask("enabled: true, dHJ1ZQ=="), "enabled: ***, ***");
        // A line of a value is masked alone only when it is long enough to stand for it.
        let secrets = Secrets::new(vec!["[db]\nuser=admin\npassword=hunter22\n}".into()]);
        assert_eq!(
            secrets.mask("user=admin and password=hunter22 in [db] }"),
            "*** and *** in [db] }"
        );
    }

    /// A match never leaves half an escape behind: the JSON masked stays JSON.
    #[test]
    fn masking_keeps_json_valid() {
        for value in [
            "u0041bcdefgh",
            "nsecretvalue",
            "041bcdefghij",
            "\\secret\\value",
        ] {
            let secrets = Secrets::new(vec![value.to_string()]);
            for text in [
                "\"\\u0041bcdefgh\"",
                "\"a\\nsecretvalue\"",
                "\"\\u0041bcdefghij\"",
                "\"\\\\secret\\\\value\\\\\"",
                "\"x\\\\nsecretvalue\"",
            ] {
                let shown = secrets.mask(text);
                assert!(
                    serde_json::from_str::<String>(&shown).is_ok(),
                    "{value:?} in {text}: {shown}"
                );
            }
        }
    }

    #[test]
    fn flattening_maps_back_to_the_original() {
        let text = "a\n   b \t\r\n c  d\u{2028}e";
        let (flat, runs) = flatten(text);
        assert_eq!(flat, "a b c  d e");
        assert_eq!(&text[original(&runs, 2)..original(&runs, 3)], "b");
        assert_eq!(&text[original(&runs, 1)..original(&runs, 2)], "\n   ");
        assert_eq!(&text[original(&runs, 4)..original(&runs, 8)], "c  d");
        assert_eq!(&text[original(&runs, 9)..original(&runs, 10)], "e");
    }
}
