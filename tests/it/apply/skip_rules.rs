//! Already-applied detection: one test per rule, patch-id against git, and the read-only API for verify.

use super::*;
use crate::support::repo;

/// A trailer naming the listed commit skips it, even with another subject and another diff
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

/// Equal subject after normalizing (stacked prefixes) skips a port whose diff was edited.
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
                "skipped (already applied: subject + same files, 50% of lines, {})",
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

/// Equal stable patch-id skips a port whose subject changed.
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
    skip_unless!(has_git());
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
        let theirs = git_patch_id(&t, oid);
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

/// `git show C | git patch-id --stable`: C's stable patch-id, `None` for an empty diff.
fn git_patch_id(t: &TestRepo, oid: git2::Oid) -> Option<String> {
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
    text.split_whitespace().next().map(str::to_owned)
}

/// Patch-ids are kept in `.git/bport/patch-ids` for the next run: the kept ids are git's, a later run decides
/// the same from them, and a damaged file is not believed (the ids are computed again and the file rewritten).
#[test]
fn patch_ids_are_kept_as_gits_for_the_next_run() {
    skip_unless!(has_git());
    let t = four_fixes();
    // The branch's p2 differs from upstream's elsewhere first, so its copy of the fix has other blobs: only
    // patch-ids can tell.
    let moved = t
        .read("p2")
        .replace("p2 line 10\n", "p2 line 10 (vendor)\n");
    t.commit("vendor: mark p2", &[("p2", Some(&moved))]);
    let p2 = moved.replace("p2 line 3\n", "p2 line 3 fixed\n");
    let vendor = t.commit(
        "vendor: the same fix under another name",
        &[("p2", Some(&p2))],
    );
    let (_d, list) = list_file(&t.list("master..upstream"));
    let dry_run = || {
        let out = bport::run(
            t.path(),
            &["apply", "--dry-run", "--yes", list.to_str().unwrap()],
        );
        assert_eq!(out.code, Some(0), "{}", out.transcript());
        out.transcript()
    };
    let first = dry_run();
    assert!(first.contains("patch-id"), "{first}");
    let path = t.path().join(".git/bport/patch-ids");
    let kept = std::fs::read(&path).unwrap();
    let magic = b"bport patch-ids 1\n";
    assert!(kept.starts_with(magic));
    let records: std::collections::HashMap<git2::Oid, Option<String>> = kept[magic.len()..]
        .chunks(41)
        .map(|r| {
            let id = (r[20] == 1).then(|| git2::Oid::from_bytes(&r[21..]).unwrap().to_string());
            (git2::Oid::from_bytes(&r[..20]).unwrap(), id)
        })
        .collect();
    let listed = t.oid("upstream~2");
    for oid in [vendor, listed] {
        assert_eq!(records.get(&oid), Some(&git_patch_id(&t, oid)), "{oid}");
    }
    assert_eq!(dry_run(), first);
    std::fs::write(&path, &kept[..kept.len() - 5]).unwrap();
    assert_eq!(dry_run(), first);
    assert_eq!(std::fs::read(&path).unwrap(), kept);
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
    use ::bport::backport::matcher::Confirmation;
    let applied = |rule, by| {
        Verdict::Applied(::bport::backport::AppliedBecause {
            rule,
            by,
            // The subject match changes the same file as upstream's commit and removes its one removed line
            // (half of its two changed lines), and says so.
            confirmed: (rule == Rule::Subject).then_some(Confirmation::SameFiles { lines: 50 }),
        })
    };
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
