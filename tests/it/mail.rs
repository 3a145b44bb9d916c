//! `bport apply` on mail: a `git format-patch` series (an mbox) against `git am -3` as the oracle: the same
//! commits (tree, author, date, message) when it applies, the same stop when it conflicts; malformed mail named.

use crate::support::bport;
use crate::support::oracle;
use crate::support::repo::TestRepo;
use git2::Oid;

fn ten(tag: &str) -> String {
    (1..=10).map(|i| format!("{tag} line {i}\n")).collect()
}

/// `base`; `topic` with three commits by a non-ASCII author (one depends on another, one adds a file, one has a
/// `Link:` trailer); `target` (HEAD) from base with its own change, `conflicting` when line 2 of a.txt is changed
/// there too. Returns the repository and the series `git format-patch --stdout` writes.
fn series(conflicting: bool) -> (TestRepo, String) {
    series_with(conflicting, false, &[])
}

/// [`series`], with `--base=master` (the `base-commit:` line) when `with_base`, and the target carrying "c: add"
/// under another id.
fn series_with(conflicting: bool, with_base: bool, extra: &[&str]) -> (TestRepo, String) {
    let t = TestRepo::new();
    t.commit(
        "base",
        &[("a.txt", Some(&ten("a"))), ("b.txt", Some(&ten("b")))],
    );
    t.branch("topic", "master");
    t.branch("target", "master");
    t.checkout("topic");
    let a = t.read("a.txt");
    t.commit(
        "a: change line 2\n\nWhy it changes.\n",
        &[("a.txt", Some(&a.replace("a line 2\n", "a line two\n")))],
    );
    t.commit("c: add", &[("c.txt", Some("c\n"))]);
    let a = t.read("a.txt");
    t.commit(
        "a: change line 2 again\n\nBody.\n\nLink: https://lore.kernel.org/r/20260101.1234-1-x@example.com\nSigned-off-by: Jöhn Dœ <j@example.com>\n",
        &[("a.txt", Some(&a.replace("a line two\n", "a line 2 (final)\n")))],
    );
    // Re-author the topic as the mail's author (format-patch writes the author into From:).
    oracle::git_ok(
        t.path(),
        &[
            "-c",
            "user.name=x",
            "rebase",
            "-q",
            "--exec",
            "git commit -q --amend --no-edit --author='Jöhn Dœ <j@example.com>' --date='Thu, 1 Jan 2026 10:00:00 +0100'",
            "master",
        ],
    );
    let mut args = vec!["format-patch", "--stdout", "master..topic"];
    if with_base {
        args.push("--base=master");
    }
    args.extend_from_slice(extra);
    let mbox = oracle::git_ok(t.path(), &args);
    t.checkout("target");
    if with_base {
        t.commit("c: add", &[("c.txt", Some("c\n"))]);
    }
    let b = t.read("b.txt");
    t.commit(
        "b: target's own change",
        &[("b.txt", Some(&b.replace("b line 9\n", "b line nine\n")))],
    );
    if conflicting {
        let a = t.read("a.txt");
        t.commit(
            "a: target changes line 2",
            &[(
                "a.txt",
                Some(&a.replace("a line 2\n", "a line 2 (target)\n")),
            )],
        );
    }
    (t, mbox)
}

/// What of a commit `git am` decides: tree, author, author date, message.
fn made(t: &TestRepo, oid: Oid) -> (Oid, String, String, i64, i32, String) {
    let c = t.repo.find_commit(oid).unwrap();
    let a = c.author();
    (
        c.tree_id(),
        a.name().unwrap().to_owned(),
        a.email().unwrap().to_owned(),
        a.when().seconds(),
        a.when().offset_minutes(),
        c.message().unwrap().to_owned(),
    )
}

fn last(t: &TestRepo, n: usize) -> Vec<Oid> {
    (0..n).rev().map(|i| t.oid(&format!("HEAD~{i}"))).collect()
}

/// Also with CRLF line ends throughout (some mail clients save them; `git mailsplit` drops the CRs), and with the
/// author in an in-body `From:` line.
#[test]
fn a_format_patch_series_makes_the_commits_git_am_3_makes() {
    skip_unless!(oracle::has_git());
    for (crlf, extra) in [
        (false, &[][..]),
        (true, &[][..]),
        // Sent by someone else: the author moves to an in-body From: line.
        (false, &["--from=Sender Person <sender@example.com>"][..]),
    ] {
        same_commits_as_git_am(crlf, extra);
    }
}

fn same_commits_as_git_am(crlf: bool, extra: &[&str]) {
    let (t, mbox) = series_with(false, false, extra);
    let mbox = if crlf {
        mbox.replace('\n', "\r\n")
    } else {
        mbox
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("series.mbox");
    std::fs::write(&path, &mbox).unwrap();
    let theirs = t.copy();
    oracle::git_ok(theirs.path(), &["am", "-3", path.to_str().unwrap()]);
    let out = bport::run(t.path(), &["apply", path.to_str().unwrap()]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    let ours: Vec<_> = last(&t, 3).into_iter().map(|o| made(&t, o)).collect();
    let want: Vec<_> = last(&theirs, 3)
        .into_iter()
        .map(|o| made(&theirs, o))
        .collect();
    assert_eq!(ours, want);
    assert_eq!(ours[0].1, "Jöhn Dœ");
    assert!(ours[2].5.contains("Link: https://lore.kernel.org/r/"));
    assert_eq!(t.oid("HEAD~3"), theirs.oid("HEAD~3"));
}

#[test]
fn a_conflicting_mail_stops_where_git_am_3_stops() {
    skip_unless!(oracle::has_git());
    let (t, mbox) = series(true);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("series.mbox");
    std::fs::write(&path, &mbox).unwrap();
    let theirs = t.copy();
    let am = oracle::git(theirs.path())
        .args(["am", "-3", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!am.status.success(), "git am -3 was expected to stop");
    let git_conflicts = oracle::git_ok(theirs.path(), &["diff", "--name-only", "--diff-filter=U"]);
    let out = bport::run(t.path(), &["apply", "--yes", path.to_str().unwrap()]);
    assert_eq!(out.code, Some(1), "{}", out.transcript());
    assert!(
        out.stderr.contains("Stopped at 1/3"),
        "{}",
        out.transcript()
    );
    let ours = oracle::git_ok(t.path(), &["diff", "--name-only", "--diff-filter=U"]);
    assert_eq!(ours, git_conflicts);
    assert_eq!(ours, "a.txt\n");
    // Resolve as git's side would be resolved, and both go on to the same commits.
    for r in [&t, &theirs] {
        std::fs::write(
            r.path().join("a.txt"),
            ten("a").replace("a line 2\n", "a line two\n"),
        )
        .unwrap();
        oracle::git_ok(r.path(), &["add", "a.txt"]);
    }
    oracle::git_ok(theirs.path(), &["am", "--continue"]);
    let out = bport::run(t.path(), &["apply", "--continue"]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    let ours: Vec<_> = last(&t, 3).into_iter().map(|o| made(&t, o)).collect();
    let want: Vec<_> = last(&theirs, 3)
        .into_iter()
        .map(|o| made(&theirs, o))
        .collect();
    assert_eq!(ours, want);
}

/// Mail without a patch, and 8-bit header text, are named by their place and subject; nothing is touched.
#[test]
fn malformed_mail_is_named() {
    let (t, _) = series(false);
    let before = t.snapshot();
    let cases = [
        (
            "From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001\nFrom: A <a@example.com>\n\
             Date: Thu, 1 Jan 2026 00:00:00 +0000\nSubject: [PATCH] no diff here\n\nbody\n---\n a | 1 +\n",
            "error: mail 1 (\"no diff here\"): no patch (`diff --git`) in the mail\n",
        ),
        (
            "From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001\nFrom: Jöhn <a@example.com>\n\
             Date: Thu, 1 Jan 2026 00:00:00 +0000\nSubject: [PATCH] raw bytes\n\nbody\n---\ndiff --git a/a b/a\n",
            "error: mail 1 (\"raw bytes\"): 8-bit text in the from header (mail headers must be RFC 2047 \
             encoded)\n",
        ),
    ];
    for (text, want) in cases {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.mbox");
        std::fs::write(&path, text).unwrap();
        let out = bport::run(t.path(), &["apply", path.to_str().unwrap()]);
        assert_eq!(out.code, Some(2), "{}", out.transcript());
        assert!(out.stderr.starts_with(want), "{}", out.transcript());
    }
    assert_eq!(t.snapshot(), before);
}

/// With a `base-commit:` line the branch since that base is searched as for a patch list: a mail the branch already
/// carries under another id is skipped, naming its rule; `git am -3` skips it too ("No changes -- Patch already
/// applied"), and the commits made are the same.
#[test]
fn mails_the_branch_carries_since_the_base_commit_are_skipped() {
    skip_unless!(oracle::has_git());
    let (t, mbox) = series_with(false, true, &[]);
    assert!(mbox.contains("base-commit: "), "{mbox}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("series.mbox");
    std::fs::write(&path, &mbox).unwrap();
    let theirs = t.copy();
    oracle::git_ok(theirs.path(), &["am", "-3", path.to_str().unwrap()]);
    let out = bport::run(t.path(), &["apply", path.to_str().unwrap()]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    assert!(
        out.stderr.contains("2/3")
            && out
                .stderr
                .contains("c: add: skipped (already applied: subject"),
        "{}",
        out.transcript()
    );
    let ours: Vec<_> = last(&t, 3).into_iter().map(|o| made(&t, o)).collect();
    let want: Vec<_> = last(&theirs, 3)
        .into_iter()
        .map(|o| made(&theirs, o))
        .collect();
    assert_eq!(ours, want);
}

/// A patch that does not apply and whose index lines name blobs the repository lacks cannot be merged: named.
#[test]
fn a_patch_without_base_blobs_that_does_not_apply_is_named() {
    let (t, _) = series(false);
    let before = t.snapshot();
    let text = "From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001\nFrom: A <a@example.com>\n\
                Date: Thu, 1 Jan 2026 00:00:00 +0000\nSubject: [PATCH 1/1] a: change what is not there\n\n---\n\
                diff --git a/a.txt b/a.txt\nindex 1234567..89abcde 100644\n--- a/a.txt\n+++ b/a.txt\n\
                @@ -1,3 +1,3 @@\n not\n-in\n+the\n file\n";
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.mbox");
    std::fs::write(&path, text).unwrap();
    let out = bport::run(t.path(), &["apply", path.to_str().unwrap()]);
    assert_eq!(out.code, Some(2), "{}", out.transcript());
    assert!(
        out.stderr.starts_with(
            "error: mail 1 (\"a: change what is not there\"): the patch does not apply, and its index lines name no \
             blobs this repository has for a three-way merge\n"
        ),
        "{}",
        out.transcript()
    );
    assert_eq!(t.snapshot(), before);
}

/// A resolution `git am -3` recorded (with rerere on) for a mail's conflict is replayed by `bport apply` on the
/// same mail: the conflict ids agree, whatever the markers' labels.
#[test]
fn a_resolution_git_am_recorded_is_replayed_for_the_same_mail() {
    skip_unless!(oracle::has_git());
    let (t, mbox) = series(true);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("series.mbox");
    std::fs::write(&path, &mbox).unwrap();
    let before = t.oid("HEAD");
    let am = oracle::git(t.path())
        .args([
            "-c",
            "rerere.enabled=true",
            "am",
            "-3",
            path.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(!am.status.success(), "git am -3 was expected to stop");
    let resolution = ten("a").replace("a line 2\n", "a line two\n");
    std::fs::write(t.path().join("a.txt"), &resolution).unwrap();
    oracle::git_ok(t.path(), &["add", "a.txt"]);
    oracle::git_ok(t.path(), &["-c", "rerere.enabled=true", "am", "--continue"]);
    oracle::git_ok(t.path(), &["reset", "-q", "--hard", &before.to_string()]);

    let out = bport::run(t.path(), &["apply", "--yes", path.to_str().unwrap()]);
    assert_eq!(out.code, Some(1), "{}", out.transcript());
    assert!(
        out.stderr
            .starts_with("Resolved 'a.txt' using previous resolution.\n"),
        "{}",
        out.transcript()
    );
    assert_eq!(t.read("a.txt"), resolution);
}
