//! What a stop and a `--continue` say: a patch its resolution emptied is named when dropped, and after recorded
//! resolutions replayed the stop says which paths they resolved and which are left.

use super::*;
use crate::support::oracle::{git, git_ok};

/// Resolving the foo/bar conflict by keeping the branch's README empties "bar description": git's `cherry-pick
/// --continue` stops there ("The previous cherry-pick is now empty, possibly due to conflict resolution."); bport
/// drops it with a line naming it and goes on to pick "more bar description". After git's `--skip` both branches
/// hold the same commits.
#[test]
fn a_patch_emptied_by_its_resolution_is_named_when_dropped() {
    skip_unless!(has_git());
    let (t, _d, list) = scenario::foo_bar().with_list();
    let g = t.copy();
    let stop = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(stop.code, Some(1), "{}", stop.transcript());
    git_ok(t.path(), &["checkout", "--ours", "README"]);
    git_ok(t.path(), &["add", "README"]);
    let cont = bport::run(t.path(), &["apply", "--continue"]);
    assert_eq!(cont.code, Some(0), "{}", cont.transcript());
    assert!(
        cont.stderr.contains(&format!(
            "\n1/2 {} bar description: dropped: the previous cherry-pick is now empty, possibly due to conflict \
             resolution (git would stop for `--skip` or `git commit --allow-empty`)\n",
            short(&t, "bar~1")
        )),
        "{}",
        cont.stderr
    );

    let stopped = git(g.path())
        .args(["cherry-pick", "master..bar"])
        .output()
        .unwrap();
    assert!(!stopped.status.success());
    git_ok(g.path(), &["checkout", "--ours", "README"]);
    git_ok(g.path(), &["add", "README"]);
    let empty = git(g.path())
        .args(["cherry-pick", "--continue"])
        .output()
        .unwrap();
    assert!(!empty.status.success());
    assert!(String::from_utf8_lossy(&empty.stderr)
        .contains("The previous cherry-pick is now empty, possibly due to conflict resolution."));
    git_ok(g.path(), &["cherry-pick", "--skip"]);
    let fmt = "--format=%H %T";
    assert_eq!(
        git_ok(t.path(), &["log", fmt, "foo..HEAD"]),
        git_ok(g.path(), &["log", fmt, "foo..HEAD"])
    );
    assert_eq!(t.snapshot().files, g.snapshot().files);
    assert_eq!(git_ok(t.path(), &["status", "--porcelain"]), "");
}

/// One pick conflicting in two files, with a recorded resolution (recorded by git's own rerere) for one of them:
/// the stop names the resolved file and lists only the other as conflicted.
#[test]
fn a_stop_after_a_partial_replay_names_what_is_left() {
    skip_unless!(has_git());
    let base = |tag: &str| (1..=5).map(|i| format!("{tag} {i}\n")).collect::<String>();
    let (f1, f2) = (base("one"), base("two"));
    let (t, _d, list) = Conflict::new("base", &[("f1", Some(&f1)), ("f2", Some(&f2))])
        .ours(
            "ours",
            &[
                ("f1", Some(&f1.replace("one 3", "one three (ours)"))),
                ("f2", Some(&f2.replace("two 3", "two three (ours)"))),
            ],
        )
        .theirs(
            "theirs",
            &[
                ("f1", Some(&f1.replace("one 3", "one three (theirs)"))),
                ("f2", Some(&f2.replace("two 3", "two three (theirs)"))),
            ],
        )
        .with_list();
    // Train git's rerere on f1 only, then forget the pick.
    git_ok(t.path(), &["config", "rerere.enabled", "true"]);
    let picked = git(t.path())
        .args(["cherry-pick", "upstream"])
        .output()
        .unwrap();
    assert!(!picked.status.success());
    std::fs::write(t.path().join("f1"), f1.replace("one 3", "one three (both)")).unwrap();
    git_ok(t.path(), &["rerere"]);
    git_ok(t.path(), &["cherry-pick", "--abort"]);

    let stop = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(stop.code, Some(1), "{}", stop.transcript());
    assert!(
        stop.stderr.contains(&format!(
            "Stopped at 1/1 {} theirs: conflicts in\n  both modified: f2\nResolved from recorded resolutions \
             (review them, then `git add`): f1\n",
            short(&t, "upstream")
        )),
        "{}",
        stop.stderr
    );
    assert!(
        stop.stderr.contains("Resolve the conflicts and stage them"),
        "{}",
        stop.stderr
    );
    assert_eq!(t.read("f1"), f1.replace("one 3", "one three (both)"));
    assert!(t.read("f2").contains("<<<<<<<"));
}
