//! Sparse checkouts (`git sparse-checkout set`, cone and non-cone), with `git cherry-pick` as the oracle: a pick
//! touching paths outside the sparse patterns commits without writing them (their index entries keep
//! skip-worktree), a conflict there is written to the worktree as git materialises it; same exit, same commits,
//! same index with its skip-worktree bits, same worktree files.

use super::*;
use crate::support::oracle::git_ok;

fn lines(tag: &str, n: usize) -> String {
    (1..=n).map(|i| format!("{tag} line {i}\n")).collect()
}

/// master: `in/a`, `out/b`, `out/d`, `top`; branch `upstream` from it (checked out, for the caller's commits);
/// `vendor` from it.
fn fork() -> TestRepo {
    let t = TestRepo::new();
    t.commit(
        "base",
        &[
            ("in/a", Some(&lines("a", 10))),
            ("out/b", Some(&lines("b", 10))),
            ("out/d", Some("d\n")),
            ("top", Some("top\n")),
        ],
    );
    t.branch("upstream", "master");
    t.branch("vendor", "master");
    t.checkout("upstream");
    t
}

/// The worktree and index as git reports them, skip-worktree bits included.
fn layout(dir: &std::path::Path) -> Vec<String> {
    vec![
        git_ok(dir, &["ls-files", "-t", "-s"]),
        git_ok(dir, &["ls-files", "-v"]),
        git_ok(dir, &["status", "--porcelain"]),
        git_ok(dir, &["rev-parse", "HEAD"]),
    ]
}

fn assert_same(t: &TestRepo, g: &TestRepo) {
    assert_eq!(
        layout(t.path()),
        layout(g.path()),
        "ls-files -t -s, ls-files -v, status, HEAD"
    );
    assert_eq!(
        t.snapshot().files,
        g.snapshot().files,
        "worktree files and their bytes"
    );
}

/// Makes the checkout of `vendor` sparse (`sparse_args` after `git sparse-checkout set`), picks `range` with
/// bport, and with `git cherry-pick` on a copy; asserts the same exit and layout. Returns both repositories and
/// the exit code.
fn pick_both(t: TestRepo, sparse_args: &[&str], range: &str) -> (TestRepo, TestRepo, Option<i32>) {
    t.checkout("vendor");
    let mut args = vec!["sparse-checkout", "set"];
    args.extend(sparse_args);
    git_ok(t.path(), &args);
    let g = t.copy();
    let commits: Vec<String> = git_ok(t.path(), &["rev-list", "--reverse", range])
        .lines()
        .map(str::to_owned)
        .collect();
    let mut args = vec!["cherry-pick"];
    args.extend(commits.iter().map(String::as_str));
    let git = oracle::git(g.path()).args(&args).output().unwrap();
    let (_d, list) = list_file(&t.list(range));
    let out = bport::run(t.path(), &["apply", "--yes", list.to_str().unwrap()]);
    assert_eq!(
        out.code,
        git.status.code(),
        "git: {}{}\nbport: {}",
        String::from_utf8_lossy(&git.stdout),
        String::from_utf8_lossy(&git.stderr),
        out.transcript()
    );
    assert_same(&t, &g);
    (t, g, out.code)
}

/// A series editing, adding and deleting outside the cone and editing inside it.
fn series(t: &TestRepo) {
    t.commit("in change", &[("in/a", Some(&lines("a", 11)))]);
    t.commit("out change", &[("out/b", Some(&lines("b", 12)))]);
    t.commit("out add", &[("out/c", Some("c\n"))]);
    t.commit("out delete", &[("out/d", None)]);
    t.commit("new dir", &[("far/e", Some("e\n")), ("in/f", Some("f\n"))]);
}

#[test]
fn picks_outside_the_cone_commit_without_writing_them() {
    skip_unless!(has_git());
    let t = fork();
    series(&t);
    let (t, _g, code) = pick_both(t, &["in"], "vendor..upstream");
    assert_eq!(code, Some(0));
    assert!(!t.path().join("out").exists());
    assert!(git_ok(t.path(), &["ls-files", "-t"]).contains("S out/c"));
}

#[test]
fn picks_outside_non_cone_patterns_commit_without_writing_them() {
    skip_unless!(has_git());
    let t = fork();
    series(&t);
    let (t, _g, code) = pick_both(
        t,
        &["--no-cone", "/*", "!/out/", "!/far/"],
        "vendor..upstream",
    );
    assert_eq!(code, Some(0));
    assert!(t.path().join("top").exists() && !t.path().join("out").exists());
}

/// The branch and the pick change the same line of `out/b`, outside the cone: git writes the conflicted file out
/// (stages 1-3, no skip-worktree), and after `--continue` the resolved path is in the worktree as git leaves it.
#[test]
fn a_conflict_outside_the_cone_is_written_as_git_writes_it() {
    skip_unless!(has_git());
    let t = fork();
    t.commit("in change", &[("in/a", Some(&lines("a", 11)))]);
    t.commit(
        "out change",
        &[(
            "out/b",
            Some(&lines("b", 10).replace("b line 5", "upstream 5")),
        )],
    );
    t.commit("out add", &[("out/c", Some("c\n"))]);
    t.checkout("vendor");
    t.commit(
        "vendor change",
        &[(
            "out/b",
            Some(&lines("b", 10).replace("b line 5", "vendor 5")),
        )],
    );
    let (t, g, code) = pick_both(t, &["in"], "vendor..upstream");
    assert_eq!(code, Some(1));
    assert!(t.read("out/b").contains("<<<<<<<"));
    for dir in [t.path(), g.path()] {
        git_ok(dir, &["checkout", "--theirs", "--", "out/b"]);
        git_ok(dir, &["add", "--sparse", "out/b"]);
    }
    let git = oracle::git(g.path())
        .env("GIT_EDITOR", "true")
        .args(["cherry-pick", "--continue"])
        .output()
        .unwrap();
    let out = bport::run(t.path(), &["apply", "--continue"]);
    assert_eq!(out.code, git.status.code(), "{}", out.transcript());
    assert_eq!(out.code, Some(0));
    assert_same(&t, &g);
}

/// Stopped at a conflict outside the cone, `--skip` and `--abort` leave index and worktree as git's do.
#[test]
fn skip_and_abort_after_a_conflict_outside_the_cone_match_git() {
    skip_unless!(has_git());
    for (ours, theirs) in [("--skip", "--skip"), ("--abort", "--abort")] {
        let t = fork();
        t.commit(
            "out change",
            &[(
                "out/b",
                Some(&lines("b", 10).replace("b line 5", "upstream 5")),
            )],
        );
        t.commit("out add", &[("out/c", Some("c\n"))]);
        t.commit("in change", &[("in/a", Some(&lines("a", 11)))]);
        t.checkout("vendor");
        t.commit(
            "vendor change",
            &[(
                "out/b",
                Some(&lines("b", 10).replace("b line 5", "vendor 5")),
            )],
        );
        let (t, g, code) = pick_both(t, &["in"], "vendor..upstream");
        assert_eq!(code, Some(1));
        let git = oracle::git(g.path())
            .env("GIT_EDITOR", "true")
            .args(["cherry-pick", theirs])
            .output()
            .unwrap();
        let out = bport::run(t.path(), &["apply", ours]);
        assert_eq!(out.code, git.status.code(), "{ours}: {}", out.transcript());
        assert_same(&t, &g);
    }
}

/// A nested cone (`set out/sub`): `out`'s own files are in, `out/sub` whole, `out/other` out.
#[test]
fn a_nested_cone_keeps_the_parents_files() {
    skip_unless!(has_git());
    let t = fork();
    t.commit(
        "nested",
        &[
            ("out/b", Some(&lines("b", 11))),
            ("out/sub/x/y", Some("y\n")),
            ("out/other/z", Some("z\n")),
            ("in/a", Some(&lines("a", 12))),
        ],
    );
    let (t, _g, code) = pick_both(t, &["out/sub"], "vendor..upstream");
    assert_eq!(code, Some(0));
    assert!(t.path().join("out/b").exists() && t.path().join("out/sub/x/y").exists());
    assert!(!t.path().join("out/other").exists() && !t.path().join("in").exists());
}
