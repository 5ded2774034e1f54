//! Builds every environment of one revision as Flux does and records its inventory: which
//! Flux Kustomization (the *owner*) applies every object. The root Kustomization owns the
//! environment's entry; every Flux Kustomization found in a build is an owner too, built at
//! its `spec.path` with Flux's own patches, components, `targetNamespace`, name affixes and
//! `commonMetadata` on top. An object belongs to the first owner that builds it.

use std::collections::{btree_map, BTreeMap, VecDeque};
use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::{normalize_path, Kustomization, SourceRef, KUSTOMIZE_GROUP};
use crate::config::{self, Config};
use crate::error::Result;
use crate::fs::join;
use crate::kustomize::object::{kept_whole, Facts, ObjectId};
use crate::kustomize::{BuildError, Builder, Resource, Warning};
use crate::tree::FileTree;

/// A Flux Kustomization as the cluster would hold it after this revision is applied.
#[derive(Debug, Clone)]
pub struct Owner {
    pub id: ObjectId,
    pub path: String,
    pub prune: bool,
    /// MirrorPrune (the default), Delete, WaitForTermination or Orphan.
    pub deletion_policy: String,
    pub suspend: bool,
    pub depends_on: Vec<ObjectId>,
    /// `spec.sourceRef` as written.
    source: SourceRef,
    /// Whether it has `spec.postBuild`.
    substitutes: bool,
    /// The owner whose build holds this Kustomization (None for the root).
    pub parent: Option<ObjectId>,
    /// The file it is written in; empty for an assumed root.
    pub file: String,
    /// Its document's index in `file` (non-empty documents, from 0).
    pub index: usize,
    /// False when its build failed or its source is not this repository: its inventory is
    /// unknown, so nothing is judged deleted from it.
    pub built: bool,
    pub object: Value,
}

impl Owner {
    fn from_value(v: &Value, parent: Option<ObjectId>, file: &str, index: usize) -> Option<Owner> {
        let k = Kustomization::from_value(v)?;
        let mut id = ObjectId::of(v)?;
        if id.namespace.is_empty() {
            id.namespace = parent
                .as_ref()
                .map_or("flux-system".to_string(), |p| p.namespace.clone());
        }
        let spec = k.spec;
        let depends_on = spec
            .depends_on
            .iter()
            .map(|d| flux_id(d.namespace.as_deref().unwrap_or(&id.namespace), &d.name))
            .collect();
        Some(Owner {
            path: spec.path,
            prune: spec.prune,
            deletion_policy: spec
                .deletion_policy
                .unwrap_or_else(|| "MirrorPrune".to_string()),
            suspend: spec.suspend,
            depends_on,
            source: spec.source_ref,
            substitutes: spec.post_build.is_some(),
            parent,
            file: file.to_string(),
            index,
            built: true,
            object: k.object,
            id,
        })
    }

    /// Whether it substitutes variables in what it builds (`spec.postBuild`).
    pub fn substitutes(&self) -> bool {
        self.substitutes
    }

    /// Whether it deletes what leaves its build when it reconciles.
    pub fn prunes(&self) -> bool {
        self.prune && !self.suspend
    }

    /// Whether deleting this Kustomization deletes what it applied (its finalizer).
    pub fn deletes_on_removal(&self) -> bool {
        !self.suspend
            && match self.deletion_policy.as_str() {
                "Delete" | "WaitForTermination" => true,
                "Orphan" => false,
                _ => self.prune,
            }
    }

    /// The spec as one line: `prune: true, deletionPolicy: MirrorPrune`.
    pub fn policy(&self) -> String {
        let mut s = format!(
            "prune: {}, deletionPolicy: {}",
            self.prune, self.deletion_policy
        );
        if self.suspend {
            s.push_str(", suspend: true");
        }
        s
    }

    /// `spec.sourceRef` as (kind, namespace, name); the namespace defaults to the owner's.
    pub fn source(&self) -> (String, String, String) {
        let s = &self.source;
        (
            s.kind.clone(),
            if s.namespace.is_empty() {
                self.id.namespace.clone()
            } else {
                s.namespace.clone()
            },
            s.name.clone(),
        )
    }

    /// The kustomization Flux wraps around `spec.path`.
    fn overlay(&self) -> Map<String, Value> {
        let spec = self.object.get("spec").cloned().unwrap_or(Value::Null);
        let mut k = Map::new();
        for (from, to) in [
            ("components", "components"),
            ("patches", "patches"),
            ("targetNamespace", "namespace"),
            ("namePrefix", "namePrefix"),
            ("nameSuffix", "nameSuffix"),
        ] {
            if let Some(v) = spec.get(from) {
                k.insert(to.into(), v.clone());
            }
        }
        if let Some(m) = spec.get("commonMetadata") {
            if let Some(l) = m.get("labels") {
                k.insert("commonLabels".into(), l.clone());
            }
            if let Some(a) = m.get("annotations") {
                k.insert("commonAnnotations".into(), a.clone());
            }
        }
        k
    }
}

pub fn flux_id(namespace: &str, name: &str) -> ObjectId {
    ObjectId {
        group: KUSTOMIZE_GROUP.into(),
        kind: "Kustomization".into(),
        namespace: namespace.into(),
        name: name.into(),
    }
}

/// One object of an inventory: who applies it, where it is written, and what the rules and
/// lints read of it (the object itself is kept only for the kinds of `kept_whole`).
#[derive(Debug, Clone)]
pub struct Entry {
    /// Shared by every object of the owner.
    pub owner: Arc<ObjectId>,
    /// Shared by every object of the file.
    pub file: Arc<str>,
    pub index: usize,
    pub facts: Facts,
    pub whole: Option<Box<Value>>,
}

impl Entry {
    /// `r`, built by `owner` from `file`; `substituted` when the owner has `postBuild`.
    fn new(
        owner: &Arc<ObjectId>,
        file: &Arc<str>,
        substituted: bool,
        id: &ObjectId,
        r: Resource,
    ) -> Entry {
        Entry {
            owner: owner.clone(),
            file: file.clone(),
            facts: r.facts(substituted),
            whole: kept_whole(&id.group, &id.kind).then(|| Box::new(r.value)),
            index: r.index,
        }
    }
}

/// One environment at one revision.
#[derive(Debug, Clone, Default)]
pub struct Inventory {
    pub env: String,
    pub env_path: String,
    pub owners: BTreeMap<ObjectId, Owner>,
    /// Every object but Flux Kustomizations (those are `owners`).
    pub objects: BTreeMap<ObjectId, Entry>,
    /// Objects a second owner builds too (the entry names that second owner): Flux applies
    /// them twice, and the owner that stops building one prunes it.
    pub duplicates: Vec<(ObjectId, Entry)>,
    pub warnings: Vec<Warning>,
}

impl Inventory {
    /// Whether `later` reconciles after `earlier`: it depends on it (transitively), or it is
    /// created by it (a descendant in the ownership tree).
    pub fn reconciles_after(&self, later: &ObjectId, earlier: &ObjectId) -> bool {
        let mut seen = std::collections::BTreeSet::new();
        let mut stack = vec![later.clone()];
        while let Some(cur) = stack.pop() {
            if !seen.insert(cur.clone()) {
                continue;
            }
            if let Some(o) = self.owners.get(&cur) {
                for next in o.depends_on.iter().chain(o.parent.iter()) {
                    if next == earlier {
                        return true;
                    }
                    stack.push(next.clone());
                }
            }
        }
        false
    }
}

/// The environments of a revision: `clusters.environments` of its fluxwave.yaml, else every
/// folder under `clusters/` (but `base`) with a kustomization or a `flux bootstrap` sync file.
pub fn environments(tree: &FileTree) -> Result<Vec<(String, String)>> {
    if let Some(text) = tree.read(config::FILE) {
        let config = Config::parse(&text)?;
        return Ok(config
            .environments
            .into_iter()
            .map(|e| (e.name, normalize_path(&e.path)))
            .collect());
    }
    let mut envs = std::collections::BTreeSet::new();
    for file in tree.files_under("clusters") {
        let parts: Vec<&str> = file.split('/').collect();
        let marks = match parts.as_slice() {
            [_, env, k] => ["kustomization.yaml", "kustomization.yml", "Kustomization"]
                .contains(k)
                .then_some(*env),
            [_, env, "flux-system", "gotk-sync.yaml"] => Some(*env),
            _ => None,
        };
        if let Some(env) = marks.filter(|e| *e != "base") {
            envs.insert(env.to_string());
        }
    }
    Ok(envs
        .into_iter()
        .map(|e| (e.clone(), format!("clusters/{e}")))
        .collect())
}

/// The root Kustomization of an environment: read from `flux-system/gotk-sync.yaml` (the one
/// whose path is the environment), or assumed as `flux bootstrap` writes it.
fn root_of(tree: &FileTree, env_path: &str) -> Owner {
    let sync = join(env_path, "flux-system/gotk-sync.yaml").unwrap_or_default();
    let docs = tree
        .read(&sync)
        .and_then(|t| crate::yaml::parse_all(&sync, &t).ok())
        .unwrap_or_default();
    let flux: Vec<Owner> = docs
        .iter()
        .enumerate()
        .filter(|(_, d)| Kustomization::is(d))
        .filter_map(|(i, d)| Owner::from_value(d, None, &sync, i))
        .collect();
    if let Some(root) = flux.iter().find(|o| o.path == env_path).or(flux.first()) {
        return root.clone();
    }
    let assumed = json!({
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": "flux-system", "namespace": "flux-system"},
        "spec": {"path": format!("./{env_path}"), "prune": true,
                 "sourceRef": {"kind": "GitRepository", "name": "flux-system"}},
    });
    let mut root =
        Owner::from_value(&assumed, None, "", 0).unwrap_or_else(|| unreachable_owner(env_path));
    root.file = String::new();
    root
}

fn unreachable_owner(env_path: &str) -> Owner {
    Owner {
        id: flux_id("flux-system", "flux-system"),
        path: env_path.to_string(),
        prune: true,
        deletion_policy: "MirrorPrune".into(),
        suspend: false,
        depends_on: Vec::new(),
        source: SourceRef::default(),
        substitutes: false,
        parent: None,
        file: String::new(),
        index: 0,
        built: true,
        object: Value::Null,
    }
}

/// Builds environment `env` (entry `env_path`) of `tree`.
pub fn build(tree: &FileTree, env: &str, env_path: &str) -> Inventory {
    let root = root_of(tree, env_path);
    let artifact = super::source::artifact(tree, &root.file, root.source());
    let mut builder = Builder::new(&artifact);
    let mut inv = Inventory {
        env: env.to_string(),
        env_path: env_path.to_string(),
        ..Inventory::default()
    };
    let root_source = root.source();
    let mut queue = VecDeque::from([root.id.clone()]);
    inv.owners.insert(root.id.clone(), root);
    let mut extra_warnings = Vec::new();
    while let Some(owner_id) = queue.pop_front() {
        let Some(owner) = inv.owners.get(&owner_id).cloned() else {
            continue;
        };
        let where_ = if owner.file.is_empty() {
            env_path.to_string()
        } else {
            owner.file.clone()
        };
        if owner.parent.is_some() && owner.source() != root_source {
            let (kind, ns, name) = owner.source();
            extra_warnings.push(Warning {
                path: where_,
                feature: "other source".into(),
                message: format!("{} reads {kind}/{ns}/{name}, not this repository: what it applies is not in the inventory", owner.id),
            });
            mark_unbuilt(&mut inv, &owner_id);
            continue;
        }
        let shared_id = Arc::new(owner_id.clone());
        let building = Building {
            owner: &shared_id,
            substituted: owner.substitutes(),
            vars: substitutions(&owner.object),
        };
        let (queued, warned, duplicated) =
            (queue.len(), extra_warnings.len(), inv.duplicates.len());
        let mut recorded = 0;
        let mut file: Arc<str> = Arc::from("");
        let built = builder.build_owner(
            &format!("{where_} ({})", owner.id),
            &owner.path,
            &owner.overlay(),
            &mut |r| {
                recorded += 1;
                // The objects of a file come together: its path is shared.
                if *file != *r.file {
                    file = Arc::from(r.file.as_str());
                }
                record(
                    &mut inv,
                    &mut queue,
                    &mut extra_warnings,
                    &building,
                    &file,
                    r,
                );
            },
        );
        if let Err(e) = built {
            // Nothing of a build that fails is applied: what it recorded is taken back.
            if recorded > 0 {
                inv.objects
                    .retain(|_, entry| !Arc::ptr_eq(&entry.owner, &shared_id));
                inv.owners
                    .retain(|_, o| o.parent.as_ref() != Some(&owner_id));
                inv.duplicates.truncate(duplicated);
                queue.truncate(queued);
                extra_warnings.truncate(warned);
            }
            extra_warnings.push(Warning {
                path: where_,
                feature: "build failure".into(),
                message: format!(
                    "{} cannot be built ({e}); Flux stops there and deletes nothing of it",
                    owner.id
                ),
            });
            mark_unbuilt(&mut inv, &owner_id);
        }
    }
    inv.warnings = builder.warnings;
    inv.warnings.extend(extra_warnings);
    inv.warnings.sort();
    inv.warnings.dedup();
    inv
}

/// The Flux Kustomizations an environment's build declares, as Flux holds them once every
/// patch on the way has been applied (the environment's, and its root Kustomization's
/// `spec.patches`): an owners-only build. It builds what the root Kustomization applies and
/// keeps only the Flux Kustomizations of it, without building their `spec.path` or keeping
/// any other object, so it reads the Flux wiring, not the app tier.
#[derive(Debug, Clone, Default)]
pub struct Owners {
    /// In build order; the first of two with one id.
    pub owners: Vec<Owner>,
    /// False when the build met something whose objects it cannot see (a remote base, a
    /// kustomize feature it does not model): a Kustomization it lacks may still be there.
    pub complete: bool,
}

/// The owners-only build of environment `env_path` of `tree` (see `Owners`); `Err` when the
/// build fails, as Flux's would.
pub fn owners(tree: &FileTree, env_path: &str) -> std::result::Result<Owners, BuildError> {
    let root = root_of(tree, env_path);
    // The root's own patches apply when it is the environment's (bootstrap's gotk-sync).
    let overlay = if root.path == env_path {
        root.overlay()
    } else {
        Map::new()
    };
    let vars = substitutions(&root.object);
    let artifact = super::source::artifact(tree, &root.file, root.source());
    let mut builder = Builder::owners_only(&artifact);
    let mut owners: Vec<Owner> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    builder.build_owner(
        &format!("{env_path} ({})", root.id),
        env_path,
        &overlay,
        &mut |mut r| {
            if !Kustomization::is(&r.value) {
                return;
            }
            substitute_identity(&mut r.value, &vars);
            if let Some(o) = Owner::from_value(&r.value, Some(root.id.clone()), &r.file, r.index) {
                if seen.insert(o.id.clone()) {
                    owners.push(o);
                }
            }
        },
    )?;
    Ok(Owners {
        owners,
        complete: builder.warnings.is_empty(),
    })
}

/// The owner whose build is being recorded.
struct Building<'a> {
    /// Its id, shared by its entries.
    owner: &'a Arc<ObjectId>,
    /// Whether it has `postBuild`.
    substituted: bool,
    /// Its inline `postBuild` variables.
    vars: BTreeMap<String, String>,
}

/// Records object `r` of the build of `building`, written in `file`: a Flux Kustomization
/// becomes an owner to build next, any other object an entry of the inventory unless an
/// earlier owner has it already.
fn record(
    inv: &mut Inventory,
    queue: &mut VecDeque<ObjectId>,
    warnings: &mut Vec<Warning>,
    building: &Building,
    file: &Arc<str>,
    mut r: Resource,
) {
    let (owner, substituted, vars) = (building.owner, building.substituted, &building.vars);
    substitute_identity(&mut r.value, vars);
    let Some(id) = r.id() else {
        warnings.push(Warning {
            path: r.file.clone(),
            feature: "unnamed object".into(),
            message: format!("document {} has no apiVersion, kind or name", r.index + 1),
        });
        return;
    };
    if id.name.contains("${") || id.namespace.contains("${") {
        warnings.push(Warning {
            path: r.file.clone(),
            feature: "postBuild substitution".into(),
            message: format!("{id}: a variable in its name or namespace comes from substituteFrom, which is not modelled"),
        });
    }
    if Kustomization::is(&r.value) {
        if let Some(child) = Owner::from_value(&r.value, Some((**owner).clone()), &r.file, r.index)
        {
            if !inv.owners.contains_key(&child.id) {
                queue.push_back(child.id.clone());
                inv.owners.insert(child.id.clone(), child);
            }
        }
        return;
    }
    match inv.objects.entry(id) {
        btree_map::Entry::Occupied(e) if e.get().owner != *owner => {
            let (id, first) = (e.key().clone(), &e.get().owner);
            warnings.push(Warning {
                path: r.file.clone(),
                feature: "two owners".into(),
                message: format!(
                    "{id} is applied by both {first} and {owner}; Flux counts it as {first}'s"
                ),
            });
            let entry = Entry::new(owner, file, substituted, &id, r);
            inv.duplicates.push((id, entry));
        }
        btree_map::Entry::Occupied(_) => {}
        btree_map::Entry::Vacant(v) => {
            let entry = Entry::new(owner, file, substituted, v.key(), r);
            v.insert(entry);
        }
    }
}

fn mark_unbuilt(inv: &mut Inventory, id: &ObjectId) {
    if let Some(o) = inv.owners.get_mut(id) {
        o.built = false;
    }
}

/// The inline `postBuild.substitute` variables of a Flux Kustomization.
fn substitutions(owner: &Value) -> BTreeMap<String, String> {
    crate::flux::string_map_at(owner, "/spec/postBuild/substitute")
}

/// Flux's `${VAR}`, `${VAR:=default}` and `${VAR:-default}` in an object's name and namespace.
fn substitute_identity(v: &mut Value, vars: &BTreeMap<String, String>) {
    let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    for key in ["name", "namespace"] {
        if let Some(Value::String(s)) = meta.get_mut(key) {
            if s.contains("${") {
                *s = substitute(s, vars);
            }
        }
    }
}

fn substitute(s: &str, vars: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let Some(end) = rest[start..].find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let inner = &rest[start + 2..start + end];
        let (name, default) = match inner.split_once(":=").or_else(|| inner.split_once(":-")) {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        match (vars.get(name), default) {
            (Some(v), _) => out.push_str(v),
            (None, Some(d)) => out.push_str(d),
            (None, None) => out.push_str(&rest[start..=start + end]),
        }
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitutes_inline_variables_and_defaults() {
        let vars = BTreeMap::from([("APP".to_string(), "web".to_string())]);
        assert_eq!(
            substitute("${APP}-${NS:=media}-${X}", &vars),
            "web-media-${X}"
        );
    }

    #[test]
    fn a_build_that_fails_records_nothing() {
        let ks = |name: &str, path: &str| {
            format!("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {{name: {name}, namespace: flux-system}}\nspec:\n  path: ./{path}\n  prune: true\n  sourceRef: {{kind: GitRepository, name: flux-system}}\n")
        };
        let cm = |name: &str| {
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: app}}\n")
        };
        let (first, apps, child) = (
            ks("first", "first"),
            ks("apps", "apps"),
            ks("child", "child"),
        );
        let (shared, own) = (cm("shared"), cm("own"));
        let tree = FileTree::from_files([
            (
                "clusters/dev/kustomization.yaml",
                "resources: [first.yaml, apps.yaml]\n",
            ),
            ("clusters/dev/first.yaml", first.as_str()),
            ("clusters/dev/apps.yaml", apps.as_str()),
            ("first/shared.yaml", shared.as_str()),
            // `apps` loads three files, then fails on the fourth.
            (
                "apps/kustomization.yaml",
                "resources: [shared.yaml, own.yaml, child.yaml, missing.yaml]\n",
            ),
            ("apps/shared.yaml", shared.as_str()),
            ("apps/own.yaml", own.as_str()),
            ("apps/child.yaml", child.as_str()),
            ("child/cm.yaml", cm("c").leak()),
        ]);
        let inv = build(&tree, "dev", "clusters/dev");
        let objects: Vec<String> = inv.objects.keys().map(ToString::to_string).collect();
        assert_eq!(objects, ["ConfigMap/app/shared"]);
        assert_eq!(
            inv.objects.values().next().map(|e| e.owner.name.as_str()),
            Some("first")
        );
        assert!(inv.duplicates.is_empty());
        let owners: Vec<(&str, bool)> = inv
            .owners
            .values()
            .map(|o| (o.id.name.as_str(), o.built))
            .collect();
        assert_eq!(
            owners,
            [("apps", false), ("first", true), ("flux-system", true)]
        );
        let features: Vec<&str> = inv.warnings.iter().map(|w| w.feature.as_str()).collect();
        assert_eq!(features, ["build failure"]);
    }

    #[test]
    fn environments_without_config_are_the_cluster_folders() {
        let tree = FileTree::from_files([
            ("clusters/base/kustomization.yaml", ""),
            ("clusters/prod/kustomization.yaml", ""),
            ("clusters/staging/flux-system/gotk-sync.yaml", ""),
            ("clusters/README.yaml", ""),
        ]);
        let envs = environments(&tree).unwrap();
        assert_eq!(
            envs,
            [
                ("prod".to_string(), "clusters/prod".to_string()),
                ("staging".to_string(), "clusters/staging".to_string())
            ]
        );
    }
}
