//! The Helm side of the HelmRelease tests: the real `helm` (3.22.0) run with its config, cache
//! and data homes in one temporary folder of this test process (never the user's), the fixture
//! charts of `tests/fixtures/helm/charts/`, a chart repository served over HTTP from a folder on
//! 127.0.0.1, and an OCI registry (Debian's `docker-registry`, distribution 2.8) on 127.0.0.1.
//!
//! The tests at the end prove the harness: charts packaged, indexed, served and pulled by exact
//! version and by constraint (each download counted), a chart pushed to the registry and pulled
//! back, and the `store` chart rendering its claim only when it is the chart's own.

// Until the HelmRelease tests use every helper.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsStr;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::common::fixtures;

/// How long one `helm` run may take before it is killed and the test fails (the machine may be
/// busy; a hung download must not hang the test process).
pub const HELM_TIMEOUT: Duration = Duration::from_secs(120);

/// How long [`Registry::start`] waits for the registry to answer `GET /v2/`.
const REGISTRY_READY: Duration = Duration::from_secs(10);

/// The fixture charts: `store` (1.0.0), `store-1.1.0` (chart `store` 1.1.0), `db` (2.0.0) and
/// `web` (0.3.0), each a folder `helm package` takes.
pub fn charts() -> PathBuf {
    fixtures().join("helm/charts")
}

pub fn is_executable(path: &Path) -> bool {
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `name` in a folder of `PATH`, as the shell would find it.
pub fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

/// The `helm` the tests run: `FLUXWAVE_TEST_HELM` when set, else `helm` on the `PATH`, else
/// `$HOME/go/bin/helm` (where `go install` puts it), else helm 3.22.0 installed here with
/// `go install` into Cargo's target folder (Go's module proxy and cache make it one build per
/// machine), as the differential test builds its oracle. Panics with how to install it when
/// that fails too: never a silent skip.
pub fn helm() -> PathBuf {
    static HELM: OnceLock<PathBuf> = OnceLock::new();
    HELM.get_or_init(|| {
        if let Some(p) = std::env::var_os("FLUXWAVE_TEST_HELM").filter(|p| !p.is_empty()) {
            let p = PathBuf::from(p);
            assert!(
                is_executable(&p),
                "FLUXWAVE_TEST_HELM={} is not an executable file",
                p.display()
            );
            return p;
        }
        if let Some(p) = on_path("helm") {
            return p;
        }
        if let Some(home) = std::env::var_os("HOME") {
            let p = Path::new(&home).join("go/bin/helm");
            if is_executable(&p) {
                return p;
            }
        }
        let bin = Path::new(env!("CARGO_TARGET_TMPDIR")).join("helm-3.22.0");
        let built = bin.join("helm");
        if is_executable(&built) {
            return built;
        }
        let how = "the Helm tests need helm 3.22.0: install it with \
             `go install helm.sh/helm/v3/cmd/helm@v3.22.0` (it lands in $(go env GOPATH)/bin), \
             or run .ci/run, or point FLUXWAVE_TEST_HELM at a helm binary";
        let out = Command::new("go")
            .args(["install", "helm.sh/helm/v3/cmd/helm@v3.22.0"])
            .env("GOBIN", &bin)
            .output()
            .unwrap_or_else(|e| panic!("{how}\n(`go install` did not start: {e})"));
        assert!(
            out.status.success() && is_executable(&built),
            "{how}\n`go install` failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        built
    })
    .clone()
}

/// The one temporary folder of this test process holding helm's homes, under Cargo's
/// `target/tmp` (a static is never dropped, so it stays there rather than in `/tmp`).
fn home() -> &'static Path {
    static HOME: OnceLock<tempfile::TempDir> = OnceLock::new();
    HOME.get_or_init(|| {
        let parent = Path::new(env!("CARGO_TARGET_TMPDIR"));
        std::fs::create_dir_all(parent).unwrap();
        tempfile::Builder::new()
            .prefix("helm-home-")
            .tempdir_in(parent)
            .unwrap()
    })
    .path()
}

/// The environment that keeps helm out of the user's files, to set on every process that runs
/// helm (the fluxwave binary too): `HELM_CONFIG_HOME`, `HELM_CACHE_HOME`, `HELM_DATA_HOME` and
/// `HELM_REGISTRY_CONFIG`, and the paths helm would otherwise take from a user's environment
/// (`HELM_REPOSITORY_CONFIG`, `HELM_REPOSITORY_CACHE`, `HELM_PLUGINS`, and `KUBECONFIG`, whose
/// current context would otherwise choose the release namespace), all inside one temporary
/// folder shared by the whole test process. The kubeconfig named does not exist.
pub fn helm_homes() -> Vec<(String, PathBuf)> {
    let h = home();
    [
        ("HELM_CONFIG_HOME", "config"),
        ("HELM_CACHE_HOME", "cache"),
        ("HELM_DATA_HOME", "data"),
        ("HELM_REGISTRY_CONFIG", "config/registry/config.json"),
        ("HELM_REPOSITORY_CONFIG", "config/repositories.yaml"),
        ("HELM_REPOSITORY_CACHE", "cache/repository"),
        ("HELM_PLUGINS", "data/plugins"),
        ("KUBECONFIG", "kubeconfig"),
    ]
    .into_iter()
    .map(|(var, rel)| (var.to_string(), h.join(rel)))
    .collect()
}

/// Sets [`helm_homes`] on `cmd` and removes the variables that would change what helm renders
/// (`HELM_NAMESPACE`, `HELM_KUBECONTEXT`).
pub fn isolate(cmd: &mut Command) -> &mut Command {
    for (var, path) in helm_homes() {
        cmd.env(var, path);
    }
    cmd.env_remove("HELM_NAMESPACE")
        .env_remove("HELM_KUBECONTEXT")
}

/// A `Command` for [`helm`] with its homes in the test process's temporary folder.
pub fn helm_cmd() -> Command {
    let mut cmd = Command::new(helm());
    isolate(&mut cmd);
    cmd
}

/// Runs `cmd` to its end with stdin closed and its output captured; kills it and panics when it
/// takes longer than `limit`.
pub fn output_within(cmd: &mut Command, limit: Duration) -> Output {
    let what = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let drain = |mut pipe: Box<dyn Read + Send>| {
        thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish within {limit:?}");
        }
        thread::sleep(Duration::from_millis(10));
    };
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// Runs `cmd` within [`HELM_TIMEOUT`]; its stdout, or a panic with its stderr when it fails.
fn checked(cmd: &mut Command) -> String {
    let out = output_within(cmd, HELM_TIMEOUT);
    assert!(
        out.status.success(),
        "{cmd:?}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `helm ARGS...` with the temporary homes; its stdout, or a panic with its stderr.
pub fn run_helm<S: AsRef<OsStr>>(args: &[S]) -> String {
    checked(helm_cmd().args(args))
}

/// `helm template ARGS...` with the temporary homes; the rendered manifests, or a panic with
/// helm's stderr.
pub fn template(args: &[&str]) -> String {
    checked(helm_cmd().arg("template").args(args))
}

/// `helm package CHART_DIR --destination OUT_DIR`: the path of the `.tgz` made.
pub fn package(chart_dir: &Path, out_dir: &Path) -> PathBuf {
    let out = checked(
        helm_cmd()
            .arg("package")
            .arg(chart_dir)
            .arg("--destination")
            .arg(out_dir),
    );
    let tgz = out
        .trim()
        .split_once("saved it to: ")
        .map(|(_, p)| PathBuf::from(p))
        .unwrap_or_else(|| panic!("helm package {}: no path in {out:?}", chart_dir.display()));
    assert!(tgz.is_file(), "helm package made no {}", tgz.display());
    tgz
}

/// `helm repo index DIR --url URL`: `DIR/index.yaml` listing every chart archive of `DIR`, each
/// downloaded from `URL/<name>-<version>.tgz`.
pub fn index(dir: &Path, url: &str) {
    checked(
        helm_cmd()
            .args(["repo", "index"])
            .arg(dir)
            .args(["--url", url]),
    );
}

/// `helm push TGZ OCI --plain-http`. `oci` is a repository reference such as
/// `oci://127.0.0.1:5000/charts` ([`Registry::charts`]); `oci://` is added when it is missing.
pub fn push(tgz: &Path, oci: &str) {
    let oci = if oci.starts_with("oci://") {
        oci.to_string()
    } else {
        format!("oci://{oci}")
    };
    checked(helm_cmd().arg("push").arg(tgz).arg(oci).arg("--plain-http"));
}

/// The documents of a multi-document YAML stream such as `helm template`'s output, comment-only
/// and empty documents left out.
pub fn documents(rendered: &str) -> Vec<serde_json::Value> {
    let mut docs = Vec::new();
    let mut doc = String::new();
    for line in rendered.lines().chain(["---"]) {
        if line.trim_end() == "---" {
            if doc
                .lines()
                .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            {
                docs.push(serde_saphyr::from_str(&doc).unwrap_or_else(|e| panic!("{e}:\n{doc}")));
            }
            doc.clear();
        } else {
            doc.push_str(line);
            doc.push('\n');
        }
    }
    docs
}

/// The `Kind/name` of every object of `rendered` (see [`documents`]), sorted.
pub fn ids(rendered: &str) -> Vec<String> {
    let mut ids: Vec<String> = documents(rendered)
        .iter()
        .map(|d| {
            format!(
                "{}/{}",
                d["kind"].as_str().unwrap_or(""),
                d["metadata"]["name"].as_str().unwrap_or("")
            )
        })
        .collect();
    ids.sort();
    ids
}

/// One HTTP/1.1 exchange with `addr`: `request` written as it is, the whole response read until
/// the server closes. `None` when the connection fails or times out.
fn exchange(addr: SocketAddr, request: &str) -> Option<Vec<u8>> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    stream
        .set_write_timeout(Some(Duration::from_secs(5)))
        .ok()?;
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).ok()?;
    Some(response)
}

/// The status code of `GET PATH` on `addr`, `None` when nothing answers.
fn get_status(addr: SocketAddr, path: &str) -> Option<u16> {
    let response = exchange(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"),
    )?;
    std::str::from_utf8(response.get(..12)?)
        .ok()?
        .strip_prefix("HTTP/1.1 ")?
        .parse()
        .ok()
}

/// A folder served over HTTP/1.1 on 127.0.0.1 from a background thread, a Helm chart
/// repository when the folder holds an `index.yaml`: `GET` and `HEAD` of a file answer 200 with
/// its bytes, anything else 404 (a path with `..` 403, a method but those two 405), one request
/// per connection. Every request is counted by its path, and every connection (one that sends
/// no HTTP request, a TLS handshake say, too). Dropping it stops the thread.
pub struct ChartServer {
    addr: SocketAddr,
    hits: Arc<Mutex<HashMap<String, usize>>>,
    connections: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl ChartServer {
    /// Serves `dir` (read on every request, so files written afterwards are served too) on a
    /// free port.
    pub fn serve(dir: &Path) -> ChartServer {
        let root = dir
            .canonicalize()
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let hits = Arc::new(Mutex::new(HashMap::new()));
        let connections = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (hits, connections, stop) = (
                Arc::clone(&hits),
                Arc::clone(&connections),
                Arc::clone(&stop),
            );
            thread::Builder::new()
                .name("chart-server".into())
                .spawn(move || {
                    for conn in listener.incoming() {
                        if stop.load(Ordering::SeqCst) {
                            break;
                        }
                        let Ok(stream) = conn else {
                            thread::sleep(Duration::from_millis(10));
                            continue;
                        };
                        connections.fetch_add(1, Ordering::SeqCst);
                        let (root, hits) = (root.clone(), Arc::clone(&hits));
                        thread::spawn(move || {
                            let _ = answer(stream, &root, &hits);
                        });
                    }
                })
                .unwrap()
        };
        ChartServer {
            addr,
            hits,
            connections,
            stop,
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// How many requests (of any method, answered or not) named `path`, such as
    /// `/store-1.0.0.tgz`; the query string is not part of the path.
    pub fn hits(&self, path: &str) -> usize {
        self.hits.lock().unwrap().get(path).copied().unwrap_or(0)
    }

    /// How many connections were accepted so far, whether or not they sent a request.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// Every path requested so far with its count, for assertion messages.
    pub fn requests(&self) -> BTreeMap<String, usize> {
        self.hits
            .lock()
            .unwrap()
            .iter()
            .map(|(p, n)| (p.clone(), *n))
            .collect()
    }
}

impl Drop for ChartServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // One connection wakes the accepting thread, which then sees `stop`; when even that
        // fails the thread is left to end with the process rather than joined.
        if TcpStream::connect_timeout(&self.addr, Duration::from_secs(1)).is_ok() {
            if let Some(thread) = self.thread.take() {
                let _ = thread.join();
            }
        }
    }
}

/// Reads one request from `stream` and answers it.
fn answer(
    mut stream: TcpStream,
    root: &Path,
    hits: &Mutex<HashMap<String, usize>>,
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.set_write_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(&stream);
    let mut request_line = String::new();
    reader.by_ref().take(8192).read_line(&mut request_line)?;
    // The headers are read and ignored: nothing the server answers depends on them.
    for _ in 0..100 {
        let mut header = String::new();
        if reader.by_ref().take(8192).read_line(&mut header)? == 0 || header.trim().is_empty() {
            break;
        }
    }
    drop(reader);
    let mut words = request_line.split_whitespace();
    let (Some(method), Some(target), Some(_version)) = (words.next(), words.next(), words.next())
    else {
        return respond(&mut stream, 400, "text/plain", b"bad request\n", false);
    };
    let path = target.split(['?', '#']).next().unwrap_or("");
    *hits.lock().unwrap().entry(path.to_string()).or_insert(0) += 1;
    let head_only = match method {
        "GET" => false,
        "HEAD" => true,
        _ => {
            return respond(
                &mut stream,
                405,
                "text/plain",
                b"only GET and HEAD\n",
                false,
            )
        }
    };
    match resolve(root, path) {
        Ok(file) => match std::fs::read(&file) {
            Ok(bytes) => respond(&mut stream, 200, content_type(&file), &bytes, head_only),
            Err(_) => respond(&mut stream, 404, "text/plain", b"not found\n", head_only),
        },
        Err(status) => {
            let body: &[u8] = match status {
                400 => b"bad request\n",
                403 => b"forbidden\n",
                _ => b"not found\n",
            };
            respond(&mut stream, status, "text/plain", body, head_only)
        }
    }
}

/// The file under `root` that the request path `path` names, or the status to answer: 400 for
/// a path not starting with `/` or badly escaped, 403 for one with a `..` segment (escaped or
/// not) or leading out of `root` through a link, 404 for one naming no file.
fn resolve(root: &Path, path: &str) -> Result<PathBuf, u16> {
    if !path.starts_with('/') {
        return Err(400);
    }
    let decoded = percent_decode(path).ok_or(400u16)?;
    let mut file = root.to_path_buf();
    for segment in decoded.split('/') {
        match segment {
            "" | "." => {}
            ".." => return Err(403),
            s if s.contains(['\\', '\0']) => return Err(400),
            s => file.push(s),
        }
    }
    let file = file.canonicalize().map_err(|_| 404u16)?;
    if !file.starts_with(root) {
        return Err(403);
    }
    if !file.is_file() {
        return Err(404);
    }
    Ok(file)
}

/// `%XX` escapes decoded; `None` for a bad escape or bytes that are not UTF-8.
fn percent_decode(path: &str) -> Option<String> {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn content_type(file: &Path) -> &'static str {
    match file.extension().and_then(OsStr::to_str) {
        Some("yaml" | "yml") => "application/x-yaml",
        Some("tgz" | "gz") => "application/gzip",
        Some("json") => "application/json",
        _ => "application/octet-stream",
    }
}

fn respond(
    stream: &mut TcpStream,
    status: u16,
    content_type: &str,
    body: &[u8],
    head_only: bool,
) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        _ => "Method Not Allowed",
    };
    let allow = if status == 405 {
        "Allow: GET, HEAD\r\n"
    } else {
        ""
    };
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{allow}Connection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    if !head_only {
        stream.write_all(body)?;
    }
    stream.flush()?;
    stream.shutdown(Shutdown::Write)
}

/// The `docker-registry` binary: `FLUXWAVE_TEST_REGISTRY` when set, else
/// `/usr/bin/docker-registry`, else `docker-registry` on the `PATH`. Panics with how to install
/// it otherwise.
fn registry_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("FLUXWAVE_TEST_REGISTRY").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        assert!(
            is_executable(&p),
            "FLUXWAVE_TEST_REGISTRY={} is not an executable file",
            p.display()
        );
        return p;
    }
    let debian = Path::new("/usr/bin/docker-registry");
    if is_executable(debian) {
        return debian.to_path_buf();
    }
    on_path("docker-registry").unwrap_or_else(|| {
        panic!(
            "the Helm OCI tests need an OCI registry: `apt-get install docker-registry` \
             (Debian's distribution 2.8), or run .ci/run, or point FLUXWAVE_TEST_REGISTRY at a \
             docker-registry binary"
        )
    })
}

/// A port nobody listens on now (the kernel's choice for port 0). Another process may take it
/// before it is used, which [`Registry::start`] survives by trying again.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// An OCI registry (`docker-registry serve`) on 127.0.0.1 with its storage in a temporary
/// folder, without authentication, deletes enabled, plain HTTP. Dropping it kills the process.
pub struct Registry {
    child: Child,
    host: String,
    // Dropped after the process is killed (fields drop after `Drop::drop`).
    _dir: tempfile::TempDir,
}

impl Registry {
    /// Starts a registry on a free port and waits until `GET /v2/` answers 200.
    pub fn start() -> Registry {
        let bin = registry_bin();
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config.yml");
        let log_path = dir.path().join("registry.log");
        let attempts = 5;
        for attempt in 1..=attempts {
            let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
            std::fs::write(
                &config,
                format!(
                    "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: {addr}\n",
                    dir.path().join("storage").display()
                ),
            )
            .unwrap();
            let log = File::create(&log_path).unwrap();
            let mut child = Command::new(&bin)
                .arg("serve")
                .arg(&config)
                .stdin(Stdio::null())
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .unwrap_or_else(|e| panic!("{}: {e}", bin.display()));
            let deadline = Instant::now() + REGISTRY_READY;
            loop {
                if let Some(status) = child.try_wait().unwrap() {
                    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                    // The port was taken between `free_port` and the registry's bind.
                    if log.contains("address already in use") && attempt < attempts {
                        break;
                    }
                    panic!("{} exited with {status}:\n{log}", bin.display());
                }
                if get_status(addr, "/v2/") == Some(200) {
                    return Registry {
                        child,
                        host: addr.to_string(),
                        _dir: dir,
                    };
                }
                if Instant::now() >= deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                    panic!(
                        "{} did not answer GET http://{addr}/v2/ within {REGISTRY_READY:?}:\n{log}",
                        bin.display()
                    );
                }
                thread::sleep(Duration::from_millis(50));
            }
        }
        unreachable!("the last attempt panics")
    }

    /// `127.0.0.1:PORT`.
    pub fn host(&self) -> String {
        self.host.clone()
    }

    /// `oci://127.0.0.1:PORT/charts`, the repository [`push`] takes and `helm pull` reads
    /// `oci://127.0.0.1:PORT/charts/<name>` from.
    pub fn charts(&self) -> String {
        format!("oci://{}/charts", self.host)
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The one file of `dir`, by name.
fn only_file(dir: &Path) -> String {
    let names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    names[0].clone()
}

#[test]
fn charts_served_from_a_folder_pull_by_exact_version_and_by_constraint_once_each() {
    let repo = tempfile::tempdir().unwrap();
    for chart in ["store", "store-1.1.0", "web"] {
        package(&charts().join(chart), repo.path());
    }
    let server = ChartServer::serve(repo.path());
    let url = server.url();
    index(repo.path(), &url);
    let index_yaml = std::fs::read_to_string(repo.path().join("index.yaml")).unwrap();
    assert!(
        index_yaml.contains(&format!("{url}/store-1.1.0.tgz")),
        "{index_yaml}"
    );

    // `helm pull --repo URL store --version V` into a folder of its own: the file it wrote.
    let pull = |version: &str| {
        let into = tempfile::tempdir().unwrap();
        run_helm(&[
            "pull",
            "--repo",
            &url,
            "store",
            "--version",
            version,
            "-d",
            s(into.path()),
        ]);
        only_file(into.path())
    };
    assert_eq!(pull("1.0.0"), "store-1.0.0.tgz");
    assert_eq!(
        server.hits("/store-1.0.0.tgz"),
        1,
        "{:?}",
        server.requests()
    );

    assert_eq!(pull(">=1.0.0 <2.0.0"), "store-1.1.0.tgz");
    let requests = server.requests();
    assert_eq!(server.hits("/store-1.1.0.tgz"), 1, "{requests:?}");
    assert_eq!(server.hits("/store-1.0.0.tgz"), 1, "{requests:?}");
    assert_eq!(server.hits("/web-0.3.0.tgz"), 0, "{requests:?}");
    assert!(server.hits("/index.yaml") >= 2, "{requests:?}");
}

#[test]
fn the_chart_server_answers_head_and_404_and_never_leaves_its_folder() {
    let root = tempfile::tempdir().unwrap();
    let served = root.path().join("served");
    std::fs::create_dir(&served).unwrap();
    std::fs::write(served.join("index.yaml"), "apiVersion: v1\nentries: {}\n").unwrap();
    std::fs::write(root.path().join("secret.yaml"), "outside\n").unwrap();
    std::os::unix::fs::symlink(root.path().join("secret.yaml"), served.join("link.yaml")).unwrap();
    let server = ChartServer::serve(&served);
    let addr = server.addr;
    let text = |request: &str| {
        String::from_utf8(exchange(addr, request).expect("the server answers")).unwrap()
    };

    let get = text("GET /index.yaml HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(get.starts_with("HTTP/1.1 200 OK\r\n"), "{get}");
    assert!(
        get.contains("\r\nContent-Type: application/x-yaml\r\n"),
        "{get}"
    );
    assert!(get.contains("\r\nContent-Length: 27\r\n"), "{get}");
    assert!(
        get.ends_with("\r\n\r\napiVersion: v1\nentries: {}\n"),
        "{get}"
    );

    let head = text("HEAD /index.yaml HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(head.contains("\r\nContent-Length: 27\r\n"), "{head}");
    assert!(head.ends_with("\r\n\r\n"), "{head}");

    for (request, status) in [
        ("GET /missing.tgz HTTP/1.1\r\n\r\n", "404"),
        ("GET / HTTP/1.1\r\n\r\n", "404"),
        ("GET /../secret.yaml HTTP/1.1\r\n\r\n", "403"),
        ("GET /%2e%2e/secret.yaml HTTP/1.1\r\n\r\n", "403"),
        ("GET /..%2fsecret.yaml HTTP/1.1\r\n\r\n", "403"),
        ("GET /link.yaml HTTP/1.1\r\n\r\n", "403"),
        ("GET /%zz HTTP/1.1\r\n\r\n", "400"),
        (
            "POST /index.yaml HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
            "405",
        ),
        ("nonsense\r\n\r\n", "400"),
    ] {
        let response = text(request);
        assert!(
            response.starts_with(&format!("HTTP/1.1 {status} ")),
            "{request:?}: {response}"
        );
        assert!(!response.contains("outside"), "{request:?}: {response}");
    }
    assert_eq!(server.hits("/index.yaml"), 3, "{:?}", server.requests());
    assert_eq!(server.hits("/../secret.yaml"), 1, "{:?}", server.requests());
}

#[test]
fn a_chart_pushed_to_the_registry_pulls_back_by_version() {
    let registry = Registry::start();
    let packaged = tempfile::tempdir().unwrap();
    let tgz = package(&charts().join("db"), packaged.path());
    assert_eq!(tgz.file_name().unwrap(), "db-2.0.0.tgz");
    push(&tgz, &registry.charts());

    let out = tempfile::tempdir().unwrap();
    run_helm(&[
        "pull",
        &format!("{}/db", registry.charts()),
        "--version",
        "2.0.0",
        "--plain-http",
        "-d",
        s(out.path()),
    ]);
    assert_eq!(only_file(out.path()), "db-2.0.0.tgz");
    assert_eq!(
        std::fs::read(out.path().join("db-2.0.0.tgz")).unwrap(),
        std::fs::read(&tgz).unwrap(),
        "the registry gives back the bytes pushed"
    );
}

#[test]
fn store_renders_its_own_claim_unless_an_existing_claim_is_named() {
    let store = charts().join("store");
    let own = template(&["rel", s(&store)]);
    assert_eq!(
        ids(&own),
        [
            "ConfigMap/rel-store-schema",
            "Deployment/rel-store",
            "PersistentVolumeClaim/rel-store-data",
            "Service/rel-store",
        ],
        "{own}"
    );
    let claim_of = |rendered: &str| {
        let docs = documents(rendered);
        let deployment = docs.iter().find(|d| d["kind"] == "Deployment").unwrap();
        deployment["spec"]["template"]["spec"]["volumes"][0].clone()
    };
    assert_eq!(
        claim_of(&own),
        serde_json::json!({"name": "data", "persistentVolumeClaim": {"claimName": "rel-store-data"}})
    );

    let existing = template(&["rel", s(&store), "--set", "persistence.existingClaim=mine"]);
    let pvcs = documents(&existing)
        .iter()
        .filter(|d| d["kind"] == "PersistentVolumeClaim")
        .count();
    assert_eq!(pvcs, 0, "{existing}");
    assert_eq!(
        claim_of(&existing),
        serde_json::json!({"name": "data", "persistentVolumeClaim": {"claimName": "mine"}})
    );
}

#[test]
fn every_fixture_chart_renders_what_its_tests_rely_on() {
    // store: the hook is a pre-install ConfigMap; `keep` annotates the claim; no persistence
    // mounts an emptyDir; nameOverride renames; the namespace is the release's.
    let store = s(&charts().join("store")).to_string();
    let docs = documents(&template(&["rel", &store, "-n", "shop"]));
    let hook = docs.iter().find(|d| d["kind"] == "ConfigMap").unwrap();
    assert_eq!(
        hook["metadata"]["annotations"]["helm.sh/hook"],
        "pre-install"
    );
    assert!(docs.iter().all(|d| d["metadata"]["namespace"] == "shop"));
    let kept = documents(&template(&[
        "rel",
        &store,
        "--set",
        "persistence.keep=true",
    ]));
    let pvc = kept
        .iter()
        .find(|d| d["kind"] == "PersistentVolumeClaim")
        .unwrap();
    assert_eq!(
        pvc["metadata"]["annotations"]["helm.sh/resource-policy"],
        "keep"
    );
    let off = template(&["rel", &store, "--set", "persistence.enabled=false"]);
    assert!(!off.contains("PersistentVolumeClaim"), "{off}");
    assert!(off.contains("emptyDir: {}"), "{off}");
    assert_eq!(
        ids(&template(&["store", &store, "--set", "nameOverride=vault"])),
        [
            "ConfigMap/store-vault-schema",
            "Deployment/store-vault",
            "PersistentVolumeClaim/store-vault-data",
            "Service/store-vault",
        ]
    );

    // store 1.1.0: the same chart with its claim renamed.
    let bumped = template(&["rel", s(&charts().join("store-1.1.0"))]);
    assert_eq!(
        ids(&bumped),
        [
            "ConfigMap/rel-store-schema",
            "Deployment/rel-store",
            "PersistentVolumeClaim/rel-store-storage",
            "Service/rel-store",
        ],
        "{bumped}"
    );
    assert!(bumped.contains("helm.sh/chart: store-1.1.0"), "{bumped}");

    // db: a StatefulSet with a claim template and a headless Service; the CRD only with
    // --include-crds.
    let db = s(&charts().join("db")).to_string();
    let plain = template(&["rel", &db, "--set", "persistence.size=20Gi"]);
    assert_eq!(
        ids(&plain),
        ["Service/rel-db", "StatefulSet/rel-db"],
        "{plain}"
    );
    let docs = documents(&plain);
    let sts = docs.iter().find(|d| d["kind"] == "StatefulSet").unwrap();
    let claim = &sts["spec"]["volumeClaimTemplates"][0];
    assert_eq!(claim["metadata"]["name"], "data");
    assert_eq!(claim["spec"]["resources"]["requests"]["storage"], "20Gi");
    let svc = docs.iter().find(|d| d["kind"] == "Service").unwrap();
    assert_eq!(svc["spec"]["clusterIP"], "None");
    assert_eq!(
        ids(&template(&["rel", &db, "--include-crds"])),
        [
            "CustomResourceDefinition/backups.db.example.com",
            "Service/rel-db",
            "StatefulSet/rel-db",
        ]
    );

    // web: stateless, and without metadata.namespace.
    let web = template(&["rel", s(&charts().join("web")), "-n", "front"]);
    assert_eq!(
        ids(&web),
        ["Deployment/rel-web", "Service/rel-web"],
        "{web}"
    );
    assert!(!web.contains("namespace:"), "{web}");
}
