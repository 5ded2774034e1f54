//! Every program fluxwave runs (helm, git) is started here and nowhere else, so that none can
//! hold fluxwave forever or outlive it. Each child leads a process group of its own and is
//! registered while it lives; it is killed, with its whole group (what a wrapper script
//! started too), when it prints more than its bound, runs past its deadline, or fluxwave is
//! interrupted. Temporary folders are registered the same way.
//!
//! On SIGINT, SIGTERM or SIGHUP (`guard`), every registered child is killed and reaped and
//! every registered temporary removed, then `main`'s exit is called (128 + the signal): the
//! one way fluxwave ends other than returning from `main`. When fluxwave is killed
//! outright (SIGKILL, which no handler sees), a watcher process it started (fluxwave itself,
//! named `fluxwave-watcher`, in a process group of its own) sees its pipe close and does the
//! same; where it cannot start (no `/proc`), a SIGKILL leaves a running child to finish alone.

use std::collections::BTreeSet;
use std::ffi::{OsStr, OsString};
use std::io::{BufRead, Read, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};

/// The bounds of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most bytes of standard output read (`None`: all of it); more is `TooMuchOutput`.
    pub stdout: Option<u64>,
    /// The most bytes of error output read; more is `TooMuchOutput`.
    pub stderr: u64,
    /// How long the program may run (`None`: as long as it takes); longer is `TimedOut`.
    pub timeout: Option<Duration>,
}

/// The default bound of helm's output: 64 MiB, the bound of a file fluxwave reads
/// (`fs::MAX_FILE_BYTES`). The largest charts in common use render 5 to 10 MB
/// (kube-prometheus-stack with its CRDs).
pub const HELM_OUTPUT_MIB: u64 = 64;

/// The default deadline of one helm run, in seconds: source-controller's default `timeout` for
/// fetching an index or a chart. Rendering even the largest chart takes a few seconds.
pub const HELM_TIMEOUT_SECS: u64 = 60;

/// Error output kept at most: its first lines are all that is shown.
const STDERR_BYTES: u64 = 1024 * 1024;

impl Limits {
    /// A helm run: `timeout_secs` and `output_mib` as `--helm-timeout` and
    /// `--helm-output-limit` set them.
    pub const fn helm(timeout_secs: u64, output_mib: u64) -> Limits {
        Limits {
            stdout: Some(output_mib.saturating_mul(1024 * 1024)),
            stderr: STDERR_BYTES,
            timeout: Some(Duration::from_secs(timeout_secs)),
        }
    }

    /// helm with the default bounds.
    pub const HELM: Limits = Limits::helm(HELM_TIMEOUT_SECS, HELM_OUTPUT_MIB);

    /// A git run. Its output is a listing of the repository being read, or the repository's
    /// files, so as large and as slow as that repository: a byte bound or a deadline would be
    /// an arbitrary limit on the size of a repository (each file is bounded where it is read,
    /// `fs::MAX_FILE_BYTES`). Nothing in a repository's files makes git run anything
    /// (hooks, filters and fsmonitor come from the machine's git configuration).
    pub const GIT: Limits = Limits {
        stdout: None,
        stderr: STDERR_BYTES,
        timeout: None,
    };
}

/// Which output of a program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

impl std::fmt::Display for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Stream::Stdout => "standard output",
            Stream::Stderr => "error output",
        })
    }
}

/// What a successful run printed.
#[derive(Debug)]
pub struct Output {
    pub stdout: Vec<u8>,
    /// Its error output (warnings), as text.
    #[allow(dead_code)] // no caller shows a program's warnings yet
    pub stderr: String,
}

/// Why a run gave no output. `program` is the file name of the program run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot run {program}: {source}")]
    CannotRun {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{program} printed more than {} on its {stream}, and was stopped", size(.limit))]
    TooMuchOutput {
        program: String,
        stream: Stream,
        limit: u64,
    },
    #[error("{program} took longer than {} s, and was stopped", .limit.as_secs_f64())]
    TimedOut { program: String, limit: Duration },
    #[error("{program} failed ({status}){}", lines(.stderr))]
    Failed {
        program: String,
        status: ExitStatus,
        /// Its error output, whole (within its bound).
        stderr: String,
    },
}

impl Error {
    /// What went wrong, for a caller that names the program's task itself: the first lines of
    /// its error output when it failed and said why, else the whole message.
    pub fn brief(&self) -> String {
        match self {
            Error::Failed { stderr, .. } if !first_lines(stderr).is_empty() => first_lines(stderr),
            other => other.to_string(),
        }
    }
}

/// `n` bytes in words: MiB when whole.
fn size(n: &u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if *n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else {
        format!("{n} bytes")
    }
}

/// `: <first lines>` of an error output, or nothing when it is empty.
fn lines(stderr: &str) -> String {
    match first_lines(stderr) {
        l if l.is_empty() => l,
        l => format!(": {l}"),
    }
}

/// A program's error output in at most four lines, joined by `; `.
pub fn first_lines(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .take(4)
        .collect();
    lines.join("; ")
}

fn program_name(cmd: &Command) -> String {
    let program = Path::new(cmd.get_program());
    program
        .file_name()
        .unwrap_or(program.as_os_str())
        .to_string_lossy()
        .into_owned()
}

/// Runs `cmd` (its arguments set) with `input` on its standard input, within `limits`: its
/// standard output, or why there is none. The child is killed with its process group when a
/// bound is passed, and is always reaped before this returns.
pub fn run(mut cmd: Command, input: Option<&[u8]>, limits: &Limits) -> Result<Output, Error> {
    let program = program_name(&cmd);
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = start(cmd, &program)?;
    let pid = child.pid;
    let (tx, rx) = mpsc::channel();
    let stdin = child.child.stdin.take();
    let stdout = child.child.stdout.take();
    let stderr = child.child.stderr.take();
    let started = (|| -> std::io::Result<()> {
        if let (Some(mut pipe), Some(input)) = (stdin, input) {
            let input = input.to_vec();
            // On a thread of its own: the child answers while it reads, and a full pipe would
            // block. A child that exits without reading all of it ends the write (EPIPE).
            std::thread::Builder::new()
                .name("child input".into())
                .spawn(move || {
                    let _ = pipe.write_all(&input);
                })?;
        }
        reader(stdout, Stream::Stdout, limits.stdout, tx.clone())?;
        reader(stderr, Stream::Stderr, Some(limits.stderr), tx.clone())?;
        let tx = tx.clone();
        std::thread::Builder::new()
            .name("child exit".into())
            .spawn(move || {
                let _ = exited(pid);
                let _ = tx.send(Event::Exited);
            })?;
        Ok(())
    })();
    drop(tx);
    if let Err(source) = started {
        child.kill();
        let _ = child.reap();
        return Err(Error::CannotRun { program, source });
    }
    let deadline = limits.timeout.map(|t| Instant::now() + t);
    let (mut out, mut err, mut gone) = (None, None, false);
    let stopped = loop {
        if out.is_some() && err.is_some() && gone {
            break None;
        }
        let event = match deadline {
            Some(at) => match rx.recv_timeout(at.saturating_duration_since(Instant::now())) {
                Ok(event) => event,
                Err(RecvTimeoutError::Timeout) => {
                    break Some(Error::TimedOut {
                        program: program.clone(),
                        limit: limits.timeout.unwrap_or_default(),
                    })
                }
                Err(RecvTimeoutError::Disconnected) => break Some(lost(&program)),
            },
            None => match rx.recv() {
                Ok(event) => event,
                Err(_) => break Some(lost(&program)),
            },
        };
        match event {
            Event::Read(Stream::Stdout, Ok(bytes)) => out = Some(bytes),
            Event::Read(Stream::Stderr, Ok(bytes)) => err = Some(bytes),
            Event::Read(stream, Err(Reading::Over(limit))) => {
                break Some(Error::TooMuchOutput {
                    program: program.clone(),
                    stream,
                    limit,
                })
            }
            Event::Read(_, Err(Reading::Failed(source))) => {
                break Some(Error::CannotRun {
                    program: program.clone(),
                    source,
                })
            }
            Event::Exited => gone = true,
        }
    };
    if let Some(e) = stopped {
        // SIGKILL cannot be refused: reaping waits for an exit that comes at once.
        child.kill();
        let _ = child.reap();
        return Err(e);
    }
    let status = child.reap().map_err(|source| Error::CannotRun {
        program: program.clone(),
        source,
    })?;
    let stderr = String::from_utf8_lossy(&err.unwrap_or_default()).into_owned();
    if !status.success() {
        return Err(Error::Failed {
            program,
            status,
            stderr,
        });
    }
    Ok(Output {
        stdout: out.unwrap_or_default(),
        stderr,
    })
}

fn lost(program: &str) -> Error {
    Error::CannotRun {
        program: program.to_string(),
        source: std::io::Error::other("its output was lost"),
    }
}

enum Reading {
    /// More than this many bytes.
    Over(u64),
    Failed(std::io::Error),
}

enum Event {
    Read(Stream, Result<Vec<u8>, Reading>),
    Exited,
}

/// Reads `pipe` whole on a thread, up to `limit` bytes, and sends what it read.
fn reader(
    pipe: Option<impl Read + Send + 'static>,
    stream: Stream,
    limit: Option<u64>,
    tx: Sender<Event>,
) -> std::io::Result<()> {
    let Some(mut pipe) = pipe else {
        let _ = tx.send(Event::Read(stream, Ok(Vec::new())));
        return Ok(());
    };
    std::thread::Builder::new()
        .name(format!("child {stream}"))
        .spawn(move || {
            let got = read_bounded(&mut pipe, limit);
            let _ = tx.send(Event::Read(stream, got));
        })?;
    Ok(())
}

/// All of `pipe`, or `Over` as soon as it gives more than `limit` bytes. Kept as the chunks
/// read until the end, then joined: a program stopped at its bound has cost the bound, not
/// the twice as much a doubling buffer would have touched.
fn read_bounded(pipe: &mut impl Read, limit: Option<u64>) -> Result<Vec<u8>, Reading> {
    let mut chunks: Vec<Vec<u8>> = Vec::new();
    let mut total: u64 = 0;
    let mut chunk = vec![0; 64 * 1024];
    loop {
        let n = match pipe.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Reading::Failed(e)),
        };
        total += n as u64;
        match limit {
            Some(limit) if total > limit => return Err(Reading::Over(limit)),
            _ => {}
        }
        chunks.push(chunk[..n].to_vec());
    }
    Ok(chunks.concat())
}

/// Waits until process `pid`, a child, has exited, without reaping it: its id stays its own
/// until `Tracked::reap`, so a kill never reaches another process.
fn exited(pid: i32) -> std::io::Result<()> {
    let Some(pid) = Pid::from_raw(pid) else {
        return Ok(());
    };
    loop {
        match rustix::process::waitid(
            WaitId::Pid(pid),
            WaitIdOptions::EXITED | WaitIdOptions::NOWAIT,
        ) {
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
            Ok(_) => return Ok(()),
        }
    }
}

/// A registered child: killed with its process group and reaped when dropped.
pub struct Tracked {
    child: Child,
    pid: i32,
    reaped: bool,
}

/// Starts `cmd` (its standard streams set by the caller) as a registered child in a process
/// group of its own: for a program read as it runs (`git cat-file --batch`).
pub fn spawn(cmd: Command) -> Result<Tracked, Error> {
    let program = program_name(&cmd);
    start(cmd, &program)
}

fn start(mut cmd: Command, program: &str) -> Result<Tracked, Error> {
    // Its own group: killing it kills what it started (a wrapper script's programs) too.
    cmd.process_group(0);
    // Started with the registry held, so that an interrupt never misses a child (the handler
    // holds it from the signal to the exit: nothing starts in between).
    let mut registry = registry();
    let child = cmd.spawn().map_err(|source| Error::CannotRun {
        program: program.to_string(),
        source,
    })?;
    let pid = i32::try_from(child.id()).unwrap_or(0);
    registry.children.insert(pid);
    registry.tell(&format!("+{pid}\n"));
    Ok(Tracked {
        child,
        pid,
        reaped: false,
    })
}

impl Tracked {
    pub fn stdin(&mut self) -> Option<ChildStdin> {
        self.child.stdin.take()
    }

    pub fn stdout(&mut self) -> Option<ChildStdout> {
        self.child.stdout.take()
    }

    /// Kills the child and its process group (it is reaped later, by `wait` or when dropped).
    pub fn kill(&mut self) {
        let registry = registry();
        if !self.reaped && registry.children.contains(&self.pid) {
            kill_group(self.pid);
        }
    }

    /// Waits for the child to end, and reaps it.
    pub fn wait(mut self) -> std::io::Result<ExitStatus> {
        self.reap()
    }

    /// Waits for the child to exit, then forgets and reaps it at once (the registry held, so
    /// that an interrupt never kills an id the child no longer owns).
    fn reap(&mut self) -> std::io::Result<ExitStatus> {
        // (Should it fail, the child is not one to wait for: `wait` says so at once.)
        let _ = exited(self.pid);
        let mut registry = registry();
        registry.children.remove(&self.pid);
        registry.tell(&format!("-{}\n", self.pid));
        self.reaped = true;
        self.child.wait()
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        if !self.reaped {
            self.kill();
            let _ = self.reap();
        }
    }
}

fn kill_group(pid: i32) {
    if let Some(pid) = Pid::from_raw(pid) {
        let _ = rustix::process::kill_process_group(pid, Signal::KILL);
    }
}

/// A temporary folder: removed when dropped, and on an interrupt (or, through the watcher,
/// when fluxwave is killed).
#[derive(Debug)]
pub struct Temporary {
    path: PathBuf,
}

impl Temporary {
    /// Makes the folder `path` (and its parents), registered as temporary.
    pub fn folder(path: &Path) -> std::io::Result<Temporary> {
        let path = std::path::absolute(path)?;
        {
            let mut registry = registry();
            registry.temporaries.insert(path.clone());
            registry.tell(&format!(
                "t{}\n",
                crate::fs::hex(path.as_os_str().as_bytes())
            ));
        }
        // Dropped on failure: what was made is removed again.
        let temporary = Temporary { path };
        std::fs::create_dir_all(&temporary.path)?;
        Ok(temporary)
    }
}

impl std::ops::Deref for Temporary {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for Temporary {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<OsStr> for Temporary {
    fn as_ref(&self) -> &OsStr {
        self.path.as_os_str()
    }
}

impl Drop for Temporary {
    fn drop(&mut self) {
        // Removed before it is forgotten: an interrupt in between removes it twice, which is
        // harmless, where the other order could leave it.
        remove(&self.path);
        let mut registry = registry();
        registry.temporaries.remove(&self.path);
        registry.tell(&format!(
            "u{}\n",
            crate::fs::hex(self.path.as_os_str().as_bytes())
        ));
    }
}

/// Removes a file or a folder, never following a symbolic link (`remove_dir_all` removes a
/// link inside, not what it points to).
fn remove(path: &Path) {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => {
            let _ = std::fs::remove_dir_all(path);
        }
        Ok(_) => {
            let _ = std::fs::remove_file(path);
        }
        Err(_) => {}
    }
}

/// The children and temporaries alive now.
struct Registry {
    /// Process ids of the children (each its process group's id), not yet reaped.
    children: BTreeSet<i32>,
    temporaries: BTreeSet<PathBuf>,
    watcher: Watcher,
}

enum Watcher {
    /// Not wanted (the library's own tests: only the binary starts one).
    Off,
    /// Started with the first child or temporary.
    Wanted,
    /// Its standard input: one line for each child or temporary that comes or goes.
    Running(ChildStdin),
    /// Could not be started, or went away.
    Failed,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    children: BTreeSet::new(),
    temporaries: BTreeSet::new(),
    watcher: Watcher::Off,
});

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|p| p.into_inner())
}

/// The name the watcher runs under (its `argv[0]`).
const WATCHER: &str = "fluxwave-watcher";

impl Registry {
    /// Tells the watcher `line`, starting it first when it is wanted.
    fn tell(&mut self, line: &str) {
        if matches!(self.watcher, Watcher::Wanted) {
            self.watcher = start_watcher();
        }
        if let Watcher::Running(pipe) = &mut self.watcher {
            if pipe.write_all(line.as_bytes()).is_err() {
                self.watcher = Watcher::Failed;
            }
        }
    }
}

fn start_watcher() -> Watcher {
    // This very program (whatever its path, even replaced since it started), in a process
    // group of its own so that a signal to fluxwave's group does not end it first. Its input
    // is the only end of a pipe that fluxwave holds (the ends are close-on-exec: no other
    // child inherits it), so it reads end-of-file exactly when fluxwave is gone.
    let mut cmd = Command::new("/proc/self/exe");
    cmd.arg0(WATCHER)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    match cmd.spawn() {
        Ok(mut child) => match child.stdin.take() {
            Some(pipe) => Watcher::Running(pipe),
            None => Watcher::Failed,
        },
        Err(_) => Watcher::Failed,
    }
}

/// Ends every child and removes every temporary on SIGINT, SIGTERM and SIGHUP, then calls
/// `exit` with the signal's number (`main` exits 128 + it: 130, 143, 129); and has a
/// watcher started with the first child, which does the same when fluxwave is killed
/// outright. For the binary's `main` only.
pub fn guard(exit: fn(i32) -> !) {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    {
        let mut registry = registry();
        if matches!(registry.watcher, Watcher::Off) {
            registry.watcher = Watcher::Wanted;
        }
    }
    let _ = std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            if let Some(signal) = signals.forever().next() {
                let mut registry = registry();
                let children: Vec<i32> = registry.children.iter().copied().collect();
                for pid in &children {
                    kill_group(*pid);
                }
                for pid in &children {
                    // Reaped here (their threads wait for the registry, held until the exit),
                    // so that no child outlives fluxwave even as a zombie.
                    if let Some(p) = Pid::from_raw(*pid) {
                        let _ = rustix::process::waitpid(
                            Some(p),
                            rustix::process::WaitOptions::empty(),
                        );
                    }
                    registry.tell(&format!("-{pid}\n"));
                }
                for path in std::mem::take(&mut registry.temporaries) {
                    remove(&path);
                    registry.tell(&format!(
                        "u{}\n",
                        crate::fs::hex(path.as_os_str().as_bytes())
                    ));
                }
                // With the registry held: nothing starts between this and the exit.
                exit(signal)
            }
        });
}

/// Whether this process is the watcher (`args` its command line).
pub fn is_watcher(args: &[OsString]) -> bool {
    args.first()
        .and_then(|a| Path::new(a).file_name())
        .is_some_and(|n| n == WATCHER)
}

/// The watcher: reads which children and temporaries fluxwave has, one line each (`+pid`,
/// `-pid`, `t<hex path>`, `u<hex path>`), and when its input ends (fluxwave has exited,
/// however), kills the children left with their process groups and removes the temporaries
/// left. A child is forgotten before fluxwave reaps it, so no id it names has been reused.
pub fn watch() {
    let mut children = BTreeSet::new();
    let mut temporaries = BTreeSet::new();
    let stdin = std::io::stdin();
    for line in stdin.lock().split(b'\n') {
        let Ok(line) = line else { break };
        let Some((&kind, rest)) = line.split_first() else {
            continue;
        };
        let pid = || {
            std::str::from_utf8(rest)
                .ok()
                .and_then(|p| p.parse::<i32>().ok())
        };
        match kind {
            b'+' => children.extend(pid()),
            b'-' => {
                if let Some(p) = pid() {
                    children.remove(&p);
                }
            }
            b't' => temporaries.extend(unhex(rest).map(|p| PathBuf::from(OsString::from_vec(p)))),
            b'u' => {
                if let Some(p) = unhex(rest) {
                    temporaries.remove(&PathBuf::from(OsString::from_vec(p)));
                }
            }
            _ => {}
        }
    }
    for pid in children {
        kill_group(pid);
    }
    for path in temporaries {
        remove(&path);
    }
}

fn unhex(text: &[u8]) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    text.chunks(2)
        .map(|pair| {
            let digit = |b: u8| (b as char).to_digit(16);
            Some((digit(pair[0])? * 16 + digit(pair[1])?) as u8)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut cmd = Command::new("/bin/sh");
        cmd.args(["-c", script]);
        cmd
    }

    const ROOMY: Limits = Limits {
        stdout: Some(1 << 20),
        stderr: 1 << 20,
        timeout: Some(Duration::from_secs(60)),
    };

    #[test]
    fn output_and_input_pass_through() {
        let out = run(sh("cat; echo warned >&2"), Some(b"hello\n"), &ROOMY).unwrap();
        assert_eq!(out.stdout, b"hello\n");
        assert_eq!(out.stderr, "warned\n");
    }

    #[test]
    fn input_the_child_does_not_read_is_no_error() {
        let input = vec![b'x'; 1 << 20];
        let out = run(sh("echo done"), Some(&input), &ROOMY).unwrap();
        assert_eq!(out.stdout, b"done\n");
    }

    #[test]
    fn a_failure_gives_its_status_and_first_lines() {
        let e = run(
            sh("printf 'a\\n\\nb\\nc\\nd\\ne\\n' >&2; exit 3"),
            None,
            &ROOMY,
        )
        .unwrap_err();
        let Error::Failed { status, .. } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(status.code(), Some(3));
        assert_eq!(e.brief(), "a; b; c; d");
        assert_eq!(e.to_string(), "sh failed (exit status: 3): a; b; c; d");
    }

    #[test]
    fn output_past_the_bound_stops_the_program() {
        let limits = Limits {
            stdout: Some(1000),
            ..ROOMY
        };
        let e = run(
            sh("while :; do echo yyyyyyyyyyyyyyyyyyyy; done"),
            None,
            &limits,
        )
        .unwrap_err();
        assert!(
            matches!(
                e,
                Error::TooMuchOutput {
                    stream: Stream::Stdout,
                    limit: 1000,
                    ..
                }
            ),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "sh printed more than 1000 bytes on its standard output, and was stopped"
        );
        // Exactly the bound is not past it.
        let out = run(sh("head -c 1000 /dev/zero"), None, &limits).unwrap();
        assert_eq!(out.stdout.len(), 1000);
    }

    #[test]
    fn error_output_past_its_bound_stops_the_program() {
        let limits = Limits {
            stderr: 100,
            ..ROOMY
        };
        let e = run(sh("head -c 5000 /dev/zero >&2; sleep 60"), None, &limits).unwrap_err();
        assert!(
            matches!(
                e,
                Error::TooMuchOutput {
                    stream: Stream::Stderr,
                    ..
                }
            ),
            "{e:?}"
        );
    }

    /// The deadline kills the whole group: the shell and the `sleep` it started, which holds
    /// the output pipe open.
    #[test]
    fn a_program_past_its_deadline_is_killed_with_what_it_started() {
        let dir = tempfile::tempdir().unwrap();
        let pids = dir.path().join("pids");
        let limits = Limits {
            timeout: Some(Duration::from_secs(2)),
            ..ROOMY
        };
        let script = format!("sleep 600 & echo $$ $! > '{}'; wait", pids.display());
        let e = run(sh(&script), None, &limits).unwrap_err();
        assert_eq!(e.to_string(), "sh took longer than 2 s, and was stopped");
        let text = std::fs::read_to_string(&pids).unwrap();
        let (shell, sleep) = text.trim().split_once(' ').unwrap();
        assert!(
            !Path::new(&format!("/proc/{shell}")).exists(),
            "the shell is reaped"
        );
        assert!(
            gone(sleep.parse().unwrap()),
            "sleep {sleep} is still running"
        );
        assert!(!registry().children.contains(&shell.parse().unwrap()));
    }

    /// Whether process `pid` has ended (a zombie waiting for its new parent has).
    fn gone(pid: i32) -> bool {
        for _ in 0..500 {
            match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
                Err(_) => return true,
                Ok(stat)
                    if stat
                        .rsplit(')')
                        .next()
                        .is_some_and(|s| s.trim_start().starts_with('Z')) =>
                {
                    return true
                }
                Ok(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
        false
    }

    #[test]
    fn a_program_that_does_not_exist_cannot_run() {
        let e = run(Command::new("/nonexistent/helm"), None, &ROOMY).unwrap_err();
        assert!(matches!(e, Error::CannotRun { .. }), "{e:?}");
        assert!(e.to_string().starts_with("cannot run helm: "), "{e}");
    }

    #[test]
    fn a_temporary_folder_goes_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tmp/x");
        let t = Temporary::folder(&path).unwrap();
        std::fs::write(t.join("file"), "x").unwrap();
        assert!(registry().temporaries.contains(&t.to_path_buf()));
        drop(t);
        assert!(!path.exists());
        assert!(!registry().temporaries.contains(&path));
    }

    #[test]
    fn hex_paths_read_back() {
        let path = "/a b/ü\n";
        assert_eq!(
            unhex(crate::fs::hex(path.as_bytes()).as_bytes()).unwrap(),
            path.as_bytes()
        );
        assert_eq!(unhex(b"0"), None);
        assert_eq!(unhex(b"zz"), None);
    }
}
