//! Never losing the user's work: `--abort` after HEAD moved (git's cherry-pick as oracle), `--quit`, a commit or
//! `git add` made while a run picks, two runs at once, and runs killed at every write step of `apply`,
//! `--continue` and `--abort`. Kill points are the debug build's deterministic fault points
//! (`BPORT_TEST_FAULT_KILL=N` dies at the Nth), never timing.

use super::*;
use crate::support::oracle::git_ok;
use crate::support::repo::{self, Snapshot};
use std::path::Path;

/// Runs bport with extra environment; `None` as the code when it died (the fault points abort).
fn run_env(dir: &Path, args: &[&str], env: &[(&str, String)]) -> bport::CommandOutput {
    let out = bport::bport(dir)
        .args(args)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .expect("spawn bport");
    bport::CommandOutput {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code(),
    }
}

/// The fault points a command reaches, in order (run on a copy, which is dropped).
fn points(t: &TestRepo, args: &[&str]) -> Vec<String> {
    let c = t.copy();
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace");
    run_env(
        c.path(),
        args,
        &[("BPORT_TEST_FAULT_TRACE", trace.display().to_string())],
    );
    let text = std::fs::read_to_string(&trace).expect(
        "no fault trace: the fault tests need bport built with debug assertions (cargo test)",
    );
    text.lines()
        .map(|l| l.split_once(' ').unwrap().1.to_owned())
        .collect()
}

fn head(t: &TestRepo) -> String {
    git_ok(t.path(), &["rev-parse", "HEAD"]).trim().to_owned()
}

fn state_exists(t: &TestRepo) -> bool {
    t.path().join(".git/bport/state.json").exists()
}

/// The conflict of `conflict_in_the_middle` resolved by taking both lines, staged.
fn resolve(t: &TestRepo) {
    let text: String = t
        .read("README")
        .lines()
        .filter(|l| {
            !l.starts_with("<<<<<<<") && !l.starts_with("=======") && !l.starts_with(">>>>>>>")
        })
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(t.path().join("README"), text).unwrap();
    git_ok(t.path(), &["add", "README"]);
}

/// git refuses `cherry-pick --abort` once the user committed on top of the stop ("You seem to have moved HEAD");
/// bport refuses too, keeps its state and every commit, and `--quit` forgets the run without touching anything.
#[test]
fn abort_after_the_user_committed_refuses_as_git_does_and_quit_keeps_everything() {
    skip_unless!(has_git());
    let (t, _d, list) = conflict_in_the_middle();
    let shas: Vec<String> = std::fs::read_to_string(&list)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.split(' ').next().unwrap().to_owned())
        .collect();
    let g = t.copy();

    let stop = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(stop.code, Some(1), "{}", stop.transcript());
    resolve(&t);
    git_ok(t.path(), &["commit", "-q", "-m", "my resolution"]);
    std::fs::write(t.path().join("mine.txt"), "mine\n").unwrap();
    git_ok(t.path(), &["add", "mine.txt"]);
    git_ok(t.path(), &["commit", "-q", "-m", "my other work"]);
    let mine = head(&t);
    let before_abort = t.snapshot();
    let abort = bport::run(t.path(), &["apply", "--abort"]);
    assert_eq!(abort.code, Some(2), "{}", abort.transcript());
    assert!(abort.stderr.contains("not rewinding"), "{}", abort.stderr);
    assert!(
        abort.stderr.contains("bport apply --quit"),
        "{}",
        abort.stderr
    );
    assert_eq!(t.snapshot(), before_abort);
    assert!(state_exists(&t));

    // The oracle: git keeps HEAD (and the user's commits) where the user put them.
    let mut args = vec!["cherry-pick"];
    args.extend(shas.iter().map(String::as_str));
    let picked = oracle::git(g.path()).args(&args).output().unwrap();
    assert_eq!(
        picked.status.code(),
        Some(1),
        "git stops at the same conflict"
    );
    resolve(&g);
    git_ok(g.path(), &["commit", "-q", "-m", "my resolution"]);
    let git_mine = head(&g);
    let git_abort = oracle::git(g.path())
        .args(["cherry-pick", "--abort"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&git_abort.stderr);
    assert!(
        said.contains("You seem to have moved HEAD. Not rewinding"),
        "{said}"
    );
    assert_eq!(head(&g), git_mine, "git did not rewind");

    let quit = bport::run(t.path(), &["apply", "--quit"]);
    assert_eq!(quit.code, Some(0), "{}", quit.transcript());
    assert!(
        quit.stderr.contains("Forgot the bport apply in progress"),
        "{}",
        quit.stderr
    );
    assert_eq!(t.snapshot(), before_abort);
    assert_eq!(head(&t), mine);
    assert!(!state_exists(&t));
    assert_eq!(
        bport::run(t.path(), &["status"]).stdout,
        "No bport apply in progress.\n"
    );
}

/// Index of the first fault point named `name`, 1-based as the environment variables count.
fn at(points: &[String], name: &str) -> usize {
    points.iter().position(|p| p == name).expect(name) + 1
}

/// A `git commit` while bport picks in memory: bport refuses before writing, the commit stays on the branch, the
/// run's state stays, `--abort` refuses (HEAD moved) and `--quit` keeps everything.
#[test]
fn a_commit_during_a_run_is_kept_and_the_run_refuses_to_write() {
    skip_unless!(has_git());
    let t = repo::upstream_and_vendor();
    let (_d, list) = list_file(&t.list("master..upstream"));
    let apply = ["apply", list.to_str().unwrap()];
    let n = at(&points(&t, &apply), "pack-written");
    let start = head(&t);
    let out = run_env(
        t.path(),
        &apply,
        &[(
            "BPORT_TEST_FAULT_RUN",
            format!("{n}:GIT_AUTHOR_NAME=u GIT_AUTHOR_EMAIL=u@example.com git commit -q --allow-empty -m mine"),
        )],
    );
    assert_eq!(out.code, Some(2), "{}", out.transcript());
    assert!(out.stderr.contains("HEAD moved to"), "{}", out.stderr);
    assert!(
        out.stderr.contains("stopped before writing anything"),
        "{}",
        out.stderr
    );
    let mine = head(&t);
    assert_ne!(mine, start);
    assert_eq!(
        git_ok(t.path(), &["log", "-1", "--format=%s %P"]).trim(),
        format!("mine {start}")
    );
    assert_eq!(git_ok(t.path(), &["status", "--porcelain"]), "");
    assert!(state_exists(&t));
    let snap = t.snapshot();
    for resume in ["--continue", "--abort"] {
        let r = bport::run(t.path(), &["apply", resume]);
        assert_eq!(r.code, Some(2), "{resume}: {}", r.transcript());
        assert_eq!(t.snapshot(), snap, "{resume} touched something");
    }
    let quit = bport::run(t.path(), &["apply", "--quit"]);
    assert_eq!(quit.code, Some(0), "{}", quit.transcript());
    assert_eq!(t.snapshot(), snap);
    assert_eq!(head(&t), mine);
}

/// A `git add` while bport picks: refused before writing, and the staged file stays staged through `--continue`
/// and `--abort` (both refuse) and `--quit`.
#[test]
fn a_git_add_during_a_run_is_never_undone() {
    skip_unless!(has_git());
    let t = repo::upstream_and_vendor();
    let (_d, list) = list_file(&t.list("master..upstream"));
    let apply = ["apply", list.to_str().unwrap()];
    let n = at(&points(&t, &apply), "pack-written");
    let out = run_env(
        t.path(),
        &apply,
        &[(
            "BPORT_TEST_FAULT_RUN",
            format!("{n}:echo staged > added.txt && git add added.txt"),
        )],
    );
    assert_eq!(out.code, Some(2), "{}", out.transcript());
    assert!(
        out.stderr
            .contains("the index changed while bport apply was running"),
        "{}",
        out.stderr
    );
    let staged = || git_ok(t.path(), &["diff", "--cached", "--name-only"]);
    assert_eq!(staged(), "added.txt\n");
    let snap = t.snapshot();
    for resume in ["--continue", "--abort"] {
        let r = bport::run(t.path(), &["apply", resume]);
        assert_ne!(r.code, Some(0), "{resume}: {}", r.transcript());
        assert_eq!(t.snapshot(), snap, "{resume} touched something");
    }
    assert!(bport::run(t.path(), &["apply", "--quit"]).code == Some(0));
    assert_eq!(staged(), "added.txt\n");
    assert_eq!(t.snapshot(), snap);
}

/// A `git status`-like refresh of the index's stat data during a run rewrites the index file but changes no entry:
/// the run goes on and ends as if alone.
#[test]
fn an_index_refresh_during_a_run_is_not_a_change() {
    skip_unless!(has_git());
    let t = repo::upstream_and_vendor();
    let (_d, list) = list_file(&t.list("master..upstream"));
    let apply = ["apply", list.to_str().unwrap()];
    let alone = t.copy();
    assert_eq!(bport::run(alone.path(), &apply).code, Some(0));
    let n = at(&points(&t, &apply), "pack-written");
    let scratch = tempfile::tempdir().unwrap();
    let (before, flag) = (
        scratch.path().join("before"),
        scratch.path().join("changed"),
    );
    let out = run_env(
        t.path(),
        &apply,
        &[(
            "BPORT_TEST_FAULT_RUN",
            format!(
                "{n}:cp .git/index {b} && touch -d @1800000000 dir/c.txt && git update-index -q --refresh; \
                 cmp -s .git/index {b} || touch {f}",
                b = before.display(),
                f = flag.display()
            ),
        )],
    );
    assert!(flag.exists(), "the refresh did not rewrite the index");
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    assert_eq!(t.snapshot(), alone.snapshot());
}

/// A second `bport apply` started while the first holds the lock (run from inside the first, at its first fault
/// point, so the interleaving is fixed) is refused, and the first finishes as if alone.
#[test]
fn a_second_run_while_one_holds_the_lock_is_refused() {
    let t = repo::upstream_and_vendor();
    let (_d, list) = list_file(&t.list("master..upstream"));
    let alone = t.copy();
    assert_eq!(
        bport::run(alone.path(), &["apply", list.to_str().unwrap()]).code,
        Some(0)
    );
    let out_dir = tempfile::tempdir().unwrap();
    let second = out_dir.path().join("second");
    let cmd = format!(
        "1:env -u BPORT_TEST_FAULT_RUN {} apply {} > {} 2>&1; echo $? >> {}",
        env!("CARGO_BIN_EXE_bport"),
        list.display(),
        second.display(),
        second.display()
    );
    let first = run_env(
        t.path(),
        &["apply", list.to_str().unwrap()],
        &[("BPORT_TEST_FAULT_RUN", cmd)],
    );
    assert_eq!(first.code, Some(0), "{}", first.transcript());
    let said = std::fs::read_to_string(&second).unwrap();
    assert!(
        said.contains("another bport apply is running in this repository"),
        "{said}"
    );
    assert!(said.ends_with("\n2\n"), "{said}");
    assert_eq!(t.snapshot(), alone.snapshot());
}

/// Checks a repository after a recovery: exactly one of the expected snapshots.
fn assert_one_of(t: &TestRepo, want: &[(&str, &Snapshot)], what: &str) {
    let got = t.snapshot();
    assert!(
        want.iter().any(|(_, s)| **s == got),
        "{what}: the repository matches none of {:?}",
        want.iter().map(|(n, _)| *n).collect::<Vec<_>>()
    );
}

/// `bport apply` killed at every fault point of a clean run, of a run that stops, of `--continue` and of
/// `--abort`, then recovered: `--abort` always restores the start exactly (branch, index, worktree, untracked
/// files), `--continue` always reaches exactly the uninterrupted result (the same stop, or the same final commits).
#[test]
fn killed_at_every_write_step_recovers_exactly() {
    let kill = |n: usize| [("BPORT_TEST_FAULT_KILL", n.to_string())];
    let mut runs = 0;

    // A clean run of seven picks: killed anywhere, --continue gives the same commits, --abort the start.
    let t = repo::upstream_and_vendor();
    let (_d, list) = list_file(&t.list("master..upstream"));
    let apply = ["apply", list.to_str().unwrap()];
    let start = t.snapshot();
    let done = {
        let c = t.copy();
        assert_eq!(bport::run(c.path(), &apply).code, Some(0));
        c.snapshot()
    };
    let clean_points = points(&t, &apply);
    assert!(
        clean_points
            .iter()
            .filter(|p| *p == "checkout-file")
            .count()
            >= 3,
        "{clean_points:?}"
    );
    for n in 1..=clean_points.len() {
        for recover in ["--continue", "--abort"] {
            let c = t.copy();
            let died = run_env(c.path(), &apply, &kill(n));
            assert_eq!(
                died.code,
                None,
                "point {n} ({}) did not kill",
                clean_points[n - 1]
            );
            let r = bport::run(c.path(), &["apply", recover]);
            runs += 2;
            let what = format!("killed at {n} ({}), then {recover}", clean_points[n - 1]);
            if recover == "--abort" {
                // Killed before the state existed there is no run to abort; either way, the start.
                assert!(
                    matches!(r.code, Some(0) | Some(2)),
                    "{what}: {}",
                    r.transcript()
                );
                assert_one_of(&c, &[("start", &start)], &what);
            } else if r.code == Some(0) {
                assert_one_of(&c, &[("done", &done)], &what);
            } else {
                // No state saved yet: nothing was written, and running again finishes.
                assert!(
                    r.stderr.contains("no bport apply is in progress"),
                    "{what}: {}",
                    r.transcript()
                );
                assert_one_of(&c, &[("start", &start)], &what);
            }
        }
    }

    // A run that stops at a conflict after one clean pick.
    let (t, _d2, list) = conflict_in_the_middle();
    let apply = ["apply", list.to_str().unwrap()];
    let start = t.snapshot();
    let stopped_repo = t.copy();
    assert_eq!(bport::run(stopped_repo.path(), &apply).code, Some(1));
    let stopped = stopped_repo.snapshot();
    let resolved_repo = stopped_repo.copy();
    resolve(&resolved_repo);
    let finished = {
        let c = resolved_repo.copy();
        let r = bport::run(c.path(), &["apply", "--continue"]);
        assert_eq!(r.code, Some(0), "{}", r.transcript());
        c.snapshot()
    };
    let stop_points = points(&t, &apply);
    for n in 1..=stop_points.len() {
        for recover in ["--continue", "--abort"] {
            let c = t.copy();
            assert_eq!(run_env(c.path(), &apply, &kill(n)).code, None);
            let r = bport::run(c.path(), &["apply", recover]);
            runs += 2;
            let what = format!(
                "stopping run killed at {n} ({}), then {recover}",
                stop_points[n - 1]
            );
            if recover == "--abort" {
                assert!(
                    matches!(r.code, Some(0) | Some(2)),
                    "{what}: {}",
                    r.transcript()
                );
                assert_one_of(&c, &[("start", &start)], &what);
            } else {
                assert!(
                    matches!(r.code, Some(1) | Some(2)),
                    "{what}: {}",
                    r.transcript()
                );
                assert_one_of(&c, &[("the stop", &stopped), ("start", &start)], &what);
            }
        }
    }

    // --continue killed at each point: again --continue finishes exactly; --abort restores the start.
    let cont_points = points(&resolved_repo, &["apply", "--continue"]);
    for n in 1..=cont_points.len() {
        for recover in ["--continue", "--abort"] {
            let c = resolved_repo.copy();
            assert_eq!(
                run_env(c.path(), &["apply", "--continue"], &kill(n)).code,
                None
            );
            let r = bport::run(c.path(), &["apply", recover]);
            runs += 2;
            let what = format!(
                "--continue killed at {n} ({}), then {recover}",
                cont_points[n - 1]
            );
            assert_eq!(r.code, Some(0), "{what}: {}", r.transcript());
            let want = if recover == "--abort" {
                &start
            } else {
                &finished
            };
            assert_one_of(&c, &[(recover, want)], &what);
        }
    }

    // --abort killed at each point: --abort again restores the start.
    let abort_points = points(&stopped_repo, &["apply", "--abort"]);
    assert!(
        abort_points.iter().any(|p| p == "reset-file"),
        "{abort_points:?}"
    );
    for n in 1..=abort_points.len() {
        let c = stopped_repo.copy();
        assert_eq!(
            run_env(c.path(), &["apply", "--abort"], &kill(n)).code,
            None
        );
        let r = bport::run(c.path(), &["apply", "--abort"]);
        runs += 1;
        let what = format!("--abort killed at {n} ({})", abort_points[n - 1]);
        assert_eq!(r.code, Some(0), "{what}: {}", r.transcript());
        assert_one_of(&c, &[("start", &start)], &what);
    }
    assert!(runs >= 60, "only {runs} recoveries");
}
