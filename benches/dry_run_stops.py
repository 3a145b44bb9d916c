#!/usr/bin/env python3
"""Benchmark: how well `bport apply --dry-run` predicts the stops of the real run.

The list is the first N non-merge commits of BPORT_STOPS_RANGE picked onto BPORT_STOPS_ONTO (the defaults fit
git.git: v2.40.0..v2.41.0's first 300 onto v2.39.0), as benches/stops.py picks them. On a fresh clone each:

  predicted  `bport apply --dry-run --format json -x <list>`: the steps whose outcome is "conflict"
  real       `bport apply -x <list>` run to the end, every stop resolved as stops.py resolves it (each unmerged
             path takes the picked commit's side, or goes when the commit deleted it), then `--continue`: the
             commit of each stop (the step `bport status --format json` names)
  git        the same list through `git cherry-pick -x --empty=drop` with the same resolutions (the oracle that
             the real run's stops are git's; --no-git leaves it out)

and prints predicted vs real stops, precision (predicted stops that were real) and recall (real stops that were
predicted). The repository: a clone with tags in BPORT_REAL_REPO; without it the script says so and exits 0.

  git clone https://github.com/git/git /tmp/git
  cargo build --release && BPORT_REAL_REPO=/tmp/git python3 benches/dry_run_stops.py
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

from benchlib import git_env, git_runner
from stops import clone, resolve_taking_theirs

ENV = git_env(GIT_EDITOR="true")
git = git_runner(ENV)


def run(argv, cwd):
    return subprocess.run(argv, cwd=cwd, env=ENV, capture_output=True, text=True)


def predicted(bport, repo, listing):
    p = run([bport, "apply", "-q", "--yes", "-x", "--dry-run", "--format", "json", listing], repo)
    if p.returncode != 0:
        sys.exit(f"bport apply --dry-run failed ({p.returncode}):\n{p.stderr}")
    doc = json.loads(p.stdout)
    return [s["commit"] for s in doc["steps"] if s["outcome"] == "conflict"]


def real_bport(bport, repo, listing):
    stops = []
    p = run([bport, "apply", "-q", "--yes", "-x", listing], repo)
    while p.returncode == 1:
        st = json.loads(run([bport, "status", "--format", "json"], repo).stdout)
        stops.append(st["steps"][st["position"] - 1]["commit"])
        resolve_taking_theirs(repo)
        p = run([bport, "apply", "-q", "--yes", "--continue"], repo)
    if p.returncode != 0:
        sys.exit(f"bport apply failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return stops, git(repo, "rev-parse", "HEAD").strip()


def real_git(repo, commits):
    stops = []
    p = run(["git", "cherry-pick", "-x", "--empty=drop", *commits], repo)
    while p.returncode != 0:
        if not git(repo, "ls-files", "-u"):
            sys.exit(f"git cherry-pick failed without a conflict:\n{p.stdout}\n{p.stderr}")
        stops.append(git(repo, "rev-parse", "CHERRY_PICK_HEAD").strip())
        resolve_taking_theirs(repo)
        p = run(["git", "cherry-pick", "--continue"], repo)
        while p.returncode != 0 and not git(repo, "ls-files", "-u") and "empty" in p.stderr + p.stdout:
            p = run(["git", "cherry-pick", "--skip"], repo)
    return stops, git(repo, "rev-parse", "HEAD").strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bport", default=os.path.join(os.path.dirname(__file__), "..", "target", "release", "bport"))
    ap.add_argument("-n", type=int, default=300, help="how many commits of the range to pick")
    ap.add_argument("--no-git", action="store_true", help="leave out the git cherry-pick oracle run")
    args = ap.parse_args()
    src = os.environ.get("BPORT_REAL_REPO")
    if not src:
        print("SKIPPED: set BPORT_REAL_REPO to a clone of git.git, e.g.\n  git clone https://github.com/git/git "
              "/tmp/git\n  BPORT_REAL_REPO=/tmp/git python3 benches/dry_run_stops.py")
        return
    rng = os.environ.get("BPORT_STOPS_RANGE", "v2.40.0..v2.41.0")
    onto = os.environ.get("BPORT_STOPS_ONTO", "v2.39.0")
    bport = os.path.abspath(args.bport)
    commits = git(src, "rev-list", "--reverse", "--no-merges", rng).split()[: args.n]
    work = tempfile.mkdtemp(prefix="bport-dry-stops-")
    listing = os.path.join(work, "list.txt")
    with open(listing, "w") as f:
        for c in commits:
            f.write(git(src, "log", "-1", "--format=%H %s", c))
    try:
        pred = predicted(bport, clone(src, os.path.join(work, "p"), onto), listing)
        real, ours_head = real_bport(bport, clone(src, os.path.join(work, "a"), onto), listing)
        if not args.no_git:
            theirs, git_head = real_git(clone(src, os.path.join(work, "b"), onto), commits)
            print(f"git cherry-pick: {len(theirs)} stops, same commits as bport's: {theirs == real}, "
                  f"same final commit: {git_head == ours_head}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    order = {c: i + 1 for i, c in enumerate(commits)}
    p, r = set(pred), set(real)
    hit = p & r
    print(f"{src}: {len(commits)} commits of {rng} onto {onto}")
    print(f"  predicted stops: {len(p)}  real stops: {len(r)}  both: {len(hit)}")
    print(f"  precision {len(hit) / len(p) if p else 1.0:.2f}  recall {len(hit) / len(r) if r else 1.0:.2f}")
    for c in sorted(p | r, key=order.get):
        tag = "both" if c in hit else ("predicted only" if c in p else "real only")
        print(f"  #{order[c]:<4} {c[:12]} {tag}")


if __name__ == "__main__":
    main()
