//! What a resumed run leaves in the index, with `git cherry-pick` as the oracle: a `--skip` and a `--continue`
//! that stop again at the very next patch (the run reuses the index it parsed and writes it as seldom as it can).

use super::*;
use crate::support::oracle::git_ok;

/// Ten lines `tag line i`.
fn lines(tag: &str) -> String {
    (1..=10).map(|i| format!("{tag} line {i}\n")).collect()
}

/// `f.txt` and `g.txt` on master; `vendor` edits line 2 of `f.txt` and line 7 of `g.txt`, `upstream` edits the
/// same lines in three commits (f, g, then f again), so every pick conflicts. Left on `vendor`.
fn three_conflicts() -> TestRepo {
    let t = TestRepo::new();
    let (f, g) = (lines("f"), lines("g"));
    t.commit(
        "base",
        &[
            ("f.txt", Some(&f)),
            ("g.txt", Some(&g)),
            ("dir/h.txt", Some("h\n")),
        ],
    );
    t.branch("upstream", "master");
    t.branch("vendor", "master");
    t.checkout("upstream");
    let f1 = f.replace("f line 2\n", "f line two\n");
    t.commit("f: line two", &[("f.txt", Some(&f1))]);
    t.commit(
        "g: line seven",
        &[
            ("g.txt", Some(&g.replace("g line 7\n", "g line seven\n"))),
            ("dir/new.txt", Some("new\n")),
        ],
    );
    t.commit(
        "f: line 2 again",
        &[("f.txt", Some(&f1.replace("f line two\n", "f line II\n")))],
    );
    t.checkout("vendor");
    t.commit(
        "vendor edits",
        &[
            ("f.txt", Some(&f.replace("f line 2\n", "f vendor 2\n"))),
            ("g.txt", Some(&g.replace("g line 7\n", "g vendor 7\n"))),
        ],
    );
    t
}

/// Index stages, worktree files and `git status` of the two repositories are the same, and git finds bport's
/// index and objects sound.
fn same_stop(ours: &TestRepo, theirs: &TestRepo, what: &str) {
    let (a, b) = (ours.snapshot(), theirs.snapshot());
    assert_eq!(a.index, b.index, "index stages after {what}");
    assert_eq!(a.files, b.files, "worktree after {what}");
    assert_eq!(
        git_ok(ours.path(), &["status", "--porcelain"]),
        git_ok(theirs.path(), &["status", "--porcelain"]),
        "git status after {what}"
    );
    git_ok(ours.path(), &["fsck", "--no-progress", "--no-dangling"]);
    // `git diff` reads every entry's stat data: a worktree bport wrote is clean where git's is.
    assert_eq!(
        git_ok(ours.path(), &["diff", "--name-only"]),
        git_ok(theirs.path(), &["diff", "--name-only"]),
        "unstaged paths after {what}"
    );
}

/// Takes the picked side of every conflicted path and stages it, in both repositories alike.
fn take_theirs(t: &TestRepo) {
    let unmerged = git_ok(t.path(), &["diff", "--name-only", "--diff-filter=U"]);
    for path in unmerged.lines() {
        git_ok(t.path(), &["checkout", "--theirs", "--", path]);
        git_ok(t.path(), &["add", "--", path]);
    }
}

#[test]
fn a_skip_and_a_continue_that_stop_again_leave_the_index_git_leaves() {
    skip_unless!(has_git());
    let t = three_conflicts();
    let g = t.copy();
    let (_d, list) = list_file(&t.list("master..upstream"));
    // Both tools take one step and must end alike: bport's exit, git's, and the stop's state.
    let step = |bport_args: &[&str], git_args: &[&str], code: i32, what: &str| {
        let ours = bport::run(t.path(), bport_args);
        assert_eq!(ours.code, Some(code), "{what}: {}", ours.transcript());
        let out = oracle::git(g.path()).args(git_args).output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{what}: git");
        same_stop(&t, &g, what);
    };
    let tree = |r: &TestRepo| git_ok(r.path(), &["rev-parse", "HEAD^{tree}"]);
    step(
        &["apply", list.to_str().unwrap()],
        &["cherry-pick", "master..upstream"],
        1,
        "the first stop",
    );
    step(
        &["apply", "--skip"],
        &["cherry-pick", "--skip"],
        1,
        "--skip",
    );
    take_theirs(&t);
    take_theirs(&g);
    step(
        &["apply", "--continue"],
        &["cherry-pick", "--continue"],
        1,
        "--continue",
    );
    assert_eq!(tree(&t), tree(&g), "the committed resolution");
    take_theirs(&t);
    take_theirs(&g);
    step(
        &["apply", "--continue"],
        &["cherry-pick", "--continue"],
        0,
        "the last --continue",
    );
    assert_eq!(tree(&t), tree(&g), "the final tree");
}
