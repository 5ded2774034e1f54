//! The cache folder (`--cache`): charts pulled and charts of the repository made into folders,
//! what `helm template` printed, helm's repository indexes, and the temporaries of runs. An
//! entry's modification time is refreshed whenever a run uses it, so "unused for 30 days" is
//! measurable; `prune` removes what has not been used for a while, what interrupted runs left,
//! and the least recently used entries past a size bound (`fluxwave cache gc`, and once a day
//! after a run that renders). Pruning works from an open handle on the cache folder, never
//! follows a symbolic link inside it (a link is an entry, removed as itself), and refuses a
//! folder that is `/`, the home folder or one holding it, or not marked as fluxwave's own
//! (a cache directory tag, `CACHEDIR.TAG`, that fluxwave writes into a folder it fills).

use std::collections::BTreeSet;
use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use rustix::fs::{AtFlags, Dir, Mode, OFlags};

use crate::error::{Error, Result};

/// The file that marks a folder as fluxwave's cache, a cache directory tag
/// (<https://bford.info/cachedir/>): backup tools read it to leave the folder out.
pub const TAG: &str = "CACHEDIR.TAG";
const SIGNATURE: &str = "Signature: 8a477f597d28d172789f06886806bc55";
const TAG_TEXT: &str = "Signature: 8a477f597d28d172789f06886806bc55
# This file is a cache directory tag created by fluxwave: this folder holds Helm charts and
# renders, made again when they are gone (`fluxwave cache gc` prunes it).
# For information about cache directory tags, see https://bford.info/cachedir/
";

/// When pruning last ran after a run (its modification time).
const STAMP: &str = ".last-gc";

/// What fluxwave writes at the top of its cache; a folder holding anything else is not
/// marked.
const NAMES: [&str; 8] = [
    "charts",
    "local",
    "valued",
    "renders",
    "repositories",
    "tmp",
    TAG,
    STAMP,
];

/// Where the entries are: a folder of the cache, the depth of its entries in it, and whether
/// they are a run's temporaries (removed once no run can still own them) rather than things
/// kept. In step with the layout `helm` writes.
const KINDS: [(&str, usize, bool); 6] = [
    // <key>.yaml, and `.render.*` files a run is writing (temporaries)
    ("renders", 1, false),
    // <source>/<version>/<chart>
    ("charts", 2, false),
    // <digest>/<chart>
    ("local", 1, false),
    // <digest>/chart: a chart whose default values its valuesFiles replaced
    ("valued", 1, false),
    // helm's `<alias>-index.yaml` and `<alias>-charts.txt`, rewritten on every use
    ("repositories/cache", 1, false),
    // staging folders of pulls and copies
    ("tmp", 1, true),
];

/// What a render being written is named before it is renamed into place.
const RENDER_TEMPORARY: &str = ".render.";

/// Entries not used for this many days are removed.
pub const MAX_AGE_DAYS: u64 = 30;
/// The cache is pruned down to this many MiB, least recently used first.
pub const MAX_SIZE_MIB: u64 = 1024;
/// What a run may still be using: nothing used more recently is removed, and a temporary
/// older than this is a leftover. Longer than any run's use of an entry: a staging folder
/// lives for one pull (bounded by the helm deadline), a render is read as soon as it is
/// found.
pub const LIVE: Duration = Duration::from_secs(60 * 60);

/// How a cache is pruned.
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    pub max_age: Duration,
    pub max_size: u64,
    pub live: Duration,
}

impl Policy {
    /// The default policy, with `live` at least twice the deadline of a helm run.
    pub fn new(max_age_days: u64, max_size_mib: u64, helm_timeout: Duration) -> Policy {
        Policy {
            max_age: Duration::from_secs(max_age_days.saturating_mul(24 * 60 * 60)),
            max_size: max_size_mib.saturating_mul(1024 * 1024),
            live: LIVE.max(helm_timeout.saturating_mul(2)),
        }
    }
}

/// A number of entries and their bytes.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    pub entries: usize,
    pub bytes: u64,
}

impl Tally {
    fn add(&mut self, bytes: u64) {
        self.entries += 1;
        self.bytes += bytes;
    }
}

/// What `prune` did.
#[derive(Debug, Default)]
pub struct Report {
    /// Whether there is a cache folder at all.
    pub found: bool,
    /// Removed: not used for `max_age`.
    pub unused: Tally,
    /// Removed: the least recently used, past `max_size`.
    pub over_size: Tally,
    /// Removed: temporaries of runs that ended without removing them.
    pub leftovers: Tally,
    pub kept: Tally,
    /// Entries that could not be removed (shown path), with why.
    pub failed: Vec<(String, std::io::Error)>,
}

/// Refreshes the modification time of `path`, an entry of the cache (or a folder in one) a
/// run uses now. Best effort: a cache that cannot be written is still read.
pub fn used(path: &Path) {
    if let Ok(file) = std::fs::File::open(path) {
        let _ = file.set_modified(SystemTime::now());
    }
}

/// Writes a render into the cache at `path` (atomically: a reader sees all of it or
/// nothing). Best effort: a cache that cannot be written renders again next time.
pub fn keep(path: &Path, text: &str) {
    let Some(dir) = path.parent() else { return };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    // Unique to the writer: the two revisions of a cutover may render one thing at once.
    let tmp = dir.join(format!("{RENDER_TEMPORARY}{}", unique()));
    if std::fs::write(&tmp, text).is_ok() && std::fs::rename(&tmp, path).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// A name no other writer of this run or of another process uses.
pub fn unique() -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// What identifies a program a render depends on (helm, flux-operator): its path, size and
/// modification time.
pub fn program_identity(path: &Path) -> String {
    let meta = std::fs::metadata(path).ok();
    let modified = meta
        .as_ref()
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    format!(
        "{}:{}:{modified}",
        path.display(),
        meta.map_or(0, |m| m.len())
    )
}

/// Marks `cache` as fluxwave's (writes its tag), once a run: only a folder that holds nothing
/// but what fluxwave writes, and never `/` or the home folder.
pub fn mark(cache: &Path) {
    static DONE: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());
    if !DONE
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(cache.to_path_buf())
    {
        return;
    }
    if refused(cache).is_some() || cache.join(TAG).symlink_metadata().is_ok() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(cache) else {
        return;
    };
    for e in entries {
        let Ok(e) = e else { return };
        if !NAMES.iter().any(|n| e.file_name() == *n) {
            return;
        }
    }
    // Created, never opened through a link (`EXCL`).
    if let Ok(fd) = rustix::fs::open(
        cache.join(TAG),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    ) {
        let _ = std::io::Write::write_all(&mut std::fs::File::from(fd), TAG_TEXT.as_bytes());
    }
}

/// Why `cache` must never be pruned or marked: the root folder, the home folder, or a folder
/// that holds it.
fn refused(cache: &Path) -> Option<String> {
    let real = std::fs::canonicalize(cache).ok()?;
    if real.parent().is_none() {
        return Some("it is the root folder".into());
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .and_then(|h| std::fs::canonicalize(h).ok());
    if home.is_some_and(|h| h.starts_with(&real)) {
        return Some("it is the home folder, or holds it".into());
    }
    None
}

/// Prunes `cache` as `policy` says.
pub fn prune(cache: &Path, policy: &Policy) -> Result<Report> {
    let mut report = Report::default();
    match cache.symlink_metadata() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(report),
        Err(e) => return Err(Error::io(cache, e)),
        Ok(_) => {}
    }
    report.found = true;
    if let Some(why) = refused(cache) {
        return Err(Error::Usage(format!(
            "{} is not pruned: {why}. fluxwave prunes only its own cache folder",
            cache.display()
        )));
    }
    // The cache folder itself may be a link (a cache kept elsewhere); nothing in it is followed.
    let root = rustix::fs::open(
        cache,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| Error::io(cache, e.into()))?;
    if !tagged(root.as_fd()) {
        return Err(Error::Usage(format!(
            "{} is not pruned: it has no {TAG} of fluxwave's, so it is not taken for fluxwave's cache (fluxwave writes one into a cache folder it fills; point --cache or FLUXWAVE_CACHE at that folder)",
            cache.display()
        )));
    }
    let now = SystemTime::now();
    let before = |d: Duration| now.checked_sub(d).unwrap_or(SystemTime::UNIX_EPOCH);
    let (live, old) = (before(policy.live), before(policy.max_age));
    let mut entries = Vec::new();
    for (kind, depth, temporary) in KINDS {
        let folder: Vec<CString> = kind
            .split('/')
            .filter_map(|p| CString::new(p).ok())
            .collect();
        collect(root.as_fd(), &folder, depth, temporary, &mut entries);
    }
    let mut doomed = Vec::new();
    let mut kept = Vec::new();
    for e in entries {
        if e.used >= live {
            kept.push(e);
        } else if e.temporary {
            report.leftovers.add(e.bytes);
            doomed.push(e);
        } else if e.used < old {
            report.unused.add(e.bytes);
            doomed.push(e);
        } else {
            kept.push(e);
        }
    }
    // Least recently used first, past the size bound; never what a run may be using.
    kept.sort_by_key(|e| e.used);
    let mut total: u64 = kept.iter().map(|e| e.bytes).sum();
    let mut still = Vec::new();
    for e in kept {
        if total > policy.max_size && e.used < live && !e.temporary {
            total -= e.bytes;
            report.over_size.add(e.bytes);
            doomed.push(e);
        } else {
            report.kept.add(e.bytes);
            still.push(e);
        }
    }
    for e in &doomed {
        let removed = open_folder(root.as_fd(), &e.folder)
            .and_then(|parent| remove_at(parent.as_fd(), &e.name, 0));
        if let Err(err) = removed {
            report.failed.push((e.shown(cache), err));
        }
    }
    // A chart source whose versions are all gone goes too (it fails while one is left).
    if let Ok(charts) = open_folder(root.as_fd(), &[c"charts".to_owned()]) {
        for e in doomed
            .iter()
            .filter(|e| e.folder.len() == 2 && e.folder[0].as_c_str() == c"charts")
        {
            let _ =
                rustix::fs::unlinkat(charts.as_fd(), e.folder[1].as_c_str(), AtFlags::REMOVEDIR);
        }
    }
    Ok(report)
}

/// Prunes `cache` with `policy` at most once a day (the stamp's time), quietly: after a run
/// that renders.
pub fn prune_daily(cache: &Path, policy: &Policy) {
    let stamp = cache.join(STAMP);
    let day = Duration::from_secs(24 * 60 * 60);
    let recent = stamp
        .symlink_metadata()
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age < day);
    if recent || !cache.join(TAG).is_file() || refused(cache).is_some() {
        return;
    }
    // The stamp first: runs that end together do not all prune.
    let Ok(fd) = rustix::fs::open(
        &stamp,
        OFlags::WRONLY | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    ) else {
        return;
    };
    let _ = std::fs::File::from(fd).set_modified(SystemTime::now());
    let _ = prune(cache, policy);
}

/// Whether the folder `root` holds fluxwave's tag (a file, not a link).
fn tagged(root: BorrowedFd) -> bool {
    let Ok(fd) = rustix::fs::openat(
        root,
        TAG,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return false;
    };
    let mut text = String::new();
    let file = std::fs::File::from(fd);
    let read = std::io::Read::read_to_string(&mut std::io::Read::take(file, 4096), &mut text);
    read.is_ok() && text.starts_with(SIGNATURE) && text.contains("fluxwave")
}

/// An entry of the cache: `name` in the folder `folder` (from the cache's root).
struct Entry {
    folder: Vec<CString>,
    name: CString,
    bytes: u64,
    /// When a run last used it: the latest modification time of it and what it holds
    /// directly (a run refreshes the chart folder inside a version's).
    used: SystemTime,
    temporary: bool,
}

impl Entry {
    fn shown(&self, cache: &Path) -> String {
        let mut path = cache.to_path_buf();
        for part in &self.folder {
            path.push(part.to_string_lossy().as_ref());
        }
        path.push(self.name.to_string_lossy().as_ref());
        path.display().to_string()
    }
}

/// Opens the folder `parts` under `root`, no part a link.
fn open_folder(root: BorrowedFd, parts: &[CString]) -> std::io::Result<OwnedFd> {
    let mut fd = rustix::io::dup(root)?;
    for part in parts {
        fd = open_dir(fd.as_fd(), part)?;
    }
    Ok(fd)
}

fn open_dir(at: BorrowedFd, name: &CStr) -> std::io::Result<OwnedFd> {
    Ok(rustix::fs::openat(
        at,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// The names in the folder `at` (but `.` and `..`).
fn names(at: BorrowedFd) -> std::io::Result<Vec<CString>> {
    let mut out = Vec::new();
    for e in Dir::read_from(at)? {
        let e = e?;
        let name = e.file_name();
        if name != c"." && name != c".." {
            out.push(name.to_owned());
        }
    }
    Ok(out)
}

/// What `name` in `at` is, itself (a link is not followed).
fn stat(at: BorrowedFd, name: &CStr) -> std::io::Result<std::fs::Metadata> {
    let fd = rustix::fs::openat(
        at,
        name,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    std::fs::File::from(fd).metadata()
}

/// The entries `depth` levels down in the folder `folder`, added to `out`; a folder that is
/// missing, or a link, has none. Something not a folder above the entries' level is an entry
/// itself.
fn collect(
    root: BorrowedFd,
    folder: &[CString],
    depth: usize,
    temporary: bool,
    out: &mut Vec<Entry>,
) {
    let Ok(fd) = open_folder(root, folder) else {
        return;
    };
    let Ok(list) = names(fd.as_fd()) else {
        return;
    };
    for name in list {
        let Ok(meta) = stat(fd.as_fd(), &name) else {
            continue;
        };
        if depth > 1 && meta.is_dir() {
            let mut below = folder.to_vec();
            below.push(name);
            collect(root, &below, depth - 1, temporary, out);
            continue;
        }
        let (bytes, used) = measure(fd.as_fd(), &name, &meta);
        let temporary = temporary
            || (folder.len() == 1
                && folder[0].as_c_str() == c"renders"
                && name.to_bytes().starts_with(RENDER_TEMPORARY.as_bytes()));
        out.push(Entry {
            folder: folder.to_vec(),
            name,
            bytes,
            used,
            temporary,
        });
    }
}

/// The bytes of the entry `name` in `at` (`meta` its own), and when it was last used.
fn measure(at: BorrowedFd, name: &CStr, meta: &std::fs::Metadata) -> (u64, SystemTime) {
    let mut used = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
    if !meta.is_dir() {
        return (meta.len(), used);
    }
    let Ok(fd) = open_dir(at, name) else {
        return (0, used);
    };
    if let Ok(list) = names(fd.as_fd()) {
        for child in &list {
            if let Ok(t) = stat(fd.as_fd(), child).and_then(|m| m.modified()) {
                used = used.max(t);
            }
        }
    }
    (size(fd.as_fd(), 0), used)
}

/// The bytes of the files under the folder `at`, links not followed.
fn size(at: BorrowedFd, depth: usize) -> u64 {
    if depth > 64 {
        return 0;
    }
    let Ok(list) = names(at) else { return 0 };
    let mut total = 0;
    for name in list {
        let Ok(meta) = stat(at, &name) else { continue };
        if meta.is_dir() {
            if let Ok(fd) = open_dir(at, &name) {
                total += size(fd.as_fd(), depth + 1);
            }
        } else {
            total += meta.len();
        }
    }
    total
}

/// Removes `name` from the folder `at`: a folder with everything in it, anything else as
/// itself (a link, not what it points to).
fn remove_at(at: BorrowedFd, name: &CStr, depth: usize) -> std::io::Result<()> {
    if depth > 64 {
        return Err(std::io::Error::other("folders nested too deep"));
    }
    if stat(at, name)?.is_dir() {
        let fd = open_dir(at, name)?;
        for child in names(fd.as_fd())? {
            remove_at(fd.as_fd(), &child, depth + 1)?;
        }
        rustix::fs::unlinkat(at, name, AtFlags::REMOVEDIR)?;
    } else {
        rustix::fs::unlinkat(at, name, AtFlags::empty())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aged(path: &Path, days: u64) {
        let t = SystemTime::now() - Duration::from_secs(days * 24 * 60 * 60);
        std::fs::File::open(path).unwrap().set_modified(t).unwrap();
    }

    fn policy() -> Policy {
        Policy::new(MAX_AGE_DAYS, MAX_SIZE_MIB, Duration::from_secs(60))
    }

    fn cache() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("renders")).unwrap();
        mark(dir.path());
        assert!(dir.path().join(TAG).is_file());
        dir
    }

    #[test]
    fn old_entries_and_leftovers_go_and_fresh_ones_stay() {
        let dir = cache();
        let c = dir.path();
        for (path, days) in [
            ("renders/old.yaml", 40),
            ("renders/new.yaml", 0),
            ("renders/.render.1-2", 1),
        ] {
            std::fs::write(c.join(path), "x").unwrap();
            aged(&c.join(path), days);
        }
        for (version, days) in [("1.0.0", 40), ("2.0.0", 2)] {
            let chart = c.join(format!("charts/src-1/{version}/app"));
            std::fs::create_dir_all(&chart).unwrap();
            std::fs::write(chart.join("Chart.yaml"), "name: app\n").unwrap();
            aged(&chart.join("Chart.yaml"), days);
            aged(&chart, days);
            aged(chart.parent().unwrap(), days);
        }
        std::fs::create_dir_all(c.join("tmp/1-1")).unwrap();
        aged(&c.join("tmp/1-1"), 1);
        std::fs::create_dir_all(c.join("tmp/2-1")).unwrap();
        let report = prune(c, &policy()).unwrap();
        assert_eq!(report.unused.entries, 2, "{report:?}");
        assert_eq!(report.leftovers.entries, 2, "{report:?}");
        assert_eq!(report.kept.entries, 3, "{report:?}");
        assert!(!c.join("renders/old.yaml").exists());
        assert!(!c.join("renders/.render.1-2").exists());
        assert!(!c.join("charts/src-1/1.0.0").exists());
        assert!(!c.join("tmp/1-1").exists());
        assert!(c.join("renders/new.yaml").exists());
        assert!(c.join("charts/src-1/2.0.0/app/Chart.yaml").exists());
        assert!(c.join("tmp/2-1").exists(), "a run may own it");
    }

    /// A chart folder used now keeps its version's entry, however old the entry's own time.
    #[test]
    fn a_use_inside_an_entry_keeps_it() {
        let dir = cache();
        let c = dir.path();
        let chart = c.join("charts/src-1/1.0.0/app");
        std::fs::create_dir_all(&chart).unwrap();
        aged(&chart, 40);
        aged(chart.parent().unwrap(), 40);
        used(&chart);
        let report = prune(c, &policy()).unwrap();
        assert_eq!(report.unused.entries, 0, "{report:?}");
        assert!(chart.exists());
    }

    #[test]
    fn past_the_size_bound_the_least_recently_used_go_first() {
        let dir = cache();
        let c = dir.path();
        for (name, days) in [("a", 3), ("b", 2), ("c", 1), ("d", 0)] {
            let path = c.join(format!("renders/{name}.yaml"));
            std::fs::write(&path, vec![b'x'; 600 * 1024]).unwrap();
            aged(&path, days);
        }
        let mut p = policy();
        p.max_size = 1024 * 1024;
        let report = prune(c, &p).unwrap();
        // d is in use (now): kept even though a and b and c alone fit.
        assert_eq!(report.over_size.entries, 3, "{report:?}");
        assert!(c.join("renders/d.yaml").exists());
        assert!(!c.join("renders/c.yaml").exists());
    }

    /// Ages the link `path` itself.
    fn aged_link(path: &Path, days: u64) {
        let secs = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            - days * 24 * 60 * 60;
        let t = rustix::fs::Timespec {
            tv_sec: secs as i64,
            tv_nsec: 0,
        };
        let times = rustix::fs::Timestamps {
            last_access: t,
            last_modification: t,
        };
        rustix::fs::utimensat(rustix::fs::CWD, path, &times, AtFlags::SYMLINK_NOFOLLOW).unwrap();
    }

    #[test]
    fn links_are_removed_as_links_never_followed() {
        let dir = cache();
        let c = dir.path();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(outside.path().join("sub")).unwrap();
        std::fs::write(outside.path().join("sub/precious"), "keep").unwrap();
        aged(&outside.path().join("sub/precious"), 100);
        aged(&outside.path().join("sub"), 100);
        aged(outside.path(), 100);
        // An old link as an entry, a link inside an old entry, a link as a kind's folder.
        std::os::unix::fs::symlink(outside.path(), c.join("renders/link")).unwrap();
        aged_link(&c.join("renders/link"), 40);
        let chart = c.join("charts/src-1/1.0.0");
        std::fs::create_dir_all(&chart).unwrap();
        std::os::unix::fs::symlink(outside.path(), chart.join("app")).unwrap();
        aged_link(&chart.join("app"), 40);
        aged(&chart, 40);
        std::os::unix::fs::symlink(outside.path(), c.join("local")).unwrap();
        std::os::unix::fs::symlink(outside.path(), c.join("tmp")).unwrap();
        let report = prune(c, &policy()).unwrap();
        assert_eq!(report.unused.entries, 2, "{report:?}");
        assert!(report.failed.is_empty(), "{report:?}");
        assert!(outside.path().join("sub/precious").exists());
        assert!(c.join("renders/link").symlink_metadata().is_err());
        assert!(!chart.exists());
        assert!(c.join("local").symlink_metadata().unwrap().is_symlink());
        assert!(c.join("tmp").symlink_metadata().unwrap().is_symlink());
    }

    #[test]
    fn a_folder_fluxwave_has_not_marked_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("renders")).unwrap();
        std::fs::write(dir.path().join("notes.txt"), "mine").unwrap();
        mark(dir.path());
        assert!(!dir.path().join(TAG).exists(), "not only fluxwave's names");
        let e = prune(dir.path(), &policy()).unwrap_err();
        assert!(e.to_string().contains("has no CACHEDIR.TAG"), "{e}");
        let e = prune(Path::new("/"), &policy()).unwrap_err();
        assert!(e.to_string().contains("root folder"), "{e}");
    }

    #[test]
    fn a_missing_cache_has_nothing_to_prune() {
        let dir = tempfile::tempdir().unwrap();
        let report = prune(&dir.path().join("none"), &policy()).unwrap();
        assert!(!report.found);
    }
}
