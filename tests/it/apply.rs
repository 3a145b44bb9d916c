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

/// Must show 2: on a list without conflicts, every commit (tree, author, committer, message, so the id) equals what
/// `git cherry-pick <range>` makes on a copy. With `-x -s` too.
#[test]
fn clean_list_equals_git_cherry_pick_commit_for_commit() {
    if !has_git() {
        return;
    }
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

/// The upstream series for the skip-rule tests: four fixes on branch `upstream`, each in its own file, and an
/// empty vendor branch `vendor` (HEAD) from master.
fn four_fixes() -> TestRepo {
    let t = TestRepo::new();
    let file = |n: usize| {
        (1..=10)
            .map(|i| format!("p{n} line {i}\n"))
            .collect::<String>()
    };
    t.commit(
        "base",
        &[
            ("p1", Some(&file(1))),
            ("p2", Some(&file(2))),
            ("p3", Some(&file(3))),
            ("p4", Some(&file(4))),
        ],
    );
    t.branch("upstream", "master");
    t.branch("vendor", "master");
    t.checkout("upstream");
    for n in 1..=4 {
        let name = format!("p{n}");
        let changed = t
            .read(&name)
            .replace(&format!("p{n} line 3\n"), &format!("p{n} line 3 fixed\n"));
        t.commit(&format!("perf: fix {n}"), &[(&name, Some(&changed))]);
    }
    t.checkout("vendor");
    t
}

/// Runs `bport apply` of master..upstream and returns stderr (asserting exit 0).
fn apply_all(t: &TestRepo, extra: &[&str]) -> String {
    let (_d, list) = list_file(&t.list("master..upstream"));
    let mut args = vec!["apply"];
    args.extend(extra);
    args.push(list.to_str().unwrap());
    let out = bport::run(t.path(), &args);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    out.stderr
}

fn step_line(t: &TestRepo, n: usize, what: &str) -> String {
    format!(
        "{n}/4 {} perf: fix {n}: {what}\n",
        short(t, &format!("upstream~{}", 4 - n))
    )
}

/// Must show 3: a trailer naming the listed commit skips it, even with another subject and another diff
/// (`(cherry picked from commit X)` and the two-line Android FROMGIT form).
#[test]
fn skip_rule_trailer_including_two_line_fromgit() {
    let t = four_fixes();
    let (u1, u2) = (t.oid("upstream~3"), t.oid("upstream~2"));
    let p1 = t
        .read("p1")
        .replace("p1 line 3\n", "p1 line 3 vendor flavour\n");
    t.commit(
        &format!("vendor: ported\n\n(cherry picked from commit {u1})\n"),
        &[("p1", Some(&p1))],
    );
    let p2 = t.read("p2").replace("p2 line 3\n", "p2 line 3 other\n");
    t.commit(
        &format!(
            "FROMGIT: vendor: also ported\n\nBody.\n\n(cherry picked from commit {u2}\n https://git.kernel.org/pub/scm/linux/kernel/git/perf/perf-tools-next.git perf-tools-next)\n"
        ),
        &[("p2", Some(&p2))],
    );
    let stderr = apply_all(&t, &[]);
    // HEAD moved by two picks, so name the vendor commits from the new HEAD.
    let vendor1 = short(&t, "HEAD~3");
    let vendor2 = short(&t, "HEAD~2");
    assert_eq!(
        stderr,
        [
            step_line(
                &t,
                1,
                &format!("skipped (already applied: upstream trailer, {vendor1})")
            ),
            step_line(
                &t,
                2,
                &format!("skipped (already applied: upstream trailer, {vendor2})")
            ),
            step_line(&t, 3, &format!("picked as {}", short(&t, "HEAD~1"))),
            step_line(&t, 4, &format!("picked as {}", short(&t, "HEAD"))),
            "Done: picked 2, skipped 2 (upstream trailer: 2).\n".to_owned(),
        ]
        .concat()
    );
}

/// Must show 3: equal subject after normalizing (stacked prefixes) skips a port whose diff was edited.
#[test]
fn skip_rule_subject_with_edited_diff() {
    let t = four_fixes();
    let p1 = t
        .read("p1")
        .replace("p1 line 3\n", "p1 line 3 fixed differently\n");
    let vendor = t.commit("BACKPORT: UPSTREAM: perf:  fix 1", &[("p1", Some(&p1))]);
    let stderr = apply_all(&t, &[]);
    assert!(
        stderr.starts_with(&step_line(
            &t,
            1,
            &format!(
                "skipped (already applied: subject, {})",
                &vendor.to_string()[..7]
            )
        )),
        "{stderr}"
    );
    assert!(
        stderr.ends_with("Done: picked 3, skipped 1 (subject: 1).\n"),
        "{stderr}"
    );
}

/// Must show 3: equal stable patch-id skips a port whose subject changed.
#[test]
fn skip_rule_patch_id_with_changed_subject() {
    let t = four_fixes();
    let p2 = t.read("p2").replace("p2 line 3\n", "p2 line 3 fixed\n");
    let vendor = t.commit(
        "vendor: the same fix under another name",
        &[("p2", Some(&p2))],
    );
    let stderr = apply_all(&t, &[]);
    assert!(
        stderr.contains(&step_line(
            &t,
            2,
            &format!(
                "skipped (already applied: patch-id, {})",
                &vendor.to_string()[..7]
            )
        )),
        "{stderr}"
    );
    assert!(
        stderr.ends_with("Done: picked 3, skipped 1 (patch-id: 1).\n"),
        "{stderr}"
    );
    // With --match subject only, the patch-id rule is off: the pick changes nothing and is skipped as empty.
    let t = four_fixes();
    t.commit(
        "vendor: the same fix under another name",
        &[("p2", Some(&p2))],
    );
    let stderr = apply_all(&t, &["--match", "subject"]);
    assert!(
        stderr.contains(&step_line(&t, 2, "skipped (empty)")),
        "{stderr}"
    );
}

/// A pick that changes nothing (the change arrived folded into another commit) is skipped as empty.
#[test]
fn skip_empty_pick() {
    let t = four_fixes();
    let p3 = t.read("p3").replace("p3 line 3\n", "p3 line 3 fixed\n");
    let p4 = t.read("p4").replace("p4 line 9\n", "p4 line 9 vendor\n");
    t.commit(
        "vendor: squashed work",
        &[("p3", Some(&p3)), ("p4", Some(&p4))],
    );
    let stderr = apply_all(&t, &[]);
    assert!(
        stderr.contains(&step_line(&t, 3, "skipped (empty)")),
        "{stderr}"
    );
    assert!(
        stderr.ends_with("Done: picked 3, skipped 1 (empty: 1).\n"),
        "{stderr}"
    );
}

/// A subject twice on the branch cannot decide: patch-id decides where it can, else bport picks and warns.
#[test]
fn ambiguous_subject_is_decided_by_patch_id_or_picked_with_a_warning() {
    let t = four_fixes();
    let p1 = t.read("p1").replace("p1 line 3\n", "p1 line 3 fixed\n");
    let same = t.commit("perf: fix 1", &[("p1", Some(&p1))]);
    let p4 = t.read("p4").replace("p4 line 8\n", "p4 line 8 vendor\n");
    t.commit("perf: fix 1", &[("p4", Some(&p4))]);
    let stderr = apply_all(&t, &[]);
    assert!(
        stderr.starts_with(&step_line(
            &t,
            1,
            &format!(
                "skipped (already applied: patch-id, {})",
                &same.to_string()[..7]
            )
        )),
        "{stderr}"
    );
    // Now the branch has "perf: fix 4" twice, neither with fix 4's diff: picked, with a warning.
    let t = four_fixes();
    let p2 = t.read("p2").replace("p2 line 9\n", "p2 line 9 v\n");
    t.commit("perf: fix 4", &[("p2", Some(&p2))]);
    let p1 = t.read("p1").replace("p1 line 9\n", "p1 line 9 v\n");
    t.commit("UPSTREAM: perf: fix 4", &[("p1", Some(&p1))]);
    let stderr = apply_all(&t, &[]);
    let sha4 = short(&t, "upstream");
    assert!(
        stderr.contains(&format!(
            "warning: {sha4} perf: fix 4: the subject occurs more than once in the list or on the branch and neither trailer nor patch-id decided; picked it anyway\n4/4 {sha4} perf: fix 4: picked as {}\n",
            short(&t, "HEAD")
        )),
        "{stderr}"
    );
}

/// bport's patch-id equals `git patch-id --stable` for every kind of change (renames diffed as delete + add, as
/// git's own patch-ids do: named deviation from `git show`'s default rename detection).
#[test]
fn patch_id_equals_git_patch_id_stable() {
    if !has_git() {
        return;
    }
    let t = repo::upstream_and_vendor();
    // Odd cases on a side branch: binary add and change, an empty file, a symlink, a mode change with an edit.
    t.branch("odd", "master");
    t.checkout("odd");
    t.commit(
        "binary: add",
        &[("bin.dat", Some("a\0b\n")), ("empty", Some(""))],
    );
    t.commit("binary: change", &[("bin.dat", Some("a\0c\n"))]);
    std::os::unix::fs::symlink("a.txt", t.path().join("link")).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        let p = t.path().join("b.txt");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    t.commit(
        "link, and b.txt executable and edited",
        &[("b.txt", Some("b\nmore\n"))],
    );
    let mut walk = t.repo.revwalk().unwrap();
    walk.push(t.oid("upstream")).unwrap();
    walk.push(t.oid("vendor")).unwrap();
    walk.push(t.oid("odd")).unwrap();
    let mut checked = 0;
    for oid in walk {
        let oid = oid.unwrap();
        let commit = t.repo.find_commit(oid).unwrap();
        let ours = ::bport::git::patch_id_of_commit(&t.repo, &commit).unwrap();
        let show = oracle::git(t.path())
            .args(["show", "--no-renames", &oid.to_string()])
            .output()
            .unwrap();
        let mut child = oracle::git(t.path())
            .args(["patch-id", "--stable"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(child.stdin.as_mut().unwrap(), &show.stdout).unwrap();
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        let theirs = text.split_whitespace().next().map(str::to_owned);
        assert_eq!(
            ours.map(|p| p.to_string()),
            theirs,
            "commit {oid} {:?}",
            commit.summary()
        );
        checked += 1;
    }
    assert_eq!(checked, 12);
}

/// foo/bar plus two clean upstream commits after the conflicting one: a list of four where step 2 conflicts.
fn conflict_in_the_middle() -> (TestRepo, tempfile::TempDir, PathBuf) {
    let t = repo::foo_bar();
    t.checkout("bar");
    t.commit("bar: add notes", &[("notes/bar.txt", Some("notes\n"))]);
    t.commit("bar: more notes", &[("notes/more.txt", Some("more\n"))]);
    t.checkout("foo");
    t.commit("foo: add a tool", &[("tools/foo.sh", Some("echo foo\n"))]);
    // Step 1 ("bar: add notes") adds a file cleanly, step 2 ("bar description") conflicts: the stop must carry
    // step 1's commit.
    let notes = t.list("bar~2..bar~1");
    let rest: String = t
        .list("master..bar")
        .lines()
        .filter(|l| !l.contains("add notes"))
        .map(|l| format!("{l}\n"))
        .collect();
    let (d, p) = list_file(&format!("# notes first, then the conflict\n{notes}{rest}"));
    (t, d, p)
}

/// Must show 4: --abort restores branch, HEAD, index and worktree exactly, also the files a stopped pick added.
#[test]
fn abort_restores_the_exact_prior_state() {
    let (t, _d, list) = conflict_in_the_middle();
    let before = t.snapshot();
    let stop = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(stop.code, Some(1), "{}", stop.transcript());
    assert!(stop.stderr.contains("Stopped at 2/4"), "{}", stop.stderr);
    assert!(t.path().join("notes/bar.txt").exists());
    let status = bport::run(t.path(), &["status"]);
    assert_eq!(status.code, Some(0), "{}", status.transcript());
    let s = |rev: &str| short(&t, rev);
    assert_eq!(
        status.stdout,
        format!(
            "Stopped at 2/4 {bar} bar description: conflicts in README\n  \
             1/4 {notes} bar: add notes: picked as {head}\n\
             > 2/4 {bar} bar description: conflict (stopped here)\n  \
             3/4 {more} more bar description: pending\n  \
             4/4 {more_notes} bar: more notes: pending\n",
            bar = s("bar~3"),
            notes = s("bar~1"),
            more = s("bar~2"),
            more_notes = s("bar"),
            head = s("HEAD"),
        )
    );
    let abort = bport::run(t.path(), &["apply", "--abort"]);
    assert_eq!(abort.code, Some(0), "{}", abort.transcript());
    assert_eq!(t.snapshot(), before);
    assert!(!t.path().join(".git/bport/state.json").exists());
    let none = bport::run(t.path(), &["status"]);
    assert_eq!(none.stdout, "No bport apply in progress.\n");
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

/// Must show 4: a run killed at any point (after N picks, after the pack, after the state, after the worktree)
/// is recovered by --continue to exactly the uninterrupted result, and by --abort to exactly the prior state.
#[test]
fn killed_runs_recover_by_continue_and_by_abort() {
    let t = repo::upstream_and_vendor();
    let (_d, list) = list_file(&t.list("master..upstream"));
    let clean = t.copy();
    let out = bport::run(clean.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    let want = clean.snapshot();
    let before = t.snapshot();
    let crashes: [(&str, &str); 6] = [
        ("BPORT_TEST_CRASH_AFTER_PICKS", "1"),
        ("BPORT_TEST_CRASH_AFTER_PICKS", "5"),
        ("BPORT_TEST_CRASH_AT", "pack-written"),
        ("BPORT_TEST_CRASH_AT", "state-saved"),
        ("BPORT_TEST_CRASH_AT", "worktree-updated"),
        ("BPORT_TEST_CRASH_AFTER_PICKS", "7"),
    ];
    for (var, value) in crashes {
        for recover in ["--continue", "--abort"] {
            let c = t.copy();
            let out = bport::bport(c.path())
                .args(["apply", list.to_str().unwrap()])
                .env(var, value)
                .output()
                .unwrap();
            assert_eq!(
                out.status.code(),
                None,
                "{var}={value} should die by signal"
            );
            let fix = bport::run(c.path(), &["apply", recover]);
            assert_eq!(
                fix.code,
                Some(0),
                "{var}={value} {recover}: {}",
                fix.transcript()
            );
            let got = c.snapshot();
            let expected = if recover == "--abort" { &before } else { &want };
            assert_eq!(&got, expected, "{var}={value} {recover}");
            assert!(!c.path().join(".git/bport/state.json").exists());
        }
    }
}

/// Must show 4: a kill while bport writes a stop recovers too: --continue redoes the stop.
#[test]
fn killed_stop_and_killed_continue_recover() {
    if !has_git() {
        return;
    }
    let (t, _d, list) = conflict_in_the_middle();
    for point in ["pack-written", "state-saved", "worktree-updated"] {
        let c = t.copy();
        let out = bport::bport(c.path())
            .args(["apply", list.to_str().unwrap()])
            .env("BPORT_TEST_CRASH_AT", point)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), None, "{point}");
        // --continue after the crash re-does the stop.
        let again = bport::run(c.path(), &["apply", "--continue"]);
        assert_eq!(again.code, Some(1), "{point}: {}", again.transcript());
        assert!(again.stderr.contains("Stopped at 2/4"), "{}", again.stderr);
        assert_eq!(
            oracle::git_ok(c.path(), &["status", "--porcelain"]),
            "UU README\n",
            "{point}"
        );
    }
}

/// Must show 5: each bad input names its problem (and the line) and leaves the repository untouched.
#[test]
fn bad_inputs_are_refused_and_touch_nothing() {
    let t = repo::foo_bar();
    t.checkout("bar");
    t.branch("side", "master");
    t.checkout("side");
    t.commit("side work", &[("side.txt", Some("s\n"))]);
    t.checkout("foo");
    // A merge commit to list.
    let merge = {
        let bar = t.repo.find_commit(t.oid("bar")).unwrap();
        let side = t.repo.find_commit(t.oid("side")).unwrap();
        let mut idx = t.repo.merge_commits(&bar, &side, None).unwrap();
        let tree = t
            .repo
            .find_tree(idx.write_tree_to(&t.repo).unwrap())
            .unwrap();
        let sig = git2::Signature::new(
            "A U Thor",
            "author@example.com",
            &git2::Time::new(1_600_009_999, 0),
        )
        .unwrap();
        t.repo
            .commit(None, &sig, &sig, "Merge side", &tree, &[&bar, &side])
            .unwrap()
    };
    // Two objects sharing a 4-digit prefix make an ambiguous abbreviation.
    let ambiguous = {
        let mut seen = std::collections::HashMap::new();
        let mut found = None;
        for i in 0.. {
            let oid = t
                .repo
                .blob(format!("blob {i}\n").as_bytes())
                .unwrap()
                .to_string();
            if seen.insert(oid[..4].to_owned(), oid.clone()).is_some() {
                found = Some(oid[..4].to_owned());
                break;
            }
        }
        found.unwrap()
    };
    let bar1 = short(&t, "bar~1");
    let cases: Vec<(String, String)> = vec![
        (format!("{bar1} bar description\nnot a line\n"), "patch list line 2: expected `<sha> <subject>`, found \"not a line\"".into()),
        (format!("# c\n{bar1} bar description\ndeadbeef1 gone\n"), "patch list line 3: deadbeef1: no such object in this repository (fetch it first?)".into()),
        (format!("{ambiguous} anything\n"), format!("patch list line 1: {ambiguous}: the abbreviation is ambiguous; write more digits")),
        (format!("{bar1} bar: a different subject\n"), format!("patch list line 1: {bar1} is \"bar description\", but the list says \"bar: a different subject\"")),
        (format!("{} Merge side\n", &merge.to_string()[..7]), format!("patch list line 1: {}: a merge commit with 2 parents; pass -m <parent-number> to pick it", &merge.to_string()[..7])),
    ];
    let before = t.snapshot();
    for (text, message) in &cases {
        let (_d, list) = list_file(text);
        let out = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
        assert_eq!(out.code, Some(2), "{}", out.transcript());
        assert!(
            out.stderr.starts_with(&format!("error: {message}\n")),
            "{}",
            out.stderr
        );
        assert_eq!(t.snapshot(), before);
        assert!(!t.path().join(".git/bport/state.json").exists());
    }
    let (_d, list) = list_file(&t.list("master..bar"));
    // A dirty worktree.
    std::fs::write(t.path().join("README"), "dirty\n").unwrap();
    let before = t.snapshot();
    let out = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(out.code, Some(2), "{}", out.transcript());
    assert_eq!(
        out.stderr,
        "error: the worktree has uncommitted changes: README\nhint: commit or stash your changes (git stash), then run bport apply again\n"
    );
    assert_eq!(t.snapshot(), before);
    t.checkout("foo");
    // A git operation in progress.
    std::fs::write(
        t.path().join(".git/MERGE_HEAD"),
        format!("{}\n", t.oid("bar")),
    )
    .unwrap();
    let before = t.snapshot();
    let out = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(out.code, Some(2), "{}", out.transcript());
    assert!(
        out.stderr
            .starts_with("error: a git merge is in progress in "),
        "{}",
        out.stderr
    );
    assert!(out.stderr.ends_with("hint: finish it with `git merge --continue` or drop it with `git merge --abort` first\n"), "{}", out.stderr);
    assert_eq!(t.snapshot(), before);
    std::fs::remove_file(t.path().join(".git/MERGE_HEAD")).unwrap();
    // Outside a repository.
    let empty = tempfile::tempdir().unwrap();
    let out = bport::run(empty.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(out.code, Some(4), "{}", out.transcript());
    assert!(
        out.stderr
            .contains("hint: run bport inside a git repository"),
        "{}",
        out.stderr
    );
    // Resume without a run.
    let out = bport::run(t.path(), &["apply", "--continue"]);
    assert_eq!(out.transcript(), "------- stderr -------\nerror: no bport apply is in progress\nhint: start one with: bport apply <patchlist>\n[exit status: 2]\n");
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
            "1/4 {} bar: add notes: pick\n2/4 {} bar description: pick, conflict predicted in README\n3/4 {} more bar description: pick\n4/4 {} bar: more notes: pick\n",
            s("bar~1"),
            s("bar~3"),
            s("bar~2"),
            s("bar")
        )
    );
    assert_eq!(t.snapshot(), before);
    assert!(!t.path().join(".git/bport").join("state.json").exists());
}

/// `-X theirs` / `-X ours` resolve conflicting hunks as `git cherry-pick -X …` does (same commits).
#[test]
fn strategy_option_favours_a_side_like_git() {
    if !has_git() {
        return;
    }
    for side in ["theirs", "ours"] {
        let t = repo::foo_bar();
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
    if !has_git() {
        return;
    }
    for style in ["diff3", "zdiff3"] {
        let t = repo::foo_bar();
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
    if !has_git() {
        return;
    }
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

/// At a stop, bport names upstream commits that touched the conflicted file but are neither earlier in the list
/// nor on the branch: the likely missing dependency.
#[test]
fn stop_names_likely_missing_dependencies() {
    let t = repo::foo_bar();
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
            "Likely missing dependencies (changed these files before this patch, not in the list before it, not on the branch):\n  {} README: reword a heading\n  {} more bar description\n  {} bar description\n",
            short(&t, "bar~1"),
            short(&t, "bar~2"),
            short(&t, "bar~3"),
        )),
        "{}",
        out.stderr
    );
}

/// The read-only matcher API for `verify`'s branch check: presence of each entry and the deciding rule, also for
/// entries whose commits the repository lacks (trailer by abbreviation, or subject).
#[test]
fn presence_reports_each_entry_and_its_rule() {
    use ::bport::backport::matcher::{presence, Verdict};
    use ::bport::backport::{PatchList, Rule, Rules};
    let t = four_fixes();
    let u1 = t.oid("upstream~3");
    let p1 = t.read("p1").replace("p1 line 3\n", "p1 line 3 fixed\n");
    let by_trailer = t.commit(
        &format!("vendor: port\n\ncommit {u1} upstream.\n"),
        &[("p1", Some(&p1))],
    );
    let p2 = t.read("p2").replace("p2 line 3\n", "p2 line 3 fixed\n");
    let by_patch_id = t.commit("vendor: renamed", &[("p2", Some(&p2))]);
    let by_subject = t.commit("UPSTREAM: perf: fix 3", &[("p3", Some("x\n"))]);
    let gone = t.commit("vendor: port of a commit this repo lacks\n\n[ Upstream commit 0123456789abcdef0123456789abcdef01234567 ]\n", &[("p4", Some("y\n"))]);
    let text = format!(
        "{}0123456789ab perf: not in this repository\nfedcba987654 perf: missing everywhere\n",
        t.list("master..upstream")
    );
    let list = PatchList::parse(&text).unwrap();
    let report = presence(&t.repo, "vendor", &list, Rules::default(), Some("master")).unwrap();
    let verdicts: Vec<Verdict> = report.iter().map(|p| p.verdict).collect();
    let applied = |rule, by| Verdict::Applied(::bport::backport::AppliedBecause { rule, by });
    assert_eq!(
        verdicts,
        vec![
            applied(Rule::Trailer, by_trailer),
            applied(Rule::PatchId, by_patch_id),
            applied(Rule::Subject, by_subject),
            Verdict::Missing {
                ambiguous_subject: false
            },
            applied(Rule::Trailer, gone),
            Verdict::Missing {
                ambiguous_subject: false
            },
        ]
    );
    assert_eq!(report[4].oid, None);
    assert_eq!(report[0].oid, Some(u1));
}

/// `-m 1` picks a merge's changes against its first parent, as `git cherry-pick -m 1` does.
#[test]
fn merge_commit_with_mainline_matches_git() {
    if !has_git() {
        return;
    }
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

/// Modify/delete, delete/modify and add/add conflicts leave index stages, worktree files and `git status` as
/// `git cherry-pick` leaves them.
#[test]
fn every_conflict_kind_is_left_as_git_leaves_it() {
    if !has_git() {
        return;
    }
    let t = TestRepo::new();
    t.commit(
        "base",
        &[
            ("gone-upstream", Some("1\n2\n")),
            ("gone-here", Some("a\nb\n")),
        ],
    );
    t.branch("upstream", "master");
    t.branch("vendor", "master");
    t.checkout("upstream");
    t.commit(
        "upstream: three conflicting changes",
        &[
            ("gone-upstream", None),
            ("gone-here", Some("a\nb upstream\n")),
            ("both-added", Some("upstream\n")),
        ],
    );
    t.checkout("vendor");
    t.commit(
        "vendor: the other sides",
        &[
            ("gone-upstream", Some("1\n2 vendor\n")),
            ("gone-here", None),
            ("both-added", Some("vendor\n")),
        ],
    );
    let g = t.copy();
    let out = oracle::git(g.path())
        .args(["cherry-pick", "upstream"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let (_d, list) = list_file(&t.list("master..upstream"));
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
    assert_eq!(cont.stderr, "Done: picked 0, skipped 1 (empty: 1).\n");
}

/// The user may commit the resolution with git instead of `--continue`ing: bport takes that commit as the pick.
#[test]
fn continue_accepts_a_resolution_committed_with_git() {
    if !has_git() {
        return;
    }
    let t = repo::foo_bar();
    let (_d, list) = list_file(&t.list("master..bar"));
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

/// --abort also removes files that only the stopped pick added (staged, never committed), and --skip does too.
#[test]
fn abort_and_skip_remove_files_only_the_stopped_pick_added() {
    for how in ["--abort", "--skip"] {
        let t = four_fixes();
        t.checkout("upstream");
        let p1 = t
            .read("p1")
            .replace("p1 line 3 fixed\n", "p1 line 3 fixed again\n");
        t.commit(
            "perf: fix 5",
            &[("p1", Some(&p1)), ("added/new.c", Some("new\n"))],
        );
        t.checkout("vendor");
        let p1 = t.read("p1").replace("p1 line 3\n", "p1 line 3 vendor\n");
        t.commit("vendor: p1", &[("p1", Some(&p1))]);
        let before = t.snapshot();
        let (_d, list) = list_file(&t.list("upstream~1..upstream"));
        let stop = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
        assert_eq!(stop.code, Some(1), "{}", stop.transcript());
        assert_eq!(t.read("added/new.c"), "new\n");
        let out = bport::run(t.path(), &["apply", how]);
        assert_eq!(out.code, Some(0), "{}", out.transcript());
        assert_eq!(t.snapshot(), before, "{how}");
    }
}

/// A detached HEAD works like a branch: picks move HEAD, --abort puts it back, and no branch is touched.
#[test]
fn detached_head_is_picked_onto_and_restored() {
    let t = repo::foo_bar();
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

/// `bport status` after a killed run says so and how to go on.
#[test]
fn status_after_a_killed_run() {
    let t = repo::upstream_and_vendor();
    let (_d, list) = list_file(&t.list("master..upstream"));
    let out = bport::bport(t.path())
        .args(["apply", list.to_str().unwrap()])
        .env("BPORT_TEST_CRASH_AFTER_PICKS", "3")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), None);
    let status = bport::run(t.path(), &["status"]);
    assert_eq!(status.code, Some(0), "{}", status.transcript());
    let first = status.stdout.lines().next().unwrap();
    assert_eq!(
        first,
        "Interrupted at 1/7; run `bport apply --continue` or `bport apply --abort`"
    );
    assert_eq!(
        status
            .stdout
            .lines()
            .filter(|l| l.ends_with(": pending"))
            .count(),
        7
    );
}
