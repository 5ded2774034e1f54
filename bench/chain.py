#!/usr/bin/env python3
"""The chain shapes: how `check`, `plan` and `apply` grow with the depth of a dependency chain.

    python3 bench/chain.py [--sizes 2000,8000,32000] [--binary target/release/fluxwave]

Two repositories per size, generated under target/bench/chain/:
  ks-N    N Flux Kustomizations, each `dependsOn` the one before (`check` of it);
          ks-N-cycle the same with the first depending on the last (one cycle of all);
  waves-N examples/homelab's Flux wiring with a catalog of N services, each depending on
          the one before: N waves (`plan`, and `apply` on a fresh copy).
Prints the wall time of one run of each. A linear command grows about 4x from one size to
the next (the default sizes grow 4x); a quadratic one 16x.
"""
import argparse
import shutil
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "target" / "bench" / "chain"


def flux_chain(n, out, cycle=False):
    """N Flux Kustomizations in clusters/dev, 500 to a file, each building its own folder."""
    if out.exists():
        return out
    (out / "clusters" / "dev").mkdir(parents=True)
    docs = []
    for i in range(n):
        dep = i - 1 if i else (n - 1 if cycle else None)
        depends = f"  dependsOn:\n    - name: ks-{dep}\n" if dep is not None else ""
        docs.append(
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n"
            f"metadata:\n  name: ks-{i}\n  namespace: flux-system\nspec:\n{depends}"
            f"  interval: 10m\n  path: ./apps/a{i}\n  prune: true\n"
            "  sourceRef:\n    kind: GitRepository\n    name: flux-system\n")
        (out / "apps" / f"a{i}").mkdir(parents=True)
        (out / "apps" / f"a{i}" / "cm.yaml").write_text(
            f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{i}\n  namespace: default\n")
    files = []
    for k in range(0, n, 500):
        (out / "clusters" / "dev" / f"ks{k}.yaml").write_text("---\n".join(docs[k:k + 500]))
        files.append(f"  - ks{k}.yaml\n")
    (out / "clusters" / "dev" / "kustomization.yaml").write_text("resources:\n" + "".join(files))
    commit(out)
    return out


def commit(out):
    """A repository of its own: under target/ it would otherwise be read as an ignored folder
    of the checkout."""
    git = ["git", "-C", str(out), "-c", "gc.auto=0", "-c", "user.name=bench", "-c", "user.email=bench@fluxwave.dev"]
    subprocess.run(["git", "init", "-q", str(out)], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-q", "--no-verify", "-m", "flat"], check=True)


def wave_chain(n, out):
    """examples/homelab's wiring with N chained services, one manifest each, committed."""
    if out.exists():
        return out
    shutil.copytree(ROOT / "examples" / "homelab", out)
    for d in ("catalog", "apps"):
        shutil.rmtree(out / d)
        (out / d).mkdir()
    (out / "fluxwave.yaml").write_text("apiVersion: fluxwave.dev/v1alpha1\nkind: Config\n")
    entries = []
    for i in range(n):
        name = f"s{i:06d}"
        deps = f"  dependencies:\n    - to: s{i - 1:06d}\n" if i else ""
        (out / "catalog" / f"{name}.yaml").write_text(
            "apiVersion: fluxwave.dev/v1alpha1\nkind: ServiceDefinition\n"
            f"metadata:\n  name: {name}\nspec:\n{deps}  image: {{repository: x, tag: \"1\"}}\n")
        (out / "apps" / f"{name}.yaml").write_text(
            f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: default\n")
        entries.append(f"  - {name}.yaml\n")
    (out / "apps" / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
        + "".join(entries))
    commit(out)
    return out


def timed(cmd, ok=(0,)):
    start = time.perf_counter()
    code = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    if code not in ok:
        raise SystemExit(f"{' '.join(map(str, cmd))}: exit {code}")
    return time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="2000,8000,32000")
    ap.add_argument("--binary", default=str(ROOT / "target" / "release" / "fluxwave"))
    a = ap.parse_args()
    if a.binary == str(ROOT / "target" / "release" / "fluxwave"):
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    WORK.mkdir(parents=True, exist_ok=True)
    print("| N | check of a chain | check of a cycle | plan of N waves | apply of N waves |")
    print("|---|---|---|---|---|")
    for n in [int(s) for s in a.sizes.split(",")]:
        chain = flux_chain(n, WORK / f"ks-{n}")
        cycle = flux_chain(n, WORK / f"ks-{n}-cycle", cycle=True)
        waves = wave_chain(n, WORK / f"waves-{n}")
        scratch = WORK / f"scratch-{n}"
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.copytree(waves, scratch, symlinks=True)
        row = [
            timed([a.binary, "--repo", chain, "check"]),
            timed([a.binary, "--repo", cycle, "check"], ok=(1,)),
            timed([a.binary, "--repo", waves, "plan"]),
            timed([a.binary, "--repo", scratch, "apply"]),
        ]
        shutil.rmtree(scratch, ignore_errors=True)
        print(f"| {n:,} | " + " | ".join(f"{t:.2f} s" for t in row) + " |", flush=True)


if __name__ == "__main__":
    main()
