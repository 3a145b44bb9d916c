//! Merge commits in lists: `bport list --no-merges` / `--first-parent` equal `git log`'s, a merge line without
//! `-m` is refused naming both fixes, `-m N` beyond a commit's parents is refused where git refuses, and an upstream
//! trailer naming a merge marks the commits that merge brought in as applied.

use super::*;
use crate::support::oracle::{git, git_ok};
use crate::support::repo;

/// `upstream_and_vendor` with a topic branch of two commits merged into `upstream` (`--no-ff`), then one more
/// upstream commit; HEAD on vendor.
fn with_topic_merge() -> TestRepo {
    let t = repo::upstream_and_vendor();
    t.branch("topic", "upstream~2");
    t.checkout("topic");
    t.commit("topic: add a file", &[("topic.txt", Some("topic\n"))]);
    t.commit("topic: extend it", &[("topic.txt", Some("topic\nmore\n"))]);
    t.checkout("upstream");
    git_ok(
        t.path(),
        &["merge", "--no-ff", "-m", "Merge topic", "topic"],
    );
    t.commit("after the merge", &[("after.txt", Some("after\n"))]);
    t.checkout("vendor");
    t
}

#[test]
fn list_no_merges_and_first_parent_equal_git_log() {
    skip_unless!(has_git());
    let t = with_topic_merge();
    for flags in [
        &[][..],
        &["--no-merges"][..],
        &["--first-parent"][..],
        &["--no-merges", "--first-parent"][..],
    ] {
        let mut ours = vec!["list"];
        ours.extend(flags);
        ours.push("master..upstream");
        let out = bport::run(t.path(), &ours);
        assert_eq!(out.code, Some(0), "{}", out.transcript());
        let mut theirs = vec!["log", "--reverse", "--oneline"];
        theirs.extend(flags);
        theirs.push("master..upstream");
        let expected = git_ok(t.path(), &theirs);
        assert_eq!(out.stdout, expected, "flags {flags:?}");
        let merges = expected
            .lines()
            .filter(|l| l.contains("Merge topic"))
            .count();
        let topic = expected.lines().filter(|l| l.contains("topic:")).count();
        match flags {
            [] => assert_eq!((merges, topic), (1, 2)),
            ["--no-merges"] => assert_eq!((merges, topic), (0, 2)),
            ["--first-parent"] => assert_eq!((merges, topic), (1, 0)),
            _ => assert_eq!((merges, topic), (0, 0)),
        }
    }
}

/// The list `bport list` writes for a range with a merge is refused without `-m`, naming the line and both fixes;
/// git refuses the same pick ("is a merge but no -m option was given"). The `--no-merges` list then applies, with
/// the same commits as `git cherry-pick` of `git rev-list --no-merges`.
#[test]
fn merge_line_without_mainline_is_refused_naming_both_fixes() {
    skip_unless!(has_git());
    let t = with_topic_merge();
    let g = t.copy();
    let listed = bport::run(t.path(), &["list", "master..upstream"]);
    let (_d, list) = list_file(&listed.stdout);
    let before = t.snapshot();
    let out = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(out.code, Some(2), "{}", out.transcript());
    let line = listed
        .stdout
        .lines()
        .position(|l| l.contains("Merge topic"))
        .unwrap()
        + 1;
    assert!(
        out.stderr.contains(&format!("patch list line {line}: "))
            && out.stderr.contains("is a merge commit with 2 parents")
            && out.stderr.contains("-m N")
            && out.stderr.contains("bport list --no-merges"),
        "{}",
        out.stderr
    );
    assert_eq!(t.snapshot(), before, "nothing was applied");
    let merge = t.oid("upstream~1").to_string();
    let refused = git(g.path())
        .args(["cherry-pick", &merge])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("is a merge but no -m option was given")
    );

    let listed = bport::run(t.path(), &["list", "--no-merges", "master..upstream"]);
    let (_d2, list) = list_file(&listed.stdout);
    let out = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    let revs = git_ok(
        g.path(),
        &["rev-list", "--reverse", "--no-merges", "master..upstream"],
    );
    let mut args = vec!["cherry-pick"];
    args.extend(revs.lines());
    git_ok(g.path(), &args);
    let fmt = "--format=%H %T";
    assert_eq!(
        git_ok(t.path(), &["log", fmt, "master..HEAD"]),
        git_ok(g.path(), &["log", fmt, "master..HEAD"])
    );
}

/// `-m 2` names a parent a non-merge lacks: git refuses ("does not have parent 2"), and so does bport, before
/// touching anything; `-m 1` on a non-merge picks it as usual (git allows it too).
#[test]
fn mainline_beyond_the_parents_is_refused_as_git_does() {
    skip_unless!(has_git());
    let t = with_topic_merge();
    let g = t.copy();
    let one = t.oid("upstream").to_string();
    let (_d, list) = list_file(&format!("{} after the merge\n", &one[..7]));
    let before = t.snapshot();
    let out = bport::run(t.path(), &["apply", "-m", "2", list.to_str().unwrap()]);
    assert_eq!(out.code, Some(2), "{}", out.transcript());
    assert!(
        out.stderr.contains("does not have parent 2"),
        "{}",
        out.stderr
    );
    assert_eq!(t.snapshot(), before);
    let refused = git(g.path())
        .args(["cherry-pick", "-m", "2", &one])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("does not have parent 2"));

    let out = bport::run(t.path(), &["apply", "-m", "1", list.to_str().unwrap()]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    git_ok(g.path(), &["cherry-pick", "-m", "1", &one]);
    let fmt = "--format=%H %T";
    assert_eq!(
        git_ok(t.path(), &["log", "-1", fmt]),
        git_ok(g.path(), &["log", "-1", fmt])
    );
}

/// A squashed backport of a whole pull request: one vendor commit whose trailer names the merge. The commits the
/// merge brought in (reachable from its second parent, not its first) count as applied by that trailer; the merge
/// itself too; commits outside the merge do not.
#[test]
fn trailer_naming_a_merge_marks_its_commits_applied() {
    skip_unless!(has_git());
    let t = with_topic_merge();
    let merge = t.oid("upstream~1");
    let squash = t.commit(
        &format!("Squashed topic\n\n(cherry picked from commit {merge})\n"),
        &[("topic.txt", Some("topic\nmore\n"))],
    );
    let listed = bport::run(t.path(), &["list", "--no-merges", "master..upstream"]);
    let (_d, list) = list_file(&listed.stdout);
    let out = bport::run(t.path(), &["apply", "--dry-run", list.to_str().unwrap()]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    let short_squash = &squash.to_string()[..7];
    let short_merge = &merge.to_string()[..7];
    for l in out.stdout.lines().filter(|l| l.contains("topic:")) {
        assert!(
            l.ends_with(&format!(
                "skip (already applied: upstream trailer + names merge {short_merge}, which brought it in, {short_squash})"
            )),
            "{l}\n{}",
            out.stdout
        );
    }
    assert_eq!(
        out.stdout.lines().filter(|l| l.contains("topic:")).count(),
        2
    );
    for l in out
        .stdout
        .lines()
        .filter(|l| l.contains("after the merge") || l.contains("a: change"))
    {
        assert!(l.ends_with(": pick"), "{l}");
    }
    // The real run skips them too and picks the rest.
    let out = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    assert!(!git_ok(t.path(), &["log", "--format=%s", "master..HEAD"]).contains("topic:"));
}
