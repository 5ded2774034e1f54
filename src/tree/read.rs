//! How a tree is made from a git revision, the working tree or a folder: which files are
//! read (manifests, `.sourceignore` files, a Helm chart's every file), and the folders of
//! the files that are not. Each file is judged the same from any of them (decoded by
//! `fs::decode`, or named unreadable at its first bad byte).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::yaml::Text;

use super::git::{self, in_a_repository, not_a_worktree, worktree_listing};
use super::{
    ignore_dir, is_ignore_file, listed, wanted, Bytes, Decoded, FileTree, GitObjects, GitState,
};

/// Texts already read from git, by blob id (see `FileTree::from_git_sharing`).
pub type Blobs = foldhash::HashMap<String, Text>;

/// Records the folders that lead to `path`, a file the tree does not keep.
pub(super) fn add_folders(folders: &mut BTreeSet<String>, path: &str) {
    let mut end = path.len();
    while let Some(slash) = path[..end].rfind('/') {
        if !folders.insert(path[..slash].to_string()) {
            break;
        }
        end = slash;
    }
}

/// The folders of a listing that hold a Helm chart (a `Chart.yaml`): every file in them is
/// read, as `helm template` reads a chart of this repository whole (`_helpers.tpl`,
/// `NOTES.txt`, `files/`).
fn chart_folders<'a>(paths: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = paths
        .filter_map(|p| match p.strip_suffix("Chart.yaml") {
            Some("") => Some(String::new()),
            Some(dir) => dir.strip_suffix('/').map(str::to_string),
            None => None,
        })
        .collect();
    out.sort();
    out
}

/// Whether `path` is in one of `charts` (sorted).
fn in_chart(path: &str, charts: &[String]) -> bool {
    !charts.is_empty()
        && path.rsplit_once('/').is_some_and(|(dir, _)| {
            let mut d = dir;
            loop {
                if charts.binary_search_by(|c| c.as_str().cmp(d)).is_ok() {
                    return true;
                }
                match d.rsplit_once('/') {
                    Some((up, _)) => d = up,
                    None => return false,
                }
            }
        })
}

/// A file as read, with its bytes when a chart's file keeps them (`raw_of`).
type Loaded = (Decoded, Option<(String, Bytes)>);

/// Whether `bytes` are the bytes of their text as `fs::decode` reads it: UTF-8 without a
/// byte order mark.
fn plain(bytes: &[u8]) -> bool {
    !bytes.starts_with(&[0xEF, 0xBB, 0xBF]) && std::str::from_utf8(bytes).is_ok()
}

/// Keeps the text of blob `oid` in `blobs` when its text is its bytes (`plain`, which always
/// decodes): every tree that holds the blob shares it. Gives the bytes back when they are not,
/// for the caller to read as it reads such a file.
pub(super) fn keep_plain(blobs: &mut Blobs, oid: &str, bytes: Vec<u8>) -> Option<Vec<u8>> {
    if !plain(&bytes) {
        return Some(bytes);
    }
    if let Ok(text) = crate::fs::decode(bytes) {
        blobs.insert(oid.to_string(), Arc::new(text));
    }
    None
}

/// The bytes of a chart's file to keep beside its text: those whose text is not their bytes.
fn raw_of(path: &str, bytes: &[u8], charts: &[String]) -> Option<(String, Bytes)> {
    (!plain(bytes) && in_chart(path, charts)).then(|| (path.to_string(), Arc::new(bytes.to_vec())))
}

/// A file's bytes as the tree reads them: a `.sourceignore` as source-controller reads it,
/// bytes split into lines (fluxcd/pkg `sourceignore.ReadPatterns`, a `bufio.Scanner`, no
/// decoding: a comment that is not UTF-8 leaves the patterns in force, and a pattern with
/// such bytes matches no name fluxwave reads); every other file as kustomize reads it
/// (`fs::decode`).
pub(super) fn decoded(path: &str, bytes: Vec<u8>) -> Decoded {
    if is_ignore_file(path) {
        return Ok(Arc::new(match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        }));
    }
    crate::fs::decode(bytes).map(Arc::new)
}

/// The files the ConfigMap and Secret generators of the kustomizations among `files` read
/// (`files` entries `[key=]path`, `envs`, the older `env`: kustomize reads them whatever
/// their names), sorted: a tree reads them beside its manifests,
/// keeping the bytes of those whose text is not their bytes (`raw`), so that a build makes
/// the generated data and an edit of a `.env` file is an edit the tree sees. Entries that
/// name no path of the repository (a URL, an absolute path, one above the root) are left to
/// the build.
pub(super) fn generator_inputs<'a>(
    files: impl Iterator<Item = (&'a str, &'a Decoded)>,
) -> BTreeSet<String> {
    let mut inputs = BTreeSet::new();
    for (path, text) in files {
        let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
        let Ok(text) = text else { continue };
        if !crate::fs::KUSTOMIZATION_FILES.contains(&name) || !text.contains("Generator") {
            continue;
        }
        let Ok(k) = crate::yaml::parse_kustomization(path, text) else {
            continue;
        };
        let generators = ["configMapGenerator", "secretGenerator"]
            .iter()
            .filter_map(|f| k.get(*f).and_then(|v| v.as_array()))
            .flatten();
        for g in generators {
            let files = g
                .get("files")
                .and_then(|v| v.as_array())
                .into_iter()
                .flatten();
            let files = files
                .filter_map(|v| v.as_str())
                .map(|e| match e.split_once('=') {
                    Some((_, path)) => path,
                    None => e,
                });
            let envs = g
                .get("envs")
                .and_then(|v| v.as_array())
                .into_iter()
                .flatten();
            let envs = envs.chain(g.get("env")).filter_map(|v| v.as_str());
            for entry in files.chain(envs) {
                if entry.contains("://") || entry.starts_with('/') {
                    continue;
                }
                if let Some(path) = crate::fs::join(dir, entry) {
                    inputs.insert(path);
                }
            }
        }
    }
    inputs
}

/// Adds to `files` (and their bytes to `raw`, when their text is not their bytes) the
/// generator inputs (`generator_inputs`) a tree does not read already (`read_already`, the
/// rule that chose `files`), as `read` gives them: the bytes of each, or `None` for one its
/// listing does not have. The listing is asked only when there are such inputs: most trees
/// have none, and a tree is read for every step of a history.
fn add_generator_inputs(
    files: &mut Vec<(String, Decoded)>,
    raw: &mut BTreeMap<String, Bytes>,
    read_already: impl Fn(&str) -> bool,
    read: impl FnOnce(&[String]) -> Result<Vec<Option<Vec<u8>>>>,
) -> Result<()> {
    let inputs: Vec<String> = generator_inputs(files.iter().map(|(p, t)| (p.as_str(), t)))
        .into_iter()
        .filter(|p| !read_already(p))
        .collect();
    if inputs.is_empty() {
        return Ok(());
    }
    for (path, bytes) in inputs.iter().zip(read(&inputs)?) {
        let Some(bytes) = bytes else { continue };
        if !plain(&bytes) {
            raw.insert(path.clone(), Arc::new(bytes.clone()));
        }
        files.push((path.clone(), decoded(path, bytes)));
    }
    Ok(())
}

/// A tree of `files`: its files, `.sourceignore` files and unreadable files.
pub(super) fn tree_of(
    files: impl IntoIterator<Item = (String, Decoded)>,
    raw: BTreeMap<String, Bytes>,
    folders: BTreeSet<String>,
    label: String,
) -> FileTree {
    let (mut kept, mut ignores, mut unreadable) =
        (BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
    for (path, text) in files {
        match text {
            Ok(text) if is_ignore_file(&path) => {
                ignores.insert(ignore_dir(&path), text);
            }
            Ok(text) => {
                kept.insert(path, text);
            }
            // Never for a `.sourceignore` (see `decoded`).
            Err(_) if is_ignore_file(&path) => {}
            Err(why) => {
                kept.insert(path.clone(), Text::default());
                unreadable.insert(path, why);
            }
        }
    }
    FileTree {
        files: Arc::new(kept),
        ignores: Arc::new(ignores),
        unreadable: Arc::new(unreadable),
        raw: Arc::new(raw),
        folders: Arc::new(folders),
        label,
        ..FileTree::default()
    }
}

/// The id of commit `rev` of the repository at `root` and its listing (`git ls-tree -r -z`),
/// read through `objects` when given; an error that says so when there is no such commit.
pub(super) fn commit_listing(
    root: &Path,
    rev: &str,
    objects: Option<&mut GitObjects>,
) -> Result<(String, Arc<Vec<u8>>)> {
    let found = match objects {
        Some(objects) => objects.commit(rev)?,
        None => git::commit_listing(root, rev)?,
    };
    found.ok_or_else(|| no_such_revision(root, rev))
}

/// The error for revision `rev`, which the repository at `root` does not have.
pub(super) fn no_such_revision(root: &Path, rev: &str) -> Error {
    Error::Usage(format!(
        "revision `{rev}` does not exist in {} (try a branch, a tag or a commit id)",
        root.display()
    ))
}

/// What a tree reads of a revision's listing (`git ls-tree -r -z`): its files with their
/// blob ids, in listing order, and the folders of the files it does not keep.
struct GitEntries {
    paths: Vec<String>,
    blobs: Vec<String>,
    /// `.sourceignore` files are read apart: not decoded as manifests are (`decoded`).
    ignore_paths: Vec<String>,
    ignore_blobs: Vec<String>,
    folders: BTreeSet<String>,
    /// The listing's chart folders (`chart_folders`).
    charts: Vec<String>,
}

/// The blobs of a revision's listing (`git ls-tree -r -z`) that a tree may read: the path
/// and object id of each, links (120000) and submodules left out, as Flux does not follow
/// them. Entries whose path is not UTF-8 are passed over.
fn listing_blobs(listing: &[u8]) -> impl Iterator<Item = (&str, &str)> {
    listing.split(|b| *b == 0).filter_map(|entry| {
        let tab = entry.iter().position(|b| *b == b'\t')?;
        let head = std::str::from_utf8(&entry[..tab]).ok()?;
        let path = std::str::from_utf8(&entry[tab + 1..]).ok()?;
        let mut parts = head.split(' ');
        let (mode, kind, hash) = (parts.next()?, parts.next()?, parts.next()?);
        (kind == "blob" && mode != "120000").then_some((path, hash))
    })
}

impl GitEntries {
    /// The entries of `listing` the tree reads: blobs that are no link (120000) of the files
    /// it lists or in a chart folder; submodules are not followed, as Flux does not.
    fn of(listing: &[u8]) -> GitEntries {
        let mut paths = Vec::new();
        let mut blobs = Vec::new();
        let mut ignore_paths = Vec::new();
        let mut ignore_blobs = Vec::new();
        let mut folders = BTreeSet::new();
        let charts = chart_folders(listing.split(|b| *b == 0).filter_map(|e| {
            std::str::from_utf8(&e[e.iter().position(|b| *b == b'\t')? + 1..]).ok()
        }));
        for (path, hash) in listing_blobs(listing) {
            if !wanted(path) {
                add_folders(&mut folders, path);
            }
            if !(listed(path) || in_chart(path, &charts)) {
                continue;
            }
            if is_ignore_file(path) {
                ignore_paths.push(path.to_string());
                ignore_blobs.push(hash.to_string());
            } else {
                paths.push(path.to_string());
                blobs.push(hash.to_string());
            }
        }
        GitEntries {
            paths,
            blobs,
            ignore_paths,
            ignore_blobs,
            folders,
            charts,
        }
    }
}

/// Every regular file under `root`, `.git` and links left out, handed to `visit` with its
/// path relative to `root` (UTF-8 names only). A folder or entry that cannot be read fails
/// the walk when `strict`, and is passed over otherwise.
pub(super) fn walk_files(
    root: &Path,
    strict: bool,
    mut visit: impl FnMut(String, &std::fs::DirEntry) -> Result<()>,
) -> Result<()> {
    let mut stack = vec![String::new()];
    while let Some(rel) = stack.pop() {
        let dir = root.join(&rel);
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if strict => return Err(Error::io(&dir, e)),
            Err(_) => continue,
        };
        for entry in entries {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) if strict => return Err(Error::io(&dir, e)),
                Err(_) => continue,
            };
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            let path = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            let Ok(ft) = entry.file_type() else { continue };
            if ft.is_dir() && name != ".git" {
                stack.push(path);
            } else if ft.is_file() {
                visit(path, &entry)?;
            }
        }
    }
    Ok(())
}

impl FileTree {
    /// The tree of commit `rev`, restricted to `root` (which may be a folder inside the
    /// repository) with paths relative to it, taking the blobs already in `blobs` (by object
    /// id) from there and adding the ones it reads: two revisions that share most files read
    /// each from git once.
    pub fn from_git_sharing(root: &Path, rev: &str, blobs_read: &mut Blobs) -> Result<FileTree> {
        FileTree::from_git_reading(root, rev, blobs_read, None)
    }

    /// `from_git_sharing`, reading the objects through `objects` when given (one git
    /// process for every revision of a history) instead of running git for each.
    pub fn from_git_reading(
        root: &Path,
        rev: &str,
        blobs_read: &mut Blobs,
        mut objects: Option<&mut GitObjects>,
    ) -> Result<FileTree> {
        let (oid, listing) = commit_listing(root, rev, objects.as_deref_mut())?;
        FileTree::from_listing(root, &oid, &listing, blobs_read, objects)
    }

    /// The tree of commit `oid` of the repository at `root`, whose listing (`git ls-tree -r
    /// -z`) is `listing` (see `from_git_reading`).
    pub(super) fn from_listing(
        root: &Path,
        oid: &str,
        listing: &[u8],
        blobs_read: &mut Blobs,
        mut objects: Option<&mut GitObjects>,
    ) -> Result<FileTree> {
        let GitEntries {
            paths,
            blobs,
            ignore_paths,
            ignore_blobs,
            folders,
            charts,
        } = GitEntries::of(listing);
        let mut missing: Vec<String> = blobs
            .iter()
            .filter(|b| !blobs_read.contains_key(*b))
            .cloned()
            .collect();
        missing.sort_unstable();
        missing.dedup();
        let short: String = oid.chars().take(12).collect();
        // A blob is named in errors by the first file of the revision that holds it.
        let shown = |paths: &[String], blobs: &[String], blob: &str| {
            let path = blobs
                .iter()
                .position(|b| b == blob)
                .map_or("", |i| paths[i].as_str());
            format!("{short}:{path}")
        };
        let mut read_blobs =
            |ids: &[String], name: &dyn Fn(&str) -> String| match objects.as_deref_mut() {
                Some(objects) => objects.blobs(ids, name),
                None => git::cat_blobs(root, ids, name),
            };
        let contents = read_blobs(&missing, &|b| shown(&paths, &blobs, b))?;
        // A blob whose text is not its bytes (no text as kustomize reads it, or a byte order
        // mark) is read again by the next tree, which is rare: a chart's file keeps its bytes
        // (`raw`), and the shared texts hold none.
        let mut odd: HashMap<String, (Decoded, Bytes)> = HashMap::new();
        for (oid, bytes) in missing.into_iter().zip(contents) {
            if let Some(bytes) = keep_plain(blobs_read, &oid, bytes) {
                let kept = Arc::new(bytes.clone());
                odd.insert(oid, (crate::fs::decode(bytes).map(Arc::new), kept));
            }
        }
        let ignores = read_blobs(&ignore_blobs, &|b| shown(&ignore_paths, &ignore_blobs, b))?;
        let mut raw = BTreeMap::new();
        let mut files: Vec<(String, Decoded)> = paths
            .into_iter()
            .zip(blobs)
            .filter_map(|(p, oid)| {
                let read = match blobs_read.get(&oid) {
                    Some(text) => Ok(text.clone()),
                    None => {
                        let (read, bytes) = odd.get(&oid)?;
                        if in_chart(&p, &charts) {
                            raw.insert(p.clone(), bytes.clone());
                        }
                        read.clone()
                    }
                };
                Some((p, read))
            })
            .chain(ignore_paths.into_iter().zip(ignores).map(|(p, bytes)| {
                let text = decoded(&p, bytes);
                (p, text)
            }))
            .collect();
        add_generator_inputs(
            &mut files,
            &mut raw,
            |p| listed(p) || in_chart(p, &charts),
            |inputs| {
                let blob_of: HashMap<&str, &str> = listing_blobs(listing)
                    .filter(|(p, _)| inputs.binary_search_by(|i| i.as_str().cmp(p)).is_ok())
                    .collect();
                let (found, ids): (Vec<String>, Vec<String>) = inputs
                    .iter()
                    .filter_map(|p| Some((p.clone(), blob_of.get(p.as_str())?.to_string())))
                    .unzip();
                let mut read = read_blobs(&ids, &|b| shown(&found, &ids, b))?.into_iter();
                Ok(inputs
                    .iter()
                    .map(|p| {
                        blob_of
                            .contains_key(p.as_str())
                            .then(|| read.next())
                            .flatten()
                    })
                    .collect())
            },
        )?;
        Ok(FileTree {
            commit: Some(short.clone()),
            ..tree_of(files, raw, folders, short)
        })
    }

    /// The working tree under `root`: the files git tracks or would track, as they are on
    /// disk (a tracked file deleted on disk is absent, as it would be after a commit).
    pub fn from_worktree(root: &Path) -> Result<FileTree> {
        match worktree_listing(root)? {
            Ok(listing) => FileTree::listed_worktree(root, &listing),
            Err(state) => Err(not_a_worktree(root, state)),
        }
    }

    /// The tree of the working tree at `root` from git's `listing` of it.
    fn listed_worktree(root: &Path, listing: &[u8]) -> Result<FileTree> {
        let mut folders = BTreeSet::new();
        let charts = chart_folders(
            listing
                .split(|b| *b == 0)
                .filter_map(|p| std::str::from_utf8(p).ok()),
        );
        let paths: Vec<&str> = listing
            .split(|b| *b == 0)
            .filter_map(|p| std::str::from_utf8(p).ok())
            .filter(|p| {
                if !p.is_empty() && !wanted(p) {
                    add_folders(&mut folders, p);
                }
                !p.is_empty() && (listed(p) || in_chart(p, &charts))
            })
            .collect();
        // Read on every core: at 100,000 services this is 260,000 files.
        // Links are not followed (git records a link, not what it points at), and only
        // regular files are read: a FIFO would block the read forever.
        let texts = crate::par::map_with(
            &paths,
            || crate::fs::Listed::new(root),
            |listed, path| -> Result<Option<Loaded>> {
                Ok(listed.read(path)?.map(|b| {
                    let raw = raw_of(path, &b, &charts);
                    (decoded(path, b), raw)
                }))
            },
        );
        let mut files = Vec::new();
        let mut raw = BTreeMap::new();
        for (path, text) in paths.into_iter().zip(texts) {
            if let Some((text, bytes)) = text? {
                files.push((path.to_string(), text));
                raw.extend(bytes);
            }
        }
        add_generator_inputs(
            &mut files,
            &mut raw,
            |p| listed(p) || in_chart(p, &charts),
            |inputs| {
                // Only what git lists: a file git ignores is not in the commit either.
                let listed_paths: std::collections::HashSet<&str> = listing
                    .split(|b| *b == 0)
                    .filter_map(|p| std::str::from_utf8(p).ok())
                    .collect();
                let mut disk = crate::fs::Listed::new(root);
                let mut read = |p: &String| match listed_paths.contains(p.as_str()) {
                    true => disk.read(p),
                    false => Ok(None),
                };
                inputs.iter().map(&mut read).collect()
            },
        )?;
        Ok(tree_of(files, raw, folders, "the working tree".into()))
    }

    /// The working tree when `root` is in a git repository; else every file under `root` as
    /// it is on disk (links and `.git` left out), so a folder that is not yet a repository
    /// is read the same way.
    pub fn from_worktree_or_dir(root: &Path) -> Result<FileTree> {
        match worktree_listing(root)? {
            Ok(listing) => return FileTree::listed_worktree(root, &listing),
            Err(GitState::WorkTree | GitState::NotARepository) => {}
            // A repository git cannot read is not read as a plain folder: that would take
            // in what git ignores, and judge another tree than the one committed.
            Err(GitState::Refused(why)) if in_a_repository(root) => return Err(Error::Usage(why)),
            Err(GitState::Refused(_)) => {}
        }
        let mut found = Vec::new();
        walk_files(root, true, |path, entry| {
            found.push((path, entry.path()));
            Ok(())
        })?;
        // A chart's every file is read, as from git (see `chart_folders`).
        let charts = chart_folders(found.iter().map(|(p, _)| p.as_str()));
        let mut files = Vec::new();
        let mut raw = BTreeMap::new();
        let mut folders = BTreeSet::new();
        for (path, full) in &found {
            if !wanted(path) {
                add_folders(&mut folders, path);
            }
            if !(listed(path) || in_chart(path, &charts)) {
                continue;
            }
            // Through the same size and file-type rules as every other read.
            if let Some(bytes) = crate::fs::read_regular(full, path)? {
                raw.extend(raw_of(path, &bytes, &charts));
                let text = decoded(path, bytes);
                files.push((path.clone(), text));
            }
        }
        add_generator_inputs(
            &mut files,
            &mut raw,
            |p| listed(p) || in_chart(p, &charts),
            |inputs| {
                let fulls: HashMap<&str, &std::path::PathBuf> =
                    found.iter().map(|(p, f)| (p.as_str(), f)).collect();
                let read = |p: &String| match fulls.get(p.as_str()) {
                    Some(full) => crate::fs::read_regular(full, p),
                    None => Ok(None),
                };
                inputs.iter().map(read).collect()
            },
        )?;
        Ok(tree_of(files, raw, folders, "the working tree".into()))
    }
}
