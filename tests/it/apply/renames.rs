//! Renames on either side of a pick, with `git cherry-pick` (merge-ort) as the oracle: the same exit (clean or
//! stopped), the same index (every stage), the same worktree, and the same commit where git commits.

use super::*;
use crate::support::oracle::git_ok;
use crate::support::repo::TestRepo;

/// Lines `tag 1` … `tag n`: files long enough for similarity to mean something.
pub(super) fn lines(tag: &str, n: usize) -> String {
    (1..=n).map(|i| format!("{tag} line {i}\n")).collect()
}

/// `text` with line `i` (1-based) replaced.
fn edit(text: &str, i: usize, with: &str) -> String {
    text.lines()
        .enumerate()
        .map(|(n, l)| {
            if n + 1 == i {
                format!("{with}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect()
}

/// A repository with `base` on master, branch `upstream` from it (left checked out for the caller), and
/// `vendor` from it.
pub(super) fn fork(base: &[(&str, Option<&str>)]) -> TestRepo {
    let t = TestRepo::new();
    t.commit("base", base);
    t.branch("upstream", "master");
    t.branch("vendor", "master");
    t.checkout("upstream");
    t
}

/// The branch renamed a.txt to b.txt; the patch edits a.txt: git applies the edit to b.txt.
#[test]
fn an_edit_follows_the_branch_rename() {
    skip_unless!(has_git());
    let text = lines("a", 20);
    let t = fork(&[("a.txt", Some(&text))]);
    t.commit(
        "fix a",
        &[("a.txt", Some(&edit(&text, 3, "a line 3 fixed")))],
    );
    t.checkout("vendor");
    t.commit("rename", &[("a.txt", None), ("b.txt", Some(&text))]);
    assert!(!same_as_git(&t, &[], &[]));
    assert!(t.read("b.txt").contains("a line 3 fixed"));
}

/// The branch already has the patch's pure rename: nothing to do (git's pick is empty, bport skips it).
#[test]
fn a_rename_the_branch_has_is_nothing_to_do() {
    skip_unless!(has_git());
    let text = lines("a", 20);
    let t = fork(&[("a.txt", Some(&text))]);
    t.commit("move a", &[("a.txt", None), ("b.txt", Some(&text))]);
    t.checkout("vendor");
    t.commit("move a too", &[("a.txt", None), ("b.txt", Some(&text))]);
    t.checkout("vendor");
    let g = t.copy();
    let git = oracle::git(g.path())
        .args(["cherry-pick", "upstream"])
        .output()
        .unwrap();
    // git stops on the empty pick (its default `--empty=stop`); bport's documented choice is to skip it.
    assert_eq!(git.status.code(), Some(1));
    git_ok(g.path(), &["cherry-pick", "--skip"]);
    let (_d, list) = list_file(&t.list("upstream~1..upstream"));
    let out = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    assert_eq!(t.snapshot().head.1, g.snapshot().head.1);
    assert_eq!(t.snapshot().files, g.snapshot().files);
}

/// The branch renames a.txt to b.txt after rewriting `changed` of its 20 lines; the patch edits line 20.
fn renamed_and_rewritten(changed: usize) -> TestRepo {
    let text = lines("a", 20);
    let t = fork(&[("a.txt", Some(&text)), ("other.txt", Some("other\n"))]);
    t.commit(
        "fix a",
        &[("a.txt", Some(&edit(&text, 20, "a line 20 fixed")))],
    );
    t.checkout("vendor");
    let mut moved = text.clone();
    for i in 1..=changed {
        moved = edit(&moved, i, &format!("vendor rewrote line {i} entirely"));
    }
    t.commit("rename", &[("a.txt", None), ("b.txt", Some(&moved))]);
    t
}

/// A rename with edits on the branch: followed when the file stays above git's 50% similarity, not below it, and
/// `-X find-renames=N` moves the threshold, as in git (the span-hash estimate decides the same pairs).
#[test]
fn similarity_decides_as_git_does_with_its_threshold_options() {
    skip_unless!(has_git());
    let mut outcomes = Vec::new();
    for (changed, x) in [
        (3, vec![]),
        (8, vec![]),
        (9, vec![]),
        (10, vec![]),
        (11, vec![]),
        (14, vec![]),
        (8, vec!["-X", "find-renames=70"]),
        (11, vec!["-X", "find-renames=40%"]),
        (11, vec!["-X", "rename-threshold=3"]),
        (0, vec!["-X", "find-renames=100%"]),
    ] {
        let t = renamed_and_rewritten(changed);
        eprintln!("{changed} lines of 20 rewritten, {x:?}");
        outcomes.push(same_as_git(&t, &x, &x));
    }
    // Both sides of the default threshold were exercised.
    assert!(outcomes[..6].contains(&true) && outcomes[..6].contains(&false));
}

/// With rename detection off, the patch's edit of a.txt meets the branch's deletion of it.
fn assert_not_followed(t: &TestRepo, code: Option<i32>, transcript: &str) {
    assert_eq!(code, Some(1), "{transcript}");
    let stages: Vec<(String, u16)> = t
        .snapshot()
        .index
        .into_iter()
        .map(|(p, s, _, _)| (p, s))
        .collect();
    let expected: Vec<(String, u16)> = [("a.txt", 1), ("a.txt", 3), ("b.txt", 0), ("other.txt", 0)]
        .into_iter()
        .map(|(p, s)| (p.to_owned(), s))
        .collect();
    assert_eq!(stages, expected);
}

/// `-X no-renames`, `merge.renames=false` and `diff.renames=false` (merge.renames unset) turn detection off.
/// Named deviation from git 2.47, whose merge-ort ignores all three (git 2.50 and later honour them, as here).
#[test]
fn rename_detection_can_be_turned_off() {
    skip_unless!(has_git());
    for (x, key) in [
        (Some("no-renames"), None),
        (None, Some("merge.renames")),
        (None, Some("diff.renames")),
    ] {
        let t = renamed_and_rewritten(0);
        t.checkout("vendor");
        if let Some(key) = key {
            t.repo.config().unwrap().set_str(key, "false").unwrap();
        }
        let (_d, list) = list_file(&t.list("upstream~1..upstream"));
        let mut args = vec!["apply"];
        if let Some(x) = x {
            args.extend(["-X", x]);
        }
        args.push(list.to_str().unwrap());
        let out = bport::run(t.path(), &args);
        assert_not_followed(&t, out.code, &out.transcript());
    }
    // merge.renames wins over diff.renames, as git reads them.
    let t = renamed_and_rewritten(0);
    t.checkout("vendor");
    let mut config = t.repo.config().unwrap();
    config.set_str("diff.renames", "false").unwrap();
    config.set_str("merge.renames", "true").unwrap();
    let (_d, list) = list_file(&t.list("upstream~1..upstream"));
    let out = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
}

/// The edit conflicts with the branch's edit inside the renamed file: stages 1-3 at the new path, markers
/// labelled `HEAD:b.txt` and `<commit>:a.txt`, as merge-ort writes them.
#[test]
fn a_conflict_inside_a_renamed_file_is_staged_at_the_new_path() {
    skip_unless!(has_git());
    let text = lines("a", 20);
    let t = fork(&[("a.txt", Some(&text))]);
    t.commit("fix a", &[("a.txt", Some(&edit(&text, 5, "upstream")))]);
    t.checkout("vendor");
    t.commit(
        "rename and edit",
        &[("a.txt", None), ("b.txt", Some(&edit(&text, 5, "vendor")))],
    );
    assert!(same_as_git(&t, &[], &[]));
    assert!(t.read("b.txt").contains("<<<<<<< HEAD:b.txt\n"));
}

/// The commit renames a file the branch edited: the branch's edit moves with it (and a conflict is staged at the
/// commit's new path).
#[test]
fn the_commits_rename_carries_the_branchs_edit() {
    skip_unless!(has_git());
    for vendor_line in [2, 10] {
        let text = lines("a", 20);
        let t = fork(&[("a.txt", Some(&text))]);
        t.commit(
            "move a",
            &[
                ("a.txt", None),
                ("lib/a.txt", Some(&edit(&text, 10, "upstream 10"))),
            ],
        );
        t.checkout("vendor");
        t.commit(
            "edit a",
            &[("a.txt", Some(&edit(&text, vendor_line, "vendor")))],
        );
        same_as_git(&t, &[], &[]);
    }
}

/// Renamed on the branch, deleted by the commit (and the other way round): rename/delete, staged as git stages it.
#[test]
fn rename_delete_is_staged_like_git() {
    skip_unless!(has_git());
    let text = lines("a", 20);
    // The branch renames, the commit deletes.
    let t = fork(&[("a.txt", Some(&text)), ("keep", Some("k\n"))]);
    t.commit("drop a", &[("a.txt", None)]);
    t.checkout("vendor");
    t.commit("rename", &[("a.txt", None), ("b.txt", Some(&text))]);
    assert!(same_as_git(&t, &[], &[]));
    // The commit renames, the branch deletes.
    let t = fork(&[("a.txt", Some(&text)), ("keep", Some("k\n"))]);
    t.commit("move a", &[("a.txt", None), ("b.txt", Some(&text))]);
    t.checkout("vendor");
    t.commit("drop a", &[("a.txt", None)]);
    assert!(same_as_git(&t, &[], &[]));
}

/// Both sides renamed the file, to different names: rename/rename(1to2), staged at three paths as git does.
#[test]
fn rename_rename_is_staged_like_git() {
    skip_unless!(has_git());
    for (ours_edit, theirs_edit) in [(false, false), (true, false), (true, true)] {
        let text = lines("a", 20);
        let t = fork(&[("a.txt", Some(&text))]);
        let theirs = if theirs_edit {
            edit(&text, 5, "upstream")
        } else {
            text.clone()
        };
        t.commit("move a to c", &[("a.txt", None), ("c.txt", Some(&theirs))]);
        t.checkout("vendor");
        let ours = if ours_edit {
            edit(&text, 5, "vendor")
        } else {
            text.clone()
        };
        t.commit("move a to b", &[("a.txt", None), ("b.txt", Some(&ours))]);
        assert!(same_as_git(&t, &[], &[]));
    }
}

/// The branch renamed a.txt to b.txt and the commit edits a.txt and adds its own b.txt: rename/add.
#[test]
fn rename_add_is_staged_like_git() {
    skip_unless!(has_git());
    let text = lines("a", 20);
    let t = fork(&[("a.txt", Some(&text))]);
    t.commit(
        "fix a, add b",
        &[
            ("a.txt", Some(&edit(&text, 3, "fixed"))),
            ("b.txt", Some(&lines("b", 5))),
        ],
    );
    t.checkout("vendor");
    t.commit("rename", &[("a.txt", None), ("b.txt", Some(&text))]);
    same_as_git(&t, &[], &[]);
}

/// Several files moved to a new directory on the branch (exact and edited), the series edits them under their old
/// names: every edit lands at the new path, commit for commit as git makes them.
#[test]
fn a_series_follows_a_moved_directory_commit_for_commit() {
    skip_unless!(has_git());
    let files: Vec<(String, String)> = (1..=4)
        .map(|n| (format!("drivers/old/f{n}.c"), lines(&format!("f{n}"), 15)))
        .collect();
    let base: Vec<(&str, Option<&str>)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), Some(c.as_str())))
        .collect();
    let t = fork(&base);
    for (n, (p, c)) in files.iter().enumerate() {
        t.commit(
            &format!("fix f{}", n + 1),
            &[(p, Some(&edit(c, 12, &format!("fixed {n}"))))],
        );
    }
    t.checkout("vendor");
    let mut moves: Vec<(String, Option<String>)> = Vec::new();
    for (n, (p, c)) in files.iter().enumerate() {
        moves.push((p.clone(), None));
        let content = if n == 0 {
            edit(c, 2, "vendor tweak")
        } else {
            c.clone()
        };
        moves.push((p.replace("drivers/old", "drivers/new"), Some(content)));
    }
    let moves: Vec<(&str, Option<&str>)> = moves
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_deref()))
        .collect();
    t.commit("move the driver", &moves);
    let g = t.copy();
    git_ok(g.path(), &["cherry-pick", "master..upstream"]);
    let (_d, list) = list_file(&t.list("master..upstream"));
    let out = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    let fmt = "--format=%H %T %s";
    assert_eq!(
        git_ok(t.path(), &["log", fmt, "master..HEAD"]),
        git_ok(g.path(), &["log", fmt, "master..HEAD"])
    );
    assert_eq!(t.snapshot().files, g.snapshot().files);
    assert_eq!(git_ok(t.path(), &["ls-files", "drivers/old"]), "");
}
