//! One `git cat-file --batch` kept open to read many revisions of a repository: their
//! commits, trees and blobs, each tree listed once however many revisions hold it. What a
//! history of hundreds of commits reads with one git process instead of three or four a
//! revision.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{ChildStdin, ChildStdout, Stdio};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::process::{self, Tracked};

use super::git::{git_command, git_failure, run_git};

pub struct GitObjects {
    /// Killed with its process group and reaped when dropped.
    child: Tracked,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// Bytes of an object id (20 for SHA-1, 32 for SHA-256).
    id_len: usize,
    /// Where the repository's root is from the folder read (`rev-parse --show-prefix`).
    prefix: Vec<String>,
    /// The recursive listing of each tree read, as `ls-tree -r -z` writes it with paths
    /// relative to the tree.
    listings: HashMap<String, Arc<Vec<u8>>>,
    /// The bytes of each tree object read.
    trees: HashMap<String, Arc<Vec<u8>>>,
}

/// An entry other than a folder that differs between two trees (`GitObjects::changed`): its
/// path below them, and its mode and object id in each (`None` where it is not there).
pub struct Changed {
    pub path: Vec<u8>,
    pub old: Option<(String, String)>,
    pub new: Option<(String, String)>,
}

const ARGS: [&str; 2] = ["cat-file", "--batch"];

fn broken(what: &str) -> Error {
    Error::git(&ARGS, what)
}

impl GitObjects {
    /// A reader of the repository that holds `root`, listing what lies under `root`.
    pub fn open(root: &Path) -> Result<GitObjects> {
        let out = run_git(
            root,
            &["rev-parse", "--show-prefix", "--show-object-format"],
        )?;
        let out = String::from_utf8_lossy(&out);
        let mut lines = out.lines();
        let prefix = lines.next().unwrap_or("").trim_end_matches('/');
        let id_len = match lines.next().map(str::trim) {
            Some("sha256") => 32,
            _ => 20,
        };
        let mut cmd = git_command(root);
        cmd.args(ARGS)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = process::spawn(cmd).map_err(|e| broken(&git_failure(e)))?;
        let stdin = child.stdin().ok_or_else(|| broken("no input"))?;
        let stdout = child.stdout().ok_or_else(|| broken("no output"))?;
        Ok(GitObjects {
            child,
            stdin,
            stdout: BufReader::new(stdout),
            id_len,
            prefix: prefix
                .split('/')
                .filter(|p| !p.is_empty())
                .map(str::to_string)
                .collect(),
            listings: HashMap::new(),
            trees: HashMap::new(),
        })
    }

    /// Object `name` (an id, or anything `git cat-file` resolves): its id, type and bytes;
    /// `None` when there is no such object. `name_of` names it in the error of one larger
    /// than a file may be.
    fn read(
        &mut self,
        name: &str,
        name_of: &dyn Fn(&str) -> String,
    ) -> Result<Option<(String, String, Vec<u8>)>> {
        if name.contains('\n') {
            return Ok(None);
        }
        self.stdin
            .write_all(format!("{name}\n").as_bytes())
            .and_then(|()| self.stdin.flush())
            .map_err(|e| broken(&e.to_string()))?;
        let mut header = String::new();
        self.stdout
            .read_line(&mut header)
            .map_err(|e| broken(&e.to_string()))?;
        let mut parts = header.trim_end().split(' ');
        let (id, kind, size) = (parts.next(), parts.next(), parts.next());
        let (Some(id), Some(kind), Some(size)) = (id, kind, size) else {
            if kind == Some("missing") || kind == Some("ambiguous") {
                return Ok(None);
            }
            return Err(broken(&format!("unexpected answer `{}`", header.trim())));
        };
        let size: usize = size
            .parse()
            .map_err(|_| broken(&format!("unexpected answer `{}`", header.trim())))?;
        if kind == "blob" && size as u64 > crate::fs::MAX_FILE_BYTES {
            self.child.kill();
            return Err(crate::fs::too_big(&name_of(id), size as u64));
        }
        let mut body = vec![0; size + 1];
        self.stdout
            .read_exact(&mut body)
            .map_err(|e| broken(&e.to_string()))?;
        body.truncate(size);
        Ok(Some((id.to_string(), kind.to_string(), body)))
    }

    /// The id of commit `rev`, and the listing of the tree under the folder read, as
    /// `git ls-tree -r -z <commit>` run there writes it. `None` when `rev` names no commit.
    pub fn commit(&mut self, rev: &str) -> Result<Option<(String, Arc<Vec<u8>>)>> {
        let Some((id, tree)) = self.commit_tree(rev)? else {
            return Ok(None);
        };
        let listing = match tree {
            Some(tree) => self.listing(&tree)?,
            None => Arc::default(),
        };
        Ok(Some((id, listing)))
    }

    /// The id of commit `rev`, and that of its tree under the folder read (`None` when the
    /// commit has no such folder). `None` when `rev` names no commit.
    pub fn commit_tree(&mut self, rev: &str) -> Result<Option<(String, Option<String>)>> {
        let none = |_: &str| String::new();
        let Some((id, _, body)) = self.read(&format!("{rev}^{{commit}}"), &none)? else {
            return Ok(None);
        };
        let tree = body
            .strip_prefix(b"tree ")
            .and_then(|rest| rest.split(|b| *b == b'\n').next())
            .map(|t| String::from_utf8_lossy(t).into_owned())
            .ok_or_else(|| broken(&format!("commit {id} names no tree")))?;
        let mut at = tree;
        for part in self.prefix.clone() {
            let Some((_, kind, body)) = self.read(&at, &none)? else {
                return Ok(Some((id, None)));
            };
            let next = (kind == "tree")
                .then(|| subfolder(&body, self.id_len, &part))
                .flatten();
            match next {
                Some(next) => at = next,
                None => return Ok(Some((id, None))),
            }
        }
        Ok(Some((id, Some(at))))
    }

    /// The bytes of tree object `id`, each read once.
    fn tree(&mut self, id: &str) -> Result<Arc<Vec<u8>>> {
        if let Some(body) = self.trees.get(id) {
            return Ok(body.clone());
        }
        let none = |_: &str| String::new();
        let Some((_, kind, body)) = self.read(id, &none)? else {
            return Err(broken(&format!("tree {id} is missing")));
        };
        if kind != "tree" {
            return Err(broken(&format!("{id} is a {kind}, not a tree")));
        }
        let body = Arc::new(body);
        self.trees.insert(id.to_string(), body.clone());
        Ok(body)
    }

    /// The entries that are no folder and differ between trees `old` and `new` (`None` for
    /// an empty tree), by path below them: only the folders whose ids differ are read.
    pub fn changed(&mut self, old: Option<&str>, new: Option<&str>) -> Result<Vec<Changed>> {
        let mut out = Vec::new();
        self.diff(old, new, b"", &mut out)?;
        Ok(out)
    }

    fn diff(
        &mut self,
        old: Option<&str>,
        new: Option<&str>,
        prefix: &[u8],
        out: &mut Vec<Changed>,
    ) -> Result<()> {
        if old == new {
            return Ok(());
        }
        let bodies = [old, new].map(|t| t.map(|id| self.tree(id)).transpose());
        let [a, b] = bodies;
        let (a, b) = (a?, b?);
        let listed = |body: &Option<Arc<Vec<u8>>>| -> BTreeMap<Vec<u8>, (String, String)> {
            body.as_deref()
                .map(|body| entries(body, self.id_len))
                .unwrap_or_default()
                .into_iter()
                .map(|e| (e.name.to_vec(), (e.mode.to_string(), e.id)))
                .collect()
        };
        let (a, b) = (listed(&a), listed(&b));
        let names: BTreeSet<&Vec<u8>> = a.keys().chain(b.keys()).collect();
        for name in names {
            let (x, y) = (a.get(name), b.get(name));
            if x == y {
                continue;
            }
            let mut path = prefix.to_vec();
            path.extend_from_slice(name);
            fn folder(e: Option<&(String, String)>) -> Option<&str> {
                e.filter(|(mode, _)| mode == "40000")
                    .map(|(_, id)| id.as_str())
            }
            let file =
                |e: Option<&(String, String)>| e.filter(|(mode, _)| mode != "40000").cloned();
            let (fx, fy) = (folder(x), folder(y));
            if fx.is_some() || fy.is_some() {
                let mut below = path.clone();
                below.push(b'/');
                let (fx, fy) = (fx.map(str::to_string), fy.map(str::to_string));
                self.diff(fx.as_deref(), fy.as_deref(), &below, out)?;
            }
            let (old, new) = (file(x), file(y));
            if old.is_some() || new.is_some() {
                out.push(Changed { path, old, new });
            }
        }
        Ok(())
    }

    /// Whether folder `path` of tree `root` holds, at any depth, a file (a blob that is no
    /// link) whose name, UTF-8, `matches`.
    pub fn holds(
        &mut self,
        root: &str,
        path: &str,
        matches: &dyn Fn(&str) -> bool,
    ) -> Result<bool> {
        let mut at = root.to_string();
        for part in path.split('/') {
            let body = self.tree(&at)?;
            match subfolder(&body, self.id_len, part) {
                Some(next) => at = next,
                None => return Ok(false),
            }
        }
        self.holds_below(&at, matches)
    }

    fn holds_below(&mut self, tree: &str, matches: &dyn Fn(&str) -> bool) -> Result<bool> {
        let body = self.tree(tree)?;
        let mut below = Vec::new();
        for e in entries(&body, self.id_len) {
            if e.mode == "40000" {
                below.push(e.id);
            } else if (e.mode == "100644" || e.mode == "100755")
                && std::str::from_utf8(e.name).is_ok_and(matches)
            {
                return Ok(true);
            }
        }
        for id in below {
            if self.holds_below(&id, matches)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The recursive listing of tree `id` (see `listings`).
    pub fn listing(&mut self, id: &str) -> Result<Arc<Vec<u8>>> {
        if let Some(l) = self.listings.get(id) {
            return Ok(l.clone());
        }
        let body = self.tree(id)?;
        let mut out = Vec::new();
        for e in entries(&body, self.id_len) {
            if e.mode == "40000" {
                let below = self.listing(&e.id)?;
                for line in below.split(|b| *b == 0).filter(|l| !l.is_empty()) {
                    let Some(tab) = line.iter().position(|b| *b == b'\t') else {
                        continue;
                    };
                    out.extend_from_slice(&line[..=tab]);
                    out.extend_from_slice(e.name);
                    out.push(b'/');
                    out.extend_from_slice(&line[tab + 1..]);
                    out.push(0);
                }
                continue;
            }
            // As ls-tree writes it: six-digit modes; a submodule is a commit.
            let kind = if e.mode == "160000" { "commit" } else { "blob" };
            out.extend_from_slice(format!("{:0>6} {kind} {}\t", e.mode, e.id).as_bytes());
            out.extend_from_slice(e.name);
            out.push(0);
        }
        let out = Arc::new(out);
        self.listings.insert(id.to_string(), out.clone());
        Ok(out)
    }

    /// The bytes of each blob of `ids`, in order; `name_of` names one in an error.
    pub fn blobs(
        &mut self,
        ids: &[String],
        name_of: &dyn Fn(&str) -> String,
    ) -> Result<Vec<Vec<u8>>> {
        ids.iter()
            .map(|id| match self.read(id, name_of)? {
                Some((_, kind, body)) if kind == "blob" => Ok(body),
                _ => Err(broken(&format!("blob {id} is missing"))),
            })
            .collect()
    }
}

struct TreeEntry<'a> {
    mode: &'a str,
    name: &'a [u8],
    id: String,
}

/// The id of the folder `name` of a tree object's bytes, if it has one.
fn subfolder(body: &[u8], id_len: usize, name: &str) -> Option<String> {
    entries(body, id_len)
        .into_iter()
        .find(|e| e.name == name.as_bytes() && e.mode == "40000")
        .map(|e| e.id)
}

/// The entries of a tree object's bytes: `<mode> <name>\0<id bytes>` each.
fn entries(body: &[u8], id_len: usize) -> Vec<TreeEntry<'_>> {
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(space) = rest.iter().position(|b| *b == b' ') {
        let Some(nul) = rest[space..]
            .iter()
            .position(|b| *b == 0)
            .map(|n| n + space)
        else {
            break;
        };
        if rest.len() < nul + 1 + id_len {
            break;
        }
        let mode = std::str::from_utf8(&rest[..space]).unwrap_or("");
        let id = crate::fs::hex(&rest[nul + 1..nul + 1 + id_len]);
        out.push(TreeEntry {
            mode,
            name: &rest[space + 1..nul],
            id,
        });
        rest = &rest[nul + 1 + id_len..];
    }
    out
}
