//! A revision as an in-memory file tree. A git revision is read with plumbing (`git ls-tree
//! -r -z`, one `git cat-file --batch`; see `git` and `read`), the working tree with `git ls-files` and
//! the file system; both give the same `FileTree`, so the builder cannot tell them apart,
//! and a file is judged the same from either (decoded by `fs::decode`, or named unreadable
//! at its first bad byte).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::fs::Undecodable;
use crate::yaml::Text;

mod git;
mod history;
mod ignore;
mod objects;
mod read;

pub use git::{first_parent_steps, git_command, require_git, subjects, GitState};
pub use history::History;
pub use objects::GitObjects;
pub use read::Blobs;
use read::{decoded, tree_of, walk_files};

pub use ignore::{Matcher, IGNORE_FILE};

/// The manifest-like files of one revision, by path relative to the repository root.
///
/// Most trees hold every file (a git revision, the working tree, a folder). A tree `on_disk`
/// holds only the files written into it (`with_file`) and reads the rest from a folder when
/// they are first asked for: what builds a few kustomizations of a large repository reads
/// those, not the whole repository.
///
/// A tree's `artifact` view is what Flux builds: the same files less those source-controller
/// leaves out of the artifact (see `ignore`).
#[derive(Debug, Clone, Default)]
pub struct FileTree {
    /// Shared between a tree and its artifact views.
    files: Arc<BTreeMap<String, Text>>,
    /// The `.sourceignore` files, by the folder they are in ("" for the root).
    ignores: Arc<BTreeMap<String, Text>>,
    /// Files kustomize cannot read as text (see `fs::decode`), with why. They are files of
    /// the tree (listed, `is_file`) that `read` does not give: a build that reads one fails.
    unreadable: Arc<BTreeMap<String, Undecodable>>,
    /// The bytes of the files of a Helm chart whose text is not their bytes (a binary file,
    /// a byte order mark): `helm template` reads a chart's files as bytes (`.Files.Get`), as
    /// source-controller's artifact holds them.
    raw: Arc<BTreeMap<String, Bytes>>,
    /// The folder read on demand, for a tree `on_disk`.
    disk: Option<Arc<Disk>>,
    /// Files of the folder that this tree does not have (`without_file`).
    gone: BTreeSet<String>,
    /// Folders holding files the tree does not keep (a README, templates): they exist, as
    /// they do in Flux's artifact, though nothing the builder reads is in them. Shared with
    /// the tree's views and the next revision's tree while they are the same.
    folders: Arc<BTreeSet<String>>,
    /// What the tree is, for messages: a short commit id or "the working tree".
    pub label: String,
    /// For a git revision, its short commit id: how its files are named in errors.
    commit: Option<String>,
    /// What was asked of a tree made by `recording`: see `Footprint`.
    log: Option<Arc<Mutex<Footprint>>>,
    /// For an artifact view, what it leaves out.
    hidden: Option<Arc<View>>,
    /// The artifact views made of this tree, by `spec.ignore`: each environment's builds of
    /// a revision ask for one, and its files are judged once.
    views: Arc<Mutex<Views>>,
}

/// A tree's artifact views, each by the folder it is of and the `spec.ignore` it was made with.
type Views = Vec<((String, Option<String>), Arc<View>)>;

/// What an artifact view leaves out.
#[derive(Debug)]
struct View {
    matcher: Matcher,
    /// The tree's files it leaves out, judged once; `None` for a tree on disk (its files are
    /// not listed) or one written to since (`with_file`): then each path is judged when asked.
    files: Option<HashSet<String>>,
}

/// Where fluxwave puts the files it makes for a build (the ExternalArtifacts an
/// ArtifactGenerator makes of the repository): a folder no repository's files are in.
pub const GENERATED: &str = ".fluxwave/external-artifacts";

/// What a build asked of a tree: the paths it read or looked for, and the folders it listed
/// or looked into. A change to none of them cannot change what the build yields.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Footprint {
    pub files: BTreeSet<String>,
    /// Folders ("" is the root) anything under which counts.
    pub folders: BTreeSet<String>,
}

/// How one tree differs from another (`FileTree::changes`).
#[derive(Debug, Clone, Default)]
pub struct Changes {
    /// Files in both whose text differs.
    pub changed: Vec<String>,
    /// Paths in one and not the other.
    pub presence: Vec<String>,
}

impl Changes {
    /// Whether the two trees are the same.
    pub fn is_empty(&self) -> bool {
        self.changed.is_empty() && self.presence.is_empty()
    }
}

impl Footprint {
    /// Adds what `other` asked.
    pub fn extend(&mut self, other: Footprint) {
        self.files.extend(other.files);
        self.folders.extend(other.folders);
    }

    /// Whether the build still yields what it did over a tree that differs by `changes`:
    /// it read none of the files that changed, and none that came or went is a file it
    /// looked for or lies in a folder it listed. (A folder is listed by its paths: what a
    /// build reads of the files in it is in `files`.)
    pub fn holds_over(&self, changes: &Changes) -> bool {
        !changes.changed.iter().any(|p| self.files.contains(p))
            && !changes.presence.iter().any(|p| self.covers(p))
    }

    /// Whether a change to the file at `path` may change what the build yields.
    pub fn covers(&self, path: &str) -> bool {
        if self.files.contains(path) || self.folders.contains("") {
            return true;
        }
        // A build lists a folder or two: each is asked of the path, else each folder the
        // path is in of the footprint.
        if self.folders.len() <= 4 {
            return self.folders.iter().any(|f| {
                path.strip_prefix(f.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
            });
        }
        path.match_indices('/')
            .any(|(i, _)| self.folders.contains(&path[..i]))
    }
}

/// A folder whose files are read when first asked for, each once (its absence too).
#[derive(Debug)]
struct Disk {
    root: PathBuf,
    read: Mutex<HashMap<String, Option<Decoded>>>,
}

impl Disk {
    /// The file at `rel` through `fs::read_optional` (a regular file, never through a link,
    /// size bounded, in a folder that does not lead out of the root through a link, text as
    /// `fs::decode` reads it); `None` when it does not exist or cannot be read that way.
    fn read(&self, rel: &str) -> Option<Text> {
        self.load(rel).and_then(Result::ok)
    }

    /// The bytes of the file at `rel`, read as `load` reads (not kept: only a chart's files
    /// are read this way).
    fn bytes(&self, rel: &str) -> Option<Bytes> {
        crate::fs::read_bytes(&self.root, rel)
            .ok()
            .flatten()
            .map(Arc::new)
    }

    /// The file at `rel` as `read` reads it, or why its bytes are no text (`Some(Err)`: the
    /// file is there, and a build that reads it fails).
    fn load(&self, rel: &str) -> Option<Decoded> {
        let mut cache = self
            .read
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(hit) = cache.get(rel) {
            return hit.clone();
        }
        let loaded = crate::fs::read_bytes(&self.root, rel)
            .ok()
            .flatten()
            .map(|bytes| crate::fs::decode(bytes).map(Arc::new));
        cache.insert(rel.to_string(), loaded.clone());
        loaded
    }

    /// The `.sourceignore` files of the folder, found by a walk that skips `.git` and links
    /// (as `sourceignore.LoadIgnorePatterns` does), under those written into the tree and
    /// less those removed from it.
    fn ignore_files(
        &self,
        written: &BTreeMap<String, Text>,
        gone: &BTreeSet<String>,
    ) -> BTreeMap<String, Text> {
        let mut found = BTreeMap::new();
        let _ = walk_files(&self.root, false, |path, _| {
            let name = path.rsplit('/').next().unwrap_or(&path);
            if name == IGNORE_FILE && !gone.contains(&path) {
                if let Ok(Some(bytes)) = crate::fs::read_bytes(&self.root, &path) {
                    if let Ok(text) = decoded(&path, bytes) {
                        found.insert(ignore_dir(&path), text);
                    }
                }
            }
            Ok(())
        });
        found.extend(written.iter().map(|(d, t)| (d.clone(), t.clone())));
        found
    }

    /// Whether `rel` is a folder (not a link to one).
    fn is_dir(&self, rel: &str) -> bool {
        self.root
            .join(rel)
            .symlink_metadata()
            .is_ok_and(|m| m.is_dir())
    }
}

/// Files the builder may read: manifests, kustomizations and patches.
fn wanted(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.ends_with(".yaml")
        || name.ends_with(".yml")
        || name.ends_with(".json")
        || name == "Kustomization"
}

/// The files a tree reads: those the builder may read, and `.sourceignore` files.
fn listed(path: &str) -> bool {
    wanted(path) || is_ignore_file(path)
}

/// A tree's `.sourceignore` files are kept apart from its files: they decide what the
/// artifact holds, and are no manifest.
fn is_ignore_file(path: &str) -> bool {
    path.rsplit('/').next() == Some(IGNORE_FILE)
}

/// The folder a `.sourceignore` at `path` is in ("" for the root).
fn ignore_dir(path: &str) -> String {
    path.rsplit_once('/')
        .map_or(String::new(), |(dir, _)| dir.to_string())
}

/// A file as read: its text, or why kustomize cannot read it as text.
type Decoded = std::result::Result<Text, Undecodable>;

/// A file's bytes, shared.
pub type Bytes = Arc<Vec<u8>>;

impl FileTree {
    /// A tree of these files (a `.sourceignore` among them is one of its ignore files).
    pub fn from_files<'a>(files: impl IntoIterator<Item = (&'a str, &'a str)>) -> FileTree {
        tree_of(
            files
                .into_iter()
                .map(|(p, t)| (p.to_string(), Ok(Arc::new(t.to_string())))),
            BTreeMap::new(),
            BTreeSet::new(),
            "test".into(),
        )
    }

    /// The files of the folder `root` (the working tree of a repository, as `apply` sees
    /// it), each read from disk when first asked for, through the same rules as every read
    /// (`fs::read_regular`: a regular file, no link followed, size bounded; text as
    /// `fs::decode` reads it; the file names of `wanted`). It lists only the files written into it: `files`,
    /// `files_under` and `manifests` do not walk the folder, so it serves builds that follow
    /// kustomizations (every file they read is named), not Flux's generated kustomization of
    /// a folder without one.
    pub fn on_disk(root: &Path) -> FileTree {
        FileTree {
            disk: Some(Arc::new(Disk {
                root: root.to_path_buf(),
                read: Mutex::default(),
            })),
            label: "the working tree".into(),
            ..FileTree::default()
        }
    }

    /// This tree with the file at `path` holding `text`, as a write would leave it.
    pub fn with_file(self, path: &str, text: &str) -> FileTree {
        self.with_text(path, Arc::new(text.to_string()))
    }

    /// This tree with the file at `path` holding `text` (shared, not copied).
    pub fn with_text(mut self, path: &str, text: Text) -> FileTree {
        self.written();
        self.gone.remove(path);
        if self.raw.contains_key(path) {
            Arc::make_mut(&mut self.raw).remove(path);
        }
        if self.unreadable.contains_key(path) {
            Arc::make_mut(&mut self.unreadable).remove(path);
        }
        if is_ignore_file(path) {
            Arc::make_mut(&mut self.ignores).insert(ignore_dir(path), text);
        } else {
            Arc::make_mut(&mut self.files).insert(path.to_string(), text);
        }
        self
    }

    /// This tree with a file at `path` whose bytes are no text (`unreadable`), as a copy of
    /// such a file leaves it: a build that reads it fails.
    pub fn with_unreadable(mut self, path: &str, why: Undecodable) -> FileTree {
        self.written();
        self.gone.remove(path);
        Arc::make_mut(&mut self.files).insert(path.to_string(), Text::default());
        Arc::make_mut(&mut self.unreadable).insert(path.to_string(), why);
        if self.raw.contains_key(path) {
            Arc::make_mut(&mut self.raw).remove(path);
        }
        self
    }

    /// This tree without the file at `path`, as a removal would leave it.
    pub fn without_file(mut self, path: &str) -> FileTree {
        self.written();
        if self.raw.contains_key(path) {
            Arc::make_mut(&mut self.raw).remove(path);
        }
        if self.unreadable.contains_key(path) {
            Arc::make_mut(&mut self.unreadable).remove(path);
        }
        if is_ignore_file(path) {
            Arc::make_mut(&mut self.ignores).remove(&ignore_dir(path));
        } else {
            Arc::make_mut(&mut self.files).remove(path);
        }
        if self.disk.is_some() {
            self.gone.insert(path.to_string());
        }
        self
    }

    /// The artifact Flux builds from this tree: the same files less those source-controller
    /// leaves out of a GitRepository's artifact (the tree's `.sourceignore` files, then
    /// `spec_ignore`, the GitRepository's `spec.ignore`; without any pattern, Flux's default
    /// exclusions). Only builds read it: what checks every file of the repository reads the
    /// tree itself.
    pub fn artifact(&self, spec_ignore: Option<&str>) -> FileTree {
        self.artifact_after("", spec_ignore, None)
    }

    /// `artifact`, made knowing `earlier`, an artifact view of another tree (the revision
    /// before, in a history): when its view was made by the same rules, a file both trees
    /// have is left out by this view when it is by that one (the rules judge paths only), so
    /// only the files `earlier` lacks are judged. An artifact made of `folder` of the tree
    /// (an OCI artifact pushed from it; "" for the whole tree) holds nothing outside it, and
    /// only the `.sourceignore` files inside it apply.
    pub fn artifact_after(
        &self,
        folder: &str,
        spec_ignore: Option<&str>,
        earlier: Option<&FileTree>,
    ) -> FileTree {
        let key = (folder.to_string(), spec_ignore.map(str::to_string));
        let mut views = self
            .views
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let view = match views.iter().find(|(k, _)| *k == key) {
            Some((_, view)) => view.clone(),
            None => {
                let view = Arc::new(self.view(folder, spec_ignore, earlier));
                views.push((key, view.clone()));
                view
            }
        };
        drop(views);
        FileTree {
            hidden: Some(view),
            ..self.clone()
        }
    }

    fn view(&self, folder: &str, spec_ignore: Option<&str>, earlier: Option<&FileTree>) -> View {
        let walked;
        let ignores: &BTreeMap<String, Text> = match &self.disk {
            Some(disk) => {
                walked = disk.ignore_files(&self.ignores, &self.gone);
                &walked
            }
            None => &self.ignores,
        };
        let inside = |d: &str| {
            folder.is_empty()
                || d == folder
                || d.strip_prefix(folder).is_some_and(|r| r.starts_with('/'))
        };
        let matcher = Matcher::new(
            ignores
                .iter()
                .filter(|(d, _)| inside(d))
                .map(|(d, t)| (d.as_str(), t.as_str())),
            spec_ignore,
        )
        .within(folder);
        // Both trees are in path order: one walk finds which paths `earlier` has.
        let mut judged = earlier
            .filter(|e| e.disk.is_none())
            .and_then(|e| Some((e, e.hidden.as_deref()?)))
            .filter(|(_, v)| v.matcher == matcher)
            .and_then(|(e, v)| Some((e.files.keys().peekable(), v.files.as_ref()?)));
        let files = self.disk.is_none().then(|| {
            self.files
                .keys()
                .filter(|p| {
                    if let Some((theirs, their_hidden)) = &mut judged {
                        while theirs.next_if(|q| q < p).is_some() {}
                        if theirs.next_if(|q| q == p).is_some() {
                            return their_hidden.contains(*p);
                        }
                    }
                    matcher.hides(p, false)
                })
                .cloned()
                .collect()
        });
        View { matcher, files }
    }

    /// A tree written to is another tree: its views are made again, and a view written to
    /// judges its paths when asked.
    fn written(&mut self) {
        self.views = Arc::default();
        if let Some(view) = &self.hidden {
            self.hidden = Some(Arc::new(View {
                matcher: view.matcher.clone(),
                files: None,
            }));
        }
    }

    /// Whether the view leaves out the file (or folder) at `path`. What fluxwave adds under
    /// `GENERATED` (an ExternalArtifact's files) is not in the source, so no ignore rule of
    /// the source applies to it.
    fn hides(&self, path: &str, is_dir: bool) -> bool {
        if path.starts_with(GENERATED) {
            return false;
        }
        match &self.hidden {
            None => false,
            Some(view) => match &view.files {
                Some(files) if !is_dir && self.files.contains_key(path) => files.contains(path),
                _ => view.matcher.hides(path, is_dir),
            },
        }
    }

    /// For a git revision, its short commit id, as `shown` names its files.
    pub fn commit(&self) -> Option<&str> {
        self.commit.as_deref()
    }

    /// The file at `path` as an error names it: as git names a file of a revision
    /// (`<commit>:<path>`, which `git show` takes), or its path in the working tree.
    pub fn shown(&self, path: &str) -> String {
        match &self.commit {
            Some(commit) => format!("{commit}:{path}"),
            None => path.to_string(),
        }
    }

    /// Why kustomize cannot read the file at `path` as text, when it cannot.
    pub fn unreadable(&self, path: &str) -> Option<Undecodable> {
        if self.hides(path, false) {
            return None;
        }
        if let Some(why) = self.unreadable.get(path) {
            return Some(*why);
        }
        match &self.disk {
            Some(disk)
                if wanted(path) && !self.gone.contains(path) && !self.files.contains_key(path) =>
            {
                disk.load(path).and_then(Result::err)
            }
            _ => None,
        }
    }

    /// The bytes of the file at `path`, as a Helm chart's files are read (`.Files.Get`, a
    /// binary file, a template with a byte order mark): a file whose text is its bytes gives
    /// its text, a file of a chart folder whose text is not gives its bytes; `None` for a file
    /// the tree does not have or cannot read.
    pub fn bytes(&self, path: &str) -> Option<Bytes> {
        if let Some(bytes) = self.raw.get(path) {
            self.note(|f| f.files.insert(path.to_string()));
            return (!self.hides(path, false)).then(|| bytes.clone());
        }
        if let (Some(disk), false) = (&self.disk, self.files.contains_key(path)) {
            if self.gone.contains(path) || self.hides(path, false) {
                return None;
            }
            self.note(|f| f.files.insert(path.to_string()));
            return disk.bytes(path);
        }
        self.read(path).map(|t| Arc::new(t.as_bytes().to_vec()))
    }

    /// The text of the file at `path` (shared, not copied); `None` for an `unreadable` one.
    pub fn read(&self, path: &str) -> Option<Text> {
        self.note(|f| f.files.insert(path.to_string()));
        // A path the tree has no file at needs no verdict of the ignore rules (a build asks
        // for many that are not there: `kustomization.yml`, `Kustomization`, ...).
        let held = self.files.get(path);
        if held.is_none() && self.disk.is_none()
            || self.hides(path, false)
            || self.unreadable.contains_key(path)
        {
            return None;
        }
        if let Some(text) = held {
            return Some(text.clone());
        }
        match &self.disk {
            Some(disk) if wanted(path) && !self.gone.contains(path) => disk.read(path),
            _ => None,
        }
    }

    pub fn is_file(&self, path: &str) -> bool {
        self.note(|f| f.files.insert(path.to_string()));
        // As in `read`: no verdict for a path the tree has no file at.
        let held = self.files.contains_key(path);
        if !held && self.disk.is_none() || self.hides(path, false) {
            return false;
        }
        held || match &self.disk {
            Some(disk) => wanted(path) && !self.gone.contains(path) && disk.load(path).is_some(),
            None => false,
        }
    }

    /// Whether some file lies under `dir` ("" is the root), or a file the tree does not
    /// keep; for a tree `on_disk`, whether it is a folder of the disk. In an artifact view a
    /// folder the patterns leave out is still there when a file under it is not (fluxcd/pkg
    /// `tar.Untar` makes a file's folders), and a folder they keep stays when every file
    /// under it is left out (`storage.Archive` archives every folder the filter keeps).
    pub fn is_dir(&self, dir: &str) -> bool {
        self.note(|f| f.folders.insert(dir.to_string()));
        dir.is_empty()
            || !self.hides(dir, true)
                && (self.folders.contains(dir)
                    || self.under(dir).next().is_some()
                    || self.disk.as_ref().is_some_and(|d| d.is_dir(dir)))
            || self.hidden.is_some() && self.files_under(dir).next().is_some()
    }

    /// This tree, recording what is asked of it until `take_footprint`.
    pub fn recording(&self) -> FileTree {
        FileTree {
            log: Some(Arc::default()),
            ..self.clone()
        }
    }

    /// Whether the file at `path` is `text` (the same text, not a copy), as the tree holds it;
    /// nothing is recorded.
    pub fn holds(&self, path: &str, text: &Text) -> bool {
        self.files.get(path).is_some_and(|t| Arc::ptr_eq(t, text))
    }

    /// The text of the file at `path`, left out of the view or not; nothing is recorded.
    pub fn held(&self, path: &str) -> Option<&Text> {
        self.files.get(path)
    }

    /// Whether the file at `path` is one `files` gives (held, and not left out of the view);
    /// nothing is recorded.
    pub fn lists(&self, path: &str) -> bool {
        self.files.contains_key(path) && !self.hides(path, false)
    }

    /// Whether this tree is `recording`.
    pub fn is_recording(&self) -> bool {
        self.log.is_some()
    }

    /// What was asked of a `recording` tree since the last call (empty for any other tree).
    pub fn take_footprint(&self) -> Footprint {
        self.log.as_ref().map_or_else(Footprint::default, |log| {
            std::mem::take(
                &mut *log
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
            )
        })
    }

    fn note(&self, f: impl FnOnce(&mut Footprint) -> bool) {
        if let Some(log) = &self.log {
            f(&mut log
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner));
        }
    }

    /// The paths whose files differ between this tree and `other` (added, removed or
    /// changed), in path order.
    pub fn changed_paths(&self, other: &FileTree) -> Vec<String> {
        let Changes {
            mut changed,
            presence,
        } = self.changes(other);
        changed.extend(presence);
        changed.sort();
        changed.dedup();
        changed
    }

    /// How `other` differs from this tree: the files whose text changed, and the paths that
    /// are in one tree and not the other (files added or removed, folders that are there by
    /// files the trees do not keep, `folder/`, and every file under a `.sourceignore` that
    /// changed, which may come and go from the artifact).
    pub fn changes(&self, other: &FileTree) -> Changes {
        let (mut changed, mut presence) = (Vec::new(), Vec::new());
        let (mut a, mut b) = (self.files.iter().peekable(), other.files.iter().peekable());
        loop {
            match (a.peek(), b.peek()) {
                (Some((pa, ta)), Some((pb, tb))) => match pa.cmp(pb) {
                    std::cmp::Ordering::Less => {
                        presence.push((*pa).clone());
                        a.next();
                    }
                    std::cmp::Ordering::Greater => {
                        presence.push((*pb).clone());
                        b.next();
                    }
                    std::cmp::Ordering::Equal => {
                        if !Arc::ptr_eq(ta, tb) && ta != tb {
                            changed.push((*pa).clone());
                        }
                        a.next();
                        b.next();
                    }
                },
                (Some((p, _)), None) => {
                    presence.push((*p).clone());
                    a.next();
                }
                (None, Some((p, _))) => {
                    presence.push((*p).clone());
                    b.next();
                }
                (None, None) => break,
            }
        }
        // A file kustomize cannot read is a file of the tree: one that comes, goes or fails
        // another way changes what a build that reads it yields.
        if !Arc::ptr_eq(&self.unreadable, &other.unreadable) {
            let paths: BTreeSet<&String> = self
                .unreadable
                .keys()
                .chain(other.unreadable.keys())
                .collect();
            for p in paths {
                match (self.unreadable.get(p), other.unreadable.get(p)) {
                    (Some(x), Some(y)) if x == y => {}
                    (Some(_), Some(_)) => changed.push(p.clone()),
                    _ => presence.push(p.clone()),
                }
            }
        }
        // A folder holding only files the tree does not keep (see `folders`) is there or not
        // by them: it counts as changed under it.
        if !Arc::ptr_eq(&self.folders, &other.folders) {
            presence.extend(
                self.folders
                    .symmetric_difference(&other.folders)
                    .map(|f| format!("{f}/")),
            );
        }
        // A `.sourceignore` that changes may change what the artifact holds under its folder.
        let dirs: BTreeSet<&String> = self.ignores.keys().chain(other.ignores.keys()).collect();
        for dir in dirs {
            if self.ignores.get(dir) != other.ignores.get(dir) {
                if !dir.is_empty() {
                    presence.push(format!("{dir}/"));
                }
                presence.extend(self.under(dir).chain(other.under(dir)).map(str::to_string));
            }
        }
        Changes { changed, presence }
    }

    /// Every file of the tree with its text, in path order.
    pub fn files(&self) -> impl Iterator<Item = (&str, &Text)> {
        self.files
            .iter()
            .map(|(p, t)| (p.as_str(), t))
            .filter(|(p, _)| !self.hides(p, false))
    }

    /// Every YAML manifest of the tree (`.yaml`, `.yml`) with its text, in path order.
    pub fn manifests(&self) -> impl Iterator<Item = (&str, &Text)> {
        self.files().filter(|(p, _)| crate::fs::is_manifest(p))
    }

    /// Every file under `dir`, recursively, in path order.
    pub fn files_under<'a>(&'a self, dir: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.note(|f| f.folders.insert(dir.to_string()));
        self.under(dir).filter(|p| !self.hides(p, false))
    }

    /// Every file under `dir` that the tree holds, left out of the view or not.
    fn under<'a>(&'a self, dir: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        self.files
            .range(prefix.clone()..)
            .take_while(move |(p, _)| p.starts_with(&prefix))
            .map(|(p, _)| p.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A footprint covers a path it read, and any path under a folder it listed (a folder
    /// that came or went is named with a trailing `/`), however many folders it listed.
    #[test]
    fn a_footprint_covers_what_lies_under_its_folders() {
        let few = Footprint {
            files: ["apps/a/ks.yaml".to_string()].into(),
            folders: ["apps/b".to_string()].into(),
        };
        let mut many = few.clone();
        many.folders
            .extend(["x", "y/z", "w", "v"].map(String::from));
        for f in [&few, &many] {
            assert!(f.covers("apps/a/ks.yaml") && f.covers("apps/b/c/d.yaml"));
            assert!(f.covers("apps/b/") && f.covers("apps/b/c/"));
            assert!(!f.covers("apps/b") && !f.covers("apps/bc/d.yaml") && !f.covers("apps/a/x"));
            assert!(!f.covers("apps/") && !f.covers("b/apps/b/c.yaml"));
        }
        assert!(many.covers("y/z/q.yaml") && !many.covers("y/q.yaml"));
        let root = Footprint {
            folders: [String::new()].into(),
            ..Footprint::default()
        };
        assert!(root.covers("anything/at/all.yaml"));
    }

    #[test]
    fn lists_files_under_a_folder_only() {
        let t = FileTree::from_files([
            ("apps/a.yaml", ""),
            ("apps2/b.yaml", ""),
            ("apps/x/c.yaml", ""),
        ]);
        assert_eq!(
            t.files_under("apps").collect::<Vec<_>>(),
            ["apps/a.yaml", "apps/x/c.yaml"]
        );
        assert!(t.is_dir("apps/x") && !t.is_dir("apps/y"));
    }

    /// A folder of only a README exists (Flux builds it, empty), and its coming or going
    /// is a change under it.
    #[test]
    fn a_folder_of_files_the_tree_does_not_keep_exists() {
        let dir = std::env::temp_dir().join(format!("fluxwave-folders-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("apps/retired/docs")).unwrap();
        std::fs::write(dir.join("apps/retired/docs/README.md"), "# gone\n").unwrap();
        std::fs::write(dir.join("apps/a.yaml"), "a: 1\n").unwrap();
        let with = FileTree::from_worktree_or_dir(&dir).unwrap();
        assert!(with.is_dir("apps/retired") && with.is_dir("apps/retired/docs"));
        assert!(!with.is_file("apps/retired/docs/README.md") && !with.is_dir("apps/other"));
        std::fs::remove_dir_all(dir.join("apps/retired")).unwrap();
        let without = FileTree::from_worktree_or_dir(&dir).unwrap();
        assert!(!without.is_dir("apps/retired"));
        // Every folder the README was under: what looked into any of them may differ.
        assert_eq!(
            with.changed_paths(&without),
            ["apps/", "apps/retired/", "apps/retired/docs/"]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A folder outside git is read through the same rules as a working tree: a file over
    /// the size bound is refused by name, not read into memory.
    #[test]
    fn a_folder_outside_git_refuses_a_file_over_the_bound() {
        let dir = std::env::temp_dir().join(format!("fluxwave-tree-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("apps")).unwrap();
        std::fs::write(dir.join("apps/a.yaml"), "a: 1\n").unwrap();
        let tree = FileTree::from_worktree_or_dir(&dir).unwrap();
        assert!(tree.is_file("apps/a.yaml"));
        let big = std::fs::File::create(dir.join("apps/big.yaml")).unwrap();
        big.set_len(crate::fs::MAX_FILE_BYTES + 1).unwrap();
        let err = FileTree::from_worktree_or_dir(&dir)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("apps/big.yaml") && err.contains("MiB"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_tree_on_disk_reads_on_demand_under_its_overlay() {
        let dir = std::env::temp_dir().join(format!("fluxwave-on-disk-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("a/b")).unwrap();
        std::fs::write(dir.join("a/k.yaml"), "on: disk\n").unwrap();
        std::fs::write(dir.join("a/gone.yaml"), "x: 1\n").unwrap();
        std::fs::write(dir.join("a/notes.txt"), "not wanted\n").unwrap();
        std::os::unix::fs::symlink(dir.join("a/k.yaml"), dir.join("a/link.yaml")).unwrap();
        let t = FileTree::on_disk(&dir)
            .with_file("a/new.yaml", "in: memory\n")
            .without_file("a/gone.yaml");
        assert_eq!(
            t.read("a/k.yaml").as_deref().map(String::as_str),
            Some("on: disk\n")
        );
        assert_eq!(
            t.read("a/new.yaml").as_deref().map(String::as_str),
            Some("in: memory\n")
        );
        assert!(t.read("a/gone.yaml").is_none() && !t.is_file("a/gone.yaml"));
        assert!(
            t.read("a/notes.txt").is_none(),
            "only the files a build may read"
        );
        assert!(t.read("a/link.yaml").is_none(), "a link is not followed");
        assert!(t.is_file("a/k.yaml") && t.is_dir("a/b") && !t.is_dir("a/k.yaml"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The artifact view hides what the patterns exclude from every read; a folder stays
    /// while a file under it is kept (fluxcd/pkg `tar.Untar` makes it) or while the patterns
    /// keep it (`storage.Archive` archives it, empty or not).
    #[test]
    fn the_artifact_view_hides_what_the_patterns_exclude() {
        let t = FileTree::from_files([
            (".sourceignore", "/logs/\n!logs/keep.yaml\n"),
            ("apps/.sourceignore", "*.yaml\n"),
            ("apps/a.yaml", ""),
            ("logs/a.yaml", ""),
            ("logs/keep.yaml", ""),
            ("tmp/x/a.yaml", ""),
        ]);
        assert!(t.files().all(|(p, _)| !p.ends_with(IGNORE_FILE)));
        let v = t.artifact(Some("tmp/x/\n"));
        assert!(v.read("apps/a.yaml").is_none() && !v.is_file("logs/a.yaml"));
        assert!(v.is_file("logs/keep.yaml") && v.is_dir("logs"));
        assert!(
            v.is_dir("apps"),
            "a kept folder whose files are all left out"
        );
        assert!(!v.is_dir("tmp/x") && v.files_under("tmp").next().is_none());
        assert_eq!(
            v.files().map(|(p, _)| p).collect::<Vec<_>>(),
            ["logs/keep.yaml"]
        );
        assert!(t.read("apps/a.yaml").is_some(), "the tree keeps every file");
        // A tree written to makes its views again.
        let t = t.with_file("apps/.sourceignore", "b.yaml\n");
        assert!(t.artifact(Some("tmp/x/\n")).is_file("apps/a.yaml"));
    }

    /// A view made knowing an earlier tree's view leaves out what the view made alone does:
    /// with the same rules and files added, removed or kept, and with other rules (a changed
    /// `.sourceignore` or `spec.ignore`), where the earlier judgement is not used.
    #[test]
    fn a_view_after_an_earlier_one_is_the_view_made_alone() {
        let rules = (".sourceignore", "/logs/\n!logs/keep.yaml\n*.png\n");
        let earlier = FileTree::from_files([
            rules,
            ("apps/a.yaml", ""),
            ("apps/b.png", ""),
            ("logs/a.yaml", ""),
            ("logs/keep.yaml", ""),
            ("tmp/x/a.yaml", ""),
        ]);
        let files = [
            ("a/z.yaml", ""),
            ("apps/a.yaml", ""),
            ("apps/c.png", ""),
            ("logs/a.yaml", ""),
            ("logs/b.yaml", ""),
            ("logs/keep.yaml", ""),
            ("tmp/x/a.yaml", ""),
        ];
        let with_rules = |ignore: &'static str| {
            FileTree::from_files(files.into_iter().chain([(".sourceignore", ignore)]))
        };
        let seen = |t: &FileTree| t.files().map(|(p, _)| p.to_string()).collect::<Vec<_>>();
        let before = earlier.artifact(Some("tmp/\n"));
        for spec in [None, Some("tmp/\n"), Some("a/\n")] {
            for ignore in [rules.1, "/apps/\n"] {
                let alone = with_rules(ignore).artifact(spec);
                let after = with_rules(ignore).artifact_after("", spec, Some(&before));
                assert_eq!(seen(&after), seen(&alone), "spec.ignore {spec:?}");
            }
        }
        let after = with_rules(rules.1).artifact_after("", Some("tmp/\n"), Some(&before));
        assert_eq!(seen(&after), ["a/z.yaml", "apps/a.yaml", "logs/keep.yaml"]);
    }

    /// A `.sourceignore` that changes is a change to every file under its folder.
    #[test]
    fn a_changed_sourceignore_changes_the_files_below_it() {
        let a = FileTree::from_files([("apps/a.yaml", ""), ("b.yaml", "")]);
        let b = a.clone().with_file("apps/.sourceignore", "a.yaml\n");
        assert_eq!(a.changed_paths(&b), ["apps/", "apps/a.yaml"]);
        assert!(b.changed_paths(&b.clone()).is_empty());
    }

    /// A `.sourceignore` is read as source-controller reads it, bytes line by line: a
    /// comment that is not UTF-8 leaves its patterns in force, and a UTF-16 file is no list
    /// of patterns (its lines hold NUL bytes), wherever the tree comes from.
    #[test]
    fn a_sourceignore_is_read_as_bytes_not_decoded() {
        let dir =
            std::env::temp_dir().join(format!("fluxwave-ignore-bytes-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("a")).unwrap();
        std::fs::create_dir_all(dir.join("b")).unwrap();
        for f in ["a/x.yaml", "a/y.yaml", "b/x.yaml"] {
            std::fs::write(dir.join(f), "k: v\n").unwrap();
        }
        std::fs::write(dir.join("a/.sourceignore"), b"# d\xe9j\xe0 vu\nx.yaml\n").unwrap();
        let utf16: Vec<u8> = [0xFF, 0xFE]
            .into_iter()
            .chain("x.yaml\n".encode_utf16().flat_map(u16::to_le_bytes))
            .collect();
        std::fs::write(dir.join("b/.sourceignore"), utf16).unwrap();
        for tree in [
            FileTree::from_worktree_or_dir(&dir).unwrap(),
            FileTree::on_disk(&dir),
        ] {
            let v = tree.artifact(None);
            assert!(v.read("a/x.yaml").is_none(), "the pattern is in force");
            assert!(v.read("a/y.yaml").is_some() && v.read("b/x.yaml").is_some());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A tree on disk finds its `.sourceignore` files by a walk, under what was written.
    #[test]
    fn a_tree_on_disk_reads_its_sourceignore_files() {
        let dir = std::env::temp_dir().join(format!("fluxwave-ignore-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("a/b")).unwrap();
        std::fs::write(dir.join("a/b/x.yaml"), "x: 1\n").unwrap();
        std::fs::write(dir.join("a/b/y.yaml"), "y: 1\n").unwrap();
        std::fs::write(dir.join("a/.sourceignore"), "x.yaml\n").unwrap();
        let t = FileTree::on_disk(&dir);
        let v = t.artifact(None);
        assert!(v.read("a/b/x.yaml").is_none() && v.read("a/b/y.yaml").is_some());
        let v = t
            .clone()
            .with_file("a/b/.sourceignore", "!x.yaml\ny.yaml\n")
            .artifact(None);
        assert!(v.read("a/b/x.yaml").is_some() && v.read("a/b/y.yaml").is_none());
        let v = t.without_file("a/.sourceignore").artifact(None);
        assert!(v.read("a/b/x.yaml").is_some());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
