#!/usr/bin/env python3
"""fluxwave on a corpus of public Flux repositories, as a new user meets it (no fluxwave.yaml),
held against Flux's own build code. Writes CORPUS.md.

    python3 bench/corpus.py --clones DIR [--bin target/release/fluxwave]
                            [--oracle target/flux-oracle/flux-oracle] [--list bench/corpus.txt]
                            [--commits 300] [--oracle-steps 12] [--only NAME]... [--out CORPUS.md]
                            [--commit SHA]
                            [--report-only] [--refresh --previous-bin BIN]

DIR holds one clone of each repository of --list, named `owner+name` (`git clone` of what the
library's fetch gives). Each clone is read, never written: every revision comes from git.

For each repository, at its pinned commit (`git archive` into a scratch folder):
- discovery: the environments `fluxwave check --format json` finds (name, path, Flux
  Kustomizations in its inventory) against the Flux Kustomizations the files declare (every
  YAML document whose top-level `apiVersion` is `kustomize.toolkit.fluxcd.io/...` and whose
  `kind` is `Kustomization`, counted by text: the count a reader makes by grep);
- `check`: its errors and warnings by code (each error on a repository that Flux reconciles is
  a false finding until shown otherwise: CORPUS.md lists them for a look by hand);
- `cutover --each` over the last --commits first-parent steps: the verdicts, every reason of
  every "incomplete", and the CPU time (user + system of the process) per step after the
  first: (CPU of the whole range - CPU of its first step alone) / (steps - 1), each CPU time
  the least of --repeat runs (a shared machine's other work only ever adds to a run's time);
- the oracle (tools/flux-oracle, Flux's own libraries) on the newest --oracle-steps steps whose
  diff deletes a YAML file or edits a kustomization.yaml or ks.yaml, in each environment found:
  an object Flux applied before the step and applies nowhere after it (`flux_removes`: Flux
  Kustomizations apart, as cutover counts wiring apart; nothing of a Kustomization whose build
  fails after it; nothing marked `prune: disabled`, which Flux keeps) must be among the
  step's deletions, or the step must be "incomplete". One that is neither, with the verdict "safe", is a **false safe**.

Helm renders with the helm on the PATH and a cache under target/corpus/, with `--offline`
(the corpus is measured with no network: a chart from a remote repository cannot be pulled,
that release is not rendered, and a change to it is "incomplete", which is what an offline
tool can know; nor is the CPU of a pull that cannot succeed counted in a step's cost).
ResourceSets render with the flux-operator on the PATH (`.ci/run` pins v0.58.1), its renders
kept in the same cache; the oracle builds Flux Kustomizations only, so what a ResourceSet
makes is judged by fluxwave alone (tests/cli/resource_set.rs holds it to the operator's code).

Results are kept in target/corpus/<owner+name>.json; --report-only writes CORPUS.md from them.
--refresh measures discovery, `check` and `cutover --each` again with --bin, keeping each
saved oracle comparison when `cutover --each` of --previous-bin (the binary that comparison
was made with) reports every step exactly as --bin does (the comparison reads nothing else),
and making it again where they differ.
"""

import argparse
import collections
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "target" / "corpus"
FLUX_KUSTOMIZATION = "kustomize.toolkit.fluxcd.io/Kustomization/"


def git(repo, *args, binary=False):
    run = subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=not binary)
    return run.stdout


def cpu_of_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(cmd, ok=(0, 1)):
    """(exit code, stdout, stderr, wall s, cpu s) of one command."""
    cpu, t = cpu_of_children(), time.monotonic()
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr, time.monotonic() - t, cpu_of_children() - cpu


def export(repo, rev, into):
    """The tree of `rev` written into the folder `into`. A fetched snapshot may lack the
    blobs of its largest files (images, archives): then every file it has is written, file
    by file, and those it lacks are left out (no manifest is among them: `check` and the
    oracle read YAML)."""
    try:
        data = git(repo, "archive", rev, binary=True)
    except subprocess.CalledProcessError:
        return export_readable(repo, rev, into)
    subprocess.run(["tar", "-x", "-C", str(into)], input=data, check=True)


def export_readable(repo, rev, into):
    listing = git(repo, "ls-tree", "-r", "-z", rev, binary=True).split(b"\0")
    for entry in filter(None, listing):
        meta, path = entry.split(b"\t", 1)
        mode, kind, blob = meta.split()
        if kind != b"blob" or mode == b"120000":
            continue
        got = subprocess.run(["git", "-C", str(repo), "cat-file", "blob", blob.decode()], capture_output=True)
        if got.returncode != 0:
            continue
        target = Path(into) / path.decode(errors="replace")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(got.stdout)


DOC = re.compile(r"^---[ \t]*(?:#.*)?$", re.M)


def declared_kustomizations(tree):
    """Flux Kustomizations the files declare, by the text of each document."""
    n = 0
    for path in Path(tree).rglob("*"):
        if path.suffix not in (".yaml", ".yml") or not path.is_file() or path.is_symlink():
            continue
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        for doc in DOC.split(text):
            if re.search(r"^apiVersion:\s*['\"]?kustomize\.toolkit\.fluxcd\.io/", doc, re.M) and re.search(
                    r"^kind:\s*['\"]?Kustomization['\"]?\s*$", doc, re.M):
                n += 1
    return n


def discovery_and_check(a, clone, pin):
    with tempfile.TemporaryDirectory() as d:
        export(clone, pin, d)
        out = {"declared": declared_kustomizations(d)}
        code, stdout, stderr, _, _ = run([a.bin, "--repo", d, "--cache", WORK / "cache", "--offline", "check", "--format", "json"])
        if code not in (0, 1):
            out["error"] = stderr.strip()[-600:]
            out["environments"] = []
            return out
        doc = json.loads(stdout)
        out["environments"] = doc["environments"]
        out["findings"] = collections.Counter(
            f'{f["severity"]} {f["code"]}' for f in doc["findings"]).most_common()
        out["errors"] = [f'{f["code"]}: {f.get("path", "")}: {f["message"][:300]}'
                         for f in doc["findings"] if f["severity"] == "error"][:40]
        return out


def reason_key(why):
    """A reason with the names taken out, so that one kind of reason counts once."""
    why = re.sub(r"[A-Za-z0-9.-]+/[A-Za-z0-9.-]+/[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)?", "<id>", why)
    why = re.sub(r"`[^`]*`", "`…`", why)
    why = re.sub(r"\([^()]*\)", "(…)", why)
    return why[:220]


def each(a, clone, commits):
    oldest, pin = commits[-1], commits[0]
    base = [a.bin, "--repo", clone, "--cache", WORK / "cache", "--offline", "cutover"]
    code, stdout, stderr, wall, cpu = run(base + ["--each", f"{oldest}..{pin}", "--format", "json"])
    for _ in range(a.repeat - 1):
        cpu = min(cpu, run(base + ["--each", f"{oldest}..{pin}", "--format", "json"])[4])
    out = {"exit": code, "wall": wall, "cpu": cpu, "repeat": a.repeat}
    if code not in (0, 1):
        out["error"] = stderr.strip()[-600:]
        return out, []
    steps = json.loads(stdout)["steps"]
    first_cpu = min(run(base + ["--from", commits[-1], "--to", commits[-2], "--format", "json"])[4]
                    for _ in range(a.repeat))
    out["steps"] = len(steps)
    out["cpu_per_step_ms"] = 1000 * (cpu - first_cpu) / max(1, len(steps) - 1)
    verdicts = collections.Counter(s.get("verdict", "error") for s in steps)
    out["verdicts"] = dict(verdicts)
    reasons = collections.Counter()
    for s in steps:
        for inc in s.get("incomplete", []):
            for why in inc["why"]:
                reasons[reason_key(why)] += 1
        if s.get("error"):
            reasons[reason_key("error: " + s["error"])] += 1
    out["reasons"] = reasons.most_common()
    out["deleting_steps"] = [
        {"to": s["to"][:10], "deletions": len(s["deletions"]),
         "stateful": s.get("stateful", 0)} for s in steps if s.get("verdict") == "deletes"]
    return out, steps


def oracle_objects(a, clone, rev, env, cache):
    """Flux's build of `env` (as `check` prints it) at `rev`: its Kustomizations as the
    oracle prints them, from the root written in the repository when that revision has its
    file, and with every source that is this repository (a nested root's too)."""
    key = (rev, env["path"])
    if key not in cache:
        with tempfile.TemporaryDirectory() as d:
            export(clone, rev, d)
            cmd = [a.oracle, "-repo", d, "-env", env["path"]]
            if env.get("root") and (Path(d) / env["root"]).is_file():
                cmd += ["-root", env["root"]]
            for source in env.get("sources", []):
                cmd += ["-source", source]
            code, stdout, stderr, _, _ = run(cmd)
            cache[key] = json.loads(stdout)["kustomizations"] if code == 0 else None
    return cache[key]


def flux_removes(old, new):
    """What Flux deletes going from Kustomizations `old` to `new` (the oracle's): the objects
    of an old Kustomization that no new one applies, but none of a Kustomization whose build
    fails in `new` or that is gone only because such a one no longer applies it
    (kustomize-controller applies and prunes nothing of a failing build), none Flux keeps
    (`prune: disabled`), and no Flux Kustomization (cutover counts wiring apart)."""
    name = lambda k: f'{k["namespace"]}/{k["name"]}'
    old_by, new_by = {name(k): k for k in old}, {name(k): k for k in new}
    children = {n: [o[len(FLUX_KUSTOMIZATION):] for o in k.get("objects", []) if o.startswith(FLUX_KUSTOMIZATION)]
                for n, k in old_by.items()}
    held = {n for n, k in new_by.items() if k.get("error")}
    stack = list(held)
    while stack:
        for c in children.get(stack.pop(), []):
            if c not in new_by and c not in held:
                held.add(c)
                stack.append(c)
    applied = {o for k in new for o in k.get("objects", [])}
    kept = {o for k in old for o in k.get("kept") or []}
    return {o for n, k in old_by.items() if n not in held for o in k.get("objects", [])
            if o not in applied and o not in kept and not o.startswith(FLUX_KUSTOMIZATION)}


def candidates(clone, commits):
    out = []
    for commit, parent in zip(commits, commits[1:]):
        changed = git(clone, "diff", "--no-renames", "--name-only", parent, commit).split("\n")
        deleted = git(clone, "diff", "--no-renames", "--name-only", "--diff-filter=D", parent, commit).split("\n")
        if any(d.endswith((".yaml", ".yml")) for d in deleted) or any(
                c.rsplit("/", 1)[-1] in ("kustomization.yaml", "ks.yaml") for c in changed):
            out.append((parent, commit))
    return out


def reported_as(o, reported):
    """Whether the oracle's removed object `o` is among fluxwave's `reported` ones. The oracle
    builds without the cluster's API mapping, so a custom cluster-scoped object keeps the
    namespace kustomize's `namespace:` gives it (kustomize knows only built-in kinds' scope);
    Flux's client drops it for a cluster-scoped resource (controller-runtime
    `NamespaceIfScoped`), and fluxwave reports the object without one when it knows the kind
    is cluster-scoped: the same object."""
    group, kind, _, name = o.split("/", 3)
    return o in reported or f"{group}/{kind}//{name}" in reported


def against_oracle(a, clone, commits, envs, steps):
    by_to = {s["to"]: s for s in steps}
    out = {"candidates": 0, "compared": 0, "oracle_failed": 0, "removed": 0, "reported": 0,
           "covered_by_incomplete": 0, "false_safe": [], "missed": []}
    pairs = candidates(clone, commits)
    out["candidates"] = len(pairs)
    cache = {}
    for parent, commit in pairs[:a.oracle_steps]:
        step = by_to.get(commit)
        if step is None or "verdict" not in step:
            continue
        for env in envs:
            old = oracle_objects(a, clone, parent, env, cache)
            new = oracle_objects(a, clone, commit, env, cache)
            if old is None or new is None:
                out["oracle_failed"] += 1
                continue
            out["compared"] += 1
            removed = flux_removes(old, new)
            out["removed"] += len(removed)
            reported = {f'{d["group"]}/{d["kind"]}/{d["namespace"]}/{d["name"]}' for d in step["deletions"]
                        if d.get("environment", env["name"]) == env["name"]}
            for o in sorted(removed):
                if reported_as(o, reported):
                    out["reported"] += 1
                elif step["verdict"] == "incomplete":
                    out["covered_by_incomplete"] += 1
                elif step["verdict"] == "safe":
                    out["false_safe"].append(f"{commit[:10]} {env['name']}: {o}")
                else:
                    out["missed"].append(f"{commit[:10]} {env['name']}: {o}")
    return out


def refresh(a, name, pin, saved):
    """`saved` measured again with --bin, its oracle comparison kept if every step's report
    of --previous-bin equals --bin's."""
    clone = Path(a.clones) / name.replace("/", "+")
    commits = git(clone, "rev-list", "--first-parent", f"--max-count={a.commits + 1}", pin).split()
    previous = run([a.previous_bin, "--repo", clone, "--cache", WORK / "cache", "--offline", "cutover",
                    "--each", f"{commits[-1]}..{pin}", "--format", "json"])
    r = dict(saved, fluxwave=a.commit)
    r["discovery"] = discovery_and_check(a, clone, pin)
    r["each"], steps = each(a, clone, commits)
    before = json.loads(previous[1])["steps"] if previous[0] in (0, 1) else None
    envs = r["discovery"].get("environments", [])
    if before == steps and "oracle" in saved:
        r["oracle_with"] = saved.get("oracle_with", saved.get("fluxwave", "unrecorded"))
    elif a.oracle and envs and steps:
        r["oracle"] = against_oracle(a, clone, commits, envs, steps)
        r.pop("oracle_with", None)
    else:
        r.pop("oracle", None)
    return r


def measure(a, name, pin):
    clone = Path(a.clones) / name.replace("/", "+")
    commits = git(clone, "rev-list", "--first-parent", f"--max-count={a.commits + 1}", pin).split()
    r = {"repo": name, "pin": pin, "commits": len(commits) - 1, "fluxwave": a.commit}
    r["discovery"] = discovery_and_check(a, clone, pin)
    r["each"], steps = each(a, clone, commits)
    envs = r["discovery"].get("environments", [])
    if a.oracle and envs and steps:
        r["oracle"] = against_oracle(a, clone, commits, envs, steps)
    return r


def row(r):
    if "not_measured" in r:
        return f'| [{r["repo"]}](https://github.com/{r["repo"]}) `{r["pin"][:10]}` | not measured: {r["not_measured"]} ||||||'
    d, e, o = r["discovery"], r["each"], r.get("oracle")
    envs = ", ".join(f'{x["name"]} ({x["path"]})' for x in d.get("environments", [])) or "none"
    found = sum(x["kustomizations"] for x in d.get("environments", []))
    errors = sum(n for k, n in d.get("findings", []) if k.startswith("error"))
    warnings = sum(n for k, n in d.get("findings", []) if k.startswith("warning"))
    v = e.get("verdicts", {})
    verdicts = (f'{v.get("safe", 0)} / {v.get("deletes", 0)} / {v.get("incomplete", 0)}'
                + (f' / {v["error"]}' if v.get("error") else "")) if "verdicts" in e else f'exit {e["exit"]}'
    cpu = f'{e["cpu_per_step_ms"]:.1f} ms' if "cpu_per_step_ms" in e else "—"
    oracle = (f'{o["compared"]} compared ({o["candidates"]} candidates, {o["oracle_failed"]} oracle failures): '
              f'{o["removed"]} removed, {o["reported"]} reported, {o["covered_by_incomplete"]} under incomplete, '
              f'**{len(o["false_safe"])} false safe**, {len(o["missed"])} missed') if o else "—"
    return (f'| [{r["repo"]}](https://github.com/{r["repo"]}) `{r["pin"][:10]}` | {envs} | {found} / {d["declared"]} | '
            f'{errors} / {warnings} | {verdicts} | {cpu} | {oracle} |')


def write_report(a, results):
    lines = [
        "# The public corpus",
        "",
        "Made by `python3 bench/corpus.py` (its docstring says what each column measures) on the "
        f"repositories of `bench/corpus.txt`, each at its pinned commit, over its last {a.commits} first-parent "
        "steps, with no fluxwave.yaml. Verdicts are safe / deletes / incomplete (/ steps that failed).",
        "",
        "fluxwave built from commit " + ", ".join(sorted({r.get("fluxwave", "unrecorded") for r in results}))
        + " of this repository; `--offline`, with Flux's build code (tools/flux-oracle) as the judge"
        + "".join(sorted({f" (oracle comparisons made with {r['oracle_with']}, whose `cutover --each` reports every"
                          " step as this one does)" for r in results if r.get("oracle_with")}))
        + ". The CPU of a step is measured with the least CPU of "
        + " or ".join(sorted({str(r.get("each", {}).get("repeat", 1)) for r in results}))
        + " runs of each command.",
        "",
        "| repository | environments found | Flux Kustomizations in the inventory / declared in files | "
        "check errors / warnings | cutover --each: safe / deletes / incomplete | CPU a step after the first | "
        "against Flux's build (oracle) |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [row(r) for r in results]
    totals = collections.Counter()
    for r in results:
        o = r.get("oracle") or {}
        totals["false safe"] += len(o.get("false_safe", []))
        totals["missed"] += len(o.get("missed", []))
    lines += ["", f'False "safe" found by the oracle, all repositories: **{totals["false safe"]}**; '
                  f'removals missed under "deletes": {totals["missed"]}.', ""]
    for r in results:
        if "not_measured" in r:
            continue
        d, e, o = r["discovery"], r["each"], r.get("oracle") or {}
        lines += [f'## {r["repo"]}', ""]
        if d.get("error"):
            lines += ["`check` failed:", "", "```", d["error"], "```", ""]
        if e.get("error"):
            lines += ["`cutover --each` failed:", "", "```", e["error"], "```", ""]
        if d.get("findings"):
            lines += ["check: " + ", ".join(f"{k} ×{n}" for k, n in d["findings"]), ""]
        for err in d.get("errors", []):
            lines.append(f"- {err}")
        if d.get("errors"):
            lines.append("")
        if e.get("reasons"):
            lines += ["Why steps were incomplete (reasons with names taken out, times seen):", ""]
            lines += [f"- ×{n} {why}" for why, n in e["reasons"]]
            lines.append("")
        for kind in ("false_safe", "missed"):
            for m in o.get(kind, []):
                lines.append(f"- {kind.replace('_', ' ')}: {m}")
        lines.append("")
    Path(a.out).write_text("\n".join(lines))
    print(f"wrote {a.out}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clones", required=True)
    ap.add_argument("--bin", default=str(ROOT / "target" / "release" / "fluxwave"))
    ap.add_argument("--oracle", default=str(ROOT / "target" / "flux-oracle" / "flux-oracle"))
    ap.add_argument("--list", default=str(ROOT / "bench" / "corpus.txt"))
    ap.add_argument("--commits", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=5,
                    help="runs of each timed command; its CPU is the least of them")
    ap.add_argument("--oracle-steps", type=int, default=12)
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--out", default=str(ROOT / "CORPUS.md"))
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--refresh", action="store_true")
    ap.add_argument("--previous-bin")
    ap.add_argument("--commit", default=None,
                    help="the commit of this repository --bin was built from (default: HEAD)")
    a = ap.parse_args()
    a.commit = a.commit or git(ROOT, "rev-parse", "--short=10", "HEAD").strip()
    WORK.mkdir(parents=True, exist_ok=True)
    if a.oracle and not Path(a.oracle).exists():
        a.oracle = None
    listed = [line.split() for line in Path(a.list).read_text().splitlines() if line.strip() and not line.startswith("#")]
    results = []
    for name, pin in listed:
        saved = WORK / (name.replace("/", "+") + ".json")
        if not a.report_only and (not a.only or name in a.only):
            print(f"{name}…", flush=True)
            try:
                if a.refresh:
                    if not saved.exists():
                        continue
                    measured = refresh(a, name, pin, json.loads(saved.read_text()))
                else:
                    measured = measure(a, name, pin)
            except subprocess.CalledProcessError as e:
                # A clone that cannot give a revision's files (a fetched snapshot missing a
                # blob) is listed as not measured, with git's words, and the run goes on.
                why = (e.stderr or b"")
                why = why.decode(errors="replace") if isinstance(why, bytes) else why
                measured = {"repo": name, "pin": pin,
                            "not_measured": f'`{" ".join(map(str, e.cmd[3:5]))}` fails: {why.strip()[-300:]}'}
            saved.write_text(json.dumps(measured, indent=1))
        if saved.exists():
            results.append(json.loads(saved.read_text()))
    write_report(a, results)


if __name__ == "__main__":
    sys.exit(main())
