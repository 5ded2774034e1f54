//! File primitives: bounded reads of regular files (never through a link, never blocking on
//! a FIFO), the containment checks that keep fluxwave inside the repository, repository-relative
//! path arithmetic, and (`write`) atomic, checked writes. Every other module reads and writes
//! files through here.

pub mod lock;
pub mod write;

use std::path::{Path, PathBuf};

use crate::error::Result;

/// `bytes` as lowercase hex: a git object id, or a digest that names a cached file.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    bytes
        .iter()
        .flat_map(|b| [DIGITS[usize::from(b >> 4)], DIGITS[usize::from(b & 15)]])
        .map(char::from)
        .collect()
}

/// The names kustomize reads a folder's kustomization from; a folder with more than one
/// fails to build ("Found multiple kustomization files"). From kustomize's
/// `api/konfig.RecognizedKustomizationFileNames` and `api/internal/target.loadKustFile`.
pub const KUSTOMIZATION_FILES: [&str; 3] =
    ["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// Whether a file is a YAML manifest by its name (`.yaml` or `.yml`).
pub fn is_manifest(path: &str) -> bool {
    path.ends_with(".yaml") || path.ends_with(".yml")
}

/// The largest file fluxwave reads. Real manifests and CRD bundles are far below it; a file
/// above it is refused with a clear error rather than read into memory and parsed for minutes.
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Reads a regular file, `Ok(None)` when it does not exist. A link, a FIFO (reading it would
/// block forever), a socket or device, and a file over `MAX_FILE_BYTES` are refused as bad
/// input under the name `shown`.
pub fn read_regular(path: &Path, shown: &str) -> Result<Option<Vec<u8>>> {
    let meta = match path.symlink_metadata() {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(crate::error::Error::io(path, e)),
    };
    check_regular(&meta, shown)?;
    let file = std::fs::File::open(path).map_err(|e| crate::error::Error::io(path, e))?;
    read_bounded(file, meta.len(), path, shown).map(Some)
}

fn refuse(shown: &str, message: String, help: &str) -> crate::error::Error {
    crate::error::SourceError::new(shown, message)
        .help(help)
        .into()
}

pub(crate) fn too_big(shown: &str, len: u64) -> crate::error::Error {
    refuse(
        shown,
        format!(
            "is {} MiB; fluxwave reads files up to {} MiB",
            len.div_ceil(1024 * 1024),
            MAX_FILE_BYTES / (1024 * 1024)
        ),
        "split the file, or keep generated bulk out of the GitOps tree",
    )
}

/// Refuses a link, a FIFO, socket or device, and a file over `MAX_FILE_BYTES`.
fn check_regular(meta: &std::fs::Metadata, shown: &str) -> Result<()> {
    if meta.file_type().is_symlink() {
        return Err(refuse(
            shown,
            "is a symbolic link; fluxwave does not follow links".into(),
            "replace the link with the file itself",
        ));
    }
    if !meta.is_file() {
        return Err(refuse(
            shown,
            "is not a regular file (a FIFO, socket or device)".into(),
            "replace it with a regular file",
        ));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(too_big(shown, meta.len()));
    }
    Ok(())
}

fn read_bounded(file: impl std::io::Read, len: u64, path: &Path, shown: &str) -> Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    // Bounded even if the file grows while it is read.
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| crate::error::Error::io(path, e))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_big(shown, bytes.len() as u64));
    }
    Ok(bytes)
}

/// A folder whose regular files are read by name, as `read_regular` reads them. Where the
/// system allows, the folder is opened once and each file is opened relative to it and
/// checked on the open file: one path lookup per file instead of a walk of the whole path
/// for its metadata and another for its contents.
pub struct Folder {
    path: PathBuf,
    #[cfg(unix)]
    fd: Option<rustix::fd::OwnedFd>,
}

impl Folder {
    pub fn open(path: &Path) -> Folder {
        Folder {
            path: path.to_path_buf(),
            #[cfg(unix)]
            fd: {
                use rustix::fs::{open, Mode, OFlags};
                open(
                    path,
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .ok()
            },
        }
    }

    /// `read_regular` of the entry `name`, which the folder's listing says is a regular file.
    pub fn read_regular(&self, name: &str, shown: &str) -> Result<Option<Vec<u8>>> {
        #[cfg(unix)]
        if let Some(dir) = &self.fd {
            use rustix::fs::{openat, Mode, OFlags};
            use std::io::Read;
            // Never through a link, and never blocking on a FIFO put in the file's place.
            let flags = OFlags::RDONLY
                | OFlags::NOFOLLOW
                | OFlags::NONBLOCK
                | OFlags::NOCTTY
                | OFlags::CLOEXEC;
            if let Ok(fd) = openat(dir, name, flags, Mode::empty()) {
                let file = std::fs::File::from(fd);
                // A regular file (as the listing said) that ends within the first read needs
                // no fstat: a short read is its end. What is not a regular file (a FIFO put
                // in its place reads nothing, without blocking; a device fills the buffer or
                // cannot be read at an offset) falls through to the checks below.
                thread_local! {
                    static HEAD: std::cell::RefCell<Vec<u8>> =
                        std::cell::RefCell::new(vec![0; 4096]);
                }
                let whole =
                    HEAD.with_borrow_mut(|head| {
                        match std::os::unix::fs::FileExt::read_at(&file, head, 0) {
                            Ok(n) if n > 0 && n < head.len() => Some(head[..n].to_vec()),
                            _ => None,
                        }
                    });
                if whole.is_some() {
                    return Ok(whole);
                }
                let path = self.path.join(name);
                let meta = file
                    .metadata()
                    .map_err(|e| crate::error::Error::io(&path, e))?;
                check_regular(&meta, shown)?;
                if meta.len() == 0 {
                    // Empty, or a file whose size is not known up front.
                    return read_bounded(file, 0, &path, shown).map(Some);
                }
                // The size it had when opened: no further read to find the end.
                return read_bounded(file.take(meta.len()), meta.len(), &path, shown).map(Some);
            }
            // Whatever kept it from opening is reported as `read_regular` reports it.
        }
        read_regular(&self.path.join(name), shown)
    }
}

/// The regular files of a repository read by the path a listing gave, each opened relative
/// to its folder, which is opened once for a run of paths in it (a listing is sorted, so the
/// files of a folder come together): one short lookup per file, where reading by the whole
/// path walks it twice (its metadata, then its contents).
pub struct Listed {
    root: PathBuf,
    folder: Option<(String, Folder)>,
}

impl Listed {
    pub fn new(root: &Path) -> Listed {
        Listed {
            root: root.to_path_buf(),
            folder: None,
        }
    }

    /// The file at `rel` (a `/`-separated path under the root), `Ok(None)` when it is not a
    /// regular file: a link (never followed), a FIFO, socket or device, or nothing at all.
    /// Read as `read_regular` reads (the size bound included).
    pub fn read(&mut self, rel: &str) -> Result<Option<Vec<u8>>> {
        let (dir, name) = rel.rsplit_once('/').unwrap_or(("", rel));
        if self.folder.as_ref().is_none_or(|(d, _)| d != dir) {
            self.folder = Some((dir.to_string(), Folder::open(&self.root.join(dir))));
        }
        let full = self.root.join(rel);
        #[cfg(unix)]
        if let Some((_, Folder { fd: Some(fd), .. })) = &self.folder {
            use rustix::fs::{openat, Mode, OFlags};
            let flags = OFlags::RDONLY
                | OFlags::NOFOLLOW
                | OFlags::NONBLOCK
                | OFlags::NOCTTY
                | OFlags::CLOEXEC;
            return match openat(fd, name, flags, Mode::empty()) {
                Ok(fd) => {
                    use std::io::Read;
                    let file = std::fs::File::from(fd);
                    let meta = file
                        .metadata()
                        .map_err(|e| crate::error::Error::io(&full, e))?;
                    if !meta.is_file() {
                        return Ok(None);
                    }
                    check_regular(&meta, rel)?;
                    read_bounded(file.take(meta.len()), meta.len(), &full, rel).map(Some)
                }
                // A link (`NOFOLLOW`), or gone since it was listed.
                Err(rustix::io::Errno::LOOP | rustix::io::Errno::NOENT) => Ok(None),
                Err(e) => Err(crate::error::Error::io(&full, e.into())),
            };
        }
        if !full
            .symlink_metadata()
            .is_ok_and(|m| m.file_type().is_file())
        {
            return Ok(None);
        }
        read_regular(&full, rel)
    }
}

/// Whether `path` (which exists) lies inside `root` once every link in it is resolved: a
/// linked folder must not lead fluxwave out of the repository.
pub fn inside(root: &Path, path: &Path) -> bool {
    match (root.canonicalize(), path.canonicalize()) {
        (Ok(r), Ok(p)) => p.starts_with(r),
        _ => false,
    }
}

/// Fails when the folder `rel` of the repository exists and leads out of it through a link.
pub fn check_inside(root: &Path, rel: &str) -> Result<()> {
    let path = root.join(rel);
    if path.symlink_metadata().is_ok() && !inside(root, &path) {
        return Err(crate::error::SourceError::new(
            rel,
            "leads out of the repository through a symbolic link; fluxwave does not follow it",
        )
        .help("replace the link with the folder itself")
        .into());
    }
    Ok(())
}

/// Reads a file of the repository as text; `Ok(None)` when it does not exist. The file must
/// be a regular file inside the repository (see `read_regular`, `check_inside`).
pub fn read_optional(root: &Path, rel: &str) -> Result<Option<String>> {
    read_text_with(root, rel, |path| read_regular(path, rel))
}

/// The error for the file `shown` whose bytes are not text (see `decode`): located at the
/// first byte refused, which cannot be shown in a snippet.
pub fn undecodable(shown: &str, why: Undecodable) -> crate::error::SourceError {
    crate::error::SourceError::new(
        format!("{shown}:{}:{}", why.line, why.column),
        format!("cannot be read as text: {why}"),
    )
    .help(UNDECODABLE_HELP)
}

/// `read_optional`, with the bytes read by `read` (a cache of `read_regular`).
/// The bytes of a file of the repository, as `read_optional` reads them, undecoded.
pub fn read_bytes(root: &Path, rel: &str) -> Result<Option<Vec<u8>>> {
    if let Some(parent) = Path::new(rel).parent().and_then(Path::to_str) {
        if !parent.is_empty() {
            check_inside(root, parent)?;
        }
    }
    read_regular(&root.join(rel), rel)
}

pub fn read_text_with<B: Into<Vec<u8>>>(
    root: &Path,
    rel: &str,
    read: impl FnOnce(&Path) -> Result<Option<B>>,
) -> Result<Option<String>> {
    if let Some(parent) = Path::new(rel).parent().and_then(Path::to_str) {
        if !parent.is_empty() {
            check_inside(root, parent)?;
        }
    }
    match read(&root.join(rel))? {
        Some(bytes) => decode(bytes.into())
            .map(Some)
            .map_err(|why| undecodable(rel, why).into()),
        None => Ok(None),
    }
}

/// Why a file's bytes are not text kustomize reads, and where the first byte it refuses is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Undecodable {
    /// go-yaml's words for it (`yaml_parser_update_buffer` in its `readerc.go`).
    pub why: &'static str,
    /// Byte offset of the first byte refused, in the file.
    pub offset: usize,
    /// 1-based line and column (in characters) of that byte.
    pub line: usize,
    pub column: usize,
}

impl std::fmt::Display for Undecodable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (byte {})", self.why, self.offset)
    }
}

impl Undecodable {
    /// `path:line:col: cannot be read as text: why (byte n)`, for the file at `path`.
    pub fn located(&self, path: &str) -> String {
        format!(
            "{path}:{}:{}: cannot be read as text: {self}",
            self.line, self.column
        )
    }
}

/// What to do about a file that is not text kustomize reads.
pub const UNDECODABLE_HELP: &str =
    "kustomize reads UTF-8, and UTF-16 that starts with a byte order mark: save the file as UTF-8";

/// `Undecodable` at byte `offset`, after the text `before` (what was read up to it).
fn refused_at(why: &'static str, offset: usize, before: &str) -> Undecodable {
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    Undecodable {
        why,
        offset,
        line,
        column,
    }
}

/// go-yaml's words for the invalid UTF-8 at the start of `bad` (`readerc.go`: a leading
/// octet that starts no sequence, a sequence cut off by the end of the file, an octet inside
/// a sequence that does not continue it, and an over-long or out-of-range character).
fn utf8_problem(bad: &[u8]) -> &'static str {
    let width = match bad.first() {
        Some(0xC0..=0xDF) => 2,
        Some(0xE0..=0xEF) => 3,
        Some(0xF0..=0xF7) => 4,
        _ => return "invalid leading UTF-8 octet",
    };
    if bad.len() < width {
        return "incomplete UTF-8 octet sequence";
    }
    if bad[1..width].iter().any(|b| b & 0xC0 != 0x80) {
        return "invalid trailing UTF-8 octet";
    }
    let value = match width {
        2 => u32::from(bad[0] & 0x1F) << 6 | u32::from(bad[1] & 0x3F),
        3 => {
            u32::from(bad[0] & 0x0F) << 12
                | u32::from(bad[1] & 0x3F) << 6
                | u32::from(bad[2] & 0x3F)
        }
        _ => {
            u32::from(bad[0] & 0x07) << 18
                | u32::from(bad[1] & 0x3F) << 12
                | u32::from(bad[2] & 0x3F) << 6
                | u32::from(bad[3] & 0x3F)
        }
    };
    let shortest = [0, 0, 0x80, 0x800, 0x10000][width];
    if value < shortest {
        "invalid length of a UTF-8 sequence"
    } else {
        "invalid Unicode character"
    }
}

/// A file's bytes as UTF-8 text; `Err` names the first byte that is not.
fn utf8(bytes: Vec<u8>) -> std::result::Result<String, Undecodable> {
    String::from_utf8(bytes).map_err(|e| {
        let bytes = e.as_bytes();
        let at = e.utf8_error().valid_up_to();
        // The bytes before `at` are valid UTF-8.
        let before = std::str::from_utf8(&bytes[..at]).unwrap_or_default();
        refused_at(utf8_problem(&bytes[at..]), at, before)
    })
}

/// A file's bytes as the text kustomize reads from them. go-yaml's reader
/// (`yaml_parser_determine_encoding`) takes a UTF-16 byte order mark, little or big endian,
/// for UTF-16 and anything else for UTF-8 (a UTF-8 byte order mark stays: YAML readers skip
/// it). kyaml's `kio.ByteReader` splits a file into documents at `\n---\n` in its bytes
/// before decoding them, which a UTF-16 file never holds, and go-yaml decodes one document
/// of each piece: of a UTF-16 file kustomize reads the first document only (`kubectl
/// kustomize` v5.5 on a UTF-16 file of three ConfigMaps yields the first). `Err` holds
/// go-yaml's words for the first bytes it refuses, and where they are.
pub fn decode(bytes: Vec<u8>) -> std::result::Result<String, Undecodable> {
    let big_endian = match bytes.get(..2) {
        Some([0xFF, 0xFE]) => false,
        Some([0xFE, 0xFF]) => true,
        _ => return utf8(bytes),
    };
    let body = &bytes[2..];
    let unit = |p: &[u8]| {
        let pair = [p[0], p[1]];
        if big_endian {
            u16::from_be_bytes(pair)
        } else {
            u16::from_le_bytes(pair)
        }
    };
    let mut text = String::with_capacity(body.len() / 2);
    let mut units = body.chunks_exact(2).enumerate().peekable();
    while let Some((i, pair)) = units.next() {
        let offset = 2 + 2 * i;
        let u = unit(pair);
        let c = match u {
            0xDC00..=0xDFFF => {
                return Err(refused_at("unexpected low surrogate area", offset, &text))
            }
            0xD800..=0xDBFF => match units.peek() {
                None if body.len().is_multiple_of(2) => {
                    return Err(refused_at(
                        "incomplete UTF-16 surrogate pair",
                        offset,
                        &text,
                    ))
                }
                None => return Err(refused_at("incomplete UTF-16 character", offset, &text)),
                Some((_, next)) if (0xDC00..0xE000).contains(&unit(next)) => {
                    let low = unit(next);
                    units.next();
                    let value =
                        0x10000 + ((u32::from(u) - 0xD800) << 10) + (u32::from(low) - 0xDC00);
                    char::from_u32(value).unwrap_or(char::REPLACEMENT_CHARACTER)
                }
                Some(_) => return Err(refused_at("expected low surrogate area", offset, &text)),
            },
            u => char::from_u32(u32::from(u)).unwrap_or(char::REPLACEMENT_CHARACTER),
        };
        text.push(c);
    }
    if !body.len().is_multiple_of(2) {
        return Err(refused_at(
            "incomplete UTF-16 character",
            bytes.len() - 1,
            &text,
        ));
    }
    let first = first_document(&text).len();
    text.truncate(first);
    Ok(text)
}

/// The text of the first YAML document of `text`: up to the `---` or `...` line that ends
/// it (a `---` before any content starts it).
fn first_document(text: &str) -> &str {
    let mut started = false;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let l = line.trim_end_matches(['\n', '\r']);
        if let Some(marker) = crate::plain::document_marker(l) {
            if started {
                return &text[..offset];
            }
            started = marker == crate::plain::Marker::Start;
        } else if !l.trim().is_empty() && !l.trim_start().starts_with('#') && !l.starts_with('%') {
            started = true;
        }
        offset += line.len();
    }
    text
}

/// `a/b` + `../c` -> `a/c`; `None` when the path leaves the repository or is not relative
/// (a leading `/`). The paths a kustomization names go through `kustomize::resolve`, which
/// says why a leading `/` leaves the repository.
pub fn join(dir: &str, rel: &str) -> Option<String> {
    if rel.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = dir
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect();
    for seg in rel.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::join;

    #[test]
    fn hex_is_two_lowercase_digits_a_byte() {
        assert_eq!(super::hex(&[0x00, 0x0f, 0xab, 0xff]), "000fabff");
    }

    #[test]
    fn joins_relative_paths_inside_the_repository() {
        assert_eq!(
            join("clusters/dev", "../base").as_deref(),
            Some("clusters/base")
        );
        assert_eq!(join("", "./apps/").as_deref(), Some("apps"));
        assert_eq!(join("a", "../.."), None);
    }

    fn utf16(text: &str, big_endian: bool) -> Vec<u8> {
        let mut out = if big_endian {
            vec![0xFE, 0xFF]
        } else {
            vec![0xFF, 0xFE]
        };
        for u in text.encode_utf16() {
            out.extend(if big_endian {
                u.to_be_bytes()
            } else {
                u.to_le_bytes()
            });
        }
        out
    }

    /// What `kubectl kustomize` (v5.5) makes of these bytes: UTF-16 with a byte order mark
    /// (either order) and UTF-8 with one read as text; of UTF-16 the first document only;
    /// broken UTF-16 and invalid UTF-8 refused in go-yaml's words.
    #[test]
    fn decodes_what_kustomize_decodes() {
        use super::decode;
        let cm = |n: &str| format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {n}\n");
        for be in [false, true] {
            assert_eq!(decode(utf16(&cm("a"), be)).as_deref(), Ok(cm("a").as_str()));
            let three = format!("{}---\n{}---\n{}", cm("a"), cm("b"), cm("c"));
            assert_eq!(decode(utf16(&three, be)).as_deref(), Ok(cm("a").as_str()));
        }
        let lead = format!("# c\n---\n{}--- # x\n{}", cm("a"), cm("b"));
        assert_eq!(
            decode(utf16(&lead, false)).unwrap(),
            format!("# c\n---\n{}", cm("a"))
        );
        let ended = format!("{}...\n---\n{}", cm("a"), cm("b"));
        assert_eq!(decode(utf16(&ended, false)).unwrap(), cm("a"));
        let bom = format!("\u{feff}{}", cm("a"));
        assert_eq!(decode(bom.clone().into_bytes()), Ok(bom));
        let mut odd = utf16(&cm("a"), false);
        odd.push(b'x');
        let why = |bytes: Vec<u8>| decode(bytes).map_err(|e| e.why);
        assert_eq!(why(odd), Err("incomplete UTF-16 character"));
        let mut lone = utf16("a: b", false);
        lone.splice(4..4, [0x00, 0xD8]);
        assert_eq!(why(lone), Err("expected low surrogate area"));
        let mut low = utf16("a: b", false);
        low.splice(4..4, [0x00, 0xDC]);
        assert_eq!(why(low), Err("unexpected low surrogate area"));
        let mut end = utf16("a: b", false);
        end.extend([0x00, 0xD8]);
        assert_eq!(why(end), Err("incomplete UTF-16 surrogate pair"));
        assert!(decode(b"k: \xff\xfe\n".to_vec())
            .unwrap_err()
            .why
            .contains("UTF-8"));
    }

    /// The first byte refused is named by its offset, line and column, in go-yaml's words
    /// for it (`kubectl kustomize` on `# caf\xe9\n`: "invalid trailing UTF-8 octet").
    #[test]
    fn names_the_first_byte_it_refuses() {
        use super::{decode, Undecodable};
        let at = |why, offset, line, column| {
            Err(Undecodable {
                why,
                offset,
                line,
                column,
            })
        };
        let latin1 = b"a: 1\n# caf\xe9\nb: 2\n".to_vec();
        assert_eq!(decode(latin1), at("invalid trailing UTF-8 octet", 10, 2, 6));
        let mut lead = "k: é\n".as_bytes().to_vec();
        lead.push(0x80);
        assert_eq!(decode(lead), at("invalid leading UTF-8 octet", 6, 2, 1));
        assert_eq!(
            decode(b"x\xe2\x82".to_vec()),
            at("incomplete UTF-8 octet sequence", 1, 1, 2)
        );
        assert_eq!(
            decode(b"\xc0\xaf".to_vec()),
            at("invalid length of a UTF-8 sequence", 0, 1, 1)
        );
        assert_eq!(
            decode(b"\xed\xa0\x80".to_vec()),
            at("invalid Unicode character", 0, 1, 1)
        );
        let mut lone = utf16("a:\nb", false);
        lone.extend([0x00, 0xDC]);
        assert_eq!(decode(lone), at("unexpected low surrogate area", 10, 2, 2));
        let e = decode(b"a: \xff\n".to_vec()).unwrap_err();
        assert_eq!(
            e.located("apps/a.yaml"),
            "apps/a.yaml:1:4: cannot be read as text: invalid leading UTF-8 octet (byte 3)"
        );
    }

    /// Every size reads whole: within the first read (no fstat), exactly its buffer, beyond
    /// it (read through the size checks), and empty.
    #[test]
    fn a_folder_reads_files_of_every_size_whole() {
        let dir = std::env::temp_dir().join(format!("fluxwave-folder-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let folder = super::Folder::open(&dir);
        for len in [0, 1, 300, 4095, 4096, 4097, 10_000, 100_000] {
            let bytes: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            let name = format!("f{len}.yaml");
            std::fs::write(dir.join(&name), &bytes).unwrap();
            let read = folder.read_regular(&name, &name).unwrap();
            assert_eq!(read.as_deref(), Some(&bytes[..]), "{len} bytes");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
