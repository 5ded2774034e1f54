//! JSON 6902 as kustomize applies it: its `patchjson6902` filter hands the object, as JSON,
//! to gopkg.in/evanphx/json-patch.v4 (v4.13.0, pinned by kustomize's api) with the library's
//! default options. That library is more lenient than RFC 6902, and kustomize users rely on
//! it (a `replace` of `/spec/replicas` on a Deployment without them), so each rule here is
//! the library's (`patch.go`), not the RFC's:
//!
//! - a path is split at every `/` and its first segment dropped, whatever it is (`spec/x`
//!   is `/x`); a path with no `/` names nothing;
//! - an object's missing key reads as null: `replace` sets it, `copy` copies null, `test`
//!   of null passes, and only `remove` (and `move`, which removes) fails on it;
//! - array indices are read as Go's `strconv.Atoi` (`+1`, `01`), and negative ones count
//!   from the end (`-1` is the last element; for `add`, `-1` appends);
//! - an operation without `value` uses null;
//! - `replace` and `test` of the empty path act on the whole document.
//!
//! `tests/fixtures/upstream/json6902.tsv` holds the library's own answers to a table of
//! cases (written by `flux-oracle json6902`); the test below holds this port to them, and
//! tests/cli/differential.rs holds the table to the library.

use serde_json::Value;

use super::super::error::OperationError;

/// Applies JSON 6902 operations to `doc`, in order; the first that fails stops the patch.
pub fn json6902(doc: &mut Value, ops: &[Value]) -> Result<(), OperationError> {
    for op in ops {
        apply(doc, op)?;
    }
    Ok(())
}

fn apply(doc: &mut Value, op: &Value) -> Result<(), OperationError> {
    let field = |k: &str| op.get(k).and_then(Value::as_str);
    let path = field("path").ok_or(OperationError::NeedsPath)?;
    let value = || op.get("value").cloned().unwrap_or(Value::Null);
    let missing = || OperationError::NoPath(path.to_string());
    match field("op") {
        Some("add") => {
            let (c, key) = container(doc, path).ok_or_else(missing)?;
            add(c, &key, value(), path)
        }
        Some("remove") => {
            let (c, key) = container(doc, path).ok_or_else(missing)?;
            remove(c, &key, path).map(drop)
        }
        Some("replace") if path.is_empty() => match op.get("value") {
            Some(v @ (Value::Object(_) | Value::Array(_))) => {
                *doc = v.clone();
                Ok(())
            }
            _ => Err(OperationError::WholeDocument),
        },
        Some("replace") => {
            let (c, key) = container(doc, path).ok_or_else(missing)?;
            match c {
                Value::Array(a) => {
                    let i = existing(a.len(), &key, path)?;
                    a[i] = value();
                }
                Value::Object(m) => {
                    m.insert(key, value());
                }
                _ => return Err(missing()),
            }
            Ok(())
        }
        Some(kind @ ("move" | "copy")) => {
            let from = field("from").ok_or(OperationError::NeedsFrom(kind_name(kind)))?;
            let gone = || OperationError::NoPath(from.to_string());
            let (c, key) = container(doc, from).ok_or_else(gone)?;
            let v = if kind == "move" {
                remove(c, &key, from)?
            } else {
                get(c, &key, from)?.cloned().unwrap_or(Value::Null)
            };
            let (c, key) = container(doc, path).ok_or_else(missing)?;
            add(c, &key, v, path)
        }
        Some("test") => {
            let got = if path.is_empty() {
                Some(&*doc)
            } else {
                let (c, key) = container(doc, path).ok_or_else(missing)?;
                get(c, &key, path)?
            };
            let want = op.get("value");
            let passes = match got.filter(|v| !v.is_null()) {
                None => want.is_none_or(Value::is_null),
                Some(v) => want == Some(v),
            };
            if passes {
                Ok(())
            } else {
                Err(OperationError::TestFailed(path.to_string()))
            }
        }
        other => Err(OperationError::Unknown(other.map(String::from))),
    }
}

fn kind_name(kind: &str) -> &'static str {
    if kind == "move" {
        "move"
    } else {
        "copy"
    }
}

/// The object or array holding the last segment of `path`, and that segment (the library's
/// `findObject`): every segment between the first and the last must name an object or an
/// array; a missing key, null, a scalar or a bad index names nothing.
fn container<'v>(doc: &'v mut Value, path: &str) -> Option<(&'v mut Value, String)> {
    let mut segments: Vec<&str> = path.split('/').collect();
    if segments.len() < 2 {
        return None;
    }
    let key = unescape(segments.pop()?);
    let mut cur = doc;
    for s in &segments[1..] {
        cur = match cur {
            Value::Object(m) => m.get_mut(&unescape(s)),
            Value::Array(a) => {
                let i = existing(a.len(), s, path).ok()?;
                a.get_mut(i)
            }
            _ => None,
        }?;
        if !(cur.is_object() || cur.is_array()) {
            return None;
        }
    }
    Some((cur, key))
}

/// RFC 6901's escapes, read left to right in one pass as Go's `strings.Replacer` does.
fn unescape(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    let mut chars = segment.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('~', Some('1')) => {
                chars.next();
                out.push('/');
            }
            ('~', Some('0')) => {
                chars.next();
                out.push('~');
            }
            _ => out.push(c),
        }
    }
    out
}

/// An index as `strconv.Atoi` reads it.
fn atoi(key: &str, path: &str) -> Result<i64, OperationError> {
    key.parse::<i64>().map_err(|_| index_error(key, path))
}

fn index_error(key: &str, path: &str) -> OperationError {
    OperationError::Index {
        index: key.to_string(),
        path: path.to_string(),
    }
}

/// The position of an element that exists, a negative index counting from the end.
fn existing(len: usize, key: &str, path: &str) -> Result<usize, OperationError> {
    let len = i64::try_from(len).unwrap_or(i64::MAX);
    let mut i = atoi(key, path)?;
    if i < 0 {
        if i < -len {
            return Err(index_error(key, path));
        }
        i += len;
    }
    usize::try_from(i)
        .ok()
        .filter(|_| i < len)
        .ok_or_else(|| index_error(key, path))
}

/// The element or value under `key`; an object's missing key is none, not an error.
fn get<'v>(c: &'v Value, key: &str, path: &str) -> Result<Option<&'v Value>, OperationError> {
    match c {
        Value::Object(m) => Ok(m.get(key)),
        Value::Array(a) => existing(a.len(), key, path).map(|i| a.get(i)),
        _ => Err(OperationError::NoPath(path.to_string())),
    }
}

fn add(c: &mut Value, key: &str, value: Value, path: &str) -> Result<(), OperationError> {
    match c {
        Value::Object(m) => {
            m.insert(key.to_string(), value);
        }
        Value::Array(a) if key == "-" => a.push(value),
        Value::Array(a) => {
            // The array one longer than it is: an index may be its length, and -1 appends.
            let len = i64::try_from(a.len()).unwrap_or(i64::MAX) + 1;
            let mut i = atoi(key, path)?;
            if i >= len || i < -len {
                return Err(index_error(key, path));
            }
            if i < 0 {
                i += len;
            }
            let i = usize::try_from(i).map_err(|_| index_error(key, path))?;
            a.insert(i, value);
        }
        _ => return Err(OperationError::NoPath(path.to_string())),
    }
    Ok(())
}

fn remove(c: &mut Value, key: &str, path: &str) -> Result<Value, OperationError> {
    match c {
        Value::Object(m) => m
            .remove(key)
            .ok_or_else(|| OperationError::NoPath(path.to_string())),
        Value::Array(a) => {
            let i = existing(a.len(), key, path)?;
            Ok(a.remove(i))
        }
        _ => Err(OperationError::NoPath(path.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every case of the upstream table: the same document, or an error where the library
    /// fails.
    #[test]
    fn agrees_with_the_library_on_its_table() {
        let table = include_str!("../../../tests/fixtures/upstream/json6902.tsv");
        let cases = crate::upstream::cases(table, 2);
        for c in &cases {
            let patch = c.inputs[1];
            let mut doc: Value = serde_json::from_str(c.inputs[0]).unwrap();
            let ops: Vec<Value> = serde_json::from_str(patch).unwrap();
            let got = json6902(&mut doc, &ops).map(|()| doc).ok();
            let want =
                (c.answer != "error").then(|| serde_json::from_str::<Value>(c.answer).unwrap());
            assert_eq!(got, want, "line {}: {patch}", c.line);
        }
        assert!(cases.len() >= 90, "{} cases", cases.len());
    }
}
