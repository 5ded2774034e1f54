#!/usr/bin/env python3
"""CPU per step of `cutover --each` on a generated history, for N Flux Kustomizations.

    python3 bench/steps.py --bin target/release/fluxwave [--sizes 50,250,1000] [--steps 40]
                           [--partial 4] [--work DIR] [--runs 3]

Why: a step of a history should cost what it changes. Each repository has N per-app Flux
Kustomizations (`clusters/dev/apps/app-<i>.yaml`, each building `apps/app-<i>`, a ConfigMap
and a Deployment); one in `--partial` cannot be wholly seen (a remote base, or a resource
that is missing, so that its build fails), which makes cutover ask what the change touches.
The history has `--steps` commits after the first: most edit only README.md, every fifth
edits one modelled app's ConfigMap.

For each N the whole range is run (`cutover --each FIRST..HEAD --format json`) and so is its
first step alone; CPU is user + sys of the process (`os.wait4`), the best of `--runs` runs,
and the CPU per step after the first is (whole - first) / (steps - 1). The repositories are
made once under `--work` (default: a folder under the system's temporary folder).

With `FLUXWAVE_TEST_STEP_COUNTS` set, fluxwave prints to stderr, for each step, how many
owner builds and footprints it made; the script reports the most of either in a step after
the first, which is what the test `touched::a_step_that_touches_no_footprint_builds_nothing`
holds (no footprint again, no build but what changes).
"""

import argparse
import os
import subprocess
import tempfile


def git(repo, *args):
    subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
                        "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"})


def write(repo, rel, text):
    path = os.path.join(repo, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def flux_ks(name):
    return (f"apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n"
            f"metadata:\n  name: {name}\n  namespace: flux-system\n"
            f"spec:\n  interval: 10m\n  path: ./apps/{name}\n  prune: true\n"
            f"  sourceRef:\n    kind: GitRepository\n    name: flux-system\n")


def config_map(name, value):
    return (f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {name}\n"
            f"  labels:\n    kustomize.toolkit.fluxcd.io/ssa: IfNotPresent\n"
            f"data:\n  value: \"{value}\"\n")


def deployment(name):
    return (f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  namespace: {name}\n"
            f"spec:\n  selector:\n    matchLabels: {{app: {name}}}\n  template:\n"
            f"    metadata:\n      labels: {{app: {name}}}\n    spec:\n"
            f"      containers:\n        - name: {name}\n          image: example.org/{name}:1.0\n")


def make(repo, n, steps, partial):
    """A repository of `n` Kustomizations and a history of `steps` commits after the first."""
    os.makedirs(repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "bench@example.org")
    git(repo, "config", "user.name", "bench")
    names = [f"app-{i}" for i in range(n)]
    write(repo, "clusters/dev/kustomization.yaml",
          "resources:\n" + "".join(f"  - apps/{a}.yaml\n" for a in names))
    for i, a in enumerate(names):
        write(repo, f"clusters/dev/apps/{a}.yaml", flux_ks(a))
        write(repo, f"apps/{a}/configmap.yaml", config_map(a, 0))
        write(repo, f"apps/{a}/deployment.yaml", deployment(a))
        resources = ["configmap.yaml", "deployment.yaml"]
        if partial and i % partial == 0:
            # Half of them read a remote base (built, not wholly seen), half fail to build.
            if (i // partial) % 2 == 0:
                resources.append(f"https://github.com/example/{a}//deploy?ref=v1")
            else:
                resources.append("missing.yaml")
        write(repo, f"apps/{a}/kustomization.yaml",
              "resources:\n" + "".join(f"  - {r}\n" for r in resources))
    write(repo, "README.md", "a fleet\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "init")
    modelled = [a for i, a in enumerate(names) if not (partial and i % partial == 0)]
    for s in range(1, steps + 1):
        if s % 5 == 0 and modelled:
            a = modelled[s % len(modelled)]
            write(repo, f"apps/{a}/configmap.yaml", config_map(a, s))
            git(repo, "commit", "-q", "-am", f"{a}: value {s}")
        else:
            write(repo, "README.md", f"a fleet, edit {s}\n")
            git(repo, "commit", "-q", "-am", f"README {s}")


def cpu(cmd, env):
    """CPU seconds (user + sys) of one run of `cmd`, its exit code and stderr."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(p.pid, 0)
        err.seek(0)
        return usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status), err.read().decode()


def counts(stderr):
    """The most owner builds and footprints of a step after the first, from
    FLUXWAVE_TEST_STEP_COUNTS lines (`step <i>: builds <b>, footprints <f>, parses <p>,
    environments <e>`)."""
    most = [0, 0]
    for line in stderr.splitlines():
        if line.startswith("step ") and ": builds " in line:
            i = int(line.split()[1].rstrip(":"))
            b = int(line.split("builds ")[1].split(",")[0])
            f = int(line.split("footprints ")[1].split(",")[0])
            if i > 1:
                most = [max(most[0], b), max(most[1], f)]
    return most


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--sizes", default="50,250,1000")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--partial", type=int, default=4, help="one Kustomization in this many is partial (0: none)")
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "fluxwave-bench-steps"))
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    env = {**os.environ, "FLUXWAVE_TEST_STEP_COUNTS": "1"}
    print(f"`cutover --each` over {a.steps} steps (4 in 5 edit README.md only), one Kustomization "
          f"in {a.partial} partial; CPU = user + sys, best of {a.runs} runs\n")
    print("| Kustomizations | whole range | first step | per step after the first | most builds / footprints in a later step |")
    print("|---|---|---|---|---|")
    for n in [int(x) for x in a.sizes.split(",")]:
        repo = os.path.join(a.work, f"n{n}-s{a.steps}-p{a.partial}")
        if not os.path.isdir(repo):
            make(repo, n, a.steps, a.partial)
        base = [a.bin, "--repo", repo, "cutover", "--format", "json", "--no-helm", "--each"]
        whole, first, most = [], [], [0, 0]
        for _ in range(a.runs):
            t, code, err = cpu(base + ["HEAD~%d..HEAD" % a.steps], env)
            if code not in (0, 1):
                raise SystemExit(f"N={n}: exit {code}\n{err}")
            whole.append(t)
            most = counts(err)
            t, code, err = cpu(base + ["HEAD~%d..HEAD~%d" % (a.steps, a.steps - 1)], env)
            if code not in (0, 1):
                raise SystemExit(f"N={n}: exit {code}\n{err}")
            first.append(t)
        per = (min(whole) - min(first)) / (a.steps - 1)
        print(f"| {n} | {min(whole):.2f} s | {min(first):.2f} s | {per * 1000:.1f} ms | {most[0]} / {most[1]} |",
              flush=True)


if __name__ == "__main__":
    main()
