//! Results equal to git cherry-pick on copies of the same repository (also -X, diff3, renames, -m).

use super::*;
use crate::support::oracle::git_ok;
use crate::support::repo;

/// On a list without conflicts, every commit (tree, author, committer, message, so the id) equals what
/// `git cherry-pick <range>` makes on a copy. With `-x -s` too.
#[test]
fn clean_list_equals_git_cherry_pick_commit_for_commit() {
    skip_unless!(has_git());
    for flags in [&[][..], &["-x", "-s"][..]] {
        let t = repo::upstream_and_vendor();
        let g = t.copy();
        let mut args = vec!["cherry-pick"];
        args.extend(flags);
        args.push("master..upstream");
        git_ok(g.path(), &args);

        let (_d, list) = list_file(&t.list("master..upstream"));
        let mut args = vec!["apply"];
        args.extend(flags);
        args.push(list.to_str().unwrap());
        let out = bport::run(t.path(), &args);
        assert_eq!(out.code, Some(0), "{}", out.transcript());
        assert!(
            out.stderr.ends_with("Done: picked 7, skipped 0.\n"),
            "{}",
            out.stderr
        );

        let ours = git_ok(
            t.path(),
            &[
                "log",
                "--format=%H %T %an <%ae> %ad | %cn <%ce> %cd%n%B",
                "master..HEAD",
            ],
        );
        let theirs = git_ok(
            g.path(),
            &[
                "log",
                "--format=%H %T %an <%ae> %ad | %cn <%ce> %cd%n%B",
                "master..HEAD",
            ],
        );
        assert_eq!(ours, theirs, "flags {flags:?}");
        assert_eq!(
            git_ok(t.path(), &["status", "--porcelain"]),
            "",
            "worktree and index match HEAD"
        );
        assert_eq!(t.snapshot().files, g.snapshot().files);
        // Objects were written into memory and packed at the end: nothing may be missing.
        git_ok(t.path(), &["fsck", "--full", "--strict"]);
    }
}

/// `-X theirs` / `-X ours` resolve conflicting hunks as `git cherry-pick -X …` does (same commits).
#[test]
fn strategy_option_favours_a_side_like_git() {
    skip_unless!(has_git());
    for side in ["theirs", "ours"] {
        let t = scenario::foo_bar().repo();
        let g = t.copy();
        // Named deviation: a pick that ends up empty (as "bar description" does under -X ours) stops git's
        // cherry-pick but is skipped by bport; `--empty=drop` makes git do the same.
        git_ok(
            g.path(),
            &["cherry-pick", "--empty=drop", "-X", side, "master..bar"],
        );
        let (_d, list) = list_file(&t.list("master..bar"));
        let out = bport::run(t.path(), &["apply", "-X", side, list.to_str().unwrap()]);
        assert_eq!(out.code, Some(0), "{}", out.transcript());
        let fmt = "--format=%H %T%n%B";
        assert_eq!(
            git_ok(t.path(), &["log", fmt, "master..HEAD"]),
            git_ok(g.path(), &["log", fmt, "master..HEAD"]),
            "-X {side}"
        );
    }
}

/// merge.conflictStyle=diff3 and zdiff3 markers (with the `parent of …` base label) are git's, byte for byte.
#[test]
fn conflict_style_diff3_markers_match_git() {
    skip_unless!(has_git());
    for style in ["diff3", "zdiff3"] {
        let t = scenario::foo_bar().repo();
        t.repo
            .config()
            .unwrap()
            .set_str("merge.conflictStyle", style)
            .unwrap();
        let g = t.copy();
        let out = oracle::git(g.path())
            .args(["cherry-pick", "bar~1"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        let (_d, list) = list_file(&t.list("master..bar"));
        let stop = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
        assert_eq!(stop.code, Some(1), "{}", stop.transcript());
        assert_eq!(t.read("README"), g.read("README"), "{style}");
        assert!(t.read("README").contains(&format!(
            "||||||| parent of {} (bar description)\n",
            short(&t, "bar~1")
        )));
    }
}

/// A rename in the patch is followed: the branch's edit of the old path and the patch's edit merge at the new path,
/// as with git.
#[test]
fn renames_are_followed_like_git() {
    skip_unless!(has_git());
    let t = repo::upstream_and_vendor();
    let old = t
        .read("old.txt")
        .replace("old line 1\n", "old line one (vendor)\n");
    t.commit("vendor: edit old.txt", &[("old.txt", Some(&old))]);
    let g = t.copy();
    git_ok(g.path(), &["cherry-pick", "master..upstream"]);
    let (_d, list) = list_file(&t.list("master..upstream"));
    let out = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    assert_eq!(t.read("dir/renamed.txt"), g.read("dir/renamed.txt"));
    assert!(t
        .read("dir/renamed.txt")
        .starts_with("old line one (vendor)\n"));
    assert!(!t.path().join("old.txt").exists());
    let fmt = "--format=%T %s";
    assert_eq!(
        git_ok(t.path(), &["log", fmt, "master..HEAD"]),
        git_ok(g.path(), &["log", fmt, "master..HEAD"])
    );
}

/// `-m 1` picks a merge's changes against its first parent, as `git cherry-pick -m 1` does.
#[test]
fn merge_commit_with_mainline_matches_git() {
    skip_unless!(has_git());
    let t = repo::upstream_and_vendor();
    t.checkout("upstream");
    t.branch("topic", "upstream~2");
    t.checkout("topic");
    t.commit("topic: add a file", &[("topic.txt", Some("topic\n"))]);
    t.checkout("upstream");
    git_ok(
        t.path(),
        &["merge", "--no-ff", "-m", "Merge topic", "topic"],
    );
    t.checkout("vendor");
    let listed = bport::run(t.path(), &["list", "master..upstream"]);
    assert_eq!(
        listed.stdout,
        git_ok(
            t.path(),
            &["log", "--reverse", "--oneline", "master..upstream"]
        ),
        "with a merge"
    );
    let merge = t.oid("upstream");
    let g = t.copy();
    git_ok(g.path(), &["cherry-pick", "-m", "1", &merge.to_string()]);
    let (_d, list) = list_file(&format!("{} Merge topic\n", &merge.to_string()[..7]));
    let out = bport::run(t.path(), &["apply", "-m", "1", list.to_str().unwrap()]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    let fmt = "--format=%H %T %B";
    assert_eq!(
        git_ok(t.path(), &["log", "-1", fmt]),
        git_ok(g.path(), &["log", "-1", fmt])
    );
}
