//! The user's path through a run: stop, resolve, continue, skip, status, dry run.

use super::*;
use crate::support::oracle::git_ok;
use crate::support::repo;

/// The foo/bar workflow end to end.
#[test]
fn foo_bar_workflow_stops_resolves_continues_and_then_skips_by_subject() {
    skip_unless!(has_git());
    let t = scenario::foo_bar().repo();
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
             Recorded preimage for 'README'\n\
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
            "Recorded resolution for 'README'.\n\
             2/2 {bar2} more bar description: picked as {}\nDone: picked 2, skipped 0.\n",
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
            "1/2 {bar1} bar description: skipped (already applied: subject + same files, 100% of lines, {})\n\
             2/2 {bar2} more bar description: skipped (already applied: subject + same files, 100% of lines, {})\n\
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

/// --skip drops the stopped patch and goes on; -s is kept on the picks after a stop (git loses it).
#[test]
fn skip_drops_the_stopped_patch_and_keeps_signoff() {
    let (t, _d, list) = conflict_in_the_middle();
    let stop = bport::run(t.path(), &["apply", "-s", list.to_str().unwrap()]);
    assert_eq!(stop.code, Some(1), "{}", stop.transcript());
    let skip = bport::run(t.path(), &["apply", "--skip"]);
    assert_eq!(skip.code, Some(0), "{}", skip.transcript());
    assert!(
        skip.stderr
            .ends_with("Done: picked 3, skipped 1 (--skip: 1).\n"),
        "{}",
        skip.stderr
    );
    assert_eq!(
        t.subjects_since("master"),
        [
            "foo",
            "foo: add a tool",
            "bar: add notes",
            "more bar description",
            "bar: more notes"
        ]
    );
    let head = t.repo.head().unwrap().peel_to_commit().unwrap();
    assert_eq!(
        head.message().unwrap(),
        "bar: more notes\n\nSigned-off-by: Test Committer <committer@example.com>\n"
    );
    assert_eq!(
        t.read("README"),
        repo::README.replace("WHAT IS LINUX?\n", "WHAT IS LINUX?\nfoo\n") + "more bar\n"
    );
}

/// --dry-run prints the plan with the predicted conflict and touches nothing.
#[test]
fn dry_run_predicts_and_touches_nothing() {
    let (t, _d, list) = conflict_in_the_middle();
    let before = t.snapshot();
    let out = bport::run(t.path(), &["apply", "--dry-run", list.to_str().unwrap()]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    let s = |rev: &str| short(&t, rev);
    assert_eq!(
        out.stdout,
        format!(
            "1/4 {} bar: add notes: pick\n2/4 {} bar description: pick, conflict predicted in README\n3/4 {} more bar description: pick\n4/4 {} bar: more notes: pick\n\
             Plan: 4 to pick (1 with predicted conflicts), 0 to skip; dry run, nothing was changed.\n",
            s("bar~1"),
            s("bar~3"),
            s("bar~2"),
            s("bar")
        )
    );
    // Nothing on stderr: no "picked as" for commits that never exist.
    assert_eq!(out.stderr, "");
    assert_eq!(t.snapshot(), before);
    assert!(!t.path().join(".git/bport").join("state.json").exists());
}

/// At a stop, bport names upstream commits that added lines the patch relies on (its context and removed lines)
/// and are neither earlier in the list nor on the branch: the likely missing dependencies. "bar description" also
/// changed README, but far from this patch's lines, so it is not named.
#[test]
fn stop_names_likely_missing_dependencies() {
    let t = scenario::foo_bar().repo();
    t.checkout("bar");
    let readme = t
        .read("README")
        .replace("ON WHAT HARDWARE", "ON WHICH HARDWARE");
    t.commit("README: reword a heading", &[("README", Some(&readme))]);
    let readme = t.read("README").replace("today Linux", "these days Linux");
    t.commit("README: needs the reword", &[("README", Some(&readme))]);
    t.checkout("foo");
    // List only the last commit: its context needs the reword, which is missing.
    let (_d, list) = list_file(&t.list("bar~1..bar"));
    let out = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(out.code, Some(1), "{}", out.transcript());
    assert!(
        out.stderr.contains(&format!(
            "Likely missing dependencies (they added lines this patch relies on, and are neither earlier in the list nor on the branch):\n  {} README: reword a heading\n  {} more bar description\nSo far",
            short(&t, "bar~1"),
            short(&t, "bar~2"),
        )),
        "{}",
        out.stderr
    );
}

/// `--continue` commits the index, so a change to a path the stop staged that the user did not stage is refused,
/// named, whatever stat data it kept (an edit of the same size with its old mtime put back); changes to paths the
/// pick left alone (an edit with its old mtime, a deleted file) are the user's own and, as with git's
/// `cherry-pick --continue`, neither block nor get touched.
#[test]
fn continue_refuses_unstaged_changes_whatever_their_stat_data() {
    let t = scenario::foo_bar().repo();
    t.checkout("foo");
    t.commit(
        "add notes",
        &[("NOTES", Some("one\n")), ("OTHER", Some("two\n"))],
    );
    let (_d, list) = list_file(&t.list("master..bar"));
    let out = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(out.code, Some(1), "{}", out.transcript());
    let resolved = repo::README.replace("WHAT IS LINUX?\n", "WHAT IS LINUX?\nfoo\nbar\n");
    std::fs::write(t.path().join("README"), &resolved).unwrap();
    git_ok(t.path(), &["add", "README"]);

    let same_size_old_mtime = |path: &str, content: &str| {
        use std::os::unix::fs::MetadataExt;
        let file = t.path().join(path);
        let mtime = std::fs::metadata(&file).unwrap().mtime();
        std::fs::write(&file, content).unwrap();
        assert!(std::process::Command::new("touch")
            .args(["-m", "-d", &format!("@{mtime}")])
            .arg(&file)
            .status()
            .unwrap()
            .success());
    };
    same_size_old_mtime("NOTES", "ONE\n");
    same_size_old_mtime("README", &resolved.replace("foo", "FOO"));
    std::fs::remove_file(t.path().join("OTHER")).unwrap();
    let refused = bport::run(t.path(), &["apply", "--continue"]);
    assert_eq!(refused.code, Some(2), "{}", refused.transcript());
    assert!(refused.stderr.contains("README"), "{}", refused.stderr);
    for path in ["NOTES", "OTHER"] {
        assert!(!refused.stderr.contains(path), "{path}: {}", refused.stderr);
    }
    assert_eq!(
        git_ok(t.path(), &["rev-parse", "HEAD"]),
        git_ok(t.path(), &["rev-parse", "foo"])
    );

    std::fs::write(t.path().join("README"), &resolved).unwrap();
    let cont = bport::run(t.path(), &["apply", "--continue"]);
    assert_eq!(cont.code, Some(0), "{}", cont.transcript());
    assert_eq!(t.read("NOTES"), "ONE\n");
    // NOTES still has the stat data of the version the index holds, so whether `git status` looks inside depends
    // on the second the index was written in (git's racy-clean rule); a new mtime makes git compare its content,
    // which shows the change still unstaged.
    assert!(std::process::Command::new("touch")
        .args(["-m", "-d", "@86400"])
        .arg(t.path().join("NOTES"))
        .status()
        .unwrap()
        .success());
    assert_eq!(
        git_ok(t.path(), &["status", "--porcelain"]),
        " M NOTES\n D OTHER\n"
    );
}

/// The walk that finds dependencies and the paths each upstream commit changes are kept in `.git/bport/` for the
/// run's later stops; a kept file that does not read is walked again (same names), and the end of the run removes
/// them.
#[test]
fn later_stops_name_dependencies_from_the_kept_walk() {
    let t = scenario::foo_bar().repo();
    t.checkout("bar");
    let readme = t
        .read("README")
        .replace("ON WHAT HARDWARE", "ON WHICH HARDWARE");
    t.commit("README: reword a heading", &[("README", Some(&readme))]);
    let readme = t.read("README").replace("today Linux", "these days Linux");
    t.commit("README: needs the reword", &[("README", Some(&readme))]);
    let readme = t
        .read("README")
        .replace("ON WHICH HARDWARE", "ON WHICH HARDWARE (x86)");
    t.commit(
        "README: also needs the reword",
        &[("README", Some(&readme))],
    );
    t.checkout("foo");
    let (_d, list) = list_file(&t.list("bar~2..bar"));
    let kept = t.path().join(".git/bport/upstream-graph");
    let out = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(out.code, Some(1), "{}", out.transcript());
    let named = |stderr: &str| {
        stderr.contains(&format!(
            "on the branch):\n  {} README: reword a heading\n",
            short(&t, "bar~2")
        ))
    };
    assert!(named(&out.stderr), "{}", out.stderr);
    let paths = t.path().join(".git/bport/upstream-paths");
    assert!(kept.exists() && paths.exists());
    // A file cut short or not a memo at all is found again, not trusted.
    let whole = std::fs::read(&paths).unwrap();
    let cut = &whole[..whole.len() - 1];
    for (graph, memo) in [
        (b"".as_slice(), b"".as_slice()),
        (b"not a walk\n", b"not a walk\n"),
        (b"", cut),
    ] {
        if !graph.is_empty() {
            std::fs::write(&kept, graph).unwrap();
        }
        if !memo.is_empty() {
            std::fs::write(&paths, memo).unwrap();
        }
        let again = bport::run(t.path(), &["apply", "--skip"]);
        assert_eq!(again.code, Some(1), "{}", again.transcript());
        assert!(named(&again.stderr), "{}", again.stderr);
        let out = bport::run(t.path(), &["apply", "--abort"]);
        assert_eq!(out.code, Some(0), "{}", out.transcript());
        assert!(
            !kept.exists()
                && !paths.exists()
                && !t.path().join(".git/bport/branch-commits").exists()
        );
        let out = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
        assert_eq!(out.code, Some(1), "{}", out.transcript());
    }
}

/// Modify/delete, delete/modify and add/add conflicts leave index stages, worktree files and `git status` as
/// `git cherry-pick` leaves them.
#[test]
fn every_conflict_kind_is_left_as_git_leaves_it() {
    skip_unless!(has_git());
    let (t, _d, list) = Conflict::new(
        "base",
        &[
            ("gone-upstream", Some("1\n2\n")),
            ("gone-here", Some("a\nb\n")),
        ],
    )
    .branches("master", "vendor", "upstream")
    .ours(
        "vendor: the other sides",
        &[
            ("gone-upstream", Some("1\n2 vendor\n")),
            ("gone-here", None),
            ("both-added", Some("vendor\n")),
        ],
    )
    .theirs(
        "upstream: three conflicting changes",
        &[
            ("gone-upstream", None),
            ("gone-here", Some("a\nb upstream\n")),
            ("both-added", Some("upstream\n")),
        ],
    )
    .with_list();
    let g = t.copy();
    let out = oracle::git(g.path())
        .args(["cherry-pick", "upstream"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stop = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(stop.code, Some(1), "{}", stop.transcript());
    assert!(
        stop.stderr.contains(
            "conflicts in\n  both added: both-added\n  deleted by us: gone-here\n  deleted by them: gone-upstream\n"
        ),
        "{}",
        stop.stderr
    );
    assert_eq!(
        git_ok(t.path(), &["ls-files", "-s"]),
        git_ok(g.path(), &["ls-files", "-s"])
    );
    assert_eq!(
        git_ok(t.path(), &["status", "--porcelain"]),
        git_ok(g.path(), &["status", "--porcelain"])
    );
    assert_eq!(t.snapshot().files, g.snapshot().files);
    // Resolve by taking the branch's side everywhere, then continue.
    git_ok(t.path(), &["checkout", "--ours", "both-added"]);
    git_ok(t.path(), &["add", "both-added", "gone-upstream"]);
    git_ok(t.path(), &["rm", "-q", "gone-here"]);
    let cont = bport::run(t.path(), &["apply", "--continue"]);
    assert_eq!(cont.code, Some(0), "{}", cont.transcript());
    // rerere records the text resolution and, beyond git, the two modify/delete decisions.
    // Taking the branch's side everywhere leaves nothing to commit: the patch is dropped, and named.
    let dropped = format!(
        "1/1 {} upstream: three conflicting changes: dropped: the previous cherry-pick is now empty, possibly \
         due to conflict resolution (git would stop for `--skip` or `git commit --allow-empty`)\n",
        short(&t, "upstream")
    );
    let expected = format!(
        "Recorded resolution for 'both-added'.\n\
         Recorded decision for 'gone-here' (delete).\n\
         Recorded decision for 'gone-upstream' (keep).\n{dropped}\
         Done: picked 0, skipped 1 (empty: 1).\n"
    );
    assert_eq!(cont.stderr, expected);
}

/// The user may commit the resolution with git instead of `--continue`ing: bport takes that commit as the pick.
#[test]
fn continue_accepts_a_resolution_committed_with_git() {
    skip_unless!(has_git());
    let (t, _d, list) = scenario::foo_bar().with_list();
    let stop = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(stop.code, Some(1), "{}", stop.transcript());
    std::fs::write(
        t.path().join("README"),
        repo::README.replace("WHAT IS LINUX?\n", "WHAT IS LINUX?\nfoo\nbar\n"),
    )
    .unwrap();
    git_ok(t.path(), &["commit", "-qam", "bar description"]);
    let cont = bport::run(t.path(), &["apply", "--continue"]);
    assert_eq!(cont.code, Some(0), "{}", cont.transcript());
    assert_eq!(
        git_ok(
            t.path(),
            &["log", "--format=%s", "--reverse", "master..HEAD"]
        ),
        "foo\nbar description\nmore bar description\n"
    );
}

/// A detached HEAD works like a branch: picks move HEAD, --abort puts it back, and no branch is touched.
#[test]
fn detached_head_is_picked_onto_and_restored() {
    let t = scenario::foo_bar().repo();
    let foo = t.oid("foo");
    t.repo.set_head_detached(foo).unwrap();
    let before = t.snapshot();
    let (_d, list) = list_file(&t.list("master..bar"));
    let stop = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(stop.code, Some(1), "{}", stop.transcript());
    let abort = bport::run(t.path(), &["apply", "--abort"]);
    assert_eq!(abort.code, Some(0), "{}", abort.transcript());
    assert_eq!(t.snapshot(), before);
    let out = bport::run(t.path(), &["apply", "-X", "theirs", list.to_str().unwrap()]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    assert!(t.repo.head_detached().unwrap());
    assert_eq!(t.oid("foo"), foo, "the branch stays where it was");
    assert_eq!(
        t.subjects_since("master"),
        ["foo", "bar description", "more bar description"]
    );
}
