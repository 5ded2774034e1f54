//! The `ExternalArtifact`s an `ArtifactGenerator` (source.extensions.fluxcd.io, Flux 2.7's
//! source-watcher) makes out of this repository: a Kustomization whose `sourceRef` is such an
//! artifact is built from the files the generator copies into it. The copy rules follow
//! source-watcher's spec (docs/spec/v1beta1/artifactgenerators.md, "Copy Operations"):
//! operations run in order, later ones overwrite; `@alias/dir/**` copies the contents of
//! `dir` recursively, `@alias/dir/` copies `dir` itself as a sub-folder, a glob copies the
//! files it matches relative to its non-glob prefix, a file copies to `to` (into it when
//! `to` ends with `/`); `exclude` patterns are matched relative to the non-glob prefix of
//! `from`, and one without a `/` matches a file name at any depth. The `Merge` and `Extract`
//! strategies are not modelled.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{SourceKind, SourceRef};
use crate::kustomize::object::ObjectId;
use crate::tree::FileTree;

/// The API group of source-watcher's ArtifactGenerator.
pub const GENERATOR_GROUP: &str = "source.extensions.fluxcd.io";

/// Whether `id` is an ArtifactGenerator.
pub fn is_generator(id: &ObjectId) -> bool {
    id.group == GENERATOR_GROUP && id.kind == "ArtifactGenerator"
}

/// An artifact's files: the path in the artifact and the repository file it is a copy of.
pub type Files = BTreeMap<String, String>;

/// Why an artifact cannot be made here.
pub type Unseen = String;

/// The files of artifact `name` of `generator` (an ArtifactGenerator object), copied from
/// `tree`; `this_repo` says whether a source is this repository.
pub fn files(
    generator: &Value,
    name: &str,
    tree: &FileTree,
    this_repo: &dyn Fn(&SourceRef) -> bool,
) -> Result<Files, Unseen> {
    let namespace = generator
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("flux-system");
    if generator.pointer("/spec/pathPattern").is_some() {
        return Err("its ArtifactGenerator uses pathPattern, which is not modelled".into());
    }
    let mut aliases: BTreeMap<&str, bool> = BTreeMap::new();
    for s in array(generator.pointer("/spec/sources")) {
        let field = |k: &str| s.get(k).and_then(Value::as_str).unwrap_or("");
        let ns = match field("namespace") {
            "" => namespace,
            ns => ns,
        };
        let source = SourceRef::new(SourceKind::parse(field("kind")), ns, field("name"));
        aliases.insert(field("alias"), this_repo(&source));
    }
    let artifact = array(generator.pointer("/spec/artifacts"))
        .find(|a| a.get("name").and_then(Value::as_str) == Some(name))
        .ok_or_else(|| format!("its ArtifactGenerator declares no artifact `{name}`"))?;
    let mut out = Files::new();
    for op in array(artifact.get("copy")) {
        let text = |k: &str| op.get(k).and_then(Value::as_str).unwrap_or("");
        if !matches!(text("strategy"), "" | "Overwrite") {
            return Err(format!(
                "a copy with strategy {} is not modelled",
                text("strategy")
            ));
        }
        let (from, to) = (text("from"), text("to"));
        let (alias, pattern) = from
            .strip_prefix('@')
            .and_then(|f| f.split_once('/').or(Some((f, ""))))
            .ok_or_else(|| format!("copy from `{from}` does not start with @alias"))?;
        match aliases.get(alias) {
            Some(true) => {}
            Some(false) => {
                return Err(format!(
                    "it copies from @{alias}, a source that is not this repository"
                ))
            }
            None => return Err(format!("copy from `{from}` names no source alias")),
        }
        let dest = to
            .strip_prefix("@artifact")
            .map(|d| d.trim_start_matches('/'))
            .ok_or_else(|| format!("copy to `{to}` does not start with @artifact"))?;
        let excludes: Vec<&str> = array(op.get("exclude")).filter_map(Value::as_str).collect();
        copy(tree, pattern, dest, &excludes, &mut out);
    }
    Ok(out)
}

fn array(v: Option<&Value>) -> impl Iterator<Item = &Value> {
    v.and_then(Value::as_array).into_iter().flatten()
}

/// One copy operation of `pattern` (relative to the source root) to `dest` (relative to the
/// artifact root).
fn copy(tree: &FileTree, pattern: &str, dest: &str, excludes: &[&str], out: &mut Files) {
    let into = |rel: &str| {
        if dest.is_empty() || dest.ends_with('/') {
            format!("{dest}{rel}")
        } else {
            format!("{dest}/{rel}")
        }
    };
    let glob_at = pattern.find(['*', '?', '[']);
    let (base, matching): (&str, Option<&str>) = match glob_at {
        Some(at) => (
            pattern[..at].rsplit_once('/').map_or("", |(b, _)| b),
            Some(pattern),
        ),
        None => (pattern.trim_end_matches('/'), None),
    };
    let excluded = |rel: &str| {
        excludes.iter().any(|x| {
            if x.contains('/') {
                glob(x, rel)
            } else {
                glob(x, rel.rsplit('/').next().unwrap_or(rel))
            }
        })
    };
    if matching.is_none() && tree.is_file(base) {
        let name = base.rsplit('/').next().unwrap_or(base);
        if !excluded(name) {
            let to = if dest.is_empty() || dest.ends_with('/') {
                format!("{dest}{name}")
            } else {
                dest.to_string()
            };
            out.insert(to, base.to_string());
        }
        return;
    }
    // `dir/` (or `dir`) copies the folder itself; a glob its matches below the prefix.
    let keep_folder = matching.is_none();
    let folder_name = base.rsplit('/').next().unwrap_or(base);
    let files: Vec<&str> = tree.files_under(base).collect();
    for file in files {
        let rel = if base.is_empty() {
            file
        } else {
            &file[base.len() + 1..]
        };
        if matching.is_some_and(|p| !glob(p, file)) || excluded(rel) {
            continue;
        }
        let rel = if keep_folder && !folder_name.is_empty() {
            format!("{folder_name}/{rel}")
        } else {
            rel.to_string()
        };
        out.insert(into(&rel), file.to_string());
    }
}

/// Whether `path` matches glob `pattern`: `**` any number of folders, `*` and `?` within one
/// name, `[...]` a class.
fn glob(pattern: &str, path: &str) -> bool {
    let p: Vec<&str> = pattern.split('/').collect();
    let s: Vec<&str> = path.split('/').collect();
    segments(&p, &s)
}

fn segments(p: &[&str], s: &[&str]) -> bool {
    match p.split_first() {
        None => s.is_empty(),
        Some((&"**", rest)) => (0..=s.len()).any(|i| segments(rest, &s[i..])),
        Some((first, rest)) => s.split_first().is_some_and(|(name, more)| {
            name_matches(first.as_bytes(), name.as_bytes()) && segments(rest, more)
        }),
    }
}

fn name_matches(p: &[u8], s: &[u8]) -> bool {
    match p.split_first() {
        None => s.is_empty(),
        Some((b'*', rest)) => (0..=s.len()).any(|i| name_matches(rest, &s[i..])),
        Some((b'?', rest)) => !s.is_empty() && name_matches(rest, &s[1..]),
        Some((b'[', rest)) => {
            let Some(end) = rest.iter().position(|&c| c == b']') else {
                return s.first() == Some(&b'[') && name_matches(rest, &s[1..]);
            };
            let (class, after) = (&rest[..end], &rest[end + 1..]);
            let (negate, class) = match class.split_first() {
                Some((b'!' | b'^', c)) => (true, c),
                _ => (false, class),
            };
            let Some((&c, more)) = s.split_first() else {
                return false;
            };
            let mut hit = false;
            let mut i = 0;
            while i < class.len() {
                if i + 2 < class.len() && class[i + 1] == b'-' {
                    hit |= class[i] <= c && c <= class[i + 2];
                    i += 3;
                } else {
                    hit |= class[i] == c;
                    i += 1;
                }
            }
            hit != negate && name_matches(after, more)
        }
        Some((c, rest)) => s.first() == Some(c) && name_matches(rest, &s[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn generator(copies: &str) -> Value {
        let text = format!("apiVersion: source.extensions.fluxcd.io/v1beta1\nkind: ArtifactGenerator\nmetadata: {{name: gen, namespace: flux-system}}\nspec:\n  sources:\n    - {{alias: repo, kind: GitRepository, name: flux-system}}\n    - {{alias: other, kind: OCIRepository, name: charts}}\n  artifacts:\n    - name: apps\n      copy:\n{copies}");
        crate::yaml::parse("gen.yaml", &crate::yaml::Text::new(text)).unwrap()
    }

    fn tree() -> FileTree {
        FileTree::from_files([
            ("apps/base/web/kustomization.yaml", ""),
            ("apps/base/web/deploy.yaml", ""),
            ("apps/base/README.md.yaml", ""),
            ("apps/prod/kustomization.yaml", ""),
            ("apps/prod/testdata/x.yaml", ""),
            ("config.yaml", ""),
        ])
    }

    fn this_repo(source: &SourceRef) -> bool {
        *source == SourceRef::new(SourceKind::GitRepository, "flux-system", "flux-system")
    }

    fn paths(copies: &str) -> Vec<(String, String)> {
        files(&generator(copies), "apps", &tree(), &this_repo)
            .unwrap()
            .into_iter()
            .collect()
    }

    #[test]
    fn contents_folders_globs_and_files_copy_as_the_spec_says() {
        // `dir/**` strips the folder; `dir/` keeps it.
        assert_eq!(
            paths("        - {from: \"@repo/apps/prod/**\", to: \"@artifact/production/\"}\n        - {from: \"@repo/apps/base/\", to: \"@artifact/\"}\n"),
            [
                ("base/README.md.yaml".into(), "apps/base/README.md.yaml".into()),
                ("base/web/deploy.yaml".into(), "apps/base/web/deploy.yaml".into()),
                ("base/web/kustomization.yaml".into(), "apps/base/web/kustomization.yaml".into()),
                ("production/kustomization.yaml".into(), "apps/prod/kustomization.yaml".into()),
                ("production/testdata/x.yaml".into(), "apps/prod/testdata/x.yaml".into()),
            ]
        );
        // A glob copies its matches below its prefix; excludes by name at any depth or by
        // path below the prefix.
        assert_eq!(
            paths("        - {from: \"@repo/apps/**/*.yaml\", to: \"@artifact/all/\", exclude: [\"README*\", \"prod/testdata/**\"]}\n"),
            [
                ("all/base/web/deploy.yaml".into(), "apps/base/web/deploy.yaml".into()),
                ("all/base/web/kustomization.yaml".into(), "apps/base/web/kustomization.yaml".into()),
                ("all/prod/kustomization.yaml".into(), "apps/prod/kustomization.yaml".into()),
            ]
        );
        // A file to a file, and into a folder.
        assert_eq!(
            paths("        - {from: \"@repo/config.yaml\", to: \"@artifact/env.yaml\"}\n        - {from: \"@repo/config.yaml\", to: \"@artifact/in/\"}\n"),
            [
                ("env.yaml".into(), "config.yaml".into()),
                ("in/config.yaml".into(), "config.yaml".into())
            ]
        );
    }

    #[test]
    fn another_source_or_strategy_cannot_be_seen() {
        let err = files(
            &generator("        - {from: \"@other/chart/**\", to: \"@artifact/\"}\n"),
            "apps",
            &tree(),
            &this_repo,
        )
        .unwrap_err();
        assert!(err.contains("@other"), "{err}");
        let err = files(
            &generator(
                "        - {from: \"@repo/apps/**\", to: \"@artifact/\", strategy: Merge}\n",
            ),
            "apps",
            &tree(),
            &this_repo,
        )
        .unwrap_err();
        assert!(err.contains("Merge"), "{err}");
        assert!(files(&generator(""), "nope", &tree(), &this_repo).is_err());
    }

    #[test]
    fn globs() {
        assert!(glob("a/**/*.yaml", "a/b/c/d.yaml"));
        assert!(glob("a/**/*.yaml", "a/d.yaml"));
        assert!(!glob("a/*.yaml", "a/b/d.yaml"));
        assert!(glob("a/[a-c]?.y*", "a/bx.yml"));
        assert!(!glob("a/[!a-c]x", "a/bx"));
    }
}
