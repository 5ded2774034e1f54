//! Where a finding points: the byte span of a YAML document's first line, of a key inside
//! it, or of some text inside it, found in the file's text. Documents are counted as the
//! parser counts them (empty documents and comment-only ones are skipped), so an object's
//! document index from the builder finds its text.
//!
//! This is a textual search, not the parser's spans: the objects a lint judges come out of
//! the kustomize builder (patched, transformed, generated) as plain values, and their keys
//! may come from a patch in another file, so no parser span survives to them. The span is
//! found once, when the finding is made, and carried from there (`Place`); every output
//! (the snippet, JSON's line and column, GitHub's annotation) is computed from it.

use crate::diag::Place;
use crate::tree::FileTree;
use crate::yaml::Text;

/// The byte ranges of the non-empty documents of a YAML text.
fn documents(text: &str) -> Vec<(usize, usize)> {
    let mut docs = Vec::new();
    let (mut start, mut offset, mut content) = (0, 0, false);
    for line in text.split_inclusive('\n') {
        let t = line.trim_end();
        if crate::plain::document_marker(t).is_some() {
            if content {
                docs.push((start, offset));
            }
            start = offset + line.len();
            content = false;
        } else if !t.trim_start().is_empty() && !t.trim_start().starts_with('#') {
            content = true;
        }
        offset += line.len();
    }
    if content {
        docs.push((start, offset));
    }
    docs
}

/// The file's text with the byte range of its document `index`.
fn doc(tree: &FileTree, file: &str, index: usize) -> Option<(Text, usize, usize)> {
    let text = tree.read(file)?;
    let (s, e) = *documents(&text).get(index)?;
    Some((text, s, e))
}

/// The first line of document `index` that is neither blank nor a comment (its content).
pub fn document(tree: &FileTree, file: &str, index: usize) -> Option<Place> {
    let (text, start, end) = doc(tree, file, index)?;
    let body = &text[start..end];
    let mut offset = start;
    for line in body.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if !trimmed.trim().is_empty() && !trimmed.starts_with('#') {
            let indent = line.len() - trimmed.len();
            return Some(Place::new(&text, offset + indent, trimmed.trim_end().len()));
        }
        offset += line.len();
    }
    None
}

/// The first line of document `index` whose key is `key` (`dependsOn:`), the key itself;
/// else the document.
pub fn key(tree: &FileTree, file: &str, index: usize, key: &str) -> Option<Place> {
    let (text, start, end) = doc(tree, file, index)?;
    let body = &text[start..end];
    let mut offset = start;
    for line in body.split_inclusive('\n') {
        let trimmed = line.trim_start().trim_start_matches("- ");
        if trimmed.starts_with(key) && trimmed[key.len()..].starts_with(':') {
            let indent = line.len() - trimmed.len();
            return Some(Place::new(&text, offset + indent, key.len()));
        }
        offset += line.len();
    }
    document(tree, file, index)
}

/// Where `needle` first occurs in document `index`, else the document.
pub fn text(tree: &FileTree, file: &str, index: usize, needle: &str) -> Option<Place> {
    let (text, start, end) = doc(tree, file, index)?;
    match text[start..end].find(needle) {
        Some(at) => Some(Place::new(&text, start + at, needle.len())),
        None => document(tree, file, index),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_are_counted_as_the_parser_counts_them() {
        let tree = FileTree::from_files([(
            "a.yaml",
            "# header\n---\nkind: A\nmetadata:\n  name: a\n---\n# only a comment\n---\n\n  kind: B\n  spec:\n    - path: x\n",
        )]);
        let at = |p: Option<Place>| p.map(|p| (p.line_col(), p.shown().to_string()));
        assert_eq!(
            at(document(&tree, "a.yaml", 0)),
            Some(((3, 1), "kind: A".to_string()))
        );
        assert_eq!(
            at(document(&tree, "a.yaml", 1)),
            Some(((10, 3), "kind: B".to_string()))
        );
        assert_eq!(
            at(key(&tree, "a.yaml", 0, "name")),
            Some(((5, 3), "name".to_string()))
        );
        assert_eq!(
            at(key(&tree, "a.yaml", 1, "path")),
            Some(((12, 7), "path".to_string()))
        );
        assert_eq!(
            at(text(&tree, "a.yaml", 1, "x")),
            Some(((12, 13), "x".to_string()))
        );
        assert!(document(&tree, "a.yaml", 2).is_none());
        // A marker followed by a tab and a comment is a marker, as YAML reads it.
        let tree = FileTree::from_files([("b.yaml", "kind: A\n---\t# next\nkind: B\n")]);
        assert_eq!(
            at(document(&tree, "b.yaml", 1)),
            Some(((3, 1), "kind: B".to_string()))
        );
    }
}
