//! Carrying a change set out (`execute`), in the order that makes a run killed at any moment
//! recoverable by running `apply` again, through folders opened without following a link,
//! and never over a file that changed since the plan read it.

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::{Error, Result, SourceError};
use crate::fs::write::{self, Dir, Dirs, Expect};
use crate::plan::changes::{Change, Op};
use crate::repo::Repo;

/// Carries a change set out. The order is what makes an interrupted run (SIGKILL, power
/// loss, a full disk) recoverable by running `apply` again:
///
/// 0. Checks, before anything is changed: no two changes touch the same file (an internal
///    error otherwise); every folder the set touches is opened one component at a time
///    below the root, and a symbolic link at any of them stops the run; every file the set
///    replaces or removes still holds the bytes the plan read (none where it creates one);
///    every folder takes a new entry and no file it moves, rewrites or removes is immutable
///    or append-only (a read-only tree fails here, whole).
/// 1. Moves, each one `rename(2)` inside the open folders: atomic, so a manifest is at its
///    old place or its new one, never both, never neither, never truncated. Interrupted
///    here, the next run's plan sees the files already moved as placed and moves the rest.
/// 2. Writes, each a temporary file, fsync, a last comparison with what the plan read, and
///    rename: a file is old or new, and an edit saved meanwhile is kept (the run stops and
///    says so). Wave kustomizations are written after the moves, so a wave folder never
///    lists a file that is not in it yet; a temporary left by a kill is found by `compute`
///    (drift `interrupted-write`) and removed by the next run. The base and environment
///    kustomizations are re-derived from what is on disk, so a half-edited set converges.
/// 3. Removals last (the flat kustomization, the retired Kustomization, stale waves), each
///    after the same comparison: a kill before them leaves files the next run still finds
///    and removes (`compute` finds the retired Kustomization by what it points at, even
///    after its entry is gone).
/// 4. One fsync per touched folder makes the moves, writes and removals durable.
///
/// Flux reads commits, not the working tree, so no intermediate state reaches a cluster. A
/// rerun computes the change set from the tree as it is, so whichever step was cut short
/// is finished and nothing is done twice (tests/cli/crash.rs kills `apply` at random
/// moments). Two runs never interleave: `cli::apply` holds the repository's lock
/// (`fs::lock`) from before the plan is read until the last sync.
pub fn execute(repo: &Repo, changes: &[Change]) -> Result<()> {
    distinct(changes)?;
    let mut dirs = Dirs::new(&repo.root)?;
    // Every folder the set uses that exists, opened: a link at any component stops here.
    let mut folders: Vec<&str> = changes
        .iter()
        .flat_map(|c| match &c.op {
            Op::RemoveDir { path } => vec![parent(path)],
            op => op_paths(op).into_iter().map(parent).collect(),
        })
        .collect();
    folders.sort_unstable();
    folders.dedup();
    for rel in folders {
        dirs.get(rel, false)?;
    }
    let wants = expectations(repo, changes, &mut dirs)?;
    for (c, want) in changes.iter().zip(&wants) {
        if let Op::Write { path, .. } | Op::Remove { path } = &c.op {
            if let Some(dir) = dirs.get(parent(path), false)? {
                dir.verify(name(path), want.expect())?;
            } else if !matches!(want, Want::Absent) {
                return Err(write::changed_under(path, "was removed"));
            }
        }
    }
    probe(repo, changes)?;
    carry_out(repo, changes, &wants, &mut dirs).map_err(|e| part_way(repo, e))
}

/// Steps 1 to 4 of `execute`.
fn carry_out(repo: &Repo, changes: &[Change], wants: &[Want], dirs: &mut Dirs) -> Result<()> {
    let folder = |dirs: &mut Dirs, rel: &str, make: bool| -> Result<Arc<Dir>> {
        dirs.get(rel, make)?
            .ok_or_else(|| write::changed_under(rel, "was removed"))
    };
    for c in changes {
        if let Op::Move { from, to } = &c.op {
            let (src, dst) = (
                folder(dirs, parent(from), false)?,
                folder(dirs, parent(to), true)?,
            );
            src.move_to(name(from), &dst, name(to))?;
            dirs.touch(parent(from));
            dirs.touch(parent(to));
        }
    }
    test_pause();
    // The writes (each a temporary file, fsync and rename: waiting on the disk, not the CPU)
    // run side by side, after every move and before any removal; a batch at a time, each
    // write holding its folder open.
    let all: Vec<(&str, &str, Expect)> = changes
        .iter()
        .zip(wants)
        .filter_map(|(c, want)| match &c.op {
            Op::Write { path, new, .. } => Some((path.as_str(), new.as_str(), want.expect())),
            _ => None,
        })
        .collect();
    for batch in all.chunks(write::WRITES_AT_ONCE) {
        let mut writes: Vec<(Arc<Dir>, &str, &str, Expect)> = Vec::with_capacity(batch.len());
        for &(path, new, expect) in batch {
            writes.push((folder(dirs, parent(path), true)?, name(path), new, expect));
            dirs.touch(parent(path));
        }
        write::replace_all_in(&writes)?;
    }
    for (c, want) in changes.iter().zip(wants) {
        if let Op::Remove { path } = &c.op {
            if let Some(dir) = dirs.get(parent(path), false)? {
                dir.remove(name(path), want.expect())?;
                dirs.touch(parent(path));
            }
        }
    }
    for c in changes {
        if let Op::RemoveDir { path } = &c.op {
            if let Some(dir) = dirs.get(parent(path), false)? {
                dir.remove_empty_dir(name(path));
                dirs.touch(parent(path));
            }
        }
    }
    let _ = repo;
    dirs.sync()
}

/// What a file the set replaces or removes must hold when it does.
enum Want<'a> {
    Absent,
    Bytes(Arc<Vec<u8>>),
    Text(&'a str),
    Any,
}

impl Want<'_> {
    fn expect(&self) -> Expect<'_> {
        match self {
            Want::Absent => Expect::Absent,
            Want::Bytes(b) => Expect::Bytes(b),
            Want::Text(t) => Expect::Bytes(t.as_bytes()),
            Want::Any => Expect::Any,
        }
    }
}

/// Per change: the bytes the plan read of the file it replaces or removes (as read, before
/// decoding), nothing for a file it creates; a file the plan did not read is taken as it is
/// now, so that an edit made from here on is still found.
fn expectations<'a>(repo: &Repo, changes: &'a [Change], dirs: &mut Dirs) -> Result<Vec<Want<'a>>> {
    let mut wants = Vec::with_capacity(changes.len());
    for c in changes {
        let want = match &c.op {
            Op::Write { old: None, .. } => Want::Absent,
            Op::Write {
                path,
                old: Some(old),
                ..
            } => match repo.reads.cached(&repo.path(path)) {
                Some(Some(bytes)) => Want::Bytes(bytes),
                _ => Want::Text(old),
            },
            Op::Remove { path } => match repo.reads.cached(&repo.path(path)) {
                Some(Some(bytes)) => Want::Bytes(bytes),
                _ => match dirs.get(parent(path), false)? {
                    Some(dir) => match dir.read(name(path)) {
                        Ok(Some(bytes)) => Want::Bytes(Arc::new(bytes)),
                        Ok(None) => Want::Any,
                        Err(e) => return Err(Error::io(&repo.path(path), e)),
                    },
                    None => Want::Any,
                },
            },
            Op::Move { .. } | Op::RemoveDir { .. } => Want::Any,
        };
        wants.push(want);
    }
    Ok(wants)
}

/// Fails, changing nothing, unless every folder the set touches takes a new entry and every
/// file it moves, rewrites or removes can be (`write::probe_writable`).
fn probe(repo: &Repo, changes: &[Change]) -> Result<()> {
    let mut folders: Vec<&str> = Vec::new();
    let mut files: Vec<std::path::PathBuf> = Vec::new();
    for c in changes {
        match &c.op {
            Op::Move { from, to } => {
                files.push(repo.path(from));
                folders.extend([parent(from), parent(to)]);
            }
            Op::Write { path, .. } | Op::Remove { path } => {
                files.push(repo.path(path));
                folders.push(parent(path));
            }
            Op::RemoveDir { path } => folders.push(parent(path)),
        }
    }
    folders.sort_unstable();
    folders.dedup();
    let abs: Vec<std::path::PathBuf> = folders
        .into_iter()
        .map(|d| {
            if d.is_empty() {
                repo.root.clone()
            } else {
                repo.path(d)
            }
        })
        .collect();
    write::probe_writable(
        abs.iter().map(|p| p.as_path()),
        files.iter().map(|p| p.as_path()),
    )
}

/// The files an operation reads or writes (a folder removal has none).
fn op_paths(op: &Op) -> Vec<&str> {
    match op {
        Op::Move { from, to } => vec![from, to],
        Op::Write { path, .. } | Op::Remove { path } => vec![path],
        Op::RemoveDir { .. } => vec![],
    }
}

/// Fails unless every file of the set is touched by one change only: two changes writing
/// one file would lose one of the two edits. Configurations that could lead there are
/// refused where they are written (`config`); this is the last guard, before anything is
/// written.
pub fn distinct(changes: &[Change]) -> Result<()> {
    let mut seen: HashMap<&str, usize> = HashMap::with_capacity(changes.len() * 2);
    for (i, c) in changes.iter().enumerate() {
        for path in op_paths(&c.op) {
            if let Some(first) = seen.insert(path, i) {
                if first != i {
                    return Err(Error::Usage(format!(
                        "internal error: two changes of one plan touch {path} ({} and {}); nothing was written. Please report this with the repository's layout",
                        describe(&changes[first].op),
                        describe(&c.op)
                    )));
                }
            }
        }
    }
    Ok(())
}

fn describe(op: &Op) -> String {
    match op {
        Op::Move { from, to } => format!("move {from} -> {to}"),
        Op::Write { path, .. } => format!("write {path}"),
        Op::Remove { path } => format!("remove {path}"),
        Op::RemoveDir { path } => format!("rmdir {path}"),
    }
}

/// An error after the first change was made, with what the user needs to know: the moves,
/// writes and removals made so far are whole, and a rerun completes the rest (the order of
/// `execute` guarantees both).
fn part_way(repo: &Repo, e: Error) -> Error {
    const DONE: &str = "apply stopped before it finished, and nothing is lost: every file is whole, at its old place or its new one; once the cause is mended, run `fluxwave apply` again to complete it";
    match e {
        Error::Input(errors) => Error::Input(
            errors
                .into_iter()
                .map(|mut err| {
                    let complete = err
                        .help
                        .as_deref()
                        .is_some_and(|h| h.contains("nothing is lost"));
                    if !complete {
                        err.help = Some(match err.help.take() {
                            Some(h) => format!("{h}; {DONE}"),
                            None => DONE.to_string(),
                        });
                    }
                    err
                })
                .collect(),
        ),
        Error::Io { path, source } => {
            let shown = path
                .strip_prefix(&repo.root)
                .map_or_else(|_| path.display().to_string(), |p| p.display().to_string());
            SourceError::new(shown, source.to_string())
                .help(DONE)
                .into()
        }
        Error::Usage(message) => Error::Usage(format!("{message}\n  help: {DONE}")),
        other => other,
    }
}

/// Test-only: with `FLUXWAVE_TEST_PAUSE_APPLY=<folder>` set, `apply` stops between its moves
/// and its writes, creates `<folder>/paused` and waits (up to two minutes) for
/// `<folder>/resume`, so that a test can edit a file or start a second run at that moment,
/// deterministically. Users have no reason to set it (docs/apply.md).
fn test_pause() {
    let Some(dir) = std::env::var_os("FLUXWAVE_TEST_PAUSE_APPLY") else {
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    let _ = std::fs::write(dir.join("paused"), std::process::id().to_string());
    let start = std::time::Instant::now();
    while !dir.join("resume").exists() && start.elapsed() < std::time::Duration::from_secs(120) {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// The folder of a repository-relative path (`""` for the root).
fn parent(rel: &str) -> &str {
    rel.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// The last component of a repository-relative path.
fn name(rel: &str) -> &str {
    rel.rsplit_once('/').map_or(rel, |(_, name)| name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::changes::Drift;

    fn change(op: Op) -> Change {
        Change {
            op,
            drift: Drift::BaseEntries,
            why: String::new(),
        }
    }

    #[test]
    fn two_changes_of_one_file_are_an_error_not_a_lost_edit() {
        let write = |new: &str| Op::Write {
            path: "clusters/dev/kustomization.yaml".into(),
            old: Some("a\n".into()),
            new: new.into(),
        };
        let err = distinct(&[change(write("b\n")), change(write("c\n"))]).unwrap_err();
        assert!(
            err.to_string().starts_with(
                "internal error: two changes of one plan touch clusters/dev/kustomization.yaml"
            ),
            "{err}"
        );
        let moved = Op::Move {
            from: "apps/a.yaml".into(),
            to: "apps/wave-0/a.yaml".into(),
        };
        let removed = Op::Remove {
            path: "apps/wave-0/a.yaml".into(),
        };
        assert!(distinct(&[change(moved.clone()), change(removed)]).is_err());
        let other = Op::Remove {
            path: "apps/kustomization.yaml".into(),
        };
        assert!(distinct(&[change(moved), change(other)]).is_ok());
    }
}
