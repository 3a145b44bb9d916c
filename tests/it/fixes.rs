//! `bport fixes`: follow-up fixes and reverts of what a branch carries, on histories built here; `git log
//! --oneline` is the oracle for the list lines, `bport apply` the consumer of the list.

use crate::support::bport;
use crate::support::oracle;
use crate::support::repo::TestRepo;
use crate::support::scenario::list_file;
use git2::Oid;

fn ten(tag: &str) -> String {
    (1..=10).map(|i| format!("{tag} line {i}\n")).collect()
}

/// `file` with line `n` of its ten replaced by `text`.
fn edit(t: &TestRepo, file: &str, n: usize, text: &str) -> String {
    t.read(file)
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i + 1 == n {
                format!("{text}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect()
}

/// The commits of the scenario, by role.
struct Fixture {
    t: TestRepo,
    x1: Oid,
    u1: Oid,
    u2: Oid,
    f1: Oid,
    f2: Oid,
    f3: Oid,
    f4: Oid,
    f5: Oid,
    r1: Oid,
    r2: Oid,
    f6: Oid,
    f8: Oid,
    s1: Oid,
    s2: Oid,
}

/// master: base, X1 "a: add feature". `upstream` goes on from there with two features U1 and U2 and their
/// follow-ups; `stable` (HEAD) branched at X1 and carries U1 (under another id, named by a `commit X upstream.`
/// trailer) and F5 (another id, no trailer: same patch-id).
///
/// | upstream commit | says | expected |
/// | --- | --- | --- |
/// | F1 | `Fixes: <X1, 12 digits> ("a: add feature")` | follow-up: X1 is in the branch's history |
/// | F2 | `Fixes: <U1, 7 digits>`, no subject | follow-up: U1 is on the branch as S1 (trailer) |
/// | F3 | `Fixes: <U2, 12>` | nothing: the branch lacks U2 |
/// | F4 | `Fixes: <F1, 40>` | follow-up of a follow-up |
/// | F5 | `Fixes: <X1>` | already on the branch as S2 (patch-id) |
/// | R1 | reverts F4 | follow-up |
/// | R2 | reverts R1 | follow-up (a revert chain) |
/// | F6 | `Fixes: 0badc0ffee00 ("b: add thing")`, an id this repository lacks | follow-up by subject (U1) |
/// | F7 | `Fixes: 0123456789ab ("d: not in this repository")` | nothing, counted as unresolved |
/// | F8 | `Fixes: 0badbadbad00 ("a: add feature")` | follow-up by subject, in the branch's history |
fn fixture() -> Fixture {
    let t = TestRepo::new();
    t.commit(
        "base",
        &[
            ("a.txt", Some(&ten("a"))),
            ("b.txt", Some(&ten("b"))),
            ("c.txt", Some(&ten("c"))),
            ("d.txt", Some(&ten("d"))),
            ("e.txt", Some(&ten("e"))),
        ],
    );
    let x1 = t.commit(
        "a: add feature",
        &[("a.txt", Some(&edit(&t, "a.txt", 1, "feature")))],
    );
    t.branch("upstream", "master");
    t.branch("stable", "master");
    t.checkout("upstream");
    let u1 = t.commit(
        "b: add thing",
        &[("b.txt", Some(&edit(&t, "b.txt", 1, "thing")))],
    );
    let u2 = t.commit(
        "c: add other",
        &[("c.txt", Some(&edit(&t, "c.txt", 1, "other")))],
    );
    let hex = |o: Oid, n: usize| o.to_string()[..n].to_owned();
    let f1 = t.commit(
        &format!(
            "a: fix feature\n\nBody.\n\nFixes: {} (\"a: add feature\")\nSigned-off-by: A <a@b>\n",
            hex(x1, 12)
        ),
        &[("a.txt", Some(&edit(&t, "a.txt", 2, "fix 1")))],
    );
    let f2 = t.commit(
        &format!("b: fix thing\n\nFixes: {}\n", hex(u1, 7)),
        &[("b.txt", Some(&edit(&t, "b.txt", 2, "fix 2")))],
    );
    let f3 = t.commit(
        &format!(
            "c: fix other\n\nFixes: {} (\"c: add other\")\n",
            hex(u2, 12)
        ),
        &[("c.txt", Some(&edit(&t, "c.txt", 2, "fix 3")))],
    );
    let f4 = t.commit(
        &format!("a: fix the fix\n\nFixes: {f1} (\"a: fix feature\")\n"),
        &[("a.txt", Some(&edit(&t, "a.txt", 3, "fix 4")))],
    );
    let e5 = edit(&t, "e.txt", 5, "fix 5");
    let f5 = t.commit(
        &format!(
            "e: another fix\n\nFixes: {} (\"a: add feature\")\n",
            hex(x1, 12)
        ),
        &[("e.txt", Some(&e5))],
    );
    let r1 = t.commit(
        &format!("Revert \"a: fix the fix\"\n\nThis reverts commit {f4}.\n"),
        &[("a.txt", Some(&edit(&t, "a.txt", 3, "a line 3")))],
    );
    let r2 = t.commit(
        &format!("Revert \"Revert \"a: fix the fix\"\"\n\nThis reverts commit {r1}.\n"),
        &[("a.txt", Some(&edit(&t, "a.txt", 3, "fix 4")))],
    );
    let f6 = t.commit(
        "b: fix by subject\n\nFixes: 0badc0ffee00 (\"b: add thing\")\n",
        &[("b.txt", Some(&edit(&t, "b.txt", 4, "fix 6")))],
    );
    t.commit(
        "d: fix something we lack\n\nFixes: 0123456789ab (\"d: not in this repository\")\n",
        &[("d.txt", Some(&edit(&t, "d.txt", 1, "fix 7")))],
    );
    let f8 = t.commit(
        "a: fix by an old subject\n\nFixes: 0badbadbad00 (\"a: add feature\")\n",
        &[("a.txt", Some(&edit(&t, "a.txt", 6, "fix 8")))],
    );
    t.checkout("stable");
    let s1 = t.commit(
        &format!("b: add the thing (stable flavour)\n\ncommit {u1} upstream.\n"),
        &[("b.txt", Some(&edit(&t, "b.txt", 1, "thing")))],
    );
    let s2 = t.commit("e: fixed on stable", &[("e.txt", Some(&e5))]);
    Fixture {
        t,
        x1,
        u1,
        u2,
        f1,
        f2,
        f3,
        f4,
        f5,
        r1,
        r2,
        f6,
        f8,
        s1,
        s2,
    }
}

/// `git log --no-walk --oneline` of one commit: the oracle for list lines and the abbreviation.
fn oneline(t: &TestRepo, oid: Oid) -> String {
    oracle::git_ok(
        t.path(),
        &["log", "--no-walk", "--oneline", &oid.to_string()],
    )
}

fn abbrev(t: &TestRepo, oid: Oid) -> String {
    oracle::git_ok(
        t.path(),
        &["log", "--no-walk", "--format=%h", &oid.to_string()],
    )
    .trim()
    .to_owned()
}

/// Every case of the table above, as the text list, with git's own abbreviations and `--oneline` lines.
#[test]
fn fixes_lists_follow_ups_with_their_reasons_in_upstream_order() {
    skip_unless!(oracle::has_git());
    let f = fixture();
    let t = &f.t;
    let out = bport::run(t.path(), &["fixes", "--upstream", "upstream"]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    let s = |o| abbrev(t, o);
    let want = [
        format!("# fixes {} \"a: add feature\" (on the branch)\n", s(f.x1)),
        oneline(t, f.f1),
        format!(
            "# fixes {} \"b: add thing\" (on the branch as {}, upstream trailer)\n",
            s(f.u1),
            s(f.s1)
        ),
        oneline(t, f.f2),
        format!("# fixes {} \"a: fix feature\" (a follow-up above)\n", s(f.f1)),
        oneline(t, f.f4),
        format!("# reverts {} \"a: fix the fix\" (a follow-up above)\n", s(f.f4)),
        oneline(t, f.r1),
        format!(
            "# reverts {} \"Revert \"a: fix the fix\"\" (a follow-up above)\n",
            s(f.r1)
        ),
        oneline(t, f.r2),
        format!(
            "# fixes {} \"b: add thing\" (on the branch as {}, upstream trailer; matched by subject, not by \
             0badc0ffee00)\n",
            s(f.u1),
            s(f.s1)
        ),
        oneline(t, f.f6),
        format!(
            "# fixes {} \"a: add feature\" (on the branch; matched by subject, not by 0badbadbad00)\n",
            s(f.x1)
        ),
        oneline(t, f.f8),
    ]
    .concat();
    assert_eq!(out.stdout, want, "{}", out.transcript());
    assert_eq!(
        out.stderr,
        "7 follow-ups in upstream (12 commits scanned; 1 more already on the branch under another id; 1 \
         Fixes:/revert line names a commit this repository lacks).\n"
    );
    // F3 fixes U2, which the branch lacks; F5 is on the branch as S2.
    for absent in [f.u2, f.f3, f.f5] {
        assert!(!out.stdout.contains(&s(absent)), "{}", out.stdout);
    }
}

/// With a patch list: its commits count as carried (F3 fixes the listed U2) and are never listed themselves; the
/// upstream defaults to the branches that contain the list's last commit.
#[test]
fn fixes_of_a_patch_list_about_to_be_applied() {
    skip_unless!(oracle::has_git());
    let f = fixture();
    let t = &f.t;
    let (_dir, path) = list_file(&oneline(t, f.u2));
    let out = bport::run(t.path(), &["fixes", path.to_str().unwrap()]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    let want_f3 = format!(
        "# fixes {} \"c: add other\" (in the list, line 1)\n{}",
        abbrev(t, f.u2),
        oneline(t, f.f3)
    );
    assert!(out.stdout.contains(&want_f3), "{}", out.stdout);
    assert!(
        !out.stdout.contains(&oneline(t, f.u2)),
        "the listed commit itself is not a follow-up:\n{}",
        out.stdout
    );
    assert!(
        out.stderr.starts_with("8 follow-ups in upstream ("),
        "{}",
        out.stderr
    );
    // Without a list or --upstream there is nothing to search: a usage error naming the option.
    let out = bport::run(t.path(), &["fixes"]);
    assert_eq!(out.code, Some(2), "{}", out.transcript());
    assert!(out.stderr.contains("--upstream"), "{}", out.stderr);
}

/// `--format json`: versioned, each follow-up with its reasons, and the fixes already carried under another id.
#[test]
fn fixes_json_document() {
    let f = fixture();
    let t = &f.t;
    let out = bport::run(
        t.path(),
        &["fixes", "--upstream", "upstream", "--format", "json"],
    );
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["schema"], 1);
    assert_eq!(v["scanned"], 12);
    assert_eq!(v["unresolved"], 1);
    let commits: Vec<String> = v["follow_ups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["commit"].as_str().unwrap().to_owned())
        .collect();
    let want: Vec<String> = [f.f1, f.f2, f.f4, f.r1, f.r2, f.f6, f.f8]
        .iter()
        .map(Oid::to_string)
        .collect();
    assert_eq!(commits, want);
    let f2 = &v["follow_ups"][1]["reasons"][0];
    assert_eq!(f2["kind"], "fixes");
    assert_eq!(f2["named_as"], f.u1.to_string()[..7]);
    assert_eq!(f2["target"], f.u1.to_string());
    assert_eq!(f2["target_is"], "ported");
    assert_eq!(f2["rule"], "trailer");
    assert_eq!(f2["by"], f.s1.to_string());
    let f6 = &v["follow_ups"][5]["reasons"][0];
    assert_eq!(f6["by_subject"], true);
    assert_eq!(f6["named_as"], "0badc0ffee00");
    let already = v["already_on_branch"].as_array().unwrap();
    assert_eq!(already.len(), 1);
    assert_eq!(already[0]["commit"], f.f5.to_string());
    assert_eq!(already[0]["rule"], "patch-id");
    assert_eq!(already[0]["by"], f.s2.to_string());
}

/// The text output is a patch list `bport apply` takes as it is (reason lines are comments): every follow-up is
/// picked, the revert chain included, and then nothing is left to follow up.
#[test]
fn fixes_output_applies_and_then_nothing_is_left() {
    let f = fixture();
    let t = &f.t;
    let out = bport::run(t.path(), &["fixes", "--upstream", "upstream"]);
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    let (_dir, path) = list_file(&out.stdout);
    let applied = bport::run(t.path(), &["apply", "-x", path.to_str().unwrap()]);
    assert_eq!(applied.code, Some(0), "{}", applied.transcript());
    let subjects = t.subjects_since(&f.s2.to_string());
    assert_eq!(
        subjects,
        [
            "a: fix feature",
            "b: fix thing",
            "a: fix the fix",
            "Revert \"a: fix the fix\"",
            "Revert \"Revert \"a: fix the fix\"\"",
            "b: fix by subject",
            "a: fix by an old subject",
        ]
    );
    let again = bport::run(t.path(), &["fixes", "--upstream", "upstream"]);
    assert_eq!(again.code, Some(0), "{}", again.transcript());
    assert_eq!(again.stdout, "", "{}", again.transcript());
    assert!(
        again.stderr.starts_with(
            "0 follow-ups in upstream (12 commits scanned; 8 more already on the branch"
        ),
        "{}",
        again.stderr
    );
}

/// `bport apply --dry-run` names the follow-ups of the listed commits (also of U1, which the branch already has,
/// and by subject), not those of the branch's own history (F1); `--with-fixes` puts them in the plan at their
/// upstream place (between U2 and F7) and picks them.
#[test]
fn apply_dry_run_names_follow_ups_and_with_fixes_picks_them_in_upstream_order() {
    skip_unless!(oracle::has_git());
    let f = fixture();
    let t = &f.t;
    let f7 = t.oid("upstream~1");
    let list_text = [oneline(t, f.u1), oneline(t, f.u2), oneline(t, f7)].concat();
    let (_dir, path) = list_file(&list_text);
    let list = path.to_str().unwrap();

    let dry = bport::run(t.path(), &["apply", "--dry-run", list]);
    assert_eq!(dry.code, Some(0), "{}", dry.transcript());
    let s = |o| abbrev(t, o);
    let section = [
        "Follow-ups of the listed commits in upstream, not in the list (--with-fixes adds them):\n".to_owned(),
        format!("# fixes {} \"b: add thing\" (in the list, line 1)\n", s(f.u1)),
        oneline(t, f.f2),
        format!("# fixes {} \"c: add other\" (in the list, line 2)\n", s(f.u2)),
        oneline(t, f.f3),
        format!(
            "# fixes {} \"b: add thing\" (in the list, line 1; matched by subject, not by 0badc0ffee00)\n",
            s(f.u1)
        ),
        oneline(t, f.f6),
    ]
    .concat();
    assert!(
        dry.stdout.ends_with(&section),
        "{}\nwanted at the end:\n{section}",
        dry.stdout
    );
    let json = bport::run(t.path(), &["apply", "--dry-run", "--format", "json", list]);
    assert_eq!(json.code, Some(0), "{}", json.transcript());
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let named: Vec<&str> = v["follow_ups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["commit"].as_str().unwrap())
        .collect();
    assert_eq!(
        named,
        [f.f2.to_string(), f.f3.to_string(), f.f6.to_string()]
    );

    let plan = bport::run(t.path(), &["apply", "--dry-run", "--with-fixes", list]);
    assert_eq!(plan.code, Some(0), "{}", plan.transcript());
    // Six steps and the summary line.
    assert_eq!(plan.stdout.lines().count(), 7, "{}", plan.stdout);
    let order: Vec<String> = plan
        .stdout
        .lines()
        .take(6)
        .map(|l| l.split_whitespace().nth(1).unwrap().to_owned())
        .collect();
    assert_eq!(
        order,
        [f.u1, f.u2, f.f2, f.f3, f.f6, f7]
            .iter()
            .map(|o| o.to_string()[..7].to_owned())
            .collect::<Vec<_>>(),
        "{}",
        plan.stdout
    );
    assert!(
        plan.stderr
            .starts_with("--with-fixes: 3 follow-ups from upstream added to the plan:\n"),
        "{}",
        plan.stderr
    );

    let run = bport::run(t.path(), &["apply", "--with-fixes", list]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    assert_eq!(
        t.subjects_since(&f.s2.to_string()),
        [
            "c: add other",
            "b: fix thing",
            "c: fix other",
            "b: fix by subject",
            "d: fix something we lack"
        ]
    );
}

/// A short id (under 12 digits) that names a commit with another subject than the line's is taken for a collision
/// with the intended commit's abbreviation, and the subject decides; at 12 digits or more the id decides.
#[test]
fn short_ids_naming_another_subject_yield_to_the_subject() {
    let t = TestRepo::new();
    t.commit(
        "base",
        &[("b.txt", Some(&ten("b"))), ("c.txt", Some(&ten("c")))],
    );
    t.branch("upstream", "master");
    t.branch("stable", "master");
    t.checkout("upstream");
    let u1 = t.commit(
        "b: add thing",
        &[("b.txt", Some(&edit(&t, "b.txt", 1, "thing")))],
    );
    let y = t.commit(
        "c: unrelated",
        &[("c.txt", Some(&edit(&t, "c.txt", 1, "other")))],
    );
    let short = t.commit(
        &format!(
            "b: fix with a short id\n\nFixes: {} (\"b: add thing\")\n",
            &y.to_string()[..7]
        ),
        &[("b.txt", Some(&edit(&t, "b.txt", 2, "fix")))],
    );
    let long = t.commit(
        &format!(
            "b: fix with a long id\n\nFixes: {} (\"b: add thing\")\n",
            &y.to_string()[..12]
        ),
        &[("b.txt", Some(&edit(&t, "b.txt", 3, "fix")))],
    );
    t.checkout("stable");
    t.commit(
        &format!("b: add thing\n\n(cherry picked from commit {u1})\n"),
        &[("b.txt", Some(&edit(&t, "b.txt", 1, "thing")))],
    );
    let out = bport::run(
        t.path(),
        &["fixes", "--upstream", "upstream", "--format", "json"],
    );
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let follow = v["follow_ups"].as_array().unwrap();
    assert_eq!(follow.len(), 1, "{}", out.stdout);
    assert_eq!(follow[0]["commit"], short.to_string());
    assert_eq!(follow[0]["reasons"][0]["target"], u1.to_string());
    assert_eq!(follow[0]["reasons"][0]["by_subject"], true);
    // The 12-digit id names the unrelated commit, which the branch lacks: not a follow-up.
    assert_eq!(v["upstream"][0]["commit"], long.to_string());
    assert!(follow.iter().all(|f| f["commit"] != long.to_string()));
}
