//! The backport engine on what real histories contain: generic subjects that repeat with trailers naming
//! other commits, non-ASCII subjects, empty lists, submodules (gitlinks), untracked files in the way, sparse and
//! skip-worktree entries, damaged repositories, and what `--dry-run` and a killed run say. git is the oracle where
//! it has one.

use super::*;
use crate::support::oracle::{git, git_ok};
use git2::{IndexEntry, IndexTime, Oid, Signature, Time};

/// Commits the current index of `t` (after `edit`) on HEAD at a fixed time `tick`: for trees `TestRepo::commit`
/// cannot make (gitlinks are not files).
fn commit_index(
    t: &TestRepo,
    message: &str,
    tick: i64,
    edit: impl FnOnce(&mut git2::Index),
) -> Oid {
    let mut index = t.repo.index().unwrap();
    edit(&mut index);
    index.write().unwrap();
    let tree = t.repo.find_tree(index.write_tree().unwrap()).unwrap();
    let sig = Signature::new("A U Thor", "author@example.com", &Time::new(tick, 0)).unwrap();
    let parent = t.repo.head().unwrap().peel_to_commit().unwrap();
    t.repo
        .commit(Some("HEAD"), &sig, &sig, message, &tree, &[&parent])
        .unwrap()
}

fn gitlink_entry(path: &str, oid: Oid) -> IndexEntry {
    IndexEntry {
        ctime: IndexTime::new(0, 0),
        mtime: IndexTime::new(0, 0),
        dev: 0,
        ino: 0,
        mode: 0o160000,
        uid: 0,
        gid: 0,
        file_size: 0,
        id: oid,
        flags: path.len() as u16,
        flags_extended: 0,
        path: path.as_bytes().to_vec(),
    }
}

fn run_ok(t: &TestRepo, args: &[&str]) -> crate::support::bport::CommandOutput {
    let out = bport::run(t.path(), args);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    out
}

// ---- A subject match never decides alone against a trailer or against the files ----

/// "repart: fix memory leak" upstream must not be skipped as applied because the stable branch has a commit
/// with that subject whose trailer names a *different* upstream commit: that candidate is rejected and the fix
/// is picked; a candidate without trailer that changes the same file but none of the same lines is
/// rejected too; one that carries the listed commit's changed lines is a skip that says what confirmed it. git has no subject rule; the picked result is compared with `git
/// cherry-pick` of the same commit.
#[test]
fn generic_subject_with_another_commits_trailer_is_not_a_skip() {
    let t = TestRepo::new();
    let file = |tag: &str| (1..=8).map(|i| format!("{tag} {i}\n")).collect::<String>();
    t.commit(
        "base",
        &[
            ("repart.c", Some(&file("repart"))),
            ("udev.c", Some(&file("udev"))),
            ("other.c", Some(&file("other"))),
        ],
    );
    t.branch("stable", "master");
    t.branch("upstream", "master");
    // An older upstream fix with the generic subject, on a line the list does not cover (the one the stable
    // commit really ports) ...
    t.branch("older", "master");
    t.checkout("older");
    let older = t.commit(
        "repart: fix memory leak",
        &[(
            "udev.c",
            Some(&file("udev").replace("udev 2\n", "udev 2 freed\n")),
        )],
    );
    t.checkout("upstream");
    // ... and the new upstream fixes in the list, each with a subject the stable branch also has.
    t.commit(
        "repart: fix memory leak",
        &[(
            "repart.c",
            Some(&file("repart").replace("repart 5\n", "repart 5 freed\n")),
        )],
    );
    t.commit(
        "other: fix typo",
        &[(
            "other.c",
            Some(&file("other").replace("other 3\n", "other three\n")),
        )],
    );
    t.commit(
        "udev: fix typo",
        &[(
            "udev.c",
            Some(&t.read("udev.c").replace("udev 7\n", "udev seven\n")),
        )],
    );
    t.checkout("stable");
    // The stable port of `older`: same subject as the listed fix, trailer naming `older`.
    let ported = t.commit(
        &format!("repart: fix memory leak\n\n(cherry picked from commit {older})\n"),
        &[(
            "udev.c",
            Some(&t.read("udev.c").replace("udev 4\n", "udev 4 (stable)\n")),
        )],
    );
    // "other: fix typo" without a trailer, in the same file but another typo (none of upstream's changed lines):
    // a coincidence, not a port (flatpak-1.12.x had one: its own "Update localization files for release").
    t.commit(
        "other: fix typo",
        &[(
            "other.c",
            Some(&t.read("other.c").replace("other 8\n", "other eight\n")),
        )],
    );
    // "udev: fix typo" without a trailer, carrying upstream's change plus an edit of its own (so another
    // patch-id): confirmed by the files and the lines.
    let same_files = t.commit(
        "udev: fix typo",
        &[(
            "udev.c",
            Some(
                &t.read("udev.c")
                    .replace("udev 7\n", "udev seven\n")
                    .replace("udev 1\n", "udev one\n"),
            ),
        )],
    );
    let g = t.copy();
    let list_text = t.list("master..upstream");
    let (_d, list) = list_file(&list_text);
    let out = run_ok(&t, &["apply", list.to_str().unwrap()]);
    let up = |rev: &str| short(&t, rev);
    assert_eq!(
        out.stderr,
        format!(
            "1/3 {} repart: fix memory leak: picked as {}\n\
             2/3 {} other: fix typo: picked as {}\n\
             3/3 {} udev: fix typo: skipped (already applied: subject + same files, 100% of lines, {})\n\
             Done: picked 2, skipped 1 (subject: 1).\n",
            up("upstream~2"),
            short(&t, "HEAD~1"),
            up("upstream~1"),
            short(&t, "HEAD"),
            up("upstream"),
            &same_files.to_string()[..7],
        )
    );
    assert_eq!(
        ported,
        t.oid("HEAD~4"),
        "the port of `older` is still there, under the picks"
    );
    skip_unless!(has_git());
    git_ok(g.path(), &["cherry-pick", "upstream~2", "upstream~1"]);
    assert_eq!(
        git_ok(t.path(), &["rev-parse", "HEAD^{tree}"]),
        git_ok(g.path(), &["rev-parse", "HEAD^{tree}"]),
        "the picks equal git's"
    );
}

/// Found on flatpak-1.12.x: the stable branch's own "Update localization files for release"
/// shares most files and the repeated header line with upstream's, but not upstream's change: picked. Counted
/// without repeats, the one header line changed in six files made half of upstream's distinct lines look carried.
#[test]
fn generic_release_commit_sharing_only_repeated_lines_is_not_a_skip() {
    let t = TestRepo::new();
    let po = |n: usize, date: &str, msg: &str| {
        format!("Date: {date}\nmsgid \"m{n}\"\nmsgstr \"{msg}\"\n")
    };
    let files: Vec<(String, String)> = (1..=6)
        .map(|n| (format!("po/{n}.po"), po(n, "1", "old")))
        .collect();
    let base: Vec<(&str, Option<&str>)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), Some(c.as_str())))
        .collect();
    t.commit("base", &base);
    t.branch("upstream", "master");
    t.checkout("upstream");
    // Upstream: the date in all six files, and one translation.
    let up: Vec<(String, String)> = (1..=6)
        .map(|n| {
            (
                format!("po/{n}.po"),
                po(n, "2", if n == 1 { "new" } else { "old" }),
            )
        })
        .collect();
    let up_refs: Vec<(&str, Option<&str>)> = up
        .iter()
        .map(|(p, c)| (p.as_str(), Some(c.as_str())))
        .collect();
    t.commit("Update localization files for release", &up_refs);
    t.checkout("master");
    // Stable: its own release update, the same date in two files and its own translations.
    let st: Vec<(String, String)> = (2..=3)
        .map(|n| (format!("po/{n}.po"), po(n, "2", "stable")))
        .collect();
    let st_refs: Vec<(&str, Option<&str>)> = st
        .iter()
        .map(|(p, c)| (p.as_str(), Some(c.as_str())))
        .collect();
    t.commit("Update localization files for release", &st_refs);
    let (_d, list) = list_file(&t.list("master~1..upstream"));
    let out = run_ok(&t, &["apply", "--dry-run", list.to_str().unwrap()]);
    assert_eq!(
        out.stdout,
        format!(
            "1/1 {} Update localization files for release: pick\n\
             Plan: 1 to pick (0 with predicted conflicts), 0 to skip; dry run, nothing was changed.\n",
            short(&t, "upstream")
        )
    );
}

/// The same generic subject three times upstream and twice on the branch, each branch commit
/// naming its origin: the trailers decide the two ports, and the third (not ported) is picked: both branch
/// commits with its subject name other commits, so no subject match exists (the subject alone would call it
/// "ambiguous", and with one such branch commit skip it falsely).
#[test]
fn repeated_generic_subjects_with_different_trailers() {
    let t = TestRepo::new();
    let file = |n: usize| (1..=6).map(|i| format!("f{n} {i}\n")).collect::<String>();
    t.commit(
        "base",
        &[
            ("f1", Some(&file(1))),
            ("f2", Some(&file(2))),
            ("f3", Some(&file(3))),
        ],
    );
    t.branch("upstream", "master");
    t.branch("stable", "master");
    t.checkout("upstream");
    let mut ups = Vec::new();
    for n in 1..=3 {
        let name = format!("f{n}");
        ups.push(t.commit(
            "fix memory leak",
            &[(
                &name,
                Some(&file(n).replace(&format!("f{n} 2\n"), "freed\n")),
            )],
        ));
    }
    t.checkout("stable");
    for &(n, up) in &[(2usize, ups[1]), (1, ups[0])] {
        let name = format!("f{n}");
        t.commit(
            &format!("fix memory leak\n\ncommit {up} upstream.\n"),
            &[(
                &name,
                Some(&file(n).replace(&format!("f{n} 2\n"), "freed (stable)\n")),
            )],
        );
    }
    let (_d, list) = list_file(&t.list("master..upstream"));
    let out = run_ok(&t, &["apply", list.to_str().unwrap()]);
    let s = |oid: Oid| oid.to_string()[..7].to_owned();
    assert_eq!(
        out.stderr,
        format!(
            "1/3 {} fix memory leak: skipped (already applied: upstream trailer, {})\n\
             2/3 {} fix memory leak: skipped (already applied: upstream trailer, {})\n\
             3/3 {} fix memory leak: picked as {}\n\
             Done: picked 1, skipped 2 (upstream trailer: 2).\n",
            s(ups[0]),
            short(&t, "HEAD~1"),
            s(ups[1]),
            short(&t, "HEAD~2"),
            s(ups[2]),
            short(&t, "HEAD"),
        )
    );
    assert_eq!(t.read("f3"), file(3).replace("f3 2\n", "freed\n"));
}

/// Found on flatpak-1.14.x: the stable port's trailer names 3f0a2de, an earlier copy of the listed 073bdcc (same
/// subject, same patch-id; the merge request before it was rebased). That is the same change: skipped as a
/// trailer match that says which commit it names and what confirmed it. A named commit with the subject but
/// another patch stays a pick (previous test).
#[test]
fn trailer_naming_an_equal_copy_of_the_listed_commit_is_a_skip() {
    let t = four_fixes();
    // The copy: fix 2 again, on a side branch, at another time (so another id).
    t.branch("mr", "master");
    t.checkout("mr");
    let p2 = t.read("p2").replace("p2 line 3\n", "p2 line 3 fixed\n");
    let copy = t.commit("perf: fix 2", &[("p2", Some(&p2))]);
    assert_ne!(copy, t.oid("upstream~2"));
    t.checkout("vendor");
    // The stable port names the copy; its own diff differs (another context line), so patch-id cannot decide.
    let p2v = t
        .read("p2")
        .replace("p2 line 3\n", "p2 line 3 fixed\n")
        .replace("p2 line 9\n", "p2 line 9 stable\n");
    let port = t.commit(
        &format!("perf: fix 2\n\n(cherry picked from commit {copy})\n"),
        &[("p2", Some(&p2v))],
    );
    let stderr = apply_all(&t, &[]);
    assert!(
        stderr.contains(&step_line(
            &t,
            2,
            &format!(
                "skipped (already applied: upstream trailer + names {}, same patch-id, {})",
                &copy.to_string()[..7],
                &port.to_string()[..7]
            )
        )),
        "{stderr}"
    );
    assert!(
        stderr.ends_with("Done: picked 3, skipped 1 (upstream trailer: 1).\n"),
        "{stderr}"
    );
}

// ---- Non-ASCII subjects anywhere ----

/// Non-ASCII text at every position near the start of a subject (where the vendor prefixes and
/// `[PATCH` are compared), in several scripts, on the branch and in the list: no panic (exit 101), the subject
/// rule still matches them, and `bport list` prints them as `git log --oneline` does.
#[test]
fn non_ascii_subjects_at_every_position_in_several_scripts() {
    let t = TestRepo::new();
    t.commit("base", &[("a", Some("a\n"))]);
    t.branch("upstream", "master");
    t.branch("stable", "master");
    let scripts = ["é", "Ω", "ж", "修复", "🐛", "ع", "e\u{301}"];
    let heads = ["", "UPSTREAM:", "[PATCH", "BACKPORT: FROMGIT:", "CHROMIUM"];
    let mut n = 0;
    t.checkout("stable");
    for script in scripts {
        for head in heads {
            for cut in 0..=head.len().min(9) {
                // Text from the prefix cut at every byte, then the multi-byte character, then a tail.
                let subject = format!("{}{script}{} tail {n}", &head[..cut], &head[cut..]);
                n += 1;
                t.commit(&subject, &[("a", Some(&format!("{n}\n")))]);
            }
        }
    }
    // The listed commits: two with non-ASCII subjects the branch carries (under a stacked prefix), one new.
    t.checkout("upstream");
    t.commit("ñandú: fix Ωmega", &[("u1", Some("1\n"))]);
    t.commit("修复: 🐛 in [PATCH] handling", &[("u2", Some("2\n"))]);
    t.commit("ジ new feature", &[("u3", Some("3\n"))]);
    t.checkout("stable");
    t.commit(
        "UPSTREAM: ñandú: fix Ωmega",
        &[("u1", Some("1\n(stable)\n"))],
    );
    t.commit(
        "[PATCH v2] 修复: 🐛 in [PATCH] handling",
        &[("u2", Some("2\n"))],
    );
    let listed = run_ok(&t, &["list", "master..upstream"]);
    if has_git() {
        let oracle = git_ok(
            t.path(),
            &["log", "--reverse", "--oneline", "master..upstream"],
        );
        assert_eq!(listed.stdout, oracle);
    }
    let (_d, list) = list_file(&listed.stdout);
    let out = run_ok(&t, &["apply", "--dry-run", list.to_str().unwrap()]);
    let s = |rev: &str| short(&t, rev);
    assert_eq!(
        out.stdout,
        format!(
            "1/3 {} ñandú: fix Ωmega: skip (already applied: subject + same files, 100% of lines, {})\n\
             2/3 {} 修复: 🐛 in [PATCH] handling: skip (already applied: subject + same files, 100% of lines, {})\n\
             3/3 {} ジ new feature: pick\n\
             Plan: 1 to pick (0 with predicted conflicts), 2 to skip (subject: 2); dry run, nothing was changed.\n",
            s("upstream~2"),
            s("stable~1"),
            s("upstream~1"),
            s("stable"),
            s("upstream"),
        )
    );
}

// ---- An empty list ----

/// An empty patch list (or one of comments only) is "nothing to do", exit 0, touching nothing,
/// also as a dry run (without walking the whole history).
#[test]
fn empty_patch_list_is_nothing_to_do() {
    let t = four_fixes();
    let before = t.snapshot();
    for text in ["", "# nothing yet\n\n"] {
        let (_d, list) = list_file(text);
        for dry in [false, true] {
            let mut args = vec!["apply"];
            if dry {
                args.push("--dry-run");
            }
            args.push(list.to_str().unwrap());
            let out = bport::run(t.path(), &args);
            assert_eq!(
                out.transcript(),
                "------- stderr -------\nNothing to do: the patch list has no commits.\n"
            );
        }
    }
    assert_eq!(t.snapshot(), before);
    assert!(!t.path().join(".git/bport").exists());
}

// ---- Gitlinks ----

/// A repository whose base has a submodule entry `sub` (a gitlink; no clone needed) and file `a`; `upstream`
/// bumps the gitlink (and edits `a`); `vendor` (HEAD) keeps, drops or bumps the submodule as `vendor_does` says.
fn gitlink_repo(vendor_does: &str) -> TestRepo {
    let t = TestRepo::new();
    t.commit("base", &[("a", Some("a\n"))]);
    let (x, y, z) = (
        Oid::from_str("1111111111111111111111111111111111111111").unwrap(),
        Oid::from_str("2222222222222222222222222222222222222222").unwrap(),
        Oid::from_str("3333333333333333333333333333333333333333").unwrap(),
    );
    commit_index(&t, "add submodule sub", 1_600_001_000, |i| {
        i.add(&gitlink_entry("sub", x)).unwrap()
    });
    // A checkout without the submodule cloned has its empty directory, as git leaves it.
    std::fs::create_dir_all(t.path().join("sub")).unwrap();
    t.branch("upstream", "master");
    t.branch("vendor", "master");
    t.checkout("upstream");
    commit_index(&t, "sub: bump", 1_600_002_000, |i| {
        i.add(&gitlink_entry("sub", y)).unwrap()
    });
    std::fs::write(t.path().join("a"), "a edited\n").unwrap();
    commit_index(&t, "a: edit", 1_600_002_100, |i| {
        i.add_path(std::path::Path::new("a")).unwrap()
    });
    t.checkout("vendor");
    match vendor_does {
        "keep" => {}
        "drop" => {
            commit_index(&t, "drop submodule sub", 1_600_003_000, |i| {
                i.remove_path(std::path::Path::new("sub")).unwrap()
            });
        }
        "bump" => {
            commit_index(&t, "sub: vendor bump", 1_600_003_000, |i| {
                i.add(&gitlink_entry("sub", z)).unwrap()
            });
        }
        other => panic!("{other}"),
    }
    std::fs::create_dir_all(t.path().join("sub")).unwrap();
    t
}

/// A gitlink bump is never read as a blob (that fails: "reading blob <gitlink sha>", exit 70). With the
/// submodule on the branch it picks cleanly to git's tree; without it (or bumped elsewhere) it stops where `git
/// cherry-pick` stops, with the same index stages and `git status`; the dry run predicts that stop and keeps
/// its whole plan.
#[test]
fn gitlink_bumps_with_and_without_the_submodule_match_git() {
    skip_unless!(has_git());
    for vendor_does in ["keep", "drop", "bump"] {
        let t = gitlink_repo(vendor_does);
        let g = t.copy();
        let (_d, list) = list_file(&t.list("master..upstream"));
        let dry = run_ok(&t, &["apply", "--dry-run", list.to_str().unwrap()]);
        let git_pick = git(g.path())
            .args(["cherry-pick", "master..upstream"])
            .output()
            .unwrap();
        let out = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
        let (bump, edit) = (short(&t, "upstream~1"), short(&t, "upstream"));
        if vendor_does == "keep" {
            assert!(git_pick.status.success(), "{git_pick:?}");
            assert_eq!(out.code, Some(0), "{vendor_does}: {}", out.transcript());
            assert_eq!(
                dry.stdout,
                format!(
                    "1/2 {bump} sub: bump: pick\n2/2 {edit} a: edit: pick\n\
                     Plan: 2 to pick (0 with predicted conflicts), 0 to skip; dry run, nothing was changed.\n"
                )
            );
            assert_eq!(
                git_ok(t.path(), &["rev-parse", "HEAD^{tree}"]),
                git_ok(g.path(), &["rev-parse", "HEAD^{tree}"])
            );
        } else {
            assert_eq!(git_pick.status.code(), Some(1), "{git_pick:?}");
            assert_eq!(out.code, Some(1), "{vendor_does}: {}", out.transcript());
            let kind = if vendor_does == "drop" {
                "deleted by us"
            } else {
                "both modified"
            };
            assert!(
                out.stderr
                    .contains(&format!("conflicts in\n  {kind}: sub\n")),
                "{}",
                out.stderr
            );
            assert_eq!(
                dry.stdout,
                format!(
                    "1/2 {bump} sub: bump: pick, conflict predicted in sub\n2/2 {edit} a: edit: pick\n\
                     Plan: 2 to pick (1 with predicted conflicts), 0 to skip; dry run, nothing was changed.\n"
                )
            );
        }
        for args in [&["ls-files", "--stage"][..], &["status", "--porcelain"][..]] {
            assert_eq!(
                git_ok(t.path(), args),
                git_ok(g.path(), args),
                "{vendor_does}: git {args:?}"
            );
        }
        assert!(
            t.path().join("sub").is_dir(),
            "the submodule's directory stays"
        );
    }
}

// ---- An untracked file in the way ----

/// An untracked file where a pick adds a tracked one. git refuses with "The following untracked
/// working tree files would be overwritten" and leaves the file; bport names the path and what to do, leaves the
/// file byte for byte, and keeps its run: once the file is moved, `--continue` ends where git's pick does.
/// Named deviation: git aborts its cherry-pick (exit 128, no sequencer state); bport keeps the picks made so far
/// (exit 2, resumable), because a long run should not be redone for one stray file.
#[test]
fn untracked_file_in_the_way_is_named_and_the_run_resumes() {
    let t = four_fixes();
    t.checkout("upstream");
    t.commit("perf: add a tool", &[("tools/new.sh", Some("echo new\n"))]);
    t.checkout("vendor");
    std::fs::create_dir_all(t.path().join("tools")).unwrap();
    std::fs::write(t.path().join("tools/new.sh"), "my own\n").unwrap();
    let g = t.copy();
    let (_d, list) = list_file(&t.list("master..upstream"));
    let out = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(out.code, Some(2), "{}", out.transcript());
    assert!(
        out.stderr.ends_with(
            "error: untracked working tree files would be overwritten: tools/new.sh\n\
             hint: move or remove them (nothing was overwritten; the picks so far are saved), then run \
             `bport apply --continue`; `bport apply --abort` gives up the run\n"
        ),
        "{}",
        out.stderr
    );
    assert_eq!(t.read("tools/new.sh"), "my own\n");
    let status = run_ok(&t, &["status"]);
    assert!(
        status.stdout.starts_with("Interrupted at"),
        "{}",
        status.stdout
    );
    // Still in the way: refused again, still untouched.
    let again = bport::run(t.path(), &["apply", "--continue"]);
    assert_eq!(again.code, Some(2), "{}", again.transcript());
    assert_eq!(t.read("tools/new.sh"), "my own\n");
    std::fs::remove_file(t.path().join("tools/new.sh")).unwrap();
    let cont = run_ok(&t, &["apply", "--continue"]);
    assert!(
        cont.stderr.ends_with("Done: picked 5, skipped 0.\n"),
        "{}",
        cont.stderr
    );
    assert_eq!(t.read("tools/new.sh"), "echo new\n");
    skip_unless!(has_git());
    let refused = git(g.path())
        .args(["cherry-pick", "master..upstream"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(128));
    assert!(String::from_utf8_lossy(&refused.stderr).contains(
        "The following untracked working tree files would be overwritten by merge:\n\ttools/new.sh\n"
    ));
    assert_eq!(g.read("tools/new.sh"), "my own\n");
    assert_eq!(git_ok(t.path(), &["status", "--porcelain"]), "");
}

/// An untracked file at a stop: a conflicted path the branch lacks (modify/delete) is written by the stop itself;
/// an untracked file there is named, not overwritten.
#[test]
fn untracked_file_where_a_stop_would_write_is_not_overwritten() {
    let t = four_fixes();
    t.commit("vendor: drop p2", &[("p2", None)]);
    std::fs::write(t.path().join("p2"), "precious\n").unwrap();
    let (_d, list) = list_file(&t.list("master..upstream"));
    let out = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(out.code, Some(2), "{}", out.transcript());
    assert!(
        out.stderr
            .contains("error: untracked working tree files would be overwritten: p2\n"),
        "{}",
        out.stderr
    );
    assert_eq!(t.read("p2"), "precious\n");
    std::fs::remove_file(t.path().join("p2")).unwrap();
    let stop = bport::run(t.path(), &["apply", "--continue"]);
    assert_eq!(stop.code, Some(1), "{}", stop.transcript());
    assert!(stop.stderr.contains("deleted by us: p2"), "{}", stop.stderr);
}

// ---- Skip-worktree and sparse checkout ----

/// Entries marked skip-worktree (by hand, and by a sparse checkout) whose files are absent are
/// not uncommitted changes: `git status` is clean, and bport applies as it would on a full checkout; the flags
/// and the absent files stay as they were.
#[test]
fn skip_worktree_and_sparse_entries_are_not_uncommitted_changes() {
    skip_unless!(has_git());
    for how in ["skip-worktree", "sparse-checkout"] {
        let t = four_fixes();
        t.commit("vendor: docs", &[("docs/guide.txt", Some("guide\n"))]);
        match how {
            "skip-worktree" => {
                git_ok(t.path(), &["update-index", "--skip-worktree", "p4"]);
                std::fs::remove_file(t.path().join("p4")).unwrap();
            }
            _ => {
                git_ok(t.path(), &["sparse-checkout", "set", "--no-cone", "/p*"]);
                assert!(!t.path().join("docs/guide.txt").exists());
            }
        }
        assert_eq!(
            git_ok(t.path(), &["status", "--porcelain"]),
            "",
            "{how}: git says clean"
        );
        let (_d, list) = list_file(&t.list("master..upstream~1"));
        let out = run_ok(&t, &["apply", list.to_str().unwrap()]);
        assert!(
            out.stderr.ends_with("Done: picked 3, skipped 0.\n"),
            "{how}: {}",
            out.stderr
        );
        assert!(t.read("p1").contains("p1 line 3 fixed\n"), "{how}");
        assert!(t.read("p3").contains("p3 line 3 fixed\n"), "{how}");
        assert_eq!(
            git_ok(t.path(), &["status", "--porcelain"]),
            "",
            "{how}: still clean"
        );
        let flagged = git_ok(t.path(), &["ls-files", "-t"]);
        let expect = if how == "skip-worktree" {
            "S p4\n"
        } else {
            "S docs/guide.txt\n"
        };
        assert!(flagged.contains(expect), "{how}: {flagged}");
    }
}

// ---- What --dry-run and a killed run say ----

/// A run killed after two picks in memory must not print "picked as" for commits that are then lost: the
/// status lines wait until the picks are durable, so a killed run prints none; `--continue` then reports
/// every pick with the commit that exists.
#[test]
fn killed_run_prints_no_pick_that_was_lost() {
    let t = four_fixes();
    let (_d, list) = list_file(&t.list("master..upstream"));
    let killed = bport::bport(t.path())
        .args(["apply", list.to_str().unwrap()])
        .env("BPORT_TEST_CRASH_AFTER_PICKS", "2")
        .output()
        .unwrap();
    assert_eq!(killed.status.code(), None, "killed by SIGABRT");
    assert_eq!(String::from_utf8_lossy(&killed.stderr), "");
    assert_eq!(t.oid("HEAD"), t.oid("master"), "nothing was durable");
    let cont = run_ok(&t, &["apply", "--continue"]);
    let lines: Vec<String> = (1..=4)
        .map(|n| {
            step_line(
                &t,
                n,
                &format!("picked as {}", short(&t, &format!("HEAD~{}", 4 - n))),
            )
        })
        .collect();
    assert_eq!(
        cont.stderr,
        format!("{}Done: picked 4, skipped 0.\n", lines.concat())
    );
}

/// Found on flatpak-1.14.x: after a predicted conflict the dry run goes on from the clean part of
/// that patch (the conflicted files keep the branch's side), so a later patch that edits the lines the conflicting
/// one added is a pick, not "empty"; the real run, which stops there, agrees once the stop is resolved that way.
#[test]
fn dry_run_after_a_predicted_conflict_keeps_the_clean_part() {
    let lines = |tag: &str| (1..=8).map(|i| format!("{tag} {i}\n")).collect::<String>();
    let (t, _d, list) = Conflict::new(
        "base",
        &[("A", Some(&lines("a"))), ("B", Some(&lines("b")))],
    )
    .ours(
        "vendor: A",
        &[("A", Some(&lines("a").replace("a 3\n", "a 3 (vendor)\n")))],
    )
    .theirs(
        "add L, edit A",
        &[
            ("A", Some(&lines("a").replace("a 3\n", "a three\n"))),
            ("B", Some(&lines("b").replace("b 5\n", "b 5\nL\n"))),
        ],
    )
    .theirs("drop L", &[("B", Some(&lines("b")))])
    .with_list();
    let out = run_ok(&t, &["apply", "--dry-run", list.to_str().unwrap()]);
    assert_eq!(
        out.stdout,
        format!(
            "1/2 {} add L, edit A: pick, conflict predicted in A\n2/2 {} drop L: pick\n\
             Plan: 2 to pick (1 with predicted conflicts), 0 to skip; dry run, nothing was changed.\n",
            short(&t, "upstream~1"),
            short(&t, "upstream"),
        )
    );
    // The real run: stop, keep the branch's A, continue: "drop L" is a real change, as predicted.
    let stop = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(stop.code, Some(1), "{}", stop.transcript());
    std::fs::write(
        t.path().join("A"),
        lines("a").replace("a 3\n", "a 3 (vendor)\n"),
    )
    .unwrap();
    let mut index = t.repo.index().unwrap();
    index.read(true).unwrap();
    index.add_path(std::path::Path::new("A")).unwrap();
    index.write().unwrap();
    let cont = run_ok(&t, &["apply", "--continue"]);
    assert!(
        cont.stderr.ends_with("Done: picked 2, skipped 0.\n"),
        "{}",
        cont.stderr
    );
    assert_eq!(t.read("B"), lines("b"));
}

// ---- Damaged repositories ----

fn loose_object_path(t: &TestRepo, oid: Oid) -> std::path::PathBuf {
    let hex = oid.to_string();
    t.path()
        .join(".git/objects")
        .join(&hex[..2])
        .join(&hex[2..])
}

/// A missing object is a problem of the repository (exit 4, the object named, `git fsck` as
/// the hint), not an internal error (exit 70); a dry run prints the plan it made before the failure; and a
/// ref that cannot be read is named too. `git cherry-pick` fails on the same object (the oracle).
#[test]
fn missing_objects_and_unreadable_refs_are_named_environment_errors() {
    let t = four_fixes();
    // The vendor's own edit of p3 makes the third pick a real three-way merge that reads fix 3's blob (and, as
    // it changes another file too, no patch-id comparison reads it while planning).
    let p3 = t.read("p3").replace("p3 line 9\n", "p3 line 9 vendor\n");
    t.commit("vendor: p3", &[("p3", Some(&p3)), ("v.txt", Some("v\n"))]);
    let (_d, list) = list_file(&t.list("master..upstream"));
    // The blob of fix 3's new p3: needed by the third pick.
    let blob = t
        .repo
        .find_commit(t.oid("upstream~1"))
        .unwrap()
        .tree()
        .unwrap()
        .get_path(std::path::Path::new("p3"))
        .unwrap()
        .id();
    let g = t.copy();
    std::fs::remove_file(loose_object_path(&t, blob)).unwrap();
    let dry = bport::run(t.path(), &["apply", "--dry-run", list.to_str().unwrap()]);
    assert_eq!(dry.code, Some(4), "{}", dry.transcript());
    assert_eq!(
        dry.stdout,
        format!("{}{}", step_line(&t, 1, "pick"), step_line(&t, 2, "pick")),
        "the plan made before the failure is printed: {}",
        dry.transcript()
    );
    assert!(dry.stderr.contains(&blob.to_string()), "{}", dry.stderr);
    assert!(
        dry.stderr
            .contains("hint: the repository lacks or cannot read that object"),
        "{}",
        dry.stderr
    );
    let before = t.snapshot();
    let run = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(run.code, Some(4), "{}", run.transcript());
    assert!(run.stderr.contains(&blob.to_string()), "{}", run.stderr);
    assert_eq!(t.oid("HEAD"), before.head.1, "the branch did not move");
    run_ok(&t, &["apply", "--abort"]);
    assert_eq!(t.snapshot(), before);

    // HEAD's branch ref holds garbage.
    let r = g.copy();
    std::fs::write(r.path().join(".git/refs/heads/vendor"), "not a sha\n").unwrap();
    let out = bport::run(r.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(out.code, Some(4), "{}", out.transcript());
    assert!(out.stderr.contains("reading HEAD"), "{}", out.stderr);
    assert!(out.stderr.contains("refs/heads/vendor"), "{}", out.stderr);
    assert!(
        out.stderr.contains("hint: a ref cannot be read"),
        "{}",
        out.stderr
    );

    if has_git() {
        std::fs::remove_file(loose_object_path(&g, blob)).unwrap();
        let git_pick = git(g.path())
            .args(["cherry-pick", "master..upstream"])
            .output()
            .unwrap();
        assert!(!git_pick.status.success());
        assert!(
            String::from_utf8_lossy(&git_pick.stderr).contains(&blob.to_string()[..7]),
            "{git_pick:?}"
        );
    }
}
