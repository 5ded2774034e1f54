//! The one way text from a repository or the command line enters the markdown fluxwave prints
//! (`diff --format github` and its error, `waves --format markdown`, `blast --format
//! markdown`): GitHub shows it as the same characters, inert. A name cannot open an HTML
//! element, a link, an image, an autolink, a mention (`@user`), an issue or commit reference
//! (`#1`, `GH-1`, a SHA), emphasis or a heading; cannot end a table cell or row, a code span,
//! a code block or `<details>`; cannot start a new line.
//!
//! Why code spans, and not `<code>` with character references: the contents of a code span
//! are not parsed at all (GFM 6.1: no backslash escapes, entities, HTML, autolinks or
//! emphasis), and GitHub links mentions, references and emoji only outside `<code>`. Between
//! raw `<code>` tags the text is still markdown, so every character that could start a
//! construct (and each `.` and `:` of `www.` and `https://`) would need a reference, and
//! plain names would print otherwise than they always have. What a code span does not cover
//! is done here: its fence is one backtick longer than any run in the text (padded with a
//! space where the text starts or ends with a backtick or a space); line breaks and other
//! control characters are written `\uXXXX` as the terminal writer writes them, and so is a
//! backslash before a `|`; in a table cell every `|` is `\|` (GFM 4.10 splits a row on `|`
//! before it parses code spans, and takes the backslash away).

use super::terminal::is_unsafe;

/// Whether a character of repository text is written `\uXXXX` in markdown: every control
/// character (line feed and tab too: a line feed ends a table row or starts a block), the
/// bidirectional ones, and the Unicode line and paragraph separators.
fn hidden(c: char) -> bool {
    is_unsafe(c) || matches!(c, '\n' | '\t' | '\u{2028}' | '\u{2029}')
}

/// `text` with every character `hide` takes written `\uXXXX`.
pub(super) fn escaped(text: &str, hide: fn(char) -> bool) -> std::borrow::Cow<'_, str> {
    if !text.contains(hide) {
        return text.into();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if hide(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out.into()
}

/// The longest run of `ch` in `s`.
fn longest_run(s: &str, ch: char) -> usize {
    let (mut best, mut run) = (0, 0);
    for c in s.chars() {
        run = if c == ch { run + 1 } else { 0 };
        best = best.max(run);
    }
    best
}

/// `text` as an inline code span that shows exactly `text` (its control characters as
/// `\uXXXX`). Two spans need something but a backtick between them; in a table cell, pass
/// the whole cell through `cell`.
pub fn code(text: &str) -> String {
    let mut text = escaped(text, hidden);
    // A backslash before a pipe is written `\u005c`: GitHub's table parser takes the
    // backslash of `\|` away (and another GFM parser reads `\\|` as an escaped backslash),
    // so that only the escapes `cell` adds precede a pipe.
    if text.contains("\\|") {
        text = text.replace("\\|", "\\u005c|").into();
    }
    if text.is_empty() {
        // An empty span cannot be written; a lone space shows as nothing much.
        return "` `".into();
    }
    let fence = "`".repeat(longest_run(&text, '`') + 1);
    // One space is taken from each end of a span that starts and ends with one (and is not
    // all spaces): padded, a text that starts or ends with a backtick or a space keeps it.
    let pad = if text.starts_with(['`', ' ']) || text.ends_with(['`', ' ']) {
        if text.chars().all(|c| c == ' ') {
            ""
        } else {
            " "
        }
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// Each of `texts` as a code span, joined by `, `.
pub fn codes<S: AsRef<str>>(texts: impl IntoIterator<Item = S>) -> String {
    texts
        .into_iter()
        .map(|t| code(t.as_ref()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Markdown made of fluxwave's words and `code` spans, as the content of a table cell: every
/// `|` (inside code spans too) escaped, as GFM tables read it.
pub fn cell(markdown: &str) -> String {
    markdown.replace('|', "\\|")
}

/// `body` as a fenced code block: a fence of backticks longer than any run in it, so that no
/// line of it (whatever its indentation, backticks or tildes) closes the block early; every
/// control character but line feeds and tabs written `\uXXXX`, so that every line break is one
/// the terminal writer keeps.
pub fn fenced(info: &'static str, body: &str) -> String {
    let body = escaped(body, is_unsafe);
    let fence = "`".repeat(longest_run(&body, '`').max(2) + 1);
    let end = if body.is_empty() || body.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    format!("{fence}{info}\n{body}{end}{fence}\n")
}

#[cfg(test)]
mod tests {
    use super::{cell, code, codes, fenced};
    use comrak::nodes::NodeValue;
    use proptest::prelude::*;

    /// GitHub's Markdown: GFM with its tables, autolinks (`www.`, `https://`, e-mail),
    /// strikethrough, task lists, footnotes and alerts.
    fn options() -> comrak::Options<'static> {
        let mut o = comrak::Options::default();
        o.extension.table = true;
        o.extension.autolink = true;
        o.extension.strikethrough = true;
        o.extension.tasklist = true;
        o.extension.footnotes = true;
        o.extension.alerts = true;
        o
    }

    /// The document `md` as GFM reads it: every node at its depth (code spans without their
    /// text), and the text of the code spans and code blocks apart.
    fn read(md: &str) -> (Vec<String>, Vec<String>) {
        let arena = comrak::Arena::new();
        let root = comrak::parse_document(&arena, md, &options());
        let (mut shape, mut code) = (Vec::new(), Vec::new());
        for node in root.descendants() {
            let depth = node.ancestors().count() - 1;
            let value = &node.data.borrow().value;
            let what = match value {
                NodeValue::Code(c) => {
                    code.push(c.literal.clone());
                    "Code".to_string()
                }
                NodeValue::CodeBlock(b) => {
                    code.push(b.literal.clone());
                    format!("CodeBlock {}", b.info)
                }
                other => format!("{other:?}"),
            };
            shape.push(format!("{depth} {what}"));
        }
        (shape, code)
    }

    /// The places a name takes in fluxwave's markdown: a heading, a paragraph, a list item, a
    /// table cell (beside another span), the start of a line.
    fn places(name: &str) -> Vec<String> {
        let span = code(name);
        vec![
            format!("### fluxwave diff: {span} → the working tree\n\nafter\n"),
            format!("**3 objects** in {span}, {span}: done.\n\nafter\n"),
            format!("list:\n\n- 🛑 {span} ({span}, rule): {span}\n- b\n\nafter\n"),
            format!(
                "| A | B | C |\n|---|---|---|\n| {} | {} | x |\n| y | z | w |\n\nafter\n",
                cell(&span),
                cell(&format!(
                    "moved from {span} (Secret values change: {span}, {span})"
                ))
            ),
            format!("{span}\n{span}\n\nafter\n"),
        ]
    }

    /// What a code span of `name` shows: the name, its control characters (and a backslash
    /// before a pipe) as `\uXXXX`.
    fn shown(name: &str) -> String {
        let shown: String = name
            .chars()
            .map(|c| {
                if c.is_control()
                    || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
                    || matches!(
                        c,
                        '\u{200e}' | '\u{200f}' | '\u{61c}' | '\u{2028}' | '\u{2029}'
                    )
                {
                    format!("\\u{:04x}", c as u32)
                } else {
                    c.to_string()
                }
            })
            .collect();
        if shown.is_empty() {
            return " ".into();
        }
        shown.replace("\\|", "\\u005c|")
    }

    /// Each place reads as it does with a plain name, the name its code spans' only text.
    fn assert_inert(name: &str) {
        let span = code(name);
        assert!(
            !span.contains(['\n', '\r']),
            "{name:?} spans lines: {span:?}"
        );
        for (hostile, plain) in places(name).iter().zip(places("plain")) {
            let (shape, codes) = read(hostile);
            let (expected, plain_codes) = read(&plain);
            assert_eq!(
                shape, expected,
                "{name:?} changes the structure of:\n{hostile}"
            );
            assert_eq!(codes.len(), plain_codes.len(), "{hostile}");
            for c in codes {
                assert_eq!(c, shown(name), "{name:?} in:\n{hostile}");
            }
        }
    }

    /// Names that break markdown out of a naive code span: backticks of every run length,
    /// pipes, line breaks, HTML, comments, mentions, references, links, images, autolinks,
    /// emphasis, escapes, entities, emoji and bidirectional controls.
    const HOSTILE: &[&str] = &[
        "`",
        "``",
        "```",
        "a`b",
        "a``b```c````d",
        "`leading",
        "trailing`",
        "` both `",
        "````````````````",
        "a|b",
        "|",
        "\\|",
        "a\\",
        "line\nbreak",
        "carriage\rreturn",
        "crlf\r\nx",
        "tab\there",
        "\n\n# heading\n\n",
        "\n---\n",
        "x\n| a | b |\n|---|---|",
        "<img src=x onerror=alert(1)>",
        "</details>",
        "</code>",
        "<!--",
        "<script>alert(1)</script>",
        "@someone",
        "@org/team",
        "#1",
        "GH-1",
        "owner/repo#1",
        "[x](https://evil)",
        "![x](https://evil/i.png)",
        "[x]: https://evil",
        "https://evil.example",
        "www.evil.example",
        "mail@evil.example",
        "*bold*",
        "**bold**",
        "_x_",
        "~~strike~~",
        "\\",
        "\\`",
        "&amp;",
        "&lt;img&gt;",
        "&#96;",
        ":+1:",
        "[!WARNING]",
        "[^1]",
        "- [ ] task",
        " ",
        "  ",
        " a ",
        "",
        "🛑✅⚠️ emoji",
        "evil\u{202e}txt.yaml",
        "x\u{2066}y\u{2069}\u{200f}",
        "nul\u{0}esc\u{1b}[2Jdel\u{7f}csi\u{9b}",
        "sep\u{2028}para\u{2029}",
    ];

    #[test]
    fn hostile_names_are_inert_wherever_they_stand() {
        for name in HOSTILE {
            assert_inert(name);
        }
    }

    #[test]
    fn a_code_span_escapes_what_it_cannot_hold_and_nothing_else() {
        // Plain names are written as they always were.
        for name in [
            "dev",
            "flux-system/apps",
            "ConfigMap/default/x.y",
            "apps/a_b.yaml",
        ] {
            assert_eq!(code(name), format!("`{name}`"));
        }
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("`x"), "`` `x ``");
        assert_eq!(code(" a "), "`  a  `");
        assert_eq!(code("  "), "`  `");
        assert_eq!(code(""), "` `");
        assert_eq!(code("a\nb\r"), "`a\\u000ab\\u000d`");
        assert_eq!(cell(&code("a|b")), "`a\\|b`");
        assert_eq!(codes(["a", "b`"]), "`a`, `` b` ``");
        for name in HOSTILE {
            let span = code(name);
            // Nothing raw that starts a line, a tag or a row; the fence is longer than any
            // run of backticks inside.
            assert!(
                !span.contains(['\n', '\r', '\u{202e}', '\u{1b}']),
                "{span:?}"
            );
            let fence = span.chars().take_while(|&c| c == '`').count();
            let inner = &span[fence..span.len() - fence];
            assert!(
                inner.split(|c| c != '`').all(|run| run.len() < fence),
                "{span:?}"
            );
            assert!(cell(&span)
                .match_indices('|')
                .all(|(i, _)| i > 0 && &cell(&span)[i - 1..i] == "\\"));
        }
    }

    #[test]
    fn a_fenced_block_holds_every_line_to_its_end() {
        for body in [
            "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n",
            "+```\n",
            " ```\n-````\n+   `````\n",
            "   ```\n",
            "~~~\n ~~~~\n+~~~\n",
            "```\n",
            "+`` `x` ``\n</details>\n<!--\n",
            "no newline at the end",
            "",
            "+a\r```\n+b\r\n",
        ] {
            let md = format!(
                "<details><summary>Diffs</summary>\n\n{}</details>\n\nafter\n",
                fenced("diff", body)
            );
            let (shape, code) = read(&md);
            let mut expected = body.replace('\r', "\\u000d");
            if !expected.is_empty() && !expected.ends_with('\n') {
                expected.push('\n');
            }
            assert_eq!(code, [expected], "{md}");
            assert_eq!(
                shape,
                [
                    "0 Document",
                    "1 HtmlBlock(NodeHtmlBlock { block_type: 6, literal: \"<details><summary>Diffs</summary>\\n\" })",
                    "1 CodeBlock diff",
                    "1 HtmlBlock(NodeHtmlBlock { block_type: 6, literal: \"</details>\\n\" })",
                    "1 Paragraph",
                    "2 Text(\"after\")",
                ],
                "{md}"
            );
        }
    }

    /// Markdown's own characters, mixed with letters and spaces.
    fn name() -> impl Strategy<Value = String> {
        let alphabet: Vec<char> = "`|\\<>&@#[]()!*_~:/.-= \n\r\tawwhtps1😀\u{202e}"
            .chars()
            .collect();
        proptest::collection::vec(proptest::sample::select(alphabet), 0..24)
            .prop_map(|chars| chars.into_iter().collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn any_name_is_inert(name in name()) {
            assert_inert(&name);
        }
    }
}
