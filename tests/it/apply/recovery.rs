//! --abort exactness, killed runs recovered by --continue and --abort, bad inputs that touch nothing.

use super::*;
use crate::support::repo;

/// --abort restores branch, HEAD, index and worktree exactly, also the files a stopped pick added.
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
    // On another branch, resuming would move the wrong ref: refused, nothing touched.
    let stopped = t.snapshot();
    t.repo.set_head("refs/heads/master").unwrap();
    let elsewhere = bport::run(t.path(), &["apply", "--abort"]);
    assert_eq!(
        elsewhere.transcript(),
        "------- stderr -------\nerror: the bport apply in progress is on refs/heads/foo, but HEAD is elsewhere\n\
         hint: check that branch out again (git switch <branch>), then resume\n[exit status: 2]\n"
    );
    t.repo.set_head("refs/heads/foo").unwrap();
    assert_eq!(t.snapshot(), stopped);
    let abort = bport::run(t.path(), &["apply", "--abort"]);
    assert_eq!(abort.code, Some(0), "{}", abort.transcript());
    assert_eq!(t.snapshot(), before);
    assert!(!t.path().join(".git/bport/state.json").exists());
    let none = bport::run(t.path(), &["status"]);
    assert_eq!(none.stdout, "No bport apply in progress.\n");
}

/// A run killed at any point (after N picks, after the pack, after the state, after the worktree)
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

/// A kill while bport writes a stop recovers too: --continue redoes the stop.
#[test]
fn killed_stop_and_killed_continue_recover() {
    skip_unless!(has_git());
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

/// Each bad input names its problem (and the line) and leaves the repository untouched.
#[test]
fn bad_inputs_are_refused_and_touch_nothing() {
    let t = scenario::foo_bar().repo();
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
        (format!("{} Merge side\n", &merge.to_string()[..7]), format!("patch list line 1: {} is a merge commit with 2 parents; pick it against parent N with -m N (--mainline N, as git cherry-pick -m N), or list the range without merges: bport list --no-merges", &merge.to_string()[..7])),
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
    // A staged change: git's cherry-pick refuses it whatever the picks touch (a worktree-only change is checked
    // against each pick's paths, in dirty.rs).
    std::fs::write(t.path().join("README"), "dirty\n").unwrap();
    oracle::git_ok(t.path(), &["add", "README"]);
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
