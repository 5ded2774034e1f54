//! One place where YAML is read and written. Reading goes through serde-saphyr with its
//! default budgets (alias bombs and absurd nesting fail fast, in bounded time and memory) and
//! turns its errors into located `SourceError`s. Writing is a small block-style emitter whose
//! output is deterministic to the byte and quotes every scalar a YAML 1.1 reader would misread.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde::de::{self, DeserializeOwned, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use serde_saphyr::Location;

use crate::error::SourceError;
use crate::plain;
use crate::plain::FAST_SPAN_KEY;

pub mod edit;

/// A parsed file's text, shared by every error that points into it.
pub type Text = Arc<String>;

/// What is derived from texts, kept by text: the trees a run reads share each file's text
/// (one `Text` per git blob), so what is derived from a file that many trees hold (the
/// revisions of a history) is made once. A text is known by its allocation, which its entry
/// keeps alive so that no other text takes its address; an equal text in another allocation
/// is derived again, which is only slower.
pub struct PerText<T>(Mutex<BTreeMap<usize, (Text, Arc<T>)>>);

impl<T> PerText<T> {
    pub const fn new() -> PerText<T> {
        PerText(Mutex::new(BTreeMap::new()))
    }

    /// What `make` derives from `text`, made on the first call for this text.
    pub fn get(&self, text: &Text, make: impl FnOnce() -> T) -> Arc<T> {
        let key = Arc::as_ptr(text) as usize;
        let known = || self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, made)) = known().get(&key) {
            return made.clone();
        }
        // Made without the lock: builds of two revisions run side by side.
        let made = Arc::new(make());
        known()
            .entry(key)
            .or_insert_with(|| (text.clone(), made))
            .1
            .clone()
    }
}

/// Byte span of a location in `text` (the location's span when it has byte info, else the
/// token that starts at its line and column).
pub fn span_of(text: &str, loc: &Location) -> (usize, usize) {
    let span = loc.span();
    if let (Some(off), Some(len)) = (span.byte_offset(), span.byte_len()) {
        let (off, len) = (off as usize, len as usize);
        if off <= text.len() {
            return (
                off,
                if len > 0 {
                    len
                } else {
                    token_len(&text[off..])
                },
            );
        }
    }
    line_col_span(text, loc.line() as usize, loc.column() as usize)
}

/// The span of the token at a 1-based line and (character) column.
fn line_col_span(text: &str, line: usize, col: usize) -> (usize, usize) {
    let mut offset = 0;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i + 1 == line {
            let start = offset
                + l.chars()
                    .take(col.saturating_sub(1))
                    .map(char::len_utf8)
                    .sum::<usize>();
            return (start, token_len(&text[start.min(text.len())..]));
        }
        offset += l.len();
    }
    (text.len(), 0)
}

/// Length of the token at the start of `rest`: up to a mapping key's colon, a trailing
/// comment or the end of the line, less trailing blanks.
fn token_len(rest: &str) -> usize {
    let line = rest.split('\n').next().unwrap_or("");
    let end = [
        line.find(": "),
        line.find(" #"),
        line.strip_suffix(':').map(str::len),
    ]
    .into_iter()
    .flatten()
    .min()
    .unwrap_or(line.len());
    line[..end].trim_end().len()
}

/// The span of a `Spanned` value.
pub fn spanned<T>(text: &str, value: &Spanned<T>) -> (usize, usize) {
    match value.at {
        At::Bytes { offset, len } if offset <= text.len() => (
            offset,
            if len > 0 {
                len
            } else {
                token_len(&text[offset..])
            },
        ),
        At::Bytes { .. } | At::Unknown => (text.len(), 0),
        At::LineCol { line, column } => line_col_span(text, line as usize, column as usize),
    }
}

/// A value with where it was written: serde-saphyr's `Spanned` reduced to what fluxwave
/// uses (the use site, as bytes when known), so that the plain-subset reader
/// (`plain`) can produce it too and a parsed file stays small.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spanned<T> {
    pub value: T,
    pub(crate) at: At,
}

/// Where a value starts, as serde-saphyr reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum At {
    /// Byte offset and byte length (0: the length is the token's, see `token_len`).
    Bytes {
        offset: usize,
        len: usize,
    },
    /// 1-based line and column (character-based), when byte offsets are unknown.
    LineCol {
        line: u32,
        column: u32,
    },
    Unknown,
}

impl At {
    fn of(loc: &Location) -> At {
        let span = loc.span();
        match (span.byte_offset(), span.byte_len()) {
            (Some(off), Some(len)) => At::Bytes {
                offset: usize::try_from(off).unwrap_or(usize::MAX),
                len: usize::try_from(len).unwrap_or(0),
            },
            _ if loc.line() > 0 => At::LineCol {
                line: u32::try_from(loc.line()).unwrap_or(u32::MAX),
                column: u32::try_from(loc.column()).unwrap_or(u32::MAX),
            },
            _ => At::Unknown,
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Spanned<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SpannedVisitor<T>(std::marker::PhantomData<T>);

        /// The keys of both views, read without allocating.
        enum Field {
            Value,
            Referenced,
            Defined,
            FastSpan,
            Other,
        }

        impl<'de> Deserialize<'de> for Field {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct FieldVisitor;
                impl Visitor<'_> for FieldVisitor {
                    type Value = Field;
                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        f.write_str("a field name")
                    }
                    fn visit_str<E: de::Error>(self, key: &str) -> Result<Field, E> {
                        Ok(match key {
                            "value" => Field::Value,
                            "referenced" => Field::Referenced,
                            "defined" => Field::Defined,
                            FAST_SPAN_KEY => Field::FastSpan,
                            _ => Field::Other,
                        })
                    }
                }
                d.deserialize_identifier(FieldVisitor)
            }
        }

        impl<'de, T: Deserialize<'de>> Visitor<'de> for SpannedVisitor<T> {
            type Value = Spanned<T>;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a value")
            }

            fn visit_newtype_struct<D: Deserializer<'de>>(
                self,
                d: D,
            ) -> Result<Self::Value, D::Error> {
                d.deserialize_struct("Spanned", &[], self)
            }

            // serde-saphyr's view is `{<marker>: _, value: T, referenced: Location,
            // defined: Location}`; the plain reader's `{__fluxwave_byte_span: (offset, len),
            // value: T}`.
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut value = None;
                let mut at = At::Unknown;
                while let Some(key) = map.next_key::<Field>()? {
                    match key {
                        Field::Value => value = Some(map.next_value::<T>()?),
                        Field::Referenced => at = At::of(&map.next_value::<Location>()?),
                        // serde-saphyr's location deserializer serves only `Location`.
                        Field::Defined => {
                            map.next_value::<Location>()?;
                        }
                        Field::FastSpan => {
                            let (offset, len) = map.next_value::<(usize, usize)>()?;
                            at = At::Bytes { offset, len };
                        }
                        Field::Other => {
                            map.next_value::<de::IgnoredAny>()?;
                        }
                    }
                }
                let value = value.ok_or_else(|| de::Error::missing_field("value"))?;
                Ok(Spanned { value, at })
            }
        }

        deserializer
            .deserialize_newtype_struct("__yaml_spanned", SpannedVisitor(std::marker::PhantomData))
    }
}

fn located(path: &str, text: &Text, err: serde_saphyr::Error) -> SourceError {
    let (message, help) = explained(&err);
    let mut e = SourceError::new(path, message);
    if let Some(help) = help {
        e = e.help(help);
    }
    match err.location() {
        Some(loc) if loc.line() > 0 => e.at(text, span_of(text, &loc)),
        _ => e,
    }
}

/// The help for a file that trips a reading limit.
const LIMIT_HELP: &str =
    "fluxwave reads ordinary manifests well inside these limits; write the values out (no anchors and aliases), flatten the nesting, or split the file";

/// What went wrong, in fluxwave's words, and what to do: serde-saphyr's own wording names
/// its Rust API (`use Option<String>`, `set DuplicateKeyPolicy in Options`) or prints a
/// limit as Rust debug text (`Nodes { nodes: 250001 }`), neither of which means anything
/// to the author of a manifest. Everything else is its message in YAML's terms.
fn explained(err: &serde_saphyr::Error) -> (String, Option<&'static str>) {
    use serde_saphyr::budget::BudgetBreach as B;
    use serde_saphyr::Error as E;
    let limits = serde_saphyr::Budget::default();
    let limit = |what: String| (what, Some(LIMIT_HELP));
    let alias =
        || limit("aliases expand the file beyond what fluxwave reads (an alias bomb?)".to_string());
    match err.without_snippet() {
        E::AliasError { error, .. } => explained(error),
        E::Budget { breach, .. } => match breach {
            B::Depth { .. } => limit(format!(
                "the file is nested more than {} levels deep: beyond what fluxwave reads",
                limits.max_depth
            )),
            B::Nodes { .. } => limit(format!(
                "the file holds more than {} values (after aliases are expanded): beyond what fluxwave reads",
                limits.max_nodes
            )),
            B::Events { .. } => limit(format!(
                "the file holds more than {} YAML events (after aliases are expanded): beyond what fluxwave reads",
                limits.max_events
            )),
            B::Aliases { .. } => limit(format!(
                "the file uses more than {} aliases: beyond what fluxwave reads",
                limits.max_aliases
            )),
            B::Anchors { .. } => limit(format!(
                "the file defines more than {} anchors: beyond what fluxwave reads",
                limits.max_anchors
            )),
            B::Documents { .. } => (
                format!(
                    "the file holds more than {} YAML documents: beyond what fluxwave reads",
                    limits.max_documents
                ),
                Some("split the file into several"),
            ),
            B::ScalarBytes { .. } | B::InputBytes { .. } => (
                "the file holds more text than fluxwave reads".to_string(),
                Some("split the file, or keep generated bulk out of the GitOps tree"),
            ),
            B::MergeKeys { .. } => limit(format!(
                "the file uses more than {} merge keys (`<<`): beyond what fluxwave reads",
                limits.max_merge_keys
            )),
            B::AliasAnchorRatio { .. } | B::RecordedAnchorEvents { .. } | B::RecordedAnchorBytes { .. } => alias(),
            B::SequenceUnbalanced => ("a list or mapping ends that never started".to_string(), Some("check the brackets and indentation here")),
            _ => limit("the file goes beyond what fluxwave reads".to_string()),
        },
        E::AliasReplayCounterOverflow { .. }
        | E::AliasReplayLimitExceeded { .. }
        | E::AliasExpansionLimitExceeded { .. }
        | E::AliasReplayStackDepthExceeded { .. } => alias(),
        E::RecursiveReferencesRequireWeakTypes { .. } => (
            "an alias refers to the node that holds it (a cycle)".to_string(),
            Some("write the value out instead of the alias"),
        ),
        E::UnknownAnchor { .. } => (
            "an alias (`*name`) refers to an anchor (`&name`) defined nowhere before it".to_string(),
            Some("define the anchor before the alias, or write the value out"),
        ),
        E::DuplicateMappingKey { key, .. } => (
            match key {
                Some(k) => format!("key `{k}` appears twice in the same mapping"),
                None => "a key appears twice in the same mapping".to_string(),
            },
            Some("keep one of the two entries: which one a reader takes differs between tools"),
        ),
        E::NullIntoString { .. } | E::InvalidCharNull { .. } => (
            "a value is required here, and the field is empty".to_string(),
            Some("write a value after the colon, or remove the field"),
        ),
        E::MultipleDocuments { .. } => (
            "the file holds more than one YAML document, where one is read".to_string(),
            Some("keep one document in the file (remove the `---` separators)"),
        ),
        E::BinaryNotUtf8 { .. } | E::BytesNotSupportedMissingBinaryTag { .. } => (
            "a `!!binary` value is not text".to_string(),
            Some("write the value as a string"),
        ),
        E::Unexpected { expected, .. } => (
            format!("expected {}", expected_in_yaml(expected)),
            None,
        ),
        E::InvalidScalar { ty, .. } => (
            format!("expected {}", scalar_in_yaml(ty)),
            None,
        ),
        E::InvalidUtf8Input => (
            "the file is not UTF-8 text".to_string(),
            Some("save the file as UTF-8"),
        ),
        _ => {
            let message = plain_message(err);
            // A message from inside the reader (`internal ...`, `seed reused ...`) is no
            // fault of the file's author; it is still bad input, reported where it is.
            if message.starts_with("internal") || message.contains("recursion limit") {
                let message = if message.contains("recursion limit") {
                    format!(
                        "the file is nested more than {} levels deep: beyond what fluxwave reads",
                        limits.max_depth
                    )
                } else {
                    "cannot be read as YAML here".to_string()
                };
                return (message, Some(LIMIT_HELP));
            }
            (message, None)
        }
    }
}

/// What a value of the Rust type `ty` is, as a manifest's author writes it.
fn scalar_in_yaml(ty: &str) -> String {
    let range = |min: i128, max: u128| format!("a whole number from {min} to {max}");
    match ty {
        "u8" => range(0, u8::MAX.into()),
        "u16" => range(0, u16::MAX.into()),
        "u32" => range(0, u32::MAX.into()),
        "u64" | "usize" => range(0, u64::MAX.into()),
        "i8" => range(i8::MIN.into(), i8::MAX as u128),
        "i16" => range(i16::MIN.into(), i16::MAX as u128),
        "i32" => range(i32::MIN.into(), i32::MAX as u128),
        "i64" | "isize" => range(i64::MIN.into(), i64::MAX as u128),
        "u128" => range(0, u128::MAX),
        "i128" => range(i128::MIN, i128::MAX as u128),
        "f32" | "f64" | "floating point" => "a number".to_string(),
        "bool" | "boolean" => "`true` or `false`".to_string(),
        "char" => "a single character".to_string(),
        other if other.starts_with('u') || other.starts_with('i') => "a whole number".to_string(),
        _ => "a value of another kind".to_string(),
    }
}

/// serde-saphyr's name of the token it expected, as YAML calls it.
fn expected_in_yaml(expected: &str) -> String {
    match expected {
        "mapping start" | "empty mapping start" => "a mapping (`key: value` lines)",
        "sequence start" => "a list (`- item` lines)",
        "string scalar" => "a single value (text or a number), not a list or mapping",
        "scalar" | "single YAML node" | "value" => "a single value",
        "binary scalar" => "a `!!binary` value",
        "mapping end" | "empty mapping end" => "the end of the mapping",
        other => return format!("something else here (the reader wanted a {other})"),
    }
    .to_string()
}

/// serde-saphyr's message, without its own location suffix and snippet (ours are attached).
fn plain_message(err: &serde_saphyr::Error) -> String {
    let full = err.to_string();
    let first = full.lines().next().unwrap_or("invalid YAML").trim();
    let first = first.trim_start_matches("error: ");
    let first = match first.find(" at line ") {
        Some(i) => &first[..i],
        None => first,
    };
    // serde-saphyr may also lead with the location: `line 11 column 3: ...`.
    let first = match first.strip_prefix("line ").and_then(|r| r.split_once(": ")) {
        Some((loc, rest))
            if loc
                .split(' ')
                .next()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())) =>
        {
            rest
        }
        _ => first,
    };
    let first = first.trim();
    if first.is_empty() {
        "invalid YAML".to_string()
    } else {
        first.to_string()
    }
}

/// serde-saphyr's error as one line, without the snippet of the text it carries and with
/// any secret value of `text` it quotes masked (see `redact`).
pub fn brief_error(text: &str, err: &serde_saphyr::Error) -> String {
    let (message, _) = explained(err);
    let secrets = crate::redact::ranges(text);
    let message = crate::redact::message(&message, text, &secrets);
    match err.location() {
        Some(loc) if loc.line() > 0 => {
            format!("{message} (line {}, column {})", loc.line(), loc.column())
        }
        _ => message,
    }
}

/// Parses one YAML document into `T`.
pub fn parse<T: DeserializeOwned>(path: &str, text: &Text) -> Result<T, SourceError> {
    serde_saphyr::from_str::<T>(text).map_err(|e| located(path, text, e))
}

/// At most this many problems are reported of one file.
const MAX_PROBLEMS_PER_FILE: usize = 32;

/// `parse`, going on past unknown fields so that one run reports each of them: serde stops
/// at the first, so each unknown block-style entry is blanked out (offsets kept, so every
/// location stays that of the file) and the file read again, until it reads or fails
/// otherwise. The first problem of another kind ends the list (a wrong type, a missing
/// field), as does an unknown key written inline (`{a: 1, b: 2}`).
pub fn parse_reporting_all<T: DeserializeOwned>(
    path: &str,
    text: &Text,
) -> Result<T, Vec<SourceError>> {
    let first = match parse::<T>(path, text) {
        Ok(v) => return Ok(v),
        Err(e) => e,
    };
    let mut errors = vec![first];
    let mut blanked = text.as_str().to_owned();
    while errors.len() < MAX_PROBLEMS_PER_FILE {
        let last = &errors[errors.len() - 1];
        let Some((start, _)) = last
            .span
            .filter(|_| last.message.starts_with("unknown field"))
        else {
            break;
        };
        let Some(end) = block_entry_end(&blanked, start) else {
            break;
        };
        // Spaces in place of the entry, its line breaks kept.
        let entry: String = blanked[start..end]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        blanked.replace_range(start..end, &entry);
        let again: Text = Arc::new(blanked.clone());
        match parse::<T>(path, &again) {
            Ok(_) => break,
            Err(e) => {
                if e.span.is_some_and(|(s, _)| s == start) {
                    break;
                }
                let mut located = SourceError::new(path, e.message);
                if let Some(span) = e.span {
                    located = located.at(text, span);
                }
                if let Some(help) = e.help {
                    located = located.help(help);
                }
                errors.push(located);
            }
        }
    }
    Err(errors)
}

/// The end of the block-mapping entry whose key starts at `start`: its line, and every line
/// after it indented deeper (or a `- ` item at the key's own indentation, as YAML allows
/// under a key), blank lines and comments included. None when the key is not the first
/// thing on its line.
fn block_entry_end(text: &str, start: usize) -> Option<usize> {
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let indent = &text[line_start..start];
    if !indent.bytes().all(|b| b == b' ') {
        return None;
    }
    let column = indent.len();
    let mut end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    while end < text.len() {
        let next_start = end + 1;
        let next_end = text[next_start..]
            .find('\n')
            .map_or(text.len(), |i| next_start + i);
        let line = &text[next_start..next_end];
        let body = line.trim_start_matches(' ');
        let depth = line.len() - body.len();
        let inside = body.is_empty()
            || depth > column
            || (depth == column && (body.starts_with("- ") || body == "-"));
        if !inside {
            break;
        }
        end = next_end;
    }
    Some(end)
}

/// Parses a single-document file into an untyped value: plain block YAML through the fast
/// reader, everything else (and every file with a problem) through serde-saphyr.
pub fn parse_value(path: &str, text: &Text) -> Result<Value, SourceError> {
    match plain::parse_value(text) {
        Some(doc) => Ok(doc),
        None => parse(path, text),
    }
}

/// How kustomize reads a manifest: kyaml decodes it with go-yaml v3, whose untyped values
/// follow YAML 1.2's core schema for booleans (`true`, `True`, `TRUE` and the three `false`
/// only: `y`, `no`, `on`, `off` are strings, so `name: y` names an object `y`) and Go's
/// `strconv.ParseInt(s, 0, 64)` for integers (`012` is octal 10). `kubectl kustomize` on
/// `data: {a: y, b: no, c: on, i: True}` prints `a: "y"`, `b: "no"`, `c: "on"`, `i: true`.
pub(crate) fn manifest_options() -> serde_saphyr::Options {
    let mut o = serde_saphyr::Options::default();
    o.strict_booleans = true;
    o.legacy_octal_numbers = true;
    o
}

/// Parses every document of a multi-document manifest file into untyped values as kustomize
/// reads them (`manifest_options`; empty documents are left out).
pub fn parse_all(path: &str, text: &Text) -> Result<Vec<Value>, SourceError> {
    // Manifests in plain block style (most of them) are read by the plain reader; it declines
    // everything else, and every file with a problem, to serde-saphyr.
    let docs = match plain::parse_all(text) {
        Some(docs) => docs,
        None => {
            let docs: Vec<Value> =
                serde_saphyr::from_multiple_with_options::<Value>(text, manifest_options())
                    .map_err(|e| located(path, text, e))?;
            docs.into_iter().filter(|d| !d.is_null()).collect()
        }
    };
    // A Secret's values are masked wherever this run prints them (a file or object name).
    crate::redact::remember_documents(&docs);
    Ok(docs)
}

/// The documents of a patch as kustomize reads them, `null` documents included: a
/// strategic-merge patch as a manifest (kyaml, `manifest_options`), a JSON 6902 patch (a
/// list of operations) through sigs.k8s.io/yaml, with YAML 1.1's booleans (`kubectl
/// kustomize` on `{op: add, path: /metadata/namespace, value: no}` sets `namespace: false`).
pub fn patch_documents(text: &str) -> Result<Vec<Value>, serde_saphyr::Error> {
    let docs: Vec<Value> = serde_saphyr::from_multiple_with_options(text, manifest_options())?;
    if !docs.iter().any(Value::is_array) {
        return Ok(docs);
    }
    let loose: Vec<Value> = serde_saphyr::from_multiple_with_options(text, yaml_1_1_options())?;
    Ok(docs
        .into_iter()
        .zip(loose.iter().chain(std::iter::repeat(&Value::Null)))
        .map(|(doc, loose)| {
            if doc.is_array() {
                yaml_1_1(doc, loose)
            } else {
                doc
            }
        })
        .collect())
}

/// serde-saphyr's YAML 1.1 reading: every 1.1 boolean spelling, whatever its case.
fn yaml_1_1_options() -> serde_saphyr::Options {
    let mut o = serde_saphyr::Options::default();
    o.legacy_octal_numbers = true;
    o
}

/// go-yaml v2's booleans (`resolve.go`), the YAML 1.1 words in exactly these spellings.
const YAML_1_1_BOOLS: [(&str, bool); 22] = [
    ("y", true),
    ("Y", true),
    ("yes", true),
    ("Yes", true),
    ("YES", true),
    ("on", true),
    ("On", true),
    ("ON", true),
    ("true", true),
    ("True", true),
    ("TRUE", true),
    ("n", false),
    ("N", false),
    ("no", false),
    ("No", false),
    ("NO", false),
    ("off", false),
    ("Off", false),
    ("OFF", false),
    ("false", false),
    ("False", false),
    ("FALSE", false),
];

/// Parses a kustomization file as kustomize reads it: `types.Kustomization.Unmarshal` goes
/// through sigs.k8s.io/yaml, which converts the file to JSON with go-yaml v2 (YAML 1.1), so
/// `namespace: no` is the boolean false (kustomize then fails: "json: cannot unmarshal bool
/// into Go struct field Kustomization.namespace of type string"), while a mixed spelling
/// such as `yEs` stays a string. An empty file is `null`.
pub fn parse_kustomization(path: &str, text: &Text) -> Result<Value, SourceError> {
    if let Some(doc) = plain::parse_value(text) {
        return Ok(doc);
    }
    // The plain scalars that YAML 1.1 reads as booleans are where a reading with every
    // YAML 1.1 spelling (serde-saphyr's, which ignores case) and one with YAML 1.2's differ;
    // there the text decides, through go-yaml v2's list.
    let strict: Value = serde_saphyr::from_str_with_options(text, manifest_options())
        .map_err(|e| located(path, text, e))?;
    let loose: Value = serde_saphyr::from_str_with_options(text, yaml_1_1_options())
        .map_err(|e| located(path, text, e))?;
    Ok(yaml_1_1(strict, &loose))
}

/// `strict` with each string that `loose` reads as a boolean resolved by go-yaml v2's list.
fn yaml_1_1(strict: Value, loose: &Value) -> Value {
    match (strict, loose) {
        (Value::String(s), Value::Bool(_)) => YAML_1_1_BOOLS
            .iter()
            .find(|(w, _)| *w == s)
            .map_or(Value::String(s), |(_, b)| Value::Bool(*b)),
        (Value::Array(items), Value::Array(other)) => Value::Array(
            items
                .into_iter()
                .zip(other.iter().chain(std::iter::repeat(&Value::Null)))
                .map(|(a, b)| yaml_1_1(a, b))
                .collect(),
        ),
        (Value::Object(map), Value::Object(other)) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let o = other.get(&k).unwrap_or(&Value::Null);
                    let v = yaml_1_1(v, o);
                    (k, v)
                })
                .collect(),
        ),
        (v, _) => v,
    }
}

/// Writes `value` as block YAML; mappings keep their key order.
pub fn emit(value: &Value) -> String {
    emit_with_comments(value, &[])
}

/// Like `emit`, with a trailing comment on the scalars at these JSON pointers (such as
/// `/spec/template/spec/containers/0/image`): how Flux's image automation finds the setter
/// marker `# {"$imagepolicy": "ns:name"}`. A comment is one line of printable characters:
/// line breaks and every character a YAML reader refuses (controls, BOM, line separators)
/// become spaces, so a comment can never inject YAML or make the file unreadable.
pub fn emit_with_comments(value: &Value, comments: &[(&str, &str)]) -> String {
    let mut e = Emitter {
        out: String::new(),
        path: String::new(),
        comments,
        blocks: false,
    };
    e.node(value, 0);
    e.out
}

/// Like `emit`, a string of several lines written as a literal block (`|`) where that reads
/// back as the same string: for a person to read, and for a diff to show the line that
/// changes rather than one long quoted string.
pub fn emit_for_reading(value: &Value) -> String {
    let mut e = Emitter {
        out: String::new(),
        path: String::new(),
        comments: &[],
        blocks: true,
    };
    e.node(value, 0);
    e.out
}

/// The header (`|` or `|-`) of `s` as a literal block scalar, when it can be one that every
/// reader reads back as `s`: several lines of printable characters (no tab, no carriage
/// return), none ending in a blank or made of blanks only, the first not starting with one,
/// and at most one final line break.
fn literal_block(s: &str) -> Option<&'static str> {
    let (body, header) = match s.strip_suffix('\n') {
        Some(b) if !b.ends_with('\n') => (b, "|"),
        Some(_) => return None,
        None => (s, "|-"),
    };
    if !body.contains('\n') || body.starts_with(' ') {
        return None;
    }
    let printable = body
        .chars()
        .all(|c| c == '\n' || (comment_safe(c) && c != '\t'));
    let lines_ok = body
        .split('\n')
        .all(|l| !l.ends_with(' ') && (l.is_empty() || !l.trim_start().is_empty()));
    (printable && lines_ok).then_some(header)
}

struct Emitter<'a> {
    out: String,
    /// JSON pointer of the node being written, kept only where there are comments to place.
    path: String,
    comments: &'a [(&'a str, &'a str)],
    /// Whether strings of several lines are literal blocks (`emit_for_reading`).
    blocks: bool,
}

impl Emitter<'_> {
    fn node(&mut self, value: &Value, indent: usize) {
        match value {
            Value::Object(map) if !map.is_empty() => {
                for (k, v) in map {
                    self.pad(indent);
                    self.mapping_entry(k, v, indent);
                }
            }
            Value::Array(items) if !items.is_empty() => {
                for (i, v) in items.iter().enumerate() {
                    let len = self.path.len();
                    if !self.comments.is_empty() {
                        self.path.push('/');
                        self.path.push_str(&i.to_string());
                    }
                    self.pad(indent);
                    self.out.push('-');
                    match v {
                        Value::Object(map) if !map.is_empty() => {
                            // The first key goes on the dash line; the rest align with it.
                            for (n, (k, v)) in map.iter().enumerate() {
                                if n == 0 {
                                    self.out.push(' ');
                                } else {
                                    self.pad(indent + 2);
                                }
                                self.mapping_entry(k, v, indent + 2);
                            }
                        }
                        _ => self.child(v, indent),
                    }
                    self.path.truncate(len);
                }
            }
            other => {
                self.pad(indent);
                write_scalar(&mut self.out, other);
                self.trailing_comment();
                self.out.push('\n');
            }
        }
    }

    fn pad(&mut self, indent: usize) {
        self.out.extend(std::iter::repeat_n(' ', indent));
    }

    fn mapping_entry(&mut self, k: &str, v: &Value, indent: usize) {
        let len = self.path.len();
        if !self.comments.is_empty() {
            self.path.push('/');
            self.path.push_str(&k.replace('~', "~0").replace('/', "~1"));
        }
        let at = self.out.len();
        write_str_scalar(&mut self.out, k);
        // An implicit key is at most 1024 characters (YAML 1.2, 7.4.2); a longer one is
        // written as an explicit `? key` with its `:` on the next line, at the key's column.
        // (A text of at most 1000 bytes has at most 1000 characters.)
        if self.out.len() - at > 1000 && self.out[at..].chars().count() > 1000 {
            self.out.insert_str(at, "? ");
            self.out.push('\n');
            self.pad(indent);
        }
        self.out.push(':');
        self.child(v, indent);
        self.path.truncate(len);
    }

    fn child(&mut self, v: &Value, indent: usize) {
        match v {
            Value::Object(m) if !m.is_empty() => {
                self.out.push('\n');
                self.node(v, indent + 2);
            }
            Value::Array(a) if !a.is_empty() => {
                self.out.push('\n');
                self.node(v, indent + 2);
            }
            Value::String(s) if self.blocks && s.contains('\n') && literal_block(s).is_some() => {
                self.out.push(' ');
                self.out.push_str(literal_block(s).unwrap_or("|"));
                self.out.push('\n');
                for line in s.strip_suffix('\n').unwrap_or(s).split('\n') {
                    if !line.is_empty() {
                        self.pad(indent + 2);
                        self.out.push_str(line);
                    }
                    self.out.push('\n');
                }
            }
            _ => {
                self.out.push(' ');
                write_scalar(&mut self.out, v);
                self.trailing_comment();
                self.out.push('\n');
            }
        }
    }

    fn trailing_comment(&mut self) {
        if let Some((_, c)) = self.comments.iter().find(|(p, _)| *p == self.path) {
            self.out.push_str(" # ");
            self.out
                .extend(c.chars().map(|c| if comment_safe(c) { c } else { ' ' }));
        }
    }
}

/// Whether a character may stand in a comment: YAML's printable set, less the characters a
/// YAML 1.1 reader takes for a line break (NEL, LS, PS) and the byte order mark.
fn comment_safe(c: char) -> bool {
    !c.is_control()
        && !matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}'
        )
}

/// A scalar as YAML text: plain where every reader (1.1 and 1.2) reads it back as the same
/// string, double-quoted otherwise.
pub fn scalar(v: &Value) -> String {
    let mut out = String::new();
    write_scalar(&mut out, v);
    out
}

/// `scalar(v)`, written at the end of `out`.
fn write_scalar(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            use std::fmt::Write;
            let _ = write!(out, "{n}");
        }
        Value::String(s) => write_str_scalar(out, s),
        Value::Array(_) => out.push_str("[]"),
        Value::Object(_) => out.push_str("{}"),
    }
}

/// The string `s` as a scalar (`scalar`), written at the end of `out`.
fn write_str_scalar(out: &mut String, s: &str) {
    if plain_safe(s) {
        out.push_str(s);
    } else {
        double_quoted(out, s);
    }
}

/// A double-quoted YAML scalar, written at the end of `out`. Every character YAML does not
/// allow as is (controls, DEL, the C1 block, BOM, non-characters, LS and PS) is escaped:
/// JSON's escaping, enough for JSON, leaves DEL and C1 raw, which a YAML reader refuses.
fn double_quoted(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() || !comment_safe(c) => {
                use std::fmt::Write;
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn plain_safe(s: &str) -> bool {
    const RESERVED: &[&str] = &[
        "y", "n", "yes", "no", "on", "off", "true", "false", "null", "~", "",
        // the merge key: a reader merges the mapping it names instead of keeping the key
        "<<",
    ];
    if RESERVED.iter().any(|r| r.eq_ignore_ascii_case(s)) {
        return false;
    }
    // Infinity and not-a-number: `.inf`, `-.Inf`, `.NaN`.
    let unsigned = s.strip_prefix(['-', '+']).unwrap_or(s);
    if unsigned.eq_ignore_ascii_case(".inf") || unsigned.eq_ignore_ascii_case(".nan") {
        return false;
    }
    // Flux substitutes `${VAR}` in the text before parsing it: a quoted scalar stays a string
    // whatever the variable holds (`1000`, `yes`), a plain one would change type.
    if crate::envsubst::opens_variable(s) {
        return false;
    }
    let first = s.chars().next().unwrap_or(' ');
    if first.is_ascii_digit() || matches!(first, '-' | '+' | '.') {
        // Numbers (hex 0xece and octal 0o17 too), dates, versions like 1.20 and octal-looking
        // 012: always quoted.
        if s.chars()
            .all(|c| c.is_ascii_hexdigit() || "-+.:_xXoO".contains(c))
        {
            return false;
        }
    }
    if "!&*{}[],#|>@`\"'%?:- ".contains(first) {
        return first == '-'
            && s.len() > 1
            && !s.starts_with("- ")
            && !s.starts_with("--- ")
            && plain_tail(s)
            && !s.ends_with(' ')
            && !s.ends_with(':');
    }
    plain_tail(s) && !s.ends_with(' ') && !s.ends_with(':')
}

/// Whether `s` holds none of `: `, ` #`, a line break, a tab or a character a comment may not
/// hold (`comment_safe`): one pass over its bytes, and over its characters only where it is
/// not all ASCII.
fn plain_tail(s: &str) -> bool {
    let b = s.as_bytes();
    let ascii_ok = b.iter().enumerate().all(|(i, &c)| match c {
        b':' | b' ' => b.get(i + 1) != Some(if c == b':' { &b' ' } else { &b'#' }),
        // controls, line breaks and tabs among them
        c => c >= 0x20 && c != 0x7f,
    });
    ascii_ok && (s.is_ascii() || s.chars().all(comment_safe))
}

#[cfg(test)]
mod tests {
    /// A text's derivation is made once however many trees hold the text, and again for an
    /// equal text in another allocation.
    #[test]
    fn what_is_derived_from_a_text_is_made_once_per_text() {
        let made = std::cell::Cell::new(0);
        let count = |t: &super::Text| {
            made.set(made.get() + 1);
            t.len()
        };
        let memo = super::PerText::new();
        let a: super::Text = std::sync::Arc::new("kind: A\n".into());
        let b: super::Text = std::sync::Arc::new("kind: A\n".into());
        assert_eq!(*memo.get(&a, || count(&a)), 8);
        assert_eq!(*memo.get(&a.clone(), || count(&a)), 8);
        assert_eq!(made.get(), 1);
        assert_eq!(*memo.get(&b, || count(&b)), 8);
        assert_eq!(made.get(), 2);
    }

    #[test]
    fn strings_of_several_lines_are_literal_blocks_that_read_back_the_same() {
        let strings = [
            "a\nb\n",
            "a\nb",
            "a\n\nb\n",
            "key: value\n  nested: [1, 2]\n# not a comment\n",
            "- item\n---\n...\n",
            "a\nb\n\n",
            " leading\nspace\n",
            "trailing \nspace",
            "tab\there\n",
            "blank\n  \nline\n",
            "one line",
            "\n",
            "crlf\r\nline\n",
            "é ü 中\n\u{2028}\n",
        ];
        for s in strings {
            let v = serde_json::json!({"data": {"k": s}, "list": [s, {"x": s}]});
            let text = super::emit_for_reading(&v);
            let back: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
            assert_eq!(back, v, "{s:?}:\n{text}");
        }
        let text = super::emit_for_reading(&serde_json::json!({"k": "a\nb\n"}));
        assert_eq!(text, "k: |\n  a\n  b\n");
        let text = super::emit_for_reading(&serde_json::json!({"k": ["a\n\nb"]}));
        assert_eq!(text, "k:\n  - |-\n    a\n\n    b\n");
    }

    use super::*;
    use serde_json::json;

    fn alias_bomb() -> String {
        let mut s = "l0: &l0 [a, a, a, a, a, a, a, a, a]\n".to_string();
        for i in 1..=9 {
            let refs = vec![format!("*l{}", i - 1); 9].join(", ");
            s.push_str(&format!("l{i}: &l{i} [{refs}]\n"));
        }
        s
    }

    /// Every error the YAML reader gives reaches the user in fluxwave's words, located, with
    /// what to do where there is something to do: never the reader's Rust API (`Options`,
    /// `Option<String>`, `from_str_multiple`) nor a limit as Rust debug text.
    #[test]
    fn reader_errors_are_said_in_the_products_words() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Named {
            name: String,
        }
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        let nested: String = (0..100)
            .map(|i| format!("{}k{i}:\n", "  ".repeat(i)))
            .collect::<String>()
            + &"  ".repeat(100)
            + "x: 1\n";
        let cases: Vec<(String, &str)> = vec![
            (alias_bomb(), "values (after aliases are expanded)"),
            (deep, "nested more than 64 levels deep"),
            (nested, "nested more than 64 levels deep"),
            ("a: 1\nb: 2\na: 3\n".into(), "key `a` appears twice"),
            ("x: &x [*x]\n".into(), "refers to the node that holds it"),
            ("a: *nowhere\n".into(), "defined nowhere before it"),
        ];
        for (text, says) in cases {
            let text = Text::new(text);
            let e = parse_all("f.yaml", &text).unwrap_err();
            assert!(e.message.contains(says), "{says:?}: {}", e.message);
            assert!(e.line_col().is_some(), "{says:?}: located");
            assert!(e.help.is_some(), "{says:?}: a help line");
            for leak in [
                "Options",
                "Option<",
                "{ ",
                "budget breached",
                "from_str",
                "Rust",
            ] {
                assert!(!e.message.contains(leak), "{leak:?} in {}", e.message);
            }
        }
        let typed = [
            ("name:\n", "the field is empty"),
            ("name: a\n---\nname: b\n", "more than one YAML document"),
            ("[a]\n", "expected a mapping"),
            ("name: [a]\n", "expected a single value"),
        ];
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Port {
            port: u16,
            on: Option<bool>,
        }
        for (text, says) in [
            ("port: 70000\n", "expected a whole number from 0 to 65535"),
            ("port: 1\non: maybe\n", "expected `true` or `false`"),
        ] {
            let e = parse::<Port>("f.yaml", &Text::new(text.into())).unwrap_err();
            assert!(e.message.contains(says), "{says:?}: {}", e.message);
            assert!(!e.message.contains("u16"), "{}", e.message);
        }
        for (text, says) in typed {
            let e = parse::<Named>("f.yaml", &Text::new(text.into())).unwrap_err();
            assert!(e.message.contains(says), "{says:?}: {}", e.message);
            for leak in ["Options", "Option<", "from_str", "struct Named", "weak"] {
                assert!(!e.message.contains(leak), "{leak:?} in {}", e.message);
            }
        }
    }

    /// What `kubectl kustomize` (v5.5, kyaml on go-yaml v3) prints for this manifest:
    /// `name: "y"`, `namespace: "no"`, every YAML 1.1 word a string, `True`/`FALSE` booleans,
    /// `012` the number 10, `tRUE` a string.
    #[test]
    fn reads_manifests_as_kustomize_does() {
        let text = Text::new(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\n  namespace: no\n  labels: {a: on, b: yes, c: off, d: n, f: NO, g: Yes}\ndata:\n  a: y\n  g: Y\n  h: ON\n  k: Off\n  i: True\n  j: FALSE\n  o: 012\n  t: tRUE\n"
                .to_string(),
        );
        let docs = parse_all("cm.yaml", &text).unwrap();
        assert_eq!(
            docs,
            [serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "y", "namespace": "no",
                    "labels": {"a": "on", "b": "yes", "c": "off", "d": "n", "f": "NO", "g": "Yes"}},
                "data": {"a": "y", "g": "Y", "h": "ON", "k": "Off", "i": true, "j": false,
                    "o": 10, "t": "tRUE"}})]
        );
    }

    /// sigs.k8s.io/yaml's go-yaml v2 reads a kustomization: YAML 1.1 booleans in v2's
    /// spellings only.
    #[test]
    fn reads_kustomizations_as_yaml_1_1() {
        let text = Text::new(
            "namespace: no\nnamePrefix: yEs\nlist: [y, Y, on, Off, TRUE, nO, 'no', 012]\n"
                .to_string(),
        );
        assert_eq!(
            parse_kustomization("k.yaml", &text).unwrap(),
            json!({"namespace": false, "namePrefix": "yEs",
                "list": [true, true, true, false, true, "nO", "no", 10]})
        );
        assert_eq!(
            parse_kustomization("k.yaml", &Text::new(String::new())).unwrap(),
            Value::Null
        );
    }

    /// `kubectl kustomize` (v5.5): a strategic-merge patch's `namespace: no` is the string
    /// `no` (it targets `ConfigMap/no/a`), a JSON 6902 operation's `value: no` is `false`.
    #[test]
    fn reads_patches_as_kustomize_does() {
        let smp = patch_documents("kind: ConfigMap\nmetadata: {name: a, namespace: no}\n").unwrap();
        assert_eq!(smp[0]["metadata"]["namespace"], "no");
        let ops = patch_documents("- {op: add, path: /metadata/namespace, value: no}\n- {op: add, path: /data, value: {a: on, b: yEs}}\n").unwrap();
        assert_eq!(ops[0][0]["value"], false);
        assert_eq!(ops[0][1]["value"], json!({"a": true, "b": "yEs"}));
    }

    #[test]
    fn emits_block_yaml_in_key_order() {
        let v = json!({"spec": {"dependsOn": [{"name": "platform-config"}], "prune": true,
            "interval": "10m", "path": "./apps/wave-0", "list": ["a", "b"],
            "postBuild": {"substituteFrom": [{"kind": "ConfigMap", "name": "cluster-vars"}]}}});
        assert_eq!(
            emit(&v),
            "spec:\n  dependsOn:\n    - name: platform-config\n  prune: true\n  interval: 10m\n  \
             path: ./apps/wave-0\n  list:\n    - a\n    - b\n  postBuild:\n    substituteFrom:\n      \
             - kind: ConfigMap\n        name: cluster-vars\n"
        );
    }

    #[test]
    fn quotes_what_yaml_1_1_misreads() {
        for s in [
            "on",
            "yes",
            "No",
            "1.20",
            "012",
            "true",
            "",
            "a: b",
            "#x",
            "*x",
            "1e3",
            "${CLUSTER_TZ:=UTC}",
            "0xece",
            "0o17",
            ".inf",
            "-.Inf",
            ".NaN",
            "<<",
        ] {
            assert!(scalar(&json!(s)).starts_with('"'), "{s} must be quoted");
        }
        for s in ["sops", "./apps/wave-0", "flux-system", "10m", "sops-age"] {
            assert_eq!(scalar(&json!(s)), s);
        }
    }

    #[test]
    fn trailing_comment_lands_on_the_pointed_scalar() {
        let v = json!({"spec": {"containers": [{"name": "a", "image": "x:1"}, {"name": "b", "image": "y:2"}]}});
        let text = emit_with_comments(
            &v,
            &[(
                "/spec/containers/1/image",
                "{\"$imagepolicy\": \"flux-system:b\"}",
            )],
        );
        assert_eq!(
            text,
            "spec:\n  containers:\n    - name: a\n      image: x:1\n    - name: b\n      \
             image: y:2 # {\"$imagepolicy\": \"flux-system:b\"}\n"
        );
        let back: Value = serde_saphyr::from_str(&text).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn emitted_text_reads_back_equal() {
        let v = json!({"a": ["on", "1.20", {"b": "x: y", "c": [1, 2]}], "d": {"e": null}});
        let back: Value = serde_saphyr::from_str(&emit(&v)).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn a_block_entry_ends_where_its_indentation_does() {
        let text = "a:\n  bogus:\n  - x\n  -\n\n    # note\n  b: 1\nc: 2\n";
        let start = text.find("bogus").unwrap();
        assert_eq!(
            &text[start..block_entry_end(text, start).unwrap()],
            "bogus:\n  - x\n  -\n\n    # note"
        );
        // An inline key cannot be blanked alone.
        let inline = "a: {b: 1, bogus: 2}\n";
        assert_eq!(block_entry_end(inline, inline.find("bogus").unwrap()), None);
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Two {
        a: u32,
        b: Option<Inner>,
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Inner {
        c: u32,
    }

    #[test]
    fn reading_goes_on_past_each_unknown_field() {
        let text: Text = Arc::new("x: 1\na: 1\nb:\n  y:\n    - 1\n  c: 2\nz: 3\n".into());
        let errors = parse_reporting_all::<Two>("f.yaml", &text).unwrap_err();
        let places: Vec<String> = errors.iter().map(|e| e.located()).collect();
        assert_eq!(places.len(), 3, "{places:?}");
        for (e, (line, field)) in errors.iter().zip([(1, "x"), (4, "y"), (7, "z")]) {
            assert_eq!(e.line_col().map(|(l, _)| l), Some(line), "{places:?}");
            assert!(e.message.contains(&format!("`{field}`")), "{places:?}");
        }
        // A file with only unknown fields blanked out reads: no problem is invented.
        let fine: Text = Arc::new("a: 1\n".into());
        assert!(parse_reporting_all::<Two>("f.yaml", &fine).is_ok());
    }

    /// The one-pass `plain_tail` says what the plain definition says, on every character
    /// class it tells apart: ASCII, controls, C1, line separators, BOM and wide characters,
    /// next to the blanks, colons and hashes it looks at in pairs.
    #[test]
    fn plain_tail_is_its_plain_definition() {
        let plain = |s: &str| {
            !s.contains(": ")
                && !s.contains(" #")
                && !s.contains('\n')
                && !s.contains('\t')
                && s.chars().all(super::comment_safe)
        };
        let parts = [
            "a", " ", ":", "#", "\n", "\t", "\r", "\u{7f}", "\u{85}", "\u{a0}", "\u{2028}",
            "\u{feff}", "é", "中", "🙂", "\u{0}",
        ];
        let mut checked = 0;
        for a in parts {
            for b in parts {
                for c in parts {
                    let s = format!("{a}{b}{c}");
                    assert_eq!(super::plain_tail(&s), plain(&s), "{s:?}");
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, parts.len().pow(3));
    }
}
