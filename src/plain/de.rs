//! A serde `Deserializer` over the parsed `Node`s, feeding the derived `Deserialize` impls;
//! anything it cannot hand over exactly is a `Decline`.

use super::plain_string;
use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};

use super::parser::{Node, Style};
use super::FAST_SPAN_KEY;

/// Declining: the reason is never shown (serde-saphyr reads the file again and reports).
#[derive(Debug)]
pub(super) struct Decline;

impl std::fmt::Display for Decline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("outside the plain reader's subset")
    }
}

impl std::error::Error for Decline {}

impl de::Error for Decline {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Decline
    }
}

pub(super) struct De<'n, 'a> {
    pub(super) node: &'n Node<'a>,
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
