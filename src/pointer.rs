//! JSON Pointer (RFC 6901) lookups, read exactly as serde_json's `Value::pointer` reads them
//! but without allocating for a pointer that escapes nothing: serde_json makes two strings
//! for each of its tokens, and a history's steps read a few pointers of every HelmRelease
//! and Kustomization at every step. A leaf: it imports nothing of the crate.

use serde_json::Value;

/// `Value::pointer`, as a method of anything that derefs to a `Value`.
pub trait Pointer {
    /// The value `pointer` points at (`Value::pointer`).
    fn at_pointer(&self, pointer: &str) -> Option<&Value>;
}

impl Pointer for Value {
    fn at_pointer(&self, pointer: &str) -> Option<&Value> {
        // An escape (`~0`, `~1`) is unescaped as serde_json unescapes it.
        if pointer.contains('~') {
            return self.pointer(pointer);
        }
        if pointer.is_empty() {
            return Some(self);
        }
        pointer
            .strip_prefix('/')?
            .split('/')
            .try_fold(self, |target, token| match target {
                Value::Object(map) => map.get(token),
                Value::Array(list) => index(token).and_then(|i| list.get(i)),
                _ => None,
            })
    }
}

/// An array index as serde_json reads one (`parse_index`): no sign, no leading zero.
fn index(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.starts_with('0') && token.len() != 1) {
        return None;
    }
    token.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every pointer of the table finds what serde_json's `Value::pointer` finds, on a
    /// document of maps, lists, escaped keys and empty keys.
    #[test]
    fn pointers_find_what_serde_json_finds() {
        let doc: Value = serde_json::from_str(
            r#"{"spec": {"chart": {"spec": {"chart": "web", "version": "1.2.0"}},
                "values": {"a/b": 1, "m~n": 2, "": {"": 3}, "list": [10, 11, [12]]},
                "10": "ten"},
              "items": [{"name": "x"}, {"name": "y"}],
              "": "empty"}"#,
        )
        .unwrap();
        let pointers = [
            "",
            "/",
            "//",
            "/spec",
            "/spec/",
            "/spec/chart/spec/chart",
            "/spec/chart/spec/version",
            "/spec/chart/spec/missing",
            "/spec/values/a~1b",
            "/spec/values/m~0n",
            "/spec/values/a/b",
            "/spec/values//",
            "/spec/values/list/0",
            "/spec/values/list/2/0",
            "/spec/values/list/3",
            "/spec/values/list/01",
            "/spec/values/list/+1",
            "/spec/values/list/-1",
            "/spec/values/list/1.0",
            "/spec/values/list/ 1",
            "/spec/values/list/18446744073709551616",
            "/spec/10",
            "/items/1/name",
            "/items/name",
            "/items/0/name/x",
            "spec",
            "/spec/chart~",
            "/spec/chart~2",
        ];
        for p in pointers {
            assert_eq!(doc.at_pointer(p), doc.pointer(p), "{p:?}");
        }
    }
}
