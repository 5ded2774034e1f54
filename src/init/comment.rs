//! How init writes what it says into fluxwave.yaml: YAML comments wrapped at 92 columns, and
//! every name from the repository on one line, so that no name can end a comment and start
//! YAML of its own.

use crate::kustomize::object::ObjectId;

/// `text` as YAML comment lines at `indent`, wrapped at 92 columns.
pub(super) fn comment(indent: &str, text: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    // A word is kept whole, and so is a `code span` with spaces in it.
    let mut words: Vec<String> = Vec::new();
    let mut open = false;
    for word in one_line(text).split_whitespace() {
        match words.last_mut() {
            Some(last) if open => {
                last.push(' ');
                last.push_str(word);
            }
            _ => words.push(word.to_string()),
        }
        if word.matches('`').count() % 2 == 1 {
            open = !open;
        }
    }
    for word in &words {
        if !line.is_empty() && indent.len() + 2 + line.len() + 1 + word.len() > 92 {
            out.push_str(&format!("{indent}# {line}\n"));
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        out.push_str(&format!("{indent}# {line}\n"));
    }
    out
}

/// `text` on one line: a name with a line break or a control character in it cannot end a
/// comment and start YAML of its own.
pub(super) fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{85}' | '\u{feff}') {
                ' '
            } else {
                c
            }
        })
        .collect()
}

/// `namespace/name` of a Flux Kustomization.
pub(super) fn shown_id(id: &ObjectId) -> String {
    format!("{}/{}", id.namespace, id.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_comment_wraps_at_92_columns_counting_its_indent() {
        let text = "word ".repeat(40);
        let out = comment("    ", &text);
        assert!(out.lines().count() > 1, "{out}");
        for line in out.lines() {
            assert!(line.starts_with("    # "), "{line:?}");
            assert!(line.len() <= 92, "{} columns: {line:?}", line.len());
        }
        // Nothing is lost in the wrapping.
        let words: usize = out.lines().map(|l| l.split_whitespace().count() - 1).sum();
        assert_eq!(words, 40);
    }

    #[test]
    fn a_code_span_with_spaces_is_never_broken_across_lines() {
        let span = "`git config --global --add safe.directory /srv/fleet`";
        let text = format!("{} then run {span} again.", "pad ".repeat(15));
        let out = comment("", &text);
        assert!(out.lines().any(|l| l.contains(span)), "{out}");
    }

    #[test]
    fn a_short_text_is_one_comment_line_and_an_empty_one_none() {
        assert_eq!(comment("  ", "The app tier."), "  # The app tier.\n");
        assert_eq!(comment("", ""), "");
    }

    #[test]
    fn a_line_break_in_a_name_cannot_start_yaml_of_its_own() {
        let out = comment("", "From apps\nkind: Secret\u{2028}x\u{85}y.");
        assert_eq!(out, "# From apps kind: Secret x y.\n");
        assert_eq!(one_line("a\tb\rc\u{feff}d"), "a b c d");
    }
}
