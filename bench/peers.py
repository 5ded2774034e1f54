"""The peers bench/run.py times fluxwave against (issue 18): flate, flux-local and `kubectl
kustomize` of each Flux Kustomization, on the generated repositories, the public layouts of
bench/shapes.py and public clones named with --repo-dir.

`setup()` gets every tool into target/bench/bin/ (idempotent: a tool already there is kept)
and says, for each one it could not get, why. `run_shape()` times one repository, every
fluxwave command in turns with its peers; `report()` writes the section of BENCHMARKS.md.
"""
import hashlib
import json
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "target" / "bench"
BIN = WORK / "bin"
FLUXWAVE = ROOT / "target" / "release" / "fluxwave"

FLATE = ("github.com/home-operations/flate/cmd/flate", "v0.6.5")
KUSTOMIZE = ("sigs.k8s.io/kustomize/kustomize/v5", "v5.7.1")
HELM = ("helm.sh/helm/v3/cmd/helm", "v3.22.0")
FLUX_LOCAL = "7.5.0"  # 7.11.0, the newest, needs Python 3.12
# flate v0.6.5 needs Go 1.27; the go command fetches that toolchain itself.
TOOLCHAIN = "go1.27.3"
ENTRY_GUESSES = ["kubernetes/flux/cluster", "clusters/dev", "clusters/production", "clusters/prod",
                 "clusters/main", "clusters/staging"]


# ---------------------------------------------------------------- set-up

def _tail(text, n=3):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return " / ".join(lines[-n:])


def _go_install(module, version, name, log, toolchain=None):
    if (BIN / name).exists():
        return BIN / name, None
    if not shutil.which("go"):
        return None, "no `go` on the PATH"
    env = dict(os.environ, GOBIN=str(BIN))
    if toolchain:
        env["GOTOOLCHAIN"] = toolchain
    log(f"set-up: go install {module}@{version}")
    p = subprocess.run(["go", "install", f"{module}@{version}"], env=env, capture_output=True, text=True)
    if p.returncode != 0 or not (BIN / name).exists():
        return None, f"`go install {module}@{version}` failed: {_tail(p.stderr)}"
    return BIN / name, None


def _flux(src, log):
    """The flux CLI, built from a clone of fluxcd/flux2 at its newest release tag: `go install`
    of github.com/fluxcd/flux2/v2/cmd/flux is refused (its go.mod has replace directives)."""
    if (BIN / "flux").exists():
        return BIN / "flux", None
    if not src:
        return None, ("no flux CLI: `go install` of github.com/fluxcd/flux2/v2/cmd/flux is refused (replace "
                      "directives), and no --flux2-src clone was given to build it from")
    clone = WORK / "src" / "flux2"
    if not (clone / ".git").exists():
        clone.parent.mkdir(parents=True, exist_ok=True)
        p = subprocess.run(["git", "clone", "-q", str(src), str(clone)], capture_output=True, text=True)
        if p.returncode != 0:
            return None, f"git clone of --flux2-src failed: {_tail(p.stderr)}"
    tags = subprocess.run(["git", "-C", str(clone), "tag", "--list", "v2.*"], capture_output=True,
                          text=True).stdout.split()
    releases = sorted((t for t in tags if re.fullmatch(r"v2\.\d+\.\d+", t)),
                      key=lambda t: tuple(map(int, t[1:].split("."))))
    if not releases:
        return None, "the --flux2-src clone has no v2.x.y release tag"
    # The newest version the Go module proxy lists, when the clone has that tag; else the
    # clone's newest release.
    listed = subprocess.run(["go", "list", "-m", "-versions", "github.com/fluxcd/flux2/v2"],
                            capture_output=True, text=True, cwd=WORK).stdout.split()[1:]
    tag = listed[-1] if listed and listed[-1] in releases else releases[-1]
    subprocess.run(["git", "-C", str(clone), "checkout", "-q", tag], check=True)
    # The CLI embeds the install manifests, which `make` bundles from the controllers' release
    # assets (network). `flux build ks`, all flux-local runs, does not read them: one stand-in
    # file lets the embed compile (`flux install` of this build would not work).
    manifests = clone / "cmd" / "flux" / "manifests"
    if not any(manifests.glob("*.yaml")):
        manifests.mkdir(parents=True, exist_ok=True)
        (manifests / "not-bundled.yaml").write_text("# install manifests not bundled in this build\n")
    log(f"set-up: go build flux {tag}")
    env = dict(os.environ, GOTOOLCHAIN=TOOLCHAIN)
    p = subprocess.run(["go", "build", "-ldflags", f"-X main.VERSION={tag[1:]}", "-o", str(BIN / "flux"),
                        "./cmd/flux"], cwd=clone, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        return None, f"go build of flux {tag} failed: {_tail(p.stderr)}"
    return BIN / "flux", None


def _flux_local(log):
    venv = WORK / "flux-local"
    exe = venv / "bin" / "flux-local"
    if exe.exists():
        return exe, None
    log(f"set-up: pip install flux-local=={FLUX_LOCAL}")
    p = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True)
    if p.returncode == 0:
        p = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", f"flux-local=={FLUX_LOCAL}"],
                           capture_output=True, text=True)
    if p.returncode != 0 or not exe.exists():
        return None, f"pip install flux-local=={FLUX_LOCAL} failed: {_tail(p.stderr)}"
    return exe, None


def setup(flux2_src=None, log=print):
    """{tool: path} of every peer tool had, and {tool: why not} of those that could not be."""
    BIN.mkdir(parents=True, exist_ok=True)
    tools, missing = {}, {}
    for name, get in [
        ("flate", lambda: _go_install(*FLATE, "flate", log, TOOLCHAIN)),
        ("kustomize", lambda: _go_install(*KUSTOMIZE, "kustomize", log)),
        ("helm", lambda: _go_install(*HELM, "helm", log)),
        ("flux", lambda: _flux(src=flux2_src, log=log)),
        ("flux-local", lambda: _flux_local(log)),
    ]:
        path, why = get()
        if path:
            tools[name] = path
        else:
            missing[name] = why
    if "flux-local" in tools:
        # flux-local shells out to flux (`flux build ks`), kustomize and helm.
        lacking = [t for t in ("flux", "kustomize", "helm") if t not in tools]
        if lacking:
            missing["flux-local"] = "it shells out to " + ", ".join(f"`{t}`" for t in lacking) + ", not had (above)"
            del tools["flux-local"]
    kubectl = shutil.which("kubectl")
    if kubectl:
        tools["kubectl"] = Path(kubectl)
    else:
        missing["kubectl"] = "no `kubectl` on the PATH"
    return tools, missing


def versions(tools):
    """One line naming the version of every tool had."""
    out = [f"flux-local {FLUX_LOCAL}"] if "flux-local" in tools else []
    for name, args in [("flate", ["--version"]), ("flux", ["version", "--client"]), ("kustomize", ["version"]),
                       ("helm", ["version", "--short"]), ("kubectl", ["version", "--client"])]:
        if name in tools:
            p = subprocess.run([str(tools[name]), *args], capture_output=True, text=True)
            v = (p.stdout or p.stderr).strip().splitlines()
            v = v[0].strip() if v else "?"
            out.append(v if v.startswith(name) else f"{name} {v}")
    return "; ".join(out)


# ---------------------------------------------------------------- timing

def run_full(cmd, cwd=None, env=None, limit=None, stdout=subprocess.DEVNULL):
    """One run of `cmd`: wall time (s), error output, exit code (None: over `limit` seconds, its
    process group killed)."""
    start = time.perf_counter()
    proc = subprocess.Popen([str(c) for c in cmd], cwd=cwd, env=env, stdout=stdout,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        _, err = proc.communicate(timeout=limit)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        code = None
    elapsed = time.perf_counter() - start
    return elapsed, err.decode(errors="replace"), code


def _cpu(before, after):
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def timed(cmd, cwd=None, env=None, limit=None, stdout=subprocess.DEVNULL):
    """(wall s, CPU s, peak MiB, code, err) of one run. CPU (user+sys) is the rusage of the
    waited children, which holds the command and every process it waited for; peak RSS is the
    command's own, from GNU time (the children's ru_maxrss is a maximum over all of them)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wrapped = ["/usr/bin/time", "-f", "%M", *map(str, cmd)]
    elapsed, err, code = run_full(wrapped, cwd=cwd, env=env, limit=limit, stdout=stdout)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = _cpu(before, after)
    lines = err.rstrip("\n").split("\n")
    peak = int(lines[-1]) / 1024 if lines and lines[-1].isdigit() else 0.0
    if lines and lines[-1].isdigit():
        lines = lines[:-1]
    if code is not None and lines and lines[-1].startswith("Command exited with non-zero status"):
        lines = lines[:-1]
    return elapsed, cpu, peak, code, "\n".join(lines)


class Row:
    """The runs of one command (or of a series of commands timed as one: `cmds`)."""

    def __init__(self, name, cmds, ok_codes=(0,), setup=None, cwd=None, env=None, limit=None, verify=None):
        """verify(stdout, stderr) says why a run that exited well did not do the work (None: it did)."""
        self.name, self.cmds, self.ok_codes, self.setup = name, cmds, ok_codes, setup
        self.cwd, self.env, self.limit, self.verify = cwd, env, limit, verify
        self.times, self.cpus, self.peak, self.failed = [], [], 0.0, None

    def run(self):
        if self.failed:
            return
        if self.setup:
            self.setup()
        wall = cpu = 0.0
        for cmd in self.cmds:
            left = None if self.limit is None else max(self.limit - wall, 1.0)
            if self.verify:
                with open(WORK / "stdout.txt", "wb") as out:
                    t, c, m, code, err = timed(cmd, cwd=self.cwd, env=self.env, limit=left, stdout=out)
                why = self.verify((WORK / "stdout.txt").read_text(errors="replace"), err)
                if why and code in self.ok_codes:
                    self.failed = why
                    return
            else:
                t, c, m, code, err = timed(cmd, cwd=self.cwd, env=self.env, limit=left)
            wall, cpu, self.peak = wall + t, cpu + c, max(self.peak, m)
            if code is None:
                self.failed = f"over the limit ({self.limit:.0f} s)"
                return
            if code not in self.ok_codes:
                lines = [l.strip() for l in err.splitlines() if l.strip()]
                # A Python traceback's last line says what failed; otherwise the first line does.
                first = (lines[-1] if "Traceback (most recent call last)" in err else lines[0]) if lines else ""
                marked = [l for l in err.splitlines() if l.lstrip().startswith("✗")]
                many = f"{len(marked)} objects failed, the first: " if len(marked) > 1 else ""
                first = re.sub(r"\s+", " ", first.lstrip("✗ "))
                self.failed = f"exit {code}: {many}{first[:120]}".replace("|", "\\|")
                self.error = err
                return
        self.times.append(wall)
        self.cpus.append(cpu)

    @property
    def ok(self):
        return bool(self.times) and not self.failed

    @property
    def median(self):
        return statistics.median(self.times) if self.times else None

    def cell(self):
        if not self.ok:
            return self.failed or "not run"
        lo, hi = min(self.times), max(self.times)
        return (f"{self.median:.3f} s ({lo:.3f}–{hi:.3f}) / CPU {statistics.median(self.cpus):.2f} s / "
                f"{self.peak:.0f} MiB")


def in_turns(rows, runs):
    """Each row's runs interleaved (A B C A B C ...), so that a ratio between two of them compares
    runs made under the same conditions of the machine."""
    for _ in range(runs):
        for r in rows:
            r.run()
    return rows


# ---------------------------------------------------------------- repositories

def git(repo, *args, **kw):
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=bench", "-c", "user.email=bench@fluxwave.dev",
                           *args], check=True, capture_output=True, text=True, **kw).stdout


def generated_pr(repo, n):
    """A clone of the generated repository with one small PR-like commit on top (one service
    removed from the app tier, one ConfigMap added), so that every diff and cutover compares the
    same small change: the flat→waves commit of the main table moves every file."""
    pr = WORK / f"pr-{n}"
    if not (pr / ".git").exists():
        shutil.rmtree(pr, ignore_errors=True)
        subprocess.run(["git", "clone", "-q", str(repo), str(pr)], check=True)
        kust = pr / "apps" / "kustomization.yaml"
        lines = kust.read_text().splitlines(keepends=True)
        gone = next(l for l in lines if re.fullmatch(r"  - svc-\d+\.yaml\n", l))
        (pr / "apps" / gone.strip()[2:]).unlink()
        lines.remove(gone)
        lines.append("  - pr-change.yaml\n")
        kust.write_text("".join(lines))
        (pr / "apps" / "pr-change.yaml").write_text(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pr-change\n  namespace: default\n"
            "data:\n  reason: a small change, as a pull request makes\n")
        git(pr, "add", "-A")
        git(pr, "commit", "-q", "--no-verify", "-m", "a small change")
    return {"layout": "gen_repo", "scale": n, "path": str(pr), "entry": "clusters/dev", "flux_local_entry": "clusters",
            "name": f"gen_repo {n:,}"}


def shape(layout, scale, log=print):
    """A repository of a public layout from bench/shapes.py (cached), or None and why not."""
    script = ROOT / "bench" / "shapes.py"
    out = WORK / f"shape-{layout}-{scale}"
    meta = WORK / f"shape-{layout}-{scale}.json"
    if not script.exists():
        return None, "bench/shapes.py is not in this checkout"
    # A cached shape is kept while bench/shapes.py makes the same trees.
    digest = hashlib.sha256(script.read_bytes()).hexdigest()
    if (out / ".git").exists() and meta.exists():
        info = json.loads(meta.read_text())
        if info.pop("script", None) == digest:
            return info, None
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, str(script), "--layout", layout, "--scale", str(scale), str(out)]
    if layout == "ks-tree":
        cmd.append("--local-charts")  # HelmReleases whose charts are in the tree: Helm rendering can run offline
    log(f"shape: {' '.join(cmd[1:])}")
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return None, f"bench/shapes.py failed: {_tail(p.stderr)}"
    info = json.loads(p.stdout.strip().splitlines()[-1])
    meta.write_text(json.dumps(dict(info, script=digest)))
    return info, None


def public(spec):
    """A public clone given as DIR or DIR:ENTRY; its entry, when not given, guessed."""
    d, _, entry = spec.partition(":")
    path = Path(d).resolve()
    if not entry:
        entry = next((e for e in ENTRY_GUESSES if (path / e).is_dir()), None)
        if entry is None and (path / "clusters").is_dir():
            entry = next((f"clusters/{c.name}" for c in sorted((path / "clusters").iterdir()) if c.is_dir()), None)
    if entry is None:
        raise SystemExit(f"--repo-dir {spec}: no entry found (kubernetes/flux/cluster or clusters/<x>): give DIR:ENTRY")
    # Every tool runs on a clone of its HEAD sharing its objects, under a plain name: nothing is
    # written to the clone given, and flate refuses a folder name with `+` in it ("illegal name").
    head = git(path, "rev-parse", "HEAD").strip()
    copy = WORK / "public" / re.sub(r"[^A-Za-z0-9._-]", "-", path.name)
    if not (copy / ".git").exists() or git(copy, "rev-parse", "HEAD").strip() != head:
        shutil.rmtree(copy, ignore_errors=True)
        copy.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", "--shared", str(path), str(copy)], check=True)
    return {"layout": "public", "scale": None, "path": str(copy), "entry": entry, "name": path.name}


def base_worktree(repo):
    """A checkout of HEAD~1 under target/bench/base/ (the old side of flate's and flux-local's
    diff): a clone sharing the repository's objects, so that nothing is written to a public
    clone named with --repo-dir (a `git worktree add` would register itself in it)."""
    rev = git(repo, "rev-parse", "HEAD~1").strip()
    wt = WORK / "base" / f"{Path(repo).name}-{rev[:12]}"
    if not wt.exists():
        wt.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", str(repo), str(wt)], check=True)
        git(wt, "checkout", "-q", "--detach", rev)
    return wt


def flux_kustomization_paths(repo, entry):
    """The spec.path of every Flux Kustomization in the tree (a cheap scan of its YAML), those
    that hold a kustomization.yaml, and those that do not (Flux generates one there; kubectl
    kustomize cannot build them), and the number of HelmReleases."""
    paths, releases = set(), 0
    for f in Path(repo).rglob("*.y*ml"):
        if ".git" in f.parts or not f.is_file():
            continue
        try:
            text = f.read_text(errors="replace")
        except OSError:
            continue
        releases += len(re.findall(r"^kind:\s*HelmRelease\s*$", text, re.M))
        if "kustomize.toolkit.fluxcd.io" not in text:
            continue
        for doc in re.split(r"^---\s*$", text, flags=re.M):
            if ("kustomize.toolkit.fluxcd.io" in doc and re.search(r"^kind:\s*Kustomization\s*$", doc, re.M)):
                # spec.path: the first key `path` two spaces in (block style), or in a flow mapping
                m = (re.search(r"^  path:\s*[\"']?([^\"'\s#,}]+)", doc, re.M)
                     or re.search(r"[{,]\s*path:\s*[\"']?([^\"'\s#,}]+)", doc))
                if m and "${" not in m.group(1):
                    paths.add(m.group(1).strip("/").removeprefix("./") or ".")
    have = sorted(p for p in paths if any((Path(repo) / p / k).is_file() for k in
                                          ("kustomization.yaml", "kustomization.yml", "Kustomization")))
    return have, sorted(paths - set(have)), releases


def read_floor(repo, runs):
    """Median time to read every file of the tree once (the floor for any tool), and its MiB."""
    times = []
    files = [p for p in Path(repo).rglob("*") if p.is_file() and ".git" not in p.parts]
    for _ in range(runs):
        start = time.perf_counter()
        total = 0
        for p in files:
            with open(p, "rb") as f:
                total += len(f.read())
        times.append(time.perf_counter() - start)
    return statistics.median(times), total / 2**20, len(files)


# ---------------------------------------------------------------- one repository

def _fresh(folder):
    def setup():
        shutil.rmtree(folder, ignore_errors=True)
    return setup


def run_shape(info, tools, runs, limit, helm_modes=("off", "on"), log=print):
    """Every fluxwave command and its peers on one repository, in turns, with Helm rendering off
    and (where the repository has HelmReleases and helm was had) on: {"info", "floor", "modes":
    {mode: {"load": [Row], "change": [Row]}}, "paths": (built, skipped)}."""
    repo, entry = Path(info["path"]), info["entry"]
    base = base_worktree(repo)
    caches = WORK / "caches" / f"{repo.name}"
    shutil.rmtree(caches, ignore_errors=True)
    *paths, releases = flux_kustomization_paths(repo, entry)
    info.setdefault("helmreleases", releases)
    result = {"info": info, "floor": read_floor(repo, runs), "modes": {}, "paths": paths}
    modes = [m for m in helm_modes if m == "off" or (m == "on" and info.get("helmreleases") and "helm" in tools)]
    flate = tools.get("flate")
    for mode in modes:
        fw = [FLUXWAVE, "--repo", repo, "--color", "never"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("FLUXWAVE_")}
        if mode == "off":
            fw.append("--no-helm")
        else:
            fw += ["--helm", tools["helm"]]
        fw_cache = caches / f"fluxwave-{mode}"
        fwenv = dict(env, FLUXWAVE_CACHE=str(fw_cache))
        any_code = (0, 1)
        load, change = [], []

        def fluxwave(name, args, group, cold=False):
            if mode == "on":
                group.append(Row(f"fluxwave {name}" + (", empty cache" if cold else ", warm cache"), [fw + args],
                                 any_code, setup=_fresh(fw_cache) if cold else None, env=fwenv))
            else:
                group.append(Row(f"fluxwave {name}", [fw + args], any_code, env=fwenv))

        for cold in ([True, False] if mode == "on" else [False]):
            fluxwave("check", ["check"], load, cold)
            fluxwave("build", ["build"], load, cold)
        for cold in ([True, False] if mode == "on" else [False]):
            fluxwave("cutover", ["cutover", "--from", "HEAD~1", "--to", "HEAD"], change, cold)
            fluxwave("diff", ["diff", "--from", "HEAD~1", "--to", "HEAD"], change, cold)
        if flate:
            cold_dir, warm_dir = caches / f"flate-cold-{mode}", caches / f"flate-warm-{mode}"
            build = [flate, "build", "ks", "--path", repo / entry, "--no-progress"]
            diff = [flate, "diff", "ks", "--path", repo / entry, "--path-orig", base / entry, "--no-progress"]
            # The warm rows' cache is filled by one untimed run of each first.
            for cmd in (build, diff):
                run_full(cmd + ["--cache-dir", warm_dir], cwd=repo, limit=limit)
            load += [Row("flate build ks, empty cache", [build + ["--cache-dir", cold_dir]], setup=_fresh(cold_dir),
                         cwd=repo, limit=limit),
                     Row("flate build ks, warm cache", [build + ["--cache-dir", warm_dir]], cwd=repo, limit=limit)]
            change += [Row("flate diff ks, empty cache", [diff + ["--cache-dir", cold_dir]], any_code,
                           setup=_fresh(cold_dir), cwd=repo, limit=limit),
                       Row("flate diff ks, warm cache", [diff + ["--cache-dir", warm_dir]], any_code,
                           cwd=repo, limit=limit)]
        if mode == "off" and "flux-local" in tools:
            flenv = dict(env, PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}")
            # flux-local finds Flux Kustomizations in the files under --path (it does not follow
            # a kustomization.yaml's resources out of it): the generated repositories' are in
            # clusters/base, beside the entry clusters/dev.
            fl = info.get("flux_local_entry", entry)
            # It also exits 0 or 1 (a diff) when a kustomize/flux command it ran failed or went
            # over its own 20 s limit.
            def found(out, err):
                if "no Kustomization objects found" in out:
                    return "finds no Flux Kustomization under --path " + fl
                if "Traceback (most recent call last)" in err:
                    return "its run failed: " + [l for l in err.splitlines() if l.strip()][-1].strip()[:100]
                return None
            load.append(Row("flux-local get ks", [[tools["flux-local"], "get", "ks", "--path", fl]],
                            cwd=repo, env=flenv, limit=limit, verify=found))
            change.append(Row("flux-local diff ks", [[tools["flux-local"], "diff", "ks", "--path", fl,
                                                      "--path-orig", base / fl]], any_code,
                              cwd=repo, env=flenv, limit=limit, verify=found))
        if mode == "off" and "kubectl" in tools and paths[0]:
            load.append(Row(f"kubectl kustomize × {len(paths[0])} Kustomization paths",
                            [[tools["kubectl"], "kustomize", repo / p] for p in paths[0]], limit=limit))
        if mode == "on":
            # What the Helm-on rows measure: how many releases fluxwave rendered (offline, a
            # public repository's chart sources cannot be pulled).
            p = subprocess.run([*fw, "build", "--format", "json"], env=fwenv, capture_output=True, text=True)
            try:
                left = json.loads(p.stdout).get("notRendered", [])
            except ValueError:
                left = []
            if left:
                result.setdefault("unrendered", {})[mode] = (len(left), re.sub(r"\s+", " ", left[0].get("why", ""))[:120].replace("|", "\\|"))
        log(f"{info['name']}, Helm {mode}: {len(load) + len(change)} commands × {runs} runs")
        in_turns(load, runs)
        in_turns(change, runs)
        for r in load + change:
            log(f"  {r.name}: {r.cell()}")
        result["modes"][mode] = {"load": load, "change": change}
    return result


# ---------------------------------------------------------------- the report

# The fluxwave command each peer command is compared with.
REFERENCE = {"flate build ks": "build", "flate diff ks": "diff", "flux-local get ks": "check",
             "flux-local diff ks": "diff", "kubectl kustomize": "build"}


def _find(rows, prefix):
    return next((r for r in rows if r.name.startswith(prefix)), None)


def _ratio(peer, ours):
    if peer is None or ours is None or not peer.ok or not ours.ok:
        return ""
    return f"{peer.median / ours.median:.1f}×"


def _layout(info):
    return info["name"] if info["layout"] == "public" else (
        info["name"] if info["layout"] == "gen_repo" else f"{info['layout']} ×{info['scale']}")


def report(results, tools, missing, runs, limit, machine, skipped):
    """The section "Against flate and flux-local" of BENCHMARKS.md, its targets judged."""
    out = [
        "## Against flate and flux-local",
        "",
        "Made by `python3 bench/run.py` (the same run): fluxwave's `check`, `build`, `cutover` and `diff`",
        "(`--from HEAD~1 --to HEAD`, a small PR-like change) in turns with flate's full build",
        "(`flate build ks --path ENTRY`) and changed-only diff (`flate diff ks --path ENTRY --path-orig",
        "BASE/ENTRY`, BASE a checkout of HEAD~1 made outside the timing), each with an empty",
        "`--cache-dir` per run (\"empty cache\") and with its persistent render cache filled by an untimed",
        "run first (\"warm cache\"); flux-local's `get ks` (loads every Kustomization, as `check` does)",
        "and `diff ks`; and `kubectl kustomize` of every Flux Kustomization's path, one after another",
        f"(one number: what kustomize-controller's build costs without Flux's extras). Median of {runs}",
        "runs (min–max) / CPU (user+sys, median) / peak RSS; a peer over "
        f"{limit:.0f} s is stopped and recorded as over the limit. ×: the peer's median over that of the",
        "fluxwave command named (in the same Helm mode and cache state). Helm off: fluxwave `--no-helm` (flate has",
        "no switch: it renders HelmReleases whose charts it can get either way; flux-local's `get`/`diff",
        "ks` render none). Helm on (repositories with HelmReleases): fluxwave renders with `helm`, with an",
        "empty `--cache` per run and warm. flate runs with its defaults, which leave Secrets and CRDs",
        "out of its output (`--skip-secrets`, `--skip-crds`); fluxwave's `build` writes them. flux-local",
        "gives each `kustomize`/`flux` command it runs 20 s (a constant of its own): a TimeoutError is that.",
        "",
        f"Machine: {machine}.",
        "",
        f"Peers: {versions(tools)}.",
        "",
    ]
    if "flux" in tools:
        out += ["flux-local's `flux` is built from a fluxcd/flux2 clone (`--flux2-src`) at its newest release tag",
                "(`go install` of it is refused), without the install manifests the CLI embeds (bundling them",
                "downloads the controllers' releases; `flux build ks` does not read them).", ""]
    for name, why in missing.items():
        out.append(f"- **{name} not run**: {why}.")
    for what, why in skipped:
        out.append(f"- **{what} not run**: {why}.")
    if missing or skipped:
        out.append("")
    out += ["| repository | Helm | command | median (min–max) / CPU / peak | × fluxwave |", "|---|---|---|---|---|"]
    for res in results:
        info, (floor_t, mib, files) = res["info"], res["floor"]
        name = _layout(info)
        out.append(f"| {name} | | floor: read every byte ({files:,} files, {mib:.1f} MiB) | {floor_t:.3f} s | |")
        for mode, groups in res["modes"].items():
            for group in ("load", "change"):
                rows = groups[group]
                for r in rows:
                    ref = REFERENCE.get(r.name.split(",")[0].split(" ×")[0])
                    # A cached peer against fluxwave with its cache in the same state.
                    cache = next((c for c in ("empty cache", "warm cache") if c in r.name), None)
                    ours = ref and _find(rows, f"fluxwave {ref}" + (f", {cache}" if cache and mode == "on" else ""))
                    ratio = _ratio(r, ours)
                    ratio = f"{ratio} `{ref}`" if ratio else ""
                    out.append(f"| {name} | {mode} | `{r.name}` | {r.cell()} | {ratio} |")
            unrendered = res.get("unrendered", {}).get(mode)
            if unrendered:
                out.append(f"| {name} | {mode} | fluxwave left {unrendered[0]} of {info['helmreleases']} HelmReleases "
                           f"unrendered: {unrendered[1]} | | |")
        built, skipped_paths = res["paths"]
        if skipped_paths:
            out.append(f"| {name} | | kubectl kustomize: {len(skipped_paths)} of {len(built) + len(skipped_paths)} "
                       "Kustomization paths have no kustomization.yaml (Flux generates one) and are left out | | |")
    out.append("")
    return out + peer_targets(results)


def peer_targets(results):
    """Issue 18's targets, each judged from this run's numbers."""
    verdict = lambda ok: "met" if ok else "**missed**"
    out = ["### Targets against the peers", "", "| target | repository | this run | verdict |", "|---|---|---|---|"]

    def judge(text, name, ours, peer, ok):
        if ours is None or peer is None:
            return
        if not ours.ok or not peer.ok:
            why = f"fluxwave: {ours.failed}" if not ours.ok else f"{peer.name}: {peer.failed}"
            out.append(f"| {text} | {name} | not judged ({why.split(':')[0]}: {why.split(':')[1].strip()}, see above) | — |")
            return
        ratio = peer.median / ours.median
        out.append(f"| {text} | {name} | {ratio:.1f}× ({ours.median:.3f} s vs {peer.median:.3f} s) | "
                   f"{verdict(ok(ratio))} |")

    for res in results:
        name = _layout(res["info"])
        for mode, g in res["modes"].items():
            for cache in ("empty cache", "warm cache"):
                fw_cache = "" if mode == "off" else f", {cache}"
                peer = _find(g["load"], f"flate build ks, {cache}")
                for cmd in ("check", "build"):
                    judge(f"`{cmd}` ≥ 10× faster than flate's full build ({cache}), Helm {mode}", name,
                          _find(g["load"], f"fluxwave {cmd}{fw_cache}"), peer, lambda r: r >= 10)
                peer = _find(g["change"], f"flate diff ks, {cache}")
                for cmd in ("cutover", "diff"):
                    judge(f"`{cmd}` faster than flate's changed-only diff ({cache}), Helm {mode}", name,
                          _find(g["change"], f"fluxwave {cmd}{fw_cache}"), peer, lambda r: r > 1)
    # Growth from 10× to 100× of a shape (and from 10,000 to 100,000 generated services).
    by = {(r["info"]["layout"], r["info"]["scale"]): r for r in results if r["info"]["layout"] != "public"}
    for (layout, scale), big in sorted(by.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        small = by.get((layout, scale // 10)) if scale % 10 == 0 else None
        if small is None or (layout != "gen_repo" and scale != 100):
            continue
        for mode in big["modes"]:
            if mode not in small["modes"]:
                continue
            for group in ("load", "change"):
                for b in big["modes"][mode][group]:
                    s = _find(small["modes"][mode][group], b.name)
                    if not b.name.startswith("fluxwave") or s is None or not (s.ok and b.ok):
                        continue
                    g = b.median / s.median
                    out.append(f"| growth of `{b.name}` ×10 ≤ 12×, Helm {mode} | {layout} {scale // 10:,} → {scale:,} | "
                               f"{g:.2f}× ({s.median:.3f} s → {b.median:.3f} s) | {verdict(g <= 12)} |")
    for res in results:
        info = res["info"]
        if (info["layout"], info["scale"]) != ("gen_repo", 100_000) and not (info["layout"] != "public" and info["scale"] == 100 and info["layout"] != "gen_repo"):
            continue
        for mode, g in res["modes"].items():
            for r in g["load"] + g["change"]:
                if r.name.startswith("fluxwave") and r.ok:
                    out.append(f"| peak memory of `{r.name}` < 1 GiB, Helm {mode} | {_layout(info)} | {r.peak:.0f} MiB | "
                               f"{verdict(r.peak < 1024)} |")
    if len(out) == 4:
        out.append("| (nothing to judge: no peer ran) | | | |")
    return out + [""]
