#!/usr/bin/env python3
"""Every object Flux's own build code says a commit removes, held against what `fluxwave cutover`
reports for it, over the last N first-parent commits of a real repository.

    python3 bench/oracle_history.py --bin target/release/fluxwave \\
        --oracle target/flux-oracle/flux-oracle --repo CLONE --env PATH [--root FILE] [--commits 300]

Why: `bench/history.py` checks each reported deletion against the diff; this checks the other
way, that no deletion is missed. For each pair (parent, commit) whose diff touches a YAML file,
both revisions are exported (`git archive`) and built by the Flux oracle (tools/flux-oracle:
fluxcd/pkg/kustomize's generator, build and substitution, every Kustomization recursively from
the root at PATH). An object Flux applied in the parent and applies nowhere in the commit is
*removed* (a Flux Kustomization itself is wiring, counted apart, as cutover does not report
it); each removed object must be among fluxwave's deletions, or fluxwave's verdict must be
"incomplete" (it said it could not see everything). A pair where the oracle could not build a
Kustomization that fluxwave did is counted apart (the oracle reads no ExternalArtifact, no
Secret made in the cluster). The clone is never written.
"""

import argparse
import json
import subprocess
import sys
import tempfile


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True).stdout


def oracle_objects(a, rev):
    with tempfile.TemporaryDirectory() as d:
        archive = subprocess.run(["git", "-C", a.repo, "archive", rev], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", d], input=archive, check=True)
        args = [a.oracle, "-repo", d, "-env", a.env] + (["-root", a.root] if a.root else [])
        run = subprocess.run(args, capture_output=True, text=True)
        if run.returncode != 0:
            return None, run.stderr.strip()[-200:]
        doc = json.loads(run.stdout)
        objects = set()
        failed = []
        for k in doc["kustomizations"]:
            if k.get("error"):
                failed.append(f'{k["namespace"]}/{k["name"]}')
            for o in k.get("objects", []):
                objects.add(o)
        return objects, failed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--oracle", required=True)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--env", required=True)
    ap.add_argument("--root")
    ap.add_argument("--commits", type=int, default=300)
    ap.add_argument("--candidates", action="store_true",
                    help="compare only the pairs whose diff deletes a YAML file or edits a kustomization or ks.yaml "
                         "(on a repository of a hundred Kustomizations the oracle takes half a minute a revision)")
    a = ap.parse_args()

    commits = git(a.repo, "rev-list", "--first-parent", f"--max-count={a.commits + 1}", "HEAD").split()
    pairs = list(zip(commits[1:], commits[:-1]))
    stats = {"pairs": len(pairs), "no_yaml_change": 0, "compared": 0, "removed": 0, "reported": 0,
             "covered_by_incomplete": 0, "missed": 0, "oracle_failed": 0}
    missed = []
    cache = {}
    for parent, commit in pairs:
        changed = git(a.repo, "diff", "--no-renames", "--name-only", parent, commit).split("\n")
        if not any(c.endswith((".yaml", ".yml")) or c.endswith("Kustomization") or c.endswith(".sourceignore") for c in changed):
            stats["no_yaml_change"] += 1
            continue
        if a.candidates:
            deleted = git(a.repo, "diff", "--no-renames", "--name-only", "--diff-filter=D", parent, commit).split("\n")
            if not any(d.endswith((".yaml", ".yml")) for d in deleted) and not any(
                    c.rsplit("/", 1)[-1] in ("kustomization.yaml", "ks.yaml") for c in changed):
                stats["not_candidates"] = stats.get("not_candidates", 0) + 1
                continue
        for rev in (parent, commit):
            if rev not in cache:
                cache[rev] = oracle_objects(a, rev)
        (old, old_failed), (new, new_failed) = cache[parent], cache[commit]
        if old is None or new is None:
            stats["oracle_failed"] += 1
            continue
        stats["compared"] += 1
        # Flux's own wiring is not a deletion (the contract): what its removal does is.
        wiring = {o for o in old - new if o.startswith("kustomize.toolkit.fluxcd.io/Kustomization/")}
        stats["flux_wiring"] = stats.get("flux_wiring", 0) + len(wiring)
        removed = old - new - wiring
        stats["removed"] += len(removed)
        run = subprocess.run([a.bin, "--repo", a.repo, "cutover", "--from", parent, "--to", commit, "--format", "json"],
                             capture_output=True, text=True)
        if run.returncode not in (0, 1):
            missed.extend((commit[:10], o, "fluxwave exit 2") for o in removed)
            stats["missed"] += len(removed)
            continue
        doc = json.loads(run.stdout)
        reported = {f'{d["group"]}/{d["kind"]}/{d["namespace"]}/{d["name"]}' for d in doc["deletions"]}
        for o in sorted(removed):
            if o in reported:
                stats["reported"] += 1
            elif doc["verdict"] == "incomplete":
                stats["covered_by_incomplete"] += 1
            else:
                stats["missed"] += 1
                missed.append((commit[:10], o, f'verdict {doc["verdict"]}; oracle failed: {new_failed}'))
    print(json.dumps(stats, indent=2))
    for c, o, why in missed:
        print(f"missed: {c} {o} ({why})")


if __name__ == "__main__":
    sys.exit(main())
