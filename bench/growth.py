#!/usr/bin/env python3
"""Growth of fluxwave's time from ×10 to ×100 of each public layout of bench/shapes.py.

    python3 bench/growth.py [--layouts ks-tree,operator,tenants] [--runs 5] [--low 10] [--high 100]

Times `check`, `build`, `cutover` and `diff` (HEAD~1..HEAD, the shape's own change) with Helm
rendering off, the two scales' runs interleaved (low, high, low, high, ...) so that the ratio
compares runs made under the same conditions of the machine. Prints a Markdown table: medians,
min–max, the growth, and the peak RSS at the high scale. The shapes are made (and cached) as
bench/run.py makes them.
"""
import argparse
import statistics

import peers
from run import FLUXWAVE, machine, run_once

COMMANDS = {
    "check": ["check"],
    "build": ["build"],
    "cutover": ["cutover", "--from", "HEAD~1", "--to", "HEAD"],
    "diff": ["diff", "--from", "HEAD~1", "--to", "HEAD"],
}


def timed(cmd, runs, low, high):
    """`runs` interleaved runs of `cmd` on both repositories: ([low times], [high times], high
    peak MiB)."""
    times = {low: [], high: []}
    peak = 0.0
    for _ in range(runs):
        for repo in (low, high):
            t, mib, code, err = run_once([FLUXWAVE, "--repo", repo, "--color", "never", "--no-helm", *cmd])
            if code not in (0, 1):
                raise SystemExit(f"fluxwave {' '.join(cmd)} on {repo}: exit {code}\n{err}")
            times[repo].append(t)
            if repo == high:
                peak = max(peak, mib)
    return times[low], times[high], peak


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layouts", default="ks-tree,operator,tenants")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--low", type=int, default=10)
    ap.add_argument("--high", type=int, default=100)
    a = ap.parse_args()
    print(f"Growth from ×{a.low} to ×{a.high}, fluxwave `--no-helm`, medians of {a.runs} runs in turns "
          f"(min–max); {machine()}.\n")
    print("| shape | " + " | ".join(COMMANDS) + f" | peak at ×{a.high} |")
    print("|---|" + "---|" * (len(COMMANDS) + 1))
    worst = 0.0
    for layout in a.layouts.split(","):
        infos = []
        for scale in (a.low, a.high):
            info, why = peers.shape(layout, scale, log=lambda *_: None)
            if info is None:
                raise SystemExit(f"{layout} ×{scale}: {why}")
            infos.append(info)
        low, high = (i["path"] for i in infos)
        cells, peak = [], 0.0
        for cmd in COMMANDS.values():
            lo, hi, mib = timed(cmd, a.runs, low, high)
            g = statistics.median(hi) / statistics.median(lo)
            worst = max(worst, g)
            peak = max(peak, mib)
            cells.append(f"{statistics.median(lo):.3f} ({min(lo):.3f}–{max(lo):.3f}) → "
                         f"{statistics.median(hi):.3f} ({min(hi):.3f}–{max(hi):.3f}) s (**{g:.1f}×**)")
        sizes = " → ".join(f"{i['kustomizations']:,}" for i in infos)
        print(f"| {layout} ({sizes} Kustomizations) | " + " | ".join(cells) + f" | {peak:.0f} MiB |")
    print(f"\nLargest growth: {worst:.2f}× (target ≤ 12×).")


if __name__ == "__main__":
    main()
