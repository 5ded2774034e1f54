//! The trees of a history's revisions, read one after another with one git process
//! (`cutover --each`). Most commits change a few files of a large repository: a revision
//! whose listing differs from the one before only in files the tree reads as they are — a
//! manifest outside every Helm chart that is no generator's kustomization — or in files it
//! does not read that are no generator's input (whose coming and going adds and removes the
//! folders that hold them) is made from the tree before and the blobs of those files; only
//! the folders that changed are read from git. Any other change (a chart's file, a
//! `.sourceignore`, a generator's kustomization or input, a link or submodule) reads the
//! revision whole, as `FileTree::from_git_reading` does: both make the same tree.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::Result;
use crate::yaml::Text;

use super::objects::Changed;
use super::read::{add_folders, generator_inputs, keep_plain, no_such_revision};
use super::{is_ignore_file, wanted, Blobs, Decoded, FileTree, GitObjects};

/// A reader of a history's revisions (see the module).
pub struct History {
    root: PathBuf,
    objects: GitObjects,
    blobs: Blobs,
    /// The tree object (`None`: none, the folder read is not in that revision) and the tree
    /// of the revision read last.
    last: Option<(Option<String>, FileTree)>,
    /// How many revisions were read whole.
    whole: usize,
}

impl History {
    /// A reader of the revisions of the repository that holds `root` (see `GitObjects`).
    pub fn open(root: &Path) -> Result<History> {
        Ok(History {
            root: root.to_path_buf(),
            objects: GitObjects::open(root)?,
            blobs: Blobs::default(),
            last: None,
            whole: 0,
        })
    }

    /// The tree of revision `rev` (see the module).
    pub fn read(&mut self, rev: &str) -> Result<FileTree> {
        let Some((oid, tree_id)) = self.objects.commit_tree(rev)? else {
            return Err(no_such_revision(&self.root, rev));
        };
        let short: String = oid.chars().take(12).collect();
        let after = match self.last.take() {
            Some((before, tree)) => {
                let changed = self
                    .objects
                    .changed(before.as_deref(), tree_id.as_deref())?;
                self.after(&tree, &changed, tree_id.as_deref(), &short)?
            }
            None => None,
        };
        let tree = match after {
            Some(tree) => tree,
            None => {
                self.whole += 1;
                let listing = match &tree_id {
                    Some(id) => self.objects.listing(id)?,
                    None => Arc::default(),
                };
                FileTree::from_listing(
                    &self.root,
                    &oid,
                    &listing,
                    &mut self.blobs,
                    Some(&mut self.objects),
                )?
            }
        };
        self.last = Some((tree_id, tree.clone()));
        Ok(tree)
    }

    /// The tree of commit `short` (its tree object `tree_id`) made from `tree`, the one
    /// before, and the files that changed in between: `None` when a change needs the
    /// revision read whole (see the module).
    fn after(
        &mut self,
        tree: &FileTree,
        changed: &[Changed],
        tree_id: Option<&str>,
        short: &str,
    ) -> Result<Option<FileTree>> {
        let (mut files, mut unreadable) = (None, None);
        let mut folders: Option<BTreeSet<String>> = None;
        let mut inputs: Option<BTreeSet<String>> = None;
        let mut gone: Vec<&str> = Vec::new();
        for change in changed {
            let Ok(path) = std::str::from_utf8(&change.path) else {
                return Ok(None);
            };
            let (Some(old), Some(new)) = (blob(change.old.as_ref()), blob(change.new.as_ref()))
            else {
                // A link or a submodule.
                return Ok(None);
            };
            let name = path.rsplit('/').next().unwrap_or(path);
            if name == "Chart.yaml" || is_ignore_file(path) || in_chart(tree, path) {
                return Ok(None);
            }
            if !wanted(path) {
                // Only a generator's input is in the tree: a change to any other leaves it
                // as it was, but for the folders that hold such files.
                let inputs = inputs.get_or_insert_with(|| generator_inputs_of(tree));
                if tree.files.contains_key(path) || inputs.contains(path) {
                    return Ok(None);
                }
                let folders = folders.get_or_insert_with(|| (*tree.folders).clone());
                match (old, new) {
                    (None, Some(_)) => add_folders(folders, path),
                    (Some(_), None) => gone.push(path),
                    _ => {}
                }
                continue;
            }
            let kustomization = crate::fs::KUSTOMIZATION_FILES.contains(&name);
            if kustomization
                && tree
                    .files
                    .get(path)
                    .is_some_and(|t| t.contains("Generator"))
            {
                return Ok(None);
            }
            let files = files.get_or_insert_with(|| (*tree.files).clone());
            let unreadable = unreadable.get_or_insert_with(|| (*tree.unreadable).clone());
            files.remove(path);
            unreadable.remove(path);
            let Some(id) = new else { continue };
            match self.text(id, &format!("{short}:{path}"))? {
                Ok(text) => {
                    if kustomization && text.contains("Generator") {
                        return Ok(None);
                    }
                    files.insert(path.to_string(), text);
                }
                Err(why) => {
                    files.insert(path.to_string(), Text::default());
                    unreadable.insert(path.to_string(), why);
                }
            }
        }
        // A folder that held a file gone stays while it holds another the tree does not
        // keep (its files are in the tree).
        for path in gone {
            let mut dir = path;
            while let Some((up, _)) = dir.rsplit_once('/') {
                let holds = match tree_id {
                    Some(root) => self.objects.holds(root, up, &|name| !wanted(name))?,
                    None => false,
                };
                if holds {
                    break;
                }
                folders
                    .get_or_insert_with(|| (*tree.folders).clone())
                    .remove(up);
                dir = up;
            }
        }
        Ok(Some(FileTree {
            files: files.map_or_else(|| tree.files.clone(), Arc::new),
            ignores: tree.ignores.clone(),
            unreadable: unreadable.map_or_else(|| tree.unreadable.clone(), Arc::new),
            raw: tree.raw.clone(),
            folders: folders.map_or_else(|| tree.folders.clone(), Arc::new),
            label: short.to_string(),
            commit: Some(short.to_string()),
            ..FileTree::default()
        }))
    }

    /// The text of blob `id`, taken from the texts read already when there, as
    /// `FileTree::from_listing` reads a file outside every chart; `name` names it in errors.
    fn text(&mut self, id: &str, name: &str) -> Result<Decoded> {
        if let Some(text) = self.blobs.get(id) {
            return Ok(Ok(text.clone()));
        }
        let bytes = self
            .objects
            .blobs(&[id.to_string()], &|_| name.to_string())?
            .pop()
            .unwrap_or_default();
        Ok(match keep_plain(&mut self.blobs, id, bytes) {
            Some(bytes) => crate::fs::decode(bytes).map(Arc::new),
            None => Ok(self.blobs.get(id).cloned().unwrap_or_default()),
        })
    }
}

/// A file's id when it is one Flux reads: a blob that is no link (mode 100644 or 100755,
/// not 120000, nor a submodule, 160000). `Some(None)` where there is no file.
fn blob(entry: Option<&(String, String)>) -> Option<Option<&str>> {
    match entry {
        None => Some(None),
        Some((mode, id)) => (mode == "100644" || mode == "100755").then_some(Some(id.as_str())),
    }
}

/// The files the generators of `tree`'s kustomizations read (`read::generator_inputs`).
fn generator_inputs_of(tree: &FileTree) -> BTreeSet<String> {
    let kustomizations: Vec<(&str, Decoded)> = tree
        .files
        .iter()
        .filter(|(p, _)| {
            let name = p.rsplit('/').next().unwrap_or(p);
            crate::fs::KUSTOMIZATION_FILES.contains(&name)
        })
        .map(|(p, t)| (p.as_str(), Ok(t.clone())))
        .collect();
    generator_inputs(kustomizations.iter().map(|(p, d)| (*p, d)))
}

/// Whether `path` is in a folder of `tree` that holds a Helm chart (a `Chart.yaml`): every
/// file there is read, with its bytes.
fn in_chart(tree: &FileTree, path: &str) -> bool {
    let mut dir = path;
    while let Some((up, _)) = dir.rsplit_once('/') {
        if tree.files.contains_key(&format!("{up}/Chart.yaml")) {
            return true;
        }
        dir = up;
    }
    tree.files.contains_key("Chart.yaml")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Everything a tree holds, to compare two ways of reading one revision.
    fn contents(t: &FileTree) -> String {
        format!(
            "{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}",
            t.files,
            t.ignores,
            t.unreadable.keys().collect::<Vec<_>>(),
            t.raw,
            t.folders,
            (&t.label, &t.commit)
        )
    }

    /// Each revision of a history read after the one before is the tree read whole, for
    /// every kind of change: a manifest edited, added, removed; a README edited (nothing to
    /// read), added and removed (a folder comes and goes, or stays with another file); a
    /// chart's file; a `.sourceignore`;
    /// a generator's kustomization and its `.env` input; a file that is not UTF-8; a link.
    #[test]
    fn a_revision_read_after_the_one_before_is_the_revision_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let git = |args: &[&str]| {
            let out = crate::tree::git_command(root)
                .args([
                    "-c",
                    "user.name=t",
                    "-c",
                    "user.email=t@t",
                    "-c",
                    "commit.gpgsign=false",
                ])
                .args(args)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        let write = |path: &str, text: &[u8]| {
            let p = root.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        let remove = |path: &str| std::fs::remove_file(root.join(path)).unwrap();
        git(&["init", "-q"]);
        write("apps/web/app.yaml", b"kind: ConfigMap\n");
        write("apps/web/README.md", b"# web\n");
        write(
            "apps/cfg/kustomization.yaml",
            b"configMapGenerator:\n- name: c\n  envs: [c.env]\n",
        );
        write("apps/cfg/c.env", b"A=1\n");
        write("charts/demo/Chart.yaml", b"name: demo\n");
        write("charts/demo/templates/cm.yaml", b"kind: ConfigMap\n");
        write(".sourceignore", b"docs/\n");
        let mut edits: Vec<Box<dyn Fn()>> = vec![
            Box::new(|| write("apps/web/app.yaml", b"kind: Secret\n")),
            Box::new(|| write("apps/new/x.yaml", b"kind: Service\n")),
            Box::new(|| remove("apps/new/x.yaml")),
            Box::new(|| write("apps/web/README.md", b"# web, edited\n")),
            Box::new(|| write("docs/only/README.md", b"# a folder\n")),
            Box::new(|| remove("docs/only/README.md")),
            Box::new(|| write("charts/demo/templates/cm.yaml", b"kind: Secret\n")),
            Box::new(|| write("charts/demo/files/blob.bin", &[0xff, 0xfe, 0x00])),
            Box::new(|| write(".sourceignore", b"docs/\nnotes/\n")),
            Box::new(|| write("apps/cfg/c.env", b"A=2\n")),
            Box::new(|| {
                write(
                    "apps/cfg/kustomization.yaml",
                    b"configMapGenerator:\n- name: c\n  envs: [d.env]\n",
                )
            }),
            Box::new(|| write("apps/cfg/d.env", b"B=1\n")),
            Box::new(|| write("apps/web/latin1.yaml", &[b'a', b':', b' ', 0xe9, b'\n'])),
            Box::new(|| write("apps/web/bom.yaml", b"\xef\xbb\xbfkind: ConfigMap\n")),
            Box::new(|| remove("apps/web/latin1.yaml")),
            Box::new(|| {
                std::os::unix::fs::symlink("app.yaml", root.join("apps/web/link.yaml")).unwrap()
            }),
            Box::new(|| write("apps/web/app.yaml", b"kind: ConfigMap\n")),
            Box::new(|| write("docs/two/deep/a.md", b"a\n")),
            Box::new(|| write("docs/two/b.md", b"b\n")),
            Box::new(|| remove("docs/two/deep/a.md")),
        ];
        git(&["add", "-A"]);
        git(&["commit", "-qm", "0"]);
        for (i, edit) in edits.drain(..).enumerate() {
            edit();
            git(&["add", "-A"]);
            git(&["commit", "-qm", &format!("{}", i + 1)]);
        }
        // The commits read whole: the first, and those the module names.
        let whole = [0, 7, 8, 9, 10, 11, 12, 16];
        let mut history = History::open(root).unwrap();
        for commit in 0..21 {
            let rev = format!("HEAD~{}", 20 - commit);
            let before = history.whole;
            let read = history.read(&rev).unwrap();
            let read_whole = FileTree::from_git_sharing(root, &rev, &mut Blobs::default()).unwrap();
            assert_eq!(contents(&read), contents(&read_whole), "commit {commit}");
            assert_eq!(
                history.whole > before,
                whole.contains(&commit),
                "commit {commit}"
            );
        }
    }
}
