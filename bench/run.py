#!/usr/bin/env python3
"""Side-by-side benchmarks of fluxwave, the Python peer and kubectl kustomize.

    python3 bench/run.py [--sizes 1000,10000,100000] [--runs 5] [--large-runs 3] [--out BENCHMARKS.md]
                         [--against OTHER_BINARY]
                         [--shapes ks-tree,operator,tenants] [--scales 1,10,100] [--repo-dir DIR[:ENTRY]]...
                         [--flux2-src DIR] [--peer-limit 300] [--peer-runs N] [--helm off,on] [--no-peers]

Generates repositories with ../shared/bench/gen_repo.py (cached under target/bench/), then
times, in one run: `fluxwave waves`, `plan`, `apply` (on a fresh copy each time), `check`
(of the applied tree) and `cutover` between the flat and the applied commit (when the
binary has it); `baseline_render.py --print-waves` and `--emit-waves` (fresh copy each time);
`kubectl kustomize` of the flat app tier where it finishes within --kustomize-limit seconds;
and the floor: reading every byte of the tree once. Medians of --runs runs, peak memory of
each process (ru_maxrss), ratios against the peer. Writes a Markdown report.

Then, against the peers of issue 18 (bench/peers.py: flate, flux-local, `kubectl kustomize` of
each Flux Kustomization, got into target/bench/bin/ by the benchmark's own set-up), on the
generated repositories with a small change on top, the public layouts of bench/shapes.py
(--shapes at --scales) and the public clones of --repo-dir: the section "Against flate and
flux-local" of the report, with its own targets.
"""
import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import peers

ROOT = Path(__file__).resolve().parent.parent
# ../shared/bench beside the checkout, or two levels up from a worktree (/work/wt/<name>);
# FLUXWAVE_SHARED_BENCH overrides.
SHARED = next((p for p in [Path(os.environ.get("FLUXWAVE_SHARED_BENCH", "/nonexistent")),
                           ROOT.parent / "shared" / "bench", ROOT.parent.parent / "shared" / "bench"]
               if p.exists()), ROOT.parent / "shared" / "bench")
WORK = ROOT / "target" / "bench"
FLUXWAVE = ROOT / "target" / "release" / "fluxwave"
NOTES = "## Notes"


def run_once(cmd, cwd=None, setup=None, env=None):
    """Wall time (s) and peak RSS (MiB) of one process, its exit code and error output;
    setup() runs untimed first."""
    if setup:
        setup()
    # GNU time reports the command's own peak RSS (a forked Python child would inherit ours).
    start = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "%M", *map(str, cmd)], cwd=cwd, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    stderr = proc.stderr.decode(errors="replace").rstrip("\n").split("\n")
    peak_kib = int(stderr[-1]) if stderr and stderr[-1].isdigit() else 0
    return elapsed, peak_kib / 1024, proc.returncode, "\n".join(stderr[:-1])


def measure(cmd, runs, ok_codes=(0,), setup=None, cwd=None):
    times, mems = [], []
    for _ in range(runs):
        t, m, code, err = run_once(cmd, cwd=cwd, setup=setup)
        if code not in ok_codes:
            raise SystemExit(f"{' '.join(map(str, cmd))}: exit {code}\n{err}")
        times.append(t)
        mems.append(m)
    return statistics.median(times), max(mems)


def measure_together(specs, runs):
    """`measure` of several commands, their runs interleaved (A B A B ...), so that a ratio
    between them compares runs made under the same conditions of the machine."""
    samples = [([], []) for _ in specs]
    for _ in range(runs):
        for spec, (times, mems) in zip(specs, samples):
            t, m, code, err = run_once(spec["cmd"], setup=spec.get("setup"))
            if code not in spec.get("ok_codes", (0,)):
                raise SystemExit(f"{' '.join(map(str, spec['cmd']))}: exit {code}\n{err}")
            times.append(t)
            mems.append(m)
    return [(statistics.median(times), max(mems)) for times, mems in samples]


def fresh_copy(src, dst):
    def setup():
        if dst.exists():
            shutil.rmtree(dst)
        shutil.copytree(src, dst, symlinks=True)
        # Write the copy back before the clock starts: otherwise the kernel flushes a
        # 2 GiB tree during the timed run and bills it to whichever command runs then.
        os.sync()
    return setup


def read_floor(repo, runs):
    """Median time to read every file of the tree once (the floor for any tool), and its MiB."""
    return peers.read_floor(repo, runs)[:2]


def has_command(name):
    out = subprocess.run([str(FLUXWAVE), "--help"], capture_output=True, text=True).stdout
    return any(line.strip().startswith(name + " ") for line in out.splitlines())


def generate(n):
    repo = WORK / f"repo-{n}"
    if not (repo / ".git").exists():
        if repo.exists():
            shutil.rmtree(repo)
        # Git's automatic gc runs in the foreground: detached, it is still repacking the
        # repository when the copy below reads it, and the copy fails on vanished objects.
        env = dict(os.environ, GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="gc.autoDetach", GIT_CONFIG_VALUE_0="false")
        subprocess.run([sys.executable, str(SHARED / "gen_repo.py"), str(repo), "--services", str(n), "--git"],
                       check=True, stdout=subprocess.DEVNULL, env=env)
    applied = WORK / f"applied-{n}"
    if not applied.exists():
        shutil.copytree(repo, applied, symlinks=True)
        subprocess.run([str(FLUXWAVE), "--repo", str(applied), "apply"], check=True, stdout=subprocess.DEVNULL)
        git = ["git", "-C", str(applied), "-c", "user.name=bench", "-c", "user.email=bench@fluxwave.dev"]
        subprocess.run(git + ["add", "-A"], check=True)
        subprocess.run(git + ["commit", "-q", "--no-verify", "-m", "waves"], check=True)
    if not any((applied / ".git" / "objects" / "pack").glob("*.pack")):
        # gen_repo.py leaves every git object loose (261,809 files at 100,000 services); a
        # clone, which is what CI runs cutover on, holds them packed.
        subprocess.run(["git", "-C", str(applied), "repack", "-a", "-d", "-q"], check=True)
    return repo, applied


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--large-runs", type=int, help="runs at 100,000 services and more (default: --runs)")
    ap.add_argument("--kustomize-limit", type=float, default=180.0)
    ap.add_argument("--out", default=str(ROOT / "BENCHMARKS.md"))
    ap.add_argument("--against", metavar="BIN",
                    help="another fluxwave binary (an earlier build): its plan, check and cutover run in "
                         "turns with this build's, and the report gains a table of the two")
    ap.add_argument("--peer-sizes", help="the generated repositories timed against the peers (default: --sizes)")
    ap.add_argument("--shapes", default="", help="public layouts of bench/shapes.py, e.g. ks-tree,operator,tenants")
    ap.add_argument("--scales", default="1,10,100", help="the scales --shapes are made at")
    ap.add_argument("--repo-dir", action="append", default=[], metavar="DIR[:ENTRY]",
                    help="a public clone (repeatable): its HEAD~1..HEAD is the change the diffs compare; "
                         "ENTRY, the Flux entry folder, is guessed when not given")
    ap.add_argument("--flux2-src", metavar="DIR", help="a clone of fluxcd/flux2 to build the flux CLI from "
                    "(flux-local shells out to it; `go install` of it is refused)")
    ap.add_argument("--peer-limit", type=float, default=300.0, help="seconds a peer command may take (then: over the limit)")
    ap.add_argument("--peer-runs", type=int, help="runs of each command against the peers (default: --runs)")
    ap.add_argument("--helm", default="off,on", help="Helm rendering modes against the peers")
    ap.add_argument("--helm-max-scale", type=int, default=10,
                    help="Helm rendering on only for the shapes of bench/shapes.py up to this scale (their charts "
                         "are in the tree); the public clones' charts cannot be pulled offline")
    ap.add_argument("--no-peers", action="store_true", help="leave the peers out")
    a = ap.parse_args()
    if not SHARED.exists():
        raise SystemExit(f"{SHARED} not found: the benchmarks need the shared bench scripts")
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    WORK.mkdir(parents=True, exist_ok=True)
    cutover = has_command("cutover")
    # --kustomize-limit 0 leaves kubectl kustomize out.
    rows, kustomize_ok = [], a.kustomize_limit > 0
    for n in [int(s) for s in a.sizes.split(",") if s]:
        repo, applied = generate(n)
        runs = a.runs if n < 100_000 or a.large_runs is None else a.large_runs
        scratch = WORK / f"scratch-{n}"
        r = {"n": n}
        r["floor"] = read_floor(repo, runs)
        peer = [sys.executable, SHARED / "baseline_render.py"]
        # Each fluxwave command and the peer command it is compared with run in turns.
        r["waves"], r["print"] = measure_together([
            {"cmd": [FLUXWAVE, "--repo", repo, "waves"]},
            {"cmd": peer + [repo, "--print-waves"]},
        ], runs)
        r["plan"] = measure([FLUXWAVE, "--repo", repo, "plan"], runs)
        if a.against:
            r["against"] = against(Path(a.against), repo, applied, runs)
        r["apply"], r["emit"] = measure_together([
            {"cmd": [FLUXWAVE, "--repo", scratch, "apply"], "setup": fresh_copy(repo, scratch)},
            {"cmd": peer + [scratch, "--emit-waves"], "setup": fresh_copy(repo, scratch)},
        ], runs)
        # exit 1 is findings (gen_repo.py writes image markers without ImagePolicies), not failure
        r["check"] = measure([FLUXWAVE, "--repo", applied, "check"], runs, ok_codes=(0, 1))
        if cutover:
            r["cutover"] = measure([FLUXWAVE, "--repo", applied, "cutover", "--from", "HEAD~1", "--to", "HEAD"],
                                   runs, ok_codes=(0, 1))
        if kustomize_ok:
            t, m, code, err = run_once(["kubectl", "kustomize", str(repo / "apps")])
            if code != 0:
                raise SystemExit(f"kubectl kustomize: {err}")
            r["kustomize"] = (t, m)
            kustomize_ok = t < a.kustomize_limit / 10  # the next size is ~10x larger
        shutil.rmtree(scratch, ignore_errors=True)
        rows.append(r)
        print(f"{n}: " + ", ".join(f"{k} {v[0]:.3f}s" for k, v in r.items() if k != "floor" and isinstance(v, tuple)), flush=True)
    sizes = [int(s) for s in a.peer_sizes.split(",") if s] if a.peer_sizes is not None else [r["n"] for r in rows]
    section = [] if a.no_peers else against_peers(a, sizes)
    write_report(Path(a.out), rows, cutover, a.runs, a.large_runs or a.runs, a.against, section)


def against_peers(a, sizes):
    """The report's section against flate, flux-local and kubectl kustomize."""
    tools, missing = peers.setup(a.flux2_src)
    infos, skipped = [], []
    for n in sizes:
        repo, _ = generate(n)
        infos.append(peers.generated_pr(repo, n))
    for layout in [s for s in a.shapes.split(",") if s]:
        for k in [int(s) for s in a.scales.split(",") if s]:
            info, why = peers.shape(layout, k)
            if info:
                info["name"] = f"{layout} ×{k}"
                infos.append(info)
            else:
                skipped.append((f"{layout} ×{k}", why))
    infos += [peers.public(d) for d in a.repo_dir]
    results = []
    for info in infos:
        runs = a.peer_runs or (a.runs if (info.get("scale") or 0) < 100_000 or a.large_runs is None else a.large_runs)
        modes = [m for m in a.helm.split(",") if m]
        if info.get("layout") not in a.shapes.split(",") or (info.get("scale") or 0) > a.helm_max_scale:
            modes = [m for m in modes if m != "on"]
        results.append(peers.run_shape(info, tools, runs, a.peer_limit, modes))
    return peers.report(results, tools, missing, a.peer_runs or a.runs, a.peer_limit, machine(), skipped)


def machine():
    cpu = next((l.split(":", 1)[1].strip() for l in Path("/proc/cpuinfo").read_text().splitlines()
                if l.startswith("model name")), platform.processor())
    kv = subprocess.run(["kubectl", "version", "--client"], capture_output=True, text=True).stdout.split("\n")
    mem = next((int(l.split()[1]) / 2**20 for l in Path("/proc/meminfo").read_text().splitlines()
                if l.startswith("MemTotal:")), 0)
    return (f"{cpu}, {os.cpu_count()} cores, {mem:.0f} GiB, Linux {platform.release()}; "
            f"{platform.python_implementation()} {platform.python_version()}; "
            + "; ".join(l.strip() for l in kv if l.strip()))


def against(other, repo, applied, runs):
    """The headline commands of this build and of `other`, in turns: {cmd: (ours, theirs)}.
    `apply` runs each time on a fresh copy of the flat tree, one copy per binary."""
    out = {}
    scratch = {b: WORK / f"against-{i}" for i, b in enumerate((FLUXWAVE, other))}
    for name, args, codes in [
        ("waves", ["--repo", repo, "waves"], (0,)),
        ("plan", ["--repo", repo, "plan"], (0,)),
        ("apply", None, (0,)),
        ("check", ["--repo", applied, "check"], (0, 1)),
        ("cutover", ["--repo", applied, "cutover", "--from", "HEAD~1", "--to", "HEAD"], (0, 1)),
    ]:
        specs = []
        for b in (FLUXWAVE, other):
            if args is None:
                specs.append({"cmd": [b, "--repo", scratch[b], "apply"], "ok_codes": codes,
                              "setup": fresh_copy(repo, scratch[b])})
            else:
                specs.append({"cmd": [b, *args], "ok_codes": codes})
        out[name] = tuple(measure_together(specs, runs))
    for d in scratch.values():
        shutil.rmtree(d, ignore_errors=True)
    return out


def fmt(v):
    return "—" if v is None else f"{v[0]:.3f} s / {v[1]:.0f} MiB"


def write_report(out, rows, cutover, runs, large_runs, other=None, section=()):
    lines = [
        "# Benchmarks",
        "",
        "Made by `python3 bench/run.py` (repositories from `../shared/bench/gen_repo.py`, seed 0,",
        f"max 3 dependencies). Median of {runs} runs"
        + (f" ({large_runs} at 100,000)" if large_runs != runs else "") + ", wall time / peak memory of",
        "the process. `waves` and `--print-waves` run in turns, as do `apply` and `--emit-waves`, each",
        "on a fresh copy; `check` and `cutover` on the applied tree (cutover between the flat commit",
        "and the applied one, its git objects packed as in a clone).",
        "",
        f"Machine: {machine()}.",
        "",
        "| services | files / MiB | floor (read every byte) | fluxwave waves | peer --print-waves | ratio | "
        "fluxwave plan | fluxwave apply | peer --emit-waves | ratio | fluxwave check | "
        + ("fluxwave cutover | " if cutover else "") + "kubectl kustomize apps/ |",
        "|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if cutover else "") + "---|",
    ]
    for r in rows:
        files = sum(1 for _ in (WORK / f"repo-{r['n']}").rglob("*.yaml"))
        lines.append(
            f"| {r['n']:,} | {files:,} / {r['floor'][1]:.1f} | {r['floor'][0]:.3f} s | {fmt(r['waves'])} | "
            f"{fmt(r['print'])} | {r['print'][0] / r['waves'][0]:.1f}× | {fmt(r['plan'])} | {fmt(r['apply'])} | "
            f"{fmt(r['emit'])} | {r['emit'][0] / r['apply'][0]:.1f}× | {fmt(r['check'])} | "
            + (f"{fmt(r.get('cutover'))} | " if cutover else "") + f"{fmt(r.get('kustomize'))} |")
    lines.append("")
    if other:
        lines += [f"Against `{other}`, run in turns with this build (this build / the other, and the ratio "
                  "of their times):", "",
                  "| services | command | this build | the other | this / other |", "|---|---|---|---|---|"]
        for r in rows:
            for cmd, (ours, theirs) in r["against"].items():
                lines.append(f"| {r['n']:,} | `{cmd}` | {fmt(ours)} | {fmt(theirs)} | {ours[0] / theirs[0]:.2f} |")
        lines.append("")
    lines += targets({r["n"]: r for r in rows}, cutover)
    lines += section
    # The hand-written analysis (from "## Notes" on) survives a new run.
    old = out.read_text() if out.exists() else ""
    notes = old[old.index(NOTES):] if NOTES in old else ""
    out.write_text("\n".join(lines) + "\n" + notes)
    print(f"wrote {out}")


def targets(by_n, cutover):
    """The targets of the speed issue, each judged from this run's numbers."""
    commands = ["waves", "plan", "apply", "check"] + (["cutover"] if cutover else [])
    verdict = lambda ok: "met" if ok else "**missed**"
    out = ["## Targets", "", "| target | this run | verdict |", "|---|---|---|"]
    if 10_000 in by_n:
        r = by_n[10_000]
        ratio = r["print"][0] / r["waves"][0]
        out.append(f"| `waves` ≥ 30× faster than `--print-waves` at 10,000 | {ratio:.1f}× "
                   f"({r['waves'][0]:.3f} s vs {r['print'][0]:.3f} s) | {verdict(ratio >= 30)} |")
    for n, r in sorted(by_n.items()):
        ratio = r["emit"][0] / r["apply"][0]
        out.append(f"| `apply` ≥ 10× faster than `--emit-waves` at {n:,} | {ratio:.1f}× "
                   f"({r['apply'][0]:.3f} s vs {r['emit'][0]:.3f} s) | {verdict(ratio >= 10)} |")
    if 10_000 in by_n and by_n.get(1_000, {}).get("kustomize"):
        c, k = by_n[10_000]["check"][0], by_n[1_000]["kustomize"][0]
        out.append(f"| `check` of 10,000 faster than `kubectl kustomize` of the 1,000-service app tier | "
                   f"{c:.3f} s vs {k:.3f} s | {verdict(c < k)} |")
    if 10_000 in by_n and 100_000 in by_n:
        for cmd in commands:
            g = by_n[100_000][cmd][0] / by_n[10_000][cmd][0]
            out.append(f"| growth of `{cmd}` from 10,000 to 100,000 ≤ 12× | {g:.2f}× "
                       f"({by_n[10_000][cmd][0]:.3f} s → {by_n[100_000][cmd][0]:.3f} s) | {verdict(g <= 12)} |")
    if 100_000 in by_n:
        for cmd in commands:
            m = by_n[100_000][cmd][1]
            out.append(f"| peak memory of `{cmd}` < 1 GiB at 100,000 | {m:.0f} MiB | {verdict(m < 1024)} |")
    return out + [""]


if __name__ == "__main__":
    main()
