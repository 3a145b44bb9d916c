#!/usr/bin/env python3
"""Benchmark: a backport that stops, resolved and resumed, `bport apply` against `git cherry-pick`.

A list of upstream commits is picked with the default strategy (no `-X`) onto an older release, so picks conflict
as a real backport does. Both tools run on fresh clones from the same start; at every stop the same resolution is
made in both by the same commands (each unmerged path takes the picked commit's side, stage 3, or is removed when
the commit deleted it), then the run goes on (`bport apply --continue`, `git cherry-pick --continue`; a pick that the
resolution leaves empty is dropped by both: bport at `--continue`, git by `--skip`). Only the tools' own processes
are timed: every `apply`/`--continue` call of bport against every `cherry-pick`/`--continue`/`--skip` call of git.
The script checks that both end on the same commit and stopped the same number of times.

The repository: a clone with tags, its path in BPORT_REAL_REPO; the list is the first N non-merge commits of
BPORT_STOPS_RANGE, picked onto BPORT_STOPS_ONTO. Defaults fit git.git:

  git clone https://github.com/git/git /tmp/git
  cargo build --release && BPORT_REAL_REPO=/tmp/git python3 benches/stops.py

(v2.41.0's cycle, v2.40.0..v2.41.0, onto v2.39.0). Without BPORT_REAL_REPO the script says so and exits 0.
"""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import git_env, git_runner

ENV = git_env(GIT_EDITOR="true")
git = git_runner(ENV)


class Clock:
    """Sums CPU (user + sys of child processes) and wall time of the tool calls made through it."""

    def __init__(self):
        self.cpu = 0.0
        self.wall = 0.0
        self.calls = 0
        self.per_call = []

    def run(self, argv, cwd):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        p = subprocess.run(argv, cwd=cwd, env=ENV, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        self.wall += wall
        self.cpu += cpu
        self.calls += 1
        self.per_call.append((cpu, wall))
        return p


def clone(src, dst, start):
    subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", src, dst], env=ENV, check=True)
    git(dst, "config", "user.name", "Bench Committer")
    git(dst, "config", "user.email", "bench@example.com")
    git(dst, "checkout", "-q", "-f", "-B", "port", start)
    # A fresh checkout is racily clean; let the clock move on and refresh, as a user's worktree would be.
    time.sleep(1.1)
    git(dst, "update-index", "-q", "--refresh", check=False)
    return dst


def resolve_taking_theirs(repo):
    """The policy of every stop: each unmerged path takes stage 3, or goes when the commit deleted it."""
    stages = {}
    for line in git(repo, "ls-files", "-u", "-z").split("\0"):
        if not line:
            continue
        meta, path = line.split("\t", 1)
        stages.setdefault(path, set()).add(meta.split()[2])
    for path, have in sorted(stages.items()):
        if "3" in have:
            git(repo, "checkout", "--theirs", "--", path)
            git(repo, "add", "--", path)
        else:
            git(repo, "rm", "-q", "--cached", "--", path)
            full = os.path.join(repo, path)
            if os.path.lexists(full):
                os.remove(full)
    return len(stages)


def run_bport(bport, repo, listing):
    clock = Clock()
    stops = 0
    p = clock.run([bport, "apply", "-q", "--yes", "-x", listing], repo)
    while p.returncode == 1:
        stops += 1
        resolve_taking_theirs(repo)
        p = clock.run([bport, "apply", "-q", "--yes", "--continue"], repo)
    if p.returncode != 0:
        sys.exit(f"bport apply failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return clock, stops


def run_git(repo, commits):
    clock = Clock()
    stops = 0
    p = clock.run(["git", "cherry-pick", "-x", "--empty=drop", *commits], repo)
    while p.returncode != 0:
        if not git(repo, "ls-files", "-u"):
            sys.exit(f"git cherry-pick failed without a conflict:\n{p.stdout}\n{p.stderr}")
        stops += 1
        resolve_taking_theirs(repo)
        p = clock.run(["git", "cherry-pick", "--continue"], repo)
        # Resolved to nothing: git refuses to commit an empty pick; drop it as bport does.
        while p.returncode != 0 and not git(repo, "ls-files", "-u") and "empty" in p.stderr + p.stdout:
            p = clock.run(["git", "cherry-pick", "--skip"], repo)
    return clock, stops


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bport", default=os.path.join(os.path.dirname(__file__), "..", "target", "release", "bport"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("-n", type=int, default=300, help="how many commits of the range to pick")
    ap.add_argument("--allow-differ", action="store_true",
                    help="report a different final commit or stop count instead of exiting (for diagnosis)")
    args = ap.parse_args()
    src = os.environ.get("BPORT_REAL_REPO")
    if not src:
        print("SKIPPED: set BPORT_REAL_REPO to a clone of git.git (or another project, with BPORT_STOPS_RANGE and "
              "BPORT_STOPS_ONTO), e.g.\n  git clone https://github.com/git/git /tmp/git\n"
              "  BPORT_REAL_REPO=/tmp/git python3 benches/stops.py")
        return
    rng = os.environ.get("BPORT_STOPS_RANGE", "v2.40.0..v2.41.0")
    onto = os.environ.get("BPORT_STOPS_ONTO", "v2.39.0")
    bport = os.path.abspath(args.bport)
    commits = git(src, "rev-list", "--reverse", "--no-merges", rng).split()[: args.n]
    work = tempfile.mkdtemp(prefix="bport-stops-")
    listing = os.path.join(work, "list.txt")
    with open(listing, "w") as f:
        for c in commits:
            f.write(git(src, "log", "-1", "--format=%H %s", c))
    rows = {"bport": [], "git": []}
    try:
        for r in range(args.repeat):
            a = clone(src, os.path.join(work, f"a{r}"), onto)
            ours, our_stops = run_bport(bport, a, listing)
            b = clone(src, os.path.join(work, f"b{r}"), onto)
            theirs, their_stops = run_git(b, commits)
            ha, hb = git(a, "rev-parse", "HEAD").strip(), git(b, "rev-parse", "HEAD").strip()
            if ha != hb:
                git(a, "fetch", "-q", b, "HEAD")
                diff = git(a, "diff", "--stat", hb, ha, check=False)
                first = git(a, "rev-list", "--reverse", "--topo-order", f"{onto}..{ha}").split()
                other = git(a, "rev-list", "--reverse", "--topo-order", f"{onto}..{hb}").split()
                for i, (x, y) in enumerate(zip(first, other)):
                    if x != y:
                        diff += f"\nfirst differing pick: #{i + 1}, bport {x[:12]}, git {y[:12]}: " + git(
                            a, "log", "-1", "--format=%s", x).strip()
                        diff += "\n" + git(a, "diff", "--stat", y, x, check=False)
                        break
                msg = f"bport ended at {ha}, git at {hb} (stops: bport {our_stops}, git {their_stops})\n{diff[:3000]}"
                if not args.allow_differ:
                    sys.exit(msg)
                print("DIFFERENT RESULT: " + msg)
            elif our_stops != their_stops:
                msg = f"same final commit, but bport stopped {our_stops} times and git {their_stops}"
                if not args.allow_differ:
                    sys.exit(msg)
                print("DIFFERENT STOPS: " + msg)
            rows["bport"].append(ours)
            rows["git"].append(theirs)
            shutil.rmtree(a)
            shutil.rmtree(b)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    stops = their_stops
    print(f"{src}: {len(commits)} commits of {rng} onto {onto}; {stops} stops (git's) resolved in both; "
          f"{args.repeat} runs; {git(src, 'version').strip()}")
    print(f"  {'tool':<6} {'calls':>5}  {'CPU s (min / median / max)':<28} {'wall s (median)':<16}")
    for tool, clocks in rows.items():
        cpus = sorted(c.cpu for c in clocks)
        walls = [c.wall for c in clocks]
        print(f"  {tool:<6} {clocks[0].calls:>5}  "
              f"{' / '.join(f'{x:.2f}' for x in (cpus[0], statistics.median(cpus), cpus[-1])):<28} "
              f"{statistics.median(walls):<16.2f}")
    ratios_cpu = ", ".join(f"{g.cpu / b.cpu:.1f}x" for b, g in zip(rows["bport"], rows["git"]))
    ratios_wall = ", ".join(f"{g.wall / b.wall:.1f}x" for b, g in zip(rows["bport"], rows["git"]))
    print(f"  git / bport per run: CPU {ratios_cpu}; wall {ratios_wall}")
    cont = [c for c in rows["bport"]]
    print(f"  bport: {statistics.median(c.cpu for c in cont) * 1000 / max(1, len(commits)):.2f} ms CPU a pick, "
          f"{cont[0].calls} calls")
    # Each resumed call, its picks included (the first call, which plans, left out): all runs together.
    for tool, clocks in rows.items():
        per = sorted(cpu for c in clocks for cpu, _ in c.per_call[1:])
        walls = sorted(wall for c in clocks for _, wall in c.per_call[1:])
        if per:
            print(f"  {tool} per resumed call, ms: CPU min {per[0] * 1000:.0f} / median "
                  f"{statistics.median(per) * 1000:.0f} / max {per[-1] * 1000:.0f}; wall median "
                  f"{statistics.median(walls) * 1000:.0f}")


if __name__ == "__main__":
    main()
