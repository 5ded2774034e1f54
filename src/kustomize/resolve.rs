//! The one reading of a path a kustomization names (a resource, a base, a component, a patch
//! file): every reader of kustomization entries resolves them here, so they cannot disagree.

/// What an entry of a kustomization in some folder refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ref {
    /// A path of the tree, relative to the repository root and normalised (`a/b`, `` for the
    /// root).
    Local(String),
    /// Fetched from the network (a git or HTTP URL): not in the tree.
    Remote,
    /// Outside the repository: an absolute path, or one that climbs above the root.
    Escapes,
}

/// Entry `entry` of the kustomization in `dir` (repository-relative).
///
/// Flux builds on a file system rooted at the source's root: kustomize-controller calls
/// fluxcd/pkg `kustomize.SecureBuild(root, dirPath, …)`, whose `securefs` (fluxcd/pkg
/// `kustomize/filesys/fs_secure.go`, `isSecurePath` and `CleanedAbs`) refuses every path
/// that is not "in or below" the root. kustomize's loader takes an absolute entry as the
/// absolute path it is, so `/apps` names `/apps` on the controller's disk, outside the
/// source's (temporary) root: the build fails. Hence a leading `/` escapes, as `..` past the
/// root does; it is neither `apps` nor `<dir>/apps`.
pub fn resolve(dir: &str, entry: &str) -> Ref {
    if is_remote(entry) {
        return Ref::Remote;
    }
    if entry.starts_with('/') {
        return Ref::Escapes;
    }
    if is_plain(dir) && !entry.is_empty() && is_plain(entry) {
        // Nothing to normalise (the common case: a flat app tier lists 160,000 such names).
        return Ref::Local(if dir.is_empty() {
            entry.to_string()
        } else {
            format!("{dir}/{entry}")
        });
    }
    match crate::fs::join(dir, entry) {
        Some(path) => Ref::Local(path),
        None => Ref::Escapes,
    }
}

/// `resolve(dir, entry).under(dir)`: the path of the entry relative to `dir` when it
/// resolves under it, without building the full path for an entry that needs no
/// normalising.
pub fn resolve_under(dir: &str, entry: &str) -> Option<String> {
    if !is_remote(entry) && !entry.is_empty() && is_plain(entry) {
        return Some(entry.to_string());
    }
    resolve(dir, entry).under(dir)
}

/// A path with nothing to normalise: no empty, `.` or `..` segment (`""` is plain).
fn is_plain(path: &str) -> bool {
    path.is_empty()
        || !path
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == "..")
}

/// A remote resource as kustomize accepts one: a URL, an scp-like git address, or the
/// `github.com/…`, `gitlab.com/…` and `git::…` shorthands of its remote-target syntax.
fn is_remote(entry: &str) -> bool {
    entry.contains("://")
        || entry.starts_with("git@")
        || entry.starts_with("github.com/")
        || entry.starts_with("gitlab.com/")
        || entry.starts_with("git::")
}

impl Ref {
    /// The local path, `None` for a remote or escaping entry.
    pub fn local(self) -> Option<String> {
        match self {
            Ref::Local(path) => Some(path),
            Ref::Remote | Ref::Escapes => None,
        }
    }

    /// The local path relative to folder `dir` when it lies under it (`apps/a.yaml` under
    /// `apps` is `a.yaml`), else `None`.
    pub fn under(self, dir: &str) -> Option<String> {
        let path = self.local()?;
        if dir.is_empty() {
            return Some(path);
        }
        path.strip_prefix(dir)?.strip_prefix('/').map(String::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_entries_resolve_against_their_folder() {
        let local = |p: &str| Ref::Local(p.to_string());
        assert_eq!(resolve("clusters/dev", "../base"), local("clusters/base"));
        assert_eq!(
            resolve("clusters/dev", "./flux-system/"),
            local("clusters/dev/flux-system")
        );
        assert_eq!(resolve("", "apps"), local("apps"));
        assert_eq!(resolve("clusters/dev", "../.."), local(""));
        assert_eq!(resolve("clusters/dev", "../../.."), Ref::Escapes);
        let under = |dir: &str, entry: &str| {
            let slow = resolve(dir, entry).under(dir);
            assert_eq!(resolve_under(dir, entry), slow, "{dir} {entry}");
            slow
        };
        assert_eq!(under("apps", "./a.yaml").as_deref(), Some("a.yaml"));
        assert_eq!(
            under("clusters/base", "../base/w.yaml").as_deref(),
            Some("w.yaml")
        );
        assert_eq!(under("apps", "../apps2/a.yaml"), None);
        assert_eq!(under("apps", "/a.yaml"), None);
        assert_eq!(under("", "a/b.yaml").as_deref(), Some("a/b.yaml"));
        assert_eq!(under("apps", "a.yaml").as_deref(), Some("a.yaml"));
        assert_eq!(under("apps", "sub//a.yaml").as_deref(), Some("sub/a.yaml"));
        assert_eq!(under("apps", ""), None);
        assert_eq!(under("apps", "github.com/x/y"), None);
        assert_eq!(resolve("a/./b", "c"), Ref::Local("a/b/c".into()));
    }

    /// `/apps` under `clusters/dev`: Flux's secure file system is rooted at the source, and
    /// an absolute entry is the absolute path on the controller's disk, not in or below that
    /// root, so the build fails (fluxcd/pkg kustomize/filesys/fs_secure.go, `isSecurePath`).
    /// Before this resolver, the builder read it as `apps` and the plan's walker as
    /// `clusters/dev/apps`.
    #[test]
    fn an_absolute_entry_escapes_the_source() {
        assert_eq!(resolve("clusters/dev", "/apps"), Ref::Escapes);
        assert_eq!(resolve("", "/"), Ref::Escapes);
    }

    #[test]
    fn remote_entries_are_not_in_the_tree() {
        for entry in [
            "https://github.com/x/y//z?ref=v1",
            "ssh://git@example.org/x.git",
            "git@github.com:x/y.git",
            "github.com/x/y/z",
            "gitlab.com/x/y",
            "git::https://example.org/x",
        ] {
            assert_eq!(resolve("clusters/dev", entry), Ref::Remote, "{entry}");
        }
    }
}
