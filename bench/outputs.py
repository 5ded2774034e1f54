#!/usr/bin/env python3
"""Every output of a fluxwave binary, captured to files, so that two builds can be compared byte for byte.

    python3 bench/outputs.py --bin PATH/TO/fluxwave --out DIR [--force]
    python3 bench/outputs.py --compare DIR_A DIR_B          # or: diff -r DIR_A DIR_B

Why: a refactoring (moving modules, splitting files) must not change what the tool prints,
writes or exits with. Run this once with the binary built before the change and once with the
binary built after it, then compare the two folders: any difference is a change of behaviour.

What it runs (sequentially, stdlib only): every command (init, render, waves, plan, apply,
check, cutover, build, diff, blast, schema, the help and version texts, usage errors) in every
output format, on
  - examples/homelab, flat (commit 1), and applied (`apply` on a copy, committed as commit 2):
    the read-only commands on both, apply / apply --dry-run on both, render of every catalog
    file (default output, -o, --wave-layout, --no-image-automation), cutover and check --base
    between the two commits in both directions;
  - every folder of tests/fixtures/check/ (one small repository per lint code) and
    tests/fixtures/render/ (render of each catalog file with and without --wave-layout, -o a
    fresh folder);
  - a repository of ../shared/bench/gen_repo.py (--services 1000 --git; generated once and
    cached under --gen), flat and applied, like homelab;
  - each --public clone (a real Flux repository, no fluxwave.yaml) at its HEAD: the read-only
    commands, cutover --each over its last 10 commits, cutover/diff/check --base against
    HEAD~10 and HEAD~1, and init, all --offline;
  - error cases: homelab copies edited by this script (a dependency cycle, an unknown
    dependency, YAML syntax errors, a file no unit owns, a duplicate file), revisions that do
    not exist, a folder that is not a git repository, a folder that does not exist, usage
    errors.
Each case writes DIR/<case>.out (stdout), DIR/<case>.err (stderr), DIR/<case>.code (exit
status, or `signal N` / `timeout`), and, for cases that may write (apply, apply --dry-run,
render), DIR/<case>.tree: every file and folder of the resulting tree (`.git` left out),
sorted, with its type, mode, size and sha256, or its symlink target. Every read-only group ends
with DIR/<group>__untouched.tree, the tree its read-only cases ran on, afterwards (a read-only
command that writes shows up there). DIR/CASES lists every case with its cwd and command line;
DIR/INPUTS the hashes of every input, so a difference in inputs is visible as such.

Determinism: each repository is copied fresh (for every case that may write) into a FIXED path,
--work/repo/<name> (default /tmp/fwout/work/repo/<name>), so absolute paths in outputs are the
same in every run; compare only runs made with the same --work. Commits are made with a fixed
author, committer and date, so commit ids are reproducible. The binary runs with argv[0]
`fluxwave` (whatever its path), stdin /dev/null, a minimal fixed environment (NO_COLOR=1,
COLUMNS=100, TERM=dumb, LC_ALL=C.UTF-8, TZ=UTC, HOME and TMPDIR under --work, no global or
system git config, GIT_CEILING_DIRECTORIES at --work/repo), umask 022, cwd inside the
repository copy (a few cases use other cwds and an explicit --repo). No output is normalised:
nothing inherently nondeterministic was found in two runs of the same binary (timings and
temporary paths are not printed). A panic message carries the source file and line of the
panic, so a panic moves with the code even when nothing else changes. The run takes one lock
on --work, so two runs never share the working copies.

Size: about 720 cases; a run takes 1.5 to 2.5 minutes on 2 cores (most of it copying the
generated repository and the binary's render/check/cutover of it); the slowest cases are printed.
"""
import argparse
import difflib
import fcntl
import hashlib
import os
import shlex
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# ../shared/bench beside the checkout, or two levels up from a worktree (as bench/run.py).
SHARED = next((p for p in [ROOT.parent / "shared" / "bench", ROOT.parent.parent / "shared" / "bench"]
               if p.exists()), ROOT.parent / "shared" / "bench")

GIT_ENV = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "fluxwave-outputs", "GIT_AUTHOR_EMAIL": "[email protected]",
           "GIT_COMMITTER_NAME": "fluxwave-outputs", "GIT_COMMITTER_EMAIL": "[email protected]"}
DATE_FLAT, DATE_APPLIED, DATE_EDIT = "2024-01-01T00:00:00Z", "2024-01-02T00:00:00Z", "2024-01-03T00:00:00Z"
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

FORMATS = {"waves": ["text", "json", "markdown", "mermaid"], "plan": ["text", "json"],
           "check": ["text", "json", "github"], "build": ["yaml", "json"],
           "blast": ["text", "json", "markdown"], "cutover": ["text", "json"],
           "diff": ["text", "json", "github"]}
# the commands that compare two revisions: run by Harness.cutovers, not Harness.readonly
COMPARING = ("cutover", "diff")
SUBCOMMANDS = ["init", "render", "waves", "plan", "apply", "check", "cutover", "build", "diff", "blast",
               "cache", "completions", "man", "schema"]
GEN_SERVICES = 1000
EXTS = (".out", ".err", ".code", ".tree")


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def listing(root):
    """Every entry under root but a top-level .git, sorted: path, type, mode, size and sha256
    (files) or target (symlinks). Never follows a symlink."""
    root = Path(root)
    if not os.path.lexists(root):
        return f"# {root}: does not exist\n"
    lines = []
    for dirpath, dirnames, filenames in os.walk(root):
        if Path(dirpath) == root and ".git" in dirnames:
            dirnames.remove(".git")
        dirnames.sort()
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, root)
            st = os.lstat(p)
            mode = f"{stat.S_IMODE(st.st_mode):04o}"
            if stat.S_ISLNK(st.st_mode):
                lines.append(f"{rel}\tlink\t{mode}\t-> {os.readlink(p)}")
            elif stat.S_ISDIR(st.st_mode):
                lines.append(f"{rel}/\tdir\t{mode}")
            elif stat.S_ISREG(st.st_mode):
                lines.append(f"{rel}\tfile\t{mode}\t{st.st_size}\t{sha256_file(p)}")
            else:
                lines.append(f"{rel}\tother\t{stat.S_IFMT(st.st_mode):o}\t{mode}")
    lines.sort()
    return f"# {root}\n" + "".join(line + "\n" for line in lines)


def git(path, *args, date=None, capture=False):
    env = dict(os.environ, **GIT_ENV)
    if date:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    out = subprocess.run(["git", "-c", "commit.gpgsign=false", "-c", "core.autocrlf=false",
                          "-c", "core.hooksPath=/dev/null", "-c", "init.defaultBranch=main", *args],
                         cwd=path, env=env, check=True, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE if capture else subprocess.DEVNULL)
    return out.stdout.decode().strip() if capture else None


def commit(path, message, date, tag=None):
    """Commits everything under path (git init first if needed); returns the commit id."""
    if not (Path(path) / ".git").exists():
        git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-q", "--no-verify", "--allow-empty", "-m", message, date=date)
    if tag:
        git(path, "tag", tag)
    return git(path, "rev-parse", "HEAD", capture=True)


def copy_tree(src, dst):
    if os.path.lexists(dst):
        shutil.rmtree(dst)
    Path(dst).parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(src, dst, symlinks=True)


def edit(path, rel, old, new):
    """Replaces the one occurrence of old in path/rel by new (fails loudly if it is not there)."""
    p = Path(path) / rel
    text = p.read_text()
    if text.count(old) != 1:
        raise SystemExit(f"edit {p}: {old!r} occurs {text.count(old)} times")
    p.write_text(text.replace(old, new))


class Harness:
    def __init__(self, binary, out, work, timeout):
        self.bin, self.out, self.work, self.timeout = str(binary), Path(out), Path(work), timeout
        self.repos = self.work / "repo"   # the fixed paths the binary runs on
        self.states = self.work / "states"  # pristine snapshots, copied into repos/<name>
        self.live = {}                     # repos/<name> -> the state it holds, None if dirty
        self.names, self.manifest, self.times = set(), [], []
        self.env = {"PATH": PATH, "HOME": str(self.work / "home"), "TMPDIR": str(self.work / "tmp"),
                    "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TZ": "UTC", "NO_COLOR": "1",
                    "COLUMNS": "100", "LINES": "40", "TERM": "dumb",
                    "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
                    "GIT_CEILING_DIRECTORIES": str(self.repos)}

    # --- repositories -------------------------------------------------------------------

    def state(self, name, state):
        return self.states / name / state

    def checkout(self, name, state, fresh):
        """repos/<name> holding states/<name>/<state>: copied again when fresh (a case that may
        write) or when it holds something else."""
        dst = self.repos / name
        if fresh or self.live.get(name) != state:
            copy_tree(self.state(name, state), dst)
        self.live[name] = None if fresh else state
        return dst

    def snapshot(self, name, state, src):
        copy_tree(src, self.state(name, state))

    # --- cases --------------------------------------------------------------------------

    def case(self, name, args, cwd, tree=None):
        """Runs `fluxwave ARGS` in cwd; tree: folders to list afterwards (the case may write)."""
        assert name not in self.names, name
        assert all(c.isalnum() or c in "-_+=@" for c in name), name
        self.names.add(name)
        argv = ["fluxwave", *map(str, args)]
        start = time.perf_counter()
        try:
            p = subprocess.run(argv, executable=self.bin, cwd=cwd, env=self.env,
                               stdin=subprocess.DEVNULL, capture_output=True, timeout=self.timeout)
            out, err = p.stdout, p.stderr
            code = str(p.returncode) if p.returncode >= 0 else f"signal {-p.returncode}"
        except subprocess.TimeoutExpired as e:
            out, err, code = e.stdout or b"", e.stderr or b"", "timeout"
        self.times.append((time.perf_counter() - start, name))
        (self.out / f"{name}.out").write_bytes(out)
        (self.out / f"{name}.err").write_bytes(err)
        (self.out / f"{name}.code").write_text(code + "\n")
        if tree is not None:
            roots = tree if isinstance(tree, list) else [tree]
            (self.out / f"{name}.tree").write_text("".join(listing(r) for r in roots))
        self.manifest.append(f"{name}\t{cwd}\t{shlex.join(argv)}\n")
        return code

    def untouched(self, group, path):
        (self.out / f"{group}__untouched.tree").write_text(listing(path))

    # --- suites -------------------------------------------------------------------------

    def readonly(self, group, name, state, extra=(), common=()):
        """Every format of waves, plan, check (and --deny warnings), build and blast (and each
        --topology) on one state; common: options given to every case (e.g. --offline)."""
        cwd = self.checkout(name, state, fresh=False)
        common = list(common)
        for cmd, formats in FORMATS.items():
            if cmd in COMPARING:
                continue
            self.case(f"{group}__{cmd}", [cmd, *common], cwd)
            for f in formats:
                self.case(f"{group}__{cmd}-{f}", [cmd, "--format", f, *common], cwd)
        for f in ("text", "json", "github"):
            self.case(f"{group}__check-{f}-deny-warnings", ["check", "--format", f, "--deny", "warnings", *common], cwd)
        for t in ("current", "waves", "units"):
            self.case(f"{group}__blast-topology-{t}-json", ["blast", "--topology", t, "--format", "json", *common], cwd)
        for case_name, args in extra:
            self.case(f"{group}__{case_name}", args, cwd)
        self.untouched(group, cwd)
        return cwd

    def writing(self, group, name, state, case_name, args, tree_extra=(), prepare=None):
        cwd = self.checkout(name, state, fresh=True)
        for extra in tree_extra:
            if os.path.lexists(extra):
                shutil.rmtree(extra)
        if prepare:
            prepare(cwd)
        self.case(f"{group}__{case_name}", args, cwd, tree=[cwd, *tree_extra])
        return cwd

    def cutovers(self, group, cwd, pairs, common=()):
        """pairs: (label, from, to or None); every format of cutover and diff, and check --base."""
        common = list(common)
        for label, rev_from, rev_to in pairs:
            to = ["--to", rev_to] if rev_to else []
            for cmd in COMPARING:
                self.case(f"{group}__{cmd}-{label}", [cmd, "--from", rev_from, *to, *common], cwd)
                for f in FORMATS[cmd]:
                    self.case(f"{group}__{cmd}-{label}-{f}", [cmd, "--from", rev_from, *to, "--format", f, *common], cwd)
            if not rev_to:
                for f in FORMATS["check"]:
                    self.case(f"{group}__check-base-{label}-{f}", ["check", "--base", rev_from, "--format", f, *common], cwd)


def homelab_like(h, group, name, flat_src, catalog_files, applied_date):
    """flat state (committed at flat_src), apply into the applied state (committed), and every
    command on both, cutover between them both ways."""
    c1 = git(flat_src, "rev-parse", "HEAD", capture=True)
    git(flat_src, "tag", "-f", "flat")
    h.readonly(f"{group}-flat", name, "flat")
    h.writing(f"{group}-flat", name, "flat", "init", ["init"])
    h.writing(f"{group}-flat", name, "flat", "init-catalog", ["init", "--catalog"],
              prepare=lambda cwd: (cwd / "fluxwave.yaml").unlink(missing_ok=True))
    h.writing(f"{group}-flat", name, "flat", "apply-dry-run", ["apply", "--dry-run"])
    live = h.writing(f"{group}-flat", name, "flat", "apply", ["apply"])
    h.snapshot(name, "applied", live)
    c2 = commit(h.state(name, "applied"), "fluxwave apply (bench/outputs.py)", applied_date, tag="applied")
    cwd = h.checkout(name, "flat", fresh=False)
    h.cutovers(f"{group}-flat", cwd, [("head", "HEAD", None)])
    h.untouched(f"{group}-flat-cutover", cwd)

    h.readonly(f"{group}-applied", name, "applied")
    h.writing(f"{group}-applied", name, "applied", "apply-dry-run", ["apply", "--dry-run"])
    h.writing(f"{group}-applied", name, "applied", "apply-again", ["apply"])
    cwd = h.checkout(name, "applied", fresh=False)
    h.cutovers(f"{group}-applied", cwd, [
        ("from-flat", c1, None),             # flat commit -> working tree (= applied)
        ("flat-to-applied", c1, c2),
        ("applied-to-flat", c2, c1),         # the other way: the rollback
        ("head", "HEAD", None),              # no change
        ("from-flat-tag", "flat", None),     # revisions by name
        ("head1-to-head", "HEAD~1", "HEAD"),
    ])
    h.untouched(f"{group}-applied-cutover", cwd)

    out = h.repos / name / "out"
    h.writing(f"{group}-flat", name, "flat", "render-all", ["render", *catalog_files])
    h.writing(f"{group}-flat", name, "flat", "render-all-o", ["render", *catalog_files, "-o", "./out"])
    h.writing(f"{group}-flat", name, "flat", "render-all-wave-layout-o",
              ["render", *catalog_files, "--wave-layout", "-o", "./out"])
    h.writing(f"{group}-flat", name, "flat", "render-all-no-image-automation-o",
              ["render", *catalog_files, "--no-image-automation", "-o", str(out)])
    h.writing(f"{group}-applied", name, "applied", "render-all-wave-layout",
              ["render", *catalog_files, "--wave-layout"])
    return c1, c2


def main_run(a):
    binary = Path(a.bin).resolve()
    if not os.access(binary, os.X_OK):
        raise SystemExit(f"{binary}: not an executable")
    out, work = Path(a.out).resolve(), Path(a.work).resolve()
    if out.exists() and any(out.iterdir()):
        if not a.force:
            raise SystemExit(f"{out} exists and is not empty (--force replaces it)")
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    lock = open(work.parent / f".{work.name}.lock", "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise SystemExit(f"another bench/outputs.py run is using {work}")
    os.umask(0o022)
    for sub in ("repo", "states", "home", "tmp"):
        if (work / sub).exists():
            shutil.rmtree(work / sub)
        (work / sub).mkdir(parents=True)
    h = Harness(binary, out, work, a.timeout)
    started = time.perf_counter()
    inputs = [f"git\t{subprocess.run(['git', '--version'], capture_output=True, text=True).stdout.strip()}\n"]

    def note_input(label, path):
        inputs.append(f"{label}\t{hashlib.sha256(listing(path).replace(str(path), '').encode()).hexdigest()}\n")

    def progress(msg):
        print(f"[{time.perf_counter() - started:7.1f}s] {msg}", file=sys.stderr, flush=True)

    # --- help, version, schema, usage errors (cwd: the flat homelab) -------------------------
    homelab_src = ROOT / "examples" / "homelab"
    note_input("examples/homelab", homelab_src)
    h.snapshot("homelab", "flat", homelab_src)
    c1 = commit(h.state("homelab", "flat"), "homelab before the wave migration", DATE_FLAT, tag="flat")
    progress("help, schema, usage")
    cwd = h.checkout("homelab", "flat", fresh=False)
    for case_name, args in [("help", ["--help"]), ("help-short", ["-h"]), ("version", ["--version"]),
                            ("help-subcommand", ["help"])]:
        h.case(f"cli__{case_name}", args, cwd)
    for sub in SUBCOMMANDS:
        h.case(f"cli__{sub}-help", [sub, "--help"], cwd)
        h.case(f"cli__{sub}-help-short", [sub, "-h"], cwd)
        h.case(f"cli__help-{sub}", ["help", sub], cwd)
    h.case("schema__default", ["schema"], cwd)
    for kind in ("service", "config"):
        h.case(f"schema__{kind}", ["schema", "--kind", kind], cwd)
    for case_name, args in [
        ("no-arguments", []), ("unknown-subcommand", ["bogus"]), ("unknown-flag", ["waves", "--bogus"]),
        ("waves-format-github", ["waves", "--format", "github"]),
        ("plan-format-markdown", ["plan", "--format", "markdown"]),
        ("check-format-mermaid", ["check", "--format", "mermaid"]),
        ("cutover-format-github", ["cutover", "--from", "HEAD", "--format", "github"]),
        ("check-deny-errors", ["check", "--deny", "errors"]), ("cutover-without-from", ["cutover"]),
        ("cutover-from-without-value", ["cutover", "--from"]), ("render-without-files", ["render"]),
        ("schema-kind-bogus", ["schema", "--kind", "bogus"]), ("repo-without-value", ["waves", "--repo"]),
        ("apply-extra-argument", ["apply", "extra"]), ("help-bogus", ["help", "bogus"]),
    ]:
        h.case(f"usage__{case_name}", args, cwd)
    h.untouched("cli", cwd)

    # --- homelab -----------------------------------------------------------------------------
    progress("homelab")
    catalog = sorted(f"catalog/{p.name}" for p in (homelab_src / "catalog").iterdir() if p.suffix == ".yaml")
    c1, c2 = homelab_like(h, "homelab", "homelab", h.state("homelab", "flat"), catalog, DATE_APPLIED)
    for f in catalog:
        stem = Path(f).stem
        h.writing("homelab-flat", "homelab", "flat", f"render-{stem}-o", ["render", f, "-o", "./out"])
        h.writing("homelab-flat", "homelab", "flat", f"render-{stem}-wave-layout-o",
                  ["render", f, "--wave-layout", "-o", "./out"])
    outside = work / "render-out"
    h.writing("homelab-flat", "homelab", "flat", "render-sonarr-o-outside",
              ["render", "catalog/sonarr.yaml", "-o", outside], tree_extra=[outside])
    h.writing("homelab-flat", "homelab", "flat", "render-both-flags-o",
              ["render", "catalog/nextcloud.yaml", "catalog/sonarr.yaml", "--wave-layout",
               "--no-image-automation", "-o", "./out"])
    h.writing("homelab-flat", "homelab", "flat", "render-twice-same-file-o",
              ["render", "catalog/sonarr.yaml", "catalog/sonarr.yaml", "-o", "./out"])
    # the spellings of a relative output folder: bare, nested, existing, with a trailing slash
    for case_name, dest, pre in [("bare", "out", None), ("nested", "a/b", None), ("trailing-slash", "out/", None),
                                 ("bare-existing", "out", "out"), ("nested-existing-parent", "a/b", "a"),
                                 ("dot-nested", "./a/b", None), ("dot", ".", None)]:
        h.writing("homelab-flat", "homelab", "flat", f"render-sonarr-o-{case_name}",
                  ["render", "catalog/sonarr.yaml", "-o", dest],
                  prepare=(lambda cwd, pre=pre: (cwd / pre).mkdir()) if pre else None)
    # other ways to name the repository: explicit --repo from elsewhere, after the subcommand,
    # relative, from a subfolder, absolute catalog paths
    live = h.checkout("homelab", "flat", fresh=False)
    for case_name, args, where in [
        ("repo-abs-waves", ["--repo", live, "waves"], "/"),
        ("repo-abs-check", ["--repo", live, "check"], "/"),
        ("repo-after-subcommand-plan", ["plan", "--repo", live], "/"),
        ("repo-relative-waves-json", ["--repo", "repo/homelab", "waves", "--format", "json"], work),
        ("repo-dot-check-json", ["--repo", ".", "check", "--format", "json"], live),
        ("cwd-subfolder-waves", ["waves"], live / "apps"),
        ("cwd-subfolder-check", ["check"], live / "catalog"),
    ]:
        h.case(f"homelab-flat__{case_name}", args, where)
    h.untouched("homelab-flat-repo-forms", live)
    live = h.checkout("homelab", "applied", fresh=False)
    h.case("homelab-applied__repo-abs-cutover", ["--repo", live, "cutover", "--from", c1, "--to", c2], "/")
    h.untouched("homelab-applied-repo-forms", live)
    live = h.checkout("homelab", "flat", fresh=False)
    h.writing("homelab-flat", "homelab", "flat", "render-abs-paths-repo-abs",
              ["--repo", live, "render", live / "catalog/gitea.yaml", "-o", live / "out"])
    h.writing("homelab-flat", "homelab", "flat", "render-outside-catalog",
              ["render", "apps/sonarr.yaml", "-o", "./out"])
    h.writing("homelab-flat", "homelab", "flat", "render-missing-file",
              ["render", "catalog/nope.yaml", "-o", "./out"])

    # --- error cases: homelab copies edited here, committed on top of the flat commit --------
    progress("error cases")
    broken = {
        "cycle": [("catalog/qbittorrent.yaml", "spec:\n", "spec:\n  dependencies:\n    - to: seerr\n")],
        "unknown-dependency": [("catalog/seerr.yaml", "    - to: radarr\n", "    - to: radarr\n    - to: sonnar\n")],
        "yaml-catalog": [("catalog/radarr.yaml", "  port: 7878\n", "  port: [7878\n")],
        "yaml-config": [("fluxwave.yaml", "    above: true\n", "    above: true\n  - name: [broken\n")],
        "yaml-environment": [("clusters/dev/kustomization.yaml", "patches:\n", "patches:\n\tbroken: true\n")],
        "unowned-file": [("apps/pihole.yaml", None, "apps/stray.yaml")],
        "duplicate-file": [("apps/pihole.yaml", None, "apps/wave-0/pihole.yaml")],
    }
    for label, edits in broken.items():
        name = f"err-{label}"
        state = h.state(name, "edited")
        copy_tree(h.state("homelab", "flat"), state)
        touched = []
        for rel, old, new in edits:
            if old is None:  # a copy of rel at new
                (state / new).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(state / rel, state / new)
                touched.append(new)
            else:
                edit(state, rel, old, new)
                touched.append(rel)
        commit(state, f"broken: {label}", DATE_EDIT)
        group = name
        h.readonly(group, name, "edited", extra=[
            ("cutover-from-flat", ["cutover", "--from", c1]),
            ("check-base-flat", ["check", "--base", c1]),
        ])
        h.writing(group, name, "edited", "apply", ["apply"])
        h.writing(group, name, "edited", "apply-dry-run", ["apply", "--dry-run"])
        files = [t for t in touched if t.startswith("catalog/")] or ["catalog/sonarr.yaml"]
        h.writing(group, name, "edited", "render-o", ["render", *files, "-o", "./out"])

    # revisions that do not exist, a folder that is not a git repository, one that does not exist
    cwd = h.checkout("homelab", "applied", fresh=False)
    for case_name, args in [
        ("cutover-from-unknown", ["cutover", "--from", "no-such-rev"]),
        ("cutover-from-unknown-json", ["cutover", "--from", "no-such-rev", "--format", "json"]),
        ("cutover-from-unknown-sha", ["cutover", "--from", "0" * 40]),
        ("cutover-to-unknown", ["cutover", "--from", c1, "--to", "no-such-rev"]),
        ("cutover-from-head-far", ["cutover", "--from", "HEAD~5"]),
        ("check-base-unknown", ["check", "--base", "no-such-rev"]),
        ("check-base-unknown-json", ["check", "--base", "no-such-rev", "--format", "json"]),
    ]:
        h.case(f"err-revision__{case_name}", args, cwd)
    h.untouched("err-revision", cwd)
    h.snapshot("err-not-git", "plain", homelab_src)
    cwd = h.checkout("err-not-git", "plain", fresh=False)
    for case_name, args in [
        ("cutover", ["cutover", "--from", "HEAD"]), ("cutover-json", ["cutover", "--from", "HEAD", "--format", "json"]),
        ("check-base", ["check", "--base", "HEAD"]), ("check", ["check"]), ("waves", ["waves"]),
        ("plan", ["plan"]),
    ]:
        h.case(f"err-not-git__{case_name}", args, cwd)
    h.untouched("err-not-git", cwd)
    h.writing("err-not-git", "err-not-git", "plain", "apply", ["apply"])
    missing = h.repos / "does-not-exist"
    for case_name, args in [("waves", ["waves"]), ("check", ["check"]), ("apply", ["apply"]),
                            ("cutover", ["cutover", "--from", "HEAD"]),
                            ("render", ["render", "catalog/sonarr.yaml", "-o", "./out"])]:
        h.case(f"err-missing-repo__{case_name}", ["--repo", missing, *args], h.repos)

    # --- tests/fixtures/check: one repository per lint code -----------------------------------
    progress("fixtures/check")
    for src in sorted((ROOT / "tests" / "fixtures" / "check").iterdir()):
        if not src.is_dir():
            continue
        note_input(f"tests/fixtures/check/{src.name}", src)
        name = f"check-{src.name}"
        h.snapshot(name, "committed", src)
        commit(h.state(name, "committed"), f"fixture {src.name}", DATE_FLAT)
        cwd = h.readonly(name, name, "committed")
        h.cutovers(name, cwd, [("head", "HEAD", None)])
        h.writing(name, name, "committed", "init", ["init"],
                  prepare=lambda cwd: (cwd / "fluxwave.yaml").unlink(missing_ok=True))
        h.writing(name, name, "committed", "apply", ["apply"])
        h.writing(name, name, "committed", "apply-dry-run", ["apply", "--dry-run"])

    # --- tests/fixtures/render: catalogs with expected outputs --------------------------------
    progress("fixtures/render")
    for src in sorted((ROOT / "tests" / "fixtures" / "render").iterdir()):
        if not src.is_dir():
            continue
        note_input(f"tests/fixtures/render/{src.name}", src)
        name = f"render-{src.name}"
        h.snapshot(name, "committed", src)
        commit(h.state(name, "committed"), f"fixture {src.name}", DATE_FLAT)
        files = sorted(f"catalog/{p.name}" for p in (src / "catalog").iterdir() if p.suffix == ".yaml")
        for f in files:
            stem = Path(f).stem
            h.writing(name, name, "committed", f"render-{stem}-o", ["render", f, "-o", "./out"])
            h.writing(name, name, "committed", f"render-{stem}-wave-layout-o", ["render", f, "--wave-layout", "-o", "./out"])
            h.writing(name, name, "committed", f"render-{stem}-no-image-automation-o",
                      ["render", f, "--no-image-automation", "-o", "./out"])
            h.writing(name, name, "committed", f"render-{stem}-both-flags-o",
                      ["render", f, "--wave-layout", "--no-image-automation", "-o", "./out"])
            h.writing(name, name, "committed", f"render-{stem}-o-abs", ["render", f, "-o", h.repos / name / "out"])
            h.writing(name, name, "committed", f"render-{stem}-o-bare", ["render", f, "-o", "out"])
            h.writing(name, name, "committed", f"render-{stem}", ["render", f])
        cwd = h.checkout(name, "committed", fresh=False)
        for case_name, args in [("waves", ["waves"]), ("waves-json", ["waves", "--format", "json"]),
                                ("plan", ["plan"]), ("check", ["check"])]:
            h.case(f"{name}__{case_name}", args, cwd)
        h.untouched(name, cwd)

    # --- a generated repository (../shared/bench/gen_repo.py) ---------------------------------
    progress(f"gen_repo.py --services {GEN_SERVICES}")
    gen_script = Path(a.gen_script).resolve()
    gen = Path(a.gen).resolve() / f"n{GEN_SERVICES}"
    key = f"{sha256_file(gen_script)} --services {GEN_SERVICES} --git\n"
    key_file = gen.parent / f"n{GEN_SERVICES}.key"
    if not (gen.exists() and key_file.exists() and key_file.read_text() == key):
        if gen.exists():
            shutil.rmtree(gen)
        gen.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, gen_script, gen, "--services", str(GEN_SERVICES), "--git"],
                       check=True, stdout=subprocess.DEVNULL)
        key_file.write_text(key)
    inputs.append(f"gen_repo.py\t{sha256_file(gen_script)}\n")
    inputs.append(f"gen n{GEN_SERVICES} HEAD\t{git(gen, 'rev-parse', 'HEAD', capture=True)}\n")
    note_input(f"gen n{GEN_SERVICES} tree", gen)
    name = "gen1000"
    h.snapshot(name, "flat", gen)
    catalog = sorted(f"catalog/{p.name}" for p in (gen / "catalog").iterdir() if p.suffix == ".yaml")
    homelab_like(h, name, name, h.state(name, "flat"), catalog, DATE_APPLIED)

    # --- public repositories (--public): clones of real Flux repositories, no fluxwave.yaml -----
    for src in a.public:
        src = Path(src).resolve()
        name = "public-" + "".join(c if c.isalnum() else "-" for c in src.name)
        progress(f"public {src}")
        head = git(src, "rev-parse", "HEAD", capture=True)
        inputs.append(f"{name} HEAD\t{head}\n")
        state = h.state(name, "head")
        state.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(src), str(state)], check=True,
                       env=dict(os.environ, **GIT_ENV))
        offline = ["--offline"]
        cwd = h.readonly(name, name, "head", common=offline, extra=[
            ("cutover-each-json", ["cutover", "--each", "HEAD~10..HEAD", "--format", "json", *offline]),
            ("cutover-each", ["cutover", "--each", "HEAD~10..HEAD", *offline]),
        ])
        h.cutovers(name, cwd, [("head10", "HEAD~10", None), ("head1-to-head", "HEAD~1", "HEAD")], common=offline)
        h.untouched(f"{name}-cutover", cwd)
        h.writing(name, name, "head", "init", ["init", *offline])

    (out / "CASES").write_text("".join(h.manifest))
    (out / "INPUTS").write_text("".join(inputs))
    total = time.perf_counter() - started
    slow = ", ".join(f"{n} {t:.2f}s" for t, n in sorted(h.times, reverse=True)[:5])
    print(f"{len(h.names)} cases in {total:.1f}s (binary time {sum(t for t, _ in h.times):.1f}s); "
          f"slowest: {slow}", file=sys.stderr)
    codes = {}
    for n in h.names:
        c = (out / f"{n}.code").read_text().strip()
        codes[c] = codes.get(c, 0) + 1
    print("exit codes: " + ", ".join(f"{c}: {k}" for c, k in sorted(codes.items())), file=sys.stderr)


def compare(a, b, context_lines):
    """Prints every case whose files differ between two output folders; 1 when any does."""
    a, b = Path(a), Path(b)

    def files(d):
        return {str(p.relative_to(d)) for p in d.rglob("*") if p.is_file()}

    fa, fb = files(a), files(b)
    by_case = {}
    for rel in sorted(fa | fb):
        case = next((rel[: -len(e)] for e in EXTS if rel.endswith(e)), rel)
        if rel not in fb:
            by_case.setdefault(case, []).append(f"{rel} only in {a}")
        elif rel not in fa:
            by_case.setdefault(case, []).append(f"{rel} only in {b}")
        elif (a / rel).read_bytes() != (b / rel).read_bytes():
            ta = (a / rel).read_bytes().decode(errors="replace").splitlines()
            tb = (b / rel).read_bytes().decode(errors="replace").splitlines()
            diff = list(difflib.unified_diff(ta, tb, str(a / rel), str(b / rel), lineterm="", n=1))
            shown = diff[:context_lines]
            more = f"\n    ... {len(diff) - len(shown)} more diff lines" if len(diff) > len(shown) else ""
            by_case.setdefault(case, []).append(f"{rel} differs:\n" + "\n".join("    " + d for d in shown) + more)
    for case, notes in by_case.items():
        print(f"DIFFERENT {case}")
        for n in notes:
            print(f"  {n}")
    ncases = len({next((r[: -len(e)] for e in EXTS if r.endswith(e)), r) for r in fa | fb})
    print(f"{len(by_case)} of {ncases} cases differ" if by_case
          else f"identical: {ncases} cases ({len(fa)} files, CASES and INPUTS included)")
    return 1 if by_case else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", help="the fluxwave binary to run")
    ap.add_argument("--out", help="the folder to write the outputs to (must be empty, or --force)")
    ap.add_argument("--force", action="store_true", help="replace a non-empty --out")
    ap.add_argument("--work", default="/tmp/fwout/work",
                    help="where the repository copies live (fixed: paths in outputs contain it)")
    ap.add_argument("--gen", default="/tmp/fwout/gen", help="cache of generated repositories")
    ap.add_argument("--gen-script", default=str(SHARED / "gen_repo.py"))
    ap.add_argument("--timeout", type=float, default=600, help="seconds per case")
    ap.add_argument("--public", action="append", default=[], metavar="CLONE",
                    help="a git clone of a public Flux repository to run every command on, at its HEAD "
                         "(repeatable; commands run with --offline, helm is not on the PATH)")
    ap.add_argument("--compare", nargs=2, metavar=("DIR_A", "DIR_B"),
                    help="compare two output folders instead: print differing cases, exit 1 if any")
    ap.add_argument("--diff-lines", type=int, default=30, help="diff lines shown per file in --compare")
    a = ap.parse_args(argv)
    if a.compare:
        return compare(*a.compare, a.diff_lines)
    if not a.bin or not a.out:
        ap.error("--bin and --out are required (or --compare A B)")
    main_run(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
