//! The block-style emitter: output deterministic to the byte, mappings in their key order,
//! every scalar a YAML 1.1 or 1.2 reader would misread (or Flux would substitute) quoted.

use serde_json::Value;

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
    use super::*;
    use serde_json::json;

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
            let text = emit_for_reading(&v);
            let back: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
            assert_eq!(back, v, "{s:?}:\n{text}");
        }
        let text = emit_for_reading(&serde_json::json!({"k": "a\nb\n"}));
        assert_eq!(text, "k: |\n  a\n  b\n");
        let text = emit_for_reading(&serde_json::json!({"k": ["a\n\nb"]}));
        assert_eq!(text, "k:\n  - |-\n    a\n\n    b\n");
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
                && s.chars().all(comment_safe)
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
                    assert_eq!(plain_tail(&s), plain(&s), "{s:?}");
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, parts.len().pow(3));
    }
}
