//! Where a finding points: the line and column of a YAML document, of a key inside it, or of
//! some text inside it, found in the file's text. Documents are counted as the parser counts
//! them (empty documents and comment-only ones are skipped), so an object's document index
//! from the builder finds its text.

use crate::tree::FileTree;

/// A 1-based line and column.
pub type Pos = (usize, usize);

/// The byte ranges of the non-empty documents of a YAML text.
fn documents(text: &str) -> Vec<(usize, usize)> {
    let mut docs = Vec::new();
    let (mut start, mut offset, mut content) = (0, 0, false);
    for line in text.split_inclusive('\n') {
        let t = line.trim_end();
        if t == "---" || t.starts_with("--- ") || t == "..." {
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

/// 1-based line and column of a byte offset.
pub fn pos_of(text: &str, offset: usize) -> Pos {
    crate::error::line_col(text, offset)
}

/// The text of document `index` with its byte offset in the file.
fn doc<'a>(tree: &'a FileTree, file: &str, index: usize) -> Option<(&'a str, usize)> {
    let text = tree.read(file)?;
    let (s, e) = *documents(text).get(index)?;
    Some((&text[s..e], s))
}

/// The first line of document `index` that is neither blank nor a comment.
pub fn document(tree: &FileTree, file: &str, index: usize) -> Option<Pos> {
    let (body, start) = doc(tree, file, index)?;
    let mut offset = start;
    for line in body.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if !trimmed.trim().is_empty() && !trimmed.starts_with('#') {
            let indent = line.len() - trimmed.len();
            return Some(pos_of(tree.read(file)?, offset + indent));
        }
        offset += line.len();
    }
    None
}

/// The first line of document `index` whose key is `key` (`dependsOn:`), else the document.
pub fn key(tree: &FileTree, file: &str, index: usize, key: &str) -> Option<Pos> {
    let (body, start) = doc(tree, file, index)?;
    let mut offset = start;
    for line in body.split_inclusive('\n') {
        let trimmed = line.trim_start().trim_start_matches("- ");
        if trimmed.starts_with(key) && trimmed[key.len()..].starts_with(':') {
            let indent = line.len() - trimmed.len();
            return Some(pos_of(tree.read(file)?, offset + indent));
        }
        offset += line.len();
    }
    document(tree, file, index)
}

/// Where `needle` first occurs in document `index`, else the document.
pub fn text(tree: &FileTree, file: &str, index: usize, needle: &str) -> Option<Pos> {
    let (body, start) = doc(tree, file, index)?;
    match body.find(needle) {
        Some(at) => Some(pos_of(tree.read(file)?, start + at)),
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
        assert_eq!(document(&tree, "a.yaml", 0), Some((3, 1)));
        assert_eq!(document(&tree, "a.yaml", 1), Some((10, 3)));
        assert_eq!(key(&tree, "a.yaml", 0, "name"), Some((5, 3)));
        assert_eq!(key(&tree, "a.yaml", 1, "path"), Some((12, 7)));
        assert_eq!(text(&tree, "a.yaml", 1, "x"), Some((12, 13)));
        assert_eq!(document(&tree, "a.yaml", 2), None);
    }
}
