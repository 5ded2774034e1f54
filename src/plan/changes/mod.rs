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

use serde_json::Value;

use crate::diag::Code;
use crate::error::{Error, Result, SourceError};
use crate::flux::Kustomization;
use crate::plan::Plan;
use crate::repo::Repo;
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

pub(super) fn require(repo: &Repo, rel: &str, help: &str) -> Result<String> {
    repo.read_optional(rel)?
        .ok_or_else(|| SourceError::new(rel, "not found").help(help).into())
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
    if plan.waves == 0 {
        return Ok(ChangeSet::default());
    }
    let mut set = ChangeSet::default();
    waves::moves(repo, plan, &mut set.changes);
    waves::folders(repo, plan, &mut set.changes)?;
    let base = base::entries(repo, plan, &mut set)?;
    environments::decryption(repo, plan, &base, &mut set.changes)?;
    set.decrypted = (0..plan.waves)
        .chain(base.stale_waves.iter().copied())
        .map(|n| repo.config.wave_name(n))
        .collect();
    leftovers::interrupted_writes(repo, plan, &base.rel, &mut set.changes);
    refuse_links(repo, &set.changes)?;
    Ok(set)
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
/// not carry or would change. (`path` and `dependsOn` are the waves' own; decryption comes from
/// the environments' patches; `prune`, `suspend` and `deletionPolicy` on the retired object are
/// how the cutover runbook releases it — `cutover` reasons about those.)
pub(super) fn dropped_settings(
    config: &crate::config::Config,
    rel: &str,
    retired: &Kustomization,
) -> Vec<Warning> {
    let Some(spec) = retired.object.get("spec").and_then(Value::as_object) else {
        return vec![];
    };
    spec.iter()
        .filter(|(k, _)| {
            !matches!(
                k.as_str(),
                "path" | "dependsOn" | "decryption" | "prune" | "suspend" | "deletionPolicy"
            )
        })
        .filter(|(k, v)| config.waves.spec.get(k.as_str()) != Some(v))
        .map(|(k, v)| {
            let now = match config.waves.spec.get(k.as_str()) {
                Some(w) => format!("`{}`", serde_json::to_string(w).unwrap_or_default()),
                None => "nothing".to_string(),
            };
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
