#!/usr/bin/env python3
"""Real-history check: bport's already-applied detection on a public project's stable branch, as a
skip confusion matrix against ground truth, next to `git cherry`'s.

Takes a clone (or bare mirror) of a project whose stable branch carries backports of its main branch with
`(cherry picked from commit …)` trailers, for example flatpak (https://github.com/flatpak/flatpak, branch
flatpak-1.14.x). In a throwaway `--shared` clone checked out at the stable branch it:

  1. lists upstream: every non-merge commit of merge-base(stable, upstream)..upstream, oldest first, as
     `<40-hex sha> <subject>` (merges would need -m; a stable branch never takes them whole);
  2. runs `bport apply --dry-run` of that list (the plan: pick, or skip by rule);
  3. builds the ground truth without bport's code:
       trailer truth  a stable commit names the upstream commit (`cherry picked from commit X`, `cherry-picked
                      from X`, `commit X upstream`, `upstream commit X`), X resolved with `git rev-parse`;
       git cherry     `git cherry <stable> <upstream> <base>` marks the commit `-` (same patch-id on stable);
       applied = trailer truth OR git cherry;
     and, for the ports neither finds, an extended truth (still without bport's rules):
       equal copy     a stable commit's trailer names another commit X whose `git patch-id --stable` equals
                      the upstream commit's (X is the same change under another id, e.g. a merge request's commit
                      before it was rebased);
       hand port      a stable commit with the same author and author date whose changed (+/-) lines are at
                      least 90% the upstream commit's (a backport made without -x whose context changed);
       already there  for a patch bport plans as empty: its reverse applies to the stable tree (`git apply -R
                      --check`, then the same with `-C0 --unidiff-zero` for a change that came with other context),
                      i.e. the change is in the tree already;
  4. prints the confusion matrix of bport's skips (and of `git cherry`'s `-` marks) against both truths, and
     lists every skip the first truth does not confirm, with both commits, for a person to judge.

A false skip (bport skips what the stable branch does not carry) is the failure that matters: it drops a fix
silently. A missed skip only costs a conflict or an empty pick that bport then reports.

Not a test: run by hand, and copy the figures into benches/README.md. Without BPORT_REAL_REPO it says SKIPPED and exits 0.

  BPORT_REAL_REPO=/path/to/flatpak BPORT_STABLE=flatpak-1.14.x [BPORT_UPSTREAM=main] \
      [BPORT=target/release/bport] python3 benches/skip_confusion.py
"""
import os
import re
import subprocess
import sys
import tempfile

ENV = dict(
    os.environ,
    GIT_CONFIG_NOSYSTEM="1",
    GIT_CONFIG_GLOBAL="/dev/null",
    GIT_COMMITTER_NAME="Real History",
    GIT_COMMITTER_EMAIL="real-history@example.com",
    LC_ALL="C",
)

TRAILER = re.compile(
    r"(?:cherry picked from commit|cherry-picked from(?: commit)?|upstream commit)\s+([0-9a-f]{7,40})\b"
    r"|^\s*commit\s+([0-9a-f]{7,40})\s+upstream",
    re.IGNORECASE | re.MULTILINE,
)


def git(cwd, *args):
    return subprocess.run(
        ["git", *args], cwd=cwd, env=ENV, check=True, capture_output=True, text=True, errors="replace"
    ).stdout


def main():
    repo = os.environ.get("BPORT_REAL_REPO")
    if not repo:
        print("SKIPPED (set BPORT_REAL_REPO to a clone with a stable branch, and BPORT_STABLE to that branch)")
        return 0
    stable = os.environ.get("BPORT_STABLE")
    if not stable:
        print("BPORT_STABLE must name the stable branch (e.g. flatpak-1.14.x)", file=sys.stderr)
        return 2
    upstream = os.environ.get("BPORT_UPSTREAM", "main")
    here = os.path.dirname(os.path.abspath(__file__))
    bport = os.environ.get("BPORT") or os.path.join(here, "..", "target", "release", "bport")
    if not os.path.exists(bport):
        bport = os.path.join(here, "..", "target", "debug", "bport")

    with tempfile.TemporaryDirectory(prefix="bport-real-") as tmp:
        work = os.path.join(tmp, "repo")
        subprocess.run(["git", "clone", "-q", "--shared", "-b", stable, repo, work], env=ENV, check=True)
        up = f"origin/{upstream}"
        base = git(work, "merge-base", "HEAD", up).strip()
        listed = [
            line.split(" ", 1)
            for line in git(work, "log", "--reverse", "--no-merges", "--format=%H %s", f"{base}..{up}").splitlines()
        ]
        listed = [(p[0], p[1] if len(p) > 1 else "") for p in listed]
        list_path = os.path.join(tmp, "list.txt")
        with open(list_path, "w") as f:
            f.writelines(f"{sha} {subject}\n" for sha, subject in listed)
        run = subprocess.run(
            [bport, "apply", "--dry-run", list_path], cwd=work, env=ENV, capture_output=True, text=True
        )
        if run.returncode != 0:
            print(run.stdout[-2000:], run.stderr[-2000:], file=sys.stderr)
            print(f"bport apply --dry-run exited {run.returncode}", file=sys.stderr)
            return 1
        plan = run.stdout.splitlines()
        summary = plan.pop()
        assert len(plan) == len(listed), (len(plan), len(listed))
        verdict = {}  # full sha -> (rule or None, branch commit abbrev or None)
        step = re.compile(r"^(\d+)/\d+ [0-9a-f]{7} .*: (pick.*|skip \((?:already applied: (.+), ([0-9a-f]{7})|empty)\))$")
        for line in plan:
            m = step.match(line)
            assert m, line
            sha = listed[int(m.group(1)) - 1][0]
            if m.group(2).startswith("pick"):
                verdict[sha] = (None, None)
            elif m.group(3):
                verdict[sha] = (m.group(3), m.group(4))
            else:
                verdict[sha] = ("empty", None)

        # Ground truth, independent of bport: trailers on stable, resolved by git; git cherry's patch-ids.
        def patch_id(h):
            diff = subprocess.run(["git", "show", h], cwd=work, env=ENV, capture_output=True).stdout
            out = subprocess.run(["git", "patch-id", "--stable"], cwd=work, env=ENV, input=diff,
                                 capture_output=True).stdout.split()
            return out[0].decode() if out else None

        named = set()
        for message in git(work, "log", "--format=%B%x00", f"{base}..HEAD").split("\0"):
            for m in TRAILER.finditer(message):
                hexid = (m.group(1) or m.group(2)).lower()
                r = subprocess.run(
                    ["git", "rev-parse", "-q", "--verify", f"{hexid}^{{commit}}"],
                    cwd=work, env=ENV, capture_output=True, text=True,
                )
                if r.returncode == 0:
                    named.add(r.stdout.strip())
        cherry = {}
        for line in git(work, "cherry", "HEAD", up, base).splitlines():
            mark, sha = line.split()
            cherry[sha] = mark == "-"

        # Hand ports: same author and author date, and nearly the same changed lines.
        def author_key(rev_range):
            out = {}
            for line in git(work, "log", "--no-merges", "--format=%H%x00%an%x00%ad", "--date=raw", rev_range).splitlines():
                h, name, date = line.split("\0")
                out.setdefault((name, date), []).append(h)
            return out

        def changed_lines(h):
            text = git(work, "show", "--format=", h)
            return sorted(l for l in text.splitlines() if l[:1] in "+-" and not l.startswith(("+++ ", "--- ")))

        stable_by_author = author_key(f"{base}..HEAD")
        hand = set()
        for key, ups in author_key(f"{base}..{up}").items():
            for st in stable_by_author.get(key, []):
                b_lines = changed_lines(st)
                for u in ups:
                    a_lines = changed_lines(u)
                    common = sum(1 for l in set(a_lines) if l in set(b_lines))
                    if a_lines and common >= 0.9 * max(len(set(a_lines)), len(set(b_lines))):
                        hand.add(u)
        present = set()
        for sha, _ in listed:
            if verdict[sha][0] == "empty":
                diff = subprocess.run(["git", "show", "--format=", sha], cwd=work, env=ENV, capture_output=True).stdout
                # Strict first; then without context, for changes a hand port brought with other context lines.
                for extra in ([], ["-C0", "--unidiff-zero"]):
                    r = subprocess.run(["git", "apply", "-R", "--check", *extra], cwd=work, env=ENV, input=diff,
                                       capture_output=True)
                    if r.returncode == 0:
                        present.add(sha)
                        break

        # Equal copies: a named commit that is not listed, with a listed commit's patch-id.
        listed_shas = {sha for sha, _ in listed}
        copies = set()
        named_ids = {patch_id(x) for x in named - listed_shas}
        named_ids.discard(None)
        if named_ids:
            for sha, _ in listed:
                if sha not in named and patch_id(sha) in named_ids:
                    copies.add(sha)

        rows = []
        for sha, subject in listed:
            by_trailer = sha in named
            by_cherry = cherry.get(sha, False)
            rows.append((sha, subject, by_trailer or by_cherry, by_trailer, by_cherry, verdict[sha],
                         by_trailer or by_cherry or sha in copies or sha in hand or sha in present))

        def matrix(skips, truth=2):
            tp = sum(1 for r in rows if skips(r) and r[truth])
            fp = sum(1 for r in rows if skips(r) and not r[truth])
            fn = sum(1 for r in rows if not skips(r) and r[truth])
            tn = sum(1 for r in rows if not skips(r) and not r[truth])
            return tp, fp, fn, tn

        # An "empty" skip is not a claim that a port exists: the pick would change nothing (git cherry-pick
        # --empty=drop does the same); it is counted as a skip all the same, so that it shows up if wrong.
        b = matrix(lambda r: r[5][0] is not None)
        g = matrix(lambda r: r[4])
        applied = sum(1 for r in rows if r[2])
        print(f"repository: {repo}  stable: {stable}  upstream: {upstream}  base: {base[:12]}")
        print(f"listed (non-merge) upstream commits: {len(rows)}; stable commits since base: "
              f"{git(work, 'rev-list', '--count', f'{base}..HEAD').strip()}")
        print(f"ground truth applied: {applied} (trailer: {sum(1 for r in rows if r[3])}, "
              f"git cherry '-': {sum(1 for r in rows if r[4])}, both: {sum(1 for r in rows if r[3] and r[4])})")
        print(f"bport plan: {summary}")
        print()
        print("| detector | skipped & applied | skipped & NOT applied (false skip) | picked & applied (missed) | picked & not applied |")
        print("| --- | --- | --- | --- | --- |")
        print(f"| bport apply --dry-run | {b[0]} | {b[1]} | {b[2]} | {b[3]} |")
        print(f"| git cherry (`-` marks) | {g[0]} | {g[1]} | {g[2]} | {g[3]} |")
        bx = matrix(lambda r: r[5][0] is not None, truth=6)
        gx = matrix(lambda r: r[4], truth=6)
        basic = {r[0] for r in rows if r[2]}
        print(f"| bport, extended truth (+{len(copies - basic)} equal copies, +{len(hand - basic - copies)} hand "
              f"ports, +{len(present)} already there) | {bx[0]} | {bx[1]} | {bx[2]} | {bx[3]} |")
        print(f"| git cherry, extended truth | {gx[0]} | {gx[1]} | {gx[2]} | {gx[3]} |")
        by_rule = {}
        for r in rows:
            if r[5][0] is not None:
                key = (r[5][0].split(" + ")[0], r[2])
                by_rule[key] = by_rule.get(key, 0) + 1
        print()
        print("bport skips by rule (confirmed by the truth / not):")
        for rule in sorted({k[0] for k in by_rule}):
            print(f"  {rule}: {by_rule.get((rule, True), 0)} / {by_rule.get((rule, False), 0)}")
        unconfirmed = [r for r in rows if r[5][0] is not None and not r[2]]
        if unconfirmed:
            print()
            print("skips the truth does not confirm (judge each: is the branch commit a port of the listed one?):")
            for sha, subject, _, _, _, (rule, by), extended in unconfirmed:
                files_up = git(work, "show", "--format=", "--name-only", sha).split()
                files_by = git(work, "show", "--format=", "--name-only", by).split() if by else []
                why = ("equal copy" if sha in copies else "hand port" if sha in hand
                       else "already there" if sha in present else "NOT CONFIRMED")
                print(f"  {sha[:12]} {subject!r}: {rule} {by or ''} [{why}]; files upstream {files_up} / stable {files_by}")
        missed = [r for r in rows if r[5][0] is None and r[6]]
        if missed:
            print()
            print(f"applied (extended truth) but planned as picks ({len(missed)}; a real run reports them as empty "
                  f"or stops at a conflict):")
            for sha, subject, _, t, c, (_, _), _ in missed[:40]:
                line = next(l for l in plan if l.split(" ", 2)[1] == sha[:7])
                print(f"  {sha[:12]} {subject!r} (trailer: {t}, git cherry: {c}, hand port: {sha in hand}): "
                      f"{line.rsplit(': ', 1)[-1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
