//! Uncommitted changes in the worktree, with `git cherry-pick` as the oracle: a modified or untracked file that
//! no pick writes never blocks a run and survives picks, stops, `--continue`, `--skip` and `--abort` byte for
//! byte; a pick that writes a modified path is refused before anything is written, naming the same paths as git,
//! with the picks before it committed.

use super::*;
use crate::support::oracle::git_ok;

fn lines(tag: &str, n: usize) -> String {
    (1..=n).map(|i| format!("{tag} line {i}\n")).collect()
}

const DIRTY: &str = "the user's own work\n";

/// master: `a`, `b`, `c`, `u`; `upstream` edits `a`, edits `c` (conflicting with `vendor`'s edit of `c`) and
/// adds `n`; HEAD on `vendor`.
fn fork() -> TestRepo {
    let t = TestRepo::new();
    t.commit(
        "base",
        &[
            ("a", Some(&lines("a", 10))),
            ("b", Some(&lines("b", 10))),
            ("c", Some(&lines("c", 10))),
            ("u", Some(&lines("u", 10))),
        ],
    );
    t.branch("upstream", "master");
    t.branch("vendor", "master");
    t.checkout("upstream");
    t.commit("edit a", &[("a", Some(&lines("a", 11)))]);
    t.commit(
        "edit c",
        &[("c", Some(&lines("c", 10).replace("c line 5", "upstream 5")))],
    );
    t.commit("add n", &[("n", Some("n\n"))]);
    t.checkout("vendor");
    t.commit(
        "vendor c",
        &[("c", Some(&lines("c", 10).replace("c line 5", "vendor 5")))],
    );
    t
}

fn layout(dir: &std::path::Path) -> Vec<String> {
    vec![
        git_ok(dir, &["ls-files", "-s"]),
        git_ok(dir, &["status", "--porcelain", "--untracked-files=all"]),
        git_ok(dir, &["rev-parse", "HEAD"]),
    ]
}

fn assert_same(t: &TestRepo, g: &TestRepo, when: &str) {
    assert_eq!(
        layout(t.path()),
        layout(g.path()),
        "{when}: index, status, HEAD"
    );
    assert_eq!(
        t.snapshot().files,
        g.snapshot().files,
        "{when}: worktree bytes"
    );
}

/// Dirties `u` (modified) and adds the untracked `junk`, then picks `vendor..upstream` with both tools.
fn start(t: &TestRepo, dirty: &[&str]) -> (TestRepo, Option<i32>, String) {
    for path in dirty {
        std::fs::write(t.path().join(path), DIRTY).unwrap();
    }
    std::fs::write(t.path().join("junk"), "untracked\n").unwrap();
    let g = t.copy();
    let commits: Vec<String> = git_ok(t.path(), &["rev-list", "--reverse", "vendor..upstream"])
        .lines()
        .map(str::to_owned)
        .collect();
    let mut args = vec!["cherry-pick"];
    args.extend(commits.iter().map(String::as_str));
    let git = oracle::git(g.path()).args(&args).output().unwrap();
    let (_d, list) = list_file(&t.list("vendor..upstream"));
    let out = bport::run(t.path(), &["apply", "--yes", list.to_str().unwrap()]);
    let git_code = git.status.code();
    let git_err = String::from_utf8_lossy(&git.stderr).into_owned();
    // git exits 128 where bport refuses with its user-error status.
    assert_eq!(
        out.code == Some(0) || out.code == Some(1),
        git_code == Some(0) || git_code == Some(1),
        "git: {git_err}\nbport: {}",
        out.transcript()
    );
    if matches!(git_code, Some(0 | 1)) {
        assert_eq!(out.code, git_code, "{}", out.transcript());
    }
    assert_same(t, &g, "after the run");
    (g, out.code, out.stderr + &git_err)
}

fn cont(t: &TestRepo, g: &TestRepo, ours: &str, theirs: &str) {
    let git = oracle::git(g.path())
        .env("GIT_EDITOR", "true")
        .args(["cherry-pick", theirs])
        .output()
        .unwrap();
    let out = bport::run(t.path(), &["apply", ours]);
    assert_eq!(
        out.code,
        git.status.code(),
        "{ours}: {}\ngit: {}",
        out.transcript(),
        String::from_utf8_lossy(&git.stderr)
    );
    assert_same(t, g, ours);
}

/// `u` and `junk` are the user's: the stop at `c`, then `--skip` / `--abort` / a resolution and `--continue`,
/// each leave them as they were, and index, HEAD and worktree as git's.
#[test]
fn an_unrelated_dirty_file_survives_stops_continue_skip_and_abort() {
    skip_unless!(has_git());
    for (ours, theirs) in [
        ("--continue", "--continue"),
        ("--skip", "--skip"),
        ("--abort", "--abort"),
    ] {
        let t = fork();
        let (g, code, _) = start(&t, &["u"]);
        assert_eq!(code, Some(1));
        if ours == "--continue" {
            for dir in [t.path(), g.path()] {
                git_ok(dir, &["checkout", "--theirs", "--", "c"]);
                git_ok(dir, &["add", "c"]);
            }
        }
        cont(&t, &g, ours, theirs);
        assert_eq!(t.read("u"), DIRTY);
        assert_eq!(t.read("junk"), "untracked\n");
    }
}

/// Without a conflict: the run goes through, `u` untouched.
#[test]
fn an_unrelated_dirty_file_does_not_block_a_run() {
    skip_unless!(has_git());
    let t = fork();
    // No vendor edit of `c`: every pick is clean.
    git_ok(t.path(), &["reset", "-q", "--hard", "master"]);
    let (_g, code, _) = start(&t, &["u"]);
    assert_eq!(code, Some(0));
    assert_eq!(t.read("u"), DIRTY);
}

/// `a` is modified: git picks nothing ("Your local changes to the following files would be overwritten by
/// merge: a"), nor does bport; after a stash both pick the same, and the stash comes back the same.
#[test]
fn a_pick_writing_a_dirty_path_is_refused_naming_it() {
    skip_unless!(has_git());
    let t = fork();
    git_ok(t.path(), &["reset", "-q", "--hard", "master"]);
    let (g, code, err) = start(&t, &["a", "u"]);
    assert_ne!(code, Some(0));
    assert!(err.contains("overwritten by merge:\n\ta\n"), "{err}");
    assert!(
        err.contains("would be overwritten by the pick: a\n"),
        "{err}"
    );
    assert_eq!(t.read("a"), DIRTY);
    for dir in [t.path(), g.path()] {
        git_ok(dir, &["stash", "-q"]);
    }
    // bport's --continue retries the refused pick; git's would drop it (its sequencer counts the refused pick as
    // done when no CHERRY_PICK_HEAD is left), so the oracle picks the list again from the refused one.
    let out = bport::run(t.path(), &["apply", "--continue"]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    git_ok(g.path(), &["cherry-pick", "--quit"]);
    let commits = git_ok(g.path(), &["rev-list", "--reverse", "vendor..upstream"]);
    let mut args = vec!["cherry-pick"];
    args.extend(commits.lines());
    git_ok(g.path(), &args);
    assert_same(&t, &g, "--continue");
    for dir in [t.path(), g.path()] {
        let _ = oracle::git(dir)
            .args(["stash", "pop", "-q"])
            .output()
            .unwrap();
    }
    assert_same(&t, &g, "after stash pop");
}

/// The later pick writes the dirty `c`: the picks before it are committed (as git commits them), nothing is
/// written at `c`, and `--abort` brings back the start with `c` still the user's.
#[test]
fn a_later_pick_writing_a_dirty_path_stops_there_and_aborts_cleanly() {
    skip_unless!(has_git());
    let t = fork();
    let (g, code, err) = start(&t, &["c"]);
    assert_ne!(code, Some(0));
    assert!(err.contains("overwritten by merge:\n\tc\n"), "{err}");
    assert!(
        err.contains("would be overwritten by the pick: c\n"),
        "{err}"
    );
    assert_eq!(t.read("c"), DIRTY);
    cont(&t, &g, "--abort", "--abort");
    assert_eq!(t.read("c"), DIRTY);
}
