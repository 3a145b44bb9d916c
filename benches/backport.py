#!/usr/bin/env python3
"""Benchmark: bport apply against git cherry-pick <range>, a per-patch git cherry-pick loop, and git replay.

Builds (with git fast-import) a repository of ~30,000 files, a 1,000-commit series on `series`, and a vendor
branch `vendor` that drifted: 100 vendor commits on other files, 50 already-applied copies of series commits under
new ids (25 with the same subject, 25 renamed so only the patch-id finds them), and 3 real conflicts. Then it
times, on copies of the same repository in one run:

  bport apply -X theirs                    (release build of this crate)
  git cherry-pick -X theirs --empty=drop <range>
  git cherry-pick per patch, in a loop     (first LOOP_N patches; ms per patch)
  git replay --advance on the clean prefix before the first conflict, and bport on that same prefix

and checks that bport's final tree equals git cherry-pick's. Not a test: run by hand,
`python3 benches/backport.py [--bport target/release/bport] [--keep DIR]`, and copy the ratios into benches/README.md.
"""
import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

DIRS, FILES, LINES = 300, 100, 20
SERIES = 1000
LOOP_N = 100

ENV = dict(
    os.environ,
    GIT_CONFIG_NOSYSTEM="1",
    GIT_CONFIG_GLOBAL="/dev/null",
    GIT_AUTHOR_NAME="A U Thor",
    GIT_AUTHOR_EMAIL="author@example.com",
    GIT_AUTHOR_DATE="1700000000 +0000",
    GIT_COMMITTER_NAME="Bench Committer",
    GIT_COMMITTER_EMAIL="bench@example.com",
    GIT_COMMITTER_DATE="1700000000 +0000",
    LC_ALL="C",
)
for k in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
    ENV.pop(k, None)


def git(repo, *args, check=True, capture=True):
    r = subprocess.run(["git", *args], cwd=repo, env=ENV, capture_output=capture, text=True)
    if check and r.returncode != 0:
        sys.exit(f"git {' '.join(args)} failed:\n{r.stdout}\n{r.stderr}")
    return r.stdout if capture else ""


def path(d, f):
    return f"drivers/d{d:03}/f{f:03}.c"


def content(lines):
    return "".join(l + "\n" for l in lines)


def build(repo):
    """Writes the fast-import stream and returns (series commit marks, first conflicting series index)."""
    files = {(d, f): [f"d{d} f{f} line {k}" for k in range(LINES)] for d in range(DIRS) for f in range(FILES)}
    out = []
    mark = [0]
    t = [1600000000]

    def commit(ref, msg, changes, parent_mark=None):
        mark[0] += 1
        t[0] += 1
        m = mark[0]
        data = msg.encode()
        out.append(f"commit {ref}\nmark :{m}\n")
        out.append(f"author A U Thor <author@example.com> {t[0]} +0000\n")
        out.append(f"committer A U Thor <author@example.com> {t[0]} +0000\n")
        out.append(f"data {len(data)}\n{msg}\n")
        if parent_mark:
            out.append(f"from :{parent_mark}\n")
        for p, c in changes:
            b = c.encode()
            out.append(f"M 100644 inline {p}\ndata {len(b)}\n{c}\n")
        return m

    base = commit("refs/heads/master", "base: import the tree", [(path(d, f), content(l)) for (d, f), l in files.items()])

    # The series: commit i edits line i%LINES of one file; a file is edited at most 3 times.
    series_files = []
    touched = {}
    series = []
    cur = {}
    prev = base
    for i in range(SERIES):
        key = ((i * 37) % DIRS, (i * 11) % 97)
        series_files.append(key)
        touched[key] = touched.get(key, 0) + 1
        lines = list(cur.get(key, files[key]))
        lines[i % LINES] = f"series change {i}"
        cur[key] = lines
        prev = commit("refs/heads/series", f"subsys{i % 17}: change {i}\n\nBody of change {i}.\n", [(path(*key), content(lines))], prev if i else base)
        series.append(prev)

    # Vendor: drift on files the series never touches, 50 already-applied copies, 3 conflicts.
    once = [i for i, k in enumerate(series_files) if touched[k] == 1]
    copies = once[10:60]
    conflicts = once[400:403]
    vprev = base
    vendor_changes = []
    for n in range(100):
        key = (n % DIRS, 98 + n % 2)
        lines = list(files[key])
        lines[n % LINES] = f"vendor drift {n}"
        files[key] = lines
        vendor_changes.append((f"vendor: drift {n}\n", [(path(*key), content(lines))]))
    for j, i in enumerate(copies):
        key = series_files[i]
        lines = list(files[key])
        lines[i % LINES] = f"series change {i}"
        subject = f"subsys{i % 17}: change {i}" if j % 2 == 0 else f"vendor: carry fix number {i}"
        vendor_changes.append((f"{subject}\n\nPorted.\n", [(path(*key), content(lines))]))
    for i in conflicts:
        key = series_files[i]
        lines = list(files[key])
        lines[i % LINES] = f"vendor disagrees with {i}"
        vendor_changes.append((f"vendor: local tweak {i}\n", [(path(*key), content(lines))]))
    for msg, changes in vendor_changes:
        vprev = commit("refs/heads/vendor", msg, changes, vprev)

    subprocess.run(["git", "init", "-q", "-b", "master", repo], env=ENV, check=True)
    p = subprocess.Popen(["git", "fast-import", "--quiet"], cwd=repo, env=ENV, stdin=subprocess.PIPE)
    p.communicate("".join(out).encode())
    if p.returncode != 0:
        sys.exit("fast-import failed")
    git(repo, "config", "user.name", "Bench Committer")
    git(repo, "config", "user.email", "bench@example.com")
    git(repo, "checkout", "-q", "vendor")
    return copies, min(conflicts)


def timed(label, fn):
    """Runs fn; returns (CPU seconds of the child processes, fn's result) and prints wall and CPU time.

    CPU time (user + sys of the children) is the figure to compare: this machine is shared, and wall time
    mostly measures the other jobs.
    """
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = fn()
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    print(f"{label}: {cpu:.2f} s CPU ({wall:.2f} s wall)", flush=True)
    return cpu, r


def copy(src, dst):
    shutil.copytree(src, dst, symlinks=True)
    # A copied worktree has new inodes: refresh the index so no tool pays for rehashing 30,000 files.
    git(dst, "update-index", "-q", "--refresh", check=False)
    return dst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bport", default=os.path.join(os.path.dirname(__file__), "..", "target", "release", "bport"))
    ap.add_argument("--keep", help="build the repository here and keep it")
    args = ap.parse_args()
    bport = os.path.abspath(args.bport)
    work = args.keep or tempfile.mkdtemp(prefix="bport-bench-")
    repo = os.path.join(work, "repo")
    _, (copies, first_conflict) = timed("build repo (fast-import + checkout)", lambda: build(repo))
    nfiles = int(git(repo, "ls-files", "--", ".").count("\n"))
    print(f"repo: {nfiles} files, series of {SERIES} commits, first conflict at series index {first_conflict}")

    listing = subprocess.run([bport, "list", "master..series"], cwd=repo, env=ENV, capture_output=True, text=True, check=True).stdout
    assert listing == git(repo, "log", "--reverse", "--oneline", "master..series"), "bport list differs from git log"
    lst = os.path.join(work, "series.txt")
    with open(lst, "w") as f:
        f.write(listing)
    lines = listing.splitlines(True)
    prefix = os.path.join(work, "prefix.txt")
    with open(prefix, "w") as f:
        f.writelines(lines[:first_conflict])

    a = copy(repo, os.path.join(work, "a"))
    t_bport, r = timed("bport apply -X theirs", lambda: subprocess.run([bport, "apply", "-q", "--yes", "-X", "theirs", lst], cwd=a, env=ENV))
    assert r.returncode == 0, "bport apply failed"

    b = copy(repo, os.path.join(work, "b"))
    t_git, _ = timed("git cherry-pick -X theirs <range>", lambda: git(b, "cherry-pick", "-X", "theirs", "--empty=drop", "master..series"))
    same = git(a, "rev-parse", "HEAD^{tree}") == git(b, "rev-parse", "HEAD^{tree}")
    print(f"final trees identical: {same}")

    c = copy(repo, os.path.join(work, "c"))
    revs = git(c, "rev-list", "--reverse", "master..series").split()[:LOOP_N]

    def loop():
        for rev in revs:
            git(c, "cherry-pick", "-X", "theirs", "--empty=drop", rev)

    t_loop, _ = timed(f"git cherry-pick loop ({LOOP_N} patches)", loop)

    d = copy(repo, os.path.join(work, "d"))
    end = git(d, "rev-list", "--reverse", "master..series").split()[first_conflict - 1]
    t_replay, _ = timed(f"git replay --advance (clean prefix of {first_conflict})", lambda: git(d, "replay", "--advance", "vendor", f"master..{end}"))
    e = copy(repo, os.path.join(work, "e"))
    t_bprefix, _ = timed(f"bport apply (same prefix of {first_conflict})", lambda: subprocess.run([bport, "apply", "-q", "--yes", prefix], cwd=e, env=ENV, check=True))

    n = SERIES
    print()
    print("per patch (CPU time):")
    print(f"per patch: bport {1000 * t_bport / n:.2f} ms, git cherry-pick <range> {1000 * t_git / n:.2f} ms, "
          f"loop {1000 * t_loop / LOOP_N:.1f} ms, replay {1000 * t_replay / first_conflict:.2f} ms, "
          f"bport on replay's prefix {1000 * t_bprefix / first_conflict:.2f} ms")
    print(f"ratios: git cherry-pick <range> / bport = {t_git / t_bport:.1f}x; loop / bport = {(t_loop / LOOP_N) / (t_bport / n):.1f}x; "
          f"bport / git replay (same prefix) = {t_bprefix / t_replay:.1f}x")
    if not args.keep:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
