//! `fluxwave build`: the objects each Flux Kustomization applies, built offline as fluxwave
//! builds them, their Secret values masked. `yaml` is a stream of documents that kubeconform
//! or `kubectl apply --dry-run=client -f -` reads, each after a comment naming its owner,
//! environment and file; `json` is one document with every object. Exit 0; 2 on bad input (an
//! environment or Kustomization that is not there, a Kustomization whose build fails: what
//! the others build is printed all the same).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use super::format::Format;
use super::report::{io, warn, Outcome, JSON_VERSION};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::flux::discover::{self, Environment};
use crate::flux::inventory::{self, flux_id, Inventory};
use crate::flux::release::Release;
use crate::kustomize::object::ObjectId;
use crate::objects::{self, MaskedObject};
use crate::tree::FileTree;

pub fn run(
    root: &Path,
    envs: &[super::EnvArg],
    kustomization: Option<&str>,
    format: Format,
    out: &mut impl Write,
) -> Result<Outcome> {
    // A stream of YAML documents, or one JSON document.
    let as_json = match format {
        Format::Yaml => false,
        Format::Json => true,
        other => return Err(other.unsupported("build")),
    };
    let wanted = kustomization.map(parse_kustomization).transpose()?;
    let config = Config::load(root)?;
    let tree = FileTree::from_worktree_or_dir(root)?;
    // `--env NAME=PATH` names the environments, as for `cutover`; `--env NAME` picks one.
    let (mut overrides, mut wanted_env) = (Vec::new(), None);
    for e in envs {
        match e {
            super::EnvArg::Pair(name, path) => overrides.push((name.clone(), path.clone())),
            super::EnvArg::Name(name) if wanted_env.is_none() => wanted_env = Some(name.as_str()),
            super::EnvArg::Name(name) => {
                return Err(Error::Usage(format!(
                    "--env {name}: one environment is built by name at a time"
                )))
            }
        }
    }
    let envs = pick(
        discover::environments(&[&tree], Some(&config), &overrides),
        wanted_env,
        &root.display().to_string(),
    )?;
    // YAML and JSON are written as each environment is built, one object held at a time.
    let mut w = std::io::BufWriter::with_capacity(1 << 16, &mut *out);
    let mut json = JsonStream::new(envs.iter().map(|e| e.name.clone()).collect());
    let mut seen = Seen::default();
    for env in &envs {
        let mut inv = inventory::build_whole(&tree, env);
        crate::helm::render(&mut inv, &tree);
        seen.owners(env, &inv, wanted.as_ref());
        seen.releases(env, &inv, wanted.as_ref());
        // Nothing of a build Flux fails is applied (its objects stay in the inventory for
        // the lints only).
        let failed: BTreeSet<&ObjectId> = inv
            .owners
            .iter()
            .filter(|(_, o)| o.substitution_error.is_some())
            .map(|(id, _)| id)
            .collect();
        let make = |b: MaskedObject| {
            let selected =
                wanted.as_ref().is_none_or(|w| picks(w, &b.owner)) && !failed.contains(&*b.owner);
            selected.then(|| {
                if as_json {
                    json_item(&b)
                } else {
                    Ok(yaml_document(&b))
                }
            })
        };
        objects::each(&inv, make, |text| {
            let Some(text) = text else { return Ok(()) };
            // What is written is of a Kustomization found: a `--kustomization` not found
            // fails below with nothing written.
            seen.found = true;
            if as_json {
                json.object(&mut w, &text?)
            } else {
                w.write_all(text?.as_bytes()).map_err(io)
            }
        })?;
    }
    seen.warn_unchecked();
    if let (Some(w), false) = (&wanted, seen.found) {
        seen.known.sort();
        seen.known.dedup();
        return Err(Error::Usage(format!(
            "--kustomization {}/{}: no such Flux Kustomization or ResourceSet in {}; there are: {}",
            w.namespace,
            w.name,
            names(&envs),
            seen.known.join(", ")
        )));
    }
    if as_json {
        seen.finish_json(json, &mut w)?;
    }
    w.flush().map_err(io)?;
    drop(w);
    if !seen.failed.is_empty() {
        return Err(Error::Partial(format!(
            "{} failed to build; what the others apply is printed",
            crate::plural::count(seen.failed.len(), "Kustomization")
        )));
    }
    Ok(Outcome::Clean)
}

/// What the builds say besides their objects, gathered environment by environment.
#[derive(Default)]
struct Seen {
    /// Whether the Kustomization `--kustomization` names was found (any, without it).
    found: bool,
    /// Every Kustomization, as `namespace/name`.
    known: Vec<String>,
    /// (environment, Kustomization, why) of each that fails to build.
    failed: Vec<(String, String, String)>,
    /// (environment, HelmRelease, why) of each whose chart is not rendered.
    not_rendered: Vec<(String, String, String)>,
    /// The HelmReleases whose values are not checked against their chart's schema, by chart
    /// and why: said once for each chart, as most repositories install one chart many times.
    unchecked: BTreeMap<(String, String), BTreeSet<String>>,
}

impl Seen {
    /// The Kustomizations of `env` that `wanted` selects: each that fails to build, or that
    /// applies objects fluxwave cannot see, is said on stderr.
    fn owners(&mut self, env: &Environment, inv: &Inventory, wanted: Option<&ObjectId>) {
        for (id, o) in &inv.owners {
            let selected = wanted.is_none_or(|w| picks(w, id));
            self.known.push(format!("{}/{}", id.namespace, id.name));
            self.found |= selected;
            if !selected {
                continue;
            }
            if let Some(e) = o.failure() {
                self.failed.push((
                    env.name.clone(),
                    format!("{}/{}", id.namespace, id.name),
                    e.to_string(),
                ));
                warn(format_args!(
                    "fluxwave: {}: {} {}/{} fails to build, as it would in Flux: {e}",
                    env.name, id.kind, id.namespace, id.name
                ));
            } else if !o.unmodelled.is_empty() {
                warn(format_args!(
                    "fluxwave: warning: {}: {} {}/{} applies objects fluxwave cannot see: {}",
                    env.name,
                    id.kind,
                    id.namespace,
                    id.name,
                    o.unmodelled.join("; ")
                ));
            }
        }
    }

    /// The HelmReleases of `env` that `wanted` selects: each not rendered is said on stderr;
    /// those whose values are not checked are kept for `warn_unchecked`.
    fn releases(&mut self, env: &Environment, inv: &Inventory, wanted: Option<&ObjectId>) {
        for (id, e) in inv.objects.iter() {
            let selected = wanted.is_none_or(|w| picks(w, &e.owner));
            let rendered = e.release.as_deref().and_then(Release::rendered);
            if let (true, Some(r)) = (selected, rendered) {
                if let Some(why) = &r.unchecked {
                    self.unchecked
                        .entry((r.chart.clone(), why.clone()))
                        .or_default()
                        .insert(format!("{}/{}", id.namespace, id.name));
                }
            }
            if let (true, Some(why)) = (selected, e.release.as_deref().and_then(Release::why)) {
                warn(format_args!(
                    "fluxwave: warning: {}: HelmRelease {}/{} is not rendered: {why}",
                    env.name, id.namespace, id.name
                ));
                self.not_rendered.push((
                    env.name.clone(),
                    format!("{}/{}", id.namespace, id.name),
                    why.to_string(),
                ));
            }
        }
    }

    /// Once per chart and reason: the HelmReleases whose values are not checked.
    fn warn_unchecked(&self) {
        for ((chart, why), releases) in &self.unchecked {
            let mut names: Vec<&str> = releases.iter().map(String::as_str).take(3).collect();
            if releases.len() > 3 {
                names.push("…");
            }
            warn(format_args!(
                "fluxwave: warning: {} of chart {chart} ({}): {why}",
                crate::plural::count(releases.len(), "HelmRelease"),
                names.join(", ")
            ));
        }
    }

    /// The end of the JSON document: what failed to build and what is not rendered.
    fn finish_json(&self, json: JsonStream, w: &mut impl Write) -> Result<()> {
        let failed: Vec<JsonFailure> = self
            .failed
            .iter()
            .map(|(environment, kustomization, error)| JsonFailure {
                environment,
                kustomization,
                error,
            })
            .collect();
        let not_rendered: Vec<JsonNotRendered> = self
            .not_rendered
            .iter()
            .map(|(environment, release, why)| JsonNotRendered {
                environment,
                release,
                why,
            })
            .collect();
        json.finish(w, &failed, &not_rendered)
    }
}

/// `b` as a document of the YAML stream, after the comment naming its owner, environment and
/// file.
fn yaml_document(b: &MaskedObject) -> String {
    let mut head = format!(
        "# owner: {}{}/{}, environment: {}, file: {}",
        if crate::flux::resource_set::is(&b.owner) {
            "ResourceSet "
        } else {
            ""
        },
        b.owner.namespace,
        b.owner.name,
        b.environment,
        b.file
    );
    if let Some(cluster) = &b.id.cluster {
        head.push_str(&format!(", cluster: {cluster}"));
    }
    if b.masked {
        head.push_str(", secret values masked");
    }
    format!("---\n{}\n{}", one_line(&head), b.yaml())
}

/// `b` as an item of `--format json`'s `objects`, indented to its depth (see `JsonStream`).
fn json_item(b: &MaskedObject) -> Result<String> {
    indented(&JsonObject::of(b), 2)
}

/// Whether `--kustomization` (`wanted`, a Flux Kustomization's id) picks owner `id`: that
/// Kustomization, or the ResourceSet of that namespace and name.
fn picks(wanted: &ObjectId, id: &ObjectId) -> bool {
    *wanted == *id
        || (crate::flux::resource_set::is(id)
            && id.namespace == wanted.namespace
            && id.name == wanted.name
            && id.cluster == wanted.cluster)
}

/// `--kustomization NS/NAME` as the id of a Flux Kustomization.
pub(super) fn parse_kustomization(s: &str) -> Result<ObjectId> {
    match s.split_once('/') {
        Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
            Ok(flux_id(ns, name))
        }
        _ => Err(Error::Usage(format!(
            "--kustomization {s}: say NAMESPACE/NAME, as in `flux-system/apps`"
        ))),
    }
}

/// The environments discovered in `where_`, or the one `--env` names; `Err` naming those
/// there are when there is none or it is not one of them.
pub(super) fn pick(
    envs: Vec<Environment>,
    wanted: Option<&str>,
    where_: &str,
) -> Result<Vec<Environment>> {
    if envs.is_empty() {
        return Err(Error::Usage(format!(
            "no Flux environment found in {where_}; looked for {}. List them under clusters.environments in fluxwave.yaml",
            discover::WHERE_LOOKED
        )));
    }
    let Some(wanted) = wanted else {
        return Ok(envs);
    };
    if envs.iter().any(|e| e.name == wanted) {
        return Ok(envs.into_iter().filter(|e| e.name == wanted).collect());
    }
    Err(Error::Usage(format!(
        "--env {wanted}: no such environment; there are: {}",
        names(&envs)
    )))
}

fn names(envs: &[Environment]) -> String {
    envs.iter()
        .map(|e| format!("{} ({})", e.name, e.path))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `s` as one comment line: a line break in a file name cannot end the comment.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// `--format json`'s document, written as it is made: its `objects` one at a time as each
/// environment is built, then the Kustomizations that fail to build (`failed`, exit 2: what
/// the others apply is printed) and the HelmReleases whose charts are not rendered, and why
/// (`notRendered`: their objects are not listed). Byte for byte what serde_json's pretty
/// printer makes of the whole document (a test compares them): each part is printed by it
/// and indented to its depth, and a line break in a string it prints is `\n`, so every line
/// break it writes is one of the document's.
struct JsonStream {
    environments: Vec<String>,
    started: bool,
    objects: usize,
}

impl JsonStream {
    fn new(environments: Vec<String>) -> JsonStream {
        JsonStream {
            environments,
            started: false,
            objects: 0,
        }
    }

    /// The document's head, once: nothing is written before an object is found, or before
    /// the end (a `--kustomization` not found writes nothing).
    fn start(&mut self, w: &mut impl Write) -> Result<()> {
        if !self.started {
            self.started = true;
            let head = format!(
                "{{\n  \"version\": {JSON_VERSION},\n  \"environments\": {},\n  \"objects\": [",
                indented(&self.environments, 1)?
            );
            w.write_all(head.as_bytes()).map_err(io)?;
        }
        Ok(())
    }

    /// An item of `objects`, as `json_item` makes it.
    fn object(&mut self, w: &mut impl Write, item: &str) -> Result<()> {
        self.start(w)?;
        let sep = if self.objects == 0 { "\n" } else { ",\n" };
        self.objects += 1;
        w.write_all(format!("{sep}    {item}").as_bytes())
            .map_err(io)
    }

    fn finish(
        mut self,
        w: &mut impl Write,
        failed: &[JsonFailure],
        not_rendered: &[JsonNotRendered],
    ) -> Result<()> {
        self.start(w)?;
        let tail = format!(
            "{}],\n  \"failed\": {},\n  \"notRendered\": {}\n}}\n",
            if self.objects == 0 { "" } else { "\n  " },
            indented(&failed, 1)?,
            indented(&not_rendered, 1)?
        );
        w.write_all(tail.as_bytes()).map_err(io)
    }
}

/// `v` as serde_json's pretty printer writes it `depth` levels deep, but for the indent of
/// its first line.
fn indented(v: &impl Serialize, depth: usize) -> Result<String> {
    let text = serde_json::to_string_pretty(v).map_err(|e| io(e.into()))?;
    Ok(text.replace('\n', &format!("\n{}", "  ".repeat(depth))))
}

#[derive(Serialize)]
struct JsonNotRendered<'a> {
    environment: &'a str,
    release: &'a str,
    why: &'a str,
}

#[derive(Serialize)]
struct JsonFailure<'a> {
    environment: &'a str,
    kustomization: &'a str,
    error: &'a str,
}

#[derive(Serialize)]
struct JsonObject<'a> {
    kind: &'a str,
    #[serde(rename = "apiVersion")]
    api_version: &'a str,
    namespace: &'a str,
    name: &'a str,
    /// The cluster of its owner's `spec.kubeConfig`, when it is not Flux's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    cluster: Option<&'a str>,
    /// `namespace/name` of the Flux Kustomization or ResourceSet that applies it.
    owner: String,
    /// Which of the two: `Kustomization` or `ResourceSet`.
    #[serde(rename = "ownerKind")]
    owner_kind: &'a str,
    environment: &'a str,
    file: &'a str,
    /// Whether Secret values were masked in `object`.
    masked: bool,
    /// `namespace/name` of the HelmRelease whose chart renders it.
    #[serde(skip_serializing_if = "Option::is_none")]
    release: Option<String>,
    object: &'a Value,
}

impl<'a> JsonObject<'a> {
    fn of(b: &'a MaskedObject) -> JsonObject<'a> {
        JsonObject {
            kind: &b.id.kind,
            api_version: b.api_version(),
            namespace: &b.id.namespace,
            name: &b.id.name,
            cluster: b.id.cluster_name(),
            owner: format!("{}/{}", b.owner.namespace, b.owner.name),
            owner_kind: &b.owner.kind,
            environment: &b.environment,
            file: &b.file,
            masked: b.masked,
            release: b
                .release
                .as_ref()
                .map(|r| format!("{}/{}", r.namespace, r.name)),
            object: &b.object,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn built(name: &str, object: Value) -> MaskedObject {
        MaskedObject {
            environment: "dev".into(),
            owner: flux_id("flux-system", "apps").into(),
            id: ObjectId {
                group: String::new(),
                kind: "ConfigMap".into(),
                namespace: "apps".into(),
                name: name.into(),
                cluster: None,
            },
            file: format!("apps/{name}.yaml").into(),
            object,
            masked: false,
            release: None,
        }
    }

    /// The document as it is written, against serde_json's pretty printing of it whole.
    #[test]
    fn the_json_written_as_it_is_made_is_the_pretty_printed_document() {
        let objects = [
            built(
                "a",
                json!({"kind": "ConfigMap", "data": {"k": "two\nlines", "e": {}}}),
            ),
            built(
                "b",
                json!({"kind": "ConfigMap", "data": [], "n": [1, 2.5, null]}),
            ),
        ];
        let failed = [JsonFailure {
            environment: "dev",
            kustomization: "flux-system/broken",
            error: "path `./x` does not exist",
        }];
        let not_rendered = [JsonNotRendered {
            environment: "dev",
            release: "apps/web",
            why: "chart not found",
        }];
        for n in 0..=objects.len() {
            for (failed, not_rendered) in [
                (&failed[..0], &not_rendered[..0]),
                (&failed[..], &not_rendered[..]),
            ] {
                let envs = vec!["dev".to_string(), "prod".to_string()];
                let mut out = Vec::new();
                let mut stream = JsonStream::new(envs.clone());
                for b in &objects[..n] {
                    stream.object(&mut out, &json_item(b).unwrap()).unwrap();
                }
                stream.finish(&mut out, failed, not_rendered).unwrap();
                let whole = json!({
                    "version": JSON_VERSION,
                    "environments": envs,
                    "objects": objects[..n].iter().map(JsonObject::of).collect::<Vec<_>>(),
                    "failed": failed,
                    "notRendered": not_rendered,
                });
                let want = serde_json::to_string_pretty(&whole).unwrap() + "\n";
                assert_eq!(String::from_utf8(out).unwrap(), want);
            }
        }
    }
}
