#!/usr/bin/env python3
"""HelmRelease rendering, side by side with `helm template` alone and flux-local.

    python3 bench/helm.py [--releases 50] [--runs 5] [--helm helm] [--out target/bench/helm.md]

Makes a repository of N HelmReleases of one chart (the test fixture `store` 1.0.0, packaged
and served from a Helm repository on 127.0.0.1), each with its own values, then times in
turns:

- `fluxwave build` with an empty cache (the chart pulled once, every release rendered);
- `fluxwave build` with the chart cached and the renders forgotten (every release rendered
  by helm, nothing pulled): "warm chart cache";
- `fluxwave build` with both cached (nothing runs helm): "warm cache";
- `helm template` of each release, one after another, the chart already on disk: what
  rendering costs by itself;
- `flux-local build` of the repository, when `flux-local` is on the PATH.

Medians of --runs runs, peak memory of the fluxwave process, ratios. Prints a Markdown table.
"""
import argparse
import os
import platform
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from run import run_once

ROOT = Path(__file__).resolve().parent.parent
FLUXWAVE = ROOT / "target" / "release" / "fluxwave"
CHART = ROOT / "tests" / "fixtures" / "helm" / "charts" / "store"


class Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(folder):
    handler = partial(Quiet, directory=str(folder))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def repository(path, url, n):
    files = {
        "clusters/dev/kustomization.yaml": "resources: [sync.yaml]\n",
        "clusters/dev/sync.yaml": f"""apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {{name: flux-system, namespace: flux-system}}
spec: {{url: 'ssh://git@example.com/fleet', ref: {{branch: main}}, interval: 1m}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {{name: flux-system, namespace: flux-system}}
spec: {{path: ./clusters/dev, prune: true, sourceRef: {{kind: GitRepository, name: flux-system}}, interval: 10m}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {{name: apps, namespace: flux-system}}
spec: {{path: ./apps, prune: true, sourceRef: {{kind: GitRepository, name: flux-system}}, interval: 10m}}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {{name: charts, namespace: flux-system}}
spec: {{url: '{url}', interval: 1h}}
""",
    }
    names = [f"app-{i:03}" for i in range(n)]
    files["apps/kustomization.yaml"] = "resources:\n" + "".join(f"  - {a}.yaml\n" for a in names)
    for i, a in enumerate(names):
        files[f"apps/{a}.yaml"] = f"""apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {{name: {a}, namespace: apps}}
spec:
  interval: 1h
  chart:
    spec:
      chart: store
      version: 1.0.0
      sourceRef: {{kind: HelmRepository, name: charts, namespace: flux-system}}
  values:
    persistence: {{size: {i + 1}Gi}}
"""
    for rel, text in files.items():
        p = path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    subprocess.run(["git", "add", "-A"], cwd=path, check=True)
    subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "x"],
                   cwd=path, check=True)
    return names


def timed(cmd, env, setup=None):
    """Wall time (s) and peak RSS (MiB) of one run of `cmd` (bench/run.py's `run_once`),
    which must succeed."""
    elapsed, peak, code, err = run_once(cmd, setup=setup, env=env)
    if code != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))}: exit {code}\n{err}")
    return elapsed, peak


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--releases", type=int, default=50)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--helm", default=shutil.which("helm") or str(Path.home() / "go/bin/helm"))
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if not FLUXWAVE.exists():
        raise SystemExit("build it first: cargo build --release")
    work = Path(tempfile.mkdtemp(prefix="fluxwave-helm-bench-"))
    served = work / "served"
    served.mkdir()
    subprocess.run([args.helm, "package", "-d", served, CHART], check=True, stdout=subprocess.DEVNULL)
    server, url = serve(served)
    subprocess.run([args.helm, "repo", "index", served, "--url", url], check=True)
    repo = work / "repo"
    names = repository(repo, url, args.releases)
    cache = work / "cache"
    homes = work / "helm-home"
    env = dict(os.environ, HELM_CONFIG_HOME=str(homes / "config"), HELM_CACHE_HOME=str(homes / "cache"),
               HELM_DATA_HOME=str(homes / "data"), FLUXWAVE_CACHE=str(cache), FLUXWAVE_HELM=args.helm)
    env.pop("FLUXWAVE_NO_HELM", None)
    build = [FLUXWAVE, "--repo", repo, "build", "--format", "json"]

    def empty_cache():
        shutil.rmtree(cache, ignore_errors=True)

    def forget_renders():
        shutil.rmtree(cache / "renders", ignore_errors=True)

    # Once, to fill the cache and to check that every release renders.
    out = subprocess.run(build, env=env, capture_output=True, text=True, check=True)
    if '"notRendered": []' not in out.stdout:
        raise SystemExit(f"not every release renders:\n{out.stderr}")
    tgz = next(served.glob("store-*.tgz"))

    def helm_alone():
        for i, a in enumerate(names):
            subprocess.run([args.helm, "template", a, tgz, "--namespace", "apps", "--include-crds",
                            "--set", f"persistence.size={i + 1}Gi"], env=env, check=True,
                           stdout=subprocess.DEVNULL)

    rows = {"cold": [], "charts": [], "warm": [], "helm": [], "flux-local": []}
    flux_local = shutil.which("flux-local")
    for _ in range(args.runs):
        rows["cold"].append(timed(build, env, empty_cache))
        rows["charts"].append(timed(build, env, forget_renders))
        rows["warm"].append(timed(build, env))
        start = time.perf_counter()
        helm_alone()
        rows["helm"].append((time.perf_counter() - start, 0))
        if flux_local:
            rows["flux-local"].append(timed([flux_local, "build", "all", "--enable-helm", repo / "clusters/dev"], env))
    server.shutdown()
    med = {k: (statistics.median(t for t, _ in v), max(m for _, m in v)) for k, v in rows.items() if v}
    machine = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Linux {platform.release()}"
    helm_version = subprocess.run([args.helm, "version", "--short"], capture_output=True, text=True).stdout.strip()
    lines = [
        f"{args.releases} HelmReleases of one chart (`store` 1.0.0 from a Helm repository on 127.0.0.1), "
        f"median of {args.runs} runs; {machine}; helm {helm_version}.",
        "",
        "| run | wall time | peak memory | vs `helm template` alone |",
        "|---|---|---|---|",
    ]
    base = med["helm"][0]
    for key, label in [("cold", "fluxwave build, empty cache (pull once, render all)"),
                       ("charts", "fluxwave build, chart cached, renders forgotten"),
                       ("warm", "fluxwave build, warm cache"),
                       ("helm", f"`helm template` × {args.releases}, one after another"),
                       ("flux-local", "flux-local build all --enable-helm")]:
        if key not in med:
            if key == "flux-local":
                lines.append("| flux-local | not run: `flux-local` is not on the PATH | | |")
            continue
        t, m = med[key]
        mem = f"{m:.0f} MiB" if m else "—"
        lines.append(f"| {label} | {t:.3f} s | {mem} | {t / base:.2f}× |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
