//! git, run for the repository fluxwave was given and no other: the commands that read a
//! revision's listing and blobs, the working tree's listing, what git makes of a folder, and
//! a branch's first-parent history. git runs without a shell, with `-z` and
//! `--end-of-options`, so no name or revision is interpreted, and the variables that would
//! point it elsewhere are cleared.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::process;

/// Whether `root` or a folder above it holds a `.git`: a repository, whatever git says.
pub(super) fn in_a_repository(root: &Path) -> bool {
    let start = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    start
        .ancestors()
        .any(|dir| dir.join(".git").symlink_metadata().is_ok())
}

/// The variables through which an inherited environment would point git at another
/// repository, index, object store or ref namespace than the one fluxwave was given: git's
/// own list of a repository's local variables (`local_repo_env` in git's `environment.c`,
/// printed by `git rev-parse --local-env-vars`), which git itself clears when it moves into
/// a submodule, and `GIT_NAMESPACE`. Configuration (`GIT_CONFIG_*`, where a CI sets
/// `safe.directory`) is kept: it says how to read, not what. `GIT_CEILING_DIRECTORIES` is
/// kept too: it can only keep git from finding a repository, which is then said.
const REDIRECTING_GIT_VARS: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_GRAFT_FILE",
    "GIT_SHALLOW_FILE",
    "GIT_REPLACE_REF_BASE",
    "GIT_PREFIX",
    "GIT_NAMESPACE",
];

/// `git -C root`, for the repository at `root` and no other: whatever the environment says.
pub fn git_command(root: &Path) -> Command {
    let mut c = Command::new("git");
    for var in REDIRECTING_GIT_VARS {
        c.env_remove(var);
    }
    // A revision is read as Flux's clone holds it: source-controller clones the one branch,
    // tag or commit its GitRepository names (fluxcd/pkg `git/gogit`), never `refs/replace/`,
    // and go-git applies no replace refs; a local `git replace` changes nothing Flux applies.
    c.env("GIT_NO_REPLACE_OBJECTS", "1");
    c.arg("-C").arg(root);
    c
}

/// Why git could not be run at all, in words that say what to do.
fn cannot_run(e: &std::io::Error) -> String {
    if e.kind() == std::io::ErrorKind::NotFound {
        "git is not installed (no `git` on PATH); fluxwave reads revisions with git: install it"
            .to_string()
    } else {
        format!("cannot run git: {e}")
    }
}

/// The commits of `A..B` on B's first-parent line, oldest first, with A's commit before them:
/// each consecutive pair is one step the branch took (a merge is one step, as Flux applies
/// it). Both ends must be commits of the repository.
pub fn first_parent_steps(root: &Path, range: &str) -> Result<Vec<String>> {
    require_git(root)?;
    let (a, b) = range
        .split_once("..")
        .filter(|(a, b)| !a.is_empty() && !b.is_empty() && !b.starts_with('.'))
        .ok_or_else(|| {
            Error::Usage(format!(
                "--each {range}: give a range of two revisions, `A..B` (e.g. `origin/main~20..origin/main`)"
            ))
        })?;
    let commit = |rev: &str| -> Result<String> {
        let spec = format!("{rev}^{{commit}}");
        let out = run_git(
            root,
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                "--end-of-options",
                &spec,
            ],
        )
        .map_err(|_| {
            Error::Usage(format!(
                "revision `{rev}` does not exist in {} (try a branch, a tag or a commit id)",
                root.display()
            ))
        })?;
        Ok(String::from_utf8_lossy(&out).trim().to_string())
    };
    let (a, b) = (commit(a)?, commit(b)?);
    let list = run_git(
        root,
        &[
            "rev-list",
            "--first-parent",
            "--reverse",
            "--end-of-options",
            &b,
            &format!("^{a}"),
        ],
    )?;
    let mut steps = vec![a];
    steps.extend(
        String::from_utf8_lossy(&list)
            .lines()
            .filter(|l| !l.is_empty())
            .map(str::to_string),
    );
    Ok(steps)
}

/// The commit `rev` names and its recursive listing (`git ls-tree -r -z`); `None` when the
/// repository has no such commit.
pub(super) fn commit_listing(root: &Path, rev: &str) -> Result<Option<(String, Arc<Vec<u8>>)>> {
    require_git(root)?;
    let spec = format!("{rev}^{{commit}}");
    let mut cmd = git_command(root);
    cmd.args([
        "rev-parse",
        "--verify",
        "--quiet",
        "--end-of-options",
        &spec,
    ]);
    let oid = match process::run(cmd, None, &process::Limits::GIT) {
        Ok(out) => out.stdout,
        Err(process::Error::Failed { .. }) => return Ok(None),
        Err(e) => return Err(Error::git(&["rev-parse"], git_failure(e))),
    };
    let oid = String::from_utf8_lossy(&oid).trim().to_string();
    let listing = run_git(root, &["ls-tree", "-r", "-z", "--end-of-options", &oid])?;
    Ok(Some((oid, Arc::new(listing))))
}

/// The subject line of each commit of `steps` after the first (as `first_parent_steps`
/// gives them), by commit id: one git run for the whole history.
pub fn subjects(root: &Path, steps: &[String]) -> Result<HashMap<String, String>> {
    let (Some(first), Some(last)) = (steps.first(), steps.last()) else {
        return Ok(HashMap::new());
    };
    let out = run_git(
        root,
        &[
            "log",
            "--first-parent",
            "--format=%H%x00%s",
            "--end-of-options",
            last,
            &format!("^{first}"),
        ],
    )?;
    Ok(String::from_utf8_lossy(&out)
        .lines()
        .filter_map(|l| l.split_once('\0'))
        .map(|(id, s)| (id.to_string(), s.trim().to_string()))
        .collect())
}

/// Runs git with `args` for its output (through `process`, so that an interrupt ends it).
pub(super) fn run_git(root: &Path, args: &[&str]) -> Result<Vec<u8>> {
    let mut cmd = git_command(root);
    cmd.args(args);
    match process::run(cmd, None, &process::Limits::GIT) {
        Ok(out) => Ok(out.stdout),
        Err(process::Error::Failed { stderr, .. }) => Err(Error::git(args, stderr.trim())),
        Err(e) => Err(Error::git(args, git_failure(e))),
    }
}

/// Why git gave nothing, when it did not run or was stopped.
pub(super) fn git_failure(e: process::Error) -> String {
    match e {
        process::Error::CannotRun { source, .. } => cannot_run(&source),
        e => e.to_string(),
    }
}

/// What git makes of the folder fluxwave was given.
#[derive(Debug)]
pub enum GitState {
    /// Inside a git working tree.
    WorkTree,
    /// In no git repository (git runs, and finds none).
    NotARepository,
    /// Anything else that keeps fluxwave from reading the repository with git: git is not
    /// installed, refuses a repository owned by someone else, or the folder is a repository's
    /// `.git` folder. Said in full, with what to do.
    Refused(String),
}

/// `git ls-files` of the working tree at `root`: the files git tracks or would track. When
/// git does not list them, what git makes of `root` (`git_state`, asked only then: the usual
/// case, a working tree, costs one git run).
pub(super) fn worktree_listing(root: &Path) -> Result<std::result::Result<Vec<u8>, GitState>> {
    let args = [
        "ls-files",
        "-z",
        "--cached",
        "--others",
        "--exclude-standard",
    ];
    let failed = match run_git(root, &args) {
        Ok(listing) => return Ok(Ok(listing)),
        Err(e) => e,
    };
    match git_state(root) {
        // A working tree git fails to list: its own words.
        GitState::WorkTree => Err(failed),
        state => Ok(Err(state)),
    }
}

/// Asks git what `root` is.
fn git_state(root: &Path) -> GitState {
    let mut cmd = git_command(root);
    cmd.args(["rev-parse", "--is-inside-work-tree"]);
    let stderr = match process::run(cmd, None, &process::Limits::GIT) {
        Ok(out) => {
            return if out.stdout.starts_with(b"true") {
                GitState::WorkTree
            } else {
                GitState::Refused(format!(
                    "{} is inside a git folder, not a working tree: name the repository's root",
                    root.display()
                ))
            };
        }
        Err(process::Error::Failed { stderr, .. }) => stderr,
        Err(e) => return GitState::Refused(git_failure(e)),
    };
    // git's words (setup.c, `ensure_valid_ownership`): "detected dubious ownership in
    // repository at '...'", then its advice, `git config --global --add safe.directory ...`.
    if stderr.contains("dubious ownership") {
        let advice = stderr
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with("git config"))
            .map_or_else(
                || {
                    format!(
                        "git config --global --add safe.directory {}",
                        root.display()
                    )
                },
                str::to_string,
            );
        return GitState::Refused(format!(
            "git refuses to read {}: the repository is owned by another user (git: \"detected dubious ownership\"). If you trust it, mark it safe with `{advice}` and run fluxwave again",
            root.display()
        ));
    }
    if stderr.contains("not a git repository") {
        return GitState::NotARepository;
    }
    GitState::Refused(format!(
        "git cannot read {}: {}",
        root.display(),
        stderr.trim()
    ))
}

/// Fails with a clear message unless `root` is inside a git working tree.
pub fn require_git(root: &Path) -> Result<()> {
    match git_state(root) {
        GitState::WorkTree => Ok(()),
        state => Err(not_a_worktree(root, state)),
    }
}

/// Why `root`, which git says is no working tree (`state`), cannot be read with git.
pub(super) fn not_a_worktree(root: &Path, state: GitState) -> Error {
    match state {
        GitState::Refused(why) => Error::Usage(why),
        GitState::WorkTree | GitState::NotARepository => Error::Usage(format!(
            "{} is not inside a git repository: cutover compares two git revisions",
            root.display()
        )),
    }
}

/// The contents of `blobs`, in order, from one `git cat-file --batch`.
pub(super) fn cat_blobs(
    root: &Path,
    blobs: &[String],
    name: &dyn Fn(&str) -> String,
) -> Result<Vec<Vec<u8>>> {
    if blobs.is_empty() {
        return Ok(Vec::new());
    }
    let mut cmd = git_command(root);
    cmd.args(["cat-file", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child =
        process::spawn(cmd).map_err(|e| Error::git(&["cat-file", "--batch"], git_failure(e)))?;
    let stdin = child.stdin();
    let input: String = blobs.iter().map(|b| format!("{b}\n")).collect();
    // Written from another thread: git answers while it reads, and a full pipe would block.
    let writer = std::thread::spawn(move || {
        if let Some(mut stdin) = stdin {
            let _ = stdin.write_all(input.as_bytes());
        }
    });
    let broken = |what: &str| Error::git(&["cat-file", "--batch"], what);
    let stdout = child.stdout().ok_or_else(|| broken("no output"))?;
    let mut reader = BufReader::new(stdout);
    let mut out = Vec::with_capacity(blobs.len());
    for _ in blobs {
        let mut header = String::new();
        reader
            .read_line(&mut header)
            .map_err(|e| broken(&e.to_string()))?;
        let size: usize = header
            .split(' ')
            .nth(2)
            .and_then(|s| s.trim().parse().ok())
            .ok_or_else(|| broken(&format!("unexpected answer `{}`", header.trim())))?;
        if size as u64 > crate::fs::MAX_FILE_BYTES {
            child.kill();
            let oid = header.split(' ').next().unwrap_or("");
            return Err(crate::fs::too_big(&name(oid), size as u64));
        }
        let mut body = vec![0; size + 1];
        reader
            .read_exact(&mut body)
            .map_err(|e| broken(&e.to_string()))?;
        body.truncate(size);
        out.push(body);
    }
    let _ = writer.join();
    let _ = child.wait();
    Ok(out)
}
