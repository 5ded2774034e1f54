//! One `git cat-file --batch` kept open to read many revisions of a repository: their
//! commits, trees and blobs, each tree listed once however many revisions hold it. What a
//! history of hundreds of commits reads with one git process instead of three or four a
//! revision.

use std::collections::HashMap;
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
                return Ok(Some((id, Arc::default())));
            };
            let next = (kind == "tree")
                .then(|| entries(&body, self.id_len))
                .into_iter()
                .flatten()
                .find(|e| e.name == part.as_bytes() && e.mode == "40000")
                .map(|e| e.id);
            match next {
                Some(next) => at = next,
                None => return Ok(Some((id, Arc::default()))),
            }
        }
        let listing = self.listing(&at)?;
        Ok(Some((id, listing)))
    }

    /// The recursive listing of tree `id` (see `listings`).
    fn listing(&mut self, id: &str) -> Result<Arc<Vec<u8>>> {
        if let Some(l) = self.listings.get(id) {
            return Ok(l.clone());
        }
        let none = |_: &str| String::new();
        let Some((_, kind, body)) = self.read(id, &none)? else {
            return Err(broken(&format!("tree {id} is missing")));
        };
        if kind != "tree" {
            return Err(broken(&format!("{id} is a {kind}, not a tree")));
        }
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
