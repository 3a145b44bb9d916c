#!/usr/bin/env python3
"""Benchmark: bport apply against git cherry-pick on a real project's history.

The synthetic benchmark (benches/backport.py) has one-line edits of small files in a flat tree; real commits touch
bigger files, more of them, in deeper trees. This one takes a real repository and, for each scenario, picks 300
consecutive non-merge commits of a release cycle onto the release that opened it, with `-x -X theirs`:

  onto-release   the first 300 commits of the cycle onto its release tag (every pick lands on its own parent's tree)
  50-missing     commits 51..350 onto the same tag: the first 50 are missing, so touched files really merge

and times, on fresh clones of the same repository in the same run (bport and git alternate, REPEAT times):

  bport apply -x -X theirs <list>                        (release build of this crate)
  git cherry-pick -x -X theirs --empty=drop <commits>    (the same list, the same start)
  git replay --onto <tag> <first>^..<last>               (merge-ort in memory: no -x, no stop, no applied-detection)

It checks that bport's final commit is git's, byte for byte (same trees, authors, dates, messages with -x; both run
with the same fixed committer and date), and prints bport's phase breakdown (its `BPORT_LOG=info` timing line:
match, merge, object writes, materialization).

The repository: any clone with tags, its path in BPORT_REAL_REPO, e.g.

  git clone https://github.com/curl/curl /tmp/curl
  BPORT_REAL_REPO=/tmp/curl python3 benches/real_history.py

Defaults fit curl (BPORT_REAL_FROM=curl-8_11_0, BPORT_REAL_TO=curl-8_12_0); for another project set both to two
release tags of a linear stretch of history. Without BPORT_REAL_REPO the script says so and exits 0 (skipped).
CPU time (user + sys of the tool's processes) is the figure to compare: the machine is shared.
"""
import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import git_env, git_runner

N = 300
ENV = git_env()
git = git_runner(ENV)


def timed(fn):
    """(CPU seconds of the child processes, wall seconds, fn's result)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = fn()
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), wall, r


def clone(src, dst, start):
    """A work tree at `start` on branch `port`, objects shared with `src` (nothing copied, nothing repacked)."""
    subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", src, dst], env=ENV, check=True)
    git(dst, "config", "user.name", "Bench Committer")
    git(dst, "config", "user.email", "bench@example.com")
    git(dst, "checkout", "-q", "-f", "-B", "port", start)
    # A fresh checkout is "racily clean" (files as new as the index), so the first status would re-hash every
    # file in whichever tool runs first; a user's worktree is not. Let the clock move on and refresh the index.
    time.sleep(1.1)
    git(dst, "update-index", "-q", "--refresh", check=False)
    return dst


PHASES = re.compile(r"apply timing: (.*)")


def phases_of(stderr):
    """bport's `apply timing: match 1.2 ms, merge 3.4 ms, ...` line as {phase: ms}."""
    m = PHASES.search(stderr)
    if not m:
        return {}
    out = {}
    for part in m.group(1).split(","):
        name, value, _unit = part.strip().rsplit(" ", 2)
        out[name] = float(value)
    return out


def scenario(name, src, start, commits, bport, repeat, work):
    listing = os.path.join(work, f"{name}.txt")
    with open(listing, "w") as f:
        for c in commits:
            f.write(git(src, "log", "-1", "--format=%H %s", c))
    rows = {"bport": [], "git cherry-pick": [], "git replay": []}
    phases = []
    for r in range(repeat):
        a = clone(src, os.path.join(work, f"{name}-a{r}"), start)
        cpu, wall, p = timed(lambda: subprocess.run(
            [bport, "apply", "-q", "--yes", "-x", "-X", "theirs", listing], cwd=a,
            env=dict(ENV, BPORT_LOG="info"), capture_output=True, text=True))
        if p.returncode != 0:
            sys.exit(f"bport apply failed ({p.returncode}):\n{p.stderr}")
        rows["bport"].append((cpu, wall))
        phases.append(phases_of(p.stderr))

        b = clone(src, os.path.join(work, f"{name}-b{r}"), start)
        cpu, wall, _ = timed(lambda: git(b, "cherry-pick", "-x", "-X", "theirs", "--empty=drop", *commits))
        rows["git cherry-pick"].append((cpu, wall))

        ours, theirs = git(a, "rev-parse", "HEAD").strip(), git(b, "rev-parse", "HEAD").strip()
        if ours != theirs:
            diff = git(a, "diff", "--stat", theirs, ours, check=False)
            sys.exit(f"{name}: bport ended at {ours}, git cherry-pick at {theirs}\n{diff[:2000]}")
        if git(a, "status", "--porcelain", "--untracked-files=no"):
            sys.exit(f"{name}: bport left the worktree or index differing from HEAD")

        c = clone(src, os.path.join(work, f"{name}-c{r}"), start)
        # replay has no -X: on a series that conflicts it stops, and then it has no row.
        cpu, wall, r = timed(lambda: subprocess.run(
            ["git", "replay", "--onto", start, f"{commits[0]}^..{commits[-1]}"], cwd=c, env=ENV,
            capture_output=True))
        if r.returncode == 0:
            rows["git replay"].append((cpu, wall))
        for d in (a, b, c):
            shutil.rmtree(d)
    n = len(commits)
    print(f"\n{name}: {n} picks onto {start}, {repeat} runs; bport's final commit == git cherry-pick's in every run")
    print(f"  {'tool':<18} {'ms/pick CPU (min / median / max)':<36} {'wall median':<12} git / tool (CPU, per run)")
    cp = [c for c, _ in rows["git cherry-pick"]]
    for tool, vals in rows.items():
        if not vals:
            print(f"  {tool:<18} (stops at a conflict: it has no -X theirs)")
            continue
        cpus = [c for c, _ in vals]
        walls = [w for _, w in vals]
        per = " / ".join(f"{1000 * x / n:.2f}" for x in (min(cpus), statistics.median(cpus), max(cpus)))
        ratios = ", ".join(f"{g / c:.1f}x" for g, c in zip(cp, cpus))
        print(f"  {tool:<18} {per:<36} {1000 * statistics.median(walls) / n:<12.2f} {ratios}")
    if phases and all(phases):
        keys = list(phases[0])
        print("  bport phases, ms per pick (median of runs): " + ", ".join(
            f"{k} {statistics.median(p.get(k, 0.0) for p in phases) / n:.3f}" for k in keys))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bport", default=os.path.join(os.path.dirname(__file__), "..", "target", "release", "bport"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", help="run only this scenario (onto-release or 50-missing)")
    args = ap.parse_args()
    src = os.environ.get("BPORT_REAL_REPO")
    if not src:
        print("SKIPPED: set BPORT_REAL_REPO to a clone of a real project, e.g.\n"
              "  git clone https://github.com/curl/curl /tmp/curl\n"
              "  BPORT_REAL_REPO=/tmp/curl python3 benches/real_history.py")
        return
    frm = os.environ.get("BPORT_REAL_FROM", "curl-8_11_0")
    to = os.environ.get("BPORT_REAL_TO", "curl-8_12_0")
    bport = os.path.abspath(args.bport)
    cycle = git(src, "rev-list", "--reverse", "--no-merges", f"{frm}..{to}").split()
    if len(cycle) < N + 50:
        sys.exit(f"{frm}..{to} has {len(cycle)} non-merge commits; need {N + 50}")
    print(f"{src}: {frm}..{to}, {len(cycle)} non-merge commits; "
          f"{git(src, 'ls-tree', '-r', '--name-only', frm).count(chr(10))} files at {frm}; {git(src, 'version').strip()}")
    work = tempfile.mkdtemp(prefix="bport-real-")
    try:
        for name, commits in (("onto-release", cycle[:N]), ("50-missing", cycle[50:50 + N])):
            if args.only and args.only != name:
                continue
            scenario(name, src, frm, commits, bport, args.repeat, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
