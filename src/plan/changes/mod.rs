//! The change set: what `apply` must do to bring the tree in step with the plan, computed
//! whole (every file read, every edit made and verified in memory) before anything is
//! written. `apply --dry-run` prints it, `apply` carries it out, and `check` reports each
//! change as drift — one computation, so the three can never disagree. Carrying it out
//! (`plan::execute`) is ordered so that a run killed at any moment loses no file and a rerun
//! converges: probe, moves, writes, removals (see `execute`).

mod base;
mod environments;
mod leftovers;
mod waves;

use serde_json::{json, Map, Value};

use crate::diag::Code;
use crate::error::{Error, Result, SourceError};
use crate::flux::decryption::PatchEntry;
use crate::flux::Kustomization;
use crate::kustomize::Builder;
use crate::plan::Plan;
use crate::repo::Repo;
use crate::tree::FileTree;
use crate::yaml::{self, Text};

/// What kind of drift a change repairs (the `check` code it is reported under).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Drift {
    MisplacedFile,
    WaveFolder,
    WaveKustomization,
    BaseEntries,
    Decryption,
    FlatKustomization,
    RetiredKustomization,
    InterruptedWrite,
}

impl Drift {
    pub fn code(self) -> Code {
        match self {
            Drift::MisplacedFile => Code::MisplacedFile,
            Drift::WaveFolder => Code::WaveFolderDrift,
            Drift::WaveKustomization => Code::WaveKustomizationDrift,
            Drift::BaseEntries => Code::BaseEntriesDrift,
            Drift::Decryption => Code::MissingDecryption,
            Drift::FlatKustomization => Code::FlatKustomization,
            Drift::RetiredKustomization => Code::RetiredKustomization,
            Drift::InterruptedWrite => Code::InterruptedWrite,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// A rename; the file's bytes are not touched.
    Move {
        from: String,
        to: String,
    },
    Write {
        path: String,
        old: Option<String>,
        new: String,
    },
    Remove {
        path: String,
    },
    /// Removes a folder when it is left empty.
    RemoveDir {
        path: String,
    },
}

#[derive(Debug, Clone)]
pub struct Change {
    pub op: Op,
    pub drift: Drift,
    /// One line on why, for people.
    pub why: String,
}

/// Something `apply` carries out faithfully but that may not be what the user meant.
#[derive(Debug, Clone)]
pub struct Warning {
    pub code: Code,
    pub path: String,
    pub message: String,
    pub help: String,
}

/// What `apply` would do, and what it would do that deserves a second look.
#[derive(Debug, Clone, Default)]
pub struct ChangeSet {
    pub changes: Vec<Change>,
    pub warnings: Vec<Warning>,
    /// The Flux Kustomizations whose decryption `apply` answers for: every wave, which ends
    /// with `spec.decryption` in every environment once the set is carried out (the edit is
    /// built again to make sure), and every stale wave, which it removes. A wave without
    /// decryption is `missing-decryption` drift, not a lint of its own.
    pub decrypted: std::collections::BTreeSet<String>,
}

pub(super) fn parse_docs(rel: &str, text: &str) -> Result<Vec<Value>> {
    Ok(yaml::parse_all(rel, &Text::new(text.to_string()))?)
}

/// The kustomization of hand-kept folder `dir`, under whichever name kustomize reads it from
/// (`kustomize::KUSTOMIZATION_FILES`): its name and text. None is an error with `help`;
/// more than one is refused, as kustomize refuses it.
pub(super) fn kustomization_in(repo: &Repo, dir: &str, help: &str) -> Result<(String, String)> {
    let mut found = Vec::new();
    for name in crate::kustomize::KUSTOMIZATION_FILES {
        if let Some(text) = repo.read_optional(&format!("{dir}/{name}"))? {
            found.push((name.to_string(), text));
        }
    }
    let names: Vec<String> = found.iter().map(|(n, _)| n.clone()).collect();
    crate::plan::refuse_many_kustomizations(dir, &names)?;
    match found.pop() {
        Some(k) => Ok(k),
        None => Err(
            SourceError::new(format!("{dir}/kustomization.yaml"), "not found")
                .help(help)
                .into(),
        ),
    }
}

pub(super) fn edit_failed(rel: &str, why: impl std::fmt::Display) -> Error {
    SourceError::new(rel, format!("cannot edit this file safely: {why}"))
        .help(
            "make the edit by hand, or simplify the file's layout, then run `fluxwave apply` again",
        )
        .into()
}

/// The change set of a plan with no blocking problems, one drift kind after the other: the
/// app tier's files and folders, the base's Kustomizations and entries, the environments'
/// decryption patches (read from the tree as the earlier changes leave it), and what an
/// interrupted run left.
pub fn compute(repo: &Repo, plan: &Plan) -> Result<ChangeSet> {
    if plan.groups().is_empty() {
        return Ok(ChangeSet::default());
    }
    let mut set = ChangeSet::default();
    waves::moves(repo, plan, &mut set.changes);
    waves::folders(repo, plan, &mut set.changes, &mut set.warnings)?;
    let base = base::entries(repo, plan, &mut set)?;
    environments::decryption(repo, plan, &base, &mut set.changes, &mut set.warnings)?;
    set.decrypted = plan
        .groups()
        .iter()
        .map(|g| g.name.clone())
        .chain(base.stale.iter().cloned())
        .collect();
    leftovers::interrupted_writes(repo, plan, &base.rel, &mut set.changes);
    refuse_links(repo, &set.changes)?;
    Ok(set)
}

/// `tree` as `changes` leave it: each move carries the file's text to its new place, each
/// write and removal is made (folders need nothing: a tree holds files).
pub fn tree_after(mut tree: FileTree, changes: &[Change]) -> FileTree {
    for c in changes {
        tree = match &c.op {
            Op::Move { from, to } => match (tree.read(from), tree.unreadable(from)) {
                (_, Some(why)) => tree.with_unreadable(to, why).without_file(from),
                (Some(text), None) => tree.with_text(to, text).without_file(from),
                (None, None) => tree,
            },
            Op::Write { path, new, .. } => tree.with_file(path, new),
            Op::Remove { path } => tree.without_file(path),
            Op::RemoveDir { .. } => tree,
        };
    }
    tree
}

/// Whether carrying `changes` out moves objects from one Flux Kustomization to another: a
/// file moves to another group's folder, or a generated or retired Kustomization goes. Such
/// a change is an ownership transfer, which `cutover` judges.
pub fn transfers_ownership(changes: &[Change]) -> bool {
    changes.iter().any(|c| {
        matches!(c.op, Op::Move { .. })
            || (matches!(c.op, Op::Remove { .. })
                && matches!(
                    c.drift,
                    Drift::WaveKustomization | Drift::RetiredKustomization
                ))
    })
}

/// Fails when a change would go through a symbolic link: a folder on its path (below the
/// root), or the file it writes or removes. `apply --dry-run` and `check` say so as `apply`
/// does, before anything is written; `plan::execute` checks again as it goes.
fn refuse_links(repo: &Repo, changes: &[Change]) -> Result<()> {
    let mut checked = std::collections::HashSet::new();
    let root = &repo.root;
    for c in changes {
        match &c.op {
            // A move's target is not looked at one by one (100,000 of them): a link in a
            // wave folder is one of the app tier's foreign entries, refused by the plan.
            Op::Move { from, to } => {
                crate::fs::write::refuse_links(root, from, false, &mut checked)?;
                crate::fs::write::refuse_links(root, to, false, &mut checked)?;
            }
            Op::Write { path, .. } | Op::Remove { path } | Op::RemoveDir { path } => {
                crate::fs::write::refuse_links(root, path, true, &mut checked)?;
            }
        }
    }
    Ok(())
}

/// Settings of the retired Kustomization's spec that the waves, made from `waves.spec`, would
/// not carry or would change (see `OWN_SETTINGS` for those that are not dropped).
pub(super) fn dropped_settings(
    config: &crate::config::Config,
    rel: &str,
    retired: &Kustomization,
) -> Vec<Warning> {
    let Some(spec) = retired.object.get("spec").and_then(Value::as_object) else {
        return vec![];
    };
    spec.iter()
        .filter(|(k, _)| !OWN_SETTINGS.contains(&k.as_str()))
        .filter(|(k, v)| config.waves.spec.get(k.as_str()) != Some(v))
        .map(|(k, v)| {
            let now = from_waves_spec(config, k);
            Warning {
                code: Code::RetiredSettingDropped,
                path: rel.to_string(),
                message: format!(
                    "`{}` sets spec.{k}: {}; the waves get {now} from waves.spec",
                    retired.name,
                    serde_json::to_string(v).unwrap_or_default()
                ),
                help: format!("set waves.spec.{k} in fluxwave.yaml to keep it"),
            }
        })
        .collect()
}

/// Patches of Kustomizations that are gone, in kustomization `rel` of folder `dir`: each
/// entry with the name of the Kustomization it patched. `who` names the kustomization in
/// messages (`environment `dev``). `kept` is for entries that stay (they may patch other
/// objects): one that does not apply to the gone Kustomization says nothing.
pub(super) struct Patches<'a> {
    pub rel: &'a str,
    pub dir: &'a str,
    pub who: String,
    pub patches: Vec<(PatchEntry<'a>, &'a str)>,
    pub kept: bool,
}

/// The settings removed patches gave a Kustomization that is gone and that the waves do not
/// carry (`carried(key, value)` says whether they do): each is a warning. What a patch sets
/// is asked of the builder's patch code, applied to the retired Kustomization as the base
/// writes it (`retired`), or to a bare one when it is already gone.
pub(super) fn lost_settings(
    repo: &Repo,
    tree: &FileTree,
    retired: &[Kustomization],
    removed: &Patches,
    carried: &dyn Fn(&str, &Value) -> bool,
) -> Vec<Warning> {
    let config = &repo.config;
    let (rel, who) = (removed.rel, &removed.who);
    let mut builder = Builder::owners_only(tree);
    let mut out = Vec::new();
    for (at, name) in &removed.patches {
        let known = retired.iter().find(|k| k.name == *name);
        if removed.kept && known.is_none() {
            continue;
        }
        let object = known.map(|k| k.object.clone()).unwrap_or_else(|| {
            json!({
                "apiVersion": format!("{}/v1", crate::flux::KUSTOMIZE_GROUP),
                "kind": "Kustomization",
                "metadata": {"name": name, "namespace": config.waves.namespace},
                "spec": {},
            })
        });
        let mut k = Map::new();
        k.insert(at.field.into(), Value::Array(vec![at.entry.clone()]));
        let what = format!("{rel}: {}[{}]", at.field, at.index);
        let help = format!(
            "to keep it, patch the waves in {rel} (target kind Kustomization, name `{}.*`), or set it in waves.spec of fluxwave.yaml",
            config.waves.name_prefix
        );
        let before = object.get("spec").cloned().unwrap_or(Value::Null);
        let patched = builder
            .transform_objects(&what, removed.dir, &k, vec![object])
            .ok()
            .and_then(|o| o.into_iter().next());
        let Some(after) = patched else {
            if removed.kept {
                continue;
            }
            out.push(Warning {
                code: Code::RetiredSettingDropped,
                path: rel.to_string(),
                message: format!(
                    "{who} patches `{name}` ({}[{}]), which goes with it; what it set could not be read",
                    at.field, at.index
                ),
                help,
            });
            continue;
        };
        let after = after.get("spec").cloned().unwrap_or(Value::Null);
        for (key, value) in after.as_object().into_iter().flatten() {
            if before.get(key) == Some(value) || OWN_SETTINGS.contains(&key.as_str()) {
                continue;
            }
            if carried(key, value) {
                continue;
            }
            out.push(Warning {
                code: Code::RetiredSettingDropped,
                path: rel.to_string(),
                message: format!(
                    "{who} patches spec.{key}: {} into `{name}`; the waves get {} from waves.spec",
                    serde_json::to_string(value).unwrap_or_default(),
                    from_waves_spec(config, key)
                ),
                help: help.clone(),
            });
        }
    }
    out
}

/// What `waves.spec` gives the waves for `key`, for messages.
fn from_waves_spec(config: &crate::config::Config, key: &str) -> String {
    match config.waves.spec.get(key) {
        Some(w) => format!("`{}`", serde_json::to_string(w).unwrap_or_default()),
        None => "nothing".to_string(),
    }
}

/// Settings of a retired Kustomization that are not dropped with it: `path` and `dependsOn`
/// are the waves' own, decryption comes from the environments' patches, and `prune`,
/// `suspend` and `deletionPolicy` are how the cutover runbook releases it (`cutover` reasons
/// about those).
const OWN_SETTINGS: [&str; 6] = [
    "path",
    "dependsOn",
    "decryption",
    "prune",
    "suspend",
    "deletionPolicy",
];

/// The names of the regular files in a folder, sorted (none when it does not exist).
pub(super) fn list_files(dir: &std::path::Path) -> Result<Vec<String>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(Error::io(dir, e)),
    };
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        if entry.file_type().is_ok_and(|t| t.is_file()) {
            if let Some(name) = entry.file_name().to_str() {
                files.push(name.to_string());
            }
        }
    }
    files.sort();
    Ok(files)
}

pub(super) fn write_if_changed(
    changes: &mut Vec<Change>,
    old: Option<String>,
    path: String,
    new: String,
    drift: Drift,
    why: String,
) {
    if old.as_deref() != Some(new.as_str()) {
        changes.push(Change {
            op: Op::Write { path, old, new },
            drift,
            why,
        });
    }
}
