//! The change set: what `apply` must do to bring the tree in step with the plan, computed
//! whole (every file read, every edit made and verified in memory) before anything is
//! written. `apply --dry-run` prints it, `apply` carries it out, and `check` reports each
//! change as drift — one computation, so the three can never disagree. Carrying it out
//! (`execute`) is ordered so that a run killed at any moment loses no file and a rerun
//! converges: probe, moves, writes, removals (see `execute`).

use std::collections::{BTreeSet, HashSet};

use serde_json::Value;

use crate::diag::Code;
use crate::error::{Error, Result, SourceError};
use crate::flux::decryption::{self, FluxRef};
use crate::flux::{self, Kustomization};
use crate::fs::write;
use crate::plan::Plan;
use crate::repo::fluxtree::FluxTree;
use crate::repo::{Location, Repo};
use crate::yaml::edit;
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
}

impl Change {
    pub fn path(&self) -> &str {
        match &self.op {
            Op::Move { from, .. } => from,
            Op::Write { path, .. } | Op::Remove { path } | Op::RemoveDir { path } => path,
        }
    }
}

fn parse_docs(rel: &str, text: &str) -> Result<Vec<Value>> {
    Ok(yaml::parse_all(rel, &Text::new(text.to_string()))?)
}

fn require(repo: &Repo, rel: &str, help: &str) -> Result<String> {
    repo.read_optional(rel)?
        .ok_or_else(|| SourceError::new(rel, "not found").help(help).into())
}

fn edit_failed(rel: &str, why: impl std::fmt::Display) -> Error {
    SourceError::new(rel, format!("cannot edit this file safely: {why}"))
        .help(
            "make the edit by hand, or simplify the file's layout, then run `fluxwave apply` again",
        )
        .into()
}

/// The change set of a plan with no blocking problems.
pub fn compute(repo: &Repo, plan: &Plan) -> Result<ChangeSet> {
    let mut changes = Vec::new();
    let mut warnings = Vec::new();
    if plan.waves == 0 {
        return Ok(ChangeSet::default());
    }
    let apps = &repo.apps;
    let config = &repo.config;

    for p in plan.placements.iter().filter(|p| p.moves()) {
        changes.push(Change {
            op: Op::Move {
                from: apps.path_of(&p.file, p.from),
                to: apps.path_of(&p.file, Location::Wave(p.wave)),
            },
            drift: Drift::MisplacedFile,
            why: format!(
                "owned by `{}`, wave {}",
                repo.graph.nodes[p.owner].name, p.wave
            ),
        });
    }

    for n in 0..plan.waves {
        let rel = format!("{}/kustomization.yaml", apps.wave_dir(n));
        let new =
            flux::emit::wave_dir_kustomization_text(n, plan.files_in(n).map(|p| p.file.as_str()));
        write_if_changed(
            &mut changes,
            repo.read_optional(&rel)?,
            rel,
            new,
            Drift::WaveFolder,
            format!("the files of wave {n}"),
        );
    }
    for (n, k) in apps.wave_dirs.iter().filter(|(n, _)| *n >= plan.waves) {
        let dir = apps.wave_dir(*n);
        if let Some(k) = k {
            changes.push(Change {
                op: Op::Remove {
                    path: format!("{dir}/{k}"),
                },
                drift: Drift::WaveFolder,
                why: format!("wave {n} no longer exists"),
            });
        }
        changes.push(Change {
            op: Op::RemoveDir { path: dir },
            drift: Drift::WaveFolder,
            why: format!("wave {n} no longer exists"),
        });
    }
    if let Some(k) = &apps.root_kustomization {
        changes.push(Change {
            op: Op::Remove {
                path: format!("{}/{k}", apps.dir),
            },
            drift: Drift::FlatKustomization,
            why: "nothing points at the flat app tier once it is waved".into(),
        });
    }

    // clusters/base: the wave Kustomizations, the retired single one, the resource entries.
    let base = &config.base;
    let base_rel = format!("{base}/kustomization.yaml");
    let base_text = require(repo, &base_rel, "fluxwave keeps the wave entries of clusters.base's kustomization.yaml; create it, or set clusters.base in fluxwave.yaml")?;
    let base_doc = yaml::parse_value(&base_rel, &Text::new(base_text.clone()))?;
    let entries: Vec<String> = base_doc
        .get("resources")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|v| v.as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default();
    let wave_file = |entry: &str| -> Option<usize> {
        config.wave_of_name(flux::normalize_path(entry).strip_suffix(".yaml")?)
    };
    let listed: BTreeSet<String> = entries.iter().map(|e| flux::normalize_path(e)).collect();
    // The retired Kustomization is found by what it points at, listed or not: a run that was
    // interrupted after the entry was removed still finds and removes the file.
    let base_files = list_files(&repo.path(base))?;
    let mut retired_names: BTreeSet<String> = BTreeSet::new();
    let mut retired_files: BTreeSet<String> = BTreeSet::new();
    for file in base_files
        .iter()
        .filter(|f| wave_file(f).is_none() && f.as_str() != "kustomization.yaml")
    {
        let rel = format!("{base}/{file}");
        let Some(text) = repo.read_optional(&rel)? else {
            continue;
        };
        let docs = match parse_docs(&rel, &text) {
            Ok(docs) => docs,
            Err(e) if listed.contains(file) => return Err(e),
            Err(_) => continue,
        };
        let retired: Vec<Kustomization> = docs
            .iter()
            .filter_map(Kustomization::from_value)
            .filter(|k| k.spec.path == config.apps)
            .collect();
        let Some(first) = retired.first() else {
            continue;
        };
        if docs.len() > 1 {
            return Err(SourceError::new(
                &rel,
                format!(
                    "holds other objects beside the Flux Kustomization `{}` that points at ./{}",
                    first.name, config.apps
                ),
            )
            .help("move the other objects to a file of their own, then run `fluxwave apply` again")
            .into());
        }
        warnings.extend(dropped_settings(config, &rel, first));
        retired_names.insert(first.name.clone());
        retired_files.insert(file.clone());
        changes.push(Change {
            op: Op::Remove { path: rel },
            drift: Drift::RetiredKustomization,
            why: format!(
                "the single `{}` Kustomization is replaced by the waves",
                first.name
            ),
        });
    }
    let managed: Vec<usize> = entries
        .iter()
        .enumerate()
        .filter(|(_, e)| wave_file(e).is_some() || retired_files.contains(&flux::normalize_path(e)))
        .map(|(i, _)| i)
        .collect();
    for n in 0..plan.waves {
        let rel = format!("{base}/{}.yaml", config.wave_name(n));
        let new = flux::emit::wave_kustomization_text(config, n);
        write_if_changed(
            &mut changes,
            repo.read_optional(&rel)?,
            rel,
            new,
            Drift::WaveKustomization,
            format!("Flux Kustomization of wave {n}"),
        );
    }
    let mut stale_waves: Vec<usize> = base_files
        .iter()
        .filter_map(|f| wave_file(f))
        .filter(|&n| n >= plan.waves)
        .collect();
    stale_waves.sort_unstable();
    for n in &stale_waves {
        changes.push(Change {
            op: Op::Remove {
                path: format!("{base}/{}.yaml", config.wave_name(*n)),
            },
            drift: Drift::WaveKustomization,
            why: format!("wave {n} no longer exists"),
        });
    }
    let desired: Vec<String> = (0..plan.waves)
        .map(|n| format!("{}.yaml", config.wave_name(n)))
        .collect();
    let current: Vec<&str> = managed.iter().map(|&i| entries[i].as_str()).collect();
    if current != desired {
        let new = edit::edit_sequence(
            &base_text,
            "resources",
            &managed,
            managed.first().copied(),
            &desired,
        )
        .map_err(|e| edit_failed(&base_rel, e))?;
        changes.push(Change {
            op: Op::Write {
                path: base_rel.clone(),
                old: Some(base_text.clone()),
                new,
            },
            drift: Drift::BaseEntries,
            why: "one entry per wave, the retired entry removed".into(),
        });
    }

    // Every environment: one decryption patch per wave; none for what no longer exists.
    let gone: BTreeSet<String> = retired_names
        .iter()
        .cloned()
        .chain(stale_waves.iter().map(|&n| config.wave_name(n)))
        .collect();
    let wave_names: Vec<String> = (0..plan.waves).map(|n| config.wave_name(n)).collect();
    let template_decrypts = config
        .waves
        .spec
        .get("decryption")
        .is_some_and(Value::is_object);
    for env in &config.environments {
        let rel = format!("{}/kustomization.yaml", env.path);
        let text = require(
            repo,
            &rel,
            "list your environments under clusters.environments in fluxwave.yaml",
        )?;
        let doc = yaml::parse_value(&rel, &Text::new(text.clone()))?;
        let read = |p: &str| crate::repo::read_referenced(&repo.root, &env.path, p);
        let patches = decryption::decryption_patches(&doc, &read)
            .map_err(|e| Error::from(SourceError::new(&rel, e)))?;
        // A patch for a Kustomization the environment no longer builds goes too. Which those
        // are is known from this run (the retired one, stale waves) and, when the walk of the
        // environment saw everything, from what it builds: so a run interrupted after the base
        // lost its retired entry still removes that entry's patch.
        let tree = FluxTree::walk(repo, &env.path);
        let exists_after =
            |n: &str| wave_names.iter().any(|w| w == n) || (tree.has(n) && !gone.contains(n));
        let removed: Vec<&decryption::DecryptionPatch> = patches
            .iter()
            .filter(|p| {
                p.literal_name()
                    .is_some_and(|n| gone.contains(n) || (tree.complete && !exists_after(n)))
            })
            .collect();
        let empty = Default::default();
        let mut items = Vec::new();
        let mut undecrypted = Vec::new();
        for name in &wave_names {
            let obj = FluxRef {
                name,
                namespace: &config.waves.namespace,
                labels: &empty,
                annotations: &empty,
            };
            let covered = template_decrypts
                || patches
                    .iter()
                    .any(|p| p.covers(&obj) && !removed.iter().any(|r| std::ptr::eq(*r, p)));
            if !covered {
                undecrypted.push(format!("`{name}`"));
                items.push(decryption::decryption_patch_item(
                    name,
                    &config.waves.namespace,
                    &config.waves.decryption,
                ));
            }
        }
        let mut new = text.clone();
        for field in ["patches", "patchesStrategicMerge", "patchesJson6902"] {
            let remove: Vec<usize> = removed
                .iter()
                .filter(|p| p.field == field)
                .map(|p| p.index)
                .collect();
            let insert: &[String] = if field == "patches" { &items } else { &[] };
            if remove.is_empty() && insert.is_empty() {
                continue;
            }
            let at = remove.first().copied().or_else(|| {
                patches
                    .iter()
                    .filter(|p| {
                        p.field == "patches"
                            && p.literal_name()
                                .is_some_and(|n| wave_names.iter().any(|w| w == n))
                    })
                    .map(|p| p.index + 1)
                    .max()
            });
            new = edit::edit_sequence(&new, field, &remove, at, insert)
                .map_err(|e| edit_failed(&rel, e))?;
        }
        if new != text {
            let mut why = Vec::new();
            if !undecrypted.is_empty() {
                why.push(format!("no SOPS decryption for {}", undecrypted.join(", ")));
            }
            let mut stale: Vec<String> = removed
                .iter()
                .filter_map(|p| p.literal_name())
                .map(|n| format!("`{n}`"))
                .collect();
            stale.dedup();
            if !stale.is_empty() {
                why.push(format!(
                    "a decryption patch for {}, which no longer exists",
                    stale.join(", ")
                ));
            }
            changes.push(Change {
                op: Op::Write {
                    path: rel,
                    old: Some(text),
                    new,
                },
                drift: Drift::Decryption,
                why: format!("environment `{}`: {}", env.name, why.join("; ")),
            });
        }
    }
    // An interrupted write of any file this run may write leaves a temporary beside it.
    let written: Vec<String> = changes
        .iter()
        .filter_map(|c| match &c.op {
            Op::Write { path, .. } => Some(path.clone()),
            _ => None,
        })
        .chain((0..plan.waves).map(|n| format!("{}/kustomization.yaml", apps.wave_dir(n))))
        .chain((0..plan.waves).map(|n| format!("{base}/{}.yaml", config.wave_name(n))))
        .chain(std::iter::once(base_rel.clone()))
        .chain(
            config
                .environments
                .iter()
                .map(|e| format!("{}/kustomization.yaml", e.path)),
        )
        .collect::<BTreeSet<String>>()
        .into_iter()
        .collect();
    for rel in written {
        for temp in write::leftover_temporaries(&repo.path(&rel)) {
            if let Ok(temp_rel) = temp.strip_prefix(&repo.root) {
                changes.push(Change {
                    op: Op::Remove {
                        path: temp_rel.to_string_lossy().into_owned(),
                    },
                    drift: Drift::InterruptedWrite,
                    why: format!("left by an interrupted write of {rel}"),
                });
            }
        }
    }
    Ok(ChangeSet { changes, warnings })
}

/// Settings of the retired Kustomization's spec that the waves, made from `waves.spec`, would
/// not carry or would change. (`path` and `dependsOn` are the waves' own; decryption comes from
/// the environments' patches; `prune`, `suspend` and `deletionPolicy` on the retired object are
/// how the cutover runbook releases it — `cutover` reasons about those.)
fn dropped_settings(
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
fn list_files(dir: &std::path::Path) -> Result<Vec<String>> {
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

fn write_if_changed(
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

/// Carries a change set out. The order is what makes an interrupted run (SIGKILL, power
/// loss, a full disk) recoverable by running `apply` again:
///
/// 0. Probe: every folder the set touches takes a new entry and no file it moves, rewrites
///    or removes is immutable or append-only, or nothing is done (a read-only tree fails
///    here, whole).
/// 1. Moves, each one `rename(2)`: atomic, so a manifest is at its old place or its new one,
///    never both, never neither, never truncated. Interrupted here, the next run's plan sees
///    the files already moved as placed and moves the rest.
/// 2. Writes, each a temporary file, fsync and rename: a file is old or new. Wave
///    kustomizations are written after the moves, so a wave folder never lists a file that
///    is not in it yet; a temporary left by a kill is found by `compute` (drift
///    `interrupted-write`) and removed by the next run. The base and environment
///    kustomizations are re-derived from what is on disk, so a half-edited set converges.
/// 3. Removals last (the flat kustomization, the retired Kustomization, stale waves): a kill
///    before them leaves files the next run still finds and removes (`compute` finds the
///    retired Kustomization by what it points at, even after its entry is gone).
/// 4. One fsync per touched folder makes the moves, writes and removals durable.
///
/// Flux reads commits, not the working tree, so no intermediate state reaches a cluster. A
/// rerun computes the change set from the tree as it is, so whichever step was cut short
/// is finished and nothing is done twice (tests/cli/crash.rs kills `apply` at random moments).
pub fn execute(repo: &Repo, changes: &[Change]) -> Result<()> {
    // Folders are kept as repository-relative text and made absolute once each: comparing
    // and joining paths per file (161,796 moves at 100,000 services) was a third of `apply`.
    let abs_dir = |dir: &str| -> std::path::PathBuf {
        if dir.is_empty() {
            repo.root.clone()
        } else {
            repo.path(dir)
        }
    };
    let mut dirs: HashSet<&str> = HashSet::new();
    let mut files: Vec<std::path::PathBuf> = Vec::new();
    for c in changes {
        match &c.op {
            Op::Move { from, to } => {
                files.push(repo.path(from));
                dirs.insert(parent(from));
                dirs.insert(parent(to));
            }
            Op::Write { path, .. } | Op::Remove { path } => {
                files.push(repo.path(path));
                dirs.insert(parent(path));
            }
            Op::RemoveDir { path } => {
                dirs.insert(parent(path));
            }
        }
    }
    let dirs: Vec<std::path::PathBuf> = dirs.into_iter().map(abs_dir).collect();
    write::probe_writable(
        dirs.iter().map(|p| p.as_path()),
        files.iter().map(|p| p.as_path()),
    )?;
    let rank = |c: &Change| match c.op {
        Op::Move { .. } => 0,
        Op::Write { .. } => 1,
        Op::Remove { .. } => 2,
        Op::RemoveDir { .. } => 3,
    };
    let mut ordered: Vec<&Change> = changes.iter().collect();
    ordered.sort_by_key(|c| rank(c));
    // The writes (each a temporary file, fsync and rename: waiting on the disk, not the CPU)
    // run side by side, after every move and before any removal.
    let writes: Vec<(std::path::PathBuf, &str)> = ordered
        .iter()
        .filter_map(|c| match &c.op {
            Op::Write { path, new, .. } => Some((repo.path(path), new.as_str())),
            _ => None,
        })
        .collect();
    let mut writes_done = false;
    // Every folder whose entries change is synced once at the end; a folder made here is an
    // entry of its parent.
    let mut touched: HashSet<&str> = HashSet::new();
    let mut made: HashSet<&str> = HashSet::new();
    for c in ordered {
        match &c.op {
            Op::Move { from, to } => {
                ensure_dir(repo, parent(to), &mut made, &mut touched)?;
                write::move_file(&repo.path(from), &repo.path(to))?;
                touched.insert(parent(from));
            }
            Op::Write { .. } if !writes_done => {
                writes_done = true;
                for c in changes {
                    if let Op::Write { path, .. } = &c.op {
                        ensure_dir(repo, parent(path), &mut made, &mut touched)?;
                    }
                }
                write::replace_all(&writes)?;
            }
            Op::Write { .. } => {}
            Op::Remove { path } => {
                write::remove_file(&repo.path(path))?;
                touched.insert(parent(path));
            }
            Op::RemoveDir { path } => {
                write::remove_empty_dir(&repo.path(path))?;
                touched.insert(parent(path));
            }
        }
    }
    let touched: Vec<std::path::PathBuf> = touched.into_iter().map(abs_dir).collect();
    write::sync_dirs(touched.iter().map(|p| p.as_path()).filter(|p| p.exists()))
}

/// Makes `dir` (repository-relative) and its missing parents once, and marks it and the
/// folders that gain an entry for the final sync.
fn ensure_dir<'a>(
    repo: &Repo,
    dir: &'a str,
    made: &mut HashSet<&'a str>,
    touched: &mut HashSet<&'a str>,
) -> Result<()> {
    touched.insert(dir);
    if !made.insert(dir) {
        return Ok(());
    }
    let mut missing = dir;
    while !missing.is_empty() && !repo.path(missing).is_dir() {
        missing = parent(missing);
        touched.insert(missing);
    }
    if missing != dir {
        write::make_dir(&repo.path(dir))?;
    }
    Ok(())
}

/// The folder of a repository-relative path (`""` for the root).
fn parent(rel: &str) -> &str {
    rel.rsplit_once('/').map_or("", |(dir, _)| dir)
}
