#!/usr/bin/env python3
"""Benchmark: `bport apply --dry-run` against `git cherry` on a 1,000 x 1,000 list of a real project.

Both answer "which listed commits does this branch already carry?". The list is every non-merge commit of a
release range (curl: curl-8_9_0..curl-8_11_0, 991 commits); the branch is the same commits replayed with
`git replay` (new ids, same authors and messages), so every listed commit is on it under another id:

  same-base   replayed onto the range's start: each copy has the very same blobs as its original
  moved       replayed onto the start plus one vendor commit that adds a line at the top of every lib/*.c and
              src/*.c file: the copies of commits touching those files have other blobs (as after a real
              forward-port), so their patch-ids must really be computed

and times, in the same run, on the same repository (CPU of the tool's processes, REPEAT times each):

  bport apply --dry-run --yes <list>                     (all three rules: trailer, subject, patch-id)
  bport apply --dry-run --yes --match patch-id <list>    (git cherry's rule alone)
  git cherry <branch> <end> <start>

git is the oracle: the commits `bport --match patch-id` skips must be exactly those `git cherry` marks `-`, and
with all rules bport must skip at least those. The repository: any clone with tags, in BPORT_REAL_REPO, e.g.

  git clone https://github.com/curl/curl /tmp/curl
  BPORT_REAL_REPO=/tmp/curl python3 benches/dry_run.py

(BPORT_DRY_FROM / BPORT_DRY_TO choose another range.) Without BPORT_REAL_REPO the script says so and exits 0.
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

from benchlib import DATE, git_env, git_runner

ENV = git_env(GIT_AUTHOR_NAME="Bench Vendor", GIT_AUTHOR_EMAIL="vendor@example.com", GIT_AUTHOR_DATE=DATE)
git = git_runner(ENV)


def cpu_of(argv, cwd):
    """(CPU seconds of the child, its stdout + stderr)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(argv, cwd=cwd, env=ENV, capture_output=True, text=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), p.stdout + p.stderr


STEP = re.compile(r"^(\d+)/\d+ \S+ .*: skip \(already applied: ([a-z-]+)[ ,]")


def skipped(output, listed):
    """{full id of a listed commit: rule} for every step bport's dry run skips."""
    out = {}
    for line in output.splitlines():
        m = STEP.match(line)
        if m:
            out[listed[int(m.group(1)) - 1]] = m.group(2)
    return out


def make_branch(work, start, end, moved):
    """A branch `vendor` carrying start..end replayed (onto a vendor commit first when `moved`)."""
    git(work, "checkout", "-q", "-f", "-B", "vendor", start)
    if moved:
        for path in git(work, "ls-files", "lib/*.c", "src/*.c").split():
            full = os.path.join(work, path)
            with open(full, "rb") as f:
                body = f.read()
            with open(full, "wb") as f:
                f.write(b"/* vendor build */\n" + body)
        git(work, "commit", "-q", "-a", "-m", "vendor: mark the sources")
    git(work, "branch", "-f", "upstream-copy", end)
    out = git(work, "replay", "--onto", "vendor", f"{start}..upstream-copy")
    new = out.split()[2]
    git(work, "checkout", "-q", "-f", "-B", "vendor", new)
    # One vendor commit on top, as a real branch has.
    with open(os.path.join(work, "VENDOR"), "w") as f:
        f.write("vendor branch\n")
    git(work, "add", "VENDOR")
    git(work, "commit", "-q", "-m", "vendor: add VENDOR")


def scenario(name, src, start, end, bport, repeat, tmp):
    work = os.path.join(tmp, name)
    subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", src, work], env=ENV, check=True)
    listed = git(work, "log", "--reverse", "--no-merges", "--format=%H", f"{start}..{end}").split()
    listing = os.path.join(tmp, f"{name}.txt")
    with open(listing, "w") as f:
        f.write(git(work, "log", "--reverse", "--no-merges", "--format=%H %s", f"{start}..{end}"))
    make_branch(work, start, end, name == "moved")
    branch_len = int(git(work, "rev-list", "--count", f"{start}..vendor").strip())

    rows = {"bport (all rules)": [], "bport --match patch-id": [], "git cherry": [],
            "bport --match patch-id, warm": []}
    # bport keeps the patch-ids it computes for the next run; every run but the warm one starts without them.
    kept = os.path.join(work, ".git", "bport", "patch-ids")

    def forget():
        if os.path.exists(kept):
            os.remove(kept)

    for _ in range(repeat):
        forget()
        cpu, out = cpu_of([bport, "apply", "--dry-run", "--yes", listing], work)
        rows["bport (all rules)"].append(cpu)
        all_rules = skipped(out, listed)
        forget()
        cpu, out = cpu_of([bport, "apply", "--dry-run", "--yes", "--match", "patch-id", listing], work)
        rows["bport --match patch-id"].append(cpu)
        by_pid = skipped(out, listed)
        # The same run again, with the patch-ids the previous one kept.
        cpu, out = cpu_of([bport, "apply", "--dry-run", "--yes", "--match", "patch-id", listing], work)
        rows["bport --match patch-id, warm"].append(cpu)
        if skipped(out, listed) != by_pid:
            sys.exit(f"{name}: with kept patch-ids bport skips other commits")
        cpu, out = cpu_of(["git", "cherry", "vendor", end, start], work)
        rows["git cherry"].append(cpu)
        cherry = {line[2:] for line in out.splitlines() if line.startswith("- ")}
        if set(by_pid) != cherry:
            sys.exit(f"{name}: bport --match patch-id skips {len(by_pid)}, git cherry marks {len(cherry)} "
                     f"applied; differing: {sorted(set(by_pid) ^ cherry)[:10]}")
        if not cherry <= set(all_rules):
            sys.exit(f"{name}: with all rules bport misses {sorted(cherry - set(all_rules))[:10]}")
    rules = statistics.multimode(all_rules.values())
    print(f"\n{name}: {len(listed)} listed x {branch_len} on the branch; git cherry marks {len(cherry)} applied, "
          f"bport --match patch-id skips the same {len(by_pid)}, with all rules {len(all_rules)} "
          f"(mostly by {', '.join(rules)})")
    print(f"  {'tool':<30} {'CPU s (min / median / max)':<28} git cherry / tool (median)")
    g = statistics.median(rows["git cherry"])
    for tool, vals in rows.items():
        per = " / ".join(f"{x:.2f}" for x in (min(vals), statistics.median(vals), max(vals)))
        print(f"  {tool:<30} {per:<28} {g / statistics.median(vals):.2f}x")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bport", default=os.path.join(os.path.dirname(__file__), "..", "target", "release", "bport"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", help="run only this scenario (same-base or moved)")
    args = ap.parse_args()
    src = os.environ.get("BPORT_REAL_REPO")
    if not src:
        print("SKIPPED: set BPORT_REAL_REPO to a clone of a real project, e.g.\n"
              "  git clone https://github.com/curl/curl /tmp/curl\n"
              "  BPORT_REAL_REPO=/tmp/curl python3 benches/dry_run.py")
        return
    start = os.environ.get("BPORT_DRY_FROM", "curl-8_9_0")
    end = os.environ.get("BPORT_DRY_TO", "curl-8_11_0")
    bport = os.path.abspath(args.bport)
    print(f"{src}: {start}..{end}; {git(src, 'version').strip()}")
    tmp = tempfile.mkdtemp(prefix="bport-dry-")
    try:
        for name in ("same-base", "moved"):
            if args.only and args.only != name:
                continue
            scenario(name, src, start, end, bport, args.repeat, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
