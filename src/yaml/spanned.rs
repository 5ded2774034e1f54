//! Where a value was written: serde-saphyr's locations and the plain reader's byte spans
//! (`plain::FAST_SPAN_KEY`) both read into one small `Spanned`, and turned into the byte span
//! an error underlines.

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_saphyr::Location;

use crate::plain::FAST_SPAN_KEY;

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
