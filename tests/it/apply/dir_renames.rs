//! Directory renames (merge-ort's): a path the picked commit adds inside a directory the branch renamed, under
//! each `merge.directoryRenames` value, with `git cherry-pick` as the oracle for the exit, every index stage and
//! the worktree.

use super::renames::{fork, lines};
use super::*;
use crate::support::repo::TestRepo;

/// `old/` with four files on master; upstream adds `old/n.c`; the branch renames `old/` to `new/` (set up by
/// `vendor`), with `merge.directoryRenames` set to `setting` when given.
fn added_upstream(setting: Option<&str>, vendor: &[(&str, Option<&str>)]) -> TestRepo {
    let files: Vec<(String, String)> = ["a", "b", "c", "d"]
        .iter()
        .map(|f| (format!("old/{f}.c"), lines(f, 20)))
        .collect();
    let base: Vec<(&str, Option<&str>)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), Some(c.as_str())))
        .collect();
    let t = fork(&base);
    t.commit("add n", &[("old/n.c", Some("new file\n"))]);
    t.checkout("vendor");
    t.commit("move", vendor);
    if let Some(setting) = setting {
        t.repo
            .config()
            .unwrap()
            .set_str("merge.directoryRenames", setting)
            .unwrap();
    }
    t
}

/// The branch's whole-directory move: every file of `old/` to `to/`.
fn moved_to<'a>(
    to: &str,
    keep: &'a mut Vec<(String, Option<String>)>,
) -> Vec<(&'a str, Option<&'a str>)> {
    for f in ["a", "b", "c", "d"] {
        keep.push((format!("old/{f}.c"), None));
        keep.push((format!("{to}/{f}.c"), Some(lines(f, 20))));
    }
    keep.iter()
        .map(|(p, c)| (p.as_str(), c.as_deref()))
        .collect()
}

/// git's default (`conflict`) and `conflict` itself move the file into the renamed directory and stop on it,
/// staged as the commit's alone ("added by them"); `true` moves it and commits git's commit; `false` leaves it
/// where upstream added it.
#[test]
fn a_file_added_into_a_directory_the_branch_renamed_follows_merge_directory_renames() {
    skip_unless!(has_git());
    for (setting, stops, at) in [
        (None, true, "new/n.c"),
        (Some("conflict"), true, "new/n.c"),
        (Some("true"), false, "new/n.c"),
        (Some("false"), false, "old/n.c"),
    ] {
        let mut keep = Vec::new();
        let t = added_upstream(setting, &moved_to("new", &mut keep));
        let ends = pick_both_same(&t);
        assert_eq!(
            ends.git == Some(1),
            stops,
            "{setting:?}\n{}",
            ends.transcript
        );
        assert_eq!(t.read(at), "new file\n", "{setting:?}");
        if stops {
            assert!(
                ends.transcript.contains("new/n.c") && ends.transcript.contains("added by them"),
                "the stop names the moved path\n{}",
                ends.transcript
            );
        }
    }
}

/// A directory moved deeper (`old/` to `lib/core/`), and a subdirectory renamed inside a directory that stays.
#[test]
fn nested_directory_renames_move_the_added_path() {
    skip_unless!(has_git());
    let mut keep = Vec::new();
    let t = added_upstream(Some("true"), &moved_to("lib/core", &mut keep));
    pick_both_same(&t);
    assert_eq!(t.read("lib/core/n.c"), "new file\n");

    // A subdirectory renamed inside a directory that stays. The path added in a new subdirectory moves only
    // when a file is also added directly into the renamed directory (merge-ort looks for a directory's rename
    // only where the other side added a file into it).
    let (a, b) = (lines("a", 20), lines("b", 20));
    for (direct, at) in [
        (true, "drivers/bar/sub/n.c"),
        (false, "drivers/foo/sub/n.c"),
    ] {
        let t = fork(&[
            ("drivers/foo/a.c", Some(&a)),
            ("drivers/foo/b.c", Some(&b)),
            ("drivers/Makefile", Some("all:\n")),
        ]);
        let mut adds = vec![("drivers/foo/sub/n.c", Some("new file\n"))];
        if direct {
            adds.push(("drivers/foo/m.c", Some("direct\n")));
        }
        t.commit("add", &adds);
        t.checkout("vendor");
        t.commit(
            "rename foo",
            &[
                ("drivers/foo/a.c", None),
                ("drivers/foo/b.c", None),
                ("drivers/bar/a.c", Some(&a)),
                ("drivers/bar/b.c", Some(&b)),
            ],
        );
        t.repo
            .config()
            .unwrap()
            .set_str("merge.directoryRenames", "true")
            .unwrap();
        pick_both_same(&t);
        assert_eq!(t.read(at), "new file\n");
        if direct {
            assert_eq!(t.read("drivers/bar/m.c"), "direct\n");
        }
    }
}

/// A directory the branch emptied only in part is not renamed: the added file stays where upstream put it.
#[test]
fn a_directory_that_still_exists_on_the_branch_is_not_renamed() {
    skip_unless!(has_git());
    let (a, b) = (lines("a", 20), lines("b", 20));
    let t = added_upstream(
        None,
        &[
            ("old/a.c", None),
            ("old/b.c", None),
            ("new/a.c", Some(&a)),
            ("new/b.c", Some(&b)),
        ],
    );
    let ends = pick_both_same(&t);
    assert_eq!(ends.git, Some(0));
    assert_eq!(t.read("old/n.c"), "new file\n");
}

/// Half the files to `x/`, half to `y/`: no majority, no directory rename; the file stays at `old/n.c` in both
/// tools. Named deviation: git also stops the pick ("CONFLICT (directory rename split)") with nothing
/// conflicted in the index; bport commits.
#[test]
fn a_split_directory_is_not_renamed() {
    skip_unless!(has_git());
    let (a, b, c, d) = (
        lines("a", 20),
        lines("b", 20),
        lines("c", 20),
        lines("d", 20),
    );
    let t = added_upstream(
        Some("true"),
        &[
            ("old/a.c", None),
            ("old/b.c", None),
            ("old/c.c", None),
            ("old/d.c", None),
            ("x/a.c", Some(&a)),
            ("x/b.c", Some(&b)),
            ("y/c.c", Some(&c)),
            ("y/d.c", Some(&d)),
        ],
    );
    let ends = pick_both(&t, &[], &[]);
    assert_eq!(ends.git, Some(1), "{}", ends.transcript);
    assert_eq!(ends.bport, Some(0), "{}", ends.transcript);
    assert_eq!(t.read("old/n.c"), "new file\n");
    // Three to one is a majority: the directory follows it.
    let t = added_upstream(
        Some("true"),
        &[
            ("old/a.c", None),
            ("old/b.c", None),
            ("old/c.c", None),
            ("old/d.c", None),
            ("x/a.c", Some(&a)),
            ("x/b.c", Some(&b)),
            ("x/c.c", Some(&c)),
            ("y/d.c", Some(&d)),
        ],
    );
    pick_both_same(&t);
    assert_eq!(t.read("x/n.c"), "new file\n");
}

/// The branch already has a file where the rename puts the added one: both sides added it (stages 2 and 3 at
/// the new path, markers in the worktree), under `true` and the default alike.
#[test]
fn a_directory_rename_onto_an_existing_file_is_an_add_add_conflict() {
    skip_unless!(has_git());
    for setting in [None, Some("true")] {
        let mut keep = vec![("new/n.c".to_owned(), Some("the branch's own\n".to_owned()))];
        let t = added_upstream(setting, &moved_to("new", &mut keep));
        let ends = pick_both_same(&t);
        assert_eq!(ends.git, Some(1));
        assert!(t.read("new/n.c").contains("<<<<<<<"), "{setting:?}");
    }
}

/// Two directories merged into one on the branch, and upstream adds the same name in both: neither can move
/// (git: "Cannot map more than one path"), both stay where upstream added them. Named deviation: git stops the
/// pick with nothing conflicted in the index; bport commits.
#[test]
fn two_added_paths_mapped_onto_one_stay_where_they_were_added() {
    skip_unless!(has_git());
    let (a, b, c, d) = (
        lines("a", 20),
        lines("b", 20),
        lines("c", 20),
        lines("d", 20),
    );
    let t = fork(&[
        ("one/a.c", Some(&a)),
        ("one/b.c", Some(&b)),
        ("two/c.c", Some(&c)),
        ("two/d.c", Some(&d)),
    ]);
    t.commit(
        "add n twice",
        &[("one/n.c", Some("first\n")), ("two/n.c", Some("second\n"))],
    );
    t.checkout("vendor");
    t.commit(
        "merge dirs",
        &[
            ("one/a.c", None),
            ("one/b.c", None),
            ("two/c.c", None),
            ("two/d.c", None),
            ("both/a.c", Some(&a)),
            ("both/b.c", Some(&b)),
            ("both/c.c", Some(&c)),
            ("both/d.c", Some(&d)),
        ],
    );
    t.repo
        .config()
        .unwrap()
        .set_str("merge.directoryRenames", "true")
        .unwrap();
    let ends = pick_both(&t, &[], &[]);
    assert_eq!(ends.git, Some(1), "{}", ends.transcript);
    assert_eq!(ends.bport, Some(0), "{}", ends.transcript);
    assert_eq!(t.read("one/n.c"), "first\n");
    assert_eq!(t.read("two/n.c"), "second\n");
}

/// [`pick_both`] with no options, asserting the same exit as git's.
fn pick_both_same(t: &TestRepo) -> Ends {
    let ends = pick_both(t, &[], &[]);
    assert_eq!(ends.bport, ends.git, "{}", ends.transcript);
    ends
}
