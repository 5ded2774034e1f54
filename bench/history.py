#!/usr/bin/env python3
"""`fluxwave cutover` over the history of a real repository: every consecutive pair of its last
N first-parent commits, with the verdict of each, and each deletion checked against the
commit's diff.

    python3 bench/history.py --bin target/release/fluxwave --repo CLONE [--commits 300]
                             [--out FILE.json] [--show flagged|incomplete|all]

Why: a safety tool is measured on the repositories people have, not on its fixtures. For each
pair (parent, commit) this runs `cutover --from parent --to commit --format json` and records
the verdict (safe, deletes, incomplete; exit 2 is recorded as `error` with its message), the
deletions, the Kustomizations that made it incomplete and the time taken. A deletion is
*explained* by the diff when the file it is written in (in the parent) is among the paths the
commit changes (`git diff --name-only`); every other one (a removed owner, a deleted
Namespace, a changed patch or variable elsewhere) is printed for a look by hand. The summary counts the verdicts; `--show` prints the commits of
one kind with their deletions, for checking each against `git show --stat COMMIT`.

With `--each`, the same history is also judged by one `cutover --each OLDEST..HEAD`, and
every step's report is compared with the separate run's (they must be identical, byte for
byte as JSON values); its time is the median of `--each-runs` runs, and the time per commit
after the first is (time of the whole range - time of its first step alone) / (steps - 1).

Read-only: the clone is never written (cutover reads both revisions from git).
"""

import argparse
import json
import statistics
import subprocess
import sys
import time


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True).stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--commits", type=int, default=300)
    ap.add_argument("--out")
    ap.add_argument("--show", choices=["flagged", "incomplete", "all"])
    ap.add_argument("--each", action="store_true", help="compare with one `cutover --each` run and time it")
    ap.add_argument("--each-runs", type=int, default=3)
    a = ap.parse_args()

    commits = git(a.repo, "rev-list", "--first-parent", f"--max-count={a.commits + 1}", "HEAD").split()
    pairs = list(zip(commits[1:], commits[:-1]))
    results = []
    for parent, commit in pairs:
        start = time.monotonic()
        run = subprocess.run(
            [a.bin, "--repo", a.repo, "cutover", "--from", parent, "--to", commit, "--format", "json"],
            capture_output=True, text=True)
        took = time.monotonic() - start
        r = {"parent": parent, "commit": commit, "code": run.returncode, "seconds": round(took, 3),
             "subject": git(a.repo, "log", "-1", "--format=%s", commit).strip()}
        if run.returncode in (0, 1):
            doc = json.loads(run.stdout)
            changed = set(git(a.repo, "diff", "--no-renames", "--name-only", parent, commit).split("\n"))
            r["doc"] = doc
            r["verdict"] = doc["verdict"]
            r["environments"] = doc["environments"]
            r["deletions"] = [
                {"id": f'{d["kind"]}/{d["namespace"]}/{d["name"]}', "owner": d["owner"], "rule": d["rule"],
                 "file": d.get("file", ""), "data": d.get("data", ""),
                 "explained": d.get("file", "") in changed}
                for d in doc["deletions"]]
            r["incomplete"] = [f'{i["environment"]}:{i["kustomization"] or "(environment)"}' for i in doc["incomplete"]]
            r["why"] = [w for i in doc["incomplete"] for w in i["why"]][:3]
        else:
            r["verdict"] = "error"
            r["error"] = run.stderr.strip().splitlines()[-1] if run.stderr.strip() else ""
        results.append(r)

    counts = {}
    for r in results:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    unexplained = [(r["commit"][:10], d["id"]) for r in results for d in r.get("deletions", []) if not d["explained"]]
    summary = {
        "repo": a.repo, "pairs": len(results), "verdicts": counts,
        "deletions": sum(len(r.get("deletions", [])) for r in results),
        "unexplained": len(unexplained),
        "seconds": {"total": round(sum(r["seconds"] for r in results), 1),
                    "max": max((r["seconds"] for r in results), default=0)},
    }
    if a.each:
        summary["each"] = each(a, commits, results)
    print(json.dumps(summary, indent=2))
    for c, d in unexplained[:40]:
        print(f"unexplained: {c} {d}")
    if a.show:
        for r in results:
            if a.show == "all" or (a.show == "flagged" and r["verdict"] == "deletes") or (
                    a.show == "incomplete" and r["verdict"] == "incomplete"):
                print(f'\n{r["commit"][:10]} {r["verdict"]} {r["subject"]}')
                for d in r.get("deletions", []):
                    print(f'  {d["id"]} ({d["rule"]}, {d["data"]}) owner {d["owner"]} file {d["file"]}')
                for i in r.get("incomplete", []):
                    print(f"  incomplete: {i}")
                for w in r.get("why", []):
                    print(f"    {w[:200]}")
                if r.get("error"):
                    print(f'  error: {r["error"]}')
    for r in results:
        r.pop("doc", None)
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"summary": summary, "results": results}, f, indent=1)


def each(a, commits, results):
    """`cutover --each` over the whole history: its steps compared with the separate runs,
    and its time."""
    oldest, first = commits[-1], commits[-2]

    def timed(range_):
        times, out = [], None
        for _ in range(a.each_runs):
            start = time.monotonic()
            run = subprocess.run([a.bin, "--repo", a.repo, "cutover", "--each", range_, "--format", "json"],
                                 capture_output=True, text=True)
            times.append(time.monotonic() - start)
            if run.returncode not in (0, 1):
                raise SystemExit(f"cutover --each {range_}: exit {run.returncode}\n{run.stderr}")
            out = json.loads(run.stdout)
        return statistics.median(times), out

    whole, doc = timed(f"{oldest}..HEAD")
    alone, _ = timed(f"{oldest}..{first}")
    steps = doc["steps"]
    # `results` runs newest first; the steps oldest first.
    separate = list(reversed(results))
    mismatched = [r["commit"][:10] for r, s in zip(separate, steps) if r.get("doc") != s]
    if len(steps) != len(separate):
        mismatched.append(f"{len(steps)} steps for {len(separate)} pairs")
    n = len(steps)
    return {"steps": n, "mismatched": mismatched, "seconds": round(whole, 3),
            "first_step_seconds": round(alone, 3),
            "ms_per_commit_after_first": round((whole - alone) / max(n - 1, 1) * 1000, 2),
            "separate_ms_per_commit": round(sum(r["seconds"] for r in results) / max(len(results), 1) * 1000, 1)}


if __name__ == "__main__":
    sys.exit(main())
