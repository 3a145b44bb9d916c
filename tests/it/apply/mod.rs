//! `bport list`, `bport apply` (with --continue/--skip/--abort) and `bport status`, with the real git as oracle.
//! The skip-rule series and the list of four with a conflict in the middle live
//! here; the conflict scenarios shared with rerere/ in support/scenario.rs. The tests are grouped by concern.

mod attributes;
mod committer_date;
mod dir_renames;
mod dirty;
mod fast_path;
mod git_config;
mod git_equal;
mod merges;
mod messages;
mod prompt;
mod real_histories;
mod recovery;
mod renames;
mod resume_index;
mod safety;
mod skip_rules;
mod sparse;
mod stop_messages;
mod workflow;

use crate::support::bport;
use crate::support::oracle;
pub(crate) use crate::support::oracle::has_git;
use crate::support::repo::TestRepo;
pub(crate) use crate::support::scenario::{self, list_file, short, Conflict};
use std::path::PathBuf;

/// The upstream series for the skip-rule tests: four fixes on branch `upstream`, each in its own file, and an
/// empty vendor branch `vendor` (HEAD) from master.
pub(crate) fn four_fixes() -> TestRepo {
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
pub(crate) fn apply_all(t: &TestRepo, extra: &[&str]) -> String {
    let (_d, list) = list_file(&t.list("master..upstream"));
    let mut args = vec!["apply"];
    args.extend(extra);
    args.push(list.to_str().unwrap());
    let out = bport::run(t.path(), &args);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    out.stderr
}

pub(crate) fn step_line(t: &TestRepo, n: usize, what: &str) -> String {
    format!(
        "{n}/4 {} perf: fix {n}: {what}\n",
        short(t, &format!("upstream~{}", 4 - n))
    )
}

/// foo/bar plus two clean upstream commits after the conflicting one: a list of four where step 2 conflicts.
pub(crate) fn conflict_in_the_middle() -> (TestRepo, tempfile::TempDir, PathBuf) {
    let t = scenario::foo_bar().repo();
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

/// What one pick left in each tool, compared by [`pick_both`].
pub(crate) struct Ends {
    pub(crate) bport: Option<i32>,
    pub(crate) git: Option<i32>,
    pub(crate) transcript: String,
}

/// Picks `upstream` onto `vendor` with bport (`bport_args`) and, on a copy with the same config, with git
/// (`git_args`), and asserts the same index stages, worktree bytes, `git status` (when both exit alike) and, where
/// both commit, the same commit; the exits are returned for the caller to compare.
pub(crate) fn pick_both(t: &TestRepo, bport_args: &[&str], git_args: &[&str]) -> Ends {
    t.checkout("vendor");
    let g = t.copy();
    let mut args = vec!["cherry-pick"];
    args.extend(git_args);
    args.push("upstream");
    let git = oracle::git(g.path()).args(&args).output().unwrap();
    let git_code = git.status.code();
    assert!(
        matches!(git_code, Some(0 | 1)),
        "git cherry-pick: {}",
        String::from_utf8_lossy(&git.stderr)
    );
    let (_d, list) = list_file(&t.list("upstream~1..upstream"));
    let mut args = vec!["apply"];
    args.extend(bport_args);
    args.push(list.to_str().unwrap());
    let out = bport::run(t.path(), &args);
    let transcript = format!(
        "git: {}{}\nbport: {}",
        String::from_utf8_lossy(&git.stdout),
        String::from_utf8_lossy(&git.stderr),
        out.transcript()
    );
    let (ours, theirs) = (t.snapshot(), g.snapshot());
    assert_eq!(ours.index, theirs.index, "index stages\n{transcript}");
    assert_eq!(
        ours.files.keys().collect::<Vec<_>>(),
        theirs.files.keys().collect::<Vec<_>>(),
        "worktree paths\n{transcript}"
    );
    for (path, bytes) in &theirs.files {
        // Debug-quoted, so that line endings show.
        assert_eq!(
            format!("{:?}", String::from_utf8_lossy(&ours.files[path])),
            format!("{:?}", String::from_utf8_lossy(bytes)),
            "worktree file {path}"
        );
    }
    // A pick one tool commits and the other stops on shows as staged in one `git status` only.
    if git_code == out.code {
        assert_eq!(
            oracle::git_ok(t.path(), &["status", "--porcelain"]),
            oracle::git_ok(g.path(), &["status", "--porcelain"]),
            "git status\n{transcript}"
        );
    }
    if git_code == Some(0) && out.code == Some(0) {
        assert_eq!(ours.head.1, theirs.head.1, "the commit git makes");
    }
    Ends {
        bport: out.code,
        git: git_code,
        transcript,
    }
}

/// [`pick_both`], asserting the same exit as git's; returns whether the pick stopped.
pub(crate) fn same_as_git(t: &TestRepo, bport_args: &[&str], git_args: &[&str]) -> bool {
    let ends = pick_both(t, bport_args, git_args);
    assert_eq!(ends.bport, ends.git, "{}", ends.transcript);
    ends.git == Some(1)
}
