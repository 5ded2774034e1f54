//! The `ExternalArtifact`s an `ArtifactGenerator` (source.extensions.fluxcd.io, Flux 2.7's
//! source-watcher) makes out of this repository: a Kustomization whose `sourceRef` is such an
//! artifact is built from the files the generator copies into it. The copy rules follow
//! source-watcher's spec (docs/spec/v1beta1/artifactgenerators.md, "Copy Operations") and
//! its builder (`internal/builder`): operations run in order, later ones overwrite;
//! `@alias/dir/**` copies the contents of `dir` recursively, `@alias/dir/` copies `dir`
//! itself as a sub-folder, a file copies to `to` (into it when `to` ends with `/`);
//! `exclude` patterns are matched relative to the non-glob prefix of `from`, and one without
//! a `/` matches a file name at any depth. Other globs (the builder matches them with Go's
//! `fs.Glob`, one level per `**`, and keeps each match's path below `to`) and the `Merge`
//! and `Extract` strategies are not modelled. The artifacts are built in order, and the
//! first copy that fails stops the generator: that artifact and the later ones keep what
//! it made last (`files`).
//!
//! An environment whose Kustomizations read such artifacts is built a second time, with the
//! files of each artifact copied into a folder of its own, and the paths in what it built
//! given back as the repository files they copy (`build_artifacts`).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::inventory::Inventory;
use super::{SourceKind, SourceRef};
use crate::kustomize::object::ObjectId;
use crate::pointer::Pointer;
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
    artifact_root: &str,
) -> Result<Files, Unseen> {
    let namespace = generator
        .at_pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("flux-system");
    if generator.at_pointer("/spec/pathPattern").is_some() {
        return Err("its ArtifactGenerator uses pathPattern, which is not modelled".into());
    }
    if let Some(why) = invalid(generator) {
        return Err(format!("its ArtifactGenerator is invalid ({why}): source-watcher stalls it, and `{name}` keeps what it made last, which only the cluster knows"));
    }
    let mut aliases: BTreeMap<&str, bool> = BTreeMap::new();
    for s in array(generator.at_pointer("/spec/sources")) {
        let field = |k: &str| s.get(k).and_then(Value::as_str).unwrap_or("");
        let ns = match field("namespace") {
            "" => namespace,
            ns => ns,
        };
        let source = SourceRef::new(SourceKind::parse(field("kind")), ns, field("name"));
        aliases.insert(field("alias"), this_repo(&source));
    }
    let artifact = array(generator.at_pointer("/spec/artifacts"))
        .find(|a| a.get("name").and_then(Value::as_str) == Some(name))
        .ok_or_else(|| format!("its ArtifactGenerator declares no artifact `{name}`"))?;
    // The root of the source's artifact in the repository (an OCI root's folder).
    let rooted = |pattern: &str| match artifact_root {
        "" => pattern.to_string(),
        root => format!("{root}/{pattern}"),
    };
    // source-watcher builds the artifacts in order and stops at the first that fails
    // (`ArtifactGeneratorReconciler.reconcile`): that one and every later one keep what it
    // made last, which only the cluster knows.
    for built in array(generator.at_pointer("/spec/artifacts")) {
        let built_name = built.get("name").and_then(Value::as_str).unwrap_or("");
        let this = built_name == name;
        for op in array(built.get("copy")) {
            let from = op.get("from").and_then(Value::as_str).unwrap_or("");
            let excludes: Vec<&str> = array(op.get("exclude")).filter_map(Value::as_str).collect();
            let to = op.get("to").and_then(Value::as_str).unwrap_or("");
            let strategy = op.get("strategy").and_then(Value::as_str).unwrap_or("");
            let outcome = match copy_source(from) {
                Some(_) if !matches!(strategy, "" | "Overwrite") => {
                    CopyOutcome::Unknown(format!("a copy with strategy {strategy}"))
                }
                None => CopyOutcome::Fails(format!("`{from}` is not `@alias/pattern`")),
                Some(_) if !to.starts_with("@artifact/") => CopyOutcome::Fails(format!(
                    "destination `{to}` does not start with '@artifact/'"
                )),
                Some((alias, _)) if !aliases.contains_key(alias) => {
                    CopyOutcome::Fails(format!("source alias '{alias}' not found"))
                }
                Some((alias, _)) if !aliases[alias] => CopyOutcome::Unknown(format!(
                    "a copy from @{alias}, a source that is not this repository"
                )),
                Some((_, pattern)) => copy_outcome(tree, &rooted(pattern), &excludes),
            };
            match outcome {
                CopyOutcome::Copies => {}
                CopyOutcome::Fails(why) => return Err(format!("its ArtifactGenerator fails to build artifact `{built_name}` (copy from `{from}`: {why}), and source-watcher keeps `{name}` as it made it last, which only the cluster knows")),
                CopyOutcome::Unknown(what) if this => return Err(format!("{what} is not modelled")),
                CopyOutcome::Unknown(what) => return Err(format!("artifact `{built_name}`, built before it, has {what}: whether source-watcher fails to build it, and keeps `{name}` as it made it last, is not known")),
            }
        }
        if this {
            break;
        }
    }
    let mut out = Files::new();
    for op in array(artifact.get("copy")) {
        let text = |k: &str| op.get(k).and_then(Value::as_str).unwrap_or("");
        let (from, to) = (text("from"), text("to"));
        // Every copy is checked above: it names this repository.
        let Some((_, pattern)) = copy_source(from) else {
            continue;
        };
        let dest = to
            .strip_prefix("@artifact")
            .map(|d| d.trim_start_matches('/'))
            .ok_or_else(|| format!("copy to `{to}` does not start with @artifact"))?;
        let excludes: Vec<&str> = array(op.get("exclude")).filter_map(Value::as_str).collect();
        copy(tree, &rooted(pattern), dest, &excludes, &mut out);
    }
    Ok(out)
}

/// Why source-watcher refuses a generator's spec (`validateSpec`), stalling it with every
/// artifact as it made it last: a source alias twice, an artifact name twice or not a
/// DNS subdomain, a `revision` naming no alias.
fn invalid(generator: &Value) -> Option<String> {
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let mut aliases = std::collections::BTreeSet::new();
    for s in array(generator.at_pointer("/spec/sources")) {
        let alias = text(s, "alias");
        if !aliases.insert(alias.clone()) {
            return Some(format!("duplicate source alias '{alias}' found"));
        }
    }
    let mut names = std::collections::BTreeSet::new();
    for a in array(generator.at_pointer("/spec/artifacts")) {
        let name = text(a, "name");
        if !names.insert(name.clone()) {
            return Some(format!("duplicate artifact name '{name}' found"));
        }
        if !dns_subdomain(&name) {
            return Some(format!(
                "artifact name {name:?} is not a valid Kubernetes object name"
            ));
        }
        let revision = text(a, "revision");
        let alias = revision.strip_prefix('@').unwrap_or(&revision);
        if !revision.is_empty() && !aliases.contains(alias) {
            return Some(format!(
                "artifact {name} revision source alias '{alias}' not found"
            ));
        }
    }
    None
}

/// Kubernetes' `IsDNS1123Subdomain`: at most 253 characters, dot-separated labels of
/// lower-case letters, digits and `-`, each starting and ending with a letter or digit.
fn dns_subdomain(name: &str) -> bool {
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    name.len() <= 253
        && name.split('.').all(|label| {
            let b = label.as_bytes();
            b.first().is_some_and(|&c| alnum(c))
                && b.last().is_some_and(|&c| alnum(c))
                && b.iter().all(|&c| alnum(c) || c == b'-')
        })
}

/// The source alias and the pattern of a copy's `from` (`@alias/pattern`,
/// `builder.parseCopySource`).
fn copy_source(from: &str) -> Option<(&str, &str)> {
    from.strip_prefix('@').and_then(|f| f.split_once('/'))
}

/// How source-watcher's copy of `pattern` goes (`builder.applyCopyOperation`).
enum CopyOutcome {
    Copies,
    /// It fails: a path that does not exist, a glob that matches nothing.
    Fails(String),
    /// What it does is not modelled.
    Unknown(String),
}

/// How the copy of `pattern` goes. The builder matches a glob with Go's `fs.Glob`, where
/// `**` is `*`, one level deep, and keeps a match's path below `to` unless the pattern is
/// `dir/**`: only `dir/**` (and `**`) is modelled, the rest is not (a glob whose every
/// match is excluded fails too, by rules of exclusion held here only as the spec words
/// them: not known either).
fn copy_outcome(tree: &FileTree, pattern: &str, excludes: &[&str]) -> CopyOutcome {
    let glob_chars = ['*', '?', '[', ']'];
    let Some(at) = pattern.find(glob_chars) else {
        let path = pattern.trim_end_matches('/');
        return if path.is_empty() || tree.is_file(path) || tree.is_dir(path) {
            CopyOutcome::Copies
        } else {
            CopyOutcome::Fails(format!("source '{path}' does not exist"))
        };
    };
    let base = pattern[..at].trim_end_matches('/');
    if pattern != format!("{base}/**").trim_start_matches('/') || base.contains(glob_chars) {
        return CopyOutcome::Unknown(format!(
            "a copy from the glob `{pattern}` (only `dir/**` is modelled)"
        ));
    }
    let mut files = tree.files_under(base).peekable();
    if files.peek().is_none() {
        return CopyOutcome::Fails(format!("no files match pattern '{pattern}'"));
    }
    let rel = |f: &'_ str| -> String {
        match base {
            "" => f.to_string(),
            b => f[b.len() + 1..].to_string(),
        }
    };
    if files.all(|f| excluded(excludes, &rel(f))) {
        return CopyOutcome::Unknown(format!(
            "a copy from `{pattern}` whose every file is excluded"
        ));
    }
    CopyOutcome::Copies
}

/// Whether a copy's `exclude` patterns leave out `rel` (relative to the copy's prefix): one
/// with a `/` matches the path, one without a file name at any depth.
fn excluded(excludes: &[&str], rel: &str) -> bool {
    excludes.iter().any(|x| {
        if x.contains('/') {
            glob(x, rel)
        } else {
            glob(x, rel.rsplit('/').next().unwrap_or(rel))
        }
    })
}

fn array(v: Option<&Value>) -> impl Iterator<Item = &Value> {
    v.and_then(Value::as_array).into_iter().flatten()
}

/// One copy operation of `pattern` (relative to the source root, a path or `dir/**`, as
/// `copy_outcome` allows) to `dest` (relative to the artifact root).
fn copy(tree: &FileTree, pattern: &str, dest: &str, excludes: &[&str], out: &mut Files) {
    let into = |rel: &str| {
        if dest.is_empty() || dest.ends_with('/') {
            format!("{dest}{rel}")
        } else {
            format!("{dest}/{rel}")
        }
    };
    // `dir/**` copies the folder's contents; `dir/` (or `dir`) the folder itself.
    let (base, contents) = match pattern.strip_suffix("**") {
        Some(base) => (base.trim_end_matches('/'), true),
        None => (pattern.trim_end_matches('/'), false),
    };
    if !contents && tree.is_file(base) {
        let name = base.rsplit('/').next().unwrap_or(base);
        if !excluded(excludes, name) {
            let to = if dest.is_empty() || dest.ends_with('/') {
                format!("{dest}{name}")
            } else {
                dest.to_string()
            };
            out.insert(to, base.to_string());
        }
        return;
    }
    let folder_name = base.rsplit('/').next().unwrap_or(base);
    let files: Vec<&str> = tree.files_under(base).collect();
    for file in files {
        let rel = if base.is_empty() {
            file
        } else {
            &file[base.len() + 1..]
        };
        if excluded(excludes, rel) {
            continue;
        }
        let rel = if !contents && !folder_name.is_empty() {
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

/// Where the files of the ExternalArtifacts made from this repository are put for a build.
const ARTIFACTS: &str = crate::tree::GENERATED;

/// A key of an ExternalArtifact: its namespace and name.
type Key = (String, String);

/// The folder of the combined tree each ExternalArtifact made from this repository is
/// built in (see `build_artifacts`).
pub type Folders = BTreeMap<Key, String>;

/// `inv`, an environment's build, built again by `rebuild` over the files of the
/// ExternalArtifacts its ArtifactGenerators make, when they make any (see
/// `inventory::build`): `rebuild` builds the environment over `tree` with those files added
/// under `ARTIFACTS`, each artifact in its folder, and their paths are given back as the
/// repository files they copy.
pub fn build_artifacts(
    tree: &FileTree,
    inv: Inventory,
    rebuild: impl FnOnce(&FileTree, &Folders) -> Inventory,
) -> Inventory {
    // A generator copies from its source's artifact: what `.sourceignore` hides is not there.
    let source = match inv.owners.values().find(|o| o.parent.is_none()) {
        Some(root) => super::source::artifact(tree, &root.file, &root.source()),
        None => tree.clone(),
    };
    let external = external_artifacts(&source, &inv);
    if external.made.is_empty() {
        return with_reasons(inv, &external.unmade);
    }
    let copied = copy_in(tree, &source, &external.made);
    let inv = rebuild(&copied.tree, &copied.folders);
    with_reasons(named_back(inv, &external, &copied.copies), &external.unmade)
}

/// A tree with the files of the ExternalArtifacts of `made` copied in.
struct Copied {
    tree: FileTree,
    folders: Folders,
    /// The repository file each copy is of, by its path in `tree`.
    copies: BTreeMap<String, String>,
}

/// `tree` with the files of each artifact of `made`, read from `source`, added in its folder.
fn copy_in(tree: &FileTree, source: &FileTree, made: &BTreeMap<Key, Files>) -> Copied {
    let mut combined = tree.clone();
    let mut folders = Folders::new();
    let mut copies: BTreeMap<String, String> = BTreeMap::new();
    for ((namespace, name), files) in made {
        let prefix = format!("{ARTIFACTS}/{namespace}/{name}");
        for (at, from) in files {
            // Joined as the generator joins it (`securejoin`): never out of its artifact.
            let path = format!("{prefix}/{}", super::normalize_path(at));
            // The generator copies bytes: a file kustomize cannot read is copied as it is,
            // and fails the build that reads it.
            if let Some(text) = source.read(from) {
                combined = combined.with_text(&path, text);
            } else if let Some(why) = source.unreadable(from) {
                combined = combined.with_unreadable(&path, why);
            } else {
                continue;
            }
            copies.insert(path, from.clone());
        }
        folders.insert((namespace.clone(), name.clone()), prefix);
    }
    Copied {
        tree: combined,
        folders,
        copies,
    }
}

/// `inv`, built over the copies of `copies`, with the paths in the artifacts given back as
/// the repository files they copy, and a message naming an artifact's file by the artifact,
/// not by the folder it is built in. An owner that reads an artifact of `external` lists
/// the files it is made of.
fn named_back(
    mut inv: Inventory,
    external: &External,
    copies: &BTreeMap<String, String>,
) -> Inventory {
    let back = |file: &str| copies.get(file).cloned();
    let in_words = |text: &mut String| {
        for (namespace, name) in external.made.keys() {
            let folder = format!("{ARTIFACTS}/{namespace}/{name}/");
            if text.contains(&folder) {
                *text = text.replace(&folder, &format!("(ExternalArtifact {namespace}/{name}) "));
            }
        }
    };
    for entry in Arc::make_mut(&mut inv.objects)
        .values_mut()
        .chain(inv.duplicates.iter_mut().map(|(_, e)| e))
    {
        if entry.file.starts_with(ARTIFACTS) {
            if let Some(from) = back(&entry.file) {
                entry.file = Arc::from(from.as_str());
            }
        }
    }
    for o in inv.owners.values_mut() {
        if let Some(from) = back(&o.file) {
            o.file = from;
        }
        let source = o.source();
        if source.kind == SourceKind::ExternalArtifact {
            let key = (source.namespace, source.name);
            if let Some(files) = external.made.get(&key) {
                let mut read: Vec<String> = files.values().cloned().collect();
                read.extend(external.generator_files.get(&key).cloned());
                read.sort();
                read.dedup();
                o.made_of = read;
            }
        }
        o.unmodelled.iter_mut().for_each(in_words);
    }
    for w in &mut inv.warnings {
        if let Some(from) = back(&w.path) {
            w.path = from;
        }
        in_words(&mut w.message);
    }
    inv
}

/// The ExternalArtifacts the owners of an inventory read (see `external_artifacts`).
#[derive(Debug, Default)]
struct External {
    /// The files of each that an ArtifactGenerator of the build makes out of this
    /// repository.
    made: BTreeMap<Key, Files>,
    /// Why each owner that reads one that is not made here cannot see it.
    unmade: BTreeMap<ObjectId, Unseen>,
    /// The file of the ArtifactGenerator that makes each of `made`.
    generator_files: BTreeMap<Key, String>,
}

/// The ExternalArtifacts the owners of `inv` read, copied from `tree`.
fn external_artifacts(tree: &FileTree, inv: &Inventory) -> External {
    let mut out = External::default();
    if !inv.owners.values().any(|o| o.parent.is_none()) {
        return out;
    }
    let this_repo = |source: &SourceRef| inv.repository.contains(source);
    for o in inv.owners.values() {
        let SourceRef {
            kind,
            namespace,
            name,
        } = o.source();
        if kind != SourceKind::ExternalArtifact || o.parent.is_none() {
            continue;
        }
        let key = (namespace, name);
        if out.made.contains_key(&key) {
            continue;
        }
        let generators = generators_of(inv, &key);
        match generators.as_slice() {
            [(g, file)] => match files(g, &key.1, tree, &this_repo, &inv.artifact_root) {
                Ok(files) => {
                    out.generator_files.insert(key.clone(), file.to_string());
                    out.made.insert(key, files);
                }
                Err(why) => {
                    out.unmade.insert(o.id.clone(), why);
                }
            },
            [] => {
                out.unmade.insert(
                    o.id.clone(),
                    "no ArtifactGenerator of this repository makes it".to_string(),
                );
            }
            _ => {
                out.unmade.insert(
                    o.id.clone(),
                    "two ArtifactGenerators declare it".to_string(),
                );
            }
        }
    }
    out
}

/// The ArtifactGenerators of `inv` that declare the ExternalArtifact `key` (in its
/// namespace), with their files.
fn generators_of<'a>(inv: &'a Inventory, (namespace, name): &Key) -> Vec<(&'a Value, &'a str)> {
    inv.objects
        .iter()
        .filter(|(id, _)| is_generator(id) && id.namespace == *namespace)
        .filter_map(|(_, e)| e.whole.as_deref().map(|g| (g, &*e.file)))
        .filter(|(g, _)| {
            g.at_pointer("/spec/artifacts")
                .and_then(Value::as_array)
                .is_some_and(|a| {
                    a.iter()
                        .any(|x| x.get("name").and_then(Value::as_str) == Some(name.as_str()))
                })
        })
        .collect()
}

/// `inv` with why each ExternalArtifact in `unmade` cannot be seen added to its readers.
fn with_reasons(mut inv: Inventory, unmade: &BTreeMap<ObjectId, Unseen>) -> Inventory {
    for (id, why) in unmade {
        if let Some(o) = inv.owners.get_mut(id) {
            for u in &mut o.unmodelled {
                u.push_str(&format!("; the ExternalArtifact: {why}"));
            }
        }
    }
    inv
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
        files(&generator(copies), "apps", &tree(), &this_repo, "")
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
        // Excludes by name at any depth or by path below the prefix.
        assert_eq!(
            paths("        - {from: \"@repo/apps/**\", to: \"@artifact/all/\", exclude: [\"README*\", \"prod/testdata/**\"]}\n"),
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
            "",
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
            "",
        )
        .unwrap_err();
        assert!(err.contains("Merge"), "{err}");
        assert!(files(&generator(""), "nope", &tree(), &this_repo, "").is_err());
    }

    /// source-watcher builds the artifacts in order and stops at the first copy that fails
    /// (`builder.applyCopyOperation`: a path that does not exist, a glob that matches
    /// nothing, an alias no source has): that artifact and every later one keep what it
    /// made last, which only the cluster knows; one built before it is made. Go's `fs.Glob`
    /// reads `**` as `*` and the builder keeps a glob match's path, so a glob other than
    /// `dir/**` is not modelled, nor, in an artifact built before, a copy whose outcome is
    /// not known.
    #[test]
    fn a_failing_copy_keeps_its_artifact_and_later_ones_as_made_last() {
        let two = |first: &str| {
            let mut g = generator(&format!(
                "        - {{from: \"{first}\", to: \"@artifact/\"}}\n"
            ));
            g["spec"]["artifacts"]
                .as_array_mut()
                .unwrap()
                .push(serde_json::json!({"name": "later", "copy": [{"from": "@repo/apps/prod/**", "to": "@artifact/"}]}));
            g
        };
        let made = |g: &Value, name: &str| files(g, name, &tree(), &this_repo, "");
        for (from, why) in [
            ("@repo/apps/gone/", "source 'apps/gone' does not exist"),
            (
                "@repo/apps/gone/**",
                "no files match pattern 'apps/gone/**'",
            ),
            ("@nope/apps/", "source alias 'nope' not found"),
        ] {
            let g = two(from);
            for name in ["apps", "later"] {
                let err = made(&g, name).unwrap_err();
                assert!(
                    err.contains(why) && err.contains("only the cluster knows"),
                    "{err}"
                );
            }
        }
        let g = two("@repo/apps/base/**");
        assert!(made(&g, "apps").is_ok() && made(&g, "later").is_ok());
        // A copy fluxwave cannot follow, in an artifact built before: not known.
        for from in ["@other/chart/**", "@repo/apps/*/kustomization.yaml"] {
            let err = made(&two(from), "later").unwrap_err();
            assert!(err.contains("is not known"), "{err}");
            assert!(made(&two(from), "apps")
                .unwrap_err()
                .contains("not modelled"));
        }
    }

    /// source-watcher refuses an invalid spec (`validateSpec`) and stalls the whole
    /// generator: every artifact, the first too, keeps what it made last.
    #[test]
    fn an_invalid_generator_keeps_every_artifact_as_made_last() {
        let copy = "        - {from: \"@repo/apps/base/**\", to: \"@artifact/\"}\n";
        let with = |f: &dyn Fn(&mut Value)| {
            let mut g = generator(copy);
            f(&mut g);
            files(&g, "apps", &tree(), &this_repo, "")
        };
        assert!(with(&|_| {}).is_ok());
        for (change, why) in [
            (
                &(|g: &mut Value| {
                    g["spec"]["sources"][1]["alias"] = "repo".into();
                }) as &dyn Fn(&mut Value),
                "duplicate source alias 'repo'",
            ),
            (
                &|g: &mut Value| {
                    let again = g["spec"]["artifacts"][0].clone();
                    g["spec"]["artifacts"].as_array_mut().unwrap().push(again);
                },
                "duplicate artifact name 'apps'",
            ),
            (
                &|g: &mut Value| g["spec"]["artifacts"][0]["revision"] = "@nope".into(),
                "revision source alias 'nope' not found",
            ),
        ] {
            let err = with(change).unwrap_err();
            assert!(err.contains(why) && err.contains("stalls it"), "{err}");
        }
        for (name, ok) in [
            ("apps", true),
            ("a.b-c", true),
            ("Apps", false),
            ("-a", false),
            ("a..b", false),
        ] {
            assert_eq!(dns_subdomain(name), ok, "{name}");
        }
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
