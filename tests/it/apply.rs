//! `bport list`, `bport apply` (with --continue/--skip/--abort) and `bport status`, with the real git as oracle
//! (issue #2, "Must show" 1–5).

use crate::support::bport;
use crate::support::oracle::{self, git_ok};
use crate::support::repo::{self, TestRepo};
use std::path::PathBuf;

/// Writes `text` as a patch list outside the worktree (an untracked file would be fine, but keeps snapshots pure).
fn list_file(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("patches.txt");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

fn short(t: &TestRepo, rev: &str) -> String {
    t.oid(rev).to_string()[..7].to_owned()
}

fn has_git() -> bool {
    oracle::require("git", "apt-get install git")
}

/// Must show 1: the foo/bar workflow end to end.
#[test]
fn foo_bar_workflow_stops_resolves_continues_and_then_skips_by_subject() {
    if !has_git() {
        return;
    }
    let t = repo::foo_bar();
    let listed = bport::run(t.path(), &["list", "master..bar"]);
    assert_eq!(listed.code, Some(0), "{}", listed.transcript());
    assert_eq!(
        listed.stdout,
        git_ok(t.path(), &["log", "--reverse", "--oneline", "master..bar"])
    );
    assert_eq!(listed.stdout, t.list("master..bar"));
    let (_d, list) = list_file(&listed.stdout);
    let (bar1, bar2) = (short(&t, "bar~1"), short(&t, "bar"));

    // Oracle: what git cherry-pick leaves at the same conflict.
    let g = t.copy();
    let out = oracle::git(g.path())
        .args(["cherry-pick", "bar~1"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "git cherry-pick should conflict"
    );

    let stop = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(
        stop.transcript(),
        format!(
            "------- stderr -------\n\
             Stopped at 1/2 {bar1} bar description: conflicts in\n  both modified: README\n\
             So far: picked 0, skipped 0.\n\
             Resolve the conflicts and stage them with `git add`, then run one of:\n  \
             bport apply --continue   commit the resolution and go on\n  \
             bport apply --skip       drop this patch and go on\n  \
             bport apply --abort      restore the branch as it was before the run\n\
             [exit status: 1]\n"
        )
    );
    assert_eq!(
        t.read("README"),
        g.read("README"),
        "markers as git writes them"
    );
    assert!(t.read("README").contains(&format!(
        "<<<<<<< HEAD\nfoo\n=======\nbar\n>>>>>>> {bar1} (bar description)\n"
    )));
    assert_eq!(
        git_ok(t.path(), &["ls-files", "-u"]),
        git_ok(g.path(), &["ls-files", "-u"])
    );
    assert_eq!(git_ok(t.path(), &["status", "--porcelain"]), "UU README\n");

    // A second apply while stopped is refused, and --continue refuses while the conflict is unresolved.
    let again = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(again.code, Some(2), "{}", again.transcript());
    assert!(
        again.stderr.contains("already in progress"),
        "{}",
        again.stderr
    );
    let early = bport::run(t.path(), &["apply", "--continue"]);
    assert_eq!(early.code, Some(2), "{}", early.transcript());
    assert!(
        early.stderr.contains("unresolved conflicts remain: README"),
        "{}",
        early.stderr
    );

    let resolved = repo::README.replace("WHAT IS LINUX?\n", "WHAT IS LINUX?\nfoo\nbar\n");
    std::fs::write(t.path().join("README"), &resolved).unwrap();
    git_ok(t.path(), &["add", "README"]);
    let cont = bport::run(t.path(), &["apply", "--continue"]);
    assert_eq!(cont.code, Some(0), "{}", cont.transcript());
    assert_eq!(
        cont.stderr,
        format!(
            "2/2 {bar2} more bar description: picked as {}\nDone: picked 2, skipped 0.\n",
            short(&t, "HEAD")
        )
    );
    assert_eq!(t.read("README"), format!("{resolved}more bar\n"));
    assert_eq!(git_ok(t.path(), &["status", "--porcelain"]), "");

    let rerun = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(rerun.code, Some(0), "{}", rerun.transcript());
    assert_eq!(
        rerun.stderr,
        format!(
            "1/2 {bar1} bar description: skipped (already applied: subject, {})\n\
             2/2 {bar2} more bar description: skipped (already applied: subject, {})\n\
             Done: picked 0, skipped 2 (subject: 2).\n",
            short(&t, "HEAD~1"),
            short(&t, "HEAD"),
        )
    );
    assert_eq!(
        git_ok(
            t.path(),
            &["log", "--format=%s", "--reverse", "master..HEAD"]
        ),
        "foo\nbar description\nmore bar description\n"
    );
}
