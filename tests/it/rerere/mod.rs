//! rerere against real git 2.47: ids equal to the rr-cache directories git creates, resolutions reused in both
//! directions, sharing through `rerere-cache/`, training, and bad cache entries.

mod apply;
pub(crate) mod render;

use crate::support::scenario::Conflict;
use crate::support::{bport, oracle};
use ::bport::rerere::conflict_id::normalize;
use ::bport::rerere::render::{render, RenderOptions};
use ::bport::rerere::xdiff::merge::Style;
use render::{code_triple, triple};
use std::collections::BTreeSet;
use std::path::Path;

fn git(dir: &Path, args: &[&str]) -> String {
    oracle::git_ok(dir, args)
}

/// Runs git and returns (success, stdout + stderr).
fn git_try(dir: &Path, args: &[&str]) -> (bool, String) {
    let out = oracle::git(dir).args(args).output().expect("spawn git");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// A repo with README committed on `main`, a `topic` commit changing it one way and a `main` commit the other,
/// built in-process on a fixed clock (the git binary is only the oracle here); `main` checked out.
fn conflict_repo(dir: &Path, base: &[u8], ours: &[u8], theirs: &[u8]) {
    let text = |b: &[u8]| String::from_utf8(b.to_vec()).expect("the README sides are text");
    Conflict::new("base\n", &[("README", Some(&text(base)))])
        .branches("main", "main", "topic")
        .ours("ours\n", &[("README", Some(&text(ours)))])
        .theirs("bar description\n", &[("README", Some(&text(theirs)))])
        .repo_at(dir);
}

fn rr_dirs(dir: &Path) -> BTreeSet<String> {
    match std::fs::read_dir(dir.join(".git/rr-cache")) {
        Ok(r) => r
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => BTreeSet::new(),
    }
}

const BASE: &[u8] = b"title\nfoo description\nend\n";
const OURS: &[u8] = b"title\nfoo description, ours\nend\n";
const THEIRS: &[u8] = b"title\nbar description\nend\n";
const RESOLVED: &[u8] = b"title\nbar description, ours\nend\n";

#[test]
fn a_resolution_recorded_by_git_is_replayed_by_bport() {
    skip_unless!(oracle::has_git());
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    conflict_repo(dir, BASE, OURS, THEIRS);
    let (ok, out) = git_try(dir, &["-c", "rerere.enabled=true", "cherry-pick", "topic"]);
    assert!(!ok, "{out}");
    assert!(out.contains("Recorded preimage for 'README'"), "{out}");
    std::fs::write(dir.join("README"), RESOLVED).unwrap();
    git(dir, &["add", "README"]);
    let (ok, out) = git_try(
        dir,
        &[
            "-c",
            "rerere.enabled=true",
            "-c",
            "core.editor=true",
            "cherry-pick",
            "--continue",
        ],
    );
    assert!(ok, "{out}");
    assert!(out.contains("Recorded resolution for 'README'."), "{out}");
    git(dir, &["reset", "-q", "--hard", "HEAD~1"]);
    // git itself must not replay: bport has to.
    let (ok, out) = git_try(dir, &["-c", "rerere.enabled=false", "cherry-pick", "topic"]);
    assert!(!ok && !out.contains("Resolved"), "{out}");

    let run = bport::run(dir, &["rerere"]);
    assert_eq!(
        run.transcript(),
        "------- stderr -------\nResolved 'README' using previous resolution.\n  \
         from .git/rr-cache/4b2f949698cbbebdcb0c8a39fe763f44d4588f21/postimage (this clone's own cache)\n"
    );
    assert_eq!(std::fs::read(dir.join("README")).unwrap(), RESOLVED);
    // Left for review: still conflicted in the index until the user stages it.
    assert_eq!(bport::run(dir, &["rerere", "remaining"]).stdout, "");
    assert_eq!(
        git(dir, &["diff", "--name-only", "--diff-filter=U"]),
        "README\n"
    );
}

#[test]
fn a_resolution_recorded_by_bport_is_replayed_by_git() {
    skip_unless!(oracle::has_git());
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    conflict_repo(dir, BASE, OURS, THEIRS);
    let (ok, _) = git_try(dir, &["-c", "rerere.enabled=false", "cherry-pick", "topic"]);
    assert!(!ok);
    let run = bport::run(dir, &["rerere"]);
    assert_eq!(
        run.transcript(),
        "------- stderr -------\nRecorded preimage for 'README'\n"
    );
    assert_eq!(bport::run(dir, &["rerere", "status"]).stdout, "README\n");
    assert_eq!(bport::run(dir, &["rerere", "remaining"]).stdout, "README\n");
    std::fs::write(dir.join("README"), RESOLVED).unwrap();
    assert_eq!(
        bport::run(dir, &["rerere", "diff"]).stdout,
        "--- a/README\n+++ b/README\n@@ -1,7 +1,3 @@\n title\n-<<<<<<<\n-bar description\n-=======\n-foo description, ours\n->>>>>>>\n+bar description, ours\n end\n"
    );
    git(dir, &["add", "README"]);
    let run = bport::run(dir, &["rerere"]);
    assert_eq!(
        run.transcript(),
        "------- stderr -------\nRecorded resolution for 'README'.\n"
    );
    assert!(!dir.join(".git/MERGE_RR").exists());
    git(
        dir,
        &[
            "-c",
            "rerere.enabled=false",
            "-c",
            "core.editor=true",
            "cherry-pick",
            "--continue",
        ],
    );
    git(dir, &["reset", "-q", "--hard", "HEAD~1"]);
    let (ok, out) = git_try(dir, &["-c", "rerere.enabled=true", "cherry-pick", "topic"]);
    assert!(!ok, "{out}");
    assert!(
        out.contains("Resolved 'README' using previous resolution."),
        "{out}"
    );
    assert_eq!(std::fs::read(dir.join("README")).unwrap(), RESOLVED);
}

#[test]
fn export_import_and_bad_cache_entries() {
    skip_unless!(oracle::has_git());
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    conflict_repo(dir, BASE, OURS, THEIRS);
    let (ok, _) = git_try(dir, &["-c", "rerere.enabled=true", "cherry-pick", "topic"]);
    assert!(!ok);
    std::fs::write(dir.join("README"), RESOLVED).unwrap();
    git(dir, &["add", "README"]);
    git(
        dir,
        &[
            "-c",
            "rerere.enabled=true",
            "-c",
            "core.editor=true",
            "cherry-pick",
            "--continue",
        ],
    );
    let ids = rr_dirs(dir);
    assert_eq!(ids.len(), 1);
    let id = ids.iter().next().unwrap().clone();

    let run = bport::run(dir, &["rerere", "export"]);
    assert_eq!(
        run.stderr,
        format!(
            "Exported 1 resolutions to {} (0 already there, 0 incomplete skipped).\n",
            dir.join("rerere-cache").display()
        )
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("rerere-cache/.gitattributes")).unwrap(),
        "* -text\n"
    );
    for f in ["preimage", "postimage"] {
        assert_eq!(
            std::fs::read(dir.join("rerere-cache").join(&id).join(f)).unwrap(),
            std::fs::read(dir.join(".git/rr-cache").join(&id).join(f)).unwrap(),
            "{f} differs"
        );
    }
    // Poison the shared cache: bad names, a symlink out of it, an empty file, a directory for a file.
    let shared = dir.join("rerere-cache");
    std::fs::create_dir_all(shared.join("not-an-id")).unwrap();
    std::fs::create_dir_all(tmp.path().join("outside")).unwrap();
    std::os::unix::fs::symlink(
        "../../outside",
        shared.join("1111111111111111111111111111111111111111"),
    )
    .unwrap();
    let empty = shared.join("2222222222222222222222222222222222222222");
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::write(empty.join("preimage"), b"x\n").unwrap();
    std::fs::write(empty.join("postimage"), b"").unwrap();
    std::fs::create_dir_all(shared.join(&id).join("postimage.1")).unwrap();
    std::fs::write(shared.join(&id).join("preimage.1"), b"p\n").unwrap();

    std::fs::remove_dir_all(dir.join(".git/rr-cache")).unwrap();
    let run = bport::run(dir, &["rerere", "import"]);
    let mut lines: Vec<&str> = run.stderr.lines().collect();
    lines.sort();
    let root = shared.display().to_string();
    assert_eq!(
        lines,
        vec![
            format!("Imported 1 resolutions to {} (0 already there, 2 incomplete skipped).", dir.join(".git/rr-cache").display()),
            format!("warning: skipping {root}/1111111111111111111111111111111111111111: not a directory (symlinks are never followed)"),
            format!("warning: skipping {root}/2222222222222222222222222222222222222222/postimage: empty file"),
            format!("warning: skipping {root}/{id}/postimage.1: not a regular file"),
            format!("warning: skipping {root}/not-an-id: name is not a conflict id (40 lowercase hex digits)"),
        ]
    );
    assert!(std::fs::read_dir(tmp.path().join("outside"))
        .unwrap()
        .next()
        .is_none());
    assert_eq!(rr_dirs(dir), ids);
}

/// A commit holding only `f.c` with `content`, at a fixed time.
fn commit_file(repo: &git2::Repository, content: &[u8], parent: Option<git2::Oid>) -> git2::Oid {
    let blob = repo.blob(content).unwrap();
    let mut tb = repo.treebuilder(None).unwrap();
    tb.insert("f.c", blob, 0o100644).unwrap();
    let tree = repo.find_tree(tb.write().unwrap()).unwrap();
    let sig =
        git2::Signature::new("T", "t@example.com", &git2::Time::new(1_700_000_000, 0)).unwrap();
    let parents: Vec<git2::Commit<'_>> = parent
        .into_iter()
        .map(|p| repo.find_commit(p).unwrap())
        .collect();
    let refs: Vec<&git2::Commit<'_>> = parents.iter().collect();
    repo.commit(None, &sig, &sig, "c", &tree, &refs).unwrap()
}

/// The corpus: conflicts made by real `git cherry-pick` with rerere on, compared with the id bport computes
/// (a) from the conflicted file git wrote and (b) from its own rendering of the index stages. (b) is what
/// matters for `bport apply`; libgit2's Myers rendering is measured alongside for reference.
#[test]
fn conflict_ids_match_the_rr_cache_directories_git_creates() {
    skip_unless!(oracle::has_git());
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let repo =
        git2::Repository::init_opts(dir, git2::RepositoryInitOptions::new().initial_head("main"))
            .unwrap();
    let (mut total, mut from_file, mut rendered, mut libgit2) = (0, 0, 0, 0);
    let mut algorithms_differ = 0;
    let mut misses = Vec::new();
    let mut kinds = BTreeSet::new();
    let mut seed = 999u64;
    while total < 240 && seed < 5000 {
        seed += 1;
        // Half generic line soup, half C-like code where Myers and histogram disagree more often.
        let (base, ours, theirs) = if seed.is_multiple_of(2) {
            triple(seed)
        } else {
            code_triple(seed)
        };
        let style = ["merge", "diff3", "zdiff3"][(seed / 2 % 3) as usize];
        // Only conflicting triples are worth a git run; which triples conflict is proven against git by
        // render.rs's merge-file comparison, so this prefilter does not bias the id comparison.
        let probe = render(&base, &ours, &theirs, &RenderOptions::default());
        if probe.conflicts == 0 {
            continue;
        }
        // Commits are built in-process (one git spawn per case keeps the corpus fast).
        let _ = std::fs::remove_dir_all(dir.join(".git/rr-cache"));
        let base_c = commit_file(&repo, &base, None);
        let theirs_c = commit_file(&repo, &theirs, Some(base_c));
        let ours_c = commit_file(&repo, &ours, Some(base_c));
        let ours_obj = repo.find_object(ours_c, None).unwrap();
        repo.reset(&ours_obj, git2::ResetType::Hard, None).unwrap();
        let (ok, _) = git_try(
            dir,
            &[
                "-c",
                "rerere.enabled=true",
                "-c",
                &format!("merge.conflictStyle={style}"),
                "cherry-pick",
                &theirs_c.to_string(),
            ],
        );
        if ok {
            continue;
        }
        let dirs = rr_dirs(dir);
        let content = std::fs::read(dir.join("f.c")).unwrap();
        repo.cleanup_state().unwrap();
        repo.reset(&ours_obj, git2::ResetType::Hard, None).unwrap();
        let Some(git_id) = dirs.iter().next().cloned() else {
            continue; // conflicts git's rerere does not record (none expected here)
        };
        total += 1;
        let n = normalize(&content, 7).unwrap().unwrap();
        if n.hunks > 1 {
            kinds.insert("multi-hunk");
        }
        if content.windows(2).any(|w| w == b"\r\n") {
            kinds.insert("crlf");
        }
        if !base.ends_with(b"\n") {
            kinds.insert("no trailing newline");
        }
        kinds.insert(style);
        if n.id.to_string() == git_id {
            from_file += 1;
        }
        let opts = RenderOptions {
            style: Style::from_config(style).unwrap(),
            ..RenderOptions::default()
        };
        let mine = normalize(&render(&base, &ours, &theirs, &opts).content, 7)
            .unwrap()
            .map(|n| n.id.to_string());
        if mine.as_deref() == Some(git_id.as_str()) {
            rendered += 1;
        } else {
            misses.push(seed);
        }
        // Where Myers would give another id: the cases that need the histogram port.
        let myers = ::bport::rerere::xdiff::merge::merge(
            &base,
            &ours,
            &theirs,
            &::bport::rerere::xdiff::merge::MergeOptions {
                algorithm: ::bport::rerere::xdiff::Algorithm::Myers,
                style: Style::from_config(style).unwrap(),
                ours_label: "HEAD".into(),
                theirs_label: "theirs".into(),
                ..Default::default()
            },
        );
        if normalize(&myers.content, 7)
            .unwrap()
            .map(|n| n.id.to_string())
            .as_deref()
            != Some(git_id.as_str())
        {
            algorithms_differ += 1;
        }
        // libgit2's rendering of the same stages, for reference.
        let mut mopts = git2::MergeFileOptions::new();
        mopts.our_label("HEAD").their_label("theirs");
        match style {
            "diff3" => {
                mopts.style_diff3(true);
            }
            "zdiff3" => {
                mopts.style_zdiff3(true);
            }
            _ => {}
        }
        let blob = |data: &[u8]| repo.blob(data).unwrap();
        let entry = |oid: git2::Oid| git2::IndexEntry {
            ctime: git2::IndexTime::new(0, 0),
            mtime: git2::IndexTime::new(0, 0),
            dev: 0,
            ino: 0,
            mode: 0o100644,
            uid: 0,
            gid: 0,
            file_size: 0,
            id: oid,
            flags: 0,
            flags_extended: 0,
            path: b"f.c".to_vec(),
        };
        let r = repo
            .merge_file_from_index(
                &entry(blob(&base)),
                &entry(blob(&ours)),
                &entry(blob(&theirs)),
                Some(&mut mopts),
            )
            .unwrap();
        if normalize(r.content(), 7)
            .ok()
            .flatten()
            .map(|n| n.id.to_string())
            .as_deref()
            == Some(git_id.as_str())
        {
            libgit2 += 1;
        }
    }
    eprintln!(
        "rerere id corpus: {total} conflicts recorded by git ({kinds:?}); bport id from git's file {from_file}/{total}, \
         bport's own rendering {rendered}/{total}, libgit2 rendering {libgit2}/{total}; \
         {algorithms_differ} where a Myers rendering gives another id"
    );
    assert!(
        algorithms_differ > 0,
        "the corpus no longer has conflicts where Myers and histogram differ"
    );
    assert!(total >= 240, "the corpus shrank to {total} conflicts");
    for k in [
        "multi-hunk",
        "crlf",
        "no trailing newline",
        "diff3",
        "zdiff3",
        "merge",
    ] {
        assert!(kinds.contains(k), "corpus lacks {k}: {kinds:?}");
    }
    assert_eq!(
        from_file, total,
        "ids from git's conflicted files must all match"
    );
    assert_eq!(
        rendered, total,
        "seeds whose rendering differs from git's: {misses:?}"
    );
}

/// Records a resolution with git for the README conflict, then recreates the conflict with rerere off.
fn recorded_then_conflicted(dir: &Path) -> String {
    conflict_repo(dir, BASE, OURS, THEIRS);
    let (ok, _) = git_try(dir, &["-c", "rerere.enabled=true", "cherry-pick", "topic"]);
    assert!(!ok);
    std::fs::write(dir.join("README"), RESOLVED).unwrap();
    git(dir, &["add", "README"]);
    git(
        dir,
        &[
            "-c",
            "rerere.enabled=true",
            "-c",
            "core.editor=true",
            "cherry-pick",
            "--continue",
        ],
    );
    git(dir, &["reset", "-q", "--hard", "HEAD~1"]);
    let (ok, _) = git_try(dir, &["-c", "rerere.enabled=false", "cherry-pick", "topic"]);
    assert!(!ok);
    rr_dirs(dir).into_iter().next().unwrap()
}

#[test]
fn forget_drops_the_resolution_and_tracks_the_conflict_again() {
    skip_unless!(oracle::has_git());
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let id = recorded_then_conflicted(dir);
    let run = bport::run(dir, &["rerere", "forget", "README"]);
    assert_eq!(
        run.transcript(),
        "------- stderr -------\nUpdated preimage for 'README'\nForgot resolution for 'README'\n"
    );
    let entry = dir.join(".git/rr-cache").join(&id);
    assert!(!entry.join("postimage").exists());
    assert!(entry.join("preimage").exists());
    // git reads bport's MERGE_RR.
    assert_eq!(git(dir, &["rerere", "status"]), "README\n");
    // A new resolution is recorded under the same id.
    std::fs::write(dir.join("README"), b"title\nnew resolution\nend\n").unwrap();
    git(dir, &["add", "README"]);
    let run = bport::run(dir, &["rerere"]);
    assert_eq!(run.stderr, "Recorded resolution for 'README'.\n");
    assert_eq!(
        std::fs::read(entry.join("postimage")).unwrap(),
        b"title\nnew resolution\nend\n"
    );
    let run = bport::run(dir, &["rerere", "forget", "nothing-here"]);
    assert_eq!(run.code, Some(2), "{}", run.transcript());
}

#[test]
fn a_resolution_that_does_not_apply_leaves_the_file_conflicted() {
    skip_unless!(oracle::has_git());
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let id = recorded_then_conflicted(dir);
    // Same id (same sides), but the recorded context around the hunk differs right next to it.
    let entry = dir.join(".git/rr-cache").join(&id);
    let pre = std::fs::read_to_string(entry.join("preimage")).unwrap();
    std::fs::write(
        entry.join("preimage"),
        pre.replace("title\n", "other title\n")
            .replace("end\n", "END\n"),
    )
    .unwrap();
    std::fs::write(entry.join("postimage"), "other title\nresolved\nEND\n").unwrap();
    let before = std::fs::read(dir.join("README")).unwrap();
    let run = bport::run(dir, &["rerere"]);
    assert_eq!(
        run.stderr,
        "Recorded resolution for 'README' did not apply; the file stays conflicted (recorded preimage)\n"
    );
    assert_eq!(std::fs::read(dir.join("README")).unwrap(), before);
    assert!(
        entry.join("preimage.1").exists(),
        "a new variant for this conflict"
    );
    assert_eq!(
        std::fs::read(dir.join(".git/MERGE_RR")).unwrap(),
        format!("{id}.1\tREADME\0").into_bytes()
    );
}

/// gc prunes exactly what `git rerere gc` prunes, on copies of the same cache with the same file times.
#[test]
fn gc_prunes_like_git() {
    skip_unless!(oracle::has_git());
    let days = |n: u64| std::time::SystemTime::now() - std::time::Duration::from_secs(n * 86_400);
    let mut listings = Vec::new();
    for tool in ["git", "bport"] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        git2::Repository::init(dir).unwrap();
        let cache = dir.join(".git/rr-cache");
        // (id, variant files with their age in days)
        let entries: &[(&str, &[(&str, u64)])] = &[
            (
                "1111111111111111111111111111111111111111",
                &[("preimage", 100), ("postimage", 10)],
            ),
            (
                "2222222222222222222222222222222222222222",
                &[("preimage", 100), ("postimage", 70)],
            ),
            (
                "3333333333333333333333333333333333333333",
                &[("preimage", 20)],
            ),
            (
                "4444444444444444444444444444444444444444",
                &[("preimage", 5)],
            ),
            (
                "5555555555555555555555555555555555555555",
                &[("preimage", 90), ("postimage", 90), ("preimage.1", 1)],
            ),
        ];
        for (id, files) in entries {
            std::fs::create_dir_all(cache.join(id)).unwrap();
            for (name, age) in *files {
                let p = cache.join(id).join(name);
                std::fs::write(&p, format!("{name}\n")).unwrap();
                std::fs::File::options()
                    .append(true)
                    .open(&p)
                    .unwrap()
                    .set_modified(days(*age))
                    .unwrap();
            }
        }
        if tool == "git" {
            git(dir, &["rerere", "gc"]);
        } else {
            let run = bport::run(dir, &["rerere", "gc"]);
            assert_eq!(run.stderr, "Pruned 3 old rr-cache entries.\n");
        }
        let mut listing = Vec::new();
        for id in rr_dirs(dir) {
            let mut files: Vec<String> = std::fs::read_dir(cache.join(&id))
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            files.sort();
            listing.push(format!("{id}: {}", files.join(" ")));
        }
        listings.push(listing);
    }
    assert_eq!(listings[0], listings[1]);
    assert_eq!(
        listings[1],
        vec![
            "1111111111111111111111111111111111111111: postimage preimage",
            "4444444444444444444444444444444444444444: preimage",
            "5555555555555555555555555555555555555555: preimage.1",
        ]
    );
}

/// An exported CRLF resolution survives a commit with `core.autocrlf=input` byte for byte (export writes
/// `rerere-cache/.gitattributes` with `* -text`), so a clone's cache still matches git's id.
#[test]
fn exported_crlf_resolutions_survive_commit_and_clone() {
    skip_unless!(oracle::has_git());
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("a");
    std::fs::create_dir(&dir).unwrap();
    let crlf = |s: &[u8]| {
        String::from_utf8_lossy(s)
            .replace('\n', "\r\n")
            .into_bytes()
    };
    conflict_repo(&dir, &crlf(BASE), &crlf(OURS), &crlf(THEIRS));
    let (ok, _) = git_try(&dir, &["-c", "rerere.enabled=true", "cherry-pick", "topic"]);
    assert!(!ok);
    std::fs::write(dir.join("README"), crlf(RESOLVED)).unwrap();
    git(&dir, &["add", "README"]);
    git(
        &dir,
        &[
            "-c",
            "rerere.enabled=true",
            "-c",
            "core.editor=true",
            "cherry-pick",
            "--continue",
        ],
    );
    let id = rr_dirs(&dir).into_iter().next().unwrap();
    let run = bport::run(&dir, &["rerere", "export"]);
    assert_eq!(run.code, Some(0), "{}", run.transcript());
    git(&dir, &["-c", "core.autocrlf=input", "add", "rerere-cache"]);
    git(
        &dir,
        &["-c", "core.autocrlf=input", "commit", "-q", "-m", "share"],
    );
    git(tmp.path(), &["clone", "-q", dir.to_str().unwrap(), "b"]);
    for f in ["preimage", "postimage"] {
        assert_eq!(
            std::fs::read(tmp.path().join("b/rerere-cache").join(&id).join(f)).unwrap(),
            std::fs::read(dir.join(".git/rr-cache").join(&id).join(f)).unwrap(),
            "{f}"
        );
    }
}
